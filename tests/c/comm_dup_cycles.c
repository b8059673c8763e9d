/* ranks: 1 2 */
/* Communicator lifetime: 200 MPI_Comm_dup + MPI_Comm_free cycles (context
 * ids must be reused; every 25th duplicate is used), 50 MPI_Comm_idup and
 * 50 MPI_Comm_split cycles, a chain of 12 nested duplicates each used for
 * a broadcast and freed innermost-first, a chain freed outermost-first (the
 * children keep working), 64 duplicates alive at once with a message on
 * each, ring exchanges on derived communicators, and MPI_Comm_free /
 * MPI_Comm_disconnect setting the handle to MPI_COMM_NULL. Only 1 and 2
 * ranks: the loops are long (slow with oversubscribed MPICH), and the rank
 * count does not matter for context id reuse. */
#include "common.h"

#define DEPTH 12

static void ring(MPI_Comm c, int salt, const char *what)
{
    int n, r, left, right, out[3], in[3] = {-1, -1, -1};
    MPI_Status st;
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &r);
    left = (r + n - 1) % n;
    right = (r + 1) % n;
    out[0] = r;
    out[1] = salt;
    out[2] = r * 7 + salt;
    CHECK_OK(MPI_Sendrecv(out, 3, MPI_INT, right, salt % 100, in, 3, MPI_INT,
                          left, salt % 100, c, &st));
    CHECK(in[0] == left && in[1] == salt && in[2] == left * 7 + salt,
          "%s: ring got %d %d %d from %d", what, in[0], in[1], in[2], left);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == salt % 100,
          "%s: ring status source %d tag %d", what, st.MPI_SOURCE,
          st.MPI_TAG);
}

static void allreduce_check(MPI_Comm c, int salt, const char *what)
{
    int n, r, v[2], s[2] = {-1, -1};
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &r);
    v[0] = r + salt;
    v[1] = 1;
    CHECK_OK(MPI_Allreduce(v, s, 2, MPI_INT, MPI_SUM, c));
    CHECK(s[0] == n * (n - 1) / 2 + n * salt && s[1] == n,
          "%s: allreduce %d %d", what, s[0], s[1]);
}

