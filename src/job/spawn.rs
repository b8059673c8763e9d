//! The launcher side: create the segment, start the ranks, supervise them,
//! pass on signals and exit codes, clean up.

use super::env::{self, JobContract};
use crate::shm::{os, segment_path, RankState, Segment, SegmentSpec};
use crate::sync::{AtomicU32, Ordering};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long ranks get between SIGTERM and SIGKILL when the job is torn
/// down.
pub const GRACE: Duration = Duration::from_millis(1000);
/// How often the launcher looks at its children.
const POLL: Duration = Duration::from_millis(2);
/// How often a launcher that adopts orphans reaps those that ended.
const REAP_EVERY: Duration = Duration::from_secs(1);

/// The shape of the segment, computed by the caller from the transport's
/// layout (the job layer does not know it).
#[derive(Clone, Copy, Debug)]
pub struct SegmentShape {
    /// Total bytes.
    pub size: u64,
    /// The layout digest.
    pub layout_digest: u64,
    /// The ring capacity the ranks will compute the same layout from.
    pub ring_size: usize,
}

/// What to launch.
#[derive(Clone, Debug)]
pub struct JobSpec {
    /// Ranks.
    pub nranks: usize,
    /// Program and its arguments.
    pub program: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Prefix each output line with `[rank] `.
    pub tag_output: bool,
    /// Extra environment: `(NAME, Some(value))` sets, `(NAME, None)` passes
    /// the launcher's own value.
    pub env: Vec<(String, Option<String>)>,
    /// CPU for each rank (rank i gets `cpus[i % len]`), if pinning.
    pub cpus: Vec<usize>,
    /// CPU set for each rank (rank i gets `cpusets[i % len]`), if binding
    /// to sets (shmpiexec's placement policies).
    pub cpusets: Vec<Vec<usize>>,
    /// Directory for the segment.
    pub shm_dir: PathBuf,
    /// Further applications (MPMD, `prog1 : -n 2 prog2`, and
    /// `comm_spawn_multiple`): after the first `nranks - sum of their
    /// counts` ranks, which run `program`, each runs its count of ranks.
    /// Rank r's application index is its `MPI_APPNUM` (`SHMPI_APPNUM`).
    pub more: Vec<App>,
    /// How long the job may run (`shmpiexec --timeout`,
    /// `MPIEXEC_TIMEOUT`): past it the ranks are ended and the job's
    /// status is [`TIMED_OUT`].
    pub timeout: Option<Duration>,
}

/// The status of a job that ran past its timeout (as `timeout(1)`'s).
pub const TIMED_OUT: i32 = 124;

/// One application of a multi-program job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct App {
    /// Ranks that run it.
    pub count: usize,
    /// Program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
}

impl JobSpec {
    /// The program, arguments and application index of `rank`.
    pub fn app_of(&self, rank: usize) -> (&str, &[String], usize) {
        let extra: usize = self.more.iter().map(|a| a.count).sum();
        let first = self.nranks.saturating_sub(extra);
        if rank < first {
            return (&self.program, &self.args, 0);
        }
        let mut at = first;
        for (i, a) in self.more.iter().enumerate() {
            if rank < at + a.count {
                return (&a.program, &a.args, i + 1);
            }
            at += a.count;
        }
        (&self.program, &self.args, 0)
    }
}

/// How the job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobOutcome {
    /// The exit code for the launcher: 0, the first nonzero code, or
    /// 128 + signal for a rank killed by a signal.
    pub code: i32,
    /// A message naming the rank that failed and how, if one did.
    pub failure: Option<String>,
}

fn status_code(st: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => 1,
    }
}

