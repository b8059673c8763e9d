//! Nonblocking collectives built in the C layer (MPI 4.1 §6.12) for what
//! the Rust layer has no schedule for: one round of point-to-point
//! messages on the communicator's collective context, with the tag of
//! the communicator's next nonblocking collective (members agree on it by
//! starting collectives in the same order), then a local last step that
//! unpacks (and, for reductions, folds in rank order).
//!
//! Every message is posted when the collective starts, so the operation
//! progresses with the engine like any other request: a program may start
//! it, do point-to-point work the other members need, and complete it
//! later. The algorithms are linear (each rank sends its part straight to
//! each rank that needs it), which suits one node; the Rust layer's own
//! schedules stay in use where it has them (`Ibarrier`, `Ibcast`,
//! `Ireduce` / `Iallreduce` with predefined operations).

use super::coll::{
    addrs, check_root, in_place, not_in_place, overlap, pack_at, unpack_at, v_args, w_blocks,
    w_blocks_at, Block, Red, Span,
};
use super::p2p::{give_request, nbytes, staging_buf, Ptr, Req, ReqState};
use super::types::{committed, Reduction, TypeObj};
use super::{array, bytes, bytes_mut, comm_obj, count, guard, h, CommObj};
use super::{CountElem, DisplElem};
use crate::comm::{Request, Topology};
use crate::error::{Error, ErrorClass, Result};
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// The last step of a schedule, given its buffers.
type Last = Box<dyn FnOnce(&mut [Vec<u8>]) -> Result<()> + Send>;

/// A collective in flight: its messages and buffers, and its last step.
pub(crate) struct Multi {
    /// Field order matters: the requests borrow `bufs`' heap buffers and
    /// drop first.
    reqs: Vec<Option<Request<'static>>>,
    /// The length each receive among `reqs` expects (`None`: a send).
    expect: Vec<Option<usize>>,
    bufs: Vec<Vec<u8>>,
    last: Option<Last>,
    err: Option<Error>,
}

/// A received message shorter than its receive expected: the members
/// passed different counts or types (a longer one is a truncation).
fn short(st: &crate::p2p::Status, want: Option<usize>) -> Option<Error> {
    let want = want?;
    (st.bytes < want).then(|| {
        Error::new(
            ErrorClass::Count,
            format!(
                "rank {} sent {} bytes where this rank expected {want}: the members passed \
                 different counts or types to the collective",
                st.source, st.bytes
            ),
        )
    })
}

impl std::fmt::Debug for Multi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Multi({} messages)", self.reqs.len())
    }
}

impl Multi {
    /// Tests every pending message once; true when all are complete.
    pub(crate) fn test(&mut self) -> bool {
        let mut all = true;
        for (slot, &want) in self.reqs.iter_mut().zip(&self.expect) {
            let Some(r) = slot else { continue };
            match r.test() {
                Ok(None) => all = false,
                Ok(Some(st)) => {
                    if let Some(e) = short(&st, want) {
                        self.err.get_or_insert(e);
                    }
                    *slot = None;
                }
                Err(e) => {
                    self.err.get_or_insert(e);
                    *slot = None;
                }
            }
        }
        all
    }

    /// Waits for every message, then runs the last step.
    pub(crate) fn wait(mut self) -> std::result::Result<super::p2p::CStatus, Error> {
        for (slot, &want) in self.reqs.iter_mut().zip(&self.expect) {
            if let Some(r) = slot.take() {
                match r.wait() {
                    Ok(st) => {
                        if let Some(e) = short(&st, want) {
                            self.err.get_or_insert(e);
                        }
                    }
                    Err(e) => {
                        self.err.get_or_insert(e);
                    }
                }
            }
        }
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        if let Some(last) = self.last.take() {
            last(&mut self.bufs)?;
        }
        Ok(super::p2p::CStatus::empty())
    }
}

/// Builds a schedule.
struct Sched {
    comm: Arc<CommObj>,
    tag: i32,
    m: Multi,
}

thread_local! {
    /// The tag a persistent collective took at its init, for the schedule
    /// its start builds on this thread ([`with_tag`]).
    static FIXED_TAG: std::cell::Cell<Option<i32>> = const { std::cell::Cell::new(None) };
}

/// Runs `f`, whose one schedule takes `tag` instead of the communicator's
/// next nonblocking-collective tag: a persistent collective's start
/// matches by the order of the inits, whatever order the starts come in
/// (MPI 4.1 §6.13).
pub(crate) fn with_tag<R>(tag: i32, f: impl FnOnce() -> R) -> R {
    /// Clears the tag however `f` ends (a panic included, which the C
    /// boundary catches): a tag left set would be taken by the thread's
    /// next schedule on any communicator.
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            FIXED_TAG.with(|t| t.set(None));
        }
    }
    let _clear = Clear;
    FIXED_TAG.with(|t| t.set(Some(tag)));
    f()
}

impl Sched {
    fn new(comm: &Arc<CommObj>) -> Sched {
        let tag = FIXED_TAG
            .with(|t| t.take())
            .unwrap_or_else(|| comm.comm.next_nbc_tag());
        Sched {
            comm: comm.clone(),
            tag,
            m: Multi {
                reqs: Vec::new(),
                expect: Vec::new(),
                bufs: Vec::new(),
                last: None,
                err: None,
            },
        }
    }

    /// Keeps `data` (no message); its index in the buffers.
    fn keep(&mut self, data: Vec<u8>) -> usize {
        self.m.bufs.push(data);
        self.m.bufs.len() - 1
    }

    /// Sends `data` to `dest` (a rank of the communicator, not this one).
    fn send(&mut self, data: Vec<u8>, dest: usize) -> Result<()> {
        self.send_to(data, dest, false, self.tag)
    }

    /// Sends `data` to member `dest` of this process's own group of an
    /// intercommunicator (on its local context).
    fn send_local(&mut self, data: Vec<u8>, dest: usize) -> Result<()> {
        self.send_to(data, dest, true, self.tag)
    }

    /// Sends `data` to `dest` with `tag` (one of the communicator's
    /// nonblocking-collective tags, taken in the same order by every
    /// member), on the group's local context if `local`.
    fn send_to(&mut self, data: Vec<u8>, dest: usize, local: bool, tag: i32) -> Result<()> {
        let i = self.keep(data);
        let b = &self.m.bufs[i];
        // SAFETY: lifetime erasure of a borrow of the heap buffer of
        // `bufs[i]`, which is never resized and drops after the request
        // (`Multi`'s field order); moving the outer `Vec` does not move it.
        let view: &'static [u8] = unsafe { std::slice::from_raw_parts(b.as_ptr(), b.len()) };
        self.post_send(view, dest, local, tag)
    }

    /// Sends `view`, a block of the program's own send buffer, to `dest`:
    /// no packed copy; a large one goes by rendezvous, read straight out
    /// of it. MPI keeps the buffer the operation's until it completes.
    fn send_view(&mut self, view: &'static [u8], dest: usize) -> Result<()> {
        self.post_send(view, dest, false, self.tag)
    }

    /// Starts the send of `view` (a buffer of `bufs`, or of the program's
    /// that MPI keeps the operation's) to `dest` with `tag`, on the
    /// group's local context if `local`.
    fn post_send(&mut self, view: &'static [u8], dest: usize, local: bool, tag: i32) -> Result<()> {
        let c = &self.comm.comm;
        let r = if local {
            c.isend_local_bytes(view, dest, tag)?
        } else {
            c.isend_bytes(view, dest as i32, tag, false, true, None)?
        };
        // SAFETY: `view` outlives the request (its caller's promise) and
        // the process state is kept by `self.comm` (`erase`).
        let r = unsafe { erase(r) };
        self.m.reqs.push(Some(r));
        self.m.expect.push(None);
        Ok(())
    }

    /// Receives `view.len()` bytes from `src` straight into `view`, a
    /// block of the program's own receive buffer, which MPI keeps the
    /// operation's until it completes.
    fn recv_view(&mut self, view: &'static mut [u8], src: usize) -> Result<()> {
        self.post_recv(view, src, false, self.tag)
    }

    /// Starts the receive into `view` (as [`post_send`](Self::post_send)'s
    /// view) of exactly its length from `src` with `tag`.
    fn post_recv(
        &mut self,
        view: &'static mut [u8],
        src: usize,
        local: bool,
        tag: i32,
    ) -> Result<()> {
        let len = view.len();
        let c = &self.comm.comm;
        let r = if local {
            c.irecv_local_bytes(view, src, tag)?
        } else {
            c.irecv_bytes(view, src as i32, tag, true)?
        };
        // SAFETY: as in `post_send`.
        let r = unsafe { erase(r) };
        self.m.reqs.push(Some(r));
        self.m.expect.push(Some(len));
        Ok(())
    }

    /// Receives `len` bytes from `src`; the index of the buffer they land in.
    fn recv(&mut self, len: usize, src: usize) -> Result<usize> {
        self.recv_from(len, src, false, self.tag)
    }

    /// Receives `len` bytes from member `src` of this process's own group
    /// of an intercommunicator (on its local context).
    fn recv_local(&mut self, len: usize, src: usize) -> Result<usize> {
        self.recv_from(len, src, true, self.tag)
    }

