//! The consumer side: peek → read → release.

#[cfg(not(loom))]
use super::frame::FRAME_ALIGN;
use super::frame::{self, FRAME_HEADER, LINE};
use super::region::Region;
use super::RingHeader;
use crate::sync::Ordering;
use std::fmt;

/// The longest payload whose lines `peek` prefetches on seeing its header
/// (`Region::prefetch`). Measured on the AMD EPYC VM (2026-12-03,
/// `shmpi-bench latency`, alternating runs, medians), one-way latency
/// without → with: 64 B 0.147 → 0.137 µs, 128 B 0.185 → 0.165, 256 B
/// 0.190 → 0.166 (14 runs each; an earlier 8: 0.125 → 0.120, 0.146 →
/// 0.133, 0.165 → 0.147); window bandwidth at 64-256 B unchanged. At
/// 512 B latency gained 2-16% but window bandwidth lost 14% in one
/// session, so it is left out; 1 KiB frames got slower (0.266 → 0.285),
/// and prefetching the first 4 KiB of every frame slowed 2-4 KiB by
/// 8-16%: there the copy's own loads and the hardware prefetcher do
/// better.
const PREFETCH_MAX: usize = 256;

/// The reading end of a ring.
pub struct Consumer {
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
    /// Position of the next frame to read. The shared `head` mirrors it.
    head: u64,
}

// SAFETY: a Consumer is the only reader of its ring and the only writer of
// `head`; moving it to another thread keeps one thread in that role.
unsafe impl Send for Consumer {}

impl fmt::Debug for Consumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("capacity", &self.capacity)
            .field("head", &self.head)
            .finish()
    }
}

impl Consumer {
    #[cfg(not(loom))]
    pub(crate) fn new(
        header: super::HeaderRef,
        region: Region,
        capacity: usize,
        owner: super::Owner,
    ) -> Result<Self, super::RingCreateError> {
        // Relaxed: only the consumer writes `head`.
        let head = header.get().head.load(Ordering::Relaxed);
        // Every frame starts on a line: `peek` relies on it (its
        // unchecked header word).
        if head % FRAME_ALIGN as u64 != 0 {
            return Err(super::RingCreateError::BadPosition(head));
        }
        Ok(Consumer {
            header,
            region,
            _owner: owner,
            mask: capacity - 1,
            capacity,
            shift: capacity.trailing_zeros(),
            head,
        })
    }

    #[cfg(loom)]
    pub(crate) fn new_model(mem: std::sync::Arc<super::HeapRing>, capacity: usize) -> Self {
        Consumer {
            mem,
            mask: capacity - 1,
            capacity,
            shift: capacity.trailing_zeros(),
            head: 0,
        }
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

    /// The next frame, if the producer has committed one. The frame stays
    /// in the ring until [`Frame::release`].
    #[inline]
    pub fn peek(&mut self) -> Option<Frame<'_>> {
        loop {
            let off = (self.head as usize) & self.mask;
            // SYNC(ring.frame): Acquire; pairs with the Release stores in
            // `Reservation::commit` and `Producer::reserve` (wrap marker):
            // the payload is visible after this (a streamed payload's
            // too: SYNC(ring.stream), the producer's fence before them).
            // SAFETY: `off` is `head` masked to the capacity (the
            // region's length), and `head` is a multiple of FRAME_ALIGN
            // (checked when made, advanced by footprints and skips to the
            // region's end only).
            let word = unsafe { self.region().word_unchecked(off) }.load(Ordering::Acquire);
            match frame::kind_in(word, frame::lap(self.head, self.shift())) {
                frame::KIND_DATA => {
                    let len = frame::len(word);
                    // The word was written by another process: a length
                    // past what a frame may carry means the ring is
                    // corrupted (a peer bug or a stray write), and reading
                    // on would leave the region.
                    assert!(
                        len <= super::max_payload(self.capacity)
                            && off + FRAME_HEADER + len <= self.capacity,
                        "ring corrupted: frame of {len} bytes at offset {off} in a ring of {}",
                        self.capacity
                    );
                    self.prefetch_rest(off, len);
                    return Some(Frame {
                        consumer: self,
                        off,
                        len,
                    });
                }
                frame::KIND_WRAP => {
                    let skip = self.capacity - off;
                    self.advance(skip);
                }
                0 => return None,
                k => panic!("ring corrupted: frame kind {k} at offset {off}"),
            }
        }
    }

    /// The consumer's position (bytes consumed since the ring began).
    pub fn position(&self) -> u64 {
        self.head
    }

    /// Offset in the data region of the header word the next frame will
    /// start with, and that frame's lap: a sleeper may watch that word
    /// (see the transport's `Sleeper`) and test it with
    /// [`is_frame`](super::is_frame).
    pub fn next_word(&self) -> (usize, u64) {
        (
            (self.head as usize) & self.mask,
            frame::lap(self.head, self.shift()),
        )
    }

    /// A token for [`peek_awaited`](Self::peek_awaited): the header word a
    /// frame of `len` payload bytes would carry at this position. `None`
    /// when no such frame can start here (longer than the ring allows, or
    /// past the region's end, where a producer wraps first).
    #[inline(always)]
    pub fn awaited(&self, len: usize) -> Option<Awaited> {
        let off = (self.head as usize) & self.mask;
        if len > super::max_payload(self.capacity) || off + frame::footprint(len) > self.capacity {
            return None;
        }
        let lap = frame::lap(self.head, self.shift());
        Some(Awaited {
            capacity: self.capacity,
            head: self.head,
            word: frame::encode(frame::KIND_DATA, len as u32, lap),
            lap,
            off,
            len,
        })
    }

