//! Shared-memory windows in C (MPI 4.1 §12) over `comm::win`: handles,
//! and origin / target datatypes (packed from the origin, unpacked into
//! the target's memory, which every member maps). Errors are raised on
//! the window's communicator's error handler.

use super::p2p::done_request;
use super::types::{committed, simple_size, Reduction, TypeObj};
use super::CountElem;
use super::{comm_obj, count, guard, h, out, read, state, to_handle, CommObj, PROC_NULL};
use crate::comm::win::{check_assert, mode};
use crate::comm::{Flavor, LockType, WinOptions, Window};
use crate::error::{Error, ErrorClass, Result};
use crate::transport::rma::{Exposed, Memory};
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

/// `MPI_WIN_NULL`.
pub(crate) const WIN_NULL: usize = 0x110;
const LOCK_SHARED: c_int = 21;
const LOCK_EXCLUSIVE: c_int = 22;

/// A C window: the Rust one, its communicator, and its error handler
/// (a predefined one: `MPI_Win_set_errhandler`).
#[derive(Debug)]
pub(crate) struct WinObj {
    win: Window,
    comm: Arc<CommObj>,
    errh: std::sync::Mutex<super::Errh>,
    /// Set by `MPI_Win_free`: a cached lookup of this handle is stale.
    freed: crate::sync::AtomicU32,
    /// What `MPI_Win_get_attr` points at: base, size, displacement unit,
    /// create flavor, memory model.
    attrs: (usize, isize, c_int, c_int, c_int),
    /// `MPI_Win_set_name`'s name (empty until set).
    name: std::sync::Mutex<String>,
    /// The hints given at creation and by `MPI_Win_set_info`.
    info: std::sync::Mutex<super::env::Info>,
    /// A shared window made with `alloc_shared_noncontig`.
    noncontig: bool,
}

thread_local! {
    /// The window this thread used last (most RMA programs use one at a
    /// time): a lookup without the state lock.
    static LAST: std::cell::RefCell<Option<(usize, Arc<WinObj>)>> =
        const { std::cell::RefCell::new(None) };
}

fn win_obj(w: usize) -> Result<Arc<WinObj>> {
    let hit = LAST.with(|l| {
        l.borrow()
            .as_ref()
            // Relaxed: set by this process's MPI_Win_free, which MPI makes
            // the last call on the window from any thread.
            .filter(|(h, o)| *h == w && o.freed.load(crate::sync::Ordering::Relaxed) == 0)
            .map(|(_, o)| o.clone())
    });
    if let Some(o) = hit {
        return Ok(o);
    }
    let found = state().wins.get(w).cloned();
    if let Some(o) = &found {
        LAST.with(|l| *l.borrow_mut() = Some((w, o.clone())));
    }
    found.ok_or_else(|| {
        Error::new(
            ErrorClass::Win,
            if w == WIN_NULL {
                "MPI_WIN_NULL is not a window".to_string()
            } else {
                format!("{w:#x} is not a valid window handle")
            },
        )
    })
}

/// Runs `f` on the window this thread used last, if `w` is its handle:
/// no state lock and no reference count (the fast paths of `MPI_Put`,
/// `MPI_Get` and `MPI_Win_flush`). `None` otherwise, or when `f` says
/// `None` (the caller then takes the general path). `f` must not call
/// into MPI.
#[inline]
fn with_last<R>(w: usize, f: impl FnOnce(&WinObj) -> Option<R>) -> Option<R> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        LAST.with(|l| match l.borrow().as_ref() {
            // Relaxed: see `win_obj`.
            Some((hw, o)) if *hw == w && o.freed.load(crate::sync::Ordering::Relaxed) == 0 => f(o),
            _ => None,
        })
    }))
    .ok()
    .flatten()
}

/// `MPI_Put` / `MPI_Get` of builtin contiguous types with equal amounts
/// on both sides, to memory mapped here, inside an open epoch: one copy.
/// `None` for anything else (and for every error, which the general path
/// then reports through the window's handler).
#[allow(clippy::too_many_arguments)]
#[inline]
fn fast_put_get<C: CountElem>(
    origin: *mut c_void,
    ocount: C,
    otype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: C,
    ttype: *mut c_void,
    win: *mut c_void,
    is_put: bool,
) -> Option<c_int> {
    let (os, ts) = (simple_size(h(otype))?, simple_size(h(ttype))?);
    let (on, tn) = (
        usize::try_from(ocount.wide()).ok()?,
        usize::try_from(tcount.wide()).ok()?,
    );
    let len = os.checked_mul(on)?;
    if rank < 0 || disp < 0 || ts.checked_mul(tn)? != len {
        return None;
    }
    with_last(h(win), |o| {
        let (mem, _) = o.win.member(rank).ok()?;
        let off = o.win.access(rank, disp as usize, len).ok()?;
        let t = mem.mapped()?.wrapping_add(off);
        let (src, dst) = if is_put {
            (origin.cast_const().cast::<u8>(), t)
        } else {
            (t.cast_const(), origin.cast::<u8>())
        };
        if len > 0 {
            // SAFETY: the target range lies in the member's memory, mapped
            // here (checked by `access`); the origin holds `len` bytes by
            // the caller's contract; MPI forbids overlapping them (and the
            // copy allows it).
            unsafe { crate::ring::copy_between(src, dst, len) };
        }
        Some(super::SUCCESS)
    })
}

