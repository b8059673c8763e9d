//! The transport over a real /dev/shm segment between two processes:
//! random message sizes (sole frames and pipelined fragments, wrapping a
//! small ring many times) arrive complete, in order and uncorrupted.

mod support;

use shmpi::job::bootstrap;
use shmpi::shm::{segment_path, Segment, Split};
use shmpi::transport::{Envelope, Layout, Sent, SplitKind, Transport};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CASE: &str = "random_messages_between_two_processes_arrive_intact_in_order";
const RING: usize = 16 << 10;
const COUNT: u64 = 3000;

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn message(seq: u64) -> Vec<u8> {
    let mut x = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    // Mostly small, sometimes several fragments long.
    let len = match next() % 10 {
        0 => (next() % (5 * RING as u64)) as usize,
        _ => (next() % 300) as usize,
    };
    (0..len).map(|_| next() as u8).collect()
}

fn envelope(seq: u64, sum: u64) -> Envelope {
    let mut e = [0u8; 16];
    e[..8].copy_from_slice(&seq.to_le_bytes());
    e[8..].copy_from_slice(&sum.to_le_bytes());
    Envelope(e)
}

fn send_all(t: &mut Transport, peer: usize, env: &Envelope, data: &[u8], deadline: Instant) {
    if let Sent::Partial(mut out) = t.send(peer, env, data) {
        while !t.resume(&mut out, data) {
            assert!(Instant::now() < deadline, "send stalled");
            t.poll(16, &mut |_| panic!("no traffic expected this way"));
            std::thread::yield_now();
        }
    }
}

/// Prepares `rank`'s transport on a mapped segment and meets the peer.
fn open(seg: Segment, rank: usize) -> (Arc<Segment>, Transport) {
    let layout = Layout::new(2, RING).unwrap();
    let seg = Arc::new(seg);
    let t = Transport::new(seg.clone(), layout, rank).unwrap();
    bootstrap::arrive(&seg, rank, 2, Duration::from_secs(20)).unwrap();
    (seg, t)
}

