/* ranks: 1 2 4 8 */
/* MPI_Comm_create with a permuted subgroup (members get a communicator
 * ordered like the group, non-members MPI_COMM_NULL), with MPI_GROUP_EMPTY
 * and with the whole group; the MPI-2.2 form where each process passes its
 * own disjoint group (evens / odds); MPI_Comm_create_group called only by
 * the group's members, concurrently by disjoint groups with the same tag,
 * from a derived parent, and on singleton groups, and by processes outside
 * the group (MPI_COMM_NULL, a local call). Each result is used for a
 * ring exchange and an allreduce. */
#include "common.h"

#define MAXN 64

static MPI_Group world_group;

/* Checks that comm c has exactly the world ranks exp[0..k-1] in that
 * order, then does a ring exchange and an allreduce on it. */
static void check_comm(MPI_Comm c, const int *exp, int k, int me,
                       const char *what)
{
    int sz = -1, rk = -1, pos = -1, in[MAXN], out[MAXN];
    MPI_Group g;
    CHECK(c != MPI_COMM_NULL, "%s: member got MPI_COMM_NULL", what);
    if (c == MPI_COMM_NULL) return;
    CHECK_OK(MPI_Comm_size(c, &sz));
    CHECK_OK(MPI_Comm_rank(c, &rk));
    for (int i = 0; i < k; i++)
        if (exp[i] == me) pos = i;
    CHECK(sz == k, "%s: size %d, expected %d", what, sz, k);
    CHECK(rk == pos, "%s: rank %d, expected %d", what, rk, pos);
    if (sz != k || rk != pos) return;
    CHECK_OK(MPI_Comm_group(c, &g));
    for (int i = 0; i < k; i++) in[i] = i;
    MPI_Group_translate_ranks(g, k, in, world_group, out);
    for (int i = 0; i < k; i++)
        CHECK(out[i] == exp[i], "%s: rank %d is world %d, expected %d", what,
              i, out[i], exp[i]);
    MPI_Group_free(&g);

    /* Ring: send my world rank to the right, receive from the left. */
    {
        int right = (rk + 1) % k, left = (rk + k - 1) % k, got = -1;
        MPI_Status st;
        CHECK_OK(MPI_Sendrecv(&me, 1, MPI_INT, right, 9, &got, 1, MPI_INT,
                              left, 9, c, &st));
        CHECK(got == exp[left], "%s: ring got %d, expected %d", what, got,
              exp[left]);
        CHECK(st.MPI_SOURCE == left, "%s: ring source %d, expected %d", what,
              st.MPI_SOURCE, left);
    }
    /* Allreduce: sum and max of world ranks. */
    {
        int v[2] = {me, me}, r[2] = {-1, -1}, esum = 0, emax = -1;
        for (int i = 0; i < k; i++) {
            esum += exp[i];
            if (exp[i] > emax) emax = exp[i];
        }
        CHECK_OK(MPI_Allreduce(&v[0], &r[0], 1, MPI_INT, MPI_SUM, c));
        CHECK_OK(MPI_Allreduce(&v[1], &r[1], 1, MPI_INT, MPI_MAX, c));
        CHECK(r[0] == esum && r[1] == emax,
              "%s: allreduce sum %d max %d, expected %d %d", what, r[0], r[1],
              esum, emax);
    }
}

static void free_comm(MPI_Comm *c)
{
    CHECK_OK(MPI_Comm_free(c));
    CHECK(*c == MPI_COMM_NULL, "comm handle not MPI_COMM_NULL after free");
}

