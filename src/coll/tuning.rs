//! Which algorithm each collective uses, and the `SHMPI_COLL_*` variables
//! that force one (`docs/tuning.md`). Read once per process.

use std::sync::OnceLock;

/// Algorithm choices; `Auto` picks by message size (and operation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    /// By size: the small-message algorithm below the threshold, the
    /// large-message one from it.
    Auto,
    /// Binomial tree (bcast, reduce).
    Binomial,
    /// Scatter, then ring allgather (bcast, van de Geijn).
    ScatterAllgather,
    /// Root talks to every rank in turn (reduce, gather-style).
    Linear,
    /// Recursive doubling with a fold for non-powers of two (allreduce,
    /// allgather).
    RecursiveDoubling,
    /// Ring: reduce-scatter then allgather (allreduce), or n-1 neighbour
    /// steps (allgather).
    Ring,
    /// Reduce to rank 0, then broadcast (allreduce).
    ReduceBcast,
    /// Gather to rank 0, then broadcast (allgather).
    GatherBcast,
    /// Pairwise exchange in n-1 steps (alltoall).
    Pairwise,
}

/// The process's choices.
#[derive(Clone, Copy, Debug)]
pub struct Tuning {
    /// `SHMPI_COLL_BCAST`: auto | binomial | scatter_allgather.
    pub bcast: Algo,
    /// `SHMPI_COLL_REDUCE`: auto | binomial | linear.
    pub reduce: Algo,
    /// `SHMPI_COLL_ALLREDUCE`: auto | recursive_doubling | ring | reduce_bcast.
    pub allreduce: Algo,
    /// `SHMPI_COLL_ALLGATHER`: auto | recursive_doubling | ring | gather_bcast.
    pub allgather: Algo,
    /// `SHMPI_COLL_ALLTOALL`: auto | pairwise | linear.
    pub alltoall: Algo,
    /// `SHMPI_COLL_LARGE`: bytes from which `Auto` takes the large-message
    /// algorithm (default 65536).
    pub large: usize,
    /// `SHMPI_COLL_SYNC`: bytes from which a bcast's or a reduce's send
    /// is synchronous where a blocking send of its size would go by
    /// rendezvous (`Coll::send_flow_t`; from `large` it is anyway); by
    /// default the CPU's row (`transport::cma::Defaults::coll_sync`: 32
    /// KiB on Intel, 64 KiB elsewhere), at most `large`.
    pub sync: usize,
    /// `SHMPI_COLL_SHM`: 1 lets barrier, bcast, reduce, allreduce and
    /// allgather go through the communicator's collective region, 0 sends
    /// messages always; unset (`None`), the region is used while every
    /// rank has a core of its own (oversubscribed, the message algorithms
    /// wait better: `docs/tuning.md`).
    pub shm: Option<bool>,
    /// `SHMPI_COLL_SHM_MAX`: the largest payload per member that goes
    /// through the region (default and maximum 256 bytes).
    pub shm_max: usize,
    /// `SHMPI_COLL_SHM_RANKS`: the largest communicator that uses the
    /// region (every member reads every member's flag; default 64).
    pub shm_ranks: usize,
    /// `SHMPI_COLL_HIER`: 1 runs barrier and commutative allreduce in two
    /// levels (inside each NUMA node, then among one leader per node), 0
    /// never; unset, when the ranks are bound over several NUMA nodes and
    /// `coll::model` says the hierarchy wins.
    pub hier: Option<bool>,
}

/// Default large-message threshold in bytes.
pub const DEFAULT_LARGE: usize = 64 << 10;

