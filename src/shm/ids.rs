//! Context-id maps: for every rank, one bit per context index saying
//! whether the rank belongs to a live communicator with that index.
//!
//! The maps live in the segment, beside the control blocks, so that the
//! leader of a communicator creation can claim an index for all members at
//! once: it sets the index's bit in each member's map, in ascending world
//! rank order, and backs out (clearing what it set) if a bit is taken.
//! `comm::context` (and `docs/context-ids.md`) explain why this is an
//! agreement, why it cannot deadlock, and how ids are reused.
//!
//! Exclusivity comes from the read-modify-writes on one word being
//! totally ordered, which holds at any ordering. A cleared bit also
//! says "this rank has forgotten everything of the old communicator"
//! (`comm::context::release` purges its queued messages first), so the
//! release is a Release RMW and a successful claim's `fetch_or` is
//! Acquire: the purge happens before the new communicator's leader sends
//! anything (`SYNC(ids)`). Loads that only look for candidates, hints and
//! the back-out of a failed claim publish nothing and are Relaxed.

use crate::sync::{AtomicU32, AtomicU64, CachePadded, Ordering};

/// Bits of a context id that name its index.
pub const CONTEXT_INDEX_BITS: u32 = 20;
/// Indices per rank (and so the most communicators a process can belong
/// to at once, less the reserved ones).
pub const CONTEXT_INDICES: usize = 1 << CONTEXT_INDEX_BITS;
/// Indices never claimed: 0 is `WORLD`, 1 is `SELF`.
pub const RESERVED_INDICES: u32 = 2;
const WORDS: usize = CONTEXT_INDICES / 64;

/// One rank's map, `#[repr(C)]`.
#[repr(C)]
#[derive(Debug)]
pub struct IdMap {
    /// Every word below this is probably full: where searches start. A
    /// hint only: a wrong value costs a longer search, never a collision.
    hint: CachePadded<AtomicU32>,
    words: [AtomicU64; WORDS],
}

/// Bytes of one map (a multiple of the cache line).
pub const ID_MAP_BYTES: usize = core::mem::size_of::<IdMap>();
const _: () = assert!(ID_MAP_BYTES % crate::sync::CACHE_LINE == 0);

impl IdMap {
    fn word(&self, w: usize) -> &AtomicU64 {
        &self.words[w]
    }

    /// Whether `index` is taken in this map.
    pub fn is_taken(&self, index: u32) -> bool {
        let (w, bit) = split(index);
        // Relaxed: see the module doc.
        self.word(w).load(Ordering::Relaxed) & bit != 0
    }

    /// Gives `index` back: this rank no longer belongs to a communicator
    /// with that index.
    pub fn release(&self, index: u32) {
        let (w, bit) = split(index);
        // SYNC(ids): Release; pairs with the Acquire `fetch_or` of the
        // next claim of this bit: what this rank did before (the purge)
        // happens before the new leader's messages.
        self.word(w).fetch_and(!bit, Ordering::Release);
        self.hint.fetch_min(w as u32, Ordering::Relaxed);
    }
}

fn split(index: u32) -> (usize, u64) {
    let i = index as usize;
    assert!(i < CONTEXT_INDICES, "context index {index} out of range");
    (i / 64, 1u64 << (i % 64))
}

/// Claims one index that is free in every map of `maps`, which must be
/// the members' maps in ascending world-rank order without repeats.
/// `None` when no index is free in all of them.
///
/// A claimer never waits for another: it sets the bit in each member's
/// map in order and, finding one set, clears what it set and tries
/// another. Two claimers that want the same index for overlapping members
/// meet first at their lowest-ranked common member, where only one can
/// win the bit. A bit may also be set only for a moment by a claimer that
/// is about to back out; so after a failure the word is read again and
/// its candidates are retried (up to [`WORD_RETRIES`] times), and the
/// whole search runs twice before it reports that nothing is free.
pub fn claim_common(maps: &[&IdMap]) -> Option<u32> {
    if maps.is_empty() {
        return None;
    }
    // Relaxed: hints; see the module doc.
    let start = maps
        .iter()
        .map(|m| m.hint.load(Ordering::Relaxed) as usize)
        .max()
        .unwrap_or(0)
        .min(WORDS - 1);
    for w in (start..WORDS).chain(0..start).chain(0..WORDS) {
        for _ in 0..WORD_RETRIES {
            let free = free_in_all(maps, w);
            if free == 0 {
                break;
            }
            let bit = 1u64 << free.trailing_zeros();
            if claim_bit(maps, w, bit) {
                for m in maps {
                    // Relaxed: a hint.
                    if m.word(w).load(Ordering::Relaxed) == !0 {
                        m.hint.fetch_max(w as u32 + 1, Ordering::Relaxed);
                    }
                }
                return Some((w * 64) as u32 + bit.trailing_zeros());
            }
        }
    }
    None
}

