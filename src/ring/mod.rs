//! The SPSC byte ring: framed variable-size messages over memory the caller
//! provides.
//!
//! Layer L1 (imports `error` and `sync` only). The ring knows nothing of
//! segments: the caller hands it a [`RingHeader`] and a data region, which
//! live in the job segment in real runs and on the heap in unit and loom
//! tests ([`heap_ring`]). One [`Producer`] and one [`Consumer`] exist per
//! ring, in any two threads or processes.
//!
//! Protocol in brief (every edge is in `docs/memory-model.md`):
//! - the producer writes the payload, then Release-stores the frame's
//!   header word (`SYNC(ring.frame)`);
//! - the consumer Acquire-loads the header word at its head position; a
//!   word not of the head's lap means empty (`frame.rs`); after reading
//!   the payload it Release-stores `head` (`SYNC(ring.head)`), which the
//!   producer Acquire-loads only when its cached copy of `head` says the
//!   ring may be full. The consumer never writes the data region.
//!
//! The consumer thus spins on the cache line it will read next, not on a
//! shared index (measured here: 71 ns vs 112 ns one way, see
//! `../shared/MEASUREMENTS.md`).

mod consumer;
mod copy;
mod demote;
mod frame;
mod header;
#[cfg(all(test, loom))]
mod model_tests;
mod poll;
mod producer;
mod region;

pub use consumer::{Awaited, AwaitedFront, Consumer, Frame};
pub use copy::{
    copy_between, copy_streaming, set_vector_copy_from, vector_copy_from, SKEWED_CHUNK,
};
pub use demote::Demote;
// For the transport's timed reads (`transport::fresh`), absent under loom.
#[cfg(not(loom))]
pub(crate) use demote::{tsc, tsc_reads_fast};
pub use frame::{footprint, FRAME_ALIGN, FRAME_HEADER, LINE};

/// Copies `src` into `dst` (equal lengths). Up to 64 bytes it moves two
/// overlapping fixed-size pieces inline instead of calling `memcpy`, whose
/// call and size dispatch cost more than the copy of a small message (at
/// 64 bytes 16 fewer instructions a blocking send and 26 a receive, and a
/// ping-pong 7% faster on one CCD: `docs/benchmarks.md`, "Issue 6,
/// twenty-ninth pass");
/// from [`vector_copy_from`] bytes on (AMD CPUs: 4 KiB) an AVX2 loop
/// (`copy.rs`); other copies go to `memcpy`.
///
/// # Panics
/// If the lengths differ.
#[inline(always)]
pub fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    copy_bytes_back_from(dst, src, || usize::MAX);
}

/// [`copy_bytes`], but from `back()` bytes on back to front where the
/// vector loop is in use ([`copy_bytes_back`]); shorter copies take
/// exactly `copy_bytes`'s path (`back` is called only in the long-copy
/// branch, and folds away when it returns a constant `usize::MAX`).
///
/// # Panics
/// If the lengths differ.
#[inline(always)]
pub fn copy_bytes_back_from(dst: &mut [u8], src: &[u8], back: impl FnOnce() -> usize) {
    let n = src.len();
    assert_eq!(dst.len(), n, "copy between slices of different lengths");
    // The first and the last `K` bytes, overlapping when n < 2K (bytes in
    // the overlap are written twice, with the same value).
    #[inline(always)]
    fn ends<const K: usize>(dst: &mut [u8], src: &[u8]) {
        let n = src.len();
        let a: [u8; K] = src[..K].try_into().expect("n >= K");
        let b: [u8; K] = src[n - K..].try_into().expect("n >= K");
        dst[..K].copy_from_slice(&a);
        dst[n - K..].copy_from_slice(&b);
    }
    // Tested one class after another, each by one unsigned comparison:
    // what falls through to its copy takes no branch (a `match` on the
    // ranges became a search tree whose every level jumped, four taken
    // branches for an 8-byte message on the way to a ping-pong's header
    // store). The classes of 8-64 bytes come first, then the long copies,
    // then the rare 1-7 bytes.
    if n.wrapping_sub(8) <= 16 - 8 {
        ends::<8>(dst, src);
    } else if n.wrapping_sub(17) <= 32 - 17 {
        ends::<16>(dst, src);
    } else if n.wrapping_sub(33) <= 64 - 33 {
        ends::<32>(dst, src);
    } else if n > 64 {
        let from = copy::vector_copy_from();
        if from != usize::MAX && n >= back() {
            copy::vectors(dst, src, true);
        } else if n >= from {
            copy::vectors(dst, src, false);
        } else {
            dst.copy_from_slice(src);
        }
    } else if n >= 4 {
        ends::<4>(dst, src);
    } else if n > 0 {
        let (a, b, c) = (src[0], src[n / 2], src[n - 1]);
        dst[0] = a;
        dst[n / 2] = b;
        dst[n - 1] = c;
    }
}

