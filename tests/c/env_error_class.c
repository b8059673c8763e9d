/* ranks: 1 2 */
/* Every standard error class: MPI_Error_class of a class is the class
 * itself; classes are distinct and lie in (MPI_SUCCESS, MPI_ERR_LASTCODE];
 * MPI_Error_string gives a non-empty NUL-terminated string with
 * resultlen < MPI_MAX_ERROR_STRING. MPI_SUCCESS is class 0 of itself.
 * On shmpi, a value past the last class is MPI_ERR_ARG. */
#include "common.h"

#define E(x) { x, #x }
static const struct {
    int cls;
    const char *name;
} classes[] = {
    E(MPI_ERR_BUFFER), E(MPI_ERR_COUNT), E(MPI_ERR_TYPE), E(MPI_ERR_TAG),
    E(MPI_ERR_COMM), E(MPI_ERR_RANK), E(MPI_ERR_REQUEST), E(MPI_ERR_ROOT),
    E(MPI_ERR_GROUP), E(MPI_ERR_OP), E(MPI_ERR_TOPOLOGY), E(MPI_ERR_DIMS),
    E(MPI_ERR_ARG), E(MPI_ERR_UNKNOWN), E(MPI_ERR_TRUNCATE), E(MPI_ERR_OTHER),
    E(MPI_ERR_INTERN), E(MPI_ERR_PENDING), E(MPI_ERR_IN_STATUS), E(MPI_ERR_ACCESS),
    E(MPI_ERR_AMODE), E(MPI_ERR_ASSERT), E(MPI_ERR_BAD_FILE), E(MPI_ERR_BASE),
    E(MPI_ERR_CONVERSION), E(MPI_ERR_DISP), E(MPI_ERR_DUP_DATAREP),
    E(MPI_ERR_FILE_EXISTS), E(MPI_ERR_FILE_IN_USE), E(MPI_ERR_FILE),
    E(MPI_ERR_INFO_KEY), E(MPI_ERR_INFO_NOKEY), E(MPI_ERR_INFO_VALUE), E(MPI_ERR_INFO),
    E(MPI_ERR_IO), E(MPI_ERR_KEYVAL), E(MPI_ERR_LOCKTYPE), E(MPI_ERR_NAME),
    E(MPI_ERR_NO_MEM), E(MPI_ERR_NOT_SAME), E(MPI_ERR_NO_SPACE), E(MPI_ERR_NO_SUCH_FILE),
    E(MPI_ERR_PORT), E(MPI_ERR_QUOTA), E(MPI_ERR_READ_ONLY), E(MPI_ERR_RMA_ATTACH),
    E(MPI_ERR_RMA_CONFLICT), E(MPI_ERR_RMA_RANGE), E(MPI_ERR_RMA_SHARED),
    E(MPI_ERR_RMA_SYNC), E(MPI_ERR_RMA_FLAVOR), E(MPI_ERR_SERVICE), E(MPI_ERR_SIZE),
    E(MPI_ERR_SPAWN), E(MPI_ERR_UNSUPPORTED_DATAREP), E(MPI_ERR_UNSUPPORTED_OPERATION),
    E(MPI_ERR_WIN),
/* Classes added in MPI 4.0 / 4.1: checked where the header has them. */
#ifdef MPI_ERR_PROC_ABORTED
    E(MPI_ERR_PROC_ABORTED),
#endif
#ifdef MPI_ERR_SESSION
    E(MPI_ERR_SESSION),
#endif
#ifdef MPI_ERR_VALUE_TOO_LARGE
    E(MPI_ERR_VALUE_TOO_LARGE),
#endif
#ifdef MPI_ERR_ERRHANDLER
    E(MPI_ERR_ERRHANDLER),
#endif
};
#define NCLASSES ((int)(sizeof classes / sizeof classes[0]))

/* Checks one MPI_Error_string result; nonempty says whether "" is allowed. */
static void check_string(int code, const char *name, int nonempty)
{
    char buf[MPI_MAX_ERROR_STRING];
    int len = -1;
    memset(buf, 'X', sizeof buf);
    CHECK_OK(MPI_Error_string(code, buf, &len));
    CHECK(len >= (nonempty ? 1 : 0) && len < MPI_MAX_ERROR_STRING,
          "%s: error string length %d out of range", name, len);
    if (len >= 0 && len < MPI_MAX_ERROR_STRING) {
        CHECK(buf[len] == '\0', "%s: string not NUL-terminated at resultlen %d", name, len);
        if (buf[len] == '\0')
            CHECK((int)strlen(buf) == len, "%s: strlen %d != resultlen %d", name,
                  (int)strlen(buf), len);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);

    CHECK(MPI_SUCCESS == 0, "MPI_SUCCESS is %d", MPI_SUCCESS);
    int k = -1;
    CHECK_OK(MPI_Error_class(MPI_SUCCESS, &k));
    CHECK(k == MPI_SUCCESS, "class of MPI_SUCCESS is %d", k);
    check_string(MPI_SUCCESS, "MPI_SUCCESS", 0);

    for (int i = 0; i < NCLASSES; i++) {
        int c = classes[i].cls;
        CHECK(c > MPI_SUCCESS && c <= MPI_ERR_LASTCODE,
              "%s = %d not in (MPI_SUCCESS, MPI_ERR_LASTCODE=%d]", classes[i].name, c,
              MPI_ERR_LASTCODE);
        for (int j = 0; j < i; j++)
            CHECK(classes[j].cls != c, "%s and %s are both %d", classes[j].name,
                  classes[i].name, c);
        k = -1;
        CHECK_OK(MPI_Error_class(c, &k));
        CHECK(k == c, "MPI_Error_class(%s=%d) gave %d", classes[i].name, c, k);
        check_string(c, classes[i].name, 1);
    }

#ifdef SHMPI_MPI_H
    /* A value past the last class is no code: MPI_ERR_ARG (MPICH, whose
     * classes go further, answers 63 for 63). */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    k = -1;
    int rc = MPI_Error_class(MPI_ERR_PROC_FAILED + 1, &k);
    CHECK(ct_class(rc) == MPI_ERR_ARG && k == -1, "MPI_Error_class(%d): rc %d, class %d",
          MPI_ERR_PROC_FAILED + 1, rc, k);
    CHECK(ct_class(MPI_Error_class(64 + MPI_ERR_PROC_FAILED + 1, &k)) == MPI_ERR_ARG,
          "MPI_Error_class(%d)", 64 + MPI_ERR_PROC_FAILED + 1);
#endif
    return ct_finish();
}
