/* The cache with NVRTC behind it (no GPU): key inputs, hits and misses,
 * damaged entries replaced, read-only / unwritable / missing directories,
 * the off mode, the read-only layers, and prewarm sharing the lazy path's
 * entries and honouring the mode.  Skipped when NVRTC is not installed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
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

/* The unit the tests compile: a small one. */
static size_t unit(void)
{
    int u = sj_unit_find(SJ_MODULE_ELEMENTWISE, "act_fwd_silu_f32");
    assert_true(u >= 0);
    return (size_t)u;
}

static sj_toolchain toolchain(void)
{
    sj_toolchain tc;
    assert_int_equal(sj_toolchain_get(NULL, 1, &tc), SSMJIT_OK);
    return tc;
}

/* A cache configuration of dir alone (no environment, no layers). */
static sj_cache_config config(const char *dir, ssmjit_cache_mode mode, int quiet)
{
    sj_cache_config c;
    memset(&c, 0, sizeof c);
    c.mode = mode;
    c.quiet = quiet;
    if (dir) {
        assert_true(strlen(dir) < sizeof c.dir);
        memcpy(c.dir, dir, strlen(dir) + 1);
    }
    return c;
}

/* The unit's image for spec through the pipeline a context uses. */
static ssmjit_status get(const sj_compile_spec *spec, const sj_cache_config *c, const void **image, size_t *size,
                         sj_image_origin *origin)
{
    sj_image_job job = {unit(), spec, c, NULL, 1};
    return sj_image_get(&job, image, size, origin);
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
    const sj_embedded_module *m = &sj_modules[SJ_MODULE_ELEMENTWISE];
    uint8_t digest[32];
    memcpy(digest, m->digest, 32);
    char text[512];
    assert_true(sj_unit_text(unit(), text, sizeof text) > 0);
    const char *defs[] = {"A=1", "B=2"};
    sj_compile_spec spec = {.arch = 80, .ptx = 0, .fast_math = 1, .lineinfo = 0, .defines = defs, .num_defines = 1};
    uint8_t base[32], k[32];
    sj_compile_key(unit(), &spec, &tc, base);
    sj_compile_key_of(digest, text, &spec, &tc, SJ_CACHE_FORMAT_VERSION, ssmjit_version_string(), k);
    assert_memory_equal(base, k, 32); /* the parts are what the key is made of */

#define KEY() sj_compile_key_of(digest, text, &spec, &tc, SJ_CACHE_FORMAT_VERSION, ssmjit_version_string(), k)
#define CHANGED(stmt, undo)                            \
    do {                                               \
        stmt;                                          \
        KEY();                                         \
        assert_memory_not_equal(base, k, 32);          \
        undo;                                          \
        KEY();                                         \
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
    CHANGED(digest[7] ^= 1, digest[7] ^= 1);
    /* the unit's program text: one byte of it, anywhere */
    size_t at = (size_t)tu_uniform(0, (double)strlen(text));
    CHANGED(text[at] ^= 1, text[at] ^= 1);

    /* Every unit has a key of its own, also two of one module. */
    uint8_t other[32];
    sj_compile_key(unit() + 1, &spec, &tc, other);
    assert_memory_not_equal(base, other, 32);

    /* The key sees the module's text through the digest the build stores:
     * that is what sj_module_digest computes at run time, and one byte of
     * the source or of an included header changes it. */
    for (int i = 0; i < SJ_MODULE_COUNT; i++) {
        uint8_t d[32];
        sj_module_digest(&sj_modules[i], d);
        assert_memory_equal(d, sj_modules[i].digest, 32);
    }
    sj_embedded_module mc = *m;
    sj_embedded_file src = *mc.source, hdr = *mc.headers[0];
    unsigned char *copy = malloc(src.size + 1), *hcopy = malloc(hdr.size + 1);
    memcpy(copy, src.data, src.size + 1);
    memcpy(hcopy, hdr.data, hdr.size + 1);
    const sj_embedded_file *headers[] = {&hdr};
    src.data = copy;
    hdr.data = hcopy;
    mc.source = &src;
    mc.headers = headers;
    mc.num_headers = 1;
    uint8_t whole[32], d[32];
    sj_module_digest(&mc, whole);
#define TEXT_CHANGED(byte)                              \
    do {                                                \
        byte ^= 1;                                      \
        sj_module_digest(&mc, d);                       \
        assert_memory_not_equal(whole, d, 32);          \
        byte ^= 1;                                      \
        sj_module_digest(&mc, d);                       \
        assert_memory_equal(whole, d, 32);              \
    } while (0)
    at = (size_t)tu_uniform(0, (double)src.size);
    TEXT_CHANGED(copy[at]);
    at = (size_t)tu_uniform(0, (double)hdr.size);
    TEXT_CHANGED(hcopy[at]);
    free(copy);
    free(hcopy);

    sj_compile_key_of(digest, text, &spec, &tc, SJ_CACHE_FORMAT_VERSION + 1, ssmjit_version_string(), k);
    assert_memory_not_equal(base, k, 32);
    sj_compile_key_of(digest, text, &spec, &tc, SJ_CACHE_FORMAT_VERSION, "0.1.1", k);
    assert_memory_not_equal(base, k, 32);
}

/* The unit's program selects its kernel and includes its module. */
static void test_unit_text(void **state)
{
    (void)state;
    char text[512];
    assert_true(sj_unit_text(unit(), text, sizeof text) > 0);
    assert_non_null(strstr(text, "#define SJ_UNIT_act_fwd_silu_f32 ~, 1\n"));
    assert_non_null(strstr(text, "#include \"elementwise.cu\""));
    assert_int_equal(sj_unit_text(unit(), text, 10), -1);
    for (size_t u = 0; u < SJ_UNIT_COUNT; u++)
        assert_int_equal(sj_unit_find(sj_units[u].module, sj_units[u].kernel), (int)u);
    assert_int_equal(sj_unit_find(SJ_MODULE_ELEMENTWISE, "scan_fwd_ns16_bf16"), -1);
    assert_int_equal(sj_unit_find(SJ_MODULE_SCAN_FWD, "no_such_kernel"), -1);
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

/* A spec set gives one spec per base and set of defines, whatever their
 * order and repeats, a new one for another base or other defines, and
 * refuses defines that sj_defines_normalize refuses. */
static void test_spec_set(void **state)
{
    (void)state;
    const char *base_defines[] = {"Z=9"};
    const sj_compile_spec base = {.arch = 90, .fast_math = 1, .defines = base_defines, .num_defines = 1};
    sj_compile_spec other = base;
    other.fast_math = 0;
    sj_compile_spec other_arch = base;
    other_arch.arch = 80;
    const char *ab[] = {"B=2", "A=1"}, *ba[] = {"A=1", "B=2", "A=1"}, *ac[] = {"A=1", "C=3"}, *bad[] = {"A 1"};
    sj_spec_set set;
    sj_spec_set_init(&set);
    const sj_compile_spec *s1, *s2, *s3, *s4, *s5, *s6 = NULL;
    assert_int_equal(sj_spec_set_get(&set, &base, ab, 2, &s1), SSMJIT_OK);
    assert_int_equal(sj_spec_set_get(&set, &base, ba, 3, &s2), SSMJIT_OK);
    assert_int_equal(sj_spec_set_get(&set, &base, ac, 2, &s3), SSMJIT_OK);
    assert_int_equal(sj_spec_set_get(&set, &other, ab, 2, &s4), SSMJIT_OK);
    assert_int_equal(sj_spec_set_get(&set, &other_arch, ab, 2, &s5), SSMJIT_OK);
    assert_ptr_equal(s1, s2);
    assert_ptr_not_equal(s1, s3);
    assert_ptr_not_equal(s1, s4);
    assert_ptr_not_equal(s1, s5);
    assert_int_equal(s1->arch, 90);
    assert_int_equal(s4->fast_math, 0);
    assert_int_equal(s5->arch, 80);
    assert_int_equal(s1->num_defines, 3);
    assert_string_equal(s1->defines[0], "A=1");
    assert_string_equal(s1->defines[1], "B=2");
    assert_string_equal(s1->defines[2], "Z=9");
    assert_int_equal(sj_spec_set_get(&set, &base, bad, 1, &s6), SSMJIT_ERR_INVALID_ARG);
    assert_null(s6);
    sj_spec_set_free(&set);
}

static sj_compile_spec spec_80(const char **define)
{
    return (sj_compile_spec){.arch = 80, .fast_math = 1, .defines = define, .num_defines = *define ? 1 : 0};
}

/* Path of the unit's sm_80 fast-math entry under dir. */
static void entry_path_for(const char *dir, const char *define, char *path, size_t cap)
{
    sj_toolchain tc = toolchain();
    sj_compile_spec spec = spec_80(&define);
    sj_cache_entry_id id = {{0}, sj_units[unit()].kernel, "sm_80", tc.major, tc.minor, 0};
    sj_compile_key(unit(), &spec, &tc, id.key);
    assert_int_equal(sj_cache_entry_path(dir, &id, path, cap), 0);
}

static int prewarm(const char *dir, const char *define, int *was_cached)
{
    ssmjit_prewarm_options o;
    ssmjit_prewarm_options_init(&o);
    o.arch = "sm_80";
    o.fast_math = 1;
    o.cache_dir = dir;
    o.defines = &define;
    o.num_defines = 1;
    return ssmjit_prewarm_unit(&o, unit(), was_cached);
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
    return spec_80(define);
}

static void plant(const char *dir, const sj_compile_spec *spec, const char *payload)
{
    sj_toolchain tc = toolchain();
    char path[4200];
    sj_cache_entry_id id = {{0}, sj_units[unit()].kernel, "sm_80", tc.major, tc.minor, 0};
    sj_compile_key(unit(), spec, &tc, id.key);
    assert_int_equal(sj_cache_entry_path(dir, &id, path, sizeof path), 0);
    assert_int_equal(sj_cache_entry_write(path, id.key, 0, payload, strlen(payload) + 1), SSMJIT_OK);
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
    sj_cache_config ro = config(dir, SSMJIT_CACHE_RO, 1);
    const void *image;
    size_t size;
    /* miss: compiled, nothing written */
    assert_int_equal(get(&spec, &ro, &image, &size, NULL), SSMJIT_OK);
    assert_true(size > 1000);
    assert_int_equal(count_entries(dir), 0);
    /* hit: the planted entry is what comes back, so nothing was compiled */
    spec = spec_with(&define);
    plant(dir, &spec, "planted payload");
    assert_int_equal(get(&spec, &ro, &image, &size, NULL), SSMJIT_OK);
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
    sj_cache_config off = config(dir, SSMJIT_CACHE_OFF, 1);
    const void *image;
    size_t size;
    assert_int_equal(get(&spec, &off, &image, &size, NULL), SSMJIT_OK);
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
    sj_cache_config rw = config(dir, SSMJIT_CACHE_RW, 1);
    const void *image;
    size_t size;
    assert_int_equal(get(&spec, &rw, &image, &size, NULL), SSMJIT_OK);
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
    sj_cache_config rw = config(dir, SSMJIT_CACHE_RW, 0);
    for (int i = 0; i < 2; i++) {
        const char *define;
        sj_compile_spec spec = spec_with(&define);
        const void *image;
        size_t size;
        assert_int_equal(get(&spec, &rw, &image, &size, NULL), SSMJIT_OK);
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
    assert_int_equal(ssmjit_prewarm_unit(&o, unit(), &cached), SSMJIT_ERR_IO);
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
        sj_cache_config rw = config(dir, SSMJIT_CACHE_RW, 0);
        const void *image;
        size_t size;
        if (get(&spec, &rw, &image, &size, NULL) != SSMJIT_OK)
            return 12;
        int planted = !strcmp((const char *)image, "planted payload");
        if (planted != (i == 4))
            return 20 + i;
        spec = spec_with(&define); /* a miss: compiled, and written only where trusted */
        if (get(&spec, &rw, &image, &size, NULL) != SSMJIT_OK || size < 1000)
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
    sj_cache_config c = config(dir, SSMJIT_CACHE_RO, 1);
    if (sj_toolchain_get(&c, 0, &tc) != SSMJIT_OK || tc.num_archs == 0)
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

/* Bytes and mtime of a file, to show it was not touched. */
typedef struct {
    char *bytes;
    size_t len;
    struct timespec mtime;
} snapshot;

static snapshot snap(const char *path)
{
    snapshot sn = {0};
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    sn.len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    sn.bytes = malloc(sn.len + 1);
    assert_int_equal(fread(sn.bytes, 1, sn.len, f), sn.len);
    fclose(f);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    sn.mtime = st.st_mtim;
    return sn;
}

static void assert_untouched(const char *path, snapshot *before)
{
    snapshot now = snap(path);
    assert_int_equal(now.len, before->len);
    assert_memory_equal(now.bytes, before->bytes, now.len);
    assert_int_equal(now.mtime.tv_sec, before->mtime.tv_sec);
    assert_int_equal(now.mtime.tv_nsec, before->mtime.tv_nsec);
    free(now.bytes);
    free(before->bytes);
}

/* The user's cache first, then the layers; a layer is read, never
 * written, touched or repaired, even when the user could write to it. */
static void test_layers(void **state)
{
    (void)state;
    NEED_NVRTC();
    char *user = tu_mkdtemp(), *layer = tu_mkdtemp(), path[4200];
    sj_cache_config c = config(user, SSMJIT_CACHE_RW, 1);
    snprintf(c.layers[0], sizeof c.layers[0], "%s", layer);
    c.num_layers = 1;
    const void *image;
    size_t size;
    sj_image_origin from;

    /* a miss in the user's cache, a hit in the layer: used as it is */
    const char *define;
    sj_compile_spec spec = spec_with(&define);
    plant(layer, &spec, "layer payload");
    entry_path_for(layer, define, path, sizeof path);
    snapshot before = snap(path);
    assert_int_equal(get(&spec, &c, &image, &size, &from), SSMJIT_OK);
    assert_string_equal((const char *)image, "layer payload");
    assert_int_equal(from, SJ_IMAGE_LAYER);
    assert_int_equal(count_entries(user), 0);
    assert_untouched(path, &before); /* not even its use recorded */

    /* a damaged layer entry: compiled into the user's cache, the layer's
     * bad file left exactly as it was */
    spec = spec_with(&define);
    plant(layer, &spec, "layer payload, soon damaged, long enough to be damaged at byte 200 ........"
                        "...................................................................."
                        "....................................................................");
    entry_path_for(layer, define, path, sizeof path);
    damage(path, 1);
    before = snap(path);
    assert_int_equal(get(&spec, &c, &image, &size, &from), SSMJIT_OK);
    assert_int_equal(from, SJ_IMAGE_COMPILED);
    assert_true(size > 1000);
    assert_int_equal(count_entries(user), 1);
    assert_untouched(path, &before);
    assert_int_not_equal(sj_cache_entry_check(path, NULL), SSMJIT_OK);

    /* the user's entry comes first */
    spec = spec_with(&define);
    plant(layer, &spec, "layer payload");
    plant(user, &spec, "user payload");
    assert_int_equal(get(&spec, &c, &image, &size, &from), SSMJIT_OK);
    assert_string_equal((const char *)image, "user payload");
    assert_int_equal(from, SJ_IMAGE_CACHE);

    /* read-only user cache: the layer still serves; a miss writes nowhere */
    c.mode = SSMJIT_CACHE_RO;
    spec = spec_with(&define);
    plant(layer, &spec, "layer payload");
    assert_int_equal(get(&spec, &c, &image, &size, &from), SSMJIT_OK);
    assert_string_equal((const char *)image, "layer payload");
    spec = spec_with(&define);
    size_t in_user = count_entries(user), in_layer = count_entries(layer);
    assert_int_equal(get(&spec, &c, &image, &size, &from), SSMJIT_OK);
    assert_int_equal(from, SJ_IMAGE_COMPILED);
    assert_int_equal(count_entries(user), in_user);
    assert_int_equal(count_entries(layer), in_layer);

    /* off: no disk at all, layers included */
    c.mode = SSMJIT_CACHE_OFF;
    spec = spec_with(&define);
    plant(layer, &spec, "layer payload");
    assert_int_equal(get(&spec, &c, &image, &size, &from), SSMJIT_OK);
    assert_int_equal(from, SJ_IMAGE_COMPILED);
    tu_rmtree(user);
    tu_rmtree(layer);
    free(user);
    free(layer);
}

/* Child side of test_cache_path: SSMJIT_CACHE_PATH with a missing, a
 * group-writable, a foreign (as root), a symlinked and a good layer, the
 * good one twice and the user's cache once: only the good one is kept, and
 * each bad one is warned of once, also over a second configuration.
 * Exit 0 when all of that holds. */
/* grep -c of pattern in file. */
static int count_lines(const char *file, const char *pattern)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "grep -c -- \"%s\" '%s'", pattern, file);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p && fscanf(p, "%d", &n) != 1)
        n = -1;
    if (p)
        pclose(p);
    return n;
}

static int cache_path_child(const char *base)
{
    char log[512], list[4096], d[6][512], pattern[1536];
    static const char *const names[] = {"missing", "group", "foreign", "link", "good", "user"};
    for (int i = 0; i < 6; i++)
        snprintf(d[i], sizeof d[i], "%.400s/%s", base, names[i]);
    if (mkdir(d[1], 0770) != 0 || chmod(d[1], 0770) != 0 || mkdir(d[4], 0700) != 0 || mkdir(d[5], 0700) != 0 ||
        symlink(d[4], d[3]) != 0)
        return 10;
    int root = geteuid() == 0;
    if (root && (mkdir(d[2], 0700) != 0 || chown(d[2], 65534, 65534) != 0))
        return 11;
    snprintf(list, sizeof list, "%s:%s:%s:%s:%s::%s:%s", d[0], d[1], d[2], d[3], d[4], d[4], d[5]);
    setenv("SSMJIT_CACHE_PATH", list, 1);
    snprintf(log, sizeof log, "%.400s/stderr", base);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dup2(fd, 2) < 0)
        return 12;
    for (int twice = 0; twice < 2; twice++) {
        sj_cache_config c;
        if (sj_cache_config_init(&c, d[5], SSMJIT_CACHE_RW, 0) != SSMJIT_OK)
            return 13;
        if (c.num_layers != 1 || strcmp(c.layers[0], d[4]))
            return 14;
    }
    /* what `ssmjit info` shows: the same one layer (the user's cache is
     * the default one here, so d[5] counts as a layer too) */
    char shown[4096] = "untouched";
    if (ssmjit_cache_layers(shown, 3) != SSMJIT_ERR_INVALID_ARG || strcmp(shown, "untouched"))
        return 16;
    if (ssmjit_cache_layers(shown, sizeof shown) != SSMJIT_OK)
        return 17;
    snprintf(pattern, sizeof pattern, "%s:%s", d[4], d[5]);
    if (strcmp(shown, pattern))
        return 18;
    fflush(stderr);
    if (count_lines(log, "ssmjit: warning") != 4)
        return 15;
    /* only root can give a directory away: elsewhere "foreign" is missing */
    const char *const why[] = {"No such file", "writable by its group", root ? "belongs to uid 65534" : "No such file",
                               "symbolic link"};
    for (int i = 0; i < 4; i++) {
        snprintf(pattern, sizeof pattern, "'%.500s' ignored: .*%s", d[i], why[i]);
        if (count_lines(log, pattern) != 1)
            return 20 + i;
    }
    return 0;
}

