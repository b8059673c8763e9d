/* ranks: 2 4 8 */
/* Multiple-completion calls on request arrays that mix MPI_REQUEST_NULL
 * entries with active sends and receives (rank pairs r, r^1; one small and
 * one 80000-byte message each way): MPI_Waitall (with statuses and with
 * MPI_STATUSES_IGNORE), MPI_Testall, MPI_Waitany, MPI_Testany, MPI_Waitsome,
 * MPI_Testsome (looped until all done; each active index reported exactly
 * once; completed requests set to MPI_REQUEST_NULL; empty statuses for null
 * entries); the all-null cases (Waitany/Testany index MPI_UNDEFINED,
 * Waitsome/Testsome outcount MPI_UNDEFINED, Testall flag true); Wait/Test on
 * MPI_REQUEST_NULL; MPI_Request_free on active Isends (messages still
 * delivered). */
#include "common.h"

/* MPICH defines MPI_STATUSES_IGNORE as (MPI_Status *)1, which GCC's
 * -Wstringop-overflow flags; passing it is legal MPI. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#define NREQ 8
#define SMALL 10
#define LARGE 20000

static int rank, peer;
static int s1[SMALL], r1[SMALL], *s2, *r2;

static int val(int src, int round, int tag, int i) { return src * 1000000 + round * 100000 + tag * 50000 + i; }

static int is_active(int i) { return i == 1 || i == 3 || i == 4 || i == 6; }

/* Slots 1,4: receives (tags 1,2); 3,6: sends (tags 1,2); others null. */
static void post(MPI_Request *req, int round)
{
    for (int i = 0; i < SMALL; i++) { s1[i] = val(rank, round, 1, i); r1[i] = -1; }
    for (int i = 0; i < LARGE; i++) { s2[i] = val(rank, round, 2, i); r2[i] = -1; }
    for (int i = 0; i < NREQ; i++) req[i] = MPI_REQUEST_NULL;
    CHECK_OK(MPI_Irecv(r1, SMALL, MPI_INT, peer, 1, MPI_COMM_WORLD, &req[1]));
    CHECK_OK(MPI_Irecv(r2, LARGE, MPI_INT, peer, 2, MPI_COMM_WORLD, &req[4]));
    CHECK_OK(MPI_Isend(s1, SMALL, MPI_INT, peer, 1, MPI_COMM_WORLD, &req[3]));
    CHECK_OK(MPI_Isend(s2, LARGE, MPI_INT, peer, 2, MPI_COMM_WORLD, &req[6]));
}

static void check_data(int round, const char *what)
{
    int bad = 0;
    for (int i = 0; i < SMALL; i++) if (r1[i] != val(peer, round, 1, i)) bad++;
    for (int i = 0; i < LARGE; i++) if (r2[i] != val(peer, round, 2, i)) bad++;
    CHECK(bad == 0, "%s: %d wrong values received", what, bad);
}

static void check_recv_status(MPI_Status *st, int slot, const char *what)
{
    int c = -1, want_tag = slot == 1 ? 1 : 2, want_n = slot == 1 ? SMALL : LARGE;
    CHECK_OK(MPI_Get_count(st, MPI_INT, &c));
    CHECK(st->MPI_SOURCE == peer && st->MPI_TAG == want_tag && c == want_n,
          "%s slot %d: status %d/%d count %d want %d/%d/%d", what, slot, st->MPI_SOURCE,
          st->MPI_TAG, c, peer, want_tag, want_n);
}

static void check_empty_status(MPI_Status *st, const char *what)
{
    int c = -1;
    CHECK_OK(MPI_Get_count(st, MPI_INT, &c));
    CHECK(st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && c == 0,
          "%s: status %d/%d count %d is not empty", what, st->MPI_SOURCE, st->MPI_TAG, c);
}

static void check_all_null(MPI_Request *req, const char *what)
{
    for (int i = 0; i < NREQ; i++)
        CHECK(req[i] == MPI_REQUEST_NULL, "%s: request %d not MPI_REQUEST_NULL", what, i);
}

