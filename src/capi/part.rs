//! Partitioned communication (MPI 4.1 §4.2-4.3): `MPI_Psend_init`,
//! `MPI_Precv_init`, `MPI_Pready` / `_range` / `_list`, `MPI_Parrived`.
//! A partitioned request is a persistent one (`p2p::PSpec::part`): each
//! `MPI_Start` begins an epoch, which `MPI_Wait` / `MPI_Test` and the rest
//! complete; the epoch is `p2p::ReqState::Part`.
//!
//! # Protocol
//!
//! Everything travels on the communicator's partitioned context
//! (`comm::context::PART_BIT`), which no other message matches (MPI 4.1
//! §4.2.1: a partitioned send matches only a partitioned receive).
//!
//! - `MPI_Psend_init` sends a setup message at once, with the program's
//!   tag: the sender's total bytes, its number of partitions, and the
//!   first of its data tags. Init stays local: the message is 24 bytes and
//!   goes eagerly (queued when the ring is full). Sent at init rather than
//!   at the first start, it makes operations match in the order of their
//!   init calls, as §4.2.1 asks.
//! - `MPI_Precv_init` posts the receive of that setup message, so the
//!   receiving side matches in the order of its init calls too. Wildcards
//!   are refused, as MPICH refuses them (`MPI_ERR_RANK`, `MPI_ERR_TAG`).
//! - Each `MPI_Pready` sends its partition as one message whose tag is the
//!   partition's data tag, `i32::MIN + (base + j) mod 2^30`: negative, so
//!   never a program's tag, `MPI_ANY_TAG` or the cancelled one. Each sender
//!   takes its bases from one counter of the process, so two of its
//!   operations share no tag unless 2^30 partitions were set up between
//!   their inits (a request kept that long, beside new ones to the same
//!   peer on the same communicator, could then meet a new one's tags);
//!   one operation has at most 2^30 partitions.
//! - The partitions leave at `MPI_Pready`, through the ring or copied into
//!   the send queue, never by rendezvous
//!   (`Communicator::isend_part_bytes`): the receiver posts its receives
//!   only when a call of its own reaches the request, so a sender that
//!   waited for its match could wait for ever on a receiver blocked in
//!   another call. Large partitions so cost a copy more than a
//!   point-to-point message of their size.
//! - The receiver, once it knows the sender's partitioning, posts one
//!   receive per sender partition: straight into its buffer when its type
//!   lays the partitions out as one run and the totals agree, else into a
//!   staging buffer, unpacked per receive partition when `MPI_Parrived`
//!   finds it complete, and the rest at completion.
//! - Every epoch sends and receives each partition again with the same
//!   tags. The sender restarts only once its sends completed, the receiver
//!   posts only after its last epoch completed, and messages between one
//!   pair with one tag arrive in order (MPI's non-overtaking rule, which
//!   the engine keeps), so an epoch's partition never lands in another's.
//!
//! The two sides may partition differently (§4.2.2); their totals must
//! agree. A larger send completes the receive with `MPI_ERR_TRUNCATE`, a
//! smaller one with `MPI_ERR_COUNT` (MPICH: `MPI_ERR_OTHER` for both); the
//! sender completes either way, and nothing hangs.
//!
//! # Threads
//!
//! `MPI_Pready` and `MPI_Parrived` are made for threads other than the one
//! that completes the request (each thread readies its own partitions).
//! They find the operation through [`PARTS`], by handle, so they reach it
//! while `MPI_Wait` on another thread has the request out of the table;
//! its state is under one lock of its own, which a waiting thread does not
//! hold while it blocks (it takes the request it blocks on out of its
//! slot, [`Msg::Out`]), and a sender waiting for partitions not yet ready
//! sleeps on a condition variable that `MPI_Pready` signals.

use super::p2p::{
    backoff, give_request, isend_part, nbytes, poll_orphans, staging_buf, wait_reqs_together,
    CStatus, CommRef, PSpec, Ptr, Req, ReqState, Started,
};
use super::types::{committed, TypeObj};
use super::{array, comm_obj, count_c, guard, guard_on, h, lock, out, CommObj, PROC_NULL};
use crate::error::{Error, ErrorClass, Result};
use crate::p2p::Status;
use crate::sync::{AtomicU64, Ordering};
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The setup message: the sender's total bytes, its partitions, its
/// first data tag (three native `u64`s: both ends are on one node).
const SETUP_LEN: usize = 24;

