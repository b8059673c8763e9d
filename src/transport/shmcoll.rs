//! Small collectives through a collective region (`shm::collregion`):
//! flags instead of messages.
//!
//! Every member of a communicator with a region numbers its collectives
//! on it 1, 2, 3, ... (the *epoch*; members call collectives in the same
//! order, as MPI requires). Collective `e` of a member:
//!
//! 1. waits until every member has posted epoch `e - 1` (so everyone has
//!    finished reading the payloads of `e - 2`, whose buffer, parity
//!    `e % 2`, is about to be reused), or only `e - 2` when collective
//!    `e - 2` was a bcast or a barrier (a bcast's readers post only after
//!    reading its root's buffer; its readers and a barrier wrote no
//!    payload, so their buffer `e % 2` was last written at `e - 4` or
//!    before, read before `e - 3` was posted): back to back bcasts then
//!    cost no round trip each. Every member records which kind `e - 2`
//!    was itself; they agree because MPI has them call the same
//!    collectives in the same order. (A program that breaks that rule,
//!    erroneous in MPI, can then have a payload rewritten while a peer
//!    copies it: garbage in its buffer, as mismatched collectives give
//!    anyway, where the rule of `e - 1` alone gave none.) Free when its previous
//!    collective already saw every member at that epoch (allgather,
//!    barrier, a gather's root), since re-reading a flag line a peer has
//!    just written costs a cache-line transfer before anything is posted;
//! 2. writes its payload into buffer `e % 2` of its slot (if it sends);
//! 3. posts `e` (Release);
//! 4. waits for the epochs it needs (Acquire) and reads their payloads;
//! 5. rings the members' doorbells (a SeqCst fence, then each member's
//!    sleeper count), also before its own wait stops spinning.
//!
//! Ringing after the wait rather than right after the post keeps the
//! fence off the critical path: by then the post has long reached the
//! peers. A member asleep waiting for this post was rung at the end of
//! every earlier collective, and is rung for this one when the poster
//! finishes or stops spinning, whichever comes first, so it sleeps at most
//! one spinning phase longer than it would have.
//!
//! A bcast receiver posts `e` after reading (the root does not wait for
//! it; step 1 of the root's next-but-one collective does). Payload reads
//! of epoch `e` happen after the Acquire of the writer's `e` and before
//! the reader posts `e + 1` (a bcast's: before it posts `e`), and a
//! writer writes buffer `e % 2` again only after seeing every member at
//! `e + 1` (after a bcast or a barrier: at `e`), so no byte is read while written
//! (`SYNC(shmcoll)`). Waiting goes through the caller's `wait`, which
//! spins, yields and sleeps on the doorbell while keeping the engine
//! moving.

use crate::error::{Error, ErrorClass, Result};
use crate::shm::collregion::{Slot, INLINE, PAYLOAD, REGIONS};
use crate::shm::doorbell::{self, Kernel};
use crate::shm::Segment;
use crate::sync::{fence, Ordering};
use core::ptr::NonNull;
use std::sync::{Arc, Mutex};

/// How a region operation waits: `wait(cond, on_idle)` returns once
/// `cond()` holds, and calls `on_idle()` before it stops spinning (yields
/// or sleeps).
pub type Wait<'a> = &'a mut dyn FnMut(&dyn Fn() -> bool, &dyn Fn()) -> Result<()>;

/// Largest payload per member.
pub const MAX_PAYLOAD: usize = PAYLOAD;

/// This process's view of a region's epochs.
#[derive(Debug, Default)]
struct Epochs {
    /// The last collective it completed.
    done: u64,
    /// Every member has posted at least this (seen by this process).
    all: u64,
    /// By epoch parity: whether the last collective of that parity let
    /// the next one of that parity start once every member posted it
    /// (a bcast, whose readers post after reading; a barrier, which
    /// wrote no payload), rather than the epoch after it (step 1).
    posted_when_read: [bool; 2],
}

/// One communicator's use of a collective region.
#[derive(Debug)]
pub struct Region {
    seg: Arc<Segment>,
    index: usize,
    members: Arc<[usize]>,
    me: usize,
    /// The last epoch this process completed, and the highest epoch it
    /// has seen every member post; the lock also serialises collectives
    /// of one communicator called from several threads (erroneous in MPI,
    /// but then merely serialised, never racy).
    epoch: Mutex<Epochs>,
    /// Each member's slot, looked up once (the spin loops read them).
    slots: Vec<NonNull<Slot>>,
    /// Ring right after each post instead of after the wait: when ranks
    /// outnumber cores a poster may be preempted between its post and its
    /// ring, and a peer asleep on that post would sleep until it runs.
    eager: bool,
}

// SAFETY: the slot pointers point into the mapping that `seg` (an `Arc`
// owned by the region) keeps alive, and `Slot` is only ever accessed
// through atomics or, for payloads, under the epoch protocol with the
// `epoch` lock held; the pointers carry no thread affinity.
unsafe impl Send for Region {}
// SAFETY: as for `Send`; `&Region` gives no unsynchronised access.
unsafe impl Sync for Region {}

