/* ranks: 1 2 3 */
/* Cases a review of the C layer found wrong, kept as regressions:
 * a user operation over a resized type whose lb is past its data; a
 * noncontiguous MPI_Ibcast; a struct of absolute addresses sent from
 * MPI_BOTTOM; a struct whose member has explicit bounds (no alignment
 * padding); MINLOC on MPI_LONG_INT values that differ beyond double
 * precision; a double free that must not corrupt later handles. */
#include "common.h"
#include <stdint.h>

/* Sums ints (the int at offset 0 of each element). */
static void sum_first_int(void *in, void *inout, int *len, MPI_Datatype *t)
{
    MPI_Aint lb, ext;
    MPI_Type_get_extent(*t, &lb, &ext);
    for (int i = 0; i < *len; i++) {
        int *a = (int *)((char *)in + i * ext);
        int *b = (int *)((char *)inout + i * ext);
        *b += *a;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 1. A resized int with lb 4, extent 8: its data sits before lb. */
    {
        MPI_Datatype t;
        MPI_Type_create_resized(MPI_INT, 4, 8, &t);
        MPI_Type_commit(&t);
        MPI_Op op;
        MPI_Op_create(sum_first_int, 1, &op);
        int in[6] = {rank + 1, -1, rank + 2, -1, rank + 3, -1};
        int out[6] = {0, -7, 0, -7, 0, -7};
        CHECK_OK(MPI_Allreduce(in, out, 3, t, op, MPI_COMM_WORLD));
        int s = size * (size + 1) / 2;
        CHECK(out[0] == s && out[2] == s + size && out[4] == s + 2 * size,
              "resized user-op allreduce gave %d %d %d", out[0], out[2], out[4]);
        CHECK(out[1] == -7 && out[3] == -7 && out[5] == -7, "gaps were written");
        MPI_Op_free(&op);
        MPI_Type_free(&t);
    }

    /* 2. MPI_Ibcast of a strided vector reaches the non-roots. */
    {
        MPI_Datatype v;
        MPI_Type_vector(4, 1, 2, MPI_INT, &v);
        MPI_Type_commit(&v);
        int buf[8];
        for (int i = 0; i < 8; i++)
            buf[i] = rank == 0 ? i * 10 : -1;
        MPI_Request r;
        CHECK_OK(MPI_Ibcast(buf, 1, v, 0, MPI_COMM_WORLD, &r));
        CHECK_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (int i = 0; i < 8; i++) {
            int want = (i % 2 == 0 || rank == 0) ? i * 10 : -1;
            CHECK(buf[i] == want, "ibcast vector: buf[%d]=%d want %d", i, buf[i], want);
        }
        MPI_Type_free(&v);
    }

    /* 3. A struct of absolute addresses, sent from MPI_BOTTOM. */
    if (size >= 2 && rank < 2) {
        static int x;
        static double y;
        MPI_Aint d[2];
        int bl[2] = {1, 1};
        MPI_Datatype ts[2] = {MPI_INT, MPI_DOUBLE}, t;
        MPI_Get_address(&x, &d[0]);
        MPI_Get_address(&y, &d[1]);
        MPI_Type_create_struct(2, bl, d, ts, &t);
        MPI_Type_commit(&t);
        if (rank == 0) {
            x = 42;
            y = 2.5;
            CHECK_OK(MPI_Send(MPI_BOTTOM, 1, t, 1, 3, MPI_COMM_WORLD));
        } else {
            x = 0;
            y = 0;
            CHECK_OK(MPI_Recv(MPI_BOTTOM, 1, t, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(x == 42 && y == 2.5, "MPI_BOTTOM struct got %d %g", x, y);
        }
        MPI_Type_free(&t);
    }

    /* 4. A struct of one double resized to extent 12 keeps extent 12. */
    {
        MPI_Datatype r, st;
        MPI_Type_create_resized(MPI_DOUBLE, 0, 12, &r);
        int bl = 1;
        MPI_Aint d = 0;
        MPI_Type_create_struct(1, &bl, &d, &r, &st);
        MPI_Aint lb, ext;
        MPI_Type_get_extent(st, &lb, &ext);
        CHECK(lb == 0 && ext == 12, "struct of a resized double: lb %ld extent %ld", (long)lb,
              (long)ext);
        MPI_Type_free(&st);
        MPI_Type_free(&r);
    }

    /* 5. MINLOC on longs 2^53 and 2^53 + 1. */
    {
        struct { long v; int i; } in, out;
        in.v = (1L << 53) + (rank == 0 ? 1 : 0);
        in.i = rank;
        CHECK_OK(MPI_Allreduce(&in, &out, 1, MPI_LONG_INT, MPI_MINLOC, MPI_COMM_WORLD));
        long want = size > 1 ? (1L << 53) : (1L << 53) + 1;
        int wanti = size > 1 ? 1 : 0;
        CHECK(out.v == want && out.i == wanti, "MINLOC long: %ld at %d", out.v, out.i);
    }

    /* 6. Freed handles stay freed; new types are distinct. */
    {
        MPI_Datatype a, b, c, copy;
        MPI_Type_contiguous(2, MPI_INT, &a);
        copy = a;
        MPI_Type_free(&a);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        (void)copy;
        MPI_Type_contiguous(3, MPI_INT, &b);
        MPI_Type_contiguous(5, MPI_INT, &c);
        CHECK(b != c, "two live datatypes share a handle");
        int sb = 0, sc = 0;
        MPI_Type_size(b, &sb);
        MPI_Type_size(c, &sc);
        CHECK(sb == 12 && sc == 20, "sizes %d %d", sb, sc);
        MPI_Type_free(&b);
        MPI_Type_free(&c);
    }
    return ct_finish();
}
