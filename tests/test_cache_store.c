/* Storing entries: the size cap (SSMJIT_CACHE_MAX_BYTES) and its
 * least-recently-used eviction, stale temp files, and writers in several
 * processes at once.  Synthetic entries: no NVRTC needed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "cache_util.h"
#include "test_util.h"

#define FILE_BYTES(payload) ((payload) + SJ_ENTRY_HEADER_SIZE)

static void entry_path(const char *dir, unsigned i, char *path, size_t cap)
{
    uint8_t key[32];
    cu_key(i, key);
    cu_path(dir, key, path, cap);
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void test_max_bytes_values(void **state)
{
    (void)state;
    static const struct {
        const char *value;
        uint64_t bytes;
    } good[] = {
        {"0", 0},           {"4096", 4096},         {"64K", 64ull << 10},
        {"3M", 3ull << 20}, {"2G", 2ull << 30},     {"1T", 1ull << 40},
        {"", 1ull << 30},   {"16777215T", 16777215ull << 40},
        {"18446744073709551615", UINT64_MAX},
    };
    static const char *bad[] = {"abc", "-1", "1.5G", "12Q", "64k", "64KB", " 64", "K",
                                "18446744073709551616", "16777216T", "1G "};
    uint64_t v;
    unsetenv("SSMJIT_CACHE_MAX_BYTES");
    assert_int_equal(sj_cache_max_bytes(&v), SSMJIT_OK);
    assert_int_equal(v, 1ull << 30);
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        setenv("SSMJIT_CACHE_MAX_BYTES", good[i].value, 1);
        v = 12345;
        assert_int_equal(sj_cache_max_bytes(&v), SSMJIT_OK);
        assert_true(v == good[i].bytes);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("SSMJIT_CACHE_MAX_BYTES", bad[i], 1);
        assert_int_equal(sj_cache_max_bytes(&v), SSMJIT_ERR_INVALID_ARG);
        assert_non_null(strstr(ssmjit_last_error(), "SSMJIT_CACHE_MAX_BYTES"));
        assert_non_null(strstr(ssmjit_last_error(), bad[i]));
    }
    /* every entry point that uses the cap refuses a bad one */
    char *dir = tu_mkdtemp();
    ssmjit_cache_stats s;
    assert_int_equal(ssmjit_cache_verify(dir, 0, &s), SSMJIT_ERR_INVALID_ARG);
    ssmjit_prewarm_options o;
    ssmjit_prewarm_options_init(&o);
    o.arch = "sm_80";
    o.cache_dir = dir;
    int cached;
    assert_int_equal(ssmjit_prewarm_unit(&o, 0, &cached), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "SSMJIT_CACHE_MAX_BYTES"));
    ssmjit_prewarm_result r;
    assert_int_equal(ssmjit_prewarm(&o, &r), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "SSMJIT_CACHE_MAX_BYTES"));
    assert_int_equal(tu_dir_entries(dir), 0);
    setenv("SSMJIT_CACHE_MAX_BYTES", "7M", 1);
    assert_int_equal(ssmjit_cache_verify(dir, 0, &s), SSMJIT_OK);
    assert_true(s.max_bytes == 7ull << 20);
    unsetenv("SSMJIT_CACHE_MAX_BYTES");
    tu_rmtree(dir);
    free(dir);
}

