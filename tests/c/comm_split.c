/* ranks: 1 2 4 8 */
/* MPI_Comm_split: three colors with keys reversing the order, keys with
 * ties (broken by the parent rank), MPI_UNDEFINED giving MPI_COMM_NULL
 * (some and all processes), a split of a split; and
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED): a valid communicator whose
 * members are all in MPI_COMM_WORLD, ordered by key, usable for allreduce
 * (and on this single-node setup holding every process), plus
 * split_type MPI_UNDEFINED giving MPI_COMM_NULL. Results are checked by
 * size, rank, group order (translated to world) and communication. */
#include "common.h"

#define MAXN 64

static MPI_Group world_group;

/* Translates all ranks of c into world ranks. */
static int members(MPI_Comm c, int *out)
{
    int k = -1, in[MAXN];
    MPI_Group g;
    MPI_Comm_size(c, &k);
    if (k < 0 || k > MAXN) return -1;
    MPI_Comm_group(c, &g);
    for (int i = 0; i < k; i++) in[i] = i;
    MPI_Group_translate_ranks(g, k, in, world_group, out);
    MPI_Group_free(&g);
    return k;
}

static void check_comm(MPI_Comm c, const int *exp, int k, int me,
                       const char *what)
{
    int got[MAXN], sz, rk = -1, pos = -1;
    CHECK(c != MPI_COMM_NULL, "%s: got MPI_COMM_NULL", what);
    if (c == MPI_COMM_NULL) return;
    sz = members(c, got);
    MPI_Comm_rank(c, &rk);
    for (int i = 0; i < k; i++)
        if (exp[i] == me) pos = i;
    CHECK(sz == k, "%s: size %d, expected %d", what, sz, k);
    CHECK(rk == pos, "%s: rank %d, expected %d", what, rk, pos);
    if (sz != k || rk != pos) return;
    for (int i = 0; i < k; i++)
        CHECK(got[i] == exp[i], "%s: rank %d is world %d, expected %d", what,
              i, got[i], exp[i]);
    /* ring exchange of world ranks, both directions */
    {
        int right = (rk + 1) % k, left = (rk + k - 1) % k;
        int fromleft = -1, fromright = -1;
        MPI_Request rq[4];
        MPI_Status st[4];
        CHECK_OK(MPI_Irecv(&fromleft, 1, MPI_INT, left, 1, c, &rq[0]));
        CHECK_OK(MPI_Irecv(&fromright, 1, MPI_INT, right, 2, c, &rq[1]));
        CHECK_OK(MPI_Isend(&me, 1, MPI_INT, right, 1, c, &rq[2]));
        CHECK_OK(MPI_Isend(&me, 1, MPI_INT, left, 2, c, &rq[3]));
        CHECK_OK(MPI_Waitall(4, rq, st));
        CHECK(fromleft == exp[left] && fromright == exp[right],
              "%s: ring got %d/%d, expected %d/%d", what, fromleft,
              fromright, exp[left], exp[right]);
    }
    /* allreduce sum of world ranks, and of squares as doubles */
    {
        int s = -1, es = 0;
        double d = (double)me * me, ds = -1.0, eds = 0.0;
        for (int i = 0; i < k; i++) {
            es += exp[i];
            eds += (double)exp[i] * exp[i];
        }
        CHECK_OK(MPI_Allreduce(&me, &s, 1, MPI_INT, MPI_SUM, c));
        CHECK_OK(MPI_Allreduce(&d, &ds, 1, MPI_DOUBLE, MPI_SUM, c));
        CHECK(s == es && ds == eds, "%s: allreduce %d %g, expected %d %g",
              what, s, ds, es, eds);
    }
}

/* Expected members for color/key functions: processes with my color,
 * sorted by (key, parent rank). colors[i] / keys[i] are indexed by parent
 * rank; parent_world[i] maps parent rank to world rank. */
static int expected(int np, const int *colors, const int *keys,
                    const int *parent_world, int mycolor, int *out)
{
    int idx[MAXN], k = 0;
    for (int i = 0; i < np; i++)
        if (colors[i] == mycolor) idx[k++] = i;
    /* insertion sort by (key, parent rank) */
    for (int i = 1; i < k; i++) {
        int x = idx[i], j = i - 1;
        while (j >= 0 && (keys[idx[j]] > keys[x] ||
                          (keys[idx[j]] == keys[x] && idx[j] > x))) {
            idx[j + 1] = idx[j];
            j--;
        }
        idx[j + 1] = x;
    }
    for (int i = 0; i < k; i++) out[i] = parent_world[idx[i]];
    return k;
}

