//! Communicators: the user-facing handle for point-to-point and
//! collective calls, and their construction.
//!
//! Layer L5 (imports L0–L4). A [`Communicator`] is a context (id, members,
//! own rank) plus shared state: its group, for an intercommunicator the
//! remote group and a hidden local context, its name, cached attributes
//! and error handler, and the lease on its context index, given back when
//! the last handle is dropped (`context`). Constructors are in `create`
//! and `inter`; MPI 4.1 §7 decides their semantics.
#![forbid(unsafe_code)]

pub mod attr;
mod collective;
mod connect;
pub mod context;
mod create;
pub mod errhandler;
mod inter;
mod request;
mod scope;
mod spawn;
pub mod topo;
pub mod win;

pub use attr::Keyval;
pub(crate) use collective::nbc_second_tag;
pub use collective::ROOT;
pub(crate) use connect::meet_connected;
pub use create::SplitType;
pub use errhandler::ErrHandler;
pub(crate) use request::wait_all_with;
pub use request::{test_all, wait_all, wait_all_each, wait_any, wait_some, Message, Request};
pub use scope::{scope, Scope};
pub(crate) use spawn::{connect_parent, count_of as started_count};
pub use spawn::{SpawnCommand, SpawnOptions};
pub use topo::{dims_create, Topology};
pub use win::{Flavor, LockType, WinOptions, Window};

pub use crate::group::{Comparison, Group, UNDEFINED};

use crate::coll::Coll;
use crate::datatype::Scalar;
use crate::error::{Error, ErrorClass, Result};
use crate::p2p::{self, Context, Hold, SendStart, Shared, Status, ANY_TAG, PROC_NULL};
use crate::shm::Segment;
use crate::sync::{AtomicU32, Ordering};
use crate::transport::bytes::{as_bytes, as_bytes_mut};
use crate::transport::shmcoll::Region;
use std::sync::{Arc, Mutex, MutexGuard};

/// State shared by every handle of one initialised process.
#[derive(Debug)]
pub(crate) struct Process {
    pub(crate) p2p: Shared,
    /// 0 running, 1 finalized.
    pub(crate) finalized: AtomicU32,
    /// Bridges to other jobs and what holds them (`connect.rs`).
    pub(crate) links: Mutex<connect::Links>,
}

/// Where a nonblocking send's buffer is lent from, for the rest that
/// progress pushes later (see `transport::lend`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Lending<'a, 'env> {
    /// A lending scope (`comm::scope`).
    Scope(&'a crate::transport::Lender<'env>),
    /// A buffer lent under the caller's promise to keep it until the
    /// request completes (the C API's requests, as MPI requires of them).
    Raw(&'a crate::transport::RawLend),
}

/// The error of a call after finalize, out of line.
#[cold]
#[inline(never)]
fn finalized() -> Error {
    Error::new(
        ErrorClass::Other,
        "shmpi is finalized: no communication is allowed after finalize",
    )
}

impl Process {
    pub(crate) fn new(p2p: Shared) -> Process {
        Process {
            p2p,
            finalized: AtomicU32::new(0),
            links: Mutex::new(connect::Links::default()),
        }
    }

    #[inline]
    pub(crate) fn check(&self) -> Result<()> {
        // Relaxed: a flag set by this process's own finalize; calls that
        // race with finalize from another thread are erroneous in MPI.
        if self.finalized.load(Ordering::Relaxed) != 0 {
            return Err(finalized());
        }
        Ok(())
    }

    fn segment(&self) -> &Arc<Segment> {
        self.p2p.segment()
    }

    /// Ends the job because `call` failed under a fatal error handler.
    fn fatal(&self, call: &str, comm: &str, e: &Error) -> ! {
        let rank = self.p2p.world_rank();
        crate::error::say(format_args!(
            "shmpi: rank {rank}: {call} on {comm} failed with {} ({}): {};              the error handler is ERRORS_ARE_FATAL, so the job is aborted",
            e.class().name(),
            e.class().code(),
            e.detail()
        ));
        crate::job::bootstrap::abort_mark(self.segment(), rank, e.class().code().max(1));
        std::process::exit(e.class().code().clamp(1, 255));
    }
}

/// What kind of communicator, and what an intercommunicator adds.
#[derive(Debug)]
enum Kind {
    Intra,
    Inter {
        /// The remote group (the context's ranks name its members).
        remote: Group,
        /// The hidden intracommunicator of the local group.
        local: Context,
    },
}

/// State shared by the clones of one communicator.
#[derive(Debug)]
struct Inner {
    proc_: Arc<Process>,
    group: Group,
    kind: Kind,
    /// The context index this communicator holds (`None` for `WORLD` and
    /// `SELF`, which hold theirs for the life of the process).
    index: Option<u32>,
    name: Mutex<String>,
    attrs: Mutex<attr::Cache>,
    errh: Mutex<ErrHandler>,
    /// Nonblocking collectives started on this communicator (their tags).
    nbc_seq: AtomicU32,
    /// The collective region, if the communicator got one (dropped, and so
    /// given back, with the last handle).
    region: Option<Region>,
    /// The two-level layout for hierarchical collectives, decided at the
    /// first collective that could use it (`collective.rs`).
    hier: std::sync::OnceLock<Option<Hier>>,
    /// A level of a hierarchy itself: never hierarchical again.
    no_hier: AtomicU32,
    /// The links to other jobs this communicator holds (`connect.rs`).
    links: Vec<usize>,
    /// Set by `disconnect`: letting go of `links` does not keep the jobs
    /// connected.
    disconnected: AtomicU32,
    /// The virtual topology (`topo.rs`), set once, right after creation.
    topo: std::sync::OnceLock<Topology>,
}

/// A communicator's NUMA levels: this rank's node, and (at node leaders)
/// the leaders of every node.
#[derive(Debug)]
struct Hier {
    local: Communicator,
    leaders: Option<Communicator>,
}

impl Communicator {
    /// The cross-job name of peer `p` (a world rank, or a member of
    /// another job reached through a bridge): what members compare and
    /// exchange where their peer numbers could differ.
    pub(crate) fn gpid(&self, p: usize) -> crate::transport::bridge::Gpid {
        self.proc_.p2p.lock().transport().gpid(p)
    }

