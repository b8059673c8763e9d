/*
 * osu_coll.c - OSU-style collective latency benchmark, the same method as
 * `shmpi-bench barrier|bcast|reduce|allreduce|allgather|alltoall`
 * (tools/shmpi-bench.rs), for MPICH and Open MPI (tools/compare-peers.sh).
 * Written from scratch; it follows the OSU Micro-Benchmarks method and
 * output format but contains no OSU code.
 *
 * Usage: osu_coll barrier|bcast|reduce|allreduce|allgather|alltoall
 *                 [--min-size N] [--max-size N] [--iterations N] [--warmup N]
 *                 [--touch]
 *
 * For each size (bytes; 1, 2, 4, ... max, from 4 for the reductions,
 * which sum floats; barrier has the one row 0): an untimed warm-up, a
 * barrier, the timed loop; the row is the average over ranks of each
 * rank's mean microseconds per call. Iterations: 10000 / 1000 warm-up up
 * to 8 KiB, 1000 / 100 above. Before the first size, 2000 barriers.
 *
 * --touch: before each call every rank writes one element of every cache
 * line of its input (bcast: the root), as an application computes its
 * input just before the call, so that it is modified in the rank's cache
 * rather than clean; the writes are timed, the same for every library
 * (`shmpi-bench <collective> --touch`). Not an OSU option.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { BARRIER, BCAST, REDUCE, ALLREDUCE, ALLGATHER, ALLTOALL };

/* --touch: the input rewritten, one element a line (see the header). */
static void touch(enum kind k, long size, int rank, int n, char *a, char *b, float *fa)
{
    long bytes = 0;
    switch (k) {
    case BARRIER: return;
    case REDUCE:
    case ALLREDUCE:
        for (long i = 0; i < size / 4; i += 16) fa[i] += 1.0f;
        return;
    case BCAST: if (rank != 0) return; bytes = size; break;
    case ALLGATHER: bytes = size; break;
    case ALLTOALL: bytes = size * n; break;
    }
    char v = (char)(b[0] + 1);
    for (long i = 0; i < bytes; i += 64) a[i] = v;
}

static void once(enum kind k, long size, char *a, char *b, float *fa, float *fb)
{
    switch (k) {
    case BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
    case BCAST: MPI_Bcast(a, (int)size, MPI_CHAR, 0, MPI_COMM_WORLD); break;
    case REDUCE: MPI_Reduce(fa, fb, (int)(size / 4), MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD); break;
    case ALLREDUCE: MPI_Allreduce(fa, fb, (int)(size / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case ALLGATHER: MPI_Allgather(a, (int)size, MPI_CHAR, b, (int)size, MPI_CHAR, MPI_COMM_WORLD); break;
    case ALLTOALL: MPI_Alltoall(a, (int)size, MPI_CHAR, b, (int)size, MPI_CHAR, MPI_COMM_WORLD); break;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc < 2) {
        if (rank == 0) fprintf(stderr, "usage: osu_coll barrier|bcast|reduce|allreduce|allgather|alltoall [options]\n");
        MPI_Finalize();
        return 2;
    }
    const char *names[] = {"barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall"};
    int k = -1;
    for (int i = 0; i < 6; i++)
        if (!strcmp(argv[1], names[i])) k = i;
    if (k < 0) {
        if (rank == 0) fprintf(stderr, "osu_coll: unknown collective %s\n", argv[1]);
        MPI_Finalize();
        return 2;
    }
    long min = (k == REDUCE || k == ALLREDUCE) ? 4 : 1, max = 1 << 20, iters = -1, warm = -1;
    int touching = 0;
    for (int i = 2; i < argc; i += 2) {
        if (!strcmp(argv[i], "--touch")) {
            touching = 1;
            i--;
            continue;
        }
        if (i + 1 >= argc) break;
        if (!strcmp(argv[i], "--min-size")) min = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--max-size")) max = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--iterations")) iters = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup")) warm = atol(argv[i + 1]);
    }
    if (min < 1) min = 1;
    char *a = malloc((size_t)n * (size_t)max + 1), *b = malloc((size_t)n * (size_t)max + 1);
    float *fa = malloc((size_t)max + 4), *fb = malloc((size_t)max + 4);
    memset(a, 1, (size_t)n * (size_t)max + 1);
    for (long i = 0; i < max / 4 + 1; i++) fa[i] = 1.0f;
    if (rank == 0) {
        printf("# OSU-style MPI %s Latency Test (osu_coll), %d ranks%s\n", names[k], n,
               touching ? ", input rewritten before each call" : "");
        printf("# Size       Avg Latency(us)\n");
    }
    for (int i = 0; i < 2000; i++) MPI_Barrier(MPI_COMM_WORLD);
    for (long size = (k == BARRIER ? 0 : 1); size <= (k == BARRIER ? 0 : max); size = (size ? size * 2 : 1)) {
        if (k != BARRIER && size < min) continue;
        long it = iters > 0 ? iters : (size > 8192 ? 1000 : 10000);
        long wu = warm >= 0 ? warm : it / 10;
        for (long i = 0; i < wu; i++) {
            if (touching) touch(k, size, rank, n, a, b, fa);
            once(k, size, a, b, fa, fb);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        for (long i = 0; i < it; i++) {
            if (touching) touch(k, size, rank, n, a, b, fa);
            once(k, size, a, b, fa, fb);
        }
        double mine = (MPI_Wtime() - t) * 1e6 / (double)it, sum = 0;
        MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) printf("%-10ld%18.2f\n", size, sum / n);
        if (k == BARRIER) break;
    }
    free(a); free(b); free(fa); free(fb);
    MPI_Finalize();
    return 0;
}
