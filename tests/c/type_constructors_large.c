/* ranks: 1 */
/* The large-count datatype constructors (MPI 4.1 §19.2): each _c form
 * (contiguous, vector, hvector, indexed, hindexed, indexed_block,
 * hindexed_block, struct, subarray, darray, resized) makes the same type
 * as its int form (same size, extent and packed bytes of one buffer);
 * MPI_Type_get_envelope_c / get_contents_c give its arguments as large
 * counts (the integers left: subarray's ndims and order, darray's all
 * but the global sizes), while the int MPI_Type_get_envelope refuses it
 * with MPI_ERR_TYPE; for an int-made type the _c queries give the int
 * form's arguments and no large count. (MPICH 4.0 refuses the int
 * query with MPI_ERR_OTHER; any error passes there.) */
#include "common.h"

#define N 64

static int src[N];

/* Checks that `a` (int form) and `b` (_c form) are the same type. */
static void same(const char *what, MPI_Datatype a, MPI_Datatype b)
{
    MPI_Type_commit(&a);
    MPI_Type_commit(&b);
    int sa, sb;
    MPI_Aint lba, exa, lbb, exb;
    MPI_Type_size(a, &sa);
    MPI_Type_size(b, &sb);
    MPI_Type_get_extent(a, &lba, &exa);
    MPI_Type_get_extent(b, &lbb, &exb);
    CHECK(sa == sb && lba == lbb && exa == exb, "%s: size %d/%d lb %ld/%ld extent %ld/%ld", what,
          sa, sb, (long)lba, (long)lbb, (long)exa, (long)exb);
    char pa[4 * N], pb[4 * N];
    int qa = 0, qb = 0;
    CHECK_OK(MPI_Pack(src, 1, a, pa, sizeof pa, &qa, MPI_COMM_WORLD));
    CHECK_OK(MPI_Pack(src, 1, b, pb, sizeof pb, &qb, MPI_COMM_WORLD));
    CHECK(qa == qb && memcmp(pa, pb, qa) == 0, "%s: packed bytes differ", what);
}

/* Checks the _c envelope of `t`: counts and combiner. */
static void envelope(const char *what, MPI_Datatype t, MPI_Count ni, MPI_Count na,
                     MPI_Count nl, MPI_Count nd, int comb)
{
    MPI_Count i = -1, a = -1, l = -1, d = -1;
    int c = -1;
    CHECK_OK(MPI_Type_get_envelope_c(t, &i, &a, &l, &d, &c));
    CHECK(i == ni && a == na && l == nl && d == nd && c == comb,
          "%s: envelope_c %lld %lld %lld %lld %d, want %lld %lld %lld %lld %d", what,
          (long long)i, (long long)a, (long long)l, (long long)d, c, (long long)ni,
          (long long)na, (long long)nl, (long long)nd, comb);
    if (nl > 0) {
        int ii, ia, id, ic;
        int rc = MPI_Type_get_envelope(t, &ii, &ia, &id, &ic);
        CHECK(OURS ? ct_class(rc) == MPI_ERR_TYPE : rc != MPI_SUCCESS,
              "%s: int envelope of a _c type: class %d", what, ct_class(rc));
    }
}

