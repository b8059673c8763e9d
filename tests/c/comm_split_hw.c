/* ranks: 2 4 */
/* MPI 4's hardware splits (MPI 4.1 §7.4.2): MPI_COMM_TYPE_HW_GUIDED with
 * mpi_hw_resource_type mpi_shared_memory (every rank of the node), a
 * hardware level (Package, NUMANode: each rank in a communicator whose
 * members agree on it, or MPI_COMM_NULL when its binding spans several),
 * an unknown level and no key (MPI_COMM_NULL everywhere);
 * MPI_COMM_TYPE_HW_UNGUIDED (a strict subset, or MPI_COMM_NULL); the key
 * orders the ranks; MPI_UNDEFINED on one rank beside the others' type
 * (SHARED, HW_UNGUIDED); an unknown split type is MPI_ERR_ARG. The levels
 * found depend on the machine: the checks hold on any. */
#include "common.h"

/* The new communicator's members agree on its size, and it is ordered by
 * the key (descending world rank here). */
static void check_sub(MPI_Comm c, int me, const char *what)
{
    if (c == MPI_COMM_NULL) return;
    int s = -1, lo = -1, hi = -1, r = -1, prev = -1;
    MPI_Comm_size(c, &s);
    MPI_Allreduce(&s, &lo, 1, MPI_INT, MPI_MIN, c);
    MPI_Allreduce(&s, &hi, 1, MPI_INT, MPI_MAX, c);
    CHECK(lo == s && hi == s, "%s: sizes %d..%d", what, lo, hi);
    MPI_Comm_rank(c, &r);
    /* The world rank of the member before this one is larger. */
    MPI_Sendrecv(&me, 1, MPI_INT, (r + 1) % s, 0, &prev, 1, MPI_INT, (r + s - 1) % s, 0, c,
                 MPI_STATUS_IGNORE);
    if (s > 1 && r > 0) CHECK(prev > me, "%s: rank %d follows world rank %d", what, me, prev);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Info info;
    MPI_Comm c;

    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory");
    CHECK_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, -me, info, &c));
    int s = -1;
    if (c != MPI_COMM_NULL) MPI_Comm_size(c, &s);
    CHECK(s == n, "mpi_shared_memory: size %d of %d", s, n);
    check_sub(c, me, "mpi_shared_memory");
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);

    const char *levels[2] = {"Package", "NUMANode"};
    for (int i = 0; i < 2; i++) {
        MPI_Info_set(info, "mpi_hw_resource_type", levels[i]);
        CHECK_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, -me, info, &c));
        check_sub(c, me, levels[i]);
        if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
    }

    MPI_Info_set(info, "mpi_hw_resource_type", "org.shmpi.nonsense");
    c = MPI_COMM_WORLD;
    CHECK_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, &c));
    CHECK(c == MPI_COMM_NULL, "an unknown resource gave a communicator");
    MPI_Info_free(&info);
    c = MPI_COMM_WORLD;
    CHECK_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, MPI_INFO_NULL, &c));
    CHECK(c == MPI_COMM_NULL, "HW_GUIDED without a resource gave a communicator");

    CHECK_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, -me, MPI_INFO_NULL,
                                 &c));
    if (c != MPI_COMM_NULL) {
        MPI_Comm_size(c, &s);
        CHECK(s < n, "HW_UNGUIDED gave %d of %d: not a strict subset", s, n);
        check_sub(c, me, "HW_UNGUIDED");
        MPI_Comm_free(&c);
    }

    /* Members may pass MPI_UNDEFINED beside the others' type: they get
     * MPI_COMM_NULL, the others go on (here the last rank). */
    int last = me == n - 1;
    c = MPI_COMM_WORLD;
    CHECK_OK(MPI_Comm_split_type(MPI_COMM_WORLD, last ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED,
                                 0, MPI_INFO_NULL, &c));
    s = -1;
    if (c != MPI_COMM_NULL) MPI_Comm_size(c, &s);
    CHECK(last ? c == MPI_COMM_NULL : s == n - 1, "shared beside UNDEFINED: size %d", s);
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
    CHECK_OK(MPI_Comm_split_type(MPI_COMM_WORLD, last ? MPI_UNDEFINED : MPI_COMM_TYPE_HW_UNGUIDED,
                                 0, MPI_INFO_NULL, &c));
    if (c != MPI_COMM_NULL) {
        CHECK(!last, "UNDEFINED gave a communicator");
        MPI_Comm_free(&c);
    }

    int rc = MPI_Comm_split_type(MPI_COMM_WORLD, 12345, 0, MPI_INFO_NULL, &c);
    CHECK(ct_class(rc) == MPI_ERR_ARG, "split type 12345: class %d", ct_class(rc));
    return ct_finish();
}
