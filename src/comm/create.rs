//! Intracommunicator constructors (MPI 4.1 §7.4.2): dup, create (the
//! MPI-2.2 disjoint-subgroup form), create_group, split, split_type; and
//! disconnect (§11.10.4).
//!
//! Each constructor first settles who the members are, the same way at
//! every member (an allgather where members may disagree), then the
//! leader claims a context index for them (`context`), and members learn
//! it from the leader. Every disagreement that can be seen is turned into
//! an error at every process involved before anyone waits for a leader, so
//! bad input fails in bounded time instead of hanging.

use super::context::{self, INTER_LOCAL_BIT};
use super::{attr, lock, Communicator, Kind};
use crate::coll::{tags, Coll};
use crate::error::{Error, ErrorClass, Result};
use crate::group::{Group, UNDEFINED};
use crate::p2p::{Context, TAG_UB};
use crate::topology::{self, Domain};
use crate::transport::shmcoll::Region;

/// What [`Communicator::split_type`] groups processes by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitType {
    /// `MPI_COMM_TYPE_SHARED`: processes that can share memory (all of a
    /// shmpi job: one node).
    Shared,
    /// shmpi extension: processes bound inside the same NUMA node.
    Numa,
    /// shmpi extension: processes bound inside the same package.
    Package,
    /// shmpi extension: processes bound under the same L3 cache.
    L3,
}

/// The leader's verdict as members receive it: 0 and the index, or an
/// error code.
const OK: u32 = 0;
const EXHAUSTED: u32 = 1;
const MISMATCH: u32 = 2;

pub(super) fn verdict(r: &Result<u32>) -> [u8; 8] {
    verdict_with(r, None)
}

/// A verdict that also names the collective region the leader claimed
/// (in bits 8.. of the code word, as region + 1).
pub(super) fn verdict_with(r: &Result<u32>, region: Option<usize>) -> [u8; 8] {
    let (code, index) = match r {
        Ok(i) => (OK | region.map_or(0, |x| (x as u32 + 1) << 8), *i),
        Err(_) => (EXHAUSTED, 0),
    };
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&code.to_le_bytes());
    b[4..].copy_from_slice(&index.to_le_bytes());
    b
}

/// The collective region a verdict names, if any.
pub(super) fn read_region(b: &[u8; 8]) -> Option<usize> {
    let code = u32::from_le_bytes(b[..4].try_into().expect("4 bytes"));
    (code >> 8).checked_sub(1).map(|r| r as usize)
}

pub(super) fn read_verdict(b: &[u8; 8], what: &str) -> Result<u32> {
    let code = u32::from_le_bytes(b[..4].try_into().expect("4 bytes")) & 0xff;
    let index = u32::from_le_bytes(b[4..].try_into().expect("4 bytes"));
    match code {
        OK => Ok(index),
        EXHAUSTED => Err(Error::new(
            ErrorClass::Other,
            format!("{what}: the leader found no free context id for the new communicator"),
        )),
        3 => Err(Error::new(
            ErrorClass::Rank,
            format!("{what}: a leader was given an invalid rank for the other leader"),
        )),
        _ => Err(Error::new(
            ErrorClass::Group,
            format!("{what}: the members did not all pass the same group, or the groups overlap"),
        )),
    }
}

fn i32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn read_i32s(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|c| i32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect()
}

/// The subgroup flag of a member of `MPI_Comm_create` that refused its
/// own group argument ([`Communicator::refuse_create`]).
pub(super) const CREATE_REFUSED: u32 = 2;

/// The error of the members of `MPI_Comm_create` whose member `bad`
/// refused its group argument.
pub(super) fn refused_group(bad: usize) -> Error {
    Error::new(
        ErrorClass::Group,
        format!("MPI_Comm_create: rank {bad}'s group argument was refused (not a group)"),
    )
}

