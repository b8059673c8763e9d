//! Virtual topologies (MPI 4.1 §8): Cartesian grids, graphs (MPI 1's,
//! every process given the whole graph) and distributed graphs (each
//! process given its neighbours, or any edges), kept on the communicator
//! they were made for, and what they answer: coordinates, ranks, shifts,
//! sub-grids, neighbours, and the neighbour lists the neighbourhood
//! collectives use.
//!
//! Ranks are never reordered (`reorder` is a hint MPI lets an
//! implementation ignore): rank r of the new communicator is rank r of
//! the old, so a grid is laid out in row-major order over the old ranks.
#![forbid(unsafe_code)]

use super::{Communicator, UNDEFINED};
use crate::error::{Error, ErrorClass, Result};
use crate::p2p::PROC_NULL;

/// A communicator's virtual topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Topology {
    /// `MPI_CART`: a grid of `dims`, periodic where `periods` says; rank r
    /// sits at the row-major coordinates of r.
    Cart {
        /// Processes along each dimension.
        dims: Vec<i32>,
        /// Whether each dimension wraps around.
        periods: Vec<bool>,
    },
    /// `MPI_GRAPH`: the whole graph, as `MPI_Graph_create` takes it:
    /// node r's neighbours are `edges[index[r - 1]..index[r]]` (from 0
    /// for node 0); rank r is node r.
    Graph {
        /// The running sum of the nodes' degrees.
        index: Vec<i32>,
        /// The neighbours of every node, node after node.
        edges: Vec<i32>,
    },
    /// `MPI_DIST_GRAPH`: this process's in-neighbours and out-neighbours
    /// (from `dist_graph_create_adjacent` in the order given; from
    /// `dist_graph_create` by the rank that named the edge, then its
    /// order), with their weights when the program gave weights.
    DistGraph {
        /// Ranks this process receives from.
        sources: Vec<i32>,
        /// Their weights (`None`: `MPI_UNWEIGHTED`).
        source_weights: Option<Vec<i32>>,
        /// Ranks this process sends to.
        destinations: Vec<i32>,
        /// Their weights (`None`: `MPI_UNWEIGHTED`).
        destination_weights: Option<Vec<i32>>,
    },
}

/// `MPI_Dims_create`: fills the zero entries of `dims` so that the
/// product of all entries is `nnodes`, the filled ones as close to each
/// other as the divisors allow (the smallest difference between the
/// largest and the smallest; MPI 4.1 §8.5.2), in non-increasing order;
/// nonzero entries stay.
///
/// # Errors
/// `Dims` when `nnodes` is not positive, an entry is negative, or the
/// fixed entries do not divide `nnodes`.
pub fn dims_create(nnodes: i32, dims: &mut [i32]) -> Result<()> {
    let bad = |why: String| Err(Error::new(ErrorClass::Dims, why));
    if nnodes <= 0 {
        return bad(format!("nnodes is {nnodes}: it must be positive"));
    }
    if let Some(d) = dims.iter().find(|&&d| d < 0) {
        return bad(format!(
            "dims holds {d}: entries must be 0 (free) or positive"
        ));
    }
    let mut fixed: i64 = 1;
    for &d in dims.iter().filter(|&&d| d > 0) {
        fixed = fixed.saturating_mul(d as i64);
    }
    if fixed > nnodes as i64 || nnodes as i64 % fixed != 0 {
        return bad(format!(
            "the fixed dimensions (product {fixed}) do not divide {nnodes}"
        ));
    }
    let rest = nnodes as i64 / fixed;
    let free = dims.iter().filter(|&&d| d == 0).count();
    if free == 0 {
        if rest != 1 {
            return bad(format!(
                "the dimensions multiply to {fixed}, not {nnodes}, and none is free"
            ));
        }
        return Ok(());
    }
    let parts = balanced(rest, free);
    let mut it = parts.into_iter();
    for d in dims.iter_mut().filter(|d| **d == 0) {
        *d = it.next().unwrap_or(1) as i32;
    }
    Ok(())
}

