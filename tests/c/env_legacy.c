/* ranks: 1 2 */
/* MPI 1 functions that MPI 3.0 removed and MPICH still links (MPI_Address,
 * MPI_Type_extent / lb / ub, MPI_Type_hvector / hindexed / struct,
 * MPI_Errhandler_create / set / get) give what their replacements give;
 * MPI_Pcontrol returns at once; MPI_Info_create_env (MPI 4.1 §11.4)
 * makes a new info with the keys of MPI_INFO_ENV from the given argv,
 * before and after MPI_Init (MPI lets an implementation fill only some
 * keys: MPICH 4.0 fills none, so they are checked on shmpi only). */
#include "common.h"

static int handled;

static void on_error(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    (void)code;
    handled++;
}

static void check_env(MPI_Info info, const char *argv0, int argc, const char *when)
{
    if (!OURS)
        return;
    char v[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    MPI_Info_get(info, "command", MPI_MAX_INFO_VAL, v, &flag);
    CHECK(flag && strcmp(v, argv0) == 0, "%s: command '%s'", when, flag ? v : "(none)");
    MPI_Info_get(info, "argv", MPI_MAX_INFO_VAL, v, &flag);
    CHECK(argc > 1 ? flag != 0 : 1, "%s: no argv key", when);
    MPI_Info_get(info, "wdir", MPI_MAX_INFO_VAL, v, &flag);
    CHECK(flag && v[0] == '/', "%s: wdir '%s'", when, flag ? v : "(none)");
}

int main(int argc, char **argv)
{
    MPI_Info before = MPI_INFO_NULL;
    int rc0 = MPI_Info_create_env(argc, argv, &before);
    MPI_Init(&argc, &argv);
    int me = 0, p = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    CHECK(rc0 == MPI_SUCCESS, "MPI_Info_create_env before MPI_Init returned %d", rc0);
    if (rc0 == MPI_SUCCESS) {
        check_env(before, argv[0], argc, "before init");
        MPI_Info_free(&before);
    }
    MPI_Info after;
    CHECK_OK(MPI_Info_create_env(argc, argv, &after));
    check_env(after, argv[0], argc, "after init");
    char v[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    MPI_Info_get(after, "maxprocs", MPI_MAX_INFO_VAL, v, &flag);
    CHECK(!flag || atoi(v) == p, "maxprocs '%s' in a job of %d", v, p);
    MPI_Info_free(&after);
    if (OURS) {
        /* The arguments given, not the process's own, make argv. */
        char *fake[] = {argv[0], "x-arg", NULL};
        MPI_Info given;
        CHECK_OK(MPI_Info_create_env(2, fake, &given));
        MPI_Info_get(given, "argv", MPI_MAX_INFO_VAL, v, &flag);
        CHECK(flag && strcmp(v, "x-arg") == 0, "argv '%s'", flag ? v : "(none)");
        MPI_Info_free(&given);
    }

    /* Datatypes. */
    int buf[4];
    MPI_Aint a0, a1, b0, b1;
    CHECK_OK(MPI_Address(&buf[0], &a0));
    CHECK_OK(MPI_Address(&buf[2], &a1));
    MPI_Get_address(&buf[0], &b0);
    MPI_Get_address(&buf[2], &b1);
    CHECK(a0 == b0 && a1 - a0 == 2 * (MPI_Aint)sizeof(int), "MPI_Address");
    MPI_Datatype hv, hi, st, resized;
    CHECK_OK(MPI_Type_hvector(2, 1, 8, MPI_INT, &hv));
    int bl[2] = {1, 1};
    MPI_Aint ds[2] = {0, 12};
    CHECK_OK(MPI_Type_hindexed(2, bl, ds, MPI_INT, &hi));
    MPI_Datatype ts[2] = {MPI_INT, MPI_INT};
    CHECK_OK(MPI_Type_struct(2, bl, ds, ts, &st));
    MPI_Aint ext = 0, lb = -1, ub = -1;
    CHECK_OK(MPI_Type_extent(hv, &ext));
    CHECK(ext == 12, "hvector extent %ld", (long)ext);
    CHECK_OK(MPI_Type_extent(hi, &ext));
    CHECK(ext == 16, "hindexed extent %ld", (long)ext);
    MPI_Type_create_resized(st, -4, 24, &resized);
    CHECK_OK(MPI_Type_lb(resized, &lb));
    CHECK_OK(MPI_Type_ub(resized, &ub));
    CHECK(lb == -4 && ub == 20, "lb %ld ub %ld", (long)lb, (long)ub);
    MPI_Type_free(&hv);
    MPI_Type_free(&hi);
    MPI_Type_free(&st);
    MPI_Type_free(&resized);

    /* Error handlers. */
    MPI_Errhandler eh, got;
    CHECK_OK(MPI_Errhandler_create(on_error, &eh));
    CHECK_OK(MPI_Errhandler_set(MPI_COMM_WORLD, eh));
    CHECK_OK(MPI_Errhandler_get(MPI_COMM_WORLD, &got));
    int x = 0;
    MPI_Send(&x, 1, MPI_INT, p + 5, 0, MPI_COMM_WORLD); /* a bad rank */
    CHECK(handled == 1, "the MPI 1 handler ran %d times", handled);
    MPI_Errhandler_free(&got);
    MPI_Errhandler_set(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);

    CHECK_OK(MPI_Pcontrol(1));
    CHECK_OK(MPI_Pcontrol(0, "extra", 3));
    return ct_finish();
}