impl Communicator {
    /// A new intracommunicator with context index `index` over `group`
    /// (this process among its members); attributes as given, error
    /// handler inherited.
    pub(super) fn child(
        &self,
        index: u32,
        region: Option<usize>,
        group: Group,
        attrs: attr::Cache,
    ) -> Communicator {
        let rank = group
            .rank()
            .expect("the new communicator's members include this process");
        let region = region
            .map(|r| Region::attach(self.proc_.segment().clone(), r, group.members_arc(), rank));
        Communicator::build_with(
            region,
            self.proc_.clone(),
            Context {
                id: index,
                ranks: group.members_arc(),
                rank,
            },
            group,
            Kind::Intra,
            Some(index),
            "",
            attrs,
            self.errhandler(),
        )
    }

    /// A group of world ranks seen from this process.
    pub(super) fn group_of(&self, members: Vec<usize>) -> Group {
        Group::from_world_ranks(members, Some(self.proc_.p2p.world_rank()))
            .expect("distinct members")
    }

    /// The leader of `members` (parent ranks, leader first) claims an index
    /// for them and tells the others; every member returns it.
    pub(super) fn agree_index(
        &self,
        c: &Coll<'_>,
        members: &[usize],
        tag: i32,
        what: &str,
    ) -> Result<(u32, Option<usize>)> {
        let me = c.ctx.rank;
        if members[0] == me {
            let world: Vec<usize> = members.iter().map(|&r| c.ctx.ranks[r]).collect();
            let r = context::claim(&self.proc_.p2p, &world);
            let region = r.as_ref().ok().and_then(|_| self.claim_region(&world));
            let msg = verdict_with(&r, region);
            // These blocking sends cannot fail (they wait without a
            // deadline and the process is not finalized, checked on
            // entry), so a claimed index always reaches every member.
            for &m in &members[1..] {
                c.send(m, tag, &msg)?;
            }
            r.map(|i| (i, region))
        } else {
            let mut msg = [0u8; 8];
            c.recv(members[0], tag, &mut msg)?;
            read_verdict(&msg, what).map(|i| (i, read_region(&msg)))
        }
    }

    /// A collective region for a new intracommunicator of `world` ranks,
    /// when shared-memory collectives may use one and the pool has one.
    pub(super) fn claim_region(&self, world: &[usize]) -> Option<usize> {
        let t = crate::coll::tuning::tuning();
        if t.shm == Some(false) || world.len() < 2 || world.len() > t.shm_ranks {
            return None;
        }
        // Members of another job cannot see this job's regions.
        let n = self.proc_.segment().header().nranks() as usize;
        if world.iter().any(|&w| w >= n) {
            return None;
        }
        Region::claim(self.proc_.segment(), world)
    }

    /// `MPI_Comm_dup`: the same group with a new context; attributes go
    /// through their keyvals' copy callbacks; the error handler is
    /// inherited, the name is not.
    ///
    /// # Errors
    /// `Other` when no context id is free (at every member).
    pub fn dup(&self) -> Result<Communicator> {
        let r = (|| {
            self.proc_.check()?;
            if self.is_inter() {
                return self.inter_dup();
            }
            let c = self.coll();
            let mut msg = [0u8; 8];
            if self.ctx.rank == 0 {
                let r = context::claim(&self.proc_.p2p, &self.ctx.ranks);
                let region = r
                    .as_ref()
                    .ok()
                    .and_then(|_| self.claim_region(&self.ctx.ranks));
                msg = verdict_with(&r, region);
            }
            c.bcast_t(0, &mut msg)?;
            let index = read_verdict(&msg, "MPI_Comm_dup")?;
            let attrs = lock(&self.inner.attrs).copy();
            let c = self.child(index, read_region(&msg), self.inner.group.clone(), attrs);
            Ok(self.keep_topology(c))
        })();
        self.ret("MPI_Comm_dup", r)
    }

    /// The start of a nonblocking [`dup`](Self::dup) of this
    /// intracommunicator (`MPI_Comm_idup`): rank 0 claims the context
    /// index (and collective region) for every member, as `dup` does, and
    /// gets the verdict to hand to each of them; the others get `None`
    /// and wait for it. Every member then passes the verdict to
    /// [`dup_finish`](Self::dup_finish). Nothing here waits for another
    /// member.
    ///
    /// # Errors
    /// `Comm` on an intercommunicator; an error of the process state.
    pub(crate) fn dup_start(&self) -> Result<Option<[u8; 8]>> {
        self.proc_.check()?;
        if self.is_inter() {
            return Err(Error::new(
                ErrorClass::Comm,
                "a nonblocking dup of an intercommunicator is made by dup",
            ));
        }
        if self.ctx.rank != 0 {
            return Ok(None);
        }
        let r = context::claim(&self.proc_.p2p, &self.ctx.ranks);
        let region = r
            .as_ref()
            .ok()
            .and_then(|_| self.claim_region(&self.ctx.ranks));
        Ok(Some(verdict_with(&r, region)))
    }