static void test_least_recently_used_evicted(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), path[8][4200];
    const size_t payload = 10000;
    const uint64_t cap = 5 * FILE_BYTES(payload) + 10;
    for (unsigned i = 0; i < 8; i++)
        entry_path(dir, i, path[i], sizeof path[i]);
    for (unsigned i = 0; i < 5; i++) {
        assert_int_equal(cu_store(dir, cap, i, payload), SSMJIT_OK);
        cu_age(path[i], 100 - i); /* entry 0 the least recently used */
    }
    assert_int_equal(cu_check_all(dir).entries, 5);
    /* a hit records use; a read that does not ask to (read-only mode) does not */
    size_t size;
    double before = cu_mtime(path[1]);
    assert_int_equal(cu_entry_good(path[1], strrchr(path[1], '/') + 1, &size), 1);
    assert_true(cu_mtime(path[1]) == before);
    uint8_t key[32];
    void *got;
    cu_key(0, key);
    assert_int_equal(sj_cache_entry_read(path[0], key, 0, 1, &got, &size), SSMJIT_OK);
    free(got);
    assert_true(cu_mtime(path[0]) > (double)time(NULL) - 60);

    /* over the cap: the least recently used goes (1, not 0, which was hit) */
    assert_int_equal(cu_store(dir, cap, 5, payload), SSMJIT_OK);
    assert_true(exists(path[0]) && !exists(path[1]) && exists(path[5]));
    assert_int_equal(cu_store(dir, cap, 6, payload), SSMJIT_OK);
    assert_true(exists(path[0]) && !exists(path[2]) && exists(path[3]) && exists(path[6]));
    cu_census c = cu_check_all(dir);
    assert_int_equal(c.entries, 5);
    assert_true(c.bytes <= cap);
    /* a cap lowered later takes effect at the next write, down to the new
     * entry alone if need be, which is always kept */
    assert_int_equal(cu_store(dir, FILE_BYTES(payload), 7, payload), SSMJIT_OK);
    c = cu_check_all(dir);
    assert_int_equal(c.entries, 1);
    assert_true(exists(path[7]));
    tu_rmtree(dir);
    free(dir);
}

/* Uses recorded in the future (another host's clock on a shared disk) do
 * not get the entry just stored evicted in their place. */
static void test_entry_just_stored_is_kept(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), path[4][4200];
    const size_t payload = 10000;
    const uint64_t cap = 3 * FILE_BYTES(payload);
    for (unsigned i = 0; i < 4; i++)
        entry_path(dir, i, path[i], sizeof path[i]);
    for (unsigned i = 0; i < 3; i++) {
        assert_int_equal(cu_store(dir, cap, i, payload), SSMJIT_OK);
        cu_age(path[i], -3600.0 - i);
    }
    assert_int_equal(cu_store(dir, cap, 3, payload), SSMJIT_OK);
    assert_true(exists(path[3]) && !exists(path[0]) && exists(path[1]) && exists(path[2]));
    tu_rmtree(dir);
    free(dir);
}

static void test_no_cap_keeps_everything(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    for (unsigned i = 0; i < 40; i++)
        assert_int_equal(cu_store(dir, 0, i, 5000), SSMJIT_OK);
    assert_int_equal(cu_check_all(dir).entries, 40);
    tu_rmtree(dir);
    free(dir);
}

/* Plants a regular file `name` in the directory of path (or in dir when
 * path is NULL), `age` seconds old; returns its path in out. */
static void plant(const char *dir, const char *path, const char *name, double age, char *out, size_t cap)
{
    if (path)
        snprintf(out, cap, "%.*s/%s", (int)(strrchr(path, '/') - path), path, name);
    else
        snprintf(out, cap, "%s/%s", dir, name);
    FILE *f = fopen(out, "w");
    assert_non_null(f);
    fputs("partial", f);
    fclose(f);
    cu_age(out, age);
}

static void test_entry_larger_than_cap_not_written(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), path[4200], stale[4400];
    assert_int_equal(cu_store(dir, 0, 0, 1000), SSMJIT_OK);
    entry_path(dir, 1, path, sizeof path);
    plant(dir, NULL, ".tmp-4242-0-toolchain-0123", SJ_TEMP_STALE_SECONDS + 60, stale, sizeof stale);
    /* one byte more than the cap is refused; exactly the cap fits */
    assert_int_equal(cu_store(dir, FILE_BYTES(3000), 1, 3001), SSMJIT_ERR_IO);
    assert_non_null(strstr(ssmjit_last_error(), "SSMJIT_CACHE_MAX_BYTES=3064"));
    assert_false(exists(path));
    assert_int_equal(cu_check_all(dir).entries, 1); /* the other entry untouched */
    assert_false(exists(stale)); /* housekeeping ran even though nothing was written */
    assert_int_equal(cu_store(dir, FILE_BYTES(3000), 1, 3000), SSMJIT_OK);
    assert_true(exists(path));
    assert_int_equal(cu_check_all(dir).entries, 1); /* entry 0 made room */
    assert_int_equal(cu_store(dir, 10, 2, 0), SSMJIT_ERR_IO); /* a cap below the header */
    tu_rmtree(dir);
    free(dir);
}

