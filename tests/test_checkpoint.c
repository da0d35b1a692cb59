/* Checkpoints as a file, a directory with model.safetensors, or a directory
 * with an index and shards; bad indexes are refused, symlinks followed. */
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

#include "checkpoint.h"
#include "st_util.h"
#include "test_util.h"


/* su_dir/<sub>/<name>; the directory is created. */
static const char *path_in(const char *sub, const char *name)
{
    static char buf[4][4200];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, sizeof buf[0], "%s/%s", su_dir, sub);
    mkdir(p, 0700);
    if (name)
        snprintf(p + strlen(p), sizeof buf[0] - strlen(p), "/%s", name);
    return p;
}

static const su_tensor shard1[] = {
    {"layers.0.w", SSMJIT_F32, 2, {2, 3}, NULL},
    {"layers.0.b", SSMJIT_BF16, 1, {3}, NULL},
    {"orphan", SSMJIT_F32, 1, {1}, NULL}, /* in the shard but not in the index */
};
static const su_tensor shard2[] = {
    {"layers.1.w", SSMJIT_F16, 2, {2, 3}, NULL},
    {"embed", SSMJIT_F32, 2, {4, 2}, NULL},
};

static const char index_json[] =
    "{\"metadata\": {\"total_size\": 70},\n"
    " \"weight_map\": {\"layers.1.w\": \"model-00002-of-00002.safetensors\",\n"
    "                 \"embed\": \"model-00002-of-00002.safetensors\",\n"
    "                 \"layers.0.w\": \"model-00001-of-00002.safetensors\",\n"
    "                 \"layers.0.b\": \"model-00001-of-00002.safetensors\"}}";

static void write_sharded(const char *sub)
{
    su_build_file(path_in(sub, "model-00001-of-00002.safetensors"), shard1, 3);
    su_build_file(path_in(sub, "model-00002-of-00002.safetensors"), shard2, 2);
    su_write_text(path_in(sub, SJ_CHECKPOINT_INDEX), index_json);
}

static void check_tensor(const sj_checkpoint *ck, const char *name, int64_t rows, const char *file)
{
    const sj_st_tensor *t = sj_checkpoint_find(ck, name);
    if (!t)
        print_error("'%s' not found\n", name);
    assert_non_null(t);
    assert_string_equal(t->name, name);
    assert_int_equal(t->shape[0], rows);
    assert_non_null(strstr(t->file, file));
    float v[16];
    assert_int_equal(sj_st_tensor_convert(t, SSMJIT_F32, v), SSMJIT_OK);
    for (uint64_t i = 0; i < sj_st_tensor_numel(t); i++)
        assert_true(v[i] == su_value(name, i));
}

static void test_single_file_and_directory(void **state)
{
    (void)state;
    su_build_file(path_in("single", SJ_CHECKPOINT_FILE), shard2, 2);
    sj_checkpoint *ck;
    /* The file itself, then its directory. */
    for (int as_dir = 0; as_dir < 2; as_dir++) {
        assert_int_equal(
            sj_checkpoint_open(as_dir ? path_in("single", NULL) : path_in("single", SJ_CHECKPOINT_FILE),
                               &ck),
            SSMJIT_OK);
        check_tensor(ck, "embed", 4, SJ_CHECKPOINT_FILE);
        check_tensor(ck, "layers.1.w", 2, SJ_CHECKPOINT_FILE);
        assert_null(sj_checkpoint_find(ck, "layers.0.w"));
        sj_checkpoint_close(ck);
    }
    sj_checkpoint_close(NULL);
}