/// Data tags cycle through this many values below zero.
const DATA_TAGS: u64 = 1 << 30;

/// The next sender's first data tag (a count of partitions set up).
static NEXT_TAG: AtomicU64 = AtomicU64::new(0);

/// The tag of partition `j` of the sender whose first data tag is `base`.
fn data_tag(base: u64, j: usize) -> i32 {
    i32::MIN + ((base.wrapping_add(j as u64)) % DATA_TAGS) as i32
}

/// The live partitioned requests, by handle ([`Part::register`]), for
/// `MPI_Pready` and `MPI_Parrived`.
static PARTS: Mutex<BTreeMap<usize, Arc<Part>>> = Mutex::new(BTreeMap::new());

/// A partitioned operation: its arguments, and the state of its epochs.
pub(crate) struct Part {
    comm: Arc<CommObj>,
    send: bool,
    buf: Ptr,
    partitions: usize,
    count: usize,
    ty: Arc<TypeObj>,
    /// The destination or source (`MPI_PROC_NULL` allowed).
    peer: c_int,
    tag: i32,
    /// Bytes of one partition, and of all.
    part_bytes: usize,
    total: usize,
    /// Where the partitions' bytes start when the type lays them out as
    /// one run (then sent from, and received into, the buffer itself).
    run: Option<isize>,
    /// The sender's first data tag.
    base: u64,
    st: Mutex<PState>,
    /// Signalled by `MPI_Pready`, for a sender's wait.
    readied: Condvar,
}

// SAFETY: `buf` is the program's buffer, which MPI lets the operation use
// from any thread of the process until the request is freed (MPI 4.1
// §4.2); everything else that changes is under `st`'s lock, and the
// requests in it are `Send`.
unsafe impl Send for Part {}
// SAFETY: as above: shared use goes through `st`'s lock.
unsafe impl Sync for Part {}

impl std::fmt::Debug for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Part")
            .field("send", &self.send)
            .field("partitions", &self.partitions)
            .field("peer", &self.peer)
            .field("tag", &self.tag)
            .finish_non_exhaustive()
    }
}

/// What the receiver learnt from the sender's setup message.
#[derive(Clone, Copy, Debug)]
struct Plan {
    total: usize,
    parts: usize,
    base: u64,
}

impl Plan {
    /// Bytes of one of the sender's partitions.
    fn part_bytes(&self) -> usize {
        self.total / self.parts.max(1)
    }
}

/// One partition's message in the current epoch (the sender's own
/// partitions; the receiver's are the sender's).
#[derive(Debug)]
enum Msg {
    /// Not readied yet (sender), or not posted.
    Idle,
    /// In flight.
    Flying(Req),
    /// Taken out by a waiting thread, which blocks on it without the lock.
    Out,
    Done,
}

/// The changing state of a [`Part`]. Field order matters: the requests
/// borrow `setup_buf` and `staging`, and fields drop in order.
#[derive(Debug)]
struct PState {
    /// Whether an epoch was started (`MPI_Parrived` on a request never
    /// started gives true).
    started: bool,
    /// The setup message: the sender's send until it completes, the
    /// receiver's receive until it matches.
    setup: Option<Req>,
    /// This epoch's messages (empty on the receiving side until posted).
    msgs: Vec<Msg>,
    /// Of `msgs`, those not `Done`.
    left: usize,
    /// The receiver: the sender's partitioning, once known.
    plan: Option<Plan>,
    /// The receiver: which receive partitions were unpacked from
    /// `staging` this epoch.
    unpacked: Vec<bool>,
    /// The first error of this epoch (or of the setup).
    err: Option<Error>,
    /// The setup's error, which fails every epoch.
    setup_err: Option<Error>,
    /// The outcome of this epoch, once complete (a test that completed
    /// it leaves it for the call that completes the request).
    done: Option<std::result::Result<CStatus, Error>>,
    setup_buf: Box<[u8; SETUP_LEN]>,
    /// The receiver's staging buffer (the sender's total bytes), when the
    /// partitions do not land in the program's buffer directly.
    staging: Vec<u8>,
}

