//! Persistent collectives (MPI 4.1 §6.13), on intra- and
//! intercommunicators: `MPI_Barrier_init` and the others make an
//! inactive persistent request. The init takes the
//! communicator's next nonblocking-collective tag (every member calls the
//! inits in the same order, as MPI requires) and holds the communicator,
//! the datatypes and the operation; each `MPI_Start` then builds the
//! nonblocking form's schedule of `nbc.rs` on that tag (`nbc::with_tag`),
//! so starts match by the inits' order whatever order they come in, and
//! the program may free its handles after the init. The `v` and `w`
//! forms copy their count and displacement arrays at the init, and the
//! neighbourhood forms (`nbc.rs`'s `neighbor_fns!`) read their blocks
//! there.

use super::coll::Red;
use super::nbc::{self, with_tag};
use super::p2p::{persistent_coll, CollStart};
use super::types::{committed, HeldType, Reduction};
use super::{array, comm_obj, count, guard, h, CommObj, SUCCESS};
use super::{CountElem, DisplElem};
use crate::error::{Error, ErrorClass, Result};
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// An address kept for the starts: a buffer the program keeps valid, and
/// does not touch while the request is active, until it frees the request
/// (MPI 4.1 §6.13).
#[derive(Clone, Copy)]
pub(crate) struct Addr(usize);

impl Addr {
    pub(crate) fn of<T>(p: *const T) -> Addr {
        Addr(p as usize)
    }
    pub(crate) fn ptr(self) -> *mut c_void {
        std::ptr::with_exposed_provenance_mut(self.0)
    }
}

