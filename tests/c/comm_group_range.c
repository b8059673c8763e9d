/* ranks: 1 4 8 */
/* MPI_Group_range_incl / MPI_Group_range_excl with strides 1, >1, -1, <-1,
 * single-element ranges (first == last) and strides longer than the range,
 * several ranges per call, on the world group and on a permuted base group
 * (ranges index the base group; excl keeps the base group's order). Every
 * result is compared element by element with an independent expansion. */
#include "common.h"

#define MAXN 64
#define MAXR 4

static MPI_Group world_group;
static int me;

/* Expands ranges into the list of base ranks they name, in order. */
static int expand(int nr, int r[][3], int *out)
{
    int k = 0;
    for (int i = 0; i < nr; i++) {
        int first = r[i][0], last = r[i][1], stride = r[i][2];
        if (stride > 0)
            for (int x = first; x <= last; x += stride) out[k++] = x;
        else
            for (int x = first; x >= last; x += stride) out[k++] = x;
    }
    return k;
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
                         int set)
{
    int got[MAXN], sz = members(g, got), pos = MPI_UNDEFINED, r = -7;
    CHECK(sz == k, "%s (set %d): size %d, expected %d", what, set, sz, k);
    if (sz != k) return;
    for (int i = 0; i < k; i++) {
        CHECK(got[i] == exp[i], "%s (set %d): rank %d is world %d, expected %d",
              what, set, i, got[i], exp[i]);
        if (exp[i] == me) pos = i;
    }
    MPI_Group_rank(g, &r);
    CHECK(r == pos, "%s (set %d): MPI_Group_rank %d, expected %d", what, set,
          r, pos);
}

/* Runs range_incl and range_excl with the given ranges against base (whose
 * members in order are the world ranks base_world[0..n-1]). */
static void try_ranges(MPI_Group base, const int *base_world, int n, int nr,
                       int r[][3], int set, const char *basename)
{
    int sel[MAXN * MAXR], exp[MAXN], k, kk = 0;
    int excluded[MAXN];
    MPI_Group g;
    char what[64];

    k = expand(nr, r, sel);
    for (int i = 0; i < k; i++) exp[i] = base_world[sel[i]];
    snprintf(what, sizeof what, "range_incl on %s", basename);
    CHECK_OK(MPI_Group_range_incl(base, nr, r, &g));
    expect_group(g, exp, k, what, set);
    if (g != MPI_GROUP_EMPTY) {
        CHECK_OK(MPI_Group_free(&g));
        CHECK(g == MPI_GROUP_NULL, "free did not set MPI_GROUP_NULL");
    }

    for (int i = 0; i < n; i++) excluded[i] = 0;
    for (int i = 0; i < k; i++) excluded[sel[i]] = 1;
    for (int i = 0; i < n; i++)
        if (!excluded[i]) exp[kk++] = base_world[i];
    snprintf(what, sizeof what, "range_excl on %s", basename);
    CHECK_OK(MPI_Group_range_excl(base, nr, r, &g));
    expect_group(g, exp, kk, what, set);
    if (kk == 0) {
        int res = -1;
        MPI_Group_compare(g, MPI_GROUP_EMPTY, &res);
        CHECK(res == MPI_IDENT, "range_excl of all: compare %d", res);
    }
    if (g != MPI_GROUP_EMPTY) {
        CHECK_OK(MPI_Group_free(&g));
        CHECK(g == MPI_GROUP_NULL, "free did not set MPI_GROUP_NULL");
    }
}

static void all_sets(MPI_Group base, const int *base_world, int n,
                     const char *basename)
{
    int r[MAXR][3];
    int set = 0;

    /* 1: everything, stride 1 */
    r[0][0] = 0; r[0][1] = n - 1; r[0][2] = 1;
    try_ranges(base, base_world, n, 1, r, ++set, basename);

    /* 2: everything backwards, stride -1 */
    r[0][0] = n - 1; r[0][1] = 0; r[0][2] = -1;
    try_ranges(base, base_world, n, 1, r, ++set, basename);

    /* 3: every second from the top going down, then the others going up */
    r[0][0] = n - 1; r[0][1] = 0; r[0][2] = -2;
    r[1][0] = n % 2; r[1][1] = n - 1; r[1][2] = 2;
    try_ranges(base, base_world, n, n > 1 ? 2 : 1, r, ++set, basename);

    /* 4: stride 3 upward (last not hit exactly for most n) */
    r[0][0] = 0; r[0][1] = n - 1; r[0][2] = 3;
    try_ranges(base, base_world, n, 1, r, ++set, basename);

    /* 5: stride longer than the range, negative: only the first element */
    r[0][0] = n - 1; r[0][1] = 0; r[0][2] = -(n + 5);
    try_ranges(base, base_world, n, 1, r, ++set, basename);

    /* 6: single-element ranges (first == last) with odd strides */
    if (n > 1) {
        r[0][0] = n - 1; r[0][1] = n - 1; r[0][2] = 7;
        r[1][0] = 0; r[1][1] = 0; r[1][2] = -4;
        try_ranges(base, base_world, n, 2, r, ++set, basename);
    } else {
        ++set;
    }

    /* 7: three ranges: middle down by -3, top element, bottom up by 5 */
    if (n >= 8) {
        r[0][0] = n - 2; r[0][1] = 1; r[0][2] = -3; /* 6, 3 for n=8 */
        r[1][0] = n - 1; r[1][1] = n - 1; r[1][2] = 1; /* 7 */
        r[2][0] = 0; r[2][1] = 2; r[2][2] = 5;      /* 0 */
        try_ranges(base, base_world, n, 3, r, ++set, basename);
    } else if (n >= 4) {
        r[0][0] = 2; r[0][1] = 1; r[0][2] = -1;  /* 2, 1 */
        r[1][0] = n - 1; r[1][1] = n - 1; r[1][2] = -1; /* n-1 */
        r[2][0] = 0; r[2][1] = 0; r[2][2] = 5;   /* 0 */
        try_ranges(base, base_world, n, 3, r, ++set, basename);
    }
}

int main(int argc, char **argv)
{
    int n, ident[MAXN], perm_world[MAXN];
    MPI_Group perm;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (n > MAXN) {
        fprintf(stderr, "too many ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    CHECK_OK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));

    for (int i = 0; i < n; i++) ident[i] = i;
    all_sets(world_group, ident, n, "world");

    /* Permuted base: world ranks rotated by half and reversed. */
    for (int i = 0; i < n; i++) perm_world[i] = (n - 1 - i + n / 2) % n;
    CHECK_OK(MPI_Group_incl(world_group, n, perm_world, &perm));
    all_sets(perm, perm_world, n, "permuted");

    /* range_incl of a range list equivalent to the permutation itself gives
     * a group IDENT to it. */
    if (n >= 2) {
        int r[2][3], res = -1;
        MPI_Group g;
        /* perm_world = n-1+n/2 .. down, mod n: world ranks (n/2-1 .. 0)
         * then (n-1 .. n/2). */
        r[0][0] = n / 2 - 1; r[0][1] = 0; r[0][2] = -1;
        r[1][0] = n - 1; r[1][1] = n / 2; r[1][2] = -1;
        CHECK_OK(MPI_Group_range_incl(world_group, 2, r, &g));
        CHECK_OK(MPI_Group_compare(g, perm, &res));
        CHECK(res == MPI_IDENT, "range_incl rebuild of permutation: %d", res);
        MPI_Group_free(&g);
    }

    MPI_Group_free(&perm);
    MPI_Group_free(&world_group);
    return ct_finish();
}
