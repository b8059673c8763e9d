/* ranks: 2 3 4 */
/* Collectives on an intercommunicator (world split into a low group A and
 * a high group B, uneven for odd sizes): MPI_Barrier; MPI_Bcast from a
 * root in A and from a root in B (root passes MPI_ROOT, the rest of its
 * group MPI_PROC_NULL, the other group the root's rank); MPI_Allreduce
 * (each group receives the reduction of the OTHER group's data) with
 * MPI_SUM / MPI_MAX on int and double. A point-to-point message left
 * pending across the bcast must not be matched by it. */
#include "common.h"

#define CNT 5

int main(int argc, char **argv)
{
    int n, me, na, nb, side, lrank, lsize, rsize;
    MPI_Comm local, ic;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (n < 2) {
        fprintf(stderr, "needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    na = n / 2;
    nb = n - na;
    side = me >= na; /* 0 = A (world 0..na-1), 1 = B (world na..n-1) */
    CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, side, me, &local));
    CHECK_OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, side ? 0 : na, 5,
                                  &ic));
    MPI_Comm_rank(ic, &lrank);
    MPI_Comm_size(ic, &lsize);
    MPI_Comm_remote_size(ic, &rsize);
    CHECK(lsize == (side ? nb : na) && rsize == (side ? na : nb) &&
              lrank == (side ? me - na : me),
          "intercomm size %d remote %d rank %d", lsize, rsize, lrank);

    CHECK_OK(MPI_Barrier(ic));

    /* Bcast from A's last rank to B, then from B's rank 0 to A, then from
     * B's last rank. Each root in its own world-rank-dependent pattern. */
    {
        struct { int side, rank; } roots[3] = {
            {0, na - 1}, {1, 0}, {1, nb - 1}};
        for (int r = 0; r < 3; r++) {
            int buf[CNT], root_arg, rootworld;
            rootworld = roots[r].side ? na + roots[r].rank : roots[r].rank;
            if (side == roots[r].side)
                root_arg = (lrank == roots[r].rank) ? MPI_ROOT : MPI_PROC_NULL;
            else
                root_arg = roots[r].rank;
            for (int i = 0; i < CNT; i++)
                buf[i] = (root_arg == MPI_ROOT) ? rootworld * 100 + r * 10 + i
                                                : -1;
            CHECK_OK(MPI_Bcast(buf, CNT, MPI_INT, root_arg, ic));
            if (root_arg == MPI_ROOT) {
                for (int i = 0; i < CNT; i++)
                    CHECK(buf[i] == rootworld * 100 + r * 10 + i,
                          "bcast %d: root's buffer changed", r);
            } else if (root_arg != MPI_PROC_NULL) {
                for (int i = 0; i < CNT; i++)
                    CHECK(buf[i] == rootworld * 100 + r * 10 + i,
                          "bcast %d: [%d] = %d, expected %d", r, i, buf[i],
                          rootworld * 100 + r * 10 + i);
            }
        }
    }

    /* A pending p2p message (A rank 0 -> B rank 0, tag 0) across a bcast
     * and a barrier on the same intercommunicator. */
    {
        int pv = 4242, got = -1, buf[2] = {-1, -1};
        MPI_Request rq = MPI_REQUEST_NULL;
        if (side == 0 && lrank == 0)
            CHECK_OK(MPI_Isend(&pv, 1, MPI_INT, 0, 0, ic, &rq));
        if (side == 0) {
            buf[0] = 31;
            buf[1] = 32;
            CHECK_OK(MPI_Bcast(buf, 2, MPI_INT,
                               lrank == 0 ? MPI_ROOT : MPI_PROC_NULL, ic));
        } else {
            CHECK_OK(MPI_Bcast(buf, 2, MPI_INT, 0, ic));
            CHECK(buf[0] == 31 && buf[1] == 32, "bcast with pending p2p: %d %d",
                  buf[0], buf[1]);
        }
        CHECK_OK(MPI_Barrier(ic));
        if (side == 1 && lrank == 0) {
            MPI_Status st;
            CHECK_OK(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG,
                              ic, &st));
            CHECK(got == 4242 && st.MPI_SOURCE == 0 && st.MPI_TAG == 0,
                  "pending p2p: got %d from %d tag %d", got, st.MPI_SOURCE,
                  st.MPI_TAG);
        }
        CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    }

    /* Allreduce: each group gets the reduction over the other group. */
    {
        int iv[3], ir[3] = {-1, -1, -1}, imax = -1;
        double dv[2], dr[2] = {-1.0, -1.0};
        int osum = 0, osq = 0, omax = -1, cnt = 0;
        double odsum = 0.0;
        iv[0] = me;
        iv[1] = 1;
        iv[2] = me * me;
        dv[0] = 0.5 * me;
        dv[1] = -1.0 * me;
        /* expected: over the other side's world ranks */
        for (int w = 0; w < n; w++) {
            if ((w >= na) == side) continue;
            osum += w;
            osq += w * w;
            cnt++;
            odsum += 0.5 * w;
            if (w > omax) omax = w;
        }
        CHECK_OK(MPI_Allreduce(iv, ir, 3, MPI_INT, MPI_SUM, ic));
        CHECK(ir[0] == osum && ir[1] == cnt && ir[2] == osq,
              "allreduce sum: %d %d %d, expected %d %d %d", ir[0], ir[1],
              ir[2], osum, cnt, osq);
        CHECK_OK(MPI_Allreduce(&me, &imax, 1, MPI_INT, MPI_MAX, ic));
        CHECK(imax == omax, "allreduce max: %d, expected %d", imax, omax);
        CHECK_OK(MPI_Allreduce(dv, dr, 2, MPI_DOUBLE, MPI_SUM, ic));
        CHECK(dr[0] == odsum && dr[1] == -(double)osum,
              "allreduce double sum: %g %g, expected %g %g", dr[0], dr[1],
              odsum, -(double)osum);
        /* MPI_MIN of a per-process array */
        {
            int a[CNT], m[CNT];
            for (int i = 0; i < CNT; i++) {
                a[i] = (me * 7 + i * 3) % 11;
                m[i] = -1;
            }
            CHECK_OK(MPI_Allreduce(a, m, CNT, MPI_INT, MPI_MIN, ic));
            for (int i = 0; i < CNT; i++) {
                int e = 1 << 30;
                for (int w = 0; w < n; w++) {
                    if ((w >= na) == side) continue;
                    int x = (w * 7 + i * 3) % 11;
                    if (x < e) e = x;
                }
                CHECK(m[i] == e, "allreduce min [%d]: %d, expected %d", i,
                      m[i], e);
            }
        }
    }

    CHECK_OK(MPI_Barrier(ic));
    CHECK_OK(MPI_Comm_free(&ic));
    CHECK(ic == MPI_COMM_NULL, "intercomm free did not set NULL");
    MPI_Comm_free(&local);
    return ct_finish();
}
