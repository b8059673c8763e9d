/* ranks: 1 3 4 */
/* MPI_Allreduce (and, every third case, MPI_Reduce with a rotating root)
 * over every builtin type with every predefined op MPI allows on it: MAX MIN
 * SUM PROD LAND LOR LXOR BAND BOR BXOR on the C integer types (incl. the
 * fixed-width ones), MAX MIN SUM PROD BAND BOR BXOR on MPI_AINT / MPI_OFFSET
 * / MPI_COUNT, MAX MIN SUM PROD on float, double and long double, LAND LOR
 * LXOR on MPI_C_BOOL, BAND BOR BXOR on MPI_BYTE. Values are small, so sums
 * and products are exact, and logical inputs are 0 or 1. Expected values are
 * folded in rank order with the C operator on the same type. */
#include "common.h"
#include <stdbool.h>
#include <stdint.h>

#define N 6
static int rank, size, ncall = 0;

/* arithmetic inputs: 0..6 unsigned, -3..3 signed */
static long long gen_u(int r, int i) { return (r * 5 + i * 3) % 7; }
static long long gen_s(int r, int i) { return (r * 5 + i * 3) % 7 - 3; }
/* product inputs: 1 or 2, so a product over 4 ranks is at most 16 */
static long long gen_p(int r, int i) { return 1 + (r + i) % 2; }
/* bit patterns within 7 bits */
static long long gen_b(int r, int i) { return (1LL << ((r + 2 * i) % 7)) | ((r * 3 + i) & 5); }
/* logical inputs 0/1: column 0 all true, column 1 all false, others mixed */
static long long gen_l(int r, int i) { return i == 0 ? 1 : i == 1 ? 0 : ((r + i) % 3 == 0); }

#define F_MAX(a, b) ((a) > (b) ? (a) : (b))
#define F_MIN(a, b) ((a) < (b) ? (a) : (b))
#define F_SUM(a, b) ((a) + (b))
#define F_PROD(a, b) ((a) * (b))
#define F_LAND(a, b) ((a) && (b))
#define F_LOR(a, b) ((a) || (b))
#define F_LXOR(a, b) ((!(a)) != (!(b)))
#define F_BAND(a, b) ((a) & (b))
#define F_BOR(a, b) ((a) | (b))
#define F_BXOR(a, b) ((a) ^ (b))

/* One reduction of N elements of C type T / MPI type DT with op OP, inputs
 * from GEN, expected value folded with F. */
