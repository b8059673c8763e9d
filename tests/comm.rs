//! Groups and communicators over real ranks: the seed statements
//! (`003_*`, `004_*`, `000_*`), SPEC's semantics list, context ids and
//! intercommunicators. Test names are the statements they check.

mod support;

use shmpi::{
    Communicator, Comparison, ErrHandler, ErrorClass, Group, Keyval, SplitType, ANY_SOURCE,
    UNDEFINED,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use support::{run_ranks, run_ranks_with, run_sizes};

const SIZES: &[usize] = &[1, 2, 3, 4, 8];

/// Every member sends its rank to the next and receives from the
/// previous, then all meet in a barrier: point-to-point and collectives
/// work on `c`.
fn ring_check(c: &Communicator) {
    let n = c.size();
    let me = c.rank();
    let mut got = [0i32; 2];
    let payload = [me, c.context_id() as i32];
    let r = c.irecv(&mut got, (me + n - 1) % n, 77).unwrap();
    c.send(&payload, (me + 1) % n, 77).unwrap();
    r.wait().unwrap();
    assert_eq!(got[0], (me + n - 1) % n, "message from the previous rank");
    assert_eq!(
        got[1],
        c.context_id() as i32,
        "sent on the same communicator"
    );
    c.barrier().unwrap();
}

fn world_ranks(c: &Communicator) -> Vec<usize> {
    c.group().world_ranks().to_vec()
}

#[test]
fn comm_size_of_world_is_the_number_of_processes_and_rank_is_in_range() {
    run_sizes(
        SIZES,
        "comm_size_of_world_is_the_number_of_processes_and_rank_is_in_range",
        |u| {
            let w = u.world();
            let n: usize = std::env::var("SHMPI_SIZE").unwrap().parse().unwrap();
            assert_eq!(w.size() as usize, n);
            assert!((0..w.size()).contains(&w.rank()));
            assert_eq!(w.rank() as usize, u.rank());
            assert_eq!(w.name(), "MPI_COMM_WORLD");
            assert!(!w.is_inter());
            assert_eq!(w.group().size(), n);
            assert_eq!(w.group().rank(), Some(w.rank() as usize));
            let s = u.self_comm();
            assert_eq!((s.size(), s.rank()), (1, 0));
            assert_eq!(s.name(), "MPI_COMM_SELF");
            assert_eq!(s.group().world_ranks(), &[u.rank()]);
            ring_check(&s);
            ring_check(&w);
        },
    );
}

#[test]
fn comm_compare_is_ident_only_for_the_same_object() {
    run_sizes(
        SIZES,
        "comm_compare_is_ident_only_for_the_same_object",
        |u| {
            let w = u.world();
            let n = w.size();
            assert_eq!(w.compare(&w.clone()), Comparison::Ident);
            let d = w.dup().unwrap();
            assert_eq!(
                w.compare(&d),
                Comparison::Congruent,
                "same group, other context"
            );
            assert_eq!(d.compare(&w), Comparison::Congruent);
            assert_ne!(d.context_id(), w.context_id());
            // Reversed order: the same members, so Similar (Congruent at 1).
            let r = w.split(0, n - w.rank()).unwrap().unwrap();
            assert_eq!(r.rank(), n - 1 - w.rank());
            let want = if n == 1 {
                Comparison::Congruent
            } else {
                Comparison::Similar
            };
            assert_eq!(w.compare(&r), want);
            let half = w.split(w.rank() % 2, 0).unwrap().unwrap();
            let want = if n == 1 {
                Comparison::Congruent
            } else {
                Comparison::Unequal
            };
            assert_eq!(w.compare(&half), want);
            assert_eq!(
                w.compare(&u.self_comm()),
                if n == 1 {
                    Comparison::Congruent
                } else {
                    Comparison::Unequal
                }
            );
        },
    );
}

#[test]
fn dup_has_the_same_group_a_new_context_and_separate_traffic() {
    run_sizes(
        &[2, 3, 8],
        "dup_has_the_same_group_a_new_context_and_separate_traffic",
        |u| {
            let w = u.world();
            let d = w.dup().unwrap();
            assert_eq!(d.group(), w.group());
            assert_eq!((d.size(), d.rank()), (w.size(), w.rank()));
            assert_eq!(d.name(), "", "names are not inherited");
            if w.rank() == 0 {
                // Same destination, source and tag on both: the receiver
                // must tell them apart by context.
                d.send(&[2u8], 1, 5).unwrap();
                w.send(&[1u8], 1, 5).unwrap();
            } else if w.rank() == 1 {
                let mut b = [0u8];
                w.recv(&mut b, ANY_SOURCE, 5).unwrap();
                assert_eq!(b, [1], "the world message, though the dup one came first");
                d.recv(&mut b, 0, 5).unwrap();
                assert_eq!(b, [2]);
            }
            ring_check(&d);
        },
    );
}

#[test]
fn split_ranks_by_key_then_old_rank_and_undefined_gives_none() {
    run_sizes(
        SIZES,
        "split_ranks_by_key_then_old_rank_and_undefined_gives_none",
        |u| {
            let w = u.world();
            let (me, n) = (w.rank(), w.size());
            // Colour by rank mod 3, the last rank opts out; keys reverse
            // the order for colour 1 and tie (key 0) for the others.
            let color = if me == n - 1 && n > 1 {
                UNDEFINED
            } else {
                me % 3
            };
            let key = if color == 1 { -me } else { 0 };
            let s = w.split(color, key).unwrap();
            if color == UNDEFINED {
                assert!(s.is_none());
                return;
            }
            let s = s.unwrap();
            let mut members: Vec<i32> = (0..n)
                .filter(|&r| !(r == n - 1 && n > 1) && r % 3 == color)
                .collect();
            if color == 1 {
                members.reverse();
            }
            let want: Vec<usize> = members.iter().map(|&r| r as usize).collect();
            assert_eq!(world_ranks(&s), want);
            assert_eq!(
                s.rank() as usize,
                want.iter().position(|&r| r == me as usize).unwrap()
            );
            ring_check(&s);
        },
    );
}

#[test]
fn split_with_an_invalid_colour_is_an_arg_error_at_every_member() {
    run_ranks(
        3,
        "split_with_an_invalid_colour_is_an_arg_error_at_every_member",
        |u| {
            let w = u.world();
            w.set_errhandler(ErrHandler::Return);
            let color = if w.rank() == 1 { -5 } else { 0 };
            let e = w.split(color, 0).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Arg, "{e}");
            // The least colour is a colour too, named as such (it was the
            // refusal's marker: "rank 2's arguments were refused").
            let color = if w.rank() == 2 { i32::MIN } else { 0 };
            let e = w.split(color, 0).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Arg, "{e}");
            assert!(
                e.to_string().contains("rank 2 passed colour -2147483648"),
                "{e}"
            );
            // Nobody hangs, and the world still works.
            ring_check(&w);
        },
    );
}

