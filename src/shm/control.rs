//! Per-rank control blocks: who the rank is, how far it got, and the words
//! its peers use to hand it work and wake it.

use crate::sync::{AtomicI32, AtomicU32, AtomicU64, CachePadded, Ordering, CACHE_LINE};

/// Lifecycle states of a rank, in the order they happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum RankState {
    /// Not attached yet.
    Empty = 0,
    /// Attached and serving its rings.
    Running = 1,
    /// Passed `finalize`.
    Finalized = 2,
    /// Called `abort`; the exit code is in the block.
    Aborted = 3,
}

impl RankState {
    fn from_u32(v: u32) -> RankState {
        match v {
            1 => RankState::Running,
            2 => RankState::Finalized,
            3 => RankState::Aborted,
            _ => RankState::Empty,
        }
    }
}

/// The exit code of a rank that ends the job because it panicked
/// ([`ControlBlock::abort_for_panic`]): the one Rust gives a process that
/// exits on a panic.
pub const PANIC_CODE: i32 = 101;

/// Pending-bitmap words per rank: 15 × 64 ranks fit with the doorbell in
/// one 128-byte line.
pub const PENDING_WORDS: usize = 15;
/// The most ranks a job may have (one pending bit per sender).
pub const MAX_RANKS: usize = PENDING_WORDS * 64;

/// One rank's control block, `#[repr(C)]`, two cache lines.
#[repr(C)]
#[derive(Debug)]
pub struct ControlBlock {
    /// Identity and lifecycle, read by the launcher and peers.
    life: CachePadded<Life>,
    /// Written by every sender, read by this rank: the doorbell and one
    /// bit per sender that has published frames since this rank last
    /// looked (so polling cost does not grow with idle peers).
    wake: CachePadded<Wake>,
}

#[repr(C)]
#[derive(Debug)]
struct Life {
    pid: AtomicU32,
    state: AtomicU32,
    exit_code: AtomicI32,
    /// The first CPU of the rank's binding, plus one (0: not bound).
    cpu: AtomicU32,
    /// What this rank's single-copy self-test found (see [`SingleCopy`]).
    single_copy: AtomicU32,
    /// The task peers name in `process_vm_readv` / `writev` to reach this
    /// rank's memory: a thread of its process that only sleeps
    /// (`transport::cma::target`); 0: the process itself (`pid`).
    cma_task: AtomicU32,
    /// The address, in this rank's process, of a word that peers read with
    /// `process_vm_readv` to test single-copy access (0: none published).
    probe: AtomicU64,
    /// The claim word of this rank's current shared rendezvous copy (see
    /// [`Split`]): `generation << 2 | state`.
    split: AtomicU64,
    /// This rank's word of the start-up placement probe
    /// (`transport::placement`): only the rank writes it, its partner of
    /// the moment reads it.
    ping: AtomicU64,
}

/// Who copies the back part of a rendezvous message whose copy the
/// receiver shares with its sender: the states of the receiver's claim
/// word (`ControlBlock::split_*`). The receiver offers the back part of
/// generation `g` in a frame, without writing the word: while the word
/// is still at an earlier generation (or at `g`, `Offered`), the offer
/// stands. The sender may claim the back (`Taken`, only from generation
/// `g - 1`) and write it into the receiver's buffer (`Done`, or
/// `Offered` when its write failed); a receiver done with the front
/// while the offer stands revokes it (`Revoked`) and copies the back
/// itself. Each offer has its own generation, so a late claim of an old
/// offer fails. (Writing `Offered` first, as the receiver did until
/// 2026-12-06, held the offer frame back behind that store: the line
/// was the sender's, written at its last `Done`.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// The receiver offers the back part.
    Offered = 0,
    /// The sender is writing it.
    Taken = 1,
    /// The sender wrote it.
    Done = 2,
    /// The receiver took the offer back: it copies the back itself.
    Revoked = 3,
}

/// The generations a claim word holds (62 bits).
const GEN_MASK: u64 = u64::MAX >> 2;

/// The claim word of generation `gen` in `state`.
fn split_word(gen: u64, state: Split) -> u64 {
    (gen & GEN_MASK) << 2 | state as u64
}

/// The state part of a claim word.
fn split_state_of(w: u64) -> Split {
    match w & 3 {
        0 => Split::Offered,
        1 => Split::Taken,
        2 => Split::Done,
        _ => Split::Revoked,
    }
}

