/* The cache with NVRTC behind it (no GPU): key inputs, hits and misses,
 * damaged entries replaced, read-only / unwritable / missing directories
 * and the off mode.  Skipped when NVRTC is not installed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arch.h"
#include "cache.h"
#include "compile.h"
#include "image.h"
#include "test_util.h"

static int have_nvrtc(void)
{
    int major, minor;
    if (ssmjit_nvrtc_version(&major, &minor, NULL) == SSMJIT_OK)
        return 1;
    printf("# NVRTC not found: %s\n", ssmjit_last_error());
    return 0;
}

#define NEED_NVRTC()        \
    do {                    \
        if (!have_nvrtc())  \
            skip();         \
    } while (0)

static const sj_embedded_module *elementwise(void) { return &sj_modules[SJ_MODULE_ELEMENTWISE]; }

static sj_toolchain toolchain(void)
{
    sj_toolchain tc;
    assert_int_equal(sj_toolchain_get(NULL, 0, 1, &tc), SSMJIT_OK);
    return tc;
}

/* A define unique to this process and call, so that the in-memory image
 * table of earlier calls never answers for a test. */
static const char *fresh_define(void)
{
    static char buf[64];
    static unsigned calls;
    snprintf(buf, sizeof buf, "SSMJIT_TEST_UNIQUE=%ld_%u_%u", (long)getpid(), calls++,
             (unsigned)tu_uniform(0, 4e9));
    return buf;
}

static void test_key_changes_with_each_input(void **state)
{
    (void)state;
    NEED_NVRTC();
    sj_toolchain tc = toolchain();
    sj_embedded_module m = *elementwise();
    const char *defs[] = {"A=1", "B=2"};
    sj_compile_spec spec = {.arch = 80, .ptx = 0, .fast_math = 1, .lineinfo = 0, .defines = defs, .num_defines = 1};
    uint8_t base[32], k[32];
    sj_compile_key(&m, &spec, &tc, base);
    sj_compile_key(&m, &spec, &tc, k);
    assert_memory_equal(base, k, 32); /* deterministic */

#define CHANGED(stmt, undo)                            \
    do {                                               \
        stmt;                                          \
        sj_compile_key(&m, &spec, &tc, k);             \
        assert_memory_not_equal(base, k, 32);          \
        undo;                                          \
        sj_compile_key(&m, &spec, &tc, k);             \
        assert_memory_equal(base, k, 32);              \
    } while (0)
    CHANGED(spec.arch = 86, spec.arch = 80);
    CHANGED(spec.ptx = 1, spec.ptx = 0);
    CHANGED(spec.fast_math = 0, spec.fast_math = 1);
    CHANGED(spec.lineinfo = 1, spec.lineinfo = 0);
    CHANGED(spec.num_defines = 2, spec.num_defines = 1);
    CHANGED(defs[0] = "A=2", defs[0] = "A=1");
    CHANGED(tc.minor++, tc.minor--);
    CHANGED(tc.major++, tc.major--);
    CHANGED(tc.build++, tc.build--);
    CHANGED(tc.probe_hash[5] ^= 1, tc.probe_hash[5] ^= 1);

    CHANGED(m.digest[7] ^= 1, m.digest[7] ^= 1);

    /* The key sees the module's text through the digest the build stores:
     * that is what sj_module_digest computes at run time, and one byte of
     * the source or of an included header changes it. */
    for (int i = 0; i < SJ_MODULE_COUNT; i++) {
        uint8_t d[32];
        sj_module_digest(&sj_modules[i], d);
        assert_memory_equal(d, sj_modules[i].digest, 32);
    }
    sj_embedded_file src = *m.source, hdr = *m.headers[0];
    unsigned char *copy = malloc(src.size + 1), *hcopy = malloc(hdr.size + 1);
    memcpy(copy, src.data, src.size + 1);
    memcpy(hcopy, hdr.data, hdr.size + 1);
    const sj_embedded_file *headers[] = {&hdr};
    src.data = copy;
    hdr.data = hcopy;
    m.source = &src;
    m.headers = headers;
    m.num_headers = 1;
    uint8_t text[32], d[32];
    sj_module_digest(&m, text);
#define TEXT_CHANGED(byte)                              \
    do {                                                \
        byte ^= 1;                                      \
        sj_module_digest(&m, d);                        \
        assert_memory_not_equal(text, d, 32);           \
        byte ^= 1;                                      \
        sj_module_digest(&m, d);                        \
        assert_memory_equal(text, d, 32);               \
    } while (0)
    size_t at = (size_t)tu_uniform(0, (double)src.size);
    TEXT_CHANGED(copy[at]);
    at = (size_t)tu_uniform(0, (double)hdr.size);
    TEXT_CHANGED(hcopy[at]);
    free(copy);
    free(hcopy);
    m = *elementwise();

    uint8_t v[32];
    sj_compile_key_versions(&m, &spec, &tc, SJ_CACHE_FORMAT_VERSION, ssmjit_version_string(), v);
    assert_memory_equal(base, v, 32);
    sj_compile_key_versions(&m, &spec, &tc, SJ_CACHE_FORMAT_VERSION + 1, ssmjit_version_string(), v);
    assert_memory_not_equal(base, v, 32);
    sj_compile_key_versions(&m, &spec, &tc, SJ_CACHE_FORMAT_VERSION, "0.1.1", v);
    assert_memory_not_equal(base, v, 32);
}

