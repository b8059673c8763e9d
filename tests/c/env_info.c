/* ranks: 1 2 */
/* The MPI_Info API: create (empty), set, get with flag for present and
 * absent keys, get_valuelen, get_nkeys, get_nthkey
 * (every key exactly once, stable order while unmodified), overwrite,
 * delete (absent key -> MPI_ERR_INFO_NOKEY), over-long key/value ->
 * MPI_ERR_INFO_KEY / MPI_ERR_INFO_VALUE (a value of MPI_MAX_INFO_VAL
 * characters fits), dup gives an independent copy,
 * free sets MPI_INFO_NULL. Then MPI_Comm_get_info returns an info object that
 * can be read and freed, MPI_Comm_set_info with an arbitrary key succeeds,
 * and MPI_Comm_dup_with_info gives a working communicator. */
#include "common.h"

static char val[MPI_MAX_INFO_VAL + 1];
static char key[MPI_MAX_INFO_KEY + 1];

/* Expects key k present in info with value v (and its exact valuelen). */
static void expect(MPI_Info info, const char *k, const char *v, const char *where)
{
    int flag = -1, vlen = -1;
    memset(val, 'X', sizeof val);
    CHECK_OK(MPI_Info_get(info, k, MPI_MAX_INFO_VAL, val, &flag));
    CHECK(flag != 0, "%s: key \"%s\" absent", where, k);
    if (flag)
        CHECK(strcmp(val, v) == 0, "%s: key \"%s\" = \"%s\", expected \"%s\"", where, k, val, v);
    flag = -1;
    CHECK_OK(MPI_Info_get_valuelen(info, k, &vlen, &flag));
    CHECK(flag != 0, "%s: get_valuelen says \"%s\" absent", where, k);
    if (flag)
        CHECK(vlen == (int)strlen(v), "%s: valuelen of \"%s\" is %d, expected %d", where, k, vlen,
              (int)strlen(v));
}

/* Expects key k absent from info (both get and get_valuelen). */
static void expect_absent(MPI_Info info, const char *k, const char *where)
{
    int flag = -1, vlen = -1;
    CHECK_OK(MPI_Info_get(info, k, MPI_MAX_INFO_VAL, val, &flag));
    CHECK(flag == 0, "%s: key \"%s\" present", where, k);
    flag = -1;
    CHECK_OK(MPI_Info_get_valuelen(info, k, &vlen, &flag));
    CHECK(flag == 0, "%s: get_valuelen finds \"%s\"", where, k);
}

static int nkeys(MPI_Info info)
{
    int n = -1;
    CHECK_OK(MPI_Info_get_nkeys(info, &n));
    return n;
}