/// `n` as a product of `k` factors, non-increasing, whose largest and
/// smallest differ least (of equal spreads the first found, largest
/// first factor, as MPICH's): a search over the divisors of `n`,
/// largest factor first. Past a bound on the work
/// (many dimensions of a number with many divisors) the best found so
/// far, which starts as the greedy split (each prime, largest first, to
/// the smallest factor).
fn balanced(n: i64, k: usize) -> Vec<i64> {
    let mut primes = Vec::new();
    let mut rest = n;
    let mut p = 2i64;
    while p <= rest / p {
        while rest % p == 0 {
            primes.push(p);
            rest /= p;
        }
        p += 1;
    }
    if rest > 1 {
        primes.push(rest);
    }
    let mut greedy = vec![1i64; k];
    for &q in primes.iter().rev() {
        let smallest = (0..k).min_by_key(|&i| greedy[i]).unwrap_or(0);
        greedy[smallest] *= q;
    }
    greedy.sort_unstable_by(|a, b| b.cmp(a));
    let mut divisors: Vec<i64> = (1..)
        .take_while(|&d: &i64| d <= n / d)
        .filter(|&d| n % d == 0)
        .flat_map(|d| [d, n / d])
        .collect();
    divisors.sort_unstable();
    divisors.dedup();

    struct Search<'a> {
        divisors: &'a [i64],
        best: Vec<i64>,
        work: u32,
    }
    fn spread(v: &[i64]) -> i64 {
        v[0] - v[v.len() - 1]
    }
    fn go(s: &mut Search<'_>, n: i64, k: usize, cap: i64, acc: &mut Vec<i64>) {
        s.work += 1;
        if s.work > 1_000_000 {
            return;
        }
        if k == 1 {
            if n <= cap {
                acc.push(n);
                if spread(acc) < spread(&s.best) {
                    s.best = acc.clone();
                }
                acc.pop();
            }
            return;
        }
        // Factors from the largest allowed down; the first one is at
        // least the k-th root of what is left.
        for i in (0..s.divisors.len()).rev() {
            let d = s.divisors[i];
            if d > cap || n % d != 0 {
                continue;
            }
            if (d as f64) < (n as f64).powf(1.0 / k as f64) - 1e-9 {
                break;
            }
            acc.push(d);
            go(s, n / d, k - 1, d, acc);
            acc.pop();
        }
    }
    let mut s = Search {
        divisors: &divisors,
        best: greedy,
        work: 0,
    };
    go(&mut s, n, k, n, &mut Vec::with_capacity(k));
    s.best
}

/// Row-major coordinates of `rank` in a grid of `dims`.
fn coords_of(dims: &[i32], mut rank: i32) -> Vec<i32> {
    let mut c = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        c[d] = rank % dims[d];
        rank /= dims[d];
    }
    c
}

/// The rank at `coords` (each already inside its dimension).
fn rank_of(dims: &[i32], coords: &[i32]) -> i32 {
    coords.iter().zip(dims).fold(0, |r, (&c, &d)| r * d + c)
}

impl Communicator {
    /// This communicator's virtual topology, if it has one
    /// (`MPI_Topo_test`).
    pub fn topology(&self) -> Option<&Topology> {
        self.inner.topo.get()
    }

    /// Gives the new communicator `c` topology `t`.
    fn with_topology(c: Communicator, t: Topology) -> Communicator {
        // Set once, right after creation: nothing else can have set it.
        let _ = c.inner.topo.set(t);
        c
    }

    /// `c`, a duplicate of this communicator, with this one's topology
    /// (`MPI_Comm_dup` keeps it, MPI 4.1 §7.4.2).
    pub(crate) fn keep_topology(&self, c: Communicator) -> Communicator {
        match self.topology() {
            Some(t) => Self::with_topology(c, t.clone()),
            None => c,
        }
    }

    /// `MPI_Cart_create`: a communicator over the first `dims` product
    /// ranks of this one, with a Cartesian topology; `None` at the other
    /// ranks. Collective.
    ///
    /// # Errors
    /// `Comm` on an intercommunicator; `Dims` for a dimension that is not
    /// positive or lengths that differ; `Arg` when the grid has more
    /// places than this communicator has members.
    pub fn cart_create(
        &self,
        dims: &[i32],
        periods: &[bool],
        reorder: bool,
    ) -> Result<Option<Communicator>> {
        let r = (|| {
            self.proc_.check()?;
            self.intra_only("MPI_Cart_create")?;
            let n = self
                .grid_places(dims, periods)
                .map_err(|e| self.refuse_split("MPI_Cart_create", e))?;
            // `reorder` is a hint: ranks keep their order.
            let _ = reorder;
            let color = if (self.rank() as i64) < n {
                0
            } else {
                UNDEFINED
            };
            let c = self.split_intra(color, self.rank(), "MPI_Cart_create")?;
            let t = Topology::Cart {
                dims: dims.to_vec(),
                periods: periods.to_vec(),
            };
            Ok(c.map(|c| Self::with_topology(c, t)))
        })();
        self.ret("MPI_Cart_create", r)
    }

