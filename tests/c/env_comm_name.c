/* ranks: 1 2 4 */
/* Communicator names: MPI_COMM_WORLD and MPI_COMM_SELF have the default
 * names "MPI_COMM_WORLD" and "MPI_COMM_SELF"; a communicator the user never
 * named (from MPI_Comm_split) has the empty name; set/get round trip with
 * resultlen == strlen; renaming replaces; names are local (each rank sets
 * its own); naming a dup leaves the parent's name alone; an over-long name
 * is truncated to MPI_MAX_OBJECT_NAME-1 characters; MPI_COMM_WORLD can be
 * renamed and restored. Whether MPI_Comm_dup copies a name is not asserted. */
#include "common.h"

static char got[MPI_MAX_OBJECT_NAME];

/* Gets comm's name into got[], checking the length and terminator. */
static int get_name(MPI_Comm comm)
{
    int len = -1;
    memset(got, 'X', sizeof got);
    CHECK_OK(MPI_Comm_get_name(comm, got, &len));
    CHECK(len >= 0 && len < MPI_MAX_OBJECT_NAME, "resultlen %d out of range", len);
    if (len < 0 || len >= MPI_MAX_OBJECT_NAME) {
        got[0] = '\0';
        return -1;
    }
    CHECK(got[len] == '\0', "name not NUL-terminated at resultlen %d", len);
    got[len] = '\0';
    CHECK((int)strlen(got) == len, "strlen %d != resultlen %d", (int)strlen(got), len);
    return len;
}

static void expect_name(MPI_Comm comm, const char *want, const char *what)
{
    int len = get_name(comm);
    CHECK(len == (int)strlen(want) && strcmp(got, want) == 0,
          "%s: name \"%s\" (len %d), expected \"%s\"", what, got, len, want);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    CHECK(MPI_MAX_OBJECT_NAME >= 64, "MPI_MAX_OBJECT_NAME = %d", MPI_MAX_OBJECT_NAME);

    expect_name(MPI_COMM_WORLD, "MPI_COMM_WORLD", "world");
    expect_name(MPI_COMM_SELF, "MPI_COMM_SELF", "self");

    /* A communicator from split was never named. */
    MPI_Comm s;
    CHECK_OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &s));
    expect_name(s, "", "split comm");

    /* Round trip, rename, per-rank names. */
    MPI_Comm d;
    CHECK_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    CHECK_OK(MPI_Comm_set_name(d, "my dup: #1 (test)"));
    expect_name(d, "my dup: #1 (test)", "dup after set");
    expect_name(MPI_COMM_WORLD, "MPI_COMM_WORLD", "world after naming its dup");

    char mine[64];
    snprintf(mine, sizeof mine, "rank-%d-of-%d", rank, size);
    CHECK_OK(MPI_Comm_set_name(d, mine));
    expect_name(d, mine, "dup after per-rank rename");
    CHECK_OK(MPI_Barrier(d));   /* naming is local: the comm is unaffected */
    expect_name(d, mine, "dup after barrier");

    CHECK_OK(MPI_Comm_set_name(s, "split half"));
    expect_name(s, "split half", "split after set");
    expect_name(d, mine, "dup after naming the split comm");

    /* Over-long names are truncated to MPI_MAX_OBJECT_NAME - 1 characters. */
    {
        static char longname[MPI_MAX_OBJECT_NAME + 32];
        for (int i = 0; i < (int)sizeof longname - 1; i++)
            longname[i] = (char)('a' + i % 26);
        longname[sizeof longname - 1] = '\0';
        CHECK_OK(MPI_Comm_set_name(d, longname));
        int len = get_name(d);
        CHECK(len == MPI_MAX_OBJECT_NAME - 1, "long name: resultlen %d, expected %d", len,
              MPI_MAX_OBJECT_NAME - 1);
        if (len > 0)
            CHECK(memcmp(got, longname, (size_t)len) == 0, "long name is not a prefix");
    }

    /* MPI_COMM_WORLD can be renamed and restored. */
    CHECK_OK(MPI_Comm_set_name(MPI_COMM_WORLD, "renamed world"));
    expect_name(MPI_COMM_WORLD, "renamed world", "world renamed");
    expect_name(MPI_COMM_SELF, "MPI_COMM_SELF", "self after renaming world");
    CHECK_OK(MPI_Comm_set_name(MPI_COMM_WORLD, "MPI_COMM_WORLD"));
    expect_name(MPI_COMM_WORLD, "MPI_COMM_WORLD", "world restored");

    /* A dup's name, whatever it is, is well formed; naming it is independent. */
    MPI_Comm d2;
    CHECK_OK(MPI_Comm_dup(d, &d2));
    (void)get_name(d2);
    CHECK_OK(MPI_Comm_set_name(d2, "second"));
    expect_name(d2, "second", "second dup");
    {
        int len = get_name(d);
        CHECK(len == MPI_MAX_OBJECT_NAME - 1, "naming a dup changed its parent's name");
    }

    CHECK_OK(MPI_Comm_free(&d2));
    CHECK_OK(MPI_Comm_free(&d));
    CHECK_OK(MPI_Comm_free(&s));
    return ct_finish();
}