static void freeboth(MPI_Datatype *a, MPI_Datatype *b)
{
    MPI_Type_free(a);
    MPI_Type_free(b);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int k = 0; k < N; k++) src[k] = k * 7 + 1;
    MPI_Datatype a, b;

    MPI_Type_contiguous(3, MPI_INT, &a);
    CHECK_OK(MPI_Type_contiguous_c(3, MPI_INT, &b));
    same("contiguous", a, b);
    envelope("contiguous_c", b, 0, 0, 1, 1, MPI_COMBINER_CONTIGUOUS);
    envelope("contiguous", a, 1, 0, 0, 1, MPI_COMBINER_CONTIGUOUS);
    freeboth(&a, &b);

    MPI_Type_vector(3, 2, 4, MPI_INT, &a);
    CHECK_OK(MPI_Type_vector_c(3, 2, 4, MPI_INT, &b));
    same("vector", a, b);
    envelope("vector_c", b, 0, 0, 3, 1, MPI_COMBINER_VECTOR);
    MPI_Count lc[3];
    int ints[1];
    MPI_Aint addrs[1];
    MPI_Datatype dt[1];
    CHECK_OK(MPI_Type_get_contents_c(b, 0, 0, 3, 1, ints, addrs, lc, dt));
    CHECK(lc[0] == 3 && lc[1] == 2 && lc[2] == 4 && dt[0] == MPI_INT,
          "vector_c contents: %lld %lld %lld", (long long)lc[0], (long long)lc[1],
          (long long)lc[2]);
    int rc = MPI_Type_get_contents(b, 0, 0, 1, ints, addrs, dt);
    CHECK(OURS ? ct_class(rc) == MPI_ERR_TYPE : rc != MPI_SUCCESS,
          "int contents of vector_c: class %d", ct_class(rc));
    freeboth(&a, &b);

    MPI_Type_create_hvector(3, 1, 12, MPI_INT, &a);
    CHECK_OK(MPI_Type_create_hvector_c(3, 1, 12, MPI_INT, &b));
    same("hvector", a, b);
    envelope("hvector_c", b, 0, 0, 3, 1, MPI_COMBINER_HVECTOR);
    freeboth(&a, &b);

    int bl[3] = {2, 1, 3}, di[3] = {0, 5, 9};
    MPI_Count blc[3] = {2, 1, 3}, dic[3] = {0, 5, 9}, dbc[3] = {0, 20, 36};
    MPI_Aint dba[3] = {0, 20, 36};
    MPI_Type_indexed(3, bl, di, MPI_INT, &a);
    CHECK_OK(MPI_Type_indexed_c(3, blc, dic, MPI_INT, &b));
    same("indexed", a, b);
    envelope("indexed_c", b, 0, 0, 7, 1, MPI_COMBINER_INDEXED);
    freeboth(&a, &b);

    MPI_Type_create_hindexed(3, bl, dba, MPI_INT, &a);
    CHECK_OK(MPI_Type_create_hindexed_c(3, blc, dbc, MPI_INT, &b));
    same("hindexed", a, b);
    envelope("hindexed_c", b, 0, 0, 7, 1, MPI_COMBINER_HINDEXED);
    envelope("hindexed", a, 4, 3, 0, 1, MPI_COMBINER_HINDEXED);
    freeboth(&a, &b);

    MPI_Type_create_indexed_block(3, 2, di, MPI_INT, &a);
    CHECK_OK(MPI_Type_create_indexed_block_c(3, 2, dic, MPI_INT, &b));
    same("indexed_block", a, b);
    envelope("indexed_block_c", b, 0, 0, 5, 1, MPI_COMBINER_INDEXED_BLOCK);
    freeboth(&a, &b);

    MPI_Type_create_hindexed_block(3, 2, dba, MPI_INT, &a);
    CHECK_OK(MPI_Type_create_hindexed_block_c(3, 2, dbc, MPI_INT, &b));
    same("hindexed_block", a, b);
    envelope("hindexed_block_c", b, 0, 0, 5, 1, MPI_COMBINER_HINDEXED_BLOCK);
    freeboth(&a, &b);

    MPI_Datatype ts[2] = {MPI_INT, MPI_SHORT};
    int sbl[2] = {2, 3};
    MPI_Aint sdi[2] = {0, 16};
    MPI_Count sblc[2] = {2, 3}, sdic[2] = {0, 16};
    MPI_Type_create_struct(2, sbl, sdi, ts, &a);
    CHECK_OK(MPI_Type_create_struct_c(2, sblc, sdic, ts, &b));
    same("struct", a, b);
    envelope("struct_c", b, 0, 0, 5, 2, MPI_COMBINER_STRUCT);
    freeboth(&a, &b);

    int sz[2] = {4, 8}, sub[2] = {2, 3}, st[2] = {1, 2};
    MPI_Count szc[2] = {4, 8}, subc[2] = {2, 3}, stc[2] = {1, 2};
    MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &a);
    CHECK_OK(MPI_Type_create_subarray_c(2, szc, subc, stc, MPI_ORDER_C, MPI_INT, &b));
    same("subarray", a, b);
    envelope("subarray_c", b, 2, 0, 6, 1, MPI_COMBINER_SUBARRAY);
    int si[2];
    MPI_Count sl[6];
    CHECK_OK(MPI_Type_get_contents_c(b, 2, 0, 6, 1, si, addrs, sl, dt));
    CHECK(si[0] == 2 && si[1] == MPI_ORDER_C && sl[0] == 4 && sl[3] == 3 && sl[5] == 2,
          "subarray_c contents: %d %d %lld %lld %lld", si[0], si[1], (long long)sl[0],
          (long long)sl[3], (long long)sl[5]);
    freeboth(&a, &b);

    int gs[2] = {4, 8}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
        dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2] = {2, 2};
    MPI_Count gsc[2] = {4, 8};
    MPI_Type_create_darray(4, 3, 2, gs, dist, dargs, ps, MPI_ORDER_C, MPI_INT, &a);
    CHECK_OK(MPI_Type_create_darray_c(4, 3, 2, gsc, dist, dargs, ps, MPI_ORDER_C, MPI_INT, &b));
    same("darray", a, b);
    envelope("darray_c", b, 10, 0, 2, 1, MPI_COMBINER_DARRAY);
    freeboth(&a, &b);

    MPI_Type_create_resized(MPI_INT, -4, 16, &a);
    CHECK_OK(MPI_Type_create_resized_c(MPI_INT, -4, 16, &b));
    MPI_Aint lb, ex;
    MPI_Type_get_extent(b, &lb, &ex);
    CHECK(lb == -4 && ex == 16, "resized_c: lb %ld extent %ld", (long)lb, (long)ex);
    envelope("resized_c", b, 0, 0, 2, 1, MPI_COMBINER_RESIZED);
    envelope("resized", a, 0, 2, 0, 1, MPI_COMBINER_RESIZED);
    freeboth(&a, &b);

    /* A negative count. */
    rc = MPI_Type_contiguous_c(-1, MPI_INT, &b);
    CHECK(rc != MPI_SUCCESS, "contiguous_c with count -1 succeeded");
    if (OURS) {
        /* Counts whose bytes or extent pass what an address holds: an
         * error, not a wrapped size or extent. */
        rc = MPI_Type_contiguous_c((MPI_Count)1 << 61, MPI_INT, &b);
        CHECK(rc != MPI_SUCCESS, "contiguous_c of 2^61 ints succeeded");
        MPI_Count two[2] = {(MPI_Count)1 << 61, (MPI_Count)1 << 61}, at[2] = {0, 0};
        rc = MPI_Type_create_hindexed_c(2, two, at, MPI_INT, &b);
        CHECK(rc != MPI_SUCCESS, "hindexed_c of 2 x 2^61 ints succeeded");
        /* One block uses no stride, however large. */
        MPI_Type_vector_c(1, 2, (MPI_Count)1 << 62, MPI_INT, &b);
        int one = 0;
        MPI_Type_size(b, &one);
        CHECK(one == 8, "vector_c of one block: size %d", one);
        MPI_Type_free(&b);
    }
    return ct_finish();
}