/// Makes `*request` a persistent collective on `comm`: `prepare` checks
/// and holds the arguments and gives what each start runs (with the
/// request out-pointer), on the tag taken here.
pub(crate) fn init<F>(
    call: &'static str,
    comm: *mut c_void,
    request: *mut *mut c_void,
    prepare: impl FnOnce(&Arc<CommObj>) -> Result<F>,
) -> c_int
where
    F: Fn(&Arc<CommObj>, *mut *mut c_void) -> Result<()> + Send + Sync + 'static,
{
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?.arc();
        if request.is_null() {
            return Err(super::arg("request"));
        }
        // Taken first, so that every member takes it even where the
        // arguments fail on some of them only.
        let tag = obj.comm.next_nbc_tag();
        let start = prepare(&obj)?;
        let held = obj.clone();
        let run = move |rq: *mut *mut c_void| -> c_int {
            match with_tag(tag, || start(&held, rq)) {
                Ok(()) => SUCCESS,
                Err(e) => super::raise(Some(&held), "MPI_Start", &e),
            }
        };
        persistent_coll(&obj, CollStart(Arc::new(run)), request)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier_init(
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    init("MPI_Barrier_init", comm, request, |_| {
        Ok(|obj: &Arc<CommObj>, rq| {
            if obj.comm.is_inter() {
                nbc::inter_ibarrier(obj, rq)
            } else {
                nbc::sched_barrier(obj, rq)
            }
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast_init(
    buf: *mut c_void,
    n: c_int,
    t: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    bcast_init_call::<c_int>("MPI_Bcast_init", buf, n, t, root, comm, _info, request)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast_init_c(
    buf: *mut c_void,
    n: i64,
    t: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    bcast_init_call::<i64>("MPI_Bcast_init_c", buf, n, t, root, comm, _info, request)
}

/// `MPI_Bcast_init(_c)` (`call`), generic over the count type of the two forms.
#[allow(clippy::too_many_arguments)]
fn bcast_init_call<C: CountElem>(
    call: &'static str,
    buf: *mut c_void,
    n: C,
    t: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    init(call, comm, request, |obj| {
        let n = count(n, "count")?;
        let ty = committed(h(t))?.arc();
        let inter = obj.comm.is_inter();
        if inter {
            nbc::inter_root(obj, root)?;
        } else {
            super::coll::check_root(obj, root)?;
        }
        let b = Addr::of(buf);
        Ok(move |obj: &Arc<CommObj>, rq| {
            if inter {
                nbc::inter_ibcast(obj, b.ptr(), n, &ty, root, rq)
            } else {
                nbc::sched_bcast(obj, b.ptr(), n, &ty, root, rq)
            }
        })
    })
}

/// The reductions' inits: the operation and datatype checked and held
/// (`Reduction`) at the init.
#[allow(clippy::too_many_arguments)]
fn reduction_init<C: CountElem>(
    call: &'static str,
    kind: Red,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: Counts<C>,
    t: *mut c_void,
    op: *mut c_void,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    init(call, comm, request, |obj| {
        let p = obj.comm.size().max(0) as usize;
        // Reduce_scatter(_block): a count per member.
        let (total, counts) = match (kind, n) {
            (Red::Scatter, Counts::Each(n)) => {
                let n = count(n, "recvcount")?;
                (super::coll::times(n, p)?, vec![n; p])
            }
            (Red::Scatter, Counts::List(c)) => {
                let c = array(c, p, "recvcounts")?
                    .iter()
                    .map(|&n| count(n, "a count"))
                    .collect::<Result<Vec<_>>>()?;
                (super::coll::sum_counts(&c)?, c)
            }
            (_, Counts::Each(n)) => (count(n, "count")?, Vec::new()),
            (_, Counts::List(_)) => unreachable!("only reduce_scatter has a list"),
        };
        let inter = obj.comm.is_inter();
        match kind {
            Red::Scan | Red::Exscan if inter => {
                return Err(Error::new(
                    ErrorClass::Comm,
                    format!("{call}: MPI defines no scan on an intercommunicator"),
                ))
            }
            Red::Reduce(root) if inter => {
                nbc::inter_root(obj, root)?;
            }
            Red::Reduce(root) => super::coll::check_root(obj, root)?,
            _ => {}
        }
        let mut red = Reduction::for_collective(h(op), h(t), total)?;
        // A user operation gets the datatype's handle: one of the
        // request's own, live while the program's may be freed.
        let ty = HeldType::hold(t)?;
        red.ty_handle = h(ty.handle());
        let (s, r) = (Addr::of(sbuf), Addr::of(rbuf));
        Ok(move |obj: &Arc<CommObj>, rq| {
            let _held = &ty;
            let (s, r, red, counts) = (s.ptr(), r.ptr(), red.clone(), counts.clone());
            if inter {
                nbc::inter_reduction(obj, kind, s, r, total, red, counts, Some(rq))
            } else {
                nbc::ireduction(obj, kind, s, r, total, red, counts, rq)
            }
        })
    })
}

/// A reduction's count argument: one count, or (`MPI_Reduce_scatter`)
/// one per member.
#[derive(Clone, Copy)]
enum Counts<C: CountElem> {
    Each(C),
    List(*const C),
}

/// The reductions' inits without a root: (sbuf, rbuf, count, type, op,
/// comm, info, request).
macro_rules! reduction_fn {
    ($name:ident, $call:literal, $count:ty, $kind:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sbuf: *const c_void,
            rbuf: *mut c_void,
            n: $count,
            t: *mut c_void,
            op: *mut c_void,
            comm: *mut c_void,
            _info: *mut c_void,
            request: *mut *mut c_void,
        ) -> c_int {
            reduction_init(
                $call,
                $kind,
                sbuf,
                rbuf,
                Counts::Each(n),
                t,
                op,
                comm,
                request,
            )
        }
    };
}

reduction_fn!(
    MPI_Allreduce_init,
    "MPI_Allreduce_init",
    c_int,
    Red::Allreduce
);
reduction_fn!(MPI_Scan_init, "MPI_Scan_init", c_int, Red::Scan);
reduction_fn!(MPI_Exscan_init, "MPI_Exscan_init", c_int, Red::Exscan);
reduction_fn!(
    MPI_Allreduce_init_c,
    "MPI_Allreduce_init_c",
    i64,
    Red::Allreduce
);
reduction_fn!(MPI_Scan_init_c, "MPI_Scan_init_c", i64, Red::Scan);
reduction_fn!(MPI_Exscan_init_c, "MPI_Exscan_init_c", i64, Red::Exscan);
// (The count is per member: `reduction_init` multiplies it.)
reduction_fn!(
    MPI_Reduce_scatter_block_init,
    "MPI_Reduce_scatter_block_init",
    c_int,
    Red::Scatter
);
reduction_fn!(
    MPI_Reduce_scatter_block_init_c,
    "MPI_Reduce_scatter_block_init_c",
    i64,
    Red::Scatter
);

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_init(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: c_int,
    t: *mut c_void,
    op: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    reduction_init(
        "MPI_Reduce_init",
        Red::Reduce(root),
        sbuf,
        rbuf,
        Counts::Each(n),
        t,
        op,
        comm,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_init_c(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: i64,
    t: *mut c_void,
    op: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    reduction_init(
        "MPI_Reduce_init_c",
        Red::Reduce(root),
        sbuf,
        rbuf,
        Counts::Each(n),
        t,
        op,
        comm,
        request,
    )
}

/// The start of a data movement: `start_gather` and its kind, over the
/// held types' handles.
type Movement = fn(
    &Arc<CommObj>,
    *const c_void,
    i64,
    *mut c_void,
    *mut c_void,
    i64,
    *mut c_void,
    c_int,
    *mut *mut c_void,
) -> Result<()>;

/// Which sides of a data movement a member uses.
#[derive(Clone, Copy)]
enum Uses {
    /// Both, on every member (allgather, alltoall).
    Both,
    /// The send side everywhere, the receive side at the root (gather).
    GatherLike,
    /// The send side at the root, the receive side everywhere (scatter).
    ScatterLike,
}

/// Which sides of a data movement with root `root` this member uses:
/// (send, receive), the root checked. On an intercommunicator the root
/// (`MPI_ROOT`) uses one side, the other members of its group
/// (`MPI_PROC_NULL`) none, the other group the other side.
fn sides(obj: &CommObj, uses: Uses, root: c_int) -> Result<(bool, bool)> {
    if let Uses::Both = uses {
        return Ok((true, true));
    }
    let gather = matches!(uses, Uses::GatherLike);
    if obj.comm.is_inter() {
        return Ok(match nbc::inter_root(obj, root)? {
            nbc::InterRoot::Idle => (false, false),
            nbc::InterRoot::Root => (!gather, gather),
            nbc::InterRoot::Other(_) => (gather, !gather),
        });
    }
    super::coll::check_root(obj, root)?;
    let at_root = obj.comm.rank() == root;
    Ok(if gather {
        (true, at_root)
    } else {
        (at_root, true)
    })
}

/// The data movements' inits. The sides this member uses are checked
/// (count, committed type, root) and their types held; a side it does
/// not use (the receive side of a gather off the root) may be anything,
/// and is passed on as given, held where it is a committed type.
#[allow(clippy::too_many_arguments)]
fn movement_init<C: CountElem>(
    call: &'static str,
    start: Movement,
    uses: Uses,
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
    init(call, comm, request, |obj| {
        let (send_used, recv_used) = sides(obj, uses, root)?;
        // An in-place side is not used (its arguments are ignored).
        let in_place = super::coll::in_place;
        let snd = Side::plain(sbuf, sn, st, send_used && !in_place(sbuf), "sendcount")?;
        let recv_used = recv_used && !in_place(rbuf.cast_const());
        let rcv = Side::plain(rbuf, rn, rt, recv_used, "recvcount")?;
        let (sn, rn) = (sn.wide(), rn.wide());
        Ok(move |obj: &Arc<CommObj>, rq| {
            let (s, r) = (&snd, &rcv);
            start(obj, s.buf(), sn, s.ty(), r.buf(), rn, r.ty(), root, rq)
        })
    })
}

macro_rules! movement_fn {
    ($name:ident, $call:literal, $count:ty, $start:expr, $uses:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sbuf: *const c_void,
            sn: $count,
            st: *mut c_void,
            rbuf: *mut c_void,
            rn: $count,
            rt: *mut c_void,
            root: c_int,
            comm: *mut c_void,
            _info: *mut c_void,
            request: *mut *mut c_void,
        ) -> c_int {
            movement_init(
                $call, $start, $uses, sbuf, sn, st, rbuf, rn, rt, root, comm, request,
            )
        }
    };
    ($name:ident, $call:literal, $count:ty, $start:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sbuf: *const c_void,
            sn: $count,
            st: *mut c_void,
            rbuf: *mut c_void,
            rn: $count,
            rt: *mut c_void,
            comm: *mut c_void,
            _info: *mut c_void,
            request: *mut *mut c_void,
        ) -> c_int {
            movement_init(
                $call,
                $start,
                Uses::Both,
                sbuf,
                sn,
                st,
                rbuf,
                rn,
                rt,
                0,
                comm,
                request,
            )
        }
    };
}

movement_fn!(
    MPI_Gather_init,
    "MPI_Gather_init",
    c_int,
    nbc::start_gather,
    Uses::GatherLike
);
movement_fn!(
    MPI_Gather_init_c,
    "MPI_Gather_init_c",
    i64,
    nbc::start_gather,
    Uses::GatherLike
);
movement_fn!(
    MPI_Scatter_init,
    "MPI_Scatter_init",
    c_int,
    nbc::start_scatter,
    Uses::ScatterLike
);
movement_fn!(
    MPI_Scatter_init_c,
    "MPI_Scatter_init_c",
    i64,
    nbc::start_scatter,
    Uses::ScatterLike
);
movement_fn!(
    MPI_Allgather_init,
    "MPI_Allgather_init",
    c_int,
    |o, s, sn, st, r, rn, rt, _root, rq| nbc::start_allgather(o, s, sn, st, r, rn, rt, rq)
);
movement_fn!(
    MPI_Allgather_init_c,
    "MPI_Allgather_init_c",
    i64,
    |o, s, sn, st, r, rn, rt, _root, rq| nbc::start_allgather(o, s, sn, st, r, rn, rt, rq)
);
movement_fn!(
    MPI_Alltoall_init,
    "MPI_Alltoall_init",
    c_int,
    |o, s, sn, st, r, rn, rt, _root, rq| nbc::start_alltoall(o, s, sn, st, r, rn, rt, rq)
);
movement_fn!(
    MPI_Alltoall_init_c,
    "MPI_Alltoall_init_c",
    i64,
    |o, s, sn, st, r, rn, rt, _root, rq| nbc::start_alltoall(o, s, sn, st, r, rn, rt, rq)
);

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter_init(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    t: *mut c_void,
    op: *mut c_void,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    reduction_init(
        "MPI_Reduce_scatter_init",
        Red::Scatter,
        sbuf,
        rbuf,
        Counts::List(rcounts),
        t,
        op,
        comm,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter_init_c(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rcounts: *const i64,
    t: *mut c_void,
    op: *mut c_void,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    reduction_init(
        "MPI_Reduce_scatter_init_c",
        Red::Scatter,
        sbuf,
        rbuf,
        Counts::List(rcounts),
        t,
        op,
        comm,
        request,
    )
}

// ---- the v and w forms ------------------------------------------------------------------

/// A copy of a counts or displacements argument of `p` entries where this
/// member uses it (`None` elsewhere: MPI lets the program pass anything
/// there). The starts read the copy (counts checked and widened to
/// `MPI_Count`, displacements to `MPI_Aint`, [`Side::v`]), so the program
/// may change its arrays after the init.
fn copied<T: Copy>(p: *const T, n: usize, used: bool, what: &str) -> Result<Option<Vec<T>>> {
    if !used {
        return Ok(None);
    }
    Ok(Some(array(p, n, what)?.to_vec()))
}

/// One side of a data movement as its init holds it: the buffer, the
/// datatype (held where this member uses the side, else held if it is a
/// committed type, else passed on as given) and, for a `v` side, copies
/// of its counts and displacements.
struct Side {
    buf: Addr,
    ty: Option<HeldType>,
    raw: Addr,
    counts: Option<Vec<i64>>,
    displs: Option<Vec<isize>>,
}

impl Side {
    /// A side of one count `n` (checked where used).
    fn plain<C: CountElem>(
        buf: *const c_void,
        n: C,
        t: *mut c_void,
        used: bool,
        what: &str,
    ) -> Result<Side> {
        if used {
            count(n, what)?;
        }
        Side::v(
            buf,
            std::ptr::null::<i64>(),
            std::ptr::null::<isize>(),
            t,
            0,
            false,
            used,
            ("", ""),
        )
    }

    /// A `v` side: counts and displacements for `p` peers.
    #[allow(clippy::too_many_arguments)]
    fn v<C: CountElem, D: DisplElem>(
        buf: *const c_void,
        counts: *const C,
        displs: *const D,
        t: *mut c_void,
        p: usize,
        arrays: bool,
        used: bool,
        what: (&str, &str),
    ) -> Result<Side> {
        let ty = if used {
            Some(HeldType::hold(t)?)
        } else {
            HeldType::hold(t).ok()
        };
        Ok(Side {
            buf: Addr::of(buf),
            ty,
            raw: Addr::of(t),
            counts: copied(counts, p, arrays && used, what.0)?
                .map(|v| {
                    v.into_iter()
                        .map(|c| count(c, what.0).map(|_| c.wide()))
                        .collect::<Result<Vec<_>>>()
                })
                .transpose()?,
            displs: copied(displs, p, arrays && used, what.1)?
                .map(|v| v.into_iter().map(DisplElem::aint).collect()),
        })
    }

    fn buf(&self) -> *mut c_void {
        self.buf.ptr()
    }

    /// The handle to pass for the datatype.
    fn ty(&self) -> *mut c_void {
        self.ty.as_ref().map_or(self.raw.ptr(), HeldType::handle)
    }

    fn counts(&self) -> *const i64 {
        self.counts
            .as_ref()
            .map_or(std::ptr::null(), |v| v.as_ptr())
    }

    fn displs(&self) -> *const isize {
        self.displs
            .as_ref()
            .map_or(std::ptr::null(), |v| v.as_ptr())
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Gatherv_init(
    sbuf: *const c_void,
    sn: c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    gatherv_init_call::<c_int, c_int>(
        "MPI_Gatherv_init",
        sbuf,
        sn,
        st,
        rbuf,
        rcounts,
        displs,
        rt,
        root,
        comm,
        _info,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Gatherv_init_c(
    sbuf: *const c_void,
    sn: i64,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const i64,
    displs: *const isize,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    gatherv_init_call::<i64, isize>(
        "MPI_Gatherv_init_c",
        sbuf,
        sn,
        st,
        rbuf,
        rcounts,
        displs,
        rt,
        root,
        comm,
        _info,
        request,
    )
}

/// `MPI_Gatherv_init(_c)` (`call`), generic over the count and displacement types of the two forms.
#[allow(clippy::too_many_arguments)]
fn gatherv_init_call<C: CountElem, D: DisplElem>(
    call: &'static str,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    displs: *const D,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    init(call, comm, request, |obj| {
        let (send_used, at_root) = sides(obj, Uses::GatherLike, root)?;
        let p = nbc::peers(obj)?.0;
        let send_used = send_used && !(at_root && super::coll::in_place(sbuf));
        let snd = Side::plain(sbuf, sn, st, send_used, "sendcount")?;
        let what = ("recvcounts", "displs");
        let rcv = Side::v(rbuf, rcounts, displs, rt, p, true, at_root, what)?;
        let sn = sn.wide();
        Ok(move |obj: &Arc<CommObj>, rq| {
            let (s, r) = (&snd, &rcv);
            nbc::start_gatherv(
                obj,
                s.buf(),
                sn,
                s.ty(),
                r.buf(),
                r.counts(),
                r.displs(),
                r.ty(),
                root,
                rq,
            )
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Scatterv_init(
    sbuf: *const c_void,
    scounts: *const c_int,
    displs: *const c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: c_int,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    scatterv_init_call::<c_int, c_int>(
        "MPI_Scatterv_init",
        sbuf,
        scounts,
        displs,
        st,
        rbuf,
        rn,
        rt,
        root,
        comm,
        _info,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Scatterv_init_c(
    sbuf: *const c_void,
    scounts: *const i64,
    displs: *const isize,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: i64,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    scatterv_init_call::<i64, isize>(
        "MPI_Scatterv_init_c",
        sbuf,
        scounts,
        displs,
        st,
        rbuf,
        rn,
        rt,
        root,
        comm,
        _info,
        request,
    )
}

/// `MPI_Scatterv_init(_c)` (`call`), generic over the count and displacement types of the two forms.
#[allow(clippy::too_many_arguments)]
fn scatterv_init_call<C: CountElem, D: DisplElem>(
    call: &'static str,
    sbuf: *const c_void,
    scounts: *const C,
    displs: *const D,
    st: *mut c_void,
    rbuf: *mut c_void,
    rn: C,
    rt: *mut c_void,
    root: c_int,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    init(call, comm, request, |obj| {
        let (at_root, recv_used) = sides(obj, Uses::ScatterLike, root)?;
        let p = nbc::peers(obj)?.0;
        let recv_used = recv_used && !(at_root && super::coll::in_place(rbuf.cast_const()));
        let what = ("sendcounts", "displs");
        let snd = Side::v(sbuf, scounts, displs, st, p, true, at_root, what)?;
        let rcv = Side::plain(rbuf, rn, rt, recv_used, "recvcount")?;
        let rn = rn.wide();
        Ok(move |obj: &Arc<CommObj>, rq| {
            let (s, r) = (&snd, &rcv);
            nbc::start_scatterv(
                obj,
                s.buf(),
                s.counts(),
                s.displs(),
                s.ty(),
                r.buf(),
                rn,
                r.ty(),
                root,
                rq,
            )
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Allgatherv_init(
    sbuf: *const c_void,
    sn: c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rt: *mut c_void,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    allgatherv_init_call::<c_int, c_int>(
        "MPI_Allgatherv_init",
        sbuf,
        sn,
        st,
        rbuf,
        rcounts,
        displs,
        rt,
        comm,
        _info,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Allgatherv_init_c(
    sbuf: *const c_void,
    sn: i64,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const i64,
    displs: *const isize,
    rt: *mut c_void,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    allgatherv_init_call::<i64, isize>(
        "MPI_Allgatherv_init_c",
        sbuf,
        sn,
        st,
        rbuf,
        rcounts,
        displs,
        rt,
        comm,
        _info,
        request,
    )
}

/// `MPI_Allgatherv_init(_c)` (`call`), generic over the count and displacement types of the two forms.
#[allow(clippy::too_many_arguments)]
fn allgatherv_init_call<C: CountElem, D: DisplElem>(
    call: &'static str,
    sbuf: *const c_void,
    sn: C,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    displs: *const D,
    rt: *mut c_void,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    init(call, comm, request, |obj| {
        let p = nbc::peers(obj)?.0;
        let snd = Side::plain(sbuf, sn, st, !super::coll::in_place(sbuf), "sendcount")?;
        let what = ("recvcounts", "displs");
        let rcv = Side::v(rbuf, rcounts, displs, rt, p, true, true, what)?;
        let sn = sn.wide();
        Ok(move |obj: &Arc<CommObj>, rq| {
            let (s, r) = (&snd, &rcv);
            let (rc, rd) = (r.counts(), r.displs());
            nbc::start_allgatherv(obj, s.buf(), sn, s.ty(), r.buf(), rc, rd, r.ty(), rq)
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallv_init(
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rt: *mut c_void,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    alltoallv_init_call::<c_int, c_int>(
        "MPI_Alltoallv_init",
        sbuf,
        scounts,
        sdispls,
        st,
        rbuf,
        rcounts,
        rdispls,
        rt,
        comm,
        _info,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallv_init_c(
    sbuf: *const c_void,
    scounts: *const i64,
    sdispls: *const isize,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const i64,
    rdispls: *const isize,
    rt: *mut c_void,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    alltoallv_init_call::<i64, isize>(
        "MPI_Alltoallv_init_c",
        sbuf,
        scounts,
        sdispls,
        st,
        rbuf,
        rcounts,
        rdispls,
        rt,
        comm,
        _info,
        request,
    )
}

/// `MPI_Alltoallv_init(_c)` (`call`), generic over the count and displacement types of the two forms.
#[allow(clippy::too_many_arguments)]
fn alltoallv_init_call<C: CountElem, D: DisplElem>(
    call: &'static str,
    sbuf: *const c_void,
    scounts: *const C,
    sdispls: *const D,
    st: *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    rdispls: *const D,
    rt: *mut c_void,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    init(call, comm, request, |obj| {
        let p = nbc::peers(obj)?.0;
        let send_used = !super::coll::in_place(sbuf);
        let swhat = ("sendcounts", "sdispls");
        let snd = Side::v(sbuf, scounts, sdispls, st, p, true, send_used, swhat)?;
        let rwhat = ("recvcounts", "rdispls");
        let rcv = Side::v(rbuf, rcounts, rdispls, rt, p, true, true, rwhat)?;
        Ok(move |obj: &Arc<CommObj>, rq| {
            let (s, r) = (&snd, &rcv);
            nbc::start_alltoallv(
                obj,
                s.buf(),
                s.counts(),
                s.displs(),
                s.ty(),
                r.buf(),
                r.counts(),
                r.displs(),
                r.ty(),
                rq,
            )
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallw_init(
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stypes: *const *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtypes: *const *mut c_void,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    alltoallw_init_call::<c_int, c_int>(
        "MPI_Alltoallw_init",
        sbuf,
        scounts,
        sdispls,
        stypes,
        rbuf,
        rcounts,
        rdispls,
        rtypes,
        comm,
        _info,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallw_init_c(
    sbuf: *const c_void,
    scounts: *const i64,
    sdispls: *const isize,
    stypes: *const *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const i64,
    rdispls: *const isize,
    rtypes: *const *mut c_void,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    alltoallw_init_call::<i64, isize>(
        "MPI_Alltoallw_init_c",
        sbuf,
        scounts,
        sdispls,
        stypes,
        rbuf,
        rcounts,
        rdispls,
        rtypes,
        comm,
        _info,
        request,
    )
}

/// `MPI_Alltoallw_init(_c)` (`call`), generic over the count and displacement types of the two forms.
#[allow(clippy::too_many_arguments)]
fn alltoallw_init_call<C: CountElem, D: DisplElem>(
    call: &'static str,
    sbuf: *const c_void,
    scounts: *const C,
    sdispls: *const D,
    stypes: *const *mut c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    rdispls: *const D,
    rtypes: *const *mut c_void,
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    init(call, comm, request, |obj| {
        let p = nbc::peers(obj)?.0;
        // The blocks hold their datatypes.
        let recvs = super::coll::w_blocks(rcounts, rdispls, rtypes, p, "recvtypes")?;
        let sends = if super::coll::in_place(sbuf) {
            None
        } else {
            Some(super::coll::w_blocks(
                scounts,
                sdispls,
                stypes,
                p,
                "sendtypes",
            )?)
        };
        let (s, r) = (Addr::of(sbuf), Addr::of(rbuf));
        Ok(move |obj: &Arc<CommObj>, rq| {
            nbc::ialltoallw(obj, s.ptr(), sends.clone(), r.ptr(), recvs.clone(), rq)
        })
    })
}
