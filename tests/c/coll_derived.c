/* ranks: 2 3 4 */
/* Collectives on derived datatypes, with every root: MPI_Bcast of a matrix
 * column (MPI_Type_vector) received as a column, as contiguous MPI_INTs,
 * and as several columns of a resized column type; MPI_Gather of a struct
 * type (MPI_Type_create_struct resized to sizeof the C struct);
 * MPI_Scatter and MPI_Alltoall with a column type resized to one int
 * (a distributed transpose); MPI_Allreduce (also in place) / MPI_Reduce
 * on an MPI_Type_contiguous of MPI_INT with a summing user op. Elements
 * outside the type maps must stay untouched. */
#include "common.h"
#include <stddef.h>

#define ROWS 5
#define COLS 6
static int rank, size;

static int mval(int root, int i, int j) { return root * 100 + i * 10 + j; }

static void test_bcast_vector(void)
{
    MPI_Datatype col, colres;
    CHECK_OK(MPI_Type_vector(ROWS, 1, COLS, MPI_INT, &col));
    CHECK_OK(MPI_Type_commit(&col));
    CHECK_OK(MPI_Type_create_resized(col, 0, sizeof(int), &colres));
    CHECK_OK(MPI_Type_commit(&colres));
    for (int root = 0; root < size; root++) {
        int a[ROWS][COLS], flat[ROWS + 1];
        for (int i = 0; i < ROWS; i++)
            for (int j = 0; j < COLS; j++) a[i][j] = rank == root ? mval(root, i, j) : -1;

        /* column 2 as a vector on both sides */
        CHECK_OK(MPI_Bcast(&a[0][2], 1, col, root, MPI_COMM_WORLD));
        for (int i = 0; i < ROWS; i++)
            for (int j = 0; j < COLS; j++) {
                int e = (rank == root || j == 2) ? mval(root, i, j) : -1;
                CHECK(a[i][j] == e, "bcast vector root %d: a[%d][%d]=%d expected %d", root, i, j,
                      a[i][j], e);
            }

        /* column 4 sent as a vector, received as ROWS contiguous ints */
        for (int i = 0; i <= ROWS; i++) flat[i] = -1;
        if (rank == root)
            CHECK_OK(MPI_Bcast(&a[0][4], 1, col, root, MPI_COMM_WORLD));
        else
            CHECK_OK(MPI_Bcast(flat, ROWS, MPI_INT, root, MPI_COMM_WORLD));
        if (rank != root) {
            for (int i = 0; i < ROWS; i++)
                CHECK(flat[i] == mval(root, i, 4), "bcast vector->int root %d: [%d]=%d", root, i,
                      flat[i]);
            CHECK(flat[ROWS] == -1, "bcast vector->int: guard overwritten");
        }

        /* columns 3, 4, 5 as three elements of the resized column type */
        CHECK_OK(MPI_Bcast(&a[0][3], 3, colres, root, MPI_COMM_WORLD));
        for (int i = 0; i < ROWS; i++)
            for (int j = 0; j < COLS; j++) {
                int e = (rank == root || j >= 2) ? mval(root, i, j) : -1;
                CHECK(a[i][j] == e, "bcast resized root %d: a[%d][%d]=%d expected %d", root, i, j,
                      a[i][j], e);
            }
    }
    CHECK_OK(MPI_Type_free(&col));
    CHECK_OK(MPI_Type_free(&colres));
}

struct rec {
    int id;
    double x;
    char tag[3];
};

static void test_gather_struct(void)
{
    int bl[3] = {1, 1, 3};
    MPI_Aint disp[3] = {offsetof(struct rec, id), offsetof(struct rec, x), offsetof(struct rec, tag)};
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, st, rt;
    CHECK_OK(MPI_Type_create_struct(3, bl, disp, types, &st));
    CHECK_OK(MPI_Type_create_resized(st, 0, sizeof(struct rec), &rt));
    CHECK_OK(MPI_Type_commit(&rt));
    MPI_Aint lb, ext;
    CHECK_OK(MPI_Type_get_extent(rt, &lb, &ext));
    CHECK(lb == 0 && ext == (MPI_Aint)sizeof(struct rec), "struct type lb %ld extent %ld", (long)lb,
          (long)ext);
    int tsize;
    CHECK_OK(MPI_Type_size(rt, &tsize));
    CHECK(tsize == (int)(sizeof(int) + sizeof(double) + 3), "struct type size %d", tsize);

    struct rec mine[2], *all = malloc(2 * size * sizeof(struct rec));
    for (int root = 0; root < size; root++) {
        for (int k = 0; k < 2; k++) {
            mine[k].id = rank * 10 + k;
            mine[k].x = rank + k * 0.5 + root;
            mine[k].tag[0] = (char)('a' + rank);
            mine[k].tag[1] = (char)('0' + k);
            mine[k].tag[2] = (char)('A' + root);
        }
        memset(all, 0, 2 * size * sizeof(struct rec));
        CHECK_OK(MPI_Gather(mine, 2, rt, all, 2, rt, root, MPI_COMM_WORLD));
        if (rank != root) continue;
        for (int r = 0; r < size; r++)
            for (int k = 0; k < 2; k++) {
                struct rec *p = &all[2 * r + k];
                CHECK(p->id == r * 10 + k && p->x == r + k * 0.5 + root && p->tag[0] == 'a' + r &&
                          p->tag[1] == '0' + k && p->tag[2] == 'A' + root,
                      "gather struct root %d: rec %d.%d = {%d, %g, %c%c%c}", root, r, k, p->id, p->x,
                      p->tag[0], p->tag[1], p->tag[2]);
            }
    }
    free(all);
    CHECK_OK(MPI_Type_free(&st));
    CHECK_OK(MPI_Type_free(&rt));
}

