/* ranks: 1 2 */
/* MPI 1's attribute calls (deprecated since MPI 2.0, still in MPI 4.1
 * §19.1): MPI_Keyval_create with MPI_DUP_FN / MPI_NULL_COPY_FN and a
 * delete function of type MPI_Delete_function; MPI_Attr_put, MPI_Attr_get
 * (a predefined key too), MPI_Attr_delete; MPI_Comm_dup copies through the
 * MPI 1 callbacks; they share keys with the MPI 2 calls; MPI_Keyval_free
 * sets MPI_KEYVAL_INVALID; a bad key is MPI_ERR_KEYVAL. */
#include "common.h"

static int deleted = 0;
static void *last_deleted = NULL;

static int count_delete(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    deleted++;
    last_deleted = val;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int kdup = MPI_KEYVAL_INVALID, knull = MPI_KEYVAL_INVALID, flag = 0;
    MPI_Copy_function *dupfn = MPI_DUP_FN;
    MPI_Delete_function *delfn = count_delete;
    CHECK_OK(MPI_Keyval_create(dupfn, delfn, &kdup, NULL));
    CHECK_OK(MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &knull, NULL));
    CHECK(kdup != MPI_KEYVAL_INVALID && knull != kdup, "keys %d %d", kdup, knull);

    static int a = 7, b = 9;
    MPI_Comm c;
    CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    CHECK_OK(MPI_Attr_put(c, kdup, &a));
    CHECK_OK(MPI_Attr_put(c, knull, &b));
    int *got = NULL;
    CHECK_OK(MPI_Attr_get(c, kdup, &got, &flag));
    CHECK(flag && got == &a, "Attr_get: flag %d value %p", flag, (void *)got);
    /* The MPI 2 calls see the same attribute. */
    got = NULL;
    CHECK_OK(MPI_Comm_get_attr(c, knull, &got, &flag));
    CHECK(flag && got == &b, "Comm_get_attr of an Attr_put value: flag %d", flag);

    /* Replacing calls the delete function with the old value. */
    CHECK_OK(MPI_Attr_put(c, kdup, &b));
    CHECK(deleted == 1 && last_deleted == &a, "replace: %d deletes, last %p", deleted,
          last_deleted);

    /* Dup: MPI_DUP_FN copies, MPI_NULL_COPY_FN does not. */
    MPI_Comm d;
    CHECK_OK(MPI_Comm_dup(c, &d));
    got = NULL;
    CHECK_OK(MPI_Attr_get(d, kdup, &got, &flag));
    CHECK(flag && got == &b, "dup of an MPI_DUP_FN attribute: flag %d", flag);
    CHECK_OK(MPI_Attr_get(d, knull, &got, &flag));
    CHECK(!flag, "an MPI_NULL_COPY_FN attribute was copied");

    CHECK_OK(MPI_Attr_delete(c, kdup));
    CHECK(deleted == 2, "Attr_delete: %d deletes", deleted);
    CHECK_OK(MPI_Attr_get(c, kdup, &got, &flag));
    CHECK(!flag, "deleted attribute still there");
    CHECK_OK(MPI_Comm_free(&d)); /* deletes the copied one */
    CHECK(deleted == 3, "free of the dup: %d deletes", deleted);
    CHECK_OK(MPI_Comm_free(&c));

    /* A predefined key. */
    int *ub = NULL;
    CHECK_OK(MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
    CHECK(flag && ub && *ub >= 32767, "MPI_TAG_UB: flag %d", flag);

    CHECK_OK(MPI_Keyval_free(&kdup));
    CHECK(kdup == MPI_KEYVAL_INVALID, "Keyval_free left %d", kdup);
    int rc = MPI_Attr_put(MPI_COMM_WORLD, kdup, &a);
    CHECK(ct_class(rc) == MPI_ERR_KEYVAL, "put with MPI_KEYVAL_INVALID: class %d", ct_class(rc));
    CHECK_OK(MPI_Keyval_free(&knull));
    return ct_finish();
}
