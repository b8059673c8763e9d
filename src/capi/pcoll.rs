//! Persistent collectives (MPI 4.1 §6.13): `MPI_Barrier_init` and the
//! others make an inactive persistent request; each `MPI_Start` starts the
//! nonblocking form with the arguments kept at the init (the datatypes
//! held, so the program may free its handles), and the request completes
//! as that one does. The communicator and operation handles are used as
//! given: freeing them while the request lives is the program's error
//! (the next start reports it).

use super::p2p::{persistent_coll, CollStart};
use super::types::HeldType;
use super::{comm_obj, guard, h};
use crate::error::Result;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// Makes `*request` a persistent collective on `comm` that `start`
/// starts; `start` gets the request out-pointer.
fn init(
    call: &str,
    comm: *mut c_void,
    request: *mut *mut c_void,
    start: impl Fn(*mut *mut c_void) -> c_int + Send + Sync + 'static,
) -> c_int {
    guard(call, h(comm), || -> Result<()> {
        let obj = comm_obj(h(comm))?.arc();
        if request.is_null() {
            return Err(super::arg("request"));
        }
        persistent_coll(&obj, CollStart(Arc::new(start)), request)
    })
}

/// An address kept for the starts (a buffer the program keeps valid
/// while the request lives, as MPI requires).
#[derive(Clone, Copy)]
struct Addr(usize);

impl Addr {
    fn of<T>(p: *const T) -> Addr {
        Addr(p as usize)
    }
    fn ptr(self) -> *mut c_void {
        std::ptr::with_exposed_provenance_mut(self.0)
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier_init(
    comm: *mut c_void,
    _info: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    let c = Addr::of(comm);
    init("MPI_Barrier_init", comm, request, move |rq| {
        // SAFETY: the arguments the program gave the init.
        unsafe { super::coll::MPI_Ibarrier(c.ptr(), rq) }
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
    let ty = match HeldType::hold(t) {
        Ok(ty) => ty,
        Err(e) => return super::raise(None, "MPI_Bcast_init", &e),
    };
    let (b, c) = (Addr::of(buf), Addr::of(comm));
    init("MPI_Bcast_init", comm, request, move |rq| {
        // SAFETY: the arguments the program gave the init, the datatype
        // held.
        unsafe { super::coll::MPI_Ibcast(b.ptr(), n, ty.handle(), root, c.ptr(), rq) }
    })
}

/// The reductions' inits: `$call` with (sbuf, rbuf, count, type, op,
/// [root,] comm, request).
macro_rules! reduction_init {
    ($name:ident, $call:literal, $start:path $(, $root:ident)?) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sbuf: *const c_void,
            rbuf: *mut c_void,
            n: c_int,
            t: *mut c_void,
            op: *mut c_void,
            $($root: c_int,)?
            comm: *mut c_void,
            _info: *mut c_void,
            request: *mut *mut c_void,
        ) -> c_int {
            let ty = match HeldType::hold(t) {
                Ok(ty) => ty,
                Err(e) => return super::raise(None, $call, &e),
            };
            let (s, r, o, c) = (Addr::of(sbuf), Addr::of(rbuf), Addr::of(op), Addr::of(comm));
            init($call, comm, request, move |rq| {
                // SAFETY: the arguments the program gave the init, the
                // datatype held.
                unsafe { $start(s.ptr(), r.ptr(), n, ty.handle(), o.ptr(), $($root,)? c.ptr(), rq) }
            })
        }
    };
}

reduction_init!(
    MPI_Allreduce_init,
    "MPI_Allreduce_init",
    super::coll::MPI_Iallreduce
);
reduction_init!(
    MPI_Reduce_init,
    "MPI_Reduce_init",
    super::coll::MPI_Ireduce,
    root
);
reduction_init!(MPI_Scan_init, "MPI_Scan_init", super::nbc::MPI_Iscan);
reduction_init!(MPI_Exscan_init, "MPI_Exscan_init", super::nbc::MPI_Iexscan);
reduction_init!(
    MPI_Reduce_scatter_block_init,
    "MPI_Reduce_scatter_block_init",
    super::nbc::MPI_Ireduce_scatter_block
);

/// The data movements' inits: `$call` with (sbuf, scount, stype, rbuf,
/// rcount, rtype, [root,] comm, request).
macro_rules! movement_init {
    ($name:ident, $call:literal, $start:path $(, $root:ident)?) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sbuf: *const c_void,
            sn: c_int,
            st: *mut c_void,
            rbuf: *mut c_void,
            rn: c_int,
            rt: *mut c_void,
            $($root: c_int,)?
            comm: *mut c_void,
            _info: *mut c_void,
            request: *mut *mut c_void,
        ) -> c_int {
            // A type argument a rank does not use may be anything; hold
            // what is a type, pass the rest as given.
            let held = |t: *mut c_void| HeldType::hold(t).ok();
            let (sty, rty) = (held(st), held(rt));
            let (sraw, rraw) = (Addr::of(st), Addr::of(rt));
            let (s, r, c) = (Addr::of(sbuf), Addr::of(rbuf), Addr::of(comm));
            init($call, comm, request, move |rq| {
                let stp = sty.as_ref().map_or(sraw.ptr(), HeldType::handle);
                let rtp = rty.as_ref().map_or(rraw.ptr(), HeldType::handle);
                // SAFETY: the arguments the program gave the init, the
                // datatypes held.
                unsafe { $start(s.ptr(), sn, stp, r.ptr(), rn, rtp, $($root,)? c.ptr(), rq) }
            })
        }
    };
}

movement_init!(
    MPI_Allgather_init,
    "MPI_Allgather_init",
    super::nbc::MPI_Iallgather
);
movement_init!(
    MPI_Alltoall_init,
    "MPI_Alltoall_init",
    super::nbc::MPI_Ialltoall
);
movement_init!(
    MPI_Gather_init,
    "MPI_Gather_init",
    super::nbc::MPI_Igather,
    root
);
movement_init!(
    MPI_Scatter_init,
    "MPI_Scatter_init",
    super::nbc::MPI_Iscatter,
    root
);
