//! The producer side: reserve → write → commit, or `push_quick` for a
//! frame that fits before the region's end with room by the cached head.

use super::demote::{self, Demote};
use super::frame::{self, FRAME_ALIGN, FRAME_HEADER, LINE};
use super::region::Region;
use super::RingHeader;
use crate::sync::Ordering;
use std::fmt;

/// Bytes kept free after every frame for a guard word (a whole line:
/// frame positions are line-aligned).
const GUARD: usize = FRAME_ALIGN;

/// The hints a producer gave last, for tests: where it claimed lines
/// (offset, length), and what `demote_in_chunks` demoted (offset, bytes,
/// chunks).
#[cfg(all(test, not(loom)))]
#[derive(Clone, Copy, Debug, Default)]
struct Given {
    claim: Option<(usize, usize)>,
    chunks: Option<(usize, usize, usize)>,
}

/// The bits of a `dirty` word that stand for positions starting a
/// 128-byte pair of lines (even positions; `Producer::is_dirty`).
const PAIR_STARTS: u64 = 0x5555_5555_5555_5555;

// `PAIR_STARTS` and `is_dirty` take a bit, and a frame position, for a
// line.
const _: () = assert!(FRAME_ALIGN == LINE);
/// The longest frame (footprint) that may end a lap early at the hot
/// window, whatever the window: a 4 KiB message's with its headers. In a
/// 32 KiB window, 8 KiB messages of an exchange (both ranks sending at
/// once, C's `MPI_Isend` on the ring) took 15-18% longer than through
/// the whole ring (`docs/benchmarks.md`, "Issue 6, thirty-third pass").
pub const HOT_FRAME_MAX: usize = frame::footprint(4096 + 64);

/// The longest frame (header and payload) demoted right after it is
/// published (whole up to [`DEMOTE_AT_ONCE_MAX`], then by its caller in
/// chunks); a longer one is demoted by
/// [`flush_hints`](Producer::flush_hints), when the caller has nothing
/// else to do. In an exchange (both ranks of a pair sending at once, then
/// each copying the other's message) demoting an 8 KiB frame at once held
/// its producer back from that copy: 2.10 -> 2.62 µs per exchange, against
/// 2.15 left for the idle moment, where a ping-pong of rewritten 8 KiB
/// buffers kept its gain (1.64-1.70 -> 1.37 µs one way, with the claims). At
/// 1-2 KiB the same deferral cost a ping-pong 6-14%.
pub const DEMOTE_NOW_MAX: usize = FRAME_HEADER + 4096 + 64;

/// The longest frame demoted whole as soon as it is published; a longer
/// one up to [`DEMOTE_NOW_MAX`] is demoted by its caller right after
/// publishing, [`DEMOTE_CHUNK`] bytes at a time, each chunk after a look
/// at whether the caller has work
/// ([`demote_in_chunks`](Producer::demote_in_chunks)). In an exchange of 4
/// KiB messages a rank that demoted its frame whole held back its copy of
/// the peer's frame, already in: 1.43 µs per exchange, 1.23 with no
/// demotion, 1.29-1.32 in chunks that stop once the peer's frame is in, where
/// a 4 KiB ping-pong (nothing to receive until the peer has read) kept its
/// 0.65 µs one way (1.16 without demotion). Up to 2 KiB whole demotion
/// helps the exchange too (`docs/benchmarks.md`, "thirty-fourth pass").
pub const DEMOTE_AT_ONCE_MAX: usize = FRAME_HEADER + 2048 + 64;

/// The bytes of one chunk of [`Producer::demote_in_chunks`]: 16 lines
/// (8 and 4 did no better).
pub const DEMOTE_CHUNK: usize = 16 * LINE;

// `publish` marks nothing for a one-pair frame from a pair's start: no
// frame is smaller than a pair.
const _: () = assert!(frame::footprint(0) == 2 * LINE);

/// Why a frame could not be reserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingReserveError {
    /// Not enough free bytes now; the value is how many bytes a frame could
    /// carry at the moment. Retry after the consumer releases some.
    TooFewBytes(usize),
    /// The frame can never fit this ring; the value is the largest payload.
    TooLarge(usize),
}

impl fmt::Display for RingReserveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RingReserveError::TooFewBytes(n) => write!(f, "ring full: room for {n} bytes"),
            RingReserveError::TooLarge(n) => {
                write!(f, "frame larger than the ring allows ({n} bytes at most)")
            }
        }
    }
}

impl std::error::Error for RingReserveError {}

