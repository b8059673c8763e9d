/* ranks: 4 5 */
/* Graph topologies of MPI 1 and the general distributed graph
 * (MPI 4.1 §8.5.3, §8.5.4):
 * - MPI_Graph_create with the standard's example graph of four nodes
 *   (0: 1 3, 1: 0, 2: 3, 3: 0 2); a fifth rank gets MPI_COMM_NULL;
 *   MPI_Topo_test, MPI_Graphdims_get, MPI_Graph_get (truncated too),
 *   MPI_Graph_neighbors(_count) of every node, MPI_Graph_map, MPI_Comm_dup
 *   keeping the graph; the neighbourhood allgather and alltoall over it;
 * - bad graphs (more nodes than ranks, an edge to no node, a decreasing
 *   index), a graph query of a communicator without a graph, a rank that
 *   is no node;
 * - MPI_Dist_graph_create where rank 0 names every edge of a weighted ring
 *   and each rank names an unweighted self edge in a second graph: the
 *   neighbours and weights each rank learns, and a neighbourhood alltoall
 *   over it;
 * - on shmpi, a rank whose edge names no rank gets MPI_ERR_RANK and the
 *   others MPI_ERR_ARG rather than waiting for it. */
#include "common.h"

#if defined(__GNUC__) && !defined(__clang__)
/* MPI_UNWEIGHTED is a sentinel pointer, which gcc takes for an array. */
#pragma GCC diagnostic ignored "-Wstringop-overread"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

/* MPICH 4.0 refuses an MPI_Graph_get whose maxindex / maxedges are below
 * the graph's (on some ranks), and does not check the others' arguments
 * to MPI_Dist_graph_create: those checks are shmpi's. */

static const int IDX[4] = {2, 3, 4, 6};
static const int EDG[6] = {1, 3, 0, 3, 0, 2};

