//! Shared-memory windows (issue 9): every member's part of one shared
//! file, reached by put/get and accumulates under fence and lock epochs.

mod support;

use shmpi::comm::LockType;
use shmpi::{ErrorClass, Op};
use support::run_ranks;

#[test]
fn fence_epochs_carry_puts_and_gets_between_all_members() {
    run_ranks(
        4,
        "fence_epochs_carry_puts_and_gets_between_all_members",
        |u| {
            let w = u.world();
            let (me, n) = (w.rank(), w.size());
            let win = w.win_allocate_shared(8 * n as usize, 8).unwrap();
            for r in 0..n {
                let (_, size, unit) = win.shared_query(r).unwrap();
                assert_eq!((size, unit), (8 * n as usize, 8));
            }
            win.fence().unwrap();
            // Each rank writes its stamp into slot `me` of every member.
            for r in 0..n {
                win.put(&[(100 * me + r) as u64], r, me as usize).unwrap();
            }
            win.fence().unwrap();
            let mut mine = vec![0u64; n as usize];
            win.get(&mut mine, me, 0).unwrap();
            for (s, v) in mine.iter().enumerate() {
                assert_eq!(*v, (100 * s as i32 + me) as u64, "slot {s}");
            }
            win.fence().unwrap();
            win.free().unwrap();
        },
    );
}

#[test]
fn fetch_and_op_counters_from_eight_ranks_sum_exactly() {
    run_ranks(
        8,
        "fetch_and_op_counters_from_eight_ranks_sum_exactly",
        |u| {
            let w = u.world();
            let (me, n) = (w.rank(), w.size());
            let win = w
                .win_allocate_shared(if me == 0 { 16 } else { 0 }, 8)
                .unwrap();
            win.fence().unwrap();
            win.fence().unwrap();
            win.lock_all().unwrap();
            let mut seen = Vec::new();
            for _ in 0..50 {
                seen.push(win.fetch_and_op(1i64, 0, 0, &Op::Sum).unwrap());
                win.accumulate(&[2i64], 0, 1, &Op::Sum).unwrap();
            }
            win.unlock_all().unwrap();
            let mut all = vec![0i64; 50 * n as usize];
            w.allgather(&seen, &mut all).unwrap();
            all.sort_unstable();
            assert!(
                all.iter().enumerate().all(|(i, &v)| v == i as i64),
                "fetched values are distinct"
            );
            w.barrier().unwrap();
            win.lock(LockType::Shared, 0).unwrap();
            let mut v = [0i64; 2];
            win.get(&mut v, 0, 0).unwrap();
            win.unlock(0).unwrap();
            assert_eq!(v, [50 * n as i64, 100 * n as i64]);
            win.free().unwrap();
        },
    );
}

#[test]
fn a_compare_and_swap_lock_guards_a_shared_counter() {
    run_ranks(4, "a_compare_and_swap_lock_guards_a_shared_counter", |u| {
        let w = u.world();
        let n = w.size();
        let win = w
            .win_allocate_shared(if w.rank() == 0 { 16 } else { 0 }, 8)
            .unwrap();
        win.lock_all().unwrap();
        for _ in 0..20 {
            while win.compare_and_swap(1u64, 0u64, 0, 0).unwrap() != 0 {
                std::thread::yield_now();
            }
            let mut c = [0u64];
            win.get(&mut c, 0, 1).unwrap();
            win.put(&[c[0] + 1], 0, 1).unwrap();
            win.flush();
            assert_eq!(win.compare_and_swap(0u64, 1u64, 0, 0).unwrap(), 1);
        }
        win.unlock_all().unwrap();
        w.barrier().unwrap();
        win.lock(LockType::Exclusive, 0).unwrap();
        let mut c = [0u64];
        win.get(&mut c, 0, 1).unwrap();
        win.unlock(0).unwrap();
        assert_eq!(c[0], 20 * n as u64);
        win.free().unwrap();
    });
}

#[test]
fn accesses_outside_an_epoch_or_the_memory_are_errors() {
    run_ranks(
        2,
        "accesses_outside_an_epoch_or_the_memory_are_errors",
        |u| {
            let w = u.world();
            w.set_errhandler(shmpi::ErrHandler::Return);
            let win = w.win_allocate_shared(64, 4).unwrap();
            let e = win.put(&[1u32], 1 - w.rank(), 0).unwrap_err();
            assert_eq!(e.class(), ErrorClass::RmaSync, "{e}");
            win.fence().unwrap();
            let e = win.put(&[1u32; 2], 0, 15).unwrap_err();
            assert_eq!(e.class(), ErrorClass::RmaRange, "{e}");
            let e = win.get(&mut [0u32], 5, 0).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Rank, "{e}");
            win.put(&[7u32], 0, 15).unwrap();
            win.lock(LockType::Shared, 0).unwrap();
            let e = win.lock(LockType::Shared, 0).unwrap_err();
            assert_eq!(e.class(), ErrorClass::RmaSync);
            win.unlock(0).unwrap();
            assert_eq!(win.unlock(0).unwrap_err().class(), ErrorClass::RmaSync);
            win.fence().unwrap();
            win.free().unwrap();
        },
    );
}

#[test]
fn post_start_complete_wait_opens_and_closes_epochs_pairwise() {
    run_ranks(
        2,
        "post_start_complete_wait_opens_and_closes_epochs_pairwise",
        |u| {
            let w = u.world();
            let win = w.win_allocate_shared(64, 8).unwrap();
            for round in 0..3u64 {
                if w.rank() == 0 {
                    win.post(&[1]).unwrap();
                    win.wait().unwrap();
                    let mut v = [0u64];
                    win.lock(LockType::Shared, 0).unwrap();
                    win.get(&mut v, 0, 2).unwrap();
                    win.unlock(0).unwrap();
                    assert_eq!(v[0], 100 + round);
                } else {
                    win.start(&[0]).unwrap();
                    win.put(&[100 + round], 0, 2).unwrap();
                    win.complete().unwrap();
                    // Outside the epoch again.
                    w.set_errhandler(shmpi::ErrHandler::Return);
                    assert_eq!(
                        win.put(&[1u64], 0, 2).unwrap_err().class(),
                        ErrorClass::RmaSync
                    );
                }
            }
            win.free().unwrap();
        },
    );
}
