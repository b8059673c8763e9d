/* ranks: 2 3 4 8 */
/* MPI_Intercomm_create, twice: (1) world split into a low and a high part
 * (uneven for odd sizes), local leader 0, peer MPI_COMM_WORLD; (2) evens
 * and odds with locally reversed order, the local leader the last local
 * rank, and a reversed duplicate of world as peer communicator (remote
 * leader given in the peer's ranks). For each: MPI_Comm_test_inter (also
 * false on intracommunicators), MPI_Comm_size / MPI_Comm_rank (local),
 * MPI_Comm_remote_size, MPI_Comm_group (local group) and
 * MPI_Comm_remote_group (checked member by member), and point-to-point
 * across the intercommunicator: rank i <-> remote rank i, all-to-all with
 * specific sources, wildcard receives with source/tag in the status, and
 * MPI_PROC_NULL. */
#include "common.h"

#define MAXN 64

static MPI_Group world_group;
static int me;

static void group_is(MPI_Group g, const int *exp, int k, const char *what)
{
    int sz = -1, in[MAXN], out[MAXN];
    MPI_Group_size(g, &sz);
    CHECK(sz == k, "%s: size %d, expected %d", what, sz, k);
    if (sz != k) return;
    for (int i = 0; i < k; i++) in[i] = i;
    MPI_Group_translate_ranks(g, k, in, world_group, out);
    for (int i = 0; i < k; i++)
        CHECK(out[i] == exp[i], "%s: rank %d is world %d, expected %d", what,
              i, out[i], exp[i]);
}

/* loc / rem: world ranks of the local and remote groups, in order. */
static void check_inter(MPI_Comm ic, const int *loc, int nl, const int *rem,
                        int nr, const char *what)
{
    int flag = -1, sz = -1, rk = -1, rsz = -1, pos = -1;
    MPI_Group g;
    for (int i = 0; i < nl; i++)
        if (loc[i] == me) pos = i;
    CHECK_OK(MPI_Comm_test_inter(ic, &flag));
    CHECK(flag != 0, "%s: test_inter false", what);
    CHECK_OK(MPI_Comm_size(ic, &sz));
    CHECK_OK(MPI_Comm_rank(ic, &rk));
    CHECK_OK(MPI_Comm_remote_size(ic, &rsz));
    CHECK(sz == nl && rk == pos && rsz == nr,
          "%s: size %d rank %d remote size %d, expected %d %d %d", what, sz,
          rk, rsz, nl, pos, nr);
    if (sz != nl || rk != pos || rsz != nr) return;

    CHECK_OK(MPI_Comm_group(ic, &g));
    group_is(g, loc, nl, "local group");
    MPI_Group_free(&g);
    CHECK_OK(MPI_Comm_remote_group(ic, &g));
    group_is(g, rem, nr, "remote group");
    {
        MPI_Group exp;
        int res = -1, r = -7;
        MPI_Group_incl(world_group, nr, rem, &exp);
        CHECK_OK(MPI_Group_compare(g, exp, &res));
        CHECK(res == MPI_IDENT, "%s: remote group compare %d", what, res);
        MPI_Group_rank(g, &r);
        CHECK(r == MPI_UNDEFINED, "%s: rank in remote group %d", what, r);
        MPI_Group_free(&exp);
    }
    MPI_Group_free(&g);

    /* rank i <-> remote rank i */
    if (rk < nr) {
        int out = 10000 + me, in = -1;
        MPI_Status st;
        CHECK_OK(MPI_Sendrecv(&out, 1, MPI_INT, rk, 11, &in, 1, MPI_INT, rk,
                              11, ic, &st));
        CHECK(in == 10000 + rem[rk], "%s: i<->i got %d, expected %d", what,
              in, 10000 + rem[rk]);
        CHECK(st.MPI_SOURCE == rk && st.MPI_TAG == 11,
              "%s: i<->i status source %d tag %d", what, st.MPI_SOURCE,
              st.MPI_TAG);
    }

    /* all-to-all across: value world*1000 + dest, tag = sender's rank */
    {
        int sv[MAXN], rv[MAXN];
        MPI_Request rq[2 * MAXN];
        MPI_Status st[2 * MAXN];
        for (int j = 0; j < nr; j++) {
            rv[j] = -1;
            CHECK_OK(MPI_Irecv(&rv[j], 1, MPI_INT, j, j, ic, &rq[j]));
        }
        for (int j = 0; j < nr; j++) {
            sv[j] = me * 1000 + j;
            CHECK_OK(MPI_Isend(&sv[j], 1, MPI_INT, j, rk, ic, &rq[nr + j]));
        }
        CHECK_OK(MPI_Waitall(2 * nr, rq, st));
        for (int j = 0; j < nr; j++) {
            CHECK(rv[j] == rem[j] * 1000 + rk,
                  "%s: from remote %d got %d, expected %d", what, j, rv[j],
                  rem[j] * 1000 + rk);
            CHECK(st[j].MPI_SOURCE == j && st[j].MPI_TAG == j,
                  "%s: from remote %d status source %d tag %d", what, j,
                  st[j].MPI_SOURCE, st[j].MPI_TAG);
        }
    }

    /* wildcard receives: local rank i sends one message to remote rank
     * i % nr; I receive from every remote s with s % nl == rk. */
    {
        int out = me, nexp = 0, seen[MAXN];
        MPI_Request rq;
        for (int s = 0; s < nr; s++) seen[s] = 0;
        for (int s = 0; s < nr; s++)
            if (s % nl == rk) nexp++;
        CHECK_OK(MPI_Isend(&out, 1, MPI_INT, rk % nr, 100 + rk, ic, &rq));
        for (int m = 0; m < nexp; m++) {
            int in = -1;
            MPI_Status st;
            CHECK_OK(MPI_Recv(&in, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG,
                              ic, &st));
            int s = st.MPI_SOURCE;
            CHECK(s >= 0 && s < nr && s % nl == rk,
                  "%s: wildcard source %d", what, s);
            if (s >= 0 && s < nr) {
                CHECK(!seen[s], "%s: source %d twice", what, s);
                seen[s] = 1;
                CHECK(in == rem[s] && st.MPI_TAG == 100 + s,
                      "%s: wildcard from %d got %d tag %d", what, s, in,
                      st.MPI_TAG);
            }
        }
        CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    }

    /* MPI_PROC_NULL */
    {
        int v = 1, in = 77;
        MPI_Status st;
        CHECK_OK(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 0, ic));
        CHECK_OK(MPI_Recv(&in, 1, MPI_INT, MPI_PROC_NULL, 0, ic, &st));
        CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG,
              "%s: PROC_NULL recv status %d %d", what, st.MPI_SOURCE,
              st.MPI_TAG);
        CHECK(in == 77, "%s: PROC_NULL recv wrote the buffer", what);
    }
}