    /// [`peek`](Self::peek) for a caller that waits for a frame of one
    /// known length (a receive whose buffer is the message's size): one
    /// load and one comparison with the word [`awaited`](Self::awaited)
    /// computed, the frame's bounds checked there already, so a spin on
    /// it is as short as the bare ring's. `Other`: the front is another
    /// frame (another length, a wrap marker), or `s` is of an earlier
    /// position; [`peek`](Self::peek) tells what.
    #[inline(always)]
    pub fn peek_awaited(&mut self, s: &Awaited) -> AwaitedFront<'_> {
        // A token of another position, or of another consumer (whose
        // bounds test was against another capacity), is refused.
        if s.head != self.head || s.capacity != self.capacity {
            return AwaitedFront::Other;
        }
        // SYNC(ring.frame): Acquire, as in `peek`.
        // SAFETY: `s` was made at this position, by a consumer of this
        // capacity (checked above): its offset is this position's masked
        // to the capacity, a frame's (see `peek`).
        let word = unsafe { self.region().word_unchecked(s.off) }.load(Ordering::Acquire);
        if word == s.word {
            self.prefetch_rest(s.off, s.len);
            return AwaitedFront::Frame(Frame {
                consumer: self,
                off: s.off,
                len: s.len,
            });
        }
        if frame::kind_in(word, s.lap) == 0 {
            AwaitedFront::Empty
        } else {
            AwaitedFront::Other
        }
    }

    /// Fetches the other lines of a short frame (`len` payload bytes at
    /// `off`) now, while the caller decodes its header, rather than one
    /// after another by its copy (`PREFETCH_MAX`).
    #[inline(always)]
    fn prefetch_rest(&self, off: usize, len: usize) {
        if len > LINE - FRAME_HEADER && len <= PREFETCH_MAX {
            self.region()
                .prefetch(off + LINE, FRAME_HEADER + len - LINE);
        }
    }

    /// Whether a frame is waiting (a peek without holding it).
    #[inline]
    pub fn has_frame(&mut self) -> bool {
        self.peek().is_some()
    }

    #[inline]
    fn advance(&mut self, bytes: usize) {
        self.head = self.head.wrapping_add(bytes as u64);
        // SYNC(ring.head): Release; pairs with the Acquire in
        // `Producer::refresh_head`: every read of the released bytes
        // happens before the producer reuses them.
        self.header().head.store(self.head, Ordering::Release);
    }
}

/// What [`Consumer::peek_awaited`] waits for (made by
/// [`Consumer::awaited`]).
#[derive(Clone, Copy, Debug)]
pub struct Awaited {
    /// The capacity of the consumer that made it (its bounds test).
    capacity: usize,
    /// The consumer's position it was made at.
    head: u64,
    /// The header word of the awaited frame.
    word: u64,
    /// The lap of frames at `head`.
    lap: u64,
    /// `head`'s offset in the region.
    off: usize,
    /// The awaited payload length.
    len: usize,
}

/// What [`Consumer::peek_awaited`] found at the front.
#[derive(Debug)]
pub enum AwaitedFront<'a> {
    /// A frame of the awaited length.
    Frame(Frame<'a>),
    /// Nothing yet.
    Empty,
    /// Something else (see [`Consumer::peek`]).
    Other,
}

/// A committed frame, readable until released.
#[derive(Debug)]
pub struct Frame<'a> {
    consumer: &'a mut Consumer,
    off: usize,
    len: usize,
}

impl Frame<'_> {
    /// Payload length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the payload is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether this is the last frame the producer has published (as far
    /// as its `tail` shows): a producer still sending is then writing
    /// just past it. A hint (a Relaxed load of a line the producer
    /// writes once a frame), for how to copy the payload out
    /// ([`copy_bytes_back`](super::copy_bytes_back)).
    #[inline]
    pub fn is_newest(&self) -> bool {
        let end = self.consumer.head + frame::footprint(self.len) as u64;
        // Relaxed: informational (see `RingHeader::len`); nothing is read
        // on its strength.
        let tail = self.consumer.header().tail.load(Ordering::Relaxed);
        tail.wrapping_sub(end) as i64 <= 0
    }

    /// Copies payload bytes `at..at + dst.len()` into `dst`.
    ///
    /// # Panics
    /// If the range exceeds the payload.
    #[inline]
    pub fn read(&self, at: usize, dst: &mut [u8]) {
        assert!(at + dst.len() <= self.len, "read past the frame");
        #[cfg(not(loom))]
        dst.copy_from_slice(&self.bytes()[at..at + dst.len()]);
        // SAFETY: the range was published by the Acquire in `peek` and is
        // not released while `self` borrows the consumer.
        #[cfg(loom)]
        unsafe {
            self.consumer
                .region()
                .read(self.off + FRAME_HEADER + at, dst)
        };
    }

    /// The payload as a slice.
    #[cfg(not(loom))]
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the payload range was published by the Acquire in `peek`
        // (or `peek_awaited`) and is not released (so not reused) while
        // `self` borrows the consumer mutably; both checked that it ends
        // within the capacity, the region's length (`peek`'s assert;
        // `awaited`'s test, on a consumer of this capacity, which
        // `peek_awaited` checks).
        unsafe {
            self.consumer
                .region()
                .slice_unchecked(self.off + FRAME_HEADER, self.len)
        }
    }

    /// Gives the frame's bytes back to the producer.
    #[inline]
    pub fn release(self) {
        let fp = frame::footprint(self.len);
        self.consumer.advance(fp);
    }
}
