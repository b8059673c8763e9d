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
//!   operation's data tag. Init stays local: the message is 24 bytes and
//!   goes eagerly (queued when the ring is full). Sent at init rather than
//!   at the first start, it makes operations match in the order of their
//!   init calls, as §4.2.1 asks.
//! - `MPI_Precv_init` posts the receive of that setup message, so the
//!   receiving side matches in the order of its init calls too. Wildcards
//!   are refused, as MPICH refuses them (`MPI_ERR_RANK`, `MPI_ERR_TAG`).
//! - Each `MPI_Pready` call sends the partitions it readies, a run of
//!   consecutive ones as one message: a header (the run's first partition
//!   and its length) and the run's bytes, packed. All the data messages
//!   of an operation carry its data tag, `i32::MIN + n mod 2^30` for the
//!   sender's `n`-th operation: negative, so never a program's tag,
//!   `MPI_ANY_TAG` or the cancelled one.
//! - The receiver keeps one receive posted for the data tag while its
//!   epoch misses partitions (into a landing buffer as large as the whole
//!   message), and places each run where it goes once it arrives: in the
//!   program's buffer when the type lays the partitions out as one run
//!   and the totals agree, else in a staging image unpacked per receive
//!   partition (when `MPI_Parrived` finds it complete, the rest at
//!   completion). A run of every partition (`MPI_Pready_range` of them
//!   all, the usual case) so costs one message, as MPICH's one message
//!   once every partition is ready does, while a partition readied alone
//!   still leaves at once.
//! - Epochs never mix: the receiver posts only while its current epoch
//!   misses partitions, and messages between one pair with one tag arrive
//!   in order (MPI's non-overtaking rule, which the engine keeps), so a
//!   later epoch's messages come after every one of the current epoch.
//!   Nor do operations: one sender's operations share no data tag unless
//!   2^30 operations were set up between their inits.
//! - The partitions leave at `MPI_Pready`, through the ring or copied into
//!   the send queue, never by rendezvous
//!   (`Communicator::isend_part_bytes`): the receiver posts its receive
//!   only when a call of its own reaches the request, so a sender that
//!   waited for its match could wait for ever on a receiver blocked in
//!   another call. Large partitions so cost a copy more than a
//!   point-to-point message of their size.
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
//! hold while it blocks (it takes the request it blocks on out of the
//! state: meanwhile `MPI_Parrived` sees no new partition), and a sender
//! waiting for partitions not yet ready sleeps on a condition variable
//! that `MPI_Pready` signals.

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

/// The setup message: the sender's total bytes, its partitions, its data
/// tag (three native `u64`s: both ends are on one node).
const SETUP_LEN: usize = 24;

/// A data message's header: its run's first partition and length (two
/// native `u64`s), the length's top bit [`APART`].
const HEAD: usize = 16;

/// In a header's length: the run's bytes follow as a message of their
/// own, received straight where they go (a contiguous run of at least
/// [`APART_FROM`] bytes, sent from the program's buffer: no copy into a
/// message with its header at either end).
const APART: u64 = 1 << 63;
const APART_FROM: usize = 4096;

/// Data tags cycle through this many values below zero.
const DATA_TAGS: u64 = 1 << 30;

/// How many operations this process has set up to send.
static NEXT_TAG: AtomicU64 = AtomicU64::new(0);

/// The data tag of the sender's `n`-th operation.
fn data_tag(n: u64) -> i32 {
    i32::MIN + (n % DATA_TAGS) as i32
}

/// The native `u64` at word `i` of a setup message or a header.
fn word_at(b: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i * 8..i * 8 + 8]);
    u64::from_ne_bytes(w)
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
    /// The sender's data tag.
    data_tag: i32,
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
    tag: i32,
}

impl Plan {
    /// Bytes of one of the sender's partitions.
    fn part_bytes(&self) -> usize {
        self.total / self.parts.max(1)
    }
}

/// The request a side has in flight: in the state, or taken out by a
/// waiting thread, which blocks on it without the lock.
#[derive(Debug)]
enum Flight {
    In(Req),
    Out,
}

