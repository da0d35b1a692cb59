/* The file helpers under the cache and the checkpoint reader: their failure
 * paths report the path and leave nothing behind. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "st_util.h"
#include "test_util.h"

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static void test_mkdirs(void **state)
{
    (void)state;
    struct stat st;
    assert_int_equal(sj_mkdirs(su_path("a/b/c")), SSMJIT_OK);
    assert_int_equal(stat(su_path("a/b/c"), &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(sj_mkdirs(su_path("a/b/c")), SSMJIT_OK); /* already there */

    write_text(su_path("file"), "x");
    su_assert_error(sj_mkdirs(su_path("file")), SSMJIT_ERR_IO, "is not a directory", "file");
    su_assert_error(sj_mkdirs(su_path("file/sub")), SSMJIT_ERR_IO, "cannot create directory", "file");

    su_assert_error(sj_mkdirs(""), SSMJIT_ERR_IO, "bad path length", NULL);
    char *longp = malloc(PATH_MAX + 1);
    assert_non_null(longp);
    memset(longp, 'd', PATH_MAX);
    longp[0] = '/';
    longp[PATH_MAX] = '\0';
    su_assert_error(sj_mkdirs(longp), SSMJIT_ERR_IO, "bad path length", NULL);
    free(longp);
}

static void test_write_atomic(void **state)
{
    (void)state;
    char *text;
    size_t len;
    assert_int_equal(sj_write_atomic(su_path("out"), "head:", 5, "body", 4), SSMJIT_OK);
    assert_int_equal(sj_read_file(su_path("out"), SJ_LINKS_REFUSE, &text, &len), SSMJIT_OK);
    assert_int_equal(len, 9);
    assert_string_equal(text, "head:body");
    free(text);
    /* a second write replaces the file whole */
    assert_int_equal(sj_write_atomic(su_path("out"), "", 0, "new", 3), SSMJIT_OK);
    assert_int_equal(sj_read_file(su_path("out"), SJ_LINKS_REFUSE, &text, &len), SSMJIT_OK);
    assert_string_equal(text, "new");
    free(text);
    assert_int_equal(tu_dir_entries(su_dir), 1);
}

static void test_write_atomic_failures(void **state)
{
    (void)state;
    /* rename onto a non-empty directory fails: the temp file goes too */
    assert_int_equal(sj_mkdirs(su_path("dir/inner")), SSMJIT_OK);
    su_assert_error(sj_write_atomic(su_path("dir"), "h", 1, "d", 1), SSMJIT_ERR_IO, "rename failed", "dir");
    assert_int_equal(tu_dir_entries(su_dir), 1);

    su_assert_error(sj_write_atomic(su_path("missing/out"), "h", 1, "d", 1), SSMJIT_ERR_IO, "cannot create",
                    "missing");
    assert_int_equal(tu_dir_entries(su_dir), 1);

    /* a name that fits PATH_MAX but not with the temp file's prefix */
    size_t room = PATH_MAX - strlen(su_dir) - 8;
    char *name = malloc(room + 1);
    assert_non_null(name);
    memset(name, 'n', room);
    name[room] = '\0';
    su_assert_error(sj_write_atomic(su_path(name), "h", 1, "d", 1), SSMJIT_ERR_IO, "cache path too long", NULL);
    free(name);
    assert_int_equal(tu_dir_entries(su_dir), 1);
}

static void test_read_refusals(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len;
    su_assert_error(sj_read_file(su_path("none"), SJ_LINKS_REFUSE, &text, &len), SSMJIT_ERR_IO, "cannot open",
                    "none");
    assert_int_equal(sj_mkdirs(su_path("sub")), SSMJIT_OK);
    su_assert_error(sj_read_file(su_path("sub"), SJ_LINKS_REFUSE, &text, &len), SSMJIT_ERR_IO, "not a regular file",
                    "sub");
    assert_int_equal(mkfifo(su_path("fifo"), 0600), 0); /* must not block */
    su_assert_error(sj_read_file(su_path("fifo"), SJ_LINKS_REFUSE, &text, &len), SSMJIT_ERR_IO,
                    "not a regular file", "fifo");
    write_text(su_path("target"), "t");
    assert_int_equal(symlink("target", su_path("link")), 0);
    su_assert_error(sj_read_file(su_path("link"), SJ_LINKS_REFUSE, &text, &len), SSMJIT_ERR_IO, "cannot open",
                    "link");
    assert_null(text);
    assert_int_equal(sj_read_file(su_path("link"), SJ_LINKS_FOLLOW, &text, &len), SSMJIT_OK);
    assert_string_equal(text, "t");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mkdirs, su_dir_setup, su_dir_teardown),
        cmocka_unit_test_setup_teardown(test_write_atomic, su_dir_setup, su_dir_teardown),
        cmocka_unit_test_setup_teardown(test_write_atomic_failures, su_dir_setup, su_dir_teardown),
        cmocka_unit_test_setup_teardown(test_read_refusals, su_dir_setup, su_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
