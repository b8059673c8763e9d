/* ranks: 2 3 */
/* Erroneous window synchronisation is refused with a class, locally and
 * before any waiting, and the window stays usable:
 * - a flush (any of the four) or MPI_Win_sync outside a passive-target
 *   epoch is MPI_ERR_RMA_SYNC; inside one it succeeds, for a target this
 *   process has not locked too (as MPICH);
 * - an assertion a call does not take is MPI_ERR_ASSERT (MPICH answers
 *   MPI_ERR_ARG), and MPI_MODE_NOCHECK is taken by lock and lock_all;
 * - after a fence that asserts MPI_MODE_NOSUCCEED no epoch is open: a put
 *   is MPI_ERR_RMA_SYNC until the next fence;
 * - MPI_Win_free with a lock_all epoch open is MPI_ERR_RMA_SYNC, and the
 *   handle still names the window: unlock_all, then free, succeed. */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int peer = (me + 1) % n, from = (me + n - 1) % n;
    int *mem = NULL;
    MPI_Win w;
    CHECK_OK(MPI_Win_allocate(8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                              &w));
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);

    /* Flushes. */
    CHECK(ct_class(MPI_Win_flush(peer, w)) == MPI_ERR_RMA_SYNC, "flush outside an epoch");
    CHECK(ct_class(MPI_Win_flush_all(w)) == MPI_ERR_RMA_SYNC, "flush_all outside an epoch");
    CHECK(ct_class(MPI_Win_flush_local(peer, w)) == MPI_ERR_RMA_SYNC, "flush_local outside");
    CHECK(ct_class(MPI_Win_flush_local_all(w)) == MPI_ERR_RMA_SYNC, "flush_local_all outside");
    /* "All flush and sync functions can be called only within passive
     * target epochs" (MPI 4.1 §12.5.4; Open MPI 4.1 lets a sync pass). */
    CHECK(ct_class(MPI_Win_sync(w)) == MPI_ERR_RMA_SYNC, "sync outside an epoch");
    CHECK_OK(MPI_Win_lock(MPI_LOCK_SHARED, peer, MPI_MODE_NOCHECK, w));
    CHECK_OK(MPI_Win_flush(peer, w));
    CHECK_OK(MPI_Win_flush(me, w));
    CHECK_OK(MPI_Win_flush_local_all(w));
    CHECK_OK(MPI_Win_sync(w));
    CHECK(ct_class(MPI_Win_flush(n, w)) == MPI_ERR_RANK, "flush of rank %d", n);
    CHECK_OK(MPI_Win_unlock(peer, w));

    /* Assertions. */
    int bad = ct_class(MPI_Win_fence(MPI_MODE_NOCHECK, w));
    CHECK(bad != MPI_SUCCESS, "a fence took MPI_MODE_NOCHECK");
    bad = ct_class(MPI_Win_lock_all(MPI_MODE_NOSTORE, w));
    CHECK(bad != MPI_SUCCESS, "lock_all took MPI_MODE_NOSTORE");
#ifdef SHMPI_MPI_H
    CHECK(bad == MPI_ERR_ASSERT, "lock_all with a fence's assertion: class %d", bad);
    CHECK(ct_class(MPI_Win_lock(MPI_LOCK_SHARED, peer, 1, w)) == MPI_ERR_ASSERT, "lock assert 1");
#endif

    /* NOSUCCEED ends the fence epochs. */
    CHECK_OK(MPI_Win_fence(MPI_MODE_NOPRECEDE, w));
    int v = 100 + me;
    CHECK_OK(MPI_Put(&v, 1, MPI_INT, peer, 1, 1, MPI_INT, w));
    CHECK_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED | MPI_MODE_NOSTORE, w));
    CHECK(mem[1] == 100 + from, "the put from %d: %d", from, mem[1]);
    CHECK(ct_class(MPI_Put(&v, 1, MPI_INT, peer, 2, 1, MPI_INT, w)) == MPI_ERR_RMA_SYNC,
          "a put after a NOSUCCEED fence");
    CHECK_OK(MPI_Win_fence(0, w));
    CHECK_OK(MPI_Put(&v, 1, MPI_INT, peer, 2, 1, MPI_INT, w));
    CHECK_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w));
    CHECK(mem[2] == 100 + from, "the second put from %d: %d", from, mem[2]);

    /* Free with an epoch open. */
    CHECK_OK(MPI_Win_lock_all(MPI_MODE_NOCHECK, w));
    CHECK(ct_class(MPI_Win_free(&w)) == MPI_ERR_RMA_SYNC, "free inside lock_all");
    CHECK(w != MPI_WIN_NULL, "the refused free nulled the handle");
    int got = -1;
    CHECK_OK(MPI_Get(&got, 1, MPI_INT, from, 1, 1, MPI_INT, w));
    CHECK_OK(MPI_Win_unlock_all(w));
    CHECK(got == 100 + ((from + n - 1) % n), "get after the refused free: %d", got);
    CHECK_OK(MPI_Win_free(&w));
    CHECK(w == MPI_WIN_NULL, "free did not null the handle");
    return ct_finish();
}
