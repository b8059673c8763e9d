//! The collective operations of a communicator (MPI 4.1 §6): argument
//! checks, then the algorithms of `coll`. Buffers are slices; where MPI
//! has `MPI_IN_PLACE`, a `*_in_place` method takes one buffer.

use super::request::Finish;
use super::{Communicator, Kind, Request};
use crate::coll::{nbc, Coll, Op, Reducible};
use crate::datatype::Scalar;
use crate::error::{Error, ErrorClass, Result};
use crate::p2p::PROC_NULL;
use crate::sync::Ordering;

/// `MPI_ROOT`: on an intercommunicator, what the root passes as `root`
/// (the other members of its group pass `PROC_NULL`, the remote group the
/// root's rank).
pub const ROOT: i32 = -3;

fn count(what: &str, want: usize, got: usize) -> Error {
    Error::new(
        ErrorClass::Count,
        format!("{what}: the buffer holds {got} elements where {want} are needed"),
    )
}

/// Displacements of blocks laid end to end.
pub(super) fn packed(counts: &[usize]) -> Vec<usize> {
    let mut d = Vec::with_capacity(counts.len());
    let mut at = 0;
    for &c in counts {
        d.push(at);
        at += c;
    }
    d
}

/// Checks `counts` / `displs` (one per rank) against a buffer of `len`.
fn check_v(what: &str, n: usize, counts: &[usize], displs: &[usize], len: usize) -> Result<()> {
    if counts.len() != n || displs.len() != n {
        return Err(Error::new(
            ErrorClass::Arg,
            format!(
                "{what}: {} counts and {} displacements for a communicator of {n}",
                counts.len(),
                displs.len()
            ),
        ));
    }
    if let Some(r) = (0..n).find(|&r| displs[r].checked_add(counts[r]).is_none_or(|e| e > len)) {
        return Err(Error::new(
            ErrorClass::Count,
            format!(
                "{what}: block {r} ({} elements at {}) runs past the {len}-element buffer",
                counts[r], displs[r]
            ),
        ));
    }
    Ok(())
}

