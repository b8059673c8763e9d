//! Where a small message's one-way latency goes, layer by layer, in one
//! 2-rank job (`shmpiexec -n 2 target/release/examples/layers`):
//! bursts of round trips through (1) the minimal ring between the two
//! rank processes (a sequence word and a payload word per slot, in a
//! `shm::lines::SharedLines` file), its receiver pacing its polls by
//! PAUSE and then, in a second burst, by `shmpi::ring::poll_pause` (the
//! floor is the lower), (2) shmpi's transport alone on a segment of its
//! own (`try_send_eager` / `wait_exact`, polls paced by `poll_pause`),
//! and (3) the MPI path (`Communicator::send` / `recv`), in turn. Each
//! burst's times are divided by the floor just before, and the medians
//! of those ratios are printed: a change of the VM's placement between
//! runs moves all of them alike (`docs/benchmarks.md`, "Issue 6, ninth
//! pass" and "tenth pass").
//!
//! Environment: `S` message size in bytes (default 8), `N` round trips
//! per burst (20 000), `B` bursts (15), `V` set: every burst's times,
//! `TR` the ring size of the transport's own segment (default the small
//! job's 2 MiB; the MPI path's is the launcher's, `SHMPI_RING_SIZE`).
//! Each rank pins itself to the CPU of its rank number.

use shmpi::shm::lines::SharedLines;
use shmpi::shm::{segment_path, Segment};
use shmpi::sync::Ordering;
use shmpi::transport::{sole_head, Envelope, Exact, Layout, Transport};
use std::sync::Arc;
use std::time::Instant;

/// Slots of each of the two minimal rings.
const SLOTS: usize = 64;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let size = env("S", 8) as usize;
    let iters = env("N", 20_000);
    let bursts = env("B", 15) as usize;
    let u = shmpi::init().expect("init");
    let w = u.world();
    assert_eq!(w.size(), 2, "run with 2 ranks");
    let me = w.rank() as usize;
    let other = 1 - me;
    core_affinity::set_for_current(core_affinity::CoreId { id: me });

    // Rank 0 makes the ring's file and the transport's segment; rank 1
    // maps them; rank 0 then removes their names.
    let mut id = [0u64];
    if me == 0 {
        id[0] = 0x1a7e_0000_0000 | u64::from(std::process::id());
        w.send(&id, 1, 9).expect("send the id");
    } else {
        w.recv(&mut id, 0, 9).expect("receive the id");
    }
    let dir = shmpi::job::env::shm_dir();
    let lines_path = dir.join(format!("shmpi-layers-{:x}", id[0]));
    let seg_path = segment_path(&dir, id[0]);
    let layout = Layout::new(
        2,
        env("TR", shmpi::transport::layout::SMALL_JOB_RING as u64) as usize,
    )
    .expect("layout");
    let made = (me == 0).then(|| {
        (
            SharedLines::create(&lines_path, 2 * SLOTS).expect("ring file"),
            Segment::create(&seg_path, layout.spec(id[0])).expect("segment"),
        )
    });
    w.barrier().expect("barrier");
    let (lines, seg) = match made {
        Some(m) => m,
        None => (
            SharedLines::attach(&lines_path, 2 * SLOTS).expect("map the ring file"),
            Segment::attach(&seg_path, layout.spec(id[0])).expect("map the segment"),
        ),
    };
    w.barrier().expect("barrier");
    if me == 0 {
        lines.unlink();
        seg.unlink();
    }

    // The minimal ring: ring 0 carries pings, ring 1 pongs.
    let take = |ring: usize, i: u64, pace: fn()| {
        let slot = ring * SLOTS + i as usize % SLOTS;
        // Acquire: pairs with the Release of the sequence word in `put`.
        while lines.word(slot, 0).load(Ordering::Acquire) != i {
            pace();
        }
        // Relaxed: ordered after the Acquire above.
        lines.word(slot, 1).load(Ordering::Relaxed)
    };
    let put = |ring: usize, i: u64, v: u64| {
        let slot = ring * SLOTS + i as usize % SLOTS;
        // Relaxed: published by the Release of the sequence word.
        lines.word(slot, 1).store(v, Ordering::Relaxed);
        lines.word(slot, 0).store(i, Ordering::Release);
    };

    let mut t = Transport::new(Arc::new(seg), layout, me).expect("transport");
    let envl = Envelope([1; 16]);
    let head = sole_head(&envl);
    let sbuf = vec![1u8; size];
    let mut rbuf = vec![0u8; size];
    let mut seq = 0u64;
    let mut rows: Vec<[f64; 4]> = Vec::with_capacity(bursts);
    let pacings: [fn(); 2] = [std::hint::spin_loop, shmpi::ring::poll_pause];
    for _ in 0..bursts {
        let mut row = [0.0; 4];
        for (k, pace) in pacings.into_iter().enumerate() {
            w.barrier().expect("barrier");
            let st = Instant::now();
            for _ in 0..iters {
                seq += 1;
                if me == 0 {
                    put(0, seq, seq);
                    std::hint::black_box(take(1, seq, pace));
                } else {
                    let v = take(0, seq, pace);
                    put(1, seq, v + 1);
                }
            }
            row[k] = st.elapsed().as_nanos() as f64 / iters as f64 / 2.0;
        }

        w.barrier().expect("barrier");
        let st = Instant::now();
        let send = |t: &mut Transport| {
            while !t.try_send_eager(other, &envl, &sbuf) {
                std::hint::spin_loop();
            }
        };
        let recv = |t: &mut Transport, b: &mut [u8]| {
            let got = t.wait_exact(other, &head, b, || {
                shmpi::ring::poll_pause();
                true
            });
            assert_eq!(got, Exact::Taken(b.len()), "the transport's message");
        };
        for _ in 0..iters {
            if me == 0 {
                send(&mut t);
                recv(&mut t, &mut rbuf);
            } else {
                recv(&mut t, &mut rbuf);
                send(&mut t);
            }
        }
        row[2] = st.elapsed().as_nanos() as f64 / iters as f64 / 2.0;

        w.barrier().expect("barrier");
        let st = Instant::now();
        for _ in 0..iters {
            if me == 0 {
                w.send(&sbuf, 1, 1).expect("send");
                w.recv(&mut rbuf, 1, 1).expect("recv");
            } else {
                w.recv(&mut rbuf, 0, 1).expect("recv");
                w.send(&sbuf, 0, 1).expect("send");
            }
        }
        row[3] = st.elapsed().as_nanos() as f64 / iters as f64 / 2.0;
        rows.push(row);
    }
    if me == 0 {
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let col = |f: &dyn Fn(&[f64; 4]) -> f64| median(rows.iter().map(f).collect());
        let floor = |r: &[f64; 4]| r[0].min(r[1]);
        println!(
            "size {size}: ring {:.1} ns (paced by PAUSE {:.1}, finely {:.1}), transport / ring {:.2}, \
             mpi / ring {:.2}, mpi / transport {:.2} (medians of {bursts} bursts)",
            col(&floor),
            col(&|r| r[0]),
            col(&|r| r[1]),
            col(&|r| r[2] / floor(r)),
            col(&|r| r[3] / floor(r)),
            col(&|r| r[3] / r[2]),
        );
        if std::env::var_os("V").is_some() {
            for r in &rows {
                println!(
                    "  ring {:.1} / {:.1}  transport {:.1}  mpi {:.1} ns",
                    r[0], r[1], r[2], r[3]
                );
            }
        }
    }
}
