/*
 * osu_rma.c - OSU-style one-sided latency (osu_put_latency /
 * osu_get_latency with the lock_all + flush synchronisation), written for
 * the shmpi peers harness; follows the OSU methodology, contains no OSU
 * code.
 *
 * Usage (exactly 2 ranks): osu_rma put|get [--min-size N] [--max-size N]
 *                                          [--iterations N] [--warmup N]
 *
 * Rank 0 locks all (MPI_Win_lock_all), then times ITER operations of each
 * size on rank 1's memory (MPI_Win_allocate), each followed by
 * MPI_Win_flush; rank 1 only waits in a barrier (a passive target).
 * Output: '#' lines, then "size latency-us" rows (three decimals).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || argc < 2 || (strcmp(argv[1], "put") && strcmp(argv[1], "get"))) {
        if (rank == 0)
            fprintf(stderr, "usage: osu_rma put|get [--min-size N] [--max-size N] "
                            "[--iterations N] [--warmup N] (2 ranks)\n");
        MPI_Finalize();
        return 2;
    }
    int put = strcmp(argv[1], "put") == 0;
    long min = 8, max = 4096, iters = 10000, warm = 1000;
    for (int i = 2; i + 1 < argc; i += 2) {
        long v = atol(argv[i + 1]);
        if (!strcmp(argv[i], "--min-size"))
            min = v;
        else if (!strcmp(argv[i], "--max-size"))
            max = v;
        else if (!strcmp(argv[i], "--iterations"))
            iters = v;
        else if (!strcmp(argv[i], "--warmup"))
            warm = v;
    }
    char *mem = NULL;
    MPI_Win win;
    MPI_Win_allocate(rank == 1 ? max : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    char *buf = malloc(max);
    memset(buf, 'a', max);
    if (rank == 0) {
        printf("# OSU-style MPI_%s Latency Test (shmpi peers harness), lock_all + flush\n",
               put ? "Put" : "Get");
        printf("# Size          Latency (us)\n");
    }
    for (long s = min; s <= max; s *= 2) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Win_lock_all(0, win);
            double t0 = 0;
            for (long i = 0; i < warm + iters; i++) {
                if (i == warm)
                    t0 = MPI_Wtime();
                if (put)
                    MPI_Put(buf, (int)s, MPI_CHAR, 1, 0, (int)s, MPI_CHAR, win);
                else
                    MPI_Get(buf, (int)s, MPI_CHAR, 1, 0, (int)s, MPI_CHAR, win);
                MPI_Win_flush(1, win);
            }
            double t = (MPI_Wtime() - t0) * 1e6 / iters;
            MPI_Win_unlock_all(win);
            printf("%-10ld%18.3f\n", s, t);
            fflush(stdout);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_free(&win);
    free(buf);
    MPI_Finalize();
    return 0;
}
