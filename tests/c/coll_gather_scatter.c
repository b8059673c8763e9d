/* ranks: 1 3 4 */
/* Blocking MPI_Gather, MPI_Gatherv, MPI_Scatter and MPI_Scatterv with every
 * root and per-rank counts 0, 1 and 1000 (the v forms with uneven counts,
 * some ranks contributing nothing, and displacements in reverse rank order
 * with gaps that must stay untouched), plain and with MPI_IN_PLACE at the
 * root. */
#include "common.h"

#define MAXC 1000
#define FILL (-1)
#define GUARD (-424242)
static const int counts[] = {0, 1, MAXC};
#define NCOUNTS 3

static int rank, size;

/* element i of rank r's block when root is `root` */
static int val(int root, int r, int i) { return root * 100000 + r * 10000 + i; }

/* the v-variant count of rank r for base count n: uneven, some zero */
static int vcnt(int r, int n)
{
    if (n == 0 || r % 3 == 1) return 0;
    return n + r;
}

/* displacements in reverse rank order with a 2-element gap before each
 * block; returns the total length of the layout */
static int vdispls(int n, int *cnt, int *displs)
{
    int off = 1;
    for (int r = size - 1; r >= 0; r--) {
        cnt[r] = vcnt(r, n);
        displs[r] = off;
        off += cnt[r] + 2;
    }
    return off;
}

static void test_gather(int *sb, int *rb)
{
    for (int root = 0; root < size; root++) {
        for (int c = 0; c < NCOUNTS; c++) {
            int n = counts[c];
            for (int inplace = 0; inplace < 2; inplace++) {
                for (int i = 0; i < n; i++) sb[i] = val(root, rank, i);
                for (int i = 0; i < size * n + 1; i++) rb[i] = FILL;
                rb[size * n] = GUARD;
                if (rank == root && inplace) {
                    for (int i = 0; i < n; i++) rb[root * n + i] = val(root, root, i);
                    CHECK_OK(MPI_Gather(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, rb, n, MPI_INT,
                                        root, MPI_COMM_WORLD));
                } else if (rank == root) {
                    CHECK_OK(MPI_Gather(sb, n, MPI_INT, rb, n, MPI_INT, root, MPI_COMM_WORLD));
                } else {
                    /* receive arguments are not significant off the root */
                    CHECK_OK(MPI_Gather(sb, n, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, root,
                                        MPI_COMM_WORLD));
                }
                if (rank != root) continue;
                for (int r = 0; r < size; r++)
                    for (int i = 0; i < n; i++)
                        CHECK(rb[r * n + i] == val(root, r, i),
                              "gather root %d n %d inplace %d: [%d][%d]=%d expected %d", root, n,
                              inplace, r, i, rb[r * n + i], val(root, r, i));
                CHECK(rb[size * n] == GUARD, "gather root %d n %d: guard overwritten", root, n);
            }
        }
    }
}

static void test_gatherv(int *sb, int *rb)
{
    int *cnt = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    for (int root = 0; root < size; root++) {
        for (int c = 0; c < NCOUNTS; c++) {
            int n = counts[c];
            int total = vdispls(n, cnt, displs);
            for (int inplace = 0; inplace < 2; inplace++) {
                for (int i = 0; i < cnt[rank]; i++) sb[i] = val(root, rank, i);
                for (int i = 0; i < total; i++) rb[i] = FILL;
                if (rank == root && inplace) {
                    for (int i = 0; i < cnt[root]; i++) rb[displs[root] + i] = val(root, root, i);
                    CHECK_OK(MPI_Gatherv(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, rb, cnt, displs,
                                         MPI_INT, root, MPI_COMM_WORLD));
                } else if (rank == root) {
                    CHECK_OK(MPI_Gatherv(sb, cnt[rank], MPI_INT, rb, cnt, displs, MPI_INT, root,
                                         MPI_COMM_WORLD));
                } else {
                    CHECK_OK(MPI_Gatherv(sb, cnt[rank], MPI_INT, NULL, NULL, NULL,
                                         MPI_DATATYPE_NULL, root, MPI_COMM_WORLD));
                }
                if (rank != root) continue;
                /* expected layout: blocks where displs say, FILL elsewhere */
                for (int i = 0; i < total; i++) {
                    int e = FILL;
                    for (int r = 0; r < size; r++)
                        if (i >= displs[r] && i < displs[r] + cnt[r]) e = val(root, r, i - displs[r]);
                    CHECK(rb[i] == e, "gatherv root %d n %d inplace %d: [%d]=%d expected %d", root,
                          n, inplace, i, rb[i], e);
                }
            }
        }
    }
    free(cnt);
    free(displs);
}

