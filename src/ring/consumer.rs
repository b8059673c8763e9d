//! The consumer side: peek → read → release.

use super::frame::{self, FRAME_ALIGN, FRAME_HEADER};
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
    ) -> Self {
        // Relaxed: only the consumer writes `head`.
        let head = header.get().head.load(Ordering::Relaxed);
        Consumer {
            header,
            region,
            _owner: owner,
            mask: capacity - 1,
            capacity,
            shift: capacity.trailing_zeros(),
            head,
        }
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
            // the payload is visible after this.
            let word = self.region().word(off).load(Ordering::Acquire);
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
                    // A short frame's other lines are fetched now, while
                    // the caller decodes the header, rather than one
                    // after another by its copy (`PREFETCH_MAX`).
                    if len > FRAME_ALIGN - FRAME_HEADER && len <= PREFETCH_MAX {
                        self.region()
                            .prefetch(off + FRAME_ALIGN, FRAME_HEADER + len - FRAME_ALIGN);
                    }
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
        // and is not released (so not reused) while `self` borrows the
        // consumer mutably.
        unsafe {
            self.consumer
                .region()
                .slice(self.off + FRAME_HEADER, self.len)
        }
    }

    /// Gives the frame's bytes back to the producer.
    #[inline]
    pub fn release(self) {
        let fp = frame::footprint(self.len);
        self.consumer.advance(fp);
    }
}