static void test_sharded(void **state)
{
    (void)state;
    write_sharded("sharded");
    sj_checkpoint *ck;
    assert_int_equal(sj_checkpoint_open(path_in("sharded", NULL), &ck), SSMJIT_OK);
    check_tensor(ck, "layers.0.w", 2, "model-00001-of-00002");
    check_tensor(ck, "layers.0.b", 3, "model-00001-of-00002");
    check_tensor(ck, "layers.1.w", 2, "model-00002-of-00002");
    check_tensor(ck, "embed", 4, "model-00002-of-00002");
    assert_null(sj_checkpoint_find(ck, "orphan")); /* the index decides */
    assert_null(sj_checkpoint_find(ck, "zzz"));
    sj_checkpoint_close(ck);

    /* model.safetensors wins over an index, as in transformers: the broken
     * index beside it is never read. */
    su_build_file(path_in("both", SJ_CHECKPOINT_FILE), shard1, 3);
    su_write_text(path_in("both", SJ_CHECKPOINT_INDEX), "not json");
    assert_int_equal(sj_checkpoint_open(path_in("both", NULL), &ck), SSMJIT_OK);
    check_tensor(ck, "orphan", 1, SJ_CHECKPOINT_FILE);
    sj_checkpoint_close(ck);
}

static void expect_index_error(const char *sub, const char *index, ssmjit_status want, const char *part1,
                               const char *part2)
{
    write_sharded(sub);
    su_write_text(path_in(sub, SJ_CHECKPOINT_INDEX), index);
    sj_checkpoint *ck = NULL;
    su_assert_error(sj_checkpoint_open(path_in(sub, NULL), &ck), want, part1, part2);
    assert_null(ck);
}

static void test_bad_indexes(void **state)
{
    (void)state;
    expect_index_error("i1", "{\"weight_map\": ", SSMJIT_ERR_INVALID_ARG,
                       SJ_CHECKPOINT_INDEX "': invalid JSON", "at byte 15");
    expect_index_error("i2", "{\"metadata\": {}}", SSMJIT_ERR_INVALID_ARG,
                       "has no \"weight_map\" object", NULL);
    expect_index_error("i3", "{\"weight_map\": []}", SSMJIT_ERR_INVALID_ARG,
                       "has no \"weight_map\" object", NULL);
    expect_index_error("i4", "{\"weight_map\": {\"embed\": 2}}", SSMJIT_ERR_INVALID_ARG,
                       "weight_map entry 'embed' must be the name of a file in the same directory",
                       NULL);
    expect_index_error("i5", "{\"weight_map\": {\"embed\": \"../i1/model-00002-of-00002.safetensors\"}}",
                       SSMJIT_ERR_INVALID_ARG, "weight_map entry 'embed' must be the name of a file",
                       NULL);
    expect_index_error("i6", "{\"weight_map\": {\"embed\": \"..\"}}", SSMJIT_ERR_INVALID_ARG,
                       "weight_map entry 'embed'", NULL);
    expect_index_error("i7", "{\"weight_map\": {\"embed\": \"\"}}", SSMJIT_ERR_INVALID_ARG,
                       "weight_map entry 'embed'", NULL);
    expect_index_error("i8", "{\"weight_map\": {\"embed\": \"model-00003-of-00002.safetensors\"}}",
                       SSMJIT_ERR_IO, "cannot open", "model-00003-of-00002.safetensors");
    expect_index_error(
        "i9", "{\"weight_map\": {\"layers.0.w\": \"model-00002-of-00002.safetensors\"}}",
        SSMJIT_ERR_INVALID_ARG,
        "puts tensor 'layers.0.w' in 'model-00002-of-00002.safetensors', which has no such tensor",
        NULL);
    expect_index_error("i10",
                       "{\"weight_map\": {\"embed\": \"model-00002-of-00002.safetensors\", "
                       "\"embed\": \"model-00001-of-00002.safetensors\"}}",
                       SSMJIT_ERR_INVALID_ARG, "duplicate key \"embed\"", NULL);

    /* A broken shard fails the whole checkpoint, naming the shard. */
    write_sharded("i11");
    su_write(path_in("i11", "model-00001-of-00002.safetensors"), "\x10\0\0\0\0\0\0\0{}", 10);
    sj_checkpoint *ck = NULL;
    su_assert_error(sj_checkpoint_open(path_in("i11", NULL), &ck), SSMJIT_ERR_INVALID_ARG,
                    "model-00001-of-00002.safetensors", "runs past the end of the file");

    su_assert_error(sj_checkpoint_open(path_in("nothing", NULL), &ck), SSMJIT_ERR_IO, "holds neither",
                    SJ_CHECKPOINT_INDEX);
    su_assert_error(sj_checkpoint_open(path_in("nothing", "absent.safetensors"), &ck), SSMJIT_ERR_IO,
                    "cannot open", "absent.safetensors");
}

