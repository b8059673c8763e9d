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
//! position: zero means "nothing yet". The *consumer* keeps that true: when
//! it releases a frame (or a skipped end of lap) it clears the word at
//! every frame-start offset in it, so stale bytes from an earlier lap never
//! look like a frame and the producer writes nothing but the frame itself
//! (one cache line for a small message). A wrap marker tells the consumer
//! to skip to the start of the data region.

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
