//! MPI point-to-point: matching on (context id, source, tag), requests,
//! status, probe, truncation.
//!
//! Layer L3 (imports L0–L2). The [`Engine`] holds the queues and request
//! slots; [`Shared`] puts it behind one lock and adds the wait loop that
//! keeps the whole engine moving while any call blocks (MPI 4.1 §2.9,
//! progress). A [`Context`] is what a communicator gives p2p: its context
//! id and member ranks.
//!
//! Not yet here (later issues): cancel (§3.8.4), buffered and ready modes
//! (§3.4), persistent requests (§3.9), partitioned communication (§4).
#![forbid(unsafe_code)]

pub mod engine;
pub mod envelope;
pub mod status;

pub use engine::{Engine, SendStart, Sinks, SlotId};
pub use envelope::{ANY_SOURCE, ANY_TAG, PROC_NULL, TAG_UB};
pub use status::Status;

use crate::error::{Error, ErrorClass, Result};
use crate::shm::Segment;
use crate::transport::{Rung, WaitPolicy, Waiter};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// What matching and collectives need from a communicator: its context
/// id, its members' world ranks (index = rank in the communicator), and
/// this process's rank in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Context {
    /// The context id for point-to-point traffic; collectives use
    /// [`coll_id`](Self::coll_id) so they never match user messages.
    pub id: u32,
    /// World rank of each member.
    pub ranks: Arc<[usize]>,
    /// This process's rank in the communicator.
    pub rank: usize,
}

/// The bit that separates collective traffic from point-to-point traffic
/// of the same communicator.
pub const COLL_BIT: u32 = 1 << 31;

impl Context {
    /// Members.
    pub fn size(&self) -> usize {
        self.ranks.len()
    }

    /// The context id collectives use.
    pub fn coll_id(&self) -> u32 {
        self.id | COLL_BIT
    }

    /// Checks a destination rank: `Ok(None)` for `PROC_NULL`.
    ///
    /// # Errors
    /// `Rank` when out of range.
    pub fn dest(&self, rank: i32) -> Result<Option<usize>> {
        if rank == PROC_NULL {
            return Ok(None);
        }
        if rank < 0 || rank as usize >= self.size() {
            return Err(Error::new(
                ErrorClass::Rank,
                format!(
                    "rank {rank} is out of range for a communicator of size {}",
                    self.size()
                ),
            ));
        }
        Ok(Some(self.ranks[rank as usize]))
    }

    /// Checks a receive source: `Ok(false)` for `PROC_NULL`.
    ///
    /// # Errors
    /// `Rank` when out of range and not `ANY_SOURCE`.
    pub fn source(&self, rank: i32) -> Result<bool> {
        if rank == PROC_NULL {
            return Ok(false);
        }
        if !Engine::valid_source(rank, self.size()) {
            return Err(Error::new(
                ErrorClass::Rank,
                format!(
                    "source rank {rank} is out of range for a communicator of size {} \
                     (and is not ANY_SOURCE)",
                    self.size()
                ),
            ));
        }
        Ok(true)
    }
}

/// Checks a send tag.
///
/// # Errors
/// `Tag` unless `0 <= tag <= TAG_UB`.
pub fn check_send_tag(tag: i32) -> Result<()> {
    if tag < 0 {
        return Err(Error::new(
            ErrorClass::Tag,
            format!("tag {tag} is invalid for a send: tags are 0..={TAG_UB}"),
        ));
    }
    Ok(())
}

/// Checks a receive tag.
///
/// # Errors
/// `Tag` unless `0 <= tag <= TAG_UB` or `tag == ANY_TAG`.
pub fn check_recv_tag(tag: i32) -> Result<()> {
    if tag < 0 && tag != ANY_TAG {
        return Err(Error::new(
            ErrorClass::Tag,
            format!("tag {tag} is invalid for a receive: tags are 0..={TAG_UB} or ANY_TAG"),
        ));
    }
    Ok(())
}

/// The engine behind its lock, plus the wait ladder. One per process.
#[derive(Debug)]
pub struct Shared {
    engine: Mutex<Engine>,
    policy: WaitPolicy,
    /// The engine's segment, reachable without the lock (for spinning and
    /// sleeping on lock-free views of it).
    seg: Arc<Segment>,
}

impl Shared {
    /// Wraps an engine.
    pub fn new(engine: Engine, policy: WaitPolicy) -> Shared {
        let seg = engine.transport().segment().clone();
        Shared {
            engine: Mutex::new(engine),
            policy,
            seg,
        }
    }

    /// Locks the engine. A panic in another thread while it held the lock
    /// does not poison this process's communication.
    #[inline]
    pub fn lock(&self) -> MutexGuard<'_, Engine> {
        self.engine.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Drives progress until `done` holds, spinning, yielding and then
    /// sleeping between rounds; the lock is not held while pausing.
    ///
    /// # Errors
    /// What `done` returns, or `Other` when `deadline` passes.
    pub fn wait_until<T>(
        &self,
        deadline: Option<Instant>,
        mut done: impl FnMut(&mut Engine) -> Option<Result<T>>,
    ) -> Result<T> {
        self.wait_until_into(deadline, &mut [], |e, _| done(e))
    }

    /// As [`wait_until`](Self::wait_until), lending receive buffers to
    /// progress (see [`Sinks`]); `done` gets them back to finish with.
    ///
    /// # Errors
    /// As [`wait_until`](Self::wait_until).
    pub fn wait_until_into<T>(
        &self,
        deadline: Option<Instant>,
        sinks: Sinks<'_, '_>,
        mut done: impl FnMut(&mut Engine, Sinks<'_, '_>) -> Option<Result<T>>,
    ) -> Result<T> {
        let mut waiter = Waiter::new(self.policy);
        loop {
            let sleeper = {
                let mut e = self.lock();
                if let Some(r) = done(&mut e, sinks) {
                    return r;
                }
                if e.progress_into(sinks) > 0 {
                    if let Some(r) = done(&mut e, sinks) {
                        return r;
                    }
                    waiter.reset();
                    continue;
                }
                e.sleeper()
            };
            // Nothing to do: wait for work without the lock, spinning on
            // the few words a peer writes when it has something for us.
            // Every RECHECK rounds the lock is taken again, since another
            // thread may have completed our operation.
            for _ in 0..RECHECK {
                if sleeper.has_work(&self.seg) {
                    break;
                }
                if let Some(d) = deadline {
                    if Instant::now() >= d {
                        return Err(Error::new(
                            ErrorClass::Other,
                            "timed out waiting for completion",
                        ));
                    }
                }
                if let Rung::Sleep(t) = waiter.pause(deadline) {
                    sleeper.sleep(&self.seg, t);
                    break;
                }
            }
        }
    }
}

/// Lock-free spin rounds between two looks under the lock.
const RECHECK: usize = 256;
