/* ranks: 1 2 4 */
/* Derived datatypes in point-to-point (ring, Isend/Irecv; oneself at 1
 * rank): strided vector sent and received as contiguous and back (gaps left
 * untouched), a 1 MiB-payload vector, indexed with count > 1, indexed_block,
 * hvector, a padded C struct (resized to sizeof) with count > 1 whose padding
 * bytes in the receive buffer stay untouched, a resized int with count > 1,
 * a duplicated type, and MPI_Get_count / MPI_Get_elements on derived types
 * (including MPI_UNDEFINED for a partial element). */
#include "common.h"
#include <stddef.h>

static int rank, left, right;

static int v(int src, int i) { return src * 1000000 + i; }

/* One ring step: receive (rbuf, rcount, rtype) from the left while sending
 * (sbuf, scount, stype) to the right. */
static void ring(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, int tag, MPI_Status *st)
{
    MPI_Request req[2];
    MPI_Status sts[2];
    CHECK_OK(MPI_Irecv(rbuf, rcount, rtype, left, tag, MPI_COMM_WORLD, &req[0]));
    CHECK_OK(MPI_Isend(sbuf, scount, stype, right, tag, MPI_COMM_WORLD, &req[1]));
    CHECK_OK(MPI_Waitall(2, req, sts));
    *st = sts[0];
    CHECK(st->MPI_SOURCE == left && st->MPI_TAG == tag, "tag %d: status %d/%d", tag,
          st->MPI_SOURCE, st->MPI_TAG);
}

static void check_counts(MPI_Status *st, MPI_Datatype t, int want_count, int want_elems,
                         const char *what)
{
    int c = -2, e = -2;
    CHECK_OK(MPI_Get_count(st, t, &c));
    CHECK_OK(MPI_Get_elements(st, t, &e));
    CHECK(c == want_count, "%s: Get_count %d want %d", what, c, want_count);
    CHECK(e == want_elems, "%s: Get_elements %d want %d", what, e, want_elems);
}

struct S {
    char c;
    double d;
    int i;
    short s;
};

