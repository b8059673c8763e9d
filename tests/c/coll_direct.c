/* ranks: 2 3 4 */
/* The collectives' direct paths (send from the program's buffer, receive
 * into it) next to their staged ones: MPI_Alltoallv and MPI_Scatterv whose
 * send blocks all start at the same place (blocks may overlap when only
 * read), MPI_Alltoallv and MPI_Gatherv with receive blocks end to end
 * (direct) and end to end in reverse order (staged) with a guard after
 * them; MPI_Allgather and MPI_Alltoall of an MPI_Type_contiguous;
 * MPI_Ialltoall and MPI_Iallgather where rank 0 sends with a strided type
 * (packed) and the others from plain ints (sent and received in place), and
 * MPI_Ialltoallv with receive blocks in reverse order (staged);
 * MPI_Reduce and MPI_Allreduce of MPI_INT from and into buffers one byte
 * off their alignment, with every root, and MPI_Iallreduce / MPI_Ireduce
 * from such buffers, from aligned ones and in place. */
#include "common.h"

#define N 300
#define GUARD (-424242)

static int rank, size;

static int val(int from, int to, int i) { return from * 100000 + to * 1000 + i; }

/* Every rank sends one block (from offset 0 of its buffer) to everyone:
 * the send blocks of MPI_Alltoallv overlap. */
static void test_alltoallv_shared_send(void)
{
    int *sb = malloc(N * sizeof(int)), *rb = malloc((size * N + 1) * sizeof(int));
    int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
    int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int));
    for (int i = 0; i < N; i++) sb[i] = val(rank, 0, i);
    for (int reversed = 0; reversed < 2; reversed++) {
        for (int r = 0; r < size; r++) {
            sc[r] = N;
            sd[r] = 0;
            rc[r] = N;
            /* end to end in rank order, or in reverse rank order */
            rd[r] = (reversed ? size - 1 - r : r) * N;
        }
        for (int i = 0; i < size * N; i++) rb[i] = -1;
        rb[size * N] = GUARD;
        CHECK_OK(MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD));
        for (int r = 0; r < size; r++)
            for (int i = 0; i < N; i++)
                CHECK(rb[rd[r] + i] == val(r, 0, i), "alltoallv rev %d from %d [%d]: %d",
                      reversed, r, i, rb[rd[r] + i]);
        CHECK(rb[size * N] == GUARD, "alltoallv wrote past its blocks");
    }
    free(sb);
    free(rb);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

/* The root scatters one block to everyone from the same place, and
 * gathers blocks end to end in rank order and in reverse. */
static void test_scatterv_gatherv(void)
{
    int *sb = malloc(N * sizeof(int)), *rb = malloc((size * N + 1) * sizeof(int));
    int *c = malloc(size * sizeof(int)), *d = malloc(size * sizeof(int));
    int mine[N];
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < N; i++) sb[i] = val(root, 1, i);
        for (int r = 0; r < size; r++) {
            c[r] = N;
            d[r] = 0;
        }
        for (int i = 0; i < N; i++) mine[i] = -1;
        CHECK_OK(MPI_Scatterv(sb, c, d, MPI_INT, mine, N, MPI_INT, root, MPI_COMM_WORLD));
        for (int i = 0; i < N; i++)
            CHECK(mine[i] == val(root, 1, i), "scatterv root %d [%d]: %d", root, i, mine[i]);
        for (int reversed = 0; reversed < 2; reversed++) {
            for (int r = 0; r < size; r++) d[r] = (reversed ? size - 1 - r : r) * N;
            for (int i = 0; i < N; i++) mine[i] = val(rank, 2, i);
            for (int i = 0; i < size * N; i++) rb[i] = -1;
            rb[size * N] = GUARD;
            CHECK_OK(MPI_Gatherv(mine, N, MPI_INT, rb, c, d, MPI_INT, root, MPI_COMM_WORLD));
            if (rank != root) continue;
            for (int r = 0; r < size; r++)
                for (int i = 0; i < N; i++)
                    CHECK(rb[d[r] + i] == val(r, 2, i), "gatherv rev %d root %d from %d [%d]: %d",
                          reversed, root, r, i, rb[d[r] + i]);
            CHECK(rb[size * N] == GUARD, "gatherv wrote past its blocks");
        }
    }
    free(sb);
    free(rb);
    free(c);
    free(d);
}