    /// `peers` as bytes of their [`gpid`](Self::gpid)s (16 each).
    pub(crate) fn encode_peers(&self, peers: &[usize]) -> Vec<u8> {
        let e = self.proc_.p2p.lock();
        peers
            .iter()
            .flat_map(|&p| e.transport().gpid(p).to_le_bytes())
            .collect()
    }

    /// The peers named by bytes of [`encode_peers`](Self::encode_peers).
    ///
    /// # Errors
    /// `Intern` for a process this one cannot reach.
    pub(crate) fn decode_peers(&self, b: &[u8]) -> Result<Vec<usize>> {
        let e = self.proc_.p2p.lock();
        b.chunks_exact(16)
            .map(|c| {
                let g = u128::from_le_bytes(c.try_into().expect("16 bytes"));
                e.transport().peer_of(g).ok_or_else(|| {
                    Error::new(
                        ErrorClass::Intern,
                        format!("process {g:#x} is not connected to this one"),
                    )
                })
            })
            .collect()
    }

    /// A digest of `g` that every member computes alike (over the members'
    /// cross-job names, in group order).
    pub(crate) fn digest_of(&self, g: &Group) -> u64 {
        let e = self.proc_.p2p.lock();
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let words = std::iter::once(g.size() as u128)
            .chain(g.world_ranks().iter().map(|&p| e.transport().gpid(p)));
        for v in words {
            for b in v.to_le_bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        h
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        lock(&self.attrs).clear();
        if let Some(i) = self.index {
            context::release(&self.proc_.p2p, i);
        }
        connect::release_links(self);
    }
}

/// Locks a mutex whose data stays consistent even if a holder panicked.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A communicator (`MPI_Comm`): a context and its members. Cheap to clone
/// (clones are the same communicator: `compare` says `Ident`); usable from
/// any thread. Dropping the last clone frees it (`MPI_Comm_free`).
#[derive(Clone, Debug)]
pub struct Communicator {
    proc_: Arc<Process>,
    ctx: Context,
    inner: Arc<Inner>,
}

impl Communicator {
    /// `WORLD` (which uses collective region 0) or `SELF`.
    pub(crate) fn new(proc_: Arc<Process>, ctx: Context, name: &str) -> Communicator {
        let me = proc_.p2p.world_rank();
        let group = Group::from_world_ranks(ctx.ranks.to_vec(), Some(me))
            .expect("a context's members are distinct");
        let region = (ctx.id == context::WORLD_INDEX && ctx.size() > 1)
            .then(|| Region::attach(proc_.segment().clone(), 0, ctx.ranks.clone(), ctx.rank));
        Communicator::build_with(
            region,
            proc_,
            ctx,
            group,
            Kind::Intra,
            None,
            name,
            Default::default(),
            ErrHandler::default(),
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn build_with(
        region: Option<Region>,
        proc_: Arc<Process>,
        ctx: Context,
        group: Group,
        kind: Kind,
        index: Option<u32>,
        name: &str,
        attrs: attr::Cache,
        errh: ErrHandler,
    ) -> Communicator {
        let links = connect::hold_links(&proc_, &group, &kind);
        if !links.is_empty() {
            connect::note_far_contexts(&proc_, &ctx, &kind);
        }
        Communicator {
            inner: Arc::new(Inner {
                proc_: proc_.clone(),
                links,
                disconnected: AtomicU32::new(0),
                group,
                kind,
                index,
                name: Mutex::new(name.to_string()),
                attrs: Mutex::new(attrs),
                errh: Mutex::new(errh),
                nbc_seq: AtomicU32::new(0),
                region,
                hier: std::sync::OnceLock::new(),
                no_hier: AtomicU32::new(0),
                topo: std::sync::OnceLock::new(),
            }),
            proc_,
            ctx,
        }
    }

    /// This process's rank (`MPI_Comm_rank`; in an intercommunicator, its
    /// rank in the local group).
    pub fn rank(&self) -> i32 {
        self.ctx.rank as i32
    }

    /// Number of members (`MPI_Comm_size`; in an intercommunicator, of the
    /// local group). For `WORLD`, the number of processes of the job.
    pub fn size(&self) -> i32 {
        self.inner.group.size() as i32
    }

    /// The (local) group (`MPI_Comm_group`).
    pub fn group(&self) -> Group {
        self.inner.group.clone()
    }

    /// Whether this is an intercommunicator (`MPI_Comm_test_inter`).
    pub fn is_inter(&self) -> bool {
        matches!(self.inner.kind, Kind::Inter { .. })
    }

    /// The remote group's size (`MPI_Comm_remote_size`).
    ///
    /// # Errors
    /// `Comm` on an intracommunicator.
    pub fn remote_size(&self) -> Result<i32> {
        self.remote_group().map(|g| g.size() as i32)
    }

    /// The remote group (`MPI_Comm_remote_group`).
    ///
    /// # Errors
    /// `Comm` on an intracommunicator.
    pub fn remote_group(&self) -> Result<Group> {
        match &self.inner.kind {
            Kind::Inter { remote, .. } => Ok(remote.clone()),
            Kind::Intra => self.ret(
                "MPI_Comm_remote_group",
                Err(Error::new(
                    ErrorClass::Comm,
                    "remote_group/remote_size need an intercommunicator",
                )),
            ),
        }
    }

    /// `MPI_Comm_compare`: `Ident` for the same communicator (a clone),
    /// `Congruent` for the same group in the same order with another
    /// context, `Similar` for the same members in another order, else
    /// `Unequal`. Intercommunicators compare both groups.
    pub fn compare(&self, other: &Communicator) -> Comparison {
        if Arc::ptr_eq(&self.inner, &other.inner) {
            return Comparison::Ident;
        }
        let local = self.inner.group.compare(&other.inner.group);
        let remote = match (&self.inner.kind, &other.inner.kind) {
            (Kind::Intra, Kind::Intra) => Comparison::Ident,
            (Kind::Inter { remote: a, .. }, Kind::Inter { remote: b, .. }) => a.compare(b),
            _ => return Comparison::Unequal,
        };
        match (local, remote) {
            (Comparison::Ident, Comparison::Ident) => Comparison::Congruent,
            (Comparison::Unequal, _) | (_, Comparison::Unequal) => Comparison::Unequal,
            _ => Comparison::Similar,
        }
    }

    /// The communicator's name (`MPI_Comm_get_name`): `MPI_COMM_WORLD`,
    /// `MPI_COMM_SELF`, or what `set_name` gave (empty by default).
    pub fn name(&self) -> String {
        lock(&self.inner.name).clone()
    }

    /// Names the communicator (`MPI_Comm_set_name`; local).
    pub fn set_name(&self, name: &str) {
        *lock(&self.inner.name) = name.to_string();
    }

    /// The members grouped by the NUMA node they are bound on (see
    /// `coll::Coll::numa_groups`); `None` when a member is unbound.
    pub fn numa_groups(&self) -> Option<Vec<Vec<usize>>> {
        self.coll().numa_groups()
    }

    /// The context id for point-to-point traffic (diagnostics).
    pub fn context_id(&self) -> u32 {
        self.ctx.id
    }

    /// Sets the error handler (`MPI_Comm_set_errhandler`).
    pub fn set_errhandler(&self, h: ErrHandler) {
        *lock(&self.inner.errh) = h;
    }

    /// The error handler (`MPI_Comm_get_errhandler`).
    pub fn errhandler(&self) -> ErrHandler {
        lock(&self.inner.errh).clone()
    }

    /// Caches `value` under `key` (`MPI_Comm_set_attr`); a value already
    /// there goes through the key's delete callback.
    pub fn set_attr(&self, key: &Keyval, value: usize) {
        lock(&self.inner.attrs).set(key, value);
    }

    /// The value cached under `key` (`MPI_Comm_get_attr`).
    pub fn attr(&self, key: &Keyval) -> Option<usize> {
        lock(&self.inner.attrs).get(key)
    }

    /// Deletes the value cached under `key` through its delete callback
    /// (`MPI_Comm_delete_attr`).
    ///
    /// # Errors
    /// `Arg` when nothing is cached under `key`.
    pub fn delete_attr(&self, key: &Keyval) -> Result<()> {
        let r = lock(&self.inner.attrs).delete(key);
        self.ret("MPI_Comm_delete_attr", r)
    }

    /// `MPI_Comm_free`: drops this handle; the communicator is freed with
    /// its last clone (attributes deleted, context index given back).
    /// Pending operations hold a borrow of the handle, so they are complete
    /// (or withdrawn) by then.
    pub fn free(self) {}

    /// Passes `r` through the error handler: a fatal handler ends the job
    /// when `r` is an error, a user handler is called with it.
    #[inline]
    pub(crate) fn ret<T>(&self, call: &str, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            self.on_error(call, e);
        }
        r
    }

    /// The error handler's part of [`ret`](Self::ret), out of line.
    #[cold]
    fn on_error(&self, call: &str, e: &Error) {
        let h = lock(&self.inner.errh).clone();
        match h {
            ErrHandler::Return => {}
            ErrHandler::User(f) => f(call, e),
            ErrHandler::Fatal | ErrHandler::Abort => {
                let name = self.name();
                let name = if name.is_empty() {
                    format!("communicator {:#x}", self.ctx.id)
                } else {
                    name
                };
                self.proc_.fatal(call, &name, e)
            }
        }
    }

    fn coll(&self) -> Coll<'_> {
        Coll {
            sh: &self.proc_.p2p,
            ctx: &self.ctx,
            region: self.inner.region.as_ref(),
        }
    }

