//! The data region behind a ring: raw memory in real runs, a model of it
//! under loom.
//!
//! The region is addressed by byte offset. Offsets that hold a frame header
//! are accessed as atomic `u64` words; payload bytes are plain copies whose
//! exclusivity is guaranteed by the head/tail protocol (see `producer.rs`
//! and `consumer.rs`).

#[cfg(not(loom))]
pub(crate) use real::Region;

#[cfg(loom)]
pub(crate) use model::Region;

#[cfg(not(loom))]
mod real {
    use crate::sync::AtomicU64;
    use std::ptr::NonNull;

    /// A data region of `len` bytes at `base`, 8-byte aligned.
    #[derive(Debug)]
    pub(crate) struct Region {
        base: NonNull<u8>,
        len: usize,
    }

    impl Region {
        /// # Safety
        /// `base` is 8-byte aligned and valid for reads and writes of `len`
        /// bytes for as long as the region is used; the memory is zeroed or
        /// was last written by this ring's protocol.
        pub(crate) unsafe fn new(base: NonNull<u8>, len: usize) -> Self {
            debug_assert_eq!(base.as_ptr() as usize % 8, 0);
            Region { base, len }
        }

        /// The frame header word at `off`.
        #[inline]
        pub(crate) fn word(&self, off: usize) -> &AtomicU64 {
            assert!(off % 8 == 0 && off + 8 <= self.len);
            // SAFETY: the assert keeps `off..off + 8` inside the region, the
            // base is 8-aligned (constructor contract), and header words are
            // only ever accessed atomically while they may be shared.
            unsafe { AtomicU64::from_ptr(self.base.as_ptr().wrapping_add(off).cast::<u64>()) }
        }

        /// [`word`](Self::word) without its check, for the rings' own
        /// frame positions (a position masked to the capacity, which is
        /// the region's length, and a multiple of `FRAME_ALIGN`).
        ///
        /// # Safety
        /// `off % 8 == 0` and `off + 8 <= len`.
        #[inline]
        pub(crate) unsafe fn word_unchecked(&self, off: usize) -> &AtomicU64 {
            debug_assert!(off % 8 == 0 && off + 8 <= self.len);
            // SAFETY: the caller keeps `off..off + 8` inside the region
            // and 8-aligned (the base is, by the constructor's contract);
            // header words are only ever accessed atomically while shared.
            unsafe { AtomicU64::from_ptr(self.base.as_ptr().wrapping_add(off).cast::<u64>()) }
        }

        /// Copies `src` to `off`.
        ///
        /// # Safety
        /// The caller owns `off..off + src.len()` under the ring protocol:
        /// the consumer has released it and no reader looks at it until a
        /// later Release store publishes it.
        #[inline]
        pub(crate) unsafe fn write(&self, off: usize, src: &[u8]) {
            // SAFETY: the caller's promise, passed on.
            unsafe { self.write_by(off, src, super::super::copy_bytes) };
        }

        /// Copies `src` to `off` with non-temporal stores, fenced
        /// ([`copy_streaming`](super::super::copy_streaming)).
        ///
        /// # Safety
        /// As for [`write`](Self::write).
        #[inline]
        pub(crate) unsafe fn write_streaming(&self, off: usize, src: &[u8]) {
            // SAFETY: the caller's promise, passed on.
            unsafe { self.write_by(off, src, super::super::copy_streaming) };
        }

        /// Copies `src` to `off` with `copy`.
        ///
        /// # Safety
        /// As for [`write`](Self::write).
        #[inline(always)]
        unsafe fn write_by(&self, off: usize, src: &[u8], copy: impl FnOnce(&mut [u8], &[u8])) {
            debug_assert!(off + src.len() <= self.len);
            // SAFETY: delegated to the caller (see # Safety): the caller
            // owns these bytes, so no one else reads or writes them while
            // the slice lives; bounds are checked above in debug builds and
            // by the producer's `reserve` or `push_quick`.
            let dst = unsafe {
                std::slice::from_raw_parts_mut(self.base.as_ptr().wrapping_add(off), src.len())
            };
            copy(dst, src);
        }

        /// Writes `words` (little-endian) at `off`, one store each: a
        /// header built in registers reaches the frame without a copy
        /// through the stack, whose narrower stores a wider load could not
        /// take its bytes from (a store-forwarding stall on the send's
        /// critical path).
        ///
        /// # Safety
        /// As for [`write`](Self::write), of `8 * words.len()` bytes; and
        /// `off % 8 == 0`.
        #[inline(always)]
        pub(crate) unsafe fn write_words(&self, off: usize, words: &[u64]) {
            debug_assert!(off % 8 == 0 && off + 8 * words.len() <= self.len);
            for (i, w) in words.iter().enumerate() {
                // SAFETY: delegated to the caller (see # Safety): these
                // bytes are the caller's, inside the region, and 8-aligned
                // (the base is, by the constructor's contract).
                unsafe {
                    self.base
                        .as_ptr()
                        .wrapping_add(off + 8 * i)
                        .cast::<u64>()
                        .write(w.to_le())
                };
            }
        }

