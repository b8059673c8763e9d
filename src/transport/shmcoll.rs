//! Small collectives through a collective region (`shm::collregion`):
//! flags instead of messages.
//!
//! Every member of a communicator with a region numbers its collectives
//! on it 1, 2, 3, ... (the *epoch*; members call collectives in the same
//! order, as MPI requires). Collective `e` of a member:
//!
//! 1. waits until every member has posted epoch `e - 1` (so everyone has
//!    finished reading the payloads of `e - 2`, whose buffer, parity
//!    `e % 2`, is about to be reused);
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
//! the reader posts `e + 1`, and a writer writes buffer `e % 2` again only
//! after seeing every member at `e + 1`, so no byte is read while written
//! (`SYNC(shmcoll)`). Waiting goes through the caller's `wait`, which
//! spins, yields and sleeps on the doorbell while keeping the engine
//! moving.

use crate::error::{Error, ErrorClass, Result};
use crate::shm::collregion::{INLINE, PAYLOAD, REGIONS};
use crate::shm::doorbell::{self, Kernel};
use crate::shm::Segment;
use crate::sync::{fence, Ordering};
use std::sync::{Arc, Mutex};

/// How a region operation waits: `wait(cond, on_idle)` returns once
/// `cond()` holds, and calls `on_idle()` before it stops spinning (yields
/// or sleeps).
pub type Wait<'a> = &'a mut dyn FnMut(&dyn Fn() -> bool, &dyn Fn()) -> Result<()>;

/// Largest payload per member.
pub const MAX_PAYLOAD: usize = PAYLOAD;

/// One communicator's use of a collective region.
#[derive(Debug)]
pub struct Region {
    seg: Arc<Segment>,
    index: usize,
    members: Arc<[usize]>,
    me: usize,
    /// The last epoch this process completed; the lock also serialises
    /// collectives of one communicator called from several threads
    /// (erroneous in MPI, but then merely serialised, never racy).
    epoch: Mutex<u64>,
}

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
        Region {
            seg,
            index,
            members,
            me,
            epoch: Mutex::new(0),
        }
    }

    fn epoch_of(&self, k: usize) -> u64 {
        // SYNC(shmcoll): Acquire; pairs with the Release in `post`: the
        // member's payload of that epoch is visible.
        self.seg
            .coll_slot(self.index, self.members[k])
            .head
            .epoch
            .load(Ordering::Acquire)
    }

    fn all_at(&self, e: u64) -> bool {
        (0..self.members.len()).all(|k| self.epoch_of(k) >= e)
    }

    fn post(&self, e: u64) {
        let me = self.seg.coll_slot(self.index, self.members[self.me]);
        // SYNC(shmcoll): Release; pairs with the Acquire in `epoch_of`.
        me.head.epoch.store(e, Ordering::Release);
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
        let slot = self.seg.coll_slot(self.index, self.members[self.me]);
        // Relaxed: published with the payload by the Release of the epoch.
        slot.head.len[(e % 2) as usize].store(data.len() as u64, Ordering::Relaxed);
        let p = (e % 2) as usize;
        let dst = if data.len() <= INLINE {
            slot.inline_ptr(p)
        } else {
            slot.payload_ptr(p)
        };
        // SAFETY: buffer `e % 2` of this rank's slot (in-line or not) is
        // written only by this rank, and only after every member posted
        // `e - 1`, i.e. finished reading it (module doc); `data` fits the
        // buffer chosen by its length (asserted above).
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
    }

    fn read(&self, e: u64, k: usize, out: &mut [u8]) -> Result<()> {
        assert!(out.len() <= PAYLOAD);
        let slot = self.seg.coll_slot(self.index, self.members[k]);
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
        // before this rank posts `e + 1` (module doc).
        unsafe { core::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    fn begin(&self, len: usize) -> Result<std::sync::MutexGuard<'_, u64>> {
        if len > PAYLOAD {
            return Err(Error::new(
                ErrorClass::Intern,
                format!("{len} bytes do not fit a collective region's {PAYLOAD}-byte buffers"),
            ));
        }
        Ok(self.epoch.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Every member's `mine` (all of one length) into `out`, in rank
    /// order (a barrier when empty).
    ///
    /// # Errors
    /// What `wait` returns.
    pub fn allgather(&self, mine: &[u8], out: &mut [u8], wait: Wait<'_>) -> Result<()> {
        let mut g = self.begin(mine.len())?;
        let e = *g + 1;
        wait(&|| self.all_at(e - 1), &|| self.ring())?;
        self.write(e, mine);
        self.post(e);
        wait(&|| self.all_at(e), &|| self.ring())?;
        let b = mine.len();
        let mut r = Ok(());
        for k in 0..self.members.len() {
            let x = self.read(e, k, &mut out[k * b..(k + 1) * b]);
            r = r.and(x);
        }
        self.ring();
        *g = e;
        r
    }

    /// Posts `mine` and waits until every member has posted theirs; the
    /// returned view reads them (any order, any number of times) until it
    /// is dropped, which ends the collective.
    ///
    /// # Errors
    /// What `wait` returns.
    pub fn exchange(&self, mine: &[u8], wait: Wait<'_>) -> Result<Exchange<'_>> {
        let g = self.begin(mine.len())?;
        let e = *g + 1;
        wait(&|| self.all_at(e - 1), &|| self.ring())?;
        self.write(e, mine);
        self.post(e);
        wait(&|| self.all_at(e), &|| self.ring())?;
        Ok(Exchange {
            region: self,
            guard: g,
            e,
        })
    }

    /// Every member's `mine` into `out` at `root` only (others just post).
    ///
    /// # Errors
    /// What `wait` returns.
    pub fn gather(&self, root: usize, mine: &[u8], out: &mut [u8], wait: Wait<'_>) -> Result<()> {
        let mut g = self.begin(mine.len())?;
        let e = *g + 1;
        wait(&|| self.all_at(e - 1), &|| self.ring())?;
        self.write(e, mine);
        self.post(e);
        let mut r = Ok(());
        if self.me == root {
            wait(&|| self.all_at(e), &|| self.ring())?;
            let b = mine.len();
            for k in 0..self.members.len() {
                let x = self.read(e, k, &mut out[k * b..(k + 1) * b]);
                r = r.and(x);
            }
        }
        self.ring();
        *g = e;
        r
    }

    /// `buf` of `root` into every member's `buf`.
    ///
    /// # Errors
    /// What `wait` returns.
    pub fn bcast(&self, root: usize, buf: &mut [u8], wait: Wait<'_>) -> Result<()> {
        let mut g = self.begin(buf.len())?;
        let e = *g + 1;
        wait(&|| self.all_at(e - 1), &|| self.ring())?;
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
        *g = e;
        r
    }

    /// The region's index.
    pub fn index(&self) -> usize {
        self.index
    }
}

/// Every member's payload of one collective, readable until dropped.
#[derive(Debug)]
pub struct Exchange<'a> {
    region: &'a Region,
    guard: std::sync::MutexGuard<'a, u64>,
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
        *self.guard = self.e;
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if self.index != 0 {
            self.seg.coll_pool().release(self.index);
        }
    }
}
