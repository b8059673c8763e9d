/* ranks: 2 3 8 */
/* Blocking MPI_Allgather, MPI_Allgatherv, MPI_Alltoall and MPI_Alltoallv
 * with counts 0, 1 and 1000 per block, plain and with MPI_IN_PLACE; the v
 * forms use uneven counts (some zero) and displacements in reverse order
 * with gaps that must stay untouched. */
#include "common.h"

#define MAXC 1000
#define FILL (-1)
#define GUARD (-424242)
static const int counts[] = {0, 1, MAXC};
#define NCOUNTS 3

static int rank, size;

/* element i of the block rank `from` sends to rank `to` */
static int val(int from, int to, int i) { return (from * 8 + to) * 2000 + i; }

static int vcnt(int r, int n)
{
    if (n == 0 || r % 3 == 1) return 0;
    return n + r;
}

/* count of the block from rank i to rank j in alltoallv: asymmetric */
static int acnt(int i, int j, int n)
{
    if (n == 0 || (2 * i + j) % 4 == 3) return 0;
    return n + (2 * i + j) % 4;
}

/* symmetric variant, needed for in-place alltoallv */
static int scnt(int i, int j, int n)
{
    if (n == 0 || (i + j) % 3 == 2) return 0;
    return n + (i + j) % 3;
}

/* reverse-order displacements with 2-element gaps; returns total length */
static int layout(const int *cnt, int *displs)
{
    int off = 1;
    for (int r = size - 1; r >= 0; r--) {
        displs[r] = off;
        off += cnt[r] + 2;
    }
    return off;
}

/* checks rb[0..total) against blocks cnt/displs holding val(from, to, .)
 * where the block at index r comes from rank r (recv side) */
static void check_layout(const char *what, int n, int inplace, const int *rb, int total,
                         const int *cnt, const int *displs)
{
    for (int i = 0; i < total; i++) {
        int e = FILL;
        for (int r = 0; r < size; r++)
            if (i >= displs[r] && i < displs[r] + cnt[r]) e = val(r, rank, i - displs[r]);
        CHECK(rb[i] == e, "%s n %d inplace %d: [%d]=%d expected %d", what, n, inplace, i, rb[i], e);
    }
}

static void test_allgather(int *sb, int *rb)
{
    int *cnt = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    for (int c = 0; c < NCOUNTS; c++) {
        int n = counts[c];
        /* allgather: every block is val(r, 0, i) (same data to everyone) */
        for (int inplace = 0; inplace < 2; inplace++) {
            for (int i = 0; i < size * n; i++) rb[i] = FILL;
            rb[size * n] = GUARD;
            for (int i = 0; i < n; i++) sb[i] = val(rank, 0, i);
            if (inplace) {
                for (int i = 0; i < n; i++) rb[rank * n + i] = val(rank, 0, i);
                CHECK_OK(MPI_Allgather(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, rb, n, MPI_INT,
                                       MPI_COMM_WORLD));
            } else {
                CHECK_OK(MPI_Allgather(sb, n, MPI_INT, rb, n, MPI_INT, MPI_COMM_WORLD));
            }
            for (int r = 0; r < size; r++)
                for (int i = 0; i < n; i++)
                    CHECK(rb[r * n + i] == val(r, 0, i), "allgather n %d inplace %d: [%d][%d]=%d", n,
                          inplace, r, i, rb[r * n + i]);
            CHECK(rb[size * n] == GUARD, "allgather n %d: guard overwritten", n);
        }
        /* allgatherv */
        for (int r = 0; r < size; r++) cnt[r] = vcnt(r, n);
        int total = layout(cnt, displs);
        for (int inplace = 0; inplace < 2; inplace++) {
            for (int i = 0; i < total; i++) rb[i] = FILL;
            for (int i = 0; i < cnt[rank]; i++) sb[i] = val(rank, rank, i);
            if (inplace) {
                for (int i = 0; i < cnt[rank]; i++) rb[displs[rank] + i] = val(rank, rank, i);
                CHECK_OK(MPI_Allgatherv(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, rb, cnt, displs,
                                        MPI_INT, MPI_COMM_WORLD));
            } else {
                CHECK_OK(MPI_Allgatherv(sb, cnt[rank], MPI_INT, rb, cnt, displs, MPI_INT,
                                        MPI_COMM_WORLD));
            }
            for (int i = 0; i < total; i++) {
                int e = FILL;
                for (int r = 0; r < size; r++)
                    if (i >= displs[r] && i < displs[r] + cnt[r]) e = val(r, r, i - displs[r]);
                CHECK(rb[i] == e, "allgatherv n %d inplace %d: [%d]=%d expected %d", n, inplace, i,
                      rb[i], e);
            }
        }
    }
    free(cnt);
    free(displs);
}

