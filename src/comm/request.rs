//! Requests of nonblocking operations and their completion calls
//! (MPI 4.1 §3.7).

use super::Process;
use crate::error::{Error, Result};
use crate::p2p::{SlotId, Status};

enum Op<'a> {
    /// Complete from the start (a send that fit, PROC_NULL).
    Done(Status),
    /// A send in the engine.
    Send(SlotId),
    /// A receive into a borrowed buffer.
    Recv(SlotId, &'a mut [u8]),
    /// Receives (at least one) all into one borrowed buffer, lent with
    /// the first slot (`Communicator::irecv_many`).
    RecvMany(Vec<SlotId>, &'a mut [u8]),
    /// A nonblocking collective's task, and how to read its result into
    /// the caller's buffer.
    Coll(SlotId, Option<Finish<'a>>),
}

/// Reads a finished task's result out (into a borrowed buffer).
pub(crate) type Finish<'a> = Box<dyn FnOnce(&mut dyn std::any::Any) + Send + 'a>;

impl std::fmt::Debug for Op<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Op::Done(st) => write!(f, "Done({st:?})"),
            Op::Send(id) => write!(f, "Send({id})"),
            Op::Recv(id, b) => write!(f, "Recv({id}, {} bytes)", b.len()),
            Op::RecvMany(ids, b) => write!(f, "RecvMany({ids:?}, {} bytes)", b.len()),
            Op::Coll(id, _) => write!(f, "Coll({id})"),
        }
    }
}

/// A nonblocking operation in flight (`MPI_Request`). Completing it
/// (`wait`, `test`) consumes or clears it; dropping an incomplete one lets
/// a send finish in the background and cancels a receive that has not
/// matched yet (its buffer borrow ends with the request).
#[derive(Debug)]
#[must_use = "a request must be waited on or tested to learn its outcome"]
pub struct Request<'a> {
    proc_: &'a Process,
    /// Dropped by hand ([`Drop`] below): a request that is done or spent
    /// (a window of short sends, dropped by the dozen) then runs no drop
    /// glue for its `Op`.
    op: std::mem::ManuallyDrop<Option<Op<'a>>>,
}

impl<'a> Request<'a> {
    pub(crate) fn done(proc_: &'a Process, st: Status) -> Request<'a> {
        Request {
            proc_,
            op: std::mem::ManuallyDrop::new(Some(Op::Done(st))),
        }
    }

    pub(crate) fn send(proc_: &'a Process, id: SlotId) -> Request<'a> {
        Request {
            proc_,
            op: std::mem::ManuallyDrop::new(Some(Op::Send(id))),
        }
    }

    pub(crate) fn recv(proc_: &'a Process, id: SlotId, buf: &'a mut [u8]) -> Request<'a> {
        Request {
            proc_,
            op: std::mem::ManuallyDrop::new(Some(Op::Recv(id, buf))),
        }
    }

    pub(crate) fn recv_many(
        proc_: &'a Process,
        ids: Vec<SlotId>,
        buf: &'a mut [u8],
    ) -> Request<'a> {
        assert!(!ids.is_empty(), "a receive window of no receive");
        Request {
            proc_,
            op: std::mem::ManuallyDrop::new(Some(Op::RecvMany(ids, buf))),
        }
    }

