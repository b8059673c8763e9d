/*
 * follow.c - a long 2-rank ping-pong that prints, every 200 round trips,
 * the seconds since the start and the mean one-way time of those round
 * trips (µs). On a VM whose vCPUs move between dies while the job runs,
 * its lines show whether the library follows the placement
 * (docs/tuning.md, "Following the placement").
 *
 *   follow [SIZE] [SECONDS]      (defaults: 16384 bytes, 30 s)
 *
 * Build with tools/shmpicc (or any MPI's mpicc); run on 2 ranks, e.g.
 *   target/release/shmpiexec -n 2 --bind-to core target/peers/follow 8192 60
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
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "follow: run on 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    long bytes = argc > 1 ? atol(argv[1]) : 16384;
    double secs = argc > 2 ? atof(argv[2]) : 30;
    if (bytes < 0 || bytes > (1L << 30) || secs <= 0) {
        if (rank == 0)
            fprintf(stderr, "follow: SIZE 0..1 GiB, SECONDS > 0\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    char *s = malloc(bytes ? bytes : 1), *r = malloc(bytes ? bytes : 1);
    if (!s || !r)
        MPI_Abort(MPI_COMM_WORLD, 1);
    memset(s, 1, bytes);
    memset(r, 2, bytes);
    int n = (int)bytes;
    double start = MPI_Wtime();
    int stop = 0;
    while (!stop) {
        double t0 = MPI_Wtime();
        for (int i = 0; i < 200; i++) {
            if (rank == 0) {
                MPI_Send(s, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(r, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(r, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(s, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
        }
        double now = MPI_Wtime();
        if (rank == 0) {
            stop = now - start > secs;
            printf("%.1f %.3f\n", now - start, (now - t0) * 1e6 / 400.0);
            fflush(stdout);
        }
        MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
