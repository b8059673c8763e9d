//! The C ABI (`include/mpi.h`): the exported `MPI_*` functions, a thin
//! layer over the Rust API.
//!
//! Layer `capi` (top; imports every layer). Every function checks its
//! arguments, maps handles to the Rust objects behind them, calls the
//! Rust API, and turns an error into an MPI error code through the
//! communicator's error handler. No panic crosses the boundary: each
//! entry point runs inside `guard`, which turns a caught panic into
//! `MPI_ERR_INTERN` through the error handler.
//!
//! Handles (`docs/c-abi.md`) are integers in pointer-typed C handles:
//! predefined ones have the MPI 5.0 ABI values (`MPI_COMM_WORLD` is
//! 0x101), created ones are `kind base + table index` (communicators from
//! 0x1000_0000, groups 0x2000_0000, ...), so a handle of the wrong kind
//! or a freed one is found invalid in its table and reported with the
//! matching class, never dereferenced.
//!
//! The C layer keeps its own per-communicator state (`CommObj`: error
//! handler, attributes, info); the Rust communicators under it all have
//! `ErrHandler::Return`, so every error comes back here and the C error
//! handler decides.
//!
//! # Safety contract
//! The exported functions are `unsafe extern "C"`: their pointer
//! arguments must satisfy the MPI standard's rules for that argument
//! (valid for the count and datatype given, output arguments writable),
//! which a C caller promises by calling them. Null output pointers are
//! checked and reported as `MPI_ERR_ARG`.
#![allow(clippy::missing_safety_doc)]

mod attr;
mod coll;
mod comm;
mod connect;
mod env;
mod greq;
mod legacy;
mod nbc;
mod p2p;
mod part;
mod pcoll;
mod session;
mod topo;
mod types;
mod win;

use crate::comm::Communicator;
use crate::error::{Error, ErrorClass, Result};
use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

pub(crate) use types::TypeObj;

// ---- handle values -------------------------------------------------------

/// `MPI_COMM_NULL`, `MPI_COMM_WORLD`, `MPI_COMM_SELF`.
pub(crate) const COMM_NULL: usize = 0x100;
pub(crate) const COMM_WORLD: usize = 0x101;
pub(crate) const COMM_SELF: usize = 0x102;
pub(crate) const GROUP_NULL: usize = 0x108;
pub(crate) const GROUP_EMPTY: usize = 0x109;
pub(crate) const MESSAGE_NULL: usize = 0x128;
pub(crate) const MESSAGE_NO_PROC: usize = 0x129;
pub(crate) const INFO_NULL: usize = 0x130;
pub(crate) const ERRHANDLER_NULL: usize = 0x140;
pub(crate) const ERRORS_ARE_FATAL: usize = 0x141;
pub(crate) const ERRORS_RETURN: usize = 0x142;
pub(crate) const ERRORS_ABORT: usize = 0x143;
pub(crate) const REQUEST_NULL: usize = 0x180;
/// The request of a send that completed in its call (the ring took the
/// whole message): shared by all such sends, it lives in no table, and
/// completing it gives the empty status and `MPI_REQUEST_NULL` (as
/// MPICH's completed "lightweight" requests cost no allocation).
pub(crate) const REQUEST_SENT: usize = 0x181;
/// Light receive handles (`MPI_Irecv`'s fast path, `p2p::Reqs`): this
/// bit, `LIGHT_SELF` for `MPI_COMM_SELF` (else `MPI_COMM_WORLD`), the
/// engine slot's generation in bits 30-61 and its index in bits 0-29.
/// Above every table's range, so no table handle is one.
pub(crate) const LIGHT_RECV: usize = 1 << 63;
pub(crate) const LIGHT_SELF: usize = 1 << 62;
pub(crate) const DATATYPE_NULL: usize = 0x200;
pub(crate) const OP_NULL: usize = 0x20;

