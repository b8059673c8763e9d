/* ranks: 2 */
/* A window of small MPI_Irecvs from one source with one tag, completed by
 * MPI_Waitall (OSU's bandwidth receiver):
 *  - each receive gets the message sent in its position (lengths 1..N
 *    ints tell them apart), with its status;
 *  - a message of another tag sent in the middle of the window is left
 *    for its own receive;
 *  - with the receives posted before the messages are sent and after
 *    they wait in the ring.
 * Every wait is bounded by the test harness. */
#include "common.h"

#define N 30
#define CAP 32

static int val(int round, int k, int i) { return round * 100003 + k * 101 + i; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    static int s[N][CAP], r[N][CAP + 1];
    MPI_Request req[N];
    MPI_Status st[N];
    for (int round = 0; round < 4; round++) {
        int recv_first = round % 2 == 0;
        if (rank == 0) {
            if (recv_first) MPI_Barrier(MPI_COMM_WORLD);
            for (int k = 0; k < N; k++) {
                if (k == 10) {
                    int other = val(round, 99, 0);
                    CHECK_OK(MPI_Send(&other, 1, MPI_INT, 1, 99, MPI_COMM_WORLD));
                }
                for (int i = 0; i <= k; i++) s[k][i] = val(round, k, i);
                CHECK_OK(MPI_Send(s[k], k + 1, MPI_INT, 1, 5, MPI_COMM_WORLD));
            }
            if (!recv_first) MPI_Barrier(MPI_COMM_WORLD);
        } else {
            if (!recv_first) MPI_Barrier(MPI_COMM_WORLD);
            for (int k = 0; k < N; k++) {
                for (int i = 0; i <= CAP; i++) r[k][i] = -1;
                CHECK_OK(MPI_Irecv(r[k], CAP, MPI_INT, 0, 5, MPI_COMM_WORLD, &req[k]));
            }
            if (recv_first) MPI_Barrier(MPI_COMM_WORLD);
            CHECK_OK(MPI_Waitall(N, req, st));
            int bad = 0;
            for (int k = 0; k < N; k++) {
                int n = -1;
                MPI_Get_count(&st[k], MPI_INT, &n);
                CHECK(n == k + 1 && st[k].MPI_SOURCE == 0 && st[k].MPI_TAG == 5,
                      "round %d: status %d is %d/%d/%d", round, k, st[k].MPI_SOURCE,
                      st[k].MPI_TAG, n);
                CHECK(req[k] == MPI_REQUEST_NULL, "round %d: request %d not freed", round, k);
                for (int i = 0; i <= k; i++) bad += r[k][i] != val(round, k, i);
                bad += r[k][k + 1] != -1;
            }
            CHECK(bad == 0, "round %d: %d wrong values", round, bad);
            int other = -1;
            MPI_Status os;
            CHECK_OK(MPI_Recv(&other, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, &os));
            CHECK(other == val(round, 99, 0) && os.MPI_TAG == 99,
                  "round %d: the other tag's message: %d", round, other);
        }
    }
    return ct_finish();
}
