/* ranks: 1 2 3 4 */
/* MPI_Group_union / MPI_Group_intersection / MPI_Group_difference and their
 * order rules (union: group1 in its order, then group2's members not in
 * group1 in group2's order; intersection and difference: group1's order),
 * with permuted, overlapping, disjoint, identical and empty operands;
 * MPI_Group_compare giving MPI_IDENT / MPI_SIMILAR / MPI_UNEQUAL; and
 * MPI_Group_translate_ranks: between permuted groups, into a subgroup
 * (MPI_UNDEFINED for processes not in it), MPI_PROC_NULL mapping to
 * MPI_PROC_NULL, into MPI_GROUP_EMPTY, n = 0, a group onto itself, and the
 * group of a split communicator onto the world group, with MPI_Group_rank
 * (MPI_UNDEFINED for non-members) and freeing a communicator's group while
 * the communicator stays usable. */
#include "common.h"

#define MAXN 64

static MPI_Group world_group;
static int me;

static MPI_Group make(const int *world_ranks, int k)
{
    MPI_Group g = MPI_GROUP_NULL;
    int dummy[1] = {0};
    CHECK_OK(MPI_Group_incl(world_group, k, k ? world_ranks : dummy, &g));
    return g;
}

static int members(MPI_Group g, int *out)
{
    int k = -1, in[MAXN];
    MPI_Group_size(g, &k);
    if (k < 0 || k > MAXN) return -1;
    for (int i = 0; i < k; i++) in[i] = i;
    if (k > 0) MPI_Group_translate_ranks(g, k, in, world_group, out);
    return k;
}

static void expect_group(MPI_Group g, const int *exp, int k, const char *what,
                         int tcase)
{
    int got[MAXN], sz = members(g, got), pos = MPI_UNDEFINED, r = -7;
    CHECK(sz == k, "%s (case %d): size %d, expected %d", what, tcase, sz, k);
    if (sz != k) return;
    for (int i = 0; i < k; i++) {
        CHECK(got[i] == exp[i],
              "%s (case %d): rank %d is world %d, expected %d", what, tcase,
              i, got[i], exp[i]);
        if (exp[i] == me) pos = i;
    }
    MPI_Group_rank(g, &r);
    CHECK(r == pos, "%s (case %d): MPI_Group_rank %d, expected %d", what,
          tcase, r, pos);
    if (k == 0) {
        int res = -1;
        MPI_Group_compare(g, MPI_GROUP_EMPTY, &res);
        CHECK(res == MPI_IDENT, "%s (case %d): empty result vs GROUP_EMPTY %d",
              what, tcase, res);
    }
}

static int contains(const int *l, int k, int x)
{
    for (int i = 0; i < k; i++)
        if (l[i] == x) return 1;
    return 0;
}

static void release(MPI_Group *g)
{
    if (*g != MPI_GROUP_EMPTY) {
        CHECK_OK(MPI_Group_free(g));
        CHECK(*g == MPI_GROUP_NULL, "free did not set MPI_GROUP_NULL");
    }
}

/* Checks the three set operations on groups built with members l1 and l2
 * (world ranks, in order), against an independent computation. */
static void setops(const int *l1, int k1, const int *l2, int k2, int tcase)
{
    int exp[2 * MAXN], k;
    MPI_Group g1 = make(l1, k1), g2 = make(l2, k2), r;

    k = 0;
    for (int i = 0; i < k1; i++) exp[k++] = l1[i];
    for (int i = 0; i < k2; i++)
        if (!contains(l1, k1, l2[i])) exp[k++] = l2[i];
    CHECK_OK(MPI_Group_union(g1, g2, &r));
    expect_group(r, exp, k, "union", tcase);
    release(&r);

    k = 0;
    for (int i = 0; i < k1; i++)
        if (contains(l2, k2, l1[i])) exp[k++] = l1[i];
    CHECK_OK(MPI_Group_intersection(g1, g2, &r));
    expect_group(r, exp, k, "intersection", tcase);
    release(&r);

    k = 0;
    for (int i = 0; i < k1; i++)
        if (!contains(l2, k2, l1[i])) exp[k++] = l1[i];
    CHECK_OK(MPI_Group_difference(g1, g2, &r));
    expect_group(r, exp, k, "difference", tcase);
    release(&r);

    release(&g1);
    release(&g2);
}

static int compare_lists(const int *l1, int k1, const int *l2, int k2)
{
    MPI_Group g1 = make(l1, k1), g2 = make(l2, k2);
    int res = -1;
    CHECK_OK(MPI_Group_compare(g1, g2, &res));
    release(&g1);
    release(&g2);
    return res;
}

