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

pub(crate) use engine::received;
pub use engine::{Engine, Hold, SendStart, Sinks, SlotId, SplitCounts, Task};
pub use envelope::{ANY_SOURCE, ANY_TAG, PROC_NULL, TAG_UB};
pub use status::{Status, CANCELLED_TAG};

use crate::error::{Error, ErrorClass, Result};
use crate::shm::Segment;
use crate::sync::{fence, AtomicU64, Ordering};
use crate::transport::owner::{Guard, OwnerLock};
use crate::transport::wait::{spin_round, FREE_SPINS};
use crate::transport::{Exact, Rung, WaitPolicy, Waiter};
use std::sync::Arc;
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

/// How a blocking send on context `cid` holds its buffer: pushed from it
/// until the call returns, and by rendezvous where the transport's
/// policy says (`SHMPI_CMA_BLOCKING`), except on a collective context
/// when not synchronous (`sync`).
/// The collective algorithms stay on the ring: measured on the Xeon VM
/// (`shmpi-bench allreduce|allgather|bcast --ranks 2`, 4 alternating
/// rounds, medians), rendezvous made bcast 3x and alltoall 1.4-2x
/// faster but allreduce 1.3-2.3x slower from 32 KiB and allgather
/// 1.2-1.8x slower at 32-128 KiB, though a plain `sendrecv` exchange is
/// faster by rendezvous (16 KiB 2.0 against 2.9 µs, 1 MiB 67 against
/// 180). The cause (2026-12-07): a buffer written just before it is
/// sent. Allgather copies the caller's block into the output and sends
/// it from there, allreduce and reduce send partial results they just
/// computed; a receiver's `process_vm_readv` of such a buffer, and the
/// sender's next write to lines the receiver's copy left shared, cost
/// more than the ring's two copies. An alltoall whose send buffer is
/// rewritten before each call (scratch test, 2 ranks, 20,000 calls):
/// 16 KiB-128 KiB 1.2-1.6x slower by rendezvous, though 0.57-0.8x with
/// the buffer left as it was (as OSU's benchmark and `shmpi-bench`
/// leave it). Applications send what they just computed. Again with
/// the shared copy from 16 KiB (then the default) and `shmpi-bench
/// --touch` (2026-12-07, 5
/// alternating rounds, 2 ranks): alltoall by rendezvous 0.49-0.89x the
/// ring's time untouched, 1.79-1.93x rewritten at 16-64 KiB (1.07-1.24x
/// at 128-256 KiB); allgather 1.5-1.9x slower at 16-64 KiB either way.
///
/// A synchronous send of an algorithm (`send_flow`: bcast's and
/// reduce's from `SHMPI_COLL_SYNC`) waits for its receiver anyway, so it
/// may take the rendezvous like any blocking send: on the Xeon VM
/// (2026-12-06) a 2-rank bcast of 64 KiB took 8.7 µs through the ring,
/// synchronous, against Open MPI's 3.9 (`docs/benchmarks.md`,
/// "thirtieth pass").
#[inline]
fn blocking_hold(cid: u32, sync: bool) -> Hold {
    if cid & COLL_BIT != 0 && !sync {
        Hold::Lent
    } else {
        Hold::Pipelined
    }
}

/// A receive of [`Shared::exchange_bytes`]: from `src` (world rank `peer`
/// when known), with `tag`, into `buf`.
#[derive(Debug)]
pub struct Post<'a> {
    /// Source rank in the communicator, or `ANY_SOURCE`.
    pub src: i32,
    /// Its world rank, when `src` names one.
    pub peer: Option<usize>,
    /// Tag, or `ANY_TAG`.
    pub tag: i32,
    /// Where the message goes.
    pub buf: &'a mut [u8],
}

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
    #[inline]
    pub fn dest(&self, rank: i32) -> Result<Option<usize>> {
        // A negative rank, sign-extended, is past any table: one
        // comparison checks both ends.
        match self.ranks.get(rank as usize) {
            Some(&w) => Ok(Some(w)),
            _ if rank == PROC_NULL => Ok(None),
            _ => Err(bad_rank(rank, self.size(), "rank", "")),
        }
    }

    /// Checks a receive source: `Ok(false)` for `PROC_NULL`.
    ///
    /// # Errors
    /// `Rank` when out of range and not `ANY_SOURCE`.
    #[inline]
    pub fn source(&self, rank: i32) -> Result<bool> {
        if Engine::valid_source(rank, self.size()) {
            return Ok(true);
        }
        if rank == PROC_NULL {
            return Ok(false);
        }
        Err(bad_rank(
            rank,
            self.size(),
            "source rank",
            " (and is not ANY_SOURCE)",
        ))
    }
}

