/* ranks: 2 4 */
/* A receive freed while active (MPI_Request_free) completes in the
 * background (MPI 4.1 §3.7.3) while the program calls MPI, whatever it
 * calls: its data lands without any completion call (MPI_Test, MPI_Wait
 * and friends on other requests) being made. Three receives, each freed
 * at once, then matched by the peer: 4 ints on MPI_COMM_WORLD, a strided
 * vector of 64 ints (unpacked into the buffer), and 1 MiB + 3 bytes on
 * a duplicate of MPI_COMM_WORLD (a rendezvous where single copy works).
 * The receiver then only probes (MPI_Iprobe on another tag, MPI_Barrier
 * on MPI_COMM_SELF) until each buffer holds its data, for at most 20
 * seconds. Rank pairs r, r^1; the even rank receives. */
#include "common.h"

#define BIG ((1 << 20) + 3)

static int val(int k) { return 1000 * k + 7; }

/* Probes until `*last` holds `want`, at most 20 s. */
static int lands(volatile int *last, int want)
{
    double t0 = MPI_Wtime();
    int flag;
    while (*last != want && MPI_Wtime() - t0 < 20.0) {
        MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_SELF);
    }
    return *last == want;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = rank ^ 1;
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Datatype vec;
    MPI_Type_vector(64, 1, 3, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int small[4], strided[192];
    unsigned char *big = malloc(BIG);
    CHECK(big != NULL, "no memory");
    if (rank % 2 == 0) {
        for (int i = 0; i < 4; i++) small[i] = -1;
        for (int i = 0; i < 192; i++) strided[i] = -1;
        memset(big, 0, BIG);
        MPI_Request r[3];
        CHECK_OK(MPI_Irecv(small, 4, MPI_INT, peer, 1, MPI_COMM_WORLD, &r[0]));
        CHECK_OK(MPI_Irecv(strided, 1, vec, peer, 2, MPI_COMM_WORLD, &r[1]));
        CHECK_OK(MPI_Irecv(big, BIG, MPI_BYTE, peer, 3, dup, &r[2]));
        for (int i = 0; i < 3; i++) {
            CHECK_OK(MPI_Request_free(&r[i]));
            CHECK(r[i] == MPI_REQUEST_NULL, "Request_free did not null handle %d", i);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(lands((volatile int *)&small[3], val(3)), "the freed 4-int receive: %d %d %d %d",
              small[0], small[1], small[2], small[3]);
        for (int i = 0; i < 4; i++) CHECK(small[i] == val(i), "small[%d] = %d", i, small[i]);
        CHECK(lands((volatile int *)&strided[189], val(63)), "the freed vector receive: last %d",
              strided[189]);
        for (int i = 0; i < 192; i++) {
            int want = i % 3 == 0 ? val(i / 3) : -1;
            CHECK(strided[i] == want, "strided[%d] = %d, not %d", i, strided[i], want);
        }
        /* The last byte is written last by no rule: probe until every
         * byte is there. */
        double t0 = MPI_Wtime();
        int whole = 0, flag;
        while (!whole && MPI_Wtime() - t0 < 20.0) {
            whole = 1;
            for (int i = 0; i < BIG && whole; i++)
                whole = ((volatile unsigned char *)big)[i] == (unsigned char)(i * 7 + 1);
            if (!whole) {
                MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                MPI_Barrier(MPI_COMM_SELF);
            }
        }
        CHECK(whole, "the freed 1 MiB receive did not land");
    } else {
        for (int i = 0; i < 4; i++) small[i] = val(i);
        int packed[64];
        for (int i = 0; i < 64; i++) packed[i] = val(i);
        for (int i = 0; i < BIG; i++) big[i] = (unsigned char)(i * 7 + 1);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_OK(MPI_Send(small, 4, MPI_INT, peer, 1, MPI_COMM_WORLD));
        CHECK_OK(MPI_Send(packed, 64, MPI_INT, peer, 2, MPI_COMM_WORLD));
        CHECK_OK(MPI_Send(big, BIG, MPI_BYTE, peer, 3, dup));
    }
    free(big);
    MPI_Type_free(&vec);
    MPI_Comm_free(&dup);
    return ct_finish();
}