static void test_cache_path(void **state)
{
    (void)state;
    char *base = tu_mkdtemp();
    assert_int_equal(tu_run_self("--cache-path-child", base), 0);
    tu_rmtree(base);
    free(base);
}

/* Prewarm and a lazy lookup of one unit meet on one entry, either way. */
static void test_prewarm_shares_lazy_entries(void **state)
{
    (void)state;
    NEED_NVRTC();
    char *dir = tu_mkdtemp();
    sj_cache_config c = config(dir, SSMJIT_CACHE_RW, 1);
    const char *define = fresh_define();
    sj_compile_spec spec = spec_80(&define);
    int cached = -1;
    assert_int_equal(prewarm(dir, define, &cached), SSMJIT_OK);
    assert_int_equal(cached, 0);
    const void *image;
    size_t size;
    sj_image_origin from;
    assert_int_equal(get(&spec, &c, &image, &size, &from), SSMJIT_OK);
    assert_int_equal(from, SJ_IMAGE_CACHE);
    assert_int_equal(count_entries(dir), 1);

    define = fresh_define();
    spec = spec_80(&define);
    assert_int_equal(get(&spec, &c, &image, &size, &from), SSMJIT_OK);
    assert_int_equal(from, SJ_IMAGE_COMPILED);
    assert_int_equal(prewarm(dir, define, &cached), SSMJIT_OK);
    assert_int_equal(cached, 1);
    assert_int_equal(count_entries(dir), 2);

    /* what this process holds in memory but its cache does not: prewarm
     * writes it (it fills the directory it is given) */
    define = fresh_define();
    spec = spec_80(&define);
    sj_cache_config off = config(NULL, SSMJIT_CACHE_OFF, 1);
    assert_int_equal(get(&spec, &off, &image, &size, &from), SSMJIT_OK);
    assert_int_equal(prewarm(dir, define, &cached), SSMJIT_OK);
    assert_int_equal(count_entries(dir), 3);
    tu_rmtree(dir);
    free(dir);
}