impl Communicator {
    fn intra(&self, what: &str) -> Result<Coll<'_>> {
        self.proc_.check()?;
        if self.is_inter() {
            return Err(Error::new(
                ErrorClass::Comm,
                format!("{what} is implemented on intracommunicators only"),
            ));
        }
        Ok(self.coll())
    }

    pub(super) fn root_of(&self, root: i32) -> Result<usize> {
        if root < 0 || root >= self.size() {
            return Err(Error::new(
                ErrorClass::Root,
                format!(
                    "root {root} is out of range for a communicator of size {}",
                    self.size()
                ),
            ));
        }
        Ok(root as usize)
    }

    /// `MPI_Bcast`: `buf` of `root` to every member. On an
    /// intercommunicator the root passes [`ROOT`], the rest of its group
    /// `PROC_NULL`, and the other group the root's rank.
    ///
    /// # Errors
    /// `Root` for a root out of range; `Count` when members' lengths differ.
    pub fn bcast<T: Scalar>(&self, buf: &mut [T], root: i32) -> Result<()> {
        let r = (|| {
            self.proc_.check()?;
            if let Kind::Inter { remote, .. } = &self.inner.kind {
                return match root {
                    ROOT => self.coll().send_t(0, crate::coll::tags::BCAST + 8, buf),
                    PROC_NULL => Ok(()),
                    r if r >= 0 && (r as usize) < remote.size() => {
                        if self.ctx.rank == 0 {
                            self.coll()
                                .recv_t(r as usize, crate::coll::tags::BCAST + 8, buf)?;
                        }
                        self.local_coll().bcast_t(0, buf)
                    }
                    r => Err(Error::new(
                        ErrorClass::Root,
                        format!(
                            "root {r} on an intercommunicator: ROOT, PROC_NULL or a remote rank"
                        ),
                    )),
                };
            }
            let root = self.root_of(root)?;
            self.coll().bcast_t(root, buf)
        })();
        self.ret("MPI_Bcast", r)
    }

    /// `MPI_Reduce`: the element-wise reduction of every member's `send`
    /// with `op`, into `recv` at `root` (`recv` is not used elsewhere and
    /// may be empty there).
    ///
    /// # Errors
    /// `Root`, `Op` (the operation is not defined for `T`), `Count`.
    pub fn reduce<T: Reducible>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: &Op,
        root: i32,
    ) -> Result<()> {
        let r = (|| {
            let c = self.intra("MPI_Reduce")?;
            let root = self.root_of(root)?;
            op.check::<T>()?;
            if self.ctx.rank == root && recv.len() != send.len() {
                return Err(count("MPI_Reduce", send.len(), recv.len()));
            }
            c.reduce_t(op, root, send, recv)
        })();
        self.ret("MPI_Reduce", r)
    }

    /// `MPI_Reduce` with `MPI_IN_PLACE` at the root: `buf` is the input
    /// everywhere and the result at `root`.
    ///
    /// # Errors
    /// As [`reduce`](Self::reduce).
    pub fn reduce_in_place<T: Reducible>(&self, buf: &mut [T], op: &Op, root: i32) -> Result<()> {
        let r = (|| {
            let c = self.intra("MPI_Reduce")?;
            let root = self.root_of(root)?;
            op.check::<T>()?;
            let data = buf.to_vec();
            c.reduce_t(op, root, &data, buf)
        })();
        self.ret("MPI_Reduce", r)
    }

    /// `MPI_Allreduce`: every member gets the reduction in `recv`. On an
    /// intercommunicator each group gets the reduction of the other
    /// group's data.
    ///
    /// # Errors
    /// `Op`, `Count`.
    pub fn allreduce<T: Reducible>(&self, send: &[T], recv: &mut [T], op: &Op) -> Result<()> {
        if recv.len() != send.len() {
            return self.ret(
                "MPI_Allreduce",
                Err(count("MPI_Allreduce", send.len(), recv.len())),
            );
        }
        recv.copy_from_slice(send);
        self.allreduce_in_place(recv, op)
    }

    /// `MPI_Allreduce` with `MPI_IN_PLACE`: `buf` is input and output.
    ///
    /// # Errors
    /// As [`allreduce`](Self::allreduce).
    pub fn allreduce_in_place<T: Reducible>(&self, buf: &mut [T], op: &Op) -> Result<()> {
        let r = (|| {
            self.proc_.check()?;
            op.check::<T>()?;
            if self.is_inter() {
                return self.inter_allreduce(buf, op);
            }
            if op.commutes() {
                if let Some((local, leaders)) = self.hierarchy() {
                    return self.hier_allreduce(local, leaders, buf, op);
                }
            }
            self.coll().allreduce_t(op, buf)
        })();
        self.ret("MPI_Allreduce", r)
    }

    fn inter_allreduce<T: Reducible>(&self, buf: &mut [T], op: &Op) -> Result<()> {
        let local = self.local_coll();
        let mut mine = buf.to_vec();
        let data = buf.to_vec();
        local.reduce_t(op, 0, &data, &mut mine)?;
        if self.ctx.rank == 0 {
            self.coll()
                .sendrecv_t(0, &mine, 0, buf, crate::coll::tags::ALLREDUCE + 8)?;
        }
        local.bcast_t(0, buf)
    }

    /// `MPI_Gather`: each member's `send` lands at block `rank` of `recv`
    /// at `root` (`recv` holds `size * send.len()` there; unused
    /// elsewhere).
    ///
    /// # Errors
    /// `Root`, `Count`.
    pub fn gather<T: Scalar>(&self, send: &[T], recv: &mut [T], root: i32) -> Result<()> {
        let r = (|| {
            let c = self.intra("MPI_Gather")?;
            let root = self.root_of(root)?;
            let n = c.size();
            if self.ctx.rank == root && recv.len() != n * send.len() {
                return Err(count("MPI_Gather", n * send.len(), recv.len()));
            }
            let counts = vec![send.len(); n];
            c.gatherv_t(root, send, recv, &counts, &packed(&counts))
        })();
        self.ret("MPI_Gather", r)
    }

    /// `MPI_Gatherv`: rank r's `send` (`counts[r]` elements) lands at
    /// `displs[r]` of `recv` at `root` (counts and displacements are
    /// significant at the root only).
    ///
    /// # Errors
    /// `Root`, `Arg` (wrong number of counts), `Count`.
    pub fn gatherv<T: Scalar>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
        root: i32,
    ) -> Result<()> {
        let r = (|| {
            let c = self.intra("MPI_Gatherv")?;
            let root = self.root_of(root)?;
            if self.ctx.rank == root {
                check_v("MPI_Gatherv", c.size(), counts, displs, recv.len())?;
            }
            c.gatherv_t(root, send, recv, counts, displs)
        })();
        self.ret("MPI_Gatherv", r)
    }

    /// `MPI_Scatter`: block r of `send` at `root` (`size * recv.len()`
    /// elements there; unused elsewhere) to rank r's `recv`.
    ///
    /// # Errors
    /// `Root`, `Count`.
    pub fn scatter<T: Scalar>(&self, send: &[T], recv: &mut [T], root: i32) -> Result<()> {
        let r = (|| {
            let c = self.intra("MPI_Scatter")?;
            let root = self.root_of(root)?;
            let n = c.size();
            if self.ctx.rank == root && send.len() != n * recv.len() {
                return Err(count("MPI_Scatter", n * recv.len(), send.len()));
            }
            let counts = vec![recv.len(); n];
            c.scatterv_t(root, send, &counts, &packed(&counts), recv)
        })();
        self.ret("MPI_Scatter", r)
    }

    /// `MPI_Scatterv`: `counts[r]` elements at `displs[r]` of `send` at
    /// `root` to rank r's `recv`.
    ///
    /// # Errors
    /// `Root`, `Arg`, `Count`.
    pub fn scatterv<T: Scalar>(
        &self,
        send: &[T],
        counts: &[usize],
        displs: &[usize],
        recv: &mut [T],
        root: i32,
    ) -> Result<()> {
        let r = (|| {
            let c = self.intra("MPI_Scatterv")?;
            let root = self.root_of(root)?;
            if self.ctx.rank == root {
                check_v("MPI_Scatterv", c.size(), counts, displs, send.len())?;
            }
            c.scatterv_t(root, send, counts, displs, recv)
        })();
        self.ret("MPI_Scatterv", r)
    }

    /// `MPI_Allgather`: every member gets every member's `send`, block
    /// `r` of `recv` from rank r. On an intercommunicator, the blocks of
    /// the remote group's members.
    ///
    /// # Errors
    /// `Count`.
    pub fn allgather<T: Scalar>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let r = (|| {
            self.proc_.check()?;
            if let Kind::Inter { remote, .. } = &self.inner.kind {
                return self.inter_allgather(send, recv, remote.size());
            }
            let n = self.size() as usize;
            if recv.len() != n * send.len() {
                return Err(count("MPI_Allgather", n * send.len(), recv.len()));
            }
            self.coll().allgather_t(send, recv)
        })();
        self.ret("MPI_Allgather", r)
    }

    fn inter_allgather<T: Scalar>(&self, send: &[T], recv: &mut [T], remote: usize) -> Result<()> {
        let local = self.local_coll();
        let n = self.inner.group.size();
        if recv.len() != remote * send.len() {
            return Err(count("MPI_Allgather", remote * send.len(), recv.len()));
        }
        // Any initialised values of the right length; the gather fills it.
        let mut mine = send.repeat(n);
        let counts = vec![send.len(); n];
        local.gatherv_t(0, send, &mut mine, &counts, &packed(&counts))?;
        if self.ctx.rank == 0 {
            self.coll()
                .sendrecv_t(0, &mine, 0, recv, crate::coll::tags::ALLGATHER + 8)?;
        }
        local.bcast_t(0, recv)
    }

    /// `MPI_Allgather` with `MPI_IN_PLACE`: this rank's block is already
    /// at block `rank` of `buf`.
    ///
    /// # Errors
    /// `Count` when `buf` is not a multiple of the size.
    pub fn allgather_in_place<T: Scalar>(&self, buf: &mut [T]) -> Result<()> {
        let r = (|| {
            let c = self.intra("MPI_Allgather")?;
            let n = c.size();
            if buf.len() % n != 0 {
                return Err(count("MPI_Allgather", buf.len().div_ceil(n) * n, buf.len()));
            }
            let counts = vec![buf.len() / n; n];
            c.allgatherv_t(buf, &counts, &packed(&counts))
        })();
        self.ret("MPI_Allgather", r)
    }

    /// `MPI_Allgatherv`: rank r's `send` (`counts[r]` elements) lands at
    /// `displs[r]` of every member's `recv`.
    ///
    /// # Errors
    /// `Arg`, `Count`.
    pub fn allgatherv<T: Scalar>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let r = (|| {
            let c = self.intra("MPI_Allgatherv")?;
            check_v("MPI_Allgatherv", c.size(), counts, displs, recv.len())?;
            let me = self.ctx.rank;
            if send.len() != counts[me] {
                return Err(count("MPI_Allgatherv", counts[me], send.len()));
            }
            recv[displs[me]..displs[me] + counts[me]].copy_from_slice(send);
            c.allgatherv_t(recv, counts, displs)
        })();
        self.ret("MPI_Allgatherv", r)
    }

    /// `MPI_Alltoall`: block r of `send` goes to rank r, whose block from
    /// this rank is block `rank` of its `recv`.
    ///
    /// # Errors
    /// `Count`.
    pub fn alltoall<T: Scalar>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let r = (|| {
            let c = self.intra("MPI_Alltoall")?;
            let n = c.size();
            if send.len() % n != 0 || recv.len() != send.len() {
                return Err(count(
                    "MPI_Alltoall",
                    send.len().div_ceil(n) * n,
                    recv.len(),
                ));
            }
            let counts = vec![send.len() / n; n];
            let d = packed(&counts);
            c.alltoallv_t(send, &counts, &d, recv, &counts, &d)
        })();
        self.ret("MPI_Alltoall", r)
    }

    /// `MPI_Alltoallv`.
    ///
    /// # Errors
    /// `Arg`, `Count`.
    #[allow(clippy::too_many_arguments)]
    pub fn alltoallv<T: Scalar>(
        &self,
        send: &[T],
        scounts: &[usize],
        sdispls: &[usize],
        recv: &mut [T],
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<()> {
        let r = (|| {
            let c = self.intra("MPI_Alltoallv")?;
            check_v(
                "MPI_Alltoallv (send)",
                c.size(),
                scounts,
                sdispls,
                send.len(),
            )?;
            check_v(
                "MPI_Alltoallv (receive)",
                c.size(),
                rcounts,
                rdispls,
                recv.len(),
            )?;
            c.alltoallv_t(send, scounts, sdispls, recv, rcounts, rdispls)
        })();
        self.ret("MPI_Alltoallv", r)
    }

    /// `MPI_Reduce_scatter_block`: the reduction of every member's `send`
    /// (`size * recv.len()` elements), block r to rank r's `recv`.
    ///
    /// # Errors
    /// `Op`, `Count`.
    pub fn reduce_scatter_block<T: Reducible>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: &Op,
    ) -> Result<()> {
        let r = (|| {
            let c = self.intra("MPI_Reduce_scatter_block")?;
            op.check::<T>()?;
            let n = c.size();
            if send.len() != n * recv.len() {
                return Err(count(
                    "MPI_Reduce_scatter_block",
                    n * recv.len(),
                    send.len(),
                ));
            }
            c.reduce_scatter_t(op, send, &vec![recv.len(); n], recv)
        })();
        self.ret("MPI_Reduce_scatter_block", r)
    }

    /// `MPI_Reduce_scatter`: as the block form with `counts[r]` elements
    /// for rank r.
    ///
    /// # Errors
    /// `Op`, `Arg`, `Count`.
    pub fn reduce_scatter<T: Reducible>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: &Op,
    ) -> Result<()> {
        let r = (|| {
            let c = self.intra("MPI_Reduce_scatter")?;
            op.check::<T>()?;
            check_v(
                "MPI_Reduce_scatter",
                c.size(),
                counts,
                &packed(counts),
                send.len(),
            )?;
            if recv.len() != counts[self.ctx.rank] {
                return Err(count(
                    "MPI_Reduce_scatter",
                    counts[self.ctx.rank],
                    recv.len(),
                ));
            }
            c.reduce_scatter_t(op, send, counts, recv)
        })();
        self.ret("MPI_Reduce_scatter", r)
    }

    /// `MPI_Scan`: rank r gets the reduction of ranks 0..=r.
    ///
    /// # Errors
    /// `Op`, `Count`.
    pub fn scan<T: Reducible>(&self, send: &[T], recv: &mut [T], op: &Op) -> Result<()> {
        let r = self.scan_inner("MPI_Scan", send, recv, op, false);
        self.ret("MPI_Scan", r)
    }

    /// `MPI_Exscan`: rank r > 0 gets the reduction of ranks 0..r; rank 0's
    /// `recv` is left as it was (MPI leaves it undefined).
    ///
    /// # Errors
    /// `Op`, `Count`.
    pub fn exscan<T: Reducible>(&self, send: &[T], recv: &mut [T], op: &Op) -> Result<()> {
        let r = self.scan_inner("MPI_Exscan", send, recv, op, true);
        self.ret("MPI_Exscan", r)
    }

    fn scan_inner<T: Reducible>(
        &self,
        what: &str,
        send: &[T],
        recv: &mut [T],
        op: &Op,
        exclusive: bool,
    ) -> Result<()> {
        let c = self.intra(what)?;
        op.check::<T>()?;
        if recv.len() != send.len() {
            return Err(count(what, send.len(), recv.len()));
        }
        c.scan_t(op, send, recv, exclusive)
    }
}

