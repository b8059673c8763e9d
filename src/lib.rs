//! shmpi: message passing between the processes of one node, over shared
//! memory, with MPI semantics.
//!
//! Layers, bottom up (imports only go down; see `docs/architecture.md`):
//!
//! | layer | modules |
//! |---|---|
//! | L0 | [`error`], [`sync`], [`datatype`] |
//! | L1 | [`shm`], [`ring`], [`topology`] |
//! | L2 | [`transport`], [`job`] |
//! | L3 | [`p2p`] |
//! | L5 | [`comm`] |
//! | L6 | [`universe`] |
//!
//! `unsafe` lives only in `shm`, `ring` and `transport` (and later `capi`);
//! every other module forbids it.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(
    missing_debug_implementations,
    clippy::undocumented_unsafe_blocks,
    clippy::multiple_unsafe_ops_per_block
)]

pub mod datatype;
pub mod error;
pub mod ring;
pub mod sync;

pub use error::{Error, ErrorClass, Result};
pub mod shm;
pub mod transport;
pub mod job;
pub mod p2p;
pub mod comm;
pub mod universe;

pub use comm::{Communicator, Message, Request};
pub use datatype::Scalar;
pub use p2p::{Status, ANY_SOURCE, ANY_TAG, PROC_NULL, TAG_UB};
pub use universe::{init, Threading, Universe};
