/* ranks: 1 3 8 */
/* MPI_Sendrecv and MPI_Sendrecv_replace around a ring (at 1 rank, with
 * oneself): send and receive sides with different datatypes and counts
 * (strided vector of doubles received as contiguous doubles, ints received
 * as pairs of ints, per-rank message lengths), ANY_SOURCE/ANY_TAG on the
 * receive side, a 1 MiB message the other way round, a non-periodic shift
 * with MPI_PROC_NULL at the ends, and Sendrecv_replace rotating a buffer a
 * full turn (contiguous, 1 MiB, and with a strided type whose gaps must stay
 * untouched). */
#include "common.h"

#define MIB_INTS (1 << 18) /* 1 MiB of ints */
#define RING_N 1000

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* 1. Send rank+1 doubles picked with stride 2; receive contiguous. */
    {
        int k = rank + 1, kl = left + 1;
        double src[2 * 8 + 2], dst[20];
        MPI_Datatype vec;
        for (int i = 0; i < 2 * k; i++) src[i] = (i % 2 == 0) ? rank * 100.0 + i / 2 : -1.0;
        for (int i = 0; i < 20; i++) dst[i] = -2.0;
        CHECK_OK(MPI_Type_vector(k, 1, 2, MPI_DOUBLE, &vec));
        CHECK_OK(MPI_Type_commit(&vec));
        CHECK_OK(MPI_Sendrecv(src, 1, vec, right, 1, dst, 20, MPI_DOUBLE, left, 1,
                              MPI_COMM_WORLD, &st));
        int c = -1;
        CHECK_OK(MPI_Get_count(&st, MPI_DOUBLE, &c));
        CHECK(c == kl, "vector->contiguous: count %d want %d", c, kl);
        CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 1, "vector->contiguous status %d/%d",
              st.MPI_SOURCE, st.MPI_TAG);
        for (int i = 0; i < 20; i++) {
            double want = i < kl ? left * 100.0 + i : -2.0;
            CHECK(dst[i] == want, "vector->contiguous dst[%d] = %g want %g", i, dst[i], want);
        }
        MPI_Type_free(&vec);
    }

    /* 2. 6 ints received as pairs of ints, with ANY_SOURCE and ANY_TAG. */
    {
        int s6[6], r[20];
        MPI_Datatype pair;
        CHECK_OK(MPI_Type_contiguous(2, MPI_INT, &pair));
        CHECK_OK(MPI_Type_commit(&pair));
        for (int i = 0; i < 6; i++) s6[i] = rank * 10 + i;
        for (int i = 0; i < 20; i++) r[i] = -1;
        CHECK_OK(MPI_Sendrecv(s6, 6, MPI_INT, right, 20 + rank, r, 10, pair,
                              MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        int c = -1, e = -1;
        CHECK_OK(MPI_Get_count(&st, pair, &c));
        CHECK_OK(MPI_Get_elements(&st, pair, &e));
        CHECK(c == 3 && e == 6, "ints->pairs: count %d elements %d want 3, 6", c, e);
        CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 20 + left,
              "ANY_SOURCE/ANY_TAG status %d/%d want %d/%d", st.MPI_SOURCE, st.MPI_TAG,
              left, 20 + left);
        for (int i = 0; i < 20; i++) {
            int want = i < 6 ? left * 10 + i : -1;
            CHECK(r[i] == want, "ints->pairs r[%d] = %d want %d", i, r[i], want);
        }
        MPI_Type_free(&pair);
    }
    /* The ANY_TAG receive above must not see the next phase's messages. */
    MPI_Barrier(MPI_COMM_WORLD);

    int *big_s = malloc(MIB_INTS * sizeof(int));
    int *big_r = malloc(MIB_INTS * sizeof(int));
    if (!big_s || !big_r) MPI_Abort(MPI_COMM_WORLD, 2);

    /* 3. 1 MiB to the left, from the right. */
    {
        for (int i = 0; i < MIB_INTS; i++) {
            big_s[i] = rank * 7 + i;
            big_r[i] = -1;
        }
        CHECK_OK(MPI_Sendrecv(big_s, MIB_INTS, MPI_INT, left, 3, big_r, MIB_INTS, MPI_INT,
                              right, 3, MPI_COMM_WORLD, &st));
        int bad = 0;
        for (int i = 0; i < MIB_INTS; i++) if (big_r[i] != right * 7 + i) bad++;
        CHECK(bad == 0, "1 MiB Sendrecv: %d bad values", bad);
        CHECK(st.MPI_SOURCE == right, "1 MiB Sendrecv source %d", st.MPI_SOURCE);
    }

    /* 4. Non-periodic shift: the ends talk to MPI_PROC_NULL. */
    {
        int dest = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
        int source = rank > 0 ? rank - 1 : MPI_PROC_NULL;
        int s = 500 + rank, r = -1, c = -1;
        CHECK_OK(MPI_Sendrecv(&s, 1, MPI_INT, dest, 4, &r, 1, MPI_INT, source, 4,
                              MPI_COMM_WORLD, &st));
        CHECK_OK(MPI_Get_count(&st, MPI_INT, &c));
        if (source == MPI_PROC_NULL) {
            CHECK(r == -1 && c == 0 && st.MPI_SOURCE == MPI_PROC_NULL &&
                  st.MPI_TAG == MPI_ANY_TAG,
                  "shift from PROC_NULL: r %d count %d status %d/%d", r, c,
                  st.MPI_SOURCE, st.MPI_TAG);
        } else {
            CHECK(r == 500 + source && c == 1 && st.MPI_SOURCE == source,
                  "shift: r %d count %d source %d", r, c, st.MPI_SOURCE);
        }
    }

    /* 5. Sendrecv_replace: rotate RING_N ints a full turn, checking the
     * origin after each step. */
    {
        int buf[RING_N];
        for (int i = 0; i < RING_N; i++) buf[i] = rank * 10000 + i;
        for (int step = 1; step <= size; step++) {
            CHECK_OK(MPI_Sendrecv_replace(buf, RING_N, MPI_INT, right, step, left, step,
                                          MPI_COMM_WORLD, &st));
            int origin = ((rank - step) % size + size) % size, bad = 0;
            for (int i = 0; i < RING_N; i++) if (buf[i] != origin * 10000 + i) bad++;
            CHECK(bad == 0, "Sendrecv_replace step %d: %d bad values", step, bad);
            CHECK(st.MPI_SOURCE == left && st.MPI_TAG == step,
                  "Sendrecv_replace step %d status %d/%d", step, st.MPI_SOURCE, st.MPI_TAG);
        }
    }

    /* 6. Sendrecv_replace of 1 MiB, one step to the right. */
    {
        for (int i = 0; i < MIB_INTS; i++) big_r[i] = rank * 3 + i;
        CHECK_OK(MPI_Sendrecv_replace(big_r, MIB_INTS, MPI_INT, right, 6, left, 6,
                                      MPI_COMM_WORLD, &st));
        int bad = 0;
        for (int i = 0; i < MIB_INTS; i++) if (big_r[i] != left * 3 + i) bad++;
        CHECK(bad == 0, "1 MiB Sendrecv_replace: %d bad values", bad);
    }

    /* 7. Sendrecv_replace with a strided type: the gaps stay as they were. */
    {
        int buf[2 * 50];
        MPI_Datatype vec;
        CHECK_OK(MPI_Type_vector(50, 1, 2, MPI_INT, &vec));
        CHECK_OK(MPI_Type_commit(&vec));
        for (int i = 0; i < 100; i++) buf[i] = (i % 2 == 0) ? rank * 1000 + i : -rank - 1;
        CHECK_OK(MPI_Sendrecv_replace(buf, 1, vec, left, 7, right, 7, MPI_COMM_WORLD, &st));
        for (int i = 0; i < 100; i++) {
            int want = (i % 2 == 0) ? right * 1000 + i : -rank - 1;
            CHECK(buf[i] == want, "strided Sendrecv_replace buf[%d] = %d want %d", i,
                  buf[i], want);
        }
        int c = -1;
        CHECK_OK(MPI_Get_count(&st, vec, &c));
        CHECK(c == 1, "strided Sendrecv_replace count %d", c);
        MPI_Type_free(&vec);
    }

    free(big_s);
    free(big_r);
    return ct_finish();
}
