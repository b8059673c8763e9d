/* ranks: 2 3 4 */
/* MPI_Win_create over memory the ranks bring: ordinary heap memory
 * (reached by the peers with process_vm_readv/writev on shmpi) and
 * MPI_Alloc_mem memory (reached through the shared pool). Fence and
 * passive-target epochs, contiguous and strided target datatypes,
 * accumulate / fetch_and_op / compare_and_swap counters, the window
 * attributes, a window error handler from MPI_Win_create_errhandler, and
 * MPI_Win_allocate_shared with alloc_shared_noncontig. */
#include "common.h"

static int handled = 0;
static MPI_Win handled_win = MPI_WIN_NULL;
static int handled_code = 0;

static void on_error(MPI_Win *win, int *code, ...)
{
    handled++;
    handled_win = *win;
    handled_code = *code;
}

/* Everything on one window whose local memory is `mem` (n + 3n + 1
 * ints: a row written by every rank, a strided area, a counter). */
static void exercise(int *mem, MPI_Win win, int rank, int n, const char *what)
{
    int *row = mem, *strided = mem + n, *counter = mem + 4 * n;
    for (int i = 0; i < 4 * n + 1; i++) mem[i] = -1;
    counter[0] = 0;
    MPI_Barrier(MPI_COMM_WORLD);

    /* Fence: every rank writes its rank into slot `rank` of every row. */
    CHECK_OK(MPI_Win_fence(0, win));
    for (int t = 0; t < n; t++)
        CHECK_OK(MPI_Put(&rank, 1, MPI_INT, t, rank, 1, MPI_INT, win));
    CHECK_OK(MPI_Win_fence(0, win));
    for (int i = 0; i < n; i++)
        CHECK(row[i] == i, "%s: row[%d] = %d after the fence", what, i, row[i]);

    /* A strided target: 3 ints, every other slot of the right
     * neighbour's strided area, from offset `rank` (origin contiguous). */
    MPI_Datatype every_other;
    MPI_Type_vector(3, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int right = (rank + 1) % n, left = (rank + n - 1) % n;
    int three[3] = {100 * rank + 1, 100 * rank + 2, 100 * rank + 3};
    CHECK_OK(MPI_Win_fence(0, win));
    CHECK_OK(MPI_Put(three, 3, MPI_INT, right, n, 1, every_other, win));
    CHECK_OK(MPI_Win_fence(0, win));
    for (int k = 0; k < 3; k++)
        CHECK(strided[2 * k] == 100 * left + k + 1, "%s: strided[%d] = %d", what, 2 * k,
              strided[2 * k]);
    CHECK(strided[1] == -1 && strided[3] == -1, "%s: the gaps are untouched", what);

    /* A strided get back from the left neighbour's memory. */
    int back[3] = {0, 0, 0};
    CHECK_OK(MPI_Win_fence(0, win));
    CHECK_OK(MPI_Get(back, 3, MPI_INT, right, n, 1, every_other, win));
    CHECK_OK(MPI_Win_fence(0, win));
    for (int k = 0; k < 3; k++)
        CHECK(back[k] == 100 * rank + k + 1, "%s: got back[%d] = %d", what, k, back[k]);
    MPI_Type_free(&every_other);
    CHECK_OK(MPI_Win_fence(0, win));

    /* Passive target: counters on rank 0. */
    const int rounds = 50;
    for (int i = 0; i < rounds; i++) {
        int one = 1, old = -1;
        CHECK_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK_OK(MPI_Accumulate(&one, 1, MPI_INT, 0, 4 * n, 1, MPI_INT, MPI_SUM, win));
        CHECK_OK(MPI_Fetch_and_op(&one, &old, MPI_INT, 0, 4 * n, MPI_SUM, win));
        CHECK_OK(MPI_Win_unlock(0, win));
        CHECK(old >= 1, "%s: fetch_and_op saw %d", what, old);
    }
    /* A compare-and-swap lock on rank 0's slot 0 of the strided area
     * (set to 0 first): each rank takes it once. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CHECK_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        int zero = 0;
        CHECK_OK(MPI_Put(&zero, 1, MPI_INT, 0, n, 1, MPI_INT, win));
        CHECK_OK(MPI_Win_unlock(0, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int got_it = 0;
    for (int tries = 0; tries < 1000000 && !got_it; tries++) {
        int mine = rank + 1, zero = 0, seen = -1;
        CHECK_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK_OK(MPI_Compare_and_swap(&mine, &zero, &seen, MPI_INT, 0, n, win));
        CHECK_OK(MPI_Win_unlock(0, win));
        if (seen == 0) {
            got_it = 1;
            CHECK_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
            CHECK_OK(MPI_Compare_and_swap(&zero, &mine, &seen, MPI_INT, 0, n, win));
            CHECK_OK(MPI_Win_unlock(0, win));
            CHECK(seen == mine, "%s: the CAS lock held %d, not %d", what, seen, mine);
        }
    }
    CHECK(got_it, "%s: never took the CAS lock", what);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CHECK_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        int total = -1;
        CHECK_OK(MPI_Get(&total, 1, MPI_INT, 0, 4 * n, 1, MPI_INT, win));
        CHECK_OK(MPI_Win_unlock(0, win));
        CHECK(total == 2 * rounds * n, "%s: counter %d, want %d", what, total, 2 * rounds * n);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    size_t bytes = (4 * (size_t)n + 1) * sizeof(int);

    /* Heap memory, an odd size so the window is not page-shaped. The
     * peers reach it with process_vm_readv/writev: where the kernel
     * refuses those (a seccomp filter, Yama's ptrace_scope 2 or 3),
     * MPI_Win_create refuses heap memory on every rank with
     * MPI_ERR_UNSUPPORTED_OPERATION (docs/errors.md), and only the
     * alloc_mem window below runs. */
    int *heap = malloc(bytes + 3);
    MPI_Win win;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Win_create(heap, (MPI_Aint)bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                            &win);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    if (rc == MPI_SUCCESS) {
        int flag = 0;
        int *flavor = NULL;
        void *base = NULL;
        MPI_Aint *size = NULL;
        CHECK_OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
        CHECK(flag && *flavor == MPI_WIN_FLAVOR_CREATE, "create flavor");
        CHECK_OK(MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag));
        CHECK(flag && base == heap, "MPI_WIN_BASE is the memory given");
        CHECK_OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &size, &flag));
        CHECK(flag && *size == (MPI_Aint)bytes, "MPI_WIN_SIZE");
        exercise(heap, win, rank, n, "heap");
        CHECK_OK(MPI_Win_free(&win));
    } else {
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION, "a heap window refused with class %d", cls);
        if (rank == 0) fprintf(stderr, "heap window refused: no single copy here\n");
    }
    free(heap);

    /* Memory from MPI_Alloc_mem. */
    int *shared = NULL;
    CHECK_OK(MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &shared));
    CHECK_OK(MPI_Win_create(shared, (MPI_Aint)bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                            &win));
    exercise(shared, win, rank, n, "alloc_mem");

    /* A window error handler: called with the window and the code. */
    MPI_Errhandler eh, got;
    CHECK_OK(MPI_Win_create_errhandler(on_error, &eh));
    CHECK_OK(MPI_Win_set_errhandler(win, eh));
    CHECK_OK(MPI_Win_get_errhandler(win, &got));
    CHECK(got == eh, "MPI_Win_get_errhandler gives the handler set");
    MPI_Errhandler_free(&got);
    CHECK_OK(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    CHECK(handled == 1 && handled_win == win && handled_code == MPI_ERR_OTHER,
          "the handler ran once with the window and the code (%d)", handled);
    MPI_Errhandler_free(&eh);
    CHECK_OK(MPI_Win_free(&win));
    MPI_Free_mem(shared);

    /* alloc_shared_noncontig: each part its own; everyone's is reachable
     * by loads and stores after shared_query. */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int *part = NULL;
    CHECK_OK(MPI_Win_allocate_shared(100 * sizeof(int), sizeof(int), info, node, &part, &win));
    MPI_Info_free(&info);
    CHECK_OK(MPI_Win_lock_all(0, win));
    for (int i = 0; i < 100; i++) part[i] = rank * 1000 + i;
    CHECK_OK(MPI_Win_sync(win));
    MPI_Barrier(node);
    CHECK_OK(MPI_Win_sync(win));
    for (int r = 0; r < n; r++) {
        MPI_Aint sz = 0;
        int unit = 0;
        int *p = NULL;
        CHECK_OK(MPI_Win_shared_query(win, r, &sz, &unit, &p));
        CHECK(sz == 100 * (MPI_Aint)sizeof(int) && unit == (int)sizeof(int), "query %d", r);
        CHECK(p && p[0] == r * 1000 && p[99] == r * 1000 + 99, "rank %d's part by load", r);
    }
    CHECK_OK(MPI_Win_unlock_all(win));
    CHECK_OK(MPI_Win_free(&win));
    MPI_Comm_free(&node);
    return ct_finish();
}
