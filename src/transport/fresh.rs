//! Buffers written just before they are sent: when a send's plain single
//! copy should give way to the ring or to a shared copy.
//!
//! A receiver's `process_vm_readv` takes each line of the sender's
//! buffer from wherever it lives. An untouched buffer's lines are clean
//! (in the sender's cache or the shared one) and come fast; a buffer the
//! sender has just written (data it computed, the common case in an
//! application, never in OSU-style benchmarks) has every line modified in
//! the sender's core, and the read snoops each one out of it. On the Xeon
//! VM (2026-12-07) an 8 KiB read took 1.7-1.85 µs from a rewritten buffer
//! against 0.61-0.75 from an untouched one, and the sender's next rewrite
//! had to take the lines back: a rewritten 8 KiB ping-pong ran 3.2-3.6
//! µs one way by single copy, 1.8 through the ring, where an untouched
//! one runs 1.16-1.21 by single copy; at 16 KiB rewritten 5.6-6.2 by
//! single copy, 3.3 through the ring, 2.36 by a shared copy (the sender
//! writes half out of its own cache), untouched 1.35-1.47 by single copy
//! and 1.48-1.55 shared (`docs/benchmarks.md`, "thirty-second pass").
//!
//! So the receiver of a plain rendezvous below 64 KiB ([`JUDGED_BELOW`])
//! that its sender judges (the request says so) times its read and tells
//! the sender in the ack whether it was slow ([`Clock`], [`slow`]), and
//! for a blocking send from the blocking
//! rendezvous size up to the shared copy's the sender keeps a [`Verdicts`] per
//! peer: [`STREAK`] slow reads in a row send its next blocking sends of
//! those sizes on a [`Detour`] for a while (the ring below
//! [`SHARE_MIN`], a shared copy from it), after which they go by plain
//! rendezvous again to look, and as many slow looks in a row start a
//! longer stretch. More than one look, because a buffer the sender has
//! not written since it last read it into the ring may still have its
//! lines modified in the sender's cache from its last write: the first
//! read after a stretch can be slow for any buffer (and leaves the lines
//! shared), the next ones only for a buffer written again. A sender of
//! untouched buffers leaves the plain single copy only when reads in a
//! row are slow by chance, and comes back after one stretch. Sends that
//! do not wait (C's `MPI_Isend`, a plain `isend`) are judged the same
//! below their own shared copy's size, with verdicts of their own, and
//! their detour is always the ring (`Transport::judges_posted`).

use std::time::Instant;

/// The time above which a receiver's read of 8 KiB counts as slow, in ns
/// (`SHMPI_CMA_SLOW_READ`; for other lengths see [`slow`]): between the
/// Xeon VM's 0.61-0.75 µs from untouched buffers (their slowest tenth up
/// to 1.1) and 1.6-1.85 from rewritten ones.
pub const DEFAULT_SLOW_READ_NS: u32 = 1_300;

/// The shortest message that detours by a shared copy rather than the
/// ring ([`Detour`]): on the Xeon VM a rewritten 16 KiB message took 2.36
/// µs one way by a shared copy (each side half) against 3.3 through the
/// ring, a rewritten 8 KiB message 2.1-2.2 shared against 1.8 through the
/// ring (2026-12-07).
pub const SHARE_MIN: usize = 16 << 10;

/// How a blocking send leaves the plain single copy while its receiver
/// finds its buffers slow to read ([`Verdicts::take_detour`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detour {
    /// Through the ring (below [`SHARE_MIN`], or where copies are never
    /// shared).
    Ring,
    /// By rendezvous whose copy the receiver shares with the sender, who
    /// copies its half out of its own cache ([`SHARE_MIN`] and up).
    Share,
}

/// Slow reads in a row that send a stretch on the detour. More than
/// two: a slow read is an event of its own now and then (in one of 40
/// reads of untouched buffers on the Xeon VM, in bursts: with two, a
/// sender of untouched 8 KiB buffers went through the ring for about 3%
/// of its sends); not one, for the reason the module says.
pub const STREAK: u8 = 3;

/// Sends on the detour after the first slow reads.
pub const DETOUR_FIRST: u32 = 8;
/// The most sends on the detour between two looks (each streak of slow
/// looks doubles the stretch up to this).
pub const DETOUR_MAX: u32 = 256;

