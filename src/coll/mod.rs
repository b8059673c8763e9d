//! Collectives over point-to-point.
//!
//! Layer L4 (imports L0–L3): the collective algorithms over point-to-point
//! (`algo`), the nonblocking schedules (`nbc`), the reduction operations
//! (`op`), the algorithm choices (`tuning`) and the cost model of
//! hierarchical ones (`model`); small payloads go through the
//! communicator's collective region (`transport::shmcoll`).
//!
//! Every message goes on the communicator's collective context
//! ([`Context::coll_id`]), so it never matches user traffic, with a tag
//! that names the operation (and round). MPI requires every member to call
//! the collectives of one communicator in the same order, and frames of
//! one sender arrive in order, so blocking collectives need no sequence
//! numbers.
#![forbid(unsafe_code)]

mod algo;
pub mod model;
pub mod nbc;
pub mod op;
pub mod tuning;

pub use op::{Op, Reducible};

use crate::error::Result;
use crate::p2p::{Context, Shared};
use crate::transport::shmcoll::Region;

/// Tags of the internal operations on the collective context.
pub mod tags {
    /// Barrier rounds use `BARRIER + round`.
    pub const BARRIER: i32 = 0x100;
    /// Broadcast.
    pub const BCAST: i32 = 0x200;
    /// Gather.
    pub const GATHER: i32 = 0x300;
    /// Communicator construction (split, create).
    pub const COMM: i32 = 0x400;
    /// Reduce (and the move to a root other than 0).
    pub const REDUCE: i32 = 0x500;
    /// Allreduce rounds.
    pub const ALLREDUCE: i32 = 0x600;
    /// Allgather.
    pub const ALLGATHER: i32 = 0x700;
    /// Alltoall.
    pub const ALLTOALL: i32 = 0x800;
    /// Scatter.
    pub const SCATTER: i32 = 0x900;
    /// Scan and exscan.
    pub const SCAN: i32 = 0xa00;
    /// `create_group` uses `CREATE_GROUP + user tag`, above every other.
    pub const CREATE_GROUP: i32 = 0x1000;
}

/// A communicator as collectives see it: the engine, the context, and
/// its collective region if it has one.
#[derive(Clone, Copy, Debug)]
pub struct Coll<'a> {
    /// The process's engine.
    pub sh: &'a Shared,
    /// The communicator's context.
    pub ctx: &'a Context,
    /// The communicator's collective region (small collectives through
    /// flags), if it got one.
    pub region: Option<&'a Region>,
}

impl Coll<'_> {
    /// Members.
    pub fn size(&self) -> usize {
        self.ctx.size()
    }

    /// The region, if this communicator has one, shared-memory collectives
    /// are on (`SHMPI_COLL_SHM`) and `bytes` per member fit it.
    pub fn shm_region(&self, bytes: usize) -> Option<&Region> {
        let t = tuning::tuning();
        self.region.filter(|r| {
            t.shm.unwrap_or(!r.oversubscribed())
                && bytes <= t.shm_max
                && self.size() <= t.shm_ranks
                && self.size() > 1
        })
    }

    /// [`shm_region`](Self::shm_region) for a rooted collective (bcast,
    /// reduce): by default not between two members, where the message is
    /// a single ring frame and lets the root (bcast) or the leaf (reduce)
    /// go on at once instead of waiting in the region's epochs. On the
    /// Xeon VM (2026-12-06, `shmpi-bench bcast|reduce --max-size 512`, 6
    /// alternating rounds, 2 ranks) messages took bcast 1-256 B from
    /// 0.24-0.27 to 0.03-0.09 µs and reduce from 0.27-0.29 to 0.04-0.08,
    /// while allreduce, which waits for every member either way, stayed
    /// at 0.86-1.37x and keeps the region. `SHMPI_COLL_SHM=1` forces the
    /// region here too.
    pub fn shm_region_rooted(&self, bytes: usize) -> Option<&Region> {
        let forced = tuning::tuning().shm == Some(true);
        self.shm_region(bytes).filter(|_| forced || self.size() > 2)
    }

    /// The members grouped by the NUMA node they are bound on (ranks of
    /// this communicator, ascending within a group, groups by node): the
    /// hook for hierarchical algorithms (intra-node phase, then one leader
    /// per node). `None` when a member is unbound or hwloc cannot tell.
    pub fn numa_groups(&self) -> Option<Vec<Vec<usize>>> {
        let cpus: Vec<usize> = {
            let e = self.sh.lock();
            let t = e.transport();
            self.ctx
                .ranks
                .iter()
                .map(|&w| t.rank_cpu(w))
                .collect::<Option<Vec<_>>>()?
        };
        let m = crate::topology::Machine::this().ok()?;
        let mut groups: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for (r, c) in cpus.into_iter().enumerate() {
            let numa = m.pus.iter().find(|p| p.os == c)?.numa.unwrap_or(0);
            groups.entry(numa).or_default().push(r);
        }
        Some(groups.into_values().collect())
    }

    /// Sends `data` to rank `to` with `tag` on the collective context.
    ///
    /// # Errors
    /// As `Shared::send_bytes`.
    pub fn send(&self, to: usize, tag: i32, data: &[u8]) -> Result<()> {
        self.sh.send_bytes(
            self.ctx.coll_id(),
            self.ctx.rank as u32,
            self.ctx.ranks[to],
            tag,
            data,
            false,
        )
    }

    /// Receives into `buf` from rank `from` with `tag` on the collective
    /// context; returns the bytes received.
    ///
    /// # Errors
    /// `Truncate` when the message is longer than `buf`.
    pub fn recv(&self, from: usize, tag: i32, buf: &mut [u8]) -> Result<usize> {
        let st = self.sh.recv_bytes(
            self.ctx.coll_id(),
            from as i32,
            Some(self.ctx.ranks[from]),
            tag,
            buf,
        )?;
        Ok(st.bytes)
    }

    /// Barrier: through the collective region when there is one (every
    /// member posts its epoch and waits for all), else a dissemination
    /// barrier: ⌈log2 n⌉ rounds, in round `k` sending to rank + 2^k and
    /// receiving from rank - 2^k.
    ///
    /// # Errors
    /// As the sends and receives.
    pub fn barrier(&self) -> Result<()> {
        if let Some(r) = self.shm_region(0) {
            return r.barrier(&mut |c, i| self.sh.wait_flag(c, i));
        }
        let n = self.size();
        let me = self.ctx.rank;
        let mut k = 1;
        let mut round = 0;
        while k < n {
            // The send is eager (empty), so it cannot wait on the receiver.
            self.send((me + k) % n, tags::BARRIER + round, &[])?;
            self.recv((me + n - k) % n, tags::BARRIER + round, &mut [])?;
            k *= 2;
            round += 1;
        }
        Ok(())
    }
}