/// The changing state of a [`Part`]. Field order matters: the requests
/// borrow `setup_buf` and `landing`, and fields drop in order.
#[derive(Debug)]
struct PState {
    /// Whether an epoch was started (`MPI_Parrived` on a request never
    /// started gives true).
    started: bool,
    /// The setup message: the sender's send until it completes, the
    /// receiver's receive until it matches.
    setup: Option<Req>,
    /// The sender: its data messages in flight this epoch.
    sends: Vec<Flight>,
    /// The receiver: its one data receive in flight.
    recv: Option<Flight>,
    /// The receiver: the run (first partition, length) whose bytes the
    /// receive in flight takes, after a header that said they come apart.
    apart: Option<(usize, usize)>,
    /// Per partition of the sender: readied (sender) or arrived
    /// (receiver) this epoch.
    have: Vec<bool>,
    /// Of `have`, how many are set.
    got: usize,
    /// The receiver: the sender's partitioning, once known.
    plan: Option<Plan>,
    /// The receiver: which receive partitions were unpacked from
    /// `staging` this epoch.
    unpacked: Vec<bool>,
    /// The first error of this epoch (or of the setup).
    err: Option<Error>,
    /// An error that left the two sides' message streams out of step (a
    /// failed setup, a receive or send that failed part way): it fails
    /// every later epoch, which could otherwise take the rest of an old
    /// one's messages for its own.
    broken: Option<Error>,
    /// The outcome of this epoch, once complete (a test that completed
    /// it leaves it for the call that completes the request).
    done: Option<std::result::Result<CStatus, Error>>,
    setup_buf: Box<[u8; SETUP_LEN]>,
    /// The receiver: where its data receive lands (a header and the
    /// sender's whole total at most).
    landing: Vec<u8>,
    /// The receiver's staging image (the sender's total bytes), when the
    /// partitions do not go to the program's buffer directly.
    staging: Vec<u8>,
}

impl Part {
    /// The partition `p` of the program's buffer: its first instance.
    fn at(&self, p: usize) -> *mut c_void {
        let step = (p * self.count) as isize * self.ty.extent();
        self.buf.get().cast::<u8>().wrapping_offset(step).cast()
    }

    /// The partitions the sender sends this epoch (its own; the
    /// receiver's plan says the sender's).
    fn sender_parts(&self, s: &PState) -> usize {
        if self.send {
            self.partitions
        } else {
            s.plan.map_or(0, |p| p.parts)
        }
    }

    /// Starts an epoch (`MPI_Start`).
    pub(crate) fn start(&self) -> Result<()> {
        let mut s = lock(&self.st);
        s.started = true;
        s.err = None;
        s.done = None;
        s.sends.clear();
        s.apart = None;
        s.got = 0;
        let n = self.sender_parts(&s);
        s.have.clear();
        s.have.resize(n, false);
        if !self.send && self.peer == PROC_NULL {
            s.have.fill(true);
            s.got = n;
        }
        if !self.send {
            s.unpacked.clear();
            s.unpacked.resize(self.partitions, false);
        }
        if let Some(e) = s.broken.clone() {
            s.err.get_or_insert(e);
        }
        Ok(())
    }

    /// Progress without blocking: the setup, the sends in flight, the
    /// receiver's data receive (each run that arrived placed, the next
    /// receive posted while partitions are missing).
    fn advance(&self, s: &mut PState) {
        if let Some(r) = s.setup.as_mut().and_then(Req::test) {
            s.setup = None;
            self.setup_done(s, r);
        }
        if self.send {
            let mut i = 0;
            while i < s.sends.len() {
                let res = match &mut s.sends[i] {
                    Flight::In(r) => r.test(),
                    Flight::Out => None,
                };
                match res {
                    Some(res) => {
                        if let Err(e) = res {
                            s.err.get_or_insert(e);
                        }
                        s.sends.swap_remove(i);
                    }
                    None => i += 1,
                }
            }
            return;
        }
        loop {
            match &mut s.recv {
                Some(Flight::Out) => return,
                Some(Flight::In(r)) => match r.test() {
                    Some(res) => {
                        s.recv = None;
                        self.received(s, res);
                    }
                    None => return,
                },
                None => {
                    if !self.post(s) {
                        return;
                    }
                }
            }
        }
    }