static int class_of(int rc)
{
    int cls = -1;
    if (rc == MPI_SUCCESS)
        return MPI_SUCCESS;
    CHECK_OK(MPI_Error_class(rc, &cls));
    return cls;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);

    MPI_Info info = MPI_INFO_NULL;
    CHECK_OK(MPI_Info_create(&info));
    CHECK(info != MPI_INFO_NULL, "MPI_Info_create gave MPI_INFO_NULL");
    CHECK(nkeys(info) == 0, "new info has %d keys", nkeys(info));
    expect_absent(info, "alpha", "empty info");

    const char *keys[3] = {"alpha", "beta_key", "gamma.k"};
    const char *vals[3] = {"1", "value two", "/some/path:with=chars"};
    for (int i = 0; i < 3; i++)
        CHECK_OK(MPI_Info_set(info, keys[i], vals[i]));
    CHECK(nkeys(info) == 3, "after 3 sets: %d keys", nkeys(info));
    for (int i = 0; i < 3; i++)
        expect(info, keys[i], vals[i], "after set");
    expect_absent(info, "delta", "after set");
    expect_absent(info, "alph", "after set (prefix)");
    expect_absent(info, "ALPHA", "after set (case)");

    /* get_nthkey: each key exactly once; same order on a second pass. */
    {
        char first[3][MPI_MAX_INFO_KEY + 1];
        int seen[3] = {0, 0, 0};
        for (int n = 0; n < 3; n++) {
            memset(key, 'X', sizeof key);
            CHECK_OK(MPI_Info_get_nthkey(info, n, key));
            key[MPI_MAX_INFO_KEY] = '\0';
            strcpy(first[n], key);
            int hit = 0;
            for (int i = 0; i < 3; i++)
                if (strcmp(key, keys[i]) == 0) {
                    seen[i]++;
                    hit = 1;
                }
            CHECK(hit, "nthkey %d is \"%s\", not a key that was set", n, key);
        }
        for (int i = 0; i < 3; i++)
            CHECK(seen[i] == 1, "key \"%s\" returned %d times by get_nthkey", keys[i], seen[i]);
        for (int n = 0; n < 3; n++) {
            CHECK_OK(MPI_Info_get_nthkey(info, n, key));
            CHECK(strcmp(key, first[n]) == 0, "nthkey %d changed: \"%s\" then \"%s\"", n,
                  first[n], key);
        }
    }

    /* Overwrite keeps the key count. */
    CHECK_OK(MPI_Info_set(info, "alpha", "replaced value"));
    CHECK(nkeys(info) == 3, "after overwrite: %d keys", nkeys(info));
    expect(info, "alpha", "replaced value", "after overwrite");

    /* Dup is an independent copy. */
    MPI_Info dup = MPI_INFO_NULL;
    CHECK_OK(MPI_Info_dup(info, &dup));
    CHECK(dup != MPI_INFO_NULL && dup != info, "MPI_Info_dup gave a bad handle");
    CHECK(nkeys(dup) == 3, "dup has %d keys", nkeys(dup));
    expect(dup, "alpha", "replaced value", "dup");
    expect(dup, "beta_key", "value two", "dup");
    expect(dup, "gamma.k", "/some/path:with=chars", "dup");
    CHECK_OK(MPI_Info_set(dup, "only_in_dup", "x"));
    CHECK_OK(MPI_Info_set(dup, "beta_key", "changed in dup"));
    CHECK_OK(MPI_Info_delete(info, "gamma.k"));
    expect_absent(info, "only_in_dup", "original after dup modified");
    expect(info, "beta_key", "value two", "original after dup modified");
    expect(dup, "gamma.k", "/some/path:with=chars", "dup after original modified");
    CHECK(nkeys(info) == 2, "original has %d keys, expected 2", nkeys(info));
    CHECK(nkeys(dup) == 4, "dup has %d keys, expected 4", nkeys(dup));

    /* Delete. */
    CHECK_OK(MPI_Info_delete(info, "alpha"));
    expect_absent(info, "alpha", "after delete");
    CHECK(nkeys(info) == 1, "after delete: %d keys", nkeys(info));
    CHECK_OK(MPI_Info_get_nthkey(info, 0, key));
    CHECK(strcmp(key, "beta_key") == 0, "remaining key is \"%s\"", key);

    /* Error classes, with errors returned (MPI-3 raises info errors on
     * MPI_COMM_WORLD, MPI-4 on MPI_COMM_SELF: set both). */
    {
        MPI_Errhandler ow, os;
        CHECK_OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &ow));
        CHECK_OK(MPI_Comm_get_errhandler(MPI_COMM_SELF, &os));
        CHECK_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        CHECK_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));

        int rc = MPI_Info_delete(info, "not_there");
        CHECK(class_of(rc) == MPI_ERR_INFO_NOKEY, "delete of absent key: class %d",
              class_of(rc));

        static char longkey[MPI_MAX_INFO_KEY + 16];
        memset(longkey, 'k', sizeof longkey - 1);
        longkey[sizeof longkey - 1] = '\0';
        rc = MPI_Info_set(info, longkey, "v");
        CHECK(class_of(rc) == MPI_ERR_INFO_KEY, "over-long key: class %d", class_of(rc));

        static char longval[MPI_MAX_INFO_VAL + 16];
        memset(longval, 'v', sizeof longval - 1);
        longval[sizeof longval - 1] = '\0';
        rc = MPI_Info_set(info, "k", longval);
        CHECK(class_of(rc) == MPI_ERR_INFO_VALUE, "over-long value: class %d", class_of(rc));
        CHECK(nkeys(info) == 1, "failed sets changed the key count to %d", nkeys(info));
        /* MPI_MAX_INFO_VAL characters fit, and come back whole. */
        longval[MPI_MAX_INFO_VAL] = '\0';
        CHECK_OK(MPI_Info_set(info, "k", longval));
        int flag = 0;
        CHECK_OK(MPI_Info_get(info, "k", MPI_MAX_INFO_VAL, val, &flag));
        CHECK(flag && strlen(val) == MPI_MAX_INFO_VAL, "a value of MPI_MAX_INFO_VAL: %zu",
              strlen(val));
        CHECK_OK(MPI_Info_delete(info, "k"));

        CHECK_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, ow));
        CHECK_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, os));
        CHECK_OK(MPI_Errhandler_free(&ow));
        CHECK_OK(MPI_Errhandler_free(&os));
    }

    CHECK_OK(MPI_Info_free(&info));
    CHECK(info == MPI_INFO_NULL, "MPI_Info_free did not set MPI_INFO_NULL");
    /* The dup survives the original's free. */
    expect(dup, "beta_key", "changed in dup", "dup after original freed");
    CHECK_OK(MPI_Info_free(&dup));
    CHECK(dup == MPI_INFO_NULL, "MPI_Info_free did not set MPI_INFO_NULL on the dup");

    /* Communicator info. */
    {
        MPI_Info ci = MPI_INFO_NULL;
        CHECK_OK(MPI_Comm_get_info(MPI_COMM_WORLD, &ci));
        CHECK(ci != MPI_INFO_NULL, "MPI_Comm_get_info gave MPI_INFO_NULL");
        int n = nkeys(ci);
        CHECK(n >= 0, "comm info has %d keys", n);
        for (int i = 0; i < n; i++) {
            int vlen = -1, flag = 0;
            CHECK_OK(MPI_Info_get_nthkey(ci, i, key));
            CHECK_OK(MPI_Info_get_valuelen(ci, key, &vlen, &flag));
            CHECK(flag && vlen >= 0 && vlen <= MPI_MAX_INFO_VAL,
                  "comm info key \"%s\": flag %d valuelen %d", key, flag, vlen);
        }
        CHECK_OK(MPI_Info_free(&ci));
        CHECK(ci == MPI_INFO_NULL, "freeing comm info did not set MPI_INFO_NULL");

        MPI_Comm c;
        CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
        MPI_Info hint;
        CHECK_OK(MPI_Info_create(&hint));
        CHECK_OK(MPI_Info_set(hint, "shmpi_test_arbitrary_hint", "true"));
        CHECK_OK(MPI_Comm_set_info(c, hint));
        CHECK_OK(MPI_Comm_get_info(c, &ci));
        CHECK(ci != MPI_INFO_NULL, "MPI_Comm_get_info after set_info gave MPI_INFO_NULL");
        if (ci != MPI_INFO_NULL)
            CHECK_OK(MPI_Info_free(&ci));

        MPI_Comm d;
        int cmp = -1, rank, size, sum = 0;
        CHECK_OK(MPI_Comm_dup_with_info(c, hint, &d));
        CHECK_OK(MPI_Info_free(&hint));
        CHECK_OK(MPI_Comm_compare(c, d, &cmp));
        CHECK(cmp == MPI_CONGRUENT, "dup_with_info compare gave %d", cmp);
        MPI_Comm_rank(d, &rank);
        MPI_Comm_size(d, &size);
        CHECK_OK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, d));
        CHECK(sum == size * (size - 1) / 2, "allreduce on dup_with_info comm gave %d", sum);
        CHECK_OK(MPI_Comm_free(&d));
        CHECK_OK(MPI_Comm_free(&c));
    }

    return ct_finish();
}
