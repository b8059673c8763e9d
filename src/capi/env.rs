//! The environment (MPI 4.1 §11): init and finalize, versions, time,
//! error classes and strings, error handlers, info objects, attributes
//! and names, `MPI_Alloc_mem`.

use super::{
    c_str, comm_obj, guard, h, lock, out, put_str, read, state, to_handle, CommErrFn, CommObj,
    Errh, COMM_NULL, COMM_SELF, COMM_WORLD, ERRHANDLER_NULL, ERRORS_ABORT, ERRORS_ARE_FATAL,
    ERRORS_RETURN, INFO_NULL, SELF, SUCCESS, WORLD,
};
use crate::error::{Error, ErrorClass, Result};
use crate::sync::{AtomicI32, AtomicU32, Ordering};
use crate::universe::Universe;
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// 0 before init, 1 initialized, 2 finalized.
static PHASE: AtomicU32 = AtomicU32::new(0);
static PROVIDED: AtomicI32 = AtomicI32::new(0);
static MAIN: OnceLock<std::thread::ThreadId> = OnceLock::new();
static UNIVERSE: Mutex<Option<Universe>> = Mutex::new(None);
static RANK: AtomicI32 = AtomicI32::new(-1);
/// The clock of `MPI_Wtime`, started at the first look (init looks).
static EPOCH: OnceLock<Instant> = OnceLock::new();

pub(crate) fn is_initialized() -> bool {
    // Relaxed: a flag this process sets once in init, on its main thread;
    // other threads start after init (MPI's rule).
    PHASE.load(Ordering::Relaxed) == 1
}

pub(crate) fn world_rank() -> i32 {
    // Relaxed: set once in init (see `is_initialized`).
    RANK.load(Ordering::Relaxed)
}

/// Ends the job with `code` (as `MPI_Abort` does).
pub(crate) fn abort_job(code: c_int) -> ! {
    let u = lock(&UNIVERSE);
    match u.as_ref() {
        Some(u) => u.abort(code),
        None => std::process::exit(crate::job::abort_status(code)),
    }
}

const THREAD_SINGLE: c_int = 0;
const THREAD_FUNNELED: c_int = 1;
const THREAD_SERIALIZED: c_int = 2;
const THREAD_MULTIPLE: c_int = 7;

/// Live sessions (`MPI_Session_init` less `MPI_Session_finalize`),
/// changed under the `UNIVERSE` lock.
static SESSIONS: AtomicU32 = AtomicU32::new(0);

/// Starts this process's part of the job (the universe, and the
/// communicators behind `MPI_COMM_WORLD` and `MPI_COMM_SELF`) unless it
/// runs already: for `MPI_Init` (the world model) and for the first
/// session (MPI 4.1 §11.3), whichever comes first.
///
/// # Errors
/// The universe's start-up errors; `Other` once it has ended (MPI cannot
/// start again in a process).
fn start_universe(uni: &mut Option<Universe>) -> Result<()> {
    if uni.is_some() {
        return Ok(());
    }
    if WORLD.get().is_some() {
        return Err(Error::new(
            ErrorClass::Other,
            "MPI was finalized in this process, which cannot start it again",
        ));
    }
    EPOCH.get_or_init(Instant::now);
    super::connect::check_connect_timeout()?;
    let u = crate::universe::init()?;
    let world = u.world();
    let selfc = u.self_comm();
    world.set_errhandler(crate::comm::ErrHandler::Return);
    selfc.set_errhandler(crate::comm::ErrHandler::Return);
    let mk = |handle, comm| {
        Arc::new(CommObj {
            handle,
            comm,
            errh: Mutex::new(Errh::Fatal),
            attrs: Mutex::new(Vec::new()),
            info: Mutex::new(Vec::new()),
        })
    };
    let _ = WORLD.set(mk(COMM_WORLD, world));
    let _ = SELF.set(mk(COMM_SELF, selfc));
    // Relaxed: see `is_initialized`.
    RANK.store(u.rank() as i32, Ordering::Relaxed);
    *uni = Some(u);
    Ok(())
}

/// Runs `f` on the world communicator of the universe (the process's one
/// engine), if MPI is initialized (the world model or a session); the
/// universe's lock is not held meanwhile.
pub(crate) fn with_world<R>(f: impl FnOnce(&crate::comm::Communicator) -> R) -> Option<R> {
    let w = lock(&UNIVERSE).as_ref().map(Universe::world)?;
    Some(f(&w))
}

/// Whether threads of the process may call MPI at the same time:
/// `MPI_THREAD_MULTIPLE` was provided, or a session is open (sessions
/// provide it). The request calls then mark the handles they have out
/// (`p2p::Out`), so a call on another thread finds them.
#[inline]
pub(crate) fn threads_multiple() -> bool {
    // Relaxed: see `is_initialized`. The level is set before the
    // program's threads call MPI. (A session begun on one thread while
    // another, of a world model below MULTIPLE, is already in a wait
    // finds that wait unmarked: the world model did not let threads
    // race.)
    MULTIPLE.load(Ordering::Relaxed) != 0
}

