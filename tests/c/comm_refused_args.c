/* ranks: 3 4 shmpi-only */
/* A member that passes a bad argument to a collective constructor fails
 * with the argument's error class, and the others fail too (or, where
 * only the bad member's own output is concerned, succeed) instead of
 * waiting for it in the collective: MPI_Comm_create (an intra- and an
 * intercommunicator) with MPI_GROUP_NULL, MPI_Intercomm_create with a
 * null peer communicator at a leader, MPI_Comm_idup(_with_info) with a
 * null request or a bad info, MPI_Win_allocate(_shared) / MPI_Win_create
 * with a negative size, a zero displacement unit, a null base or a bad
 * info. The last member of MPI_COMM_WORLD is the bad one. shmpi-only:
 * MPI leaves such a program erroneous, and MPICH's other members wait. */
#include "common.h"

static int rank, size, bad;

/* The bad member's class is `want`; every other member fails too. */
static void all_fail(const char *what, int rc, int want)
{
    if (rank == bad)
        CHECK(ct_class(rc) == want, "%s: the bad member got class %d, not %d", what,
              ct_class(rc), want);
    else
        CHECK(rc != MPI_SUCCESS, "%s: a good member succeeded", what);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    bad = size - 1;
    /* A freed info handle's old value: not an info any more. */
    MPI_Info badinfo;
    MPI_Info_create(&badinfo);
    MPI_Info freed = badinfo;
    MPI_Info_free(&badinfo);

    /* MPI_Comm_create on MPI_COMM_WORLD. */
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Comm c = MPI_COMM_NULL;
    int rc = MPI_Comm_create(MPI_COMM_WORLD, rank == bad ? MPI_GROUP_NULL : world, &c);
    all_fail("MPI_Comm_create", rc, MPI_ERR_GROUP);
    CHECK(c == MPI_COMM_NULL || rank == bad, "MPI_Comm_create gave a communicator");

    /* An intercommunicator: even against odd world ranks. */
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
    CHECK_OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &inter));
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    MPI_Group local;
    MPI_Comm_group(inter, &local);
    c = MPI_COMM_NULL;
    rc = MPI_Comm_create(inter, rank == bad ? MPI_GROUP_NULL : local, &c);
    all_fail("MPI_Comm_create on an intercommunicator", rc, MPI_ERR_GROUP);
    MPI_Group_free(&local);

    /* MPI_Intercomm_create with a null peer at the bad member's side's
     * leader: that side fails; the leader of the other side is left
     * waiting for it (MPI: erroneous), so only the bad side calls it,
     * on a communicator of its own, with itself as the peer's leader. */
    MPI_Comm side;
    MPI_Comm_split(MPI_COMM_WORLD, rank == bad || rank == 0, rank == bad ? 0 : 1, &side);
    MPI_Comm_set_errhandler(side, MPI_ERRORS_RETURN);
    if (rank == bad || rank == 0) {
        /* The bad member leads its side (key 0). */
        c = MPI_COMM_NULL;
        rc = MPI_Intercomm_create(side, 0, rank == bad ? MPI_COMM_NULL : MPI_COMM_WORLD, 0, 9,
                                  &c);
        all_fail("MPI_Intercomm_create", rc, MPI_ERR_COMM);
    }

    /* MPI_Comm_idup: only the bad member fails, and does not wait for the
     * others (it sends rank 0 a message that rank 0 waits for before its
     * own idup); the others' new communicator is there (and freed: the
     * bad member's part discards its own). */
    MPI_Request r = MPI_REQUEST_NULL;
    c = MPI_COMM_NULL;
    int token = 0;
    if (rank == 0 && bad != 0)
        CHECK_OK(MPI_Recv(&token, 1, MPI_INT, bad, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    rc = MPI_Comm_idup(MPI_COMM_WORLD, &c, rank == bad ? NULL : &r);
    if (rank == bad) {
        CHECK(ct_class(rc) == MPI_ERR_ARG, "MPI_Comm_idup: class %d", ct_class(rc));
        CHECK_OK(MPI_Send(&token, 1, MPI_INT, 0, 11, MPI_COMM_WORLD));
    } else {
        CHECK_OK(rc);
        CHECK_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK(c != MPI_COMM_NULL, "MPI_Comm_idup gave no communicator");
        int n = 0;
        MPI_Comm_size(c, &n);
        CHECK(n == size, "the idup has %d members", n);
        MPI_Comm_free(&c);
    }
    r = MPI_REQUEST_NULL;
    c = MPI_COMM_NULL;
    rc = MPI_Comm_idup_with_info(MPI_COMM_WORLD, rank == bad ? freed : MPI_INFO_NULL, &c, &r);
    if (rank == bad) {
        CHECK(ct_class(rc) == MPI_ERR_INFO,
              "MPI_Comm_idup_with_info: class %d", ct_class(rc));
    } else {
        CHECK_OK(rc);
        CHECK_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        MPI_Comm_free(&c);
    }

    /* Windows. */
    MPI_Win w;
    void *base = NULL;
    rc = MPI_Win_allocate(rank == bad ? -8 : 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w);
    all_fail("MPI_Win_allocate (negative size)", rc, MPI_ERR_ARG);
    rc = MPI_Win_allocate_shared(64, 1, rank == bad ? freed : MPI_INFO_NULL, MPI_COMM_WORLD,
                                 &base, &w);
    all_fail("MPI_Win_allocate_shared (bad info)", rc, MPI_ERR_INFO);
    int mem[16];
    rc = MPI_Win_create(rank == bad ? NULL : mem, sizeof mem, sizeof(int), MPI_INFO_NULL,
                        MPI_COMM_WORLD, &w);
    all_fail("MPI_Win_create (null base)", rc, MPI_ERR_ARG);
    rc = MPI_Win_create(mem, sizeof mem, rank == bad ? 0 : (int)sizeof(int), MPI_INFO_NULL,
                        MPI_COMM_WORLD, &w);
    all_fail("MPI_Win_create (zero unit)", rc, MPI_ERR_ARG);

    /* Everyone is still in step: a window made by all works. */
    CHECK_OK(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w));
    *(int *)base = rank;
    MPI_Win_fence(0, w);
    int got = -1;
    MPI_Get(&got, 1, MPI_INT, (rank + 1) % size, 0, 1, MPI_INT, w);
    MPI_Win_fence(0, w);
    CHECK(got == (rank + 1) % size, "got %d from rank %d", got, (rank + 1) % size);
    MPI_Win_free(&w);

    MPI_Comm_free(&side);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MPI_Group_free(&world);
    return ct_finish();
}
