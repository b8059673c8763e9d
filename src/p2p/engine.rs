//! The matching engine: posted and unexpected queues, request slots, and
//! the handler that the transport's progress calls for every frame.
//!
//! Order rules (MPI 4.1 §3.5): a message is matched, when its first
//! fragment arrives, against posted receives in the order they were
//! posted; a new receive is matched against unexpected messages in the
//! order they arrived. Frames from one peer arrive in send order (one SPSC
//! ring per pair), so two messages from one sender on one communicator
//! never overtake each other.

use super::envelope::{
    Cts, FrameKind, Header, Rts, ACK_FAST_READ, ACK_IF_WROTE, ACK_SLOW_READ, ANY_SOURCE, ANY_TAG,
};
use super::status::Status;
use crate::error::{Error, ErrorClass, ErrorStatus, Result};
use crate::transport::fresh::{Detour, Verdicts};
use crate::transport::{
    Exact, Front, Incoming, Lent, OutMsg, Sent, Sleeper, SoleHead, Ticket, Transport,
};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::ControlFlow;

/// The hasher of the tokens awaiting an ack: a token is a counter this
/// rank chose, never a key an adversary picks, so one multiplication by
/// an odd constant (Fibonacci hashing) spreads it enough, where the
/// default SipHash cost about 100 instructions per lookup on every
/// rendezvous and synchronous send (callgrind, `examples/msgpath`).
type TokenHash = BuildHasherDefault<TokenHasher>;

/// See [`TokenHash`].
#[derive(Default)]
struct TokenHasher(u64);

impl Hasher for TokenHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u32(&mut self, x: u32) {
        self.0 = (self.0 ^ u64::from(x)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Frames handled per progress call and ring before moving on.
pub const POLL_BUDGET: usize = 64;

/// Direct receives in a row after which [`Engine::direct_ok`] sends one
/// receive through the general path (a full poll of every ring). At 64,
/// that one receive in 64 cost a small-message ping-pong 3-4% of its
/// latency (paired bursts in one run, `docs/benchmarks.md`, "Issue 6,
/// eleventh pass"); at 1024 the cost is gone, and a rank receiving from
/// one peer only still drains its other rings within a millisecond or so.
pub const DIRECT_STREAK: u32 = 1024;

/// Fragments smaller than this are always copied the ordinary way.
const STREAM_FRAGMENT_MIN: usize = 4096;

/// Index of a request slot.
pub type SlotId = usize;

/// Receive buffers that a waiting caller lends to progress: bytes for
/// these slots go straight from the ring into the caller's buffer instead
/// of through the slot's own buffer. The lender passes the same buffer to
/// [`Engine::finish_recv`].
pub type Sinks<'a, 'b> = &'a mut [(SlotId, &'b mut [u8])];

/// A slot's state: plain data (`Copy`), so that the transitions on the
/// message path are plain stores with no drop glue; a task's box and
/// result live in the slot beside it.
#[derive(Clone, Copy, Debug)]
enum SlotState {
    Free,
    /// A receive waiting in the posted queue.
    Posted {
        ctx: u32,
        src: i32,
        tag: i32,
    },
    /// A receive (or matched probe) taking a message's fragments.
    Filling {
        status: Status,
    },
    /// A receive that has its whole message (maybe truncated).
    Done {
        status: Status,
    },
    /// A send whose rest is queued in the transport.
    Queued(Ticket),
    /// A synchronous send waiting for its ack (and maybe queued too).
    AwaitAck {
        ticket: Option<Ticket>,
    },
    /// A send that is complete.
    Sent,
    /// A multi-step operation the engine drives (a nonblocking
    /// collective's schedule), in the slot's `task`; finished once its
    /// result is in the slot's `task_result`.
    Task,
}

/// A multi-step operation that the engine advances on every progress
/// call, whichever call or thread drives it (MPI 4.1 §2.9: a nonblocking
/// collective progresses while its owner waits on anything else). It owns
/// its data; the request that started it reads the result out.
pub trait Task: Send {
    /// Advances as far as possible without waiting; `Some` once finished.
    fn step(&mut self, e: &mut Engine) -> Option<Result<()>>;
    /// The task itself, for its owner to downcast and read.
    fn as_any(&mut self) -> &mut dyn std::any::Any;
}

/// A boxed task (with a `Debug` the slot table can print).
pub struct TaskBox(pub Box<dyn Task>);

impl std::fmt::Debug for TaskBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Task")
    }
}

#[derive(Debug)]
struct Slot {
    state: SlotState,
    /// Receive capacity in bytes (the user's buffer length).
    cap: usize,
    /// Received bytes not yet in the user's buffer (kept between uses so
    /// small receives do not allocate): message bytes `base..base +
    /// buf.len()`. Bytes below `base` went straight into the user's buffer
    /// through a sink.
    buf: Vec<u8>,
    base: usize,
    /// The handle was dropped: free the slot when the operation completes.
    orphan: bool,
    /// A receive whose single-copy read failed: `finish_recv` reports it.
    err: Option<Error>,
    /// A send by rendezvous: the receiver reads the sender's buffer until
    /// it acks, so the buffer must stay as it is until completion.
    rendezvous: bool,
    /// A rendezvous send's bytes in this process (address, length): the
    /// part a receiver's shared-copy offer ([`Cts`]) may name.
    rdv_span: (u64, u64),
    /// A rendezvous send lent from a scope: the cell holding its offer
    /// (retired on the ack; the scope's end, not the request, keeps the
    /// buffer alive).
    lent: Option<Lent>,
    /// A plain rendezvous send whose receiver shares the copy: this rank
    /// wrote the back part (`run_splits`), and the receiver said it read
    /// the front (an ack with [`ACK_IF_WROTE`]). Both: the send is done.
    /// Set only by [`Matcher::await_ack`] and for slots awaiting an ack.
    wrote_back: bool,
    front_acked: bool,
    /// A rendezvous send whose receiver's verdict on its read counts
    /// (`Transport::judges`, `judges_posted`): its ack's verdict goes to
    /// [`Matcher::verdicts`] or [`Matcher::posted_verdicts`].
    judged: Judged,
    /// The peer a receive waits on (a specific source) or a send waits
    /// for (its ack): when it dies, the operation fails (`fail_peer`).
    peer: Option<usize>,
    /// The context of a send awaiting its ack (set by
    /// [`Engine::await_ack`]): `MPI_Comm_disconnect` waits for those on
    /// its communicator ([`Engine::awaits_ack_on`]).
    send_ctx: u32,
    /// A task slot's task (out of it while it steps) and, once finished,
    /// its result.
    task: Option<TaskBox>,
    task_result: Option<Result<()>>,
    /// The slot whose lent sink this receive's bytes go into: itself, or
    /// the first receive of a window that shares one buffer
    /// ([`Engine::share_sink`]).
    sink: SlotId,
    /// How many times the slot was allocated (wrapping): a key handed out
    /// with one use ([`Engine::set_key`]) does not fit a later one.
    gen: u32,
    /// The owner's word for a posted receive that a handle of the owner's
    /// stands for, with no request object (the C layer's light
    /// `MPI_Irecv`: its buffer's address); `None` for every other slot,
    /// and from the release on.
    key: Option<usize>,
}

/// How many spare message buffers a matcher keeps (`Matcher::spare`).
const SPARES: usize = 4;
/// The largest it keeps, in bytes.
const SPARE_MAX: usize = 1 << 20;

/// Whose verdicts a rendezvous send's ack feeds (`transport::fresh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Judged {
    /// None: its read is not judged (or shared, or out of a pool).
    No,
    /// [`Matcher::verdicts`]: a blocking send's.
    Blocking,
    /// [`Matcher::posted_verdicts`]: a send that does not wait.
    Posted,
}

/// What one [`Engine::pull`] did besides its copy.
#[derive(Debug, Default)]
struct Pulled {
    /// It offered the sender a shared copy.
    offered: bool,
    /// It revoked that offer and copied the back part itself.
    revoked: bool,
    /// The sender needs no plain ack: it wrote the back part, and the ack
    /// with [`ACK_IF_WROTE`] went when the front was read.
    acked: bool,
    /// Its read was timed (`Transport::read_judged`): slow
    /// ([`ACK_SLOW_READ`], the sender's buffer most likely written just
    /// before the send, `transport::fresh`) or not ([`ACK_FAST_READ`]).
    verdict: Option<bool>,
}

/// Sends a frame of the engine's own (an ack, a shared-copy offer) to
/// `peer`, queued behind the rest when its ring is full.
fn send_control(t: &mut Transport, peer: usize, hdr: &Header, payload: &[u8]) {
    if let Sent::Partial(out) = t.send(peer, &hdr.pack(), payload) {
        let _ = t.enqueue(out, payload);
    }
}

/// The envelope of an ack of the send under `token` (`src`: 0, or
/// [`ACK_IF_WROTE`]).
fn ack_header(ctx: u32, token: u32, src: u32) -> Header {
    Header {
        ctx,
        src,
        tag: token as i32,
        kind: FrameKind::Ack,
        token: 0,
    }
}

/// A matched rendezvous whose bytes are still in the sender's memory: the
/// next progress call copies them (straight into a lent sink when there is
/// one), then acks.
#[derive(Debug)]
struct Pull {
    slot: SlotId,
    peer: usize,
    ctx: u32,
    token: u32,
    rts: Rts,
}

#[derive(Debug)]
struct Unexpected {
    id: u64,
    hdr: Header,
    peer: usize,
    total: usize,
    data: Vec<u8>,
    complete: bool,
    /// Its communicator was freed while fragments were still arriving:
    /// drop it once complete, never match it.
    dead: bool,
    /// A rendezvous request: the bytes are still in the sender's memory.
    rts: Option<Rts>,
}

#[derive(Debug, Clone, Copy)]
enum Inbound {
    Idle,
    Slot(SlotId),
    Unexpected(u64),
}