static size_t files_in(const char *dir)
{
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "find '%s' -mindepth 1 | wc -l", dir);
    FILE *p = popen(cmd, "r");
    size_t n = 99;
    assert_int_equal(fscanf(p, "%zu", &n), 1);
    pclose(p);
    return n;
}

/* Under SSMJIT_CACHE=ro or off prewarm refuses before writing anything. */
static void test_prewarm_honours_mode(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    static const char *const modes[] = {"ro", "off"};
    for (int i = 0; i < 2; i++) {
        setenv("SSMJIT_CACHE", modes[i], 1);
        int cached = -1;
        assert_int_equal(prewarm(dir, fresh_define(), &cached), SSMJIT_ERR_INVALID_ARG);
        assert_non_null(strstr(ssmjit_last_error(), "forbids writing"));
        assert_int_equal(cached, -1);
        ssmjit_prewarm_options o;
        ssmjit_prewarm_options_init(&o);
        o.arch = "sm_80";
        o.cache_dir = dir;
        ssmjit_prewarm_result r = {7, 7, 7};
        assert_int_equal(ssmjit_prewarm(&o, &r), SSMJIT_ERR_INVALID_ARG);
        assert_int_equal(r.compiled, 7);
        assert_int_equal(files_in(dir), 0);
    }
    unsetenv("SSMJIT_CACHE");
    tu_rmtree(dir);
    free(dir);
}

