//! Shared-memory windows (issue 9): every member's part of one shared
//! file, reached by put/get and accumulates under fence and lock epochs.

mod support;

use shmpi::comm::LockType;
use shmpi::{ErrHandler, ErrorClass, Exposed, Op};
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
            win.flush().unwrap();
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
fn a_zero_displacement_unit_at_one_member_fails_every_member_of_the_creation() {
    run_ranks(
        3,
        "a_zero_displacement_unit_at_one_member_fails_every_member_of_the_creation",
        |u| {
            let w = u.world();
            w.set_errhandler(shmpi::ErrHandler::Return);
            let unit = if w.rank() == 2 { 0 } else { 8 };
            // Before the change, rank 2 failed alone and the others waited
            // for it in the creation's exchange.
            let e = w.win_allocate_shared(64, unit).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Arg, "{e}");
            if w.rank() != 2 {
                assert!(e.to_string().contains("rank 2"), "{e}");
            }
            let e = w
                .win_create(Exposed::from_vec(vec![0u8; 64]), unit)
                .unwrap_err();
            assert_eq!(e.class(), ErrorClass::Arg, "{e}");
            // Still in step: a window all make works.
            let win = w.win_allocate_shared(8, 8).unwrap();
            win.fence().unwrap();
            win.free().unwrap();
        },
    );
}

