//! Connected jobs (issue 8, `docs/connect.md`): the name service and
//! ports between two separately launched jobs; accept / connect, talk
//! over the intercommunicator and a merged one, disconnect; a job killed
//! after disconnecting leaves the other unharmed.

mod support;

use shmpi::job::names;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

const SERVICE: &str = "connect-test service";

/// Nothing left in runtime directory `dir`: no socket, no published name.
fn assert_runtime_clean(dir: &std::path::Path) {
    for sub in ["ports", "names"] {
        let left: Vec<_> = std::fs::read_dir(dir.join(sub))
            .map(|r| r.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{sub} left behind: {left:?}");
    }
}

fn server() {
    let port = names::Port::open().expect("open a port");
    names::publish_name(SERVICE, port.name()).expect("publish");
    let mut s = port
        .accept(Some(Duration::from_secs(60)))
        .expect("a job connects");
    let mut got = [0u8; 12];
    s.read_exact(&mut got).expect("read");
    assert_eq!(&got, b"hello from B");
    s.write_all(b"hello from A").expect("write");
    names::unpublish_name(SERVICE, port.name()).expect("unpublish");
    port.close();
}

fn client() {
    let start = Instant::now();
    let port = loop {
        match names::lookup_name(SERVICE) {
            Ok(p) => break p,
            Err(e) if start.elapsed() < Duration::from_secs(60) => {
                assert_eq!(e.class(), shmpi::ErrorClass::Name);
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("the service was never published: {e}"),
        }
    };
    let mut s = names::connect(&port, Duration::from_secs(30)).expect("connect");
    s.write_all(b"hello from B").expect("write");
    let mut got = [0u8; 12];
    s.read_exact(&mut got).expect("read");
    assert_eq!(&got, b"hello from A");
}

#[test]
fn connect_server_job() {
    if support::is_rank_of("connect_server_job") {
        server();
    }
}

#[test]
fn connect_client_job() {
    if support::is_rank_of("connect_client_job") {
        client();
    }
}

#[test]
fn two_jobs_find_each_other_by_name_and_talk_over_a_port() {
    let dir = std::env::temp_dir().join(format!("shmpi-connect-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_string_lossy().into_owned();
    let d2 = d.clone();
    // Two separate launches: two jobs, two segments, two launchers.
    let a = std::thread::spawn(move || {
        support::launch(
            1,
            "connect_server_job",
            &[],
            &[("SHMPI_RUNTIME_DIR", &d)],
            Duration::from_secs(90),
        )
    });
    let b = support::launch(
        1,
        "connect_client_job",
        &[],
        &[("SHMPI_RUNTIME_DIR", &d2)],
        Duration::from_secs(90),
    );
    let a = a.join().unwrap();
    assert_eq!(a.code, Some(0), "server job: {}\n{}", a.stdout, a.stderr);
    assert_eq!(b.code, Some(0), "client job: {}\n{}", b.stdout, b.stderr);
    // Nothing left behind: no socket, no published name.
    for sub in ["ports", "names"] {
        let left: Vec<_> = std::fs::read_dir(dir.join(sub))
            .map(|r| r.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{sub} left behind: {left:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Dies as a crash does (SIGKILL: no finalize, no cleanup).
fn kill_self() {
    let _ = std::process::Command::new("kill")
        .arg("-KILL")
        .arg(std::process::id().to_string())
        .status();
}

/// The port published as `service`, waiting (bounded) for it to appear.
fn lookup(service: &str) -> String {
    let start = Instant::now();
    loop {
        match names::lookup_name(service) {
            Ok(p) => return p,
            Err(_) if start.elapsed() < Duration::from_secs(60) => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) => panic!("{service:?} was never published: {e}"),
        }
    }
}

/// `WORLD` accepts a connection on a port that rank 0 opens and publishes
/// as `service` (withdrawn once accepted).
fn accept_as(w: &shmpi::Communicator, service: &str) -> shmpi::Communicator {
    let port = (w.rank() == 0).then(|| names::Port::open().expect("open a port"));
    if let Some(p) = &port {
        names::publish_name(service, p.name()).expect("publish");
    }
    let inter = w.accept(port.as_ref(), 0).expect("accept");
    if let Some(p) = &port {
        names::unpublish_name(service, p.name()).expect("unpublish");
    }
    inter
}

/// `WORLD` connects to the port published as `service`.
fn connect_to(w: &shmpi::Communicator, service: &str) -> shmpi::Communicator {
    let name = if w.rank() == 0 {
        lookup(service)
    } else {
        String::new()
    };
    w.connect(&name, 0, Duration::from_secs(30))
        .expect("connect")
}

/// Runs cases `a` and `b` as two jobs of 2 ranks (two launches) sharing a
/// private runtime directory; their outcomes, after checking that nothing
/// is left in /dev/shm or in that directory.
fn two_jobs(a: &str, b: &str, bound: Duration) -> (support::Outcome, support::Outcome) {
    let dir = std::env::temp_dir().join(format!("shmpi-{a}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_string_lossy().into_owned();
    let d2 = d.clone();
    let a = a.to_string();
    let ta = std::thread::spawn(move || {
        support::launch(2, &a, &[], &[("SHMPI_RUNTIME_DIR", &d)], bound)
    });
    let ob = support::launch(2, b, &[], &[("SHMPI_RUNTIME_DIR", &d2)], bound);
    let oa = ta.join().unwrap();
    support::assert_no_segments_left();
    assert_runtime_clean(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    (oa, ob)
}

const JOINED: &str = "connect-test joined";

fn pattern(seed: u64, n: usize) -> Vec<u8> {
    (0..n).map(|i| (i as u64 * 31 + seed * 7) as u8).collect()
}

/// Both sides after accept / connect: messages both ways over the
/// intercommunicator (small and fragmented), then bcast and allreduce
/// over the merged communicator, then disconnect of both.
fn talk(inter: shmpi::Communicator, accepting: bool) {
    let me = inter.rank();
    assert_eq!(inter.remote_size().unwrap(), 2);
    assert!(inter.is_inter());
    // Rank r talks to remote rank r.
    for (k, n) in [0usize, 100, 5000, 1 << 20].into_iter().enumerate() {
        let seed = (me as u64) * 100 + k as u64;
        let mut got = vec![0u8; n];
        if accepting {
            inter.send(&pattern(seed, n)[..], me, k as i32).unwrap();
            inter.recv(&mut got[..], me, k as i32).unwrap();
            assert!(got == pattern(seed + 1, n), "reply of {n} bytes");
        } else {
            let st = inter.recv(&mut got[..], me, k as i32).unwrap();
            assert_eq!(st.source, me);
            assert!(got == pattern(seed, n), "{n} bytes from the acceptor");
            inter.send(&pattern(seed + 1, n)[..], me, k as i32).unwrap();
        }
    }
    // The connecting side goes second in the merged order.
    let merged = inter.intercomm_merge(!accepting).unwrap();
    assert_eq!(merged.size(), 4);
    let expect_rank = if accepting { me } else { 2 + me };
    assert_eq!(merged.rank(), expect_rank);
    let mut b = [0u64; 3];
    if merged.rank() == 0 {
        b = [7, 8, 9];
    }
    merged.bcast(&mut b, 0).unwrap();
    assert_eq!(b, [7, 8, 9]);
    let mut sum = [0i64];
    merged
        .allreduce(&[merged.rank() as i64 + 1], &mut sum, &shmpi::Op::Sum)
        .unwrap();
    assert_eq!(sum[0], 10);
    // Windows over the merged communicator: one shared file both jobs map,
    // and the members' own memory (reached by system call across jobs).
    let me_m = merged.rank();
    let win = merged.win_allocate_shared(8 * 4, 8).unwrap();
    win.fence().unwrap();
    for r in 0..4 {
        win.put(&[(10 * me_m + r) as u64], r, me_m as usize)
            .unwrap();
    }
    win.fence().unwrap();
    let (p, size, _) = win.shared_query(me_m).unwrap();
    assert_eq!(size, 32);
    let mut mine = [0u64; 4];
    win.get(&mut mine, me_m, 0).unwrap();
    assert!(!p.is_null());
    for (s, v) in mine.iter().enumerate() {
        assert_eq!(*v, (10 * s as i32 + me_m) as u64, "shared window slot {s}");
    }
    win.fence().unwrap();
    win.free().unwrap();
    // Over ordinary memory, which the members reach by single copy: where
    // the kernel refuses it (or SHMPI_CMA=off|refuse), every member gets
    // `Unsupported` (`docs/errors.md`) and the job goes on.
    merged.set_errhandler(shmpi::ErrHandler::Return);
    match merged.win_create(shmpi::Exposed::from_vec(vec![0u64; 4]), 8) {
        Ok(win) => {
            win.lock_all().unwrap();
            for r in 0..4 {
                win.accumulate(&[1u64 + me_m as u64], r, 0, &shmpi::Op::Sum)
                    .unwrap();
            }
            win.unlock_all().unwrap();
            merged.barrier().unwrap();
            let mut total = [0u64];
            win.lock(shmpi::comm::LockType::Shared, me_m).unwrap();
            win.get(&mut total, me_m, 0).unwrap();
            win.unlock(me_m).unwrap();
            assert_eq!(total[0], 10, "accumulates from both jobs");
            win.free().unwrap();
        }
        Err(e) => {
            assert_eq!(e.class(), shmpi::ErrorClass::Unsupported, "{e}");
            assert!(e.detail().contains("cannot reach"), "{e}");
        }
    }
    merged.set_errhandler(shmpi::ErrHandler::Fatal);
    // Bcast over the intercommunicator: the acceptor's rank 0 is root.
    let mut v = [0u32; 2];
    if accepting {
        if me == 0 {
            v = [41, 42];
            inter.bcast(&mut v, shmpi::ROOT).unwrap();
        } else {
            inter.bcast(&mut v, shmpi::PROC_NULL).unwrap();
        }
    } else {
        inter.bcast(&mut v, 0).unwrap();
        assert_eq!(v, [41, 42]);
    }
    merged.disconnect().unwrap();
    inter.disconnect().unwrap();
}

fn acceptor_job(u: &shmpi::Universe) {
    let w = u.world();
    let inter = accept_as(&w, JOINED);
    talk(inter, true);
    assert!(!u.connected_to_other_jobs(), "independent after disconnect");
    // The other job kills itself now; this one carries on alone.
    std::thread::sleep(Duration::from_millis(300));
    let mut sum = [0i32];
    w.allreduce(&[1], &mut sum, &shmpi::Op::Sum).unwrap();
    assert_eq!(sum[0], 2);
    w.barrier().unwrap();
    println!("acceptor done");
}

fn connector_job(u: &shmpi::Universe) {
    let w = u.world();
    let inter = connect_to(&w, JOINED);
    talk(inter, false);
    assert!(!u.connected_to_other_jobs(), "independent after disconnect");
    w.barrier().unwrap();
    // Independent again: a crash here must not touch the other job.
    if w.rank() == 1 {
        kill_self();
    }
    std::thread::sleep(Duration::from_secs(5));
}

#[test]
fn connect_acceptor_job() {
    if support::is_rank_of("connect_acceptor_job") {
        let u = shmpi::init().expect("init");
        acceptor_job(&u);
        u.finalize().expect("finalize");
    }
}

#[test]
fn connect_connector_job() {
    if support::is_rank_of("connect_connector_job") {
        let u = shmpi::init().expect("init");
        connector_job(&u);
        u.finalize().expect("finalize");
    }
}

/// Two jobs connect through a published name, talk, disconnect; then one
/// is killed and the other finishes with exit 0 and right results (20
/// times, `SHMPI_CONNECT_ROUNDS` overrides).
#[test]
fn jobs_connect_talk_disconnect_and_survive_each_other() {
    let rounds: usize = std::env::var("SHMPI_CONNECT_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    for round in 0..rounds {
        let (a, b) = two_jobs(
            "connect_acceptor_job",
            "connect_connector_job",
            Duration::from_secs(90),
        );
        assert_eq!(
            a.code,
            Some(0),
            "round {round}: the acceptor job failed:
{}
{}",
            a.stdout,
            a.stderr
        );
        assert!(a.stdout.contains("acceptor done"), "round {round}");
        assert_ne!(
            b.code,
            Some(0),
            "round {round}: the connector job was killed"
        );
        assert!(
            !b.stderr.contains("panicked"),
            "round {round}: connector: {}",
            b.stderr
        );
    }
}

const DOOMED: &str = "connect-test doomed";

fn doomed_acceptor(u: &shmpi::Universe) {
    let w = u.world();
    let inter = accept_as(&w, DOOMED);
    inter.set_errhandler(shmpi::ErrHandler::Return);
    let me = inter.rank();
    // The other job's rank 1 says it is about to die, then dies (its
    // launcher then ends its rank 0 too).
    let mut word = [0u8; 5];
    inter.recv(&mut word, 1, 1).unwrap();
    assert_eq!(&word, b"dying");
    let t0 = Instant::now();
    let mut buf = [0u8; 8];
    let e = inter.recv(&mut buf, me, 2).unwrap_err();
    let took = t0.elapsed();
    assert_eq!(e.class(), shmpi::ErrorClass::ProcFailed, "{e}");
    println!(
        "rank {me}: ProcFailed after {:.0} ms",
        took.as_secs_f64() * 1e3
    );
    assert!(took < Duration::from_secs(3), "noticed after {took:?}");
    // A collective over a communicator with dead members fails at every
    // live member (none is left waiting for another), a receive from any
    // source fails too, and so do a synchronous send started after the
    // death was seen and a receive request polled with test.
    let e = inter.barrier().unwrap_err();
    assert_eq!(e.class(), shmpi::ErrorClass::ProcFailed, "{e}");
    let e = inter.recv(&mut buf, shmpi::ANY_SOURCE, 4).unwrap_err();
    assert_eq!(e.class(), shmpi::ErrorClass::ProcFailed, "{e}");
    let e = inter.ssend(&[1u8], me, 5).unwrap_err();
    assert_eq!(e.class(), shmpi::ErrorClass::ProcFailed, "{e}");
    let mut late = [0u8; 4];
    let mut req = inter.irecv(&mut late, me, 6).unwrap();
    let polled = Instant::now();
    let e = loop {
        match req.test() {
            Ok(None) => {
                assert!(
                    polled.elapsed() < Duration::from_secs(10),
                    "test never failed"
                );
                std::thread::yield_now();
            }
            Ok(Some(_)) => panic!("a receive from a dead process completed"),
            Err(e) => break e,
        }
    };
    assert_eq!(e.class(), shmpi::ErrorClass::ProcFailed, "{e}");
    // A send to the dead job fails too (or completes locally into the
    // ring, which MPI allows); it never hangs.
    let big = vec![1u8; 4 << 20];
    let r = inter.send(&big[..], me, 3);
    assert!(r.is_err_and(|e| e.class() == shmpi::ErrorClass::ProcFailed));
    // This job goes on.
    let mut sum = [0i32];
    w.allreduce(&[1], &mut sum, &shmpi::Op::Sum).unwrap();
    assert_eq!(sum[0], 2);
    println!("survivor done");
}

fn doomed_connector(u: &shmpi::Universe) {
    let w = u.world();
    let inter = connect_to(&w, DOOMED);
    if w.rank() == 1 {
        for r in 0..2 {
            inter.send(b"dying", r, 1).unwrap();
        }
        kill_self();
    }
    std::thread::sleep(Duration::from_secs(10));
}

#[test]
fn connect_doomed_acceptor() {
    if support::is_rank_of("connect_doomed_acceptor") {
        let u = shmpi::init().expect("init");
        doomed_acceptor(&u);
        u.finalize().expect("finalize");
    }
}

#[test]
fn connect_doomed_connector() {
    if support::is_rank_of("connect_doomed_connector") {
        let u = shmpi::init().expect("init");
        doomed_connector(&u);
        u.finalize().expect("finalize");
    }
}

/// Connected and never disconnected: when the other job dies, calls that
/// involve it fail with `ProcFailed` (under `ERRORS_RETURN`) instead of
/// hanging, and this job finishes.
#[test]
fn a_dead_connected_job_fails_calls_with_proc_failed() {
    let (a, b) = two_jobs(
        "connect_doomed_acceptor",
        "connect_doomed_connector",
        Duration::from_secs(90),
    );
    assert_eq!(a.code, Some(0), "the survivor:\n{}\n{}", a.stdout, a.stderr);
    assert!(a.stdout.contains("survivor done"), "{}", a.stdout);
    for l in a.stdout.lines().filter(|l| l.contains("ProcFailed after")) {
        println!("{l}");
    }
    assert_ne!(b.code, Some(0));
}

const LINGER: &str = "connect-test linger";

fn marker() -> std::path::PathBuf {
    std::path::PathBuf::from(std::env::var("SHMPI_RUNTIME_DIR").unwrap()).join("finalizing")
}

#[test]
fn connect_linger_acceptor() {
    if support::is_rank_of("connect_linger_acceptor") {
        let u = shmpi::init().expect("init");
        let w = u.world();
        let inter = accept_as(&w, LINGER);
        // Freed, not disconnected: still connected (MPI 4.1 §11.10.4).
        drop(inter);
        assert!(u.connected_to_other_jobs());
        u.finalize().expect("finalize");
        // Finalize waited for the other job to reach its finalize.
        assert!(
            marker().exists(),
            "finalize returned before the other job finalized"
        );
        println!("lingered");
    }
}

#[test]
fn connect_linger_connector() {
    if support::is_rank_of("connect_linger_connector") {
        let u = shmpi::init().expect("init");
        let w = u.world();
        let inter = connect_to(&w, LINGER);
        drop(inter);
        std::thread::sleep(Duration::from_millis(300));
        if w.rank() == 0 {
            std::fs::write(marker(), b"yes").unwrap();
        }
        u.finalize().expect("finalize");
    }
}

/// Two jobs still connected (a communicator freed without disconnect)
/// meet at finalize: the first to finalize waits for the other.
#[test]
fn finalize_waits_for_a_still_connected_job() {
    let (a, b) = two_jobs(
        "connect_linger_acceptor",
        "connect_linger_connector",
        Duration::from_secs(90),
    );
    assert_eq!(b.code, Some(0), "connector:\n{}\n{}", b.stdout, b.stderr);
    assert_eq!(a.code, Some(0), "acceptor:\n{}\n{}", a.stdout, a.stderr);
    assert!(a.stdout.contains("lingered"));
}

const ABORTS: &str = "connect-test aborts";

#[test]
fn connect_abort_acceptor() {
    if support::is_rank_of("connect_abort_acceptor") {
        let u = shmpi::init().expect("init");
        let w = u.world();
        let inter = accept_as(&w, ABORTS);
        inter.barrier().unwrap();
        if w.rank() == 0 {
            inter.abort(9);
        }
        std::thread::sleep(Duration::from_secs(30));
    }
}

#[test]
fn connect_abort_connector() {
    if support::is_rank_of("connect_abort_connector") {
        let u = shmpi::init().expect("init");
        let w = u.world();
        let inter = connect_to(&w, ABORTS);
        inter.barrier().unwrap();
        // Blocked here when the other job aborts over the connection.
        let mut b = [0u8; 1];
        let _ = w.recv(&mut b, 1 - w.rank(), 5);
        std::thread::sleep(Duration::from_secs(30));
    }
}

/// `abort` on a communicator that reaches another job ends both jobs with
/// its code (the other through its launcher, which sees the mark); the
/// launch bound would give no code at all.
#[test]
fn abort_over_a_connection_ends_both_jobs() {
    let (a, b) = two_jobs(
        "connect_abort_acceptor",
        "connect_abort_connector",
        Duration::from_secs(25),
    );
    assert_eq!(a.code, Some(9), "acceptor:\n{}\n{}", a.stdout, a.stderr);
    assert_eq!(b.code, Some(9), "connector:\n{}\n{}", b.stdout, b.stderr);
    // (two_jobs checked that the aborted rank's port is gone too: its
    // launcher removed it.)
}

#[test]
fn connect_doomed_fatal_acceptor() {
    if support::is_rank_of("connect_doomed_fatal_acceptor") {
        let u = shmpi::init().expect("init");
        let w = u.world();
        // The default error handler: MPI_ERRORS_ARE_FATAL.
        let inter = accept_as(&w, DOOMED);
        let mut word = [0u8; 5];
        inter.recv(&mut word, 1, 1).unwrap();
        let mut buf = [0u8; 8];
        let _ = inter.recv(&mut buf, inter.rank(), 2);
        unreachable!("the failure aborts this job");
    }
}

/// Under `ERRORS_ARE_FATAL`, a connected job's death aborts this job (with
/// `MPI_ERR_PROC_FAILED`'s code) instead of hanging it.
#[test]
fn a_dead_connected_job_aborts_a_job_with_fatal_errors() {
    let (a, b) = two_jobs(
        "connect_doomed_fatal_acceptor",
        "connect_doomed_connector",
        Duration::from_secs(90),
    );
    assert_eq!(
        a.code,
        Some(62),
        "the survivor:\n{}\n{}",
        a.stdout,
        a.stderr
    );
    assert!(a.stderr.contains("MPI_ERR_PROC_FAILED"), "{}", a.stderr);
    assert_ne!(b.code, Some(0));
}
