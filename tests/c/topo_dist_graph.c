/* ranks: 3 4 */
/* Distributed graph topologies (MPI 4.1 §8.5.4): each rank listens to the
 * rank before it and to itself, and talks to itself and the two after it
 * (a ring; weights on the first graph, MPI_UNWEIGHTED on the second).
 * MPI_Topo_test says MPI_DIST_GRAPH; MPI_Dist_graph_neighbors_count and
 * _neighbors give back the lists and weights in order; the neighbourhood
 * collectives (allgather, alltoall, alltoallv with its own counts and
 * displacements, alltoallw with a type and byte displacement per
 * neighbour, blocking and not, and the nonblocking allgatherv) deliver each block from
 * in-neighbour i to slot i, a process that is its own neighbour too; on
 * shmpi a neighbour out of range is refused (MPICH 4.0 takes it). From 3
 * ranks the three neighbours on each side are distinct. */
#include "common.h"
#include <stddef.h>

#if defined(__GNUC__) && !defined(__clang__)
/* MPI_UNWEIGHTED is a sentinel pointer, which gcc takes for an array. */
#pragma GCC diagnostic ignored "-Wstringop-overread"
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int prev = (me + n - 1) % n;
    int srcs[2] = {prev, me}, sw[2] = {5, 1};
    int dsts[3] = {me, (me + 1) % n, (me + 2) % n}, dw[3] = {1, 5, 2};
    /* Who sends to me: my prev (its dsts[1]) and me (dsts[0]); the rank
     * two before me also sends (its dsts[2]) but I do not listen to it,
     * so that one message would be unmatched: every rank lists it. */
    int srcs3[3] = {prev, me, (me + n - 2) % n}, sw3[3] = {5, 1, 2};
    MPI_Comm g;
    CHECK_OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 3, srcs3, sw3, 3, dsts, dw,
                                            MPI_INFO_NULL, 0, &g));
    (void)srcs;
    (void)sw;
    int st = -1, in = -1, out = -1, w = -1;
    CHECK_OK(MPI_Topo_test(g, &st));
    CHECK(st == MPI_DIST_GRAPH, "topo_test %d", st);
    CHECK_OK(MPI_Dist_graph_neighbors_count(g, &in, &out, &w));
    CHECK(in == 3 && out == 3 && w == 1, "counts %d %d %d", in, out, w);
    int gs[3], gsw[3], gd[3], gdw[3];
    CHECK_OK(MPI_Dist_graph_neighbors(g, 3, gs, gsw, 3, gd, gdw));
    for (int i = 0; i < 3; i++) {
        CHECK(gs[i] == srcs3[i] && gsw[i] == sw3[i], "source %d: %d (%d)", i, gs[i], gsw[i]);
        CHECK(gd[i] == dsts[i] && gdw[i] == dw[i], "dest %d: %d (%d)", i, gd[i], gdw[i]);
    }

    /* Allgather: slot i holds in-neighbour i's rank. */
    int ga[3] = {-1, -1, -1};
    CHECK_OK(MPI_Neighbor_allgather(&me, 1, MPI_INT, ga, 1, MPI_INT, g));
    for (int i = 0; i < 3; i++) CHECK(ga[i] == srcs3[i], "allgather slot %d: %d", i, ga[i]);

    /* Alltoall: block j of rank s goes to dsts[j]; I get from prev its
     * block 1, from me my block 0, from me - 2 its block 2. */
    int sb[3], rb[3] = {-1, -1, -1};
    for (int j = 0; j < 3; j++) sb[j] = 10 * me + j;
    CHECK_OK(MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, g));
    int want[3] = {10 * prev + 1, 10 * me + 0, 10 * ((me + n - 2) % n) + 2};
    for (int i = 0; i < 3; i++) CHECK(rb[i] == want[i], "alltoall slot %d: %d", i, rb[i]);

    /* Alltoallv: j + 1 ints to dsts[j], from sb2 at displacement 3 j;
     * received at displacement 4 i. */
    int sb2[9], rb2[12], sc[3] = {1, 2, 3}, sd[3] = {0, 3, 6}, rc[3] = {2, 1, 3},
                          rd[3] = {0, 4, 8};
    for (int k = 0; k < 9; k++) sb2[k] = 100 * me + k;
    for (int k = 0; k < 12; k++) rb2[k] = -1;
    CHECK_OK(MPI_Neighbor_alltoallv(sb2, sc, sd, MPI_INT, rb2, rc, rd, MPI_INT, g));
    /* From prev: its block 1 (2 ints from 3); from me: block 0 (1 int);
     * from me - 2: block 2 (3 ints from 6). */
    int from[3] = {prev, me, (me + n - 2) % n}, blk[3] = {1, 0, 2};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < rc[i]; k++)
            CHECK(rb2[rd[i] + k] == 100 * from[i] + sd[blk[i]] + k, "alltoallv slot %d[%d]: %d",
                  i, k, rb2[rd[i] + k]);

    /* Alltoallw: per neighbour a count, a byte displacement and a type.
     * Block 0 is one int, block 1 two ints picked with stride 2, block 2
     * three shorts; slot i receives block blk[i] of from[i], laid out in
     * a struct: two ints, one int, three shorts. Then the nonblocking
     * form again. */
    {
        struct wsend {
            int i[8];
            short s[4];
        } sw_;
        struct wrecv {
            int a[2];
            int pad;
            int b;
            short c[3];
        } rw;
        MPI_Datatype strided;
        CHECK_OK(MPI_Type_vector(2, 1, 2, MPI_INT, &strided));
        CHECK_OK(MPI_Type_commit(&strided));
        for (int k = 0; k < 8; k++) sw_.i[k] = 1000 * me + k;
        for (int k = 0; k < 4; k++) sw_.s[k] = (short)(100 * me + k);
        int wsc[3] = {1, 1, 3}, wrc[3] = {2, 1, 3};
        MPI_Aint wsd[3] = {0, 4 * sizeof(int), offsetof(struct wsend, s)};
        MPI_Aint wrd[3] = {offsetof(struct wrecv, a), offsetof(struct wrecv, b),
                           offsetof(struct wrecv, c)};
        MPI_Datatype wst[3] = {MPI_INT, strided, MPI_SHORT}, wrt[3] = {MPI_INT, MPI_INT, MPI_SHORT};
        for (int round = 0; round < 2; round++) {
            memset(&rw, 0xff, sizeof rw);
            if (round == 0) {
                CHECK_OK(MPI_Neighbor_alltoallw(&sw_, wsc, wsd, wst, &rw, wrc, wrd, wrt, g));
            } else {
                MPI_Request wq;
                CHECK_OK(MPI_Ineighbor_alltoallw(&sw_, wsc, wsd, wst, &rw, wrc, wrd, wrt, g, &wq));
                CHECK_OK(MPI_Wait(&wq, MPI_STATUS_IGNORE));
            }
            /* Slot 0: prev's block 1 (its ints 4 and 6); slot 1: my block
             * 0; slot 2: the shorts of me - 2. */
            CHECK(rw.a[0] == 1000 * prev + 4 && rw.a[1] == 1000 * prev + 6,
                  "alltoallw round %d slot 0: %d %d", round, rw.a[0], rw.a[1]);
            CHECK(rw.b == 1000 * me, "alltoallw round %d slot 1: %d", round, rw.b);
            CHECK(rw.pad == -1, "alltoallw round %d wrote between slots", round);
            int m2 = (me + n - 2) % n;
            for (int k = 0; k < 3; k++)
                CHECK(rw.c[k] == 100 * m2 + k, "alltoallw round %d slot 2[%d]: %d", round, k,
                      rw.c[k]);
        }
        MPI_Type_free(&strided);
    }

    /* Nonblocking allgatherv into spread slots. */
    int gv[9], gc[3] = {1, 1, 1}, gdsp[3] = {6, 3, 0};
    for (int k = 0; k < 9; k++) gv[k] = -1;
    MPI_Request rq;
    CHECK_OK(MPI_Ineighbor_allgatherv(&me, 1, MPI_INT, gv, gc, gdsp, MPI_INT, g, &rq));
    CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int i = 0; i < 3; i++) CHECK(gv[gdsp[i]] == srcs3[i], "allgatherv slot %d", i);
    MPI_Comm_free(&g);

    /* Unweighted. */
    MPI_Comm u;
    CHECK_OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &prev, MPI_UNWEIGHTED, 1,
                                            &dsts[1], MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &u));
    CHECK_OK(MPI_Dist_graph_neighbors_count(u, &in, &out, &w));
    CHECK(in == 1 && out == 1 && w == 0, "unweighted counts %d %d %d", in, out, w);
    int one = -1;
    CHECK_OK(MPI_Neighbor_allgather(&me, 1, MPI_INT, &one, 1, MPI_INT, u));
    CHECK(one == prev, "ring allgather %d", one);
    MPI_Comm_free(&u);

#ifdef SHMPI_MPI_H
    /* A neighbour out of range on rank 0 only: refused there, and the
     * others fail with it instead of waiting in the collective. */
    int bad = me == 0 ? n : prev;
    MPI_Comm none = MPI_COMM_NULL;
    int brc = MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &bad, MPI_UNWEIGHTED, 0, NULL,
                                             MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &none);
    CHECK(ct_class(brc) == (me == 0 ? MPI_ERR_RANK : MPI_ERR_ARG) && none == MPI_COMM_NULL,
          "a neighbour out of range on rank 0: class %d", ct_class(brc));
#endif
    return ct_finish();
}