/// Everything but the transport, so the transport's poll can borrow it.
#[derive(Debug)]
struct Matcher {
    me: usize,
    /// The members of other jobs of each context that has some (an
    /// `ANY_SOURCE` receive there fails when one of them dies).
    far_ctx: HashMap<u32, Vec<usize>>,
    slots: Vec<Slot>,
    free: Vec<SlotId>,
    posted: VecDeque<SlotId>,
    unexpected: VecDeque<Unexpected>,
    /// Message buffers a claim left over (the receive slot takes the
    /// unexpected message's buffer and gives up its own), kept for the
    /// next unexpected messages: at most [`SPARES`], of at most
    /// [`SPARE_MAX`] bytes. Freed and allocated anew, 64 KiB buffers
    /// made glibc trim and regrow its heap, and the page faults cost a
    /// 2-rank `MPI_Ibcast` of 64 KiB (whose message mostly arrives before
    /// its receive) 40% of its time (`docs/benchmarks.md`, "Issue 6,
    /// forty-first pass").
    spare: Vec<Vec<u8>>,
    next_unexpected: u64,
    inbound: Vec<Inbound>,
    /// Acks to send: (world peer, ctx, token, source word: 0,
    /// [`ACK_SLOW_READ`] or [`ACK_FAST_READ`]).
    acks: Vec<(usize, u32, u32, u32)>,
    /// Per world peer, what its reads of this rank's judged blocking
    /// sends have shown (`transport::fresh`): whether those take a detour
    /// for now (`Transport::detour`: the ring, or a shared copy).
    verdicts: Vec<Verdicts>,
    /// The same for its judged sends that do not wait (C's `MPI_Isend`,
    /// a plain `isend`), whose detour is the ring.
    posted_verdicts: Vec<Verdicts>,
    /// Synchronous sends by token.
    awaiting: HashMap<u32, SlotId, TokenHash>,
    /// Per peer (world rank, or a bridge's index), how many of the sends
    /// in `awaiting` are rendezvous sends to it: a receiver with one to
    /// its sender does not share its copy (`run_pulls`).
    rdv_awaiting: Vec<u32>,
    next_token: u32,
    /// A slot became `Queued` outside a queue drain (see `reap_queued`).
    reap_needed: bool,
    /// Direct receives since the last general one (see `direct_ok`).
    streak: u32,
    /// Slots of tasks still running.
    tasks: Vec<SlotId>,
    /// Matched rendezvous messages to copy (see [`Pull`]).
    pulls: Vec<Pull>,
    /// Shared-copy offers from receivers of this rank's rendezvous sends:
    /// (world peer, token, offer); see [`Engine::run_splits`].
    splits: Vec<(usize, u32, Cts)>,
    /// Rendezvous messages sent and received so far (see
    /// [`Engine::rendezvous_counts`]).
    rdv_sent: u64,
    rdv_received: u64,
    /// Shared copies: offers this rank made as a receiver, the back
    /// parts it copied itself after revoking, back parts it wrote as a
    /// sender, and the sends of those that completed on the receiver's
    /// ack of the front (see [`Engine::split_counts`]).
    split_offered: u64,
    split_revoked: u64,
    split_written: u64,
    split_acked_early: u64,
    /// From how many bytes in flight receives stream (see `store` and
    /// `Transport::stream_threshold`).
    stream: usize,
    /// Where in the lent sinks the last lookup found its slot: a wait
    /// lends its receives' buffers in posting order, which is the order
    /// they match in, so the next lookup starts there (`store`).
    sink_hint: usize,
}

/// Shared rendezvous copies of one process so far
/// ([`Engine::split_counts`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SplitCounts {
    /// Back parts this rank offered to its senders, as a receiver.
    pub offered: u64,
    /// Offers it revoked and copied itself (the sender had not claimed
    /// them when its own front part was done).
    pub revoked: u64,
    /// Back parts it wrote into its receivers' buffers, as a sender.
    pub written: u64,
    /// Plain rendezvous sends of those that completed on the receiver's
    /// ack of the front ([`ACK_IF_WROTE`]), without waiting for its
    /// settle: every one whose back part this rank wrote, since the
    /// receiver then owes no plain ack.
    pub acked_early: u64,
}

/// The point-to-point engine of one process.
#[derive(Debug)]
pub struct Engine {
    t: Transport,
    m: Matcher,
}

impl Matcher {
    /// A slot in `state` (a free one reset, else a new one): inline, for
    /// every posted receive and queued send takes one; growing is out of
    /// line.
    #[inline]
    fn alloc(&mut self, state: SlotState, cap: usize) -> SlotId {
        if let Some(id) = self.free.pop() {
            let s = &mut self.slots[id];
            s.state = state;
            s.cap = cap;
            s.buf.clear();
            s.base = 0;
            s.orphan = false;
            s.err = None;
            s.rendezvous = false;
            s.rdv_span = (0, 0);
            s.lent = None;
            s.judged = Judged::No;
            s.peer = None;
            s.sink = id;
            s.gen = s.gen.wrapping_add(1);
            s.key = None;
            id
        } else {
            self.grow(state, cap)
        }
    }