/// What a rank's single-copy (CMA) self-test found: whether it can read
/// its peers' memory with `process_vm_readv`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum SingleCopy {
    /// Not tested yet (or the rank is alone).
    Unknown = 0,
    /// The test read a peer's probe word: peers may send it rendezvous
    /// messages that it copies straight out of their memory.
    Usable = 1,
    /// The kernel refused (or single copy is switched off): peers must
    /// send it everything through the rings.
    Refused = 2,
}

#[repr(C)]
#[derive(Debug)]
struct Wake {
    doorbell: AtomicU32,
    sleepers: AtomicU32,
    pending: [AtomicU64; PENDING_WORDS],
}

const _: () = assert!(core::mem::size_of::<Wake>() == 128);
const _: () = assert!(core::mem::size_of::<Life>() <= CACHE_LINE);
const _: () = assert!(core::mem::size_of::<ControlBlock>() == 2 * CACHE_LINE);

impl ControlBlock {
    /// Records this process as the rank's owner and marks it running.
    pub fn publish(&self, pid: u32) {
        // Relaxed: read by the launcher for diagnostics only.
        self.life.pid.store(pid, Ordering::Relaxed);
        // Release: pairs with the Acquire in `state` for observers that
        // then read the pid.
        self.life
            .state
            .store(RankState::Running as u32, Ordering::Release);
    }

    /// Records the first CPU of this rank's binding (`None`: not bound),
    /// before it arrives at the start barrier, whose AcqRel publishes it
    /// (`SYNC(job.start)`); so Relaxed.
    pub fn set_cpu(&self, cpu: Option<usize>) {
        let v = cpu.map_or(0, |c| c as u32 + 1);
        self.life.cpu.store(v, Ordering::Relaxed);
    }

    /// The first CPU of the rank's binding, once it has arrived.
    pub fn cpu(&self) -> Option<usize> {
        // Relaxed: read after the start barrier (see `set_cpu`).
        self.life
            .cpu
            .load(Ordering::Relaxed)
            .checked_sub(1)
            .map(|c| c as usize)
    }

    /// Publishes the address of this process's probe word, before the
    /// start barrier (whose AcqRel publishes it, `SYNC(job.start)`).
    pub fn set_probe(&self, addr: u64) {
        // Relaxed: published by the start barrier.
        self.life.probe.store(addr, Ordering::Relaxed);
    }

    /// Records the task that peers name in their single-copy calls to
    /// this rank (`transport::cma::target`), before the start barrier.
    pub fn set_cma_task(&self, tid: u32) {
        // Relaxed: published by the start barrier, as the probe word's
        // address (`set_probe`).
        self.life.cma_task.store(tid, Ordering::Relaxed);
    }

    /// The task to name in a single-copy call to this rank: its sleeping
    /// thread when it published one, else its process.
    pub fn cma_task(&self) -> u32 {
        // Relaxed: read after the start barrier (see `set_cma_task`).
        match self.life.cma_task.load(Ordering::Relaxed) {
            0 => self.pid(),
            tid => tid,
        }
    }

    /// The probe word's address in the rank's process (0: none).
    pub fn probe(&self) -> u64 {
        // Relaxed: read after the start barrier (see `set_probe`).
        self.life.probe.load(Ordering::Relaxed)
    }

    /// Writes this rank's placement-probe word.
    pub fn set_ping(&self, v: u64) {
        // Release: pairs with the partner's Acquire in `ping`; the probe
        // carries nothing but the value itself, but a result word must not
        // be seen before the round trips it reports.
        self.life.ping.store(v, Ordering::Release);
    }

    /// This rank's placement-probe word (see [`set_ping`](Self::set_ping)).
    #[inline]
    pub fn ping(&self) -> u64 {
        // Acquire: pairs with the Release in `set_ping`.
        self.life.ping.load(Ordering::Acquire)
    }

    /// Records the outcome of this rank's single-copy self-test.
    pub fn set_single_copy(&self, v: SingleCopy) {
        // Relaxed: a hint that peers read before each rendezvous; until
        // they see it they send through the rings, which is always
        // correct, and nothing else is published through it.
        self.life.single_copy.store(v as u32, Ordering::Relaxed);
    }