/// [`threads_multiple`], kept as one word: `PROVIDED` is
/// `MPI_THREAD_MULTIPLE` or `SESSIONS` is not 0. Written with them, under
/// the `UNIVERSE` lock ([`note_threads`]).
static MULTIPLE: AtomicU32 = AtomicU32::new(0);

/// Updates [`MULTIPLE`] after `PROVIDED` or `SESSIONS` changed (the
/// caller holds the `UNIVERSE` lock).
fn note_threads() {
    // Relaxed (all): written under the lock; see `threads_multiple`.
    let m =
        PROVIDED.load(Ordering::Relaxed) == THREAD_MULTIPLE || SESSIONS.load(Ordering::Relaxed) > 0;
    MULTIPLE.store(u32::from(m), Ordering::Relaxed);
}

/// The universe, taken out to be ended, once neither the world model
/// (`MPI_Init` without `MPI_Finalize`) nor a session uses it.
fn unused_universe(uni: &mut Option<Universe>) -> Option<Universe> {
    // Relaxed (both): see `is_initialized`; `SESSIONS` changes under the
    // lock the caller holds.
    if PHASE.load(Ordering::Relaxed) == 1 || SESSIONS.load(Ordering::Relaxed) > 0 {
        return None;
    }
    uni.take()
}

/// Ends the universe `u` (if any), outside the `UNIVERSE` lock: pending
/// sends are flushed, and the process leaves the job.
fn end_universe(u: Option<Universe>) -> Result<()> {
    let Some(u) = u else { return Ok(()) };
    super::p2p::flush_all()?;
    u.finalize()
}

/// A session begins: the universe starts if nothing uses it yet.
pub(crate) fn session_begins() -> Result<()> {
    let mut uni = lock(&UNIVERSE);
    start_universe(&mut uni)?;
    // Relaxed: changed under the lock.
    SESSIONS.fetch_add(1, Ordering::Relaxed);
    note_threads();
    drop(uni);
    exit_hook::register();
    Ok(())
}

/// A session ends. Where the process's exit can end the universe
/// ([`exit_hook`]), it stays (so that the process may begin sessions
/// again, as MPI 4.1 §11.3 lets it, and the job is not made to meet at
/// each process's last session); elsewhere it ends with its last user.
pub(crate) fn session_ends() -> Result<()> {
    let u = {
        let mut uni = lock(&UNIVERSE);
        // Relaxed: changed under the lock.
        SESSIONS.fetch_sub(1, Ordering::Relaxed);
        note_threads();
        if exit_hook::ends_at_exit() {
            return Ok(());
        }
        unused_universe(&mut uni)
    };
    end_universe(u)
}

/// Ends the universe a session model left running when the process exits
/// with status 0 (glibc's `on_exit`, which gives the status), as
/// `MPI_Finalize` would, so the launcher sees the rank finalized. Not
/// after a failure (a nonzero status: the launcher ends the job), nor
/// while a session or the world model is still open (`MPI_Init` without
/// `MPI_Finalize`: reported as a rank that did not finalize, as without
/// sessions), nor in a forked child, nor during an abort (which holds the
/// universe's lock as it exits).
mod exit_hook {
    use super::{end_universe, Ordering, PHASE, SESSIONS, UNIVERSE};
    use crate::sync::AtomicU32;
    use std::ffi::{c_int, c_void};

    /// The process that registered the hook (0: none): a forked child
    /// runs it too, and must not end its parent's rank.
    static OWNER: AtomicU32 = AtomicU32::new(0);

    /// Whether the process's exit ends the universe: the hook is
    /// registered (glibc on Linux only).
    pub(super) fn ends_at_exit() -> bool {
        // Relaxed: set once by `register` before any session ends (on
        // the thread that began the first session, which the program
        // orders before the end of any session).
        OWNER.load(Ordering::Relaxed) != 0
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    extern "C" {
        /// glibc's `on_exit(3)`: `f(status, arg)` runs at `exit`.
        fn on_exit(f: extern "C" fn(c_int, *mut c_void), arg: *mut c_void) -> c_int;
    }

    /// Registers the hook, once.
    pub(super) fn register() {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| {
                // SAFETY: `at_exit` is an `extern "C"` function that lives
                // as long as the program and ignores its argument (null).
                let rc = unsafe { on_exit(at_exit, std::ptr::null_mut()) };
                if rc == 0 {
                    // Relaxed: see `ends_at_exit`.
                    OWNER.store(std::process::id(), Ordering::Relaxed);
                }
            });
        }
    }

    #[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
    extern "C" fn at_exit(status: c_int, _arg: *mut c_void) {
        // Relaxed (all three): see `is_initialized` and `ends_at_exit`;
        // the exiting thread's own calls ordered them.
        if status != 0
            || OWNER.load(Ordering::Relaxed) != std::process::id()
            || PHASE.load(Ordering::Relaxed) == 1
            || SESSIONS.load(Ordering::Relaxed) > 0
        {
            return;
        }
        let mut uni = match UNIVERSE.try_lock() {
            Ok(u) => u,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        let u = uni.take();
        drop(uni);
        // No panic may leave an `extern "C"` function.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| end_universe(u)));
        if let Ok(Err(e)) = r {
            crate::error::say(format_args!("shmpi: ending MPI at exit failed: {e}"));
        }
    }
}

