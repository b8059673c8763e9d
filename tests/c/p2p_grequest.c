/* ranks: 1 2 */
/* Generalized requests (MPI 4.1 §13.2): a worker thread does the work
 * and calls MPI_Grequest_complete; MPI_Wait then gets the status from the
 * query callback (source, tag, count set with MPI_Status_set_elements)
 * and the free callback runs once, after the query; MPI_Test says not
 * yet before the completion; MPI_Request_get_status queries without
 * freeing; MPI_Waitall mixes one with a receive; MPI_Cancel calls the
 * cancel callback with whether it is complete; a request freed before it
 * completes gets its free callback (and no query) in MPI_Grequest_complete;
 * a failing query callback's code is the wait's error. */
#include "common.h"
#include <pthread.h>

/* MPICH 4.0 runs the free callback in MPI_Request_free of a request not
 * complete yet (MPI 4.1 §13.2 runs it in the later of MPI_Request_free
 * and MPI_Grequest_complete), and then refuses the completion: that part
 * is shmpi's. */
#include <time.h>

struct op {
    int queries, frees, cancels, cancel_complete, fail, no_query;
    int value;
};

static int query(void *extra, MPI_Status *st)
{
    struct op *o = extra;
    o->queries++;
    if (o->fail) return MPI_ERR_OTHER;
    MPI_Status_set_elements(st, MPI_INT, 3);
    MPI_Status_set_cancelled(st, o->cancels > 0);
    st->MPI_SOURCE = 7;
    st->MPI_TAG = 42;
    return MPI_SUCCESS;
}

static int freefn(void *extra)
{
    struct op *o = extra;
    CHECK(o->queries >= 1 || o->no_query, "free before any query");
    o->frees++;
    return MPI_SUCCESS;
}

static int cancelfn(void *extra, int complete)
{
    struct op *o = extra;
    o->cancels++;
    o->cancel_complete = complete;
    return MPI_SUCCESS;
}

struct job {
    struct op *o;
    MPI_Request r;
};

