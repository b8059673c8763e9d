/* ranks: 1 2 */
/* Datatype and window attributes (MPI 4.1 §7.7.4-5):
 * - MPI_Type_create_keyval with a copy and a delete function that count
 *   their calls and record the handle they get; set / get / replace /
 *   delete on a derived type and on MPI_INT; MPI_Type_dup copies through
 *   the copy function (and MPI_TYPE_DUP_FN / MPI_TYPE_NULL_COPY_FN keys
 *   copy / do not); MPI_Type_free runs the delete function with the
 *   handle still the type's; a copy function that fails fails the dup,
 *   and the copies made before it are deleted again;
 * - MPI_Win_create_keyval: set / get / delete on a window beside the
 *   predefined keys (still answered), MPI_Win_free runs the delete
 *   function; a predefined key cannot be set;
 * - a key of one kind is MPI_ERR_KEYVAL on another kind. */
#include "common.h"

static int copies, deletes, fail_copy;
static MPI_Datatype copy_seen, delete_seen;
static void *deleted_val;

static int tcopy(MPI_Datatype old, int k, void *extra, void *in, void *out, int *flag)
{
    (void)k;
    (void)extra;
    copies++;
    copy_seen = old;
    if (fail_copy) return MPI_ERR_OTHER;
    *(void **)out = (char *)in + 1; /* the copy's value: one past */
    *flag = 1;
    return MPI_SUCCESS;
}

static int tdelete(MPI_Datatype t, int k, void *val, void *extra)
{
    (void)k;
    (void)extra;
    deletes++;
    delete_seen = t;
    deleted_val = val;
    /* The handle is still the type's while its attributes go. */
    int size = -1;
    MPI_Type_size(t, &size);
    CHECK(size == 8, "the delete callback sees a type of size %d", size);
    return MPI_SUCCESS;
}

/* A copy that succeeds, and its delete, for the failed dup's clean-up. */
static int okdeletes;
static MPI_Datatype okdelete_seen;
static int okcopy(MPI_Datatype old, int k, void *extra, void *in, void *out, int *flag)
{
    (void)old;
    (void)k;
    (void)extra;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}
static int okdelete(MPI_Datatype t, int k, void *val, void *extra)
{
    (void)k;
    (void)val;
    (void)extra;
    okdeletes++;
    okdelete_seen = t;
    return MPI_SUCCESS;
}

static int wdeletes;
static int wdelete(MPI_Win w, int k, void *val, void *extra)
{
    (void)w;
    (void)k;
    (void)val;
    (void)extra;
    wdeletes++;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    static char vals[16];
    int k, kdup, knull, flag = 0;
    void *got = NULL;
    CHECK_OK(MPI_Type_create_keyval(tcopy, tdelete, &k, NULL));
    CHECK_OK(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &kdup, NULL));
    CHECK_OK(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &knull,
                                    NULL));

    MPI_Datatype pair;
    CHECK_OK(MPI_Type_contiguous(2, MPI_INT, &pair));
    CHECK_OK(MPI_Type_get_attr(pair, k, &got, &flag));
    CHECK(!flag, "a new type has an attribute");
    CHECK_OK(MPI_Type_set_attr(pair, k, &vals[0]));
    CHECK_OK(MPI_Type_set_attr(pair, kdup, &vals[5]));
    CHECK_OK(MPI_Type_set_attr(pair, knull, &vals[6]));
    CHECK_OK(MPI_Type_get_attr(pair, k, &got, &flag));
    CHECK(flag && got == &vals[0], "get: flag %d", flag);
    CHECK_OK(MPI_Type_set_attr(pair, k, &vals[2])); /* replaces: deletes &vals[0] */
    CHECK(deletes == 1 && deleted_val == &vals[0] && delete_seen == pair,
          "replace: %d deletes", deletes);

    /* Dup: the copy function's value, MPI_TYPE_DUP_FN's, none for null. */
    MPI_Datatype d;
    CHECK_OK(MPI_Type_dup(pair, &d));
    CHECK(copies == 1 && copy_seen == pair, "dup: %d copies", copies);
    CHECK_OK(MPI_Type_get_attr(d, k, &got, &flag));
    CHECK(flag && got == &vals[3], "dup's value: flag %d", flag);
    CHECK_OK(MPI_Type_get_attr(d, kdup, &got, &flag));
    CHECK(flag && got == &vals[5], "MPI_TYPE_DUP_FN's value: flag %d", flag);
    CHECK_OK(MPI_Type_get_attr(d, knull, &got, &flag));
    CHECK(!flag, "an MPI_TYPE_NULL_COPY_FN attribute was copied");
    /* The original keeps its own. */
    CHECK_OK(MPI_Type_get_attr(pair, k, &got, &flag));
    CHECK(flag && got == &vals[2], "the original's value changed");

    /* A failing copy function fails the dup. */
    fail_copy = 1;
    MPI_Datatype bad = MPI_DATATYPE_NULL;
    int rc = MPI_Type_dup(pair, &bad);
    CHECK(rc != MPI_SUCCESS && bad == MPI_DATATYPE_NULL, "a failed copy: rc %d", rc);
    fail_copy = 0;

    /* Delete, then free runs the delete function for what is left. */
    CHECK_OK(MPI_Type_delete_attr(pair, k));
    CHECK(deletes == 2 && deleted_val == &vals[2], "delete_attr: %d deletes", deletes);