#[test]
fn random_messages_between_two_processes_arrive_intact_in_order() {
    let deadline = Instant::now() + Duration::from_secs(60);
    if support::is_rank_of(CASE) {
        let path = std::env::var("SHMPI_TEST_SEGMENT").unwrap();
        let job = u64::from_str_radix(&std::env::var("SHMPI_TEST_JOB").unwrap(), 16).unwrap();
        let layout = Layout::new(2, RING).unwrap();
        let seg = Segment::attach(std::path::Path::new(&path), layout.spec(job)).unwrap();
        let (_seg, mut t) = open(seg, 1);
        let mut buf = Vec::new();
        let mut next = 0u64;
        while next < COUNT {
            assert!(Instant::now() < deadline, "receiver stalled at {next}");
            t.poll(64, &mut |m| {
                if m.is_first() {
                    buf.clear();
                }
                assert_eq!(m.offset, buf.len(), "fragment out of order");
                buf.extend_from_slice(m.data);
                if m.is_last() {
                    let seq = u64::from_le_bytes(m.envelope.0[..8].try_into().unwrap());
                    let sum = u64::from_le_bytes(m.envelope.0[8..].try_into().unwrap());
                    assert_eq!(seq, next, "message reordered");
                    assert_eq!(buf.len(), m.total);
                    assert_eq!(fnv(&buf), sum, "message {seq} corrupted");
                    next += 1;
                }
            });
        }
        send_all(&mut t, 0, &envelope(u64::MAX, next), &[], deadline);
        // Stay mapped until the parent has read the reply.
        std::thread::sleep(Duration::from_millis(200));
        return;
    }
    let job = 0x7e57_0000_0000 | std::process::id() as u64;
    let path = segment_path(std::path::Path::new("/dev/shm"), job);
    // Created before the child starts, so its attach finds it.
    let seg = Segment::create(&path, Layout::new(2, RING).unwrap().spec(job)).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([CASE, "--exact", "--nocapture", "--test-threads=1"])
        .env(support::CASE, CASE)
        .env("SHMPI_TEST_SEGMENT", &path)
        .env("SHMPI_TEST_JOB", format!("{job:x}"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The child attaches while the parent waits in `arrive`.
    let (seg, mut t) = open(seg, 0);
    seg.unlink();
    for seq in 0..COUNT {
        let data = message(seq);
        send_all(&mut t, 1, &envelope(seq, fnv(&data)), &data, deadline);
    }
    let mut done = None;
    while done.is_none() {
        assert!(Instant::now() < deadline, "no reply from the receiver");
        if let Ok(Some(st)) = child.try_wait() {
            panic!("receiver exited early: {st}");
        }
        t.poll(8, &mut |m| {
            done = Some(u64::from_le_bytes(m.envelope.0[8..].try_into().unwrap()));
        });
        std::thread::yield_now();
    }
    assert_eq!(done, Some(COUNT));
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("receiver did not exit");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(st.success(), "receiver failed: {st}");
}

#[test]
fn attach_refuses_a_segment_of_another_shape_with_a_named_error() {
    let job = 0x7e58_0000_0000 | std::process::id() as u64;
    let path = segment_path(std::path::Path::new("/dev/shm"), job);
    let l2 = Layout::new(2, RING).unwrap();
    let seg = Segment::create(&path, l2.spec(job)).unwrap();
    // Same size, other layout digest.
    let mut other = l2.spec(job);
    other.layout_digest ^= 1;
    let e = Segment::attach(&path, other).unwrap_err();
    assert!(
        matches!(e, shmpi::shm::SegmentAttachError::LayoutMismatch { .. }),
        "{e}"
    );
    // Another job id.
    let e = Segment::attach(&path, l2.spec(job + 1)).unwrap_err();
    assert!(
        matches!(e, shmpi::shm::SegmentAttachError::JobMismatch { .. }),
        "{e}"
    );
    // Another size.
    let l4 = Layout::new(4, RING).unwrap();
    let e = Segment::attach(&path, l4.spec(job)).unwrap_err();
    assert!(
        matches!(e, shmpi::shm::SegmentAttachError::SizeMismatch { .. }),
        "{e}"
    );
    // Creating it twice fails: O_EXCL.
    let e = Segment::create(&path, l2.spec(job)).unwrap_err();
    assert!(
        matches!(e, shmpi::shm::SegmentCreateError::AlreadyExists(_)),
        "{e}"
    );
    drop(seg);
    assert!(!path.exists(), "the creator unlinks on drop");
    let e = Segment::attach(&path, l2.spec(job)).unwrap_err();
    assert!(
        matches!(e, shmpi::shm::SegmentAttachError::NotFound(_)),
        "{e}"
    );
}

#[test]
fn segment_file_is_private_to_its_user() {
    use std::os::unix::fs::PermissionsExt;
    let job = 0x7e59_0000_0000 | std::process::id() as u64;
    let path = segment_path(std::path::Path::new("/dev/shm"), job);
    let l = Layout::new(2, RING).unwrap();
    let seg = Segment::create(&path, l.spec(job)).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // A segment whose mode was widened is refused.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = Segment::attach(&path, l.spec(job)).unwrap_err();
    assert!(
        matches!(e, shmpi::shm::SegmentAttachError::NotPrivate(_)),
        "{e}"
    );
    drop(seg);
}

/// The claim word of a shared rendezvous copy (`shm::Split`), between two
/// transports of one process (single copy to its own pid): every way it
/// can settle. The sender writes the back part and the receiver takes it;
/// the receiver revokes first and a late claim fails; a claim of an older
/// offer fails; a failed write gives the part back to the receiver.
#[test]
fn a_shared_copy_settles_every_way_and_a_late_or_stale_claim_writes_nothing() {
    let Some((sender, mut receiver)) = sharing_pair(0x5917_0000_0000) else {
        return;
    };
    let src: Vec<u8> = (0..40_000u32).map(|i| (i * 7 + 3) as u8).collect();
    let at = |v: &[u8], off: usize| v.as_ptr() as u64 + off as u64;
    // Where the sender may write: an address from a mutable borrow.
    let to = |v: &mut [u8], off: usize| v.as_mut_ptr() as u64 + off as u64;

    // 1. Offered, claimed and written by the sender: the receiver sees
    //    `Done` and has the bytes.
    let mut dst = vec![0u8; src.len()];
    let gen = receiver.split_offer();
    assert!(sender.split_write(1, gen, at(&src, 12_288), 27_712, to(&mut dst, 12_288)));
    assert!(
        !receiver.split_settle(0, gen, SplitKind::Posted).unwrap(),
        "the sender wrote it"
    );
    assert!(dst[12_288..] == src[12_288..], "the written part differs");
    assert!(
        dst[..12_288].iter().all(|&b| b == 0),
        "wrote before its part"
    );

    // 2. The receiver revokes first: it copies the part itself, and the
    //    sender's late claim writes nothing.
    let mut dst = vec![0u8; src.len()];
    let gen = receiver.split_offer();
    assert!(
        receiver.split_settle(0, gen, SplitKind::Posted).unwrap(),
        "revoked"
    );
    assert!(!sender.split_write(1, gen, at(&src, 0), 4096, to(&mut dst, 0)));
    assert!(dst.iter().all(|&b| b == 0), "a revoked offer was written");

    // 3. A claim of an older generation fails against a new offer.
    let old = gen;
    let gen = receiver.split_offer();
    assert!(!sender.split_write(1, old, at(&src, 0), 4096, to(&mut dst, 0)));
    assert!(dst.iter().all(|&b| b == 0), "a stale offer was written");
    assert!(receiver.split_settle(0, gen, SplitKind::Posted).unwrap());

    // 4. A write the kernel refuses (an unmapped address) gives the part
    //    back: the receiver revokes and copies it.
    let gen = receiver.split_offer();
    assert!(!sender.split_write(1, gen, at(&src, 0), 4096, 8));
    assert!(
        receiver.split_settle(0, gen, SplitKind::Posted).unwrap(),
        "given back, then revoked"
    );
}

/// A receiver learns where to split its shared copies with a peer
/// (`Transport::split_front`), from half (a waiting sender's) or half and
/// `SPLIT_HEAD` (one that does not wait): a sender found done at the settle (it
/// finished first) moves the receiver's part down a step for the next
/// copy; a sender still writing moves it up. The part always ends on a
/// cache line of the buffer, and the bytes arrive whatever the split.
#[test]
fn a_receivers_part_of_a_shared_copy_moves_towards_the_slower_side() {
    let Some((sender, mut receiver)) = sharing_pair(0x5919_0000_0000) else {
        return;
    };
    let n = 65_536;
    let src: Vec<u8> = (0..n as u32).map(|i| (i * 13 + 5) as u8).collect();
    let mut dst = vec![0u8; n + 64];
    // A buffer that does not start on a line: the part must still end on one.
    let d = dst.as_mut_ptr() as u64 + 8;
    let on_a_line = |front: usize| (d + front as u64) % 64 == 0;
    let start = receiver.split_front(0, n, d, SplitKind::Posted);
    assert!(start > n / 2 && start < n && on_a_line(start), "{start}");
    // A sender that waits in the library (a blocking send's) finds the
    // offer at once: its part starts at half, without the head.
    let waiting = receiver.split_front(0, n, d, SplitKind::Waiting);
    assert!(on_a_line(waiting), "{waiting}");
    assert_eq!(start - waiting, shmpi::transport::SPLIT_HEAD / 2);

    // The sender writes its part before the receiver settles: done at the
    // first look, so the receiver takes less each time.
    let mut front = start;
    for round in 0..4 {
        dst.fill(0);
        let gen = receiver.split_offer();
        let back = (n - front) as u64;
        let at = src.as_ptr() as u64 + front as u64;
        assert!(sender.split_write(1, gen, at, back as usize, d + front as u64));
        assert!(
            !receiver.split_settle(0, gen, SplitKind::Posted).unwrap(),
            "the sender wrote it"
        );
        assert!(
            dst[8 + front..8 + n] == src[front..],
            "round {round}: the back differs"
        );
        let next = receiver.split_front(0, n, d, SplitKind::Posted);
        assert!(
            next < front && on_a_line(next),
            "round {round}: {next} after {front}"
        );
        front = next;
    }

    // The sender still writing at the first look (claimed by hand, done
    // from another thread a little later): the receiver takes more.
    let seg = receiver.segment().clone();
    for round in 0..8 {
        let gen = receiver.split_offer();
        assert!(seg.control(1).split_claim(gen));
        let finisher = std::thread::spawn({
            let seg = seg.clone();
            move || {
                std::thread::sleep(Duration::from_millis(5));
                seg.control(1).split_set(gen, Split::Done);
            }
        });
        assert!(
            !receiver.split_settle(0, gen, SplitKind::Posted).unwrap(),
            "round {round}: revoked"
        );
        finisher.join().unwrap();
        let next = receiver.split_front(0, n, d, SplitKind::Posted);
        assert!(
            next > front && on_a_line(next),
            "round {round}: {next} after {front}"
        );
        front = next;
    }
    assert!(front > start, "{front} against {start}");
}

/// Ranks 0 (the sender) and 1 (the receiver) of a 2-rank segment of its
/// own (job id `tag` and this process's id), both in this process and
/// arrived, for the tests of single copy (shared copies, revocable
/// offers); `None` (said) when single copy is not usable here.
fn sharing_pair(tag: u64) -> Option<(Transport, Transport)> {
    let job = tag | std::process::id() as u64;
    let path = segment_path(std::path::Path::new("/dev/shm"), job);
    let spec = Layout::new(2, RING).unwrap().spec(job);
    let seg = Segment::create(&path, spec).unwrap();
    let other = std::thread::spawn({
        let path = path.clone();
        move || open(Segment::attach(&path, spec).unwrap(), 1)
    });
    let (seg, sender) = open(seg, 0);
    let (_, receiver) = other.join().unwrap();
    seg.unlink();
    if let Err(why) = sender.can_reach(1) {
        println!("single copy unavailable here ({why}): nothing to test");
        return None;
    }
    Some((sender, receiver))
}

/// Ranks 0 and 1 of a 2-rank segment of its own (job id `tag` and this
/// process's id), both in this process.
fn pair_in_one_process(tag: u64) -> (Transport, Transport) {
    let job = tag | std::process::id() as u64;
    let path = segment_path(std::path::Path::new("/dev/shm"), job);
    let l = Layout::new(2, RING).unwrap();
    let seg = Arc::new(Segment::create(&path, l.spec(job)).unwrap());
    seg.unlink();
    let a = Transport::new(seg.clone(), l, 0).unwrap();
    let b = Transport::new(seg, l, 1).unwrap();
    (a, b)
}

/// The receive fast path `take_exact`, between two transports of one
/// process: it takes the front frame only when it is a whole message
/// whose header is the awaited one, byte for byte; anything else (another
/// envelope, a fragment of a longer message) stays for `poll`, in order.
/// A message longer than the buffer is taken whole, its length reported.
#[test]
fn take_exact_takes_only_the_awaited_whole_message_and_leaves_the_rest() {
    use shmpi::transport::{sole_head, Exact};
    let (mut a, mut b) = pair_in_one_process(0x7a6e_0000_0000);
    let deadline = Instant::now() + Duration::from_secs(20);
    let (ea, eb) = (envelope(1, 2), envelope(3, 4));
    let (ha, hb) = (sole_head(&ea), sole_head(&eb));
    let mut buf = [0u8; 64];
    assert_eq!(b.take_exact(0, &ha, &mut buf), Exact::Empty);
    assert!(a.try_send_eager(1, &ea, &message(10)[..0]));
    assert!(a.try_send_eager(1, &ea, b"eight by"));
    let long = message(7).repeat(200);
    assert!(long.len() > RING, "fragmented");
    // The sender's endpoint outlives the scope: its last frame is read below.
    let _a = std::thread::scope(|s| {
        // The long message fills the ring: its sender waits for room.
        let sender = s.spawn(move || {
            send_all(&mut a, 1, &eb, &long, deadline);
            // Room for it comes as the receiver drains the long message.
            while !a.try_send_eager(1, &eb, &[9u8; 40]) {
                assert!(Instant::now() < deadline, "no room for the last message");
                std::thread::yield_now();
            }
            a
        });
        // Another envelope in front: left there.
        assert_eq!(b.take_exact(0, &hb, &mut buf), Exact::Other);
        assert_eq!(b.take_exact(0, &ha, &mut buf), Exact::Taken(0));
        // Longer than the buffer: taken, the part that fits delivered.
        let mut small = [0u8; 3];
        assert_eq!(b.take_exact(0, &ha, &mut small), Exact::Taken(8));
        assert_eq!(&small, b"eig");
        // The fragments of the long message are not whole messages.
        let mut got = Vec::new();
        while got.len() < message(7).len() * 200 {
            assert!(Instant::now() < deadline, "long message stalled");
            let front = b.take_exact(0, &hb, &mut buf);
            assert!(matches!(front, Exact::Other | Exact::Empty), "{front:?}");
            b.poll(1, &mut |m| {
                assert_eq!((m.envelope, m.offset), (eb, got.len()));
                got.extend_from_slice(m.data);
            });
        }
        assert_eq!(got, message(7).repeat(200));
        sender.join().unwrap()
    });
    loop {
        assert!(Instant::now() < deadline, "last message missing");
        match b.take_exact(0, &hb, &mut buf) {
            Exact::Taken(n) => {
                assert_eq!((n, &buf[..n]), (40, &[9u8; 40][..]));
                break;
            }
            other => assert_eq!(other, Exact::Empty),
        }
    }
    assert_eq!(b.take_exact(0, &hb, &mut buf), Exact::Empty);
}

/// `wait_exact` takes a message of the buffer's size by its header word,
/// and anything else as `take_exact` does: a shorter or longer message of
/// the envelope (the length tells truncation), another envelope left in
/// place; an empty ring waits while `spin` says so.
#[test]
fn wait_exact_takes_the_awaited_message_and_falls_back_for_the_rest() {
    use shmpi::transport::{sole_head, Exact};
    let (mut a, mut b) = pair_in_one_process(0x7a6f_0000_0000);
    let (ea, eb) = (envelope(1, 2), envelope(3, 4));
    let (ha, hb) = (sole_head(&ea), sole_head(&eb));
    let mut buf = [0u8; 8];
    let mut spins = 0;
    let mut three = || {
        spins += 1;
        spins < 3
    };
    assert_eq!(b.wait_exact(0, &ha, &mut buf, &mut three), Exact::Empty);
    assert_eq!(spins, 3, "spun until told to stop");
    assert!(a.try_send_eager(1, &ea, b"eight by"));
    assert!(a.try_send_eager(1, &ea, b"five!"));
    assert!(a.try_send_eager(1, &ea, b"ten bytes!"));
    assert!(a.try_send_eager(1, &eb, b"other"));
    let never = || panic!("no spin: a frame is there");
    assert_eq!(b.wait_exact(0, &ha, &mut buf, never), Exact::Taken(8));
    assert_eq!(&buf, b"eight by");
    let mut buf = [0u8; 8];
    assert_eq!(b.wait_exact(0, &ha, &mut buf, never), Exact::Taken(5));
    assert_eq!(&buf[..5], b"five!");
    assert_eq!(b.wait_exact(0, &ha, &mut buf, never), Exact::Taken(10));
    assert_eq!(&buf, b"ten byte");
    assert_eq!(b.wait_exact(0, &ha, &mut buf, never), Exact::Other);
    let mut five = [0u8; 5];
    assert_eq!(b.wait_exact(0, &hb, &mut five, never), Exact::Taken(5));
    assert_eq!(&five, b"other");
    // A sender on another thread: the waiting receiver sees it arrive.
    let deadline = Instant::now() + Duration::from_secs(20);
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(5));
            assert!(a.try_send_eager(1, &ea, b"at last!"));
        });
        let r = b.wait_exact(0, &ha, &mut buf, || Instant::now() < deadline);
        assert_eq!((r, &buf), (Exact::Taken(8), b"at last!"));
    });
}

