//! Placement: which CPUs each rank of a job may run on, as a pure
//! function of (machine, ranks, policy), with the mpiexec options users
//! know (`--map-by`, `--bind-to`, `--cpu-list`).
//!
//! Mapping chooses a starting PU per rank: `--map-by core` (and
//! `hwthread`) walks cores (PUs) in logical order; `--map-by
//! l3|numa|package` deals ranks round-robin over the objects of that level
//! and fills each by core (rank 0 to the first core of object 0, rank 1 to
//! the first core of object 1, ..., then the second cores). More ranks than
//! places wrap around. Binding widens the PU to the object of the binding
//! level that holds it: its core, itself, its L3, NUMA node or package, or
//! the whole machine for `none`. The defaults are Open MPI's: map by core,
//! bind to core while the ranks fit the cores, bind to nothing when they
//! do not (oversubscribed; shmpiexec says so once).

use super::machine::{Machine, Pu};
use crate::error::{Error, ErrorClass, Result};

/// A level of the hierarchy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// A hardware thread.
    HwThread,
    /// A core.
    Core,
    /// An L3 cache.
    L3,
    /// A NUMA node.
    Numa,
    /// A package.
    Package,
}

impl Level {
    /// Parses `hwthread|core|l3|numa|package`.
    ///
    /// # Errors
    /// `Arg` for anything else.
    pub fn parse(s: &str) -> Result<Level> {
        Ok(match s {
            "hwthread" | "pu" => Level::HwThread,
            "core" => Level::Core,
            "l3" | "l3cache" => Level::L3,
            "numa" => Level::Numa,
            "package" | "socket" => Level::Package,
            _ => {
                return Err(Error::new(
                    ErrorClass::Arg,
                    format!("{s:?} is not one of hwthread, core, l3, numa, package"),
                ))
            }
        })
    }

    fn of(self, p: &Pu) -> Option<usize> {
        match self {
            Level::HwThread => Some(p.os),
            Level::Core => Some(p.core),
            Level::L3 => p.l3,
            Level::Numa => Some(p.numa.unwrap_or(0)),
            Level::Package => Some(p.package),
        }
    }
}

/// A placement policy.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Policy {
    /// `--map-by` (default core).
    pub map: Option<Level>,
    /// `--bind-to`: `Some(None)` is `none`; `None` the default.
    pub bind: Option<Option<Level>>,
    /// `--cpu-list`: rank i is bound to `cpus[i % len]` alone.
    pub cpus: Vec<usize>,
}

/// Where one rank goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// OS indices of the PUs it may run on, ascending.
    pub cpus: Vec<usize>,
    /// The NUMA node its memory should come from (that of its first PU).
    pub numa: Option<usize>,
    /// The PU mapping chose for it.
    pub pu: usize,
}

/// The placement of `n` ranks, and whether the job is oversubscribed
/// (more ranks than cores; the default binding then binds nothing).
///
/// # Errors
/// `Arg` for a `--cpu-list` CPU the machine does not have, or mapping by
/// L3 on a machine without one.
pub fn place(m: &Machine, n: usize, policy: &Policy) -> Result<(Vec<Placement>, bool)> {
    let over = n > m.cores();
    if !policy.cpus.is_empty() {
        let mut out = Vec::with_capacity(n);
        for r in 0..n {
            let cpu = policy.cpus[r % policy.cpus.len()];
            let pu = m.pus.iter().find(|p| p.os == cpu).ok_or_else(|| {
                Error::new(
                    ErrorClass::Arg,
                    format!("--cpu-list names CPU {cpu}, which this topology does not have"),
                )
            })?;
            out.push(Placement {
                cpus: vec![cpu],
                numa: pu.numa,
                pu: cpu,
            });
        }
        return Ok((out, over));
    }
    let map = policy.map.unwrap_or(Level::Core);
    let bind = match policy.bind {
        Some(b) => b,
        None if over => None,
        None => Some(Level::Core),
    };
    if (map == Level::L3 || bind == Some(Level::L3)) && m.l3s() == 0 {
        return Err(Error::new(
            ErrorClass::Arg,
            "this topology has no L3 cache to map or bind by",
        ));
    }
    // The first PU of each core, in logical order.
    let mut core_pus: Vec<&Pu> = Vec::new();
    for p in &m.pus {
        if core_pus.last().is_none_or(|q| q.core != p.core) {
            core_pus.push(p);
        }
    }
    let slots: Vec<&Pu> = match map {
        Level::HwThread => m.pus.iter().collect(),
        Level::Core => core_pus.clone(),
        level => {
            // Round-robin over the objects of `level`, by core within each.
            let mut objs: Vec<usize> = core_pus.iter().filter_map(|p| level.of(p)).collect();
            objs.dedup();
            objs.sort_unstable();
            objs.dedup();
            let per: Vec<Vec<&Pu>> = objs
                .iter()
                .map(|&o| {
                    core_pus
                        .iter()
                        .copied()
                        .filter(|p| level.of(p) == Some(o))
                        .collect()
                })
                .collect();
            let depth = per.iter().map(Vec::len).max().unwrap_or(0);
            let mut v = Vec::new();
            for k in 0..depth {
                for cores in &per {
                    if let Some(p) = cores.get(k) {
                        v.push(*p);
                    }
                }
            }
            v
        }
    };
    let out = (0..n)
        .map(|r| {
            let pu = slots[r % slots.len()];
            let mut cpus: Vec<usize> = match bind {
                None => m.pus.iter().map(|p| p.os).collect(),
                Some(level) => m
                    .pus
                    .iter()
                    .filter(|p| level.of(p) == level.of(pu))
                    .map(|p| p.os)
                    .collect(),
            };
            cpus.sort_unstable();
            Placement {
                cpus,
                numa: pu.numa,
                pu: pu.os,
            }
        })
        .collect();
    Ok((out, over))
}

