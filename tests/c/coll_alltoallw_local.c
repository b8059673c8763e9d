/* ranks: 1 2 3 4 */
/* MPI_Alltoallw: a datatype and a byte displacement per rank, rank j
 * sending rank i the ints 1000 j + 100 i + k, k < i + j + 1, from a
 * plain block (to even ranks) or every other int of a strided region (to
 * odd ones), received in reverse rank order; the same with
 * MPI_Ialltoallw; then the same exchange in place. MPI_Reduce_local with MPI_SUM, MPI_MAX, a user operation over a
 * strided type and a non-commutative one (inout = 10 in - inout);
 * MPI_Op_commutative of predefined and user operations; MPI_REPLACE and
 * MPI_NO_OP refused by a collective reduction (MPI_ERR_OP). */
#include "common.h"

#define MAXP 8
#define MAXE (2 * MAXP)

static int v(int j, int i, int k) { return 1000 * j + 100 * i + k; }

static void minus(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    for (int k = 0; k < *len; k++)
        ((int *)inout)[k] = 10 * ((int *)in)[k] - ((int *)inout)[k];
}

static void plus(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    for (int k = 0; k < *len; k++) ((int *)inout)[k] += ((int *)in)[k];
}

/* For instances of MPI_Type_vector(3, 1, 2, MPI_INT) (extent 5 ints). */
static void plus_strided(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    for (int i = 0; i < *len; i++)
        for (int e = 0; e < 3; e++) ((int *)inout)[5 * i + 2 * e] += ((int *)in)[5 * i + 2 * e];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int p, me;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    CHECK(p <= MAXP, "at most %d ranks", MAXP);

    /* 1. Alltoallw with a type per rank. */
    int sbuf[MAXP * 2 * MAXE], rbuf[MAXP * MAXE];
    int sc[MAXP], sd[MAXP], rc[MAXP], rd[MAXP];
    MPI_Datatype st[MAXP], rt[MAXP], strided[MAXP];
    int at = 0;
    for (int i = 0; i < p; i++) {
        int n = i + me + 1;
        sd[i] = at * (int)sizeof(int);
        if (i % 2 == 0) {
            for (int k = 0; k < n; k++) sbuf[at + k] = v(me, i, k);
            sc[i] = n;
            st[i] = MPI_INT;
            strided[i] = MPI_DATATYPE_NULL;
            at += n;
        } else {
            for (int k = 0; k < n; k++) {
                sbuf[at + 2 * k] = v(me, i, k);
                sbuf[at + 2 * k + 1] = -1;
            }
            MPI_Type_vector(n, 1, 2, MPI_INT, &strided[i]);
            MPI_Type_commit(&strided[i]);
            sc[i] = 1;
            st[i] = strided[i];
            at += 2 * n;
        }
    }
    at = 0;
    for (int j = p - 1; j >= 0; j--) {
        rc[j] = j + me + 1;
        rd[j] = at * (int)sizeof(int);
        rt[j] = MPI_INT;
        at += rc[j];
    }
    for (int k = 0; k < at; k++) rbuf[k] = -7;
    CHECK_OK(MPI_Alltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD));
    for (int j = 0; j < p; j++)
        for (int k = 0; k < rc[j]; k++) {
            int got = rbuf[rd[j] / (int)sizeof(int) + k];
            CHECK(got == v(j, me, k), "from %d element %d: %d", j, k, got);
        }
    /* The same, nonblocking, the request completed after a barrier. */
    for (int k = 0; k < at; k++) rbuf[k] = -7;
    MPI_Request rq;
    CHECK_OK(MPI_Ialltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD, &rq));
    CHECK_OK(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    for (int j = 0; j < p; j++)
        for (int k = 0; k < rc[j]; k++) {
            int got = rbuf[rd[j] / (int)sizeof(int) + k];
            CHECK(got == v(j, me, k), "Ialltoallw, from %d element %d: %d", j, k, got);
        }
    for (int i = 0; i < p; i++)
        if (strided[i] != MPI_DATATYPE_NULL) MPI_Type_free(&strided[i]);

    /* Blocks of no elements may name no type, in both forms. */
    {
        int zc[MAXP] = {0}, zd[MAXP] = {0};
        MPI_Datatype zt[MAXP];
        for (int i = 0; i < p; i++) zt[i] = MPI_DATATYPE_NULL;
        CHECK_OK(MPI_Alltoallw(sbuf, zc, zd, zt, rbuf, zc, zd, zt, MPI_COMM_WORLD));
        MPI_Request zr;
        CHECK_OK(MPI_Ialltoallw(sbuf, zc, zd, zt, rbuf, zc, zd, zt, MPI_COMM_WORLD, &zr));
        CHECK_OK(MPI_Wait(&zr, MPI_STATUS_IGNORE));
    }
#ifdef SHMPI_MPI_H
    /* A rank's block to itself longer than its receive: truncation, as a
     * message would be (before anything is sent). */
    if (p == 1) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int two = 2, one = 1, zero = 0, src[2] = {1, 2}, dst[2] = {0, 0};
        MPI_Datatype ti = MPI_INT;
        MPI_Request tr;
        CHECK(ct_class(MPI_Ialltoallw(src, &two, &zero, &ti, dst, &one, &zero, &ti,
                                      MPI_COMM_WORLD, &tr)) == MPI_ERR_TRUNCATE,
              "a self block longer than its receive");
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    }
#endif

    /* 2. In place: block j of rbuf goes to rank j and is replaced by its. */
    for (int j = 0; j < p; j++)
        for (int k = 0; k < rc[j]; k++) rbuf[rd[j] / (int)sizeof(int) + k] = v(me, j, k);
    CHECK_OK(MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, rbuf, rc, rd, rt, MPI_COMM_WORLD));
    for (int j = 0; j < p; j++)
        for (int k = 0; k < rc[j]; k++) {
            int got = rbuf[rd[j] / (int)sizeof(int) + k];
            CHECK(got == v(j, me, k), "in place, from %d element %d: %d", j, k, got);
        }

    /* 3. Reduce_local and Op_commutative. */
    int a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {10, 20, 30, 40, 50, 60};
    CHECK_OK(MPI_Reduce_local(a, b, 6, MPI_INT, MPI_SUM));
    for (int k = 0; k < 6; k++) CHECK(b[k] == 11 * (k + 1), "SUM: b[%d] = %d", k, b[k]);
    double da[3] = {1.5, -2.0, 7.25}, db[3] = {1.0, 3.0, 7.0};
    CHECK_OK(MPI_Reduce_local(da, db, 3, MPI_DOUBLE, MPI_MAX));
    CHECK(db[0] == 1.5 && db[1] == 3.0 && db[2] == 7.25, "MAX: %g %g %g", db[0], db[1], db[2]);
    MPI_Op mop, pop;
    CHECK_OK(MPI_Op_create(minus, 0, &mop));
    CHECK_OK(MPI_Op_create(plus, 1, &pop));
    /* A user operation over a strided type sees its layout. */
    MPI_Datatype every2;
    MPI_Type_vector(3, 1, 2, MPI_INT, &every2);
    MPI_Type_commit(&every2);
    int x[6] = {9, -1, 1, -1, 2, -1}, y[6] = {5, 77, 5, 77, 5, 77};
    MPI_Op sop;
    CHECK_OK(MPI_Op_create(plus_strided, 1, &sop));
    CHECK_OK(MPI_Reduce_local(x, y, 1, every2, sop));
    MPI_Op_free(&sop);
    int want_y[6] = {14, 77, 6, 77, 7, 77};
    for (int k = 0; k < 6; k++) CHECK(y[k] == want_y[k], "strided: y[%d] = %d", k, y[k]);
    MPI_Type_free(&every2);
    int c[3] = {1, 2, 3}, d[3] = {4, 5, 6};
    CHECK_OK(MPI_Reduce_local(c, d, 3, MPI_INT, mop));
    for (int k = 0; k < 3; k++)
        CHECK(d[k] == 10 * (k + 1) - (k + 4), "user op: d[%d] = %d", k, d[k]);
    int commute = -1;
    CHECK_OK(MPI_Op_commutative(MPI_SUM, &commute));
    CHECK(commute == 1, "MPI_SUM commutes: %d", commute);
    CHECK_OK(MPI_Op_commutative(mop, &commute));
    CHECK(commute == 0, "the created non-commutative op: %d", commute);
    CHECK_OK(MPI_Op_commutative(pop, &commute));
    CHECK(commute == 1, "the created commutative op: %d", commute);
    MPI_Op_free(&mop);
    MPI_Op_free(&pop);

    /* 4. One-sided-only operations in a collective reduction. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int one = 1, out = 0, cls = -1;
    int rc1 = MPI_Allreduce(&one, &out, 1, MPI_INT, MPI_REPLACE, MPI_COMM_WORLD);
    MPI_Error_class(rc1, &cls);
    CHECK(cls == MPI_ERR_OP, "Allreduce with MPI_REPLACE: class %d", cls);
    rc1 = MPI_Reduce_local(&one, &out, 1, MPI_INT, MPI_NO_OP);
    MPI_Error_class(rc1, &cls);
    CHECK(cls == MPI_ERR_OP, "Reduce_local with MPI_NO_OP: class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    return ct_finish();
}
