//! Virtual topologies (MPI 4.1 §8) in C: Cartesian grids, graphs and
//! distributed graphs, over the Rust layer's (`comm::topo`). The neighbourhood
//! collectives are schedules in `nbc.rs`.

use super::comm::give;
use super::{array, array_mut, comm_obj, count, guard, h, out, COMM_NULL, UNDEFINED};
use crate::comm::{dims_create, Topology};
use crate::error::{Error, ErrorClass, Result};
use std::ffi::{c_int, c_void};

/// `MPI_GRAPH`, `MPI_DIST_GRAPH`, `MPI_CART` (MPI 5.0 ABI).
const GRAPH: c_int = 201;
const DIST_GRAPH: c_int = 202;
const CART: c_int = 203;
/// `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY`: sentinel pointers.
const UNWEIGHTED: usize = 4;
const WEIGHTS_EMPTY: usize = 5;

/// `ndims` flags from a C array of ints.
fn flags(p: *const c_int, n: usize, what: &str) -> Result<Vec<bool>> {
    Ok(array(p, n, what)?.iter().map(|&x| x != 0).collect())
}

/// The dimension count argument.
fn ndims(n: c_int) -> Result<usize> {
    count(n, "ndims").map_err(|_| {
        Error::new(
            ErrorClass::Dims,
            format!("ndims is {n}: it must not be negative"),
        )
    })
}

