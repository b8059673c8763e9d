//! Intercommunicators (MPI 4.1 §7.6): intercomm_create, intercomm_merge,
//! and dup, create, split and barrier on an intercommunicator.
//!
//! An intercommunicator's context names the *remote* group's members
//! (ranks given to send and receive are remote ranks) and carries this
//! process's rank in its local group as the source, so receivers match
//! remote ranks. Beside it sits a hidden intracommunicator context of the
//! local group (`index | INTER_LOCAL_BIT`, the same value on both sides,
//! which never talk on it to each other) for the local halves of
//! collectives. The two sides' leaders (local rank 0) talk over the
//! intercommunicator's collective context.
//!
//! Context indices: the leader with the lower world rank claims one index
//! for the members of both groups, tells the other leader, and each leader
//! broadcasts the verdict in its group.

use super::context;
use super::create::{read_region, read_verdict, verdict, verdict_with};
use super::{attr, lock, Communicator, Kind};
use crate::coll::{tags, Coll};
use crate::error::{Error, ErrorClass, Result};
use crate::group::{Group, UNDEFINED};
use crate::p2p::Context;

/// Broadcasts a variable-length message from local rank `root` (length
/// first).
pub(super) fn bcast_vec(c: &Coll<'_>, root: usize, data: &mut Vec<u8>) -> Result<()> {
    let mut len = (data.len() as u64).to_le_bytes();
    c.bcast_t(root, &mut len)?;
    data.resize(u64::from_le_bytes(len) as usize, 0);
    c.bcast_t(root, data)
}

/// An intercommunicator `MPI_Comm_create`'s verdict on a side, as its
/// leader tells the other side: every member passed the same subgroup;
/// they did not; a member's argument was refused.
const SIDE_MIXED: u8 = 0;
const SIDE_OK: u8 = 1;
const SIDE_REFUSED: u8 = 2;

impl Communicator {
    /// `MPI_Intercomm_create`: collective over this (local) communicator
    /// and, through the two leaders, over the remote group. `local_leader`
    /// is a rank of this communicator; `remote_leader` is the other
    /// group's leader as a rank of `peer` (significant at the local leader
    /// only), and `tag` tells this call's leader messages on `peer` apart.
    ///
    /// # Errors
    /// `Rank` for a leader out of range, `Comm` when this communicator is
    /// an intercommunicator, `Group` (on both sides) when the groups
    /// overlap, `Other` when no context id is free; every member of both
    /// groups gets the leaders' error.
    pub fn intercomm_create(
        &self,
        local_leader: i32,
        peer: &Communicator,
        remote_leader: i32,
        tag: i32,
    ) -> Result<Communicator> {
        let r = self.intercomm_create_as(local_leader, Ok(peer), remote_leader, tag);
        self.ret("MPI_Intercomm_create", r)
    }

    /// Takes part in `MPI_Intercomm_create` for the local leader (or a
    /// member that believes it leads) whose peer communicator argument was
    /// refused with `e`: its group gets the error from it instead of
    /// waiting for its answer (the remote leader, which it cannot reach,
    /// still waits: an erroneous program); gives `e` back.
    pub(crate) fn intercomm_refuse(&self, local_leader: i32, e: Error) -> Error {
        let _ = self.intercomm_create_as(local_leader, Err(&e), 0, 0);
        e
    }

