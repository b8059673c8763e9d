/* ranks: 1 2 8 */
/* Predefined attribute functions and attributes. A keyval made with
 * MPI_COMM_DUP_FN is copied (same pointer) by MPI_Comm_dup and
 * MPI_Comm_idup; one made with MPI_COMM_NULL_COPY_FN is not; with
 * MPI_COMM_NULL_DELETE_FN deletion leaves the value alone. Predefined
 * attributes on MPI_COMM_WORLD: MPI_TAG_UB present and >= 32767 (and a
 * message with tag MPI_TAG_UB goes through), MPI_HOST in {MPI_PROC_NULL,
 * 0..size-1}, MPI_IO in {MPI_ANY_SOURCE, MPI_PROC_NULL, 0..size-1},
 * MPI_WTIME_IS_GLOBAL 0 or 1 and equal on all ranks, MPI_UNIVERSE_SIZE (if
 * present) >= size, MPI_APPNUM (if present) >= 0. */
#include "common.h"

static int *int_attr(int keyval, int *flag)
{
    int *p = NULL;
    *flag = -1;
    CHECK_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, keyval, &p, flag));
    return p;
}

int main(int argc, char **argv)
{
    int rank, size, flag;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* ---- MPI_COMM_DUP_FN / MPI_COMM_NULL_COPY_FN ---- */
    static int x = 11, y = 22, z = 33;
    int kdup, knull;
    CHECK_OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kdup, NULL));
    CHECK_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &knull,
                                    NULL));
    CHECK(kdup != knull, "two keyvals are equal");

    MPI_Comm c, d, e, f;
    CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    CHECK_OK(MPI_Comm_set_attr(c, kdup, &x));
    CHECK_OK(MPI_Comm_set_attr(c, knull, &y));
    CHECK_OK(MPI_Comm_dup(c, &d));

    void *v = NULL;
    CHECK_OK(MPI_Comm_get_attr(d, kdup, &v, &flag));
    CHECK(flag && v == &x, "MPI_COMM_DUP_FN: dup has flag %d", flag);
    CHECK_OK(MPI_Comm_get_attr(d, knull, &v, &flag));
    CHECK(flag == 0, "MPI_COMM_NULL_COPY_FN: attribute was copied");
    CHECK_OK(MPI_Comm_get_attr(c, knull, &v, &flag));
    CHECK(flag && v == &y, "original lost its MPI_COMM_NULL_COPY_FN attribute");

    /* Dup of the dup keeps copying. */
    CHECK_OK(MPI_Comm_dup(d, &e));
    CHECK_OK(MPI_Comm_get_attr(e, kdup, &v, &flag));
    CHECK(flag && v == &x, "second-generation dup lost the attribute");

    /* MPI_Comm_idup copies attributes too. */
    MPI_Request req;
    CHECK_OK(MPI_Comm_idup(c, &f, &req));
    CHECK_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(req == MPI_REQUEST_NULL, "MPI_Wait did not free the idup request");
    CHECK_OK(MPI_Comm_get_attr(f, kdup, &v, &flag));
    CHECK(flag && v == &x, "MPI_Comm_idup: MPI_COMM_DUP_FN attribute not copied");
    CHECK_OK(MPI_Comm_get_attr(f, knull, &v, &flag));
    CHECK(flag == 0, "MPI_Comm_idup: MPI_COMM_NULL_COPY_FN attribute copied");

    /* Deleting with MPI_COMM_NULL_DELETE_FN leaves the value and other comms. */
    CHECK_OK(MPI_Comm_set_attr(d, kdup, &z));
    CHECK_OK(MPI_Comm_delete_attr(d, kdup));
    CHECK_OK(MPI_Comm_get_attr(d, kdup, &v, &flag));
    CHECK(flag == 0, "attribute present after delete_attr");
    CHECK_OK(MPI_Comm_get_attr(c, kdup, &v, &flag));
    CHECK(flag && v == &x, "delete on the dup removed the original's attribute");
    CHECK(x == 11 && y == 22 && z == 33, "attribute values were modified");

    /* A user attribute on MPI_COMM_WORLD is copied to its dups as well. */
    CHECK_OK(MPI_Comm_set_attr(MPI_COMM_WORLD, kdup, &z));
    MPI_Comm w;
    CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &w));
    CHECK_OK(MPI_Comm_get_attr(w, kdup, &v, &flag));
    CHECK(flag && v == &z, "attribute on MPI_COMM_WORLD not copied to its dup");
    CHECK_OK(MPI_Comm_delete_attr(MPI_COMM_WORLD, kdup));

    CHECK_OK(MPI_Comm_free(&w));
    CHECK_OK(MPI_Comm_free(&f));
    CHECK_OK(MPI_Comm_free(&e));
    CHECK_OK(MPI_Comm_free(&d));
    CHECK_OK(MPI_Comm_free(&c));
    CHECK_OK(MPI_Comm_free_keyval(&kdup));
    CHECK_OK(MPI_Comm_free_keyval(&knull));
    CHECK(kdup == MPI_KEYVAL_INVALID && knull == MPI_KEYVAL_INVALID,
          "free_keyval did not set MPI_KEYVAL_INVALID");

    /* ---- Predefined attributes of MPI_COMM_WORLD ---- */
    int *p = int_attr(MPI_TAG_UB, &flag);
    CHECK(flag != 0 && p != NULL, "MPI_TAG_UB absent");
    int tag_ub = (flag && p) ? *p : 32767;
    CHECK(tag_ub >= 32767, "MPI_TAG_UB = %d < 32767", tag_ub);

    /* The largest tag is usable. */
    {
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        int out = 1000 + rank, in = -1;
        MPI_Status st;
        CHECK_OK(MPI_Sendrecv(&out, 1, MPI_INT, next, tag_ub, &in, 1, MPI_INT, prev, tag_ub,
                              MPI_COMM_WORLD, &st));
        CHECK(in == 1000 + prev, "message with tag MPI_TAG_UB carried %d", in);
        CHECK(st.MPI_TAG == tag_ub, "status tag %d, expected MPI_TAG_UB %d", st.MPI_TAG, tag_ub);
    }

    p = int_attr(MPI_HOST, &flag);
    CHECK(flag != 0 && p != NULL, "MPI_HOST absent");
    if (flag && p)
        CHECK(*p == MPI_PROC_NULL || (*p >= 0 && *p < size), "MPI_HOST = %d", *p);

    p = int_attr(MPI_IO, &flag);
    CHECK(flag != 0 && p != NULL, "MPI_IO absent");
    if (flag && p)
        CHECK(*p == MPI_ANY_SOURCE || *p == MPI_PROC_NULL || (*p >= 0 && *p < size),
              "MPI_IO = %d", *p);

    p = int_attr(MPI_WTIME_IS_GLOBAL, &flag);
    CHECK(flag != 0 && p != NULL, "MPI_WTIME_IS_GLOBAL absent");
    {
        int g = (flag && p) ? *p : 0;
        CHECK(g == 0 || g == 1, "MPI_WTIME_IS_GLOBAL = %d", g);
        int mm[2] = {g, -g}, red[2];
        CHECK_OK(MPI_Allreduce(mm, red, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
        CHECK(red[0] == -red[1], "MPI_WTIME_IS_GLOBAL differs between ranks (%d..%d)", red[0],
              -red[1]);
    }

    p = int_attr(MPI_UNIVERSE_SIZE, &flag);
    CHECK(flag == 0 || p != NULL, "MPI_UNIVERSE_SIZE present with NULL value");
    if (flag && p)
        CHECK(*p >= size, "MPI_UNIVERSE_SIZE = %d < size %d", *p, size);

    p = int_attr(MPI_APPNUM, &flag);
    CHECK(flag == 0 || p != NULL, "MPI_APPNUM present with NULL value");
    if (flag && p)
        CHECK(*p >= 0, "MPI_APPNUM = %d", *p);

    return ct_finish();
}
