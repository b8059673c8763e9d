/*
 * comm_bench.c - communicator construction timing, the same loop as
 * `shmpi-bench comm` (tools/shmpi-bench.rs), for MPICH and Open MPI.
 *
 * Written for tools/compare-comm.sh. For each of MPI_Comm_dup,
 * MPI_Comm_split (colour rank % 2, key rank) and MPI_Comm_create (the
 * whole group), each followed by MPI_Comm_free: `warmup` untimed calls, a
 * barrier, `iterations` timed calls, a barrier; rank 0 prints the average
 * microseconds per call + free:
 *
 *   printf("%-8d%14.2f%14.2f%14.2f\n", size, dup, split, create)
 *
 * Usage: comm_bench [--iterations N] [--warmup N]   (defaults 1000 / 100)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op { OP_DUP, OP_SPLIT, OP_CREATE };

static void once(enum op op, int rank, MPI_Group world_group)
{
    MPI_Comm c = MPI_COMM_NULL;
    switch (op) {
    case OP_DUP:
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        break;
    case OP_SPLIT:
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &c);
        break;
    case OP_CREATE:
        MPI_Comm_create(MPI_COMM_WORLD, world_group, &c);
        break;
    }
    if (c != MPI_COMM_NULL)
        MPI_Comm_free(&c);
}

static double time_op(enum op op, int rank, MPI_Group g, long iters, long warm)
{
    for (long i = 0; i < warm; i++)
        once(op, rank, g);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (long i = 0; i < iters; i++)
        once(op, rank, g);
    MPI_Barrier(MPI_COMM_WORLD);
    return (MPI_Wtime() - t) * 1e6 / (double)iters;
}

int main(int argc, char **argv)
{
    long iters = 1000, warm = 100;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--iterations"))
            iters = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup"))
            warm = atol(argv[i + 1]);
    }
    if (iters < 1)
        iters = 1;
    MPI_Group g;
    MPI_Comm_group(MPI_COMM_WORLD, &g);
    double dup = time_op(OP_DUP, rank, g, iters, warm);
    double split = time_op(OP_SPLIT, rank, g, iters, warm);
    double create = time_op(OP_CREATE, rank, g, iters, warm);
    if (rank == 0)
        printf("%-8d%14.2f%14.2f%14.2f\n", size, dup, split, create);
    MPI_Group_free(&g);
    MPI_Finalize();
    return 0;
}