    /// [`alloc`](Self::alloc) with no free slot: a new one.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, state: SlotState, cap: usize) -> SlotId {
        let id = self.slots.len();
        self.slots.push(Slot {
            state,
            cap,
            buf: Vec::new(),
            base: 0,
            orphan: false,
            err: None,
            rendezvous: false,
            rdv_span: (0, 0),
            lent: None,
            wrote_back: false,
            front_acked: false,
            judged: Judged::No,
            peer: None,
            send_ctx: 0,
            task: None,
            task_result: None,
            sink: id,
            gen: 0,
            key: None,
        });
        id
    }

    #[inline(always)]
    fn release(&mut self, id: SlotId) {
        let s = &mut self.slots[id];
        if let SlotState::Task = s.state {
            s.task = None;
            s.task_result = None;
        }
        s.state = SlotState::Free;
        s.key = None;
        if s.buf.capacity() > 1 << 20 {
            s.buf = Vec::new();
        }
        self.free.push(id);
    }

    #[inline(always)]
    fn complete_recv(&mut self, id: SlotId) {
        let s = &mut self.slots[id];
        if let SlotState::Filling { status } = s.state {
            s.state = SlotState::Done { status };
        }
        if s.orphan {
            self.release(id);
        }
    }

    /// The verdicts a send to `peer` judged as `judged` feeds and follows
    /// (`None`: none).
    fn verdicts_for(&mut self, peer: usize, judged: Judged) -> Option<&mut Verdicts> {
        match judged {
            Judged::No => None,
            Judged::Blocking => self.verdicts.get_mut(peer),
            Judged::Posted => self.posted_verdicts.get_mut(peer),
        }
    }

    /// Whether the next send to `peer` judged as `judged` takes its
    /// detour ([`Verdicts::take_detour`]).
    fn take_detour(&mut self, peer: usize, judged: Judged) -> bool {
        self.verdicts_for(peer, judged)
            .is_some_and(Verdicts::take_detour)
    }

    /// The receiver acked the send under `token` (an unknown token, a
    /// late or repeated ack, is ignored).
    fn acked(&mut self, token: u32) {
        if let Some(id) = self.unawait(token) {
            match self.slots[id].state {
                SlotState::AwaitAck { ticket: Some(t) } => {
                    self.slots[id].state = SlotState::Queued(t);
                    self.reap_needed = true;
                }
                _ => self.complete_send(id),
            }
        }
    }

    /// Takes the send under `token` out of `awaiting` (its slot, if it
    /// was there), keeping `rdv_awaiting`.
    fn unawait(&mut self, token: u32) -> Option<SlotId> {
        let id = self.awaiting.remove(&token)?;
        self.uncount(id);
        Some(id)
    }

    /// `rdv_awaiting`'s part of taking slot `id` out of `awaiting`.
    fn uncount(&mut self, id: SlotId) {
        let s = &self.slots[id];
        if let (true, Some(p)) = (s.rendezvous, s.peer) {
            if let Some(c) = self.rdv_awaiting.get_mut(p) {
                *c = c.saturating_sub(1);
            }
        }
    }

    /// Whether a rendezvous send of this rank's to `peer` awaits its ack.
    fn rdv_awaiting_to(&self, peer: usize) -> bool {
        self.rdv_awaiting.get(peer).is_some_and(|&c| c > 0)
    }

    fn complete_send(&mut self, id: SlotId) {
        self.slots[id].state = SlotState::Sent;
        if let Some(l) = self.slots[id].lent.take() {
            l.retire_offer();
        }
        if self.slots[id].orphan {
            self.release(id);
        }
    }

    /// Stores message bytes `off..off + data.len()` of slot `id` (the part
    /// below its capacity), into a lent sink if there is one, else into
    /// the slot's buffer.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn store(
        slots: &mut [Slot],
        id: SlotId,
        off: usize,
        total: usize,
        data: &[u8],
        sinks: Sinks<'_, '_>,
        stream: usize,
        hint: &mut usize,
        back: bool,
    ) {
        let s = &mut slots[id];
        let end = (off + data.len()).min(s.cap);
        if end <= off {
            return;
        }
        let data = &data[..end - off];
        // Stream (non-temporal stores) when what this wait touches cannot
        // stay in the cache anyway: the message or the memory the lent
        // buffers span (a span, not a sum: the C API lets a window of
        // receives share one buffer, as OSU's bandwidth test does, and
        // that buffer stays in the cache), plus the sender's buffer
        // (`bytes::streams`). Only large fragments bother to look.
        let streaming = data.len() >= STREAM_FRAGMENT_MIN
            && crate::transport::bytes::streams(total, sinks_span(sinks), stream);
        let n = sinks.len();
        let key = s.sink;
        // From the hint on, round to the start (no division: a window's
        // receives are matched in order, so the hint is nearly always it).
        let from = if *hint < n { *hint } else { 0 };
        let at = if from < n && sinks[from].0 == key {
            Some(from)
        } else {
            (from..n).chain(0..from).find(|&j| sinks[j].0 == key)
        };
        if let Some(j) = at {
            *hint = j + 1;
            let sink = &mut *sinks[j].1;
            flush(s, sink);
            // A matched probe's slot has no capacity of its own: the sink
            // (the mrecv buffer) bounds it, and the rest is truncated.
            let end = end.min(sink.len());
            if end > off {
                let (dst, src) = (&mut sink[off..end], &data[..end - off]);
                if streaming {
                    crate::transport::bytes::copy_streaming(dst, src);
                } else if back {
                    crate::ring::copy_bytes_back(dst, src);
                } else {
                    crate::ring::copy_bytes(dst, src);
                }
            }
            s.base = end.max(off);
        } else {
            if s.buf.is_empty() {
                s.base = off;
            }
            debug_assert_eq!(s.base + s.buf.len(), off, "fragments arrive in order");
            s.buf.extend_from_slice(data);
        }
    }

    /// Starts delivering a message into receive slot `id`.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn start_into(
        &mut self,
        id: SlotId,
        hdr: &Header,
        peer: usize,
        total: usize,
        data: &[u8],
        sinks: Sinks<'_, '_>,
        back: bool,
    ) {
        let s = &mut self.slots[id];
        s.state = SlotState::Filling {
            status: Status {
                source: hdr.src as i32,
                tag: hdr.tag,
                bytes: total,
            },
        };
        s.buf.clear();
        s.base = 0;
        Self::store(
            &mut self.slots,
            id,
            0,
            total,
            data,
            sinks,
            self.stream,
            &mut self.sink_hint,
            back,
        );
        if hdr.kind == FrameKind::Sync {
            self.acks.push((peer, hdr.ctx, hdr.token, 0));
        }
    }

    /// Takes one frame from the transport's poll. `Break` after a frame
    /// that asks this rank to act (an ack, a shared-copy offer, a
    /// rendezvous request): the poll leaves that ring for now
    /// (`Transport::poll_until`), so the act (a completion, a claim and
    /// its write, a copy) does not wait for a look at the next frame.
    fn on_frame(&mut self, inc: Incoming<'_>, sinks: Sinks<'_, '_>) -> ControlFlow<()> {
        if !inc.is_first() {
            match self.inbound[inc.peer] {
                Inbound::Slot(id) => {
                    Self::store(
                        &mut self.slots,
                        id,
                        inc.offset,
                        inc.total,
                        inc.data,
                        sinks,
                        self.stream,
                        &mut self.sink_hint,
                        inc.copy_back,
                    );
                    if inc.is_last() {
                        self.inbound[inc.peer] = Inbound::Idle;
                        self.complete_recv(id);
                    }
                }
                Inbound::Unexpected(uid) => {
                    let u = self
                        .unexpected
                        .iter_mut()
                        .rev()
                        .find(|u| u.id == uid)
                        .expect("an in-flight unexpected message stays queued");
                    u.data.extend_from_slice(inc.data);
                    if inc.is_last() {
                        u.complete = true;
                        self.inbound[inc.peer] = Inbound::Idle;
                        if u.dead {
                            self.unexpected.retain(|u| u.id != uid);
                        }
                    }
                }
                Inbound::Idle => unreachable!("fragment without a first fragment"),
            }
            return ControlFlow::Continue(());
        }
        let hdr = Header::unpack(&inc.envelope);
        if hdr.kind == FrameKind::Ack {
            let token = hdr.tag as u32;
            // Only a timed read's ack carries a verdict: no lookup for
            // the others.
            let verdict = match hdr.src {
                ACK_SLOW_READ => Some(true),
                ACK_FAST_READ => Some(false),
                _ => None,
            };
            if let Some(slow) = verdict {
                if let Some(&id) = self.awaiting.get(&token) {
                    let judged = self.slots[id].judged;
                    if let Some(v) = self.verdicts_for(inc.peer, judged) {
                        v.note(slow);
                    }
                }
            }
            if hdr.src == ACK_IF_WROTE {
                let Some(&id) = self.awaiting.get(&token) else {
                    return ControlFlow::Break(());
                };
                let s = &mut self.slots[id];
                if !s.wrote_back {
                    // The back part is not written (yet): the send waits
                    // for this rank's write (`Engine::run_splits`), or for
                    // a plain ack once the receiver has read it all.
                    s.front_acked = s.lent.is_none();
                    return ControlFlow::Break(());
                }
                self.split_acked_early += 1;
            }
            self.acked(token);
            return ControlFlow::Break(());
        }
        if hdr.kind == FrameKind::Cts {
            let c = Cts::decode(inc.data).expect("peer wrote a malformed shared-copy offer");
            self.splits.push((inc.peer, hdr.tag as u32, c));
            return ControlFlow::Break(());
        }
        self.arrive(
            hdr,
            inc.peer,
            inc.total,
            inc.data,
            inc.is_last(),
            sinks,
            inc.copy_back,
        );
        if hdr.kind == FrameKind::Rts {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    /// A message's first bytes arrived (from a ring or from this process;
    /// `back`: copy them out back to front, `Incoming::copy_back`).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn arrive(
        &mut self,
        hdr: Header,
        peer: usize,
        total: usize,
        data: &[u8],
        last: bool,
        sinks: Sinks<'_, '_>,
        back: bool,
    ) {
        let rts = (hdr.kind == FrameKind::Rts)
            .then(|| Rts::decode(data).expect("peer wrote a malformed rendezvous request"));
        let (total, data) = match rts {
            Some(r) => (r.len as usize, &[][..]),
            None => (total, data),
        };
        let matches = |id: SlotId| match self.slots[id].state {
            SlotState::Posted { ctx, src, tag } => hdr.matches(ctx, src, tag),
            _ => false,
        };
        // The front first: a window of receives is matched in order.
        let hit = match self.posted.front() {
            Some(&id) if matches(id) => Some(0),
            Some(_) => self.posted.iter().position(|&id| matches(id)),
            None => None,
        };
        if let Some(pos) = hit {
            let id = if pos == 0 {
                self.posted.pop_front()
            } else {
                self.posted.remove(pos)
            }
            .expect("position is valid");
            self.start_into(id, &hdr, peer, total, data, sinks, back);
            if let Some(rts) = rts {
                self.pulls.push(Pull {
                    slot: id,
                    peer,
                    ctx: hdr.ctx,
                    token: hdr.token,
                    rts,
                });
            } else if last {
                self.complete_recv(id);
            } else {
                self.inbound[peer] = Inbound::Slot(id);
            }
            return;
        }
        self.arrive_unexpected(hdr, peer, total, data, last, rts);
    }

    /// A message no posted receive matches: queued as unexpected (out of
    /// line, so that `arrive`'s matched path stays short enough to inline).
    #[cold]
    #[inline(never)]
    fn arrive_unexpected(
        &mut self,
        hdr: Header,
        peer: usize,
        total: usize,
        data: &[u8],
        last: bool,
        rts: Option<Rts>,
    ) {
        let id = self.next_unexpected;
        self.next_unexpected += 1;
        let mut buf = self.spare_buf(if rts.is_some() { 0 } else { total });
        buf.extend_from_slice(data);
        self.unexpected.push_back(Unexpected {
            id,
            hdr,
            peer,
            total,
            data: buf,
            complete: last,
            dead: false,
            rts,
        });
        if !last {
            self.inbound[peer] = Inbound::Unexpected(id);
        }
    }

    /// An empty buffer with room for `len` bytes: the smallest spare one
    /// that is big enough, else a new one.
    fn spare_buf(&mut self, len: usize) -> Vec<u8> {
        if len == 0 {
            return Vec::new();
        }
        // The smallest that fits, so the big ones stay for big messages.
        let fits = (0..self.spare.len())
            .filter(|&i| self.spare[i].capacity() >= len)
            .min_by_key(|&i| self.spare[i].capacity());
        match fits {
            Some(i) => {
                let mut b = self.spare.swap_remove(i);
                b.clear();
                b
            }
            None => Vec::with_capacity(len),
        }
    }

    /// Keeps `buf` for a later unexpected message (`spare`) unless it is
    /// empty or too big; when [`SPARES`] are kept, in the place of the
    /// smallest if it is bigger.
    fn keep_spare(&mut self, buf: Vec<u8>) {
        let cap = buf.capacity();
        if cap == 0 || cap > SPARE_MAX {
            return;
        }
        if self.spare.len() < SPARES {
            self.spare.push(buf);
            return;
        }
        if let Some(small) = self.spare.iter_mut().min_by_key(|b| b.capacity()) {
            if small.capacity() < cap {
                *small = buf;
            }
        }
    }

    /// The first unexpected message matching, in arrival order.
    fn find_unexpected(&self, ctx: u32, src: i32, tag: i32) -> Option<usize> {
        self.unexpected
            .iter()
            .position(|u| !u.dead && u.hdr.matches(ctx, src, tag))
    }

    /// Moves unexpected message `pos` into slot `id` (a receive or a
    /// matched probe), redirecting its remaining fragments there.
    fn claim(&mut self, pos: usize, id: SlotId) {
        let mut u = self.unexpected.remove(pos).expect("position is valid");
        let s = &mut self.slots[id];
        u.data.truncate(s.cap);
        // The unexpected buffer becomes the slot's: no copy.
        std::mem::swap(&mut s.buf, &mut u.data);
        self.keep_spare(std::mem::take(&mut u.data));
        let s = &mut self.slots[id];
        s.base = 0;
        s.state = SlotState::Filling {
            status: Status {
                source: u.hdr.src as i32,
                tag: u.hdr.tag,
                bytes: u.total,
            },
        };
        if u.hdr.kind == FrameKind::Sync {
            self.acks.push((u.peer, u.hdr.ctx, u.hdr.token, 0));
        }
        if let Some(rts) = u.rts {
            self.pulls.push(Pull {
                slot: id,
                peer: u.peer,
                ctx: u.hdr.ctx,
                token: u.hdr.token,
                rts,
            });
        } else if u.complete {
            self.complete_recv(id);
        } else {
            self.inbound[u.peer] = Inbound::Slot(id);
        }
    }
}