impl Communicator {
    /// `MPI_Gather` with `MPI_IN_PLACE` at the root: there `buf` holds the
    /// n blocks, the root's own already at block `root`; elsewhere `buf` is
    /// the block sent.
    ///
    /// # Errors
    /// `Root`, `Count` (at the root, `buf` not a multiple of the size).
    pub fn gather_in_place<T: Scalar>(&self, buf: &mut [T], root: i32) -> Result<()> {
        let r = self.gather_in_place_inner(buf, root);
        self.ret("MPI_Gather", r)
    }

    fn gather_in_place_inner<T: Scalar>(&self, buf: &mut [T], root: i32) -> Result<()> {
        let c = self.intra("MPI_Gather")?;
        let root = self.root_of(root)?;
        let n = c.size();
        if self.ctx.rank != root {
            let counts = vec![buf.len(); n];
            return c.gatherv_t(root, buf, &mut [], &counts, &packed(&counts));
        }
        if buf.len() % n != 0 {
            return Err(count("MPI_Gather", buf.len().div_ceil(n) * n, buf.len()));
        }
        let b = buf.len() / n;
        let mine = buf[root * b..(root + 1) * b].to_vec();
        let counts = vec![b; n];
        c.gatherv_t(root, &mine, buf, &counts, &packed(&counts))
    }