static void test_stale_temp_files_removed(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), path[4200], p[6][4400];
    const double stale = SJ_TEMP_STALE_SECONDS + 60, young = SJ_TEMP_STALE_SECONDS - 60;
    assert_int_equal(cu_store(dir, 0, 0, 1000), SSMJIT_OK);
    entry_path(dir, 0, path, sizeof path);
    const char *name = strrchr(path, '/') + 1;
    char temp[4300];
    snprintf(temp, sizeof temp, ".tmp-4242-0-%s", name);
    plant(dir, path, temp, stale, p[0], sizeof p[0]);
    plant(dir, NULL, ".tmp-4242-1-toolchain-0123", stale, p[1], sizeof p[1]);
    snprintf(temp, sizeof temp, ".tmp-4243-0-%s", name);
    plant(dir, path, temp, young, p[2], sizeof p[2]); /* a writer still at work, maybe */
    plant(dir, NULL, ".tmp-4243-1-toolchain-0123", 0, p[3], sizeof p[3]);
    plant(dir, path, "notes.txt", stale, p[4], sizeof p[4]); /* not ssmjit's */
    plant(dir, NULL, "README", stale, p[5], sizeof p[5]);
    assert_int_equal(cu_check_all(dir).temps, 4);
    assert_int_equal(cu_store(dir, 0, 1, 1000), SSMJIT_OK);
    assert_false(exists(p[0]));
    assert_false(exists(p[1]));
    for (int i = 2; i < 6; i++)
        assert_true(exists(p[i]));
    cu_census c = cu_check_all(dir);
    assert_int_equal(c.temps, 2);
    assert_int_equal(c.entries, 2);
    tu_rmtree(dir);
    free(dir);
}

#define WRITERS 4
#define PER_WRITER 40

static void test_writers_in_parallel_stay_under_cap(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    const uint64_t cap = 400000;
    pid_t kids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        size_t sizes[PER_WRITER];
        for (int j = 0; j < PER_WRITER; j++)
            sizes[j] = (size_t)tu_uniform(20000, 60000);
        kids[w] = fork();
        assert_true(kids[w] >= 0);
        if (kids[w] == 0) {
            for (unsigned j = 0; j < PER_WRITER; j++)
                if (cu_store(dir, cap, (unsigned)w * 1000 + j, sizes[j]) != SSMJIT_OK) {
                    fprintf(stderr, "writer %d: %s\n", w, ssmjit_last_error());
                    _exit(1);
                }
            _exit(0);
        }
    }
    for (int w = 0; w < WRITERS; w++) {
        int status;
        assert_int_equal(waitpid(kids[w], &status, 0), kids[w]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    /* The last writer to finish evicted after every other write landed. */
    cu_census c = cu_check_all(dir);
    assert_true(c.bytes <= cap);
    assert_true(c.entries >= cap / FILE_BYTES(60000) - WRITERS);
    assert_int_equal(c.temps, 0);
    printf("# %d writers x %d entries, cap %llu: %zu entries, %llu bytes left\n", WRITERS, PER_WRITER,
           (unsigned long long)cap, c.entries, (unsigned long long)c.bytes);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_bytes_values),
        cmocka_unit_test(test_least_recently_used_evicted),
        cmocka_unit_test(test_entry_just_stored_is_kept),
        cmocka_unit_test(test_no_cap_keeps_everything),
        cmocka_unit_test(test_entry_larger_than_cap_not_written),
        cmocka_unit_test(test_stale_temp_files_removed),
        cmocka_unit_test(test_writers_in_parallel_stay_under_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
