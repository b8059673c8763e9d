/* ranks: 2 3 4 */
/* Communicators derived from intercommunicators (world split into low
 * group A and high group B, uneven for odd sizes; and evens/odds):
 * MPI_Intercomm_merge with high = 0/1 on either side (the high = 0 group's
 * processes come first, each group in its local order); MPI_Comm_dup of an
 * intercommunicator (still inter, same sizes, CONGRUENT, traffic isolated
 * from the original); MPI_Comm_create on an intercommunicator with a local
 * subset on each side (non-members get MPI_COMM_NULL, remote group is the
 * other side's subset); MPI_Comm_split on an intercommunicator (same colour
 * on both sides pairs up, a colour present on one side only and
 * MPI_UNDEFINED give MPI_COMM_NULL). */
#include "common.h"

#define MAXN 64

static MPI_Group world_group;
static int me, n;

static int members(MPI_Group g, int *out)
{
    int k = -1, in[MAXN];
    MPI_Group_size(g, &k);
    if (k < 0 || k > MAXN) return -1;
    for (int i = 0; i < k; i++) in[i] = i;
    if (k > 0) MPI_Group_translate_ranks(g, k, in, world_group, out);
    return k;
}

static void group_is(MPI_Group g, const int *exp, int k, const char *what)
{
    int got[MAXN], sz = members(g, got);
    CHECK(sz == k, "%s: size %d, expected %d", what, sz, k);
    if (sz != k) return;
    for (int i = 0; i < k; i++)
        CHECK(got[i] == exp[i], "%s: rank %d is world %d, expected %d", what,
              i, got[i], exp[i]);
}

/* Checks an intracommunicator's members and runs an allreduce on it. */
static void check_intra(MPI_Comm c, const int *exp, int k, const char *what)
{
    int flag = -1, rk = -1, pos = -1, sum = -1, esum = 0;
    MPI_Group g;
    CHECK(c != MPI_COMM_NULL, "%s: MPI_COMM_NULL", what);
    if (c == MPI_COMM_NULL) return;
    CHECK_OK(MPI_Comm_test_inter(c, &flag));
    CHECK(flag == 0, "%s: test_inter %d", what, flag);
    MPI_Comm_group(c, &g);
    group_is(g, exp, k, what);
    MPI_Group_free(&g);
    MPI_Comm_rank(c, &rk);
    for (int i = 0; i < k; i++) {
        if (exp[i] == me) pos = i;
        esum += exp[i];
    }
    CHECK(rk == pos, "%s: rank %d, expected %d", what, rk, pos);
    CHECK_OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == esum, "%s: allreduce %d, expected %d", what, sum, esum);
}

/* Checks an intercommunicator's local and remote groups and exchanges
 * messages: every process sends its world rank to every remote process;
 * then an intercomm allreduce (sum over the remote group). */
static void check_inter(MPI_Comm c, const int *loc, int nl, const int *rem,
                        int nr, const char *what)
{
    int flag = -1, rsz = -1, rk = -1, pos = -1;
    MPI_Group g;
    CHECK(c != MPI_COMM_NULL, "%s: MPI_COMM_NULL", what);
    if (c == MPI_COMM_NULL) return;
    CHECK_OK(MPI_Comm_test_inter(c, &flag));
    CHECK(flag != 0, "%s: test_inter %d", what, flag);
    MPI_Comm_group(c, &g);
    group_is(g, loc, nl, what);
    MPI_Group_free(&g);
    CHECK_OK(MPI_Comm_remote_group(c, &g));
    group_is(g, rem, nr, what);
    MPI_Group_free(&g);
    CHECK_OK(MPI_Comm_remote_size(c, &rsz));
    MPI_Comm_rank(c, &rk);
    for (int i = 0; i < nl; i++)
        if (loc[i] == me) pos = i;
    CHECK(rsz == nr && rk == pos, "%s: remote size %d rank %d, exp %d %d",
          what, rsz, rk, nr, pos);
    if (rsz != nr || rk != pos) return;
    {
        int rv[MAXN];
        MPI_Request rq[2 * MAXN];
        MPI_Status st[2 * MAXN];
        for (int j = 0; j < nr; j++) {
            rv[j] = -1;
            MPI_Irecv(&rv[j], 1, MPI_INT, j, 8, c, &rq[j]);
        }
        for (int j = 0; j < nr; j++)
            MPI_Isend(&me, 1, MPI_INT, j, 8, c, &rq[nr + j]);
        CHECK_OK(MPI_Waitall(2 * nr, rq, st));
        for (int j = 0; j < nr; j++)
            CHECK(rv[j] == rem[j], "%s: from remote %d got %d, expected %d",
                  what, j, rv[j], rem[j]);
    }
    {
        int sum = -1, esum = 0;
        for (int j = 0; j < nr; j++) esum += rem[j];
        CHECK_OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, c));
        CHECK(sum == esum, "%s: inter allreduce %d, expected %d", what, sum,
              esum);
    }
}