    /// `MPI_Scatter` with `MPI_IN_PLACE` at the root: there `buf` holds the
    /// n blocks and the root keeps its own where it is; elsewhere `buf`
    /// receives the block.
    ///
    /// # Errors
    /// `Root`, `Count`.
    pub fn scatter_in_place<T: Scalar>(&self, buf: &mut [T], root: i32) -> Result<()> {
        let r = self.scatter_in_place_inner(buf, root);
        self.ret("MPI_Scatter", r)
    }

    fn scatter_in_place_inner<T: Scalar>(&self, buf: &mut [T], root: i32) -> Result<()> {
        let c = self.intra("MPI_Scatter")?;
        let root = self.root_of(root)?;
        let n = c.size();
        if self.ctx.rank != root {
            return c.scatterv_t(root, &[], &vec![buf.len(); n], &vec![0; n], buf);
        }
        if buf.len() % n != 0 {
            return Err(count("MPI_Scatter", buf.len().div_ceil(n) * n, buf.len()));
        }
        let b = buf.len() / n;
        let counts = vec![b; n];
        let all = buf.to_vec();
        c.scatterv_t(
            root,
            &all,
            &counts,
            &packed(&counts),
            &mut buf[root * b..(root + 1) * b],
        )
    }

    /// `MPI_Alltoall` with `MPI_IN_PLACE`: block r of `buf` goes to rank r
    /// and is replaced by rank r's block for this rank.
    ///
    /// # Errors
    /// `Count`.
    pub fn alltoall_in_place<T: Scalar>(&self, buf: &mut [T]) -> Result<()> {
        let send = buf.to_vec();
        self.alltoall(&send, buf)
    }