impl Part {
    /// The partition `p` of the program's buffer: its first instance.
    fn at(&self, p: usize) -> *mut c_void {
        let step = (p * self.count) as isize * self.ty.extent();
        self.buf.get().cast::<u8>().wrapping_offset(step).cast()
    }

    /// Starts an epoch (`MPI_Start`).
    pub(crate) fn start(&self) -> Result<()> {
        let mut s = lock(&self.st);
        s.started = true;
        s.err = None;
        s.done = None;
        s.msgs.clear();
        if self.send {
            if self.peer == PROC_NULL {
                s.msgs.resize_with(self.partitions, || Msg::Done);
                s.left = 0;
            } else {
                s.msgs.resize_with(self.partitions, || Msg::Idle);
                s.left = self.partitions;
            }
        } else {
            s.unpacked = vec![false; self.partitions];
            if s.plan.is_some() || s.setup_err.is_some() {
                self.post(&mut s);
            }
        }
        Ok(())
    }

    /// Progress without blocking: the setup, the receives of an epoch
    /// once the setup is known, each message in flight.
    fn advance(&self, s: &mut PState) {
        if let Some(r) = s.setup.as_mut().and_then(Req::test) {
            s.setup = None;
            self.setup_done(s, r);
        }
        if !self.send && s.started && s.done.is_none() && s.msgs.is_empty() {
            self.post(s);
        }
        let mut finished = 0;
        for m in s.msgs.iter_mut() {
            if let Msg::Flying(r) = m {
                if let Some(res) = r.test() {
                    if let Err(e) = res {
                        s.err.get_or_insert(e);
                    }
                    *m = Msg::Done;
                    finished += 1;
                }
            }
        }
        debug_assert!(s.left >= finished, "more messages done than left");
        s.left -= finished;
    }

    /// The setup message's send completed, or its receive matched.
    fn setup_done(&self, s: &mut PState, r: std::result::Result<CStatus, Error>) {
        match r {
            Err(e) => {
                s.setup_err = Some(e.clone());
                s.err.get_or_insert(e);
            }
            Ok(_) if self.send => {}
            Ok(st) if st.bytes() != SETUP_LEN => {
                s.err.get_or_insert(Error::new(
                    ErrorClass::Intern,
                    format!(
                        "a partitioned setup message of {} bytes (expected {SETUP_LEN})",
                        st.bytes()
                    ),
                ));
            }
            Ok(_) => {
                let word = |i: usize| {
                    let mut w = [0u8; 8];
                    w.copy_from_slice(&s.setup_buf[i * 8..i * 8 + 8]);
                    u64::from_ne_bytes(w)
                };
                s.plan = Some(Plan {
                    total: word(0) as usize,
                    parts: word(1) as usize,
                    base: word(2),
                });
            }
        }
    }

    /// Whether the receives go straight to the program's buffer.
    fn direct(&self, plan: &Plan) -> Option<isize> {
        self.run.filter(|_| plan.total == self.total)
    }

    /// Posts this epoch's receives, one per sender partition, once the
    /// sender's setup is known.
    fn post(&self, s: &mut PState) {
        let Some(plan) = s.plan else {
            // The setup failed: the epoch (this one and every later one)
            // completes with its error.
            if let (Some(e), None) = (s.setup_err.clone(), &s.setup) {
                s.err.get_or_insert(e);
                s.left = 0;
                s.msgs.push(Msg::Done);
            }
            return;
        };
        let sp = plan.part_bytes();
        let direct = self.direct(&plan);
        if direct.is_none() && s.staging.len() != plan.total {
            match staging_buf(plan.total) {
                Ok(b) => s.staging = b,
                Err(e) => {
                    s.err.get_or_insert(e);
                    s.left = 0;
                    s.msgs.push(Msg::Done);
                    return;
                }
            }
        }
        let mut posts = Vec::with_capacity(plan.parts);
        for j in 0..plan.parts {
            let dst: *mut u8 = match direct {
                Some(off) => self
                    .buf
                    .get()
                    .cast::<u8>()
                    .wrapping_offset(off)
                    .wrapping_add(j * sp),
                None => s.staging.as_mut_ptr().wrapping_add(j * sp),
            };
            // The view is the program's buffer (valid until the request
            // is freed, MPI 4.1 §4.2) or `staging`, which `PState` drops
            // after the requests in `msgs`.
            match super::bytes_mut(dst.cast(), sp) {
                Ok(view) => posts.push((view, data_tag(plan.base, j))),
                Err(e) => {
                    s.err.get_or_insert(e);
                    s.msgs.push(Msg::Done);
                    s.left = 0;
                    return;
                }
            }
        }
        match self.comm.comm.irecv_part_bytes(self.peer, posts) {
            Ok(reqs) => {
                s.msgs.extend(reqs.into_iter().map(|r| {
                    Msg::Flying(Req::live(&self.comm, r, super::p2p::Fin::None, Vec::new()))
                }))
            }
            Err(e) => {
                s.err.get_or_insert(e);
                s.msgs.push(Msg::Done);
            }
        }
        s.left = s.msgs.iter().filter(|m| !matches!(m, Msg::Done)).count();
    }

