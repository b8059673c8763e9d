//! Single copy between processes: `process_vm_readv` (Linux's
//! cross-memory attach, CMA).
//!
//! A receiver that knows where a message lies in its sender's address
//! space copies it straight into its own buffer, one copy instead of the
//! two of the ring path. Whether the kernel lets a rank do that is decided
//! by a real read at start-up ([`Transport::probe_single_copy`]: a read of
//! a neighbour rank's probe word), not by reading `ptrace_scope`, since a
//! seccomp filter (containers) or a Yama policy may refuse the call
//! whatever the file says. The outcome is published in the rank's control
//! block, and senders read it before each rendezvous: until a receiver has
//! said yes, large messages to it go through the ring.
//!
//! [`Transport::probe_single_copy`]: super::Transport::probe_single_copy

use super::placement;
use crate::error::{Error, ErrorClass, Result};

/// The word peers read to test single copy; its address is published in
/// this rank's control block. A static, so it lives as long as the
/// process.
pub(crate) static PROBE: u64 = 0x5348_4d50_4943_4d41; // "SHMPICMA"

/// The task that peers name in `process_vm_readv` / `process_vm_writev`
/// to reach this process's memory (published in the rank's control block,
/// `ControlBlock::cma_task`): the thread id of a thread of this process
/// that only sleeps, spawned on the first call; the process id when it
/// could not be spawned.
///
/// Why not the process id: the kernel takes a reference on the task a
/// call names (`find_get_task_by_vpid`, then `put_task_struct`), two
/// writes to the first cache line of that task's `task_struct`, the line
/// that holds its `thread_info` flags, which the task itself reads at every
/// system call's entry and exit. Named by pid, a rank's working thread
/// found that line in its peer's cache at each of its own calls, and in a
/// ping-pong by rendezvous each rank's `process_vm_readv` of the other
/// paid for it. The memory is the process's (one `mm` for all its
/// threads), so naming any of its threads reaches the same bytes, and a
/// thread asleep in `park` reads nothing. A bare C test of the protocol
/// (two pinned processes, one `process_vm_readv` per message; Xeon VM,
/// 2026-12-07, 5 alternating runs): one-way 8 KiB 1.42 -> 1.10 us median,
/// 16 KiB 1.73 -> 1.48, 32 KiB 2.75 -> 2.35.
///
/// The thread blocks every signal (process-directed signals go to the
/// program's threads), has a 64 KiB stack and lives until the process
/// exits, so that the id stays valid while any peer may use it. It is
/// spawned only where single copy may be used (`SHMPI_CMA=auto|always`);
/// a program that counts its threads, or calls what refuses a
/// multithreaded process (`unshare(CLONE_NEWUSER)`), sees it. A child
/// made by `fork` gets a thread of its own at its first call (the parent's
/// id would name the parent's memory).
pub fn target() -> u32 {
    // (the process that spawned the thread, its id); a Mutex, not a
    // OnceLock, so that a forked child spawns its own.
    static TARGET: std::sync::Mutex<(u32, u32)> = std::sync::Mutex::new((0, 0));
    let pid = std::process::id();
    let mut t = TARGET
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if t.0 != pid {
        *t = (pid, spawn_sleeper().unwrap_or(pid));
    }
    t.1
}

