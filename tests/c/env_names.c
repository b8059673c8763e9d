/* ranks: 1 2 shmpi-only */
/* Ports and the node-local name service: each rank opens a port,
 * publishes it under its own name, finds the other ranks' ports by name,
 * then withdraws and closes; wrong uses are MPI_ERR_NAME / MPI_ERR_PORT.
 * (MPICH needs an external name server for this, so it runs on shmpi
 * only.) */
#include "common.h"
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char port[MPI_MAX_PORT_NAME], found[MPI_MAX_PORT_NAME], svc[64];
    CHECK_OK(MPI_Open_port(MPI_INFO_NULL, port));
    CHECK(strlen(port) > 0 && strlen(port) < MPI_MAX_PORT_NAME, "port name %s", port);
    /* Names of this job's ranks must not clash with another run: use the
     * pid of rank 0, shared by bcast. */
    int base = (int)getpid();
    MPI_Bcast(&base, 1, MPI_INT, 0, MPI_COMM_WORLD);
    snprintf(svc, sizeof svc, "env_names %d %d", base, rank);
    CHECK_OK(MPI_Publish_name(svc, MPI_INFO_NULL, port));
    CHECK(ct_class(MPI_Publish_name(svc, MPI_INFO_NULL, port)) == MPI_ERR_NAME, "published twice");
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) {
        char other[64];
        snprintf(other, sizeof other, "env_names %d %d", base, r);
        CHECK_OK(MPI_Lookup_name(other, MPI_INFO_NULL, found));
        if (r == rank)
            CHECK(strcmp(found, port) == 0, "lookup gave %s, want %s", found, port);
        else
            CHECK(strcmp(found, port) != 0, "two ranks have one port");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_OK(MPI_Unpublish_name(svc, MPI_INFO_NULL, port));
    CHECK(ct_class(MPI_Lookup_name(svc, MPI_INFO_NULL, found)) == MPI_ERR_NAME, "lookup after unpublish");
    CHECK(ct_class(MPI_Unpublish_name(svc, MPI_INFO_NULL, port)) == MPI_ERR_NAME, "unpublished twice");
    CHECK_OK(MPI_Close_port(port));
    CHECK(ct_class(MPI_Close_port(port)) == MPI_ERR_PORT, "closed twice");
    return ct_finish();
}