    /// The intracommunicator context collectives of this communicator's
    /// local group use (for an intercommunicator, the hidden local one).
    fn local_ctx(&self) -> &Context {
        match &self.inner.kind {
            Kind::Intra => &self.ctx,
            Kind::Inter { local, .. } => local,
        }
    }

    fn shared(&self) -> &Shared {
        &self.proc_.p2p
    }

    fn context_for(&self, coll: bool) -> u32 {
        if coll {
            self.ctx.coll_id()
        } else {
            self.ctx.id
        }
    }

    /// Checks a send's arguments: `None` for `PROC_NULL`, else the
    /// destination's world rank and the context id to use.
    #[inline]
    fn send_route(&self, dest: i32, tag: i32, coll: bool) -> Result<Option<(usize, u32)>> {
        self.proc_.check()?;
        // Tags on the collective context are the library's own (negative
        // for nonblocking schedules, see `next_nbc_tag`).
        if !coll {
            p2p::check_send_tag(tag)?;
        }
        Ok(self.ctx.dest(dest)?.map(|w| (w, self.context_for(coll))))
    }

    /// Checks a send's destination and tag as a send would, sending
    /// nothing (the C layer's `MPI_Isendrecv` checks its send before it
    /// posts its receive).
    ///
    /// # Errors
    /// `Rank`, `Tag`, or the job's failure.
    pub(crate) fn check_send(&self, dest: i32, tag: i32) -> Result<()> {
        let r = self.send_route(dest, tag, false).map(|_| ());
        self.ret("MPI_Isendrecv", r)
    }

    /// Checks a receive's (or probe's) arguments: `None` for `PROC_NULL`,
    /// else the context id to match on.
    #[inline]
    fn recv_route(&self, src: i32, tag: i32, coll: bool) -> Result<Option<u32>> {
        self.proc_.check()?;
        if !coll {
            p2p::check_recv_tag(tag)?;
        }
        Ok(self.ctx.source(src)?.then(|| self.context_for(coll)))
    }

    /// [`recv_route`](Self::recv_route) for a receive: the context id and,
    /// when `src` names a rank, its world rank (which the direct receive
    /// and the window posts need). Always inlined: as a call, its tuple
    /// came back through memory, 13 more instructions per blocking
    /// receive (`tools/icount.sh`).
    #[inline(always)]
    fn recv_target(&self, src: i32, tag: i32, coll: bool) -> Result<Option<(u32, Option<usize>)>> {
        let Some(cid) = self.recv_route(src, tag, coll)? else {
            return Ok(None);
        };
        Ok(Some((
            cid,
            (src >= 0).then(|| self.ctx.ranks[src as usize]),
        )))
    }

    /// Always inlined: `send_std_bytes` is the blocking send's one
    /// function from the call to the header store (as a call of its own,
    /// LLVM left it out of line: a call, a return and a prologue more on
    /// the way to every eager frame).
    #[inline(always)]
    fn send_bytes(&self, data: &[u8], dest: i32, tag: i32, sync: bool, coll: bool) -> Result<()> {
        let Some((world, cid)) = self.send_route(dest, tag, coll)? else {
            return Ok(());
        };
        let src = self.ctx.rank as u32;
        if sync {
            return self.shared().send_bytes(cid, src, world, tag, data, true);
        }
        self.shared()
            .send_std(p2p::Origin { cid, src }, world, tag, data)
    }

