//! The few process-level OS calls the launcher needs (signal capture,
//! signalling a child), wrapped safely here so that `job` stays free of
//! `unsafe`. They sit in `shm` because `shm` is the crate's OS boundary.

use crate::sync::{AtomicU32, Ordering};

/// The last terminating signal received (0 if none), with bit 8 set when
/// the kernel sent it (one word, so that a signal and where it came from
/// are read together).
static CAUGHT: AtomicU32 = AtomicU32::new(0);
const FROM_KERNEL: u32 = 1 << 8;

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo; reading
    // its code is async-signal-safe.
    let code = unsafe { (*info).si_code };
    let kernel = if code == libc::SI_KERNEL {
        FROM_KERNEL
    } else {
        0
    };
    // Relaxed: the launcher's poll loop reads it; no data hangs on it.
    CAUGHT.store(sig as u32 | kernel, Ordering::Relaxed);
}

/// Routes SIGINT, SIGTERM and SIGHUP to a flag read by [`take_signal`]
/// instead of killing this process.
pub fn capture_termination_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: an all-zero sigaction is valid; `on_signal` is an
        // async-signal-safe `extern "C"` function (one atomic store).
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
        sa.sa_flags = libc::SA_RESTART | libc::SA_SIGINFO;
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

/// The signal caught since the last call, if any, and whether it was a
/// terminal's Ctrl-C: a SIGINT the kernel sent, which it sends to the
/// whole foreground process group, the launcher's ranks among them. (A
/// SIGHUP from the kernel may have gone to the session leader alone.)
pub fn take_signal() -> Option<(i32, bool)> {
    // Relaxed: see `on_signal`.
    match CAUGHT.swap(0, Ordering::Relaxed) {
        0 => None,
        s => {
            let sig = (s & !FROM_KERNEL) as i32;
            Some((sig, sig == libc::SIGINT && s & FROM_KERNEL != 0))
        }
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

/// Lets the process `cmd` starts be read and written, with
/// `process_vm_readv` / `process_vm_writev`, by this process and every
/// process descending from it (the job's other ranks) where Yama
/// restricts `ptrace` to descendants (`kernel.yama.ptrace_scope=1`,
/// Ubuntu's default): there a process may attach only to its own
/// descendants, those calls are checked as an attach, and ranks are
/// siblings, so their single-copy self-test was refused and every large
/// message went through the rings. The child names this process as its
/// ptracer (`PR_SET_PTRACER`; Yama keeps it across `exec`), which lets
/// this process and its descendants attach to it: its ranks, and what
/// they start (a rank's forks, `comm_spawn`'s launchers), may then read,
/// write and trace it, as a process may its own children. Where Yama is
/// absent the call fails (`EINVAL`) and is ignored; at scope 0 it changes
/// nothing; at scope 2 only `CAP_SYS_PTRACE` attaches, at 3 nothing. For
/// the launcher's ranks, unless single copy is off (`SHMPI_CMA=off` or
/// `refuse`).
pub fn readable_by_job(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let launcher = std::process::id() as libc::c_ulong;
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe work is allowed: `name_ptracer` makes one
    // system call on plain integers, its result ignored; no allocation,
    // no lock, no memory shared with other threads of the parent.
    unsafe { cmd.pre_exec(move || name_ptracer(launcher)) };
}

/// The child's half of [`readable_by_job`]: names `launcher` its ptracer;
/// a refusal (no Yama: `EINVAL`) changes nothing, so it is ignored.
fn name_ptracer(launcher: libc::c_ulong) -> std::io::Result<()> {
    // SAFETY: prctl(2) with PR_SET_PTRACER takes a pid; no memory is
    // passed.
    unsafe { libc::prctl(libc::PR_SET_PTRACER, launcher, 0, 0, 0) };
    Ok(())
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

/// The parent of process `pid`, as `/proc/pid/stat` says now.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ...": the name may hold spaces and
    // parentheses, so read after the last ')'.
    stat.rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
        .and_then(|s| s.parse::<u32>().ok())
}

/// A process held by a pidfd (`pidfd_open`, Linux 5.3): signalled and
/// watched without the risk of a pid reused by an unrelated process once
/// it is gone.
#[derive(Debug)]
pub struct Held(std::os::fd::OwnedFd);

impl Held {
    /// Holds `pid` if it is still a child of `parent` (checked after the
    /// pidfd is open, so the fd names that child); `None` otherwise, or
    /// where pidfds are missing.
    fn child_of(pid: u32, parent: u32) -> Option<Held> {
        let raw = libc::pid_t::try_from(pid).ok()?;
        // SAFETY: pidfd_open(2) takes a pid and flags (0) and returns a new
        // descriptor or -1; no memory is involved.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, raw, 0) };
        let fd = i32::try_from(fd).ok().filter(|&fd| fd >= 0)?;
        // SAFETY: `fd` is a descriptor pidfd_open just made for this
        // process, owned by nothing else.
        let held = Held(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) });
        (parent_of(pid) == Some(parent)).then_some(held)
    }

    /// Sends `sig` to the process, if it has not ended.
    pub fn signal(&self, sig: i32) {
        use std::os::fd::AsRawFd;
        // SAFETY: pidfd_send_signal(2) on a pidfd this value owns, with no
        // siginfo (null) and no flags; no memory is written.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.0.as_raw_fd(),
                sig,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
    }

    /// Whether the process has ended (a zombie counts: it runs no more).
    pub fn ended(&self) -> bool {
        use std::os::fd::AsRawFd;
        let mut p = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            // SAFETY: poll(2) on one pollfd of this stack frame, timeout 0.
            let r = unsafe { libc::poll(&mut p, 1, 0) };
            if r < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return r < 0 || (r > 0 && p.revents != 0);
        }
    }
}

