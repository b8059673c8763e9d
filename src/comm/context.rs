//! Context ids: how a new communicator gets one, and how it is given back.
//!
//! # The problem
//!
//! Every communicator needs a context id that no other live communicator
//! *of any of its members* uses, because a receiver matches messages on
//! (context id, source, tag) and one process may belong to many
//! communicators at once. The members must agree on the id without a
//! central server, creation must never hang, running out must be a clear
//! error, and creations on different, overlapping communicators from
//! different threads must neither collide nor deadlock.
//!
//! The peers solve this by agreement rounds. MPICH keeps a mask of free
//! ids per process and ANDs the members' masks in an allreduce over the
//! parent, taking the lowest common bit; with threads, one creation at a
//! time per process contributes its mask, beside a small part of the mask
//! set aside for an eager path (`MPIR_CVAR_CTXID_EAGER_SIZE`, in its
//! `commutil.c`). Its context id is a 16-bit field that also carries
//! sub-context bits, so it has about 2048 ids; Open MPI allows 65535. The
//! MPICH source also notes the race that reusing ids after a free without
//! a barrier opens (a message sent on the old communicator and matched on
//! the new one); shmpi has the same window, only for messages that a
//! correct program never leaves unreceived ("Exhaustion and reuse").
//!
//! # What shmpi does
//!
//! All processes of a job share one segment, so they can write each
//! other's bookkeeping directly. Each rank owns a map in the segment
//! (`shm::ids`) with one bit per context *index*: 2^20 indices, so a
//! process can belong to 1,048,574 communicators at once (indices 0 and 1
//! are `WORLD` and `SELF`). A bit is set while the rank belongs to a live
//! communicator with that index. The map is 128 KiB per rank.
//!
//! To create a communicator, the members first settle *who* the members
//! are (dup: the parent's group; split: an allgather of colours and keys;
//! create: an allgather of group digests), which every member computes the
//! same way. Then one member, the *leader* (rank 0 of the new
//! communicator), claims an index for all members at once
//! (`shm::ids::claim_common`): it looks for an index clear in every
//! member's map and sets the bit in each member's map in ascending world
//! rank order, each with one atomic `fetch_or`. If a bit turns out to be
//! set already (another leader got there first), it clears the bits it set
//! and tries the next index. Then it sends the index to the other members
//! over the parent's collective context, and they take it. The agreement
//! is the leader's claim: an index whose bit is set in a member's map is
//! by construction unused by that member, so every member may take it.
//!
//! The ids on the wire are `index | flags`: bit 31 marks collective
//! traffic of the communicator (`p2p::COLL_BIT`), bit 30 the local side of
//! an intercommunicator (its hidden intracommunicator; the two sides use
//! the same value and never talk on it to each other), bit 29 is kept for
//! ids of connections between jobs (`connect`/`accept`, a later issue,
//! whose processes share no maps), bit 28 marks partitioned traffic
//! (`PART_BIT`, `MPI_Psend_init`), which matches apart from the rest.
//!
//! # Why it cannot collide
//!
//! Two leaders that claim the same index for overlapping member sets both
//! `fetch_or` the bit of their lowest common member. Read-modify-writes of
//! one word are totally ordered, so exactly one of them sees the bit clear;
//! the other backs out. A member whose bit is set belongs to at most one
//! live communicator with that index. A release is a Release RMW and a
//! successful claim an Acquire one (`SYNC(ids)`), so what the releasing
//! rank did first (forgetting the old communicator's queued messages)
//! happens before the new leader's first message; the index itself
//! reaches members in a message, whose ring protocol orders the rest.
//!
//! # Why it cannot deadlock or livelock
//!
//! Claiming never waits: a claimer that finds a bit taken undoes its own
//! bits and tries another candidate; the search is a bounded loop, so a
//! claim always returns. Because every claimer walks members in the same
//! order, two claimers of one index meet first at their lowest common
//! member and only one passes it. A claimer can also lose to a bit set
//! only for a moment by a claimer that then backs out; it then reads the
//! word again and retries its candidates, and it runs the whole search
//! twice before it reports exhaustion, so a transient bit does not turn
//! into a false "no free context id" unless the contention repeats on
//! every pass. Threads of one process creating on different
//! communicators use different collective contexts for their messages and
//! the shared engine progresses both, so one never waits for the other;
//! creations on the *same* communicator from two threads at once are
//! erroneous in MPI (collectives on one communicator must be ordered).
//! What remains is MPI's own rule: members must call the constructors of
//! one parent in the same order.
//!
//! # Exhaustion and reuse
//!
//! When no index is clear in all members' maps the leader fails with
//! `Other` ("no free context id ...") and tells the members, who fail
//! too; nothing hangs. Freeing a communicator (dropping its last handle,
//! `free`, or `disconnect`) clears the index's bit in the freeing
//! process's own map, after dropping the unexpected messages that were
//! still queued for it (only an erroneous program leaves any); the index
//! is reused as soon as every member of a new communicator has it clear.
//! Pending operations do not stand in the way: a request borrows its
//! communicator, so the last handle outlives them, and a receive whose
//! handle was dropped is withdrawn.
//!
//! A search starts at the highest of the members' hints (the word below
//! which a map is full), so while the members' maps fill alike (a million
//! dups of one communicator) a creation costs O(1); when they are
//! fragmented differently, or nearly full, it scans the members' maps
//! (16,384 words each at most).