/// [`copy_bytes`] for a consumer copying a frame out while its producer
/// is likely writing the next one just past it: from the end of the
/// frame to its start, where the vector loop is in use (else as
/// `copy_bytes`). Read front to back, the consumer's hardware prefetch
/// runs on into the lines the producer is filling and takes them from it
/// mid-write: on the AMD EPYC VM a window of 64 messages of 2.5-6 KiB
/// received into one buffer (OSU's `osu_bw`), the receiver keeping up,
/// ran at 7-10 GB/s forward and 17-25 GB/s backward, while into 64
/// buffers (the receiver behind) backward lost about 10%
/// (`docs/benchmarks.md`, "Issue 6, fourteenth pass").
///
/// # Panics
/// If the lengths differ.
#[inline]
pub fn copy_bytes_back(dst: &mut [u8], src: &[u8]) {
    copy_bytes_back_from(dst, src, || 33);
}

/// Whether `word`, read at a consumer's next header position, is a frame
/// (or wrap marker) of that position's lap `lap`, as
/// [`Consumer::next_word`] gives them.
#[inline]
pub fn is_frame(word: u64, lap: u64) -> bool {
    frame::kind_in(word, lap) != 0
}
pub use header::RingHeader;
pub use poll::poll_pause;

/// A refusal (`false`) on a fast path, out of line and cold: returning it
/// is the hint that keeps the common path falling through to its stores
/// (`Producer::push_quick` without room, the eager send behind other
/// messages; `docs/benchmarks.md`, "Issue 6, eleventh pass").
#[cold]
#[inline(never)]
pub(crate) fn refused() -> bool {
    false
}
pub use producer::{
    Producer, Reservation, RingReserveError, DEMOTE_AT_ONCE_MAX, DEMOTE_CHUNK, DEMOTE_NOW_MAX,
    HOT_FRAME_MAX,
};

use region::Region;
use std::fmt;
use std::sync::Arc;

/// The version of the frame format (`frame.rs`), part of the transport's
/// layout digest so that processes of two builds never share a ring.
/// 2: header words carry the lap, the consumer clears nothing; 3: small
/// frames padded to pairs of lines (`frame::PAIRED_MAX`).
pub const FORMAT: usize = 3;

/// Smallest allowed data region: two frames of the largest payload it
/// allows ([`max_payload`], 112 bytes here), each padded to a pair of
/// lines (`frame::PAIRED_MAX`).
pub const MIN_CAPACITY: usize = 256;

/// Something that keeps the ring's memory alive (a segment mapping, a heap
/// allocation); shared by the two handles.
pub type Owner = Arc<dyn Send + Sync>;

/// Why a ring could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingCreateError {
    /// The capacity is not a power of two of at least [`MIN_CAPACITY`].
    BadCapacity(usize),
    /// The data region is not 8-byte aligned.
    Misaligned,
    /// The shared header's head or tail is not on a frame boundary (the
    /// segment is corrupted): this position.
    BadPosition(u64),
}

impl fmt::Display for RingCreateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RingCreateError::BadCapacity(c) => write!(
                f,
                "ring capacity {c} is not a power of two of at least {MIN_CAPACITY}"
            ),
            RingCreateError::Misaligned => f.write_str("ring data region is not 8-byte aligned"),
            RingCreateError::BadPosition(p) => write!(
                f,
                "ring position {p} is not on a frame boundary (corrupted ring header)"
            ),
        }
    }
}

