//! The launcher's contract: exit codes, abort, a killed rank, output
//! tagging, environment passing, space checks, and that nothing is left in
//! /dev/shm.

mod support;

use std::process::Command;
use std::time::Duration;
use support::{is_rank_of, launch, run_ranks, segments_of_user};

#[test]
fn abort_ends_the_job_with_its_code_and_names_the_rank() {
    let name = "abort_ends_the_job_with_its_code_and_names_the_rank";
    if is_rank_of(name) {
        let u = shmpi::init().unwrap();
        let w = u.world();
        if w.rank() == 2 {
            u.abort(7);
        }
        // The others block forever in a receive nobody sends.
        let mut b = [0u8];
        let _ = w.recv(&mut b, 2, 0);
        unreachable!("rank 2 never sends");
    }
    let before = segments_of_user();
    let o = launch(4, name, &[], &[], Duration::from_secs(30));
    assert_eq!(o.code, Some(7), "{}", o.stderr);
    assert!(
        o.stderr.contains("rank 2 called abort with error code 7"),
        "{}",
        o.stderr
    );
    assert!(o.elapsed < Duration::from_secs(10));
    assert_no_new_segments(&before);
}

/// `MPI_Abort(comm, 0)`: the job still ends at once, and the launcher
/// exits 0, the code, as the standard asks and MPICH and Open MPI do.
#[test]
fn abort_with_code_zero_ends_the_job_and_exits_zero() {
    let name = "abort_with_code_zero_ends_the_job_and_exits_zero";
    if is_rank_of(name) {
        let u = shmpi::init().unwrap();
        let w = u.world();
        if w.rank() == 1 {
            u.abort(0);
        }
        let mut b = [0u8];
        let _ = w.recv(&mut b, 1, 0);
        unreachable!("rank 1 never sends");
    }
    let o = launch(3, name, &[], &[], Duration::from_secs(30));
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stderr.contains("rank 1 called abort with error code 0"),
        "{}",
        o.stderr
    );
    assert!(o.elapsed < Duration::from_secs(10));
}

#[test]
fn rank_killed_by_sigkill_ends_the_job_fast_and_leaves_no_segment() {
    let name = "rank_killed_by_sigkill_ends_the_job_fast_and_leaves_no_segment";
    if is_rank_of(name) {
        let u = shmpi::init().unwrap();
        let w = u.world();
        if w.rank() == 1 {
            // Exchange a little first: mid-job, not at start-up.
            w.send(&[1u32; 1000], 0, 0).unwrap();
            let pid = std::process::id().to_string();
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
            std::thread::sleep(Duration::from_secs(30));
        } else if w.rank() == 0 {
            let mut b = [0u32; 1000];
            w.recv(&mut b, 1, 0).unwrap();
        }
        let mut b = [0u8];
        let _ = w.recv(&mut b, 1, 99);
        unreachable!("rank 1 is dead");
    }
    let before = segments_of_user();
    let o = launch(3, name, &[], &[], Duration::from_secs(30));
    assert_eq!(o.code, Some(128 + 9), "{}", o.stderr);
    assert!(
        o.stderr.contains("rank 1 was killed by SIGKILL"),
        "{}",
        o.stderr
    );
    assert!(o.elapsed < Duration::from_secs(2), "took {:?}", o.elapsed);
    assert_no_new_segments(&before);
}

#[test]
fn nonzero_exit_is_passed_on_and_others_are_ended() {
    let name = "nonzero_exit_is_passed_on_and_others_are_ended";
    if is_rank_of(name) {
        let u = shmpi::init().unwrap();
        if u.rank() == 0 {
            std::process::exit(3);
        }
        std::thread::sleep(Duration::from_secs(30));
        unreachable!("the launcher ends this rank");
    }
    let o = launch(2, name, &[], &[], Duration::from_secs(30));
    assert_eq!(o.code, Some(3), "{}", o.stderr);
    assert!(
        o.stderr.contains("rank 0 exited with code 3"),
        "{}",
        o.stderr
    );
    assert!(o.elapsed < Duration::from_secs(5));
}

#[test]
fn exit_without_finalize_is_an_error() {
    let name = "exit_without_finalize_is_an_error";
    if is_rank_of(name) {
        let u = shmpi::init().unwrap();
        if u.rank() == 1 {
            std::mem::forget(u);
            std::process::exit(0);
        }
        std::thread::sleep(Duration::from_secs(30));
        unreachable!("the launcher ends this rank");
    }
    let o = launch(2, name, &[], &[], Duration::from_secs(30));
    assert_ne!(o.code, Some(0));
    assert!(
        o.stderr.contains("rank 1 exited without calling finalize"),
        "{}",
        o.stderr
    );
}

