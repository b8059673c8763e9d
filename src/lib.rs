//! shmpi: message passing between the processes of one node, over shared
//! memory, with MPI semantics.
//!
//! Layers, bottom up (imports only go down; see `docs/architecture.md`):
//!
//! | layer | modules |
//! |---|---|
//! | L0 | [`error`], [`sync`], [`datatype`] |
//! | L1 | [`shm`], [`ring`], [`topology`], [`group`] |
//! | L2 | [`transport`], [`job`] |
//! | L3 | [`p2p`] |
//! | L4 | [`coll`] |
//! | L5 | [`comm`] |
//! | L6 | [`universe`] |
//!
//! Under `cfg(loom)` only `error`, `sync`, `ring` and `shm::doorbell` are
//! built: the model tests check those protocols.
//!
//! `unsafe` lives only in `shm`, `ring` and `transport` (and later `capi`);
//! every other module forbids it.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(
    missing_debug_implementations,
    clippy::undocumented_unsafe_blocks,
    clippy::multiple_unsafe_ops_per_block
)]

#[cfg(not(loom))]
pub mod datatype;
pub mod error;
#[cfg(not(loom))]
pub mod group;
pub mod ring;
pub mod sync;
#[cfg(not(loom))]
pub mod topology;

pub use error::{Error, ErrorClass, Result};
#[cfg(not(loom))]
pub mod capi;
#[cfg(not(loom))]
pub mod coll;
#[cfg(not(loom))]
pub mod comm;
#[cfg(not(loom))]
pub mod job;
#[cfg(not(loom))]
pub mod p2p;
pub mod shm;
#[cfg(not(loom))]
pub mod transport;
#[cfg(not(loom))]
pub mod universe;

#[cfg(not(loom))]
pub use coll::Op;
#[cfg(not(loom))]
pub use comm::{Communicator, ErrHandler, Keyval, Message, Request, SplitType, ROOT};
#[cfg(not(loom))]
pub use datatype::Scalar;
#[cfg(not(loom))]
pub use datatype::ValueIndex;
#[cfg(not(loom))]
pub use group::{Comparison, Group, UNDEFINED};
#[cfg(not(loom))]
pub use p2p::{Status, ANY_SOURCE, ANY_TAG, PROC_NULL, TAG_UB};
#[cfg(not(loom))]
pub use transport::rma::Exposed;
#[cfg(not(loom))]
pub use transport::SharedBuf;
#[cfg(not(loom))]
pub use universe::{init, Protocols, Threading, Universe};

/// The README's example compiles (run by `cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
