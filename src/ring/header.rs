//! The ring's shared header: consumer index, producer index, capacity.

use crate::sync::{AtomicU32, AtomicU64, CachePadded, Ordering};

/// The shared part of a ring, `#[repr(C)]`, placed in front of (or apart
/// from) its data region. Each index sits on its own cache line(s) so the
/// producer and the consumer never write the same line.
///
/// Both indices are byte *positions* that only grow (modulo 2^64): the data
/// offset of a position is `pos & (capacity - 1)`, and `tail - head` is the
/// number of bytes in use, so full and empty are told apart without a
/// wasted slot.
#[repr(C)]
#[derive(Debug)]
pub struct RingHeader {
    /// Bytes the consumer has released. Written only by the consumer.
    pub(crate) head: CachePadded<AtomicU64>,
    /// Bytes the producer has committed. Written only by the producer. The
    /// consumer does not need it to find frames (it reads the frame header
    /// words, see `frame.rs`); it serves `len()` and diagnostics.
    pub(crate) tail: CachePadded<AtomicU64>,
    /// Rarely written facts: the capacity and the consumer's `watched`
    /// flag (see [`RingHeader::watched`]).
    pub(crate) meta: CachePadded<Meta>,
}

/// The rarely written line of a ring header.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Meta {
    /// Size of the data region in bytes: a power of two, at least
    /// `MIN_CAPACITY`.
    /// Written once before the ring is shared.
    pub(crate) capacity: AtomicU64,
    /// Set by the consumer while it polls this ring's next frame directly,
    /// so the producer need not flag the frame in the consumer's pending
    /// bitmap. Only a hint for the layer above; the ring itself ignores it.
    pub(crate) watched: AtomicU32,
    _reserved: AtomicU32,
}

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<RingHeader>() == 3 * crate::sync::CACHE_LINE);

impl RingHeader {
    /// A header for a ring of `capacity` bytes, on the heap (tests, loom,
    /// process-local use).
    pub fn new(capacity: u64) -> Self {
        RingHeader {
            head: CachePadded::new(AtomicU64::new(0)),
            tail: CachePadded::new(AtomicU64::new(0)),
            meta: CachePadded::new(Meta {
                capacity: AtomicU64::new(capacity),
                watched: AtomicU32::new(0),
                _reserved: AtomicU32::new(0),
            }),
        }
    }

    /// Sets the capacity of a zeroed header in place, before any handle
    /// exists.
    pub fn init(&self, capacity: u64) {
        // Relaxed: the header is published to other processes by the
        // segment's start barrier (SYNC(job.start) in docs/memory-model.md).
        self.meta.capacity.store(capacity, Ordering::Relaxed);
        self.meta.watched.store(0, Ordering::Relaxed);
        self.head.store(0, Ordering::Relaxed);
        self.tail.store(0, Ordering::Relaxed);
    }

    /// The capacity in bytes.
    pub fn capacity(&self) -> u64 {
        // Relaxed: written once before sharing (see `init`).
        self.meta.capacity.load(Ordering::Relaxed)
    }

    /// The consumer's "I poll this ring directly" flag. Its orderings are
    /// the user's: the transport pairs it with SeqCst fences
    /// (`SYNC(watched)` in docs/memory-model.md).
    pub fn watched(&self) -> &AtomicU32 {
        &self.meta.watched
    }

    /// Bytes in use, as seen now; may be stale by the time it returns.
    pub fn len(&self) -> u64 {
        // Relaxed on both: a snapshot for diagnostics, no data is read
        // through it.
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Relaxed);
        tail.wrapping_sub(head)
    }

    /// The consumer's released position, loaded SeqCst: for a producer
    /// about to sleep until room appears (the Dekker pair with the
    /// consumer's SeqCst fence before it rings the producer's doorbell,
    /// `SYNC(doorbell)`).
    pub fn head_for_sleep(&self) -> u64 {
        self.head.load(Ordering::SeqCst)
    }

    /// The producer's committed position, loaded SeqCst: for a consumer
    /// about to sleep until a frame arrives (the producer's fence after
    /// its commit orders the store, `SYNC(doorbell)`).
    pub fn tail_for_sleep(&self) -> u64 {
        self.tail.load(Ordering::SeqCst)
    }

    /// Whether no committed bytes are waiting, as seen now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
