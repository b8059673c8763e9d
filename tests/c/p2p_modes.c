/* ranks: 2 3 4 */
/* All send modes around a ring (each rank sends to rank+1, receives from
 * rank-1) for 0, 7, 1000, 70000 and 1 MiB bytes: MPI_Send, MPI_Ssend,
 * MPI_Bsend (all sizes buffered at once in a buffer sized with MPI_Pack_size
 * + MPI_BSEND_OVERHEAD; MPI_Buffer_detach must give back that buffer and
 * size), MPI_Rsend (after the receive is posted: Irecv then Barrier),
 * MPI_Isend, MPI_Issend, MPI_Ibsend and MPI_Irsend (after a zero-byte
 * handshake). Every byte and status is checked. */
#include "common.h"

#define NSIZES 5
#define MAXSZ (1 << 20)

static const int sizes[NSIZES] = {0, 7, 1000, 70000, 1 << 20};
enum { M_SEND, M_SSEND, M_BSEND, M_RSEND, M_ISEND, M_ISSEND, M_IBSEND, M_IRSEND, NMODES };
static const char *mode_name[NMODES] = {"Send", "Ssend", "Bsend", "Rsend",
                                        "Isend", "Issend", "Ibsend", "Irsend"};

static int rank, nprocs, left, right;
static unsigned char *sbuf[NSIZES], *rbuf[NSIZES];

static unsigned char pat(int src, int mode, int s, int i)
{
    return (unsigned char)((src * 37 + mode * 11 + s * 101 + i * 7 + (i >> 9)) & 0xff);
}

static void fill_all(int mode)
{
    for (int s = 0; s < NSIZES; s++) {
        for (int i = 0; i < sizes[s]; i++)
            sbuf[s][i] = pat(rank, mode, s, i);
        memset(rbuf[s], 0, (size_t)sizes[s] + 1);
    }
}

static void verify(int mode, int s, MPI_Status *st)
{
    int bad = 0, first = -1, count = -1;
    for (int i = 0; i < sizes[s]; i++)
        if (rbuf[s][i] != pat(left, mode, s, i)) {
            if (first < 0) first = i;
            bad++;
        }
    CHECK(bad == 0, "%s size %d from %d: %d bad bytes, first at %d",
          mode_name[mode], sizes[s], left, bad, first);
    CHECK(rbuf[s][sizes[s]] == 0, "%s size %d: byte past the message written",
          mode_name[mode], sizes[s]);
    CHECK(st->MPI_SOURCE == left, "%s size %d: status source %d want %d",
          mode_name[mode], sizes[s], st->MPI_SOURCE, left);
    CHECK(st->MPI_TAG == mode * 10 + s, "%s size %d: status tag %d want %d",
          mode_name[mode], sizes[s], st->MPI_TAG, mode * 10 + s);
    CHECK_OK(MPI_Get_count(st, MPI_BYTE, &count));
    CHECK(count == sizes[s], "%s size %d: count %d", mode_name[mode],
          sizes[s], count);
}

/* Blocking modes Send and Ssend: rank 0 sends first, every other rank
 * receives first, so the ring completes even with no buffering at all. */
static void blocking_ring(int mode)
{
    fill_all(mode);
    for (int s = 0; s < NSIZES; s++) {
        MPI_Status st;
        int tag = mode * 10 + s;
        if (rank == 0) {
            if (mode == M_SEND)
                CHECK_OK(MPI_Send(sbuf[s], sizes[s], MPI_BYTE, right, tag, MPI_COMM_WORLD));
            else
                CHECK_OK(MPI_Ssend(sbuf[s], sizes[s], MPI_BYTE, right, tag, MPI_COMM_WORLD));
            CHECK_OK(MPI_Recv(rbuf[s], sizes[s], MPI_BYTE, left, tag, MPI_COMM_WORLD, &st));
        } else {
            CHECK_OK(MPI_Recv(rbuf[s], sizes[s], MPI_BYTE, left, tag, MPI_COMM_WORLD, &st));
            if (mode == M_SEND)
                CHECK_OK(MPI_Send(sbuf[s], sizes[s], MPI_BYTE, right, tag, MPI_COMM_WORLD));
            else
                CHECK_OK(MPI_Ssend(sbuf[s], sizes[s], MPI_BYTE, right, tag, MPI_COMM_WORLD));
        }
        verify(mode, s, &st);
    }
}

