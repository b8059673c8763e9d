/* ranks: 2 3 */
/* Truncation under MPI_ERRORS_RETURN: a message longer than the receive
 * buffer makes the receive return an error of class MPI_ERR_TRUNCATE
 * (blocking Recv, Irecv + Wait, small and 70000-int messages, and Waitall,
 * which returns MPI_ERR_IN_STATUS with MPI_ERR_TRUNCATE in that status),
 * nothing past the receive buffer is written, the truncated message is
 * consumed, and the program keeps communicating normally afterwards. */
#include "common.h"

/* MPICH defines MPI_STATUSES_IGNORE as (MPI_Status *)1, which GCC's
 * -Wstringop-overflow flags; passing it is legal MPI. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#define BIG 70000

static void check_trunc(int rc, const char *what)
{
    int cls = -1;
    CHECK(rc != MPI_SUCCESS, "%s: truncated receive returned MPI_SUCCESS", what);
    if (rc == MPI_SUCCESS) return;
    CHECK_OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_TRUNCATE, "%s: error class %d, want MPI_ERR_TRUNCATE (%d)",
          what, cls, MPI_ERR_TRUNCATE);
}

static void check_guard(const int *buf, int from, int to, const char *what)
{
    for (int i = from; i < to; i++)
        if (buf[i] != -7) {
            CHECK(buf[i] == -7, "%s: buf[%d] = %d past the receive count was written",
                  what, i, buf[i]);
            return;
        }
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    int *sbuf = malloc(BIG * sizeof(int));
    int *rbuf = malloc((BIG + 16) * sizeof(int));
    if (!sbuf || !rbuf) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int i = 0; i < BIG; i++) sbuf[i] = 3 * i + 1;

    if (rank == 0) {
        MPI_Request req[2];
        /* Nonblocking sends: whether the sender sees anything of the
         * receiver's truncation is not specified, so only the receiver's
         * results are checked. */
        MPI_Isend(sbuf, 10, MPI_INT, 1, 1, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(sbuf, 5, MPI_INT, 1, 2, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        MPI_Isend(sbuf, 100, MPI_INT, 1, 3, MPI_COMM_WORLD, &req[0]);
        MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        MPI_Isend(sbuf, BIG, MPI_INT, 1, 4, MPI_COMM_WORLD, &req[0]);
        MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        MPI_Isend(sbuf, BIG, MPI_INT, 1, 5, MPI_COMM_WORLD, &req[0]);
        MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        MPI_Isend(sbuf, 4, MPI_INT, 1, 6, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(sbuf, 40, MPI_INT, 1, 7, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        /* Normal traffic afterwards, both directions. */
        CHECK_OK(MPI_Send(sbuf, BIG, MPI_INT, 1, 8, MPI_COMM_WORLD));
        for (int i = 0; i < BIG; i++) rbuf[i] = -1;
        CHECK_OK(MPI_Recv(rbuf, BIG, MPI_INT, 1, 9, MPI_COMM_WORLD, &st));
        int bad = 0;
        for (int i = 0; i < BIG; i++) if (rbuf[i] != 5 * i) bad++;
        CHECK(bad == 0, "reply after truncations: %d bad values", bad);
    } else if (rank == 1) {
        int rc;
        /* Blocking receive of 10 ints into 5. */
        for (int i = 0; i < BIG + 16; i++) rbuf[i] = -7;
        rc = MPI_Recv(rbuf, 5, MPI_INT, 0, 1, MPI_COMM_WORLD, &st);
        check_trunc(rc, "Recv 10 into 5");
        check_guard(rbuf, 5, 16, "Recv 10 into 5");

        /* The truncated message is gone: the next receive gets tag 2. */
        for (int i = 0; i < 16; i++) rbuf[i] = -7;
        CHECK_OK(MPI_Recv(rbuf, 5, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_TAG == 2, "after truncation got tag %d want 2", st.MPI_TAG);
        for (int i = 0; i < 5; i++)
            CHECK(rbuf[i] == 3 * i + 1, "tag 2 data[%d] = %d", i, rbuf[i]);

        /* Irecv + Wait: 100 ints into 50. */
        MPI_Request req;
        for (int i = 0; i < BIG + 16; i++) rbuf[i] = -7;
        CHECK_OK(MPI_Irecv(rbuf, 50, MPI_INT, 0, 3, MPI_COMM_WORLD, &req));
        rc = MPI_Wait(&req, &st);
        check_trunc(rc, "Irecv+Wait 100 into 50");
        check_guard(rbuf, 50, 200, "Irecv+Wait 100 into 50");

        /* Large message: BIG ints into 1000 (blocking) and into BIG-1
         * (nonblocking). */
        for (int i = 0; i < BIG + 16; i++) rbuf[i] = -7;
        rc = MPI_Recv(rbuf, 1000, MPI_INT, 0, 4, MPI_COMM_WORLD, &st);
        check_trunc(rc, "Recv BIG into 1000");
        check_guard(rbuf, 1000, BIG + 16, "Recv BIG into 1000");
        for (int i = 0; i < BIG + 16; i++) rbuf[i] = -7;
        CHECK_OK(MPI_Irecv(rbuf, BIG - 1, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &req));
        rc = MPI_Wait(&req, &st);
        check_trunc(rc, "Irecv+Wait BIG into BIG-1");
        check_guard(rbuf, BIG - 1, BIG + 16, "Irecv+Wait BIG into BIG-1");

        /* Waitall over one fitting and one truncated receive. */
        int a[8], b[40];
        MPI_Request reqs[2];
        MPI_Status sts[2];
        for (int i = 0; i < 8; i++) a[i] = -7;
        for (int i = 0; i < 40; i++) b[i] = -7;
        CHECK_OK(MPI_Irecv(a, 8, MPI_INT, 0, 6, MPI_COMM_WORLD, &reqs[0]));
        CHECK_OK(MPI_Irecv(b, 20, MPI_INT, 0, 7, MPI_COMM_WORLD, &reqs[1]));
        rc = MPI_Waitall(2, reqs, sts);
        int cls = -1;
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_IN_STATUS, "Waitall with a truncation: class %d, "
              "want MPI_ERR_IN_STATUS (%d)", cls, MPI_ERR_IN_STATUS);
        if (cls == MPI_ERR_IN_STATUS) {
            int c0 = -1, c1 = -1;
            MPI_Error_class(sts[0].MPI_ERROR, &c0);
            MPI_Error_class(sts[1].MPI_ERROR, &c1);
            CHECK(sts[0].MPI_ERROR == MPI_SUCCESS, "status[0].MPI_ERROR %d (class %d)",
                  sts[0].MPI_ERROR, c0);
            CHECK(c1 == MPI_ERR_TRUNCATE, "status[1].MPI_ERROR class %d", c1);
        }
        int cnt = -1;
        CHECK_OK(MPI_Get_count(&sts[0], MPI_INT, &cnt));
        CHECK(cnt == 4, "Waitall fitting receive count %d", cnt);
        for (int i = 0; i < 8; i++)
            CHECK(a[i] == (i < 4 ? 3 * i + 1 : -7), "Waitall a[%d] = %d", i, a[i]);
        check_guard(b, 20, 40, "Waitall 40 into 20");

        /* Normal traffic continues. */
        for (int i = 0; i < BIG; i++) rbuf[i] = -1;
        CHECK_OK(MPI_Recv(rbuf, BIG, MPI_INT, 0, 8, MPI_COMM_WORLD, &st));
        int bad = 0;
        for (int i = 0; i < BIG; i++) if (rbuf[i] != 3 * i + 1) bad++;
        CHECK(bad == 0, "message after truncations: %d bad values", bad);
        for (int i = 0; i < BIG; i++) sbuf[i] = 5 * i;
        CHECK_OK(MPI_Send(sbuf, BIG, MPI_INT, 0, 9, MPI_COMM_WORLD));
    }

    free(sbuf);
    free(rbuf);
    return ct_finish();
}
