/* ranks: 2 */
/* MPI_THREAD_MULTIPLE: a receive that one thread waits for is cancelled
 * by another thread, and the wait returns with a cancelled status
 * (MPI 4.1 §3.8.4: "If a communication is marked for cancellation, then a
 * MPI_WAIT call for that communication is guaranteed to return"), its
 * buffer untouched; MPI_Request_get_status from the other thread finds
 * the waited request incomplete meanwhile, with no error. Each case waits
 * its own way: MPI_Wait, MPI_Waitall, MPI_Waitany on MPI_COMM_WORLD and
 * on a duplicate, a derived datatype, a persistent receive, and waits
 * beside a receive that does complete; an MPI_Isendrecv, whose receive
 * is cancelled while its send completes (skipped under MPICH 4.0, whose
 * wait does not return); and a generalized request, whose
 * cancel callback runs on the cancelling thread, which then completes it
 * (MPICH 4.0 asserts when the callback itself completes it). Nothing is ever sent to a
 * cancelled receive; at the end a message on a cancelled receive's tag
 * reaches a fresh receive. Skips (and passes) without MULTIPLE. */
#include "common.h"
#include <pthread.h>
#include <time.h>

enum { WAIT, WAITALL, WAITANY, WAITALL_PAIR, WAITALL_PERSISTENT, WAIT_GREQ, WAIT_ISENDRECV };

struct kase {
    const char *name;
    int how;
    int dup;        /* on a duplicate of MPI_COMM_WORLD */
    int vector;     /* a strided datatype (unpacked at the end) */
    int persistent; /* the cancelled receive is persistent */
};

