//! Point-to-point communication and requests (MPI 4.1 §3, §3.7-3.9): the
//! C entry points over `Communicator` and `Request`.
//!
//! A C request ([`Req`]) owns what its Rust `Request` borrows: a handle on
//! the communicator (which keeps the process state alive) and any staging
//! buffer of a noncontiguous datatype. The Rust request's lifetime is
//! erased to `'static` when it is stored; the buffer it borrows is the
//! user's (valid until completion, as MPI requires of the caller) or a
//! staging buffer owned by the same `Req` and dropped after it.

use super::types::{committed, TypeObj};
use super::{
    array_mut, bytes, bytes_mut, comm_obj, count, count_c, guard, guard_on, h, lock, out, read,
    state, to_handle, CommObj, Table, ANY_TAG, COMM_NULL, LIGHT_RECV, LIGHT_SELF, MESSAGE_NO_PROC,
    MESSAGE_NULL, PROC_NULL, REQUEST_NULL, REQUEST_SENT, SUCCESS, UNDEFINED,
};
use crate::comm::{Message, Request};
use crate::error::{Error, ErrorClass, Result};
use crate::p2p::Status;
use crate::sync::{AtomicU32, Ordering};
use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

/// `MPI_Status` as C lays it out.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CStatus {
    pub(crate) source: c_int,
    pub(crate) tag: c_int,
    pub(crate) error: c_int,
    /// [0..2] length in bytes (low, high 32 bits), [2] cancelled.
    pub(crate) internal: [c_int; 5],
}

impl CStatus {
    pub(crate) fn from_rust(st: &Status) -> CStatus {
        // A message's tag is not negative: the one test covers a receive
        // from PROC_NULL (ANY_TAG) and a cancelled one (`CANCELLED_TAG`).
        let tag = if st.tag < 0 {
            if st.is_cancelled() {
                return Self::cancelled();
            }
            ANY_TAG
        } else {
            st.tag
        };
        let mut s = CStatus {
            source: st.source,
            tag,
            error: SUCCESS,
            internal: [0; 5],
        };
        s.set_bytes(st.bytes);
        s
    }

    /// The status of a cancelled receive: empty, and cancelled
    /// (`MPI_Test_cancelled`); that of a receive cancelled while another
    /// thread waited for it too (`Status::cancelled`).
    #[cold]
    pub(crate) fn cancelled() -> CStatus {
        let mut s = CStatus::empty();
        s.internal[2] = 1;
        s
    }

    /// The empty status (MPI 4.1 §3.7.3): what a null or inactive request
    /// gives, and a send.
    pub(crate) fn empty() -> CStatus {
        CStatus {
            source: super::ANY_SOURCE,
            tag: ANY_TAG,
            error: SUCCESS,
            internal: [0; 5],
        }
    }

    /// The status of a receive from `MPI_PROC_NULL`.
    pub(crate) fn proc_null() -> CStatus {
        CStatus {
            source: PROC_NULL,
            tag: ANY_TAG,
            error: SUCCESS,
            internal: [0; 5],
        }
    }

    fn set_bytes(&mut self, n: usize) {
        self.internal[0] = n as u32 as c_int;
        self.internal[1] = (n as u64 >> 32) as u32 as c_int;
    }

    pub(crate) fn bytes(&self) -> usize {
        (self.internal[0] as u32 as u64 | ((self.internal[1] as u32 as u64) << 32)) as usize
    }
}

/// Writes `st` to the C status `p` unless it is `MPI_STATUS_IGNORE`: all
/// but its `MPI_ERROR` field, which a call that returns one status never
/// updates (MPI 4.1 §3.2.5: only the calls that return several, and only
/// when they return `MPI_ERR_IN_STATUS`).
pub(crate) fn put_status(p: *mut CStatus, st: &CStatus) {
    if p.is_null() {
        return;
    }
    let field = |off: usize| p.cast::<u8>().wrapping_add(off);
    let source = field(std::mem::offset_of!(CStatus, source)).cast::<c_int>();
    let tag = field(std::mem::offset_of!(CStatus, tag)).cast::<c_int>();
    let internal = field(std::mem::offset_of!(CStatus, internal)).cast::<[c_int; 5]>();
    // SAFETY: `p` is not null, and a status argument is valid for writes
    // of an `MPI_Status` (module docs); `source` is its field
    // (`CStatus` is `repr(C)`, the ABI's layout); unaligned, as `out`
    // writes.
    unsafe { source.write_unaligned(st.source) };
    // SAFETY: `tag` is another field of the same status.
    unsafe { tag.write_unaligned(st.tag) };
    // SAFETY: `internal` is another field of the same status.
    unsafe { internal.write_unaligned(st.internal) };
}

/// A status out of an error, if the error carries one (truncation).
fn err_status(e: &Error) -> CStatus {
    let mut s = CStatus::empty();
    if let Some(es) = e.status() {
        s.source = es.source;
        s.tag = es.tag;
        s.set_bytes(es.bytes);
    }
    s.error = super::code_of(e);
    s
}

/// Writes a receive's outcome to `status` (the status, or the error's:
/// `err_status`) and passes the outcome on without the status.
#[inline]
fn status_out(status: *mut CStatus, r: Result<CStatus>) -> Result<()> {
    match r {
        Ok(st) => {
            put_status(status, &st);
            Ok(())
        }
        Err(e) => {
            put_status(status, &err_status(&e));
            Err(e)
        }
    }
}

/// A receive tag: `MPI_ANY_TAG` (-31 in C, -1 in Rust) or non-negative.
pub(crate) fn rtag(tag: c_int) -> Result<i32> {
    match tag {
        ANY_TAG => Ok(crate::p2p::ANY_TAG),
        t if t < 0 => Err(Error::new(
            ErrorClass::Tag,
            format!("tag {t} is invalid: receive tags are MPI_ANY_TAG or 0..=MPI_TAG_UB"),
        )),
        t => Ok(t),
    }
}

/// A send tag: non-negative.
pub(crate) fn stag(tag: c_int) -> Result<i32> {
    if tag < 0 {
        return Err(Error::new(
            ErrorClass::Tag,
            format!("tag {tag} is invalid: send tags are 0..=MPI_TAG_UB"),
        ));
    }
    Ok(tag)
}

/// A raw pointer moved into a request (owned by the C program).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ptr(pub(crate) *mut c_void);
// SAFETY: the pointer is the C program's buffer, which MPI lets any
// thread complete the operation on; it is only dereferenced by the
// completing call.
unsafe impl Send for Ptr {}

impl Ptr {
    /// The address (a method, so closures capture the whole `Ptr`).
    pub(crate) fn get(self) -> *mut c_void {
        self.0
    }
}

/// What to do when a request completes. The rare kinds are boxed, so a
/// request (moved in and out of the handle table) stays small.
pub(crate) enum Fin {
    None,
    /// A send: its status is the empty one (MPI 4.1 §3.7.3 leaves a
    /// send's status undefined but for its error and cancelled flag; the
    /// empty one is what a send complete at its call gives too).
    Send,
    Unpack(Box<Unpack>),
    Words(Box<Words>),
}

/// A receive into `staging` to unpack into `count` instances at `dst`: as
/// many bytes as the status says, or all of `staging` when `whole` (a
/// collective, whose status carries no length).
pub(crate) struct Unpack {
    pub(crate) staging: Vec<u8>,
    pub(crate) dst: Ptr,
    pub(crate) count: usize,
    pub(crate) ty: Arc<TypeObj>,
    pub(crate) whole: bool,
}

/// As [`Unpack`], from an 8-byte aligned staging buffer of `len` bytes
/// (typed reductions).
pub(crate) struct Words {
    pub(crate) staging: Vec<u64>,
    pub(crate) len: usize,
    pub(crate) dst: Ptr,
    pub(crate) count: usize,
    pub(crate) ty: Arc<TypeObj>,
}

/// The bytes of an 8-byte aligned buffer.
pub(crate) fn words_bytes(w: &mut [u64]) -> &mut [u8] {
    // SAFETY: any u64 storage is valid as bytes; the length is exact and
    // the borrow exclusive.
    unsafe { std::slice::from_raw_parts_mut(w.as_mut_ptr().cast::<u8>(), w.len() * 8) }
}

impl std::fmt::Debug for Fin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Fin::None => "None",
            Fin::Send => "Send",
            Fin::Unpack(_) => "Unpack",
            Fin::Words(_) => "Words",
        })
    }
}

/// A persistent request's arguments.
#[derive(Clone, Debug)]
pub(crate) struct PSpec {
    mode: Mode,
    buf: Ptr,
    count: usize,
    /// Held, so freeing the handle does not change a started request.
    ty: Arc<TypeObj>,
    peer: c_int,
    tag: c_int,
    /// A persistent collective (`MPI_Allreduce_init`, ...): how it starts.
    coll: Option<CollStart>,
    /// A partitioned operation (`MPI_Psend_init`, `part.rs`).
    part: Option<Arc<super::part::Part>>,
}

impl PSpec {
    /// The arguments of partitioned operation `part` (which holds the
    /// rest; `ty` is its type).
    pub(crate) fn partitioned(part: Arc<super::part::Part>, ty: Arc<TypeObj>) -> PSpec {
        PSpec {
            mode: Mode::Send,
            buf: Ptr(std::ptr::null_mut()),
            count: 0,
            ty,
            peer: super::PROC_NULL,
            tag: 0,
            coll: None,
            part: Some(part),
        }
    }
}

/// How a persistent collective starts: the nonblocking form, called with
/// the arguments kept at its init; it gives a request handle, or an error
/// code already raised through the communicator's handler.
#[derive(Clone)]
pub(crate) struct CollStart(pub(crate) Arc<dyn Fn(*mut *mut c_void) -> c_int + Send + Sync>);

impl std::fmt::Debug for CollStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CollStart")
    }
}

/// Makes `*request` a persistent collective on `comm` that `start`
/// starts (inactive until `MPI_Start`).
pub(crate) fn persistent_coll(
    comm: &Arc<CommObj>,
    start: CollStart,
    request: *mut *mut c_void,
) -> Result<()> {
    let spec = PSpec {
        mode: Mode::Send,
        buf: Ptr(std::ptr::null_mut()),
        count: 0,
        ty: super::types::type_obj(0x247)?.arc(), // MPI_BYTE: unused
        peer: super::PROC_NULL,
        tag: 0,
        coll: Some(start),
        part: None,
    };
    give_request(
        Req {
            state: ReqState::Persistent { spec, active: None },
            comm: comm.clone().into(),
        },
        request,
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Send,
    Ssend,
    Bsend,
    Rsend,
    Recv,
}

/// A request's state.
#[derive(Debug)]
pub(crate) enum ReqState {
    /// In the engine. Field order matters: `req` borrows from `fin` and
    /// `keep`, and fields drop in order.
    Live {
        req: Request<'static>,
        fin: Fin,
        keep: Keep,
    },
    /// A light receive from `MPI_Irecv`'s fast path that a call made an
    /// object of ([`Reqs`]), without a Rust request: `MPI_Waitall`
    /// finishes it natively (`wait_recvs_taken`), `MPI_Wait` tries the
    /// direct wait, every other call makes it `Live` first
    /// ([`Req::expand`]).
    Recv(LightRecv),
    /// Complete, with this status (or error).
    Done(std::result::Result<CStatus, Error>),
    /// Persistent: its arguments, and the operation of the current start.
    Persistent {
        spec: PSpec,
        active: Option<Box<Req>>,
    },
    /// A nonblocking collective built here (`nbc`): several messages and
    /// a last local step.
    Multi(Box<super::nbc::Multi>),
    /// `MPI_Isendrecv(_replace)`: a send and a receive, complete when both
    /// are; the status is the receive's (MPI 4.1 §3.10).
    Pair(Box<[Req; 2]>),
    /// A generalized request (`MPI_Grequest_start`, `greq.rs`).
    Greq(Box<super::greq::Greq>),
    /// The current epoch of a partitioned operation (`part.rs`): the
    /// active request of its `Persistent` one.
    Part(Arc<super::part::Part>),
}

/// The request handles: a table of request objects, and the light
/// receives of `MPI_Irecv`'s fast path, whose handles
/// (`super::LIGHT_RECV`) name a keyed engine slot
/// (`Communicator::post_irecv_keyed`) and no object, so that the
/// `MPI_Irecv` / `MPI_Wait` pair of a halo exchange takes no lock of the C
/// layer and no table slot. `MPI_Wait`'s and `MPI_Waitall`'s fast paths
/// use such a handle as it is; every other call reaches it through this
/// type, which on its first use makes the object (a light receive,
/// `ReqState::Recv`, the slot's key taken) and keeps it under the same
/// handle, the one the program holds.
///
/// A handle made an object stays in `light` until the program's
/// completion call frees it, possibly after its slot was freed (a
/// cancelled receive, or one an `MPI_Testall` completed beside one still
/// pending) and used again; after 2^32 uses the slot's generation comes
/// back to the handle's, so `MPI_Irecv` does not hand out a handle `light`
/// still holds ([`Reqs::holds`]).
#[derive(Debug)]
pub(crate) struct Reqs {
    table: Table<Req>,
    /// The light handles made objects: `None` while a call has the object
    /// out (as a table slot that is `None` and not free).
    light: std::collections::BTreeMap<usize, Option<Req>>,
    /// Handles whose object a call has out, and why ([`Out`]), while
    /// threads may call MPI at once: a call on another thread then finds
    /// them instead of calling the handle invalid.
    out: Vec<(usize, Out)>,
}

/// Why a call has a handle's object out of [`Reqs`].
#[derive(Debug)]
pub(crate) enum Out {
    /// For a moment (a test, a peek, a cancel): a call on another thread
    /// waits for it to be back.
    Brief,
    /// For a blocking wait (`MPI_Wait`, `MPI_Waitall`), with what
    /// `MPI_Cancel` on another thread reaches ([`Target`]): the wait then
    /// returns (MPI 4.1 §3.8.4). `MPI_Request_get_status` finds the
    /// request incomplete.
    Waiting(Option<Target>),
}

/// What `MPI_Cancel` reaches of a request another thread waits for.
#[derive(Clone, Debug)]
pub(crate) enum Target {
    /// The receive it waits for, if that had not matched a message when
    /// the wait began: marked cancelled through the engine.
    Recv(Posted),
    /// A generalized request: its cancel callback.
    Greq(super::greq::Canceller),
}

impl Target {
    /// Cancels what the waiting thread waits for.
    fn cancel(&self) -> Result<()> {
        match self {
            Target::Recv(p) => {
                p.cancel();
                Ok(())
            }
            Target::Greq(c) => c.cancel(),
        }
    }
}

/// A receive that has not matched a message, as another thread reaches
/// it while its owner waits: its slot in the process's one engine, and
/// the slot's generation (a slot finished and used again is not it). No
/// communicator is kept (a reference count per receive of a window):
/// the cancel reaches the engine through the world's.
#[derive(Clone, Debug)]
pub(crate) struct Posted {
    id: crate::p2p::SlotId,
    gen: u32,
}

impl Posted {
    /// Marks the receive cancelled, if it still waits for a message (else
    /// it completes as usual, as MPI allows).
    fn cancel(&self) {
        // Every communicator of the process shares its one engine.
        super::env::with_world(|w| w.cancel_posted(self.id, self.gen));
    }
}

/// The handles a call marked as out ([`Out`]): unmarked when the call is
/// done with them ([`end`](Self::end), under the lock it puts them back
/// or frees them with), or, should it panic, when dropped.
struct Marks(Vec<usize>);

impl Marks {
    const fn new() -> Marks {
        Marks(Vec::new())
    }

    /// Marks `hd` out for the reason `why` (the caller took its object
    /// out under the same lock).
    fn add(&mut self, reqs: &mut Reqs, hd: usize, why: Out) {
        reqs.out.push((hd, why));
        self.0.push(hd);
    }

    /// Unmarks every handle marked through this.
    fn end(mut self, reqs: &mut Reqs) {
        reqs.unmark_all(&self.0);
        self.0.clear();
    }

    /// Puts `req` back under handle `hd` and unmarks, under one lock: how
    /// a call that had a request out briefly gives it back.
    fn put_back(self, hd: usize, req: Req) {
        let mut st = state();
        st.reqs.put_back(hd, req);
        self.end(&mut st.reqs);
    }
}

impl Drop for Marks {
    fn drop(&mut self) {
        // Only on unwinding (`end` empties it), when the lock is not held.
        if !self.0.is_empty() {
            state().reqs.unmark_all(&self.0);
        }
    }
}

/// How many handles `Reqs::light` holds, read by `MPI_Irecv` without the
/// C layer's lock: while 0 no new handle can be one of them.
///
/// Relaxed: written under the C layer's lock when `light` changes. A
/// held handle that a new one could equal was made an object (counted)
/// before its receive finished and freed the slot under the engine lock,
/// and `MPI_Irecv` allocates the slot again under the engine lock before
/// it reads this count: the two locks order the count's increment before
/// that read, so a handle still held is never missed. (A stale 0 read is
/// only possible for handles of other slots, which cannot collide.)
static LIGHT_HELD: crate::sync::AtomicUsize = crate::sync::AtomicUsize::new(0);

impl Reqs {
    pub(crate) const fn new(table: Table<Req>) -> Reqs {
        Reqs {
            table,
            light: std::collections::BTreeMap::new(),
            out: Vec::new(),
        }
    }

    pub(crate) fn insert(&mut self, v: Req) -> usize {
        self.table.insert(v)
    }

    /// Why a call has `h`'s object out, if it marked it ([`Out`]).
    fn out_of(&self, h: usize) -> Option<&Out> {
        self.out.iter().find(|(o, _)| *o == h).map(|(_, why)| why)
    }

    /// Unmarks the handles `hs` (each marked once): one pass, whatever
    /// their number (a window's `MPI_Waitall`).
    fn unmark_all(&mut self, hs: &[usize]) {
        match hs {
            [] => {}
            [h] => {
                if let Some(i) = self.out.iter().position(|(o, _)| o == h) {
                    self.out.swap_remove(i);
                }
            }
            // Every mark is one of these (each handle is marked once, and
            // all of `hs` are marked): the common case of one thread's
            // `MPI_Waitall`, with no set to build.
            _ if self.out.len() == hs.len() => self.out.clear(),
            _ => {
                let gone: std::collections::HashSet<usize> = hs.iter().copied().collect();
                self.out.retain(|(o, _)| !gone.contains(o));
            }
        }
    }

    /// The entry of the light handle `h`, its object made on first use;
    /// `None` for a handle that is stale (its receive finished) or names
    /// no keyed slot.
    fn light(&mut self, h: usize) -> Option<&mut Option<Req>> {
        use std::collections::btree_map::Entry;
        match self.light.entry(h) {
            Entry::Occupied(e) => Some(e.into_mut()),
            Entry::Vacant(e) => {
                let (w, id, gen) = light_parts(h)?;
                let (key, len) = w.comm.take_key(id, gen)?;
                let buf = Ptr(std::ptr::with_exposed_provenance_mut(key));
                // Relaxed: see `LIGHT_HELD` (the lock held here orders it).
                LIGHT_HELD.fetch_add(1, crate::sync::Ordering::Relaxed);
                Some(e.insert(Some(Req {
                    state: ReqState::Recv(LightRecv { w, id, buf, len }),
                    comm: CommRef::Predefined(w),
                })))
            }
        }
    }

    /// Drops `h`'s entry from `light`.
    fn unhold(&mut self, h: usize) {
        if self.light.remove(&h).is_some() {
            // Relaxed: see `LIGHT_HELD`.
            LIGHT_HELD.fetch_sub(1, crate::sync::Ordering::Relaxed);
        }
    }

    /// Whether the light handle `h` is one made an object and not yet
    /// freed (see [`Reqs`]).
    fn holds(&self, h: usize) -> bool {
        self.light.contains_key(&h)
    }

    pub(crate) fn get(&mut self, h: usize) -> Option<&Req> {
        if h & LIGHT_RECV != 0 {
            return self.light(h)?.as_ref();
        }
        self.table.get(h)
    }

    pub(crate) fn get_mut(&mut self, h: usize) -> Option<&mut Req> {
        if h & LIGHT_RECV != 0 {
            return self.light(h)?.as_mut();
        }
        self.table.get_mut(h)
    }

    /// Takes the object out, keeping its handle reserved.
    pub(crate) fn take(&mut self, h: usize) -> Option<Req> {
        if h & LIGHT_RECV != 0 {
            return self.light(h)?.take();
        }
        self.table.take(h)
    }

    /// Takes the object out if `f` says so of it, keeping its handle
    /// reserved.
    #[inline]
    pub(crate) fn take_if(&mut self, h: usize, f: impl FnOnce(&Req) -> bool) -> Option<Req> {
        if h & LIGHT_RECV != 0 {
            let slot = self.light(h)?;
            return if slot.as_ref().is_some_and(f) {
                slot.take()
            } else {
                None
            };
        }
        self.table.take_if(h, f)
    }

    /// Puts an object taken with [`take`](Self::take) back.
    pub(crate) fn put_back(&mut self, h: usize, v: Req) {
        if h & LIGHT_RECV != 0 {
            if let Some(slot) = self.light.get_mut(&h) {
                *slot = Some(v);
            }
            return;
        }
        self.table.put_back(h, v);
    }

    /// Frees a live handle, giving its object (`None`, and nothing freed,
    /// for a handle that is not live).
    pub(crate) fn release(&mut self, h: usize) -> Option<Req> {
        if h & LIGHT_RECV != 0 {
            let v = self.light(h)?.take()?;
            self.unhold(h);
            return Some(v);
        }
        self.table.release(h)
    }

    /// Frees a handle whose object the caller took out with
    /// [`take`](Self::take).
    pub(crate) fn release_taken(&mut self, h: usize) {
        if h & LIGHT_RECV != 0 {
            if matches!(self.light.get(&h), Some(None)) {
                self.unhold(h);
            }
            return;
        }
        self.table.release_taken(h);
    }
}

/// The handle of a light receive: slot `id` of generation `gen` on
/// `MPI_COMM_WORLD` or (`on_self`) `MPI_COMM_SELF`; `None` for a slot
/// index past the handle's 30 bits (the caller makes a table request).
#[inline]
fn light_handle(on_self: bool, id: crate::p2p::SlotId, gen: u32) -> Option<usize> {
    let comm = if on_self { LIGHT_SELF } else { 0 };
    (id < 1 << 30).then_some(LIGHT_RECV | comm | (gen as usize) << 30 | id)
}

/// Whether the new light handle `hd` equals one still held as an object
/// (see [`Reqs`]); the C layer's lock is taken only while any is.
#[inline]
fn light_held(hd: usize) -> bool {
    // Relaxed: see `LIGHT_HELD`.
    LIGHT_HELD.load(crate::sync::Ordering::Relaxed) != 0 && state().reqs.holds(hd)
}

/// A light receive handle's communicator, slot and generation; `None` for
/// any other handle, or a communicator not (yet) made.
#[inline]
fn light_parts(h: usize) -> Option<(&'static Arc<CommObj>, crate::p2p::SlotId, u32)> {
    if h & LIGHT_RECV == 0 {
        return None;
    }
    let w = if h & LIGHT_SELF != 0 {
        super::SELF.get()?
    } else {
        super::WORLD.get()?
    };
    Some((w, h & ((1 << 30) - 1), (h >> 30) as u32))
}

/// A receive on a predefined communicator into the caller's contiguous
/// bytes, as `MPI_Irecv`'s fast path posts it: the engine slot and the
/// buffer only (no Rust `Request`, no staging, no lend), so that a window
/// of them and its `MPI_Waitall` skip the general request's layers.
/// Dropped unfinished (freed, or the library torn down), it is let go as a
/// dropped Rust request is: cancelled if unmatched, else finished into
/// its slot's own buffer.
#[derive(Debug)]
pub(crate) struct LightRecv {
    w: &'static Arc<CommObj>,
    id: crate::p2p::SlotId,
    buf: Ptr,
    len: usize,
}

impl LightRecv {
    /// Its parts, the receive no longer let go on drop: the caller
    /// finishes or lets go the slot.
    #[inline]
    fn into_parts(self) -> (&'static Arc<CommObj>, crate::p2p::SlotId, Ptr, usize) {
        let me = std::mem::ManuallyDrop::new(self);
        (me.w, me.id, me.buf, me.len)
    }
}

impl Drop for LightRecv {
    fn drop(&mut self) {
        self.w.comm.let_go_recv(self.id);
    }
}

/// The receive buffer `[buf, buf + len)` of a light receive.
#[inline]
fn recv_bytes<'a>(buf: Ptr, len: usize) -> &'a mut [u8] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: `MPI_Irecv`'s fast path made the request only with a buffer
    // that is not null when `len > 0` (given here as it is, or as its
    // slot's key: the address it exposed, read back only while the key
    // is of the slot's current generation, so of this receive); MPI
    // requires a receive buffer to stay valid and writable for its count
    // and datatype until the request completes, which is no earlier than
    // the use of this slice.
    unsafe { std::slice::from_raw_parts_mut(buf.get().cast::<u8>(), len) }
}