/// How close two ranks' first PUs are: the distance class the transport
/// may choose a copy routine by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Distance {
    /// The same PU.
    SamePu,
    /// The same core (hardware threads of it).
    SameCore,
    /// The same L3 cache.
    SameL3,
    /// The same NUMA node.
    SameNuma,
    /// The same package, another NUMA node.
    SamePackage,
    /// Another package.
    Remote,
}

impl Distance {
    /// A short label for tables.
    pub fn label(self) -> &'static str {
        match self {
            Distance::SamePu => "pu",
            Distance::SameCore => "core",
            Distance::SameL3 => "l3",
            Distance::SameNuma => "numa",
            Distance::SamePackage => "pkg",
            Distance::Remote => "far",
        }
    }
}

/// The distance class between the PUs with OS indices `a` and `b`.
pub fn distance(m: &Machine, a: usize, b: usize) -> Distance {
    let pa = m.pus.iter().find(|p| p.os == a);
    let pb = m.pus.iter().find(|p| p.os == b);
    let (Some(pa), Some(pb)) = (pa, pb) else {
        return Distance::Remote;
    };
    if pa.os == pb.os {
        Distance::SamePu
    } else if pa.core == pb.core {
        Distance::SameCore
    } else if pa.l3.is_some() && pa.l3 == pb.l3 {
        Distance::SameL3
    } else if pa.numa == pb.numa {
        Distance::SameNuma
    } else if pa.package == pb.package {
        Distance::SamePackage
    } else {
        Distance::Remote
    }
}