    /// `MPI_Reduce_scatter_block` with `MPI_IN_PLACE`: `buf` holds the n
    /// blocks of input; block `rank` of the result lands in its first
    /// block.
    ///
    /// # Errors
    /// `Op`, `Count`.
    pub fn reduce_scatter_block_in_place<T: Reducible>(
        &self,
        buf: &mut [T],
        op: &Op,
    ) -> Result<()> {
        let n = self.size().max(1) as usize;
        if buf.len() % n != 0 {
            return self.ret(
                "MPI_Reduce_scatter_block",
                Err(count(
                    "MPI_Reduce_scatter_block",
                    buf.len().div_ceil(n) * n,
                    buf.len(),
                )),
            );
        }
        let send = buf.to_vec();
        self.reduce_scatter_block(&send, &mut buf[..send.len() / n], op)
    }

    /// `MPI_Scan` with `MPI_IN_PLACE`.
    ///
    /// # Errors
    /// `Op`.
    pub fn scan_in_place<T: Reducible>(&self, buf: &mut [T], op: &Op) -> Result<()> {
        let send = buf.to_vec();
        self.scan(&send, buf, op)
    }

    /// `MPI_Exscan` with `MPI_IN_PLACE` (rank 0's `buf` is left as it was).
    ///
    /// # Errors
    /// `Op`.
    pub fn exscan_in_place<T: Reducible>(&self, buf: &mut [T], op: &Op) -> Result<()> {
        let send = buf.to_vec();
        self.exscan(&send, buf, op)
    }
}