    /// Refuses an intercommunicator, which has no topology.
    fn intra_only(&self, call: &str) -> Result<()> {
        if self.is_inter() {
            return Err(Error::new(
                ErrorClass::Comm,
                format!("{call} needs an intracommunicator"),
            ));
        }
        Ok(())
    }

    /// The places of a grid of `dims` laid on this communicator.
    ///
    /// # Errors
    /// As [`grid_size`]; `Arg` for more places than members.
    fn grid_places(&self, dims: &[i32], periods: &[bool]) -> Result<i64> {
        let n = grid_size(dims, periods.len())?;
        if n > self.size() as i64 {
            return Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "a grid of {n} places on a communicator of {} members",
                    self.size()
                ),
            ));
        }
        Ok(n)
    }

    /// The grid of a Cartesian communicator.
    fn cart(&self, call: &str) -> Result<(&[i32], &[bool])> {
        match self.topology() {
            Some(Topology::Cart { dims, periods }) => Ok((dims, periods)),
            _ => Err(Error::new(
                ErrorClass::Topology,
                format!("{call} needs a communicator with a Cartesian topology"),
            )),
        }
    }

    /// `MPI_Cart_get` / `MPI_Cartdim_get`: the grid's dimensions and
    /// periods, and this process's coordinates.
    ///
    /// # Errors
    /// `Topology` without a Cartesian topology.
    pub fn cart_get(&self) -> Result<(Vec<i32>, Vec<bool>, Vec<i32>)> {
        let r = self
            .cart("MPI_Cart_get")
            .map(|(d, p)| (d.to_vec(), p.to_vec(), coords_of(d, self.rank())));
        self.ret("MPI_Cart_get", r)
    }

    /// `MPI_Cart_coords`: the coordinates of `rank`.
    ///
    /// # Errors
    /// `Topology` without a Cartesian topology, `Rank` out of range.
    pub fn cart_coords(&self, rank: i32) -> Result<Vec<i32>> {
        let r = (|| {
            let (d, _) = self.cart("MPI_Cart_coords")?;
            if rank < 0 || rank >= self.size() {
                return Err(Error::new(
                    ErrorClass::Rank,
                    format!("rank {rank} is not in a grid of {}", self.size()),
                ));
            }
            Ok(coords_of(d, rank))
        })();
        self.ret("MPI_Cart_coords", r)
    }

    /// `MPI_Cart_rank`: the rank at `coords`; a coordinate outside a
    /// periodic dimension wraps around.
    ///
    /// # Errors
    /// `Topology` without a Cartesian topology; `Dims` for the wrong
    /// number of coordinates; `Rank` for a coordinate outside a dimension
    /// that does not wrap.
    pub fn cart_rank(&self, coords: &[i32]) -> Result<i32> {
        let r = (|| {
            let (d, p) = self.cart("MPI_Cart_rank")?;
            per_dimension(coords.len(), d.len(), "coordinates")?;
            let mut c = coords.to_vec();
            for i in 0..d.len() {
                if p[i] {
                    c[i] = c[i].rem_euclid(d[i]);
                } else if c[i] < 0 || c[i] >= d[i] {
                    return Err(Error::new(
                        ErrorClass::Rank,
                        format!(
                            "coordinate {} is outside dimension {i} (0 to {}), which does not wrap",
                            c[i],
                            d[i] - 1
                        ),
                    ));
                }
            }
            Ok(rank_of(d, &c))
        })();
        self.ret("MPI_Cart_rank", r)
    }

    /// `MPI_Cart_shift`: the ranks `disp` places behind and ahead of this
    /// process along `direction` (source, destination); `PROC_NULL` off
    /// the edge of a dimension that does not wrap.
    ///
    /// # Errors
    /// `Topology` without a Cartesian topology; `Arg` for a direction out
    /// of range.
    pub fn cart_shift(&self, direction: i32, disp: i32) -> Result<(i32, i32)> {
        let r = (|| {
            let (d, p) = self.cart("MPI_Cart_shift")?;
            let k = usize::try_from(direction)
                .ok()
                .filter(|&k| k < d.len())
                .ok_or_else(|| {
                    Error::new(
                        ErrorClass::Arg,
                        format!("direction {direction} of a grid of {} dimensions", d.len()),
                    )
                })?;
            let me = coords_of(d, self.rank());
            let at = |delta: i64| {
                let v = me[k] as i64 + delta;
                let v = if p[k] {
                    v.rem_euclid(d[k] as i64)
                } else if v < 0 || v >= d[k] as i64 {
                    return PROC_NULL;
                } else {
                    v
                };
                let mut c = me.clone();
                c[k] = v as i32;
                rank_of(d, &c)
            };
            Ok((at(-(disp as i64)), at(disp as i64)))
        })();
        self.ret("MPI_Cart_shift", r)
    }

    /// `MPI_Cart_sub`: the sub-grids that keep the dimensions `remain`
    /// marks, one communicator each (this process gets its own); ranks in
    /// row-major order of the kept coordinates. Collective.
    ///
    /// # Errors
    /// `Topology` without a Cartesian topology; `Dims` for the wrong
    /// number of flags.
    pub fn cart_sub(&self, remain: &[bool]) -> Result<Communicator> {
        let r = (|| {
            let (d, p) = self.cart("MPI_Cart_sub")?;
            per_dimension(remain.len(), d.len(), "flags")
                .map_err(|e| self.refuse_split("MPI_Cart_sub", e))?;
            let me = coords_of(d, self.rank());
            let (mut color, mut key) = (0i32, 0i32);
            let (mut kd, mut kp) = (Vec::new(), Vec::new());
            for i in 0..d.len() {
                if remain[i] {
                    key = key * d[i] + me[i];
                    kd.push(d[i]);
                    kp.push(p[i]);
                } else {
                    color = color * d[i] + me[i];
                }
            }
            let c = self
                .split_intra(color, key, "MPI_Cart_sub")?
                .ok_or_else(|| Error::new(ErrorClass::Intern, "MPI_Cart_sub lost this process"))?;
            Ok(Self::with_topology(
                c,
                Topology::Cart {
                    dims: kd,
                    periods: kp,
                },
            ))
        })();
        self.ret("MPI_Cart_sub", r)
    }

    /// `MPI_Cart_map`: this process's rank in a grid of `dims` laid on
    /// this communicator (its own rank, as ranks are not reordered), or
    /// `UNDEFINED` past the grid.
    ///
    /// # Errors
    /// `Dims` for a dimension that is not positive; `Arg` when the grid is
    /// larger than the communicator.
    pub fn cart_map(&self, dims: &[i32], periods: &[bool]) -> Result<i32> {
        let r = (|| {
            let n = self.grid_places(dims, periods)?;
            Ok(if (self.rank() as i64) < n {
                self.rank()
            } else {
                UNDEFINED
            })
        })();
        self.ret("MPI_Cart_map", r)
    }

    /// `MPI_Dist_graph_create_adjacent`: a communicator over the same
    /// processes whose topology is this process's in-neighbours `sources`
    /// and out-neighbours `destinations` (with weights, or `None`).
    /// Collective.
    ///
    /// # Errors
    /// `Comm` on an intercommunicator; `Rank` for a neighbour out of
    /// range; `Arg` for weights whose number is not the neighbours'.
    pub fn dist_graph_create_adjacent(
        &self,
        sources: &[i32],
        source_weights: Option<&[i32]>,
        destinations: &[i32],
        destination_weights: Option<&[i32]>,
        reorder: bool,
    ) -> Result<Communicator> {
        let r = (|| {
            self.proc_.check()?;
            self.intra_only("MPI_Dist_graph_create_adjacent")?;
            check_adjacent(
                self.size(),
                sources,
                source_weights,
                destinations,
                destination_weights,
            )
            .map_err(|e| self.refuse_split("MPI_Dist_graph_create_adjacent", e))?;
            let _ = reorder;
            let c = self
                .split_intra(0, self.rank(), "MPI_Dist_graph_create_adjacent")?
                .ok_or_else(|| Error::new(ErrorClass::Intern, "the graph lost this process"))?;
            Ok(Self::with_topology(
                c,
                Topology::DistGraph {
                    sources: sources.to_vec(),
                    source_weights: source_weights.map(<[i32]>::to_vec),
                    destinations: destinations.to_vec(),
                    destination_weights: destination_weights.map(<[i32]>::to_vec),
                },
            ))
        })();
        self.ret("MPI_Dist_graph_create_adjacent", r)
    }

    /// `MPI_Graph_create`: a communicator over the first `index.len()`
    /// ranks of this one with the graph `index` / `edges` (every member
    /// passes the same), rank r being node r; `None` at the other ranks.
    /// Collective.
    ///
    /// # Errors
    /// `Comm` on an intercommunicator; `Arg` for more nodes than members,
    /// an index that decreases or does not end at the number of edges, or
    /// an edge to no node.
    pub fn graph_create(
        &self,
        index: &[i32],
        edges: &[i32],
        reorder: bool,
    ) -> Result<Option<Communicator>> {
        let r = (|| {
            self.proc_.check()?;
            self.intra_only("MPI_Graph_create")?;
            let n = index.len();
            if n > self.size() as usize {
                return Err(self.refuse_split(
                    "MPI_Graph_create",
                    Error::new(
                        ErrorClass::Arg,
                        format!(
                            "a graph of {n} nodes on a communicator of {} members",
                            self.size()
                        ),
                    ),
                ));
            }
            check_graph(index, edges).map_err(|e| self.refuse_split("MPI_Graph_create", e))?;
            // `reorder` is a hint: ranks keep their order.
            let _ = reorder;
            let color = if (self.rank() as usize) < n {
                0
            } else {
                UNDEFINED
            };
            let c = self.split_intra(color, self.rank(), "MPI_Graph_create")?;
            let t = Topology::Graph {
                index: index.to_vec(),
                edges: edges.to_vec(),
            };
            Ok(c.map(|c| Self::with_topology(c, t)))
        })();
        self.ret("MPI_Graph_create", r)
    }

    /// The graph of an `MPI_GRAPH` communicator.
    fn graph(&self, call: &str) -> Result<&Topology> {
        match self.topology() {
            Some(g @ Topology::Graph { .. }) => Ok(g),
            _ => Err(Error::new(
                ErrorClass::Topology,
                format!("{call} needs a communicator with a graph topology"),
            )),
        }
    }

    /// `MPI_Graph_get` / `MPI_Graphdims_get`: the graph's index and edges.
    ///
    /// # Errors
    /// `Topology` without a graph topology.
    pub fn graph_get(&self) -> Result<(Vec<i32>, Vec<i32>)> {
        let r = self.graph("MPI_Graph_get").map(|g| match g {
            Topology::Graph { index, edges } => (index.clone(), edges.clone()),
            _ => unreachable!("graph gives a graph"),
        });
        self.ret("MPI_Graph_get", r)
    }

    /// `MPI_Graph_neighbors`: the neighbours of `rank`, in the graph's
    /// order.
    ///
    /// # Errors
    /// `Topology` without a graph topology; `Rank` for a rank that is no
    /// node.
    pub fn graph_neighbors(&self, rank: i32) -> Result<Vec<i32>> {
        let r = self.graph("MPI_Graph_neighbors").and_then(|g| {
            if rank < 0 || rank >= self.size() {
                return Err(Error::new(
                    ErrorClass::Rank,
                    format!("rank {rank} is not a node of a graph of {}", self.size()),
                ));
            }
            Ok(graph_neighbors_of(g, rank).to_vec())
        });
        self.ret("MPI_Graph_neighbors", r)
    }

    /// `MPI_Graph_map`: this process's rank in a graph of `index` /
    /// `edges` laid on this communicator (its own rank, as nothing is
    /// reordered), or `UNDEFINED` past the graph's nodes.
    ///
    /// # Errors
    /// As [`graph_create`](Self::graph_create).
    pub fn graph_map(&self, index: &[i32], edges: &[i32]) -> Result<i32> {
        let r = (|| {
            self.intra_only("MPI_Graph_map")?;
            if index.len() > self.size() as usize {
                return Err(Error::new(
                    ErrorClass::Arg,
                    format!(
                        "a graph of {} nodes on a communicator of {} members",
                        index.len(),
                        self.size()
                    ),
                ));
            }
            check_graph(index, edges)?;
            Ok(if (self.rank() as usize) < index.len() {
                self.rank()
            } else {
                UNDEFINED
            })
        })();
        self.ret("MPI_Graph_map", r)
    }

    /// `MPI_Dist_graph_create`: a distributed graph from edges any member
    /// may name: `degrees[i]` edges from `sources[i]`, to the next
    /// `degrees[i]` entries of `destinations` (with as many `weights`, or
    /// `None` for `MPI_UNWEIGHTED`, which every member then passes). Each
    /// member learns the edges that end or start at it in one exchange;
    /// its neighbours are ordered by the rank that named the edge, then
    /// that rank's order, so the two ends of repeated edges list them
    /// alike. Collective: a member whose arguments are refused still takes
    /// part in the exchange, and the others fail with `Arg` naming it
    /// rather than wait for it.
    ///
    /// # Errors
    /// `Comm` on an intercommunicator; `Rank` for an end that is no rank;
    /// `Arg` for a negative degree or weight, or when another member's
    /// arguments were refused.
    pub fn dist_graph_create(
        &self,
        sources: &[i32],
        degrees: &[i32],
        destinations: &[i32],
        weights: Option<&[i32]>,
        reorder: bool,
    ) -> Result<Communicator> {
        // `reorder` is a hint: ranks keep their order.
        let _ = reorder;
        let edges = dist_edges(
            self.size() as usize,
            sources,
            degrees,
            destinations,
            weights,
        );
        self.dist_graph_exchange(edges, weights.is_some())
    }

    /// Takes part in an `MPI_Dist_graph_create` whose arguments the C
    /// layer refused with `e` (so the other members fail instead of
    /// waiting); gives `e` back.
    pub(crate) fn dist_graph_refused(&self, e: Error) -> Error {
        match self.dist_graph_exchange(Err(e), false) {
            Err(e) => e,
            Ok(_) => unreachable!("a refused member gets no graph"),
        }
    }

    /// The exchange of [`dist_graph_create`](Self::dist_graph_create),
    /// with this member's checked `edges` or the error that refused them.
    fn dist_graph_exchange(
        &self,
        edges: Result<Vec<(i32, i32, i32)>>,
        weighted: bool,
    ) -> Result<Communicator> {
        const CALL: &str = "MPI_Dist_graph_create";
        let r = (|| {
            self.proc_.check()?;
            self.intra_only(CALL)?;
            let n = self.size() as usize;
            // Per member, its records: (0 for an edge into it, 1 for one
            // out of it; the other end; the weight).
            let mut per: Vec<Vec<i32>> = vec![Vec::new(); n];
            for &(s, d, w) in edges.as_deref().unwrap_or_default() {
                per[s as usize].extend([1, d, w]);
                per[d as usize].extend([0, s, w]);
            }
            let counts: Vec<i32> = match &edges {
                Ok(_) => per.iter().map(|v| v.len() as i32).collect(),
                Err(_) => vec![-1; n],
            };
            let c = self.coll();
            let ones = vec![1; n];
            let iota: Vec<usize> = (0..n).collect();
            let mut theirs = vec![0i32; n];
            c.alltoallv_t(&counts, &ones, &iota, &mut theirs, &ones, &iota)?;
            edges?;
            if let Some(bad) = theirs.iter().position(|&x| x < 0) {
                return Err(Error::new(
                    ErrorClass::Arg,
                    format!("rank {bad}'s arguments to {CALL} were refused"),
                ));
            }
            let scounts: Vec<usize> = per.iter().map(Vec::len).collect();
            let rcounts: Vec<usize> = theirs.iter().map(|&x| x as usize).collect();
            let mut got = vec![0i32; rcounts.iter().sum()];
            c.alltoallv_t(
                &per.concat(),
                &scounts,
                &super::collective::packed(&scounts),
                &mut got,
                &rcounts,
                &super::collective::packed(&rcounts),
            )?;
            let (mut src, mut sw, mut dst, mut dw) = (vec![], vec![], vec![], vec![]);
            for rec in got.chunks_exact(3) {
                let (ends, ws) = if rec[0] == 0 {
                    (&mut src, &mut sw)
                } else {
                    (&mut dst, &mut dw)
                };
                ends.push(rec[1]);
                ws.push(rec[2]);
            }
            let c = self
                .split_intra(0, self.rank(), CALL)?
                .ok_or_else(|| Error::new(ErrorClass::Intern, "the graph lost this process"))?;
            Ok(Self::with_topology(
                c,
                Topology::DistGraph {
                    sources: src,
                    source_weights: weighted.then_some(sw),
                    destinations: dst,
                    destination_weights: weighted.then_some(dw),
                },
            ))
        })();
        self.ret(CALL, r)
    }

    /// The neighbours a neighbourhood collective exchanges with, in
    /// order: (in-neighbours, out-neighbours). For a grid, per dimension
    /// the one behind then the one ahead (`PROC_NULL` off an edge that
    /// does not wrap), both lists alike (MPI 4.1 §8.6).
    ///
    /// # Errors
    /// `Topology` without a topology.
    pub fn neighbors(&self) -> Result<(Vec<i32>, Vec<i32>)> {
        let r = match self.topology() {
            Some(Topology::Cart { dims, .. }) => {
                let mut v = Vec::with_capacity(2 * dims.len());
                for k in 0..dims.len() {
                    let (behind, ahead) = self.cart_shift(k as i32, 1)?;
                    v.push(behind);
                    v.push(ahead);
                }
                Ok((v.clone(), v))
            }
            Some(Topology::DistGraph {
                sources,
                destinations,
                ..
            }) => Ok((sources.clone(), destinations.clone())),
            Some(g @ Topology::Graph { .. }) => {
                let v = graph_neighbors_of(g, self.rank()).to_vec();
                Ok((v.clone(), v))
            }
            None => Err(Error::new(
                ErrorClass::Topology,
                "a neighbourhood collective needs a communicator with a topology",
            )),
        };
        self.ret("MPI_Neighbor_*", r)
    }
}

