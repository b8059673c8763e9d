/* ranks: 2 4 */
/* MPI_Waitall over a mix of kinds (rank pairs r, r^1): live nonblocking
 * receives and sends around an active persistent send and a null entry,
 * in several orders, so that both MPI_Waitall's common case (live
 * requests only) and its way back to the general path (a persistent
 * request after live ones have been taken out) run. Every message's
 * contents and status are checked; the live requests come back as
 * MPI_REQUEST_NULL, the persistent one stays allocated and inactive and
 * is started again in the next round. */
#include "common.h"

#define N 64

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = rank ^ 1;

    int sa[N], sb[N], sp[N], ra[N], rb[N], rp[N];
    MPI_Request preq;
    CHECK_OK(MPI_Send_init(sp, N, MPI_INT, peer, 3, MPI_COMM_WORLD, &preq));

    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < N; i++) {
            sa[i] = rank * 1000 + round * 100 + i;
            sb[i] = -sa[i];
            sp[i] = sa[i] + 7;
            ra[i] = rb[i] = rp[i] = 0;
        }
        MPI_Request rq[3], req[6];
        MPI_Status st[6];
        CHECK_OK(MPI_Irecv(ra, N, MPI_INT, peer, 1, MPI_COMM_WORLD, &rq[0]));
        CHECK_OK(MPI_Irecv(rb, N, MPI_INT, peer, 2, MPI_COMM_WORLD, &rq[1]));
        CHECK_OK(MPI_Irecv(rp, N, MPI_INT, peer, 3, MPI_COMM_WORLD, &rq[2]));
        MPI_Request sq[2];
        CHECK_OK(MPI_Isend(sa, N, MPI_INT, peer, 1, MPI_COMM_WORLD, &sq[0]));
        CHECK_OK(MPI_Isend(sb, N, MPI_INT, peer, 2, MPI_COMM_WORLD, &sq[1]));
        CHECK_OK(MPI_Start(&preq));
        /* The persistent request moves through the array: last, in the
         * middle, first. */
        int at = round % 3 == 0 ? 5 : round % 3 == 1 ? 2 : 0;
        int k = 0;
        MPI_Request live[5] = {rq[0], rq[1], rq[2], sq[0], sq[1]};
        for (int j = 0; j < 6; j++)
            req[j] = j == at ? preq : live[k++];
        /* A null entry as well, in odd rounds (the slot of sq[1]). */
        int null_at = -1;
        MPI_Request held = MPI_REQUEST_NULL;
        if (round % 2) {
            null_at = at == 5 ? 4 : 5;
            held = req[null_at];
            req[null_at] = MPI_REQUEST_NULL;
        }
        CHECK_OK(MPI_Waitall(6, req, st));
        if (held != MPI_REQUEST_NULL)
            CHECK_OK(MPI_Wait(&held, MPI_STATUS_IGNORE));
        for (int j = 0; j < 6; j++) {
            if (j == at)
                CHECK(req[j] == preq, "round %d: the persistent request changed", round);
            else
                CHECK(req[j] == MPI_REQUEST_NULL, "round %d: request %d not freed", round, j);
        }
        int bad = 0;
        for (int i = 0; i < N; i++) {
            int want = peer * 1000 + round * 100 + i;
            if (ra[i] != want || rb[i] != -want || rp[i] != want + 7) bad++;
        }
        CHECK(bad == 0, "round %d: %d wrong values", round, bad);
        /* The three receives' statuses, wherever they sat. */
        k = 0;
        for (int j = 0; j < 6; j++) {
            if (j == at || j == null_at) continue;
            if (k < 3) {
                int c = -1;
                CHECK_OK(MPI_Get_count(&st[j], MPI_INT, &c));
                CHECK(st[j].MPI_SOURCE == peer && st[j].MPI_TAG == k + 1 && c == N,
                      "round %d: status %d is %d/%d/%d", round, j, st[j].MPI_SOURCE,
                      st[j].MPI_TAG, c);
            }
            k++;
        }
    }
    CHECK_OK(MPI_Request_free(&preq));
    CHECK(preq == MPI_REQUEST_NULL, "Request_free did not null the persistent request");
    return ct_finish();
}