    /// The receive of [`send_to`](Self::send_to).
    fn recv_from(&mut self, len: usize, src: usize, local: bool, tag: i32) -> Result<usize> {
        let i = self.keep(staging_buf(len)?);
        let b = &mut self.m.bufs[i];
        // SAFETY: as in `send_to`; nothing else touches `bufs[i]` until the
        // request is complete (the last step runs after every wait).
        let view: &'static mut [u8] =
            unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr(), b.len()) };
        self.post_recv(view, src, local, tag)?;
        Ok(i)
    }

    /// Runs the schedule to its end here (a blocking collective built
    /// as a schedule).
    fn run(
        mut self,
        last: impl FnOnce(&mut [Vec<u8>]) -> Result<()> + Send + 'static,
    ) -> Result<()> {
        self.m.last = Some(Box::new(last));
        self.m.wait().map(|_| ())
    }

    fn finish(
        mut self,
        request: *mut *mut c_void,
        last: impl FnOnce(&mut [Vec<u8>]) -> Result<()> + Send + 'static,
    ) -> Result<()> {
        self.m.last = Some(Box::new(last));
        give_request(
            Req {
                state: ReqState::Multi(Box::new(self.m)),
                comm: self.comm.into(),
            },
            request,
        )
    }
}

/// Erases a schedule's request lifetime.
///
/// # Safety
/// What `r` borrows must outlive it: the process state (kept alive by the
/// `Arc<CommObj>` of the `Req` the schedule becomes, which drops after
/// the requests) and a buffer of `bufs` (see `Sched::send`).
unsafe fn erase(r: Request<'_>) -> Request<'static> {
    // SAFETY: the caller's promise; only the lifetime changes.
    unsafe { std::mem::transmute::<Request<'_>, Request<'static>>(r) }
}

/// `MPI_Comm_idup`: rank 0 claims the context at the start and sends its
/// verdict to every other member, which posts a receive for it (on an
/// intercommunicator, the leader that claims for both groups sends it to
/// every member of the other group and of its own, on the local
/// context); the attributes are copied (their callbacks run)
/// and the info hints taken at the start, as `MPI_Comm_dup` would; the
/// last step (in the completing call) builds the communicator and
/// writes `*newcomm`, which MPI 4.1 §7.4.2 lets the program use only
/// after the request completes. No member waits for another at the
/// start (MPI 4.1 §6.12: "nonblocking collective calls are local").
pub(crate) fn idup(
    obj: &Arc<CommObj>,
    newcomm: *mut *mut c_void,
    request: *mut *mut c_void,
) -> Result<()> {
    idup_with(obj, newcomm, request, None, false)
}

/// [`idup`], the new communicator taking `hints` (`MPI_Comm_idup_with_info`)
/// or, with `None`, the parent's. With `discard` (a member whose
/// arguments were refused, `comm::idup_refused`), only its part of the
/// agreement: no attribute is copied, and the communicator made is
/// dropped at completion (freeing its context id without a collective);
/// `newcomm` is not written.
pub(crate) fn idup_with(
    obj: &Arc<CommObj>,
    newcomm: *mut *mut c_void,
    request: *mut *mut c_void,
    hints: Option<super::env::Info>,
    discard: bool,
) -> Result<()> {
    let inter = obj.comm.is_inter();
    let verdict = if inter {
        obj.comm.inter_dup_start()?
    } else {
        obj.comm.dup_start()?
    };
    // The attributes and info hints of the parent as it is now (the
    // program may free it before the request completes); a copy
    // callback's failure is the request's, after the agreement, so that
    // every member still gets rank 0's verdict.
    let attrs = if discard {
        Ok(Vec::new())
    } else {
        super::attr::copy_attrs(obj)
    };
    let hints = hints.unwrap_or_else(|| super::lock(&obj.info).clone());
    let mut s = Sched::new(obj);
    let at = match verdict {
        Some(v) => {
            if inter {
                for r in 0..remote(obj)? {
                    s.send(v.to_vec(), r)?;
                }
            }
            for r in 1..obj.comm.size() as usize {
                if inter {
                    s.send_local(v.to_vec(), r)?;
                } else {
                    s.send(v.to_vec(), r)?;
                }
            }
            s.keep(v.to_vec())
        }
        None if inter && obj.comm.inter_claims_here() => s.recv_local(8, 0)?,
        None => s.recv(8, 0)?,
    };
    let parent = obj.clone();
    let out = Ptr(newcomm.cast());
    s.finish(request, move |bufs| {
        let v: [u8; 8] = bufs[at][..8].try_into().expect("an 8-byte verdict");
        let c = if parent.comm.is_inter() {
            parent.comm.inter_dup_finish(&v)?
        } else {
            parent.comm.dup_finish(&v)?
        };
        // (On a copy's failure `c` drops here, its context given back.)
        let attrs = attrs?;
        if discard {
            drop(c);
            return Ok(());
        }
        let newcomm: *mut *mut c_void = out.get().cast();
        super::comm::give(&parent, Some(c), attrs, newcomm)?;
        let nh = h(super::read(newcomm, "newcomm")?);
        if let Ok(n) = comm_obj(nh) {
            *super::lock(&n.info) = hints;
        }
        Ok(())
    })
}

// ---- intercommunicators -----------------------------------------------------------

// Collectives between the two groups of an intercommunicator (MPI 4.1
// §6.2.2) as linear schedules: each message goes straight from a member
// of one group to the member of the other that needs it, on the
// intercommunicator's collective context with its next
// nonblocking-collective tag (the members of both groups start its
// collectives in the same order).

/// The size of the other group of intercommunicator `obj`.
fn remote(obj: &CommObj) -> Result<usize> {
    Ok(obj.comm.remote_size()? as usize)
}

/// A root argument of a rooted collective on an intercommunicator: this
/// process is the root (`MPI_ROOT`), another of its group
/// (`MPI_PROC_NULL`), or it sends to or receives from rank `r` of the
/// other group.
#[derive(Clone, Copy)]
pub(crate) enum InterRoot {
    Root,
    Idle,
    Other(usize),
}

pub(crate) fn inter_root(obj: &CommObj, root: c_int) -> Result<InterRoot> {
    match root {
        super::ROOT => Ok(InterRoot::Root),
        super::PROC_NULL => Ok(InterRoot::Idle),
        r if r >= 0 && (r as usize) < remote(obj)? => Ok(InterRoot::Other(r as usize)),
        r => Err(Error::new(
            ErrorClass::Root,
            format!(
                "root {r} on an intercommunicator: MPI_ROOT, MPI_PROC_NULL or a rank of the \
                 other group (0..{})",
                remote(obj)?
            ),
        )),
    }
}

/// The ranks a collective's blocks go to and come from: the members of
/// an intracommunicator, this one among them (`Some(rank)`), or of the
/// other group of an intercommunicator (`None`: no block of its own).
pub(crate) fn peers(obj: &CommObj) -> Result<(usize, Option<usize>)> {
    if obj.comm.is_inter() {
        Ok((remote(obj)?, None))
    } else {
        Ok((
            obj.comm.size().max(0) as usize,
            Some(obj.comm.rank() as usize),
        ))
    }
}

/// Whether this process is the root of a rooted collective, `root` as it
/// passed it (the root has every peer's counts).
fn is_root(obj: &CommObj, root: c_int) -> bool {
    if obj.comm.is_inter() {
        root == super::ROOT
    } else {
        root == obj.comm.rank()
    }
}

/// Where a process of a rooted collective stands: the root (`None`), or
/// another process, which sends to or receives from the root
/// (`Some(Some(root))`) or, in the root's group of an intercommunicator,
/// takes no part (`Some(None)`).
fn rooted(obj: &CommObj, root: c_int) -> Result<Option<Option<usize>>> {
    if obj.comm.is_inter() {
        return Ok(match inter_root(obj, root)? {
            InterRoot::Root => None,
            InterRoot::Idle => Some(None),
            InterRoot::Other(r) => Some(Some(r)),
        });
    }
    check_root(obj, root)?;
    Ok((root != obj.comm.rank()).then_some(Some(root as usize)))
}

/// `MPI_IN_PLACE` where this communicator does not allow it (an
/// intercommunicator's collectives).
fn no_place(obj: &CommObj, buf: *const c_void, call: &str) -> Result<()> {
    if obj.comm.is_inter() && in_place(buf) {
        return Err(Error::new(
            ErrorClass::Buffer,
            format!("MPI_IN_PLACE is not allowed in {call} on an intercommunicator"),
        ));
    }
    Ok(())
}

/// Runs a collective's schedule, started by `start` with a request it
/// makes, to its end here: the blocking collectives of an
/// intercommunicator.
pub(crate) fn blocking(start: impl FnOnce(*mut *mut c_void) -> Result<()>) -> Result<()> {
    let mut req: *mut c_void = std::ptr::null_mut();
    start(&mut req)?;
    super::p2p::wait_quietly(req)
}

/// `MPI_Ibarrier` on an intercommunicator: a message to and from every
/// member of the other group; complete once all of them have started it.
pub(crate) fn inter_ibarrier(obj: &Arc<CommObj>, request: *mut *mut c_void) -> Result<()> {
    empty_round(obj, 0..remote(obj)?, request)
}

/// `MPI_Ibcast` on an intercommunicator: the root (`MPI_ROOT`) sends to
/// every member of the other group, which receives from it.
pub(crate) fn inter_ibcast(
    obj: &Arc<CommObj>,
    buf: *mut c_void,
    n: usize,
    ty: &Arc<TypeObj>,
    root: c_int,
    request: *mut *mut c_void,
) -> Result<()> {
    let mut s = Sched::new(obj);
    match inter_root(obj, root)? {
        InterRoot::Root => {
            let data = ty.pack(buf, n)?;
            for r in 0..remote(obj)? {
                s.send(data.clone(), r)?;
            }
            s.finish(request, |_| Ok(()))
        }
        InterRoot::Idle => s.finish(request, |_| Ok(())),
        InterRoot::Other(r) => {
            let at = s.recv(nbytes(n, ty)?, r)?;
            let (dst, ty) = (Ptr(buf), ty.clone());
            s.finish(request, move |bufs| {
                unpack_at(&bufs[at], dst.get(), 0, n, &ty)
            })
        }
    }
}

/// `MPI_Reduce`, `MPI_Allreduce` or `MPI_Reduce_scatter(_block)` on an
/// intercommunicator, started (`request`) or run here: the result is
/// the other group's contributions (`n` elements each) folded in its
/// rank order, at the root (`MPI_ROOT`), at every member, or scattered
/// over this group by `counts` (MPI 4.1 §6.9.1, §6.11: both groups pass
/// vectors of the same length).
#[allow(clippy::too_many_arguments)]
pub(crate) fn inter_reduction(
    obj: &Arc<CommObj>,
    kind: Red,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: usize,
    red: Reduction,
    counts: Vec<usize>,
    request: Option<*mut *mut c_void>,
) -> Result<()> {
    no_place(obj, sbuf, "a reduction")?;
    let rsize = remote(obj)?;
    let ty = red.ty.clone();
    let len = nbytes(n, &ty)?;
    // Whom this process sends its contribution to; whether it folds the
    // other group's.
    let (to, folds): (Vec<usize>, bool) = match kind {
        Red::Allreduce | Red::Scatter => ((0..rsize).collect(), true),
        Red::Reduce(root) => match inter_root(obj, root)? {
            InterRoot::Root => (Vec::new(), true),
            InterRoot::Idle => (Vec::new(), false),
            InterRoot::Other(r) => (vec![r], false),
        },
        Red::Scan | Red::Exscan => {
            return Err(Error::new(
                ErrorClass::Comm,
                "MPI_Scan and MPI_Exscan need an intracommunicator",
            ))
        }
    };
    let mut s = Sched::new(obj);
    if !to.is_empty() {
        let data = ty.pack(sbuf, n)?;
        for r in to {
            s.send(data.clone(), r)?;
        }
    }
    let last: Last = if folds && rsize > 0 {
        let at: Vec<usize> = (0..rsize).map(|r| s.recv(len, r)).collect::<Result<_>>()?;
        let dst = Ptr(rbuf);
        let me = obj.comm.rank() as usize;
        Box::new(move |bufs: &mut [Vec<u8>]| {
            let acc = red.fold_ranks(|k| &bufs[at[k]][..], rsize - 1)?;
            match kind {
                Red::Scatter => {
                    let start = counts[..me].iter().sum::<usize>() * ty.size;
                    let mine = counts[me] * ty.size;
                    unpack_at(&acc[start..start + mine], dst.get(), 0, counts[me], &ty)
                }
                _ => unpack_at(&acc, dst.get(), 0, n, &ty),
            }
        })
    } else {
        Box::new(|_: &mut [Vec<u8>]| Ok(()))
    };
    match request {
        Some(req) => s.finish(req, last),
        None => s.run(last),
    }
}

fn intra(obj: &CommObj, call: &str) -> Result<()> {
    if obj.comm.is_inter() {
        return Err(Error::new(
            ErrorClass::Comm,
            format!("{call} is supported on intracommunicators only"),
        ));
    }
    Ok(())
}

fn uniform(n: usize, p: usize) -> Result<(Vec<usize>, Vec<isize>)> {
    Ok((vec![n; p], super::coll::even_displs(n, p)?))
}

// ---- gather / scatter / allgather / alltoall ---------------------------------------

/// Igather(v): `counts` / `displs` matter at the root only.
#[allow(clippy::too_many_arguments)]
fn igatherv<C: CountElem>(
    obj: &Arc<CommObj>,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    cd: Option<(Vec<usize>, Vec<isize>)>,
    rt: *mut c_void,
    root: c_int,
    request: *mut *mut c_void,
) -> Result<()> {
    let (p, me) = peers(obj)?;
    let stands = rooted(obj, root)?;
    let mut s = Sched::new(obj);
    match stands {
        Some(Some(root)) => {
            no_place(obj, sbuf, "MPI_Igather(v)")?;
            let sty = committed(h(st))?;
            let data = sty.pack(sbuf, count(sn, "sendcount")?)?;
            s.send(data, root)?;
            return s.finish(request, |_| Ok(()));
        }
        Some(None) => return s.finish(request, |_| Ok(())),
        None => {}
    }
    let (counts, displs) = cd.expect("the root has counts");
    let rty = committed(h(rt))?.arc();
    let own = match me {
        Some(_) if !in_place(sbuf) => {
            let sty = committed(h(st))?;
            Some(s.keep(sty.pack(sbuf, count(sn, "sendcount")?)?))
        }
        _ => None,
    };
    let mut at = vec![None; p];
    for i in (0..p).filter(|&i| Some(i) != me) {
        at[i] = Some(s.recv(nbytes(counts[i], &rty)?, i)?);
    }
    if let Some(me) = me {
        at[me] = own;
    }
    let dst = Ptr(rbuf);
    s.finish(request, move |bufs| {
        for i in 0..p {
            if let Some(k) = at[i] {
                unpack_at(&bufs[k], dst.get(), displs[i], counts[i], &rty)?;
            }
        }
        Ok(())
    })
}

/// The start of `MPI_Igather` on `obj` (also run to its end by the blocking
/// form on an intercommunicator, [`blocking`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_gather<C: CountElem>(
    obj: &Arc<CommObj>,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: C,
    rt: *mut c_void,
    root: c_int,
    request: *mut *mut c_void,
) -> Result<()> {
    let (p, _) = peers(obj)?;
    let cd = if is_root(obj, root) {
        Some(uniform(count(rn, "recvcount")?, p)?)
    } else {
        None
    };
    igatherv(obj, sbuf, sn, st, rbuf, cd, rt, root, request)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Igather(
    sbuf: *const c_void,
    sn: c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: c_int,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    igather_call::<c_int>(
        "MPI_Igather",
        sbuf,
        sn,
        st,
        rbuf,
        rn,
        rt,
        root,
        comm,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Igather_c(
    sbuf: *const c_void,
    sn: i64,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: i64,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    igather_call::<i64>(
        "MPI_Igather_c",
        sbuf,
        sn,
        st,
        rbuf,
        rn,
        rt,
        root,
        comm,
        request,
    )
}

/// `MPI_Igather(_c)` (`call`), generic over the count type of the two forms.
#[allow(clippy::too_many_arguments)]
fn igather_call<C: CountElem>(
    call: &str,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: C,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?.arc();
        start_gather(&obj, sbuf, sn, st, rbuf, rn, rt, root, request)
    })
}

/// The start of `MPI_Igatherv` on `obj` (also run to its end by the blocking
/// form on an intercommunicator, [`blocking`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_gatherv<C: CountElem, D: DisplElem>(
    obj: &Arc<CommObj>,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    displs: *const D,
    rt: *mut c_void,
    root: c_int,
    request: *mut *mut c_void,
) -> Result<()> {
    let (p, _) = peers(obj)?;
    let cd = if is_root(obj, root) {
        Some(v_args(rcounts, displs, p)?)
    } else {
        None
    };
    igatherv(obj, sbuf, sn, st, rbuf, cd, rt, root, request)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Igatherv(
    sbuf: *const c_void,
    sn: c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    igatherv_call::<c_int, c_int>(
        "MPI_Igatherv",
        sbuf,
        sn,
        st,
        rbuf,
        rcounts,
        displs,
        rt,
        root,
        comm,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Igatherv_c(
    sbuf: *const c_void,
    sn: i64,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const i64,
    displs: *const isize,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    igatherv_call::<i64, isize>(
        "MPI_Igatherv_c",
        sbuf,
        sn,
        st,
        rbuf,
        rcounts,
        displs,
        rt,
        root,
        comm,
        request,
    )
}

/// `MPI_Igatherv(_c)` (`call`), generic over the count and displacement types of the two forms.
#[allow(clippy::too_many_arguments)]
fn igatherv_call<C: CountElem, D: DisplElem>(
    call: &str,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    displs: *const D,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?.arc();
        start_gatherv(&obj, sbuf, sn, st, rbuf, rcounts, displs, rt, root, request)
    })
}

/// Iscatter(v): `counts` / `displs` matter at the root only.
#[allow(clippy::too_many_arguments)]
fn iscatterv<C: CountElem>(
    obj: &Arc<CommObj>,
    sbuf: *const c_void,
    cd: Option<(Vec<usize>, Vec<isize>)>,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: C,
    rt: *mut c_void,
    root: c_int,
    request: *mut *mut c_void,
) -> Result<()> {
    let (p, me) = peers(obj)?;
    let stands = rooted(obj, root)?;
    let mut s = Sched::new(obj);
    let dst = Ptr(rbuf);
    match stands {
        Some(Some(root)) => {
            no_place(obj, rbuf, "MPI_Iscatter(v)")?;
            let rty = committed(h(rt))?.arc();
            let rn = count(rn, "recvcount")?;
            let k = s.recv(nbytes(rn, &rty)?, root)?;
            return s.finish(request, move |bufs| {
                unpack_at(&bufs[k], dst.get(), 0, rn, &rty)
            });
        }
        Some(None) => return s.finish(request, |_| Ok(())),
        None => {}
    }
    let (counts, displs) = cd.expect("the root has counts");
    let sty = committed(h(st))?;
    for i in (0..p).filter(|&i| Some(i) != me) {
        let block = pack_at(sbuf, displs[i], counts[i], &sty)?;
        s.send(block, i)?;
    }
    let Some(me) = me.filter(|_| !in_place(rbuf)) else {
        return s.finish(request, |_| Ok(()));
    };
    let rty = committed(h(rt))?.arc();
    let rn = count(rn, "recvcount")?;
    let k = s.keep(pack_at(sbuf, displs[me], counts[me], &sty)?);
    s.finish(request, move |bufs| {
        unpack_at(&bufs[k], dst.get(), 0, rn, &rty)
    })
}

/// The start of `MPI_Iscatter` on `obj` (also run to its end by the blocking
/// form on an intercommunicator, [`blocking`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_scatter<C: CountElem>(
    obj: &Arc<CommObj>,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: C,
    rt: *mut c_void,
    root: c_int,
    request: *mut *mut c_void,
) -> Result<()> {
    let (p, _) = peers(obj)?;
    let cd = if is_root(obj, root) {
        Some(uniform(count(sn, "sendcount")?, p)?)
    } else {
        None
    };
    iscatterv(obj, sbuf, cd, st, rbuf, rn, rt, root, request)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iscatter(
    sbuf: *const c_void,
    sn: c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: c_int,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    iscatter_call::<c_int>(
        "MPI_Iscatter",
        sbuf,
        sn,
        st,
        rbuf,
        rn,
        rt,
        root,
        comm,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iscatter_c(
    sbuf: *const c_void,
    sn: i64,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: i64,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    iscatter_call::<i64>(
        "MPI_Iscatter_c",
        sbuf,
        sn,
        st,
        rbuf,
        rn,
        rt,
        root,
        comm,
        request,
    )
}

/// `MPI_Iscatter(_c)` (`call`), generic over the count type of the two forms.
#[allow(clippy::too_many_arguments)]
fn iscatter_call<C: CountElem>(
    call: &str,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: C,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?.arc();
        start_scatter(&obj, sbuf, sn, st, rbuf, rn, rt, root, request)
    })
}

/// The start of `MPI_Iscatterv` on `obj` (also run to its end by the blocking
/// form on an intercommunicator, [`blocking`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_scatterv<C: CountElem, D: DisplElem>(
    obj: &Arc<CommObj>,
    sbuf: *const c_void,
    scounts: *const C,
    displs: *const D,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: C,
    rt: *mut c_void,
    root: c_int,
    request: *mut *mut c_void,
) -> Result<()> {
    let (p, _) = peers(obj)?;
    let cd = if is_root(obj, root) {
        Some(v_args(scounts, displs, p)?)
    } else {
        None
    };
    iscatterv(obj, sbuf, cd, st, rbuf, rn, rt, root, request)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iscatterv(
    sbuf: *const c_void,
    scounts: *const c_int,
    displs: *const c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: c_int,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    iscatterv_call::<c_int, c_int>(
        "MPI_Iscatterv",
        sbuf,
        scounts,
        displs,
        st,
        rbuf,
        rn,
        rt,
        root,
        comm,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iscatterv_c(
    sbuf: *const c_void,
    scounts: *const i64,
    displs: *const isize,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: i64,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    iscatterv_call::<i64, isize>(
        "MPI_Iscatterv_c",
        sbuf,
        scounts,
        displs,
        st,
        rbuf,
        rn,
        rt,
        root,
        comm,
        request,
    )
}

/// `MPI_Iscatterv(_c)` (`call`), generic over the count and displacement types of the two forms.
#[allow(clippy::too_many_arguments)]
fn iscatterv_call<C: CountElem, D: DisplElem>(
    call: &str,
    sbuf: *const c_void,
    scounts: *const C,
    displs: *const D,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: C,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?.arc();
        start_scatterv(&obj, sbuf, scounts, displs, st, rbuf, rn, rt, root, request)
    })
}

/// Iallgather(v).
#[allow(clippy::too_many_arguments)]
fn iallgatherv<C: CountElem>(
    obj: &Arc<CommObj>,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    counts: Vec<usize>,
    displs: Vec<isize>,
    rt: *mut c_void,
    request: *mut *mut c_void,
) -> Result<()> {
    no_place(obj, sbuf, "MPI_Iallgather(v)")?;
    let (p, me) = peers(obj)?;
    let rty = committed(h(rt))?.arc();
    if let (Some(me), false) = (me, in_place(sbuf)) {
        let sn = count(sn, "sendcount")?;
        if allgather_views(obj, sbuf, sn, st, rbuf, &counts, &displs, &rty, me, request)? {
            return Ok(());
        }
    }
    let mine = match me {
        Some(me) if in_place(sbuf) => pack_at(rbuf, displs[me], counts[me], &rty)?,
        _ => committed(h(st))?.pack(sbuf, count(sn, "sendcount")?)?,
    };
    let mut s = Sched::new(obj);
    let mut at = vec![None; p];
    for i in (0..p).filter(|&i| Some(i) != me) {
        s.send(mine.clone(), i)?;
        at[i] = Some(s.recv(nbytes(counts[i], &rty)?, i)?);
    }
    if let Some(me) = me.filter(|_| !in_place(sbuf)) {
        at[me] = Some(s.keep(mine));
    }
    let dst = Ptr(rbuf);
    s.finish(request, move |bufs| {
        for i in 0..p {
            if let Some(k) = at[i] {
                unpack_at(&bufs[k], dst.get(), displs[i], counts[i], &rty)?;
            }
        }
        Ok(())
    })
}

/// The blocks of span `r` of the receive buffer at `rbuf`, which lie end
/// to end (`Span::tiles`), as one writable view each, for the life of
/// the request that receives into them (MPI keeps the buffer the
/// operation's until it completes).
fn block_views<'a>(rbuf: *mut c_void, r: &Span) -> Result<Vec<&'a mut [u8]>> {
    let mut rest = bytes_mut((rbuf as *mut u8).wrapping_offset(r.from).cast(), r.len)?;
    let mut views = Vec::with_capacity(r.counts.len());
    for &n in &r.counts {
        let (v, tail) = std::mem::take(&mut rest).split_at_mut(n);
        views.push(v);
        rest = tail;
    }
    Ok(views)
}

/// [`iallgatherv`]'s direct path on an intracommunicator, not in place
/// (this rank is member `me`): where the send run and every receive block
/// are contiguous, the receive blocks lie end to end and the buffers are
/// apart, this rank's part goes to every peer from the program's send
/// buffer and every part lands in place in its receive buffer (the same
/// messages as the packed path, so members may mix the two); this rank's
/// own part is copied at the start. False, with nothing done, where not.
/// 2 ranks, C: 64 KiB 20.6-21.4 µs a call packed, 7.5-7.8 so (MPICH
/// 4.0: 15.8), 16 KiB 3.9-4.0 → 3.0-3.1, 1 KiB 0.98 → 0.87.
#[allow(clippy::too_many_arguments)]
fn allgather_views(
    obj: &Arc<CommObj>,
    sbuf: *const c_void,
    sn: usize,
    st: *mut c_void,
    rbuf: *mut c_void,
    counts: &[usize],
    displs: &[isize],
    rty: &Arc<TypeObj>,
    me: usize,
    request: *mut *mut c_void,
) -> Result<bool> {
    let sty = committed(h(st))?;
    let Some(off) = sty.contiguous(sn) else {
        return Ok(false);
    };
    // Anything wrong with the receive side (`MPI_IN_PLACE`, a
    // displacement that overflows) is the packed path's to report.
    let Ok(Some(r)) = Span::of_displs(counts, displs, rty) else {
        return Ok(false);
    };
    if in_place(rbuf) {
        return Ok(false);
    }
    let sbase = (sbuf as *const u8).wrapping_offset(off);
    let slen = nbytes(sn, &sty)?;
    if !r.tiles() || overlap(&addrs(sbase, slen), &r.range(rbuf)) || request.is_null() {
        return Ok(false);
    }
    let mine = bytes(sbase.cast(), slen)?;
    exchange_views(obj, rbuf, &r, me, |_| mine, request)
}

/// The views paths' exchange: this rank's own block `send(me)` copied
/// into its receive block of span `r`, then to every other member `i`
/// block `send(i)` sent and its block received in place, on one schedule
/// that becomes the request. False, with nothing done, where this rank's
/// own block and its receive block differ in length (counts that differ,
/// an erroneous program: the packed path's messages tell the members
/// that expect more).
fn exchange_views(
    obj: &Arc<CommObj>,
    rbuf: *mut c_void,
    r: &Span,
    me: usize,
    send: impl Fn(usize) -> &'static [u8],
    request: *mut *mut c_void,
) -> Result<bool> {
    let mut views = block_views(rbuf, r)?;
    if views[me].len() != send(me).len() {
        return Ok(false);
    }
    views[me].copy_from_slice(send(me));
    let mut sch = Sched::new(obj);
    for (i, v) in views.into_iter().enumerate() {
        if i != me {
            sch.send_view(send(i), i)?;
            sch.recv_view(v, i)?;
        }
    }
    sch.finish(request, |_| Ok(()))?;
    Ok(true)
}

/// The start of `MPI_Iallgather` on `obj` (also run to its end by the blocking
/// form on an intercommunicator, [`blocking`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_allgather<C: CountElem>(
    obj: &Arc<CommObj>,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: C,
    rt: *mut c_void,
    request: *mut *mut c_void,
) -> Result<()> {
    let (c, d) = uniform(count(rn, "recvcount")?, peers(obj)?.0)?;
    iallgatherv(obj, sbuf, sn, st, rbuf, c, d, rt, request)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iallgather(
    sbuf: *const c_void,
    sn: c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: c_int,
    rt: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    iallgather_call::<c_int>("MPI_Iallgather", sbuf, sn, st, rbuf, rn, rt, comm, request)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iallgather_c(
    sbuf: *const c_void,
    sn: i64,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: i64,
    rt: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    iallgather_call::<i64>(
        "MPI_Iallgather_c",
        sbuf,
        sn,
        st,
        rbuf,
        rn,
        rt,
        comm,
        request,
    )
}

/// `MPI_Iallgather(_c)` (`call`), generic over the count type of the two forms.
#[allow(clippy::too_many_arguments)]
fn iallgather_call<C: CountElem>(
    call: &str,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: C,
    rt: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?.arc();
        start_allgather(&obj, sbuf, sn, st, rbuf, rn, rt, request)
    })
}

