//! The collective algorithms over point-to-point, typed.
//!
//! Each takes slices whose lengths the caller has checked against the
//! communicator size; a peer that passed a different count shows up as a
//! message of the wrong length and fails with `Count` (or `Truncate`)
//! instead of corrupting memory. References: the binomial, recursive
//! doubling, ring and pairwise algorithms are the classic ones of Thakur,
//! Rabenseifner and Gropp, "Optimization of Collective Communication
//! Operations in MPICH" (IJHPCA 2005); the broadcast for large messages is
//! van de Geijn's scatter + allgather.

use super::op::{Op, Reducible};
use super::tags;
use super::tuning::{tuning, Algo};
use super::Coll;
use crate::datatype::Scalar;
use crate::error::{Error, ErrorClass, Result};
use crate::p2p::Post;
use crate::transport::bytes::{as_bytes, as_bytes_mut, scratch};
use std::cell::RefCell;

thread_local! {
    /// Two scratch buffers per thread for reductions (see `reduce_t`).
    static SCRATCH: RefCell<(Vec<u64>, Vec<u64>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Bytes of `n` elements of `T`.
fn bytes<T>(n: usize) -> usize {
    n * std::mem::size_of::<T>()
}

/// The chunk of `len` elements that block `k` of `n` covers.
fn chunk(len: usize, n: usize, k: usize) -> std::ops::Range<usize> {
    let c = len.div_ceil(n.max(1));
    (k * c).min(len)..((k + 1) * c).min(len)
}

impl Coll<'_> {
    /// Sends typed data.
    pub fn send_t<T: Scalar>(&self, to: usize, tag: i32, data: &[T]) -> Result<()> {
        self.send(to, tag, as_bytes(data))
    }

    /// Sends typed data, synchronously when it is large (at least
    /// `SHMPI_COLL_LARGE` bytes, or `SHMPI_COLL_SYNC` where a blocking
    /// send of its size to `to` would go by rendezvous): the send returns
    /// once the receiver has matched it, so a root that only sends (bcast,
    /// or a reduce's leaves) cannot run ahead of its receivers by more
    /// than one collective and pile megabytes into their unexpected
    /// queues; and, as it waits anyway, it may go by rendezvous
    /// (`p2p::blocking_hold`).
    pub fn send_flow_t<T: Scalar>(&self, to: usize, tag: i32, data: &[T]) -> Result<()> {
        let len = bytes::<T>(data.len());
        let t = tuning();
        let sync = len >= t.large
            || (len >= t.sync
                && self
                    .sh
                    .lock()
                    .transport()
                    .blocking_rendezvous(self.ctx.ranks[to], len));
        self.sh.send_bytes(
            self.ctx.coll_id(),
            self.ctx.rank as u32,
            self.ctx.ranks[to],
            tag,
            as_bytes(data),
            sync,
        )
    }

    /// Receives exactly `buf.len()` elements.
    ///
    /// # Errors
    /// `Count` when the peer sent another length (it passed another
    /// count), `Truncate` when longer.
    pub fn recv_t<T: Scalar>(&self, from: usize, tag: i32, buf: &mut [T]) -> Result<()> {
        let want = bytes::<T>(buf.len());
        let got = self.recv(from, tag, as_bytes_mut(buf))?;
        exact(got, want, from)
    }

    /// Exchanges with one or two peers: receives exactly `buf.len()`
    /// elements from `from` while sending `data` to `to`.
    ///
    /// # Errors
    /// As [`recv_t`](Self::recv_t).
    pub fn sendrecv_t<T: Scalar>(
        &self,
        to: usize,
        data: &[T],
        from: usize,
        buf: &mut [T],
        tag: i32,
    ) -> Result<()> {
        let want = bytes::<T>(buf.len());
        let st = self.sh.sendrecv_bytes(
            self.ctx.coll_id(),
            self.ctx.rank as u32,
            self.ctx.ranks[to],
            tag,
            as_bytes(data),
            from as i32,
            Some(self.ctx.ranks[from]),
            tag,
            as_bytes_mut(buf),
        )?;
        exact(st.bytes, want, from)
    }

    // ------------------------------------------------------------ bcast

    /// Broadcast of `buf` from `root` (typed): binomial below the large
    /// threshold, scatter + ring allgather from it (`SHMPI_COLL_BCAST`).
    ///
    /// # Errors
    /// `Count` when members passed different lengths.
    pub fn bcast_t<T: Scalar>(&self, root: usize, buf: &mut [T]) -> Result<()> {
        let n = self.size();
        if n == 1 {
            return Ok(());
        }
        if let Some(r) = self.shm_region_rooted(bytes::<T>(buf.len())) {
            return r.bcast(root, as_bytes_mut(buf), &mut |c, i| self.sh.wait_flag(c, i));
        }
        let algo = match tuning().bcast {
            // Scatter + allgather moves less than a tree only from about 8
            // ranks on (log2 n full copies against about 2).
            Algo::Auto if bytes::<T>(buf.len()) >= tuning().large && buf.len() >= n && n >= 8 => {
                Algo::ScatterAllgather
            }
            Algo::Auto => Algo::Binomial,
            a => a,
        };
        match algo {
            Algo::ScatterAllgather => self.bcast_scatter_allgather(root, buf),
            _ => self.bcast_binomial(root, buf),
        }
    }

    fn bcast_binomial<T: Scalar>(&self, root: usize, buf: &mut [T]) -> Result<()> {
        let n = self.size();
        let rel = (self.ctx.rank + n - root) % n;
        let mut mask = 1;
        while mask < n {
            if rel & mask != 0 {
                self.recv_t((rel - mask + root) % n, tags::BCAST, buf)?;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if rel + mask < n {
                self.send_flow_t((rel + mask + root) % n, tags::BCAST, buf)?;
            }
            mask >>= 1;
        }
        Ok(())
    }

    fn bcast_scatter_allgather<T: Scalar>(&self, root: usize, buf: &mut [T]) -> Result<()> {
        let n = self.size();
        let len = buf.len();
        let rel = (self.ctx.rank + n - root) % n;
        let real = |r: usize| (r + root) % n;
        // Blocks [a, b) of relative ranks as an element range.
        let span = |a: usize, b: usize| chunk(len, n, a).start..chunk(len, n, b.min(n) - 1).end;
        // Binomial scatter: a rank receives its subtree's blocks.
        let mut mask = 1;
        while mask < n {
            if rel & mask != 0 {
                let r = span(rel, rel + mask);
                self.recv_t(real(rel - mask), tags::BCAST, &mut buf[r])?;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if rel + mask < n {
                let r = span(rel + mask, rel + 2 * mask);
                self.send_t(real(rel + mask), tags::BCAST, &buf[r])?;
            }
            mask >>= 1;
        }
        // Ring allgather of the blocks (neighbours in relative order are
        // neighbours in rank order).
        self.ring_allgather(buf, &|k| chunk(len, n, k), rel, tags::BCAST + 1)
    }

    /// Ring allgather: in n - 1 steps every rank passes its right-hand
    /// neighbour the block it received last, starting with block `first`
    /// (the one it holds), so every rank ends with all n. `block(k)` is
    /// where block k lies in `buf`; blocks are disjoint.
    fn ring_allgather<T: Scalar>(
        &self,
        buf: &mut [T],
        block: &dyn Fn(usize) -> std::ops::Range<usize>,
        first: usize,
        tag: i32,
    ) -> Result<()> {
        let n = self.size();
        let me = self.ctx.rank;
        let (left, right) = ((me + n - 1) % n, (me + 1) % n);
        for step in 0..n - 1 {
            let out = block((first + n - step) % n);
            let inc = block((first + 2 * n - step - 1) % n);
            let (data, dst) = disjoint(buf, out, inc);
            self.sendrecv_t(right, data, left, dst, tag)?;
        }
        Ok(())
    }

    // ------------------------------------------------------------ reduce

    /// Reduces `data` with `op` into `out` at `root` (`out` is ignored
    /// elsewhere). Binomial tree; for non-commutative operations (and
    /// with `SHMPI_COLL_REDUCE=linear`) in rank order.
    ///
    /// # Errors
    /// `Count` when members passed different lengths.
    pub fn reduce_t<T: Reducible>(
        &self,
        op: &Op,
        root: usize,
        data: &[T],
        out: &mut [T],
    ) -> Result<()> {
        let n = self.size();
        if let Some(r) = self.shm_region_rooted(bytes::<T>(data.len())) {
            return match r.gather(root, as_bytes(data), &mut |c, i| self.sh.wait_flag(c, i))? {
                Some(x) => fold_exchange(op, &x, out),
                None => Ok(()),
            };
        }
        if n == 1 {
            out.copy_from_slice(data);
            return Ok(());
        }
        SCRATCH.with(|s| match s.try_borrow_mut() {
            Ok(mut b) => {
                let (acc_buf, tmp_buf) = &mut *b;
                self.reduce_scratch(op, root, data, out, acc_buf, tmp_buf)
            }
            // Re-entered (a user operation that calls a collective): use
            // buffers of its own.
            Err(_) => self.reduce_scratch(op, root, data, out, &mut Vec::new(), &mut Vec::new()),
        })
    }

    /// `reduce_t` over reusable scratch buffers: `acc` holds this rank's
    /// partial result once it has received anything (until then `data`
    /// is), `tmp` the part being received.
    fn reduce_scratch<T: Reducible>(
        &self,
        op: &Op,
        root: usize,
        data: &[T],
        out: &mut [T],
        acc_buf: &mut Vec<u64>,
        tmp_buf: &mut Vec<u64>,
    ) -> Result<()> {
        let n = self.size();
        let me = self.ctx.rank;
        let len = data.len();
        let mut acc: &mut [T] = scratch(acc_buf, len);
        let mut tmp: &mut [T] = scratch(tmp_buf, len);
        let mut have = false; // acc holds the partial result (else data)
        if tuning().reduce == Algo::Linear {
            if me != root {
                return self.send_flow_t(root, tags::REDUCE, data);
            }
            // acc holds the running reduction of ranks 0..r in order.
            for r in 0..n {
                let v: &mut [T] = if r == me {
                    tmp.copy_from_slice(data);
                    tmp
                } else {
                    self.recv_t(r, tags::REDUCE, tmp)?;
                    tmp
                };
                if r > 0 {
                    op.apply(acc, v);
                }
                acc.copy_from_slice(v);
            }
            out.copy_from_slice(acc);
            return Ok(());
        }
        // Commutative: a binomial tree rooted at `root`. Otherwise rooted
        // at 0, where relative order is rank order, then moved.
        let base = if op.commutes() { root } else { 0 };
        let rel = (me + n - base) % n;
        let mut mask = 1;
        while mask < n {
            if rel & mask != 0 {
                let part: &[T] = if have { acc } else { data };
                self.send_flow_t((rel - mask + base) % n, tags::REDUCE, part)?;
                break;
            }
            if rel + mask < n {
                let child = (rel + mask + base) % n;
                if me == root && base == root && mask >= n - mask {
                    // The root's last part lands in `out`, where the
                    // result goes: out = partial op out, no copy.
                    self.recv_t(child, tags::REDUCE, out)?;
                    op.apply(if have { &*acc } else { data }, out);
                    return Ok(());
                }
                self.recv_t(child, tags::REDUCE, tmp)?;
                // The partial result covers the lower ranks: tmp = it op tmp,
                // which becomes the partial result (the buffers swap roles).
                op.apply(if have { &*acc } else { data }, tmp);
                std::mem::swap(&mut acc, &mut tmp);
                have = true;
            }
            mask <<= 1;
        }
        if base != root {
            if me == base {
                let part: &[T] = if have { acc } else { data };
                self.send_flow_t(root, tags::REDUCE + 1, part)?;
            } else if me == root {
                self.recv_t(base, tags::REDUCE + 1, out)?;
                return Ok(());
            }
        }
        if me == root {
            out.copy_from_slice(if have { &*acc } else { data });
        }
        Ok(())
    }

    // ------------------------------------------------------------ allreduce

    /// Every member gets the reduction of every member's `buf`, in `buf`.
    /// Recursive doubling below the large threshold (and for
    /// non-commutative operations), ring reduce-scatter + allgather from
    /// it (`SHMPI_COLL_ALLREDUCE`).
    ///
    /// # Errors
    /// `Count` when members passed different lengths.
    pub fn allreduce_t<T: Reducible>(&self, op: &Op, buf: &mut [T]) -> Result<()> {
        let n = self.size();
        if n == 1 {
            return Ok(());
        }
        if let Some(r) = self.shm_region(bytes::<T>(buf.len())) {
            let x = r.exchange(as_bytes(buf), &mut |c, i| self.sh.wait_flag(c, i))?;
            return fold_exchange(op, &x, buf);
        }
        let algo = match tuning().allreduce {
            Algo::Auto
                if bytes::<T>(buf.len()) >= tuning().large && buf.len() >= n && op.commutes() =>
            {
                Algo::Ring
            }
            Algo::Auto => Algo::RecursiveDoubling,
            Algo::Ring if !op.commutes() => Algo::RecursiveDoubling,
            a => a,
        };
        match algo {
            Algo::Ring => self.allreduce_ring(op, buf),
            Algo::ReduceBcast => {
                let data = buf.to_vec();
                self.reduce_t(op, 0, &data, buf)?;
                self.bcast_t(0, buf)
            }
            _ => self.allreduce_recursive_doubling(op, buf),
        }
    }

    fn allreduce_recursive_doubling<T: Reducible>(&self, op: &Op, buf: &mut [T]) -> Result<()> {
        let tag = tags::ALLREDUCE;
        let mut tmp = buf.to_vec();
        for step in recursive_doubling(self.size(), self.ctx.rank) {
            match step {
                RdStep::FoldSend(p) => self.send_t(p, tag, buf)?,
                RdStep::FoldRecv(p) => {
                    self.recv_t(p, tag, &mut tmp)?;
                    // tmp (the lower rank) first: buf = tmp op buf.
                    op.apply(&tmp, buf);
                }
                RdStep::Exchange(p) => {
                    // Sent from `buf` itself: a copy to send from cost a
                    // memcpy and, by rendezvous, a read of fresh pages.
                    self.sendrecv_t(p, buf, p, &mut tmp, tag + 1)?;
                    if p < self.ctx.rank {
                        // tmp covers lower ranks: buf = tmp op buf.
                        op.apply(&tmp, buf);
                    } else {
                        // buf covers lower ranks: buf = buf op tmp.
                        op.apply(buf, &mut tmp);
                        buf.copy_from_slice(&tmp);
                    }
                }
                RdStep::ResultTo(p) => self.send_t(p, tag + 2, buf)?,
                RdStep::ResultFrom(p) => self.recv_t(p, tag + 2, buf)?,
            }
        }
        Ok(())
    }

    /// Ring reduce-scatter: after it, rank r holds the full reduction of
    /// block `(r + 1) % n` (commutative operations only).
    fn reduce_scatter_ring<T: Reducible>(
        &self,
        op: &Op,
        buf: &mut [T],
        block: &dyn Fn(usize) -> std::ops::Range<usize>,
    ) -> Result<()> {
        let n = self.size();
        let me = self.ctx.rank;
        let (left, right) = ((me + n - 1) % n, (me + 1) % n);
        // The incoming block lands in `tmp` (the longest block's length),
        // the outgoing one is sent from `buf` itself.
        let longest = (0..n).map(|k| block(k).len()).max().unwrap_or(0);
        let mut tmp = buf[..longest].to_vec();
        for step in 0..n - 1 {
            let out = block((me + n - step) % n);
            let inc = block((me + n - step - 1) % n);
            let got = &mut tmp[..inc.len()];
            self.sendrecv_t(right, &buf[out], left, got, tags::ALLREDUCE + 3)?;
            op.apply(got, &mut buf[inc]);
        }
        Ok(())
    }

    fn allreduce_ring<T: Reducible>(&self, op: &Op, buf: &mut [T]) -> Result<()> {
        let n = self.size();
        let me = self.ctx.rank;
        let len = buf.len();
        let block = |k: usize| chunk(len, n, k);
        self.reduce_scatter_ring(op, buf, &block)?;
        // Ring allgather: rank r starts with block r + 1.
        self.ring_allgather(buf, &block, (me + 1) % n, tags::ALLREDUCE + 4)
    }

    // ------------------------------------------------------------ gather / scatter

    /// Gathers `counts[r]` elements from each rank r into `out` at
    /// `displs[r]` at `root` (linear: the root receives from each rank in
    /// turn, straight into its place).
    ///
    /// # Errors
    /// `Count` when a member sent another length than the root expects.
    pub fn gatherv_t<T: Scalar>(
        &self,
        root: usize,
        data: &[T],
        out: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let me = self.ctx.rank;
        if me != root {
            return self.send_t(root, tags::GATHER, data);
        }
        for r in 0..self.size() {
            let dst = &mut out[displs[r]..displs[r] + counts[r]];
            if r == root {
                if data.len() != counts[r] {
                    return Err(count_error(r, counts[r], data.len()));
                }
                dst.copy_from_slice(data);
            } else {
                self.recv_t(r, tags::GATHER, dst)?;
            }
        }
        Ok(())
    }

    /// Scatters block `r` (`counts[r]` elements at `displs[r]` of `data`,
    /// significant at `root`) to each rank r's `out`.
    ///
    /// # Errors
    /// `Count` when a member's buffer does not match the root's count.
    pub fn scatterv_t<T: Scalar>(
        &self,
        root: usize,
        data: &[T],
        counts: &[usize],
        displs: &[usize],
        out: &mut [T],
    ) -> Result<()> {
        let me = self.ctx.rank;
        if me != root {
            return self.recv_t(root, tags::SCATTER, out);
        }
        for r in 0..self.size() {
            let src = &data[displs[r]..displs[r] + counts[r]];
            if r == root {
                if out.len() != counts[r] {
                    return Err(count_error(r, counts[r], out.len()));
                }
                out.copy_from_slice(src);
            } else {
                self.send_t(r, tags::SCATTER, src)?;
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------ allgather

    /// Every member gets block r (`counts[r]` elements at `displs[r]` of
    /// `out`) from rank r; this rank's own block must already be in
    /// place. Ring, or recursive doubling (equal blocks, power-of-two
    /// sizes), or gather + bcast (`SHMPI_COLL_ALLGATHER`).
    ///
    /// # Errors
    /// `Count` when members passed different counts.
    pub fn allgatherv_t<T: Scalar>(
        &self,
        out: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let n = self.size();
        if n == 1 {
            return Ok(());
        }
        let equal = counts.iter().all(|&c| c == counts[0]);
        let contiguous = (0..n).all(|r| displs[r] == r * counts[0]);
        let total: usize = counts.iter().sum();
        let algo = match tuning().allgather {
            Algo::Auto
                if bytes::<T>(total) < tuning().large
                    && n.is_power_of_two()
                    && equal
                    && contiguous =>
            {
                Algo::RecursiveDoubling
            }
            Algo::Auto => Algo::Ring,
            Algo::RecursiveDoubling if !(n.is_power_of_two() && equal && contiguous) => Algo::Ring,
            a => a,
        };
        let me = self.ctx.rank;
        let block = |r: usize| displs[r]..displs[r] + counts[r];
        if equal && contiguous {
            if let Some(r) = self.shm_region(bytes::<T>(counts[0])) {
                let mine = out[block(me)].to_vec();
                let x = r.exchange(as_bytes(&mine), &mut |c, i| self.sh.wait_flag(c, i))?;
                for k in 0..n {
                    x.read(k, as_bytes_mut(&mut out[block(k)]))?;
                }
                return Ok(());
            }
        }
        match algo {
            Algo::RecursiveDoubling => {
                // After the round with `mask`, a rank holds the blocks of
                // its aligned group of 2*mask ranks.
                let c = counts[0];
                let mut mask = 1;
                while mask < n {
                    let dst = me ^ mask;
                    let my_start = (me & !(mask - 1)) * c;
                    let their_start = (dst & !(mask - 1)) * c;
                    let len = mask * c;
                    // The two groups' blocks are disjoint parts of `out`:
                    // sent from it and received into it, with no copy.
                    let (data, into) = disjoint(
                        out,
                        my_start..my_start + len,
                        their_start..their_start + len,
                    );
                    self.sendrecv_t(dst, data, dst, into, tags::ALLGATHER)?;
                    mask <<= 1;
                }
                Ok(())
            }
            Algo::GatherBcast => {
                let mine = out[block(me)].to_vec();
                let mut all = out.to_vec();
                self.gatherv_t(0, &mine, &mut all, counts, displs)?;
                if me == 0 {
                    out.copy_from_slice(&all);
                }
                self.bcast_t(0, out)
            }
            _ => self.ring_allgather(out, &block, me, tags::ALLGATHER + 1),
        }
    }

    /// Every member gets every member's `mine` (all of one length), block
    /// r of `all` from rank r.
    ///
    /// # Errors
    /// `Count` when members passed different lengths.
    pub fn allgather_t<T: Scalar>(&self, mine: &[T], all: &mut [T]) -> Result<()> {
        let (n, b, me) = (self.size(), mine.len(), self.ctx.rank);
        all[me * b..(me + 1) * b].copy_from_slice(mine);
        let counts = vec![b; n];
        let displs: Vec<usize> = (0..n).map(|r| r * b).collect();
        self.allgatherv_t(all, &counts, &displs)
    }

    // ------------------------------------------------------------ alltoall

    /// Block r of `data` (`scounts[r]` at `sdispls[r]`) goes to rank r,
    /// whose block from this rank lands at `rdispls[me]` of its `out`.
    /// Pairwise exchange in n - 1 steps, or linear (all at once:
    /// `SHMPI_COLL_ALLTOALL=linear`, every receive posted first).
    ///
    /// # Errors
    /// `Count` when a peer sent another count than this rank expects.
    #[allow(clippy::too_many_arguments)]
    pub fn alltoallv_t<T: Scalar>(
        &self,
        data: &[T],
        scounts: &[usize],
        sdispls: &[usize],
        out: &mut [T],
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<()> {
        let n = self.size();
        let me = self.ctx.rank;
        let own = &data[sdispls[me]..sdispls[me] + scounts[me]];
        if own.len() != rcounts[me] {
            return Err(count_error(me, rcounts[me], own.len()));
        }
        out[rdispls[me]..rdispls[me] + rcounts[me]].copy_from_slice(own);
        if tuning().alltoall == Algo::Linear {
            // Every receive posted first, then every send, then the waits:
            // no send waits on a receive that is not posted, whether it is
            // buffered in a ring or goes by rendezvous.
            let froms: Vec<usize> = (1..n).map(|s| (me + n - s) % n).collect();
            let ranges: Vec<std::ops::Range<usize>> = froms
                .iter()
                .map(|&f| rdispls[f]..rdispls[f] + rcounts[f])
                .collect();
            let posts = froms
                .iter()
                .zip(disjoint_mut(out, &ranges)?)
                .map(|(&f, b)| Post {
                    src: f as i32,
                    peer: Some(self.ctx.ranks[f]),
                    tag: tags::ALLTOALL,
                    buf: as_bytes_mut(b),
                })
                .collect();
            let sends: Vec<(usize, i32, &[u8])> = (1..n)
                .map(|s| {
                    let to = (me + s) % n;
                    let block = &data[sdispls[to]..sdispls[to] + scounts[to]];
                    (self.ctx.ranks[to], tags::ALLTOALL, as_bytes(block))
                })
                .collect();
            let st = self
                .sh
                .exchange_bytes(self.ctx.coll_id(), me as u32, &sends, posts)?;
            for (&f, st) in froms.iter().zip(st) {
                exact(st.bytes, bytes::<T>(rcounts[f]), f)?;
            }
            return Ok(());
        }
        for s in 1..n {
            let to = (me + s) % n;
            let from = (me + n - s) % n;
            self.sendrecv_t(
                to,
                &data[sdispls[to]..sdispls[to] + scounts[to]],
                from,
                &mut out[rdispls[from]..rdispls[from] + rcounts[from]],
                tags::ALLTOALL + 1,
            )?;
        }
        Ok(())
    }

    // ------------------------------------------------------------ reduce_scatter

    /// Reduces `buf` (all members' `buf`s, element-wise) and leaves block
    /// r (`counts[r]` elements, blocks in rank order) at rank r in `out`.
    /// Ring for commutative operations; reduce to rank 0 + scatter for
    /// the others (rank order).
    ///
    /// # Errors
    /// `Count` when members passed different counts.
    pub fn reduce_scatter_t<T: Reducible>(
        &self,
        op: &Op,
        buf: &[T],
        counts: &[usize],
        out: &mut [T],
    ) -> Result<()> {
        let n = self.size();
        let me = self.ctx.rank;
        let mut displs = vec![0; n];
        for r in 1..n {
            displs[r] = displs[r - 1] + counts[r - 1];
        }
        if op.commutes() && n > 1 {
            let mut work = buf.to_vec();
            // The ring leaves block (r + 1) % n at rank r; shift the
            // numbering so that rank r ends with block r.
            let block = |k: usize| {
                let b = (k + n - 1) % n;
                displs[b]..displs[b] + counts[b]
            };
            self.reduce_scatter_ring(op, &mut work, &block)?;
            out.copy_from_slice(&work[displs[me]..displs[me] + counts[me]]);
            return Ok(());
        }
        let mut all = if me == 0 { buf.to_vec() } else { Vec::new() };
        self.reduce_t(op, 0, buf, &mut all)?;
        self.scatterv_t(0, &all, counts, &displs, out)
    }

    // ------------------------------------------------------------ scan

    /// Inclusive (`exclusive = false`) or exclusive prefix reduction in
    /// rank order, recursive doubling. With `exclusive`, rank 0's `out` is
    /// left as it was (MPI leaves it undefined).
    ///
    /// # Errors
    /// `Count` when members passed different lengths.
    pub fn scan_t<T: Reducible>(
        &self,
        op: &Op,
        data: &[T],
        out: &mut [T],
        exclusive: bool,
    ) -> Result<()> {
        let n = self.size();
        let me = self.ctx.rank;
        let mut partial = data.to_vec();
        let mut tmp = data.to_vec();
        if !exclusive {
            out.copy_from_slice(data);
        }
        let mut have = !exclusive;
        let mut mask = 1;
        while mask < n {
            let dst = me ^ mask;
            if dst < n {
                // Sent from `partial` itself, which the exchange leaves as
                // it is.
                self.sendrecv_t(dst, &partial, dst, &mut tmp, tags::SCAN)?;
                if me > dst {
                    // tmp covers lower ranks.
                    op.apply(&tmp, &mut partial);
                    if have {
                        op.apply(&tmp, out);
                    } else {
                        out.copy_from_slice(&tmp);
                        have = true;
                    }
                } else if op.commutes() {
                    op.apply(&tmp, &mut partial);
                } else {
                    // partial covers lower ranks: partial = partial op tmp
                    // (computed in tmp, which then takes partial's place).
                    op.apply(&partial, &mut tmp);
                    std::mem::swap(&mut partial, &mut tmp);
                }
            }
            mask <<= 1;
        }
        Ok(())
    }
}

/// `out = p[0] op p[1] op ... op p[n-1]` over the members' payloads of
/// an exchange, in rank order (every member computes the same, bit for
/// bit), without allocating for small counts.
fn fold_exchange<T: Reducible>(
    op: &Op,
    x: &crate::transport::shmcoll::Exchange<'_>,
    out: &mut [T],
) -> Result<()> {
    let len = out.len();
    if len == 0 {
        return Ok(());
    }
    let mut small = [out[0]; 64];
    let mut big = Vec::new();
    let tmp: &mut [T] = if len <= small.len() {
        &mut small[..len]
    } else {
        big.extend_from_slice(out);
        &mut big
    };
    x.read(0, as_bytes_mut(out))?;
    for k in 1..x.members() {
        x.read(k, as_bytes_mut(tmp))?;
        // out holds ranks 0..k: tmp = out op tmp.
        op.apply(out, tmp);
        out.copy_from_slice(tmp);
    }
    Ok(())
}

/// One step of recursive doubling with the fold for non-powers of two
/// (Thakur, Rabenseifner and Gropp), for one rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RdStep {
    /// An even rank among the first 2·rem hands its data to the next odd
    /// one and sits out.
    FoldSend(usize),
    /// The odd rank takes it (the sender is the lower rank).
    FoldRecv(usize),
    /// Swap partial results with this partner and combine (the lower rank's
    /// part first).
    Exchange(usize),
    /// The odd rank gives the result back to the one that sat out.
    ResultTo(usize),
    /// The rank that sat out takes the result.
    ResultFrom(usize),
}

/// The recursive-doubling steps of rank `me` of `n` (shared by the
/// blocking and nonblocking allreduce).
pub(super) fn recursive_doubling(n: usize, me: usize) -> Vec<RdStep> {
    let mut v = Vec::new();
    if n < 2 {
        return v;
    }
    let pof2 = 1usize << (usize::BITS - 1 - n.leading_zeros());
    let rem = n - pof2;
    let newrank = if me < 2 * rem {
        if me % 2 == 0 {
            v.push(RdStep::FoldSend(me + 1));
            None
        } else {
            v.push(RdStep::FoldRecv(me - 1));
            Some(me / 2)
        }
    } else {
        Some(me - rem)
    };
    if let Some(nr) = newrank {
        let mut mask = 1;
        while mask < pof2 {
            let nd = nr ^ mask;
            v.push(RdStep::Exchange(if nd < rem {
                nd * 2 + 1
            } else {
                nd + rem
            }));
            mask <<= 1;
        }
    }
    if me < 2 * rem {
        v.push(if me % 2 == 1 {
            RdStep::ResultTo(me - 1)
        } else {
            RdStep::ResultFrom(me + 1)
        });
    }
    v
}

/// The disjoint ranges `a` (read) and `b` (written) of `buf` at once.
fn disjoint<T>(
    buf: &mut [T],
    a: std::ops::Range<usize>,
    b: std::ops::Range<usize>,
) -> (&[T], &mut [T]) {
    assert!(a.end <= b.start || b.end <= a.start, "blocks overlap");
    if a.end <= b.start {
        let (lo, hi) = buf.split_at_mut(b.start);
        (&lo[a], &mut hi[..b.end - b.start])
    } else {
        let (lo, hi) = buf.split_at_mut(a.start);
        (&hi[..a.end - a.start], &mut lo[b])
    }
}

/// The parts `ranges` of `buf`, in their order, as separate mutable
/// slices.
///
/// # Errors
/// `Arg` when two non-empty ones overlap (receive blocks of a collective
/// must not).
fn disjoint_mut<'a, T>(
    buf: &'a mut [T],
    ranges: &[std::ops::Range<usize>],
) -> Result<Vec<&'a mut [T]>> {
    // Empty parts write nothing and may sit anywhere, even inside others.
    let mut parts: Vec<Option<&'a mut [T]>> = ranges
        .iter()
        .map(|r| r.is_empty().then(|| &mut [][..]))
        .collect();
    let mut order: Vec<usize> = (0..ranges.len())
        .filter(|&i| !ranges[i].is_empty())
        .collect();
    order.sort_by_key(|&i| ranges[i].start);
    let (mut rest, mut at) = (buf, 0usize);
    for i in order {
        let r = &ranges[i];
        if r.start < at {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("receive blocks overlap at element {}", r.start),
            ));
        }
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(r.start - at);
        let (part, tail) = tail.split_at_mut(r.end - r.start);
        parts[i] = Some(part);
        rest = tail;
        at = r.end;
    }
    Ok(parts
        .into_iter()
        .map(|p| p.expect("every range placed"))
        .collect())
}

fn exact(got: usize, want: usize, from: usize) -> Result<()> {
    if got != want {
        return Err(Error::new(
            ErrorClass::Count,
            format!(
                "rank {from} sent {got} bytes where this rank expected {want}: the members \
                 passed different counts or types to the collective"
            ),
        ));
    }
    Ok(())
}

fn count_error(rank: usize, want: usize, got: usize) -> Error {
    Error::new(
        ErrorClass::Count,
        format!("rank {rank}'s block has {want} elements but its buffer holds {got}"),
    )
}

#[cfg(test)]
mod tests {
    use super::disjoint_mut;

    #[test]
    fn disjoint_parts_come_back_in_their_order_and_overlaps_are_refused() {
        let mut buf: Vec<u32> = (0..10).collect();
        // Out of order, with an empty part inside another.
        let parts = disjoint_mut(&mut buf, &[6..9, 0..2, 7..7, 2..5]).unwrap();
        let got: Vec<Vec<u32>> = parts.iter().map(|p| p.to_vec()).collect();
        assert_eq!(got, vec![vec![6, 7, 8], vec![0, 1], vec![], vec![2, 3, 4]]);
        for p in disjoint_mut(&mut buf, &[3..4, 0..1]).unwrap() {
            p[0] = 99;
        }
        assert_eq!((buf[0], buf[3]), (99, 99));
        let e = disjoint_mut(&mut buf, &[0..4, 3..6]).unwrap_err();
        assert_eq!(e.class(), crate::error::ErrorClass::Arg);
    }
}