impl Communicator {
    /// The two-level layout, if collectives on this communicator should
    /// use one (`SHMPI_COLL_HIER`, else the cost model over the members'
    /// bindings). Built at the first collective that asks, by every member
    /// at once (collectives are called in the same order everywhere), from
    /// two splits; every member decides alike from shared data (the CPUs
    /// ranks published, the machine, the variable).
    pub(super) fn hierarchy(&self) -> Option<(&Communicator, Option<&Communicator>)> {
        let h = self.inner.hier.get_or_init(|| self.build_hierarchy());
        h.as_ref().map(|h| (&h.local, h.leaders.as_ref()))
    }

    fn build_hierarchy(&self) -> Option<super::Hier> {
        // Relaxed: set once, before the level communicators are shared.
        if self.inner.no_hier.load(Ordering::Relaxed) != 0 || self.is_inter() || self.size() < 2 {
            return None;
        }
        let hier = crate::coll::tuning::tuning().hier;
        if hier == Some(false) {
            return None;
        }
        let groups = self.numa_groups();
        let want = match hier {
            Some(w) => w,
            None => groups.as_ref().is_some_and(|g| g.len() > 1) && self.model_prefers_hierarchy(),
        };
        if !want {
            return None;
        }
        let me = self.ctx.rank;
        let color = groups
            .as_ref()
            .and_then(|g| g.iter().position(|grp| grp.contains(&me)))
            .unwrap_or(0) as i32;
        let local = self.split_intra(color, me as i32, "hierarchy").ok()??;
        let lead = if local.rank() == 0 {
            0
        } else {
            crate::group::UNDEFINED
        };
        let leaders = self.split_intra(lead, me as i32, "hierarchy").ok()?;
        for c in std::iter::once(&local).chain(leaders.as_ref()) {
            // Relaxed: see above.
            c.inner.no_hier.store(1, Ordering::Relaxed);
        }
        Some(super::Hier { local, leaders })
    }

    /// Whether `coll::model` estimates the hierarchy faster for the
    /// members' bindings.
    fn model_prefers_hierarchy(&self) -> bool {
        let cpus: Option<Vec<usize>> = {
            let e = self.proc_.p2p.lock();
            let t = e.transport();
            self.ctx.ranks.iter().map(|&w| t.rank_cpu(w)).collect()
        };
        let Some(cpus) = cpus else { return false };
        let Ok(m) = crate::topology::Machine::this() else {
            return false;
        };
        let places: Option<Vec<crate::topology::Placement>> = cpus
            .iter()
            .map(|&c| {
                let pu = m.pus.iter().find(|p| p.os == c)?;
                Some(crate::topology::Placement {
                    cpus: vec![c],
                    numa: pu.numa,
                    pu: c,
                })
            })
            .collect();
        places.is_some_and(|p| {
            let e = crate::coll::model::estimate(m, &p, &Default::default());
            e.hierarchical < e.flat
        })
    }

    /// Barrier in two levels: the node, its leaders, the node again.
    pub(super) fn hier_barrier(
        &self,
        local: &Communicator,
        leaders: Option<&Communicator>,
    ) -> Result<()> {
        local.coll().barrier()?;
        if let Some(l) = leaders {
            l.coll().barrier()?;
        }
        local.coll().barrier()
    }

    /// Allreduce in two levels (commutative operations only): reduce to
    /// the node's leader, allreduce among leaders, bcast in the node.
    pub(super) fn hier_allreduce<T: Reducible>(
        &self,
        local: &Communicator,
        leaders: Option<&Communicator>,
        buf: &mut [T],
        op: &Op,
    ) -> Result<()> {
        let data = buf.to_vec();
        local.coll().reduce_t(op, 0, &data, buf)?;
        if let Some(l) = leaders {
            l.coll().allreduce_t(op, buf)?;
        }
        local.coll().bcast_t(0, buf)
    }
}

/// Copies a finished schedule's working buffer (from `at`) into `out`.
fn read_into<'a, T: Scalar>(out: &'a mut [T], at: usize) -> Finish<'a> {
    Box::new(move |task| {
        let s = task
            .downcast_mut::<nbc::Sched<T>>()
            .expect("the task is the schedule this request started");
        out.copy_from_slice(&s.work[at..at + out.len()]);
    })
}

