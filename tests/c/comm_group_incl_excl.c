/* ranks: 1 2 4 */
/* Group constructors MPI_Group_incl / MPI_Group_excl on the group of
 * MPI_COMM_WORLD: incl with n=0 gives an empty group (IDENT to
 * MPI_GROUP_EMPTY), incl puts world rank ranks[i] at rank i, excl keeps the
 * order of the base group (also of a permuted base), MPI_Group_size /
 * MPI_Group_rank (MPI_UNDEFINED for non-members), and MPI_Group_free sets
 * the handle to MPI_GROUP_NULL. */
#include "common.h"

#define MAXN 64

static MPI_Group world_group;

/* World ranks of the members of g, in g's rank order; returns the size. */
static int members(MPI_Group g, int *out)
{
    int k = -1, in[MAXN];
    MPI_Group_size(g, &k);
    if (k < 0 || k > MAXN) return -1;
    for (int i = 0; i < k; i++) in[i] = i;
    if (k > 0) MPI_Group_translate_ranks(g, k, in, world_group, out);
    return k;
}

/* Checks that g has exactly the world ranks exp[0..k-1] in that order and
 * that MPI_Group_rank gives this process's position (or MPI_UNDEFINED). */
static void expect_group(MPI_Group g, const int *exp, int k, int me,
                         const char *what)
{
    int got[MAXN], sz = members(g, got);
    CHECK(sz == k, "%s: size %d, expected %d", what, sz, k);
    if (sz != k) return;
    int pos = MPI_UNDEFINED;
    for (int i = 0; i < k; i++) {
        CHECK(got[i] == exp[i], "%s: rank %d is world %d, expected %d", what,
              i, got[i], exp[i]);
        if (exp[i] == me) pos = i;
    }
    int r = -7;
    CHECK_OK(MPI_Group_rank(g, &r));
    CHECK(r == pos, "%s: MPI_Group_rank %d, expected %d", what, r, pos);
}

static void free_group(MPI_Group *g, const char *what)
{
    CHECK_OK(MPI_Group_free(g));
    CHECK(*g == MPI_GROUP_NULL, "%s: handle not MPI_GROUP_NULL after free",
          what);
}

