//! Connected jobs (issue 8, `docs/connect.md`): so far the first piece,
//! the name service and ports between two separately launched jobs.

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