/// The writing end of a ring.
pub struct Producer {
    #[cfg(not(loom))]
    header: super::HeaderRef,
    #[cfg(not(loom))]
    region: Region,
    #[cfg(not(loom))]
    _owner: super::Owner,
    #[cfg(loom)]
    mem: std::sync::Arc<super::HeapRing>,
    mask: usize,
    capacity: usize,
    /// log2 of `capacity`, kept so that a frame's lap costs no `tzcnt`
    /// on every look.
    shift: u32,
    /// Position of the next frame. The shared `tail` mirrors it.
    tail: u64,
    /// Last `head` read from the consumer; may lag behind the real one.
    cached_head: u64,
    /// The position a frame started now may reach, by the cached head:
    /// the end of `tail`'s lap or a guard line short of the consumer's
    /// released bytes, whichever comes first (`retarget`). `push_quick`
    /// checks it in one comparison.
    limit: u64,
    /// The header word of a data frame of length 0 at `tail`'s lap
    /// (`retarget`): `publish` adds the length.
    data_word: u64,
    /// One bit per frame position (64-byte offset): set while the word
    /// there is payload of a frame this producer wrote or in a lap end it
    /// skipped (not a header of an earlier lap, which reads as empty), so
    /// a frame ending there next needs a guard.
    dirty: Vec<u64>,
    /// How many bits of `dirty` are set: while 0 (small frames only, a
    /// lap after the last large one), `publish` skips the bitmap.
    dirty_n: usize,
    /// One past the last word of `dirty` that may hold a set bit: how far
    /// `end_lap_early` looks for bits its range makes redundant.
    dirty_top: usize,
    /// `max_payload(capacity)`, kept: the eager path checks it per frame.
    max_len: usize,
    /// The hot window's length in bytes (0: none; [`set_hot`]
    /// (Self::set_hot)): a lap that leaves it while the consumer is close
    /// behind ends there, so a ping-pong keeps reusing a few lines.
    hot: usize,
    /// The footprint of the frame just published if it is small (at most
    /// half the window and [`HOT_FRAME_MAX`]) and reached the hot window's
    /// end; 0 otherwise.
    crossed: usize,
    /// Every frame position from this offset on counts as dirty (the rest
    /// of a lap that ended at the hot window's end; `capacity` or more:
    /// none), without a bit each; a lap that goes on past it moves it
    /// along (`mark_clean`).
    cold_from: usize,
    /// Which frames to demote after publishing them (`demote.rs`).
    demote: Demote,
    /// The TSC when the last demotable frame's commit ended.
    last_commit: u64,
    /// The next frame is part of a burst of sends, as the caller last
    /// said ([`set_in_burst`](Self::set_in_burst)): it does not count as
    /// following a pause. False unless the caller says otherwise: a
    /// producer whose caller never does gates on time alone.
    in_burst: bool,
    /// The footprint of the demoted frame just published when the lines
    /// of as many bytes at the next frame's position are still to be
    /// claimed ([`flush_hints`](Self::flush_hints)); 0: none.
    warm_due: usize,
    /// The demotion of the frame just published, when it is longer than
    /// [`DEMOTE_AT_ONCE_MAX`]: left for
    /// [`demote_in_chunks`](Self::demote_in_chunks) up to
    /// [`DEMOTE_NOW_MAX`] and for [`flush_hints`](Self::flush_hints)
    /// (either, for the shorter ones); its offset and bytes (header and
    /// payload); bytes 0: none.
    demote_due: (usize, usize),
    /// The hints last given (tests).
    #[cfg(all(test, not(loom)))]
    given: Given,
    /// A lap has ended at the region's end (a wrap, or a frame ending
    /// there), not at the hot window's ([`has_lapped`](Self::has_lapped)).
    lapped: bool,
}

// SAFETY: a Producer is the only writer of its ring's frames and `tail`;
// moving it to another thread keeps that: still one thread at a time holds
// the producer role.
unsafe impl Send for Producer {}

impl fmt::Debug for Producer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("capacity", &self.capacity)
            .field("tail", &self.tail)
            .field("cached_head", &self.cached_head)
            .finish()
    }
}

impl Producer {
    #[cfg(not(loom))]
    pub(crate) fn new(
        header: super::HeaderRef,
        region: Region,
        capacity: usize,
        owner: super::Owner,
    ) -> Result<Self, super::RingCreateError> {
        // Relaxed: only the producer writes `tail`; `head` is re-read with
        // Acquire before any byte is reused (`refresh_head`).
        let tail = header.get().tail.load(Ordering::Relaxed);
        let cached_head = header.get().head.load(Ordering::Acquire);
        // Every frame starts on a line: `publish` relies on it (its
        // unchecked header word).
        if tail % FRAME_ALIGN as u64 != 0 {
            return Err(super::RingCreateError::BadPosition(tail));
        }
        let mut p = Producer {
            header,
            region,
            _owner: owner,
            mask: capacity - 1,
            capacity,
            shift: capacity.trailing_zeros(),
            tail,
            cached_head,
            limit: 0,
            data_word: 0,
            dirty: vec![0; capacity.div_ceil(FRAME_ALIGN * 64)],
            dirty_n: 0,
            dirty_top: 0,
            max_len: super::max_payload(capacity),
            hot: 0,
            crossed: 0,
            cold_from: capacity,
            demote: Demote::OFF,
            last_commit: 0,
            in_burst: false,
            warm_due: 0,
            demote_due: (0, 0),
            #[cfg(all(test, not(loom)))]
            given: Given::default(),
            lapped: false,
        };
        p.retarget();
        Ok(p)
    }

