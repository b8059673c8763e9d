//! Communicators: the user-facing handle for point-to-point and
//! collective calls.
//!
//! Layer L5 (imports L0–L3). This communicator is the world (and
//! self) communicator with point-to-point and a p2p barrier; groups,
//! context-id agreement, dup/create/split and intercommunicators come with
//! the communicator issue (MPI 4.1 §7).
#![forbid(unsafe_code)]

mod request;

pub use request::{test_all, wait_all, wait_any, wait_some, Message, Request};

use crate::datatype::Scalar;
use crate::error::{Error, ErrorClass, Result};
use crate::p2p::{self, Context, SendStart, Shared, Status, PROC_NULL};
use crate::sync::{AtomicU32, Ordering};
use crate::transport::bytes::{as_bytes, as_bytes_mut};
use std::sync::Arc;

/// State shared by every handle of one initialised process.
#[derive(Debug)]
pub(crate) struct Process {
    pub(crate) p2p: Shared,
    /// 0 running, 1 finalized.
    pub(crate) finalized: AtomicU32,
}

impl Process {
    pub(crate) fn new(p2p: Shared) -> Process {
        Process {
            p2p,
            finalized: AtomicU32::new(0),
        }
    }

    fn check(&self) -> Result<()> {
        // Relaxed: a flag set by this process's own finalize; calls that
        // race with finalize from another thread are erroneous in MPI.
        if self.finalized.load(Ordering::Relaxed) != 0 {
            return Err(Error::new(
                ErrorClass::Other,
                "shmpi is finalized: no communication is allowed after finalize",
            ));
        }
        Ok(())
    }
}

/// A communicator (`MPI_Comm`): a context and its members. Cheap to clone;
/// usable from any thread.
#[derive(Clone, Debug)]
pub struct Communicator {
    proc_: Arc<Process>,
    ctx: Context,
}

impl Communicator {
    pub(crate) fn new(proc_: Arc<Process>, ctx: Context) -> Communicator {
        Communicator { proc_, ctx }
    }

    /// This process's rank (`MPI_Comm_rank`).
    pub fn rank(&self) -> i32 {
        self.ctx.rank as i32
    }

    /// Number of members (`MPI_Comm_size`).
    pub fn size(&self) -> i32 {
        self.ctx.size() as i32
    }

    /// The context id (diagnostics).
    pub fn context_id(&self) -> u32 {
        self.ctx.id
    }

    fn shared(&self) -> &Shared {
        &self.proc_.p2p
    }

    fn context_for(&self, coll: bool) -> u32 {
        if coll {
            self.ctx.coll_id()
        } else {
            self.ctx.id
        }
    }

    /// Checks a send's arguments: `None` for `PROC_NULL`, else the
    /// destination's world rank and the context id to use.
    fn send_route(&self, dest: i32, tag: i32, coll: bool) -> Result<Option<(usize, u32)>> {
        self.proc_.check()?;
        p2p::check_send_tag(tag)?;
        Ok(self.ctx.dest(dest)?.map(|w| (w, self.context_for(coll))))
    }

    /// Checks a receive's (or probe's) arguments: `None` for `PROC_NULL`,
    /// else the context id to match on.
    fn recv_route(&self, src: i32, tag: i32, coll: bool) -> Result<Option<u32>> {
        self.proc_.check()?;
        p2p::check_recv_tag(tag)?;
        Ok(self.ctx.source(src)?.then(|| self.context_for(coll)))
    }

    fn send_bytes(&self, data: &[u8], dest: i32, tag: i32, sync: bool, coll: bool) -> Result<()> {
        let Some((world, cid)) = self.send_route(dest, tag, coll)? else {
            return Ok(());
        };
        let (start, ack) = {
            let mut e = self.shared().lock();
            e.start_send(cid, self.ctx.rank as u32, world, tag, data, sync)
        };
        if let SendStart::Partial(mut out) = start {
            self.shared()
                .wait_until(None, |e| e.resume_send(&mut out, data).then_some(Ok(())))?;
        }
        if let Some(id) = ack {
            self.shared().wait_until(None, |e| {
                e.is_complete(id).then(|| {
                    e.finish_send(id);
                    Ok(())
                })
            })?;
        }
        Ok(())
    }