/// Checks one member's lists for `dist_graph_create_adjacent` on a
/// communicator of `n`.
///
/// # Errors
/// `Rank` for a neighbour out of range; `Arg` for weights whose number is
/// not the neighbours' or that are negative.
fn check_adjacent(
    n: i32,
    sources: &[i32],
    source_weights: Option<&[i32]>,
    destinations: &[i32],
    destination_weights: Option<&[i32]>,
) -> Result<()> {
    for &x in sources.iter().chain(destinations) {
        if x < 0 || x >= n {
            return Err(Error::new(
                ErrorClass::Rank,
                format!("neighbour {x} is not a rank of a communicator of {n}"),
            ));
        }
    }
    let lens = [
        (source_weights, sources.len(), "sourceweights"),
        (destination_weights, destinations.len(), "destweights"),
    ];
    for (w, len, what) in lens {
        if w.is_some_and(|w| w.len() != len) {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("{what} has not one weight per neighbour ({len})"),
            ));
        }
        if w.is_some_and(|w| w.iter().any(|&x| x < 0)) {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("{what} has a negative weight"),
            ));
        }
    }
    Ok(())
}

/// The neighbours of node `rank` of a graph topology.
fn graph_neighbors_of(g: &Topology, rank: i32) -> &[i32] {
    let Topology::Graph { index, edges } = g else {
        return &[];
    };
    let r = rank as usize;
    let from = if r == 0 { 0 } else { index[r - 1] as usize };
    &edges[from..index[r] as usize]
}

