//! The 0-256 B path allocates nothing (issue 6, item 2: "no syscall, no
//! allocation, no lock"): this test binary counts every allocation of
//! its process, and each rank checks that a run of small messages, past
//! a warm-up, made none. Blocking `send` / `recv`, `irecv` + `send` +
//! `wait` (the halo exchange's receive): none at all; a window of
//! `isend`s in a lending scope received by `recv_many` (`shmpi-bench
//! bw`'s pattern): none per message (`recv_many` returns its statuses in
//! a vector). Every size from 0 to 256 bytes.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

/// The system allocator, counting the calls that take memory.
struct Counting;

/// Allocations (and reallocations) of this process so far.
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is passed to the system allocator unchanged; the
// count is a side effect that touches no memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // Relaxed: a counter, not a publication; `allocations` reads it
        // on the thread that did the work it counts (other threads' are
        // counted too: the whole process's).
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(l) }
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(p, l) }
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // Relaxed: as in `alloc`.
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        unsafe { System.alloc_zeroed(l) }
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // Relaxed: as in `alloc`.
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `realloc`, passed on.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Sizes of the small path: every power of two to 256, and odd ones.
const SIZES: &[usize] = &[0, 1, 7, 8, 24, 40, 63, 64, 100, 128, 200, 256];

/// Round trips (or windows) per size, timed by nothing: counted.
const ROUNDS: usize = 200;

/// The allocations of this process while `f` ran (its threads other
/// than this one only sleep meanwhile).
fn allocations(f: impl FnOnce()) -> u64 {
    // Relaxed: as in `alloc`.
    let before = ALLOCS.load(Ordering::Relaxed);
    f();
    ALLOCS.load(Ordering::Relaxed) - before
}

#[test]
fn small_messages_allocate_nothing_once_warm() {
    support::run_ranks(2, "small_messages_allocate_nothing_once_warm", |u| {
        let w = u.world();
        let me = w.rank();
        let peer = 1 - me;
        let sbuf = [0x5au8; 256];
        let mut rbuf = [0u8; 256];
        let mut window = vec![0u8; 256];
        let mut ping = |n: usize, irecv: bool| {
            for _ in 0..ROUNDS {
                if irecv {
                    let r = w.irecv(&mut rbuf[..n], peer, 1).unwrap();
                    if me == 0 {
                        w.send(&sbuf[..n], peer, 1).unwrap();
                        r.wait().unwrap();
                    } else {
                        r.wait().unwrap();
                        w.send(&sbuf[..n], peer, 1).unwrap();
                    }
                } else if me == 0 {
                    w.send(&sbuf[..n], peer, 1).unwrap();
                    w.recv(&mut rbuf[..n], peer, 1).unwrap();
                } else {
                    w.recv(&mut rbuf[..n], peer, 1).unwrap();
                    w.send(&sbuf[..n], peer, 1).unwrap();
                }
            }
        };
        // Warm: the first messages of a job set up what stays (the
        // rings' producer ends, the request slots, the engine's queues).
        for &n in SIZES {
            ping(n, false);
            ping(n, true);
        }
        for &n in SIZES {
            for irecv in [false, true] {
                let a = allocations(|| ping(n, irecv));
                assert_eq!(
                    a, 0,
                    "rank {me}: {a} allocations in {ROUNDS} round trips of {n} B (irecv: {irecv})"
                );
            }
        }
        // A window of 64 scoped isends into one recv_many, as OSU's bw.
        let mut stream = |n: usize| {
            for _ in 0..ROUNDS / 10 {
                if me == 0 {
                    shmpi::comm::scope(|s| {
                        let mut reqs = Vec::with_capacity(64);
                        for _ in 0..64 {
                            reqs.push(s.isend(&w, &sbuf[..n], peer, 2).unwrap());
                        }
                        shmpi::comm::wait_all(reqs).unwrap();
                    });
                    w.recv(&mut rbuf[..1], peer, 3).unwrap();
                } else {
                    w.recv_many(&mut window[..n], 64, peer, 2).unwrap();
                    w.send(&sbuf[..1], peer, 3).unwrap();
                }
            }
        };
        for &n in SIZES {
            stream(n);
        }
        // Per window, none per message: at the sender the test's own
        // vector of requests; at the receiver what `recv_many` returns
        // (a status per message, in one vector) and its list of slots.
        let windows = (ROUNDS / 10) as u64;
        let most = if me == 0 { windows } else { 2 * windows };
        for &n in SIZES {
            let a = allocations(|| stream(n));
            assert!(
                a <= most,
                "rank {me}: {a} allocations in {windows} windows of 64 x {n} B (at most {most})"
            );
        }
        w.barrier().unwrap();
    });
}