    #[inline]
    fn recv_bytes(&self, buf: &mut [u8], src: i32, tag: i32, coll: bool) -> Result<Status> {
        let Some((cid, peer)) = self.recv_target(src, tag, coll)? else {
            return Ok(Status::null());
        };
        self.shared().recv_bytes(cid, src, peer, tag, buf)
    }

    /// Sends `buf` to `dest` with `tag` (`MPI_Send`, standard mode: returns
    /// once the buffer may be reused).
    ///
    /// # Errors
    /// `Rank` for a destination out of range, `Tag` for a negative tag,
    /// `Other` after finalize.
    ///
    /// # MPI
    /// MPI 4.1 §3.2.1.
    #[inline]
    pub fn send<T: Scalar>(&self, buf: &[T], dest: i32, tag: i32) -> Result<()> {
        self.send_std_bytes(as_bytes(buf), dest, tag)
    }

    /// [`send`](Self::send) of bytes: one function from the call to the
    /// header store of an eager message (`Shared::send_std` inlined), as
    /// every instruction between a received frame and the reply's header
    /// store lengthens a ping-pong (`docs/benchmarks.md`, "Issue 6,
    /// eleventh pass").
    #[inline(never)]
    fn send_std_bytes(&self, data: &[u8], dest: i32, tag: i32) -> Result<()> {
        let r = self.send_bytes(data, dest, tag, false, false);
        self.ret("MPI_Send", r)
    }

    /// The first try of a standard-mode nonblocking send of bytes (the C
    /// layer's `MPI_Isend` fast path): the message goes whole into the
    /// ring now, as [`send`](Self::send)'s eager path puts it, when
    /// nothing stands before it there; `Ok(true)`: the send is complete
    /// (also to `PROC_NULL`), no request needed; `Ok(false)`: nothing
    /// done, the caller starts an ordinary nonblocking send. Either way
    /// messages to one peer keep their order, as between `send` and
    /// `isend`.
    ///
    /// # Errors
    /// As [`send`](Self::send) (the communicator's handler called).
    #[inline(never)]
    pub(crate) fn try_isend_now(&self, data: &[u8], dest: i32, tag: i32) -> Result<bool> {
        let r = self.send_route(dest, tag, false).map(|route| match route {
            Some((world, cid)) => self.send_eager_now(world, cid, tag, data),
            None => true,
        });
        self.ret("MPI_Isend", r)
    }

    /// The eager fast path of a standard-mode send to world rank `world`
    /// on context `cid`, the arguments checked: true if the ring took the
    /// message whole (`Engine::try_send_eager`), false with nothing done.
    #[inline(always)]
    fn send_eager_now(&self, world: usize, cid: u32, tag: i32, data: &[u8]) -> bool {
        let src = self.ctx.rank as u32;
        self.shared()
            .lock()
            .try_send_eager(cid, src, world, tag, data)
    }

    /// Synchronous send (`MPI_Ssend`): returns once the receiver has
    /// matched the message.
    ///
    /// # Errors
    /// As [`send`](Self::send).
    ///
    /// # MPI
    /// MPI 4.1 §3.4.
    pub fn ssend<T: Scalar>(&self, buf: &[T], dest: i32, tag: i32) -> Result<()> {
        let r = self.send_bytes(as_bytes(buf), dest, tag, true, false);
        self.ret("MPI_Ssend", r)
    }

    /// Receives into `buf` from `src` (or `ANY_SOURCE`) with `tag` (or
    /// `ANY_TAG`) (`MPI_Recv`).
    ///
    /// # Errors
    /// `Rank`, `Tag`; `Truncate` when the message is longer than `buf`
    /// (the message is consumed; [`Error::status`] tells its source, tag
    /// and length).
    ///
    /// # MPI
    /// MPI 4.1 §3.2.4.
    #[inline]
    pub fn recv<T: Scalar>(&self, buf: &mut [T], src: i32, tag: i32) -> Result<Status> {
        self.recv_std_bytes(as_bytes_mut(buf), src, tag)
    }

    /// [`recv`](Self::recv) into bytes: one function from the frame's
    /// arrival to the return (`Shared::recv_named` inlined), as
    /// [`send_std_bytes`](Self::send_std_bytes).
    #[inline(never)]
    fn recv_std_bytes(&self, buf: &mut [u8], src: i32, tag: i32) -> Result<Status> {
        let r = match self.recv_named(buf, src, tag) {
            // The status is made here, in the return slot: made further
            // down and copied up, its halves cost two store-forwarding
            // stalls on the way to the caller's next send
            // (`docs/benchmarks.md`, "Issue 6, tenth pass").
            Named::Taken(bytes) => {
                return Ok(Status {
                    source: src,
                    tag,
                    bytes,
                })
            }
            Named::Post(cid, peer) => self.shared().recv_posted(cid, src, Some(peer), tag, buf),
            Named::Truncated(bytes) => {
                let st = Status {
                    source: src,
                    tag,
                    bytes,
                };
                p2p::received(st, buf.len())
            }
            Named::Other => self.recv_bytes(buf, src, tag, false),
        };
        self.ret("MPI_Recv", r)
    }

    /// The fast path of [`recv`](Self::recv) from a named rank with a
    /// named tag (`Shared::recv_named`). Anything else, including every
    /// error of the arguments, is left to the general path
    /// ([`Named::Other`]), which finds it again.
    #[inline]
    fn recv_named(&self, buf: &mut [u8], src: i32, tag: i32) -> Named {
        if src < 0 || tag == ANY_TAG {
            return Named::Other;
        }
        let Ok(Some((cid, Some(peer)))) = self.recv_target(src, tag, false) else {
            return Named::Other;
        };
        match self.shared().recv_named(cid, src, peer, tag, buf) {
            Some(bytes) if bytes <= buf.len() => Named::Taken(bytes),
            Some(bytes) => Named::Truncated(bytes),
            None => Named::Post(cid, peer),
        }
    }