static const struct kase cases[] = {
    {"Wait", WAIT, 0, 0, 0},
    {"Waitall", WAITALL, 0, 0, 0},
    {"Waitany", WAITANY, 0, 0, 0},
    {"Wait on a duplicate", WAIT, 1, 0, 0},
    {"Wait on a strided type", WAIT, 1, 1, 0},
    {"Waitall on a strided type", WAITALL, 0, 1, 0},
    {"Wait on a persistent receive", WAIT, 0, 0, 1},
    {"Waitall beside a receive that completes", WAITALL_PAIR, 1, 0, 0},
    {"Waitall beside a persistent receive", WAITALL_PERSISTENT, 0, 0, 0},
    {"Wait on a generalized request", WAIT_GREQ, 0, 0, 0},
    {"Wait on an MPI_Isendrecv", WAIT_ISENDRECV, 1, 0, 0},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

static MPI_Request req;

/* The generalized request: its cancel callback marks it cancelled; its
 * query says so. */
static int greq_case, greq_cancelled, greq_freed;

static int greq_query(void *extra, MPI_Status *st)
{
    (void)extra;
    MPI_Status_set_cancelled(st, greq_cancelled);
    MPI_Status_set_elements(st, MPI_BYTE, 0);
    st->MPI_SOURCE = MPI_UNDEFINED;
    st->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

static int greq_free(void *extra)
{
    (void)extra;
    greq_freed++;
    return MPI_SUCCESS;
}

static int greq_cancel(void *extra, int complete)
{
    (void)extra;
    if (!complete)
        greq_cancelled = 1;
    return MPI_SUCCESS;
}
static volatile int waiting;
static int peek_rc, peek_flag;

static void nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *canceller(void *arg)
{
    (void)arg;
    while (!waiting)
        nap(1);
    /* The waiter is in (or about to be in) its wait. */
    nap(50);
    peek_flag = -1;
    peek_rc = MPI_Request_get_status(req, &peek_flag, MPI_STATUS_IGNORE);
    MPI_Request r = req;
    int rc = MPI_Cancel(&r);
    if (greq_case && greq_cancelled)
        MPI_Grequest_complete(r);
    return (void *)(long)rc;
}

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE, rank = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (provided < MPI_THREAD_MULTIPLE)
        return ct_finish();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Datatype vec;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    if (rank == 1) {
        /* The receives that complete: one per case that has one. */
        for (int c = 0; c < NCASES; c++) {
            int v = 1000 + c;
            if (cases[c].how == WAITALL_PAIR || cases[c].how == WAITALL_PERSISTENT)
                MPI_Send(&v, 1, MPI_INT, 0, 300 + c, cases[c].dup ? dup : MPI_COMM_WORLD);
            if (cases[c].how == WAIT_ISENDRECV && OURS) {
                int got = -1;
                MPI_Recv(&got, 1, MPI_INT, 0, 400 + c, cases[c].dup ? dup : MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                if (got != 2000 + c) {
                    fprintf(stderr, "rank 1: the Isendrecv's send gave %d\n", got);
                    ct_errs++;
                }
            }
        }
    } else {
        for (int c = 0; c < NCASES; c++) {
            const struct kase *k = &cases[c];
            if (k->how == WAIT_ISENDRECV && !OURS)
                continue;
            MPI_Comm comm = k->dup ? dup : MPI_COMM_WORLD;
            int buf[4] = {-1, -1, -1, -1}, other = -1;
            MPI_Request rs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
            greq_case = k->how == WAIT_GREQ;
            int sendv = 2000 + c;
            if (k->how == WAIT_ISENDRECV) {
                CHECK_OK(MPI_Isendrecv(&sendv, 1, MPI_INT, 1, 400 + c, buf, 1, MPI_INT, 1,
                                       100 + c, comm, &rs[0]));
            } else if (greq_case) {
                CHECK_OK(MPI_Grequest_start(greq_query, greq_free, greq_cancel, NULL, &rs[0]));
            } else if (k->persistent) {
                CHECK_OK(MPI_Recv_init(buf, 1, MPI_INT, 1, 100 + c, comm, &rs[0]));
                CHECK_OK(MPI_Start(&rs[0]));
            } else {
                CHECK_OK(MPI_Irecv(buf, 1, k->vector ? vec : MPI_INT, 1, 100 + c, comm, &rs[0]));
            }
            if (k->how == WAITALL_PAIR)
                CHECK_OK(MPI_Irecv(&other, 1, MPI_INT, 1, 300 + c, comm, &rs[1]));
            if (k->how == WAITALL_PERSISTENT) {
                CHECK_OK(MPI_Recv_init(&other, 1, MPI_INT, 1, 300 + c, comm, &rs[1]));
                CHECK_OK(MPI_Start(&rs[1]));
            }
            req = rs[0];
            waiting = 0;
            pthread_t th;
            pthread_create(&th, NULL, canceller, NULL);
            MPI_Status st[2];
            int n = (k->how == WAITALL_PAIR || k->how == WAITALL_PERSISTENT) ? 2 : 1;
            int rc = MPI_ERR_OTHER, idx = -2;
            waiting = 1;
            if (k->how == WAIT || k->how == WAIT_GREQ || k->how == WAIT_ISENDRECV)
                rc = MPI_Wait(&rs[0], &st[0]);
            else if (k->how == WAITANY)
                rc = MPI_Waitany(1, rs, &idx, &st[0]);
            else
                rc = MPI_Waitall(n, rs, st);
            void *crc = NULL;
            pthread_join(th, &crc);
            CHECK(rc == MPI_SUCCESS, "%s: the wait returned %d", k->name, rc);
            CHECK((long)crc == MPI_SUCCESS, "%s: MPI_Cancel returned %ld", k->name, (long)crc);
            CHECK(peek_rc == MPI_SUCCESS, "%s: MPI_Request_get_status returned %d", k->name,
                  peek_rc);
            CHECK(peek_flag == 0, "%s: a waited receive peeked complete (%d)", k->name,
                  peek_flag);
            if (k->how == WAITANY)
                CHECK(idx == 0, "%s: index %d", k->name, idx);
            if (greq_case)
                CHECK(greq_cancelled && greq_freed == 1, "%s: cancelled %d, freed %d times",
                      k->name, greq_cancelled, greq_freed);
            int cancelled = 0;
            MPI_Test_cancelled(&st[0], &cancelled);
            CHECK(cancelled, "%s: the status does not say cancelled", k->name);
            for (int i = 0; i < 4; i++)
                CHECK(buf[i] == -1, "%s: buf[%d] was written (%d)", k->name, i, buf[i]);
            if (n == 2) {
                int oc = 1;
                MPI_Test_cancelled(&st[1], &oc);
                CHECK(!oc && other == 1000 + c && st[1].MPI_TAG == 300 + c,
                      "%s: the other receive: cancelled %d, value %d, tag %d", k->name, oc, other,
                      st[1].MPI_TAG);
            }
            for (int i = 0; i < 2; i++) {
                if (k->persistent && i == 0) {
                    CHECK(rs[0] != MPI_REQUEST_NULL, "%s: the persistent request went", k->name);
                    MPI_Request_free(&rs[0]);
                } else if (k->how == WAITALL_PERSISTENT && i == 1) {
                    MPI_Request_free(&rs[1]);
                }
                CHECK(rs[i] == MPI_REQUEST_NULL, "%s: request %d not null", k->name, i);
            }
        }
    }
    /* The cancelled receives took nothing: a message on their tag reaches
     * a fresh receive, sent once they are all done. */
    MPI_Barrier(MPI_COMM_WORLD);
    int v = 41;
    if (rank == 1)
        MPI_Send(&v, 1, MPI_INT, 0, 100, MPI_COMM_WORLD);
    else {
        CHECK_OK(MPI_Recv(&v, 1, MPI_INT, 1, 100, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(v == 41, "got %d after the cancels", v);
    }
    MPI_Type_free(&vec);
    MPI_Comm_free(&dup);
    return ct_finish();
}
