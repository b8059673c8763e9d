//! The p2p matching engine alone, in one process: messages a rank sends
//! itself are matched without any ring (`Engine::start_send` to its own
//! rank delivers locally), so these measure the posted and unexpected
//! queues: a receive posted behind `depth` others that do not match, and a
//! message arriving behind `depth` unexpected ones, with exact and wildcard
//! sources and tags.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use shmpi::p2p::{Engine, ANY_SOURCE, ANY_TAG};
use shmpi::shm::{segment_path, Segment};
use shmpi::transport::{Layout, Transport};
use std::sync::Arc;

fn engine() -> Engine {
    let layout = Layout::new(1, 1 << 14).unwrap();
    let job = 0xbe_1000_0000 | std::process::id() as u64;
    let path = segment_path(std::path::Path::new("/dev/shm"), job);
    let seg = Arc::new(Segment::create(&path, layout.spec(job)).unwrap());
    seg.unlink();
    Engine::new(Transport::new(seg, layout, 0).unwrap())
}

fn posted(c: &mut Criterion) {
    let mut g = c.benchmark_group("matching/posted");
    for depth in [0usize, 16, 256] {
        for (name, src, tag) in [
            ("exact", 0, 7),
            ("any_source", ANY_SOURCE, 7),
            ("any_tag", 0, ANY_TAG),
        ] {
            g.bench_with_input(BenchmarkId::new(name, depth), &depth, |b, &depth| {
                let mut e = engine();
                // `depth` receives that never match (another context).
                let blockers: Vec<_> = (0..depth)
                    .map(|i| e.post_recv(99, 0, i as i32, 8))
                    .collect();
                let mut buf = [0u8; 8];
                b.iter(|| {
                    let id = e.post_recv(1, src, tag, 8);
                    let _ = e.start_send(1, 0, 0, 7, &[1u8; 8], false, shmpi::p2p::Hold::Now);
                    e.finish_recv(id, &mut buf).unwrap()
                });
                for id in blockers {
                    e.orphan(id);
                }
            });
        }
    }
    g.finish();
}

fn unexpected(c: &mut Criterion) {
    let mut g = c.benchmark_group("matching/unexpected");
    for depth in [0usize, 16, 256] {
        g.bench_with_input(BenchmarkId::new("exact", depth), &depth, |b, &depth| {
            let mut e = engine();
            // `depth` queued messages of another context stand in front.
            for i in 0..depth {
                let _ = e.start_send(99, 0, 0, i as i32, &[0u8; 8], false, shmpi::p2p::Hold::Now);
            }
            let mut buf = [0u8; 8];
            b.iter(|| {
                let _ = e.start_send(1, 0, 0, 7, &[1u8; 8], false, shmpi::p2p::Hold::Now);
                let id = e.post_recv(1, 0, 7, 8);
                e.finish_recv(id, &mut buf).unwrap()
            });
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(1))
        // As in benches/ring.rs: fewer bootstrap resamples keep `--quick`
        // short.
        .nresamples(10_000);
    targets = posted, unexpected
}
criterion_main!(benches);
