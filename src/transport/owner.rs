//! A lock that costs its first user no atomic read-modify-write.
//!
//! Layer L2. The engine of a process is nearly always used by one thread
//! (MPI_THREAD_SINGLE and FUNNELED programs, and most MULTIPLE ones
//! between phases). A `std::sync::Mutex` costs that thread two locked
//! instructions per call (`lock cmpxchg` in, `xchg` out), and each drains
//! the store buffer: one lock per send and one per receive on the
//! small-message path, which issue 6 wants free of locks. (Measured on
//! the Zen 4 VM of `docs/benchmarks.md`: a mutex around each side of a
//! pinned-thread ring ping-pong cost 6-8 ns of 65; in the whole message
//! path the change was neutral within the noise.)
//!
//! [`OwnerLock`] gives the first thread that locks it (the *owner*) a path
//! of plain loads and stores: it marks itself `busy`, and checks that no
//! other thread has come since. A second thread (a *newcomer*) switches
//! the lock to the mutex for good: it sets the state to `MULTI`, takes
//! the mutex, runs (the first newcomer only) an asymmetric barrier
//! (`membarrier(2)`, `MEMBARRIER_CMD_PRIVATE_EXPEDITED`:
//! a full barrier on every running thread of this process, so the owner's
//! side needs only a compiler fence), and waits until the owner is no
//! longer `busy`. This is the Dekker pattern with the expensive fence moved
//! to the rare side, as in liburcu and folly's `asymmetricHeavyBarrier`.
//!
//! Where `membarrier` is refused (old kernels, seccomp filters), every
//! lock takes the mutex.
//!
//! `SYNC(owner)` in `docs/memory-model.md`.

use crate::sync::{AtomicU32, AtomicU64, Ordering};
use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Mutex, MutexGuard};

/// A mutual-exclusion lock around a `T` whose first user pays no locked
/// instruction (see the [module docs](self)).
pub struct OwnerLock<T> {
    /// The token of the first thread that locked (0: none yet).
    owner: AtomicU64,
    /// `OPEN` while the owner's path may be taken; `MULTI` for good once
    /// a second thread locks (every lock takes `mutex` from then on);
    /// `PLAIN` while one thread locks but `membarrier` is not available
    /// here (the mutex too).
    state: AtomicU32,
    /// The owner is inside without the mutex.
    busy: AtomicU32,
    /// Whether the owner's path may be used (`membarrier` works here).
    fast: bool,
    /// The lock of every thread but the owner before the switch; the flag
    /// says the switch's heavy barrier has run.
    mutex: Mutex<bool>,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a `Guard`, and guards are
// exclusive: the mutex orders the guards it hands out, and the owner's
// guard excludes the mutex's holders by the `busy`/`state` handshake
// (module docs), so one guard at a time gives access; `T: Send` lets its
// thread be any thread. A guard itself is `Sync` only if `T` is (its
// `PhantomData<&mut T>`), as std's `MutexGuard`.
unsafe impl<T: Send> Sync for OwnerLock<T> {}
// SAFETY: moving the lock moves the `T` it owns; nothing in it is tied to
// a thread.
unsafe impl<T: Send> Send for OwnerLock<T> {}

const OPEN: u32 = 0;
const MULTI: u32 = 1;
const PLAIN: u32 = 2;

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
thread_local! {
    /// Its address is the thread's token: unique among live threads,
    /// never 0, and (const-initialised) free of the lazy-init check a
    /// counter-valued thread-local costs on every lock. A thread may
    /// reuse the address of one that has exited, and with it the owner's
    /// path: the exited thread holds no guard (`busy` was reset when its
    /// guard dropped), so the lock is still the owner's alone; and the
    /// exited thread's writes to the value happen before the new one's
    /// reads, as thread exit and the reuse of its thread-local block
    /// order them (joined or not, glibc frees that block only after the
    /// thread is gone).
    static ANCHOR: u8 = const { 0 };
}

/// This thread's token (see `ANCHOR`).
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
#[inline]
fn token() -> u64 {
    ANCHOR.with(|a| std::ptr::from_ref(a) as usize as u64)
}

/// This thread's token: its thread pointer, the address of its own
/// thread control block, which the x86-64 TLS ABI keeps at `%fs:0` (so
/// one load, where a thread-local in the C library, `libshmpi.so`, costs
/// a call to `__tls_get_addr` on every lock). Unique among live threads
/// and never 0; a thread that reuses an exited one's block is covered as
/// for `ANCHOR` on other targets: the exited thread holds no guard, and
/// its exit orders its writes before the newcomer's reads.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[inline]
fn token() -> u64 {
    let tp: u64;
    // SAFETY: on x86-64 Linux every thread's `%fs` base points at its
    // thread control block, whose first word holds its own address (the
    // TLS ABI that initial- and local-exec accesses rely on); reading it
    // touches nothing else and has no side effect.
    unsafe {
        std::arch::asm!(
            "mov {}, qword ptr fs:[0]",
            out(reg) tp,
            options(nostack, readonly, preserves_flags, pure),
        )
    };
    tp
}

impl<T> OwnerLock<T> {
    /// Wraps `value`. Registers this process for `membarrier`'s private
    /// expedited barrier (once per process); without it, every lock takes
    /// the mutex.
    pub fn new(value: T) -> OwnerLock<T> {
        Self::with(value, barrier::available())
    }