static void test_defines_normalised(void **state)
{
    (void)state;
    const char *a[] = {"B=2", "A=1", "B=2"}, *b[] = {"A=1", "B=2"};
    char **na, **nb;
    size_t n_a, n_b;
    assert_int_equal(sj_defines_normalize(a, 3, &na, &n_a), SSMJIT_OK);
    assert_int_equal(sj_defines_normalize(b, 2, &nb, &n_b), SSMJIT_OK);
    assert_int_equal(n_a, 2);
    assert_int_equal(n_b, 2);
    assert_string_equal(na[0], nb[0]);
    assert_string_equal(na[1], nb[1]);
    free(na);
    free(nb);
}

/* Path of module's sm_80 fast-math entry under dir. */
static void entry_path_for(const char *dir, const char *define, char *path, size_t cap)
{
    sj_toolchain tc = toolchain();
    const char *defs[] = {define};
    sj_compile_spec spec = {.arch = 80, .fast_math = 1, .defines = defs, .num_defines = define ? 1 : 0};
    uint8_t key[32];
    sj_compile_key(elementwise(), &spec, &tc, key);
    assert_int_equal(sj_cache_entry_path(dir, key, "sm_80", tc.major, tc.minor, 0, path, cap), 0);
}

static int prewarm(const char *dir, const char *define, int *was_cached)
{
    ssmjit_prewarm_options o;
    ssmjit_prewarm_options_init(&o);
    o.arch = "sm_80";
    o.cache_dir = dir;
    o.defines = &define;
    o.num_defines = 1;
    return ssmjit_prewarm_module(&o, SJ_MODULE_ELEMENTWISE, was_cached);
}

static void damage(const char *path, int how)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    unsigned char b;
    switch (how) {
    case 0: assert_int_equal(ftruncate(fd, 100), 0); break;             /* truncated */
    case 1:                                                              /* bit flip */
        assert_int_equal(pread(fd, &b, 1, 200), 1);
        b ^= 4;
        assert_int_equal(pwrite(fd, &b, 1, 200), 1);
        break;
    case 2: assert_int_equal(pwrite(fd, "XXXX", 4, 0), 4); break;         /* magic */
    case 3: assert_int_equal(ftruncate(fd, 0), 0); break;                /* empty */
    case 4: assert_int_equal(pwrite(fd, "\x07", 1, 8), 1); break;         /* version */
    }
    close(fd);
}

static void test_hit_miss_and_damage_replaced(void **state)
{
    (void)state;
    NEED_NVRTC();
    char *dir = tu_mkdtemp(), path[4200];
    const char *def = fresh_define();
    int cached = -1;
    assert_int_equal(prewarm(dir, def, &cached), SSMJIT_OK);
    assert_int_equal(cached, 0);
    assert_int_equal(prewarm(dir, def, &cached), SSMJIT_OK);
    assert_int_equal(cached, 1);
    entry_path_for(dir, def, path, sizeof path);
    assert_int_equal(sj_cache_entry_check(path, NULL), SSMJIT_OK);
    for (int how = 0; how < 5; how++) {
        damage(path, how);
        assert_int_not_equal(sj_cache_entry_check(path, NULL), SSMJIT_OK);
        ssmjit_cache_stats s;
        assert_int_equal(ssmjit_cache_verify(dir, 0, &s), SSMJIT_OK);
        assert_int_equal(s.bad_entries, 1);
        assert_int_equal(prewarm(dir, def, &cached), SSMJIT_OK);
        assert_int_equal(cached, 0); /* rejected, recompiled */
        assert_int_equal(sj_cache_entry_check(path, NULL), SSMJIT_OK);
        assert_int_equal(ssmjit_cache_verify(dir, 0, &s), SSMJIT_OK);
        assert_int_equal(s.bad_entries, 0);
        assert_int_equal(s.entries, 1);
    }
    tu_rmtree(dir);
    free(dir);
}