/// The first handle of each kind of created object.
pub(crate) const COMM_BASE: usize = 0x1000_0000;
pub(crate) const GROUP_BASE: usize = 0x2000_0000;
pub(crate) const TYPE_BASE: usize = 0x3000_0000;
pub(crate) const OP_BASE: usize = 0x4000_0000;
pub(crate) const REQ_BASE: usize = 0x5000_0000;
pub(crate) const INFO_BASE: usize = 0x6000_0000;
pub(crate) const ERRH_BASE: usize = 0x7000_0000;
pub(crate) const MSG_BASE: usize = 0x8000_0000;
pub(crate) const WIN_BASE: usize = 0x9000_0000;
pub(crate) const SESSION_BASE: usize = 0xa000_0000;
const KIND_SPAN: usize = 0x1000_0000;

pub(crate) const SUCCESS: c_int = 0;
pub(crate) const ANY_SOURCE: c_int = -1;
pub(crate) const PROC_NULL: c_int = -2;
pub(crate) const ROOT: c_int = -3;
pub(crate) const ANY_TAG: c_int = -31;
pub(crate) const UNDEFINED: c_int = -32766;
pub(crate) const KEYVAL_INVALID: c_int = -127;

/// `MPI_IN_PLACE`: the ABI's sentinel address 1 (compared, never
/// dereferenced).
#[allow(clippy::manual_dangling_ptr)]
pub(crate) const IN_PLACE: *const c_void = 1 as *const c_void;

// ---- tables ----------------------------------------------------------------

/// Objects of one kind, by handle. A slot that is `None` but not on the
/// free list is taken out by a call in progress (a request being waited
/// on).
#[derive(Debug)]
pub(crate) struct Table<T> {
    base: usize,
    slots: Vec<Option<T>>,
    free: Vec<usize>,
}

impl<T> Table<T> {
    const fn new(base: usize) -> Table<T> {
        Table {
            base,
            slots: Vec::new(),
            free: Vec::new(),
        }
    }

    fn index(&self, h: usize) -> Option<usize> {
        (h >= self.base && h < self.base + KIND_SPAN).then(|| h - self.base)
    }

    pub(crate) fn insert(&mut self, v: T) -> usize {
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(v);
                i
            }
            None => {
                self.slots.push(Some(v));
                self.slots.len() - 1
            }
        };
        self.base + i
    }

    /// Inserts the object that `make` builds from its future handle.
    pub(crate) fn insert_with(&mut self, make: impl FnOnce(usize) -> T) -> usize {
        let i = self.free.last().copied().unwrap_or(self.slots.len());
        let h = self.insert(make(self.base + i));
        debug_assert_eq!(h, self.base + i);
        h
    }

    pub(crate) fn get(&self, h: usize) -> Option<&T> {
        self.slots.get(self.index(h)?)?.as_ref()
    }

    pub(crate) fn get_mut(&mut self, h: usize) -> Option<&mut T> {
        let i = self.index(h)?;
        self.slots.get_mut(i)?.as_mut()
    }

    /// Takes the object out, keeping its handle reserved.
    pub(crate) fn take(&mut self, h: usize) -> Option<T> {
        let i = self.index(h)?;
        self.slots.get_mut(i)?.take()
    }

    /// Takes the object out if `f` says so of it (one lookup), keeping
    /// its handle reserved.
    #[inline]
    pub(crate) fn take_if(&mut self, h: usize, f: impl FnOnce(&T) -> bool) -> Option<T> {
        let i = self.index(h)?;
        let slot = self.slots.get_mut(i)?;
        if slot.as_ref().is_some_and(f) {
            slot.take()
        } else {
            None
        }
    }

    /// Puts an object taken with [`take`](Self::take) back.
    pub(crate) fn put_back(&mut self, h: usize, v: T) {
        if let Some(i) = self.index(h) {
            self.slots[i] = Some(v);
        }
    }

    /// Frees a live handle, giving its object (`None`, and nothing freed,
    /// for a handle that is not live: a second free must not put the slot
    /// on the free list twice).
    pub(crate) fn release(&mut self, h: usize) -> Option<T> {
        let i = self.index(h)?;
        let v = self.slots.get_mut(i)?.take()?;
        self.free.push(i);
        Some(v)
    }

    /// Frees a handle whose object the caller took out with
    /// [`take`](Self::take).
    pub(crate) fn release_taken(&mut self, h: usize) {
        if let Some(i) = self.index(h) {
            if i < self.slots.len() && self.slots[i].is_none() {
                self.free.push(i);
            }
        }
    }
}

