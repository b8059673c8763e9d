//! Byte messages between the ranks of one job: the embeddable transport.
//!
//! Layer L2 (imports L0 and `shm`, `ring`). It knows nothing of MPI: a
//! message is bytes plus a 16-byte opaque [`Envelope`] that the layer
//! above fills (p2p puts context id, source and tag there).
//!
//! - One SPSC ring per ordered pair (sender → receiver), placed in the
//!   receiver's region of the segment ([`layout`]).
//! - A message that fits one frame goes whole (*sole*); a larger one goes
//!   as a *first* fragment and *further* fragments, pipelined through the
//!   ring while the receiver drains it. Frames of one message are never
//!   interleaved with another message on the same ring, so per-pair order
//!   is the send order.
//! - A sender sets its bit in the receiver's pending bitmap after
//!   publishing frames and rings the receiver's doorbell if it sleeps, so
//!   the receiver's polling cost follows the busy peers, not all peers.
//! - A send that does not fit is either resumed by the caller from its own
//!   buffer ([`Transport::resume`]) or copied into a per-peer queue that
//!   [`Transport::poll`] drains ([`Transport::enqueue`]).
//!
//! # Example
//! ```no_run
//! # fn demo(t: &mut shmpi::transport::Transport) {
//! use shmpi::transport::{Envelope, Sent};
//! let env = Envelope([7; 16]);
//! if let Sent::Partial(out) = t.send(1, &env, b"hello") {
//!     t.enqueue(out, b"hello");
//! }
//! t.poll(64, &mut |m| println!("{} bytes from {}", m.data.len(), m.peer));
//! # }
//! ```

pub mod bridge;
pub mod bytes;
pub mod cma;
pub mod fresh;
pub mod layout;
pub mod lend;
pub mod owner;
pub mod placement;
pub mod pool;
pub mod rma;
pub mod shmcoll;
pub mod wait;
pub mod wire;

pub use cma::{CmaMode, DEFAULT_CMA_THRESHOLD};
pub use pool::SharedBuf;

/// From this many bytes a message from a pool buffer goes by rendezvous
/// and one copy out of the pool (`SHMPI_POOL_THRESHOLD`; see
/// `docs/tuning.md`).
pub const DEFAULT_POOL_THRESHOLD: usize = 16 << 10;
pub use layout::{default_ring_capacity, Layout};
pub use lend::{lend, Lender, Lent, Offer, RawLend};
pub use wait::{Rung, WaitPolicy, Waiter};
pub use wire::{sole_head, Envelope, SoleHead, SOLE_HEADER, WIRE_HEADER};

use crate::ring::{self, AwaitedFront, Consumer, Producer, RingHeader, RingReserveError};
use crate::shm::doorbell::{self, Kernel};
use crate::shm::{Segment, SingleCopy, Split};
use crate::sync::{fence, AtomicU64, Ordering};
use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wire::Kind;

/// Peers whose rings a receiver polls directly (most recently active
/// first in, oldest evicted); the others are found through the pending
/// bitmap. Small, so an idle receiver's poll stays a few loads.
pub const DIRECT_MAX: usize = 4;

/// Longest sleep of a sender waiting for ring room.
pub const BLOCKED_SLEEP: Duration = Duration::from_millis(1);

/// Bytes of send-queue buffers kept for reuse, so that a stream of large
/// nonblocking sends does not fault in fresh pages for every copy.
pub const SEND_POOL_MAX: usize = 64 << 20;

/// Largest fragment of a pipelined message. `SHMPI_FRAGMENT_SIZE`
/// overrides it (rounded to the ring's limit).
pub const DEFAULT_FRAGMENT: usize = 64 << 10;

/// The largest message whose ring frame is demoted to the shared cache
/// after publishing (`SHMPI_DEMOTE`; `ring::Demote`, where the CPU has
/// `CLDEMOTE`): measured on the Xeon VM, see `docs/tuning.md`.
pub const DEFAULT_DEMOTE: usize = 8 << 10;

/// The hot window of the rings this transport sends on where their
/// producers do not claim their next frame's lines (else
/// [`WARM_HOT_WINDOW`]; `Producer::set_hot`; `SHMPI_HOT_WINDOW`, 0: off;
/// cut to a quarter of each ring): in a strict
/// ping-pong a lap ends after its first 4 KiB, so small messages go to
/// and fro through lines both cores still hold (`docs/protocol.md`, "The
/// hot window"; figures in `docs/benchmarks.md`, "Issue 6, tenth pass").
pub const DEFAULT_HOT_WINDOW: usize = 4 << 10;

/// The hot window where the producers claim the lines of their next frame
/// after a demoted one (`ring::Demote::warms`): 2-4 KiB frames then go to
/// and fro through 32 KiB of lines the producer claims ahead. Measured on
/// the Xeon VM (`shmpi-bench latency`, 15 alternating runs, 2026-12-07,
/// medians, windows of 4 / 16 / 32 / 64 KiB): 2 KiB 0.55 / 0.42 / 0.41 /
/// 0.42 µs, 4 KiB 0.82 / 0.73 / 0.71 / 0.70; 0 B-1 KiB within 0.01 µs.
/// Without the claims, a 16 KiB window made 4 KiB slower (0.91 → 1.05).
pub const WARM_HOT_WINDOW: usize = 32 << 10;

/// Payload sizes a receiver copies out back to front when the frame is
/// the newest in its ring (`Incoming::copy_back`): measured on the AMD
/// EPYC VM (`docs/benchmarks.md`, "Issue 6, fourteenth pass"): at 2 KiB
/// and below the receiver kept up without harm (and backward lost 10%
/// of bidirectional bandwidth at 2 KiB), above 8 KiB backward was slower
/// (12-16 KiB).
pub const COPY_BACK_MIN: usize = 2049;
/// See [`COPY_BACK_MIN`].
pub const COPY_BACK_MAX: usize = 8192;

/// The length from which a receive that waits for one message by its
/// header (`take_exact`, `wait_exact`: a blocking receive's fast path)
/// copies it out back to front: `shmpi-bench latency` on the AMD EPYC VM
/// (`docs/benchmarks.md`, "Issue 6, fourteenth pass"), back against
/// front in the same runs: 2 KiB 0.23-0.24 against 0.31-0.32 µs, 3 KiB
/// 0.30 against 0.54, 4 KiB 0.34-0.39 against 0.56-0.63, 8 KiB 0.51-0.65
/// against 0.65-0.78, 12-32 KiB 6-20% less; below 2 KiB no difference.
/// Without the vector loop (Intel) the copy stays forward.
pub const TAKE_BACK_MIN: usize = 2048;

/// How many more bytes than the sender a receiver first takes of a shared
/// rendezvous copy ([`Transport::split_front`]) when the sender does not
/// wait for it (a plain `isend`'s): about what it copies while the offer
/// travels to the sender and the sender's progress finds it. A sender
/// that waits in the library (a blocking send's, `Rts::waits`) finds the
/// offer at once, and its copy starts at half: on the Xeon VM
/// (2026-12-07, the peers' C program, 8 alternating rounds, blocking
/// sends shared from 16 KiB) half against half plus this head took 16-64
/// KiB in 0.96-1.00x the time with untouched buffers, and in 0.67x, 0.82x
/// and 0.94x with buffers rewritten before each send (`--touch`), whose
/// lines the receiver's read snoops out of the sender's cache one by one
/// while the sender's own write finds them at hand.
pub const SPLIT_HEAD: usize = 8 << 10;

/// Which sender a shared copy is with: what its split starts from and
/// learns apart ([`Transport::split_front`], [`Transport::split_settle`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitKind {
    /// A sender that does not wait in the library (a plain `isend`'s, a
    /// C `MPI_Isend`'s): it finds the offer at its next progress call.
    Posted = 0,
    /// A blocking send's, from the shared copy's size
    /// (`SHMPI_CMA_SPLIT_BLOCKING`): its sender waits and takes the offer
    /// at once.
    Waiting = 1,
    /// A blocking send's below that size, whose sender asked for it after
    /// slow reads (`Rts::share`, `fresh::Detour::Share`).
    Asked = 2,
}

impl SplitKind {
    /// The kind of a rendezvous request's copy, by its flags.
    pub fn of(waits: bool, share: bool) -> SplitKind {
        match (waits, share) {
            (false, _) => SplitKind::Posted,
            (true, false) => SplitKind::Waiting,
            (true, true) => SplitKind::Asked,
        }
    }
}

/// The steps, in 1/1024ths of the message, by which a receiver's share of
/// its shared copies with one peer may move from the start
/// ([`Transport::split_front`]): at most a quarter of the message either
/// way.
pub const SPLIT_SKEW_MAX: i16 = 256;

/// Copies the payload of a frame its receiver waited for by its header
/// (equal lengths). From a near peer (`far()` false; asked only of a
/// copy of [`TAKE_BACK_MIN`] bytes or more) back to front from that
/// length, since its producer has just written the frame and, read front
/// to back, its lines came in one after another. From a distant peer
/// front to back: its frames are streamed to memory, and across Zen 4
/// CCDs front to back took 4 KiB in 1.17 µs against 1.26 and 8 KiB in
/// 1.58 against 1.81 (`docs/benchmarks.md`, "Issue 6, twenty-second
/// pass").
#[inline(always)]
pub fn copy_awaited(dst: &mut [u8], src: &[u8], far: impl FnOnce() -> bool) {
    ring::copy_bytes_back_from(dst, src, || if far() { usize::MAX } else { TAKE_BACK_MIN });
}

/// Whether `peer` counts as distant by `distant` (`Transport::distant`),
/// as a free function so that a receive holding a ring mutably can still
/// ask ([`copy_awaited`]).
#[inline(always)]
fn is_far(distant: &[bool], peer: usize) -> bool {
    distant.get(peer) == Some(&true)
}

/// One frame (or fragment) handed to [`Transport::poll`]'s handler.
#[derive(Debug)]
pub struct Incoming<'a> {
    /// The sending rank.
    pub peer: usize,
    /// The sender's envelope.
    pub envelope: Envelope,
    /// Total length of the message this fragment belongs to.
    pub total: usize,
    /// Byte offset of `data` in the message.
    pub offset: usize,
    /// The bytes; valid only during the handler call.
    pub data: &'a [u8],
    /// Whether to copy `data` out back to front
    /// ([`ring::copy_bytes_back`]): the frame carries 2-8 KiB and is the
    /// last its producer has published, so a producer still sending is
    /// writing just past it.
    pub copy_back: bool,
}

impl Incoming<'_> {
    /// Whether this is the first (or only) fragment of its message.
    pub fn is_first(&self) -> bool {
        self.offset == 0
    }

    /// Whether this fragment ends its message.
    pub fn is_last(&self) -> bool {
        self.offset + self.data.len() == self.total
    }
}

/// The state of a message not yet fully in the ring.
#[derive(Debug)]
pub struct OutMsg {
    peer: usize,
    env: Envelope,
    total: usize,
    sent: usize,
    /// Whether the first frame is in (a 0-byte message is one frame).
    started: bool,
    /// Tells this message apart from others to the same peer.
    id: u64,
}

impl OutMsg {
    /// Bytes already in the ring.
    pub fn sent(&self) -> usize {
        self.sent
    }
    /// Whether the whole message is in the ring.
    pub fn is_complete(&self) -> bool {
        self.started && self.sent == self.total
    }
    /// The destination rank.
    pub fn peer(&self) -> usize {
        self.peer
    }
}

/// Takes frame `f` if its payload starts with the sole header `head`:
/// the rest of the payload (up to `buf.len()` bytes) into `buf`, the frame
/// released; its message length and footprint. `None`: another header,
/// the frame left in the ring. (`take_exact`'s and `wait_exact`'s take;
/// the room it frees is the caller's to owe.)
#[inline(always)]
fn take_if_headed(
    f: ring::Frame<'_>,
    head: &SoleHead,
    buf: &mut [u8],
    far: impl FnOnce() -> bool,
) -> Option<(usize, usize)> {
    let bytes = f.bytes();
    let (Some(h), Some(data)) = (bytes.get(..SOLE_HEADER), bytes.get(SOLE_HEADER..)) else {
        return None;
    };
    if h != head.0 {
        return None;
    }
    let n = data.len().min(buf.len());
    copy_awaited(&mut buf[..n], &data[..n], far);
    let len = data.len();
    let fp = ring::footprint(bytes.len());
    f.release();
    Some((len, fp))
}

/// What [`Transport::take_exact`] found at the front of a peer's ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exact {
    /// The ring is empty.
    Empty,
    /// The awaited message was there and was taken: its length in bytes.
    Taken(usize),
    /// Something else is there; it was left in the ring.
    Other,
}

/// What [`Transport::take_sole`] found at the front of a peer's ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Front {
    /// The ring is empty.
    Empty,
    /// A whole message was there and the caller took it.
    Taken,
    /// Something else is there (a fragment, or a message the caller
    /// declined); it was left in the ring for [`Transport::poll`].
    Other,
}

/// What [`Transport::send`] achieved.
#[derive(Debug)]
#[must_use]
pub enum Sent {
    /// The whole message is in the ring.
    Done,
    /// Part (maybe none) is in; continue with [`Transport::resume`] or
    /// [`Transport::enqueue`].
    Partial(OutMsg),
}

/// Identifies an enqueued message; see [`Transport::is_done`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    peer: usize,
    seq: u64,
}

impl Ticket {
    /// The peer the message goes to.
    pub fn peer(&self) -> usize {
        self.peer
    }
}

#[derive(Debug)]
struct Queued {
    msg: OutMsg,
    /// `data[0]` is byte `base` of the message.
    base: usize,
    data: QueuedData,
    seq: u64,
}

/// The bytes of a queued message.
#[derive(Debug)]
enum QueuedData {
    /// The rest of the message, copied (`base` = where the copy starts).
    Copied(Vec<u8>),
    /// The whole message, lent for a scope (`base` = 0).
    Lent(Lent),
}

/// A ring header in the segment; valid while the transport (which holds
/// the segment) lives.
#[derive(Debug, Clone, Copy)]
struct HeaderPtr(NonNull<RingHeader>);

impl HeaderPtr {
    #[inline]
    fn get(&self) -> &RingHeader {
        // SAFETY: made by `ring_header` from an in-bounds, aligned offset of
        // the segment that the owning `Transport` keeps mapped; ring
        // headers are all atomics.
        unsafe { self.0.as_ref() }
    }
}

#[derive(Debug)]
struct Rx {
    cons: Consumer,
    hdr: HeaderPtr,
    data_off: usize,
}

#[derive(Debug)]
struct Tx {
    prod: Producer,
    hdr: HeaderPtr,
    header_off: usize,
    /// A message that has frames in the ring but not all of them, resumed
    /// by its sender from its own buffer: no other message may start on
    /// this ring until it is complete (fragments must not interleave).
    /// Holds its id and the queue sequence number reserved for it when it
    /// started, which is below every message queued behind it.
    open: Option<(u64, u64)>,
    /// The last push found the ring full (a sleeper must watch `head`).
    stalled: bool,
    /// The position of the ring from the peer at this rank's last sole
    /// frame to it: a different one at the next means the peer answered
    /// in between.
    rx_seen: u64,
    /// This rank's `Transport::looks` at its last sole frame to the peer.
    looked: u64,
    /// Every sole frame of this lap so far answered one from the peer: a
    /// strict ping-pong, whose laps may end early
    /// (`Producer::end_lap_early`).
    turns: bool,
    /// What the timed copies into this ring say of the peer's placement
    /// (when [`Transport::watch`] is on).
    drift: placement::Drift,
    queue: VecDeque<Queued>,
    next_seq: u64,
    done_seq: u64,
}

