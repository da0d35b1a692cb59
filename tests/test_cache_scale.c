/* ssmjit_cache_targets (what `ssmjit cache stats` prints): its counts per
 * target and unit against what is on disk, and a cache of 10,000 entries:
 * stats and verify count them all right, and one store under a cap of
 * about half evicts the least recently used half.  Synthetic entries: no
 * NVRTC needed.  Times are printed as "# ..." lines for the record; how
 * fast those stay is `ssmjit bench --cache`'s to say (bench/NOTES.md), not
 * a test's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "cache_util.h"
#include "test_util.h"

#define FILE_BYTES(payload) ((uint64_t)(payload) + SJ_ENTRY_HEADER_SIZE)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void write_file(const char *path, size_t bytes)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (size_t i = 0; i < bytes; i++)
        fputc('x', f);
    fclose(f);
}

static const ssmjit_cache_target_stats *find_target(const ssmjit_cache_target_stats *t, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].target, name))
            return &t[i];
    fail_msg("no target %s", name);
    return NULL;
}

/* Entries per target and unit, bytes, the order of the records, cap
 * smaller than the targets, and what is not an entry. */
static void test_targets_counts(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), path[4200], other[4300];
    ssmjit_cache_stats totals;
    ssmjit_cache_target_stats t[8];
    size_t count = 99;

    /* an empty directory, and one that does not exist */
    assert_int_equal(ssmjit_cache_targets(dir, &totals, t, 8, &count), SSMJIT_OK);
    assert_int_equal(count, 0);
    assert_int_equal(totals.entries, 0);
    snprintf(other, sizeof other, "%s/missing", dir);
    count = 99;
    assert_int_equal(ssmjit_cache_targets(other, NULL, NULL, 0, &count), SSMJIT_OK);
    assert_int_equal(count, 0);
    assert_false(exists(other));

    /* sm_90: 5 entries of 3 kernels; compute_90: 2 of 1; sm_100: 1 */
    static const struct {
        const char *label, *target;
        size_t payload;
    } e[] = {
        {"scan_fwd_ns16_bf16", "sm_90", 100}, {"scan_fwd_ns16_bf16", "sm_90", 200},
        {"norm_fwd", "sm_90", 300},           {"norm_fwd", "sm_90", 400},
        {"silu", "sm_90", 500},               {"norm_fwd", "compute_90", 600},
        {"norm_fwd", "compute_90", 700},      {"gate", "sm_100", 0},
    };
    for (unsigned i = 0; i < 8; i++)
        cu_write_named(dir, i, e[i].payload, e[i].label, e[i].target, path, sizeof path);
    /* entry 100 (sm_90, "x"); then what is not an entry: a temp file,
     * files outside the prefix directories, names ssmjit does not give, an
     * entry's name in another key's directory, a symlink to an entry, a
     * file shorter than a header */
    cu_write_named(dir, 100, 10, "x", "sm_90", path, sizeof path);
    const char *slash = strrchr(path, '/');
    const int leaf = (int)(slash - path);
    snprintf(other, sizeof other, "%.*s/.tmp-1-2-abc", leaf, path);
    write_file(other, 10);
    snprintf(other, sizeof other, "%s/toolchain-abc", dir);
    write_file(other, 10);
    snprintf(other, sizeof other, "%s%s", dir, slash); /* an entry's name at the top */
    write_file(other, 100);
    snprintf(other, sizeof other, "%.*s/%.64s-x-sm_9x-nvrtc13.0.cubin", leaf, path, slash + 1);
    write_file(other, 100);
    snprintf(other, sizeof other, "%.*s/%.64s-x!-sm_90-nvrtc13.0.cubin", leaf, path, slash + 1);
    write_file(other, 100);
    /* the key's name with its first digits changed, in this directory */
    snprintf(other, sizeof other, "%.*s/%c%.63s-x-sm_90-nvrtc13.0.cubin", leaf, path, slash[1] == 'f' ? '0' : 'f',
             slash + 2);
    write_file(other, 100);
    snprintf(other, sizeof other, "%.*s/%.64s-link-sm_90-nvrtc13.0.cubin", leaf, path, slash + 1);
    assert_int_equal(symlink(path, other), 0);
    snprintf(other, sizeof other, "%.*s/%.64s-short-sm_90-nvrtc13.0.cubin", leaf, path, slash + 1);
    write_file(other, SJ_ENTRY_HEADER_SIZE - 1);

    memset(t, 0xA5, sizeof t);
    count = 0;
    assert_int_equal(ssmjit_cache_targets(dir, &totals, t, 8, &count), SSMJIT_OK);
    assert_int_equal(count, 3);
    /* in the order of the targets' names */
    assert_string_equal(t[0].target, "compute_90-nvrtc13.0");
    assert_string_equal(t[1].target, "sm_100-nvrtc13.0");
    assert_string_equal(t[2].target, "sm_90-nvrtc13.0");
    const ssmjit_cache_target_stats *sm90 = find_target(t, count, "sm_90-nvrtc13.0");
    assert_int_equal(sm90->entries, 6); /* the five, and entry 100 ("x") */
    assert_int_equal(sm90->units, 4);
    assert_int_equal(sm90->bytes, 6 * FILE_BYTES(0) + 100 + 200 + 300 + 400 + 500 + 10);
    assert_int_equal(t[0].entries, 2);
    assert_int_equal(t[0].units, 1);
    assert_int_equal(t[0].bytes, FILE_BYTES(600) + FILE_BYTES(700));
    assert_int_equal(t[1].entries, 1);
    assert_int_equal(t[1].units, 1);
    assert_int_equal(t[1].bytes, FILE_BYTES(0));
    assert_int_equal(totals.entries, 9);
    assert_int_equal(totals.bytes, t[0].bytes + t[1].bytes + t[2].bytes);
    assert_int_equal(totals.temp_files, 1);
    /* bad by name, place, type or size: sm_9x, "x!", misplaced, link, short */
    assert_int_equal(totals.bad_entries, 5);
    assert_int_equal(totals.removed, 0);

    /* verify agrees on the good entries (it reads them) */
    ssmjit_cache_stats v;
    assert_int_equal(ssmjit_cache_verify(dir, 0, &v), SSMJIT_OK);
    assert_int_equal(v.bytes, totals.bytes);
    assert_int_equal(v.temp_files, totals.temp_files);
    assert_true(v.max_bytes == totals.max_bytes);
    assert_int_equal(v.entries, totals.entries);
    assert_int_equal(v.bad_entries, totals.bad_entries);

    /* a damaged payload is not seen: names and sizes only */
    FILE *f = fopen(path, "r+");
    assert_non_null(f);
    fseek(f, SJ_ENTRY_HEADER_SIZE, SEEK_SET);
    fputc('!', f);
    fclose(f);
    ssmjit_cache_stats again;
    assert_int_equal(ssmjit_cache_targets(dir, &again, NULL, 0, NULL), SSMJIT_OK);
    assert_int_equal(again.entries, totals.entries);

    /* less room than targets: the first ones by name, the full count */
    ssmjit_cache_target_stats one[2];
    memset(one, 0xA5, sizeof one);
    count = 0;
    assert_int_equal(ssmjit_cache_targets(dir, NULL, one, 1, &count), SSMJIT_OK);
    assert_int_equal(count, 3);
    assert_string_equal(one[0].target, "compute_90-nvrtc13.0");
    unsigned char poison[sizeof one[1]];
    memset(poison, 0xA5, sizeof poison);
    assert_memory_equal(&one[1], poison, sizeof poison);

    /* bad arguments and a bad cap: nothing written */
    count = 77;
    assert_int_equal(ssmjit_cache_targets(dir, NULL, NULL, 1, &count), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "out is NULL"));
    assert_int_equal(count, 77);
    setenv("SSMJIT_CACHE_MAX_BYTES", "lots", 1);
    memset(&again, 0xA5, sizeof again);
    assert_int_equal(ssmjit_cache_targets(dir, &again, t, 8, &count), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "SSMJIT_CACHE_MAX_BYTES"));
    assert_int_equal(count, 77);
    assert_int_equal(again.entries, (size_t)0xA5A5A5A5A5A5A5A5ull);
    setenv("SSMJIT_CACHE_MAX_BYTES", "3M", 1);
    assert_int_equal(ssmjit_cache_targets(dir, &again, NULL, 0, NULL), SSMJIT_OK);
    assert_true(again.max_bytes == 3ull << 20);
    unsetenv("SSMJIT_CACHE_MAX_BYTES");
    tu_rmtree(dir);
    free(dir);
}