    /// The setup message's send completed, or its receive matched.
    fn setup_done(&self, s: &mut PState, r: std::result::Result<CStatus, Error>) {
        match r {
            Err(e) => {
                s.broken = Some(e.clone());
                s.err.get_or_insert(e);
            }
            Ok(_) if self.send => {}
            Ok(st) if st.bytes() != SETUP_LEN => {
                let e = Error::new(
                    ErrorClass::Intern,
                    format!(
                        "a partitioned setup message of {} bytes (expected {SETUP_LEN})",
                        st.bytes()
                    ),
                );
                s.broken = Some(e.clone());
                s.err.get_or_insert(e);
            }
            Ok(_) => {
                let word = |i| word_at(&s.setup_buf[..], i);
                let plan = Plan {
                    total: word(0) as usize,
                    parts: word(1) as usize,
                    tag: word(2) as u32 as i32,
                };
                s.plan = Some(plan);
                if s.started && s.done.is_none() {
                    s.have.clear();
                    s.have.resize(plan.parts, false);
                    s.got = 0;
                }
            }
        }
    }

    /// Whether the runs go straight to the program's buffer.
    fn direct(&self, plan: &Plan) -> Option<isize> {
        self.run.filter(|_| plan.total == self.total)
    }

    /// Posts the receiver's next data receive, if its epoch misses
    /// partitions: the bytes of a run that come apart, straight where
    /// they go, else the next message into the landing buffer; whether it
    /// did.
    fn post(&self, s: &mut PState) -> bool {
        let Some(plan) = s.plan else { return false };
        if !s.started || s.done.is_some() || s.err.is_some() || s.got >= plan.parts {
            return false;
        }
        if let Some((first, len)) = s.apart {
            let sp = plan.part_bytes();
            let dst = match self.place(s, &plan, first) {
                Ok(d) => d,
                Err(e) => {
                    s.err.get_or_insert(e);
                    return false;
                }
            };
            if len * sp == 0 {
                // Nothing comes apart for an empty run (never sent so):
                // it has arrived.
                s.apart = None;
                s.have[first..first + len].fill(true);
                s.got += len;
                return true;
            }
            // SAFETY: lifetime erasure of the run's place: in the program's
            // buffer (valid until the request is freed, MPI 4.1 §4.2; not
            // null, as `init` checked for a non-empty total) or in
            // `staging`, which `PState` drops after `recv` and which is not
            // reallocated while a receive is posted (one at a time, its
            // plan fixed); `landed` checked that the run lies within the
            // total, and no other receive writes these bytes.
            let view = unsafe { std::slice::from_raw_parts_mut(dst, len * sp) };
            return self.post_into(s, view, plan.tag);
        }
        let need = HEAD + plan.total;
        if s.landing.len() != need {
            match staging_buf(need) {
                Ok(b) => s.landing = b,
                Err(e) => {
                    s.err.get_or_insert(e);
                    return false;
                }
            }
        }
        // SAFETY: lifetime erasure of a borrow of `landing`, a heap buffer
        // that `PState` drops after `recv` (field order) and that nothing
        // touches until this receive completes (the next is posted only
        // after, `landed` reads it before).
        let view = unsafe { std::slice::from_raw_parts_mut(s.landing.as_mut_ptr(), need) };
        self.post_into(s, view, plan.tag)
    }

    /// Where sender partition `first` goes: the program's buffer, or
    /// `staging` (allocated here).
    fn place(&self, s: &mut PState, plan: &Plan, first: usize) -> Result<*mut u8> {
        let at = first * plan.part_bytes();
        if let Some(off) = self.direct(plan) {
            return Ok(self
                .buf
                .get()
                .cast::<u8>()
                .wrapping_offset(off)
                .wrapping_add(at));
        }
        if s.staging.len() != plan.total {
            s.staging = staging_buf(plan.total)?;
        }
        Ok(s.staging.as_mut_ptr().wrapping_add(at))
    }