    #[cfg(loom)]
    pub(crate) fn new_model(mem: std::sync::Arc<super::HeapRing>, capacity: usize) -> Self {
        let mut p = Producer {
            mem,
            mask: capacity - 1,
            capacity,
            shift: capacity.trailing_zeros(),
            tail: 0,
            cached_head: 0,
            limit: 0,
            data_word: 0,
            dirty: vec![0; capacity.div_ceil(FRAME_ALIGN * 64)],
            dirty_n: 0,
            dirty_top: 0,
            max_len: super::max_payload(capacity),
            hot: 0,
            crossed: 0,
            cold_from: capacity,
            demote: Demote::OFF,
            last_commit: 0,
            in_burst: false,
            warm_due: 0,
            demote_due: (0, 0),
            lapped: false,
        };
        p.retarget();
        p
    }

    #[cfg(not(loom))]
    #[inline]
    fn header(&self) -> &RingHeader {
        self.header.get()
    }
    #[cfg(not(loom))]
    #[inline]
    fn region(&self) -> &Region {
        &self.region
    }
    #[cfg(loom)]
    fn header(&self) -> &RingHeader {
        &self.mem.header
    }
    #[cfg(loom)]
    fn region(&self) -> &Region {
        &self.mem.region
    }

    /// Capacity of the data region in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// log2 of the capacity: a position's lap is `pos >> shift`.
    #[inline]
    fn shift(&self) -> u32 {
        self.shift
    }

    /// The producer's position (bytes produced since the ring began,
    /// skipped lap ends included).
    pub fn position(&self) -> u64 {
        self.tail
    }

    /// Whether a lap has ended at the region's end since this producer
    /// was made (a wrap, or a frame ending there): the frames have been
    /// written all the way round, so the region's pages are in. A lap
    /// ended early at the hot window (`end_lap_early`) does not count:
    /// it advances the position by a whole lap having written only the
    /// window's lines (the peers' C programs' warm-up of 50,000 8-byte
    /// round trips moves it some 780 laps through a 2 MiB ring, its
    /// first 4 KiB written).
    pub fn has_lapped(&self) -> bool {
        self.lapped
    }

