/* ranks: 1 2 4 */
/* MPI_Comm_compare: MPI_IDENT for the same handle (also copied into another
 * variable), MPI_CONGRUENT for dup / idup / dup of a dup / split keeping the
 * order / create with the whole group, MPI_SIMILAR for a split or create
 * that permutes the ranks, MPI_UNEQUAL for a proper subset and between
 * MPI_COMM_WORLD and MPI_COMM_SELF (CONGRUENT when the world has one
 * process, and a singleton split is CONGRUENT to MPI_COMM_SELF). The
 * comparison must be symmetric. */
#include "common.h"

static int cmp(MPI_Comm a, MPI_Comm b)
{
    int r1 = -1, r2 = -2;
    CHECK_OK(MPI_Comm_compare(a, b, &r1));
    CHECK_OK(MPI_Comm_compare(b, a, &r2));
    CHECK(r1 == r2, "MPI_Comm_compare not symmetric: %d vs %d", r1, r2);
    return r1;
}

int main(int argc, char **argv)
{
    int n, me, res;
    MPI_Comm alias, dup, dup2, idup, same, rev, crev, half, single, world_c;
    MPI_Request req;
    MPI_Group wg, rg;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);

    alias = MPI_COMM_WORLD;
    res = cmp(MPI_COMM_WORLD, MPI_COMM_WORLD);
    CHECK(res == MPI_IDENT, "world vs world: %d", res);
    res = cmp(alias, MPI_COMM_WORLD);
    CHECK(res == MPI_IDENT, "alias vs world: %d", res);
    res = cmp(MPI_COMM_SELF, MPI_COMM_SELF);
    CHECK(res == MPI_IDENT, "self vs self: %d", res);
    res = cmp(MPI_COMM_WORLD, MPI_COMM_SELF);
    CHECK(res == (n == 1 ? MPI_CONGRUENT : MPI_UNEQUAL), "world vs self: %d",
          res);

    CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    res = cmp(dup, MPI_COMM_WORLD);
    CHECK(res == MPI_CONGRUENT, "dup vs world: %d", res);
    res = cmp(dup, dup);
    CHECK(res == MPI_IDENT, "dup vs itself: %d", res);

    CHECK_OK(MPI_Comm_dup(dup, &dup2));
    res = cmp(dup2, MPI_COMM_WORLD);
    CHECK(res == MPI_CONGRUENT, "dup of dup vs world: %d", res);
    res = cmp(dup2, dup);
    CHECK(res == MPI_CONGRUENT, "dup of dup vs dup: %d", res);

    CHECK_OK(MPI_Comm_idup(MPI_COMM_WORLD, &idup, &req));
    CHECK_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    res = cmp(idup, MPI_COMM_WORLD);
    CHECK(res == MPI_CONGRUENT, "idup vs world: %d", res);
    res = cmp(idup, dup);
    CHECK(res == MPI_CONGRUENT, "idup vs dup: %d", res);

    /* Split keeping the order (all keys equal): CONGRUENT. */
    CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, 3, 0, &same));
    res = cmp(same, MPI_COMM_WORLD);
    CHECK(res == MPI_CONGRUENT, "order-keeping split vs world: %d", res);

    /* Split reversing the order: SIMILAR (CONGRUENT for one process). */
    CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, 0, n - me, &rev));
    res = cmp(rev, MPI_COMM_WORLD);
    CHECK(res == (n > 1 ? MPI_SIMILAR : MPI_CONGRUENT),
          "reversed split vs world: %d", res);
    res = cmp(rev, dup);
    CHECK(res == (n > 1 ? MPI_SIMILAR : MPI_CONGRUENT),
          "reversed split vs dup: %d", res);

    /* Create with a permuted group: SIMILAR; with the world group:
     * CONGRUENT. */
    CHECK_OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    {
        int ranks[64];
        for (int i = 0; i < n && i < 64; i++) ranks[i] = (i + 1) % n;
        CHECK_OK(MPI_Group_incl(wg, n, ranks, &rg));
    }
    CHECK_OK(MPI_Comm_create(MPI_COMM_WORLD, rg, &crev));
    res = cmp(crev, MPI_COMM_WORLD);
    CHECK(res == (n > 1 ? MPI_SIMILAR : MPI_CONGRUENT),
          "create(rotated group) vs world: %d", res);
    res = cmp(crev, rev);
    CHECK(res == (n > 2 ? MPI_SIMILAR : MPI_CONGRUENT),
          "create(rotated group) vs reversed split: %d", res);
    CHECK_OK(MPI_Comm_create(MPI_COMM_WORLD, wg, &world_c));
    res = cmp(world_c, MPI_COMM_WORLD);
    CHECK(res == MPI_CONGRUENT, "create(world group) vs world: %d", res);

    /* Proper subset: UNEQUAL. */
    CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half));
    res = cmp(half, MPI_COMM_WORLD);
    CHECK(res == (n > 1 ? MPI_UNEQUAL : MPI_CONGRUENT), "half vs world: %d",
          res);
    res = cmp(half, dup);
    CHECK(res == (n > 1 ? MPI_UNEQUAL : MPI_CONGRUENT), "half vs dup: %d",
          res);

    /* Singleton split: CONGRUENT to MPI_COMM_SELF, UNEQUAL to world if n>1. */
    CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, me, 0, &single));
    res = cmp(single, MPI_COMM_SELF);
    CHECK(res == MPI_CONGRUENT, "singleton vs self: %d", res);
    if (n == 2) {
        res = cmp(single, half);
        CHECK(res == MPI_CONGRUENT, "singleton vs half (n=2): %d", res);
    }

    /* Comparison still works after the compared-with communicator's parent
     * is freed. */
    CHECK_OK(MPI_Comm_free(&dup));
    CHECK(dup == MPI_COMM_NULL, "dup not MPI_COMM_NULL after free");
    res = cmp(dup2, idup);
    CHECK(res == MPI_CONGRUENT, "dup2 vs idup after freeing dup: %d", res);

    MPI_Group_free(&rg);
    MPI_Group_free(&wg);
    MPI_Comm_free(&dup2);
    MPI_Comm_free(&idup);
    MPI_Comm_free(&same);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&crev);
    MPI_Comm_free(&world_c);
    MPI_Comm_free(&half);
    MPI_Comm_free(&single);
    return ct_finish();
}