/// A revocable rendezvous offer (`shm::offers`) between two transports of
/// one process: read where it lies while the scope lasts; moved to the
/// scope's copy when the scope ends first (the caller's buffer may then
/// change); withdrawn when dropped unread; a stale generation fails; the
/// end of a scope waits while a receiver is reading; a full table says
/// so.
#[test]
fn a_revocable_offer_is_read_in_place_moved_at_the_scopes_end_or_withdrawn() {
    use shmpi::shm::offers::{OfferState, OFFERS};
    let Some((mut sender, receiver)) = sharing_pair(0x5918_0000_0000) else {
        return;
    };
    let src: Vec<u8> = (0..50_000u32).map(|i| (i * 13 + 1) as u8).collect();

    // 1. Read in place inside the scope, then retired.
    shmpi::transport::lend(|l| {
        let cell = l.lend(&src);
        let offer = sender.open_offer(1, src.as_ptr() as u64).unwrap();
        let id = offer.id();
        cell.hold_offer(offer);
        let mut dst = vec![0u8; src.len()];
        receiver.read_offered(0, id, &mut dst).unwrap();
        assert!(dst == src, "read in place differs");
        cell.retire_offer();
        // Retired: the generation is gone.
        assert!(receiver.read_offered(0, id, &mut dst).is_err());
    });

    // 2. The scope ends before the receiver claims: the offer moves to
    //    the copy, and the caller's buffer may change.
    let mut buf = src.clone();
    let (cell, id) = shmpi::transport::lend(|l| {
        let cell = l.lend(&buf);
        let offer = sender.open_offer(1, buf.as_ptr() as u64).unwrap();
        let id = offer.id();
        cell.hold_offer(offer);
        (cell, id)
    });
    buf.iter_mut().for_each(|b| *b = 0);
    drop(buf);
    assert!(!cell.is_borrowed());
    let mut dst = vec![0u8; src.len()];
    receiver.read_offered(0, id, &mut dst).unwrap();
    assert!(dst == src, "the moved offer differs");
    cell.retire_offer();

    // 3. Dropped unread: withdrawn, and the receiver is told.
    let id = shmpi::transport::lend(|l| {
        let cell = l.lend(&src);
        let offer = sender.open_offer(1, src.as_ptr() as u64).unwrap();
        let id = offer.id();
        cell.hold_offer(offer);
        id
    });
    let e = receiver.read_offered(0, id, &mut dst).unwrap_err();
    assert!(e.to_string().contains("withdrew"), "{e}");

    // 4. The scope's end waits while a receiver reads: claimed by hand
    //    here, as a receiver in the middle of its copy.
    let seg = sender.segment().clone();
    let table = seg.offers(0);
    let buf = src.clone();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let (id, cell) = std::thread::scope(|s| {
        let (id_tx, id_rx) = std::sync::mpsc::channel();
        let sender = &mut sender;
        let buf = &buf;
        let h = s.spawn(move || {
            let cell = shmpi::transport::lend(|l| {
                let cell = l.lend(buf);
                let offer = sender.open_offer(1, buf.as_ptr() as u64).unwrap();
                let id = offer.id();
                cell.hold_offer(offer);
                id_tx.send(id).unwrap();
                // Until the receiver has claimed it.
                let (idx, gen) = id;
                let deadline = Instant::now() + Duration::from_secs(20);
                while table.entry(idx as usize).state(gen) == Some(OfferState::Offered) {
                    assert!(Instant::now() < deadline, "never claimed");
                    std::thread::yield_now();
                }
                cell
            });
            done_tx.send(()).unwrap();
            cell
        });
        let id = id_rx.recv_timeout(Duration::from_secs(20)).unwrap();
        let e = table.entry(id.0 as usize);
        assert!(e.claim(id.1).is_ok());
        // The scope's end does not return while the claim stands.
        assert!(done_rx.recv_timeout(Duration::from_millis(200)).is_err());
        e.finish(id.1);
        done_rx.recv_timeout(Duration::from_secs(20)).unwrap();
        (id, h.join().unwrap())
    });
    // Read, so nothing was moved.
    assert_eq!(
        table.entry(id.0 as usize).state(id.1),
        Some(OfferState::Done)
    );
    cell.retire_offer();

    // 5. A full table: every entry open, then none left.
    let offers: Vec<_> = (0..OFFERS)
        .map(|_| sender.open_offer(1, src.as_ptr() as u64).unwrap())
        .collect();
    assert!(sender.open_offer(1, src.as_ptr() as u64).is_none());
    offers.into_iter().for_each(|o| o.retire());
    assert!(sender.open_offer(1, src.as_ptr() as u64).is_some());
}