/// Everything the C layer keeps, behind one lock (held only for lookups
/// and updates, never across a blocking call).
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) comms: Table<Arc<CommObj>>,
    pub(crate) groups: Table<Arc<crate::group::Group>>,
    pub(crate) types: Table<Arc<TypeObj>>,
    pub(crate) ops: Table<Arc<types::OpObj>>,
    pub(crate) reqs: p2p::Reqs,
    pub(crate) infos: Table<env::Info>,
    pub(crate) errhs: Table<Errh>,
    pub(crate) msgs: Table<p2p::Msg>,
    pub(crate) wins: Table<Arc<win::WinObj>>,
    pub(crate) keyvals: attr::Keyvals,
    pub(crate) sessions: Table<Arc<session::SessionObj>>,
}

static STATE: Mutex<State> = Mutex::new(State {
    comms: Table::new(COMM_BASE),
    groups: Table::new(GROUP_BASE),
    types: Table::new(TYPE_BASE),
    ops: Table::new(OP_BASE),
    reqs: p2p::Reqs::new(Table::new(REQ_BASE)),
    infos: Table::new(INFO_BASE),
    errhs: Table::new(ERRH_BASE),
    msgs: Table::new(MSG_BASE),
    wins: Table::new(WIN_BASE),
    keyvals: attr::Keyvals::new(),
    sessions: Table::new(SESSION_BASE),
});

/// Locks the C layer's state (a panic while it was held leaves it
/// consistent: every update is a single table operation).
pub(crate) fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

// ---- communicators ---------------------------------------------------------

/// An error handler as the C layer keeps it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Errh {
    Fatal,
    Return,
    Abort,
    /// A user function (`MPI_Comm_create_errhandler`) and its handle.
    User(CommErrFn, usize),
    /// A user function for windows (`MPI_Win_create_errhandler`) and its
    /// handle.
    WinUser(CommErrFn, usize),
}

/// `MPI_Comm_errhandler_function` (variadic in C; called with two
/// arguments, which the C calling convention allows).
pub(crate) type CommErrFn = unsafe extern "C" fn(*mut usize, *mut c_int);

/// A C communicator: the Rust one plus what only C has.
#[derive(Debug)]
pub(crate) struct CommObj {
    pub(crate) handle: usize,
    pub(crate) comm: Communicator,
    pub(crate) errh: Mutex<Errh>,
    /// Cached attributes in the order they were set: (keyval, value).
    pub(crate) attrs: Mutex<Vec<(c_int, usize)>>,
    /// Hints given with `MPI_Comm_set_info` / `dup_with_info`.
    pub(crate) info: Mutex<Vec<(String, String)>>,
}

impl CommObj {
    pub(crate) fn errh(&self) -> Errh {
        *lock(&self.errh)
    }
}

/// Locks a mutex whose data stays consistent if a holder panicked.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `MPI_COMM_WORLD` and `MPI_COMM_SELF`, set by init (looked up without
/// the state lock: the fast path of `MPI_Send` on `WORLD`).
pub(crate) static WORLD: OnceLock<Arc<CommObj>> = OnceLock::new();
pub(crate) static SELF: OnceLock<Arc<CommObj>> = OnceLock::new();

/// A shared object, borrowed for the predefined ones (no reference count
/// touched on the fast path of `MPI_Send` on `MPI_COMM_WORLD` with
/// `MPI_INT`), counted for created ones.
#[derive(Debug)]
pub(crate) enum Obj<T: 'static> {
    Static(&'static Arc<T>),
    Owned(Arc<T>),
}

impl<T> Clone for Obj<T> {
    fn clone(&self) -> Obj<T> {
        match self {
            Obj::Static(r) => Obj::Static(r),
            Obj::Owned(a) => Obj::Owned(a.clone()),
        }
    }
}

