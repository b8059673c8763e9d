/* ranks: 2 3 4 */
/* MPI_Comm_idup of an intercommunicator is local too (MPI 4.1 §6.12).
 * The groups are the odd and the even world ranks; the even group's
 * leader (world rank 0) is the one that claims the new context. Every
 * odd rank starts its idup first and only then MPI_Ssend's to an even
 * rank, which receives that message before it starts its own idup: a
 * program that deadlocks if starting waits for the other group (before
 * 2026-12-07 it did: the dup agreed at once, the odd leader waiting for
 * the even one). A barrier and an allreduce on the parent run while the
 * idups are in flight. Then the new intercommunicator: congruent to the old,
 * inter, same remote size, an attribute copied, a message each way and
 * an MPI_Allreduce across it; and two idups outstanding on it at once,
 * completed in reverse order. */
#include "common.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

static int copies = 0;

static int copy_fn(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag)
{
    (void)c;
    (void)k;
    (void)extra;
    copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

/* Checks intercommunicator c against its parent p. */
static void use(MPI_Comm c, MPI_Comm p, int odd, int lrank, int rsize, const char *what)
{
    int cmp = -1, inter = 0, rs = -1;
    CHECK_OK(MPI_Comm_compare(c, p, &cmp));
    CHECK(cmp == MPI_CONGRUENT, "%s: compare %d", what, cmp);
    CHECK_OK(MPI_Comm_test_inter(c, &inter));
    CHECK_OK(MPI_Comm_remote_size(c, &rs));
    CHECK(inter && rs == rsize, "%s: inter %d remote size %d", what, inter, rs);
    /* Local rank r talks to remote rank r % rsize; the even side answers
     * every odd rank that addresses it. */
    int v = 100 * odd + lrank, got = -1;
    if (odd) {
        CHECK_OK(MPI_Send(&v, 1, MPI_INT, lrank % rsize, 5, c));
        CHECK_OK(MPI_Recv(&got, 1, MPI_INT, lrank % rsize, 6, c, MPI_STATUS_IGNORE));
        CHECK(got == lrank % rsize, "%s: answer %d", what, got);
    } else {
        int lsize;
        MPI_Comm_size(c, &lsize);
        for (int r = 0; r < rsize; r++) {
            if (r % lsize != lrank) continue;
            CHECK_OK(MPI_Recv(&got, 1, MPI_INT, r, 5, c, MPI_STATUS_IGNORE));
            CHECK(got == 100 + r, "%s: from odd %d got %d", what, r, got);
            CHECK_OK(MPI_Send(&lrank, 1, MPI_INT, r, 6, c));
        }
    }
    /* Allreduce across: each side gets the other side's sum. */
    int sum = -1, want = 0;
    for (int r = 0; r < rsize; r++) want += 100 * !odd + r;
    CHECK_OK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == want, "%s: allreduce %d, not %d", what, sum, want);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int odd = me % 2;
    MPI_Comm local, inter;
    CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, odd, me, &local));
    /* Remote leaders: world rank 1 for the even side, 0 for the odd. */
    CHECK_OK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, odd ? 0 : 1, 9, &inter));
    int lrank, lsize, rsize;
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_size(local, &lsize);
    MPI_Comm_remote_size(inter, &rsize);
    int key;
    CHECK_OK(MPI_Comm_create_keyval(copy_fn, MPI_COMM_NULL_DELETE_FN, &key, NULL));
    static int tagval = 42;
    CHECK_OK(MPI_Comm_set_attr(inter, key, &tagval));

    /* 1. Odd ranks start first and only then let the even side go. */
    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Request rq;
    int token = 7;
    if (odd) {
        CHECK_OK(MPI_Comm_idup(inter, &dup, &rq));
        CHECK_OK(MPI_Ssend(&token, 1, MPI_INT, me - 1, 1, MPI_COMM_WORLD));
    } else {
        if (me + 1 < n) {
            int t = -1;
            CHECK_OK(MPI_Recv(&t, 1, MPI_INT, me + 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(t == 7, "token %d", t);
        }
        CHECK_OK(MPI_Comm_idup(inter, &dup, &rq));
    }
    /* Blocking collectives on the parent while the idup is in flight
     * (they use its hidden local context too). */
    CHECK_OK(MPI_Barrier(inter));
    int lsum = -1, want_l = 0;
    for (int r = 0; r < rsize; r++) want_l += r;
    CHECK_OK(MPI_Allreduce(&lrank, &lsum, 1, MPI_INT, MPI_SUM, inter));
    CHECK(lsum == want_l, "allreduce on the parent during the idup: %d", lsum);
    CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(dup != MPI_COMM_NULL, "no communicator");
    int *val = NULL, flag = 0;
    CHECK_OK(MPI_Comm_get_attr(dup, key, &val, &flag));
    CHECK(flag && val == &tagval && copies == 1, "attribute: flag %d copies %d", flag, copies);
    use(dup, inter, odd, lrank, rsize, "idup");

    /* 2. Two outstanding at once, on the duplicate, completed in reverse. */
    MPI_Comm d2[2];
    MPI_Request r2[2];
    CHECK_OK(MPI_Comm_idup(dup, &d2[0], &r2[0]));
    CHECK_OK(MPI_Comm_idup(dup, &d2[1], &r2[1]));
    CHECK_OK(MPI_Wait(&r2[1], MPI_STATUS_IGNORE));
    CHECK_OK(MPI_Wait(&r2[0], MPI_STATUS_IGNORE));
    use(d2[0], dup, odd, lrank, rsize, "first of two");
    use(d2[1], dup, odd, lrank, rsize, "second of two");
    int cmp;
    MPI_Comm_compare(d2[0], d2[1], &cmp);
    CHECK(cmp == MPI_CONGRUENT, "the two: %d", cmp);

    MPI_Comm_free(&d2[1]);
    MPI_Comm_free(&d2[0]);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    MPI_Comm_free_keyval(&key);
    return ct_finish();
}
