//! The rank side of start-up: attach, publish, meet the others.

use super::env::JobContract;
use crate::error::{Error, ErrorClass, Result};
use crate::shm::doorbell::{Futex, Kernel};
use crate::shm::{RankState, Segment, SegmentSpec};
use crate::sync::Ordering;
use std::time::{Duration, Instant};

/// Attaches the segment named by the contract and checks it against
/// `spec` (the layout the rank computed from the same contract).
///
/// # Errors
/// The attach error, with the segment path, as class `Other`.
pub fn attach(contract: &JobContract, spec: SegmentSpec) -> Result<Segment> {
    Segment::attach(&contract.segment, spec).map_err(|e| {
        Error::new(
            e_class(&e),
            format!(
                "rank {}: {} ({})",
                contract.rank,
                e,
                contract.segment.display()
            ),
        )
    })
}

fn e_class(e: &crate::shm::SegmentAttachError) -> ErrorClass {
    Error::from(e.clone()).class()
}

/// Binds this process to `cpu`, if given.
///
/// # Errors
/// `Other` when the CPU does not exist or binding fails.
pub fn bind(cpu: Option<usize>) -> Result<()> {
    let Some(cpu) = cpu else { return Ok(()) };
    let ok = core_affinity::get_core_ids()
        .and_then(|ids| ids.into_iter().find(|c| c.id == cpu))
        .map(core_affinity::set_for_current);
    match ok {
        Some(true) => Ok(()),
        _ => Err(Error::new(
            ErrorClass::Other,
            format!("cannot bind to CPU {cpu}: no such CPU in this process's affinity mask"),
        )),
    }
}

/// Binds this process to the CPU set `cpus`, if given.
///
/// # Errors
/// `Other` when binding fails.
pub fn bind_set(cpus: Option<&[usize]>) -> Result<()> {
    match cpus {
        Some(c) => crate::topology::bind_this_process(c),
        None => Ok(()),
    }
}

/// Marks this rank running, then waits until all `size` ranks have (the
/// start barrier; `SYNC(job.start)`).
///
/// # Errors
/// `Other` when the others do not arrive within `timeout`.
pub fn arrive(seg: &Segment, rank: usize, size: usize, timeout: Duration) -> Result<()> {
    seg.control(rank).publish(std::process::id());
    let counter = seg.header().attached();
    // SYNC(job.start): AcqRel; the Release half publishes this rank's ring
    // headers (initialised before this call), the Acquire half of the load
    // that sees `size` makes every peer's headers visible.
    counter.fetch_add(1, Ordering::AcqRel);
    Kernel.wake(counter);
    let deadline = Instant::now() + timeout;
    loop {
        // SYNC(job.start): Acquire; see above.
        let now_in = counter.load(Ordering::Acquire);
        if now_in as usize >= size {
            return Ok(());
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(Error::new(
                ErrorClass::Other,
                format!(
                    "rank {rank}: only {now_in} of {size} ranks arrived within {:?}",
                    timeout
                ),
            ));
        }
        Kernel.wait(
            counter,
            now_in,
            Some((deadline - now).min(Duration::from_millis(50))),
        );
    }
}

/// Marks this rank finalized, unless it was marked aborted meanwhile (a
/// thread that unwound from a panic, `docs/errors.md`).
pub fn depart(seg: &Segment, rank: usize) {
    seg.control(rank).leave_running(RankState::Finalized, 0);
    // Relaxed: a diagnostic count.
    seg.header().finalized().fetch_add(1, Ordering::Relaxed);
}

/// Marks this rank aborted with `code`.
pub fn abort_mark(seg: &Segment, rank: usize, code: i32) {
    seg.control(rank).set_state(RankState::Aborted, code);
}
