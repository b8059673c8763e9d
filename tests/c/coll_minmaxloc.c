/* ranks: 1 3 4 */
/* MPI_MINLOC and MPI_MAXLOC on MPI_2INT, MPI_FLOAT_INT, MPI_DOUBLE_INT,
 * MPI_LONG_INT, MPI_SHORT_INT and MPI_LONG_DOUBLE_INT through MPI_Allreduce
 * (plain and in place), MPI_Reduce at every root and MPI_Scan. Values repeat
 * across ranks so there are ties, and the indices are not in rank order, so
 * the tie rule (lowest index wins) is really exercised. */
#include "common.h"

#define N 7
static int rank, size;

/* value and index contributed by rank r at element i */
static int vgen(int r, int i) { return ((r + 1) * (i + 2)) % 4 - 1; }
static int igen(int r, int i) { return ((size - r) * 7 + i * 3) % 23; }

struct s2int { int v; int i; };
struct sfloat { float v; int i; };
struct sdouble { double v; int i; };
struct slong { long v; int i; };
struct sshort { short v; int i; };
struct sldouble { long double v; int i; };

/* expected result over ranks [0, upto) */
static void expect(int upto, int i, int wantmax, int *ev, int *ei)
{
    *ev = vgen(0, i);
    *ei = igen(0, i);
    for (int q = 1; q < upto; q++) {
        int v = vgen(q, i), x = igen(q, i);
        int better = wantmax ? v > *ev : v < *ev;
        if (better || (v == *ev && x < *ei)) {
            *ev = v;
            *ei = x;
        }
    }
}

#define CHECKRES(S, buf, upto, wantmax, what)                                              \
    do {                                                                               \
        for (int i = 0; i < N; i++) {                                                  \
            int ev_, ei_;                                                              \
            expect((upto), i, (wantmax), &ev_, &ei_);                                  \
            CHECK((buf)[i].v == (ev_) && (buf)[i].i == ei_,                            \
                  "%s %s %s [%d]: got (%g,%d) expected (%d,%d)", #S, (wantmax) ? "MAXLOC" : "MINLOC", \
                  what, i, (double)(buf)[i].v, (buf)[i].i, ev_, ei_);                  \
        }                                                                              \
    } while (0)

#define RUNTYPE(S, VT, DT)                                                               \
    do {                                                                                 \
        struct S s_[N], r_[N];                                                           \
        for (int wantmax = 0; wantmax < 2; wantmax++) {                                  \
            MPI_Op op_ = wantmax ? MPI_MAXLOC : MPI_MINLOC;                              \
            for (int i = 0; i < N; i++) {                                                \
                s_[i].v = (VT)vgen(rank, i);                                             \
                s_[i].i = igen(rank, i);                                                 \
                r_[i].v = (VT)-50;                                                       \
                r_[i].i = -50;                                                           \
            }                                                                            \
            CHECK_OK(MPI_Allreduce(s_, r_, N, DT, op_, MPI_COMM_WORLD));                 \
            CHECKRES(S, r_, size, wantmax, "allreduce");                                 \
            for (int i = 0; i < N; i++) r_[i] = s_[i];                                   \
            CHECK_OK(MPI_Allreduce(MPI_IN_PLACE, r_, N, DT, op_, MPI_COMM_WORLD));       \
            CHECKRES(S, r_, size, wantmax, "allreduce in place");                        \
            for (int root = 0; root < size; root++) {                                    \
                for (int i = 0; i < N; i++) r_[i].i = -50;                               \
                CHECK_OK(MPI_Reduce(s_, r_, N, DT, op_, root, MPI_COMM_WORLD));          \
                if (rank == root) CHECKRES(S, r_, size, wantmax, "reduce");              \
            }                                                                            \
            CHECK_OK(MPI_Scan(s_, r_, N, DT, op_, MPI_COMM_WORLD));                      \
            CHECKRES(S, r_, rank + 1, wantmax, "scan");                                  \
        }                                                                                \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    RUNTYPE(s2int, int, MPI_2INT);
    RUNTYPE(sfloat, float, MPI_FLOAT_INT);
    RUNTYPE(sdouble, double, MPI_DOUBLE_INT);
    RUNTYPE(slong, long, MPI_LONG_INT);
    RUNTYPE(sshort, short, MPI_SHORT_INT);
    RUNTYPE(sldouble, long double, MPI_LONG_DOUBLE_INT);

    /* the classic use: where is the global extreme, with a tie on the max */
    double mine[2] = {(double)(rank % 2), (double)(-rank)};
    struct sdouble in[2], out[2];
    for (int k = 0; k < 2; k++) {
        in[k].v = mine[k];
        in[k].i = rank;
    }
    CHECK_OK(MPI_Allreduce(in, out, 2, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
    CHECK(out[0].v == (size > 1 ? 1.0 : 0.0) && out[0].i == (size > 1 ? 1 : 0),
          "maxloc tie: (%g,%d)", out[0].v, out[0].i);
    CHECK(out[1].v == 0.0 && out[1].i == 0, "maxloc: (%g,%d)", out[1].v, out[1].i);
    return ct_finish();
}