/// What one peer's reads of this rank's judged sends (of one kind: the
/// blocking ones, or those that do not wait) have shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdicts {
    /// Slow reads in a row.
    streak: u8,
    /// Sends still to take the detour before the next look.
    detour_left: u32,
    /// The next stretch on the detour.
    stretch: u32,
}

impl Default for Verdicts {
    fn default() -> Self {
        Verdicts {
            streak: 0,
            detour_left: 0,
            stretch: DETOUR_FIRST,
        }
    }
}

impl Verdicts {
    /// Whether the next send of the judged sizes takes the detour
    /// ([`Detour`]: the ring, or a shared copy), counted as one of the
    /// stretch when it does.
    #[inline]
    pub fn take_detour(&mut self) -> bool {
        if self.detour_left == 0 {
            return false;
        }
        self.detour_left -= 1;
        true
    }

    /// The peer's verdict on one read of a send of the judged sizes.
    /// Ignored while the detour lasts: it is of a send started before
    /// (a window of `isend`s has its acks in flight when the detour
    /// begins), and only the looks after the stretch count.
    pub fn note(&mut self, slow: bool) {
        if self.detour_left > 0 {
            return;
        }
        if !slow {
            *self = Verdicts::default();
            return;
        }
        self.streak = self.streak.saturating_add(1);
        if self.streak >= STREAK {
            self.detour_left = self.stretch;
            self.stretch = (self.stretch * 2).min(DETOUR_MAX);
            self.streak = 0;
        }
    }
}

/// The length from which no read is timed nor any send judged, whatever
/// the shared copy's size (`SHMPI_CMA_SPLIT_BLOCKING=0` or
/// `SHMPI_CMA_SPLIT=0` puts it nowhere): the mark was measured up to
/// 32 KiB (32-64 KiB, where a send that does not wait is judged, is
/// extrapolated), and from 64 KiB a page-pinning system call weighs on
/// every read.
pub const JUDGED_BELOW: usize = 64 << 10;

/// Whether a read of `len` bytes that took `ns` nanoseconds was slow, by
/// `per_8k`: the nanoseconds above which an 8 KiB read counts as slow.
/// From 8 KiB up, half of it stays and half grows with the length (a read
/// is a system call plus its bytes). On the Xeon VM, in a ping-pong,
/// untouched buffers took 0.58, 0.79, 1.27 and 1.62 µs at 8, 16, 24 and
/// 32 KiB, rewritten ones 1.59, 2.84, 4.05 and 5.25; in an exchange (both
/// ranks `MPI_Isend` and read at once) 32 KiB took 1.6-3.1 untouched and
/// 3.9-4.2 rewritten; the marks are 1.3, 1.95, 2.6 and 3.25. Below 8 KiB
/// the 8 KiB mark.
#[inline]
pub fn slow(ns: u64, len: usize, per_8k: u32) -> bool {
    let len = len.max(8192) as u128;
    u128::from(ns) * 8192 * 2 > u128::from(per_8k) * (8192 + len)
}

/// What a receiver times its reads with: the time-stamp counter where it
/// reads fast (about 9 ns a read on the Xeon VM, against about 19 for the
/// monotonic clock), its rate learnt against the monotonic clock once
/// enough time has passed since the clock began; else the monotonic
/// clock itself.
#[derive(Debug)]
pub struct Clock {
    start: Instant,
    start_ticks: u64,
    /// Whether `ticks` are the counter's (else nanoseconds since `start`).
    tsc: bool,
    ticks_per_us: Option<f64>,
}

/// How long after its start a clock learns the counter's rate.
const LEARN_AFTER_US: u128 = 2_000;
/// The counter rates a clock believes, in ticks per µs (0.1 to 10 GHz):
/// a counter that stepped back between cores, or jumped, gives another
/// and is asked again at the next read.
const RATES: std::ops::RangeInclusive<f64> = 100.0..=10_000.0;
/// A span longer than this many ticks is a counter gone back (or over a
/// minute): not timed.
const TICKS_MAX: u64 = 1 << 40;

impl Clock {
    /// A clock that starts now.
    pub fn new() -> Clock {
        Clock {
            start: Instant::now(),
            start_ticks: crate::ring::tsc(),
            tsc: crate::ring::tsc_reads_fast(),
            ticks_per_us: None,
        }
    }

    /// The time now, in ticks.
    #[inline]
    pub fn ticks(&self) -> u64 {
        if self.tsc {
            crate::ring::tsc()
        } else {
            self.start.elapsed().as_nanos() as u64
        }
    }

