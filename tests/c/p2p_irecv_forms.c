/* ranks: 2 4 */
/* Contiguous MPI_Irecv on a predefined communicator (the form shmpi keeps
 * as an engine slot and a buffer until a completion call needs more)
 * behaves as any receive in every call that can meet it:
 *  1. a window of receives of 0..W-1 ints (0 B included), completed by
 *     MPI_Waitall with statuses (source, tag, count each) and with
 *     MPI_STATUSES_IGNORE, ANY_SOURCE/ANY_TAG among them;
 *  2. one Waitall mixing such receives with a null entry, a PROC_NULL
 *     receive (its status: MPI_PROC_NULL, MPI_ANY_TAG, count 0), a
 *     receive on MPI_COMM_SELF and a 64 KiB send to the peer;
 *  3. MPI_Test looped, MPI_Waitany, MPI_Testsome on such receives;
 *  4. MPI_Request_free of one before its message is sent: the message
 *     still lands in its buffer (checked after a later message from the
 *     same sender with the same tag was received, and a completion call);
 *  5. MPI_Cancel of an unmatched one (cancelled, buffer untouched) and of
 *     one already matched (not cancelled, data there);
 *  6. a truncated one in a Waitall: MPI_ERR_IN_STATUS, MPI_ERR_TRUNCATE in
 *     its status, MPI_SUCCESS (or MPI_ERR_PENDING, then waited for) in
 *     the others', which hold their data;
 *  7. the halo exchange's ping-pong (MPI_Irecv before the send, MPI_Wait
 *     after it; shmpi waits for such a receive as for a blocking one) at
 *     0 B to 8 KiB, data and status checked each round, on MPI_COMM_WORLD
 *     and on MPI_COMM_SELF (a rank to itself); a handle copied, tested
 *     (not complete) through the copy, then waited for through the
 *     original; a truncated one (MPI_ERR_TRUNCATE from MPI_Wait).
 * Rank pairs r, r^1. Every wait is bounded by the test harness. */
#include "common.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#define W 24
#define BIG (16 * 1024)

static int rank, peer;

static int val(int src, int k, int i) { return src * 1000003 + k * 101 + i; }

static void send_window(int tag, int base)
{
    static int s[W][W];
    for (int k = 0; k < W; k++) {
        for (int i = 0; i < k; i++) s[k][i] = val(rank, base + k, i);
        CHECK_OK(MPI_Send(s[k], k, MPI_INT, peer, tag, MPI_COMM_WORLD));
    }
}

/* Checks a received window: data, the guard past each message, and
 * (unless `st` is NULL) each status's source, tag and count. */