impl<T> Obj<T> {
    /// A counted handle on the object (to keep beyond the call).
    pub(crate) fn arc(&self) -> Arc<T> {
        match self {
            Obj::Static(r) => Arc::clone(r),
            Obj::Owned(a) => a.clone(),
        }
    }
}

impl<T> std::ops::Deref for Obj<T> {
    type Target = Arc<T>;
    fn deref(&self) -> &Arc<T> {
        match self {
            Obj::Static(r) => r,
            Obj::Owned(a) => a,
        }
    }
}

/// The communicator behind handle `h`.
///
/// # Errors
/// `Comm` for `MPI_COMM_NULL`, a freed handle or a handle of another kind.
pub(crate) fn comm_obj(h: usize) -> Result<Obj<CommObj>> {
    let found = match h {
        COMM_WORLD => WORLD.get().map(Obj::Static),
        COMM_SELF => SELF.get().map(Obj::Static),
        _ => state().comms.get(h).cloned().map(Obj::Owned),
    };
    found.ok_or_else(|| {
        if h == COMM_NULL {
            Error::new(ErrorClass::Comm, "MPI_COMM_NULL is not a communicator")
        } else if (h == COMM_WORLD || h == COMM_SELF) && !env::is_initialized() {
            Error::new(ErrorClass::Other, "MPI is not initialized")
        } else {
            Error::new(
                ErrorClass::Comm,
                format!("{h:#x} is not a valid communicator handle (freed, or not a communicator)"),
            )
        }
    })
}

/// Registers a communicator made by a constructor (its Rust error handler
/// set to return; the C handler and attributes as given).
pub(crate) fn register_comm(comm: Communicator, errh: Errh, attrs: Vec<(c_int, usize)>) -> usize {
    comm.set_errhandler(crate::comm::ErrHandler::Return);
    state().comms.insert_with(|handle| {
        Arc::new(CommObj {
            handle,
            comm,
            errh: Mutex::new(errh),
            attrs: Mutex::new(attrs),
            info: Mutex::new(Vec::new()),
        })
    })
}

// ---- errors ----------------------------------------------------------------

/// Error codes carry a detail message: code = class + 64 * k, where k
/// (1..=255) names one of the last 255 messages (`MPI_Error_string`
/// prints it). Plain class values are codes too. All codes stay at or
/// below `MPI_ERR_LASTCODE` (0x3fff).
const DETAIL_SLOTS: usize = 255;

/// `MPI_ERR_LASTCODE`: the largest value a code may have (detail 255 of
/// class 63).
pub(crate) const ERR_LASTCODE: c_int = 0x3fff;

/// The largest class `include/mpi.h` defines (`MPI_ERR_PROC_FAILED`):
/// `MPI_Error_class` of a larger class value is `MPI_ERR_ARG`.
const ERR_LASTCLASS: c_int = 62;

struct Details {
    next: usize,
    text: Vec<String>,
}

static DETAILS: Mutex<Details> = Mutex::new(Details {
    next: 0,
    text: Vec::new(),
});

/// The error code for `e` (its class, with its message kept).
pub(crate) fn code_of(e: &Error) -> c_int {
    let class = e.class().code();
    let mut d = lock(&DETAILS);
    let k = d.next;
    d.next = (d.next + 1) % DETAIL_SLOTS;
    let text = format!("{}: {}", e.class().name(), e.detail());
    if d.text.len() <= k {
        d.text.push(text);
    } else {
        d.text[k] = text;
    }
    class + 64 * (k as c_int + 1)
}

/// Error classes and codes the program added (`MPI_Add_error_class`,
/// `MPI_Add_error_code`): entry i is value `MPI_ERR_LASTCODE + 1 + i`,
/// with its class (a class is its own) and its string
/// (`MPI_Add_error_string`; empty until set).
static USER_ERRORS: Mutex<Vec<(c_int, String)>> = Mutex::new(Vec::new());

/// How many classes and codes a program may add.
const USER_ERRORS_MAX: usize = 1 << 16;

