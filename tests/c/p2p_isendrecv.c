/* ranks: 1 2 5 */
/* MPI_Isendrecv and MPI_Isendrecv_replace (MPI 4.1 §3.10.1): a ring shift
 * completed by MPI_Wait, by an MPI_Test loop and by MPI_Waitall beside an
 * MPI_Irecv; the status is the receive's (source, tag, count with
 * ANY_SOURCE / ANY_TAG); a strided send type received contiguous; a 1 MiB
 * message; MPI_PROC_NULL at the ends of an open chain; the replace form
 * rotating a buffer a full turn, contiguous and with a strided type whose
 * gaps stay untouched; a request freed before completion; a cancelled
 * one (its receive cancelled, its send delivered); and bad arguments
 * (tag, rank, count) refused with their class, nothing posted. */
#include "common.h"

#define MIB_INTS (1 << 18)

/* MPICH 4.0's MPI_Isendrecv gives an empty status (source 0, tag 0,
 * count 0), and its request drops a reference to the send type that it
 * never took: freeing the type then fails an assertion (datatype_impl.c
 * or mpidu_sched.c, a negative reference count), before the request
 * completes (which MPI 4.1 §5.1.10 allows) or after. Those checks are
 * shmpi's; under MPICH the type is not freed. Its MPI_Isendrecv_replace
 * with a strided type lays the message down contiguous (and frees the
 * type once too often), and its MPI_Request_free refuses the request
 * ("invalid (kind=10)") and MPI_Cancel ("an unknown type of request"):
 * those cases are shmpi's too. */

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Status st;
    MPI_Request rq;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* 1. Ints to the right, from the left; completed by MPI_Wait. */
    {
        int s[4] = {rank, rank + 10, rank + 20, rank + 30}, r[8];
        for (int i = 0; i < 8; i++) r[i] = -1;
        CHECK_OK(MPI_Isendrecv(s, 4, MPI_INT, right, 5, r, 8, MPI_INT, left, 5, MPI_COMM_WORLD,
                               &rq));
        CHECK_OK(MPI_Wait(&rq, &st));
        CHECK(rq == MPI_REQUEST_NULL, "the request is not null after MPI_Wait");
        int c = -1;
        MPI_Get_count(&st, MPI_INT, &c);
        CHECK(!OURS || (c == 4 && st.MPI_SOURCE == left && st.MPI_TAG == 5),
              "status count %d source %d tag %d, want 4 %d 5", c, st.MPI_SOURCE, st.MPI_TAG,
              left);
        for (int i = 0; i < 8; i++) {
            int want = i < 4 ? left + 10 * i : -1;
            CHECK(r[i] == want, "r[%d] = %d want %d", i, r[i], want);
        }
    }

    /* 2. A strided type out, contiguous doubles in, ANY_SOURCE / ANY_TAG,
     *    completed by testing. */
    {
        double src[12], dst[12];
        MPI_Datatype vec;
        for (int i = 0; i < 12; i++) src[i] = (i % 2 == 0) ? rank * 100.0 + i / 2 : -1.0;
        for (int i = 0; i < 12; i++) dst[i] = -2.0;
        CHECK_OK(MPI_Type_vector(6, 1, 2, MPI_DOUBLE, &vec));
        CHECK_OK(MPI_Type_commit(&vec));
        CHECK_OK(MPI_Isendrecv(src, 1, vec, right, 30 + rank, dst, 12, MPI_DOUBLE,
                               MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq));
        if (OURS) MPI_Type_free(&vec); /* the request keeps what it needs */
        int flag = 0;
        double t0 = MPI_Wtime();
        while (!flag && MPI_Wtime() - t0 < 30.0) CHECK_OK(MPI_Test(&rq, &flag, &st));
        CHECK(flag, "MPI_Test never completed the MPI_Isendrecv");
        int c = -1;
        MPI_Get_count(&st, MPI_DOUBLE, &c);
        CHECK(!OURS || (c == 6 && st.MPI_SOURCE == left && st.MPI_TAG == 30 + left),
              "status count %d source %d tag %d, want 6 %d %d", c, st.MPI_SOURCE, st.MPI_TAG,
              left, 30 + left);
        for (int i = 0; i < 12; i++) {
            double want = i < 6 ? left * 100.0 + i : -2.0;
            CHECK(dst[i] == want, "dst[%d] = %g want %g", i, dst[i], want);
        }
    }
    /* The ANY_TAG receive above must not see the next phase's messages. */
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3. 1 MiB to the left beside a plain MPI_Irecv from the right, by
     *    MPI_Waitall. */
    {
        int *s = malloc(MIB_INTS * sizeof(int)), *r = malloc(MIB_INTS * sizeof(int));
        if (!s || !r) MPI_Abort(MPI_COMM_WORLD, 2);
        for (int i = 0; i < MIB_INTS; i++) s[i] = rank * 3 + i, r[i] = -1;
        int one = rank, got = -1;
        MPI_Request rs[3];
        MPI_Status sts[3];
        CHECK_OK(MPI_Irecv(&got, 1, MPI_INT, right, 8, MPI_COMM_WORLD, &rs[0]));
        CHECK_OK(MPI_Isendrecv(s, MIB_INTS, MPI_INT, left, 7, r, MIB_INTS, MPI_INT, right, 7,
                               MPI_COMM_WORLD, &rs[1]));
        CHECK_OK(MPI_Isend(&one, 1, MPI_INT, left, 8, MPI_COMM_WORLD, &rs[2]));
        CHECK_OK(MPI_Waitall(3, rs, sts));
        CHECK(got == right, "the plain receive got %d want %d", got, right);
        CHECK(!OURS || (sts[1].MPI_SOURCE == right && sts[1].MPI_TAG == 7), "1 MiB status %d/%d",
              sts[1].MPI_SOURCE, sts[1].MPI_TAG);
        int bad = 0;
        for (int i = 0; i < MIB_INTS; i++) bad += r[i] != right * 3 + i;
        CHECK(bad == 0, "1 MiB: %d ints wrong", bad);
        free(s);
        free(r);
    }

    /* 4. An open chain: the ends send to / receive from MPI_PROC_NULL.
     *    (MPICH 4.0 waits forever when both sides are MPI_PROC_NULL.) */
    if (OURS || size > 1) {
        int to = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
        int from = rank > 0 ? rank - 1 : MPI_PROC_NULL;
        int v = rank * 5, r = -7;
        CHECK_OK(MPI_Isendrecv(&v, 1, MPI_INT, to, 2, &r, 1, MPI_INT, from, 2, MPI_COMM_WORLD,
                               &rq));
        CHECK_OK(MPI_Wait(&rq, &st));
        if (from == MPI_PROC_NULL) {
            int c = -1;
            MPI_Get_count(&st, MPI_INT, &c);
            CHECK(r == -7 && (!OURS || (st.MPI_SOURCE == MPI_PROC_NULL &&
                                        st.MPI_TAG == MPI_ANY_TAG && c == 0)),
                  "from PROC_NULL: r %d source %d tag %d count %d", r, st.MPI_SOURCE,
                  st.MPI_TAG, c);
        } else {
            CHECK(r == from * 5, "chain: r %d want %d", r, from * 5);
        }
    }

    /* 5. The replace form rotates a buffer a full turn: contiguous, then a
     *    strided type whose gaps stay. */
    {
        int b[3] = {rank, rank * 2, rank * 3};
        for (int k = 0; k < size; k++) {
            CHECK_OK(MPI_Isendrecv_replace(b, 3, MPI_INT, right, 9, left, 9, MPI_COMM_WORLD,
                                           &rq));
            CHECK_OK(MPI_Wait(&rq, &st));
            int from = (rank + size - k - 1) % size; /* whose values b holds now */
            CHECK(b[0] == from && b[2] == from * 3, "turn %d: b = %d %d %d, want rank %d's", k,
                  b[0], b[1], b[2], from);
        }
        CHECK(b[0] == rank && b[1] == rank * 2 && b[2] == rank * 3,
              "a full turn gave %d %d %d", b[0], b[1], b[2]);

        if (OURS) {
            int g[8];
            MPI_Datatype every_other;
            CHECK_OK(MPI_Type_vector(4, 1, 2, MPI_INT, &every_other));
            CHECK_OK(MPI_Type_commit(&every_other));
            for (int i = 0; i < 8; i++) g[i] = i % 2 == 0 ? rank * 10 + i : -100 - i;
            CHECK_OK(MPI_Isendrecv_replace(g, 1, every_other, right, 11, left, 11, MPI_COMM_WORLD,
                                           &rq));
            CHECK_OK(MPI_Wait(&rq, &st));
            for (int i = 0; i < 8; i++) {
                int want = i % 2 == 0 ? left * 10 + i : -100 - i;
                CHECK(g[i] == want, "strided replace g[%d] = %d want %d", i, g[i], want);
            }
            MPI_Type_free(&every_other);
        }
    }

    /* 6. A request freed before it completes still delivers. */
    {
        int v = 40 + rank, r = -1;
        CHECK_OK(MPI_Isendrecv(&v, 1, MPI_INT, right, 12, &r, 1, MPI_INT, left, 12,
                               MPI_COMM_WORLD, &rq));
        if (OURS)
            CHECK_OK(MPI_Request_free(&rq));
        else
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        CHECK(rq == MPI_REQUEST_NULL, "MPI_Request_free left the handle");
        /* The peer's value has arrived once a barrier after a second round
         * trip on the same pair has passed (messages are ordered). */
        int v2 = 50 + rank, r2 = -1;
        CHECK_OK(MPI_Sendrecv(&v2, 1, MPI_INT, right, 12, &r2, 1, MPI_INT, left, 12,
                              MPI_COMM_WORLD, &st));
        CHECK(r == 40 + left && r2 == 50 + left, "freed: r %d r2 %d want %d %d", r, r2,
              40 + left, 50 + left);
    }

    /* 7. MPI_Cancel cancels the receive of an MPI_Isendrecv; its send
     *    still arrives. */
    if (OURS && size > 1) {
        int v = 60 + rank, r = -1, got = -1;
        CHECK_OK(MPI_Isendrecv(&v, 1, MPI_INT, right, 13, &r, 1, MPI_INT, left, 14,
                               MPI_COMM_WORLD, &rq));
        CHECK_OK(MPI_Cancel(&rq));
        CHECK_OK(MPI_Wait(&rq, &st));
        int cancelled = 0;
        MPI_Test_cancelled(&st, &cancelled);
        CHECK(cancelled && r == -1, "cancelled: flag %d r %d", cancelled, r);
        CHECK_OK(MPI_Recv(&got, 1, MPI_INT, left, 13, MPI_COMM_WORLD, &st));
        CHECK(got == 60 + left, "the cancelled pair's send brought %d", got);
    }

    /* 8. Bad arguments: their class, and nothing posted or sent. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    {
        int v = 1, r = -1;
        int rc = MPI_Isendrecv(&v, 1, MPI_INT, right, -3, &r, 1, MPI_INT, left, 0,
                               MPI_COMM_WORLD, &rq);
        CHECK(ct_class(rc) == MPI_ERR_TAG, "negative send tag: class %d", ct_class(rc));
        rc = MPI_Isendrecv(&v, 1, MPI_INT, size, 0, &r, 1, MPI_INT, left, 0, MPI_COMM_WORLD,
                           &rq);
        CHECK(ct_class(rc) == MPI_ERR_RANK, "dest out of range: class %d", ct_class(rc));
        rc = MPI_Isendrecv(&v, 1, MPI_INT, right, 0, &r, 1, MPI_INT, -5, 0, MPI_COMM_WORLD,
                           &rq);
        CHECK(ct_class(rc) == MPI_ERR_RANK, "source out of range: class %d", ct_class(rc));
        rc = MPI_Isendrecv_replace(&v, -1, MPI_INT, right, 0, left, 0, MPI_COMM_WORLD, &rq);
        CHECK(ct_class(rc) == MPI_ERR_COUNT, "negative count: class %d", ct_class(rc));
        /* Nothing of the refused calls is in flight: a probe for tag 0
         * finds nothing after everyone has passed them. */
        MPI_Barrier(MPI_COMM_WORLD);
        int flag = 1;
        CHECK_OK(MPI_Iprobe(MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &flag, &st));
        CHECK(!flag, "a refused MPI_Isendrecv left a message");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return ct_finish();
}
