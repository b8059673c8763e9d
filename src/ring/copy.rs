//! The ring's copy of long frames: an AVX2 loop where `memcpy` would use
//! `rep movsb` and that is slower.
//!
//! On the AMD EPYC VM (family 25 model 17, Zen 4; 2026-12-03) glibc's
//! `memcpy` copies from 4 KiB on with `rep movsb` (its threshold there),
//! which moves lines that the other core just wrote (or must take back)
//! more slowly than its own vector loop: `shmpi-bench latency`, 8
//! alternating runs, medians, the vector loop against `memcpy`: 4 KiB
//! 0.644 vs 0.695 µs, 8 KiB 0.860 vs 0.935, 16 KiB 1.51 vs 1.64, 32 KiB
//! 2.73 vs 2.95, 64 KiB 4.92 vs 5.18; with glibc told to keep its vector
//! loop (`GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=100000`) the
//! gain was the same. Below 4 KiB glibc's own loop was faster than this
//! one (2 KiB 0.37 vs 0.44 µs), and a 16-byte SSE2 loop was slower
//! everywhere. Window bandwidth (`shmpi-bench bw`, 6 alternating runs,
//! medians): 8 KiB 11.6 → 18.8 GB/s, 16 KiB 13.8 → 22.1, 32 KiB 10.5 →
//! 26.9, 64 KiB 11.3 → 26.9, 128 KiB 10.9 → 23.5; from 256 KiB, where
//! that benchmark is bound by DRAM, within the noise (9.9-10.8 against
//! 10.5-11.4 GB/s at 256 KiB-2 MiB). Intel CPUs keep `memcpy` (not
//! measured: their fast `rep movsb` is why glibc uses it).

#[cfg(not(loom))]
use crate::sync::{AtomicUsize, Ordering};

/// The size from which ring copies use the vector loop (`usize::MAX`:
/// never, until the transport sets it by CPU vendor). (Loom models copy
/// nothing this way.)
#[cfg(not(loom))]
static FROM: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The size from which the ring copies frames with the AVX2 loop
/// (`usize::MAX`: never), as [`set_vector_copy_from`] last set it.
#[inline(always)]
pub fn vector_copy_from() -> usize {
    #[cfg(loom)]
    return usize::MAX;
    // Relaxed: see `set_vector_copy_from`.
    #[cfg(not(loom))]
    FROM.load(Ordering::Relaxed)
}

/// Sets the size from which ring copies use the AVX2 loop, for the whole
/// process (`usize::MAX`: never; ignored, so never, where the CPU lacks
/// AVX2). `Transport::new` sets it: 4 KiB on AMD CPUs
/// (`transport::cma::Defaults`), or `SHMPI_VECTOR_COPY`.
pub fn set_vector_copy_from(n: usize) {
    let n = if has_avx2() { n.max(33) } else { usize::MAX };
    // Relaxed: a plain setting; every value is safe to act on (`vectors`
    // checks nothing but lengths).
    #[cfg(not(loom))]
    FROM.store(n, Ordering::Relaxed);
    #[cfg(loom)]
    let _ = n;
}

/// The chunk [`copy_between`] copies a skewed range in: below the size
/// from which glibc's `memcpy` turns to `rep movsb` on the Xeon VM (past
/// 2 KiB), so each chunk takes its vector loop.
pub const SKEWED_CHUNK: usize = 2048;

/// Copies `n` bytes from `src` to `dst`, which may overlap, as `memmove`
/// does; but two ranges that do not overlap, longer than
/// [`SKEWED_CHUNK`], that start at different offsets within a 64-byte
/// line, go in chunks of that size. On the Xeon VM (family 6 model 167,
/// 2026-12-08) glibc's `rep movsb` took a 4 KiB `MPI_Get` from a
/// page-aligned window into a buffer 8 to 48 bytes off a line (as
/// `malloc` gives them) 0.13-0.17 µs against 0.04-0.05 at the window's
/// offset, 16 KiB 0.20 against 0.10; its vector loop, which the chunks
/// take (as `GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=1000000`
/// showed), 0.045 and 0.11. The ring's AVX2 loop did 0.076 at 4 KiB but
/// 0.256 at 16 KiB.
///
/// # Safety
/// As `std::ptr::copy`: `src` readable and `dst` writable for `n` bytes.
pub unsafe fn copy_between(src: *const u8, dst: *mut u8, n: usize) {
    let (s, d) = (src as usize, dst as usize);
    let apart =
        s.checked_add(n).is_some_and(|e| e <= d) || d.checked_add(n).is_some_and(|e| e <= s);
    if n > SKEWED_CHUNK && (s ^ d) % 64 != 0 && apart {
        let mut at = 0;
        while at < n {
            let k = (n - at).min(SKEWED_CHUNK);
            // SAFETY: `at + k <= n`, so both chunks lie in the caller's
            // ranges, which are apart (checked).
            unsafe { std::ptr::copy_nonoverlapping(src.wrapping_add(at), dst.wrapping_add(at), k) };
            at += k;
        }
        return;
    }
    // SAFETY: the caller's contract, as `std::ptr::copy`'s.
    unsafe { std::ptr::copy(src, dst, n) };
}

fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Copies `src` into `dst` (equal lengths, more than 32 bytes) with
/// 32-byte loads and stores, four to a step: from the start to the end,
/// or with `back` from the end to the start. Called only where
/// `vector_copy_from` is finite, which it is only with AVX2.
#[inline(never)]
pub(super) fn vectors(dst: &mut [u8], src: &[u8], back: bool) {
    assert!(
        dst.len() == src.len() && src.len() > 32,
        "vector copy lengths"
    );
    #[cfg(target_arch = "x86_64")]
    {
        assert!(has_avx2(), "vector copy without AVX2");
        if back {
            // SAFETY: `avx2_back` needs the CPU to have AVX2, asserted
            // above; the lengths it needs (equal, over 32) are asserted
            // too.
            unsafe { avx2_back(dst, src) }
        } else {
            // SAFETY: as for `avx2_back`.
            unsafe { avx2(dst, src) }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = back;
        dst.copy_from_slice(src);
    }
}

/// [`avx2`] from the end: four 32-byte moves a step down from the end,
/// then single ones, then the first 32 bytes (loaded first, stored last).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn avx2_back(dst: &mut [u8], src: &[u8]) {
    let first = load(src);
    let mut e = src.len();
    while e >= 128 {
        let (a, b) = (load(&src[e - 32..]), load(&src[e - 64..]));
        let (c, f) = (load(&src[e - 96..]), load(&src[e - 128..]));
        store(&mut dst[e - 32..], a);
        store(&mut dst[e - 64..], b);
        store(&mut dst[e - 96..], c);
        store(&mut dst[e - 128..], f);
        e -= 128;
    }
    while e >= 32 {
        let a = load(&src[e - 32..]);
        store(&mut dst[e - 32..], a);
        e -= 32;
    }
    store(dst, first);
}

/// The copy itself (`dst.len() == src.len() > 32`): four 32-byte moves a
/// step, then single ones, then the last 32 bytes (rewriting bytes
/// already copied with the same values). The last bytes are loaded after
/// the loop, not before it: read first, the frame's end made the copy of
/// an 8 KiB fragment streamed by a core of another CCD take 590-670 ns
/// instead of 440-490 (the same frames, `docs/benchmarks.md`, "Issue 6,
/// twenty-second pass"), as if the hardware prefetcher, sent to the
/// frame's end first, no longer ran ahead from its start.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn avx2(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    let mut o = 0;
    while o + 128 <= n {
        let (a, b) = (load(&src[o..]), load(&src[o + 32..]));
        let (c, e) = (load(&src[o + 64..]), load(&src[o + 96..]));
        store(&mut dst[o..], a);
        store(&mut dst[o + 32..], b);
        store(&mut dst[o + 64..], c);
        store(&mut dst[o + 96..], e);
        o += 128;
    }
    while o + 32 <= n {
        let a = load(&src[o..]);
        store(&mut dst[o..], a);
        o += 32;
    }
    if o < n {
        let last = load(&src[n - 32..]);
        store(&mut dst[n - 32..], last);
    }
}

/// The first 32 bytes of `s`, unaligned.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn load(s: &[u8]) -> std::arch::x86_64::__m256i {
    assert!(s.len() >= 32);
    // SAFETY: the 32 bytes at `s`'s start are in the borrowed slice
    // (asserted); an unaligned load needs no alignment.
    unsafe { std::arch::x86_64::_mm256_loadu_si256(s.as_ptr().cast()) }
}

/// Stores `v` into the first 32 bytes of `d`, unaligned.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn store(d: &mut [u8], v: std::arch::x86_64::__m256i) {
    assert!(d.len() >= 32);
    // SAFETY: the 32 bytes at `d`'s start are in the mutably borrowed
    // slice (asserted); an unaligned store needs no alignment.
    unsafe { std::arch::x86_64::_mm256_storeu_si256(d.as_mut_ptr().cast(), v) }
}

