//! Frame encoding.
//!
//! A frame is an 8-byte header word followed by the payload, the whole
//! padded to a multiple of 64 bytes: with a line-aligned data region every
//! frame starts a cache line, so a small message (up to 56 bytes with its
//! header) is exactly one line and the consumer's spin on the header word
//! pulls in the payload with it. The header word, read and written atomically, packs:
//!
//! ```text
//! bits 0..32   payload length in bytes
//! bits 32..40  kind: 0 = empty (not yet written), 1 = data, 2 = wrap marker
//! bits 40..64  reserved, zero
//! ```
//!
//! The consumer finds frames by reading the header word at its head
//! position: zero means "nothing yet". Both ends keep that true, each for
//! the words it knows about:
//!
//! - the *consumer* clears the header word of every frame (or wrap marker)
//!   it releases: one store, in the line it read first;
//! - the *producer* remembers which frame positions hold payload of large
//!   frames it wrote (a bit per 64-byte position) and, when a frame's next
//!   position is one of them, zeroes that word (a guard) before it
//!   publishes the frame; `reserve` keeps a line free past every frame for
//!   it.
//!
//! So a small message is still one line written by the producer and one
//! word cleared by the consumer, and a large frame costs the consumer one
//! store instead of a store into every line it read (which pulled each
//! line back into its cache, modified, on its critical path) and the
//! producer at most one guard. A wrap marker tells the consumer to skip to
//! the start of the data region; every lap starts with a frame at offset
//! 0, whose header the consumer cleared.

/// Bytes of the frame header word.
pub const FRAME_HEADER: usize = 8;
/// Frames start on 64-byte (cache-line) boundaries of the data region.
pub const FRAME_ALIGN: usize = 64;

pub(crate) const KIND_DATA: u64 = 1;
pub(crate) const KIND_WRAP: u64 = 2;

/// Bytes a frame with `len` payload bytes occupies in the ring.
#[inline]
pub const fn footprint(len: usize) -> usize {
    (FRAME_HEADER + len + FRAME_ALIGN - 1) & !(FRAME_ALIGN - 1)
}

#[inline]
pub(crate) const fn encode(kind: u64, len: u32) -> u64 {
    (kind << 32) | len as u64
}

#[inline]
pub(crate) const fn kind(word: u64) -> u64 {
    (word >> 32) & 0xff
}

#[inline]
pub(crate) const fn len(word: u64) -> usize {
    (word & 0xffff_ffff) as usize
}
