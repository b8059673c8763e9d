//! The node as placement sees it: every hardware thread (PU) with the
//! core, L3, NUMA node and package that hold it, in hwloc's logical order.
//! Built from hwloc, for this machine, a synthetic description
//! (`pack:2 numa:2 l3:2 core:4 pu:2`) or an XML export; after that it is
//! plain data, so placement is a pure function of it.

use crate::error::{Error, ErrorClass, Result};
use hwlocality::object::types::ObjectType;
use hwlocality::Topology;
use std::path::{Path, PathBuf};

/// Where a topology comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// This machine, as hwloc discovers it.
    This,
    /// An hwloc synthetic description, e.g. `pack:2 numa:2 core:4 pu:2`.
    Synthetic(String),
    /// An hwloc XML export (`hwloc-ls --of xml`).
    Xml(PathBuf),
}

/// The variable that replaces this machine's topology:
/// a synthetic description, or the path of an XML file.
pub const TOPOLOGY_VAR: &str = "SHMPI_TOPOLOGY";

impl Source {
    /// `SHMPI_TOPOLOGY` if set (a path to an existing file or ending in
    /// `.xml` is XML, anything else synthetic), else this machine.
    pub fn from_env() -> Source {
        match std::env::var(TOPOLOGY_VAR) {
            Ok(v) if !v.trim().is_empty() => Source::parse(&v),
            _ => Source::This,
        }
    }

    /// A description as `--topology` and `SHMPI_TOPOLOGY` take it.
    pub fn parse(v: &str) -> Source {
        let v = v.trim();
        if v.ends_with(".xml") || Path::new(v).is_file() {
            Source::Xml(PathBuf::from(v))
        } else {
            Source::Synthetic(v.to_string())
        }
    }
}

/// One hardware thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pu {
    /// OS index (what `sched_setaffinity` takes).
    pub os: usize,
    /// Logical index of its core.
    pub core: usize,
    /// Logical index of its L3 cache, if any.
    pub l3: Option<usize>,
    /// Logical index of its NUMA node, if any.
    pub numa: Option<usize>,
    /// Logical index of its package (0 when hwloc shows none).
    pub package: usize,
}

/// The node: its hardware threads in logical order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// Every PU.
    pub pus: Vec<Pu>,
    /// hwloc's NUMA distance matrix (`[from][to]`, by logical index, as the
    /// firmware's SLIT gives it: 10 local, larger farther), where hwloc has
    /// one.
    pub numa_distances: Option<Vec<Vec<u64>>>,
    /// Where it came from (printed by `shmpi-topo`).
    pub source: Source,
}

fn hwloc_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(ErrorClass::Other, format!("{what}: {e}"))
}

impl Machine {
    /// Loads a topology.
    ///
    /// # Errors
    /// `Arg` for a synthetic description or XML file hwloc rejects, or
    /// whose object counts do not match the description (hwloc may fall
    /// back to this machine); `Other` when hwloc fails.
    pub fn load(source: &Source) -> Result<Machine> {
        let t = match source {
            Source::This => {
                Topology::new().map_err(|e| hwloc_err("hwloc topology discovery failed", e))?
            }
            Source::Synthetic(s) => Topology::builder()
                .from_synthetic(s)
                .map_err(|e| Error::new(ErrorClass::Arg, format!("synthetic topology {s:?}: {e}")))?
                .build()
                .map_err(|e| hwloc_err("hwloc could not build the synthetic topology", e))?,
            Source::Xml(p) => Topology::builder()
                .from_xml_file(p)
                .map_err(|e| {
                    Error::new(
                        ErrorClass::Arg,
                        format!("topology XML {}: {e}", p.display()),
                    )
                })?
                .build()
                .map_err(|e| hwloc_err("hwloc could not build the XML topology", e))?,
        };
        let m = Machine::from_hwloc(&t, source.clone())?;
        if let Source::Synthetic(s) = source {
            check_synthetic(s, &m)?;
        }
        Ok(m)
    }

