//! Demotion: after publishing a small multi-line frame, the producer hands
//! its payload lines to the shared cache (`CLDEMOTE`), so the consumer
//! reads them from L3 instead of snooping them out of the producer core's
//! private caches.
//!
//! Measured on the 2-vCPU Xeon VM (family 6 model 167, a Sapphire Rapids
//! with `cldemote`), `shmpi-bench latency`, alternating runs, 2026-12-02:
//! one-way latency 64 B 0.25 → 0.17 µs, 256 B 0.31 → 0.20, 1 KiB 0.54 →
//! 0.41, 2 KiB 0.65 → 0.52, 4 KiB 1.01 → 0.85; 8 KiB through the ring
//! gained too little to beat the single copy (1.60 → 1.47 against 1.32).
//! Demoting before the header's store (so the lines are in L3 when the
//! consumer looks) was worse from 2 KiB on: the header waited for the
//! demotions.
//!
//! A demotion costs the producer: it cannot retire until the line's store
//! has its ownership, so a producer streaming frames loses the overlap of
//! its stores' ownership requests (window bandwidth at 64 B-1 KiB fell
//! from 0.9-7.2 to 0.4-1.9 GB/s). A consumer streaming behind gains
//! nothing from it either: it reads lines written long before. So the
//! producer demotes only a frame that follows a pause: when more time has
//! passed since its last frame (timed with the TSC, about 8 ns a read
//! here) than a stream of such frames would take: `GAP_BASE` ticks plus
//! `GAP_PER_BYTE_16 / 16` a byte of footprint (measured streams: 70 ns +
//! 0.1 ns a byte; the gap is about twice that at 2.6 GHz). With the gap,
//! window bandwidth is back at its figures without demotion and ping-pong
//! latency kept within 0.02 µs of demoting every frame.
//!
//! The gap counts the frame's own copy, so slow copies look like pauses:
//! in a window of 8 x 1 KiB C `MPI_Isend` (700-1,100 TSC ticks each, its copy into lines
//! the consumer last read) about a third of the frames passed it, and
//! each demotion held back the frames after it. So the producer's caller
//! also says when its frames are a burst (`Producer::set_in_burst`; the
//! transport's frames to a peer sent with no look for incoming messages
//! since the last, `Transport::looks`), and a burst's frames never count
//! as following a pause. Same VM, 2026-12-07, alternating runs: that
//! window 3.63-3.95 → 2.75-2.85 µs a round each way, 256 B 1.52-1.65 →
//! 1.41-1.45; ping-pong latency unchanged.
//!
//! After demoting a frame the producer also claims the lines where its
//! next frame will go (`PREFETCHW`, [`Demote::warms`]), when its caller
//! next has nothing to do (`Producer::flush_hints`): that frame is likely
//! written after the peer's answer, in a ping-pong, and its stores then
//! find their lines owned instead of asking for each one (the lines were
//! last read by the consumer a lap earlier, or demoted to L3). Measured
//! on the same VM, `shmpi-bench latency`, 12-20 alternating runs,
//! 2026-12-07, medians, claiming at once with the 4 KiB hot window: 128 B
//! 0.21 → 0.19 µs, 256 B 0.24 → 0.20, 512 B 0.29 → 0.25, 1 KiB 0.44 →
//! 0.36, 2 KiB 0.58 → 0.55, 4 KiB 0.92-0.94 → 0.81-0.83; at the idle
//! moment with the 32 KiB window (`transport::WARM_HOT_WINDOW`) 1 KiB
//! 0.32, 2 KiB 0.41, 4 KiB 0.69. Claiming the next frame's lines but its
//! first (the header line, which the consumer polls) was no better.
//!
//! Demotion and the claim are hints: they change where a line lives,
//! never what a load returns, so they add no edge to the memory model.

/// The gap's base, in TSC ticks (about 150 ns at 2.6 GHz).
const GAP_BASE: u64 = 400;
/// The gap per byte of footprint, in sixteenths of a tick (half a tick).
const GAP_PER_BYTE_16: u64 = 8;
/// A TSC read slower than this (ns) means the hypervisor traps it: no
/// demotion then, its gating would cost more than it saves.
const SLOW_TSC_NS: u128 = 40;

/// Which frames a producer demotes after publishing them, and whether it
/// then claims the next frame's lines; or, where it cannot demote, only
/// claims ([`Demote::claims_up_to`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Demote {
    /// The most bytes (header and payload, rounded up to whole lines) a
    /// frame that is demoted (or after which the producer claims) holds;
    /// 0: none.
    max_bytes: usize,
    /// The frames' payload lines are demoted (`CLDEMOTE`); false: the
    /// frames are only gated, for the claims.
    lines: bool,
    /// After such a frame, the lines of the next frame's position are
    /// claimed for writing (`PREFETCHW`, where the CPU has it).
    warm: bool,
}

