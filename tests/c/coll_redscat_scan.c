/* ranks: 1 3 4 */
/* Blocking MPI_Reduce_scatter_block, MPI_Reduce_scatter (uneven counts,
 * some zero), MPI_Scan and MPI_Exscan with counts 0, 1 and 1000, plain and
 * with MPI_IN_PLACE, with MPI_SUM and MPI_MAX on MPI_INT and MPI_SUM on
 * MPI_DOUBLE. Exscan's result on rank 0 is undefined and is not read. */
#include "common.h"

#define MAXC 1000
#define FILL (-1)
#define GUARD (-424242)
static const int counts[] = {0, 1, MAXC};
#define NCOUNTS 3

static int rank, size;

static int val(int r, int i) { return (r * 13 + i * 7) % 61 - 30; }

static int sum_upto(int nranks, int i) /* sum over ranks [0, nranks) */
{
    int e = 0;
    for (int r = 0; r < nranks; r++) e += val(r, i);
    return e;
}

static int max_upto(int nranks, int i)
{
    int e = val(0, i);
    for (int r = 1; r < nranks; r++)
        if (val(r, i) > e) e = val(r, i);
    return e;
}

static int rcnt(int r, int n)
{
    if (n == 0 || r % 3 == 1) return 0;
    return n + r;
}

static void test_reduce_scatter_block(int *sb, int *rb)
{
    for (int c = 0; c < NCOUNTS; c++) {
        int n = counts[c];
        for (int inplace = 0; inplace < 2; inplace++) {
            for (int i = 0; i < size * n; i++) {
                sb[i] = val(rank, i);
                rb[i] = inplace ? val(rank, i) : FILL;
            }
            if (!inplace) rb[n] = GUARD;
            if (inplace)
                CHECK_OK(MPI_Reduce_scatter_block(MPI_IN_PLACE, rb, n, MPI_INT, MPI_SUM,
                                                  MPI_COMM_WORLD));
            else
                CHECK_OK(MPI_Reduce_scatter_block(sb, rb, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            for (int i = 0; i < n; i++) {
                int e = sum_upto(size, rank * n + i);
                CHECK(rb[i] == e, "reduce_scatter_block n %d inplace %d: [%d]=%d expected %d", n,
                      inplace, i, rb[i], e);
            }
            if (!inplace) CHECK(rb[n] == GUARD, "reduce_scatter_block n %d: guard overwritten", n);
        }
        /* MAX, not in place */
        for (int i = 0; i < size * n; i++) sb[i] = val(rank, i);
        CHECK_OK(MPI_Reduce_scatter_block(sb, rb, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++)
            CHECK(rb[i] == max_upto(size, rank * n + i), "reduce_scatter_block max n %d: [%d]=%d",
                  n, i, rb[i]);
    }
}

static void test_reduce_scatter(int *sb, int *rb)
{
    int *cnt = malloc(size * sizeof(int));
    for (int c = 0; c < NCOUNTS; c++) {
        int n = counts[c];
        int total = 0, off = 0;
        for (int r = 0; r < size; r++) {
            cnt[r] = rcnt(r, n);
            if (r < rank) off += cnt[r];
            total += cnt[r];
        }
        for (int inplace = 0; inplace < 2; inplace++) {
            for (int i = 0; i < total; i++) {
                sb[i] = val(rank, i);
                rb[i] = inplace ? val(rank, i) : FILL;
            }
            if (!inplace) rb[cnt[rank]] = GUARD;
            if (inplace)
                CHECK_OK(MPI_Reduce_scatter(MPI_IN_PLACE, rb, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            else
                CHECK_OK(MPI_Reduce_scatter(sb, rb, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            for (int i = 0; i < cnt[rank]; i++) {
                int e = sum_upto(size, off + i);
                CHECK(rb[i] == e, "reduce_scatter n %d inplace %d: [%d]=%d expected %d", n, inplace,
                      i, rb[i], e);
            }
            if (!inplace)
                CHECK(rb[cnt[rank]] == GUARD, "reduce_scatter n %d: guard overwritten", n);
        }
    }
    free(cnt);
}

static void test_scan(int *sb, int *rb)
{
    double *ds = malloc((MAXC + 1) * sizeof(double)), *dr = malloc((MAXC + 1) * sizeof(double));
    for (int c = 0; c < NCOUNTS; c++) {
        int n = counts[c];
        for (int inplace = 0; inplace < 2; inplace++) {
            for (int i = 0; i < n; i++) {
                sb[i] = val(rank, i);
                rb[i] = inplace ? val(rank, i) : FILL;
            }
            rb[n] = GUARD;
            if (inplace)
                CHECK_OK(MPI_Scan(MPI_IN_PLACE, rb, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            else
                CHECK_OK(MPI_Scan(sb, rb, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            for (int i = 0; i < n; i++)
                CHECK(rb[i] == sum_upto(rank + 1, i), "scan n %d inplace %d: [%d]=%d expected %d", n,
                      inplace, i, rb[i], sum_upto(rank + 1, i));
            CHECK(rb[n] == GUARD, "scan n %d: guard overwritten", n);

            /* exscan: rank 0's result is undefined, so only look at others */
            for (int i = 0; i < n; i++) rb[i] = inplace ? val(rank, i) : FILL;
            if (inplace)
                CHECK_OK(MPI_Exscan(MPI_IN_PLACE, rb, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            else
                CHECK_OK(MPI_Exscan(sb, rb, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            if (rank > 0)
                for (int i = 0; i < n; i++)
                    CHECK(rb[i] == sum_upto(rank, i), "exscan n %d inplace %d: [%d]=%d expected %d",
                          n, inplace, i, rb[i], sum_upto(rank, i));
            CHECK(rb[n] == GUARD, "exscan n %d: guard overwritten", n);
        }
        /* MAX scan/exscan, and a double sum scan */
        CHECK_OK(MPI_Scan(sb, rb, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++)
            CHECK(rb[i] == max_upto(rank + 1, i), "scan max n %d: [%d]=%d", n, i, rb[i]);
        CHECK_OK(MPI_Exscan(sb, rb, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
        if (rank > 0)
            for (int i = 0; i < n; i++)
                CHECK(rb[i] == max_upto(rank, i), "exscan max n %d: [%d]=%d", n, i, rb[i]);
        for (int i = 0; i < n; i++) ds[i] = val(rank, i) * 0.5;
        CHECK_OK(MPI_Scan(ds, dr, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < n; i++)
            CHECK(dr[i] == sum_upto(rank + 1, i) * 0.5, "scan double n %d: [%d]=%g", n, i, dr[i]);
    }
    free(ds);
    free(dr);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int len = size * (MAXC + size + 2) + 2;
    int *sb = malloc(len * sizeof(int)), *rb = malloc(len * sizeof(int));
    test_reduce_scatter_block(sb, rb);
    test_reduce_scatter(sb, rb);
    test_scan(sb, rb);
    free(sb);
    free(rb);
    return ct_finish();
}
