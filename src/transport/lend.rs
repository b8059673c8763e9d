//! Lending a send buffer to the transport for the length of a scope.
//!
//! A nonblocking send that does not fit the ring must be finished by
//! later progress calls, which do not have the caller's buffer. Copying it
//! into the send queue is always sound but costs a copy (and, for a window
//! of megabyte messages, fresh pages). Holding a raw pointer to the
//! caller's buffer is only sound while the buffer lives, and a `Request`
//! whose drop would wait can be leaked (`mem::forget`), so the borrow
//! cannot hang on the request. It hangs on a *scope*, as
//! `std::thread::scope` does: [`lend`] runs a closure with a [`Lender`];
//! buffers lent through it are borrowed for `'env`, which outlives the
//! whole `lend` call, and before `lend` returns (or unwinds) every lent
//! buffer the transport has not finished with is copied into memory the
//! transport owns. So a lent buffer is read through its pointer only while
//! it is certainly alive and unchanged, whatever the caller leaks.
//!
//! Each [`Lent`] is a small shared cell (pointer, length, or the owned
//! copy) behind a mutex: the transport locks it for each push of
//! fragments, the scope's end locks it to detach. Both are uncontended in
//! the common case (the sender waits for its sends inside the scope, so
//! there is nothing left to detach).
//!
//! A lent buffer may also go by rendezvous, read by its receiver in
//! another process, which no mutex of ours can stop: then the cell holds
//! an [`Offer`], an entry of this rank's offer table (`shm::offers`). At
//! the scope's end the cell copies the bytes as always and moves the
//! offer to the copy, unless the receiver is reading already, in which
//! case it waits for the receiver to finish: the receiver never reads the
//! caller's buffer after `lend` returns.

use crate::shm::offers::{OfferEntry, OfferState};
use crate::shm::Segment;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug)]
enum Data {
    /// The caller's bytes, alive and shared-borrowed until detached.
    Borrowed(*const u8, usize),
    /// A copy the cell owns.
    Owned(Vec<u8>),
}

// SAFETY: the pointer is only dereferenced as a shared slice, under the
// cell's mutex, while the `Lender` that made it guarantees the borrow
// (`Lender::lend` takes `&'env [u8]`, and `'env` outlives `lend`, which
// detaches every cell before returning), or while the `RawLend` that made
// it lives (its caller's promise; its drop detaches); shared reads from
// any thread are what a `&[u8]` (which is `Sync`) allows.
unsafe impl Send for Data {}

/// A revocable rendezvous offer of this rank's: an entry of its offer
/// table (`shm::offers`) naming the bytes of one send to `peer`. Made by
/// [`Transport::open_offer`](super::Transport::open_offer); retired when
/// the receiver acked (or, a rank of another job, was found dead);
/// dropped unretired, it is withdrawn (or, when the receiver is reading,
/// waited for: until it finishes or its process is gone) and retired.
#[derive(Debug)]
pub struct Offer {
    seg: Arc<Segment>,
    me: usize,
    peer: usize,
    idx: usize,
    gen: u64,
    live: bool,
}

impl Offer {
    pub(super) fn new(seg: Arc<Segment>, me: usize, peer: usize, idx: usize, gen: u64) -> Offer {
        Offer {
            seg,
            me,
            peer,
            idx,
            gen,
            live: true,
        }
    }

    /// The entry's index and generation, as the rendezvous request
    /// carries them to the receiver.
    pub fn id(&self) -> (u32, u64) {
        (self.idx as u32, self.gen)
    }

    fn entry(&self) -> &OfferEntry {
        self.seg.offers(self.me).entry(self.idx)
    }

    /// Waits while the receiver reads (a copy in progress: a short spin,
    /// then yielding); false when its process is gone meanwhile (it will
    /// never finish, and reads nothing more).
    fn wait_reading(&self) -> bool {
        let mut rounds = 0u32;
        while self.entry().state(self.gen) == Some(OfferState::Reading) {
            if !super::wait::step_round(&mut rounds, || self.seg.control(self.peer).pid()) {
                return false;
            }
        }
        true
    }

    /// The bytes now also live at `addr` (a copy in this process that
    /// stays until the offer is retired): a receiver that has not claimed
    /// the offer yet reads them there; one that is reading is waited for.
    fn move_to(&self, addr: u64) {
        loop {
            if self.entry().begin_move(self.gen) {
                self.entry().end_move(self.gen, addr);
                return;
            }
            match self.entry().state(self.gen) {
                Some(OfferState::Reading) => {
                    if !self.wait_reading() {
                        return;
                    }
                }
                // Read already (the ack has not been seen yet), or no
                // longer this offer.
                Some(OfferState::Done | OfferState::Withdrawn | OfferState::Free) | None => return,
                Some(OfferState::Offered) => {}
                Some(OfferState::Moving) => unreachable!("only the owner moves its offer"),
            }
        }
    }

