/*
 * osu_pingpong.c - OSU-style point-to-point latency / bandwidth benchmark.
 *
 * Written from scratch for the shmpi peers harness (tools/compare-peers.sh);
 * it follows the OSU Micro-Benchmarks *methodology* and output format so its
 * numbers can be compared with shmpi-bench and published OSU results, but it
 * contains no OSU code.
 *
 * Usage (exactly 2 ranks):
 *   osu_pingpong latency|nblatency|bw|exchange|partitioned [--min-size N]
 *                           [--max-size N] [--iterations N] [--warmup N]
 *                           [--alloc-mem] [--touch] [--partitions P]
 *
 *   latency  rank 0 sends a message, rank 1 echoes it back; the reported
 *            one-way latency is RTT / 2 in microseconds, averaged over the
 *            timed iterations.  Sizes: 0, 1, 2, 4, ... max.
 *   nblatency  as latency, with every receive posted by MPI_Irecv before
 *            the rank's own send and completed by MPI_Wait (rank 0:
 *            Irecv, Send, Wait; rank 1: Irecv, Wait, Send), the pattern
 *            of a halo exchange.  Not an OSU test.
 *   exchange both ranks at once post MPI_Irecv, send by MPI_Isend and
 *            MPI_Waitall both: a halo exchange between two neighbours;
 *            the time per exchange in microseconds, measured on rank 0.
 *            Sizes as latency.  Not an OSU test.
 *   partitioned  as latency, by partitioned communication (MPI 4.1 §4.2):
 *            each rank keeps an MPI_Psend_init and an MPI_Precv_init of P
 *            partitions (--partitions, default 8) of size / P bytes; rank
 *            0 starts both, readies every partition with one
 *            MPI_Pready_range and waits for both; rank 1 starts and waits
 *            for its receive, then sends the same way.  Sizes from P on.
 *            Needs MPI 4 (MPI_VERSION >= 4); another MPI prints no rows.
 *            Not an OSU test.
 *   bw       rank 0 posts a window of 64 MPI_Isend, rank 1 a window of 64
 *            MPI_Irecv; both MPI_Waitall, then rank 1 returns a 4-byte ack.
 *            Bandwidth = bytes moved / time in MB/s (10^6 bytes/s), measured
 *            on rank 0.  Sizes: 1, 2, 4, ... max (0 is skipped).
 *
 * --touch: before each send the sender writes one byte in every cache line
 * of the message (a different value each time), as an application sends
 * data it has just computed: the lines are then modified in the sender's
 * cache, not clean, which single-copy protocols feel (they read them
 * straight out of that cache).  The writes are timed, the same for every
 * library.  Not an OSU option.
 *
 * Defaults: --max-size 4 MiB, --min-size 0 (latency) / 1 (bw).
 * Iterations, unless --iterations/--warmup are given (which then apply to
 * every size):
 *   latency  10000 timed / 1000 warmup for size <= 8 KiB, 1000 / 100 above
 *   bw         100 timed /   10 warmup for size <= 8 KiB,   20 /   2 above
 *
 * Output: '#' comment lines, then one row per size:
 *   printf("%-10d%18.3f\n", size, value)
 */
#define _POSIX_C_SOURCE 200112L
#include <mpi.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LARGE_THRESHOLD (8 * 1024) /* sizes above this use the "large" counts */
#define BW_WINDOW 64
#define TAG_DATA 1
#define TAG_ACK 2

enum mode { MODE_LATENCY, MODE_NBLATENCY, MODE_BW, MODE_EXCHANGE, MODE_PARTITIONED };

struct opts {
    enum mode mode;
    long min_size;
    long max_size;
    long iterations; /* -1: per-size default */
    long warmup;     /* -1: per-size default */
    int alloc_mem;   /* --alloc-mem: buffers from MPI_Alloc_mem */
    int touch;       /* --touch: the sender rewrites its buffer first */
    long partitions; /* --partitions: for the partitioned mode */
};

static int rank;

static void usage_exit(const char *msg)
{
    if (rank == 0) {
        if (msg)
            fprintf(stderr, "osu_pingpong: %s\n", msg);
        fprintf(stderr,
                "usage: osu_pingpong latency|nblatency|bw|exchange|partitioned [--min-size N]"
                " [--max-size N] [--iterations N] [--warmup N] [--alloc-mem] [--touch]"
                " [--partitions P]\n");
    }
    MPI_Finalize();
    exit(2);
}

