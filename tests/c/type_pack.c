/* ranks: 1 2 */
/* MPI_Pack / MPI_Unpack / MPI_Pack_size: several items of different types
 * (incl. a strided vector) packed one after another with the position
 * advancing, unpacked in the same order; packed data sent as MPI_PACKED and
 * received into a typed (indexed) layout, and typed data received as
 * MPI_PACKED then unpacked; a datatype freed while its dup and a pending
 * send still use it; a struct type whose displacements come from
 * MPI_Get_address. With 2 ranks each rank exchanges with the other, with 1
 * rank with itself (nonblocking send, then receive). */
#include "common.h"
#include <stddef.h>

static int rank, size, peer;

static void test_roundtrip(void)
{
    MPI_Datatype vt;
    CHECK_OK(MPI_Type_vector(3, 1, 2, MPI_INT, &vt)); /* ints 0, 2, 4; extent 5 ints */
    CHECK_OK(MPI_Type_commit(&vt));
    int a = 42 + rank, src[10];
    double d[3] = {1.5, -2.25, 1e10};
    char c[5] = {'h', 'e', 'l', 'l', 'o'};
    for (int i = 0; i < 10; i++) src[i] = 100 + i;

    int ps[4], total = 0;
    CHECK_OK(MPI_Pack_size(1, MPI_INT, MPI_COMM_WORLD, &ps[0]));
    CHECK_OK(MPI_Pack_size(2, vt, MPI_COMM_WORLD, &ps[1]));
    CHECK_OK(MPI_Pack_size(3, MPI_DOUBLE, MPI_COMM_WORLD, &ps[2]));
    CHECK_OK(MPI_Pack_size(5, MPI_CHAR, MPI_COMM_WORLD, &ps[3]));
    int minsz[4] = {(int)sizeof(int), 6 * (int)sizeof(int), 3 * (int)sizeof(double), 5};
    for (int k = 0; k < 4; k++) {
        CHECK(ps[k] >= minsz[k], "pack size %d: %d < %d", k, ps[k], minsz[k]);
        total += ps[k];
    }
    char *buf = malloc(total + 16);
    int pos = 0, prev;
    int steps[4];
    prev = pos;
    CHECK_OK(MPI_Pack(&a, 1, MPI_INT, buf, total, &pos, MPI_COMM_WORLD));
    steps[0] = pos - prev;
    prev = pos;
    CHECK_OK(MPI_Pack(src, 2, vt, buf, total, &pos, MPI_COMM_WORLD));
    steps[1] = pos - prev;
    prev = pos;
    CHECK_OK(MPI_Pack(d, 3, MPI_DOUBLE, buf, total, &pos, MPI_COMM_WORLD));
    steps[2] = pos - prev;
    prev = pos;
    CHECK_OK(MPI_Pack(c, 5, MPI_CHAR, buf, total, &pos, MPI_COMM_WORLD));
    steps[3] = pos - prev;
    for (int k = 0; k < 4; k++)
        CHECK(steps[k] >= minsz[k] && steps[k] <= ps[k], "pack %d advanced position by %d (size %d, bound %d)",
              k, steps[k], minsz[k], ps[k]);
    CHECK(pos <= total, "packed %d bytes, more than MPI_Pack_size total %d", pos, total);

    /* unpack in the same order into fresh buffers */
    int a2 = -1, dst[10];
    double d2[3] = {0, 0, 0};
    char c2[6] = {0, 0, 0, 0, 0, 'Z'};
    for (int i = 0; i < 10; i++) dst[i] = -1;
    int upos = 0;
    CHECK_OK(MPI_Unpack(buf, pos, &upos, &a2, 1, MPI_INT, MPI_COMM_WORLD));
    CHECK(upos == steps[0], "unpack int advanced to %d, pack to %d", upos, steps[0]);
    CHECK_OK(MPI_Unpack(buf, pos, &upos, dst, 2, vt, MPI_COMM_WORLD));
    CHECK_OK(MPI_Unpack(buf, pos, &upos, d2, 3, MPI_DOUBLE, MPI_COMM_WORLD));
    CHECK_OK(MPI_Unpack(buf, pos, &upos, c2, 5, MPI_CHAR, MPI_COMM_WORLD));
    CHECK(upos == pos, "unpacking ended at %d, packing at %d", upos, pos);
    CHECK(a2 == a, "unpacked int %d", a2);
    /* vector elements: ints 0,2,4 then 5,7,9; holes stay -1 */
    for (int i = 0; i < 10; i++) {
        int in_map = (i == 0 || i == 2 || i == 4 || i == 5 || i == 7 || i == 9);
        CHECK(dst[i] == (in_map ? 100 + i : -1), "unpacked vector [%d]=%d", i, dst[i]);
    }
    for (int i = 0; i < 3; i++) CHECK(d2[i] == d[i], "unpacked double [%d]=%g", i, d2[i]);
    CHECK(memcmp(c2, c, 5) == 0 && c2[5] == 'Z', "unpacked chars");

    /* the same vector data unpacked as 6 contiguous ints */
    int flat[6];
    upos = steps[0];
    CHECK_OK(MPI_Unpack(buf, pos, &upos, flat, 6, MPI_INT, MPI_COMM_WORLD));
    int expect_flat[6] = {100, 102, 104, 105, 107, 109};
    for (int i = 0; i < 6; i++) CHECK(flat[i] == expect_flat[i], "vector unpacked flat [%d]=%d", i, flat[i]);
    free(buf);
    CHECK_OK(MPI_Type_free(&vt));
}

