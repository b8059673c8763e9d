/* ranks: 1 2 4 */
/* The init/finalize family: MPI_Initialized and MPI_Finalized before
 * MPI_Init_thread, during the run and after MPI_Finalize; MPI_Init_thread
 * with a requested level gives a valid `provided` that MPI_Query_thread
 * repeats; MPI_Is_thread_main is true on the thread that initialized. */
#include "common.h"

static int valid_level(int level)
{
    return level == MPI_THREAD_SINGLE || level == MPI_THREAD_FUNNELED ||
           level == MPI_THREAD_SERIALIZED || level == MPI_THREAD_MULTIPLE;
}

int main(int argc, char **argv)
{
    int flag = -1, provided = -1, queried = -1, rank = -1, size = 0;
    int pre_init = -1, pre_fin = -1;

    /* The thread-level constants are ordered. */
    int ordered = MPI_THREAD_SINGLE < MPI_THREAD_FUNNELED &&
                  MPI_THREAD_FUNNELED < MPI_THREAD_SERIALIZED &&
                  MPI_THREAD_SERIALIZED < MPI_THREAD_MULTIPLE;

    /* Both may be called before MPI is initialized. */
    int rc_pre_init = MPI_Initialized(&pre_init);
    int rc_pre_fin = MPI_Finalized(&pre_fin);

    int rc_init = MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    CHECK(rc_init == MPI_SUCCESS, "MPI_Init_thread returned %d", rc_init);
    CHECK(ordered, "thread level constants are not ordered");
    CHECK(rc_pre_init == MPI_SUCCESS, "MPI_Initialized before init returned %d", rc_pre_init);
    CHECK(rc_pre_fin == MPI_SUCCESS, "MPI_Finalized before init returned %d", rc_pre_fin);
    CHECK(pre_init == 0, "MPI_Initialized before init gave %d", pre_init);
    CHECK(pre_fin == 0, "MPI_Finalized before init gave %d", pre_fin);

    CHECK(valid_level(provided), "provided = %d is not a thread level", provided);

    CHECK_OK(MPI_Query_thread(&queried));
    CHECK(queried == provided, "MPI_Query_thread gave %d, Init_thread provided %d",
          queried, provided);

    flag = -1;
    CHECK_OK(MPI_Is_thread_main(&flag));
    CHECK(flag != 0, "MPI_Is_thread_main false on the initializing thread");

    flag = -1;
    CHECK_OK(MPI_Initialized(&flag));
    CHECK(flag != 0, "MPI_Initialized false after MPI_Init_thread");
    flag = -1;
    CHECK_OK(MPI_Finalized(&flag));
    CHECK(flag == 0, "MPI_Finalized true before MPI_Finalize");

    /* Every process gets a valid level; the same request everywhere. */
    CHECK_OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    {
        int minmax[2] = {provided, -provided}, red[2] = {0, 0};
        CHECK_OK(MPI_Allreduce(minmax, red, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
        CHECK(valid_level(red[0]) && valid_level(-red[1]),
              "some rank got an invalid level (min %d max %d)", red[0], -red[1]);
    }

    /* A funneled-style program: only the main thread calls MPI, which is
     * always allowed whatever level was provided. */
    {
        int v = rank + 1, sum = 0;
        CHECK_OK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        CHECK(sum == size * (size + 1) / 2, "allreduce sum %d, expected %d",
              sum, size * (size + 1) / 2);
    }

    /* After MPI_Finalize: MPI_Finalized is true and MPI_Initialized stays
     * true. ct_finish has already reported, so a failure here is reported
     * on stderr and through the exit status. */
    int result = ct_finish();
    int init_after = -1, fin_after = -1;
    int rc1 = MPI_Initialized(&init_after);
    int rc2 = MPI_Finalized(&fin_after);
    if (rc1 != MPI_SUCCESS || rc2 != MPI_SUCCESS || init_after == 0 || fin_after == 0) {
        fprintf(stderr,
                "after MPI_Finalize: MPI_Initialized rc %d flag %d, MPI_Finalized rc %d flag %d\n",
                rc1, init_after, rc2, fin_after);
        result = 1;
    }
    return result;
}
