//! The status of a completed receive or probe.

use super::envelope::{ANY_SOURCE, ANY_TAG, PROC_NULL};

/// The tag of a cancelled receive's status ([`Status::cancelled`]): no
/// message has it (a program's tags are `0..=TAG_UB`, the nonblocking
/// collectives' `[i32::MIN, i32::MIN + 2^30)`, and it is not `ANY_TAG`).
pub const CANCELLED_TAG: i32 = -2;

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

    /// The status of a receive that `MPI_Cancel` marked for cancellation
    /// while another thread waited for it
    /// ([`Engine::cancel_posted`](super::Engine::cancel_posted)): no
    /// message, and the tag [`CANCELLED_TAG`], which no message carries.
    pub fn cancelled() -> Status {
        Status {
            source: ANY_SOURCE,
            tag: CANCELLED_TAG,
            bytes: 0,
        }
    }

    /// Whether this is the status of a cancelled receive
    /// ([`cancelled`](Self::cancelled)).
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.tag == CANCELLED_TAG
    }

    /// The number of whole elements of `T` in the message, or `None` when
    /// the length is not a multiple of `T`'s size (`MPI_UNDEFINED`).
    pub fn count<T>(&self) -> Option<usize> {
        let s = core::mem::size_of::<T>().max(1);
        (self.bytes % s == 0).then_some(self.bytes / s)
    }
}
