/* Cache entries on disk: round trip, layout, every kind of damage
 * rejected, symlinks and FIFOs in place of an entry or temp file never
 * followed, use recorded on hits.  No NVRTC needed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "cache_util.h"
#include "fileio.h"
#include "test_util.h"

typedef struct {
    char *dir;
    char path[4096];
    uint8_t key[32];
    unsigned char payload[3000];
    size_t size;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->dir = tu_mkdtemp();
    for (int i = 0; i < 32; i++)
        f->key[i] = (uint8_t)tu_uniform(0, 256);
    f->size = 1000 + (size_t)tu_uniform(0, 2000);
    for (size_t i = 0; i < f->size; i++)
        f->payload[i] = (unsigned char)tu_uniform(0, 256);
    cu_path(f->dir, f->key, f->path, sizeof f->path);
    assert_int_equal(sj_cache_entry_write(f->path, f->key, 0, f->payload, f->size), SSMJIT_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    tu_rmtree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static void test_round_trip_and_layout(void **state)
{
    fixture *f = *state;
    void *got;
    size_t size;
    assert_int_equal(sj_cache_entry_read(f->path, f->key, 0, 0, &got, &size), SSMJIT_OK);
    assert_int_equal(size, f->size);
    assert_memory_equal(got, f->payload, size);
    free(got);
    /* <dir>/<2 hex>/<2 hex>/<64 hex>-<label>-sm_90-nvrtc13.0.cubin */
    const char *rel = f->path + strlen(f->dir) + 1;
    char hex[65];
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", f->key[i]);
    assert_int_equal(strlen(rel), 2 + 1 + 2 + 1 + 64 + strlen("-unit-sm_90-nvrtc13.0.cubin"));
    assert_true(rel[2] == '/' && rel[5] == '/');
    assert_memory_equal(rel, hex, 2);
    assert_memory_equal(rel + 3, hex + 2, 2);
    assert_memory_equal(rel + 6, hex, 64);
    assert_string_equal(rel + 6 + 64, "-unit-sm_90-nvrtc13.0.cubin");
    assert_true(sj_cache_is_entry_name(rel + 6));
    struct stat st;
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/%.2s", f->dir, rel);
    assert_int_equal(stat(sub, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    /* no temp file left behind */
    snprintf(sub, sizeof sub, "ls -a '%s/%.5s' | grep -c tmp", f->dir, rel);
    FILE *p = popen(sub, "r");
    int temps = -1;
    assert_int_equal(fscanf(p, "%d", &temps), 1);
    pclose(p);
    assert_int_equal(temps, 0);
}

static void expect_rejected(fixture *f, const char *why)
{
    void *got = NULL;
    size_t size;
    assert_int_not_equal(sj_cache_entry_read(f->path, f->key, 0, 0, &got, &size), SSMJIT_OK);
    assert_null(got);
    assert_non_null(strstr(ssmjit_last_error(), why));
    assert_int_not_equal(sj_cache_entry_check(f->path, NULL), SSMJIT_OK);
}

static void patch(fixture *f, long offset, unsigned char xor_mask)
{
    int fd = open(f->path, O_RDWR);
    unsigned char b;
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &b, 1, offset), 1);
    b ^= xor_mask;
    assert_int_equal(pwrite(fd, &b, 1, offset), 1);
    close(fd);
}

static void test_truncated(void **state)
{
    fixture *f = *state;
    assert_int_equal(truncate(f->path, SJ_ENTRY_HEADER_SIZE + (off_t)f->size - 1), 0);
    expect_rejected(f, "length");
}

static void test_header_truncated(void **state)
{
    fixture *f = *state;
    assert_int_equal(truncate(f->path, 20), 0);
    expect_rejected(f, "header");
}

static void test_bit_flipped_payload(void **state)
{
    fixture *f = *state;
    patch(f, SJ_ENTRY_HEADER_SIZE + (long)tu_uniform(0, (double)f->size), (unsigned char)(1u << (int)tu_uniform(0, 8)));
    expect_rejected(f, "checksum");
}

