//! The wait ladder: spin, then yield, then sleep on the futex doorbell.
//!
//! A [`Waiter`] is used by a caller that loops "poll, check, pause". It
//! spins for a short time (the peer may answer within a cache-line round
//! trip), its first rounds ([`DEFAULT_FINE_SPINS`], `SHMPI_FINE_SPINS`)
//! paced by [`poll_pause`](crate::ring::poll_pause) (a look every few
//! ns) and the rest by PAUSE (which leaves more of the core to a
//! hyperthread sibling), then yields the core (other ranks may need it:
//! tests run 8 ranks on 2 cores), then sleeps on this rank's doorbell until
//! a peer publishes work or a timeout passes. Every pause is bounded; the
//! caller owns the overall deadline.

use std::time::{Duration, Instant};

/// Default time spent spinning before yielding, when every rank has a
/// core. `SHMPI_SPIN_US` overrides it.
pub const DEFAULT_SPIN_US: u64 = 50;
/// Default spin time when ranks outnumber cores.
pub const DEFAULT_SPIN_US_OVERSUBSCRIBED: u64 = 2;
/// Default time spent yielding before sleeping. `SHMPI_YIELD_US`
/// overrides it.
pub const DEFAULT_YIELD_US: u64 = 200;
/// Longest single futex sleep; a safety net, not a protocol need.
pub const MAX_SLEEP: Duration = Duration::from_millis(100);

/// Spin rounds before a waiter first looks at the clock.
pub const FREE_SPINS: u32 = 128;
/// Default spin rounds paced by [`poll_pause`](crate::ring::poll_pause)
/// rather than PAUSE: about a microsecond here, longer than a small
/// message's round trip. `SHMPI_FINE_SPINS` overrides it (0: PAUSE
/// only).
pub const DEFAULT_FINE_SPINS: u32 = 128;

/// How long each rung of the ladder lasts.
#[derive(Clone, Copy, Debug)]
pub struct WaitPolicy {
    /// Spinning phase.
    pub spin: Duration,
    /// Yielding phase (after spinning).
    pub yield_for: Duration,
    /// Spin rounds paced finely before PAUSE takes over.
    pub fine_spins: u32,
}

impl WaitPolicy {
    /// The policy for a job of `nranks` ranks on this machine, with the
    /// `SHMPI_SPIN_US` / `SHMPI_YIELD_US` / `SHMPI_FINE_SPINS` overrides.
    ///
    /// # Errors
    /// `Arg` naming a variable whose value is not a number.
    pub fn for_job(nranks: usize) -> crate::Result<WaitPolicy> {
        let cores = online_cpus();
        let spin_default = if nranks > cores {
            DEFAULT_SPIN_US_OVERSUBSCRIBED
        } else {
            DEFAULT_SPIN_US
        };
        let us = |var: &str, what: &str, d: u64| {
            super::env_number(var, what).map(|v| v.map_or(d, |v| v as u64))
        };
        Ok(WaitPolicy {
            spin: Duration::from_micros(us(
                "SHMPI_SPIN_US",
                "a time in microseconds",
                spin_default,
            )?),
            yield_for: Duration::from_micros(us(
                "SHMPI_YIELD_US",
                "a time in microseconds",
                DEFAULT_YIELD_US,
            )?),
            fine_spins: us(
                "SHMPI_FINE_SPINS",
                "a number of rounds",
                DEFAULT_FINE_SPINS.into(),
            )?
            .try_into()
            .unwrap_or(u32::MAX),
        })
    }
}

/// CPUs online on this machine. Not `available_parallelism`, which
/// counts this process's affinity mask: a rank pinned to one CPU would
/// think every job oversubscribed.
pub fn online_cpus() -> usize {
    // SAFETY: `sysconf` reads a system constant; no memory is involved.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 {
        n as usize
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

/// One round of a bare spin (a loop without a [`Waiter`]), round 0 first:
/// paced finely for the policy's first `fine_spins`, by PAUSE after.
#[inline(always)]
pub fn spin_round(policy: &WaitPolicy, round: usize) {
    if round < policy.fine_spins as usize {
        crate::ring::poll_pause();
    } else {
        crate::sync::spin_hint();
    }
}

/// One round of a short wait on another process of the job that is in
/// the middle of a bounded step (a copy, or two stores), round 0 first:
/// a spin for the first 128 rounds, a yield after, and every 1024th
/// round a look at whether process `pid()` still lives. False once it is
/// gone (it will never finish the step).
pub fn step_round(rounds: &mut u32, pid: impl FnOnce() -> u32) -> bool {
    *rounds = rounds.wrapping_add(1);
    if *rounds < 128 {
        std::hint::spin_loop();
        return true;
    }
    std::thread::yield_now();
    *rounds % 1024 != 0 || crate::shm::os::process_alive(pid())
}

/// What the next pause of a [`Waiter`] should be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rung {
    /// Spin a little (done by the waiter).
    Spin,
    /// Yield the core (done by the waiter).
    Yield,
    /// Sleep on the doorbell for at most this long (done by the caller,
    /// which knows what counts as work).
    Sleep(Duration),
}

