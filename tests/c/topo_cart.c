/* ranks: 1 2 4 6 */
/* Cartesian topologies (MPI 4.1 §8.5): MPI_Dims_create balances the grid;
 * MPI_Cart_create lays rank r at the row-major coordinates of r; get,
 * cartdim, coords and rank agree; MPI_Cart_shift gives MPI_PROC_NULL off
 * the edge of a dimension that does not wrap and wraps one that does; a
 * halo exchange over the shifts; MPI_Neighbor_alltoall / allgather and
 * MPI_Ineighbor_alltoall put each neighbour's block in its slot (a block
 * sent to the neighbour behind lands in that one's slot ahead), on a
 * grid whose neighbours repeat (2 x 2, periodic: the neighbour behind is
 * the one ahead) too; MPI_Cart_sub keeps the marked dimensions; a grid
 * smaller than the communicator leaves the rest MPI_COMM_NULL; dup keeps
 * the topology; errors: no topology (MPI_ERR_TOPOLOGY), a grid too large,
 * fixed dims that do not divide (MPI_ERR_DIMS), and on shmpi a coordinate
 * off a dimension that does not wrap (MPI_ERR_RANK). */
#include "common.h"

static int me, n;

/* Checks the neighbourhood collectives on grid c of nd dimensions. */
static void neighbours(MPI_Comm c, int nd, const char *what)
{
    int r, nb[8];
    MPI_Comm_rank(c, &r);
    for (int d = 0; d < nd; d++) CHECK_OK(MPI_Cart_shift(c, d, 1, &nb[2 * d], &nb[2 * d + 1]));
    int send[8], recv[8], gath[8], irecv[8];
    for (int j = 0; j < 2 * nd; j++) {
        send[j] = 100 * r + j;
        recv[j] = gath[j] = irecv[j] = -1;
    }
    CHECK_OK(MPI_Neighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, c));
    CHECK_OK(MPI_Neighbor_allgather(&r, 1, MPI_INT, gath, 1, MPI_INT, c));
    MPI_Request rq;
    CHECK_OK(MPI_Ineighbor_alltoall(send, 1, MPI_INT, irecv, 1, MPI_INT, c, &rq));
    CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int i = 0; i < 2 * nd; i++) {
        /* Slot 2d comes from the neighbour behind, which sent its block
         * 2d + 1 (ahead); slot 2d + 1 from the one ahead, its block 2d. */
        int want = nb[i] == MPI_PROC_NULL ? -1 : 100 * nb[i] + (i ^ 1);
        CHECK(recv[i] == want, "%s alltoall slot %d: %d, not %d", what, i, recv[i], want);
        CHECK(irecv[i] == want, "%s ialltoall slot %d: %d, not %d", what, i, irecv[i], want);
        int wg = nb[i] == MPI_PROC_NULL ? -1 : nb[i];
        CHECK(gath[i] == wg, "%s allgather slot %d: %d, not %d", what, i, gath[i], wg);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    int dims[2] = {0, 0};
    CHECK_OK(MPI_Dims_create(n, 2, dims));
    CHECK(dims[0] * dims[1] == n && dims[0] >= dims[1], "dims %d x %d", dims[0], dims[1]);
    int d72[2] = {0, 0};
    CHECK_OK(MPI_Dims_create(72, 2, d72));
    CHECK(d72[0] == 9 && d72[1] == 8, "72 in 2: %d x %d (as balanced as can be: 9 x 8)", d72[0],
          d72[1]);
    int d12[3] = {0, 0, 0};
    CHECK_OK(MPI_Dims_create(12, 3, d12));
    CHECK(d12[0] == 3 && d12[1] == 2 && d12[2] == 2, "12 in 3: %d %d %d", d12[0], d12[1], d12[2]);

    int periods[2] = {1, 0};
    MPI_Comm cart;
    CHECK_OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN);
    int status = -1, nd = -1, r = -1;
    CHECK_OK(MPI_Topo_test(cart, &status));
    CHECK(status == MPI_CART, "topo_test %d", status);
    CHECK_OK(MPI_Topo_test(MPI_COMM_WORLD, &status));
    CHECK(status == MPI_UNDEFINED, "topo_test of world %d", status);
    CHECK_OK(MPI_Cartdim_get(cart, &nd));
    CHECK(nd == 2, "cartdim %d", nd);
    MPI_Comm_rank(cart, &r);
    CHECK(r == me, "rank %d in the grid, %d in the world", r, me);
    int gd[2], gp[2], gc[2], cc[2];
    CHECK_OK(MPI_Cart_get(cart, 2, gd, gp, gc));
    CHECK(gd[0] == dims[0] && gd[1] == dims[1] && gp[0] == 1 && gp[1] == 0, "cart_get");
    CHECK(gc[0] == me / dims[1] && gc[1] == me % dims[1], "coords %d %d", gc[0], gc[1]);
    CHECK_OK(MPI_Cart_coords(cart, me, 2, cc));
    CHECK(cc[0] == gc[0] && cc[1] == gc[1], "cart_coords");
    int back = -1;
    CHECK_OK(MPI_Cart_rank(cart, cc, &back));
    CHECK(back == me, "cart_rank %d", back);
    int wrap[2] = {gc[0] + dims[0], gc[1]};
    CHECK_OK(MPI_Cart_rank(cart, wrap, &back));
    CHECK(back == me, "a wrapped coordinate gave %d", back);
