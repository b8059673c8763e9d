/* ranks: 1 2 4 */
/* Communicator attributes with user callbacks: MPI_Comm_create_keyval with a
 * copy and a delete function that count their calls and record their
 * arguments (comm, keyval, extra_state, values). MPI_Comm_dup calls the copy
 * function and the dup gets the value it produces (or no attribute when it
 * sets flag = 0); replacing a value, MPI_Comm_delete_attr and MPI_Comm_free
 * call the delete function with the old value; MPI_Comm_free_keyval sets
 * MPI_KEYVAL_INVALID, and attributes already set with a freed keyval are
 * still deleted (callback called) when their communicator is freed. */
#include "common.h"

struct state {
    int copies, deletes;
    int copy_flag;          /* what the copy function puts in *flag */
    MPI_Comm copy_comm, delete_comm;
    int copy_keyval, delete_keyval;
    void *copy_in, *deleted;
};

static int vals[8];

/* Copy: the new value is the next element of vals[]. */
static int copy_fn(MPI_Comm oldcomm, int keyval, void *extra, void *in, void *out, int *flag)
{
    struct state *s = extra;
    s->copies++;
    s->copy_comm = oldcomm;
    s->copy_keyval = keyval;
    s->copy_in = in;
    if (s->copy_flag) {
        *(void **)out = (int *)in + 1;
        *flag = 1;
    } else {
        *flag = 0;
    }
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm comm, int keyval, void *value, void *extra)
{
    struct state *s = extra;
    s->deletes++;
    s->delete_comm = comm;
    s->delete_keyval = keyval;
    s->deleted = value;
    return MPI_SUCCESS;
}