/// Spawns [`target`]'s thread; its thread id, or `None`.
fn spawn_sleeper() -> Option<u32> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    // SAFETY: `sigset_t` is plain data, and `sigfillset` initialises it
    // before any use.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above; `pthread_sigmask` fills it.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `all` is a valid set for `sigfillset` to fill.
    unsafe { libc::sigfillset(&mut all) };
    // SAFETY: both sets are valid for the call; the mask changes for this
    // thread only, for the length of the spawn, and is restored below. A
    // new thread inherits its creator's mask, so the sleeper starts with
    // every signal blocked.
    if unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old) } != 0 {
        return None;
    }
    let spawned = std::thread::Builder::new()
        .name("shmpi-cma".into())
        .stack_size(64 << 10)
        .spawn(move || {
            // SAFETY: `gettid` takes no argument and cannot fail (called
            // by number: the C library's wrapper is recent, glibc 2.30).
            let tid = unsafe { libc::syscall(libc::SYS_gettid) };
            let _ = tx.send(tid as u32);
            loop {
                std::thread::park();
            }
        });
    // SAFETY: `old` holds the mask `pthread_sigmask` returned above.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
    spawned.ok()?;
    rx.recv_timeout(std::time::Duration::from_secs(10)).ok()
}

/// The default size from which a nonblocking send that would otherwise be
/// copied into the send queue goes by rendezvous and single copy, when the
/// receiver can read its sender's memory, on CPUs other than Intel's (see
/// [`Defaults`]).
pub const DEFAULT_CMA_THRESHOLD: usize = 256 << 10;

/// The default size from which a rendezvous copy from a peer of this job
/// is shared between receiver and sender: the receiver reads the front
/// with `process_vm_readv` while the sender writes the back with
/// `process_vm_writev`, two cores copying one half each.
pub const DEFAULT_CMA_SPLIT: usize = 64 << 10;

