//! Large messages on both paths: rendezvous with a single copy
//! (`process_vm_readv`) and the pipelined copy through the ring, forced
//! by `SHMPI_CMA` / `SHMPI_CMA_THRESHOLD`. The same suite runs on each:
//! 0 B to 16 MiB, sizes that are not multiples of the fragment, unaligned
//! buffers on both sides, blocking, nonblocking, unexpected, synchronous,
//! matched-probe and truncated receives.

mod support;

use shmpi::shm::SingleCopy;
use shmpi::ErrorClass;
use support::{launch, pattern, run_ranks_with, single_copy_everywhere, TIMEOUT};

const FRAGMENT: usize = 64 << 10;

/// Sizes around the eager limit, odd sizes, and up to 16 MiB.
const SIZES: &[usize] = &[
    0,
    1,
    63,
    4095,
    FRAGMENT - 1,
    FRAGMENT,
    FRAGMENT + 1,
    100_003,
    (1 << 20) + 13,
    (4 << 20) - 1,
    16 << 20,
];

/// `n` bytes of `pattern(seed)` at byte offset `off` of a fresh buffer
/// (so the slice is not aligned to anything larger than `off` allows).
fn unaligned(seed: u64, n: usize, off: usize) -> Vec<u8> {
    let mut v = vec![0xeeu8; off + n + 5];
    v[off..off + n].copy_from_slice(&pattern(seed, n));
    v
}

/// Where single copy is usable, that this rank sent or received `n`
/// messages by rendezvous in all (its ring peer the rest of the pair).
fn assert_rendezvous_total(u: &shmpi::Universe, n: u64) {
    if u.single_copy() == SingleCopy::Usable {
        let (sent, received) = u.rendezvous_counts();
        assert_eq!(sent + received, n, "messages by rendezvous");
    }
}

/// What path the messages should have taken.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Path {
    /// Rendezvous from `SHMPI_CMA_THRESHOLD` on, if the kernel allows it.
    SingleCopy,
    /// Rings only.
    Rings,
}

fn suite(u: &shmpi::Universe, path: Path) {
    let w = u.world();
    w.set_errhandler(shmpi::ErrHandler::Return);
    let me = w.rank();
    let peer = 1 - me;
    for (i, &n) in SIZES.iter().enumerate() {
        let (so, ro) = (1 + i % 7, 3 + i % 5);
        let seed = i as u64 * 16;
        // 1. Blocking, rank 0 to rank 1 and back.
        if me == 0 {
            let d = unaligned(seed, n, so);
            w.send(&d[so..so + n], 1, 1).unwrap();
            let mut back = vec![0u8; ro + n + 3];
            let st = w.recv(&mut back[ro..ro + n], 1, 2).unwrap();
            assert_eq!(st.bytes, n);
            assert!(
                back[ro..ro + n] == d[so..so + n],
                "echo of {n} bytes differs"
            );
            assert!(
                back[..ro].iter().all(|&b| b == 0),
                "wrote before the buffer"
            );
            assert!(
                back[ro + n..].iter().all(|&b| b == 0),
                "wrote past the buffer"
            );
        } else {
            let mut b = vec![0u8; ro + n];
            let st = w.recv(&mut b[ro..], 0, 1).unwrap();
            assert_eq!((st.source, st.tag, st.bytes), (0, 1, n));
            assert!(
                b[ro..] == pattern(seed, n)[..],
                "{n} bytes arrived corrupted"
            );
            w.send(&b[ro..], 0, 2).unwrap();
        }
        // 2. Both ways at once, nonblocking.
        let out = unaligned(seed + 1 + me as u64, n, so);
        let mut inn = vec![0u8; ro + n];
        {
            let r = w.irecv(&mut inn[ro..], peer, 3).unwrap();
            let s = w.isend(&out[so..so + n], peer, 3).unwrap();
            let st = shmpi::comm::wait_all(vec![s, r]).unwrap();
            assert_eq!(st[1].bytes, n);
        }
        assert!(
            inn[ro..] == pattern(seed + 1 + peer as u64, n)[..],
            "exchange of {n} bytes corrupted"
        );
        // 2b. The same inside a lending scope (pushed from the buffer).
        let mut inn = vec![0u8; ro + n];
        shmpi::comm::scope(|s| {
            let r = w.irecv(&mut inn[ro..], peer, 7).unwrap();
            let q = s.isend(&w, &out[so..so + n], peer, 7).unwrap();
            shmpi::comm::wait_all(vec![q, r]).unwrap();
        });
        assert!(
            inn[ro..] == pattern(seed + 1 + peer as u64, n)[..],
            "scoped exchange of {n} bytes corrupted"
        );
        // 3. Unexpected: the message (or its rendezvous request) is there
        //    before the receive is posted.
        if me == 0 {
            let d = unaligned(seed + 3, n, so);
            let s = w.isend(&d[so..so + n], 1, 4).unwrap();
            w.barrier().unwrap();
            s.wait().unwrap();
        } else {
            w.barrier().unwrap();
            let mut b = vec![0u8; n + ro];
            let st = w.recv(&mut b[ro..], 0, 4).unwrap();
            assert_eq!(st.bytes, n);
            assert!(
                b[ro..] == pattern(seed + 3, n)[..],
                "unexpected {n} bytes corrupted"
            );
        }
        // 4. Synchronous, received through a matched probe.
        if me == 0 {
            let d = pattern(seed + 4, n);
            w.ssend(&d, 1, 5).unwrap();
        } else {
            let (m, st) = w.mprobe(0, 5).unwrap();
            assert_eq!(st.bytes, n);
            let mut b = vec![0u8; n];
            m.recv(&mut b).unwrap();
            assert!(
                b == pattern(seed + 4, n),
                "matched-probe {n} bytes corrupted"
            );
        }
        // 5. Truncated: half the buffer; the message is consumed and the
        //    part that fits is delivered.
        if n >= 2 {
            if me == 0 {
                w.send(&pattern(seed + 5, n), 1, 6).unwrap();
            } else {
                let mut b = vec![0u8; n / 2];
                let e = w.recv(&mut b, 0, 6).unwrap_err();
                assert_eq!(e.class(), ErrorClass::Truncate);
                assert_eq!(e.status().unwrap().bytes, n);
                assert!(
                    b[..] == pattern(seed + 5, n)[..n / 2],
                    "truncated prefix differs"
                );
            }
        }
    }
    w.barrier().unwrap();
    let (sent, received) = u.rendezvous_counts();
    let split = u.split_counts();
    match (path, u.single_copy()) {
        (Path::SingleCopy, SingleCopy::Usable) => {
            assert!(
                sent > 0 && received > 0,
                "no rendezvous: {sent} sent, {received} received"
            );
            // Every size from SHMPI_CMA_SPLIT (64 KiB by default) shares
            // its copy: the largest sizes always reach it, at rank 1,
            // which receives rank 0's isends one way (3.). Rank 0's
            // rendezvous receives are the exchange's, which it reads
            // alone while its own send awaits rank 1's read, and the
            // echoes (1.), blocking sends: by rendezvous only where
            // SHMPI_CMA_BLOCKING says (never on AMD families 25 and 26).
            if std::env::var("SHMPI_CMA_SPLIT").as_deref() != Ok("0") {
                assert!(me == 0 || split.offered > 0, "no shared copy: {split:?}");
                assert!(split.revoked <= split.offered, "{split:?}");
                assert!(split.acked_early <= split.written, "{split:?}");
            }
        }
        (Path::SingleCopy, state) => {
            // This kernel refused the self-test: everything went through
            // the rings, and that is what must have happened.
            println!("rank {me}: single copy unavailable here ({state:?})");
            assert_eq!((sent, received), (0, 0));
        }
        (Path::Rings, state) => {
            assert_eq!(split, Default::default(), "a shared copy despite SHMPI_CMA");
            assert_eq!(state, SingleCopy::Refused);
            assert_eq!((sent, received), (0, 0), "a rendezvous despite SHMPI_CMA");
        }
    }
}