int main(int argc, char **argv)
{
    int n, me, colors[MAXN], keys[MAXN], ident[MAXN], exp[MAXN], k;
    MPI_Comm c;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (n > MAXN) {
        fprintf(stderr, "too many ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    CHECK_OK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    for (int i = 0; i < n; i++) ident[i] = i;

    /* 1. Three colors, keys reversing the order. */
    for (int i = 0; i < n; i++) {
        colors[i] = i % 3;
        keys[i] = -i;
    }
    CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, colors[me], keys[me], &c));
    k = expected(n, colors, keys, ident, colors[me], exp);
    check_comm(c, exp, k, me, "split 3 colors reversed");
    for (int i = 1; i < k; i++)
        CHECK(exp[i] < exp[i - 1], "test bug: not reversed");

    /* 2. Split of that split (parent ranks are not world ranks): colors by
     * parent rank parity, all keys equal (parent order kept). */
    if (c != MPI_COMM_NULL) {
        int pn, pr, pw[MAXN], pc[MAXN], pk[MAXN], e2[MAXN], k2;
        MPI_Comm c2;
        MPI_Comm_size(c, &pn);
        MPI_Comm_rank(c, &pr);
        members(c, pw);
        for (int i = 0; i < pn; i++) {
            pc[i] = i % 2;
            pk[i] = 5;
        }
        CHECK_OK(MPI_Comm_split(c, pc[pr], pk[pr], &c2));
        k2 = expected(pn, pc, pk, pw, pc[pr], e2);
        check_comm(c2, e2, k2, me, "split of split");
        if (c2 != MPI_COMM_NULL) MPI_Comm_free(&c2);
        MPI_Comm_free(&c);
    }

    /* 3. Keys with ties: key = (n - rank) / 2, one color; ties are broken
     * by the parent rank. */
    for (int i = 0; i < n; i++) {
        colors[i] = 0;
        keys[i] = (n - i) / 2;
    }
    CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, colors[me], keys[me], &c));
    k = expected(n, colors, keys, ident, 0, exp);
    check_comm(c, exp, k, me, "split with tied keys");
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);

    /* 4. MPI_UNDEFINED for the odd ranks and the last rank; large color
     * values for the others. */
    for (int i = 0; i < n; i++) {
        colors[i] = (i % 2 == 1 || (i == n - 1 && n > 1)) ? MPI_UNDEFINED
                                                          : 1000000 + i % 4;
        keys[i] = i;
    }
    c = MPI_COMM_WORLD;
    CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, colors[me], keys[me], &c));
    if (colors[me] == MPI_UNDEFINED) {
        CHECK(c == MPI_COMM_NULL, "MPI_UNDEFINED color did not give NULL");
    } else {
        k = expected(n, colors, keys, ident, colors[me], exp);
        check_comm(c, exp, k, me, "split with some MPI_UNDEFINED");
        if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
    }

    /* 5. Everyone MPI_UNDEFINED. */
    c = MPI_COMM_WORLD;
    CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, me, &c));
    CHECK(c == MPI_COMM_NULL, "all MPI_UNDEFINED did not give NULL");

    /* 6. One color per process: size-1 communicators. */
    CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, me, 0, &c));
    check_comm(c, &me, 1, me, "split singleton");
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);

    /* 7. split_type SHARED, key = rank: ordered by world rank. */
    {
        int got[MAXN], sz, rk = -1, sum = -1, esum = 0;
        c = MPI_COMM_NULL;
        CHECK_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me,
                                     MPI_INFO_NULL, &c));
        CHECK(c != MPI_COMM_NULL, "split_type SHARED gave MPI_COMM_NULL");
        if (c != MPI_COMM_NULL) {
            sz = members(c, got);
            MPI_Comm_rank(c, &rk);
            CHECK(sz >= 1 && sz <= n, "split_type size %d", sz);
            /* Single-node run: every process shares memory with this one. */
            CHECK(sz == n, "split_type size %d, world %d (single node)", sz,
                  n);
            for (int i = 0; i < sz && i < MAXN; i++) {
                CHECK(got[i] >= 0 && got[i] < n, "split_type member %d is %d",
                      i, got[i]);
                if (i > 0)
                    CHECK(got[i] > got[i - 1], "split_type not ordered by key");
                esum += got[i];
            }
            CHECK(rk >= 0 && rk < sz && got[rk] == me,
                  "split_type rank %d does not map to me", rk);
            CHECK_OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, c));
            CHECK(sum == esum, "split_type allreduce %d, expected %d", sum,
                  esum);
            if (sz == n) check_comm(c, ident, n, me, "split_type SHARED");
            MPI_Comm_free(&c);
        }
    }

    /* 8. split_type SHARED of a reversed communicator with reversing keys:
     * order follows the keys. */
    {
        MPI_Comm rev, s;
        int rr;
        CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, 0, -me, &rev));
        MPI_Comm_rank(rev, &rr);
        CHECK_OK(MPI_Comm_split_type(rev, MPI_COMM_TYPE_SHARED, -rr,
                                     MPI_INFO_NULL, &s));
        /* keys -rr = -(n-1-me): ascending key means ascending world rank */
        check_comm(s, ident, n, me, "split_type of reversed comm");
        if (s != MPI_COMM_NULL) MPI_Comm_free(&s);
        MPI_Comm_free(&rev);
    }

    /* 9. split_type MPI_UNDEFINED on odd ranks: they get MPI_COMM_NULL. */
    {
        int ev[MAXN], ne = 0;
        for (int i = 0; i < n; i += 2) ev[ne++] = i;
        c = MPI_COMM_WORLD;
        CHECK_OK(MPI_Comm_split_type(MPI_COMM_WORLD,
                                     me % 2 ? MPI_UNDEFINED
                                            : MPI_COMM_TYPE_SHARED,
                                     0, MPI_INFO_NULL, &c));
        if (me % 2) {
            CHECK(c == MPI_COMM_NULL, "split_type UNDEFINED not NULL");
        } else {
            check_comm(c, ev, ne, me, "split_type SHARED (evens)");
            if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
        }
    }

    MPI_Group_free(&world_group);
    return ct_finish();
}
