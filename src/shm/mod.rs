//! The job segment: one file in /dev/shm that every rank of a job maps.
//!
//! Layer L1 (imports `error` and `sync`). `shm` owns the segment's
//! lifecycle (create with `O_EXCL | O_NOFOLLOW`, mode 0600; attach and
//! validate; reserve space so that a full /dev/shm is an error at start-up
//! and never a SIGBUS later; unlink), its [`SegmentHeader`] and the per-rank
//! [`ControlBlock`]s. What lies above the control blocks (rings) belongs to
//! `transport`, which hands `shm` a layout digest to check. See
//! `docs/segment-layout.md`.

pub mod doorbell;

#[cfg(not(loom))]
mod real;
#[cfg(not(loom))]
pub use real::*;
