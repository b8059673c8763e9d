/* ranks: 2 shmpi-only */
/* RMA errors through MPI_ERRORS_RETURN on the window: an access outside
 * any epoch is MPI_ERR_RMA_SYNC, one past the target's memory (or before
 * it) MPI_ERR_RMA_RANGE, a lock taken twice or an unlock without a lock
 * MPI_ERR_RMA_SYNC; the window stays usable. (MPI makes these erroneous
 * without requiring their detection; MPICH's shared-memory path does not
 * detect the range errors, so this runs on shmpi only.) */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long *mem = NULL;
    MPI_Win win;
    CHECK_OK(MPI_Win_allocate(4 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                              &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    long x = 5, y = 0;
    int peer = 1 - rank;
    CHECK(ct_class(MPI_Put(&x, 1, MPI_LONG, peer, 0, 1, MPI_LONG, win)) == MPI_ERR_RMA_SYNC,
          "put before any epoch");
    CHECK(ct_class(MPI_Win_unlock(peer, win)) == MPI_ERR_RMA_SYNC, "unlock without lock");
    CHECK_OK(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win));
    CHECK(ct_class(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win)) == MPI_ERR_RMA_SYNC, "locked twice");
    CHECK(ct_class(MPI_Put(&x, 1, MPI_LONG, peer, 4, 1, MPI_LONG, win)) == MPI_ERR_RMA_RANGE,
          "put past the end");
    CHECK(ct_class(MPI_Get(&y, 2, MPI_LONG, peer, 3, 2, MPI_LONG, win)) == MPI_ERR_RMA_RANGE,
          "get across the end");
    CHECK(ct_class(MPI_Put(&x, 1, MPI_LONG, 7, 0, 1, MPI_LONG, win)) == MPI_ERR_RANK, "bad rank");
    CHECK_OK(MPI_Put(&x, 1, MPI_LONG, peer, 3, 1, MPI_LONG, win));
    CHECK_OK(MPI_Win_unlock(peer, win));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(mem[3] == 5, "the good put landed: %ld", mem[3]);
    CHECK_OK(MPI_Win_free(&win));
    return ct_finish();
}