    /// How many frame positions the bitmap marks dirty (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn dirty_count(&self) -> usize {
        self.dirty_n
    }

    /// When the last demotable frame was committed (TSC; tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn last_demotable(&self) -> u64 {
        self.last_commit
    }

    /// The consumer position this producer last saw: a sleeper waiting for
    /// room compares [`RingHeader::head_for_sleep`] against it.
    pub fn head_seen(&self) -> u64 {
        self.cached_head
    }

    /// The largest payload a single frame can carry.
    pub fn max_payload(&self) -> usize {
        self.max_len
    }

    /// Whether the consumer has released every frame this producer
    /// published (its head is at the tail, read afresh unless the cached
    /// head already is): a peer that takes this producer's messages as
    /// they come, not one it streams ahead of.
    pub fn drained(&mut self) -> bool {
        if self.cached_head != self.tail {
            self.refresh_head();
        }
        self.cached_head == self.tail
    }

    #[inline]
    fn free(&self) -> usize {
        self.capacity - self.tail.wrapping_sub(self.cached_head) as usize
    }

    #[inline]
    fn refresh_head(&mut self) {
        // SYNC(ring.head): Acquire; pairs with the Release in
        // `Consumer::release`: the consumer is done reading every byte below
        // this position, so the producer may overwrite them.
        self.cached_head = self.header().head.load(Ordering::Acquire);
        self.retarget();
    }

    /// Recomputes `limit` and `data_word` after `tail` left its lap or
    /// the cached head moved.
    #[inline]
    fn retarget(&mut self) {
        let lap_end = (self.tail | self.mask as u64) + 1;
        let room_end = self.cached_head + (self.capacity - GUARD) as u64;
        self.limit = lap_end.min(room_end);
        self.data_word = frame::encode(frame::KIND_DATA, 0, frame::lap(self.tail, self.shift()));
    }

    /// Whether `need` bytes are free, refreshing the cached head only when
    /// the cache says no ("possibly full → refresh → really full").
    #[inline]
    fn has_room(&mut self, need: usize) -> bool {
        if self.free() >= need {
            return true;
        }
        self.refresh_head();
        self.free() >= need
    }

    /// Bytes a new frame could carry right now (refreshes the cached head).
    pub fn room(&mut self) -> usize {
        self.refresh_head();
        self.cached_room()
    }

    /// Bytes a new frame could carry by the cached head. The error path of
    /// `reserve` uses this, not [`room`](Self::room): re-reading the head
    /// there would record a newer head than the one the failed check saw,
    /// and a sleeper comparing against it could miss the wake-up for that
    /// release.
    fn cached_room(&self) -> usize {
        let off = (self.tail as usize) & self.mask;
        let contiguous = self.capacity - off;
        // One line past every frame stays free for its guard word.
        let free = self.free().saturating_sub(GUARD);
        let here = frame::payload_in(contiguous.min(free));
        let after_wrap = frame::payload_in(free.saturating_sub(contiguous));
        here.max(after_wrap).min(self.max_payload()) & !7
    }

    #[inline]
    fn is_dirty(&self, off: usize) -> bool {
        // The second line of a 128-byte pair counts as dirty, and has no
        // bit (`PAIR_STARTS`): a small frame from a pair's start covers it
        // as padding (`frame::PAIRED_MAX`), so a ping-pong of small frames
        // would otherwise keep a bit per pair of its window, and every
        // publish would look at the bitmap. Only a frame after one of an
        // odd number of lines starts there; it gets a guard.
        if off >= self.cold_from || off & LINE != 0 {
            return true;
        }
        if self.dirty_n == 0 {
            return false;
        }
        let i = off / FRAME_ALIGN;
        self.dirty[i / 64] & (1 << (i % 64)) != 0
    }

    /// Marks the one frame position `off` clean (a header, which reads as
    /// empty once its lap is over, or a guard just written).
    #[inline]
    fn mark_clean(&mut self, off: usize) {
        if off >= self.cold_from {
            // Frames are written in order, each starting below
            // `cold_from`: the positions from `cold_from` to here belong
            // to the frame being written (its payload gets bits of its
            // own), so the range now starts after `off`.
            self.cold_from = off + FRAME_ALIGN;
        }
        if self.dirty_n == 0 {
            return;
        }
        let i = off / FRAME_ALIGN;
        let (w, bit) = (i / 64, 1u64 << (i % 64));
        if self.dirty[w] & bit != 0 {
            self.dirty[w] &= !bit;
            self.dirty_n -= 1;
        }
    }

    /// Sets the hot window: the first `bytes` of the region (rounded down
    /// to frame positions), where a lap may end early
    /// ([`end_lap_early`](Self::end_lap_early)); 0, or a window of more
    /// than a quarter of the ring, turns it off.
    ///
    /// Why: a ping-pong through the whole ring meets every line cold, a
    /// lap later; through a few kilobytes, lines both cores still hold.
    /// One way of an 8-byte message through a 2 MiB ring took up to 1.4
    /// (and, its polls paced by PAUSE, 2) times as long as through a 4
    /// KiB one here (`docs/benchmarks.md`, "Issue 6, tenth pass").
    pub fn set_hot(&mut self, bytes: usize) {
        let hot = bytes & !(FRAME_ALIGN - 1);
        // At least two of the smallest frames: one that ends a lap is at
        // most half the window.
        self.hot = if hot >= 2 * frame::footprint(0) && hot <= self.capacity / 4 {
            hot
        } else {
            0
        };
    }

    /// Whether the frame just published was small (at most half the
    /// window and [`HOT_FRAME_MAX`]) and reached the hot window's end:
    /// the moment a caller that knows the traffic is a ping-pong may end
    /// the lap ([`end_lap_early`](Self::end_lap_early)).
    #[inline]
    pub fn at_hot_end(&self) -> bool {
        self.crossed != 0
    }

    /// Right after a frame for which [`at_hot_end`](Self::at_hot_end)
    /// says yes: if the consumer has taken every frame before it, the lap
    /// ends here, with a wrap marker, and the next frame starts at offset
    /// 0; the skipped rest of the lap counts as dirty (`cold_from`), as
    /// the rest of a lap after any wrap does. Otherwise the lap goes on
    /// through the ring. Returns whether it ended. Costs a read of the
    /// consumer's `head` (a line it writes).
    ///
    /// For a ping-pong only (the caller's judgement: the transport asks
    /// whether the peer answered since its last frame): in a stream, even
    /// one the consumer keeps up with, a few lines written and read at
    /// once by both cores cost small messages 40% of their bandwidth
    /// here.
    #[cold]
    #[inline(never)]
    pub fn end_lap_early(&mut self) -> bool {
        let fp = std::mem::take(&mut self.crossed);
        let off = (self.tail as usize) & self.mask;
        if fp == 0 || off < self.hot {
            return false;
        }
        self.refresh_head();
        let contiguous = self.capacity - off;
        // The skipped rest of the lap is taken as written: it must be
        // free, as for any wrap.
        if self.tail.wrapping_sub(self.cached_head) > fp as u64 || self.free() < contiguous {
            return false;
        }
        self.mark_clean(off);
        self.cold_from = self.cold_from.min(off + FRAME_ALIGN);
        if self.dirty_n != 0 {
            self.drop_covered_bits();
        }
        // SYNC(ring.frame): Release; pairs with the Acquire in
        // `Consumer::peek`, as `wrap`'s marker.
        let word = frame::encode(frame::KIND_WRAP, 0, frame::lap(self.tail, self.shift()));
        self.region().word(off).store(word, Ordering::Release);
        self.tail = self.tail.wrapping_add(contiguous as u64);
        self.retarget();
        self.publish_tail();
        true
    }

    /// Marks the frame positions of `off..off + len` dirty. Only positions
    /// that start a 128-byte pair get bits: the others count as dirty
    /// whatever (`is_dirty`).
    #[inline]
    fn mark_dirty(&mut self, off: usize, len: usize) {
        let (mut i, end) = (off / FRAME_ALIGN, (off + len) / FRAME_ALIGN);
        while i < end {
            let (w, b) = (i / 64, i % 64);
            let n = (64 - b).min(end - i);
            let bits = if n == 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << b
            } & PAIR_STARTS;
            self.dirty_n += (bits & !self.dirty[w]).count_ones() as usize;
            self.dirty[w] |= bits;
            i += n;
        }
        self.dirty_top = self.dirty_top.max(end.div_ceil(64));
    }

    /// Clears the bits of positions from `cold_from` on: the range counts
    /// them dirty already, and while laps end early nothing would clear
    /// them, so `dirty_n` would stay above 0 and every publish would look
    /// at the bitmap before its header store. Looks at the words up to
    /// `dirty_top` only.
    fn drop_covered_bits(&mut self) {
        let first = self.cold_from / FRAME_ALIGN;
        let w0 = first / 64;
        for w in w0..self.dirty_top.min(self.dirty.len()) {
            let keep = if w == w0 {
                (1u64 << (first % 64)) - 1
            } else {
                0
            };
            self.dirty_n -= (self.dirty[w] & !keep).count_ones() as usize;
            self.dirty[w] &= keep;
        }
        self.dirty_top = self.dirty_top.min(w0 + 1);
    }

    /// Reserves a frame of `len` payload bytes, to be filled with
    /// [`Reservation::write`] and published with [`Reservation::commit`].
    ///
    /// # Errors
    /// [`RingReserveError::TooLarge`] if `len` exceeds
    /// [`max_payload`](Self::max_payload); [`RingReserveError::TooFewBytes`]
    /// if the consumer has not released enough bytes yet (nothing changes).
    #[inline(always)]
    pub fn reserve(&mut self, len: usize) -> Result<Reservation<'_>, RingReserveError> {
        if len > self.max_payload() {
            return Err(RingReserveError::TooLarge(self.max_payload()));
        }
        let fp = frame::footprint(len);
        let mut off = (self.tail as usize) & self.mask;
        if fp > self.capacity - off {
            off = self.wrap()?;
        }
        if !self.has_room(fp + GUARD) {
            return Err(self.too_few());
        }
        Ok(Reservation {
            producer: self,
            off,
            len,
            streamed: false,
        })
    }

    /// A frame would straddle the end of the region: marks the rest of the
    /// lap as skipped and starts over at offset 0 (every lap starts with a
    /// frame there). Returns the new offset, 0.
    #[cold]
    #[inline(never)]
    fn wrap(&mut self) -> Result<usize, RingReserveError> {
        let off = (self.tail as usize) & self.mask;
        let contiguous = self.capacity - off;
        if !self.has_room(contiguous) {
            return Err(RingReserveError::TooFewBytes(self.cached_room()));
        }
        // The marker's word is a header; the skipped positions after it
        // keep words of earlier laps, which a later frame ending there
        // guards (see `frame.rs`).
        self.mark_clean(off);
        self.mark_dirty(off + FRAME_ALIGN, contiguous - FRAME_ALIGN);
        // SYNC(ring.frame): Release; pairs with the Acquire in
        // `Consumer::peek`.
        let word = frame::encode(frame::KIND_WRAP, 0, frame::lap(self.tail, self.shift()));
        self.region().word(off).store(word, Ordering::Release);
        self.tail = self.tail.wrapping_add(contiguous as u64);
        self.retarget();
        self.lapped = true;
        Ok(0)
    }

    /// The error of a reserve that found too little room, out of line.
    #[cold]
    #[inline(never)]
    fn too_few(&mut self) -> RingReserveError {
        self.publish_tail();
        RingReserveError::TooFewBytes(self.cached_room())
    }

    /// Copies `parts` into one frame and commits it.
    ///
    /// # Errors
    /// As [`reserve`](Self::reserve); nothing is written on error.
    pub fn push(&mut self, parts: &[&[u8]]) -> Result<(), RingReserveError> {
        let len = parts.iter().map(|p| p.len()).sum();
        let mut r = self.reserve(len)?;
        let mut at = 0;
        for p in parts {
            r.write(at, p);
            at += p.len();
        }
        r.commit();
        Ok(())
    }

    /// Sets which frames this producer demotes after publishing them
    /// (`Demote::OFF` by default).
    pub fn set_demote(&mut self, demote: Demote) {
        self.demote = demote;
    }

    /// Says whether the frames published from now on belong to a burst
    /// of sends; such a frame is never taken as following a pause,
    /// however long ago the last one was, so it is neither demoted nor
    /// followed by a claim. The transport says so before each sole frame:
    /// a burst's when it has not looked for incoming messages since its
    /// last frame to this peer (`Transport::looks`). The later frames of
    /// a window of sends go out as fast as their caller makes them, and a
    /// demotion among them held back the rest, while the first frame
    /// after a look (a ping-pong's answer, a window's first) keeps its
    /// demotion (`demote.rs`). The time gate still applies to that frame:
    /// it counts the copy, which a look does not.
    #[inline(always)]
    pub fn set_in_burst(&mut self, burst: bool) {
        self.in_burst = burst;
    }

    /// What [`set_in_burst`](Self::set_in_burst) last said (false until
    /// it is called).
    #[inline(always)]
    pub fn in_burst(&self) -> bool {
        self.in_burst
    }

    /// Demotes the payload lines of the frame of `bytes` bytes just
    /// published at `off` (past its header line) if it follows a pause
    /// (`demote.rs`) and is not part of a burst
    /// ([`set_in_burst`](Self::set_in_burst)): now, or for a frame longer than
    /// [`DEMOTE_AT_ONCE_MAX`] by [`demote_in_chunks`](Self::demote_in_chunks)
    /// or [`flush_hints`](Self::flush_hints). Says whether the frame
    /// followed a pause (demoted, or, where the producer only claims,
    /// gated for the claim).
    #[inline(never)]
    fn demote_after_pause(&mut self, off: usize, bytes: usize) -> bool {
        let now = demote::tsc();
        if !self.in_burst && Demote::after_pause(now, self.last_commit, bytes) {
            if !self.demote.demotes() {
                // Gated for the claims only.
                self.last_commit = now;
            } else if bytes > DEMOTE_AT_ONCE_MAX {
                self.demote_due = (off, bytes);
                self.last_commit = now;
            } else {
                self.region().demote(off + LINE, bytes - LINE);
                self.last_commit = demote::tsc();
            }
            true
        } else {
            self.last_commit = now;
            false
        }
    }

    /// Demotes the frame just published if it is longer than
    /// [`DEMOTE_AT_ONCE_MAX`] and up to [`DEMOTE_NOW_MAX`] (a frame
    /// following a pause, whose demotion is due): [`DEMOTE_CHUNK`] bytes at
    /// a time, and before each chunk after the first `idle()` says whether
    /// the caller still has nothing else to do; once it has (its peer's
    /// frame is in), the rest is dropped. Nothing for other frames (a
    /// longer one's demotion stays for [`flush_hints`](Self::flush_hints)).
    #[inline(never)]
    pub fn demote_in_chunks(&mut self, mut idle: impl FnMut() -> bool) {
        if !self.chunks_due() {
            return;
        }
        let (off, bytes) = std::mem::take(&mut self.demote_due);
        let (mut at, end) = (off + LINE, off + bytes);
        while at < end {
            let n = (end - at).min(DEMOTE_CHUNK);
            self.region().demote(at, n);
            at += n;
            if at < end && !idle() {
                break;
            }
        }
        self.last_commit = demote::tsc();
        #[cfg(all(test, not(loom)))]
        {
            let done = at - off - LINE;
            self.given.chunks = Some((off + LINE, done, done.div_ceil(DEMOTE_CHUNK)));
        }
    }

    /// Whether [`demote_in_chunks`](Self::demote_in_chunks) has a
    /// demotion to give.
    #[inline(always)]
    pub fn chunks_due(&self) -> bool {
        self.demote_due.1.wrapping_sub(1) < DEMOTE_NOW_MAX
    }

    /// Whether hints are left for [`flush_hints`](Self::flush_hints):
    /// the last frame published was demoted, and the claim of the next
    /// frame's lines (or the demotion itself, for a long frame) is due.
    #[inline(always)]
    pub fn hints_due(&self) -> bool {
        self.warm_due != 0 || self.demote_due.1 != 0
    }

    /// Gives the hints the last frame published left (`Demote`), once:
    /// the demotion of a frame longer than [`DEMOTE_AT_ONCE_MAX`] (unless
    /// [`demote_in_chunks`](Self::demote_in_chunks) took it), and, where
    /// the producer claims ([`Demote::warms`]), the claim for writing of
    /// the lines where the next frame will start (at the tail, after any
    /// early lap end), as many as that frame took, up to the region's end.
    ///
    /// For a caller with nothing else to do (waiting for an answer):
    /// after a demoted frame the next is likely as long and written after
    /// a pause, and its stores then find their lines owned. A caller that
    /// has work, as a rank of an exchange about to copy its peer's
    /// message, does not call it: the hints would compete with that
    /// copy's loads (2-4 KiB exchanges took 2-4% longer when every
    /// demoted frame claimed at once, 8 KiB ones 25% longer when demoted
    /// at once).
    #[inline(never)]
    pub fn flush_hints(&mut self) {
        let (off, bytes) = std::mem::take(&mut self.demote_due);
        if bytes != 0 {
            self.region().demote(off + LINE, bytes - LINE);
        }
        let fp = std::mem::take(&mut self.warm_due);
        if fp == 0 {
            return;
        }
        let off = (self.tail as usize) & self.mask;
        let len = fp.min(self.capacity - off);
        self.region().claim(off, len);
        #[cfg(all(test, not(loom)))]
        {
            self.given.claim = Some((off, len));
        }
    }

    /// What the last [`demote_in_chunks`](Self::demote_in_chunks) that had
    /// a demotion to give demoted: offset, bytes and chunks (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn last_chunks(&self) -> Option<(usize, usize, usize)> {
        self.given.chunks
    }

    /// Where the last claim of the next frame's lines was: offset and
    /// length (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn last_claim(&self) -> Option<(usize, usize)> {
        self.given.claim
    }

    /// Writes `head` (its words little-endian, one store each) and then
    /// `data` into one frame and publishes it, if the frame fits before
    /// the end of the region and the cached head shows room for it and its
    /// guard line: the eager send's path, with no reservation, wrap or
    /// re-read of the consumer's head. False, with nothing written,
    /// otherwise; the caller then goes through [`reserve`](Self::reserve),
    /// which handles both.
    #[inline(always)]
    pub fn push_quick<const W: usize>(&mut self, head: &[u64; W], data: &[u8]) -> bool {
        let len = 8 * W + data.len();
        let fp = frame::footprint(len);
        // Within the lap and a guard line short of the consumer, by the
        // cached head (`limit`): as `reserve` would find without a wrap
        // or a refresh.
        if len > self.max_payload() || self.tail + fp as u64 > self.limit {
            return super::refused();
        }
        let off = (self.tail as usize) & self.mask;
        // SAFETY: as in `Reservation::write`: by the cached head (never
        // ahead of the consumer's) the frame's `fp` bytes at `off` are
        // released and not yet published, so only this producer touches
        // them; they lie inside the region (`tail + fp <= limit`, at most
        // the end of the tail's lap, so `off + fp <= capacity`);
        // `off` is a frame's offset and `FRAME_HEADER` a word, so the
        // words are 8-aligned.
        unsafe { self.region().write_words(off + FRAME_HEADER, head) };
        // SAFETY: as above; `8 W + data.len() = len <= fp - FRAME_HEADER`.
        unsafe { self.region().write(off + FRAME_HEADER + 8 * W, data) };
        self.publish(off, len, false);
        true
    }

    /// Writes the guard at frame position `next` (see `publish`): out of
    /// line, so that the common path to the header store falls through.
    #[cold]
    #[inline(never)]
    fn write_guard(&mut self, next: usize) {
        // Relaxed: published by the Release of the frame's header word.
        self.region().word(next).store(0, Ordering::Relaxed);
        self.mark_clean(next);
    }

    /// Publishes the frame of `len` payload bytes written at `off`;
    /// `streamed`: its payload went to memory with non-temporal stores,
    /// so no cache holds its lines to demote.
    #[inline(always)]
    fn publish(&mut self, off: usize, len: usize, streamed: bool) {
        let fp = frame::footprint(len);
        // The word where the next frame will start must not read as a
        // frame of the lap the consumer will be in when it looks there: a
        // header of an earlier lap cannot, but payload or skipped bytes
        // an earlier lap left there get a guard (`reserve` and
        // `push_quick` kept its line free). Relaxed: published by the
        // Release below.
        let next = (off + fp) & self.mask;
        if self.is_dirty(next) {
            self.write_guard(next);
        }
        // SYNC(ring.frame): Release; pairs with the Acquire in
        // `Consumer::peek`: the payload (and guard) written above is
        // visible to the consumer once it sees this header word.
        debug_assert_eq!(
            self.data_word,
            frame::encode(frame::KIND_DATA, 0, frame::lap(self.tail, self.shift()))
        );
        let word = self.data_word | len as u64;
        // SAFETY: `off` is `tail` masked to the capacity (the region's
        // length), and `tail` is a multiple of FRAME_ALIGN (checked when
        // made, advanced by footprints and wraps only), so the word is
        // aligned and inside.
        unsafe { self.region().word_unchecked(off) }.store(word, Ordering::Release);
        // The frame's other positions now hold payload. Producer-private
        // bookkeeping, after the store that a waiting consumer needs
        // first (the guard above is at `next`, outside the frame, whose
        // bit this does not touch: a frame is smaller than the ring).
        self.mark_clean(off);
        // Every frame takes at least a pair (`frame::footprint`); one that
        // takes a single pair from a pair's start covers only the pair's
        // second line, which has no bit: nothing to mark.
        if !(fp == 2 * LINE && off & LINE == 0) {
            self.mark_dirty(off + FRAME_ALIGN, fp - FRAME_ALIGN);
        }
        // The hints of the frame before are dropped: a frame published
        // before they were given makes them stale.
        self.demote_due = (0, 0);
        let paused = !streamed
            && self.demote.covers(FRAME_HEADER + len)
            && self.demote_after_pause(off, FRAME_HEADER + len);
        let warm = paused && self.demote.warms();
        self.tail = self.tail.wrapping_add(fp as u64);
        if self.tail & self.mask as u64 == 0 {
            // The frame ended the lap exactly.
            self.retarget();
            self.lapped = true;
        }
        self.publish_tail();
        // Only a small frame may end a lap early: through the same few
        // lines again and again, 8-64 KiB messages took 1.6-2.7 times as
        // long as through the whole ring (`docs/benchmarks.md`, "Issue 6,
        // tenth pass").
        self.crossed = if off < self.hot
            && fp >= self.hot - off
            && fp <= self.hot / 2
            && fp <= HOT_FRAME_MAX
        {
            fp
        } else {
            0
        };
        // The claim waits for `flush_hints`: the caller's idle moment, and
        // after `end_lap_early` has placed the next frame.
        self.warm_due = if warm { fp } else { 0 };
    }

    #[inline]
    fn publish_tail(&self) {
        // Relaxed: `tail` is informational (`RingHeader::len`); frames are
        // published by their header words (SYNC(ring.frame)).
        self.header().tail.store(self.tail, Ordering::Relaxed);
    }
}

