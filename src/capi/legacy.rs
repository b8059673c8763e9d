//! MPI 1 functions that MPI 3.0 removed (MPI 4.1 §19.2 lists them),
//! kept for the old programs MPICH still links: each is the call that
//! replaced it, under its old name. And `MPI_Pcontrol` (MPI 4.1 §15.2.4),
//! which "MPI libraries themselves make no use of": it returns at once.

use super::env::{MPI_Comm_create_errhandler, MPI_Comm_get_errhandler, MPI_Comm_set_errhandler};
use super::types::{
    MPI_Get_address, MPI_Type_create_hindexed, MPI_Type_create_hvector, MPI_Type_create_struct,
    MPI_Type_get_extent,
};
use std::ffi::{c_int, c_void};

/// `MPI_Address`: [`MPI_Get_address`].
#[no_mangle]
pub unsafe extern "C" fn MPI_Address(location: *const c_void, address: *mut isize) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    unsafe { MPI_Get_address(location, address) }
}

/// `MPI_Type_extent`: the extent of [`MPI_Type_get_extent`].
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_extent(t: *mut c_void, extent: *mut isize) -> c_int {
    let mut lb = 0isize;
    // SAFETY: `lb` is a local; `extent` the caller's output, passed on.
    unsafe { MPI_Type_get_extent(t, &mut lb, extent) }
}

/// `MPI_Type_lb`: the lower bound of [`MPI_Type_get_extent`].
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_lb(t: *mut c_void, lb: *mut isize) -> c_int {
    let mut extent = 0isize;
    // SAFETY: `extent` is a local; `lb` the caller's output, passed on.
    unsafe { MPI_Type_get_extent(t, lb, &mut extent) }
}

/// `MPI_Type_ub`: the lower bound plus the extent.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_ub(t: *mut c_void, ub: *mut isize) -> c_int {
    let (mut lb, mut extent) = (0isize, 0isize);
    // SAFETY: both outputs are locals.
    let rc = unsafe { MPI_Type_get_extent(t, &mut lb, &mut extent) };
    if rc != super::SUCCESS {
        return rc;
    }
    super::guard("MPI_Type_ub", super::COMM_NULL, || {
        super::out(ub, lb.wrapping_add(extent), "displacement")
    })
}

/// `MPI_Type_hvector`: [`MPI_Type_create_hvector`].
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_hvector(
    n: c_int,
    blocklen: c_int,
    stride: isize,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    unsafe { MPI_Type_create_hvector(n, blocklen, stride, old, newtype) }
}

/// `MPI_Type_hindexed`: [`MPI_Type_create_hindexed`].
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_hindexed(
    n: c_int,
    blocklens: *const c_int,
    displs: *const isize,
    old: *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    unsafe { MPI_Type_create_hindexed(n, blocklens, displs, old, newtype) }
}

/// `MPI_Type_struct`: [`MPI_Type_create_struct`].
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_struct(
    n: c_int,
    blocklens: *const c_int,
    displs: *const isize,
    types: *const *mut c_void,
    newtype: *mut *mut c_void,
) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    unsafe { MPI_Type_create_struct(n, blocklens, displs, types, newtype) }
}

/// `MPI_Errhandler_create`: [`MPI_Comm_create_errhandler`].
#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_create(
    f: Option<super::CommErrFn>,
    errh: *mut *mut c_void,
) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    unsafe { MPI_Comm_create_errhandler(f, errh) }
}

/// `MPI_Errhandler_set`: [`MPI_Comm_set_errhandler`].
#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_set(comm: *mut c_void, errh: *mut c_void) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    unsafe { MPI_Comm_set_errhandler(comm, errh) }
}

/// `MPI_Errhandler_get`: [`MPI_Comm_get_errhandler`].
#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_get(comm: *mut c_void, errh: *mut *mut c_void) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    unsafe { MPI_Comm_get_errhandler(comm, errh) }
}

/// `MPI_Pcontrol(level, ...)`: for profiling layers; MPI itself makes no
/// use of it (MPI 4.1 §15.2.4), so it returns at once. (Declared
/// variadic in C; the extra arguments are not read.)
#[no_mangle]
pub extern "C" fn MPI_Pcontrol(_level: c_int) -> c_int {
    super::SUCCESS
}
