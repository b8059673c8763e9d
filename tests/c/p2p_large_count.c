/* ranks: 1 2 */
/* The large-count point-to-point functions (MPI 4.1 §19.2): MPI_Send_c /
 * MPI_Recv_c, MPI_Isend_c / MPI_Irecv_c, MPI_Ssend_c, and
 * MPI_Get_count_c / MPI_Get_elements_c / MPI_Type_size_c /
 * MPI_Type_get_extent_c on ordinary messages; a count past INT_MAX of a
 * type of size 0 (no memory, the count itself past an int); a negative
 * count, or (on shmpi) one whose bytes pass what an object can hold, is
 * MPI_ERR_COUNT. */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int right = (me + 1) % p, left = (me + p - 1) % p;

    double out[5], in[8];
    for (int k = 0; k < 5; k++) out[k] = me + 0.5 * k;
    for (int k = 0; k < 8; k++) in[k] = -1;
    MPI_Request rq[2];
    CHECK_OK(MPI_Irecv_c(in, (MPI_Count)8, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, &rq[0]));
    CHECK_OK(MPI_Isend_c(out, (MPI_Count)5, MPI_DOUBLE, right, 3, MPI_COMM_WORLD, &rq[1]));
    MPI_Status st[2];
    CHECK_OK(MPI_Waitall(2, rq, st));
    MPI_Count n = -1, e = -1;
    CHECK_OK(MPI_Get_count_c(&st[0], MPI_DOUBLE, &n));
    CHECK_OK(MPI_Get_elements_c(&st[0], MPI_DOUBLE, &e));
    CHECK(n == 5 && e == 5, "count %lld elements %lld", (long long)n, (long long)e);
    for (int k = 0; k < 8; k++) {
        double want = k < 5 ? left + 0.5 * k : -1;
        CHECK(in[k] == want, "in[%d] = %g want %g", k, in[k], want);
    }

    /* Blocking sends, the receive posted first (a send to oneself may
     * wait for it). */
    int v = 10 + me, got = -1;
    MPI_Count one = 1;
    CHECK_OK(MPI_Irecv_c(&got, one, MPI_INT, left, 4, MPI_COMM_WORLD, &rq[0]));
    CHECK_OK(MPI_Send_c(&v, one, MPI_INT, right, 4, MPI_COMM_WORLD));
    CHECK_OK(MPI_Wait(&rq[0], &st[0]));
    CHECK(got == 10 + left, "send_c got %d", got);
    got = -1;
    CHECK_OK(MPI_Isend_c(&v, one, MPI_INT, right, 8, MPI_COMM_WORLD, &rq[1]));
    CHECK_OK(MPI_Recv_c(&got, one, MPI_INT, left, 8, MPI_COMM_WORLD, &st[0]));
    CHECK_OK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
    CHECK(got == 10 + left, "recv_c got %d", got);
    if (p > 1) {
        if (me % 2 == 0) {
            CHECK_OK(MPI_Ssend_c(&v, one, MPI_INT, right, 5, MPI_COMM_WORLD));
            CHECK_OK(MPI_Recv_c(&got, one, MPI_INT, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        } else {
            CHECK_OK(MPI_Recv_c(&got, one, MPI_INT, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_OK(MPI_Ssend_c(&v, one, MPI_INT, right, 5, MPI_COMM_WORLD));
        }
        CHECK(got == 10 + left, "ssend_c got %d", got);
    }

    /* A count past INT_MAX of a type of no bytes. */
    MPI_Datatype none;
    CHECK_OK(MPI_Type_contiguous(0, MPI_INT, &none));
    CHECK_OK(MPI_Type_commit(&none));
    MPI_Count big = ((MPI_Count)1 << 32) + 5, sz = -1, lb = -1, ext = -1;
    CHECK_OK(MPI_Type_size_c(none, &sz));
    CHECK_OK(MPI_Type_get_extent_c(MPI_DOUBLE, &lb, &ext));
    CHECK(sz == 0 && lb == 0 && ext == 8, "size %lld lb %lld extent %lld", (long long)sz,
          (long long)lb, (long long)ext);
    CHECK_OK(MPI_Isend_c(&v, big, none, right, 6, MPI_COMM_WORLD, &rq[1]));
    CHECK_OK(MPI_Recv_c(&got, big, none, left, 6, MPI_COMM_WORLD, &st[0]));
    CHECK_OK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
    CHECK_OK(MPI_Get_count_c(&st[0], none, &n));
    CHECK(n == 0, "a zero-size message: count %lld", (long long)n);
    MPI_Type_free(&none);

    int rc = MPI_Send_c(&v, (MPI_Count)-1, MPI_INT, right, 7, MPI_COMM_WORLD);
    CHECK(ct_class(rc) == MPI_ERR_COUNT, "a negative count: class %d", ct_class(rc));
#ifdef SHMPI_MPI_H
    /* A count whose bytes pass what one object can hold (MPICH 4.0 takes
     * it and fails elsewhere). */
    rc = MPI_Send_c(&v, ((MPI_Count)1 << 62) + 1, MPI_INT, right, 7, MPI_COMM_WORLD);
    CHECK(ct_class(rc) == MPI_ERR_COUNT, "a count of 2^62 + 1 ints: class %d", ct_class(rc));
    rc = MPI_Recv_c(&got, ((MPI_Count)1 << 61), MPI_INT, left, 7, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE);
    CHECK(ct_class(rc) == MPI_ERR_COUNT, "a receive of 2^61 ints: class %d", ct_class(rc));
#endif
    return ct_finish();
}
