//! Frame encoding.
//!
//! A frame is an 8-byte header word followed by the payload, the whole
//! padded to a multiple of 64 bytes (a small frame's to a multiple of
//! 128, [`PAIRED_MAX`]): with a line-aligned data region every frame
//! starts a cache line, so a small message (up to 56 bytes with its
//! header) is written and read as one line, the rest of its pair being
//! padding, and the consumer's spin on the header word pulls in the
//! payload with it; in a run of small frames from a pair's
//! start, the line that shares a frame's 128-byte pair is that frame's
//! own (see [`PAIRED_MAX`]). The header word, read and written atomically, packs:
//!
//! ```text
//! bits 0..32   payload length in bytes
//! bits 32..40  kind: 0 = empty (not yet written), 1 = data, 2 = wrap marker
//! bits 40..64  lap: the number of the ring lap the frame was written in,
//!              plus one, modulo 2^24 (position / capacity + 1)
//! ```
//!
//! The consumer finds frames by reading the header word at its head
//! position: a frame is there when the kind is not zero and the lap is the
//! lap of the head position; anything else means "nothing yet". The
//! consumer never writes into the data region (a released frame's line
//! stays where the producer will write next: no line travels back to the
//! consumer's side and then again to the producer's for a clear, which on
//! x86 delays the consumer's next store, its reply, by a line transfer).
//! What the consumer may find at its head position before the producer
//! writes there:
//!
//! - a header of an earlier lap (the last lap in which a frame started
//!   there): its lap differs, it reads "empty";
//! - payload of a larger frame of an earlier lap (or the unwritten pad
//!   line of a small one, which holds whatever was there), or bytes of a
//!   lap's skipped end (after a wrap marker): the producer remembers those
//!   positions (a bit per 64-byte position, "dirty") and, when a frame
//!   ends at one, zeroes its word (a guard) before it publishes the frame;
//!   `reserve` keeps a line free past every frame for it. So a position
//!   holds zero or the header of its last lap as a frame start, and since
//!   then every lap in which no frame started there made it dirty: when
//!   the consumer arrives, the word is zero, the previous lap's header or
//!   the new frame (one bit of lap would do; 24 make a stray word
//!   unlikely to pass).
//!
//! A small message is thus one line written by the producer and read by
//! the consumer, as in a minimal sequence-word ring. A wrap marker tells
//! the consumer to skip to the start of the data region; every lap starts
//! with a frame at offset 0.

/// Bytes of the frame header word.
pub const FRAME_HEADER: usize = 8;
/// Frames start on 64-byte (cache-line) boundaries of the data region.
pub const FRAME_ALIGN: usize = 64;

/// The cache line a frame's bytes move in: what the consumer prefetches
/// and the producer demotes line by line.
pub const LINE: usize = 64;

/// Frames of at most this many bytes (header and payload) take a
/// multiple of 128 bytes, a pair of lines: with a frame in every line, a
/// consumer's read of a small frame's line made the core's adjacent-line
/// prefetch fetch the other line of its 128-byte pair, often the next
/// frame's, which the producer was about to write: its write then had to
/// take the line back from the consumer's core. Measured on the AMD EPYC
/// VM (Zen 4; `docs/benchmarks.md`, "Issue 6, twenty-seventh pass"),
/// one-way latency 0-32 B 0.072 → 0.056 µs on one CCD, 0.273 → 0.219
/// across CCDs; Intel's L2 spatial prefetcher pairs lines the same way.
/// Larger frames keep to whole lines: padded to pairs, 4-8 KiB messages
/// took 4-6% longer.
pub const PAIRED_MAX: usize = 1024;

pub(crate) const KIND_DATA: u64 = 1;
pub(crate) const KIND_WRAP: u64 = 2;

/// The most payload bytes a frame may carry in `span` bytes of ring: the
/// inverse of [`footprint`] (a small frame takes whole pairs of lines).
pub const fn payload_in(span: usize) -> usize {
    let span = span & !(LINE - 1);
    let usable = if span > PAIRED_MAX {
        span
    } else {
        span & !(2 * LINE - 1)
    };
    usable.saturating_sub(FRAME_HEADER)
}

/// Bytes a frame with `len` payload bytes occupies in the ring.
#[inline]
pub const fn footprint(len: usize) -> usize {
    let used = FRAME_HEADER + len;
    if used <= PAIRED_MAX {
        (used + 2 * LINE - 1) & !(2 * LINE - 1)
    } else {
        (used + FRAME_ALIGN - 1) & !(FRAME_ALIGN - 1)
    }
}

/// Bits of the lap number a header word carries. The library's own unit
/// tests use 2: a header look-alike the producer failed to guard would
/// then read as a frame four laps on, not 2^24 (with a 4 KiB hot window,
/// minutes of ping-pong), and the tests' content checks catch it.
#[cfg(not(test))]
const LAP_BITS: u32 = 24;
#[cfg(test)]
const LAP_BITS: u32 = 2;
const LAP_MASK: u64 = (1 << LAP_BITS) - 1;

/// The lap tag of frames starting at ring position `pos` in a ring of
/// `1 << shift` bytes: the lap number plus one, so that lap 0's tag is not
/// the zero of a fresh region (a zero kind is empty anyway).
#[inline]
pub(crate) const fn lap(pos: u64, shift: u32) -> u64 {
    ((pos >> shift) + 1) & LAP_MASK
}

#[inline]
pub(crate) const fn encode(kind: u64, len: u32, lap: u64) -> u64 {
    (lap << 40) | (kind << 32) | len as u64
}

/// The kind of the frame whose header word is `word` when it was written
/// in lap `lap`, else 0 (empty: nothing written there yet this lap).
#[inline]
pub(crate) const fn kind_in(word: u64, lap: u64) -> u64 {
    if word >> 40 == lap {
        kind(word)
    } else {
        0
    }
}

#[inline]
pub(crate) const fn kind(word: u64) -> u64 {
    (word >> 32) & 0xff
}

#[inline]
pub(crate) const fn len(word: u64) -> usize {
    (word & 0xffff_ffff) as usize
}