/* 16 threads asking for overlapping units, some queued on the pool, some
 * fetched at once: each unit is compiled once. */
#define POOL_THREADS 16
#define POOL_UNITS 6
static atomic_int compiles[SJ_UNIT_COUNT];

static void count_compile(const ssmjit_compile_event *ev, void *user)
{
    (void)user;
    if (!ev->done)
        return;
    for (size_t u = 0; u < SJ_UNIT_COUNT; u++)
        if (!strcmp(sj_units[u].kernel, ev->unit))
            atomic_fetch_add(&compiles[u], 1);
}

typedef struct {
    const sj_compile_spec *spec;
    const sj_cache_config *cache;
    sj_image_owner *owner;
    size_t units[POOL_UNITS];
    unsigned seed;
    ssmjit_status st;
} pool_arg;

static void *pool_thread(void *p)
{
    pool_arg *a = p;
    size_t order[POOL_UNITS];
    memcpy(order, a->units, sizeof order);
    for (int i = POOL_UNITS - 1; i > 0; i--) {
        int j = (int)(rand_r(&a->seed) % (unsigned)(i + 1));
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int i = 0; i < POOL_UNITS && a->st == SSMJIT_OK; i++) {
        sj_image_job job = {order[i], a->spec, a->cache, a->owner, 1};
        if (rand_r(&a->seed) % 2) {
            a->st = sj_image_request(&job);
        } else {
            const void *image;
            size_t size;
            a->st = sj_image_get(&job, &image, &size, NULL);
            if (a->st == SSMJIT_OK && size < 1000)
                a->st = SSMJIT_ERR_INTERNAL;
        }
    }
    return NULL;
}