#[test]
fn large_messages_by_single_copy_arrive_intact() {
    run_ranks_with(
        2,
        "large_messages_by_single_copy_arrive_intact",
        &[],
        &[],
        |u| suite(u, Path::SingleCopy),
    );
}

#[test]
fn every_message_by_rendezvous_from_zero_bytes_arrives_intact() {
    run_ranks_with(
        2,
        "every_message_by_rendezvous_from_zero_bytes_arrives_intact",
        &[],
        &[("SHMPI_CMA", "always"), ("SHMPI_CMA_THRESHOLD", "0")],
        |u| suite(u, Path::SingleCopy),
    );
}

#[test]
fn every_rendezvous_copy_shared_with_the_sender_arrives_intact() {
    // From 1 byte: parts of every size, down to an empty back part.
    run_ranks_with(
        2,
        "every_rendezvous_copy_shared_with_the_sender_arrives_intact",
        &[],
        &[("SHMPI_CMA_THRESHOLD", "1"), ("SHMPI_CMA_SPLIT", "1")],
        |u| suite(u, Path::SingleCopy),
    );
}

#[test]
fn rendezvous_without_a_shared_copy_arrives_intact() {
    run_ranks_with(
        2,
        "rendezvous_without_a_shared_copy_arrives_intact",
        &[],
        &[("SHMPI_CMA_SPLIT", "0")],
        |u| {
            suite(u, Path::SingleCopy);
            assert_eq!(u.split_counts(), Default::default());
        },
    );
}