impl Demote {
    /// No demotion (the default of every producer).
    pub const OFF: Demote = Demote {
        max_bytes: 0,
        lines: false,
        warm: false,
    };

    /// Demotes frames of up to `payload` bytes (0: none), where this CPU
    /// can ([`Demote::supported`]); else [`Demote::OFF`].
    pub fn up_to(payload: usize) -> Demote {
        if Demote::supported() {
            Demote::forced_up_to(payload)
        } else {
            Demote::OFF
        }
    }

    /// Demotes frames of up to `payload` bytes (0: none) whatever this CPU
    /// has: where it lacks `CLDEMOTE` the instruction executes as a NOP
    /// (its encoding is a reserved hint), so only the pause gating runs.
    /// For tests and experiments; [`Demote::up_to`] is the real choice.
    ///
    /// It claims the next frame's lines after each demoted frame where the
    /// CPU has `PREFETCHW` ([`Demote::warms`]).
    pub fn forced_up_to(payload: usize) -> Demote {
        Demote {
            max_bytes: if payload == 0 {
                0
            } else {
                (super::FRAME_HEADER + payload).next_multiple_of(super::frame::LINE)
            },
            lines: payload != 0,
            warm: payload != 0 && has_prefetchw(),
        }
    }

    /// No demotion, but after a frame of up to `payload` bytes that
    /// follows a pause (the same gate) the next frame's lines claimed,
    /// where the CPU has `PREFETCHW` and a fast TSC; else
    /// [`Demote::OFF`]. For a CPU without `CLDEMOTE` (`SHMPI_PREFETCHW=1`
    /// there): on the Xeon VM the claims alone took a bare ping-pong of 4
    /// KiB from 0.97 to 0.87 µs, of 8 KiB from 1.52 to 1.22
    /// (`tools/micro/claim.c`); on AMD they are not measured yet.
    pub fn claims_up_to(payload: usize) -> Demote {
        if payload != 0 && has_prefetchw() && tsc_reads_fast() {
            Demote {
                lines: false,
                ..Demote::forced_up_to(payload)
            }
        } else {
            Demote::OFF
        }
    }

    /// The same demotion without claiming the next frame's lines
    /// (`SHMPI_PREFETCHW=0`); where there is no demotion either,
    /// [`Demote::OFF`].
    pub fn without_warming(self) -> Demote {
        if !self.lines {
            return Demote::OFF;
        }
        Demote {
            warm: false,
            ..self
        }
    }

    /// Whether, after a frame that is demoted (or gated for the claims),
    /// the lines where the next frame will go are claimed for writing.
    pub fn warms(self) -> bool {
        self.warm
    }

    /// Whether frames are gated at all: demoted, or followed by claims.
    pub fn is_on(self) -> bool {
        self.max_bytes > 0
    }

    /// Whether frames are demoted (`CLDEMOTE`), not only followed by
    /// claims.
    pub fn demotes(self) -> bool {
        self.max_bytes > 0 && self.lines
    }

    /// The largest payload demoted or followed by claims (0 when off):
    /// the largest whose frame fills no more lines than the limit's.
    pub fn max_payload(self) -> usize {
        self.max_bytes.saturating_sub(super::FRAME_HEADER)
    }

    /// Whether a frame of `bytes` bytes (header and payload) is demoted:
    /// more than its header line, no more lines than the limit.
    #[inline(always)]
    pub(crate) fn covers(self, bytes: usize) -> bool {
        bytes > super::frame::LINE && bytes <= self.max_bytes
    }

    /// Whether this CPU has `CLDEMOTE` and a TSC that reads fast (checked
    /// once per process).
    pub fn supported() -> bool {
        static SUPPORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *SUPPORTED.get_or_init(|| has_cldemote() && tsc_reads_fast())
    }

    /// Whether a frame of `bytes` bytes committed at `now` (TSC), the
    /// producer's previous demotable frame having ended at `last`, follows
    /// a pause.
    #[inline(always)]
    pub(crate) fn after_pause(now: u64, last: u64, bytes: usize) -> bool {
        now.wrapping_sub(last) > GAP_BASE + bytes as u64 * GAP_PER_BYTE_16 / 16
    }
}

/// The time-stamp counter (0 where there is none: every frame then looks
/// like a pause, and nothing is demoted there anyway).
#[inline(always)]
pub(crate) fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC exists on every x86-64 CPU and has no memory
        // effects.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// Runs the one-operand hint `$insn` (written with `{0}` for the address)