/// The error of a rank out of range, out of line (the checks above sit on
/// every message's path).
#[cold]
#[inline(never)]
fn bad_rank(rank: i32, size: usize, what: &str, also: &str) -> Error {
    Error::new(
        ErrorClass::Rank,
        format!("{what} {rank} is out of range for a communicator of size {size}{also}"),
    )
}

/// The error of an operation whose peer (of a connected job) died.
pub(crate) fn proc_failed(peer: usize) -> Error {
    Error::new(
        ErrorClass::ProcFailed,
        format!("a process of a connected job (peer {peer} of this process) has died"),
    )
}

/// Checks a send tag.
///
/// # Errors
/// `Tag` unless `0 <= tag <= TAG_UB`.
#[inline]
pub fn check_send_tag(tag: i32) -> Result<()> {
    if tag < 0 {
        return Err(bad_tag(tag, "a send: tags are 0..="));
    }
    Ok(())
}

/// The error of an invalid tag, out of line.
#[cold]
#[inline(never)]
fn bad_tag(tag: i32, what: &str) -> Error {
    Error::new(
        ErrorClass::Tag,
        format!("tag {tag} is invalid for {what}{TAG_UB}"),
    )
}

/// Checks a receive tag.
///
/// # Errors
/// `Tag` unless `0 <= tag <= TAG_UB` or `tag == ANY_TAG`.
#[inline]
pub fn check_recv_tag(tag: i32) -> Result<()> {
    if tag < 0 && tag != ANY_TAG {
        return Err(bad_tag(tag, "a receive: tags are ANY_TAG or 0..="));
    }
    Ok(())
}

/// The engine behind its lock, plus the wait ladder. One per process.
#[derive(Debug)]
pub struct Shared {
    /// The engine. Its first thread locks it with plain loads and stores
    /// (`transport::owner`). Once a second thread uses it
    /// ([`OwnerLock::is_multi`], for good), waiters spin without the lock,
    /// watching ring tails rather than next-frame words (see
    /// `transport::Sleeper`), and progress wakes the rank's sleeping
    /// threads.
    engine: OwnerLock<Engine>,
    policy: WaitPolicy,
    /// The engine's segment, reachable without the lock (for spinning and
    /// sleeping on lock-free views of it).
    seg: Arc<Segment>,
    /// Bumped by progress that did work while several threads use the
    /// engine, so a thread about to sleep notices another thread's progress.
    epoch: AtomicU64,
    /// This process's world rank.
    rank: usize,
}

/// Where a send comes from: its context id and the sender's rank in the
/// communicator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The context id.
    pub cid: u32,
    /// The sender's rank in the communicator.
    pub src: u32,
}

impl Shared {
    /// Wraps an engine.
    pub fn new(engine: Engine, policy: WaitPolicy) -> Shared {
        let seg = engine.transport().segment().clone();
        let rank = engine.world_rank();
        Shared {
            rank,
            engine: OwnerLock::new(engine),
            policy,
            seg,
            epoch: AtomicU64::new(0),
        }
    }

    /// The job segment.
    pub fn segment(&self) -> &Arc<Segment> {
        &self.seg
    }

    /// This process's world rank.
    pub fn world_rank(&self) -> usize {
        self.rank
    }

