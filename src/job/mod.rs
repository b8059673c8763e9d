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
/// (`MPI_Abort`, or a fatal error of class `code`): the code itself, as
/// far as a status holds it (its low 8 bits), as the standard asks
/// ("returned to the invoking environment", MPI 4.1 §9.5) and MPICH's and
/// Open MPI's launchers do; 0 only for 0 itself. A nonzero code whose low
/// bits are 0 (256, or a class a program added, from 0x4000) gives 1, so
/// a failure never looks like success.
pub fn abort_status(code: i32) -> i32 {
    match code & 0xff {
        0 if code != 0 => 1,
        s => s,
    }
}

pub use spawn::{adopt_orphans, run, JobOutcome, JobSpec, SegmentShape, StartError};

#[cfg(test)]
mod tests {
    #[test]
    fn an_abort_status_is_zero_only_for_code_zero() {
        let cases = [
            (0, 0),
            (7, 7),
            (255, 255),
            (256, 1),
            (0x4000, 1),
            (0x4001, 1),
            (-1, 255),
        ];
        for (code, status) in cases {
            assert_eq!(super::abort_status(code), status, "code {code}");
        }
    }
}