/// A receive's result: its status, or MPI's truncation error (the message
/// is consumed; the error carries its envelope and full length) when it
/// was longer than the `cap`-byte buffer.
#[inline]
pub(crate) fn received(status: Status, cap: usize) -> Result<Status> {
    if status.bytes > cap {
        return Err(truncated(status, cap));
    }
    Ok(status)
}

/// The error of [`received`], out of line.
#[cold]
#[inline(never)]
fn truncated(status: Status, cap: usize) -> Error {
    Error::new(
        ErrorClass::Truncate,
        format!(
            "message of {} bytes from rank {} (tag {}) does not fit the {cap}-byte receive buffer",
            status.bytes, status.source, status.tag,
        ),
    )
    .with_status(ErrorStatus {
        source: status.source,
        tag: status.tag,
        bytes: status.bytes,
    })
}

/// Bytes of address space from the lowest lent buffer's start to the
/// highest one's end.
fn sinks_span(sinks: &[(SlotId, &mut [u8])]) -> usize {
    let (lo, hi) = sinks.iter().fold((usize::MAX, 0), |(lo, hi), (_, b)| {
        let p = b.as_ptr() as usize;
        (lo.min(p), hi.max(p + b.len()))
    });
    hi.saturating_sub(lo)
}

/// Moves what a slot holds in its own buffer into the lent `sink`.
fn flush(s: &mut Slot, sink: &mut [u8]) {
    if !s.buf.is_empty() {
        let end = s.base + s.buf.len();
        let fit = end.min(sink.len());
        if fit > s.base {
            sink[s.base..fit].copy_from_slice(&s.buf[..fit - s.base]);
        }
        s.base = end;
        s.buf.clear();
    }
}

/// How long the caller of [`Engine::start_send`] keeps the send buffer
/// as it is, which decides how a large message may travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// Only during the call: what does not fit the ring is copied into
    /// the send queue (nonblocking collectives, whose work buffers change
    /// from round to round).
    Now,
    /// Lent to the transport until a scope ends (a scoped `isend`): what
    /// does not fit now is pushed from it later, through the ring. Never
    /// by a plain rendezvous, whose reader in another process no scope's
    /// end could stop: a scoped send that goes by rendezvous goes by a
    /// revocable one instead ([`Engine::start_send_offered`]), and comes
    /// here only when that does not apply. Blocking sends of the
    /// collective algorithms use it too (pushed from their buffer until
    /// the call returns, never by rendezvous, but for their synchronous
    /// ones; see `p2p::blocking_hold`).
    Lent,
    /// Until the send completes, and the caller pushes what does not fit
    /// now from it later (a blocking send): pipelined through the ring, or
    /// by rendezvous from `SHMPI_CMA_BLOCKING`. The caller waits in this
    /// library meanwhile, so its receiver may share the copy from
    /// `SHMPI_CMA_SPLIT_BLOCKING` ([`Rts::waits`]).
    Pipelined,
    /// As [`Pipelined`](Self::Pipelined), for a request whose buffer stays
    /// untouched until it completes (C's `MPI_Isend`, `Lending::Raw`), but
    /// by rendezvous from `SHMPI_CMA_C_ISEND` (a window of them runs
    /// faster through the ring below it); its caller may be busy
    /// elsewhere, so the copy is shared only from `SHMPI_CMA_SPLIT`.
    Raw,
    /// Until the send completes, but nobody pushes from it later (an
    /// `isend` outside a lending scope): by rendezvous from
    /// `SHMPI_CMA_THRESHOLD` when the receiver can read this process,
    /// else the rest is copied into the send queue.
    Borrowed,
}

/// What [`Engine::start_send`] left to do.
#[derive(Debug)]
pub enum SendStart {
    /// Complete (the data is in the ring, or delivered locally).
    Done,
    /// Still in progress: resume with [`Engine::resume_send`] from the same
    /// buffer, or hand over with [`Engine::queue_send`].
    Partial(OutMsg),
}

impl Engine {
    /// An engine over a transport.
    pub fn new(t: Transport) -> Engine {
        let n = t.size();
        let stream = t.stream_threshold();
        let me = t.rank();
        Engine {
            t,
            m: Matcher {
                me,
                far_ctx: HashMap::new(),
                slots: Vec::new(),
                free: Vec::new(),
                posted: VecDeque::new(),
                unexpected: VecDeque::new(),
                spare: Vec::new(),
                next_unexpected: 0,
                inbound: vec![Inbound::Idle; n],
                acks: Vec::new(),
                verdicts: vec![Verdicts::default(); n],
                posted_verdicts: vec![Verdicts::default(); n],
                awaiting: HashMap::default(),
                rdv_awaiting: vec![0; n],
                next_token: 0,
                reap_needed: false,
                streak: 0,
                tasks: Vec::new(),
                pulls: Vec::new(),
                splits: Vec::new(),
                rdv_sent: 0,
                rdv_received: 0,
                split_offered: 0,
                split_revoked: 0,
                split_written: 0,
                split_acked_early: 0,
                stream,
                sink_hint: 0,
            },
        }
    }

    /// This process's world rank.
    pub fn world_rank(&self) -> usize {
        self.m.me
    }

    /// The transport below.
    pub fn transport(&self) -> &Transport {
        &self.t
    }

    /// Joins a bridge to another job (`Transport::add_bridge`): its
    /// members become peers with the indices returned.
    ///
    /// # Errors
    /// As `Transport::add_bridge`.
    pub fn add_bridge(
        &mut self,
        spec: crate::transport::bridge::BridgeSpec,
    ) -> Result<std::ops::Range<usize>> {
        let r = self.t.add_bridge(spec)?;
        self.m.inbound.resize(self.t.peers(), Inbound::Idle);
        Ok(r)
    }

    /// Leaves the bridge whose members are `peers`.
    pub fn remove_bridge(&mut self, peers: std::ops::Range<usize>) {
        self.t.remove_bridge(peers);
    }

    /// One bounded round of progress: queued sends, incoming frames (bytes
    /// for the slots in `sinks` go straight into the lent buffers), acks.
    /// Returns the work done. Callers go through `Shared::progress`, which
    /// also wakes the rank's other sleeping threads.
    pub fn progress_into(&mut self, sinks: Sinks<'_, '_>) -> usize {
        let m = &mut self.m;
        let mut work = self
            .t
            .poll_until(POLL_BUDGET, &mut |inc| m.on_frame(inc, sinks));
        work += self.run_splits();
        work += self.run_pulls(sinks);
        work += self.flush_acks();
        work += self.reap_queued();
        if !self.m.tasks.is_empty() {
            work += self.run_tasks();
        }
        work
    }

    /// Starts `task` in a new slot and advances it once; the slot is
    /// complete ([`is_complete`](Self::is_complete)) when the task has
    /// finished, and [`finish_task`](Self::finish_task) hands it back.
    pub fn start_task(&mut self, task: Box<dyn Task>) -> SlotId {
        let id = self.m.alloc(SlotState::Task, 0);
        self.m.slots[id].task = Some(TaskBox(task));
        self.m.tasks.push(id);
        self.run_tasks();
        id
    }

    /// Advances every running task once; returns how many finished.
    fn run_tasks(&mut self) -> usize {
        let mut finished = 0;
        let ids = std::mem::take(&mut self.m.tasks);
        let mut still = Vec::with_capacity(ids.len());
        for id in ids {
            debug_assert!(matches!(self.m.slots[id].state, SlotState::Task));
            let mut t = self.m.slots[id]
                .task
                .take()
                .expect("a running task is in its slot");
            let r = t.0.step(self);
            let slot = &mut self.m.slots[id];
            slot.task = Some(t);
            match r {
                Some(r) => {
                    slot.task_result = Some(r);
                    finished += 1;
                    if self.m.slots[id].orphan {
                        self.m.release(id);
                    }
                }
                None => still.push(id),
            }
        }
        // Tasks started by a task's step (none today) were pushed meanwhile.
        still.append(&mut self.m.tasks);
        self.m.tasks = still;
        finished
    }

    /// Takes a finished task out of its slot (freeing it), with its
    /// result.
    ///
    /// # Panics
    /// If the slot is not a finished task.
    pub fn finish_task(&mut self, id: SlotId) -> (Box<dyn Task>, Result<()>) {
        let slot = &mut self.m.slots[id];
        assert!(
            matches!(slot.state, SlotState::Task) && slot.task_result.is_some(),
            "slot {id} is not a finished task"
        );
        let r = slot.task_result.take().expect("the task has finished");
        let t = slot.task.take().expect("a finished task is in its slot");
        self.m.release(id);
        (t.0, r)
    }

    /// Copies matched rendezvous messages out of their senders' memory
    /// (into a lent sink when the receive has one, else into its slot's
    /// buffer) and queues their acks. A failed read completes the receive
    /// with the error and still acks, so the sender is not left waiting.
    fn run_pulls(&mut self, sinks: Sinks<'_, '_>) -> usize {
        if self.m.pulls.is_empty() {
            return 0;
        }
        // Taken for the loop and given back after, so the vector keeps
        // its capacity: no allocation per rendezvous message.
        let mut pulls = std::mem::take(&mut self.m.pulls);
        let n = pulls.len();
        self.m.rdv_received += n as u64;
        for p in pulls.drain(..) {
            // A peer that has this rank's own rendezvous send to read is
            // busy with it: the copy is not shared (in a halo exchange of
            // 64-128 KiB, both ranks sharing took 5.3 / 8.1 µs per
            // exchange against 4.2 / 6.8 reading alone).
            let share = !self.m.rdv_awaiting_to(p.peer);
            let s = &mut self.m.slots[p.slot];
            let want = (p.rts.len as usize).min(s.cap);
            let mut out = Pulled::default();
            s.buf.clear();
            let key = s.sink;
            let r = match sinks.iter_mut().find(|(i, _)| *i == key) {
                Some((_, sink)) => {
                    let got = want.min(sink.len());
                    s.base = got;
                    Self::pull(&mut self.t, &p, share, &mut sink[..got], &mut out)
                }
                None => {
                    s.base = 0;
                    s.buf.resize(want, 0);
                    Self::pull(&mut self.t, &p, share, &mut s.buf, &mut out)
                }
            };
            self.m.split_offered += out.offered as u64;
            self.m.split_revoked += out.revoked as u64;
            let s = &mut self.m.slots[p.slot];
            if let Err(e) = r {
                s.buf.clear();
                s.err = Some(e);
            }
            if !out.acked {
                let src = match out.verdict {
                    Some(true) => ACK_SLOW_READ,
                    Some(false) => ACK_FAST_READ,
                    None => 0,
                };
                self.m.acks.push((p.peer, p.ctx, p.token, src));
            }
            self.m.complete_recv(p.slot);
        }
        if self.m.pulls.is_empty() {
            self.m.pulls = pulls;
        }
        n
    }