/// The single-copy thresholds of this machine when no variable sets them,
/// by CPU vendor (UCX keeps such tables too; `docs/tuning.md` has the
/// measurements behind each row).
///
/// - Intel (the 2-vCPU Xeon VM, 2026-12-02): a core copies lines another
///   core wrote at 10-17 GB/s, so the ring's two serial copies lose to one
///   `process_vm_readv` from 8 KiB: every send goes by rendezvous from
///   8 KiB, and from 64 KiB the copy is shared (a blocking send's from
///   32 KiB: its sender waits, so takes its part at once; from 16 KiB
///   once its receiver has found its buffers slow to read, written just
///   before their send, `transport::fresh`). A scoped `isend` goes by
///   revocable rendezvous from 32 KiB, to every peer. No peer is distant
///   by the start-up probe (2026-12-06: on one socket the hand-off
///   measured 0.19-0.54 µs, across the AMD mark, while the cores share
///   their L3 and a distant peer's streamed frames were 1.2-1.6x slower at
///   2-4 KiB; `docs/tuning.md`, "Intel: no distant peer by the probe").
/// - AMD family 23 (Zen 1 and 2, whose L3 is split among four-core
///   complexes; the 2-vCPU EPYC VM of 2026-12-05, model 1): as the others
///   below, but blocking sends (and C's `MPI_Isend`) go by rendezvous
///   from 64 KiB. When the two cores sit on different dies the ring's
///   lines cross between them twice a lap (the sender takes each back
///   from the receiver, the receiver reads it dirty) and the ring moves
///   about 4.6 GB/s against 11-17 GB/s by the shared single copy; on one
///   die the single copy is as fast or faster in latency from 64 KiB and
///   loses only window bandwidth at 64 KiB and 512 KiB-2 MiB, still well
///   above the peers' (`docs/tuning.md`, "AMD family 23").
/// - Other AMD (EPYC VMs of families 25 and 26): cross-core copies inside
///   the shared L3 are fast and `process_vm_readv`'s page pinning
///   dominates, so blocking sends stay on the ring and only a plain
///   `isend` goes by rendezvous, from 256 KiB (as measured before the
///   shared copy existed).
///
/// On AMD the ring copies frames from 4 KiB with its AVX2 loop, where
/// glibc's `memcpy` takes a slower `rep movsb` (`ring/copy.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Defaults {
    /// `SHMPI_CMA_THRESHOLD`: sends that would be copied (a plain `isend`).
    pub threshold: usize,
    /// `SHMPI_CMA_BLOCKING`: sends pushed from their own buffer (a
    /// blocking send); `usize::MAX`: never.
    pub blocking: usize,
    /// `SHMPI_CMA_SPLIT`: shared copies; `usize::MAX`: never.
    pub split: usize,
    /// `SHMPI_CMA_SPLIT_BLOCKING`: shared copies of a blocking send's
    /// rendezvous, whose sender waits and takes its part at once.
    pub split_blocking: usize,
    /// `SHMPI_VECTOR_COPY`: ring frames copied with the AVX2 loop
    /// (`ring::set_vector_copy_from`); `usize::MAX`: never.
    pub vector_copy: usize,
    /// `SHMPI_DISTANT_WATCH`: the smallest ring message whose copies may
    /// be timed to follow the placement (`placement::Drift`).
    pub watch: usize,
    /// `SHMPI_DISTANT_NS`: a peer whose start-up hand-off takes longer
    /// than this is distant (`placement::probe`); `None`: none is, and
    /// the placement is not followed.
    pub distant_ns: Option<u32>,
    /// `SHMPI_CMA_SCOPED`: under `SHMPI_CMA=auto`, the size from which a
    /// scoped `isend` to any peer goes by revocable rendezvous (to a
    /// distant one also from `SHMPI_DISTANT_RENDEZVOUS`); `usize::MAX`:
    /// only to a distant peer.
    pub scoped: usize,
    /// `SHMPI_CMA_C_ISEND`: under `SHMPI_CMA=auto`, the size from which
    /// C's `MPI_Isend` (its buffer lent for the request's life) goes by
    /// rendezvous; `usize::MAX`: never.
    pub c_isend: usize,
    /// `SHMPI_CMA_C_ISEND_QUIET`: under `SHMPI_CMA=auto`, the size from
    /// which C's `MPI_Isend` goes by rendezvous while its receiver has
    /// taken every earlier message of this rank (the ring to it empty, no
    /// rendezvous of this rank awaiting it): a halo exchange's send
    /// rather than a stream's; `usize::MAX`: never.
    pub c_isend_quiet: usize,
    /// `SHMPI_COLL_SYNC`: the size from which a bcast's or a reduce's
    /// send is synchronous (`coll::tuning`), so that it may take the
    /// rendezvous as a blocking send does (`p2p::blocking_hold`).
    pub coll_sync: usize,
    /// `SHMPI_MANY_DIRECT`: the largest buffer a window of receives into
    /// one buffer (`Communicator::recv_many`) takes its front into
    /// straight from the ring, as a blocking receive does; 0: none.
    pub many_direct: usize,
    /// `SHMPI_WINDOW_PACE`: how long (ns) a window of receives into one
    /// buffer waits after a look that took some of its messages but not
    /// all, so that the sender runs ahead; 0: no wait.
    pub window_pace_ns: u32,
}

/// A row of [`Defaults`]: the CPUs whose measurements it carries. The
/// row is this machine's by its first processor's vendor and family
/// (`/proc/cpuinfo`), unless `SHMPI_CPU_DEFAULTS` names another: to try
/// another row's thresholds here, or to run the suite on the paths
/// another CPU takes (`tests/large.rs`). Only the thresholds follow the
/// row; what the CPU has (`CLDEMOTE`, `PREFETCHW`, AVX2) is read from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuRow {
    /// Intel CPUs.
    Intel,
    /// AMD family 23 (Zen 1 and 2).
    AmdFamily23,
    /// AMD family 25 (Zen 3 and 4).
    AmdFamily25,
    /// Every other CPU (AMD family 26 measured).
    Other,
}

/// The variable that names a row of [`Defaults`] other than this CPU's.
pub const CPU_DEFAULTS_VAR: &str = "SHMPI_CPU_DEFAULTS";

impl CpuRow {
    /// Every row, in the order `docs/tuning.md` gives them.
    pub const ALL: [CpuRow; 4] = [
        CpuRow::Intel,
        CpuRow::AmdFamily23,
        CpuRow::AmdFamily25,
        CpuRow::Other,
    ];

