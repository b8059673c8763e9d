/* ranks: 2 4 */
/* MPI_THREAD_MULTIPLE: several threads of each rank communicate at once,
 * each on its own duplicate of MPI_COMM_WORLD (point-to-point with the
 * partner rank, and allreduce), while the main thread waits for them.
 * Skips (and passes) if the library does not provide MULTIPLE. */
#include "common.h"
#include <pthread.h>

#define NT 3
#define ITERS 200

static MPI_Comm comms[NT];
static int rank, size, errs[NT];

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    MPI_Comm c = comms[t];
    int partner = rank ^ 1;
    for (int i = 0; i < ITERS; i++) {
        int out = rank * 100000 + t * 1000 + i, in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, partner, t, &in, 1, MPI_INT, partner, t, c,
                     MPI_STATUS_IGNORE);
        if (in != partner * 100000 + t * 1000 + i)
            errs[t]++;
        if (i % 20 == 0) {
            int v = t + i, s = 0;
            MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, c);
            if (s != size * (t + i))
                errs[t]++;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE)
        return ct_finish();
    for (int t = 0; t < NT; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    pthread_t th[NT];
    for (int t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, worker, (void *)(long)t);
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < NT; t++) {
        CHECK(errs[t] == 0, "thread %d saw %d wrong values", t, errs[t]);
        MPI_Comm_free(&comms[t]);
    }
    int flag = 0;
    MPI_Is_thread_main(&flag);
    CHECK(flag, "the main thread is not the main thread");
    return ct_finish();
}