#[test]
fn create_with_disjoint_subgroups_gives_each_its_own_communicator() {
    run_sizes(
        &[1, 2, 3, 4, 5, 8],
        "create_with_disjoint_subgroups_gives_each_its_own_communicator",
        |u| {
            let w = u.world();
            let (me, n) = (w.rank(), w.size());
            let g = w.group();
            // Evens and odds pass their own groups (MPI-2.2); the last rank
            // of an odd-sized job passes the empty group.
            let mine: Vec<i32> = if n % 2 == 1 && me == n - 1 && n > 1 {
                vec![]
            } else {
                (0..n)
                    .filter(|&r| r % 2 == me % 2 && !(n % 2 == 1 && r == n - 1 && n > 1))
                    .collect()
            };
            let sub = g.incl(&mine).unwrap();
            let c = w.create(&sub).unwrap();
            if mine.is_empty() {
                assert!(c.is_none(), "a process outside its group gets COMM_NULL");
            } else {
                let c = c.unwrap();
                assert_eq!(c.group(), sub);
                assert_eq!(c.size() as usize, mine.len());
                ring_check(&c);
                // A sub-communicator of a sub-communicator.
                let cg = c.group();
                let first = cg.incl(&[0]).unwrap();
                let cc = c
                    .create(&if c.rank() == 0 {
                        first.clone()
                    } else {
                        Group::empty()
                    })
                    .unwrap();
                assert_eq!(cc.is_some(), c.rank() == 0);
                if let Some(cc) = cc {
                    assert_eq!(cc.size(), 1);
                    ring_check(&cc);
                }
            }
            // The classic MPI-1 form: everyone passes the same group.
            let all_but_0 = g.excl(&[0]).unwrap();
            let c = w.create(&all_but_0).unwrap();
            assert_eq!(c.is_some(), me != 0);
            if let Some(c) = c {
                assert_eq!(c.rank(), me - 1);
                ring_check(&c);
            }
        },
    );
}

#[test]
fn create_with_groups_that_differ_between_members_is_a_group_error_not_a_hang() {
    run_ranks(
        4,
        "create_with_groups_that_differ_between_members_is_a_group_error_not_a_hang",
        |u| {
            let w = u.world();
            w.set_errhandler(ErrHandler::Return);
            let g = w.group();
            // Ranks 0 and 1 name the same members in different orders; 2
            // and 3 agree on theirs.
            let mine = match w.rank() {
                0 => g.incl(&[0, 1]).unwrap(),
                1 => g.incl(&[1, 0]).unwrap(),
                _ => g.incl(&[2, 3]).unwrap(),
            };
            let r = w.create(&mine);
            if w.rank() < 2 {
                assert_eq!(r.unwrap_err().class(), ErrorClass::Group);
            } else {
                let c = r.unwrap().unwrap();
                ring_check(&c);
            }
            // A group that is not a subgroup: everyone fails, nobody hangs.
            let sub = w.split(w.rank() / 2, 0).unwrap().unwrap();
            sub.set_errhandler(ErrHandler::Return);
            let outside = g.incl(&[(w.rank() + 2) % 4]).unwrap();
            let e = sub.create(&outside).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Group, "{e}");
            ring_check(&w);
        },
    );
}