    /// [`intercomm_create`](Self::intercomm_create), the local leader's
    /// peer communicator given, or refused with an error.
    fn intercomm_create_as(
        &self,
        local_leader: i32,
        peer: std::result::Result<&Communicator, &Error>,
        remote_leader: i32,
        tag: i32,
    ) -> Result<Communicator> {
        (|| {
            self.proc_.check()?;
            if self.is_inter() {
                return Err(Error::new(
                    ErrorClass::Comm,
                    "MPI_Intercomm_create needs an intracommunicator as the local communicator",
                ));
            }
            if local_leader < 0 || local_leader >= self.size() {
                return Err(Error::new(
                    ErrorClass::Rank,
                    format!(
                        "MPI_Intercomm_create: local leader {local_leader} is out of range for a \
                         communicator of size {}",
                        self.size()
                    ),
                ));
            }
            let leader = local_leader as usize;
            let local = self.coll();
            let mine = self.inner.group.world_ranks().to_vec();
            // The leader learns the remote group and the index; then tells
            // its group [verdict (8 bytes), remote members...].
            let mut msg = Vec::new();
            if self.ctx.rank == leader {
                let remote = match peer {
                    Ok(peer) => self.leader_exchange(peer, remote_leader, tag, &mine),
                    Err(e) => Err(e.clone()),
                };
                msg = match remote {
                    Err(e) => {
                        let mut m = verdict(&Err(e.clone())).to_vec();
                        m[..4].copy_from_slice(&error_code(&e).to_le_bytes());
                        m
                    }
                    Ok((remote, index)) => {
                        let mut m = verdict(&index).to_vec();
                        if let Err(e) = &index {
                            m[..4].copy_from_slice(&error_code(e).to_le_bytes());
                        }
                        m.extend(self.encode_peers(&remote));
                        m
                    }
                };
            }
            bcast_vec(&local, leader, &mut msg)?;
            let v: [u8; 8] = msg[..8].try_into().expect("verdict");
            let index = read_verdict(&v, "MPI_Intercomm_create")?;
            let remote = self.decode_peers(&msg[8..])?;
            Ok(self.inter_child(
                index,
                self.inner.group.clone(),
                remote,
                attr::Cache::default(),
            ))
        })()
    }

    /// The local leader's half of `intercomm_create`: swap member lists
    /// with the remote leader over `peer`, check they are disjoint, and
    /// agree on an index (claimed by the leader with the lower world rank).
    fn leader_exchange(
        &self,
        peer: &Communicator,
        remote_leader: i32,
        tag: i32,
        mine: &[usize],
    ) -> Result<(Vec<usize>, Result<u32>)> {
        if remote_leader < 0 || remote_leader >= peer.size() || peer.is_inter() {
            return Err(Error::new(
                ErrorClass::Rank,
                format!(
                    "MPI_Intercomm_create: remote leader {remote_leader} is not a rank of the \
                     peer intracommunicator (size {})",
                    peer.size()
                ),
            ));
        }
        let mut len = [0u8; 8];
        peer.sendrecv_raw(
            &(mine.len() as u64).to_le_bytes(),
            remote_leader,
            tag,
            &mut len,
        )?;
        let mut theirs = vec![0u8; 16 * u64::from_le_bytes(len) as usize];
        peer.sendrecv_raw(&self.encode_peers(mine), remote_leader, tag, &mut theirs)?;
        let remote = self.decode_peers(&theirs)?;
        let me = self.gpid(self.proc_.p2p.world_rank());
        let remote_leader_world = self.gpid(peer.ctx.ranks[remote_leader as usize]);
        let index = if remote.iter().any(|w| mine.contains(w)) {
            Err(Error::new(
                ErrorClass::Group,
                "MPI_Intercomm_create: the local and remote groups overlap",
            ))
        } else if me < remote_leader_world {
            let mut all = mine.to_vec();
            all.extend_from_slice(&remote);
            let r = context::claim(&self.proc_.p2p, &all);
            peer.send_raw(&verdict(&r), remote_leader, tag)?;
            r
        } else {
            let mut v = [0u8; 8];
            peer.recv_raw(&mut v, remote_leader, tag)?;
            read_verdict(&v, "MPI_Intercomm_create")
        };
        Ok((remote, index))
    }

    /// An intercommunicator with index `index` between `local` (holding
    /// this process) and `remote` (world ranks, in rank order).
    pub(super) fn inter_child(
        &self,
        index: u32,
        local: Group,
        remote: Vec<usize>,
        attrs: attr::Cache,
    ) -> Communicator {
        let me = self.proc_.p2p.world_rank();
        let remote = Group::from_world_ranks(remote, Some(me)).expect("distinct members");
        let local_ctx = Communicator::local_context(index, &local);
        Communicator::build_with(
            None,
            self.proc_.clone(),
            Context {
                id: index,
                ranks: remote.members_arc(),
                rank: local_ctx.rank,
            },
            local,
            Kind::Inter {
                remote,
                local: local_ctx,
            },
            Some(index),
            "",
            attrs,
            self.errhandler(),
        )
    }