    /// This machine, discovered once per process and kept.
    ///
    /// # Errors
    /// As [`load`](Self::load).
    pub fn this() -> Result<&'static Machine> {
        static THIS: std::sync::OnceLock<Result<Machine>> = std::sync::OnceLock::new();
        THIS.get_or_init(|| Machine::load(&Source::This))
            .as_ref()
            .map_err(Clone::clone)
    }

    fn from_hwloc(t: &Topology, source: Source) -> Result<Machine> {
        let mut pus = Vec::new();
        for pu in t.objects_with_type(ObjectType::PU) {
            let idx = |ty| pu.first_ancestor_with_type(ty).map(|o| o.logical_index());
            let os = pu
                .os_index()
                .ok_or_else(|| hwloc_err("hwloc topology", "a PU without an OS index"))?;
            pus.push(Pu {
                os,
                core: idx(ObjectType::Core).unwrap_or(pu.logical_index()),
                l3: idx(ObjectType::L3Cache),
                numa: numa_of(t, pu),
                package: idx(ObjectType::Package).unwrap_or(0),
            });
        }
        if pus.is_empty() {
            return Err(hwloc_err("hwloc topology", "no processing units"));
        }
        Ok(Machine {
            pus,
            numa_distances: numa_distances(t),
            source,
        })
    }

    /// Number of cores.
    pub fn cores(&self) -> usize {
        count(self.pus.iter().map(|p| Some(p.core)))
    }

    /// Number of NUMA nodes (1 when hwloc shows none).
    pub fn numa_nodes(&self) -> usize {
        count(self.pus.iter().map(|p| p.numa)).max(1)
    }

    /// Number of L3 caches (0 when there is none).
    pub fn l3s(&self) -> usize {
        count(self.pus.iter().map(|p| p.l3))
    }

    /// Number of packages.
    pub fn packages(&self) -> usize {
        count(self.pus.iter().map(|p| Some(p.package)))
    }

    /// A compact tree: one line per package, NUMA node, L3 and core.
    pub fn tree(&self) -> String {
        let mut out = format!(
            "machine: {} packages, {} NUMA nodes, {} L3, {} cores, {} PUs ({})\n",
            self.packages(),
            self.numa_nodes(),
            self.l3s(),
            self.cores(),
            self.pus.len(),
            match &self.source {
                Source::This => "this machine".to_string(),
                Source::Synthetic(s) => format!("synthetic {s:?}"),
                Source::Xml(p) => format!("XML {}", p.display()),
            }
        );
        let mut last = (usize::MAX, None, None, usize::MAX);
        for p in &self.pus {
            if p.package != last.0 {
                out += &format!("  package {}\n", p.package);
            }
            if p.package != last.0 || p.numa != last.1 {
                out += &format!(
                    "    numa {}\n",
                    p.numa.map_or("-".into(), |n| n.to_string())
                );
            }
            if let (true, Some(l3)) = (
                p.package != last.0 || p.numa != last.1 || p.l3 != last.2,
                p.l3,
            ) {
                out += &format!("      l3 {l3}\n");
            }
            if p.core != last.3 {
                let threads: Vec<String> = self
                    .pus
                    .iter()
                    .filter(|q| q.core == p.core)
                    .map(|q| q.os.to_string())
                    .collect();
                out += &format!("        core {}: pu {}\n", p.core, threads.join(","));
            }
            last = (p.package, p.numa, p.l3, p.core);
        }
        out
    }
}

/// The NUMA node of a PU: hwloc 2 attaches NUMA nodes as memory children
/// of an ancestor, so look for the ancestor whose nodeset has one node.
fn numa_of(t: &Topology, pu: &hwlocality::object::TopologyObject) -> Option<usize> {
    let cpu = pu.os_index()?;
    t.objects_with_type(ObjectType::NUMANode)
        .find(|n| n.cpuset().is_some_and(|c| c.is_set(cpu)))
        .map(|n| n.logical_index())
}

/// The first NUMA distance matrix hwloc has, by logical index.
fn numa_distances(t: &Topology) -> Option<Vec<Vec<u64>>> {
    let all = t.distances_with_type(None, ObjectType::NUMANode).ok()?;
    let d = all.first()?;
    let n = t.objects_with_type(ObjectType::NUMANode).count();
    let mut out = vec![vec![0u64; n]; n];
    for ((a, b), v) in d.object_distances() {
        let (a, b) = (a?.logical_index(), b?.logical_index());
        if a < n && b < n {
            out[a][b] = v;
        }
    }
    Some(out)
}

fn count(it: impl Iterator<Item = Option<usize>>) -> usize {
    let mut v: Vec<usize> = it.flatten().collect();
    v.sort_unstable();
    v.dedup();
    v.len()
}

/// The object counts a synthetic description promises must be there
/// (hwloc may fall back to the real machine or merge levels).
fn check_synthetic(desc: &str, m: &Machine) -> Result<()> {
    let mut total = 1usize;
    let mut want = Vec::new();
    for tok in desc.split_whitespace() {
        let Some((ty, n)) = tok.split_once(':') else {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("synthetic topology {desc:?}: {tok:?} is not type:count"),
            ));
        };
        let n: usize = n.parse().map_err(|_| {
            Error::new(
                ErrorClass::Arg,
                format!("synthetic topology {desc:?}: {tok:?} has no count"),
            )
        })?;
        total = total.saturating_mul(n);
        want.push((ty.to_ascii_lowercase(), total));
    }
    for (ty, n) in want {
        let got = match ty.as_str() {
            "pack" | "package" | "socket" => m.packages(),
            "numa" | "numanode" | "node" => m.numa_nodes(),
            "l3" | "l3cache" => m.l3s(),
            "core" => m.cores(),
            "pu" => m.pus.len(),
            _ => continue,
        };
        if got != n {
            return Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "synthetic topology {desc:?}: asked for {n} {ty} in all, hwloc built {got} \
                     (it may have fallen back to this machine)"
                ),
            ));
        }
    }
    Ok(())
}
