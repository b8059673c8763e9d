//! Ring behaviour over heap memory: wrap-around, full and empty, every
//! frame size, and a two-thread stream with checksums. The same properties
//! over segment memory between two processes are in `tests/transport.rs`.
#![cfg(not(loom))]

use shmpi::ring::{footprint, heap_ring, max_payload, Demote, RingReserveError};

/// xorshift64*: a tiny deterministic generator for frame sizes and bytes.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn fill(seq: u64, len: usize) -> Vec<u8> {
    let mut r = Rng(seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    (0..len).map(|_| r.next() as u8).collect()
}

#[test]
fn empty_ring_peeks_none() {
    let (_p, mut c) = heap_ring(256).unwrap();
    assert!(c.peek().is_none());
}

#[test]
fn bad_capacity_is_refused() {
    assert!(heap_ring(100).is_err());
    assert!(heap_ring(64).is_err());
    assert!(heap_ring(128).is_err(), "less than two paired frames");
}

#[test]
fn the_smallest_ring_carries_its_largest_payload_again_and_again() {
    let cap = shmpi::ring::MIN_CAPACITY;
    let (mut p, mut c) = heap_ring(cap).unwrap();
    let max = max_payload(cap);
    for seq in 0..10u8 {
        let data = vec![seq; max];
        p.push(&[&data]).unwrap();
        let f = c.peek().expect("the frame is there");
        assert_eq!(f.bytes(), &data[..]);
        f.release();
    }
}

#[test]
fn frame_too_large_is_refused_and_ring_unchanged() {
    let (mut p, mut c) = heap_ring(256).unwrap();
    let max = max_payload(256);
    assert_eq!(
        p.push(&[&vec![0u8; max + 1]]),
        Err(RingReserveError::TooLarge(max))
    );
    p.push(&[&[7u8; 3]]).unwrap();
    let f = c.peek().unwrap();
    assert_eq!(f.bytes(), &[7, 7, 7]);
    f.release();
}