    pub(super) fn local_coll(&self) -> Coll<'_> {
        Coll {
            sh: &self.proc_.p2p,
            ctx: self.local_ctx(),
            region: None,
        }
    }

    /// Barrier on an intercommunicator: a local barrier, the leaders swap
    /// a token, and each leader releases its group.
    pub(super) fn inter_barrier(&self) -> Result<()> {
        let local = self.local_coll();
        local.barrier()?;
        let mut token = [0u8; 1];
        if self.ctx.rank == 0 {
            let inter = self.coll();
            inter.send(0, tags::BARRIER, &[1])?;
            inter.recv(0, tags::BARRIER, &mut token)?;
        }
        local.bcast_t(0, &mut token)
    }

    /// Leaders agree on an index for the members `members` of both sides
    /// (the one with the lower world rank claims), and each tells its
    /// local group. Only the leaders' `members` is used.
    fn inter_agree(
        &self,
        members: &[usize],
        what: &str,
        region: bool,
    ) -> Result<(u32, Option<usize>)> {
        let local = self.local_coll();
        let mut msg = [0u8; 8];
        if self.ctx.rank == 0 {
            let inter = self.coll();
            let me = self.proc_.p2p.world_rank();
            if self.gpid(me) < self.gpid(self.ctx.ranks[0]) {
                let r = context::claim(&self.proc_.p2p, members);
                let reg = if region {
                    r.as_ref().ok().and_then(|_| self.claim_region(members))
                } else {
                    None
                };
                msg = verdict_with(&r, reg);
                inter.send(0, tags::COMM, &msg)?;
            } else {
                inter.recv(0, tags::COMM, &mut msg)?;
            }
        }
        local.bcast_t(0, &mut msg)?;
        read_verdict(&msg, what).map(|i| (i, read_region(&msg)))
    }

    /// `MPI_Comm_dup` of an intercommunicator.
    pub(super) fn inter_dup(&self) -> Result<Communicator> {
        let Kind::Inter { remote, .. } = &self.inner.kind else {
            unreachable!("inter_dup on an intracommunicator");
        };
        let mut all = self.inner.group.world_ranks().to_vec();
        all.extend_from_slice(remote.world_ranks());
        let (index, _) = self.inter_agree(&all, "MPI_Comm_dup", false)?;
        Ok(self.inter_dup_child(index, remote.world_ranks()))
    }

    /// The duplicate of this intercommunicator on context `index` (whose
    /// remote group's world ranks are `remote`), attributes copied now.
    fn inter_dup_child(&self, index: u32, remote: &[usize]) -> Communicator {
        let attrs = lock(&self.inner.attrs).copy();
        self.inter_child(index, self.inner.group.clone(), remote.to_vec(), attrs)
    }

    /// The start of a nonblocking [`dup`](Self::dup) of this
    /// intercommunicator (`MPI_Comm_idup`): the leader of the group whose
    /// leader has the lower process id claims the context index for both
    /// groups (as `dup` does) and gets the verdict to send to every other
    /// member of both; everyone else gets `None` and receives it. Nothing
    /// here waits for another member.
    ///
    /// # Errors
    /// `Comm` on an intracommunicator; an error of the process state.
    pub(crate) fn inter_dup_start(&self) -> Result<Option<[u8; 8]>> {
        self.proc_.check()?;
        let Kind::Inter { remote, .. } = &self.inner.kind else {
            return Err(Error::new(
                ErrorClass::Comm,
                "inter_dup_start needs an intercommunicator",
            ));
        };
        if !self.inter_claimer() {
            return Ok(None);
        }
        let mut all = self.inner.group.world_ranks().to_vec();
        all.extend_from_slice(remote.world_ranks());
        let r = context::claim(&self.proc_.p2p, &all);
        Ok(Some(verdict(&r)))
    }

    /// Whether this process claims the context of a new communicator over
    /// both groups: the leader whose process id is the lower of the two
    /// leaders' (`inter_agree`'s rule).
    pub(crate) fn inter_claimer(&self) -> bool {
        self.ctx.rank == 0 && self.inter_claims_here()
    }

    /// Whether the leader that claims for both groups
    /// ([`inter_claimer`](Self::inter_claimer)) is in this process's group.
    pub(crate) fn inter_claims_here(&self) -> bool {
        let mine = self.inner.group.world_ranks()[0];
        self.gpid(mine) < self.gpid(self.ctx.ranks[0])
    }

    /// The end of a nonblocking dup of an intercommunicator: the
    /// communicator the claiming leader's `verdict` names, with this
    /// one's attributes copied now.
    ///
    /// # Errors
    /// `Other` when no context id was free.
    pub(crate) fn inter_dup_finish(&self, verdict: &[u8; 8]) -> Result<Communicator> {
        let r = (|| {
            let Kind::Inter { remote, .. } = &self.inner.kind else {
                return Err(Error::new(
                    ErrorClass::Comm,
                    "inter_dup_finish needs an intercommunicator",
                ));
            };
            let index = read_verdict(verdict, "MPI_Comm_idup")?;
            Ok(self.inter_dup_child(index, remote.world_ranks()))
        })();
        self.ret("MPI_Comm_idup", r)
    }

    /// `MPI_Intercomm_merge`: an intracommunicator over both groups; the
    /// group whose members pass `high = false` comes first (when both
    /// sides pass the same value, the side whose leader has the lower
    /// world rank comes first). The leader's `high` speaks for its group.
    ///
    /// # Errors
    /// `Comm` on an intracommunicator; `Other` when no context id is free.
    pub fn intercomm_merge(&self, high: bool) -> Result<Communicator> {
        let r = (|| {
            self.proc_.check()?;
            let Kind::Inter { remote, .. } = &self.inner.kind else {
                return Err(Error::new(
                    ErrorClass::Comm,
                    "MPI_Intercomm_merge needs an intercommunicator",
                ));
            };
            let local = self.local_coll();
            // [my side's high, the remote side's high]
            let mut hi = [u8::from(high), 0];
            if self.ctx.rank == 0 {
                let inter = self.coll();
                inter.send(0, tags::COMM, &hi[..1])?;
                let mut theirs = [0u8; 1];
                inter.recv(0, tags::COMM, &mut theirs)?;
                hi[1] = theirs[0];
            }
            local.bcast_t(0, &mut hi)?;
            let me_first = match (hi[0], hi[1]) {
                (0, 1) => true,
                (1, 0) => false,
                _ => {
                    self.gpid(self.inner.group.world_ranks()[0])
                        < self.gpid(remote.world_ranks()[0])
                }
            };
            let (a, b) = if me_first {
                (&self.inner.group, remote)
            } else {
                (remote, &self.inner.group)
            };
            let mut members = a.world_ranks().to_vec();
            members.extend_from_slice(b.world_ranks());
            let (index, region) = self.inter_agree(&members, "MPI_Intercomm_merge", true)?;
            Ok(self.child(
                index,
                region,
                self.group_of(members),
                attr::Cache::default(),
            ))
        })();
        self.ret("MPI_Intercomm_merge", r)
    }

    /// `MPI_Comm_create` on an intercommunicator: each side passes a
    /// subgroup of its local group (the same one at every member of a
    /// side); the result joins the two subgroups.
    pub(super) fn inter_create(&self, group: &Group) -> Result<Option<Communicator>> {
        self.inter_create_as(group, false)
    }

    /// [`inter_create`](Self::inter_create); a member that `refused` its
    /// arguments (`Communicator::refuse_create`) says so in its record, its
    /// side is not consistent, and both sides fail.
    pub(super) fn inter_create_as(
        &self,
        group: &Group,
        refused: bool,
    ) -> Result<Option<Communicator>> {
        let local = self.local_coll();
        let n = self.inner.group.size();
        let subset = group
            .world_ranks()
            .iter()
            .all(|&w| self.inner.group.contains(w));
        let flag = if refused {
            super::create::CREATE_REFUSED
        } else {
            u32::from(subset)
        };
        // Every member of a side must pass the same subgroup of it.
        let mut mine = [0u8; 12];
        mine[..4].copy_from_slice(&flag.to_le_bytes());
        mine[4..].copy_from_slice(&self.digest_of(group).to_le_bytes());
        let mut all = vec![0u8; 12 * n];
        local.allgather_t(&mine, &mut all)?;
        let consistent = (0..n).all(|r| all[12 * r..12 * (r + 1)] == mine);
        let refuser = (0..n)
            .find(|&r| all[12 * r..12 * r + 4] == super::create::CREATE_REFUSED.to_le_bytes());
        // Leaders swap [verdict, subgroup members...] and then tell their
        // group [remote verdict, remote members...]; the verdict is
        // `SIDE_OK`, `SIDE_MIXED` or `SIDE_REFUSED` (so the other side's
        // error names the refusal).
        let mut msg = Vec::new();
        if self.ctx.rank == 0 {
            let inter = self.coll();
            let verdict = match (refuser, consistent) {
                (Some(_), _) => SIDE_REFUSED,
                (None, true) => SIDE_OK,
                (None, false) => SIDE_MIXED,
            };
            let mut out = vec![verdict];
            out.extend(self.encode_peers(group.world_ranks()));
            inter.send(0, tags::COMM, &(out.len() as u64).to_le_bytes())?;
            inter.send(0, tags::COMM, &out)?;
            let mut len = [0u8; 8];
            inter.recv(0, tags::COMM, &mut len)?;
            msg = vec![0u8; u64::from_le_bytes(len) as usize];
            inter.recv(0, tags::COMM, &mut msg)?;
        }
        bcast_vec(&local, 0, &mut msg)?;
        if let Some(bad) = refuser {
            return Err(super::create::refused_group(bad));
        }
        if msg[0] == SIDE_REFUSED {
            return Err(Error::new(
                ErrorClass::Group,
                "MPI_Comm_create on an intercommunicator: a member of the other group had its \
                 group argument refused (not a group); its own error says which",
            ));
        }
        if !consistent || msg[0] != SIDE_OK {
            // Both sides reach this verdict; nobody waits for a claim.
            return Err(Error::new(
                ErrorClass::Group,
                "MPI_Comm_create on an intercommunicator: the members of a side did not all \
                 pass the same subgroup of their local group",
            ));
        }
        let remote = self.decode_peers(&msg[1..])?;
        if group.size() == 0 || remote.is_empty() {
            return Ok(None);
        }
        let mut members = group.world_ranks().to_vec();
        members.extend_from_slice(&remote);
        // The leader of the lower-world-rank subgroup claims and tells
        // everyone in both subgroups directly.
        let index = self.claim_for_pair(
            group.world_ranks(),
            &remote,
            &members,
            tags::COMM,
            "MPI_Comm_create",
        )?;
        if group.rank().is_none() {
            return Ok(None);
        }
        Ok(Some(self.inter_child(
            index,
            group.clone(),
            remote,
            attr::Cache::default(),
        )))
    }

    /// One index for the pair of subgroups `mine` (local world ranks) and
    /// `theirs` (remote world ranks): the first member of whichever has
    /// the lower first world rank claims it for `members` and sends the
    /// verdict to every other member of both (local ones over the local
    /// context, remote ones over the intercommunicator). Every process of
    /// both *whole* groups calls this for the pairs it belongs to or not:
    /// processes outside both subgroups return without waiting.
    fn claim_for_pair(
        &self,
        mine: &[usize],
        theirs: &[usize],
        members: &[usize],
        tag: i32,
        what: &str,
    ) -> Result<u32> {
        let me = self.proc_.p2p.world_rank();
        let local_rank = |w: usize| self.inner.group.rank_of(w).expect("local member");
        let Kind::Inter { remote, .. } = &self.inner.kind else {
            unreachable!("claim_for_pair on an intracommunicator");
        };
        let remote_rank = |w: usize| remote.rank_of(w).expect("remote member");
        let claimer_is_local = self.gpid(mine[0]) < self.gpid(theirs[0]);
        let claimer = if claimer_is_local { mine[0] } else { theirs[0] };
        let local = self.local_coll();
        let inter = self.coll();
        if me == claimer {
            let r = context::claim(&self.proc_.p2p, members);
            let msg = verdict(&r);
            for &w in mine.iter().filter(|&&w| w != me) {
                local.send(local_rank(w), tag, &msg)?;
            }
            for &w in theirs {
                inter.send(remote_rank(w), tag, &msg)?;
            }
            return r;
        }
        if !mine.contains(&me) {
            return Ok(0);
        }
        let mut msg = [0u8; 8];
        if claimer_is_local {
            local.recv(local_rank(claimer), tag, &mut msg)?;
        } else {
            inter.recv(remote_rank(claimer), tag, &mut msg)?;
        }
        read_verdict(&msg, what)
    }

    /// `MPI_Comm_split` on an intercommunicator: each side splits its
    /// local group by colour and key; the result joins the two sides'
    /// subgroups of one colour. A colour only one side has, and
    /// `UNDEFINED`, give `None`.
    pub(super) fn inter_split(&self, color: i32, key: i32) -> Result<Option<Communicator>> {
        let Kind::Inter { remote, .. } = &self.inner.kind else {
            unreachable!("inter_split on an intracommunicator");
        };
        let local = self.local_coll();
        let n = self.inner.group.size();
        let mut mine = [0u8; 8];
        mine[..4].copy_from_slice(&color.to_le_bytes());
        mine[4..].copy_from_slice(&key.to_le_bytes());
        let mut table = vec![0u8; 8 * n];
        local.allgather_t(&mine, &mut table)?;
        let read = |t: &[u8], r: usize| {
            let c = i32::from_le_bytes(t[8 * r..8 * r + 4].try_into().expect("4"));
            let k = i32::from_le_bytes(t[8 * r + 4..8 * r + 8].try_into().expect("4"));
            (c, k)
        };
        // Leaders swap the tables; each side then knows both.
        let mut theirs = Vec::new();
        if self.ctx.rank == 0 {
            let inter = self.coll();
            inter.send(0, tags::COMM, &table)?;
            theirs = vec![0u8; 8 * remote.size()];
            inter.recv(0, tags::COMM, &mut theirs)?;
        }
        bcast_vec(&local, 0, &mut theirs)?;
        // Checked after the swap, so both sides see a bad colour of either
        // and fail together instead of one waiting for the other.
        let bad_colour = |t: &[u8], size: usize| {
            (0..size).find(|&r| {
                let c = read(t, r).0;
                c < 0 && c != UNDEFINED
            })
        };
        if let Some(bad) = bad_colour(&table, n) {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("MPI_Comm_split: local rank {bad} passed a negative colour"),
            ));
        }
        if let Some(bad) = bad_colour(&theirs, remote.size()) {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("MPI_Comm_split: remote rank {bad} passed a negative colour"),
            ));
        }
        let members_of = |t: &[u8], g: &Group, c: i32| -> Vec<usize> {
            let mut v: Vec<usize> = (0..g.size()).filter(|&r| read(t, r).0 == c).collect();
            v.sort_by_key(|&r| (read(t, r).1, r));
            v.into_iter().map(|r| g.world_ranks()[r]).collect()
        };
        // Each process takes part in its own colour's claim only (as the
        // claimer or a receiver); the claimer serves every member of both
        // subgroups directly.
        if color == UNDEFINED {
            return Ok(None);
        }
        let a = members_of(&table, &self.inner.group, color);
        let b = members_of(&theirs, remote, color);
        if b.is_empty() {
            return Ok(None);
        }
        let mut members = a.clone();
        members.extend_from_slice(&b);
        let index = self.claim_for_pair(&a, &b, &members, tags::COMM, "MPI_Comm_split")?;
        let g = Group::from_world_ranks(a, Some(self.proc_.p2p.world_rank()))?;
        let out = Some(self.inter_child(index, g, b, attr::Cache::default()));
        Ok(out)
    }
}

/// The verdict code for an error a leader reports to its group.
fn error_code(e: &Error) -> u32 {
    match e.class() {
        ErrorClass::Group => 2,
        ErrorClass::Rank => 3,
        _ => 1,
    }
}