/// How the variables are looked up: the environment, or nothing (every
/// default).
type Get<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The value of `var` among `allowed` (unset: `Auto`).
///
/// # Errors
/// `Arg` naming the variable and the accepted values.
fn parse(get: Get, var: &str, allowed: &[(&str, Algo)]) -> crate::Result<Algo> {
    let Some(v) = get(var) else {
        return Ok(Algo::Auto);
    };
    match allowed.iter().find(|(n, _)| *n == v.trim()) {
        Some((_, a)) => Ok(*a),
        None => Err(bad(
            var,
            &v,
            &format!(
                "one of {}",
                allowed
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// The size in bytes (or count) `var` holds (unset: `default`).
///
/// # Errors
/// `Arg` naming the variable, as the transport's variables.
fn num(get: Get, var: &str, default: usize, what: &str) -> crate::Result<usize> {
    match get(var) {
        None => Ok(default),
        Some(v) => v.trim().parse().map_err(|_| bad(var, &v, what)),
    }
}

/// `0` or `1` in `var` (unset: `None`).
///
/// # Errors
/// `Arg` naming the variable.
fn switch(get: Get, var: &str) -> crate::Result<Option<bool>> {
    match get(var) {
        None => Ok(None),
        Some(v) => match v.trim() {
            "0" => Ok(Some(false)),
            "1" => Ok(Some(true)),
            _ => Err(bad(var, &v, "0 or 1")),
        },
    }
}

fn bad(var: &str, v: &str, what: &str) -> crate::Error {
    crate::Error::new(
        crate::error::ErrorClass::Arg,
        format!("{var}={v}: expected {what}"),
    )
}

/// Checks every `SHMPI_COLL_*` variable (at init, so that a bad value
/// fails the start with `MPI_ERR_ARG` naming it, as the transport's do).
///
/// # Errors
/// The first bad value.
pub fn check() -> crate::Result<()> {
    read(&env).map(|_| ())
}

fn env(var: &str) -> Option<String> {
    std::env::var(var).ok()
}

/// The choices the variables `get` finds make.
fn read(get: Get) -> crate::Result<Tuning> {
    use Algo::*;
    let large = num(get, "SHMPI_COLL_LARGE", DEFAULT_LARGE, "a size in bytes")?;
    let sync = num(
        get,
        "SHMPI_COLL_SYNC",
        crate::transport::cma::Defaults::of(crate::transport::cma::CpuRow::from_setting(
            get(crate::transport::cma::CPU_DEFAULTS_VAR).as_deref(),
        )?)
        .coll_sync
        .min(large),
        "a size in bytes",
    )?;
    Ok(Tuning {
        bcast: parse(
            get,
            "SHMPI_COLL_BCAST",
            &[
                ("auto", Auto),
                ("binomial", Binomial),
                ("scatter_allgather", ScatterAllgather),
            ],
        )?,
        reduce: parse(
            get,
            "SHMPI_COLL_REDUCE",
            &[("auto", Auto), ("binomial", Binomial), ("linear", Linear)],
        )?,
        allreduce: parse(
            get,
            "SHMPI_COLL_ALLREDUCE",
            &[
                ("auto", Auto),
                ("recursive_doubling", RecursiveDoubling),
                ("ring", Ring),
                ("reduce_bcast", ReduceBcast),
            ],
        )?,
        allgather: parse(
            get,
            "SHMPI_COLL_ALLGATHER",
            &[
                ("auto", Auto),
                ("recursive_doubling", RecursiveDoubling),
                ("ring", Ring),
                ("gather_bcast", GatherBcast),
            ],
        )?,
        alltoall: parse(
            get,
            "SHMPI_COLL_ALLTOALL",
            &[("auto", Auto), ("pairwise", Pairwise), ("linear", Linear)],
        )?,
        large,
        sync,
        shm: switch(get, "SHMPI_COLL_SHM")?,
        shm_max: num(
            get,
            "SHMPI_COLL_SHM_MAX",
            crate::transport::shmcoll::MAX_PAYLOAD,
            "a size in bytes",
        )?
        .min(crate::transport::shmcoll::MAX_PAYLOAD),
        shm_ranks: num(get, "SHMPI_COLL_SHM_RANKS", 64, "a number of ranks")?,
        hier: switch(get, "SHMPI_COLL_HIER")?,
    })
}

/// This process's tuning (the environment at first use; `init` has
/// checked it, [`check`]). A process that never ran `init` with a bad
/// value gets every default.
pub fn tuning() -> &'static Tuning {
    static T: OnceLock<Tuning> = OnceLock::new();
    T.get_or_init(|| {
        read(&env).unwrap_or_else(|_| read(&|_| None).expect("the defaults are valid"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_variables_give_the_defaults_and_a_bad_one_is_named() {
        let d = read(&|_| None).unwrap();
        assert_eq!(
            (d.bcast, d.large, d.shm, d.hier),
            (Algo::Auto, DEFAULT_LARGE, None, None)
        );
        assert!(d.sync <= d.large);
        let one = |var: &'static str, val: &'static str| {
            move |v: &str| (v == var).then(|| val.to_string())
        };
        let e = read(&one("SHMPI_COLL_ALLGATHER", "ring")).unwrap();
        assert_eq!(e.allgather, Algo::Ring);
        assert_eq!(read(&one("SHMPI_COLL_LARGE", "4096")).unwrap().sync, 4096);
        for (var, val, what) in [
            ("SHMPI_COLL_SYNC", "1x", "a size in bytes"),
            ("SHMPI_COLL_HIER", "on", "0 or 1"),
            ("SHMPI_COLL_REDUCE", "tree", "one of auto, binomial, linear"),
        ] {
            let err = read(&one(var, val)).unwrap_err();
            assert_eq!(err.class(), crate::error::ErrorClass::Arg);
            assert_eq!(err.detail(), format!("{var}={val}: expected {what}"));
        }
    }
}
