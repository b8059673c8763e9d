/* Shared by the C test programs in tests/c: error counting and the
 * "No Errors" convention. Written for shmpi; plain MPI, so the same
 * programs build with any MPI's mpicc. */
#ifndef SHMPI_CTEST_COMMON_H
#define SHMPI_CTEST_COMMON_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 under shmpi's mpi.h, 0 under another MPI's: guards the checks of
 * behaviour another MPI does not share (each named where it is used). */
#ifdef SHMPI_MPI_H
#define OURS 1
#else
#define OURS 0
#endif

static int ct_errs = 0;

/* Counts a failed check and says where it failed (stderr, with the rank). */
#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            int ct_rank_ = -1;                                             \
            int ct_init_ = 0;                                              \
            MPI_Initialized(&ct_init_);                                    \
            if (ct_init_) MPI_Comm_rank(MPI_COMM_WORLD, &ct_rank_);        \
            fprintf(stderr, "[rank %d] %s:%d: check failed: %s: ",         \
                    ct_rank_, __FILE__, __LINE__, #cond);                  \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
            ct_errs++;                                                     \
        }                                                                  \
    } while (0)

/* Checks that an MPI call returned MPI_SUCCESS (use under ERRORS_RETURN,
 * or for calls that must succeed). */
#define CHECK_OK(call)                                                     \
    do {                                                                   \
        int ct_rc_ = (call);                                               \
        CHECK(ct_rc_ == MPI_SUCCESS, "%s returned %d", #call, ct_rc_);     \
    } while (0)

/* The error class of a return code (for checks under MPI_ERRORS_RETURN). */
static inline int ct_class(int rc)
{
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

/* Prints "No Errors" (or the count of `total` errors, summed over the
 * job) on rank 0; main's exit status. */
static inline int ct_report(int total, int rank)
{
    if (rank == 0) {
        if (total == 0)
            printf("No Errors\n");
        else
            printf("Found %d errors\n", total);
        fflush(stdout);
    }
    return total == 0 ? 0 : 1;
}

/* Sums the error counts over MPI_COMM_WORLD, prints "No Errors" (or the
 * count) on rank 0, finalizes, and gives main's exit status. */
static inline int ct_finish(void)
{
    int total = 0, rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&ct_errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int rc = ct_report(total, rank);
    MPI_Finalize();
    return rc;
}

#endif
