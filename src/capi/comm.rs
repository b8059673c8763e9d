//! Groups and communicators (MPI 4.1 §7): the C entry points over
//! `crate::group` and `crate::comm`.

use super::{
    array, array_mut, comm_obj, guard, h, lock, out, read, register_comm, state, to_handle,
    CommObj, COMM_NULL, COMM_SELF, COMM_WORLD, GROUP_EMPTY, GROUP_NULL, UNDEFINED,
};
use crate::comm::{Communicator, SplitType};
use crate::error::{Error, ErrorClass, Result};
use crate::group::{Comparison, Group};
use std::ffi::{c_int, c_void};
use std::sync::Arc;

const IDENT: c_int = 101;
const CONGRUENT: c_int = 102;
const SIMILAR: c_int = 103;
const UNEQUAL: c_int = 104;
const COMM_TYPE_SHARED: c_int = 1001;
/// `MPI_COMM_TYPE_HW_UNGUIDED`, `HW_GUIDED`, `RESOURCE_GUIDED` (MPI 5.0 ABI).
const COMM_TYPE_HW_UNGUIDED: c_int = 1002;
const COMM_TYPE_HW_GUIDED: c_int = 1003;
const COMM_TYPE_RESOURCE_GUIDED: c_int = 1004;

fn cmp_code(c: Comparison) -> c_int {
    match c {
        Comparison::Ident => IDENT,
        Comparison::Congruent => CONGRUENT,
        Comparison::Similar => SIMILAR,
        _ => UNEQUAL,
    }
}

// ---- groups --------------------------------------------------------------------

/// The group behind handle `g`.
pub(crate) fn group_obj(g: usize) -> Result<Arc<Group>> {
    if g == GROUP_EMPTY {
        return Ok(Arc::new(Group::empty()));
    }
    state().groups.get(g).cloned().ok_or_else(|| {
        Error::new(
            ErrorClass::Group,
            if g == GROUP_NULL {
                "MPI_GROUP_NULL is not a group".to_string()
            } else {
                format!("{g:#x} is not a valid group handle")
            },
        )
    })
}