/// What a live request owns besides its Rust request: a staging buffer,
/// and the lend of its send buffer to the transport; nothing (no box) for
/// most requests.
#[derive(Debug, Default)]
pub(crate) struct Keep {
    _kept: Option<Box<Kept>>,
}

/// Field order matters: the lend (which copies what the transport still
/// holds from the buffer it lends, which may be `bytes`) drops first.
#[derive(Debug)]
struct Kept {
    _lend: Option<crate::transport::RawLend>,
    _bytes: Vec<u8>,
}

impl Keep {
    fn new(lend: Option<crate::transport::RawLend>, bytes: Vec<u8>) -> Keep {
        if lend.is_none() && bytes.capacity() == 0 {
            return Keep { _kept: None };
        }
        Keep {
            _kept: Some(Box::new(Kept {
                _lend: lend,
                _bytes: bytes,
            })),
        }
    }
}

/// A C request. Field order matters: `state` (which may borrow the
/// process state) drops before `comm` (which keeps it alive).
#[derive(Debug)]
pub(crate) struct Req {
    pub(crate) state: ReqState,
    pub(crate) comm: CommRef,
}

/// The communicator of a request (whose handler its errors go to, and
/// which keeps the process state its operation borrows alive): a
/// predefined one by its static reference, any other by a counted one. A
/// window of `MPI_Isend`/`MPI_Irecv` on `MPI_COMM_WORLD` so moves no
/// reference count: two atomic read-modify-writes per request fewer.
#[derive(Clone, Debug)]
pub(crate) enum CommRef {
    /// `MPI_COMM_WORLD` or `MPI_COMM_SELF` (never freed).
    Predefined(&'static Arc<CommObj>),
    Counted(Arc<CommObj>),
}

impl CommRef {
    /// `c` as a request keeps it.
    #[inline]
    pub(crate) fn of(c: &Arc<CommObj>) -> CommRef {
        match [super::WORLD.get(), super::SELF.get()]
            .into_iter()
            .flatten()
            .find(|p| Arc::ptr_eq(p, c))
        {
            Some(p) => CommRef::Predefined(p),
            None => CommRef::Counted(c.clone()),
        }
    }
}

impl From<Arc<CommObj>> for CommRef {
    fn from(c: Arc<CommObj>) -> CommRef {
        CommRef::of(&c)
    }
}

impl std::ops::Deref for CommRef {
    type Target = Arc<CommObj>;
    #[inline]
    fn deref(&self) -> &Arc<CommObj> {
        match self {
            CommRef::Predefined(c) => c,
            CommRef::Counted(c) => c,
        }
    }
}

// SAFETY: a `Req` holds a Rust `Request` (whose borrowed buffers are the
// C program's, or owned by the `Req`), owned staging buffers and `Ptr`s;
// MPI lets a request be completed by any thread of the process, and the
// engine behind `Request` is itself thread-safe (`Send + Sync` handles).
unsafe impl Send for Req {}

impl Req {
    pub(crate) fn live(comm: &Arc<CommObj>, req: Request<'_>, fin: Fin, keep: Vec<u8>) -> Req {
        Self::live_keeping(comm, req, fin, Keep::new(None, keep))
    }

    fn live_keeping(comm: &Arc<CommObj>, req: Request<'_>, fin: Fin, keep: Keep) -> Req {
        Self::live_on(CommRef::of(comm), req, fin, keep)
    }

    /// A live request on `comm`, as it is held already (the fast paths
    /// know a predefined communicator's static reference).
    #[inline]
    fn live_on(comm: CommRef, req: Request<'_>, fin: Fin, keep: Keep) -> Req {
        // SAFETY: lifetime erasure only. `req` borrows (a) the process
        // state behind `comm`, kept alive by the reference stored beside
        // it (counted, or a predefined communicator's static),
        // (b) the C program's buffer, which MPI requires to stay valid
        // until the request completes, or (c) `fin`'s / `keep`'s heap
        // buffers, owned by this `Req` and dropped after `req` (`keep`'s
        // lend first, copying what the transport still holds).
        let req = unsafe { std::mem::transmute::<Request<'_>, Request<'static>>(req) };
        Req {
            comm,
            state: ReqState::Live { req, fin, keep },
        }
    }

    /// Makes a light receive (`ReqState::Recv`) a live request, for the
    /// calls that know only those.
    #[inline]
    fn expand(&mut self) {
        if matches!(self.state, ReqState::Recv(_)) {
            self.expand_recv();
        }
    }

    #[cold]
    #[inline(never)]
    fn expand_recv(&mut self) {
        let ReqState::Recv(l) =
            std::mem::replace(&mut self.state, ReqState::Done(Ok(CStatus::empty())))
        else {
            return;
        };
        let (w, id, buf, len) = l.into_parts();
        let req = w.comm.recv_request(id, recv_bytes(buf, len));
        self.state = Req::live_on(CommRef::Predefined(w), req, Fin::None, Keep::default()).state;
    }

    pub(crate) fn done(comm: &Arc<CommObj>, st: CStatus) -> Req {
        Req {
            comm: CommRef::of(comm),
            state: ReqState::Done(Ok(st)),
        }
    }

    /// Waits for completion; the request is then `Done`, or an inactive
    /// persistent one (whose result is returned).
    pub(crate) fn wait(&mut self) -> std::result::Result<CStatus, Error> {
        if let ReqState::Recv(l) = &self.state {
            // A light receive alone in a quiet engine waits as a blocking
            // receive does (`Communicator::wait_posted_direct`).
            if let Some(r) = l.w.comm.wait_posted_direct(l.id, recv_bytes(l.buf, l.len)) {
                // Its slot is finished: the light receive is spent, not let go.
                if let ReqState::Recv(l) =
                    std::mem::replace(&mut self.state, ReqState::Done(Ok(CStatus::empty())))
                {
                    let _ = l.into_parts();
                }
                let r = finish(r, Fin::None);
                self.state = ReqState::Done(r.clone());
                return r;
            }
        }
        self.expand();
        match std::mem::replace(&mut self.state, ReqState::Done(Ok(CStatus::empty()))) {
            ReqState::Live { req, fin, keep } => {
                let r = req.wait();
                let r = finish(r, fin);
                drop(keep);
                self.state = ReqState::Done(r.clone());
                r
            }
            ReqState::Done(r) => {
                self.state = ReqState::Done(r.clone());
                r
            }
            ReqState::Recv(_) => unreachable!("expanded above"),
            ReqState::Persistent { spec, active } => {
                let r = match active {
                    Some(mut a) => a.wait(),
                    None => Ok(CStatus::empty()),
                };
                self.state = ReqState::Persistent { spec, active: None };
                r
            }
            ReqState::Multi(m) => {
                let r = (*m).wait();
                self.state = ReqState::Done(r.clone());
                r
            }
            ReqState::Pair(mut p) => {
                let [send, recv] = &mut *p;
                let r = match wait_pair_together(send, recv) {
                    Some(r) => r,
                    None => pair_result(send.wait(), recv.wait()),
                };
                self.state = ReqState::Done(r.clone());
                r
            }
            ReqState::Greq(g) => {
                let mut round = 0;
                while !g.is_done() {
                    poll_orphans();
                    backoff(&mut round);
                }
                let r = (*g).finish();
                self.state = ReqState::Done(r.clone());
                r
            }
            ReqState::Part(p) => {
                let r = p.wait();
                self.state = ReqState::Done(r.clone());
                r
            }
        }
    }

    /// Tests for completion: `Some` when complete (as [`wait`](Self::wait)).
    pub(crate) fn test(&mut self) -> Option<std::result::Result<CStatus, Error>> {
        self.expand();
        match &mut self.state {
            ReqState::Live { req, .. } => match req.test() {
                Ok(None) => None,
                r => {
                    let ReqState::Live { fin, keep, .. } =
                        std::mem::replace(&mut self.state, ReqState::Done(Ok(CStatus::empty())))
                    else {
                        unreachable!()
                    };
                    let r = finish(r.map(|s| s.expect("Some")), fin);
                    drop(keep);
                    self.state = ReqState::Done(r.clone());
                    Some(r)
                }
            },
            ReqState::Done(r) => Some(r.clone()),
            ReqState::Recv(_) => unreachable!("expanded above"),
            ReqState::Persistent { active, .. } => {
                let r = match active {
                    Some(a) => a.test()?,
                    None => Ok(CStatus::empty()),
                };
                *active = None;
                Some(r)
            }
            ReqState::Multi(m) => {
                if !m.test() {
                    return None;
                }
                Some(self.settle(|st| match st {
                    ReqState::Multi(m) => (*m).wait(),
                    _ => unreachable!("tested as a schedule above"),
                }))
            }
            ReqState::Pair(p) => {
                let [send, recv] = &mut **p;
                // Both are tested, so each progresses whatever the other does.
                let (s, r) = (send.test(), recv.test());
                let r = pair_result(s?, r?);
                self.state = ReqState::Done(r.clone());
                Some(r)
            }
            ReqState::Greq(g) => {
                if !g.is_done() {
                    return None;
                }
                Some(self.settle(|st| match st {
                    ReqState::Greq(g) => (*g).finish(),
                    _ => unreachable!("looked at as a generalized request above"),
                }))
            }
            ReqState::Part(p) => {
                let r = p.test()?;
                self.state = ReqState::Done(r.clone());
                Some(r)
            }
        }
    }

    /// Takes the state out, finishes it with `f`, and keeps the result as
    /// the request's (`Done`).
    fn settle(
        &mut self,
        f: impl FnOnce(ReqState) -> std::result::Result<CStatus, Error>,
    ) -> std::result::Result<CStatus, Error> {
        let st = std::mem::replace(&mut self.state, ReqState::Done(Ok(CStatus::empty())));
        let r = f(st);
        self.state = ReqState::Done(r.clone());
        r
    }

