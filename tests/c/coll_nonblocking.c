/* ranks: 2 3 4 */
/* Every nonblocking collective, one at a time: MPI_Ibarrier, MPI_Ibcast,
 * MPI_Ireduce, MPI_Iallreduce, MPI_Igather(v), MPI_Iscatter(v),
 * MPI_Iallgather(v), MPI_Ialltoall(v), MPI_Ireduce_scatter(_block),
 * MPI_Iscan and MPI_Iexscan, with every root, counts 0, 1 and 1000 and
 * MPI_IN_PLACE wherever MPI allows it; completion alternates between
 * MPI_Wait and an MPI_Test loop, and the request must come back as
 * MPI_REQUEST_NULL. */
#include "common.h"

#define MAXC 1000
#define FILL (-1)
#define GUARD (-424242)
static const int counts[] = {0, 1, MAXC};
#define NCOUNTS 3

static int rank, size;
static int *sb, *rb;
static int ncomplete = 0;

static int val(int a, int b, int i) { return (a * 8 + b) * 2000 + i; }
static int sval(int r, int i) { return (r * 13 + i * 7) % 61 - 30; }

static int sum_upto(int nranks, int i)
{
    int e = 0;
    for (int r = 0; r < nranks; r++) e += sval(r, i);
    return e;
}

static int vcnt(int r, int n)
{
    if (n == 0 || r % 3 == 1) return 0;
    return n + r;
}

static int layout(const int *cnt, int *displs)
{
    int off = 1;
    for (int r = size - 1; r >= 0; r--) {
        displs[r] = off;
        off += cnt[r] + 2;
    }
    return off;
}

/* completes req, alternately with MPI_Wait and with an MPI_Test loop */
static void complete(MPI_Request *req, const char *what)
{
    if (ncomplete++ % 2 == 0) {
        CHECK_OK(MPI_Wait(req, MPI_STATUS_IGNORE));
    } else {
        int flag = 0;
        while (!flag) CHECK_OK(MPI_Test(req, &flag, MPI_STATUS_IGNORE));
    }
    CHECK(*req == MPI_REQUEST_NULL, "%s: request not MPI_REQUEST_NULL after completion", what);
}