#[test]
fn create_group_is_collective_over_the_group_only() {
    run_sizes(
        &[2, 3, 4, 8],
        "create_group_is_collective_over_the_group_only",
        |u| {
            let w = u.world();
            let (me, n) = (w.rank(), w.size());
            let evens: Vec<i32> = (0..n).filter(|r| r % 2 == 0).collect();
            if me % 2 == 0 {
                // Reversed order: rank i of the result is evens[len - 1 - i].
                let rev: Vec<i32> = evens.iter().rev().copied().collect();
                let g = w.group().incl(&rev).unwrap();
                let c = w.create_group(&g, 42).unwrap().unwrap();
                assert_eq!(c.group(), g);
                ring_check(&c);
            }
            // The odd ranks never called it; they meet the evens here.
            w.barrier().unwrap();
        },
    );
}

#[test]
fn create_group_with_members_in_different_orders_is_a_group_error_and_outside_it_gives_none() {
    run_ranks(
        3,
        "create_group_with_members_in_different_orders_is_a_group_error_and_outside_it_gives_none",
        |u| {
            let w = u.world();
            w.set_errhandler(ErrHandler::Return);
            let order: &[i32] = if w.rank() == 1 {
                &[2, 1, 0]
            } else {
                &[0, 1, 2]
            };
            let g = w.group().incl(order).unwrap();
            let e = w.create_group(&g, 3).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Group, "{e}");
            let e = w.create_group(&g, -1).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Tag);
            // Not a member (MPI 4.1 §7.4.2): no communicator, a local
            // call that succeeds; so with the empty group.
            let not_me = w.group().excl(&[w.rank()]).unwrap();
            assert!(w.create_group(&not_me, 0).unwrap().is_none());
            assert!(w.create_group(&Group::empty(), 0).unwrap().is_none());
            ring_check(&w);
        },
    );
}

#[test]
fn split_type_shared_holds_the_whole_job_and_numa_and_package_split_by_binding() {
    run_sizes(
        &[1, 3, 4],
        "split_type_shared_holds_the_whole_job_and_numa_and_package_split_by_binding",
        |u| {
            let w = u.world();
            let s = w.split_type(SplitType::Shared, 0).unwrap().unwrap();
            assert_eq!(s.compare(&w), Comparison::Congruent);
            ring_check(&s);
            for t in [SplitType::Numa, SplitType::Package] {
                // This machine has one NUMA node and one package.
                let c = w.split_type(t, -w.rank()).unwrap().unwrap();
                assert_eq!(c.size(), w.size());
                assert_eq!(c.rank(), w.size() - 1 - w.rank(), "ordered by key");
                ring_check(&c);
            }
        },
    );
}

#[test]
fn dup_copies_attributes_through_copy_callbacks_and_free_runs_delete_callbacks() {
    run_ranks(
        2,
        "dup_copies_attributes_through_copy_callbacks_and_free_runs_delete_callbacks",
        |u| {
            let w = u.world();
            let deleted = Arc::new(AtomicUsize::new(0));
            let d2 = deleted.clone();
            let plus_one = Keyval::new(
                Some(Arc::new(|_, v| Some(v + 1))),
                Some(Arc::new(move |_, v| {
                    d2.fetch_add(v, Ordering::SeqCst);
                })),
            );
            let same = Keyval::dup_fn(None);
            let never = Keyval::new(None, None);
            let base = w.dup().unwrap();
            base.set_attr(&plus_one, 10);
            base.set_attr(&same, 7);
            base.set_attr(&never, 3);
            let d = base.dup().unwrap();
            assert_eq!(d.attr(&plus_one), Some(11));
            assert_eq!(d.attr(&same), Some(7));
            assert_eq!(d.attr(&never), None, "NULL_COPY_FN leaves it out");
            // split and create do not propagate attributes.
            let s = base.split(0, 0).unwrap().unwrap();
            assert_eq!(s.attr(&same), None);
            let c = base.create(&base.group()).unwrap().unwrap();
            assert_eq!(c.attr(&plus_one), None);
            // Replacing runs the delete callback on the old value.
            d.set_attr(&plus_one, 100);
            assert_eq!(deleted.load(Ordering::SeqCst), 11);
            d.delete_attr(&plus_one).unwrap();
            assert_eq!(deleted.load(Ordering::SeqCst), 111);
            d.set_errhandler(ErrHandler::Return);
            assert_eq!(
                d.delete_attr(&plus_one).unwrap_err().class(),
                ErrorClass::Arg
            );
            drop(d);
            // Freeing the last handle runs the delete callbacks.
            let keep = base.clone();
            drop(base);
            assert_eq!(
                deleted.load(Ordering::SeqCst),
                111,
                "a clone still holds it"
            );
            keep.free();
            assert_eq!(deleted.load(Ordering::SeqCst), 121);
        },
    );
}