    /// A lock that always takes the mutex (for tests, and to compare).
    pub fn new_plain(value: T) -> OwnerLock<T> {
        Self::with(value, false)
    }

    fn with(value: T, fast: bool) -> OwnerLock<T> {
        OwnerLock {
            owner: AtomicU64::new(0),
            state: AtomicU32::new(if fast { OPEN } else { PLAIN }),
            busy: AtomicU32::new(0),
            fast,
            mutex: Mutex::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Whether a second thread has locked: set for good. Callers that
    /// hold the lock while they spin poll it to let go.
    #[inline]
    pub fn is_multi(&self) -> bool {
        // Relaxed: a hint for letting go; the newcomer waits on `busy`,
        // not on this being seen at once.
        self.state.load(Ordering::Relaxed) == MULTI
    }

    /// Locks. A panic in another thread while it held the lock does not
    /// poison it (the guarded state is kept consistent by its own code).
    ///
    /// # Panics
    /// If the owner thread locks again while it holds the lock (the mutex
    /// would deadlock instead).
    #[inline]
    pub fn lock(&self) -> Guard<'_, T> {
        let t = token();
        // Relaxed: only this thread stores its own token here. (`state`
        // is read only after the `busy` store below: once `MULTI` or
        // `PLAIN`, the owner sets `busy` in vain and takes the slow path,
        // two stores and a load more on a lock that takes the mutex
        // anyway; while `OPEN`, one look at `state` less per lock.)
        if self.owner.load(Ordering::Relaxed) == t {
            // Relaxed: only this thread stores `busy`.
            assert!(
                self.busy.load(Ordering::Relaxed) == 0,
                "OwnerLock locked twice by one thread"
            );
            // SYNC(owner): the light side of the handshake. Store `busy`,
            // compiler fence, load `state`; the newcomer stores `MULTI`,
            // runs `membarrier` (a full fence on this thread, wherever it
            // is), loads `busy`. Either this load sees `MULTI`, or the
            // newcomer sees `busy` and waits for the Release below.
            self.busy.store(1, Ordering::Relaxed);
            crate::sync::compiler_fence();
            if self.state.load(Ordering::Relaxed) == OPEN {
                return Guard {
                    lock: self,
                    held: None,
                    _value: PhantomData,
                };
            }
            // SYNC(owner.busy): Release; pairs with the newcomer's Acquire
            // in `lock_slow`.
            self.busy.store(0, Ordering::Release);
        }
        self.lock_slow(t)
    }

    #[cold]
    #[inline(never)]
    fn lock_slow(&self, t: u64) -> Guard<'_, T> {
        // Relaxed: claiming the role orders nothing; the owner's first
        // lock on its own path runs the handshake like every other.
        if self.owner.load(Ordering::Relaxed) == 0
            && self
                .owner
                .compare_exchange(0, t, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            && self.fast
        {
            return self.lock();
        }
        // Relaxed (owner): a token is compared, nothing published.
        let newcomer = self.owner.load(Ordering::Relaxed) != t;
        // Relaxed: only this thread (the owner) stores `busy`.
        assert!(
            newcomer || self.busy.load(Ordering::Relaxed) == 0,
            "OwnerLock locked twice by one thread"
        );
        if newcomer {
            // Before waiting for the mutex, so that an owner holding it
            // (without membarrier) sees the flag while it spins, lets go,
            // and takes the mutex from then on.
            // Relaxed: the heavy barrier below orders it where it matters.
            self.state.store(MULTI, Ordering::Relaxed);
        }
        let mut held = self.mutex.lock().unwrap_or_else(|e| e.into_inner());
        if self.fast {
            if newcomer && !*held {
                // SYNC(owner): the heavy side (see `lock`). Under the
                // mutex, and only once: later holders find `*held` set,
                // so the barrier is done before they look at `busy`.
                barrier::heavy();
                *held = true;
            }
            // The owner may be inside on its own path since before the
            // switch: wait until it leaves (it polls `is_multi` while it
            // spins, and takes the mutex from its next lock on).
            // Snooze, yield, then nap: the owner may be busy for long
            // (ranks may outnumber the cores).
            let backoff = crate::sync::Backoff::new();
            let mut yields = 0u32;
            // SYNC(owner.busy): Acquire; pairs with the Release in
            // `Guard::drop`: the owner's writes to the value happen before
            // ours. (The owner's own lock here finds `busy` 0.)
            while self.busy.load(Ordering::Acquire) != 0 {
                if !backoff.is_completed() {
                    backoff.snooze();
                } else if yields < 100 {
                    yields += 1;
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(std::time::Duration::from_micros(50));
                }
            }
        }
        Guard {
            lock: self,
            held: Some(held),
            _value: PhantomData,
        }
    }

    /// The value, when no guard can exist.
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }
}

impl<T: fmt::Debug> fmt::Debug for OwnerLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnerLock")
            .field("fast", &self.fast)
            .field("multi", &self.is_multi())
            .finish_non_exhaustive()
    }
}

