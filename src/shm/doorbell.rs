//! A futex doorbell shared across processes: the last rung of the wait
//! ladder (spin → yield → sleep).
//!
//! Two words belong to one rank: a *generation* (the futex word) and a
//! count of *sleepers* (threads of that rank about to sleep or asleep).
//! Ringers are the peers (or other threads) that publish work for it.
//!
//! Protocol (a Dekker pair; each side separates its write from its read
//! with a SeqCst fence, so at least one sees the other's write,
//! `SYNC(doorbell)` in `docs/memory-model.md`):
//!
//! ```text
//! ringer:  publish work                   sleeper: sleepers += 1; g = generation
//!          fence(SeqCst)                           fence(SeqCst)
//!          if sleepers > 0:                        if no work visible: FUTEX_WAIT(generation, g)
//!             generation += 1; FUTEX_WAKE          sleepers -= 1
//! ```
//!
//! If the sleeper misses the work, the ringer sees the sleeper count and
//! bumps the generation, so `FUTEX_WAIT` either returns at once (the word
//! is no longer `g`) or is woken. If the sleeper read `g` after the bump,
//! that read synchronises with the bump and the work is visible to it.
//! Several threads of one rank may sleep at once; a ring wakes them all.
//!
//! Fences rather than SeqCst accesses alone: loom models SeqCst fences
//! exactly (it found a lost wake-up in a version that relied on a SeqCst
//! RMW followed by a SeqCst load), and on x86 a fence is one `mfence`. The
//! model in `model` (loom builds only) is checked by loom in
//! `src/ring/model_tests.rs`.

use crate::sync::{fence, AtomicU32, Ordering};
use std::time::Duration;

/// Waiting and waking on a 32-bit word.
pub trait Futex {
    /// Sleeps while `*word == expected`, at most `timeout`; may return
    /// early (spuriously).
    fn wait(&self, word: &AtomicU32, expected: u32, timeout: Option<Duration>);
    /// Wakes every sleeper on `word`.
    fn wake(&self, word: &AtomicU32);
}

/// The ringer's half: call after publishing work *and* a SeqCst fence.
#[inline]
pub fn ring<F: Futex>(futex: &F, generation: &AtomicU32, sleepers: &AtomicU32) {
    // SYNC(doorbell): ordered after the work by the caller's SeqCst fence;
    // pairs with the sleeper's increment + fence in `sleep`.
    if sleepers.load(Ordering::SeqCst) != 0 {
        // SeqCst RMW: a sleeper that reads the new generation also sees the
        // work published before the caller's fence.
        generation.fetch_add(1, Ordering::SeqCst);
        futex.wake(generation);
    }
}

/// The sleeper's half: sleeps until `has_work()` is true or `timeout`
/// passes (or spuriously). Returns whether work was seen before sleeping.
pub fn sleep<F: Futex>(
    futex: &F,
    generation: &AtomicU32,
    sleepers: &AtomicU32,
    has_work: impl Fn() -> bool,
    timeout: Option<Duration>,
) -> bool {
    // SYNC(doorbell): the sleeper's write, then the fence, then its reads.
    sleepers.fetch_add(1, Ordering::SeqCst);
    let g = generation.load(Ordering::SeqCst);
    fence(Ordering::SeqCst);
    let seen = has_work();
    if !seen {
        futex.wait(generation, g, timeout);
    }
    // SeqCst: keeps the count exact for ringers; nothing is published
    // through the decrement.
    sleepers.fetch_sub(1, Ordering::SeqCst);
    seen
}

/// The kernel's futex, on a word that may live in shared memory (so not
/// `FUTEX_PRIVATE_FLAG`).
#[cfg(not(loom))]
#[derive(Debug, Clone, Copy, Default)]
pub struct Kernel;

#[cfg(not(loom))]
impl Futex for Kernel {
    fn wait(&self, word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
        let ts = timeout.map(|d| libc::timespec {
            tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        });
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `word` is a valid, aligned u32 for the duration of the
        // call; FUTEX_WAIT only reads it; `ts_ptr` is null or points to a
        // live timespec. EINTR, EAGAIN and ETIMEDOUT are all fine: callers
        // re-check their condition.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT,
                expected,
                ts_ptr,
            )
        };
    }

    fn wake(&self, word: &AtomicU32) {
        // SAFETY: `word` is a valid, aligned u32; FUTEX_WAKE does not
        // dereference it beyond computing the futex key.
        unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX) };
    }
}

/// A loom model of the futex and of published work, for the model test.
#[cfg(loom)]
pub mod model {
    use super::*;
    use crate::sync::AtomicU64;
    use loom::sync::{Condvar, Mutex};

    /// A futex modelled by a mutex (the kernel's hash-bucket lock) and a
    /// condition variable.
    #[derive(Debug, Default)]
    pub struct ModelFutex {
        lock: Mutex<()>,
        cv: Condvar,
    }

    impl Futex for ModelFutex {
        fn wait(&self, word: &AtomicU32, expected: u32, _timeout: Option<Duration>) {
            let g = self.lock.lock().unwrap();
            // Relaxed inside the lock, as the kernel's compare is.
            if word.load(Ordering::Relaxed) == expected {
                drop(self.cv.wait(g).unwrap());
            }
        }
        fn wake(&self, _word: &AtomicU32) {
            let _g = self.lock.lock().unwrap();
            self.cv.notify_all();
        }
    }

    /// One rank's doorbell with its futex model.
    #[derive(Debug)]
    pub struct Bell {
        generation: AtomicU32,
        sleepers: AtomicU32,
        futex: ModelFutex,
    }

    impl Bell {
        /// A bell with no sleepers.
        pub fn new() -> Self {
            Bell {
                generation: AtomicU32::new(0),
                sleepers: AtomicU32::new(0),
                futex: ModelFutex::default(),
            }
        }
        /// The ringer's half.
        pub fn ring(&self) {
            ring(&self.futex, &self.generation, &self.sleepers);
        }
        /// Sleeps until `cond()` holds.
        pub fn sleep_until(&self, cond: impl Fn() -> bool) {
            while !cond() {
                sleep(&self.futex, &self.generation, &self.sleepers, &cond, None);
            }
        }
    }

    impl Default for Bell {
        fn default() -> Self {
            Self::new()
        }
    }

    /// Work published the way the transport publishes it: a SeqCst RMW on
    /// the receiver's pending word, then the SeqCst fence `ring` expects.
    #[derive(Debug)]
    pub struct Work(AtomicU64);

    impl Work {
        /// No work yet.
        pub fn new() -> Self {
            Work(AtomicU64::new(0))
        }
        /// Publishes work.
        pub fn post(&self) {
            self.0.fetch_or(1, Ordering::SeqCst);
            fence(Ordering::SeqCst);
        }
        /// Whether work is visible.
        pub fn taken(&self) -> bool {
            self.0.load(Ordering::SeqCst) != 0
        }
    }

    impl Default for Work {
        fn default() -> Self {
            Self::new()
        }
    }
}