    /// Starts a standard-mode send (`MPI_Isend`).
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub fn isend<'a, T: Scalar>(
        &'a self,
        buf: &'a [T],
        dest: i32,
        tag: i32,
    ) -> Result<Request<'a>> {
        let r = self.isend_bytes(as_bytes(buf), dest, tag, false, false, None);
        self.ret("MPI_Isend", r)
    }

    /// Starts a synchronous send (`MPI_Issend`).
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub fn issend<'a, T: Scalar>(
        &'a self,
        buf: &'a [T],
        dest: i32,
        tag: i32,
    ) -> Result<Request<'a>> {
        let r = self.isend_bytes(as_bytes(buf), dest, tag, true, false, None);
        self.ret("MPI_Issend", r)
    }

    /// Starts a send of `data`; with a `lender` (a [`scope`]), what does
    /// not fit the ring now is pushed later straight from `data`, else it
    /// goes by rendezvous or is copied. A standard-mode message the ring
    /// takes whole goes in here, as a blocking send's eager path puts it,
    /// and its request is done from the start; the rest out of line
    /// ([`isend_general`](Self::isend_general)). (A window of 64 8-byte
    /// sends: `docs/benchmarks.md`, "Issue 6, sixteenth pass".)
    #[inline]
    pub(crate) fn isend_bytes<'a, 'env>(
        &'a self,
        data: &'env [u8],
        dest: i32,
        tag: i32,
        sync: bool,
        coll: bool,
        lender: Option<Lending<'_, 'env>>,
    ) -> Result<Request<'a>> {
        let Some((world, cid)) = self.send_route(dest, tag, coll)? else {
            return Ok(Request::done(&self.proc_, Status::null()));
        };
        if !sync && self.send_eager_now(world, cid, tag, data) {
            return Ok(Request::done(&self.proc_, Status::null()));
        }
        self.isend_general(data, world, cid, tag, sync, lender)
    }

    /// A nonblocking send of `data` to member `dest` of this
    /// communicator's local group, on the collective context its local
    /// collectives use (for an intercommunicator, the hidden local
    /// context): the C layer's schedules that reach both groups
    /// (`MPI_Comm_idup` of an intercommunicator).
    ///
    /// # Errors
    /// `Rank` for a member out of range; an error of the process state.
    pub(crate) fn isend_local_bytes<'a>(
        &'a self,
        data: &'a [u8],
        dest: usize,
        tag: i32,
    ) -> Result<Request<'a>> {
        self.proc_.check()?;
        let local = self.local_ctx();
        let world = *local.ranks.get(dest).ok_or_else(|| {
            Error::new(
                ErrorClass::Rank,
                format!("{dest} is not a rank of the local group"),
            )
        })?;
        // The origin this sends as is `self.ctx.rank`: the rank in the
        // local group on an intercommunicator too.
        debug_assert_eq!(local.rank, self.ctx.rank);
        self.isend_general(data, world, local.coll_id(), tag, false, None)
    }

    /// The receive of [`isend_local_bytes`](Self::isend_local_bytes): from
    /// member `src` of the local group, on its collective context.
    ///
    /// # Errors
    /// `Rank` for a member out of range; an error of the process state.
    pub(crate) fn irecv_local_bytes<'a>(
        &'a self,
        buf: &'a mut [u8],
        src: usize,
        tag: i32,
    ) -> Result<Request<'a>> {
        self.proc_.check()?;
        let local = self.local_ctx();
        let world = *local.ranks.get(src).ok_or_else(|| {
            Error::new(
                ErrorClass::Rank,
                format!("{src} is not a rank of the local group"),
            )
        })?;
        let id = self.shared().lock().post_recv_from(
            local.coll_id(),
            src as i32,
            Some(world),
            tag,
            buf.len(),
        );
        Ok(Request::recv(&self.proc_, id, buf))
    }

    /// [`isend_bytes`](Self::isend_bytes) past the eager fast path, to
    /// world rank `world` on context `cid` (the arguments checked).
    #[inline(never)]
    fn isend_general<'a, 'env>(
        &'a self,
        data: &'env [u8],
        world: usize,
        cid: u32,
        tag: i32,
        sync: bool,
        lender: Option<Lending<'_, 'env>>,
    ) -> Result<Request<'a>> {
        let hold = match lender {
            Some(Lending::Scope(_)) => Hold::Lent,
            // The caller keeps the buffer until the request completes:
            // pushed from it like a blocking send's (by the pool, the ring
            // pipeline or a rendezvous from SHMPI_CMA_BLOCKING), but the
            // caller may be busy elsewhere meanwhile (`Hold::Raw`).
            Some(Lending::Raw(_)) => Hold::Raw,
            None => Hold::Borrowed,
        };
        let mut e = self.shared().lock();
        let src = self.ctx.rank as u32;
        // A scoped send that the transport sends by revocable rendezvous
        // (`Transport::offer_to`: to a distant peer) goes so; the scope's
        // end moves the offer to its copy of the buffer, or waits for a
        // read in progress (`transport::lend`).
        let offered = match lender {
            Some(Lending::Scope(l)) => {
                e.start_send_offered(cid, src, world, tag, data, || l.lend(data))
            }
            _ => None,
        };
        let (start, ack) = match offered {
            Some(r) => r,
            None => e.start_send(cid, src, world, tag, data, sync, hold),
        };
        let slot = match (start, ack) {
            (SendStart::Done, None) => {
                drop(e);
                return Ok(Request::done(&self.proc_, Status::null()));
            }
            (SendStart::Done, Some(id)) => id,
            (SendStart::Partial(out), ack) => match lender {
                Some(Lending::Scope(l)) => e.queue_send_lent(out, l.lend(data), ack),
                Some(Lending::Raw(r)) => e.queue_send_lent(out, r.lent(), ack),
                None => e.queue_send(out, data, ack),
            },
        };
        drop(e);
        Ok(Request::send(&self.proc_, slot))
    }

    /// Starts a receive (`MPI_Irecv`). The buffer stays borrowed until the
    /// request completes.
    ///
    /// # Errors
    /// `Rank`, `Tag`.
    pub fn irecv<'a, T: Scalar>(
        &'a self,
        buf: &'a mut [T],
        src: i32,
        tag: i32,
    ) -> Result<Request<'a>> {
        let r = self.irecv_bytes(as_bytes_mut(buf), src, tag, false);
        self.ret("MPI_Irecv", r)
    }

    pub(crate) fn irecv_bytes<'a>(
        &'a self,
        buf: &'a mut [u8],
        src: i32,
        tag: i32,
        coll: bool,
    ) -> Result<Request<'a>> {
        let Some((cid, peer)) = self.recv_target(src, tag, coll)? else {
            return Ok(Request::done(&self.proc_, Status::null()));
        };
        let id = self
            .shared()
            .lock()
            .post_recv_from(cid, src, peer, tag, buf.len());
        Ok(Request::recv(&self.proc_, id, buf))
    }

    /// A send of `data` to `dest` on this communicator's partitioned
    /// context (`context::PART_BIT`), the C layer's `MPI_Psend_init`
    /// traffic: its setup message (the program's `tag`, checked there)
    /// and its data messages (a negative tag an operation, which no
    /// program's message has). Nothing sent here matches an ordinary
    /// receive.
    ///
    /// The bytes leave at the call (what the ring does not take is copied
    /// into the send queue, as a nonblocking collective's are), never by
    /// rendezvous: a partitioned receiver posts its receives only when a
    /// call of its own reaches the request, so a send that waited for
    /// its match could wait for ever on a receiver blocked elsewhere
    /// (MPI 4.1 §3.7.4's progress rule); queued bytes only need the
    /// receiver's engine to run, which every blocking call does.
    ///
    /// # Errors
    /// `Rank`; an error of the process state.
    pub(crate) fn isend_part_bytes(&self, data: &[u8], dest: i32, tag: i32) -> Result<Request<'_>> {
        self.proc_.check()?;
        let Some(world) = self.ctx.dest(dest)? else {
            return Ok(Request::done(&self.proc_, Status::null()));
        };
        let cid = self.ctx.id | context::PART_BIT;
        let src = self.ctx.rank as u32;
        let mut e = self.shared().lock();
        let slot = match e.start_send(cid, src, world, tag, data, false, Hold::Now) {
            (SendStart::Done, None) => {
                drop(e);
                return Ok(Request::done(&self.proc_, Status::null()));
            }
            (SendStart::Done, Some(id)) => id,
            (SendStart::Partial(out), ack) => e.queue_send(out, data, ack),
        };
        drop(e);
        Ok(Request::send(&self.proc_, slot))
    }

    /// One round of progress of this process's engine (a partitioned
    /// send that waits for partitions other threads ready keeps the rest
    /// moving meanwhile).
    pub(crate) fn progress_once(&self) {
        let sh = self.shared();
        let mut e = sh.lock();
        sh.progress(&mut e, &mut []);
    }

    /// The receive of [`isend_part_bytes`](Self::isend_part_bytes): from
    /// `src` (a rank, or `PROC_NULL`; no wildcard) with `tag`.
    ///
    /// # Errors
    /// `Rank` for a source out of range or `ANY_SOURCE`; an error of the
    /// process state.
    pub(crate) fn irecv_part_bytes<'a>(
        &'a self,
        buf: &'a mut [u8],
        src: i32,
        tag: i32,
    ) -> Result<Request<'a>> {
        self.proc_.check()?;
        let Some(world) = self.ctx.dest(src)? else {
            return Ok(Request::done(&self.proc_, Status::null()));
        };
        let id = self.shared().lock().post_recv_from(
            self.ctx.id | context::PART_BIT,
            src,
            Some(world),
            tag,
            buf.len(),
        );
        Ok(Request::recv(&self.proc_, id, buf))
    }

    /// Posts a receive of at most `len` bytes from `src` with `tag` for a
    /// caller that keeps no request object (the C layer's light receive:
    /// `MPI_Irecv` on a predefined communicator), the slot keyed with
    /// `key` (its buffer's address, [`Engine::set_key`]); gives the slot
    /// and its generation, `None` for `PROC_NULL`. The slot is finished
    /// by [`wait_keyed_direct`](Self::wait_keyed_direct),
    /// [`wait_recvs`](Self::wait_recvs) or [`recv_request`]
    /// (Self::recv_request)'s request, or let go by [`let_go_recv`]
    /// (Self::let_go_recv); the last two after [`take_key`]
    /// (Self::take_key).
    ///
    /// [`Engine::set_key`]: crate::p2p::engine::Engine::set_key
    #[inline]
    pub(crate) fn post_irecv_keyed(
        &self,
        len: usize,
        src: i32,
        tag: i32,
        key: usize,
    ) -> Result<Option<(p2p::SlotId, u32)>> {
        let Some((cid, peer)) = self.recv_target(src, tag, false)? else {
            return Ok(None);
        };
        let mut e = self.shared().lock();
        let id = e.post_recv_from(cid, src, peer, tag, len);
        let gen = e.set_key(id, key);
        Ok(Some((id, gen)))
    }

    /// The key and capacity of the keyed receive `id` of generation
    /// `gen` ([`post_irecv_keyed`](Self::post_irecv_keyed)), and the slot
    /// no longer keyed; `None` if the handle is stale or its key taken.
    pub(crate) fn take_key(&self, id: p2p::SlotId, gen: u32) -> Option<(usize, usize)> {
        self.shared().lock().take_key(id, gen)
    }

    /// [`take_key`](Self::take_key) for many receives under one engine
    /// lock: `f` gets the taker and calls it for each (it must not call
    /// into the engine otherwise).
    pub(crate) fn take_keys<R>(
        &self,
        f: impl FnOnce(&mut dyn FnMut(p2p::SlotId, u32) -> Option<(usize, usize)>) -> R,
    ) -> R {
        let mut e = self.shared().lock();
        f(&mut |id, gen| e.take_key(id, gen))
    }

    /// The generation of slot `id` if it is a receive not yet matched
    /// (`Engine::posted_gen`).
    pub(crate) fn posted_gen(&self, id: p2p::SlotId) -> Option<u32> {
        self.shared().lock().posted_gen(id)
    }

    /// Whether slot `id` of generation `gen` is a receive not yet
    /// finished, and still waiting for a message (`Engine::recv_pending`).
    pub(crate) fn recv_pending(&self, id: p2p::SlotId, gen: u32) -> Option<bool> {
        self.shared().lock().recv_pending(id, gen)
    }

    /// [`posted_gen`](Self::posted_gen) of each slot of `ids` (`None`
    /// where there is none), under one lock.
    pub(crate) fn posted_gens(&self, ids: &[Option<p2p::SlotId>]) -> Vec<Option<u32>> {
        let e = self.shared().lock();
        ids.iter()
            .map(|id| id.and_then(|id| e.posted_gen(id)))
            .collect()
    }

    /// Marks the receive in slot `id` of generation `gen` cancelled for
    /// the thread that waits for it, and wakes it (`Engine::cancel_posted`,
    /// `Shared::cancel_posted`): `Some(true)` when cancelled, `Some(false)`
    /// when matched already, `None` when the slot is not that receive any
    /// more.
    pub(crate) fn cancel_posted(&self, id: p2p::SlotId, gen: u32) -> Option<bool> {
        self.shared().cancel_posted(id, gen)
    }

    /// Keys the receive `id` again with `key` after [`take_key`]
    /// (Self::take_key) (a caller that took it and gives it back).
    pub(crate) fn restore_key(&self, id: p2p::SlotId, key: usize) {
        self.shared().lock().set_key(id, key);
    }

    /// The wait of the keyed receive `id` of generation `gen` when it
    /// alone is posted in a quiet engine, as
    /// [`wait_posted_direct`](Self::wait_posted_direct), into the buffer
    /// `buf_of` makes of its key and capacity. `None`: not taken (the key
    /// stale or taken, or not the direct case); the receive still posted.
    #[inline]
    pub(crate) fn wait_keyed_direct<'b>(
        &self,
        id: p2p::SlotId,
        gen: u32,
        buf_of: impl FnOnce(usize, usize) -> &'b mut [u8],
    ) -> Option<Result<Status>> {
        self.shared().wait_keyed_direct(id, gen, buf_of)
    }

    /// The request of a receive posted by [`post_irecv_keyed`](Self::post_irecv_keyed)
    /// into `buf` (what `irecv` would have given).
    pub(crate) fn recv_request<'a>(&'a self, id: p2p::SlotId, buf: &'a mut [u8]) -> Request<'a> {
        Request::recv(&self.proc_, id, buf)
    }

    /// Waits for receives posted by [`post_irecv_keyed`](Self::post_irecv_keyed)
    /// (slots and buffers in `sinks`), lending every buffer to progress,
    /// then finishes each and hands `each` its position and outcome.
    /// `Err` when the wait itself fails: nothing is finished, and the
    /// caller lets the slots go.
    pub(crate) fn wait_recvs(
        &self,
        sinks: p2p::Sinks<'_, '_>,
        each: impl FnMut(usize, Result<Status>),
    ) -> Result<()> {
        request::wait_recvs(&self.proc_, sinks, each)
    }

    /// The wait of a receive posted by [`post_irecv_keyed`](Self::post_irecv_keyed)
    /// into `buf`, when it alone is posted in a quiet engine: as a
    /// blocking receive waits (`Shared::wait_posted_direct`). `None`: not
    /// taken, the receive still posted.
    pub(crate) fn wait_posted_direct(
        &self,
        id: p2p::SlotId,
        buf: &mut [u8],
    ) -> Option<Result<Status>> {
        self.shared().wait_posted_direct(id, buf)
    }

    /// Lets go a receive posted by [`post_irecv_keyed`](Self::post_irecv_keyed) that
    /// will not be finished, as dropping its request would: cancelled if
    /// not matched yet, else finished into its slot's own buffer.
    pub(crate) fn let_go_recv(&self, id: p2p::SlotId) {
        self.shared().lock().orphan(id);
    }

    /// Receives `count` messages from `src` (or `ANY_SOURCE`) with `tag`
    /// into the one buffer `buf`, all posted at once, and waits for them
    /// all: what C does with a window of `MPI_Irecv`s into one buffer and
    /// `MPI_Waitall` (OSU's bandwidth test), which safe Rust cannot write
    /// with [`irecv`](Self::irecv). A message lands in `buf` as it
    /// arrives while the call lends `buf` to progress; one that waited
    /// before the window was posted, or arrived while `buf` was not lent,
    /// is copied in when the window completes, over those written
    /// directly. Afterwards `buf` holds bytes of the messages written in
    /// an order not specified (as MPI leaves the content of overlapping
    /// receive buffers): from one source, with messages of one length,
    /// one whole message of the window, not always the last. For
    /// where only the arrival matters: bandwidth windows, draining.
    ///
    /// # Errors
    /// As [`recv`](Self::recv), the first error (every receive is finished
    /// either way).
    pub fn recv_many<T: Scalar>(
        &self,
        buf: &mut [T],
        count: usize,
        src: i32,
        tag: i32,
    ) -> Result<Vec<Status>> {
        let r = (|| {
            let Some((cid, peer)) = self.recv_target(src, tag, false)? else {
                return Ok(vec![Status::null(); count]);
            };
            self.shared()
                .recv_many_bytes(cid, src, peer, tag, as_bytes_mut(buf), count)
        })();
        self.ret("recv_many", r)
    }

    /// Starts `count` receives from `src` (or `ANY_SOURCE`) with `tag`
    /// into the one buffer `buf`: the nonblocking form of
    /// [`recv_many`](Self::recv_many), for a window that must be posted
    /// before sends of one's own (OSU's bidirectional test); what `buf`
    /// holds afterwards is as for `recv_many`. The request completes when
    /// every receive has; its status is the last receive's, its error the
    /// first receive's. `cancel` does not apply
    /// to it; dropping it early cancels the receives not yet matched
    /// (the others finish into buffers of their own).
    ///
    /// # Errors
    /// `Rank`, `Tag`; `Arg` for a count of 0.
    pub fn irecv_many<'a, T: Scalar>(
        &'a self,
        buf: &'a mut [T],
        count: usize,
        src: i32,
        tag: i32,
    ) -> Result<Request<'a>> {
        let r = self.irecv_many_bytes(as_bytes_mut(buf), count, src, tag);
        self.ret("irecv_many", r)
    }

    fn irecv_many_bytes<'a>(
        &'a self,
        buf: &'a mut [u8],
        count: usize,
        src: i32,
        tag: i32,
    ) -> Result<Request<'a>> {
        if count == 0 {
            return Err(crate::Error::new(
                crate::ErrorClass::Arg,
                "irecv_many of no receive (count 0)",
            ));
        }
        let Some((cid, peer)) = self.recv_target(src, tag, false)? else {
            return Ok(Request::done(&self.proc_, Status::null()));
        };
        let ids = self
            .shared()
            .post_recv_many(cid, src, peer, tag, buf.len(), count);
        Ok(Request::recv_many(&self.proc_, ids, buf))
    }

    /// Sends and receives in one call (`MPI_Sendrecv`), without deadlock
    /// when two ranks exchange.
    ///
    /// # Errors
    /// As [`send`](Self::send) and [`recv`](Self::recv).
    #[allow(clippy::too_many_arguments)]
    pub fn sendrecv<T: Scalar, U: Scalar>(
        &self,
        sbuf: &[T],
        dest: i32,
        stag: i32,
        rbuf: &mut [U],
        src: i32,
        rtag: i32,
    ) -> Result<Status> {
        let r = self.sendrecv_bytes(as_bytes(sbuf), dest, stag, as_bytes_mut(rbuf), src, rtag);
        self.ret("MPI_Sendrecv", r)
    }

    /// Waits for a matching message without receiving it (`MPI_Probe`).
    ///
    /// # Errors
    /// `Rank`, `Tag`.
    pub fn probe(&self, src: i32, tag: i32) -> Result<Status> {
        let r = (|| -> Result<Status> {
            let Some(cid) = self.recv_route(src, tag, false)? else {
                return Ok(Status::null());
            };
            self.shared()
                .wait_until(None, |e| e.iprobe(cid, src, tag).map(Ok))
        })();
        self.ret("MPI_Probe", r)
    }

    /// Checks for a matching message without receiving it (`MPI_Iprobe`).
    ///
    /// # Errors
    /// `Rank`, `Tag`.
    pub fn iprobe(&self, src: i32, tag: i32) -> Result<Option<Status>> {
        let r = (|| -> Result<Option<Status>> {
            let Some(cid) = self.recv_route(src, tag, false)? else {
                return Ok(Some(Status::null()));
            };
            let sh = self.shared();
            let mut e = sh.lock();
            sh.progress(&mut e, &mut []);
            Ok(e.iprobe(cid, src, tag))
        })();
        self.ret("MPI_Iprobe", r)
    }

    /// Waits for a matching message and takes it out of matching, so that
    /// only [`Message::recv`] receives it (`MPI_Mprobe`).
    ///
    /// # Errors
    /// `Rank`, `Tag`.
    pub fn mprobe(&self, src: i32, tag: i32) -> Result<(Message<'_>, Status)> {
        let r = (|| -> Result<(Message<'_>, Status)> {
            let Some(cid) = self.recv_route(src, tag, false)? else {
                return Ok((Message::null(&self.proc_), Status::null()));
            };
            let (id, st) = self
                .shared()
                .wait_until(None, |e| e.improbe(cid, src, tag).map(Ok))?;
            Ok((Message::new(&self.proc_, id), st))
        })();
        self.ret("MPI_Mprobe", r)
    }

    /// As [`mprobe`](Self::mprobe), without waiting (`MPI_Improbe`).
    ///
    /// # Errors
    /// `Rank`, `Tag`.
    pub fn improbe(&self, src: i32, tag: i32) -> Result<Option<(Message<'_>, Status)>> {
        let r = (|| -> Result<Option<(Message<'_>, Status)>> {
            let Some(cid) = self.recv_route(src, tag, false)? else {
                return Ok(Some((Message::null(&self.proc_), Status::null())));
            };
            let sh = self.shared();
            let mut e = sh.lock();
            sh.progress(&mut e, &mut []);
            Ok(e.improbe(cid, src, tag)
                .map(|(id, st)| (Message::new(&self.proc_, id), st)))
        })();
        self.ret("MPI_Improbe", r)
    }

    /// Byte send on this communicator's point-to-point context, without
    /// the error handler (for constructors that talk over a peer).
    pub(super) fn send_raw(&self, data: &[u8], dest: i32, tag: i32) -> Result<()> {
        self.send_bytes(data, dest, tag, false, false)
    }

    /// Byte receive, as [`send_raw`](Self::send_raw).
    pub(super) fn recv_raw(&self, buf: &mut [u8], src: i32, tag: i32) -> Result<()> {
        self.recv_bytes(buf, src, tag, false).map(|_| ())
    }

    /// Byte exchange with one peer, as [`send_raw`](Self::send_raw).
    pub(super) fn sendrecv_raw(
        &self,
        data: &[u8],
        peer: i32,
        tag: i32,
        buf: &mut [u8],
    ) -> Result<()> {
        self.sendrecv_bytes(data, peer, tag, buf, peer, tag)
            .map(|_| ())
    }

    /// The exchange under `sendrecv` and `sendrecv_raw`: the receive is
    /// posted first and its buffer lent while the send completes, which is
    /// pushed from `data` (or read by the peer) without a copy.
    fn sendrecv_bytes(
        &self,
        data: &[u8],
        dest: i32,
        stag: i32,
        buf: &mut [u8],
        src: i32,
        rtag: i32,
    ) -> Result<Status> {
        let to = self.send_route(dest, stag, false)?;
        let from = self.recv_target(src, rtag, false)?;
        match (to, from) {
            (Some((world, cid)), Some((_, peer))) => self.shared().sendrecv_bytes(
                cid,
                self.ctx.rank as u32,
                world,
                stag,
                data,
                src,
                peer,
                rtag,
                buf,
            ),
            (Some(_), None) => self
                .send_bytes(data, dest, stag, false, false)
                .map(|()| Status::null()),
            (None, Some(_)) => self.recv_bytes(buf, src, rtag, false),
            (None, None) => Ok(Status::null()),
        }
    }

    /// Blocks until every member has called it (`MPI_Barrier`): a
    /// dissemination barrier over point-to-point on the collective
    /// context, ⌈log2 n⌉ rounds. On an intercommunicator, returns once
    /// every member of both groups has called it.
    ///
    /// # Errors
    /// `Other` after finalize.
    pub fn barrier(&self) -> Result<()> {
        let r = self.proc_.check().and_then(|()| match &self.inner.kind {
            Kind::Intra => match self.hierarchy() {
                Some((local, leaders)) => self.hier_barrier(local, leaders),
                None => self.coll().barrier(),
            },
            Kind::Inter { .. } => self.inter_barrier(),
        });
        self.ret("MPI_Barrier", r)
    }

    /// The rank used for the null process.
    pub const PROC_NULL: i32 = PROC_NULL;
}

/// What [`Communicator::recv_named`] did.
enum Named {
    /// The message, of this many bytes, is in the buffer.
    Taken(usize),
    /// The message, of this many bytes, was longer than the buffer (it
    /// is consumed: a `Truncate` error).
    Truncated(usize),
    /// Nothing was taken: post the receive (context id, world rank).
    Post(u32, usize),
    /// Not a receive for the fast path: the general path.
    Other,
}
