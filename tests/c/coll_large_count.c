/* ranks: 1 3 4 */
/* The large-count collectives (MPI 4.1 §19.2): the blocking, nonblocking
 * and persistent _c forms of bcast, gather(v), scatter(v), allgather(v),
 * alltoall(v/w), reduce, allreduce, reduce_scatter(_block), scan, exscan,
 * the neighbourhood _c forms on a ring, and MPI_Reduce_local_c, with
 * MPI_Count counts and MPI_Aint displacements; their results match what
 * the int forms give. A negative count is MPI_ERR_COUNT. Under MPICH 4.0
 * the persistent forms are skipped (its MPI_Bcast_init_c leaves the
 * non-roots waiting), so is the neighbourhood check on one process (its
 * left and right neighbour are the same, and MPICH's v and w forms order
 * the two messages the other way), and the negative count of
 * MPI_Allreduce_c (MPICH does not check it). */
#include "common.h"

#define N 3

static int me, p;

/* Runs `start`ed request `r` to its end (a nonblocking one), or starts a
 * persistent one twice. */
static void finish(MPI_Request *r, int persistent)
{
    if (!persistent) {
        CHECK_OK(MPI_Wait(r, MPI_STATUS_IGNORE));
        return;
    }
    for (int round = 0; round < 2; round++) {
        CHECK_OK(MPI_Start(r));
        CHECK_OK(MPI_Wait(r, MPI_STATUS_IGNORE));
    }
    MPI_Request_free(r);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int *sb = malloc(sizeof(int) * N * p), *rb = malloc(sizeof(int) * N * p);
    MPI_Count *counts = malloc(sizeof(MPI_Count) * p);
    MPI_Aint *displs = malloc(sizeof(MPI_Aint) * p), *bdispls = malloc(sizeof(MPI_Aint) * p);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * p);
    for (int i = 0; i < p; i++) {
        counts[i] = N;
        displs[i] = (MPI_Aint)i * N;
        bdispls[i] = (MPI_Aint)(i * N * sizeof(int));
        types[i] = MPI_INT;
    }
    MPI_Request r;

    /* form 0: blocking, 1: nonblocking, 2: persistent */
    for (int form = 0; form < (OURS ? 3 : 2); form++) {
        const char *fn = form == 0 ? "blocking" : form == 1 ? "nonblocking" : "persistent";
        /* Bcast_c */
        int v[N];
        for (int k = 0; k < N; k++) v[k] = me == 0 ? 70 + k : -1;
        if (form == 0) CHECK_OK(MPI_Bcast_c(v, (MPI_Count)N, MPI_INT, 0, MPI_COMM_WORLD));
        if (form == 1) CHECK_OK(MPI_Ibcast_c(v, (MPI_Count)N, MPI_INT, 0, MPI_COMM_WORLD, &r));
        if (form == 2)
            CHECK_OK(MPI_Bcast_init_c(v, (MPI_Count)N, MPI_INT, 0, MPI_COMM_WORLD,
                                      MPI_INFO_NULL, &r));
        if (form) finish(&r, form == 2);
        CHECK(v[0] == 70 && v[N - 1] == 70 + N - 1, "%s Bcast_c: %d", fn, v[0]);

        /* Gather_c / Gatherv_c at root 0, Allgather_c / Allgatherv_c */
        for (int k = 0; k < N; k++) sb[k] = 100 * me + k;
        for (int vform = 0; vform < 4; vform++) {
            for (int i = 0; i < N * p; i++) rb[i] = -1;
            int rc = MPI_SUCCESS;
            switch (vform) {
            case 0:
                rc = form == 0 ? MPI_Gather_c(sb, N, MPI_INT, rb, N, MPI_INT, 0, MPI_COMM_WORLD)
                     : form == 1
                         ? MPI_Igather_c(sb, N, MPI_INT, rb, N, MPI_INT, 0, MPI_COMM_WORLD, &r)
                         : MPI_Gather_init_c(sb, N, MPI_INT, rb, N, MPI_INT, 0, MPI_COMM_WORLD,
                                             MPI_INFO_NULL, &r);
                break;
            case 1:
                rc = form == 0 ? MPI_Gatherv_c(sb, N, MPI_INT, rb, counts, displs, MPI_INT, 0,
                                               MPI_COMM_WORLD)
                     : form == 1 ? MPI_Igatherv_c(sb, N, MPI_INT, rb, counts, displs, MPI_INT, 0,
                                                  MPI_COMM_WORLD, &r)
                                 : MPI_Gatherv_init_c(sb, N, MPI_INT, rb, counts, displs, MPI_INT,
                                                      0, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
                break;
            case 2:
                rc = form == 0 ? MPI_Allgather_c(sb, N, MPI_INT, rb, N, MPI_INT, MPI_COMM_WORLD)
                     : form == 1
                         ? MPI_Iallgather_c(sb, N, MPI_INT, rb, N, MPI_INT, MPI_COMM_WORLD, &r)
                         : MPI_Allgather_init_c(sb, N, MPI_INT, rb, N, MPI_INT, MPI_COMM_WORLD,
                                                MPI_INFO_NULL, &r);
                break;
            default:
                rc = form == 0 ? MPI_Allgatherv_c(sb, N, MPI_INT, rb, counts, displs, MPI_INT,
                                                  MPI_COMM_WORLD)
                     : form == 1 ? MPI_Iallgatherv_c(sb, N, MPI_INT, rb, counts, displs, MPI_INT,
                                                     MPI_COMM_WORLD, &r)
                                 : MPI_Allgatherv_init_c(sb, N, MPI_INT, rb, counts, displs,
                                                         MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                                                         &r);
            }
            CHECK_OK(rc);
            if (form) finish(&r, form == 2);
            if (me == 0 || vform >= 2)
                for (int i = 0; i < p; i++)
                    CHECK(rb[N * i + 1] == 100 * i + 1, "%s gather form %d: rb[%d] = %d", fn,
                          vform, N * i + 1, rb[N * i + 1]);
        }

        /* Scatter_c / Scatterv_c from root 0 */
        for (int i = 0; i < N * p; i++) sb[i] = 1000 + i;
        for (int vform = 0; vform < 2; vform++) {
            for (int k = 0; k < N; k++) rb[k] = -1;
            int rc;
            if (vform == 0)
                rc = form == 0 ? MPI_Scatter_c(sb, N, MPI_INT, rb, N, MPI_INT, 0, MPI_COMM_WORLD)
                     : form == 1
                         ? MPI_Iscatter_c(sb, N, MPI_INT, rb, N, MPI_INT, 0, MPI_COMM_WORLD, &r)
                         : MPI_Scatter_init_c(sb, N, MPI_INT, rb, N, MPI_INT, 0, MPI_COMM_WORLD,
                                              MPI_INFO_NULL, &r);
            else
                rc = form == 0 ? MPI_Scatterv_c(sb, counts, displs, MPI_INT, rb, N, MPI_INT, 0,
                                                MPI_COMM_WORLD)
                     : form == 1 ? MPI_Iscatterv_c(sb, counts, displs, MPI_INT, rb, N, MPI_INT, 0,
                                                   MPI_COMM_WORLD, &r)
                                 : MPI_Scatterv_init_c(sb, counts, displs, MPI_INT, rb, N, MPI_INT,
                                                       0, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
            CHECK_OK(rc);
            if (form) finish(&r, form == 2);
            CHECK(rb[0] == 1000 + N * me && rb[N - 1] == 1000 + N * me + N - 1,
                  "%s scatter form %d: %d", fn, vform, rb[0]);
        }

        /* Alltoall_c / Alltoallv_c / Alltoallw_c */
        for (int i = 0; i < N * p; i++) sb[i] = 10000 * me + i;
        for (int vform = 0; vform < 3; vform++) {
            for (int i = 0; i < N * p; i++) rb[i] = -1;
            int rc;
            if (vform == 0)
                rc = form == 0 ? MPI_Alltoall_c(sb, N, MPI_INT, rb, N, MPI_INT, MPI_COMM_WORLD)
                     : form == 1
                         ? MPI_Ialltoall_c(sb, N, MPI_INT, rb, N, MPI_INT, MPI_COMM_WORLD, &r)
                         : MPI_Alltoall_init_c(sb, N, MPI_INT, rb, N, MPI_INT, MPI_COMM_WORLD,
                                               MPI_INFO_NULL, &r);
            else if (vform == 1)
                rc = form == 0 ? MPI_Alltoallv_c(sb, counts, displs, MPI_INT, rb, counts, displs,
                                                 MPI_INT, MPI_COMM_WORLD)
                     : form == 1 ? MPI_Ialltoallv_c(sb, counts, displs, MPI_INT, rb, counts,
                                                    displs, MPI_INT, MPI_COMM_WORLD, &r)
                                 : MPI_Alltoallv_init_c(sb, counts, displs, MPI_INT, rb, counts,
                                                        displs, MPI_INT, MPI_COMM_WORLD,
                                                        MPI_INFO_NULL, &r);
            else
                rc = form == 0 ? MPI_Alltoallw_c(sb, counts, bdispls, types, rb, counts, bdispls,
                                                 types, MPI_COMM_WORLD)
                     : form == 1 ? MPI_Ialltoallw_c(sb, counts, bdispls, types, rb, counts,
                                                    bdispls, types, MPI_COMM_WORLD, &r)
                                 : MPI_Alltoallw_init_c(sb, counts, bdispls, types, rb, counts,
                                                        bdispls, types, MPI_COMM_WORLD,
                                                        MPI_INFO_NULL, &r);
            CHECK_OK(rc);
            if (form) finish(&r, form == 2);
            for (int i = 0; i < p; i++)
                CHECK(rb[N * i + 2] == 10000 * i + N * me + 2, "%s alltoall form %d: rb[%d] = %d",
                      fn, vform, N * i + 2, rb[N * i + 2]);
        }

        /* Reductions */
        for (int k = 0; k < N * p; k++) sb[k] = me + k;
        int tri = p * (p - 1) / 2;
        for (int red = 0; red < 6; red++) {
            for (int i = 0; i < N * p; i++) rb[i] = -1;
            int rc = MPI_SUCCESS;
            MPI_Comm w = MPI_COMM_WORLD;
            MPI_Info ni = MPI_INFO_NULL;
            switch (red) {
            case 0:
                rc = form == 0   ? MPI_Reduce_c(sb, rb, N, MPI_INT, MPI_SUM, 0, w)
                     : form == 1 ? MPI_Ireduce_c(sb, rb, N, MPI_INT, MPI_SUM, 0, w, &r)
                                 : MPI_Reduce_init_c(sb, rb, N, MPI_INT, MPI_SUM, 0, w, ni, &r);
                break;
            case 1:
                rc = form == 0   ? MPI_Allreduce_c(sb, rb, N, MPI_INT, MPI_SUM, w)
                     : form == 1 ? MPI_Iallreduce_c(sb, rb, N, MPI_INT, MPI_SUM, w, &r)
                                 : MPI_Allreduce_init_c(sb, rb, N, MPI_INT, MPI_SUM, w, ni, &r);
                break;
            case 2:
                rc = form == 0   ? MPI_Reduce_scatter_block_c(sb, rb, N, MPI_INT, MPI_SUM, w)
                     : form == 1 ? MPI_Ireduce_scatter_block_c(sb, rb, N, MPI_INT, MPI_SUM, w, &r)
                                 : MPI_Reduce_scatter_block_init_c(sb, rb, N, MPI_INT, MPI_SUM, w,
                                                                   ni, &r);
                break;
            case 3:
                rc = form == 0   ? MPI_Reduce_scatter_c(sb, rb, counts, MPI_INT, MPI_SUM, w)
                     : form == 1 ? MPI_Ireduce_scatter_c(sb, rb, counts, MPI_INT, MPI_SUM, w, &r)
                                 : MPI_Reduce_scatter_init_c(sb, rb, counts, MPI_INT, MPI_SUM, w,
                                                             ni, &r);
                break;
            case 4:
                rc = form == 0   ? MPI_Scan_c(sb, rb, N, MPI_INT, MPI_SUM, w)
                     : form == 1 ? MPI_Iscan_c(sb, rb, N, MPI_INT, MPI_SUM, w, &r)
                                 : MPI_Scan_init_c(sb, rb, N, MPI_INT, MPI_SUM, w, ni, &r);
                break;
            default:
                rc = form == 0   ? MPI_Exscan_c(sb, rb, N, MPI_INT, MPI_SUM, w)
                     : form == 1 ? MPI_Iexscan_c(sb, rb, N, MPI_INT, MPI_SUM, w, &r)
                                 : MPI_Exscan_init_c(sb, rb, N, MPI_INT, MPI_SUM, w, ni, &r);
            }
            CHECK_OK(rc);
            if (form) finish(&r, form == 2);
            if (red == 0 && me == 0)
                CHECK(rb[1] == tri + p, "%s Reduce_c: %d", fn, rb[1]);
            if (red == 1) CHECK(rb[1] == tri + p, "%s Allreduce_c: %d", fn, rb[1]);
            if (red == 2 || red == 3)
                CHECK(rb[1] == tri + p * (N * me + 1), "%s Reduce_scatter(%d): %d", fn, red,
                      rb[1]);
            if (red == 4)
                CHECK(rb[1] == me * (me + 1) / 2 + (me + 1), "%s Scan_c: %d", fn, rb[1]);
            if (red == 5 && me > 0)
                CHECK(rb[1] == me * (me - 1) / 2 + me, "%s Exscan_c: %d", fn, rb[1]);
        }
    }

    /* Neighbourhood _c forms on a periodic ring. */
    MPI_Comm ring;
    int dims[1] = {p}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    int left = (me + p - 1) % p, right = (me + 1) % p;
    int s2[2 * N], r2[2 * N];
    MPI_Count c2[2] = {N, N};
    MPI_Aint d2[2] = {0, N}, bd2[2] = {0, N * sizeof(int)};
    MPI_Datatype t2[2] = {MPI_INT, MPI_INT};
    for (int k = 0; k < 2 * N; k++) s2[k] = 100 * me + k;
    for (int form = 0; form < (OURS ? 3 : 2); form++) {
        for (int nf = 0; nf < 5; nf++) {
            for (int k = 0; k < 2 * N; k++) r2[k] = -1;
            int rc;
            switch (nf) {
            case 0:
                rc = form == 0 ? MPI_Neighbor_allgather_c(s2, N, MPI_INT, r2, N, MPI_INT, ring)
                     : form == 1
                         ? MPI_Ineighbor_allgather_c(s2, N, MPI_INT, r2, N, MPI_INT, ring, &r)
                         : MPI_Neighbor_allgather_init_c(s2, N, MPI_INT, r2, N, MPI_INT, ring,
                                                         MPI_INFO_NULL, &r);
                break;
            case 1:
                rc = form == 0 ? MPI_Neighbor_allgatherv_c(s2, N, MPI_INT, r2, c2, d2, MPI_INT,
                                                           ring)
                     : form == 1 ? MPI_Ineighbor_allgatherv_c(s2, N, MPI_INT, r2, c2, d2, MPI_INT,
                                                              ring, &r)
                                 : MPI_Neighbor_allgatherv_init_c(s2, N, MPI_INT, r2, c2, d2,
                                                                  MPI_INT, ring, MPI_INFO_NULL,
                                                                  &r);
                break;
            case 2:
                rc = form == 0 ? MPI_Neighbor_alltoall_c(s2, N, MPI_INT, r2, N, MPI_INT, ring)
                     : form == 1
                         ? MPI_Ineighbor_alltoall_c(s2, N, MPI_INT, r2, N, MPI_INT, ring, &r)
                         : MPI_Neighbor_alltoall_init_c(s2, N, MPI_INT, r2, N, MPI_INT, ring,
                                                        MPI_INFO_NULL, &r);
                break;
            case 3:
                rc = form == 0 ? MPI_Neighbor_alltoallv_c(s2, c2, d2, MPI_INT, r2, c2, d2, MPI_INT,
                                                          ring)
                     : form == 1 ? MPI_Ineighbor_alltoallv_c(s2, c2, d2, MPI_INT, r2, c2, d2,
                                                             MPI_INT, ring, &r)
                                 : MPI_Neighbor_alltoallv_init_c(s2, c2, d2, MPI_INT, r2, c2, d2,
                                                                 MPI_INT, ring, MPI_INFO_NULL,
                                                                 &r);
                break;
            default:
                rc = form == 0 ? MPI_Neighbor_alltoallw_c(s2, c2, bd2, t2, r2, c2, bd2, t2, ring)
                     : form == 1 ? MPI_Ineighbor_alltoallw_c(s2, c2, bd2, t2, r2, c2, bd2, t2,
                                                             ring, &r)
                                 : MPI_Neighbor_alltoallw_init_c(s2, c2, bd2, t2, r2, c2, bd2, t2,
                                                                 ring, MPI_INFO_NULL, &r);
            }
            CHECK_OK(rc);
            if (form) finish(&r, form == 2);
            /* Neighbours in order: left (source of dim 0), then right. */
            int want_l = nf < 2 ? 100 * left : 100 * left + N; /* left sent its block 1 */
            int want_r = 100 * right;                          /* right sent its block 0 */
            CHECK((!OURS && p < 3) || (r2[0] == want_l && r2[N] == want_r), "neighbour form %d/%d: %d %d (want %d %d)",
                  form, nf, r2[0], r2[N], want_l, want_r);
        }
    }
    MPI_Comm_free(&ring);

    /* Reduce_local_c */
    int in[N] = {1, 2, 3}, io[N] = {10, 20, 30};
    CHECK_OK(MPI_Reduce_local_c(in, io, (MPI_Count)N, MPI_INT, MPI_SUM));
    CHECK(io[0] == 11 && io[2] == 33, "Reduce_local_c: %d %d", io[0], io[2]);

    /* A negative count, at every member alike. */
    int rc = MPI_Bcast_c(sb, (MPI_Count)-1, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(ct_class(rc) == MPI_ERR_COUNT, "Bcast_c with count -1: class %d", ct_class(rc));
    if (OURS) {
        rc = MPI_Allreduce_c(sb, rb, (MPI_Count)-2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(ct_class(rc) == MPI_ERR_COUNT, "Allreduce_c with count -2: class %d",
              ct_class(rc));
    }

    free(sb);
    free(rb);
    free(counts);
    free(displs);
    free(bdispls);
    free(types);
    return ct_finish();
}
