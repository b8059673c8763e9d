/* ranks: 2 4 */
/* MPI_Comm_dup, MPI_Comm_idup (also two outstanding at once) and
 * MPI_Comm_dup_with_info give communicators whose traffic is isolated from
 * the parent and from each other: a message on the duplicate is invisible
 * to MPI_Iprobe / wildcard receives on the parent even with the same tag,
 * and nonblocking broadcasts on parent and duplicate started in opposite
 * orders on different ranks do not mix. Size, rank and CONGRUENT compare
 * are checked too, and MPI_Comm_get_info on the dup_with_info result. */
#include "common.h"

/* Pairs (2k, 2k+1): the lower sends on the duplicate, waits for an ack,
 * then sends on the parent with the same tag; correct with zero buffering
 * and with eager sends. */
static void p2p_isolation(MPI_Comm parent, MPI_Comm dup, int me, int n,
                          int salt, const char *what)
{
    int partner = me ^ 1;
    const int tag = 5, acktag = 6;
    if (partner >= n) return;
    if (me < partner) {
        int vd = 1000 + salt, vp = 2000 + salt, ack = -1;
        MPI_Request rq;
        CHECK_OK(MPI_Isend(&vd, 1, MPI_INT, partner, tag, dup, &rq));
        CHECK_OK(MPI_Recv(&ack, 1, MPI_INT, partner, acktag, parent,
                          MPI_STATUS_IGNORE));
        CHECK(ack == salt, "%s: ack %d", what, ack);
        CHECK_OK(MPI_Send(&vp, 1, MPI_INT, partner, tag, parent));
        CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    } else {
        int flag = -1, vd = -1, vp = -1, ack = salt;
        MPI_Status st;
        MPI_Request rq;
        /* Wait until the duplicate's message is there... */
        CHECK_OK(MPI_Probe(partner, tag, dup, &st));
        CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == tag,
              "%s: probe on dup: source %d tag %d", what, st.MPI_SOURCE,
              st.MPI_TAG);
        /* ...the parent has nothing (the sender waits for the ack). */
        CHECK_OK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, parent, &flag,
                            MPI_STATUS_IGNORE));
        CHECK(flag == 0, "%s: dup message visible on parent", what);
        /* A wildcard receive on the parent posted before the duplicate's
         * message is received must get the parent's message. */
        CHECK_OK(MPI_Irecv(&vp, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG,
                           parent, &rq));
        CHECK_OK(MPI_Send(&ack, 1, MPI_INT, partner, acktag, parent));
        CHECK_OK(MPI_Recv(&vd, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, dup,
                          &st));
        CHECK(vd == 1000 + salt, "%s: dup got %d, expected %d", what, vd,
              1000 + salt);
        CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == tag,
              "%s: dup recv source %d tag %d", what, st.MPI_SOURCE,
              st.MPI_TAG);
        CHECK_OK(MPI_Wait(&rq, &st));
        CHECK(vp == 2000 + salt, "%s: parent got %d, expected %d", what, vp,
              2000 + salt);
        CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == tag,
              "%s: parent recv source %d tag %d", what, st.MPI_SOURCE,
              st.MPI_TAG);
    }
}

/* Nonblocking broadcasts with different roots and data on parent and dup,
 * started in opposite orders on even and odd ranks. */
static void coll_isolation(MPI_Comm parent, MPI_Comm dup, int me, int n,
                           int salt, const char *what)
{
    int bp[4], bd[4];
    int rootp = 0, rootd = n - 1;
    MPI_Request rq[2];
    MPI_Status sts[2];
    for (int i = 0; i < 4; i++) {
        bp[i] = (me == rootp) ? 100 * salt + i : -1;
        bd[i] = (me == rootd) ? 100 * salt + 50 + i : -2;
    }
    if (me % 2 == 0) {
        CHECK_OK(MPI_Ibcast(bp, 4, MPI_INT, rootp, parent, &rq[0]));
        CHECK_OK(MPI_Ibcast(bd, 4, MPI_INT, rootd, dup, &rq[1]));
    } else {
        CHECK_OK(MPI_Ibcast(bd, 4, MPI_INT, rootd, dup, &rq[1]));
        CHECK_OK(MPI_Ibcast(bp, 4, MPI_INT, rootp, parent, &rq[0]));
    }
    CHECK_OK(MPI_Waitall(2, rq, sts));
    for (int i = 0; i < 4; i++) {
        CHECK(bp[i] == 100 * salt + i, "%s: parent bcast[%d] = %d", what, i,
              bp[i]);
        CHECK(bd[i] == 100 * salt + 50 + i, "%s: dup bcast[%d] = %d", what,
              i, bd[i]);
    }
}

static void basics(MPI_Comm parent, MPI_Comm dup, const char *what)
{
    int ps, pr, ds = -1, dr = -1, res = -1, sum = -1, esum;
    MPI_Comm_size(parent, &ps);
    MPI_Comm_rank(parent, &pr);
    CHECK(dup != MPI_COMM_NULL, "%s: got MPI_COMM_NULL", what);
    CHECK(dup != parent, "%s: same handle as the parent", what);
    CHECK_OK(MPI_Comm_size(dup, &ds));
    CHECK_OK(MPI_Comm_rank(dup, &dr));
    CHECK(ds == ps && dr == pr, "%s: size/rank %d/%d, parent %d/%d", what, ds,
          dr, ps, pr);
    CHECK_OK(MPI_Comm_compare(parent, dup, &res));
    CHECK(res == MPI_CONGRUENT, "%s: compare with parent %d", what, res);
    CHECK_OK(MPI_Allreduce(&pr, &sum, 1, MPI_INT, MPI_SUM, dup));
    esum = ps * (ps - 1) / 2;
    CHECK(sum == esum, "%s: allreduce %d, expected %d", what, sum, esum);
}