    /// What the rank's single-copy self-test found so far.
    #[inline]
    pub fn single_copy(&self) -> SingleCopy {
        // Relaxed: see `set_single_copy`.
        match self.life.single_copy.load(Ordering::Relaxed) {
            1 => SingleCopy::Usable,
            2 => SingleCopy::Refused,
            _ => SingleCopy::Unknown,
        }
    }

    /// The sender's claim of the back part of offer `gen` (this rank is
    /// the receiver; see [`Split`]): moves the word from generation
    /// `gen - 1` (in any state but `Taken`) to `gen`, `Taken`. False when
    /// the word is elsewhere: the receiver revoked `gen` first, or `gen`
    /// is an old offer.
    pub fn split_claim(&self, gen: u64) -> bool {
        let before = gen.wrapping_sub(1) & GEN_MASK;
        // Relaxed: only the expected value of the CAS below, which decides.
        let mut w = self.life.split.load(Ordering::Relaxed);
        loop {
            if w >> 2 != before || w & 3 == Split::Taken as u64 {
                return false;
            }
            // AcqRel: the claim/revoke race is decided on this one word
            // (the receiver's `split_revoke` expects the same value); the
            // winner's later copy is ordered after it.
            match self.life.split.compare_exchange(
                w,
                split_word(gen, Split::Taken),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => w = now,
            }
        }
    }

