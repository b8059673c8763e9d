/* ranks: 1 2 */
/* MPI_INFO_ENV is an info object the query calls accept (MPI 4.1
 * §11.2.1: its keys may be any of command, argv, maxprocs, ..., or none)
 * and MPI_Info_free refuses (on shmpi); MPI_LASTUSEDCODE is an attribute of
 * MPI_COMM_WORLD at least MPI_ERR_LASTCODE (§9.5); a delete callback
 * that fails does not stop the others: MPI_Comm_free of a communicator
 * with two attributes, the first deleted failing, still calls both
 * callbacks and frees it, and so does finalize with such attributes on
 * MPI_COMM_SELF (checked by the callbacks' counts before finalize
 * returns, through a third attribute set first, deleted last). */
#include "common.h"
#include <unistd.h>

static int deleted[4];

static int del_fn(MPI_Comm c, int k, void *v, void *extra)
{
    (void)c;
    (void)k;
    (void)extra;
    int i = (int)(size_t)v;
    deleted[i]++;
    return i == 2 ? MPI_ERR_OTHER : MPI_SUCCESS;
}

/* Deleted last at finalize (set first): checks that the others ran. */
static int last_fn(MPI_Comm c, int k, void *v, void *extra)
{
    (void)c;
    (void)k;
    (void)v;
    (void)extra;
    if (deleted[1] != 2 || deleted[2] != 2) {
        fprintf(stderr, "finalize: delete callbacks ran %d and %d times, not 2\n", deleted[1],
                deleted[2]);
        fflush(stderr);
        _exit(3);
    }
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* MPI_INFO_ENV. */
    int nkeys = -1;
    CHECK_OK(MPI_Info_get_nkeys(MPI_INFO_ENV, &nkeys));
    CHECK(nkeys >= 0, "nkeys %d", nkeys);
    for (int i = 0; i < nkeys; i++) {
        char key[MPI_MAX_INFO_KEY + 1];
        int flag = 0, len = -1;
        CHECK_OK(MPI_Info_get_nthkey(MPI_INFO_ENV, i, key));
        CHECK_OK(MPI_Info_get_valuelen(MPI_INFO_ENV, key, &len, &flag));
        CHECK(flag && len >= 0, "key %s: flag %d len %d", key, flag, len);
    }
    MPI_Info copy;
    CHECK_OK(MPI_Info_dup(MPI_INFO_ENV, &copy));
    int n2 = -1;
    CHECK_OK(MPI_Info_get_nkeys(copy, &n2));
    CHECK(n2 == nkeys, "dup has %d keys, not %d", n2, nkeys);
    MPI_Info_free(&copy);
#ifdef SHMPI_MPI_H
    /* (MPICH 4.0 lets it be freed.) */
    MPI_Info env = MPI_INFO_ENV;
    CHECK(ct_class(MPI_Info_free(&env)) == MPI_ERR_INFO, "freeing MPI_INFO_ENV");
#endif

    /* MPI_LASTUSEDCODE. */
    int *last = NULL, flag = 0;
    CHECK_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(flag && last && *last >= MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE: flag %d value %d", flag,
          last ? *last : -1);

    /* A failing delete callback on MPI_Comm_free. */
    int k;
    CHECK_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del_fn, &k, NULL));
    int k2;
    CHECK_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del_fn, &k2, NULL));
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
    MPI_Comm_set_attr(d, k, (void *)(size_t)1);
    MPI_Comm_set_attr(d, k2, (void *)(size_t)2); /* deleted first, fails */
    MPI_Comm_free(&d);
    CHECK(deleted[1] == 1 && deleted[2] == 1, "MPI_Comm_free called the callbacks %d and %d times",
          deleted[1], deleted[2]);
    CHECK(d == MPI_COMM_NULL, "MPI_Comm_free left the handle");

    /* The same on MPI_COMM_SELF, at finalize. */
    int k3;
    CHECK_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, last_fn, &k3, NULL));
    CHECK_OK(MPI_Comm_set_attr(MPI_COMM_SELF, k3, NULL));
    CHECK_OK(MPI_Comm_set_attr(MPI_COMM_SELF, k, (void *)(size_t)1));
    CHECK_OK(MPI_Comm_set_attr(MPI_COMM_SELF, k2, (void *)(size_t)2));
    return ct_finish();
}