/// `MPI_LASTUSEDCODE`'s value: the largest error class, added ones
/// included (MPI 4.1 §9.5), which the attribute points at.
pub(crate) static LAST_USED: crate::sync::AtomicI32 = crate::sync::AtomicI32::new(ERR_LASTCODE);

/// The entry of an added class or code.
fn user_error(code: c_int) -> Option<(c_int, String)> {
    let i = usize::try_from(code.checked_sub(ERR_LASTCODE + 1)?).ok()?;
    lock(&USER_ERRORS).get(i).cloned()
}

/// Adds a class (`class` `None`: the new value is its own class) or a
/// code of `class`; the new value.
///
/// # Errors
/// `Arg` for a class that is not one, `NoMem` past [`USER_ERRORS_MAX`].
pub(crate) fn add_error(class: Option<c_int>) -> Result<c_int> {
    if let Some(c) = class {
        let is_class =
            matches!(c, 1..=ERR_LASTCLASS) || user_error(c).is_some_and(|(own, _)| own == c);
        if !is_class {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("{c} is not an error class (predefined or added)"),
            ));
        }
    }
    let mut u = lock(&USER_ERRORS);
    if u.len() >= USER_ERRORS_MAX {
        return Err(Error::new(
            ErrorClass::NoMem,
            format!("more than {USER_ERRORS_MAX} added error classes and codes"),
        ));
    }
    let value = ERR_LASTCODE + 1 + u.len() as c_int;
    u.push((class.unwrap_or(value), String::new()));
    if class.is_none() {
        // Relaxed: pairs with nothing. The value is this process's, read
        // through the attribute's pointer after this call returns; a read
        // racing with the call on another thread is the program's
        // (MPI_Add_error_class changes the attribute, MPI 4.1 §9.5).
        LAST_USED.store(value, crate::sync::Ordering::Relaxed);
    }
    Ok(value)
}

/// Sets the string of an added class or code.
///
/// # Errors
/// `Arg` for a predefined or unknown value, or a string of
/// `MPI_MAX_ERROR_STRING` bytes or more.
pub(crate) fn set_error_string(code: c_int, text: String) -> Result<()> {
    if text.len() >= 512 {
        return Err(Error::new(
            ErrorClass::Arg,
            format!(
                "an error string of {} bytes (MPI_MAX_ERROR_STRING is 512)",
                text.len()
            ),
        ));
    }
    let i = code
        .checked_sub(ERR_LASTCODE + 1)
        .and_then(|i| usize::try_from(i).ok());
    let mut u = lock(&USER_ERRORS);
    match i.and_then(|i| u.get_mut(i)) {
        Some(e) => {
            e.1 = text;
            Ok(())
        }
        None => Err(Error::new(
            ErrorClass::Arg,
            format!(
                "{code} is not an added error class or code (predefined ones keep their strings)"
            ),
        )),
    }
}

/// The class of error code `code`, if it is one.
pub(crate) fn class_of(code: c_int) -> Option<c_int> {
    match code {
        0..=ERR_LASTCLASS => Some(code),
        64..=ERR_LASTCODE if code % 64 <= ERR_LASTCLASS => Some(code % 64),
        _ => user_error(code).map(|(class, _)| class),
    }
}

/// The message of error code `code`.
pub(crate) fn error_text(code: c_int) -> Option<String> {
    if code > ERR_LASTCODE {
        return user_error(code).map(|(_, text)| text);
    }
    let class = class_of(code)?;
    if code >= 64 {
        let k = (code / 64 - 1) as usize;
        if let Some(t) = lock(&DETAILS).text.get(k) {
            return Some(t.clone());
        }
    }
    Some(match ErrorClass::from_code(class) {
        Some(c) => format!("{}: {}", c.name(), class_blurb(class)),
        None if class == 0 => "MPI_SUCCESS: no error".to_string(),
        None => format!("MPI error class {class}"),
    })
}