/* Bsend: every size is sent before any receive is posted; the attached
 * buffer holds them all. */
static void bsend_ring(void)
{
    MPI_Status st;
    fill_all(M_BSEND);
    for (int s = 0; s < NSIZES; s++)
        CHECK_OK(MPI_Bsend(sbuf[s], sizes[s], MPI_BYTE, right, M_BSEND * 10 + s,
                           MPI_COMM_WORLD));
    /* The send buffers may be reused at once: the data was copied. */
    for (int s = 0; s < NSIZES; s++)
        memset(sbuf[s], 0xee, (size_t)sizes[s]);
    for (int s = 0; s < NSIZES; s++) {
        CHECK_OK(MPI_Recv(rbuf[s], sizes[s], MPI_BYTE, left, M_BSEND * 10 + s,
                          MPI_COMM_WORLD, &st));
        verify(M_BSEND, s, &st);
    }
}

/* Rsend: the matching receives are posted, then a barrier, then Rsend. */
static void rsend_ring(void)
{
    MPI_Request req[NSIZES];
    MPI_Status sts[NSIZES];
    fill_all(M_RSEND);
    for (int s = 0; s < NSIZES; s++)
        CHECK_OK(MPI_Irecv(rbuf[s], sizes[s], MPI_BYTE, left, M_RSEND * 10 + s,
                           MPI_COMM_WORLD, &req[s]));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int s = 0; s < NSIZES; s++)
        CHECK_OK(MPI_Rsend(sbuf[s], sizes[s], MPI_BYTE, right, M_RSEND * 10 + s,
                           MPI_COMM_WORLD));
    CHECK_OK(MPI_Waitall(NSIZES, req, sts));
    for (int s = 0; s < NSIZES; s++)
        verify(M_RSEND, s, &sts[s]);
}

/* Nonblocking modes: receives posted, all sends started, Waitall. For
 * Irsend a zero-byte handshake tells the sender the receives are posted. */
static void nonblocking_ring(int mode)
{
    MPI_Request req[2 * NSIZES];
    MPI_Status sts[2 * NSIZES];
    fill_all(mode);
    for (int s = 0; s < NSIZES; s++)
        CHECK_OK(MPI_Irecv(rbuf[s], sizes[s], MPI_BYTE, left, mode * 10 + s,
                           MPI_COMM_WORLD, &req[s]));
    if (mode == M_IRSEND) {
        /* "my receives are posted" to the left; wait for the right's. */
        MPI_Status hs;
        int dummy = 0;
        CHECK_OK(MPI_Sendrecv(&dummy, 0, MPI_INT, left, 999, &dummy, 0, MPI_INT,
                              right, 999, MPI_COMM_WORLD, &hs));
        CHECK(hs.MPI_SOURCE == right, "handshake source %d", hs.MPI_SOURCE);
    }
    for (int s = 0; s < NSIZES; s++) {
        MPI_Request *r = &req[NSIZES + s];
        int tag = mode * 10 + s;
        switch (mode) {
        case M_ISEND:
            CHECK_OK(MPI_Isend(sbuf[s], sizes[s], MPI_BYTE, right, tag, MPI_COMM_WORLD, r));
            break;
        case M_ISSEND:
            CHECK_OK(MPI_Issend(sbuf[s], sizes[s], MPI_BYTE, right, tag, MPI_COMM_WORLD, r));
            break;
        case M_IBSEND:
            CHECK_OK(MPI_Ibsend(sbuf[s], sizes[s], MPI_BYTE, right, tag, MPI_COMM_WORLD, r));
            break;
        default:
            CHECK_OK(MPI_Irsend(sbuf[s], sizes[s], MPI_BYTE, right, tag, MPI_COMM_WORLD, r));
            break;
        }
    }
    CHECK_OK(MPI_Waitall(2 * NSIZES, req, sts));
    for (int s = 0; s < 2 * NSIZES; s++)
        CHECK(req[s] == MPI_REQUEST_NULL, "%s: request %d not freed", mode_name[mode], s);
    for (int s = 0; s < NSIZES; s++)
        verify(mode, s, &sts[s]);
}