/// The arguments of a collective constructor on `obj`, read by `read`;
/// a member whose arguments are refused still takes part in the
/// constructor's split (`Communicator::refuse_split`), so the others fail
/// instead of waiting for it.
fn refused<T>(obj: &super::CommObj, call: &str, read: impl FnOnce() -> Result<T>) -> Result<T> {
    read().map_err(|e| obj.comm.refuse_split(call, e))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dims_create(nnodes: c_int, nd: c_int, dims: *mut c_int) -> c_int {
    guard("MPI_Dims_create", COMM_NULL, || {
        let d = array_mut(dims, ndims(nd)?, "dims")?;
        dims_create(nnodes, d)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_create(
    comm: *mut c_void,
    nd: c_int,
    dims: *const c_int,
    periods: *const c_int,
    reorder: c_int,
    newcomm: *mut *mut c_void,
) -> c_int {
    guard("MPI_Cart_create", h(comm), || {
        let obj = comm_obj(h(comm))?;
        let (d, p) = refused(&obj, "MPI_Cart_create", || {
            let n = ndims(nd)?;
            Ok((array(dims, n, "dims")?, flags(periods, n, "periods")?))
        })?;
        let c = obj.comm.cart_create(d, &p, reorder != 0)?;
        give(&obj, c, Vec::new(), newcomm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cartdim_get(comm: *mut c_void, nd: *mut c_int) -> c_int {
    guard("MPI_Cartdim_get", h(comm), || {
        let (d, _, _) = comm_obj(h(comm))?.comm.cart_get()?;
        out(nd, d.len() as c_int, "ndims")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_get(
    comm: *mut c_void,
    maxdims: c_int,
    dims: *mut c_int,
    periods: *mut c_int,
    coords: *mut c_int,
) -> c_int {
    guard("MPI_Cart_get", h(comm), || {
        let (d, p, c) = comm_obj(h(comm))?.comm.cart_get()?;
        let n = d.len().min(count(maxdims, "maxdims")?);
        array_mut(dims, n, "dims")?.copy_from_slice(&d[..n]);
        for (o, &x) in array_mut(periods, n, "periods")?.iter_mut().zip(&p) {
            *o = c_int::from(x);
        }
        array_mut(coords, n, "coords")?.copy_from_slice(&c[..n]);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_coords(
    comm: *mut c_void,
    rank: c_int,
    maxdims: c_int,
    coords: *mut c_int,
) -> c_int {
    guard("MPI_Cart_coords", h(comm), || {
        let c = comm_obj(h(comm))?.comm.cart_coords(rank)?;
        let n = c.len().min(count(maxdims, "maxdims")?);
        array_mut(coords, n, "coords")?.copy_from_slice(&c[..n]);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_rank(
    comm: *mut c_void,
    coords: *const c_int,
    rank: *mut c_int,
) -> c_int {
    guard("MPI_Cart_rank", h(comm), || {
        let obj = comm_obj(h(comm))?;
        let (d, _, _) = obj.comm.cart_get()?;
        let c = array(coords, d.len(), "coords")?;
        out(rank, obj.comm.cart_rank(c)?, "rank")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_shift(
    comm: *mut c_void,
    direction: c_int,
    disp: c_int,
    source: *mut c_int,
    dest: *mut c_int,
) -> c_int {
    guard("MPI_Cart_shift", h(comm), || {
        let (s, d) = comm_obj(h(comm))?.comm.cart_shift(direction, disp)?;
        out(source, s, "rank_source")?;
        out(dest, d, "rank_dest")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_sub(
    comm: *mut c_void,
    remain: *const c_int,
    newcomm: *mut *mut c_void,
) -> c_int {
    guard("MPI_Cart_sub", h(comm), || {
        let obj = comm_obj(h(comm))?;
        let (d, _, _) = obj.comm.cart_get()?;
        let r = refused(&obj, "MPI_Cart_sub", || {
            flags(remain, d.len(), "remain_dims")
        })?;
        let c = obj.comm.cart_sub(&r)?;
        give(&obj, Some(c), Vec::new(), newcomm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_map(
    comm: *mut c_void,
    nd: c_int,
    dims: *const c_int,
    periods: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    guard("MPI_Cart_map", h(comm), || {
        let obj = comm_obj(h(comm))?;
        let n = ndims(nd)?;
        let d = array(dims, n, "dims")?;
        let p = flags(periods, n, "periods")?;
        out(newrank, obj.comm.cart_map(d, &p)?, "newrank")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Topo_test(comm: *mut c_void, status: *mut c_int) -> c_int {
    guard("MPI_Topo_test", h(comm), || {
        let kind = match comm_obj(h(comm))?.comm.topology() {
            Some(Topology::Cart { .. }) => CART,
            Some(Topology::DistGraph { .. }) => DIST_GRAPH,
            Some(Topology::Graph { .. }) => GRAPH,
            None => UNDEFINED,
        };
        out(status, kind, "status")
    })
}

/// A weights argument: `None` for `MPI_UNWEIGHTED`, else `n` weights
/// (`MPI_WEIGHTS_EMPTY` or any pointer when `n` is 0).
fn weights(p: *const c_int, n: usize, what: &str) -> Result<Option<Vec<c_int>>> {
    match p as usize {
        UNWEIGHTED => Ok(None),
        WEIGHTS_EMPTY => {
            if n > 0 {
                return Err(Error::new(
                    ErrorClass::Arg,
                    format!("{what} is MPI_WEIGHTS_EMPTY for {n} neighbours"),
                ));
            }
            Ok(Some(Vec::new()))
        }
        _ => Ok(Some(array(p, n, what)?.to_vec())),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_create_adjacent(
    comm: *mut c_void,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    _info: *mut c_void,
    reorder: c_int,
    newcomm: *mut *mut c_void,
) -> c_int {
    guard("MPI_Dist_graph_create_adjacent", h(comm), || {
        let obj = comm_obj(h(comm))?;
        let (s, sw, d, dw) = refused(&obj, "MPI_Dist_graph_create_adjacent", || {
            let (ni, no) = (count(indegree, "indegree")?, count(outdegree, "outdegree")?);
            let s = array(sources, ni, "sources")?;
            let d = array(destinations, no, "destinations")?;
            let mut sw = weights(sourceweights, ni, "sourceweights")?;
            let mut dw = weights(destweights, no, "destweights")?;
            // A side without neighbours follows the other (MPICH and Open
            // MPI take MPI_UNWEIGHTED there beside real weights).
            if sw.is_none() && ni == 0 && dw.is_some() {
                sw = Some(Vec::new());
            }
            if dw.is_none() && no == 0 && sw.is_some() {
                dw = Some(Vec::new());
            }
            if sw.is_some() != dw.is_some() {
                return Err(Error::new(
                    ErrorClass::Arg,
                    "sourceweights and destweights must both be MPI_UNWEIGHTED or neither",
                ));
            }
            Ok((s, sw, d, dw))
        })?;
        let c = obj.comm.dist_graph_create_adjacent(
            s,
            sw.as_deref(),
            d,
            dw.as_deref(),
            reorder != 0,
        )?;
        give(&obj, Some(c), Vec::new(), newcomm)
    })
}

/// The distributed graph of `comm`.
fn dist_graph(t: Option<&Topology>) -> Result<&Topology> {
    match t {
        Some(g @ Topology::DistGraph { .. }) => Ok(g),
        _ => Err(Error::new(
            ErrorClass::Topology,
            "the communicator has no distributed graph topology",
        )),
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors_count(
    comm: *mut c_void,
    indegree: *mut c_int,
    outdegree: *mut c_int,
    weighted: *mut c_int,
) -> c_int {
    guard("MPI_Dist_graph_neighbors_count", h(comm), || {
        let obj = comm_obj(h(comm))?;
        let Topology::DistGraph {
            sources,
            source_weights,
            destinations,
            ..
        } = dist_graph(obj.comm.topology())?
        else {
            unreachable!("dist_graph gives a distributed graph");
        };
        out(indegree, sources.len() as c_int, "indegree")?;
        out(outdegree, destinations.len() as c_int, "outdegree")?;
        out(weighted, c_int::from(source_weights.is_some()), "weighted")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_neighbors(
    comm: *mut c_void,
    maxindegree: c_int,
    sources: *mut c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destinations: *mut c_int,
    destweights: *mut c_int,
) -> c_int {
    guard("MPI_Dist_graph_neighbors", h(comm), || {
        let obj = comm_obj(h(comm))?;
        let Topology::DistGraph {
            sources: s,
            source_weights: sw,
            destinations: d,
            destination_weights: dw,
        } = dist_graph(obj.comm.topology())?
        else {
            unreachable!("dist_graph gives a distributed graph");
        };
        let ni = s.len().min(count(maxindegree, "maxindegree")?);
        let no = d.len().min(count(maxoutdegree, "maxoutdegree")?);
        array_mut(sources, ni, "sources")?.copy_from_slice(&s[..ni]);
        array_mut(destinations, no, "destinations")?.copy_from_slice(&d[..no]);
        let unweighted = |p: *mut c_int| matches!(p as usize, UNWEIGHTED | WEIGHTS_EMPTY);
        if let (Some(w), false) = (sw, unweighted(sourceweights)) {
            array_mut(sourceweights, ni, "sourceweights")?.copy_from_slice(&w[..ni]);
        }
        if let (Some(w), false) = (dw, unweighted(destweights)) {
            array_mut(destweights, no, "destweights")?.copy_from_slice(&w[..no]);
        }
        Ok(())
    })
}

/// A graph's `index` (of `nnodes`) and `edges` (as many as its last
/// entry says) from C arrays.
fn graph_args<'a>(
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
) -> Result<(&'a [c_int], &'a [c_int])> {
    let n = count(nnodes, "nnodes")?;
    let index: &[c_int] = array(index, n, "index")?;
    let ne = match index.last() {
        Some(&e) => count(e, "index[nnodes - 1]")?,
        None => 0,
    };
    Ok((index, array(edges, ne, "edges")?))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_create(
    comm: *mut c_void,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    reorder: c_int,
    newcomm: *mut *mut c_void,
) -> c_int {
    guard("MPI_Graph_create", h(comm), || {
        let obj = comm_obj(h(comm))?;
        let (i, e) = refused(&obj, "MPI_Graph_create", || {
            graph_args(nnodes, index, edges)
        })?;
        let c = obj.comm.graph_create(i, e, reorder != 0)?;
        give(&obj, c, Vec::new(), newcomm)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graphdims_get(
    comm: *mut c_void,
    nnodes: *mut c_int,
    nedges: *mut c_int,
) -> c_int {
    guard("MPI_Graphdims_get", h(comm), || {
        let (i, e) = comm_obj(h(comm))?.comm.graph_get()?;
        out(nnodes, i.len() as c_int, "nnodes")?;
        out(nedges, e.len() as c_int, "nedges")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_get(
    comm: *mut c_void,
    maxindex: c_int,
    maxedges: c_int,
    index: *mut c_int,
    edges: *mut c_int,
) -> c_int {
    guard("MPI_Graph_get", h(comm), || {
        let (i, e) = comm_obj(h(comm))?.comm.graph_get()?;
        let ni = i.len().min(count(maxindex, "maxindex")?);
        let ne = e.len().min(count(maxedges, "maxedges")?);
        array_mut(index, ni, "index")?.copy_from_slice(&i[..ni]);
        array_mut(edges, ne, "edges")?.copy_from_slice(&e[..ne]);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_neighbors_count(
    comm: *mut c_void,
    rank: c_int,
    nneighbors: *mut c_int,
) -> c_int {
    guard("MPI_Graph_neighbors_count", h(comm), || {
        let v = comm_obj(h(comm))?.comm.graph_neighbors(rank)?;
        out(nneighbors, v.len() as c_int, "nneighbors")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_neighbors(
    comm: *mut c_void,
    rank: c_int,
    maxneighbors: c_int,
    neighbors: *mut c_int,
) -> c_int {
    guard("MPI_Graph_neighbors", h(comm), || {
        let v = comm_obj(h(comm))?.comm.graph_neighbors(rank)?;
        let n = v.len().min(count(maxneighbors, "maxneighbors")?);
        array_mut(neighbors, n, "neighbors")?.copy_from_slice(&v[..n]);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Graph_map(
    comm: *mut c_void,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    newrank: *mut c_int,
) -> c_int {
    guard("MPI_Graph_map", h(comm), || {
        let obj = comm_obj(h(comm))?;
        let (i, e) = graph_args(nnodes, index, edges)?;
        out(newrank, obj.comm.graph_map(i, e)?, "newrank")
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Dist_graph_create(
    comm: *mut c_void,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights_: *const c_int,
    _info: *mut c_void,
    reorder: c_int,
    newcomm: *mut *mut c_void,
) -> c_int {
    guard("MPI_Dist_graph_create", h(comm), || {
        let obj = comm_obj(h(comm))?;
        // The arguments as slices; one refused here still takes part in
        // the exchange, so the other members fail instead of waiting.
        let args = (|| {
            if newcomm.is_null() {
                return Err(super::arg("comm_dist_graph"));
            }
            let n = count(n, "n")?;
            let s = array(sources, n, "sources")?;
            let d = array(degrees, n, "degrees")?;
            // A negative degree reads no destinations here; the Rust
            // layer refuses it.
            let total: usize = d.iter().map(|&x| x.max(0) as usize).sum();
            let dst = array(destinations, total, "destinations")?;
            Ok((s, d, dst, weights(weights_, total, "weights")?))
        })();
        let (s, d, dst, w) = args.map_err(|e| obj.comm.dist_graph_refused(e))?;
        let c = obj
            .comm
            .dist_graph_create(s, d, dst, w.as_deref(), reorder != 0)?;
        give(&obj, Some(c), Vec::new(), newcomm)
    })
}