    /// The row's name, as `SHMPI_CPU_DEFAULTS` takes it.
    pub fn name(self) -> &'static str {
        match self {
            CpuRow::Intel => "intel",
            CpuRow::AmdFamily23 => "amd-family-23",
            CpuRow::AmdFamily25 => "amd-family-25",
            CpuRow::Other => "other",
        }
    }

    /// The row named `name`, if any.
    pub fn named(name: &str) -> Option<CpuRow> {
        CpuRow::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The row of the CPU that `cpuinfo` (the text of `/proc/cpuinfo`)
    /// describes: its first processor's vendor and family.
    pub fn of(cpuinfo: &str) -> CpuRow {
        let field = |name: &str| {
            cpuinfo
                .lines()
                .take_while(|l| !l.trim().is_empty())
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    (k.trim() == name).then(|| v.trim())
                })
        };
        let family = field("cpu family").and_then(|f| f.parse::<u32>().ok());
        match (field("vendor_id"), family) {
            (Some("GenuineIntel"), _) => CpuRow::Intel,
            (Some("AuthenticAMD"), Some(23)) => CpuRow::AmdFamily23,
            (Some("AuthenticAMD"), Some(25)) => CpuRow::AmdFamily25,
            _ => CpuRow::Other,
        }
    }

    /// This machine's row (`/proc/cpuinfo`; unreadable: [`CpuRow::Other`]).
    pub fn of_this_cpu() -> CpuRow {
        CpuRow::of(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default())
    }

    /// The row this process uses: the one `SHMPI_CPU_DEFAULTS` names,
    /// else this machine's.
    ///
    /// # Errors
    /// `Arg`, naming the variable and the rows, for any other value.
    pub fn for_this_process() -> crate::Result<CpuRow> {
        CpuRow::from_setting(std::env::var(CPU_DEFAULTS_VAR).ok().as_deref())
    }

    /// The row a value of `SHMPI_CPU_DEFAULTS` names (unset or blank:
    /// this machine's).
    ///
    /// # Errors
    /// `Arg`, naming the variable and the rows, for any other value.
    pub fn from_setting(value: Option<&str>) -> crate::Result<CpuRow> {
        match value.map(str::trim) {
            None | Some("") => Ok(CpuRow::of_this_cpu()),
            Some(v) => CpuRow::named(v).ok_or_else(|| {
                let names: Vec<_> = CpuRow::ALL.iter().map(|r| r.name()).collect();
                crate::error::Error::new(
                    crate::error::ErrorClass::Arg,
                    format!(
                        "{CPU_DEFAULTS_VAR}={v}: expected one of {}",
                        names.join(", ")
                    ),
                )
            }),
        }
    }
}

impl Defaults {
    /// The row for the CPU that `cpuinfo` (the text of `/proc/cpuinfo`)
    /// describes ([`CpuRow::of`]).
    pub fn for_cpu(cpuinfo: &str) -> Defaults {
        Defaults::of(CpuRow::of(cpuinfo))
    }

    /// The thresholds of `row`.
    pub fn of(row: CpuRow) -> Defaults {
        match row {
            CpuRow::Intel => Defaults {
                threshold: 8 << 10,
                blocking: 8 << 10,
                split: DEFAULT_CMA_SPLIT,
                split_blocking: 32 << 10,
                vector_copy: usize::MAX,
                watch: placement::WATCH_MIN,
                distant_ns: None,
                scoped: 32 << 10,
                // 8 KiB stays on the ring: a window of them took 23%
                // longer by rendezvous (docs/tuning.md).
                c_isend: 16 << 10,
                // An 8 KiB exchange of C isends took 2.09 us through the
                // ring, 1.67 by rendezvous; a window of them stays on the
                // ring (docs/tuning.md, "Intel").
                c_isend_quiet: 8 << 10,
                coll_sync: 32 << 10,
                // Every message through the posted window: taken directly
                // a window of 4-128 B messages lost 8-34% of its bandwidth
                // (docs/tuning.md).
                many_direct: 0,
                window_pace_ns: 500,
            },
            CpuRow::AmdFamily23 => Defaults {
                blocking: 64 << 10,
                c_isend: 64 << 10,
                ..Defaults::other()
            },
            CpuRow::AmdFamily25 => Defaults {
                watch: placement::WATCH_MIN_FAMILY_25,
                ..Defaults::other()
            },
            CpuRow::Other => Defaults::other(),
        }
    }