/// `poll_until`: a handler that answers `Break` leaves the ring after that
/// frame, whose room goes back to the producer at once; the rest stay,
/// in order, for the next poll, which a plain `poll` drains as before.
#[test]
fn a_ring_left_by_its_handler_keeps_the_rest_in_order_for_the_next_poll() {
    use std::ops::ControlFlow;
    let (mut a, mut b) = pair_in_one_process(0x4e1d_0000_0000);
    // 1 KiB frames (8-byte ring header, 24-byte sole header): the ring
    // holds a whole number of them.
    let payload = |seq: u64| {
        let mut p = vec![seq as u8; 1024 - 32];
        p[..8].copy_from_slice(&seq.to_le_bytes());
        p
    };
    let fits = |t: &mut Transport, seq: u64| match t.send(1, &envelope(seq, 0), &payload(seq)) {
        Sent::Done => true,
        Sent::Partial(out) => {
            assert_eq!(out.sent(), 0, "a one-frame message went in part");
            false
        }
    };
    let mut sent = 0u64;
    while fits(&mut a, sent) {
        sent += 1;
        assert!(sent < 1000, "the ring never filled");
    }
    assert!(sent >= 4, "a {RING}-byte ring took {sent} frames");
    let seq_of =
        |m: &shmpi::transport::Incoming<'_>| u64::from_le_bytes(m.data[..8].try_into().unwrap());
    let mut seen = Vec::new();
    // Left after each frame: one a poll, its room given back.
    for k in 0..2u64 {
        let n = b.poll_until(64, &mut |m| {
            seen.push(seq_of(&m));
            ControlFlow::Break(())
        });
        assert_eq!(n, 1, "the poll went on past a frame it was told to leave");
        assert_eq!(seen, (0..=k).collect::<Vec<_>>());
        assert!(
            fits(&mut a, sent),
            "the left frame's room was not given back"
        );
        sent += 1;
    }
    // The rest, in order, by plain polls.
    let mut polls = 0;
    while (seen.len() as u64) < sent {
        b.poll(64, &mut |m| seen.push(seq_of(&m)));
        polls += 1;
        assert!(polls < 100, "frames left in the ring: {seen:?} of {sent}");
    }
    assert_eq!(seen, (0..sent).collect::<Vec<_>>(), "frames out of order");
}