    /// Frees the entry: the receiver acked (it read everything, or
    /// dropped the message unread), or was found dead.
    pub fn retire(mut self) {
        self.entry().retire();
        self.live = false;
    }
}

impl Drop for Offer {
    fn drop(&mut self) {
        if !self.live {
            return;
        }
        // The bytes are going away unacked (the transport was dropped with
        // the send in flight): take the offer back, or let the reader
        // finish, then free the entry.
        if !self.entry().withdraw(self.gen) {
            let _ = self.wait_reading();
        }
        self.entry().retire();
    }
}

/// Fields drop in order: the offer (withdrawn, or its reader waited for)
/// before the bytes it names.
#[derive(Debug)]
struct Cell {
    offer: Option<Offer>,
    data: Data,
}

/// A lent send buffer, as the transport's queue holds it.
#[derive(Debug, Clone)]
pub struct Lent(Arc<Mutex<Cell>>);

impl Lent {
    fn cell(data: Data) -> Lent {
        Lent(Arc::new(Mutex::new(Cell { offer: None, data })))
    }

    /// Runs `f` on the bytes (the caller's buffer, or the copy made when
    /// the scope ended first).
    pub fn with<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        let g = self.lock();
        match &g.data {
            // SAFETY: `Borrowed` holds a pointer and length taken from a
            // `&'env [u8]` by `Lender::lend`; `lend` turns every cell to
            // `Owned` (under this mutex, which we hold) before `'env` can
            // end, so the slice is alive and, being shared-borrowed, not
            // written by anyone while we read it.
            Data::Borrowed(p, n) => f(unsafe { std::slice::from_raw_parts(*p, *n) }),
            Data::Owned(v) => f(v),
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        match &self.lock().data {
            Data::Borrowed(_, n) => *n,
            Data::Owned(v) => v.len(),
        }
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the bytes are still the caller's (not yet detached).
    pub fn is_borrowed(&self) -> bool {
        matches!(&self.lock().data, Data::Borrowed(..))
    }

    /// Ties `offer` (a rendezvous offer of these bytes) to the cell: the
    /// scope's end moves it to the copy.
    pub fn hold_offer(&self, offer: Offer) {
        self.lock().offer = Some(offer);
    }

    /// Retires the cell's offer (the receiver acked or died).
    pub fn retire_offer(&self) {
        if let Some(o) = self.lock().offer.take() {
            o.retire();
        }
    }

    fn lock(&self) -> MutexGuard<'_, Cell> {
        // A panic while the lock was held cannot leave `Cell` half made:
        // its fields are written whole.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Copies the bytes into the cell (if still borrowed); an offer of
    /// them moves to the copy, or its reader is waited for.
    fn detach(&self) {
        let mut g = self.lock();
        if let Data::Borrowed(p, n) = g.data {
            // SAFETY: as in `with`: still inside `lend` (this is its end,
            // or the `RawLend`'s drop), so the borrow is alive; the lock
            // is held.
            let copy = unsafe { std::slice::from_raw_parts(p, n) }.to_vec();
            if let Some(o) = &g.offer {
                // The heap block of `copy` stays where it is when the
                // vector moves into the cell, until the cell drops, and
                // the cell outlives the offer it holds.
                o.move_to(copy.as_ptr() as u64);
            }
            g.data = Data::Owned(copy);
        }
    }
}

/// Lends buffers borrowed for `'env` (see [`lend`]).
#[derive(Debug)]
pub struct Lender<'env> {
    cells: Mutex<Vec<Lent>>,
    /// Invariant in `'env`, as `std::thread::Scope`, so the borrow cannot
    /// be shortened to end inside the scope.
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'env> Lender<'env> {
    /// Lends `data` until the end of the scope.
    pub fn lend(&self, data: &'env [u8]) -> Lent {
        let cell = Lent::cell(Data::Borrowed(data.as_ptr(), data.len()));
        let mut cells = self.cells.lock().unwrap_or_else(|e| e.into_inner());
        // Cells the transport is done with (only the scope holds them)
        // need no detaching: forget them as we go, so a long scope does
        // not grow without bound.
        cells.retain(|c| Arc::strong_count(&c.0) > 1);
        cells.push(cell.clone());
        cell
    }

    fn detach_all(&self) {
        let cells = std::mem::take(&mut *self.cells.lock().unwrap_or_else(|e| e.into_inner()));
        for c in cells {
            if Arc::strong_count(&c.0) > 1 {
                c.detach();
            }
        }
    }
}

/// A buffer lent under a caller's promise instead of a scope: the C API's
/// nonblocking sends, whose buffer MPI requires to stay alive and
/// unchanged until the request completes or is freed (MPI 4.1 §3.7.2,
/// §3.7.3). The C request owns it and drops it after the Rust request:
/// whatever the transport still holds then is copied, as at the end of a
/// [`lend`] scope.
#[derive(Debug)]
pub struct RawLend(Lent);

impl RawLend {
    /// Lends `data` until the returned value is dropped.
    ///
    /// # Safety
    /// `data` stays alive and is not written until the `RawLend` is
    /// dropped (its lifetime is not tracked).
    pub unsafe fn new(data: &[u8]) -> RawLend {
        RawLend(Lent::cell(Data::Borrowed(data.as_ptr(), data.len())))
    }

