/* ranks: 1 2 3 4 */
/* Point-to-point matrix: every pair of distinct ranks exchanges messages of
 * 0, 1, 7, 64, 1000, 70000 and 1 MiB bytes both ways with Send/Recv,
 * Isend/Irecv, Ssend/Recv and Sendrecv (and every rank exchanges with itself
 * through Isend/Irecv and Sendrecv). Every byte, the status source and tag,
 * MPI_Get_count, and a guard byte past the message are checked. Pairs are
 * handled in one global order, so it is correct with zero buffering. */
#include "common.h"

#define NSIZES 7
#define MAXSZ (1 << 20)
#define GUARD 0x5a

static const int sizes[NSIZES] = {0, 1, 7, 64, 1000, 70000, 1 << 20};
static const char *method_name[4] = {"send/recv", "isend/irecv", "ssend/recv",
                                     "sendrecv"};

static unsigned char *sbuf, *rbuf;

static unsigned char pat(int src, int dst, int size, int method, int i)
{
    return (unsigned char)((src * 131 + dst * 31 + size * 7 + method * 17 +
                            i * 13 + (i >> 8) * 5 + 1) & 0xff);
}

static void fill(int src, int dst, int size, int method)
{
    for (int i = 0; i < size; i++)
        sbuf[i] = pat(src, dst, size, method, i);
}

static void clear_recv(int size)
{
    memset(rbuf, 0, (size_t)size);
    rbuf[size] = GUARD; /* rbuf has MAXSZ + 1 bytes */
}

static void verify(int src, int dst, int size, int method, int tag,
                   MPI_Status *st)
{
    int bad = 0, first = -1;
    for (int i = 0; i < size; i++) {
        if (rbuf[i] != pat(src, dst, size, method, i)) {
            if (first < 0) first = i;
            bad++;
        }
    }
    CHECK(bad == 0, "%s %d->%d size %d: %d bad bytes, first at %d (got %d want %d)",
          method_name[method], src, dst, size, bad, first,
          first >= 0 ? rbuf[first] : 0,
          first >= 0 ? pat(src, dst, size, method, first) : 0);
    CHECK(rbuf[size] == GUARD, "%s %d->%d size %d: byte past the message overwritten",
          method_name[method], src, dst, size);
    CHECK(st->MPI_SOURCE == src, "%s %d->%d size %d: status source %d",
          method_name[method], src, dst, size, st->MPI_SOURCE);
    CHECK(st->MPI_TAG == tag, "%s %d->%d size %d: status tag %d want %d",
          method_name[method], src, dst, size, st->MPI_TAG, tag);
    int count = -1;
    CHECK_OK(MPI_Get_count(st, MPI_BYTE, &count));
    CHECK(count == size, "%s %d->%d size %d: MPI_Get_count %d",
          method_name[method], src, dst, size, count);
}

/* One exchange between me and peer (me may equal peer only for methods 1
 * and 3). "first" says which side sends first in the blocking methods. */
static void exchange(int me, int peer, int first, int size, int method,
                     int tag)
{
    MPI_Status st;
    fill(me, peer, size, method);
    clear_recv(size);
    switch (method) {
    case 0: /* Send / Recv */
        if (first) {
            CHECK_OK(MPI_Send(sbuf, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
            CHECK_OK(MPI_Recv(rbuf, MAXSZ, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
        } else {
            CHECK_OK(MPI_Recv(rbuf, MAXSZ, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
            CHECK_OK(MPI_Send(sbuf, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
        }
        break;
    case 1: { /* Isend / Irecv */
        MPI_Request req[2];
        MPI_Status sts[2];
        CHECK_OK(MPI_Irecv(rbuf, MAXSZ, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[0]));
        CHECK_OK(MPI_Isend(sbuf, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[1]));
        CHECK_OK(MPI_Waitall(2, req, sts));
        CHECK(req[0] == MPI_REQUEST_NULL && req[1] == MPI_REQUEST_NULL,
              "requests not freed by MPI_Waitall");
        st = sts[0];
        break;
    }
    case 2: /* Ssend / Recv */
        if (first) {
            CHECK_OK(MPI_Ssend(sbuf, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
            CHECK_OK(MPI_Recv(rbuf, MAXSZ, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
        } else {
            CHECK_OK(MPI_Recv(rbuf, MAXSZ, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
            CHECK_OK(MPI_Ssend(sbuf, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
        }
        break;
    default: /* Sendrecv */
        CHECK_OK(MPI_Sendrecv(sbuf, size, MPI_BYTE, peer, tag, rbuf, MAXSZ,
                              MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
        break;
    }
    verify(peer, me, size, method, tag, &st);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    sbuf = malloc(MAXSZ);
    rbuf = malloc(MAXSZ + 1);
    if (!sbuf || !rbuf) MPI_Abort(MPI_COMM_WORLD, 2);

    /* Self exchanges: only the nonblocking and sendrecv methods are
     * guaranteed not to deadlock when sending to oneself. */
    for (int s = 0; s < NSIZES; s++) {
        exchange(rank, rank, 1, sizes[s], 1, 1000 + s);
        exchange(rank, rank, 1, sizes[s], 3, 3000 + s);
    }

    /* All pairs a < b in lexicographic order: each rank takes part in the
     * pairs that contain it, in that order, so the smallest pending pair can
     * always proceed. */
    for (int a = 0; a < size; a++) {
        for (int b = a + 1; b < size; b++) {
            if (rank != a && rank != b) continue;
            int peer = rank == a ? b : a;
            for (int m = 0; m < 4; m++)
                for (int s = 0; s < NSIZES; s++)
                    exchange(rank, peer, rank == a, sizes[s], m, m * 1000 + s);
        }
    }

    free(sbuf);
    free(rbuf);
    return ct_finish();
}