    pub(crate) fn coll(proc_: &'a Process, id: SlotId, fin: Option<Finish<'a>>) -> Request<'a> {
        Request {
            proc_,
            op: std::mem::ManuallyDrop::new(Some(Op::Coll(id, fin))),
        }
    }

    /// The status of an operation that completed when it started (a send
    /// the ring took whole, an operation with `PROC_NULL`), consuming the
    /// request; the request back otherwise.
    #[inline]
    pub(crate) fn into_done(self) -> std::result::Result<Status, Self> {
        match *self.op {
            Some(Op::Done(st)) => {
                // Nothing in it to drop (a status; no slot, no buffer):
                // forgotten, so no drop glue runs for its `Op`.
                std::mem::forget(self);
                Ok(st)
            }
            _ => Err(self),
        }
    }

    /// The engine slots the request waits for (none once done).
    fn slots(&self) -> &[SlotId] {
        match &*self.op {
            None | Some(Op::Done(_)) => &[],
            Some(Op::Send(id) | Op::Recv(id, _) | Op::Coll(id, _)) => std::slice::from_ref(id),
            Some(Op::RecvMany(ids, _)) => ids,
        }
    }

    /// Whether every slot of the request is complete.
    fn is_complete(&self, e: &crate::p2p::Engine) -> bool {
        self.slots().iter().all(|&id| e.is_complete(id))
    }

    /// The buffer lent to progress while the request waits, with the slot
    /// that carries it: a receive's, or a receive window's (every message
    /// of it lands there directly).
    fn sink(&mut self) -> Option<(SlotId, &mut [u8])> {
        match &mut *self.op {
            Some(Op::Recv(id, buf)) => Some((*id, &mut **buf)),
            Some(Op::RecvMany(ids, buf)) => Some((ids[0], &mut **buf)),
            _ => None,
        }
    }

    /// Finishes a request whose slot is complete (the engine lock held).
    fn finish(&mut self, e: &mut crate::p2p::Engine) -> Result<Status> {
        match self.op.take().expect("finish on a live request") {
            Op::Done(st) => Ok(st),
            Op::Send(id) => e.finish_send(id).map(|()| Status::null()),
            Op::Recv(id, buf) => e.finish_recv(id, buf),
            Op::RecvMany(ids, buf) => finish_many(e, &ids, buf),
            Op::Coll(id, fin) => finish_coll(e, id, fin),
        }
    }

    /// Waits for completion (`MPI_Wait`). A send's status is empty; a
    /// receive's tells source, tag and length.
    ///
    /// # Errors
    /// `Truncate` for a receive whose message was too long.
    pub fn wait(mut self) -> Result<Status> {
        let proc_ = self.proc_;
        // A receive first: `irecv` and its `wait` are the halo exchange's
        // receive, and this is their whole path when the direct wait
        // takes the message.
        if let Some(Op::Recv(id, buf)) = &mut *self.op {
            let id = *id;
            // A receive alone in a quiet engine waits as a blocking one
            // does, on the header word its message will start with.
            if let Some(r) = proc_.p2p.wait_posted_direct(id, buf) {
                // Its slot is finished, and `Op::Recv` owns nothing (a slot
                // number, a borrow): forgotten, so neither the drop glue
                // nor `Drop` runs.
                std::mem::forget(self);
                return r;
            }
            return self.wait_recv_general(id);
        }
        if self.slots().is_empty() {
            return self.finish_unlocked();
        }
        if let Some(Op::RecvMany(ids, buf)) = &mut *self.op {
            // The window's buffer is lent to progress for the wait, which
            // ends (no deadline) only once every receive is finished,
            // errors or not. (Copied, not taken: should progress panic, the
            // drop still finds every slot.)
            let ids = ids.clone();
            let r = proc_
                .p2p
                .wait_until_into(None, &mut [(ids[0], &mut **buf)], |e, sinks| {
                    ids.iter()
                        .all(|&id| e.is_complete(id))
                        .then(|| finish_many(e, &ids, &mut *sinks[0].1))
                });
            *self.op = None;
            return r;
        }
        let id = self.slots()[0];
        proc_
            .p2p
            .wait_until(None, |e| e.is_complete(id).then(|| self.finish(e)))
    }

    /// [`wait`](Self::wait) of the receive in slot `id` that the direct
    /// wait did not take: its buffer is lent to progress for the wait, as
    /// `wait_all` lends it, so the message lands there directly, not in
    /// the slot's own buffer and then again here. The request keeps the
    /// slot unless it is finished (a failed wait leaves it to the drop).
    #[inline(never)]
    fn wait_recv_general(mut self, id: SlotId) -> Result<Status> {
        let proc_ = self.proc_;
        let Some(Op::Recv(_, buf)) = &mut *self.op else {
            unreachable!("wait_recv_general of a receive");
        };
        let mut finished = false;
        let r = proc_
            .p2p
            .wait_until_into(None, &mut [(id, &mut **buf)], |e, sinks| {
                e.is_complete(id).then(|| {
                    finished = true;
                    e.finish_recv(id, &mut *sinks[0].1)
                })
            });
        if finished {
            *self.op = None;
        }
        r
    }

    fn finish_unlocked(&mut self) -> Result<Status> {
        match self.op.take() {
            Some(Op::Done(st)) => Ok(st),
            _ => unreachable!("only slot-less requests finish unlocked"),
        }
    }

    /// Makes progress once and reports completion (`MPI_Test`): `Some`
    /// with the status when complete (the request is then spent).
    ///
    /// # Errors
    /// As [`wait`](Self::wait); also `Request` when the request was already
    /// completed.
    pub fn test(&mut self) -> Result<Option<Status>> {
        if self.op.is_none() {
            return Err(crate::Error::new(
                crate::ErrorClass::Request,
                "test on a request that has already completed",
            ));
        }
        if self.slots().is_empty() {
            return self.finish_unlocked().map(Some);
        }
        let proc_ = self.proc_;
        let mut e = proc_.p2p.lock();
        if !self.is_complete(&e) {
            match self.sink() {
                Some(sink) => proc_.p2p.progress(&mut e, &mut [sink]),
                None => proc_.p2p.progress(&mut e, &mut []),
            };
        }
        if self.is_complete(&e) {
            return self.finish(&mut e).map(Some);
        }
        Ok(None)
    }

    /// Cancels a receive that has not matched a message yet
    /// (`MPI_Cancel`, MPI 4.1 §3.8.4): true when it was cancelled (the
    /// request is then empty); false when a message has matched it, or it
    /// is not a single receive (a send, a window of `irecv_many`): it then
    /// completes as usual.
    pub fn cancel(&mut self) -> bool {
        let Some(Op::Recv(id, _)) = &*self.op else {
            return false;
        };
        let id = *id;
        let cancelled = self.proc_.p2p.lock().cancel_recv(id);
        if cancelled {
            *self.op = None;
        }
        cancelled
    }

    /// The slot and generation of a single receive that has not matched a
    /// message yet (`None` otherwise): how `MPI_Cancel` on another thread
    /// reaches it while this request waits
    /// ([`Communicator::cancel_posted`](super::Communicator::cancel_posted)).
    pub(crate) fn posted_slot(&self) -> Option<(SlotId, u32)> {
        let id = self.recv_slot()?;
        let gen = self.proc_.p2p.lock().posted_gen(id)?;
        Some((id, gen))
    }

    /// The slot of a single receive (`None` for any other request), with
    /// no lock: [`posted_slot`](Self::posted_slot) without the generation,
    /// for a caller that reads many under one lock
    /// (`Communicator::posted_gens`).
    pub(crate) fn recv_slot(&self) -> Option<SlotId> {
        match &*self.op {
            Some(Op::Recv(id, _)) => Some(*id),
            _ => None,
        }
    }

    /// Whether the request is spent (completed by `test`).
    pub fn is_null(&self) -> bool {
        self.op.is_none()
    }
}

