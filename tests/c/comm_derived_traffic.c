/* ranks: 1 4 6 8 */
/* Traffic on several overlapping derived communicators alive at once: the
 * world is split into a grid (rows: key = column; columns: key = -row, so
 * reversed). Ring exchanges on rows and columns, wildcard receives posted
 * on both at once with the same tag (each message must arrive on its own
 * communicator), nonblocking allreduces / bcasts on row, column and world
 * started in different orders on different ranks, an allgather showing the
 * column's reversed order, and freeing a row communicator while its
 * duplicate and the column communicator stay in use. */
#include "common.h"

#define MAXN 64

int main(int argc, char **argv)
{
    int n, me, nrows, ncols, row, col;
    MPI_Comm rowc, colc, rowdup;
    int rs, rr, cs, cr;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (n > MAXN) {
        fprintf(stderr, "too many ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    nrows = (n % 2 == 0) ? 2 : 1;
    ncols = n / nrows;
    row = me / ncols;
    col = me % ncols;

    CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, row, col, &rowc));
    CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, col, -row, &colc));
    MPI_Comm_size(rowc, &rs);
    MPI_Comm_rank(rowc, &rr);
    MPI_Comm_size(colc, &cs);
    MPI_Comm_rank(colc, &cr);
    CHECK(rs == ncols && rr == col, "row comm size %d rank %d, expected %d %d",
          rs, rr, ncols, col);
    CHECK(cs == nrows && cr == nrows - 1 - row,
          "col comm size %d rank %d, expected %d %d", cs, cr, nrows,
          nrows - 1 - row);
    {
        int bad = (rs != ncols || rr != col || cs != nrows ||
                   cr != nrows - 1 - row), anybad = 1;
        MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (anybad) {
            fprintf(stderr, "grid layout wrong, skipping the rest\n");
            ct_errs++;
            return ct_finish();
        }
    }
    /* world rank of column-comm rank k (k = nrows-1-row) */