int main(int argc, char **argv)
{
    int n, flag;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (n < 2 || n > MAXN) {
        fprintf(stderr, "needs 2..%d ranks\n", MAXN);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    CHECK_OK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));

    flag = -1;
    CHECK_OK(MPI_Comm_test_inter(MPI_COMM_WORLD, &flag));
    CHECK(flag == 0, "test_inter(world) = %d", flag);
    flag = -1;
    CHECK_OK(MPI_Comm_test_inter(MPI_COMM_SELF, &flag));
    CHECK(flag == 0, "test_inter(self) = %d", flag);

    /* (1) low part [0, na) and high part [na, n). */
    {
        int na = n / 2, side = me >= na, lo[MAXN], hi[MAXN];
        MPI_Comm local, ic = MPI_COMM_NULL;
        for (int i = 0; i < na; i++) lo[i] = i;
        for (int i = na; i < n; i++) hi[i - na] = i;
        CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, side, me, &local));
        flag = -1;
        MPI_Comm_test_inter(local, &flag);
        CHECK(flag == 0, "test_inter(local) = %d", flag);
        CHECK_OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD,
                                      side ? 0 : na, 17, &ic));
        CHECK(ic != MPI_COMM_NULL, "intercomm (1) is MPI_COMM_NULL");
        if (side == 0)
            check_inter(ic, lo, na, hi, n - na, "halves (low side)");
        else
            check_inter(ic, hi, n - na, lo, na, "halves (high side)");
        CHECK_OK(MPI_Comm_free(&ic));
        CHECK(ic == MPI_COMM_NULL, "intercomm free did not set NULL");
        MPI_Comm_free(&local);
    }

    /* (2) evens / odds, each in descending world order; local leader is
     * the last local rank (world 0 resp. 1); peer is world reversed. */
    {
        int ev[MAXN], od[MAXN], ne = 0, no = 0, lsz;
        MPI_Comm local, peer, ic = MPI_COMM_NULL;
        for (int w = n - 1; w >= 0; w--) {
            if (w % 2 == 0) ev[ne++] = w;
            else od[no++] = w;
        }
        CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &local));
        CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, 0, -me, &peer));
        MPI_Comm_size(local, &lsz);
        /* peer rank of world w is n-1-w; leaders are world 0 and 1 */
        CHECK_OK(MPI_Intercomm_create(local, lsz - 1, peer,
                                      me % 2 ? n - 1 : n - 2, 23, &ic));
        if (me % 2 == 0)
            check_inter(ic, ev, ne, od, no, "evens/odds (evens)");
        else
            check_inter(ic, od, no, ev, ne, "evens/odds (odds)");
        MPI_Comm_free(&ic);
        MPI_Comm_free(&peer);
        MPI_Comm_free(&local);
    }

    MPI_Group_free(&world_group);
    return ct_finish();
}
