/* ranks: 2 3 4 */
/* MPI_Comm_idup is local (MPI 4.1 §6.12): a member that starts it does
 * not wait for the others. The last rank starts an idup of
 * MPI_COMM_WORLD and then MPI_Ssend's to rank 0, which receives that
 * message before it starts its own idup (a program that deadlocks if
 * starting waits for rank 0); the others start theirs at once. Then two
 * idups outstanding at once on a duplicate, completed in the reverse
 * order by MPI_Waitall, and each result used for an allreduce and a
 * ring exchange, with its attribute copied. */
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

static void use(MPI_Comm c, int n, int me, const char *what)
{
    int sz = -1, rk = -1, sum = 0, got = -1;
    CHECK_OK(MPI_Comm_size(c, &sz));
    CHECK_OK(MPI_Comm_rank(c, &rk));
    CHECK(sz == n && rk == me, "%s: size %d rank %d", what, sz, rk);
    CHECK_OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == n * (n - 1) / 2, "%s: allreduce %d", what, sum);
    CHECK_OK(MPI_Sendrecv(&me, 1, MPI_INT, (me + 1) % n, 3, &got, 1, MPI_INT,
                          (me + n - 1) % n, 3, c, MPI_STATUS_IGNORE));
    CHECK(got == (me + n - 1) % n, "%s: ring got %d", what, got);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n, me;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    int key, flag = 0;
    void *val = NULL;
    static int tagged = 7;
    CHECK_OK(MPI_Comm_create_keyval(copy_fn, MPI_COMM_NULL_DELETE_FN, &key, NULL));
    CHECK_OK(MPI_Comm_set_attr(MPI_COMM_WORLD, key, &tagged));

    MPI_Comm d = MPI_COMM_NULL;
    MPI_Request rq;
    int x = 42, y = -1;
    if (n > 1 && me == n - 1) {
        CHECK_OK(MPI_Comm_idup(MPI_COMM_WORLD, &d, &rq));
        CHECK_OK(MPI_Ssend(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD));
    } else if (me == 0) {
        CHECK_OK(MPI_Recv(&y, 1, MPI_INT, n - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(y == 42, "rank 0 got %d", y);
        CHECK_OK(MPI_Comm_idup(MPI_COMM_WORLD, &d, &rq));
    } else {
        CHECK_OK(MPI_Comm_idup(MPI_COMM_WORLD, &d, &rq));
    }
    CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(rq == MPI_REQUEST_NULL, "the idup request was not freed");
    use(d, n, me, "idup of WORLD");
    CHECK_OK(MPI_Comm_get_attr(d, key, &val, &flag));
    CHECK(flag && val == &tagged && copies == 1, "attribute: flag %d copies %d", flag, copies);

    /* Two at once, the second started by rank 0 only after a message the
     * others send after starting both. */
    MPI_Comm a = MPI_COMM_NULL, b = MPI_COMM_NULL;
    MPI_Request two[2];
    if (me == 0) {
        CHECK_OK(MPI_Comm_idup(d, &a, &two[0]));
        for (int r = 1; r < n; r++)
            CHECK_OK(MPI_Recv(&y, 1, MPI_INT, r, 2, d, MPI_STATUS_IGNORE));
        CHECK_OK(MPI_Comm_idup(d, &b, &two[1]));
    } else {
        CHECK_OK(MPI_Comm_idup(d, &a, &two[0]));
        CHECK_OK(MPI_Comm_idup(d, &b, &two[1]));
        CHECK_OK(MPI_Ssend(&x, 1, MPI_INT, 0, 2, d));
    }
    MPI_Request rev[2] = {two[1], two[0]};
    CHECK_OK(MPI_Waitall(2, rev, MPI_STATUSES_IGNORE));
    use(a, n, me, "first of two");
    use(b, n, me, "second of two");
    int res = -1;
    CHECK_OK(MPI_Comm_compare(a, b, &res));
    CHECK(res == MPI_CONGRUENT, "two idups compare %d", res);

    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
    MPI_Comm_free(&d);
    MPI_Comm_free_keyval(&key);
    return ct_finish();
}
