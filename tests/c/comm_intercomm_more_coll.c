/* ranks: 2 3 4 5 */
/* Collectives on an intercommunicator between the lower half of the
 * world (group A) and the upper half (group B), each member checking
 * what the other group gave it (MPI 4.1 §6.2.2): Reduce (to B's rank 0,
 * MPI_SUM and a non-commutative user operation, folded in the other
 * group's rank order), Allreduce (MPI_MAX), Gather (to A's rank 0),
 * Gatherv, Scatter (from B's rank 0), Allgather, Allgatherv (reversed
 * displacements), Alltoall, Reduce_scatter_block (groups of equal size);
 * and Ibarrier, Ibcast, Iallreduce, Igather started locally: B's last
 * rank starts each and then MPI_Ssend's to world rank 0, which starts
 * its own only after receiving that (a start that waits for the other
 * group deadlocks). */
#include "common.h"

#define MAXP 8

/* inout = in: the lowest-ranked contribution wins. */
static void first(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    for (int k = 0; k < *len; k++) ((int *)inout)[k] = ((int *)in)[k];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int np, wr;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    int h = np / 2, inA = wr < h;
    MPI_Comm local, ic;
    MPI_Comm_split(MPI_COMM_WORLD, inA, wr, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, inA ? h : 0, 9, &ic);
    int lr, ls, rs;
    MPI_Comm_rank(local, &lr);
    MPI_Comm_size(local, &ls);
    MPI_Comm_remote_size(ic, &rs);
    /* World rank of remote rank r. */
#define RW(r) (inA ? h + (r) : (r))
    int rsum = 0, rmax = 0;
    for (int r = 0; r < rs; r++) {
        rsum += RW(r);
        rmax = RW(r) > rmax ? RW(r) : rmax;
    }

    /* Reduce to B's rank 0. */
    {
        int root = inA ? 0 : (lr == 0 ? MPI_ROOT : MPI_PROC_NULL);
        int sb[2] = {wr, 1}, rb[2] = {-1, -1};
        CHECK_OK(MPI_Reduce(sb, rb, 2, MPI_INT, MPI_SUM, root, ic));
        if (root == MPI_ROOT)
            CHECK(rb[0] == rsum && rb[1] == rs, "reduce: %d %d", rb[0], rb[1]);
        else
            CHECK(rb[0] == -1, "reduce wrote a non-root's buffer");
        MPI_Op op;
        MPI_Op_create(first, 0, &op);
        rb[0] = -1;
        CHECK_OK(MPI_Reduce(sb, rb, 1, MPI_INT, op, root, ic));
        if (root == MPI_ROOT) CHECK(rb[0] == RW(0), "non-commutative reduce: %d", rb[0]);
        MPI_Op_free(&op);
    }
    /* Allreduce. */
    {
        int m = -1;
        CHECK_OK(MPI_Allreduce(&wr, &m, 1, MPI_INT, MPI_MAX, ic));
        CHECK(m == rmax, "allreduce max: %d, not %d", m, rmax);
    }
    /* Gather to A's rank 0; Gatherv into reversed slots. */
    {
        int root = inA ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        int g[MAXP], cnt[MAXP], dsp[MAXP];
        for (int i = 0; i < MAXP; i++) g[i] = -1;
        CHECK_OK(MPI_Gather(&wr, 1, MPI_INT, g, 1, MPI_INT, root, ic));
        if (root == MPI_ROOT)
            for (int r = 0; r < rs; r++) CHECK(g[r] == RW(r), "gather[%d] = %d", r, g[r]);
        for (int r = 0; r < rs; r++) {
            cnt[r] = 1;
            dsp[r] = rs - 1 - r;
        }
        for (int i = 0; i < MAXP; i++) g[i] = -1;
        CHECK_OK(MPI_Gatherv(&wr, 1, MPI_INT, g, cnt, dsp, MPI_INT, root, ic));
        if (root == MPI_ROOT)
            for (int r = 0; r < rs; r++)
                CHECK(g[rs - 1 - r] == RW(r), "gatherv from %d: %d", r, g[rs - 1 - r]);
    }
    /* Scatter from B's rank 0. */
    {
        int root = inA ? 0 : (lr == 0 ? MPI_ROOT : MPI_PROC_NULL);
        int sc[MAXP], got = -1;
        for (int i = 0; i < MAXP; i++) sc[i] = 100 + i;
        CHECK_OK(MPI_Scatter(sc, 1, MPI_INT, &got, 1, MPI_INT, root, ic));
        if (inA) CHECK(got == 100 + lr, "scatter: %d", got);
    }
    /* Allgatherv, reversed; Alltoall. */
    {
        int g[MAXP], cnt[MAXP], dsp[MAXP];
        for (int r = 0; r < rs; r++) {
            cnt[r] = 1;
            dsp[r] = rs - 1 - r;
        }
        CHECK_OK(MPI_Allgather(&wr, 1, MPI_INT, g, 1, MPI_INT, ic));
        for (int r = 0; r < rs; r++) CHECK(g[r] == RW(r), "allgather from %d: %d", r, g[r]);
        CHECK_OK(MPI_Allgatherv(&wr, 1, MPI_INT, g, cnt, dsp, MPI_INT, ic));
        for (int r = 0; r < rs; r++)
            CHECK(g[rs - 1 - r] == RW(r), "allgatherv from %d: %d", r, g[rs - 1 - r]);
        int s2[MAXP], r2[MAXP];
        for (int r = 0; r < rs; r++) s2[r] = wr * 10 + r;
        CHECK_OK(MPI_Alltoall(s2, 1, MPI_INT, r2, 1, MPI_INT, ic));
        for (int r = 0; r < rs; r++)
            CHECK(r2[r] == RW(r) * 10 + lr, "alltoall from %d: %d", r, r2[r]);
    }
    /* Reduce_scatter_block: element i of the other group's vectors,
     * summed, to rank i. */
    if (ls == rs) {
        int v[MAXP], got = -1;
        for (int i = 0; i < ls; i++) v[i] = wr * 100 + i;
        CHECK_OK(MPI_Reduce_scatter_block(v, &got, 1, MPI_INT, MPI_SUM, ic));
        CHECK(got == rsum * 100 + rs * lr, "reduce_scatter_block: %d", got);
    }

    /* Nonblocking, started locally. */
    for (int which = 0; which < 4; which++) {
        MPI_Request rq;
        int b = inA ? -1 : 5, y = -1, g[MAXP], x = 42;
        int broot = inA ? 0 : (lr == 0 ? MPI_ROOT : MPI_PROC_NULL);
        int groot = inA ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
#define START()                                                                          \
    do {                                                                                 \
        if (which == 0) CHECK_OK(MPI_Ibarrier(ic, &rq));                                 \
        if (which == 1) CHECK_OK(MPI_Ibcast(&b, 1, MPI_INT, broot, ic, &rq));            \
        if (which == 2) CHECK_OK(MPI_Iallreduce(&wr, &y, 1, MPI_INT, MPI_SUM, ic, &rq)); \
        if (which == 3) CHECK_OK(MPI_Igather(&wr, 1, MPI_INT, g, 1, MPI_INT, groot, ic, &rq)); \
    } while (0)
        if (wr == np - 1) {
            START();
            CHECK_OK(MPI_Ssend(&x, 1, MPI_INT, 0, 77, MPI_COMM_WORLD));
        } else if (wr == 0) {
            int z = -1;
            CHECK_OK(MPI_Recv(&z, 1, MPI_INT, np - 1, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(z == 42, "ssend got %d", z);
            START();
        } else {
            START();
        }
        CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        if (which == 1 && inA) CHECK(b == 5, "ibcast: %d", b);
        if (which == 2) CHECK(y == rsum, "iallreduce: %d, not %d", y, rsum);
        if (which == 3 && groot == MPI_ROOT)
            for (int r = 0; r < rs; r++) CHECK(g[r] == RW(r), "igather[%d] = %d", r, g[r]);
    }

    MPI_Comm_free(&ic);
    MPI_Comm_free(&local);
    return ct_finish();
}
