/* ranks: 2 3 4 */
/* MPI_Win_test (the nonblocking MPI_Win_wait: false until every origin
 * has completed, then the epoch is closed), MPI_Win_get_group (the
 * window's communicator's group), MPI_Win_set_name / get_name, and
 * MPI_Type_create_hindexed / hindexed_block (byte displacements) sent
 * and received. Rank 0 exposes its window to every other rank, which
 * starts after a synchronous message from rank 0 that follows rank 0's
 * first MPI_Win_test, so that test is sure to find an origin missing. */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int *mem = NULL;
    MPI_Win w;
    CHECK_OK(MPI_Win_allocate((MPI_Aint)(n * sizeof(int)), sizeof(int), MPI_INFO_NULL,
                              MPI_COMM_WORLD, &mem, &w));
    for (int i = 0; i < n; i++) mem[i] = -1;

    /* Group and name. */
    MPI_Group wg, cg;
    int res = -1, len = -1;
    CHECK_OK(MPI_Win_get_group(w, &wg));
    MPI_Comm_group(MPI_COMM_WORLD, &cg);
    MPI_Group_compare(wg, cg, &res);
    CHECK(res == MPI_IDENT, "window group vs world: %d", res);
    char name[MPI_MAX_OBJECT_NAME];
    CHECK_OK(MPI_Win_get_name(w, name, &len));
    CHECK(len == 0 || len == (int)strlen(name), "unset name: %d", len);
    CHECK_OK(MPI_Win_set_name(w, "halo window"));
    CHECK_OK(MPI_Win_get_name(w, name, &len));
    CHECK(strcmp(name, "halo window") == 0 && len == 11, "name %s (%d)", name, len);

    /* PSCW, the target testing. */
    int x = 7;
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        MPI_Group others;
        int zero = 0, flag = 1;
        MPI_Group_excl(wg, 1, &zero, &others);
        CHECK_OK(MPI_Win_post(others, 0, w));
        CHECK_OK(MPI_Win_test(w, &flag));
        CHECK(flag == 0, "MPI_Win_test before any origin started");
        for (int r = 1; r < n; r++) CHECK_OK(MPI_Ssend(&x, 1, MPI_INT, r, 9, MPI_COMM_WORLD));
        double t0 = MPI_Wtime();
        while (!flag && MPI_Wtime() - t0 < 30.0) CHECK_OK(MPI_Win_test(w, &flag));
        CHECK(flag, "MPI_Win_test never true");
        for (int r = 1; r < n; r++) CHECK(mem[r] == 100 + r, "mem[%d] = %d", r, mem[r]);
        MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
        int cls = -1;
        MPI_Error_class(MPI_Win_test(w, &flag), &cls);
        CHECK(cls == MPI_ERR_RMA_SYNC, "MPI_Win_test without an epoch: %d", cls);
        MPI_Group_free(&others);
    } else {
        MPI_Group zero_g;
        int zero = 0, got = 0, v = 100 + me;
        MPI_Group_incl(wg, 1, &zero, &zero_g);
        CHECK_OK(MPI_Recv(&got, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_OK(MPI_Win_start(zero_g, 0, w));
        CHECK_OK(MPI_Put(&v, 1, MPI_INT, 0, me, 1, MPI_INT, w));
        CHECK_OK(MPI_Win_complete(w));
        MPI_Group_free(&zero_g);
    }
    MPI_Group_free(&wg);
    MPI_Group_free(&cg);
    CHECK_OK(MPI_Win_free(&w));

    /* hindexed and hindexed_block, by byte displacements. */
    {
        double d[8];
        for (int i = 0; i < 8; i++) d[i] = i + 0.5;
        int bl[2] = {2, 1};
        MPI_Aint disp[2] = {5 * (MPI_Aint)sizeof(double), 0};
        MPI_Datatype hi, hb;
        CHECK_OK(MPI_Type_create_hindexed(2, bl, disp, MPI_DOUBLE, &hi));
        MPI_Aint db[3] = {7 * (MPI_Aint)sizeof(double), 2 * (MPI_Aint)sizeof(double), 0};
        CHECK_OK(MPI_Type_create_hindexed_block(3, 1, db, MPI_DOUBLE, &hb));
        MPI_Type_commit(&hi);
        MPI_Type_commit(&hb);
        double out[3] = {0};
        CHECK_OK(MPI_Sendrecv(d, 1, hi, 0, 1, out, 3, MPI_DOUBLE, 0, 1, MPI_COMM_SELF,
                              MPI_STATUS_IGNORE));
        CHECK(out[0] == 5.5 && out[1] == 6.5 && out[2] == 0.5, "hindexed: %g %g %g", out[0],
              out[1], out[2]);
        CHECK_OK(MPI_Sendrecv(d, 1, hb, 0, 2, out, 3, MPI_DOUBLE, 0, 2, MPI_COMM_SELF,
                              MPI_STATUS_IGNORE));
        CHECK(out[0] == 7.5 && out[1] == 2.5 && out[2] == 0.5, "hindexed_block: %g %g %g",
              out[0], out[1], out[2]);
        MPI_Aint lb, ext;
        MPI_Type_get_extent(hi, &lb, &ext);
        CHECK(lb == 0 && ext == 7 * (MPI_Aint)sizeof(double), "hindexed extent %ld %ld",
              (long)lb, (long)ext);
        MPI_Type_free(&hi);
        MPI_Type_free(&hb);
    }
    return ct_finish();
}
