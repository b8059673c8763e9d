/* ranks: 2 3 */
/* Cases a review of the C layer found wrong, kept as regressions:
 * MPI_Testall over an inactive persistent request and a pending one must
 * leave the persistent one startable; a persistent send keeps its
 * datatype after the handle is freed; MPI_Buffer_detach waits only for
 * buffered sends, not for a freed receive; a truncated MPI_Mrecv returns
 * MPI_ERR_TRUNCATE and fills the status (MPI_ERRORS_RETURN is set on the
 * message's communicator and on WORLD and SELF: implementations differ
 * on which one MPI_Mrecv raises its error on). */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank == 0 ? 1 : 0;
    int active = rank < 2;

    /* 1. Testall with an inactive persistent request. */
    if (active) {
        int x = -1, y = -1, v = 7;
        MPI_Request r[2];
        MPI_Status st[2];
        int flag = 1;
        CHECK_OK(MPI_Recv_init(&x, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, &r[0]));
        CHECK_OK(MPI_Irecv(&y, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, &r[1]));
        CHECK_OK(MPI_Testall(2, r, &flag, st));
        /* Nothing sent on tag 2 yet (the peer waits for our go below). */
        CHECK(flag == 0, "Testall completed a receive nothing was sent to");
        CHECK_OK(MPI_Start(&r[0]));
        CHECK_OK(MPI_Sendrecv(&v, 1, MPI_INT, peer, 3, &v, 1, MPI_INT, peer, 3, MPI_COMM_WORLD,
                              MPI_STATUS_IGNORE));
        int a = rank * 10 + 1, b = rank * 10 + 2;
        CHECK_OK(MPI_Send(&a, 1, MPI_INT, peer, 1, MPI_COMM_WORLD));
        CHECK_OK(MPI_Send(&b, 1, MPI_INT, peer, 2, MPI_COMM_WORLD));
        CHECK_OK(MPI_Waitall(2, r, st));
        CHECK(x == peer * 10 + 1 && y == peer * 10 + 2, "got %d %d", x, y);
        CHECK(r[0] != MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL, "request handles");
        CHECK_OK(MPI_Request_free(&r[0]));
    }

    /* 2. A persistent send keeps its datatype after the handle is freed. */
    if (active) {
        MPI_Datatype v;
        MPI_Type_vector(3, 1, 2, MPI_INT, &v);
        MPI_Type_commit(&v);
        int src[6] = {1, -1, 2, -1, 3, -1}, dst[3] = {0, 0, 0};
        MPI_Request s;
        CHECK_OK(MPI_Send_init(src, 1, v, peer, 4, MPI_COMM_WORLD, &s));
        CHECK_OK(MPI_Type_free(&v));
        MPI_Datatype other;
        MPI_Type_contiguous(7, MPI_DOUBLE, &other); /* may reuse the slot */
        MPI_Type_commit(&other);
        for (int it = 0; it < 3; it++) {
            CHECK_OK(MPI_Start(&s));
            CHECK_OK(MPI_Recv(dst, 3, MPI_INT, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
            CHECK(dst[0] == 1 && dst[1] == 2 && dst[2] == 3, "iteration %d got %d %d %d", it,
                  dst[0], dst[1], dst[2]);
        }
        MPI_Request_free(&s);
        MPI_Type_free(&other);
    }

    /* 3. Buffer_detach does not wait for a freed receive. */
    if (active) {
        int late = -1, v = rank, got = -1, bsize = 0;
        MPI_Request r;
        CHECK_OK(MPI_Irecv(&late, 1, MPI_INT, peer, 99, MPI_COMM_WORLD, &r));
        CHECK_OK(MPI_Request_free(&r));
        MPI_Pack_size(1, MPI_INT, MPI_COMM_WORLD, &bsize);
        bsize += MPI_BSEND_OVERHEAD;
        char *buf = malloc(bsize);
        CHECK_OK(MPI_Buffer_attach(buf, bsize));
        CHECK_OK(MPI_Bsend(&v, 1, MPI_INT, peer, 5, MPI_COMM_WORLD));
        CHECK_OK(MPI_Recv(&got, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        void *back;
        CHECK_OK(MPI_Buffer_detach(&back, &bsize));
        CHECK(back == buf, "detach gave another buffer");
        CHECK(got == peer, "bsend delivered %d", got);
        /* Only now the message the freed receive waits for. */
        int w = 1000 + rank;
        CHECK_OK(MPI_Send(&w, 1, MPI_INT, peer, 99, MPI_COMM_WORLD));
        free(buf);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 4. A truncated MPI_Mrecv on a communicator that returns errors. */
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if (active) {
        int big[4] = {1, 2, 3, 4}, small[2] = {0, 0};
        MPI_Request s;
        CHECK_OK(MPI_Isend(big, 4, MPI_INT, peer, 6, c, &s));
        MPI_Message m;
        MPI_Status st;
        CHECK_OK(MPI_Mprobe(peer, 6, c, &m, &st));
        int rc = MPI_Mrecv(small, 2, MPI_INT, &m, &st);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "Mrecv truncation class %d", cls);
        CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 6, "status %d/%d", st.MPI_SOURCE,
              st.MPI_TAG);
        CHECK_OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
    }
    MPI_Comm_free(&c);
    return ct_finish();
}