    /// Nanoseconds in `ticks` ticks (a difference of two [`ticks`](Self::ticks),
    /// wrapping): once the counter's rate is known (`None` before, and for
    /// a span that went back).
    pub fn ns(&mut self, ticks: u64) -> Option<u64> {
        if ticks > TICKS_MAX {
            return None;
        }
        if !self.tsc {
            return Some(ticks);
        }
        let rate = match self.ticks_per_us {
            Some(r) => r,
            None => {
                let us = self.start.elapsed().as_micros();
                if us < LEARN_AFTER_US {
                    return None;
                }
                let r = crate::ring::tsc().wrapping_sub(self.start_ticks) as f64 / us as f64;
                if !RATES.contains(&r) {
                    return None;
                }
                self.ticks_per_us = Some(r);
                r
            }
        };
        Some((ticks as f64 * 1000.0 / rate) as u64)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streak_of_slow_reads_sends_a_stretch_on_the_detour_then_they_look() {
        let mut v = Verdicts::default();
        assert!(!v.take_detour());
        for _ in 1..STREAK {
            v.note(true);
        }
        assert!(
            !{ v }.take_detour(),
            "fewer slow reads than the streak are not enough"
        );
        v.note(false);
        for _ in 1..STREAK {
            v.note(true);
        }
        assert!(!{ v }.take_detour(), "a fast one in between starts over");
        v.note(true);
        for i in 0..DETOUR_FIRST {
            assert!(v.take_detour(), "send {i} of the stretch");
        }
        assert!(!v.take_detour(), "then they look");
        // One slow look is not enough either (a buffer not written since
        // it last went into the ring may still have modified lines); a
        // streak of them starts a stretch twice as long.
        v.note(true);
        assert!(!v.take_detour());
        for _ in 1..STREAK {
            v.note(true);
        }
        let mut n = 0;
        while v.take_detour() {
            n += 1;
        }
        assert_eq!(n, 2 * DETOUR_FIRST);
        // A fast look ends it all.
        v.note(false);
        assert_eq!(v, Verdicts::default());
    }

    #[test]
    fn verdicts_of_earlier_sends_do_not_move_a_running_detour() {
        let mut v = Verdicts::default();
        for _ in 0..STREAK {
            v.note(true);
        }
        assert!(v.take_detour());
        // Acks of sends started before the detour, slow or fast.
        for slow in [true, true, true, false, true] {
            v.note(slow);
        }
        let mut n = 1;
        while v.take_detour() {
            n += 1;
        }
        assert_eq!(n, DETOUR_FIRST, "the stretch neither grew nor ended");
    }

    #[test]
    fn stretches_stop_growing_at_the_most() {
        let mut v = Verdicts::default();
        for _ in 0..20 {
            for _ in 0..STREAK {
                v.note(true);
            }
            let mut n = 0;
            while v.take_detour() {
                n += 1;
            }
            assert!(n <= DETOUR_MAX);
        }
        for _ in 0..STREAK {
            v.note(true);
        }
        let mut n = 0;
        while v.take_detour() {
            n += 1;
        }
        assert_eq!(n, DETOUR_MAX);
    }

    #[test]
    fn slowness_scales_with_the_length_from_8_kib() {
        assert!(!slow(1_200, 8192, 1_300));
        assert!(slow(1_400, 8192, 1_300));
        assert!(!slow(1_625, 12_288, 1_300), "1.625 us allowed at 12 KiB");
        assert!(slow(1_630, 12_288, 1_300));
        assert!(!slow(3_250, 32_768, 1_300), "3.25 us at 32 KiB");
        assert!(slow(3_260, 32_768, 1_300));
        assert!(!slow(1_200, 1024, 1_300), "below 8 KiB the 8 KiB mark");
        assert!(slow(u64::MAX, 1 << 40, u32::MAX), "no overflow");
    }

    #[test]
    fn a_span_that_went_back_is_not_timed() {
        let mut c = Clock::new();
        assert_eq!(c.ns(0u64.wrapping_sub(5)), None);
    }

    #[test]
    fn the_clock_learns_its_rate_after_a_while() {
        let mut c = Clock::new();
        std::thread::sleep(std::time::Duration::from_millis(3));
        let t0 = c.ticks();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let ns = c.ns(c.ticks().wrapping_sub(t0)).expect("learnt by now");
        assert!((1_500_000..200_000_000).contains(&ns), "{ns} ns for 2 ms");
    }
}