/// The state of one wait: where on the ladder it is.
#[derive(Debug)]
pub struct Waiter {
    policy: WaitPolicy,
    started: Option<Instant>,
    rounds: u32,
    in_spin: bool,
}

impl Waiter {
    /// A fresh waiter.
    pub fn new(policy: WaitPolicy) -> Waiter {
        Waiter {
            policy,
            started: None,
            rounds: 0,
            in_spin: true,
        }
    }

    /// A waiter whose caller has already spun the first `rounds` rounds
    /// itself (each with [`spin_round`]): the ladder goes on from there,
    /// as if this waiter had spun them.
    pub fn resumed(policy: WaitPolicy, rounds: u32) -> Waiter {
        Waiter {
            rounds,
            ..Waiter::new(policy)
        }
    }

    /// Back to the bottom rung (call after useful work was done).
    #[inline]
    pub fn reset(&mut self) {
        self.started = None;
        self.rounds = 0;
        self.in_spin = true;
    }

    /// Pauses by one step, spinning or yielding itself, or returns
    /// `Rung::Sleep` for the caller to sleep on its doorbell. `deadline`
    /// bounds the sleep.
    #[inline]
    pub fn pause(&mut self, deadline: Option<Instant>) -> Rung {
        self.rounds = self.rounds.wrapping_add(1);
        // The first rounds spin without reading the clock (most waits end
        // within them, and a clock read costs as much as a cache-line
        // transfer); after that, while spinning, read it every 64 rounds.
        if self.in_spin && (self.rounds <= FREE_SPINS || self.rounds % 64 != 0) {
            self.spin_once();
            return Rung::Spin;
        }
        let now = Instant::now();
        let started = *self.started.get_or_insert(now);
        let waited = now - started;
        if waited < self.policy.spin {
            self.spin_once();
            return Rung::Spin;
        }
        self.in_spin = false;
        if waited < self.policy.spin + self.policy.yield_for {
            std::thread::yield_now();
            return Rung::Yield;
        }
        let mut t = MAX_SLEEP;
        if let Some(d) = deadline {
            t = t.min(d.saturating_duration_since(now));
        }
        Rung::Sleep(t)
    }

    /// One spin: finely paced for the policy's first rounds, PAUSE after
    /// ([`spin_round`]; `rounds` counts this one, from 1).
    #[inline(always)]
    fn spin_once(&self) {
        spin_round(&self.policy, self.rounds as usize - 1);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Pauses until the first rung that is not a spin; returns how many
    /// pauses that took and the rung.
    fn first_rung_off_spin(mut w: Waiter) -> (u32, Rung) {
        for n in 1..10_000 {
            let r = w.pause(None);
            if r != Rung::Spin {
                return (n, r);
            }
        }
        panic!("the waiter never left the spin rung");
    }

    #[test]
    fn a_resumed_waiter_goes_on_from_its_callers_rounds() {
        // No spin or yield time: the ladder leaves the spin rung at its
        // first clock read, the first multiple of 64 rounds past
        // FREE_SPINS.
        let policy = WaitPolicy {
            spin: Duration::ZERO,
            yield_for: Duration::ZERO,
            fine_spins: 0,
        };
        let first_read = (FREE_SPINS / 64 + 1) * 64;
        let (n, r) = first_rung_off_spin(Waiter::new(policy));
        assert_eq!((n, r), (first_read, Rung::Sleep(MAX_SLEEP)));
        // A caller that spun FREE_SPINS rounds itself hands over: the
        // waiter spins only the rest of the way to that read.
        let (n, r) = first_rung_off_spin(Waiter::resumed(policy, FREE_SPINS));
        assert_eq!((n, r), (first_read - FREE_SPINS, Rung::Sleep(MAX_SLEEP)));
        // A deadline bounds the sleep it asks for.
        let mut w = Waiter::resumed(policy, first_read - 1);
        let soon = Instant::now() + Duration::from_millis(1);
        match w.pause(Some(soon)) {
            Rung::Sleep(t) => assert!(t <= Duration::from_millis(1), "{t:?}"),
            r => panic!("expected a bounded sleep, got {r:?}"),
        }
    }
}
