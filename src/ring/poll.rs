//! Pacing a loop that polls a word another core is about to write.
//!
//! The consumer of a ring waits by loading the header word of the frame it
//! will read next, again and again. How the loop pauses between loads
//! sets how late it sees the store: on average half of one pause. PAUSE,
//! the usual hint, waits about 28 ns on this project's AMD EPYC (Zen 4)
//! VMs and some 140 cycles on Intel cores since Skylake: as much as the
//! cache-line handoff it waits for (about 33 ns one way in a same-L3
//! placement, `../shared/MEASUREMENTS.md`). A bare loop polls in under a
//! nanosecond but keeps many speculative loads of the line in flight,
//! and the writer's store then flushes the pipeline (measured there: 47
//! ns one way against PAUSE's 33). An LFENCE after each load lets the
//! next load issue only once this one has completed: one load in flight,
//! one look every few ns (about 6 ns a round here). Measured with
//! `examples/layers.rs` (`docs/benchmarks.md`, "Issue 6, tenth pass"):
//! the minimal ring's one-way time falls by a quarter to a third in the
//! same-L3 placement, shmpi's MPI path by about a tenth.

/// One pause of a polling loop (see the module note): LFENCE on x86-64,
/// `std::hint::spin_loop` elsewhere. Meant for
/// the first, short stretch of a wait; a long wait should go on with
/// [`crate::sync::spin_hint`] (PAUSE), which leaves more of the core to
/// a hyperthread sibling, then yield and sleep (`transport::wait`).
///
/// LFENCE waits for the loads before it only where it is dispatch
/// serializing: on every Intel core, and on AMD cores from family 17h
/// (Zen) on, where Linux sets or the CPU fixes that mode for its Spectre
/// v1 mitigation. Where it is not, this is a bare loop: slower to see a
/// store than PAUSE by the figures above, but correct.
#[inline(always)]
pub fn poll_pause() {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    // SAFETY: LFENCE has no operands and reads or writes no memory; SSE2,
    // which provides it, is part of the x86-64 baseline every target of
    // this arch has.
    unsafe {
        core::arch::x86_64::_mm_lfence()
    };
    #[cfg(all(not(target_arch = "x86_64"), not(loom)))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}
