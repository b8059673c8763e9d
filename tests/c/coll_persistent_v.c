/* ranks: 1 2 3 */
/* Persistent v, w and neighbourhood collectives (MPI 4.1 §6.13, §8.7):
 * MPI_Gatherv_init, Scatterv_init, Allgatherv_init, Alltoallv_init,
 * Alltoallw_init, Reduce_scatter_init, two rounds each with new data;
 * on a periodic ring (MPI_Cart_create) MPI_Neighbor_allgather_init,
 * alltoall_init, allgatherv_init, alltoallv_init and alltoallw_init, two
 * of them started in different orders on even and odd ranks (they match
 * by their inits' order, also on one or two ranks where a process is
 * both its neighbours); on shmpi the count and displacement arrays may
 * change after the init (they are read there), and MPI_IN_PLACE in a
 * neighbourhood init is MPI_ERR_BUFFER. */
#include "common.h"
#include <stddef.h>

#define MAXP 8

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (p > MAXP) MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Request rq[6];
    MPI_Status sts[6];

    /* Rank r contributes r + 1 ints; blocks laid out in reverse rank order
     * at the receiver. */
    int counts[MAXP], displs[MAXP], total = 0;
    for (int r = p - 1; r >= 0; r--) {
        counts[r] = r + 1;
        displs[r] = total;
        total += r + 1;
    }
    int sb[MAXP], gv[64], sv_src[64], sv_dst[MAXP], agv[64];
    int root_g = p - 1, root_s = 0;
    CHECK_OK(MPI_Gatherv_init(sb, me + 1, MPI_INT, gv, counts, displs, MPI_INT, root_g,
                              MPI_COMM_WORLD, MPI_INFO_NULL, &rq[0]));
    CHECK_OK(MPI_Scatterv_init(sv_src, counts, displs, MPI_INT, sv_dst, me + 1, MPI_INT, root_s,
                               MPI_COMM_WORLD, MPI_INFO_NULL, &rq[1]));
    CHECK_OK(MPI_Allgatherv_init(sb, me + 1, MPI_INT, agv, counts, displs, MPI_INT,
                                 MPI_COMM_WORLD, MPI_INFO_NULL, &rq[2]));

    /* Alltoallv: rank r sends k + 1 ints to rank k (values 1000 r + k),
     * received r + 1 from each at 8 r. */
    int a2s[64], a2r[64], sc[MAXP], sd[MAXP], rc[MAXP], rd[MAXP];
    for (int k = 0; k < p; k++) {
        sc[k] = k + 1, sd[k] = 8 * k;
        rc[k] = me + 1, rd[k] = 8 * k;
    }
    CHECK_OK(MPI_Alltoallv_init(a2s, sc, sd, MPI_INT, a2r, rc, rd, MPI_INT, MPI_COMM_WORLD,
                                MPI_INFO_NULL, &rq[3]));

    /* Alltoallw: one int to each rank, received as a double-spaced int
     * array (byte displacements, a type per rank). */
    int ws[MAXP], wr[2 * MAXP], wsc[MAXP], wsd[MAXP], wrc[MAXP], wrd[MAXP];
    MPI_Datatype wst[MAXP], wrt[MAXP];
    for (int k = 0; k < p; k++) {
        wsc[k] = 1, wsd[k] = k * (int)sizeof(int), wst[k] = MPI_INT;
        wrc[k] = 1, wrd[k] = 2 * k * (int)sizeof(int), wrt[k] = MPI_INT;
    }
    CHECK_OK(MPI_Alltoallw_init(ws, wsc, wsd, wst, wr, wrc, wrd, wrt, MPI_COMM_WORLD,
                                MPI_INFO_NULL, &rq[4]));

    /* Reduce_scatter: rank k gets counts[k] sums. */
    int rss[64], rsr[MAXP];
    CHECK_OK(MPI_Reduce_scatter_init(rss, rsr, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                     MPI_INFO_NULL, &rq[5]));

    if (OURS) {
        /* The arrays were read at the init. */
        for (int k = 0; k < p; k++) counts[k] = displs[k] = sc[k] = rc[k] = -7;
    }

    for (int round = 0; round < 2; round++) {
        for (int k = 0; k < me + 1; k++) sb[k] = 100 * me + k + round;
        for (int r = 0; r < p; r++)
            for (int k = 0; k < r + 1; k++) {
                /* the reverse layout: rank r's block */
                int d = 0;
                for (int q = p - 1; q > r; q--) d += q + 1;
                sv_src[d + k] = 10 * r + k + round;
            }
        for (int k = 0; k < p; k++)
            for (int j = 0; j < k + 1; j++) a2s[8 * k + j] = 1000 * me + k + round;
        for (int k = 0; k < p; k++) ws[k] = 100 * me + k + round;
        for (int k = 0; k < total; k++) rss[k] = me + k + round;
        for (int k = 0; k < 64; k++) gv[k] = agv[k] = a2r[k] = -1;
        for (int k = 0; k < 2 * MAXP; k++) wr[k] = -1;
        CHECK_OK(MPI_Startall(6, rq));
        CHECK_OK(MPI_Waitall(6, rq, sts));

        int d = 0;
        for (int r = p - 1; r >= 0; r--) {
            for (int k = 0; k < r + 1; k++) {
                int want = 100 * r + k + round;
                if (me == root_g)
                    CHECK(gv[d + k] == want, "round %d gatherv from %d[%d]: %d want %d", round,
                          r, k, gv[d + k], want);
                CHECK(agv[d + k] == want, "round %d allgatherv from %d[%d]: %d want %d", round,
                      r, k, agv[d + k], want);
            }
            d += r + 1;
        }
        for (int k = 0; k < me + 1; k++)
            CHECK(sv_dst[k] == 10 * me + k + round, "round %d scatterv[%d]: %d", round, k,
                  sv_dst[k]);
        for (int r = 0; r < p; r++) {
            for (int j = 0; j < me + 1; j++)
                CHECK(a2r[8 * r + j] == 1000 * r + me + round,
                      "round %d alltoallv from %d[%d]: %d", round, r, j, a2r[8 * r + j]);
            CHECK(wr[2 * r] == 100 * r + me + round && wr[2 * r + 1] == -1,
                  "round %d alltoallw from %d: %d %d", round, r, wr[2 * r], wr[2 * r + 1]);
        }
        /* Reduce_scatter deals the blocks out in rank order. */
        int my_off = 0;
        for (int q = 0; q < me; q++) my_off += q + 1;
        for (int k = 0; k < me + 1; k++) {
            int want = p * (my_off + k + round) + p * (p - 1) / 2;
            CHECK(rsr[k] == want, "round %d reduce_scatter[%d]: %d want %d", round, k, rsr[k],
                  want);
        }
    }
    for (int i = 0; i < 6; i++) CHECK_OK(MPI_Request_free(&rq[i]));

    /* Neighbourhood: a periodic ring. */
    MPI_Comm ring;
    int dims[1] = {p}, periods[1] = {1};
    CHECK_OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    int left = (me + p - 1) % p, right = (me + 1) % p;
    MPI_Request nr[5];
    int ag[2], a2[2], a2in[2], agv2[4], agc[2] = {1, 1}, agd[2] = {2, 0};
    int vs[3], vsc[2] = {1, 2}, vsd[2] = {0, 1}, vr[4], vrc[2] = {2, 1}, vrd[2] = {0, 3};
    int wv[2], wrv[4], nwc[2] = {1, 1}, nwrc[2] = {1, 1};
    MPI_Aint nwsd[2] = {0, sizeof(int)}, nwrd[2] = {3 * sizeof(int), 0};
    MPI_Datatype nwt[2] = {MPI_INT, MPI_INT};
    int mine = -1;
    CHECK_OK(MPI_Neighbor_allgather_init(&mine, 1, MPI_INT, ag, 1, MPI_INT, ring, MPI_INFO_NULL,
                                         &nr[0]));
    CHECK_OK(MPI_Neighbor_alltoall_init(a2in, 1, MPI_INT, a2, 1, MPI_INT, ring, MPI_INFO_NULL,
                                        &nr[1]));
    CHECK_OK(MPI_Neighbor_allgatherv_init(&mine, 1, MPI_INT, agv2, agc, agd, MPI_INT, ring,
                                          MPI_INFO_NULL, &nr[2]));
    CHECK_OK(MPI_Neighbor_alltoallv_init(vs, vsc, vsd, MPI_INT, vr, vrc, vrd, MPI_INT, ring,
                                         MPI_INFO_NULL, &nr[3]));
    CHECK_OK(MPI_Neighbor_alltoallw_init(wv, nwc, nwsd, nwt, wrv, nwrc, nwrd, nwt, ring,
                                         MPI_INFO_NULL, &nr[4]));
    for (int round = 0; round < 2; round++) {
        mine = 10 * me + round;
        a2in[0] = 100 * me + round;     /* to the left */
        a2in[1] = 100 * me + 50 + round; /* to the right */
        vs[0] = 1000 * me + round;      /* 1 to the left */
        vs[1] = vs[2] = 2000 * me + round; /* 2 to the right */
        wv[0] = 3000 * me + round, wv[1] = 4000 * me + round;
        for (int k = 0; k < 4; k++) agv2[k] = vr[k] = wrv[k] = -1;
        ag[0] = ag[1] = a2[0] = a2[1] = -1;
        /* Different start orders on even and odd ranks. */
        if (me % 2 == 0) {
            CHECK_OK(MPI_Start(&nr[0]));
            CHECK_OK(MPI_Start(&nr[1]));
        } else {
            CHECK_OK(MPI_Start(&nr[1]));
            CHECK_OK(MPI_Start(&nr[0]));
        }
        CHECK_OK(MPI_Startall(3, &nr[2]));
        CHECK_OK(MPI_Waitall(5, nr, sts));
        /* Slot 0 is the left neighbour's, slot 1 the right one's. Where
         * one process is both (one rank), the block sent right fills slot
         * 0 (MPI 4.1 §8.6, mpi-forum/mpi-issues#153), which MPICH 4.0's
         * persistent alltoall(v / w) miss: shmpi's checks there. */
        int strict = OURS || p > 2;
        CHECK(ag[0] == 10 * left + round && ag[1] == 10 * right + round,
              "round %d allgather %d %d", round, ag[0], ag[1]);
        CHECK(!strict || (a2[0] == 100 * left + 50 + round && a2[1] == 100 * right + round),
              "round %d alltoall %d %d", round, a2[0], a2[1]);
        CHECK(agv2[2] == 10 * left + round && agv2[0] == 10 * right + round && agv2[1] == -1,
              "round %d allgatherv %d %d %d", round, agv2[0], agv2[1], agv2[2]);
        CHECK(!strict || (vr[0] == 2000 * left + round && vr[1] == 2000 * left + round &&
                  vr[3] == 1000 * right + round && vr[2] == -1),
              "round %d alltoallv %d %d %d %d", round, vr[0], vr[1], vr[2], vr[3]);
        CHECK(!strict || (wrv[3] == 4000 * left + round && wrv[0] == 3000 * right + round),
              "round %d alltoallw %d %d", round, wrv[3], wrv[0]);
    }
    for (int i = 0; i < 5; i++) CHECK_OK(MPI_Request_free(&nr[i]));
    if (OURS) {
        MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
        MPI_Request x = MPI_REQUEST_NULL;
        int rc = MPI_Neighbor_allgather_init(MPI_IN_PLACE, 1, MPI_INT, ag, 1, MPI_INT, ring,
                                             MPI_INFO_NULL, &x);
        CHECK(ct_class(rc) == MPI_ERR_BUFFER && x == MPI_REQUEST_NULL,
              "MPI_IN_PLACE in a neighbourhood init: class %d", ct_class(rc));
    }
    MPI_Comm_free(&ring);
    return ct_finish();
}