int main(int argc, char **argv)
{
    int n, me;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);

    /* 200 dup/free cycles. */
    for (int i = 0; i < 200; i++) {
        MPI_Comm d = MPI_COMM_NULL;
        CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
        CHECK(d != MPI_COMM_NULL, "dup %d gave MPI_COMM_NULL", i);
        if (d == MPI_COMM_NULL) break;
        if (i % 25 == 0) {
            ring(d, i, "dup cycle");
            allreduce_check(d, i, "dup cycle");
        }
        CHECK_OK(MPI_Comm_free(&d));
        CHECK(d == MPI_COMM_NULL, "free %d did not set MPI_COMM_NULL", i);
    }

    /* 50 idup/free cycles, with the duplicate's parent a duplicate. */
    {
        MPI_Comm base;
        CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &base));
        for (int i = 0; i < 50; i++) {
            MPI_Comm d = MPI_COMM_NULL;
            MPI_Request rq;
            CHECK_OK(MPI_Comm_idup(base, &d, &rq));
            CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            CHECK(d != MPI_COMM_NULL, "idup %d gave MPI_COMM_NULL", i);
            if (d == MPI_COMM_NULL) break;
            if (i % 10 == 0) ring(d, 300 + i, "idup cycle");
            CHECK_OK(MPI_Comm_free(&d));
        }
        CHECK_OK(MPI_Comm_free(&base));
    }

    /* 50 split/free cycles (alternating two colourings). */
    for (int i = 0; i < 50; i++) {
        MPI_Comm s = MPI_COMM_NULL;
        int color = (i % 2) ? me % 2 : 0;
        CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, color, -me, &s));
        CHECK(s != MPI_COMM_NULL, "split %d gave MPI_COMM_NULL", i);
        if (s == MPI_COMM_NULL) break;
        if (i % 10 == 0 || i % 10 == 1) {
            ring(s, 400 + i, "split cycle");
            allreduce_check(s, i, "split cycle");
        }
        CHECK_OK(MPI_Comm_free(&s));
    }

    /* Nested duplicates: chain[i+1] = dup(chain[i]); each gets a broadcast
     * with a different root; then freed innermost-first. */
    {
        MPI_Comm chain[DEPTH + 1];
        chain[0] = MPI_COMM_WORLD;
        for (int i = 0; i < DEPTH; i++) {
            int v = (me == i % n) ? 500 + i : -1;
            CHECK_OK(MPI_Comm_dup(chain[i], &chain[i + 1]));
            CHECK_OK(MPI_Bcast(&v, 1, MPI_INT, i % n, chain[i + 1]));
            CHECK(v == 500 + i, "nested dup %d: bcast got %d", i + 1, v);
        }
        /* all levels still distinct and working */
        for (int i = DEPTH; i >= 1; i--) ring(chain[i], 600 + i, "nested");
        for (int i = DEPTH; i >= 1; i--) {
            CHECK_OK(MPI_Comm_free(&chain[i]));
            CHECK(chain[i] == MPI_COMM_NULL, "nested free %d not NULL", i);
        }
    }

    /* Chain freed outermost-first: each child keeps working after its
     * parent is gone. */
    {
        MPI_Comm chain[DEPTH];
        CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &chain[0]));
        for (int i = 1; i < DEPTH; i++)
            CHECK_OK(MPI_Comm_dup(chain[i - 1], &chain[i]));
        for (int i = 0; i < DEPTH - 1; i++) {
            CHECK_OK(MPI_Comm_free(&chain[i]));
            ring(chain[i + 1], 700 + i, "child after parent freed");
            allreduce_check(chain[i + 1], i, "child after parent freed");
        }
        CHECK_OK(MPI_Comm_free(&chain[DEPTH - 1]));
    }

    /* Many communicators alive at once (64 dups), then all freed. */
    {
        MPI_Comm many[64];
        for (int i = 0; i < 64; i++)
            CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &many[i]));
        /* Messages on every one of them at once, received in reverse. */
        {
            int to = (me + 1) % n, from = (me + n - 1) % n;
            int sv[64], rv[64];
            MPI_Request rq[64];
            MPI_Status st[64];
            for (int i = 0; i < 64; i++) {
                sv[i] = me * 1000 + i;
                CHECK_OK(MPI_Isend(&sv[i], 1, MPI_INT, to, 0, many[i],
                                   &rq[i]));
            }
            for (int i = 63; i >= 0; i--) {
                rv[i] = -1;
                CHECK_OK(MPI_Recv(&rv[i], 1, MPI_INT, from, 0, many[i],
                                  MPI_STATUS_IGNORE));
                CHECK(rv[i] == from * 1000 + i, "many[%d] got %d", i, rv[i]);
            }
            CHECK_OK(MPI_Waitall(64, rq, st));
        }
        for (int i = 0; i < 64; i++) CHECK_OK(MPI_Comm_free(&many[i]));
    }

    /* Ring on a reversed split and on a half. */
    {
        MPI_Comm rev, half;
        CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, 0, n - me, &rev));
        ring(rev, 801, "reversed split");
        allreduce_check(rev, 3, "reversed split");
        CHECK_OK(MPI_Comm_split(rev, me < n / 2, 0, &half));
        ring(half, 802, "half of reversed split");
        allreduce_check(half, 4, "half of reversed split");
        CHECK_OK(MPI_Comm_free(&half));
        CHECK_OK(MPI_Comm_free(&rev));
        CHECK(rev == MPI_COMM_NULL && half == MPI_COMM_NULL,
              "free did not set MPI_COMM_NULL");
    }

    /* MPI_Comm_disconnect on a duplicate after completed traffic. */
    {
        MPI_Comm d;
        CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
        ring(d, 901, "before disconnect");
        allreduce_check(d, 5, "before disconnect");
        CHECK_OK(MPI_Comm_disconnect(&d));
        CHECK(d == MPI_COMM_NULL, "disconnect did not set MPI_COMM_NULL");
    }
    /* Disconnect of an idup'ed communicator with a nonblocking exchange
     * that has completed. */
    {
        MPI_Comm d;
        MPI_Request rq[3];
        MPI_Status st[3];
        int to = (me + 1) % n, from = (me + n - 1) % n, sv = me, rv = -1;
        CHECK_OK(MPI_Comm_idup(MPI_COMM_WORLD, &d, &rq[0]));
        CHECK_OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
        CHECK_OK(MPI_Irecv(&rv, 1, MPI_INT, from, 3, d, &rq[1]));
        CHECK_OK(MPI_Isend(&sv, 1, MPI_INT, to, 3, d, &rq[2]));
        CHECK_OK(MPI_Waitall(2, &rq[1], st));
        CHECK(rv == from, "exchange before disconnect got %d", rv);
        CHECK_OK(MPI_Comm_disconnect(&d));
        CHECK(d == MPI_COMM_NULL, "disconnect did not set MPI_COMM_NULL");
    }

    return ct_finish();
}