#[test]
fn a_receiver_copies_the_whole_message_when_its_sender_is_not_in_mpi() {
    // The sender makes no MPI call between its isend and the receiver's
    // completion (they meet through a file): it cannot claim the back
    // part, so the receiver revokes its offer and copies everything.
    run_ranks_with(
        2,
        "a_receiver_copies_the_whole_message_when_its_sender_is_not_in_mpi",
        &[],
        &[],
        |u| {
            let w = u.world();
            if !single_copy_everywhere(u) {
                // Without single copy the message goes through the ring,
                // which only a sender in MPI fills: this case is not one.
                println!("single copy not usable here: skipped");
                return;
            }
            let n = (3 << 20) + 5;
            let job = std::env::var("SHMPI_JOB_ID").expect("launched by shmpiexec");
            let flag = std::env::temp_dir().join(format!("shmpi-split-test-{job}"));
            if w.rank() == 0 {
                let d = unaligned(77, n, 3);
                let s = w.isend(&d[3..3 + n], 1, 1).unwrap();
                let deadline = std::time::Instant::now() + TIMEOUT;
                while !flag.exists() {
                    assert!(std::time::Instant::now() < deadline, "no word from rank 1");
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                s.wait().unwrap();
                let _ = std::fs::remove_file(&flag);
                assert_eq!(
                    u.split_counts().written,
                    0,
                    "wrote after the receiver was done"
                );
            } else {
                let mut b = vec![0u8; n];
                w.recv(&mut b, 0, 1).unwrap();
                std::fs::write(&flag, b"done").unwrap();
                assert!(b == pattern(77, n), "{n} bytes arrived corrupted");
                let c = u.split_counts();
                assert_eq!((c.offered, c.revoked), (1, 1), "{c:?}");
            }
        },
    );
}

#[test]
fn a_blocking_sends_copy_is_shared_from_its_own_threshold_an_isends_is_not() {
    // Both by rendezvous from 8 KiB; a blocking send's copy shared from
    // 16 KiB (its sender waits for it), a plain isend's only from 1 MiB:
    // of two 32 KiB messages the receiver offers a part of the first only.
    run_ranks_with(
        2,
        "a_blocking_sends_copy_is_shared_from_its_own_threshold_an_isends_is_not",
        &[],
        &[
            ("SHMPI_CMA_BLOCKING", "8192"),
            ("SHMPI_CMA_THRESHOLD", "8192"),
            ("SHMPI_CMA_SPLIT", "1048576"),
            ("SHMPI_CMA_SPLIT_BLOCKING", "16384"),
        ],
        |u| {
            let w = u.world();
            let p = u.protocols();
            assert_eq!(
                (p.cma_split, p.cma_split_blocking),
                (Some(1 << 20), Some(16 << 10))
            );
            let n = (32 << 10) + 3;
            if w.rank() == 0 {
                let d = unaligned(61, n, 7);
                w.send(&d[7..7 + n], 1, 1).unwrap();
                let d = unaligned(62, n, 1);
                w.isend(&d[1..1 + n], 1, 2).unwrap().wait().unwrap();
            } else {
                let mut b = vec![0u8; n];
                w.recv(&mut b, 0, 1).unwrap();
                assert!(b == pattern(61, n), "the blocking send arrived corrupted");
                w.recv(&mut b, 0, 2).unwrap();
                assert!(b == pattern(62, n), "the isend arrived corrupted");
            }
            w.barrier().unwrap();
            if u.single_copy() == SingleCopy::Usable {
                let (sent, received) = u.rendezvous_counts();
                assert_eq!(sent + received, 2, "both by rendezvous");
                if w.rank() == 1 {
                    assert_eq!(u.split_counts().offered, 1, "{:?}", u.split_counts());
                }
            }
        },
    );
}

#[test]
fn a_receiver_whose_own_rendezvous_send_the_peer_has_yet_to_read_shares_no_copy() {
    // Both ranks isend 128 KiB to each other (rendezvous, a shared copy
    // from 64 KiB). Rank 0 receives first, while its own send still
    // awaits rank 1's read: rank 1 will be busy with it, so rank 0 reads
    // alone (no offer). Rank 1 receives after that: its send was read,
    // so it offers rank 0 a part, as any receiver would.
    run_ranks_with(
        2,
        "a_receiver_whose_own_rendezvous_send_the_peer_has_yet_to_read_shares_no_copy",
        &[],
        &[
            ("SHMPI_CMA_THRESHOLD", "8192"),
            ("SHMPI_CMA_SPLIT", "65536"),
        ],
        |u| {
            let w = u.world();
            let me = w.rank();
            let peer = 1 - me;
            let n = (128 << 10) + 5;
            let out = unaligned(70 + me as u64, n, 3);
            let mut inn = vec![0u8; n];
            let s = w.isend(&out[3..3 + n], peer, 9).unwrap();
            w.barrier().unwrap();
            if me == 0 {
                w.irecv(&mut inn, 1, 9).unwrap().wait().unwrap();
                w.barrier().unwrap();
            } else {
                w.barrier().unwrap();
                w.irecv(&mut inn, 0, 9).unwrap().wait().unwrap();
            }
            s.wait().unwrap();
            assert!(
                inn == pattern(70 + peer as u64, n),
                "the exchange arrived corrupted"
            );
            w.barrier().unwrap();
            if u.single_copy() == SingleCopy::Usable {
                let c = u.split_counts();
                assert_eq!(c.offered, me as u64, "rank {me}: {c:?}");
            }
        },
    );
}

#[test]
fn a_sender_that_writes_its_part_completes_on_the_receivers_ack_of_the_front() {
    // A plain rendezvous send whose sender writes the back part of the
    // shared copy completes on the receiver's ack of the front
    // (`ACK_IF_WROTE`), not on a plain ack after the receiver's settle:
    // the receiver sends none then, so every such send must complete so.
    run_ranks_with(
        2,
        "a_sender_that_writes_its_part_completes_on_the_receivers_ack_of_the_front",
        &[],
        &[],
        |u| {
            let w = u.world();
            let n = (4 << 20) + 3;
            for round in 0..3u64 {
                if w.rank() == 0 {
                    let d = unaligned(90 + round, n, 5);
                    w.isend(&d[5..5 + n], 1, 2).unwrap().wait().unwrap();
                } else {
                    let mut b = vec![0u8; n];
                    w.recv(&mut b, 0, 2).unwrap();
                    assert!(b == pattern(90 + round, n), "round {round}: corrupted");
                }
            }
            w.barrier().unwrap();
            let c = u.split_counts();
            if u.single_copy() != SingleCopy::Usable {
                println!("single copy unavailable here: nothing shared");
            } else if w.rank() == 0 {
                assert_eq!(c.acked_early, c.written, "{c:?}");
                if c.written == 0 {
                    println!("the receiver revoked every offer (a busy machine): {c:?}");
                }
            } else {
                assert_eq!(c.offered, 3, "{c:?}");
            }
        },
    );
}

#[test]
fn a_scoped_send_whose_request_is_leaked_still_delivers_what_was_lent() {
    run_ranks_with(
        2,
        "a_scoped_send_whose_request_is_leaked_still_delivers_what_was_lent",
        &["--ring-size", "65536"],
        &[],
        |u| {
            let w = u.world();
            let n = 5 << 20;
            if w.rank() == 0 {
                let mut buf = pattern(42, n);
                shmpi::comm::scope(|s| {
                    // Far more than the ring holds: most of it is still
                    // lent when the scope ends, which copies it.
                    let r = s.isend(&w, &buf, 1, 9).unwrap();
                    std::mem::forget(r);
                });
                // The borrow is over: the buffer may change, and the
                // receiver must still get what was lent.
                buf.iter_mut().for_each(|b| *b = 0);
                drop(buf);
                w.barrier().unwrap();
            } else {
                w.barrier().unwrap();
                let mut b = vec![0u8; n];
                w.recv(&mut b, 0, 9).unwrap();
                assert!(b == pattern(42, n), "the lent bytes changed");
            }
        },
    );
}

#[test]
fn a_scoped_rendezvous_whose_scope_ends_unread_delivers_the_scopes_copy() {
    // Scoped sends by (revocable) rendezvous from 64 KiB: the scope ends
    // before the receiver has even posted, so the offer moves to the
    // scope's copy and the caller's buffer is freed.
    run_ranks_with(
        2,
        "a_scoped_rendezvous_whose_scope_ends_unread_delivers_the_scopes_copy",
        &[],
        &[("SHMPI_CMA", "always"), ("SHMPI_CMA_THRESHOLD", "65536")],
        |u| {
            let w = u.world();
            let n = (3 << 20) + 5;
            if w.rank() == 0 {
                let mut buf = pattern(43, n);
                shmpi::comm::scope(|s| {
                    let r = s.issend(&w, &buf[1..], 1, 9).unwrap();
                    std::mem::forget(r);
                });
                buf.iter_mut().for_each(|b| *b = 0);
                drop(buf);
                w.barrier().unwrap();
            } else {
                w.barrier().unwrap();
                let mut b = vec![0u8; n - 1];
                w.recv(&mut b, 0, 9).unwrap();
                assert!(b[..] == pattern(43, n)[1..], "the lent bytes changed");
            }
            w.barrier().unwrap();
            assert_rendezvous_total(u, 1);
        },
    );
}

#[test]
fn scoped_rendezvous_sends_whose_scopes_end_while_they_are_read_arrive_intact() {
    // The receiver posts first and claims each offer as soon as its
    // request arrives; the sender ends each scope at once: the end and
    // the claim race (move first, or wait for the reader), and the
    // buffer is overwritten right after.
    run_ranks_with(
        2,
        "scoped_rendezvous_sends_whose_scopes_end_while_they_are_read_arrive_intact",
        &[],
        &[("SHMPI_CMA", "always"), ("SHMPI_CMA_THRESHOLD", "16384")],
        |u| {
            let w = u.world();
            let sizes = [16 << 10, (64 << 10) + 7, 1 << 20, (2 << 20) + 1];
            let mut buf = vec![0u8; 2 << 21];
            for round in 0..48u64 {
                let n = sizes[round as usize % sizes.len()];
                let tag = round as i32;
                if w.rank() == 0 {
                    buf[..n].copy_from_slice(&pattern(round, n));
                    w.barrier().unwrap();
                    shmpi::comm::scope(|s| {
                        std::mem::forget(s.isend(&w, &buf[..n], 1, tag).unwrap());
                    });
                    buf[..n].iter_mut().for_each(|b| *b = 0xa5);
                } else {
                    let mut b = vec![0u8; n];
                    let r = w.irecv(&mut b, 0, tag).unwrap();
                    w.barrier().unwrap();
                    r.wait().unwrap();
                    assert!(b == pattern(round, n), "round {round}: {n} bytes differ");
                }
            }
            w.barrier().unwrap();
            assert_rendezvous_total(u, 48);
        },
    );
}

#[test]
fn large_messages_through_the_rings_arrive_intact_with_single_copy_off() {
    run_ranks_with(
        2,
        "large_messages_through_the_rings_arrive_intact_with_single_copy_off",
        &["--ring-size", "262144"],
        // Every fragment of at least 4 KiB copied with non-temporal
        // stores, at every alignment the suite uses.
        &[
            ("SHMPI_CMA", "off"),
            ("SHMPI_EAGER_LIMIT", "4000"),
            ("SHMPI_STREAM_THRESHOLD", "0"),
        ],
        |u| suite(u, Path::Rings),
    );
}

#[test]
fn frames_streamed_to_a_distant_peer_arrive_intact() {
    // Every peer distant and no single copy: every frame of 2 KiB or more
    // (sole or fragment) is written with non-temporal stores, at every
    // alignment the suite uses, through a small ring that wraps often.
    run_ranks_with(
        2,
        "frames_streamed_to_a_distant_peer_arrive_intact",
        &["--ring-size", "262144"],
        &[("SHMPI_CMA", "off"), ("SHMPI_DISTANT", "all")],
        |u| {
            let peer = 1 - u.world().rank() as usize;
            assert!(u.protocols().peers[peer].1, "the peer is distant");
            suite(u, Path::Rings);
            assert_eq!(distant_exchange(u), (0, 0));
        },
    );
}

#[test]
fn refused_single_copy_falls_back_to_the_rings_with_one_line_when_verbose() {
    const NAME: &str = "refused_single_copy_falls_back_to_the_rings_with_one_line_when_verbose";
    if support::is_rank_of(NAME) {
        let u = shmpi::init().expect("init");
        if u.world().size() == 2 {
            suite(&u, Path::Rings);
        }
        u.finalize().expect("finalize");
        return;
    }
    // One line for the job, rank 0's, naming every rank refused.
    for n in [2, 4] {
        let o = launch(
            n,
            NAME,
            &[],
            &[("SHMPI_CMA", "refuse"), ("SHMPI_VERBOSE", "1")],
            TIMEOUT,
        );
        assert_eq!(o.code, Some(0), "job failed\n{}\n{}", o.stdout, o.stderr);
        let lines: Vec<&str> = o
            .stderr
            .lines()
            .filter(|l| l.contains("single copy (CMA)"))
            .collect();
        assert_eq!(lines.len(), 1, "one line for the job:\n{}", o.stderr);
        let l = lines[0];
        assert!(
            l.starts_with(&format!(
                "shmpi: single copy (CMA) refused at {n} of {n} ranks (every rank; "
            )) && l.contains("SHMPI_CMA=refuse")
                && l.contains("through the rings"),
            "{l}"
        );
    }
    // Without SHMPI_VERBOSE (0, or empty as when unset: the launcher
    // passes what the test process has) the fallback is silent.
    for verbose in ["0", ""] {
        let env = [("SHMPI_CMA", "refuse"), ("SHMPI_VERBOSE", verbose)];
        let quiet = launch(2, NAME, &[], &env, TIMEOUT);
        assert_eq!(quiet.code, Some(0), "{}", quiet.stderr);
        assert!(!quiet.stderr.contains("single copy"), "{}", quiet.stderr);
    }
}

#[test]
fn dropping_a_rendezvous_send_waits_until_the_receiver_has_the_bytes() {
    run_ranks_with(
        2,
        "dropping_a_rendezvous_send_waits_until_the_receiver_has_the_bytes",
        &[],
        &[("SHMPI_CMA_THRESHOLD", "65536")],
        |u| {
            let w = u.world();
            let n = 1 << 20;
            if w.rank() == 0 {
                let mut buf = pattern(5, n);
                w.barrier().unwrap();
                let r = w.isend(&buf, 1, 3).unwrap();
                // The borrow ends with the request: dropping it must not
                // return before the receiver has read the buffer.
                drop(r);
                buf.iter_mut().for_each(|b| *b = 0);
                w.barrier().unwrap();
            } else {
                let mut b = vec![0u8; n];
                let r = w.irecv(&mut b, 0, 3).unwrap();
                w.barrier().unwrap();
                r.wait().unwrap();
                w.barrier().unwrap();
                assert!(b == pattern(5, n), "the sender reused its buffer too early");
            }
            assert_rendezvous_total(u, 1);
        },
    );
}

#[test]
fn a_rendezvous_from_a_freed_buffer_fails_the_receive_and_never_hangs_the_sender() {
    run_ranks_with(
        2,
        "a_rendezvous_from_a_freed_buffer_fails_the_receive_and_never_hangs_the_sender",
        &[],
        &[],
        |u| {
            if !single_copy_everywhere(u) {
                println!("single copy unavailable here: nothing to read from");
                return;
            }
            let w = u.world();
            w.set_errhandler(shmpi::ErrHandler::Return);
            let n = 4 << 20;
            if w.rank() == 0 {
                // Memory of its own mapping, unmapped on drop: a leaked
                // request then points the receiver at nothing.
                let mut m = memmap2::MmapMut::map_anon(n).unwrap();
                m.copy_from_slice(&pattern(9, n));
                let r = w.isend(&m[..], 1, 4).unwrap();
                std::mem::forget(r);
                drop(m);
                w.barrier().unwrap();
                // The receiver acked: a later message still gets through.
                w.send(&[7u8], 1, 5).unwrap();
            } else {
                w.barrier().unwrap();
                let mut b = vec![0u8; n];
                let e = w.recv(&mut b, 0, 4).unwrap_err();
                assert_eq!(e.class(), ErrorClass::Other, "{e}");
                assert!(e.to_string().contains("single-copy read"), "{e}");
                let mut one = [0u8];
                w.recv(&mut one, 0, 5).unwrap();
                assert_eq!(one, [7]);
            }
        },
    );
}

/// A blocking send of `n` bytes (`pattern(seed)`) from rank 0 to rank 1
/// and one back (`pattern(seed + 1)`), each checked.
fn round_trip(w: &shmpi::Communicator, n: usize, seed: u64) {
    if w.rank() == 0 {
        w.send(&pattern(seed, n), 1, 1).unwrap();
        let mut b = vec![0u8; n];
        w.recv(&mut b, 1, 2).unwrap();
        assert!(
            b == pattern(seed + 1, n),
            "{n} B back differs (seed {seed})"
        );
    } else {
        let mut b = vec![0u8; n];
        w.recv(&mut b, 0, 1).unwrap();
        assert!(b == pattern(seed, n), "{n} B differs (seed {seed})");
        w.send(&pattern(seed + 1, n), 0, 2).unwrap();
    }
}

/// Blocking sends of 8 KiB and 32 KiB, each way, intact; returns this
/// rank's rendezvous counts after them.
fn distant_exchange(u: &shmpi::Universe) -> (u64, u64) {
    let w = u.world();
    let before = u.rendezvous_counts();
    for (i, &n) in [8 << 10, 32 << 10, (32 << 10) + 3].iter().enumerate() {
        round_trip(&w, n, 100 + 2 * i as u64);
    }
    w.barrier().unwrap();
    let after = u.rendezvous_counts();
    (after.0 - before.0, after.1 - before.1)
}

#[test]
fn messages_to_a_distant_peer_go_by_rendezvous_from_its_threshold() {
    // Every peer distant (no probe); blocking sends otherwise on the ring.
    run_ranks_with(
        2,
        "messages_to_a_distant_peer_go_by_rendezvous_from_its_threshold",
        &[],
        &[
            ("SHMPI_DISTANT", "all"),
            ("SHMPI_CMA_BLOCKING", "0"),
            ("SHMPI_DISTANT_RENDEZVOUS", "16384"),
        ],
        |u| {
            let p = u.protocols();
            let peer = 1 - u.world().rank() as usize;
            assert_eq!(p.distant_mode, "all");
            assert_eq!(p.distant_from, Some(16384));
            assert_eq!(p.peers[peer], (None, true), "{:?}", p.peers);
            assert!(!p.peers[1 - peer].1, "a rank is not distant from itself");
            let (sent, received) = distant_exchange(u);
            if u.single_copy() == SingleCopy::Usable {
                // The two messages of 32 KiB and more, not the 8 KiB one.
                assert_eq!((sent, received), (2, 2));
            } else {
                assert_eq!((sent, received), (0, 0));
            }
        },
    );
}

#[test]
fn a_peer_whose_ring_copies_slow_down_turns_distant_while_the_job_runs() {
    // Every timed copy into the ring counts as slow (SHMPI_DISTANT_SLOW far
    // above any rate): once the small ring has been round, two timed
    // samples of 256 KiB (one message in four is timed) make the peer
    // distant, and the later ones go by rendezvous
    // where single copy is usable. Blocking sends otherwise on the ring.
    run_ranks_with(
        2,
        "a_peer_whose_ring_copies_slow_down_turns_distant_while_the_job_runs",
        &["--ring-size", "262144"],
        &[
            ("SHMPI_CMA_BLOCKING", "0"),
            ("SHMPI_DISTANT_SLOW", "1000000000000"),
            // A mark no hand-off reaches: near at the start, followed
            // on every CPU (Intel's row sets none, and follows nothing).
            ("SHMPI_DISTANT_NS", "4000000000"),
        ],
        |u| {
            let w = u.world();
            let peer = 1 - w.rank() as usize;
            let (probed, _) = u.protocols().peers[peer];
            for i in 0..24u64 {
                round_trip(&w, (256 << 10) + 1, 2 * i);
            }
            w.barrier().unwrap();
            let now = u.protocols().peers[peer].1;
            match probed {
                // The probe ran, so the placement is followed.
                Some(_) => {
                    assert!(now, "the peer did not turn distant");
                    if u.single_copy() == SingleCopy::Usable {
                        let (sent, received) = u.rendezvous_counts();
                        assert!(sent > 0 && received > 0, "{sent} sent, {received} received");
                    }
                }
                // A probe given up (a busy machine): nothing is followed.
                None => assert!(!now, "distant without a probe"),
            }
        },
    );
}

/// `SHMPI_DISTANT_WATCH` sets the smallest message timed: 16 KiB
/// messages turn a peer whose copies are all slow distant when it is 16
/// KiB, and are never timed (the verdict stays the probe's) when it is 64
/// KiB. 200 round trips: the 256 KiB ring is round after 16 messages, and
/// two samples of 256 KiB take 128 more (one in four timed).
fn watch_case(name: &str, watch: &str, followed: bool) {
    run_ranks_with(
        2,
        name,
        &["--ring-size", "262144"],
        &[
            ("SHMPI_CMA_BLOCKING", "0"),
            ("SHMPI_DISTANT_SLOW", "1000000000000"),
            // A mark no hand-off reaches: near at the start, followed
            // on every CPU (Intel's row sets none, and follows nothing).
            ("SHMPI_DISTANT_NS", "4000000000"),
            ("SHMPI_DISTANT_WATCH", watch),
        ],
        |u| {
            let w = u.world();
            let peer = 1 - w.rank() as usize;
            let p = u.protocols();
            assert_eq!(p.watch_min.to_string(), watch);
            let (probed, at_start) = p.peers[peer];
            for i in 0..200u64 {
                round_trip(&w, (16 << 10) + 5, 2 * i);
            }
            w.barrier().unwrap();
            let now = u.protocols().peers[peer].1;
            match probed {
                Some(_) if followed => assert!(now, "the peer did not turn distant"),
                _ => assert_eq!(now, at_start, "a verdict from untimed messages"),
            }
        },
    );
}

#[test]
fn messages_from_the_watch_minimum_follow_the_placement() {
    watch_case(
        "messages_from_the_watch_minimum_follow_the_placement",
        "16384",
        true,
    );
}

#[test]
fn messages_below_the_watch_minimum_do_not_follow_it() {
    watch_case(
        "messages_below_the_watch_minimum_do_not_follow_it",
        "65536",
        false,
    );
}

#[test]
fn no_peer_is_distant_under_none() {
    run_ranks_with(
        2,
        "no_peer_is_distant_under_none",
        &[],
        &[("SHMPI_DISTANT", "none"), ("SHMPI_CMA_BLOCKING", "0")],
        |u| {
            let p = u.protocols();
            assert_eq!(p.distant_mode, "none");
            assert_eq!(p.distant_from, None);
            assert!(
                p.peers.iter().all(|&(ns, d)| ns.is_none() && !d),
                "{:?}",
                p.peers
            );
            assert_eq!(distant_exchange(u), (0, 0), "a rendezvous to a near peer");
        },
    );
}

#[test]
fn the_placement_probe_measures_every_peer_or_none() {
    // Two ranks: probed where the machine has two CPUs. The verdict
    // follows the measured time; a probe given up (a deadline missed on a
    // busy machine) leaves every peer unmeasured and near.
    run_ranks_with(
        2,
        "the_placement_probe_measures_every_peer_or_none",
        &[],
        &[("SHMPI_CMA_BLOCKING", "0")],
        |u| {
            let p = u.protocols();
            let me = u.world().rank() as usize;
            assert_eq!(p.distant_mode, "auto");
            assert_eq!(p.peers[me], (None, false));
            let (ns, distant) = p.peers[1 - me];
            match ns {
                Some(ns) => {
                    assert!(support::online_cpus() >= 2);
                    assert!(ns > 0, "a hand-off of 0 ns");
                    let far = p.distant_ns.is_some_and(|limit| ns > limit);
                    assert_eq!(distant, far, "{ns} ns");
                }
                None => assert!(!distant),
            }
            let (sent, _) = distant_exchange(u);
            if !distant || u.single_copy() != SingleCopy::Usable {
                assert_eq!(sent, 0);
            }
        },
    );
}

/// `SHMPI_DISTANT_NS` is the probe's mark: at 1 ns every measured peer
/// is distant, at 0 none is, whatever the hand-off (a peer left
/// unmeasured by a probe given up is near either way).
fn mark_case(name: &str, mark: &str, expect: Option<u32>) {
    run_ranks_with(
        2,
        name,
        &[],
        &[("SHMPI_DISTANT_NS", mark), ("SHMPI_CMA_BLOCKING", "0")],
        |u| {
            let p = u.protocols();
            assert_eq!(p.distant_ns, expect);
            let (ns, distant) = p.peers[1 - u.world().rank() as usize];
            assert_eq!(distant, ns.is_some() && expect.is_some(), "{ns:?} ns");
        },
    );
}

#[test]
fn a_probe_mark_of_1_ns_makes_every_measured_peer_distant() {
    mark_case(
        "a_probe_mark_of_1_ns_makes_every_measured_peer_distant",
        "1",
        Some(1),
    );
}

#[test]
fn a_probe_mark_of_0_makes_no_peer_distant() {
    mark_case("a_probe_mark_of_0_makes_no_peer_distant", "0", None);
}

#[test]
fn scoped_isends_to_a_near_peer_go_by_rendezvous_from_shmpi_cma_scoped() {
    // No peer distant; blocking sends on the ring; scoped isends by
    // revocable rendezvous from 24 KiB: the 32 KiB ones, not the 16 KiB
    // ones, each checked byte for byte.
    run_ranks_with(
        2,
        "scoped_isends_to_a_near_peer_go_by_rendezvous_from_shmpi_cma_scoped",
        &[],
        &[
            ("SHMPI_DISTANT", "none"),
            ("SHMPI_CMA_BLOCKING", "0"),
            ("SHMPI_CMA_SCOPED", "24576"),
        ],
        |u| {
            let w = u.world();
            assert_eq!(u.protocols().cma_scoped, Some(24 << 10));
            let sizes = [16 << 10, (32 << 10) + 3, 24 << 10, (24 << 10) - 1];
            for (i, &n) in sizes.iter().enumerate() {
                let tag = i as i32;
                if w.rank() == 0 {
                    let buf = pattern(i as u64, n + 1);
                    shmpi::comm::scope(|s| {
                        s.isend(&w, &buf[1..], 1, tag).unwrap().wait().unwrap();
                    });
                } else {
                    let mut b = vec![0u8; n];
                    w.recv(&mut b, 0, tag).unwrap();
                    assert!(b[..] == pattern(i as u64, n + 1)[1..], "{n} bytes differ");
                }
            }
            w.barrier().unwrap();
            let (sent, received) = u.rendezvous_counts();
            let usable = u.single_copy() == SingleCopy::Usable;
            let expect = if !usable {
                0
            } else if w.rank() == 0 {
                2
            } else {
                0
            };
            assert_eq!(sent, expect, "sent by rendezvous");
            let expect_in = if usable && w.rank() == 1 { 2 } else { 0 };
            assert_eq!(received, expect_in, "received by rendezvous");
        },
    );
}

#[test]
fn no_probe_when_the_ranks_outnumber_the_cpus() {
    // Spinning ranks would wait for each other to be scheduled.
    let n = support::online_cpus() + 1;
    if n > 8 {
        println!("{} CPUs: too many ranks for this test", n - 1);
        return;
    }
    run_ranks_with(
        n,
        "no_probe_when_the_ranks_outnumber_the_cpus",
        &[],
        &[],
        |u| {
            let p = u.protocols();
            assert_eq!(p.distant_mode, "auto");
            assert_eq!(p.peers.len(), n);
            assert!(
                p.peers.iter().all(|&(ns, d)| ns.is_none() && !d),
                "{:?}",
                p.peers
            );
        },
    );
}

/// Blocking sends (or, with `isend`, plain `isend`s waited for at once)
/// of `n` bytes from rank 0 to rank 1 under `SHMPI_CMA_SLOW_READ=mark`
/// (Intel's thresholds set: rendezvous from 8 KiB, a blocking send's
/// shared from 32 KiB, an `isend`'s from 64 KiB), each checked whole at
/// the receiver; where single copy is usable, `plain` of them by a plain
/// rendezvous and `shared` by a rendezvous whose copy the receiver shared
/// (the rest through the ring).
fn slow_read_job(
    name: &str,
    mark: &str,
    n: usize,
    isend: bool,
    sends: u64,
    plain: u64,
    shared: u64,
) {
    run_ranks_with(
        2,
        name,
        &[],
        &[
            ("SHMPI_CMA", "auto"),
            ("SHMPI_CMA_BLOCKING", "8192"),
            ("SHMPI_CMA_THRESHOLD", "8192"),
            ("SHMPI_CMA_SPLIT", "65536"),
            ("SHMPI_CMA_SPLIT_BLOCKING", "32768"),
            ("SHMPI_CMA_SLOW_READ", mark),
        ],
        |u| {
            let w = u.world();
            // The receiver learns its clock's rate 2 ms after its
            // transport began; reads before are not timed.
            std::thread::sleep(std::time::Duration::from_millis(20));
            w.barrier().unwrap();
            for i in 0..sends {
                let off = (i % 7) as usize;
                if w.rank() == 0 {
                    let d = unaligned(100 + i, n, off);
                    if isend {
                        w.isend(&d[off..off + n], 1, 3).unwrap().wait().unwrap();
                    } else {
                        w.send(&d[off..off + n], 1, 3).unwrap();
                    }
                } else {
                    let mut b = vec![0u8; n];
                    w.recv(&mut b, 0, 3).unwrap();
                    assert!(b == pattern(100 + i, n), "message {i} arrived corrupted");
                }
            }
            w.barrier().unwrap();
            if u.single_copy() == SingleCopy::Usable {
                let (sent, received) = u.rendezvous_counts();
                let by = if w.rank() == 0 { sent } else { received };
                assert_eq!(
                    by,
                    plain + shared,
                    "by rendezvous, SHMPI_CMA_SLOW_READ={mark}"
                );
                if w.rank() == 1 {
                    assert_eq!(u.split_counts().offered, shared, "shared copies");
                } else if shared > 0 {
                    // The waiting sender takes the offers (a late one is
                    // revoked, so not every one need be written).
                    assert!(u.split_counts().written > 0, "the sender wrote no half");
                }
            }
        },
    );
}

/// Sends of `sends` messages whose every read is slow: how many go by
/// plain rendezvous before and between the stretches on the detour, as
/// the policy (`Verdicts`, fed slow verdicts) says.
fn plain_sends_when_every_read_is_slow(sends: u64) -> u64 {
    let mut v = shmpi::transport::fresh::Verdicts::default();
    let mut plain = 0;
    for _ in 0..sends {
        if !v.take_detour() {
            plain += 1;
            v.note(true);
        }
    }
    assert!(plain > 0 && plain < sends);
    plain
}

/// A blocking send's rendezvous from `SHMPI_CMA_BLOCKING` up to
/// `SHMPI_CMA_SPLIT_BLOCKING` has its read timed by the receiver
/// (`transport::fresh`); slow reads, as from buffers written just before
/// their send, send the sender's next sends of those sizes on a detour
/// for a while: below `fresh::SHARE_MIN` through the ring. With every
/// read counted slow (`SHMPI_CMA_SLOW_READ=1`) the sender goes by
/// rendezvous exactly as often as the policy says, and every message
/// arrives whole across the switches.
#[test]
fn slow_single_copy_reads_send_a_blocking_senders_next_messages_through_the_ring() {
    let plain = plain_sends_when_every_read_is_slow(40);
    slow_read_job(
        "slow_single_copy_reads_send_a_blocking_senders_next_messages_through_the_ring",
        "1",
        8192 + 1000,
        false,
        40,
        plain,
        0,
    );
}

/// From `fresh::SHARE_MIN` the detour is a shared copy: the receiver
/// offers the sender the back half although the message is below the
/// shared copy's size.
#[test]
fn slow_single_copy_reads_of_16_kib_and_more_ask_for_a_shared_copy() {
    let plain = plain_sends_when_every_read_is_slow(40);
    slow_read_job(
        "slow_single_copy_reads_of_16_kib_and_more_ask_for_a_shared_copy",
        "1",
        (20 << 10) + 3,
        false,
        40,
        plain,
        40 - plain,
    );
}

/// With reads never slow (a mark of 1 s at 8 KiB) every such send goes
/// by plain rendezvous.
#[test]
fn fast_single_copy_reads_keep_a_blocking_sender_on_the_rendezvous() {
    slow_read_job(
        "fast_single_copy_reads_keep_a_blocking_sender_on_the_rendezvous",
        "1000000000",
        (20 << 10) + 3,
        false,
        40,
        40,
        0,
    );
}

/// With reads not timed (`SHMPI_CMA_SLOW_READ=0`) every such send goes by
/// plain rendezvous.
#[test]
fn untimed_single_copy_reads_keep_a_blocking_sender_on_the_rendezvous() {
    slow_read_job(
        "untimed_single_copy_reads_keep_a_blocking_sender_on_the_rendezvous",
        "0",
        8192 + 1000,
        false,
        40,
        40,
        0,
    );
}

/// A send that does not wait (a plain `isend`; C's `MPI_Isend` alike)
/// below the shared copy's size is judged too, and its detour is the
/// ring, whatever its length: with every read slow, a 40 KiB `isend` goes
/// by rendezvous as often as the policy says and never asks for a shared
/// copy.
#[test]
fn slow_single_copy_reads_send_an_isends_next_messages_through_the_ring() {
    let plain = plain_sends_when_every_read_is_slow(40);
    slow_read_job(
        "slow_single_copy_reads_send_an_isends_next_messages_through_the_ring",
        "1",
        (40 << 10) + 5,
        true,
        40,
        plain,
        0,
    );
}

/// The suite on the thresholds of `row` of `transport::cma::Defaults`
/// (`SHMPI_CPU_DEFAULTS`), with every peer near or every peer distant
/// (`SHMPI_DISTANT`): the paths that kind of CPU takes, whatever CPU
/// runs the tests.
fn on_row(name: &str, row: &str, distant: &str) {
    run_ranks_with(
        2,
        name,
        &[],
        &[("SHMPI_CPU_DEFAULTS", row), ("SHMPI_DISTANT", distant)],
        |u| {
            let p = u.protocols();
            assert_eq!(p.cpu_row, row);
            assert_eq!(p.distant_mode, distant);
            suite(u, Path::SingleCopy);
        },
    );
}

#[test]
fn large_messages_arrive_intact_on_intels_paths() {
    on_row(
        "large_messages_arrive_intact_on_intels_paths",
        "intel",
        "none",
    );
}

#[test]
fn large_messages_arrive_intact_on_amd_family_23s_paths() {
    on_row(
        "large_messages_arrive_intact_on_amd_family_23s_paths",
        "amd-family-23",
        "none",
    );
}

#[test]
fn large_messages_arrive_intact_on_amd_family_25s_paths_on_one_ccd() {
    on_row(
        "large_messages_arrive_intact_on_amd_family_25s_paths_on_one_ccd",
        "amd-family-25",
        "none",
    );
}

#[test]
fn large_messages_arrive_intact_on_amd_family_25s_paths_across_ccds() {
    on_row(
        "large_messages_arrive_intact_on_amd_family_25s_paths_across_ccds",
        "amd-family-25",
        "all",
    );
}
