/* ranks: 2 4 */
/* Receive status contents: MPI_ANY_SOURCE / MPI_ANY_TAG receives report the
 * real source and tag; MPI_Get_count and MPI_Get_elements for basic and
 * derived types, including MPI_UNDEFINED from MPI_Get_count when the data
 * is not a whole number of the type (3 ints received as pairs of ints, 7
 * bytes received as 4-byte units, int/double/int received as {int,double}
 * structs), zero-byte messages, and statuses from Wait, Test and Waitany;
 * the MPI_ERROR field of a single status left as it was. */
#include "common.h"
#include <stddef.h>

struct id { int i; double d; };
struct idi { int i; double d; int j; };

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 1. Every rank > 0 sends 3*rank ints with tag 10+rank; rank 0 takes
     * them with ANY_SOURCE/ANY_TAG in whatever order they come. */
    if (rank == 0) {
        int buf[100];
        int *seen = calloc((size_t)size, sizeof(int));
        for (int m = 1; m < size; m++) {
            for (int i = 0; i < 100; i++) buf[i] = -1;
            CHECK_OK(MPI_Recv(buf, 100, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG,
                              MPI_COMM_WORLD, &st));
            int src = st.MPI_SOURCE;
            CHECK(src >= 1 && src < size, "ANY_SOURCE status source %d", src);
            if (src < 1 || src >= size) continue;
            CHECK(!seen[src], "message from %d received twice", src);
            seen[src] = 1;
            CHECK(st.MPI_TAG == 10 + src, "ANY_TAG status tag %d want %d",
                  st.MPI_TAG, 10 + src);
            int c = -1, e = -1;
            CHECK_OK(MPI_Get_count(&st, MPI_INT, &c));
            CHECK_OK(MPI_Get_elements(&st, MPI_INT, &e));
            CHECK(c == 3 * src, "Get_count from %d = %d want %d", src, c, 3 * src);
            CHECK(e == 3 * src, "Get_elements from %d = %d want %d", src, e, 3 * src);
            for (int i = 0; i < 100; i++) {
                int want = i < 3 * src ? src * 100 + i : -1;
                CHECK(buf[i] == want, "from %d: buf[%d] = %d want %d", src, i,
                      buf[i], want);
            }
        }
        free(seen);
    } else {
        int buf[100];
        for (int i = 0; i < 3 * rank; i++) buf[i] = rank * 100 + i;
        CHECK_OK(MPI_Send(buf, 3 * rank, MPI_INT, 0, 10 + rank, MPI_COMM_WORLD));
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Derived types used below. */
    MPI_Datatype pair, quad, t_id, t_id_raw, t_idi;
    CHECK_OK(MPI_Type_contiguous(2, MPI_INT, &pair));
    CHECK_OK(MPI_Type_commit(&pair));
    CHECK_OK(MPI_Type_contiguous(4, MPI_BYTE, &quad));
    CHECK_OK(MPI_Type_commit(&quad));
    {
        int bl[2] = {1, 1};
        MPI_Aint disp[2] = {offsetof(struct id, i), offsetof(struct id, d)};
        MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
        CHECK_OK(MPI_Type_create_struct(2, bl, disp, types, &t_id_raw));
        CHECK_OK(MPI_Type_create_resized(t_id_raw, 0, sizeof(struct id), &t_id));
        CHECK_OK(MPI_Type_commit(&t_id));
    }
    {
        int bl[3] = {1, 1, 1};
        MPI_Aint disp[3] = {offsetof(struct idi, i), offsetof(struct idi, d),
                            offsetof(struct idi, j)};
        MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_INT};
        CHECK_OK(MPI_Type_create_struct(3, bl, disp, types, &t_idi));
        CHECK_OK(MPI_Type_commit(&t_idi));
    }

    if (rank == 1) {
        int three[3] = {7, 8, 9};
        unsigned char seven[7] = {1, 2, 3, 4, 5, 6, 7};
        struct id two[2] = {{11, 1.5}, {12, 2.5}};
        struct idi one = {21, 3.25, 22};
        int dummy = 0;
        CHECK_OK(MPI_Send(three, 3, MPI_INT, 0, 1, MPI_COMM_WORLD));
        CHECK_OK(MPI_Send(seven, 7, MPI_BYTE, 0, 2, MPI_COMM_WORLD));
        CHECK_OK(MPI_Send(two, 2, t_id, 0, 3, MPI_COMM_WORLD));
        CHECK_OK(MPI_Send(&one, 1, t_idi, 0, 4, MPI_COMM_WORLD));
        CHECK_OK(MPI_Send(&dummy, 0, MPI_INT, 0, 5, MPI_COMM_WORLD));
        CHECK_OK(MPI_Send(three, 3, MPI_INT, 0, 6, MPI_COMM_WORLD));
        CHECK_OK(MPI_Send(three, 2, MPI_INT, 0, 7, MPI_COMM_WORLD));
        CHECK_OK(MPI_Send(three, 1, MPI_INT, 0, 8, MPI_COMM_WORLD));
    } else if (rank == 0) {
        int c, e;
        /* 2. 3 ints into pairs of ints: count undefined, 3 elements. */
        int ibuf[20];
        for (int i = 0; i < 20; i++) ibuf[i] = -1;
        CHECK_OK(MPI_Recv(ibuf, 10, pair, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 1, "status %d/%d want 1/1",
              st.MPI_SOURCE, st.MPI_TAG);
        c = e = -2;
        CHECK_OK(MPI_Get_count(&st, pair, &c));
        CHECK_OK(MPI_Get_elements(&st, pair, &e));
        CHECK(c == MPI_UNDEFINED, "Get_count(3 ints as pairs) = %d, want MPI_UNDEFINED", c);
        CHECK(e == 3, "Get_elements(3 ints as pairs) = %d want 3", e);
        CHECK(ibuf[0] == 7 && ibuf[1] == 8 && ibuf[2] == 9 && ibuf[3] == -1,
              "pairs data %d %d %d %d", ibuf[0], ibuf[1], ibuf[2], ibuf[3]);

        /* 3. 7 bytes into 4-byte units. */
        unsigned char bbuf[40];
        memset(bbuf, 0, sizeof bbuf);
        CHECK_OK(MPI_Recv(bbuf, 10, quad, 1, 2, MPI_COMM_WORLD, &st));
        c = e = -2;
        CHECK_OK(MPI_Get_count(&st, quad, &c));
        CHECK_OK(MPI_Get_elements(&st, quad, &e));
        CHECK(c == MPI_UNDEFINED, "Get_count(7 bytes as 4-byte units) = %d, want MPI_UNDEFINED", c);
        CHECK(e == 7, "Get_elements(7 bytes as 4-byte units) = %d want 7", e);
        for (int i = 0; i < 8; i++)
            CHECK(bbuf[i] == (i < 7 ? i + 1 : 0), "bytes[%d] = %d", i, bbuf[i]);

        /* 4. Two {int,double} structs: count 2, 4 elements. */
        struct id ids[5];
        memset(ids, 0, sizeof ids);
        CHECK_OK(MPI_Recv(ids, 5, t_id, 1, 3, MPI_COMM_WORLD, &st));
        c = e = -2;
        CHECK_OK(MPI_Get_count(&st, t_id, &c));
        CHECK_OK(MPI_Get_elements(&st, t_id, &e));
        CHECK(c == 2, "Get_count(2 structs) = %d", c);
        CHECK(e == 4, "Get_elements(2 structs) = %d want 4", e);
        CHECK(ids[0].i == 11 && ids[0].d == 1.5 && ids[1].i == 12 && ids[1].d == 2.5,
              "structs %d %g %d %g", ids[0].i, ids[0].d, ids[1].i, ids[1].d);
        CHECK(ids[2].i == 0 && ids[2].d == 0.0, "third struct written");

        /* 5. int,double,int into {int,double} structs: count undefined, 3
         * elements, and the third int lands in the second struct's int. */
        memset(ids, 0, sizeof ids);
        CHECK_OK(MPI_Recv(ids, 5, t_id, 1, 4, MPI_COMM_WORLD, &st));
        c = e = -2;
        CHECK_OK(MPI_Get_count(&st, t_id, &c));
        CHECK_OK(MPI_Get_elements(&st, t_id, &e));
        CHECK(c == MPI_UNDEFINED, "Get_count(int,double,int as structs) = %d, want MPI_UNDEFINED", c);
        CHECK(e == 3, "Get_elements(int,double,int as structs) = %d want 3", e);
        CHECK(ids[0].i == 21 && ids[0].d == 3.25 && ids[1].i == 22 && ids[1].d == 0.0,
              "partial structs %d %g %d %g", ids[0].i, ids[0].d, ids[1].i, ids[1].d);

        /* 6. Zero-byte message: count and elements 0 for any type. */
        ibuf[0] = -1;
        CHECK_OK(MPI_Recv(ibuf, 10, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st));
        c = e = -2;
        CHECK_OK(MPI_Get_count(&st, MPI_INT, &c));
        CHECK_OK(MPI_Get_elements(&st, MPI_INT, &e));
        CHECK(c == 0 && e == 0, "zero-byte message: count %d elements %d", c, e);
        CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 5, "zero-byte status %d/%d",
              st.MPI_SOURCE, st.MPI_TAG);
        CHECK(ibuf[0] == -1, "zero-byte receive wrote the buffer");

        /* 7. Statuses from Irecv completed by Test (loop), Wait, Waitany. */
        MPI_Request req;
        int flag = 0;
        CHECK_OK(MPI_Irecv(ibuf, 20, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG,
                           MPI_COMM_WORLD, &req));
        while (!flag) CHECK_OK(MPI_Test(&req, &flag, &st));
        CHECK(req == MPI_REQUEST_NULL, "completed Test did not free the request");
        c = -2;
        CHECK_OK(MPI_Get_count(&st, MPI_INT, &c));
        CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 6 && c == 3,
              "Test status %d/%d count %d want 1/6/3", st.MPI_SOURCE, st.MPI_TAG, c);

        CHECK_OK(MPI_Irecv(ibuf, 20, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &req));
        CHECK_OK(MPI_Wait(&req, &st));
        c = -2;
        CHECK_OK(MPI_Get_count(&st, MPI_INT, &c));
        CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 7 && c == 2,
              "Wait status %d/%d count %d want 1/7/2", st.MPI_SOURCE, st.MPI_TAG, c);

        MPI_Request reqs[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        int idx = -5;
        CHECK_OK(MPI_Irecv(ibuf, 20, MPI_INT, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, &reqs[1]));
        CHECK_OK(MPI_Waitany(3, reqs, &idx, &st));
        c = -2;
        CHECK_OK(MPI_Get_count(&st, MPI_INT, &c));
        CHECK(idx == 1, "Waitany index %d want 1", idx);
        CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 8 && c == 1 && ibuf[0] == 7,
              "Waitany status %d/%d count %d data %d", st.MPI_SOURCE, st.MPI_TAG,
              c, ibuf[0]);
    }

    /* The MPI_ERROR field of a single status is never written (MPI 4.1
     * §3.2.5: only calls returning several, on MPI_ERR_IN_STATUS): by a
     * receive, a wait, a test, a probe, nor by a truncated receive. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        int v[2] = {5, 6};
        for (int k = 0; k < 5; k++) CHECK_OK(MPI_Send(v, 2, MPI_INT, 0, 30 + k, MPI_COMM_WORLD));
    } else if (rank == 0) {
        int r[2], flag = 0;
        MPI_Request q;
        st.MPI_ERROR = 4242;
        CHECK_OK(MPI_Recv(r, 2, MPI_INT, 1, 30, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_ERROR == 4242, "MPI_Recv wrote MPI_ERROR: %d", st.MPI_ERROR);
        CHECK_OK(MPI_Irecv(r, 2, MPI_INT, 1, 31, MPI_COMM_WORLD, &q));
        CHECK_OK(MPI_Wait(&q, &st));
        CHECK(st.MPI_ERROR == 4242, "MPI_Wait wrote MPI_ERROR: %d", st.MPI_ERROR);
        /* MPICH 4.0 writes it in a probe, a test and a truncated receive:
         * those are checked on shmpi only. */