static void test_packed_messages(void)
{
    /* sender packs 2 vector elements (6 ints) and 3 more ints, sends
     * MPI_PACKED; receiver takes the 9 ints with an indexed type */
    MPI_Datatype vt, idx;
    CHECK_OK(MPI_Type_vector(3, 1, 2, MPI_INT, &vt));
    CHECK_OK(MPI_Type_commit(&vt));
    int bl[2] = {4, 5}, dis[2] = {10, 1};
    CHECK_OK(MPI_Type_indexed(2, bl, dis, MPI_INT, &idx)); /* ints 10..13 then 1..5 */
    CHECK_OK(MPI_Type_commit(&idx));
    int src[10], extra[3], psz1, psz2;
    for (int i = 0; i < 10; i++) src[i] = rank * 1000 + i;
    for (int i = 0; i < 3; i++) extra[i] = rank * 1000 + 50 + i;
    CHECK_OK(MPI_Pack_size(2, vt, MPI_COMM_WORLD, &psz1));
    CHECK_OK(MPI_Pack_size(3, MPI_INT, MPI_COMM_WORLD, &psz2));
    char *out = malloc(psz1 + psz2);
    int pos = 0;
    CHECK_OK(MPI_Pack(src, 2, vt, out, psz1 + psz2, &pos, MPI_COMM_WORLD));
    CHECK_OK(MPI_Pack(extra, 3, MPI_INT, out, psz1 + psz2, &pos, MPI_COMM_WORLD));

    int in[16];
    for (int i = 0; i < 16; i++) in[i] = -1;
    MPI_Request req;
    MPI_Status st;
    CHECK_OK(MPI_Isend(out, pos, MPI_PACKED, peer, 5, MPI_COMM_WORLD, &req));
    CHECK_OK(MPI_Recv(in, 1, idx, peer, 5, MPI_COMM_WORLD, &st));
    CHECK_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    int p = peer * 1000;
    int e[16] = {-1, p + 7, p + 9, p + 50, p + 51, p + 52, -1, -1, -1, -1, p + 0, p + 2, p + 4, p + 5, -1, -1};
    for (int i = 0; i < 16; i++) CHECK(in[i] == e[i], "packed->indexed [%d]=%d expected %d", i, in[i], e[i]);
    int n = -1;
    CHECK_OK(MPI_Get_elements(&st, idx, &n));
    CHECK(n == 9, "packed->indexed: %d elements", n);
    free(out);

    /* typed send (vector), received as MPI_PACKED and unpacked */
    int maxp;
    CHECK_OK(MPI_Pack_size(2, vt, MPI_COMM_WORLD, &maxp));
    char *pin = malloc(maxp);
    CHECK_OK(MPI_Isend(src, 2, vt, peer, 6, MPI_COMM_WORLD, &req));
    CHECK_OK(MPI_Recv(pin, maxp, MPI_PACKED, peer, 6, MPI_COMM_WORLD, &st));
    CHECK_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    int nbytes = -1;
    CHECK_OK(MPI_Get_count(&st, MPI_PACKED, &nbytes));
    CHECK(nbytes > 0 && nbytes <= maxp, "received %d packed bytes, bound %d", nbytes, maxp);
    int got[6], upos = 0;
    for (int i = 0; i < 6; i++) got[i] = -1;
    CHECK_OK(MPI_Unpack(pin, nbytes, &upos, got, 6, MPI_INT, MPI_COMM_WORLD));
    CHECK(upos == nbytes, "unpack consumed %d of %d bytes", upos, nbytes);
    int ef[6] = {p + 0, p + 2, p + 4, p + 5, p + 7, p + 9};
    for (int i = 0; i < 6; i++) CHECK(got[i] == ef[i], "vector->packed [%d]=%d expected %d", i, got[i], ef[i]);
    free(pin);
    CHECK_OK(MPI_Type_free(&vt));
    CHECK_OK(MPI_Type_free(&idx));
}

