/* ranks: 1 3 8 */
/* User-defined ops from MPI_Op_create, freed with MPI_Op_free (handle set
 * to MPI_OP_NULL): a commutative sum mod 97 on MPI_INT (counts 0, 1, 1000)
 * and non-commutative ones whose result depends on rank order: the product
 * of 2x2 unsigned matrices (a contiguous datatype of 4 MPI_UNSIGNED) and
 * the "keep the left operand" op. Used with MPI_Reduce at every root (also
 * in place), MPI_Allreduce (also in place), MPI_Scan, MPI_Exscan,
 * MPI_Reduce_scatter_block, MPI_Reduce_scatter and MPI_Iallreduce /
 * MPI_Ireduce. The op function must see the datatype handle the call got. */
#include "common.h"

#define MAXC 1000
static int rank, size;
static MPI_Datatype mattype;
static int bad_calls = 0;

static void summod(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    if (*dt != MPI_INT || *len < 0) bad_calls++;
    int *a = in, *b = inout;
    for (int k = 0; k < *len; k++) b[k] = (a[k] + b[k]) % 97;
}

/* inout = in * inout, the earlier ranks' product on the left */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    if (*dt != mattype || *len < 0) bad_calls++;
    unsigned *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        unsigned c0 = a[0] * b[0] + a[1] * b[2], c1 = a[0] * b[1] + a[1] * b[3];
        unsigned c2 = a[2] * b[0] + a[3] * b[2], c3 = a[2] * b[1] + a[3] * b[3];
        b[0] = c0;
        b[1] = c1;
        b[2] = c2;
        b[3] = c3;
    }
}

/* x op y = x: the reduction over ranks gives the lowest rank's value */
static void keepleft(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    if (*dt != MPI_INT || *len < 0) bad_calls++;
    memcpy(inout, in, *len * sizeof(int));
}

static int ival(int r, int i) { return (r * 31 + i * 17) % 97; }

/* matrix k of rank r: [[r + k + 1, 1], [1, r % 2]], no two ranks commute */
static void mat(int r, int k, unsigned *m)
{
    m[0] = r + k + 1;
    m[1] = 1;
    m[2] = 1;
    m[3] = r % 2;
}

/* product of matrix k over ranks [lo, hi) in rank order */
static void matprod(int lo, int hi, int k, unsigned *e)
{
    e[0] = 1, e[1] = 0, e[2] = 0, e[3] = 1;
    for (int r = lo; r < hi; r++) {
        unsigned m[4], t[4];
        mat(r, k, m);
        t[0] = e[0] * m[0] + e[1] * m[2];
        t[1] = e[0] * m[1] + e[1] * m[3];
        t[2] = e[2] * m[0] + e[3] * m[2];
        t[3] = e[2] * m[1] + e[3] * m[3];
        memcpy(e, t, sizeof t);
    }
}

static void check_mats(const unsigned *got, int n, int lo, int hi, int k0, const char *what)
{
    for (int k = 0; k < n; k++) {
        unsigned e[4];
        matprod(lo, hi, k0 + k, e);
        for (int j = 0; j < 4; j++)
            CHECK(got[4 * k + j] == e[j], "%s: matrix %d entry %d = %u expected %u", what, k, j,
                  got[4 * k + j], e[j]);
    }
}