/// Makes this process the subreaper of its descendants
/// (`PR_SET_CHILD_SUBREAPER`): one whose parent exits is adopted by this
/// process instead of by init, so [`descendants`] of this process still
/// finds it. False where the kernel refuses.
pub fn adopt_orphans() -> bool {
    // SAFETY: prctl(2) with PR_SET_CHILD_SUBREAPER takes a flag; no memory
    // is involved.
    unsafe {
        libc::prctl(
            libc::PR_SET_CHILD_SUBREAPER,
            1 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        ) == 0
    }
}

/// Reaps this process's children that have ended as zombies, but those of
/// `skip` (whose statuses their owners collect): the orphans it adopted
/// ([`adopt_orphans`]) would otherwise stay zombies for its life.
pub fn reap_adopted(skip: &[u32]) {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return;
    };
    for pid in dir
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
    {
        if skip.contains(&pid) || parent_of(pid) != Some(me) || !zombie(pid) {
            continue;
        }
        let Ok(raw) = libc::pid_t::try_from(pid) else {
            continue;
        };
        // SAFETY: waitpid(2) on a child of this process (checked just
        // above; only this process can reap it, so the pid cannot have
        // been reused meanwhile), without blocking; no status is read.
        unsafe { libc::waitpid(raw, std::ptr::null_mut(), libc::WNOHANG) };
    }
}

/// Whether process `pid` is a zombie (ended, not yet reaped).
fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            == Some("Z")
    })
}

/// Whether process `pid` is a job launcher (`shmpiexec`, as
/// `MPI_Comm_spawn` starts one): it ends its own job when signalled.
fn is_launcher(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim_end() == "shmpiexec")
}

/// The processes descended from `roots` (their children, theirs, and so
/// on), as `/proc` shows them now, each held by a pidfd; not the roots,
/// nor the processes of `skip` and theirs, nor what is below a launcher
/// found on the way (`shmpiexec`: it is held, and ends its own job when
/// signalled). A process whose parent exited
/// was adopted elsewhere (by init, or by a subreaper: [`adopt_orphans`])
/// and is found only from there.
pub fn descendants(roots: &[u32], skip: &[u32]) -> Vec<Held> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parents: Vec<(u32, u32)> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
        .filter_map(|pid| parent_of(pid).map(|ppid| (pid, ppid)))
        .collect();
    let mut found: Vec<u32> = Vec::new();
    let mut held = Vec::new();
    let mut frontier: Vec<u32> = roots.to_vec();
    while let Some(p) = frontier.pop() {
        for &(child, parent) in &parents {
            if parent == p
                && !found.contains(&child)
                && !roots.contains(&child)
                && !skip.contains(&child)
            {
                found.push(child);
                // A launcher (a job `MPI_Comm_spawn` started) is signalled
                // and ends its own job, its reaper removing that job's
                // files: what is below it is its own.
                if !is_launcher(child) {
                    frontier.push(child);
                }
                held.extend(Held::child_of(child, parent));
            }
        }
    }
    held
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

