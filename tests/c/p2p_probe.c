/* ranks: 2 4 */
/* Probing: MPI_Probe with ANY_SOURCE/ANY_TAG then a receive sized from
 * MPI_Get_count (probing twice sees the same message; probe does not
 * consume it); MPI_Iprobe looped until true, and false for a tag never sent;
 * MPI_Mprobe/MPI_Improbe + MPI_Mrecv/MPI_Imrecv: a matched message is taken
 * out of matching (a second Mprobe and a plain Recv get the later messages),
 * each handle receives exactly its own message even when received in
 * reverse order, handles become MPI_MESSAGE_NULL, a 70000-int message
 * through Mprobe, and MPI_MESSAGE_NO_PROC for MPI_PROC_NULL. */
#include "common.h"

/* MPICH defines MPI_STATUSES_IGNORE as (MPI_Status *)1, which GCC's
 * -Wstringop-overflow flags; passing it is legal MPI. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#define BIG 70000

static int val(int src, int tag, int i) { return src * 1000000 + tag * 1000 + i; }

static void fill(int *buf, int n, int src, int tag)
{
    for (int i = 0; i < n; i++) buf[i] = val(src, tag, i);
}

static void check_data(const int *buf, int n, int src, int tag, const char *what)
{
    int bad = 0;
    for (int i = 0; i < n; i++) if (buf[i] != val(src, tag, i)) bad++;
    CHECK(bad == 0, "%s: %d of %d values wrong (src %d tag %d, first %d)", what, bad, n,
          src, tag, n > 0 ? buf[0] : 0);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* A. Probe with ANY_SOURCE/ANY_TAG: rank r sends 10*r ints, tag r. */
    if (rank != 0) {
        int *buf = malloc((size_t)(10 * rank) * sizeof(int));
        MPI_Request req;
        fill(buf, 10 * rank, rank, rank);
        CHECK_OK(MPI_Isend(buf, 10 * rank, MPI_INT, 0, rank, MPI_COMM_WORLD, &req));
        CHECK_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        free(buf);
    } else {
        for (int m = 1; m < size; m++) {
            int c = -1, c2 = -1;
            CHECK_OK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            int src = st.MPI_SOURCE, tag = st.MPI_TAG;
            CHECK(src >= 1 && src < size && tag == src, "Probe status %d/%d", src, tag);
            CHECK_OK(MPI_Get_count(&st, MPI_INT, &c));
            CHECK(c == 10 * src, "Probe count %d want %d", c, 10 * src);
            if (src < 1 || src >= size || c < 0) continue;
            /* Probing again (now by source and tag) sees the same message. */
            CHECK_OK(MPI_Probe(src, tag, MPI_COMM_WORLD, &st));
            CHECK_OK(MPI_Get_count(&st, MPI_INT, &c2));
            CHECK(st.MPI_SOURCE == src && st.MPI_TAG == tag && c2 == c,
                  "second Probe %d/%d/%d want %d/%d/%d", st.MPI_SOURCE, st.MPI_TAG,
                  c2, src, tag, c);
            int *buf = malloc((size_t)c * sizeof(int) + 1);
            CHECK_OK(MPI_Recv(buf, c, MPI_INT, src, tag, MPI_COMM_WORLD, &st));
            check_data(buf, c, src, tag, "Probe then Recv");
            free(buf);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* B. Iprobe looped until true; an Iprobe for a tag never sent is false. */
    if (rank == 1) {
        int buf[4];
        fill(buf, 4, 1, 50);
        CHECK_OK(MPI_Send(buf, 4, MPI_INT, 0, 50, MPI_COMM_WORLD));
    } else if (rank == 0) {
        int flag = 0, buf[4], c = -1;
        CHECK_OK(MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, &st));
        CHECK(!flag, "Iprobe for a tag nobody sends returned true");
        flag = 0;
        while (!flag)
            CHECK_OK(MPI_Iprobe(MPI_ANY_SOURCE, 50, MPI_COMM_WORLD, &flag, &st));
        CHECK_OK(MPI_Get_count(&st, MPI_INT, &c));
        CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 50 && c == 4, "Iprobe status %d/%d/%d",
              st.MPI_SOURCE, st.MPI_TAG, c);
        flag = 0;
        CHECK_OK(MPI_Iprobe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        CHECK(flag, "Iprobe did not see the message a second time");
        CHECK_OK(MPI_Recv(buf, 4, MPI_INT, 1, 50, MPI_COMM_WORLD, &st));
        check_data(buf, 4, 1, 50, "Iprobe then Recv");
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* C. Matched probes. Rank 1 sends, in order: A (3 ints, tag 60),
     * B (5 ints, tag 60), C (2 ints, tag 61), D (7 ints, tag 60), and E
     * (BIG ints, tag 62). Tags are encoded in the data as 60..64. */
    if (rank == 1) {
        static const int n[5] = {3, 5, 2, 7, BIG};
        static const int tags[5] = {60, 60, 61, 60, 62};
        int *bufs[5];
        MPI_Request reqs[5];
        for (int k = 0; k < 5; k++) {
            bufs[k] = malloc((size_t)n[k] * sizeof(int));
            fill(bufs[k], n[k], 1, 60 + k);
            CHECK_OK(MPI_Isend(bufs[k], n[k], MPI_INT, 0, tags[k], MPI_COMM_WORLD, &reqs[k]));
        }
        CHECK_OK(MPI_Waitall(5, reqs, MPI_STATUSES_IGNORE));
        for (int k = 0; k < 5; k++) free(bufs[k]);
    } else if (rank == 0) {
        MPI_Message m1 = MPI_MESSAGE_NULL, m2 = MPI_MESSAGE_NULL, m3 = MPI_MESSAGE_NULL;
        int c = -1, flag = 0;
        int a[3], b[5], cc[2], d[7];
        CHECK_OK(MPI_Mprobe(1, 60, MPI_COMM_WORLD, &m1, &st));
        CHECK(m1 != MPI_MESSAGE_NULL, "Mprobe gave MPI_MESSAGE_NULL");
        CHECK_OK(MPI_Get_count(&st, MPI_INT, &c));
        CHECK(c == 3 && st.MPI_SOURCE == 1 && st.MPI_TAG == 60, "Mprobe A: %d/%d/%d",
              st.MPI_SOURCE, st.MPI_TAG, c);
        /* A is out of matching now: the next Mprobe on tag 60 gives B. */
        CHECK_OK(MPI_Mprobe(MPI_ANY_SOURCE, 60, MPI_COMM_WORLD, &m2, &st));
        CHECK_OK(MPI_Get_count(&st, MPI_INT, &c));
        CHECK(c == 5 && st.MPI_SOURCE == 1 && st.MPI_TAG == 60, "Mprobe B: %d/%d/%d",
              st.MPI_SOURCE, st.MPI_TAG, c);
        CHECK(m2 != m1, "two Mprobes gave the same handle");
        /* A plain receive on tag 60 now gets D, not A or B. */
        CHECK_OK(MPI_Recv(d, 7, MPI_INT, 1, 60, MPI_COMM_WORLD, &st));
        CHECK_OK(MPI_Get_count(&st, MPI_INT, &c));
        CHECK(c == 7, "Recv after Mprobes got %d ints, want D's 7", c);
        if (c == 7) check_data(d, 7, 1, 63, "Recv after Mprobes (D)");
        /* Receive the matched messages in reverse order. */
        CHECK_OK(MPI_Mrecv(b, 5, MPI_INT, &m2, &st));
        CHECK(m2 == MPI_MESSAGE_NULL, "Mrecv did not set the handle to MPI_MESSAGE_NULL");
        CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 60, "Mrecv B status %d/%d",
              st.MPI_SOURCE, st.MPI_TAG);
        check_data(b, 5, 1, 61, "Mrecv B");
        CHECK_OK(MPI_Mrecv(a, 3, MPI_INT, &m1, &st));
        CHECK(m1 == MPI_MESSAGE_NULL, "Mrecv did not set the handle to MPI_MESSAGE_NULL");
        CHECK_OK(MPI_Get_count(&st, MPI_INT, &c));
        CHECK(c == 3, "Mrecv A count %d", c);
        check_data(a, 3, 1, 60, "Mrecv A");
        /* Improbe looped until true, then Imrecv. */
        while (!flag)
            CHECK_OK(MPI_Improbe(MPI_ANY_SOURCE, 61, MPI_COMM_WORLD, &flag, &m3, &st));
        CHECK(m3 != MPI_MESSAGE_NULL && m3 != MPI_MESSAGE_NO_PROC, "Improbe handle");
        CHECK_OK(MPI_Get_count(&st, MPI_INT, &c));
        CHECK(c == 2 && st.MPI_SOURCE == 1 && st.MPI_TAG == 61, "Improbe C: %d/%d/%d",
              st.MPI_SOURCE, st.MPI_TAG, c);
        MPI_Request req;
        CHECK_OK(MPI_Imrecv(cc, 2, MPI_INT, &m3, &req));
        CHECK(m3 == MPI_MESSAGE_NULL, "Imrecv did not set the handle to MPI_MESSAGE_NULL");
        CHECK_OK(MPI_Wait(&req, &st));
        CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 61, "Imrecv status %d/%d",
              st.MPI_SOURCE, st.MPI_TAG);
        check_data(cc, 2, 1, 62, "Imrecv C");
        /* Large message sized by Mprobe. */
        MPI_Message m4 = MPI_MESSAGE_NULL;
        CHECK_OK(MPI_Mprobe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &m4, &st));
        CHECK_OK(MPI_Get_count(&st, MPI_INT, &c));
        CHECK(c == BIG && st.MPI_TAG == 62, "Mprobe E: tag %d count %d", st.MPI_TAG, c);
        int *e = malloc(BIG * sizeof(int));
        CHECK_OK(MPI_Mrecv(e, BIG, MPI_INT, &m4, &st));
        check_data(e, BIG, 1, 64, "Mrecv E");
        free(e);
        /* Nothing from rank 1 is left. */
        flag = 1;
        CHECK_OK(MPI_Iprobe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
        CHECK(!flag, "Iprobe found a leftover message tag %d", st.MPI_TAG);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* D. Every rank > 0 sends one message, tag 70; rank 0 Improbes them all
     * first and Mrecvs them in reverse order. */
    if (rank != 0) {
        int buf[16];
        fill(buf, rank, rank, 70);
        CHECK_OK(MPI_Send(buf, rank, MPI_INT, 0, 70, MPI_COMM_WORLD));
    } else {
        MPI_Message *msgs = malloc((size_t)size * sizeof(MPI_Message));
        int *srcs = malloc((size_t)size * sizeof(int));
        for (int m = 0; m < size - 1; m++) {
            int flag = 0;
            msgs[m] = MPI_MESSAGE_NULL;
            while (!flag)
                CHECK_OK(MPI_Improbe(MPI_ANY_SOURCE, 70, MPI_COMM_WORLD, &flag, &msgs[m], &st));
            srcs[m] = st.MPI_SOURCE;
            for (int j = 0; j < m; j++)
                CHECK(srcs[j] != srcs[m], "Improbe matched source %d twice", srcs[m]);
        }
        for (int m = size - 2; m >= 0; m--) {
            int buf[16], c = -1;
            CHECK_OK(MPI_Mrecv(buf, 16, MPI_INT, &msgs[m], &st));
            CHECK_OK(MPI_Get_count(&st, MPI_INT, &c));
            CHECK(st.MPI_SOURCE == srcs[m] && c == srcs[m],
                  "Mrecv of handle %d: source %d count %d want %d", m, st.MPI_SOURCE, c,
                  srcs[m]);
            if (c == srcs[m]) check_data(buf, c, srcs[m], 70, "Improbe/Mrecv all");
        }
        free(msgs);
        free(srcs);
    }

    /* E. MPI_PROC_NULL gives MPI_MESSAGE_NO_PROC. */
    {
        MPI_Message m = MPI_MESSAGE_NULL;
        int buf = -3;
        CHECK_OK(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &m, &st));
        CHECK(m == MPI_MESSAGE_NO_PROC, "Mprobe(MPI_PROC_NULL) did not give MPI_MESSAGE_NO_PROC");
        CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "Mprobe(MPI_PROC_NULL) source %d", st.MPI_SOURCE);
        CHECK_OK(MPI_Mrecv(&buf, 1, MPI_INT, &m, &st));
        CHECK(m == MPI_MESSAGE_NULL && buf == -3 && st.MPI_SOURCE == MPI_PROC_NULL,
              "Mrecv(MPI_MESSAGE_NO_PROC): handle not null, buffer written or bad source");
    }

    return ct_finish();
}