/// Rank 1 panics with a rendezvous send to rank 0 in flight, which rank
/// 0, blocked in a receive of another tag, never reads. Unwinding drops
/// the request, which must wait for its reader; before it sleeps it marks
/// the rank aborted, so the launcher ends the job instead of both ranks
/// waiting for ever.
#[test]
fn a_rank_that_panics_with_a_send_in_flight_ends_the_job() {
    let name = "a_rank_that_panics_with_a_send_in_flight_ends_the_job";
    if is_rank_of(name) {
        let u = shmpi::init().unwrap();
        let w = u.world();
        if w.rank() == 1 {
            let big = vec![7u8; 1 << 20];
            let _r = w.isend(&big, 0, 5).unwrap();
            panic!("rank 1 gives up");
        }
        let mut b = [0u8];
        let _ = w.recv(&mut b, 1, 99);
        unreachable!("rank 1 never sends tag 99");
    }
    let before = segments_of_user();
    let o = launch(2, name, &[], &[], Duration::from_secs(30));
    assert_eq!(o.code, Some(101), "{}", o.stderr);
    assert!(o.stderr.contains("rank 1 gives up"), "{}", o.stderr);
    // The launcher names the rank; without single copy the send went
    // through the ring and the rank may have exited before the launcher
    // looked, so either wording.
    assert!(
        o.stderr.contains("shmpi: rank 1 panicked; ending the job")
            && (o.stderr.contains("rank 1 was aborted with error code 101")
                || o.stderr.contains("rank 1 called abort with error code 101")),
        "{}",
        o.stderr
    );
    assert!(o.elapsed < Duration::from_secs(10), "took {:?}", o.elapsed);
    assert_no_new_segments(&before);
}

/// A rank that panics with nothing in flight does not finalize on its way
/// out (finalize waits for every rank, and the others wait for it): it
/// marks itself aborted, and the launcher ends the job.
#[test]
fn a_rank_that_panics_ends_the_job_instead_of_waiting_in_finalize() {
    let name = "a_rank_that_panics_ends_the_job_instead_of_waiting_in_finalize";
    if is_rank_of(name) {
        let u = shmpi::init().unwrap();
        let w = u.world();
        if w.rank() == 2 {
            panic!("rank 2 gives up");
        }
        let mut b = [0u8];
        let _ = w.recv(&mut b, 2, 0);
        unreachable!("rank 2 never sends");
    }
    let before = segments_of_user();
    let o = launch(3, name, &[], &[], Duration::from_secs(30));
    assert_eq!(o.code, Some(101), "{}", o.stderr);
    assert!(
        o.stderr.contains("shmpi: rank 2 panicked; ending the job"),
        "{}",
        o.stderr
    );
    assert!(o.elapsed < Duration::from_secs(10), "took {:?}", o.elapsed);
    assert_no_new_segments(&before);
}