/// The start of `MPI_Iallgatherv` on `obj` (also run to its end by the blocking
/// form on an intercommunicator, [`blocking`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_allgatherv<C: CountElem, D: DisplElem>(
    obj: &Arc<CommObj>,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    displs: *const D,
    rt: *mut c_void,
    request: *mut *mut c_void,
) -> Result<()> {
    let (c, d) = v_args(rcounts, displs, peers(obj)?.0)?;
    iallgatherv(obj, sbuf, sn, st, rbuf, c, d, rt, request)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iallgatherv(
    sbuf: *const c_void,
    sn: c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rt: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    iallgatherv_call::<c_int, c_int>(
        "MPI_Iallgatherv",
        sbuf,
        sn,
        st,
        rbuf,
        rcounts,
        displs,
        rt,
        comm,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iallgatherv_c(
    sbuf: *const c_void,
    sn: i64,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const i64,
    displs: *const isize,
    rt: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    iallgatherv_call::<i64, isize>(
        "MPI_Iallgatherv_c",
        sbuf,
        sn,
        st,
        rbuf,
        rcounts,
        displs,
        rt,
        comm,
        request,
    )
}

/// `MPI_Iallgatherv(_c)` (`call`), generic over the count and displacement types of the two forms.
#[allow(clippy::too_many_arguments)]
fn iallgatherv_call<C: CountElem, D: DisplElem>(
    call: &str,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    displs: *const D,
    rt: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?.arc();
        start_allgatherv(&obj, sbuf, sn, st, rbuf, rcounts, displs, rt, request)
    })
}

/// Ialltoall(v); `scd` is `None` in place.
#[allow(clippy::too_many_arguments)]
fn ialltoallv(
    obj: &Arc<CommObj>,
    sbuf: *const c_void,
    scd: Option<(Vec<usize>, Vec<isize>)>,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: Vec<usize>,
    rdispls: Vec<isize>,
    rt: *mut c_void,
    request: *mut *mut c_void,
) -> Result<()> {
    no_place(obj, sbuf, "MPI_Ialltoall(v)")?;
    let (p, me) = peers(obj)?;
    let rty = committed(h(rt))?.arc();
    if let Some((sc, sd)) = &scd {
        if let Some(me) = me {
            if alltoall_views(
                obj, sbuf, sc, sd, st, rbuf, &rcounts, &rdispls, &rty, me, request,
            )? {
                return Ok(());
            }
        }
    }
    // Every block is packed now, before any receive lands (in place, the
    // receives overwrite what is sent).
    let blocks: Vec<Vec<u8>> = match &scd {
        Some((sc, sd)) => {
            let sty = committed(h(st))?;
            (0..p)
                .map(|i| pack_at(sbuf, sd[i], sc[i], &sty))
                .collect::<Result<_>>()?
        }
        None => (0..p)
            .map(|i| pack_at(rbuf, rdispls[i], rcounts[i], &rty))
            .collect::<Result<_>>()?,
    };
    let mut s = Sched::new(obj);
    let mut at = vec![0; p];
    for (i, block) in blocks.into_iter().enumerate() {
        if Some(i) == me {
            at[i] = s.keep(block);
        } else {
            s.send(block, i)?;
            at[i] = s.recv(nbytes(rcounts[i], &rty)?, i)?;
        }
    }
    let dst = Ptr(rbuf);
    s.finish(request, move |bufs| {
        for i in 0..p {
            unpack_at(&bufs[at[i]], dst.get(), rdispls[i], rcounts[i], &rty)?;
        }
        Ok(())
    })
}

/// [`ialltoallv`]'s direct path on an intracommunicator (this rank is
/// member `me`): where every block's type is contiguous for its count,
/// the receive blocks lie end to end and the two buffers' spans are
/// apart, every block is sent from the program's send buffer and
/// received into its receive buffer, with no packed copy, receive buffer
/// or unpacking (the same messages as the packed path, so members may
/// mix the two); this rank's own block is copied at the start. False,
/// with nothing done, where not. 2 ranks, C: 64 KiB blocks 20.7-21.6 µs
/// a call packed, 7.8-8.0 so (MPICH 4.0: 6.2; blocks of this size go by
/// rendezvous, read straight out of the sender's buffer), 16 KiB 4.2-4.4
/// → 3.0-3.1 (5.2).
#[allow(clippy::too_many_arguments)]
fn alltoall_views(
    obj: &Arc<CommObj>,
    sbuf: *const c_void,
    sc: &[usize],
    sd: &[isize],
    st: *mut c_void,
    rbuf: *mut c_void,
    rc: &[usize],
    rd: &[isize],
    rty: &Arc<TypeObj>,
    me: usize,
    request: *mut *mut c_void,
) -> Result<bool> {
    let sty = committed(h(st))?;
    // Anything wrong with either side (`MPI_IN_PLACE` as the receive
    // buffer, a displacement that overflows) is the packed path's to
    // report.
    let (Ok(Some(s)), Ok(Some(r))) = (Span::of_displs(sc, sd, &sty), Span::of_displs(rc, rd, rty))
    else {
        return Ok(false);
    };
    if in_place(rbuf) {
        return Ok(false);
    }
    if !r.tiles() || overlap(&s.range(sbuf), &r.range(rbuf)) || request.is_null() {
        return Ok(false);
    }
    let sbase = (sbuf as *const u8).wrapping_offset(s.from);
    // A view per block: the send blocks' span may have gaps that are not
    // the operation's (other data, another operation's buffer).
    let mut sends = Vec::with_capacity(s.counts.len());
    for (&d, &n) in s.displs.iter().zip(&s.counts) {
        sends.push(bytes(sbase.wrapping_add(d).cast(), n)?);
    }
    exchange_views(obj, rbuf, &r, me, |i| sends[i], request)
}

/// The start of `MPI_Ialltoall` on `obj` (also run to its end by the blocking
/// form on an intercommunicator, [`blocking`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_alltoall<C: CountElem>(
    obj: &Arc<CommObj>,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: C,
    rt: *mut c_void,
    request: *mut *mut c_void,
) -> Result<()> {
    let (p, _) = peers(obj)?;
    let (rc, rd) = uniform(count(rn, "recvcount")?, p)?;
    let scd = if in_place(sbuf) {
        None
    } else {
        Some(uniform(count(sn, "sendcount")?, p)?)
    };
    ialltoallv(obj, sbuf, scd, st, rbuf, rc, rd, rt, request)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ialltoall(
    sbuf: *const c_void,
    sn: c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: c_int,
    rt: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    ialltoall_call::<c_int>("MPI_Ialltoall", sbuf, sn, st, rbuf, rn, rt, comm, request)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ialltoall_c(
    sbuf: *const c_void,
    sn: i64,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: i64,
    rt: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    ialltoall_call::<i64>("MPI_Ialltoall_c", sbuf, sn, st, rbuf, rn, rt, comm, request)
}

/// `MPI_Ialltoall(_c)` (`call`), generic over the count type of the two forms.
#[allow(clippy::too_many_arguments)]
fn ialltoall_call<C: CountElem>(
    call: &str,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: C,
    rt: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?.arc();
        start_alltoall(&obj, sbuf, sn, st, rbuf, rn, rt, request)
    })
}