#define N 10000
#define PAYLOAD 200
#define TARGETS 4
#define PER_LABEL 2 /* entries of one label in one target */

static const char *const scale_targets[TARGETS] = {"compute_90", "sm_100", "sm_80", "sm_90"};

/* Entry i: target i % 4, label "k<(i / 4) / 2>": per target 2,500 entries
 * of 1,250 kernels. */
static void scale_names(unsigned i, char *label, size_t cap, const char **target)
{
    snprintf(label, cap, "k%u", i / TARGETS / PER_LABEL);
    *target = scale_targets[i % TARGETS];
}

/* Best of three runs of ssmjit_cache_targets, each printed. */
static double time_stats(const char *dir, ssmjit_cache_stats *totals, ssmjit_cache_target_stats *t, size_t *count)
{
    double best = 1e9;
    for (int run = 0; run < 3; run++) {
        double t0 = now();
        assert_int_equal(ssmjit_cache_targets(dir, totals, t, TARGETS, count), SSMJIT_OK);
        double dt = now() - t0;
        printf("# stats of %zu entries, run %d: %.3f s\n", totals->entries, run + 1, dt);
        best = dt < best ? dt : best;
    }
    return best;
}

static void test_ten_thousand_entries(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), label[32], (*paths)[4200] = malloc(N * sizeof *paths);
    const char *target;
    assert_non_null(paths);
    double t0 = now();
    for (unsigned i = 0; i < N; i++) {
        scale_names(i, label, sizeof label, &target);
        cu_write_named(dir, i, PAYLOAD, label, target, paths[i], sizeof paths[i]);
    }
    printf("# wrote %d entries in %.2f s\n", N, now() - t0);

    /* stats: names and sizes only, fast */
    ssmjit_cache_stats totals;
    ssmjit_cache_target_stats t[TARGETS];
    size_t count = 0;
    double stats_s = time_stats(dir, &totals, t, &count);
    assert_int_equal(count, TARGETS);
    assert_int_equal(totals.entries, N);
    assert_int_equal(totals.bad_entries, 0);
    assert_int_equal(totals.bytes, N * FILE_BYTES(PAYLOAD));
    for (size_t k = 0; k < TARGETS; k++) {
        char name[32];
        snprintf(name, sizeof name, "%s-nvrtc13.0", scale_targets[k]);
        assert_string_equal(t[k].target, name);
        assert_int_equal(t[k].entries, N / TARGETS);
        assert_int_equal(t[k].units, N / TARGETS / PER_LABEL);
        assert_int_equal(t[k].bytes, N / TARGETS * FILE_BYTES(PAYLOAD));
    }
    printf("# stats of %d entries, best of three: %.3f s\n", N, stats_s);

    /* verify: reads and checks every entry */
    ssmjit_cache_stats v;
    t0 = now();
    assert_int_equal(ssmjit_cache_verify(dir, 0, &v), SSMJIT_OK);
    double verify_s = now() - t0;
    printf("# verify of %zu entries: %.3f s\n", v.entries, verify_s);
    assert_int_equal(v.entries, N);
    assert_int_equal(v.bad_entries, 0);
    assert_int_equal(v.bytes, totals.bytes);

    /* eviction: entry i last used N - i seconds ago; one store under a cap
     * of half the entries removes the oldest half (and one more, for room) */
    for (unsigned i = 0; i < N; i++)
        cu_age(paths[i], (double)(N - i) + 10);
    const uint64_t cap = (N / 2) * FILE_BYTES(PAYLOAD);
    t0 = now();
    assert_int_equal(cu_store_named(dir, cap, N, PAYLOAD, "new", "sm_90"), SSMJIT_OK);
    double evict_s = now() - t0;
    printf("# store evicting %d of %d entries: %.3f s\n", N / 2 + 1, N + 1, evict_s);
    size_t kept = 0;
    for (unsigned i = 0; i < N; i++) {
        int want = i > N / 2;
        if (exists(paths[i]) != want)
            fail_msg("entry %u (used %u s ago) %s", i, N - i + 10, want ? "evicted" : "kept");
        kept += (size_t)want;
    }
    assert_int_equal(ssmjit_cache_targets(dir, &totals, NULL, 0, &count), SSMJIT_OK);
    assert_int_equal(totals.entries, kept + 1);
    assert_true(totals.bytes <= cap);
    assert_true(totals.bytes + FILE_BYTES(PAYLOAD) > cap); /* no more than needed */
    assert_int_equal(cu_check_all(dir).entries, kept + 1);
    free(paths);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    unsetenv("SSMJIT_CACHE_MAX_BYTES");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_targets_counts),
        cmocka_unit_test(test_ten_thousand_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