impl Region {
    /// Claims a region for `members` (world ranks) and resets their
    /// epochs (the leader of a communicator creation does this before it
    /// tells the members). `None` when the pool is exhausted.
    pub fn claim(seg: &Segment, members: &[usize]) -> Option<usize> {
        let r = seg.coll_pool().claim(members.len() as u32)?;
        for &m in members {
            // Relaxed: published to the members by the leader's messages
            // (which follow), before any of them uses the region.
            seg.coll_slot(r, m).head.epoch.store(0, Ordering::Relaxed);
        }
        Some(r)
    }

    /// This process's handle on region `index` for a communicator of
    /// `members` (world ranks, in rank order) where it is rank `me`.
    /// Region 0 is `WORLD`'s and is never released.
    pub fn attach(seg: Arc<Segment>, index: usize, members: Arc<[usize]>, me: usize) -> Region {
        assert!(index < REGIONS && me < members.len());
        let slots = members
            .iter()
            .map(|&m| NonNull::from(seg.coll_slot(index, m)))
            .collect();
        let cores = super::wait::online_cpus();
        let eager = seg.spec().nranks as usize > cores;
        Region {
            seg,
            index,
            members,
            me,
            epoch: Mutex::new(Epochs::default()),
            slots,
            eager,
        }
    }

    /// Member `k`'s slot.
    #[inline]
    fn slot(&self, k: usize) -> &Slot {
        // SAFETY: the pointer came from `Segment::coll_slot` (in bounds,
        // aligned) and the mapping lives as long as `self.seg`, which
        // outlives this borrow of `self`.
        unsafe { self.slots[k].as_ref() }
    }

    fn epoch_of(&self, k: usize) -> u64 {
        // SYNC(shmcoll): Acquire; pairs with the Release in `post`: the
        // member's payload of that epoch is visible.
        self.slot(k).head.epoch.load(Ordering::Acquire)
    }

    fn all_at(&self, e: u64) -> bool {
        (0..self.members.len()).all(|k| self.epoch_of(k) >= e)
    }

    fn post(&self, e: u64) {
        let me = self.slot(self.me);
        // SYNC(shmcoll): Release; pairs with the Acquire in `epoch_of`.
        me.head.epoch.store(e, Ordering::Release);
        if self.eager {
            self.ring();
        }
    }

    /// Step 1: every member has posted `e - 1`, or `e - 2` when
    /// collective `e - 2` was a bcast or a barrier. Free when this process
    /// saw it already (its last collective waited for everyone); a look
    /// at every member's flag line otherwise.
    fn start_rule(&self, g: &mut Epochs, e: u64, wait: Wait<'_>) -> Result<()> {
        // `e % 2` holds what collective `e - 2` was (false before any).
        let need = if g.posted_when_read[(e % 2) as usize] {
            e - 2
        } else {
            e - 1
        };
        if g.all < need {
            wait(&|| self.all_at(need), &|| self.ring())?;
            g.all = need;
        }
        Ok(())
    }

    /// Wakes members that sleep waiting for this rank's posts.
    fn ring(&self) {
        // SYNC(doorbell): the fence between publishing (the posts) and
        // reading the sleeper counts.
        fence(Ordering::SeqCst);
        for (k, &m) in self.members.iter().enumerate() {
            if k != self.me {
                let cb = self.seg.control(m);
                doorbell::ring(&Kernel, cb.doorbell(), cb.sleepers());
            }
        }
    }

    fn write(&self, e: u64, data: &[u8]) {
        assert!(data.len() <= PAYLOAD);
        let slot = self.slot(self.me);
        // Relaxed: published with the payload by the Release of the epoch.
        slot.head.len[(e % 2) as usize].store(data.len() as u64, Ordering::Relaxed);
        let p = (e % 2) as usize;
        let dst = if data.len() <= INLINE {
            slot.inline_ptr(p)
        } else {
            slot.payload_ptr(p)
        };
        // SAFETY: buffer `e % 2` of this rank's slot (in-line or not) is
        // written only by this rank, after every member posted `e - 1` or,
        // when `e - 2` was a bcast or barrier, `e - 2`: everyone finished
        // reading it, given the same collectives on every member, as MPI
        // requires (module doc, step 1); `data` fits (asserted above).
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
    }

