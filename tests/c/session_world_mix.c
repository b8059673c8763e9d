/* ranks: 1 3 */
/* A session beside the world model (MPI 4.1 §11.3): a session made
 * before MPI_Init, MPI_COMM_WORLD used beside a communicator from the
 * session's mpi://WORLD group (their traffic kept apart), MPI_Finalize
 * while the session lives (MPI_Finalized says so, the session's
 * communicator still works), and the session's finalize ending MPI. */
#include "common.h"

/* common.h's checks work without MPI_Init (its rank is then -1); the
 * error count is summed over a session's communicator here, as there is
 * no MPI_COMM_WORLD to finish on. */

int main(int argc, char **argv)
{
    MPI_Session s;
    CHECK_OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    CHECK_OK(MPI_Init(&argc, &argv));
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Group g;
    CHECK_OK(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    MPI_Comm c;
    CHECK_OK(MPI_Comm_create_from_group(g, "mix", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    int result = -1;
    MPI_Comm_compare(c, MPI_COMM_WORLD, &result);
    CHECK(result == MPI_CONGRUENT, "compare gave %d", result);

    /* The same tag on both communicators: each receive gets its own. */
    int right = (me + 1) % n, left = (me + n - 1) % n;
    int a = 100 + me, b = 200 + me, ra = -1, rb = -1;
    MPI_Request rq[4];
    CHECK_OK(MPI_Irecv(&ra, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &rq[0]));
    CHECK_OK(MPI_Irecv(&rb, 1, MPI_INT, left, 5, c, &rq[1]));
    CHECK_OK(MPI_Isend(&b, 1, MPI_INT, right, 5, c, &rq[2]));
    CHECK_OK(MPI_Isend(&a, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &rq[3]));
    MPI_Status st[4];
    CHECK_OK(MPI_Waitall(4, rq, st));
    CHECK(ra == 100 + left && rb == 200 + left, "world got %d, session comm got %d", ra, rb);

    CHECK_OK(MPI_Finalize());
    int fin = 0;
    MPI_Finalized(&fin);
    CHECK(fin, "MPI_Finalized is false after MPI_Finalize");

    /* The session goes on. */
    int sum = 0, one = 1;
    CHECK_OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == n, "allreduce after MPI_Finalize: %d", sum);
    int total = 0;
    CHECK_OK(MPI_Allreduce(&ct_errs, &total, 1, MPI_INT, MPI_SUM, c));
    MPI_Comm_free(&c);
    MPI_Group_free(&g);
    CHECK_OK(MPI_Session_finalize(&s));
    return ct_report(total, me);
}
