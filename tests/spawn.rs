//! Spawning jobs (issue 8, `docs/connect.md`): a job starts children
//! with `spawn` / `spawn_multiple`; they get the parent intercommunicator
//! at init, talk, merge, disconnect and exit while the parent goes on;
//! nested spawn; spawn, disconnect, then meet again through a port.

mod support;

use shmpi::comm::{SpawnCommand, SpawnOptions};
use shmpi::job::names;
use shmpi::Op;
use std::time::Duration;

/// This test binary, running case `name`, as a command to spawn.
fn me_as(name: &str, n: usize) -> (SpawnCommand, SpawnOptions) {
    let exe = std::env::current_exe().unwrap().display().to_string();
    let cmd = SpawnCommand {
        program: exe,
        args: vec![
            name.to_string(),
            "--exact".into(),
            "--nocapture".into(),
            "--test-threads=1".into(),
        ],
        maxprocs: n,
        soft: Vec::new(),
    };
    let opts = SpawnOptions {
        env: vec![(support::CASE.to_string(), name.to_string())],
        ..SpawnOptions::default()
    };
    (cmd, opts)
}

/// Launches case `name` on `n` ranks with a private runtime directory,
/// and checks that nothing is left in it or in /dev/shm afterwards.
fn run_case(n: usize, name: &str) -> support::Outcome {
    let dir = std::env::temp_dir().join(format!("shmpi-spawn-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_string_lossy().into_owned();
    let o = support::launch(
        n,
        name,
        &[],
        &[("SHMPI_RUNTIME_DIR", &d)],
        Duration::from_secs(90),
    );
    for sub in ["ports", "names"] {
        let left: Vec<_> = std::fs::read_dir(dir.join(sub))
            .map(|r| r.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{sub} left behind: {left:?}");
    }
    support::assert_no_segments_left();
    let _ = std::fs::remove_dir_all(&dir);
    o
}

#[test]
fn spawn_parent() {
    if !support::is_rank_of("spawn_parent") {
        return;
    }
    let u = shmpi::init().unwrap();
    let w = u.world();
    assert!(u.parent().is_none());
    let (cmd, opts) = me_as("spawn_child", 3);
    let inter = w.spawn(&cmd, &opts, 0).expect("spawn");
    assert_eq!(inter.remote_size().unwrap(), 3);
    // Each child gets a number and answers ten times it.
    if w.rank() == 0 {
        for c in 0..3 {
            inter.send(&[c as u64 + 1], c, 1).unwrap();
        }
        for c in 0..3 {
            let mut got = [0u64];
            inter.recv(&mut got, c, 2).unwrap();
            assert_eq!(got[0], 10 * (c as u64 + 1));
        }
    }
    let merged = inter.intercomm_merge(false).unwrap();
    assert_eq!(merged.size(), w.size() + 3);
    let mut sum = [0i64];
    merged.allreduce(&[1], &mut sum, &Op::Sum).unwrap();
    assert_eq!(sum[0], merged.size() as i64);
    merged.disconnect().unwrap();
    inter.disconnect().unwrap();
    assert!(!u.connected_to_other_jobs());
    // The children exit; this job goes on.
    std::thread::sleep(Duration::from_millis(200));
    w.barrier().unwrap();
    println!("parent done");
    u.finalize().unwrap();
}

#[test]
fn spawn_child() {
    if !support::is_rank_of("spawn_child") {
        return;
    }
    let mut u = shmpi::init().unwrap();
    assert_eq!(u.appnum(), 0);
    let parent = u.take_parent().expect("a spawned job has a parent");
    let w = u.world();
    assert_eq!(w.size(), 3);
    let mut got = [0u64];
    parent.recv(&mut got, 0, 1).unwrap();
    parent.send(&[got[0] * 10], 0, 2).unwrap();
    let merged = parent.intercomm_merge(true).unwrap();
    let mut sum = [0i64];
    merged.allreduce(&[1], &mut sum, &Op::Sum).unwrap();
    merged.disconnect().unwrap();
    parent.disconnect().unwrap();
    assert!(!u.connected_to_other_jobs());
    u.finalize().unwrap();
}

#[test]
fn a_job_spawns_children_that_talk_merge_disconnect_and_exit() {
    let o = run_case(2, "spawn_parent");
    assert_eq!(o.code, Some(0), "{}\n{}", o.stdout, o.stderr);
    assert!(o.stdout.contains("parent done"));
}

#[test]
fn spawn_nested_top() {
    if !support::is_rank_of("spawn_nested_top") {
        return;
    }
    let u = shmpi::init().unwrap();
    let (cmd, opts) = me_as("spawn_nested_middle", 1);
    let inter = u.self_comm().spawn(&cmd, &opts, 0).expect("spawn");
    let mut got = [0u32];
    inter.recv(&mut got, 0, 7).unwrap();
    assert_eq!(got[0], 4242, "the grandchild's word, through the child");
    inter.disconnect().unwrap();
    println!("top done");
    u.finalize().unwrap();
}

#[test]
fn spawn_nested_middle() {
    if !support::is_rank_of("spawn_nested_middle") {
        return;
    }
    let mut u = shmpi::init().unwrap();
    let parent = u.take_parent().expect("parent");
    let (cmd, opts) = me_as("spawn_nested_bottom", 1);
    let child = u.world().spawn(&cmd, &opts, 0).expect("nested spawn");
    let mut got = [0u32];
    child.recv(&mut got, 0, 6).unwrap();
    parent.send(&got, 0, 7).unwrap();
    child.disconnect().unwrap();
    parent.disconnect().unwrap();
    u.finalize().unwrap();
}

#[test]
fn spawn_nested_bottom() {
    if !support::is_rank_of("spawn_nested_bottom") {
        return;
    }
    let mut u = shmpi::init().unwrap();
    let parent = u.take_parent().expect("parent");
    parent.send(&[4242u32], 0, 6).unwrap();
    parent.disconnect().unwrap();
    u.finalize().unwrap();
}

#[test]
fn nested_spawn_reaches_the_grandchild() {
    let o = run_case(1, "spawn_nested_top");
    assert_eq!(o.code, Some(0), "{}\n{}", o.stdout, o.stderr);
    assert!(o.stdout.contains("top done"));
}

#[test]
fn spawn_again_parent() {
    if !support::is_rank_of("spawn_again_parent") {
        return;
    }
    let u = shmpi::init().unwrap();
    let w = u.world();
    let (cmd, opts) = me_as("spawn_again_child", 2);
    let inter = w.spawn(&cmd, &opts, 0).expect("spawn");
    // Give the children a port, and part.
    let port = names::Port::open().unwrap();
    let mut name = [0u8; 256];
    name[..port.name().len()].copy_from_slice(port.name().as_bytes());
    for c in 0..2 {
        inter.send(&name[..], c, 1).unwrap();
    }
    inter.disconnect().unwrap();
    assert!(!u.connected_to_other_jobs());
    // They come back through the port.
    let again = w.accept(Some(&port), 0).expect("accept the children again");
    let mut sum = [0i32];
    let merged = again.intercomm_merge(false).unwrap();
    merged.allreduce(&[5], &mut sum, &Op::Sum).unwrap();
    assert_eq!(sum[0], 15);
    merged.disconnect().unwrap();
    again.disconnect().unwrap();
    println!("again done");
    u.finalize().unwrap();
}

#[test]
fn spawn_again_child() {
    if !support::is_rank_of("spawn_again_child") {
        return;
    }
    let mut u = shmpi::init().unwrap();
    let parent = u.take_parent().expect("parent");
    let mut name = [0u8; 256];
    parent.recv(&mut name[..], 0, 1).unwrap();
    parent.disconnect().unwrap();
    let end = name.iter().position(|&b| b == 0).unwrap();
    let port = std::str::from_utf8(&name[..end]).unwrap().to_string();
    let w = u.world();
    let again = w
        .connect(&port, 0, Duration::from_secs(30))
        .expect("connect back");
    let merged = again.intercomm_merge(true).unwrap();
    let mut sum = [0i32];
    merged.allreduce(&[5], &mut sum, &Op::Sum).unwrap();
    merged.disconnect().unwrap();
    again.disconnect().unwrap();
    u.finalize().unwrap();
}

#[test]
fn spawn_disconnect_and_reconnect_through_a_port() {
    let o = run_case(1, "spawn_again_parent");
    assert_eq!(o.code, Some(0), "{}\n{}", o.stdout, o.stderr);
    assert!(o.stdout.contains("again done"));
}