int main(int argc, char **argv)
{
    int size;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;

    /* 1/2. vector(10 blocks of 2, stride 5) <-> 20 contiguous ints. */
    {
        MPI_Datatype vec, vdup;
        int a[50], b[50];
        CHECK_OK(MPI_Type_vector(10, 2, 5, MPI_INT, &vec));
        CHECK_OK(MPI_Type_commit(&vec));
        CHECK_OK(MPI_Type_dup(vec, &vdup));
        CHECK_OK(MPI_Type_commit(&vdup));
        for (int i = 0; i < 50; i++) { a[i] = v(rank, i); b[i] = -1; }
        ring(a, 1, vdup, b, 50, MPI_INT, 1, &st);
        check_counts(&st, MPI_INT, 20, 20, "vector as contiguous");
        for (int k = 0; k < 50; k++) {
            int want = k < 20 ? v(left, (k / 2) * 5 + k % 2) : -1;
            CHECK(b[k] == want, "vector as contiguous b[%d] = %d want %d", k, b[k], want);
        }
        /* Back: 20 contiguous ints received into the vector. */
        for (int i = 0; i < 50; i++) { a[i] = v(rank, i); b[i] = -1; }
        ring(a, 20, MPI_INT, b, 1, vec, 2, &st);
        check_counts(&st, vec, 1, 20, "contiguous into vector");
        for (int i = 0; i < 50; i++) {
            int blk = i / 5, off = i % 5;
            int want = (blk < 10 && off < 2) ? v(left, blk * 2 + off) : -1;
            CHECK(b[i] == want, "contiguous into vector b[%d] = %d want %d", i, b[i], want);
        }
        /* Partial element: 5 ints into vectors: count undefined, 5 elements. */
        for (int i = 0; i < 50; i++) b[i] = -1;
        ring(a, 5, MPI_INT, b, 1, vec, 3, &st);
        check_counts(&st, vec, MPI_UNDEFINED, 5, "5 ints into vector");
        {
            static const int pos[5] = {0, 1, 5, 6, 10};
            for (int k = 0; k < 5; k++)
                CHECK(b[pos[k]] == v(left, k), "partial vector b[%d] = %d", pos[k], b[pos[k]]);
            CHECK(b[2] == -1 && b[11] == -1, "partial vector wrote a gap or past the data");
        }
        MPI_Type_free(&vdup);
        MPI_Type_free(&vec);
    }

    /* Large vector: 131072 blocks of 2 ints, stride 3 (1 MiB payload). */
    {
        const int nblk = 131072;
        MPI_Datatype big;
        int *a = malloc((size_t)nblk * 3 * sizeof(int));
        int *b = malloc((size_t)nblk * 2 * sizeof(int));
        if (!a || !b) MPI_Abort(MPI_COMM_WORLD, 2);
        CHECK_OK(MPI_Type_vector(nblk, 2, 3, MPI_INT, &big));
        CHECK_OK(MPI_Type_commit(&big));
        for (int i = 0; i < nblk * 3; i++) a[i] = v(rank, i);
        for (int i = 0; i < nblk * 2; i++) b[i] = -1;
        ring(a, 1, big, b, nblk * 2, MPI_INT, 4, &st);
        check_counts(&st, MPI_INT, nblk * 2, nblk * 2, "1 MiB vector");
        int bad = 0;
        for (int k = 0; k < nblk * 2; k++)
            if (b[k] != v(left, (k / 2) * 3 + k % 2)) bad++;
        CHECK(bad == 0, "1 MiB vector: %d bad values", bad);
        MPI_Type_free(&big);
        free(a);
        free(b);
    }

    /* indexed {3,1,4} at {0,5,9}: 8 ints per element, extent 13 ints. Sent
     * with count 2, received into the same type with count 3 and as 16
     * contiguous ints. */
    {
        int bl[3] = {3, 1, 4}, dp[3] = {0, 5, 9};
        MPI_Datatype idx;
        int a[39], b[39];
        MPI_Aint lb, ext;
        CHECK_OK(MPI_Type_indexed(3, bl, dp, MPI_INT, &idx));
        CHECK_OK(MPI_Type_commit(&idx));
        CHECK_OK(MPI_Type_get_extent(idx, &lb, &ext));
        CHECK(lb == 0 && ext == 13 * (MPI_Aint)sizeof(int), "indexed extent %ld", (long)ext);
        int inmap[13] = {0};
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < bl[k]; j++) inmap[dp[k] + j] = 1;
        for (int i = 0; i < 39; i++) { a[i] = v(rank, i); b[i] = -1; }
        ring(a, 2, idx, b, 3, idx, 5, &st);
        check_counts(&st, idx, 2, 16, "indexed count 2");
        for (int i = 0; i < 39; i++) {
            int want = (i < 26 && inmap[i % 13]) ? v(left, i) : -1;
            CHECK(b[i] == want, "indexed b[%d] = %d want %d", i, b[i], want);
        }
        for (int i = 0; i < 39; i++) b[i] = -1;
        ring(a, 2, idx, b, 39, MPI_INT, 6, &st);
        check_counts(&st, MPI_INT, 16, 16, "indexed as contiguous");
        for (int i = 0, k = 0; i < 26; i++)
            if (inmap[i % 13]) {
                CHECK(b[k] == v(left, i), "indexed as contiguous b[%d] = %d want %d", k, b[k],
                      v(left, i));
                k++;
            }
        CHECK(b[16] == -1, "indexed as contiguous wrote past 16 ints");
        MPI_Type_free(&idx);
    }

    /* indexed_block: blocks of 2 at {1,4,8} received contiguous. */
    {
        int dp[3] = {1, 4, 8}, a[10], b[8];
        MPI_Datatype ib;
        CHECK_OK(MPI_Type_create_indexed_block(3, 2, dp, MPI_INT, &ib));
        CHECK_OK(MPI_Type_commit(&ib));
        for (int i = 0; i < 10; i++) a[i] = v(rank, i);
        for (int i = 0; i < 8; i++) b[i] = -1;
        ring(a, 1, ib, b, 8, MPI_INT, 7, &st);
        check_counts(&st, MPI_INT, 6, 6, "indexed_block");
        static const int src_idx[6] = {1, 2, 4, 5, 8, 9};
        for (int k = 0; k < 6; k++)
            CHECK(b[k] == v(left, src_idx[k]), "indexed_block b[%d] = %d", k, b[k]);
        CHECK(b[6] == -1, "indexed_block wrote past 6 ints");
        MPI_Type_free(&ib);
    }

    /* hvector of doubles: 4 blocks of 2, stride 5 doubles given in bytes. */
    {
        double a[20], b[10];
        MPI_Datatype hv;
        CHECK_OK(MPI_Type_create_hvector(4, 2, 5 * (MPI_Aint)sizeof(double), MPI_DOUBLE, &hv));
        CHECK_OK(MPI_Type_commit(&hv));
        for (int i = 0; i < 20; i++) a[i] = rank * 1000.0 + i + 0.5;
        for (int i = 0; i < 10; i++) b[i] = -1.0;
        ring(a, 1, hv, b, 10, MPI_DOUBLE, 8, &st);
        check_counts(&st, MPI_DOUBLE, 8, 8, "hvector");
        for (int k = 0; k < 8; k++) {
            double want = left * 1000.0 + (k / 2) * 5 + k % 2 + 0.5;
            CHECK(b[k] == want, "hvector b[%d] = %g want %g", k, b[k], want);
        }
        CHECK(b[8] == -1.0, "hvector wrote past 8 doubles");
        MPI_Type_free(&hv);
    }

    /* Padded struct, count 5 sent, room for 10 received. */
    {
        int bl[4] = {1, 1, 1, 1};
        MPI_Aint dp[4] = {offsetof(struct S, c), offsetof(struct S, d), offsetof(struct S, i),
                          offsetof(struct S, s)};
        MPI_Datatype ty[4] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT};
        MPI_Datatype raw, st_t;
        struct S a[5], b[10];
        CHECK_OK(MPI_Type_create_struct(4, bl, dp, ty, &raw));
        CHECK_OK(MPI_Type_create_resized(raw, 0, sizeof(struct S), &st_t));
        CHECK_OK(MPI_Type_commit(&st_t));
        memset(a, 0, sizeof a);
        for (int k = 0; k < 5; k++) {
            a[k].c = (char)('a' + k + rank);
            a[k].d = rank + k * 0.25;
            a[k].i = v(rank, k);
            a[k].s = (short)(100 * rank + k);
        }
        memset(b, 0xAB, sizeof b);
        ring(a, 5, st_t, b, 10, st_t, 9, &st);
        check_counts(&st, st_t, 5, 20, "struct");
        const unsigned char *raw_b = (const unsigned char *)b;
        for (int k = 0; k < 5; k++) {
            CHECK(b[k].c == (char)('a' + k + left) && b[k].d == left + k * 0.25 &&
                      b[k].i == v(left, k) && b[k].s == (short)(100 * left + k),
                  "struct %d: %c %g %d %d", k, b[k].c, b[k].d, b[k].i, b[k].s);
            /* Bytes that are not part of any field must be untouched. */
            for (size_t off = 0; off < sizeof(struct S); off++) {
                int in_field =
                    off < offsetof(struct S, c) + sizeof(char) || /* c is at offset 0 */
                    (off >= offsetof(struct S, d) && off < offsetof(struct S, d) + sizeof(double)) ||
                    (off >= offsetof(struct S, i) && off < offsetof(struct S, i) + sizeof(int)) ||
                    (off >= offsetof(struct S, s) && off < offsetof(struct S, s) + sizeof(short));
                if (!in_field)
                    CHECK(raw_b[k * sizeof(struct S) + off] == 0xAB,
                          "struct %d: padding byte %zu written", k, off);
            }
        }
        for (size_t off = 5 * sizeof(struct S); off < sizeof b; off++)
            if (raw_b[off] != 0xAB) {
                CHECK(raw_b[off] == 0xAB, "struct: byte %zu past 5 elements written", off);
                break;
            }
        MPI_Type_free(&st_t);
        MPI_Type_free(&raw);
    }

    /* int resized to an extent of 3 ints, count 4: every third int. */
    {
        MPI_Datatype r3;
        int a[12], b[12];
        MPI_Aint lb, ext;
        CHECK_OK(MPI_Type_create_resized(MPI_INT, 0, 3 * (MPI_Aint)sizeof(int), &r3));
        CHECK_OK(MPI_Type_commit(&r3));
        CHECK_OK(MPI_Type_get_extent(r3, &lb, &ext));
        CHECK(lb == 0 && ext == 3 * (MPI_Aint)sizeof(int), "resized extent %ld", (long)ext);
        for (int i = 0; i < 12; i++) { a[i] = v(rank, i); b[i] = -1; }
        ring(a, 4, r3, b, 12, MPI_INT, 10, &st);
        check_counts(&st, MPI_INT, 4, 4, "resized as contiguous");
        for (int k = 0; k < 12; k++) {
            int want = k < 4 ? v(left, 3 * k) : -1;
            CHECK(b[k] == want, "resized as contiguous b[%d] = %d want %d", k, b[k], want);
        }
        for (int i = 0; i < 12; i++) b[i] = -1;
        ring(a, 4, MPI_INT, b, 4, r3, 11, &st);
        check_counts(&st, r3, 4, 4, "contiguous into resized");
        for (int i = 0; i < 12; i++) {
            int want = (i % 3 == 0) ? v(left, i / 3) : -1;
            CHECK(b[i] == want, "contiguous into resized b[%d] = %d want %d", i, b[i], want);
        }
        MPI_Type_free(&r3);
    }

    return ct_finish();
}
