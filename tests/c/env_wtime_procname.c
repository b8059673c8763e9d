/* ranks: 1 2 4 */
/* MPI_Wtime never goes backwards (within a process, across many calls and
 * across a barrier) and does advance; MPI_Wtick is positive. Also
 * MPI_Get_processor_name: resultlen < MPI_MAX_PROCESSOR_NAME, the name is
 * NUL-terminated at resultlen, and a second call gives the same name. */
#include "common.h"

#define NCALLS 20000

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);

    double tick = MPI_Wtick();
    CHECK(tick > 0.0, "MPI_Wtick() = %g, not positive", tick);

    /* Monotonic over many back-to-back calls. */
    double prev = MPI_Wtime(), first = prev;
    int backwards = 0;
    for (int i = 0; i < NCALLS; i++) {
        double t = MPI_Wtime();
        if (t < prev)
            backwards++;
        prev = t;
    }
    CHECK(backwards == 0, "MPI_Wtime went backwards %d times", backwards);
    CHECK(prev >= first, "MPI_Wtime %.9f after %.9f", prev, first);

    /* The clock advances: wait (bounded) for a later value. */
    double t0 = MPI_Wtime(), t1 = t0;
    for (long i = 0; i < 50000000L && t1 <= t0; i++)
        t1 = MPI_Wtime();
    CHECK(t1 > t0, "MPI_Wtime did not advance from %.9f", t0);

    /* Still monotonic across communication. */
    double before = MPI_Wtime();
    CHECK_OK(MPI_Barrier(MPI_COMM_WORLD));
    double after = MPI_Wtime();
    CHECK(after >= before, "MPI_Wtime %.9f after barrier < %.9f before", after, before);

    double tick2 = MPI_Wtick();
    CHECK(tick2 > 0.0, "second MPI_Wtick() = %g", tick2);

    /* Processor name. */
    char name[MPI_MAX_PROCESSOR_NAME], name2[MPI_MAX_PROCESSOR_NAME];
    int len = -1, len2 = -1;
    memset(name, 'X', sizeof name);
    memset(name2, 'Y', sizeof name2);
    CHECK_OK(MPI_Get_processor_name(name, &len));
    CHECK(len >= 0 && len < MPI_MAX_PROCESSOR_NAME, "resultlen %d out of [0, %d)", len,
          MPI_MAX_PROCESSOR_NAME);
    if (len >= 0 && len < MPI_MAX_PROCESSOR_NAME) {
        CHECK(name[len] == '\0', "name not NUL-terminated at resultlen %d", len);
        /* name[len] is inside the buffer, so strlen stays inside it too. */
        if (name[len] == '\0')
            CHECK((int)strlen(name) == len, "strlen(name) %d != resultlen %d",
                  (int)strlen(name), len);
    }
    CHECK_OK(MPI_Get_processor_name(name2, &len2));
    CHECK(len2 == len, "second call resultlen %d, first %d", len2, len);
    if (len >= 0 && len < MPI_MAX_PROCESSOR_NAME && len2 == len)
        CHECK(memcmp(name, name2, (size_t)len + 1) == 0, "processor name changed: %s vs %s",
              name, name2);

    return ct_finish();
}
