//! A futex doorbell shared across processes: the last rung of the wait
//! ladder (spin → yield → sleep).
//!
//! The word is `AWAKE` or `SLEEPING` and belongs to one sleeper (a rank's
//! progress engine). Ringers are the peers that publish work for it.
//!
//! Protocol (a Dekker pair; each side separates its write from its read
//! with a SeqCst fence, so at least one sees the other's write,
//! `SYNC(doorbell)` in `docs/memory-model.md`):
//!
//! ```text
//! ringer:  publish work                   sleeper: word = SLEEPING
//!          fence(SeqCst)                           fence(SeqCst)
//!          if word == SLEEPING                     if work visible: word = AWAKE, return
//!             swap(AWAKE) and FUTEX_WAKE           FUTEX_WAIT(word, SLEEPING)
//! ```
//!
//! Fences rather than SeqCst accesses alone: loom models SeqCst fences
//! exactly (it found a lost wake-up in a version that relied on a SeqCst
//! RMW followed by a SeqCst load), and on x86 a fence is one `mfence`.
//!
//! If the sleeper misses the work, the ringer sees `SLEEPING` and wakes it;
//! if the ringer swaps before the sleeper enters the kernel, `FUTEX_WAIT`
//! returns at once because the word is no longer `SLEEPING`. The model in
//! [`model`] is checked by loom in `tests/ring_model.rs`.

use crate::sync::{fence, AtomicU32, Ordering};
use std::time::Duration;

/// The sleeper is running (or about to look for work).
pub const AWAKE: u32 = 0;
/// The sleeper has announced that it will sleep.
pub const SLEEPING: u32 = 1;

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
pub fn ring<F: Futex>(futex: &F, word: &AtomicU32) {
    // SYNC(doorbell): ordered after the work by the caller's SeqCst fence;
    // pairs with the sleeper's store + fence in `sleep`.
    if word.load(Ordering::SeqCst) == SLEEPING
        // SeqCst: one ringer wins the swap and makes the syscall.
        && word.swap(AWAKE, Ordering::SeqCst) == SLEEPING
    {
        futex.wake(word);
    }
}

/// The sleeper's half: sleeps until `has_work()` is true or `timeout`
/// passes. Returns whether work was seen before sleeping.
pub fn sleep<F: Futex>(
    futex: &F,
    word: &AtomicU32,
    has_work: impl Fn() -> bool,
    timeout: Option<Duration>,
) -> bool {
    // SYNC(doorbell): SeqCst store, paired with the ringer's SeqCst
    // publish-then-load in `ring`.
    word.store(SLEEPING, Ordering::SeqCst);
    fence(Ordering::SeqCst);
    if has_work() {
        // Relaxed: only this sleeper reads the word as a sleep flag.
        word.store(AWAKE, Ordering::Relaxed);
        return true;
    }
    futex.wait(word, SLEEPING, timeout);
    // Relaxed: as above; a ringer may already have reset it.
    word.store(AWAKE, Ordering::Relaxed);
    false
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

    /// One sleeper's doorbell with its futex model.
    #[derive(Debug)]
    pub struct Bell {
        word: AtomicU32,
        futex: ModelFutex,
    }

    impl Bell {
        /// An awake bell.
        pub fn new() -> Self {
            Bell {
                word: AtomicU32::new(AWAKE),
                futex: ModelFutex::default(),
            }
        }
        /// The ringer's half.
        pub fn ring(&self) {
            ring(&self.futex, &self.word);
        }
        /// Sleeps until `cond()` holds.
        pub fn sleep_until(&self, cond: impl Fn() -> bool) {
            while !cond() {
                sleep(&self.futex, &self.word, &cond, None);
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