static sj_compile_spec spec_with(const char **define)
{
    *define = fresh_define();
    return (sj_compile_spec){.arch = 80, .fast_math = 1, .defines = define, .num_defines = 1};
}

static void plant(const char *dir, const sj_compile_spec *spec, const char *payload)
{
    sj_toolchain tc = toolchain();
    uint8_t key[32];
    char path[4200];
    sj_compile_key(elementwise(), spec, &tc, key);
    assert_int_equal(sj_cache_entry_path(dir, key, "sm_80", tc.major, tc.minor, 0, path, sizeof path), 0);
    assert_int_equal(sj_cache_entry_write(path, key, 0, payload, strlen(payload) + 1), SSMJIT_OK);
}

static size_t count_entries(const char *dir)
{
    ssmjit_cache_stats s;
    assert_int_equal(ssmjit_cache_verify(dir, 0, &s), SSMJIT_OK);
    return s.entries + s.bad_entries;
}

static void test_read_only_mode(void **state)
{
    (void)state;
    NEED_NVRTC();
    char *dir = tu_mkdtemp();
    const char *define;
    sj_compile_spec spec = spec_with(&define);
    sj_cache_config ro = {dir, SSMJIT_CACHE_RO, 1, 0};
    const void *image;
    size_t size;
    /* miss: compiled, nothing written */
    assert_int_equal(sj_image_get(elementwise(), &spec, &ro, &image, &size), SSMJIT_OK);
    assert_true(size > 1000);
    assert_int_equal(count_entries(dir), 0);
    /* hit: the planted entry is what comes back, so nothing was compiled */
    spec = spec_with(&define);
    plant(dir, &spec, "planted payload");
    assert_int_equal(sj_image_get(elementwise(), &spec, &ro, &image, &size), SSMJIT_OK);
    assert_string_equal((const char *)image, "planted payload");
    tu_rmtree(dir);
    free(dir);
}

static void test_off_mode(void **state)
{
    (void)state;
    NEED_NVRTC();
    char *dir = tu_mkdtemp();
    const char *define;
    sj_compile_spec spec = spec_with(&define);
    plant(dir, &spec, "planted payload");
    sj_cache_config off = {dir, SSMJIT_CACHE_OFF, 1, 0};
    const void *image;
    size_t size;
    assert_int_equal(sj_image_get(elementwise(), &spec, &off, &image, &size), SSMJIT_OK);
    assert_true(size > 1000); /* compiled: the planted entry was not read */
    assert_int_equal(count_entries(dir), 1);

    ssmjit_cache_mode mode;
    setenv("SSMJIT_CACHE", "off", 1);
    assert_int_equal(sj_cache_mode_resolve(SSMJIT_CACHE_RW, &mode), SSMJIT_OK);
    assert_int_equal(mode, SSMJIT_CACHE_OFF);
    setenv("SSMJIT_CACHE", "ro", 1);
    assert_int_equal(sj_cache_mode_resolve(SSMJIT_CACHE_DEFAULT, &mode), SSMJIT_OK);
    assert_int_equal(mode, SSMJIT_CACHE_RO);
    unsetenv("SSMJIT_CACHE");
    assert_int_equal(sj_cache_mode_resolve(SSMJIT_CACHE_DEFAULT, &mode), SSMJIT_OK);
    assert_int_equal(mode, SSMJIT_CACHE_RW);
    tu_rmtree(dir);
    free(dir);
}

static void test_missing_dir_created_private(void **state)
{
    (void)state;
    NEED_NVRTC();
    char *base = tu_mkdtemp(), dir[4200];
    snprintf(dir, sizeof dir, "%s/a/b/cache", base);
    const char *define;
    sj_compile_spec spec = spec_with(&define);
    sj_cache_config rw = {dir, SSMJIT_CACHE_RW, 1, 0};
    const void *image;
    size_t size;
    assert_int_equal(sj_image_get(elementwise(), &spec, &rw, &image, &size), SSMJIT_OK);
    assert_int_equal(count_entries(dir), 1);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    tu_rmtree(base);
    free(base);
}

