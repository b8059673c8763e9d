/* ranks: 2 4 shmpi-only */
/* MPI_Open_port / MPI_Comm_accept / MPI_Comm_connect between the two
 * halves of one job (even and odd world ranks), the port name passed in
 * a message; messages over the intercommunicator, MPI_Intercomm_merge
 * and an allreduce on it, MPI_Comm_disconnect. Then MPI_Comm_join over
 * a connected Unix socket between world ranks 0 and 1. (Debian's MPICH
 * 4.0, ch4:ucx, has no ports: "MPIDI_UCX_get_local_upids: not supported
 * with ucx netmod", so this runs on shmpi only.) */
#define _DEFAULT_SOURCE
#include "common.h"
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int even = rank % 2 == 0;
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, !even, rank, &half);
    int hr, hn;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hn);

    char port[MPI_MAX_PORT_NAME] = "";
    if (rank == 0) {
        CHECK_OK(MPI_Open_port(MPI_INFO_NULL, port));
        MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, 1, 7, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Comm inter;
    if (even)
        CHECK_OK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, &inter));
    else
        CHECK_OK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, half, &inter));
    int flag = 0, rsize = 0;
    MPI_Comm_test_inter(inter, &flag);
    MPI_Comm_remote_size(inter, &rsize);
    CHECK(flag && rsize == n / 2, "an intercommunicator to the other half (%d)", rsize);

    /* Half rank r talks to remote rank r. */
    int out = 1000 * even + hr, in = -1;
    MPI_Sendrecv(&out, 1, MPI_INT, hr, 3, &in, 1, MPI_INT, hr, 3, inter, MPI_STATUS_IGNORE);
    CHECK(in == 1000 * !even + hr, "got %d", in);

    MPI_Comm merged;
    CHECK_OK(MPI_Intercomm_merge(inter, !even, &merged));
    int mr, mn, sum = 0;
    MPI_Comm_rank(merged, &mr);
    MPI_Comm_size(merged, &mn);
    CHECK(mn == n && mr == (even ? hr : hn + hr), "merged rank %d of %d", mr, mn);
    MPI_Allreduce(&mr, &sum, 1, MPI_INT, MPI_SUM, merged);
    CHECK(sum == n * (n - 1) / 2, "allreduce %d", sum);
    CHECK_OK(MPI_Comm_disconnect(&merged));

    /* Disconnect waits for pending communication: a large isend whose
     * receive is posted late is complete when disconnect returns. */
    const int big = 4 << 20;
    char *buf = malloc(big);
    MPI_Request req = MPI_REQUEST_NULL;
    if (even) {
        memset(buf, 'a' + hr, big);
        CHECK_OK(MPI_Isend(buf, big, MPI_CHAR, hr, 9, inter, &req));
    } else {
        usleep(100000);
        CHECK_OK(MPI_Recv(buf, big, MPI_CHAR, hr, 9, inter, MPI_STATUS_IGNORE));
        CHECK(buf[0] == 'a' + hr && buf[big - 1] == 'a' + hr, "the late receive got it");
    }
    CHECK_OK(MPI_Comm_disconnect(&inter));
    if (even) {
        int done = 0;
        CHECK_OK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
        CHECK(done, "the isend completed before disconnect returned");
    }
    free(buf);
    CHECK(inter == MPI_COMM_NULL, "disconnect sets MPI_COMM_NULL");
    if (rank == 0) CHECK_OK(MPI_Close_port(port));

    /* MPI_Comm_join between world ranks 0 and 1 over a Unix socket. */
    if (rank < 2) {
        struct sockaddr_un a;
        memset(&a, 0, sizeof a);
        a.sun_family = AF_UNIX;
        int pid = 0;
        if (rank == 0) pid = (int)getpid();
        MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
        snprintf(a.sun_path, sizeof a.sun_path, "/tmp/shmpi-join-test-%d.sock", pid);
        int fd = -1;
        if (rank == 0) {
            int l = socket(AF_UNIX, SOCK_STREAM, 0);
            unlink(a.sun_path);
            CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0, "bind");
            listen(l, 1);
            MPI_Send(NULL, 0, MPI_BYTE, 1, 8, MPI_COMM_WORLD);
            fd = accept(l, NULL, NULL);
            close(l);
            unlink(a.sun_path);
        } else {
            MPI_Recv(NULL, 0, MPI_BYTE, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            fd = socket(AF_UNIX, SOCK_STREAM, 0);
            CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect");
        }
        MPI_Comm joined;
        CHECK_OK(MPI_Comm_join(fd, &joined));
        int js = 0, jr = 0, v = 10 + rank, w = -1;
        MPI_Comm_remote_size(joined, &js);
        MPI_Comm_size(joined, &jr);
        CHECK(js == 1 && jr == 1, "join gives 1 + 1");
        MPI_Sendrecv(&v, 1, MPI_INT, 0, 4, &w, 1, MPI_INT, 0, 4, joined, MPI_STATUS_IGNORE);
        CHECK(w == 10 + (1 - rank), "joined talk: %d", w);
        CHECK_OK(MPI_Comm_disconnect(&joined));
        close(fd);
    } else {
        int pid;
        MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    MPI_Comm_free(&half);
    return ct_finish();
}