#[test]
fn errors_return_is_inherited_by_dup_split_and_create() {
    run_ranks(
        2,
        "errors_return_is_inherited_by_dup_split_and_create",
        |u| {
            let w = u.world();
            assert!(
                matches!(w.errhandler(), ErrHandler::Fatal),
                "the default is fatal"
            );
            let d = w.dup().unwrap();
            d.set_errhandler(ErrHandler::Return);
            let dd = d.dup().unwrap();
            let s = d.split(0, 0).unwrap().unwrap();
            let c = d.create(&d.group()).unwrap().unwrap();
            for x in [&dd, &s, &c] {
                assert!(matches!(x.errhandler(), ErrHandler::Return));
                assert_eq!(x.send(&[1u8], 9, 0).unwrap_err().class(), ErrorClass::Rank);
            }
            let seen = Arc::new(AtomicUsize::new(0));
            let s2 = seen.clone();
            c.set_errhandler(ErrHandler::User(Arc::new(move |call, e| {
                assert_eq!(call, "MPI_Send");
                assert_eq!(e.class(), ErrorClass::Tag);
                s2.fetch_add(1, Ordering::SeqCst);
            })));
            assert!(c.send(&[1u8], 0, -4).is_err());
            assert_eq!(seen.load(Ordering::SeqCst), 1);
        },
    );
}

#[test]
fn errors_are_fatal_by_default_and_abort_the_job_naming_the_call_and_class() {
    let name = "errors_are_fatal_by_default_and_abort_the_job_naming_the_call_and_class";
    if support::is_rank_of(name) {
        let u = shmpi::init().unwrap();
        let w = u.world();
        w.barrier().unwrap();
        if w.rank() == 1 {
            let _ = w.send(&[1u8], 5, 0);
            unreachable!("a fatal error handler does not return");
        }
        // Rank 0 waits for a message that never comes; the launcher ends it.
        let mut b = [0u8];
        let _ = w.recv(&mut b, 1, 0);
        return;
    }
    let o = support::launch(2, name, &[], &[], std::time::Duration::from_secs(30));
    assert_ne!(o.code, Some(0));
    assert!(
        o.stderr.contains("MPI_Send") && o.stderr.contains("MPI_ERR_RANK"),
        "{}",
        o.stderr
    );
    support::assert_no_segments_left();
}

#[test]
fn disconnect_waits_for_pending_sends_frees_the_id_and_is_refused_on_world_and_self() {
    // Each rank waits on its big isend before it receives: that relies on
    // the send being buffered, which MPI does not promise (a rendezvous
    // makes it the classic unsafe ring). Single copy off, so the sends
    // take the queue path this test is about.
    support::run_ranks_with(
        3,
        "disconnect_waits_for_pending_sends_frees_the_id_and_is_refused_on_world_and_self",
        &[],
        &[("SHMPI_CMA", "off")],
        |u| {
            let w = u.world();
            w.set_errhandler(ErrHandler::Return);
            assert_eq!(
                w.clone().disconnect().unwrap_err().class(),
                ErrorClass::Comm
            );
            let s = u.self_comm();
            s.set_errhandler(ErrHandler::Return);
            assert_eq!(s.disconnect().unwrap_err().class(), ErrorClass::Comm);
            let d = w.dup().unwrap();
            let id = d.context_id();
            // Big nonblocking sends that outlive their requests' waits in
            // the queue: disconnect must deliver them first.
            let big = vec![w.rank() as u8; 3 << 20];
            let to = (w.rank() + 1) % 3;
            {
                let r = d.isend(&big, to, 1).unwrap();
                r.wait().unwrap();
            }
            let mut got = vec![0u8; 3 << 20];
            d.recv(&mut got, (w.rank() + 2) % 3, 1).unwrap();
            assert!(got.iter().all(|&b| b == ((w.rank() + 2) % 3) as u8));
            d.disconnect().unwrap();
            // Ids come back: many dup + disconnect cycles use a handful.
            // (A leader may claim before a slower member has released, so
            // the very next id need not be the same one.)
            let mut ids = vec![id];
            for _ in 0..2000 {
                let d = w.dup().unwrap();
                ids.push(d.context_id());
                d.disconnect().unwrap();
            }
            ids.sort_unstable();
            ids.dedup();
            assert!(ids.len() <= 4, "ids are reused: {ids:?}");
        },
    );
}

#[test]
fn context_ids_come_back_after_100000_create_free_cycles() {
    run_ranks(
        2,
        "context_ids_come_back_after_100000_create_free_cycles",
        |u| {
            let w = u.world();
            let mut ids = std::collections::BTreeSet::new();
            for i in 0..100_000 {
                let d = if i % 2 == 0 {
                    w.dup().unwrap()
                } else {
                    w.split(0, 0).unwrap().unwrap()
                };
                ids.insert(d.context_id());
            }
            // Freeing is local, so a leader may claim before the other
            // member has released the previous id; but ids come back, so a
            // few serve all 100,000 communicators.
            assert!(ids.len() <= 4, "{ids:?}");
        },
    );
}