/// Checks a graph of `MPI_Graph_create`: `index` a running sum of degrees
/// ending at the number of `edges`, each edge a node.
///
/// # Errors
/// `Arg` otherwise.
fn check_graph(index: &[i32], edges: &[i32]) -> Result<()> {
    let bad = |why: String| Err(Error::new(ErrorClass::Arg, why));
    let mut at = 0;
    for (r, &x) in index.iter().enumerate() {
        if x < at {
            return bad(format!(
                "index[{r}] is {x}, below index[{}] ({at}): it is a running sum of degrees",
                r.max(1) - 1
            ));
        }
        at = x;
    }
    if at as usize != edges.len() {
        return bad(format!(
            "the index ends at {at} but {} edges were given",
            edges.len()
        ));
    }
    let n = index.len() as i32;
    if let Some(e) = edges.iter().find(|&&e| e < 0 || e >= n) {
        return bad(format!(
            "an edge to {e}, which is not a node of a graph of {n}"
        ));
    }
    Ok(())
}

/// The edges one member names to `MPI_Dist_graph_create`, as (source,
/// destination, weight; 1 unweighted), checked against a communicator of
/// `n`.
///
/// # Errors
/// `Rank` for an end that is no rank; `Arg` for a negative degree or
/// weight, or lengths that do not add up.
fn dist_edges(
    n: usize,
    sources: &[i32],
    degrees: &[i32],
    destinations: &[i32],
    weights: Option<&[i32]>,
) -> Result<Vec<(i32, i32, i32)>> {
    let arg = |why: String| Err(Error::new(ErrorClass::Arg, why));
    if sources.len() != degrees.len() {
        return arg(format!(
            "{} sources but {} degrees",
            sources.len(),
            degrees.len()
        ));
    }
    if let Some(d) = degrees.iter().find(|&&d| d < 0) {
        return arg(format!("a degree of {d}: degrees must not be negative"));
    }
    let total: usize = degrees.iter().map(|&d| d as usize).sum();
    if destinations.len() != total {
        return arg(format!(
            "{} destinations for degrees that add up to {total}",
            destinations.len()
        ));
    }
    if let Some(w) = weights {
        if w.len() != total {
            return arg(format!("{} weights for {total} edges", w.len()));
        }
        if w.iter().any(|&x| x < 0) {
            return arg("a negative weight".to_string());
        }
    }
    let rank = |x: i32| {
        if x < 0 || x as usize >= n {
            return Err(Error::new(
                ErrorClass::Rank,
                format!("edge end {x} is not a rank of a communicator of {n}"),
            ));
        }
        Ok(x)
    };
    let mut out = Vec::with_capacity(total);
    let mut k = 0;
    for (&s, &deg) in sources.iter().zip(degrees) {
        let s = rank(s)?;
        for _ in 0..deg {
            let w = weights.map_or(1, |w| w[k]);
            out.push((s, rank(destinations[k])?, w));
            k += 1;
        }
    }
    Ok(out)
}

