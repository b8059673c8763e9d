//! Groups (`MPI_Group`): ordered sets of processes, and their algebra.
//!
//! Layer L1 (imports L0 only): pure and local, no communication. A group
//! is a list of world ranks (rank `i` of the group is process
//! `members[i]`) plus the world rank of the calling process, so that
//! [`Group::rank`] can answer without asking anyone. Groups are immutable
//! and cheap to clone (one `Arc`).
//!
//! MPI 4.1 §7.3 decides every rule here; the seeds (`003_*`) say the same
//! for `incl` / `excl`: rank `i` of `incl(ranks)` is rank `ranks[i]` of the
//! input and `incl` of nothing is the empty group; `excl` keeps the
//! input's order and `excl` of nothing is an identical group.
#![forbid(unsafe_code)]

use crate::error::{Error, ErrorClass, Result};
use std::sync::Arc;

/// `MPI_UNDEFINED`: the rank of a process that is not in a group (in
/// [`Group::translate_ranks`]) and the colour of a process that wants no
/// part of a split. The value is MPICH's.
pub const UNDEFINED: i32 = -32766;

/// `MPI_PROC_NULL` as [`Group::translate_ranks`] passes it through (the
/// same value as `p2p::PROC_NULL`).
pub const PROC_NULL: i32 = -2;

/// The result of comparing two groups (`MPI_Group_compare`) or two
/// communicators (`MPI_Comm_compare`, which adds [`Congruent`]).
///
/// [`Congruent`]: Comparison::Congruent
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// `MPI_IDENT`: the same members in the same order (groups), or the
    /// very same communicator object.
    Ident,
    /// `MPI_CONGRUENT`: communicators with identical groups but different
    /// contexts.
    Congruent,
    /// `MPI_SIMILAR`: the same members in another order.
    Similar,
    /// `MPI_UNEQUAL`: anything else.
    Unequal,
}

/// An ordered set of processes.
#[derive(Clone, Debug)]
pub struct Group {
    members: Arc<[usize]>,
    /// World rank of the calling process (`None`: not known, as for a
    /// group built from nothing).
    me: Option<usize>,
}

impl PartialEq for Group {
    /// Groups are equal when they have the same members in the same order
    /// (`Comparison::Ident`).
    fn eq(&self, other: &Group) -> bool {
        self.members == other.members
    }
}
impl Eq for Group {}