static void test_pool_compiles_each_once(void **state)
{
    (void)state;
    NEED_NVRTC();
    static const char *const kernels[POOL_UNITS] = {"act_fwd_silu_f32", "act_fwd_silu_f16", "act_fwd_softplus_bf16",
                                                    "gate_fwd_f32", "gate_fwd_f16", "gate_fwd_bf16"};
    const char *define = fresh_define();
    sj_compile_spec spec = spec_80(&define);
    sj_cache_config off = config(NULL, SSMJIT_CACHE_OFF, 1);
    sj_image_owner owner = {count_compile, NULL, 0};
    pool_arg args[POOL_THREADS];
    pthread_t th[POOL_THREADS];
    for (int t = 0; t < POOL_THREADS; t++) {
        args[t] = (pool_arg){&spec, &off, &owner, {0}, (unsigned)tu_uniform(0, 4e9), SSMJIT_OK};
        for (int i = 0; i < POOL_UNITS; i++) {
            int u = sj_unit_find(SJ_MODULE_ELEMENTWISE, kernels[i]);
            assert_true(u >= 0);
            args[t].units[i] = (size_t)u;
        }
    }
    for (int t = 0; t < POOL_THREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, pool_thread, &args[t]), 0);
    for (int t = 0; t < POOL_THREADS; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(args[t].st, SSMJIT_OK);
    }
    sj_image_owner_release(&owner); /* the queued ones finish */
    assert_int_equal(owner.pending, 0);
    for (int i = 0; i < POOL_UNITS; i++) {
        sj_image_job job = {args[0].units[i], &spec, &off, NULL, 1};
        const void *image;
        size_t size;
        sj_image_origin from;
        assert_int_equal(sj_image_get(&job, &image, &size, &from), SSMJIT_OK);
        assert_int_equal(from, SJ_IMAGE_MEMORY);
        assert_int_equal(atomic_load(&compiles[args[0].units[i]]), 1);
    }
}