/// Nonblocking collectives' tags: `i32::MIN` plus 29 bits of their
/// sequence number, in `[i32::MIN, i32::MIN + 2^29)`, so each has a
/// second tag ([`nbc_second_tag`]) that no other takes, and neither is
/// `ANY_TAG` nor a blocking collective's (positive).
const NBC_TAG_MASK: u32 = (1 << 29) - 1;

/// The second tag of the nonblocking collective of tag `tag`, for a
/// schedule that needs two kinds of message between one pair (the
/// neighbourhood collectives of a grid): in `[i32::MIN + 2^29,
/// i32::MIN + 2^30)`, apart from every first tag. Derived, not taken, so
/// a persistent collective, whose tag is taken at its init, has it too.
pub(crate) fn nbc_second_tag(tag: i32) -> i32 {
    tag + (1 << 29)
}

impl Communicator {
    /// The tag of the next nonblocking collective on this communicator,
    /// for schedules built from point-to-point messages on the collective
    /// context outside `coll` (the C ABI's): members agree on it by
    /// starting nonblocking collectives in the same order, as MPI requires.
    pub(crate) fn next_nbc_tag(&self) -> i32 {
        self.nbc_tag()
    }

    fn nbc_tag(&self) -> i32 {
        // Relaxed: a counter; members agree on it by calling nonblocking
        // collectives in the same order, not through memory.
        let seq = self.inner.nbc_seq.fetch_add(1, Ordering::Relaxed);
        i32::MIN + (seq & NBC_TAG_MASK) as i32
    }

    fn start<'a, T: Scalar>(&'a self, s: nbc::Sched<T>, fin: Option<Finish<'a>>) -> Request<'a> {
        let id = self.proc_.p2p.lock().start_task(Box::new(s));
        Request::coll(&self.proc_, id, fin)
    }