    /// The cell to hand to the transport's queue.
    pub fn lent(&self) -> Lent {
        self.0.clone()
    }
}

impl Drop for RawLend {
    fn drop(&mut self) {
        // Only this handle left: the transport is done with the buffer.
        if Arc::strong_count(&(self.0).0) > 1 {
            self.0.detach();
        }
    }
}

/// Runs `f` with a [`Lender`]; every buffer lent through it that the
/// transport still holds when `f` returns (or unwinds) is copied first.
pub fn lend<'env, R>(f: impl for<'s> FnOnce(&'s Lender<'env>) -> R) -> R {
    struct Detach<'a, 'env>(&'a Lender<'env>);
    impl Drop for Detach<'_, '_> {
        fn drop(&mut self) {
            self.0.detach_all();
        }
    }
    let lender = Lender {
        cells: Mutex::new(Vec::new()),
        _env: PhantomData,
    };
    // The guard lives in this frame, out of the caller's reach, so it runs
    // on return and on unwinding alike.
    let guard = Detach(&lender);
    let r = f(guard.0);
    drop(guard);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_reads_the_buffer_until_the_scope_ends_then_its_copy() {
        let mut buf = vec![1u8, 2, 3];
        let kept = lend(|l| {
            let c = l.lend(&buf);
            assert!(c.is_borrowed());
            assert_eq!(c.with(|b| b.to_vec()), vec![1, 2, 3]);
            c
        });
        // The scope ended while `kept` still held the cell: it was copied,
        // so the buffer may change.
        buf[0] = 9;
        assert!(!kept.is_borrowed());
        assert_eq!(kept.with(|b| b.to_vec()), vec![1, 2, 3]);
        assert_eq!(kept.len(), 3);
    }

    #[test]
    fn a_leaked_cell_is_still_detached() {
        let buf = vec![7u8; 1000];
        let leaked = lend(|l| {
            let c = l.lend(&buf);
            std::mem::forget(c.clone());
            c
        });
        drop(buf);
        assert_eq!(
            leaked.with(|b| b.iter().map(|&x| x as u32).sum::<u32>()),
            7000
        );
    }

    #[test]
    fn cells_the_transport_dropped_are_not_copied() {
        let buf = vec![5u8; 10];
        lend(|l| {
            for _ in 0..100 {
                let c = l.lend(&buf);
                drop(c);
            }
            assert!(l.cells.lock().unwrap().len() <= 1);
        });
    }

    #[test]
    fn a_raw_lend_reads_the_buffer_until_dropped_then_the_copy() {
        let mut buf = vec![4u8, 5, 6];
        // SAFETY: `buf` is neither freed nor written until `raw` drops.
        let raw = unsafe { RawLend::new(&buf) };
        let cell = raw.lent();
        assert!(cell.is_borrowed());
        drop(raw);
        buf[0] = 0;
        assert!(!cell.is_borrowed());
        assert_eq!(cell.with(|b| b.to_vec()), vec![4, 5, 6]);
    }

    #[test]
    fn a_panic_in_the_scope_still_detaches() {
        let buf = vec![3u8; 8];
        let out = std::sync::Mutex::new(None);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            lend(|l| {
                *out.lock().unwrap() = Some(l.lend(&buf));
                panic!("inside the scope");
            })
        }));
        assert!(r.is_err());
        let c = out.lock().unwrap().take().unwrap();
        assert!(!c.is_borrowed());
    }
}
