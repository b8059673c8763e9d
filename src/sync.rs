//! The only door to atomics, fences and spin hints.
//!
//! Layer L0. Under `cfg(loom)` the atomics come from loom so that the model
//! tests of the ring and of the doorbell protocol can explore every
//! interleaving; otherwise they are `std`'s. Shared-memory code imports
//! atomics from here only.
#![forbid(unsafe_code)]

#[cfg(not(loom))]
pub use std::sync::atomic::{fence, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};

#[cfg(loom)]
pub use loom::sync::atomic::{fence, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};

pub use crossbeam_utils::{Backoff, CachePadded};

/// The cache-line size the shared layouts are padded to. 128 bytes on
/// x86_64 and aarch64, as crossbeam's `CachePadded` (the adjacent-line
/// prefetcher pulls lines in pairs).
pub const CACHE_LINE: usize = core::mem::align_of::<CachePadded<u8>>();

/// A compiler-only fence (SeqCst): no instruction, but no memory access
/// moves across it at compile time. The light side of an asymmetric
/// barrier (`transport::owner`, which loom builds leave out); a no-op
/// under loom, which does not model it.
#[inline(always)]
pub fn compiler_fence() {
    #[cfg(not(loom))]
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
}

/// A hint to the CPU that we are spinning (PAUSE on x86).
#[inline(always)]
pub fn spin_hint() {
    #[cfg(not(loom))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}