static void check_window(int r[][W + 1], MPI_Status *st, int tag, int base, const char *what)
{
    int bad = 0;
    for (int k = 0; k < W; k++) {
        for (int i = 0; i < k; i++) bad += r[k][i] != val(peer, base + k, i);
        bad += r[k][k] != -1;
        if (st) {
            int n = -1;
            MPI_Get_count(&st[k], MPI_INT, &n);
            CHECK(st[k].MPI_SOURCE == peer && st[k].MPI_TAG == tag && n == k,
                  "%s: status %d is %d/%d/%d", what, k, st[k].MPI_SOURCE, st[k].MPI_TAG, n);
        }
    }
    CHECK(bad == 0, "%s: %d wrong values", what, bad);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    peer = rank ^ 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    static int r[W][W + 1];
    static MPI_Status st[W + 8];
    MPI_Request req[W + 8];
    int flag;

    /* 1. Windows: by turns, a rank posts its receives before the peer
     * sends (they find posted receives) or after (they find messages
     * waiting). Pass 0 adds a short send and a null entry to the Waitall;
     * pass 1 ignores statuses; pass 2 receives from ANY_SOURCE, pass 3
     * with ANY_TAG (on 4 ranks only the pair's peer sends on these tags). */
    for (int pass = 0; pass < 4; pass++) {
        int recv_first = (rank & 1) == (pass & 1);
        int tag = 10 + pass, base = 100 * pass, n = W, z = val(rank, 60, pass), zin = -1;
        if (!recv_first) {
            MPI_Barrier(MPI_COMM_WORLD);
            send_window(tag, base);
        }
        for (int k = 0; k < W; k++) {
            for (int i = 0; i <= k; i++) r[k][i] = -1;
            int src = pass == 2 ? MPI_ANY_SOURCE : peer;
            int t = pass == 3 ? MPI_ANY_TAG : tag;
            CHECK_OK(MPI_Irecv(r[k], k, MPI_INT, src, t, MPI_COMM_WORLD, &req[k]));
        }
        if (recv_first) {
            MPI_Barrier(MPI_COMM_WORLD);
            send_window(tag, base);
        }
        if (pass == 0) {
            CHECK_OK(MPI_Isend(&z, 1, MPI_INT, peer, 60, MPI_COMM_WORLD, &req[n++]));
            req[n++] = MPI_REQUEST_NULL;
        }
        CHECK_OK(MPI_Waitall(n, req, pass == 1 ? MPI_STATUSES_IGNORE : st));
        int left = 0;
        for (int k = 0; k < n; k++) left += req[k] != MPI_REQUEST_NULL;
        CHECK(left == 0, "window %d: Waitall left %d requests", pass, left);
        check_window(r, pass == 1 ? NULL : st, tag, base, "window");
        if (pass == 0) {
            CHECK_OK(MPI_Recv(&zin, 1, MPI_INT, peer, 60, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(zin == val(peer, 60, 0), "short send beside a window: %d", zin);
        }
    }

    /* 2. One Waitall over: null, PROC_NULL receive, a receive on
     * COMM_SELF, receives from the peer, a 64 KiB send. */
    {
        static int big_s[BIG], big_r[BIG];
        int self_in = -1, self_out = val(rank, 7, 7), pn = -5, a = -1, b = -1;
        for (int i = 0; i < BIG; i++) big_s[i] = val(rank, 9, i);
        req[0] = MPI_REQUEST_NULL;
        CHECK_OK(MPI_Irecv(&pn, 1, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &req[1]));
        CHECK_OK(MPI_Irecv(&self_in, 1, MPI_INT, 0, 4, MPI_COMM_SELF, &req[2]));
        CHECK_OK(MPI_Irecv(&a, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, &req[3]));
        CHECK_OK(MPI_Irecv(big_r, BIG, MPI_INT, peer, 6, MPI_COMM_WORLD, &req[4]));
        CHECK_OK(MPI_Isend(big_s, BIG, MPI_INT, peer, 6, MPI_COMM_WORLD, &req[5]));
        CHECK_OK(MPI_Irecv(&b, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, &req[6]));
        CHECK_OK(MPI_Send(&self_out, 1, MPI_INT, 0, 4, MPI_COMM_SELF));
        int x = val(rank, 5, 0), y = val(rank, 5, 1);
        CHECK_OK(MPI_Send(&x, 1, MPI_INT, peer, 5, MPI_COMM_WORLD));
        CHECK_OK(MPI_Send(&y, 1, MPI_INT, peer, 5, MPI_COMM_WORLD));
        CHECK_OK(MPI_Waitall(7, req, st));
        int n = -1, bad = 0;
        MPI_Get_count(&st[1], MPI_INT, &n);
        CHECK(n == 0, "PROC_NULL receive count %d", n);
#if !defined(MPICH_NUMVERSION)
        /* MPICH up to at least 4.1 gives a wrong source and tag for a
         * nonblocking receive from MPI_PROC_NULL (pmodels/mpich#6805). */
        CHECK(st[1].MPI_SOURCE == MPI_PROC_NULL && st[1].MPI_TAG == MPI_ANY_TAG,
              "PROC_NULL receive status %d/%d", st[1].MPI_SOURCE, st[1].MPI_TAG);
#endif
        CHECK(pn == -5, "PROC_NULL receive wrote its buffer: %d", pn);
        CHECK(self_in == self_out && st[2].MPI_SOURCE == 0 && st[2].MPI_TAG == 4,
              "COMM_SELF receive: %d from %d tag %d", self_in, st[2].MPI_SOURCE, st[2].MPI_TAG);
        CHECK(a == val(peer, 5, 0) && b == val(peer, 5, 1), "ordered receives got %d %d", a, b);
        for (int i = 0; i < BIG; i += 37) bad += big_r[i] != val(peer, 9, i);
        MPI_Get_count(&st[4], MPI_INT, &n);
        CHECK(bad == 0 && n == BIG && st[4].MPI_SOURCE == peer,
              "64 KiB receive: %d wrong, count %d, source %d", bad, n, st[4].MPI_SOURCE);
        for (int k = 0; k < 7; k++)
            CHECK(req[k] == MPI_REQUEST_NULL, "mixed Waitall left request %d", k);
    }

    /* 3. MPI_Test looped, MPI_Waitany, MPI_Testsome. */
    for (int call = 0; call < 3; call++) {
        int in[4] = {-1, -1, -1, -1}, out[4], seen[4] = {0, 0, 0, 0}, done = 0, rounds = 0;
        for (int k = 0; k < 4; k++) {
            out[k] = val(rank, 20 + call, k);
            CHECK_OK(MPI_Irecv(&in[k], 1, MPI_INT, peer, 20 + call, MPI_COMM_WORLD, &req[k]));
        }
        for (int k = 0; k < 4; k++)
            CHECK_OK(MPI_Send(&out[k], 1, MPI_INT, peer, 20 + call, MPI_COMM_WORLD));
        while (done < 4 && rounds++ < 10000000) {
            if (call == 0) {
                for (int k = 0; k < 4; k++) {
                    if (req[k] == MPI_REQUEST_NULL) continue;
                    flag = 0;
                    CHECK_OK(MPI_Test(&req[k], &flag, &st[k]));
                    if (flag) {
                        seen[k]++;
                        done++;
                    }
                }
            } else if (call == 1) {
                int idx = -1;
                CHECK_OK(MPI_Waitany(4, req, &idx, &st[0]));
                CHECK(idx >= 0 && idx < 4, "Waitany index %d", idx);
                if (idx >= 0 && idx < 4) seen[idx]++;
                done++;
            } else {
                int outc = -1, ids[4];
                CHECK_OK(MPI_Testsome(4, req, &outc, ids, st));
                CHECK(outc >= 0 && outc <= 4, "Testsome outcount %d", outc);
                for (int j = 0; j < outc && j < 4; j++) {
                    if (ids[j] >= 0 && ids[j] < 4) seen[ids[j]]++;
                    done++;
                }
            }
        }
        for (int k = 0; k < 4; k++) {
            CHECK(seen[k] == 1, "call %d: request %d completed %d times", call, k, seen[k]);
            CHECK(in[k] == val(peer, 20 + call, k), "call %d: receive %d got %d", call, k, in[k]);
            CHECK(req[k] == MPI_REQUEST_NULL, "call %d: request %d not freed", call, k);
        }
    }

    /* 4. Request_free of a receive before its message is sent. */
    {
        int freed = -1, later = -1, again = -1, x = val(rank, 30, 0), y = val(rank, 30, 1);
        MPI_Request fr, lr;
        CHECK_OK(MPI_Irecv(&freed, 1, MPI_INT, peer, 30, MPI_COMM_WORLD, &fr));
        CHECK_OK(MPI_Request_free(&fr));
        CHECK(fr == MPI_REQUEST_NULL, "Request_free did not null the handle");
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_OK(MPI_Send(&x, 1, MPI_INT, peer, 30, MPI_COMM_WORLD));
        CHECK_OK(MPI_Send(&y, 1, MPI_INT, peer, 30, MPI_COMM_WORLD));
        CHECK_OK(MPI_Recv(&later, 1, MPI_INT, peer, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(later == val(peer, 30, 1), "message after a freed receive: %d", later);
        /* A completion call: the freed receive completed in the background. */
        CHECK_OK(MPI_Irecv(&again, 1, MPI_INT, peer, 31, MPI_COMM_WORLD, &lr));
        CHECK_OK(MPI_Send(&x, 1, MPI_INT, peer, 31, MPI_COMM_WORLD));
        flag = 0;
        for (int i = 0; i < 10000000 && !flag; i++) CHECK_OK(MPI_Test(&lr, &flag, MPI_STATUS_IGNORE));
        CHECK(flag && again == val(peer, 30, 0), "tag 31 receive got %d", again);
        CHECK(freed == val(peer, 30, 0), "freed receive's buffer holds %d", freed);
    }

    /* 5. Cancel: unmatched, then matched. */
    {
        int un = -5, m = -5, x = val(rank, 40, 0);
        MPI_Request c;
        CHECK_OK(MPI_Irecv(&un, 1, MPI_INT, peer, 40, MPI_COMM_WORLD, &c));
        CHECK_OK(MPI_Cancel(&c));
        CHECK_OK(MPI_Wait(&c, &st[0]));
        flag = 0;
        MPI_Test_cancelled(&st[0], &flag);
        CHECK(flag && un == -5, "unmatched receive: cancelled %d, buffer %d", flag, un);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_OK(MPI_Irecv(&m, 1, MPI_INT, peer, 41, MPI_COMM_WORLD, &c));
        CHECK_OK(MPI_Send(&x, 1, MPI_INT, peer, 41, MPI_COMM_WORLD));
        /* The peer's message has been sent once the peer's ack arrives. */
        {
            int ack = 0;
            CHECK_OK(MPI_Sendrecv(&ack, 1, MPI_INT, peer, 42, &ack, 1, MPI_INT, peer, 42,
                                  MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
        CHECK_OK(MPI_Cancel(&c));
        CHECK_OK(MPI_Wait(&c, &st[0]));
        flag = 1;
        MPI_Test_cancelled(&st[0], &flag);
        CHECK(!flag && m == val(peer, 40, 0), "matched receive: cancelled %d, buffer %d", flag,
              m);
    }

    /* 6. A truncated receive among others in a Waitall. */
    {
        int a[2] = {-1, -1}, t[2] = {-1, -1}, c[2] = {-1, -1};
        int sa[2] = {val(rank, 50, 0), val(rank, 50, 1)}, sb[4], sc = val(rank, 52, 0);
        for (int i = 0; i < 4; i++) sb[i] = val(rank, 51, i);
        CHECK_OK(MPI_Irecv(a, 2, MPI_INT, peer, 50, MPI_COMM_WORLD, &req[0]));
        CHECK_OK(MPI_Irecv(t, 2, MPI_INT, peer, 51, MPI_COMM_WORLD, &req[1]));
        CHECK_OK(MPI_Irecv(c, 1, MPI_INT, peer, 52, MPI_COMM_WORLD, &req[2]));
        CHECK_OK(MPI_Send(sa, 2, MPI_INT, peer, 50, MPI_COMM_WORLD));
        CHECK_OK(MPI_Send(sb, 4, MPI_INT, peer, 51, MPI_COMM_WORLD));
        CHECK_OK(MPI_Send(&sc, 1, MPI_INT, peer, 52, MPI_COMM_WORLD));
        int rc = MPI_Waitall(3, req, st);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_IN_STATUS, "truncating Waitall: class %d", cls);
        MPI_Error_class(st[1].MPI_ERROR, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "truncated status: class %d", cls);
        /* The others: complete (MPI_SUCCESS), or not yet (MPI_ERR_PENDING,
         * the request still active: MPICH stops at the error), MPI 4.1
         * §3.7.5. */
        for (int k = 0; k < 3; k += 2) {
            int e = st[k].MPI_ERROR;
            if (e == MPI_ERR_PENDING) {
                CHECK(req[k] != MPI_REQUEST_NULL, "pending request %d was freed", k);
                /* (MPI_Wait does not set the status's error field.) */
                e = MPI_Wait(&req[k], MPI_STATUS_IGNORE);
            }
            CHECK(e == MPI_SUCCESS && req[k] == MPI_REQUEST_NULL,
                  "request %d beside a truncation: error %d", k, e);
        }
        CHECK(a[0] == val(peer, 50, 0) && a[1] == val(peer, 50, 1) && c[0] == val(peer, 52, 0),
              "receives beside a truncation got %d %d", a[0], c[0]);
    }

    /* 7. The halo ping-pong; a copied handle; a truncation in MPI_Wait. */
    {
        static char sb[8192], rb[8192 + 1];
        int first = rank < peer;
        for (int n = 0; n <= 8192; n = n ? n * 4 : 1) {
            for (int round = 0; round < 20; round++) {
                MPI_Request q;
                MPI_Status s7;
                int tag = 60 + round % 3;
                for (int i = 0; i < n; i++) sb[i] = (char)(rank + n + round + i);
                memset(rb, 0x5a, sizeof rb);
                CHECK_OK(MPI_Irecv(rb, n, MPI_CHAR, peer, tag, MPI_COMM_WORLD, &q));
                if (first) CHECK_OK(MPI_Send(sb, n, MPI_CHAR, peer, tag, MPI_COMM_WORLD));
                CHECK_OK(MPI_Wait(&q, &s7));
                if (!first) CHECK_OK(MPI_Send(sb, n, MPI_CHAR, peer, tag, MPI_COMM_WORLD));
                int got = -1, bad = 0;
                MPI_Get_count(&s7, MPI_CHAR, &got);
                for (int i = 0; i < n; i++) bad += rb[i] != (char)(peer + n + round + i);
                CHECK(q == MPI_REQUEST_NULL && got == n && s7.MPI_SOURCE == peer &&
                          s7.MPI_TAG == tag && bad == 0 && rb[n] == 0x5a,
                      "halo %d B round %d: count %d source %d tag %d, %d bytes wrong", n, round,
                      got, s7.MPI_SOURCE, s7.MPI_TAG, bad);
            }
        }
        /* To itself on MPI_COMM_SELF. */
        for (int round = 0; round < 10; round++) {
            int x = val(rank, 70, round), y = -1;
            MPI_Request q;
            MPI_Status s7;
            CHECK_OK(MPI_Irecv(&y, 1, MPI_INT, 0, 70, MPI_COMM_SELF, &q));
            CHECK_OK(MPI_Send(&x, 1, MPI_INT, 0, 70, MPI_COMM_SELF));
            CHECK_OK(MPI_Wait(&q, &s7));
            CHECK(y == x && s7.MPI_SOURCE == 0 && s7.MPI_TAG == 70 && q == MPI_REQUEST_NULL,
                  "self round %d: got %d from %d tag %d", round, y, s7.MPI_SOURCE, s7.MPI_TAG);
        }
        /* A copy of a handle tested while incomplete (the peer sends only
         * after this rank's go), then the original waited for. */
        {
            int y = -1, x = val(rank, 71, 0), go = 1, flag = 1;
            MPI_Request q, copy;
            CHECK_OK(MPI_Irecv(&y, 1, MPI_INT, peer, 71, MPI_COMM_WORLD, &q));
            copy = q;
            CHECK_OK(MPI_Test(&copy, &flag, MPI_STATUS_IGNORE));
            CHECK(!flag && copy == q, "copied handle: complete before its message was sent");
            CHECK_OK(MPI_Send(&go, 1, MPI_INT, peer, 72, MPI_COMM_WORLD));
            CHECK_OK(MPI_Recv(&go, 1, MPI_INT, peer, 72, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_OK(MPI_Send(&x, 1, MPI_INT, peer, 71, MPI_COMM_WORLD));
            CHECK_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
            CHECK(y == val(peer, 71, 0) && q == MPI_REQUEST_NULL, "copied handle: got %d", y);
        }
        /* Truncated: MPI_Wait returns the error (MPI_ERRORS_RETURN, set
         * at the start). */
        {
            int y[2] = {-1, -1}, x[3] = {val(rank, 73, 0), val(rank, 73, 1), val(rank, 73, 2)};
            MPI_Request q;
            MPI_Status s7;
            CHECK_OK(MPI_Irecv(y, 2, MPI_INT, peer, 73, MPI_COMM_WORLD, &q));
            if (first) CHECK_OK(MPI_Send(x, 3, MPI_INT, peer, 73, MPI_COMM_WORLD));
            int rc = MPI_Wait(&q, &s7), cls = -1;
            if (!first) CHECK_OK(MPI_Send(x, 3, MPI_INT, peer, 73, MPI_COMM_WORLD));
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_TRUNCATE && q == MPI_REQUEST_NULL,
                  "truncated halo receive: class %d", cls);
#ifdef SHMPI_MPI_H
            /* MPI leaves the buffer's content open here; shmpi fills it. */
            CHECK(y[0] == val(peer, 73, 0) && y[1] == val(peer, 73, 1),
                  "truncated halo receive got %d %d", y[0], y[1]);
#endif
        }
    }

    return ct_finish();
}