    fn recv_bytes(&self, buf: &mut [u8], src: i32, tag: i32, coll: bool) -> Result<Status> {
        let Some(cid) = self.recv_route(src, tag, coll)? else {
            return Ok(Status::null());
        };
        let sh = self.shared();
        if src >= 0 {
            let peer = self.ctx.ranks[src as usize];
            if let Some(r) = sh.recv_direct(cid, src, peer, tag, buf) {
                return r;
            }
        }
        let id = {
            // Post and make one round of progress under one lock: a
            // message already in the ring completes here.
            let mut e = sh.lock();
            let id = e.post_recv(cid, src, tag, buf.len());
            if !e.is_complete(id) {
                sh.progress(&mut e, &mut [(id, &mut *buf)]);
            }
            if e.is_complete(id) {
                return e.finish_recv(id, buf);
            }
            id
        };
        sh.wait_until_into(None, &mut [(id, buf)], |e, sinks| {
            e.is_complete(id).then(|| e.finish_recv(id, sinks[0].1))
        })
    }

    /// Sends `buf` to `dest` with `tag` (`MPI_Send`, standard mode: returns
    /// once the buffer may be reused).
    ///
    /// # Errors
    /// `Rank` for a destination out of range, `Tag` for a negative tag,
    /// `Other` after finalize.
    ///
    /// # MPI
    /// MPI 4.1 §3.2.1.
    pub fn send<T: Scalar>(&self, buf: &[T], dest: i32, tag: i32) -> Result<()> {
        self.send_bytes(as_bytes(buf), dest, tag, false, false)
    }

    /// Synchronous send (`MPI_Ssend`): returns once the receiver has
    /// matched the message.
    ///
    /// # Errors
    /// As [`send`](Self::send).
    ///
    /// # MPI
    /// MPI 4.1 §3.4.
    pub fn ssend<T: Scalar>(&self, buf: &[T], dest: i32, tag: i32) -> Result<()> {
        self.send_bytes(as_bytes(buf), dest, tag, true, false)
    }

    /// Receives into `buf` from `src` (or `ANY_SOURCE`) with `tag` (or
    /// `ANY_TAG`) (`MPI_Recv`).
    ///
    /// # Errors
    /// `Rank`, `Tag`; `Truncate` when the message is longer than `buf`
    /// (the message is consumed; [`Error::status`] tells its source, tag
    /// and length).
    ///
    /// # MPI
    /// MPI 4.1 §3.2.4.
    pub fn recv<T: Scalar>(&self, buf: &mut [T], src: i32, tag: i32) -> Result<Status> {
        self.recv_bytes(as_bytes_mut(buf), src, tag, false)
    }