/// Passes over one word before the search moves on.
pub const WORD_RETRIES: usize = 64;

/// The bits of word `w` clear in every map (index 0 and 1 never are).
fn free_in_all(maps: &[&IdMap], w: usize) -> u64 {
    let mut free = if w == 0 {
        !((1u64 << RESERVED_INDICES) - 1)
    } else {
        !0
    };
    for m in maps {
        // Relaxed: only finds candidates; the claim's RMW decides.
        free &= !m.word(w).load(Ordering::Relaxed);
    }
    free
}

/// Sets `bit` of word `w` in every map, in order; on finding it taken,
/// clears the bits set so far and fails.
fn claim_bit(maps: &[&IdMap], w: usize, bit: u64) -> bool {
    for (k, m) in maps.iter().enumerate() {
        // SYNC(ids): Acquire; pairs with the Release in `release`.
        if m.word(w).fetch_or(bit, Ordering::Acquire) & bit != 0 {
            for m in &maps[..k] {
                // Relaxed: undoes this claimer's own bits; publishes nothing.
                m.word(w).fetch_and(!bit, Ordering::Relaxed);
            }
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn maps(n: usize) -> Vec<Box<IdMap>> {
        (0..n)
            .map(|_| {
                // Zeroed atomics are valid maps; build through a Vec of
                // words to stay on the heap (128 KiB each).
                let words: Vec<AtomicU64> = (0..WORDS).map(|_| AtomicU64::new(0)).collect();
                let words: Box<[AtomicU64; WORDS]> = words.into_boxed_slice().try_into().unwrap();
                Box::new(IdMap {
                    hint: CachePadded::new(AtomicU32::new(0)),
                    words: *words,
                })
            })
            .collect()
    }

    #[test]
    fn claims_skip_reserved_and_taken_indices_and_come_back_after_release() {
        let m = maps(3);
        let all: Vec<&IdMap> = m.iter().map(|b| &**b).collect();
        let a = claim_common(&all).unwrap();
        assert_eq!(a, RESERVED_INDICES);
        // Taken in map 1 only: a claim over maps 0 and 1 skips it, a claim
        // over 0 and 2 may take it.
        let b = claim_common(&all[1..2]).unwrap();
        assert_eq!(b, a + 1);
        let c = claim_common(&all[0..2]).unwrap();
        assert_eq!(c, a + 2);
        let d = claim_common(&[all[0], all[2]]).unwrap();
        assert_eq!(d, a + 1);
        for m in &all[0..2] {
            m.release(c);
        }
        assert_eq!(
            claim_common(&all[0..2]),
            Some(c),
            "a released index is reused"
        );
        assert!(all[0].is_taken(a) && all[2].is_taken(d) && !all[2].is_taken(c));
    }

    #[test]
    fn a_full_map_is_exhausted_and_a_release_refills_it() {
        let m = maps(1);
        let one = [&*m[0]];
        let mut n = 0;
        while claim_common(&one).is_some() {
            n += 1;
        }
        assert_eq!(n, CONTEXT_INDICES - RESERVED_INDICES as usize);
        m[0].release(77_777);
        assert_eq!(claim_common(&one), Some(77_777));
    }

    #[test]
    fn racing_claimers_never_share_an_index() {
        let m = maps(4);
        let all: Vec<&IdMap> = m.iter().map(|b| &**b).collect();
        let got: Vec<Vec<u32>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|t| {
                    // Overlapping member sets: {0,1,2}, {1,2,3}, {0,3}, {0,1,2,3}.
                    let set: Vec<&IdMap> = match t {
                        0 => vec![all[0], all[1], all[2]],
                        1 => vec![all[1], all[2], all[3]],
                        2 => vec![all[0], all[3]],
                        _ => all.clone(),
                    };
                    s.spawn(move || (0..2000).map(|_| claim_common(&set).unwrap()).collect())
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        // Every pair of claimers overlaps, so all 8000 indices differ.
        let mut v: Vec<u32> = got.concat();
        v.sort_unstable();
        v.dedup();
        assert_eq!(v.len(), 8000);
    }
}
