/* ranks: 2 4 */
/* Generalized active target (post / start / complete / wait): each even
 * rank exposes its window to the next odd rank, which puts into it; the
 * target checks after MPI_Win_wait. Then the window attributes
 * (MPI_WIN_BASE, SIZE, DISP_UNIT, CREATE_FLAVOR, MODEL). */
#include "common.h"

#define N 8

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *mem = NULL;
    MPI_Win win;
    CHECK_OK(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                              &win));
    for (int i = 0; i < N; i++)
        mem[i] = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Group world, peer;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int other = rank % 2 == 0 ? rank + 1 : rank - 1;
    MPI_Group_incl(world, 1, &other, &peer);
    for (int round = 0; round < 3; round++) {
        if (rank % 2 == 0) {
            CHECK_OK(MPI_Win_post(peer, 0, win));
            CHECK_OK(MPI_Win_wait(win));
            for (int i = 0; i < N; i++)
                CHECK(mem[i] == other * 100 + round * 10 + i, "round %d: mem[%d] = %d", round, i,
                      mem[i]);
        } else {
            int v[N];
            for (int i = 0; i < N; i++)
                v[i] = rank * 100 + round * 10 + i;
            CHECK_OK(MPI_Win_start(peer, 0, win));
            CHECK_OK(MPI_Put(v, N, MPI_INT, other, 0, N, MPI_INT, win));
            CHECK_OK(MPI_Win_complete(win));
        }
    }
    MPI_Group_free(&peer);
    MPI_Group_free(&world);

    void *base = NULL;
    MPI_Aint *sz = NULL;
    int *unit = NULL, *flavor = NULL, *model = NULL, flag = 0;
    CHECK_OK(MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag));
    CHECK(flag && base == mem, "MPI_WIN_BASE");
    CHECK_OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &sz, &flag));
    CHECK(flag && *sz == N * (MPI_Aint)sizeof(int), "MPI_WIN_SIZE");
    CHECK_OK(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag));
    CHECK(flag && *unit == (int)sizeof(int), "MPI_WIN_DISP_UNIT");
    CHECK_OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_ALLOCATE, "MPI_WIN_CREATE_FLAVOR %d", *flavor);
    CHECK_OK(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && (*model == MPI_WIN_UNIFIED || *model == MPI_WIN_SEPARATE), "MPI_WIN_MODEL");
    CHECK_OK(MPI_Win_free(&win));
    return ct_finish();
}
