//! Where every ring sits in the segment, and the layout digest.
//!
//! ```text
//! 0                      SegmentHeader, then nranks ControlBlocks (shm)
//! rings_offset           page-aligned; one region per receiver r:
//!   rings_offset + r * region_bytes
//!     for each sender s != r, in rank order:
//!       RingHeader (3 cache lines) + ring_capacity data bytes
//! size = rings_offset + nranks * region_bytes
//! ```
//!
//! A receiver's rings are contiguous so that the receiver can reserve (and
//! so first-touch) them from its own process, on its own NUMA node. The
//! formula and the default ring size are in `docs/segment-layout.md`.

use crate::ring::{check_capacity, RingHeader};
use crate::shm::{control_end, SegmentSpec};

/// Page size assumed for alignment of per-receiver regions.
pub const PAGE: usize = 4096;
/// Default total budget for ring memory, before rounding ring sizes down to
/// a power of two.
pub const DEFAULT_RING_BUDGET: usize = 192 << 20;
/// Largest default ring by the budget rule (jobs of 5 to 14 ranks get
/// this).
pub const MAX_DEFAULT_RING: usize = 1 << 20;
/// The ring of a small job: twice the 1 MiB L2 of a Zen 4 core. A ring
/// no larger than the receiver's L2 stays there while the receiver's
/// buffer is hot (a window into one buffer, a halo reused every step), so
/// each line the sender writes again a lap later is first taken out of
/// the receiver's L2. Measured on the AMD EPYC VM (2026-12-03,
/// `shmpi-bench`, 5-6 alternating runs, medians, 1 MiB → 2 MiB ring):
/// window bandwidth into one buffer 32 KiB-1 MiB 12.5-19.6 → 24-29 GB/s,
/// into a buffer per receive 512 KiB-2 MiB 10-11 → 19-20 GB/s,
/// bidirectional 16 KiB-4 MiB 1.7-2.2× higher; latency 0-64 B unchanged,
/// 4-64 KiB 11-21% lower in one run and within the noise in another. A
/// 4 MiB ring was no better for bandwidth and worse for latency at 16
/// and 64 KiB. Intel's 2 MiB L2 was not measured.
pub const SMALL_JOB_RING: usize = 2 << 20;
/// The rings of a job get [`SMALL_JOB_RING`] while all of them together
/// stay within this (2 to 4 ranks).
pub const SMALL_JOB_RING_BUDGET: usize = 24 << 20;
/// Smallest ring the transport accepts: room for a fragment after the
/// wire header, and ring strides that keep headers cache-line aligned.
pub const MIN_RING: usize = 1024;
/// Smallest default ring.
pub const MIN_DEFAULT_RING: usize = 16 << 10;

const RING_HEADER: usize = core::mem::size_of::<RingHeader>();

/// The default ring capacity for `nranks` ranks: [`SMALL_JOB_RING`] while
/// the `n (n - 1)` rings fit [`SMALL_JOB_RING_BUDGET`]; else the budget
/// shared by the rings, rounded down to a power of two and clamped to
/// [`MIN_DEFAULT_RING`, `MAX_DEFAULT_RING`].
pub fn default_ring_capacity(nranks: usize) -> usize {
    let rings = (nranks * nranks.saturating_sub(1)).max(1);
    if rings * SMALL_JOB_RING <= SMALL_JOB_RING_BUDGET {
        return SMALL_JOB_RING;
    }
    let share = DEFAULT_RING_BUDGET / rings;
    let pow = if share == 0 {
        1
    } else {
        1usize << (usize::BITS - 1 - share.leading_zeros())
    };
    pow.clamp(MIN_DEFAULT_RING, MAX_DEFAULT_RING)
}

/// The computed layout of a job segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    nranks: usize,
    ring_capacity: usize,
    rings_offset: usize,
    region_bytes: usize,
    size: usize,
}

fn align_up(x: usize, a: usize) -> usize {
    (x + a - 1) & !(a - 1)
}

