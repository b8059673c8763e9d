/* ranks: 2 3 4 */
/* Nonblocking collectives progress while the program does other work:
 * even ranks start each collective and then receive a message that an
 * odd rank sends with MPI_Ssend *before* it starts the same collective.
 * A collective that ran to completion at its start would wait for the
 * odd rank, which waits for the even rank's receive: a deadlock. Every
 * result is checked. */
#include "common.h"

static void sum_op(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

/* The handshake around a started collective. */
static void handshake(int rank, int size, int phase)
{
    int token = phase;
    if (rank % 2 == 0 && rank + 1 < size) {
        MPI_Recv(&token, 1, MPI_INT, rank + 1, 100 + phase, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(token == phase, "handshake token %d", token);
    }
}

static void before(int rank, int phase)
{
    if (rank % 2 == 1)
        MPI_Ssend(&phase, 1, MPI_INT, rank - 1, 100 + phase, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Request r;
    int phase = 0;
    enum { N = 3 };
    int *all = malloc(sizeof(int) * N * size);
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++) {
        counts[i] = N;
        displs[i] = i * N;
    }
    int mine[N], out[N];

    /* Iallgather */
    for (int k = 0; k < N; k++)
        mine[k] = rank * 10 + k;
    before(rank, ++phase);
    CHECK_OK(MPI_Iallgather(mine, N, MPI_INT, all, N, MPI_INT, MPI_COMM_WORLD, &r));
    handshake(rank, size, phase);
    CHECK_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0; i < size * N; i++)
        CHECK(all[i] == (i / N) * 10 + i % N, "iallgather [%d]=%d", i, all[i]);

    /* Iallgatherv (reverse displacements) */
    for (int i = 0; i < size; i++)
        displs[i] = (size - 1 - i) * N;
    before(rank, ++phase);
    CHECK_OK(MPI_Iallgatherv(mine, N, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD, &r));
    handshake(rank, size, phase);
    CHECK_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0; i < size; i++)
        for (int k = 0; k < N; k++)
            CHECK(all[displs[i] + k] == i * 10 + k, "iallgatherv block %d", i);
    for (int i = 0; i < size; i++)
        displs[i] = i * N;

    /* Ialltoall */
    int *sendall = malloc(sizeof(int) * N * size);
    for (int i = 0; i < size * N; i++)
        sendall[i] = rank * 1000 + i;
    before(rank, ++phase);
    CHECK_OK(MPI_Ialltoall(sendall, N, MPI_INT, all, N, MPI_INT, MPI_COMM_WORLD, &r));
    handshake(rank, size, phase);
    CHECK_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0; i < size; i++)
        for (int k = 0; k < N; k++)
            CHECK(all[i * N + k] == i * 1000 + rank * N + k, "ialltoall from %d", i);

    /* Ialltoallv */
    before(rank, ++phase);
    CHECK_OK(MPI_Ialltoallv(sendall, counts, displs, MPI_INT, all, counts, displs, MPI_INT,
                            MPI_COMM_WORLD, &r));
    handshake(rank, size, phase);
    CHECK_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0; i < size; i++)
        CHECK(all[i * N] == i * 1000 + rank * N, "ialltoallv from %d", i);

    /* Igather / Igatherv / Iscatter / Iscatterv at the last rank (odd
     * when size is even: the root is one that hands shakes). */
    int root = size - 1;
    before(rank, ++phase);
    CHECK_OK(MPI_Igather(mine, N, MPI_INT, all, N, MPI_INT, root, MPI_COMM_WORLD, &r));
    handshake(rank, size, phase);
    CHECK_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    if (rank == root)
        for (int i = 0; i < size * N; i++)
            CHECK(all[i] == (i / N) * 10 + i % N, "igather [%d]=%d", i, all[i]);

    before(rank, ++phase);
    CHECK_OK(MPI_Igatherv(mine, N, MPI_INT, all, counts, displs, MPI_INT, root, MPI_COMM_WORLD,
                          &r));
    handshake(rank, size, phase);
    CHECK_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    if (rank == root)
        for (int i = 0; i < size * N; i++)
            CHECK(all[i] == (i / N) * 10 + i % N, "igatherv [%d]=%d", i, all[i]);

    for (int i = 0; i < size * N; i++)
        sendall[i] = 7000 + i;
    before(rank, ++phase);
    CHECK_OK(MPI_Iscatter(sendall, N, MPI_INT, out, N, MPI_INT, root, MPI_COMM_WORLD, &r));
    handshake(rank, size, phase);
    CHECK_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int k = 0; k < N; k++)
        CHECK(out[k] == 7000 + rank * N + k, "iscatter [%d]=%d", k, out[k]);

    before(rank, ++phase);
    CHECK_OK(MPI_Iscatterv(sendall, counts, displs, MPI_INT, out, N, MPI_INT, root,
                           MPI_COMM_WORLD, &r));
    handshake(rank, size, phase);
    CHECK_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int k = 0; k < N; k++)
        CHECK(out[k] == 7000 + rank * N + k, "iscatterv [%d]=%d", k, out[k]);

    /* Reductions: a user op (the C layer's own schedule) and predefined. */
    MPI_Op op;
    MPI_Op_create(sum_op, 0, &op);
    for (int k = 0; k < N; k++)
        mine[k] = rank + k;
    int tot[N];
    for (int k = 0; k < N; k++)
        tot[k] = size * (size - 1) / 2 + size * k;
    before(rank, ++phase);
    CHECK_OK(MPI_Iallreduce(mine, out, N, MPI_INT, op, MPI_COMM_WORLD, &r));
    handshake(rank, size, phase);
    CHECK_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int k = 0; k < N; k++)
        CHECK(out[k] == tot[k], "iallreduce(user) [%d]=%d want %d", k, out[k], tot[k]);

    before(rank, ++phase);
    CHECK_OK(MPI_Ireduce(mine, out, N, MPI_INT, op, root, MPI_COMM_WORLD, &r));
    handshake(rank, size, phase);
    CHECK_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    if (rank == root)
        for (int k = 0; k < N; k++)
            CHECK(out[k] == tot[k], "ireduce(user) [%d]=%d", k, out[k]);

    before(rank, ++phase);
    CHECK_OK(MPI_Iscan(mine, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
    handshake(rank, size, phase);
    CHECK_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int k = 0; k < N; k++)
        CHECK(out[k] == rank * (rank + 1) / 2 + (rank + 1) * k, "iscan [%d]=%d", k, out[k]);

    before(rank, ++phase);
    CHECK_OK(MPI_Iexscan(mine, out, N, MPI_INT, op, MPI_COMM_WORLD, &r));
    handshake(rank, size, phase);
    CHECK_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    if (rank > 0)
        for (int k = 0; k < N; k++)
            CHECK(out[k] == rank * (rank - 1) / 2 + rank * k, "iexscan [%d]=%d", k, out[k]);

    int *big = malloc(sizeof(int) * N * size);
    for (int i = 0; i < size * N; i++)
        big[i] = rank + i;
    before(rank, ++phase);
    CHECK_OK(MPI_Ireduce_scatter_block(big, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
    handshake(rank, size, phase);
    CHECK_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int k = 0; k < N; k++) {
        int i = rank * N + k;
        CHECK(out[k] == size * (size - 1) / 2 + size * i, "ireduce_scatter_block [%d]=%d", k,
              out[k]);
    }

    before(rank, ++phase);
    CHECK_OK(MPI_Ireduce_scatter(big, out, counts, MPI_INT, op, MPI_COMM_WORLD, &r));
    handshake(rank, size, phase);
    CHECK_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int k = 0; k < N; k++) {
        int i = rank * N + k;
        CHECK(out[k] == size * (size - 1) / 2 + size * i, "ireduce_scatter [%d]=%d", k, out[k]);
    }

    MPI_Op_free(&op);
    free(all);
    free(counts);
    free(displs);
    free(sendall);
    free(big);
    return ct_finish();
}