    /// Copies rendezvous message `p` into `dst`: alone, or, from the
    /// shared-copy size on, with its sender. Then the receiver offers the
    /// back part in a [`Cts`] frame and reads the front; the sender, when
    /// it sees the offer in time, claims the back and writes it into
    /// `dst` from its side, else the receiver revokes the offer and reads
    /// the back too (`Transport::split_settle`). Either way the whole
    /// message is in `dst` when this returns, and no write of the sender's
    /// can come later. `out` says whether the copy was shared, and whether
    /// the sender is acked already (then no plain ack is owed). `share`:
    /// whether the sender may take a part (not while it has a message of
    /// this rank's to read).
    fn pull(
        t: &mut Transport,
        p: &Pull,
        share: bool,
        dst: &mut [u8],
        out: &mut Pulled,
    ) -> Result<()> {
        let Some(offer) = p.rts.offer else {
            return Self::pull_from(t, p, share, p.rts.addr, dst, out);
        };
        // A revocable offer: claimed first, the bytes read where the
        // claim says, released after (whatever the outcome).
        let addr = t.claim_offer(p.peer, offer)?;
        let r = Self::pull_from(t, p, share, addr, dst, out);
        t.finish_offer(p.peer, offer);
        r
    }

    /// [`pull`](Self::pull) from the bytes at `addr` in the sender.
    fn pull_from(
        t: &mut Transport,
        p: &Pull,
        share: bool,
        addr: u64,
        dst: &mut [u8],
        out: &mut Pulled,
    ) -> Result<()> {
        let n = dst.len();
        let kind = p.rts.split_kind();
        if !share || !t.split_ok(p.peer, addr, n, kind) {
            // Timed where the sender judges the send: the ack tells it
            // whether the read was slow.
            out.verdict = if p.rts.timed {
                t.read_judged(p.peer, addr, dst)?
            } else {
                t.read_from(p.peer, addr, dst)?;
                None
            };
            return Ok(());
        }
        let front = t.split_front(p.peer, n, dst.as_ptr() as u64, kind);
        let gen = t.split_offer();
        out.offered = true;
        let offer = Cts {
            gen,
            off: front as u64,
            len: (n - front) as u64,
            dst: dst.as_mut_ptr() as u64 + front as u64,
        }
        .encode();
        let cts = Header {
            ctx: p.ctx,
            src: 0,
            tag: p.token as i32,
            kind: FrameKind::Cts,
            token: 0,
        };
        send_control(t, p.peer, &cts, &offer);
        let (head, tail) = dst.split_at_mut(front);
        let r = t.read_from(p.peer, addr, head);
        // A plain rendezvous (its buffer stays until the send completes):
        // the front is read, so a sender that writes the back completes
        // without waiting for this rank's settle (`ACK_IF_WROTE`). A
        // revocable offer gets the plain ack after `finish_offer`.
        let early = p.rts.offer.is_none();
        if early {
            send_control(t, p.peer, &ack_header(p.ctx, p.token, ACK_IF_WROTE), &[]);
        }
        // Settle even after a failed read: a claim may be in progress.
        if t.split_settle(p.peer, gen, kind)? {
            out.revoked = true;
            t.read_from(p.peer, addr + front as u64, tail)?;
        } else {
            out.acked = early;
        }
        r
    }

    /// Answers receivers' shared-copy offers ([`Cts`]) for this rank's
    /// rendezvous sends still awaiting their ack: claims each back part
    /// and writes it into the receiver's buffer, unless the receiver
    /// revoked first. An offer for a send that is no longer waiting, or
    /// that names bytes outside it, is ignored (the receiver copies
    /// everything itself).
    fn run_splits(&mut self) -> usize {
        if self.m.splits.is_empty() {
            return 0;
        }
        // Given back after the loop, as `run_pulls` does.
        let mut offers = std::mem::take(&mut self.m.splits);
        let n = offers.len();
        for (peer, token, c) in offers.drain(..) {
            let Some(&id) = self.m.awaiting.get(&token) else {
                continue;
            };
            let s = &self.m.slots[id];
            let (addr, len) = s.rdv_span;
            let inside = c.off <= len && c.len <= len - c.off;
            if !(s.rendezvous && s.peer == Some(peer) && inside && !self.is_complete(id)) {
                continue;
            }
            let t = &self.t;
            let written = match &s.lent {
                // Lent from a scope: written from the cell's bytes under
                // its lock, which the scope's end takes to copy them, so
                // they stay put while the kernel reads them.
                Some(l) => l.with(|b| {
                    b.len() as u64 == len
                        && t.split_write(
                            peer,
                            c.gen,
                            b.as_ptr() as u64 + c.off,
                            c.len as usize,
                            c.dst,
                        )
                }),
                // A pool buffer's bytes by their address here.
                None => t
                    .local_address(addr + c.off, c.len as usize)
                    .is_some_and(|src| t.split_write(peer, c.gen, src, c.len as usize, c.dst)),
            };
            if written {
                self.m.split_written += 1;
                let s = &mut self.m.slots[id];
                s.wrote_back = true;
                if s.front_acked {
                    self.m.split_acked_early += 1;
                    self.m.acked(token);
                }
            }
        }
        if self.m.splits.is_empty() {
            self.m.splits = offers;
        }
        n
    }

    fn flush_acks(&mut self) -> usize {
        let n = self.m.acks.len();
        if n == 0 {
            return 0;
        }
        // Given back after the loop, as `run_pulls` does.
        let mut acks = std::mem::take(&mut self.m.acks);
        for (peer, ctx, token, src) in acks.drain(..) {
            if peer == self.m.me {
                if let Some(id) = self.m.unawait(token) {
                    self.m.complete_send(id);
                }
                continue;
            }
            send_control(&mut self.t, peer, &ack_header(ctx, token, src), &[]);
        }
        if self.m.acks.is_empty() {
            self.m.acks = acks;
        }
        n
    }

    fn reap_queued(&mut self) -> usize {
        // Only after a queued message left the queue, or an ack turned a
        // synchronous send into a queued one.
        let popped = self.t.take_completed();
        if !popped && !std::mem::take(&mut self.m.reap_needed) {
            return 0;
        }
        let mut n = 0;
        for id in 0..self.m.slots.len() {
            if let SlotState::Queued(t) = self.m.slots[id].state {
                if self.t.is_done(t) {
                    self.m.complete_send(id);
                    n += 1;
                }
            }
        }
        n
    }

    /// A lock-free view of what counts as work for this rank (see
    /// [`Transport::sleeper`]); `precise` only while one thread uses the
    /// engine.
    pub fn sleeper(&mut self, precise: bool) -> Sleeper {
        self.t.sleeper(precise)
    }

