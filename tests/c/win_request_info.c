/* ranks: 2 4 */
/* Request-based accumulates and window info:
 * - MPI_Raccumulate and MPI_Rget_accumulate inside lock_all: every rank
 *   adds to rank 0's counter and fetches its old value; the requests
 *   complete with MPI_Wait / MPI_Waitall, and the sums and fetched values
 *   are right;
 * - on shmpi, a request-based access outside a passive-target epoch (here
 *   inside a fence epoch) is MPI_ERR_RMA_SYNC: MPI 4.1 §12.3.5 makes them
 *   valid only there (MPICH 4.0 lets them pass);
 * - MPI_Win_get_info of a shared window says alloc_shared_noncontig as it
 *   was made; on shmpi a hint set by MPI_Win_set_info reads back. */
#include "common.h"
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long *mem = NULL;
    MPI_Win w;
    MPI_Info hints;
    MPI_Info_create(&hints);
    MPI_Info_set(hints, "alloc_shared_noncontig", "true");
    CHECK_OK(MPI_Win_allocate_shared(4 * sizeof(long), sizeof(long), hints, MPI_COMM_WORLD, &mem,
                                     &w));
    MPI_Info_free(&hints);
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    for (int i = 0; i < 4; i++) mem[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);

    /* 1. Request-based accumulates. */
    CHECK_OK(MPI_Win_lock_all(0, w));
    long one = 1, add = me + 1, old = -1, old2 = -1;
    MPI_Request rq[2];
    for (int k = 0; k < 5; k++) {
        CHECK_OK(MPI_Raccumulate(&one, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_SUM, w, &rq[0]));
        CHECK_OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
        CHECK(rq[0] == MPI_REQUEST_NULL, "Raccumulate's request not freed by the wait");
    }
    CHECK_OK(MPI_Rget_accumulate(&add, 1, MPI_LONG, &old, 1, MPI_LONG, 0, 1, 1, MPI_LONG, MPI_SUM,
                                 w, &rq[0]));
    CHECK_OK(MPI_Rget_accumulate(NULL, 0, MPI_LONG, &old2, 1, MPI_LONG, 0, 2, 1, MPI_LONG,
                                 MPI_NO_OP, w, &rq[1]));
    CHECK_OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    CHECK(old >= 0 && old <= (long)n * (n + 1) / 2 - add, "fetched %ld", old);
    CHECK(old2 == 0, "NO_OP fetched %ld", old2);
    CHECK_OK(MPI_Win_unlock_all(w));
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        CHECK(mem[0] == 5L * n, "counter %ld, not %ld", mem[0], 5L * n);
        CHECK(mem[1] == (long)n * (n + 1) / 2, "sum %ld", mem[1]);
    }
    /* The adds were atomic: the old values fetched are the prefix sums of
     * the adds in some order, so each rank's old + add is another rank's
     * old, or (for the last) the total. */
    long mine[2] = {old, add}, all[2 * 64];
    if (n <= 64) {
        MPI_Allgather(mine, 2, MPI_LONG, all, 2, MPI_LONG, MPI_COMM_WORLD);
        long total = (long)n * (n + 1) / 2;
        int zero = 0, last = 0;
        for (int r = 0; r < n; r++) {
            long next = all[2 * r] + all[2 * r + 1];
            int is_old = 0;
            for (int q = 0; q < n; q++) is_old |= all[2 * q] == next;
            zero += all[2 * r] == 0;
            last += next == total;
            CHECK(is_old || next == total, "rank %d fetched %ld, added %ld: %ld is no one's old",
                  r, all[2 * r], all[2 * r + 1], next);
        }
        CHECK(zero == 1 && last == 1, "%d ranks fetched 0, %d ended at the total", zero, last);
    }

    /* 2. Outside a passive-target epoch. */
    CHECK_OK(MPI_Win_fence(0, w));
#ifdef SHMPI_MPI_H
    MPI_Request r = MPI_REQUEST_NULL;
    CHECK(ct_class(MPI_Raccumulate(&one, 1, MPI_LONG, 0, 3, 1, MPI_LONG, MPI_SUM, w, &r)) ==
              MPI_ERR_RMA_SYNC,
          "Raccumulate in a fence epoch");
    CHECK(ct_class(MPI_Rput(&one, 1, MPI_LONG, 0, 3, 1, MPI_LONG, w, &r)) == MPI_ERR_RMA_SYNC,
          "Rput in a fence epoch");
    CHECK_OK(MPI_Win_fence(0, w));
    if (me == 0) CHECK(mem[3] == 0, "a refused access landed: %ld", mem[3]);
#else
    CHECK_OK(MPI_Win_fence(0, w));
#endif

    /* 3. Info. */
    MPI_Info used;
    char v[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    CHECK_OK(MPI_Win_get_info(w, &used));
    CHECK_OK(MPI_Info_get(used, "alloc_shared_noncontig", MPI_MAX_INFO_VAL, v, &flag));
    CHECK(flag && strcmp(v, "true") == 0, "alloc_shared_noncontig: flag %d %s", flag, v);
    MPI_Info_free(&used);
#ifdef SHMPI_MPI_H
    MPI_Info more;
    MPI_Info_create(&more);
    MPI_Info_set(more, "no_locks", "false");
    CHECK_OK(MPI_Win_set_info(w, more));
    MPI_Info_free(&more);
    CHECK_OK(MPI_Win_get_info(w, &used));
    CHECK_OK(MPI_Info_get(used, "no_locks", MPI_MAX_INFO_VAL, v, &flag));
    CHECK(flag && strcmp(v, "false") == 0, "no_locks: flag %d %s", flag, v);
    MPI_Info_free(&used);
#endif
    CHECK_OK(MPI_Win_free(&w));
    return ct_finish();
}
