//! Distant peers: a start-up probe of the cache-line hand-off between
//! each pair of ranks, which peers it finds far enough apart that their
//! ring frames stream ([`STREAM_MIN`]) and their larger messages go by
//! rendezvous, and how the verdict follows the placement while the job
//! runs ([`Drift`]).
//!
//! Whether two cores share a cache decides which large-message path is
//! faster. Through the ring every line crosses twice a lap (the sender
//! takes it back from the receiver's cache, the receiver reads it dirty
//! from the sender's), each crossing bound by the cores' hand-off latency;
//! the single copy (`process_vm_readv`) reads the sender's buffer once.
//! On the 2-vCPU EPYC VM of 2026-12-05 (family 23) the two vCPUs move
//! between one die (a one-way hand-off of about 0.075 µs) and two (about
//! 0.37 µs) from minute to minute: on one die the ring wins at 16-32 KiB
//! (1.9-2.2 against 3.0 µs one way at 16 KiB), on two it loses from 16 KiB
//! on (5.6 against 3.7-3.9 µs at 16 KiB, 10.1 against 5.3-5.6 at 32 KiB).
//! `docs/tuning.md`, "Distant peers", has the figures.
//!
//! The rate of a sender's own copies into the ring of a 16-32 KiB message
//! does not tell the two apart (tried: in a ping-pong it was 2.2-5 bytes per cycle on one die and
//! 1.5-5 on two, the ranks differing more than the placements), but the
//! hand-off latency does, by a factor of five. So after the start barrier,
//! while no message has been sent, every pair of ranks bounces a word
//! between their control blocks ([`ROUND_TRIPS`] round trips, the median
//! halved), in rounds of disjoint pairs ([`partner`]); a peer whose
//! hand-off takes more than [`DISTANT_NS`] is distant (on AMD; the mark
//! is `cma::Defaults::distant_ns`, none on Intel, `SHMPI_DISTANT_NS`).
//!
//! The verdict then follows the placement ([`Drift`]): on a VM the
//! hypervisor moves vCPUs between dies while a job runs (on the Zen 4 VM
//! of 2026-12-05 a 2-rank ping-pong of 4 MiB went from 0.14 to 1.6 ms
//! between two runs, and within one). From 8 KiB the rate of the
//! sender's copies into the ring does tell the placements apart there,
//! once the ring's pages have all been touched: 12-14 bytes per cycle with
//! a shared cache at the median, about 1 across dies (per message, runs
//! tagged by `shmpi-bench floor`; [`WATCH_MIN_FAMILY_25`] has the spread).
//! Elsewhere that was not measured, or not seen below 64 KiB
//! ([`WATCH_MIN`]). So one in [`SAMPLE_EVERY`] messages of the watch
//! minimum or more through the ring times its copies, judged in samples
//! of [`JUDGE`] bytes;
//! [`SLOW_IN_ROW`] slow samples in a row make the peer distant, one fast
//! one near again. While the peer is distant, [`JUDGE`] bytes of such
//! messages go plainly through the ring every [`EXPLORE_EVERY`] or so
//! (an exploration), to see whether the placement came back.
//!
//! The probe runs only when every rank can have a CPU of its own (ranks
//! at most the CPUs online); else spinning ranks would wait for each other
//! to be scheduled. Every wait has a deadline ([`WAIT`]); a rank that
//! misses one gives up the probe, says so in its word, and its partners
//! stop waiting for it: no peer is distant then.
//!
//! `SHMPI_DISTANT=all` makes every peer distant and `none` none, without
//! a probe; `SHMPI_DISTANT_RENDEZVOUS` sets the size from which a message
//! to a distant peer goes by rendezvous.

use crate::error::{Error, ErrorClass, Result};
use crate::shm::{ControlBlock, Segment};
use std::time::{Duration, Instant};

/// The default size from which a blocking send or plain `isend` to a
/// distant peer goes by rendezvous (`SHMPI_DISTANT_RENDEZVOUS`): 64 KiB
/// since the ring's frames to a distant peer stream ([`STREAM_MIN`]).
/// Across Zen 4 CCDs (2026-12-05, the peers' C ping-pong, runs tagged by
/// `shmpi-bench floor`), one-way µs, streamed ring against rendezvous:
/// 16 KiB 2.45-2.85 against 4.10, 32 KiB 3.94-4.48 against 5.12, 64 KiB
/// 7.0-7.3 against 5.8-6.9, 128 KiB 11.5-12.2 against 8.1-9.0. (With
/// plain stores the ring lost from 16 KiB: it was 16 KiB until then, from
/// the Zen 1 VM across dies, where the two were within 8% at 8 KiB.)
pub const DEFAULT_DISTANT_RENDEZVOUS: usize = 64 << 10;

