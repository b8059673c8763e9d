//! Lending scopes: nonblocking sends that push straight from the caller's
//! buffer, without the copy a plain `isend` needs for what does not fit
//! the ring at once.
//!
//! A plain [`Communicator::isend`]'s request borrows the buffer, but a
//! request can be leaked, so later progress calls may not read the buffer
//! through it: a large message is either read by its receiver with a
//! single copy (rendezvous, when the kernel allows it) or copied into the
//! send queue. Inside [`scope`], sends lend their buffer to the transport
//! until the scope ends (`transport::lend`), as `std::thread::scope` lends
//! borrows to threads: progress pushes fragments straight from it, and
//! whatever the transport still holds when the scope ends is copied then.
//! So a window of large nonblocking sends costs one copy into the ring and
//! one out, as a blocking send does.

use super::{Communicator, Request};
use crate::datatype::Scalar;
use crate::error::Result;
use crate::transport::bytes::as_bytes;
use crate::transport::{self, Lender};

/// Where buffers borrowed for `'env` can be lent to nonblocking sends;
/// see [`scope`].
#[derive(Debug)]
pub struct Scope<'s, 'env> {
    lender: &'s Lender<'env>,
}

/// Runs `f` with a [`Scope`] whose nonblocking sends push straight from
/// their buffers. The buffers are borrowed until `scope` returns.
///
/// # Example
/// ```no_run
/// # let u = shmpi::init().unwrap();
/// let w = u.world();
/// let data = vec![7u8; 4 << 20];
/// shmpi::comm::scope(|s| {
///     let reqs = (0..8)
///         .map(|_| s.isend(&w, &data, 1, 0))
///         .collect::<shmpi::Result<Vec<_>>>()?;
///     shmpi::comm::wait_all(reqs).map(|_| ())
/// })
/// .unwrap();
/// ```
pub fn scope<'env, R>(f: impl for<'s> FnOnce(&'s Scope<'s, 'env>) -> R) -> R {
    transport::lend(|lender| f(&Scope { lender }))
}

impl<'env> Scope<'_, 'env> {
    /// Starts a standard-mode send of `buf` (`MPI_Isend`) whose rest is
    /// pushed from `buf` itself.
    ///
    /// # Errors
    /// As [`Communicator::send`].
    pub fn isend<'c, T: Scalar>(
        &self,
        comm: &'c Communicator,
        buf: &'env [T],
        dest: i32,
        tag: i32,
    ) -> Result<Request<'c>> {
        self.start(comm, as_bytes(buf), dest, tag, false)
    }

    /// Starts a synchronous send (`MPI_Issend`) whose rest is pushed from
    /// `buf` itself.
    ///
    /// # Errors
    /// As [`Communicator::send`].
    pub fn issend<'c, T: Scalar>(
        &self,
        comm: &'c Communicator,
        buf: &'env [T],
        dest: i32,
        tag: i32,
    ) -> Result<Request<'c>> {
        self.start(comm, as_bytes(buf), dest, tag, true)
    }

    fn start<'c>(
        &self,
        comm: &'c Communicator,
        data: &'env [u8],
        dest: i32,
        tag: i32,
        sync: bool,
    ) -> Result<Request<'c>> {
        let r = comm.isend_bytes(
            data,
            dest,
            tag,
            sync,
            false,
            Some(super::Lending::Scope(self.lender)),
        );
        comm.ret(if sync { "MPI_Issend" } else { "MPI_Isend" }, r)
    }
}