        /// Prefetches the lines of `off..off + len` into this core's
        /// caches (a hint; a no-op off x86-64).
        #[inline]
        pub(crate) fn prefetch(&self, off: usize, len: usize) {
            assert!(off + len <= self.len, "prefetch past the end of the ring");
            let mut o = off;
            while o < off + len {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: a prefetch is a hint: it never faults, even on an
                // unmapped address, and changes no byte (SSE, part of
                // x86-64).
                unsafe {
                    core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                        self.base.as_ptr().wrapping_add(o).cast(),
                    )
                };
                o += 64;
            }
        }

        /// Demotes the lines of `off..off + len` to the shared cache (a
        /// hint, see `demote.rs`).
        #[inline]
        pub(crate) fn demote(&self, off: usize, len: usize) {
            assert!(off + len <= self.len, "demotion past the end of the ring");
            super::super::demote::lines(self.base.as_ptr().wrapping_add(off), len);
        }

        /// Claims the lines of `off..off + len` for writing (a hint, see
        /// `demote::claim_lines`).
        #[inline]
        pub(crate) fn claim(&self, off: usize, len: usize) {
            assert!(off + len <= self.len, "claim past the end of the ring");
            super::super::demote::claim_lines(self.base.as_ptr().wrapping_add(off), len);
        }

        /// A view of `off..off + len`, unchecked (`Frame::bytes`: its
        /// bounds were checked when the frame was found).
        ///
        /// # Safety
        /// `off + len` is within the region; the range was published to
        /// the caller by an Acquire load of its frame header and is not
        /// released until the view is dropped.
        #[inline]
        pub(crate) unsafe fn slice_unchecked(&self, off: usize, len: usize) -> &[u8] {
            debug_assert!(off + len <= self.len);
            // SAFETY: delegated to the caller (see # Safety).
            unsafe { std::slice::from_raw_parts(self.base.as_ptr().wrapping_add(off), len) }
        }
    }
}

#[cfg(loom)]
mod model {
    use crate::sync::AtomicU64;
    use loom::cell::UnsafeCell;

    /// Under loom: header words are loom atomics, payload bytes live in
    /// loom cells so that loom reports any unsynchronised access as a race.
    #[derive(Debug)]
    pub(crate) struct Region {
        words: Vec<AtomicU64>,
        bytes: Vec<UnsafeCell<u8>>,
    }

    impl Region {
        pub(crate) fn new_model(len: usize) -> Self {
            Region {
                words: (0..len / 8).map(|_| AtomicU64::new(0)).collect(),
                bytes: (0..len).map(|_| UnsafeCell::new(0)).collect(),
            }
        }

        pub(crate) fn word(&self, off: usize) -> &AtomicU64 {
            assert!(off % 8 == 0);
            &self.words[off / 8]
        }

        /// # Safety
        /// As for the real region (checked here all the same).
        pub(crate) unsafe fn word_unchecked(&self, off: usize) -> &AtomicU64 {
            self.word(off)
        }

        /// # Safety
        /// As for the real region.
        pub(crate) unsafe fn write(&self, off: usize, src: &[u8]) {
            for (i, b) in src.iter().enumerate() {
                // SAFETY: loom checks the exclusivity this relies on.
                self.bytes[off + i].with_mut(|p| unsafe { *p = *b });
            }
        }

        /// # Safety
        /// As for the real region.
        pub(crate) unsafe fn write_streaming(&self, off: usize, src: &[u8]) {
            // SAFETY: as for the real region; loom checks exclusivity.
            unsafe { self.write(off, src) };
        }

        /// # Safety
        /// As for the real region.
        pub(crate) unsafe fn write_words(&self, off: usize, words: &[u64]) {
            for (i, w) in words.iter().enumerate() {
                // SAFETY: as for the real region; loom checks exclusivity.
                unsafe { self.write(off + 8 * i, &w.to_le_bytes()) };
            }
        }

        /// Nothing to prefetch in a model.
        pub(crate) fn prefetch(&self, _off: usize, _len: usize) {}

        /// Nothing to demote in a model.
        pub(crate) fn demote(&self, _off: usize, _len: usize) {}

        /// Nothing to claim in a model.
        pub(crate) fn claim(&self, _off: usize, _len: usize) {}

        /// # Safety
        /// As for the real region.
        pub(crate) unsafe fn read(&self, off: usize, dst: &mut [u8]) {
            for (i, b) in dst.iter_mut().enumerate() {
                // SAFETY: loom checks the exclusivity this relies on.
                *b = self.bytes[off + i].with(|p| unsafe { *p });
            }
        }
    }
}