#[test]
fn a_million_live_dups_fit_and_running_out_is_a_clear_error() {
    // Memory per communicator is in docs/context-ids.md: at 2 ranks about
    // 0.3 GB per rank for 2^20 communicators.
    run_ranks(
        2,
        "a_million_live_dups_fit_and_running_out_is_a_clear_error",
        |u| {
            let w = u.world();
            w.set_errhandler(ErrHandler::Return);
            let mut live = Vec::with_capacity(1 << 20);
            let e = loop {
                match w.dup() {
                    Ok(c) => live.push(c),
                    Err(e) => break e,
                }
            };
            assert_eq!(e.class(), ErrorClass::Other);
            assert!(e.to_string().contains("context id"), "{e}");
            assert_eq!(
                live.len(),
                (1 << 20) - 2,
                "every index but WORLD's and SELF's"
            );
            let mut ids: Vec<u32> = live.iter().map(|c| c.context_id()).collect();
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(ids.len(), live.len(), "all distinct");
            ring_check(live.last().unwrap());
            let freed = live.swap_remove(12_345).context_id();
            // Freeing is local: meet first, so both ranks have released it.
            w.barrier().unwrap();
            let again = w.dup().unwrap();
            assert_eq!(again.context_id(), freed, "a freed id is reused");
            drop(live);
            ring_check(&again);
        },
    );
}

#[test]
fn concurrent_creations_on_overlapping_communicators_from_two_threads_never_collide() {
    run_ranks(
        4,
        "concurrent_creations_on_overlapping_communicators_from_two_threads_never_collide",
        |u| {
            let w = u.world();
            let half = w.split(w.rank() / 2, 0).unwrap().unwrap();
            let other = w.dup().unwrap();
            std::thread::scope(|s| {
                let a = s.spawn(|| (0..300).map(|_| w.dup().unwrap()).collect::<Vec<_>>());
                let b = s.spawn(|| {
                    (0..300)
                        .map(|i| {
                            if i % 2 == 0 {
                                half.dup().unwrap()
                            } else {
                                other.split(0, 0).unwrap().unwrap()
                            }
                        })
                        .collect::<Vec<_>>()
                });
                let mut all = a.join().unwrap();
                all.extend(b.join().unwrap());
                let mut ids: Vec<u32> = all.iter().map(|c| c.context_id()).collect();
                ids.sort_unstable();
                ids.dedup();
                assert_eq!(ids.len(), 600, "no two live communicators share an id");
                for c in all.iter().step_by(37) {
                    ring_check(c);
                }
            });
        },
    );
}

/// The sequential model of one communicator: its members (world ranks)
/// in rank order.
type Model = Vec<usize>;

/// A small deterministic generator shared by all ranks (same seed, same
/// sequence), so every rank knows the whole random schedule.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn a_random_tree_of_200_communicators_matches_the_sequential_model() {
    run_ranks(
        8,
        "a_random_tree_of_200_communicators_matches_the_sequential_model",
        |u| {
            let w = u.world();
            let me = u.rank();
            let mut rng = Rng(0x5eed_1234_abcd_0001);
            // models[i]: the members of communicator i (world ranks in rank
            // order), the same at every rank; comms[i]: this process's
            // handle when it is a member.
            let mut models: Vec<Model> = vec![(0..8).collect()];
            let mut comms: Vec<Option<Communicator>> = vec![Some(w.clone())];
            let mut ops = [0usize; 4];
            while models.len() < 201 {
                let p = rng.below(models.len());
                let parent = models[p].clone();
                let pos = parent.iter().position(|&x| x == me);
                let parent_comm = comms[p].clone();
                let c = parent_comm.as_ref();
                let op = rng.below(4);
                ops[op] += 1;
                // Every choice is drawn whether or not this process takes
                // part, so all ranks stay in step.
                let (results, got): (Vec<Model>, Option<Communicator>) = match op {
                    0 => (vec![parent.clone()], c.map(|c| c.dup().unwrap())),
                    1 => {
                        let colors: Vec<i32> = parent
                            .iter()
                            .map(|_| match rng.below(5) {
                                0 => UNDEFINED,
                                k => (k % 3) as i32,
                            })
                            .collect();
                        let keys: Vec<i32> = parent.iter().map(|_| rng.below(4) as i32).collect();
                        let mut out = vec![];
                        for color in 0..3 {
                            let mut idx: Vec<usize> =
                                (0..parent.len()).filter(|&i| colors[i] == color).collect();
                            idx.sort_by_key(|&i| (keys[i], i));
                            if !idx.is_empty() {
                                out.push(idx.iter().map(|&i| parent[i]).collect());
                            }
                        }
                        let got = pos.and_then(|i| c.unwrap().split(colors[i], keys[i]).unwrap());
                        (out, got)
                    }
                    2 => {
                        // Disjoint groups in shuffled order: each member is
                        // in one of 3 bins or in none (bin 3).
                        let bins: Vec<usize> = parent.iter().map(|_| rng.below(4)).collect();
                        let mut out = vec![];
                        let mut passed = vec![Vec::new(); parent.len()];
                        for bin in 0..3 {
                            let mut m: Vec<usize> =
                                (0..parent.len()).filter(|&i| bins[i] == bin).collect();
                            for i in (1..m.len()).rev() {
                                m.swap(i, rng.below(i + 1));
                            }
                            for &i in &m {
                                passed[i] = m.iter().map(|&x| x as i32).collect();
                            }
                            if !m.is_empty() {
                                out.push(m.iter().map(|&i| parent[i]).collect());
                            }
                        }
                        let got = pos.and_then(|i| {
                            let c = c.unwrap();
                            let g = c.group().incl(&passed[i]).unwrap();
                            c.create(&g).unwrap()
                        });
                        (out, got)
                    }
                    _ => {
                        // create_group over a random non-empty subset, in
                        // parent order, tagged by the model index.
                        let mut m: Vec<usize> =
                            (0..parent.len()).filter(|_| rng.below(2) == 0).collect();
                        if m.is_empty() {
                            m.push(rng.below(parent.len()));
                        }
                        let world: Model = m.iter().map(|&i| parent[i]).collect();
                        let tag = models.len() as i32;
                        let got = world.contains(&me).then(|| {
                            let c = c.unwrap();
                            let ranks: Vec<i32> = m.iter().map(|&i| i as i32).collect();
                            let g = c.group().incl(&ranks).unwrap();
                            c.create_group(&g, tag).unwrap().unwrap()
                        });
                        (vec![world], got)
                    }
                };
                let mut got = got;
                for model in results {
                    let h = if model.contains(&me) {
                        let h = got.take().expect("a member gets its communicator");
                        assert_eq!(world_ranks(&h), model);
                        assert_eq!(h.size() as usize, model.len());
                        assert_eq!(
                            h.rank() as usize,
                            model.iter().position(|&x| x == me).unwrap()
                        );
                        let (mut a, mut b) = (model.clone(), parent.clone());
                        a.sort_unstable();
                        b.sort_unstable();
                        let want = if model == parent {
                            Comparison::Congruent
                        } else if a == b {
                            Comparison::Similar
                        } else {
                            Comparison::Unequal
                        };
                        assert_eq!(h.compare(c.unwrap()), want);
                        ring_check(&h);
                        Some(h)
                    } else {
                        None
                    };
                    models.push(model);
                    comms.push(h);
                }
                assert!(got.is_none(), "no communicator the model does not know");
            }
            assert!(
                ops.iter().all(|&k| k > 10),
                "every constructor ran: {ops:?}"
            );
            drop(comms);
            ring_check(&w);
        },
    );
}