#[test]
fn full_ring_reports_too_few_bytes_and_loses_nothing() {
    let (mut p, mut c) = heap_ring(1024).unwrap();
    let mut n = 0u8;
    loop {
        match p.push(&[&[n; 20]]) {
            Ok(()) => n += 1,
            Err(RingReserveError::TooFewBytes(_)) => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(
        n >= 7,
        "a 256-byte ring holds at least 7 frames of 20 bytes, got {n}"
    );
    for i in 0..n {
        let f = c.peek().expect("frame present");
        assert_eq!(f.bytes(), &[i; 20]);
        f.release();
    }
    assert!(c.peek().is_none());
    p.push(&[&[99; 20]]).unwrap();
    assert_eq!(c.peek().unwrap().bytes(), &[99; 20]);
}

#[test]
fn every_frame_size_wraps_around_intact() {
    let cap = 512;
    let (mut p, mut c) = heap_ring(cap).unwrap();
    let mut seq = 0u64;
    for len in 0..=max_payload(cap) {
        // Two frames of each size, so every offset alignment meets the end.
        for _ in 0..2 {
            let data = fill(seq, len);
            p.push(&[&data]).unwrap();
            let f = c.peek().expect("frame present");
            assert_eq!(f.len(), len);
            assert_eq!(f.bytes(), &data[..], "frame {seq} of {len} bytes");
            f.release();
            seq += 1;
        }
    }
    assert!(c.peek().is_none());
}

#[test]
fn gather_push_and_partial_read_agree() {
    let (mut p, mut c) = heap_ring(1024).unwrap();
    p.push(&[b"head", b"", b"er-and-payload"]).unwrap();
    let f = c.peek().unwrap();
    let mut part = [0u8; 6];
    f.read(4, &mut part);
    assert_eq!(&part, b"er-and");
    assert_eq!(f.bytes(), b"header-and-payload");
    f.release();
}

#[test]
fn two_threads_random_sizes_nothing_lost_reordered_or_corrupted() {
    two_threads(Demote::OFF, 0x1234_5678);
}

/// The same stream with every frame of up to 1 KiB demoted after a pause
/// (forced: where the CPU has no `CLDEMOTE` the instruction is a NOP, and
/// the pause gating and the bounds still run). The producer pauses now and
/// then, so both branches of the gate are taken.
#[test]
fn two_threads_with_demotion_forced_lose_nothing() {
    two_threads(Demote::forced_up_to(1024), 0x8765_4321);
}

/// The same with claims only (no demotion), where the CPU can claim, and
/// the claims given after every frame, as a rank with nothing else to
/// do gives them.
#[test]
fn two_threads_with_claims_lose_nothing() {
    two_threads(Demote::claims_up_to(1024), 0x0bad_cafe);
}

fn two_threads(demote: Demote, seed: u64) {
    const COUNT: u64 = if cfg!(debug_assertions) {
        20_000
    } else {
        200_000
    };
    let cap = 4096;
    let (mut p, mut c) = heap_ring(cap).unwrap();
    p.set_demote(demote);
    let max = max_payload(cap);
    let producer = std::thread::spawn(move || {
        let mut rng = Rng(seed);
        for seq in 0..COUNT {
            if demote.is_on() && seq % 64 == 0 {
                std::thread::yield_now();
            }
            let len = (rng.next() as usize % (max / 3)).max(8);
            let mut data = fill(seq, len);
            data[..8].copy_from_slice(&seq.to_le_bytes());
            let sum: u64 = data.iter().map(|&b| b as u64).sum();
            loop {
                match p.push(&[&data, &sum.to_le_bytes()]) {
                    Ok(()) => break,
                    Err(RingReserveError::TooFewBytes(_)) => std::thread::yield_now(),
                    Err(e) => panic!("{e}"),
                }
            }
            // The hints (a claim of the next frame's lines, a long
            // frame's demotion) given at once: they touch lines the
            // consumer may be reading, which must change nothing.
            p.flush_hints();
        }
    });
    let mut expect = 0u64;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while expect < COUNT {
        assert!(
            std::time::Instant::now() < deadline,
            "consumer stalled at {expect}"
        );
        let Some(f) = c.peek() else {
            std::thread::yield_now();
            continue;
        };
        let b = f.bytes();
        let (data, sum) = b.split_at(b.len() - 8);
        assert_eq!(u64::from_le_bytes(data[..8].try_into().unwrap()), expect);
        let got: u64 = data.iter().map(|&b| b as u64).sum();
        assert_eq!(
            got,
            u64::from_le_bytes(sum.try_into().unwrap()),
            "checksum of {expect}"
        );
        f.release();
        expect += 1;
    }
    producer.join().unwrap();
    assert!(c.peek().is_none());
}

/// Payload made of words that look exactly like data-frame headers of the
/// lap after `lap` (the lap tag, lap number + 1, in bits 40..64, see
/// `ring/frame.rs`): if a frame of the next lap ever started on this stale
/// payload without a guard, the consumer would read one of these as a
/// frame.
fn header_lookalikes(len: usize, fake_len: u32, lap: u64) -> Vec<u8> {
    let word = ((lap + 2) << 40) | (1u64 << 32) | fake_len as u64; // kind 1 (data)
    (0..len).map(|i| word.to_le_bytes()[i % 8]).collect()
}

#[test]
fn frames_starting_on_stale_payload_of_earlier_laps_are_never_misread() {
    // Large frames leave header look-alikes at many frame positions; then
    // frames of other sizes start on them, lap after lap, in one thread
    // (the consumer keeps up) and with the ring filling up.
    const SIZES: [usize; 10] = [1000, 8, 300, 1500, 56, 120, 1900, 0, 64, 700];
    let len_of = |k: u64| SIZES[k as usize % SIZES.len()] + k as usize % 3 * 8;
    // Takes frame `k` if one is there, checking its number and length.
    let take_checked = |c: &mut shmpi::ring::Consumer, k: u64| {
        let Some(f) = c.peek() else { return false };
        let mut id = [0u8; 8];
        f.read(0, &mut id);
        assert_eq!(u64::from_le_bytes(id), k, "frame order or a misread frame");
        assert_eq!(f.len(), 8 + len_of(k), "frame {k} has the wrong length");
        f.release();
        true
    };
    const CAP: u64 = 4096;
    let (mut p, mut c) = heap_ring(CAP as usize).unwrap();
    let mut got = 0u64;
    // The producer's position, followed as the ring moves it (a frame that
    // would cross the end of the lap starts the next one), for the lap.
    let mut pos = 0u64;
    for round in 0..400u64 {
        let fp = shmpi::ring::footprint(8 + len_of(round)) as u64;
        if fp > CAP - pos % CAP {
            pos += CAP - pos % CAP;
        }
        let data = header_lookalikes(len_of(round), (round % 50) as u32, pos / CAP);
        pos += fp;
        while p.push(&[&round.to_le_bytes(), &data]).is_err() {
            // Full: take one frame.
            assert!(take_checked(&mut c, got), "a full ring has a frame");
            got += 1;
        }
        if round % 7 == 0 {
            // Drain everything: the consumer then waits at the next
            // position, which must read empty.
            while take_checked(&mut c, got) {
                got += 1;
            }
            assert_eq!(got, round + 1, "an empty ring showed a frame, or lost one");
        }
    }
    while take_checked(&mut c, got) {
        got += 1;
    }
    assert_eq!(got, 400);
}

#[test]
fn copy_bytes_copies_every_small_and_large_length_exactly() {
    // The inline small copies (two overlapping pieces) at every length up
    // to past the memcpy cut-over (64 bytes), from and to unaligned
    // offsets, front to back and (`copy_bytes_back`) back to front.
    let src: Vec<u8> = (0..200u32).map(|i| (i * 7 + 3) as u8).collect();
    for len in 0..=140 {
        for (from, to) in [(0, 0), (1, 3), (5, 0), (7, 9)] {
            for back in [false, true] {
                let mut dst = [0xeeu8; 160];
                let (d, s) = (&mut dst[to..to + len], &src[from..from + len]);
                if back {
                    shmpi::ring::copy_bytes_back(d, s);
                } else {
                    shmpi::ring::copy_bytes(d, s);
                }
                assert_eq!(&dst[to..to + len], s, "length {len}, back {back}");
                assert!(
                    dst[..to].iter().all(|&b| b == 0xee),
                    "wrote before, length {len}, back {back}"
                );
                assert!(
                    dst[to + len..].iter().all(|&b| b == 0xee),
                    "wrote after, length {len}, back {back}"
                );
            }
        }
    }
}

/// `push_quick` writes a frame where it fits before the region's end with
/// room by the cached head, and otherwise writes nothing and says so (at
/// the end of the region, when full, or too large), leaving the general
/// `reserve` path to wrap or wait: over many laps, every frame either way
/// arrives intact and in order.
#[test]
fn quick_pushes_decline_at_the_end_and_when_full_and_lose_nothing() {
    let (mut p, mut c) = heap_ring(1024).unwrap();
    let head = [u64::from_le_bytes(*b"HEADWORD")];
    assert!(
        !p.push_quick(&head, &vec![0; max_payload(1024)]),
        "too large"
    );
    let (mut quick, mut declined, mut got) = (0, 0, 0u64);
    for seq in 0..2000u64 {
        let data = fill(seq, (seq as usize * 37) % 200);
        if p.push_quick(&head, &data) {
            quick += 1;
        } else {
            declined += 1;
            // The general path: wraps, or the ring is full and the
            // consumer drains it first.
            while p.push(&[b"HEADWORD", &data]).is_err() {
                let f = c.peek().expect("a full ring has frames");
                assert_eq!(&f.bytes()[..8], b"HEADWORD");
                assert_eq!(&f.bytes()[8..], &fill(got, f.len() - 8)[..]);
                f.release();
                got += 1;
            }
        }
        // Drain now and then, so the ring is sometimes full, sometimes not.
        if seq % 7 == 0 {
            while let Some(f) = c.peek() {
                assert_eq!(&f.bytes()[..8], b"HEADWORD");
                assert_eq!(&f.bytes()[8..], &fill(got, f.len() - 8)[..]);
                f.release();
                got += 1;
            }
        }
    }
    while let Some(f) = c.peek() {
        assert_eq!(&f.bytes()[8..], &fill(got, f.len() - 8)[..]);
        f.release();
        got += 1;
    }
    assert_eq!(got, 2000);
    assert!(
        quick > 1000 && declined > 10,
        "{quick} quick, {declined} declined"
    );
}

/// `peek_awaited` finds a frame of the awaited length with one comparison,
/// tells an empty ring from another frame (another length, a wrap
/// marker), and refuses a token of an earlier position; the general
/// `peek` then reads what is there, nothing lost.
#[test]
fn awaited_frames_are_found_and_anything_else_is_left_to_peek() {
    use shmpi::ring::AwaitedFront;
    let (mut p, mut c) = heap_ring(1024).unwrap();
    let want = c.awaited(16).expect("a 16-byte frame fits at the start");
    assert!(matches!(c.peek_awaited(&want), AwaitedFront::Empty));
    p.push(&[&fill(1, 16)]).unwrap();
    match c.peek_awaited(&want) {
        AwaitedFront::Frame(f) => {
            assert_eq!(f.bytes(), &fill(1, 16)[..]);
            f.release();
        }
        other => panic!("{other:?}"),
    }
    // The token is of the old position now.
    p.push(&[&fill(2, 16)]).unwrap();
    assert!(matches!(c.peek_awaited(&want), AwaitedFront::Other));
    let want = c.awaited(16).unwrap();
    assert!(matches!(c.peek_awaited(&want), AwaitedFront::Frame(_)));
    c.peek().unwrap().release();
    // Another length in front: left for `peek`.
    p.push(&[&fill(3, 17)]).unwrap();
    let want = c.awaited(16).unwrap();
    assert!(matches!(c.peek_awaited(&want), AwaitedFront::Other));
    let f = c.peek().unwrap();
    assert_eq!(f.bytes(), &fill(3, 17)[..]);
    f.release();
    // Around the ring many times, with wraps: every awaited frame is
    // found, every wrap marker is `Other`, and `peek` skips it.
    let (mut found, mut wraps) = (0, 0);
    for seq in 10..400u64 {
        // Footprints of 128, 256 and 384 bytes: laps that do not end
        // exactly at the region's end.
        let len = 40 + (seq as usize % 3) * 120;
        p.push(&[&fill(seq, len)]).unwrap();
        match c.awaited(len).map(|want| c.peek_awaited(&want)) {
            Some(AwaitedFront::Frame(f)) => {
                assert_eq!(f.bytes(), &fill(seq, len)[..]);
                f.release();
                found += 1;
                continue;
            }
            // Past the region's end (no token), or a wrap marker in front.
            None | Some(AwaitedFront::Other) => wraps += 1,
            Some(AwaitedFront::Empty) => panic!("frame {seq} missing"),
        }
        // `peek` skips the marker.
        let f = c.peek().expect("the frame is there");
        assert_eq!(f.bytes(), &fill(seq, len)[..]);
        f.release();
        found += 1;
    }
    assert_eq!(found, 390);
    assert!(wraps > 0, "the ring wrapped");
    // Longer than the ring allows: no token.
    assert!(c.awaited(max_payload(1024) + 1).is_none());
}

/// A token of one consumer is refused by another at the same position
/// (its bounds were tested against another capacity): `Other`, nothing
/// read.
#[test]
fn an_awaited_token_of_another_consumer_is_refused() {
    use shmpi::ring::AwaitedFront;
    let (mut pbig, mut big) = heap_ring(1024).unwrap();
    let (mut psmall, mut small) = heap_ring(256).unwrap();
    for _ in 0..4 {
        pbig.push(&[&[1u8; 8]]).unwrap();
        big.peek().unwrap().release();
        psmall.push(&[&[1u8; 8]]).unwrap();
        small.peek().unwrap().release();
    }
    // Both at position 256: the big ring's token points past the small
    // ring's region.
    let t = big.awaited(8).expect("fits the big ring");
    assert!(matches!(small.peek_awaited(&t), AwaitedFront::Other));
    // And one of equal capacity, at the same position, is refused only
    // when the position differs.
    let (mut p2, mut c2) = heap_ring(1024).unwrap();
    p2.push(&[&[2u8; 8]]).unwrap();
    assert!(matches!(c2.peek_awaited(&t), AwaitedFront::Other));
}

/// With a hot window, a producer that ends its laps early whenever it
/// may (`at_hot_end` → `end_lap_early`) does so while its consumer keeps
/// up (positions jump a whole ring each window) and not while it lags
/// (the laps go on through the ring); in phases of both, with sizes up
/// to frames that straddle the window's end and more than a window long,
/// every frame arrives intact and in order.
#[test]
fn a_hot_window_ends_laps_early_while_the_consumer_keeps_up_and_loses_nothing() {
    const CAP: usize = 64 << 10;
    const HOT: usize = 4 << 10;
    let (mut p, mut c) = heap_ring(CAP).unwrap();
    p.set_hot(HOT);
    let mut rng = Rng(7);
    let (mut sent, mut got, mut ends) = (0u64, 0u64, 0u64);
    let take = |c: &mut shmpi::ring::Consumer, got: &mut u64| -> bool {
        let Some(f) = c.peek() else {
            return false;
        };
        assert_eq!(f.bytes(), &fill(*got, f.len())[..], "frame {got}");
        f.release();
        *got += 1;
        true
    };
    for phase in 0..12 {
        let keep_up = phase % 2 == 0;
        let start = c.position();
        let bytes_before = sent;
        for _ in 0..600 {
            // Mostly small; while lagging, now and then a frame near or
            // past the window.
            let len = match rng.next() % 16 {
                0 if !keep_up => (rng.next() % 6000) as usize,
                0..=3 => (rng.next() % 700) as usize,
                _ => (rng.next() % 40) as usize,
            };
            let data = fill(sent, len);
            while p.push(&[&data]).is_err() {
                assert!(take(&mut c, &mut got), "a full ring has frames");
            }
            sent += 1;
            // Frames before the one just pushed wait in the ring.
            let lagging = p.position() - c.position() > footprint(len) as u64;
            if p.at_hot_end() {
                let ended = p.end_lap_early();
                assert!(!(ended && lagging), "a lap ended early while frames waited");
                ends += u64::from(ended);
            }
            if keep_up {
                while take(&mut c, &mut got) {}
            } else if rng.next() % 8 == 0 {
                // Lagging: drain only now and then.
                while take(&mut c, &mut got) {}
            }
        }
        while take(&mut c, &mut got) {}
        assert_eq!(got, sent);
        let laps = (c.position() - start) as usize / CAP;
        if keep_up {
            // 600 frames of at least 64 bytes pass at least 9 windows,
            // and every one of those laps ends early.
            assert!(
                laps >= 8,
                "phase {phase}: {laps} laps for {} frames",
                sent - bytes_before
            );
        }
    }
    assert!(ends >= 48, "{ends} laps ended early");
    // Off: laps go through the whole ring again.
    p.set_hot(0);
    let start = c.position();
    for _ in 0..200 {
        let data = fill(sent, 8);
        p.push(&[&data]).unwrap();
        sent += 1;
        while take(&mut c, &mut got) {}
    }
    assert_eq!(got, sent);
    assert!(c.position() - start < 2 * CAP as u64);
}