static void test_free_in_use(void)
{
    MPI_Datatype t, d;
    CHECK_OK(MPI_Type_vector(4, 1, 3, MPI_INT, &t)); /* ints 0 3 6 9 */
    CHECK_OK(MPI_Type_commit(&t));
    CHECK_OK(MPI_Type_dup(t, &d));
    CHECK_OK(MPI_Type_free(&t));
    CHECK(t == MPI_DATATYPE_NULL, "MPI_Type_free did not set MPI_DATATYPE_NULL");
    /* the dup still works (it is committed like the original was) */
    int s[12], r[12];
    for (int i = 0; i < 12; i++) {
        s[i] = rank * 100 + i;
        r[i] = -1;
    }
    MPI_Request req;
    CHECK_OK(MPI_Isend(s, 1, d, peer, 8, MPI_COMM_WORLD, &req));
    CHECK_OK(MPI_Recv(r, 1, d, peer, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int i = 0; i < 12; i++)
        CHECK(r[i] == (i % 3 == 0 ? peer * 100 + i : -1), "dup after free [%d]=%d", i, r[i]);
    int psz, pos = 0;
    CHECK_OK(MPI_Pack_size(1, d, MPI_COMM_WORLD, &psz));
    char *pb = malloc(psz);
    CHECK_OK(MPI_Pack(s, 1, d, pb, psz, &pos, MPI_COMM_WORLD));
    int flat[4], upos = 0;
    CHECK_OK(MPI_Unpack(pb, pos, &upos, flat, 4, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < 4; i++) CHECK(flat[i] == rank * 100 + 3 * i, "dup pack [%d]=%d", i, flat[i]);
    free(pb);

    /* freeing a type while a send that uses it is pending */
    for (int i = 0; i < 12; i++) r[i] = -1;
    CHECK_OK(MPI_Isend(s, 1, d, peer, 9, MPI_COMM_WORLD, &req));
    CHECK_OK(MPI_Type_free(&d));
    CHECK_OK(MPI_Recv(r, 4, MPI_INT, peer, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int i = 0; i < 4; i++) CHECK(r[i] == peer * 100 + 3 * i, "freed-while-pending [%d]=%d", i, r[i]);
    CHECK(r[4] == -1, "freed-while-pending: too much data");
}

struct item {
    char c;
    double d[2];
    int i;
    short s;
};

static void test_get_address(void)
{
    struct item x[3], y[3];
    MPI_Aint base, addr[4];
    memset(x, 0, sizeof x);
    CHECK_OK(MPI_Get_address(&x[0], &base));
    CHECK_OK(MPI_Get_address(&x[0].c, &addr[0]));
    CHECK_OK(MPI_Get_address(&x[0].d[0], &addr[1]));
    CHECK_OK(MPI_Get_address(&x[0].i, &addr[2]));
    CHECK_OK(MPI_Get_address(&x[0].s, &addr[3]));
    size_t off[4] = {offsetof(struct item, c), offsetof(struct item, d), offsetof(struct item, i),
                     offsetof(struct item, s)};
    MPI_Aint disp[4];
    for (int k = 0; k < 4; k++) {
        disp[k] = addr[k] - base;
        CHECK(disp[k] == (MPI_Aint)off[k], "field %d: displacement %ld, offsetof %ld", k,
              (long)disp[k], (long)off[k]);
    }
    MPI_Aint a1;
    CHECK_OK(MPI_Get_address(&x[1], &a1));
    CHECK(a1 - base == (MPI_Aint)sizeof(struct item), "element stride %ld", (long)(a1 - base));

    int bl[4] = {1, 2, 1, 1};
    MPI_Datatype ty[4] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT}, st, it;
    CHECK_OK(MPI_Type_create_struct(4, bl, disp, ty, &st));
    CHECK_OK(MPI_Type_create_resized(st, 0, sizeof(struct item), &it));
    CHECK_OK(MPI_Type_commit(&it));
    int tsz;
    CHECK_OK(MPI_Type_size(it, &tsz));
    CHECK(tsz == (int)(1 + 2 * sizeof(double) + sizeof(int) + sizeof(short)), "item type size %d", tsz);
    for (int k = 0; k < 3; k++) {
        x[k].c = (char)('a' + rank + k);
        x[k].d[0] = rank + k * 0.5;
        x[k].d[1] = -(rank + k * 0.25);
        x[k].i = rank * 10 + k;
        x[k].s = (short)(rank * 7 + k);
    }
    memset(y, 0, sizeof y);
    MPI_Request req;
    CHECK_OK(MPI_Isend(x, 3, it, peer, 11, MPI_COMM_WORLD, &req));
    CHECK_OK(MPI_Recv(y, 3, it, peer, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int k = 0; k < 3; k++)
        CHECK(y[k].c == 'a' + peer + k && y[k].d[0] == peer + k * 0.5 &&
                  y[k].d[1] == -(peer + k * 0.25) && y[k].i == peer * 10 + k && y[k].s == peer * 7 + k,
              "struct item %d = {%c, %g, %g, %d, %d}", k, y[k].c, y[k].d[0], y[k].d[1], y[k].i, y[k].s);
    CHECK_OK(MPI_Type_free(&st));
    CHECK_OK(MPI_Type_free(&it));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    peer = size > 1 ? 1 - rank : 0;
    test_roundtrip();
    test_packed_messages();
    test_free_in_use();
    test_get_address();
    return ct_finish();
}