    /// `MPI_Ibarrier`: completes once every member has started it.
    ///
    /// # Errors
    /// `Comm` on an intercommunicator.
    pub fn ibarrier(&self) -> Result<Request<'_>> {
        let r = self.ibarrier_inner();
        self.ret("MPI_Ibarrier", r)
    }

    fn ibarrier_inner(&self) -> Result<Request<'_>> {
        self.intra("MPI_Ibarrier")?;
        Ok(self.start(nbc::ibarrier(&self.ctx, self.nbc_tag()), None))
    }

    /// `MPI_Ibcast`: `buf` of `root` to every member once the request
    /// completes (the buffer stays borrowed until then).
    ///
    /// # Errors
    /// `Root`, `Comm` on an intercommunicator.
    pub fn ibcast<'a, T: Scalar>(&'a self, buf: &'a mut [T], root: i32) -> Result<Request<'a>> {
        let r = self.ibcast_inner(buf, root);
        self.ret("MPI_Ibcast", r)
    }

    fn ibcast_inner<'a, T: Scalar>(&'a self, buf: &'a mut [T], root: i32) -> Result<Request<'a>> {
        self.intra("MPI_Ibcast")?;
        let root = self.root_of(root)?;
        let s = nbc::ibcast(&self.ctx, self.nbc_tag(), root, buf.to_vec());
        Ok(self.start(s, Some(read_into(buf, 0))))
    }

    /// `MPI_Ireduce`: the reduction lands in `recv` at `root` when the
    /// request completes (`recv` may be empty elsewhere).
    ///
    /// # Errors
    /// `Root`, `Op`, `Count`.
    pub fn ireduce<'a, T: Reducible>(
        &'a self,
        send: &[T],
        recv: &'a mut [T],
        op: &Op,
        root: i32,
    ) -> Result<Request<'a>> {
        let r = self.ireduce_inner(send, recv, op, root);
        self.ret("MPI_Ireduce", r)
    }

    fn ireduce_inner<'a, T: Reducible>(
        &'a self,
        send: &[T],
        recv: &'a mut [T],
        op: &Op,
        root: i32,
    ) -> Result<Request<'a>> {
        self.intra("MPI_Ireduce")?;
        let root = self.root_of(root)?;
        op.check::<T>()?;
        let me_root = self.ctx.rank == root;
        if me_root && recv.len() != send.len() {
            return Err(count("MPI_Ireduce", send.len(), recv.len()));
        }
        let s = nbc::ireduce(&self.ctx, self.nbc_tag(), op, root, send.to_vec());
        Ok(self.start(s, me_root.then(move || read_into(recv, 0))))
    }

    /// `MPI_Iallreduce`: the reduction lands in `recv` when the request
    /// completes.
    ///
    /// # Errors
    /// `Op`, `Count`.
    pub fn iallreduce<'a, T: Reducible>(
        &'a self,
        send: &[T],
        recv: &'a mut [T],
        op: &Op,
    ) -> Result<Request<'a>> {
        let r = self.iallreduce_inner(send, recv, op);
        self.ret("MPI_Iallreduce", r)
    }

    fn iallreduce_inner<'a, T: Reducible>(
        &'a self,
        send: &[T],
        recv: &'a mut [T],
        op: &Op,
    ) -> Result<Request<'a>> {
        self.intra("MPI_Iallreduce")?;
        op.check::<T>()?;
        if recv.len() != send.len() {
            return Err(count("MPI_Iallreduce", send.len(), recv.len()));
        }
        let s = nbc::iallreduce(&self.ctx, self.nbc_tag(), op, send.to_vec());
        Ok(self.start(s, Some(read_into(recv, 0))))
    }

    /// `MPI_Igather`: block r of `recv` at `root` from rank r.
    ///
    /// # Errors
    /// `Root`, `Count`.
    pub fn igather<'a, T: Scalar>(
        &'a self,
        send: &[T],
        recv: &'a mut [T],
        root: i32,
    ) -> Result<Request<'a>> {
        let r = self.igather_inner(send, recv, root);
        self.ret("MPI_Igather", r)
    }

    fn igather_inner<'a, T: Scalar>(
        &'a self,
        send: &[T],
        recv: &'a mut [T],
        root: i32,
    ) -> Result<Request<'a>> {
        let c = self.intra("MPI_Igather")?;
        let root = self.root_of(root)?;
        let (n, b, me) = (c.size(), send.len(), self.ctx.rank);
        let work = if me == root {
            if recv.len() != n * b {
                return Err(count("MPI_Igather", n * b, recv.len()));
            }
            // Every block starts as this rank's; the others arrive.
            send.repeat(n)
        } else {
            send.to_vec()
        };
        let s = nbc::igather(&self.ctx, self.nbc_tag(), root, b, work);
        Ok(self.start(s, (me == root).then(move || read_into(recv, 0))))
    }

    /// `MPI_Iallgather`: block r of `recv` from rank r, everywhere.
    ///
    /// # Errors
    /// `Count`.
    pub fn iallgather<'a, T: Scalar>(
        &'a self,
        send: &[T],
        recv: &'a mut [T],
    ) -> Result<Request<'a>> {
        let r = self.iallgather_inner(send, recv);
        self.ret("MPI_Iallgather", r)
    }

    fn iallgather_inner<'a, T: Scalar>(
        &'a self,
        send: &[T],
        recv: &'a mut [T],
    ) -> Result<Request<'a>> {
        let c = self.intra("MPI_Iallgather")?;
        let (n, b) = (c.size(), send.len());
        if recv.len() != n * b {
            return Err(count("MPI_Iallgather", n * b, recv.len()));
        }
        // Every block starts as this rank's; the others arrive.
        let w = send.repeat(n);
        let s = nbc::iallgather(&self.ctx, self.nbc_tag(), b, w);
        Ok(self.start(s, Some(read_into(recv, 0))))
    }

    /// `MPI_Ialltoall`: block r of `send` to rank r; block r of `recv`
    /// from rank r.
    ///
    /// # Errors
    /// `Count`.
    pub fn ialltoall<'a, T: Scalar>(
        &'a self,
        send: &[T],
        recv: &'a mut [T],
    ) -> Result<Request<'a>> {
        let r = self.ialltoall_inner(send, recv);
        self.ret("MPI_Ialltoall", r)
    }

    fn ialltoall_inner<'a, T: Scalar>(
        &'a self,
        send: &[T],
        recv: &'a mut [T],
    ) -> Result<Request<'a>> {
        let c = self.intra("MPI_Ialltoall")?;
        let n = c.size();
        if send.len() % n != 0 || recv.len() != send.len() {
            return Err(count(
                "MPI_Ialltoall",
                send.len().div_ceil(n) * n,
                recv.len(),
            ));
        }
        let b = send.len() / n;
        let mut w = send.to_vec();
        w.extend_from_slice(send);
        let s = nbc::ialltoall(&self.ctx, self.nbc_tag(), b, w);
        Ok(self.start(s, Some(read_into(recv, n * b))))
    }
}