/// C's `MPI_Isend` between `SHMPI_CMA_C_ISEND_QUIET` and
/// `SHMPI_CMA_C_ISEND` goes by rendezvous only while its receiver has
/// taken every earlier message of the sender: the ring to it empty and
/// none of the sender's rendezvous sends awaiting it (a halo exchange,
/// not a stream).
#[test]
fn a_c_isend_goes_by_rendezvous_from_the_quiet_size_only_to_a_receiver_that_kept_up() {
    let Some((mut sender, mut receiver)) = sharing_pair(0x5a17_0000_0000) else {
        return;
    };
    if sender.cma_mode() != shmpi::transport::cma::CmaMode::Auto {
        println!("the quiet size is SHMPI_CMA=auto's: nothing to test");
        return;
    }
    // Peers look at the published self-test before a rendezvous.
    receiver.probe_single_copy();
    // The thresholds as set here, whatever this CPU's row.
    let (quiet, always) = match (sender.c_isend_quiet_threshold(), sender.c_isend_threshold()) {
        (Some(q), Some(a)) => (q, a),
        other => {
            println!("no quiet size on this CPU's row ({other:?}): nothing to test");
            return;
        }
    };
    assert!(quiet < always);
    // Nothing sent yet: quiet.
    assert!(sender.rendezvous_c_isend_to(1, quiet, false));
    assert!(!sender.rendezvous_c_isend_to(1, quiet - 1, false));
    // A rendezvous of the sender's still awaiting its ack: not quiet.
    assert!(!sender.rendezvous_c_isend_to(1, quiet, true));
    // A message in the ring the receiver has not taken: not quiet, but
    // from the unconditional size it goes by rendezvous anyway.
    let small = [7u8; 100];
    assert!(matches!(
        sender.send(1, &envelope(1, 0), &small),
        Sent::Done
    ));
    assert!(!sender.rendezvous_c_isend_to(1, quiet, false));
    assert!(sender.rendezvous_c_isend_to(1, always, false));
    // Taken: quiet again.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = 0;
    while got == 0 {
        assert!(Instant::now() < deadline, "the message never came");
        got += receiver.poll(16, &mut |inc| assert_eq!(inc.data, &small[..]));
    }
    assert!(sender.rendezvous_c_isend_to(1, quiet, false));
}