    /// The end of a nonblocking dup: the communicator rank 0's `verdict`
    /// ([`dup_start`](Self::dup_start)) names, with this one's
    /// attributes copied now.
    ///
    /// # Errors
    /// `Other` when no context id was free.
    pub(crate) fn dup_finish(&self, verdict: &[u8; 8]) -> Result<Communicator> {
        let r = (|| {
            let index = read_verdict(verdict, "MPI_Comm_idup")?;
            let attrs = lock(&self.inner.attrs).copy();
            let c = self.child(index, read_region(verdict), self.inner.group.clone(), attrs);
            Ok(self.keep_topology(c))
        })();
        self.ret("MPI_Comm_idup", r)
    }

    /// `MPI_Comm_split`: one new communicator per colour, ranked by `key`
    /// and then by rank in this one; [`UNDEFINED`] as the colour gives
    /// `None`. Attributes are not propagated.
    ///
    /// # Errors
    /// `Arg` at every member when any member passes a negative colour
    /// other than `UNDEFINED`; `Other` when no context id is free.
    pub fn split(&self, color: i32, key: i32) -> Result<Option<Communicator>> {
        let r = (|| {
            self.proc_.check()?;
            if self.is_inter() {
                return self.inter_split(color, key);
            }
            self.split_intra(color, key, "MPI_Comm_split")
        })();
        self.ret("MPI_Comm_split", r)
    }

    /// Takes part in the split of a constructor (`what`) whose arguments
    /// this member refused with `e`, so that every other member fails too
    /// (`Arg`, naming this rank) instead of waiting for it; gives `e`
    /// back.
    pub(crate) fn refuse_split(&self, what: &str, e: Error) -> Error {
        // On an intercommunicator, or in a failed job, every member fails
        // before the split without communicating: so does this one.
        if self.proc_.check().is_ok() && !self.is_inter() {
            let _ = self.split_intra_as(UNDEFINED, 0, true, what);
        }
        e
    }

    pub(super) fn split_intra(
        &self,
        color: i32,
        key: i32,
        what: &str,
    ) -> Result<Option<Communicator>> {
        self.split_intra_as(color, key, false, what)
    }

