//! Distant peers: a start-up probe of the cache-line hand-off between
//! each pair of ranks, and which peers it finds far enough apart that
//! their larger messages go by rendezvous.
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
//! The rate of a sender's own copies into the ring does not tell the two
//! apart (tried: in a ping-pong it was 2.2-5 bytes per cycle on one die and
//! 1.5-5 on two, the ranks differing more than the placements), but the
//! hand-off latency does, by a factor of five. So after the start barrier,
//! while no message has been sent, every pair of ranks bounces a word
//! between their control blocks ([`ROUND_TRIPS`] round trips, the median
//! halved), in rounds of disjoint pairs ([`partner`]); a peer whose
//! hand-off takes more than [`DISTANT_NS`] is distant. It is measured once:
//! a job on a machine whose placement changes while it runs keeps its
//! start's verdict.
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
/// distant peer goes by rendezvous (`SHMPI_DISTANT_RENDEZVOUS`): from
/// 16 KiB the rendezvous took two thirds of the ring's time or less in
/// the far placement (at 8 KiB the two were within 8%), and messages
/// below the pool threshold (16 KiB) keep the inlined eager path.
pub const DEFAULT_DISTANT_RENDEZVOUS: usize = 16 << 10;

/// A peer whose one-way hand-off takes longer than this is distant:
/// between the 0.02-0.12 µs seen with a shared cache and the 0.35-0.39 µs
/// seen across dies.
pub const DISTANT_NS: u32 = 200;

/// Timed round trips per pair (after [`WARM_TRIPS`] untimed ones).
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