/* MPI_Allgather and MPI_Alltoall of a contiguous derived type (3 ints). */
static void test_contiguous_type(void)
{
    MPI_Datatype three;
    CHECK_OK(MPI_Type_contiguous(3, MPI_INT, &three));
    CHECK_OK(MPI_Type_commit(&three));
    int k = N / 3;
    int *sb = malloc(size * N * sizeof(int)), *rb = malloc((size * N + 1) * sizeof(int));
    for (int i = 0; i < 3 * k; i++) sb[i] = val(rank, 3, i);
    for (int i = 0; i < size * N; i++) rb[i] = -1;
    rb[size * 3 * k] = GUARD;
    CHECK_OK(MPI_Allgather(sb, k, three, rb, k, three, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 3 * k; i++)
            CHECK(rb[r * 3 * k + i] == val(r, 3, i), "allgather from %d [%d]: %d", r, i,
                  rb[r * 3 * k + i]);
    CHECK(rb[size * 3 * k] == GUARD, "allgather wrote past its blocks");
    for (int to = 0; to < size; to++)
        for (int i = 0; i < 3 * k; i++) sb[to * 3 * k + i] = val(rank, to, i);
    CHECK_OK(MPI_Alltoall(sb, k, three, rb, k, three, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 3 * k; i++)
            CHECK(rb[r * 3 * k + i] == val(r, rank, i), "alltoall from %d [%d]: %d", r, i,
                  rb[r * 3 * k + i]);
    CHECK(rb[size * 3 * k] == GUARD, "alltoall wrote past its blocks");
    CHECK_OK(MPI_Type_free(&three));
    free(sb);
    free(rb);
}

/* Reductions whose buffers are one byte off an int's alignment. */
static void test_unaligned_reduce(void)
{
    char *sraw = malloc(N * sizeof(int) + 1), *rraw = malloc(N * sizeof(int) + 1);
    void *s = sraw + 1, *r = rraw + 1;
    int x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = rank * 7 + i;
    memcpy(s, x, sizeof x);
    for (int root = 0; root < size; root++) {
        memset(r, 0xff, sizeof y);
        CHECK_OK(MPI_Reduce(s, r, N, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
        if (rank == root) {
            memcpy(y, r, sizeof y);
            for (int i = 0; i < N; i++)
                CHECK(y[i] == 7 * size * (size - 1) / 2 + size * i, "reduce root %d [%d]: %d",
                      root, i, y[i]);
        }
    }
    memset(r, 0xff, sizeof y);
    CHECK_OK(MPI_Allreduce(s, r, N, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    memcpy(y, r, sizeof y);
    for (int i = 0; i < N; i++)
        CHECK(y[i] == 7 * (size - 1) + i, "allreduce [%d]: %d", i, y[i]);
    /* The nonblocking forms: misaligned (staged) and aligned (in place). */
    MPI_Request rq;
    memset(r, 0xff, sizeof y);
    CHECK_OK(MPI_Iallreduce(s, r, N, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &rq));
    CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    memcpy(y, r, sizeof y);
    for (int i = 0; i < N; i++) CHECK(y[i] == i, "iallreduce misaligned [%d]: %d", i, y[i]);
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < N; i++) y[i] = -1;
        CHECK_OK(MPI_Ireduce(x, y, N, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &rq));
        CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        if (rank == root)
            for (int i = 0; i < N; i++)
                CHECK(y[i] == 7 * size * (size - 1) / 2 + size * i, "ireduce root %d [%d]: %d",
                      root, i, y[i]);
    }
    for (int i = 0; i < N; i++) y[i] = x[i];
    CHECK_OK(MPI_Iallreduce(MPI_IN_PLACE, y, N, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rq));
    CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int i = 0; i < N; i++)
        CHECK(y[i] == 7 * (size - 1) + i, "iallreduce in place [%d]: %d", i, y[i]);
    free(sraw);
    free(rraw);
}

/* The nonblocking all-to-all: rank 0's blocks packed (every other int
 * of its buffer), the others' sent from and received into place; then
 * MPI_Ialltoallv with the receive blocks in reverse order. */
static void test_ialltoall(void)
{
    int k = N / 3;
    int *sb = malloc(2 * size * k * sizeof(int)), *rb = malloc((size * k + 1) * sizeof(int));
    MPI_Datatype every_other;
    CHECK_OK(MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &every_other));
    CHECK_OK(MPI_Type_commit(&every_other));
    int stride = rank == 0 ? 2 : 1;
    for (int to = 0; to < size; to++)
        for (int i = 0; i < k; i++) {
            sb[(to * k + i) * stride] = val(rank, to, i);
            if (stride == 2) sb[(to * k + i) * 2 + 1] = -7;
        }
    for (int i = 0; i < size * k; i++) rb[i] = -1;
    rb[size * k] = GUARD;
    MPI_Request rq;
    CHECK_OK(MPI_Ialltoall(sb, k, rank == 0 ? every_other : MPI_INT, rb, k, MPI_INT,
                           MPI_COMM_WORLD, &rq));
    CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int r = 0; r < size; r++)
        for (int i = 0; i < k; i++)
            CHECK(rb[r * k + i] == val(r, rank, i), "ialltoall from %d [%d]: %d", r, i, rb[r * k + i]);
    CHECK(rb[size * k] == GUARD, "ialltoall wrote past its blocks");
    /* MPI_Iallgather the same way: rank 0's part packed, the others' in place. */
    for (int i = 0; i < k; i++) sb[i * stride] = val(rank, 9, i);
    for (int i = 0; i < size * k; i++) rb[i] = -1;
    CHECK_OK(MPI_Iallgather(sb, k, rank == 0 ? every_other : MPI_INT, rb, k, MPI_INT,
                            MPI_COMM_WORLD, &rq));
    CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int r = 0; r < size; r++)
        for (int i = 0; i < k; i++)
            CHECK(rb[r * k + i] == val(r, 9, i), "iallgather from %d [%d]: %d", r, i, rb[r * k + i]);
    CHECK(rb[size * k] == GUARD, "iallgather wrote past its blocks");
    int *c = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int));
    for (int to = 0; to < size; to++)
        for (int i = 0; i < k; i++) sb[to * k + i] = val(rank, to, i);
    for (int r = 0; r < size; r++) {
        c[r] = k;
        sd[r] = r * k;
        rd[r] = (size - 1 - r) * k;
    }
    for (int i = 0; i < size * k; i++) rb[i] = -1;
    CHECK_OK(MPI_Ialltoallv(sb, c, sd, MPI_INT, rb, c, rd, MPI_INT, MPI_COMM_WORLD, &rq));
    CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int r = 0; r < size; r++)
        for (int i = 0; i < k; i++)
            CHECK(rb[rd[r] + i] == val(r, rank, i), "ialltoallv from %d [%d]: %d", r, i,
                  rb[rd[r] + i]);
    CHECK(rb[size * k] == GUARD, "ialltoallv wrote past its blocks");
    CHECK_OK(MPI_Type_free(&every_other));
    free(sb);
    free(rb);
    free(c);
    free(sd);
    free(rd);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_alltoallv_shared_send();
    test_scatterv_gatherv();
    test_contiguous_type();
    test_unaligned_reduce();
    test_ialltoall();
    return ct_finish();
}