/* MPI_Group_translate_ranks and MPI_Group_rank / MPI_Group_size on
 * permuted groups, subgroups and the group of a split communicator. */
static void translate_tests(void)
{
    int n, k;
    int in[MAXN + 4], out[MAXN + 4], lst[MAXN];
    MPI_Group wg, rev, evens, r;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK_OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));

    for (int i = 0; i < n; i++) lst[i] = n - 1 - i;
    CHECK_OK(MPI_Group_incl(wg, n, lst, &rev));
    k = 0;
    for (int i = 0; i < n; i += 2) lst[k++] = i;
    const int ne = k;
    CHECK_OK(MPI_Group_incl(wg, ne, lst, &evens));

    /* Ranks and sizes. */
    {
        int sz = -1, rk = -1;
        MPI_Group_size(rev, &sz);
        MPI_Group_rank(rev, &rk);
        CHECK(sz == n && rk == n - 1 - me, "rev: size %d rank %d", sz, rk);
        MPI_Group_size(evens, &sz);
        MPI_Group_rank(evens, &rk);
        CHECK(sz == ne, "evens: size %d, expected %d", sz, ne);
        CHECK(rk == (me % 2 == 0 ? me / 2 : MPI_UNDEFINED),
              "evens: rank %d on world rank %d", rk, me);
    }

    /* rev -> world and world -> rev. */
    for (int i = 0; i < n; i++) { in[i] = i; out[i] = -99; }
    CHECK_OK(MPI_Group_translate_ranks(rev, n, in, wg, out));
    for (int i = 0; i < n; i++)
        CHECK(out[i] == n - 1 - i, "rev->world: %d -> %d", i, out[i]);
    for (int i = 0; i < n; i++) { in[i] = n - 1 - i; out[i] = -99; }
    CHECK_OK(MPI_Group_translate_ranks(wg, n, in, rev, out));
    for (int i = 0; i < n; i++)
        CHECK(out[i] == i, "world->rev: %d -> %d", in[i], out[i]);

    /* rev -> evens: MPI_UNDEFINED for odd world ranks. */
    for (int i = 0; i < n; i++) { in[i] = i; out[i] = -99; }
    CHECK_OK(MPI_Group_translate_ranks(rev, n, in, evens, out));
    for (int i = 0; i < n; i++) {
        int w = n - 1 - i;
        int e = (w % 2 == 0) ? w / 2 : MPI_UNDEFINED;
        CHECK(out[i] == e, "rev->evens: %d (world %d) -> %d, expected %d", i,
              w, out[i], e);
    }

    /* evens -> rev, with MPI_PROC_NULL entries mixed in and repeated
     * ranks. */
    {
        int m = 0;
        in[m++] = MPI_PROC_NULL;
        for (int i = ne - 1; i >= 0; i--) in[m++] = i;
        in[m++] = MPI_PROC_NULL;
        in[m++] = 0;
        for (int i = 0; i < m; i++) out[i] = -99;
        CHECK_OK(MPI_Group_translate_ranks(evens, m, in, rev, out));
        for (int i = 0; i < m; i++) {
            int e = (in[i] == MPI_PROC_NULL) ? MPI_PROC_NULL
                                             : n - 1 - 2 * in[i];
            CHECK(out[i] == e, "evens->rev: in[%d]=%d -> %d, expected %d", i,
                  in[i], out[i], e);
        }
    }

    /* A group onto itself is the identity. */
    for (int i = 0; i < ne; i++) { in[i] = ne - 1 - i; out[i] = -99; }
    CHECK_OK(MPI_Group_translate_ranks(evens, ne, in, evens, out));
    for (int i = 0; i < ne; i++)
        CHECK(out[i] == in[i], "evens->evens: %d -> %d", in[i], out[i]);

    /* Into the empty group: everything undefined. */
    in[0] = 0;
    in[1] = n - 1;
    out[0] = out[1] = -99;
    CHECK_OK(MPI_Group_translate_ranks(wg, 2, in, MPI_GROUP_EMPTY, out));
    CHECK(out[0] == MPI_UNDEFINED, "world->EMPTY: 0 -> %d", out[0]);
    CHECK(out[1] == MPI_UNDEFINED, "world->EMPTY: n-1 -> %d", out[1]);

    /* n = 0 leaves the output alone and succeeds. */
    out[0] = -99;
    CHECK_OK(MPI_Group_translate_ranks(wg, 0, in, rev, out));
    CHECK(out[0] == -99, "n=0 wrote the output: %d", out[0]);

    /* Group of a split communicator (odd/even, reversed by key). */
    {
        MPI_Comm c;
        MPI_Group cg;
        int csz = -1, crk = -1, gsz = -1, grk = -1;
        CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, me % 2, n - me, &c));
        MPI_Comm_size(c, &csz);
        MPI_Comm_rank(c, &crk);
        CHECK_OK(MPI_Comm_group(c, &cg));
        MPI_Group_size(cg, &gsz);
        MPI_Group_rank(cg, &grk);
        CHECK(gsz == csz && grk == crk,
              "comm group size/rank %d/%d vs comm %d/%d", gsz, grk, csz, crk);
        /* Members in this color, sorted by key n - w: descending world. */
        k = 0;
        for (int w = n - 1; w >= 0; w--)
            if (w % 2 == me % 2) lst[k++] = w;
        CHECK(csz == k, "split size %d, expected %d", csz, k);
        for (int i = 0; i < csz && i < MAXN; i++) { in[i] = i; out[i] = -99; }
        CHECK_OK(MPI_Group_translate_ranks(cg, csz, in, wg, out));
        for (int i = 0; i < csz && i < k; i++)
            CHECK(out[i] == lst[i], "split group rank %d -> world %d, exp %d",
                  i, out[i], lst[i]);
        /* world -> split group: the other color is undefined. */
        for (int i = 0; i < n; i++) { in[i] = i; out[i] = -99; }
        CHECK_OK(MPI_Group_translate_ranks(wg, n, in, cg, out));
        for (int w = 0; w < n; w++) {
            int e = MPI_UNDEFINED;
            for (int i = 0; i < k; i++)
                if (lst[i] == w) e = i;
            CHECK(out[w] == e, "world %d -> split group %d, expected %d", w,
                  out[w], e);
        }
        /* Freeing the group does not affect the communicator. */
        CHECK_OK(MPI_Group_free(&cg));
        CHECK(cg == MPI_GROUP_NULL, "group handle not NULL after free");
        {
            int sum = -1, esum = 0;
            for (int i = 0; i < k; i++) esum += lst[i];
            CHECK_OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, c));
            CHECK(sum == esum, "allreduce on split comm: %d, expected %d",
                  sum, esum);
        }
        CHECK_OK(MPI_Comm_free(&c));
    }

    /* Derived groups of derived groups translate consistently. */
    {
        int two[2] = {ne - 1, 0};
        int cnt = ne > 1 ? 2 : 1;
        CHECK_OK(MPI_Group_incl(evens, cnt, two, &r));
        for (int i = 0; i < cnt; i++) { in[i] = i; out[i] = -99; }
        CHECK_OK(MPI_Group_translate_ranks(r, cnt, in, wg, out));
        CHECK(out[0] == 2 * (ne - 1), "sub-evens 0 -> world %d", out[0]);
        if (cnt > 1) CHECK(out[1] == 0, "sub-evens 1 -> world %d", out[1]);
        MPI_Group_free(&r);
    }

    MPI_Group_free(&evens);
    MPI_Group_free(&rev);
    CHECK(evens == MPI_GROUP_NULL && rev == MPI_GROUP_NULL,
          "group handles not NULL after free");
    MPI_Group_free(&wg);
}