fn class_blurb(class: c_int) -> &'static str {
    match class {
        1 => "invalid buffer pointer",
        2 => "invalid count argument",
        3 => "invalid datatype",
        4 => "invalid tag",
        5 => "invalid communicator",
        6 => "invalid rank",
        7 => "invalid request",
        8 => "invalid root",
        9 => "invalid group",
        10 => "invalid operation",
        13 => "invalid argument",
        14 => "unknown error",
        15 => "message truncated on receive",
        16 => "known error not in this list",
        17 => "internal error",
        18 => "pending request",
        19 => "error code is in status",
        31..=34 => "invalid info object, key or value",
        36 => "invalid attribute key",
        39 => "out of memory",
        40 => "collective arguments not identical on all processes",
        44 => "a process aborted",
        58 => "operation not supported",
        61 => "invalid error handler",
        _ => "MPI error",
    }
}

/// Runs the error handler of `comm` (or, for errors that belong to no
/// communicator, of `MPI_COMM_SELF` if the program set one there, else of
/// `MPI_COMM_WORLD`; before init, the initial error handler, fatal) for
/// error `e` of `call`; returns the code to give back. Does not return
/// under a fatal handler.
pub(crate) fn raise(comm: Option<&Arc<CommObj>>, call: &str, e: &Error) -> c_int {
    let obj = comm.cloned().or_else(|| {
        let own = SELF
            .get()
            .filter(|s| !matches!(s.errh(), Errh::Fatal))
            .cloned();
        own.or_else(|| WORLD.get().cloned())
    });
    let Some(obj) = obj else {
        // Before init (after finalize the world's handler still answers):
        // MPI-4's initial error handler, MPI_ERRORS_ARE_FATAL by default
        // (there is no `mpi_initial_errhandler` key to change it here).
        // Returning let a program that ignores MPI_Init's code run on,
        // every call failing, and even exit 0.
        crate::error::say(format_args!(
            "shmpi: {call} failed: {e}; the initial error handler is \
             MPI_ERRORS_ARE_FATAL, so the process exits"
        ));
        std::process::exit(e.class().code().max(1));
    };
    let name = obj.comm.name();
    let what = if name.is_empty() {
        "a communicator"
    } else {
        &name
    };
    raise_on(obj.errh(), obj.handle, what, call, e)
}

/// Raises error `e` of entry point `call` through handler `errh` of the
/// object `handle` (named `what` in a fatal message): its code, after a
/// user function ran; a fatal handler ends the job.
pub(crate) fn raise_on(errh: Errh, handle: usize, what: &str, call: &str, e: &Error) -> c_int {
    let code = code_of(e);
    match errh {
        Errh::Return => code,
        Errh::User(f, _) | Errh::WinUser(f, _) => {
            let mut h = handle;
            let mut c = code;
            // SAFETY: `f` is the function the program registered with
            // MPI_*_create_errhandler; it is called as MPI specifies,
            // with pointers to the object's handle and the code.
            unsafe { f(&mut h, &mut c) };
            code
        }
        h @ (Errh::Fatal | Errh::Abort) => {
            crate::error::say(format_args!(
                "shmpi: rank {}: {call} on {what} failed with {}: {}; the error handler is \
                 {}, so the job is aborted",
                env::world_rank(),
                e.class().name(),
                e.detail(),
                if matches!(h, Errh::Abort) {
                    "MPI_ERRORS_ABORT"
                } else {
                    "MPI_ERRORS_ARE_FATAL"
                }
            ));
            env::abort_job(e.class().code().max(1))
        }
    }
}

/// Runs `f`, the body of entry point `call`; a panic in it becomes
/// `MPI_ERR_INTERN` (for the callers that raise through a handler of
/// their own: windows, sessions).
pub(crate) fn caught_err(call: &str, f: impl FnOnce() -> Result<()>) -> Result<()> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(Error::new(
            ErrorClass::Intern,
            format!("internal error in {call} (caught at the C boundary)"),
        ))
    })
}