    /// The row of CPUs not named above (AMD family 26 measured; family
    /// 25's differs only in the watch).
    fn other() -> Defaults {
        Defaults {
            threshold: DEFAULT_CMA_THRESHOLD,
            blocking: usize::MAX,
            split: DEFAULT_CMA_SPLIT,
            split_blocking: DEFAULT_CMA_SPLIT,
            vector_copy: 4 << 10,
            watch: placement::WATCH_MIN,
            distant_ns: Some(placement::DISTANT_NS),
            scoped: usize::MAX,
            c_isend: usize::MAX,
            c_isend_quiet: usize::MAX,
            coll_sync: 64 << 10,
            many_direct: 128,
            window_pace_ns: 0,
        }
    }
}

/// How single copy is configured (`SHMPI_CMA`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmaMode {
    /// Where the self-test passes, for sends that would otherwise be
    /// copied (a nonblocking send outside a lending scope); sends that can
    /// be pipelined from the caller's buffer go through the ring, which is
    /// faster on the machines measured (the default).
    Auto,
    /// Where the self-test passes, for every send from the threshold on.
    Always,
    /// Never: no self-test, every message through the rings.
    Off,
    /// Act as if the kernel refused the self-test (to exercise the
    /// fallback exactly as a container without CMA would).
    Refuse,
}

impl CmaMode {
    /// The value of `SHMPI_CMA` that selects this mode.
    pub fn name(self) -> &'static str {
        match self {
            CmaMode::Auto => "auto",
            CmaMode::Always => "always",
            CmaMode::Off => "off",
            CmaMode::Refuse => "refuse",
        }
    }

    /// `SHMPI_CMA`: `auto` (default), `always`, `off` / `0`, `refuse`.
    ///
    /// # Errors
    /// `Arg` for any other value.
    pub fn from_env() -> Result<CmaMode> {
        match std::env::var("SHMPI_CMA").ok().as_deref() {
            None | Some("") | Some("auto") | Some("1") | Some("on") => Ok(CmaMode::Auto),
            Some("always") => Ok(CmaMode::Always),
            Some("off") | Some("0") => Ok(CmaMode::Off),
            Some("refuse") => Ok(CmaMode::Refuse),
            Some(v) => Err(Error::new(
                ErrorClass::Arg,
                format!("SHMPI_CMA={v}: expected auto, always, off or refuse"),
            )),
        }
    }
}

