/* ranks: 2 5 shmpi-only */
/* Persistent collectives on an intercommunicator (MPI 4.1 §6.13): the
 * even and the odd world ranks are the two groups; MPI_Barrier_init,
 * Bcast_init (MPI_ROOT / MPI_PROC_NULL on the root's side), Allreduce_init,
 * Reduce_init, Allgather_init, Alltoall_init and Gatherv_init, three
 * rounds with new data, the allreduce and the allgather started in
 * different orders on different members; MPI_Scan_init there is
 * MPI_ERR_COMM. shmpi only: MPICH 4.0's persistent allgather there gives
 * zeros and its MPI_Scan_init fails an assertion ("Only
 * intra-communicator allowed", mpir_coll.c) instead of an error. */
#include "common.h"

#define R 3
#define MAXP 8

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int wr, wn;
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    MPI_Comm_size(MPI_COMM_WORLD, &wn);
    if (wn > MAXP) MPI_Abort(MPI_COMM_WORLD, 2);
    int even = wr % 2 == 0;
    MPI_Comm local, ic;
    CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, even ? 0 : 1, wr, &local));
    CHECK_OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, even ? 1 : 0, 77, &ic));
    int me, n, rn;
    MPI_Comm_rank(ic, &me);
    MPI_Comm_size(ic, &n);
    MPI_Comm_remote_size(ic, &rn);
    /* The world ranks of the other group, in its order. */
    int theirs[MAXP];
    for (int j = 0; j < rn; j++) theirs[j] = even ? 2 * j + 1 : 2 * j;

    MPI_Request rq[7];
    /* 0 barrier, 1 bcast from the even group's rank 0, 2 allreduce,
     * 3 reduce to the odd group's rank 0, 4 allgather, 5 alltoall,
     * 6 gatherv to the even group's rank 0. */
    int bc[3], ar_s, ar_r, red_s, red_r = -1, ag_s, ag_r[MAXP], a2_s[MAXP], a2_r[MAXP];
    int gv_s[MAXP], gv_r[64], gv_c[MAXP], gv_d[MAXP];
    CHECK_OK(MPI_Barrier_init(ic, MPI_INFO_NULL, &rq[0]));
    int bc_root = even ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    CHECK_OK(MPI_Bcast_init(bc, 3, MPI_INT, bc_root, ic, MPI_INFO_NULL, &rq[1]));
    CHECK_OK(MPI_Allreduce_init(&ar_s, &ar_r, 1, MPI_INT, MPI_SUM, ic, MPI_INFO_NULL, &rq[2]));
    int red_root = even ? 0 : (me == 0 ? MPI_ROOT : MPI_PROC_NULL);
    CHECK_OK(MPI_Reduce_init(&red_s, &red_r, 1, MPI_INT, MPI_SUM, red_root, ic, MPI_INFO_NULL,
                             &rq[3]));
    CHECK_OK(MPI_Allgather_init(&ag_s, 1, MPI_INT, ag_r, 1, MPI_INT, ic, MPI_INFO_NULL, &rq[4]));
    CHECK_OK(MPI_Alltoall_init(a2_s, 1, MPI_INT, a2_r, 1, MPI_INT, ic, MPI_INFO_NULL, &rq[5]));
    int total = 0;
    for (int j = 0; j < rn; j++) {
        gv_c[j] = j + 1;
        gv_d[j] = total;
        total += j + 1;
    }
    int gv_root = even ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    CHECK_OK(MPI_Gatherv_init(gv_s, me + 1, MPI_INT, gv_r, gv_c, gv_d, MPI_INT, gv_root, ic,
                              MPI_INFO_NULL, &rq[6]));

    for (int round = 0; round < R; round++) {
        for (int k = 0; k < 3; k++) bc[k] = (even && me == 0) ? 1000 * round + k : -1;
        ar_s = wr + round;
        red_s = 10 * wr + round;
        ag_s = wr + 100 * round;
        for (int j = 0; j < rn; j++) a2_s[j] = 1000 * wr + 10 * j + round;
        for (int k = 0; k < me + 1; k++) gv_s[k] = 100 * wr + k + round;
        for (int k = 0; k < 64; k++) gv_r[k] = -1;
        CHECK_OK(MPI_Start(&rq[0]));
        CHECK_OK(MPI_Start(&rq[1]));
        if (me % 2 == 0) {
            CHECK_OK(MPI_Start(&rq[2]));
            CHECK_OK(MPI_Start(&rq[4]));
        } else {
            CHECK_OK(MPI_Start(&rq[4]));
            CHECK_OK(MPI_Start(&rq[2]));
        }
        CHECK_OK(MPI_Start(&rq[3]));
        CHECK_OK(MPI_Startall(2, &rq[5]));
        MPI_Status st[7];
        CHECK_OK(MPI_Waitall(7, rq, st));

        if (!even)
            for (int k = 0; k < 3; k++)
                CHECK(bc[k] == 1000 * round + k, "round %d bcast[%d] = %d", round, k, bc[k]);
        int want = 0;
        for (int j = 0; j < rn; j++) want += theirs[j] + round;
        CHECK(ar_r == want, "round %d allreduce %d want %d", round, ar_r, want);
        if (!even && me == 0) {
            int w = 0;
            for (int j = 0; j < rn; j++) w += 10 * theirs[j] + round;
            CHECK(red_r == w, "round %d reduce %d want %d", round, red_r, w);
        }
        for (int j = 0; j < rn; j++) {
            CHECK(ag_r[j] == theirs[j] + 100 * round, "round %d allgather[%d] = %d", round, j,
                  ag_r[j]);
            CHECK(a2_r[j] == 1000 * theirs[j] + 10 * me + round, "round %d alltoall[%d] = %d",
                  round, j, a2_r[j]);
        }
        if (even && me == 0)
            for (int j = 0; j < rn; j++)
                for (int k = 0; k < j + 1; k++)
                    CHECK(gv_r[gv_d[j] + k] == 100 * theirs[j] + k + round,
                          "round %d gatherv from %d[%d]: %d", round, j, k, gv_r[gv_d[j] + k]);
    }
    for (int i = 0; i < 7; i++) CHECK_OK(MPI_Request_free(&rq[i]));

    MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
    MPI_Request x = MPI_REQUEST_NULL;
    int rc = MPI_Scan_init(&ar_s, &ar_r, 1, MPI_INT, MPI_SUM, ic, MPI_INFO_NULL, &x);
    CHECK(ct_class(rc) == MPI_ERR_COMM && x == MPI_REQUEST_NULL, "scan_init: class %d",
          ct_class(rc));
    MPI_Comm_free(&ic);
    MPI_Comm_free(&local);
    return ct_finish();
}
