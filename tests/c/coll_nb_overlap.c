/* ranks: 2 3 8 */
/* Several nonblocking collectives outstanding at once: a mix of eleven
 * collectives and point-to-point requests on one communicator completed by
 * one MPI_Waitall; four MPI_Iallreduce and several MPI_Ibcast in flight
 * together completed with MPI_Testall and MPI_Waitsome; collectives started
 * in different orders on two communicators; a blocking collective on one
 * communicator while a nonblocking one is pending on another; MPI_Ibarrier
 * overlapping MPI_Sendrecv; and the Ibarrier-terminated sparse exchange
 * (Issend, Iprobe/Recv until the barrier completes). */
#include "common.h"

#define N 1000
static int rank, size;

static int sval(int r, int i) { return (r * 13 + i * 7) % 61 - 30; }

static void test_mixed_waitall(void)
{
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    int *p2p_s = malloc(N * sizeof(int)), *p2p_r = malloc(N * sizeof(int));
    int *bc = malloc(N * sizeof(int)), *ars = malloc(N * sizeof(int)), *arr = malloc(N * sizeof(int));
    int *a2as = malloc(3 * size * sizeof(int)), *a2ar = malloc(3 * size * sizeof(int));
    int gs[5], *gr = malloc(5 * size * sizeof(int));
    int scs[10], scr[10], exr[10];
    int *rss = malloc(4 * size * sizeof(int)), rsr[4];
    int agvs[2], *agvr = malloc(2 * size * sizeof(int)), *agvc = malloc(size * sizeof(int)),
        *agvd = malloc(size * sizeof(int));
    MPI_Request req[11];
    MPI_Status st[11];

    for (int i = 0; i < N; i++) {
        p2p_s[i] = rank * N + i;
        p2p_r[i] = -1;
        bc[i] = rank == 0 ? 5 * i + 1 : -1;
        ars[i] = sval(rank, i);
        arr[i] = -1;
    }
    for (int i = 0; i < 3 * size; i++) {
        a2as[i] = rank * 1000 + i;
        a2ar[i] = -1;
    }
    for (int i = 0; i < 5; i++) gs[i] = rank * 10 + i;
    for (int i = 0; i < 10; i++) {
        scs[i] = sval(rank, i);
        scr[i] = exr[i] = -1;
    }
    for (int i = 0; i < 4 * size; i++) rss[i] = sval(rank, i);
    for (int r = 0; r < size; r++) {
        agvc[r] = r % 2 + 1;
        agvd[r] = 2 * (size - 1 - r);
        agvr[2 * r] = agvr[2 * r + 1] = -1;
    }
    agvs[0] = rank * 3;
    agvs[1] = rank * 3 + 1;

    CHECK_OK(MPI_Irecv(p2p_r, N, MPI_INT, left, 7, MPI_COMM_WORLD, &req[0]));
    CHECK_OK(MPI_Ibarrier(MPI_COMM_WORLD, &req[1]));
    CHECK_OK(MPI_Ibcast(bc, N, MPI_INT, 0, MPI_COMM_WORLD, &req[2]));
    CHECK_OK(MPI_Isend(p2p_s, N, MPI_INT, right, 7, MPI_COMM_WORLD, &req[3]));
    CHECK_OK(MPI_Iallreduce(ars, arr, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req[4]));
    CHECK_OK(MPI_Ialltoall(a2as, 3, MPI_INT, a2ar, 3, MPI_INT, MPI_COMM_WORLD, &req[5]));
    CHECK_OK(MPI_Igather(gs, 5, MPI_INT, gr, 5, MPI_INT, size - 1, MPI_COMM_WORLD, &req[6]));
    CHECK_OK(MPI_Iscan(scs, scr, 10, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req[7]));
    CHECK_OK(MPI_Iexscan(scs, exr, 10, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &req[8]));
    CHECK_OK(MPI_Ireduce_scatter_block(rss, rsr, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req[9]));
    CHECK_OK(MPI_Iallgatherv(agvs, agvc[rank], MPI_INT, agvr, agvc, agvd, MPI_INT, MPI_COMM_WORLD,
                             &req[10]));
    CHECK_OK(MPI_Waitall(11, req, st));

    for (int k = 0; k < 11; k++) CHECK(req[k] == MPI_REQUEST_NULL, "req[%d] not null", k);
    int cnt = -1;
    MPI_Get_count(&st[0], MPI_INT, &cnt);
    CHECK(st[0].MPI_SOURCE == left && st[0].MPI_TAG == 7 && cnt == N,
          "p2p status source %d tag %d count %d", st[0].MPI_SOURCE, st[0].MPI_TAG, cnt);
    for (int i = 0; i < N; i++) {
        CHECK(p2p_r[i] == left * N + i, "p2p [%d]=%d", i, p2p_r[i]);
        CHECK(bc[i] == 5 * i + 1, "ibcast [%d]=%d", i, bc[i]);
        int e = 0;
        for (int r = 0; r < size; r++) e += sval(r, i);
        CHECK(arr[i] == e, "iallreduce [%d]=%d expected %d", i, arr[i], e);
    }
    for (int j = 0; j < size; j++)
        for (int i = 0; i < 3; i++)
            CHECK(a2ar[3 * j + i] == j * 1000 + 3 * rank + i, "ialltoall [%d][%d]=%d", j, i,
                  a2ar[3 * j + i]);
    if (rank == size - 1)
        for (int r = 0; r < size; r++)
            for (int i = 0; i < 5; i++)
                CHECK(gr[5 * r + i] == r * 10 + i, "igather [%d][%d]=%d", r, i, gr[5 * r + i]);
    for (int i = 0; i < 10; i++) {
        int es = 0, em = sval(0, i);
        for (int r = 0; r <= rank; r++) es += sval(r, i);
        for (int r = 1; r < rank; r++)
            if (sval(r, i) > em) em = sval(r, i);
        CHECK(scr[i] == es, "iscan [%d]=%d expected %d", i, scr[i], es);
        if (rank > 0) CHECK(exr[i] == em, "iexscan max [%d]=%d expected %d", i, exr[i], em);
    }
    for (int i = 0; i < 4; i++) {
        int e = 0;
        for (int r = 0; r < size; r++) e += sval(r, 4 * rank + i);
        CHECK(rsr[i] == e, "ireduce_scatter_block [%d]=%d expected %d", i, rsr[i], e);
    }
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 2; i++) {
            int e = i < agvc[r] ? r * 3 + i : -1; /* an unused slot stays -1 */
            CHECK(agvr[agvd[r] + i] == e, "iallgatherv block %d [%d]=%d expected %d", r, i,
                  agvr[agvd[r] + i], e);
        }
    free(p2p_s); free(p2p_r); free(bc); free(ars); free(arr); free(a2as); free(a2ar);
    free(gr); free(rss); free(agvr); free(agvc); free(agvd);
}

