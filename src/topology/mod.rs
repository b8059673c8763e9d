//! What the node looks like: packages, NUMA nodes, L3 domains, cores and
//! hardware threads, discovered through hwloc (the system library, via
//! the `hwlocality` crate).
//!
//! Layer L1 (imports `error`). This issue needs only the counts and the
//! cores' first hardware threads (for pinning benchmark ranks to two
//! different cores). Placement policies, binding, synthetic topologies and
//! memory placement come with the NUMA issue.
#![forbid(unsafe_code)]

pub mod machine;
pub mod placement;

pub use machine::{Machine, Pu, Source, TOPOLOGY_VAR};
pub use placement::{place, Distance, Level, Placement, Policy};

use crate::error::{Error, ErrorClass, Result};
use hwlocality::object::types::ObjectType;
use hwlocality::Topology;

/// Counts of the node's objects, and one hardware thread per core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Packages (sockets).
    pub packages: usize,
    /// NUMA nodes.
    pub numa_nodes: usize,
    /// L3 caches.
    pub l3_caches: usize,
    /// Cores.
    pub cores: usize,
    /// Hardware threads (PUs).
    pub pus: usize,
    /// OS index of the first hardware thread of each core, in hwloc's
    /// logical order: pinning rank i to `core_first_pu[i]` puts ranks on
    /// different cores.
    pub core_first_pu: Vec<usize>,
}

/// Discovers this machine's topology.
///
/// # Errors
/// `Other` when hwloc cannot build the topology.
pub fn discover() -> Result<Summary> {
    let t = Topology::new().map_err(|e| {
        Error::new(
            ErrorClass::Other,
            format!("hwloc topology discovery failed: {e}"),
        )
    })?;
    let count = |ty| t.objects_with_type(ty).count();
    let core_first_pu = t
        .objects_with_type(ObjectType::Core)
        .filter_map(|c| c.cpuset().and_then(|s| s.first_set()))
        .map(usize::from)
        .collect();
    Ok(Summary {
        packages: count(ObjectType::Package),
        numa_nodes: count(ObjectType::NUMANode),
        l3_caches: count(ObjectType::L3Cache),
        cores: count(ObjectType::Core),
        pus: count(ObjectType::PU),
        core_first_pu,
    })
}

/// Binds this process to the CPUs (OS indices) `cpus`.
///
/// # Errors
/// `Other` when hwloc cannot build the topology or the binding fails (a
/// CPU this machine does not have, or one outside what the process may
/// use).
pub fn bind_this_process(cpus: &[usize]) -> Result<()> {
    use hwlocality::cpu::binding::CpuBindingFlags;
    use hwlocality::cpu::cpuset::CpuSet;
    let t = Topology::new().map_err(|e| {
        Error::new(
            ErrorClass::Other,
            format!("hwloc topology discovery failed: {e}"),
        )
    })?;
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c);
    }
    t.bind_cpu(&set, CpuBindingFlags::PROCESS).map_err(|e| {
        Error::new(
            ErrorClass::Other,
            format!("cannot bind to CPUs {}: {e}", placement::cpu_list(cpus)),
        )
    })
}

/// The NUMA nodes (OS indices) the pages of `r` were last allocated on
/// (hwloc's area memlocation query).
///
/// # Errors
/// `Other` when hwloc cannot tell.
pub fn memory_nodes<T>(r: &T) -> Result<Vec<usize>> {
    use hwlocality::memory::binding::MemoryBindingFlags;
    use hwlocality::memory::nodeset::NodeSet;
    let t = Topology::new().map_err(|e| {
        Error::new(
            ErrorClass::Other,
            format!("hwloc topology discovery failed: {e}"),
        )
    })?;
    let set: NodeSet = t
        .area_memory_location(r, MemoryBindingFlags::empty())
        .map_err(|e| Error::new(ErrorClass::Other, format!("hwloc memlocation: {e}")))?;
    Ok(set.iter_set().map(usize::from).collect())
}

/// A level of the node's hierarchy that processes can share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Domain {
    /// A package (socket).
    Package,
    /// A NUMA node.
    Numa,
    /// An L3 cache.
    L3,
}

/// The logical index (hwloc's order) of the `domain` object that holds
/// every hardware thread this process is bound to; `None` when no one
/// object does (the binding spans several, or the process is not bound
/// on a machine with several) or the machine has no such object (e.g.
/// no L3 cache).
///
/// # Errors
/// `Other` when hwloc cannot build the topology or read the binding.
pub fn domain_of_this_process(domain: Domain) -> Result<Option<usize>> {
    use hwlocality::cpu::binding::CpuBindingFlags;
    let t = Topology::new().map_err(|e| {
        Error::new(
            ErrorClass::Other,
            format!("hwloc topology discovery failed: {e}"),
        )
    })?;
    let set = t.cpu_binding(CpuBindingFlags::PROCESS).map_err(|e| {
        Error::new(
            ErrorClass::Other,
            format!("hwloc could not read this process's CPU binding: {e}"),
        )
    })?;
    if set.first_set().is_none() {
        return Ok(None);
    }
    let ty = match domain {
        Domain::Package => ObjectType::Package,
        Domain::Numa => ObjectType::NUMANode,
        Domain::L3 => ObjectType::L3Cache,
    };
    let found = t
        .objects_with_type(ty)
        .find(|o| o.cpuset().is_some_and(|c| c.includes(&set)))
        .map(|o| o.logical_index());
    Ok(found)
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_sits_in_one_package_and_numa_node() {
        use super::{domain_of_this_process, Domain};
        assert!(domain_of_this_process(Domain::Package).unwrap().is_some());
        assert!(domain_of_this_process(Domain::Numa).unwrap().is_some());
    }

    #[test]
    fn this_machine_has_at_least_one_of_everything_but_l3() {
        let s = super::discover().unwrap();
        assert!(s.packages >= 1 && s.numa_nodes >= 1 && s.cores >= 1);
        assert!(s.pus >= s.cores);
        assert_eq!(s.core_first_pu.len(), s.cores);
    }
}
