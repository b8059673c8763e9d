/* ranks: 2 4 */
/* Persistent requests around a ring: MPI_Send_init, MPI_Ssend_init,
 * MPI_Bsend_init (buffer from MPI_Pack_size + MPI_BSEND_OVERHEAD),
 * MPI_Rsend_init (started only after a barrier that follows the start of
 * the matching receive) and MPI_Recv_init, restarted over 25 iterations with
 * MPI_Start and MPI_Startall with fresh data each time (sizes 0 to 80000
 * bytes). Wait/Test on an inactive persistent request return at once with
 * an empty status; MPI_Request_free on inactive persistent requests sets
 * them to MPI_REQUEST_NULL. */
#include "common.h"

/* MPICH defines MPI_STATUSES_IGNORE as (MPI_Status *)1, which GCC's
 * -Wstringop-overflow flags; passing it is legal MPI. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#define NITER 25
#define NKIND 5 /* send, ssend, bsend, rsend, zero-byte send */

static const int counts[NKIND] = {1000, 17, 20000, 5, 0};

static int val(int src, int it, int kind, int i) { return src * 100000 + it * 1000 + kind * 100 + i % 97; }

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    int *sbuf[NKIND], *rbuf[NKIND];
    for (int k = 0; k < NKIND; k++) {
        sbuf[k] = malloc(((size_t)counts[k] + 1) * sizeof(int));
        rbuf[k] = malloc(((size_t)counts[k] + 1) * sizeof(int));
        if (!sbuf[k] || !rbuf[k]) MPI_Abort(MPI_COMM_WORLD, 2);
    }

    int ps = 0;
    CHECK_OK(MPI_Pack_size(counts[2], MPI_INT, MPI_COMM_WORLD, &ps));
    int bsize = 2 * (ps + MPI_BSEND_OVERHEAD);
    char *bbuf = malloc((size_t)bsize);
    CHECK_OK(MPI_Buffer_attach(bbuf, bsize));

    MPI_Request rreq[NKIND], sreq[NKIND];
    for (int k = 0; k < NKIND; k++)
        CHECK_OK(MPI_Recv_init(rbuf[k], counts[k] + 1, MPI_INT, left, k, MPI_COMM_WORLD, &rreq[k]));
    CHECK_OK(MPI_Send_init(sbuf[0], counts[0], MPI_INT, right, 0, MPI_COMM_WORLD, &sreq[0]));
    CHECK_OK(MPI_Ssend_init(sbuf[1], counts[1], MPI_INT, right, 1, MPI_COMM_WORLD, &sreq[1]));
    CHECK_OK(MPI_Bsend_init(sbuf[2], counts[2], MPI_INT, right, 2, MPI_COMM_WORLD, &sreq[2]));
    CHECK_OK(MPI_Rsend_init(sbuf[3], counts[3], MPI_INT, right, 3, MPI_COMM_WORLD, &sreq[3]));
    CHECK_OK(MPI_Send_init(sbuf[4], counts[4], MPI_INT, right, 4, MPI_COMM_WORLD, &sreq[4]));

    /* Never-started persistent requests are inactive: Wait and Test return
     * at once with an empty status and leave the request allocated. */
    {
        MPI_Status st;
        int flag = 0, c = -1;
        st.MPI_SOURCE = 12345;
        st.MPI_TAG = 12345;
        CHECK_OK(MPI_Wait(&rreq[0], &st));
        CHECK(rreq[0] != MPI_REQUEST_NULL, "Wait on inactive persistent request freed it");
        CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG,
              "inactive Wait status %d/%d, want empty status", st.MPI_SOURCE, st.MPI_TAG);
        CHECK_OK(MPI_Get_count(&st, MPI_INT, &c));
        CHECK(c == 0, "inactive Wait count %d", c);
        CHECK_OK(MPI_Test(&sreq[1], &flag, &st));
        CHECK(flag, "Test on inactive persistent request gave flag false");
        CHECK(sreq[1] != MPI_REQUEST_NULL, "Test on inactive persistent request freed it");
    }

    for (int it = 0; it < NITER; it++) {
        for (int k = 0; k < NKIND; k++) {
            for (int i = 0; i < counts[k]; i++) sbuf[k][i] = val(rank, it, k, i);
            for (int i = 0; i <= counts[k]; i++) rbuf[k][i] = -1;
        }
        /* Start the receives (alternating between Startall and Start). */
        if (it % 2 == 0) {
            CHECK_OK(MPI_Startall(NKIND, rreq));
        } else {
            for (int k = NKIND - 1; k >= 0; k--) CHECK_OK(MPI_Start(&rreq[k]));
        }
        /* After this barrier every rank's receives are posted, so the
         * ready-mode send is valid. It also makes sure last iteration's
         * buffered message was received, so the buffer has room. */
        MPI_Barrier(MPI_COMM_WORLD);
        if (it % 3 == 0) {
            CHECK_OK(MPI_Startall(NKIND, sreq));
        } else {
            for (int k = 0; k < NKIND; k++) CHECK_OK(MPI_Start(&sreq[k]));
        }
        /* Sends completed before receives on even iterations, after them
         * on odd ones: both are safe, every receive is already started. */
        MPI_Status sts[NKIND];
        if (it % 2 == 0) {
            CHECK_OK(MPI_Waitall(NKIND, sreq, MPI_STATUSES_IGNORE));
            CHECK_OK(MPI_Waitall(NKIND, rreq, sts));
        } else {
            CHECK_OK(MPI_Waitall(NKIND, rreq, sts));
            for (int k = 0; k < NKIND; k++) {
                int flag = 0;
                while (!flag) CHECK_OK(MPI_Test(&sreq[k], &flag, MPI_STATUS_IGNORE));
            }
        }
        for (int k = 0; k < NKIND; k++) {
            CHECK(rreq[k] != MPI_REQUEST_NULL && sreq[k] != MPI_REQUEST_NULL,
                  "iteration %d: persistent request %d freed on completion", it, k);
            int c = -1, bad = 0;
            CHECK_OK(MPI_Get_count(&sts[k], MPI_INT, &c));
            CHECK(c == counts[k], "iteration %d kind %d: count %d want %d", it, k, c, counts[k]);
            CHECK(sts[k].MPI_SOURCE == left && sts[k].MPI_TAG == k,
                  "iteration %d kind %d: status %d/%d want %d/%d", it, k,
                  sts[k].MPI_SOURCE, sts[k].MPI_TAG, left, k);
            for (int i = 0; i < counts[k]; i++)
                if (rbuf[k][i] != val(left, it, k, i)) bad++;
            CHECK(bad == 0, "iteration %d kind %d: %d bad values", it, k, bad);
            CHECK(rbuf[k][counts[k]] == -1, "iteration %d kind %d: wrote past the message",
                  it, k);
        }
    }

    /* All requests are inactive now; freeing them is valid. */
    for (int k = 0; k < NKIND; k++) {
        CHECK_OK(MPI_Request_free(&rreq[k]));
        CHECK_OK(MPI_Request_free(&sreq[k]));
        CHECK(rreq[k] == MPI_REQUEST_NULL && sreq[k] == MPI_REQUEST_NULL,
              "MPI_Request_free did not set MPI_REQUEST_NULL (kind %d)", k);
    }

    void *got = NULL;
    int gotsize = 0;
    CHECK_OK(MPI_Buffer_detach(&got, &gotsize));
    CHECK(got == (void *)bbuf && gotsize == bsize, "Buffer_detach gave %p/%d want %p/%d",
          got, gotsize, (void *)bbuf, bsize);
    free(bbuf);
    for (int k = 0; k < NKIND; k++) {
        free(sbuf[k]);
        free(rbuf[k]);
    }
    return ct_finish();
}
