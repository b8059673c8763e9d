//! The contract between the launcher and its ranks.
//!
//! Layer L2 (imports L0 and `shm`). [`env`](mod@env) names the `SHMPI_*`
//! variables, [`spawn`] is the launcher side (`shmpiexec`), [`bootstrap`]
//! the rank side. `job` never imports `transport`: the launcher's caller computes the
//! segment's shape from the transport layout and passes it in.
#![forbid(unsafe_code)]

pub mod bootstrap;
pub mod env;
pub mod names;
pub mod spawn;

pub use env::JobContract;
pub use spawn::{run, JobOutcome, JobSpec, SegmentShape};