fn init(required: c_int) -> Result<c_int> {
    // Relaxed: see `is_initialized`.
    if PHASE.load(Ordering::Relaxed) != 0 {
        return Err(Error::new(
            ErrorClass::Other,
            "MPI_Init called twice (or after MPI_Finalize)",
        ));
    }
    let mut uni = lock(&UNIVERSE);
    start_universe(&mut uni)?;
    let _ = MAIN.set(std::thread::current().id());
    // Every handle is Send + Sync and the engine is behind one lock
    // (`Universe::threading` says Multiple), so any level asked is given.
    let provided = match required {
        THREAD_SINGLE | THREAD_FUNNELED | THREAD_SERIALIZED | THREAD_MULTIPLE => required,
        _ => THREAD_MULTIPLE,
    };
    // Relaxed (both): see `is_initialized`. Under the lock, so a session
    // ending on another thread sees the world model begun.
    PROVIDED.store(provided, Ordering::Relaxed);
    note_threads();
    PHASE.store(1, Ordering::Relaxed);
    drop(uni);
    Ok(provided)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    guard("MPI_Init", COMM_NULL, || init(THREAD_SINGLE).map(|_| ()))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    _argc: *mut c_int,
    _argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    guard("MPI_Init_thread", COMM_NULL, || {
        if provided.is_null() {
            return Err(super::arg("provided"));
        }
        let p = init(required)?;
        out(provided, p, "provided")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Initialized(flag: *mut c_int) -> c_int {
    guard("MPI_Initialized", COMM_NULL, || {
        // Relaxed: see `is_initialized`.
        out(flag, (PHASE.load(Ordering::Relaxed) >= 1) as c_int, "flag")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Finalized(flag: *mut c_int) -> c_int {
    guard("MPI_Finalized", COMM_NULL, || {
        // Relaxed: see `is_initialized`.
        out(flag, (PHASE.load(Ordering::Relaxed) == 2) as c_int, "flag")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    guard("MPI_Finalize", COMM_NULL, || {
        if !is_initialized() {
            return Err(Error::new(
                ErrorClass::Other,
                "MPI_Finalize without MPI_Init (or called twice)",
            ));
        }
        // MPI 4.1 §11.2.4: attributes on MPI_COMM_SELF are deleted first,
        // in the reverse order of setting.
        // A failing callback does not stop finalize (the other members
        // wait in it): its error is this call's, once finalize is done.
        let deleted = SELF
            .get()
            .map_or(Ok(()), |s| super::attr::delete_all_attrs(s));
        super::p2p::flush_all()?;
        // The world model ends here; the universe with it unless a
        // session still uses it (MPI 4.1 §11.2.2).
        let u = {
            let mut uni = lock(&UNIVERSE);
            // Relaxed: see `is_initialized`.
            PHASE.store(2, Ordering::Relaxed);
            unused_universe(&mut uni)
        };
        end_universe(u)?;
        deleted
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Abort(comm: *mut c_void, code: c_int) -> c_int {
    // A communicator that reaches other jobs ends them too (best effort).
    if let Ok(obj) = super::comm_obj(h(comm)) {
        obj.comm.abort(code);
    }
    crate::error::say(format_args!(
        "shmpi: rank {}: MPI_Abort with error code {code}",
        world_rank()
    ));
    abort_job(code)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Query_thread(provided: *mut c_int) -> c_int {
    guard("MPI_Query_thread", COMM_NULL, || {
        // Relaxed: set once in init (see `is_initialized`).
        out(provided, PROVIDED.load(Ordering::Relaxed), "provided")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Is_thread_main(flag: *mut c_int) -> c_int {
    guard("MPI_Is_thread_main", COMM_NULL, || {
        let main = MAIN.get() == Some(&std::thread::current().id());
        out(flag, main as c_int, "flag")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
    guard("MPI_Get_version", COMM_NULL, || {
        out(version, 4, "version")?;
        out(subversion, 1, "subversion")
    })
}

const LIBRARY_VERSION: &str = concat!(
    "shmpi ",
    env!("CARGO_PKG_VERSION"),
    " (MPI 4.1 over shared memory, one node; C ABI numbering of the MPI 5.0 ABI)"
);

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_library_version(version: *mut c_char, len: *mut c_int) -> c_int {
    guard("MPI_Get_library_version", COMM_NULL, || {
        let n = put_str(version, 8192, LIBRARY_VERSION, "version")?;
        out(len, n, "resultlen")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_processor_name(name: *mut c_char, len: *mut c_int) -> c_int {
    guard("MPI_Get_processor_name", COMM_NULL, || {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "localhost".to_string());
        let n = put_str(name, 256, &host, "name")?;
        out(len, n, "resultlen")
    })
}

#[no_mangle]
pub extern "C" fn MPI_Wtime() -> f64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_secs_f64()
}

#[no_mangle]
pub extern "C" fn MPI_Wtick() -> f64 {
    1e-9
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Error_string(code: c_int, s: *mut c_char, len: *mut c_int) -> c_int {
    guard("MPI_Error_string", COMM_NULL, || {
        let text = super::error_text(code).ok_or_else(|| {
            Error::new(ErrorClass::Arg, format!("{code} is not an MPI error code"))
        })?;
        let n = put_str(s, 512, &text, "string")?;
        out(len, n, "resultlen")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Error_class(code: c_int, class: *mut c_int) -> c_int {
    guard("MPI_Error_class", COMM_NULL, || {
        let c = super::class_of(code).ok_or_else(|| {
            Error::new(ErrorClass::Arg, format!("{code} is not an MPI error code"))
        })?;
        out(class, c, "errorclass")
    })
}

/// `MPI_Add_error_class`: a new class, above `MPI_ERR_LASTCODE`; the
/// `MPI_LASTUSEDCODE` attribute follows.
#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_class(class: *mut c_int) -> c_int {
    guard("MPI_Add_error_class", COMM_NULL, || {
        if class.is_null() {
            return Err(super::arg("errorclass"));
        }
        out(class, super::add_error(None)?, "errorclass")
    })
}

/// `MPI_Add_error_code`: a new code of `class` (predefined or added).
#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_code(class: c_int, code: *mut c_int) -> c_int {
    guard("MPI_Add_error_code", COMM_NULL, || {
        if code.is_null() {
            return Err(super::arg("errorcode"));
        }
        out(code, super::add_error(Some(class))?, "errorcode")
    })
}

/// `MPI_Add_error_string`: the string `MPI_Error_string` gives for an
/// added class or code (empty until set).
#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_string(code: c_int, s: *const c_char) -> c_int {
    guard("MPI_Add_error_string", COMM_NULL, || {
        super::set_error_string(code, c_str(s, "string")?)
    })
}

// ---- error handlers ------------------------------------------------------------

pub(crate) fn errh_of(handle: usize) -> Result<Errh> {
    match handle {
        ERRORS_ARE_FATAL => Ok(Errh::Fatal),
        ERRORS_RETURN => Ok(Errh::Return),
        ERRORS_ABORT => Ok(Errh::Abort),
        _ => state().errhs.get(handle).copied().ok_or_else(|| {
            Error::new(
                ErrorClass::Arg,
                format!("{handle:#x} is not a valid error handler"),
            )
        }),
    }
}

pub(crate) fn errh_handle(e: Errh) -> usize {
    match e {
        Errh::Fatal => ERRORS_ARE_FATAL,
        Errh::Return => ERRORS_RETURN,
        Errh::Abort => ERRORS_ABORT,
        Errh::User(_, h) | Errh::WinUser(_, h) => h,
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_errhandler(
    f: Option<CommErrFn>,
    errh: *mut *mut c_void,
) -> c_int {
    guard("MPI_Comm_create_errhandler", COMM_NULL, || {
        let f = f.ok_or_else(|| super::arg("comm_errhandler_fn"))?;
        if errh.is_null() {
            return Err(super::arg("errhandler"));
        }
        // Error handlers stay in the table for the life of the process
        // (communicators may use one after it is freed, as MPI allows).
        let handle = state().errhs.insert_with(|h| Errh::User(f, h));
        out(errh, to_handle(handle), "errhandler")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_errhandler(comm: *mut c_void, errh: *mut c_void) -> c_int {
    guard("MPI_Comm_set_errhandler", h(comm), || {
        let obj = comm_obj(h(comm))?;
        let e = errh_of(h(errh))?;
        if let Errh::WinUser(..) = e {
            return Err(Error::new(
                ErrorClass::Arg,
                "this error handler was made for windows (MPI_Win_create_errhandler)",
            ));
        }
        *lock(&obj.errh) = e;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_errhandler(
    comm: *mut c_void,
    errh: *mut *mut c_void,
) -> c_int {
    guard("MPI_Comm_get_errhandler", h(comm), || {
        let obj = comm_obj(h(comm))?;
        out(errh, to_handle(errh_handle(obj.errh())), "errhandler")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_free(errh: *mut *mut c_void) -> c_int {
    guard("MPI_Errhandler_free", COMM_NULL, || {
        let handle = h(read(errh, "errhandler")?);
        errh_of(handle)?;
        out(errh, to_handle(ERRHANDLER_NULL), "errhandler")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_call_errhandler(comm: *mut c_void, code: c_int) -> c_int {
    let obj = match comm_obj(h(comm)) {
        Ok(o) => o,
        Err(e) => return super::raise(None, "MPI_Comm_call_errhandler", &e),
    };
    call_errhandler(obj.errh(), obj.handle, code, "MPI_Comm_call_errhandler")
}

/// Calls handler `errh` of the object `handle` with `code`, for
/// `MPI_*_call_errhandler` (`call`): a user function runs, a fatal
/// handler ends the job.
pub(crate) fn call_errhandler(errh: Errh, handle: usize, code: c_int, call: &str) -> c_int {
    match errh {
        Errh::Return => SUCCESS,
        Errh::User(f, _) | Errh::WinUser(f, _) => {
            let mut hd = handle;
            let mut c = code;
            // SAFETY: the program's registered error handler, called as
            // MPI specifies (pointers to the handle and the code).
            unsafe { f(&mut hd, &mut c) };
            SUCCESS
        }
        Errh::Fatal | Errh::Abort => {
            crate::error::say(format_args!(
                "shmpi: rank {}: {call} with code {code} under \
                 MPI_ERRORS_ARE_FATAL: the job is aborted",
                world_rank()
            ));
            abort_job(super::class_of(code).unwrap_or(1).max(1))
        }
    }
}

// ---- memory ----------------------------------------------------------------------

/// Buffers of `MPI_Alloc_mem`, by address.
static ALLOCS: Mutex<Vec<(usize, crate::transport::SharedBuf)>> = Mutex::new(Vec::new());

#[no_mangle]
pub unsafe extern "C" fn MPI_Alloc_mem(
    size: isize,
    _info: *mut c_void,
    base: *mut c_void,
) -> c_int {
    guard("MPI_Alloc_mem", COMM_NULL, || {
        if size < 0 {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("MPI_Alloc_mem size {size} is negative"),
            ));
        }
        if base.is_null() {
            return Err(super::arg("baseptr"));
        }
        // Memory in this rank's shared pool: sends from it are copied once
        // by the receiver (`transport::pool`).
        let buf = {
            let u = lock(&UNIVERSE);
            let u = u
                .as_ref()
                .ok_or_else(|| Error::new(ErrorClass::Other, "MPI_Alloc_mem before MPI_Init"))?;
            u.alloc_mem(size as usize)?
        };
        let p = buf.as_ptr() as usize;
        lock(&ALLOCS).push((p, buf));
        out(base.cast::<usize>(), p, "baseptr")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Free_mem(base: *mut c_void) -> c_int {
    guard("MPI_Free_mem", COMM_NULL, || {
        if base.is_null() {
            return Ok(());
        }
        let mut a = lock(&ALLOCS);
        let i = a
            .iter()
            .position(|(p, _)| *p == base as usize)
            .ok_or_else(|| {
                Error::new(
                    ErrorClass::Arg,
                    format!("{base:?} is not memory from MPI_Alloc_mem"),
                )
            })?;
        a.swap_remove(i);
        Ok(())
    })
}

// ---- info ---------------------------------------------------------------------------

/// An info object: (key, value) in insertion order.
pub(crate) type Info = Vec<(String, String)>;

const MAX_INFO_KEY: usize = 256;
const MAX_INFO_VAL: usize = 1024;

fn info_key(p: *const c_char) -> Result<String> {
    let k = c_str(p, "key")?;
    if k.len() >= MAX_INFO_KEY || k.is_empty() {
        return Err(Error::new(
            ErrorClass::InfoKey,
            format!(
                "an info key must have 1 to {} characters, not {}",
                MAX_INFO_KEY - 1,
                k.len()
            ),
        ));
    }
    Ok(k)
}

fn bad_info(i: usize) -> Error {
    Error::new(
        ErrorClass::Info,
        if i == INFO_NULL {
            "MPI_INFO_NULL is not an info object".to_string()
        } else if i == INFO_ENV {
            "MPI_INFO_ENV is predefined: it is not freed".to_string()
        } else {
            format!("{i:#x} is not a valid info handle")
        },
    )
}

/// A copy of info `i` (`MPI_INFO_NULL` is empty).
pub(crate) fn info_pairs(i: usize) -> Result<Info> {
    if i == INFO_NULL {
        return Ok(Vec::new());
    }
    if i == INFO_ENV {
        return Ok(lock(info_env()).clone());
    }
    state().infos.get(i).cloned().ok_or_else(|| bad_info(i))
}

/// Sets the pairs of `pairs` in `mine`: a key there gets the new value,
/// a new key is added (`MPI_Comm_set_info`, `MPI_Win_set_info`).
pub(crate) fn merge_info(mine: &mut Info, pairs: Info) {
    for (k, v) in pairs {
        match mine.iter_mut().find(|(pk, _)| *pk == k) {
            Some(p) => p.1 = v,
            None => mine.push((k, v)),
        }
    }
}

pub(crate) fn new_info(pairs: Info, out_h: *mut *mut c_void) -> Result<()> {
    if out_h.is_null() {
        return Err(super::arg("info"));
    }
    let handle = state().infos.insert(pairs);
    out(out_h, to_handle(handle), "info")
}

/// `MPI_INFO_ENV`'s handle (MPI 5.0 ABI).
const INFO_ENV: usize = 0x131;

/// `MPI_INFO_ENV` (MPI 4.1 §11.2.1): how this process was started, made
/// at its first use ([`env_pairs`]).
fn info_env() -> &'static Mutex<Info> {
    static ENV: OnceLock<Mutex<Info>> = OnceLock::new();
    ENV.get_or_init(|| Mutex::new(env_pairs(process_args())))
}

/// The process's own arguments, an argument that is not UTF-8 with its
/// bad bytes replaced (`std::env::args` would panic on it).
fn process_args() -> impl Iterator<Item = String> {
    std::env::args_os().map(|a| a.to_string_lossy().into_owned())
}

/// The pairs of `MPI_INFO_ENV` and `MPI_Info_create_env`: `command` and
/// `argv` from `args`; `maxprocs`, the world's size while MPI is
/// initialized, else the launcher's (`SHMPI_SIZE`); `wdir`; and
/// `thread_level`, the level provided, once one is (the world model's,
/// or a session's `MPI_THREAD_MULTIPLE`).
fn env_pairs(mut args: impl Iterator<Item = String>) -> Info {
    let mut pairs = Vec::new();
    if let Some(c) = args.next() {
        pairs.push(("command".to_string(), c));
    }
    let rest: Vec<String> = args.collect();
    if !rest.is_empty() {
        pairs.push(("argv".to_string(), rest.join(" ")));
    }
    let size = match lock(&UNIVERSE).as_ref() {
        Some(u) => Some(u.world().size().to_string()),
        None => std::env::var(crate::job::env::SIZE).ok(),
    };
    if let Some(n) = size {
        pairs.push(("maxprocs".to_string(), n));
    }
    if let Ok(d) = std::env::current_dir() {
        pairs.push(("wdir".to_string(), d.display().to_string()));
    }
    // Relaxed (all): see `is_initialized`.
    let level = if PHASE.load(Ordering::Relaxed) == 1 {
        Some(match PROVIDED.load(Ordering::Relaxed) {
            THREAD_SINGLE => "MPI_THREAD_SINGLE",
            THREAD_FUNNELED => "MPI_THREAD_FUNNELED",
            THREAD_SERIALIZED => "MPI_THREAD_SERIALIZED",
            _ => "MPI_THREAD_MULTIPLE",
        })
    } else if SESSIONS.load(Ordering::Relaxed) > 0 {
        Some("MPI_THREAD_MULTIPLE")
    } else {
        None
    };
    if let Some(level) = level {
        pairs.push(("thread_level".to_string(), level.to_string()));
    }
    // Values longer than MPI_MAX_INFO_VAL are cut (an info value's
    // bound, on every path).
    for (_, v) in &mut pairs {
        while v.len() >= MAX_INFO_VAL {
            v.pop();
        }
    }
    pairs
}

/// `MPI_Info_create_env` (MPI 4.1 §11.4): a new info of the keys of
/// `MPI_INFO_ENV`, from the program's `argc` / `argv` (as `main` got them;
/// null: the process's own), callable before `MPI_Init`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Info_create_env(
    argc: c_int,
    argv: *mut *mut c_char,
    info: *mut *mut c_void,
) -> c_int {
    guard("MPI_Info_create_env", COMM_NULL, || {
        let pairs = if argv.is_null() {
            env_pairs(process_args())
        } else {
            let n = super::count(argc, "argc")?;
            let ptrs = super::array(argv.cast_const(), n, "argv")?;
            let args = ptrs
                .iter()
                .take_while(|p| !p.is_null())
                .map(|&p| c_str(p, "argv"))
                .collect::<Result<Vec<_>>>()?;
            env_pairs(args.into_iter())
        };
        new_info(pairs, info)
    })
}

fn with_info<R>(i: usize, f: impl FnOnce(&mut Info) -> Result<R>) -> Result<R> {
    if i == INFO_ENV {
        return f(&mut lock(info_env()));
    }
    let mut st = state();
    let info = st.infos.get_mut(i).ok_or_else(|| bad_info(i))?;
    f(info)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_create(info: *mut *mut c_void) -> c_int {
    guard("MPI_Info_create", COMM_NULL, || new_info(Vec::new(), info))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_set(
    info: *mut c_void,
    key: *const c_char,
    value: *const c_char,
) -> c_int {
    guard("MPI_Info_set", COMM_NULL, || {
        let k = info_key(key)?;
        let v = c_str(value, "value")?;
        // MPI_MAX_INFO_VAL characters fit: `MPI_Info_get` writes them and
        // a NUL into the valuelen + 1 bytes it is given (as MPICH).
        if v.len() > MAX_INFO_VAL {
            return Err(Error::new(
                ErrorClass::InfoValue,
                format!(
                    "an info value may have at most {MAX_INFO_VAL} characters, not {}",
                    v.len()
                ),
            ));
        }
        with_info(h(info), |pairs| {
            match pairs.iter_mut().find(|(pk, _)| *pk == k) {
                Some(p) => p.1 = v,
                None => pairs.push((k, v)),
            }
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get(
    info: *mut c_void,
    key: *const c_char,
    valuelen: c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    guard("MPI_Info_get", COMM_NULL, || {
        let k = info_key(key)?;
        let cap = super::count(valuelen, "valuelen")?;
        let v = with_info(h(info), |p| {
            Ok(p.iter().find(|(pk, _)| *pk == k).map(|x| x.1.clone()))
        })?;
        match v {
            Some(v) => {
                // `value` holds valuelen + 1 characters (MPI 4.1 §10).
                put_str(value, cap + 1, &v, "value")?;
                out(flag, 1, "flag")
            }
            None => out(flag, 0, "flag"),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_valuelen(
    info: *mut c_void,
    key: *const c_char,
    valuelen: *mut c_int,
    flag: *mut c_int,
) -> c_int {
    guard("MPI_Info_get_valuelen", COMM_NULL, || {
        let k = info_key(key)?;
        let v = with_info(h(info), |p| {
            Ok(p.iter().find(|(pk, _)| *pk == k).map(|x| x.1.len()))
        })?;
        match v {
            Some(n) => {
                out(valuelen, n as c_int, "valuelen")?;
                out(flag, 1, "flag")
            }
            None => out(flag, 0, "flag"),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_string(
    info: *mut c_void,
    key: *const c_char,
    buflen: *mut c_int,
    value: *mut c_char,
    flag: *mut c_int,
) -> c_int {
    guard("MPI_Info_get_string", COMM_NULL, || {
        let k = info_key(key)?;
        let cap = super::count(read(buflen, "buflen")?, "buflen")?;
        let v = with_info(h(info), |p| {
            Ok(p.iter().find(|(pk, _)| *pk == k).map(|x| x.1.clone()))
        })?;
        match v {
            Some(v) => {
                if cap > 0 {
                    put_str(value, cap, &v, "value")?;
                }
                out(buflen, v.len() as c_int + 1, "buflen")?;
                out(flag, 1, "flag")
            }
            None => out(flag, 0, "flag"),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nkeys(info: *mut c_void, n: *mut c_int) -> c_int {
    guard("MPI_Info_get_nkeys", COMM_NULL, || {
        let len = with_info(h(info), |p| Ok(p.len()))?;
        out(n, len as c_int, "nkeys")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_get_nthkey(
    info: *mut c_void,
    n: c_int,
    key: *mut c_char,
) -> c_int {
    guard("MPI_Info_get_nthkey", COMM_NULL, || {
        let k = with_info(h(info), |p| {
            usize::try_from(n)
                .ok()
                .and_then(|i| p.get(i))
                .map(|x| x.0.clone())
                .ok_or_else(|| {
                    Error::new(
                        ErrorClass::Arg,
                        format!("key number {n} of an info object with {} keys", p.len()),
                    )
                })
        })?;
        put_str(key, MAX_INFO_KEY, &k, "key").map(|_| ())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_delete(info: *mut c_void, key: *const c_char) -> c_int {
    guard("MPI_Info_delete", COMM_NULL, || {
        let k = info_key(key)?;
        with_info(h(info), |p| match p.iter().position(|(pk, _)| *pk == k) {
            Some(i) => {
                p.remove(i);
                Ok(())
            }
            None => Err(Error::new(
                ErrorClass::InfoNoKey,
                format!("the info object has no key {k:?}"),
            )),
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_dup(info: *mut c_void, newinfo: *mut *mut c_void) -> c_int {
    guard("MPI_Info_dup", COMM_NULL, || {
        let pairs = with_info(h(info), |p| Ok(p.clone()))?;
        new_info(pairs, newinfo)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Info_free(info: *mut *mut c_void) -> c_int {
    guard("MPI_Info_free", COMM_NULL, || {
        let i = h(read(info, "info")?);
        state().infos.release(i).ok_or_else(|| bad_info(i))?;
        out(info, to_handle(INFO_NULL), "info")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_info(comm: *mut c_void, info: *mut c_void) -> c_int {
    guard("MPI_Comm_set_info", h(comm), || {
        let obj = comm_obj(h(comm))?;
        merge_info(&mut lock(&obj.info), info_pairs(h(info))?);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_info(comm: *mut c_void, info: *mut *mut c_void) -> c_int {
    guard("MPI_Comm_get_info", h(comm), || {
        let obj = comm_obj(h(comm))?;
        let pairs = lock(&obj.info).clone();
        new_info(pairs, info)
    })
}

// ---- names ------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_name(comm: *mut c_void, name: *const c_char) -> c_int {
    guard("MPI_Comm_set_name", h(comm), || {
        let obj = comm_obj(h(comm))?;
        let mut n = c_str(name, "comm_name")?;
        while n.len() > 127 {
            n.pop();
        }
        obj.comm.set_name(&n);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_name(
    comm: *mut c_void,
    name: *mut c_char,
    len: *mut c_int,
) -> c_int {
    guard("MPI_Comm_get_name", h(comm), || {
        let obj = comm_obj(h(comm))?;
        let n = put_str(name, 128, &obj.comm.name(), "comm_name")?;
        out(len, n, "resultlen")
    })
}

// ---- attributes -------------------------------------------------------------------

/// Predefined attribute keys (MPI 5.0 ABI values) and their values.
const TAG_UB: c_int = 10001;
const IO: c_int = 10002;
const HOST: c_int = 10003;
const WTIME_IS_GLOBAL: c_int = 10004;
const APPNUM: c_int = 10005;
const UNIVERSE_SIZE: c_int = 10007;
const LASTUSEDCODE: c_int = 10006;

pub(crate) fn predefined_attr(k: c_int) -> Option<*const c_int> {
    static VALUES: OnceLock<[c_int; 8]> = OnceLock::new();
    let v = VALUES.get_or_init(|| {
        let (appnum, universe) = lock(&UNIVERSE)
            .as_ref()
            .map_or((0, 1), |u| (u.appnum(), u.universe_size()));
        [
            crate::p2p::TAG_UB,
            super::ANY_SOURCE, // MPI_IO: every process can do I/O
            super::PROC_NULL,  // MPI_HOST: no host process
            0,                 // MPI_WTIME_IS_GLOBAL: clocks are per process
            appnum as c_int,   // MPI_APPNUM: this rank's application
            universe as c_int, // MPI_UNIVERSE_SIZE: the node's cores
            0,                 // MPI_LASTUSEDCODE: `super::LAST_USED`
            0,
        ]
    });
    let i = match k {
        TAG_UB => 0,
        IO => 1,
        HOST => 2,
        WTIME_IS_GLOBAL => 3,
        APPNUM => 4,
        UNIVERSE_SIZE => 5,
        // It grows with MPI_Add_error_class / code.
        LASTUSEDCODE => return Some(super::LAST_USED.as_ptr().cast_const()),
        _ => return None,
    };
    Some(&v[i] as *const c_int)
}

// ---- the parent of a spawned job ----------------------------------------

/// `MPI_Comm_get_parent`'s handle and object: made at the first call (the
/// Rust parent moves into the handle table, so disconnecting it from C
/// lets the bridge go); `COMM_NULL` once it is freed or disconnected, even
/// if its handle is given to a new communicator later.
static PARENT: Mutex<Option<(usize, std::sync::Weak<super::CommObj>)>> = Mutex::new(None);

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_parent(parent: *mut *mut c_void) -> c_int {
    guard("MPI_Comm_get_parent", COMM_NULL, || {
        let mut p = lock(&PARENT);
        let h = match p.as_ref() {
            Some((h, obj)) => {
                let same = match (obj.upgrade(), state().comms.get(*h)) {
                    (Some(a), Some(b)) => Arc::ptr_eq(&a, b),
                    _ => false,
                };
                if same {
                    *h
                } else {
                    COMM_NULL
                }
            }
            None => {
                let taken = lock(&UNIVERSE).as_mut().and_then(|u| u.take_parent());
                match taken {
                    Some(c) => {
                        let h = super::register_comm(c, Errh::Fatal, Vec::new());
                        let obj = state().comms.get(h).map(Arc::downgrade).unwrap_or_default();
                        *p = Some((h, obj));
                        h
                    }
                    None => {
                        *p = Some((COMM_NULL, std::sync::Weak::new()));
                        COMM_NULL
                    }
                }
            }
        };
        out(parent, to_handle(h), "parent")
    })
}
