/* ranks: 1 2 */
/* MPI_Cancel: a posted receive that never matches (specific source and
 * ANY_SOURCE, blocking Wait and Test loop, persistent receive) is cancelled
 * (MPI_Test_cancelled true) and leaves its buffer untouched; a message sent
 * afterwards with that tag goes to a new receive; a restarted persistent
 * receive works after its cancelled start. Cancelling a send that the
 * receiver has already received (it said so) must fail: Test_cancelled is
 * false. A normally completed receive is not cancelled. Cancelling a
 * completed-but-not-waited receive also leaves it not cancelled. */
#include "common.h"

int main(int argc, char **argv)
{
    int rank, size, flag;
    MPI_Status st;
    MPI_Request req;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = size > 1 ? 1 - rank : 0; /* with 1 rank, oneself */

    /* 1. Receive from a specific rank with a tag nobody uses. */
    int buf[4] = {-5, -5, -5, -5};
    CHECK_OK(MPI_Irecv(buf, 4, MPI_INT, peer, 1000, MPI_COMM_WORLD, &req));
    CHECK_OK(MPI_Cancel(&req));
    CHECK_OK(MPI_Wait(&req, &st));
    CHECK(req == MPI_REQUEST_NULL, "Wait on a cancelled receive did not free it");
    flag = 0;
    CHECK_OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "unmatched receive (specific source) not cancelled");
    CHECK(buf[0] == -5 && buf[3] == -5, "cancelled receive wrote its buffer");

    /* 2. ANY_SOURCE receive, completed by a Test loop after the cancel. */
    CHECK_OK(MPI_Irecv(buf, 4, MPI_INT, MPI_ANY_SOURCE, 1001, MPI_COMM_WORLD, &req));
    CHECK_OK(MPI_Cancel(&req));
    flag = 0;
    while (!flag) CHECK_OK(MPI_Test(&req, &flag, &st));
    flag = 0;
    CHECK_OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "unmatched ANY_SOURCE receive not cancelled");
    CHECK(buf[0] == -5, "cancelled ANY_SOURCE receive wrote its buffer");

    /* 3. Cancel a receive on tag 7, then (after a barrier) the peer sends
     * on tag 7: a new receive gets it. */
    CHECK_OK(MPI_Irecv(buf, 4, MPI_INT, peer, 7, MPI_COMM_WORLD, &req));
    CHECK_OK(MPI_Cancel(&req));
    CHECK_OK(MPI_Wait(&req, &st));
    flag = 0;
    CHECK_OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "tag 7 receive not cancelled before the message was sent");
    MPI_Barrier(MPI_COMM_WORLD);
    {
        int s[4] = {rank, 71, 72, 73};
        MPI_Request sreq;
        CHECK_OK(MPI_Isend(s, 4, MPI_INT, peer, 7, MPI_COMM_WORLD, &sreq));
        CHECK_OK(MPI_Recv(buf, 4, MPI_INT, peer, 7, MPI_COMM_WORLD, &st));
        CHECK_OK(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
        CHECK(buf[0] == peer && buf[1] == 71 && buf[3] == 73,
              "message after a cancelled receive: %d %d %d", buf[0], buf[1], buf[3]);
        flag = 1;
        CHECK_OK(MPI_Test_cancelled(&st, &flag));
        CHECK(!flag, "normally completed receive reported cancelled");
    }

    /* 4. Persistent receive: start, cancel, complete; then start again and
     * let it match a real message. */
    {
        int pbuf[2] = {-5, -5};
        MPI_Request preq;
        CHECK_OK(MPI_Recv_init(pbuf, 2, MPI_INT, peer, 8, MPI_COMM_WORLD, &preq));
        CHECK_OK(MPI_Start(&preq));
        CHECK_OK(MPI_Cancel(&preq));
        CHECK_OK(MPI_Wait(&preq, &st));
        CHECK(preq != MPI_REQUEST_NULL, "Wait freed a persistent request");
        flag = 0;
        CHECK_OK(MPI_Test_cancelled(&st, &flag));
        CHECK(flag, "persistent receive not cancelled");
        CHECK(pbuf[0] == -5, "cancelled persistent receive wrote its buffer");
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_OK(MPI_Start(&preq));
        int s[2] = {rank, 88};
        CHECK_OK(MPI_Send(s, 2, MPI_INT, peer, 8, MPI_COMM_WORLD));
        CHECK_OK(MPI_Wait(&preq, &st));
        flag = 1;
        CHECK_OK(MPI_Test_cancelled(&st, &flag));
        CHECK(!flag, "restarted persistent receive reported cancelled");
        CHECK(pbuf[0] == peer && pbuf[1] == 88, "restarted persistent receive got %d %d",
              pbuf[0], pbuf[1]);
        CHECK_OK(MPI_Request_free(&preq));
    }

    /* 5. Cancel a send after the receiver confirmed receiving it: the
     * cancel must fail. Rank 0 sends to rank 1 (or to itself with 1 rank). */
    {
        int data[3] = {31, 32, 33}, got[3] = {0, 0, 0}, ack = 0;
        int sender = 0, receiver = size > 1 ? 1 : 0;
        MPI_Request sreq = MPI_REQUEST_NULL, rreq = MPI_REQUEST_NULL;
        if (rank == sender) {
            CHECK_OK(MPI_Isend(data, 3, MPI_INT, receiver, 9, MPI_COMM_WORLD, &sreq));
        }
        if (rank == receiver) {
            CHECK_OK(MPI_Irecv(got, 3, MPI_INT, sender, 9, MPI_COMM_WORLD, &rreq));
            CHECK_OK(MPI_Wait(&rreq, &st));
            CHECK(got[0] == 31 && got[1] == 32 && got[2] == 33, "sent data %d %d %d",
                  got[0], got[1], got[2]);
            /* Cancelling a receive that already completed cannot cancel. */
            flag = 1;
            CHECK_OK(MPI_Test_cancelled(&st, &flag));
            CHECK(!flag, "received message reported cancelled on the receive side");
            CHECK_OK(MPI_Isend(&ack, 1, MPI_INT, sender, 10, MPI_COMM_WORLD, &rreq));
        }
        if (rank == sender) {
            int a = -1;
            CHECK_OK(MPI_Recv(&a, 1, MPI_INT, receiver, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_OK(MPI_Cancel(&sreq));
            CHECK_OK(MPI_Wait(&sreq, &st));
            flag = 1;
            CHECK_OK(MPI_Test_cancelled(&st, &flag));
            CHECK(!flag, "send cancelled although the receiver had already received it");
        }
        if (rank == receiver) CHECK_OK(MPI_Wait(&rreq, MPI_STATUS_IGNORE));
    }

    /* 6. A receive that has matched (the sender's Ssend completed, so the
     * match happened) but was not yet waited for: Cancel must not cancel. */
    {
        int v = -1, s = 4321;
        MPI_Request rr;
        int sender = size > 1 ? 1 : 0, receiver = 0;
        if (rank == receiver)
            CHECK_OK(MPI_Irecv(&v, 1, MPI_INT, sender, 11, MPI_COMM_WORLD, &rr));
        if (rank == sender) {
            MPI_Request sr;
            CHECK_OK(MPI_Issend(&s, 1, MPI_INT, receiver, 11, MPI_COMM_WORLD, &sr));
            CHECK_OK(MPI_Wait(&sr, MPI_STATUS_IGNORE));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == receiver) {
            CHECK_OK(MPI_Cancel(&rr));
            CHECK_OK(MPI_Wait(&rr, &st));
            flag = 1;
            CHECK_OK(MPI_Test_cancelled(&st, &flag));
            CHECK(!flag, "matched receive was cancelled");
            CHECK(v == 4321, "matched receive got %d", v);
        }
    }

    return ct_finish();
}
