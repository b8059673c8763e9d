/* ranks: 1 2 3 4 */
/* MPI_Win_allocate_shared without alloc_shared_noncontig lays the parts
 * out contiguously (MPI 4.1 §12.2.3): rank r's part, of r + 1 ints
 * (odd byte counts included: 4 r + 3 bytes on a second window), starts
 * right after the last byte of rank r - 1's, and MPI_PROC_NULL's query
 * gives rank 0's base, so one array spans every part (MPI_Win_allocate's
 * parts, not shared, start on a cache line on shmpi). Post and start
 * with MPI_GROUP_EMPTY open epochs that complete and wait close. A lock
 * inside this process's lock_all, lock_all inside its lock, and a fence
 * inside either are MPI_ERR_RMA_SYNC (each would wait for this process's
 * own hold, or mixes epochs), and the window stays usable. */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);

    /* 1. Contiguous parts, one array across them. */
    int *mine = NULL;
    MPI_Win w;
    CHECK_OK(MPI_Win_allocate_shared((MPI_Aint)(me + 1) * (MPI_Aint)sizeof(int), sizeof(int),
                                     MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &w));
    int *base0 = NULL, du = 0;
    MPI_Aint sz = 0;
    CHECK_OK(MPI_Win_shared_query(w, MPI_PROC_NULL, &sz, &du, &base0));
    CHECK(sz == (MPI_Aint)sizeof(int) && du == (int)sizeof(int), "PROC_NULL query: %ld %d",
          (long)sz, du);
    int before = me * (me + 1) / 2; /* ints of ranks 0..me-1 */
    CHECK(mine == base0 + before, "rank %d's part at %td ints from rank 0's, not %d", me,
          mine - base0, before);
    CHECK_OK(MPI_Win_fence(0, w));
    for (int k = 0; k <= me; k++) mine[k] = 100 * me + k;
    CHECK_OK(MPI_Win_fence(0, w));
    int at = 0;
    for (int r = 0; r < n; r++)
        for (int k = 0; k <= r; k++, at++)
            CHECK(base0[at] == 100 * r + k, "array[%d] = %d", at, base0[at]);
    CHECK_OK(MPI_Win_fence(0, w));

    char *bytes = NULL, *bbase = NULL;
    MPI_Win wb;
    CHECK_OK(MPI_Win_allocate_shared(4 * me + 3, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &bytes, &wb));
    CHECK_OK(MPI_Win_shared_query(wb, MPI_PROC_NULL, &sz, &du, &bbase));
    CHECK(bytes == bbase + (2 * me * (me - 1) + 3 * me), "byte window: rank %d at %td", me,
          bytes - bbase);
    CHECK_OK(MPI_Win_free(&wb));

    /* MPI_Win_allocate (not shared): each base aligned for any type,
     * whatever the sizes before it. */
    double *d = NULL;
    MPI_Win wd;
    CHECK_OK(MPI_Win_allocate(5 + me, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &d, &wd));
#ifdef SHMPI_MPI_H
    /* (MPICH 4.0 packs them as shared parts: 5 + r bytes apart.) */
    CHECK((size_t)d % 16 == 0, "MPI_Win_allocate base %p not aligned", (void *)d);
#endif
    CHECK_OK(MPI_Win_free(&wd));

    /* 2. Empty PSCW groups. */
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    CHECK_OK(MPI_Win_post(MPI_GROUP_EMPTY, 0, w));
    CHECK_OK(MPI_Win_start(MPI_GROUP_EMPTY, 0, w));
    CHECK_OK(MPI_Win_complete(w));
    CHECK_OK(MPI_Win_wait(w));
    CHECK(ct_class(MPI_Win_complete(w)) == MPI_ERR_RMA_SYNC, "a second complete");

    /* 3. Nested passive-target epochs. */
    CHECK_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w));
    CHECK(ct_class(MPI_Win_lock_all(0, w)) == MPI_ERR_RMA_SYNC, "lock_all inside lock");
    CHECK(ct_class(MPI_Win_fence(0, w)) == MPI_ERR_RMA_SYNC, "fence inside lock");
    CHECK_OK(MPI_Win_unlock(me, w));
    CHECK_OK(MPI_Win_lock_all(0, w));
    CHECK(ct_class(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w)) == MPI_ERR_RMA_SYNC, "lock inside lock_all");
    CHECK(ct_class(MPI_Win_fence(0, w)) == MPI_ERR_RMA_SYNC, "fence inside lock_all");
    CHECK_OK(MPI_Win_unlock_all(w));

    /* Still usable. */
    CHECK_OK(MPI_Win_fence(0, w));
    int v = -1;
    CHECK_OK(MPI_Get(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, w));
    CHECK_OK(MPI_Win_fence(0, w));
    CHECK(v == 0, "get after: %d", v);
    CHECK_OK(MPI_Win_free(&w));
    return ct_finish();
}