/// Copies `src` into `dst` (equal lengths) with non-temporal stores where
/// the CPU has them (x86_64: SSE2's `movntdq`, every x86_64 CPU), so the
/// destination lines are written to memory without first being read into
/// the cache. For a destination that is not in any cache (a window of
/// receive buffers larger than the cache) that halves the memory traffic:
/// 64 KiB chunks into 64 MiB of cold buffers ran at 14-16 GB/s here against
/// 7 GB/s for `memcpy` (`docs/tuning.md`). For a destination the caller
/// will read at once it is slower, so the receiver streams only where the
/// bytes it is receiving could not stay in the cache anyway
/// (`SHMPI_STREAM_THRESHOLD`), and a sender into a ring only where the
/// reader's cores share no cache with its own (the line would cross
/// between the caches twice: `transport::placement::STREAM_MIN`). The
/// stores are fenced before returning, so the bytes are ordered before
/// whatever the caller publishes next.
///
/// # Panics
/// If the lengths differ.
pub fn copy_streaming(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "copy_streaming: lengths differ");
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
        // Bytes before the first 64-aligned destination address (a cache
        // line: whole lines fill the write-combining buffers, and a ring
        // frame's header line is not streamed over) go the
        // ordinary way, and so does the tail below 64 bytes.
        let head = dst.as_ptr().align_offset(64).min(dst.len());
        dst[..head].copy_from_slice(&src[..head]);
        let body = (dst.len() - head) & !63;
        let (d, s) = (&mut dst[head..head + body], &src[head..head + body]);
        for (dc, sc) in d.chunks_exact_mut(64).zip(s.chunks_exact(64)) {
            let dp = dc.as_mut_ptr().cast::<__m128i>();
            let sp = sc.as_ptr().cast::<__m128i>();
            for i in 0..4 {
                // SAFETY: `sc` is a 64-byte chunk of a borrowed slice, so
                // its 16-byte piece `i` is in bounds; an unaligned load;
                // SSE2 is part of x86_64.
                let v = unsafe { _mm_loadu_si128(sp.wrapping_add(i)) };
                // SAFETY: piece `i` of the 64-byte chunk `dc`, which we
                // borrow mutably, is in bounds and 16-aligned (the body
                // starts at a 64-aligned address and advances by 64).
                unsafe { _mm_stream_si128(dp.wrapping_add(i), v) };
            }
        }
        // SAFETY: a store fence has no memory-safety preconditions; it
        // orders the non-temporal stores above before later stores.
        unsafe { _mm_sfence() };
        // SYNC(ring.stream): the fence orders the non-temporal stores
        // before every later store, the frame header's Release store
        // among them (whose Acquire load in `Consumer::peek` then sees
        // the whole payload).
        let tail = head + body;
        dst[tail..].copy_from_slice(&src[tail..]);
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `copy_between` copies exactly the range, in chunks or not, at
    /// every skew, and as `memmove` where the ranges overlap.
    #[test]
    fn copy_between_moves_exactly_the_range_and_allows_overlap() {
        let src: Vec<u8> = (0..20_000u32).map(|i| (i * 131 + 17) as u8).collect();
        for len in [
            0,
            1,
            64,
            SKEWED_CHUNK,
            SKEWED_CHUNK + 1,
            4096,
            3 * SKEWED_CHUNK + 17,
            9000,
        ] {
            for (soff, doff) in [(0, 0), (0, 16), (8, 48), (63, 1), (64, 128)] {
                let mut dst = vec![0xEEu8; len + 256];
                // SAFETY: `src[soff..]` has at least `len` bytes and
                // `dst[doff..]` too; they are separate allocations.
                unsafe { copy_between(src[soff..].as_ptr(), dst[doff..].as_mut_ptr(), len) };
                assert_eq!(
                    &dst[doff..doff + len],
                    &src[soff..soff + len],
                    "len {len} {soff}/{doff}"
                );
                assert!(dst[..doff].iter().all(|&b| b == 0xEE), "before, len {len}");
                assert!(
                    dst[doff + len..].iter().all(|&b| b == 0xEE),
                    "after, len {len}"
                );
            }
        }
        // Overlapping, both ways, skewed: as `memmove`.
        for shift in [16usize, 5000] {
            let mut buf = src.clone();
            let n = 9000;
            // SAFETY: both ranges lie in `buf` (shift + n <= 20 000).
            unsafe { copy_between(buf.as_ptr(), buf.as_mut_ptr().wrapping_add(shift), n) };
            assert_eq!(&buf[shift..shift + n], &src[..n], "forward by {shift}");
            let mut buf = src.clone();
            // SAFETY: as above.
            unsafe { copy_between(buf.as_ptr().wrapping_add(shift), buf.as_mut_ptr(), n) };
            assert_eq!(&buf[..n], &src[shift..shift + n], "back by {shift}");
        }
    }

    #[test]
    fn the_vector_copies_equal_memcpy_at_every_length_and_alignment() {
        if !has_avx2() {
            return;
        }
        let src: Vec<u8> = (0..9000u32).map(|i| (i * 131 + 17) as u8).collect();
        for len in (33..300).chain([4095, 4096, 4097, 8191, 8960]) {
            for off in [0, 1, 7, 31] {
                for back in [false, true] {
                    let mut dst = vec![0xEEu8; len + 64];
                    let (d, s) = (&mut dst[off..off + len], &src[off..off + len]);
                    vectors(d, s, back);
                    assert_eq!(
                        &dst[off..off + len],
                        &src[off..off + len],
                        "len {len} off {off} back {back}"
                    );
                    assert!(dst[..off].iter().all(|&b| b == 0xEE), "before, len {len}");
                    assert!(
                        dst[off + len..].iter().all(|&b| b == 0xEE),
                        "after, len {len}"
                    );
                }
            }
        }
    }
}