/// A rank's transport endpoint set: rings to and from every peer.
#[derive(Debug)]
pub struct Transport {
    seg: Arc<Segment>,
    layout: Layout,
    me: usize,
    tx: Vec<Option<Tx>>,
    rx: Vec<Option<Rx>>,
    /// Peers polled directly, oldest first (at most [`DIRECT_MAX`]).
    direct: Vec<usize>,
    /// Total length of the message whose fragments each peer is sending.
    rx_total: Vec<usize>,
    /// Bytes released on each peer's ring since that peer's doorbell was
    /// last rung (see `drain_ring`).
    owed: Vec<usize>,
    /// Pending bits this rank took from its bitmap but has not drained.
    local: Vec<u64>,
    words: usize,
    fragment: usize,
    /// The largest fragment of a message to a distant peer
    /// (`SHMPI_DISTANT_FRAGMENT`, at most `fragment`).
    distant_fragment: usize,
    /// Spare send-queue buffers, and their total capacity.
    pool: Vec<Vec<u8>>,
    pooled: usize,
    next_msg: u64,
    /// Messages waiting in all per-peer queues.
    queued: usize,
    /// False only while no ring to a peer is known to hold an open message
    /// or to have been found full: set where either starts, cleared when
    /// [`sends_idle`](Transport::sends_idle) looks and finds neither (so
    /// that test, on every direct receive, is one load while idle).
    maybe_busy: bool,
    /// A queued message was completed since the last `take_completed`.
    completed: bool,
    /// First CPU of each rank's binding (see `set_rank_cpus`).
    cpus: Vec<Option<usize>>,
    /// The row of single-copy and window defaults in use (this CPU's, or
    /// the one `SHMPI_CPU_DEFAULTS` names).
    cpu_row: cma::CpuRow,
    /// `SHMPI_CMA`.
    cma_mode: CmaMode,
    /// Messages of at least this many bytes go by rendezvous to receivers
    /// that can read this process's memory (`SHMPI_CMA_THRESHOLD`).
    cma_threshold: usize,
    /// Under `SHMPI_CMA=auto`, blocking sends of at least this many bytes
    /// go by rendezvous (`SHMPI_CMA_BLOCKING`; `usize::MAX`: never).
    blocking_from: usize,
    /// Under `SHMPI_CMA=auto`, C's `MPI_Isend`s of at least this many
    /// bytes go by rendezvous (`SHMPI_CMA_C_ISEND`; `usize::MAX`: never).
    c_isend_from: usize,
    /// The same while the receiver has taken every earlier message of
    /// this rank (`SHMPI_CMA_C_ISEND_QUIET`; `usize::MAX`: never).
    c_isend_quiet: usize,
    /// Rendezvous messages of at least this many bytes from a peer of
    /// this job have their copy shared with the sender (`SHMPI_CMA_SPLIT`;
    /// `usize::MAX`: never).
    split_from: usize,
    /// The same for a blocking send's, whose sender waits and takes its
    /// part at once (`SHMPI_CMA_SPLIT_BLOCKING`; `usize::MAX`: never).
    split_blocking_from: usize,
    /// The time above which a receiver's read of 8 KiB of a plain
    /// rendezvous counts as slow, in ns (`fresh::slow` for other lengths;
    /// `SHMPI_CMA_SLOW_READ`; `None`: reads are not timed); see
    /// [`judges`](Self::judges) and [`judges_posted`](Self::judges_posted).
    slow_read: Option<u32>,
    /// The clock those reads are timed with (`None`: none are). `Some`
    /// only under `SHMPI_CMA=auto`, with `slow_read` set, where some
    /// length is judged: the judging methods test it alone.
    clock: Option<fresh::Clock>,
    /// Which frames the producers demote after publishing them
    /// (`SHMPI_DEMOTE`).
    demote: ring::Demote,
    /// The producers' hot window in bytes (`SHMPI_HOT_WINDOW`).
    hot: usize,
    /// The largest buffer a window of receives into one buffer takes its
    /// front into straight from the ring (`SHMPI_MANY_DIRECT`).
    many_direct: usize,
    /// How long such a window waits after a look that took some of its
    /// messages but not all (`SHMPI_WINDOW_PACE`, ns).
    window_pace_ns: u32,
    /// The peer whose ring's producer has hints due (`Producer::hints_due`:
    /// a long frame's demotion, the claim of the next frame's lines),
    /// given when this rank next finds nothing to receive
    /// (`give_idle_hints`); `usize::MAX`: none. Set after a sole frame
    /// (a whole message sent at once); a frame `push_frames` writes (a
    /// queued message, a fragment) leaves its hints unregistered, but a 2-4
    /// KiB one is demoted whole there. One peer: after sole frames to two peers in a row only
    /// the last one's hints are given (the other's are dropped by its
    /// next frame), a loss of a hint only.
    hints: usize,
    /// How many times this rank has looked for incoming messages (any
    /// receive or poll; wrapping). A sole frame to a peer sent with no
    /// look since the last one to it is part of a burst
    /// (`Producer::set_in_burst`, `Tx::looked`): the later frames of a
    /// window of sends are not demoted. A window of 8 x 1 KiB `MPI_Isend`
    /// each way took 3.63-3.95 µs a round with every frame judged on time
    /// alone, about 2.8 so (MPICH 4.0: 3.3-3.4; `docs/benchmarks.md`,
    /// "Issue 6, forty-first pass").
    looks: u64,
    /// The generation of this rank's last shared-copy offer.
    split_gen: u64,
    /// Per peer, how far this rank's share of a shared copy from that peer
    /// has moved, in 1/1024ths of the message (see
    /// [`split_front`](Self::split_front)): one per [`SplitKind`].
    split_skew: Vec<[i16; 3]>,
    /// The generation of this rank's last rendezvous offer, and where the
    /// next search of its offer table for a free entry starts.
    offer_gen: u64,
    offer_hint: usize,
    /// `SHMPI_STREAM_THRESHOLD` (see [`stream_threshold`](Self::stream_threshold)).
    stream_threshold: usize,
    /// Informational lines on stderr (`SHMPI_VERBOSE`).
    verbose: bool,
    /// This rank's shared pool, made at its first allocation
    /// (`alloc_shared`), of `pool_len` bytes (`SHMPI_ALLOC_POOL`).
    shared: std::sync::OnceLock<Arc<pool::Pool>>,
    pool_len: usize,
    /// Messages of at least this many bytes from a pool buffer go by
    /// rendezvous, copied once out of the pool (`SHMPI_POOL_THRESHOLD`).
    pool_threshold: usize,
    /// Messages shorter than this go as one sole frame whatever holds
    /// their buffer (below the fragment size, the thresholds above and,
    /// once a peer is found distant, `distant_from` and
    /// [`placement::STREAM_MIN`]; while the placement is followed,
    /// `watch_min`): [`try_send_eager`](Transport::try_send_eager).
    eager_below: usize,
    /// Messages shorter than this go as one sole frame by the quick path
    /// of [`send`](Transport::send) once the protocol is chosen: up to the
    /// fragment size, once a peer is found distant below
    /// [`placement::STREAM_MIN`] (longer frames to it stream, which only
    /// `push_frames` does), and while the placement is followed below
    /// `watch_min` (longer ones may be timed, there too).
    sole_below: usize,
    /// How peers are judged distant (`SHMPI_DISTANT`; [`placement`]).
    distant_mode: placement::DistantMode,
    /// Blocking sends and plain `isend`s of at least this many bytes to a
    /// distant peer go by rendezvous (`SHMPI_DISTANT_RENDEZVOUS`;
    /// `usize::MAX`: never).
    distant_from: usize,
    /// The start-up probe's one-way hand-off to each peer, in ns (`None`:
    /// this rank, or not measured).
    hand_off: Vec<Option<u32>>,
    /// A peer whose start-up hand-off takes longer than this (ns) is
    /// distant (`SHMPI_DISTANT_NS`; `None`: none is, and the placement is
    /// not followed; [`cma::Defaults`]).
    distant_ns: Option<u32>,
    /// Under `SHMPI_CMA=auto`, the size from which a scoped send to any
    /// peer goes by revocable rendezvous (`SHMPI_CMA_SCOPED`;
    /// `usize::MAX`: only to a distant peer; [`offer_to`](Self::offer_to)).
    scoped_from: usize,
    /// Which peers are distant ([`probe_placement`](Self::probe_placement),
    /// then [`placement::Drift`]).
    distant: Vec<bool>,
    /// Whether the verdicts follow the placement after the start-up probe
    /// (`SHMPI_DISTANT=auto` and the probe ran): large ring messages time
    /// their copies ([`placement::Drift`]).
    watch: bool,
    /// Ring copies slower than this (MB/s) count as a distant placement
    /// (`SHMPI_DISTANT_SLOW`; [`placement::SLOW_RING`]).
    slow_ring: u64,
    /// The smallest ring message that may be timed or explore while the
    /// placement is followed (`SHMPI_DISTANT_WATCH`; by CPU,
    /// [`cma::Defaults`]: [`placement::WATCH_MIN`], 8 KiB on AMD family
    /// 25).
    watch_min: usize,
    /// Read-only views of the peers' pools, mapped at the first
    /// rendezvous from each.
    peer_pools: Vec<std::sync::OnceLock<pool::PeerPool>>,
    /// Bridges to other jobs (`None` once removed; ids are not reused).
    bridges: Vec<Option<bridge::Bridge>>,
    /// The peers beyond this job's ranks (peer index `size() + i`): which
    /// bridge and where (`None` once their bridge is removed).
    far: Vec<Option<bridge::Far>>,
    /// When the far peers were last checked for life.
    far_checked: Option<std::time::Instant>,
}

fn ring_header(seg: &Segment, off: usize) -> NonNull<RingHeader> {
    assert!(off + core::mem::size_of::<RingHeader>() <= seg.len());
    assert_eq!(off % crate::sync::CACHE_LINE, 0);
    // SAFETY: in bounds and aligned (asserted), inside the mapping.
    NonNull::new(unsafe { seg.base().as_ptr().add(off) }.cast::<RingHeader>()).expect("non-null")
}

fn ring_data(seg: &Segment, off: usize, cap: usize) -> NonNull<u8> {
    assert!(off + cap <= seg.len());
    // SAFETY: in bounds (asserted), inside the mapping.
    NonNull::new(unsafe { seg.base().as_ptr().add(off) }).expect("non-null")
}

// SAFETY: a Transport owns its producers and consumers (each the only one
// of its role) and raw pointers into the segment it keeps alive through
// `seg`; moving it to another thread keeps a single owner of every role.
unsafe impl Send for Transport {}

impl Transport {
    /// Prepares rank `me`'s side: reserves the region of rings it reads
    /// (first touch from this process), initialises their headers and opens
    /// their consumers. Rings it writes are opened on first send, after the
    /// job's start barrier guarantees the peer initialised them.
    ///
    /// # Errors
    /// When the segment's shape differs from `layout` or space cannot be
    /// reserved.
    pub fn new(seg: Arc<Segment>, layout: Layout, me: usize) -> crate::Result<Transport> {
        use crate::error::{Error, ErrorClass};
        if seg.len() != layout.size() || me >= layout.nranks() {
            return Err(Error::new(
                ErrorClass::Intern,
                format!(
                    "transport layout ({} bytes, {} ranks) does not fit segment ({} bytes) for rank {me}",
                    layout.size(),
                    layout.nranks(),
                    seg.len()
                ),
            ));
        }
        let n = layout.nranks();
        let (roff, rlen) = layout.receiver_region(me);
        if rlen > 0 {
            seg.reserve(roff, rlen)?;
            // Mapped now, not by a fault every 4 KiB of the rings' first
            // lap (`Segment::populate`; a refusal only leaves the faults).
            seg.populate(roff, rlen);
        }
        let cap = layout.ring_capacity();
        let owner: ring::Owner = seg.clone();
        let mut rx = Vec::with_capacity(n);
        for s in 0..n {
            if s == me {
                rx.push(None);
                continue;
            }
            let (h, d) = layout.ring(s, me);
            let hp = ring_header(&seg, h);
            // SAFETY: `hp` points into this rank's reserved, zeroed region;
            // no producer exists before the start barrier.
            unsafe { hp.as_ref() }.init(cap as u64);
            // SAFETY: header initialised above with `cap`, data is `cap`
            // bytes in the reserved region, both live while `owner` (the
            // segment) lives; this rank is the only consumer of ring s → me.
            let c = unsafe { ring::consumer_at(hp, ring_data(&seg, d, cap), owner.clone()) }
                .map_err(|e| Error::new(ErrorClass::Intern, e.to_string()))?;
            rx.push(Some(Rx {
                cons: c,
                hdr: HeaderPtr(hp),
                data_off: d,
            }));
        }
        let frag_max = ring::max_payload(cap) - WIRE_HEADER;
        let fragment = ["SHMPI_EAGER_LIMIT", "SHMPI_FRAGMENT_SIZE"]
            .iter()
            .find_map(|v| env_size(v).transpose())
            .transpose()?
            .unwrap_or(DEFAULT_FRAGMENT)
            .clamp(64, frag_max)
            & !7;
        let cpu_row = cma::CpuRow::for_this_process()?;
        let defaults = cma::Defaults::of(cpu_row);
        let cma_threshold = env_size("SHMPI_CMA_THRESHOLD")?.unwrap_or(defaults.threshold);
        let never_if_0 = |v: Option<usize>, d: usize| match v {
            Some(0) => usize::MAX,
            Some(n) => n,
            None => d,
        };
        let blocking_env = env_size("SHMPI_CMA_BLOCKING")?;
        let blocking_from = never_if_0(blocking_env, defaults.blocking);
        // C's MPI_Isend followed the blocking sends until 2026-12-07.
        let c_isend_from = threshold_or(
            "SHMPI_CMA_C_ISEND",
            blocking_env.map(|_| blocking_from),
            defaults.c_isend,
        )?;
        // Where the unconditional size is set (or follows
        // SHMPI_CMA_BLOCKING) and this one not, that size; bounded by it
        // and the eager limit below.
        let c_isend_set = blocking_env.is_some() || std::env::var_os("SHMPI_CMA_C_ISEND").is_some();
        let c_isend_quiet = threshold_or(
            "SHMPI_CMA_C_ISEND_QUIET",
            c_isend_set.then_some(c_isend_from),
            defaults.c_isend_quiet,
        )?;
        let split_env = env_size("SHMPI_CMA_SPLIT")?;
        let split_from = never_if_0(split_env, defaults.split);
        let split_blocking_from = threshold_or(
            "SHMPI_CMA_SPLIT_BLOCKING",
            split_env.map(|_| split_from),
            defaults.split_blocking,
        )?;
        // 0: none; a whole message's frame carries its short wire header.
        let demote_bytes = env_size("SHMPI_DEMOTE")?.unwrap_or(DEFAULT_DEMOTE);
        let demote = match demote_bytes {
            0 => ring::Demote::OFF,
            n => ring::Demote::up_to(n.saturating_add(SOLE_HEADER)),
        };
        // After a demoted frame, the next frame's lines are claimed
        // (`ring::Demote::warms`) unless this says 0; 1 asks for the
        // claims where frames are not demoted too (a CPU without
        // CLDEMOTE, or SHMPI_DEMOTE=0), up to the same size.
        let demote = match env_number("SHMPI_PREFETCHW", "0 or 1")? {
            None => demote,
            Some(1) if demote.warms() => demote,
            Some(1) => ring::Demote::claims_up_to(
                match demote_bytes {
                    0 => DEFAULT_DEMOTE,
                    n => n,
                }
                .saturating_add(SOLE_HEADER),
            ),
            Some(0) => demote.without_warming(),
            Some(v) => {
                return Err(crate::error::Error::new(
                    crate::error::ErrorClass::Arg,
                    format!("SHMPI_PREFETCHW={v}: expected 0 or 1"),
                ))
            }
        };
        let slow_read = match env_number("SHMPI_CMA_SLOW_READ", "a time in nanoseconds")?
            .unwrap_or(fresh::DEFAULT_SLOW_READ_NS as usize)
        {
            0 => None,
            v => Some(u32::try_from(v).unwrap_or(u32::MAX)),
        };
        let many_direct = env_size("SHMPI_MANY_DIRECT")?.unwrap_or(defaults.many_direct);
        let window_pace_ns = match env_number("SHMPI_WINDOW_PACE", "a time in nanoseconds")? {
            Some(v) => u32::try_from(v).unwrap_or(u32::MAX),
            None => defaults.window_pace_ns,
        };
        // Where the next frame's lines are claimed, a ping-pong of 2-4
        // KiB messages is faster through a larger window.
        let hot = env_size("SHMPI_HOT_WINDOW")?.unwrap_or(if demote.warms() {
            WARM_HOT_WINDOW
        } else {
            DEFAULT_HOT_WINDOW
        });
        // The ring's vector copy, process-wide (`ring::copy`).
        ring::set_vector_copy_from(never_if_0(
            env_size("SHMPI_VECTOR_COPY")?,
            defaults.vector_copy,
        ));
        let stream_threshold =
            env_size("SHMPI_STREAM_THRESHOLD")?.unwrap_or(bytes::DEFAULT_STREAM_THRESHOLD);
        let cma_mode = CmaMode::from_env()?;
        let pool_len = env_size("SHMPI_ALLOC_POOL")?.unwrap_or(pool::DEFAULT_POOL);
        let pool_threshold = env_size("SHMPI_POOL_THRESHOLD")?.unwrap_or(DEFAULT_POOL_THRESHOLD);
        let distant_mode = placement::DistantMode::from_env()?;
        let distant_from = match distant_mode {
            placement::DistantMode::None => usize::MAX,
            _ => never_if_0(
                env_size("SHMPI_DISTANT_RENDEZVOUS")?,
                placement::DEFAULT_DISTANT_RENDEZVOUS,
            ),
        };
        // 0: as to a near peer.
        let distant_fragment = match env_size("SHMPI_DISTANT_FRAGMENT")? {
            Some(0) => fragment,
            Some(n) => n.clamp(64, fragment) & !7,
            None => placement::DEFAULT_DISTANT_FRAGMENT.min(fragment),
        };
        // ns; 0: no peer is distant by the probe.
        let distant_ns = match env_number("SHMPI_DISTANT_NS", "a time in nanoseconds")? {
            Some(0) => None,
            Some(n) => Some(u32::try_from(n).unwrap_or(u32::MAX)),
            None => defaults.distant_ns,
        };
        let scoped_from = never_if_0(env_size("SHMPI_CMA_SCOPED")?, defaults.scoped);
        // MB/s, so bytes per µs; 0: no copy is slow.
        let slow_ring = env_number("SHMPI_DISTANT_SLOW", "a rate in MB/s")?
            .map_or(placement::SLOW_RING, |v| v as u64);
        // 0 would time every message: at least a line.
        let watch_min = env_size("SHMPI_DISTANT_WATCH")?
            .unwrap_or(defaults.watch)
            .max(64);
        let eager_below = eager_limit(fragment, cma_threshold, blocking_from, pool_threshold);
        // Below the eager limit a C isend takes the ring whenever it has
        // room, so a quiet size there would only start its judging.
        let c_isend_quiet = c_isend_quiet.max(eager_below).min(c_isend_from);
        // Peers test single copy by reading this word (`probe_single_copy`)
        // once the start barrier has published its address.
        seg.control(me)
            .set_probe(std::ptr::addr_of!(cma::PROBE) as u64);
        // Peers name this task in their single-copy calls (`cma::target`:
        // a sleeping thread, so their calls do not dirty the line this
        // thread reads at each of its own system calls).
        if matches!(cma_mode, CmaMode::Auto | CmaMode::Always) {
            seg.control(me).set_cma_task(cma::target());
        }
        Ok(Transport {
            seg,
            layout,
            me,
            tx: (0..n).map(|_| None).collect(),
            rx,
            direct: Vec::with_capacity(DIRECT_MAX),
            rx_total: vec![0; n],
            owed: vec![0; n],
            local: vec![0; n.div_ceil(64)],
            words: n.div_ceil(64),
            fragment,
            distant_fragment,
            pool: Vec::new(),
            pooled: 0,
            next_msg: 0,
            queued: 0,
            maybe_busy: false,
            completed: false,
            cpus: Vec::new(),
            cpu_row,
            cma_mode,
            cma_threshold,
            blocking_from,
            split_from,
            split_blocking_from,
            slow_read,
            // Only where some length is judged: the counter's rate is
            // learnt at the first timed read after 2 ms.
            clock: slow_read
                .filter(|_| {
                    let below = |split: usize| split.min(fresh::JUDGED_BELOW);
                    cma_mode == CmaMode::Auto
                        && (blocking_from < below(split_blocking_from)
                            || cma_threshold.min(c_isend_quiet) < below(split_from))
                })
                .map(|_| fresh::Clock::new()),
            demote,
            hot,
            hints: usize::MAX,
            looks: 0,
            many_direct,
            window_pace_ns,
            split_gen: 0,
            split_skew: vec![[0; 3]; n],
            offer_gen: 0,
            offer_hint: 0,
            stream_threshold,
            verbose: std::env::var("SHMPI_VERBOSE").is_ok_and(|v| !v.is_empty() && v != "0"),
            shared: std::sync::OnceLock::new(),
            pool_len,
            pool_threshold,
            sole_below: fragment + 1,
            eager_below,
            distant_mode,
            distant_from,
            distant_ns,
            scoped_from,
            c_isend_from,
            c_isend_quiet,
            hand_off: vec![None; n],
            distant: vec![false; n],
            watch: false,
            slow_ring,
            watch_min,
            peer_pools: (0..n).map(|_| std::sync::OnceLock::new()).collect(),
            bridges: Vec::new(),
            far: Vec::new(),
            far_checked: None,
        })
    }