int main(int argc, char **argv)
{
    int n, me;
    MPI_Comm d1, d2, d3, d4, d5, sub, subdup;
    MPI_Request rq[2];
    MPI_Status sts[2];
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);

    /* MPI_Comm_dup */
    CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d1));
    basics(MPI_COMM_WORLD, d1, "dup");
    p2p_isolation(MPI_COMM_WORLD, d1, me, n, 1, "dup");
    coll_isolation(MPI_COMM_WORLD, d1, me, n, 1, "dup");

    /* MPI_Comm_idup */
    d2 = MPI_COMM_NULL;
    CHECK_OK(MPI_Comm_idup(MPI_COMM_WORLD, &d2, &rq[0]));
    CHECK_OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    CHECK(rq[0] == MPI_REQUEST_NULL, "idup request not freed by wait");
    basics(MPI_COMM_WORLD, d2, "idup");
    p2p_isolation(MPI_COMM_WORLD, d2, me, n, 2, "idup");
    coll_isolation(MPI_COMM_WORLD, d2, me, n, 2, "idup");
    /* The two duplicates are isolated from each other too. */
    p2p_isolation(d1, d2, me, n, 3, "dup vs idup");
    coll_isolation(d2, d1, me, n, 3, "idup vs dup");

    /* MPI_Comm_dup_with_info */
    {
        MPI_Info info, got = MPI_INFO_NULL;
        int nkeys = -1;
        CHECK_OK(MPI_Info_create(&info));
        CHECK_OK(MPI_Info_set(info, "shmpi_test_hint", "true"));
        CHECK_OK(MPI_Comm_dup_with_info(d1, info, &d3));
        CHECK_OK(MPI_Info_free(&info));
        basics(d1, d3, "dup_with_info");
        p2p_isolation(d1, d3, me, n, 4, "dup_with_info");
        coll_isolation(d3, d1, me, n, 4, "dup_with_info");
        CHECK_OK(MPI_Comm_get_info(d3, &got));
        CHECK(got != MPI_INFO_NULL, "MPI_Comm_get_info gave MPI_INFO_NULL");
        if (got != MPI_INFO_NULL) {
            CHECK_OK(MPI_Info_get_nkeys(got, &nkeys));
            CHECK(nkeys >= 0, "nkeys %d", nkeys);
            MPI_Info_free(&got);
        }
    }
    /* dup_with_info with MPI_INFO_NULL */
    CHECK_OK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &d4));
    basics(MPI_COMM_WORLD, d4, "dup_with_info(INFO_NULL)");

    /* Two outstanding idups of the same parent: distinct communicators. */
    {
        MPI_Comm a = MPI_COMM_NULL, b = MPI_COMM_NULL;
        int res = -1;
        CHECK_OK(MPI_Comm_idup(d4, &a, &rq[0]));
        CHECK_OK(MPI_Comm_idup(d4, &b, &rq[1]));
        CHECK_OK(MPI_Waitall(2, rq, sts));
        basics(d4, a, "idup a");
        basics(d4, b, "idup b");
        CHECK_OK(MPI_Comm_compare(a, b, &res));
        CHECK(res == MPI_CONGRUENT, "idup a vs idup b: %d", res);
        p2p_isolation(a, b, me, n, 5, "idup a vs b");
        coll_isolation(b, a, me, n, 5, "idup b vs a");
        MPI_Comm_free(&a);
        MPI_Comm_free(&b);
    }

    /* Duplicate of a derived (reversed) communicator. */
    CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, 0, n - me, &sub));
    CHECK_OK(MPI_Comm_dup(sub, &subdup));
    basics(sub, subdup, "dup of reversed split");
    {
        int sr;
        MPI_Comm_rank(sub, &sr);
        CHECK(sr == n - 1 - me, "reversed split rank %d", sr);
        p2p_isolation(sub, subdup, sr, n, 6, "dup of reversed split");
        coll_isolation(subdup, sub, sr, n, 6, "dup of reversed split");
    }

    /* Freeing the parent leaves the duplicate working. */
    CHECK_OK(MPI_Comm_dup(d1, &d5));
    CHECK_OK(MPI_Comm_free(&d1));
    CHECK(d1 == MPI_COMM_NULL, "d1 not MPI_COMM_NULL after free");
    basics(MPI_COMM_WORLD, d5, "dup after parent freed");
    p2p_isolation(d2, d5, me, n, 7, "dup after parent freed");

    MPI_Comm_free(&d2);
    MPI_Comm_free(&d3);
    MPI_Comm_free(&d4);
    MPI_Comm_free(&d5);
    MPI_Comm_free(&subdup);
    MPI_Comm_free(&sub);
    return ct_finish();
}
