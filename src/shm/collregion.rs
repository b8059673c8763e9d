//! Collective regions: a small pool of segment areas where the members of
//! one communicator exchange small collective payloads through flags,
//! without messages (`transport::shmcoll` runs the protocol).
//!
//! A region has one slot per world rank: an epoch word in its own cache
//! line, then two payload buffers (double buffering by epoch parity). The
//! pool is [`REGIONS`] regions; region 0 belongs to `WORLD` for the whole
//! job, the others are claimed by a communicator's leader (bit in the
//! pool word, and a count of members that still hold it) and given back
//! by the last member that frees it.

use super::Segment;
use crate::sync::{AtomicU32, AtomicU64, CachePadded, Ordering};
use core::cell::UnsafeCell;

/// Regions in the pool (one word of bits).
pub const REGIONS: usize = 64;
/// Payload bytes per buffer: collectives up to this size may use a
/// region.
pub const PAYLOAD: usize = 256;

/// One rank's slot in a region, `#[repr(C)]`.
#[repr(C)]
#[derive(Debug)]
pub struct Slot {
    /// The last collective this rank has posted (0: none yet), and the
    /// length of the payload it posted with it.
    pub head: CachePadded<SlotHead>,
    /// Two payload buffers, by epoch parity, written by the slot's rank
    /// and read by its peers (other processes): interior mutability, only
    /// ever accessed through raw pointers under the epoch protocol of
    /// `transport::shmcoll`.
    payload: UnsafeCell<[[u8; PAYLOAD]; 2]>,
}

/// Payload bytes that travel in the flag line itself (by parity), so a
/// small collective costs one cache-line transfer per member, not two.
pub const INLINE: usize = 48;

/// The flag line of a slot.
#[repr(C)]
#[derive(Debug)]
pub struct SlotHead {
    /// The last epoch posted.
    pub epoch: AtomicU64,
    /// Bytes of payload written for it, by epoch parity (double buffered
    /// with the payloads).
    pub len: [AtomicU64; 2],
    /// Payloads of up to [`INLINE`] bytes, by parity; accessed as the
    /// large payloads are (raw pointers, under the epoch protocol).
    inline: UnsafeCell<[[u8; INLINE]; 2]>,
}

const _: () = assert!(core::mem::size_of::<SlotHead>() <= crate::sync::CACHE_LINE);

/// Bytes of one slot.
pub const SLOT_BYTES: usize = core::mem::size_of::<Slot>();
const _: () = assert!(SLOT_BYTES % crate::sync::CACHE_LINE == 0);

/// The pool's header, `#[repr(C)]`.
#[repr(C)]
#[derive(Debug)]
pub struct PoolHeader {
    /// Bit r: region r is claimed (bit 0, `WORLD`'s, never is).
    bits: CachePadded<AtomicU64>,
    /// Members still holding each region.
    holders: [AtomicU32; REGIONS],
}

/// Bytes of the pool header.
pub const POOL_HEADER_BYTES: usize = core::mem::size_of::<PoolHeader>();

/// Bytes of the whole pool for a job of `nranks`.
pub const fn pool_bytes(nranks: usize) -> usize {
    let b = POOL_HEADER_BYTES + REGIONS * nranks * SLOT_BYTES;
    (b + 4095) & !4095
}

impl PoolHeader {
    /// Claims a free region (not 0) for `holders` members; `None` when
    /// all are taken.
    pub fn claim(&self, holders: u32) -> Option<usize> {
        loop {
            // Relaxed: a candidate; the RMW below decides.
            let bits = self.bits.load(Ordering::Relaxed) | 1;
            if bits == !0 {
                return None;
            }
            let r = (!bits).trailing_zeros() as usize;
            // SYNC(collregion): Acquire; pairs with the Release in
            // `release`: the previous holders are done with the region.
            if self.bits.fetch_or(1 << r, Ordering::Acquire) & (1 << r) == 0 {
                // Relaxed: published to the members by the leader's
                // messages, as is the reset of the epochs.
                self.holders[r].store(holders, Ordering::Relaxed);
                return Some(r);
            }
        }
    }

    /// One member no longer holds region `r`; the last one frees it.
    pub fn release(&self, r: usize) {
        assert!(r > 0 && r < REGIONS, "region {r} is not a claimable region");
        // AcqRel: the last holder sees every other holder's use as done.
        if self.holders[r].fetch_sub(1, Ordering::AcqRel) == 1 {
            // SYNC(collregion): Release; pairs with the Acquire in `claim`.
            self.bits.fetch_and(!(1 << r), Ordering::Release);
        }
    }
}

impl Segment {
    /// The collective-region pool header.
    pub fn coll_pool(&self) -> &PoolHeader {
        let off = super::coll_pool_offset(self.spec().nranks as usize);
        assert!(off + POOL_HEADER_BYTES <= self.len());
        // SAFETY: the pool lies inside the mapping (asserted), page-aligned
        // after the id maps; the header is all atomics, valid for any bit
        // pattern including the file's zeros.
        unsafe { &*self.base().as_ptr().wrapping_add(off).cast::<PoolHeader>() }
    }

    /// World rank `rank`'s slot in region `region`.
    ///
    /// # Panics
    /// If `region` or `rank` is out of range.
    pub fn coll_slot(&self, region: usize, rank: usize) -> &Slot {
        let n = self.spec().nranks as usize;
        assert!(
            region < REGIONS && rank < n,
            "region {region} / rank {rank} out of range"
        );
        let off = super::coll_pool_offset(n) + POOL_HEADER_BYTES + (region * n + rank) * SLOT_BYTES;
        assert!(off + SLOT_BYTES <= self.len());
        // SAFETY: inside the mapping (asserted), aligned to the cache line
        // (the header and slots are multiples of it from a page boundary).
        // The epoch is an atomic and the payload sits in an `UnsafeCell`
        // that only `transport::shmcoll` touches, through `payload_ptr`
        // under its epoch protocol; any bit pattern is valid for both.
        unsafe { &*self.base().as_ptr().wrapping_add(off).cast::<Slot>() }
    }
}

impl Slot {
    /// The payload buffer for `parity`, as a raw pointer: the bytes are
    /// written by the slot's rank and read by its peers under the epoch
    /// protocol of `transport::shmcoll`, so no reference to them is ever
    /// made.
    pub fn payload_ptr(&self, parity: usize) -> *mut u8 {
        assert!(parity < 2);
        self.payload
            .get()
            .cast::<u8>()
            .wrapping_add(parity * PAYLOAD)
    }

    /// The in-line payload buffer for `parity` (up to [`INLINE`] bytes,
    /// in the flag line), as [`payload_ptr`](Self::payload_ptr).
    pub fn inline_ptr(&self, parity: usize) -> *mut u8 {
        assert!(parity < 2);
        self.head
            .inline
            .get()
            .cast::<u8>()
            .wrapping_add(parity * INLINE)
    }
}
