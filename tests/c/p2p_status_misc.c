/* ranks: 2 */
/* Smaller calls around requests, statuses and datatypes:
 * - MPI_Request_get_status says whether a receive is complete without
 *   freeing it: the completing MPI_Wait then gives the same status; on a
 *   persistent receive it leaves the request active until MPI_Wait; on
 *   MPI_REQUEST_NULL it says complete with the empty status;
 * - MPI_Status_set_elements(_x) and MPI_Status_set_cancelled make a
 *   status that MPI_Get_elements(_x), MPI_Get_count and
 *   MPI_Test_cancelled read back (on shmpi a pair type counts its two
 *   parts, as the standard's basic elements);
 * - MPI_Type_get_name gives a predefined type's name and the one
 *   MPI_Type_set_name gave a derived type, or a predefined one;
 * - MPI_Type_size_x / get_extent_x / get_true_extent_x agree with the
 *   int forms; MPI_Type_match_size finds a type of each class and size;
 *   MPI_Aint_add / MPI_Aint_diff do address arithmetic;
 * - MPI_Comm_idup_with_info gives a working communicator that carries
 *   the hints given. */
#include "common.h"
#include <string.h>

static double now(void) { return MPI_Wtime(); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* 1. Request_get_status. */
    int flag = -1, go = 1, v[4] = {0}, w[4] = {5, 6, 7, 8};
    MPI_Status st, st2;
    if (me == 0) {
        MPI_Request rq;
        CHECK_OK(MPI_Irecv(v, 4, MPI_INT, 1, 9, MPI_COMM_WORLD, &rq));
        CHECK_OK(MPI_Request_get_status(rq, &flag, &st));
        CHECK(flag == 0, "complete before the sender started");
        CHECK_OK(MPI_Send(&go, 1, MPI_INT, 1, 8, MPI_COMM_WORLD));
        double t0 = now();
        do {
            CHECK_OK(MPI_Request_get_status(rq, &flag, &st));
        } while (!flag && now() - t0 < 20);
        CHECK(flag && st.MPI_SOURCE == 1 && st.MPI_TAG == 9, "get_status: flag %d src %d",
              flag, st.MPI_SOURCE);
        CHECK(rq != MPI_REQUEST_NULL, "get_status freed the request");
        CHECK_OK(MPI_Wait(&rq, &st2));
        int c = -1;
        MPI_Get_count(&st2, MPI_INT, &c);
        CHECK(rq == MPI_REQUEST_NULL && st2.MPI_SOURCE == 1 && c == 4 && v[3] == 8,
              "the wait after: src %d count %d v[3] %d", st2.MPI_SOURCE, c, v[3]);
        /* Persistent. */
        MPI_Request pr;
        CHECK_OK(MPI_Recv_init(v, 4, MPI_INT, 1, 10, MPI_COMM_WORLD, &pr));
        CHECK_OK(MPI_Start(&pr));
        CHECK_OK(MPI_Send(&go, 1, MPI_INT, 1, 8, MPI_COMM_WORLD));
        t0 = now();
        do {
            CHECK_OK(MPI_Request_get_status(pr, &flag, &st));
        } while (!flag && now() - t0 < 20);
        CHECK(flag && st.MPI_TAG == 10, "persistent get_status: tag %d", st.MPI_TAG);
        CHECK_OK(MPI_Wait(&pr, &st2));
        CHECK(pr != MPI_REQUEST_NULL && st2.MPI_TAG == 10, "persistent wait: tag %d",
              st2.MPI_TAG);
        CHECK_OK(MPI_Request_free(&pr));
        CHECK_OK(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st));
        CHECK(flag == 1 && st.MPI_SOURCE == MPI_ANY_SOURCE, "null request: %d %d", flag,
              st.MPI_SOURCE);
    } else {
        CHECK_OK(MPI_Recv(&go, 1, MPI_INT, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_OK(MPI_Send(w, 4, MPI_INT, 0, 9, MPI_COMM_WORLD));
        CHECK_OK(MPI_Recv(&go, 1, MPI_INT, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_OK(MPI_Send(w, 4, MPI_INT, 0, 10, MPI_COMM_WORLD));
    }

    /* 2. Statuses made by hand. */
    MPI_Status s;
    memset(&s, 0, sizeof s);
    int n = -1;
    MPI_Count nx = -1;
    CHECK_OK(MPI_Status_set_elements_x(&s, MPI_INT, 5));
    CHECK_OK(MPI_Get_elements_x(&s, MPI_INT, &nx));
    CHECK(nx == 5, "int elements_x %lld", (long long)nx);
    CHECK_OK(MPI_Status_set_elements(&s, MPI_INT, 5));
    CHECK_OK(MPI_Get_elements(&s, MPI_INT, &n));
    CHECK(n == 5, "int elements %d", n);
    CHECK_OK(MPI_Get_count(&s, MPI_INT, &n));
    CHECK(n == 5, "int count %d", n);
#ifdef SHMPI_MPI_H
    /* "so that a call to MPI_Get_elements will return count" (MPI 4.1
     * §13.3): basic elements; MPICH 4.0 takes the count as instances. */
    CHECK_OK(MPI_Status_set_elements(&s, MPI_DOUBLE_INT, 3));
    CHECK_OK(MPI_Get_elements(&s, MPI_DOUBLE_INT, &n));
    CHECK(n == 3, "elements %d", n);
    CHECK_OK(MPI_Get_count(&s, MPI_DOUBLE_INT, &n));
    CHECK(n == MPI_UNDEFINED, "count of 1.5 pairs: %d", n);
    CHECK_OK(MPI_Status_set_elements_x(&s, MPI_DOUBLE_INT, 4));
    CHECK_OK(MPI_Get_count(&s, MPI_DOUBLE_INT, &n));
    CHECK_OK(MPI_Get_elements_x(&s, MPI_DOUBLE_INT, &nx));
    CHECK(n == 2 && nx == 4, "count %d elements %lld", n, (long long)nx);
#endif
    CHECK_OK(MPI_Status_set_cancelled(&s, 1));
    CHECK_OK(MPI_Test_cancelled(&s, &flag));
    CHECK(flag == 1, "cancelled %d", flag);
    CHECK_OK(MPI_Status_set_cancelled(&s, 0));
    CHECK_OK(MPI_Test_cancelled(&s, &flag));
    CHECK(flag == 0, "not cancelled %d", flag);

    /* 3. Names. */
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    CHECK_OK(MPI_Type_get_name(MPI_INT, name, &len));
    CHECK(strcmp(name, "MPI_INT") == 0 && len == 7, "MPI_INT's name: %s", name);
    MPI_Datatype vec;
    CHECK_OK(MPI_Type_vector(3, 1, 4, MPI_DOUBLE, &vec));
    CHECK_OK(MPI_Type_get_name(vec, name, &len));
    CHECK(len == 0 && name[0] == 0, "an unnamed type: %s", name);
    CHECK_OK(MPI_Type_set_name(vec, "column"));
    CHECK_OK(MPI_Type_get_name(vec, name, &len));
    CHECK(strcmp(name, "column") == 0 && len == 6, "the name set: %s", name);

    /* 4. _x sizes, match_size, Aint arithmetic. */
    MPI_Count sz = -1, lb = -1, ext = -1, tlb = -1, text = -1;
    CHECK_OK(MPI_Type_size_x(vec, &sz));
    CHECK_OK(MPI_Type_get_extent_x(vec, &lb, &ext));
    CHECK_OK(MPI_Type_get_true_extent_x(vec, &tlb, &text));
    CHECK(sz == 24 && lb == 0 && ext == 72 && tlb == 0 && text == 72,
          "x: size %lld extent %lld true %lld", (long long)sz, (long long)ext, (long long)text);
    MPI_Datatype m;
    int msz = -1;
    CHECK_OK(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &m));
    MPI_Type_size(m, &msz);
    CHECK(msz == 4, "integer of 4: %d", msz);
    CHECK_OK(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &m));
    MPI_Type_size(m, &msz);
    CHECK(msz == 8, "real of 8: %d", msz);
    CHECK_OK(MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &m));
    MPI_Type_size(m, &msz);
    CHECK(msz == 16, "complex of 16: %d", msz);
    int arr[10];
    MPI_Aint a0, a7;
    MPI_Get_address(&arr[0], &a0);
    MPI_Get_address(&arr[7], &a7);
    CHECK(MPI_Aint_diff(a7, a0) == 7 * (MPI_Aint)sizeof(int), "Aint_diff");
    CHECK(MPI_Aint_add(a0, 7 * (MPI_Aint)sizeof(int)) == a7, "Aint_add");
#ifdef SHMPI_MPI_H
    CHECK(ct_class(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 3, &m)) == MPI_ERR_ARG,
          "an integer of 3 bytes");
