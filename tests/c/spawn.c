/* ranks: 1 2 shmpi-only */
/* MPI_Comm_spawn of this program (3 children) and MPI_Comm_get_parent in
 * them: messages both ways, MPI_Intercomm_merge, an allreduce that also
 * sums the children's failed checks, MPI_Comm_disconnect. Then
 * MPI_Comm_spawn_multiple of two commands (1 + 2 children, told apart
 * by MPI_APPNUM), and a spawn whose `soft` info key lets it start 2 of
 * 5. (Debian's MPICH 4.0 with ch4:ucx has no dynamic processes, so this
 * runs on shmpi only.) */
#define _DEFAULT_SOURCE
#include "common.h"
#include <unistd.h>

/* A child: answers, merges, reports its own failed checks, disconnects. */
static int child(MPI_Comm parent, const char *mode)
{
    int rank, n, errs = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int *appnum = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    int app = flag ? *appnum : -1;
    if (strcmp(mode, "multi") == 0) {
        /* App 0 has 1 rank, app 1 has 2: world ranks 0 | 1 2. */
        if (app != (rank == 0 ? 0 : 1)) errs++;
    } else if (app != 0) {
        errs++;
    }
    int word = -1;
    MPI_Recv(&word, 1, MPI_INT, 0, 1, parent, MPI_STATUS_IGNORE);
    word = word * 10 + rank;
    MPI_Send(&word, 1, MPI_INT, 0, 2, parent);

    MPI_Comm merged;
    MPI_Intercomm_merge(parent, 1, &merged);
    int sum = 0;
    MPI_Allreduce(&errs, &sum, 1, MPI_INT, MPI_SUM, merged);
    MPI_Comm_disconnect(&merged);
    /* The parent's large isend to child 0, received late, while the
     * parent already waits in MPI_Comm_disconnect. */
    int bad = 0;
    if (rank == 0) {
        const int big = 4 << 20;
        char *buf = malloc(big);
        usleep(100000);
        MPI_Recv(buf, big, MPI_CHAR, 0, 3, parent, MPI_STATUS_IGNORE);
        bad = buf[0] != 'z' || buf[big - 1] != 'z';
        free(buf);
    }
    MPI_Comm_disconnect(&parent);
    MPI_Comm again = MPI_COMM_NULL;
    MPI_Comm_get_parent(&again);
    MPI_Finalize();
    return again == MPI_COMM_NULL && n > 0 && !bad ? 0 : 1;
}

/* The parent side of one spawn of `expect` children. */
static void talk(MPI_Comm inter, int expect, const char *what)
{
    int rank, rsize = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_remote_size(inter, &rsize);
    CHECK(rsize == expect, "%s: %d children, want %d", what, rsize, expect);
    if (rank == 0) {
        for (int c = 0; c < rsize; c++) {
            int w = 7 + c;
            MPI_Send(&w, 1, MPI_INT, c, 1, inter);
        }
        for (int c = 0; c < rsize; c++) {
            int w = -1;
            MPI_Recv(&w, 1, MPI_INT, c, 2, inter, MPI_STATUS_IGNORE);
            CHECK(w == (7 + c) * 10 + c, "%s: child %d answered %d", what, c, w);
        }
    }
    MPI_Comm merged;
    CHECK_OK(MPI_Intercomm_merge(inter, 0, &merged));
    int zero = 0, child_errs = -1;
    MPI_Allreduce(&zero, &child_errs, 1, MPI_INT, MPI_SUM, merged);
    CHECK(child_errs == 0, "%s: the children counted %d failed checks", what, child_errs);
    CHECK_OK(MPI_Comm_disconnect(&merged));
    /* Disconnect waits for pending communication: a large isend to a
     * child that receives it late is complete when disconnect returns. */
    const int big = 4 << 20;
    char *buf = malloc(big);
    MPI_Request req = MPI_REQUEST_NULL;
    if (rank == 0) {
        memset(buf, 'z', big);
        CHECK_OK(MPI_Isend(buf, big, MPI_CHAR, 0, 3, inter, &req));
    }
    CHECK_OK(MPI_Comm_disconnect(&inter));
    if (rank == 0) {
        int done = 0;
        CHECK_OK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
        CHECK(done, "%s: the isend completed before disconnect returned", what);
    }
    free(buf);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) return child(parent, argc > 1 ? argv[1] : "");

    int *usize = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &usize, &flag);
    CHECK(flag && *usize >= 1, "MPI_UNIVERSE_SIZE is set");

    char *args[] = {"plain", NULL};
    int codes[3] = {-1, -1, -1};
    MPI_Comm inter;
    CHECK_OK(MPI_Comm_spawn(argv[0], args, 3, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, codes));
    CHECK(codes[0] == MPI_SUCCESS && codes[2] == MPI_SUCCESS, "errcodes of a full spawn");
    talk(inter, 3, "spawn");

    char *cmds[2] = {argv[0], argv[0]};
    char *multi[] = {"multi", NULL};
    char **argvs[2] = {multi, multi};
    /* The second command asks for 3 but its `soft` allows 1 or 2. */
    int counts[2] = {1, 3};
    MPI_Info infos[2] = {MPI_INFO_NULL, MPI_INFO_NULL};
    MPI_Info_create(&infos[1]);
    MPI_Info_set(infos[1], "soft", "1:2");
    int mcodes[4] = {-1, -1, -1, -1};
    CHECK_OK(MPI_Comm_spawn_multiple(2, cmds, argvs, counts, infos, 0, MPI_COMM_WORLD, &inter,
                                     mcodes));
    MPI_Info_free(&infos[1]);
    int me = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (me == 0)
        CHECK(mcodes[0] == MPI_SUCCESS && mcodes[1] == MPI_SUCCESS && mcodes[2] == MPI_SUCCESS &&
                  mcodes[3] == MPI_ERR_SPAWN,
              "spawn_multiple errcodes per command: %d %d %d %d", mcodes[0], mcodes[1],
              mcodes[2], mcodes[3]);
    talk(inter, 3, "spawn_multiple");

    MPI_Info soft;
    MPI_Info_create(&soft);
    MPI_Info_set(soft, "soft", "1:2");
    int five[5] = {-1, -1, -1, -1, -1};
    CHECK_OK(MPI_Comm_spawn(argv[0], args, 5, soft, 0, MPI_COMM_WORLD, &inter, five));
    MPI_Info_free(&soft);
    CHECK(five[1] == MPI_SUCCESS && five[2] != MPI_SUCCESS, "soft: 2 of 5 started");
    talk(inter, 2, "soft spawn");
    return ct_finish();
}