/// Runs a window call: its errors through the window's error handler
/// (`MPI_ERRORS_ARE_FATAL` unless the program set one).
pub(crate) fn on_win(call: &str, w: *mut c_void, f: impl FnOnce(&WinObj) -> Result<()>) -> c_int {
    let obj = match win_obj(h(w)) {
        Ok(o) => o,
        Err(e) => return super::raise(None, call, &e),
    };
    let r = super::caught_err(call, || f(&obj));
    super::p2p::progress_orphans();
    match r {
        Ok(()) => super::SUCCESS,
        Err(e) => win_raise(&obj, h(w), call, &e, super::code_of(&e)),
    }
}

/// As [`on_win`], for `MPI_Win_call_errhandler`: `code` is the code the
/// handler gets.
fn on_win_code(call: &str, w: *mut c_void, code: c_int, f: impl FnOnce() -> Result<()>) -> c_int {
    let obj = match win_obj(h(w)) {
        Ok(o) => o,
        Err(e) => return super::raise(None, call, &e),
    };
    match f() {
        Ok(()) => super::SUCCESS,
        Err(e) => win_raise(&obj, h(w), call, &e, code),
    }
}

/// Runs window `obj`'s error handler for error `e` (code `code`) of
/// `call`; the code to return. Does not return under a fatal handler.
fn win_raise(obj: &WinObj, handle: usize, call: &str, e: &Error, code: c_int) -> c_int {
    let errh = *super::lock(&obj.errh);
    match errh {
        super::Errh::Return => code,
        super::Errh::User(f, _) | super::Errh::WinUser(f, _) => {
            let mut hd = handle;
            let mut c = code;
            // SAFETY: the function the program registered with
            // MPI_Win_create_errhandler, called as MPI specifies (pointers
            // to the window handle and the code).
            unsafe { f(&mut hd, &mut c) };
            code
        }
        super::Errh::Fatal | super::Errh::Abort => {
            crate::error::say(format_args!(
                "shmpi: rank {}: {call} on a window failed with {}: {}; the window's error \
                 handler is MPI_ERRORS_ARE_FATAL, so the job is aborted",
                super::env::world_rank(),
                e.class().name(),
                e.detail()
            ));
            super::env::abort_job(e.class().code().max(1))
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_errhandler(
    f: Option<super::CommErrFn>,
    errh: *mut *mut c_void,
) -> c_int {
    guard("MPI_Win_create_errhandler", super::COMM_NULL, || {
        let f = f.ok_or_else(|| super::arg("win_errhandler_fn"))?;
        if errh.is_null() {
            return Err(super::arg("errhandler"));
        }
        // Kept for the life of the process, as communicators' are.
        let handle = state().errhs.insert_with(|h| super::Errh::WinUser(f, h));
        out(errh, to_handle(handle), "errhandler")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_errhandler(win: *mut c_void, errh: *mut c_void) -> c_int {
    on_win("MPI_Win_set_errhandler", win, |w| {
        let e = super::env::errh_of(h(errh))?;
        if let super::Errh::User(..) = e {
            return Err(Error::new(
                ErrorClass::Arg,
                "this error handler was made for communicators (MPI_Comm_create_errhandler); \
                 windows take MPI_Win_create_errhandler's or the predefined ones",
            ));
        }
        *super::lock(&w.errh) = e;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_errhandler(win: *mut c_void, errh: *mut *mut c_void) -> c_int {
    on_win("MPI_Win_get_errhandler", win, |w| {
        let e = *super::lock(&w.errh);
        out(errh, to_handle(super::env::errh_handle(e)), "errhandler")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_call_errhandler(win: *mut c_void, code: c_int) -> c_int {
    let e = Error::new(
        super::class_of(code)
            .and_then(ErrorClass::from_code)
            .unwrap_or(ErrorClass::Other),
        format!("error code {code} raised by MPI_Win_call_errhandler"),
    );
    let rc = on_win_code("MPI_Win_call_errhandler", win, code, || Err(e));
    if rc == code {
        super::SUCCESS
    } else {
        rc
    }
}

/// Registers a new window; its handle in `win`, its base in `base` (if
/// asked).
fn register(
    w: Window,
    obj: Arc<CommObj>,
    size: isize,
    unit: c_int,
    base: Option<*mut c_void>,
    info: super::env::Info,
    win: *mut *mut c_void,
) -> Result<()> {
    let (p, _, _) = w.shared_query(obj.comm.rank())?;
    if let Some(b) = base {
        out(b.cast::<usize>(), p as usize, "baseptr")?;
    }
    let noncontig = w.flavor() == Flavor::Shared && noncontig(&info);
    let flavor = match w.flavor() {
        Flavor::Create => 42,
        Flavor::Allocate => 41,
        Flavor::Shared => 44,
        Flavor::Dynamic => 43,
    };
    let handle = state().wins.insert(Arc::new(WinObj {
        win: w,
        comm: obj,
        errh: std::sync::Mutex::new(super::Errh::Fatal),
        freed: crate::sync::AtomicU32::new(0),
        attrs: (p as usize, size, unit, flavor, 31),
        name: std::sync::Mutex::new(String::new()),
        info: std::sync::Mutex::new(info),
        noncontig,
    }));
    out(win, to_handle(handle), "win")
}

/// Checks a window's size and displacement unit (an `MPI_Aint` in the
/// `_c` forms): the unit as the `int` that `MPI_WIN_DISP_UNIT` holds.
fn check_size(size: isize, unit: isize) -> Result<c_int> {
    if size < 0 || unit <= 0 {
        return Err(Error::new(
            ErrorClass::Arg,
            format!(
                "window size {size} must not be negative and displacement unit {unit} must be positive"
            ),
        ));
    }
    c_int::try_from(unit).map_err(|_| {
        Error::new(
            ErrorClass::Arg,
            format!("displacement unit {unit} is past INT_MAX (MPI_WIN_DISP_UNIT is an int)"),
        )
    })
}

/// The window options an info object gives (`alloc_shared_noncontig`;
/// other keys are hints this implementation may ignore, as MPI allows),
/// and its pairs (what `MPI_Win_get_info` gives back).
fn options(info: *mut c_void) -> Result<(WinOptions, super::env::Info)> {
    let pairs = super::env::info_pairs(h(info))?;
    let opts = WinOptions {
        noncontig: noncontig(&pairs),
    };
    Ok((opts, pairs))
}

fn noncontig(pairs: &super::env::Info) -> bool {
    pairs
        .iter()
        .any(|(k, v)| k == NONCONTIG && v.eq_ignore_ascii_case("true"))
}

/// The info key of [`WinOptions::noncontig`].
const NONCONTIG: &str = "alloc_shared_noncontig";

#[allow(clippy::too_many_arguments)]
fn allocate(
    call: &str,
    size: isize,
    unit: isize,
    info: *mut c_void,
    comm: *mut c_void,
    base: *mut c_void,
    win: *mut *mut c_void,
    flavor: Flavor,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?.arc();
        // A member that refuses its arguments takes part in the creation
        // as a refusal, so the others fail too instead of waiting for it.
        let checked = check_size(size, unit).and_then(|unit| {
            if base.is_null() || win.is_null() {
                return Err(super::arg("baseptr or win"));
            }
            options(info).map(|o| (o, unit))
        });
        let ((opts, pairs), unit) = checked.map_err(|e| obj.comm.win_refuse(flavor, e))?;
        let w = obj
            .comm
            .win_allocate_with(size as usize, unit as usize, opts, flavor)?;
        register(w, obj, size, unit, Some(base), pairs, win)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate_shared(
    size: isize,
    disp_unit: c_int,
    info: *mut c_void,
    comm: *mut c_void,
    baseptr: *mut c_void,
    win: *mut *mut c_void,
) -> c_int {
    allocate(
        "MPI_Win_allocate_shared",
        size,
        disp_unit as isize,
        info,
        comm,
        baseptr,
        win,
        Flavor::Shared,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate(
    size: isize,
    disp_unit: c_int,
    info: *mut c_void,
    comm: *mut c_void,
    baseptr: *mut c_void,
    win: *mut *mut c_void,
) -> c_int {
    // On one node every window's memory can be shared memory.
    allocate(
        "MPI_Win_allocate",
        size,
        disp_unit as isize,
        info,
        comm,
        baseptr,
        win,
        Flavor::Allocate,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate_shared_c(
    size: isize,
    disp_unit: isize,
    info: *mut c_void,
    comm: *mut c_void,
    baseptr: *mut c_void,
    win: *mut *mut c_void,
) -> c_int {
    allocate(
        "MPI_Win_allocate_shared_c",
        size,
        disp_unit,
        info,
        comm,
        baseptr,
        win,
        Flavor::Shared,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate_c(
    size: isize,
    disp_unit: isize,
    info: *mut c_void,
    comm: *mut c_void,
    baseptr: *mut c_void,
    win: *mut *mut c_void,
) -> c_int {
    allocate(
        "MPI_Win_allocate_c",
        size,
        disp_unit,
        info,
        comm,
        baseptr,
        win,
        Flavor::Allocate,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create(
    base: *mut c_void,
    size: isize,
    disp_unit: c_int,
    info: *mut c_void,
    comm: *mut c_void,
    win: *mut *mut c_void,
) -> c_int {
    win_create(
        "MPI_Win_create",
        base,
        size,
        disp_unit as isize,
        info,
        comm,
        win,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_c(
    base: *mut c_void,
    size: isize,
    disp_unit: isize,
    info: *mut c_void,
    comm: *mut c_void,
    win: *mut *mut c_void,
) -> c_int {
    win_create("MPI_Win_create_c", base, size, disp_unit, info, comm, win)
}

/// `MPI_Win_create(_c)` (`call`), the unit as an `MPI_Aint`.
fn win_create(
    call: &str,
    base: *mut c_void,
    size: isize,
    disp_unit: isize,
    info: *mut c_void,
    comm: *mut c_void,
    win: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?.arc();
        // As in `allocate`: a refusal takes part in the creation.
        let checked = check_size(size, disp_unit).and_then(|unit| {
            if win.is_null() || (base.is_null() && size > 0) {
                return Err(super::arg("base or win"));
            }
            options(info).map(|(_, pairs)| (pairs, unit))
        });
        let (pairs, disp_unit) = checked.map_err(|e| obj.comm.win_refuse(Flavor::Create, e))?;
        // SAFETY: MPI makes `[base, base + size)` the window's memory
        // until MPI_Win_free, accessed meanwhile only as its epochs allow.
        let mem = unsafe { Exposed::from_raw(base.cast(), size as usize) };
        let w = obj.comm.win_create(mem, disp_unit as usize)?;
        register(w, obj, size, disp_unit, None, pairs, win)
    })
}

/// `MPI_Win_create_dynamic` (MPI 4.1 §12.2.4): a window without memory;
/// `MPI_Win_attach` adds some. Displacements are addresses
/// (`MPI_Get_address`), in bytes; its `MPI_WIN_BASE` is `MPI_BOTTOM` and
/// its `MPI_WIN_SIZE` 0.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_dynamic(
    info: *mut c_void,
    comm: *mut c_void,
    win: *mut *mut c_void,
) -> c_int {
    guard("MPI_Win_create_dynamic", h(comm), || {
        let obj = comm_obj(h(comm))?.arc();
        let w = obj.comm.win_create_dynamic()?;
        // Checked after the collective (as `comm::give` does): a member
        // refused here alone does not leave the others waiting in it.
        let (_, pairs) = options(info)?;
        if win.is_null() {
            return Err(super::arg("win"));
        }
        register(w, obj, 0, 1, None, pairs, win)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_attach(win: *mut c_void, base: *mut c_void, size: isize) -> c_int {
    on_win("MPI_Win_attach", win, |w| {
        let len = usize::try_from(size).map_err(|_| {
            Error::new(
                ErrorClass::Arg,
                format!("size is {size}: it must not be negative"),
            )
        })?;
        w.win.attach(base as usize, len)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_detach(win: *mut c_void, base: *const c_void) -> c_int {
    on_win("MPI_Win_detach", win, |w| w.win.detach(base as usize))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_shared_query(
    win: *mut c_void,
    rank: c_int,
    size: *mut isize,
    disp_unit: *mut c_int,
    baseptr: *mut c_void,
) -> c_int {
    shared_query("MPI_Win_shared_query", win, rank, size, disp_unit, baseptr)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_shared_query_c(
    win: *mut c_void,
    rank: c_int,
    size: *mut isize,
    disp_unit: *mut isize,
    baseptr: *mut c_void,
) -> c_int {
    shared_query(
        "MPI_Win_shared_query_c",
        win,
        rank,
        size,
        disp_unit,
        baseptr,
    )
}

/// `MPI_Win_shared_query(_c)` (`call`): the unit as an `int` or an
/// `MPI_Aint` (`U`).
fn shared_query<U: TryFrom<usize>>(
    call: &str,
    win: *mut c_void,
    rank: c_int,
    size: *mut isize,
    disp_unit: *mut U,
    baseptr: *mut c_void,
) -> c_int {
    on_win(call, win, |w| {
        // MPI_PROC_NULL: the first member with a nonzero size.
        let r = if rank == PROC_NULL {
            (0..w.win.comm().size())
                .find(|&r| w.win.shared_query(r).is_ok_and(|q| q.1 > 0))
                .unwrap_or(0)
        } else {
            rank
        };
        let (p, s, u) = w.win.shared_query(r)?;
        out(size, s as isize, "size")?;
        // A unit was checked to fit an int when the window was made.
        let u =
            U::try_from(u).map_err(|_| Error::new(ErrorClass::Intern, "a unit past INT_MAX"))?;
        out(disp_unit, u, "disp_unit")?;
        out(baseptr.cast::<usize>(), p as usize, "baseptr")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_free(win: *mut *mut c_void) -> c_int {
    let w = read(win, "win").unwrap_or(std::ptr::null_mut());
    on_win("MPI_Win_free", w, |o| {
        // Refused with an epoch open while the handle still names the
        // window, so the program may end the epoch and free it again.
        o.win.check_closed()?;
        // The program's attributes go first (their delete callbacks may
        // still look at the window); a failed callback is the call's
        // error after the window is freed.
        let deleted = super::attr::delete_held(h(w), super::attr::Kind::Win);
        let obj = state()
            .wins
            .release(h(w))
            .ok_or_else(|| Error::new(ErrorClass::Win, "the window was freed"))?;
        super::attr::forget_held(h(w));
        // Relaxed: see `win_obj`.
        obj.freed.store(1, crate::sync::Ordering::Relaxed);
        LAST.with(|l| *l.borrow_mut() = None);
        out(win, to_handle(WIN_NULL), "win")?;
        // The memory goes with the last reference (this call's, or a
        // cache of another thread that used the window).
        obj.win.free_shared()?;
        deleted
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_fence(assert: c_int, win: *mut c_void) -> c_int {
    on_win("MPI_Win_fence", win, |w| w.win.fence_with(assert))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_lock(
    kind: c_int,
    rank: c_int,
    assert: c_int,
    win: *mut c_void,
) -> c_int {
    on_win("MPI_Win_lock", win, |w| {
        check_assert("MPI_Win_lock", assert, mode::START_LOCK)?;
        let k = match kind {
            LOCK_SHARED => LockType::Shared,
            LOCK_EXCLUSIVE => LockType::Exclusive,
            other => {
                return Err(Error::new(
                    ErrorClass::Arg,
                    format!("lock type {other} is neither MPI_LOCK_SHARED nor MPI_LOCK_EXCLUSIVE"),
                ))
            }
        };
        w.win.lock(k, rank)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_unlock(rank: c_int, win: *mut c_void) -> c_int {
    on_win("MPI_Win_unlock", win, |w| w.win.unlock(rank))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_lock_all(assert: c_int, win: *mut c_void) -> c_int {
    on_win("MPI_Win_lock_all", win, |w| {
        check_assert("MPI_Win_lock_all", assert, mode::START_LOCK)?;
        w.win.lock_all()
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_unlock_all(win: *mut c_void) -> c_int {
    on_win("MPI_Win_unlock_all", win, |w| w.win.unlock_all())
}

/// The flushes: inside a passive-target epoch (any, as MPICH: a flush of
/// a target this process has not locked is allowed while it holds
/// another), of a member of the window.
macro_rules! flush_fn {
    ($name:ident, $call:literal $(, $arg:ident)?) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: c_int,)? win: *mut c_void) -> c_int {
            let fast = with_last(h(win), |w| {
                $(w.win.member($arg).ok()?;)?
                w.win.flush().ok()
            });
            if fast.is_some() {
                return super::SUCCESS;
            }
            on_win($call, win, |w| {
                $(w.win.member($arg)?;)?
                w.win.flush()
            })
        }
    };
}

flush_fn!(MPI_Win_flush, "MPI_Win_flush", rank);
flush_fn!(MPI_Win_flush_all, "MPI_Win_flush_all");
flush_fn!(MPI_Win_flush_local, "MPI_Win_flush_local", rank);
flush_fn!(MPI_Win_flush_local_all, "MPI_Win_flush_local_all");

/// `MPI_Win_sync`: a memory fence, inside a passive-target epoch.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_sync(win: *mut c_void) -> c_int {
    if with_last(h(win), |w| w.win.sync().ok()).is_some() {
        return super::SUCCESS;
    }
    on_win("MPI_Win_sync", win, |w| w.win.sync())
}

/// Where an access lands: an address mapped in this process, or an
/// offset in a member's memory that only copies reach (`win_create` over
/// another process's ordinary memory).
enum At<'a> {
    Ptr(*mut c_void),
    Far(&'a Memory, usize),
}

impl At<'_> {
    /// Packs `n` instances of `ty` at the target.
    fn pack(&self, ty: &TypeObj, n: usize) -> Result<Vec<u8>> {
        match *self {
            At::Ptr(p) => ty.pack(p, n),
            At::Far(m, off) => {
                let runs = ty.runs(n, off, usize::MAX);
                let mut v = vec![0u8; runs.iter().map(|r| r.1).sum()];
                m.read_runs(&runs, &mut v)?;
                Ok(v)
            }
        }
    }

    /// Unpacks `data` into `n` instances of `ty` at the target.
    fn unpack(&self, data: &[u8], ty: &TypeObj, n: usize) -> Result<()> {
        match *self {
            At::Ptr(p) => ty.unpack(data, p, n).map(|_| ()),
            At::Far(m, off) => m.write_runs(&ty.runs(n, off, data.len()), data),
        }
    }
}

/// The target of `n` instances of `ty` at displacement `disp` of
/// `rank`, after the epoch and range checks.
fn target<'a>(w: &'a WinObj, rank: c_int, disp: isize, n: usize, ty: &TypeObj) -> Result<At<'a>> {
    if disp < 0 {
        return Err(Error::new(
            ErrorClass::RmaRange,
            format!("target displacement {disp} is negative"),
        ));
    }
    let ext = ty.extent();
    let last = (n.max(1) as isize - 1).saturating_mul(ext);
    let lo = ty.true_lb.min(ty.true_lb.saturating_add(last));
    let hi = ty.true_ub.max(ty.true_ub.saturating_add(last));
    // Check [disp*unit + lo, disp*unit + hi) lies in the target's memory.
    let (mem, unit) = w.win.member(rank)?;
    let start = (disp as usize)
        .checked_mul(unit)
        .ok_or_else(|| Error::new(ErrorClass::RmaRange, "the target displacement overflows"))?;
    if (start as isize).saturating_add(lo) < 0 {
        return Err(Error::new(
            ErrorClass::RmaRange,
            "the target datatype reaches before the target's memory",
        ));
    }
    let span = if n == 0 { 0 } else { hi.max(0) as usize };
    let off = w.win.access(rank, disp as usize, span)?;
    Ok(match mem.mapped() {
        Some(p) => At::Ptr(p.wrapping_add(off).cast()),
        None => At::Far(mem, off),
    })
}

#[allow(clippy::too_many_arguments)]
fn put_get<C: CountElem>(
    call: &str,
    origin: *mut c_void,
    ocount: C,
    otype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: C,
    ttype: *mut c_void,
    win: *mut c_void,
    is_put: bool,
) -> c_int {
    on_win(call, win, |w| {
        if rank == PROC_NULL {
            return Ok(());
        }
        let oty = committed(h(otype))?;
        let tty = committed(h(ttype))?;
        let (on, tn) = (
            count(ocount, "origin_count")?,
            count(tcount, "target_count")?,
        );
        let at = target(w, rank, disp, tn, &tty)?;
        if let (Some(oo), Some(to)) = (oty.contiguous(on), tty.contiguous(tn)) {
            // Both sides one run: one copy, no staging. (The origin's
            // bytes checked: its count may be 64 bits, the `_c` forms.)
            let len = super::p2p::nbytes(on, &oty)?;
            if tn.checked_mul(tty.size) != Some(len) {
                return Err(Error::new(
                    ErrorClass::Count,
                    "origin and target hold different amounts of data",
                ));
            }
            let o = (origin as *mut u8).wrapping_offset(oo);
            let t = match at {
                At::Ptr(p) => (p as *mut u8).wrapping_offset(to),
                At::Far(m, off) => {
                    let at = (off as isize + to) as usize;
                    if len == 0 {
                        return Ok(());
                    }
                    return if is_put {
                        // SAFETY: the origin holds `len` readable bytes
                        // at `o` by the caller's contract.
                        m.write(at, unsafe {
                            std::slice::from_raw_parts(o.cast_const(), len)
                        })
                    } else {
                        // SAFETY: the origin holds `len` writable bytes at
                        // `o` by the caller's contract, which MPI leaves
                        // to the get until the epoch ends.
                        m.read(at, unsafe { std::slice::from_raw_parts_mut(o, len) })
                    };
                }
            };
            let (src, dst) = if is_put { (o, t) } else { (t, o) };
            if len > 0 {
                // SAFETY: `src` and `dst` each hold `len` bytes: the origin
                // by the caller's contract, the target inside the window
                // (checked by `target`); they do not overlap (MPI forbids
                // an origin buffer inside the target range it accesses).
                unsafe { std::ptr::copy(src, dst, len) };
            }
            return Ok(());
        }
        if is_put {
            let data = oty.pack(origin, on)?;
            at.unpack(&data, &tty, tn)?;
        } else {
            let data = at.pack(&tty, tn)?;
            oty.unpack(&data, origin, on)?;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Put(
    origin: *const c_void,
    ocount: c_int,
    otype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: c_int,
    ttype: *mut c_void,
    win: *mut c_void,
) -> c_int {
    let origin = origin as *mut c_void;
    if let Some(rc) = fast_put_get(origin, ocount, otype, rank, disp, tcount, ttype, win, true) {
        return rc;
    }
    put_get(
        "MPI_Put", origin, ocount, otype, rank, disp, tcount, ttype, win, true,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get(
    origin: *mut c_void,
    ocount: c_int,
    otype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: c_int,
    ttype: *mut c_void,
    win: *mut c_void,
) -> c_int {
    if let Some(rc) = fast_put_get(origin, ocount, otype, rank, disp, tcount, ttype, win, false) {
        return rc;
    }
    put_get(
        "MPI_Get", origin, ocount, otype, rank, disp, tcount, ttype, win, false,
    )
}

/// A request-based access (`MPI_Rput`, `Rget`, `Raccumulate`,
/// `Rget_accumulate`): only inside a passive-target epoch (MPI 4.1
/// §12.3.5; MPICH 4.0 and Open MPI 4.1 let them pass), else
/// `MPI_ERR_RMA_SYNC`. `access` is
/// the plain call; the copy is done when it returns, so the request is
/// complete at once.
fn request_based(
    call: &str,
    win: *mut c_void,
    request: *mut *mut c_void,
    access: impl FnOnce() -> c_int,
) -> c_int {
    let rc = on_win(call, win, |w| w.win.check_passive(call));
    if rc != super::SUCCESS {
        return rc;
    }
    let rc = access();
    if rc != super::SUCCESS {
        return rc;
    }
    on_win(call, win, |w| done_request(&w.comm, request))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rput(
    origin: *const c_void,
    ocount: c_int,
    otype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: c_int,
    ttype: *mut c_void,
    win: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    request_based("MPI_Rput", win, request, || {
        // SAFETY: the caller's arguments, passed on unchanged.
        unsafe { MPI_Put(origin, ocount, otype, rank, disp, tcount, ttype, win) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rget(
    origin: *mut c_void,
    ocount: c_int,
    otype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: c_int,
    ttype: *mut c_void,
    win: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    request_based("MPI_Rget", win, request, || {
        // SAFETY: the caller's arguments, passed on unchanged.
        unsafe { MPI_Get(origin, ocount, otype, rank, disp, tcount, ttype, win) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Put_c(
    origin: *const c_void,
    ocount: i64,
    otype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: i64,
    ttype: *mut c_void,
    win: *mut c_void,
) -> c_int {
    let origin = origin as *mut c_void;
    if let Some(rc) = fast_put_get(origin, ocount, otype, rank, disp, tcount, ttype, win, true) {
        return rc;
    }
    put_get(
        "MPI_Put_c",
        origin,
        ocount,
        otype,
        rank,
        disp,
        tcount,
        ttype,
        win,
        true,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_c(
    origin: *mut c_void,
    ocount: i64,
    otype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: i64,
    ttype: *mut c_void,
    win: *mut c_void,
) -> c_int {
    if let Some(rc) = fast_put_get(origin, ocount, otype, rank, disp, tcount, ttype, win, false) {
        return rc;
    }
    put_get(
        "MPI_Get_c",
        origin,
        ocount,
        otype,
        rank,
        disp,
        tcount,
        ttype,
        win,
        false,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rput_c(
    origin: *const c_void,
    ocount: i64,
    otype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: i64,
    ttype: *mut c_void,
    win: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    request_based("MPI_Rput_c", win, request, || {
        // SAFETY: the caller's arguments, passed on unchanged.
        unsafe { MPI_Put_c(origin, ocount, otype, rank, disp, tcount, ttype, win) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rget_c(
    origin: *mut c_void,
    ocount: i64,
    otype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: i64,
    ttype: *mut c_void,
    win: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    request_based("MPI_Rget_c", win, request, || {
        // SAFETY: the caller's arguments, passed on unchanged.
        unsafe { MPI_Get_c(origin, ocount, otype, rank, disp, tcount, ttype, win) }
    })
}

/// Get_accumulate in general: `result` (if any) gets the target's old
/// contents, then `target = origin op target`, under the window's
/// accumulate lock.
#[allow(clippy::too_many_arguments)]
fn get_acc(
    w: &WinObj,
    origin: *const c_void,
    on: usize,
    oty: &TypeObj,
    result: Option<(*mut c_void, usize, &TypeObj)>,
    rank: c_int,
    disp: isize,
    tn: usize,
    ttype: usize,
    op: usize,
) -> Result<()> {
    if rank == PROC_NULL {
        return Ok(());
    }
    let red = Reduction::new(op, ttype, tn)?;
    let at = target(w, rank, disp, tn, &red.ty)?;
    let data = if on == 0 {
        Vec::new()
    } else {
        oty.pack(origin, on)?
    };
    w.win.atomically(|| {
        let mut cur = at.pack(&red.ty, tn)?;
        if let Some((rbuf, rn, rty)) = result {
            rty.unpack(&cur, rbuf, rn)?;
        }
        if data.len() == cur.len() {
            red.apply(&data, &mut cur)?;
        } else if op != super::types::NO_OP {
            return Err(Error::new(
                ErrorClass::Count,
                format!(
                    "the origin has {} bytes of data, the target {}",
                    data.len(),
                    cur.len()
                ),
            ));
        }
        at.unpack(&cur, &red.ty, tn)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Accumulate(
    origin: *const c_void,
    ocount: c_int,
    otype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: c_int,
    ttype: *mut c_void,
    op: *mut c_void,
    win: *mut c_void,
) -> c_int {
    accumulate(
        "MPI_Accumulate",
        origin,
        ocount,
        otype,
        rank,
        disp,
        tcount,
        ttype,
        op,
        win,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Accumulate_c(
    origin: *const c_void,
    ocount: i64,
    otype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: i64,
    ttype: *mut c_void,
    op: *mut c_void,
    win: *mut c_void,
) -> c_int {
    accumulate(
        "MPI_Accumulate_c",
        origin,
        ocount,
        otype,
        rank,
        disp,
        tcount,
        ttype,
        op,
        win,
    )
}

/// `MPI_Accumulate(_c)` (`call`), generic over the count type.
#[allow(clippy::too_many_arguments)]
fn accumulate<C: CountElem>(
    call: &str,
    origin: *const c_void,
    ocount: C,
    otype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: C,
    ttype: *mut c_void,
    op: *mut c_void,
    win: *mut c_void,
) -> c_int {
    on_win(call, win, |w| {
        let oty = committed(h(otype))?;
        let (on, tn) = (
            count(ocount, "origin_count")?,
            count(tcount, "target_count")?,
        );
        get_acc(w, origin, on, &oty, None, rank, disp, tn, h(ttype), h(op))
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_accumulate(
    origin: *const c_void,
    ocount: c_int,
    otype: *mut c_void,
    result: *mut c_void,
    rcount: c_int,
    rtype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: c_int,
    ttype: *mut c_void,
    op: *mut c_void,
    win: *mut c_void,
) -> c_int {
    get_accumulate(
        "MPI_Get_accumulate",
        origin,
        ocount,
        otype,
        result,
        rcount,
        rtype,
        rank,
        disp,
        tcount,
        ttype,
        op,
        win,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_accumulate_c(
    origin: *const c_void,
    ocount: i64,
    otype: *mut c_void,
    result: *mut c_void,
    rcount: i64,
    rtype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: i64,
    ttype: *mut c_void,
    op: *mut c_void,
    win: *mut c_void,
) -> c_int {
    get_accumulate(
        "MPI_Get_accumulate_c",
        origin,
        ocount,
        otype,
        result,
        rcount,
        rtype,
        rank,
        disp,
        tcount,
        ttype,
        op,
        win,
    )
}

/// `MPI_Get_accumulate(_c)` (`call`), generic over the count type.
#[allow(clippy::too_many_arguments)]
fn get_accumulate<C: CountElem>(
    call: &str,
    origin: *const c_void,
    ocount: C,
    otype: *mut c_void,
    result: *mut c_void,
    rcount: C,
    rtype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: C,
    ttype: *mut c_void,
    op: *mut c_void,
    win: *mut c_void,
) -> c_int {
    on_win(call, win, |w| {
        let on = count(ocount, "origin_count")?;
        let oty = if on == 0 {
            committed(h(rtype))?
        } else {
            committed(h(otype))?
        };
        let rty = committed(h(rtype))?;
        let (rn, tn) = (
            count(rcount, "result_count")?,
            count(tcount, "target_count")?,
        );
        get_acc(
            w,
            origin,
            on,
            &oty,
            Some((result, rn, &rty)),
            rank,
            disp,
            tn,
            h(ttype),
            h(op),
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Raccumulate(
    origin: *const c_void,
    ocount: c_int,
    otype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: c_int,
    ttype: *mut c_void,
    op: *mut c_void,
    win: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    request_based("MPI_Raccumulate", win, request, || {
        // SAFETY: the caller's arguments, passed on unchanged.
        unsafe { MPI_Accumulate(origin, ocount, otype, rank, disp, tcount, ttype, op, win) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rget_accumulate(
    origin: *const c_void,
    ocount: c_int,
    otype: *mut c_void,
    result: *mut c_void,
    rcount: c_int,
    rtype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: c_int,
    ttype: *mut c_void,
    op: *mut c_void,
    win: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    request_based("MPI_Rget_accumulate", win, request, || {
        // SAFETY: the caller's arguments, passed on unchanged.
        unsafe {
            MPI_Get_accumulate(
                origin, ocount, otype, result, rcount, rtype, rank, disp, tcount, ttype, op, win,
            )
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Raccumulate_c(
    origin: *const c_void,
    ocount: i64,
    otype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: i64,
    ttype: *mut c_void,
    op: *mut c_void,
    win: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    request_based("MPI_Raccumulate_c", win, request, || {
        // SAFETY: the caller's arguments, passed on unchanged.
        unsafe { MPI_Accumulate_c(origin, ocount, otype, rank, disp, tcount, ttype, op, win) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rget_accumulate_c(
    origin: *const c_void,
    ocount: i64,
    otype: *mut c_void,
    result: *mut c_void,
    rcount: i64,
    rtype: *mut c_void,
    rank: c_int,
    disp: isize,
    tcount: i64,
    ttype: *mut c_void,
    op: *mut c_void,
    win: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    request_based("MPI_Rget_accumulate_c", win, request, || {
        // SAFETY: the caller's arguments, passed on unchanged.
        unsafe {
            MPI_Get_accumulate_c(
                origin, ocount, otype, result, rcount, rtype, rank, disp, tcount, ttype, op, win,
            )
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Fetch_and_op(
    origin: *const c_void,
    result: *mut c_void,
    t: *mut c_void,
    rank: c_int,
    disp: isize,
    op: *mut c_void,
    win: *mut c_void,
) -> c_int {
    on_win("MPI_Fetch_and_op", win, |w| {
        let ty = committed(h(t))?;
        let on = usize::from(h(op) != super::types::NO_OP);
        get_acc(
            w,
            origin,
            on,
            &ty,
            Some((result, 1, &ty)),
            rank,
            disp,
            1,
            h(t),
            h(op),
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Compare_and_swap(
    origin: *const c_void,
    compare: *const c_void,
    result: *mut c_void,
    t: *mut c_void,
    rank: c_int,
    disp: isize,
    win: *mut c_void,
) -> c_int {
    on_win("MPI_Compare_and_swap", win, |w| {
        if rank == PROC_NULL {
            return Ok(());
        }
        let ty = committed(h(t))?;
        let at = target(w, rank, disp, 1, &ty)?;
        let new = ty.pack(origin, 1)?;
        let cmp = ty.pack(compare, 1)?;
        w.win.atomically(|| {
            let cur = at.pack(&ty, 1)?;
            ty.unpack(&cur, result, 1)?;
            if cur == cmp {
                at.unpack(&new, &ty, 1)?;
            }
            Ok(())
        })
    })
}

/// The window ranks of the members of group `g` (in the group's order).
fn group_ranks(w: &WinObj, g: *mut c_void) -> Result<Vec<i32>> {
    let grp = super::comm::group_obj(h(g))?;
    let all: Vec<i32> = (0..grp.size() as i32).collect();
    let r = grp.translate_ranks(&all, &w.win.comm().group())?;
    if r.iter().any(|&x| x < 0) {
        return Err(Error::new(
            ErrorClass::Group,
            "the group has processes outside the window",
        ));
    }
    Ok(r)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_post(
    group: *mut c_void,
    assert: c_int,
    win: *mut c_void,
) -> c_int {
    on_win("MPI_Win_post", win, |w| {
        check_assert("MPI_Win_post", assert, mode::POST)?;
        w.win.post(&group_ranks(w, group)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_start(
    group: *mut c_void,
    assert: c_int,
    win: *mut c_void,
) -> c_int {
    on_win("MPI_Win_start", win, |w| {
        check_assert("MPI_Win_start", assert, mode::START_LOCK)?;
        w.win.start(&group_ranks(w, group)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_complete(win: *mut c_void) -> c_int {
    on_win("MPI_Win_complete", win, |w| w.win.complete())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_wait(win: *mut c_void) -> c_int {
    on_win("MPI_Win_wait", win, |w| w.win.wait())
}

/// `MPI_Win_test`: the nonblocking `MPI_Win_wait`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_test(win: *mut c_void, flag: *mut c_int) -> c_int {
    on_win("MPI_Win_test", win, |w| {
        if flag.is_null() {
            return Err(super::arg("flag"));
        }
        let done = w.win.test()?;
        out(flag, c_int::from(done), "flag")
    })
}

/// `MPI_Win_get_group`: the group of the window's communicator.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_group(win: *mut c_void, group: *mut *mut c_void) -> c_int {
    on_win("MPI_Win_get_group", win, |w| {
        super::comm::new_group(w.comm.comm.group(), group)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_name(win: *mut c_void, name: *const c_char) -> c_int {
    on_win("MPI_Win_set_name", win, |w| {
        let mut n = super::c_str(name, "win_name")?;
        // MPI_MAX_OBJECT_NAME (128) with its NUL, as communicators' names.
        while n.len() > 127 {
            n.pop();
        }
        *super::lock(&w.name) = n;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_name(
    win: *mut c_void,
    name: *mut c_char,
    len: *mut c_int,
) -> c_int {
    on_win("MPI_Win_get_name", win, |w| {
        let n = super::put_str(name, 128, &super::lock(&w.name), "win_name")?;
        out(len, n, "resultlen")
    })
}

/// Predefined window attribute keys (MPI 5.0 ABI values).
const WIN_BASE: c_int = 20001;
const WIN_DISP_UNIT: c_int = 20002;
const WIN_SIZE: c_int = 20003;
const WIN_CREATE_FLAVOR: c_int = 20004;
const WIN_MODEL: c_int = 20005;

/// Whether `k` is one of the predefined window keys (read only).
pub(crate) fn is_predefined_key(k: c_int) -> bool {
    (WIN_BASE..=WIN_MODEL).contains(&k)
}

/// `MPI_Win_set_info`: the pairs of `info` replace those of the same
/// keys; none changes what the window does (hints MPI lets an
/// implementation ignore; `alloc_shared_noncontig` acts at creation only).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_info(win: *mut c_void, info: *mut c_void) -> c_int {
    on_win("MPI_Win_set_info", win, |w| {
        let pairs = super::env::info_pairs(h(info))?;
        super::env::merge_info(&mut super::lock(&w.info), pairs);
        Ok(())
    })
}

/// `MPI_Win_get_info`: a new info object with the hints given, and
/// `alloc_shared_noncontig` as the window was made (for a shared window).
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_info(win: *mut c_void, info: *mut *mut c_void) -> c_int {
    on_win("MPI_Win_get_info", win, |w| {
        let mut pairs = super::lock(&w.info).clone();
        if w.win.flavor() == Flavor::Shared {
            let used = w.noncontig.to_string();
            match pairs.iter_mut().find(|(k, _)| k == NONCONTIG) {
                Some(p) => p.1 = used,
                None => pairs.push((NONCONTIG.to_string(), used)),
            }
        }
        super::env::new_info(pairs, info)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_attr(
    win: *mut c_void,
    key: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    on_win("MPI_Win_get_attr", win, |w| {
        let a = &w.attrs;
        // MPI_WIN_BASE's value is the address itself; the others point at
        // the value (MPI 4.1 §12.2.6).
        let v: usize = match key {
            WIN_BASE => a.0,
            WIN_SIZE => &a.1 as *const isize as usize,
            WIN_DISP_UNIT => &a.2 as *const c_int as usize,
            WIN_CREATE_FLAVOR => &a.3 as *const c_int as usize,
            WIN_MODEL => &a.4 as *const c_int as usize,
            _ => return super::attr::win_get_user(win, key, value, flag),
        };
        out(value.cast::<usize>(), v, "attribute_val")?;
        out(flag, 1, "flag")
    })
}