impl Drop for Request<'_> {
    /// Nothing to do for a request that is done or was finished (the
    /// common case, tested inline: a window's requests are dropped by the
    /// dozen); a live one is let go out of line.
    #[inline]
    fn drop(&mut self) {
        if matches!(*self.op, None | Some(Op::Done(_))) {
            return;
        }
        self.let_go();
        drop(std::mem::take(&mut *self.op));
    }
}

impl Request<'_> {
    /// Lets a live request go (see [`Request`]): its send finishes in the
    /// background, its receive is cancelled or, matched, finishes into
    /// its slot's own buffer.
    #[cold]
    #[inline(never)]
    fn let_go(&mut self) {
        if let Some(Op::RecvMany(ids, _)) = &*self.op {
            // Receives only: the matched ones finish in the background
            // into their slots' own buffers (the borrow ends here, and the
            // first slot, whose buffer they shared, may be reused once
            // released), the rest are cancelled.
            let mut e = self.proc_.p2p.lock();
            for &id in ids {
                e.share_sink(id, id);
                e.orphan(id);
            }
            return;
        }
        let Some(&id) = self.slots().first() else {
            return;
        };
        let p2p = &self.proc_.p2p;
        let mut e = p2p.lock();
        if e.is_borrowing(id) {
            // A rendezvous send: the receiver reads the buffer until it
            // acks, and the borrow ends with this handle, so wait here
            // (the wait keeps the engine moving). The outcome was not
            // asked for.
            drop(e);
            let _ = p2p.wait_until(None, |e| e.is_complete(id).then_some(Ok(())));
            e = p2p.lock();
        }
        e.orphan(id);
    }
}