/// A process that removes a job's files from their directory once the
/// launcher that started it is gone without removing them itself: every
/// name that is the segment's own or starts with it and a dash (the
/// ranks' pools `{segment}-pool-{r}`, windows `{segment}-win-…`). A
/// launcher killed by SIGKILL cannot remove them, and its ranks die with
/// it ([`die_with_parent`]), so without the reaper a pool, a window's
/// file or a segment not yet unlinked would stay in `/dev/shm` for good.
///
/// The reaper learns of the launcher's end by end-of-file on a pipe whose
/// only writer is the launcher (`O_CLOEXEC`: no rank inherits it; the
/// reaper closes every other descriptor it inherited). It removes
/// nothing unless [`arm`](Self::arm)ed (once the segment is made: a
/// segment that could not be made because its name was taken is another
/// job's) and not [`disarm`](Self::disarm)ed (the launcher cleaned up
/// itself). Then it sweeps at once and again after 10, 50 and 250 ms,
/// for a file a rank was making as the launcher died (a rank's death
/// signal comes after the pipe closes). It sits in a session of its own,
/// so a signal to the launcher's process group (Ctrl-C, `kill -9 -PGID`)
/// does not take it with the launcher. Dropping the `Reaper` closes the
/// pipe and reaps the process (within `REAPER_WAIT`; past that it is
/// left, a zombie child until this process ends).
#[derive(Debug)]
pub struct Reaper {
    pid: libc::pid_t,
    /// The pipe's write end (-1 once closed).
    fd: libc::c_int,
}

/// How long dropping a [`Reaper`] waits for its process to end: at once
/// when disarmed, after its sweeps (about 0.3 s) when armed.
const REAPER_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// What the launcher writes to its reaper.
const ARM: u8 = b'a';
const DISARM: u8 = b'd';

/// Pauses between the reaper's sweeps, in ms.
const SWEEPS_MS: [u64; 3] = [10, 50, 250];