/// Reads `dst.len()` bytes at `addr` in the process of task `task` (a
/// thread or process id, [`target`]) into `dst`.
///
/// # Errors
/// The OS error of `process_vm_readv` (`EPERM`, `ESRCH`, `EFAULT`,
/// `ENOSYS` under a seccomp filter, ...), or `EIO` when the peer's memory
/// ends before `dst` is full.
pub(crate) fn read(task: u32, addr: u64, dst: &mut [u8]) -> std::io::Result<()> {
    let mut done = 0usize;
    while done < dst.len() {
        let want = dst.len() - done;
        let local = libc::iovec {
            iov_base: dst[done..].as_mut_ptr().cast(),
            iov_len: want,
        };
        let remote = libc::iovec {
            iov_base: (addr as usize).wrapping_add(done) as *mut libc::c_void,
            iov_len: want,
        };
        // SAFETY: `local` describes `want` writable bytes of `dst`, which we
        // borrow mutably for the call; `remote` is only dereferenced by the
        // kernel in the other process, which checks it (EFAULT), so no
        // memory of this process is touched but `dst`'s.
        let n = unsafe { libc::process_vm_readv(task as libc::pid_t, &local, 1, &remote, 1, 0) };
        match n {
            n if n > 0 => done += n as usize,
            0 => return Err(std::io::Error::from_raw_os_error(libc::EIO)),
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// Remote iovecs per system call (Linux's `UIO_MAXIOV`).
const MAX_IOV: usize = 1024;

/// Copies between `local` (one buffer, packed) and the runs `(address,
/// length)` of the process of task `task`, in order: reads them into
/// `local` when `write` is false, writes `local` to them when true
/// (`process_vm_readv` / `process_vm_writev`). The runs' lengths must add
/// up to `local.len()`.
///
/// # Errors
/// As [`read`]; `EINVAL` when the lengths do not add up.
pub(crate) fn transfer_runs(
    task: u32,
    runs: &[(u64, usize)],
    local: *mut u8,
    local_len: usize,
    write: bool,
) -> std::io::Result<()> {
    if runs.iter().map(|r| r.1).sum::<usize>() != local_len {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut at = 0usize;
    for chunk in runs.chunks(MAX_IOV) {
        // Each run, or what is left of it after a short transfer.
        let mut remote: Vec<libc::iovec> = chunk
            .iter()
            .filter(|r| r.1 > 0)
            .map(|&(a, l)| libc::iovec {
                iov_base: a as usize as *mut libc::c_void,
                iov_len: l,
            })
            .collect();
        let mut first = 0usize;
        while first < remote.len() {
            let want: usize = remote[first..].iter().map(|v| v.iov_len).sum();
            let localv = libc::iovec {
                iov_base: local.wrapping_add(at).cast(),
                iov_len: want,
            };
            let rv = &remote[first..];
            let (task, nv) = (task as libc::pid_t, rv.len() as libc::c_ulong);
            let n = if write {
                // SAFETY: `localv` describes `want` bytes of the caller's
                // buffer from `at` (the runs add up to `local_len`,
                // checked above, and `at + want` never passes it), which
                // the kernel only reads; the remote iovecs are only
                // dereferenced by the kernel in the other process, which
                // checks them (EFAULT).
                unsafe { libc::process_vm_writev(task, &localv, 1, rv.as_ptr(), nv, 0) }
            } else {
                // SAFETY: as for the write; the kernel writes the local
                // buffer, which the caller lends for the call, and no
                // other memory of this process.
                unsafe { libc::process_vm_readv(task, &localv, 1, rv.as_ptr(), nv, 0) }
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 {
                return Err(std::io::Error::from_raw_os_error(libc::EIO));
            }
            // A partial transfer ends at a run's boundary or inside one:
            // skip what was done.
            let mut n = n as usize;
            at += n;
            while n > 0 {
                let v = &mut remote[first];
                if n >= v.iov_len {
                    n -= v.iov_len;
                    first += 1;
                } else {
                    v.iov_base = (v.iov_base as usize + n) as *mut libc::c_void;
                    v.iov_len -= n;
                    n = 0;
                }
            }
        }
    }
    Ok(())
}

/// The self-test: reads the probe word of the process of task `task` at
/// `addr`.
///
/// # Errors
/// Why single copy is not usable, in words.
pub(crate) fn probe(task: u32, addr: u64) -> std::result::Result<(), String> {
    if task == 0 || addr == 0 {
        return Err("the peer published no probe word".into());
    }
    let mut w = [0u8; 8];
    read(task, addr, &mut w).map_err(|e| format!("process_vm_readv from task {task}: {e}"))?;
    if u64::from_ne_bytes(w) != PROBE {
        return Err(format!(
            "process_vm_readv from task {task} read the wrong word"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_memory_at_odd_offsets_and_lengths() {
        let src: Vec<u8> = (0..100_003u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut dst = vec![0u8; 99_990];
        let addr = src.as_ptr() as u64 + 5;
        read(std::process::id(), addr, &mut dst).expect("CMA on oneself");
        assert_eq!(&dst[..], &src[5..99_995]);
        assert!(probe(std::process::id(), &PROBE as *const u64 as u64).is_ok());
        assert!(probe(std::process::id(), 0).is_err());
    }

    #[test]
    fn the_target_is_a_sleeping_thread_of_this_process_that_blocks_every_signal() {
        let tid = target();
        assert_eq!(target(), tid, "spawned once");
        assert_ne!(
            tid,
            std::process::id(),
            "a thread of its own, not the process"
        );
        let task = format!("/proc/self/task/{tid}");
        let comm =
            std::fs::read_to_string(format!("{task}/comm")).expect("a thread of this process");
        assert_eq!(comm.trim(), "shmpi-cma");
        let status = std::fs::read_to_string(format!("{task}/status")).unwrap();
        let blocked = status
            .lines()
            .find_map(|l| l.strip_prefix("SigBlk:"))
            .map(|v| u64::from_str_radix(v.trim(), 16).unwrap())
            .unwrap();
        // Every signal but SIGKILL and SIGSTOP, which cannot be blocked,
        // and the C library's own (from 32 up to SIGRTMIN), which it keeps.
        let unblockable = (1u64 << (libc::SIGKILL - 1))
            | (1 << (libc::SIGSTOP - 1))
            | (32..libc::SIGRTMIN()).fold(0u64, |m, s| m | 1 << (s - 1));
        assert_eq!(blocked | unblockable, u64::MAX, "SigBlk {blocked:x}");
        // Named in a call, it reaches this process's memory.
        let src: Vec<u8> = (0..10_000u32).map(|i| (i * 13) as u8).collect();
        let mut dst = vec![0u8; src.len()];
        read(tid, src.as_ptr() as u64, &mut dst).expect("CMA through the thread");
        assert_eq!(dst, src);
        assert!(probe(tid, &PROBE as *const u64 as u64).is_ok());
    }

    #[test]
    fn runs_are_read_and_written_in_order() {
        let mut target: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        let base = target.as_mut_ptr() as u64;
        let runs = [(base + 3, 10), (base + 100, 0), (base + 2000, 1500)];
        let mut got = vec![0u8; 1510];
        let me = std::process::id();
        transfer_runs(me, &runs, got.as_mut_ptr(), got.len(), false).unwrap();
        assert_eq!(
            &got[..10],
            &(3..13u32).map(|i| i as u8).collect::<Vec<_>>()[..]
        );
        assert_eq!(got[10], 2000u32 as u8);
        let mut src = vec![0xAAu8; 1510];
        transfer_runs(me, &runs, src.as_mut_ptr(), src.len(), true).unwrap();
        assert!(target[3..13].iter().all(|&b| b == 0xAA));
        assert_eq!(target[13], 13);
        assert!(target[2000..3500].iter().all(|&b| b == 0xAA));
        assert_eq!(target[3500], 3500u32 as u8);
        let e = transfer_runs(me, &runs, src.as_mut_ptr(), 5, true).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
    }

    #[test]
    fn the_defaults_follow_the_cpus_vendor_and_family() {
        let cpu = |vendor: &str, family: u32| {
            format!(
                "processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: 1\n\n\
                 processor\t: 1\nvendor_id\t: Other\ncpu family\t: 1\n"
            )
        };
        let intel = Defaults::for_cpu(&cpu("GenuineIntel", 6));
        assert_eq!((intel.threshold, intel.blocking), (8 << 10, 8 << 10));
        assert_eq!(intel.vector_copy, usize::MAX);
        let zen1 = Defaults::for_cpu(&cpu("AuthenticAMD", 23));
        assert_eq!((zen1.threshold, zen1.blocking), (256 << 10, 64 << 10));
        assert_eq!(zen1.vector_copy, 4 << 10);
        for family in [25, 26] {
            let zen = Defaults::for_cpu(&cpu("AuthenticAMD", family));
            assert_eq!((zen.threshold, zen.blocking), (256 << 10, usize::MAX));
            assert_eq!(zen.c_isend, usize::MAX);
        }
        // C's MPI_Isend: from 16 KiB on Intel (from 8 KiB to a receiver
        // that kept up), as a blocking send on AMD.
        assert_eq!(intel.c_isend, 16 << 10);
        assert_eq!(intel.c_isend_quiet, 8 << 10);
        assert_eq!(zen1.c_isend_quiet, usize::MAX);
        assert_eq!(zen1.c_isend, zen1.blocking);
        // A window's front taken straight from the ring: up to 128 B on
        // AMD, where it was measured faster; never on Intel.
        assert_eq!((intel.many_direct, zen1.many_direct), (0, 128));
        // The window's pace: measured on Intel only.
        assert_eq!((intel.window_pace_ns, zen1.window_pace_ns), (500, 0));
        // The placement is followed from 8 KiB where that was measured
        // (family 25), from 64 KiB elsewhere.
        let watch = |vendor, family| Defaults::for_cpu(&cpu(vendor, family)).watch;
        assert_eq!(watch("AuthenticAMD", 25), 8 << 10);
        for (vendor, family) in [
            ("AuthenticAMD", 23),
            ("AuthenticAMD", 26),
            ("GenuineIntel", 6),
        ] {
            assert_eq!(watch(vendor, family), 64 << 10, "{vendor} {family}");
        }
        // The probe finds distant peers on AMD, none on Intel, whose
        // scoped isends go by rendezvous from 32 KiB to every peer.
        assert_eq!((intel.distant_ns, intel.scoped), (None, 32 << 10));
        assert_eq!((intel.split, intel.split_blocking), (64 << 10, 32 << 10));
        for family in [23, 25, 26] {
            let zen = Defaults::for_cpu(&cpu("AuthenticAMD", family));
            assert_eq!(zen.distant_ns, Some(placement::DISTANT_NS));
            assert_eq!(zen.scoped, usize::MAX);
            assert_eq!(zen.split_blocking, zen.split);
        }
        // Unreadable or unknown: the other row.
        assert_eq!(Defaults::for_cpu(""), Defaults::other());
        assert_eq!(zen1.split, 64 << 10);
    }

    #[test]
    fn every_row_is_found_by_its_name_and_gives_its_cpus_thresholds() {
        for row in CpuRow::ALL {
            assert_eq!(CpuRow::named(row.name()), Some(row));
        }
        assert_eq!(CpuRow::named("zen4"), None);
        assert_eq!(CpuRow::named("Intel"), None, "names are exact");
        let info = |vendor: &str, family: u32| {
            format!("processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\n")
        };
        for (vendor, family, row) in [
            ("GenuineIntel", 6, CpuRow::Intel),
            ("AuthenticAMD", 23, CpuRow::AmdFamily23),
            ("AuthenticAMD", 25, CpuRow::AmdFamily25),
            ("AuthenticAMD", 26, CpuRow::Other),
            ("HygonGenuine", 24, CpuRow::Other),
        ] {
            let text = info(vendor, family);
            assert_eq!(CpuRow::of(&text), row, "{vendor} {family}");
            assert_eq!(Defaults::for_cpu(&text), Defaults::of(row));
        }
    }

    #[test]
    fn a_bad_address_is_an_error_not_a_crash() {
        let mut dst = [0u8; 64];
        let e = read(std::process::id(), 8, &mut dst).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EFAULT));
    }
}