impl Group {
    /// A group of the given world ranks, seen from process `me`.
    ///
    /// # Errors
    /// `Rank` when a process appears twice.
    pub fn from_world_ranks(members: Vec<usize>, me: Option<usize>) -> Result<Group> {
        let mut seen = members.clone();
        seen.sort_unstable();
        if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::new(
                ErrorClass::Rank,
                format!("process {} appears twice in the group", w[0]),
            ));
        }
        Ok(Group {
            members: members.into(),
            me,
        })
    }

    /// `MPI_GROUP_EMPTY`.
    pub fn empty() -> Group {
        Group {
            members: Arc::from(Vec::new()),
            me: None,
        }
    }

    fn with(&self, members: Vec<usize>) -> Group {
        Group {
            members: members.into(),
            me: self.me,
        }
    }

    /// Number of members (`MPI_Group_size`).
    pub fn size(&self) -> usize {
        self.members.len()
    }

    /// The calling process's rank in the group (`MPI_Group_rank`); `None`
    /// (`MPI_UNDEFINED`) when it is not a member.
    pub fn rank(&self) -> Option<usize> {
        let me = self.me?;
        self.members.iter().position(|&m| m == me)
    }

    /// World ranks of the members, in group order.
    pub fn world_ranks(&self) -> &[usize] {
        &self.members
    }

    /// The shared member list (for communicators built on this group).
    pub fn members_arc(&self) -> Arc<[usize]> {
        self.members.clone()
    }

    /// World rank of the calling process, as this group knows it.
    pub fn me(&self) -> Option<usize> {
        self.me
    }

    /// Rank of world process `world` in this group.
    pub fn rank_of(&self, world: usize) -> Option<usize> {
        self.members.iter().position(|&m| m == world)
    }

    /// Whether world process `world` is a member.
    pub fn contains(&self, world: usize) -> bool {
        self.rank_of(world).is_some()
    }

    /// `MPI_Group_translate_ranks`: for each rank of this group, its rank
    /// in `other`, or [`UNDEFINED`]; `PROC_NULL` (-1) stays `PROC_NULL`.
    ///
    /// # Errors
    /// `Rank` when a rank is out of range for this group.
    pub fn translate_ranks(&self, ranks: &[i32], other: &Group) -> Result<Vec<i32>> {
        ranks
            .iter()
            .map(|&r| {
                if r == PROC_NULL {
                    return Ok(PROC_NULL);
                }
                let w = self.member(r)?;
                Ok(other.rank_of(w).map_or(UNDEFINED, |x| x as i32))
            })
            .collect()
    }

    /// `MPI_Group_compare`: `Ident` (same members, same order), `Similar`
    /// (same members, another order) or `Unequal`.
    pub fn compare(&self, other: &Group) -> Comparison {
        if self.members == other.members {
            return Comparison::Ident;
        }
        if self.size() != other.size() {
            return Comparison::Unequal;
        }
        let mut a = self.members.to_vec();
        let mut b = other.members.to_vec();
        a.sort_unstable();
        b.sort_unstable();
        if a == b {
            Comparison::Similar
        } else {
            Comparison::Unequal
        }
    }

    /// `MPI_Group_union`: the members of `self`, then those of `other`
    /// that are not in `self`, each in its group's order.
    pub fn union(&self, other: &Group) -> Group {
        let mut v = self.members.to_vec();
        v.extend(other.members.iter().filter(|m| !self.contains(**m)));
        Group {
            members: v.into(),
            me: self.me.or(other.me),
        }
    }

    /// `MPI_Group_intersection`: the members of `self` that are also in
    /// `other`, in `self`'s order.
    pub fn intersection(&self, other: &Group) -> Group {
        let v = self
            .members
            .iter()
            .copied()
            .filter(|m| other.contains(*m))
            .collect();
        Group {
            me: self.me.or(other.me),
            ..self.with(v)
        }
    }

    /// `MPI_Group_difference`: the members of `self` that are not in
    /// `other`, in `self`'s order.
    pub fn difference(&self, other: &Group) -> Group {
        let v = self
            .members
            .iter()
            .copied()
            .filter(|m| !other.contains(*m))
            .collect();
        Group {
            me: self.me.or(other.me),
            ..self.with(v)
        }
    }

    /// `MPI_Group_incl`: rank `i` of the result is rank `ranks[i]` of
    /// `self`; no ranks gives the empty group.
    ///
    /// # Errors
    /// `Rank` for a rank out of range or given twice.
    pub fn incl(&self, ranks: &[i32]) -> Result<Group> {
        self.check_distinct(ranks)?;
        let v = ranks
            .iter()
            .map(|&r| self.member(r))
            .collect::<Result<Vec<_>>>()?;
        Ok(self.with(v))
    }

    /// `MPI_Group_excl`: `self` without the given ranks, in `self`'s
    /// order; no ranks gives an identical group.
    ///
    /// # Errors
    /// `Rank` for a rank out of range or given twice.
    pub fn excl(&self, ranks: &[i32]) -> Result<Group> {
        self.check_distinct(ranks)?;
        let mut drop = vec![false; self.size()];
        for &r in ranks {
            self.member(r)?;
            drop[r as usize] = true;
        }
        let v = self
            .members
            .iter()
            .zip(&drop)
            .filter(|(_, &d)| !d)
            .map(|(&m, _)| m)
            .collect();
        Ok(self.with(v))
    }

    /// `MPI_Group_range_incl`: `incl` of the ranks the triplets
    /// `(first, last, stride)` name, in order.
    ///
    /// # Errors
    /// `Arg` for a zero stride or a triplet that does not reach `last`
    /// (first > last with a positive stride, or first < last with a
    /// negative one); `Rank` for a rank out of range or named twice.
    pub fn range_incl(&self, ranges: &[(i32, i32, i32)]) -> Result<Group> {
        let ranks = self.expand(ranges)?;
        self.incl(&ranks)
    }

    /// `MPI_Group_range_excl`: `excl` of the ranks the triplets name.
    ///
    /// # Errors
    /// As [`range_incl`](Self::range_incl).
    pub fn range_excl(&self, ranges: &[(i32, i32, i32)]) -> Result<Group> {
        let ranks = self.expand(ranges)?;
        self.excl(&ranks)
    }

    /// `MPI_Group_free`: the handle goes away (memory is freed with the
    /// last clone).
    pub fn free(self) {}

    /// A 64-bit digest of the members in order: equal groups have equal
    /// digests, and different ones almost never do (FNV-1a over the world
    /// ranks and the size).
    pub fn digest(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for v in std::iter::once(self.size()).chain(self.members.iter().copied()) {
            for b in (v as u64).to_le_bytes() {
                h ^= b as u64;
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        h
    }

    fn member(&self, r: i32) -> Result<usize> {
        if r < 0 || r as usize >= self.size() {
            return Err(Error::new(
                ErrorClass::Rank,
                format!(
                    "rank {r} is out of range for a group of size {}",
                    self.size()
                ),
            ));
        }
        Ok(self.members[r as usize])
    }

    fn check_distinct(&self, ranks: &[i32]) -> Result<()> {
        let mut seen = vec![false; self.size()];
        for &r in ranks {
            self.member(r)?;
            if std::mem::replace(&mut seen[r as usize], true) {
                return Err(Error::new(
                    ErrorClass::Rank,
                    format!("rank {r} is given twice"),
                ));
            }
        }
        Ok(())
    }

    fn expand(&self, ranges: &[(i32, i32, i32)]) -> Result<Vec<i32>> {
        let mut out = Vec::new();
        for &(first, last, stride) in ranges {
            if stride == 0 {
                return Err(Error::new(
                    ErrorClass::Arg,
                    format!("range ({first}, {last}, {stride}): the stride is zero"),
                ));
            }
            if (stride > 0 && first > last) || (stride < 0 && first < last) {
                return Err(Error::new(
                    ErrorClass::Arg,
                    format!(
                        "range ({first}, {last}, {stride}) never reaches its last rank: \
                         the stride points away from it"
                    ),
                ));
            }
            // Check the ends before stepping, so a huge range over a small
            // group fails fast instead of allocating.
            self.member(first)?;
            self.member(last)?;
            let (first, last, stride) = (first as i64, last as i64, stride as i64);
            let n = (last - first) / stride + 1;
            if out.len() as i64 + n > self.size() as i64 {
                return Err(Error::new(
                    ErrorClass::Rank,
                    "the ranges name more ranks than the group has, so some twice",
                ));
            }
            out.extend((0..n).map(|k| (first + k * stride) as i32));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(v: &[usize], me: usize) -> Group {
        Group::from_world_ranks(v.to_vec(), Some(me)).unwrap()
    }

    #[test]
    fn incl_with_zero_ranks_gives_empty_group() {
        let a = g(&[0, 1, 2, 3], 0);
        let e = a.incl(&[]).unwrap();
        assert_eq!(e.size(), 0);
        assert_eq!(e.compare(&Group::empty()), Comparison::Ident);
        assert_eq!(e.rank(), None);
    }

    #[test]
    fn incl_rank_i_is_old_rank_ranks_i() {
        let a = g(&[10, 11, 12, 13, 14], 12);
        let b = a.incl(&[3, 0, 2]).unwrap();
        assert_eq!(b.world_ranks(), &[13, 10, 12]);
        assert_eq!(b.rank(), Some(2));
        assert_eq!(
            b.translate_ranks(&[0, 1, 2], &a).unwrap(),
            vec![3, 0, 2],
            "rank i of the new group is rank ranks[i] of the old"
        );
    }

    #[test]
    fn excl_keeps_the_old_order_and_with_zero_ranks_is_identical() {
        let a = g(&[5, 3, 9, 1], 9);
        assert_eq!(a.excl(&[]).unwrap().compare(&a), Comparison::Ident);
        let b = a.excl(&[1, 3]).unwrap();
        assert_eq!(b.world_ranks(), &[5, 9]);
        assert_eq!(b.rank(), Some(1));
    }

    #[test]
    fn duplicate_or_out_of_range_ranks_are_rank_errors() {
        let a = g(&[0, 1, 2], 0);
        for bad in [&[0, 0][..], &[3], &[-1], &[1, 2, 1]] {
            assert_eq!(
                a.incl(bad).unwrap_err().class(),
                ErrorClass::Rank,
                "{bad:?}"
            );
            assert_eq!(
                a.excl(bad).unwrap_err().class(),
                ErrorClass::Rank,
                "{bad:?}"
            );
        }
        assert_eq!(
            a.translate_ranks(&[5], &a).unwrap_err().class(),
            ErrorClass::Rank
        );
    }

    #[test]
    fn invalid_ranges_are_arg_errors() {
        let a = g(&[0, 1, 2, 3, 4, 5], 0);
        for bad in [(0, 4, 0), (4, 0, 1), (0, 4, -1)] {
            assert_eq!(
                a.range_incl(&[bad]).unwrap_err().class(),
                ErrorClass::Arg,
                "{bad:?}"
            );
            assert_eq!(a.range_excl(&[bad]).unwrap_err().class(), ErrorClass::Arg);
        }
        assert_eq!(
            a.range_incl(&[(0, 9, 1)]).unwrap_err().class(),
            ErrorClass::Rank
        );
        assert_eq!(
            a.range_incl(&[(0, 2, 1), (2, 3, 1)]).unwrap_err().class(),
            ErrorClass::Rank,
            "rank 2 named twice"
        );
    }

    #[test]
    fn ranges_step_both_ways() {
        let a = g(&[10, 11, 12, 13, 14, 15, 16, 17], 10);
        let b = a.range_incl(&[(6, 0, -3), (1, 5, 4)]).unwrap();
        assert_eq!(b.world_ranks(), &[16, 13, 10, 11, 15]);
        let c = a.range_excl(&[(6, 0, -3), (1, 5, 4)]).unwrap();
        assert_eq!(c.world_ranks(), &[12, 14, 17]);
        assert_eq!(a.range_incl(&[(2, 2, 5)]).unwrap().world_ranks(), &[12]);
    }

    #[test]
    fn compare_union_intersection_difference() {
        let a = g(&[0, 1, 2, 3], 1);
        let b = g(&[3, 2, 1, 0], 1);
        let c = g(&[2, 4, 0], 1);
        assert_eq!(a.compare(&a.clone()), Comparison::Ident);
        assert_eq!(a.compare(&b), Comparison::Similar);
        assert_eq!(a.compare(&c), Comparison::Unequal);
        assert_eq!(a.union(&c).world_ranks(), &[0, 1, 2, 3, 4]);
        assert_eq!(c.union(&a).world_ranks(), &[2, 4, 0, 1, 3]);
        assert_eq!(a.intersection(&c).world_ranks(), &[0, 2]);
        assert_eq!(c.intersection(&a).world_ranks(), &[2, 0]);
        assert_eq!(a.difference(&c).world_ranks(), &[1, 3]);
        assert_eq!(c.difference(&a).world_ranks(), &[4]);
        assert_eq!(a.difference(&a).size(), 0);
        assert_eq!(c.difference(&a).rank(), None);
    }

    #[test]
    fn translate_ranks_gives_undefined_for_absent_and_keeps_proc_null() {
        let a = g(&[0, 1, 2, 3], 0);
        let c = g(&[2, 4, 0], 0);
        assert_eq!(
            a.translate_ranks(&[0, 1, 2, PROC_NULL], &c).unwrap(),
            vec![2, UNDEFINED, 0, PROC_NULL]
        );
    }
}
