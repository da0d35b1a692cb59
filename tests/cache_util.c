#include "cache_util.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cache.h"
#include "sha256.h"

void cu_key(unsigned i, uint8_t key[32])
{
    char text[32];
    int n = snprintf(text, sizeof text, "synthetic entry %u", i);
    sj_sha256 h;
    sj_sha256_init(&h);
    sj_sha256_update(&h, text, (size_t)n);
    sj_sha256_final(&h, key);
}

static void fill(const uint8_t key[32], unsigned char *buf, size_t size)
{
    uint64_t x;
    memcpy(&x, key, 8);
    for (size_t i = 0; i < size; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (unsigned char)(x >> 56);
    }
}

void cu_path_named(const char *dir, const uint8_t key[32], const char *label, const char *target, char *path,
                   size_t cap)
{
    sj_cache_entry_id id = {.label = label, .target = target, .nvrtc_major = 13, .nvrtc_minor = 0};
    memcpy(id.key, key, 32);
    assert_int_equal(sj_cache_entry_path(dir, &id, path, cap), 0);
}

void cu_path(const char *dir, const uint8_t key[32], char *path, size_t cap)
{
    cu_path_named(dir, key, "unit", "sm_90", path, cap);
}

ssmjit_status cu_store_named(const char *dir, uint64_t max_bytes, unsigned i, size_t size, const char *label,
                             const char *target)
{
    uint8_t key[32];
    char path[4200];
    unsigned char *payload = malloc(size ? size : 1);
    assert_non_null(payload);
    cu_key(i, key);
    fill(key, payload, size);
    cu_path_named(dir, key, label, target, path, sizeof path);
    ssmjit_status st = sj_cache_store(dir, max_bytes, path, key, 0, payload, size);
    free(payload);
    return st;
}

void cu_write_named(const char *dir, unsigned i, size_t size, const char *label, const char *target, char *path,
                    size_t cap)
{
    uint8_t key[32];
    unsigned char payload[4096];
    assert_true(size <= sizeof payload);
    cu_key(i, key);
    fill(key, payload, size);
    cu_path_named(dir, key, label, target, path, cap);
    assert_int_equal(sj_cache_entry_write(path, key, 0, payload, size), SSMJIT_OK);
}

ssmjit_status cu_store(const char *dir, uint64_t max_bytes, unsigned i, size_t size)
{
    return cu_store_named(dir, max_bytes, i, size, "unit", "sm_90");
}

int cu_entry_good(const char *path, const char *name, size_t *size)
{
    uint8_t key[32];
    for (int i = 0; i < 32; i++) {
        unsigned b;
        assert_int_equal(sscanf(name + 2 * i, "%2x", &b), 1);
        key[i] = (uint8_t)b;
    }
    void *got;
    if (sj_cache_entry_read(path, key, 0, 0, &got, size) != SSMJIT_OK)
        return 0;
    unsigned char *want = malloc(*size ? *size : 1);
    assert_non_null(want);
    fill(key, want, *size);
    assert_memory_equal(got, want, *size);
    free(want);
    free(got);
    return 1;
}

typedef struct {
    cu_census c;
    size_t refused;
} census_arg;

static void census_visit(const char *path, const char *name, const char *prefix, void *p)
{
    census_arg *a = p;
    size_t size;
    if (sj_cache_is_temp_name(name)) {
        a->c.temps++;
    } else if (prefix && sj_cache_is_entry_name(name)) {
        if (cu_entry_good(path, name, &size)) {
            a->c.entries++;
            a->c.bytes += size + SJ_ENTRY_HEADER_SIZE;
        } else {
            a->refused++;
            print_error("refused entry %s: %s\n", path, ssmjit_last_error());
        }
    }
}

cu_census cu_check_all(const char *dir)
{
    census_arg a = {{0, 0, 0}, 0};
    assert_int_equal(sj_cache_walk(dir, census_visit, &a, 0), 0);
    assert_int_equal(a.refused, 0);
    ssmjit_cache_stats s;
    assert_int_equal(ssmjit_cache_verify(dir, 0, &s), SSMJIT_OK);
    assert_int_equal(s.entries, a.c.entries);
    assert_int_equal(s.bad_entries, 0);
    assert_int_equal(s.temp_files, a.c.temps);
    assert_int_equal(s.bytes, a.c.bytes);
    return a.c;
}

void cu_age(const char *path, double age)
{
    struct timespec now, t[2];
    clock_gettime(CLOCK_REALTIME, &now);
    t[0] = t[1] = (struct timespec){now.tv_sec - (time_t)age, now.tv_nsec};
    assert_int_equal(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW), 0);
}

double cu_mtime(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    return (double)st.st_mtim.tv_sec + 1e-9 * (double)st.st_mtim.tv_nsec;
}