int main(int argc, char **argv)
{
    int na, nb, side, lrank, lo[MAXN], hi[MAXN], lst[MAXN];
    MPI_Comm local, ic;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (n < 2 || n > MAXN) {
        fprintf(stderr, "needs 2..%d ranks\n", MAXN);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    CHECK_OK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    na = n / 2;
    nb = n - na;
    side = me >= na;
    for (int i = 0; i < na; i++) lo[i] = i;
    for (int i = 0; i < nb; i++) hi[i] = na + i;
    CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, side, me, &local));
    CHECK_OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, side ? 0 : na, 9,
                                  &ic));
    MPI_Comm_rank(ic, &lrank);
    if (side == 0) check_inter(ic, lo, na, hi, nb, "halves");
    else check_inter(ic, hi, nb, lo, na, "halves");

    /* Merge: A low, B high -> world order. */
    {
        MPI_Comm m;
        int res = -1;
        CHECK_OK(MPI_Intercomm_merge(ic, side, &m));
        for (int i = 0; i < n; i++) lst[i] = i;
        check_intra(m, lst, n, "merge A low");
        CHECK_OK(MPI_Comm_compare(m, MPI_COMM_WORLD, &res));
        CHECK(res == MPI_CONGRUENT, "merge A low vs world: %d", res);
        MPI_Comm_free(&m);
    }
    /* Merge: A high, B low -> B's processes first. */
    {
        MPI_Comm m;
        int res = -1;
        CHECK_OK(MPI_Intercomm_merge(ic, !side, &m));
        for (int i = 0; i < nb; i++) lst[i] = hi[i];
        for (int i = 0; i < na; i++) lst[nb + i] = lo[i];
        check_intra(m, lst, n, "merge A high");
        CHECK_OK(MPI_Comm_compare(m, MPI_COMM_WORLD, &res));
        CHECK(res == MPI_SIMILAR, "merge A high vs world: %d", res);
        MPI_Comm_free(&m);
    }

    /* Merge of evens/odds (locally reversed), evens high. */
    {
        MPI_Comm el, eic, m;
        int ev[MAXN], od[MAXN], ne = 0, no = 0;
        for (int w = n - 1; w >= 0; w--) {
            if (w % 2 == 0) ev[ne++] = w;
            else od[no++] = w;
        }
        CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &el));
        /* leaders: local rank 0 = highest even / highest odd world rank */
        CHECK_OK(MPI_Intercomm_create(el, 0, MPI_COMM_WORLD,
                                      me % 2 ? ev[0] : od[0], 10, &eic));
        CHECK_OK(MPI_Intercomm_merge(eic, me % 2 == 0, &m));
        for (int i = 0; i < no; i++) lst[i] = od[i];
        for (int i = 0; i < ne; i++) lst[no + i] = ev[i];
        check_intra(m, lst, n, "merge evens high");
        MPI_Comm_free(&m);
        MPI_Comm_free(&eic);
        MPI_Comm_free(&el);
    }

    /* Dup of the intercommunicator. */
    {
        MPI_Comm d;
        int res = -1;
        CHECK_OK(MPI_Comm_dup(ic, &d));
        if (side == 0) check_inter(d, lo, na, hi, nb, "dup of intercomm");
        else check_inter(d, hi, nb, lo, na, "dup of intercomm");
        CHECK_OK(MPI_Comm_compare(ic, d, &res));
        CHECK(res == MPI_CONGRUENT, "dup of intercomm compare: %d", res);
        /* Isolation: A0 sends on d, waits for an ack on ic, then sends on
         * ic, same tag; B0 probes d, checks ic has nothing, and receives
         * with wildcards on ic before receiving on d. */
        if (lrank == 0) {
            if (side == 0) {
                int a = 111, b = 222, ack = -1;
                MPI_Request rq;
                CHECK_OK(MPI_Isend(&a, 1, MPI_INT, 0, 4, d, &rq));
                CHECK_OK(MPI_Recv(&ack, 1, MPI_INT, 0, 5, ic,
                                  MPI_STATUS_IGNORE));
                CHECK_OK(MPI_Send(&b, 1, MPI_INT, 0, 4, ic));
                CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            } else {
                int a = -1, b = -1, ack = 1, flag = -1;
                MPI_Request rq;
                MPI_Status st;
                CHECK_OK(MPI_Probe(0, 4, d, &st));
                CHECK_OK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, ic, &flag,
                                    MPI_STATUS_IGNORE));
                CHECK(flag == 0, "dup'ed intercomm message visible on ic");
                CHECK_OK(MPI_Irecv(&b, 1, MPI_INT, MPI_ANY_SOURCE,
                                   MPI_ANY_TAG, ic, &rq));
                CHECK_OK(MPI_Send(&ack, 1, MPI_INT, 0, 5, ic));
                CHECK_OK(MPI_Recv(&a, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG,
                                  d, &st));
                CHECK(a == 111 && st.MPI_SOURCE == 0 && st.MPI_TAG == 4,
                      "on dup: %d from %d tag %d", a, st.MPI_SOURCE,
                      st.MPI_TAG);
                CHECK_OK(MPI_Wait(&rq, &st));
                CHECK(b == 222 && st.MPI_SOURCE == 0 && st.MPI_TAG == 4,
                      "on ic: %d from %d tag %d", b, st.MPI_SOURCE,
                      st.MPI_TAG);
            }
        }
        /* bcast over the dup from B's rank 0 */
        {
            int v = (side == 1 && lrank == 0) ? 9090 : -1;
            int root = side == 0 ? 0 : (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL);
            CHECK_OK(MPI_Bcast(&v, 1, MPI_INT, root, d));
            if (side == 0) CHECK(v == 9090, "bcast over dup: %d", v);
        }
        CHECK_OK(MPI_Comm_free(&d));
    }

    /* MPI_Comm_create on the intercommunicator: A uses its first
     * ceil(na/2) ranks in reverse order, B its last ceil(nb/2) ranks. */
    {
        MPI_Group lg, sg;
        MPI_Comm c = MPI_COMM_WORLD;
        int ka = (na + 1) / 2, kb = (nb + 1) / 2, sa[MAXN], sb[MAXN];
        int wa[MAXN], wb[MAXN], mine[MAXN], km, member;
        for (int i = 0; i < ka; i++) {
            sa[i] = ka - 1 - i;        /* local ranks in A */
            wa[i] = lo[sa[i]];
        }
        for (int i = 0; i < kb; i++) {
            sb[i] = nb - kb + i;       /* local ranks in B */
            wb[i] = hi[sb[i]];
        }
        CHECK_OK(MPI_Comm_group(ic, &lg));
        if (side == 0) {
            km = ka;
            for (int i = 0; i < ka; i++) mine[i] = sa[i];
        } else {
            km = kb;
            for (int i = 0; i < kb; i++) mine[i] = sb[i];
        }
        CHECK_OK(MPI_Group_incl(lg, km, mine, &sg));
        CHECK_OK(MPI_Comm_create(ic, sg, &c));
        member = 0;
        for (int i = 0; i < km; i++)
            if (mine[i] == lrank) member = 1;
        if (!member) {
            CHECK(c == MPI_COMM_NULL, "intercomm create: non-member not NULL");
        } else {
            if (side == 0) check_inter(c, wa, ka, wb, kb, "intercomm create A");
            else check_inter(c, wb, kb, wa, ka, "intercomm create B");
            if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
        }
        MPI_Group_free(&sg);
        MPI_Group_free(&lg);
    }

    /* MPI_Comm_split on the intercommunicator: colour = local rank % 2,
     * key = -local rank (reversed). A colour only one side has gives
     * MPI_COMM_NULL. Then all MPI_UNDEFINED. */
    {
        MPI_Comm s = MPI_COMM_WORLD;
        int color = lrank % 2, l[MAXN], r[MAXN], kl = 0, kr = 0;
        const int *mylist = side ? hi : lo, *other = side ? lo : hi;
        int mysz = side ? nb : na, osz = side ? na : nb;
        CHECK_OK(MPI_Comm_split(ic, color, -lrank, &s));
        for (int i = mysz - 1; i >= 0; i--)
            if (i % 2 == color) l[kl++] = mylist[i];
        for (int i = osz - 1; i >= 0; i--)
            if (i % 2 == color) r[kr++] = other[i];
        if (kr == 0) {
            CHECK(s == MPI_COMM_NULL,
                  "intercomm split: colour %d without remote not NULL", color);
            if (s != MPI_COMM_NULL) MPI_Comm_free(&s);
        } else {
            check_inter(s, l, kl, r, kr, "intercomm split");
            if (s != MPI_COMM_NULL) MPI_Comm_free(&s);
        }
        s = MPI_COMM_WORLD;
        CHECK_OK(MPI_Comm_split(ic, MPI_UNDEFINED, 0, &s));
        CHECK(s == MPI_COMM_NULL, "intercomm split UNDEFINED not NULL");
    }

    CHECK_OK(MPI_Comm_free(&ic));
    MPI_Comm_free(&local);
    MPI_Group_free(&world_group);
    return ct_finish();
}
