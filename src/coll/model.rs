//! A cost model of small collectives over a placement: when does a
//! hierarchical algorithm (inside each NUMA node first, then one leader
//! per node) beat the flat one?
//!
//! The model counts rounds of a dissemination barrier / recursive-doubling
//! allreduce. A round costs the largest one-way latency among the pairs
//! that talk in it, by their distance class; the hierarchical algorithm is
//! the flat one inside every node (in parallel: the slowest node counts),
//! the flat one among the leaders, and a release inside every node (one
//! flag round: the leader posts, the node's members see it). Latencies are parameters: the defaults are rough
//! cache-line transfer times (same L3 40 ns, same NUMA node 80 ns, other
//! node of the package 140 ns, other package 220 ns), to be replaced by
//! measurements on a real multi-node machine.

use crate::topology::placement::{distance, Distance, Placement};
use crate::topology::Machine;

/// One-way latency per distance class, in nanoseconds.
#[derive(Clone, Copy, Debug)]
pub struct Latencies {
    /// Same core (hardware threads) or the same L3.
    pub l3: f64,
    /// Same NUMA node, another L3.
    pub numa: f64,
    /// Same package, another NUMA node.
    pub package: f64,
    /// Another package.
    pub remote: f64,
}

impl Default for Latencies {
    fn default() -> Latencies {
        Latencies {
            l3: 40.0,
            numa: 80.0,
            package: 140.0,
            remote: 220.0,
        }
    }
}

impl Latencies {
    fn of(&self, d: Distance) -> f64 {
        match d {
            Distance::SamePu | Distance::SameCore | Distance::SameL3 => self.l3,
            Distance::SameNuma => self.numa,
            Distance::SamePackage => self.package,
            Distance::Remote => self.remote,
        }
    }
}

/// Modelled time of a dissemination barrier among the ranks `members`
/// (indices into `places`).
fn flat(m: &Machine, places: &[Placement], members: &[usize], lat: &Latencies) -> f64 {
    let n = members.len();
    let mut t = 0.0;
    let mut k = 1;
    while k < n {
        let mut worst: f64 = 0.0;
        for i in 0..n {
            let a = places[members[i]].pu;
            let b = places[members[(i + k) % n]].pu;
            worst = worst.max(lat.of(distance(m, a, b)));
        }
        t += worst;
        k *= 2;
    }
    t
}

/// The model's verdict for one placement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Flat dissemination / recursive doubling over all ranks, ns.
    pub flat: f64,
    /// Intra-node, leaders, intra-node release, ns.
    pub hierarchical: f64,
}

/// Estimates a small barrier (or allreduce: the same rounds) over
/// `places` both ways, grouping ranks by the NUMA node of their PU.
pub fn estimate(m: &Machine, places: &[Placement], lat: &Latencies) -> Estimate {
    let all: Vec<usize> = (0..places.len()).collect();
    let mut groups: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for (r, p) in places.iter().enumerate() {
        groups.entry(p.numa.unwrap_or(0)).or_default().push(r);
    }
    let intra = groups
        .values()
        .map(|g| flat(m, places, g, lat))
        .fold(0.0, f64::max);
    // The release: one round of the worst leader-to-member latency.
    let release = groups
        .values()
        .flat_map(|g| {
            g[1..]
                .iter()
                .map(|&r| lat.of(distance(m, places[g[0]].pu, places[r].pu)))
        })
        .fold(0.0, f64::max);
    let leaders: Vec<usize> = groups.values().map(|g| g[0]).collect();
    Estimate {
        flat: flat(m, places, &all, lat),
        hierarchical: intra + flat(m, places, &leaders, lat) + release,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{place, Level, Policy, Source};

    fn machine(s: &str) -> Machine {
        Machine::load(&Source::Synthetic(s.into())).unwrap()
    }

    #[test]
    fn hierarchical_wins_on_two_numa_nodes_per_package_when_remote_is_expensive() {
        let m = machine("pack:2 numa:2 core:4 pu:2");
        let lat = Latencies::default();
        // Mapped by core: every flat dissemination round has a pair that
        // wraps across packages (4 x 220 ns); the hierarchy pays two
        // intra-node rounds, two leader rounds and a release.
        let (p, _) = place(&m, 16, &Policy::default()).unwrap();
        let e = estimate(&m, &p, &lat);
        assert_eq!(e.flat, 880.0);
        assert_eq!(e.hierarchical, 160.0 + 440.0 + 80.0);
        // Mapped by NUMA node, half the flat rounds stay inside a node
        // (ranks i and i + 4 share one): the flat algorithm wins.
        let by_numa = Policy {
            map: Some(Level::Numa),
            ..Policy::default()
        };
        let (p, _) = place(&m, 16, &by_numa).unwrap();
        let e = estimate(&m, &p, &lat);
        assert!(e.hierarchical > e.flat, "{e:?}");
        // One node only: the hierarchy adds rounds and loses.
        let (p, _) = place(&m, 4, &Policy::default()).unwrap();
        let e = estimate(&m, &p, &lat);
        assert!(e.hierarchical >= e.flat, "{e:?}");
        // Uniform latencies: nothing to win.
        let flat_lat = Latencies {
            l3: 100.0,
            numa: 100.0,
            package: 100.0,
            remote: 100.0,
        };
        let (p, _) = place(&m, 16, &Policy::default()).unwrap();
        let e = estimate(&m, &p, &flat_lat);
        assert!(e.hierarchical >= e.flat, "{e:?}");
    }
}