static void test_wrong_magic(void **state)
{
    fixture *f = *state;
    patch(f, 0, 0x20);
    expect_rejected(f, "magic");
}

static void test_zero_length(void **state)
{
    fixture *f = *state;
    assert_int_equal(truncate(f->path, 0), 0);
    expect_rejected(f, "header");
}

static void test_wrong_version(void **state)
{
    fixture *f = *state;
    patch(f, 8, 0x01);
    expect_rejected(f, "version");
}

static void test_wrong_key(void **state)
{
    fixture *f = *state;
    f->key[(int)tu_uniform(0, 32)] ^= 0x10;
    void *got = NULL;
    size_t size;
    assert_int_not_equal(sj_cache_entry_read(f->path, f->key, 0, 0, &got, &size), SSMJIT_OK);
    assert_null(got);
    assert_non_null(strstr(ssmjit_last_error(), "key"));
}

static void test_wrong_kind(void **state)
{
    fixture *f = *state;
    void *got = NULL;
    size_t size;
    assert_int_not_equal(sj_cache_entry_read(f->path, f->key, 1, 0, &got, &size), SSMJIT_OK);
    assert_non_null(strstr(ssmjit_last_error(), "kind"));
}

static void test_rewrite_replaces(void **state)
{
    fixture *f = *state;
    patch(f, 0, 0x20);
    f->payload[0] ^= 0xff;
    assert_int_equal(sj_cache_entry_write(f->path, f->key, 0, f->payload, f->size), SSMJIT_OK);
    void *got;
    size_t size;
    assert_int_equal(sj_cache_entry_read(f->path, f->key, 0, 0, &got, &size), SSMJIT_OK);
    assert_memory_equal(got, f->payload, f->size);
    free(got);
}

static void test_checksum_sensitivity(void **state)
{
    (void)state;
    unsigned char buf[257];
    for (int i = 0; i < 257; i++)
        buf[i] = (unsigned char)tu_uniform(0, 256);
    uint64_t base = sj_checksum64(buf, 257);
    for (int i = 0; i < 257 * 8; i += 7) {
        buf[i / 8] ^= (unsigned char)(1u << (i % 8));
        assert_true(sj_checksum64(buf, 257) != base);
        buf[i / 8] ^= (unsigned char)(1u << (i % 8));
    }
    assert_true(sj_checksum64(buf, 256) != base);
}

static void test_write_into_unwritable_place(void **state)
{
    fixture *f = *state;
    char path[4200];
    /* A regular file where a directory must go: fails for root too. */
    snprintf(path, sizeof path, "%s/sub/entry", f->path);
    assert_int_equal(sj_cache_entry_write(path, f->key, 0, f->payload, f->size), SSMJIT_ERR_IO);
    assert_non_null(strstr(ssmjit_last_error(), "directory"));
}

/* Moves the entry to <dir>/elsewhere and puts a symlink to it in its place. */
static void replace_with_symlink(fixture *f, char *target, size_t cap)
{
    snprintf(target, cap, "%s/elsewhere", f->dir);
    assert_int_equal(rename(f->path, target), 0);
    assert_int_equal(symlink(target, f->path), 0);
}

static void test_symlinked_entry_refused(void **state)
{
    fixture *f = *state;
    char target[4200];
    replace_with_symlink(f, target, sizeof target);
    void *got = NULL;
    size_t size;
    /* the file it points to is a good entry, yet it is not loaded */
    assert_int_equal(sj_cache_entry_check(target, NULL), SSMJIT_OK);
    assert_int_equal(sj_cache_entry_read(f->path, f->key, 0, 1, &got, &size), SSMJIT_ERR_IO);
    assert_null(got);
    assert_non_null(strstr(ssmjit_last_error(), "symbolic link"));
    ssmjit_cache_stats s;
    assert_int_equal(ssmjit_cache_verify(f->dir, 0, &s), SSMJIT_OK);
    assert_int_equal(s.entries, 0);
    assert_int_equal(s.bad_entries, 1);
}

