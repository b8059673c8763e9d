//! Offer tables: the shared words of revocable rendezvous sends.
//!
//! A rendezvous send hands its receiver the address of the bytes in the
//! sender's process; the receiver copies them out with
//! `process_vm_readv` when it matches. That is only sound while the bytes
//! stay where they are, and a send lent from a scope (`transport::lend`)
//! keeps them there only until the scope ends. So such a send also gets an
//! entry in its sender's offer table, and both sides move the entry's
//! state word through one protocol (`generation << 3 | state`):
//!
//! ```text
//! sender opens:         Free     -> Offered   (address stored first)
//! receiver claims:      Offered  -> Reading   (then reads the address, copies)
//! receiver finishes:    Reading  -> Done      (then acks through the ring)
//! sender moves (scope end, bytes copied elsewhere in its process):
//!                       Offered  -> Moving -> Offered (new address)
//! sender withdraws (the bytes are going away with no copy):
//!                       Offered  -> Withdrawn, then retired
//! sender retires (ack seen, a withdrawal, or the receiver found dead):
//!                       any      -> Free
//! ```
//!
//! The sender moves or withdraws only from `Offered`; finding `Reading` it
//! waits for `Done` (or for the reader's process to be gone), so no
//! receiver ever reads bytes that are gone or changing. A receiver
//! finding `Moving` waits for `Offered` (the sender made its copy before
//! it moved: `Moving` spans two stores). Each open takes a new
//! generation, so a late claim of an old offer (`Free` or a newer
//! generation) fails instead of reading a later one.
//!
//! One table per rank, written by its owner (open, move, withdraw, retire)
//! and by the receivers of its sends (claim, finish).

use crate::sync::{AtomicU64, Ordering};

/// Entries in each rank's table: the revocable rendezvous sends a rank
/// can have in flight at once (more go through the ring).
pub const OFFERS: usize = 64;

/// States of an offer entry (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OfferState {
    /// Not in use.
    Free = 0,
    /// The bytes are at the entry's address; a receiver may claim them.
    Offered = 1,
    /// A receiver claimed the offer and is copying.
    Reading = 2,
    /// The receiver has copied everything.
    Done = 3,
    /// The sender is moving the bytes (the address changes).
    Moving = 4,
    /// The sender took the offer back; the bytes are gone.
    Withdrawn = 5,
}

impl OfferState {
    fn of(w: u64) -> OfferState {
        match w & 7 {
            1 => OfferState::Offered,
            2 => OfferState::Reading,
            3 => OfferState::Done,
            4 => OfferState::Moving,
            5 => OfferState::Withdrawn,
            _ => OfferState::Free,
        }
    }
}

/// One entry: the state word and the bytes' address in the owner's
/// process.
#[repr(C)]
#[derive(Debug)]
pub struct OfferEntry {
    word: AtomicU64,
    addr: AtomicU64,
}

/// One rank's table, `#[repr(C)]`.
#[repr(C)]
#[derive(Debug)]
pub struct OfferTable {
    entries: [OfferEntry; OFFERS],
}

/// Bytes of one table (a multiple of the cache line).
pub const OFFER_TABLE_BYTES: usize = core::mem::size_of::<OfferTable>();
const _: () = assert!(OFFER_TABLE_BYTES % crate::sync::CACHE_LINE == 0);

/// Generations fit the word above the state's three bits.
const GEN_MASK: u64 = u64::MAX >> 3;

fn word(gen: u64, s: OfferState) -> u64 {
    (gen & GEN_MASK) << 3 | s as u64
}

impl OfferTable {
    /// Entry `i` (below [`OFFERS`]).
    ///
    /// # Panics
    /// If `i` is out of range.
    pub fn entry(&self, i: usize) -> &OfferEntry {
        &self.entries[i]
    }
}

impl OfferEntry {
    /// Whether the entry is free (only its owner asks: only it frees and
    /// opens).
    pub fn is_free(&self) -> bool {
        // Relaxed: only the owner makes a word `Free` or takes it out of
        // `Free`, so the load sees its own last such write.
        OfferState::of(self.word.load(Ordering::Relaxed)) == OfferState::Free
    }

    /// The owner offers the bytes at `addr` under generation `gen`.
    pub fn open(&self, gen: u64, addr: u64) {
        // Relaxed: published by the Release store of the word below.
        self.addr.store(addr, Ordering::Relaxed);
        // Release: pairs with the Acquire of the receiver's claim, which
        // then reads this address.
        self.word
            .store(word(gen, OfferState::Offered), Ordering::Release);
    }

