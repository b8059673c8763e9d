/* ranks: 2 4 */
/* Nonblocking sends larger than the ring, pushed from the caller's buffer
 * after MPI_Isend returns (rank pairs r, r^1): a window of 4 MPI_Isend of
 * 3 MiB + 5 bytes each way, completed by MPI_Waitall, every byte checked;
 * then an 8 MiB MPI_Isend freed at once with MPI_Request_free: the message
 * still arrives whole, and the sender frees its buffer only after the
 * receiver says so (MPI 4.1 §3.7.3). */
#include "common.h"

#include <stdlib.h>

#define WIN 4
#define BIG ((3 << 20) + 5)
#define HUGE (8 << 20)

static unsigned char pattern(int src, int k, size_t i) { return (unsigned char)(src * 31 + k * 7 + i * 13 + (i >> 11)); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = rank ^ 1;

    unsigned char *s[WIN], *r[WIN];
    MPI_Request req[2 * WIN];
    for (int k = 0; k < WIN; k++) {
        s[k] = malloc(BIG);
        r[k] = malloc(BIG);
        CHECK(s[k] && r[k], "malloc");
        for (size_t i = 0; i < BIG; i++) {
            s[k][i] = pattern(rank, k, i);
            r[k][i] = 0;
        }
    }
    for (int k = 0; k < WIN; k++)
        CHECK_OK(MPI_Irecv(r[k], BIG, MPI_BYTE, peer, k, MPI_COMM_WORLD, &req[k]));
    for (int k = 0; k < WIN; k++)
        CHECK_OK(MPI_Isend(s[k], BIG, MPI_BYTE, peer, k, MPI_COMM_WORLD, &req[WIN + k]));
    CHECK_OK(MPI_Waitall(2 * WIN, req, MPI_STATUSES_IGNORE));
    for (int k = 0; k < WIN; k++) {
        size_t bad = 0;
        for (size_t i = 0; i < BIG; i++)
            if (r[k][i] != pattern(peer, k, i)) bad++;
        CHECK(bad == 0, "window message %d: %zu bytes wrong", k, bad);
        free(s[k]);
        free(r[k]);
    }

    /* Freed while most of it is still unsent. */
    unsigned char *h = malloc(HUGE), *g = malloc(HUGE);
    CHECK(h && g, "malloc");
    for (size_t i = 0; i < HUGE; i++) {
        h[i] = pattern(rank, 9, i);
        g[i] = 0;
    }
    MPI_Request rr, sr;
    CHECK_OK(MPI_Irecv(g, HUGE, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &rr));
    CHECK_OK(MPI_Isend(h, HUGE, MPI_BYTE, peer, 9, MPI_COMM_WORLD, &sr));
    CHECK_OK(MPI_Request_free(&sr));
    CHECK(sr == MPI_REQUEST_NULL, "Request_free did not null the request");
    CHECK_OK(MPI_Wait(&rr, MPI_STATUS_IGNORE));
    size_t bad = 0;
    for (size_t i = 0; i < HUGE; i++)
        if (g[i] != pattern(peer, 9, i)) bad++;
    CHECK(bad == 0, "freed Isend: %zu bytes wrong", bad);
    /* The peer has it all: now the send buffer may go. */
    int ack = 1, got = 0;
    CHECK_OK(MPI_Sendrecv(&ack, 1, MPI_INT, peer, 10, &got, 1, MPI_INT, peer, 10,
                          MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(got == 1, "ack %d", got);
    free(h);
    free(g);
    return ct_finish();
}
