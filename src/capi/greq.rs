//! Generalized requests (MPI 4.1 §13.2): a request for an operation the
//! program carries out itself. `MPI_Grequest_start` makes it active;
//! `MPI_Grequest_complete` marks it done (from any thread); the program's
//! completion call then gets its status from the query callback and lets
//! the free callback clean up; `MPI_Cancel` calls the cancel callback.
//! The request is `p2p::ReqState::Greq`.

use super::p2p::{give_request, CStatus, CommRef, Req, ReqState};
use super::{h, state, SUCCESS};
use crate::error::{Error, ErrorClass};
use crate::sync::{AtomicU32, Ordering};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};

/// `MPI_Grequest_query_function`.
type QueryFn = unsafe extern "C" fn(*mut c_void, *mut CStatus) -> c_int;
/// `MPI_Grequest_free_function`.
type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
/// `MPI_Grequest_cancel_function`.
type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

/// A generalized request: the program's callbacks, its extra state, and
/// the flag `MPI_Grequest_complete` sets.
#[derive(Debug)]
pub(crate) struct Greq {
    query: Option<QueryFn>,
    free: Option<FreeFn>,
    cancel: Option<CancelFn>,
    extra: usize,
    done: Arc<AtomicU32>,
    handle: usize,
}

/// A live generalized request as `MPI_Grequest_complete` finds it: its
/// done flag, and the request itself once the program freed it before it
/// completed (its free callback then runs in `MPI_Grequest_complete`).
#[derive(Debug)]
struct Entry {
    done: Arc<AtomicU32>,
    freed: Option<Greq>,
}

/// The live generalized requests, by handle, so that
/// `MPI_Grequest_complete` reaches one while a completion call on another
/// thread has it out of the table. Freeing and completing decide under
/// this lock which of them runs the free callback.
static LIVE: Mutex<Option<HashMap<usize, Entry>>> = Mutex::new(None);

impl Greq {
    /// Whether `MPI_Grequest_complete` was called.
    pub(crate) fn is_done(&self) -> bool {
        // SYNC(greq.done): Acquire, pairs with the Release of
        // `MPI_Grequest_complete`: what the program did before it (the
        // operation's results, the state the query reads) is seen here.
        self.done.load(Ordering::Acquire) != 0
    }

    /// The status from the query callback (as `MPI_Request_get_status`
    /// gives it, the request staying live).
    pub(crate) fn query(&self) -> std::result::Result<CStatus, Error> {
        let mut st = CStatus::empty();
        if let Some(q) = self.query {
            // SAFETY: the program's MPI_Grequest_query_function, called as
            // MPI specifies: its extra state and a status to fill.
            let rc = unsafe { q(self.extra as *mut c_void, &mut st) };
            if rc != SUCCESS {
                return Err(callback_error("query", rc));
            }
        }
        Ok(st)
    }

    /// Completes the request (its completion call): the query, then the
    /// free callback; its done flag is forgotten.
    pub(crate) fn finish(self) -> std::result::Result<CStatus, Error> {
        let st = self.query();
        let freed = self.release();
        let st = st?;
        freed.map(|()| st)
    }

    /// The free callback, the done flag forgotten (also for a request the
    /// program freed before it completed).
    pub(crate) fn release(self) -> std::result::Result<(), Error> {
        if let Some(map) = super::lock(&LIVE).as_mut() {
            map.remove(&self.handle);
        }
        if let Some(f) = self.free {
            // SAFETY: the program's MPI_Grequest_free_function, with its
            // extra state, called once.
            let rc = unsafe { f(self.extra as *mut c_void) };
            if rc != SUCCESS {
                return Err(callback_error("free", rc));
            }
        }
        Ok(())
    }

    /// What `MPI_Cancel` needs of the request, apart from it: so that the
    /// cancel callback runs with the request back in the table (it may
    /// look at it), or while another thread waits for it.
    pub(crate) fn canceller(&self) -> Canceller {
        Canceller {
            cancel: self.cancel,
            extra: self.extra,
            done: Arc::clone(&self.done),
        }
    }
}

/// A generalized request's cancel callback, its extra state and its done
/// flag ([`Greq::canceller`]).
#[derive(Clone, Debug)]
pub(crate) struct Canceller {
    cancel: Option<CancelFn>,
    extra: usize,
    done: Arc<AtomicU32>,
}