fn describe(rank: usize, st: ExitStatus, state: RankState, abort_code: i32) -> String {
    use std::os::unix::process::ExitStatusExt;
    if state == RankState::Aborted {
        return format!("rank {rank} called abort with error code {abort_code}");
    }
    match (st.code(), st.signal()) {
        (_, Some(s)) => format!("rank {rank} was killed by {}", os::signal_name(s)),
        (Some(0), _) if state == RankState::Running => {
            format!("rank {rank} exited without calling finalize")
        }
        (Some(0), _) => format!("rank {rank} exited before joining the job"),
        (Some(c), _) => format!("rank {rank} exited with code {c}"),
        _ => format!("rank {rank} ended abnormally"),
    }
}

/// Copies a rank's output to ours, line by line, each prefixed `[rank] `;
/// says on `done` when the rank's end of the pipe is closed.
fn forward(
    rank: usize,
    src: impl std::io::Read + Send + 'static,
    err: bool,
    done: std::sync::mpsc::Sender<()>,
) {
    std::thread::spawn(move || {
        let _done = Finished(done);
        let mut r = BufReader::new(src);
        let mut line = Vec::new();
        loop {
            line.clear();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let mut out: Box<dyn Write> = if err {
                        Box::new(std::io::stderr().lock())
                    } else {
                        Box::new(std::io::stdout().lock())
                    };
                    let _ = write!(out, "[{rank}] ");
                    let _ = out.write_all(&line);
                    if !line.ends_with(b"\n") {
                        let _ = out.write_all(b"\n");
                    }
                    let _ = out.flush();
                }
            }
        }
    });
}

/// Sends on its channel when dropped: a forwarding thread's end, also
/// if it panics.
struct Finished(std::sync::mpsc::Sender<()>);

impl Drop for Finished {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// How long the launcher waits, after the last rank ended, for the
/// forwarding threads to copy what the ranks' pipes still hold (a
/// process a rank started may keep a pipe open past it).
const DRAIN: Duration = Duration::from_secs(10);

/// A fresh job id (also a bridge's between jobs, `comm::connect`).
pub(crate) fn job_id() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut x = t ^ ((std::process::id() as u64) << 32) ^ 0x9e37_79b9_7f4a_7c15;
    // splitmix64 finaliser: spreads the bits so ids do not look sequential.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Why a job did not start: a message for the user, and the exit status a
/// launcher gives for it (as a shell would: 127 for a program not found,
/// 126 for one that cannot be run, 1 otherwise).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartError {
    /// The message, starting with `shmpiexec:`.
    pub message: String,
    /// The exit status.
    pub status: u8,
}