#ifdef SHMPI_MPI_H
    /* (Erroneous, MPI 4.1 §8.5.5; MPICH 4.0 and Open MPI 4.1 answer a
     * rank.) */
    int off[2] = {gc[0], dims[1]};
    CHECK(ct_class(MPI_Cart_rank(cart, off, &back)) == MPI_ERR_RANK,
          "a coordinate off a dimension that does not wrap");
#endif

    /* Shifts. */
    int src, dst;
    CHECK_OK(MPI_Cart_shift(cart, 0, 1, &src, &dst));
    CHECK(src == ((gc[0] + dims[0] - 1) % dims[0]) * dims[1] + gc[1] &&
              dst == ((gc[0] + 1) % dims[0]) * dims[1] + gc[1],
          "shift 0: %d %d", src, dst);
    CHECK_OK(MPI_Cart_shift(cart, 1, 1, &src, &dst));
    CHECK(src == (gc[1] == 0 ? MPI_PROC_NULL : me - 1) &&
              dst == (gc[1] == dims[1] - 1 ? MPI_PROC_NULL : me + 1),
          "shift 1: %d %d", src, dst);
    /* A halo exchange along dimension 1. */
    int halo = -5;
    CHECK_OK(MPI_Sendrecv(&me, 1, MPI_INT, dst, 4, &halo, 1, MPI_INT, src, 4, cart,
                          MPI_STATUS_IGNORE));
    CHECK(halo == (src == MPI_PROC_NULL ? -5 : src), "halo %d from %d", halo, src);

    neighbours(cart, 2, "grid");

    /* A grid whose neighbours repeat: every dimension periodic. Block s
     * lands in slot s ^ 1 whatever the extent (MPI 4.1 §8.6, the erratum
     * of mpi-forum/mpi-issues#153); MPICH 4.0 gets the 1 x 1 torus wrong
     * (and Open MPI 4.1 the nonblocking form of both). */
#ifdef SHMPI_MPI_H
    if (n == 4 || n == 1) {
#else
    if (n == 4) {
#endif
        int pd[2] = {n == 4 ? 2 : 1, n == 4 ? 2 : 1}, pp[2] = {1, 1};
        MPI_Comm torus;
        CHECK_OK(MPI_Cart_create(MPI_COMM_WORLD, 2, pd, pp, 1, &torus));
        neighbours(torus, 2, "torus");
        MPI_Comm_free(&torus);
    }

    /* Rows: keep dimension 1. */
    int keep[2] = {0, 1};
    MPI_Comm row;
    CHECK_OK(MPI_Cart_sub(cart, keep, &row));
    int rs, rr, rnd;
    MPI_Comm_size(row, &rs);
    MPI_Comm_rank(row, &rr);
    CHECK_OK(MPI_Cartdim_get(row, &rnd));
    CHECK(rs == dims[1] && rr == gc[1] && rnd == 1, "row: size %d rank %d dims %d", rs, rr, rnd);
    int sum = 0;
    CHECK_OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, row));
    int row0 = gc[0] * dims[1];
    CHECK(sum == dims[1] * row0 + dims[1] * (dims[1] - 1) / 2, "row sum %d", sum);
    MPI_Comm_free(&row);

    /* Dup keeps the topology. */
    MPI_Comm dup;
    CHECK_OK(MPI_Comm_dup(cart, &dup));
    CHECK_OK(MPI_Topo_test(dup, &status));
    CHECK(status == MPI_CART, "dup's topology %d", status);
    MPI_Comm_free(&dup);

    /* A grid smaller than the communicator. */
    if (n > 1) {
        int small = n - 1, p0 = 0, mapped = -7;
        MPI_Comm part;
        CHECK_OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &small, &p0, 0, &part));
        CHECK((me < n - 1) == (part != MPI_COMM_NULL), "rank %d: part %s", me,
              part == MPI_COMM_NULL ? "null" : "made");
        if (part != MPI_COMM_NULL) MPI_Comm_free(&part);
        CHECK_OK(MPI_Cart_map(MPI_COMM_WORLD, 1, &small, &p0, &mapped));
        CHECK(mapped == (me < n - 1 ? me : MPI_UNDEFINED), "cart_map %d", mapped);
    }

    /* Errors. */
    CHECK(ct_class(MPI_Cart_shift(MPI_COMM_WORLD, 0, 1, &src, &dst)) == MPI_ERR_TOPOLOGY,
          "a shift without a topology");
    int big = n + 1, bp = 0;
    MPI_Comm none = MPI_COMM_NULL;
    CHECK(ct_class(MPI_Cart_create(MPI_COMM_WORLD, 1, &big, &bp, 0, &none)) != MPI_SUCCESS,
          "a grid larger than the communicator");
    int fixed[2] = {5, 0};
    CHECK(ct_class(MPI_Dims_create(12, 2, fixed)) == MPI_ERR_DIMS, "12 nodes with a fixed 5");

    MPI_Comm_free(&cart);
    return ct_finish();
}