    /// [`test`](Self::test) that leaves the request as it is
    /// (`MPI_Request_get_status`): a complete operation stays `Done`, a
    /// persistent one active, so the completing call still sees it.
    fn peek(&mut self) -> Option<std::result::Result<CStatus, Error>> {
        match &mut self.state {
            ReqState::Persistent { active, .. } => match active {
                Some(a) => a.test(),
                None => Some(Ok(CStatus::empty())),
            },
            // The query only: the free callback waits for the completing
            // call (MPI 4.1 §13.2).
            ReqState::Greq(g) => g.is_done().then(|| g.query()),
            _ => self.test(),
        }
    }

    /// What `MPI_Cancel` on another thread reaches while this request is
    /// waited for ([`Out::Waiting`]): the receive it waits for if that has
    /// not matched a message yet (a persistent request's current one, an
    /// `MPI_Isendrecv`'s receive), or a generalized request's callback.
    fn target(&self) -> Option<Target> {
        match &self.state {
            ReqState::Live { req, .. } => recv_target(req),
            ReqState::Recv(l) => Some(Target::Recv(Posted {
                id: l.id,
                gen: l.w.comm.posted_gen(l.id)?,
            })),
            ReqState::Persistent {
                active: Some(a), ..
            } => a.target(),
            ReqState::Pair(p) => p[1].target(),
            ReqState::Greq(g) => Some(Target::Greq(g.canceller())),
            _ => None,
        }
    }