/// The largest ring fragment of a message to a distant peer
/// (`SHMPI_DISTANT_FRAGMENT`; never more than the fragment size): its
/// frames are streamed to memory and its receiver copies each one out
/// while the next is written, so smaller fragments overlap more of the
/// two copies. Across Zen 4 CCDs (2026-12-06, `shmpi-bench latency`,
/// runs tagged by `shmpi-bench floor`), one-way µs, 8 KiB fragments
/// against one frame: 16 KiB 2.32-2.43 against 2.53-2.95, 32 KiB
/// 3.53-3.84 against 4.05-4.79 (`docs/benchmarks.md`, "Issue 6,
/// twenty-second pass"); a 64 KiB message goes by rendezvous
/// ([`DEFAULT_DISTANT_RENDEZVOUS`]), which was as fast as its eight
/// fragments.
pub const DEFAULT_DISTANT_FRAGMENT: usize = 8 << 10;

/// A peer whose one-way hand-off takes longer than this is distant, on
/// AMD (`SHMPI_DISTANT_NS`; Intel's row of `cma::Defaults` sets no mark,
/// since there the cores of a socket share their L3 even where the
/// hand-off takes 0.2 µs):
/// between the 0.02-0.12 µs seen with a shared cache (SMT siblings, one
/// Zen 4 CCD, one Zen 1 die) and the 0.20-0.21 µs seen across Zen 4 CCDs
/// (0.35-0.39 µs across Zen 1 dies). It was 200 ns until 2026-12-05, when
/// a Zen 4 VM across CCDs measured either side of it from run to run.
pub const DISTANT_NS: u32 = 150;

/// The smallest message whose ring frames to a distant peer are written
/// with non-temporal stores (`ring::Reservation::write_streaming`): the
/// lines go to memory, so the sender need not take them back from the
/// reader's caches and the reader reads them from memory instead of from
/// the sender's die. Across Zen 4 CCDs (2026-12-05, the peers' C
/// ping-pong through the ring, runs tagged by `shmpi-bench floor` before
/// and after), one-way µs, plain stores against streaming: 1 KiB 0.49-0.52
/// against 1.00-1.04, 2 KiB 1.34-1.38 against 1.15-1.18, 4 KiB 2.36-2.55
/// against 1.39-1.42, 8 KiB 4.0-4.6 against 1.82-1.89, 16 KiB 7.8-8.4
/// against 2.45-2.52, 64 KiB 30 against 7.2, 1 MiB 413-453 against 51.
/// With a shared cache streaming is two to three times slower (4 KiB
/// 0.35 against 1.0 µs), so only distant peers get it.
pub const STREAM_MIN: usize = 2 << 10;

/// The smallest message whose copies into the ring are timed
/// ([`Drift`]) where no row of `cma::Defaults` says otherwise
/// (`SHMPI_DISTANT_WATCH`). On the Zen 4 VM (2026-12-05 23:10 UTC, the
/// peers' C ping-pong with 8 KiB fragments, 12 runs tagged by
/// `shmpi-bench floor` before and after), the rate of a message's copies,
/// 5th percentile / median / 95th in MB/s: one CCD, 16 KiB 2,210-2,357 /
/// 15,574-29,735 / 37,151-38,916 (too spread, it seemed: the slow 5% were
/// the ring's first pass, see [`WATCH_MIN_FAMILY_25`]), 64 KiB
/// 23,531-32,062 / 32,062-36,348 / 39,196-41,426, 256 KiB 22,445-32,279 / 28,696-35,031 / 36,874-38,488;
/// two CCDs, 64 KiB 1,841-2,445 / 2,480-3,017 / 2,688-4,371, 256 KiB
/// 1,931-2,311 / 2,444-2,881 / 2,556-5,277. (On the Zen 1 VM at 16-32
/// KiB they did not separate either; see the module text.)
pub const WATCH_MIN: usize = 64 << 10;

/// [`WATCH_MIN`] on AMD family 25 (`SHMPI_DISTANT_WATCH` overrides
/// either). On the Zen 4 VM (model 17; 2026-12-06 00:31-00:41 UTC, the
/// peers' C ping-pong through the ring with every message of 4 KiB or more
/// timed, 2,000 round trips a run, runs tagged by `shmpi-bench floor`
/// before and after), the share of messages copied slower than
/// [`SLOW_RING`], and the median rate in MB/s: one CCD (18 runs a size),
/// 4 KiB 8.4-8.5% / 22,629-31,507, 8 KiB 4.2-4.8% / 31,507-37,236, 16 KiB
/// 3.0-3.1% / 32,702-39,960; two CCDs (5-6 runs a size), 4 KiB 69-90% /
/// 3,465-4,870, 8 KiB 94-98% / 2,810-3,029, 16 KiB 85-97% / 2,673-3,951.
/// The slow copies on one CCD were one pass round the ring (254-259
/// messages of 8 KiB, in the replying rank's ring): the first whose frames
/// went all the way round. The programs' 8-byte warm-up had ended its laps
/// early at the hot window, so the position counted hundreds of laps with
/// only 4 KiB of the ring written, and that pass faulted the pages in.
/// Timed, it had turned a near peer distant in every 8 KiB run; timing now
/// waits for a lap to the ring's end (`ring::Producer::has_lapped`). At 4
/// KiB the two CCDs' rates come too near the line. Zen 3 shares the family
/// and was not measured.
pub const WATCH_MIN_FAMILY_25: usize = 8 << 10;

