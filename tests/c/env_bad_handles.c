/* ranks: 1 2 shmpi-only */
/* Invalid handles (freed ones, handles of another kind, made-up values)
 * give the matching error class through MPI_ERRORS_RETURN and never
 * crash; the job goes on. MPI calls this erroneous, so what happens is
 * the implementation's choice: this checks shmpi's (docs/c-abi.md). */
#include "common.h"
#include <stdint.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rank, size, x = 1, y = 0, n = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* A freed communicator, a group passed as a communicator, a made-up
     * value. */
    MPI_Comm dup, saved;
    CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    saved = dup;
    CHECK_OK(MPI_Comm_free(&dup));
    CHECK(dup == MPI_COMM_NULL, "free sets MPI_COMM_NULL");
    CHECK(ct_class(MPI_Comm_size(saved, &n)) == MPI_ERR_COMM, "freed comm");
    MPI_Group g;
    CHECK_OK(MPI_Comm_group(MPI_COMM_WORLD, &g));
    CHECK(ct_class(MPI_Comm_rank((MPI_Comm)g, &n)) == MPI_ERR_COMM, "group as comm");
    CHECK(ct_class(MPI_Barrier((MPI_Comm)(intptr_t)0x7777)) == MPI_ERR_COMM, "made-up comm");

    /* Datatypes, groups, ops, requests, infos, errhandlers of the wrong
     * kind. */
    CHECK(ct_class(MPI_Send(&x, 1, (MPI_Datatype)MPI_COMM_WORLD, 0, 0, MPI_COMM_WORLD)) == MPI_ERR_TYPE,
          "comm as datatype");
    CHECK(ct_class(MPI_Group_size((MPI_Group)MPI_COMM_WORLD, &n)) == MPI_ERR_GROUP, "comm as group");
    CHECK(ct_class(MPI_Allreduce(&x, &y, 1, MPI_INT, (MPI_Op)MPI_INT, MPI_COMM_WORLD)) == MPI_ERR_OP,
          "datatype as op");
    CHECK(ct_class(MPI_Allreduce(&x, &y, 1, MPI_DOUBLE_INT, MPI_SUM, MPI_COMM_WORLD)) == MPI_ERR_OP,
          "SUM on a pair type");
    MPI_Request r = (MPI_Request)(intptr_t)0x5000abcd;
    CHECK(ct_class(MPI_Wait(&r, MPI_STATUS_IGNORE)) == MPI_ERR_REQUEST, "made-up request");
    /* A receive's handle kept after the receive completed (shmpi's light
     * receive handle names an engine slot, docs/c-abi.md): every call
     * refuses it, also once a new receive uses the same slot (receives
     * are posted until one does: the handle's low 30 bits are the slot),
     * which it leaves alone. */
    {
        enum { MAXQ = 64 };
        int a = -1, b[MAXQ], x = 7, flag = 0, nq = 0, reused = 0;
        MPI_Request q, copy, q2[MAXQ];
        CHECK_OK(MPI_Irecv(&a, 1, MPI_INT, rank, 99, MPI_COMM_WORLD, &q));
        copy = q;
        CHECK_OK(MPI_Send(&x, 1, MPI_INT, rank, 99, MPI_COMM_WORLD));
        CHECK_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        CHECK(a == 7 && q == MPI_REQUEST_NULL, "receive to self got %d", a);
        CHECK(ct_class(MPI_Wait(&copy, MPI_STATUS_IGNORE)) == MPI_ERR_REQUEST, "finished receive waited");
        const uintptr_t slot = ((uintptr_t)1 << 30) - 1;
        while (nq < MAXQ && !reused) {
            b[nq] = -1;
            CHECK_OK(MPI_Irecv(&b[nq], 1, MPI_INT, rank, 98, MPI_COMM_WORLD, &q2[nq]));
            reused = ((uintptr_t)q2[nq] & slot) == ((uintptr_t)copy & slot);
            nq++;
        }
        CHECK(reused, "no new receive took the slot of the finished one in %d tries", nq);
        CHECK(ct_class(MPI_Wait(&copy, MPI_STATUS_IGNORE)) == MPI_ERR_REQUEST, "stale handle, slot reused");
        CHECK(ct_class(MPI_Test(&copy, &flag, MPI_STATUS_IGNORE)) == MPI_ERR_REQUEST, "stale handle tested");
        CHECK(ct_class(MPI_Waitall(1, &copy, MPI_STATUSES_IGNORE)) != MPI_SUCCESS, "stale handle in Waitall");
        CHECK(ct_class(MPI_Cancel(&copy)) == MPI_ERR_REQUEST, "stale handle cancelled");
        CHECK(ct_class(MPI_Request_free(&copy)) == MPI_ERR_REQUEST, "stale handle freed");
        for (int k = 0; k < nq; k++) {
            int y = 100 + k;
            CHECK_OK(MPI_Send(&y, 1, MPI_INT, rank, 98, MPI_COMM_WORLD));
        }
        CHECK_OK(MPI_Waitall(nq, q2, MPI_STATUSES_IGNORE));
        for (int k = 0; k < nq; k++)
            CHECK(b[k] == 100 + k && q2[k] == MPI_REQUEST_NULL,
                  "receive %d beside a stale handle got %d", k, b[k]);
    }
    /* The same receive twice in one MPI_Waitall: refused for the second
     * entry, and the receive itself still completes, with its data. */
    {
        int a = -1, x = 5;
        MPI_Request q[2];
        CHECK_OK(MPI_Irecv(&a, 1, MPI_INT, rank, 97, MPI_COMM_WORLD, &q[0]));
        q[1] = q[0];
        CHECK_OK(MPI_Send(&x, 1, MPI_INT, rank, 97, MPI_COMM_WORLD));
        CHECK(ct_class(MPI_Waitall(2, q, MPI_STATUSES_IGNORE)) == MPI_ERR_REQUEST,
              "a receive given twice to Waitall");
        CHECK(a == 5 && q[0] == MPI_REQUEST_NULL, "the receive given twice got %d", a);
    }
    CHECK(ct_class(MPI_Info_set((MPI_Info)g, "k", "v")) == MPI_ERR_INFO, "group as info");
    CHECK(ct_class(MPI_Comm_set_errhandler(MPI_COMM_WORLD, (MPI_Errhandler)g)) != MPI_SUCCESS,
          "group as errhandler");
    MPI_Datatype t = MPI_INT;
    CHECK(ct_class(MPI_Type_free(&t)) == MPI_ERR_TYPE, "predefined type freed");
    MPI_Datatype v;
    CHECK_OK(MPI_Type_vector(2, 1, 2, MPI_INT, &v));
    CHECK(ct_class(MPI_Send(&x, 1, v, 0, 0, MPI_COMM_WORLD)) == MPI_ERR_TYPE, "uncommitted type");
    CHECK_OK(MPI_Type_free(&v));
    CHECK(ct_class(MPI_Group_free(&g)) == MPI_SUCCESS, "group free");
    CHECK(ct_class(MPI_Group_free(&g)) == MPI_ERR_GROUP, "double free of a group");
    /* The double free must not have put the slot on the free list twice. */
    MPI_Group g1, g2;
    int one = 0;
    CHECK_OK(MPI_Comm_group(MPI_COMM_WORLD, &g1));
    CHECK_OK(MPI_Group_incl(g1, 1, &one, &g2));
    CHECK(g1 != g2, "two live groups share a handle");
    int s1 = 0, s2 = 0;
    MPI_Group_size(g1, &s1);
    MPI_Group_size(g2, &s2);
    CHECK(s1 == size && s2 == 1, "group sizes %d %d", s1, s2);
    MPI_Group_free(&g1);
    MPI_Group_free(&g2);

    /* Error strings name the problem. */
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    int rc = MPI_Send(&x, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD);
    CHECK(ct_class(rc) == MPI_ERR_RANK, "bad rank");
    CHECK_OK(MPI_Error_string(rc, msg, &len));
    CHECK(strstr(msg, "MPI_ERR_RANK") != NULL, "message %s", msg);

    /* A null output pointer on one member of a collective constructor
     * fails there alone; the others get their communicator and are not
     * left waiting (each call below would hang them otherwise). */
    {
        MPI_Comm c = MPI_COMM_NULL;
        int last = rank == size - 1;
        rc = MPI_Comm_split(MPI_COMM_WORLD, 0, rank, last ? NULL : &c);
        CHECK(last ? ct_class(rc) == MPI_ERR_ARG : rc == MPI_SUCCESS, "split: rc %d", rc);
        if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
        rc = MPI_Comm_dup(MPI_COMM_WORLD, last ? NULL : &c);
        CHECK(last ? ct_class(rc) == MPI_ERR_ARG : rc == MPI_SUCCESS, "dup: rc %d", rc);
        if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
        int dims[1] = {size}, periods[1] = {0};
        rc = MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, last ? NULL : &c);
        CHECK(last ? ct_class(rc) == MPI_ERR_ARG : rc == MPI_SUCCESS, "cart: rc %d", rc);
        if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
        /* A null array on one member: every member fails, none waits. */
        c = MPI_COMM_NULL;
        rc = MPI_Cart_create(MPI_COMM_WORLD, 1, last ? NULL : dims, periods, 0, &c);
        CHECK(ct_class(rc) == MPI_ERR_ARG && c == MPI_COMM_NULL, "cart with null dims: rc %d",
              rc);
    }

    /* The job goes on. */
    x = rank + 1;
    CHECK_OK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(y == size * (size + 1) / 2, "allreduce after the errors gave %d", y);
    return ct_finish();
}
