/* ranks: 1 2 */
/* MPI_Get_version and MPI_Get_library_version: both may be called before
 * MPI_Init and after MPI_Finalize; the version matches the MPI_VERSION and
 * MPI_SUBVERSION macros of the header; the library string is a non-empty,
 * NUL-terminated string of length resultlen < MPI_MAX_LIBRARY_VERSION_STRING
 * and is the same at each call. */
#include "common.h"

static char lib_pre[MPI_MAX_LIBRARY_VERSION_STRING];
static char lib_now[MPI_MAX_LIBRARY_VERSION_STRING];
static char lib_post[MPI_MAX_LIBRARY_VERSION_STRING];

/* Checks a library version string filled over a buffer of 'X's. */
static int lib_string_ok(const char *s, int len)
{
    if (len <= 0 || len >= MPI_MAX_LIBRARY_VERSION_STRING)
        return 0;
    if (s[len] != '\0')
        return 0;
    return (int)strlen(s) == len;
}

int main(int argc, char **argv)
{
    int ver_pre = -1, sub_pre = -1, len_pre = -1;
    memset(lib_pre, 'X', sizeof lib_pre);
    int rc_v_pre = MPI_Get_version(&ver_pre, &sub_pre);
    int rc_l_pre = MPI_Get_library_version(lib_pre, &len_pre);

    MPI_Init(&argc, &argv);

    CHECK(MPI_VERSION >= 3, "MPI_VERSION macro is %d", MPI_VERSION);
    CHECK(MPI_SUBVERSION >= 0, "MPI_SUBVERSION macro is %d", MPI_SUBVERSION);

    CHECK(rc_v_pre == MPI_SUCCESS, "MPI_Get_version before init returned %d", rc_v_pre);
    CHECK(ver_pre == MPI_VERSION && sub_pre == MPI_SUBVERSION,
          "before init: version %d.%d, header says %d.%d", ver_pre, sub_pre,
          MPI_VERSION, MPI_SUBVERSION);
    CHECK(rc_l_pre == MPI_SUCCESS, "MPI_Get_library_version before init returned %d", rc_l_pre);
    CHECK(lib_string_ok(lib_pre, len_pre), "before init: bad library string (len %d)", len_pre);

    int ver = -1, sub = -1, len = -1;
    CHECK_OK(MPI_Get_version(&ver, &sub));
    CHECK(ver == MPI_VERSION, "MPI_Get_version version %d, MPI_VERSION %d", ver, MPI_VERSION);
    CHECK(sub == MPI_SUBVERSION, "MPI_Get_version subversion %d, MPI_SUBVERSION %d", sub,
          MPI_SUBVERSION);

    memset(lib_now, 'X', sizeof lib_now);
    CHECK_OK(MPI_Get_library_version(lib_now, &len));
    CHECK(lib_string_ok(lib_now, len), "bad library string (len %d)", len);
    CHECK(len == len_pre && strcmp(lib_now, lib_pre) == 0,
          "library string changed between calls: \"%s\" vs \"%s\"", lib_pre, lib_now);

    /* Both calls are allowed after MPI_Finalize too; failures there are
     * reported on stderr and through the exit status. */
    int result = ct_finish();
    int ver_post = -1, sub_post = -1, len_post = -1;
    memset(lib_post, 'X', sizeof lib_post);
    int rc_v = MPI_Get_version(&ver_post, &sub_post);
    int rc_l = MPI_Get_library_version(lib_post, &len_post);
    if (rc_v != MPI_SUCCESS || ver_post != MPI_VERSION || sub_post != MPI_SUBVERSION) {
        fprintf(stderr, "after finalize: MPI_Get_version rc %d gave %d.%d\n", rc_v, ver_post,
                sub_post);
        result = 1;
    }
    if (rc_l != MPI_SUCCESS || !lib_string_ok(lib_post, len_post) ||
        strcmp(lib_post, lib_now) != 0) {
        fprintf(stderr, "after finalize: MPI_Get_library_version rc %d len %d\n", rc_l,
                len_post);
        result = 1;
    }
    return result;
}