static void test_scatter(int *sb, int *rb)
{
    for (int root = 0; root < size; root++) {
        for (int c = 0; c < NCOUNTS; c++) {
            int n = counts[c];
            for (int inplace = 0; inplace < 2; inplace++) {
                if (rank == root)
                    for (int r = 0; r < size; r++)
                        for (int i = 0; i < n; i++) sb[r * n + i] = val(root, r, i);
                for (int i = 0; i < n; i++) rb[i] = FILL;
                rb[n] = GUARD;
                if (rank == root && inplace) {
                    CHECK_OK(MPI_Scatter(sb, n, MPI_INT, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, root,
                                         MPI_COMM_WORLD));
                    /* the root's own block stays where it is, untouched */
                    for (int r = 0; r < size; r++)
                        for (int i = 0; i < n; i++)
                            CHECK(sb[r * n + i] == val(root, r, i),
                                  "scatter in place root %d n %d: sendbuf [%d][%d] changed", root, n,
                                  r, i);
                    CHECK(rb[n] == GUARD && (n == 0 || rb[0] == FILL),
                          "scatter in place root %d: recvbuf touched", root);
                    continue;
                }
                if (rank == root)
                    CHECK_OK(MPI_Scatter(sb, n, MPI_INT, rb, n, MPI_INT, root, MPI_COMM_WORLD));
                else
                    CHECK_OK(MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, rb, n, MPI_INT, root,
                                         MPI_COMM_WORLD));
                for (int i = 0; i < n; i++)
                    CHECK(rb[i] == val(root, rank, i), "scatter root %d n %d inplace %d: [%d]=%d expected %d",
                          root, n, inplace, i, rb[i], val(root, rank, i));
                CHECK(rb[n] == GUARD, "scatter root %d n %d: guard overwritten", root, n);
            }
        }
    }
}

static void test_scatterv(int *sb, int *rb)
{
    int *cnt = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    for (int root = 0; root < size; root++) {
        for (int c = 0; c < NCOUNTS; c++) {
            int n = counts[c];
            int total = vdispls(n, cnt, displs);
            for (int inplace = 0; inplace < 2; inplace++) {
                if (rank == root) {
                    for (int i = 0; i < total; i++) sb[i] = GUARD; /* gaps: must not be sent */
                    for (int r = 0; r < size; r++)
                        for (int i = 0; i < cnt[r]; i++) sb[displs[r] + i] = val(root, r, i);
                }
                for (int i = 0; i <= cnt[rank]; i++) rb[i] = FILL;
                rb[cnt[rank]] = GUARD;
                if (rank == root && inplace) {
                    CHECK_OK(MPI_Scatterv(sb, cnt, displs, MPI_INT, MPI_IN_PLACE, -1,
                                          MPI_DATATYPE_NULL, root, MPI_COMM_WORLD));
                    for (int r = 0; r < size; r++)
                        for (int i = 0; i < cnt[r]; i++)
                            CHECK(sb[displs[r] + i] == val(root, r, i),
                                  "scatterv in place root %d n %d: sendbuf changed", root, n);
                    CHECK(rb[cnt[rank]] == GUARD && (cnt[rank] == 0 || rb[0] == FILL),
                          "scatterv in place root %d: recvbuf touched", root);
                    continue;
                }
                if (rank == root)
                    CHECK_OK(MPI_Scatterv(sb, cnt, displs, MPI_INT, rb, cnt[rank], MPI_INT, root,
                                          MPI_COMM_WORLD));
                else
                    CHECK_OK(MPI_Scatterv(NULL, NULL, NULL, MPI_DATATYPE_NULL, rb, cnt[rank],
                                          MPI_INT, root, MPI_COMM_WORLD));
                for (int i = 0; i < cnt[rank]; i++)
                    CHECK(rb[i] == val(root, rank, i), "scatterv root %d n %d: [%d]=%d expected %d",
                          root, n, i, rb[i], val(root, rank, i));
                CHECK(rb[cnt[rank]] == GUARD, "scatterv root %d n %d: guard overwritten", root, n);
            }
        }
    }
    free(cnt);
    free(displs);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* big enough for size * (MAXC + size + 2) + guards */
    int len = size * (MAXC + size + 3) + 2;
    int *sb = malloc(len * sizeof(int)), *rb = malloc(len * sizeof(int));
    test_gather(sb, rb);
    test_gatherv(sb, rb);
    test_scatter(sb, rb);
    test_scatterv(sb, rb);
    free(sb);
    free(rb);
    return ct_finish();
}