    /// [`split_intra`](Self::split_intra); a member that `refused` its
    /// own arguments says so in the third word of its record, and every
    /// member fails (any colour, `i32::MIN` included, is a colour).
    fn split_intra_as(
        &self,
        color: i32,
        key: i32,
        refused: bool,
        what: &str,
    ) -> Result<Option<Communicator>> {
        let c = self.coll();
        let n = self.ctx.size();
        let mine = i32s(&[color, key, i32::from(refused)]);
        let mut all = vec![0u8; 12 * n];
        c.allgather_t(&mine, &mut all)?;
        let v: Vec<i32> = read_i32s(&all);
        if let Some(bad) = (0..n).find(|&r| v[3 * r + 2] != 0) {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("{what}: rank {bad}'s arguments were refused"),
            ));
        }
        if let Some(bad) = (0..n).find(|&r| v[3 * r] < 0 && v[3 * r] != UNDEFINED) {
            return Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "{what}: rank {bad} passed colour {}: colours are non-negative or UNDEFINED",
                    v[3 * bad]
                ),
            ));
        }
        if color == UNDEFINED {
            return Ok(None);
        }
        let mut members: Vec<usize> = (0..n).filter(|&r| v[3 * r] == color).collect();
        members.sort_by_key(|&r| (v[3 * r + 1], r));
        let (index, region) = self.agree_index(&c, &members, tags::COMM, what)?;
        let world = members.iter().map(|&r| self.ctx.ranks[r]).collect();
        Ok(Some(self.child(
            index,
            region,
            self.group_of(world),
            attr::Cache::default(),
        )))
    }

    /// `MPI_Comm_split_type`: [`SplitType::Shared`] puts every process of
    /// the job together (they share one node); the shmpi extensions group
    /// processes by the NUMA node, package or L3 cache that holds the
    /// first hardware thread of their binding. Ranks follow `key`, then
    /// rank in this communicator. A process on a machine without the level
    /// asked for (e.g. no L3) gets `None`.
    ///
    /// # Errors
    /// As [`split`](Self::split); `Other` when hwloc fails.
    pub fn split_type(&self, kind: SplitType, key: i32) -> Result<Option<Communicator>> {
        let r = (|| {
            self.proc_.check()?;
            if self.is_inter() {
                return Err(Error::new(
                    ErrorClass::Comm,
                    "MPI_Comm_split_type needs an intracommunicator",
                ));
            }
            let color = match kind {
                SplitType::Shared => Ok(Some(0)),
                SplitType::Numa => topology::domain_of_this_process(Domain::Numa),
                SplitType::Package => topology::domain_of_this_process(Domain::Package),
                SplitType::L3 => topology::domain_of_this_process(Domain::L3),
            };
            // A local failure still takes part, as UNDEFINED, so nobody
            // waits for this process; it reports the failure afterwards.
            let (color, err) = match color {
                Ok(c) => (c.map_or(UNDEFINED, |c| c as i32), None),
                Err(e) => (UNDEFINED, Some(e)),
            };
            let out = self.split_intra(color, key, "MPI_Comm_split_type")?;
            match err {
                Some(e) => Err(e),
                None => Ok(out),
            }
        })();
        self.ret("MPI_Comm_split_type", r)
    }

    /// `MPI_Comm_create` with the MPI-2.2 semantics: each member passes a
    /// subgroup of this communicator's group; the groups passed must be
    /// disjoint, and every member of a group must pass the same group. A
    /// process in the group it passed gets the new communicator over that
    /// group; others (e.g. passing the empty group) get `None`. Attributes
    /// are not propagated.
    ///
    /// On an intercommunicator, each side passes a subgroup of its local
    /// group and the result is an intercommunicator between the two
    /// subgroups (`None` for processes outside them, and for everyone if
    /// either subgroup is empty). The seed (`004_*`, MS-MPI's page) says
    /// an error is returned in those cases; MPI 4.1 §7.4.2 says
    /// `MPI_COMM_NULL`, and the standard decides.
    ///
    /// # Errors
    /// `Group` at every member when a member passes a group that is not a
    /// subgroup of this communicator's, and at every member of a group
    /// whose members did not all pass the same group (found by comparing
    /// digests, so it never waits for a leader that will not come); `Other`
    /// when no context id is free.
    pub fn create(&self, group: &Group) -> Result<Option<Communicator>> {
        let r = (|| {
            self.proc_.check()?;
            if self.is_inter() {
                return self.inter_create(group);
            }
            self.create_intra(group)
        })();
        self.ret("MPI_Comm_create", r)
    }

    /// Takes part in `MPI_Comm_create` for a member that refused its own
    /// group argument with `e` (a handle that names no group), so that
    /// every other member fails too (`Group`, naming this rank) instead of
    /// waiting for it; gives `e` back.
    pub(crate) fn refuse_create(&self, e: Error) -> Error {
        // In a failed job every member fails before communicating.
        if self.proc_.check().is_ok() {
            let empty = self.group_of(Vec::new());
            let _ = if self.is_inter() {
                self.inter_create_as(&empty, true)
            } else {
                self.create_intra_as(&empty, true)
            };
        }
        e
    }

    fn create_intra(&self, group: &Group) -> Result<Option<Communicator>> {
        self.create_intra_as(group, false)
    }

    /// [`create_intra`](Self::create_intra); a member that `refused` its
    /// arguments says so in its record and every member fails.
    fn create_intra_as(&self, group: &Group, refused: bool) -> Result<Option<Communicator>> {
        let c = self.coll();
        let n = self.ctx.size();
        // Each member's record: is its group a subgroup (1/0, or
        // `CREATE_REFUSED`), the group's size, and its digest.
        let parent = &self.inner.group;
        let subset = group.world_ranks().iter().all(|&w| parent.contains(w));
        let flag = if refused {
            CREATE_REFUSED
        } else {
            u32::from(subset)
        };
        let mut mine = [0u8; 16];
        mine[..4].copy_from_slice(&flag.to_le_bytes());
        mine[4..8].copy_from_slice(&(group.size() as u32).to_le_bytes());
        mine[8..].copy_from_slice(&self.digest_of(group).to_le_bytes());
        let mut all = vec![0u8; 16 * n];
        c.allgather_t(&mine, &mut all)?;
        let rec = |r: usize| &all[16 * r..16 * (r + 1)];
        if let Some(bad) = (0..n).find(|&r| rec(r)[..4] == CREATE_REFUSED.to_le_bytes()) {
            return Err(refused_group(bad));
        }
        if let Some(bad) = (0..n).find(|&r| rec(r)[..4] == [0; 4]) {
            return Err(Error::new(
                ErrorClass::Group,
                format!(
                    "MPI_Comm_create: rank {bad} passed a group that is not a subgroup of the \
                     communicator's group"
                ),
            ));
        }
        let Some(_) = group.rank() else {
            return Ok(None);
        };
        // Parent ranks of the group's members, in group order; every one of
        // them must have passed this very group.
        let members: Vec<usize> = group
            .world_ranks()
            .iter()
            .map(|&w| {
                parent
                    .rank_of(w)
                    .expect("a subgroup's member is in the parent")
            })
            .collect();
        if let Some(&bad) = members.iter().find(|&&m| rec(m)[4..] != mine[4..]) {
            return Err(Error::new(
                ErrorClass::Group,
                format!(
                    "MPI_Comm_create: rank {bad} of the communicator is in the group this \
                     process passed but passed a different group (the groups of \
                     MPI_Comm_create must be disjoint, and all members of one must pass it)"
                ),
            ));
        }
        let (index, region) = self.agree_index(&c, &members, tags::COMM, "MPI_Comm_create")?;
        Ok(Some(self.child(
            index,
            region,
            self.group_of(group.world_ranks().to_vec()),
            attr::Cache::default(),
        )))
    }

    /// `MPI_Comm_create_group`: collective over the members of `group`
    /// only (a subgroup of this communicator's group), told apart from
    /// other such calls by `tag`. The members send their group's digest
    /// to the member with the lowest world rank, which checks that all
    /// passed the same group and answers with the context index or the
    /// error. A process not in `group` (`group` empty, for one) gets
    /// `None` at once, a local operation (MPI 4.1 §7.4.2).
    ///
    /// # Errors
    /// `Group` when `group` is not a subgroup; `Group` at every member when they passed the same members
    /// in different orders; `Tag` for a negative tag or one above
    /// `TAG_UB - 0x1000`; `Other` when no context id is free. Members that
    /// passed different member *sets* are erroneous in MPI and may wait for
    /// each other.
    pub fn create_group(&self, group: &Group, tag: i32) -> Result<Option<Communicator>> {
        let r = (|| {
            self.proc_.check()?;
            if self.is_inter() {
                return Err(Error::new(
                    ErrorClass::Comm,
                    "MPI_Comm_create_group needs an intracommunicator",
                ));
            }
            if !(0..=TAG_UB - tags::CREATE_GROUP).contains(&tag) {
                return Err(Error::new(
                    ErrorClass::Tag,
                    format!(
                        "MPI_Comm_create_group: tag {tag} is outside 0..={}",
                        TAG_UB - tags::CREATE_GROUP
                    ),
                ));
            }
            let parent = &self.inner.group;
            if !group.world_ranks().iter().all(|&w| parent.contains(w)) {
                return Err(Error::new(
                    ErrorClass::Group,
                    "MPI_Comm_create_group: the group is not a subgroup of the communicator's",
                ));
            }
            if group.rank().is_none() {
                // Not a member: MPI_COMM_NULL, without a word to anyone.
                return Ok(None);
            }
            let c = self.coll();
            let tag = tags::CREATE_GROUP + tag;
            // Parent ranks; the leader is the member with the lowest world
            // rank, which does not depend on the order the group lists.
            let parent_rank = |w: usize| parent.rank_of(w).expect("subgroup");
            let leader_world = *group
                .world_ranks()
                .iter()
                .min_by_key(|&&w| self.gpid(w))
                .expect("not empty");
            let leader = parent_rank(leader_world);
            let digest = self.digest_of(group).to_le_bytes();
            let index = if leader == self.ctx.rank {
                let mut same = true;
                for &w in group.world_ranks() {
                    if w == leader_world {
                        continue;
                    }
                    let mut d = [0u8; 8];
                    c.recv(parent_rank(w), tag, &mut d)?;
                    same &= d == digest;
                }
                let r = if same {
                    context::claim(&self.proc_.p2p, group.world_ranks())
                } else {
                    Err(Error::new(ErrorClass::Group, "mismatch"))
                };
                let region = r
                    .as_ref()
                    .ok()
                    .and_then(|_| self.claim_region(group.world_ranks()));
                let mut msg = verdict_with(&r, region);
                if !same {
                    msg[..4].copy_from_slice(&MISMATCH.to_le_bytes());
                }
                for &w in group.world_ranks() {
                    if w != leader_world {
                        c.send(parent_rank(w), tag, &msg)?;
                    }
                }
                (
                    read_verdict(&msg, "MPI_Comm_create_group")?,
                    read_region(&msg),
                )
            } else {
                c.send(leader, tag, &digest)?;
                let mut msg = [0u8; 8];
                c.recv(leader, tag, &mut msg)?;
                (
                    read_verdict(&msg, "MPI_Comm_create_group")?,
                    read_region(&msg),
                )
            };
            let (index, region) = index;
            Ok(Some(self.child(
                index,
                region,
                self.group_of(group.world_ranks().to_vec()),
                attr::Cache::default(),
            )))
        })();
        self.ret("MPI_Comm_create_group", r)
    }

    /// `MPI_Comm_disconnect`: waits until this process's sends on every
    /// communicator have left its queues and those on this one are
    /// complete (a rendezvous or synchronous send also needs its
    /// receiver's ack: MPI 4.1 §11.10.4, "waits for all pending
    /// communication on comm to complete"), meets the other members (so
    /// everything they sent before disconnecting has arrived, in order,
    /// ahead of the barrier), and frees the communicator. Pending requests
    /// borrow the handle, so none are left on it. Collective.
    ///
    /// # Errors
    /// `Comm` on `WORLD` and `SELF` (this handle is then kept: `Err`
    /// carries no communicator, so use a clone if it is still needed).
    pub fn disconnect(self) -> Result<()> {
        let r = (|| {
            self.proc_.check()?;
            if self.inner.index.is_none() {
                return Err(Error::new(
                    ErrorClass::Comm,
                    format!(
                        "MPI_Comm_disconnect is not allowed on {}",
                        if self.ctx.id == context::SELF_INDEX {
                            "MPI_COMM_SELF"
                        } else {
                            "MPI_COMM_WORLD"
                        }
                    ),
                ));
            }
            let peers: Vec<usize> = match &self.inner.kind {
                Kind::Intra => self.ctx.ranks.to_vec(),
                Kind::Inter { remote, .. } => {
                    let mut v = self.inner.group.world_ranks().to_vec();
                    v.extend_from_slice(remote.world_ranks());
                    v
                }
            };
            let contexts = [self.context_for(false), self.context_for(true)];
            self.proc_.p2p.wait_until(None, |e| {
                (peers.iter().all(|&p| e.transport().is_idle(p)) && !e.awaits_ack_on(&contexts))
                    .then_some(Ok(()))
            })?;
            match &self.inner.kind {
                Kind::Intra => self.coll().barrier(),
                Kind::Inter { .. } => self.inter_barrier(),
            }?;
            // Its links to other jobs go without keeping them connected.
            self.mark_disconnected();
            Ok(())
        })();
        self.ret("MPI_Comm_disconnect", r)
    }

    /// The hidden local intracommunicator context of an intercommunicator
    /// whose index is `index`, over `local` (world ranks) with this
    /// process at `rank`.
    pub(super) fn local_context(index: u32, local: &Group) -> Context {
        Context {
            id: index | INTER_LOCAL_BIT,
            ranks: local.members_arc(),
            rank: local.rank().expect("this process is in its local group"),
        }
    }
}
