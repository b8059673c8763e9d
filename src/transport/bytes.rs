//! Byte views of typed message buffers, argued sound once here so that the
//! layers above stay free of `unsafe`.

use crate::datatype::Scalar;

/// The bytes of a slice of scalars.
#[inline]
pub fn as_bytes<T: Scalar>(s: &[T]) -> &[u8] {
    // SAFETY: `Scalar` is sealed and implemented only for primitive
    // integers and floats: no padding, so every byte is initialised; the
    // length in bytes is exactly `size_of_val(s)` and u8 has alignment 1.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}

/// The bytes of a mutable slice of scalars, to be filled from a message.
#[inline]
pub fn as_bytes_mut<T: Scalar>(s: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `as_bytes`; in addition every bit pattern is a valid
    // value of each `Scalar` type, so any bytes written leave valid `T`s.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}

/// `n` elements of `T` over a reusable `u64` buffer (grown as needed, its
/// contents unspecified but valid): scratch space that keeps large
/// collectives from allocating, and so page-faulting, on every call.
pub fn scratch<T: Scalar>(buf: &mut Vec<u64>, n: usize) -> &mut [T] {
    const { assert!(core::mem::align_of::<T>() <= core::mem::align_of::<u64>()) };
    let words = (n * core::mem::size_of::<T>()).div_ceil(8);
    if buf.len() < words {
        buf.resize(words, 0);
    }
    // SAFETY: the buffer holds at least `n * size_of::<T>()` initialised
    // bytes, aligned to 8 (`u64`), which is at least `T`'s alignment
    // (checked at compile time); `Scalar` types have no padding and every
    // bit pattern is a valid value; the slice borrows `buf` mutably.
    unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<T>(), n) }
}

/// The memory a receive touches from which its fragments are copied with
/// [`copy_streaming`]: three quarters of the 32 MiB L3 of these machines.
/// What a receive touches is counted as the buffers it lands in (the
/// message, or the span of the buffers one wait lends, whichever is
/// larger) plus the message again for the sender's buffer
/// ([`streams`]). `SHMPI_STREAM_THRESHOLD` overrides it.
///
/// Measured on the AMD EPYC VM (2026-12-03, `shmpi-bench`, 5 alternating
/// runs, medians): one message of 16 MiB took 1.8-1.9 ms streamed
/// against 3.1-3.3 ms cached, 8 MiB 0.84 against 0.73 (cached, but with
/// outliers to 2.5 ms), 4 MiB 0.35 against 0.20; a window of 64 receives
/// of 256 KiB (16 MiB of buffers) 15.5 GB/s cached against 10.8
/// streamed. The rule before (the message or the span alone, from
/// 16 MiB) streamed that window.
pub const DEFAULT_STREAM_THRESHOLD: usize = 24 << 20;

/// Whether a receive of a `total`-byte message into buffers spanning
/// `span` bytes (0: just the message's) streams under `threshold`.
#[inline]
pub fn streams(total: usize, span: usize, threshold: usize) -> bool {
    total.max(span).saturating_add(total) >= threshold
}

/// Copies with non-temporal stores (in the ring layer, which writes
/// frames to distant peers so too; see there).
pub use crate::ring::copy_streaming;

#[cfg(test)]
mod tests {
    use super::{copy_streaming, streams, DEFAULT_STREAM_THRESHOLD as T};

    #[test]
    fn what_streams_counts_the_buffers_and_the_senders_copy() {
        const M: usize = 1 << 20;
        // One message: its buffer on both sides.
        assert!(streams(16 * M, 16 * M, T));
        assert!(streams(16 * M, 0, T));
        assert!(!streams(8 * M, 8 * M, T));
        // A window of 64 receives of 256 KiB: 16 MiB of buffers and one
        // send buffer fit the L3; of 512 KiB they do not.
        assert!(!streams(M / 4, 16 * M, T));
        assert!(streams(M / 2, 32 * M, T));
        // 0: always (the tests' way to force the path).
        assert!(streams(1, 0, 0));
        // Sizes near the top of the range saturate instead of wrapping.
        assert!(streams(usize::MAX, usize::MAX, usize::MAX));
    }

    #[test]
    fn streaming_copy_equals_memcpy_at_every_alignment_and_length() {
        let src: Vec<u8> = (0..5000u32).map(|i| (i * 31 + 7) as u8).collect();
        for off in 0..17 {
            for len in [0, 1, 15, 16, 63, 64, 65, 127, 128, 1000, 4096 + 13] {
                let mut dst = vec![0xaau8; len + 40];
                copy_streaming(&mut dst[off..off + len], &src[3..3 + len]);
                assert_eq!(
                    &dst[off..off + len],
                    &src[3..3 + len],
                    "off {off} len {len}"
                );
                assert!(dst[..off].iter().all(|&b| b == 0xaa));
                assert!(dst[off + len..].iter().all(|&b| b == 0xaa));
            }
        }
    }
}