#[test]
fn intercomm_create_gives_remote_groups_point_to_point_barrier_and_merge() {
    run_sizes(
        &[2, 3, 5, 8],
        "intercomm_create_gives_remote_groups_point_to_point_barrier_and_merge",
        |u| {
            let w = u.world();
            let (me, n) = (w.rank(), w.size());
            // Low half and high half; leaders are their local rank 0,
            // world ranks 0 and n/2.
            let low = me < n / 2;
            let local = w.split(i32::from(!low), me).unwrap().unwrap();
            let remote_leader = if low { n / 2 } else { 0 };
            let ic = local.intercomm_create(0, &w, remote_leader, 99).unwrap();
            assert!(ic.is_inter());
            let (lsize, rsize) = if low {
                (n / 2, n - n / 2)
            } else {
                (n - n / 2, n / 2)
            };
            assert_eq!((ic.size(), ic.remote_size().unwrap()), (lsize, rsize));
            assert_eq!(ic.group(), local.group());
            let rg = ic.remote_group().unwrap();
            let want: Vec<usize> = if low {
                (n as usize / 2..n as usize).collect()
            } else {
                (0..n as usize / 2).collect()
            };
            assert_eq!(rg.world_ranks(), &want[..]);
            // Point-to-point: ranks name the remote group.
            let r = ic.rank();
            let to = r % rsize;
            let mut got = vec![];
            let senders: Vec<i32> = (0..rsize).filter(|s| s % lsize == r).collect();
            ic.send(&[me], to, 5).unwrap();
            for &s in &senders {
                let mut b = [0i32];
                let st = ic.recv(&mut b, s, 5).unwrap();
                assert_eq!(st.source, s, "the source is a remote rank");
                got.push(b[0]);
            }
            let want: Vec<i32> = senders
                .iter()
                .map(|&s| rg.world_ranks()[s as usize] as i32)
                .collect();
            assert_eq!(got, want);
            ic.barrier().unwrap();
            // Merge: the high = false side comes first.
            let m = ic.intercomm_merge(!low).unwrap();
            assert!(!m.is_inter());
            assert_eq!(world_ranks(&m), (0..n as usize).collect::<Vec<_>>());
            ring_check(&m);
            let m2 = ic.intercomm_merge(low).unwrap();
            let mut want: Vec<usize> = (n as usize / 2..n as usize).collect();
            want.extend(0..n as usize / 2);
            assert_eq!(world_ranks(&m2), want);
            // Dup of an intercommunicator is an intercommunicator.
            let d = ic.dup().unwrap();
            assert!(d.is_inter());
            assert_eq!(d.compare(&ic), Comparison::Congruent);
            assert_eq!(d.remote_group().unwrap(), rg);
            d.barrier().unwrap();
            ic.free();
        },
    );
}