static long parse_num(const char *flag, const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *s == '\0' || *end != '\0' || v < 0) {
        if (rank == 0)
            fprintf(stderr, "osu_pingpong: bad value for %s: '%s'\n", flag, s);
        usage_exit(NULL);
    }
    return v;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
    int have_min = 0;

    o->max_size = 4L * 1024 * 1024;
    o->min_size = 0;
    o->iterations = -1;
    o->warmup = -1;
    o->partitions = 8;

    if (argc < 2)
        usage_exit("missing mode");
    if (strcmp(argv[1], "latency") == 0)
        o->mode = MODE_LATENCY;
    else if (strcmp(argv[1], "nblatency") == 0)
        o->mode = MODE_NBLATENCY;
    else if (strcmp(argv[1], "bw") == 0)
        o->mode = MODE_BW;
    else if (strcmp(argv[1], "exchange") == 0)
        o->mode = MODE_EXCHANGE;
    else if (strcmp(argv[1], "partitioned") == 0)
        o->mode = MODE_PARTITIONED;
    else
        usage_exit("mode must be 'latency', 'nblatency', 'bw', 'exchange' or 'partitioned'");

    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--alloc-mem") == 0) {
            o->alloc_mem = 1;
            continue;
        }
        if (strcmp(a, "--touch") == 0) {
            o->touch = 1;
            continue;
        }
        if (i + 1 >= argc)
            usage_exit("option needs a value");
        if (strcmp(a, "--min-size") == 0) {
            o->min_size = parse_num(a, argv[++i]);
            have_min = 1;
        } else if (strcmp(a, "--max-size") == 0) {
            o->max_size = parse_num(a, argv[++i]);
        } else if (strcmp(a, "--iterations") == 0) {
            o->iterations = parse_num(a, argv[++i]);
            if (o->iterations == 0)
                usage_exit("--iterations must be > 0");
        } else if (strcmp(a, "--warmup") == 0) {
            o->warmup = parse_num(a, argv[++i]);
        } else if (strcmp(a, "--partitions") == 0) {
            o->partitions = parse_num(a, argv[++i]);
            if (o->partitions < 1 || o->partitions > 1 << 20)
                usage_exit("--partitions must be from 1 to 2^20");
        } else {
            usage_exit("unknown option");
        }
    }
    if (o->mode == MODE_BW && (!have_min || o->min_size == 0))
        o->min_size = 1; /* bandwidth of 0-byte messages is meaningless */
    if (o->mode == MODE_PARTITIONED && o->min_size < o->partitions)
        o->min_size = o->partitions; /* at least a byte a partition */
    if (o->max_size > 1L << 30)
        usage_exit("--max-size must be <= 1 GiB");
    if (o->min_size > o->max_size)
        usage_exit("--min-size must be <= --max-size");
}

/* Next size in the 0, 1, 2, 4, ... sequence. */
static long next_size(long s)
{
    return s == 0 ? 1 : s * 2;
}

/* First size of the sequence that is >= min. */
static long first_size(long min)
{
    long s = 0;
    while (s < min)
        s = next_size(s);
    return s;
}

static void counts_for(const struct opts *o, long size, long *iters, long *warm)
{
    int large = size > LARGE_THRESHOLD;
    if (o->mode != MODE_BW) {
        *iters = large ? 1000 : 10000;
        *warm = large ? 100 : 1000;
    } else {
        *iters = large ? 20 : 100;
        *warm = large ? 2 : 10;
    }
    if (o->iterations > 0)
        *iters = o->iterations;
    if (o->warmup >= 0)
        *warm = o->warmup;
}

