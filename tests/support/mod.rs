//! Multi-process test support: a test re-runs its own binary under
//! `shmpiexec`, and the ranks run the test body. Every run is bounded by a
//! timeout, after which the launcher is told to end the job (it passes the
//! signal on and cleans up), so a bug fails the test instead of hanging CI.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The variable that tells a re-run test binary which case it runs.
pub const CASE: &str = "SHMPI_TEST_CASE";

/// Default bound of one multi-process test.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// What a launched job did.
#[derive(Debug)]
pub struct Outcome {
    /// The launcher's exit code (None if killed by the timeout).
    pub code: Option<i32>,
    /// The launcher's and ranks' stdout.
    pub stdout: String,
    /// The launcher's and ranks' stderr.
    pub stderr: String,
    /// Wall time.
    pub elapsed: Duration,
}

/// The `shmpiexec` binary cargo built for this test run.
pub fn shmpiexec() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_shmpiexec"))
}

/// Whether this process is a rank of case `name`.
pub fn is_rank_of(name: &str) -> bool {
    std::env::var(CASE).is_ok_and(|c| c == name)
}

/// Launches `n` ranks of this test binary running case `name`, with extra
/// launcher arguments and environment; waits at most `timeout`.
pub fn launch(
    n: usize,
    name: &str,
    launcher_args: &[&str],
    envs: &[(&str, &str)],
    timeout: Duration,
) -> Outcome {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = Command::new(shmpiexec());
    cmd.arg("-n").arg(n.to_string());
    cmd.args(launcher_args);
    cmd.arg(&exe)
        .arg(name)
        .arg("--exact")
        .arg("--nocapture")
        .arg("--test-threads=1")
        .env(CASE, name)
        .env("RUST_BACKTRACE", "1");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().expect("start shmpiexec");
    let out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || std::io::read_to_string(out).unwrap_or_default());
    let t_err = std::thread::spawn(move || std::io::read_to_string(err).unwrap_or_default());
    let mut code = None;
    loop {
        if let Some(st) = child.try_wait().expect("wait on shmpiexec") {
            code = st.code();
            break;
        }
        if start.elapsed() > timeout {
            end_gently(&mut child);
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let elapsed = start.elapsed();
    Outcome {
        code,
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
        elapsed,
    }
}

/// Runs `body` on `n` ranks: in the test process it launches the job and
/// asserts that it succeeded; in a rank it initialises shmpi, runs the body
/// and finalizes.
pub fn run_ranks(n: usize, name: &str, body: impl FnOnce(&shmpi::Universe)) {
    run_ranks_with(n, name, &[], &[], body)
}

/// As [`run_ranks`], with launcher arguments and environment.
pub fn run_ranks_with(
    n: usize,
    name: &str,
    launcher_args: &[&str],
    envs: &[(&str, &str)],
    body: impl FnOnce(&shmpi::Universe),
) {
    if is_rank_of(name) {
        let u = shmpi::init().expect("init");
        body(&u);
        u.finalize().expect("finalize");
        return;
    }
    let o = launch(n, name, launcher_args, envs, TIMEOUT);
    assert_eq!(
        o.code,
        Some(0),
        "job {name} on {n} ranks failed after {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.elapsed,
        o.stdout,
        o.stderr
    );
    assert_no_segments_left();
}

/// Asserts that no segment of this user is left in /dev/shm by a finished
/// job (segments of jobs still running in parallel tests are not ours to
/// judge, so only files older than the job bound count).
pub fn assert_no_segments_left() {
    let uid = uid();
    let prefix = format!("shmpi-{uid}-");
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.starts_with(&prefix) {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().unwrap_or_default() > TIMEOUT + Duration::from_secs(10));
        assert!(!old, "stale segment left in /dev/shm: {name}");
    }
}

/// This user's id, from /proc (tests stay free of unsafe).
pub fn uid() -> u32 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Segment files of this user whose name carries `job_hint` (hex), if any.
pub fn segments_of_user() -> Vec<String> {
    let prefix = format!("shmpi-{}-", uid());
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Ends a command that overran: SIGTERM first, which a launcher
/// (shmpiexec, mpiexec) passes to its ranks before it cleans up (killed
/// outright it would leave them running, orphaned, past the failed test),
/// SIGKILL after a grace of 5 s if it is still there; then reaps it.
fn end_gently(child: &mut std::process::Child) {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let grace = Instant::now();
    while child.try_wait().ok().flatten().is_none() && grace.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs `cmd` to its end, capturing its output, but kills it after
/// `timeout` (then panics), so a hang fails the test instead of CI.
pub fn output_bounded(cmd: &mut Command, timeout: Duration) -> std::process::Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start command");
    let out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut { out }, &mut v);
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut { err }, &mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait on command") {
            break st;
        }
        if start.elapsed() > timeout {
            end_gently(&mut child);
            panic!("command did not finish within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    std::process::Output {
        status,
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    }
}

/// Runs `body` as one job per size in `sizes` (in a rank: once, for the
/// job that started it).
#[allow(dead_code)]
pub fn run_sizes(sizes: &[usize], name: &str, body: impl Fn(&shmpi::Universe)) {
    if is_rank_of(name) {
        run_ranks(0, name, body);
        return;
    }
    for &n in sizes {
        run_ranks(n, name, &body);
    }
}

/// CPUs online on this machine (not this process's affinity mask).
pub fn online_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| shmpi::job::env::parse_cpus(s.trim()))
        .map_or(1, |v| v.len())
}

/// `len` pseudo-random bytes from `seed` (xorshift), to check that
/// messages arrive unchanged.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Whether every rank's single-copy self-test passed (agreed, so that no
/// rank goes on alone to wait for one that stopped).
pub fn single_copy_everywhere(u: &shmpi::Universe) -> bool {
    let mine = [u32::from(u.single_copy() == shmpi::shm::SingleCopy::Usable)];
    let mut all = [0u32];
    u.world()
        .allreduce(&mine, &mut all, &shmpi::Op::Min)
        .unwrap();
    all[0] == 1
}