    /// Allocates `len` bytes in this rank's shared pool (`MPI_Alloc_mem`),
    /// making the pool at the first call.
    ///
    /// # Errors
    /// `NoMem` when the pool cannot be made or has no room.
    pub fn alloc_shared(&self, len: usize) -> crate::Result<pool::SharedBuf> {
        let p = match self.shared.get() {
            Some(p) => p,
            None => {
                let made =
                    pool::Pool::create(&pool::pool_path(self.seg.path(), self.me), self.pool_len)?;
                // A second thread may have made it meanwhile: keep one.
                match self.shared.set(Arc::new(made)) {
                    Ok(()) => self.shared.get().expect("just set"),
                    Err(extra) => {
                        extra.unlink();
                        self.shared.get().expect("set by another thread")
                    }
                }
            }
        };
        pool::SharedBuf::new(p, len)
    }

    /// The pool address of `data` if it lies in this rank's pool and is
    /// long enough to go by a pool rendezvous to `peer`.
    #[inline]
    pub fn pool_address(&self, peer: usize, data: &[u8]) -> Option<u64> {
        if data.len() < self.pool_threshold || peer == self.me || peer >= self.size() {
            return None;
        }
        let off = self.shared.get()?.offset_of(data.as_ptr(), data.len())?;
        Some(pool::POOL_BIT | off)
    }

    /// The offset of `[p, p + len)` in this rank's shared pool, if it lies
    /// inside (`win_create` over `alloc_mem` memory).
    pub fn pool_offset(&self, p: *const u8, len: usize) -> Option<u64> {
        self.shared.get()?.offset_of(p, len)
    }

    /// Maps `peer`'s shared pool read-write (a window member's memory in
    /// it).
    ///
    /// # Errors
    /// `Other` when it cannot be opened.
    pub fn pool_view(&self, peer: usize) -> crate::Result<pool::PoolView> {
        pool::PoolView::open(&pool::pool_path(self.seg.path(), peer))
    }

    /// The task that peers name in their single-copy calls to this rank
    /// (`cma::target`; the process id where single copy is off).
    pub fn cma_task(&self) -> u32 {
        self.seg.control(self.me).cma_task()
    }

    /// Whether this process may read and write `peer`'s memory by system
    /// call (`process_vm_readv` / `writev`): a real read of `peer`'s probe
    /// word, unless `SHMPI_CMA` says off or refuse. Why not, in words.
    ///
    /// # Errors
    /// The reason single copy is not usable towards `peer`.
    pub fn can_reach(&self, peer: usize) -> std::result::Result<(), String> {
        match self.cma_mode {
            CmaMode::Off => Err("single copy is off (SHMPI_CMA=off)".into()),
            CmaMode::Refuse => Err("refused (simulated by SHMPI_CMA=refuse)".into()),
            CmaMode::Auto | CmaMode::Always => {
                let cb = self.control(peer);
                cma::probe(cb.cma_task(), cb.probe())
            }
        }
    }

    /// Removes this rank's pool file (finalize: every rendezvous from it
    /// has been acked).
    pub fn unlink_pool(&self) {
        if let Some(p) = self.shared.get() {
            p.unlink();
        }
    }

    /// The single-copy self-test, run once after the start barrier: reads
    /// the probe word of the next rank with `process_vm_readv` and
    /// publishes the outcome in this rank's control block, where senders
    /// look before each rendezvous ([`rendezvous_to`](Self::rendezvous_to)).
    /// A refusal (or `SHMPI_CMA=off|refuse`) leaves every message to this
    /// rank on the ring path; under `SHMPI_VERBOSE` a refusal prints one
    /// line for the job saying so (`say_refused`).
    pub fn probe_single_copy(&mut self) -> SingleCopy {
        let n = self.size();
        if n == 1 {
            return SingleCopy::Unknown;
        }
        let peer = (self.me + 1) % n;
        let verdict = match self.cma_mode {
            CmaMode::Off => Err(None),
            CmaMode::Refuse => Err(Some("refused (simulated by SHMPI_CMA=refuse)".to_string())),
            CmaMode::Auto | CmaMode::Always => {
                let cb = self.seg.control(peer);
                cma::probe(cb.cma_task(), cb.probe()).map_err(Some)
            }
        };
        let (state, why) = match verdict {
            Ok(()) => (SingleCopy::Usable, None),
            Err(why) => (SingleCopy::Refused, why),
        };
        self.seg.control(self.me).set_single_copy(state);
        if let (Some(why), true) = (why, self.verbose) {
            self.say_refused(&why);
        }
        state
    }