/// Runs the body of entry point `call` on communicator handle `comm`
/// (`COMM_NULL` when the call has none): a caught panic becomes
/// `MPI_ERR_INTERN`, an error goes through the handler.
pub(crate) fn guard(call: &str, comm: usize, f: impl FnOnce() -> Result<()>) -> c_int {
    let r = catch_unwind(AssertUnwindSafe(f));
    p2p::progress_orphans();
    match r {
        Ok(Ok(())) => SUCCESS,
        Ok(Err(e)) => {
            let obj = if comm == COMM_NULL {
                None
            } else {
                comm_obj(comm).ok().map(|o| (*o).clone())
            };
            raise(obj.as_ref(), call, &e)
        }
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            let e = Error::new(
                ErrorClass::Intern,
                format!("internal error in {call} (caught at the C boundary): {what}"),
            );
            let obj = comm_obj(comm).ok().map(|o| (*o).clone());
            raise(obj.as_ref(), call, &e)
        }
    }
}

/// As [`guard`], for a body that reports its error on an object it finds
/// itself (requests): the error comes with the communicator it belongs to.
pub(crate) fn guard_on(
    call: &str,
    f: impl FnOnce() -> std::result::Result<(), (Option<Arc<CommObj>>, Error)>,
) -> c_int {
    let r = catch_unwind(AssertUnwindSafe(f));
    p2p::progress_orphans();
    match r {
        Ok(Ok(())) => SUCCESS,
        Ok(Err((obj, e))) => raise(obj.as_ref(), call, &e),
        Err(_) => {
            let e = Error::new(
                ErrorClass::Intern,
                format!("internal error in {call} (caught at the C boundary)"),
            );
            raise(None, call, &e)
        }
    }
}

// ---- pointer helpers -------------------------------------------------------

pub(crate) fn arg(what: &str) -> Error {
    Error::new(ErrorClass::Arg, format!("{what} is a null pointer"))
}

/// Writes `v` through the output argument `p` (named `what`).
pub(crate) fn out<T>(p: *mut T, v: T, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(arg(what));
    }
    // SAFETY: `p` is not null, and the caller's contract (module docs)
    // makes an output argument valid for one write of its type.
    unsafe { p.write_unaligned(v) };
    Ok(())
}

/// Reads the in/out argument `p`.
pub(crate) fn read<T: Copy>(p: *const T, what: &str) -> Result<T> {
    if p.is_null() {
        return Err(arg(what));
    }
    // SAFETY: not null, and valid for a read of `T` by the caller's
    // contract.
    Ok(unsafe { p.read_unaligned() })
}

/// The C array `p` of `n` elements (empty when `n` is 0).
pub(crate) fn array<'a, T>(p: *const T, n: usize, what: &str) -> Result<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(arg(what));
    }
    if (p as usize) % std::mem::align_of::<T>() != 0 {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("{what} is not aligned for its element type"),
        ));
    }
    // SAFETY: not null, aligned (checked), and the caller's contract makes
    // an array argument valid for `n` elements.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// The writable C array `p` of `n` elements.
pub(crate) fn array_mut<'a, T>(p: *mut T, n: usize, what: &str) -> Result<&'a mut [T]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(arg(what));
    }
    if (p as usize) % std::mem::align_of::<T>() != 0 {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("{what} is not aligned for its element type"),
        ));
    }
    // SAFETY: not null, aligned, valid for `n` elements by contract, and
    // not aliased by another argument the call writes (MPI forbids it).
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// The bytes `[p, p + n)` of a message buffer (may be unaligned; null is
/// allowed only for zero bytes).
#[inline]
pub(crate) fn bytes<'a>(p: *const c_void, n: usize) -> Result<&'a [u8]> {
    if n == 0 {
        return Ok(&[]);
    }
    if (p as usize) <= IN_PLACE as usize {
        return Err(null_buffer(p, n));
    }
    // SAFETY: not null (nor `MPI_IN_PLACE`); MPI requires the buffer to hold `n` bytes of data
    // for the count and datatype given.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n) })
}

/// The writable bytes `[p, p + n)` of a message buffer.
#[inline]
pub(crate) fn bytes_mut<'a>(p: *mut c_void, n: usize) -> Result<&'a mut [u8]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if (p as usize) <= IN_PLACE as usize {
        return Err(null_buffer(p, n));
    }
    // SAFETY: not null (nor `MPI_IN_PLACE`); MPI requires a receive buffer to be writable for
    // the count and datatype given, and not aliased by the send buffer.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), n) })
}