    /// Posts the data receive into `view`.
    fn post_into(&self, s: &mut PState, view: &mut [u8], tag: i32) -> bool {
        match self.comm.comm.irecv_part_bytes(view, self.peer, tag) {
            Ok(r) => {
                s.recv = Some(Flight::In(Req::live(
                    &self.comm,
                    r,
                    super::p2p::Fin::None,
                    Vec::new(),
                )));
                true
            }
            Err(e) => {
                s.err.get_or_insert(e);
                false
            }
        }
    }

    /// A data receive completed: the bytes of a run that came apart, or
    /// a message in the landing buffer.
    fn received(&self, s: &mut PState, res: std::result::Result<CStatus, Error>) {
        let Some((first, len)) = s.apart.take() else {
            return self.landed(s, res);
        };
        match res {
            Ok(st) if st.bytes() == len * s.plan.map_or(0, |p| p.part_bytes()) => {
                s.have[first..first + len].fill(true);
                s.got += len;
            }
            Ok(st) => {
                s.err.get_or_insert(Error::new(
                    ErrorClass::Intern,
                    format!(
                        "a partitioned run of {len} partitions came with {} bytes",
                        st.bytes()
                    ),
                ));
            }
            Err(e) => {
                s.err.get_or_insert(e);
            }
        }
    }

    /// A message in the landing buffer: a header, and its run's bytes
    /// (placed, its partitions arrived) or word that they come apart.
    fn landed(&self, s: &mut PState, res: std::result::Result<CStatus, Error>) {
        let st = match res {
            Ok(st) => st,
            Err(e) => {
                s.err.get_or_insert(e);
                return;
            }
        };
        let plan = s
            .plan
            .expect("a data receive is posted once the setup is known");
        let sp = plan.part_bytes();
        let n = st.bytes();
        let word = |i| word_at(&s.landing, i);
        let (first, word1) = if n >= HEAD {
            (word(0) as usize, word(1))
        } else {
            (0, 0)
        };
        let apart = word1 & APART != 0;
        let len = (word1 & !APART) as usize;
        let carried = if apart { Some(0) } else { len.checked_mul(sp) };
        let ok = n >= HEAD
            && len > 0
            && first.checked_add(len).is_some_and(|end| end <= plan.parts)
            && carried == Some(n - HEAD)
            && s.have[first..first + len].iter().all(|&h| !h);
        if !ok {
            s.err.get_or_insert(Error::new(
                ErrorClass::Intern,
                format!(
                    "a partitioned data message of {n} bytes that fits no missing run of \
                     partitions ({} of {sp} bytes)",
                    plan.parts
                ),
            ));
            return;
        }
        if apart {
            s.apart = Some((first, len));
            return;
        }
        let dst = match self.place(s, &plan, first) {
            Ok(d) => d,
            Err(e) => {
                s.err.get_or_insert(e);
                return;
            }
        };
        let bytes = &s.landing[HEAD..n];
        if bytes.is_empty() {
            s.have[first..first + len].fill(true);
            s.got += len;
            return;
        }
        // SAFETY: `dst` is the place of partitions `first..first + len`:
        // in the program's buffer, which holds the whole total there (a
        // contiguous type, equal totals), valid until the request is
        // freed (MPI 4.1 §4.2), or in `staging`, of the whole total; the
        // run lies within the total (checked above); `landing` is another
        // buffer.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) };
        s.have[first..first + len].fill(true);
        s.got += len;
    }

    /// Whether the epoch is complete: every partition readied and sent,
    /// or arrived (or it failed).
    fn complete(&self, s: &PState) -> bool {
        if s.done.is_some() {
            return true;
        }
        if !s.started {
            return false;
        }
        if self.send {
            return s.got == self.partitions && s.sends.is_empty();
        }
        let in_flight = matches!(s.recv, Some(Flight::Out));
        if s.err.is_some() {
            return !in_flight && s.setup.is_none();
        }
        s.plan.is_some_and(|p| s.got == p.parts) || self.peer == PROC_NULL
    }

