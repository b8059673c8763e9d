//! The status of a completed receive or probe.

use super::envelope::{ANY_TAG, PROC_NULL};

/// What a receive (or probe) learned about its message (`MPI_Status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// Rank of the sender in the communicator.
    pub source: i32,
    /// The message's tag.
    pub tag: i32,
    /// The message's length in bytes (the sent length, even when the
    /// receive truncated it).
    pub bytes: usize,
}

impl Status {
    /// The status of a receive from `PROC_NULL`.
    pub fn null() -> Status {
        Status {
            source: PROC_NULL,
            tag: ANY_TAG,
            bytes: 0,
        }
    }

    /// The number of whole elements of `T` in the message, or `None` when
    /// the length is not a multiple of `T`'s size (`MPI_UNDEFINED`).
    pub fn count<T>(&self) -> Option<usize> {
        let s = core::mem::size_of::<T>().max(1);
        (self.bytes % s == 0).then_some(self.bytes / s)
    }
}
