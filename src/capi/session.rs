//! Sessions (MPI 4.1 §11.3): `MPI_Session_init` starts this process's
//! part of the job if `MPI_Init` has not (`env::session_begins`), and the
//! last session or the world model to end ends it. A session names two
//! process sets, `mpi://WORLD` and `mpi://SELF`; a group from one of them
//! makes a communicator with `MPI_Comm_create_from_group`, collective
//! over the group only (the world's `create_group`, on a tag drawn from
//! the string tag). Errors of the session calls go to the session's
//! error handler.

use super::comm::{group_obj, new_group};
use super::env::{errh_of, info_pairs, new_info, Info};
use super::{c_str, h, out, put_str, raise_on, read, register_comm, state, to_handle};
use super::{CommErrFn, Errh, COMM_NULL, ERRHANDLER_NULL, SELF, SUCCESS, WORLD};
use crate::error::{Error, ErrorClass, Result};
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Arc, Mutex};

/// `MPI_SESSION_NULL` (MPI 5.0 ABI).
const SESSION_NULL: usize = 0x120;

/// The process sets every session names (MPI 4.1 §11.3.2).
const PSETS: [&str; 2] = ["mpi://WORLD", "mpi://SELF"];

/// A session: its error handler and the info it was made with.
#[derive(Debug)]
pub(crate) struct SessionObj {
    errh: Mutex<Errh>,
    info: Info,
}

impl SessionObj {
    fn errh(&self) -> Errh {
        *super::lock(&self.errh)
    }
}

/// The session behind `handle`.
fn session_obj(handle: usize) -> Result<Arc<SessionObj>> {
    state().sessions.get(handle).cloned().ok_or_else(|| {
        Error::new(
            ErrorClass::Session,
            if handle == SESSION_NULL {
                "MPI_SESSION_NULL is not a session".to_string()
            } else {
                format!("{handle:#x} is not a valid session handle (finalized, or not a session)")
            },
        )
    })
}

/// Runs session call `call` on session handle `session`: an error goes
/// to the session's handler (or, without a valid session, to the
/// communicators' default path); a caught panic is `MPI_ERR_INTERN`.
fn on_session(call: &str, session: usize, f: impl FnOnce() -> Result<()>) -> c_int {
    let r = super::caught_err(call, f);
    match r {
        Ok(()) => SUCCESS,
        Err(e) => match session_obj(session) {
            Ok(s) => raise_on(s.errh(), session, "a session", call, &e),
            Err(_) => super::raise(None, call, &e),
        },
    }
}

/// Runs `call`, whose errors go to handler `errh` (the one the program
/// passed to a call that makes an object: MPI 4.1 §11.3.1, §7.4.2); a
/// caught panic is `MPI_ERR_INTERN`. An invalid handler argument is
/// raised as a call without an object's is.
fn with_handler(call: &str, errh: Result<Errh>, f: impl FnOnce(Errh) -> Result<()>) -> c_int {
    let errh = match errh {
        Ok(e) => e,
        Err(e) => return super::raise(None, call, &e),
    };
    let r = super::caught_err(call, || f(errh));
    match r {
        Ok(()) => SUCCESS,
        Err(e) => raise_on(errh, SESSION_NULL, "a new object", call, &e),
    }
}

/// A process set's name given by the program (case as given: MPI's
/// names are compared as strings).
fn pset(name: *const c_char) -> Result<&'static str> {
    let n = c_str(name, "pset_name")?;
    PSETS
        .iter()
        .find(|p| **p == n)
        .copied()
        .ok_or_else(|| Error::new(ErrorClass::Arg, format!("no process set is named {n:?}")))
}