impl std::error::Error for RingCreateError {}

/// Checks a capacity: a power of two, at least [`MIN_CAPACITY`].
pub fn check_capacity(capacity: usize) -> Result<(), RingCreateError> {
    if capacity < MIN_CAPACITY || !capacity.is_power_of_two() || capacity > u32::MAX as usize {
        return Err(RingCreateError::BadCapacity(capacity));
    }
    Ok(())
}

/// The largest payload one frame of a ring of `capacity` bytes can carry.
///
/// Half the region, less 16 bytes: then an empty ring accepts a frame of
/// this size wherever its tail stands (the skipped end of the lap, the
/// frame and the guard line after it together never exceed the capacity:
/// the frame's footprint is at most half, a skip at most half less a
/// line).
pub const fn max_payload(capacity: usize) -> usize {
    capacity / 2 - 2 * FRAME_HEADER
}

/// Makes the producer handle of a ring over shared memory.
///
/// # Safety
/// - `header` points to a [`RingHeader`] initialised with `capacity` and
///   `data` to `capacity` bytes, 8-byte aligned, that were zero when the
///   ring was first used; both stay mapped while `owner` lives;
/// - across all threads and processes at most one `Producer` exists for
///   this ring at a time.
#[cfg(not(loom))]
pub unsafe fn producer_at(
    header: std::ptr::NonNull<RingHeader>,
    data: std::ptr::NonNull<u8>,
    owner: Owner,
) -> Result<Producer, RingCreateError> {
    // SAFETY: delegated to the caller (see # Safety).
    let (header, region, cap) = unsafe { parts(header, data)? };
    Producer::new(header, region, cap, owner)
}

/// Makes the consumer handle of a ring over shared memory.
///
/// # Safety
/// As [`producer_at`], with "at most one `Consumer`".
#[cfg(not(loom))]
pub unsafe fn consumer_at(
    header: std::ptr::NonNull<RingHeader>,
    data: std::ptr::NonNull<u8>,
    owner: Owner,
) -> Result<Consumer, RingCreateError> {
    // SAFETY: delegated to the caller (see # Safety).
    let (header, region, cap) = unsafe { parts(header, data)? };
    Consumer::new(header, region, cap, owner)
}

/// # Safety
/// As [`producer_at`].
#[cfg(not(loom))]
unsafe fn parts(
    header: std::ptr::NonNull<RingHeader>,
    data: std::ptr::NonNull<u8>,
) -> Result<(HeaderRef, Region, usize), RingCreateError> {
    // SAFETY: the caller promises `header` points to an initialised header
    // that outlives the handles (kept alive by `owner`).
    let cap = unsafe { header.as_ref() }.capacity() as usize;
    check_capacity(cap)?;
    // Header words need 8-byte alignment; a 64-byte aligned region (as the
    // segment layout gives) also makes every frame start a cache line.
    if data.as_ptr() as usize % 8 != 0 {
        return Err(RingCreateError::Misaligned);
    }
    // SAFETY: the caller promises `cap` valid, aligned bytes at `data`.
    let region = unsafe { Region::new(data, cap) };
    Ok((HeaderRef(header), region, cap))
}

/// A pointer to the shared header, valid while the owner lives.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct HeaderRef(std::ptr::NonNull<RingHeader>);

#[cfg(not(loom))]
impl HeaderRef {
    #[inline]
    pub(crate) fn get(&self) -> &RingHeader {
        // SAFETY: the constructors' callers promise the header stays mapped
        // while the owner (held by the same handle) lives.
        unsafe { self.0.as_ref() }
    }
}