/// One message in this many of the watch minimum or more is timed (an
/// exploration always is): two clock reads a fragment are a few percent
/// of a 64 KiB copy on one CCD (a read of the monotonic clock took 23-24
/// ns on the Zen 4 VM), a fifth of an 8 KiB one (for what that costs a
/// message see `docs/tuning.md`, "Following the placement").
pub const SAMPLE_EVERY: u32 = 4;

/// Timed copies are judged in samples of at least this many bytes (one
/// message or several): a preempted copy (a timer tick, the host taking
/// the vCPU) makes one 64 KiB copy look slow, and two such in a row
/// turned a near peer distant 18 times in 40 s of a 64 KiB ping-pong on
/// one CCD; over 256 KiB a 25 µs stall still leaves 8 GB/s. An
/// exploration times this much of the peer's traffic.
pub const JUDGE: u64 = 256 << 10;

/// Copies into the ring slower than this many bytes per µs (MB/s) count
/// as a distant placement (`SHMPI_DISTANT_SLOW` overrides it): the Zen 4
/// VM's messages ran 26-34 GB/s with a shared cache (the slowest single
/// message about 10) and 2.1-2.8 across CCDs; one `process_vm_readv`
/// shared with the sender moves about 20.
pub const SLOW_RING: u64 = 6_000;

/// Slow samples ([`JUDGE`]) in a row that make a peer distant.
pub const SLOW_IN_ROW: u8 = 2;

/// While a peer is distant, a message of the watch minimum or more goes
/// through the ring at most this often, to measure again (doubled for
/// each near verdict overturned before it stood, up to [`MAX_BACKOFF`]
/// times).
pub const EXPLORE_EVERY: Duration = Duration::from_millis(100);

/// One in this many messages of the watch minimum or more that reach a
/// distant peer's ring unexplored (they stream: below
/// `SHMPI_DISTANT_RENDEZVOUS`, or without single copy) reads the clock
/// to see whether an exploration is due (a read of the monotonic clock
/// took 23-24 ns on the Zen 4 VM, an 8 KiB message streamed across CCDs
/// 1.8 µs).
pub const EXPLORE_CHECK: u32 = 8;

/// How many times the exploration interval doubles at most: 1.6 s. An
/// exploration cannot tell a distant peer from a near one by itself: the
/// ring's lines have gone cold in the peer's caches meanwhile, so its
/// copies run fast either way (8.6-15.6 GB/s across Zen 4 CCDs, where the
/// steady ring ran 2.2-2.5); it makes the peer near, and the next
/// [`SLOW_IN_ROW`] samples distant again. With 64 KiB messages, one in
/// four timed, that is about 2.25 MiB through the ring across Zen 4 CCDs,
/// about 1 ms more than by rendezvous: under 0.1% of 1.6 s.
pub const MAX_BACKOFF: u32 = 4;

/// Fast samples ([`JUDGE`]) after which a near verdict stands (the
/// exploration interval goes back to [`EXPLORE_EVERY`]): a single slow
/// sample among them does not count against it, two in a row make the
/// peer distant and, before this many, overturn the verdict.
pub const CONFIRM: u32 = 8;

/// What [`Drift::start`] knows of a message's ring and peer.
#[derive(Clone, Copy, Debug)]
pub struct Start {
    /// The placement is followed (`SHMPI_DISTANT=auto`, the probe ran).
    pub watch: bool,
    /// The peer counts as distant now.
    pub distant: bool,
    /// The ring has been written all the way round
    /// (`ring::Producer::has_lapped`): before, a copy may fault its pages
    /// in (0.3-1 bytes per cycle).
    pub ring_warm: bool,
    /// The smallest message that may be timed or explore (the
    /// transport's [`WATCH_MIN`] or what replaced it).
    pub watch_min: usize,
}

/// What the timed copies into one peer's ring say of the placement (see
/// the module text). Kept by the sender for each ring it produces on.
#[derive(Debug, Default)]
pub struct Drift {
    /// The message being timed (its id), if any.
    timing: Option<u64>,
    /// Its bytes copied and the time the copies took so far.
    bytes: u64,
    nanos: u64,
    /// Slow samples in a row.
    slow: u8,
    /// Messages of the watch minimum or more that could have been timed
    /// ([`SAMPLE_EVERY`]).
    seen: u32,
    /// Fast samples since two slow ones last came in a row (up to
    /// [`CONFIRM`]).
    fast: u32,
    /// The exploration interval is [`EXPLORE_EVERY`] times 2 to this.
    backoff: u32,
    /// When an exploration was last decided, or a sample last made the
    /// peer distant: the next exploration waits an interval from there.
    last: Option<Instant>,
    /// Messages to the distant peer that reached the ring unexplored
    /// ([`EXPLORE_CHECK`]).
    unexplored: u32,
    /// Bytes of an exploration decided
    /// ([`claim_exploration`](Self::claim_exploration)) that are still to
    /// go: the next large messages to the distant peer go plainly through
    /// the ring, timed, until [`JUDGE`] bytes have.
    explore: u64,
    /// The timed bytes of the sample being gathered, and the time their
    /// copies took.
    sample_bytes: u64,
    sample_nanos: u64,
    /// The message being written with streaming stores (its id), if any.
    streaming: Option<u64>,
    /// The verdict of the last sample, until the transport takes it.
    verdict: Option<bool>,
    /// The rate of the last sample judged, MB/s.
    rate: u64,
}

