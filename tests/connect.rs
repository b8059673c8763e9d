//! Connected jobs (issue 8, `docs/connect.md`): the name service and
//! ports between two separately launched jobs; accept / connect, talk
//! over the intercommunicator and a merged one, disconnect; a job killed
//! after disconnecting leaves the other unharmed.

mod support;

use shmpi::job::names;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

const SERVICE: &str = "connect-test service";

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
    let win = merged
        .win_create(shmpi::Exposed::from_vec(vec![0u64; 4]), 8)
        .unwrap();
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
    let port = (w.rank() == 0).then(|| names::Port::open().expect("open a port"));
    if let Some(p) = &port {
        names::publish_name(JOINED, p.name()).expect("publish");
    }
    let inter = w.accept(port.as_ref(), 0).expect("accept");
    if let Some(p) = &port {
        names::unpublish_name(JOINED, p.name()).expect("unpublish");
    }
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
    let mut name = String::new();
    if w.rank() == 0 {
        let start = Instant::now();
        name = loop {
            match names::lookup_name(JOINED) {
                Ok(p) => break p,
                Err(_) if start.elapsed() < Duration::from_secs(60) => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Err(e) => panic!("never published: {e}"),
            }
        };
    }
    let inter = w
        .connect(&name, 0, Duration::from_secs(30))
        .expect("connect");
    talk(inter, false);
    assert!(!u.connected_to_other_jobs(), "independent after disconnect");
    w.barrier().unwrap();
    // Independent again: a crash here must not touch the other job.
    if w.rank() == 1 {
        let _ = std::process::Command::new("kill")
            .arg("-KILL")
            .arg(std::process::id().to_string())
            .status();
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
    let dir = std::env::temp_dir().join(format!("shmpi-join-test-{}", std::process::id()));
    for round in 0..rounds {
        let _ = std::fs::remove_dir_all(&dir);
        let d = dir.to_string_lossy().into_owned();
        let d2 = d.clone();
        let a = std::thread::spawn(move || {
            support::launch(
                2,
                "connect_acceptor_job",
                &[],
                &[("SHMPI_RUNTIME_DIR", &d)],
                Duration::from_secs(90),
            )
        });
        let b = support::launch(
            2,
            "connect_connector_job",
            &[],
            &[("SHMPI_RUNTIME_DIR", &d2)],
            Duration::from_secs(90),
        );
        let a = a.join().unwrap();
        assert_eq!(
            a.code,
            Some(0),
            "round {round}: the acceptor job failed:\n{}\n{}",
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
        support::assert_no_segments_left();
    }
    let _ = std::fs::remove_dir_all(&dir);
}