static void *get(MPI_Comm comm, int keyval, int *flag)
{
    void *v = NULL;
    *flag = -1;
    CHECK_OK(MPI_Comm_get_attr(comm, keyval, &v, flag));
    return v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct state s;
    memset(&s, 0, sizeof s);
    s.copy_flag = 1;
    int flag;

    int key = MPI_KEYVAL_INVALID;
    CHECK_OK(MPI_Comm_create_keyval(copy_fn, delete_fn, &key, &s));
    CHECK(key != MPI_KEYVAL_INVALID, "create_keyval gave MPI_KEYVAL_INVALID");

    MPI_Comm c1, c2, c3;
    CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c1));

    /* Absent before set. */
    (void)get(c1, key, &flag);
    CHECK(flag == 0, "attribute present before set");

    CHECK_OK(MPI_Comm_set_attr(c1, key, &vals[0]));
    void *v = get(c1, key, &flag);
    CHECK(flag != 0 && v == &vals[0], "get after set: flag %d", flag);
    CHECK(s.copies == 0 && s.deletes == 0, "callbacks ran on set: %d copies %d deletes",
          s.copies, s.deletes);

    /* Replacing the value deletes the old one first. */
    CHECK_OK(MPI_Comm_set_attr(c1, key, &vals[2]));
    CHECK(s.deletes == 1, "replacing a value: %d deletes, expected 1", s.deletes);
    CHECK(s.deleted == &vals[0] && s.delete_comm == c1 && s.delete_keyval == key,
          "replace: delete callback got wrong arguments");
    v = get(c1, key, &flag);
    CHECK(flag != 0 && v == &vals[2], "value after replace is wrong");

    /* Dup calls the copy function; the dup holds the copied value. */
    CHECK_OK(MPI_Comm_dup(c1, &c2));
    CHECK(s.copies == 1, "dup: %d copies, expected 1", s.copies);
    CHECK(s.copy_comm == c1 && s.copy_keyval == key && s.copy_in == &vals[2],
          "copy callback got wrong arguments");
    v = get(c2, key, &flag);
    CHECK(flag != 0 && v == &vals[3], "dup holds the wrong value (flag %d)", flag);
    v = get(c1, key, &flag);
    CHECK(flag != 0 && v == &vals[2], "dup changed the original's value");
    CHECK(s.deletes == 1, "dup called delete (%d deletes)", s.deletes);

    /* Copy function that answers flag = 0: the dup has no attribute. */
    s.copy_flag = 0;
    CHECK_OK(MPI_Comm_dup(c1, &c3));
    CHECK(s.copies == 2, "second dup: %d copies, expected 2", s.copies);
    (void)get(c3, key, &flag);
    CHECK(flag == 0, "copy answered flag=0 but the dup has the attribute");
    s.copy_flag = 1;

    /* Delete_attr calls delete with the dup's value. */
    CHECK_OK(MPI_Comm_delete_attr(c2, key));
    CHECK(s.deletes == 2, "delete_attr: %d deletes, expected 2", s.deletes);
    CHECK(s.deleted == &vals[3] && s.delete_comm == c2 && s.delete_keyval == key,
          "delete_attr: delete callback got wrong arguments");
    (void)get(c2, key, &flag);
    CHECK(flag == 0, "attribute present after delete_attr");

    /* Freeing a comm without the attribute calls nothing. */
    CHECK_OK(MPI_Comm_free(&c2));
    CHECK_OK(MPI_Comm_free(&c3));
    CHECK(s.deletes == 2, "freeing comms without the attribute: %d deletes", s.deletes);

    /* Freeing the comm with the attribute calls delete. */
    MPI_Comm c1_handle = c1;
    CHECK_OK(MPI_Comm_free(&c1));
    CHECK(c1 == MPI_COMM_NULL, "MPI_Comm_free did not set MPI_COMM_NULL");
    CHECK(s.deletes == 3, "comm free: %d deletes, expected 3", s.deletes);
    CHECK(s.deleted == &vals[2] && s.delete_comm == c1_handle,
          "comm free: delete callback got wrong arguments");

    CHECK_OK(MPI_Comm_free_keyval(&key));
    CHECK(key == MPI_KEYVAL_INVALID, "free_keyval did not set MPI_KEYVAL_INVALID");

    /* A keyval freed while in use: the attribute still works and is deleted
     * when the communicator goes. */
    struct state t;
    memset(&t, 0, sizeof t);
    t.copy_flag = 1;
    int key2 = MPI_KEYVAL_INVALID;
    MPI_Comm d;
    CHECK_OK(MPI_Comm_create_keyval(copy_fn, delete_fn, &key2, &t));
    CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    CHECK_OK(MPI_Comm_set_attr(d, key2, &vals[5]));
    int key2_saved = key2;
    CHECK_OK(MPI_Comm_free_keyval(&key2));
    CHECK(key2 == MPI_KEYVAL_INVALID, "free_keyval did not set MPI_KEYVAL_INVALID");
    CHECK(t.deletes == 0, "free_keyval called delete");
    v = get(d, key2_saved, &flag);
    CHECK(flag != 0 && v == &vals[5], "attribute lost after its keyval was freed");
    CHECK_OK(MPI_Comm_free(&d));
    CHECK(t.deletes == 1 && t.deleted == &vals[5],
          "comm free after keyval free: %d deletes", t.deletes);

    /* Two keyvals on one comm are independent. */
    struct state a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.copy_flag = b.copy_flag = 1;
    int ka, kb;
    MPI_Comm e, e2;
    CHECK_OK(MPI_Comm_create_keyval(copy_fn, delete_fn, &ka, &a));
    CHECK_OK(MPI_Comm_create_keyval(copy_fn, delete_fn, &kb, &b));
    CHECK(ka != kb, "two keyvals are equal");
    CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &e));
    CHECK_OK(MPI_Comm_set_attr(e, ka, &vals[0]));
    CHECK_OK(MPI_Comm_set_attr(e, kb, &vals[4]));
    CHECK_OK(MPI_Comm_dup(e, &e2));
    CHECK(a.copies == 1 && b.copies == 1, "dup with two attributes: %d and %d copies",
          a.copies, b.copies);
    v = get(e2, ka, &flag);
    CHECK(flag && v == &vals[1], "dup: first attribute wrong");
    v = get(e2, kb, &flag);
    CHECK(flag && v == &vals[5], "dup: second attribute wrong");
    CHECK_OK(MPI_Comm_delete_attr(e, ka));
    CHECK(a.deletes == 1 && b.deletes == 0, "delete_attr of one key: %d and %d deletes",
          a.deletes, b.deletes);
    v = get(e, kb, &flag);
    CHECK(flag && v == &vals[4], "other attribute lost by delete_attr");
    CHECK_OK(MPI_Comm_free(&e));
    CHECK_OK(MPI_Comm_free(&e2));
    CHECK(a.deletes == 2 && b.deletes == 2, "after frees: %d and %d deletes", a.deletes,
          b.deletes);
    CHECK_OK(MPI_Comm_free_keyval(&ka));
    CHECK_OK(MPI_Comm_free_keyval(&kb));

    return ct_finish();
}