static void test_same_kind(void)
{
    /* four allreduces with different ops in flight, completed by Testall */
    int s[4][8], r[4][8];
    MPI_Op ops[4] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD};
    MPI_Request req[4];
    MPI_Status st4[4];
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 8; i++) {
            s[k][i] = k == 3 ? 1 + (rank + i) % 2 : sval(rank, i + k);
            r[k][i] = -99;
        }
    for (int k = 0; k < 4; k++)
        CHECK_OK(MPI_Iallreduce(s[k], r[k], 8, MPI_INT, ops[k], MPI_COMM_WORLD, &req[k]));
    int flag = 0;
    while (!flag) CHECK_OK(MPI_Testall(4, req, &flag, st4));
    for (int i = 0; i < 8; i++) {
        int e[4] = {0, sval(0, i + 1), sval(0, i + 2), 1};
        for (int q = 0; q < size; q++) {
            e[0] += sval(q, i);
            if (sval(q, i + 1) > e[1]) e[1] = sval(q, i + 1);
            if (sval(q, i + 2) < e[2]) e[2] = sval(q, i + 2);
            e[3] *= 1 + (q + i) % 2;
        }
        for (int k = 0; k < 4; k++)
            CHECK(r[k][i] == e[k], "concurrent iallreduce op %d [%d]=%d expected %d", k, i, r[k][i],
                  e[k]);
    }

    /* one ibcast per root, all in flight, completed by Waitsome */
    int *b = malloc(size * 16 * sizeof(int));
    MPI_Request *breq = malloc(size * sizeof(MPI_Request));
    int *idx = malloc(size * sizeof(int));
    MPI_Status *sts = malloc(size * sizeof(MPI_Status));
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < 16; i++) b[root * 16 + i] = rank == root ? root * 100 + i : -1;
        CHECK_OK(MPI_Ibcast(b + root * 16, 16, MPI_INT, root, MPI_COMM_WORLD, &breq[root]));
    }
    int left = size, rounds = 0;
    while (left > 0 && rounds++ < 1000000) {
        int outcount = -5;
        CHECK_OK(MPI_Waitsome(size, breq, &outcount, idx, sts));
        CHECK(outcount >= 1 && outcount <= left, "waitsome outcount %d with %d left", outcount, left);
        if (outcount == MPI_UNDEFINED || outcount < 1) break;
        left -= outcount;
    }
    CHECK(left == 0, "%d ibcasts never completed", left);
    for (int root = 0; root < size; root++)
        for (int i = 0; i < 16; i++)
            CHECK(b[root * 16 + i] == root * 100 + i, "ibcast root %d [%d]=%d", root, i,
                  b[root * 16 + i]);
    free(b);
    free(breq);
    free(idx);
    free(sts);
}