/// A cpuset as a list with ranges (`0-3,8,10-11`).
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if j == i {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// A cpuset as hwloc prints one (`hwloc-bind --get`): 32-bit words in
/// hex, most significant first, separated by commas (`0x00000003`,
/// `0x00000001,0x00000000`).
pub fn hwloc_mask(cpus: &[usize]) -> String {
    let top = cpus.iter().copied().max().unwrap_or(0) / 32;
    (0..=top)
        .rev()
        .map(|w| {
            let bits = cpus
                .iter()
                .filter(|&&c| c / 32 == w)
                .fold(0u32, |acc, &c| acc | (1 << (c % 32)));
            format!("0x{bits:08x}")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `--report-bindings` lines: per rank, its cpuset as a mask over the
/// machine's cores (`B` bound PU, `.` not), cores separated by `/` and
/// packages by `|`, as Open MPI prints them.
pub fn report(m: &Machine, places: &[Placement]) -> Vec<String> {
    places
        .iter()
        .enumerate()
        .map(|(r, p)| {
            let mut mask = String::from("[");
            let mut last: Option<&Pu> = None;
            for pu in &m.pus {
                if let Some(l) = last {
                    if l.package != pu.package {
                        mask.push_str("]|[");
                    } else if l.core != pu.core {
                        mask.push('/');
                    }
                }
                mask.push(if p.cpus.contains(&pu.os) { 'B' } else { '.' });
                last = Some(pu);
            }
            mask.push(']');
            format!(
                "rank {r} bound to cpus {} (numa {}, cpuset {}): {mask}",
                cpu_list(&p.cpus),
                p.numa.map_or("-".into(), |n| n.to_string()),
                hwloc_mask(&p.cpus)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::machine::Source;
    use super::*;

    fn syn(s: &str) -> Machine {
        Machine::load(&Source::Synthetic(s.into())).unwrap()
    }

    fn cpus(p: &[Placement]) -> Vec<Vec<usize>> {
        p.iter().map(|x| x.cpus.clone()).collect()
    }

    fn pol(map: Option<Level>, bind: Option<Option<Level>>) -> Policy {
        Policy {
            map,
            bind,
            cpus: vec![],
        }
    }

    #[test]
    fn synthetic_descriptions_load_with_their_counts_and_bad_ones_are_errors() {
        let m = syn("pack:2 numa:2 l3:2 core:4 pu:2");
        assert_eq!(
            (
                m.packages(),
                m.numa_nodes(),
                m.l3s(),
                m.cores(),
                m.pus.len()
            ),
            (2, 4, 8, 32, 64)
        );
        for bad in ["bogus:2", "pack:x", "core"] {
            let e = Machine::load(&Source::Synthetic(bad.into())).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Arg, "{bad}: {e}");
        }
    }

    #[test]
    fn one_core_two_threads() {
        let m = syn("core:1 pu:2");
        let (p, over) = place(&m, 1, &Policy::default()).unwrap();
        assert!(!over);
        assert_eq!(cpus(&p), [vec![0, 1]]);
        let (p, over) = place(&m, 2, &Policy::default()).unwrap();
        assert!(over, "two ranks on one core");
        assert_eq!(
            cpus(&p),
            [vec![0, 1], vec![0, 1]],
            "oversubscribed: bound to nothing"
        );
        let (p, _) = place(
            &m,
            2,
            &pol(Some(Level::HwThread), Some(Some(Level::HwThread))),
        )
        .unwrap();
        assert_eq!(cpus(&p), [vec![0], vec![1]]);
    }

    #[test]
    fn two_packages_two_numa_eight_cores_two_threads() {
        let m = syn("pack:2 numa:2 core:8 pu:2");
        assert_eq!(m.cores(), 32);
        // Default: map and bind by core, in order.
        let (p, _) = place(&m, 3, &Policy::default()).unwrap();
        assert_eq!(cpus(&p), [vec![0, 1], vec![2, 3], vec![4, 5]]);
        // Map by NUMA: round-robin over the 4 nodes, then the next cores.
        let (p, _) = place(&m, 6, &pol(Some(Level::Numa), None)).unwrap();
        assert_eq!(
            cpus(&p),
            [
                vec![0, 1],
                vec![16, 17],
                vec![32, 33],
                vec![48, 49],
                vec![2, 3],
                vec![18, 19]
            ]
        );
        assert_eq!(
            p.iter().map(|x| x.numa).collect::<Vec<_>>(),
            [Some(0), Some(1), Some(2), Some(3), Some(0), Some(1)]
        );
        // Map by package, bind to the NUMA node.
        let (p, _) = place(&m, 2, &pol(Some(Level::Package), Some(Some(Level::Numa)))).unwrap();
        assert_eq!(cpus(&p), [(0..16).collect::<Vec<_>>(), (32..48).collect()]);
        // Bind to package.
        let (p, _) = place(&m, 1, &pol(None, Some(Some(Level::Package)))).unwrap();
        assert_eq!(cpus(&p), [(0..32).collect::<Vec<_>>()]);
        // Above the core count: wraps, binds to nothing by default.
        let (p, over) = place(&m, 33, &Policy::default()).unwrap();
        assert!(over);
        assert_eq!(p[32].cpus.len(), 64);
        assert_eq!(p[32].pu, 0);
        // ... but an explicit binding still holds.
        let (p, _) = place(&m, 33, &pol(None, Some(Some(Level::Core)))).unwrap();
        assert_eq!(p[32].cpus, [0, 1]);
    }

    #[test]
    fn four_numa_nodes_of_sixteen_cores() {
        let m = syn("numa:4 core:16 pu:1");
        let (p, _) = place(&m, 4, &pol(Some(Level::Numa), Some(Some(Level::Core)))).unwrap();
        assert_eq!(cpus(&p), [vec![0], vec![16], vec![32], vec![48]]);
        let (p, _) = place(&m, 64, &Policy::default()).unwrap();
        assert_eq!(p[63].cpus, [63]);
        let (p, _) = place(&m, 2, &pol(Some(Level::Core), Some(Some(Level::Numa)))).unwrap();
        assert_eq!(cpus(&p), [(0..16).collect::<Vec<_>>(), (0..16).collect()]);
        assert_eq!(distance(&m, 0, 1), Distance::SameNuma);
        assert_eq!(distance(&m, 0, 16), Distance::SamePackage);
    }

    #[test]
    fn l3_domains_and_distance_classes() {
        let m = syn("pack:2 l3:2 core:2 pu:2");
        let (p, _) = place(&m, 4, &pol(Some(Level::L3), Some(Some(Level::L3)))).unwrap();
        assert_eq!(
            cpus(&p),
            [
                vec![0, 1, 2, 3],
                vec![4, 5, 6, 7],
                vec![8, 9, 10, 11],
                vec![12, 13, 14, 15]
            ]
        );
        assert_eq!(distance(&m, 0, 1), Distance::SameCore);
        assert_eq!(distance(&m, 0, 2), Distance::SameL3);
        assert_eq!(distance(&m, 0, 4), Distance::SameNuma);
        // No NUMA level: hwloc puts one node over the whole machine.
        assert_eq!(distance(&m, 0, 8), Distance::SameNuma);
        let per_pack = syn("pack:2 numa:1 l3:2 core:2 pu:2");
        assert_eq!(distance(&per_pack, 0, 8), Distance::Remote);
        assert_eq!(distance(&per_pack, 0, 4), Distance::SameNuma);
        let no_l3 = syn("core:2 pu:1");
        assert_eq!(
            place(&no_l3, 1, &pol(Some(Level::L3), None))
                .unwrap_err()
                .class(),
            ErrorClass::Arg
        );
    }

    #[test]
    fn cpu_lists_bind_each_rank_to_one_cpu_and_unknown_cpus_are_errors() {
        let m = syn("core:4 pu:2");
        let p = Policy {
            cpus: vec![6, 2],
            ..Policy::default()
        };
        let (pl, _) = place(&m, 3, &p).unwrap();
        assert_eq!(cpus(&pl), [vec![6], vec![2], vec![6]]);
        let bad = Policy {
            cpus: vec![99],
            ..Policy::default()
        };
        assert_eq!(place(&m, 1, &bad).unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
    }

    /// Every topology of these tests, every map and bind level, and N
    /// below, at and above the core count: the cpusets against an
    /// independent statement of the rules (the mapped PU is the k-th slot
    /// of the order "j-th core of each object, objects in order, for j =
    /// 0, 1, ..."; the cpuset is every PU sharing the bind-level object with
    /// it, or all PUs unbound).
    #[test]
    fn every_policy_on_every_topology_follows_the_rules() {
        let xml = |f: &str| format!("{}/tests/data/{f}", env!("CARGO_MANIFEST_DIR"));
        let machines = [
            syn("core:1 pu:2"),
            syn("pack:2 numa:2 core:8 pu:2"),
            syn("numa:4 core:16 pu:1"),
            syn("pack:2 l3:2 core:2 pu:2"),
            Machine::load(&Source::Xml(xml("asymmetric-2pack-3core.xml").into())).unwrap(),
            Machine::load(&Source::Xml(xml("2pack-2numa-4core.xml").into())).unwrap(),
        ];
        let levels = [
            Level::HwThread,
            Level::Core,
            Level::L3,
            Level::Numa,
            Level::Package,
        ];
        for m in &machines {
            let cores = m.cores();
            for &map in &levels {
                for bind in std::iter::once(None).chain(levels.iter().copied().map(Some)) {
                    for n in [1, cores, cores + 1] {
                        let policy = pol(Some(map), Some(bind));
                        let r = place(m, n, &policy);
                        if m.l3s() == 0 && (map == Level::L3 || bind == Some(Level::L3)) {
                            assert!(r.is_err());
                            continue;
                        }
                        let (p, over) = r.unwrap();
                        assert_eq!(over, n > cores);
                        let order = reference_order(m, map);
                        for (k, pl) in p.iter().enumerate() {
                            let want_pu = order[k % order.len()];
                            assert_eq!(pl.pu, want_pu, "{:?} map {map:?} rank {k}", m.source);
                            let pu = m.pus.iter().find(|q| q.os == want_pu).unwrap();
                            let want: Vec<usize> = match bind {
                                None => m.pus.iter().map(|q| q.os).collect(),
                                Some(b) => m
                                    .pus
                                    .iter()
                                    .filter(|q| b.of(q) == b.of(pu))
                                    .map(|q| q.os)
                                    .collect(),
                            };
                            assert_eq!(
                                pl.cpus, want,
                                "{:?} map {map:?} bind {bind:?} rank {k}",
                                m.source
                            );
                            assert_eq!(pl.numa, pu.numa);
                        }
                    }
                }
            }
        }
    }

    /// The mapping order, stated independently of `place`.
    fn reference_order(m: &Machine, map: Level) -> Vec<usize> {
        match map {
            Level::HwThread => m.pus.iter().map(|p| p.os).collect(),
            _ => {
                // First PU of every core, with its object at the map level.
                let mut firsts: Vec<(usize, usize)> = Vec::new(); // (object, os)
                let mut seen = std::collections::BTreeSet::new();
                for p in &m.pus {
                    if seen.insert(p.core) {
                        let obj = if map == Level::Core {
                            p.core
                        } else {
                            map.of(p).unwrap()
                        };
                        firsts.push((obj, p.os));
                    }
                }
                if map == Level::Core {
                    return firsts.iter().map(|&(_, os)| os).collect();
                }
                // j-th core of each object, objects ascending, j = 0, 1, ...
                let mut objs: Vec<usize> = firsts.iter().map(|&(o, _)| o).collect();
                objs.sort_unstable();
                objs.dedup();
                let mut out = Vec::new();
                for j in 0.. {
                    let before = out.len();
                    for &o in &objs {
                        if let Some(&(_, os)) = firsts.iter().filter(|&&(x, _)| x == o).nth(j) {
                            out.push(os);
                        }
                    }
                    if out.len() == before {
                        break;
                    }
                }
                out
            }
        }
    }

    #[test]
    fn an_asymmetric_topology_deals_ranks_where_there_are_cores() {
        // Package 0 has two cores, package 1 one (tests/data, edited from
        // an hwloc export).
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/asymmetric-2pack-3core.xml"
        );
        let m = Machine::load(&Source::Xml(path.into())).unwrap();
        assert_eq!((m.packages(), m.cores(), m.pus.len()), (2, 3, 3));
        let (p, over) = place(&m, 3, &pol(Some(Level::Package), None)).unwrap();
        assert!(!over);
        assert_eq!(cpus(&p), [vec![0], vec![2], vec![1]]);
        let (p, over) = place(
            &m,
            4,
            &pol(Some(Level::Package), Some(Some(Level::Package))),
        )
        .unwrap();
        assert!(over);
        assert_eq!(cpus(&p), [vec![0, 1], vec![2], vec![0, 1], vec![0, 1]]);
        assert_eq!(distance(&m, 0, 1), Distance::SameNuma);
        assert_eq!(
            distance(&m, 0, 2),
            Distance::SameNuma,
            "one NUMA node over both packages"
        );
    }

    #[test]
    fn an_xml_topology_loads_and_places() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/2pack-2numa-4core.xml"
        );
        let m = Machine::load(&Source::Xml(path.into())).unwrap();
        assert_eq!((m.packages(), m.numa_nodes(), m.cores()), (2, 4, 16));
        // The file carries a SLIT-like distance matrix; a synthetic
        // topology has none.
        let d = m.numa_distances.as_ref().expect("distances in the XML");
        assert_eq!(d[0], [10, 12, 20, 22]);
        assert_eq!(d[3][2], 12);
        assert_eq!(syn("numa:2 core:1 pu:1").numa_distances, None);
        let (p, _) = place(&m, 4, &pol(Some(Level::Numa), None)).unwrap();
        let numas: Vec<_> = p.iter().map(|x| x.numa).collect();
        assert_eq!(numas, [Some(0), Some(1), Some(2), Some(3)]);
        let r = report(&m, &p[..1]);
        assert_eq!(
            r[0],
            "rank 0 bound to cpus 0-1 (numa 0, cpuset 0x00000003): \
             [BB/../../../../../../..]|[../../../../../../../..]"
        );
        assert_eq!(hwloc_mask(&[0, 33]), "0x00000002,0x00000001");
    }
}