/// The error of a buffer at `p`, null or `MPI_IN_PLACE`, that should
/// hold `n` bytes (out of line: the buffer views sit on the message path).
#[cold]
#[inline(never)]
fn null_buffer(p: *const c_void, n: usize) -> Error {
    if p.is_null() {
        Error::new(
            ErrorClass::Buffer,
            format!("the buffer is a null pointer but holds {n} bytes"),
        )
    } else {
        in_place_here()
    }
}

/// `MPI_IN_PLACE` passed where the call does not take it (a send or
/// receive buffer, a broadcast's, a collective's other buffer): its
/// sentinel address is never read or written.
#[cold]
pub(crate) fn in_place_here() -> Error {
    Error::new(
        ErrorClass::Buffer,
        "MPI_IN_PLACE is not a buffer this argument may take",
    )
}

/// A NUL-terminated C string argument.
pub(crate) fn c_str(p: *const c_char, what: &str) -> Result<String> {
    if p.is_null() {
        return Err(arg(what));
    }
    // SAFETY: not null, and a C string argument is NUL-terminated by the
    // caller's contract.
    let s = unsafe { std::ffi::CStr::from_ptr(p) };
    Ok(s.to_string_lossy().into_owned())
}

/// Copies `s` into the C buffer `p` of `cap` bytes (truncated to
/// `cap - 1`, NUL-terminated) and returns the length written.
pub(crate) fn put_str(p: *mut c_char, cap: usize, s: &str, what: &str) -> Result<c_int> {
    if p.is_null() {
        return Err(arg(what));
    }
    let n = s.len().min(cap.saturating_sub(1));
    let dst = array_mut(p.cast::<u8>(), n + 1, what)?;
    dst[..n].copy_from_slice(&s.as_bytes()[..n]);
    dst[n] = 0;
    Ok(n as c_int)
}

/// A large count (`MPI_Count`, the `_c` functions) as a `usize`.
///
/// # Errors
/// `Count` when it is negative (or past the address space).
pub(crate) fn count_c(n: i64, what: &str) -> Result<usize> {
    usize::try_from(n).map_err(|_| {
        Error::new(
            ErrorClass::Count,
            format!("{what} is {n}: counts must not be negative"),
        )
    })
}

/// A count argument: non-negative. Of either count type ([`CountElem`]:
/// an `int` form's or a `_c` form's).
///
/// # Errors
/// `Count` when it is negative.
pub(crate) fn count<C: CountElem>(n: C, what: &str) -> Result<usize> {
    count_c(n.wide(), what)
}

/// The count type of a C function: `int`, or `MPI_Count` in the
/// large-count (`_c`) forms (MPI 4.1 §19.2). The collectives' bodies are
/// generic over it, so that both forms share them.
pub(crate) trait CountElem: Copy + std::fmt::Display {
    /// Whether this is the large-count (`MPI_Count`) form's type.
    const LARGE: bool;
    /// The count as an `MPI_Count`.
    fn wide(self) -> i64;
}

impl CountElem for c_int {
    const LARGE: bool = false;
    #[inline]
    fn wide(self) -> i64 {
        self.into()
    }
}

impl CountElem for i64 {
    const LARGE: bool = true;
    #[inline]
    fn wide(self) -> i64 {
        self
    }
}

/// The displacement type of a C function's arrays: `int`, or `MPI_Aint`
/// in the large-count (`_c`) forms.
pub(crate) trait DisplElem: Copy {
    /// The displacement as an `MPI_Aint`.
    fn aint(self) -> isize;
}

impl DisplElem for c_int {
    #[inline]
    fn aint(self) -> isize {
        self as isize
    }
}

impl DisplElem for isize {
    #[inline]
    fn aint(self) -> isize {
        self
    }
}

/// A handle argument's integer value.
pub(crate) fn h<T>(p: *mut T) -> usize {
    p as usize
}

/// A handle as the C type.
pub(crate) fn to_handle<T>(v: usize) -> *mut T {
    v as *mut T
}
