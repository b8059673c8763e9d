/* ranks: 4 5 */
/* Partitioned communication under load: every rank keeps two partitioned
 * sends to every other rank (same tag, so the two match in the order of
 * their inits) and the matching receives, each pair partitioned
 * differently on its two sides; for six epochs every rank starts all its
 * requests, readies its partitions in a shuffled order, in groups of
 * random size (MPI_Pready, MPI_Pready_list, MPI_Pready_range over runs),
 * polls MPI_Parrived on its receives meanwhile (checking each partition's
 * data as it arrives), and completes everything with one MPI_Waitall.
 * Every epoch's data differs, so a partition that landed in another
 * epoch, operation or place is caught. */
#include "common.h"

#define EPOCHS 6
#define MAXP 16

static int rank, size;
static unsigned long long rng = 88172645463325252ULL;

static unsigned next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}

/* The value of byte-offset element i of the message from `src` to `dst`,
 * operation `op`, epoch `e`. */
static int value(int src, int dst, int op, int e, int i)
{
    return ((src * 31 + dst) * 7 + op) * 100000 + e * 10000 + i;
}

/* Partitioning of a message of `total` ints: the sender's and the
 * receiver's partition counts (each divides total). */
static void shape(int src, int dst, int op, int *sp, int *rp)
{
    static const int ways[] = {1, 2, 3, 4, 6, 8, 12, 16};
    *sp = ways[(src * 3 + dst + op) % 8];
    *rp = ways[(src + dst * 5 + op * 3) % 8];
}

enum { TOTAL = 48 }; /* ints a message; divisible by every way */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rng += (unsigned long long)rank * 0x9E3779B97F4A7C15ULL;
    int peers = size - 1, nops = 2 * peers;
    MPI_Request *sreq = malloc(sizeof(MPI_Request) * nops);
    MPI_Request *rreq = malloc(sizeof(MPI_Request) * nops);
    int (*sbuf)[TOTAL] = malloc(sizeof(int[TOTAL]) * nops);
    int (*rbuf)[TOTAL] = malloc(sizeof(int[TOTAL]) * nops);
    int *sdst = malloc(sizeof(int) * nops), *rsrc = malloc(sizeof(int) * nops);
    int *sop = malloc(sizeof(int) * nops), *rop = malloc(sizeof(int) * nops);
    int k = 0;
    for (int d = 0; d < size; d++) {
        if (d == rank)
            continue;
        for (int op = 0; op < 2; op++, k++) {
            int sp, rp;
            shape(rank, d, op, &sp, &rp);
            sdst[k] = d;
            sop[k] = op;
            CHECK_OK(MPI_Psend_init(sbuf[k], sp, TOTAL / sp, MPI_INT, d, 3, MPI_COMM_WORLD,
                                    MPI_INFO_NULL, &sreq[k]));
            shape(d, rank, op, &sp, &rp);
            rsrc[k] = d;
            rop[k] = op;
            CHECK_OK(MPI_Precv_init(rbuf[k], rp, TOTAL / rp, MPI_INT, d, 3, MPI_COMM_WORLD,
                                    MPI_INFO_NULL, &rreq[k]));
        }
    }
    for (int e = 0; e < EPOCHS; e++) {
        for (k = 0; k < nops; k++) {
            for (int i = 0; i < TOTAL; i++) {
                sbuf[k][i] = value(rank, sdst[k], sop[k], e, i);
                rbuf[k][i] = -1;
            }
        }
        CHECK_OK(MPI_Startall(nops, rreq));
        CHECK_OK(MPI_Startall(nops, sreq));
        /* Every (send, partition) once, shuffled, in random groups. */
        int todo[64 * MAXP][2], n = 0;
        for (k = 0; k < nops; k++) {
            int sp, rp;
            shape(rank, sdst[k], sop[k], &sp, &rp);
            for (int p = 0; p < sp; p++) {
                todo[n][0] = k;
                todo[n][1] = p;
                n++;
            }
        }
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(next_rand() % (unsigned)(i + 1));
            int t0 = todo[i][0], t1 = todo[i][1];
            todo[i][0] = todo[j][0];
            todo[i][1] = todo[j][1];
            todo[j][0] = t0;
            todo[j][1] = t1;
        }
        int seen[64][MAXP];
        memset(seen, 0, sizeof seen);
        for (int i = 0; i < n;) {
            /* A group of up to 4 of the same request: one list. */
            int list[4], len = 0, req = todo[i][0];
            while (i < n && len < 4 && todo[i][0] == req)
                list[len++] = todo[i++][1];
            if (len == 1)
                CHECK_OK(MPI_Pready(list[0], sreq[req]));
            else
                CHECK_OK(MPI_Pready_list(len, list, sreq[req]));
            /* Meanwhile: what has arrived is right. */
            int r = (int)(next_rand() % (unsigned)nops), sp, rp;
            shape(rsrc[r], rank, rop[r], &sp, &rp);
            for (int p = 0; p < rp; p++) {
                int flag = 0;
                if (seen[r][p])
                    continue;
                CHECK_OK(MPI_Parrived(rreq[r], p, &flag));
                if (!flag)
                    continue;
                seen[r][p] = 1;
                int each = TOTAL / rp;
                for (int x = p * each; x < (p + 1) * each; x++)
                    CHECK(rbuf[r][x] == value(rsrc[r], rank, rop[r], e, x),
                          "epoch %d op %d from %d: partition %d int %d is %d", e, rop[r],
                          rsrc[r], p, x, rbuf[r][x]);
            }
        }
        MPI_Status *st = malloc(sizeof(MPI_Status) * 2 * nops);
        MPI_Request *all = malloc(sizeof(MPI_Request) * 2 * nops);
        memcpy(all, sreq, sizeof(MPI_Request) * nops);
        memcpy(all + nops, rreq, sizeof(MPI_Request) * nops);
        CHECK_OK(MPI_Waitall(2 * nops, all, st));
        for (k = 0; k < nops; k++) {
            for (int i = 0; i < TOTAL; i++)
                if (rbuf[k][i] != value(rsrc[k], rank, rop[k], e, i)) {
                    CHECK(0, "epoch %d op %d from %d: int %d is %d", e, rop[k], rsrc[k], i,
                          rbuf[k][i]);
                    break;
                }
            int cnt = -1;
            MPI_Get_count(&st[nops + k], MPI_INT, &cnt);
            CHECK(cnt == TOTAL && st[nops + k].MPI_SOURCE == rsrc[k],
                  "epoch %d: status count %d source %d", e, cnt, st[nops + k].MPI_SOURCE);
        }
        free(st);
        free(all);
    }
    for (k = 0; k < nops; k++) {
        CHECK_OK(MPI_Request_free(&sreq[k]));
        CHECK_OK(MPI_Request_free(&rreq[k]));
    }
    free(sreq);
    free(rreq);
    free(sbuf);
    free(rbuf);
    free(sdst);
    free(rsrc);
    free(sop);
    free(rop);
    return ct_finish();
}