impl Drift {
    /// At a message's first frame: decides how its frames are written and
    /// whether their copies are timed. To a `distant` peer a message of
    /// [`STREAM_MIN`] bytes or more streams, except those of `how.watch_min`
    /// or more that make up an exploration ([`JUDGE`] bytes), which must
    /// copy as a near peer's would to measure; with `watch` one message in
    /// [`SAMPLE_EVERY`] of `how.watch_min` or more that do not stream is
    /// timed (and the exploration), once the ring has been written all the
    /// way round (`how.ring_warm`).
    ///
    /// A distant peer's messages that reach the ring unexplored (below the
    /// rendezvous size, or without single copy) stream and say nothing of
    /// the placement, so one in [`EXPLORE_CHECK`] of them claims an
    /// exploration if one is due ([`claim_exploration`](Self::claim_exploration)).
    pub fn start(&mut self, id: u64, total: usize, how: Start) {
        let large = how.watch && total >= how.watch_min;
        if large && how.distant && self.explore == 0 {
            self.unexplored = self.unexplored.wrapping_add(1);
            if self.unexplored % EXPLORE_CHECK == 0 {
                self.claim_exploration(Instant::now());
            }
        }
        let explores = large && how.distant && self.explore > 0;
        if explores {
            self.explore = self.explore.saturating_sub(total as u64);
        }
        let streams = how.distant && total >= STREAM_MIN && !explores;
        self.streaming = streams.then_some(id);
        let timed = large && how.ring_warm && !streams && {
            self.seen = self.seen.wrapping_add(1);
            explores || self.seen % SAMPLE_EVERY == 0
        };
        self.timing = timed.then_some(id);
        self.bytes = 0;
        self.nanos = 0;
    }

    /// Whether a near peer's next message of the watch minimum or more,
    /// into a ring that is `ring_warm` or not, goes untimed, as
    /// [`start`](Self::start) would decide. Changes nothing: a sender
    /// that then writes the message by another path than `start`'s says
    /// so by [`skipped`](Self::skipped); one that finds no room for it
    /// there leaves it to `start`, which counts it once.
    pub fn skips(&self, ring_warm: bool) -> bool {
        !ring_warm || self.seen.wrapping_add(1) % SAMPLE_EVERY != 0
    }

    /// A message that [`skips`](Self::skips) let go untimed was written:
    /// it counts as seen (a ring not yet warm counts none, as in
    /// [`start`](Self::start)).
    pub fn skipped(&mut self, ring_warm: bool) {
        if ring_warm {
            self.seen = self.seen.wrapping_add(1);
        }
    }

    /// Whether message `id`'s frames are written with streaming stores.
    #[inline]
    pub fn streams(&self, id: u64) -> bool {
        self.streaming == Some(id)
    }

    /// Whether message `id`'s copies are being timed.
    #[inline]
    pub fn times(&self, id: u64) -> bool {
        self.timing == Some(id)
    }

    /// One copy of the timed message: `bytes` in `took`.
    pub fn add(&mut self, bytes: usize, took: Duration) {
        self.bytes += bytes as u64;
        self.nanos += took.as_nanos() as u64;
    }

    /// A timed message is wholly in the ring (at `now`; the transport
    /// calls this for timed messages only, so the other large messages
    /// read no clock; for any other it does nothing): its copies join the
    /// sample, and a sample of [`JUDGE`] bytes gives a verdict, slow below
    /// `slow` MB/s ([`SLOW_RING`] unless `SHMPI_DISTANT_SLOW` says
    /// otherwise) ([`take_verdict`](Self::take_verdict)): distant after
    /// [`SLOW_IN_ROW`] slow samples in a row (the next exploration an
    /// interval after it), near after a fast one.
    pub fn end(&mut self, now: Instant, slow: u64) {
        if self.timing.take().is_none() {
            return;
        }
        self.sample_bytes += self.bytes;
        self.sample_nanos += self.nanos;
        if self.sample_bytes < JUDGE || self.sample_nanos == 0 {
            return;
        }
        // Bytes per µs: bytes * 1000 / ns.
        let rate = self.sample_bytes.saturating_mul(1000) / self.sample_nanos;
        self.sample_bytes = 0;
        self.sample_nanos = 0;
        self.rate = rate;
        if rate < slow {
            self.slow = self.slow.saturating_add(1);
            if self.slow >= SLOW_IN_ROW {
                if (1..CONFIRM).contains(&self.fast) {
                    // A near verdict overturned: explore less often.
                    self.backoff = (self.backoff + 1).min(MAX_BACKOFF);
                }
                self.fast = 0;
                self.verdict = Some(true);
                self.last = Some(now);
            }
        } else {
            self.slow = 0;
            self.fast = (self.fast + 1).min(CONFIRM);
            if self.fast == CONFIRM {
                self.backoff = 0;
            }
            self.verdict = Some(false);
        }
    }