static void test_write_replaces_symlink_not_its_target(void **state)
{
    fixture *f = *state;
    char target[4200];
    replace_with_symlink(f, target, sizeof target);
    f->payload[0] ^= 0xff;
    assert_int_equal(sj_cache_entry_write(f->path, f->key, 0, f->payload, f->size), SSMJIT_OK);
    struct stat st;
    assert_int_equal(lstat(f->path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    /* the old target still holds the old payload */
    void *got;
    size_t size;
    assert_int_equal(sj_cache_entry_read(target, f->key, 0, 0, &got, &size), SSMJIT_OK);
    assert_int_equal(((unsigned char *)got)[0], f->payload[0] ^ 0xff);
    free(got);
}

static void test_fifo_entry_refused_without_blocking(void **state)
{
    fixture *f = *state;
    assert_int_equal(unlink(f->path), 0);
    assert_int_equal(mkfifo(f->path, 0600), 0);
    void *got = NULL;
    size_t size;
    /* before O_NONBLOCK this open waited for a writer forever */
    assert_int_equal(sj_cache_entry_read(f->path, f->key, 0, 0, &got, &size), SSMJIT_ERR_IO);
    assert_non_null(strstr(ssmjit_last_error(), "not a regular file"));
}

/* A symlink planted at every temp name this process can use next: the
 * write must fail rather than create or write the file it points to. */
static void test_symlinked_temp_file_not_followed(void **state)
{
    fixture *f = *state;
    char victim[4200], link[4400];
    snprintf(victim, sizeof victim, "%s/victim", f->dir);
    const char *name = strrchr(f->path, '/') + 1;
    size_t dir_len = (size_t)(name - f->path);
    for (int n = 0; n < 1024; n++) {
        snprintf(link, sizeof link, "%.*s.tmp-%ld-%d-%s", (int)dir_len, f->path, (long)getpid(), n, name);
        assert_int_equal(symlink(victim, link), 0);
    }
    assert_int_equal(sj_cache_entry_write(f->path, f->key, 0, f->payload, f->size), SSMJIT_ERR_IO);
    assert_non_null(strstr(ssmjit_last_error(), "File exists"));
    struct stat st;
    assert_int_not_equal(lstat(victim, &st), 0);
    /* the entry written by setup is still the good one */
    assert_int_equal(sj_cache_entry_check(f->path, NULL), SSMJIT_OK);
}

static void test_use_recorded_only_on_good_hits(void **state)
{
    fixture *f = *state;
    void *got = NULL;
    size_t size;
    cu_age(f->path, 86400);
    double old = cu_mtime(f->path);
    assert_int_equal(sj_cache_entry_read(f->path, f->key, 0, 0, &got, &size), SSMJIT_OK);
    free(got);
    assert_true(cu_mtime(f->path) == old); /* not asked to */
    f->key[0] ^= 1;
    got = NULL;
    assert_int_equal(sj_cache_entry_read(f->path, f->key, 0, 1, &got, &size), SSMJIT_ERR_IO);
    assert_true(cu_mtime(f->path) == old); /* a miss is no use */
    f->key[0] ^= 1;
    assert_int_equal(sj_cache_entry_read(f->path, f->key, 0, 1, &got, &size), SSMJIT_OK);
    free(got);
    assert_true(cu_mtime(f->path) > old + 86000);
}

int main(void)
{
    tu_seed();
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_round_trip_and_layout), T(test_truncated),     T(test_header_truncated),
        T(test_bit_flipped_payload),   T(test_wrong_magic),   T(test_zero_length),
        T(test_wrong_version),         T(test_wrong_key),     T(test_wrong_kind),
        T(test_rewrite_replaces),      T(test_write_into_unwritable_place),
        T(test_symlinked_entry_refused), T(test_write_replaces_symlink_not_its_target),
        T(test_fifo_entry_refused_without_blocking), T(test_symlinked_temp_file_not_followed),
        T(test_use_recorded_only_on_good_hits),
        cmocka_unit_test(test_checksum_sensitivity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