    /// Receive partition `p`'s bytes `[lo, hi)` in the sender's message
    /// (cut at its total).
    fn bytes_of(&self, plan: &Plan, p: usize) -> (usize, usize) {
        let lo = (p * self.part_bytes).min(plan.total);
        (lo, (lo + self.part_bytes).min(plan.total))
    }

    /// The sender partitions that cover receive partition `p`.
    fn covering(&self, plan: &Plan, p: usize) -> std::ops::Range<usize> {
        let sp = plan.part_bytes();
        let (lo, hi) = self.bytes_of(plan, p);
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
        let (lo, hi) = self.bytes_of(&plan, p);
        if lo < hi && s.staging.len() == plan.total {
            // A receive still in flight may write other bytes of
            // `staging` (a run that came apart): no reference to the whole
            // buffer is made.
            let at = s.staging.as_ptr().wrapping_add(lo);
            // SAFETY: `[lo, hi)` lies in `staging` (its length is the
            // plan's total, which bounds both), and every run that writes
            // those bytes has arrived (`arrived`, or the epoch complete).
            let bytes = unsafe { std::slice::from_raw_parts(at, hi - lo) };
            self.ty.unpack(bytes, self.at(p), self.count)?;
        }
        s.unpacked[p] = true;
        Ok(())
    }

    /// Ends a complete epoch: the rest unpacked, the outcome kept.
    fn finish(&self, s: &mut PState) -> std::result::Result<CStatus, Error> {
        if let Some(r) = &s.done {
            return r.clone();
        }
        let r = self.outcome(s);
        if let Some(e) = &s.err {
            // A failed epoch's receive still posted is withdrawn, so that
            // it takes no later message, and the operation is broken: the
            // rest of this epoch's messages would be taken for a later
            // one's.
            if matches!(s.recv, Some(Flight::In(_))) {
                s.recv = None;
            }
            let e = e.clone();
            s.broken.get_or_insert(e);
        }
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

    /// Waits for the epoch: blocks on the setup or on what is in flight
    /// without the lock; a sender whose partitions are not all ready
    /// sleeps until `MPI_Pready` signals (or a millisecond passes, to
    /// progress).
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
                if matches!(s.recv, Some(Flight::In(_))) {
                    let Some(Flight::In(mut r)) = s.recv.replace(Flight::Out) else {
                        unreachable!("looked at above")
                    };
                    drop(s);
                    let res = r.wait();
                    s = lock(&self.st);
                    // `received` reads the landing buffer the request
                    // filled; the request goes after.
                    s.recv = None;
                    self.received(&mut s, res);
                    drop(r);
                    continue;
                }
            } else if s.got == self.partitions && !s.sends.is_empty() {
                // Every partition readied: wait for the sends in flight at
                // once.
                let reqs: Vec<Req> = s
                    .sends
                    .iter_mut()
                    .filter_map(|f| match std::mem::replace(f, Flight::Out) {
                        Flight::In(r) => Some(r),
                        Flight::Out => None,
                    })
                    .collect();
                if !reqs.is_empty() {
                    drop(s);
                    let results = wait_reqs_together(reqs);
                    s = lock(&self.st);
                    for res in results {
                        if let Err(e) = res {
                            s.err.get_or_insert(e);
                        }
                    }
                    s.sends.retain(|f| !matches!(f, Flight::Out));
                    continue;
                }
            }
            // Nothing to block on: partitions another thread has still to
            // ready. Spin and yield a while, then sleep until `MPI_Pready`
            // signals (checked and slept on under one hold of the lock, so
            // no signal is missed), a millisecond at most, to progress
            // what the program freed meanwhile.
            drop(s);
            poll_orphans();
            self.comm.comm.progress_once();
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

