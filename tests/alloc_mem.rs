//! Memory the ranks share (issue 9, `transport::pool`): `alloc_mem` gives
//! buffers in this rank's shared pool; a message sent from one goes by
//! rendezvous and is copied once by the receiver straight out of the
//! pool (with single copy by CMA turned off, so the pool is the only
//! way), or, from the shared copy's size where single copy works, with
//! the sender writing the back part.

mod support;

use shmpi::ErrorClass;
use support::{pattern, run_ranks_with, single_copy_everywhere};

/// Sizes below and above the pool threshold (16 KiB), odd ones too.
const SIZES: &[usize] = &[
    0,
    1,
    4095,
    16 << 10,
    (16 << 10) + 1,
    100_003,
    (1 << 20) + 13,
    4 << 20,
];

#[test]
fn pool_buffers_are_delivered_by_one_copy_out_of_the_pool() {
    run_ranks_with(
        2,
        "pool_buffers_are_delivered_by_one_copy_out_of_the_pool",
        &[],
        &[("SHMPI_CMA", "off")],
        |u| {
            let w = u.world();
            let me = w.rank();
            let mut expect_rdv = 0;
            for (k, &n) in SIZES.iter().enumerate() {
                for off in [0usize, 3] {
                    let seed = (k * 10 + off) as u64;
                    if me == 0 {
                        let mut buf = u.alloc_mem(n + off + 7).expect("alloc_mem");
                        buf[off..off + n].copy_from_slice(&pattern(seed, n));
                        let data = &buf[off..off + n];
                        // Blocking, then nonblocking from the same buffer.
                        w.send(data, 1, 1).unwrap();
                        w.isend(data, 1, 2).unwrap().wait().unwrap();
                        // A pool buffer freed after completion, and a
                        // fresh one from the same place, still right.
                        drop(buf);
                        let mut again = u.alloc_mem(n).expect("alloc_mem again");
                        again.copy_from_slice(&pattern(seed + 1000, n));
                        w.send(&again[..], 1, 3).unwrap();
                        if n >= 16 << 10 {
                            expect_rdv += 3;
                        }
                    } else {
                        for (tag, s) in [(1, seed), (2, seed), (3, seed + 1000)] {
                            let mut got = vec![0u8; n + off];
                            let st = w.recv(&mut got[off..], 0, tag).unwrap();
                            assert_eq!(st.bytes, n);
                            assert!(
                                got[off..] == pattern(s, n)[..],
                                "size {n} off {off} tag {tag}"
                            );
                        }
                        if n >= 16 << 10 {
                            expect_rdv += 3;
                        }
                    }
                }
            }
            // Ordinary memory still works, through the ring (CMA is off).
            let n = 1 << 20;
            if me == 0 {
                w.send(&pattern(7, n)[..], 1, 9).unwrap();
            } else {
                let mut got = vec![0u8; n];
                w.recv(&mut got[..], 0, 9).unwrap();
                assert!(got == pattern(7, n));
            }
            let (sent, received) = u.rendezvous_counts();
            if me == 0 {
                assert_eq!(sent, expect_rdv, "pool rendezvous sent");
            } else {
                assert_eq!(received, expect_rdv, "pool rendezvous received");
            }
            w.barrier().unwrap();
        },
    );
}

#[test]
fn pool_buffers_share_their_copy_with_the_sender_where_single_copy_works() {
    // From the shared copy's size the receiver copies the front out of
    // the pool and the sender writes the back from its pool buffer by
    // system call (`Transport::split_ok`); 1 MiB and up always reach it.
    run_ranks_with(
        2,
        "pool_buffers_share_their_copy_with_the_sender_where_single_copy_works",
        &[],
        &[("SHMPI_CMA_SPLIT", "65536")],
        |u| {
            let w = u.world();
            let me = w.rank();
            for (k, &n) in SIZES.iter().enumerate() {
                for off in [0usize, 3] {
                    let seed = (k * 10 + off) as u64;
                    if me == 0 {
                        let mut buf = u.alloc_mem(n + off + 7).expect("alloc_mem");
                        buf[off..off + n].copy_from_slice(&pattern(seed, n));
                        let data = &buf[off..off + n];
                        w.send(data, 1, 1).unwrap();
                        w.isend(data, 1, 2).unwrap().wait().unwrap();
                        // Rewritten between sends, as an application does.
                        buf[off..off + n].copy_from_slice(&pattern(seed + 1000, n));
                        w.send(&buf[off..off + n], 1, 3).unwrap();
                    } else {
                        for (tag, s) in [(1, seed), (2, seed), (3, seed + 1000)] {
                            // Received into a pool buffer too, at times.
                            let mut pooled;
                            let mut heap;
                            let got: &mut [u8] = if tag == 2 {
                                pooled = u.alloc_mem(n + off).expect("alloc_mem");
                                &mut pooled[..]
                            } else {
                                heap = vec![0u8; n + off];
                                &mut heap[..]
                            };
                            let st = w.recv(&mut got[off..], 0, tag).unwrap();
                            assert_eq!(st.bytes, n);
                            assert!(
                                got[off..] == pattern(s, n)[..],
                                "size {n} off {off} tag {tag}"
                            );
                        }
                    }
                }
            }
            let c = u.split_counts();
            if single_copy_everywhere(u) {
                // Every offer of rank 1 was written by rank 0 or revoked
                // by rank 1, never both; and some were written (the
                // sender waits in a blocking send, and claims at once).
                if me == 1 {
                    assert!(c.offered > 0, "no shared copy of a pool buffer: {c:?}");
                    w.send(&[c.offered, c.revoked], 0, 9).unwrap();
                } else {
                    let mut theirs = [0u64; 2];
                    w.recv(&mut theirs, 1, 9).unwrap();
                    let [offered, revoked] = theirs;
                    assert_eq!(c.written + revoked, offered, "{c:?}, rank 1's {theirs:?}");
                    assert!(c.written > 0, "no back part written from the pool: {c:?}");
                }
            } else {
                println!("single copy not usable here: pool copies not shared");
                assert_eq!(c, Default::default());
            }
        },
    );
}

#[test]
fn a_full_pool_is_a_nomem_error_and_ordinary_memory_still_works() {
    run_ranks_with(
        1,
        "a_full_pool_is_a_nomem_error_and_ordinary_memory_still_works",
        &[],
        &[("SHMPI_ALLOC_POOL", "1048576")],
        |u| {
            let a = u.alloc_mem(600 << 10).expect("fits");
            let e = u.alloc_mem(600 << 10).unwrap_err();
            assert_eq!(e.class(), ErrorClass::NoMem, "{e}");
            drop(a);
            let b = u.alloc_mem(1 << 20).expect("fits once freed");
            assert_eq!(b.len(), 1 << 20);
        },
    );
}
