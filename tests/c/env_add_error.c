/* ranks: 1 2 */
/* Error classes, codes and strings a program adds (MPI 4.1 §9.5):
 * - MPI_Add_error_class gives a new class, and MPI_LASTUSEDCODE (an
 *   attribute of MPI_COMM_WORLD, the largest class) grows to it;
 * - MPI_Add_error_code gives codes of an added or a predefined class;
 *   MPI_Error_class maps them back;
 * - MPI_Add_error_string sets what MPI_Error_string prints for them;
 * - a user error handler called with an added code gets that code;
 * - adding a code to a value that is no class, or a string to a
 *   predefined code, is MPI_ERR_ARG. */
#include "common.h"
#include <string.h>

static int handled = -1;
static void handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handled = *code;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int *last = NULL, flag = 0;
    CHECK_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(flag && last && *last >= MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE before: %d",
          last ? *last : -1);
    int before = *last;

    int cls = -1, code = -1, code2 = -1;
    CHECK_OK(MPI_Add_error_class(&cls));
    CHECK(cls > before, "added class %d, MPI_LASTUSEDCODE was %d", cls, before);
    CHECK_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(*last >= cls, "MPI_LASTUSEDCODE %d after adding class %d", *last, cls);
    CHECK_OK(MPI_Add_error_code(cls, &code));
    CHECK_OK(MPI_Add_error_code(MPI_ERR_ARG, &code2));
    CHECK(code != cls && code2 != code, "codes %d %d of class %d", code, code2, cls);
    CHECK_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(*last >= cls, "MPI_LASTUSEDCODE %d after adding codes", *last);
    int k = -1;
    CHECK_OK(MPI_Error_class(code, &k));
    CHECK(k == cls, "class of the added code: %d, not %d", k, cls);
    CHECK_OK(MPI_Error_class(cls, &k));
    CHECK(k == cls, "class of the added class: %d", k);
    CHECK_OK(MPI_Error_class(code2, &k));
    CHECK(k == MPI_ERR_ARG, "class of the code of MPI_ERR_ARG: %d", k);

    CHECK_OK(MPI_Add_error_string(cls, "the input file is corrupt"));
    CHECK_OK(MPI_Add_error_string(code, "bad magic number"));
    CHECK_OK(MPI_Add_error_string(code, "bad magic number in the header"));
    char s[MPI_MAX_ERROR_STRING];
    int len = -1;
    CHECK_OK(MPI_Error_string(code, s, &len));
    CHECK(strcmp(s, "bad magic number in the header") == 0 && len == (int)strlen(s),
          "string of the code: %s (%d)", s, len);
    CHECK_OK(MPI_Error_string(cls, s, &len));
    CHECK(strcmp(s, "the input file is corrupt") == 0, "string of the class: %s", s);

    MPI_Errhandler eh;
    CHECK_OK(MPI_Comm_create_errhandler(handler, &eh));
    CHECK_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh));
    CHECK_OK(MPI_Comm_call_errhandler(MPI_COMM_WORLD, code));
    CHECK(handled == code, "the handler got %d, not %d", handled, code);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);

#ifdef SHMPI_MPI_H
    /* (MPICH 4.0 takes a code of a code, and aborts on a predefined
     * code's string.) */
    int bad = -1;
    CHECK(ct_class(MPI_Add_error_code(code, &bad)) == MPI_ERR_ARG, "a code of a code");
    CHECK(ct_class(MPI_Add_error_string(MPI_ERR_RANK, "x")) == MPI_ERR_ARG,
          "a string for a predefined class");
#endif
    return ct_finish();
}