    fn read(&self, e: u64, k: usize, out: &mut [u8]) -> Result<()> {
        assert!(out.len() <= PAYLOAD);
        let slot = self.slot(k);
        // Relaxed: after the Acquire of the epoch it was published with.
        let len = slot.head.len[(e % 2) as usize].load(Ordering::Relaxed) as usize;
        if len != out.len() {
            return Err(Error::new(
                ErrorClass::Count,
                format!(
                    "rank {k} passed {len} bytes where this rank passed {}: the members \
                     passed different counts or types to the collective",
                    out.len()
                ),
            ));
        }
        let p = (e % 2) as usize;
        let src = if len <= INLINE {
            slot.inline_ptr(p)
        } else {
            slot.payload_ptr(p)
        };
        // SAFETY: called after the Acquire of member k's epoch `e`, so its
        // write of buffer `e % 2` (in-line or not, chosen by the same
        // length) is complete and visible, and it will not write it again
        // before this rank posts `e + 1`, or `e` when this is a bcast,
        // which this rank posts only after this read (module doc).
        unsafe { core::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    fn begin(&self, len: usize) -> Result<std::sync::MutexGuard<'_, Epochs>> {
        if len > PAYLOAD {
            return Err(Error::new(
                ErrorClass::Intern,
                format!("{len} bytes do not fit a collective region's {PAYLOAD}-byte buffers"),
            ));
        }
        Ok(self.epoch.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// A barrier: post, wait for every member's post. No payload, so no
    /// buffer is reused and the start rule (step 1) is not needed; the
    /// next collective's own start rule covers it.
    ///
    /// # Errors
    /// What `wait` returns.
    pub fn barrier(&self, wait: Wait<'_>) -> Result<()> {
        let mut g = self.begin(0)?;
        let e = g.done + 1;
        self.post(e);
        let r = wait(&|| self.all_at(e), &|| self.ring());
        if r.is_ok() {
            g.all = e;
        }
        self.ring();
        g.posted_when_read[(e % 2) as usize] = true;
        g.done = e;
        r
    }

    /// Posts `mine` and waits until every member has posted theirs; the
    /// returned view reads them (any order, any number of times) until it
    /// is dropped, which ends the collective.
    ///
    /// # Errors
    /// What `wait` returns.
    pub fn exchange(&self, mine: &[u8], wait: Wait<'_>) -> Result<Exchange<'_>> {
        let x = self.post_then_view(mine, true, wait)?;
        Ok(x.expect("every member waits in an exchange"))
    }

    /// As [`exchange`](Self::exchange), but only `root` waits and reads:
    /// the others post and are done (`None`).
    ///
    /// # Errors
    /// What `wait` returns.
    pub fn gather(&self, root: usize, mine: &[u8], wait: Wait<'_>) -> Result<Option<Exchange<'_>>> {
        self.post_then_view(mine, self.me == root, wait)
    }

    fn post_then_view(
        &self,
        mine: &[u8],
        view: bool,
        wait: Wait<'_>,
    ) -> Result<Option<Exchange<'_>>> {
        let mut g = self.begin(mine.len())?;
        let e = g.done + 1;
        self.start_rule(&mut g, e, wait)?;
        self.write(e, mine);
        self.post(e);
        // Viewers read after posting: the next writer of this parity
        // waits for `e + 1`.
        g.posted_when_read[(e % 2) as usize] = false;
        if !view {
            self.ring();
            g.done = e;
            return Ok(None);
        }
        wait(&|| self.all_at(e), &|| self.ring())?;
        g.all = e;
        Ok(Some(Exchange {
            region: self,
            guard: g,
            e,
        }))
    }

    /// `buf` of `root` into every member's `buf`.
    ///
    /// # Errors
    /// What `wait` returns.
    pub fn bcast(&self, root: usize, buf: &mut [u8], wait: Wait<'_>) -> Result<()> {
        let mut g = self.begin(buf.len())?;
        let e = g.done + 1;
        self.start_rule(&mut g, e, wait)?;
        let mut r = Ok(());
        if self.me == root {
            self.write(e, buf);
            self.post(e);
        } else {
            wait(&|| self.epoch_of(root) >= e, &|| self.ring())?;
            r = self.read(e, root, buf);
            self.post(e);
        }
        self.ring();
        g.posted_when_read[(e % 2) as usize] = true;
        g.done = e;
        r
    }

    /// Whether the job has more ranks than this machine has cores.
    pub fn oversubscribed(&self) -> bool {
        self.eager
    }
}

/// Every member's payload of one collective, readable until dropped.
#[derive(Debug)]
pub struct Exchange<'a> {
    region: &'a Region,
    guard: std::sync::MutexGuard<'a, Epochs>,
    e: u64,
}

impl Exchange<'_> {
    /// Member `k`'s payload into `out` (of the length every member passed).
    ///
    /// # Errors
    /// `Count` when member `k` passed another length.
    pub fn read(&self, k: usize, out: &mut [u8]) -> Result<()> {
        self.region.read(self.e, k, out)
    }

    /// Members.
    pub fn members(&self) -> usize {
        self.region.members.len()
    }
}

impl Drop for Exchange<'_> {
    fn drop(&mut self) {
        self.region.ring();
        self.guard.done = self.e;
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if self.index != 0 {
            self.seg.coll_pool().release(self.index);
        }
    }
}