static void test_transpose(void)
{
    enum { K = 3 };
    /* S is K x size, row-major; column j goes to rank j */
    int *s = malloc(K * size * sizeof(int)), *r = malloc((K * size + 1) * sizeof(int));
    int *r2 = malloc(K * size * sizeof(int));
    MPI_Datatype col, colres;
    CHECK_OK(MPI_Type_vector(K, 1, size, MPI_INT, &col));
    CHECK_OK(MPI_Type_create_resized(col, 0, sizeof(int), &colres));
    CHECK_OK(MPI_Type_commit(&colres));
    for (int k = 0; k < K; k++)
        for (int j = 0; j < size; j++) s[k * size + j] = rank * 1000 + k * 100 + j;

    /* scatter of columns from every root */
    for (int root = 0; root < size; root++) {
        for (int i = 0; i <= K; i++) r[i] = -1;
        CHECK_OK(MPI_Scatter(s, 1, colres, r, K, MPI_INT, root, MPI_COMM_WORLD));
        for (int k = 0; k < K; k++)
            CHECK(r[k] == root * 1000 + k * 100 + rank, "scatter column root %d: [%d]=%d", root, k,
                  r[k]);
        CHECK(r[K] == -1, "scatter column: guard overwritten");
    }

    /* alltoall: columns out, contiguous in */
    for (int i = 0; i <= K * size; i++) r[i] = -1;
    CHECK_OK(MPI_Alltoall(s, 1, colres, r, K, MPI_INT, MPI_COMM_WORLD));
    for (int j = 0; j < size; j++)
        for (int k = 0; k < K; k++)
            CHECK(r[j * K + k] == j * 1000 + k * 100 + rank, "alltoall column->int [%d][%d]=%d", j,
                  k, r[j * K + k]);
    CHECK(r[K * size] == -1, "alltoall: guard overwritten");

    /* alltoall: columns out, columns in: r2[k][j] = S_j[k][rank] */
    for (int i = 0; i < K * size; i++) r2[i] = -1;
    CHECK_OK(MPI_Alltoall(s, 1, colres, r2, 1, colres, MPI_COMM_WORLD));
    for (int k = 0; k < K; k++)
        for (int j = 0; j < size; j++)
            CHECK(r2[k * size + j] == j * 1000 + k * 100 + rank, "alltoall column->column [%d][%d]=%d",
                  k, j, r2[k * size + j]);
    CHECK_OK(MPI_Type_free(&col));
    CHECK_OK(MPI_Type_free(&colres));
    free(s);
    free(r);
    free(r2);
}

/* MPI_SUM itself is only defined on predefined datatypes (MPI-4.0 6.9.2;
 * only the RMA accumulate functions take derived types with predefined
 * ops, and MPICH rejects MPI_SUM on a contiguous type), so the reduction
 * over a contiguous type of MPI_INT uses a user op that sums the ints. */
static MPI_Datatype tri;
static int bad_calls = 0;
enum { C = 4, L = 3 };

static void trisum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    if (*dt != tri) bad_calls++;
    int *a = in, *b = inout;
    for (int k = 0; k < *len * L; k++) b[k] += a[k];
}

static void test_reduce_contig(void)
{
    MPI_Op op;
    CHECK_OK(MPI_Type_contiguous(L, MPI_INT, &tri));
    CHECK_OK(MPI_Type_commit(&tri));
    CHECK_OK(MPI_Op_create(trisum, 1, &op));
    int s[C * L], r[C * L + 1], e[C * L];
    for (int i = 0; i < C * L; i++) {
        s[i] = rank * 7 + i;
        e[i] = 0;
        for (int q = 0; q < size; q++) e[i] += q * 7 + i;
    }
    r[C * L] = -1;
    CHECK_OK(MPI_Allreduce(s, r, C, tri, op, MPI_COMM_WORLD));
    for (int i = 0; i < C * L; i++) CHECK(r[i] == e[i], "allreduce contig [%d]=%d expected %d", i, r[i], e[i]);
    memcpy(r, s, sizeof s);
    CHECK_OK(MPI_Allreduce(MPI_IN_PLACE, r, C, tri, op, MPI_COMM_WORLD));
    for (int i = 0; i < C * L; i++)
        CHECK(r[i] == e[i], "allreduce contig in place [%d]=%d expected %d", i, r[i], e[i]);
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < C * L; i++) r[i] = -1;
        CHECK_OK(MPI_Reduce(s, r, C, tri, op, root, MPI_COMM_WORLD));
        if (rank == root)
            for (int i = 0; i < C * L; i++)
                CHECK(r[i] == e[i], "reduce contig root %d [%d]=%d expected %d", root, i, r[i], e[i]);
    }
    CHECK(r[C * L] == -1, "contig reduce: guard overwritten");
    CHECK(bad_calls == 0, "op saw a datatype other than the contiguous type %d times", bad_calls);
    CHECK_OK(MPI_Op_free(&op));
    CHECK_OK(MPI_Type_free(&tri));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_bcast_vector();
    test_gather_struct();
    test_transpose();
    test_reduce_contig();
    return ct_finish();
}