/* Runs sj_image_get twice on an unwritable directory with stderr sent to
 * a file; returns how many warning lines were printed. */
static int warnings_for_unwritable(const char *dir)
{
    char *tmp = tu_mkdtemp(), log[4200];
    snprintf(log, sizeof log, "%s/stderr", tmp);
    fflush(stderr);
    int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    sj_cache_config rw = {dir, SSMJIT_CACHE_RW, 0, 0};
    for (int i = 0; i < 2; i++) {
        const char *define;
        sj_compile_spec spec = spec_with(&define);
        const void *image;
        size_t size;
        assert_int_equal(sj_image_get(elementwise(), &spec, &rw, &image, &size), SSMJIT_OK);
        assert_true(size > 1000);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "grep -c 'ssmjit: warning' '%s'", log);
    FILE *p = popen(cmd, "r");
    int n = -1;
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    tu_rmtree(tmp);
    free(tmp);
    return n;
}

static void test_unwritable_dir_degrades_to_memory(void **state)
{
    (void)state;
    NEED_NVRTC();
    char *base = tu_mkdtemp(), dir[4300], file[4200];
    /* A regular file in the path: unwritable even for root. */
    snprintf(file, sizeof file, "%s/not-a-dir", base);
    FILE *f = fopen(file, "w");
    fclose(f);
    snprintf(dir, sizeof dir, "%s/cache", file);
    assert_int_equal(warnings_for_unwritable(dir), 1);
    tu_rmtree(base);
    free(base);
}

static void test_directory_trust(void **state)
{
    (void)state;
    char *base = tu_mkdtemp(), dir[4200];
    snprintf(dir, sizeof dir, "%s/missing", base);
    assert_int_equal(sj_cache_dir_check(dir), SSMJIT_OK); /* will be made 0700 */
    assert_int_equal(sj_cache_dir_check(base), SSMJIT_OK);
    assert_int_equal(chmod(base, 0755), 0); /* readable by others is fine */
    assert_int_equal(sj_cache_dir_check(base), SSMJIT_OK);
    static const mode_t bad[] = {0777, 0770, 0707, 0720, 0702};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(chmod(base, bad[i]), 0);
        assert_int_equal(sj_cache_dir_check(base), SSMJIT_ERR_IO);
        assert_non_null(strstr(ssmjit_last_error(), "writable by"));
    }
    assert_int_equal(chmod(base, 0700), 0);
    if (geteuid() == 0) {
        assert_int_equal(chown(base, 65534, 65534), 0);
        assert_int_equal(sj_cache_dir_check(base), SSMJIT_ERR_IO);
        assert_non_null(strstr(ssmjit_last_error(), "belongs to uid 65534"));
        assert_int_equal(chown(base, 0, 0), 0);
    }
    struct stat root;
    if (stat("/", &root) == 0 && root.st_uid == 0 && !(root.st_mode & 022))
        assert_int_equal(sj_cache_dir_check("/"), SSMJIT_OK); /* root's is trusted */
    snprintf(dir, sizeof dir, "%s/file", base);
    FILE *f = fopen(dir, "w");
    fclose(f);
    assert_int_equal(sj_cache_dir_check(dir), SSMJIT_ERR_IO);
    assert_non_null(strstr(ssmjit_last_error(), "not a directory"));
    /* prewarm exists to fill the cache: it refuses an untrusted one */
    assert_int_equal(chmod(base, 0777), 0);
    ssmjit_prewarm_options o;
    ssmjit_prewarm_options_init(&o);
    o.arch = "sm_80";
    o.cache_dir = base;
    int cached;
    assert_int_equal(ssmjit_prewarm_module(&o, SJ_MODULE_ELEMENTWISE, &cached), SSMJIT_ERR_IO);
    assert_non_null(strstr(ssmjit_last_error(), "writable by"));
    tu_rmtree(base);
    free(base);
}

/* Child side of test_untrusted_dir_not_used, in a fresh process (the
 * warning comes once per process): in each untrusted directory a planted
 * entry is not loaded and nothing is written, in a trusted one it is
 * loaded; one warning in all.  Exit 0 when all of that holds. */