    /// Whether the epoch is complete (every message done, the receiver's
    /// posted).
    fn complete(&self, s: &PState) -> bool {
        s.done.is_some() || (!s.msgs.is_empty() && s.left == 0)
    }

    /// The receive partitions' byte range `[lo, hi)` in the sender's
    /// total, and the sender partitions that cover it.
    fn covering(&self, plan: &Plan, p: usize) -> std::ops::Range<usize> {
        let sp = plan.part_bytes();
        let lo = (p * self.part_bytes).min(plan.total);
        let hi = ((p + 1) * self.part_bytes).min(plan.total);
        if sp == 0 || lo == hi {
            return 0..0;
        }
        lo / sp..hi.div_ceil(sp)
    }

    /// Unpacks receive partition `p` from `staging` (once per epoch).
    fn unpack(&self, s: &mut PState, p: usize) -> Result<()> {
        let Some(plan) = s.plan else { return Ok(()) };
        if self.direct(&plan).is_some() || s.unpacked[p] {
            return Ok(());
        }
        s.unpacked[p] = true;
        let lo = (p * self.part_bytes).min(plan.total);
        let hi = ((p + 1) * self.part_bytes).min(plan.total);
        if lo < hi {
            // The receives still in flight write other bytes of
            // `staging`: no reference to the whole buffer is made.
            let at = s.staging.as_ptr().wrapping_add(lo);
            // SAFETY: `[lo, hi)` lies in `staging` (both bounded by the
            // plan's total, its length, allocated when not direct), and
            // the receives that write those bytes have completed
            // (`arrived`, or the epoch complete).
            let bytes = unsafe { std::slice::from_raw_parts(at, hi - lo) };
            self.ty.unpack(bytes, self.at(p), self.count)?;
        }
        Ok(())
    }

    /// Ends a complete epoch: the rest unpacked, the outcome kept.
    fn finish(&self, s: &mut PState) -> std::result::Result<CStatus, Error> {
        if let Some(r) = &s.done {
            return r.clone();
        }
        let r = self.outcome(s);
        s.done = Some(r.clone());
        r
    }

    fn outcome(&self, s: &mut PState) -> std::result::Result<CStatus, Error> {
        if let Some(e) = s.err.clone() {
            return Err(e);
        }
        if self.send {
            return Ok(CStatus::empty());
        }
        if self.peer == PROC_NULL {
            return Ok(CStatus::proc_null());
        }
        let plan = s.plan.expect("a receive completes once its setup is known");
        for p in 0..self.partitions {
            self.unpack(s, p)?;
        }
        let status = Status {
            source: self.peer,
            tag: self.tag,
            bytes: plan.total.min(self.total),
        };
        let mismatch = |class, what| {
            Err(Error::new(
                class,
                format!(
                    "the partitioned send carried {} bytes ({} partitions), {what} this \
                     receive's {} ({} partitions of {} bytes); the totals must agree",
                    plan.total, plan.parts, self.total, self.partitions, self.part_bytes
                ),
            )
            .with_status(crate::error::ErrorStatus {
                source: status.source,
                tag: status.tag,
                bytes: plan.total,
            }))
        };
        match plan.total.cmp(&self.total) {
            std::cmp::Ordering::Greater => mismatch(ErrorClass::Truncate, "more than"),
            std::cmp::Ordering::Less => mismatch(ErrorClass::Count, "less than"),
            std::cmp::Ordering::Equal => Ok(CStatus::from_rust(&status)),
        }
    }