int main(int argc, char **argv)
{
    int n, me, lst[MAXN], k;
    MPI_Comm c;
    MPI_Group g;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (n > MAXN) {
        fprintf(stderr, "too many ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    CHECK_OK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));

    /* 1. Subgroup: the lower ceil(n/2) world ranks, in reverse order. */
    k = 0;
    for (int i = (n + 1) / 2 - 1; i >= 0; i--) lst[k++] = i;
    CHECK_OK(MPI_Group_incl(world_group, k, lst, &g));
    c = MPI_COMM_WORLD; /* must be overwritten */
    CHECK_OK(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
    if (me < (n + 1) / 2) {
        check_comm(c, lst, k, me, "create(lower half reversed)");
        if (c != MPI_COMM_NULL) free_comm(&c);
    } else {
        CHECK(c == MPI_COMM_NULL, "non-member did not get MPI_COMM_NULL");
    }
    MPI_Group_free(&g);

    /* 2. MPI_GROUP_EMPTY: everyone gets MPI_COMM_NULL. */
    c = MPI_COMM_WORLD;
    CHECK_OK(MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_EMPTY, &c));
    CHECK(c == MPI_COMM_NULL, "create(GROUP_EMPTY) did not give COMM_NULL");

    /* 3. The whole group, from a duplicate parent. */
    {
        MPI_Comm d;
        CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
        CHECK_OK(MPI_Comm_create(d, world_group, &c));
        for (int i = 0; i < n; i++) lst[i] = i;
        check_comm(c, lst, n, me, "create(world group)");
        if (c != MPI_COMM_NULL) free_comm(&c);
        free_comm(&d);
    }

    /* 4. MPI-2.2 disjoint form: evens pass the evens group (descending),
     * odds pass the odds group (ascending). */
    {
        int ev[MAXN], od[MAXN], ne = 0, no = 0;
        for (int i = n - 1; i >= 0; i--)
            if (i % 2 == 0) ev[ne++] = i;
        for (int i = 0; i < n; i++)
            if (i % 2 == 1) od[no++] = i;
        if (me % 2 == 0)
            CHECK_OK(MPI_Group_incl(world_group, ne, ev, &g));
        else
            CHECK_OK(MPI_Group_incl(world_group, no, od, &g));
        c = MPI_COMM_NULL;
        CHECK_OK(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
        if (me % 2 == 0)
            check_comm(c, ev, ne, me, "disjoint create (evens)");
        else
            check_comm(c, od, no, me, "disjoint create (odds)");

        /* 5. create_group from that derived parent: its first half (by its
         * own ranks, the subgroup listed in reverse), tag 21. */
        if (c != MPI_COMM_NULL) {
            int csz, crk, sub[MAXN], ks = 0, wl[MAXN];
            const int *mine = (me % 2 == 0) ? ev : od;
            MPI_Group cg, sg;
            MPI_Comm s = MPI_COMM_WORLD;
            MPI_Comm_size(c, &csz);
            MPI_Comm_rank(c, &crk);
            MPI_Comm_group(c, &cg);
            for (int i = (csz + 1) / 2 - 1; i >= 0; i--) sub[ks++] = i;
            for (int i = 0; i < ks; i++) wl[i] = mine[sub[i]];
            if (crk < (csz + 1) / 2) {
                CHECK_OK(MPI_Group_incl(cg, ks, sub, &sg));
                CHECK_OK(MPI_Comm_create_group(c, sg, 21, &s));
                check_comm(s, wl, ks, me, "create_group on derived parent");
                if (s != MPI_COMM_NULL) free_comm(&s);
                MPI_Group_free(&sg);
            }
            MPI_Group_free(&cg);
            free_comm(&c);
        }
        MPI_Group_free(&g);
    }

    /* 6. create_group: evens (ascending) and odds (descending) create
     * concurrently with the same tag; the call is collective only over the
     * group, so each set calls it independently. */
    {
        int mine[MAXN], km = 0;
        if (me % 2 == 0) {
            for (int i = 0; i < n; i++)
                if (i % 2 == 0) mine[km++] = i;
        } else {
            for (int i = n - 1; i >= 0; i--)
                if (i % 2 == 1) mine[km++] = i;
        }
        CHECK_OK(MPI_Group_incl(world_group, km, mine, &g));
        c = MPI_COMM_NULL;
        CHECK_OK(MPI_Comm_create_group(MPI_COMM_WORLD, g, 7, &c));
        check_comm(c, mine, km, me, "create_group evens/odds");
        if (c != MPI_COMM_NULL) free_comm(&c);
        MPI_Group_free(&g);
    }

    /* 7. create_group with only rank 0 and rank n-1 (in that order) taking
     * part, while the others do nothing; then singleton groups. */
    if (n >= 2 && (me == 0 || me == n - 1)) {
        int two[2] = {0, n - 1};
        CHECK_OK(MPI_Group_incl(world_group, 2, two, &g));
        c = MPI_COMM_NULL;
        CHECK_OK(MPI_Comm_create_group(MPI_COMM_WORLD, g, 3, &c));
        check_comm(c, two, 2, me, "create_group {0, n-1}");
        if (c != MPI_COMM_NULL) free_comm(&c);
        MPI_Group_free(&g);
    }
    {
        int res = -1;
        CHECK_OK(MPI_Group_incl(world_group, 1, &me, &g));
        c = MPI_COMM_NULL;
        CHECK_OK(MPI_Comm_create_group(MPI_COMM_WORLD, g, 4, &c));
        check_comm(c, &me, 1, me, "create_group singleton");
        if (c != MPI_COMM_NULL) {
            CHECK_OK(MPI_Comm_compare(c, MPI_COMM_SELF, &res));
            CHECK(res == MPI_CONGRUENT, "singleton vs self: %d", res);
            free_comm(&c);
        }
        MPI_Group_free(&g);
    }

    /* 8. create_group by a process outside the group (MPI 4.1 §7.4.2: a
     * local operation giving MPI_COMM_NULL): with MPI_GROUP_EMPTY, and,
     * while rank 0 creates its singleton, every other rank with that
     * group. */
    c = MPI_COMM_WORLD;
    CHECK_OK(MPI_Comm_create_group(MPI_COMM_WORLD, MPI_GROUP_EMPTY, 5, &c));
    CHECK(c == MPI_COMM_NULL, "create_group(MPI_GROUP_EMPTY) did not give MPI_COMM_NULL");
    {
        int zero = 0;
        CHECK_OK(MPI_Group_incl(world_group, 1, &zero, &g));
        c = MPI_COMM_WORLD;
        CHECK_OK(MPI_Comm_create_group(MPI_COMM_WORLD, g, 6, &c));
        if (me == 0) {
            check_comm(c, &zero, 1, me, "create_group {0} by its member");
            if (c != MPI_COMM_NULL) free_comm(&c);
        } else {
            CHECK(c == MPI_COMM_NULL, "create_group {0} outside it did not give MPI_COMM_NULL");
        }
        MPI_Group_free(&g);
    }

    MPI_Group_free(&world_group);
    return ct_finish();
}
