/* ranks: 2 4 8 */
/* Atomics on a window from every rank at once: MPI_Fetch_and_op
 * counters, MPI_Accumulate sums, MPI_Get_accumulate, and a spin lock made
 * of MPI_Compare_and_swap guarding a plain read-modify-write; rank 0's
 * memory is the target and rank 0 only waits (a passive target). */
#include "common.h"

#define ITERS 40

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* Rank 0 holds: [0] long counter, [1] long sum, [2] int lock,
     * [3] int guarded counter, [4..7] doubles. */
    long *mem = NULL;
    MPI_Win win;
    MPI_Aint bytes = rank == 0 ? 16 * (MPI_Aint)sizeof(long) : 0;
    CHECK_OK(MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    if (rank == 0)
        memset(mem, 0, bytes);
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank > 0) {
        long one = 1, old = -1, two = 2;
        long seen[ITERS];
        CHECK_OK(MPI_Win_lock_all(0, win));
        for (int i = 0; i < ITERS; i++) {
            CHECK_OK(MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, 0, MPI_SUM, win));
            CHECK_OK(MPI_Win_flush(0, win));
            seen[i] = old;
            CHECK_OK(MPI_Accumulate(&two, 1, MPI_LONG, 0, sizeof(long), 1, MPI_LONG, MPI_SUM, win));
        }
        for (int i = 1; i < ITERS; i++)
            CHECK(seen[i] > seen[i - 1], "fetched values go up: %ld then %ld", seen[i - 1], seen[i]);
        /* The CAS lock at byte 2*sizeof(long), then a guarded increment. */
        MPI_Aint lockd = 2 * sizeof(long), ctrd = 3 * sizeof(long);
        for (int i = 0; i < ITERS / 4; i++) {
            int zero = 0, me = rank, prev = -1;
            do {
                CHECK_OK(MPI_Compare_and_swap(&me, &zero, &prev, MPI_INT, 0, lockd, win));
                CHECK_OK(MPI_Win_flush(0, win));
            } while (prev != 0);
            int c = 0;
            CHECK_OK(MPI_Get(&c, 1, MPI_INT, 0, ctrd, 1, MPI_INT, win));
            CHECK_OK(MPI_Win_flush(0, win));
            c++;
            CHECK_OK(MPI_Put(&c, 1, MPI_INT, 0, ctrd, 1, MPI_INT, win));
            CHECK_OK(MPI_Win_flush(0, win));
            CHECK_OK(MPI_Compare_and_swap(&zero, &me, &prev, MPI_INT, 0, lockd, win));
            CHECK_OK(MPI_Win_flush(0, win));
            CHECK(prev == rank, "the lock was held by %d, not me", prev);
        }
        /* Get_accumulate of doubles: the old values come back. */
        double add[4] = {0.5, 1.0, 1.5, 2.0}, before[4];
        CHECK_OK(MPI_Get_accumulate(add, 4, MPI_DOUBLE, before, 4, MPI_DOUBLE, 0,
                                    4 * sizeof(long), 4, MPI_DOUBLE, MPI_SUM, win));
        CHECK_OK(MPI_Win_unlock_all(win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        int workers = size - 1;
        CHECK(mem[0] == (long)workers * ITERS, "fetch_and_op counter %ld", mem[0]);
        CHECK(mem[1] == 2L * workers * ITERS, "accumulate sum %ld", mem[1]);
        int *ints = (int *)mem;
        CHECK(ints[4] == 0, "the lock is free at the end (%d)", ints[4]);
        CHECK(ints[6] == workers * (ITERS / 4), "guarded counter %d", ints[6]);
        double *d = (double *)(mem + 4);
        for (int i = 0; i < 4; i++)
            CHECK(d[i] == workers * 0.5 * (i + 1), "doubles[%d] = %g", i, d[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_OK(MPI_Win_free(&win));
    return ct_finish();
}
