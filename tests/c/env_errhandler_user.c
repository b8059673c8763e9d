/* ranks: 1 2 4 */
/* User error handlers: MPI_Comm_create_errhandler with a function that
 * records its arguments; it is invoked with the communicator and the code
 * through MPI_Comm_call_errhandler (which then returns MPI_SUCCESS) and
 * through a real failing call (which returns that code). MPI_Comm_get_errhandler
 * gives a handle that works on another communicator and is released with
 * MPI_Errhandler_free (-> MPI_ERRHANDLER_NULL); MPI_Comm_dup inherits the
 * handler; freeing the handle while attached keeps the handler working;
 * MPI_ERRORS_RETURN replaces it. */
#include "common.h"

static int calls = 0;
static MPI_Comm last_comm;
static int last_code = MPI_SUCCESS;

static void record(MPI_Comm *comm, int *code, ...)
{
    calls++;
    last_comm = *comm;
    last_code = *code;
}

static int class_of(int code)
{
    int cls = -1;
    CHECK_OK(MPI_Error_class(code, &cls));
    return cls;
}

int main(int argc, char **argv)
{
    int rank, size, buf[2] = {0, 0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    last_comm = MPI_COMM_NULL;

    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    CHECK_OK(MPI_Comm_create_errhandler(record, &eh));
    CHECK(eh != MPI_ERRHANDLER_NULL, "created errhandler is MPI_ERRHANDLER_NULL");

    MPI_Comm c;
    CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    CHECK_OK(MPI_Comm_set_errhandler(c, eh));
    CHECK(calls == 0, "handler called %d times before any error", calls);

    /* 1. Through MPI_Comm_call_errhandler. */
    int rc = MPI_Comm_call_errhandler(c, MPI_ERR_OTHER);
    CHECK(rc == MPI_SUCCESS, "MPI_Comm_call_errhandler returned %d", rc);
    CHECK(calls == 1, "after call_errhandler: %d calls, expected 1", calls);
    CHECK(last_comm == c, "handler got another communicator");
    CHECK(last_code == MPI_ERR_OTHER, "handler got code %d, expected MPI_ERR_OTHER", last_code);

    /* 2. Through a real failing call: bad destination rank. */
    rc = MPI_Send(buf, 1, MPI_INT, size, 0, c);
    CHECK(calls == 2, "after bad MPI_Send: %d calls, expected 2", calls);
    CHECK(last_comm == c, "handler for MPI_Send got another communicator");
    CHECK(last_code != MPI_SUCCESS && class_of(last_code) == MPI_ERR_RANK,
          "handler for bad rank got code %d", last_code);
    CHECK(rc == last_code, "MPI_Send returned %d, handler saw %d", rc, last_code);

    /* ... and a negative count. */
    rc = MPI_Send(buf, -1, MPI_INT, 0, 0, c);
    CHECK(calls == 3, "after bad count: %d calls, expected 3", calls);
    CHECK(last_code != MPI_SUCCESS && class_of(last_code) == MPI_ERR_COUNT,
          "handler for bad count got code %d", last_code);
    CHECK(rc == last_code, "MPI_Send returned %d, handler saw %d", rc, last_code);

    /* The communicator still works after the handled errors. */
    {
        int v = rank + 1, sum = 0;
        CHECK_OK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c));
        CHECK(sum == size * (size + 1) / 2, "allreduce on c gave %d", sum);
        CHECK(calls == 3, "handler called by a successful call (%d calls)", calls);
    }

    /* 3. MPI_Comm_get_errhandler: the handle works elsewhere, then is freed. */
    MPI_Errhandler got = MPI_ERRHANDLER_NULL;
    CHECK_OK(MPI_Comm_get_errhandler(c, &got));
    CHECK(got != MPI_ERRHANDLER_NULL, "MPI_Comm_get_errhandler gave MPI_ERRHANDLER_NULL");
    MPI_Comm c2;
    CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c2));
    if (got != MPI_ERRHANDLER_NULL) {
        CHECK_OK(MPI_Comm_set_errhandler(c2, got));
        rc = MPI_Comm_call_errhandler(c2, MPI_ERR_ARG);
        CHECK(rc == MPI_SUCCESS, "call_errhandler on c2 returned %d", rc);
        CHECK(calls == 4, "handler from get_errhandler: %d calls, expected 4", calls);
        CHECK(last_comm == c2, "handler on c2 got another communicator");
        CHECK(last_code == MPI_ERR_ARG, "handler on c2 got code %d", last_code);
        CHECK_OK(MPI_Errhandler_free(&got));
        CHECK(got == MPI_ERRHANDLER_NULL, "MPI_Errhandler_free did not null the handle");
    }

    /* 4. MPI_Comm_dup inherits the handler. */
    MPI_Comm c3;
    CHECK_OK(MPI_Comm_dup(c, &c3));
    calls = 0;
    rc = MPI_Comm_call_errhandler(c3, MPI_ERR_TAG);
    CHECK(rc == MPI_SUCCESS, "call_errhandler on dup returned %d", rc);
    CHECK(calls == 1 && last_comm == c3 && last_code == MPI_ERR_TAG,
          "dup did not inherit the handler (calls %d, code %d)", calls, last_code);
    rc = MPI_Recv(buf, 1, MPI_INT, size + 1, 0, c3, MPI_STATUS_IGNORE);
    CHECK(calls == 2 && last_comm == c3, "bad MPI_Recv on dup: %d calls", calls);
    CHECK(rc != MPI_SUCCESS && class_of(rc) == MPI_ERR_RANK, "bad MPI_Recv on dup returned %d",
          rc);

    /* 5. Freeing the handle while communicators use it keeps it working. */
    CHECK_OK(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL, "MPI_Errhandler_free did not null the handle");
    calls = 0;
    rc = MPI_Comm_call_errhandler(c, MPI_ERR_OTHER);
    CHECK(rc == MPI_SUCCESS && calls == 1 && last_comm == c,
          "handler after MPI_Errhandler_free: rc %d, calls %d", rc, calls);

    /* 6. MPI_ERRORS_RETURN replaces it: the user function is not called. */
    CHECK_OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
    calls = 0;
    (void)MPI_Comm_call_errhandler(c, MPI_ERR_OTHER);
    rc = MPI_Send(buf, 1, MPI_INT, size, 0, c);
    CHECK(calls == 0, "user handler called %d times after MPI_ERRORS_RETURN was set", calls);
    CHECK(rc != MPI_SUCCESS && class_of(rc) == MPI_ERR_RANK, "bad send returned %d", rc);
    /* c3 still has the user handler. */
    rc = MPI_Comm_call_errhandler(c3, MPI_ERR_OTHER);
    CHECK(rc == MPI_SUCCESS && calls == 1 && last_comm == c3,
          "c3 lost its handler: rc %d, calls %d", rc, calls);

    CHECK_OK(MPI_Comm_free(&c3));
    CHECK_OK(MPI_Comm_free(&c2));
    CHECK_OK(MPI_Comm_free(&c));
    return ct_finish();
}