impl Reaper {
    /// Starts the reaper for the files of segment `segment`, not armed.
    ///
    /// # Errors
    /// The step that failed (a pipe, a path with a NUL byte, the fork).
    pub fn start(segment: &std::path::Path) -> Result<Reaper, String> {
        use std::os::unix::ffi::OsStrExt;
        let dir = match segment.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        let stem = segment
            .file_name()
            .ok_or_else(|| format!("{} names no file", segment.display()))?
            .as_bytes()
            .to_vec();
        let dir = std::ffi::CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| format!("{} holds a NUL byte", dir.display()))?;
        let mut fds = [-1 as libc::c_int; 2];
        // SAFETY: `fds` is an array of two ints that pipe2(2) fills.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(format!(
                "cannot make the reaper's pipe: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: fork(2) takes nothing. The child inherits every
        // descriptor of this process, the pipe's write end included, and
        // runs only `reap`, which closes all of them but the read end
        // first (else it would never see end-of-file), then makes
        // async-signal-safe system calls on memory made before the fork
        // (`dir`, `stem`) and on its own stack, and `_exit`s: it allocates
        // nothing, takes no lock another thread may have held at the fork,
        // and runs no destructor.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            reap(fds[0], &dir, &stem);
        }
        // SAFETY: our read end, closed once (a child, if forked, has its
        // own copy).
        unsafe { libc::close(fds[0]) };
        if pid < 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: our write end, closed once.
            unsafe { libc::close(fds[1]) };
            return Err(format!("cannot start the reaper: {e}"));
        }
        Ok(Reaper { pid, fd: fds[1] })
    }

    /// The reaper's process id.
    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// From now on, the reaper removes the files if the launcher ends
    /// without [`disarm`](Self::disarm).
    pub fn arm(&self) {
        self.tell(ARM);
    }

    /// The launcher has removed the job's files itself: the reaper
    /// removes nothing.
    pub fn disarm(&self) {
        self.tell(DISARM);
    }

    fn tell(&self, b: u8) {
        loop {
            // SAFETY: write(2) of one byte from a live local to our own
            // pipe's write end.
            let n = unsafe { libc::write(self.fd, (&b as *const u8).cast(), 1) };
            if n == 1 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return;
            }
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        if self.fd >= 0 {
            // SAFETY: the write end this `Reaper` owns, closed once.
            unsafe { libc::close(self.fd) };
            self.fd = -1;
        }
        let deadline = std::time::Instant::now() + REAPER_WAIT;
        loop {
            let mut status = 0;
            // SAFETY: waitpid(2) on our own child, with a live int for the
            // status.
            let rc = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
            if rc != 0 || std::time::Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// The reaper's life (in the child of a fork: async-signal-safe system
/// calls only, nothing allocated, never returns): waits for end-of-file
/// on `rfd`, then, if armed and not disarmed, unlinks in `dir` every
/// entry named `stem` or `stem-…` (swept again after each of
/// [`SWEEPS_MS`]), and exits.
fn reap(rfd: libc::c_int, dir: &std::ffi::CStr, stem: &[u8]) -> ! {
    // No descriptor but the pipe's read end: not the write end (or the
    // end-of-file would never come), not another job's pipe, not the
    // launcher's stdout.
    close_all_but(rfd);
    // Out of the launcher's session and process group, and with the
    // default actions for the signals the launcher catches.
    // SAFETY: setsid(2) takes nothing.
    unsafe { libc::setsid() };
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a standard signal set to SIG_DFL; no memory passed.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
    let (mut armed, mut disarmed) = (false, false);
    let mut got = [0u8; 64];
    loop {
        // SAFETY: `got` is a live buffer of its length on this stack.
        let n = unsafe { libc::read(rfd, got.as_mut_ptr().cast(), got.len()) };
        if n == 0 {
            break;
        }
        if n < 0 {
            // errno (a raw OS error is a plain code in `io::Error`: no
            // allocation).
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            break;
        }
        for &b in got.iter().take(n as usize) {
            armed |= b == ARM;
            disarmed |= b == DISARM;
        }
    }
    if armed && !disarmed {
        // SAFETY: `dir` is a NUL-terminated path made before the fork.
        let dfd = unsafe {
            libc::open(
                dir.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if dfd >= 0 {
            unlink_job_files(dfd, stem);
            for ms in SWEEPS_MS {
                let t = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: (ms * 1_000_000) as libc::c_long,
                };
                // SAFETY: nanosleep(2) reads `t`, a live local; no
                // remainder is asked for.
                unsafe { libc::nanosleep(&t, std::ptr::null_mut()) };
                // SAFETY: lseek(2) on the directory this child opened.
                unsafe { libc::lseek(dfd, 0, libc::SEEK_SET) };
                unlink_job_files(dfd, stem);
            }
        }
    }
    // SAFETY: _exit(2) ends the process without running anything of the
    // parent's (no atexit handler, no stdio flush).
    unsafe { libc::_exit(0) }
}

/// Closes every descriptor of this process but `keep`: close_range(2),
/// or, where the kernel lacks it (before 5.9) or a filter refuses it, one
/// by one up to the descriptor limit.
fn close_all_but(keep: libc::c_int) {
    let keep = keep as libc::c_uint;
    let below = (keep > 0).then(|| (0, keep - 1));
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) fills the live local `limit`.
    let top = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur.min(1 << 20) as libc::c_uint
    } else {
        1 << 16
    };
    for (lo, hi) in below.into_iter().chain([(keep + 1, libc::c_uint::MAX)]) {
        // SAFETY: close_range(2) on plain integers; it closes descriptors
        // only, and `keep`, the one this child still needs, is outside.
        let rc = unsafe { libc::syscall(libc::SYS_close_range, lo, hi, 0 as libc::c_uint) };
        if rc != 0 {
            for fd in lo..=hi.min(top) {
                // SAFETY: closes one descriptor (EBADF if none is open).
                unsafe { libc::close(fd as libc::c_int) };
            }
        }
    }
}

/// Unlinks, in the directory open as `dfd`, every entry named `stem` or
/// starting with `stem` and `-` (getdents64(2) into a stack buffer: no
/// allocation, as the reaper requires).
fn unlink_job_files(dfd: libc::c_int, stem: &[u8]) {
    // Entries removed while the directory is read may make the reading
    // skip others: read it again from the start while a pass removed
    // something (a few passes at most; no job has that many files).
    for _ in 0..8 {
        if !unlink_pass(dfd, stem) {
            return;
        }
        // SAFETY: lseek(2) on the directory this child opened.
        unsafe { libc::lseek(dfd, 0, libc::SEEK_SET) };
    }
}

/// One reading of the directory for [`unlink_job_files`]: whether it
/// removed anything.
fn unlink_pass(dfd: libc::c_int, stem: &[u8]) -> bool {
    let mut removed = false;
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: getdents64(2) writes at most `buf.len()` bytes into this
        // stack buffer.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, dfd, buf.as_mut_ptr(), buf.len()) };
        if n <= 0 {
            return removed;
        }
        let n = (n as usize).min(buf.len());
        let mut at = 0;
        // A linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type
        // (1), then the NUL-terminated name.
        while at + 19 <= n {
            let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
            if reclen < 20 || at + reclen > n {
                return removed;
            }
            let name = &buf[at + 19..at + reclen];
            let len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            let name = &name[..len];
            let ours = name.len() >= stem.len()
                && &name[..stem.len()] == stem
                && (name.len() == stem.len() || name[stem.len()] == b'-');
            if ours && len < reclen - 19 {
                // SAFETY: the name is NUL-terminated inside `buf` (the
                // NUL found above is before the record's end); unlinkat(2)
                // only reads it.
                let rc = unsafe { libc::unlinkat(dfd, buf[at + 19..].as_ptr().cast(), 0) };
                removed |= rc == 0;
            }
            at += reclen;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child that names its parent as ptracer starts and runs whether
    /// or not Yama takes the naming (here, without Yama, `prctl` fails
    /// with `EINVAL`, which the child ignores); with
    /// `PR_SET_PDEATHSIG` armed too, as the launcher's ranks have both.
    #[test]
    fn a_child_readable_by_the_job_starts_with_or_without_yama() {
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "exit 7"]);
        die_with_parent(&mut cmd);
        readable_by_job(&mut cmd);
        let st = cmd.status().expect("the child starts");
        assert_eq!(st.code(), Some(7));
    }

    #[test]
    fn the_reaper_removes_the_jobs_files_and_only_them_once_its_pipe_closes() {
        let dir = std::env::temp_dir().join(format!("shmpi-reaper-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        let names = [
            "job",
            "job-pool-0",
            "job-win-7-0",
            "jobx",
            "jo",
            "other-job",
        ];
        for n in names {
            std::fs::write(dir.join(n), b"x").unwrap();
        }
        // More than one read of the directory holds (a 4 KiB buffer takes
        // about a hundred such names), removed while it is read.
        for r in 0..300 {
            std::fs::write(dir.join(format!("job-pool-{r}-long-enough-name")), b"x").unwrap();
        }
        // Not armed, or disarmed: nothing removed.
        drop(Reaper::start(&dir.join("job")).unwrap());
        let r = Reaper::start(&dir.join("job")).unwrap();
        r.arm();
        r.disarm();
        drop(r);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), names.len() + 300);
        let reaper = Reaper::start(&dir.join("job")).unwrap();
        reaper.arm();
        assert!(process_alive(reaper.pid()));
        // Alive and idle while the pipe is open: nothing removed yet.
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(dir.join("job-pool-0").exists());
        drop(reaper);
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["jo", "jobx", "other-job"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