/// A ring whose header and data live on the heap, for tests, benches and
/// in-process use: returns its two handles.
///
/// # Errors
/// [`RingCreateError::BadCapacity`] unless `capacity` is a power of two of
/// at least [`MIN_CAPACITY`].
pub fn heap_ring(capacity: usize) -> Result<(Producer, Consumer), RingCreateError> {
    check_capacity(capacity)?;
    let mem = Arc::new(HeapRing::new(capacity));
    #[cfg(not(loom))]
    {
        let header = std::ptr::NonNull::from(&mem.header);
        let data = std::ptr::NonNull::new(mem.data.as_ptr() as *mut u8).expect("non-null");
        let owner: Owner = mem.clone();
        // SAFETY: `mem` holds a header initialised with `capacity` and
        // `capacity` zeroed, 8-aligned bytes (a `u64` buffer); `owner` keeps
        // it alive; this function makes exactly one handle of each kind.
        let p = unsafe { producer_at(header, data, owner.clone()) }?;
        // SAFETY: as above.
        let c = unsafe { consumer_at(header, data, owner) }?;
        Ok((p, c))
    }
    #[cfg(loom)]
    {
        let p = Producer::new_model(mem.clone(), capacity);
        let c = Consumer::new_model(mem, capacity);
        Ok((p, c))
    }
}

/// Heap backing of [`heap_ring`].
pub(crate) struct HeapRing {
    pub(crate) header: RingHeader,
    #[cfg(not(loom))]
    data: Box<[std::cell::UnsafeCell<u64>]>,
    #[cfg(loom)]
    pub(crate) region: Region,
}

// SAFETY: the cells are only touched through the ring protocol, which gives
// each byte range to one side at a time (see the module docs).
unsafe impl Sync for HeapRing {}
// SAFETY: as above; the allocation itself may move between threads.
unsafe impl Send for HeapRing {}

