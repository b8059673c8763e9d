/* ranks: 1 3 4 */
/* Persistent collectives (MPI 4.1 §6.13): each init makes an inactive
 * request; MPI_Start / MPI_Startall start it with the buffers' current
 * contents, MPI_Wait completes it and leaves it allocated for the next
 * start, and MPI_Request_free frees it. Allreduce, three rounds with new
 * data; a bcast of a strided type whose handle is freed right after the
 * init and a barrier, started together by MPI_Startall; reduce, scan,
 * exscan and reduce_scatter_block, and on shmpi gather, scatter,
 * allgather and alltoall, two rounds each. Two allreduces started in
 * different orders on even and odd ranks still match by their inits'
 * order; the communicator and a user operation freed after the init stay
 * in use; on shmpi bad arguments fail the init (count, root, operation,
 * type) on the communicator's handler, and starting an active request is
 * MPI_ERR_REQUEST. */
#include "common.h"

#define R 3

static int bad_type_seen = 0;

/* Adds ints; the datatype it is given must still be one of 1 int. */
static void add(void *in, void *inout, int *len, MPI_Datatype *t)
{
    int sz = -1;
    MPI_Type_size(*t, &sz);
    if (sz != (int)sizeof(int)) bad_type_seen = 1;
    for (int k = 0; k < *len; k++) ((int *)inout)[k] += ((int *)in)[k];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int tri = p * (p - 1) / 2;

    /* Allreduce, three rounds. */
    int s2[2], r2[2];
    MPI_Request ar;
    CHECK_OK(MPI_Allreduce_init(s2, r2, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &ar));
    for (int round = 0; round < R; round++) {
        s2[0] = me + round;
        s2[1] = 10 * me;
        CHECK_OK(MPI_Start(&ar));
        CHECK_OK(MPI_Wait(&ar, MPI_STATUS_IGNORE));
        CHECK(ar != MPI_REQUEST_NULL, "the persistent request was freed by the wait");
        CHECK(r2[0] == tri + p * round && r2[1] == 10 * tri, "round %d: %d %d", round, r2[0],
              r2[1]);
    }
    CHECK_OK(MPI_Request_free(&ar));
    CHECK(ar == MPI_REQUEST_NULL, "free left the handle");

    /* Bcast of a type freed right after the init, and a barrier,
     * started together. */
    MPI_Datatype every2;
    CHECK_OK(MPI_Type_vector(2, 1, 2, MPI_INT, &every2));
    CHECK_OK(MPI_Type_commit(&every2));
    int b[3];
    MPI_Request two_rq[2];
    CHECK_OK(MPI_Bcast_init(b, 1, every2, p - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &two_rq[0]));
    CHECK_OK(MPI_Type_free(&every2));
    CHECK_OK(MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &two_rq[1]));
    for (int round = 0; round < R; round++) {
        b[0] = me == p - 1 ? 50 + round : -1;
        b[1] = -9;
        b[2] = me == p - 1 ? 60 + round : -1;
        CHECK_OK(MPI_Startall(2, two_rq));
        CHECK_OK(MPI_Waitall(2, two_rq, MPI_STATUSES_IGNORE));
        CHECK(b[0] == 50 + round && b[1] == -9 && b[2] == 60 + round, "bcast round %d: %d %d %d",
              round, b[0], b[1], b[2]);
    }
    MPI_Request_free(&two_rq[0]);
    MPI_Request_free(&two_rq[1]);

    /* The reductions. */
    int x, red = -1, sc = -1, ex = -1, rsb = -1, rsin[8];
    MPI_Request rr[4];
    CHECK_OK(MPI_Reduce_init(&x, &red, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD, MPI_INFO_NULL,
                             &rr[0]));
    CHECK_OK(MPI_Scan_init(&x, &sc, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rr[1]));
    CHECK_OK(MPI_Exscan_init(&x, &ex, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                             &rr[2]));
    CHECK_OK(MPI_Reduce_scatter_block_init(rsin, &rsb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                           MPI_INFO_NULL, &rr[3]));
    for (int round = 0; round < 2; round++) {
        x = me + 1 + round;
        for (int i = 0; i < p; i++) rsin[i] = i * me + round;
        CHECK_OK(MPI_Startall(4, rr));
        CHECK_OK(MPI_Waitall(4, rr, MPI_STATUSES_IGNORE));
        if (me == 0) CHECK(red == p + round, "reduce round %d: %d", round, red);
        int want_sc = (me + 1) * (me + 2) / 2 + (me + 1) * round;
        CHECK(sc == want_sc, "scan round %d: %d, not %d", round, sc, want_sc);
        if (me > 0) CHECK(ex == want_sc - x, "exscan round %d: %d", round, ex);
        CHECK(rsb == me * tri + p * round, "reduce_scatter_block round %d: %d", round, rsb);
    }
    for (int i = 0; i < 4; i++) MPI_Request_free(&rr[i]);

    /* Data movement (MPICH 4.0's persistent gather reads the send buffer
     * as it was at the init, and its waits fail from 3 ranks on). */
