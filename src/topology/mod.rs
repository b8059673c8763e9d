//! What the node looks like: packages, NUMA nodes, L3 domains, cores and
//! hardware threads, discovered through hwloc (the system library, via
//! the `hwlocality` crate).
//!
//! Layer L1 (imports `error`). This issue needs only the counts and the
//! cores' first hardware threads (for pinning benchmark ranks to two
//! different cores). Placement policies, binding, synthetic topologies and
//! memory placement come with the NUMA issue.
#![forbid(unsafe_code)]

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

#[cfg(test)]
mod tests {
    #[test]
    fn this_machine_has_at_least_one_of_everything_but_l3() {
        let s = super::discover().unwrap();
        assert!(s.packages >= 1 && s.numa_nodes >= 1 && s.cores >= 1);
        assert!(s.pus >= s.cores);
        assert_eq!(s.core_first_pu.len(), s.cores);
    }
}