    /// Tests the epoch (`MPI_Test` and the rest): its outcome once
    /// complete.
    pub(crate) fn test(&self) -> Option<std::result::Result<CStatus, Error>> {
        let mut s = lock(&self.st);
        self.advance(&mut s);
        self.complete(&s).then(|| self.finish(&mut s))
    }

    /// Waits for the epoch: blocks on one message at a time without the
    /// lock; a sender whose partitions are not all ready sleeps until
    /// `MPI_Pready` signals (or a millisecond passes, to progress).
    pub(crate) fn wait(&self) -> std::result::Result<CStatus, Error> {
        let mut round = 0;
        let mut s = lock(&self.st);
        loop {
            self.advance(&mut s);
            if self.complete(&s) {
                return self.finish(&mut s);
            }
            if !self.send {
                if let Some(mut r) = s.setup.take() {
                    drop(s);
                    let res = r.wait();
                    drop(r);
                    s = lock(&self.st);
                    self.setup_done(&mut s, res);
                    continue;
                }
            }
            // Every partition readied (or posted): wait for all in flight
            // at once, one progress loop for all of them.
            if s.msgs.iter().all(|m| !matches!(m, Msg::Idle)) {
                let mut taken = Vec::new();
                let mut reqs = Vec::new();
                for (j, m) in s.msgs.iter_mut().enumerate() {
                    if matches!(m, Msg::Flying(_)) {
                        let Msg::Flying(r) = std::mem::replace(m, Msg::Out) else {
                            unreachable!("matched flying")
                        };
                        taken.push(j);
                        reqs.push(r);
                    }
                }
                if !taken.is_empty() {
                    drop(s);
                    let results = wait_reqs_together(reqs);
                    s = lock(&self.st);
                    for (j, res) in taken.into_iter().zip(results) {
                        if let Err(e) = res {
                            s.err.get_or_insert(e);
                        }
                        s.msgs[j] = Msg::Done;
                        debug_assert!(s.left > 0, "a message done that was not left");
                        s.left -= 1;
                    }
                    continue;
                }
            }
            if let Some(j) = s.msgs.iter().position(|m| matches!(m, Msg::Flying(_))) {
                let Msg::Flying(mut r) = std::mem::replace(&mut s.msgs[j], Msg::Out) else {
                    unreachable!("found flying above")
                };
                drop(s);
                let res = r.wait();
                drop(r);
                s = lock(&self.st);
                if let Err(e) = res {
                    s.err.get_or_insert(e);
                }
                s.msgs[j] = Msg::Done;
                debug_assert!(s.left > 0, "a message done that was not left");
                s.left -= 1;
                continue;
            }
            // Nothing to block on: partitions another thread has still to
            // ready. Spin and yield a while, then sleep until `MPI_Pready`
            // signals (checked and slept on under one hold of the lock, so
            // no signal is missed), a millisecond at most, to progress
            // what the program freed meanwhile.
            drop(s);
            poll_orphans();
            if round < 256 {
                backoff(&mut round);
                s = lock(&self.st);
            } else {
                s = lock(&self.st);
                self.advance(&mut s);
                if self.complete(&s) {
                    return self.finish(&mut s);
                }
                s = self
                    .readied
                    .wait_timeout(s, Duration::from_millis(1))
                    .map(|(g, _)| g)
                    .unwrap_or_else(|p| p.into_inner().0);
            }
        }
    }

    /// `MPI_Pready` of partitions `parts`, under one lock.
    fn ready(&self, parts: impl Iterator<Item = Result<usize>>) -> Result<()> {
        if !self.send {
            return Err(Error::new(
                ErrorClass::Request,
                "MPI_Pready on a partitioned receive (only a send's partitions are readied)",
            ));
        }
        let mut s = lock(&self.st);
        if !s.started || s.done.is_some() {
            return Err(Error::new(
                ErrorClass::Request,
                "MPI_Pready on an inactive partitioned request (MPI_Start it first)",
            ));
        }
        let mut r = Ok(());
        for p in parts {
            r = p.and_then(|p| self.ready_one(&mut s, p));
            if r.is_err() {
                break;
            }
        }
        drop(s);
        self.readied.notify_all();
        r
    }

    /// `Arg` unless `p` is a partition of this request.
    fn check_partition(&self, p: usize) -> Result<()> {
        if p < self.partitions {
            return Ok(());
        }
        Err(Error::new(
            ErrorClass::Arg,
            format!(
                "partition {p} is out of range: the request has {} (0 to {})",
                self.partitions,
                self.partitions - 1
            ),
        ))
    }