/// The error handler a session or a communicator made from a group gets
/// (`MPI_ERRHANDLER_NULL`: `MPI_ERRORS_ARE_FATAL`).
fn errh_arg(e: *mut c_void) -> Result<Errh> {
    if h(e) == ERRHANDLER_NULL {
        return Ok(Errh::Fatal);
    }
    errh_of(h(e))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_init(
    info: *mut c_void,
    errhandler: *mut c_void,
    session: *mut *mut c_void,
) -> c_int {
    with_handler("MPI_Session_init", errh_arg(errhandler), |errh| {
        if session.is_null() {
            return Err(super::arg("session"));
        }
        let info = info_pairs(h(info))?;
        super::env::session_begins()?;
        let obj = SessionObj {
            errh: Mutex::new(errh),
            info,
        };
        let handle = state().sessions.insert(Arc::new(obj));
        out(session, to_handle(handle), "session")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_finalize(session: *mut *mut c_void) -> c_int {
    let hd = read(session, "session").map_or(SESSION_NULL, h);
    on_session("MPI_Session_finalize", hd, || {
        // Taken out once: of two threads finalizing one session, the
        // second finds none (and counts nothing down).
        state().sessions.release(hd).ok_or_else(|| {
            session_obj(hd)
                .err()
                .unwrap_or_else(|| Error::new(ErrorClass::Session, "the session was finalized"))
        })?;
        out(session, to_handle(SESSION_NULL), "session")?;
        super::env::session_ends()
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_num_psets(
    session: *mut c_void,
    _info: *mut c_void,
    npset_names: *mut c_int,
) -> c_int {
    on_session("MPI_Session_get_num_psets", h(session), || {
        session_obj(h(session))?;
        out(npset_names, PSETS.len() as c_int, "npset_names")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_nth_pset(
    session: *mut c_void,
    _info: *mut c_void,
    n: c_int,
    pset_len: *mut c_int,
    pset_name: *mut c_char,
) -> c_int {
    on_session("MPI_Session_get_nth_pset", h(session), || {
        session_obj(h(session))?;
        let name = usize::try_from(n)
            .ok()
            .and_then(|i| PSETS.get(i))
            .ok_or_else(|| {
                Error::new(
                    ErrorClass::Arg,
                    format!("n is {n}: there are {} process sets", PSETS.len()),
                )
            })?;
        // A length of 0 asks for the length only (with the terminator);
        // else the name, truncated to the buffer, is NUL-terminated.
        let cap = read(pset_len, "pset_len")?;
        if cap < 0 {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("pset_len is {cap}: it must not be negative"),
            ));
        }
        if cap > 0 {
            put_str(pset_name, cap as usize, name, "pset_name")?;
        }
        out(pset_len, name.len() as c_int + 1, "pset_len")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_info(
    session: *mut c_void,
    info_used: *mut *mut c_void,
) -> c_int {
    on_session("MPI_Session_get_info", h(session), || {
        let s = session_obj(h(session))?;
        let mut pairs = s.info.clone();
        // Every level is given (see `MPI_Init_thread`).
        super::env::merge_info(
            &mut pairs,
            vec![("thread_level".into(), "MPI_THREAD_MULTIPLE".into())],
        );
        new_info(pairs, info_used)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_pset_info(
    session: *mut c_void,
    pset_name: *const c_char,
    info: *mut *mut c_void,
) -> c_int {
    on_session("MPI_Session_get_pset_info", h(session), || {
        session_obj(h(session))?;
        let size = match pset(pset_name)? {
            "mpi://WORLD" => world()?.comm.size(),
            _ => 1,
        };
        new_info(vec![("mpi_size".into(), size.to_string())], info)
    })
}

/// The world communicator behind the sessions (started by the first).
fn world() -> Result<&'static Arc<super::CommObj>> {
    WORLD
        .get()
        .ok_or_else(|| Error::new(ErrorClass::Intern, "a session without the world"))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_from_session_pset(
    session: *mut c_void,
    pset_name: *const c_char,
    newgroup: *mut *mut c_void,
) -> c_int {
    on_session("MPI_Group_from_session_pset", h(session), || {
        session_obj(h(session))?;
        let g = match pset(pset_name)? {
            "mpi://WORLD" => world()?.comm.group(),
            _ => SELF
                .get()
                .ok_or_else(|| Error::new(ErrorClass::Intern, "a session without SELF"))?
                .comm
                .group(),
        };
        new_group(g, newgroup)
    })
}

/// The tag the calls that make communicators from groups use for string
/// tag `s`: a hash (FNV-1a) of it in `[2^30, 2^30 + 2^28)`, which the
/// world's `create_group` takes, and far above the small tags programs
/// use, since `MPI_Intercomm_create_from_groups`' leaders meet on the
/// world's point-to-point context. Members pass the same string; two
/// concurrent calls on overlapping groups with strings whose hashes meet
/// would be told apart only by their order.
fn tag_of(s: &str) -> i32 {
    let mut x: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        x = (x ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    (0x4000_0000 | (x & 0x0fff_ffff)) as i32
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_from_group(
    group: *mut c_void,
    stringtag: *const c_char,
    _info: *mut c_void,
    errhandler: *mut c_void,
    newcomm: *mut *mut c_void,
) -> c_int {
    with_handler("MPI_Comm_create_from_group", errh_arg(errhandler), |errh| {
        let g = group_obj(h(group))?;
        let tag = tag_of(&c_str(stringtag, "stringtag")?);
        let w = world()?;
        let c = w.comm.create_group(&g, tag)?.ok_or_else(|| {
            Error::new(
                ErrorClass::Group,
                "MPI_Comm_create_from_group: this process is not in the group",
            )
        })?;
        // Checked after the collective (as `comm::give` does).
        if newcomm.is_null() {
            return Err(super::arg("newcomm"));
        }
        let handle = register_comm(c, errh, Vec::new());
        out(newcomm, to_handle(handle), "newcomm")
    })
}

/// `MPI_Intercomm_create_from_groups`: an intercommunicator between
/// `local_group` (this process's) and `remote_group`, without a parent:
/// the local group's communicator is made first (as
/// `MPI_Comm_create_from_group`), then the leaders meet on the world's
/// context (`intercomm_create` with the world as the peer communicator),
/// both on tags drawn from the string tag.
#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_create_from_groups(
    local_group: *mut c_void,
    local_leader: c_int,
    remote_group: *mut c_void,
    remote_leader: c_int,
    stringtag: *const c_char,
    _info: *mut c_void,
    errhandler: *mut c_void,
    newintercomm: *mut *mut c_void,
) -> c_int {
    with_handler(
        "MPI_Intercomm_create_from_groups",
        errh_arg(errhandler),
        |errh| {
            let (lg, rg) = (group_obj(h(local_group))?, group_obj(h(remote_group))?);
            let tag = tag_of(&c_str(stringtag, "stringtag")?);
            let w = world()?;
            let leader = usize::try_from(remote_leader)
                .ok()
                .and_then(|r| rg.world_ranks().get(r).copied())
                .ok_or_else(|| {
                    Error::new(
                        ErrorClass::Rank,
                        format!(
                            "remote_leader {remote_leader} is not a rank of the remote group of {}",
                            rg.size()
                        ),
                    )
                })?;
            let local = w.comm.create_group(&lg, tag)?.ok_or_else(|| {
                Error::new(
                    ErrorClass::Group,
                    "MPI_Intercomm_create_from_groups: this process is not in local_group",
                )
            })?;
            let c = local.intercomm_create(local_leader, &w.comm, leader as i32, tag)?;
            // Checked after the collective (as `comm::give` does).
            if newintercomm.is_null() {
                return Err(super::arg("newintercomm"));
            }
            let handle = register_comm(c, errh, Vec::new());
            out(newintercomm, to_handle(handle), "newintercomm")
        },
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_create_errhandler(
    f: Option<CommErrFn>,
    errh: *mut *mut c_void,
) -> c_int {
    super::guard("MPI_Session_create_errhandler", COMM_NULL, || {
        let f = f.ok_or_else(|| super::arg("session_errhandler_fn"))?;
        if errh.is_null() {
            return Err(super::arg("errhandler"));
        }
        let handle = state().errhs.insert_with(|h| Errh::User(f, h));
        out(errh, to_handle(handle), "errhandler")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_set_errhandler(
    session: *mut c_void,
    errh: *mut c_void,
) -> c_int {
    on_session("MPI_Session_set_errhandler", h(session), || {
        let s = session_obj(h(session))?;
        *super::lock(&s.errh) = errh_of(h(errh))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_errhandler(
    session: *mut c_void,
    errh: *mut *mut c_void,
) -> c_int {
    on_session("MPI_Session_get_errhandler", h(session), || {
        let s = session_obj(h(session))?;
        out(
            errh,
            to_handle(super::env::errh_handle(s.errh())),
            "errhandler",
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_call_errhandler(session: *mut c_void, code: c_int) -> c_int {
    let call = "MPI_Session_call_errhandler";
    match session_obj(h(session)) {
        Ok(s) => super::env::call_errhandler(s.errh(), h(session), code, call),
        Err(e) => super::raise(None, call, &e),
    }
}
