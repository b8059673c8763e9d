/* ranks: 2 */
/* Array datatypes and datatype decoding (MPI 4.1 §5.1.3, §5.1.4,
 * §5.1.13):
 * - MPI_Type_create_subarray in C and Fortran order, 2 and 3 dimensions:
 *   size, bounds (0 and the whole array), the elements it packs, in
 *   order, and a send of it received as contiguous ints;
 * - MPI_Type_create_darray with block, cyclic(2), cyclic and none
 *   distributions on a 2 x 2 grid: one rank's elements by hand, and every
 *   element held by exactly one of the four ranks, in both orders;
 * - on shmpi, bad arguments (a start past the array, a grid that is not
 *   the size, an unknown order or distribution) are MPI_ERR_ARG;
 * - MPI_Type_get_envelope / get_contents give back each constructor and
 *   its arguments; a derived type among them is a new handle that works
 *   and is freed; a predefined type is MPI_COMBINER_NAMED. */
#include "common.h"
#include <string.h>

/* Packs one instance of t from base; returns the ints packed. */
static int pack_ints(void *base, MPI_Datatype t, int *outv, int max)
{
    int pos = 0;
    CHECK_OK(MPI_Pack(base, 1, t, outv, max * (int)sizeof(int), &pos, MPI_COMM_WORLD));
    return pos / (int)sizeof(int);
}