int main(int argc, char **argv)
{
    int n, all[MAXN], rev[MAXN], rot[MAXN], evens[MAXN], odds_desc[MAXN];
    int low[MAXN], high_desc[MAXN];
    int ne = 0, no = 0, nl = 0, nh = 0, res;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (n > MAXN) {
        fprintf(stderr, "too many ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    CHECK_OK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));

    for (int i = 0; i < n; i++) {
        all[i] = i;
        rev[i] = n - 1 - i;
        rot[i] = (i + 1) % n;
        if (i % 2 == 0) evens[ne++] = i;
    }
    for (int i = n - 1; i >= 0; i--)
        if (i % 2 == 1) odds_desc[no++] = i;
    for (int i = 0; i < (n + 1) / 2 + 1 && i < n; i++) low[nl++] = i;
    for (int i = n - 1; i >= n / 2; i--) high_desc[nh++] = i;

    int tcase = 0;
    setops(rev, n, evens, ne, ++tcase);        /* superset x subset */
    setops(evens, ne, rev, n, ++tcase);        /* subset x superset */
    setops(evens, ne, odds_desc, no, ++tcase); /* disjoint */
    setops(odds_desc, no, evens, ne, ++tcase); /* disjoint, other way */
    setops(low, nl, high_desc, nh, ++tcase);   /* overlapping */
    setops(high_desc, nh, low, nl, ++tcase);   /* overlapping, other way */
    setops(rot, n, rev, n, ++tcase);           /* same members, two orders */
    setops(rev, n, rev, n, ++tcase);           /* identical */
    setops(rot, n, all, 0, ++tcase);           /* with empty */
    setops(all, 0, rot, n, ++tcase);           /* empty with */
    setops(all, 0, all, 0, ++tcase);           /* both empty */

    /* The predefined empty group as an operand. */
    {
        MPI_Group g = make(rev, n), r;
        CHECK_OK(MPI_Group_union(MPI_GROUP_EMPTY, g, &r));
        expect_group(r, rev, n, "union(EMPTY, g)", 0);
        res = -1;
        CHECK_OK(MPI_Group_compare(r, g, &res));
        CHECK(res == MPI_IDENT, "union(EMPTY, g) vs g: %d", res);
        release(&r);
        CHECK_OK(MPI_Group_intersection(g, MPI_GROUP_EMPTY, &r));
        expect_group(r, all, 0, "intersection(g, EMPTY)", 0);
        release(&r);
        CHECK_OK(MPI_Group_difference(g, MPI_GROUP_EMPTY, &r));
        expect_group(r, rev, n, "difference(g, EMPTY)", 0);
        release(&r);
        CHECK_OK(MPI_Group_difference(MPI_GROUP_EMPTY, g, &r));
        expect_group(r, all, 0, "difference(EMPTY, g)", 0);
        release(&r);
        release(&g);
    }

    /* Union of the two halves gives back the world group exactly. */
    {
        int lo[MAXN], hi[MAXN], klo = 0, khi = 0;
        for (int i = 0; i < n; i++) {
            if (i < n / 2) lo[klo++] = i;
            else hi[khi++] = i;
        }
        MPI_Group a = make(lo, klo), b = make(hi, khi), u;
        CHECK_OK(MPI_Group_union(a, b, &u));
        res = -1;
        CHECK_OK(MPI_Group_compare(u, world_group, &res));
        CHECK(res == MPI_IDENT, "union of halves vs world: %d", res);
        release(&u);
        CHECK_OK(MPI_Group_union(b, a, &u));
        res = -1;
        CHECK_OK(MPI_Group_compare(u, world_group, &res));
        CHECK(res == (klo > 0 ? MPI_SIMILAR : MPI_IDENT),
              "union of halves (high first) vs world: %d", res);
        release(&u);
        release(&a);
        release(&b);
    }

    /* MPI_Group_compare. */
    res = compare_lists(all, n, all, n);
    CHECK(res == MPI_IDENT, "compare(all, all) = %d", res);
    res = -1;
    CHECK_OK(MPI_Group_compare(world_group, world_group, &res));
    CHECK(res == MPI_IDENT, "compare(world, world) = %d", res);
    res = compare_lists(rev, n, all, n);
    CHECK(res == (n > 1 ? MPI_SIMILAR : MPI_IDENT), "compare(rev, all) = %d",
          res);
    res = compare_lists(rot, n, rev, n);
    CHECK(res == (n > 2 ? MPI_SIMILAR : MPI_IDENT), "compare(rot, rev) = %d",
          res);
    if (n > 1) {
        res = compare_lists(evens, ne, all, n);
        CHECK(res == MPI_UNEQUAL, "compare(evens, all) = %d", res);
        res = compare_lists(evens, ne, odds_desc, no);
        CHECK(res == MPI_UNEQUAL, "compare(evens, odds) = %d", res);
        /* same size, different members */
        int a[1] = {0}, b[1] = {n - 1};
        res = compare_lists(a, 1, b, 1);
        CHECK(res == MPI_UNEQUAL, "compare({0}, {n-1}) = %d", res);
    }
    res = compare_lists(all, n, all, 0);
    CHECK(res == MPI_UNEQUAL, "compare(all, empty) = %d", res);
    res = -1;
    CHECK_OK(MPI_Group_compare(MPI_GROUP_EMPTY, MPI_GROUP_EMPTY, &res));
    CHECK(res == MPI_IDENT, "compare(EMPTY, EMPTY) = %d", res);

    /* The group of MPI_COMM_SELF and a singleton group of this process. */
    {
        MPI_Group self, mine = make(&me, 1);
        CHECK_OK(MPI_Comm_group(MPI_COMM_SELF, &self));
        res = -1;
        CHECK_OK(MPI_Group_compare(self, mine, &res));
        CHECK(res == MPI_IDENT, "compare(self group, {me}) = %d", res);
        res = -1;
        CHECK_OK(MPI_Group_compare(self, world_group, &res));
        CHECK(res == (n == 1 ? MPI_IDENT : MPI_UNEQUAL),
              "compare(self group, world group) = %d", res);
        release(&self);
        release(&mine);
    }

    translate_tests();

    release(&world_group);
    return ct_finish();
}