#ifdef SHMPI_MPI_H
    int one, all[8], sc_src[8], sc_dst = -1, a2a_s[8], a2a_r[8], gat[8];
    MPI_Request mr[4];
    CHECK_OK(MPI_Gather_init(&one, 1, MPI_INT, gat, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL,
                             &mr[0]));
    CHECK_OK(MPI_Scatter_init(sc_src, 1, MPI_INT, &sc_dst, 1, MPI_INT, p - 1, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &mr[1]));
    CHECK_OK(MPI_Allgather_init(&one, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                                &mr[2]));
    CHECK_OK(MPI_Alltoall_init(a2a_s, 1, MPI_INT, a2a_r, 1, MPI_INT, MPI_COMM_WORLD,
                               MPI_INFO_NULL, &mr[3]));
    for (int round = 0; round < 2; round++) {
        one = 100 * round + me;
        for (int i = 0; i < p; i++) {
            sc_src[i] = 1000 * round + i;
            a2a_s[i] = 10 * me + i + round;
        }
        CHECK_OK(MPI_Startall(4, mr));
        CHECK_OK(MPI_Waitall(4, mr, MPI_STATUSES_IGNORE));
        for (int i = 0; i < p; i++) {
            if (me == 0) CHECK(gat[i] == 100 * round + i, "gather round %d [%d]", round, i);
            CHECK(all[i] == 100 * round + i, "allgather round %d [%d]: %d", round, i, all[i]);
            CHECK(a2a_r[i] == 10 * i + me + round, "alltoall round %d [%d]: %d", round, i,
                  a2a_r[i]);
        }
        CHECK(sc_dst == 1000 * round + me, "scatter round %d: %d", round, sc_dst);
    }
    for (int i = 0; i < 4; i++) MPI_Request_free(&mr[i]);