int main(int argc, char **argv)
{
    int n, me, res;
    int ranks[MAXN], exp[MAXN];
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (n > MAXN) {
        fprintf(stderr, "too many ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    CHECK_OK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    {
        int sz = -1, r = -1;
        CHECK_OK(MPI_Group_size(world_group, &sz));
        CHECK_OK(MPI_Group_rank(world_group, &r));
        CHECK(sz == n, "world group size %d, expected %d", sz, n);
        CHECK(r == me, "world group rank %d, expected %d", r, me);
    }

    /* Empty group predefined handle. */
    {
        int sz = -1, r = -1;
        CHECK_OK(MPI_Group_size(MPI_GROUP_EMPTY, &sz));
        CHECK(sz == 0, "MPI_GROUP_EMPTY size %d", sz);
        CHECK_OK(MPI_Group_rank(MPI_GROUP_EMPTY, &r));
        CHECK(r == MPI_UNDEFINED, "MPI_GROUP_EMPTY rank %d", r);
    }

    /* incl with n = 0: an empty group. */
    {
        MPI_Group g = MPI_GROUP_NULL;
        int dummy[1] = {0}, sz = -1, r = -1;
        CHECK_OK(MPI_Group_incl(world_group, 0, dummy, &g));
        CHECK(g != MPI_GROUP_NULL, "incl(0) gave MPI_GROUP_NULL");
        CHECK_OK(MPI_Group_size(g, &sz));
        CHECK(sz == 0, "incl(0) size %d", sz);
        CHECK_OK(MPI_Group_rank(g, &r));
        CHECK(r == MPI_UNDEFINED, "incl(0) rank %d", r);
        res = -1;
        CHECK_OK(MPI_Group_compare(g, MPI_GROUP_EMPTY, &res));
        CHECK(res == MPI_IDENT, "incl(0) vs MPI_GROUP_EMPTY: %d", res);
        if (g != MPI_GROUP_EMPTY) free_group(&g, "incl(0)");
    }

    /* incl of the whole group in world order is IDENT to the world group. */
    {
        MPI_Group g;
        for (int i = 0; i < n; i++) ranks[i] = i;
        CHECK_OK(MPI_Group_incl(world_group, n, ranks, &g));
        expect_group(g, ranks, n, me, "incl identity");
        res = -1;
        CHECK_OK(MPI_Group_compare(g, world_group, &res));
        CHECK(res == MPI_IDENT, "incl identity vs world: %d", res);
        free_group(&g, "incl identity");
    }

    /* incl of a permutation (reversed, and for n > 2 rotated by one so it
     * is not an involution): rank i of the new group is world rank
     * ranks[i]. */
    MPI_Group perm;
    int perm_ranks[MAXN];
    for (int i = 0; i < n; i++)
        perm_ranks[i] = (n - 1 - i + (n > 2 ? 1 : 0)) % n;
    CHECK_OK(MPI_Group_incl(world_group, n, perm_ranks, &perm));
    expect_group(perm, perm_ranks, n, me, "incl permutation");
    res = -1;
    CHECK_OK(MPI_Group_compare(perm, world_group, &res));
    CHECK(res == (n > 1 ? MPI_SIMILAR : MPI_IDENT),
          "permutation vs world: %d", res);

    /* incl of a proper subset: odd world ranks in descending order. */
    {
        int k = 0;
        for (int r = n - 1; r >= 0; r--)
            if (r % 2 == 1) ranks[k++] = r;
        if (k > 0) {
            MPI_Group g;
            CHECK_OK(MPI_Group_incl(world_group, k, ranks, &g));
            expect_group(g, ranks, k, me, "incl odd descending");
            if (me % 2 == 0) {
                int r = -1;
                MPI_Group_rank(g, &r);
                CHECK(r == MPI_UNDEFINED, "non-member rank %d", r);
            }
            free_group(&g, "incl odd descending");
        }
    }

    /* incl from a permuted base: ranks index the base group, not world. */
    {
        MPI_Group g;
        int k = 0;
        for (int i = 0; i < n; i += 2) ranks[k++] = i; /* base ranks 0,2,.. */
        CHECK_OK(MPI_Group_incl(perm, k, ranks, &g));
        for (int i = 0; i < k; i++) exp[i] = perm_ranks[ranks[i]];
        expect_group(g, exp, k, me, "incl from permuted base");
        free_group(&g, "incl from permuted base");
    }

    /* excl with n = 0 gives the same group. */
    {
        MPI_Group g;
        int dummy[1] = {0};
        CHECK_OK(MPI_Group_excl(perm, 0, dummy, &g));
        expect_group(g, perm_ranks, n, me, "excl nothing");
        res = -1;
        CHECK_OK(MPI_Group_compare(g, perm, &res));
        CHECK(res == MPI_IDENT, "excl nothing vs base: %d", res);
        free_group(&g, "excl nothing");
    }

    /* excl from the world group: exclude last and first (given in that
     * order); the rest keep ascending world order. */
    if (n >= 2) {
        MPI_Group g;
        int ex[2] = {n - 1, 0}, k = 0;
        CHECK_OK(MPI_Group_excl(world_group, 2, ex, &g));
        for (int r = 1; r < n - 1; r++) exp[k++] = r;
        expect_group(g, exp, k, me, "excl first and last");
        free_group(&g, "excl first and last");
    }

    /* excl from a permuted base keeps the base's order: exclude base ranks
     * 1, 3, 5, ... (listed in descending order). */
    {
        MPI_Group g;
        int nex = 0, k = 0;
        for (int i = n - 1; i >= 0; i--)
            if (i % 2 == 1) ranks[nex++] = i;
        CHECK_OK(MPI_Group_excl(perm, nex, ranks, &g));
        for (int i = 0; i < n; i++)
            if (i % 2 == 0) exp[k++] = perm_ranks[i];
        expect_group(g, exp, k, me, "excl from permuted base");
        free_group(&g, "excl from permuted base");
    }

    /* excl of everything: empty. */
    {
        MPI_Group g;
        int sz = -1;
        for (int i = 0; i < n; i++) ranks[i] = n - 1 - i;
        CHECK_OK(MPI_Group_excl(world_group, n, ranks, &g));
        CHECK_OK(MPI_Group_size(g, &sz));
        CHECK(sz == 0, "excl all: size %d", sz);
        res = -1;
        CHECK_OK(MPI_Group_compare(g, MPI_GROUP_EMPTY, &res));
        CHECK(res == MPI_IDENT, "excl all vs MPI_GROUP_EMPTY: %d", res);
        if (g != MPI_GROUP_EMPTY) free_group(&g, "excl all");
    }

    /* excl of just this process: everyone else in world order. */
    {
        MPI_Group g;
        int k = 0, r = -1;
        CHECK_OK(MPI_Group_excl(world_group, 1, &me, &g));
        for (int i = 0; i < n; i++)
            if (i != me) exp[k++] = i;
        expect_group(g, exp, k, me, "excl self");
        MPI_Group_rank(g, &r);
        CHECK(r == MPI_UNDEFINED, "excl self: rank %d", r);
        if (g != MPI_GROUP_EMPTY) free_group(&g, "excl self");
    }

    /* A group derived from another stays valid after the base is freed. */
    {
        MPI_Group g;
        int k = 0;
        for (int i = n - 1; i >= 0; i -= 2) ranks[k++] = i;
        CHECK_OK(MPI_Group_incl(perm, k, ranks, &g));
        for (int i = 0; i < k; i++) exp[i] = perm_ranks[ranks[i]];
        free_group(&perm, "permutation");
        expect_group(g, exp, k, me, "incl after base freed");
        free_group(&g, "incl after base freed");
    }

    free_group(&world_group, "world group");
    return ct_finish();
}