/* A child of fork() has none of the parent's pool threads: a unit one of
 * them was compiling at the fork must not leave the child waiting for it.
 * The child finds the unit in the cache (planted meanwhile), so it never
 * enters NVRTC, which a parent thread was inside of: after a fork only the
 * child's own state is safe (POSIX). */
static void test_fork_while_compiling(void **state)
{
    (void)state;
    NEED_NVRTC();
#if defined(__SANITIZE_ADDRESS__)
    /* In the sanitizer build the child sometimes outlived its alarm (CI,
     * under load; never in the plain build).  The AddressSanitizer runtime
     * that GCC 12 and 13 ship installs no fork handlers (LLVM added them in
     * 18), so a child forked while the compiling thread holds one of the
     * runtime's locks can block on it: a hazard of that runtime, not of
     * the library.  The plain build runs this test. */
    skip();
#endif
    char *dir = tu_mkdtemp();
    const char *define = fresh_define();
    sj_compile_spec spec = spec_80(&define);
    sj_cache_config rw = config(dir, SSMJIT_CACHE_RW, 1), off = config(NULL, SSMJIT_CACHE_OFF, 1);
    sj_image_owner owner = {NULL, NULL, 0};
    sj_image_job job = {unit(), &spec, &off, &owner, 1};
    assert_int_equal(sj_image_request(&job), SSMJIT_OK); /* a pool thread compiles it now */
    plant(dir, &spec, "planted payload");
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(30); /* a wait that never ends fails the test instead of stalling it */
        sj_image_job mine = {unit(), &spec, &rw, NULL, 1};
        const void *image;
        size_t size;
        _exit(sj_image_get(&mine, &image, &size, NULL) == SSMJIT_OK && !strcmp(image, "planted payload") ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    sj_image_owner_release(&owner);
    tu_rmtree(dir);
    free(dir);
}

/* Child side of test_exit_while_compiling: queues several compiles and
 * exits at once; the exit drops the queued ones and waits for the running
 * ones, so that no worker is inside NVRTC while it is torn down. */
static int exit_child(void)
{
    static const char *const kernels[] = {"act_fwd_silu_f16", "act_fwd_silu_bf16", "gate_fwd_f32", "gate_fwd_f16"};
    static sj_image_owner owner = {NULL, NULL, 0};
    static const char *define;
    static sj_compile_spec spec;
    static sj_cache_config off;
    define = fresh_define();
    spec = spec_80(&define);
    off = config(NULL, SSMJIT_CACHE_OFF, 1);
    /* one compile done first: the exit handler is registered after it */
    const void *image;
    size_t size;
    sj_image_job first = {unit(), &spec, &off, NULL, 1};
    if (sj_image_get(&first, &image, &size, NULL) != SSMJIT_OK)
        return 2;
    for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++) {
        sj_image_job job = {(size_t)sj_unit_find(SJ_MODULE_ELEMENTWISE, kernels[i]), &spec, &off, &owner, 1};
        if (sj_image_request(&job) != SSMJIT_OK)
            return 3;
    }
    exit(0);
}