static void test_commutative(void)
{
    static const int counts[] = {0, 1, MAXC};
    MPI_Op op;
    CHECK_OK(MPI_Op_create(summod, 1, &op));
    int *s = malloc((MAXC + 1) * sizeof(int)), *r = malloc((MAXC + 1) * sizeof(int));
    for (int c = 0; c < 3; c++) {
        int n = counts[c];
        for (int i = 0; i < n; i++) s[i] = ival(rank, i);
        int *e = malloc((n + 1) * sizeof(int)), *epre = malloc((n + 1) * sizeof(int));
        for (int i = 0; i < n; i++) {
            e[i] = 0;
            for (int q = 0; q < size; q++) {
                e[i] = (e[i] + ival(q, i)) % 97;
                if (q == rank) epre[i] = e[i];
            }
        }
        r[n] = -5;
        CHECK_OK(MPI_Allreduce(s, r, n, MPI_INT, op, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++) CHECK(r[i] == e[i], "summod allreduce n %d [%d]=%d", n, i, r[i]);
        for (int root = 0; root < size; root++) {
            CHECK_OK(MPI_Reduce(s, r, n, MPI_INT, op, root, MPI_COMM_WORLD));
            if (rank == root)
                for (int i = 0; i < n; i++)
                    CHECK(r[i] == e[i], "summod reduce root %d n %d [%d]=%d", root, n, i, r[i]);
            /* MPICH 4.0.2 (the reference) crashes on an in-place reduce of
             * more than 2 KiB at a nonzero root (pmodels/mpich#6540): the
             * in-place case uses at most 500 ints there */
            int m = (root != 0 && n > 500) ? 500 : n;
            if (rank == root) memcpy(r, s, m * sizeof(int));
            CHECK_OK(MPI_Reduce(rank == root ? MPI_IN_PLACE : s, r, m, MPI_INT, op, root,
                                MPI_COMM_WORLD));
            if (rank == root)
                for (int i = 0; i < m; i++)
                    CHECK(r[i] == e[i], "summod reduce in place root %d n %d [%d]=%d", root, n, i,
                          r[i]);
        }
        CHECK_OK(MPI_Scan(s, r, n, MPI_INT, op, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++) CHECK(r[i] == epre[i], "summod scan n %d [%d]=%d", n, i, r[i]);
        MPI_Request req;
        memcpy(r, s, n * sizeof(int));
        CHECK_OK(MPI_Iallreduce(MPI_IN_PLACE, r, n, MPI_INT, op, MPI_COMM_WORLD, &req));
        CHECK_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        for (int i = 0; i < n; i++)
            CHECK(r[i] == e[i], "summod iallreduce in place n %d [%d]=%d", n, i, r[i]);
        CHECK(r[n] == -5, "summod guard overwritten");
        free(e);
        free(epre);
    }
    CHECK_OK(MPI_Op_free(&op));
    CHECK(op == MPI_OP_NULL, "MPI_Op_free did not set MPI_OP_NULL");
    free(s);
    free(r);
}

static void test_matrices(void)
{
    enum { K = 3 };
    MPI_Op op;
    CHECK_OK(MPI_Type_contiguous(4, MPI_UNSIGNED, &mattype));
    CHECK_OK(MPI_Type_commit(&mattype));
    CHECK_OK(MPI_Op_create(matmul, 0, &op));
    unsigned s[4 * K], r[4 * K];
    for (int k = 0; k < K; k++) mat(rank, k, s + 4 * k);

    CHECK_OK(MPI_Allreduce(s, r, K, mattype, op, MPI_COMM_WORLD));
    check_mats(r, K, 0, size, 0, "matmul allreduce");
    memcpy(r, s, sizeof s);
    CHECK_OK(MPI_Allreduce(MPI_IN_PLACE, r, K, mattype, op, MPI_COMM_WORLD));
    check_mats(r, K, 0, size, 0, "matmul allreduce in place");
    for (int root = 0; root < size; root++) {
        memset(r, 0, sizeof r);
        CHECK_OK(MPI_Reduce(s, r, K, mattype, op, root, MPI_COMM_WORLD));
        if (rank == root) check_mats(r, K, 0, size, 0, "matmul reduce");
        if (rank == root) memcpy(r, s, sizeof s);
        CHECK_OK(MPI_Reduce(rank == root ? MPI_IN_PLACE : s, r, K, mattype, op, root,
                            MPI_COMM_WORLD));
        if (rank == root) check_mats(r, K, 0, size, 0, "matmul reduce in place");
        MPI_Request req;
        memset(r, 0, sizeof r);
        CHECK_OK(MPI_Ireduce(s, r, K, mattype, op, root, MPI_COMM_WORLD, &req));
        CHECK_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (rank == root) check_mats(r, K, 0, size, 0, "matmul ireduce");
    }
    CHECK_OK(MPI_Scan(s, r, K, mattype, op, MPI_COMM_WORLD));
    check_mats(r, K, 0, rank + 1, 0, "matmul scan");
    memcpy(r, s, sizeof s);
    CHECK_OK(MPI_Scan(MPI_IN_PLACE, r, K, mattype, op, MPI_COMM_WORLD));
    check_mats(r, K, 0, rank + 1, 0, "matmul scan in place");
    CHECK_OK(MPI_Exscan(s, r, K, mattype, op, MPI_COMM_WORLD));
    if (rank > 0) check_mats(r, K, 0, rank, 0, "matmul exscan");

    /* reduce_scatter_block: 2 matrices per rank; matrix index j of rank r is
     * mat(r, j) so block b holds products of matrices 2b and 2b+1 */
    unsigned *sb = malloc(2 * size * 4 * sizeof(unsigned)), rb[8];
    for (int j = 0; j < 2 * size; j++) mat(rank, j, sb + 4 * j);
    CHECK_OK(MPI_Reduce_scatter_block(sb, rb, 2, mattype, op, MPI_COMM_WORLD));
    check_mats(rb, 2, 0, size, 2 * rank, "matmul reduce_scatter_block");
    /* reduce_scatter: rank q gets q % 2 + 1 matrices */
    int *cnt = malloc(size * sizeof(int)), off = 0;
    for (int q = 0; q < size; q++) {
        cnt[q] = q % 2 + 1;
        if (q < rank) off += cnt[q];
    }
    CHECK_OK(MPI_Reduce_scatter(sb, rb, cnt, mattype, op, MPI_COMM_WORLD));
    check_mats(rb, cnt[rank], 0, size, off, "matmul reduce_scatter");
    free(sb);
    free(cnt);

    CHECK_OK(MPI_Op_free(&op));
    CHECK(op == MPI_OP_NULL, "MPI_Op_free did not set MPI_OP_NULL");
    CHECK_OK(MPI_Type_free(&mattype));
}

static void test_keepleft(void)
{
    MPI_Op op;
    CHECK_OK(MPI_Op_create(keepleft, 0, &op));
    int s[5], r[5];
    for (int i = 0; i < 5; i++) s[i] = 100 * rank + i;
    CHECK_OK(MPI_Allreduce(s, r, 5, MPI_INT, op, MPI_COMM_WORLD));
    for (int i = 0; i < 5; i++) CHECK(r[i] == i, "keepleft allreduce [%d]=%d", i, r[i]);
    CHECK_OK(MPI_Reduce(s, r, 5, MPI_INT, op, size - 1, MPI_COMM_WORLD));
    if (rank == size - 1)
        for (int i = 0; i < 5; i++) CHECK(r[i] == i, "keepleft reduce [%d]=%d", i, r[i]);
    CHECK_OK(MPI_Scan(s, r, 5, MPI_INT, op, MPI_COMM_WORLD));
    for (int i = 0; i < 5; i++) CHECK(r[i] == i, "keepleft scan [%d]=%d", i, r[i]);
    CHECK_OK(MPI_Op_free(&op));
    CHECK(op == MPI_OP_NULL, "MPI_Op_free did not set MPI_OP_NULL");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_commutative();
    test_matrices();
    test_keepleft();
    CHECK(bad_calls == 0, "%d op calls saw a wrong datatype or length", bad_calls);
    return ct_finish();
}