#[test]
fn flushes_asserts_and_frees_are_checked_against_the_epochs() {
    run_ranks(
        3,
        "flushes_asserts_and_frees_are_checked_against_the_epochs",
        |u| {
            use shmpi::comm::win::mode;
            let w = u.world();
            w.set_errhandler(shmpi::ErrHandler::Return);
            let me = w.rank();
            let peer = (me + 1) % w.size();
            let win = w.win_allocate_shared(64, 4).unwrap();
            // A flush or sync needs a passive-target epoch.
            assert_eq!(win.flush().unwrap_err().class(), ErrorClass::RmaSync);
            assert_eq!(win.sync().unwrap_err().class(), ErrorClass::RmaSync);
            win.lock(LockType::Shared, peer).unwrap();
            win.flush().unwrap();
            win.sync().unwrap();
            win.unlock(peer).unwrap();
            assert_eq!(win.flush().unwrap_err().class(), ErrorClass::RmaSync);
            // A lock assertion is not a fence's: refused before the barrier.
            let e = win.fence_with(mode::NOCHECK as i32).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Assert, "{e}");
            // After a fence that asserts NOSUCCEED no epoch is open.
            win.fence_with(mode::NOPRECEDE as i32).unwrap();
            win.put(&[me as u32], peer, me as usize).unwrap();
            win.fence_with((mode::NOSUCCEED | mode::NOSTORE) as i32)
                .unwrap();
            let e = win.put(&[1u32], peer, 0).unwrap_err();
            assert_eq!(e.class(), ErrorClass::RmaSync, "{e}");
            let mut got = [0u32];
            win.lock(LockType::Shared, me).unwrap();
            win.get(&mut got, me, ((me + 2) % 3) as usize).unwrap();
            win.unlock(me).unwrap();
            assert_eq!(got[0], ((me + 2) % 3) as u32);
            // Freeing with a lock held is an error, but the free goes on
            // (the lock is released), so the others' frees return.
            win.lock(LockType::Exclusive, 0).unwrap();
            assert_eq!(win.free().unwrap_err().class(), ErrorClass::RmaSync);
            w.barrier().unwrap();
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

/// `win_create` over memory the ranks bring: a vector (reached by the
/// peers with `process_vm_readv`/`writev`) and an `alloc_mem` buffer
/// (through the shared pool); puts, gets and accumulate counters on both.
fn exercise_created(u: &shmpi::Universe, from_pool: bool) {
    let w = u.world();
    let (me, n) = (w.rank(), w.size());
    let len = n as usize + 1;
    let mem = if from_pool {
        let mut b = u.alloc_mem(8 * len).unwrap();
        b.fill(0);
        Exposed::from_shared(b)
    } else {
        Exposed::from_vec(vec![0u64; len])
    };
    let win = w.win_create(mem, 8).unwrap();
    assert_eq!(win.flavor(), shmpi::comm::Flavor::Create);
    let (own, size, unit) = win.shared_query(me).unwrap();
    assert!(!own.is_null());
    assert_eq!((size, unit), (8 * len, 8));
    win.fence().unwrap();
    for r in 0..n {
        win.put(&[(1000 * me + r) as u64], r, me as usize).unwrap();
    }
    win.fence().unwrap();
    let right = (me + 1) % n;
    let mut theirs = vec![0u64; n as usize];
    win.get(&mut theirs, right, 0).unwrap();
    for (s, v) in theirs.iter().enumerate() {
        assert_eq!(
            *v,
            (1000 * s as i32 + right) as u64,
            "slot {s} of rank {right}"
        );
    }
    win.fence().unwrap();
    win.lock(LockType::Shared, 0).unwrap();
    for _ in 0..20 {
        win.accumulate(&[1u64], 0, n as usize, &Op::Sum).unwrap();
    }
    win.unlock(0).unwrap();
    w.barrier().unwrap();
    let mut total = [0u64];
    win.lock(LockType::Shared, 0).unwrap();
    win.get(&mut total, 0, n as usize).unwrap();
    win.unlock(0).unwrap();
    assert_eq!(total[0], 20 * n as u64);
    // Past the end of a member's memory.
    win.lock_all().unwrap();
    let e = win.put(&[1u64, 2], right, len - 1).unwrap_err();
    assert_eq!(e.class(), ErrorClass::RmaRange);
    win.unlock_all().unwrap();
    win.free().unwrap();
}

#[test]
fn win_create_exposes_vectors_and_alloc_mem_buffers() {
    run_ranks(3, "win_create_exposes_vectors_and_alloc_mem_buffers", |u| {
        u.world().set_errhandler(ErrHandler::Return);
        // Ordinary memory needs single copy (its refusal is the next
        // test's), agreed by every rank.
        if support::single_copy_everywhere(u) {
            exercise_created(u, false);
        } else {
            println!("single copy not usable here: ordinary memory not exposed");
        }
        exercise_created(u, true);
    });
}

#[test]
fn win_create_without_cma_refuses_heap_memory_and_takes_pool_memory() {
    support::run_ranks_with(
        3,
        "win_create_without_cma_refuses_heap_memory_and_takes_pool_memory",
        &[],
        &[("SHMPI_CMA", "refuse")],
        |u| {
            let w = u.world();
            w.set_errhandler(ErrHandler::Return);
            let e = w
                .win_create(Exposed::from_vec(vec![0u8; 64]), 1)
                .unwrap_err();
            assert_eq!(e.class(), ErrorClass::Unsupported, "{e}");
            assert!(e.detail().contains("alloc_mem"), "{e}");
            // The job goes on, and pool memory needs no system call.
            exercise_created(u, true);
        },
    );
}

#[test]
fn noncontig_parts_start_on_their_own_pages() {
    run_ranks(3, "noncontig_parts_start_on_their_own_pages", |u| {
        let w = u.world();
        let me = w.rank();
        let opts = shmpi::comm::WinOptions { noncontig: true };
        let win = w
            .win_allocate_with(100, 4, opts, shmpi::comm::Flavor::Shared)
            .unwrap();
        for r in 0..w.size() {
            let (p, size, _) = win.shared_query(r).unwrap();
            assert_eq!(p as usize % 4096, 0, "rank {r}'s part is page-aligned");
            assert_eq!(size, 100);
        }
        win.fence().unwrap();
        win.put(&[me as u32], (me + 1) % w.size(), 0).unwrap();
        win.fence().unwrap();
        let mut got = [0u32];
        win.get(&mut got, me, 0).unwrap();
        assert_eq!(got[0] as i32, (me + w.size() - 1) % w.size());
        win.fence().unwrap();
        win.free().unwrap();
    });
}

/// A dynamic window: each member attaches a vector of its own and tells
/// the others its address; puts and accumulates reach it there; attach
/// and detach are checked, and so is an access to memory no longer
/// attached; without single copy it is refused everywhere.
#[test]
fn dynamic_windows_reach_attached_memory_at_its_address() {
    run_ranks(
        3,
        "dynamic_windows_reach_attached_memory_at_its_address",
        |u| {
            let w = u.world();
            w.set_errhandler(ErrHandler::Return);
            if !support::single_copy_everywhere(u) {
                let e = w.win_create_dynamic().unwrap_err();
                assert_eq!(e.class(), ErrorClass::Unsupported, "{e}");
                return;
            }
            let (me, n) = (w.rank(), w.size());
            let win = w.win_create_dynamic().unwrap();
            assert_eq!(win.flavor(), shmpi::comm::Flavor::Dynamic);
            let mine = vec![0u64; 4];
            let at = mine.as_ptr() as usize;
            win.attach(at, 32).unwrap();
            assert_eq!(
                win.attach(at + 8, 8).unwrap_err().class(),
                ErrorClass::RmaAttach
            );
            let mut addrs = vec![0u64; n as usize];
            w.allgather(&[at as u64], &mut addrs).unwrap();
            let right = (me + 1) % n;
            win.fence().unwrap();
            win.put(
                &[100 + me as u64],
                right,
                addrs[right as usize] as usize + 8,
            )
            .unwrap();
            // Read back through the window (its own member too), not through
            // `mine`, which Rust does not know another process writes.
            win.fence().unwrap();
            let mut got = [0u64];
            win.get(&mut got, me, at + 8).unwrap();
            win.fence().unwrap();
            assert_eq!(got[0], 100 + ((me + n - 1) % n) as u64);
            win.lock_all().unwrap();
            win.accumulate(&[1u64], 0, addrs[0] as usize + 24, &Op::Sum)
                .unwrap();
            win.unlock_all().unwrap();
            w.barrier().unwrap();
            if me == 0 {
                win.lock(LockType::Shared, 0).unwrap();
                win.get(&mut got, 0, at + 24).unwrap();
                win.unlock(0).unwrap();
                assert_eq!(got[0], n as u64);
            }
            w.barrier().unwrap();
            win.detach(at).unwrap();
            assert_eq!(win.detach(at).unwrap_err().class(), ErrorClass::RmaAttach);
            // Memory no longer attached (still mapped) is out of range.
            w.barrier().unwrap();
            win.lock_all().unwrap();
            let e = win
                .put(&[1u64], right, addrs[right as usize] as usize)
                .unwrap_err();
            assert_eq!(e.class(), ErrorClass::RmaRange, "{e}");
            win.unlock_all().unwrap();
            win.free().unwrap();
            drop(mine);
        },
    );
}