impl StartError {
    fn other(message: String) -> Self {
        StartError { message, status: 1 }
    }
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<StartError> for String {
    fn from(e: StartError) -> String {
        e.message
    }
}

/// Whether this process adopts its descendants' orphans ([`adopt_orphans`]).
static ADOPTING: AtomicU32 = AtomicU32::new(0);

/// Makes this launcher process adopt the processes its ranks leave
/// orphaned (`PR_SET_CHILD_SUBREAPER`: a daemon a rank double-forked, a
/// background command of a shell rank that exited), so that a job [`run`]
/// ends ends them too. For a launcher whose only children are its jobs'
/// ranks (`shmpiexec`): when a job is ended, every other child of this
/// process but the reaper is taken for such an orphan. False where the
/// kernel refuses (the job then ends only what is still below a rank).
pub fn adopt_orphans() -> bool {
    let ok = os::adopt_orphans();
    // Relaxed: pairs with nothing; `run`, which reads it, is called after
    // this in program order (on this thread, or one started after it,
    // which the thread start orders).
    ADOPTING.store(u32::from(ok), Ordering::Relaxed);
    ok
}

/// Runs a job to its end and reports how it ended. Errors before any rank
/// starts (no space for the segment, a program that cannot be started) are
/// returned as `Err`, with a message and an exit status. Every rank is
/// started from the calling thread and gets SIGKILL if that thread ends
/// first (`PR_SET_PDEATHSIG`), as when the launcher is killed, whose files a
/// reaper forked first then removes (`shm::os::Reaper`): `run` returns
/// only after every rank has ended, so call it from a thread that lives
/// until then (it does, unless it is killed).
///
/// # Errors
/// [`StartError`] when the job cannot start.
pub fn run(spec: &JobSpec, shape: SegmentShape) -> Result<JobOutcome, StartError> {
    os::capture_termination_signals();
    os::ignore_sigxfsz();
    let job = job_id();
    let path = segment_path(&spec.shm_dir, job);
    // Removes the job's files if this process is killed (SIGKILL) before
    // it can: started before the first of them is made, armed once the
    // segment is ours.
    let reaper =
        os::Reaper::start(&path).map_err(|e| StartError::other(format!("shmpiexec: {e}")))?;
    let seg_spec = SegmentSpec {
        size: shape.size,
        layout_digest: shape.layout_digest,
        nranks: spec.nranks as u32,
        job_id: job,
    };
    let seg = Segment::create(&path, seg_spec)
        .map_err(|e| StartError::other(format!("shmpiexec: {e}")))?;
    reaper.arm();
    let mut children: Vec<Option<Child>> = Vec::with_capacity(spec.nranks);
    // The CPUs this launcher may use, before any rank is bound.
    let universe = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (forwarded, drained) = std::sync::mpsc::channel();
    let mut forwarding = 0;
    for rank in 0..spec.nranks {
        let contract = JobContract {
            job_id: job,
            rank,
            size: spec.nranks,
            segment: path.clone(),
            ring_size: shape.ring_size,
            cpu: (!spec.cpus.is_empty()).then(|| spec.cpus[rank % spec.cpus.len()]),
            cpuset: (!spec.cpusets.is_empty())
                .then(|| spec.cpusets[rank % spec.cpusets.len()].clone()),
        };
        let (program, args, appnum) = spec.app_of(rank);
        let mut cmd = Command::new(program);
        cmd.args(args);
        cmd.env(env::APPNUM, appnum.to_string());
        cmd.env(env::UNIVERSE_SIZE, universe.to_string());
        for (k, v) in &spec.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => match std::env::var_os(k) {
                    Some(v) => cmd.env(k, v),
                    None => cmd.env_remove(k),
                },
            };
        }
        cmd.env_remove(env::CPU);
        cmd.env_remove(env::CPUSET);
        for (k, v) in contract.to_env() {
            cmd.env(k, v);
        }
        if spec.tag_output {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        // Standard input goes to rank 0 only, as with MPICH's and Open
        // MPI's launchers: the others read end of file at once instead
        // of racing rank 0 for it.
        if rank != 0 {
            cmd.stdin(Stdio::null());
        }
        // A rank ends with this thread: a launcher killed by SIGKILL
        // leaves no rank behind (this thread supervises the job to its
        // end, below).
        os::die_with_parent(&mut cmd);
        // Under Yama's ptrace_scope=1 the other ranks, siblings of this
        // one, may read it by single copy only so.
        let cma = spec
            .env
            .iter()
            .find(|(k, _)| k == "SHMPI_CMA")
            .and_then(|(_, v)| v.clone())
            .or_else(|| std::env::var("SHMPI_CMA").ok());
        if !matches!(cma.as_deref(), Some("off" | "0" | "refuse")) {
            os::readable_by_job(&mut cmd);
        }
        match cmd.spawn() {
            Ok(mut child) => {
                if spec.tag_output {
                    if let Some(o) = child.stdout.take() {
                        forward(rank, o, false, forwarded.clone());
                        forwarding += 1;
                    }
                    if let Some(e) = child.stderr.take() {
                        forward(rank, e, true, forwarded.clone());
                        forwarding += 1;
                    }
                }
                children.push(Some(child));
            }
            Err(e) => {
                let status = match e.kind() {
                    std::io::ErrorKind::NotFound => 127,
                    std::io::ErrorKind::PermissionDenied => 126,
                    _ => 1,
                };
                let message = format!("shmpiexec: cannot start {program}: {e}");
                terminate(&mut children, &seg, reaper.pid());
                return Err(StartError { message, status });
            }
        }
    }
    let pids: Vec<u32> = children.iter().flatten().map(Child::id).collect();
    let outcome = supervise(spec.nranks, &mut children, &seg, spec.timeout, reaper.pid());
    // Every rank has ended: what their pipes still hold is copied out
    // before the launcher exits (it returned with threads mid-copy, and
    // a reader slower than the ranks lost their last output).
    let deadline = Instant::now() + DRAIN;
    for _ in 0..forwarding {
        let left = deadline.saturating_duration_since(Instant::now());
        if drained.recv_timeout(left).is_err() {
            break;
        }
    }
    // `supervise` removed the segment and the pools, and a job that ended
    // cleanly has no window file left (each goes once its members have
    // mapped it). After a failure the reaper sweeps for such a file.
    if outcome.failure.is_none() {
        reaper.disarm();
    }
    // Ports and names a killed rank could not take away.
    super::names::forget_processes(&pids);
    Ok(outcome)
}