    fn ready_one(&self, s: &mut PState, p: usize) -> Result<()> {
        self.check_partition(p)?;
        if self.peer == PROC_NULL {
            return Ok(());
        }
        if !matches!(s.msgs[p], Msg::Idle) {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("partition {p} was marked ready already since the last MPI_Start"),
            ));
        }
        let (m, r) = match self.send_partition(p) {
            Ok(Started::Sent) => (Msg::Done, Ok(())),
            Ok(Started::Req(r)) => (Msg::Flying(r), Ok(())),
            Err(e) => {
                s.err.get_or_insert(e.clone());
                (Msg::Done, Err(e))
            }
        };
        if matches!(m, Msg::Done) {
            debug_assert!(s.left > 0, "a partition sent that was not left");
            s.left -= 1;
        }
        s.msgs[p] = m;
        r
    }

    /// Sends partition `p`: from the buffer, or packed.
    fn send_partition(&self, p: usize) -> Result<Started> {
        let tag = data_tag(self.base, p);
        match self.run {
            Some(off) => {
                let at = self
                    .buf
                    .get()
                    .cast::<u8>()
                    .wrapping_offset(off)
                    .wrapping_add(p * self.part_bytes);
                let data = super::bytes(at.cast(), self.part_bytes)?;
                isend_part(&self.comm, data, self.peer, tag, Vec::new())
            }
            None => {
                let packed = self.ty.pack(self.at(p), self.count)?;
                // SAFETY: lifetime erasure of a borrow of `packed`'s heap
                // buffer, which moves into the same `Req` as the request
                // and is dropped after it.
                let data = unsafe { std::slice::from_raw_parts(packed.as_ptr(), packed.len()) };
                isend_part(&self.comm, data, self.peer, tag, packed)
            }
        }
    }

    /// `MPI_Parrived`: whether receive partition `p` has arrived (then
    /// unpacked, if staged).
    fn arrived(&self, p: usize) -> Result<bool> {
        if self.send {
            return Err(Error::new(
                ErrorClass::Request,
                "MPI_Parrived on a partitioned send (only a receive's partitions arrive)",
            ));
        }
        self.check_partition(p)?;
        let mut s = lock(&self.st);
        if !s.started || self.peer == PROC_NULL {
            return Ok(true);
        }
        self.advance(&mut s);
        // A failed epoch has no partition to offer: its error instead.
        if let Some(e) = s.err.clone().or_else(|| s.done.clone()?.err()) {
            return Err(e);
        }
        if s.done.is_some() {
            return Ok(true);
        }
        let Some(plan) = s.plan else {
            return Ok(false);
        };
        let span = self.covering(&plan, p);
        match s.msgs.get(span) {
            Some(ms) if !s.msgs.is_empty() && ms.iter().all(|m| matches!(m, Msg::Done)) => {}
            _ => return Ok(false),
        }
        self.unpack(&mut s, p)?;
        Ok(true)
    }

    /// Keeps `self` for `MPI_Pready` / `MPI_Parrived` under `handle`.
    fn register(self: &Arc<Part>, handle: usize) {
        lock(&PARTS).insert(handle, Arc::clone(self));
    }
}

/// Forgets partitioned request `part` under `handle` (`MPI_Request_free`),
/// unless the handle names another already (freed, then given to a new
/// request by another thread).
pub(crate) fn forget(handle: usize, part: &Arc<Part>) {
    let mut parts = lock(&PARTS);
    if parts.get(&handle).is_some_and(|p| Arc::ptr_eq(p, part)) {
        parts.remove(&handle);
    }
}

/// The partitioned request behind `request`.
fn find(request: *mut c_void) -> Result<Arc<Part>> {
    let hd = h(request);
    lock(&PARTS).get(&hd).cloned().ok_or_else(|| {
        Error::new(
            ErrorClass::Request,
            format!("{hd:#x} is not a partitioned request (MPI_Psend_init / MPI_Precv_init)"),
        )
    })
}