use crate::error::{Error, ErrorClass, Result};
use crate::p2p::{Shared, COLL_BIT};
use crate::shm::ids::{claim_common, CONTEXT_INDICES};

/// Bit 30: the hidden local intracommunicator of an intercommunicator.
pub const INTER_LOCAL_BIT: u32 = 1 << 30;
/// Bit 29: reserved for ids of connections between jobs.
pub const FOREIGN_BIT: u32 = 1 << 29;
/// Bit 28: partitioned communication's own matching space (MPI 4.1
/// §4.2: a partitioned send matches only a partitioned receive). Its
/// setup messages carry the program's tags, its data messages a negative
/// tag of their operation's (`Communicator::isend_part_bytes`).
pub const PART_BIT: u32 = 1 << 28;
/// Index of `WORLD`.
pub const WORLD_INDEX: u32 = 0;
/// Index of `SELF`.
pub const SELF_INDEX: u32 = 1;

/// Claims an index for the members `world_ranks` (any order, no repeats).
///
/// # Errors
/// `Other` when no index is free in every member's map.
pub fn claim(sh: &Shared, world_ranks: &[usize]) -> Result<u32> {
    // Each member's map is in its own job's segment (a member of another
    // job is reached through a bridge, whose remote segment this process
    // maps); members are walked in cross-job name order, which within a
    // job is world-rank order, so every claimer walks them alike.
    let mut homes: Vec<_> = {
        let e = sh.lock();
        let t = e.transport();
        world_ranks
            .iter()
            .map(|&p| {
                let (seg, r) = t.home_of(p);
                (t.gpid(p), seg, r)
            })
            .collect()
    };
    homes.sort_unstable_by_key(|h| h.0);
    homes.dedup_by_key(|h| h.0);
    let maps: Vec<_> = homes.iter().map(|(_, seg, r)| seg.id_map(*r)).collect();
    claim_common(&maps).ok_or_else(|| {
        Error::new(
            ErrorClass::Other,
            format!(
                "no free context id: every one of the {} indices is in use by some member of \
                 the new communicator (free communicators to reuse theirs)",
                CONTEXT_INDICES - 2
            ),
        )
    })
}

/// Gives `index` back for this process: forgets unexpected messages on
/// every context derived from it, then clears its bit in this rank's map.
pub fn release(sh: &Shared, index: u32) {
    let ids = [
        index,
        index | COLL_BIT,
        index | INTER_LOCAL_BIT,
        index | INTER_LOCAL_BIT | COLL_BIT,
        index | PART_BIT,
    ];
    sh.lock().purge_contexts(&ids);
    sh.segment().id_map(sh.world_rank()).release(index);
}

/// Takes back `index` from the maps of `members` (any job's) after a claim
/// whose members never learnt it (a connection that failed part way):
/// the claimer clears the bits it set, as a claim that backs out does.
pub fn unclaim(sh: &Shared, members: &[usize], index: u32) {
    let homes: Vec<_> = {
        let e = sh.lock();
        members
            .iter()
            .filter(|&&p| e.transport().is_peer(p))
            .map(|&p| e.transport().home_of(p))
            .collect()
    };
    for (seg, r) in homes {
        seg.id_map(r).release(index);
    }
}