#endif
    /* A predefined type may be renamed (MPI 4.1 §7.8; MPICH and Open MPI
     * allow it). */
    CHECK_OK(MPI_Type_set_name(MPI_SHORT, "short_renamed"));
    CHECK_OK(MPI_Type_get_name(MPI_SHORT, name, &len));
    CHECK(strcmp(name, "short_renamed") == 0, "the predefined type renamed: %s", name);
    CHECK_OK(MPI_Type_set_name(MPI_SHORT, "MPI_SHORT"));
    MPI_Type_free(&vec);

    /* 5. idup_with_info. */
    MPI_Info hints;
    MPI_Info_create(&hints);
    MPI_Info_set(hints, "mpi_assert_no_any_tag", "true");
    MPI_Comm d;
    MPI_Request rq;
    CHECK_OK(MPI_Comm_idup_with_info(MPI_COMM_WORLD, hints, &d, &rq));
    MPI_Info_free(&hints);
    CHECK_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    int sum = 0;
    CHECK_OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, d));
    CHECK(sum == 1, "allreduce on the idup %d", sum);
    MPI_Info used;
    char val[MPI_MAX_INFO_VAL + 1];
    CHECK_OK(MPI_Comm_get_info(d, &used));
    CHECK_OK(MPI_Info_get(used, "mpi_assert_no_any_tag", MPI_MAX_INFO_VAL, val, &flag));
    CHECK(flag && strcmp(val, "true") == 0, "the hint: flag %d", flag);
    MPI_Info_free(&used);
    MPI_Comm_free(&d);
    return ct_finish();
}