#define RUN(T, DT, DN, OP, GEN, F)                                                      \
    do {                                                                                \
        T s_[N], r_[N], e_[N];                                                          \
        int root_ = ncall % size, doreduce_ = ncall++ % 3 == 0;                         \
        for (int i = 0; i < N; i++) {                                                   \
            s_[i] = (T)GEN(rank, i);                                                    \
            r_[i] = (T)99;                                                              \
            e_[i] = (T)GEN(0, i);                                                       \
            for (int q = 1; q < size; q++) {                                            \
                T a_ = e_[i], b_ = (T)GEN(q, i);                                        \
                e_[i] = (T)F(a_, b_);                                                   \
            }                                                                           \
        }                                                                               \
        CHECK_OK(MPI_Allreduce(s_, r_, N, DT, OP, MPI_COMM_WORLD));                     \
        for (int i = 0; i < N; i++)                                                     \
            CHECK(r_[i] == e_[i], "allreduce %s %s [%d]: got %g expected %g", DN, #OP,  \
                  i, (double)r_[i], (double)e_[i]);                                     \
        for (int i = 0; i < N; i++) r_[i] = (T)99;                                      \
        if (doreduce_)                                                                  \
            CHECK_OK(MPI_Reduce(s_, r_, N, DT, OP, root_, MPI_COMM_WORLD));             \
        if (doreduce_ && rank == root_)                                                 \
            for (int i = 0; i < N; i++)                                                 \
                CHECK(r_[i] == e_[i], "reduce root %d %s %s [%d]: got %g expected %g",  \
                      root_, DN, #OP, i, (double)r_[i], (double)e_[i]);                 \
        for (int i = 0; i < N; i++)                                                     \
            CHECK(s_[i] == (T)GEN(rank, i), "%s %s changed sendbuf", DN, #OP);          \
    } while (0)

#define ARITH(T, DT, DN, GEN)                                                           \
    do {                                                                                \
        RUN(T, DT, DN, MPI_MAX, GEN, F_MAX);                                            \
        RUN(T, DT, DN, MPI_MIN, GEN, F_MIN);                                            \
        RUN(T, DT, DN, MPI_SUM, GEN, F_SUM);                                            \
        RUN(T, DT, DN, MPI_PROD, gen_p, F_PROD);                                        \
    } while (0)

#define LOGICAL(T, DT, DN)                                                              \
    do {                                                                                \
        RUN(T, DT, DN, MPI_LAND, gen_l, F_LAND);                                        \
        RUN(T, DT, DN, MPI_LOR, gen_l, F_LOR);                                          \
        RUN(T, DT, DN, MPI_LXOR, gen_l, F_LXOR);                                        \
    } while (0)

#define BITWISE(T, DT, DN)                                                              \
    do {                                                                                \
        RUN(T, DT, DN, MPI_BAND, gen_b, F_BAND);                                        \
        RUN(T, DT, DN, MPI_BOR, gen_b, F_BOR);                                          \
        RUN(T, DT, DN, MPI_BXOR, gen_b, F_BXOR);                                        \
    } while (0)

#define CINT(T, DT, GEN)                                                                \
    do {                                                                                \
        ARITH(T, DT, #DT, GEN);                                                         \
        LOGICAL(T, DT, #DT);                                                            \
        BITWISE(T, DT, #DT);                                                            \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* C integer types */
    CINT(signed char, MPI_SIGNED_CHAR, gen_s);
    CINT(unsigned char, MPI_UNSIGNED_CHAR, gen_u);
    CINT(short, MPI_SHORT, gen_s);
    CINT(unsigned short, MPI_UNSIGNED_SHORT, gen_u);
    CINT(int, MPI_INT, gen_s);
    CINT(unsigned, MPI_UNSIGNED, gen_u);
    CINT(long, MPI_LONG, gen_s);
    CINT(unsigned long, MPI_UNSIGNED_LONG, gen_u);
    CINT(long long, MPI_LONG_LONG, gen_s);
    CINT(unsigned long long, MPI_UNSIGNED_LONG_LONG, gen_u);
    CINT(int8_t, MPI_INT8_T, gen_s);
    CINT(int16_t, MPI_INT16_T, gen_s);
    CINT(int32_t, MPI_INT32_T, gen_s);
    CINT(int64_t, MPI_INT64_T, gen_s);
    CINT(uint8_t, MPI_UINT8_T, gen_u);
    CINT(uint16_t, MPI_UINT16_T, gen_u);
    CINT(uint32_t, MPI_UINT32_T, gen_u);
    CINT(uint64_t, MPI_UINT64_T, gen_u);

    /* multi-language types: no logical ops */
    ARITH(MPI_Aint, MPI_AINT, "MPI_AINT", gen_s);
    BITWISE(MPI_Aint, MPI_AINT, "MPI_AINT");
    ARITH(MPI_Offset, MPI_OFFSET, "MPI_OFFSET", gen_s);
    BITWISE(MPI_Offset, MPI_OFFSET, "MPI_OFFSET");
    ARITH(MPI_Count, MPI_COUNT, "MPI_COUNT", gen_s);
    BITWISE(MPI_Count, MPI_COUNT, "MPI_COUNT");

    /* floating point */
    ARITH(float, MPI_FLOAT, "MPI_FLOAT", gen_s);
    ARITH(double, MPI_DOUBLE, "MPI_DOUBLE", gen_s);
    ARITH(long double, MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", gen_s);

    /* logical */
    LOGICAL(bool, MPI_C_BOOL, "MPI_C_BOOL");

    /* byte */
    BITWISE(unsigned char, MPI_BYTE, "MPI_BYTE");

    return ct_finish();
}