    /// Takes the claim word's line into the calling core's cache for
    /// writing, and changes nothing: a sender calls it (this rank is the
    /// receiver) while it waits for the offer of a shared copy, so that
    /// its [`split_claim`](Self::split_claim) then finds the line at hand.
    /// The receiver does not touch the word between its settle and its
    /// next revoke, and across Zen 4 CCDs fetching the line for the
    /// claim's compare-and-swap was about 150 ns of the offer's trip.
    pub fn split_fetch(&self) {
        // Relaxed, both: a compare-and-swap that puts back the value it
        // expects (or fails) changes nothing and orders nothing; a claim
        // or a revoke racing with it sees the same word before or after.
        // (Not `fetch_add(0)`: LLVM drops a Relaxed idempotent
        // read-modify-write whose result goes unused; this one compiles
        // to a load and a `lock cmpxchg`.)
        let w = self.life.split.load(Ordering::Relaxed);
        let _ = self
            .life
            .split
            .compare_exchange(w, w, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// The receiver's revoke of offer `gen`, its front part done: moves
    /// the word to `gen`, `Revoked` if the offer still stands (an earlier
    /// generation, or `gen` given back `Offered`). `Err` with the state the
    /// sender put it in otherwise: `Taken` (writing) or `Done`.
    pub fn split_revoke(&self, gen: u64) -> Result<(), Split> {
        // Acquire: pairs with the Release in `split_set` (the sender's
        // bytes are visible once `Done` is seen).
        let mut w = self.life.split.load(Ordering::Acquire);
        loop {
            let state = split_state_of(w);
            if w >> 2 == gen & GEN_MASK && state != Split::Offered {
                return Err(state);
            }
            // AcqRel, Acquire on failure: the race with the sender's
            // `split_claim` is decided on this word; a failed CAS reads
            // the sender's state as the load above does.
            match self.life.split.compare_exchange(
                w,
                split_word(gen, Split::Revoked),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(()),
                Err(now) => w = now,
            }
        }
    }

    /// The sender's end of a claim of generation `gen`: `Done` after its
    /// write, or `Offered` when the write failed (the receiver then
    /// revokes and copies the back itself).
    pub fn split_set(&self, gen: u64, to: Split) {
        // Release: publishes the bytes the sender's `process_vm_writev`
        // put into the receiver's buffer; pairs with the Acquire load (or
        // failed CAS) in `split_revoke`.
        self.life
            .split
            .store(split_word(gen, to), Ordering::Release);
    }

    /// Marks the rank finalized or aborted (with its exit code).
    pub fn set_state(&self, state: RankState, code: i32) {
        // Relaxed: published by the Release store of the state below.
        self.life.exit_code.store(code, Ordering::Relaxed);
        // Release: pairs with the Acquire in `state`.
        self.life.state.store(state as u32, Ordering::Release);
    }

    /// Moves a running rank to `state` (finalized, or aborted with
    /// `code`); whether it was running. A rank finalized or aborted
    /// already keeps its state: a finalize after an abort mark must not
    /// hide the abort from the launcher. (Two markers at once, as an
    /// unwinding thread and a connected job's `MPI_Abort`, both abort:
    /// either code may stay.)
    pub fn leave_running(&self, state: RankState, code: i32) -> bool {
        if self.state() != RankState::Running {
            return false;
        }
        // Relaxed: published by the Release exchange below.
        self.life.exit_code.store(code, Ordering::Relaxed);
        // Release: pairs with the Acquire in `state`, as `set_state`'s
        // store; Relaxed on failure: nothing is read then.
        self.life
            .state
            .compare_exchange(
                RankState::Running as u32,
                state as u32,
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// Ends the job for rank `rank` (this block's), whose thread is
    /// unwinding from a panic and would otherwise wait for its peers, or
    /// finalize (which waits for every rank) while they wait for it: marks
    /// the running rank aborted with [`PANIC_CODE`], so that a launcher
    /// ends every rank, this one too, and says so once.
    pub fn abort_for_panic(&self, rank: usize) {
        if self.leave_running(RankState::Aborted, PANIC_CODE) {
            crate::error::say(format_args!("shmpi: rank {rank} panicked; ending the job"));
        }
    }

    /// The lifecycle state.
    pub fn state(&self) -> RankState {
        // Acquire: pairs with the Release stores in `publish`/`set_state`
        // and the exchange in `leave_running`.
        RankState::from_u32(self.life.state.load(Ordering::Acquire))
    }

    /// The exit code passed to `abort`, if any.
    pub fn exit_code(&self) -> i32 {
        // Relaxed: read after `state()` (Acquire) saw Aborted.
        self.life.exit_code.load(Ordering::Relaxed)
    }

    /// The pid of the rank's process (0 before it attached).
    pub fn pid(&self) -> u32 {
        // Relaxed: diagnostics.
        self.life.pid.load(Ordering::Relaxed)
    }

    /// The doorbell's generation word, the one futex waits on (see
    /// [`crate::shm::doorbell`]).
    #[inline]
    pub fn doorbell(&self) -> &AtomicU32 {
        &self.wake.doorbell
    }

    /// The doorbell's count of sleeping threads.
    #[inline]
    pub fn sleepers(&self) -> &AtomicU32 {
        &self.wake.sleepers
    }

    /// Pending-bitmap word `i`.
    #[inline]
    pub fn pending(&self, i: usize) -> &AtomicU64 {
        &self.wake.pending[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block() -> Box<ControlBlock> {
        // SAFETY: all-zero bytes are a valid control block (atomics and
        // their padding), as in the segment's fresh file.
        unsafe { Box::new(core::mem::zeroed()) }
    }

    /// The claim word of shared copies: an offer stands without a write;
    /// the sender's claim and the receiver's revoke take it from the
    /// generation before; a part given back is revoked; an old offer's
    /// claim fails; a claim left `Taken` (its sender died) does not stop
    /// the next offer, whose claim fails and whose revoke succeeds.
    #[test]
    fn a_claim_and_a_revoke_race_on_the_word_of_the_generation_before() {
        let b = block();
        // 1: fetched for the claim (which changes nothing), claimed from
        // the fresh word, written, seen done.
        b.split_fetch();
        assert!(b.split_claim(1));
        assert!(!b.split_claim(1), "claimed twice");
        assert_eq!(b.split_revoke(1), Err(Split::Taken));
        b.split_set(1, Split::Done);
        assert_eq!(b.split_revoke(1), Err(Split::Done));
        // 2: revoked before the sender came; its late claim fails.
        assert_eq!(b.split_revoke(2), Ok(()));
        b.split_fetch();
        assert!(!b.split_claim(2), "a revoked offer claimed");
        // 3: claimed, then given back (the write failed): revoked.
        assert!(b.split_claim(3));
        b.split_set(3, Split::Offered);
        assert_eq!(b.split_revoke(3), Ok(()));
        assert!(!b.split_claim(2), "an old offer claimed");
        // 4: claimed and never finished; 5 cannot be claimed over it,
        // and its receiver revokes and copies alone.
        assert!(b.split_claim(4));
        assert!(!b.split_claim(5), "claimed over a claim in progress");
        assert_eq!(b.split_revoke(5), Ok(()));
        assert!(!b.split_claim(5));
    }
}
