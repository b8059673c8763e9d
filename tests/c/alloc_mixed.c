/* ranks: 2 */
/* Messages from MPI_Alloc_mem memory: contiguous ones around the pool
 * threshold at unaligned offsets, nonblocking with the buffer freed right
 * after completion; and messages whose datatype lies partly in an
 * MPI_Alloc_mem buffer and partly in ordinary heap memory (a struct type
 * over MPI_BOTTOM), sent and received. */
#include "common.h"

static unsigned char pat(size_t i, int seed) { return (unsigned char)(i * 31 + seed * 7 + 1); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const size_t sizes[] = {1, 16383, 16384, 16385, 100003, (1 << 20) + 5};
    const int nsizes = sizeof sizes / sizeof sizes[0];

    for (int k = 0; k < nsizes; k++) {
        size_t n = sizes[k];
        for (int off = 0; off < 8; off += 3) {
            int seed = k * 10 + off;
            if (rank == 0) {
                unsigned char *buf = NULL;
                CHECK_OK(MPI_Alloc_mem((MPI_Aint)(n + off), MPI_INFO_NULL, &buf));
                for (size_t i = 0; i < n; i++) buf[off + i] = pat(i, seed);
                MPI_Request req;
                CHECK_OK(MPI_Isend(buf + off, (int)n, MPI_BYTE, 1, seed, MPI_COMM_WORLD, &req));
                CHECK_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
                /* Freed at once after completion: the receiver has it. */
                CHECK_OK(MPI_Free_mem(buf));
            } else {
                unsigned char *got = malloc(n);
                MPI_Status st;
                CHECK_OK(MPI_Recv(got, (int)n, MPI_BYTE, 0, seed, MPI_COMM_WORLD, &st));
                size_t bad = n;
                for (size_t i = 0; i < n && bad == n; i++)
                    if (got[i] != pat(i, seed)) bad = i;
                CHECK(bad == n, "size %zu offset %d: byte %zu differs", n, off, bad);
                free(got);
            }
        }
    }

    /* Half in the pool, half in the heap: one struct datatype. */
    const int a = 40000, b = 30001;
    unsigned char *pool = NULL, *heap = malloc(b + 5);
    CHECK_OK(MPI_Alloc_mem(a + 3, MPI_INFO_NULL, &pool));
    MPI_Aint disp[2];
    MPI_Get_address(pool + 3, &disp[0]);
    MPI_Get_address(heap + 5, &disp[1]);
    int lens[2] = {a, b};
    MPI_Datatype types[2] = {MPI_BYTE, MPI_BYTE}, mixed;
    MPI_Type_create_struct(2, lens, disp, types, &mixed);
    MPI_Type_commit(&mixed);
    unsigned char *flat = malloc(a + b);
    if (rank == 0) {
        for (int i = 0; i < a; i++) pool[3 + i] = pat(i, 1);
        for (int i = 0; i < b; i++) heap[5 + i] = pat(a + i, 1);
        CHECK_OK(MPI_Send(MPI_BOTTOM, 1, mixed, 1, 99, MPI_COMM_WORLD));
        /* And back into the same mixed layout. */
        memset(pool, 0, a + 3);
        memset(heap, 0, b + 5);
        CHECK_OK(MPI_Recv(MPI_BOTTOM, 1, mixed, 1, 100, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        int bad = -1;
        for (int i = 0; i < a && bad < 0; i++)
            if (pool[3 + i] != pat(i, 2)) bad = i;
        for (int i = 0; i < b && bad < 0; i++)
            if (heap[5 + i] != pat(a + i, 2)) bad = a + i;
        CHECK(bad < 0, "mixed receive: byte %d differs", bad);
        CHECK(pool[2] == 0 && heap[4] == 0, "bytes before the blocks untouched");
    } else {
        CHECK_OK(MPI_Recv(flat, a + b, MPI_BYTE, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        int bad = -1;
        for (int i = 0; i < a + b && bad < 0; i++)
            if (flat[i] != pat(i, 1)) bad = i;
        CHECK(bad < 0, "mixed send: byte %d differs", bad);
        for (int i = 0; i < a + b; i++) flat[i] = pat(i, 2);
        CHECK_OK(MPI_Send(flat, a + b, MPI_BYTE, 0, 100, MPI_COMM_WORLD));
    }
    MPI_Type_free(&mixed);
    MPI_Free_mem(pool);
    free(heap);
    free(flat);
    return ct_finish();
}