#endif

    /* Starts in different orders on different ranks match by the inits'
     * order (MPI 4.1 §6.13: only the inits are ordered). */
    {
        int a = me + 1, ra = -1, bb = 100 * (me + 1), rb = -1;
        MPI_Request q[2];
        CHECK_OK(MPI_Allreduce_init(&a, &ra, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                                    &q[0]));
        CHECK_OK(MPI_Allreduce_init(&bb, &rb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                    MPI_INFO_NULL, &q[1]));
        if (me % 2 == 0) {
            CHECK_OK(MPI_Start(&q[0]));
            CHECK_OK(MPI_Start(&q[1]));
        } else {
            CHECK_OK(MPI_Start(&q[1]));
            CHECK_OK(MPI_Start(&q[0]));
        }
        CHECK_OK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
        CHECK(ra == p * (p + 1) / 2 && rb == 100 * p * (p + 1) / 2, "orders: %d %d", ra, rb);
        MPI_Request_free(&q[0]);
        MPI_Request_free(&q[1]);
    }

    /* The communicator and a user operation freed after the init. */
    {
        MPI_Comm d;
        MPI_Op op;
        MPI_Datatype one_int, five_doubles;
        CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
        CHECK_OK(MPI_Op_create(add, 1, &op));
        CHECK_OK(MPI_Type_contiguous(1, MPI_INT, &one_int));
        CHECK_OK(MPI_Type_commit(&one_int));
        int a = me + 1, ra = -1;
        MPI_Request q;
        CHECK_OK(MPI_Allreduce_init(&a, &ra, 1, one_int, op, d, MPI_INFO_NULL, &q));
        CHECK_OK(MPI_Comm_free(&d));
        CHECK_OK(MPI_Op_free(&op));
        /* The type's handle freed and (likely) reused by another type: the
         * operation still sees a type of one int. */
        CHECK_OK(MPI_Type_free(&one_int));
        CHECK_OK(MPI_Type_contiguous(5, MPI_DOUBLE, &five_doubles));
        CHECK_OK(MPI_Type_commit(&five_doubles));
        for (int round = 0; round < 2; round++) {
            a = me + 1 + round;
            CHECK_OK(MPI_Start(&q));
            CHECK_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
            CHECK(ra == p * (p + 1) / 2 + p * round, "after the frees, round %d: %d", round, ra);
        }
        CHECK(!bad_type_seen, "the user operation saw another datatype");
        MPI_Request_free(&q);
        MPI_Type_free(&five_doubles);
    }

#ifdef SHMPI_MPI_H
    /* Bad arguments are found at the init, on the communicator's handler;
     * starting an active request is MPI_ERR_REQUEST. */
    {
        MPI_Comm d;
        CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
        MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
        int a = 1, ra;
        MPI_Request q = MPI_REQUEST_NULL;
        CHECK(ct_class(MPI_Allreduce_init(&a, &ra, -1, MPI_INT, MPI_SUM, d, MPI_INFO_NULL, &q)) ==
                  MPI_ERR_COUNT,
              "count -1 at the init");
        CHECK(ct_class(MPI_Reduce_init(&a, &ra, 1, MPI_INT, MPI_SUM, p, d, MPI_INFO_NULL, &q)) ==
                  MPI_ERR_ROOT,
              "root %d at the init", p);
        CHECK(ct_class(MPI_Allreduce_init(&a, &ra, 1, MPI_INT, MPI_OP_NULL, d, MPI_INFO_NULL,
                                          &q)) == MPI_ERR_OP,
              "MPI_OP_NULL at the init");
        CHECK(ct_class(MPI_Allreduce_init(&a, &ra, 1, MPI_DATATYPE_NULL, MPI_SUM, d,
                                          MPI_INFO_NULL, &q)) == MPI_ERR_TYPE,
              "MPI_DATATYPE_NULL at the init");
        int g[8];
        CHECK(ct_class(MPI_Gather_init(&a, 1, MPI_INT, g, 1, MPI_INT, p, d, MPI_INFO_NULL, &q)) ==
                  MPI_ERR_ROOT,
              "gather root %d at the init", p);
        CHECK(ct_class(MPI_Allgather_init(&a, -1, MPI_INT, g, 1, MPI_INT, d, MPI_INFO_NULL,
                                          &q)) == MPI_ERR_COUNT,
              "allgather count -1 at the init");
        CHECK(ct_class(MPI_Alltoall_init(&a, 1, MPI_DATATYPE_NULL, g, 1, MPI_INT, d,
                                         MPI_INFO_NULL, &q)) == MPI_ERR_TYPE,
              "alltoall MPI_DATATYPE_NULL at the init");
        CHECK(q == MPI_REQUEST_NULL, "a refused init made a request");
        CHECK_OK(MPI_Barrier_init(d, MPI_INFO_NULL, &q));
        CHECK_OK(MPI_Start(&q));
        CHECK(ct_class(MPI_Start(&q)) == MPI_ERR_REQUEST, "starting an active request");
        CHECK_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        MPI_Request_free(&q);
        MPI_Comm_free(&d);
    }
#endif
    return ct_finish();
}