impl Canceller {
    /// `MPI_Cancel`: the cancel callback, told whether the operation is
    /// complete already.
    pub(crate) fn cancel(&self) -> std::result::Result<(), Error> {
        if let Some(c) = self.cancel {
            // SYNC(greq.done): Acquire, as in `Greq::is_done`.
            let done = self.done.load(Ordering::Acquire) != 0;
            // SAFETY: the program's MPI_Grequest_cancel_function, with its
            // extra state and the completion flag.
            let rc = unsafe { c(self.extra as *mut c_void, c_int::from(done)) };
            if rc != SUCCESS {
                return Err(callback_error("cancel", rc));
            }
        }
        Ok(())
    }
}

/// A callback's error code as the call's error (its class, when it is
/// one of MPI's).
fn callback_error(which: &str, rc: c_int) -> Error {
    let class = super::class_of(rc)
        .and_then(ErrorClass::from_code)
        .unwrap_or(ErrorClass::Other);
    Error::new(
        class,
        format!("the generalized request's {which} callback returned {rc}"),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Grequest_start(
    query: Option<QueryFn>,
    free: Option<FreeFn>,
    cancel: Option<CancelFn>,
    extra: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    super::guard("MPI_Grequest_start", super::COMM_NULL, || {
        let world = super::WORLD
            .get()
            .ok_or_else(|| Error::new(ErrorClass::Other, "MPI is not initialized"))?;
        let done = Arc::new(AtomicU32::new(0));
        let g = Greq {
            query,
            free,
            cancel,
            extra: extra as usize,
            done: done.clone(),
            handle: 0,
        };
        give_request(
            Req {
                state: ReqState::Greq(Box::new(g)),
                comm: CommRef::of(world),
            },
            request,
        )?;
        // The handle, now known, names the flag.
        let hd = h(super::read(request, "request")?);
        if let Some(ReqState::Greq(g)) = state().reqs.get_mut(hd).map(|r| &mut r.state) {
            g.handle = hd;
        }
        super::lock(&LIVE)
            .get_or_insert_with(HashMap::new)
            .insert(hd, Entry { done, freed: None });
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Grequest_complete(request: *mut c_void) -> c_int {
    super::guard("MPI_Grequest_complete", super::COMM_NULL, || {
        let hd = h(request);
        let freed = {
            let mut live = super::lock(&LIVE);
            let e = live.as_mut().and_then(|m| m.get_mut(&hd)).ok_or_else(|| {
                Error::new(
                    ErrorClass::Request,
                    format!("{hd:#x} is not an active generalized request"),
                )
            })?;
            // SYNC(greq.done): Release, pairs with the Acquire of
            // `Greq::is_done` in the completing call.
            e.done.store(1, Ordering::Release);
            let freed = e.freed.take();
            // A freed request is done with here: its entry goes under
            // this lock, before its handle is released below (a new
            // request may get the handle at once).
            if freed.is_some() {
                if let Some(m) = live.as_mut() {
                    m.remove(&hd);
                }
            }
            freed
        };
        // Freed by the program already: its free callback runs now, the
        // later of the two calls (MPI 4.1 §13.2), without a query, and
        // its handle goes.
        match freed {
            Some(g) => {
                let r = g.release();
                state().reqs.release_taken(hd);
                r
            }
            None => Ok(()),
        }
    })
}

/// `MPI_Request_free` of a generalized request: its free callback runs
/// now if it is complete, else in `MPI_Grequest_complete` (whichever call
/// comes last, MPI 4.1 §13.2); no query either way.
pub(crate) fn free_request(g: Greq) -> std::result::Result<(), Error> {
    {
        let mut live = super::lock(&LIVE);
        if let Some(e) = live.as_mut().and_then(|m| m.get_mut(&g.handle)) {
            // SYNC(greq.done): Relaxed, under the lock that
            // `MPI_Grequest_complete` stores it under.
            if e.done.load(Ordering::Relaxed) == 0 {
                // The handle stays reserved (taken, not released) until
                // `MPI_Grequest_complete`, so no new request gets it.
                e.freed = Some(g);
                return Ok(());
            }
        }
    }
    // The entry goes (in `release`) before the handle does.
    let hd = g.handle;
    let r = g.release();
    state().reqs.release_taken(hd);
    r
}