/// The start of `MPI_Ialltoallv` on `obj` (also run to its end by the blocking
/// form on an intercommunicator, [`blocking`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_alltoallv<C: CountElem, D: DisplElem>(
    obj: &Arc<CommObj>,
    sbuf: *const c_void,
    scounts: *const C,
    sdispls: *const D,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    rdispls: *const D,
    rt: *mut c_void,
    request: *mut *mut c_void,
) -> Result<()> {
    let (p, _) = peers(obj)?;
    let (rc, rd) = v_args(rcounts, rdispls, p)?;
    let scd = if in_place(sbuf) {
        None
    } else {
        Some(v_args(scounts, sdispls, p)?)
    };
    ialltoallv(obj, sbuf, scd, st, rbuf, rc, rd, rt, request)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ialltoallv(
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rt: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    ialltoallv_call::<c_int, c_int>(
        "MPI_Ialltoallv",
        sbuf,
        scounts,
        sdispls,
        st,
        rbuf,
        rcounts,
        rdispls,
        rt,
        comm,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ialltoallv_c(
    sbuf: *const c_void,
    scounts: *const i64,
    sdispls: *const isize,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const i64,
    rdispls: *const isize,
    rt: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    ialltoallv_call::<i64, isize>(
        "MPI_Ialltoallv_c",
        sbuf,
        scounts,
        sdispls,
        st,
        rbuf,
        rcounts,
        rdispls,
        rt,
        comm,
        request,
    )
}

/// `MPI_Ialltoallv(_c)` (`call`), generic over the count and displacement types of the two forms.
#[allow(clippy::too_many_arguments)]
fn ialltoallv_call<C: CountElem, D: DisplElem>(
    call: &str,
    sbuf: *const c_void,
    scounts: *const C,
    sdispls: *const D,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    rdispls: *const D,
    rt: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?.arc();
        start_alltoallv(
            &obj, sbuf, scounts, sdispls, st, rbuf, rcounts, rdispls, rt, request,
        )
    })
}

// ---- reductions ---------------------------------------------------------------------

/// A reduction schedule: contributions go to the ranks that fold them
/// (the root, every rank, or the higher ranks for scans), folded in rank
/// order with `in` from the lower rank.
#[allow(clippy::too_many_arguments)]
pub(crate) fn ireduction(
    obj: &Arc<CommObj>,
    kind: Red,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: usize,
    red: Reduction,
    counts: Vec<usize>,
    request: *mut *mut c_void,
) -> Result<()> {
    intra(obj, "this nonblocking reduction")?;
    let me = obj.comm.rank() as usize;
    let p = obj.comm.size() as usize;
    let ty = red.ty.clone();
    let data = if in_place(sbuf) {
        ty.pack(rbuf, n)?
    } else {
        ty.pack(sbuf, n)?
    };
    let len = data.len();
    // Who sends to whom: `to(i)` says whether rank `i` needs my part.
    let needs = |i: usize| match kind {
        Red::Reduce(root) => i as c_int == root,
        Red::Allreduce | Red::Scatter => true,
        Red::Scan | Red::Exscan => i > me,
    };
    let gives = |i: usize| match kind {
        Red::Reduce(root) => me as c_int == root,
        Red::Allreduce | Red::Scatter => true,
        Red::Scan | Red::Exscan => i < me,
    };
    let mut s = Sched::new(obj);
    let mut at = vec![None; p];
    for i in (0..p).filter(|&i| i != me) {
        if needs(i) {
            s.send(data.clone(), i)?;
        }
        if gives(i) {
            at[i] = Some(s.recv(len, i)?);
        }
    }
    at[me] = Some(s.keep(data));
    let receives = match kind {
        Red::Reduce(root) => me as c_int == root,
        Red::Exscan => me > 0,
        _ => true,
    };
    if !receives {
        return s.finish(request, |_| Ok(()));
    }
    let hi = match kind {
        Red::Scan => me,
        Red::Exscan => me - 1,
        _ => p - 1,
    };
    let dst = Ptr(rbuf);
    s.finish(request, move |bufs| {
        let acc = red.fold_ranks(|k| &bufs[at[k].expect("received")][..], hi)?;
        match kind {
            Red::Scatter => {
                let start: usize = counts[..me].iter().sum::<usize>() * ty.size;
                let mine = counts[me] * ty.size;
                unpack_at(&acc[start..start + mine], dst.get(), 0, counts[me], &ty)
            }
            _ => unpack_at(&acc, dst.get(), 0, n, &ty),
        }
    })
}

/// Ireduce_scatter(_block), Iscan, Iexscan from C arguments.
#[allow(clippy::too_many_arguments)]
fn ired_entry(
    comm: *mut c_void,
    kind: Red,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: usize,
    t: *mut c_void,
    o: *mut c_void,
    counts: Vec<usize>,
    request: *mut *mut c_void,
) -> Result<()> {
    let obj = comm_obj(h(comm))?.arc();
    let red = Reduction::for_collective(h(o), h(t), n)?;
    if obj.comm.is_inter() {
        return inter_reduction(&obj, kind, sbuf, rbuf, n, red, counts, Some(request));
    }
    ireduction(&obj, kind, sbuf, rbuf, n, red, counts, request)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce_scatter(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    ireduce_scatter_call::<c_int>(
        "MPI_Ireduce_scatter",
        sbuf,
        rbuf,
        rcounts,
        t,
        o,
        comm,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce_scatter_c(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rcounts: *const i64,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    ireduce_scatter_call::<i64>(
        "MPI_Ireduce_scatter_c",
        sbuf,
        rbuf,
        rcounts,
        t,
        o,
        comm,
        request,
    )
}

/// `MPI_Ireduce_scatter(_c)` (`call`), generic over the count type of the two forms.
#[allow(clippy::too_many_arguments)]
fn ireduce_scatter_call<C: CountElem>(
    call: &str,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        let p = obj.comm.size().max(0) as usize;
        let counts = array(rcounts, p, "recvcounts")?
            .iter()
            .map(|&n| count(n, "a count"))
            .collect::<Result<Vec<_>>>()?;
        let total = super::coll::sum_counts(&counts)?;
        ired_entry(comm, Red::Scatter, sbuf, rbuf, total, t, o, counts, request)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce_scatter_block(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rn: c_int,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    ireduce_scatter_block_call::<c_int>(
        "MPI_Ireduce_scatter_block",
        sbuf,
        rbuf,
        rn,
        t,
        o,
        comm,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce_scatter_block_c(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rn: i64,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    ireduce_scatter_block_call::<i64>(
        "MPI_Ireduce_scatter_block_c",
        sbuf,
        rbuf,
        rn,
        t,
        o,
        comm,
        request,
    )
}

/// `MPI_Ireduce_scatter_block(_c)` (`call`), generic over the count type of the two forms.
#[allow(clippy::too_many_arguments)]
fn ireduce_scatter_block_call<C: CountElem>(
    call: &str,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rn: C,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        let p = obj.comm.size().max(0) as usize;
        let rn = count(rn, "recvcount")?;
        ired_entry(
            comm,
            Red::Scatter,
            sbuf,
            rbuf,
            super::coll::times(rn, p)?,
            t,
            o,
            vec![rn; p],
            request,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iscan(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: c_int,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    iscan_call::<c_int>("MPI_Iscan", sbuf, rbuf, n, t, o, comm, request)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iscan_c(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: i64,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    iscan_call::<i64>("MPI_Iscan_c", sbuf, rbuf, n, t, o, comm, request)
}

/// `MPI_Iscan(_c)` (`call`), generic over the count type of the two forms.
#[allow(clippy::too_many_arguments)]
fn iscan_call<C: CountElem>(
    call: &str,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: C,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let n = count(n, "count")?;
        ired_entry(comm, Red::Scan, sbuf, rbuf, n, t, o, Vec::new(), request)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iexscan(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: c_int,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    iexscan_call::<c_int>("MPI_Iexscan", sbuf, rbuf, n, t, o, comm, request)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iexscan_c(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: i64,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    iexscan_call::<i64>("MPI_Iexscan_c", sbuf, rbuf, n, t, o, comm, request)
}

/// `MPI_Iexscan(_c)` (`call`), generic over the count type of the two forms.
#[allow(clippy::too_many_arguments)]
fn iexscan_call<C: CountElem>(
    call: &str,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: C,
    t: *mut c_void,
    o: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let n = count(n, "count")?;
        ired_entry(comm, Red::Exscan, sbuf, rbuf, n, t, o, Vec::new(), request)
    })
}

/// A barrier as one round of empty messages between every pair of
/// members (the schedule of a persistent barrier).
pub(crate) fn sched_barrier(obj: &Arc<CommObj>, request: *mut *mut c_void) -> Result<()> {
    intra(obj, "this barrier")?;
    let (p, me) = peers(obj)?;
    empty_round(obj, (0..p).filter(|&r| Some(r) != me), request)
}

/// A round of empty messages to and from each of `peers`: a barrier's.
fn empty_round(
    obj: &Arc<CommObj>,
    peers: impl Iterator<Item = usize>,
    request: *mut *mut c_void,
) -> Result<()> {
    let mut s = Sched::new(obj);
    for r in peers {
        s.send(Vec::new(), r)?;
        s.recv(0, r)?;
    }
    s.finish(request, |_| Ok(()))
}

/// A broadcast as one round: the root sends `n` packed instances of `ty`
/// at `buf` to every other member, which unpacks them in the last step
/// (the schedule of a persistent broadcast).
pub(crate) fn sched_bcast(
    obj: &Arc<CommObj>,
    buf: *mut c_void,
    n: usize,
    ty: &Arc<TypeObj>,
    root: c_int,
    request: *mut *mut c_void,
) -> Result<()> {
    intra(obj, "this broadcast")?;
    check_root(obj, root)?;
    not_in_place(buf, n, ty)?;
    let (p, me) = peers(obj)?;
    let mut s = Sched::new(obj);
    if me == Some(root as usize) {
        let data = ty.pack(buf, n)?;
        for r in (0..p).filter(|&r| r != root as usize) {
            s.send(data.clone(), r)?;
        }
        return s.finish(request, |_| Ok(()));
    }
    let at = s.recv(nbytes(n, ty)?, root as usize)?;
    let (dst, ty) = (Ptr(buf), ty.clone());
    s.finish(request, move |bufs| {
        ty.unpack(&bufs[at], dst.get(), n).map(|_| ())
    })
}

/// `MPI_Ialltoallw`: per rank a count, a byte displacement and a
/// datatype on each side (MPI 4.1 §6.8); every block is packed when the
/// collective starts (in place: from the receive blocks, which the
/// receives then overwrite), and unpacked in the last step.
#[no_mangle]
pub unsafe extern "C" fn MPI_Ialltoallw(
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stypes: *const *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtypes: *const *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    ialltoallw_call::<c_int, c_int>(
        "MPI_Ialltoallw",
        sbuf,
        scounts,
        sdispls,
        stypes,
        rbuf,
        rcounts,
        rdispls,
        rtypes,
        comm,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ialltoallw_c(
    sbuf: *const c_void,
    scounts: *const i64,
    sdispls: *const isize,
    stypes: *const *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const i64,
    rdispls: *const isize,
    rtypes: *const *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    ialltoallw_call::<i64, isize>(
        "MPI_Ialltoallw_c",
        sbuf,
        scounts,
        sdispls,
        stypes,
        rbuf,
        rcounts,
        rdispls,
        rtypes,
        comm,
        request,
    )
}

/// `MPI_Ialltoallw(_c)` (`call`), generic over the count and displacement types of the two forms.
#[allow(clippy::too_many_arguments)]
fn ialltoallw_call<C: CountElem, D: DisplElem>(
    call: &str,
    sbuf: *const c_void,
    scounts: *const C,
    sdispls: *const D,
    stypes: *const *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    rdispls: *const D,
    rtypes: *const *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?.arc();
        intra(&obj, call)?;
        let (p, _) = peers(&obj)?;
        let recvs = w_blocks(rcounts, rdispls, rtypes, p, "recvtypes")?;
        let sends = if in_place(sbuf) {
            None
        } else {
            Some(w_blocks(scounts, sdispls, stypes, p, "sendtypes")?)
        };
        ialltoallw(&obj, sbuf, sends, rbuf, recvs, request)
    })
}

/// The schedule of `MPI_Ialltoallw` over its blocks read already (`None`
/// for the send side: in place).
pub(crate) fn ialltoallw(
    obj: &Arc<CommObj>,
    sbuf: *const c_void,
    sends: Option<Vec<Block>>,
    rbuf: *mut c_void,
    recvs: Vec<Block>,
    request: *mut *mut c_void,
) -> Result<()> {
    let (p, me) = peers(obj)?;
    for (n, _, ty) in &recvs {
        not_in_place(rbuf, *n, ty)?;
    }
    let mut s = Sched::new(obj);
    let mut at = vec![0; p];
    for i in 0..p {
        let (buf, (n, d, ty)) = match &sends {
            Some(sends) => (sbuf, &sends[i]),
            None => (rbuf.cast_const(), &recvs[i]),
        };
        not_in_place(buf, *n, ty)?;
        let block = ty.pack((buf as *const u8).wrapping_offset(*d).cast(), *n)?;
        if Some(i) == me {
            // As a message to itself would: shorter is MPI_ERR_COUNT,
            // longer MPI_ERR_TRUNCATE.
            let (rn, _, rty) = &recvs[i];
            let want = nbytes(*rn, rty)?;
            if block.len() != want {
                return Err(Error::new(
                    if block.len() < want {
                        ErrorClass::Count
                    } else {
                        ErrorClass::Truncate
                    },
                    format!(
                        "this rank's block to itself has {} bytes, its receive {want}",
                        block.len()
                    ),
                ));
            }
            at[i] = s.keep(block);
        } else {
            s.send(block, i)?;
            let (rn, _, rty) = &recvs[i];
            at[i] = s.recv(nbytes(*rn, rty)?, i)?;
        }
    }
    let dst = Ptr(rbuf);
    s.finish(request, move |bufs| {
        for (i, (n, d, ty)) in recvs.iter().enumerate() {
            let to = (dst.get() as *mut u8).wrapping_offset(*d);
            ty.unpack(&bufs[at[i]], to.cast(), *n)?;
        }
        Ok(())
    })
}

// ---- neighbourhood collectives ------------------------------------------------------

/// A neighbourhood collective (MPI 4.1 §8.6) on a communicator with a
/// topology: block j of the send side (`sends[j]`: count, byte
/// displacement from `sbuf`, datatype) goes to out-neighbour j, and what
/// in-neighbour i sends lands in receive block i (`recvs[i]`);
/// `PROC_NULL` neighbours are skipped. On a grid a process can be the
/// neighbour behind and the one ahead along a dimension (two places,
/// periodic), so the tag says which receive slot a block is for: the
/// schedule's tag for the slot of the neighbour behind (a block sent
/// ahead), its second tag (`nbc_second_tag`) for the slot of the one
/// ahead; repeated
/// neighbours of one kind are matched in list order, as MPI's message
/// order makes them.
fn ineighbor(
    obj: &Arc<CommObj>,
    call: &str,
    sbuf: *const c_void,
    sends: Vec<Block>,
    rbuf: *mut c_void,
    recvs: Vec<Block>,
    request: *mut *mut c_void,
) -> Result<()> {
    if in_place(sbuf) {
        return Err(Error::new(
            ErrorClass::Buffer,
            format!("MPI_IN_PLACE is not allowed in {call}"),
        ));
    }
    let (ins, outs) = obj.comm.neighbors()?;
    let grid = matches!(obj.comm.topology(), Some(Topology::Cart { .. }));
    let mut s = Sched::new(obj);
    let behind_tag = s.tag;
    let ahead_tag = if grid {
        crate::comm::nbc_second_tag(behind_tag)
    } else {
        behind_tag
    };
    for (j, &dest) in outs.iter().enumerate() {
        if dest == super::PROC_NULL {
            continue;
        }
        let (n, d, ty) = &sends[j];
        not_in_place(sbuf, *n, ty)?;
        let block = ty.pack((sbuf as *const u8).wrapping_offset(*d).cast(), *n)?;
        // Sent behind (even j) it fills the receiver's slot of its
        // neighbour ahead.
        let tag = if grid && j % 2 == 0 {
            ahead_tag
        } else {
            behind_tag
        };
        s.send_to(block, dest as usize, false, tag)?;
    }
    let mut at = Vec::with_capacity(ins.len());
    for (i, &src) in ins.iter().enumerate() {
        if src == super::PROC_NULL {
            continue;
        }
        let (n, _, ty) = &recvs[i];
        not_in_place(rbuf, *n, ty)?;
        let tag = if grid && i % 2 == 1 {
            ahead_tag
        } else {
            behind_tag
        };
        at.push((s.recv_from(nbytes(*n, ty)?, src as usize, false, tag)?, i));
    }
    let dst = Ptr(rbuf);
    s.finish(request, move |bufs| {
        for &(k, i) in &at {
            let (n, d, ty) = &recvs[i];
            let to = (dst.get() as *mut u8).wrapping_offset(*d);
            ty.unpack(&bufs[k], to.cast(), *n)?;
        }
        Ok(())
    })
}

/// The in- and out-degree of `obj`'s topology.
fn degrees(obj: &CommObj) -> Result<(usize, usize)> {
    let (i, o) = obj.comm.neighbors()?;
    Ok((i.len(), o.len()))
}

/// Blocks of (count, displacement in extents of `t`) as [`Block`]s.
fn typed(blocks: Result<Vec<(usize, isize)>>, t: *mut c_void) -> Result<Vec<Block>> {
    let blocks = blocks?;
    let ty = committed(h(t))?.arc();
    let ext = ty.extent();
    blocks
        .into_iter()
        .map(|(n, d)| {
            let bytes = d.checked_mul(ext).ok_or_else(|| {
                Error::new(
                    ErrorClass::Arg,
                    format!("a displacement of {d} extents of {ext} bytes overflows"),
                )
            })?;
            Ok((n, bytes, ty.clone()))
        })
        .collect()
}

/// `n` blocks of `count` instances, one after the other.
fn even_blocks<C: CountElem>(count: C, n: usize, what: &str) -> Result<Vec<(usize, isize)>> {
    let c = super::count(count, what)?;
    let d = super::coll::even_displs(c, n)?;
    Ok(d.into_iter().map(|d| (c, d)).collect())
}

/// `n` copies of one block of `count` at displacement 0 (what
/// allgather sends to each out-neighbour).
fn same_block<C: CountElem>(count: C, n: usize, what: &str) -> Result<Vec<(usize, isize)>> {
    let c = super::count(count, what)?;
    Ok(vec![(c, 0); n])
}

/// Per-neighbour counts and displacements of the v forms.
fn v_blocks<C: CountElem, D: DisplElem>(
    counts: *const C,
    displs: *const D,
    n: usize,
) -> Result<Vec<(usize, isize)>> {
    let (c, d) = v_args(counts, displs, n)?;
    Ok(c.into_iter().zip(d).collect())
}

/// Per-neighbour blocks of the w forms: counts, `MPI_Aint` byte
/// displacements, datatypes.
fn aint_blocks<C: CountElem>(
    counts: *const C,
    displs: *const isize,
    types: *const *mut c_void,
    n: usize,
    what: &str,
) -> Result<Vec<Block>> {
    let d = array(displs, n, "displs")?;
    w_blocks_at(counts, d.iter().copied(), types, n, what)
}

/// A neighbourhood collective's three forms: blocking, nonblocking, and
/// persistent (MPI 4.1 §8.7: its blocks, with their datatypes, read and
/// held at the init; each start runs the schedule on the init's tag).
macro_rules! neighbor_fns {
    ($blocking:ident, $nonblocking:ident, $persistent:ident, $name:literal, $suffix:literal,
     ($($arg:ident: $ty:ty),*), $rbuf:ident,
     |$obj:ident, $ins:ident, $outs:ident| ($sends:expr, $recvs:expr)) => {
        #[no_mangle]
        pub unsafe extern "C" fn $persistent(
            sbuf: *const c_void,
            $($arg: $ty,)*
            comm: *mut c_void,
            _info: *mut c_void,
            request: *mut *mut c_void,
        ) -> c_int {
            super::pcoll::init(concat!("MPI_", $name, "_init", $suffix), comm, request, |$obj| {
                let ($ins, $outs) = degrees($obj)?;
                let (sends, recvs) = ($sends, $recvs);
                let (sends, recvs) = (sends?, recvs?);
                if in_place(sbuf) {
                    return Err(Error::new(
                        ErrorClass::Buffer,
                        concat!("MPI_IN_PLACE is not allowed in MPI_", $name, "_init", $suffix),
                    ));
                }
                let (s, r) = (super::pcoll::Addr::of(sbuf), super::pcoll::Addr::of($rbuf));
                Ok(move |obj: &Arc<CommObj>, rq| {
                    let call = concat!("MPI_", $name, "_init", $suffix);
                    ineighbor(obj, call, s.ptr(), sends.clone(), r.ptr(), recvs.clone(), rq)
                })
            })
        }

        #[no_mangle]
        pub unsafe extern "C" fn $nonblocking(
            sbuf: *const c_void,
            $($arg: $ty,)*
            comm: *mut c_void,
            request: *mut *mut c_void,
        ) -> c_int {
            guard(concat!("MPI_I", $name, $suffix), h(comm), || {
                let $obj = comm_obj(h(comm))?.arc();
                let ($ins, $outs) = degrees(&$obj)?;
                let (sends, recvs) = ($sends, $recvs);
                ineighbor(&$obj, concat!("MPI_I", $name, $suffix), sbuf, sends?, $rbuf, recvs?, request)
            })
        }

        #[no_mangle]
        pub unsafe extern "C" fn $blocking(
            sbuf: *const c_void,
            $($arg: $ty,)*
            comm: *mut c_void,
        ) -> c_int {
            guard(concat!("MPI_", $name, $suffix), h(comm), || {
                let $obj = comm_obj(h(comm))?.arc();
                let ($ins, $outs) = degrees(&$obj)?;
                let (sends, recvs) = ($sends, $recvs);
                let (sends, recvs) = (sends?, recvs?);
                blocking(|req| {
                    ineighbor(&$obj, concat!("MPI_", $name, $suffix), sbuf, sends, $rbuf, recvs, req)
                })
            })
        }
    };
}

neighbor_fns!(
    MPI_Neighbor_allgather, MPI_Ineighbor_allgather, MPI_Neighbor_allgather_init, "Neighbor_allgather", "",
    (sn: c_int, st: *mut c_void, rbuf: *mut c_void, rn: c_int, rt: *mut c_void),
    rbuf,
    |obj, ins, outs| (
        typed(same_block(sn, outs, "sendcount"), st),
        typed(even_blocks(rn, ins, "recvcount"), rt)
    )
);

neighbor_fns!(
    MPI_Neighbor_alltoall, MPI_Ineighbor_alltoall, MPI_Neighbor_alltoall_init, "Neighbor_alltoall", "",
    (sn: c_int, st: *mut c_void, rbuf: *mut c_void, rn: c_int, rt: *mut c_void),
    rbuf,
    |obj, ins, outs| (
        typed(even_blocks(sn, outs, "sendcount"), st),
        typed(even_blocks(rn, ins, "recvcount"), rt)
    )
);

neighbor_fns!(
    MPI_Neighbor_allgatherv, MPI_Ineighbor_allgatherv, MPI_Neighbor_allgatherv_init, "Neighbor_allgatherv", "",
    (sn: c_int, st: *mut c_void, rbuf: *mut c_void, rcounts: *const c_int,
     rdispls: *const c_int, rt: *mut c_void),
    rbuf,
    |obj, ins, outs| (
        typed(same_block(sn, outs, "sendcount"), st),
        typed(v_blocks(rcounts, rdispls, ins), rt)
    )
);

neighbor_fns!(
    MPI_Neighbor_alltoallv, MPI_Ineighbor_alltoallv, MPI_Neighbor_alltoallv_init, "Neighbor_alltoallv", "",
    (scounts: *const c_int, sdispls: *const c_int, st: *mut c_void, rbuf: *mut c_void,
     rcounts: *const c_int, rdispls: *const c_int, rt: *mut c_void),
    rbuf,
    |obj, ins, outs| (
        typed(v_blocks(scounts, sdispls, outs), st),
        typed(v_blocks(rcounts, rdispls, ins), rt)
    )
);

neighbor_fns!(
    MPI_Neighbor_alltoallw, MPI_Ineighbor_alltoallw, MPI_Neighbor_alltoallw_init, "Neighbor_alltoallw", "",
    (scounts: *const c_int, sdispls: *const isize, stypes: *const *mut c_void,
     rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const isize,
     rtypes: *const *mut c_void),
    rbuf,
    |obj, ins, outs| (
        aint_blocks(scounts, sdispls, stypes, outs, "sendtypes"),
        aint_blocks(rcounts, rdispls, rtypes, ins, "recvtypes")
    )
);

// The large-count forms (MPI 4.1 §19.2): `MPI_Count` counts, `MPI_Aint`
// displacements.

neighbor_fns!(
    MPI_Neighbor_allgather_c, MPI_Ineighbor_allgather_c, MPI_Neighbor_allgather_init_c, "Neighbor_allgather", "_c",
    (sn: i64, st: *mut c_void, rbuf: *mut c_void, rn: i64, rt: *mut c_void),
    rbuf,
    |obj, ins, outs| (
        typed(same_block(sn, outs, "sendcount"), st),
        typed(even_blocks(rn, ins, "recvcount"), rt)
    )
);

neighbor_fns!(
    MPI_Neighbor_alltoall_c, MPI_Ineighbor_alltoall_c, MPI_Neighbor_alltoall_init_c, "Neighbor_alltoall", "_c",
    (sn: i64, st: *mut c_void, rbuf: *mut c_void, rn: i64, rt: *mut c_void),
    rbuf,
    |obj, ins, outs| (
        typed(even_blocks(sn, outs, "sendcount"), st),
        typed(even_blocks(rn, ins, "recvcount"), rt)
    )
);

neighbor_fns!(
    MPI_Neighbor_allgatherv_c, MPI_Ineighbor_allgatherv_c, MPI_Neighbor_allgatherv_init_c, "Neighbor_allgatherv", "_c",
    (sn: i64, st: *mut c_void, rbuf: *mut c_void, rcounts: *const i64,
     rdispls: *const isize, rt: *mut c_void),
    rbuf,
    |obj, ins, outs| (
        typed(same_block(sn, outs, "sendcount"), st),
        typed(v_blocks(rcounts, rdispls, ins), rt)
    )
);

neighbor_fns!(
    MPI_Neighbor_alltoallv_c, MPI_Ineighbor_alltoallv_c, MPI_Neighbor_alltoallv_init_c, "Neighbor_alltoallv", "_c",
    (scounts: *const i64, sdispls: *const isize, st: *mut c_void, rbuf: *mut c_void,
     rcounts: *const i64, rdispls: *const isize, rt: *mut c_void),
    rbuf,
    |obj, ins, outs| (
        typed(v_blocks(scounts, sdispls, outs), st),
        typed(v_blocks(rcounts, rdispls, ins), rt)
    )
);

neighbor_fns!(
    MPI_Neighbor_alltoallw_c, MPI_Ineighbor_alltoallw_c, MPI_Neighbor_alltoallw_init_c, "Neighbor_alltoallw", "_c",
    (scounts: *const i64, sdispls: *const isize, stypes: *const *mut c_void,
     rbuf: *mut c_void, rcounts: *const i64, rdispls: *const isize,
     rtypes: *const *mut c_void),
    rbuf,
    |obj, ins, outs| (
        aint_blocks(scounts, sdispls, stypes, outs, "sendtypes"),
        aint_blocks(rcounts, rdispls, rtypes, ins, "recvtypes")
    )
);
