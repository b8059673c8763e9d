/* ranks: 1 2 4 */
/* MPI_Alloc_mem / MPI_Free_mem: allocations with MPI_INFO_NULL and with an
 * info carrying an arbitrary hint succeed and return non-NULL, distinct,
 * non-overlapping memory that can be written and read back (including a
 * 4 MiB block touched throughout); the memory works as a send/receive
 * buffer (ring Sendrecv, Isend/Irecv) and as a collective buffer; blocks
 * are freed in an order different from allocation. */
#include "common.h"

#define N 1000
#define BIG (4 * 1024 * 1024)

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    double *sbuf = NULL, *rbuf = NULL;
    int *ibuf = NULL;
    unsigned char *big = NULL;
    CHECK_OK(MPI_Alloc_mem((MPI_Aint)(N * sizeof(double)), MPI_INFO_NULL, &sbuf));
    CHECK_OK(MPI_Alloc_mem((MPI_Aint)(N * sizeof(double)), MPI_INFO_NULL, &rbuf));
    {
        MPI_Info hint;
        CHECK_OK(MPI_Info_create(&hint));
        CHECK_OK(MPI_Info_set(hint, "shmpi_test_unknown_hint", "42"));
        CHECK_OK(MPI_Alloc_mem((MPI_Aint)(N * sizeof(int)), hint, &ibuf));
        CHECK_OK(MPI_Info_free(&hint));
    }
    CHECK_OK(MPI_Alloc_mem((MPI_Aint)BIG, MPI_INFO_NULL, &big));
    CHECK(sbuf && rbuf && ibuf && big, "MPI_Alloc_mem returned NULL");
    if (!(sbuf && rbuf && ibuf && big)) {
        fprintf(stderr, "cannot continue without memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* Fill everything, then read everything back: the blocks must not
     * overlap. */
    for (int i = 0; i < N; i++) {
        sbuf[i] = rank * 10000.0 + i + 0.25;
        rbuf[i] = -1.0;
        ibuf[i] = 3 * i + rank;
    }
    for (int i = 0; i < BIG; i++)
        big[i] = (unsigned char)(i * 7 + rank);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        if (sbuf[i] != rank * 10000.0 + i + 0.25 || rbuf[i] != -1.0 || ibuf[i] != 3 * i + rank)
            bad++;
    }
    for (int i = 0; i < BIG; i++)
        if (big[i] != (unsigned char)(i * 7 + rank))
            bad++;
    CHECK(bad == 0, "%d values did not read back", bad);

    /* Ring exchange between allocated buffers. */
    MPI_Status st;
    CHECK_OK(MPI_Sendrecv(sbuf, N, MPI_DOUBLE, next, 1, rbuf, N, MPI_DOUBLE, prev, 1,
                          MPI_COMM_WORLD, &st));
    bad = 0;
    for (int i = 0; i < N; i++)
        if (rbuf[i] != prev * 10000.0 + i + 0.25)
            bad++;
    CHECK(bad == 0, "ring Sendrecv: %d wrong values", bad);
    int count = -1;
    CHECK_OK(MPI_Get_count(&st, MPI_DOUBLE, &count));
    CHECK(count == N, "ring Sendrecv count %d", count);

    /* Nonblocking, with part of the big block as the receive buffer. */
    {
        MPI_Request reqs[2];
        MPI_Status sts[2];
        int *recv_into = (int *)(void *)big;
        for (int i = 0; i < N; i++)
            recv_into[i] = -5;
        CHECK_OK(MPI_Irecv(recv_into, N, MPI_INT, next, 2, MPI_COMM_WORLD, &reqs[0]));
        CHECK_OK(MPI_Isend(ibuf, N, MPI_INT, prev, 2, MPI_COMM_WORLD, &reqs[1]));
        CHECK_OK(MPI_Waitall(2, reqs, sts));
        CHECK(sts[0].MPI_SOURCE == next && sts[0].MPI_TAG == 2, "Irecv status source %d tag %d",
              sts[0].MPI_SOURCE, sts[0].MPI_TAG);
        bad = 0;
        for (int i = 0; i < N; i++)
            if (recv_into[i] != 3 * i + next)
                bad++;
        CHECK(bad == 0, "Isend/Irecv: %d wrong values", bad);
        /* The rest of the big block is untouched. */
        bad = 0;
        for (int i = (int)(N * sizeof(int)); i < BIG; i++)
            if (big[i] != (unsigned char)(i * 7 + rank))
                bad++;
        CHECK(bad == 0, "receive wrote past its buffer: %d bytes changed", bad);
    }

    /* Collective into allocated memory. */
    CHECK_OK(MPI_Allreduce(ibuf, (int *)(void *)big, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    {
        int *sum = (int *)(void *)big;
        bad = 0;
        for (int i = 0; i < N; i++)
            if (sum[i] != 3 * i * size + size * (size - 1) / 2)
                bad++;
        CHECK(bad == 0, "Allreduce into allocated memory: %d wrong values", bad);
    }

    /* Free out of allocation order; then allocate and free again. */
    CHECK_OK(MPI_Free_mem(rbuf));
    CHECK_OK(MPI_Free_mem(big));
    CHECK_OK(MPI_Free_mem(sbuf));
    CHECK_OK(MPI_Free_mem(ibuf));
    for (int round = 0; round < 3; round++) {
        char *p = NULL;
        CHECK_OK(MPI_Alloc_mem((MPI_Aint)(64 << round), MPI_INFO_NULL, &p));
        CHECK(p != NULL, "round %d: MPI_Alloc_mem returned NULL", round);
        if (p) {
            memset(p, round + 1, (size_t)(64 << round));
            CHECK(p[0] == round + 1 && p[(64 << round) - 1] == round + 1,
                  "round %d: memory did not read back", round);
            CHECK_OK(MPI_Free_mem(p));
        }
    }

    return ct_finish();
}