    /// The verdict of the timed messages since the last call (`Some(true)`:
    /// distant), if they gave one.
    pub fn take_verdict(&mut self) -> Option<bool> {
        self.verdict.take()
    }

    /// The copy rate of the last sample judged, MB/s (0: none yet).
    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// Whether a message of the watch minimum or more to a distant peer
    /// should go through the ring at `now` to measure again: no
    /// exploration was decided, and no sample made the peer distant, for
    /// the exploration interval ([`interval`](Self::interval)); at once
    /// when neither ever happened (a peer the probe found distant).
    pub fn explore_due(&self, now: Instant) -> bool {
        self.last
            .is_none_or(|t| now.saturating_duration_since(t) >= self.interval())
    }

    /// Decides an exploration at `now` if one is due (true): the caller
    /// sends this message through the ring, and no other message is an
    /// exploration until the interval has passed again, however many are
    /// decided meanwhile (a window of them).
    pub fn claim_exploration(&mut self, now: Instant) -> bool {
        if !self.explore_due(now) {
            return false;
        }
        self.last = Some(now);
        self.explore = JUDGE;
        true
    }

    /// The exploration interval now: [`EXPLORE_EVERY`], doubled for each
    /// near verdict overturned (two slow messages in a row) before it
    /// stood ([`CONFIRM`] fast messages), up to [`MAX_BACKOFF`] times.
    pub fn interval(&self) -> Duration {
        EXPLORE_EVERY * (1 << self.backoff)
    }
}

/// Timed round trips per pair (after `WARM_TRIPS` untimed ones).
pub const ROUND_TRIPS: u64 = 32;

/// Untimed round trips before the timed ones.
const WARM_TRIPS: u64 = 4;

/// How long a rank waits for its partner's next word before it gives up
/// the probe.
pub const WAIT: Duration = Duration::from_millis(20);

/// A word's round tag: round `r` is `r + 1` in the top 24 bits, so no
/// word of a round equals the zeroed start or another round's.
const ROUND_SHIFT: u32 = 40;
/// The low bits of a result word carry the one-way time in ns.
const RESULT: u64 = 1 << 39;
/// The word of a rank that gave up the probe.
const GAVE_UP: u64 = u64::MAX;

/// `SHMPI_DISTANT`: how peers are judged distant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DistantMode {
    /// By the start-up probe (the default).
    Auto,
    /// Every peer distant, no probe.
    All,
    /// No peer distant, no probe.
    None,
}

impl DistantMode {
    /// The value of `SHMPI_DISTANT` that selects this mode.
    pub fn name(self) -> &'static str {
        match self {
            DistantMode::Auto => "auto",
            DistantMode::All => "all",
            DistantMode::None => "none",
        }
    }

    /// Reads `SHMPI_DISTANT` (unset: `auto`; see [`parse`](Self::parse)).
    ///
    /// # Errors
    /// As [`parse`](Self::parse).
    pub fn from_env() -> Result<DistantMode> {
        std::env::var("SHMPI_DISTANT").map_or(Ok(DistantMode::Auto), |v| DistantMode::parse(&v))
    }

    /// The mode a value of `SHMPI_DISTANT` names: `auto` (or empty),
    /// `all`, `none` (or `0`).
    ///
    /// # Errors
    /// `Arg` for any other value.
    pub fn parse(v: &str) -> Result<DistantMode> {
        match v.trim() {
            "" | "auto" => Ok(DistantMode::Auto),
            "all" => Ok(DistantMode::All),
            "none" | "0" => Ok(DistantMode::None),
            other => Err(Error::new(
                ErrorClass::Arg,
                format!("SHMPI_DISTANT={other}: expected auto, all or none"),
            )),
        }
    }
}

/// Rounds of the probe for `n` ranks: every pair meets once, each rank in
/// at most one pair per round (the circle method).
pub fn rounds(n: usize) -> usize {
    if n < 2 {
        0
    } else {
        n + n % 2 - 1
    }
}

/// The partner of rank `me` (of `n`) in round `r` of [`rounds`]`(n)`;
/// `None`: a bye (odd `n`). With `m` = `n` rounded up to even, rank `m - 1`
/// meets rank `r`, and every other rank `x` meets `(2r - x) mod (m - 1)`.
pub fn partner(n: usize, me: usize, r: usize) -> Option<usize> {
    let m = n + n % 2;
    let k = m - 1;
    let p = if me == k {
        r
    } else if me == r {
        k
    } else {
        (2 * r + k - me) % k
    };
    (p < n && p != me).then_some(p)
}