    /// Locks the engine. A panic in another thread while it held the lock
    /// does not poison this process's communication.
    #[inline]
    pub fn lock(&self) -> Guard<'_, Engine> {
        self.engine.lock()
    }

    /// Whether a second thread has used the engine (for good).
    #[inline]
    fn multi(&self) -> bool {
        self.engine.is_multi()
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
            let mut e = self.lock();
            // Under the lock: progress, and while this is the only thread
            // that uses the engine, spin right here on the next-frame words
            // of the watched rings (nobody else wants the lock, and no other
            // thread can consume from those rings meanwhile).
            let sleep_for = loop {
                if let Some(r) = done(&mut e, sinks) {
                    return r;
                }
                if self.progress(&mut e, sinks) > 0 {
                    waiter.reset();
                    continue;
                }
                // A thread that wants the engine sets it, then waits for
                // this one to let go (`transport::owner`).
                if self.multi() {
                    break None;
                }
                match self.spin_locked(&mut waiter, &e.sleeper(true), deadline)? {
                    Spun::Work => continue,
                    Spun::Sleep(t) => break Some(t),
                    Spun::LetGo => break None,
                }
            };
            // Without the lock (to sleep, or because other threads use the
            // engine): watch ring tails, which is sound whoever consumes.
            let sleeper = e.sleeper(false);
            // SeqCst: read after this thread's progress; the other half is
            // the RMW in `progress`.
            let epoch = self.epoch.load(Ordering::SeqCst);
            drop(e);
            // SYNC(epoch): SeqCst, read after the sleeper's increment +
            // fence on the sleep path; pairs with the RMW + fence in
            // `progress`.
            let moved = || self.epoch.load(Ordering::SeqCst) != epoch;
            match sleep_for {
                Some(t) => sleeper.sleep(&self.seg, t, moved),
                None => self.spin_unlocked(&mut waiter, &sleeper, &moved, deadline)?,
            }
        }
    }

    /// A blocking send of `data` to world rank `dest` on context `cid`,
    /// from rank `src` of the communicator (standard mode, or synchronous
    /// with `sync`): returns once `data` may be reused (and, for `sync`,
    /// once the receiver matched it). Arguments are checked by the caller.
    ///
    /// # Errors
    /// `Other` if the wait fails.
    pub fn send_bytes(
        &self,
        cid: u32,
        src: u32,
        dest: usize,
        tag: i32,
        data: &[u8],
        sync: bool,
    ) -> Result<()> {
        if !sync {
            return self.send_std(Origin { cid, src }, dest, tag, data);
        }
        self.send_bytes_general(cid, src, dest, tag, data, sync)
    }

    /// [`send_bytes`](Self::send_bytes) in standard mode: the eager fast
    /// path in a small frame, the rest out of line. (Without `sync`, 5
    /// fewer instructions per send than `send_bytes`: `tools/icount.sh`.)
    ///
    /// # Errors
    /// As [`send_bytes`](Self::send_bytes).
    #[inline(always)]
    pub fn send_std(&self, o: Origin, dest: usize, tag: i32, data: &[u8]) -> Result<()> {
        if self.lock().try_send_eager(o.cid, o.src, dest, tag, data) {
            return Ok(());
        }
        self.send_bytes_general(o.cid, o.src, dest, tag, data, false)
    }

    /// [`send_bytes`](Self::send_bytes) past the eager fast path.
    #[inline(never)]
    fn send_bytes_general(
        &self,
        cid: u32,
        src: u32,
        dest: usize,
        tag: i32,
        data: &[u8],
        sync: bool,
    ) -> Result<()> {
        let (start, ack) = {
            let mut e = self.lock();
            e.start_send(cid, src, dest, tag, data, sync, blocking_hold(cid, sync))
        };
        if let SendStart::Partial(mut out) = start {
            let r = self.wait_until(None, |e| {
                if e.resume_send(&mut out, data) {
                    return Some(Ok(()));
                }
                e.transport()
                    .is_dead(out.peer())
                    .then(|| Err(proc_failed(out.peer())))
            });
            if let Err(err) = r {
                if let Some(id) = ack {
                    self.lock().orphan(id);
                }
                return Err(err);
            }
        }
        if let Some(id) = ack {
            self.wait_until(None, |e| e.is_complete(id).then(|| e.finish_send(id)))?;
        }
        Ok(())
    }

    /// A blocking receive into `buf` on context `cid` from rank `src` of
    /// the communicator (or `ANY_SOURCE`), whose world rank is `peer` when
    /// known, with `tag` (or `ANY_TAG`). Arguments are checked by the
    /// caller.
    ///
    /// # Errors
    /// `Truncate` when the message does not fit `buf` (consumed; the error
    /// carries its status).
    pub fn recv_bytes(
        &self,
        cid: u32,
        src: i32,
        peer: Option<usize>,
        tag: i32,
        buf: &mut [u8],
    ) -> Result<Status> {
        if let Some(peer) = peer {
            match self.recv_direct(cid, src, peer, tag, buf) {
                Direct::Taken(bytes) => {
                    let st = Status {
                        source: src,
                        tag,
                        bytes,
                    };
                    return engine::received(st, buf.len());
                }
                Direct::Done(r) => return r,
                Direct::No => {}
            }
        }
        self.recv_posted(cid, src, peer, tag, buf)
    }

    /// [`recv_bytes`](Self::recv_bytes) past its fast path: posts the
    /// receive, progresses, waits.
    ///
    /// # Errors
    /// As [`recv_bytes`](Self::recv_bytes).
    pub fn recv_posted(
        &self,
        cid: u32,
        src: i32,
        peer: Option<usize>,
        tag: i32,
        buf: &mut [u8],
    ) -> Result<Status> {
        let id = {
            // Post and make one round of progress under one lock: a
            // message already in the ring completes here.
            let mut e = self.lock();
            let id = e.post_recv_from(cid, src, peer, tag, buf.len());
            if !e.is_complete(id) {
                self.progress(&mut e, &mut [(id, &mut *buf)]);
            }
            if e.is_complete(id) {
                return e.finish_recv(id, buf);
            }
            id
        };
        self.wait_until_into(None, &mut [(id, buf)], |e, sinks| {
            e.is_complete(id).then(|| e.finish_recv(id, sinks[0].1))
        })
    }

    /// `count` receives on context `cid` from rank `src` of the
    /// communicator (or `ANY_SOURCE`; world rank `peer` when known) with
    /// `tag`, all posted at once into the one buffer `buf`, then a wait
    /// for them all: what a window of `MPI_Irecv`s into one buffer
    /// followed by `MPI_Waitall` does in C (OSU's bandwidth test). Every
    /// receive lends `buf` to progress, so a message arriving during the
    /// wait lands there directly; one held back in its slot (waiting
    /// before the window was posted) is copied in at completion, over
    /// those. Afterwards `buf` holds bytes of the messages written in an
    /// order not specified (`Communicator::recv_many`). Statuses in posting
    /// order.
    ///
    /// With a named source and tag, and a buffer of at most
    /// `Transport::many_direct_max` bytes (`SHMPI_MANY_DIRECT`: on AMD
    /// 128 B, where up to 128 B that raised a window's bandwidth 8-26%,
    /// `shmpi-bench bw`, one CCD, and from 256 B cost 2-30%, the general
    /// path's poll draining several frames a look, `docs/benchmarks.md`,
    /// "twenty-fifth pass"; on Intel none, where it cost 8-34% at 4-128
    /// B, "thirty-third pass"), the receives at the window's front are
    /// taken as a blocking receive takes its message
    /// ([`recv_named`](Self::recv_named)): straight from the source's
    /// ring while nothing else could match first (`Engine::direct_ok`),
    /// no slot posted; the rest, from the first message that is not one
    /// whole frame of that envelope (or when the wait would sleep), are
    /// posted as above. An 8-byte message cost 567 instructions through
    /// a posted window, 157 taken so (`tools/icount.sh 8`, mode `many`).
    /// The posted window's wait pauses after each look that took part of
    /// it (`pace_window`).
    ///
    /// # Errors
    /// As [`recv_bytes`](Self::recv_bytes): the first error (every receive
    /// is finished either way).
    pub fn recv_many_bytes(
        &self,
        cid: u32,
        src: i32,
        peer: Option<usize>,
        tag: i32,
        buf: &mut [u8],
        count: usize,
    ) -> Result<Vec<Status>> {
        if count == 0 {
            return Ok(Vec::new());
        }
        // The statuses in posting order, and the first error (every
        // receive is finished either way).
        let mut sts = Vec::with_capacity(count);
        let mut first_err = None;
        let mut keep = |r: Result<Status>| match r {
            Ok(st) => sts.push(st),
            Err(e) => {
                sts.push(Status::null());
                first_err.get_or_insert(e);
            }
        };
        let mut taken = 0;
        let direct = src >= 0 && tag != ANY_TAG;
        if let Some(peer) = peer.filter(|_| direct && !self.multi()) {
            let mut e = self.lock();
            let fits = buf.len() <= e.transport().many_direct_max();
            while fits && taken < count && e.direct_ok(cid, src, peer, tag) {
                let Exact::Taken(bytes) = self.wait_named(&mut e, cid, src, peer, tag, buf) else {
                    break;
                };
                let st = Status {
                    source: src,
                    tag,
                    bytes,
                };
                keep(received(st, buf.len()));
                taken += 1;
            }
        }
        if taken < count {
            let ids = self.post_recv_many(cid, src, peer, tag, buf.len(), count - taken);
            // Receives complete mostly in posting order: a cursor keeps the
            // check from walking the whole window on every look.
            let mut done = 0;
            // Rendezvous reads so far (the pace's test, below).
            let mut pulled = self.lock().rendezvous_counts().1;
            self.wait_until_into(None, &mut [(ids[0], buf)], |e, sinks| {
                let was = done;
                while done < ids.len() && e.is_complete(ids[done]) {
                    done += 1;
                }
                if done < ids.len() {
                    // Paced only after messages that came through the
                    // ring: a rendezvous read is this rank's own copy,
                    // with no producer to let run ahead.
                    let rdv = e.rendezvous_counts().1;
                    if done > was && std::mem::replace(&mut pulled, rdv) == rdv {
                        self.pace_window(e);
                    }
                    return None;
                }
                // Every slot is finished (and freed), errors or not.
                for &id in &ids {
                    keep(e.finish_recv(id, &mut *sinks[0].1));
                }
                Some(Ok(()))
            })?;
        }
        first_err.map_or(Ok(sts), Err)
    }

    /// The pause of a window of receives after a look that took some of
    /// its messages but not all (`Transport::window_pace_ns`): its
    /// sender then writes on ahead instead of into the lines this rank
    /// is reading. A consumer on its producer's heels slowed the stream:
    /// on the Xeon VM (`shmpi-bench bw`, 6 alternating runs) 500 ns
    /// raised 128 B-2 KiB windows 1.19-1.65x (1 KiB 4.4 → 7.2 GB/s), 1-64
    /// B and 4-8 KiB within noise. Not while other threads want the
    /// engine: the pause holds its lock. Not when a message was read by
    /// rendezvous since the last look that took some (its caller's test):
    /// windows of 8-64 KiB plain `isend`s ran at 0.57-0.65 of their speed
    /// unpaced, 32-64 KiB scoped ones 0.74-0.79 (`docs/benchmarks.md`,
    /// "thirty-fourth pass").
    fn pace_window(&self, e: &Engine) {
        let ns = e.transport().window_pace_ns();
        if ns == 0 || self.multi() {
            return;
        }
        let t = Instant::now();
        while t.elapsed().as_nanos() < u128::from(ns) {
            std::hint::spin_loop();
        }
    }

    /// Posts `count` (at least one) receives of up to `len` bytes on
    /// context `cid` from rank `src` (world rank `peer` when known) with
    /// `tag`, all writing into the buffer lent with the first one's slot
    /// (`Engine::share_sink`). Their slots, in posting order.
    pub fn post_recv_many(
        &self,
        cid: u32,
        src: i32,
        peer: Option<usize>,
        tag: i32,
        len: usize,
        count: usize,
    ) -> Vec<SlotId> {
        assert!(count > 0, "post_recv_many of no receive");
        let mut e = self.lock();
        let ids: Vec<SlotId> = (0..count)
            .map(|_| e.post_recv_from(cid, src, peer, tag, len))
            .collect();
        for &id in &ids[1..] {
            e.share_sink(id, ids[0]);
        }
        ids
    }

    /// Receives into `rbuf` (from rank `src` of the communicator, with
    /// `rtag`) while sending `data` (to world rank `dest` as rank
    /// `me`, with `stag`), both on context `cid`: the receive is posted
    /// first, so the peer's message lands in `rbuf` rather than in the
    /// unexpected queue, and two ranks exchanging never wait on each
    /// other.
    ///
    /// # Errors
    /// As [`send_bytes`](Self::send_bytes) and [`recv_bytes`](Self::recv_bytes).
    #[allow(clippy::too_many_arguments)]
    pub fn sendrecv_bytes(
        &self,
        cid: u32,
        me: u32,
        dest: usize,
        stag: i32,
        data: &[u8],
        src: i32,
        src_peer: Option<usize>,
        rtag: i32,
        rbuf: &mut [u8],
    ) -> Result<Status> {
        let id = self
            .lock()
            .post_recv_from(cid, src, src_peer, rtag, rbuf.len());
        if let Err(err) = self.send_lending(cid, me, dest, stag, data, &mut [(id, &mut *rbuf)]) {
            // The receive must not stay posted to swallow a later message.
            self.lock().orphan(id);
            return Err(err);
        }
        self.wait_until_into(None, &mut [(id, rbuf)], |e, sinks| {
            e.is_complete(id).then(|| e.finish_recv(id, sinks[0].1))
        })
    }

    /// The receives `posts` (each from `src`, world rank `peer` when
    /// known, with `tag`, into `buf`) all posted first, then the sends
    /// `sends` ((world rank, tag, bytes), as rank `me`) one after another,
    /// then the wait for every receive; all on context `cid`, and the
    /// receive buffers lent to progress throughout, so messages land in
    /// them directly. Since every receive is posted before any send
    /// waits, ranks that all send to each other never wait on each other,
    /// whether a send is buffered in a ring or goes by rendezvous. Returns
    /// the receives' statuses in order.
    ///
    /// # Errors
    /// As [`send_bytes`](Self::send_bytes) and [`recv_bytes`](Self::recv_bytes)
    /// (the first error; a failed send withdraws the receives).
    pub fn exchange_bytes(
        &self,
        cid: u32,
        me: u32,
        sends: &[(usize, i32, &[u8])],
        posts: Vec<Post<'_>>,
    ) -> Result<Vec<Status>> {
        let mut sinks: Vec<(SlotId, &mut [u8])> = {
            let mut e = self.lock();
            posts
                .into_iter()
                .map(|p| {
                    (
                        e.post_recv_from(cid, p.src, p.peer, p.tag, p.buf.len()),
                        p.buf,
                    )
                })
                .collect()
        };
        for &(dest, tag, data) in sends {
            if let Err(err) = self.send_lending(cid, me, dest, tag, data, &mut sinks) {
                let mut e = self.lock();
                for &(id, _) in sinks.iter() {
                    e.orphan(id);
                }
                return Err(err);
            }
        }
        self.wait_until_into(None, &mut sinks, |e, sinks| {
            if !sinks.iter().all(|(id, _)| e.is_complete(*id)) {
                return None;
            }
            // Every slot is finished (and freed), errors or not.
            let all: Vec<Result<Status>> = sinks
                .iter_mut()
                .map(|(id, buf)| e.finish_recv(*id, buf))
                .collect();
            Some(all.into_iter().collect())
        })
    }

    /// A blocking standard-mode send (as in [`send_bytes`](Self::send_bytes))
    /// whose waits lend `sinks` (posted receives' buffers) to progress.
    #[allow(clippy::too_many_arguments)]
    fn send_lending(
        &self,
        cid: u32,
        me: u32,
        dest: usize,
        tag: i32,
        data: &[u8],
        sinks: Sinks<'_, '_>,
    ) -> Result<()> {
        let (start, ack) =
            self.lock()
                .start_send(cid, me, dest, tag, data, false, blocking_hold(cid, false));
        let sent = match start {
            SendStart::Partial(mut out) => self.wait_until_into(None, sinks, |e, _| {
                if e.resume_send(&mut out, data) {
                    return Some(Ok(()));
                }
                e.transport()
                    .is_dead(out.peer())
                    .then(|| Err(proc_failed(out.peer())))
            }),
            SendStart::Done => Ok(()),
        };
        match (sent, ack) {
            (Ok(()), Some(ack)) => self.wait_until_into(None, sinks, |e, _| {
                e.is_complete(ack).then(|| e.finish_send(ack))
            }),
            (Err(err), Some(ack)) => {
                self.lock().orphan(ack);
                Err(err)
            }
            (r, None) => r,
        }
    }

    /// The blocking receive's fast path (single-threaded mode only): while
    /// the engine allows it ([`Engine::direct_ok`]), take the message
    /// straight from world rank `peer`'s ring, spinning on that ring's
    /// front while the wait ladder is on its spinning rung.
    /// [`Direct::No`] when the receive must take the general path (post,
    /// progress, sleep): the ring's front holds something else, another
    /// thread uses the engine, or the spinning time is over.
    #[inline(always)]
    fn recv_direct(&self, ctx: u32, src: i32, peer: usize, tag: i32, buf: &mut [u8]) -> Direct {
        if tag != ANY_TAG {
            return match self.recv_named(ctx, src, peer, tag, buf) {
                Some(bytes) => Direct::Taken(bytes),
                None => Direct::No,
            };
        }
        // See `wait_until_into`.
        if self.multi() {
            return Direct::No;
        }
        let mut e = self.lock();
        if !e.direct_ok(ctx, src, peer, tag) {
            return Direct::No;
        }
        match self.spin_any_tag(&mut e, ctx, src, peer, buf) {
            Some(r) => Direct::Done(r),
            None => Direct::No,
        }
    }

    /// The fast path of a blocking receive from a named source (world
    /// rank `peer`) with a named tag: the length of the message it took
    /// into `buf` (its status: `src`, `tag`), or `None`: nothing taken,
    /// finish with [`recv_posted`](Self::recv_posted). For
    /// `Communicator::recv`, which then builds the status in its own
    /// return slot: built here and copied out, its halves cost two
    /// store-forwarding stalls on the way to the caller's next send
    /// (`docs/benchmarks.md`, "Issue 6, tenth pass"). Inlined into the
    /// caller's one out-of-line function ("eleventh pass").
    #[inline(always)]
    pub fn recv_named(
        &self,
        ctx: u32,
        src: i32,
        peer: usize,
        tag: i32,
        buf: &mut [u8],
    ) -> Option<usize> {
        // See `wait_until_into`. (`ANY_TAG` has no known header: the
        // general path.)
        if self.multi() || tag == ANY_TAG {
            return None;
        }
        let mut e = self.lock();
        if !e.direct_ok(ctx, src, peer, tag) {
            return None;
        }
        match self.wait_named(&mut e, ctx, src, peer, tag, buf) {
            Exact::Taken(bytes) => Some(bytes),
            Exact::Other | Exact::Empty => None,
        }
    }

    /// The wait of one receive posted as `id` into `buf` (its capacity),
    /// by [`recv_named`](Self::recv_named)'s spin when the engine allows
    /// (`Engine::posted_direct`): the message goes straight from the ring
    /// into `buf` and the slot is finished. `None`: not taken (the engine
    /// busy, something else in front, or the wait ladder says sleep); the
    /// receive stays posted for the general wait.
    pub fn wait_posted_direct(&self, id: SlotId, buf: &mut [u8]) -> Option<Result<Status>> {
        self.wait_posted_with(id, |_| Some(buf))
    }

    /// [`wait_posted_direct`](Self::wait_posted_direct) for the keyed
    /// receive `id` of generation `gen` ([`Engine::set_key`]), its buffer
    /// made by `buf_of` from the slot's key and capacity. `None`: not
    /// taken (as there, or the key stale or taken); the slot untouched.
    pub fn wait_keyed_direct<'b>(
        &self,
        id: SlotId,
        gen: u32,
        buf_of: impl FnOnce(usize, usize) -> &'b mut [u8],
    ) -> Option<Result<Status>> {
        self.wait_posted_with(id, |e| {
            let (key, cap) = e.key(id, gen)?;
            Some(buf_of(key, cap))
        })
    }

    /// The body of both: the buffer that `buf` picks (under the engine
    /// lock, before anything else; `None`: not taken), then the direct
    /// wait if `Engine::posted_direct` allows it.
    #[inline(always)]
    fn wait_posted_with<'b>(
        &self,
        id: SlotId,
        buf: impl FnOnce(&Engine) -> Option<&'b mut [u8]>,
    ) -> Option<Result<Status>> {
        if self.multi() {
            return None;
        }
        let mut e = self.lock();
        let buf = buf(&e)?;
        let (ctx, src, peer, tag) = e.posted_direct(id)?;
        match self.wait_named(&mut e, ctx, src, peer, tag, buf) {
            Exact::Taken(bytes) => {
                let st = Status {
                    source: src,
                    tag,
                    bytes,
                };
                Some(e.finish_posted_direct(id, st, buf.len()))
            }
            Exact::Other | Exact::Empty => None,
        }
    }

    /// The spin of [`recv_named`](Self::recv_named), after its checks: the
    /// front frame of `peer`'s ring taken into `buf` if it starts with the
    /// header of a whole message on `ctx` from `src` with `tag`.
    #[inline(always)]
    fn wait_named(
        &self,
        e: &mut Engine,
        ctx: u32,
        src: i32,
        peer: usize,
        tag: i32,
        buf: &mut [u8],
    ) -> Exact {
        // Source and tag named: the frame header such a message starts
        // with is known, and compared whole.
        let head = Engine::sole_head(ctx, src, tag);
        // The frame is due within a round trip: the first polls (up to
        // `FREE_SPINS`, or the policy's finely paced rounds if fewer) are
        // paced here with nothing but a round count, so that the loop is a
        // load, a comparison and the pause; then `spin_on` takes over
        // where they left off, with a waiter and a look at the lock's mode
        // (a thread that wants the engine waits at most those rounds for
        // this one to let go).
        let bare = self.policy.fine_spins.min(FREE_SPINS);
        let mut rounds = 0u32;
        let mut waiter: Option<Waiter> = None;
        let spin = || {
            if rounds < bare {
                rounds += 1;
                crate::ring::poll_pause();
                return true;
            }
            self.spin_on(&mut waiter, rounds)
        };
        e.wait_exact(peer, &head, buf, spin)
    }

    /// One round of [`recv_named`](Self::recv_named)'s wait after its
    /// bare spins (`rounds` of them): pauses by the waiter's ladder.
    /// Returns whether to go on spinning (not when the ladder says sleep,
    /// which the general path does, or another thread wants the engine).
    #[cold]
    #[inline(never)]
    fn spin_on(&self, waiter: &mut Option<Waiter>, rounds: u32) -> bool {
        let w = waiter.get_or_insert_with(|| Waiter::resumed(self.policy, rounds));
        !self.multi() && w.pause(None) == Rung::Spin
    }

    /// [`recv_direct`](Self::recv_direct) for `ANY_TAG`: the envelope is
    /// decoded and matched.
    fn spin_any_tag(
        &self,
        e: &mut Engine,
        ctx: u32,
        src: i32,
        peer: usize,
        buf: &mut [u8],
    ) -> Option<Result<Status>> {
        if let Some(r) = e.recv_direct(ctx, src, peer, ANY_TAG, buf) {
            return r;
        }
        let mut waiter = Waiter::new(self.policy);
        loop {
            if self.multi() || waiter.pause(None) != Rung::Spin {
                return None;
            }
            if let Some(r) = e.recv_direct(ctx, src, peer, ANY_TAG, buf) {
                return r;
            }
        }
    }

    /// Waits until `cond()` holds (a flag in shared memory that a peer
    /// sets, then rings this rank's doorbell): spins on it alone at first,
    /// then calls `on_idle` once and keeps the engine moving between
    /// looks, yields, and sleeps on the doorbell with `cond` as part of
    /// the wake-up condition.
    ///
    /// # Errors
    /// None today; `Result` for symmetry with the other waits.
    pub fn wait_flag(&self, cond: &dyn Fn() -> bool, on_idle: &dyn Fn()) -> Result<()> {
        for round in 0..FLAG_SPINS {
            if cond() {
                return Ok(());
            }
            spin_round(&self.policy, round);
        }
        // About to drive the engine, yield or sleep: let the caller wake
        // whoever waits for it first.
        on_idle();
        // The ladder goes on from the rounds spun above (its finely paced
        // rounds are spent).
        let mut waiter = Waiter::resumed(self.policy, FLAG_SPINS as u32);
        loop {
            if cond() {
                return Ok(());
            }
            let sleeper = {
                let mut e = self.lock();
                if self.progress(&mut e, &mut []) > 0 {
                    waiter.reset();
                    continue;
                }
                e.sleeper(false)
            };
            if let Rung::Sleep(t) = waiter.pause(None) {
                sleeper.sleep(&self.seg, t, cond);
            }
        }
    }

    /// One round of progress under the lock `e`; in the multi-threaded
    /// mode, productive progress also wakes this rank's other sleeping
    /// threads.
    #[inline]
    pub fn progress(&self, e: &mut Engine, sinks: Sinks<'_, '_>) -> usize {
        // Peers of other jobs that died fail what waits on them (tests and
        // waits alike); nothing to do without bridges.
        e.check_failures();
        let work = e.progress_into(sinks);
        if work > 0 && self.multi() {
            self.announce(e);
        }
        work
    }

    /// Tells this rank's other threads that something they may wait for
    /// changed (progress did work, a receive was cancelled): the caller
    /// made the change under the engine lock.
    fn announce(&self, e: &Engine) {
        // SYNC(epoch): SeqCst RMW and fence, then the doorbell: a thread
        // of this rank about to sleep sees the new epoch or is woken.
        self.epoch.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        e.transport().wake_local();
    }

    /// [`Engine::cancel_posted`], from a thread other than the one that
    /// waits for the receive: a cancelled receive wakes this rank's
    /// waiting threads, as progress that completed something does.
    pub fn cancel_posted(&self, id: SlotId, gen: u32) -> Option<bool> {
        let mut e = self.lock();
        let r = e.cancel_posted(id, gen);
        if r == Some(true) {
            // The slot's new state was written under the lock, which the
            // waiter takes to look.
            self.announce(&e);
        }
        r
    }

    /// Spins under the lock (single-threaded mode) until a watched word or
    /// pending bit shows work, the ladder says sleep, or another thread
    /// wants the engine.
    fn spin_locked(
        &self,
        waiter: &mut Waiter,
        sleeper: &crate::transport::Sleeper,
        deadline: Option<Instant>,
    ) -> Result<Spun> {
        loop {
            // See `wait_until_into`.
            if self.multi() {
                return Ok(Spun::LetGo);
            }
            if sleeper.has_work(&self.seg) {
                return Ok(Spun::Work);
            }
            check_deadline(deadline)?;
            if let Rung::Sleep(t) = waiter.pause(deadline) {
                return Ok(Spun::Sleep(t));
            }
        }
    }

    /// Spins without the lock (multi-threaded mode), at most RECHECK
    /// rounds, since another thread may complete our operation; sleeps if
    /// the ladder says so.
    fn spin_unlocked(
        &self,
        waiter: &mut Waiter,
        sleeper: &crate::transport::Sleeper,
        moved: &dyn Fn() -> bool,
        deadline: Option<Instant>,
    ) -> Result<()> {
        for _ in 0..RECHECK {
            if sleeper.has_work(&self.seg) || moved() {
                return Ok(());
            }
            check_deadline(deadline)?;
            if let Rung::Sleep(t) = waiter.pause(deadline) {
                sleeper.sleep(&self.seg, t, moved);
                return Ok(());
            }
        }
        Ok(())
    }
}

/// How a spin under the lock ended.
enum Spun {
    /// Work is visible: progress again.
    Work,
    /// The wait ladder reached its last rung: sleep this long, unlocked.
    Sleep(std::time::Duration),
    /// Another thread wants the engine: let go of the lock.
    LetGo,
}

fn check_deadline(deadline: Option<Instant>) -> Result<()> {
    match deadline {
        Some(d) if Instant::now() >= d => Err(Error::new(
            ErrorClass::Other,
            "timed out waiting for completion",
        )),
        _ => Ok(()),
    }
}

/// What [`Shared::recv_direct`] did.
enum Direct {
    /// The awaited message, of this many bytes, is in the buffer; its
    /// status is the receive's named source and tag.
    Taken(usize),
    /// The receive is finished otherwise (`ANY_TAG`), with this result.
    Done(Result<Status>),
    /// Nothing was taken: the general path.
    No,
}

/// Lock-free spin rounds between two looks under the lock.
const RECHECK: usize = 256;

/// Rounds `wait_flag` spins on its flag alone before it also drives the
/// engine (a few microseconds: the policy's fine rounds, then PAUSE).
const FLAG_SPINS: usize = 250;