impl HeapRing {
    fn new(capacity: usize) -> Self {
        HeapRing {
            header: RingHeader::new(capacity as u64),
            #[cfg(not(loom))]
            data: (0..capacity / 8)
                .map(|_| std::cell::UnsafeCell::new(0))
                .collect(),
            #[cfg(loom)]
            region: Region::new_model(capacity),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::sync::Ordering;

    /// `payload_in` is the inverse of `footprint`: the largest payload
    /// whose frame fits a span, one byte more does not.
    #[test]
    fn payload_in_is_the_largest_payload_whose_frame_fits() {
        for span in (FRAME_HEADER..8192).step_by(8) {
            let p = frame::payload_in(span);
            if p > 0 {
                assert!(footprint(p) <= span, "span {span}: {p}");
            }
            assert!(footprint(p + 1) > span, "span {span}: {p} + 1 fits");
        }
    }

    /// A head or tail off a frame boundary (a corrupted header) is refused
    /// when the handles are made, not trusted by the unchecked header
    /// words of `peek` and `publish`.
    #[test]
    fn positions_off_a_frame_boundary_are_refused() {
        let a = FRAME_ALIGN as u64;
        for (head, tail) in [(0, 8), (72, 128), (64, 64)] {
            let mem = Arc::new(HeapRing::new(1024));
            mem.header.head.store(head, Ordering::Relaxed);
            mem.header.tail.store(tail, Ordering::Relaxed);
            let header = std::ptr::NonNull::from(&mem.header);
            let data = std::ptr::NonNull::new(mem.data.as_ptr() as *mut u8).expect("non-null");
            let owner: Owner = mem.clone();
            // SAFETY: as in `heap_ring`; the positions are what is tested.
            let p = unsafe { producer_at(header, data, owner.clone()) };
            // SAFETY: as above.
            let c = unsafe { consumer_at(header, data, owner) };
            match (head % a, tail % a) {
                (0, 0) => assert!(p.is_ok() && c.is_ok()),
                _ => {
                    assert_eq!(
                        p.err(),
                        (tail % a != 0).then_some(RingCreateError::BadPosition(tail))
                    );
                    assert_eq!(
                        c.err(),
                        (head % a != 0).then_some(RingCreateError::BadPosition(head))
                    );
                }
            }
        }
    }

    /// A frame written with streaming stores has no line in any cache:
    /// demotion passes it by (the pause gating does not even read the
    /// clock for it); a plain frame of the same size is demotable.
    #[test]
    fn streamed_frames_are_not_demoted() {
        let (mut p, mut c) = heap_ring(4096).unwrap();
        p.set_demote(Demote::forced_up_to(1024));
        let mut r = p.reserve(512).unwrap();
        r.write_streaming(0, &[1; 512]);
        r.commit();
        assert_eq!(p.last_demotable(), 0, "a streamed frame is not demotable");
        let mut r = p.reserve(512).unwrap();
        r.write(0, &[2; 512]);
        r.commit();
        if cfg!(target_arch = "x86_64") {
            assert_ne!(p.last_demotable(), 0, "a plain frame is");
        }
        for want in [1u8, 2] {
            let f = c.peek().expect("both frames arrive");
            assert_eq!(f.bytes(), &[want; 512][..]);
            f.release();
        }
    }

    /// A frame longer than `DEMOTE_AT_ONCE_MAX` and up to
    /// `DEMOTE_NOW_MAX` that follows a pause is demoted by its caller in
    /// chunks, each after the first once `idle()` says there is nothing
    /// else to do; the rest is dropped once there is. Shorter frames are
    /// demoted whole at once, longer ones wait for `flush_hints`.
    #[test]
    fn a_mid_sized_frame_is_demoted_in_chunks_until_the_caller_has_work() {
        if !cfg!(target_arch = "x86_64") {
            // No TSC there: no frame follows a pause, none is demoted.
            return;
        }
        let pause = || std::thread::sleep(std::time::Duration::from_micros(200));
        let (mut p, _c) = heap_ring(64 << 10).unwrap();
        p.set_demote(Demote::forced_up_to(8192).without_warming());
        const { assert!(FRAME_HEADER + 4000 > producer::DEMOTE_AT_ONCE_MAX) };
        const { assert!(FRAME_HEADER + 4000 <= producer::DEMOTE_NOW_MAX) };
        const { assert!(FRAME_HEADER + 2000 <= producer::DEMOTE_AT_ONCE_MAX) };
        pause();
        p.push(&[&[1; 4000]]).unwrap();
        assert!(p.chunks_due() && p.hints_due());
        let mut looks = 0;
        p.demote_in_chunks(|| {
            looks += 1;
            true
        });
        let payload = FRAME_HEADER + 4000 - LINE;
        let chunks = payload.div_ceil(producer::DEMOTE_CHUNK);
        assert_eq!(p.last_chunks(), Some((LINE, payload, chunks)));
        assert_eq!(looks, chunks - 1, "a look before every chunk but the first");
        assert!(!p.hints_due(), "given once");
        // Work shows up after the first chunk: the rest is dropped.
        pause();
        p.push(&[&[2; 4000]]).unwrap();
        let at = frame::footprint(4000);
        p.demote_in_chunks(|| false);
        assert_eq!(
            p.last_chunks(),
            Some((at + LINE, producer::DEMOTE_CHUNK, 1))
        );
        assert!(!p.hints_due(), "dropped, not left for the idle moment");
        // Unless the caller does not give it: then the idle moment does.
        pause();
        p.push(&[&[3; 4000]]).unwrap();
        assert!(p.hints_due());
        p.flush_hints();
        assert!(!p.hints_due() && !p.chunks_due());
        // A 2000-byte frame is demoted whole as it is published.
        pause();
        p.push(&[&[4; 2000]]).unwrap();
        assert!(!p.chunks_due() && !p.hints_due());
    }

    /// A frame its producer's caller marks as a burst's
    /// (`set_in_burst`) is neither demoted nor followed by a claim,
    /// however long the pause before it; once the mark is cleared the
    /// next frame after a pause is again.
    #[test]
    fn a_bursts_frames_are_not_demoted() {
        if !cfg!(target_arch = "x86_64") {
            // No TSC there: no frame follows a pause, none is demoted.
            return;
        }
        let pause = || std::thread::sleep(std::time::Duration::from_micros(200));
        let (mut p, _c) = heap_ring(64 << 10).unwrap();
        p.set_demote(Demote::forced_up_to(8192));
        assert!(!p.in_burst(), "no burst unless the caller says so");
        pause();
        p.push(&[&[1; 4000]]).unwrap();
        assert!(p.chunks_due() && p.hints_due(), "after a pause: demoted");
        p.set_in_burst(true);
        for (i, len) in [4000, 1000, 6000].into_iter().enumerate() {
            pause();
            p.push(&[&[2; 6000][..len]]).unwrap();
            assert!(!p.chunks_due() && !p.hints_due(), "burst frame {i}");
        }
        p.set_in_burst(false);
        pause();
        p.push(&[&[3; 4000]]).unwrap();
        assert!(p.chunks_due() && p.hints_due(), "the burst is over");
    }

    /// After a demoted frame (one that follows a pause) a claim is due:
    /// `flush_hints` claims the lines where the next frame will start, as
    /// many as the frame took and never past the region's end, once; a
    /// frame published before the claim replaces it; the bytes of every
    /// frame arrive as written; a demotion without warming claims nothing.
    #[test]
    fn a_demoted_frame_leaves_a_claim_of_the_next_frames_lines() {
        const CAP: usize = 16 << 10;
        let pause = || std::thread::sleep(std::time::Duration::from_micros(200));
        let d = Demote::forced_up_to(4096);
        // Off x86-64, and on a CPU without PREFETCHW, nothing is claimed.
        assert_eq!(
            d.warms(),
            cfg!(target_arch = "x86_64") && demote::has_prefetchw()
        );
        let (mut p, mut c) = heap_ring(CAP).unwrap();
        p.set_demote(d);
        let fp = frame::footprint(3000);
        for i in 0..4u8 {
            pause();
            p.push(&[&[i; 3000]]).unwrap();
            // A 3000-byte frame's demotion is its caller's, in chunks.
            p.demote_in_chunks(|| true);
            assert_eq!(p.hints_due(), d.warms(), "frame {i}");
            p.flush_hints();
            assert!(!p.hints_due(), "claimed once");
            let want = d.warms().then_some(((i as usize + 1) * fp, fp));
            assert_eq!(p.last_claim(), want, "frame {i}");
            let f = c.peek().expect("published");
            assert_eq!(f.bytes(), &[i; 3000][..]);
            f.release();
        }
        // A sixth frame would not fit before the end: the fifth's claim
        // stops there.
        pause();
        p.push(&[&[9; 3000]]).unwrap();
        p.demote_in_chunks(|| true);
        p.flush_hints();
        let at = 5 * fp;
        assert!(at < CAP && at + fp > CAP);
        assert_eq!(p.last_claim(), d.warms().then_some((at, CAP - at)));
        // Two frames, then the claim: the newest's position and length.
        let (mut p, _c) = heap_ring(CAP).unwrap();
        p.set_demote(d);
        pause();
        p.push(&[&[1; 3000]]).unwrap();
        pause();
        p.push(&[&[2; 1000]]).unwrap();
        p.flush_hints();
        let small = frame::footprint(1000);
        assert_eq!(p.last_claim(), d.warms().then_some((fp + small, small)));

        let (mut p, _c) = heap_ring(CAP).unwrap();
        p.set_demote(d.without_warming());
        assert!(!d.without_warming().warms());
        pause();
        p.push(&[&[1; 3000]]).unwrap();
        p.demote_in_chunks(|| true);
        assert!(!p.hints_due());
        p.flush_hints();
        assert_eq!(p.last_claim(), None, "no claim without warming");
        // A frame longer than DEMOTE_NOW_MAX leaves its demotion for
        // flush_hints, claims or not; a frame not demoted after it (one
        // line) drops it.
        if !cfg!(target_arch = "x86_64") {
            // No TSC there: no frame follows a pause, none is demoted.
            return;
        }
        let (mut p, _c) = heap_ring(4 * CAP).unwrap();
        p.set_demote(Demote::forced_up_to(8192).without_warming());
        pause();
        const { assert!(FRAME_HEADER + 6000 > producer::DEMOTE_NOW_MAX) };
        p.push(&[&[1; 6000]]).unwrap();
        assert!(p.hints_due(), "the demotion waits");
        assert!(!p.chunks_due(), "for the idle moment, not in chunks");
        p.demote_in_chunks(|| true);
        assert_eq!(p.last_chunks(), None);
        p.flush_hints();
        assert!(!p.hints_due(), "given once");
        pause();
        p.push(&[&[1; 6000]]).unwrap();
        assert!(p.hints_due());
        p.push(&[&[2; 8]]).unwrap();
        assert!(!p.hints_due(), "dropped");
        // So does a short frame demoted at once.
        pause();
        p.push(&[&[1; 6000]]).unwrap();
        pause();
        p.push(&[&[3; 1000]]).unwrap();
        assert!(!p.hints_due(), "the long frame's demotion dropped");
        // Claims without demotion: a long frame leaves only its claim.
        let d = Demote::claims_up_to(8192);
        assert!(!d.demotes());
        assert_eq!(d.is_on(), d.warms());
        if !d.warms() {
            return;
        }
        assert_eq!(d.without_warming(), Demote::OFF, "nothing left");
        let (mut p, _c) = heap_ring(4 * CAP).unwrap();
        p.set_demote(d);
        pause();
        p.push(&[&[1; 6000]]).unwrap();
        assert!(p.hints_due());
        p.flush_hints();
        let fp6 = frame::footprint(6000);
        assert_eq!(p.last_claim(), Some((fp6, fp6)));
        assert!(!p.hints_due());
    }

    /// A demoted frame that reaches the hot window's end: the claim made
    /// after `end_lap_early` is at the window's start when the lap ended
    /// there, after the frame when it goes on. Frames longer than
    /// `HOT_FRAME_MAX` never end a lap early, whatever the window.
    #[test]
    fn a_claim_after_the_hot_windows_end_is_where_the_next_frame_goes() {
        const CAP: usize = 64 << 10;
        let pause = || std::thread::sleep(std::time::Duration::from_micros(200));
        let d = Demote::forced_up_to(8192);
        let (mut p, mut c) = heap_ring(CAP).unwrap();
        p.set_demote(d);
        p.set_hot(8 << 10);
        let fp = frame::footprint(1000);
        assert_eq!(fp, 1024);
        let drain = |c: &mut Consumer| {
            while let Some(f) = c.peek() {
                assert_eq!(f.bytes(), &[5; 1000][..]);
                f.release();
            }
        };
        for i in 0..8 {
            pause();
            p.push(&[&[5; 1000]]).unwrap();
            assert_eq!(p.at_hot_end(), i == 7, "frame {i}");
        }
        drain(&mut c);
        assert!(p.end_lap_early(), "the consumer took every frame");
        p.flush_hints();
        let claimed = |at| d.warms().then_some((at, fp));
        assert_eq!(p.last_claim(), claimed(0), "the next lap's start");
        // (The consumer passes the wrap marker, freeing the lap's rest.)
        assert!(c.peek().is_none());
        // Next time round the consumer lags: the lap goes on.
        for _ in 0..8 {
            pause();
            p.push(&[&[5; 1000]]).unwrap();
        }
        assert!(p.at_hot_end());
        assert!(!p.end_lap_early(), "a frame is unread");
        p.flush_hints();
        assert_eq!(p.last_claim(), claimed(8 * fp), "past the window");
        drain(&mut c);
        // A window of 32 KiB: frames of 4 KiB end laps there, of 8 KiB
        // not.
        let (mut p, mut c) = heap_ring(4 * CAP).unwrap();
        p.set_hot(32 << 10);
        for (len, ends) in [(4096, true), (8192, false)] {
            assert_eq!(frame::footprint(len + 24) <= producer::HOT_FRAME_MAX, ends);
            let mut ended = false;
            for _ in 0..(2 * CAP / len) {
                p.push(&[&vec![3u8; len + 24]]).unwrap();
                ended |= p.at_hot_end() && p.end_lap_early();
                while let Some(f) = c.peek() {
                    f.release();
                }
            }
            assert_eq!(ended, ends, "{len} B");
        }
    }

    /// Laps ended early at the hot window write only the window's lines:
    /// the producer has not lapped however far its position moved; a lap
    /// that ends at the region's end (a wrap here) makes it so.
    #[test]
    fn only_a_lap_to_the_regions_end_counts_as_lapped() {
        const CAP: usize = 16 << 10;
        let (mut p, mut c) = heap_ring(CAP).unwrap();
        p.set_hot(1024);
        let drain = |c: &mut Consumer| {
            while let Some(f) = c.peek() {
                f.release();
            }
        };
        // A lap of 40-byte frames ends at the window (1 KiB) every 16
        // frames or so: 3 ends within a few hundred pushes.
        let mut ends = 0;
        for _ in 0..1000 {
            p.push(&[&[7u8; 40]]).unwrap();
            if p.at_hot_end() && p.end_lap_early() {
                ends += 1;
                if ends == 3 {
                    break;
                }
            }
            drain(&mut c);
        }
        drain(&mut c);
        assert_eq!(ends, 3, "laps ended early");
        assert!(p.position() >= 3 * CAP as u64, "three laps by position");
        assert!(!p.has_lapped(), "only the hot window was written");
        // 3000-byte frames reach the region's end within a lap (6 of them).
        let big = vec![1u8; 3000];
        for _ in 0..7 {
            p.push(&[&big]).unwrap();
            drain(&mut c);
        }
        assert!(p.has_lapped(), "a lap to the region's end");
        assert!(p.position() >= 4 * CAP as u64);
    }

    /// With 2-bit laps (this build's), random traffic through a small
    /// ring with a hot window whose producer ends its laps early whenever
    /// it may, the consumer now keeping up and now lagging, sizes from 0
    /// to half the ring: every frame arrives whole and in order, so no
    /// header look-alike left laps ago (four laps wrap the tag here) ever
    /// reads as a frame.
    #[test]
    fn early_lap_ends_with_two_lap_bits_lose_nothing() {
        const CAP: usize = 16 << 10;
        let (mut p, mut c) = heap_ring(CAP).unwrap();
        p.set_hot(1024);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let fill = |seq: u64, len: usize| -> Vec<u8> {
            (0..len)
                .map(|i| (seq as usize * 31 + i * 7 + len) as u8)
                .collect()
        };
        let (mut sent, mut got, mut ends) = (0u64, 0u64, 0u64);
        let take = |c: &mut Consumer, got: &mut u64| -> bool {
            let Some(f) = c.peek() else {
                return false;
            };
            assert_eq!(f.bytes(), &fill(*got, f.len())[..], "frame {got}");
            f.release();
            *got += 1;
            true
        };
        for round in 0..60_000u64 {
            let keep_up = (round / 500) % 3 != 2;
            let len = match rnd() % 32 {
                0 => (rnd() % (max_payload(CAP) as u64 + 1)) as usize,
                1..=4 => (rnd() % 700) as usize,
                _ => (rnd() % 48) as usize,
            };
            let data = fill(sent, len);
            while p.push(&[&data]).is_err() {
                assert!(take(&mut c, &mut got), "a full ring has frames");
            }
            sent += 1;
            if p.at_hot_end() {
                ends += u64::from(p.end_lap_early());
            }
            if keep_up || rnd() % 16 == 0 {
                while take(&mut c, &mut got) {}
            }
        }
        while take(&mut c, &mut got) {}
        assert_eq!(got, sent);
        assert!(ends > 200, "{ends} laps ended early");
        // Then a ping-pong of one-line frames: its laps end early, and the
        // bits earlier laps left (in the window and past it) are gone, so
        // its publishes skip the bitmap (the pads of its frames, padded to
        // pairs, count as dirty without a bit: `Producer::is_dirty`).
        for _ in 0..2000 {
            let data = fill(sent, 8);
            p.push(&[&data]).unwrap();
            sent += 1;
            if p.at_hot_end() {
                p.end_lap_early();
            }
            while take(&mut c, &mut got) {}
        }
        assert_eq!(got, sent);
        assert_eq!(p.dirty_count(), 0, "bits left after laps ended early");
    }
}
