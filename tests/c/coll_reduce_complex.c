/* ranks: 1 3 4 */
/* The C complex types (MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX,
 * MPI_C_LONG_DOUBLE_COMPLEX, MPI_C_COMPLEX): MPI_SUM and MPI_PROD in
 * MPI_Allreduce, MPI_Reduce and MPI_Iallreduce give the complex sum and
 * product (values are small integers, so every result is exact); a
 * vector of them is sent and received whole; MPI_MAX on one is
 * MPI_ERR_OP (MPI defines only SUM and PROD on complex numbers), and the
 * type's alignment puts a complex after a char at its part's alignment
 * in a struct. */
#include "common.h"
#include <complex.h>

#define N 3
static int me, n;

/* Rank r's element i: (r + i - 1) + (r - i) i, so products stay small. */
#define VAL(r, i) ((double)((r) + (i)-1) + (double)((r) - (i)) * I)

#define CASE(T, DT, NAME)                                                                    \
    do {                                                                                     \
        T in[N], sum[N], prod[N], want_s[N], want_p[N];                                      \
        for (int i = 0; i < N; i++) {                                                        \
            in[i] = (T)VAL(me, i);                                                           \
            want_s[i] = 0;                                                                   \
            want_p[i] = 1;                                                                   \
            for (int r = 0; r < n; r++) {                                                    \
                want_s[i] += (T)VAL(r, i);                                                   \
                want_p[i] *= (T)VAL(r, i);                                                   \
            }                                                                                \
        }                                                                                    \
        CHECK_OK(MPI_Allreduce(in, sum, N, DT, MPI_SUM, MPI_COMM_WORLD));                    \
        MPI_Request rq;                                                                      \
        CHECK_OK(MPI_Iallreduce(in, prod, N, DT, MPI_PROD, MPI_COMM_WORLD, &rq));            \
        CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));                                          \
        for (int i = 0; i < N; i++) {                                                        \
            CHECK(sum[i] == want_s[i], "%s sum[%d] = %g%+gi, not %g%+gi", NAME, i,           \
                  (double)creal(sum[i]), (double)cimag(sum[i]), (double)creal(want_s[i]),    \
                  (double)cimag(want_s[i]));                                                 \
            CHECK(prod[i] == want_p[i], "%s prod[%d] = %g%+gi, not %g%+gi", NAME, i,         \
                  (double)creal(prod[i]), (double)cimag(prod[i]), (double)creal(want_p[i]),  \
                  (double)cimag(want_p[i]));                                                 \
        }                                                                                    \
        T root_out[N] = {0};                                                                 \
        CHECK_OK(MPI_Reduce(in, root_out, N, DT, MPI_PROD, n - 1, MPI_COMM_WORLD));          \
        if (me == n - 1)                                                                     \
            for (int i = 0; i < N; i++)                                                      \
                CHECK(root_out[i] == want_p[i], "%s reduce prod[%d]", NAME, i);              \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    CASE(float _Complex, MPI_C_FLOAT_COMPLEX, "float");
    CASE(float _Complex, MPI_C_COMPLEX, "MPI_C_COMPLEX");
    CASE(double _Complex, MPI_C_DOUBLE_COMPLEX, "double");
    CASE(long double _Complex, MPI_C_LONG_DOUBLE_COMPLEX, "long double");

    /* Point to point: rank 0 sends every other element of 8. */
    if (n > 1) {
        MPI_Datatype every2;
        CHECK_OK(MPI_Type_vector(4, 1, 2, MPI_C_DOUBLE_COMPLEX, &every2));
        CHECK_OK(MPI_Type_commit(&every2));
        if (me == 0) {
            double _Complex v[8];
            for (int i = 0; i < 8; i++) v[i] = i + 10.0 * i * I;
            CHECK_OK(MPI_Send(v, 1, every2, 1, 3, MPI_COMM_WORLD));
        } else if (me == 1) {
            double _Complex r[4];
            MPI_Status st;
            CHECK_OK(MPI_Recv(r, 4, MPI_C_DOUBLE_COMPLEX, 0, 3, MPI_COMM_WORLD, &st));
            int cnt = -1;
            MPI_Get_count(&st, MPI_C_DOUBLE_COMPLEX, &cnt);
            CHECK(cnt == 4, "count %d", cnt);
            for (int i = 0; i < 4; i++)
                CHECK(r[i] == 2 * i + 20.0 * i * I, "element %d: %g%+gi", i, creal(r[i]),
                      cimag(r[i]));
        }
        MPI_Type_free(&every2);
    }

    /* Only SUM and PROD. */
    double _Complex x = 1, y;
    CHECK(ct_class(MPI_Allreduce(&x, &y, 1, MPI_C_DOUBLE_COMPLEX, MPI_MAX, MPI_COMM_WORLD)) ==
              MPI_ERR_OP,
          "MPI_MAX on a complex");

    /* In a struct after a char: aligned as its parts. */
    struct {
        char c;
        double _Complex z;
    } s;
    int bl[2] = {1, 1};
    MPI_Aint d[2] = {0, (char *)&s.z - (char *)&s};
    MPI_Datatype ts[2] = {MPI_CHAR, MPI_C_DOUBLE_COMPLEX}, st;
    CHECK_OK(MPI_Type_create_struct(2, bl, d, ts, &st));
    MPI_Aint lb, ext;
    MPI_Type_get_extent(st, &lb, &ext);
    CHECK(ext == (MPI_Aint)sizeof s, "struct extent %ld, sizeof %zu", (long)ext, sizeof s);
    MPI_Type_free(&st);
    return ct_finish();
}
