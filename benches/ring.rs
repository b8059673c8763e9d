//! Ring hot paths in one process: single-thread push/pop by frame size, and
//! two-thread streaming throughput (threads pinned, started behind a
//! barrier, timed by `iter_custom` from the common start to the slower
//! side's end).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use shmpi::ring::{heap_ring, RingReserveError};
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

fn push_pop(c: &mut Criterion) {
    let mut g = c.benchmark_group("ring/push_pop");
    for size in [8usize, 64, 256, 4096] {
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, &size| {
            let (mut p, mut cons) = heap_ring(1 << 16).unwrap();
            let data = vec![7u8; size];
            let mut out = vec![0u8; size];
            b.iter(|| {
                p.push(&[&data]).unwrap();
                let f = cons.peek().unwrap();
                f.read(0, &mut out);
                f.release();
            });
        });
    }
    g.finish();
}

fn two_threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("ring/two_threads");
    for size in [8usize, 256, 16384] {
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, &size| {
            b.iter_custom(|iters| {
                let (mut p, mut cons) = heap_ring(1 << 20).unwrap();
                let start = Arc::new(Barrier::new(2));
                let s2 = start.clone();
                let producer = std::thread::spawn(move || {
                    pin(1);
                    let data = vec![1u8; size];
                    s2.wait();
                    for _ in 0..iters {
                        loop {
                            match p.push(&[&data]) {
                                Ok(()) => break,
                                Err(RingReserveError::TooFewBytes(_)) => std::hint::spin_loop(),
                                Err(e) => panic!("{e}"),
                            }
                        }
                    }
                });
                pin(0);
                let mut out = vec![0u8; size];
                start.wait();
                let t0 = Instant::now();
                for _ in 0..iters {
                    loop {
                        if let Some(f) = cons.peek() {
                            f.read(0, &mut out);
                            f.release();
                            break;
                        }
                        std::hint::spin_loop();
                    }
                }
                let t = t0.elapsed();
                producer.join().unwrap();
                t
            });
        });
    }
    g.finish();
}

fn ping_pong(c: &mut Criterion) {
    // Two rings, two pinned threads: the in-process floor of a round trip
    // through the ring (reported per round trip).
    c.bench_function("ring/ping_pong_8B", |b| {
        b.iter_custom(|iters| {
            let (mut p_ab, mut c_ab) = heap_ring(1 << 12).unwrap();
            let (mut p_ba, mut c_ba) = heap_ring(1 << 12).unwrap();
            let start = Arc::new(Barrier::new(2));
            let s2 = start.clone();
            let echo = std::thread::spawn(move || {
                pin(1);
                s2.wait();
                let mut buf = [0u8; 8];
                for _ in 0..iters {
                    let f = loop {
                        if let Some(f) = c_ab.peek() {
                            break f;
                        }
                        std::hint::spin_loop();
                    };
                    f.read(0, &mut buf);
                    f.release();
                    p_ba.push(&[&buf]).unwrap();
                }
            });
            pin(0);
            start.wait();
            let t0 = Instant::now();
            let mut buf = [0u8; 8];
            for i in 0..iters {
                p_ab.push(&[&i.to_le_bytes()]).unwrap();
                let f = loop {
                    if let Some(f) = c_ba.peek() {
                        break f;
                    }
                    std::hint::spin_loop();
                };
                f.read(0, &mut buf);
                f.release();
            }
            let t = t0.elapsed();
            echo.join().unwrap();
            t
        });
    });
}

criterion_group! {
    name = benches;
    // 10,000 bootstrap resamples instead of criterion's 100,000: the
    // analysis took most of a `--quick` run on these 2-vCPU machines
    // (66 s for the group, 10 s with this).
    config = Criterion::default()
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .nresamples(10_000);
    targets = push_pop, two_threads, ping_pong
}
criterion_main!(benches);