/// A reserved, not yet published frame.
#[derive(Debug)]
pub struct Reservation<'a> {
    producer: &'a mut Producer,
    off: usize,
    len: usize,
    /// Some of the payload was written with non-temporal stores.
    streamed: bool,
}

impl Reservation<'_> {
    /// The payload length reserved.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the frame carries no payload.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `src` into the payload at byte `at`.
    ///
    /// # Panics
    /// If `at + src.len()` exceeds the reserved length.
    #[inline(always)]
    pub fn write(&mut self, at: usize, src: &[u8]) {
        self.write_by(at, src, false);
    }

    /// Copies `src` into the payload at byte `at` with non-temporal
    /// stores, fenced before returning (so before `commit`'s publishing
    /// store): the lines go to memory and leave every cache, for a
    /// consumer whose core shares no cache with this one
    /// ([`copy_streaming`](super::copy_streaming)).
    ///
    /// # Panics
    /// If `at + src.len()` exceeds the reserved length.
    #[inline]
    pub fn write_streaming(&mut self, at: usize, src: &[u8]) {
        self.write_by(at, src, true);
    }

    /// [`write`](Self::write) or, `streaming`,
    /// [`write_streaming`](Self::write_streaming).
    #[inline(always)]
    fn write_by(&mut self, at: usize, src: &[u8], streaming: bool) {
        assert!(at + src.len() <= self.len, "write past the reserved frame");
        let (region, off) = (self.producer.region(), self.off + FRAME_HEADER + at);
        self.streamed |= streaming;
        if streaming {
            // SAFETY: `reserve` checked that the frame's bytes are free
            // (below the consumer's released head + capacity) and the
            // consumer reads nothing here until `commit` publishes it.
            unsafe { region.write_streaming(off, src) };
        } else {
            // SAFETY: as for the streaming copy just above.
            unsafe { region.write(off, src) };
        }
    }

    /// Publishes the frame to the consumer.
    #[inline(always)]
    pub fn commit(self) {
        self.producer.publish(self.off, self.len, self.streamed);
    }
}