/// One-way hand-off times (ns) from this rank to each of the `n` ranks of
/// `seg` (`None` for itself), measured in rounds of disjoint pairs, the
/// lower rank of each pair timing it. `None` for every peer when the
/// probe was given up (a partner missed a deadline, here or there).
pub fn probe(seg: &Segment, me: usize, n: usize) -> Vec<Option<u32>> {
    let mut out = vec![None; n];
    let mine = seg.control(me);
    for r in 0..rounds(n) {
        let Some(p) = partner(n, me, r) else {
            continue;
        };
        let tag = (r as u64 + 1) << ROUND_SHIFT;
        let theirs = seg.control(p);
        // Spins until the partner's word satisfies `ok` (`Some`), or it
        // gave up or missed the deadline (`None`).
        let wait = |ok: &dyn Fn(u64) -> bool| -> Option<u64> {
            let end = Instant::now() + WAIT;
            let mut spins = 0u32;
            loop {
                let v = theirs.ping();
                if v == GAVE_UP {
                    return None;
                }
                if ok(v) {
                    return Some(v);
                }
                spins = spins.wrapping_add(1);
                if spins % 256 == 0 && Instant::now() > end {
                    return None;
                }
                std::hint::spin_loop();
            }
        };
        let got = if me < p {
            ping(mine, tag, &wait)
        } else {
            pong(mine, tag, &wait)
        };
        match got {
            Some(ns) => out[p] = Some(ns),
            None => {
                mine.set_ping(GAVE_UP);
                return vec![None; n];
            }
        }
    }
    out
}

/// Spins until the partner's word satisfies the test given (`Some` of the
/// word), or the partner gave up or missed the deadline (`None`).
type Wait<'a> = &'a dyn Fn(&dyn Fn(u64) -> bool) -> Option<u64>;

/// The timing side of a pair: a handshake, [`WARM_TRIPS`] and
/// [`ROUND_TRIPS`] round trips, then the median, halved, published for
/// the partner. `None`: the partner missed a deadline or gave up.
fn ping(mine: &ControlBlock, tag: u64, wait: Wait<'_>) -> Option<u32> {
    let mut trips = Vec::with_capacity(ROUND_TRIPS as usize);
    for k in 0..=WARM_TRIPS + ROUND_TRIPS {
        let t = Instant::now();
        mine.set_ping(tag | k);
        wait(&|v| v == tag | k)?;
        if k > WARM_TRIPS {
            trips.push(t.elapsed().as_nanos() as u64);
        }
    }
    trips.sort_unstable();
    let one_way = (trips[trips.len() / 2] / 2).min(RESULT - 1) as u32;
    mine.set_ping(tag | RESULT | u64::from(one_way));
    Some(one_way)
}