static void *worker(void *arg)
{
    struct job *j = arg;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    j->o->value = 99;
    MPI_Grequest_complete(j->r);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* 1. Completed by a thread; Test before, get_status, then Wait. */
    if (provided == MPI_THREAD_MULTIPLE) {
        struct op o = {0};
        struct job j = {&o, MPI_REQUEST_NULL};
        CHECK_OK(MPI_Grequest_start(query, freefn, cancelfn, &o, &j.r));
        MPI_Request r = j.r;
        int flag = 1;
        CHECK_OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
        CHECK(!flag && r != MPI_REQUEST_NULL, "complete before MPI_Grequest_complete");
        pthread_t th;
        pthread_create(&th, NULL, worker, &j);
        MPI_Status st;
        CHECK_OK(MPI_Wait(&r, &st));
        pthread_join(th, NULL);
        int n = -1;
        MPI_Get_count(&st, MPI_INT, &n);
        CHECK(r == MPI_REQUEST_NULL && o.value == 99, "wait: value %d", o.value);
        CHECK(st.MPI_SOURCE == 7 && st.MPI_TAG == 42 && n == 3, "status %d %d %d",
              st.MPI_SOURCE, st.MPI_TAG, n);
        CHECK(o.frees == 1 && o.queries >= 1, "frees %d queries %d", o.frees, o.queries);
    }

    /* 2. Completed at once; get_status queries, Waitall beside a receive. */
    {
        struct op o = {0};
        MPI_Request rs[2];
        int got = -1, mine = me;
        CHECK_OK(MPI_Grequest_start(query, freefn, cancelfn, &o, &rs[0]));
        CHECK_OK(MPI_Irecv(&got, 1, MPI_INT, (me + p - 1) % p, 5, MPI_COMM_WORLD, &rs[1]));
        CHECK_OK(MPI_Send(&mine, 1, MPI_INT, (me + 1) % p, 5, MPI_COMM_WORLD));
        CHECK_OK(MPI_Grequest_complete(rs[0]));
        int flag = 0;
        MPI_Status st;
        CHECK_OK(MPI_Request_get_status(rs[0], &flag, &st));
        CHECK(flag && st.MPI_TAG == 42 && o.frees == 0, "get_status: flag %d tag %d frees %d",
              flag, st.MPI_TAG, o.frees);
        MPI_Status sts[2];
        CHECK_OK(MPI_Waitall(2, rs, sts));
        CHECK(sts[0].MPI_TAG == 42 && got == (me + p - 1) % p && o.frees == 1,
              "waitall: tag %d got %d frees %d", sts[0].MPI_TAG, got, o.frees);
    }

    /* 3. Cancel: the callback, told it is not complete yet. */
    {
        struct op o = {0};
        MPI_Request r;
        CHECK_OK(MPI_Grequest_start(query, freefn, cancelfn, &o, &r));
        CHECK_OK(MPI_Cancel(&r));
        CHECK(o.cancels == 1 && o.cancel_complete == 0, "cancel: %d calls, complete %d",
              o.cancels, o.cancel_complete);
        CHECK_OK(MPI_Grequest_complete(r));
        MPI_Status st;
        CHECK_OK(MPI_Wait(&r, &st));
        int c = 0;
        MPI_Test_cancelled(&st, &c);
        CHECK(c, "the query's cancelled flag was lost");
    }

    /* 4. Freed before it completes: the free callback comes with the
     *    completion. */
    {
        struct op o = {0};
        o.no_query = 1; /* a freed request is not queried */
        MPI_Request r, keep;
        CHECK_OK(MPI_Grequest_start(query, freefn, cancelfn, &o, &r));
        keep = r;
        CHECK_OK(MPI_Request_free(&r));
        CHECK(!OURS || o.frees == 0, "freed before it completed: %d frees", o.frees);
        if (OURS) {
            /* Its handle is not given to a new request meanwhile. */
            struct op o2 = {0};
            MPI_Request r2;
            CHECK_OK(MPI_Grequest_start(query, freefn, cancelfn, &o2, &r2));
            CHECK(r2 != keep, "a freed, incomplete request's handle was reused");
            /* The later of the two calls runs the free callback. */
            CHECK_OK(MPI_Grequest_complete(keep));
            CHECK(o.frees == 1 && o.queries == 0, "a freed request: %d frees, %d queries",
                  o.frees, o.queries);
            CHECK(o2.frees == 0, "the other request was freed");
            /* Testall with it not complete: nothing queried or freed. */
            MPI_Request two[2];
            int self_v = 1, self_got = 0, flag = 1;
            CHECK_OK(MPI_Irecv(&self_got, 1, MPI_INT, me, 9, MPI_COMM_WORLD, &two[0]));
            CHECK_OK(MPI_Send(&self_v, 1, MPI_INT, me, 9, MPI_COMM_WORLD));
            two[1] = r2;
            CHECK_OK(MPI_Testall(2, two, &flag, MPI_STATUSES_IGNORE));
            CHECK(!flag && o2.queries == 0 && o2.frees == 0,
                  "testall before completion: flag %d queries %d frees %d", flag, o2.queries,
                  o2.frees);
            CHECK_OK(MPI_Grequest_complete(r2));
            CHECK_OK(MPI_Waitall(2, two, MPI_STATUSES_IGNORE));
            CHECK(o2.frees == 1 && self_got == 1, "waitall: frees %d got %d", o2.frees,
                  self_got);
        }
    }

    /* 5. A failing query: the wait's error. */
    {
        struct op o = {0};
        o.fail = 1;
        MPI_Request r;
        CHECK_OK(MPI_Grequest_start(query, freefn, cancelfn, &o, &r));
        CHECK_OK(MPI_Grequest_complete(r));
        int rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(ct_class(rc) == MPI_ERR_OTHER, "a failing query: class %d", ct_class(rc));

    }
    return ct_finish();
}