#ifdef SHMPI_MPI_H
    /* Deleting an attribute the type does not have is an error here, as
     * for a communicator (MPICH 4.0 returns success). */
    rc = MPI_Type_delete_attr(pair, k);
    CHECK(ct_class(rc) == MPI_ERR_KEYVAL, "deleting twice: class %d", ct_class(rc));
#endif
    MPI_Datatype dd = d;
    CHECK_OK(MPI_Type_free(&d));
    CHECK(deletes == 3 && deleted_val == &vals[3] && delete_seen == dd,
          "free of the dup: %d deletes", deletes);
    CHECK_OK(MPI_Type_free(&pair));
    CHECK(deletes == 3, "free of a type without a callback attribute: %d deletes", deletes);

    /* A dup whose second copy fails deletes what the first made. */
    {
        int kok;
        MPI_Datatype t2, t3 = MPI_DATATYPE_NULL;
        CHECK_OK(MPI_Type_create_keyval(okcopy, okdelete, &kok, NULL));
        CHECK_OK(MPI_Type_contiguous(2, MPI_INT, &t2));
        CHECK_OK(MPI_Type_set_attr(t2, kok, &vals[11]));
        CHECK_OK(MPI_Type_set_attr(t2, k, &vals[12]));
        int before = deletes;
        fail_copy = 1;
        rc = MPI_Type_dup(t2, &t3);
        fail_copy = 0;
        CHECK(rc != MPI_SUCCESS && t3 == MPI_DATATYPE_NULL, "the failed dup: rc %d", rc);
        CHECK(okdeletes == 1 && okdelete_seen != t2,
              "the first copy of a failed dup was not deleted on the new type: %d", okdeletes);
        CHECK_OK(MPI_Type_free(&t2));
        CHECK(okdeletes == 2 && deletes == before + 1, "freeing t2: %d %d", okdeletes,
              deletes - before);
        CHECK_OK(MPI_Type_free_keyval(&kok));
    }

    /* A predefined type may carry attributes too. */
    CHECK_OK(MPI_Type_set_attr(MPI_INT, kdup, &vals[7]));
    CHECK_OK(MPI_Type_get_attr(MPI_INT, kdup, &got, &flag));
    CHECK(flag && got == &vals[7], "MPI_INT's attribute: flag %d", flag);
    CHECK_OK(MPI_Type_delete_attr(MPI_INT, kdup));

    /* Windows. */
    int wk;
    CHECK_OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, wdelete, &wk, NULL));
    int *mem;
    MPI_Win w;
    CHECK_OK(MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                              &w));
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    CHECK_OK(MPI_Win_set_attr(w, wk, &vals[9]));
    CHECK_OK(MPI_Win_get_attr(w, wk, &got, &flag));
    CHECK(flag && got == &vals[9], "window attribute: flag %d", flag);
    void *base = NULL;
    CHECK_OK(MPI_Win_get_attr(w, MPI_WIN_BASE, &base, &flag));
    CHECK(flag && base == mem, "MPI_WIN_BASE beside a user key: flag %d", flag);
    rc = MPI_Win_set_attr(w, MPI_WIN_SIZE, &vals[0]);
    CHECK(rc != MPI_SUCCESS, "a predefined window key was set");
    CHECK_OK(MPI_Win_delete_attr(w, wk));
    CHECK(wdeletes == 1, "win delete_attr: %d", wdeletes);
    CHECK_OK(MPI_Win_set_attr(w, wk, &vals[10]));
    CHECK_OK(MPI_Win_free(&w));
    CHECK(wdeletes == 2, "win free: %d deletes", wdeletes);

    /* Kinds do not mix. */
    rc = MPI_Comm_set_attr(MPI_COMM_WORLD, k, &vals[0]);
    CHECK(ct_class(rc) == MPI_ERR_KEYVAL, "a type key on a communicator: class %d",
          ct_class(rc));
    int ck;
    CHECK_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &ck, NULL));
    rc = MPI_Type_set_attr(MPI_INT, ck, &vals[0]);
    CHECK(ct_class(rc) == MPI_ERR_KEYVAL, "a communicator key on a type: class %d",
          ct_class(rc));
    CHECK_OK(MPI_Comm_free_keyval(&ck));

    CHECK_OK(MPI_Type_free_keyval(&k));
    CHECK(k == MPI_KEYVAL_INVALID, "type_free_keyval left %d", k);
    CHECK_OK(MPI_Type_free_keyval(&kdup));
    CHECK_OK(MPI_Type_free_keyval(&knull));
    CHECK_OK(MPI_Win_free_keyval(&wk));
    return ct_finish();
}