/// The echoing side of a pair: answers each word of the partner, then
/// reads its result. `None`: the partner missed a deadline or gave up.
fn pong(mine: &ControlBlock, tag: u64, wait: Wait<'_>) -> Option<u32> {
    for k in 0..=WARM_TRIPS + ROUND_TRIPS {
        wait(&|v| v == tag | k)?;
        mine.set_ping(tag | k);
    }
    let v = wait(&|v| v & !(RESULT - 1) == tag | RESULT)?;
    Some((v & (RESULT - 1)) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Times message `id` of `total` bytes as copies of `bytes` at
    /// `mbs` MB/s each, then ends it at `now`.
    fn timed(d: &mut Drift, id: u64, total: usize, mbs: u64, now: Instant) {
        // Untimed messages (sampling) before the one timed.
        let mut k = 0;
        loop {
            d.start(id * 100 + k, total, NEAR);
            if d.times(id * 100 + k) {
                break;
            }
            d.end(now, SLOW_RING);
            assert_eq!(d.take_verdict(), None, "an untimed message judged");
            k += 1;
            assert!(k < u64::from(SAMPLE_EVERY), "none timed in {SAMPLE_EVERY}");
        }
        assert!(d.times(id * 100 + k));
        for _ in 0..total / (64 << 10) {
            d.add(64 << 10, Duration::from_nanos((64 << 10) * 1000 / mbs));
        }
        d.end(now, SLOW_RING);
    }

    const NEAR: Start = Start {
        watch: true,
        distant: false,
        ring_warm: true,
        watch_min: WATCH_MIN,
    };

    #[test]
    fn frames_to_a_distant_peer_stream_from_stream_min_except_an_exploration() {
        let t0 = Instant::now();
        let far = Start {
            distant: true,
            ..NEAR
        };
        let mut d = Drift::default();
        d.start(1, STREAM_MIN - 1, far);
        assert!(!d.streams(1) && !d.times(1));
        d.start(2, STREAM_MIN, NEAR);
        assert!(!d.streams(2), "near peers never stream");
        d.start(3, STREAM_MIN, far);
        assert!(d.streams(3) && !d.streams(2) && !d.times(3));
        // No exploration decided: a large message streams too.
        d.start(4, WATCH_MIN, far);
        assert!(d.streams(4) && !d.times(4));
        // Nothing went through the ring yet: an exploration is due, and
        // only one is decided however many messages ask at once.
        assert!(d.claim_exploration(t0));
        assert!(!d.claim_exploration(t0), "a window explores once");
        // The exploration: JUDGE bytes of large messages, plain and timed.
        for id in 50..50 + JUDGE / WATCH_MIN as u64 {
            d.start(id, WATCH_MIN, far);
            assert!(!d.streams(id) && d.times(id), "exploring");
            d.add(WATCH_MIN, Duration::from_micros(2));
            d.end(t0, SLOW_RING);
        }
        assert_eq!(d.take_verdict(), Some(false), "32 GB/s: near");
        d.start(6, WATCH_MIN, far);
        assert!(d.streams(6), "the next one streams again");
        d.end(t0 + EXPLORE_EVERY / 2, SLOW_RING);
        assert_eq!(d.take_verdict(), None, "a streamed message says nothing");
        assert!(!d.claim_exploration(t0 + EXPLORE_EVERY / 2));
        assert!(d.claim_exploration(t0 + EXPLORE_EVERY));
        // Unwatched (SHMPI_DISTANT=all): always streams, never explores.
        let all = Start {
            watch: false,
            ..far
        };
        d.start(7, 4 * WATCH_MIN, all);
        assert!(d.streams(7) && !d.times(7));
    }

    /// A distant peer's streamed messages (below the rendezvous size)
    /// explore too: one in EXPLORE_CHECK looks at the clock, and the
    /// exploration it claims makes the next JUDGE bytes plain and timed.
    /// Messages below the watch minimum never count.
    #[test]
    fn streamed_messages_to_a_distant_peer_explore_now_and_then() {
        let far = Start {
            distant: true,
            watch_min: 8 << 10,
            ..NEAR
        };
        let mut d = Drift::default();
        for id in 0..4 * u64::from(EXPLORE_CHECK) {
            d.start(id, (8 << 10) - 1, far);
            assert!(d.streams(id) && !d.times(id), "below the minimum");
        }
        for id in 1..u64::from(EXPLORE_CHECK) {
            d.start(id, 8 << 10, far);
            assert!(d.streams(id) && !d.times(id), "message {id}");
        }
        // Nothing went through the ring yet: the check finds one due.
        let n = JUDGE / (8 << 10);
        for id in 100..100 + n {
            d.start(id, 8 << 10, far);
            assert!(!d.streams(id) && d.times(id), "exploring: message {id}");
            d.add(8 << 10, Duration::from_nanos(300));
            d.end(Instant::now(), SLOW_RING);
        }
        assert_eq!(d.take_verdict(), Some(false), "27 GB/s: near");
        // The interval has not passed: the next checks claim nothing.
        for id in 200..200 + 2 * u64::from(EXPLORE_CHECK) {
            d.start(id, 8 << 10, far);
            assert!(d.streams(id), "message {id}");
        }
    }

    /// The quick path's part of the sampling: of a near peer's messages,
    /// three in four skip the timing and the fourth is left to `start`,
    /// which times it; a ring not yet warm skips them all, uncounted.
    #[test]
    fn near_messages_skip_the_timing_but_one_in_sample_every() {
        let mut d = Drift::default();
        assert!(d.skips(false) && d.skips(false));
        d.skipped(false);
        for id in 0..3u64 {
            for _ in 1..SAMPLE_EVERY {
                // Asking again before the message is written (the quick
                // path found no room, the caller tried once more) counts
                // nothing.
                assert!(d.skips(true) && d.skips(true));
                d.skipped(true);
            }
            assert!(!d.skips(true), "the one to time");
            assert!(!d.skips(true), "asking twice");
            d.start(id, WATCH_MIN, NEAR);
            assert!(d.times(id), "message {id}");
            d.end(Instant::now(), SLOW_RING);
        }
        // A skipped message whose quick path found no room goes to
        // `start`, which counts it once: the fourth after the last timed
        // one is timed, whatever path the others took.
        assert!(d.skips(true));
        d.start(10, WATCH_MIN, NEAR);
        assert!(!d.times(10));
        for _ in 2..SAMPLE_EVERY {
            assert!(d.skips(true));
            d.skipped(true);
        }
        assert!(!d.skips(true), "the one to time");
    }

    #[test]
    fn two_slow_messages_in_a_row_make_a_peer_distant_and_one_fast_one_near() {
        let now = Instant::now();
        let mut d = Drift::default();
        timed(&mut d, 1, 1 << 20, 30_000, now);
        assert_eq!(d.take_verdict(), Some(false));
        assert_eq!(d.take_verdict(), None, "a verdict is taken once");
        timed(&mut d, 2, 1 << 20, 2_500, now);
        assert_eq!(d.take_verdict(), None, "one slow message is not enough");
        timed(&mut d, 3, 1 << 20, 25_000, now);
        assert_eq!(d.take_verdict(), Some(false));
        timed(&mut d, 4, 1 << 20, 2_500, now);
        timed(&mut d, 5, 4 << 20, 5_999, now);
        assert_eq!(d.take_verdict(), Some(true));
        timed(&mut d, 6, 1 << 20, 2_000, now);
        assert_eq!(d.take_verdict(), Some(true), "still distant");
        timed(&mut d, 7, 1 << 20, 6_000, now);
        assert_eq!(d.take_verdict(), Some(false), "one fast message: near");
    }

    #[test]
    fn explorations_overturned_back_off_and_a_standing_near_verdict_resets_them() {
        let now = Instant::now();
        let mut d = Drift::default();
        assert_eq!(d.interval(), EXPLORE_EVERY);
        let mut id = 0;
        let mut msg = |d: &mut Drift, mbs| {
            id += 1;
            timed(d, id, 1 << 20, mbs, now);
            d.take_verdict()
        };
        // Distant: two slow messages after none fast; the first
        // exploration an interval later.
        msg(&mut d, 2_000);
        assert_eq!(msg(&mut d, 2_000), Some(true));
        assert_eq!(d.interval(), EXPLORE_EVERY, "no exploration yet");
        assert!(!d.explore_due(now + EXPLORE_EVERY / 2));
        assert!(d.explore_due(now + EXPLORE_EVERY));
        // Each exploration (a fast cold ring) overturned by two slow ones.
        for k in 1..=MAX_BACKOFF + 2 {
            assert_eq!(msg(&mut d, 12_000), Some(false));
            msg(&mut d, 2_000);
            assert_eq!(msg(&mut d, 2_000), Some(true));
            assert_eq!(d.interval(), EXPLORE_EVERY * (1 << k.min(MAX_BACKOFF)));
        }
        // The placement came back: a near verdict stands after CONFIRM.
        for _ in 0..CONFIRM - 1 {
            assert_eq!(msg(&mut d, 30_000), Some(false));
        }
        assert_eq!(d.interval(), EXPLORE_EVERY * (1 << MAX_BACKOFF));
        msg(&mut d, 30_000);
        assert_eq!(d.interval(), EXPLORE_EVERY);
        // One slow message among fast ones changes nothing.
        msg(&mut d, 2_000);
        assert_eq!(msg(&mut d, 30_000), Some(false));
        assert_eq!(d.interval(), EXPLORE_EVERY);
    }

    #[test]
    fn short_messages_and_a_cold_ring_are_not_timed_and_explore_nothing() {
        let t0 = Instant::now();
        let mut d = Drift::default();
        assert!(d.explore_due(t0), "nothing went through the ring yet");
        d.start(1, WATCH_MIN - 1, NEAR);
        assert!(!d.times(1));
        let cold = Start {
            ring_warm: false,
            ..NEAR
        };
        d.start(2, WATCH_MIN, cold);
        assert!(!d.times(2), "first lap: page faults, not placement");
        d.end(t0, SLOW_RING);
        assert_eq!(d.take_verdict(), None);
        assert!(d.explore_due(t0), "an untimed message is no exploration");
        // A message whose copies took no measurable time gives no verdict.
        d.start(3, WATCH_MIN, NEAR);
        d.add(WATCH_MIN, Duration::ZERO);
        d.end(t0, SLOW_RING);
        assert_eq!(d.take_verdict(), None);
    }

    #[test]
    fn every_pair_meets_once_and_no_rank_twice_in_a_round() {
        for n in 0..=17 {
            let mut met = vec![vec![0u32; n]; n];
            for r in 0..rounds(n) {
                for (me, row) in met.iter_mut().enumerate() {
                    if let Some(p) = partner(n, me, r) {
                        assert_eq!(partner(n, p, r), Some(me), "n {n} round {r}");
                        row[p] += 1;
                    }
                }
            }
            for (a, row) in met.iter().enumerate() {
                for (b, &c) in row.iter().enumerate() {
                    assert_eq!(c, u32::from(a != b), "n {n}: {a} met {b} {c} times");
                }
            }
        }
    }

    #[test]
    fn the_modes_parse_from_their_names_and_others_are_refused() {
        for m in [DistantMode::Auto, DistantMode::All, DistantMode::None] {
            assert_eq!(DistantMode::parse(m.name()).unwrap(), m);
        }
        assert_eq!(DistantMode::parse("").unwrap(), DistantMode::Auto);
        assert_eq!(DistantMode::parse(" 0 ").unwrap(), DistantMode::None);
        let e = DistantMode::parse("far").unwrap_err();
        assert_eq!(e.class(), ErrorClass::Arg);
        assert!(e.to_string().contains("SHMPI_DISTANT=far"), "{e}");
    }
}
