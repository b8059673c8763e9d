/* ranks: 1 2 */
/* Datatype corner cases:
 *  1. bounds set by MPI_Type_create_resized are sticky (MPI 4.1 §5.1.7):
 *     a struct of a resized int (lb 0, extent 4) and other members far
 *     from it has lb 0 and extent 4, and instances of it lie 4 bytes
 *     apart when sent with a count of 2;
 *  2. MPI_Get_elements counts the basic elements of a partly received
 *     pair type: (double, int, double) received as 2 MPI_DOUBLE_INT is 3
 *     elements (MPI_Get_count: MPI_UNDEFINED), 3 ints as 2 MPI_2INT too;
 *  3. a receive of "up to" 2^20 instances of a 16 KiB strided type, by
 *     MPI_Recv and MPI_Irecv, of a message of one instance, costs that
 *     message's memory, not the count's (it once allocated 16 GiB).
 * On MPI_COMM_SELF; MPICH 4.0 gets 1 and the 2INT case of 2 wrong, so
 * those run on shmpi only. */
#include "common.h"

#ifdef SHMPI_MPI_H
static const int shmpi = 1;
#else
static const int shmpi = 0;
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Status st;
    int c = -1;

    /* 1. Sticky bounds. */
    if (shmpi) {
        MPI_Datatype r, t;
        MPI_Type_create_resized(MPI_INT, 0, 4, &r);
        int bl[2] = {1, 2};
        MPI_Aint disp[2] = {0, 100};
        MPI_Datatype ty[2] = {r, MPI_CHAR};
        MPI_Type_create_struct(2, bl, disp, ty, &t);
        MPI_Type_commit(&t);
        MPI_Aint lb = -1, ext = -1;
        MPI_Type_get_extent(t, &lb, &ext);
        CHECK(lb == 0 && ext == 4, "struct of a resized int: lb %ld extent %ld", (long)lb,
              (long)ext);
        /* Two instances: ints at 0 and 4, chars at 100-101 and 104-105. */
        char src[112], dst[112];
        for (int i = 0; i < 112; i++) {
            src[i] = (char)i;
            dst[i] = -1;
        }
        CHECK_OK(MPI_Sendrecv(src, 2, t, 0, 1, dst, 2, t, 0, 1, MPI_COMM_SELF, &st));
        for (int i = 0; i < 112; i++) {
            int in = i < 8 || (i >= 100 && i < 102) || (i >= 104 && i < 106);
            CHECK(dst[i] == (in ? (char)i : -1), "byte %d: %d", i, dst[i]);
        }
        MPI_Type_free(&t);
        MPI_Type_free(&r);
    }

    /* 2. Partial pair types. */
    {
        struct {
            double a;
            int b;
            double c;
        } in = {1.5, 2, 3.5};
        MPI_Datatype s3;
        int bl[3] = {1, 1, 1};
        MPI_Aint disp[3];
        MPI_Get_address(&in.a, &disp[0]);
        MPI_Get_address(&in.b, &disp[1]);
        MPI_Get_address(&in.c, &disp[2]);
        for (int i = 2; i >= 0; i--) disp[i] -= disp[0];
        MPI_Datatype ty[3] = {MPI_DOUBLE, MPI_INT, MPI_DOUBLE};
        MPI_Type_create_struct(3, bl, disp, ty, &s3);
        MPI_Type_commit(&s3);
        char out[64];
        CHECK_OK(MPI_Sendrecv(&in, 1, s3, 0, 2, out, 2, MPI_DOUBLE_INT, 0, 2, MPI_COMM_SELF, &st));
        CHECK_OK(MPI_Get_elements(&st, MPI_DOUBLE_INT, &c));
        CHECK(c == 3, "(double, int, double) as MPI_DOUBLE_INT: %d elements", c);
        CHECK_OK(MPI_Get_count(&st, MPI_DOUBLE_INT, &c));
        CHECK(c == MPI_UNDEFINED, "its count: %d", c);
        MPI_Type_free(&s3);
        if (shmpi) {
            int three[3] = {1, 2, 3}, got[4];
            CHECK_OK(MPI_Sendrecv(three, 3, MPI_INT, 0, 3, got, 2, MPI_2INT, 0, 3, MPI_COMM_SELF,
                                  &st));
            CHECK_OK(MPI_Get_elements(&st, MPI_2INT, &c));
            CHECK(c == 3, "3 ints as MPI_2INT: %d elements", c);
        }
    }

    /* 3. A large count of a strided type, one instance sent. */
    {
        MPI_Datatype v;
        MPI_Type_vector(1024, 4, 8, MPI_INT, &v);
        MPI_Type_commit(&v);
        int *src = calloc(8192, sizeof(int)), *buf = calloc(8192, sizeof(int));
        CHECK(src && buf, "no memory");
        for (int i = 0; i < 8192; i++) src[i] = i;
        MPI_Request q;
        CHECK_OK(MPI_Isend(src, 1, v, 0, 4, MPI_COMM_SELF, &q));
        CHECK_OK(MPI_Recv(buf, 1 << 20, v, 0, 4, MPI_COMM_SELF, &st));
        CHECK_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        CHECK_OK(MPI_Get_count(&st, v, &c));
        CHECK(c == 1 && buf[8] == 8 && buf[4] == 0, "MPI_Recv: count %d, %d %d", c, buf[8],
              buf[4]);
        buf[8] = 0;
        CHECK_OK(MPI_Irecv(buf, 1 << 20, v, 0, 5, MPI_COMM_SELF, &q));
        CHECK_OK(MPI_Send(src, 1, v, 0, 5, MPI_COMM_SELF));
        CHECK_OK(MPI_Wait(&q, &st));
        CHECK_OK(MPI_Get_count(&st, v, &c));
        CHECK(c == 1 && buf[8] == 8, "MPI_Irecv: count %d, %d", c, buf[8]);
        free(src);
        free(buf);
        MPI_Type_free(&v);
    }
    return ct_finish();
}