#[test]
fn tag_output_prefixes_lines_and_env_is_passed() {
    let name = "tag_output_prefixes_lines_and_env_is_passed";
    if is_rank_of(name) {
        let u = shmpi::init().unwrap();
        assert_eq!(std::env::var("SHMPI_TEST_X").as_deref(), Ok("42"));
        println!("hello from {}", u.rank());
        u.finalize().unwrap();
        return;
    }
    let o = launch(
        3,
        name,
        &["--tag-output", "-x", "SHMPI_TEST_X=42"],
        &[],
        Duration::from_secs(30),
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    for r in 0..3 {
        // libtest writes "test NAME ... " before the body's output, so the
        // rank's line holds more than the greeting.
        let tagged = o
            .stdout
            .lines()
            .any(|l| l.starts_with(&format!("[{r}] ")) && l.contains(&format!("hello from {r}")));
        assert!(tagged, "{}", o.stdout);
    }
}

#[test]
fn program_without_launcher_is_a_singleton_world() {
    let name = "program_without_launcher_is_a_singleton_world";
    if is_rank_of(name) {
        let u = shmpi::init().unwrap();
        let w = u.world();
        w.set_errhandler(shmpi::ErrHandler::Return);
        assert_eq!((w.rank(), w.size()), (0, 1));
        // Messages to self.
        w.send(&[5u8, 6], 0, 1).unwrap();
        let mut b = [0u8; 2];
        w.recv(&mut b, 0, 1).unwrap();
        assert_eq!(b, [5, 6]);
        w.barrier().unwrap();
        assert_eq!(shmpi::init().unwrap_err().class(), shmpi::ErrorClass::Other);
        u.finalize().unwrap();
        return;
    }
    let before = segments_of_user();
    let exe = std::env::current_exe().unwrap();
    let o = support::output_bounded(
        Command::new(exe)
            .args([name, "--exact", "--test-threads=1"])
            .env(support::CASE, name),
        Duration::from_secs(30),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    assert_no_new_segments(&before);
}

#[test]
fn use_after_finalize_is_err_other() {
    let name = "use_after_finalize_is_err_other";
    if is_rank_of(name) {
        let u = shmpi::init().unwrap();
        let w = u.world();
        w.set_errhandler(shmpi::ErrHandler::Return);
        u.finalize().unwrap();
        let e = w.send(&[1u8], 0, 0).unwrap_err();
        assert_eq!(e.class(), shmpi::ErrorClass::Other);
        assert!(e.to_string().contains("finalized"), "{e}");
        return;
    }
    let o = launch(2, name, &[], &[], Duration::from_secs(30));
    assert_eq!(o.code, Some(0), "{}", o.stderr);
}

#[test]
fn segment_too_large_for_file_size_limit_is_a_clear_error() {
    // RLIMIT_FSIZE stands in for a full file system on any machine; the
    // launcher reports it before starting any rank (no SIGBUS, no SIGXFSZ).
    let cmd = format!(
        "ulimit -f 64; exec {} -n 4 --ring-size 1048576 /bin/true",
        support::shmpiexec().display()
    );
    let before = segments_of_user();
    let o = support::output_bounded(
        Command::new("sh").args(["-c", &cmd]),
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("exceeds the file-size limit"), "{err}");
    assert_no_new_segments(&before);
}

#[test]
fn segment_larger_than_a_small_tmpfs_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("shmpi-tiny-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mounted = support::output_bounded(
        Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
            .arg(&dir),
        Duration::from_secs(30),
    )
    .status
    .success();
    if !mounted {
        eprintln!("skipping the tmpfs part: cannot mount a tmpfs here (not root?)");
        let _ = std::fs::remove_dir(&dir);
        return;
    }
    let o = support::output_bounded(
        Command::new(support::shmpiexec())
            .args(["-n", "4", "--shm-dir"])
            .arg(&dir)
            .arg("/bin/true"),
        Duration::from_secs(30),
    );
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    let _ = support::output_bounded(Command::new("umount").arg(&dir), Duration::from_secs(30));
    let _ = std::fs::remove_dir(&dir);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("not enough space in"), "{err}");
    assert!(err.contains("need "), "{err}");
    assert!(left.is_empty(), "segment left in the small tmpfs");
}

#[test]
fn eight_ranks_on_two_cores_make_progress_in_a_token_ring() {
    run_ranks(
        8,
        "eight_ranks_on_two_cores_make_progress_in_a_token_ring",
        |u| {
            let w = u.world();
            let (me, n) = (w.rank(), w.size());
            let mut tok = [0u64];
            for lap in 0..200u64 {
                if me == 0 {
                    w.send(&[lap * n as u64], 1, 0).unwrap();
                    w.recv(&mut tok, n - 1, 0).unwrap();
                    assert_eq!(tok[0], lap * n as u64 + n as u64 - 1);
                } else {
                    w.recv(&mut tok, me - 1, 0).unwrap();
                    w.send(&[tok[0] + 1], (me + 1) % n, 0).unwrap();
                }
            }
        },
    );
}

fn assert_no_new_segments(before: &[String]) {
    let mut new: Vec<String> = segments_of_user()
        .into_iter()
        .filter(|s| !before.contains(s))
        .collect();
    // Parallel tests own segments for a while (jobs that run to a
    // timeout live a second or more); ours must be gone. Those that stay
    // for 10 s are left behind.
    let t0 = std::time::Instant::now();
    while !new.is_empty() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
        let again = segments_of_user();
        new.retain(|s| again.contains(s));
    }
    assert!(new.is_empty(), "segments left behind: {new:?}");
}

/// CPU seconds this process has used (user + system), from /proc.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the command name (which is in parentheses).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    ticks / 100.0
}

#[test]
fn a_rank_blocked_in_recv_sleeps_instead_of_burning_a_core() {
    run_ranks(
        2,
        "a_rank_blocked_in_recv_sleeps_instead_of_burning_a_core",
        |u| {
            let w = u.world();
            if w.rank() == 0 {
                std::thread::sleep(Duration::from_millis(1500));
                w.send(&[1u8], 1, 0).unwrap();
            } else {
                let before = cpu_seconds();
                let mut b = [0u8];
                w.recv(&mut b, 0, 0).unwrap();
                let used = cpu_seconds() - before;
                // 1.5 s blocked: spinning would use all of it; the wait ladder
                // spins for microseconds, yields briefly, then sleeps on the
                // futex doorbell.
                assert!(
                    used < 0.3,
                    "a blocked receive used {used:.2} s of CPU in 1.5 s"
                );
            }
        },
    );
}

