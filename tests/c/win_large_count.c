/* ranks: 1 2 3 */
/* The large-count one-sided functions (MPI 4.1 §19.2): MPI_Win_allocate_c,
 * MPI_Win_allocate_shared_c and MPI_Win_create_c (MPI_Aint units) with
 * MPI_Win_shared_query_c; MPI_Put_c, MPI_Get_c, MPI_Accumulate_c,
 * MPI_Get_accumulate_c under fence, and the request-based MPI_Rput_c,
 * Rget_c, Raccumulate_c, Rget_accumulate_c under lock_all; a negative
 * count is an error, and so is a unit of 0 at one member (on shmpi every
 * member fails; MPICH 4.0 leaves the others waiting, so it is skipped
 * there). */
#include "common.h"

#define N 4

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int right = (me + 1) % p;

    for (int flavor = 0; flavor < 3; flavor++) {
        MPI_Win w;
        int *base = NULL;
        int mem[N];
        int rc;
        if (flavor == 0)
            rc = MPI_Win_allocate_c((MPI_Aint)(N * sizeof(int)), (MPI_Aint)sizeof(int),
                                    MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w);
        else if (flavor == 1)
            rc = MPI_Win_allocate_shared_c((MPI_Aint)(N * sizeof(int)), (MPI_Aint)sizeof(int),
                                           MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w);
        else {
            base = mem;
            rc = MPI_Win_create_c(mem, (MPI_Aint)sizeof mem, (MPI_Aint)sizeof(int), MPI_INFO_NULL,
                                  MPI_COMM_WORLD, &w);
        }
        CHECK_OK(rc);
        if (rc != MPI_SUCCESS) continue;
        MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
        if (flavor == 1) {
            MPI_Aint size = -1, unit = -1;
            int *q = NULL;
            CHECK_OK(MPI_Win_shared_query_c(w, right, &size, &unit, &q));
            CHECK(size == N * (MPI_Aint)sizeof(int) && unit == sizeof(int) && q != NULL,
                  "shared_query_c: size %ld unit %ld", (long)size, (long)unit);
        }
        for (int k = 0; k < N; k++) base[k] = -1;
        MPI_Win_fence(0, w);
        int out[2] = {10 * me + 1, 10 * me + 2};
        CHECK_OK(MPI_Put_c(out, (MPI_Count)2, MPI_INT, right, 0, (MPI_Count)2, MPI_INT, w));
        MPI_Win_fence(0, w);
        int left = (me + p - 1) % p;
        CHECK(base[0] == 10 * left + 1 && base[1] == 10 * left + 2 && base[2] == -1,
              "flavor %d Put_c: %d %d %d", flavor, base[0], base[1], base[2]);
        int got[2] = {0, 0};
        CHECK_OK(MPI_Get_c(got, (MPI_Count)2, MPI_INT, right, 0, (MPI_Count)2, MPI_INT, w));
        int one = 5;
        CHECK_OK(MPI_Accumulate_c(&one, (MPI_Count)1, MPI_INT, right, 3, (MPI_Count)1, MPI_INT,
                                  MPI_REPLACE, w));
        MPI_Win_fence(0, w);
        CHECK(got[0] == 10 * me + 1 && got[1] == 10 * me + 2, "flavor %d Get_c: %d %d", flavor,
              got[0], got[1]);
        CHECK(base[3] == 5, "flavor %d Accumulate_c: %d", flavor, base[3]);
        /* Read before any member's next access reaches this memory. */
        MPI_Barrier(MPI_COMM_WORLD);
        int add = 2, old = -9;
        CHECK_OK(MPI_Get_accumulate_c(&add, (MPI_Count)1, MPI_INT, &old, (MPI_Count)1, MPI_INT,
                                      right, 3, (MPI_Count)1, MPI_INT, MPI_SUM, w));
        MPI_Win_fence(0, w);
        CHECK(old == 5 && base[3] == 7, "flavor %d Get_accumulate_c: old %d now %d", flavor, old,
              base[3]);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_fence(0, w);

        /* Request-based, under lock_all. */
        MPI_Request rq[4];
        int r_out = 100 + me, r_got = -1, r_add = 1, r_old = -1;
        MPI_Win_lock_all(0, w);
        CHECK_OK(MPI_Rput_c(&r_out, (MPI_Count)1, MPI_INT, right, 2, (MPI_Count)1, MPI_INT, w,
                            &rq[0]));
        CHECK_OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
        MPI_Win_flush_all(w);
        MPI_Win_unlock_all(w);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock_all(0, w);
        CHECK_OK(MPI_Rget_c(&r_got, (MPI_Count)1, MPI_INT, right, 2, (MPI_Count)1, MPI_INT, w,
                            &rq[1]));
        CHECK_OK(MPI_Raccumulate_c(&r_add, (MPI_Count)1, MPI_INT, right, 0, (MPI_Count)1,
                                   MPI_INT, MPI_SUM, w, &rq[2]));
        CHECK_OK(MPI_Rget_accumulate_c(&r_add, (MPI_Count)1, MPI_INT, &r_old, (MPI_Count)1,
                                       MPI_INT, right, 1, (MPI_Count)1, MPI_INT, MPI_SUM, w,
                                       &rq[3]));
        MPI_Status sts[3];
        CHECK_OK(MPI_Waitall(3, rq + 1, sts));
        MPI_Win_unlock_all(w);
        CHECK(r_got == 100 + me, "flavor %d Rget_c: %d", flavor, r_got);
        CHECK(r_old == 10 * me + 2, "flavor %d Rget_accumulate_c: old %d", flavor, r_old);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(base[0] == 10 * left + 2, "flavor %d Raccumulate_c: %d", flavor, base[0]);

        /* A negative count. */
        MPI_Win_fence(0, w);
        rc = MPI_Put_c(out, (MPI_Count)-1, MPI_INT, right, 0, (MPI_Count)1, MPI_INT, w);
        CHECK(rc != MPI_SUCCESS, "flavor %d Put_c with count -1 succeeded", flavor);
        if (OURS) {
            /* An origin count whose bytes wrap to the target's: refused. */
            rc = MPI_Put_c(out, ((MPI_Count)1 << 62) + 1, MPI_INT, right, 0, (MPI_Count)1,
                           MPI_INT, w);
            CHECK(rc != MPI_SUCCESS, "flavor %d Put_c of 2^62 + 1 ints succeeded", flavor);
        }
        MPI_Win_fence(0, w);
        MPI_Win_free(&w);
    }

    /* A unit of 0 at one member: every member fails. */
    if (OURS) {
        MPI_Win w;
        int *base;
        int rc = MPI_Win_allocate_c((MPI_Aint)16, me == p - 1 ? 0 : 4, MPI_INFO_NULL,
                                    MPI_COMM_WORLD, &base, &w);
        CHECK(rc != MPI_SUCCESS, "Win_allocate_c with a unit of 0 somewhere succeeded");
    }
    return ct_finish();
}