static void test_ibarrier(void)
{
    for (int it = 0; it < 2; it++) {
        int tag = 200 + it;
        if (rank != 0) {
            int flag = 0;
            double t0 = MPI_Wtime();
            while (MPI_Wtime() - t0 < 0.002) {
                CHECK_OK(MPI_Iprobe(0, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
                if (flag) break;
            }
            CHECK(!flag, "ibarrier %d: message sent after it seen before entering", it);
        }
        MPI_Request req;
        CHECK_OK(MPI_Ibarrier(MPI_COMM_WORLD, &req));
        complete(&req, "ibarrier");
        if (rank == 0) {
            for (int r = 1; r < size; r++) CHECK_OK(MPI_Send(&r, 1, MPI_INT, r, tag, MPI_COMM_WORLD));
        } else {
            int v = -1;
            CHECK_OK(MPI_Recv(&v, 1, MPI_INT, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(v == rank, "ibarrier message %d", v);
        }
    }
}

static void test_rooted(void)
{
    int *cnt = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    MPI_Request req;
    for (int root = 0; root < size; root++) {
        for (int c = 0; c < NCOUNTS; c++) {
            int n = counts[c];
            /* ibcast */
            for (int i = 0; i < n; i++) rb[i] = rank == root ? val(root, 0, i) : FILL;
            rb[n] = GUARD;
            CHECK_OK(MPI_Ibcast(rb, n, MPI_INT, root, MPI_COMM_WORLD, &req));
            complete(&req, "ibcast");
            for (int i = 0; i < n; i++)
                CHECK(rb[i] == val(root, 0, i), "ibcast root %d n %d: [%d]=%d", root, n, i, rb[i]);
            CHECK(rb[n] == GUARD, "ibcast root %d n %d: guard", root, n);

            /* ireduce, plain and in place at the root */
            for (int inplace = 0; inplace < 2; inplace++) {
                for (int i = 0; i < n; i++) {
                    sb[i] = sval(rank, i);
                    rb[i] = (inplace && rank == root) ? sval(rank, i) : FILL;
                }
                rb[n] = GUARD;
                if (inplace && rank == root)
                    CHECK_OK(MPI_Ireduce(MPI_IN_PLACE, rb, n, MPI_INT, MPI_SUM, root,
                                         MPI_COMM_WORLD, &req));
                else
                    CHECK_OK(MPI_Ireduce(sb, rank == root ? rb : NULL, n, MPI_INT, MPI_SUM, root,
                                         MPI_COMM_WORLD, &req));
                complete(&req, "ireduce");
                if (rank == root) {
                    for (int i = 0; i < n; i++)
                        CHECK(rb[i] == sum_upto(size, i), "ireduce root %d n %d inplace %d: [%d]=%d",
                              root, n, inplace, i, rb[i]);
                    CHECK(rb[n] == GUARD, "ireduce root %d n %d: guard", root, n);
                }
            }

            /* igather */
            for (int inplace = 0; inplace < 2; inplace++) {
                for (int i = 0; i < n; i++) sb[i] = val(root, rank, i);
                for (int i = 0; i < size * n; i++) rb[i] = FILL;
                rb[size * n] = GUARD;
                if (rank == root && inplace) {
                    for (int i = 0; i < n; i++) rb[root * n + i] = val(root, root, i);
                    CHECK_OK(MPI_Igather(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, rb, n, MPI_INT, root,
                                         MPI_COMM_WORLD, &req));
                } else {
                    CHECK_OK(MPI_Igather(sb, n, MPI_INT, rb, n, MPI_INT, root, MPI_COMM_WORLD, &req));
                }
                complete(&req, "igather");
                if (rank == root) {
                    for (int r = 0; r < size; r++)
                        for (int i = 0; i < n; i++)
                            CHECK(rb[r * n + i] == val(root, r, i),
                                  "igather root %d n %d inplace %d: [%d][%d]=%d", root, n, inplace,
                                  r, i, rb[r * n + i]);
                    CHECK(rb[size * n] == GUARD, "igather guard");
                }
            }

            /* igatherv */
            for (int r = 0; r < size; r++) cnt[r] = vcnt(r, n);
            int total = layout(cnt, displs);
            for (int inplace = 0; inplace < 2; inplace++) {
                for (int i = 0; i < cnt[rank]; i++) sb[i] = val(root, rank, i);
                for (int i = 0; i < total; i++) rb[i] = FILL;
                if (rank == root && inplace) {
                    for (int i = 0; i < cnt[root]; i++) rb[displs[root] + i] = val(root, root, i);
                    CHECK_OK(MPI_Igatherv(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, rb, cnt, displs,
                                          MPI_INT, root, MPI_COMM_WORLD, &req));
                } else {
                    CHECK_OK(MPI_Igatherv(sb, cnt[rank], MPI_INT, rb, cnt, displs, MPI_INT, root,
                                          MPI_COMM_WORLD, &req));
                }
                complete(&req, "igatherv");
                if (rank != root) continue;
                for (int i = 0; i < total; i++) {
                    int e = FILL;
                    for (int r = 0; r < size; r++)
                        if (i >= displs[r] && i < displs[r] + cnt[r]) e = val(root, r, i - displs[r]);
                    CHECK(rb[i] == e, "igatherv root %d n %d inplace %d: [%d]=%d expected %d", root,
                          n, inplace, i, rb[i], e);
                }
            }

            /* iscatter */
            for (int inplace = 0; inplace < 2; inplace++) {
                for (int r = 0; r < size; r++)
                    for (int i = 0; i < n; i++) sb[r * n + i] = val(root, r, i);
                for (int i = 0; i < n; i++) rb[i] = FILL;
                rb[n] = GUARD;
                if (rank == root && inplace)
                    CHECK_OK(MPI_Iscatter(sb, n, MPI_INT, MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, root,
                                          MPI_COMM_WORLD, &req));
                else
                    CHECK_OK(MPI_Iscatter(sb, n, MPI_INT, rb, n, MPI_INT, root, MPI_COMM_WORLD, &req));
                complete(&req, "iscatter");
                if (rank == root && inplace) {
                    for (int i = 0; i < n; i++)
                        CHECK(rb[i] == FILL && sb[root * n + i] == val(root, root, i),
                              "iscatter in place root %d n %d: [%d]", root, n, i);
                } else {
                    for (int i = 0; i < n; i++)
                        CHECK(rb[i] == val(root, rank, i), "iscatter root %d n %d: [%d]=%d", root, n,
                              i, rb[i]);
                }
                CHECK(rb[n] == GUARD, "iscatter guard");
            }

            /* iscatterv */
            for (int inplace = 0; inplace < 2; inplace++) {
                for (int i = 0; i < total; i++) sb[i] = GUARD;
                for (int r = 0; r < size; r++)
                    for (int i = 0; i < cnt[r]; i++) sb[displs[r] + i] = val(root, r, i);
                for (int i = 0; i < cnt[rank]; i++) rb[i] = FILL;
                rb[cnt[rank]] = GUARD;
                if (rank == root && inplace)
                    CHECK_OK(MPI_Iscatterv(sb, cnt, displs, MPI_INT, MPI_IN_PLACE, -1,
                                           MPI_DATATYPE_NULL, root, MPI_COMM_WORLD, &req));
                else
                    CHECK_OK(MPI_Iscatterv(sb, cnt, displs, MPI_INT, rb, cnt[rank], MPI_INT, root,
                                           MPI_COMM_WORLD, &req));
                complete(&req, "iscatterv");
                if (!(rank == root && inplace))
                    for (int i = 0; i < cnt[rank]; i++)
                        CHECK(rb[i] == val(root, rank, i), "iscatterv root %d n %d: [%d]=%d", root,
                              n, i, rb[i]);
                CHECK(rb[cnt[rank]] == GUARD, "iscatterv guard");
            }
        }
    }
    free(cnt);
    free(displs);
}

static void test_unrooted(void)
{
    int *cnt = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    int *cnt2 = malloc(size * sizeof(int)), *displs2 = malloc(size * sizeof(int));
    MPI_Request req;
    for (int c = 0; c < NCOUNTS; c++) {
        int n = counts[c];
        for (int inplace = 0; inplace < 2; inplace++) {
            /* iallreduce */
            for (int i = 0; i < n; i++) {
                sb[i] = sval(rank, i);
                rb[i] = inplace ? sval(rank, i) : FILL;
            }
            rb[n] = GUARD;
            CHECK_OK(MPI_Iallreduce(inplace ? MPI_IN_PLACE : sb, rb, n, MPI_INT, MPI_SUM,
                                    MPI_COMM_WORLD, &req));
            complete(&req, "iallreduce");
            for (int i = 0; i < n; i++)
                CHECK(rb[i] == sum_upto(size, i), "iallreduce n %d inplace %d: [%d]=%d", n, inplace,
                      i, rb[i]);
            CHECK(rb[n] == GUARD, "iallreduce guard");

            /* iscan */
            for (int i = 0; i < n; i++) rb[i] = inplace ? sval(rank, i) : FILL;
            CHECK_OK(MPI_Iscan(inplace ? MPI_IN_PLACE : sb, rb, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                               &req));
            complete(&req, "iscan");
            for (int i = 0; i < n; i++)
                CHECK(rb[i] == sum_upto(rank + 1, i), "iscan n %d inplace %d: [%d]=%d", n, inplace,
                      i, rb[i]);
            CHECK(rb[n] == GUARD, "iscan guard");

            /* iexscan (rank 0's result undefined) */
            for (int i = 0; i < n; i++) rb[i] = inplace ? sval(rank, i) : FILL;
            CHECK_OK(MPI_Iexscan(inplace ? MPI_IN_PLACE : sb, rb, n, MPI_INT, MPI_SUM,
                                 MPI_COMM_WORLD, &req));
            complete(&req, "iexscan");
            if (rank > 0)
                for (int i = 0; i < n; i++)
                    CHECK(rb[i] == sum_upto(rank, i), "iexscan n %d inplace %d: [%d]=%d", n,
                          inplace, i, rb[i]);
            CHECK(rb[n] == GUARD, "iexscan guard");

            /* ireduce_scatter_block */
            for (int i = 0; i < size * n; i++) {
                sb[i] = sval(rank, i);
                rb[i] = inplace ? sval(rank, i) : FILL;
            }
            if (!inplace) rb[n] = GUARD;
            CHECK_OK(MPI_Ireduce_scatter_block(inplace ? MPI_IN_PLACE : sb, rb, n, MPI_INT, MPI_SUM,
                                               MPI_COMM_WORLD, &req));
            complete(&req, "ireduce_scatter_block");
            for (int i = 0; i < n; i++)
                CHECK(rb[i] == sum_upto(size, rank * n + i),
                      "ireduce_scatter_block n %d inplace %d: [%d]=%d", n, inplace, i, rb[i]);
            if (!inplace) CHECK(rb[n] == GUARD, "ireduce_scatter_block guard");

            /* ireduce_scatter */
            int total = 0, off = 0;
            for (int r = 0; r < size; r++) {
                cnt[r] = vcnt(r, n);
                if (r < rank) off += cnt[r];
                total += cnt[r];
            }
            for (int i = 0; i < total; i++) {
                sb[i] = sval(rank, i);
                rb[i] = inplace ? sval(rank, i) : FILL;
            }
            if (!inplace) rb[cnt[rank]] = GUARD;
            CHECK_OK(MPI_Ireduce_scatter(inplace ? MPI_IN_PLACE : sb, rb, cnt, MPI_INT, MPI_SUM,
                                         MPI_COMM_WORLD, &req));
            complete(&req, "ireduce_scatter");
            for (int i = 0; i < cnt[rank]; i++)
                CHECK(rb[i] == sum_upto(size, off + i), "ireduce_scatter n %d inplace %d: [%d]=%d",
                      n, inplace, i, rb[i]);
            if (!inplace) CHECK(rb[cnt[rank]] == GUARD, "ireduce_scatter guard");

            /* iallgather */
            for (int i = 0; i < n; i++) sb[i] = val(rank, 0, i);
            for (int i = 0; i < size * n; i++) rb[i] = FILL;
            for (int i = 0; inplace && i < n; i++) rb[rank * n + i] = val(rank, 0, i);
            rb[size * n] = GUARD;
            if (inplace)
                CHECK_OK(MPI_Iallgather(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, rb, n, MPI_INT,
                                        MPI_COMM_WORLD, &req));
            else
                CHECK_OK(MPI_Iallgather(sb, n, MPI_INT, rb, n, MPI_INT, MPI_COMM_WORLD, &req));
            complete(&req, "iallgather");
            for (int r = 0; r < size; r++)
                for (int i = 0; i < n; i++)
                    CHECK(rb[r * n + i] == val(r, 0, i), "iallgather n %d inplace %d: [%d][%d]=%d",
                          n, inplace, r, i, rb[r * n + i]);
            CHECK(rb[size * n] == GUARD, "iallgather guard");

            /* iallgatherv */
            total = layout(cnt, displs);
            for (int i = 0; i < cnt[rank]; i++) sb[i] = val(rank, 1, i);
            for (int i = 0; i < total; i++) rb[i] = FILL;
            for (int i = 0; inplace && i < cnt[rank]; i++) rb[displs[rank] + i] = val(rank, 1, i);
            if (inplace)
                CHECK_OK(MPI_Iallgatherv(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, rb, cnt, displs,
                                         MPI_INT, MPI_COMM_WORLD, &req));
            else
                CHECK_OK(MPI_Iallgatherv(sb, cnt[rank], MPI_INT, rb, cnt, displs, MPI_INT,
                                         MPI_COMM_WORLD, &req));
            complete(&req, "iallgatherv");
            for (int i = 0; i < total; i++) {
                int e = FILL;
                for (int r = 0; r < size; r++)
                    if (i >= displs[r] && i < displs[r] + cnt[r]) e = val(r, 1, i - displs[r]);
                CHECK(rb[i] == e, "iallgatherv n %d inplace %d: [%d]=%d expected %d", n, inplace, i,
                      rb[i], e);
            }

            /* ialltoall */
            for (int j = 0; j < size; j++)
                for (int i = 0; i < n; i++) {
                    sb[j * n + i] = val(rank, j, i);
                    rb[j * n + i] = inplace ? val(rank, j, i) : FILL;
                }
            rb[size * n] = GUARD;
            if (inplace)
                CHECK_OK(MPI_Ialltoall(MPI_IN_PLACE, -1, MPI_DATATYPE_NULL, rb, n, MPI_INT,
                                       MPI_COMM_WORLD, &req));
            else
                CHECK_OK(MPI_Ialltoall(sb, n, MPI_INT, rb, n, MPI_INT, MPI_COMM_WORLD, &req));
            complete(&req, "ialltoall");
            for (int j = 0; j < size; j++)
                for (int i = 0; i < n; i++)
                    CHECK(rb[j * n + i] == val(j, rank, i), "ialltoall n %d inplace %d: [%d][%d]=%d",
                          n, inplace, j, i, rb[j * n + i]);
            CHECK(rb[size * n] == GUARD, "ialltoall guard");

            /* ialltoallv: asymmetric counts plain, symmetric ones in place */
            for (int j = 0; j < size; j++) {
                int a = inplace ? (rank + j) % 3 : (2 * rank + j) % 4;
                int b = inplace ? (rank + j) % 3 : (2 * j + rank) % 4;
                cnt[j] = (n == 0 || a == 2) ? 0 : n + a;  /* send counts */
                cnt2[j] = (n == 0 || b == 2) ? 0 : n + b; /* receive counts */
            }
            int stotal = layout(cnt, displs);
            int rtotal = layout(cnt2, displs2);
            for (int i = 0; i < stotal; i++) sb[i] = GUARD;
            for (int i = 0; i < rtotal; i++) rb[i] = FILL;
            for (int j = 0; j < size; j++)
                for (int i = 0; i < cnt[j]; i++) {
                    sb[displs[j] + i] = val(rank, j, i);
                    if (inplace) rb[displs2[j] + i] = val(rank, j, i);
                }
            if (inplace)
                CHECK_OK(MPI_Ialltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, rb, cnt2,
                                        displs2, MPI_INT, MPI_COMM_WORLD, &req));
            else
                CHECK_OK(MPI_Ialltoallv(sb, cnt, displs, MPI_INT, rb, cnt2, displs2, MPI_INT,
                                        MPI_COMM_WORLD, &req));
            complete(&req, "ialltoallv");
            for (int i = 0; i < rtotal; i++) {
                int e = FILL;
                for (int r = 0; r < size; r++)
                    if (i >= displs2[r] && i < displs2[r] + cnt2[r]) e = val(r, rank, i - displs2[r]);
                CHECK(rb[i] == e, "ialltoallv n %d inplace %d: [%d]=%d expected %d", n, inplace, i,
                      rb[i], e);
            }
        }
    }
    free(cnt);
    free(displs);
    free(cnt2);
    free(displs2);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int len = size * (MAXC + size + 8) + 2;
    sb = malloc(len * sizeof(int));
    rb = malloc(len * sizeof(int));
    test_ibarrier();
    test_rooted();
    test_unrooted();
    free(sb);
    free(rb);
    return ct_finish();
}