/// Watches the ranks until they have all ended (the job's failure ends
/// the rest: [`terminate`], which spares the launcher's `reaper`).
fn supervise(
    n: usize,
    children: &mut [Option<Child>],
    seg: &Segment,
    timeout: Option<Duration>,
    reaper: u32,
) -> JobOutcome {
    let mut outcome = JobOutcome {
        code: 0,
        failure: None,
    };
    let deadline = timeout.map(|t| Instant::now() + t);
    let mut live = n;
    let mut signals = 0;
    // A rank that ended cleanly before any rank joined (not an MPI
    // program, or one that exited early): fine while no rank joins, but
    // once one does, the job can never gather every rank.
    let mut gone_early: Option<usize> = None;
    // Adopted orphans that end are reaped now and then (a long job's
    // would pile up as zombies): every child but the ranks and the reaper.
    // Relaxed: see `adopt_orphans`.
    let adopting = ADOPTING.load(Ordering::Relaxed) == 1;
    let mut next_reap = Instant::now() + REAP_EVERY;
    while live > 0 {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            outcome.failure = Some(format!(
                "the job ran past its timeout of {:?}",
                timeout.unwrap_or_default()
            ));
            outcome.code = TIMED_OUT;
            terminate(children, seg, reaper);
            break;
        }
        if let Some((sig, from_terminal)) = os::take_signal() {
            signals += 1;
            if signals > 1 {
                // A second one ends the job, whatever the ranks do with
                // signals (as MPICH's second Ctrl-C).
                outcome.failure = Some(format!(
                    "got {} again, ended the ranks",
                    os::signal_name(sig)
                ));
                outcome.code = 128 + sig;
                terminate(children, seg, reaper);
                break;
            }
            // A terminal's signal reached the ranks already (they share
            // the launcher's process group): passing it on would give
            // each a second one.
            if !from_terminal {
                for c in children.iter().flatten() {
                    os::send_signal(c.id(), sig);
                }
            }
            // How the ranks end says how the job did: a rank the signal
            // killed fails it; ranks that catch it and finish end it
            // cleanly.
            crate::error::say(format_args!(
                "shmpiexec: got {}{} (another ends them)",
                os::signal_name(sig),
                if from_terminal {
                    " from the terminal, which sent it to the ranks too"
                } else {
                    ", passed it on to the ranks"
                }
            ));
        }
        // SYNC(job.start): Acquire; once every rank is in, the name is no
        // longer needed: unlinking now leaves nothing behind even if the
        // launcher itself is killed later.
        let attached = seg.header().attached().load(Ordering::Acquire) as usize;
        if attached >= n {
            seg.unlink();
        }
        let mut failed = false;
        if let (Some(rank), true) = (gone_early, attached > 0) {
            if outcome.failure.is_none() {
                outcome.failure = Some(format!(
                    "rank {rank} exited before joining the job, which the others joined"
                ));
                outcome.code = 1;
                failed = true;
            }
        }
        for (rank, slot) in children.iter_mut().enumerate() {
            let Some(child) = slot.as_mut() else { continue };
            let Ok(Some(st)) = child.try_wait() else {
                // Alive, but marked aborted: by itself on its way out, or
                // by a process of a connected job whose MPI_Abort reached
                // this job (`docs/connect.md`).
                let cb = seg.control(rank);
                if cb.state() == RankState::Aborted && outcome.failure.is_none() {
                    outcome.failure = Some(format!(
                        "rank {rank} was aborted with error code {}",
                        cb.exit_code()
                    ));
                    outcome.code = super::abort_status(cb.exit_code());
                    failed = true;
                }
                continue;
            };
            *slot = None;
            live -= 1;
            let cb = seg.control(rank);
            let state = cb.state();
            let code = status_code(st);
            // SYNC(job.start): Acquire, as above.
            let others_in = seg.header().attached().load(Ordering::Acquire) > 0;
            let clean = code == 0
                && (state == RankState::Finalized || (state == RankState::Empty && !others_in));
            if clean && state == RankState::Empty {
                gone_early.get_or_insert(rank);
            }
            if !clean && outcome.failure.is_none() {
                outcome.failure = Some(describe(rank, st, state, cb.exit_code()));
                outcome.code = match state {
                    RankState::Aborted => super::abort_status(cb.exit_code()),
                    _ if code == 0 => 1,
                    _ => code,
                };
                failed = true;
            }
        }
        if failed {
            terminate(children, seg, reaper);
            break;
        }
        if adopting && Instant::now() >= next_reap {
            let mut keep: Vec<u32> = children.iter().flatten().map(Child::id).collect();
            keep.push(reaper);
            os::reap_adopted(&keep);
            next_reap = Instant::now() + REAP_EVERY;
        }
        if live > 0 {
            std::thread::sleep(POLL);
        }
    }
    seg.unlink();
    remove_pools(seg.path(), n);
    outcome
}

