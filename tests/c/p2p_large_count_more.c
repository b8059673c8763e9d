/* ranks: 1 2 3 */
/* The rest of the large-count point-to-point functions (MPI 4.1 §19.2):
 * MPI_Sendrecv_c, Sendrecv_replace_c, Isendrecv_c, Isendrecv_replace_c,
 * MPI_Mrecv_c / Imrecv_c after MPI_Mprobe, the persistent *_init_c, and
 * MPI_Buffer_attach_c / detach_c with MPI_Bsend_c, around a ring; a
 * negative count is MPI_ERR_COUNT. */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int right = (me + 1) % p, left = (me + p - 1) % p;
    MPI_Status st;
    MPI_Count n = -1;

    /* Sendrecv_c and Sendrecv_replace_c. */
    int out[3] = {me, me + 10, me + 20}, in[4] = {-1, -1, -1, -1};
    CHECK_OK(MPI_Sendrecv_c(out, (MPI_Count)3, MPI_INT, right, 1, in, (MPI_Count)4, MPI_INT, left,
                            1, MPI_COMM_WORLD, &st));
    MPI_Get_count_c(&st, MPI_INT, &n);
    CHECK(n == 3 && in[0] == left && in[2] == left + 20 && in[3] == -1,
          "Sendrecv_c: count %lld, %d %d %d", (long long)n, in[0], in[2], in[3]);
    int buf[2] = {me, -me};
    CHECK_OK(MPI_Sendrecv_replace_c(buf, (MPI_Count)2, MPI_INT, right, 2, left, 2, MPI_COMM_WORLD,
                                    &st));
    CHECK(buf[0] == left && buf[1] == -left, "Sendrecv_replace_c: %d %d", buf[0], buf[1]);

    /* Isendrecv_c and Isendrecv_replace_c. */
    MPI_Request r;
    in[0] = in[1] = -1;
    CHECK_OK(MPI_Isendrecv_c(out, (MPI_Count)2, MPI_INT, right, 3, in, (MPI_Count)2, MPI_INT, left,
                             3, MPI_COMM_WORLD, &r));
    CHECK_OK(MPI_Wait(&r, &st));
    CHECK(in[0] == left && in[1] == left + 10, "Isendrecv_c: %d %d", in[0], in[1]);
    buf[0] = me;
    CHECK_OK(MPI_Isendrecv_replace_c(buf, (MPI_Count)1, MPI_INT, right, 4, left, 4,
                                     MPI_COMM_WORLD, &r));
    CHECK_OK(MPI_Wait(&r, &st));
    CHECK(buf[0] == left, "Isendrecv_replace_c: %d", buf[0]);

    /* Mrecv_c and Imrecv_c. */
    MPI_Request sr;
    CHECK_OK(MPI_Isend_c(out, (MPI_Count)3, MPI_INT, right, 5, MPI_COMM_WORLD, &sr));
    MPI_Message m;
    CHECK_OK(MPI_Mprobe(left, 5, MPI_COMM_WORLD, &m, &st));
    in[0] = -1;
    CHECK_OK(MPI_Mrecv_c(in, (MPI_Count)3, MPI_INT, &m, &st));
    CHECK(in[0] == left && in[2] == left + 20 && m == MPI_MESSAGE_NULL, "Mrecv_c: %d %d", in[0],
          in[2]);
    CHECK_OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
    CHECK_OK(MPI_Isend_c(out, (MPI_Count)1, MPI_INT, right, 6, MPI_COMM_WORLD, &sr));
    CHECK_OK(MPI_Mprobe(left, 6, MPI_COMM_WORLD, &m, &st));
    in[0] = -1;
    CHECK_OK(MPI_Imrecv_c(in, (MPI_Count)1, MPI_INT, &m, &r));
    CHECK_OK(MPI_Wait(&r, &st));
    CHECK(in[0] == left, "Imrecv_c: %d", in[0]);
    CHECK_OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));

    /* The persistent forms, started twice. */
    MPI_Request pr[2];
    for (int mode = 0; mode < 4; mode++) {
        int v = 100 * mode + me, got = -1;
        CHECK_OK(MPI_Recv_init_c(&got, (MPI_Count)1, MPI_INT, left, 7, MPI_COMM_WORLD, &pr[0]));
        int rc = MPI_ERR_OTHER;
        if (mode == 0)
            rc = MPI_Send_init_c(&v, (MPI_Count)1, MPI_INT, right, 7, MPI_COMM_WORLD, &pr[1]);
        else if (mode == 1)
            rc = MPI_Ssend_init_c(&v, (MPI_Count)1, MPI_INT, right, 7, MPI_COMM_WORLD, &pr[1]);
        else if (mode == 2)
            rc = MPI_Rsend_init_c(&v, (MPI_Count)1, MPI_INT, right, 7, MPI_COMM_WORLD, &pr[1]);
        else {
            static char bsend[1024];
            CHECK_OK(MPI_Buffer_attach_c(bsend, (MPI_Count)sizeof bsend));
            rc = MPI_Bsend_init_c(&v, (MPI_Count)1, MPI_INT, right, 7, MPI_COMM_WORLD, &pr[1]);
        }
        CHECK_OK(rc);
        for (int round = 0; round < 2; round++) {
            got = -1;
            v = 100 * mode + me + round;
            CHECK_OK(MPI_Start(&pr[0]));
            /* A ready send needs the receive posted on the other side. */
            MPI_Barrier(MPI_COMM_WORLD);
            CHECK_OK(MPI_Start(&pr[1]));
            MPI_Status sts[2];
            CHECK_OK(MPI_Waitall(2, pr, sts));
            CHECK(got == 100 * mode + left + round, "init_c mode %d round %d: got %d", mode,
                  round, got);
        }
        MPI_Request_free(&pr[0]);
        MPI_Request_free(&pr[1]);
        if (mode == 3) {
            void *addr = NULL;
            MPI_Count size = -1;
            CHECK_OK(MPI_Buffer_detach_c(&addr, &size));
            CHECK(size == 1024, "Buffer_detach_c: size %lld", (long long)size);
        }
    }

    /* A negative count. */
    int rc = MPI_Sendrecv_c(out, (MPI_Count)-1, MPI_INT, right, 8, in, (MPI_Count)1, MPI_INT,
                            left, 8, MPI_COMM_WORLD, &st);
    CHECK(ct_class(rc) == MPI_ERR_COUNT, "Sendrecv_c with count -1: class %d", ct_class(rc));
    rc = MPI_Recv_init_c(in, (MPI_Count)-3, MPI_INT, left, 9, MPI_COMM_WORLD, &r);
    CHECK(ct_class(rc) == MPI_ERR_COUNT, "Recv_init_c with count -3: class %d", ct_class(rc));
    return ct_finish();
}