/// Exclusive access to an [`OwnerLock`]'s value until dropped. Not
/// `Send` (the mutex's guard is not); `Sync` only if `T` is.
pub struct Guard<'a, T> {
    lock: &'a OwnerLock<T>,
    /// The mutex's guard; `None` on the owner's path.
    held: Option<MutexGuard<'a, bool>>,
    /// Shares `&T` across threads only if `T: Sync`.
    _value: PhantomData<&'a mut T>,
}

impl<T> std::ops::Deref for Guard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard is the only one (see `Sync for OwnerLock`),
        // and it lives no longer than the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> std::ops::DerefMut for Guard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this borrow unique.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for Guard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        if self.held.is_none() {
            // SYNC(owner.busy): Release; pairs with the Acquire in
            // `lock_slow`.
            self.lock.busy.store(0, Ordering::Release);
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Guard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// The process-wide asymmetric barrier.
mod barrier {
    #[cfg(target_os = "linux")]
    mod imp {
        use std::sync::OnceLock;

        // From <linux/membarrier.h>.
        const CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
        const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

        /// Registers once per process; false if the kernel (or a seccomp
        /// filter) refuses, or `SHMPI_OWNER_LOCK=0` asks for the mutex.
        pub fn available() -> bool {
            static OK: OnceLock<bool> = OnceLock::new();
            *OK.get_or_init(|| {
                if std::env::var("SHMPI_OWNER_LOCK").is_ok_and(|v| v == "0") {
                    return false;
                }
                // SAFETY: membarrier takes no pointers; registering has no
                // effect on memory.
                let r = unsafe {
                    libc::syscall(libc::SYS_membarrier, CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0)
                };
                r == 0
            })
        }

        /// A full memory barrier on every running thread of this process.
        pub fn heavy() {
            // SAFETY: as above; the process registered in `available`.
            let r = unsafe { libc::syscall(libc::SYS_membarrier, CMD_PRIVATE_EXPEDITED, 0, 0) };
            // Registered, so the kernel cannot refuse; if it ever did, the
            // owner could be inside unseen: stop rather than race.
            assert!(
                r == 0,
                "membarrier(PRIVATE_EXPEDITED) failed after registering: {}",
                std::io::Error::last_os_error()
            );
        }
    }

    #[cfg(not(target_os = "linux"))]
    mod imp {
        pub fn available() -> bool {
            false
        }
        pub fn heavy() {
            unreachable!("no owner path without membarrier")
        }
    }

    pub use imp::{available, heavy};
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn owner_and_newcomers_exclude_each_other() {
        for lock in [OwnerLock::new(0u64), OwnerLock::new_plain(0u64)] {
            let lock = Arc::new(lock);
            // The owner: this thread, first.
            *lock.lock() += 1;
            assert!(!lock.is_multi());
            let others: Vec<_> = (0..3)
                .map(|_| {
                    let lock = lock.clone();
                    std::thread::spawn(move || {
                        for _ in 0..20_000 {
                            // A non-atomic read-modify-write: lost updates
                            // if two guards ever overlap.
                            let mut g = lock.lock();
                            let v = *g;
                            std::hint::black_box(&v);
                            *g = v + 1;
                        }
                    })
                })
                .collect();
            let mut mine = 1;
            // The owner keeps locking while the others run (bounded).
            while mine < 200_000 && !others.iter().all(|h| h.is_finished()) {
                let mut g = lock.lock();
                let v = *g;
                std::hint::black_box(&v);
                *g = v + 1;
                mine += 1;
            }
            for h in others {
                h.join().expect("a locking thread");
            }
            assert!(lock.is_multi());
            assert_eq!(*lock.lock(), mine + 3 * 20_000);
        }
    }

    #[test]
    fn owner_relock_panics() {
        let lock = OwnerLock::new(());
        if !lock.fast {
            // The mutex path would deadlock, as std's does.
            eprintln!("no membarrier here: the owner's path is off, nothing to check");
            return;
        }
        let _a = lock.lock();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(lock.lock())));
        assert!(r.is_err(), "a second lock by the owner must panic");
    }
}