static void test_exit_while_compiling(void **state)
{
    (void)state;
    NEED_NVRTC();
    for (int i = 0; i < 3; i++)
        assert_int_equal(tu_run_self("--exit-child", "-"), 0);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--record-child"))
        return record_child(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "--untrusted-child"))
        return untrusted_child(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "--cache-path-child"))
        return cache_path_child(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "--exit-child"))
        return exit_child();
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_changes_with_each_input),
        cmocka_unit_test(test_unit_text),
        cmocka_unit_test(test_defines_normalised),
        cmocka_unit_test(test_spec_set),
        cmocka_unit_test(test_hit_miss_and_damage_replaced),
        cmocka_unit_test(test_read_only_mode),
        cmocka_unit_test(test_off_mode),
        cmocka_unit_test(test_missing_dir_created_private),
        cmocka_unit_test(test_unwritable_dir_degrades_to_memory),
        cmocka_unit_test(test_toolchain_record),
        cmocka_unit_test(test_directory_trust),
        cmocka_unit_test(test_untrusted_dir_not_used),
        cmocka_unit_test(test_layers),
        cmocka_unit_test(test_cache_path),
        cmocka_unit_test(test_prewarm_shares_lazy_entries),
        cmocka_unit_test(test_prewarm_honours_mode),
        cmocka_unit_test(test_pool_compiles_each_once),
        cmocka_unit_test(test_fork_while_compiling),
        cmocka_unit_test(test_exit_while_compiling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
