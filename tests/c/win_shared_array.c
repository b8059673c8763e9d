/* ranks: 1 2 4 8 */
/* A node-shared array: every rank allocates its part with
 * MPI_Win_allocate_shared, finds every other part with
 * MPI_Win_shared_query, and writes into them with plain stores; fences,
 * then lock_all + MPI_Win_sync + barrier, order the stores, and every
 * rank checks every element. Put and Get reach the same memory. */
#include "common.h"

#define N 16

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *mine = NULL;
    MPI_Win win;
    CHECK_OK(MPI_Win_allocate_shared(N * size * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL,
                                     MPI_COMM_WORLD, &mine, &win));
    int **part = malloc(sizeof(int *) * size);
    for (int r = 0; r < size; r++) {
        MPI_Aint sz = 0;
        int unit = 0;
        CHECK_OK(MPI_Win_shared_query(win, r, &sz, &unit, &part[r]));
        CHECK(sz == N * size * (MPI_Aint)sizeof(int) && unit == (int)sizeof(int),
              "rank %d part: %ld bytes, unit %d", r, (long)sz, unit);
    }
    CHECK(part[rank] == mine, "my own part is where allocate said");

    /* Phase 1, fences: rank s stores s*1000+i into slots [s*N, s*N+N) of
     * every part. */
    CHECK_OK(MPI_Win_fence(0, win));
    for (int r = 0; r < size; r++)
        for (int i = 0; i < N; i++)
            part[r][rank * N + i] = rank * 1000 + i;
    CHECK_OK(MPI_Win_fence(0, win));
    for (int s = 0; s < size; s++)
        for (int i = 0; i < N; i++)
            CHECK(mine[s * N + i] == s * 1000 + i, "fence: slot %d of rank %d's block is %d",
                  i, s, mine[s * N + i]);

    /* Phase 2, passive: lock_all, stores, sync + barrier + sync. */
    CHECK_OK(MPI_Win_fence(0, win));
    CHECK_OK(MPI_Win_lock_all(0, win));
    for (int r = 0; r < size; r++)
        for (int i = 0; i < N; i++)
            part[r][rank * N + i] = -(rank * 1000 + i);
    CHECK_OK(MPI_Win_sync(win));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_OK(MPI_Win_sync(win));
    for (int s = 0; s < size; s++)
        for (int i = 0; i < N; i++)
            CHECK(part[(rank + 1) % size][s * N + i] == -(s * 1000 + i), "sync: %d",
                  part[(rank + 1) % size][s * N + i]);
    CHECK_OK(MPI_Win_unlock_all(win));

    /* Phase 3, Put and Get between fences on the same memory. */
    CHECK_OK(MPI_Win_fence(0, win));
    int v[N];
    for (int i = 0; i < N; i++)
        v[i] = 7 * rank + i;
    int right = (rank + 1) % size;
    CHECK_OK(MPI_Put(v, N, MPI_INT, right, rank * N, N, MPI_INT, win));
    CHECK_OK(MPI_Win_fence(0, win));
    int left = (rank + size - 1) % size;
    for (int i = 0; i < N; i++)
        CHECK(mine[left * N + i] == 7 * left + i, "put landed: %d", mine[left * N + i]);
    int got[N];
    CHECK_OK(MPI_Get(got, N, MPI_INT, right, rank * N, N, MPI_INT, win));
    CHECK_OK(MPI_Win_fence(0, win));
    for (int i = 0; i < N; i++)
        CHECK(got[i] == 7 * rank + i, "get: %d", got[i]);
    free(part);
    CHECK_OK(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "free sets MPI_WIN_NULL");
    return ct_finish();
}