    /// `MPI_Pready` of partitions `parts`, under one lock: all checked
    /// first (none readied if one is refused), then sent a run of
    /// consecutive ones a message. A run that could not leave is not
    /// readied (the call's error says why, and it may be readied again);
    /// one that left in part breaks the operation.
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
        let mut list = Vec::new();
        for p in parts {
            match p.and_then(|p| self.check_ready(&s, p).map(|()| p)) {
                Ok(p) => {
                    // Marked now, so a repeat in the same call is caught.
                    s.have[p] = true;
                    list.push(p);
                }
                Err(e) => {
                    for &q in &list {
                        s.have[q] = false;
                    }
                    return Err(e);
                }
            }
        }
        s.got += list.len();
        list.sort_unstable();
        let mut r = Ok(());
        let mut i = 0;
        while i < list.len() {
            let mut j = i + 1;
            while j < list.len() && list[j] == list[j - 1] + 1 {
                j += 1;
            }
            r = r.and(self.send_readied(&mut s, list[i], j - i));
            i = j;
        }
        drop(s);
        self.readied.notify_all();
        r
    }

    /// `MPI_Pready_range` of `lo..=hi`: as [`ready`](Self::ready), the
    /// range checked and sent as one run without a list.
    fn ready_range(&self, lo: usize, hi: usize) -> Result<()> {
        self.check_partition(hi)?;
        let mut s = lock(&self.st);
        if !self.send || !s.started || s.done.is_some() {
            drop(s);
            // The refusals of `ready`, with their messages.
            return self.ready(std::iter::empty());
        }
        if let Some(p) = (lo..=hi).find(|&p| s.have[p]) {
            drop(s);
            return self.ready(std::iter::once(Ok(p)));
        }
        let n = hi - lo + 1;
        s.have[lo..=hi].fill(true);
        s.got += n;
        let r = self.send_readied(&mut s, lo, n);
        drop(s);
        self.readied.notify_all();
        r
    }

    /// Sends the run `first..first + len`, just marked ready: a run that
    /// could not leave is not ready after all (it may be readied again);
    /// one that left in part breaks the operation.
    fn send_readied(&self, s: &mut PState, first: usize, len: usize) -> Result<()> {
        if self.peer == PROC_NULL {
            return Ok(());
        }
        let Err((e, left)) = self.send_run(s, first, len) else {
            return Ok(());
        };
        if left {
            s.broken.get_or_insert_with(|| e.clone());
            s.err.get_or_insert_with(|| e.clone());
        } else {
            s.have[first..first + len].fill(false);
            s.got -= len;
        }
        Err(e)
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

    /// Whether partition `p` may be readied now.
    fn check_ready(&self, s: &PState, p: usize) -> Result<()> {
        self.check_partition(p)?;
        if s.have[p] {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("partition {p} was marked ready already since the last MPI_Start"),
            ));
        }
        Ok(())
    }

    /// Sends partitions `first..first + len`: a header, then their bytes,
    /// in the same message (packed, or short) or, from [`APART_FROM`]
    /// bytes of a contiguous run, in a message of their own from the
    /// program's buffer. Each message in flight goes to `sends`. On
    /// failure, the error and whether part of the run left already.
    fn send_run(
        &self,
        s: &mut PState,
        first: usize,
        len: usize,
    ) -> std::result::Result<(), (Error, bool)> {
        let bytes = len * self.part_bytes;
        let apart = self.run.filter(|_| bytes >= APART_FROM);
        let mut msg = Vec::new();
        let cap = if apart.is_some() { HEAD } else { HEAD + bytes };
        msg.try_reserve_exact(cap).map_err(|_| {
            let e = Error::new(
                ErrorClass::NoMem,
                format!("no memory to send {bytes} bytes of partitions"),
            );
            (e, false)
        })?;
        let flag = if apart.is_some() { APART } else { 0 };
        msg.extend_from_slice(&(first as u64).to_ne_bytes());
        msg.extend_from_slice(&(len as u64 | flag).to_ne_bytes());
        let from = |off: isize| {
            let at = self
                .buf
                .get()
                .cast::<u8>()
                .wrapping_offset(off)
                .wrapping_add(first * self.part_bytes);
            super::bytes(at.cast(), bytes)
        };
        let early = |e: Error| (e, false);
        match (apart, self.run) {
            (Some(off), _) => {
                from(off).map_err(early)?;
            }
            (None, Some(off)) => msg.extend_from_slice(from(off).map_err(early)?),
            (None, None) => self
                .ty
                .pack_into(self.at(first), len * self.count, &mut msg)
                .map_err(early)?,
        }
        // SAFETY: lifetime erasure of a borrow of `msg`'s heap buffer,
        // which moves into the same `Req` as the request and is dropped
        // after it.
        let data = unsafe { std::slice::from_raw_parts(msg.as_ptr(), msg.len()) };
        if let Started::Req(q) =
            isend_part(&self.comm, data, self.peer, self.data_tag, msg).map_err(early)?
        {
            s.sends.push(Flight::In(q));
        }
        if let Some(off) = apart {
            // The program's buffer, which MPI keeps untouched until the
            // request completes (MPI 4.1 §4.2); what the ring does not
            // take now is copied (`isend_part_bytes`). The header left
            // already: a failure now leaves the streams out of step.
            let data = from(off).map_err(|e| (e, true))?;
            let sent = isend_part(&self.comm, data, self.peer, self.data_tag, Vec::new());
            if let Started::Req(q) = sent.map_err(|e| (e, true))? {
                s.sends.push(Flight::In(q));
            }
        }
        Ok(())
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
        if !s.have.get(span).is_some_and(|h| h.iter().all(|&h| h)) {
            return Ok(false);
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
    if partitions < 1 {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("partitions is {partitions}: a partitioned operation has at least one"),
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
    // `Part::at` steps by whole partitions' extents: they must stay
    // within the address space.
    if isize::try_from(elems)
        .ok()
        .and_then(|n| n.checked_mul(ty.extent()))
        .is_none()
    {
        return Err(Error::new(
            ErrorClass::Count,
            format!(
                "{partitions} partitions of {count} elements of extent {} overflow the \
                 address space",
                ty.extent()
            ),
        ));
    }
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
    // Relaxed: a counter; only its uniqueness matters.
    let n = if send {
        NEXT_TAG.fetch_add(1, Ordering::Relaxed)
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
        data_tag: data_tag(n),
        st: Mutex::new(PState {
            started: false,
            setup: None,
            sends: Vec::new(),
            recv: None,
            apart: None,
            have: Vec::new(),
            got: 0,
            plan: (peer == PROC_NULL).then_some(Plan {
                total,
                parts: partitions,
                tag: 0,
            }),
            unpacked: Vec::new(),
            err: None,
            broken: None,
            done: None,
            setup_buf: Box::new([0; SETUP_LEN]),
            landing: Vec::new(),
            staging: Vec::new(),
        }),
        readied: Condvar::new(),
    });
    if peer != PROC_NULL {
        let mut s = lock(&part.st);
        if send {
            let mut setup = Vec::with_capacity(SETUP_LEN);
            let tag_word = u64::from(data_tag(n) as u32);
            for w in [total as u64, partitions as u64, tag_word] {
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
            let r = obj.comm.irecv_part_bytes(view, peer, tag)?;
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
        part.ready_range(partition(lo)?, partition(hi)?)
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
        for n in [0, 1, DATA_TAGS - 1, DATA_TAGS, 3 * DATA_TAGS + 5] {
            let t = data_tag(n);
            assert!(t < 0 && t != -1 && t != crate::p2p::CANCELLED_TAG, "{t}");
            assert!(t < i32::MIN + DATA_TAGS as i32, "{t}");
        }
        // Consecutive operations have distinct tags, across the wrap.
        let tags: std::collections::BTreeSet<i32> =
            (0..16).map(|k| data_tag(DATA_TAGS - 8 + k)).collect();
        assert_eq!(tags.len(), 16);
    }
}