pub(crate) fn new_group(g: Group, p: *mut *mut c_void) -> Result<()> {
    if p.is_null() {
        return Err(super::arg("newgroup"));
    }
    let handle = state().groups.insert(Arc::new(g));
    out(p, to_handle(handle), "newgroup")
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_size(g: *mut c_void, size: *mut c_int) -> c_int {
    guard("MPI_Group_size", COMM_NULL, || {
        out(size, group_obj(h(g))?.size() as c_int, "size")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_rank(g: *mut c_void, rank: *mut c_int) -> c_int {
    guard("MPI_Group_rank", COMM_NULL, || {
        let r = group_obj(h(g))?.rank().map_or(UNDEFINED, |r| r as c_int);
        out(rank, r, "rank")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_translate_ranks(
    g1: *mut c_void,
    n: c_int,
    ranks1: *const c_int,
    g2: *mut c_void,
    ranks2: *mut c_int,
) -> c_int {
    guard("MPI_Group_translate_ranks", COMM_NULL, || {
        let n = super::count(n, "n")?;
        let a = group_obj(h(g1))?;
        let b = group_obj(h(g2))?;
        let r = a.translate_ranks(array(ranks1, n, "ranks1")?, &b)?;
        array_mut(ranks2, n, "ranks2")?.copy_from_slice(&r);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_compare(
    g1: *mut c_void,
    g2: *mut c_void,
    result: *mut c_int,
) -> c_int {
    guard("MPI_Group_compare", COMM_NULL, || {
        let c = group_obj(h(g1))?.compare(&*group_obj(h(g2))?);
        out(result, cmp_code(c), "result")
    })
}

macro_rules! group_binop {
    ($name:ident, $call:literal, $m:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            g1: *mut c_void,
            g2: *mut c_void,
            newg: *mut *mut c_void,
        ) -> c_int {
            guard($call, COMM_NULL, || {
                let g = group_obj(h(g1))?.$m(&*group_obj(h(g2))?);
                new_group(g, newg)
            })
        }
    };
}

group_binop!(MPI_Group_union, "MPI_Group_union", union);
group_binop!(
    MPI_Group_intersection,
    "MPI_Group_intersection",
    intersection
);
group_binop!(MPI_Group_difference, "MPI_Group_difference", difference);

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_incl(
    g: *mut c_void,
    n: c_int,
    ranks: *const c_int,
    newg: *mut *mut c_void,
) -> c_int {
    guard("MPI_Group_incl", COMM_NULL, || {
        let n = super::count(n, "n")?;
        let g2 = group_obj(h(g))?.incl(array(ranks, n, "ranks")?)?;
        new_group(g2, newg)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_excl(
    g: *mut c_void,
    n: c_int,
    ranks: *const c_int,
    newg: *mut *mut c_void,
) -> c_int {
    guard("MPI_Group_excl", COMM_NULL, || {
        let n = super::count(n, "n")?;
        let g2 = group_obj(h(g))?.excl(array(ranks, n, "ranks")?)?;
        new_group(g2, newg)
    })
}

fn ranges(p: *const [c_int; 3], n: c_int) -> Result<Vec<(i32, i32, i32)>> {
    let n = super::count(n, "n")?;
    Ok(array(p, n, "ranges")?
        .iter()
        .map(|r| (r[0], r[1], r[2]))
        .collect())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_range_incl(
    g: *mut c_void,
    n: c_int,
    r: *const [c_int; 3],
    newg: *mut *mut c_void,
) -> c_int {
    guard("MPI_Group_range_incl", COMM_NULL, || {
        let g2 = group_obj(h(g))?.range_incl(&ranges(r, n)?)?;
        new_group(g2, newg)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_range_excl(
    g: *mut c_void,
    n: c_int,
    r: *const [c_int; 3],
    newg: *mut *mut c_void,
) -> c_int {
    guard("MPI_Group_range_excl", COMM_NULL, || {
        let g2 = group_obj(h(g))?.range_excl(&ranges(r, n)?)?;
        new_group(g2, newg)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_free(g: *mut *mut c_void) -> c_int {
    guard("MPI_Group_free", COMM_NULL, || {
        let gh = h(read(g, "group")?);
        if gh != GROUP_EMPTY {
            state().groups.release(gh).ok_or_else(|| {
                Error::new(ErrorClass::Group, format!("{gh:#x} is not a valid group"))
            })?;
        }
        out(g, to_handle(GROUP_NULL), "group")
    })
}

// ---- communicator access ---------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_size(comm: *mut c_void, size: *mut c_int) -> c_int {
    guard("MPI_Comm_size", h(comm), || {
        out(size, comm_obj(h(comm))?.comm.size(), "size")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_rank(comm: *mut c_void, rank: *mut c_int) -> c_int {
    guard("MPI_Comm_rank", h(comm), || {
        out(rank, comm_obj(h(comm))?.comm.rank(), "rank")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_group(comm: *mut c_void, g: *mut *mut c_void) -> c_int {
    guard("MPI_Comm_group", h(comm), || {
        new_group(comm_obj(h(comm))?.comm.group(), g)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_compare(
    c1: *mut c_void,
    c2: *mut c_void,
    result: *mut c_int,
) -> c_int {
    guard("MPI_Comm_compare", COMM_NULL, || {
        let a = comm_obj(h(c1))?;
        let b = comm_obj(h(c2))?;
        let c = if Arc::ptr_eq(&a, &b) {
            IDENT
        } else {
            match a.comm.compare(&b.comm) {
                // Two C handles are two communicators even if one Rust
                // object were behind both.
                Comparison::Ident => CONGRUENT,
                other => cmp_code(other),
            }
        };
        out(result, c, "result")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_test_inter(comm: *mut c_void, flag: *mut c_int) -> c_int {
    guard("MPI_Comm_test_inter", h(comm), || {
        out(flag, comm_obj(h(comm))?.comm.is_inter() as c_int, "flag")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_remote_size(comm: *mut c_void, size: *mut c_int) -> c_int {
    guard("MPI_Comm_remote_size", h(comm), || {
        out(size, comm_obj(h(comm))?.comm.remote_size()?, "size")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_remote_group(comm: *mut c_void, g: *mut *mut c_void) -> c_int {
    guard("MPI_Comm_remote_group", h(comm), || {
        new_group(comm_obj(h(comm))?.comm.remote_group()?, g)
    })
}

// ---- constructors ----------------------------------------------------------------

/// Registers `c` (or writes `MPI_COMM_NULL`) as the result of a
/// constructor on `parent`: the error handler is inherited, attributes
/// only when `attrs` says so (dup).
pub(crate) fn give(
    parent: &CommObj,
    c: Option<Communicator>,
    attrs: Vec<(c_int, usize)>,
    p: *mut *mut c_void,
) -> Result<()> {
    // Checked here, after the collective that made `c`, so a member
    // passing a null pointer fails alone instead of leaving the others
    // waiting in it; its communicator is dropped (which frees its
    // context id without a collective).
    if p.is_null() {
        return Err(super::arg("newcomm"));
    }
    let handle = match c {
        Some(c) => register_comm(c, parent.errh(), attrs),
        None => COMM_NULL,
    };
    out(p, to_handle(handle), "newcomm")
}

pub(crate) fn dup(comm: usize, newcomm: *mut *mut c_void, info: Option<usize>) -> Result<()> {
    let obj = comm_obj(comm)?;
    let c = obj.comm.dup()?;
    // After the collective (see `give`), before any copy callback runs.
    if newcomm.is_null() {
        return Err(super::arg("newcomm"));
    }
    // The info first: a bad one fails before any copy callback makes a
    // value that would then go without its delete callback.
    let hints = match info {
        Some(i) => super::env::info_pairs(i)?,
        None => lock(&obj.info).clone(),
    };
    let attrs = super::attr::copy_attrs(&obj)?;
    give(&obj, Some(c), attrs, newcomm)?;
    let nh = h(read(newcomm, "newcomm")?);
    if let Ok(n) = comm_obj(nh) {
        *lock(&n.info) = hints;
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_dup(comm: *mut c_void, newcomm: *mut *mut c_void) -> c_int {
    guard("MPI_Comm_dup", h(comm), || dup(h(comm), newcomm, None))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_dup_with_info(
    comm: *mut c_void,
    info: *mut c_void,
    newcomm: *mut *mut c_void,
) -> c_int {
    guard("MPI_Comm_dup_with_info", h(comm), || {
        dup(h(comm), newcomm, Some(h(info)))
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_idup(
    comm: *mut c_void,
    newcomm: *mut *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard("MPI_Comm_idup", h(comm), || {
        let obj = comm_obj(h(comm))?;
        if let Err(e) = idup_outputs(newcomm, request) {
            return Err(idup_refused(&obj, None, e));
        }
        super::nbc::idup(&obj, newcomm, request)
    })
}

/// `MPI_Comm_idup_with_info`: `MPI_Comm_idup` whose new communicator
/// takes the hints of `info` (read now) instead of the parent's.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_idup_with_info(
    comm: *mut c_void,
    info: *mut c_void,
    newcomm: *mut *mut c_void,
    request: *mut *mut c_void,
) -> c_int {
    guard("MPI_Comm_idup_with_info", h(comm), || {
        let obj = comm_obj(h(comm))?;
        let hints = match super::env::info_pairs(h(info)) {
            Ok(hints) => hints,
            Err(e) => return Err(idup_refused(&obj, None, e)),
        };
        if let Err(e) = idup_outputs(newcomm, request) {
            return Err(idup_refused(&obj, Some(hints), e));
        }
        super::nbc::idup_with(&obj, newcomm, request, Some(hints), false)
    })
}

/// Checks `MPI_Comm_idup`'s output pointers.
fn idup_outputs(newcomm: *mut *mut c_void, request: *mut *mut c_void) -> Result<()> {
    if newcomm.is_null() {
        return Err(super::arg("newcomm"));
    }
    if request.is_null() {
        return Err(super::arg("request"));
    }
    Ok(())
}

/// `MPI_Comm_idup` at a member whose arguments were refused with `e`: it
/// still takes part (the others wait for its claim or verdict), in the
/// background: its part of the agreement is started as a request of its
/// own that discards the communicator made and copies no attribute
/// (`nbc::idup_with`'s `discard`), freed at once so that later calls
/// (or `MPI_Finalize`) complete it; this call does not wait, as a
/// nonblocking one must not. Gives `e` back, so only this member fails.
fn idup_refused(obj: &Arc<CommObj>, hints: Option<super::env::Info>, e: Error) -> Error {
    let mut rq: *mut c_void = to_handle(super::REQUEST_NULL);
    if super::nbc::idup_with(obj, std::ptr::null_mut(), &mut rq, hints, true).is_ok() {
        // SAFETY: `rq` is a request handle this layer just made, in a
        // local the call may write.
        unsafe { super::p2p::MPI_Request_free(&mut rq) };
    }
    e
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create(
    comm: *mut c_void,
    g: *mut c_void,
    newcomm: *mut *mut c_void,
) -> c_int {
    guard("MPI_Comm_create", h(comm), || {
        let obj = comm_obj(h(comm))?;
        // A bad group takes part in the collective as a refusal, so the
        // other members fail too instead of waiting for this one.
        let grp = group_obj(h(g)).map_err(|e| obj.comm.refuse_create(e))?;
        let c = obj.comm.create(&grp)?;
        give(&obj, c, Vec::new(), newcomm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_group(
    comm: *mut c_void,
    g: *mut c_void,
    tag: c_int,
    newcomm: *mut *mut c_void,
) -> c_int {
    guard("MPI_Comm_create_group", h(comm), || {
        let obj = comm_obj(h(comm))?;
        let grp = group_obj(h(g))?;
        let c = obj.comm.create_group(&grp, tag)?;
        give(&obj, c, Vec::new(), newcomm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_split(
    comm: *mut c_void,
    color: c_int,
    key: c_int,
    newcomm: *mut *mut c_void,
) -> c_int {
    guard("MPI_Comm_split", h(comm), || {
        let obj = comm_obj(h(comm))?;
        let c = obj.comm.split(color, key)?;
        give(&obj, c, Vec::new(), newcomm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_split_type(
    comm: *mut c_void,
    split_type: c_int,
    key: c_int,
    info: *mut c_void,
    newcomm: *mut *mut c_void,
) -> c_int {
    guard("MPI_Comm_split_type", h(comm), || {
        let obj = comm_obj(h(comm))?;
        if obj.comm.is_inter() {
            // Every member fails here alike, before any collective.
            return Err(Error::new(
                ErrorClass::Comm,
                "MPI_Comm_split_type needs an intracommunicator",
            ));
        }
        // The info's `mpi_hw_resource_type` (HW_GUIDED, RESOURCE_GUIDED);
        // a bad info handle is reported after the split.
        let hint = super::env::info_pairs(h(info)).map(|pairs| {
            pairs
                .into_iter()
                .find(|(k, _)| k == "mpi_hw_resource_type")
                .map(|(_, v)| v)
        });
        let level = match &hint {
            Ok(Some(v)) => hw_code(v),
            _ => NO_LEVEL,
        };
        // Every member learns what the others asked, so all take the same
        // path (members may pass MPI_UNDEFINED beside the others' type).
        let n = obj.comm.size() as usize;
        let mut all = vec![0i32; 2 * n];
        obj.comm.allgather(&[split_type, level], &mut all)?;
        let asked: Vec<(i32, i32)> = all.chunks_exact(2).map(|w| (w[0], w[1])).collect();
        let kinds: Vec<i32> = asked
            .iter()
            .map(|a| a.0)
            .filter(|&t| t != UNDEFINED)
            .collect();
        let kind = kinds.first().copied().unwrap_or(UNDEFINED);
        let known = [
            COMM_TYPE_SHARED,
            COMM_TYPE_HW_UNGUIDED,
            COMM_TYPE_HW_GUIDED,
            COMM_TYPE_RESOURCE_GUIDED,
            UNDEFINED,
        ];
        if let Some(&(bad, _)) = asked.iter().find(|a| !known.contains(&a.0)) {
            return Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "split type {bad} is not one of MPI_COMM_TYPE_SHARED, HW_GUIDED, \
                     HW_UNGUIDED, RESOURCE_GUIDED or MPI_UNDEFINED"
                ),
            ));
        }
        if kinds.iter().any(|&t| t != kind) {
            return Err(Error::new(
                ErrorClass::Arg,
                "the members passed different split types to MPI_Comm_split_type",
            ));
        }
        let mine = split_type != UNDEFINED;
        let c = match kind {
            COMM_TYPE_SHARED if mine => obj.comm.split_type(SplitType::Shared, key)?,
            COMM_TYPE_HW_GUIDED | COMM_TYPE_RESOURCE_GUIDED => {
                // The members that take part must name one level (MPI
                // 4.1 §7.4.2): else, as for an unknown one, none gets a
                // communicator.
                let levels: Vec<i32> = asked
                    .iter()
                    .filter(|a| a.0 != UNDEFINED)
                    .map(|a| a.1)
                    .collect();
                let same = levels.windows(2).all(|w| w[0] == w[1]);
                match hw_level(level) {
                    Some(t) if mine && same => obj.comm.split_type(t, key)?,
                    _ => obj.comm.split(UNDEFINED, key)?,
                }
            }
            COMM_TYPE_HW_UNGUIDED => unguided(&obj.comm, key, mine)?,
            _ => obj.comm.split(UNDEFINED, key)?,
        };
        hint?;
        give(&obj, c, Vec::new(), newcomm)
    })
}

/// No hardware level named (`mpi_hw_resource_type` absent or unknown).
const NO_LEVEL: i32 = 0;

/// The code of a hardware level an `mpi_hw_resource_type` value names
/// (MPI's `mpi_shared_memory`, or the hwloc object names Open MPI takes),
/// as the members exchange it.
fn hw_code(v: &str) -> i32 {
    match v {
        "mpi_shared_memory" => 1,
        "Package" | "Socket" => 2,
        "NUMANode" | "NUMA" => 3,
        "L3Cache" | "L3" => 4,
        _ => NO_LEVEL,
    }
}

/// The level of a code of [`hw_code`].
fn hw_level(code: i32) -> Option<SplitType> {
    match code {
        1 => Some(SplitType::Shared),
        2 => Some(SplitType::Package),
        3 => Some(SplitType::Numa),
        4 => Some(SplitType::L3),
        _ => None,
    }
}

/// `MPI_COMM_TYPE_HW_UNGUIDED` (MPI 4.1 §7.4.2): the first hardware level
/// below the whole node (package, then NUMA node, then L3 cache) that
/// splits `c` into strict subsets for every member that takes part
/// (`mine`; the others passed `MPI_UNDEFINED` and get `None`); `None`
/// where no level does (or where this process's binding spans several of
/// it). Every member makes the same calls: a level's local failure is
/// reported after the loop.
fn unguided(
    c: &crate::comm::Communicator,
    key: c_int,
    mine: bool,
) -> Result<Option<crate::comm::Communicator>> {
    let n = c.size();
    let mut failed = None;
    for level in [SplitType::Package, SplitType::Numa, SplitType::L3] {
        let sub = if mine {
            c.split_type(level, key).unwrap_or_else(|e| {
                failed.get_or_insert(e);
                None
            })
        } else {
            c.split(UNDEFINED, key)?
        };
        // A taking part member's subset size (n where it has none: not a
        // strict subset); 0 for the others. The level serves if every
        // size is below n.
        let size = match (&sub, mine) {
            (_, false) => 0,
            (Some(s), true) => s.size(),
            (None, true) => n,
        };
        let mut largest = 0;
        c.allreduce(
            &[size],
            std::slice::from_mut(&mut largest),
            &crate::coll::Op::Max,
        )?;
        if largest < n {
            return match failed {
                Some(e) => Err(e),
                None => Ok(sub),
            };
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(None),
    }
}

fn free_handle(p: *mut *mut c_void, call: &str) -> Result<(Arc<CommObj>, Result<()>)> {
    let ch = h(read(p, "comm")?);
    if ch == COMM_WORLD || ch == COMM_SELF {
        return Err(Error::new(
            ErrorClass::Comm,
            format!(
                "{call} is not allowed on {}",
                if ch == COMM_WORLD {
                    "MPI_COMM_WORLD"
                } else {
                    "MPI_COMM_SELF"
                }
            ),
        ));
    }
    let obj = comm_obj(ch)?;
    // Freed even when a delete callback failed (the second result, then
    // the call's error, after it has done its work): the attributes are
    // gone, each through its callback.
    let deleted = super::attr::delete_all_attrs(&obj);
    state().comms.release(ch);
    Ok((obj.arc(), deleted))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut *mut c_void) -> c_int {
    let ch = if comm.is_null() {
        COMM_NULL
    } else {
        h(unsafe_read(comm))
    };
    guard("MPI_Comm_free", ch, || {
        // Requests in flight hold their own reference; the communicator
        // goes when the last one completes (MPI 4.1 §7.4.3).
        let (_, deleted) = free_handle(comm, "MPI_Comm_free")?;
        out(comm, to_handle(COMM_NULL), "comm")?;
        deleted
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_disconnect(comm: *mut *mut c_void) -> c_int {
    let ch = if comm.is_null() {
        COMM_NULL
    } else {
        h(unsafe_read(comm))
    };
    guard("MPI_Comm_disconnect", ch, || {
        let (obj, deleted) = free_handle(comm, "MPI_Comm_disconnect")?;
        obj.comm.clone().disconnect()?;
        out(comm, to_handle(COMM_NULL), "comm")?;
        deleted
    })
}

fn unsafe_read(p: *mut *mut c_void) -> *mut c_void {
    read(p, "comm").unwrap_or(std::ptr::null_mut())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_create(
    local: *mut c_void,
    local_leader: c_int,
    peer: *mut c_void,
    remote_leader: c_int,
    tag: c_int,
    newcomm: *mut *mut c_void,
) -> c_int {
    guard("MPI_Intercomm_create", h(local), || {
        let obj = comm_obj(h(local))?;
        // The peer communicator matters only at the local leader.
        let peer_obj = if obj.comm.rank() == local_leader {
            // A bad peer at the leader is its group's error too: they
            // learn it from the leader instead of waiting for its answer.
            comm_obj(h(peer)).map_err(|e| obj.comm.intercomm_refuse(local_leader, e))?
        } else {
            comm_obj(h(peer)).unwrap_or_else(|_| obj.clone())
        };
        let c = obj
            .comm
            .intercomm_create(local_leader, &peer_obj.comm, remote_leader, tag)?;
        give(&obj, Some(c), Vec::new(), newcomm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_merge(
    inter: *mut c_void,
    high: c_int,
    newcomm: *mut *mut c_void,
) -> c_int {
    guard("MPI_Intercomm_merge", h(inter), || {
        let obj = comm_obj(h(inter))?;
        let c = obj.comm.intercomm_merge(high != 0)?;
        give(&obj, Some(c), Vec::new(), newcomm)
    })
}