static void check_list(const char *what, const int *got, int ngot, const int *want, int nwant)
{
    CHECK(ngot == nwant, "%s: %d elements, not %d", what, ngot, nwant);
    for (int i = 0; i < ngot && i < nwant; i++)
        CHECK(got[i] == want[i], "%s: element %d is %d, not %d", what, i, got[i], want[i]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int a[4 * 6], got[64];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++) a[i * 6 + j] = 100 * i + j;

    /* 1. A 2 x 3 block at (1, 2) of a 4 x 6 array, C order. */
    MPI_Datatype sub;
    int sizes[2] = {4, 6}, subs[2] = {2, 3}, starts[2] = {1, 2};
    CHECK_OK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sub));
    CHECK_OK(MPI_Type_commit(&sub));
    int size = 0;
    MPI_Aint lb = -1, ext = -1;
    MPI_Type_size(sub, &size);
    MPI_Type_get_extent(sub, &lb, &ext);
    CHECK(size == 6 * (int)sizeof(int) && lb == 0 && ext == 24 * (MPI_Aint)sizeof(int),
          "C subarray: size %d lb %ld extent %ld", size, (long)lb, (long)ext);
    int want_c[6] = {102, 103, 104, 202, 203, 204};
    check_list("C subarray", got, pack_ints(a, sub, got, 64), want_c, 6);
    if (me == 0) {
        CHECK_OK(MPI_Send(a, 1, sub, 1, 7, MPI_COMM_WORLD));
    } else {
        int r[6] = {0};
        MPI_Status st;
        CHECK_OK(MPI_Recv(r, 6, MPI_INT, 0, 7, MPI_COMM_WORLD, &st));
        check_list("received subarray", r, 6, want_c, 6);
    }

    /* The same numbers in Fortran order: a[j * 4 + i] is element (i, j)
     * of a 4 x 6 column-major array. */
    MPI_Datatype subf;
    CHECK_OK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_INT, &subf));
    CHECK_OK(MPI_Type_commit(&subf));
    int want_f[6];
    for (int j = 0, k = 0; j < 3; j++)
        for (int i = 0; i < 2; i++) want_f[k++] = a[(starts[1] + j) * 4 + (starts[0] + i)];
    check_list("Fortran subarray", got, pack_ints(a, subf, got, 64), want_f, 6);

    /* 3-d, C order: a 1 x 2 x 2 block at (1, 0, 1) of 2 x 3 x 4. */
    MPI_Datatype sub3;
    int s3[3] = {2, 3, 4}, ss3[3] = {1, 2, 2}, st3[3] = {1, 0, 1};
    CHECK_OK(MPI_Type_create_subarray(3, s3, ss3, st3, MPI_ORDER_C, MPI_INT, &sub3));
    CHECK_OK(MPI_Type_commit(&sub3));
    int want3[4] = {a[12 + 1], a[12 + 2], a[12 + 5], a[12 + 6]};
    check_list("3-d subarray", got, pack_ints(a, sub3, got, 64), want3, 4);

    /* 2. darray: a 6 x 5 array on a 2 x 2 grid, rows by block, columns
     * cyclic(2). Rank 1 sits at (0, 1): rows 0-2, columns 2 and 3. */
    int g[2] = {6, 5}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
        darg[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2] = {2, 2};
    int b[30];
    for (int i = 0; i < 30; i++) b[i] = i;
    for (int order = 0; order < 2; order++) {
        int ord = order ? MPI_ORDER_FORTRAN : MPI_ORDER_C;
        int seen[30] = {0};
        for (int r = 0; r < 4; r++) {
            MPI_Datatype d;
            CHECK_OK(MPI_Type_create_darray(4, r, 2, g, dist, darg, ps, ord, MPI_INT, &d));
            CHECK_OK(MPI_Type_commit(&d));
            MPI_Type_get_extent(d, &lb, &ext);
            CHECK(lb == 0 && ext == 30 * (MPI_Aint)sizeof(int), "darray extent %ld", (long)ext);
            int n = pack_ints(b, d, got, 64);
            for (int k = 0; k < n; k++) seen[got[k]]++;
            if (r == 1 && ord == MPI_ORDER_C) {
                int want[6] = {2, 3, 7, 8, 12, 13};
                check_list("darray rank 1, C", got, n, want, 6);
            }
            if (r == 1 && ord == MPI_ORDER_FORTRAN) {
                /* Element (i, j) at i + 6 j; columns vary slowest. */
                int want[6] = {12, 13, 14, 18, 19, 20};
                check_list("darray rank 1, Fortran", got, n, want, 6);
            }
            MPI_Type_free(&d);
        }
        for (int i = 0; i < 30; i++)
            CHECK(seen[i] == 1, "order %d: element %d held %d times", ord, i, seen[i]);
    }
    /* Cyclic(1) and none: a 5 x 3 array on 2 x 1; rank 1 has rows 1, 3. */
    {
        int g2[2] = {5, 3}, d2[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE},
            a2[2] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG}, p2[2] = {2, 1};
        MPI_Datatype d;
        CHECK_OK(MPI_Type_create_darray(2, 1, 2, g2, d2, a2, p2, MPI_ORDER_C, MPI_INT, &d));
        CHECK_OK(MPI_Type_commit(&d));
        int want[6] = {3, 4, 5, 9, 10, 11};
        check_list("cyclic x none", got, pack_ints(b, d, got, 64), want, 6);
        MPI_Type_free(&d);
    }

    /* Cyclic(19) is cyclic(19), not the default darg: 40 elements on 2
     * processes, rank 0 has 0-18 and 38-39. */
    {
        int g1 = 40, d1 = MPI_DISTRIBUTE_CYCLIC, a1 = 19, p1 = 2, v[40], want[21];
        for (int i = 0; i < 40; i++) v[i] = i;
        for (int i = 0; i < 19; i++) want[i] = i;
        want[19] = 38;
        want[20] = 39;
        MPI_Datatype d;
        CHECK_OK(MPI_Type_create_darray(2, 0, 1, &g1, &d1, &a1, &p1, MPI_ORDER_C, MPI_INT, &d));
        CHECK_OK(MPI_Type_commit(&d));
        check_list("cyclic(19)", got, pack_ints(v, d, got, 64), want, 21);
        MPI_Type_free(&d);
    }

    /* 3. Bad arguments (MPICH 4.0 builds the subarray past the array and
     * divides by zero on the grid of the wrong size). */
#ifdef SHMPI_MPI_H
    MPI_Datatype bad = MPI_DATATYPE_NULL;
    int far[2] = {3, 2};
    CHECK(ct_class(MPI_Type_create_subarray(2, sizes, subs, far, MPI_ORDER_C, MPI_INT, &bad)) ==
              MPI_ERR_ARG,
          "a subarray past the array");
    CHECK(ct_class(MPI_Type_create_subarray(2, sizes, subs, starts, 99, MPI_INT, &bad)) ==
              MPI_ERR_ARG,
          "order 99");
    CHECK(ct_class(MPI_Type_create_darray(3, 0, 2, g, dist, darg, ps, MPI_ORDER_C, MPI_INT,
                                          &bad)) == MPI_ERR_ARG,
          "a 2 x 2 grid of size 3");
    int bogus[2] = {MPI_DISTRIBUTE_BLOCK, 12345};
    CHECK(ct_class(MPI_Type_create_darray(4, 0, 2, g, bogus, darg, ps, MPI_ORDER_C, MPI_INT,
                                          &bad)) == MPI_ERR_ARG,
          "distribution 12345");
    CHECK(bad == MPI_DATATYPE_NULL, "a refused constructor made a type");
