//! The job contract: the `SHMPI_*` variables the launcher sets for each
//! rank, and their parsing.

use crate::error::{Error, ErrorClass, Result};
use std::path::PathBuf;

/// Job id (hex).
pub const JOB_ID: &str = "SHMPI_JOB_ID";
/// This rank.
pub const RANK: &str = "SHMPI_RANK";
/// Ranks in the job.
pub const SIZE: &str = "SHMPI_SIZE";
/// Path of the job segment.
pub const SEGMENT: &str = "SHMPI_SEGMENT";
/// Ring capacity in bytes (the launcher decides; ranks must agree).
pub const RING_SIZE: &str = "SHMPI_RING_SIZE";
/// Directory for segments (default /dev/shm).
pub const SHM_DIR: &str = "SHMPI_SHM_DIR";
/// CPU this rank binds itself to at init (set by `--cpus`).
pub const CPU: &str = "SHMPI_CPU";
/// CPUs (a list with ranges, `0-1,8`) this rank binds itself to at init
/// (set by `shmpiexec --bind-to` / `--map-by` and the default policy).
pub const CPUSET: &str = "SHMPI_CPUSET";
/// How long a rank waits at the start barrier for the others, seconds.
pub const START_TIMEOUT: &str = "SHMPI_START_TIMEOUT";

/// This rank's application index in a multi-program job (`MPI_APPNUM`).
pub const APPNUM: &str = "SHMPI_APPNUM";
/// How many CPUs the launcher may run processes on (its affinity, which
/// cpuset cgroups narrow): `MPI_UNIVERSE_SIZE` for ranks that are bound
/// to fewer.
pub const UNIVERSE_SIZE: &str = "SHMPI_UNIVERSE_SIZE";
/// The launcher that started this rank (what `comm_spawn` runs).
pub const LAUNCHER: &str = "SHMPI_LAUNCHER";
/// A port of the parent job to connect to at init (`comm_spawn`'s
/// children; `comm_get_parent`).
pub const PARENT_PORT: &str = "SHMPI_PARENT_PORT";

/// The default directory for segments.
pub const DEFAULT_SHM_DIR: &str = "/dev/shm";

/// What a rank learns from its environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobContract {
    /// The job id.
    pub job_id: u64,
    /// This rank.
    pub rank: usize,
    /// Ranks in the job.
    pub size: usize,
    /// The segment file.
    pub segment: PathBuf,
    /// Ring capacity.
    pub ring_size: usize,
    /// CPU to bind to, if any.
    pub cpu: Option<usize>,
    /// CPUs to bind to, if any.
    pub cpuset: Option<Vec<usize>>,
}

fn var(name: &str) -> Result<String> {
    std::env::var(name).map_err(|_| {
        Error::new(
            ErrorClass::Other,
            format!("{name} is not set: the job contract from shmpiexec is incomplete"),
        )
    })
}

fn parse<T: TryFrom<u64>>(name: &str, v: &str, radix16: bool) -> Result<T> {
    let n = if radix16 {
        u64::from_str_radix(v, 16).ok()
    } else {
        v.parse::<u64>().ok()
    };
    n.and_then(|n| T::try_from(n).ok()).ok_or_else(|| {
        Error::new(
            ErrorClass::Other,
            format!("{name}={v:?} is not a valid number"),
        )
    })
}

impl JobContract {
    /// Reads the contract; `None` when this process was not started by the
    /// launcher (a singleton).
    ///
    /// # Errors
    /// `Other` when the variables are present but incomplete or malformed.
    pub fn from_env() -> Option<Result<JobContract>> {
        std::env::var_os(JOB_ID)?;
        Some(Self::read())
    }

    fn read() -> Result<JobContract> {
        let job_id = parse::<u64>(JOB_ID, &var(JOB_ID)?, true)?;
        let rank = parse::<usize>(RANK, &var(RANK)?, false)?;
        let size = parse::<usize>(SIZE, &var(SIZE)?, false)?;
        let ring_size = parse::<usize>(RING_SIZE, &var(RING_SIZE)?, false)?;
        let segment = PathBuf::from(var(SEGMENT)?);
        let cpu = match std::env::var(CPU) {
            Ok(v) => Some(parse::<usize>(CPU, &v, false)?),
            Err(_) => None,
        };
        let cpuset = match std::env::var(CPUSET) {
            Ok(v) => Some(parse_cpus(&v).ok_or_else(|| {
                Error::new(
                    ErrorClass::Other,
                    format!("{CPUSET}={v:?} is not a CPU list (like 0-1,8)"),
                )
            })?),
            Err(_) => None,
        };
        if rank >= size {
            return Err(Error::new(
                ErrorClass::Other,
                format!("{RANK}={rank} is not below {SIZE}={size}"),
            ));
        }
        Ok(JobContract {
            job_id,
            rank,
            size,
            segment,
            ring_size,
            cpu,
            cpuset,
        })
    }

    /// The variables that carry this contract, for the launcher.
    pub fn to_env(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![
            (JOB_ID, format!("{:x}", self.job_id)),
            (RANK, self.rank.to_string()),
            (SIZE, self.size.to_string()),
            (SEGMENT, self.segment.display().to_string()),
            (RING_SIZE, self.ring_size.to_string()),
        ];
        if let Some(c) = self.cpu {
            v.push((CPU, c.to_string()));
        }
        if let Some(s) = &self.cpuset {
            v.push((CPUSET, crate::topology::placement::cpu_list(s)));
        }
        v
    }
}

/// Parses a CPU list with ranges (`0-1,8`).
pub fn parse_cpus(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if a > b {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The start-barrier timeout (`SHMPI_START_TIMEOUT`, default 60 s).
pub fn start_timeout() -> std::time::Duration {
    let s = std::env::var(START_TIMEOUT)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(60);
    std::time::Duration::from_secs(s)
}

/// The segment directory (`SHMPI_SHM_DIR`, default /dev/shm).
pub fn shm_dir() -> PathBuf {
    std::env::var_os(SHM_DIR)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_SHM_DIR))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_round_trips_through_env_pairs() {
        let c = JobContract {
            job_id: 0xabc,
            rank: 2,
            size: 4,
            segment: PathBuf::from("/dev/shm/x"),
            ring_size: 65536,
            cpu: Some(1),
            cpuset: Some(vec![0, 1, 4]),
        };
        let pairs = c.to_env();
        assert!(pairs.contains(&(JOB_ID, "abc".to_string())));
        assert!(pairs.contains(&(CPU, "1".to_string())));
        assert!(pairs.contains(&(CPUSET, "0-1,4".to_string())));
        assert_eq!(parse_cpus("0-1,4"), Some(vec![0, 1, 4]));
        assert_eq!(parse_cpus("3-1"), None);
    }
}