/// Removes the shared-pool files (`transport::pool`) the ranks of the job
/// with segment `segment` left (a rank that finalized removed its own).
fn remove_pools(segment: &std::path::Path, n: usize) {
    for r in 0..n {
        let mut s = segment.as_os_str().to_owned();
        s.push(format!("-pool-{r}"));
        let _ = std::fs::remove_file(std::path::PathBuf::from(s));
    }
}

/// SIGTERM to every live rank, SIGKILL after [`GRACE`], then reap them.
fn terminate(children: &mut [Option<Child>], seg: &Segment, reaper: u32) {
    seg.unlink();
    let ranks: Vec<u32> = children.iter().flatten().map(Child::id).collect();
    // What the ranks started (a shell's commands, helpers) ends with
    // them: found now, while they are still the ranks' descendants, or
    // this launcher's if it adopts orphans ([`adopt_orphans`]: a
    // double-forked daemon), the launcher's reaper spared. Held by
    // pidfds: a pid that an unrelated process took over once one of
    // these ended is never signalled.
    let mut roots = ranks.clone();
    // Relaxed: see `adopt_orphans` (program order or thread start).
    if ADOPTING.load(Ordering::Relaxed) == 1 {
        roots.push(std::process::id());
    }
    let mut started = os::descendants(&roots, &[reaper]);
    for &p in &ranks {
        os::send_signal(p, libc::SIGTERM);
    }
    for p in &started {
        p.signal(libc::SIGTERM);
    }
    let deadline = Instant::now() + GRACE;
    loop {
        let mut live = 0;
        for slot in children.iter_mut() {
            if let Some(c) = slot.as_mut() {
                match c.try_wait() {
                    Ok(Some(_)) | Err(_) => *slot = None,
                    Ok(None) => live += 1,
                }
            }
        }
        started.retain(|p| !p.ended());
        if live == 0 && started.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            for c in children.iter_mut().flatten() {
                let _ = c.kill();
                let _ = c.wait();
            }
            for p in &started {
                p.signal(libc::SIGKILL);
            }
            return;
        }
        std::thread::sleep(POLL);
    }
}