#[test]
fn create_and_split_on_an_intercommunicator_use_subsets_of_each_side() {
    run_sizes(
        &[4, 6, 8],
        "create_and_split_on_an_intercommunicator_use_subsets_of_each_side",
        |u| {
            let w = u.world();
            let (me, n) = (w.rank(), w.size());
            let low = me < n / 2;
            let local = w.split(i32::from(!low), me).unwrap().unwrap();
            let ic = local
                .intercomm_create(0, &w, if low { n / 2 } else { 0 }, 7)
                .unwrap();
            // create: each side keeps its even local ranks.
            let evens: Vec<i32> = (0..ic.size()).filter(|r| r % 2 == 0).collect();
            let sub = ic.group().incl(&evens).unwrap();
            let c = ic.create(&sub).unwrap();
            assert_eq!(c.is_some(), ic.rank() % 2 == 0);
            if let Some(c) = &c {
                assert!(c.is_inter());
                assert_eq!(c.group(), sub);
                let remote_evens = (ic.remote_size().unwrap() + 1) / 2;
                assert_eq!(c.remote_size().unwrap(), remote_evens);
                c.barrier().unwrap();
            }
            // split: colour = local rank % 2 on both sides, key reverses.
            let s = ic.split(ic.rank() % 2, -ic.rank()).unwrap();
            let s = s.expect("both sides have both colours at these sizes");
            assert!(s.is_inter());
            let mine: Vec<i32> = (0..ic.size())
                .filter(|r| r % 2 == ic.rank() % 2)
                .rev()
                .collect();
            assert_eq!(s.group(), ic.group().incl(&mine).unwrap());
            s.barrier().unwrap();
            // A process outside a colour the other side lacks gets None.
            let only_low = if low { 0 } else { UNDEFINED };
            assert!(ic.split(only_low, 0).unwrap().is_none());
        },
    );
}

#[test]
fn intercomm_create_with_bad_leaders_or_overlapping_groups_fails_everywhere() {
    run_ranks(
        4,
        "intercomm_create_with_bad_leaders_or_overlapping_groups_fails_everywhere",
        |u| {
            let w = u.world();
            w.set_errhandler(ErrHandler::Return);
            let low = w.rank() < 2;
            let local = w.split(i32::from(!low), 0).unwrap().unwrap();
            local.set_errhandler(ErrHandler::Return);
            assert_eq!(
                local.intercomm_create(5, &w, 0, 1).unwrap_err().class(),
                ErrorClass::Rank
            );
            // Both sides name a leader inside the low group: overlapping.
            let e = w.intercomm_create(0, &w, 0, 2);
            assert!(e.is_err(), "an intercommunicator of a group with itself");
            // Remote leader out of range at one side: that side fails with
            // Rank; the other side's leader never hears and would wait, so
            // both sides get it wrong together only at the leaders: here
            // both leaders are given a bad remote leader.
            let e = local.intercomm_create(0, &w, 17, 3).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Rank);
            // A bad colour on one side of an intercommunicator split fails
            // on both sides.
            let ic = local
                .intercomm_create(0, &w, if low { 2 } else { 0 }, 4)
                .unwrap();
            ic.set_errhandler(ErrHandler::Return);
            let colour = if w.rank() == 3 { -9 } else { 0 };
            assert_eq!(ic.split(colour, 0).unwrap_err().class(), ErrorClass::Arg);
            ring_check(&w);
        },
    );
}

#[test]
fn group_operations_on_communicator_groups_agree_across_ranks() {
    run_sizes(
        &[3, 4, 8],
        "group_operations_on_communicator_groups_agree_across_ranks",
        |u| {
            let w = u.world();
            let n = w.size();
            let g = w.group();
            let evens = g.range_incl(&[(0, n - 1, 2)]).unwrap();
            let odds = g.range_excl(&[(0, n - 1, 2)]).unwrap();
            assert_eq!(evens.union(&odds).compare(&g), Comparison::Similar);
            assert_eq!(evens.intersection(&odds).size(), 0);
            assert_eq!(g.difference(&odds).compare(&evens), Comparison::Ident);
            assert_eq!(evens.rank().is_some(), w.rank() % 2 == 0);
            let e = w.split(w.rank() % 2, 0).unwrap().unwrap();
            let tr = e.group().translate_ranks(&[0], &g).unwrap();
            assert_eq!(tr, vec![w.rank() % 2]);
            let tr = g.translate_ranks(&[1], &evens).unwrap();
            assert_eq!(tr, vec![UNDEFINED]);
        },
    );
}

#[test]
fn dropping_a_communicator_frees_its_id_without_a_collective() {
    run_ranks_with(
        3,
        "dropping_a_communicator_frees_its_id_without_a_collective",
        &[],
        &[],
        |u| {
            let w = u.world();
            let a = w.dup().unwrap();
            let id = a.context_id();
            // Rank 0 drops early and keeps working; the others later.
            if w.rank() == 0 {
                drop(a);
                std::thread::sleep(std::time::Duration::from_millis(50));
            } else {
                std::thread::sleep(std::time::Duration::from_millis(100));
                drop(a);
            }
            // Everyone has dropped it before this dup claims: same id.
            w.barrier().unwrap();
            assert_eq!(w.dup().unwrap().context_id(), id);
        },
    );
}