/* The neighbours of node r in the example graph. */
static int nbrs(int r, const int **out)
{
    int from = r == 0 ? 0 : IDX[r - 1];
    *out = EDG + from;
    return IDX[r] - from;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* 1. The standard's example graph. */
    MPI_Comm g;
    CHECK_OK(MPI_Graph_create(MPI_COMM_WORLD, 4, IDX, EDG, 0, &g));
    int newrank = -2;
    CHECK_OK(MPI_Graph_map(MPI_COMM_WORLD, 4, IDX, EDG, &newrank));
    CHECK(newrank == (me < 4 ? me : MPI_UNDEFINED), "graph_map gave %d", newrank);
    if (me >= 4) {
        CHECK(g == MPI_COMM_NULL, "rank %d is past the graph but got a communicator", me);
    } else {
        MPI_Comm_set_errhandler(g, MPI_ERRORS_RETURN);
        int st = -1, nn = -1, ne = -1, r = -1;
        CHECK_OK(MPI_Comm_rank(g, &r));
        CHECK(r == me, "graph rank %d want %d", r, me);
        CHECK_OK(MPI_Topo_test(g, &st));
        CHECK(st == MPI_GRAPH, "topo_test %d want MPI_GRAPH", st);
        CHECK_OK(MPI_Graphdims_get(g, &nn, &ne));
        CHECK(nn == 4 && ne == 6, "graphdims %d %d", nn, ne);
        int gi[4] = {-1, -1, -1, -1}, ge[6] = {-1, -1, -1, -1, -1, -1};
        CHECK_OK(MPI_Graph_get(g, 4, 6, gi, ge));
        for (int i = 0; i < 4; i++) CHECK(gi[i] == IDX[i], "index[%d] = %d", i, gi[i]);
        for (int i = 0; i < 6; i++) CHECK(ge[i] == EDG[i], "edges[%d] = %d", i, ge[i]);
        int ti[4] = {-1, -1, -1, -1}, te[6] = {-1, -1, -1, -1, -1, -1};
        if (OURS) CHECK_OK(MPI_Graph_get(g, 2, 3, ti, te));
        CHECK(!OURS || (ti[1] == 3 && ti[2] == -1 && te[2] == 0 && te[3] == -1),
              "a truncated graph_get wrote past its bounds: %d %d %d %d", ti[1], ti[2], te[2],
              te[3]);
        for (int v = 0; v < 4; v++) {
            const int *want;
            int k = nbrs(v, &want), c = -1, got[4] = {-1, -1, -1, -1};
            CHECK_OK(MPI_Graph_neighbors_count(g, v, &c));
            CHECK(c == k, "node %d has %d neighbours, want %d", v, c, k);
            CHECK_OK(MPI_Graph_neighbors(g, v, 4, got));
            for (int i = 0; i < k; i++)
                CHECK(got[i] == want[i], "node %d neighbour %d: %d want %d", v, i, got[i],
                      want[i]);
        }

        /* Neighbourhood collectives: slot i is neighbour i's. */
        const int *mine;
        int k = nbrs(me, &mine);
        int ga[2] = {-1, -1};
        CHECK_OK(MPI_Neighbor_allgather(&me, 1, MPI_INT, ga, 1, MPI_INT, g));
        for (int i = 0; i < k; i++)
            CHECK(ga[i] == mine[i], "allgather slot %d: %d want %d", i, ga[i], mine[i]);
        int sb[2], rb[2] = {-1, -1};
        for (int j = 0; j < k; j++) sb[j] = 100 * me + mine[j];
        CHECK_OK(MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, g));
        for (int i = 0; i < k; i++)
            CHECK(rb[i] == 100 * mine[i] + me, "alltoall slot %d: %d want %d", i, rb[i],
                  100 * mine[i] + me);

        MPI_Comm d;
        CHECK_OK(MPI_Comm_dup(g, &d));
        CHECK_OK(MPI_Topo_test(d, &st));
        CHECK_OK(MPI_Graphdims_get(d, &nn, &ne));
        CHECK(st == MPI_GRAPH && nn == 4 && ne == 6, "dup: %d %d %d", st, nn, ne);
        MPI_Comm_free(&d);

        /* A rank that is no node, and queries that need a graph. */
        int c = -1;
        int rc = MPI_Graph_neighbors_count(g, 4, &c);
        CHECK(ct_class(rc) == MPI_ERR_RANK, "neighbours of node 4: class %d", ct_class(rc));
        MPI_Comm_free(&g);
    }
    int nn = -1, ne = -1;
    int rc = MPI_Graphdims_get(MPI_COMM_WORLD, &nn, &ne);
    CHECK(ct_class(rc) == MPI_ERR_TOPOLOGY, "graphdims of MPI_COMM_WORLD: class %d",
          ct_class(rc));

    /* 2. Bad graphs: every rank passes the same, so every rank refuses. */
    {
        int idx[6] = {1, 2, 3, 4, 5, 6}, edg[6] = {1, 2, 3, 4, 5, 0};
        MPI_Comm b = MPI_COMM_NULL;
        int big = n + 1;
        int *bidx = malloc(sizeof(int) * big), *bedg = malloc(sizeof(int) * big);
        for (int i = 0; i < big; i++) bidx[i] = i + 1, bedg[i] = (i + 1) % big;
        rc = MPI_Graph_create(MPI_COMM_WORLD, big, bidx, bedg, 0, &b);
        CHECK(rc != MPI_SUCCESS && b == MPI_COMM_NULL, "%d nodes on %d ranks: rc %d", big, n,
              rc);
        free(bidx);
        free(bedg);
        int e3[3] = {1, 7, 0}, i3[3] = {1, 2, 3};
        rc = MPI_Graph_create(MPI_COMM_WORLD, 3, i3, e3, 0, &b);
        CHECK(rc != MPI_SUCCESS, "an edge to node 7 of 3 was taken");
        int id[3] = {2, 1, 3};
        rc = MPI_Graph_create(MPI_COMM_WORLD, 3, id, edg, 0, &b);
        CHECK(rc != MPI_SUCCESS, "a decreasing index was taken");
        if (OURS) {
            rc = MPI_Graph_create(MPI_COMM_WORLD, 3, i3, e3, 0, &b);
            CHECK(ct_class(rc) == MPI_ERR_ARG, "edge to no node: class %d", ct_class(rc));
        }
        (void)idx;
    }

    /* 3. MPI_Dist_graph_create: rank 0 names the ring i -> i + 1 with
     *    weight 10 + i; the others name nothing. */
    {
        int *src = malloc(sizeof(int) * n), *deg = malloc(sizeof(int) * n);
        int *dst = malloc(sizeof(int) * n), *w = malloc(sizeof(int) * n);
        for (int i = 0; i < n; i++) src[i] = i, deg[i] = 1, dst[i] = (i + 1) % n, w[i] = 10 + i;
        MPI_Comm dg;
        CHECK_OK(MPI_Dist_graph_create(MPI_COMM_WORLD, me == 0 ? n : 0, src, deg, dst, w,
                                       MPI_INFO_NULL, 0, &dg));
        int st = -1, in = -1, out = -1, wt = -1;
        CHECK_OK(MPI_Topo_test(dg, &st));
        CHECK(st == MPI_DIST_GRAPH, "topo_test %d", st);
        CHECK_OK(MPI_Dist_graph_neighbors_count(dg, &in, &out, &wt));
        CHECK(in == 1 && out == 1 && wt == 1, "counts %d %d %d", in, out, wt);
        int s1 = -1, sw1 = -1, d1 = -1, dw1 = -1;
        CHECK_OK(MPI_Dist_graph_neighbors(dg, 1, &s1, &sw1, 1, &d1, &dw1));
        int prev = (me + n - 1) % n;
        CHECK(s1 == prev && sw1 == 10 + prev, "in-neighbour %d (%d) want %d (%d)", s1, sw1, prev,
              10 + prev);
        CHECK(d1 == (me + 1) % n && dw1 == 10 + me, "out-neighbour %d (%d)", d1, dw1);
        int got = -1, mine = 1000 + me;
        CHECK_OK(MPI_Neighbor_alltoall(&mine, 1, MPI_INT, &got, 1, MPI_INT, dg));
        CHECK(got == 1000 + prev, "ring alltoall got %d want %d", got, 1000 + prev);
        MPI_Comm_free(&dg);

        /* Each rank names its own self edge, unweighted. */
        int one = 1;
        CHECK_OK(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &me, &one, &me, MPI_UNWEIGHTED,
                                       MPI_INFO_NULL, 0, &dg));
        CHECK_OK(MPI_Dist_graph_neighbors_count(dg, &in, &out, &wt));
        CHECK(in == 1 && out == 1 && wt == 0, "self: counts %d %d %d", in, out, wt);
        CHECK_OK(MPI_Dist_graph_neighbors(dg, 1, &s1, MPI_UNWEIGHTED, 1, &d1, MPI_UNWEIGHTED));
        CHECK(s1 == me && d1 == me, "self: %d %d", s1, d1);
        got = -1;
        CHECK_OK(MPI_Neighbor_allgather(&mine, 1, MPI_INT, &got, 1, MPI_INT, dg));
        CHECK(got == mine, "self allgather got %d", got);
        MPI_Comm_free(&dg);

        /* 4. One rank names an edge to no rank: it is refused there, and
         *    the others learn it instead of waiting. */
        if (OURS) {
            int bad = me == n - 1 ? n + 3 : (me + 1) % n;
            dg = MPI_COMM_NULL;
            rc = MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &me, &one, &bad, MPI_UNWEIGHTED,
                                       MPI_INFO_NULL, 0, &dg);
            int want = me == n - 1 ? MPI_ERR_RANK : MPI_ERR_ARG;
            CHECK(ct_class(rc) == want && dg == MPI_COMM_NULL, "bad edge: class %d want %d",
                  ct_class(rc), want);
            /* A refused argument of the C layer (a negative n) likewise. */
            rc = MPI_Dist_graph_create(MPI_COMM_WORLD, me == 0 ? -1 : 0, src, deg, dst, w,
                                       MPI_INFO_NULL, 0, &dg);
            CHECK(rc != MPI_SUCCESS && dg == MPI_COMM_NULL, "negative n: rc %d", rc);
            /* And a null output pointer on one rank. */
            rc = MPI_Dist_graph_create(MPI_COMM_WORLD, 0, src, deg, dst, MPI_UNWEIGHTED,
                                       MPI_INFO_NULL, 0, me == n - 1 ? NULL : &dg);
            CHECK(ct_class(rc) == MPI_ERR_ARG, "null comm_dist_graph on rank %d: class %d",
                  n - 1, ct_class(rc));
        }
        free(src);
        free(deg);
        free(dst);
        free(w);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return ct_finish();
}