/// on every cache line of `$len` bytes at `$ptr`; nothing off x86-64.
/// The callers' hints neither fault (an unmapped address is ignored) nor
/// change a byte, so they add no edge to the memory model.
macro_rules! each_line {
    ($ptr:expr, $len:expr, $insn:literal) => {{
        let (ptr, len): (*const u8, usize) = ($ptr, $len);
        #[cfg(target_arch = "x86_64")]
        {
            let mut off = 0;
            while off < len {
                // SAFETY: `$insn` is CLDEMOTE or PREFETCHW, hints that
                // neither read nor write memory as far as the program
                // can tell and never fault; CPUs without CLDEMOTE run its
                // encoding (0F 1C /0, reserved hint-NOP space) as a NOP,
                // which `Demote::forced_up_to` relies on in tests, and
                // PREFETCHW runs only where `has_prefetchw` said yes.
                unsafe {
                    core::arch::asm!(
                        $insn,
                        in(reg) ptr.wrapping_add(off),
                        options(nostack, preserves_flags, readonly)
                    )
                };
                off += super::frame::LINE;
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (ptr, len);
        }
    }};
}

/// Demotes the cache lines of `len` bytes at `ptr` (a hint: no effect on
/// what any load returns; a no-op off x86-64). Loom builds' model region
/// has no lines to demote: only this module's tests call it there.
#[cfg_attr(loom, allow(dead_code))]
#[inline]
pub(crate) fn lines(ptr: *const u8, len: usize) {
    each_line!(ptr, len, "cldemote [{0}]");
}

/// Claims the cache lines of `len` bytes at `ptr` for writing
/// (`PREFETCHW`: the line is fetched in a state this core may write
/// without asking again). A hint, as [`lines`]: no effect on what any load
/// returns; a no-op off x86-64. Called only where [`has_prefetchw`] said
/// yes ([`Demote::warms`]).
#[cfg_attr(loom, allow(dead_code))]
#[inline]
pub(crate) fn claim_lines(ptr: *const u8, len: usize) {
    each_line!(ptr, len, "prefetchw [{0}]");
}

/// CPUID leaf 0x8000_0001, ECX bit 8 (`PRFCHW`, "3DNowPrefetch"): the CPU
/// has `PREFETCHW` (Intel from Broadwell, every AMD x86-64).
pub(crate) fn has_prefetchw() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::__cpuid;
        // SAFETY: CPUID exists on every x86-64 CPU; the extended leaf is
        // read only when leaf 0x8000_0000 says it exists.
        #[allow(unused_unsafe)]
        unsafe {
            __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the time-stamp counter reads fast here (checked once per
/// process): where a hypervisor traps it, nothing is timed with it.
pub(crate) fn tsc_reads_fast() -> bool {
    static FAST: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    // Off x86-64 `tsc` is a constant 0: no counter to read at all.
    *FAST.get_or_init(|| cfg!(target_arch = "x86_64") && tsc_is_fast())
}

/// CPUID leaf 7, sub-leaf 0, ECX bit 25.
fn has_cldemote() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{__cpuid, __cpuid_count};
        // SAFETY: CPUID exists on every x86-64 CPU; leaf 7 is read only
        // when leaf 0 says it exists.
        #[allow(unused_unsafe)]
        unsafe {
            __cpuid(0).eax >= 7 && __cpuid_count(7, 0).ecx & (1 << 25) != 0
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether 256 TSC reads take under `SLOW_TSC_NS` each, in the best of up
/// to 8 tries: one try preempted on a loaded machine (a CI run's parallel
/// tests) read as a trapping hypervisor, and turned demotion and the
/// claims off for the whole process.
fn tsc_is_fast() -> bool {
    (0..8).any(|_| {
        let start = std::time::Instant::now();
        let mut x = 0u64;
        for _ in 0..256 {
            x = x.wrapping_add(tsc());
        }
        std::hint::black_box(x);
        start.elapsed().as_nanos() < 256 * SLOW_TSC_NS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_covers_nothing_and_the_limit_is_a_footprint() {
        assert!(!Demote::OFF.is_on());
        assert!(!Demote::OFF.covers(128));
        let d = Demote::forced_up_to(4096);
        assert!(!d.covers(64), "a one-line frame is the header line");
        assert!(d.covers(65));
        assert!(d.covers(8 + 4096));
        assert!(d.covers(8 + 4096 + 56));
        assert!(!d.covers(8 + 4096 + 57));
        assert_eq!(d.max_payload(), 4096 + 56, "the last line's spare bytes");
        assert_eq!(Demote::up_to(0), Demote::OFF);
    }

    #[test]
    fn a_pause_grows_with_the_frame() {
        assert!(!Demote::after_pause(1000, 900, 128));
        assert!(Demote::after_pause(10_000, 900, 128));
        // Wrapped counters still compare by distance.
        assert!(!Demote::after_pause(5, u64::MAX - 5, 64));
        let small = GAP_BASE + 128 * GAP_PER_BYTE_16 / 16 + 1;
        assert!(Demote::after_pause(small, 0, 128));
        assert!(!Demote::after_pause(small, 0, 4160));
    }

    #[test]
    fn demoting_lines_changes_no_byte() {
        let v: Vec<u8> = (0..1024u32).map(|i| i as u8).collect();
        lines(v.as_ptr(), v.len());
        assert!(v.iter().enumerate().all(|(i, &b)| b == i as u8));
    }
}