    /// Under `SHMPI_VERBOSE`, the job's one line on single copy refused
    /// (`why`, this rank's test of the next rank): rank 0's, naming every
    /// rank refused, once their tests are all published (within 2 s of
    /// its own); a refused rank other than 0 speaks for itself only when
    /// rank 0's test passed. One write each, so that ranks sharing a pipe
    /// do not interleave their lines.
    #[inline(never)]
    fn say_refused(&self, why: &str) {
        let n = self.size();
        let state = |r: usize| self.seg.control(r).single_copy();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let wait_for = |ranks: std::ops::Range<usize>| {
            while ranks.clone().any(|r| state(r) == SingleCopy::Unknown)
                && std::time::Instant::now() < deadline
            {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        };
        let next = (self.me + 1) % n;
        let line = if self.me == 0 {
            wait_for(0..n);
            let refused: Vec<usize> = (0..n)
                .filter(|&r| state(r) == SingleCopy::Refused)
                .collect();
            let late = (0..n).filter(|&r| state(r) == SingleCopy::Unknown).count();
            let late = match late {
                0 => String::new(),
                k => format!(", {k} not yet tested after 2 s"),
            };
            // A refusal is most often the whole job's (a seccomp profile,
            // SHMPI_CMA=refuse); else the ranks, listed.
            let who = if refused.len() == n {
                "every rank".to_string()
            } else {
                let list: Vec<String> = refused.iter().map(usize::to_string).collect();
                format!("ranks {}", list.join(", "))
            };
            format!(
                "shmpi: single copy (CMA) refused at {} of {n} ranks ({who}; rank 0's test of rank 1: {why}){late}; \
                 large messages to them go through the rings\n",
                refused.len()
            )
        } else {
            wait_for(0..1);
            if state(0) == SingleCopy::Refused {
                return;
            }
            format!(
                "shmpi: rank {}: single copy (CMA) from rank {next} {why}; \
                 large messages to this rank go through the rings\n",
                self.me
            )
        };
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    }

    /// Finds which peers are distant (see [`placement`]): under
    /// `SHMPI_DISTANT=auto` by the start-up probe of the cache-line
    /// hand-off, which every rank of the job must run at the same point
    /// (after the start barrier, before any message) and which runs only
    /// when the ranks are at most the CPUs online; under `all` every peer,
    /// under `none` none. From then on messages to a distant peer from
    /// `SHMPI_DISTANT_RENDEZVOUS` bytes may go by rendezvous
    /// ([`rendezvous_to`](Self::rendezvous_to)).
    pub fn probe_placement(&mut self) {
        let n = self.size();
        match self.distant_mode {
            placement::DistantMode::None => return,
            placement::DistantMode::All => {
                self.distant = (0..n).map(|p| p != self.me).collect();
            }
            placement::DistantMode::Auto => {
                if n < 2 || n > wait::online_cpus() {
                    return;
                }
                self.hand_off = placement::probe(&self.seg, self.me, n);
                let limit = self.distant_ns;
                self.distant = self
                    .hand_off
                    .iter()
                    .map(|ns| ns.zip(limit).is_some_and(|(ns, limit)| ns > limit))
                    .collect();
                // A probe given up (every peer unmeasured) says nothing of
                // the placement; the ring's rates would not either then
                // (the ranks are not running at once). Where no hand-off
                // makes a peer distant (Intel), neither do slow copies.
                self.watch = limit.is_some() && self.hand_off.iter().any(Option::is_some);
                if self.watch {
                    // Large messages must reach `push_frames` to be timed.
                    self.sole_below = self.sole_below.min(self.watch_min);
                    self.eager_below = self.eager_below.min(self.watch_min);
                }
            }
        }
        if self.distant.iter().any(|&d| d) {
            self.off_quick_path();
        }
    }

    /// A peer is distant: messages from [`placement::STREAM_MIN`] bytes
    /// (whose frames to it stream) and from `SHMPI_DISTANT_RENDEZVOUS`
    /// (which may go by rendezvous) leave the quick paths, to every peer
    /// and for good (the checks they cost a near peer's messages are a
    /// few instructions against a copy of 2 KiB or more).
    fn off_quick_path(&mut self) {
        self.eager_below = self
            .eager_below
            .min(self.distant_from)
            .min(placement::STREAM_MIN);
        self.sole_below = self.sole_below.min(placement::STREAM_MIN);
    }

    /// Takes what the timed copies into the ring to `peer` said, if they
    /// said anything: the peer becomes distant or near
    /// ([`off_quick_path`](Self::off_quick_path) when distant).
    fn follow_drift(&mut self, peer: usize) {
        let Some(Some(tx)) = self.tx.get_mut(peer) else {
            return;
        };
        let Some(distant) = tx.drift.take_verdict() else {
            return;
        };
        let rate = tx.drift.rate();
        let Some(was) = self.distant.get_mut(peer) else {
            return;
        };
        if std::mem::replace(was, distant) == distant {
            return;
        }
        if distant {
            self.off_quick_path();
        }
        if self.verbose {
            let line = format!(
                "shmpi: rank {}: rank {peer} is {} now (copies into its ring at {} MB/s; {})\n",
                self.me,
                if distant { "distant" } else { "near" },
                rate,
                if distant {
                    "its frames stream, its larger messages go by rendezvous"
                } else {
                    "its messages go through the ring as written"
                }
            );
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        }
    }

    /// Whether a message of `len` bytes to `peer` goes by rendezvous
    /// because the peer is distant: from `SHMPI_DISTANT_RENDEZVOUS`,
    /// except a message of `watch_min` bytes or more that
    /// explores (the placement is followed and an exploration is due:
    /// [`placement::Drift::claim_exploration`]); it goes through the
    /// ring, to measure again.
    #[inline]
    fn distant_for(&mut self, peer: usize, len: usize) -> bool {
        len >= self.distant_from && self.is_distant(peer) && !self.explores(peer, len)
    }

    /// See [`distant_for`](Self::distant_for).
    #[inline(never)]
    fn explores(&mut self, peer: usize, len: usize) -> bool {
        if !self.watch || len < self.watch_min {
            return false;
        }
        match self.tx.get_mut(peer) {
            Some(Some(tx)) => tx.drift.claim_exploration(Instant::now()),
            _ => false,
        }
    }

    /// The start-up probe's one-way hand-off time to each rank, in ns
    /// (`None`: this rank, or not measured; see
    /// [`probe_placement`](Self::probe_placement)).
    pub fn hand_off_ns(&self) -> &[Option<u32>] {
        &self.hand_off
    }

    /// The hand-off above which the start-up probe finds a peer distant
    /// (`SHMPI_DISTANT_NS`, ns; `None`: no hand-off does).
    pub fn distant_ns(&self) -> Option<u32> {
        self.distant_ns
    }

    /// Under `SHMPI_CMA=auto`, the size from which a scoped send to any
    /// peer goes by revocable rendezvous (`SHMPI_CMA_SCOPED`; `None`: only
    /// to a distant peer).
    pub fn scoped_threshold(&self) -> Option<usize> {
        (self.scoped_from != usize::MAX).then_some(self.scoped_from)
    }

    /// Whether this rank counts `peer` as distant.
    #[inline]
    pub fn is_distant(&self, peer: usize) -> bool {
        is_far(&self.distant, peer)
    }

    /// `SHMPI_DISTANT` and the size from which a message to a distant peer
    /// may go by rendezvous (`SHMPI_DISTANT_RENDEZVOUS`; `None`: never).
    pub fn distant_policy(&self) -> (placement::DistantMode, Option<usize>) {
        (
            self.distant_mode,
            (self.distant_from != usize::MAX).then_some(self.distant_from),
        )
    }

    /// The smallest ring message whose copies may be timed while the
    /// placement is followed (`SHMPI_DISTANT_WATCH`; [`placement::Drift`]).
    pub fn watch_min(&self) -> usize {
        self.watch_min
    }

    /// Whether a message of `len` bytes to `peer` should go by rendezvous
    /// and single copy: `peer`'s self-test said it can read this
    /// process's memory, and the message reaches the threshold of its
    /// kind. Under `SHMPI_CMA=auto` a send the sender can push from its
    /// own buffer later (`pipelinable`: a blocking send) goes by
    /// rendezvous from `SHMPI_CMA_BLOCKING`, any other (it would be copied
    /// into the send queue) from `SHMPI_CMA_THRESHOLD`; under `always`
    /// every send from `SHMPI_CMA_THRESHOLD`. From `SHMPI_CMA_SPLIT` on
    /// the receiver shares the copy with the sender
    /// ([`split_ok`](Self::split_ok)). The defaults depend on the CPU
    /// ([`cma::Defaults`]).
    ///
    /// Below those thresholds, a message of `SHMPI_DISTANT_RENDEZVOUS`
    /// bytes or more to a distant peer goes by rendezvous too
    /// ([`probe_placement`](Self::probe_placement)).
    #[inline]
    pub fn rendezvous_to(&mut self, peer: usize, len: usize, pipelinable: bool) -> bool {
        let Some(from) = self.rendezvous_from(pipelinable) else {
            return false;
        };
        (len >= from || self.distant_for(peer, len)) && self.reads_us(peer)
    }

    /// The size from which a send goes by rendezvous to a near peer under
    /// `SHMPI_CMA`: a blocking send's (`pipelinable`) from
    /// `SHMPI_CMA_BLOCKING` under `auto`, others' from
    /// `SHMPI_CMA_THRESHOLD`; `None` when single copy is off.
    #[inline]
    fn rendezvous_from(&self, pipelinable: bool) -> Option<usize> {
        match self.cma_mode {
            CmaMode::Auto if pipelinable => Some(self.blocking_from),
            CmaMode::Auto | CmaMode::Always => Some(self.cma_threshold),
            CmaMode::Off | CmaMode::Refuse => None,
        }
    }

    /// Whether `peer` is another rank of this job whose single-copy
    /// self-test passed: it can read (and be written by) this process.
    #[inline]
    fn reads_us(&self, peer: usize) -> bool {
        peer != self.me
            && peer < self.size()
            && self.seg.control(peer).single_copy() == SingleCopy::Usable
    }

    /// Whether a blocking send of `len` bytes to `peer`, a near rank of
    /// this job, would go by rendezvous ([`rendezvous_to`](Self::rendezvous_to)
    /// without its distant case, and without its side effects): for the
    /// collectives' synchronous sends (`coll::tuning`, `SHMPI_COLL_SYNC`).
    pub fn blocking_rendezvous(&self, peer: usize, len: usize) -> bool {
        self.rendezvous_from(true).is_some_and(|from| len >= from) && self.reads_us(peer)
    }

    /// [`rendezvous_to`](Self::rendezvous_to) for C's `MPI_Isend`, whose
    /// buffer is lent for the request's life: under `SHMPI_CMA=auto` from
    /// `SHMPI_CMA_C_ISEND` (Intel 16 KiB: below it the ring takes a
    /// window of them faster, and a buffer written just before goes
    /// faster through the ring anyway; `docs/tuning.md`), and from
    /// `SHMPI_CMA_C_ISEND_QUIET` (Intel 8 KiB) while `peer` has taken
    /// every earlier message of this rank: none of this rank's rendezvous
    /// sends to it is `waiting` for its ack (the layer above counts
    /// them) and the ring to it is empty (`ring_drained`):
    /// a halo exchange's send, where both ranks copying in and out of the
    /// rings took longer than one read each.
    #[inline]
    pub fn rendezvous_c_isend_to(&mut self, peer: usize, len: usize, waiting: bool) -> bool {
        match self.cma_mode {
            CmaMode::Auto => {
                let by_size = len >= self.c_isend_from
                    || (len >= self.c_isend_quiet
                        && !waiting
                        && self.reads_us(peer)
                        && self.ring_drained(peer));
                (by_size || self.distant_for(peer, len)) && self.reads_us(peer)
            }
            _ => self.rendezvous_to(peer, len, true),
        }
    }

    /// Whether `peer` has taken every frame this rank sent it (its ring
    /// from this rank is empty; a peer of this job).
    fn ring_drained(&mut self, peer: usize) -> bool {
        match self.tx.get_mut(peer) {
            Some(Some(tx)) => tx.open.is_none() && tx.queue.is_empty() && tx.prod.drained(),
            _ => true,
        }
    }

    /// The size from which C's `MPI_Isend` goes by rendezvous under
    /// `SHMPI_CMA=auto` (`SHMPI_CMA_C_ISEND`; `None`: never).
    pub fn c_isend_threshold(&self) -> Option<usize> {
        (self.c_isend_from != usize::MAX).then_some(self.c_isend_from)
    }

    /// The size from which it does while its receiver has taken every
    /// earlier message of this rank (`SHMPI_CMA_C_ISEND_QUIET`; `None`:
    /// never, or only from [`c_isend_threshold`](Self::c_isend_threshold)).
    pub fn c_isend_quiet_threshold(&self) -> Option<usize> {
        (self.c_isend_quiet < self.c_isend_from).then_some(self.c_isend_quiet)
    }

    /// The size from which a blocking send goes by rendezvous under
    /// `SHMPI_CMA=auto` (`SHMPI_CMA_BLOCKING`; `None`: never).
    pub fn blocking_threshold(&self) -> Option<usize> {
        (self.blocking_from != usize::MAX).then_some(self.blocking_from)
    }

    /// The largest message whose ring frame is demoted to the shared cache
    /// after publishing (`SHMPI_DEMOTE`; `None`: none, also where the CPU
    /// cannot).
    pub fn demote_limit(&self) -> Option<usize> {
        self.demote
            .demotes()
            .then(|| self.demote.max_payload().saturating_sub(SOLE_HEADER))
    }

    /// The largest message after whose ring frame (when it follows a
    /// pause) the producer claims the next frame's lines
    /// (`ring::Demote::warms`; `SHMPI_PREFETCHW`; `None`: no claims).
    pub fn claim_limit(&self) -> Option<usize> {
        self.demote
            .warms()
            .then(|| self.demote.max_payload().saturating_sub(SOLE_HEADER))
    }

    /// The producers' hot window in bytes (`SHMPI_HOT_WINDOW`; 0: none;
    /// a ring's is at most a quarter of its capacity).
    pub fn hot_window(&self) -> usize {
        self.hot
    }

    /// The largest buffer a window of receives into one buffer
    /// (`p2p::Shared::recv_many_bytes`) takes its front into straight from
    /// the ring (`SHMPI_MANY_DIRECT`; 0: never; by CPU,
    /// `cma::Defaults::many_direct`).
    pub fn many_direct_max(&self) -> usize {
        self.many_direct
    }

    /// How long (ns) a window of receives into one buffer waits after a
    /// look that took some of its messages but not all, so that its
    /// sender runs ahead (`SHMPI_WINDOW_PACE`; 0: no wait; by CPU,
    /// `cma::Defaults::window_pace_ns`).
    pub fn window_pace_ns(&self) -> u32 {
        self.window_pace_ns
    }

    /// The size from which a rendezvous copy from a peer of this job is
    /// shared with its sender (`SHMPI_CMA_SPLIT`; `None`: never).
    pub fn split_threshold(&self) -> Option<usize> {
        (self.split_from != usize::MAX).then_some(self.split_from)
    }

    /// The size from which the copy of a blocking send's rendezvous is
    /// shared (`SHMPI_CMA_SPLIT_BLOCKING`; `None`: never).
    pub fn split_blocking_threshold(&self) -> Option<usize> {
        (self.split_blocking_from != usize::MAX).then_some(self.split_blocking_from)
    }

    /// The shortest rendezvous message of `kind` whose copy the receiver
    /// shares with its sender (`usize::MAX`: none): a posted send's from
    /// [`split_threshold`](Self::split_threshold), a waiting one's from
    /// [`split_blocking_threshold`](Self::split_blocking_threshold), and
    /// one a waiting sender asks for (its recent buffers were slow to
    /// read, [`detour`](Self::detour)) from `fresh::SHARE_MIN`, where
    /// blocking sends' copies are shared at all.
    #[inline]
    fn split_min(&self, kind: SplitKind) -> usize {
        match kind {
            SplitKind::Posted => self.split_from,
            SplitKind::Waiting => self.split_blocking_from,
            SplitKind::Asked if self.split_blocking_from == usize::MAX => usize::MAX,
            SplitKind::Asked => fresh::SHARE_MIN.min(self.split_blocking_from),
        }
    }

    /// Whether the receiver of a rendezvous message of `kind`, of `len`
    /// bytes at `addr` in `peer`, shares its copy with the sender: from a
    /// peer of this job, from the kind's size on (`split_min`: a posted
    /// send's from [`split_threshold`](Self::split_threshold), a waiting
    /// one's from [`split_blocking_threshold`](Self::split_blocking_threshold),
    /// one asked for from [`detour_shared_from`](Self::detour_shared_from)).
    /// Out of a pool only where both ranks' single-copy self-tests
    /// passed: the receiver then copies its front out of the pool's
    /// mapping and the sender writes the back by system call, as for a
    /// rendezvous by single copy (a message read by one core out of lines
    /// its sender had just written, or of a megabyte and more, took 1.3-2x
    /// as long as the shared copy; `docs/tuning.md`, `SHMPI_POOL_THRESHOLD`).
    #[inline]
    pub fn split_ok(&self, peer: usize, addr: u64, len: usize, kind: SplitKind) -> bool {
        len >= self.split_min(kind)
            && peer != self.me
            && peer < self.size()
            && (addr & pool::POOL_BIT == 0 || self.both_reach(peer))
    }

    /// Whether this rank's and `peer`'s single-copy self-tests both
    /// passed (each may read and write the other's memory by system
    /// call; `peer` is a rank of this job).
    #[inline(never)]
    fn both_reach(&self, peer: usize) -> bool {
        self.seg.control(self.me).single_copy() == SingleCopy::Usable
            && self.seg.control(peer).single_copy() == SingleCopy::Usable
    }

    /// The address in this process of `addr`, a pool address
    /// ([`pool_address`](Self::pool_address)) of this rank's own pool,
    /// or `addr` itself when it is not one; `None` when it names bytes
    /// outside this rank's pool.
    #[inline]
    pub fn local_address(&self, addr: u64, len: usize) -> Option<u64> {
        if addr & pool::POOL_BIT == 0 {
            return Some(addr);
        }
        self.shared.get()?.address_of(addr & !pool::POOL_BIT, len)
    }

    /// How a judged blocking send of `len` bytes ([`judges`](Self::judges))
    /// leaves the plain single copy while its receiver finds its buffers
    /// slow to read: a shared copy from where the receiver shares the
    /// copies asked for ([`detour_shared_from`](Self::detour_shared_from)),
    /// else the ring.
    #[inline]
    pub fn detour(&self, len: usize) -> fresh::Detour {
        if len >= self.split_min(SplitKind::Asked) {
            fresh::Detour::Share
        } else {
            fresh::Detour::Ring
        }
    }

    /// Where a judged blocking send's detour ([`detour`](Self::detour))
    /// is a shared copy rather than the ring: from `fresh::SHARE_MIN` (or
    /// the blocking sends' shared-copy size, if smaller) where blocking
    /// sends' copies are shared at all (`None`: nowhere).
    pub fn detour_shared_from(&self) -> Option<usize> {
        Some(self.split_min(SplitKind::Asked)).filter(|&s| s != usize::MAX)
    }

    /// The sender's side of a rendezvous request of `len` bytes at `addr`
    /// just sent to `peer`: when the receiver may offer it a shared copy
    /// ([`split_ok`](Self::split_ok) from the receiver's side), fetches the
    /// receiver's claim word for its claim
    /// ([`crate::shm::ControlBlock::split_fetch`]) while the request travels.
    #[inline]
    pub fn split_ready(&self, peer: usize, addr: u64, len: usize, kind: SplitKind) {
        if self.split_ok(peer, addr, len, kind) {
            self.seg.control(peer).split_fetch();
        }
    }

    /// The receiver's offer of the back part of its next shared copy
    /// (see [`crate::shm::Split`]): a new generation, which goes to the
    /// sender in a frame of the layer above. Nothing is written: the
    /// offer stands while the claim word is at an earlier generation.
    pub fn split_offer(&mut self) -> u64 {
        self.split_gen += 1;
        self.split_gen
    }

    /// The receiver's end of shared copy `gen` with `peer`, once it has
    /// copied the front part: true when it must copy the back itself (it
    /// revoked the offer before the sender claimed it, or the sender's
    /// write failed), false when the sender wrote it. While the sender is
    /// writing it waits, yielding after a short spin.
    ///
    /// # Errors
    /// `Other` when the sender's process died while it held the claim.
    ///
    /// It also learns from the outcome where its next shared copy with
    /// `peer` should split ([`split_front`](Self::split_front)): a sender
    /// found done at the first look finished first, so this rank takes a
    /// step less next time; one still writing, a step more. A revoked
    /// offer teaches nothing (the sender was busy elsewhere). Each
    /// [`SplitKind`] learns apart: they start from different splits, and
    /// their buffers differ (an asked-for copy's were slow to read).
    pub fn split_settle(&mut self, peer: usize, gen: u64, kind: SplitKind) -> crate::Result<bool> {
        let (revoked, waited) = self.split_wait(peer, gen)?;
        if !revoked {
            if let Some(s) = self.split_skew.get_mut(peer).map(|s| &mut s[kind as usize]) {
                let step = if waited { 1 } else { -1 };
                *s = (*s + step).clamp(-SPLIT_SKEW_MAX, SPLIT_SKEW_MAX);
            }
        }
        Ok(revoked)
    }

    /// Where this rank's part of a shared copy of `n` bytes from `peer`
    /// into its buffer at `dst` ends (the sender writes from there on):
    /// half at first, [`SPLIT_HEAD`] more when the sender does not wait in
    /// the library ([`SplitKind::Posted`]), moved by what the earlier
    /// copies of this kind with `peer` taught
    /// ([`split_settle`](Self::split_settle)), so that both sides finish
    /// together whatever their placement. Ends on a cache line of `dst`'s,
    /// so the two writers share no line.
    pub fn split_front(&self, peer: usize, n: usize, dst: u64, kind: SplitKind) -> usize {
        let skew = self.split_skew.get(peer).map_or(0, |s| s[kind as usize]);
        let moved = (n / 1024) as isize * isize::from(skew);
        let head = if kind == SplitKind::Posted {
            SPLIT_HEAD
        } else {
            0
        };
        let want = ((n + head) / 2).saturating_add_signed(moved).min(n);
        let end = dst.wrapping_add(want as u64) & !63;
        (end.saturating_sub(dst) as usize).min(n)
    }

    /// [`split_settle`](Self::split_settle)'s wait: (revoked, whether the
    /// sender was still writing at the first look).
    fn split_wait(&self, peer: usize, gen: u64) -> crate::Result<(bool, bool)> {
        let cb = self.seg.control(self.me);
        let mut rounds = 0u32;
        let mut waited = false;
        loop {
            // (A part the sender gave back, `Offered`, is revoked too.)
            match cb.split_revoke(gen) {
                Ok(()) => return Ok((true, waited)),
                Err(Split::Done) => return Ok((false, waited)),
                Err(Split::Taken) => waited = true,
                Err(state) => unreachable!("only this rank revokes: {state:?}"),
            }
            if !wait::step_round(&mut rounds, || self.seg.control(peer).pid()) {
                let pid = self.seg.control(peer).pid();
                return Err(crate::error::Error::new(
                    crate::error::ErrorClass::Other,
                    format!(
                        "rank {peer} (pid {pid}) died while writing its part of a \
                         rendezvous message into this rank"
                    ),
                ));
            }
        }
    }

    /// The sender's part of shared copy `gen` offered by `peer`: claims the
    /// back part and writes `len` bytes of this process's memory at `src`
    /// to `dst` in `peer`'s process (`process_vm_writev`). False when the
    /// receiver revoked first (it copies the bytes itself) or the write
    /// failed (the claim goes back to the receiver, which then copies
    /// them). `src..src + len` must be the unsent part of a rendezvous
    /// send of this process that is not yet acked, so that its bytes stay
    /// as they are; the kernel checks both ranges (`EFAULT`).
    pub fn split_write(&self, peer: usize, gen: u64, src: u64, len: usize, dst: u64) -> bool {
        if peer >= self.size() || peer == self.me {
            return false;
        }
        let cb = self.seg.control(peer);
        if !cb.split_claim(gen) {
            return false;
        }
        let ok = cma::transfer_runs(
            cb.cma_task(),
            &[(dst, len)],
            src as usize as *mut u8,
            len,
            true,
        )
        .is_ok();
        cb.split_set(gen, if ok { Split::Done } else { Split::Offered });
        ok
    }

    /// Opens a revocable rendezvous offer to `peer` of the bytes at `addr`
    /// in this process (see `shm::offers`; the length travels in the
    /// request); `None` when all of this rank's offer entries are in use
    /// (the send then goes through the ring).
    pub fn open_offer(&mut self, peer: usize, addr: u64) -> Option<Offer> {
        let table = self.seg.offers(self.me);
        let n = crate::shm::offers::OFFERS;
        let idx = (0..n)
            .map(|k| (self.offer_hint + k) % n)
            .find(|&i| table.entry(i).is_free())?;
        self.offer_hint = (idx + 1) % n;
        self.offer_gen += 1;
        table.entry(idx).open(self.offer_gen, addr);
        Some(Offer::new(
            self.seg.clone(),
            self.me,
            peer,
            idx,
            self.offer_gen,
        ))
    }

    /// The receiver's claim of `peer`'s revocable offer `(idx, gen)`:
    /// the address of the bytes in `peer`'s process, waiting out a move
    /// (two stores in the sender, its copy already made). Once claimed,
    /// the bytes stay there until [`finish_offer`](Self::finish_offer).
    ///
    /// # Errors
    /// `Other` when the sender took the offer back (its transport went
    /// away with the send unfinished) or the request names no entry.
    pub fn claim_offer(&self, peer: usize, (idx, gen): (u32, u64)) -> crate::Result<u64> {
        let gone = |why: &str| {
            Err(crate::error::Error::new(
                crate::error::ErrorClass::Other,
                format!("rendezvous message from rank {peer}: {why}"),
            ))
        };
        if peer >= self.size() || idx as usize >= crate::shm::offers::OFFERS {
            return gone("the request names no offer entry");
        }
        let e = self.seg.offers(peer).entry(idx as usize);
        let mut rounds = 0u32;
        loop {
            match e.claim(gen) {
                Ok(a) => return Ok(a),
                Err(Some(crate::shm::offers::OfferState::Moving)) => {
                    if !wait::step_round(&mut rounds, || self.seg.control(peer).pid()) {
                        return gone("the sender died while moving it");
                    }
                }
                Err(_) => return gone("the sender withdrew it before it was read"),
            }
        }
    }

    /// The receiver is done with `peer`'s claimed offer `(idx, gen)`
    /// (read, or the read failed): the sender may let the bytes go.
    pub fn finish_offer(&self, peer: usize, (idx, gen): (u32, u64)) {
        self.seg.offers(peer).entry(idx as usize).finish(gen);
    }

    /// [`claim_offer`](Self::claim_offer), a read of everything into
    /// `dst`, [`finish_offer`](Self::finish_offer).
    ///
    /// # Errors
    /// As `claim_offer`, or the read's.
    pub fn read_offered(
        &self,
        peer: usize,
        offer: (u32, u64),
        dst: &mut [u8],
    ) -> crate::Result<()> {
        let addr = self.claim_offer(peer, offer)?;
        let r = self.read_from(peer, addr, dst);
        self.finish_offer(peer, offer);
        r
    }

    /// Whether a scoped send of `len` bytes to `peer` goes by revocable
    /// rendezvous: under `SHMPI_CMA=auto` from `SHMPI_CMA_SCOPED` (Intel:
    /// 32 KiB; elsewhere never, since on AMD a window of them to a near
    /// peer runs faster through the ring, whose copies in and out overlap
    /// on two cores), and to a distant peer from
    /// `SHMPI_DISTANT_RENDEZVOUS`; under `always` from
    /// `SHMPI_CMA_THRESHOLD`. The receiver must be able to read this
    /// process.
    #[inline]
    pub fn offer_to(&mut self, peer: usize, len: usize) -> bool {
        let by_size = match self.cma_mode {
            CmaMode::Auto => len >= self.scoped_from || self.distant_for(peer, len),
            CmaMode::Always => len >= self.cma_threshold,
            CmaMode::Off | CmaMode::Refuse => false,
        };
        by_size && self.reads_us(peer)
    }

    /// The size from which messages go by rendezvous, when the receiver
    /// can read its sender's memory.
    pub fn cma_threshold(&self) -> usize {
        self.cma_threshold
    }

    /// The size from which a message sent from a buffer of this rank's
    /// shared pool goes by rendezvous and one copy out of the pool
    /// (`SHMPI_POOL_THRESHOLD`).
    pub fn pool_threshold(&self) -> usize {
        self.pool_threshold
    }

    /// The memory a receive touches (its buffers plus the sender's, as
    /// `bytes::streams` counts them) from which its copies use
    /// non-temporal stores (`bytes::copy_streaming`;
    /// `SHMPI_STREAM_THRESHOLD`).
    pub fn stream_threshold(&self) -> usize {
        self.stream_threshold
    }

    /// How single copy is configured (`SHMPI_CMA`).
    pub fn cma_mode(&self) -> CmaMode {
        self.cma_mode
    }

    /// The row of defaults in use ([`cma::CpuRow::for_this_process`]).
    pub fn cpu_row(&self) -> cma::CpuRow {
        self.cpu_row
    }

    /// Bytes of each ring.
    pub fn ring_capacity(&self) -> usize {
        self.layout.ring_capacity()
    }

    /// Whether the rendezvous of a blocking send of `len` bytes is judged
    /// (`fresh`): under `SHMPI_CMA=auto`, from the blocking rendezvous
    /// size up to the shared copy's (`SHMPI_CMA_BLOCKING` ..
    /// `SHMPI_CMA_SPLIT_BLOCKING`, below `fresh::JUDGED_BELOW`), unless
    /// `SHMPI_CMA_SLOW_READ=0`. Its receiver times its read
    /// ([`read_judged`](Self::read_judged)) and its sender takes a detour
    /// for a while after slow ones ([`detour`](Self::detour),
    /// `fresh::Verdicts`, kept by the layer above).
    #[inline]
    pub fn judges(&self, len: usize) -> bool {
        self.clock.is_some() && len >= self.blocking_from && len < self.judged_below()
    }

    /// Where the judged lengths of blocking sends end: the shared copy's
    /// size, at most `fresh::JUDGED_BELOW`.
    #[inline]
    fn judged_below(&self) -> usize {
        self.split_blocking_from.min(fresh::JUDGED_BELOW)
    }

    /// The same for the sends that do not wait.
    #[inline]
    fn judged_posted_below(&self) -> usize {
        self.split_from.min(fresh::JUDGED_BELOW)
    }

    /// Whether the rendezvous of a send that does not wait of `len` bytes
    /// is judged: C's `MPI_Isend` (`c`) from `SHMPI_CMA_C_ISEND_QUIET`
    /// (where it may go by rendezvous; `SHMPI_CMA_C_ISEND` without it), a plain
    /// `isend` from `SHMPI_CMA_THRESHOLD`, up to the shared copy's size
    /// (`SHMPI_CMA_SPLIT`, below `fresh::JUDGED_BELOW`), under
    /// `SHMPI_CMA=auto`. Its detour after slow reads is the ring.
    #[inline]
    pub fn judges_posted(&self, len: usize, c: bool) -> bool {
        let from = if c {
            self.c_isend_quiet
        } else {
            self.cma_threshold
        };
        self.clock.is_some() && len >= from && len < self.judged_posted_below()
    }

    /// The lengths [`judges_posted`](Self::judges_posted) covers: from
    /// (C's `MPI_Isend`, a plain `isend`), below; `None` where it covers
    /// none.
    pub fn judged_posted_range(&self) -> Option<(usize, usize, usize)> {
        let below = self.judged_posted_below();
        (self.clock.is_some() && self.c_isend_quiet.min(self.cma_threshold) < below).then_some((
            self.c_isend_quiet,
            self.cma_threshold,
            below,
        ))
    }

    /// The lengths [`judges`](Self::judges) covers (from, below) and the
    /// slow mark for 8 KiB in ns; `None` where it covers none.
    pub fn judged_range(&self) -> Option<(usize, usize, u32)> {
        let ns = self.slow_read?;
        (self.clock.is_some() && self.blocking_from < self.judged_below()).then_some((
            self.blocking_from,
            self.judged_below(),
            ns,
        ))
    }

    /// [`read_from`](Self::read_from) for a plain rendezvous (not
    /// shared) that its sender judges ([`judges`](Self::judges),
    /// [`judges_posted`](Self::judges_posted); its request says so): where
    /// this rank has a clock, the length is below `fresh::JUDGED_BELOW`
    /// and the bytes are in the sender's process (not its pool), the read
    /// is timed: `Some(true)` when it took longer than
    /// `SHMPI_CMA_SLOW_READ` allows for its length (`fresh::slow`),
    /// `Some(false)` when not, `None` when it was not timed (also before
    /// the clock's rate is known, `fresh::Clock`).
    ///
    /// # Errors
    /// As [`read_from`](Self::read_from).
    pub fn read_judged(
        &mut self,
        peer: usize,
        addr: u64,
        dst: &mut [u8],
    ) -> crate::Result<Option<bool>> {
        let n = dst.len();
        let timed = self.clock.is_some() && n < fresh::JUDGED_BELOW && addr & pool::POOL_BIT == 0;
        let (Some(per_8k), true) = (self.slow_read, timed) else {
            return self.read_from(peer, addr, dst).map(|()| None);
        };
        let t0 = self.clock.as_ref().map_or(0, fresh::Clock::ticks);
        self.read_from(peer, addr, dst)?;
        let ns = self.clock.as_mut().and_then(|c| {
            let ticks = c.ticks().wrapping_sub(t0);
            c.ns(ticks)
        });
        Ok(ns.map(|ns| fresh::slow(ns, n, per_8k)))
    }

    /// Copies `dst.len()` bytes at address `addr` of `peer`'s process
    /// into `dst` (the receiver's half of a rendezvous).
    ///
    /// # Errors
    /// `Other` with the OS error when the kernel refuses or the range is
    /// not mapped in the peer.
    pub fn read_from(&self, peer: usize, addr: u64, dst: &mut [u8]) -> crate::Result<()> {
        if addr & pool::POOL_BIT != 0 {
            let view = match self.peer_pools[peer].get() {
                Some(v) => v,
                None => {
                    let v = pool::PeerPool::open(&pool::pool_path(self.seg.path(), peer))?;
                    let _ = self.peer_pools[peer].set(v);
                    self.peer_pools[peer].get().expect("just set")
                }
            };
            let stream = bytes::streams(dst.len(), 0, self.stream_threshold);
            return view.read(addr & !pool::POOL_BIT, dst, stream);
        }
        let (pid, task) = (
            self.seg.control(peer).pid(),
            self.seg.control(peer).cma_task(),
        );
        cma::read(task, addr, dst).map_err(|e| {
            crate::error::Error::new(
                crate::error::ErrorClass::Other,
                format!(
                    "single-copy read of {} bytes from rank {peer} (pid {pid}) failed: {e}",
                    dst.len()
                ),
            )
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.me
    }

    /// Ranks in the job.
    pub fn size(&self) -> usize {
        self.layout.nranks()
    }

    /// The segment.
    pub fn segment(&self) -> &Arc<Segment> {
        &self.seg
    }

    /// Largest payload sent as a single frame; larger messages are
    /// fragmented.
    pub fn fragment_size(&self) -> usize {
        self.fragment
    }

    /// Largest fragment of a message to a distant peer
    /// ([`placement::DEFAULT_DISTANT_FRAGMENT`], `SHMPI_DISTANT_FRAGMENT`).
    pub fn distant_fragment_size(&self) -> usize {
        self.distant_fragment
    }

    #[inline(always)]
    fn tx(&mut self, peer: usize) -> &mut Tx {
        assert!(peer < self.tx.len() && peer != self.me, "bad peer {peer}");
        if self.tx[peer].is_none() {
            self.open_tx(peer);
        }
        self.tx[peer].as_mut().expect("just made")
    }

    /// Makes the producer end of the ring to `peer` (on its first use).
    #[cold]
    #[inline(never)]
    fn open_tx(&mut self, peer: usize) {
        let (seg, layout, from, to) = self.ring_home(peer);
        let (h, d) = layout.ring(from, to);
        let cap = layout.ring_capacity();
        let hp = ring_header(&seg, h);
        let data = ring_data(&seg, d, cap);
        // This side's page-table entries for the ring, made now rather
        // than by a fault every 4 KiB of its first lap (the receiver
        // made its own in `new`).
        seg.populate(h, core::mem::size_of::<RingHeader>());
        seg.populate(d, cap);
        let owner: ring::Owner = seg;
        // SAFETY: the peer initialised this header and reserved its
        // region before the start barrier (a bridge's before the
        // connection's handshake ended), which every transport user
        // passes before sending; this rank is the only producer of ring
        // me → peer; the segment outlives the handle via `owner`.
        let mut prod =
            unsafe { ring::producer_at(hp, data, owner) }.expect("layout gives valid rings");
        prod.set_demote(self.demote);
        // At most a quarter of the ring (`set_hot` turns off a larger
        // one): a job's small rings keep a window of their size.
        prod.set_hot(self.hot.min(cap / 4));
        self.tx[peer] = Some(Tx {
            prod,
            hdr: HeaderPtr(hp),
            header_off: h,
            open: None,
            stalled: false,
            rx_seen: 0,
            // The first frame follows no other.
            looked: self.looks.wrapping_sub(1),
            turns: true,
            drift: placement::Drift::default(),
            queue: VecDeque::new(),
            next_seq: 0,
            done_seq: 0,
        });
    }

    /// Where the ring from this rank to `peer` lives: the segment, its
    /// layout, and the sender's and receiver's indices in it.
    fn ring_home(&self, peer: usize) -> (Arc<Segment>, Layout, usize, usize) {
        match peer.checked_sub(self.size()) {
            None => (self.seg.clone(), self.layout, self.me, peer),
            Some(i) => {
                let f = self.far[i].as_ref().expect("a peer of a removed bridge");
                let b = self.bridges[f.bridge]
                    .as_ref()
                    .expect("bridge of a live peer");
                (b.seg.clone(), b.layout, b.me, f.at)
            }
        }
    }

    /// The control block of `peer` (in its own job's segment).
    fn control(&self, peer: usize) -> &crate::shm::ControlBlock {
        match peer.checked_sub(self.size()) {
            None => self.seg.control(peer),
            Some(i) => {
                let f = self.far[i].as_ref().expect("a peer of a removed bridge");
                let b = self.bridges[f.bridge]
                    .as_ref()
                    .expect("bridge of a live peer");
                b.remote.control(f.rank)
            }
        }
    }

    /// Sends `data` to `peer` if the ring has room, as far as it has room.
    /// Messages to one peer leave in call order: while earlier messages
    /// are queued, nothing of this one is sent.
    ///
    /// # Panics
    /// If `peer` is this rank or out of range (the layer above checks).
    #[inline(always)]
    pub fn send(&mut self, peer: usize, env: &Envelope, data: &[u8]) -> Sent {
        // The common case first: a message that fits one frame, to a peer
        // with nothing queued or open, into a ring with room.
        if data.len() < self.sole_below && self.try_sole(peer, env, data) {
            return Sent::Done;
        }
        self.send_slow(peer, env, data)
    }

    /// [`send`](Self::send) for a message that is not one sole frame now.
    #[inline(never)]
    fn send_slow(&mut self, peer: usize, env: &Envelope, data: &[u8]) -> Sent {
        if self.try_sole_untimed(peer, env, data) {
            return Sent::Done;
        }
        let mut out = OutMsg {
            peer,
            env: *env,
            total: data.len(),
            sent: 0,
            started: false,
            id: self.next_msg,
        };
        self.next_msg += 1;
        if self.resume(&mut out, data) {
            Sent::Done
        } else {
            Sent::Partial(out)
        }
    }

    /// While the placement is followed, messages of `watch_min` bytes or
    /// more leave the quick path (`sole_below`) so that one in
    /// [`placement::SAMPLE_EVERY`] can be timed. To a near peer the others
    /// need not: a message that fits one frame and is not the one to time
    /// takes the quick path from here (its frame is written the same way)
    /// and, once written there, counts as seen ([`skipped`](Self::skipped);
    /// one the quick path has no room for goes on to `push_frames`, whose
    /// `Drift::start` counts it). Through `push_frames` an 8 KiB message
    /// took 0.54-0.57 µs one way on one Zen 4 CCD against 0.50 by the
    /// quick path (`docs/tuning.md`, "Following the placement").
    ///
    /// `Some(warm)`: the message may take the quick path; the ring was
    /// `warm` (had lapped) when that was decided.
    #[inline]
    fn untimed_sole(&self, peer: usize, len: usize) -> Option<bool> {
        if !self.watch || len < self.watch_min || len > self.fragment || self.is_distant(peer) {
            return None;
        }
        let tx = self.tx.get(peer)?.as_ref()?;
        let warm = tx.prod.has_lapped();
        (tx.open.is_none() && tx.queue.is_empty() && tx.drift.skips(warm)).then_some(warm)
    }

    /// A message that [`untimed_sole`](Self::untimed_sole) let go untimed
    /// (the ring `warm` then) went into `peer`'s ring by the quick path:
    /// it counts as seen ([`placement::Drift::skipped`]).
    fn skipped(&mut self, peer: usize, warm: bool) {
        if let Some(Some(tx)) = self.tx.get_mut(peer) {
            tx.drift.skipped(warm);
        }
    }

    /// The eager fast path: sends `data` to `peer`, a rank of this job, as
    /// one sole frame when it is short enough that neither single copy nor
    /// the pool could apply, nothing stands before it and the ring has
    /// room. False: nothing done; [`send`](Self::send) decides.
    #[inline(always)]
    pub fn try_send_eager(&mut self, peer: usize, env: &Envelope, data: &[u8]) -> bool {
        // A peer out of range, or this rank, has no producer end: the
        // lookup in `try_sole` sends it to `try_sole_first`, which says no.
        if data.len() < self.eager_below {
            return self.try_sole(peer, env, data);
        }
        self.try_eager_untimed(peer, env, data)
    }

    /// See [`try_send_eager`](Self::try_send_eager): a message that only
    /// the watch kept from the quick path (it is below the limit that
    /// `eager_below` started from), sent so when it is not to be timed.
    #[inline(never)]
    fn try_eager_untimed(&mut self, peer: usize, env: &Envelope, data: &[u8]) -> bool {
        let limit = eager_limit(
            self.fragment,
            self.cma_threshold,
            self.blocking_from,
            self.pool_threshold,
        );
        data.len() < limit && self.try_sole_untimed(peer, env, data)
    }

    /// The quick path for a message of the watch minimum or more that is
    /// not to be timed ([`untimed_sole`](Self::untimed_sole)): true when
    /// it went into the ring whole, then counted as seen
    /// ([`skipped`](Self::skipped)); false with nothing done or counted
    /// (`push_frames` then counts it).
    #[inline]
    fn try_sole_untimed(&mut self, peer: usize, env: &Envelope, data: &[u8]) -> bool {
        let Some(warm) = self.untimed_sole(peer, data.len()) else {
            return false;
        };
        let sent = self.try_sole(peer, env, data);
        if sent {
            self.skipped(peer, warm);
        }
        sent
    }

    /// Pushes `data` as one sole frame if nothing stands before it and the
    /// ring has room; false (nothing done) otherwise. Counts the message
    /// (`next_msg`) when it is sent.
    ///
    /// Inlined into the eager send: what runs between a received frame
    /// and the reply's header store costs a ping-pong its whole length
    /// (`docs/benchmarks.md`, "Issue 6, eleventh pass"), so everything
    /// but the lookup, the checks and the stores is out of line, and the
    /// fast path keeps few values alive (no saved registers to spill).
    #[inline(always)]
    fn try_sole(&mut self, peer: usize, env: &Envelope, data: &[u8]) -> bool {
        let looks = self.looks;
        let Some(Some(tx)) = self.tx.get_mut(peer) else {
            return self.try_sole_first(peer, env, data);
        };
        if tx.open.is_some() || !tx.queue.is_empty() {
            // Other messages to the peer come first.
            return ring::refused();
        }
        // No look for incoming messages since the last frame to the peer:
        // this one is a burst's (`looks`).
        tx.prod.set_in_burst(tx.looked == looks);
        if !tx.prod.push_quick(&wire::sole_words(env), data) {
            return self.try_sole_reserve(peer, env, data);
        }
        self.sole_sent(peer);
        true
    }

    /// [`try_sole`](Self::try_sole) to a peer not sent to before: makes
    /// the ring's producer end, then tries once more.
    #[cold]
    #[inline(never)]
    fn try_sole_first(&mut self, peer: usize, env: &Envelope, data: &[u8]) -> bool {
        if peer >= self.size() || peer == self.me {
            return false;
        }
        self.tx(peer);
        self.try_sole(peer, env, data)
    }

    /// [`try_sole`](Self::try_sole) where the quick push found no room
    /// before the lap's end or the cached head: a reservation, which
    /// wraps and re-reads the consumer's head.
    #[inline(never)]
    fn try_sole_reserve(&mut self, peer: usize, env: &Envelope, data: &[u8]) -> bool {
        let tx = self.tx(peer);
        let Ok(mut r) = tx.prod.reserve(SOLE_HEADER + data.len()) else {
            return false;
        };
        r.write(0, &wire::encode_sole(env));
        r.write(SOLE_HEADER, data);
        r.commit();
        self.sole_sent(peer);
        true
    }

    /// The bookkeeping after a sole frame to `peer` is published: the
    /// hot window's ping-pong test, the message count, the peer's
    /// doorbell; then the demotion of a 2-4 KiB frame, in chunks until the
    /// peer's own frame is in (`Producer::demote_in_chunks`).
    #[inline(never)]
    fn sole_sent(&mut self, peer: usize) {
        self.next_msg += 1;
        // (The ring was just pushed on, so its producer end exists; the
        // doorbell below is rung in any case.)
        if let Some(Some(tx)) = self.tx.get_mut(peer) {
            tx.stalled = false;
            tx.looked = self.looks;
            // A strict ping-pong keeps its rings' laps in the hot window
            // (`Producer::end_lap_early`); anything with two frames in a
            // row goes through the ring (a stream through a few lines
            // lost 40% of its small-message bandwidth here).
            if self.hot != 0 {
                let rx_pos = self
                    .rx
                    .get(peer)
                    .and_then(Option::as_ref)
                    .map_or(0, |r| r.cons.position());
                tx.turns &= std::mem::replace(&mut tx.rx_seen, rx_pos) != rx_pos;
                if tx.prod.at_hot_end() {
                    if tx.turns {
                        tx.prod.end_lap_early();
                    }
                    tx.turns = true;
                }
            }
        }
        self.notify(peer);
        if let Some(Some(tx)) = self.tx.get_mut(peer) {
            if tx.prod.chunks_due() {
                // The peer's frame in means this rank has a copy to make:
                // the rest of the demotion would hold it back.
                let mut rx = self.rx.get_mut(peer).and_then(Option::as_mut);
                tx.prod
                    .demote_in_chunks(|| rx.as_mut().is_none_or(|r| !r.cons.has_frame()));
            }
            // What is left (a claim, a long frame's demotion) waits for
            // the rank's next idle moment.
            if tx.prod.hints_due() {
                self.hints = peer;
            }
        }
    }

    /// How [`push_frames`] treats the frames of a message to `peer`.
    #[inline]
    fn push_how(&self, peer: usize) -> Push {
        let distant = self.is_distant(peer);
        Push {
            watch: self.watch,
            slow: self.slow_ring,
            distant,
            watch_min: self.watch_min,
            fragment: if distant {
                self.distant_fragment
            } else {
                self.fragment
            },
        }
    }

    /// Continues `out` from `data` (the whole message, as first given).
    /// Returns whether it is now wholly in the ring.
    pub fn resume(&mut self, out: &mut OutMsg, data: &[u8]) -> bool {
        let peer = out.peer;
        let how = self.push_how(peer);
        let tx = self.tx(peer);
        // Another message's fragments are on the ring, or earlier messages
        // wait in the queue: this one must not start (or go on) now.
        match tx.open {
            Some((id, _)) if id != out.id => return false,
            None if !tx.queue.is_empty() => return false,
            _ => {}
        }
        let (pushed, full) = push_frames(&mut tx.prod, &mut tx.drift, how, out, data, 0);
        tx.stalled = full;
        match (tx.open, out.is_complete()) {
            (Some((_, seq)), true) => {
                tx.done_seq = seq + 1;
                tx.open = None;
            }
            (None, false) if out.started => {
                tx.open = Some((out.id, tx.next_seq));
                tx.next_seq += 1;
            }
            _ => {}
        }
        self.maybe_busy |= full || !out.is_complete();
        if pushed > 0 {
            self.notify(peer);
        }
        if how.watch && out.is_complete() && out.total >= self.watch_min {
            self.follow_drift(peer);
        }
        out.is_complete()
    }

    /// Queues the rest of `out` (copying `data[out.sent..]`) to be sent by
    /// [`poll`](Self::poll); returns a ticket for [`is_done`](Self::is_done).
    pub fn enqueue(&mut self, out: OutMsg, data: &[u8]) -> Ticket {
        let base = out.sent;
        let rest = &data[base..];
        let mut buf = self.pooled_buffer(rest.len());
        buf.extend_from_slice(rest);
        self.enqueue_data(out, base, QueuedData::Copied(buf))
    }

    /// Queues the rest of `out`, whose whole message is `data`, without
    /// copying: [`poll`](Self::poll) pushes it straight from the lent
    /// buffer (or from the copy made if the lending scope ends first).
    ///
    /// # Panics
    /// If `data` is not the length of `out`'s message.
    pub fn enqueue_lent(&mut self, out: OutMsg, data: Lent) -> Ticket {
        assert_eq!(data.len(), out.total, "a lent buffer is the whole message");
        self.enqueue_data(out, 0, QueuedData::Lent(data))
    }

    fn enqueue_data(&mut self, out: OutMsg, base: usize, data: QueuedData) -> Ticket {
        let peer = out.peer;
        let buf = data;
        let tx = self.tx(peer);
        // A message already on the ring in part goes first, under the
        // sequence number it reserved when it started.
        let (seq, first) = match tx.open.filter(|&(id, _)| id == out.id) {
            Some((_, seq)) => {
                tx.open = None;
                (seq, true)
            }
            None => {
                tx.next_seq += 1;
                (tx.next_seq - 1, false)
            }
        };
        let q = Queued {
            data: buf,
            base,
            msg: out,
            seq,
        };
        if first {
            tx.queue.push_front(q);
        } else {
            tx.queue.push_back(q);
        }
        self.queued += 1;
        Ticket { peer, seq }
    }

    /// An empty buffer of at least `n` bytes' capacity, from the pool when
    /// one fits.
    fn pooled_buffer(&mut self, n: usize) -> Vec<u8> {
        if n < 4096 {
            return Vec::with_capacity(n);
        }
        match self.pool.iter().position(|b| b.capacity() >= n) {
            Some(i) => {
                let b = self.pool.swap_remove(i);
                self.pooled -= b.capacity();
                b
            }
            None => Vec::with_capacity(n),
        }
    }

    fn recycle(pool: &mut Vec<Vec<u8>>, pooled: &mut usize, mut b: Vec<u8>) {
        if b.capacity() >= 4096 && *pooled + b.capacity() <= SEND_POOL_MAX {
            b.clear();
            *pooled += b.capacity();
            pool.push(b);
        }
    }

    /// Whether the enqueued message `t` is wholly in the ring.
    pub fn is_done(&self, t: Ticket) -> bool {
        self.tx[t.peer]
            .as_ref()
            .is_none_or(|tx| tx.done_seq > t.seq)
    }

    /// Whether nothing is queued for `peer`.
    pub fn is_idle(&self, peer: usize) -> bool {
        self.tx
            .get(peer)
            .and_then(|t| t.as_ref())
            .is_none_or(|t| t.queue.is_empty())
    }

    #[inline(always)]
    fn notify(&mut self, peer: usize) {
        if peer >= self.size() {
            return self.notify_far(peer);
        }
        let cb = self.seg.control(peer);
        // SYNC(watched): SeqCst fence between publishing the frames
        // (Release header stores above) and reading the consumer's
        // `watched` flag and doorbell; pairs with the consumer's store +
        // fence + peek in `unwatch` and the sleeper's store + fence + loads
        // in `doorbell::sleep` / `Sleeper::has_work`.
        fence(Ordering::SeqCst);
        let watched = self.tx[peer]
            .as_ref()
            .is_some_and(|t| t.hdr.get().watched().load(Ordering::Relaxed) != 0);
        if !watched {
            // SYNC(pending): SeqCst RMW after the frames; pairs with the
            // receiver's Acquire swap in `poll`; the fence after it is the
            // one `doorbell::ring` expects (SYNC(doorbell)).
            cb.pending(self.me / 64)
                .fetch_or(1u64 << (self.me % 64), Ordering::SeqCst);
            fence(Ordering::SeqCst);
        }
        doorbell::ring(&Kernel, cb.doorbell(), cb.sleepers());
        // That ring also told `peer` about room released on its ring.
        self.owed[peer] = 0;
    }

    /// [`notify`](Self::notify) for a peer of another job.
    #[inline(never)]
    fn notify_far(&mut self, peer: usize) {
        // SYNC(watched): as in `notify`; a bridge ring is always watched
        // (its receiver polls it on every pass and its sleeper watches its
        // tail), so no pending bit.
        fence(Ordering::SeqCst);
        let cb = self.control(peer);
        doorbell::ring(&Kernel, cb.doorbell(), cb.sleepers());
        self.owed[peer] = 0;
    }

    /// Adds `fp` released bytes of `peer`'s ring (of `cap` bytes) to
    /// what this rank owes a blocked producer there, and settles once a
    /// quarter of the ring is owed.
    #[inline(always)]
    fn owe(&mut self, peer: usize, fp: usize, cap: usize) {
        let owed = &mut self.owed[peer];
        *owed += fp;
        if *owed >= cap / 4 {
            self.settle(peer);
        }
    }

    /// Rings `peer`'s doorbell for the room released on its ring.
    fn settle(&mut self, peer: usize) {
        // SYNC(doorbell): SeqCst fence after the Release stores of `head`
        // (`Frame::release`), paired with a blocked producer's sleeper
        // increment + fence + SeqCst load of `head` (`Sleeper::has_work`).
        fence(Ordering::SeqCst);
        let cb = self.control(peer);
        doorbell::ring(&Kernel, cb.doorbell(), cb.sleepers());
        self.owed[peer] = 0;
    }

    /// Starts polling `peer`'s ring directly, evicting the oldest direct
    /// peer if the set is full.
    fn watch(&mut self, peer: usize) {
        if self.direct.len() == DIRECT_MAX {
            let old = self.direct.remove(0);
            self.unwatch(old);
        }
        self.direct.push(peer);
        if let Some(rx) = self.rx[peer].as_ref() {
            // Relaxed: a hint; a producer that misses it flags the bitmap,
            // which is merely redundant.
            rx.hdr.get().watched().store(1, Ordering::Relaxed);
        }
    }

    /// Stops polling `peer` directly. A producer may have seen the old
    /// flag and skipped the bitmap, so look at the ring once more after a
    /// SeqCst fence (`SYNC(watched)`, the other half of `notify`).
    fn unwatch(&mut self, peer: usize) {
        let Some(rx) = self.rx[peer].as_mut() else {
            return;
        };
        // Relaxed store ordered before the peek by the fence below.
        rx.hdr.get().watched().store(0, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if rx.cons.has_frame() {
            self.local[peer / 64] |= 1u64 << (peer % 64);
        }
    }

    /// Drains queued sends and up to `budget` incoming frames from each
    /// ring, calling `handler` on each. Returns the work done (frames moved
    /// either way).
    pub fn poll(&mut self, budget: usize, handler: &mut dyn FnMut(Incoming<'_>)) -> usize {
        self.poll_until(budget, &mut |inc| {
            handler(inc);
            ControlFlow::Continue(())
        })
    }

    /// [`poll`](Self::poll) whose handler may leave a ring: after a frame
    /// it answers `Break` to, the poll goes on to the other rings without
    /// looking for the next frame of that one (the next poll does). A
    /// frame that asks its receiver to act (a rendezvous request, an
    /// offer, an ack) is acted on sooner so: the next frame's line is
    /// one the producer's core has just been near (it wrote the line
    /// before), and across Zen 4 CCDs that look cost 110-130 ns, which the
    /// claim of an offer, a locked instruction, waited out before its copy
    /// could start (`docs/benchmarks.md`, "twenty-fourth pass"). Other
    /// rings' next lines stay in this core's cache while their producers
    /// are quiet.
    pub fn poll_until(
        &mut self,
        budget: usize,
        handler: &mut dyn FnMut(Incoming<'_>) -> ControlFlow<()>,
    ) -> usize {
        self.looks = self.looks.wrapping_add(1);
        let mut work = self.drain_queues();
        let me = self.me;
        // Direct peers whose ring still has frames after this pass: their
        // local bits are set after the bitmap pass, so that pass leaves
        // them alone and one poll takes at most `budget` frames per ring.
        let mut full = [usize::MAX; DIRECT_MAX];
        for (i, slot) in full.iter_mut().enumerate().take(self.direct.len()) {
            let peer = self.direct[i];
            let (n, more) = self.drain_ring(peer, budget, handler);
            work += n;
            if more {
                *slot = peer;
            }
        }
        for w in 0..self.words {
            let word = self.seg.control(me).pending(w);
            // Relaxed peek first: an idle bitmap costs one load of a line
            // that stays in this core's cache.
            let mut bits = self.local[w];
            if word.load(Ordering::Relaxed) != 0 {
                // SYNC(pending): Acquire; pairs with the senders' SeqCst
                // fetch_or in `notify`: their frames are visible now.
                bits |= word.swap(0, Ordering::Acquire);
            }
            if self.local[w] != 0 {
                self.local[w] = 0;
            }
            while bits != 0 {
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let peer = w * 64 + b;
                if self.direct.contains(&peer) {
                    // Drained in the pass above.
                    continue;
                }
                let (n, more) = self.drain_ring(peer, budget, handler);
                work += n;
                if more {
                    self.local[w] |= 1u64 << b;
                }
                if n > 0 {
                    self.watch(peer);
                }
            }
        }
        for peer in full.into_iter().filter(|&p| p != usize::MAX) {
            self.local[peer / 64] |= 1u64 << (peer % 64);
        }
        // Bridge rings have no pending bits: look at each.
        for i in 0..self.far.len() {
            if self.far[i].is_some() {
                work += self.drain_ring(self.size() + i, budget, handler).0;
            }
        }
        if work == 0 {
            give_idle_hints(&mut self.tx, &mut self.hints);
        }
        work
    }

    fn drain_ring(
        &mut self,
        peer: usize,
        budget: usize,
        handler: &mut dyn FnMut(Incoming<'_>) -> ControlFlow<()>,
    ) -> (usize, bool) {
        // A distant peer's long frames are streamed to memory: copied out
        // front to back, with no look at the producer's tail, whose line
        // crosses between the CCDs each time (`is_newest`).
        let look_back = !self.is_distant(peer);
        let Some(rx) = self.rx[peer].as_mut() else {
            return (0, false);
        };
        let c = &mut rx.cons;
        let rx_total = &mut self.rx_total[peer];
        let mut released = 0;
        let mut n = 0;
        let mut exhausted = false;
        let mut left = false;
        while n < budget {
            let Some(f) = c.peek() else {
                exhausted = true;
                break;
            };
            let bytes = f.bytes();
            let (kind, word, envelope, data) =
                wire::decode(bytes).expect("peer wrote a frame without a wire header");
            let (total, offset) = match kind {
                Kind::Sole => (data.len(), 0),
                Kind::First => {
                    *rx_total = word as usize;
                    (word as usize, 0)
                }
                Kind::More => (*rx_total, word as usize),
            };
            // (The tail is looked at only for frames in the range where
            // the direction was measured to matter, from a near peer.)
            let copy_back =
                look_back && (COPY_BACK_MIN..=COPY_BACK_MAX).contains(&data.len()) && f.is_newest();
            let flow = handler(Incoming {
                peer,
                envelope,
                total,
                offset,
                data,
                copy_back,
            });
            released += ring::footprint(bytes.len());
            f.release();
            n += 1;
            if flow.is_break() {
                left = true;
                break;
            }
        }
        // Only a loop stopped by the budget needs another look; a ring the
        // handler left gets it from the next poll, unlooked at now.
        let more = left || (!exhausted && c.has_frame());
        // This ring's own size: a bridge's rings need not be the job's.
        let capacity = c.capacity();
        if released > 0 {
            // A producer blocked on this ring may sleep until room appears;
            // ringing it costs a fence, so it is owed and paid in bulk (a
            // quarter of the ring), on the next send to that peer (which
            // fences and rings anyway), or before this rank waits.
            self.owe(peer, released, capacity);
        }
        (n, more)
    }

    /// Offers the front frame of `peer`'s ring to `take` if it is a whole
    /// message (a sole frame): `take(envelope, payload, far)` returns
    /// whether it consumed it, and a consumed frame is released (`far()`:
    /// whether `peer` is distant, for [`copy_awaited`]). Anything else stays
    /// for [`poll`](Self::poll). This is the receive fast path of a caller
    /// that knows which peer it waits for: one header load when the ring
    /// is empty, and no handler call, bitmap or queue walk when it is not.
    #[inline]
    pub fn take_sole(
        &mut self,
        peer: usize,
        take: impl FnOnce(&Envelope, &[u8], &dyn Fn() -> bool) -> bool,
    ) -> Front {
        self.looks = self.looks.wrapping_add(1);
        let distant = &self.distant;
        let Some(rx) = self.rx.get_mut(peer).and_then(Option::as_mut) else {
            return Front::Empty;
        };
        let Some(f) = rx.cons.peek() else {
            return Front::Empty;
        };
        let bytes = f.bytes();
        let Some((Kind::Sole, _, envelope, data)) = wire::decode(bytes) else {
            return Front::Other;
        };
        // Whether `peer` is distant, for a long copy's direction
        // (`copy_awaited`), asked only by one.
        if !take(&envelope, data, &|| is_far(distant, peer)) {
            return Front::Other;
        }
        let fp = ring::footprint(bytes.len());
        f.release();
        // As in `drain_ring`: the room is owed to a blocked producer.
        let cap = rx.cons.capacity();
        self.owe(peer, fp, cap);
        Front::Taken
    }

    /// [`take_sole`](Self::take_sole) for a caller that knows the exact
    /// envelope it waits for (a receive naming its source and tag): the
    /// front frame is taken if it starts with `head` ([`sole_head`]),
    /// byte for byte, and its payload (up to `buf.len()` bytes) goes into
    /// `buf`. No decoding and no handler: the receive fast path.
    /// `Exact::Taken(n)` gives the message's length, which may exceed
    /// `buf.len()` (the rest is dropped; the caller reports truncation).
    #[inline(always)]
    pub fn take_exact(&mut self, peer: usize, head: &SoleHead, buf: &mut [u8]) -> Exact {
        self.looks = self.looks.wrapping_add(1);
        let distant = &self.distant;
        let Some(rx) = self.rx.get_mut(peer).and_then(Option::as_mut) else {
            return Exact::Empty;
        };
        let Some(f) = rx.cons.peek() else {
            return Exact::Empty;
        };
        let far = || is_far(distant, peer);
        let Some((len, fp)) = take_if_headed(f, head, buf, far) else {
            return Exact::Other;
        };
        // As in `drain_ring`: the room is owed to a blocked producer.
        let cap = rx.cons.capacity();
        self.owe(peer, fp, cap);
        Exact::Taken(len)
    }

    /// [`take_exact`](Self::take_exact), waiting: looks at the front of
    /// `peer`'s ring until the message `head` is there, or something
    /// else is, or `spin()` says to stop (`Exact::Empty`). A message of
    /// exactly `buf.len()` bytes, the common case, is awaited by its
    /// frame's whole header word ([`Consumer::peek_awaited`]): the spin
    /// is one load and one comparison, and what follows its arrival
    /// decodes nothing. Any other frame goes through `take_exact`.
    #[inline(always)]
    pub fn wait_exact(
        &mut self,
        peer: usize,
        head: &SoleHead,
        buf: &mut [u8],
        mut spin: impl FnMut() -> bool,
    ) -> Exact {
        self.looks = self.looks.wrapping_add(1);
        let want = self
            .rx
            .get(peer)
            .and_then(Option::as_ref)
            .and_then(|rx| rx.cons.awaited(SOLE_HEADER + buf.len()));
        if let Some(want) = want {
            let distant = &self.distant;
            let Some(Some(rx)) = self.rx.get_mut(peer) else {
                return Exact::Empty;
            };
            loop {
                match rx.cons.peek_awaited(&want) {
                    AwaitedFront::Frame(f) => {
                        let far = || is_far(distant, peer);
                        let Some((len, fp)) = take_if_headed(f, head, buf, far) else {
                            return Exact::Other;
                        };
                        let cap = rx.cons.capacity();
                        self.owe(peer, fp, cap);
                        return Exact::Taken(len);
                    }
                    AwaitedFront::Empty => {
                        give_idle_hints(&mut self.tx, &mut self.hints);
                        if !spin() {
                            return Exact::Empty;
                        }
                    }
                    AwaitedFront::Other => break,
                }
            }
        }
        loop {
            match self.take_exact(peer, head, buf) {
                Exact::Empty => {
                    give_idle_hints(&mut self.tx, &mut self.hints);
                    if !spin() {
                        return Exact::Empty;
                    }
                }
                r => return r,
            }
        }
    }

    /// Records the first CPU of every rank's binding (`None`: unbound),
    /// as published before the start barrier, for per-pair choices.
    pub fn set_rank_cpus(&mut self, cpus: Vec<Option<usize>>) {
        self.cpus = cpus;
    }

    /// The first CPU of rank `r`'s binding, if it is bound.
    pub fn rank_cpu(&self, r: usize) -> Option<usize> {
        self.cpus.get(r).copied().flatten()
    }

    /// Whether `peer` shares this rank's core, L3, NUMA node or package
    /// (by the first CPUs of both bindings); `None` when either is unbound
    /// or hwloc cannot tell. The per-pair copy choice keys on it (every
    /// class copies with `memcpy` today; `shmpi-topo` shows the
    /// non-temporal candidate for pairs on different NUMA nodes).
    pub fn peer_distance(&self, peer: usize) -> Option<crate::topology::Distance> {
        let (a, b) = (self.rank_cpu(self.me)?, self.rank_cpu(peer)?);
        let m = crate::topology::Machine::this().ok()?;
        Some(crate::topology::placement::distance(m, a, b))
    }

    /// The header of the ring `peer` sends this rank on (in this rank's
    /// receive region), e.g. to ask where its memory lives.
    pub fn receive_header(&self, peer: usize) -> Option<&crate::ring::RingHeader> {
        self.rx.get(peer)?.as_ref().map(|r| r.hdr.get())
    }

    /// Whether nothing of this rank's sending is left to progress: no
    /// queued, open or stalled send.
    #[inline]
    pub fn sends_idle(&mut self) -> bool {
        self.sends_quiet() || (self.queued == 0 && self.recheck_sends())
    }

    /// [`sends_idle`](Self::sends_idle)'s quick half, two loads (the
    /// direct receive asks on every call): nothing queued and no send
    /// known to be open or stalled. False may still be idle.
    #[inline(always)]
    pub fn sends_quiet(&self) -> bool {
        self.queued == 0 && !self.maybe_busy
    }

    /// [`sends_idle`](Self::sends_idle) once a send was known to be open
    /// or stalled: looks at every ring again.
    #[cold]
    #[inline(never)]
    fn recheck_sends(&mut self) -> bool {
        self.maybe_busy = self
            .tx
            .iter()
            .flatten()
            .any(|t| t.open.is_some() || t.stalled);
        !self.maybe_busy
    }

    /// Whether an enqueued message completed since the last call.
    pub fn take_completed(&mut self) -> bool {
        std::mem::take(&mut self.completed)
    }

    fn drain_queues(&mut self) -> usize {
        if self.queued == 0 {
            return 0;
        }
        let mut work = 0;
        for peer in 0..self.tx.len() {
            let how = self.push_how(peer);
            let Some(tx) = self.tx[peer].as_mut() else {
                continue;
            };
            if tx.open.is_some() {
                // Its sender resumes it; the queue waits behind it.
                continue;
            }
            let mut pushed = 0;
            while let Some(q) = tx.queue.front_mut() {
                let drift = &mut tx.drift;
                let (n, full) = match &q.data {
                    QueuedData::Copied(d) => {
                        push_frames(&mut tx.prod, drift, how, &mut q.msg, d, q.base)
                    }
                    QueuedData::Lent(l) => {
                        l.with(|d| push_frames(&mut tx.prod, drift, how, &mut q.msg, d, q.base))
                    }
                };
                pushed += n;
                tx.stalled = full;
                self.maybe_busy |= full;
                if !q.msg.is_complete() {
                    break;
                }
                tx.done_seq = q.seq + 1;
                if let Some(q) = tx.queue.pop_front() {
                    if let QueuedData::Copied(d) = q.data {
                        Self::recycle(&mut self.pool, &mut self.pooled, d);
                    }
                    self.queued -= 1;
                    self.completed = true;
                }
            }
            if pushed > 0 {
                work += pushed;
                self.notify(peer);
            }
            if how.watch && pushed > 0 {
                self.follow_drift(peer);
            }
        }
        work
    }

    /// A lock-free view of what would count as work for this rank: a
    /// frame in a directly polled ring, a pending bit, or room in a ring
    /// this rank is blocked on. Used to spin and to sleep without holding
    /// the engine's lock; valid until this transport polls again.
    pub fn sleeper(&mut self, precise: bool) -> Sleeper {
        // About to wait: pay what is owed to producers first.
        if self.owed.iter().any(|&o| o > 0) {
            fence(Ordering::SeqCst);
            for peer in 0..self.owed.len() {
                if self.owed[peer] > 0 {
                    let cb = self.control(peer);
                    doorbell::ring(&Kernel, cb.doorbell(), cb.sleepers());
                    self.owed[peer] = 0;
                }
            }
        }
        let n = self.size();
        let blocked = self.tx[..n]
            .iter()
            .flatten()
            .filter(|t| t.stalled || !t.queue.is_empty())
            .map(|t| (t.header_off, t.prod.head_seen()))
            .collect();
        // Bridge rings: every incoming one (new frames move its tail), and
        // outgoing ones this rank waits for room in (their head).
        let mut far = Vec::new();
        for (i, f) in self.far.iter().enumerate() {
            let Some(f) = f else { continue };
            let Some(b) = self.bridges[f.bridge].as_ref() else {
                continue;
            };
            if let Some(rx) = self.rx[n + i].as_ref() {
                let (h, _) = b.layout.ring(f.at, b.me);
                far.push(bridge::FarWatch {
                    seg: b.seg.clone(),
                    header: h,
                    seen: rx.cons.position(),
                    head: false,
                });
            }
            if let Some(t) = self.tx[n + i]
                .as_ref()
                .filter(|t| t.stalled || !t.queue.is_empty())
            {
                far.push(bridge::FarWatch {
                    seg: b.seg.clone(),
                    header: t.header_off,
                    seen: t.prod.head_seen(),
                    head: true,
                });
            }
        }
        let mut direct = [Watch::Tail(0, 0); DIRECT_MAX];
        let mut ndirect = 0;
        for (&p, rx) in self
            .direct
            .iter()
            .filter_map(|p| self.rx[*p].as_ref().map(|r| (p, r)))
        {
            let (h, _) = self.layout.ring(p, self.me);
            direct[ndirect] = if precise {
                let (off, lap) = rx.cons.next_word();
                Watch::Word(rx.data_off + off, lap)
            } else {
                Watch::Tail(h, rx.cons.position())
            };
            ndirect += 1;
        }
        Sleeper {
            me: self.me,
            words: self.words,
            local: self.local.iter().any(|&b| b != 0),
            blocked,
            direct,
            ndirect,
            far,
        }
    }

    /// Wakes other threads of this rank that sleep on its doorbell (after
    /// this thread's progress completed something they may wait for).
    /// The caller published that progress and issued a SeqCst fence.
    pub fn wake_local(&self) {
        wake_rank(&self.seg, self.me);
    }
}

/// Gives the hints due on the ring to peer `*hints`
/// (`Producer::flush_hints`), now that this rank found nothing to
/// receive: in a ping-pong it waits for the answer anyway. The test
/// inline, the work out of line. (Fields, not `&mut Transport`: a caller
/// holds its consumer borrowed.)
#[inline(always)]
fn give_idle_hints(tx: &mut [Option<Tx>], hints: &mut usize) {
    if *hints != usize::MAX {
        flush_idle_hints(tx, hints);
    }
}

#[cold]
#[inline(never)]
fn flush_idle_hints(tx: &mut [Option<Tx>], hints: &mut usize) {
    if let Some(Some(t)) = tx.get_mut(std::mem::replace(hints, usize::MAX)) {
        t.prod.flush_hints();
    }
}

/// A size in bytes from the environment variable `var`, if set.
fn env_size(var: &str) -> crate::Result<Option<usize>> {
    env_number(var, "a size in bytes")
}

/// A size threshold read from its own variable `var` (`0`: never), else
/// `fallback` (the value of an older variable it followed, when that one
/// is set), else the CPU's row `default`.
fn threshold_or(var: &str, fallback: Option<usize>, default: usize) -> crate::Result<usize> {
    Ok(match env_size(var)? {
        Some(0) => usize::MAX,
        Some(v) => v,
        None => fallback.unwrap_or(default),
    })
}

/// A whole number from `var` (`what` it counts, for the error), if set.
fn env_number(var: &str, what: &str) -> crate::Result<Option<usize>> {
    match std::env::var(var) {
        Err(_) => Ok(None),
        Ok(v) => v.trim().parse::<usize>().map(Some).map_err(|_| {
            crate::error::Error::new(
                crate::error::ErrorClass::Arg,
                format!("{var}={v}: expected {what}"),
            )
        }),
    }
}

/// Wakes the threads of `rank` sleeping on its doorbell; the caller
/// published what they should see and issued a SeqCst fence.
pub fn wake_rank(seg: &Segment, rank: usize) {
    let cb = seg.control(rank);
    doorbell::ring(&Kernel, cb.doorbell(), cb.sleepers());
}

/// Pushes frames of `out` from `data` (whose byte 0 is message byte `base`)
/// until done or the ring is full; returns frames pushed and whether the
/// ring was found full. `drift` decides at its first frame whether the
/// message streams (to a distant peer) or times its copies (to follow the
/// placement), and hears when a timed message is all in.
fn push_frames(
    prod: &mut Producer,
    drift: &mut placement::Drift,
    how: Push,
    out: &mut OutMsg,
    data: &[u8],
    base: usize,
) -> (usize, bool) {
    let frag = how.fragment;
    let mut frames = 0;
    let mut full = false;
    // Queued messages and fragments are judged on time alone (a sole
    // frame's mark, `Transport::looks`, says nothing of them).
    prod.set_in_burst(false);
    while !out.is_complete() {
        let (kind, word, len) = if !out.started && out.total <= frag {
            (Kind::Sole, out.total as u64, out.total)
        } else if !out.started {
            (Kind::First, out.total as u64, frag)
        } else {
            (Kind::More, out.sent as u64, frag.min(out.total - out.sent))
        };
        let hlen = if kind == Kind::Sole {
            SOLE_HEADER
        } else {
            WIRE_HEADER
        };
        if !out.started
            && (how.distant && out.total >= placement::STREAM_MIN
                || how.watch && out.total >= how.watch_min)
        {
            let start = placement::Start {
                watch: how.watch,
                distant: how.distant,
                // Written all the way round (its pages are in).
                ring_warm: prod.has_lapped(),
                watch_min: how.watch_min,
            };
            drift.start(out.id, out.total, start);
        }
        let mut r = match prod.reserve(hlen + len) {
            Ok(r) => r,
            Err(RingReserveError::TooFewBytes(_)) => {
                full = true;
                break;
            }
            Err(e @ RingReserveError::TooLarge(_)) => unreachable!("fragment exceeds ring: {e}"),
        };
        if kind == Kind::Sole {
            r.write(0, &wire::encode_sole(&out.env));
        } else {
            r.write(0, &wire::encode(kind, word, &out.env));
        }
        let from = out.sent - base;
        let src = &data[from..from + len];
        if drift.streams(out.id) {
            r.write_streaming(hlen, src);
        } else if drift.times(out.id) {
            let t = Instant::now();
            r.write(hlen, src);
            drift.add(len, t.elapsed());
        } else {
            r.write(hlen, src);
        }
        r.commit();
        // A 2-4 KiB frame's demotion is its sender's: whole here, as
        // nothing registers it for the idle moment on this path (the
        // chunks that stop at the peer's frame are `sole_sent`'s).
        if prod.chunks_due() {
            prod.demote_in_chunks(|| true);
        }
        frames += 1;
        out.sent += len;
        out.started = true;
        if out.is_complete() && drift.times(out.id) {
            drift.end(Instant::now(), how.slow);
        }
    }
    (frames, full)
}

/// The size below which a message may go as one sole frame whatever holds
/// its buffer, before the placement lowers it (`Transport::eager_below`):
/// below the fragment size (a sole frame) and every size from which it
/// would go by rendezvous (single copy, the pool).
fn eager_limit(fragment: usize, cma_threshold: usize, blocking_from: usize, pool: usize) -> usize {
    (fragment + 1)
        .min(cma_threshold)
        .min(blocking_from)
        .min(pool)
}

/// How [`push_frames`] treats a message's frames (see
/// [`placement::Drift::start`]).
#[derive(Clone, Copy)]
struct Push {
    /// The placement is followed ([`Transport::watch`]).
    watch: bool,
    /// The rate below which a timed message is slow (MB/s).
    slow: u64,
    /// The peer counts as distant.
    distant: bool,
    /// The smallest message timed ([`Transport::watch_min`]).
    watch_min: usize,
    /// The largest fragment: to a distant peer
    /// [`placement::DEFAULT_DISTANT_FRAGMENT`] or its variable, else the
    /// fragment size. (A peer judged anew between two fragments of one
    /// message changes the size of the rest; the receiver goes by each
    /// fragment's offset.)
    fragment: usize,
}

/// What counts as work for a rank, checked without the engine's lock;
/// see [`Transport::sleeper`]. Its methods take the rank's segment.
#[derive(Debug)]
pub struct Sleeper {
    me: usize,
    words: usize,
    local: bool,
    blocked: Vec<(usize, u64)>,
    /// What to watch on each directly polled ring.
    direct: [Watch; DIRECT_MAX],
    ndirect: usize,
    /// Rings in bridges to other jobs.
    far: Vec<bridge::FarWatch>,
}

/// How a sleeper sees a new frame on a directly polled ring.
#[derive(Debug, Clone, Copy)]
enum Watch {
    /// The segment offset of the header word the next frame starts with:
    /// the cheapest signal (the line the receiver will read anyway). Only
    /// sound while no other thread consumes from the ring, since a stale
    /// offset may be reused for payload. With it, the lap a frame there
    /// carries (`ring::is_frame`).
    Word(usize, u64),
    /// The ring header at this offset, and the consumer position seen: a
    /// new frame moves the producer's `tail` past it. Always sound.
    Tail(usize, u64),
}

impl Sleeper {
    /// Whether work is visible now: a few loads of lines that stay in this
    /// core's cache until a peer writes them, so spinning on it is cheap.
    #[inline]
    pub fn has_work(&self, seg: &Segment) -> bool {
        if self.local {
            return true;
        }
        let direct = self.direct[..self.ndirect].iter().any(|w| match *w {
            Watch::Word(off, lap) => {
                assert!(off % 8 == 0 && off + 8 <= seg.len());
                let p = seg.base().as_ptr().wrapping_add(off).cast::<u64>();
                // SAFETY: `p` is an 8-aligned frame header word inside the
                // mapping (asserted), which `seg` keeps alive; `Word`
                // watches exist only while this thread is the ring's one
                // consumer, so it is the ring's next header word, which is
                // only accessed atomically until the consumer moves on.
                let w = unsafe { AtomicU64::from_ptr(p) };
                // SYNC(watched): after the sleeper's increment + fence
                // (when sleeping); pairs with the producer's fence in
                // `notify`.
                crate::ring::is_frame(w.load(Ordering::SeqCst), lap)
            }
            Watch::Tail(off, seen) => {
                // SAFETY: `off` came from the layout and lies in the mapping
                // that `seg` keeps alive; headers are all atomics.
                let h = unsafe { ring_header(seg, off).as_ref() };
                h.tail_for_sleep() != seen
            }
        });
        if direct {
            return true;
        }
        let cb = seg.control(self.me);
        // SYNC(doorbell): SeqCst loads after the sleeper's store + fence,
        // its half of the Dekker pairs (see `shm::doorbell`).
        (0..self.words).any(|w| cb.pending(w).load(Ordering::SeqCst) != 0)
            || self.far.iter().any(bridge::FarWatch::moved)
            || self.blocked.iter().any(|&(off, seen)| {
                // SAFETY: `off` came from the layout and lies in the mapping
                // that `seg` keeps alive; headers are all atomics.
                let h = unsafe { ring_header(seg, off).as_ref() };
                h.head_for_sleep() != seen
            })
    }

    /// Sleeps on the doorbell for at most `timeout`, unless work is already
    /// visible, or `also()` (the caller's own condition, read after the
    /// sleeper's fence) holds.
    pub fn sleep(&self, seg: &Segment, timeout: Duration, also: impl Fn() -> bool) {
        // A consumer rings a blocked producer only in bulk or when it
        // idles (see `Transport::drain_ring`): a producer waiting for room
        // looks again every millisecond.
        let timeout = if self.blocked.is_empty() && !self.far.iter().any(|w| w.head) {
            timeout
        } else {
            timeout.min(BLOCKED_SLEEP)
        };
        let cb = seg.control(self.me);
        if std::thread::panicking() {
            // Drops on the way out of a panic wait here for peers that may
            // be waiting for this rank in turn: end the job rather than
            // hang it (`docs/errors.md`, "A rank that panics").
            cb.abort_for_panic(self.me);
        }
        doorbell::sleep(
            &Kernel,
            cb.doorbell(),
            cb.sleepers(),
            || self.has_work(seg) || also(),
            Some(timeout),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two transports of one process on a fresh segment of 1 MiB rings
    /// (its file unlinked at once).
    fn pair(tag: u64) -> (Transport, Transport) {
        let job = tag | u64::from(std::process::id());
        let path = crate::shm::segment_path(std::path::Path::new("/dev/shm"), job);
        let l = Layout::new(2, 1 << 20).expect("layout");
        let seg = Arc::new(Segment::create(&path, l.spec(job)).expect("segment"));
        seg.unlink();
        let a = Transport::new(seg.clone(), l, 0).expect("rank 0");
        let b = Transport::new(seg, l, 1).expect("rank 1");
        (a, b)
    }

    /// Sends one message of `len` bytes from `a` (rank 0) to `b` and
    /// returns the frames `b`'s poll hands over, (offset, length) each,
    /// checking that they rebuild the message.
    fn frames_of(a: &mut Transport, b: &mut Transport, len: usize) -> Vec<(usize, usize)> {
        let data: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        assert!(matches!(a.send(1, &Envelope([1; 16]), &data), Sent::Done));
        let (mut frames, mut got) = (Vec::new(), vec![0u8; len]);
        // Bounded: the whole message is in the ring already.
        for _ in 0..1000 {
            b.poll(64, &mut |m| {
                assert_eq!(m.total, len);
                got[m.offset..m.offset + m.data.len()].copy_from_slice(m.data);
                frames.push((m.offset, m.data.len()));
            });
            if frames.iter().map(|f| f.1).sum::<usize>() == len {
                break;
            }
        }
        assert!(got == data, "the frames rebuild the message");
        frames
    }

    /// A 2-4 KiB frame sent after a pause is demoted in chunks while its
    /// sender has nothing from that peer to receive, and only its first
    /// chunk once the peer's own frame is in (`sole_sent`).
    #[test]
    fn a_senders_chunked_demotion_stops_once_its_peers_frame_is_in() {
        if !cfg!(target_arch = "x86_64") {
            // No TSC there: no frame follows a pause, none is demoted.
            return;
        }
        let (mut a, mut b) = pair(0x6463_0000_0000);
        a.tx(1)
            .prod
            .set_demote(ring::Demote::forced_up_to(8192).without_warming());
        let pause = || std::thread::sleep(Duration::from_micros(200));
        let data = vec![5u8; 3000];
        let chunks = |t: &Transport| t.tx[1].as_ref().and_then(|t| t.prod.last_chunks());
        pause();
        assert!(a.try_sole(1, &Envelope([1; 16]), &data));
        let (_, bytes, n) = chunks(&a).expect("demoted in chunks");
        assert!(
            n > 1 && bytes > ring::DEMOTE_CHUNK,
            "{n} chunks, {bytes} bytes"
        );
        // The peer's frame is in: the next demotion stops after one chunk.
        // (`a` looks for it first, and finds nothing yet: a frame sent
        // with no look since the last is a burst's, never demoted.)
        assert_eq!(a.poll(64, &mut |_| panic!("nothing sent yet")), 0);
        assert!(matches!(b.send(0, &Envelope([2; 16]), &[7; 8]), Sent::Done));
        pause();
        assert!(a.try_sole(1, &Envelope([1; 16]), &data));
        assert_eq!(
            chunks(&a).map(|(_, bytes, n)| (bytes, n)),
            Some((ring::DEMOTE_CHUNK, 1))
        );
    }

    /// Sole frames sent one after another with no look for incoming
    /// messages in between are a burst: only the first is demoted, even
    /// after a pause; any look (a poll, a receive) ends the burst.
    #[test]
    fn only_the_first_frame_of_a_burst_is_demoted() {
        if !cfg!(target_arch = "x86_64") {
            // No TSC there: no frame follows a pause, none is demoted.
            return;
        }
        let (mut a, mut b) = pair(0x6462_0000_0000);
        a.tx(1)
            .prod
            .set_demote(ring::Demote::forced_up_to(8192).without_warming());
        let pause = || std::thread::sleep(Duration::from_micros(200));
        let data = vec![6u8; 3000];
        // Where the last chunked demotion began (each frame has its own
        // place in the ring).
        let demoted_at = |t: &Transport| {
            t.tx[1]
                .as_ref()
                .and_then(|t| t.prod.last_chunks())
                .map(|c| c.0)
        };
        pause();
        assert!(a.try_sole(1, &Envelope([1; 16]), &data));
        let first = demoted_at(&a).expect("the first frame is demoted");
        for _ in 0..3 {
            pause();
            assert!(a.try_sole(1, &Envelope([1; 16]), &data));
            assert_eq!(demoted_at(&a), Some(first), "a burst's frame is not");
        }
        // Nothing to receive, but a look: the next frame is demoted again.
        assert_eq!(a.poll(64, &mut |_| panic!("nothing sent")), 0);
        pause();
        assert!(a.try_sole(1, &Envelope([1; 16]), &data));
        let after = demoted_at(&a).expect("demoted after a look");
        assert_ne!(after, first);
        // So after a receive that finds its message at once.
        assert!(matches!(b.send(0, &Envelope([2; 16]), &[7; 8]), Sent::Done));
        // Published already: a few polls find it (bounded, so a bug fails
        // instead of spinning).
        let got: usize = (0..1000)
            .map(|_| a.poll(64, &mut |m| assert_eq!(m.data, &[7; 8][..])))
            .find(|&n| n > 0)
            .unwrap_or(0);
        assert_eq!(got, 1, "the peer's frame is taken");
        pause();
        assert!(a.try_sole(1, &Envelope([1; 16]), &data));
        assert_ne!(demoted_at(&a), Some(after), "demoted after a receive");
        let mut frames = 0;
        for _ in 0..1000 {
            frames += b.poll(64, &mut |m| assert_eq!(m.data.len(), 3000));
            if frames >= 6 {
                break;
            }
        }
        assert_eq!(frames, 6, "every frame of the bursts arrives");
    }

    #[test]
    fn a_distant_peers_messages_go_in_fragments_of_the_distant_size() {
        let (mut a, mut b) = pair(0x6466_0000_0000);
        let frag = a.distant_fragment_size();
        assert_eq!(
            frag,
            placement::DEFAULT_DISTANT_FRAGMENT.min(a.fragment_size())
        );
        // A near peer: one frame up to the fragment size.
        assert_eq!(frames_of(&mut a, &mut b, 40_000), [(0, 40_000)]);
        // The same peer judged distant (as `probe_placement` or a drift
        // verdict does it): pieces of `frag`, the last shorter; up to
        // `frag` one frame still.
        a.distant[1] = true;
        a.off_quick_path();
        let len = 4 * frag + 1000;
        let want: Vec<_> = (0..5)
            .map(|k| (k * frag, frag.min(len - k * frag)))
            .collect();
        assert_eq!(frames_of(&mut a, &mut b, len), want);
        assert_eq!(frames_of(&mut a, &mut b, frag), [(0, frag)]);
        assert_eq!(frames_of(&mut a, &mut b, 100), [(0, 100)]);
    }
}
