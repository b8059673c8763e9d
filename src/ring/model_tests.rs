//! Loom model checks: every interleaving of the ring's reserve / commit /
//! peek / release, and of the doorbell's sleep / wake protocol.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test --release --lib` (`.ci/run`
//! does, in its own target directory). They live in the library, not in
//! `tests/`, so that a loom build compiles only the layers it checks.

use crate::ring::heap_ring;
use loom::thread;

/// Pushes `sizes` through a 256-byte ring (so frames wrap) from one thread
/// while another pops them: every frame arrives whole and in order, and
/// loom reports any read of payload bytes not ordered after their write.
fn stream(sizes: &'static [usize]) {
    stream_in(256, 0, sizes);
}

/// [`stream`] through a ring of `cap` bytes whose producer has a hot
/// window of `hot` bytes (0: none) and ends its lap there whenever it may
/// (`Producer::at_hot_end`, `end_lap_early`).
fn stream_in(cap: usize, hot: usize, sizes: &'static [usize]) {
    loom::model(move || {
        let (mut p, mut c) = heap_ring(cap).unwrap();
        p.set_hot(hot);
        let t = thread::spawn(move || {
            for (i, &len) in sizes.iter().enumerate() {
                let data = vec![i as u8 + 1; len];
                while p.push(&[&data]).is_err() {
                    thread::yield_now();
                }
                if p.at_hot_end() {
                    p.end_lap_early();
                }
            }
        });
        for (i, &len) in sizes.iter().enumerate() {
            loop {
                if let Some(f) = c.peek() {
                    assert_eq!(f.len(), len);
                    let mut buf = vec![0u8; len];
                    f.read(0, &mut buf);
                    assert!(buf.iter().all(|&b| b == i as u8 + 1), "frame {i}");
                    f.release();
                    break;
                }
                thread::yield_now();
            }
        }
        t.join().unwrap();
    });
}

#[test]
fn two_frames_pass_in_order() {
    stream(&[3, 9]);
}

#[test]
fn frames_that_fill_and_wrap_the_ring_pass_intact() {
    // A 512-byte ring carries at most 240 payload bytes per frame. Frames
    // of 200, 40 and 200 bytes take 256, 128 and 256 bytes (small frames
    // are padded to pairs of lines): the third does not fit the 128 bytes
    // left before the end, so it needs the wrap marker and the bytes the
    // consumer released at the start.
    stream_in(512, 0, &[200, 40, 200]);
}

/// A lap that ends early at a hot window (`end_lap_early`) while the
/// consumer may or may not have taken the frames before its end: in
/// every interleaving the producer ends it only when it may, and the
/// consumer follows the marker to the next lap with every frame whole
/// and in order. A 1 KiB ring with a 256-byte window, the smallest in
/// which the window can act (`set_hot` allows a quarter of the ring; a
/// frame that ends a lap, 128 bytes at least, is at most half the window).
#[test]
fn a_lap_ended_early_at_the_hot_window_loses_nothing() {
    stream_in(1024, 256, &[8, 8, 8]);
}

#[test]
fn doorbell_sleep_and_ring_never_lose_a_wakeup() {
    use crate::shm::doorbell::model::{Bell, Work};
    use std::sync::Arc;
    loom::model(|| {
        let bell = Arc::new(Bell::new());
        let work = Arc::new(Work::new());
        let (b2, w2) = (bell.clone(), work.clone());
        let sender = thread::spawn(move || {
            w2.post();
            b2.ring();
        });
        // The receiver sleeps until the work is visible; if a wake-up were
        // lost, loom would report a deadlock.
        bell.sleep_until(|| work.taken());
        sender.join().unwrap();
    });
}

#[test]
fn two_sleepers_of_one_rank_are_both_woken() {
    use crate::shm::doorbell::model::{Bell, Work};
    use std::sync::Arc;
    // Three threads: bound the preemptions so the search stays within CI's
    // budget (unbounded it takes over ten minutes on two cores); lost
    // wake-ups need at most two (the ringer between the sleeper's
    // announcement and its wait).
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(|| {
        let bell = Arc::new(Bell::new());
        let work = Arc::new(Work::new());
        let (b2, w2) = (bell.clone(), work.clone());
        let other = thread::spawn(move || b2.sleep_until(|| w2.taken()));
        let (b3, w3) = (bell.clone(), work.clone());
        let sender = thread::spawn(move || {
            w3.post();
            b3.ring();
        });
        bell.sleep_until(|| work.taken());
        sender.join().unwrap();
        other.join().unwrap();
    });
}