    /// The receiver claims offer `gen`: the address of the bytes, or the
    /// state that stood in the way (`Moving`: try again soon; anything
    /// else, or `None` for another generation: the offer is gone).
    pub fn claim(&self, gen: u64) -> Result<u64, Option<OfferState>> {
        // AcqRel: the Acquire pairs with the owner's Release in `open` and
        // `end_move` (the address read next is the one offered); the
        // Release half publishes nothing (the owner learns of the claim
        // only through a failed CAS). The claim and the owner's move or
        // withdrawal race on this one word, and exactly one wins.
        match self.word.compare_exchange(
            word(gen, OfferState::Offered),
            word(gen, OfferState::Reading),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // Relaxed: ordered after the Acquire of the claim above.
            Ok(_) => Ok(self.addr.load(Ordering::Relaxed)),
            Err(w) => Err(((w >> 3) == gen & GEN_MASK).then(|| OfferState::of(w))),
        }
    }

    /// The receiver has copied everything of offer `gen`.
    pub fn finish(&self, gen: u64) {
        // Release: the receiver's reads of the owner's memory (a system
        // call returned before this store) come before it; pairs with the
        // Acquire in `state`, after which the owner may change the bytes.
        self.word
            .store(word(gen, OfferState::Done), Ordering::Release);
    }

    /// The owner starts to move offer `gen`: true when it was `Offered`
    /// (no receiver can claim it until [`end_move`](Self::end_move)).
    pub fn begin_move(&self, gen: u64) -> bool {
        self.leave_offered(gen, OfferState::Moving)
    }

    /// The owner moves offer `gen` from `Offered` to `to`, if no receiver
    /// claimed it first.
    fn leave_offered(&self, gen: u64, to: OfferState) -> bool {
        // AcqRel, Acquire on failure: stronger than needed (the owner reads
        // nothing of the receiver's after it, and re-reads the state with
        // `state`'s own Acquire); the race is decided by this one word's
        // modification order at any ordering.
        self.word
            .compare_exchange(
                word(gen, OfferState::Offered),
                word(gen, to),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }

    /// The owner's bytes of offer `gen` are now at `addr`.
    pub fn end_move(&self, gen: u64, addr: u64) {
        // Relaxed: published by the Release store below.
        self.addr.store(addr, Ordering::Relaxed);
        // Release: pairs with the Acquire of the receiver's claim.
        self.word
            .store(word(gen, OfferState::Offered), Ordering::Release);
    }

    /// The owner takes offer `gen` back: true when it was `Offered` (no
    /// receiver will read it; a later claim fails).
    pub fn withdraw(&self, gen: u64) -> bool {
        self.leave_offered(gen, OfferState::Withdrawn)
    }

    /// The state of offer `gen` (`None`: another generation).
    pub fn state(&self, gen: u64) -> Option<OfferState> {
        // Acquire: pairs with the receiver's Release in `finish` (once
        // `Done` is seen, its copy is over).
        let w = self.word.load(Ordering::Acquire);
        ((w >> 3) == gen & GEN_MASK).then(|| OfferState::of(w))
    }

    /// The owner frees the entry (the receiver acked, or is dead).
    pub fn retire(&self) {
        // Relaxed: the next open publishes with Release under a new
        // generation; a claim of this one fails on the generation.
        self.word.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Box<OfferTable> {
        // SAFETY: all-zero bytes are a valid table (atomics; every entry
        // Free), as in the segment's fresh file.
        unsafe { Box::new(core::mem::zeroed()) }
    }

    #[test]
    fn a_claim_reads_the_offered_address_then_finishes() {
        let t = table();
        let e = t.entry(3);
        assert!(e.is_free());
        e.open(7, 0x1000);
        assert!(!e.is_free());
        assert_eq!(e.claim(7), Ok(0x1000));
        // A second claim, or the owner's move, loses to the reader.
        assert_eq!(e.claim(7), Err(Some(OfferState::Reading)));
        assert!(!e.begin_move(7));
        assert!(!e.withdraw(7));
        e.finish(7);
        assert_eq!(e.state(7), Some(OfferState::Done));
        e.retire();
        assert!(e.is_free());
    }

    #[test]
    fn a_move_gives_the_next_claim_the_new_address() {
        let t = table();
        let e = t.entry(0);
        e.open(1, 0x1000);
        assert!(e.begin_move(1));
        assert_eq!(e.claim(1), Err(Some(OfferState::Moving)));
        e.end_move(1, 0x2000);
        assert_eq!(e.claim(1), Ok(0x2000));
    }

    #[test]
    fn a_withdrawn_or_old_offer_cannot_be_claimed() {
        let t = table();
        let e = t.entry(63);
        e.open(5, 0x1000);
        assert!(e.withdraw(5));
        assert_eq!(e.claim(5), Err(Some(OfferState::Withdrawn)));
        e.retire();
        e.open(6, 0x3000);
        assert_eq!(e.claim(5), Err(None));
        assert_eq!(e.state(5), None);
        assert_eq!(e.claim(6), Ok(0x3000));
    }

    #[test]
    fn generations_wrap_within_the_word() {
        let t = table();
        let e = t.entry(1);
        let gen = u64::MAX - 1;
        e.open(gen, 9);
        assert_eq!(e.state(gen), Some(OfferState::Offered));
        assert_eq!(e.claim(gen), Ok(9));
    }
}
