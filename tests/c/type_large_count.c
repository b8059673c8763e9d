/* ranks: 1 3 */
/* Large counts for packing and user operations (MPI 4.1 §19.2):
 * MPI_Pack_size_c, MPI_Pack_c and MPI_Unpack_c round-trip a strided
 * type, with an MPI_Count position; MPI_Op_create_c makes an operation
 * whose function gets an MPI_Count length, used by MPI_Allreduce_c,
 * MPI_Reduce_local_c and the int-count MPI_Allreduce alike; a position
 * past the buffer is MPI_ERR_TRUNCATE (skipped under MPICH 4.0, whose
 * MPI_Pack_c writes past outsize and succeeds). */
#include "common.h"

static long long calls, elements;

static void maxabs(void *in, void *inout, MPI_Count *len, MPI_Datatype *t)
{
    (void)t;
    calls++;
    elements += *len;
    int *a = in, *b = inout;
    for (MPI_Count i = 0; i < *len; i++) {
        int x = a[i] < 0 ? -a[i] : a[i], y = b[i] < 0 ? -b[i] : b[i];
        b[i] = x > y ? x : y;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Pack_c / Unpack_c of every other int. */
    MPI_Datatype vec;
    MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Count need = -1;
    CHECK_OK(MPI_Pack_size_c((MPI_Count)2, vec, MPI_COMM_WORLD, &need));
    CHECK(need >= 6 * (MPI_Count)sizeof(int), "Pack_size_c: %lld", (long long)need);
    int src[12], dst[12];
    for (int k = 0; k < 12; k++) {
        src[k] = k + 100 * me;
        dst[k] = -1;
    }
    char packed[256];
    MPI_Count pos = 0;
    CHECK_OK(MPI_Pack_c(src, (MPI_Count)2, vec, packed, (MPI_Count)sizeof packed, &pos,
                        MPI_COMM_WORLD));
    CHECK(pos == 6 * (MPI_Count)sizeof(int), "Pack_c position %lld", (long long)pos);
    MPI_Count upos = 0;
    CHECK_OK(MPI_Unpack_c(packed, pos, &upos, dst, (MPI_Count)2, vec, MPI_COMM_WORLD));
    CHECK(upos == pos, "Unpack_c position %lld", (long long)upos);
    /* The vector's extent is 5 ints: the second instance starts at 5. */
    for (int k = 0; k < 12; k++) {
        int in_first = k < 5 && k % 2 == 0, in_second = k >= 5 && k < 10 && (k - 5) % 2 == 0;
        int want = in_first || in_second ? k + 100 * me : -1;
        CHECK(dst[k] == want, "dst[%d] = %d, want %d", k, dst[k], want);
    }
    /* No room left: truncated, the position unchanged. */
    if (OURS) {
        MPI_Count full = (MPI_Count)sizeof packed - 4;
        int rc = MPI_Pack_c(src, (MPI_Count)2, vec, packed, (MPI_Count)sizeof packed, &full,
                            MPI_COMM_WORLD);
        CHECK(ct_class(rc) == MPI_ERR_TRUNCATE, "Pack_c past the end: class %d", ct_class(rc));
        CHECK(full == (MPI_Count)sizeof packed - 4, "Pack_c moved the position on failure");
    }
    MPI_Type_free(&vec);

    /* Op_create_c */
    MPI_Op op;
    CHECK_OK(MPI_Op_create_c(maxabs, 1, &op));
    int mine[4], out[4];
    for (int k = 0; k < 4; k++) mine[k] = (me % 2 ? -1 : 1) * (me + k);
    CHECK_OK(MPI_Allreduce_c(mine, out, (MPI_Count)4, MPI_INT, op, MPI_COMM_WORLD));
    for (int k = 0; k < 4; k++)
        CHECK(out[k] == p - 1 + k, "Allreduce_c with Op_create_c: out[%d] = %d", k, out[k]);
    for (int k = 0; k < 4; k++) out[k] = -1;
    CHECK_OK(MPI_Allreduce(mine, out, 4, MPI_INT, op, MPI_COMM_WORLD));
    CHECK(out[3] == p + 2, "Allreduce with Op_create_c: %d", out[3]);
    int io[2] = {-7, 1}, in[2] = {3, -9};
    CHECK_OK(MPI_Reduce_local_c(in, io, (MPI_Count)2, MPI_INT, op));
    CHECK(io[0] == 7 && io[1] == 9, "Reduce_local_c: %d %d", io[0], io[1]);
    CHECK(calls > 0 && elements > 0, "the MPI_Count function was not called");
    int commute = 0;
    MPI_Op_commutative(op, &commute);
    CHECK(commute, "Op_create_c lost commute");
    MPI_Op_free(&op);
    return ct_finish();
}