static void test_alltoall(int *sb, int *rb)
{
    for (int c = 0; c < NCOUNTS; c++) {
        int n = counts[c];
        for (int inplace = 0; inplace < 2; inplace++) {
            for (int j = 0; j < size; j++)
                for (int i = 0; i < n; i++) {
                    sb[j * n + i] = val(rank, j, i);
                    rb[j * n + i] = inplace ? val(rank, j, i) : FILL;
                }
            rb[size * n] = GUARD;
            if (inplace)
                CHECK_OK(MPI_Alltoall(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, rb, n, MPI_INT,
                                      MPI_COMM_WORLD));
            else
                CHECK_OK(MPI_Alltoall(sb, n, MPI_INT, rb, n, MPI_INT, MPI_COMM_WORLD));
            for (int j = 0; j < size; j++)
                for (int i = 0; i < n; i++)
                    CHECK(rb[j * n + i] == val(j, rank, i), "alltoall n %d inplace %d: [%d][%d]=%d expected %d",
                          n, inplace, j, i, rb[j * n + i], val(j, rank, i));
            CHECK(rb[size * n] == GUARD, "alltoall n %d: guard overwritten", n);
            for (int j = 0; j < size && !inplace; j++)
                for (int i = 0; i < n; i++)
                    CHECK(sb[j * n + i] == val(rank, j, i), "alltoall changed sendbuf");
        }
    }
}

static void test_alltoallv(int *sb, int *rb)
{
    int *scount = malloc(size * sizeof(int)), *sdispl = malloc(size * sizeof(int));
    int *rcount = malloc(size * sizeof(int)), *rdispl = malloc(size * sizeof(int));
    for (int c = 0; c < NCOUNTS; c++) {
        int n = counts[c];
        /* plain, asymmetric counts; send gaps hold GUARD and must not be sent */
        for (int j = 0; j < size; j++) {
            scount[j] = acnt(rank, j, n);
            rcount[j] = acnt(j, rank, n);
        }
        int stotal = layout(scount, sdispl);
        int rtotal = layout(rcount, rdispl);
        /* make the send layout differ from the receive one */
        for (int j = 0; j < size; j++) sdispl[j] += j;
        stotal += size;
        for (int i = 0; i < stotal; i++) sb[i] = GUARD;
        for (int j = 0; j < size; j++)
            for (int i = 0; i < scount[j]; i++) sb[sdispl[j] + i] = val(rank, j, i);
        for (int i = 0; i < rtotal; i++) rb[i] = FILL;
        CHECK_OK(MPI_Alltoallv(sb, scount, sdispl, MPI_INT, rb, rcount, rdispl, MPI_INT,
                               MPI_COMM_WORLD));
        check_layout("alltoallv", n, 0, rb, rtotal, rcount, rdispl);

        /* in place: symmetric counts, data taken from and replaced in rb */
        for (int j = 0; j < size; j++) rcount[j] = scnt(rank, j, n);
        rtotal = layout(rcount, rdispl);
        for (int i = 0; i < rtotal; i++) rb[i] = FILL;
        for (int j = 0; j < size; j++)
            for (int i = 0; i < rcount[j]; i++) rb[rdispl[j] + i] = val(rank, j, i);
        CHECK_OK(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, rb, rcount, rdispl,
                               MPI_INT, MPI_COMM_WORLD));
        check_layout("alltoallv", n, 1, rb, rtotal, rcount, rdispl);
    }
    free(scount);
    free(sdispl);
    free(rcount);
    free(rdispl);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int len = size * (MAXC + size + 8) + 2;
    int *sb = malloc(len * sizeof(int)), *rb = malloc(len * sizeof(int));
    test_allgather(sb, rb);
    test_alltoall(sb, rb);
    test_alltoallv(sb, rb);
    free(sb);
    free(rb);
    return ct_finish();
}