static void test_two_comms(void)
{
    MPI_Comm ca, cb;
    CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &ca));
    CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &cb));
    int x = rank + 1, sum = -1, bv[4];
    for (int i = 0; i < 4; i++) bv[i] = rank == size - 1 ? 40 + i : -1;
    MPI_Request req[2];
    MPI_Status st2[2];
    /* ordering is only per communicator: odd ranks start them the other way */
    if (rank % 2 == 0) {
        CHECK_OK(MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, ca, &req[0]));
        CHECK_OK(MPI_Ibcast(bv, 4, MPI_INT, size - 1, cb, &req[1]));
    } else {
        CHECK_OK(MPI_Ibcast(bv, 4, MPI_INT, size - 1, cb, &req[1]));
        CHECK_OK(MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, ca, &req[0]));
    }
    CHECK_OK(MPI_Waitall(2, req, st2));
    CHECK(sum == size * (size + 1) / 2, "two comms iallreduce %d", sum);
    for (int i = 0; i < 4; i++) CHECK(bv[i] == 40 + i, "two comms ibcast [%d]=%d", i, bv[i]);

    /* a blocking collective on cb while an ibcast is pending on ca */
    int big[64], y = 0;
    for (int i = 0; i < 64; i++) big[i] = rank == 0 ? 7 * i : -1;
    CHECK_OK(MPI_Ibcast(big, 64, MPI_INT, 0, ca, &req[0]));
    CHECK_OK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_MAX, cb));
    CHECK_OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
    CHECK(y == size, "blocking allreduce during ibcast: %d", y);
    for (int i = 0; i < 64; i++) CHECK(big[i] == 7 * i, "ibcast under allreduce [%d]=%d", i, big[i]);
    CHECK_OK(MPI_Comm_free(&ca));
    CHECK_OK(MPI_Comm_free(&cb));
}

static void test_barrier_overlap(void)
{
    MPI_Comm c;
    CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    int left = (rank + size - 1) % size, right = (rank + 1) % size;

    /* Ibarrier pending across a ring of blocking Sendrecv */
    MPI_Request breq;
    CHECK_OK(MPI_Ibarrier(c, &breq));
    int out = rank * 11, in = -1;
    CHECK_OK(MPI_Sendrecv(&out, 1, MPI_INT, right, 3, &in, 1, MPI_INT, left, 3, c,
                          MPI_STATUS_IGNORE));
    CHECK(in == left * 11, "sendrecv under ibarrier got %d", in);
    CHECK_OK(MPI_Wait(&breq, MPI_STATUS_IGNORE));

    /* sparse exchange terminated by a nonblocking barrier: each rank
     * synchronously sends to rank+1 and rank+2 (mod size), so each receives
     * exactly two messages, from rank-1 and rank-2 */
    int sv[2] = {rank * 100 + 1, rank * 100 + 2};
    int dest[2] = {(rank + 1) % size, (rank + 2) % size};
    MPI_Request sreq[2];
    MPI_Status sst[2];
    for (int k = 0; k < 2; k++) CHECK_OK(MPI_Issend(&sv[k], 1, MPI_INT, dest[k], 9 + k, c, &sreq[k]));
    int got = 0, from[4] = {-1, -1, -1, -1}, vals[4] = {0, 0, 0, 0}, started = 0, done = 0;
    while (!done) {
        int flag = 0;
        MPI_Status st;
        CHECK_OK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c, &flag, &st));
        if (flag) {
            int v = -1;
            CHECK_OK(MPI_Recv(&v, 1, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, c, MPI_STATUS_IGNORE));
            if (got < 4) {
                from[got] = st.MPI_SOURCE * 10 + st.MPI_TAG - 9;
                vals[got] = v;
            }
            got++;
        }
        if (!started) {
            int all = 0;
            CHECK_OK(MPI_Testall(2, sreq, &all, sst));
            if (all) {
                CHECK_OK(MPI_Ibarrier(c, &breq));
                started = 1;
            }
        } else {
            CHECK_OK(MPI_Test(&breq, &done, MPI_STATUS_IGNORE));
        }
    }
    CHECK(got == 2, "sparse exchange got %d messages, expected 2", got);
    int src1 = (rank + size - 1) % size, src2 = (rank + size - 2) % size;
    for (int k = 0; k < got && k < 2; k++) {
        int src = from[k] / 10, which = from[k] % 10;
        CHECK((src == src1 && which == 0) || (src == src2 && which == 1),
              "sparse exchange message %d from %d (send %d)", k, src, which);
        CHECK(vals[k] == src * 100 + 1 + which, "sparse exchange value %d", vals[k]);
    }
    CHECK(got < 2 || from[0] != from[1], "sparse exchange: same message twice");
    CHECK_OK(MPI_Comm_free(&c));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_mixed_waitall();
    test_same_kind();
    test_two_comms();
    test_barrier_overlap();
    return ct_finish();
}