#ifdef SHMPI_MPI_H
        const int shmpi = 1;
#else
        const int shmpi = 0;
#endif
        CHECK_OK(MPI_Probe(1, 32, MPI_COMM_WORLD, &st));
        CHECK(!shmpi || st.MPI_ERROR == 4242, "MPI_Probe wrote MPI_ERROR: %d", st.MPI_ERROR);
        CHECK_OK(MPI_Recv(r, 2, MPI_INT, 1, 32, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_OK(MPI_Irecv(r, 2, MPI_INT, 1, 33, MPI_COMM_WORLD, &q));
        for (long i = 0; i < 100000000 && !flag; i++) CHECK_OK(MPI_Test(&q, &flag, &st));
        CHECK(flag && (!shmpi || st.MPI_ERROR == 4242), "MPI_Test wrote MPI_ERROR: %d",
              st.MPI_ERROR);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int rc = MPI_Recv(r, 1, MPI_INT, 1, 34, MPI_COMM_WORLD, &st);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE && (!shmpi || st.MPI_ERROR == 4242),
              "truncated MPI_Recv: class %d, MPI_ERROR %d", cls, st.MPI_ERROR);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    }

    MPI_Type_free(&pair);
    MPI_Type_free(&quad);
    MPI_Type_free(&t_id);
    MPI_Type_free(&t_id_raw);
    MPI_Type_free(&t_idi);
    CHECK(pair == MPI_DATATYPE_NULL, "MPI_Type_free did not null the handle");
    return ct_finish();
}
