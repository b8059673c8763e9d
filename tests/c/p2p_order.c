/* ranks: 2 4 8 */
/* Non-overtaking order: every rank but 0 sends a stream of messages to rank
 * 0 (mostly 1 int, every 10th one 20000 ints, so small messages follow big
 * ones). Rank 0 checks each sender's messages arrive in send order:
 * (1) same tag, received with MPI_ANY_SOURCE; (2) tag varying per message,
 * received with MPI_ANY_SOURCE + MPI_ANY_TAG; (3) received per source with
 * MPI_ANY_TAG; (4) receives pre-posted with Irecv (ANY_TAG) before the
 * sends, matched in posting order. A barrier separates the phases. */
#include "common.h"

/* MPICH defines MPI_STATUSES_IGNORE as (MPI_Status *)1, which GCC's
 * -Wstringop-overflow flags; passing it is legal MPI. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#define NMSG 40
#define BIG 20000

static int msg_len(int seq) { return seq % 10 == 3 ? BIG : 1; }
static int msg_tag(int phase, int seq) { return phase == 0 ? 5 : phase * 100 + seq % 7; }
static int val(int src, int seq, int i) { return src * 1000000 + seq * 1000 + i % 1000; }

static int *sendbufs[NMSG];

/* Every sender starts all its messages nonblocking, then waits. */
static void send_stream(int phase)
{
    int rank;
    MPI_Request req[NMSG];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int k = 0; k < NMSG; k++) {
        for (int i = 0; i < msg_len(k); i++)
            sendbufs[k][i] = val(rank, k + phase * 100, i);
        CHECK_OK(MPI_Isend(sendbufs[k], msg_len(k), MPI_INT, 0, msg_tag(phase, k),
                           MPI_COMM_WORLD, &req[k]));
    }
    CHECK_OK(MPI_Waitall(NMSG, req, MPI_STATUSES_IGNORE));
}

static void check_msg(int phase, int src, int seq, const int *buf, MPI_Status *st)
{
    int count = -1;
    CHECK_OK(MPI_Get_count(st, MPI_INT, &count));
    CHECK(count == msg_len(seq), "phase %d src %d seq %d: count %d want %d",
          phase, src, seq, count, msg_len(seq));
    CHECK(st->MPI_TAG == msg_tag(phase, seq), "phase %d src %d seq %d: tag %d want %d",
          phase, src, seq, st->MPI_TAG, msg_tag(phase, seq));
    if (count != msg_len(seq)) return;
    int bad = 0;
    for (int i = 0; i < count; i++)
        if (buf[i] != val(src, seq + phase * 100, i)) bad++;
    CHECK(bad == 0, "phase %d src %d seq %d: %d bad values (first value %d: "
          "message out of order?)", phase, src, seq, bad, buf[0]);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int *rbuf = malloc(BIG * sizeof(int));
    for (int k = 0; k < NMSG; k++) sendbufs[k] = malloc((size_t)msg_len(k) * sizeof(int));
    int *next = calloc((size_t)size, sizeof(int));
    if (!rbuf || !next) MPI_Abort(MPI_COMM_WORLD, 2);

    /* Phases 0 and 1: ANY_SOURCE (phase 0 fixed tag, phase 1 ANY_TAG). */
    for (int phase = 0; phase < 2; phase++) {
        if (rank != 0) {
            send_stream(phase);
        } else {
            for (int s = 0; s < size; s++) next[s] = 0;
            for (int m = 0; m < (size - 1) * NMSG; m++) {
                MPI_Status st;
                CHECK_OK(MPI_Recv(rbuf, BIG, MPI_INT, MPI_ANY_SOURCE,
                                  phase == 0 ? 5 : MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                int src = st.MPI_SOURCE;
                CHECK(src >= 1 && src < size, "phase %d: bad source %d", phase, src);
                if (src < 1 || src >= size) continue;
                CHECK(next[src] < NMSG, "phase %d: too many messages from %d", phase, src);
                if (next[src] >= NMSG) continue;
                check_msg(phase, src, next[src], rbuf, &st);
                next[src]++;
            }
            for (int s = 1; s < size; s++)
                CHECK(next[s] == NMSG, "phase %d: %d messages from %d", phase, next[s], s);
        }
        /* Keeps the next phase's messages (which an ANY_TAG receive would
         * also match) from being sent before this phase is all received. */
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* Phase 2: per source in turn, ANY_TAG. */
    if (rank != 0) {
        send_stream(2);
    } else {
        for (int src = size - 1; src >= 1; src--) {
            for (int k = 0; k < NMSG; k++) {
                MPI_Status st;
                CHECK_OK(MPI_Recv(rbuf, BIG, MPI_INT, src, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                CHECK(st.MPI_SOURCE == src, "phase 2: source %d want %d", st.MPI_SOURCE, src);
                check_msg(2, src, k, rbuf, &st);
            }
        }
    }

    /* Phase 3: rank 0 pre-posts all receives (per source, ANY_TAG), then a
     * barrier, then the senders send; the k-th posted receive for a source
     * must get that source's k-th message. */
    if (rank == 0) {
        int nrecv = (size - 1) * NMSG;
        MPI_Request *req = malloc((size_t)nrecv * sizeof(MPI_Request));
        MPI_Status *sts = malloc((size_t)nrecv * sizeof(MPI_Status));
        int *big = malloc((size_t)nrecv * BIG * sizeof(int));
        if (!req || !sts || !big) MPI_Abort(MPI_COMM_WORLD, 2);
        for (int k = 0; k < NMSG; k++)
            for (int src = 1; src < size; src++) {
                int idx = k * (size - 1) + (src - 1);
                CHECK_OK(MPI_Irecv(big + (size_t)idx * BIG, BIG, MPI_INT, src,
                                   MPI_ANY_TAG, MPI_COMM_WORLD, &req[idx]));
            }
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_OK(MPI_Waitall(nrecv, req, sts));
        for (int k = 0; k < NMSG; k++)
            for (int src = 1; src < size; src++) {
                int idx = k * (size - 1) + (src - 1);
                CHECK(sts[idx].MPI_SOURCE == src, "phase 3: source %d want %d",
                      sts[idx].MPI_SOURCE, src);
                check_msg(3, src, k, big + (size_t)idx * BIG, &sts[idx]);
            }
        free(req);
        free(sts);
        free(big);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        send_stream(3);
    }

    for (int k = 0; k < NMSG; k++) free(sendbufs[k]);
    free(rbuf);
    free(next);
    return ct_finish();
}