/// Checks that `n` arguments (`what`) are one per dimension of a grid of
/// `ndims`.
///
/// # Errors
/// `Dims` otherwise.
fn per_dimension(n: usize, ndims: usize, what: &str) -> Result<()> {
    if n != ndims {
        return Err(Error::new(
            ErrorClass::Dims,
            format!("{n} {what} for a grid of {ndims} dimensions"),
        ));
    }
    Ok(())
}

/// The number of places of a grid of `dims` (checked against `nperiods`
/// periods).
///
/// # Errors
/// `Dims` for a dimension that is not positive or lengths that differ;
/// `Arg` for a grid larger than any communicator.
fn grid_size(dims: &[i32], nperiods: usize) -> Result<i64> {
    if dims.len() != nperiods {
        return Err(Error::new(
            ErrorClass::Dims,
            format!("{} dimensions but {nperiods} periods", dims.len()),
        ));
    }
    let mut n: i64 = 1;
    for &d in dims {
        if d <= 0 {
            return Err(Error::new(
                ErrorClass::Dims,
                format!("a dimension of {d}: each must be positive"),
            ));
        }
        n = n.saturating_mul(d as i64);
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_create_balances_and_keeps_fixed_entries() {
        let cases: [(i32, &[i32], &[i32]); 11] = [
            (6, &[0, 0], &[3, 2]),
            (12, &[0, 0], &[4, 3]),
            (7, &[0, 0], &[7, 1]),
            (24, &[0, 0, 0], &[4, 3, 2]),
            (24, &[0, 3, 0], &[4, 3, 2]),
            (64, &[0, 0, 0], &[4, 4, 4]),
            (1, &[0, 0], &[1, 1]),
            (72, &[0, 0], &[9, 8]),
            (432, &[0, 0, 0], &[9, 8, 6]),
            (720, &[0, 0, 0], &[10, 9, 8]),
            (2_147_483_647, &[0, 0], &[2_147_483_647, 1]),
        ];
        for (n, given, want) in cases {
            let mut d = given.to_vec();
            dims_create(n, &mut d).unwrap();
            assert_eq!(d, want, "{n} into {given:?}");
        }
        let mut d = [5, 0];
        assert_eq!(
            dims_create(12, &mut d).unwrap_err().class(),
            ErrorClass::Dims
        );
        let mut d = [2, 3];
        assert_eq!(
            dims_create(7, &mut d).unwrap_err().class(),
            ErrorClass::Dims
        );
        let mut d = [2, 3];
        dims_create(6, &mut d).unwrap();
        assert_eq!(
            dims_create(0, &mut [0]).unwrap_err().class(),
            ErrorClass::Dims
        );
    }

    #[test]
    fn coordinates_are_row_major_and_round_trip() {
        let dims = [3, 4, 2];
        for r in 0..24 {
            let c = coords_of(&dims, r);
            assert_eq!(rank_of(&dims, &c), r);
        }
        assert_eq!(coords_of(&dims, 9), vec![1, 0, 1]);
    }
}