    /// Starts sending `data` from this process to world rank `dest`.
    /// `sync` makes it a synchronous send whose completion needs the
    /// receiver's match (returned as a slot to wait on). `hold` says how
    /// long the caller keeps `data` (see [`Hold`]); a large message held
    /// to completion may go by rendezvous: only its address travels, the
    /// receiver copies it out of this process's memory when it matches,
    /// and the slot completes on its ack.
    ///
    /// A standard-mode message short enough that no rendezvous could apply
    /// to it, to a rank of this job, goes straight into the ring as one
    /// frame when nothing stands before it there (the eager fast path,
    /// inlined into the callers; the rest is out of line).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn start_send(
        &mut self,
        ctx: u32,
        src: u32,
        dest: usize,
        tag: i32,
        data: &[u8],
        sync: bool,
        hold: Hold,
    ) -> (SendStart, Option<SlotId>) {
        if !sync && self.try_send_eager(ctx, src, dest, tag, data) {
            return (SendStart::Done, None);
        }
        self.start_send_general(ctx, src, dest, tag, data, sync, hold)
    }

    /// The eager fast path alone: a standard-mode message that fits one
    /// frame goes straight into `dest`'s ring when nothing stands before
    /// it there. False: nothing done, [`start_send`](Self::start_send)
    /// decides.
    #[inline(always)]
    pub fn try_send_eager(
        &mut self,
        ctx: u32,
        src: u32,
        dest: usize,
        tag: i32,
        data: &[u8],
    ) -> bool {
        let hdr = Header {
            ctx,
            src,
            tag,
            kind: FrameKind::Data,
            token: 0,
        };
        self.t.try_send_eager(dest, &hdr.pack(), data)
    }

    /// [`start_send`](Self::start_send) past the eager fast path (for a
    /// caller that already tried [`try_send_eager`](Self::try_send_eager)).
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn start_send_general(
        &mut self,
        ctx: u32,
        src: u32,
        dest: usize,
        tag: i32,
        data: &[u8],
        sync: bool,
        hold: Hold,
    ) -> (SendStart, Option<SlotId>) {
        if self.t.is_dead(dest) {
            // A peer of another job already known dead: the send fails
            // (through a completed slot carrying the error).
            let id = self.m.alloc(SlotState::Sent, 0);
            self.m.slots[id].err = Some(super::proc_failed(dest));
            return (SendStart::Done, Some(id));
        }
        // A buffer in this rank's shared pool goes by rendezvous, copied
        // once out of the pool by the receiver; else single copy by CMA
        // where the policy says so.
        let pool = match hold {
            Hold::Now | Hold::Lent => None,
            Hold::Pipelined | Hold::Raw | Hold::Borrowed => self.t.pool_address(dest, data),
        };
        let len = data.len();
        let by_size = pool.is_none()
            && match hold {
                Hold::Now | Hold::Lent => false,
                Hold::Pipelined => self.t.rendezvous_to(dest, len, true),
                Hold::Raw => {
                    let waiting = self.m.rdv_awaiting_to(dest);
                    self.t.rendezvous_c_isend_to(dest, len, waiting)
                }
                Hold::Borrowed => self.t.rendezvous_to(dest, len, false),
            };
        // Whether the receiver's verdict on this send's read counts
        // (`transport::fresh`): only a plain rendezvous by size is judged
        // (not a pool buffer's, nor a send through the ring).
        let judged = match hold {
            _ if !by_size => Judged::No,
            Hold::Pipelined if self.t.judges(len) => Judged::Blocking,
            Hold::Raw if self.t.judges_posted(len, true) => Judged::Posted,
            Hold::Borrowed if self.t.judges_posted(len, false) => Judged::Posted,
            _ => Judged::No,
        };
        // Unless the receiver found this rank's recent buffers of this
        // size slow to read (written just before their send): then for a
        // while a blocking send goes through the ring, or from
        // `fresh::SHARE_MIN` by a shared copy, and a send that does not
        // wait through the ring (`Transport::detour`).
        let detour = by_size && self.m.take_detour(dest, judged);
        let (rdv, share) = match (detour, judged) {
            (false, _) => (pool.is_some() || by_size, false),
            (true, Judged::Blocking) => match self.t.detour(len) {
                Detour::Ring => (false, false),
                Detour::Share => (true, true),
            },
            (true, _) => (false, false),
        };
        let mut hdr = Header {
            ctx,
            src,
            tag,
            kind: FrameKind::Data,
            token: 0,
        };
        let span = (pool.unwrap_or(data.as_ptr() as u64), data.len() as u64);
        let ack_slot = (sync || rdv).then(|| self.await_ack(&mut hdr, dest, rdv.then_some(span)));
        if let (true, Some(id)) = (rdv, ack_slot) {
            let waits = matches!(hold, Hold::Pipelined);
            let rts = Rts {
                addr: span.0,
                len: span.1,
                offer: None,
                // A blocking send's caller waits in this library: it takes
                // a shared-copy offer at once.
                waits,
                share,
                // A shared copy's read is not timed: only a plain one says
                // whether the buffer is still slow to read.
                timed: !share && judged != Judged::No,
            };
            self.m.slots[id].judged = if rts.timed { judged } else { Judged::No };
            self.send_rts(dest, &hdr, &rts, id);
            return (SendStart::Done, Some(id));
        }
        if dest == self.m.me {
            let me = self.m.me;
            self.m
                .arrive(hdr, me, data.len(), data, true, &mut [], false);
            self.flush_acks();
            return (SendStart::Done, ack_slot);
        }
        match self.t.send(dest, &hdr.pack(), data) {
            Sent::Done => (SendStart::Done, ack_slot),
            Sent::Partial(o) => (SendStart::Partial(o), ack_slot),
        }
    }

    /// A slot for a send that completes on the receiver's ack (`span`: a
    /// rendezvous send's bytes; see [`ACK_IF_WROTE`] for its other way to
    /// complete), under a fresh token written into `hdr` with the frame
    /// kind.
    fn await_ack(&mut self, hdr: &mut Header, dest: usize, span: Option<(u64, u64)>) -> SlotId {
        // 24-bit tokens; skip any still awaiting an ack (an issend that
        // was never matched) so a late ack cannot complete the wrong send.
        let mut token = self.m.next_token & 0x00ff_ffff;
        while self.m.awaiting.contains_key(&token) {
            self.m.next_token = self.m.next_token.wrapping_add(1);
            token = self.m.next_token & 0x00ff_ffff;
        }
        self.m.next_token = self.m.next_token.wrapping_add(1);
        hdr.kind = if span.is_some() {
            FrameKind::Rts
        } else {
            FrameKind::Sync
        };
        hdr.token = token;
        let id = self.m.alloc(SlotState::AwaitAck { ticket: None }, 0);
        let s = &mut self.m.slots[id];
        if let Some(span) = span {
            s.rendezvous = true;
            s.rdv_span = span;
        }
        s.wrote_back = false;
        s.front_acked = false;
        s.peer = Some(dest);
        s.send_ctx = hdr.ctx;
        self.m.awaiting.insert(token, id);
        if span.is_some() {
            if self.m.rdv_awaiting.len() <= dest {
                self.m.rdv_awaiting.resize(dest + 1, 0);
            }
            self.m.rdv_awaiting[dest] += 1;
        }
        id
    }

    /// Sends rendezvous request `rts` of slot `id` (queued when the ring
    /// is full).
    fn send_rts(&mut self, dest: usize, hdr: &Header, rts: &Rts, id: SlotId) {
        let (b, n) = rts.encode();
        self.m.rdv_sent += 1;
        if let Sent::Partial(out) = self.t.send(dest, &hdr.pack(), &b[..n]) {
            self.queue_send(out, &b[..n], Some(id));
        }
        self.t
            .split_ready(dest, rts.addr, rts.len as usize, rts.split_kind());
    }

    /// Starts a send of `data` lent from a scope by a revocable rendezvous
    /// (see `shm::offers`) where the transport's policy says so
    /// (`Transport::offer_to`): the receiver reads the caller's buffer,
    /// or, once the scope has ended, the copy the scope's end made
    /// (`lend()` makes the scope's cell for `data`). `None`: not by
    /// rendezvous (not to this peer at this size, the receiver cannot
    /// read this process, or all offer entries are in use); nothing was
    /// done. Standard and synchronous sends alike: the ack comes after
    /// the match.
    pub fn start_send_offered(
        &mut self,
        ctx: u32,
        src: u32,
        dest: usize,
        tag: i32,
        data: &[u8],
        lend: impl FnOnce() -> Lent,
    ) -> Option<(SendStart, Option<SlotId>)> {
        if self.t.is_dead(dest) || !self.t.offer_to(dest, data.len()) {
            return None;
        }
        let addr = data.as_ptr() as u64;
        let offer = self.t.open_offer(dest, addr)?;
        let rts = Rts {
            addr,
            len: data.len() as u64,
            offer: Some(offer.id()),
            waits: false,
            share: false,
            timed: false,
        };
        let lent = lend();
        lent.hold_offer(offer);
        let mut hdr = Header {
            ctx,
            src,
            tag,
            kind: FrameKind::Rts,
            token: 0,
        };
        let id = self.await_ack(&mut hdr, dest, Some((addr, rts.len)));
        self.m.slots[id].lent = Some(lent);
        self.send_rts(dest, &hdr, &rts, id);
        Some((SendStart::Done, Some(id)))
    }

    /// Continues a partial send from its buffer; true when complete.
    pub fn resume_send(&mut self, out: &mut OutMsg, data: &[u8]) -> bool {
        self.t.resume(out, data)
    }

    /// Hands the rest of a partial send to the transport's queue (copying
    /// it) and returns a slot that completes when it is all in the ring.
    /// With `ack_slot`, the synchronous send's slot tracks both.
    pub fn queue_send(&mut self, out: OutMsg, data: &[u8], ack_slot: Option<SlotId>) -> SlotId {
        let ticket = self.t.enqueue(out, data);
        self.queued_slot(ticket, ack_slot)
    }

    /// As [`queue_send`](Self::queue_send), without copying: the rest is
    /// pushed from the lent buffer (the whole message).
    pub fn queue_send_lent(
        &mut self,
        out: OutMsg,
        data: crate::transport::Lent,
        ack_slot: Option<SlotId>,
    ) -> SlotId {
        let ticket = self.t.enqueue_lent(out, data);
        self.queued_slot(ticket, ack_slot)
    }

    fn queued_slot(&mut self, ticket: Ticket, ack_slot: Option<SlotId>) -> SlotId {
        let id = self.queued_slot_of(ticket, ack_slot);
        if self.t.is_dead(ticket.peer()) {
            // Its peer died meanwhile: the queue will never drain.
            self.t.drop_sends_to(ticket.peer());
            self.fail_peer(ticket.peer());
        }
        id
    }

    fn queued_slot_of(&mut self, ticket: Ticket, ack_slot: Option<SlotId>) -> SlotId {
        match ack_slot {
            Some(id) => {
                if let SlotState::AwaitAck { ticket: t } = &mut self.m.slots[id].state {
                    *t = Some(ticket);
                } else {
                    // Acked already (possible only for local sends).
                    self.m.slots[id].state = SlotState::Queued(ticket);
                }
                id
            }
            None => self.m.alloc(SlotState::Queued(ticket), 0),
        }
    }

    /// Posts a receive of at most `cap` bytes. If an unexpected message
    /// matches, it is taken at once.
    #[inline]
    pub fn post_recv_from(
        &mut self,
        ctx: u32,
        src: i32,
        peer: Option<usize>,
        tag: i32,
        cap: usize,
    ) -> SlotId {
        let id = self.post_recv(ctx, src, tag, cap);
        if src >= 0 {
            self.m.slots[id].peer = peer;
            if peer.is_some_and(|p| self.t.is_dead(p)) {
                self.fail_peer(peer.unwrap_or(usize::MAX));
            }
        }
        // ANY_SOURCE, or a collective, where a member already died (no
        // lookup at all while no context reaches another job).
        if !self.m.far_ctx.is_empty() && (src < 0 || ctx & crate::p2p::COLL_BIT != 0) {
            if let Some(&p) = self
                .m
                .far_ctx
                .get(&ctx)
                .and_then(|far| far.iter().find(|&&p| self.t.is_dead(p)))
            {
                self.fail_peer(p);
            }
        }
        id
    }

    /// Notes the members of other jobs in context `ctx` (or forgets the
    /// context, with none).
    pub fn note_far_members(&mut self, ctx: u32, far: Vec<usize>) {
        if far.is_empty() {
            self.m.far_ctx.remove(&ctx);
        } else {
            self.m.far_ctx.insert(ctx, far);
        }
    }

    /// Fails every operation that waits on `peer` (dead): receives from
    /// it (posted or half received), sends queued to it or waiting for
    /// its ack. Their owners get `ProcFailed`.
    pub fn fail_peer(&mut self, peer: usize) {
        let err = super::proc_failed(peer);
        let filling = match self.m.inbound.get(peer) {
            Some(Inbound::Slot(id)) => Some(*id),
            _ => None,
        };
        for id in 0..self.m.slots.len() {
            let s = &self.m.slots[id];
            let (recv, hit) = match s.state {
                SlotState::Posted { ctx, src, .. } => (
                    true,
                    s.peer == Some(peer)
                        || ((src < 0 || ctx & crate::p2p::COLL_BIT != 0)
                            && self.m.far_ctx.get(&ctx).is_some_and(|f| f.contains(&peer))),
                ),
                SlotState::Filling { .. } => (true, filling == Some(id)),
                SlotState::Queued(t) => (false, t.peer() == peer),
                SlotState::AwaitAck { .. } => (false, s.peer == Some(peer)),
                _ => (false, false),
            };
            if !hit {
                continue;
            }
            if recv {
                if let Some(pos) = self.m.posted.iter().position(|&p| p == id) {
                    self.m.posted.remove(pos);
                }
                self.m.slots[id].state = SlotState::Done {
                    status: Status::null(),
                };
            } else {
                let before = self.m.awaiting.len();
                self.m.awaiting.retain(|_, v| *v != id);
                if self.m.awaiting.len() < before {
                    self.m.uncount(id);
                }
                self.m.slots[id].state = SlotState::Sent;
                if let Some(l) = self.m.slots[id].lent.take() {
                    l.retire_offer();
                }
            }
            self.m.slots[id].err = Some(err.clone());
            if self.m.slots[id].orphan {
                self.m.release(id);
            }
        }
        if let Some(i) = self.m.inbound.get_mut(peer) {
            *i = Inbound::Idle;
        }
        // Half-received messages from it will never be whole.
        self.m.unexpected.retain(|u| u.peer != peer || u.complete);
    }

    /// Looks at the peers of other jobs for life (at most every
    /// `bridge::FAR_CHECK`) and fails what waits on a dead one.
    #[inline]
    pub fn check_failures(&mut self) {
        if !self.t.has_far_peers() {
            return;
        }
        let dead = self.t.check_far();
        if dead.is_empty() {
            return;
        }
        // What a dead peer sent before it died still counts: take all of
        // it from its rings first (it writes no more).
        while self.progress_into(&mut []) > 0 {}
        for p in dead {
            self.fail_peer(p);
        }
    }

    /// Posts a receive (see [`post_recv_from`](Self::post_recv_from)).
    #[inline]
    pub fn post_recv(&mut self, ctx: u32, src: i32, tag: i32, cap: usize) -> SlotId {
        let id = self.m.alloc(SlotState::Posted { ctx, src, tag }, cap);
        if let Some(pos) = self.m.find_unexpected(ctx, src, tag) {
            self.m.claim(pos, id);
            self.flush_acks();
        } else {
            self.m.posted.push_back(id);
        }
        id
    }

    /// Forgets the unexpected messages of a freed communicator (contexts
    /// `ids`), so that a communicator that later reuses its index cannot
    /// match them: complete ones are dropped now, ones still arriving when
    /// their last fragment comes. Only an erroneous program leaves
    /// messages unreceived on a communicator it frees.
    pub fn purge_contexts(&mut self, ids: &[u32]) {
        // A dropped rendezvous request is acked unread, so its sender
        // does not wait for ever.
        for u in self.m.unexpected.iter() {
            if u.rts.is_some() && ids.contains(&u.hdr.ctx) {
                self.m.acks.push((u.peer, u.hdr.ctx, u.hdr.token, 0));
            }
        }
        self.m
            .unexpected
            .retain(|u| !(u.complete && ids.contains(&u.hdr.ctx)));
        for u in self.m.unexpected.iter_mut() {
            if ids.contains(&u.hdr.ctx) {
                u.dead = true;
            }
        }
    }

    /// The envelope of the first matching unexpected message, if any.
    pub fn iprobe(&self, ctx: u32, src: i32, tag: i32) -> Option<Status> {
        let pos = self.m.find_unexpected(ctx, src, tag)?;
        let u = &self.m.unexpected[pos];
        Some(Status {
            source: u.hdr.src as i32,
            tag: u.hdr.tag,
            bytes: u.total,
        })
    }

    /// Takes the first matching unexpected message out of the queue (a
    /// matched probe): only [`finish_recv`](Self::finish_recv) on the
    /// returned slot can receive it.
    pub fn improbe(&mut self, ctx: u32, src: i32, tag: i32) -> Option<(SlotId, Status)> {
        let pos = self.m.find_unexpected(ctx, src, tag)?;
        let st = {
            let u = &self.m.unexpected[pos];
            Status {
                source: u.hdr.src as i32,
                tag: u.hdr.tag,
                bytes: u.total,
            }
        };
        let id = self
            .m
            .alloc(SlotState::Posted { ctx, src, tag }, usize::MAX);
        self.m.claim(pos, id);
        self.flush_acks();
        Some((id, st))
    }

    /// Whether slot `id`'s operation is complete.
    pub fn is_complete(&self, id: SlotId) -> bool {
        let s = &self.m.slots[id];
        match s.state {
            SlotState::Done { .. } | SlotState::Sent => true,
            SlotState::Task => s.task_result.is_some(),
            _ => false,
        }
    }

    /// Makes receive slot `id` write into the sink lent for slot `lead`
    /// (a window of receives into one buffer, `Shared::recv_many_bytes`).
    pub fn share_sink(&mut self, id: SlotId, lead: SlotId) {
        self.m.slots[id].sink = lead;
    }

    /// Finishes a completed receive: copies its bytes into `dst`, frees
    /// the slot, and reports truncation as MPI does (the message is
    /// consumed; the error carries its envelope and full length).
    ///
    /// # Errors
    /// `Truncate` when the message was longer than `dst`.
    pub fn finish_recv(&mut self, id: SlotId, dst: &mut [u8]) -> Result<Status> {
        let SlotState::Done { status } = self.m.slots[id].state else {
            return Err(Error::new(
                ErrorClass::Intern,
                "receive finished before completion",
            ));
        };
        flush(&mut self.m.slots[id], dst);
        let err = self.m.slots[id].err.take();
        self.m.release(id);
        match err {
            Some(e) => Err(e),
            None => received(status, dst.len()),
        }
    }

    /// Whether slot `id` is a rendezvous send the receiver has not acked
    /// yet (its buffer is still being read).
    pub fn is_borrowing(&self, id: SlotId) -> bool {
        let s = &self.m.slots[id];
        s.rendezvous && s.lent.is_none() && !self.is_complete(id)
    }

    /// Whether a blocking receive from world rank `peer` may take its
    /// message straight from that peer's ring
    /// ([`recv_direct`](Self::recv_direct)): nothing posted could match
    /// first, no unexpected message matches, no fragments are arriving from
    /// `peer`, and nothing of this rank's own sending or acking waits for
    /// progress. Every [`DIRECT_STREAK`]-th time it says no, so that a
    /// rank receiving only this way still drains its other rings.
    #[inline(always)]
    pub fn direct_ok(&mut self, ctx: u32, src: i32, peer: usize, tag: i32) -> bool {
        self.direct_ok_posted(ctx, src, peer, tag, 0)
    }

    /// [`direct_ok`](Self::direct_ok) with exactly `posted` receives
    /// posted: 0 for a blocking receive, 1 for a posted one that is its
    /// own caller ([`posted_direct`](Self::posted_direct)).
    #[inline(always)]
    fn direct_ok_posted(
        &mut self,
        ctx: u32,
        src: i32,
        peer: usize,
        tag: i32,
        posted: usize,
    ) -> bool {
        self.m.streak += 1;
        if self.m.streak >= DIRECT_STREAK {
            self.m.streak = 0;
            return false;
        }
        // The common case, a quiet engine, in one test: every queue is
        // empty but for the `posted` receives (their lengths or'ed), and
        // so is every send.
        let m = &self.m;
        let queues = (m.posted.len() ^ posted)
            | m.tasks.len()
            | m.acks.len()
            | m.pulls.len()
            | m.splits.len()
            | m.unexpected.len();
        if queues == 0 && self.t.sends_quiet() {
            return peer != m.me && matches!(m.inbound.get(peer), Some(Inbound::Idle));
        }
        self.direct_ok_busy(ctx, src, peer, tag, posted)
    }

    /// Whether the posted receive `id` may be waited for by the blocking
    /// receive's fast path ([`wait_exact`](Self::wait_exact)): it names its
    /// source and tag, it alone is posted, and the rest of the engine is as
    /// [`direct_ok`](Self::direct_ok) wants it (so the message it would
    /// match is the next whole one from its peer with its header, and
    /// taking that frame past the matcher is what matching would do). Its
    /// (context, source, peer, tag) when so. Every
    /// [`DIRECT_STREAK`]-th time it says no, as `direct_ok` does.
    #[inline]
    pub fn posted_direct(&mut self, id: SlotId) -> Option<(u32, i32, usize, i32)> {
        if self.m.posted.len() != 1 || self.m.posted.front() != Some(&id) {
            return None;
        }
        let SlotState::Posted { ctx, src, tag } = self.m.slots[id].state else {
            return None;
        };
        if src < 0 || tag == ANY_TAG {
            return None;
        }
        let peer = self.m.slots[id].peer?;
        self.direct_ok_posted(ctx, src, peer, tag, 1)
            .then_some((ctx, src, peer, tag))
    }

    /// Completes the posted receive `id` with the message of `st` that
    /// [`wait_exact`](Self::wait_exact) took into a `cap`-byte buffer
    /// after [`posted_direct`](Self::posted_direct) said yes: out of the
    /// posted queue and freed; the status, or `Truncate` as MPI reports it.
    #[inline]
    pub fn finish_posted_direct(&mut self, id: SlotId, st: Status, cap: usize) -> Result<Status> {
        // `posted_direct` found it the only posted receive, and the lock
        // has been held since: the queue empties (cheaper than a
        // `pop_front`, which is not inlined).
        debug_assert!(
            self.m.posted.len() == 1 && self.m.posted.front() == Some(&id),
            "not the only posted receive"
        );
        self.m.posted.clear();
        self.m.release(id);
        received(st, cap)
    }

    /// Marks the posted receive `id` as stood for by a handle of the
    /// caller's with the word `key` (the C layer: the buffer's address),
    /// instead of a request object; returns the slot's generation, which
    /// [`key`](Self::key) and [`take_key`](Self::take_key) check, so a
    /// handle kept past the slot's release fits no later use of it.
    pub fn set_key(&mut self, id: SlotId, key: usize) -> u32 {
        let s = &mut self.m.slots[id];
        s.key = Some(key);
        s.gen
    }

    /// The key and capacity of slot `id` if it is still the keyed receive
    /// of generation `gen`; `None` for a handle that is stale (its
    /// receive finished), was taken ([`take_key`](Self::take_key)) or
    /// names no slot.
    #[inline]
    pub fn key(&self, id: SlotId, gen: u32) -> Option<(usize, usize)> {
        let s = self.m.slots.get(id)?;
        if s.gen != gen {
            return None;
        }
        Some((s.key?, s.cap))
    }

    /// [`key`](Self::key), and the slot no longer keyed: its owner now
    /// holds it by other means (a request object, or a wait in
    /// progress), and the handle's next lookup finds nothing until
    /// [`set_key`](Self::set_key) restores it.
    pub fn take_key(&mut self, id: SlotId, gen: u32) -> Option<(usize, usize)> {
        let r = self.key(id, gen)?;
        self.m.slots[id].key = None;
        Some(r)
    }

    /// [`direct_ok`](Self::direct_ok) when something is queued: each
    /// condition in turn (an unexpected message from another source or
    /// with another tag does not stop a direct receive).
    #[cold]
    #[inline(never)]
    fn direct_ok_busy(&mut self, ctx: u32, src: i32, peer: usize, tag: i32, posted: usize) -> bool {
        peer != self.m.me
            && self.m.posted.len() == posted
            && self.m.tasks.is_empty()
            && self.m.acks.is_empty()
            && self.m.pulls.is_empty()
            && self.m.splits.is_empty()
            && matches!(self.m.inbound.get(peer), Some(Inbound::Idle))
            && self.m.find_unexpected(ctx, src, tag).is_none()
            && self.t.sends_idle()
    }

    /// The receive fast path, valid after [`direct_ok`](Self::direct_ok)
    /// said yes (and while this thread holds the engine): if the front of
    /// `peer`'s ring is a whole standard-mode message for (`ctx`, `src`,
    /// `tag`), it goes straight into `buf`. `None`: the ring is empty;
    /// `Some(None)`: something else is in front, use the general path.
    pub fn recv_direct(
        &mut self,
        ctx: u32,
        src: i32,
        peer: usize,
        tag: i32,
        buf: &mut [u8],
    ) -> Option<Option<Result<Status>>> {
        let mut status = None;
        let front = self.t.take_sole(peer, |env, data, far| {
            let hdr = Header::unpack(env);
            if hdr.kind != FrameKind::Data || !hdr.matches(ctx, src, tag) {
                return false;
            }
            let n = data.len().min(buf.len());
            crate::transport::copy_awaited(&mut buf[..n], &data[..n], far);
            status = Some(Status {
                source: hdr.src as i32,
                tag: hdr.tag,
                bytes: data.len(),
            });
            true
        });
        match (front, status) {
            (Front::Empty, _) => None,
            (Front::Taken, Some(st)) => Some(Some(received(st, buf.len()))),
            _ => Some(None),
        }
    }

    /// [`recv_direct`](Self::recv_direct) for a receive that names its
    /// source and tag, waiting while `spin()` says so: the front frame of
    /// `peer`'s ring is taken if its header is `head`
    /// ([`sole_head`](Self::sole_head)), byte for byte
    /// ([`Transport::wait_exact`]).
    #[inline(always)]
    pub fn wait_exact(
        &mut self,
        peer: usize,
        head: &SoleHead,
        buf: &mut [u8],
        spin: impl FnMut() -> bool,
    ) -> Exact {
        self.t.wait_exact(peer, head, buf, spin)
    }

    /// The header a whole standard-mode message on context `ctx` from
    /// rank `src` of the communicator with `tag` (neither a wildcard)
    /// starts with in the ring.
    #[inline]
    pub fn sole_head(ctx: u32, src: i32, tag: i32) -> SoleHead {
        // A wildcard here would never match (the general path would take
        // every message, slowly): callers name both.
        debug_assert!(src >= 0 && tag != ANY_TAG, "sole_head of a wildcard");
        let env = Header {
            ctx,
            src: src as u32,
            tag,
            kind: FrameKind::Data,
            token: 0,
        }
        .pack();
        crate::transport::sole_head(&env)
    }

    /// This process's shared rendezvous copies so far.
    pub fn split_counts(&self) -> SplitCounts {
        SplitCounts {
            offered: self.m.split_offered,
            revoked: self.m.split_revoked,
            written: self.m.split_written,
            acked_early: self.m.split_acked_early,
        }
    }

    /// Whether a send on one of the contexts `ctx` has left the queues
    /// but still awaits its receiver's ack (a rendezvous send before the
    /// receiver has copied it, a synchronous send before the match).
    pub fn awaits_ack_on(&self, ctx: &[u32]) -> bool {
        self.m
            .awaiting
            .values()
            .any(|&id| ctx.contains(&self.m.slots[id].send_ctx))
    }

    /// Rendezvous messages sent and received so far: (sent, received);
    /// every other message went through the rings.
    pub fn rendezvous_counts(&self) -> (u64, u64) {
        (self.m.rdv_sent, self.m.rdv_received)
    }

    /// Frees a completed send's slot.
    ///
    /// # Errors
    /// `ProcFailed` when the receiver died first (a connected job).
    pub fn finish_send(&mut self, id: SlotId) -> Result<()> {
        let err = self.m.slots[id].err.take();
        self.m.release(id);
        err.map_or(Ok(()), Err)
    }

    /// The handle of slot `id` is gone: cancel a posted receive, or let the
    /// operation finish in the background and free the slot then.
    pub fn orphan(&mut self, id: SlotId) {
        match self.m.slots[id].state {
            SlotState::Posted { .. } => {
                if let Some(pos) = self.m.posted.iter().position(|&p| p == id) {
                    self.m.posted.remove(pos);
                }
                self.m.release(id);
            }
            SlotState::Done { .. } | SlotState::Sent => self.m.release(id),
            SlotState::Task if self.m.slots[id].task_result.is_some() => self.m.release(id),
            SlotState::Free => {}
            _ => self.m.slots[id].orphan = true,
        }
    }

    /// Cancels receive `id` if it has not matched a message yet
    /// (`MPI_Cancel`): true when it was still posted (its slot is then
    /// released); false when a message has matched it (it completes as
    /// usual).
    pub fn cancel_recv(&mut self, id: SlotId) -> bool {
        if !matches!(self.m.slots[id].state, SlotState::Posted { .. }) {
            return false;
        }
        if let Some(pos) = self.m.posted.iter().position(|&p| p == id) {
            self.m.posted.remove(pos);
        }
        self.m.release(id);
        true
    }

    /// The generation of slot `id` if it is a receive not yet matched:
    /// with `id`, what [`cancel_posted`](Self::cancel_posted) needs to
    /// reach it from another thread while its owner waits.
    pub fn posted_gen(&self, id: SlotId) -> Option<u32> {
        let gen = self.m.slots.get(id)?.gen;
        (self.recv_pending(id, gen) == Some(true)).then_some(gen)
    }

    /// Whether slot `id` of generation `gen` is a receive not yet
    /// finished: `Some(true)` while it waits for a message, `Some(false)`
    /// once one matched it; `None` for a slot of another generation or
    /// not a receive.
    pub fn recv_pending(&self, id: SlotId, gen: u32) -> Option<bool> {
        let s = self.m.slots.get(id)?;
        if s.gen != gen {
            return None;
        }
        match s.state {
            SlotState::Posted { .. } => Some(true),
            SlotState::Filling { .. } | SlotState::Done { .. } => Some(false),
            _ => None,
        }
    }

    /// Marks receive `id` of generation `gen` cancelled if it has not
    /// matched a message yet (`MPI_Cancel` from another thread while its
    /// owner waits for it, MPI 4.1 §3.8.4): out of the posted queue and
    /// complete with [`Status::cancelled`], for the owner's wait to
    /// finish as any receive (the slot is not freed under it). `Some(true)`
    /// when so; `Some(false)` when a message has matched it (it completes
    /// as usual); `None` for a slot of another generation or not a
    /// receive (its receive finished: a stale handle).
    pub fn cancel_posted(&mut self, id: SlotId, gen: u32) -> Option<bool> {
        if !self.recv_pending(id, gen)? {
            return Some(false);
        }
        if let Some(pos) = self.m.posted.iter().position(|&p| p == id) {
            self.m.posted.remove(pos);
        }
        self.m.slots[id].state = SlotState::Done {
            status: Status::cancelled(),
        };
        Some(true)
    }

    /// Whether `src` is a valid receive source for a context of `size`.
    pub fn valid_source(src: i32, size: usize) -> bool {
        src == ANY_SOURCE || (src >= 0 && (src as usize) < size)
    }
}