static void *alloc_touched(size_t bytes, int fill)
{
    void *p = NULL;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    if (bytes == 0)
        bytes = 1;
    if (posix_memalign(&p, (size_t)page, bytes) != 0) {
        fprintf(stderr, "osu_pingpong: rank %d: cannot allocate %zu bytes\n",
                rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(p, fill, bytes); /* fault every page in before timing */
    return p;
}

static int touch; /* --touch */

/* With --touch, writes one byte of every 64 of the message's first `size`
 * bytes (value `v`), leaving each of its cache lines modified. */
static void touch_lines(char *buf, int size, long v)
{
    if (!touch)
        return;
    for (int i = 0; i < size; i += 64)
        ((volatile char *)buf)[i] = (char)v;
}

/* One-way latency in microseconds; with nb, receives by MPI_Irecv posted
 * before the rank's send, then MPI_Wait. */
static double run_latency(char *sbuf, char *rbuf, int size, long iters, long warm,
                          int nb)
{
    double t0 = 0.0;
    for (long i = 0; i < warm + iters; i++) {
        if (i == warm)
            t0 = MPI_Wtime();
        if (nb) {
            MPI_Request r;
            MPI_Irecv(rbuf, size, MPI_CHAR, 1 - rank, TAG_DATA, MPI_COMM_WORLD, &r);
            if (rank == 0) {
                touch_lines(sbuf, size, i);
                MPI_Send(sbuf, size, MPI_CHAR, 1, TAG_DATA, MPI_COMM_WORLD);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                MPI_Wait(&r, MPI_STATUS_IGNORE);
                touch_lines(sbuf, size, i);
                MPI_Send(sbuf, size, MPI_CHAR, 0, TAG_DATA, MPI_COMM_WORLD);
            }
        } else if (rank == 0) {
            touch_lines(sbuf, size, i);
            MPI_Send(sbuf, size, MPI_CHAR, 1, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(rbuf, size, MPI_CHAR, 1, TAG_DATA, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, size, MPI_CHAR, 0, TAG_DATA, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            touch_lines(sbuf, size, i);
            MPI_Send(sbuf, size, MPI_CHAR, 0, TAG_DATA, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    return t * 1e6 / (2.0 * (double)iters);
}

/* Microseconds per exchange: both ranks post a receive, send, and wait
 * for both (a halo exchange between two neighbours). */
static double run_exchange(char *sbuf, char *rbuf, int size, long iters, long warm)
{
    double t0 = 0.0;
    for (long i = 0; i < warm + iters; i++) {
        MPI_Request r[2];
        MPI_Status st[2]; /* not MPI_STATUSES_IGNORE: see run_bw */
        if (i == warm)
            t0 = MPI_Wtime();
        MPI_Irecv(rbuf, size, MPI_CHAR, 1 - rank, TAG_DATA, MPI_COMM_WORLD, &r[0]);
        touch_lines(sbuf, size, i);
        MPI_Isend(sbuf, size, MPI_CHAR, 1 - rank, TAG_DATA, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, st);
    }
    double t = MPI_Wtime() - t0;
    return t * 1e6 / (double)iters;
}

#if MPI_VERSION >= 4
/* One-way latency in microseconds of a partitioned ping-pong: `parts`
 * partitions of size / parts bytes each way. */
static double run_partitioned(char *sbuf, char *rbuf, int size, int parts, long iters,
                              long warm)
{
    MPI_Request s, r;
    int each = size / parts;
    MPI_Psend_init(sbuf, parts, each, MPI_CHAR, 1 - rank, TAG_DATA, MPI_COMM_WORLD,
                   MPI_INFO_NULL, &s);
    MPI_Precv_init(rbuf, parts, each, MPI_CHAR, 1 - rank, TAG_DATA, MPI_COMM_WORLD,
                   MPI_INFO_NULL, &r);
    double t0 = 0.0;
    for (long i = 0; i < warm + iters; i++) {
        if (i == warm)
            t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Start(&r);
            MPI_Start(&s);
            touch_lines(sbuf, size, i);
            MPI_Pready_range(0, parts - 1, s);
            MPI_Wait(&s, MPI_STATUS_IGNORE);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        } else {
            MPI_Start(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            MPI_Start(&s);
            touch_lines(sbuf, size, i);
            MPI_Pready_range(0, parts - 1, s);
            MPI_Wait(&s, MPI_STATUS_IGNORE);
        }
    }
    double t = MPI_Wtime() - t0;
    MPI_Request_free(&s);
    MPI_Request_free(&r);
    return t * 1e6 / (2.0 * (double)iters);
}
#endif

/* Bandwidth in MB/s (10^6 bytes per second), valid on rank 0. */
static double run_bw(char *sbuf, char *rbuf, int size, long iters, long warm)
{
    MPI_Request req[BW_WINDOW];
    MPI_Status stat[BW_WINDOW]; /* like OSU; also avoids a GCC 12 false
                                   -Wstringop-overflow on MPICH's
                                   MPI_STATUSES_IGNORE */
    char ack[4] = {0};
    double t0 = 0.0;

    for (long i = 0; i < warm + iters; i++) {
        if (i == warm)
            t0 = MPI_Wtime();
        if (rank == 0) {
            touch_lines(sbuf, size, i);
            for (int w = 0; w < BW_WINDOW; w++)
                MPI_Isend(sbuf, size, MPI_CHAR, 1, TAG_DATA, MPI_COMM_WORLD,
                          &req[w]);
            MPI_Waitall(BW_WINDOW, req, stat);
            MPI_Recv(ack, 4, MPI_CHAR, 1, TAG_ACK, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < BW_WINDOW; w++)
                MPI_Irecv(rbuf, size, MPI_CHAR, 0, TAG_DATA, MPI_COMM_WORLD,
                          &req[w]);
            MPI_Waitall(BW_WINDOW, req, stat);
            MPI_Send(ack, 4, MPI_CHAR, 0, TAG_ACK, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    return (double)size * (double)BW_WINDOW * (double)iters / 1e6 / t;
}

int main(int argc, char **argv)
{
    /* Zeroed: parse_args sets only what it is given (an uninitialised
     * alloc_mem made runs use MPI_Alloc_mem buffers at random). */
    struct opts o = {0};
    int nranks;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    parse_args(argc, argv, &o);
    touch = o.touch;
    if (nranks != 2) {
        if (rank == 0)
            fprintf(stderr, "osu_pingpong: needs exactly 2 ranks (got %d)\n",
                    nranks);
        MPI_Finalize();
        return 2;
    }

    char *sbuf, *rbuf;
    if (o.alloc_mem) {
        /* Memory from the library (MPI 4.1 §9.2), where it may be faster
         * to communicate from; touched before timing like the other. */
        MPI_Aint n = o.max_size > 0 ? (MPI_Aint)o.max_size : 1;
        if (MPI_Alloc_mem(n, MPI_INFO_NULL, &sbuf) != MPI_SUCCESS ||
            MPI_Alloc_mem(n, MPI_INFO_NULL, &rbuf) != MPI_SUCCESS) {
            fprintf(stderr, "osu_pingpong: rank %d: MPI_Alloc_mem failed\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        memset(sbuf, 'a', (size_t)n);
        memset(rbuf, 'b', (size_t)n);
    } else {
        sbuf = alloc_touched((size_t)o.max_size, 'a');
        rbuf = alloc_touched((size_t)o.max_size, 'b');
    }

    if (rank == 0) {
        if (o.mode == MODE_NBLATENCY) {
            printf("# OSU-style MPI Latency Test, receives by MPI_Irecv + MPI_Wait "
                   "(shmpi peers harness)\n");
            printf("# Size          Latency (us)\n");
        } else if (o.mode == MODE_LATENCY) {
            printf("# OSU-style MPI Latency Test (shmpi peers harness)\n");
            printf("# Size          Latency (us)\n");
        } else if (o.mode == MODE_PARTITIONED) {
            printf("# Partitioned Latency Test: %ld partitions, MPI_Pready_range of all "
                   "(shmpi peers harness)\n",
                   o.partitions);
#if MPI_VERSION < 4
            printf("# not run: this MPI has no partitioned communication (MPI_VERSION %d)\n",
                   MPI_VERSION);
#endif
            printf("# Size          Latency (us)\n");
        } else if (o.mode == MODE_EXCHANGE) {
            printf("# Exchange Test: MPI_Irecv + MPI_Isend + MPI_Waitall on both "
                   "ranks at once (shmpi peers harness)\n");
            printf("# Size    Per exchange (us)\n");
        } else {
            printf("# OSU-style MPI Bandwidth Test (shmpi peers harness)\n");
            printf("# Size      Bandwidth (MB/s)\n");
        }
        fflush(stdout);
    }

    /* Untimed warm-up (50,000 round trips of 8 bytes, about 10 ms) so the
     * first row is not measured on a cold core; shmpi-bench does the same. */
    MPI_Barrier(MPI_COMM_WORLD);
    (void)run_latency(sbuf, rbuf, 8, 1, 50000, 0);

    for (long size = first_size(o.min_size); size <= o.max_size;
         size = next_size(size)) {
        long iters, warm;
        counts_for(&o, size, &iters, &warm);

        MPI_Barrier(MPI_COMM_WORLD);
        if (o.mode == MODE_PARTITIONED) {
#if MPI_VERSION >= 4
            double v = run_partitioned(sbuf, rbuf, (int)size, (int)o.partitions, iters, warm);
            if (rank == 0) {
                printf("%-10d%18.3f\n", (int)(size / o.partitions * o.partitions), v);
                fflush(stdout);
            }
#endif
            continue;
        }
        double v = o.mode == MODE_BW
                       ? run_bw(sbuf, rbuf, (int)size, iters, warm)
                   : o.mode == MODE_EXCHANGE
                       ? run_exchange(sbuf, rbuf, (int)size, iters, warm)
                       : run_latency(sbuf, rbuf, (int)size, iters, warm,
                                     o.mode == MODE_NBLATENCY);
        if (rank == 0) {
            printf("%-10d%18.3f\n", (int)size, v);
            fflush(stdout);
        }
    }

    if (o.alloc_mem) {
        MPI_Free_mem(sbuf);
        MPI_Free_mem(rbuf);
    } else {
        free(sbuf);
        free(rbuf);
    }
    MPI_Finalize();
    return 0;
}