/// Waits for the posted receives of `sinks` (slot and buffer each),
/// every buffer lent to progress for the whole wait, then finishes each
/// under one lock and hands `each` its position and outcome. `Err` when
/// the wait fails: then nothing is finished.
pub(crate) fn wait_recvs(
    proc_: &Process,
    sinks: crate::p2p::Sinks<'_, '_>,
    mut each: impl FnMut(usize, Result<Status>),
) -> Result<()> {
    // The receives complete mostly in order: each look starts at the
    // first one not yet seen complete.
    let mut k = 0;
    proc_.p2p.wait_until_into(None, sinks, |e, sinks| {
        while k < sinks.len() && e.is_complete(sinks[k].0) {
            k += 1;
        }
        (k == sinks.len()).then_some(Ok(()))
    })?;
    let mut e = proc_.p2p.lock();
    for (i, (id, buf)) in sinks.iter_mut().enumerate() {
        each(i, e.finish_recv(*id, buf));
    }
    Ok(())
}

/// Whether every request of `reqs` completed when it started or was
/// finished already (nothing left to wait for or lock).
#[inline]
fn all_done(reqs: &[Request<'_>]) -> bool {
    reqs.iter()
        .all(|r| matches!(*r.op, None | Some(Op::Done(_))))
}

/// Waits for all requests (`MPI_Waitall`), returning their statuses in
/// order.
///
/// # Errors
/// The first error among them; all are completed regardless.
pub fn wait_all(mut reqs: Vec<Request<'_>>) -> Result<Vec<Status>> {
    // Every one complete already (a window of short sends the ring took
    // at their call): their statuses straight into the vector returned,
    // 40 instructions per request fewer than through `wait_all_with` and
    // `Collected` (`docs/benchmarks.md`, "Issue 6, sixteenth pass").
    if all_done(&reqs) {
        return Ok(reqs
            .into_iter()
            .map(|r| r.into_done().unwrap_or_else(|_| Status::null()))
            .collect());
    }
    let mut out = Collected::with_capacity(reqs.len());
    wait_all_with(&mut reqs, |_, r| out.push(r));
    out.finish()
}

/// As [`wait_all`], with each request's own outcome: every receive
/// buffer is lent to progress for the whole wait, so rendezvous and
/// pipelined messages land straight in them.
pub fn wait_all_each(mut reqs: Vec<Request<'_>>) -> Vec<Result<Status>> {
    let mut out = Vec::with_capacity(reqs.len());
    wait_all_with(&mut reqs, |_, r| out.push(r));
    out
}

/// The core of [`wait_all_each`], in place: waits for every request of
/// `reqs` (all spent afterwards) and hands each outcome to `each` with
/// its index, in order, with no vector of operations or outcomes between
/// (the C `MPI_Waitall` writes each status where it goes). `each` runs
/// with the engine lock held: it must not call into the engine (nor drop
/// anything that does, such as a lend).
pub(crate) fn wait_all_with(reqs: &mut [Request<'_>], mut each: impl FnMut(usize, Result<Status>)) {
    let Some(proc_) = reqs.first().map(|r| r.proc_) else {
        return;
    };
    // Every one complete already (a window of short sends the ring took
    // at their call): their outcomes, with no lock, progress or vectors.
    if all_done(reqs) {
        for (i, r) in reqs.iter_mut().enumerate() {
            let st = match r.op.take() {
                Some(Op::Done(st)) => st,
                _ => Status::null(),
            };
            each(i, Ok(st));
        }
        return;
    }
    // Lend every receive buffer to progress for the whole wait; the other
    // operations are waited for by their slots.
    let mut sinks: Vec<(SlotId, &mut [u8])> = Vec::with_capacity(reqs.len());
    let mut sends = Vec::new();
    for r in reqs.iter_mut() {
        match &mut *r.op {
            Some(Op::Recv(id, buf)) => sinks.push((*id, &mut **buf)),
            Some(Op::RecvMany(ids, buf)) => {
                sinks.push((ids[0], &mut **buf));
                sends.extend_from_slice(&ids[1..]);
            }
            Some(Op::Send(id)) | Some(Op::Coll(id, _)) => sends.push(*id),
            _ => {}
        }
    }
    let waited = proc_.p2p.wait_until_into(None, &mut sinks, |e, sinks| {
        (sends.iter().all(|&id| e.is_complete(id))
            && sinks.iter().all(|(id, _)| e.is_complete(*id)))
        .then_some(Ok(()))
    });
    drop(sinks);
    if let Err(err) = waited {
        // The wait itself failed: the operations stay in their requests,
        // whose drops clean them up; every request gets the error.
        for (i, _) in reqs.iter().enumerate() {
            each(i, Err(err.clone()));
        }
        return;
    }
    let mut e = proc_.p2p.lock();
    for (i, r) in reqs.iter_mut().enumerate() {
        let res = match r.op.take() {
            None => Ok(Status::null()),
            Some(Op::Done(st)) => Ok(st),
            Some(Op::Send(id)) => e.finish_send(id).map(|()| Status::null()),
            Some(Op::Recv(id, buf)) => e.finish_recv(id, buf),
            Some(Op::RecvMany(ids, buf)) => finish_many(&mut e, &ids, buf),
            Some(Op::Coll(id, fin)) => finish_coll(&mut e, id, fin),
        };
        each(i, res);
    }
}

/// Finishes every receive of a window into one buffer: the last one's
/// status, or the first error (all are finished either way).
fn finish_many(e: &mut crate::p2p::Engine, ids: &[SlotId], buf: &mut [u8]) -> Result<Status> {
    let mut last = Ok(Status::null());
    for &id in ids {
        let r = e.finish_recv(id, buf);
        if last.is_ok() {
            last = r;
        }
    }
    last
}

/// Finishes a nonblocking collective: its result into the caller's
/// buffer, or its error.
fn finish_coll(e: &mut crate::p2p::Engine, id: SlotId, fin: Option<Finish<'_>>) -> Result<Status> {
    let (mut task, r) = e.finish_task(id);
    r?;
    if let Some(f) = fin {
        f(task.as_any());
    }
    Ok(Status::null())
}

/// The statuses of finished requests in order, or the first error (every
/// request is finished either way; a failed one's status is empty).
fn collect(results: impl Iterator<Item = Result<Status>>) -> Result<Vec<Status>> {
    let mut out = Collected::with_capacity(results.size_hint().0);
    for r in results {
        out.push(r);
    }
    out.finish()
}

/// Outcomes gathered in order as [`collect`] gives them.
struct Collected {
    statuses: Vec<Status>,
    first_err: Option<Error>,
}

impl Collected {
    #[inline]
    fn with_capacity(n: usize) -> Self {
        Collected {
            statuses: Vec::with_capacity(n),
            first_err: None,
        }
    }

    #[inline(always)]
    fn push(&mut self, r: Result<Status>) {
        match r {
            Ok(s) => self.statuses.push(s),
            Err(err) => {
                self.statuses.push(Status::null());
                self.first_err.get_or_insert(err);
            }
        }
    }

    #[inline]
    fn finish(self) -> Result<Vec<Status>> {
        match self.first_err {
            Some(e) => Err(e),
            None => Ok(self.statuses),
        }
    }
}

/// Tests all requests (`MPI_Testall`): `Some` with every status once all
/// are complete (all then become `None`), else `None` and none is
/// consumed.
///
/// # Errors
/// The first error among them once all are complete.
pub fn test_all(reqs: &mut [Option<Request<'_>>]) -> Result<Option<Vec<Status>>> {
    let Some(proc_) = reqs.iter().flatten().next().map(|r| r.proc_) else {
        return Ok(Some(vec![Status::null(); reqs.len()]));
    };
    let mut e = proc_.p2p.lock();
    proc_.p2p.progress(&mut e, &mut []);
    let all = reqs.iter().flatten().all(|r| r.is_complete(&e));
    if !all {
        return Ok(None);
    }
    collect(reqs.iter_mut().map(|r| match r.take() {
        None => Ok(Status::null()),
        Some(mut r) => r.finish(&mut e),
    }))
    .map(Some)
}

/// Waits until one request completes (`MPI_Waitany`): returns its index and
/// status and sets it to `None`. `None` when every entry is `None`.
///
/// # Errors
/// The completed request's error.
pub fn wait_any(reqs: &mut [Option<Request<'_>>]) -> Result<Option<(usize, Status)>> {
    let Some(proc_) = reqs.iter().flatten().next().map(|r| r.proc_) else {
        return Ok(None);
    };
    proc_.p2p.wait_until(None, |e| {
        let i = reqs
            .iter()
            .position(|r| r.as_ref().is_some_and(|r| r.is_complete(e)))?;
        let mut r = reqs[i].take().expect("found above");
        Some(r.finish(e).map(|s| Some((i, s))))
    })
}

/// Waits until at least one request completes (`MPI_Waitsome`): returns the
/// indices and statuses of all that have, setting them to `None`. Empty
/// when every entry is `None`.
///
/// # Errors
/// The first error among the completed ones.
pub fn wait_some(reqs: &mut [Option<Request<'_>>]) -> Result<Vec<(usize, Status)>> {
    let Some(proc_) = reqs.iter().flatten().next().map(|r| r.proc_) else {
        return Ok(Vec::new());
    };
    proc_.p2p.wait_until(None, |e| {
        let ready: Vec<usize> = reqs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.as_ref().is_some_and(|r| r.is_complete(e)))
            .map(|(i, _)| i)
            .collect();
        if ready.is_empty() {
            return None;
        }
        let mut out = Vec::with_capacity(ready.len());
        let mut first_err = None;
        for i in ready {
            let mut r = reqs[i].take().expect("ready");
            match r.finish(e) {
                Ok(s) => out.push((i, s)),
                Err(err) => {
                    first_err.get_or_insert(err);
                }
            }
        }
        Some(match first_err {
            Some(err) => Err(err),
            None => Ok(out),
        })
    })
}

/// A message taken by a matched probe (`MPI_Message`); only
/// [`Message::recv`] can receive it.
#[derive(Debug)]
#[must_use = "a matched message must be received"]
pub struct Message<'a> {
    proc_: &'a Process,
    slot: Option<SlotId>,
}

impl<'a> Message<'a> {
    pub(crate) fn new(proc_: &'a Process, id: SlotId) -> Message<'a> {
        Message {
            proc_,
            slot: Some(id),
        }
    }

    pub(crate) fn null(proc_: &'a Process) -> Message<'a> {
        Message { proc_, slot: None }
    }

    /// Receives the message into `buf` (`MPI_Mrecv`).
    ///
    /// # Errors
    /// `Truncate` when it is longer than `buf` (it is consumed anyway).
    pub fn recv<T: crate::datatype::Scalar>(mut self, buf: &mut [T]) -> Result<Status> {
        let Some(id) = self.slot.take() else {
            return Ok(Status::null());
        };
        let bytes = crate::transport::bytes::as_bytes_mut(buf);
        let proc_ = self.proc_;
        // Lend the buffer: a rendezvous is copied straight into it.
        proc_
            .p2p
            .wait_until_into(None, &mut [(id, bytes)], |e, sinks| {
                e.is_complete(id).then(|| e.finish_recv(id, sinks[0].1))
            })
    }
}

impl Drop for Message<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.slot {
            self.proc_.p2p.lock().orphan(id);
        }
    }
}
