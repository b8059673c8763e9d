//! The few process-level OS calls the launcher needs (signal capture,
//! signalling a child), wrapped safely here so that `job` stays free of
//! `unsafe`. They sit in `shm` because `shm` is the crate's OS boundary.

use crate::sync::{AtomicU32, Ordering};

/// The last terminating signal received (0 if none).
static CAUGHT: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Relaxed: the launcher's poll loop reads it; no data hangs on it.
    CAUGHT.store(sig as u32, Ordering::Relaxed);
}

/// Routes SIGINT, SIGTERM and SIGHUP to a flag read by [`take_signal`]
/// instead of killing this process.
pub fn capture_termination_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: an all-zero sigaction is valid; `on_signal` is an
        // async-signal-safe `extern "C"` function (one atomic store).
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
        sa.sa_flags = libc::SA_RESTART;
        // SAFETY: `sa` is initialised; a null old-action pointer is allowed.
        unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) };
    }
}

/// Restores the default action of SIGPIPE (Rust ignores it, so writing to
/// a closed pipe makes `println!` panic): a tool piped into `head` then
/// ends quietly, as C tools do.
pub fn default_sigpipe() {
    // SAFETY: setting a standard signal's disposition to SIG_DFL touches
    // no memory of ours.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// The signal caught since the last call, if any.
pub fn take_signal() -> Option<i32> {
    // Relaxed: see `on_signal`.
    match CAUGHT.swap(0, Ordering::Relaxed) {
        0 => None,
        s => Some(s as i32),
    }
}

/// Makes the process `cmd` starts end with SIGKILL when the thread that
/// starts it ends (`PR_SET_PDEATHSIG`): a rank does not outlive a
/// launcher killed with SIGKILL (which cannot pass anything on), where it
/// would wait for its peers, or spin, for ever. A launcher that ends
/// normally has reaped every rank first, so the signal never comes then.
/// The caller must start the process from a thread that lives as long as
/// the job (`job::run` supervises its ranks on the thread that started
/// them). A child whose parent is already gone when it arms the signal
/// does not start (`spawn` fails with `ESRCH`).
pub fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe work is allowed: `arm_parent_death` makes two
    // system calls on plain integers and builds an `io::Error` from an
    // error number (no allocation); it takes no lock and touches no memory
    // shared with other threads of the parent.
    unsafe { cmd.pre_exec(move || arm_parent_death(parent)) };
}

/// The child's half of [`die_with_parent`]: SIGKILL when the parent's
/// thread ends, unless the parent (`parent`) is already gone.
fn arm_parent_death(parent: libc::pid_t) -> std::io::Result<()> {
    // SAFETY: prctl(2) with PR_SET_PDEATHSIG takes a signal number; no
    // memory is passed.
    let rc = unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // The parent may have died between the fork and the prctl: the child
    // was then reparented, and the signal will never come.
    // SAFETY: getppid(2) takes nothing and cannot fail.
    if unsafe { libc::getppid() } != parent {
        return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

/// Sends `sig` to process `pid`; errors (already gone) are ignored.
pub fn send_signal(pid: u32, sig: i32) {
    if pid == 0 || pid > i32::MAX as u32 {
        return;
    }
    // SAFETY: kill(2) takes plain integers; a positive pid names one
    // process (never a group).
    unsafe { libc::kill(pid as libc::pid_t, sig) };
}

/// Whether process `pid` exists (`kill(pid, 0)`; a process of another
/// user counts as existing).
pub fn process_alive(pid: u32) -> bool {
    if pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: kill(2) with signal 0 only checks; plain integers.
    let rc = unsafe { libc::kill(pid as libc::pid_t, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Writes all of `buf` to the connected socket `fd` without raising
/// SIGPIPE when the other end has gone (`send` with `MSG_NOSIGNAL`: a C
/// program keeps the default SIGPIPE action, which would kill it).
///
/// # Errors
/// The OS error (`EPIPE` when the other end has gone).
pub fn send_all(fd: i32, buf: &[u8]) -> std::io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let rest = &buf[done..];
        // SAFETY: `rest` is a live slice of `rest.len()` readable bytes;
        // send(2) only reads them.
        let n = unsafe { libc::send(fd, rest.as_ptr().cast(), rest.len(), libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        done += n as usize;
    }
    Ok(())
}

/// This process's real user id.
pub fn uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// Ignores SIGXFSZ so that exceeding RLIMIT_FSIZE is an EFBIG error, not a
/// core dump.
pub fn ignore_sigxfsz() {
    // SAFETY: setting a signal to SIG_IGN has no preconditions.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
}

/// The name of signal `sig` ("SIGKILL"), or its number.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

/// Creates `path` for this process to map (`O_EXCL`, mode 0600) with
/// `len` zero bytes: a pool, a file of shared lines. The error names the
/// file and the step that failed.
pub fn create_private_file(path: &std::path::Path, len: usize) -> Result<std::fs::File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    file.set_len(len as u64)
        .map_err(|e| format!("cannot size {}: {e}", path.display()))?;
    Ok(file)
}

/// Opens `path` read-write for this process to map, if it holds `len`
/// bytes. The error names the file and what is wrong.
pub fn open_sized_file(path: &std::path::Path, len: usize) -> Result<std::fs::File, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let have = file.metadata().map(|m| m.len() as usize).unwrap_or(0);
    if have != len {
        return Err(format!("{} has {have} bytes, not {len}", path.display()));
    }
    Ok(file)
}