/// The common part of the two inits: checks, and the request made.
#[allow(clippy::too_many_arguments)]
fn init(
    send: bool,
    buf: *mut c_void,
    partitions: c_int,
    count: i64,
    t: *mut c_void,
    peer: c_int,
    tag: c_int,
    comm: *mut c_void,
    info: *mut c_void,
    request: *mut *mut c_void,
) -> Result<()> {
    if request.is_null() {
        // Checked before the setup message leaves: a setup sent for a
        // request never made would match the peer's next init.
        return Err(super::arg("request"));
    }
    let obj = comm_obj(h(comm))?.arc();
    let count = count_c(count, "count")?;
    let ty = committed(h(t))?.arc();
    super::env::info_pairs(h(info))?;
    if partitions < 1 || partitions as u64 > DATA_TAGS {
        return Err(Error::new(
            ErrorClass::Arg,
            format!(
                "partitions is {partitions}: a partitioned operation has at least one, and \
                 at most 2^30 here (each has a tag of its own)"
            ),
        ));
    }
    let partitions = partitions as usize;
    let side = if send { "send" } else { "receive" };
    if tag == super::ANY_TAG {
        return Err(Error::new(
            ErrorClass::Tag,
            format!("a partitioned {side} takes no MPI_ANY_TAG (MPI 4.1 §4.2.2)"),
        ));
    }
    let tag = super::p2p::stag(tag)?;
    let size = if obj.comm.is_inter() {
        obj.comm.remote_size()?
    } else {
        obj.comm.size()
    };
    if peer != PROC_NULL && !(0..size).contains(&peer) {
        let what = if peer == super::ANY_SOURCE {
            format!(" (a partitioned {side} takes no MPI_ANY_SOURCE, MPI 4.1 §4.2.2)")
        } else {
            String::new()
        };
        return Err(Error::new(
            ErrorClass::Rank,
            format!("rank {peer} is not in 0..{size}{what}"),
        ));
    }
    let part_bytes = nbytes(count, &ty)?;
    let elems = partitions.checked_mul(count);
    let total = elems.and_then(|n| nbytes(n, &ty).ok()).ok_or_else(|| {
        Error::new(
            ErrorClass::Count,
            format!("{partitions} partitions of {count} elements overflow the address space"),
        )
    })?;
    let elems = elems.unwrap_or(0);
    let run = ty.contiguous(elems);
    if total > 0 && (buf.is_null() || buf.cast_const() == super::IN_PLACE) {
        return Err(Error::new(
            ErrorClass::Buffer,
            format!(
                "the buffer of {total} bytes is {}: partitioned communication takes no \
                 MPI_BOTTOM (absolute displacements, MPI 4.1 §4.2.2) nor MPI_IN_PLACE",
                if buf.is_null() {
                    "a null pointer"
                } else {
                    "MPI_IN_PLACE"
                }
            ),
        ));
    }
    let base = if send {
        // Relaxed: a counter; only its uniqueness matters.
        NEXT_TAG.fetch_add(partitions as u64, Ordering::Relaxed) % DATA_TAGS
    } else {
        0
    };
    let part = Arc::new(Part {
        comm: Arc::clone(&obj),
        send,
        buf: Ptr(buf),
        partitions,
        count,
        ty: Arc::clone(&ty),
        peer,
        tag,
        part_bytes,
        total,
        run,
        base,
        st: Mutex::new(PState {
            started: false,
            setup: None,
            msgs: Vec::new(),
            left: 0,
            plan: (peer == PROC_NULL).then_some(Plan {
                total,
                parts: partitions,
                base: 0,
            }),
            unpacked: Vec::new(),
            err: None,
            setup_err: None,
            done: None,
            setup_buf: Box::new([0; SETUP_LEN]),
            staging: Vec::new(),
        }),
        readied: Condvar::new(),
    });
    if peer != PROC_NULL {
        let mut s = lock(&part.st);
        if send {
            let mut setup = Vec::with_capacity(SETUP_LEN);
            for w in [total as u64, partitions as u64, base] {
                setup.extend_from_slice(&w.to_ne_bytes());
            }
            // SAFETY: lifetime erasure of a borrow of `setup`'s heap
            // buffer, which moves into the same `Req` as the request and
            // is dropped after it.
            let data = unsafe { std::slice::from_raw_parts(setup.as_ptr(), setup.len()) };
            if let Started::Req(r) = isend_part(&obj, data, peer, tag, setup)? {
                s.setup = Some(r);
            }
        } else {
            // SAFETY: lifetime erasure of a borrow of `setup_buf`, a heap
            // box that `PState` drops after `setup` (field order), and
            // that nothing else touches until the receive completes.
            let view =
                unsafe { std::slice::from_raw_parts_mut(s.setup_buf.as_mut_ptr(), SETUP_LEN) };
            let r = obj
                .comm
                .irecv_part_bytes(peer, vec![(view, tag)])?
                .pop()
                .expect("one receive posted");
            s.setup = Some(Req::live(&obj, r, super::p2p::Fin::None, Vec::new()));
        }
    }
    let spec = PSpec::partitioned(Arc::clone(&part), ty);
    give_request(
        Req {
            state: ReqState::Persistent { spec, active: None },
            comm: CommRef::of(&obj),
        },
        request,
    )?;
    part.register(h(super::read(request, "request")?));
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Psend_init(
    buf: *const c_void,
    partitions: c_int,
    count: i64,
    t: *mut c_void,
    dest: c_int,
    tag: c_int,
    comm: *mut c_void,
    info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard("MPI_Psend_init", h(comm), || {
        init(
            true,
            buf.cast_mut(),
            partitions,
            count,
            t,
            dest,
            tag,
            comm,
            info,
            request,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Precv_init(
    buf: *mut c_void,
    partitions: c_int,
    count: i64,
    t: *mut c_void,
    source: c_int,
    tag: c_int,
    comm: *mut c_void,
    info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard("MPI_Precv_init", h(comm), || {
        init(
            false, buf, partitions, count, t, source, tag, comm, info, request,
        )
    })
}

/// Runs `f` on the partitioned request `request`, its errors raised on
/// its communicator.
fn on_part(call: &str, request: *mut c_void, f: impl FnOnce(&Part) -> Result<()>) -> c_int {
    guard_on(call, || {
        let p = find(request).map_err(|e| (None, e))?;
        f(&p).map_err(|e| (Some(Arc::clone(&p.comm)), e))
    })
}

/// A partition number argument.
fn partition(p: c_int) -> Result<usize> {
    usize::try_from(p)
        .map_err(|_| Error::new(ErrorClass::Arg, format!("partition {p} is negative")))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pready(p: c_int, request: *mut c_void) -> c_int {
    on_part("MPI_Pready", request, |part| {
        part.ready(std::iter::once(partition(p)))
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pready_range(lo: c_int, hi: c_int, request: *mut c_void) -> c_int {
    on_part("MPI_Pready_range", request, |part| {
        if lo > hi {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("partition_low {lo} is above partition_high {hi}"),
            ));
        }
        part.ready((lo..=hi).map(partition))
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pready_list(
    n: c_int,
    partitions: *const c_int,
    request: *mut c_void,
) -> c_int {
    on_part("MPI_Pready_list", request, |part| {
        let n = super::count(n, "length")?;
        let list = array(partitions, n, "array_of_partitions")?;
        part.ready(list.iter().map(|&p| partition(p)))
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Parrived(request: *mut c_void, p: c_int, flag: *mut c_int) -> c_int {
    guard_on("MPI_Parrived", || {
        let hd = h(request);
        // A null or inactive request: true (MPI 4.1 §4.3).
        if hd == super::REQUEST_NULL {
            return out(flag, 1, "flag").map_err(|e| (None, e));
        }
        let part = find(request).map_err(|e| (None, e))?;
        let r = partition(p).and_then(|p| part.arrived(p));
        let r = r.and_then(|a| out(flag, c_int::from(a), "flag"));
        r.map_err(|e| (Some(Arc::clone(&part.comm)), e))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_tags_are_negative_and_never_a_wildcard_or_cancelled() {
        for base in [0, 1, DATA_TAGS - 3, DATA_TAGS - 1] {
            for j in 0..8 {
                let t = data_tag(base, j);
                assert!(t < 0 && t != -1 && t != crate::p2p::CANCELLED_TAG, "{t}");
                assert!(t < i32::MIN + DATA_TAGS as i32, "{t}");
            }
        }
        // The partitions of one sender have distinct tags, across the wrap.
        let tags: std::collections::BTreeSet<i32> =
            (0..16).map(|j| data_tag(DATA_TAGS - 8, j)).collect();
        assert_eq!(tags.len(), 16);
    }
}