impl Layout {
    /// The layout for `nranks` ranks with rings of `ring_capacity` bytes.
    ///
    /// # Errors
    /// A message when `ring_capacity` is not a power of two of at least
    /// [`MIN_RING`] or `nranks` is zero or above [`crate::shm::MAX_RANKS`].
    pub fn new(nranks: usize, ring_capacity: usize) -> Result<Layout, String> {
        if nranks == 0 || nranks > crate::shm::MAX_RANKS {
            return Err(format!(
                "{nranks} ranks: a job has 1 to {} ranks",
                crate::shm::MAX_RANKS
            ));
        }
        check_capacity(ring_capacity).map_err(|e| e.to_string())?;
        if ring_capacity < MIN_RING {
            return Err(format!(
                "ring size {ring_capacity} is below the transport's minimum of {MIN_RING} bytes"
            ));
        }
        let rings_offset = align_up(control_end(nranks), PAGE);
        let region_bytes = align_up((nranks - 1) * (RING_HEADER + ring_capacity), PAGE);
        let size = rings_offset + nranks * region_bytes;
        Ok(Layout {
            nranks,
            ring_capacity,
            rings_offset,
            region_bytes,
            size,
        })
    }

    /// Ranks in the job.
    pub fn nranks(&self) -> usize {
        self.nranks
    }

    /// Capacity of every ring.
    pub fn ring_capacity(&self) -> usize {
        self.ring_capacity
    }

    /// Total segment size.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Byte range `(offset, len)` holding the rings that `receiver` reads.
    pub fn receiver_region(&self, receiver: usize) -> (usize, usize) {
        (
            self.rings_offset + receiver * self.region_bytes,
            self.region_bytes,
        )
    }

    /// Offsets of the header and the data of the ring `sender → receiver`.
    ///
    /// # Panics
    /// If either rank is out of range or they are equal.
    pub fn ring(&self, sender: usize, receiver: usize) -> (usize, usize) {
        assert!(sender < self.nranks && receiver < self.nranks && sender != receiver);
        let idx = if sender < receiver {
            sender
        } else {
            sender - 1
        };
        let header = self.receiver_region(receiver).0 + idx * (RING_HEADER + self.ring_capacity);
        (header, header + RING_HEADER)
    }

    /// A digest of every number that decides where bytes go (FNV-1a).
    pub fn digest(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for v in [
            self.nranks,
            self.ring_capacity,
            self.rings_offset,
            self.region_bytes,
            RING_HEADER,
            crate::sync::CACHE_LINE,
            super::wire::WIRE_HEADER,
            super::wire::SOLE_HEADER,
            crate::ring::FORMAT,
        ] {
            for b in (v as u64).to_le_bytes() {
                h ^= b as u64;
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        h
    }

    /// The segment spec for job `job_id` with this layout.
    pub fn spec(&self, job_id: u64) -> SegmentSpec {
        SegmentSpec {
            size: self.size as u64,
            layout_digest: self.digest(),
            nranks: self.nranks as u32,
            job_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_segment_for_64_ranks_stays_under_256_mib() {
        let l = Layout::new(64, default_ring_capacity(64)).unwrap();
        assert!(l.size() < 256 << 20, "{} bytes", l.size());
    }

    #[test]
    fn small_jobs_get_rings_twice_an_l2_and_bigger_ones_the_budget_share() {
        for n in 1..=4 {
            assert_eq!(default_ring_capacity(n), SMALL_JOB_RING, "{n} ranks");
        }
        assert_eq!(default_ring_capacity(5), MAX_DEFAULT_RING);
        assert_eq!(default_ring_capacity(8), MAX_DEFAULT_RING);
        assert_eq!(default_ring_capacity(16), 512 << 10);
        assert_eq!(default_ring_capacity(256), MIN_DEFAULT_RING);
    }

    #[test]
    fn rings_do_not_overlap_and_stay_inside() {
        let l = Layout::new(5, 4096).unwrap();
        let mut spans = vec![];
        for s in 0..5 {
            for r in 0..5 {
                if s != r {
                    let (h, d) = l.ring(s, r);
                    assert_eq!(h % crate::sync::CACHE_LINE, 0);
                    spans.push((h, d + 4096));
                }
            }
        }
        spans.sort();
        for w in spans.windows(2) {
            assert!(w[0].1 <= w[1].0);
        }
        assert!(spans.last().unwrap().1 <= l.size());
        assert!(spans[0].0 >= control_end(5));
    }

    #[test]
    fn rings_below_the_minimum_are_refused() {
        assert!(Layout::new(2, 512).is_err());
        assert!(Layout::new(2, MIN_RING).is_ok());
        assert!(Layout::new(0, 4096).is_err());
    }

    #[test]
    fn digest_changes_with_shape() {
        let a = Layout::new(4, 4096).unwrap().digest();
        assert_ne!(a, Layout::new(4, 8192).unwrap().digest());
        assert_ne!(a, Layout::new(5, 4096).unwrap().digest());
    }
}