/* Issend started before the receiver has posted its receive: the sender
 * then sends a zero-byte "go" on another tag, the receiver receives "go"
 * first and only then the Issend's message, so the Issend request is
 * necessarily pending while the receiver is blocked on the other tag. */
static void issend_pair(void)
{
    if (nprocs < 2) return;
    int val = 0;
    MPI_Request req;
    MPI_Status st;
    if (rank == 0) {
        int data = 4242;
        CHECK_OK(MPI_Issend(&data, 1, MPI_INT, 1, 77, MPI_COMM_WORLD, &req));
        CHECK_OK(MPI_Send(&val, 0, MPI_INT, 1, 78, MPI_COMM_WORLD));
        CHECK_OK(MPI_Wait(&req, &st));
        CHECK(req == MPI_REQUEST_NULL, "Issend request not freed");
    } else if (rank == 1) {
        CHECK_OK(MPI_Recv(&val, 0, MPI_INT, 0, 78, MPI_COMM_WORLD, &st));
        CHECK_OK(MPI_Recv(&val, 1, MPI_INT, 0, 77, MPI_COMM_WORLD, &st));
        CHECK(val == 4242, "Issend data %d", val);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    right = (rank + 1) % nprocs;
    left = (rank + nprocs - 1) % nprocs;

    for (int s = 0; s < NSIZES; s++) {
        sbuf[s] = malloc((size_t)sizes[s] + 1);
        rbuf[s] = malloc((size_t)sizes[s] + 1);
        if (!sbuf[s] || !rbuf[s]) MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* Buffer big enough for every size at once. */
    int bufsize = 0;
    for (int s = 0; s < NSIZES; s++) {
        int ps = 0;
        CHECK_OK(MPI_Pack_size(sizes[s], MPI_BYTE, MPI_COMM_WORLD, &ps));
        CHECK(ps >= sizes[s], "MPI_Pack_size(%d bytes) = %d", sizes[s], ps);
        bufsize += ps + MPI_BSEND_OVERHEAD;
    }
    char *bbuf = malloc((size_t)bufsize);
    if (!bbuf) MPI_Abort(MPI_COMM_WORLD, 2);

    blocking_ring(M_SEND);
    blocking_ring(M_SSEND);

    CHECK_OK(MPI_Buffer_attach(bbuf, bufsize));
    bsend_ring();
    void *got = NULL;
    int gotsize = -1;
    /* Detach blocks until the buffered messages are delivered. */
    CHECK_OK(MPI_Buffer_detach(&got, &gotsize));
    CHECK(got == (void *)bbuf, "MPI_Buffer_detach returned %p, attached %p",
          got, (void *)bbuf);
    CHECK(gotsize == bufsize, "MPI_Buffer_detach size %d, attached %d",
          gotsize, bufsize);

    rsend_ring();
    nonblocking_ring(M_ISEND);
    nonblocking_ring(M_ISSEND);

    CHECK_OK(MPI_Buffer_attach(bbuf, bufsize));
    nonblocking_ring(M_IBSEND);
    got = NULL;
    gotsize = -1;
    CHECK_OK(MPI_Buffer_detach(&got, &gotsize));
    CHECK(got == (void *)bbuf && gotsize == bufsize,
          "second MPI_Buffer_detach gave %p/%d, attached %p/%d", got, gotsize,
          (void *)bbuf, bufsize);

    nonblocking_ring(M_IRSEND);
    issend_pair();

    free(bbuf);
    for (int s = 0; s < NSIZES; s++) {
        free(sbuf[s]);
        free(rbuf[s]);
    }
    return ct_finish();
}