#define COLW(k) ((nrows - 1 - (k)) * ncols + col)
#define ROWW(k) (row * ncols + (k))

    /* Allgather on the column comm: reversed row order. */
    {
        int all[MAXN];
        CHECK_OK(MPI_Allgather(&me, 1, MPI_INT, all, 1, MPI_INT, colc));
        for (int k = 0; k < cs; k++)
            CHECK(all[k] == COLW(k), "col allgather[%d] = %d, expected %d", k,
                  all[k], COLW(k));
        CHECK_OK(MPI_Allgather(&me, 1, MPI_INT, all, 1, MPI_INT, rowc));
        for (int k = 0; k < rs; k++)
            CHECK(all[k] == ROWW(k), "row allgather[%d] = %d, expected %d", k,
                  all[k], ROWW(k));
    }

    /* Wildcard receives on both communicators with the same tag; each
     * process sends to its right neighbour in the row and the one below in
     * the column. Payload says which communicator it was sent on. */
    {
        int rin[2] = {-1, -1}, cin[2] = {-1, -1};
        int rout[2] = {1, me}, cout[2] = {2, me};
        MPI_Request rq[4];
        MPI_Status st[4];
        int rright = (rr + 1) % rs, rleft = (rr + rs - 1) % rs;
        int cnext = (cr + 1) % cs, cprev = (cr + cs - 1) % cs;
        CHECK_OK(MPI_Irecv(rin, 2, MPI_INT, MPI_ANY_SOURCE, 3, rowc, &rq[0]));
        CHECK_OK(MPI_Irecv(cin, 2, MPI_INT, MPI_ANY_SOURCE, 3, colc, &rq[1]));
        if (me % 2) {
            CHECK_OK(MPI_Isend(cout, 2, MPI_INT, cnext, 3, colc, &rq[3]));
            CHECK_OK(MPI_Isend(rout, 2, MPI_INT, rright, 3, rowc, &rq[2]));
        } else {
            CHECK_OK(MPI_Isend(rout, 2, MPI_INT, rright, 3, rowc, &rq[2]));
            CHECK_OK(MPI_Isend(cout, 2, MPI_INT, cnext, 3, colc, &rq[3]));
        }
        CHECK_OK(MPI_Waitall(4, rq, st));
        CHECK(rin[0] == 1 && rin[1] == ROWW(rleft) && st[0].MPI_SOURCE == rleft,
              "row recv got %d/%d from %d, expected 1/%d from %d", rin[0],
              rin[1], st[0].MPI_SOURCE, ROWW(rleft), rleft);
        CHECK(cin[0] == 2 && cin[1] == COLW(cprev) && st[1].MPI_SOURCE == cprev,
              "col recv got %d/%d from %d, expected 2/%d from %d", cin[0],
              cin[1], st[1].MPI_SOURCE, COLW(cprev), cprev);
    }

    /* Nonblocking collectives on row, column and world, started in an
     * order depending on the rank. */
    {
        int rsum = -1, csum = -1, wv = -1, ersum = 0, ecsum = 0;
        MPI_Request rq[3];
        MPI_Status st[3];
        int wroot = n - 1;
        for (int k = 0; k < rs; k++) ersum += ROWW(k);
        for (int k = 0; k < cs; k++) ecsum += COLW(k);
        if (me == wroot) wv = 31337;
        switch (me % 3) {
        case 0:
            CHECK_OK(MPI_Iallreduce(&me, &rsum, 1, MPI_INT, MPI_SUM, rowc,
                                   &rq[0]));
            CHECK_OK(MPI_Iallreduce(&me, &csum, 1, MPI_INT, MPI_SUM, colc,
                                   &rq[1]));
            CHECK_OK(MPI_Ibcast(&wv, 1, MPI_INT, wroot, MPI_COMM_WORLD,
                                &rq[2]));
            break;
        case 1:
            CHECK_OK(MPI_Ibcast(&wv, 1, MPI_INT, wroot, MPI_COMM_WORLD,
                                &rq[2]));
            CHECK_OK(MPI_Iallreduce(&me, &csum, 1, MPI_INT, MPI_SUM, colc,
                                   &rq[1]));
            CHECK_OK(MPI_Iallreduce(&me, &rsum, 1, MPI_INT, MPI_SUM, rowc,
                                   &rq[0]));
            break;
        default:
            CHECK_OK(MPI_Iallreduce(&me, &csum, 1, MPI_INT, MPI_SUM, colc,
                                   &rq[1]));
            CHECK_OK(MPI_Ibcast(&wv, 1, MPI_INT, wroot, MPI_COMM_WORLD,
                                &rq[2]));
            CHECK_OK(MPI_Iallreduce(&me, &rsum, 1, MPI_INT, MPI_SUM, rowc,
                                   &rq[0]));
            break;
        }
        CHECK_OK(MPI_Waitall(3, rq, st));
        CHECK(rsum == ersum, "row iallreduce %d, expected %d", rsum, ersum);
        CHECK(csum == ecsum, "col iallreduce %d, expected %d", csum, ecsum);
        CHECK(wv == 31337, "world ibcast %d", wv);
    }

    /* Blocking collectives alternating between the communicators. */
    for (int it = 0; it < 3; it++) {
        int v = (rr == it % rs) ? 100 * it + row : -1;
        int mx = -1;
        CHECK_OK(MPI_Bcast(&v, 1, MPI_INT, it % rs, rowc));
        CHECK(v == 100 * it + row, "row bcast %d: %d", it, v);
        CHECK_OK(MPI_Allreduce(&v, &mx, 1, MPI_INT, MPI_MAX, colc));
        CHECK(mx == 100 * it + (nrows - 1), "col max %d: %d", it, mx);
        CHECK_OK(MPI_Barrier(MPI_COMM_WORLD));
    }

    /* Free the row comm while its duplicate and the column comm live. */
    CHECK_OK(MPI_Comm_dup(rowc, &rowdup));
    CHECK_OK(MPI_Comm_free(&rowc));
    CHECK(rowc == MPI_COMM_NULL, "free did not set MPI_COMM_NULL");
    {
        int s = -1, e = 0;
        int right = (rr + 1) % rs, left = (rr + rs - 1) % rs, got = -1;
        for (int k = 0; k < rs; k++) e += ROWW(k);
        CHECK_OK(MPI_Allreduce(&me, &s, 1, MPI_INT, MPI_SUM, rowdup));
        CHECK(s == e, "row dup allreduce %d, expected %d", s, e);
        CHECK_OK(MPI_Sendrecv(&me, 1, MPI_INT, right, 0, &got, 1, MPI_INT,
                              left, 0, rowdup, MPI_STATUS_IGNORE));
        CHECK(got == ROWW(left), "row dup ring got %d, expected %d", got,
              ROWW(left));
        CHECK_OK(MPI_Sendrecv(&me, 1, MPI_INT, (cr + 1) % cs, 0, &got, 1,
                              MPI_INT, (cr + cs - 1) % cs, 0, colc,
                              MPI_STATUS_IGNORE));
        CHECK(got == COLW((cr + cs - 1) % cs), "col ring got %d", got);
    }

    MPI_Comm_free(&rowdup);
    MPI_Comm_free(&colc);
    return ct_finish();
}