#endif

    /* 4. Decoding. */
    int ni, na, nd, comb;
    CHECK_OK(MPI_Type_get_envelope(MPI_INT, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_NAMED && ni == 0 && na == 0 && nd == 0, "MPI_INT: %d", comb);
    MPI_Datatype vec, st;
    CHECK_OK(MPI_Type_vector(3, 2, 5, MPI_DOUBLE, &vec));
    CHECK_OK(MPI_Type_get_envelope(vec, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_VECTOR && ni == 3 && na == 0 && nd == 1, "vector envelope");
    int iv[8] = {0};
    MPI_Aint av[4] = {0};
    MPI_Datatype tv[4] = {MPI_DATATYPE_NULL};
    CHECK_OK(MPI_Type_get_contents(vec, 8, 4, 4, iv, av, tv));
    CHECK(iv[0] == 3 && iv[1] == 2 && iv[2] == 5 && tv[0] == MPI_DOUBLE, "vector contents");
    int bls[2] = {1, 2};
    MPI_Aint dis[2] = {0, 16};
    MPI_Datatype tys[2] = {MPI_CHAR, vec};
    CHECK_OK(MPI_Type_create_struct(2, bls, dis, tys, &st));
    CHECK_OK(MPI_Type_get_envelope(st, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_STRUCT && ni == 3 && na == 2 && nd == 2, "struct envelope");
    CHECK_OK(MPI_Type_get_contents(st, 8, 4, 4, iv, av, tv));
    CHECK(iv[0] == 2 && iv[1] == 1 && iv[2] == 2 && av[0] == 0 && av[1] == 16, "struct ints");
    CHECK(tv[0] == MPI_CHAR, "struct's first type");
    int vsize = 0;
    CHECK_OK(MPI_Type_size(tv[1], &vsize));
    CHECK(vsize == 6 * (int)sizeof(double), "the vector given back: size %d", vsize);
    CHECK_OK(MPI_Type_get_envelope(tv[1], &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_VECTOR, "the vector given back decodes as %d", comb);
    CHECK_OK(MPI_Type_free(&tv[1]));
    CHECK_OK(MPI_Type_get_envelope(sub, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_SUBARRAY && ni == 8 && na == 0 && nd == 1, "subarray envelope");
    CHECK_OK(MPI_Type_get_contents(sub, 8, 0, 1, iv, av, tv));
    CHECK(iv[0] == 2 && iv[1] == 4 && iv[2] == 6 && iv[3] == 2 && iv[5] == 1 && iv[6] == 2 &&
              iv[7] == MPI_ORDER_C && tv[0] == MPI_INT,
          "subarray contents");
    MPI_Datatype rs, dup;
    CHECK_OK(MPI_Type_create_resized(MPI_INT, -4, 16, &rs));
    CHECK_OK(MPI_Type_get_contents(rs, 0, 2, 1, iv, av, tv));
    CHECK(av[0] == -4 && av[1] == 16 && tv[0] == MPI_INT, "resized contents");
    CHECK_OK(MPI_Type_dup(sub, &dup));
    CHECK_OK(MPI_Type_get_envelope(dup, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_DUP && ni == 0 && nd == 1, "dup envelope");
    CHECK_OK(MPI_Type_get_contents(dup, 0, 0, 1, iv, av, tv));
    CHECK(tv[0] != MPI_DATATYPE_NULL, "dup's type: null");
    CHECK_OK(MPI_Type_size(tv[0], &size));
    CHECK(size == 6 * (int)sizeof(int), "dup's type: size %d", size);
    CHECK_OK(MPI_Type_free(&tv[0]));
#ifdef SHMPI_MPI_H
    CHECK(ct_class(MPI_Type_get_contents(MPI_INT, 0, 0, 0, iv, av, tv)) == MPI_ERR_ARG,
          "contents of a named type");
    CHECK(ct_class(MPI_Type_get_contents(st, 1, 4, 4, iv, av, tv)) == MPI_ERR_ARG,
          "contents into too few ints");
#endif
    MPI_Type_free(&dup);
    MPI_Type_free(&rs);
    MPI_Type_free(&st);
    MPI_Type_free(&vec);
    MPI_Type_free(&sub3);
    MPI_Type_free(&subf);
    MPI_Type_free(&sub);
    return ct_finish();
}
