/* ranks: 1 2 4 */
/* MPI_ERRORS_RETURN on MPI_COMM_WORLD (and MPI_COMM_SELF, which MPI-4 uses
 * for errors not tied to a communicator): erroneous calls return an error
 * code of the right class instead of aborting, and the job continues:
 * bad destination/source rank -> MPI_ERR_RANK, bad tag -> MPI_ERR_TAG,
 * negative count -> MPI_ERR_COUNT, MPI_DATATYPE_NULL -> MPI_ERR_TYPE,
 * MPI_COMM_NULL -> MPI_ERR_COMM. Each error code has a non-empty error
 * string. Afterwards good messages still flow around a ring, and the
 * original handlers (saved with MPI_Comm_get_errhandler) are restored. */
#include "common.h"
#include <limits.h>

static int errs_class_mismatch(int rc, int want, const char *what)
{
    int cls = -1;
    if (rc == MPI_SUCCESS) {
        CHECK(0, "%s succeeded; expected class %d", what, want);
        return 1;
    }
    CHECK_OK(MPI_Error_class(rc, &cls));
    CHECK(cls == want, "%s: error class %d, expected %d", what, cls, want);
    char str[MPI_MAX_ERROR_STRING];
    int len = -1;
    CHECK_OK(MPI_Error_string(rc, str, &len));
    CHECK(len > 0 && len < MPI_MAX_ERROR_STRING, "%s: error string length %d", what, len);
    return cls != want;
}

int main(int argc, char **argv)
{
    int rank, size, buf[4] = {1, 2, 3, 4};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Save the current handlers to restore them at the end. */
    MPI_Errhandler old_world = MPI_ERRHANDLER_NULL, old_self = MPI_ERRHANDLER_NULL;
    CHECK_OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &old_world));
    CHECK_OK(MPI_Comm_get_errhandler(MPI_COMM_SELF, &old_self));
    CHECK_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    /* A rank that is neither valid nor one of the special values. */
    int neg = -7;
    while (neg == MPI_PROC_NULL || neg == MPI_ANY_SOURCE || neg == MPI_ANY_TAG)
        neg--;

    /* Bad ranks: all are detected locally, no message is sent. */
    errs_class_mismatch(MPI_Send(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK,
                        "MPI_Send to rank == size");
    errs_class_mismatch(MPI_Send(buf, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD),
                        MPI_ERR_RANK, "MPI_Send to rank size+5");
    errs_class_mismatch(MPI_Send(buf, 1, MPI_INT, neg, 0, MPI_COMM_WORLD), MPI_ERR_RANK,
                        "MPI_Send to negative rank");
    errs_class_mismatch(MPI_Send(buf, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD),
                        MPI_ERR_RANK, "MPI_Send to MPI_ANY_SOURCE");
    errs_class_mismatch(MPI_Recv(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                        MPI_ERR_RANK, "MPI_Recv from rank == size");

    /* Bad tags. */
    int badtag = -3;
    while (badtag == MPI_ANY_TAG)
        badtag--;
    errs_class_mismatch(MPI_Send(buf, 1, MPI_INT, next, badtag, MPI_COMM_WORLD), MPI_ERR_TAG,
                        "MPI_Send with negative tag");
    errs_class_mismatch(MPI_Send(buf, 1, MPI_INT, next, MPI_ANY_TAG, MPI_COMM_WORLD),
                        MPI_ERR_TAG, "MPI_Send with MPI_ANY_TAG");
    {
        int *tag_ub = NULL, flag = 0;
        CHECK_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag));
        CHECK(flag && tag_ub != NULL, "MPI_TAG_UB not available");
        if (flag && tag_ub != NULL && *tag_ub < INT_MAX)
            errs_class_mismatch(MPI_Send(buf, 1, MPI_INT, next, *tag_ub + 1, MPI_COMM_WORLD),
                                MPI_ERR_TAG, "MPI_Send with tag MPI_TAG_UB+1");
    }

    /* Bad count. */
    errs_class_mismatch(MPI_Send(buf, -1, MPI_INT, next, 0, MPI_COMM_WORLD), MPI_ERR_COUNT,
                        "MPI_Send with count -1");
    errs_class_mismatch(MPI_Recv(buf, -1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                        MPI_ERR_COUNT, "MPI_Recv with count -1");

    /* Null datatype. */
    errs_class_mismatch(MPI_Send(buf, 1, MPI_DATATYPE_NULL, next, 0, MPI_COMM_WORLD),
                        MPI_ERR_TYPE, "MPI_Send with MPI_DATATYPE_NULL");

    /* Null communicator. */
    errs_class_mismatch(MPI_Send(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM,
                        "MPI_Send on MPI_COMM_NULL");
    {
        int r = -99;
        errs_class_mismatch(MPI_Comm_rank(MPI_COMM_NULL, &r), MPI_ERR_COMM,
                            "MPI_Comm_rank(MPI_COMM_NULL)");
        errs_class_mismatch(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM, "MPI_Barrier(MPI_COMM_NULL)");
    }

    /* The job goes on: a good message flows around the ring. */
    int out[3] = {rank, 100 + rank, 7 * rank}, in[3] = {-1, -1, -1};
    MPI_Status st;
    CHECK_OK(MPI_Sendrecv(out, 3, MPI_INT, next, 42, in, 3, MPI_INT, prev, 42, MPI_COMM_WORLD,
                          &st));
    CHECK(in[0] == prev && in[1] == 100 + prev && in[2] == 7 * prev,
          "ring got {%d,%d,%d}, expected {%d,%d,%d}", in[0], in[1], in[2], prev, 100 + prev,
          7 * prev);
    CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == 42, "status source %d tag %d", st.MPI_SOURCE,
          st.MPI_TAG);

    /* And a blocking send/recv pair between 0 and the last rank. */
    if (size > 1) {
        if (rank == 0) {
            int v = 12345;
            CHECK_OK(MPI_Send(&v, 1, MPI_INT, size - 1, 5, MPI_COMM_WORLD));
        } else if (rank == size - 1) {
            int v = 0;
            CHECK_OK(MPI_Recv(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(v == 12345, "received %d, expected 12345", v);
        }
    }

    /* Restore the original handlers and free the handles we got. */
    CHECK_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, old_world));
    CHECK_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, old_self));
    CHECK_OK(MPI_Errhandler_free(&old_world));
    CHECK_OK(MPI_Errhandler_free(&old_self));
    CHECK(old_world == MPI_ERRHANDLER_NULL && old_self == MPI_ERRHANDLER_NULL,
          "MPI_Errhandler_free did not set MPI_ERRHANDLER_NULL");

    return ct_finish();
}