/// Starts a job of two ranks of this test binary running case `name`,
/// its stdout piped and its stderr as `err`; does not wait for it.
fn start_two_ranks(name: &str, err: std::process::Stdio) -> std::process::Child {
    two_ranks(name, err).spawn().unwrap()
}

/// The launcher's command for [`start_two_ranks`].
fn two_ranks(name: &str, err: std::process::Stdio) -> Command {
    let exe = std::env::current_exe().unwrap();
    let mut c = Command::new(support::shmpiexec());
    c.args(["-n", "2"])
        .arg(&exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(support::CASE, name)
        .stdout(std::process::Stdio::piped())
        .stderr(err);
    c
}

/// In a rank of a 2-rank job: waits for a message that never comes, so
/// only a signal ends the rank.
fn wait_for_ever(w: &shmpi::Communicator) -> ! {
    let mut b = [0u8];
    let _ = w.recv(&mut b, 1 - w.rank(), 0);
    unreachable!("nobody sends");
}

#[test]
fn sigterm_to_the_launcher_is_passed_on_and_the_job_cleaned_up() {
    let name = "sigterm_to_the_launcher_is_passed_on_and_the_job_cleaned_up";
    if is_rank_of(name) {
        let u = shmpi::init().unwrap();
        let w = u.world();
        if w.rank() == 0 {
            println!("ready");
        }
        wait_for_ever(&w);
    }
    let before = segments_of_user();
    let mut child = start_two_ranks(name, std::process::Stdio::piped());
    // Wait (bounded) until rank 0 says it is in the job.
    await_ready(&mut child, 1);
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let st = ended_within(&mut child, Duration::from_secs(10), "after SIGTERM");
    assert_eq!(st.code(), Some(128 + 15));
    let err = std::io::read_to_string(child.stderr.take().unwrap()).unwrap_or_default();
    assert!(err.contains("got SIGTERM"), "{err}");
    assert_no_new_segments(&before);
}

/// Waits (20 s at most, else the job is killed and the test fails) until
/// the job's standard output has said "ready" `n` times. A thread reads
/// it, so a job that prints nothing cannot hold the test (its reads stop
/// when the launcher ends).
fn await_ready(child: &mut std::process::Child, n: usize) {
    use std::io::BufRead;
    let out = std::io::BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if line.contains("ready") && tx.send(()).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    for _ in 0..n {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if rx.recv_timeout(left).is_err() {
            let _ = child.kill();
            panic!("the job did not start");
        }
    }
}

/// The launcher's exit status once it has ended, within `limit` (else it
/// is killed and the test fails, saying `when`).
fn ended_within(
    child: &mut std::process::Child,
    limit: Duration,
    when: &str,
) -> std::process::ExitStatus {
    let t0 = std::time::Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            panic!("the launcher did not end {when}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
fn process_ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name (in parentheses).
        Ok(stat) => stat[stat.rfind(')').map_or(0, |i| i + 2)..].starts_with(['Z', 'X']),
        Err(_) => true,
    }
}

#[test]
fn sigkill_to_the_launcher_ends_every_rank_and_leaves_no_file() {
    launcher_killed(
        "sigkill_to_the_launcher_ends_every_rank_and_leaves_no_file",
        false,
    );
}

#[test]
fn sigkill_to_the_launchers_process_group_leaves_no_file() {
    launcher_killed(
        "sigkill_to_the_launchers_process_group_leaves_no_file",
        true,
    );
}

/// Kills a 2-rank job's launcher with SIGKILL (`group`: its whole process
/// group, ranks included, as `kill -9 -PGID` does) once both ranks hold a
/// pool file; then every rank must end and no file of the job remain,
/// each within a bound.
fn launcher_killed(name: &str, group: bool) {
    if is_rank_of(name) {
        let u = shmpi::init().unwrap();
        let w = u.world();
        // A pool file in /dev/shm (`{segment}-pool-{rank}`), which only
        // the rank's finalize or the launcher removes: the reaper must.
        let _pool = u.alloc_mem(4096).unwrap();
        w.barrier().unwrap();
        println!(
            "rank {} pid {} segment {}",
            w.rank(),
            std::process::id(),
            std::env::var("SHMPI_SEGMENT").unwrap_or_default()
        );
        wait_for_ever(&w);
    }
    let mut child = if group {
        use std::os::unix::process::CommandExt;
        two_ranks(name, std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap()
    } else {
        start_two_ranks(name, std::process::Stdio::null())
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Both ranks' pids and the segment's path, each within a bound.
    let mut pids = Vec::new();
    let mut segment = String::new();
    while pids.len() < 2 {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(20)) else {
            let _ = child.kill();
            panic!("the job did not start; pids so far {pids:?}");
        };
        // The test harness's "test NAME ... " of each rank starts lines
        // without ending them: look for the words anywhere.
        let f: Vec<&str> = line.split_whitespace().collect();
        for w in f.windows(4) {
            if let ["pid", pid, "segment", seg] = w {
                pids.push(pid.parse::<u32>().unwrap());
                segment = seg.to_string();
            }
        }
    }
    // The launcher unlinks the segment once every rank is in: wait for
    // that first (bounded), so the check below is of the ranks alone.
    let t0 = std::time::Instant::now();
    while std::path::Path::new(&segment).exists() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    if group {
        let pgid = format!("-{}", child.id());
        let st = Command::new("kill").args(["-KILL", "--", &pgid]).status();
        assert!(st.is_ok_and(|s| s.success()), "kill -KILL -- {pgid}");
    } else {
        child.kill().unwrap();
    }
    let _ = child.wait();
    let t1 = std::time::Instant::now();
    while !pids.iter().all(|&p| process_ended(p)) {
        if t1.elapsed() > Duration::from_secs(10) {
            for p in &pids {
                let _ = Command::new("kill")
                    .args(["-KILL", &p.to_string()])
                    .status();
            }
            panic!("ranks {pids:?} outlived their launcher killed by SIGKILL");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !std::path::Path::new(&segment).exists(),
        "segment {segment} left behind"
    );
    // The ranks' pool files: the launcher's reaper removes them once it
    // sees the launcher gone (bounded).
    let left = || job_files(&segment);
    let t2 = std::time::Instant::now();
    while !left().is_empty() && t2.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(left().is_empty(), "files left behind: {:?}", left());
}

/// The files of the job whose segment is `segment`: the segment and
/// every `{segment}-…` beside it.
fn job_files(segment: &str) -> Vec<String> {
    let seg = std::path::Path::new(segment);
    let stem = seg.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::read_dir(seg.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| *n == stem || n.starts_with(&format!("{stem}-")))
        .collect()
}

/// The CPUs each rank may run on, from the ranks' own reports.
fn affinities(out: &str) -> Vec<(usize, Vec<usize>)> {
    let mut v: Vec<(usize, Vec<usize>)> = out
        .lines()
        .filter_map(|l| l.find("AFFINITY ").map(|i| &l[i + "AFFINITY ".len()..]))
        .map(|l| {
            let (r, c) = l.split_once(' ').unwrap();
            let c = c.split_whitespace().next().unwrap_or("");
            let cpus = c
                .split(',')
                .filter(|x| !x.is_empty())
                .map(|x| x.parse().unwrap())
                .collect();
            (r.parse().unwrap(), cpus)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn bind_to_core_puts_ranks_on_different_cores_and_bind_to_none_leaves_them_free() {
    let name = "bind_to_core_puts_ranks_on_different_cores_and_bind_to_none_leaves_them_free";
    if is_rank_of(name) {
        let u = shmpi::init().unwrap();
        let cpus: Vec<String> = core_affinity::get_core_ids()
            .unwrap_or_default()
            .iter()
            .map(|c| c.id.to_string())
            .collect();
        let peer = (u.rank() + 1) % u.world().size() as usize;
        let d = u
            .peer_distance(peer)
            .map_or("unbound".to_string(), |d| d.label().to_string());
        println!("AFFINITY {} {} {d}", u.rank(), cpus.join(","));
        // One NUMA node here: bound ranks form one group, unbound none.
        let groups = u.world().numa_groups();
        if d == "unbound" {
            assert_eq!(groups, None);
        } else {
            let n = u.world().size() as usize;
            assert_eq!(groups, Some(vec![(0..n).collect::<Vec<_>>()]));
        }
        u.finalize().unwrap();
        return;
    }
    let all = support::online_cpus();
    let o = launch(
        2,
        name,
        &["--bind-to", "core", "--report-bindings"],
        &[],
        Duration::from_secs(30),
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let a = affinities(&o.stdout);
    assert_eq!(a.len(), 2, "{}", o.stdout);
    if all >= 2 {
        assert_ne!(a[0].1, a[1].1, "ranks 0 and 1 sit on different cores");
        assert!(a[0].1.len() < all && a[1].1.len() < all, "{a:?}");
    }
    assert!(o.stderr.contains("rank 0 bound to cpus"), "{}", o.stderr);
    // Bound ranks know how close their peers run (here: other cores).
    if all >= 2 {
        assert!(!o.stdout.contains(" unbound"), "{}", o.stdout);
        assert!(
            !o.stdout.contains(" pu\n") && !o.stdout.contains(" core\n"),
            "{}",
            o.stdout
        );
    }
    let o = launch(
        2,
        name,
        &["--bind-to", "none"],
        &[],
        Duration::from_secs(30),
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let a = affinities(&o.stdout);
    assert!(
        a.iter().all(|(_, c)| c.len() == all),
        "free to run anywhere: {a:?}"
    );
    assert!(
        o.stdout.contains(" unbound"),
        "unbound ranks know no distance: {}",
        o.stdout
    );
    // More ranks than cores: not bound by default, and said so once.
    let o = launch(all + 1, name, &[], &[], Duration::from_secs(30));
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(affinities(&o.stdout).iter().all(|(_, c)| c.len() == all));
    assert_eq!(
        o.stderr.matches("oversubscribed").count(),
        1,
        "{}",
        o.stderr
    );
    // A synthetic topology is reported, not applied.
    let o = launch(
        2,
        name,
        &["--map-by", "numa", "--report-bindings"],
        &[("SHMPI_TOPOLOGY", "pack:2 numa:2 core:4 pu:2")],
        Duration::from_secs(30),
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(
        o.stderr
            .contains("rank 1 bound to cpus 8-9 (numa 1, cpuset 0x00000300)"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("not applied"), "{}", o.stderr);
}

#[test]
fn ring_memory_lives_on_the_receivers_numa_node() {
    // One NUMA node here: everything is on node 0. (Placement decisions on
    // synthetic topologies are unit-tested in topology::placement.)
    support::run_ranks(3, "ring_memory_lives_on_the_receivers_numa_node", |u| {
        let nodes = u.receive_memory_nodes().unwrap();
        let mine = shmpi::topology::domain_of_this_process(shmpi::topology::Domain::Numa)
            .unwrap()
            .unwrap();
        assert_eq!(nodes, vec![mine], "receive rings on this rank's node");
        assert_eq!(nodes, vec![0]);
    });
}

#[test]
fn stdin_goes_to_rank_0_only_and_tagged_output_is_copied_out_whole() {
    let name = "stdin_goes_to_rank_0_only_and_tagged_output_is_copied_out_whole";
    const LINES: usize = 3000;
    if is_rank_of(name) {
        let u = shmpi::init().unwrap();
        let w = u.world();
        // Rank 0 reads what the launcher was given; rank 1 reads end of
        // file at once (it raced rank 0 for it).
        let got = std::io::read_to_string(std::io::stdin()).unwrap();
        println!("rank {} read {got:?}", w.rank());
        for i in 0..LINES {
            println!("line {i} of rank {}: {}", w.rank(), "x".repeat(40));
        }
        w.barrier().unwrap();
        u.finalize().unwrap();
        std::process::exit(0);
    }
    let exe = std::env::current_exe().unwrap();
    let mut c = Command::new(support::shmpiexec());
    c.args(["-n", "2", "--tag-output"])
        .arg(&exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(support::CASE, name)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"hello\n").unwrap();
    }
    // A reader slower than the ranks: they end, and their last lines sit
    // in the launcher's pipes, before it reads a byte.
    std::thread::sleep(Duration::from_secs(1));
    let out_pipe = child.stdout.take().unwrap();
    let err_pipe = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || std::io::read_to_string(out_pipe).unwrap_or_default());
    let err = std::thread::spawn(move || std::io::read_to_string(err_pipe).unwrap_or_default());
    let st = ended_within(&mut child, Duration::from_secs(60), "");
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert!(st.success(), "{st:?}: {err}");
    // (The test harness's "test ... " may start a rank's first line.)
    assert!(out.contains("rank 0 read \"hello\\n\""), "{out}");
    assert!(out.contains("rank 1 read \"\""), "{out}");
    for r in 0..2 {
        let lines = out
            .lines()
            .filter(|l| l.starts_with(&format!("[{r}] line ")))
            .count();
        assert_eq!(lines, LINES, "rank {r}'s lines copied out");
    }
}

#[test]
fn a_second_sigint_ends_ranks_that_ignore_signals() {
    // Ranks (not MPI programs: the launcher runs any) that ignore SIGINT
    // and SIGTERM: the first SIGINT is passed on and changes nothing, the
    // second ends them (SIGTERM, then SIGKILL after the grace). `exec`:
    // the rank is the sleep itself (the launcher ends its ranks, not
    // processes they start, which would hold its stderr open).
    let before = segments_of_user();
    let mut child = Command::new(support::shmpiexec())
        .args([
            "-n",
            "2",
            "sh",
            "-c",
            "trap '' INT TERM; echo ready; exec sleep 60",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    await_ready(&mut child, 2);
    let int = |c: &std::process::Child| {
        let _ = Command::new("kill")
            .args(["-INT", &c.id().to_string()])
            .status();
    };
    int(&child);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "one SIGINT ended the job"
    );
    int(&child);
    let st = ended_within(&mut child, Duration::from_secs(15), "after a second SIGINT");
    assert_eq!(st.code(), Some(128 + 2));
    let err = std::io::read_to_string(child.stderr.take().unwrap()).unwrap_or_default();
    assert!(err.contains("got SIGINT again"), "{err}");
    assert_no_new_segments(&before);
}

#[test]
fn a_rank_that_ends_before_the_others_join_ends_the_job_once_they_do() {
    // Rank 0 is not an MPI program and ends at once; rank 1 joins. The
    // launcher ends the job as rank 1 joins, not after the start
    // barrier's timeout (60 s) in rank 1's init.
    let name = "a_rank_that_ends_before_the_others_join_ends_the_job_once_they_do";
    if is_rank_of(name) {
        let _u = shmpi::init();
        unreachable!("init cannot gather a rank that ended");
    }
    let exe = std::env::current_exe().unwrap();
    let t0 = std::time::Instant::now();
    let o = support::output_bounded(
        Command::new(support::shmpiexec())
            .args(["-n", "1", "true", ":", "-n", "1"])
            .arg(&exe)
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(support::CASE, name),
        Duration::from_secs(50),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("rank 0 exited before joining the job"),
        "{err}"
    );
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
}

#[test]
fn help_and_version_print_on_stdout_and_succeed_and_a_programs_own_flags_are_its() {
    let run = |args: &[&str]| {
        support::output_bounded(
            Command::new(support::shmpiexec()).args(args),
            Duration::from_secs(30),
        )
    };
    let o = run(&["--help"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("usage: shmpiexec"));
    let o = run(&["--version"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains(env!("CARGO_PKG_VERSION")));
    // After the program, `--version` is the program's.
    let o = run(&["-n", "1", "echo", "--version-of-echo"]);
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "--version-of-echo"
    );
}

/// A program that cannot start: the launcher says so and exits as a shell
/// would (127 not found, 126 not executable), leaving nothing in /dev/shm.
#[test]
fn a_program_that_cannot_start_exits_127_or_126_and_leaves_no_segment() {
    let before = segments_of_user();
    let dir = std::env::temp_dir().join(format!("shmpi-nostart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plain = dir.join("not-executable");
    std::fs::write(&plain, "#!/bin/sh\nexit 0\n").unwrap();
    let missing = dir.join("missing");
    for (prog, status) in [(&missing, 127), (&plain, 126)] {
        let o = support::output_bounded(
            Command::new(support::shmpiexec())
                .arg("-n")
                .arg("2")
                .arg(prog),
            Duration::from_secs(30),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(status), "{}: {err}", prog.display());
        assert!(err.contains("cannot start"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert_no_new_segments(&before);
}

/// `--timeout` (and `MPIEXEC_TIMEOUT` without it) ends a job that runs
/// longer: status 124, a message, the ranks gone and /dev/shm clean; a
/// job within its limit is untouched, and a bad value is refused.
#[test]
fn timeout_ends_a_job_that_runs_longer_and_exits_124() {
    let before = segments_of_user();
    let run = |args: &[&str], env: Option<&str>| {
        let mut c = Command::new(support::shmpiexec());
        c.args(args).env_remove("MPIEXEC_TIMEOUT");
        if let Some(v) = env {
            c.env("MPIEXEC_TIMEOUT", v);
        }
        let t0 = std::time::Instant::now();
        let o = support::output_bounded(&mut c, Duration::from_secs(60));
        (o, t0.elapsed())
    };
    let (o, took) = run(&["--timeout", "1", "-n", "3", "sleep", "30"], None);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(124), "{err}");
    assert!(err.contains("ran past its timeout of 1s"), "{err}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    let (o, _) = run(&["-n", "2", "sleep", "30"], Some("0.5"));
    assert_eq!(o.status.code(), Some(124));
    let (o, _) = run(&["--timeout", "30", "-n", "2", "true"], Some("0.001"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // An empty or 0 variable is no limit.
    for v in ["0", "", " "] {
        let (o, _) = run(&["-n", "2", "sleep", "0.2"], Some(v));
        assert!(
            o.status.success(),
            "{v:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let (o, _) = run(&["--timeout", "-3", "-n", "2", "true"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a positive number"));
    assert_no_new_segments(&before);
}

/// `MPI_UNIVERSE_SIZE` counts the CPUs the launcher may use (as this
/// test process sees them: unbound), not the rank's affinity mask: a
/// one-rank job bound to one core still sees them all.
#[test]
fn universe_size_counts_the_nodes_cpus_under_binding() {
    let name = "universe_size_counts_the_nodes_cpus_under_binding";
    if is_rank_of(name) {
        let u = shmpi::init().unwrap();
        let mask = std::thread::available_parallelism().map_or(0, |n| n.get());
        println!("mask {mask} universe {}", u.universe_size());
        let want: usize = std::env::var("WANT_UNIVERSE").unwrap().parse().unwrap();
        assert_eq!(u.universe_size(), want);
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let want = cpus.to_string();
    let o = launch(
        1,
        name,
        &["--bind-to", "core"],
        &[("WANT_UNIVERSE", want.as_str())],
        Duration::from_secs(30),
    );
    assert_eq!(o.code, Some(0), "{}\n{}", o.stdout, o.stderr);
    if cpus > 1 {
        assert!(o.stdout.contains("mask 1 "), "not bound: {}", o.stdout);
    }
}

/// Runs a 2-rank job of `sh -c` `script` (given the file its background
/// commands append their pids to) that `--timeout 1` ends, and checks
/// that every pid written there stops running soon after (`what` says
/// which processes those are).
fn ended_job_leaves_nothing_running(name: &str, script: impl Fn(&str) -> String, what: &str) {
    let dir = std::env::temp_dir().join(format!("shmpi-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pidfile = dir.join("pid");
    let script = script(&pidfile.display().to_string());
    let o = support::output_bounded(
        Command::new(support::shmpiexec()).args(["--timeout", "1", "-n", "2", "sh", "-c", &script]),
        Duration::from_secs(60),
    );
    assert_eq!(
        o.status.code(),
        Some(124),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let pids: Vec<u32> = std::fs::read_to_string(&pidfile)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(pids.len(), 2, "{pids:?}");
    // Gone, or a zombie nobody reaps yet (in a container whose first
    // process does not reap): either way not running.
    let running = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    };
    let t0 = std::time::Instant::now();
    while pids.iter().any(|&p| running(p)) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{what} outlived the job: {pids:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A job ended by the launcher (here by `--timeout`) ends what its ranks
/// started too: a shell rank's background command does not outlive it.
#[test]
fn ending_a_job_ends_the_processes_its_ranks_started() {
    ended_job_leaves_nothing_running(
        "started",
        |pidfile| format!("sleep 300 & echo $! >> {pidfile}; wait"),
        "a rank's background sleep",
    );
}

/// The orphans the launcher adopts are reaped when they end, not left
/// as zombies for the life of the job.
#[test]
fn adopted_orphans_that_end_are_reaped_during_the_job() {
    let mut child = Command::new(support::shmpiexec())
        .args([
            "--timeout",
            "20",
            "-n",
            "2",
            "sh",
            "-c",
            "(sleep 0.2 >/dev/null 2>&1 &); sleep 4",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let launcher = child.id();
    // The sleeps end at 0.2 s; the launcher reaps once a second.
    std::thread::sleep(Duration::from_millis(2500));
    let zombies: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
                let rest = st.rsplit(')').next().unwrap_or("");
                let mut f = rest.split_whitespace();
                f.next() == Some("Z") && f.next() == Some(&launcher.to_string())
            })
        })
        .collect();
    // Bounded: the job ends after 4 s (its timeout is 20 s); a launcher
    // still running after 60 s fails the test instead of hanging it.
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the launcher did not end within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    assert!(
        zombies.is_empty(),
        "zombie children of the launcher: {zombies:?}"
    );
}

/// So does it end what a rank started and left orphaned (a subshell's
/// background command, as a daemon's double fork does): the launcher
/// adopts such orphans (`job::adopt_orphans`).
#[test]
fn ending_a_job_ends_what_its_ranks_left_orphaned() {
    // The subshell exits at once: its sleep is orphaned (adopted by the
    // launcher, a subreaper), no longer below the rank; it holds none of
    // the job's output pipes, so the launcher's end is not held up.
    ended_job_leaves_nothing_running(
        "orphans",
        |pidfile| format!("(sleep 300 >/dev/null 2>&1 & echo $! >> {pidfile}); sleep 300"),
        "an orphan of a rank",
    );
}