/// Virtual topologies from the Rust API: a 2 x 2 grid (periodic along
/// dimension 0), its shifts, coordinates, a row sub-grid, dup keeping the
/// topology, a ring as a distributed graph with its neighbour lists, an
/// MPI 1 graph, and a distributed graph from edges one rank names.
#[test]
fn cartesian_grids_and_distributed_graphs_answer_from_the_rust_api() {
    run_ranks(
        4,
        "cartesian_grids_and_distributed_graphs_answer_from_the_rust_api",
        |u| {
            let w = u.world();
            let me = w.rank();
            let mut dims = [0, 0];
            shmpi::comm::dims_create(4, &mut dims).unwrap();
            assert_eq!(dims, [2, 2]);
            let g = w
                .cart_create(&dims, &[true, false], false)
                .unwrap()
                .unwrap();
            assert_eq!(g.rank(), me);
            let (d, p, c) = g.cart_get().unwrap();
            assert_eq!((d, p), (vec![2, 2], vec![true, false]));
            assert_eq!(c, vec![me / 2, me % 2]);
            assert_eq!(g.cart_rank(&c).unwrap(), me);
            assert_eq!(g.cart_rank(&[c[0] + 2, c[1]]).unwrap(), me);
            g.set_errhandler(shmpi::ErrHandler::Return);
            assert_eq!(
                g.cart_rank(&[c[0], 2]).unwrap_err().class(),
                ErrorClass::Rank
            );
            let other_row = (me + 2) % 4;
            assert_eq!(g.cart_shift(0, 1).unwrap(), (other_row, other_row));
            let (left, right) = g.cart_shift(1, 1).unwrap();
            assert_eq!(
                left,
                if me % 2 == 0 {
                    shmpi::PROC_NULL
                } else {
                    me - 1
                }
            );
            assert_eq!(
                right,
                if me % 2 == 1 {
                    shmpi::PROC_NULL
                } else {
                    me + 1
                }
            );
            let row = g.cart_sub(&[false, true]).unwrap();
            assert_eq!((row.size(), row.rank()), (2, me % 2));
            assert!(matches!(
                g.dup().unwrap().topology(),
                Some(shmpi::comm::Topology::Cart { .. })
            ));
            assert!(w.topology().is_none());
            let ring = w
                .dist_graph_create_adjacent(&[(me + 3) % 4], None, &[(me + 1) % 4], None, false)
                .unwrap();
            assert_eq!(
                ring.neighbors().unwrap(),
                (vec![(me + 3) % 4], vec![(me + 1) % 4])
            );
            let (ins, outs) = g.neighbors().unwrap();
            assert_eq!(ins, outs);
            assert_eq!(ins, vec![other_row, other_row, left, right]);

            // MPI 1's graph: a star around node 0 over ranks 0-2; rank 3
            // is past it.
            let star = w.graph_create(&[2, 3, 4], &[1, 2, 0, 0], false).unwrap();
            assert_eq!(star.is_none(), me == 3);
            if let Some(s) = star {
                assert_eq!(s.graph_get().unwrap(), (vec![2, 3, 4], vec![1, 2, 0, 0]));
                assert_eq!(s.graph_neighbors(0).unwrap(), vec![1, 2]);
                let mine = s.graph_neighbors(me).unwrap();
                assert_eq!(s.neighbors().unwrap(), (mine.clone(), mine));
            }
            w.set_errhandler(shmpi::ErrHandler::Return);
            assert_eq!(
                w.graph_create(&[1, 2], &[1, 5], false).unwrap_err().class(),
                ErrorClass::Arg
            );
            // Edges named anywhere: rank 0 names the whole reversed ring,
            // weighted; each member learns its own.
            let (src, deg, dst, wt): (Vec<i32>, Vec<i32>, Vec<i32>, Vec<i32>) = if me == 0 {
                (
                    (0..4).collect(),
                    vec![1; 4],
                    (0..4).map(|i| (i + 3) % 4).collect(),
                    (0..4).map(|i| 10 + i).collect(),
                )
            } else {
                Default::default()
            };
            let rev = w
                .dist_graph_create(&src, &deg, &dst, Some(&wt), false)
                .unwrap();
            let Some(shmpi::comm::Topology::DistGraph {
                sources,
                source_weights,
                destinations,
                destination_weights,
            }) = rev.topology()
            else {
                panic!("no distributed graph");
            };
            assert_eq!(sources, &vec![(me + 1) % 4]);
            assert_eq!(source_weights, &Some(vec![10 + (me + 1) % 4]));
            assert_eq!(destinations, &vec![(me + 3) % 4]);
            assert_eq!(destination_weights, &Some(vec![10 + me]));
            // A member naming an edge to no rank is refused with `Rank`;
            // the others with `Arg`, not left waiting.
            let bad = if me == 2 { 9 } else { me };
            let e = w
                .dist_graph_create(&[me], &[1], &[bad], None, false)
                .unwrap_err();
            let want = if me == 2 {
                ErrorClass::Rank
            } else {
                ErrorClass::Arg
            };
            assert_eq!(e.class(), want);
        },
    );
}
