/* ranks: 1 2 4 shmpi-only */
/* MPI_IN_PLACE where a call does not take it is MPI_ERR_BUFFER on every
 * rank that passes it, and nothing is read or written at its sentinel
 * address (MPI leaves such a program erroneous; MPICH crashes on some of
 * these): a send's and a receive's buffer, a broadcast's buffer, the
 * receive buffer of Allgather, Allreduce, Alltoall, Alltoallv (with
 * displacements) and Gather (root), a
 * derived type's buffer, a nonblocking broadcast's. The world is used
 * afterwards, so no rank was left waiting. */
#include "common.h"

static void expect_buffer(int rc, const char *what)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "%s: class %d, not MPI_ERR_BUFFER", what, cls);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n, me;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int x = me, b[64] = {0};
    MPI_Request rq = MPI_REQUEST_NULL;
    MPI_Datatype vec;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);

    expect_buffer(MPI_Send(MPI_IN_PLACE, 1, MPI_INT, (me + 1) % n, 1, MPI_COMM_WORLD), "Send");
    expect_buffer(MPI_Recv(MPI_IN_PLACE, 1, MPI_INT, (me + n - 1) % n, 1, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE),
                  "Recv");
    expect_buffer(MPI_Isend(MPI_IN_PLACE, 1, MPI_INT, (me + 1) % n, 1, MPI_COMM_WORLD, &rq),
                  "Isend");
    expect_buffer(MPI_Send(MPI_IN_PLACE, 1, vec, (me + 1) % n, 1, MPI_COMM_WORLD),
                  "Send of a vector type");
    expect_buffer(MPI_Bcast(MPI_IN_PLACE, 1, MPI_INT, 0, MPI_COMM_WORLD), "Bcast");
    expect_buffer(MPI_Bcast(MPI_IN_PLACE, 1, vec, 0, MPI_COMM_WORLD), "Bcast of a vector type");
    expect_buffer(MPI_Ibcast(MPI_IN_PLACE, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq), "Ibcast");
    expect_buffer(MPI_Allgather(&x, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, MPI_COMM_WORLD),
                  "Allgather's receive buffer");
    expect_buffer(MPI_Allreduce(&x, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                  "Allreduce's receive buffer");
    expect_buffer(MPI_Alltoall(b, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, MPI_COMM_WORLD),
                  "Alltoall's receive buffer");
    {
        /* Displacements past the sentinel: still refused, not written. */
        int cnt[64], dsp[64];
        for (int i = 0; i < n && i < 64; i++) {
            cnt[i] = 1;
            dsp[i] = 4 + i;
        }
        expect_buffer(MPI_Alltoallv(b, cnt, dsp, MPI_INT, MPI_IN_PLACE, cnt, dsp, MPI_INT,
                                    MPI_COMM_WORLD),
                      "Alltoallv's receive buffer, displaced");
    }
    /* Only the root passes it: its error comes before anything is
     * received, and the others' one int each is sent whole (eager). */
    {
        int rc = MPI_Gather(&x, 1, MPI_INT, me == 0 ? MPI_IN_PLACE : NULL, 1, MPI_INT, 0,
                            MPI_COMM_WORLD);
        if (me == 0)
            expect_buffer(rc, "Gather's receive buffer at the root");
        else
            CHECK(rc == MPI_SUCCESS, "Gather at a non-root: %d", rc);
    }
    MPI_Type_free(&vec);

    /* Everyone still answers. */
    int sum = 0;
    CHECK_OK(MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == n * (n - 1) / 2, "allreduce after: %d", sum);
    return ct_finish();
}
