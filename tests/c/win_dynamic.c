/* ranks: 1 2 3 */
/* Dynamic windows (MPI 4.1 §12.2.4): MPI_Win_create_dynamic, each rank
 * attaching two arrays of its own (heap and MPI_Alloc_mem memory) and
 * publishing their addresses (MPI_Get_address, allgathered); under fence
 * a put to the right neighbour's first array and a get of the left's
 * second, at their addresses; under lock_all accumulates from everyone
 * into rank 0, MPI_Fetch_and_op and MPI_Compare_and_swap on rank 0's
 * counter; the attributes (MPI_BOTTOM base, size 0, flavor DYNAMIC);
 * detach; and the errors: an overlapping attach and a detach of nothing
 * (MPI_ERR_RMA_ATTACH), a put to a region its target detached
 * (MPI_ERR_RMA_RANGE), an attach to a window that is not dynamic
 * (MPI_ERR_RMA_FLAVOR). */
#include "common.h"

#define N 8

/* MPICH 4.0 takes an overlapping attach and a second detach of one
 * region without an error: those checks are shmpi's. */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int right = (me + 1) % p, left = (me + p - 1) % p;

    MPI_Win w;
    /* Where the kernel refuses process_vm_readv (a seccomp filter),
     * shmpi refuses dynamic windows on every rank: nothing to test. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int crc = MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    if (ct_class(crc) == MPI_ERR_UNSUPPORTED_OPERATION) {
        if (me == 0) fprintf(stderr, "dynamic windows need single copy here: skipped\n");
        return ct_finish();
    }
    CHECK_OK(crc);
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    int *a = malloc(N * sizeof(int)), *b = NULL;
    long long counter = 0;
    CHECK_OK(MPI_Alloc_mem(N * sizeof(int), MPI_INFO_NULL, &b));
    for (int k = 0; k < N; k++) a[k] = -1, b[k] = 100 * me + k;
    CHECK_OK(MPI_Win_attach(w, a, N * sizeof(int)));
    CHECK_OK(MPI_Win_attach(w, b, N * sizeof(int)));
    CHECK_OK(MPI_Win_attach(w, &counter, sizeof counter));
    MPI_Aint mine[3], all[3 * 8];
    MPI_Get_address(a, &mine[0]);
    MPI_Get_address(b, &mine[1]);
    MPI_Get_address(&counter, &mine[2]);
    if (p > 8) MPI_Abort(MPI_COMM_WORLD, 2);
    CHECK_OK(MPI_Allgather(mine, 3, MPI_AINT, all, 3, MPI_AINT, MPI_COMM_WORLD));

    /* Fence: a put into the right's a[2..5], a get of the left's b. */
    int vals[3] = {10 * me, 10 * me + 1, 10 * me + 2}, got[N];
    CHECK_OK(MPI_Win_fence(0, w));
    CHECK_OK(MPI_Put(vals, 3, MPI_INT, right, all[3 * right] + 2 * sizeof(int), 3, MPI_INT, w));
    CHECK_OK(MPI_Get(got, N, MPI_INT, left, all[3 * left + 1], N, MPI_INT, w));
    CHECK_OK(MPI_Win_fence(0, w));
    for (int k = 0; k < N; k++) {
        int want = k >= 2 && k < 5 ? 10 * left + (k - 2) : -1;
        CHECK(a[k] == want, "a[%d] = %d want %d", k, a[k], want);
        CHECK(got[k] == 100 * left + k, "got[%d] = %d", k, got[k]);
    }

    /* Passive target: every rank adds into rank 0's b[0] and counter. */
    CHECK_OK(MPI_Win_lock_all(0, w));
    int one = me + 1;
    CHECK_OK(MPI_Accumulate(&one, 1, MPI_INT, 0, all[1], 1, MPI_INT, MPI_SUM, w));
    long long inc = 1, before = -1;
    CHECK_OK(MPI_Fetch_and_op(&inc, &before, MPI_LONG_LONG, 0, all[2], MPI_SUM, w));
    CHECK_OK(MPI_Win_flush(0, w));
    CHECK(before >= 0 && before < p, "fetch_and_op saw %lld", before);
    CHECK_OK(MPI_Win_unlock_all(w));
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        CHECK(b[0] == p * (p + 1) / 2, "accumulated b[0] = %d", b[0]);
        CHECK(counter == p, "counter = %lld", counter);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* Compare and swap: only one rank finds p and swaps in 1000 + its rank. */
    CHECK_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w));
    long long cmp = p, swp = 1000 + me, old = -1;
    CHECK_OK(MPI_Compare_and_swap(&swp, &cmp, &old, MPI_LONG_LONG, 0, all[2], w));
    CHECK_OK(MPI_Win_unlock(0, w));
    int won = old == p, winners = 0;
    MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(winners == 1, "%d ranks won the compare and swap", winners);

    /* Attributes. */
    void *base = (void *)1;
    MPI_Aint *size = NULL;
    int *flavor = NULL, flag = 0;
    CHECK_OK(MPI_Win_get_attr(w, MPI_WIN_BASE, &base, &flag));
    CHECK(flag && base == MPI_BOTTOM, "MPI_WIN_BASE %p", base);
    CHECK_OK(MPI_Win_get_attr(w, MPI_WIN_SIZE, &size, &flag));
    CHECK(flag && *size == 0, "MPI_WIN_SIZE %ld", (long)*size);
    CHECK_OK(MPI_Win_get_attr(w, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_DYNAMIC, "flavor %d", *flavor);

    /* Errors. */
    int rc;
    if (OURS) {
        rc = MPI_Win_attach(w, a + 1, 2 * sizeof(int));
        CHECK(ct_class(rc) == MPI_ERR_RMA_ATTACH, "an overlapping attach: class %d",
              ct_class(rc));
    }
    CHECK_OK(MPI_Win_detach(w, a));
    if (OURS) {
        rc = MPI_Win_detach(w, a);
        CHECK(ct_class(rc) == MPI_ERR_RMA_ATTACH, "detaching twice: class %d", ct_class(rc));
        /* Memory the target no longer has attached is out of range (it
         * is still mapped: nothing else would catch the write). */
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_OK(MPI_Win_lock_all(0, w));
        rc = MPI_Put(vals, 1, MPI_INT, right, all[3 * right], 1, MPI_INT, w);
        CHECK(ct_class(rc) == MPI_ERR_RMA_RANGE, "a put to a detached region: class %d",
              ct_class(rc));
        CHECK_OK(MPI_Win_unlock_all(w));
        MPI_Barrier(MPI_COMM_WORLD);
    }
    CHECK_OK(MPI_Win_detach(w, b));
    CHECK_OK(MPI_Win_detach(w, &counter));
    MPI_Win plain;
    int x[2];
    CHECK_OK(MPI_Win_create(x, sizeof x, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &plain));
    MPI_Win_set_errhandler(plain, MPI_ERRORS_RETURN);
    rc = MPI_Win_attach(plain, a, sizeof(int));
    CHECK(ct_class(rc) == MPI_ERR_RMA_FLAVOR, "attach to a created window: class %d",
          ct_class(rc));
    CHECK_OK(MPI_Win_free(&plain));
    CHECK_OK(MPI_Win_free(&w));
    MPI_Free_mem(b);
    free(a);
    return ct_finish();
}