int main(int argc, char **argv)
{
    int size, round = 0;
    MPI_Request req[NREQ];
    MPI_Status sts[NREQ], st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    peer = rank ^ 1;
    if (peer >= size) peer = rank; /* odd sizes: the last rank pairs with itself */
    s2 = malloc(LARGE * sizeof(int));
    r2 = malloc(LARGE * sizeof(int));
    if (!s2 || !r2) MPI_Abort(MPI_COMM_WORLD, 2);

    /* Wait and Test on MPI_REQUEST_NULL. */
    {
        MPI_Request n = MPI_REQUEST_NULL;
        int flag = 0;
        CHECK_OK(MPI_Wait(&n, &st));
        check_empty_status(&st, "Wait(MPI_REQUEST_NULL)");
        CHECK_OK(MPI_Test(&n, &flag, &st));
        CHECK(flag, "Test(MPI_REQUEST_NULL) flag false");
        check_empty_status(&st, "Test(MPI_REQUEST_NULL)");
    }

    /* Waitall, MPI_STATUSES_IGNORE. */
    post(req, ++round);
    CHECK_OK(MPI_Waitall(NREQ, req, MPI_STATUSES_IGNORE));
    check_all_null(req, "Waitall(STATUSES_IGNORE)");
    check_data(round, "Waitall(STATUSES_IGNORE)");

    /* Waitall with statuses. */
    post(req, ++round);
    CHECK_OK(MPI_Waitall(NREQ, req, sts));
    check_all_null(req, "Waitall");
    check_data(round, "Waitall");
    check_recv_status(&sts[1], 1, "Waitall");
    check_recv_status(&sts[4], 4, "Waitall");
    for (int i = 0; i < NREQ; i++)
        if (!is_active(i)) check_empty_status(&sts[i], "Waitall null entry");

    /* Testall until true. */
    post(req, ++round);
    {
        int flag = 0;
        while (!flag) CHECK_OK(MPI_Testall(NREQ, req, &flag, sts));
    }
    check_all_null(req, "Testall");
    check_data(round, "Testall");
    check_recv_status(&sts[1], 1, "Testall");
    check_recv_status(&sts[4], 4, "Testall");
    {
        int flag = 0;
        CHECK_OK(MPI_Testall(NREQ, req, &flag, MPI_STATUSES_IGNORE));
        CHECK(flag, "Testall over all-null requests gave flag false");
    }

    /* Waitany until MPI_UNDEFINED. */
    post(req, ++round);
    {
        int seen[NREQ] = {0}, n = 0, idx;
        for (int guard = 0; guard <= NREQ; guard++) {
            idx = -5;
            CHECK_OK(MPI_Waitany(NREQ, req, &idx, &st));
            if (idx == MPI_UNDEFINED) break;
            CHECK(idx >= 0 && idx < NREQ && is_active(idx) && !seen[idx],
                  "Waitany returned index %d", idx);
            if (idx < 0 || idx >= NREQ) break;
            CHECK(req[idx] == MPI_REQUEST_NULL, "Waitany did not free request %d", idx);
            seen[idx] = 1;
            n++;
            if (idx == 1 || idx == 4) check_recv_status(&st, idx, "Waitany");
        }
        CHECK(n == 4 && idx == MPI_UNDEFINED, "Waitany completed %d requests, last index %d", n, idx);
        check_empty_status(&st, "Waitany over all-null");
        check_data(round, "Waitany");
    }

    /* Testany until flag with MPI_UNDEFINED. */
    post(req, ++round);
    {
        int seen[NREQ] = {0}, n = 0, idx = -5, flag;
        for (;;) {
            flag = 0;
            idx = -5;
            CHECK_OK(MPI_Testany(NREQ, req, &idx, &flag, &st));
            if (!flag) {
                CHECK(idx == MPI_UNDEFINED, "Testany with flag false gave index %d", idx);
                continue;
            }
            if (idx == MPI_UNDEFINED) break;
            CHECK(idx >= 0 && idx < NREQ && is_active(idx) && !seen[idx],
                  "Testany returned index %d", idx);
            if (idx < 0 || idx >= NREQ || seen[idx]) break;
            seen[idx] = 1;
            n++;
            if (idx == 1 || idx == 4) check_recv_status(&st, idx, "Testany");
        }
        CHECK(n == 4, "Testany completed %d requests", n);
        check_all_null(req, "Testany");
        check_empty_status(&st, "Testany over all-null");
        check_data(round, "Testany");
    }

    /* Waitsome until MPI_UNDEFINED (statuses on even rounds). */
    post(req, ++round);
    {
        int seen[NREQ] = {0}, n = 0, outcount, idx[NREQ];
        for (int guard = 0; guard <= NREQ; guard++) {
            outcount = -5;
            CHECK_OK(MPI_Waitsome(NREQ, req, &outcount, idx, sts));
            if (outcount == MPI_UNDEFINED) break;
            CHECK(outcount >= 1 && outcount <= 4, "Waitsome outcount %d", outcount);
            if (outcount < 1 || outcount > 4) break;
            for (int k = 0; k < outcount; k++) {
                int i = idx[k];
                CHECK(i >= 0 && i < NREQ && is_active(i) && !seen[i],
                      "Waitsome index %d", i);
                if (i < 0 || i >= NREQ) continue;
                seen[i] = 1;
                n++;
                if (i == 1 || i == 4) check_recv_status(&sts[k], i, "Waitsome");
            }
        }
        CHECK(n == 4 && outcount == MPI_UNDEFINED, "Waitsome completed %d, last outcount %d",
              n, outcount);
        check_all_null(req, "Waitsome");
        check_data(round, "Waitsome");
    }

    /* Testsome until MPI_UNDEFINED, with MPI_STATUSES_IGNORE. */
    post(req, ++round);
    {
        int seen[NREQ] = {0}, n = 0, outcount, idx[NREQ];
        for (;;) {
            outcount = -5;
            CHECK_OK(MPI_Testsome(NREQ, req, &outcount, idx, MPI_STATUSES_IGNORE));
            if (outcount == MPI_UNDEFINED) break;
            CHECK(outcount >= 0 && outcount <= 4, "Testsome outcount %d", outcount);
            if (outcount < 0 || outcount > 4) break;
            for (int k = 0; k < outcount; k++) {
                int i = idx[k];
                CHECK(i >= 0 && i < NREQ && is_active(i) && !seen[i], "Testsome index %d", i);
                if (i >= 0 && i < NREQ) seen[i] = 1;
                n++;
            }
            if (n > 4) break;
        }
        CHECK(n == 4, "Testsome completed %d", n);
        check_all_null(req, "Testsome");
        check_data(round, "Testsome");
    }

    /* Zero-length arrays and all-null arrays. */
    {
        int idx = -5, flag = 0, outcount = -5, indices[NREQ];
        for (int i = 0; i < NREQ; i++) req[i] = MPI_REQUEST_NULL;
        CHECK_OK(MPI_Waitall(0, req, sts));
        CHECK_OK(MPI_Waitany(NREQ, req, &idx, &st));
        CHECK(idx == MPI_UNDEFINED, "Waitany over all-null gave %d", idx);
        CHECK_OK(MPI_Testany(NREQ, req, &idx, &flag, &st));
        CHECK(flag && idx == MPI_UNDEFINED, "Testany over all-null: flag %d index %d", flag, idx);
        CHECK_OK(MPI_Waitsome(NREQ, req, &outcount, indices, sts));
        CHECK(outcount == MPI_UNDEFINED, "Waitsome over all-null: outcount %d", outcount);
        outcount = -5;
        CHECK_OK(MPI_Testsome(NREQ, req, &outcount, indices, sts));
        CHECK(outcount == MPI_UNDEFINED, "Testsome over all-null: outcount %d", outcount);
        CHECK_OK(MPI_Waitall(NREQ, req, sts));
        for (int i = 0; i < NREQ; i++) check_empty_status(&sts[i], "Waitall over all-null");
    }

    /* MPI_Request_free on active Isends: both messages still arrive; the
     * buffers are only touched again after the peer acknowledges. */
    {
        MPI_Request a, b, rr[2];
        ++round;
        for (int i = 0; i < SMALL; i++) { s1[i] = val(rank, round, 1, i); r1[i] = -1; }
        for (int i = 0; i < LARGE; i++) { s2[i] = val(rank, round, 2, i); r2[i] = -1; }
        CHECK_OK(MPI_Irecv(r1, SMALL, MPI_INT, peer, 1, MPI_COMM_WORLD, &rr[0]));
        CHECK_OK(MPI_Irecv(r2, LARGE, MPI_INT, peer, 2, MPI_COMM_WORLD, &rr[1]));
        CHECK_OK(MPI_Isend(s2, LARGE, MPI_INT, peer, 2, MPI_COMM_WORLD, &b));
        CHECK_OK(MPI_Request_free(&b));
        CHECK(b == MPI_REQUEST_NULL, "Request_free on an active Isend did not null it");
        CHECK_OK(MPI_Isend(s1, SMALL, MPI_INT, peer, 1, MPI_COMM_WORLD, &a));
        CHECK_OK(MPI_Request_free(&a));
        CHECK(a == MPI_REQUEST_NULL, "Request_free on an active Isend did not null it");
        CHECK_OK(MPI_Waitall(2, rr, sts));
        check_data(round, "Request_free'd Isends");
        int ack = 1, got = 0;
        CHECK_OK(MPI_Sendrecv(&ack, 1, MPI_INT, peer, 3, &got, 1, MPI_INT, peer, 3,
                              MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(got == 1, "ack %d", got);
    }

    free(s2);
    free(r2);
    return ct_finish();
}
