//! Frame encoding.
//!
//! A frame is an 8-byte header word followed by the payload, padded to a
//! multiple of 8. The header word, read and written atomically, packs:
//!
//! ```text
//! bits 0..32   payload length in bytes
//! bits 32..40  kind: 0 = empty (not yet written), 1 = data, 2 = wrap marker
//! bits 40..64  reserved, zero
//! ```
//!
//! The consumer finds frames by reading the header word at its head
//! position: zero means "nothing yet". The producer keeps that true with a
//! *guard*: before publishing a frame it zeroes the header word where the
//! next frame will start, so the consumer never mistakes stale bytes from an
//! earlier lap for a frame. A wrap marker tells the consumer to skip to the
//! start of the data region.

/// Bytes of the frame header word.
pub const FRAME_HEADER: usize = 8;
/// Frames start on 8-byte boundaries.
pub const FRAME_ALIGN: usize = 8;

pub(crate) const KIND_DATA: u64 = 1;
pub(crate) const KIND_WRAP: u64 = 2;

/// Bytes a frame with `len` payload bytes occupies in the ring.
#[inline]
pub const fn footprint(len: usize) -> usize {
    FRAME_HEADER + ((len + FRAME_ALIGN - 1) & !(FRAME_ALIGN - 1))
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
