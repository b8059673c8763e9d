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

/// The exit status of a process whose job was aborted with `code`
/// (`MPI_Abort`): the code itself, as far as a status holds it (its low 8
/// bits), 0 included, as the standard asks ("returned to the invoking
/// environment", MPI 4.1 §9.5) and MPICH's and Open MPI's launchers do.
pub fn abort_status(code: i32) -> i32 {
    code & 0xff
}
pub use spawn::{run, JobOutcome, JobSpec, SegmentShape, StartError};