    fn is_persistent(&self) -> bool {
        matches!(self.state, ReqState::Persistent { .. })
    }
}

/// Waits for an `MPI_Isendrecv`'s send and receive at once when both are
/// in the engine (`wait_all_each`), so that the receive's buffer is lent
/// to progress while the send waits too: a large incoming message lands
/// in it directly instead of in the slot's own buffer first. `None` for
/// any other kind (a send complete at its call, a receive from
/// `MPI_PROC_NULL`), for the caller's one-by-one wait; a light receive
/// may have been made live meanwhile (`Req::expand`), which that wait
/// takes as well.
fn wait_pair_together(
    send: &mut Req,
    recv: &mut Req,
) -> Option<std::result::Result<CStatus, Error>> {
    send.expand();
    recv.expand();
    if !matches!(
        (&send.state, &recv.state),
        (ReqState::Live { .. }, ReqState::Live { .. })
    ) {
        return None;
    }
    // Both taken out whole (their states; the send's and receive's
    // places keep a placeholder until the caller marks the pair done).
    let take = |r: &mut Req| Req {
        state: std::mem::replace(&mut r.state, ReqState::Done(Ok(CStatus::empty()))),
        comm: r.comm.clone(),
    };
    let mut results = wait_reqs_together(vec![take(send), take(recv)]).into_iter();
    let out = pair_result(
        results.next().expect("two outcomes"),
        results.next().expect("two outcomes"),
    );
    Some(out)
}

/// Waits for every request of `reqs` at once: those in the engine
/// together (`wait_all_each`, their receive buffers lent to progress for
/// the whole wait), any other kind by itself; their outcomes, in order
/// (an `MPI_Isendrecv`'s pair, `wait_pair_together`; the messages of a
/// partitioned epoch, `part.rs`).
pub(crate) fn wait_reqs_together(reqs: Vec<Req>) -> Vec<std::result::Result<CStatus, Error>> {
    let mut out: Vec<Option<std::result::Result<CStatus, Error>>> = Vec::with_capacity(reqs.len());
    // What the Rust requests borrow (`fin`'s and `keep`'s buffers) is
    // held until they are spent, and finished in order after.
    let mut held = Vec::new();
    let mut rust = Vec::new();
    for mut r in reqs {
        r.expand();
        match r.state {
            ReqState::Live { req, fin, keep } => {
                rust.push(req);
                held.push((out.len(), fin, keep, r.comm));
                out.push(None);
            }
            _ => out.push(Some(r.wait())),
        }
    }
    let results = crate::comm::wait_all_each(rust);
    for ((i, fin, keep, comm), res) in held.into_iter().zip(results) {
        out[i] = Some(finish(res, fin));
        drop(keep);
        drop(comm);
    }
    out.into_iter()
        .map(|o| o.expect("every request has its outcome"))
        .collect()
}

/// The result of an `MPI_Isendrecv`: the send's error if it failed, else
/// the receive's result (its status is the request's).
fn pair_result(
    send: std::result::Result<CStatus, Error>,
    recv: std::result::Result<CStatus, Error>,
) -> std::result::Result<CStatus, Error> {
    send.and(recv)
}

/// The last step of a completed operation.
#[inline]
fn finish(r: Result<Status>, fin: Fin) -> std::result::Result<CStatus, Error> {
    match fin {
        Fin::None => r.map(|s| CStatus::from_rust(&s)),
        Fin::Send => r.map(|_| CStatus::empty()),
        Fin::Unpack(u) => {
            let st = r?;
            if st.is_cancelled() {
                return Ok(CStatus::cancelled());
            }
            let n = if u.whole {
                u.staging.len()
            } else {
                st.bytes.min(u.staging.len())
            };
            u.ty.unpack(&u.staging[..n], u.dst.0, u.count)?;
            Ok(CStatus::from_rust(&st))
        }
        Fin::Words(mut w) => {
            let st = r?;
            if st.is_cancelled() {
                return Ok(CStatus::cancelled());
            }
            w.ty.unpack(&words_bytes(&mut w.staging)[..w.len], w.dst.0, w.count)?;
            Ok(CStatus::from_rust(&st))
        }
    }
}

/// Stores `req` and writes its handle.
pub(crate) fn give_request(req: Req, p: *mut *mut c_void) -> Result<()> {
    if p.is_null() {
        return Err(super::arg("request"));
    }
    let handle = state().reqs.insert(req);
    out(p, to_handle(handle), "request")
}

/// Writes the handle of a started send: `REQUEST_SENT`, and no table
/// entry, for one that completed at its call (a window of short
/// `MPI_Isend`s so costs no lock, table slot or handle to free).
fn give_send(s: Started, p: *mut *mut c_void) -> Result<()> {
    match s {
        Started::Sent => {
            if p.is_null() {
                return Err(super::arg("request"));
            }
            out(p, to_handle(REQUEST_SENT), "request")
        }
        Started::Req(req) => give_request(req, p),
    }
}

/// A request complete from the start (on `comm`).
pub(crate) fn done_request(comm: &Arc<CommObj>, p: *mut *mut c_void) -> Result<()> {
    give_request(Req::done(comm, CStatus::empty()), p)
}

// ---- orphans and buffered sends ------------------------------------------------------

/// Requests the program let go of (`MPI_Request_free` on an active one):
/// completed in the background, by the next MPI call of this process
/// ([`progress_orphans`]) and at finalize.
static ORPHANS: Mutex<Vec<Req>> = Mutex::new(Vec::new());
/// Whether [`ORPHANS`] holds a request (1) or not (0): set and cleared
/// only with its lock held, so a request pushed is never left unflagged.
static ORPHANED: AtomicU32 = AtomicU32::new(0);
/// Buffered sends in flight, with the bytes each takes of the attached
/// buffer.
static BSENDS: Mutex<Vec<(Box<Req>, usize)>> = Mutex::new(Vec::new());

/// The buffer of `MPI_Buffer_attach`: (address, size).
static BSEND_BUF: Mutex<Option<(usize, usize)>> = Mutex::new(None);
const BSEND_OVERHEAD: usize = 512;

/// Tests every orphan and buffered send once, dropping the complete ones.
pub(crate) fn poll_orphans() {
    progress_orphans_now();
    lock(&BSENDS).retain_mut(|(r, _)| r.test().is_none());
}

/// Tests every request of `orphans` (the locked [`ORPHANS`]) once,
/// dropping the complete ones.
fn test_orphans(orphans: &mut Vec<Req>) {
    orphans.retain_mut(|r| r.test().is_none());
    if orphans.is_empty() {
        // Relaxed: the flag is written only under the lock, which
        // orders it with the pushes (MPI_Request_free).
        ORPHANED.store(0, Ordering::Relaxed);
    }
}

/// Lets the requests the program freed while active complete: called as
/// every C call that communicates ends (`guard`, `guard_on`, the fast
/// paths), so that a freed receive's data lands while the program calls
/// MPI at all, as MPI 4.1 §3.7.3 allows it to ("the operation will be
/// allowed to complete") and the progress rule of §3.7.4 asks. One
/// Relaxed load where nothing was freed. The lock is only tried: a call
/// made from inside a test of an orphan (a user operation or attribute
/// callback in a freed nonblocking collective's last step) or while
/// another thread polls leaves them to that poll.
#[inline(always)]
pub(crate) fn progress_orphans() {
    // Relaxed: a hint; a request freed by another thread just now is
    // seen by a later call, and what it holds is reached through the
    // lock.
    if ORPHANED.load(Ordering::Relaxed) != 0 {
        progress_orphans_now();
    }
}

#[cold]
#[inline(never)]
fn progress_orphans_now() {
    // Called after the calls' own panic guards: a panic in an orphan's
    // test (an internal error) must not unwind out of the C call. The
    // request stays listed (`retain_mut` keeps the vector whole) and is
    // tested again at the next call.
    let _ = catch_unwind(|| match ORPHANS.try_lock() {
        Ok(mut orphans) => test_orphans(&mut orphans),
        // As `lock`: the list stays consistent if a holder panicked.
        Err(std::sync::TryLockError::Poisoned(p)) => test_orphans(&mut p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => {}
    });
}

fn bsend_in_use() -> usize {
    poll_orphans();
    lock(&BSENDS).iter().map(|(_, n)| *n).sum()
}

/// Waits for every buffered send (buffer detach).
fn flush_bsends() {
    let all = std::mem::take(&mut *lock(&BSENDS));
    for (mut r, _) in all {
        let _ = r.wait();
    }
}

/// Waits for every buffered send and freed request (finalize).
pub(crate) fn flush_all() -> Result<()> {
    flush_bsends();
    let all = {
        let mut orphans = lock(&ORPHANS);
        // Relaxed: under the lock (`test_orphans`).
        ORPHANED.store(0, Ordering::Relaxed);
        std::mem::take(&mut *orphans)
    };
    for mut r in all {
        let _ = r.wait();
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_attach(buf: *mut c_void, size: c_int) -> c_int {
    buffer_attach("MPI_Buffer_attach", buf, size.into())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_attach_c(buf: *mut c_void, size: i64) -> c_int {
    buffer_attach("MPI_Buffer_attach_c", buf, size)
}

/// `MPI_Buffer_attach(_c)` (`call`), the size as `MPI_Count`.
fn buffer_attach(call: &str, buf: *mut c_void, size: i64) -> c_int {
    guard(call, COMM_NULL, || {
        let n = count_c(size, "size")?;
        let mut b = lock(&BSEND_BUF);
        if b.is_some() {
            return Err(Error::new(
                ErrorClass::Buffer,
                "a buffer is already attached (MPI_Buffer_detach it first)",
            ));
        }
        *b = Some((buf as usize, n));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_detach(buf: *mut c_void, size: *mut c_int) -> c_int {
    guard("MPI_Buffer_detach", COMM_NULL, || {
        let (addr, n) = buffer_detach();
        out(buf.cast::<usize>(), addr, "buffer_addr")?;
        // A buffer attached by MPI_Buffer_attach_c may be larger than an
        // int: MPI_UNDEFINED then (its size is the caller's anyway).
        out(size, c_int::try_from(n).unwrap_or(UNDEFINED), "size")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Buffer_detach_c(buf: *mut c_void, size: *mut i64) -> c_int {
    guard("MPI_Buffer_detach_c", COMM_NULL, || {
        let (addr, n) = buffer_detach();
        out(buf.cast::<usize>(), addr, "buffer_addr")?;
        out(size, n as i64, "size")
    })
}

/// Detaches the buffer: its address and size ((0, 0) when none was
/// attached), once the buffered messages have left (MPI 4.1 §3.6.1).
fn buffer_detach() -> (usize, usize) {
    flush_bsends();
    let b = lock(&BSEND_BUF).take();
    b.unwrap_or((0, 0))
}

// ---- starting operations -------------------------------------------------------------

/// Bytes of `n` instances of `ty`, or `Count` when that passes what one
/// object can hold (`isize::MAX`: a slice of more is undefined, and a
/// large count could reach it).
pub(crate) fn nbytes(n: usize, ty: &TypeObj) -> Result<usize> {
    n.checked_mul(ty.size)
        .filter(|&b| isize::try_from(b).is_ok())
        .ok_or_else(|| {
            Error::new(
                ErrorClass::Count,
                format!(
                    "{n} elements of {} bytes overflow the address space",
                    ty.size
                ),
            )
        })
}

/// A zeroed staging buffer of `n` bytes, or `NoMem`.
pub(crate) fn staging_buf(n: usize) -> Result<Vec<u8>> {
    let no_mem = || {
        Error::new(
            ErrorClass::NoMem,
            format!("no memory for a {n}-byte staging buffer"),
        )
    };
    if n == 0 {
        return Ok(Vec::new());
    }
    // Zeroed by the allocator, which for a large buffer maps zero pages
    // and touches none: a receive of "up to" many instances of a derived
    // type costs the memory its message fills, not its count (a zeroing
    // loop here once took a 16 KiB message's 16 GiB receive to the
    // kernel's OOM killer).
    let layout = std::alloc::Layout::array::<u8>(n).map_err(|_| no_mem())?;
    // SAFETY: the layout's size is not zero (`n > 0`).
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return Err(no_mem());
    }
    // SAFETY: `p` comes from the global allocator with the layout of `n`
    // bytes of alignment 1, which `Vec<u8>` of capacity `n` frees with;
    // all `n` bytes are initialised (zero).
    Ok(unsafe { Vec::from_raw_parts(p, n, n) })
}

/// The bytes of `count` instances of `ty` at `buf` as one slice if they
/// are contiguous, else packed into a new buffer.
fn send_data<'a>(
    buf: *const c_void,
    n: usize,
    ty: &TypeObj,
) -> Result<(Option<&'a [u8]>, Vec<u8>)> {
    match ty.contiguous(n) {
        Some(off) => Ok((
            Some(bytes(
                (buf as *const u8).wrapping_offset(off).cast(),
                nbytes(n, ty)?,
            )?),
            Vec::new(),
        )),
        None => Ok((None, ty.pack(buf, n)?)),
    }
}

/// A started nonblocking send.
pub(crate) enum Started {
    /// Complete at its call: the message is wholly in the ring (or copied
    /// to the attached buffer); nothing of the program's buffer is kept
    /// and its status is the empty one (`REQUEST_SENT` stands for it).
    Sent,
    /// In flight, as this request.
    Req(Req),
}

impl Started {
    /// As a request (a persistent request's current operation).
    fn into_req(self, obj: &Arc<CommObj>) -> Req {
        match self {
            Started::Sent => Req::done(obj, CStatus::empty()),
            Started::Req(r) => r,
        }
    }
}

/// Starts a nonblocking send of any mode.
fn start_send(
    obj: &Arc<CommObj>,
    mode: Mode,
    buf: *const c_void,
    n: usize,
    ty: &TypeObj,
    dest: c_int,
    tag: c_int,
) -> Result<Started> {
    let tag = stag(tag)?;
    let (direct, packed) = send_data(buf, n, ty)?;
    if mode == Mode::Bsend {
        return bsend(obj, direct.unwrap_or(&packed), dest, tag).map(|_| Started::Sent);
    }
    let data: &[u8] = match direct {
        Some(d) => d,
        // SAFETY: lifetime erasure of a borrow of `packed`'s heap buffer,
        // which moves into the same `Req` as the request (`keep`) and is
        // dropped after it.
        None => unsafe { std::slice::from_raw_parts(packed.as_ptr(), packed.len()) },
    };
    isend_req(obj, data, dest, tag, mode == Mode::Ssend, packed)
}

/// The nonblocking send of `data` (the C program's buffer, or `packed`,
/// which the returned request keeps).
#[inline]
fn isend_req(
    obj: &Arc<CommObj>,
    data: &[u8],
    dest: c_int,
    tag: i32,
    sync: bool,
    packed: Vec<u8>,
) -> Result<Started> {
    isend_req_on(obj, data, dest, tag, sync, packed, false)
}

/// [`isend_req`] of a standard-mode send on the partitioned context
/// (`Communicator::isend_part_bytes`: `part.rs`'s setup messages and
/// partitions).
pub(crate) fn isend_part(
    obj: &Arc<CommObj>,
    data: &[u8],
    dest: c_int,
    tag: i32,
    packed: Vec<u8>,
) -> Result<Started> {
    isend_req_on(obj, data, dest, tag, false, packed, true)
}

#[inline(always)]
fn isend_req_on(
    obj: &Arc<CommObj>,
    data: &[u8],
    dest: c_int,
    tag: i32,
    sync: bool,
    packed: Vec<u8>,
    part: bool,
) -> Result<Started> {
    // MPI keeps the send buffer untouched until the request completes
    // (MPI 4.1 §3.7.2), and `packed` lives in the request: the rest of a
    // message that does not fit the ring is pushed from it later, not
    // copied. A request the program frees (MPI_Request_free) finishes in
    // the background from the same buffer, which MPI lets the program
    // reuse only once it knows the send completed (§3.7.3); a `Req`
    // dropped before its send is done copies what is still unsent.
    // A short message goes into the ring at once (or, the ring full, is
    // copied): no lend to allocate.
    // SAFETY: `data` is the C program's buffer, which the MPI contract
    // keeps alive and unwritten until this request completes or is freed,
    // or `packed`, which the `Keep` below holds and drops after the lend.
    // (A partitioned send copies what the ring does not take: no lend.)
    let lend =
        (data.len() > LEND_FROM && !part).then(|| unsafe { crate::transport::RawLend::new(data) });
    let lender = lend.as_ref().map(crate::comm::Lending::Raw);
    let r = if part {
        obj.comm.isend_part_bytes(data, dest, tag)
    } else {
        obj.comm.isend_bytes(data, dest, tag, sync, false, lender)
    };
    let call = match (part, sync) {
        (true, _) => "a partitioned send",
        (false, true) => "MPI_Issend",
        (false, false) => "MPI_Isend",
    };
    let r = obj.comm.ret(call, r)?;
    let r = match lend {
        // The message is wholly in the ring: nothing to keep.
        None => match r.into_done() {
            Ok(_) => return Ok(Started::Sent),
            Err(r) => r,
        },
        Some(_) => r,
    };
    Ok(Started::Req(Req::live_keeping(
        obj,
        r,
        Fin::Send,
        Keep::new(lend, packed),
    )))
}

/// From this many bytes a C nonblocking send lends its buffer to the
/// transport (`start_send`); shorter ones are copied if the ring is full.
const LEND_FROM: usize = 4096;

/// A buffered send: the data is copied, sent in the background, and
/// counted against the attached buffer.
fn bsend(obj: &Arc<CommObj>, data: &[u8], dest: c_int, tag: c_int) -> Result<()> {
    let need = data.len() + BSEND_OVERHEAD;
    let cap = lock(&BSEND_BUF).map(|b| b.1);
    let Some(cap) = cap else {
        return Err(Error::new(
            ErrorClass::Buffer,
            "MPI_Bsend without an attached buffer (MPI_Buffer_attach one)",
        ));
    };
    let used = bsend_in_use();
    if used + need > cap {
        return Err(Error::new(
            ErrorClass::Buffer,
            format!(
                "the attached buffer has {} of {cap} bytes free; this message needs {need} \
                 (its size plus MPI_BSEND_OVERHEAD)",
                cap.saturating_sub(used)
            ),
        ));
    }
    let copy = data.to_vec();
    // SAFETY: lifetime erasure of a borrow of `copy`'s heap buffer, which
    // moves into the `Req` (`keep`) and is dropped after the request.
    let view = unsafe { std::slice::from_raw_parts(copy.as_ptr(), copy.len()) };
    let r = obj.comm.isend(view, dest, tag)?;
    let req = Req::live(obj, r, Fin::None, copy);
    lock(&BSENDS).push((Box::new(req), need));
    Ok(())
}

/// Starts a nonblocking receive.
fn start_recv(
    obj: &Arc<CommObj>,
    buf: *mut c_void,
    n: usize,
    ty: &Arc<TypeObj>,
    src: c_int,
    tag: c_int,
) -> Result<Req> {
    let tag = rtag(tag)?;
    match ty.contiguous(n) {
        Some(off) => {
            let b = bytes_mut((buf as *mut u8).wrapping_offset(off).cast(), nbytes(n, ty)?)?;
            let r = obj.comm.irecv(b, src, tag)?;
            Ok(Req::live(obj, r, Fin::None, Vec::new()))
        }
        None => {
            let mut staging = staging_buf(nbytes(n, ty)?)?;
            // SAFETY: lifetime erasure of a borrow of `staging`'s heap
            // buffer, which moves into the `Req` (`fin`) and is dropped
            // after the request; nothing else touches it meanwhile.
            let view =
                unsafe { std::slice::from_raw_parts_mut(staging.as_mut_ptr(), staging.len()) };
            let r = obj.comm.irecv(view, src, tag)?;
            Ok(Req::live(
                obj,
                r,
                Fin::Unpack(Box::new(Unpack {
                    staging,
                    dst: Ptr(buf),
                    count: n,
                    ty: ty.clone(),
                    whole: false,
                })),
                Vec::new(),
            ))
        }
    }
}

// ---- blocking point to point -----------------------------------------------------------

#[allow(clippy::too_many_arguments)]
fn send_blocking(
    call: &str,
    mode: Mode,
    buf: *const c_void,
    n: i64,
    t: *mut c_void,
    dest: c_int,
    tag: c_int,
    comm: *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        let n = count_c(n, "count")?;
        let ty = committed(h(t))?;
        let tag = stag(tag)?;
        let (direct, packed) = send_data(buf, n, &ty)?;
        let data = direct.unwrap_or(&packed);
        match mode {
            Mode::Ssend => obj.comm.ssend(data, dest, tag),
            Mode::Bsend => bsend(&obj, data, dest, tag),
            _ => obj.comm.send(data, dest, tag),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Send(
    buf: *const c_void,
    n: c_int,
    t: *mut c_void,
    dest: c_int,
    tag: c_int,
    comm: *mut c_void,
) -> c_int {
    // The fast path: a predefined communicator, a builtin contiguous
    // type, valid count and tag (no table lock, no reference count).
    if let (Some(w), Some(sz)) = (predefined(h(comm)), super::types::simple_size(h(t))) {
        if n >= 0 && tag >= 0 {
            let len = n as usize * sz;
            if len == 0 || !buf.is_null() {
                let r = catch_unwind(AssertUnwindSafe(move || {
                    // Not null (or empty, then possibly null).
                    let data = super::bytes(buf, len)?;
                    w.comm.send(data, dest, tag)
                }));
                progress_orphans();
                return finish_fast(w, "MPI_Send", r);
            }
        }
    }
    send_blocking("MPI_Send", Mode::Send, buf, n.into(), t, dest, tag, comm)
}

/// `MPI_COMM_WORLD` or `MPI_COMM_SELF`, if `h` is one (after init).
#[inline]
fn predefined(h: usize) -> Option<&'static Arc<CommObj>> {
    match h {
        super::COMM_WORLD => super::WORLD.get(),
        super::COMM_SELF => super::SELF.get(),
        _ => None,
    }
}

/// The return code of a fast-path call.
#[inline(always)]
fn finish_fast(w: &Arc<CommObj>, call: &str, r: std::thread::Result<Result<()>>) -> c_int {
    match r {
        Ok(Ok(())) => SUCCESS,
        Ok(Err(e)) => super::raise(Some(w), call, &e),
        Err(_) => super::raise(
            Some(w),
            call,
            &Error::new(
                ErrorClass::Intern,
                format!("internal error in {call} (caught)"),
            ),
        ),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ssend(
    buf: *const c_void,
    n: c_int,
    t: *mut c_void,
    dest: c_int,
    tag: c_int,
    comm: *mut c_void,
) -> c_int {
    send_blocking("MPI_Ssend", Mode::Ssend, buf, n.into(), t, dest, tag, comm)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Bsend(
    buf: *const c_void,
    n: c_int,
    t: *mut c_void,
    dest: c_int,
    tag: c_int,
    comm: *mut c_void,
) -> c_int {
    send_blocking("MPI_Bsend", Mode::Bsend, buf, n.into(), t, dest, tag, comm)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rsend(
    buf: *const c_void,
    n: c_int,
    t: *mut c_void,
    dest: c_int,
    tag: c_int,
    comm: *mut c_void,
) -> c_int {
    send_blocking("MPI_Rsend", Mode::Rsend, buf, n.into(), t, dest, tag, comm)
}

/// The size of a noncontiguous blocking receive (count times type size)
/// from which its staging buffer is sized by the message, probed first.
const PROBED_STAGING: usize = 1 << 20;

/// A blocking receive of `n` instances of `ty` at `buf`.
pub(crate) fn recv_into(
    obj: &CommObj,
    buf: *mut c_void,
    n: usize,
    ty: &TypeObj,
    src: c_int,
    tag: i32,
) -> Result<CStatus> {
    match ty.contiguous(n) {
        Some(off) => {
            let b = bytes_mut((buf as *mut u8).wrapping_offset(off).cast(), nbytes(n, ty)?)?;
            Ok(CStatus::from_rust(&obj.comm.recv(b, src, tag)?))
        }
        None => {
            let want = nbytes(n, ty)?;
            let (staging, st) = if want > PROBED_STAGING {
                // The message's own length bounds the staging buffer: a
                // count far past the message (a receive of "up to"
                // `n`) allocated and zeroed all of it, and aborted the
                // process where that was more than memory.
                let (m, st) = obj.comm.mprobe(src, tag)?;
                let mut staging = staging_buf(want.min(st.bytes))?;
                let st = m.recv(&mut staging[..])?;
                (staging, st)
            } else {
                let mut staging = staging_buf(want)?;
                let st = obj.comm.recv(&mut staging[..], src, tag)?;
                (staging, st)
            };
            let got = st.bytes.min(staging.len());
            ty.unpack(&staging[..got], buf, n)?;
            Ok(CStatus::from_rust(&st))
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Recv(
    buf: *mut c_void,
    n: c_int,
    t: *mut c_void,
    src: c_int,
    tag: c_int,
    comm: *mut c_void,
    status: *mut CStatus,
) -> c_int {
    if let (Some(w), Some(sz)) = (predefined(h(comm)), super::types::simple_size(h(t))) {
        if n >= 0 && (tag >= 0 || tag == ANY_TAG) {
            let len = n as usize * sz;
            if len == 0 || !buf.is_null() {
                let r = catch_unwind(AssertUnwindSafe(move || {
                    // Not null (or empty, then possibly null).
                    let b = super::bytes_mut(buf, len)?;
                    let tag = if tag == ANY_TAG {
                        crate::p2p::ANY_TAG
                    } else {
                        tag
                    };
                    let r = w.comm.recv(b, src, tag);
                    status_out(status, r.map(|st| CStatus::from_rust(&st)))
                }));
                progress_orphans();
                return finish_fast(w, "MPI_Recv", r);
            }
        }
    }
    recv_general("MPI_Recv", buf, n.into(), t, src, tag, comm, status)
}

/// `MPI_Recv` off its fast path (any communicator, datatype and
/// argument): out of line, so that the fast path keeps its arguments in
/// registers (the closure below borrows them, which put all seven on the
/// stack at every call's entry: `docs/benchmarks.md`, "Issue 6,
/// twenty-ninth pass").
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn recv_general(
    call: &str,
    buf: *mut c_void,
    n: i64,
    t: *mut c_void,
    src: c_int,
    tag: c_int,
    comm: *mut c_void,
    status: *mut CStatus,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        let n = count_c(n, "count")?;
        let ty = committed(h(t))?;
        let tag = rtag(tag)?;
        status_out(status, recv_into(&obj, buf, n, &ty, src, tag))
    })
}

macro_rules! isend_fn {
    ($name:ident, $call:literal, $mode:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            buf: *const c_void,
            n: c_int,
            t: *mut c_void,
            dest: c_int,
            tag: c_int,
            comm: *mut c_void,
            request: *mut *mut c_void,
        ) -> c_int {
            // The fast path, as MPI_Send's: a predefined communicator, a
            // builtin contiguous type, valid count, tag and request.
            if $mode == Mode::Send || $mode == Mode::Ssend {
                if let (Some(w), Some(sz)) = (predefined(h(comm)), super::types::simple_size(h(t)))
                {
                    let len = n.max(0) as usize * sz;
                    if n >= 0 && tag >= 0 && !request.is_null() && (len == 0 || !buf.is_null()) {
                        let r = catch_unwind(AssertUnwindSafe(move || {
                            let data = super::bytes(buf, len)?;
                            // A standard send the ring takes whole now is
                            // complete: the shared handle, no request.
                            if $mode == Mode::Send && w.comm.try_isend_now(data, dest, tag)? {
                                return out(request, to_handle(REQUEST_SENT), "request");
                            }
                            let r =
                                isend_req(w, data, dest, tag, $mode == Mode::Ssend, Vec::new())?;
                            give_send(r, request)
                        }));
                        progress_orphans();
                        return finish_fast(w, $call, r);
                    }
                }
            }
            isend_general($call, $mode, buf, n.into(), t, dest, tag, comm, request)
        }
    };
}

/// The nonblocking sends off their fast path (any communicator, datatype
/// and argument): out of line, as `recv_general`, so that the fast path
/// keeps its arguments in registers.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn isend_general(
    call: &str,
    mode: Mode,
    buf: *const c_void,
    n: i64,
    t: *mut c_void,
    dest: c_int,
    tag: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        let n = count_c(n, "count")?;
        if request.is_null() {
            return Err(super::arg("request"));
        }
        let r = start_send(&obj, mode, buf, n, &*committed(h(t))?, dest, tag)?;
        give_send(r, request)
    })
}

isend_fn!(MPI_Isend, "MPI_Isend", Mode::Send);
isend_fn!(MPI_Issend, "MPI_Issend", Mode::Ssend);
isend_fn!(MPI_Ibsend, "MPI_Ibsend", Mode::Bsend);
isend_fn!(MPI_Irsend, "MPI_Irsend", Mode::Rsend);

#[no_mangle]
pub unsafe extern "C" fn MPI_Irecv(
    buf: *mut c_void,
    n: c_int,
    t: *mut c_void,
    src: c_int,
    tag: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    // The fast path, as MPI_Recv's.
    if let (Some(w), Some(sz)) = (predefined(h(comm)), super::types::simple_size(h(t))) {
        let len = n.max(0) as usize * sz;
        if n >= 0
            && (tag >= 0 || tag == ANY_TAG)
            && !request.is_null()
            && (len == 0 || !buf.is_null())
        {
            let r = catch_unwind(AssertUnwindSafe(move || {
                // A light receive: the slot keyed with the buffer's address
                // (not null, the test above), and a handle that names it.
                let on_self = h(comm) == super::COMM_SELF;
                let key = buf.expose_provenance();
                let state = match w.comm.post_irecv_keyed(len, src, rtag(tag)?, key)? {
                    Some((id, gen)) => match light_handle(on_self, id, gen) {
                        Some(hd) if !light_held(hd) => {
                            return out(request, to_handle(hd), "request")
                        }
                        // A slot index past the handle's bits, or a
                        // handle still held from the slot's use 2^32
                        // generations ago: an ordinary table request.
                        _ => {
                            w.comm.take_key(id, gen);
                            ReqState::Recv(LightRecv {
                                w,
                                id,
                                buf: Ptr(buf),
                                len,
                            })
                        }
                    },
                    None => ReqState::Done(Ok(CStatus::from_rust(&Status::null()))),
                };
                let r = Req {
                    state,
                    comm: CommRef::Predefined(w),
                };
                give_request(r, request)
            }));
            progress_orphans();
            return finish_fast(w, "MPI_Irecv", r);
        }
    }
    irecv_general("MPI_Irecv", buf, n.into(), t, src, tag, comm, request)
}

/// `MPI_Irecv` off its fast path, out of line (as `recv_general`).
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn irecv_general(
    call: &str,
    buf: *mut c_void,
    n: i64,
    t: *mut c_void,
    src: c_int,
    tag: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        let n = count_c(n, "count")?;
        if request.is_null() {
            return Err(super::arg("request"));
        }
        let r = start_recv(&obj, buf, n, &committed(h(t))?.arc(), src, tag)?;
        give_request(r, request)
    })
}

// ---- persistent requests ----------------------------------------------------------------

macro_rules! pinit_fn {
    ($name:ident, $call:literal, $count:ty, $mode:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            buf: *const c_void,
            n: $count,
            t: *mut c_void,
            peer: c_int,
            tag: c_int,
            comm: *mut c_void,
            request: *mut *mut c_void,
        ) -> c_int {
            guard($call, h(comm), || {
                let obj = comm_obj(h(comm))?;
                let n = count_c(n.into(), "count")?;
                let ty = committed(h(t))?.arc();
                if $mode == Mode::Recv {
                    rtag(tag)?;
                } else {
                    stag(tag)?;
                }
                let spec = PSpec {
                    mode: $mode,
                    buf: Ptr(buf as *mut c_void),
                    count: n,
                    ty,
                    peer,
                    tag,
                    coll: None,
                    part: None,
                };
                give_request(
                    Req {
                        state: ReqState::Persistent { spec, active: None },
                        comm: obj.arc().into(),
                    },
                    request,
                )
            })
        }
    };
}

pinit_fn!(MPI_Send_init, "MPI_Send_init", c_int, Mode::Send);
pinit_fn!(MPI_Ssend_init, "MPI_Ssend_init", c_int, Mode::Ssend);
pinit_fn!(MPI_Bsend_init, "MPI_Bsend_init", c_int, Mode::Bsend);
pinit_fn!(MPI_Rsend_init, "MPI_Rsend_init", c_int, Mode::Rsend);
pinit_fn!(MPI_Recv_init, "MPI_Recv_init", c_int, Mode::Recv);
pinit_fn!(MPI_Send_init_c, "MPI_Send_init_c", i64, Mode::Send);
pinit_fn!(MPI_Ssend_init_c, "MPI_Ssend_init_c", i64, Mode::Ssend);
pinit_fn!(MPI_Bsend_init_c, "MPI_Bsend_init_c", i64, Mode::Bsend);
pinit_fn!(MPI_Rsend_init_c, "MPI_Rsend_init_c", i64, Mode::Rsend);
pinit_fn!(MPI_Recv_init_c, "MPI_Recv_init_c", i64, Mode::Recv);

/// Starts persistent request `handle`. A persistent collective whose
/// start failed has raised its error already: its code lands in
/// `raised`, and the call returns it as it is.
fn start_one(
    handle: usize,
    raised: &mut c_int,
) -> std::result::Result<(), (Option<Arc<CommObj>>, Error)> {
    if handle == REQUEST_SENT {
        return Err((
            None,
            Error::new(
                ErrorClass::Request,
                "MPI_Start on a request that is not persistent (a completed send's)",
            ),
        ));
    }
    let mut st = state();
    let Some(req) = st.reqs.get_mut(handle) else {
        return Err((None, bad_request(handle)));
    };
    let comm = Arc::clone(&req.comm);
    let ReqState::Persistent { spec, active } = &mut req.state else {
        return Err((
            Some(comm),
            Error::new(
                ErrorClass::Request,
                "MPI_Start on a request that is not persistent",
            ),
        ));
    };
    if active.is_some() {
        return Err((
            Some(comm),
            Error::new(
                ErrorClass::Request,
                "MPI_Start on an active persistent request",
            ),
        ));
    }
    let spec = spec.clone();
    drop(st);
    if let Some(p) = &spec.part {
        p.start().map_err(|e| (Some(comm.clone()), e))?;
        let epoch = Req {
            state: ReqState::Part(Arc::clone(p)),
            comm: CommRef::of(&comm),
        };
        if let Some(Req {
            state: ReqState::Persistent { active, .. },
            ..
        }) = state().reqs.get_mut(handle)
        {
            *active = Some(Box::new(epoch));
        }
        return Ok(());
    }
    if let Some(start) = &spec.coll {
        let mut rq: *mut c_void = std::ptr::null_mut();
        let code = (start.0)(&mut rq);
        if code != super::SUCCESS {
            *raised = code;
            return Ok(());
        }
        let mut st = state();
        let Some(r) = st.reqs.take(h(rq)) else {
            return Err((
                Some(comm),
                Error::new(
                    ErrorClass::Intern,
                    "a persistent collective lost its request",
                ),
            ));
        };
        st.reqs.release_taken(h(rq));
        if let Some(Req {
            state: ReqState::Persistent { active, .. },
            ..
        }) = st.reqs.get_mut(handle)
        {
            *active = Some(Box::new(r));
        }
        return Ok(());
    }
    let r = match spec.mode {
        Mode::Recv => start_recv(&comm, spec.buf.0, spec.count, &spec.ty, spec.peer, spec.tag),
        m => start_send(
            &comm, m, spec.buf.0, spec.count, &spec.ty, spec.peer, spec.tag,
        )
        .map(|s| s.into_req(&comm)),
    }
    .map_err(|e| (Some(comm.clone()), e))?;
    let mut st = state();
    if let Some(Req {
        state: ReqState::Persistent { active, .. },
        ..
    }) = st.reqs.get_mut(handle)
    {
        *active = Some(Box::new(r));
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Start(request: *mut *mut c_void) -> c_int {
    let mut raised = super::SUCCESS;
    let rc = guard_on("MPI_Start", || {
        let hd = h(read(request, "request").map_err(|e| (None, e))?);
        start_one(hd, &mut raised)
    });
    if raised != super::SUCCESS {
        raised
    } else {
        rc
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Startall(n: c_int, requests: *mut *mut c_void) -> c_int {
    let mut raised = super::SUCCESS;
    let rc = guard_on("MPI_Startall", || {
        let n = count(n, "count").map_err(|e| (None, e))?;
        let rs = super::array(requests, n, "array_of_requests").map_err(|e| (None, e))?;
        for &r in rs {
            start_one(h(r), &mut raised)?;
            if raised != super::SUCCESS {
                break;
            }
        }
        Ok(())
    });
    if raised != super::SUCCESS {
        raised
    } else {
        rc
    }
}

// ---- completion ---------------------------------------------------------------------------

fn bad_request(r: usize) -> Error {
    Error::new(
        ErrorClass::Request,
        format!("{r:#x} is not a valid request handle (freed, completed, or not a request)"),
    )
}

/// What one completion gives back.
struct Outcome {
    status: CStatus,
    err: Option<(Arc<CommObj>, Error)>,
}

/// Waits for the request `slot` (a handle this layer made and never gave
/// the program), freeing it; its error, without raising it.
pub(crate) fn wait_quietly(mut slot: *mut c_void) -> Result<()> {
    let o = complete(&mut slot, true)?.expect("a blocking completion completes");
    match o.err {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// The target of a live request `req` on `comm` ([`Req::target`]).
fn recv_target(req: &Request<'_>) -> Option<Target> {
    req.posted_slot()
        .map(|(id, gen)| Target::Recv(Posted { id, gen }))
}

/// What a call finds of a request handle ([`take_marked`]).
enum Found {
    /// Its object, taken out.
    Req(Req),
    /// Another thread's blocking wait has it ([`Out::Waiting`]), or, for
    /// a light receive handle, its slot (`wait_recvs_taken`, which takes
    /// the slot's key): what `MPI_Cancel` reaches of it.
    Waited(Option<Target>),
}

/// How a call that takes a handle's object out marks it ([`Out`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    /// Not at all: the handle is freed with it (`Reqs::release`).
    No,
    /// [`Out::Brief`].
    Brief,
    /// [`Out::Waiting`].
    Waiting,
}

/// Takes the object of request handle `hd` out with `take` (`Reqs::take`,
/// or `Reqs::release` to free the handle too), waiting while another
/// thread has it out for a moment ([`Out::Brief`]). While threads may
/// call MPI at once (`env::threads_multiple`), the handle is marked out
/// in `marks` as `mark` says.
///
/// # Errors
/// `Request` for a handle that names no request.
fn take_marked(
    hd: usize,
    take: fn(&mut Reqs, usize) -> Option<Req>,
    mark: Mark,
    marks: &mut Marks,
) -> Result<Found> {
    let multi = super::env::threads_multiple();
    let racing = mark != Mark::No && multi;
    loop {
        let mut st = state();
        if let Some(r) = take(&mut st.reqs, hd) {
            if racing {
                let why = if mark == Mark::Waiting {
                    Out::Waiting(r.target())
                } else {
                    Out::Brief
                };
                marks.add(&mut st.reqs, hd, why);
            }
            return Ok(Found::Req(r));
        }
        match st.reqs.out_of(hd) {
            Some(Out::Waiting(p)) => return Ok(Found::Waited(p.clone())),
            Some(Out::Brief) => {}
            None => {
                drop(st);
                return match light_parts(hd).filter(|_| multi) {
                    // A light handle whose slot another thread's wait holds
                    // (its key taken): the receive, if it still is that
                    // one. (Without threads, such a handle is stale.)
                    Some((w, id, gen)) => match w.comm.recv_pending(id, gen) {
                        Some(posted) => Ok(Found::Waited(
                            posted.then_some(Target::Recv(Posted { id, gen })),
                        )),
                        None => Err(bad_request(hd)),
                    },
                    None => Err(bad_request(hd)),
                };
            }
        }
        drop(st);
        std::thread::yield_now();
    }
}

/// [`take_marked`] for a call that completes or frees the request: one
/// that another thread waits for is not its to take.
///
/// # Errors
/// `Request` for a handle that names no request, or one that another
/// thread waits for.
fn take_waiting(
    hd: usize,
    take: fn(&mut Reqs, usize) -> Option<Req>,
    mark: Mark,
    marks: &mut Marks,
) -> Result<Req> {
    match take_marked(hd, take, mark, marks)? {
        Found::Req(r) => Ok(r),
        Found::Waited(_) => Err(Error::new(
            ErrorClass::Request,
            format!(
                "{hd:#x} is being waited for by another thread (two threads may not \
                 complete one request, MPI 4.1 §11.6.2)"
            ),
        )),
    }
}

/// Completes (or tests) the request at `*slot`: a `Some` outcome when
/// complete (then `*slot` is `MPI_REQUEST_NULL`, unless persistent).
fn complete(slot: &mut *mut c_void, block: bool) -> std::result::Result<Option<Outcome>, Error> {
    let hd = h(*slot);
    if hd == REQUEST_NULL || hd == REQUEST_SENT {
        *slot = to_handle(REQUEST_NULL);
        return Ok(Some(Outcome {
            status: CStatus::empty(),
            err: None,
        }));
    }
    let mut marks = Marks::new();
    let mark = if block { Mark::Waiting } else { Mark::Brief };
    let mut req = take_waiting(hd, Reqs::take, mark, &mut marks)?;
    let r = if block {
        Some(req.wait())
    } else {
        poll_orphans();
        req.test()
    };
    let Some(r) = r else {
        marks.put_back(hd, req);
        return Ok(None);
    };
    let out = outcome(r, &req.comm);
    if req.is_persistent() {
        marks.put_back(hd, req);
    } else {
        let mut st = state();
        st.reqs.release_taken(hd);
        marks.end(&mut st.reqs);
        *slot = to_handle(REQUEST_NULL);
        // The request (maybe the last reference to its communicator,
        // whose drop takes the lock) goes after the lock.
        drop(st);
        drop(req);
    }
    Ok(Some(out))
}

/// `MPI_Wait`'s fast path: a light receive handle as `MPI_Irecv` made it
/// (no call has made it an object), the only receive posted in a quiet
/// engine, waits as a blocking receive does
/// (`Communicator::wait_keyed_direct`) and is finished, its slot freed.
/// `None`: any other handle or case, for the general path.
#[inline]
fn wait_light(hd: usize) -> Option<Outcome> {
    let (w, id, gen) = light_parts(hd)?;
    let r = w.comm.wait_keyed_direct(id, gen, |key, len| {
        recv_bytes(Ptr(std::ptr::with_exposed_provenance_mut(key)), len)
    })?;
    Some(outcome(finish(r, Fin::None), w))
}

/// A finished request's outcome: its status, or its error with the
/// communicator whose handler raises it.
fn outcome(r: std::result::Result<CStatus, Error>, comm: &Arc<CommObj>) -> Outcome {
    match r {
        Ok(status) => Outcome { status, err: None },
        Err(e) => Outcome {
            status: err_status(&e),
            err: Some((comm.clone(), e)),
        },
    }
}

/// Whether the request at `slot` is null or an inactive persistent one.
fn inactive(slot: *mut c_void) -> bool {
    let hd = h(slot);
    if hd == REQUEST_NULL {
        return true;
    }
    matches!(
        state().reqs.get(hd).map(|r| &r.state),
        Some(ReqState::Persistent { active: None, .. })
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Wait(request: *mut *mut c_void, status: *mut CStatus) -> c_int {
    guard_on("MPI_Wait", || {
        let mut slot = read(request, "request").map_err(|e| (None, e))?;
        let o = match wait_light(h(slot)) {
            Some(o) => {
                slot = to_handle(REQUEST_NULL);
                Some(o)
            }
            None => complete(&mut slot, true).map_err(|e| (None, e))?,
        }
        .expect("a blocking completion completes");
        out(request, slot, "request").map_err(|e| (None, e))?;
        put_status(status, &o.status);
        match o.err {
            Some((c, e)) => Err((Some(c), e)),
            None => Ok(()),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Test(
    request: *mut *mut c_void,
    flag: *mut c_int,
    status: *mut CStatus,
) -> c_int {
    guard_on("MPI_Test", || {
        let mut slot = read(request, "request").map_err(|e| (None, e))?;
        if flag.is_null() {
            return Err((None, super::arg("flag")));
        }
        match complete(&mut slot, false).map_err(|e| (None, e))? {
            None => {
                let _ = out(flag, 0, "flag");
                Ok(())
            }
            Some(o) => {
                let _ = out(flag, 1, "flag");
                let _ = out(request, slot, "request");
                put_status(status, &o.status);
                match o.err {
                    Some((c, e)) => Err((Some(c), e)),
                    None => Ok(()),
                }
            }
        }
    })
}

/// `MPI_Request_get_status`: `MPI_Test` that frees nothing and leaves a
/// persistent request active; a later completing call gets the same
/// status.
#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status(
    request: *mut c_void,
    flag: *mut c_int,
    status: *mut CStatus,
) -> c_int {
    guard_on("MPI_Request_get_status", || {
        if flag.is_null() {
            return Err((None, super::arg("flag")));
        }
        let hd = h(request);
        if hd == REQUEST_NULL || hd == REQUEST_SENT {
            let _ = out(flag, 1, "flag");
            put_status(status, &CStatus::empty());
            return Ok(());
        }
        // Out of the table for the peek, marked so that calls on other
        // threads wait for it; a request another thread waits for is not
        // complete yet, as far as this call can tell.
        let mut marks = Marks::new();
        let req =
            match take_marked(hd, Reqs::take, Mark::Brief, &mut marks).map_err(|e| (None, e))? {
                Found::Req(req) => req,
                Found::Waited(_) => {
                    let _ = out(flag, 0, "flag");
                    return Ok(());
                }
            };
        /// Puts the request back and ends the mark however the peek ends
        /// (a panic included, which the C boundary catches): a mark left
        /// behind would make calls on other threads wait for ever.
        struct Back(usize, Option<Req>, Marks);
        impl Drop for Back {
            fn drop(&mut self) {
                let mut st = state();
                if let Some(req) = self.1.take() {
                    st.reqs.put_back(self.0, req);
                }
                std::mem::replace(&mut self.2, Marks::new()).end(&mut st.reqs);
            }
        }
        let mut back = Back(hd, Some(req), marks);
        poll_orphans();
        let req = back.1.as_mut().expect("put back only on drop");
        let r = req.peek();
        let comm = req.comm.clone();
        drop(back);
        match r {
            None => {
                let _ = out(flag, 0, "flag");
                Ok(())
            }
            Some(r) => {
                let _ = out(flag, 1, "flag");
                let o = outcome(r, &comm);
                put_status(status, &o.status);
                match o.err {
                    Some((c, e)) => Err((Some(c), e)),
                    None => Ok(()),
                }
            }
        }
    })
}

/// Waits for every plain operation among `reqs` at once, through the
/// Rust `wait_all_each`, which lends all their receive buffers to
/// progress for the whole wait (so a rendezvous or pipelined message lands
/// straight in its buffer, not in a slot buffer first); each becomes
/// `Done` with its outcome, for `complete` to hand out. They are out of
/// the table meanwhile, their handles reserved and, while threads may
/// race, marked (`Out::Waiting`: another thread's `MPI_Cancel` reaches a
/// receive).
fn wait_live_together(reqs: &[*mut c_void]) {
    let mut batch = Vec::new();
    let mut rust = Vec::new();
    let racing = super::env::threads_multiple();
    let mut marks = Marks::new();
    {
        let mut st = state();
        for &r in reqs {
            let hd = h(r);
            if hd == REQUEST_NULL {
                continue;
            }
            let Some(req) = st.reqs.get_mut(hd) else {
                continue;
            };
            req.expand();
            let Some(Req {
                state: ReqState::Live { req: rr, fin, keep },
                comm,
            }) = st
                .reqs
                .take_if(hd, |r| matches!(r.state, ReqState::Live { .. }))
            else {
                continue;
            };
            if racing {
                let t = recv_target(&rr);
                marks.add(&mut st.reqs, hd, Out::Waiting(t));
            }
            rust.push(rr);
            batch.push((hd, fin, keep, comm));
        }
    }
    if rust.is_empty() {
        return;
    }
    // The requests borrow `fin`'s and `keep`'s buffers, held in `batch`
    // until they are finished below.
    let results = crate::comm::wait_all_each(rust);
    // Finished and put back under one lock (as each was taken out).
    let mut st = state();
    for ((hd, fin, keep, comm), r) in batch.into_iter().zip(results) {
        let res = finish(r, fin);
        drop(keep);
        let state = ReqState::Done(res);
        st.reqs.put_back(hd, Req { state, comm });
    }
    marks.end(&mut st.reqs);
}

/// `MPI_Waitall`'s common case: every request is null, a send complete
/// at its call (`REQUEST_SENT`), or live and not persistent (a window of
/// `MPI_Isend`/`MPI_Irecv`). Takes them out of the table and frees their
/// handles under one lock (each slot is `MPI_REQUEST_NULL` from then on:
/// a request being completed is the call's, MPI 4.1 §3.7.3; while
/// threads may race, the handles are freed only after the wait and
/// marked meanwhile, `Out::Waiting`, so that another thread's
/// `MPI_Cancel` reaches a receive), waits for them together, finishes each
/// and writes its status straight into `sts` (`MPI_STATUSES_IGNORE`:
/// `None`): the first error with its communicator, if any. `None`, with
/// nothing done, when any request is of another kind, not a valid handle,
/// or given twice: the general path (`wait_live_together`, `take_done`,
/// `complete`) then handles them, and reports what is wrong.
fn wait_all_taken(
    reqs: &mut [*mut c_void],
    mut sts: Option<&mut [CStatus]>,
) -> Option<Option<(Arc<CommObj>, Error)>> {
    // What the Rust requests borrow (`fin`'s and `keep`'s buffers) is
    // declared first, so it outlives them even on unwinding; the
    // communicators are let go with it, after the lock (one may be the
    // last reference, whose drop takes the lock).
    let mut held: Vec<(usize, Fin, Keep, CommRef)> = Vec::with_capacity(reqs.len());
    let mut rust = Vec::with_capacity(reqs.len());
    let racing = super::env::threads_multiple();
    let mut marks = Marks::new();
    {
        let mut st = state();
        for (i, &r) in reqs.iter().enumerate() {
            let hd = h(r);
            if hd == REQUEST_NULL || hd == REQUEST_SENT {
                continue;
            }
            let taken = st.reqs.take_if(hd, |r| {
                matches!(r.state, ReqState::Live { .. } | ReqState::Recv(_))
            });
            let Some(Req {
                state: ReqState::Live { req, fin, keep },
                comm,
            }) = taken.map(|mut r| {
                r.expand();
                r
            })
            else {
                // Another kind, or given twice: put back what was taken,
                // untouched, for the general path.
                for ((j, fin, keep, comm), req) in held.drain(..).zip(rust.drain(..)) {
                    let state = ReqState::Live { req, fin, keep };
                    st.reqs.put_back(h(reqs[j]), Req { state, comm });
                }
                return None;
            };
            rust.push(req);
            held.push((i, fin, keep, comm));
        }
        if racing {
            // Kept reserved and marked for the wait, so that another
            // thread's MPI_Cancel reaches a receive (freed after it).
            // The receives' generations under one engine lock (every
            // communicator of the process shares the engine).
            let ids: Vec<_> = rust.iter().map(Request::recv_slot).collect();
            let gens = match held.first() {
                Some((_, _, _, comm)) => comm.comm.posted_gens(&ids),
                None => Vec::new(),
            };
            for ((&(i, ..), id), gen) in held.iter().zip(ids).zip(gens) {
                let target = id
                    .zip(gen)
                    .map(|(id, gen)| Target::Recv(Posted { id, gen }));
                marks.add(&mut st.reqs, h(reqs[i]), Out::Waiting(target));
            }
        } else {
            for &(i, ..) in &held {
                st.reqs.release_taken(h(reqs[i]));
            }
        }
    }
    let handles: Vec<usize> = if racing {
        held.iter().map(|&(i, ..)| h(reqs[i])).collect()
    } else {
        Vec::new()
    };
    // While threads may race, the program's array keeps the handles until
    // the wait ends (another thread may read one there to cancel it).
    if !racing {
        null_all(reqs);
    }
    if let Some(sts) = sts.as_deref_mut() {
        // Null and sent entries: the empty status; the others are
        // overwritten below.
        sts.fill(CStatus::empty());
    }
    let mut first_err = None;
    let mut settle = |i: usize, res: std::result::Result<CStatus, Error>, comm: &CommRef| {
        let st = match res {
            Ok(s) => s,
            Err(e) => {
                let st = err_status(&e);
                first_err.get_or_insert_with(|| (Arc::clone(comm), e));
                st
            }
        };
        if let Some(sts) = sts.as_deref_mut() {
            sts[i] = st;
        }
    };
    // Plain receives and sends are settled as they finish (under the
    // engine lock: a status conversion only); an unpacking receive after
    // the wait, its unpack outside the lock.
    let mut later = Vec::new();
    crate::comm::wait_all_with(&mut rust, |j, r| {
        let (i, fin, _, comm) = &held[j];
        match fin {
            Fin::None => settle(*i, r.map(|s| CStatus::from_rust(&s)), comm),
            Fin::Send => settle(*i, r.map(|_| CStatus::empty()), comm),
            Fin::Unpack(_) | Fin::Words(_) => later.push((j, r)),
        }
    });
    drop(rust);
    for (j, r) in later {
        let fin = std::mem::replace(&mut held[j].1, Fin::None);
        settle(held[j].0, finish(r, fin), &held[j].3);
    }
    if racing {
        let mut st = state();
        for &hd in &handles {
            st.reqs.release_taken(hd);
        }
        marks.end(&mut st.reqs);
        drop(st);
        null_all(reqs);
    }
    // The lends and staging buffers go now, after every request.
    drop(held);
    Some(first_err)
}

/// `MPI_Waitall` of null requests, sends complete at their call and light
/// receives only (OSU's bandwidth window at its receiver): takes each
/// light handle's slot key (a handle made an object: the object, out of
/// `Reqs` under the C layer's lock, taken only then), lends the buffers
/// to one wait on their slots, and writes each status in place: the
/// first error with its communicator, if any.
/// `Err(sts)`, with nothing done, when any request is of another kind,
/// not a valid handle or given twice (`wait_all_taken` or the general
/// path then take them).
#[allow(clippy::type_complexity)]
fn wait_recvs_taken<'s>(
    reqs: &mut [*mut c_void],
    mut sts: Option<&'s mut [CStatus]>,
) -> std::result::Result<Option<(Arc<CommObj>, Error)>, Option<&'s mut [CStatus]>> {
    // (index in `reqs`, communicator, slot, buffer, length, the key taken
    // from a light handle's slot or `None` for an object taken out of
    // `Reqs`): the receives are no longer let go on drop; each is finished
    // or let go below.
    let mut taken = Vec::with_capacity(reqs.len());
    // The other handles to look at (by index): none in a window of light
    // handles as `MPI_Irecv` made them.
    let mut rest = Vec::new();
    // Every light handle's key, under one engine lock (all predefined
    // communicators are of this process's one engine).
    let first = reqs.iter().find_map(|&r| light_parts(h(r)));
    let mut keyed = |take: &mut dyn FnMut(crate::p2p::SlotId, u32) -> Option<(usize, usize)>| {
        for (i, &r) in reqs.iter().enumerate() {
            let hd = h(r);
            if hd == REQUEST_NULL || hd == REQUEST_SENT {
                continue;
            }
            if let Some((w, id, gen)) = light_parts(hd) {
                if let Some((key, len)) = take(id, gen) {
                    let buf = Ptr(std::ptr::with_exposed_provenance_mut(key));
                    taken.push((i, w, id, buf, len, Some(key)));
                    continue;
                }
            }
            rest.push(i);
        }
    };
    match first {
        Some((w, ..)) => w.comm.take_keys(keyed),
        None => keyed(&mut |_, _| None),
    }
    // The C layer's lock, taken only for those others.
    let mut st = None;
    for &i in &rest {
        let hd = h(reqs[i]);
        let st = st.get_or_insert_with(state);
        let Some(Req {
            state: ReqState::Recv(l),
            ..
        }) = st
            .reqs
            .take_if(hd, |r| matches!(r.state, ReqState::Recv(_)))
        else {
            // Another kind, or given twice: put back what was taken.
            for (j, w, id, buf, len, key) in taken.drain(..) {
                match key {
                    Some(key) => w.comm.restore_key(id, key),
                    None => {
                        let state = ReqState::Recv(LightRecv { w, id, buf, len });
                        let comm = CommRef::Predefined(w);
                        st.reqs.put_back(h(reqs[j]), Req { state, comm });
                    }
                }
            }
            return Err(sts);
        };
        let (w, id, buf, len) = l.into_parts();
        taken.push((i, w, id, buf, len, None));
    }
    // The handles of objects taken out: freed now, or, while threads may
    // race, after the wait, marked meanwhile so that another thread's
    // MPI_Cancel reaches the receive (a light handle names its slot).
    let racing = super::env::threads_multiple();
    let mut marks = Marks::new();
    let mut objects = Vec::new();
    if let Some(mut st) = st {
        for &(i, _, id, .., key) in &taken {
            if key.is_some() {
                continue;
            }
            let hd = h(reqs[i]);
            match light_parts(hd).filter(|_| racing) {
                Some((_, _, gen)) => {
                    let posted = Posted { id, gen };
                    marks.add(&mut st.reqs, hd, Out::Waiting(Some(Target::Recv(posted))));
                    objects.push(hd);
                }
                _ => st.reqs.release_taken(hd),
            }
        }
    }
    // As in `wait_all_taken`: kept until the wait ends while threads may
    // race.
    if !racing {
        null_all(reqs);
    }
    if let Some(sts) = sts.as_deref_mut() {
        // Null and sent entries: the empty status; the others are
        // overwritten below.
        sts.fill(CStatus::empty());
    }
    let Some(&(_, w, ..)) = taken.first() else {
        null_all(reqs);
        return Ok(None);
    };
    // Every predefined communicator is of this one process: one engine.
    let mut sinks: Vec<(crate::p2p::SlotId, &mut [u8])> = taken
        .iter()
        .map(|&(_, _, id, buf, len, _)| (id, recv_bytes(buf, len)))
        .collect();
    let mut first_err = None;
    let waited = w.comm.wait_recvs(&mut sinks, |j, r| {
        let st = match r {
            Ok(s) => CStatus::from_rust(&s),
            Err(e) => {
                let st = err_status(&e);
                first_err.get_or_insert_with(|| (Arc::clone(taken[j].1), e));
                st
            }
        };
        if let Some(sts) = sts.as_deref_mut() {
            sts[taken[j].0] = st;
        }
    });
    drop(sinks);
    if let Err(e) = waited {
        // Nothing finished: every receive is let go, and has the error.
        for &(i, w, id, ..) in &taken {
            w.comm.let_go_recv(id);
            if let Some(sts) = sts.as_deref_mut() {
                sts[i] = err_status(&e);
            }
        }
        first_err = Some((Arc::clone(w), e));
    }
    if !objects.is_empty() {
        let mut st = state();
        for &hd in &objects {
            st.reqs.release_taken(hd);
        }
        marks.end(&mut st.reqs);
    }
    if racing {
        null_all(reqs);
    }
    Ok(first_err)
}

/// Sets every handle of `reqs` to `MPI_REQUEST_NULL`.
fn null_all(reqs: &mut [*mut c_void]) {
    for r in reqs.iter_mut() {
        *r = to_handle(REQUEST_NULL);
    }
}

/// Finishes, under one lock, the longest prefix of `reqs` that is null or
/// complete and not persistent (what `wait_live_together` leaves after a
/// window of sends and receives), as [`complete`] would one by one:
/// their outcomes, in order; each slot set to `MPI_REQUEST_NULL` and its
/// handle freed. The requests are dropped after the lock is let go (a
/// request may hold the last reference to a communicator).
fn take_done(reqs: &mut [*mut c_void]) -> Vec<Outcome> {
    let mut outs = Vec::with_capacity(reqs.len());
    let mut gone = Vec::with_capacity(reqs.len());
    {
        let mut st = state();
        for slot in reqs.iter_mut() {
            let hd = h(*slot);
            if hd == REQUEST_NULL {
                outs.push(Outcome {
                    status: CStatus::empty(),
                    err: None,
                });
                continue;
            }
            if !matches!(
                st.reqs.get(hd),
                Some(Req {
                    state: ReqState::Done(_),
                    ..
                })
            ) {
                break;
            }
            let req = st.reqs.release(hd).expect("checked just above");
            let ReqState::Done(r) = &req.state else {
                unreachable!("checked just above")
            };
            outs.push(outcome(r.clone(), &req.comm));
            *slot = to_handle(REQUEST_NULL);
            gone.push(req);
        }
    }
    drop(gone);
    outs
}

/// Backs off between rounds of a polling wait: spin, then yield, then
/// sleep (growing to 1 ms) so a long wait does not burn a core.
pub(crate) fn backoff(round: &mut u32) {
    *round += 1;
    if *round < 64 {
        std::hint::spin_loop();
    } else if *round < 256 {
        std::thread::yield_now();
    } else {
        let us = (*round as u64 - 255).min(1000);
        std::thread::sleep(std::time::Duration::from_micros(us));
    }
}

/// The error of a multiple completion: with statuses, `MPI_ERR_IN_STATUS`
/// (each status's `MPI_ERROR` tells its own), raised through the handler;
/// without, the first failed request's own error.
fn in_status(call: &str, c: &Arc<CommObj>, e: &Error, ignored: bool) -> c_int {
    if ignored {
        super::raise(Some(c), call, e)
    } else {
        let wrapped = Error::new(
            ErrorClass::InStatus,
            format!("a request failed (its status says which): {e}"),
        );
        super::raise(Some(c), call, &wrapped)
    }
}

/// Runs a multiple-completion body, catching a panic (the body reports
/// its own errors through the handler and returns the code).
fn caught(call: &str, f: impl FnOnce() -> c_int) -> c_int {
    let r = catch_unwind(AssertUnwindSafe(f));
    progress_orphans();
    r.unwrap_or_else(|_| {
        let e = Error::new(
            ErrorClass::Intern,
            format!("internal error in {call} (caught at the C boundary)"),
        );
        super::raise(None, call, &e)
    })
}

/// What [`all`]'s body leaves to report.
enum AllOut {
    /// Not all complete (`MPI_Testall`): nothing consumed.
    NotYet,
    /// Every outcome, in order, statuses not yet written.
    Outs(Vec<Outcome>),
    /// Statuses written (`wait_all_taken`); the first error, if any.
    Written(Option<(Arc<CommObj>, Error)>),
}

/// The common part of Waitall / Testall: completes every request of
/// `reqs` (blocking or only if all are complete).
fn all(
    call: &str,
    n: c_int,
    requests: *mut *mut c_void,
    statuses: *mut CStatus,
    block: bool,
    flag: *mut c_int,
) -> c_int {
    caught(call, move || {
        let r = (|| -> Result<AllOut> {
            let n = count(n, "count")?;
            let reqs = array_mut(requests, n, "array_of_requests")?;
            if block {
                let sts = if statuses.is_null() {
                    None
                } else {
                    Some(array_mut(statuses, n, "array_of_statuses")?)
                };
                let sts = match wait_recvs_taken(reqs, sts) {
                    Ok(first_err) => return Ok(AllOut::Written(first_err)),
                    Err(sts) => sts,
                };
                if let Some(first_err) = wait_all_taken(reqs, sts) {
                    return Ok(AllOut::Written(first_err));
                }
            } else {
                poll_orphans();
                // Complete only if all are: test each without consuming it.
                for &r in reqs.iter() {
                    let hd = h(r);
                    if hd == REQUEST_SENT || inactive(r) {
                        continue;
                    }
                    let mut marks = Marks::new();
                    let mut req = take_waiting(hd, Reqs::take, Mark::Brief, &mut marks)?;
                    // A generalized request is only looked at: its query
                    // and free callbacks wait for the call that completes
                    // it (below, once all are complete).
                    if let ReqState::Greq(g) = &req.state {
                        let done = g.is_done();
                        marks.put_back(hd, req);
                        if !done {
                            return Ok(AllOut::NotYet);
                        }
                        continue;
                    }
                    let done = req.test();
                    if let (Some(res), true) = (&done, req.is_persistent()) {
                        // Keep the outcome until all are complete.
                        let ReqState::Persistent { spec, .. } = &req.state else {
                            unreachable!()
                        };
                        let spec = spec.clone();
                        req.state = ReqState::Persistent {
                            spec,
                            active: Some(Box::new(Req {
                                state: ReqState::Done(res.clone()),
                                comm: req.comm.clone(),
                            })),
                        };
                    }
                    let complete = done.is_some();
                    marks.put_back(hd, req);
                    if !complete {
                        return Ok(AllOut::NotYet);
                    }
                }
            }
            let mut outs = Vec::with_capacity(n);
            if block {
                wait_live_together(reqs);
                outs = take_done(reqs);
            }
            for slot in reqs[outs.len()..].iter_mut() {
                outs.push(complete(slot, true)?.expect("blocking"));
            }
            Ok(AllOut::Outs(outs))
        })();
        let first_err = match r {
            Err(e) => return super::raise(None, call, &e),
            Ok(AllOut::NotYet) => {
                let _ = out(flag, 0, "flag");
                return SUCCESS;
            }
            Ok(AllOut::Written(first_err)) => first_err,
            Ok(AllOut::Outs(outs)) => {
                let first_err = outs.iter().find_map(|o| o.err.as_ref()).cloned();
                if !statuses.is_null() {
                    if let Ok(sts) = array_mut(statuses, outs.len(), "array_of_statuses") {
                        for (s, o) in sts.iter_mut().zip(&outs) {
                            *s = o.status;
                        }
                    }
                }
                first_err
            }
        };
        if !flag.is_null() {
            let _ = out(flag, 1, "flag");
        }
        match first_err {
            None => SUCCESS,
            Some((c, e)) => in_status(call, &c, &e, statuses.is_null()),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitall(
    n: c_int,
    requests: *mut *mut c_void,
    statuses: *mut CStatus,
) -> c_int {
    all(
        "MPI_Waitall",
        n,
        requests,
        statuses,
        true,
        std::ptr::null_mut(),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(
    n: c_int,
    requests: *mut *mut c_void,
    flag: *mut c_int,
    statuses: *mut CStatus,
) -> c_int {
    if flag.is_null() {
        return super::raise(None, "MPI_Testall", &super::arg("flag"));
    }
    all("MPI_Testall", n, requests, statuses, false, flag)
}

/// Waitany / Testany: the first complete request of `reqs`.
fn any(
    call: &str,
    n: c_int,
    requests: *mut *mut c_void,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut CStatus,
    block: bool,
) -> c_int {
    caught(call, move || {
        let r = (|| -> Result<Option<(usize, Outcome)>> {
            let n = count(n, "count")?;
            let reqs = array_mut(requests, n, "array_of_requests")?;
            let mut round = 0;
            loop {
                let mut any_active = false;
                for (i, slot) in reqs.iter_mut().enumerate() {
                    if inactive(*slot) {
                        continue;
                    }
                    any_active = true;
                    if let Some(o) = complete(slot, false)? {
                        return Ok(Some((i, o)));
                    }
                }
                if !any_active {
                    return Ok(Some((
                        usize::MAX,
                        Outcome {
                            status: CStatus::empty(),
                            err: None,
                        },
                    )));
                }
                if !block {
                    return Ok(None);
                }
                backoff(&mut round);
            }
        })();
        match r {
            Err(e) => super::raise(None, call, &e),
            Ok(None) => {
                let _ = out(flag, 0, "flag");
                let _ = out(index, UNDEFINED, "index");
                SUCCESS
            }
            Ok(Some((i, o))) => {
                if !flag.is_null() {
                    let _ = out(flag, 1, "flag");
                }
                let _ = out(
                    index,
                    if i == usize::MAX {
                        UNDEFINED
                    } else {
                        i as c_int
                    },
                    "index",
                );
                put_status(status, &o.status);
                match o.err {
                    Some((c, e)) => super::raise(Some(&c), call, &e),
                    None => SUCCESS,
                }
            }
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitany(
    n: c_int,
    requests: *mut *mut c_void,
    index: *mut c_int,
    status: *mut CStatus,
) -> c_int {
    any(
        "MPI_Waitany",
        n,
        requests,
        index,
        std::ptr::null_mut(),
        status,
        true,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testany(
    n: c_int,
    requests: *mut *mut c_void,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut CStatus,
) -> c_int {
    if flag.is_null() {
        return super::raise(None, "MPI_Testany", &super::arg("flag"));
    }
    any("MPI_Testany", n, requests, index, flag, status, false)
}

/// Waitsome / Testsome.
fn some(
    call: &str,
    n: c_int,
    requests: *mut *mut c_void,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut CStatus,
    block: bool,
) -> c_int {
    caught(call, move || {
        let r = (|| -> Result<Option<Vec<(usize, Outcome)>>> {
            let n = count(n, "incount")?;
            let reqs = array_mut(requests, n, "array_of_requests")?;
            let mut round = 0;
            loop {
                let mut any_active = false;
                let mut done = Vec::new();
                for (i, slot) in reqs.iter_mut().enumerate() {
                    if inactive(*slot) {
                        continue;
                    }
                    any_active = true;
                    if let Some(o) = complete(slot, false)? {
                        done.push((i, o));
                    }
                }
                if !any_active {
                    return Ok(None);
                }
                if !done.is_empty() || !block {
                    return Ok(Some(done));
                }
                backoff(&mut round);
            }
        })();
        match r {
            Err(e) => super::raise(None, call, &e),
            Ok(None) => {
                let _ = out(outcount, UNDEFINED, "outcount");
                SUCCESS
            }
            Ok(Some(done)) => {
                let _ = out(outcount, done.len() as c_int, "outcount");
                if let Ok(ix) = array_mut(indices, done.len(), "array_of_indices") {
                    for (d, (i, _)) in ix.iter_mut().zip(&done) {
                        *d = *i as c_int;
                    }
                }
                let first_err = done.iter().find_map(|(_, o)| o.err.as_ref()).cloned();
                if !statuses.is_null() {
                    if let Ok(sts) = array_mut(statuses, done.len(), "array_of_statuses") {
                        for (s, (_, o)) in sts.iter_mut().zip(&done) {
                            *s = o.status;
                        }
                    }
                }
                match first_err {
                    None => SUCCESS,
                    Some((c, e)) => in_status(call, &c, &e, statuses.is_null()),
                }
            }
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitsome(
    n: c_int,
    requests: *mut *mut c_void,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut CStatus,
) -> c_int {
    some(
        "MPI_Waitsome",
        n,
        requests,
        outcount,
        indices,
        statuses,
        true,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testsome(
    n: c_int,
    requests: *mut *mut c_void,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut CStatus,
) -> c_int {
    some(
        "MPI_Testsome",
        n,
        requests,
        outcount,
        indices,
        statuses,
        false,
    )
}

/// The communicator of handle `hd` if it is a partitioned request with
/// an epoch started and not completed.
fn active_partitioned(hd: usize) -> Option<Arc<CommObj>> {
    match state().reqs.get(hd) {
        Some(Req {
            state:
                ReqState::Persistent {
                    spec: PSpec { part: Some(_), .. },
                    active: Some(_),
                },
            comm,
        }) => Some(Arc::clone(comm)),
        _ => None,
    }
}

/// `MPI_Request_free` or `MPI_Cancel` of an active partitioned request:
/// erroneous (MPI 4.1 §4.2.1), refused, the request left as it was.
fn refuse_active_partitioned(call: &str) -> Error {
    Error::new(
        ErrorClass::Request,
        format!(
            "{call} of an active partitioned request (MPI 4.1 §4.2.1 makes it erroneous): \
             complete it first"
        ),
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(request: *mut *mut c_void) -> c_int {
    guard_on("MPI_Request_free", || {
        let hd = h(read(request, "request").map_err(|e| (None, e))?);
        // Raised on the request's communicator. (A send complete at its
        // call, the common handle freed at once, takes no lock for it.)
        if let Some(comm) = (hd != REQUEST_SENT)
            .then(|| active_partitioned(hd))
            .flatten()
        {
            return Err((Some(comm), refuse_active_partitioned("MPI_Request_free")));
        }
        request_free(request, hd).map_err(|e| (None, e))
    })
}

fn request_free(request: *mut *mut c_void, hd: usize) -> Result<()> {
    if hd == REQUEST_SENT {
        return out(request, to_handle(REQUEST_NULL), "request");
    }
    // Freed with its handle in one step, but a generalized request:
    // its handle stays reserved (taken) until its free callback runs,
    // now or when it completes (MPI_Grequest_complete names it).
    let req = take_waiting(
        hd,
        |reqs, hd| {
            if matches!(reqs.get(hd).map(|r| &r.state), Some(ReqState::Greq(_))) {
                reqs.take(hd)
            } else {
                reqs.release(hd)
            }
        },
        Mark::No,
        &mut Marks::new(),
    )?;
    if let ReqState::Greq(g) = req.state {
        // The program's copy is null either way.
        out(request, to_handle(REQUEST_NULL), "request")?;
        return super::greq::free_request(*g);
    }
    if let ReqState::Persistent {
        spec: PSpec { part: Some(p), .. },
        ..
    } = &req.state
    {
        super::part::forget(hd, p);
    }
    let active = match req.state {
        ReqState::Persistent { active, .. } => active.map(|a| *a),
        ReqState::Done(_) => None,
        _ => Some(req),
    };
    if let Some(a) = active {
        // It completes in the background (MPI 4.1 §3.7.3).
        let mut orphans = lock(&ORPHANS);
        orphans.push(a);
        // Relaxed: under the lock (`test_orphans`).
        ORPHANED.store(1, Ordering::Relaxed);
    }
    out(request, to_handle(REQUEST_NULL), "request")
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cancel(request: *mut *mut c_void) -> c_int {
    // A partitioned request in its epoch, raised on its communicator
    // (one that another thread waits for is out of the table: the cancel
    // then does nothing, below).
    if let Some(comm) = read(request, "request")
        .ok()
        .and_then(|r| active_partitioned(h(r)))
    {
        return guard_on("MPI_Cancel", || {
            Err((Some(comm), refuse_active_partitioned("MPI_Cancel")))
        });
    }
    guard("MPI_Cancel", COMM_NULL, || {
        let hd = h(read(request, "request")?);
        if hd == REQUEST_SENT {
            // Complete already: not cancelled (its status says so).
            return Ok(());
        }
        // Out of the table while the engine is asked, so lookups by other
        // threads do not wait behind the engine lock.
        let mut marks = Marks::new();
        let mut req = match take_marked(hd, Reqs::take, Mark::Brief, &mut marks)? {
            Found::Req(req) => req,
            Found::Waited(target) => {
                // Another thread waits for it: its receive, not matched
                // yet, is marked cancelled in the engine, and that wait
                // returns with a cancelled status (MPI 4.1 §3.8.4); a
                // generalized request's callback runs.
                return target.map_or(Ok(()), |t| t.cancel());
            }
        };
        let target: &mut Req = match &mut req.state {
            ReqState::Persistent {
                active: Some(a), ..
            } => a,
            _ => &mut req,
        };
        // A generalized request's cancel is the program's callback, run
        // with the request back (it may look at it).
        if let ReqState::Greq(g) = &target.state {
            let c = g.canceller();
            marks.put_back(hd, req);
            return c.cancel();
        }
        // An MPI_Isendrecv cancels its receive (its send, as any, is not
        // cancelled); its status is then the receive's, cancelled.
        let target: &mut Req = match &mut target.state {
            ReqState::Pair(p) => &mut p[1],
            _ => target,
        };
        target.expand();
        if let ReqState::Live { req: r, .. } = &mut target.state {
            if r.cancel() {
                target.state = ReqState::Done(Ok(CStatus::cancelled()));
            }
        }
        marks.put_back(hd, req);
        // A send, or a receive already matched, is not cancelled: it
        // completes as usual and its status says so (MPI allows this).
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Test_cancelled(status: *const CStatus, flag: *mut c_int) -> c_int {
    guard("MPI_Test_cancelled", COMM_NULL, || {
        let s = read(status, "status")?;
        out(flag, (s.internal[2] != 0) as c_int, "flag")
    })
}

/// `MPI_Status_set_cancelled` (for generalized requests and layered
/// libraries): what `MPI_Test_cancelled` then says.
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_cancelled(status: *mut CStatus, flag: c_int) -> c_int {
    guard("MPI_Status_set_cancelled", COMM_NULL, || {
        let mut s = read(status.cast_const(), "status")?;
        s.internal[2] = c_int::from(flag != 0);
        out(status, s, "status")
    })
}

/// `MPI_Status_set_elements`: the status says `count` basic elements of
/// `t` arrived (`MPI_Get_elements` gives `count`; `MPI_Get_count` the
/// whole instances, or `MPI_UNDEFINED`).
#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_elements(
    status: *mut CStatus,
    t: *mut c_void,
    count: c_int,
) -> c_int {
    guard("MPI_Status_set_elements", COMM_NULL, || {
        set_elements(status, t, super::count(count, "count")? as i64)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_elements_x(
    status: *mut CStatus,
    t: *mut c_void,
    count: i64,
) -> c_int {
    guard("MPI_Status_set_elements_x", COMM_NULL, || {
        set_elements(status, t, count)
    })
}

fn set_elements(status: *mut CStatus, t: *mut c_void, count: i64) -> Result<()> {
    let n = usize::try_from(count)
        .map_err(|_| Error::new(ErrorClass::Count, format!("count {count} is negative")))?;
    let ty = super::types::type_obj(h(t))?;
    let bytes = ty.bytes_of_elements(n).ok_or_else(|| {
        Error::new(
            ErrorClass::Count,
            format!("{n} elements do not fit a status"),
        )
    })?;
    let mut s = read(status.cast_const(), "status")?;
    s.set_bytes(bytes);
    out(status, s, "status")
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_elements_x(
    status: *const CStatus,
    t: *mut c_void,
    cnt: *mut i64,
) -> c_int {
    elements_x("MPI_Get_elements_x", status, t, cnt)
}

/// The basic elements a status counts, as an `MPI_Count`.
fn elements_x(call: &str, status: *const CStatus, t: *mut c_void, cnt: *mut i64) -> c_int {
    guard(call, COMM_NULL, || {
        let s = read(status, "status")?;
        let ty = super::types::type_obj(h(t))?;
        let c = ty.elements_in(s.bytes()).map_or(i64::from(UNDEFINED), |n| {
            i64::try_from(n).unwrap_or(i64::from(UNDEFINED))
        });
        out(cnt, c, "count")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_count(
    status: *const CStatus,
    t: *mut c_void,
    cnt: *mut c_int,
) -> c_int {
    guard("MPI_Get_count", COMM_NULL, || {
        let s = read(status, "status")?;
        let ty = super::types::type_obj(h(t))?;
        let b = s.bytes();
        let c = if ty.size == 0 {
            if b == 0 {
                0
            } else {
                UNDEFINED
            }
        } else if b % ty.size == 0 {
            fits(b / ty.size)
        } else {
            UNDEFINED
        };
        out(cnt, c, "count")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_elements(
    status: *const CStatus,
    t: *mut c_void,
    cnt: *mut c_int,
) -> c_int {
    guard("MPI_Get_elements", COMM_NULL, || {
        let s = read(status, "status")?;
        let ty = super::types::type_obj(h(t))?;
        let c = ty.elements_in(s.bytes()).map_or(UNDEFINED, fits);
        out(cnt, c, "count")
    })
}

// ---- large counts (the `_c` functions of MPI 4.1 §19.2) ---------------------------------

/// `MPI_Send_c` and the other blocking sends with an `MPI_Count` count.
macro_rules! send_c_fn {
    ($name:ident, $call:literal, $mode:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            buf: *const c_void,
            n: i64,
            t: *mut c_void,
            dest: c_int,
            tag: c_int,
            comm: *mut c_void,
        ) -> c_int {
            send_blocking($call, $mode, buf, n, t, dest, tag, comm)
        }
    };
}

send_c_fn!(MPI_Send_c, "MPI_Send_c", Mode::Send);
send_c_fn!(MPI_Ssend_c, "MPI_Ssend_c", Mode::Ssend);
send_c_fn!(MPI_Bsend_c, "MPI_Bsend_c", Mode::Bsend);
send_c_fn!(MPI_Rsend_c, "MPI_Rsend_c", Mode::Rsend);

/// `MPI_Isend_c` and the other nonblocking sends with an `MPI_Count`.
macro_rules! isend_c_fn {
    ($name:ident, $call:literal, $mode:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            buf: *const c_void,
            n: i64,
            t: *mut c_void,
            dest: c_int,
            tag: c_int,
            comm: *mut c_void,
            request: *mut *mut c_void,
        ) -> c_int {
            isend_general($call, $mode, buf, n, t, dest, tag, comm, request)
        }
    };
}

isend_c_fn!(MPI_Isend_c, "MPI_Isend_c", Mode::Send);
isend_c_fn!(MPI_Issend_c, "MPI_Issend_c", Mode::Ssend);
isend_c_fn!(MPI_Ibsend_c, "MPI_Ibsend_c", Mode::Bsend);
isend_c_fn!(MPI_Irsend_c, "MPI_Irsend_c", Mode::Rsend);

#[no_mangle]
pub unsafe extern "C" fn MPI_Recv_c(
    buf: *mut c_void,
    n: i64,
    t: *mut c_void,
    src: c_int,
    tag: c_int,
    comm: *mut c_void,
    status: *mut CStatus,
) -> c_int {
    recv_general("MPI_Recv_c", buf, n, t, src, tag, comm, status)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Irecv_c(
    buf: *mut c_void,
    n: i64,
    t: *mut c_void,
    src: c_int,
    tag: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    irecv_general("MPI_Irecv_c", buf, n, t, src, tag, comm, request)
}

/// `MPI_Get_count_c`: the count in `MPI_Count` (`MPI_UNDEFINED` for a
/// length that is no whole number of instances).
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_count_c(
    status: *const CStatus,
    t: *mut c_void,
    cnt: *mut i64,
) -> c_int {
    guard("MPI_Get_count_c", COMM_NULL, || {
        let s = read(status, "status")?;
        let ty = super::types::type_obj(h(t))?;
        let b = s.bytes();
        let undefined = i64::from(UNDEFINED);
        let c = match ty.size {
            0 if b == 0 => 0,
            0 => undefined,
            z if b % z == 0 => i64::try_from(b / z).unwrap_or(undefined),
            _ => undefined,
        };
        out(cnt, c, "count")
    })
}

/// `MPI_Get_elements_c`: as `MPI_Get_elements_x`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_elements_c(
    status: *const CStatus,
    t: *mut c_void,
    cnt: *mut i64,
) -> c_int {
    elements_x("MPI_Get_elements_c", status, t, cnt)
}

/// A count for an `int` argument: `MPI_UNDEFINED` when it does not fit
/// (MPI 4.1 §3.2.5 and §5.1.11: a message of more than `INT_MAX`
/// elements).
fn fits(n: usize) -> c_int {
    c_int::try_from(n).unwrap_or(UNDEFINED)
}

// ---- sendrecv ------------------------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv(
    sbuf: *const c_void,
    scount: c_int,
    stype: *mut c_void,
    dest: c_int,
    stag_: c_int,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: *mut c_void,
    src: c_int,
    rtag_: c_int,
    comm: *mut c_void,
    status: *mut CStatus,
) -> c_int {
    sendrecv(
        "MPI_Sendrecv",
        sbuf,
        scount.into(),
        stype,
        dest,
        stag_,
        rbuf,
        rcount.into(),
        rtype,
        src,
        rtag_,
        comm,
        status,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv_c(
    sbuf: *const c_void,
    scount: i64,
    stype: *mut c_void,
    dest: c_int,
    stag_: c_int,
    rbuf: *mut c_void,
    rcount: i64,
    rtype: *mut c_void,
    src: c_int,
    rtag_: c_int,
    comm: *mut c_void,
    status: *mut CStatus,
) -> c_int {
    sendrecv(
        "MPI_Sendrecv_c",
        sbuf,
        scount,
        stype,
        dest,
        stag_,
        rbuf,
        rcount,
        rtype,
        src,
        rtag_,
        comm,
        status,
    )
}

/// `MPI_Sendrecv(_c)` (`call`), the counts as `MPI_Count`.
#[allow(clippy::too_many_arguments)]
fn sendrecv(
    call: &str,
    sbuf: *const c_void,
    scount: i64,
    stype: *mut c_void,
    dest: c_int,
    stag_: c_int,
    rbuf: *mut c_void,
    rcount: i64,
    rtype: *mut c_void,
    src: c_int,
    rtag_: c_int,
    comm: *mut c_void,
    status: *mut CStatus,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        let sn = count_c(scount, "sendcount")?;
        let rn = count_c(rcount, "recvcount")?;
        let sty = committed(h(stype))?;
        let rty = committed(h(rtype))?;
        let stag_v = stag(stag_)?;
        let rtag_v = rtag(rtag_)?;
        let (direct, packed) = send_data(sbuf, sn, &sty)?;
        let data = direct.unwrap_or(&packed);
        let r = match rty.contiguous(rn) {
            Some(off) => {
                let b = bytes_mut(
                    (rbuf as *mut u8).wrapping_offset(off).cast(),
                    nbytes(rn, &rty)?,
                )?;
                obj.comm
                    .sendrecv(data, dest, stag_v, b, src, rtag_v)
                    .map(|s| CStatus::from_rust(&s))
            }
            None => {
                let mut staging = staging_buf(nbytes(rn, &rty)?)?;
                obj.comm
                    .sendrecv(data, dest, stag_v, &mut staging[..], src, rtag_v)
                    .and_then(|s| {
                        let got = s.bytes.min(staging.len());
                        rty.unpack(&staging[..got], rbuf, rn)?;
                        Ok(CStatus::from_rust(&s))
                    })
            }
        };
        status_out(status, r)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv_replace(
    buf: *mut c_void,
    n: c_int,
    t: *mut c_void,
    dest: c_int,
    stag_: c_int,
    src: c_int,
    rtag_: c_int,
    comm: *mut c_void,
    status: *mut CStatus,
) -> c_int {
    sendrecv_replace(
        "MPI_Sendrecv_replace",
        buf,
        n.into(),
        t,
        dest,
        stag_,
        src,
        rtag_,
        comm,
        status,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv_replace_c(
    buf: *mut c_void,
    n: i64,
    t: *mut c_void,
    dest: c_int,
    stag_: c_int,
    src: c_int,
    rtag_: c_int,
    comm: *mut c_void,
    status: *mut CStatus,
) -> c_int {
    sendrecv_replace(
        "MPI_Sendrecv_replace_c",
        buf,
        n,
        t,
        dest,
        stag_,
        src,
        rtag_,
        comm,
        status,
    )
}

/// `MPI_Sendrecv_replace(_c)` (`call`), the count as `MPI_Count`.
#[allow(clippy::too_many_arguments)]
fn sendrecv_replace(
    call: &str,
    buf: *mut c_void,
    n: i64,
    t: *mut c_void,
    dest: c_int,
    stag_: c_int,
    src: c_int,
    rtag_: c_int,
    comm: *mut c_void,
    status: *mut CStatus,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        let n = count_c(n, "count")?;
        let ty = committed(h(t))?;
        let out_data = ty.pack(buf, n)?;
        let mut staging = staging_buf(nbytes(n, &ty)?)?;
        let s = obj.comm.sendrecv(
            &out_data[..],
            dest,
            stag(stag_)?,
            &mut staging[..],
            src,
            rtag(rtag_)?,
        );
        let r = s.and_then(|s| {
            let got = s.bytes.min(staging.len());
            ty.unpack(&staging[..got], buf, n)?;
            Ok(CStatus::from_rust(&s))
        });
        status_out(status, r)
    })
}

/// Makes `*request` the pair of an `MPI_Isendrecv`: `recv` (posted
/// first, so that a send to this process itself finds it) and the send
/// `send` starts. The callers check the send's arguments before they post
/// the receive; a send that still fails to start (the job failing) lets
/// the receive go (cancelled, `Request`'s drop) and is the call's error.
fn give_pair(
    obj: &Arc<CommObj>,
    recv: Req,
    send: impl FnOnce() -> Result<Started>,
    request: *mut *mut c_void,
) -> Result<()> {
    let send = send()?.into_req(obj);
    give_request(
        Req {
            state: ReqState::Pair(Box::new([send, recv])),
            comm: CommRef::of(obj),
        },
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Isendrecv(
    sbuf: *const c_void,
    scount: c_int,
    stype: *mut c_void,
    dest: c_int,
    stag_: c_int,
    rbuf: *mut c_void,
    rcount: c_int,
    rtype: *mut c_void,
    src: c_int,
    rtag_: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    isendrecv(
        "MPI_Isendrecv",
        sbuf,
        scount.into(),
        stype,
        dest,
        stag_,
        rbuf,
        rcount.into(),
        rtype,
        src,
        rtag_,
        comm,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Isendrecv_c(
    sbuf: *const c_void,
    scount: i64,
    stype: *mut c_void,
    dest: c_int,
    stag_: c_int,
    rbuf: *mut c_void,
    rcount: i64,
    rtype: *mut c_void,
    src: c_int,
    rtag_: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    isendrecv(
        "MPI_Isendrecv_c",
        sbuf,
        scount,
        stype,
        dest,
        stag_,
        rbuf,
        rcount,
        rtype,
        src,
        rtag_,
        comm,
        request,
    )
}

/// `MPI_Isendrecv(_c)` (`call`), the counts as `MPI_Count`.
#[allow(clippy::too_many_arguments)]
fn isendrecv(
    call: &str,
    sbuf: *const c_void,
    scount: i64,
    stype: *mut c_void,
    dest: c_int,
    stag_: c_int,
    rbuf: *mut c_void,
    rcount: i64,
    rtype: *mut c_void,
    src: c_int,
    rtag_: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        let sn = count_c(scount, "sendcount")?;
        let rn = count_c(rcount, "recvcount")?;
        let sty = committed(h(stype))?;
        let rty = committed(h(rtype))?.arc();
        let tag = stag(stag_)?;
        if request.is_null() {
            return Err(super::arg("request"));
        }
        // The send's arguments are checked (and its data packed) before
        // the receive is posted, which a later failure would have to let
        // go, possibly matched already.
        obj.comm.check_send(dest, tag)?;
        let (direct, packed) = send_data(sbuf, sn, &sty)?;
        let recv = start_recv(&obj, rbuf, rn, &rty, src, rtag_)?;
        give_pair(
            &obj,
            recv,
            || {
                let data: &[u8] = match direct {
                    Some(d) => d,
                    // SAFETY: lifetime erasure of a borrow of `packed`'s
                    // heap buffer, which moves into the same `Req` as the
                    // request (`isend_req`'s keep) and is dropped after
                    // it, or (a send complete at once) is dropped unread.
                    None => unsafe { std::slice::from_raw_parts(packed.as_ptr(), packed.len()) },
                };
                isend_req(&obj, data, dest, tag, false, packed)
            },
            request,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Isendrecv_replace(
    buf: *mut c_void,
    n: c_int,
    t: *mut c_void,
    dest: c_int,
    stag_: c_int,
    src: c_int,
    rtag_: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    isendrecv_replace(
        "MPI_Isendrecv_replace",
        buf,
        n.into(),
        t,
        dest,
        stag_,
        src,
        rtag_,
        comm,
        request,
    )
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Isendrecv_replace_c(
    buf: *mut c_void,
    n: i64,
    t: *mut c_void,
    dest: c_int,
    stag_: c_int,
    src: c_int,
    rtag_: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    isendrecv_replace(
        "MPI_Isendrecv_replace_c",
        buf,
        n,
        t,
        dest,
        stag_,
        src,
        rtag_,
        comm,
        request,
    )
}

/// `MPI_Isendrecv_replace(_c)` (`call`), the count as `MPI_Count`.
#[allow(clippy::too_many_arguments)]
fn isendrecv_replace(
    call: &str,
    buf: *mut c_void,
    n: i64,
    t: *mut c_void,
    dest: c_int,
    stag_: c_int,
    src: c_int,
    rtag_: c_int,
    comm: *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard(call, h(comm), || {
        let obj = comm_obj(h(comm))?;
        let n = count_c(n, "count")?;
        let ty = committed(h(t))?.arc();
        let tag = stag(stag_)?;
        if request.is_null() {
            return Err(super::arg("request"));
        }
        obj.comm.check_send(dest, tag)?;
        // The message leaves from a copy, so the receive may land in the
        // buffer at once.
        let packed = ty.pack(buf, n)?;
        let recv = start_recv(&obj, buf, n, &ty, src, rtag_)?;
        give_pair(
            &obj,
            recv,
            || {
                // SAFETY: lifetime erasure of a borrow of `packed`'s heap
                // buffer, which moves into the same `Req` as the request
                // (`isend_req`'s keep) and is dropped after it, or (a send
                // complete at once) is dropped unread.
                let data = unsafe { std::slice::from_raw_parts(packed.as_ptr(), packed.len()) };
                isend_req(&obj, data, dest, tag, false, packed)
            },
            request,
        )
    })
}

// ---- probe and matched receives ------------------------------------------------------------

/// A matched message (`MPI_Message`), kept with its communicator.
#[derive(Debug)]
pub(crate) struct Msg {
    // Field order: `msg` borrows the process state `comm` keeps alive.
    msg: Message<'static>,
    comm: Arc<CommObj>,
}

// SAFETY: a matched message is a slot id in the engine (thread-safe) and a
// reference to the process state; MPI lets any thread receive it.
unsafe impl Send for Msg {}

#[no_mangle]
pub unsafe extern "C" fn MPI_Probe(
    src: c_int,
    tag: c_int,
    comm: *mut c_void,
    status: *mut CStatus,
) -> c_int {
    guard("MPI_Probe", h(comm), || {
        let obj = comm_obj(h(comm))?;
        let st = obj.comm.probe(src, rtag(tag)?)?;
        put_status(status, &CStatus::from_rust(&st));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iprobe(
    src: c_int,
    tag: c_int,
    comm: *mut c_void,
    flag: *mut c_int,
    status: *mut CStatus,
) -> c_int {
    guard("MPI_Iprobe", h(comm), || {
        let obj = comm_obj(h(comm))?;
        if flag.is_null() {
            return Err(super::arg("flag"));
        }
        match obj.comm.iprobe(src, rtag(tag)?)? {
            Some(st) => {
                put_status(status, &CStatus::from_rust(&st));
                out(flag, 1, "flag")
            }
            None => out(flag, 0, "flag"),
        }
    })
}

fn give_message(obj: &Arc<CommObj>, m: Message<'_>, p: *mut *mut c_void) -> Result<()> {
    // SAFETY: lifetime erasure; the message borrows the process state that
    // the `Arc<CommObj>` stored beside it keeps alive.
    let msg = unsafe { std::mem::transmute::<Message<'_>, Message<'static>>(m) };
    let handle = state().msgs.insert(Msg {
        msg,
        comm: obj.clone(),
    });
    out(p, to_handle(handle), "message")
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Mprobe(
    src: c_int,
    tag: c_int,
    comm: *mut c_void,
    message: *mut *mut c_void,
    status: *mut CStatus,
) -> c_int {
    guard("MPI_Mprobe", h(comm), || {
        let obj = comm_obj(h(comm))?;
        if message.is_null() {
            return Err(super::arg("message"));
        }
        let tag = rtag(tag)?;
        if src == PROC_NULL {
            put_status(status, &CStatus::proc_null());
            return out(message, to_handle(MESSAGE_NO_PROC), "message");
        }
        let (m, st) = obj.comm.mprobe(src, tag)?;
        put_status(status, &CStatus::from_rust(&st));
        give_message(&obj, m, message)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Improbe(
    src: c_int,
    tag: c_int,
    comm: *mut c_void,
    flag: *mut c_int,
    message: *mut *mut c_void,
    status: *mut CStatus,
) -> c_int {
    guard("MPI_Improbe", h(comm), || {
        let obj = comm_obj(h(comm))?;
        if message.is_null() || flag.is_null() {
            return Err(super::arg("message or flag"));
        }
        let tag = rtag(tag)?;
        if src == PROC_NULL {
            put_status(status, &CStatus::proc_null());
            out(message, to_handle(MESSAGE_NO_PROC), "message")?;
            return out(flag, 1, "flag");
        }
        let found = obj.comm.improbe(src, tag)?;
        match found {
            Some((m, st)) => {
                put_status(status, &CStatus::from_rust(&st));
                give_message(&obj, m, message)?;
                out(flag, 1, "flag")
            }
            None => out(flag, 0, "flag"),
        }
    })
}

/// Receives matched message `*message` into `n` instances at `buf`.
/// What went wrong in `mrecv`: the communicator to raise it on, and the
/// status to report.
type MrecvErr = (Option<Arc<CommObj>>, Error, Option<CStatus>);

/// Receives matched message `*message` into `n` instances at `buf`.
fn mrecv(
    buf: *mut c_void,
    n: i64,
    t: *mut c_void,
    message: *mut *mut c_void,
) -> std::result::Result<(Arc<CommObj>, CStatus), MrecvErr> {
    let mh = h(read(message, "message").map_err(|e| (None, e, None))?);
    if mh == MESSAGE_NO_PROC {
        out(message, to_handle(MESSAGE_NULL), "message").map_err(|e| (None, e, None))?;
        let w = super::WORLD
            .get()
            .cloned()
            .ok_or_else(|| (None, super::arg("MPI"), None))?;
        return Ok((w, CStatus::proc_null()));
    }
    let comm = state()
        .msgs
        .get(mh)
        .map(|m| m.comm.clone())
        .ok_or_else(|| {
            let e = Error::new(
                ErrorClass::Request,
                format!("{mh:#x} is not a matched message (MPI_Mprobe gives one)"),
            );
            (None, e, None)
        })?;
    let fail = |e: Error| (Some(comm.clone()), e, None);
    let n = count_c(n, "count").map_err(fail)?;
    let ty = committed(h(t)).map_err(fail)?;
    let len = nbytes(n, &ty).map_err(fail)?;
    let Some(Msg { msg, comm }) = state().msgs.release(mh) else {
        return Err(fail(Error::new(
            ErrorClass::Request,
            "the message was taken",
        )));
    };
    out(message, to_handle(MESSAGE_NULL), "message").map_err(|e| (Some(comm.clone()), e, None))?;
    let st = match ty.contiguous(n) {
        Some(off) => {
            bytes_mut((buf as *mut u8).wrapping_offset(off).cast(), len).and_then(|b| msg.recv(b))
        }
        None => staging_buf(len).and_then(|mut staging| {
            msg.recv(&mut staging[..]).and_then(|s| {
                let got = s.bytes.min(staging.len());
                ty.unpack(&staging[..got], buf, n)?;
                Ok(s)
            })
        }),
    };
    match st {
        Ok(s) => Ok((comm, CStatus::from_rust(&s))),
        Err(e) => {
            let es = err_status(&e);
            Err((Some(comm), e, Some(es)))
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Mrecv(
    buf: *mut c_void,
    n: c_int,
    t: *mut c_void,
    message: *mut *mut c_void,
    status: *mut CStatus,
) -> c_int {
    mrecv_call("MPI_Mrecv", buf, n.into(), t, message, status)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Mrecv_c(
    buf: *mut c_void,
    n: i64,
    t: *mut c_void,
    message: *mut *mut c_void,
    status: *mut CStatus,
) -> c_int {
    mrecv_call("MPI_Mrecv_c", buf, n, t, message, status)
}

/// `MPI_Mrecv(_c)` (`call`), the count as `MPI_Count`.
fn mrecv_call(
    call: &str,
    buf: *mut c_void,
    n: i64,
    t: *mut c_void,
    message: *mut *mut c_void,
    status: *mut CStatus,
) -> c_int {
    guard_on(call, || match mrecv(buf, n, t, message) {
        Ok((_, st)) => {
            put_status(status, &st);
            Ok(())
        }
        Err((c, e, st)) => {
            if let Some(st) = st {
                put_status(status, &st);
            }
            Err((c, e))
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Imrecv(
    buf: *mut c_void,
    n: c_int,
    t: *mut c_void,
    message: *mut *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    imrecv("MPI_Imrecv", buf, n.into(), t, message, request)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Imrecv_c(
    buf: *mut c_void,
    n: i64,
    t: *mut c_void,
    message: *mut *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    imrecv("MPI_Imrecv_c", buf, n, t, message, request)
}

/// `MPI_Imrecv(_c)` (`call`), the count as `MPI_Count`.
fn imrecv(
    call: &str,
    buf: *mut c_void,
    n: i64,
    t: *mut c_void,
    message: *mut *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard_on(call, || {
        if request.is_null() {
            return Err((None, super::arg("request")));
        }
        // The message is matched and on its way: receiving it now only
        // waits for its own bytes, which the sender is already pushing. An
        // error (truncation) completes the request with that error.
        match mrecv(buf, n, t, message) {
            Ok((comm, st)) => give_request(Req::done(&comm, st), request).map_err(|e| (None, e)),
            Err((Some(comm), e, Some(_))) => give_request(
                Req {
                    state: ReqState::Done(Err(e)),
                    comm: comm.into(),
                },
                request,
            )
            .map_err(|e| (None, e)),
            Err((c, e, _)) => Err((c, e)),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_past_int_max_are_mpi_undefined() {
        let int = to_handle(0x209);
        let mut st = CStatus::empty();
        let mut c: c_int = 0;
        for (bytes, want) in [
            (4 * (c_int::MAX as usize), c_int::MAX),
            (4 * (c_int::MAX as usize + 1), UNDEFINED),
            (1 << 40, UNDEFINED),
            (6, UNDEFINED),
        ] {
            st.set_bytes(bytes);
            // SAFETY: the status, count and type are valid for the call.
            assert_eq!(unsafe { MPI_Get_count(&st, int, &mut c) }, SUCCESS);
            assert_eq!(c, want, "MPI_Get_count of {bytes} bytes");
            // SAFETY: as above.
            assert_eq!(unsafe { MPI_Get_elements(&st, int, &mut c) }, SUCCESS);
            let elements = if bytes % 4 == 0 { want } else { UNDEFINED };
            assert_eq!(c, elements, "MPI_Get_elements of {bytes} bytes");
        }
    }
}