static int untrusted_child(const char *base)
{
    char log[4200], dir[4200];
    snprintf(log, sizeof log, "%s/stderr", base);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dup2(fd, 2) < 0)
        return 10;
    static const mode_t modes[] = {0777, 0770, 0707, 0700 /* owned by nobody */, 0755 /* trusted */};
    for (int i = 0; i < 5; i++) {
        if (i == 3 && geteuid() != 0)
            continue; /* only root can give a directory away */
        snprintf(dir, sizeof dir, "%s/case%d", base, i);
        const char *define;
        sj_compile_spec spec = spec_with(&define);
        plant(dir, &spec, "planted payload");
        if (chmod(dir, modes[i]) != 0 || (i == 3 && chown(dir, 65534, 65534) != 0))
            return 11;
        sj_cache_config rw = {dir, SSMJIT_CACHE_RW, 0, 0};
        const void *image;
        size_t size;
        if (sj_image_get(elementwise(), &spec, &rw, &image, &size) != SSMJIT_OK)
            return 12;
        int planted = !strcmp((const char *)image, "planted payload");
        if (planted != (i == 4))
            return 20 + i;
        spec = spec_with(&define); /* a miss: compiled, and written only where trusted */
        if (sj_image_get(elementwise(), &spec, &rw, &image, &size) != SSMJIT_OK || size < 1000)
            return 13;
        ssmjit_cache_stats s;
        if (ssmjit_cache_verify(dir, 0, &s) != SSMJIT_OK || s.entries != (i == 4 ? 2u : 1u))
            return 30 + i;
    }
    fflush(stderr);
    char cmd[8600];
    snprintf(cmd, sizeof cmd,
             "test $(grep -c 'ssmjit: warning' '%s') = 1 && "
             "grep -q 'case0.* is writable by its group (mode 0777)' '%s'",
             log, log);
    return system(cmd) == 0 ? 0 : 14;
}

static void test_untrusted_dir_not_used(void **state)
{
    (void)state;
    NEED_NVRTC();
    char *base = tu_mkdtemp();
    assert_int_equal(tu_run_self("--untrusted-child", base), 0);
    tu_rmtree(base);
    free(base);
}

/* Child side of test_toolchain_record: the toolchain from the record
 * alone, NVRTC never mapped (exit 0), or NVRTC opened (2), or failure (1). */
static int record_child(const char *dir)
{
    sj_toolchain tc;
    if (sj_toolchain_get(dir, 0, 0, &tc) != SSMJIT_OK || tc.num_archs == 0)
        return 1;
    return tu_nvrtc_mapped() ? 2 : 0;
}

static int run_record_child(const char *dir) { return tu_run_self("--record-child", dir); }

static void test_toolchain_record(void **state)
{
    (void)state;
    NEED_NVRTC();
    char *dir = tu_mkdtemp();
    assert_int_equal(run_record_child(dir), 2); /* no record: NVRTC opened */
    int cached;
    assert_int_equal(prewarm(dir, fresh_define(), &cached), SSMJIT_OK);
    assert_int_equal(run_record_child(dir), 0); /* record written by prewarm: no NVRTC */
    /* a record for another NVRTC search path is not trusted */
    setenv("LD_LIBRARY_PATH", "/nonexistent-lib-dir", 1);
    assert_int_equal(run_record_child(dir), 2);
    unsetenv("LD_LIBRARY_PATH");
    /* a damaged record is ignored, not trusted */
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "for f in '%s'/toolchain-*; do printf 'garbage' > \"$f\"; done", dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(run_record_child(dir), 2);
    tu_rmtree(dir);
    free(dir);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--record-child"))
        return record_child(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "--untrusted-child"))
        return untrusted_child(argv[2]);
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_changes_with_each_input),
        cmocka_unit_test(test_defines_normalised),
        cmocka_unit_test(test_hit_miss_and_damage_replaced),
        cmocka_unit_test(test_read_only_mode),
        cmocka_unit_test(test_off_mode),
        cmocka_unit_test(test_missing_dir_created_private),
        cmocka_unit_test(test_unwritable_dir_degrades_to_memory),
        cmocka_unit_test(test_toolchain_record),
        cmocka_unit_test(test_directory_trust),
        cmocka_unit_test(test_untrusted_dir_not_used),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
