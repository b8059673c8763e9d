//! The transport over a real /dev/shm segment, two endpoints in two pinned
//! threads of one process: ping-pong round trip and one-way streaming by
//! message size (fragmented above the fragment size).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use shmpi::shm::{segment_path, Segment};
use shmpi::transport::{Envelope, Layout, Sent, Transport};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Pins the calling thread to the `i`-th CPU of the process's original
/// affinity mask (read once: after the first pin a thread's mask, which
/// new threads inherit, holds one CPU only).
fn pin(i: usize) {
    static IDS: std::sync::OnceLock<Vec<core_affinity::CoreId>> = std::sync::OnceLock::new();
    let ids = IDS.get_or_init(|| core_affinity::get_core_ids().unwrap_or_default());
    if let Some(id) = ids.get(i % ids.len().max(1)) {
        core_affinity::set_for_current(*id);
    }
}

fn pair() -> (Transport, Transport) {
    let layout = Layout::new(2, 1 << 20).unwrap();
    let job = 0xbe_0000_0000 | std::process::id() as u64;
    let path = segment_path(std::path::Path::new("/dev/shm"), job);
    let seg = Arc::new(Segment::create(&path, layout.spec(job)).unwrap());
    seg.unlink();
    let a = Transport::new(seg.clone(), layout, 0).unwrap();
    // Rank 1's endpoint is made on another thread, so the two endpoints'
    // process-local state does not share cache lines (in real runs they
    // live in two processes).
    let b = std::thread::spawn(move || Transport::new(seg, layout, 1).unwrap())
        .join()
        .unwrap();
    (a, b)
}

/// Sends a whole message, polling (and discarding) incoming frames while
/// the ring is full.
fn send_all(t: &mut Transport, peer: usize, data: &[u8]) {
    let env = Envelope::default();
    if let Sent::Partial(mut out) = t.send(peer, &env, data) {
        while !t.resume(&mut out, data) {
            t.poll(16, &mut |_| {});
        }
    }
}

/// Receives one whole message of `len` bytes into `buf`.
fn recv_all(t: &mut Transport, buf: &mut [u8]) {
    let mut done = false;
    while !done {
        // One frame per call: a larger budget could take the first frames
        // of the next message too, which this loop would then lose.
        t.poll(1, &mut |m| {
            buf[m.offset..m.offset + m.data.len()].copy_from_slice(m.data);
            done = m.is_last();
        });
        std::hint::spin_loop();
    }
}

/// Times `iters` rounds between two endpoints on two pinned threads: the
/// main thread sends `size` bytes and, with `echo`, waits for them back;
/// the other thread receives and, with `echo`, returns them. The time is
/// from the common start to the main thread's end (after the other ends).
fn two_threads(iters: u64, size: usize, echo: bool) -> Duration {
    let (mut t0, mut t1) = pair();
    let start = Arc::new(Barrier::new(2));
    let s2 = start.clone();
    let other = std::thread::spawn(move || {
        pin(1);
        let mut buf = vec![0u8; size];
        s2.wait();
        for _ in 0..iters {
            recv_all(&mut t1, &mut buf);
            if echo {
                send_all(&mut t1, 0, &buf);
            }
        }
    });
    pin(0);
    let data = vec![3u8; size];
    let mut buf = vec![0u8; size];
    start.wait();
    let t = Instant::now();
    for _ in 0..iters {
        send_all(&mut t0, 1, &data);
        if echo {
            recv_all(&mut t0, &mut buf);
        }
    }
    other.join().unwrap();
    t.elapsed()
}

fn ping_pong(c: &mut Criterion) {
    let mut g = c.benchmark_group("transport/ping_pong");
    for size in [8usize, 1024, 65536] {
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, &size| {
            b.iter_custom(|iters| two_threads(iters, size, true));
        });
    }
    g.finish();
}

fn stream(c: &mut Criterion) {
    let mut g = c.benchmark_group("transport/stream");
    for size in [64usize, 16384, 1 << 20] {
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, &size| {
            b.iter_custom(|iters| two_threads(iters, size, false));
        });
    }
    g.finish();
}

fn one_thread(c: &mut Criterion) {
    // Both endpoints in one thread: the transport's instruction cost per
    // message, without any cache-line transfer.
    c.bench_function("transport/one_thread_send_poll_8B", |b| {
        let (mut t0, mut t1) = pair();
        let data = [1u8; 8];
        let env = Envelope::default();
        b.iter(|| {
            assert!(matches!(t0.send(1, &env, &data), Sent::Done));
            let mut got = 0;
            t1.poll(64, &mut |m| got += m.data.len());
            assert_eq!(got, 8);
        });
    });
}

criterion_group! {
    name = benches;
    // As in benches/ring.rs: fewer bootstrap resamples keep `--quick` short.
    config = Criterion::default()
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .nresamples(10_000);
    targets = ping_pong, stream, one_thread
}
criterion_main!(benches);