/* The Hugging Face hub cache keeps a snapshot as relative symlinks into
 * its blob store: such a checkpoint opens, sharded or single.  A dangling
 * link in place of model.safetensors is reported, not skipped in favour of
 * an index; a link to anything but a regular file is refused. */
static void test_symlinks_followed(void **state)
{
    (void)state;
    write_sharded("blobs");
    su_build_file(path_in("blobs", "single"), shard2, 2);
    static const char *const names[] = {"model-00001-of-00002.safetensors",
                                        "model-00002-of-00002.safetensors", SJ_CHECKPOINT_INDEX};
    char target[512];
    for (size_t i = 0; i < 3; i++) {
        snprintf(target, sizeof target, "../blobs/%s", names[i]);
        assert_int_equal(symlink(target, path_in("snap", names[i])), 0);
    }
    sj_checkpoint *ck = NULL;
    assert_int_equal(sj_checkpoint_open(path_in("snap", NULL), &ck), SSMJIT_OK);
    check_tensor(ck, "layers.0.w", 2, "model-00001-of-00002");
    check_tensor(ck, "embed", 4, "model-00002-of-00002");
    sj_checkpoint_close(ck);

    assert_int_equal(symlink("../blobs/single", path_in("snap1", SJ_CHECKPOINT_FILE)), 0);
    assert_int_equal(sj_checkpoint_open(path_in("snap1", NULL), &ck), SSMJIT_OK);
    check_tensor(ck, "embed", 4, SJ_CHECKPOINT_FILE);
    sj_checkpoint_close(ck);

    ck = NULL;
    write_sharded("snap2");
    assert_int_equal(symlink("../blobs/missing", path_in("snap2", SJ_CHECKPOINT_FILE)), 0);
    su_assert_error(sj_checkpoint_open(path_in("snap2", NULL), &ck), SSMJIT_ERR_IO, "cannot open",
                    SJ_CHECKPOINT_FILE);
    assert_int_equal(mkfifo(path_in("blobs", "fifo"), 0600), 0);
    assert_int_equal(symlink("../blobs/fifo", path_in("snap3", SJ_CHECKPOINT_FILE)), 0);
    su_assert_error(sj_checkpoint_open(path_in("snap3", NULL), &ck), SSMJIT_ERR_IO, "not a regular file",
                    NULL);
    assert_null(ck);
}

/* A directory whose path fits PATH_MAX but not with the file name joined
 * to it: refused with the path, not truncated. */
static void test_path_too_long(void **state)
{
    (void)state;
    char *dir = malloc(PATH_MAX);
    assert_non_null(dir);
    size_t n = (size_t)snprintf(dir, PATH_MAX, "%s", su_dir);
    while (n + 1 + 200 + strlen(SJ_CHECKPOINT_FILE) < PATH_MAX - 1) {
        dir[n++] = '/';
        memset(dir + n, 'p', 200);
        n += 200;
        dir[n] = '\0';
        assert_int_equal(mkdir(dir, 0700), 0);
    }
    size_t last = PATH_MAX - 1 - n - 1 - strlen(SJ_CHECKPOINT_FILE) / 2; /* the join overflows */
    dir[n++] = '/';
    memset(dir + n, 'q', last);
    n += last;
    dir[n] = '\0';
    assert_int_equal(mkdir(dir, 0700), 0);
    sj_checkpoint *ck = NULL;
    su_assert_error(sj_checkpoint_open(dir, &ck), SSMJIT_ERR_IO, "path too long", "qqq");
    assert_null(ck);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_file_and_directory),
        cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_bad_indexes),
        cmocka_unit_test(test_symlinks_followed),
        cmocka_unit_test(test_path_too_long),
    };
    return cmocka_run_group_tests(tests, su_dir_setup, su_dir_teardown);
}