    /// Starts a standard-mode send (`MPI_Isend`).
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub fn isend<'a, T: Scalar>(
        &'a self,
        buf: &'a [T],
        dest: i32,
        tag: i32,
    ) -> Result<Request<'a>> {
        self.isend_bytes(as_bytes(buf), dest, tag, false, false)
    }

    /// Starts a synchronous send (`MPI_Issend`).
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub fn issend<'a, T: Scalar>(
        &'a self,
        buf: &'a [T],
        dest: i32,
        tag: i32,
    ) -> Result<Request<'a>> {
        self.isend_bytes(as_bytes(buf), dest, tag, true, false)
    }

    pub(crate) fn isend_bytes<'a>(
        &'a self,
        data: &'a [u8],
        dest: i32,
        tag: i32,
        sync: bool,
        coll: bool,
    ) -> Result<Request<'a>> {
        let Some((world, cid)) = self.send_route(dest, tag, coll)? else {
            return Ok(Request::done(&self.proc_, Status::null()));
        };
        let mut e = self.shared().lock();
        let (start, ack) = e.start_send(cid, self.ctx.rank as u32, world, tag, data, sync);
        let slot = match (start, ack) {
            (SendStart::Done, None) => {
                drop(e);
                return Ok(Request::done(&self.proc_, Status::null()));
            }
            (SendStart::Done, Some(id)) => id,
            (SendStart::Partial(out), ack) => e.queue_send(out, data, ack),
        };
        drop(e);
        Ok(Request::send(&self.proc_, slot))
    }

    /// Starts a receive (`MPI_Irecv`). The buffer stays borrowed until the
    /// request completes.
    ///
    /// # Errors
    /// `Rank`, `Tag`.
    pub fn irecv<'a, T: Scalar>(
        &'a self,
        buf: &'a mut [T],
        src: i32,
        tag: i32,
    ) -> Result<Request<'a>> {
        self.irecv_bytes(as_bytes_mut(buf), src, tag, false)
    }

    pub(crate) fn irecv_bytes<'a>(
        &'a self,
        buf: &'a mut [u8],
        src: i32,
        tag: i32,
        coll: bool,
    ) -> Result<Request<'a>> {
        let Some(cid) = self.recv_route(src, tag, coll)? else {
            return Ok(Request::done(&self.proc_, Status::null()));
        };
        let id = self.shared().lock().post_recv(cid, src, tag, buf.len());
        Ok(Request::recv(&self.proc_, id, buf))
    }

    /// Sends and receives in one call (`MPI_Sendrecv`), without deadlock
    /// when two ranks exchange.
    ///
    /// # Errors
    /// As [`send`](Self::send) and [`recv`](Self::recv).
    #[allow(clippy::too_many_arguments)]
    pub fn sendrecv<T: Scalar, U: Scalar>(
        &self,
        sbuf: &[T],
        dest: i32,
        stag: i32,
        rbuf: &mut [U],
        src: i32,
        rtag: i32,
    ) -> Result<Status> {
        let r = self.irecv(rbuf, src, rtag)?;
        let s = self.isend(sbuf, dest, stag)?;
        s.wait()?;
        r.wait()
    }

    /// Waits for a matching message without receiving it (`MPI_Probe`).
    ///
    /// # Errors
    /// `Rank`, `Tag`.
    pub fn probe(&self, src: i32, tag: i32) -> Result<Status> {
        let Some(cid) = self.recv_route(src, tag, false)? else {
            return Ok(Status::null());
        };
        self.shared()
            .wait_until(None, |e| e.iprobe(cid, src, tag).map(Ok))
    }

    /// Checks for a matching message without receiving it (`MPI_Iprobe`).
    ///
    /// # Errors
    /// `Rank`, `Tag`.
    pub fn iprobe(&self, src: i32, tag: i32) -> Result<Option<Status>> {
        let Some(cid) = self.recv_route(src, tag, false)? else {
            return Ok(Some(Status::null()));
        };
        let sh = self.shared();
        let mut e = sh.lock();
        sh.progress(&mut e, &mut []);
        Ok(e.iprobe(cid, src, tag))
    }

    /// Waits for a matching message and takes it out of matching, so that
    /// only [`Message::recv`] receives it (`MPI_Mprobe`).
    ///
    /// # Errors
    /// `Rank`, `Tag`.
    pub fn mprobe(&self, src: i32, tag: i32) -> Result<(Message<'_>, Status)> {
        let Some(cid) = self.recv_route(src, tag, false)? else {
            return Ok((Message::null(&self.proc_), Status::null()));
        };
        let (id, st) = self
            .shared()
            .wait_until(None, |e| e.improbe(cid, src, tag).map(Ok))?;
        Ok((Message::new(&self.proc_, id), st))
    }

    /// As [`mprobe`](Self::mprobe), without waiting (`MPI_Improbe`).
    ///
    /// # Errors
    /// `Rank`, `Tag`.
    pub fn improbe(&self, src: i32, tag: i32) -> Result<Option<(Message<'_>, Status)>> {
        let Some(cid) = self.recv_route(src, tag, false)? else {
            return Ok(Some((Message::null(&self.proc_), Status::null())));
        };
        let sh = self.shared();
        let mut e = sh.lock();
        sh.progress(&mut e, &mut []);
        Ok(e.improbe(cid, src, tag)
            .map(|(id, st)| (Message::new(&self.proc_, id), st)))
    }

    /// Blocks until every member has called it (`MPI_Barrier`); a
    /// dissemination barrier over point-to-point on the collective
    /// context, ⌈log2 n⌉ rounds.
    ///
    /// # Errors
    /// `Other` after finalize.
    pub fn barrier(&self) -> Result<()> {
        self.proc_.check()?;
        let n = self.ctx.size() as i32;
        let me = self.rank();
        let mut k = 1;
        let mut round = 0;
        while k < n {
            let to = (me + k) % n;
            let from = (me - k + n) % n;
            let s = self.isend_bytes(&[], to, round, false, true)?;
            self.recv_bytes(&mut [], from, round, true)?;
            s.wait()?;
            k *= 2;
            round += 1;
        }
        Ok(())
    }

    /// The rank used for the null process.
    pub const PROC_NULL: i32 = PROC_NULL;
}
