/* ranks: 2 3 shmpi-only */
/* Members that pass different counts to a nonblocking collective (an
 * erroneous program) get a clear MPI_ERR_COUNT from the completing call
 * where a message is shorter than they expect, instead of zeros in
 * their buffer: rank 0 sends one int in an MPI_Iallgather where the
 * others send and expect two from everyone; then the world still works.
 * (MPI does not require the detection: shmpi only.) */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int mine[2] = {me, me}, all[16];
    MPI_Request rq;
    CHECK_OK(MPI_Iallgather(mine, me == 0 ? 1 : 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD, &rq));
    int rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
    if (me == 0)
        CHECK(rc == MPI_SUCCESS, "rank 0 got every part whole: %d", ct_class(rc));
    else
        CHECK(ct_class(rc) == MPI_ERR_COUNT, "a short part from rank 0: class %d", ct_class(rc));
    int sum = 0;
    CHECK_OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == n * (n - 1) / 2, "allreduce after: %d", sum);
    return ct_finish();
}
