/* NVRTC compiles every compile unit for the architectures we ship for,
 * with nothing but the embedded headers, and each unit's image holds its
 * kernel and no other; failures carry the log; the forward scan's kernels
 * carry the block bounds the host relies on.  Skipped when NVRTC is not
 * installed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile.h"
#include "ops_conv.h"
#include "toolchain.h"
#include "ops_scan.h"
#include "test_util.h"

static sj_toolchain tc;

static int setup(void **state)
{
    (void)state;
    if (sj_toolchain_get(NULL, 1, &tc) != SSMJIT_OK)
        printf("# NVRTC not available: %s\n", ssmjit_last_error());
    return 0;
}

/* Specialised units (the fused decode) compile only with a model's sizes:
 * the 130m model's in fast-math builds, in exact ones an odd model's
 * (nothing a multiple of 4 but the conv, the residual in the model's
 * dtype), so that both the 16-byte and the element-wise loops build.
 * SJ_DEC_TC: the tensor-core kernels' blocks for those sizes
 * (model_decode.c's tc_plans; the odd model takes none). */
static const char *const sizes_130m[] = {"SJ_DEC_DT_RANK=48",  "SJ_DEC_D_CONV=4",   "SJ_DEC_D_INNER=1536",
                                         "SJ_DEC_D_MODEL=768", "SJ_DEC_D_STATE=16", "SJ_DEC_RES_F32=1",
                                         "SJ_DEC_TC=2,8,195840,4,2,122880,2,2,147456", "SJ_DEC_VOCAB=50280"};
static const char *const sizes_odd[] = {"SJ_DEC_DT_RANK=13",  "SJ_DEC_D_CONV=3",  "SJ_DEC_D_INNER=402",
                                        "SJ_DEC_D_MODEL=201", "SJ_DEC_D_STATE=5", "SJ_DEC_RES_F32=0",
                                        "SJ_DEC_TC=0,0,0,0,0,0,0,0,0",  "SJ_DEC_VOCAB=1001"};

typedef struct {
    sj_compile_spec spec, special;
    atomic_int next;
    void *image[SJ_UNIT_COUNT];
    size_t size[SJ_UNIT_COUNT];
    ssmjit_status st[SJ_UNIT_COUNT];
    char error[SJ_UNIT_COUNT][512];
} batch;

/* NVRTC is thread-safe across programs: compile units side by side. */
static void *compile_worker(void *p)
{
    batch *b = p;
    for (int u; (u = atomic_fetch_add(&b->next, 1)) < SJ_UNIT_COUNT;) {
        const sj_compile_spec *spec = sj_modules[sj_units[u].module].specialised ? &b->special : &b->spec;
        b->st[u] = sj_compile_unit((size_t)u, spec, &b->image[u], &b->size[u]);
        snprintf(b->error[u], sizeof b->error[u], "%s", ssmjit_last_error());
    }
    return NULL;
}

/* The kernels (ELF sections .text.<name>) of a CUBIN: writes their names,
 * comma-separated, into out. */
static void cubin_kernels(const unsigned char *elf, size_t size, char *out, size_t cap)
{
    out[0] = '\0';
    assert_true(size > 64 && !memcmp(elf, "\x7f" "ELF", 4) && elf[4] == 2 /* 64-bit */);
    uint64_t shoff;
    uint16_t shentsize, shnum, shstrndx;
    memcpy(&shoff, elf + 0x28, 8);
    memcpy(&shentsize, elf + 0x3a, 2);
    memcpy(&shnum, elf + 0x3c, 2);
    memcpy(&shstrndx, elf + 0x3e, 2);
    assert_true(shoff + (uint64_t)shnum * shentsize <= size && shstrndx < shnum);
    uint64_t stroff;
    memcpy(&stroff, elf + shoff + (uint64_t)shstrndx * shentsize + 0x18, 8);
    for (uint16_t i = 0; i < shnum; i++) {
        uint32_t name;
        memcpy(&name, elf + shoff + (uint64_t)i * shentsize, 4);
        assert_true(stroff + name < size);
        const char *n = (const char *)elf + stroff + name;
        if (!strncmp(n, ".text.", 6)) {
            if (out[0])
                strncat(out, ",", cap - strlen(out) - 1);
            strncat(out, n + 6, cap - strlen(out) - 1);
        }
    }
}

/* PTX's .entry names, comma-separated. */
static void ptx_entries(const char *ptx, char *out, size_t cap)
{
    out[0] = '\0';
    for (const char *e = strstr(ptx, ".entry "); e; e = strstr(e + 1, ".entry ")) {
        const char *name = e + 7, *end = name + strcspn(name, "( \n");
        if (out[0])
            strncat(out, ",", cap - strlen(out) - 1);
        strncat(out, name, (size_t)(end - name) < cap - strlen(out) - 1 ? (size_t)(end - name) : cap - strlen(out) - 1);
    }
}

/* The .maxntid of kernel `entry` in ptx. */
static int max_threads_of(const char *ptx, const char *entry)
{
    const char *e = strstr(ptx, entry), *body = e ? strchr(e, '{') : NULL;
    const char *bound = e ? strstr(e, ".maxntid") : NULL;
    int threads = 0;
    if (!bound || !body || bound > body || sscanf(bound, ".maxntid %d", &threads) != 1)
        fail_msg("%s: no .maxntid before its body", entry);
    return threads;
}

/* The host chooses forward scan blocks within sj_scan_fwd_max_threads();
 * the kernels' own __launch_bounds__ (.maxntid in their PTX) must be
 * those numbers, or launches fail, which only a GPU would otherwise show.
 * Likewise the 4-tap conv backward kernels are bounded to the conv ops'
 * block size (__launch_bounds__ in kernels_src/conv_bwd.cu). */
static void check_bounds(size_t u, const char *ptx)
{
    static const int states[] = {4, 8, 16};
    static const char *const dtypes[] = {"f32", "f16", "bf16"};
    char entry[64];
    for (size_t t = 0; t < 3; t++) {
        for (size_t i = 0; i < sizeof states / sizeof *states; i++) {
            snprintf(entry, sizeof entry, "scan_fwd_ns%d_%s", states[i], dtypes[t]);
            if (!strcmp(sj_units[u].kernel, entry)) {
                snprintf(entry, sizeof entry, ".entry scan_fwd_ns%d_%s(", states[i], dtypes[t]);
                assert_int_equal(max_threads_of(ptx, entry), sj_scan_fwd_max_threads(states[i]));
            }
        }
        snprintf(entry, sizeof entry, "conv_bwd_t4_v4_%s", dtypes[t]);
        if (!strcmp(sj_units[u].kernel, entry)) {
            snprintf(entry, sizeof entry, ".entry conv_bwd_t4_v4_%s(", dtypes[t]);
            assert_int_equal(max_threads_of(ptx, entry), sj_conv_threads());
        }
    }
}

static void compile_all(int arch, int ptx, int fast)
{
    if (!tc.num_archs)
        skip();
    batch *b = calloc(1, sizeof *b);
    b->spec = (sj_compile_spec){.arch = arch, .ptx = ptx, .fast_math = fast};
    b->special = b->spec;
    b->special.defines = fast ? sizes_130m : sizes_odd;
    _Static_assert(sizeof sizes_130m == sizeof sizes_odd, "the same defines, other sizes");
    b->special.num_defines = sizeof sizes_130m / sizeof *sizes_130m;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    pthread_t th[8];
    int threads = n < 1 ? 1 : n > 8 ? 8 : (int)n;
    for (int i = 0; i < threads; i++)
        assert_int_equal(pthread_create(&th[i], NULL, compile_worker, b), 0);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    int bounded = 0;
    for (size_t u = 0; u < SJ_UNIT_COUNT; u++) {
        if (b->st[u] != SSMJIT_OK)
            fail_msg("%s for %s_%d: %s", sj_units[u].kernel, ptx ? "compute" : "sm", arch, b->error[u]);
        assert_true(b->size[u] > 100);
        /* the unit's image holds its kernel, and no other */
        char kernels[1024];
        if (ptx) {
            assert_non_null(strstr(b->image[u], ".target"));
            ptx_entries(b->image[u], kernels, sizeof kernels);
            check_bounds(u, b->image[u]);
            bounded += !strncmp(sj_units[u].kernel, "scan_fwd_ns", 11) || !strncmp(sj_units[u].kernel, "conv_bwd_t4", 11);
        } else {
            cubin_kernels(b->image[u], b->size[u], kernels, sizeof kernels);
        }
        if (strcmp(kernels, sj_units[u].kernel))
            fail_msg("unit %s compiled to kernels '%s'", sj_units[u].kernel, kernels);
        free(b->image[u]);
    }
    assert_int_equal(bounded, ptx ? 12 : 0);
    free(b);
}

static void test_sm75(void **s) { (void)s; compile_all(75, 0, 1); }
static void test_sm80(void **s) { (void)s; compile_all(80, 0, 0); }
static void test_sm86(void **s) { (void)s; compile_all(86, 0, 1); }
static void test_sm89(void **s) { (void)s; compile_all(89, 0, 1); }
static void test_sm90(void **s) { (void)s; compile_all(90, 0, 0); }

static void test_newest(void **s)
{
    (void)s;
    if (!tc.num_archs)
        skip();
    compile_all(tc.archs[tc.num_archs - 1], 0, 1);
}

static void test_ptx(void **s)
{
    (void)s;
    compile_all(90, 1, 1);
}

static void test_error_carries_log(void **s)
{
    (void)s;
    if (!tc.num_archs)
        skip();
    const char *opts[] = {"--gpu-architecture=sm_80"};
    void *image = NULL;
    size_t size;
    ssmjit_status st = sj_nvrtc_compile("extern \"C\" __global__ void k() { undeclared_thing(); }\n",
                                        "broken.cu", 0, NULL, NULL, 1, opts, 0, &image, &size);
    assert_int_equal(st, SSMJIT_ERR_COMPILE);
    assert_null(image);
    assert_non_null(strstr(ssmjit_last_error(), "broken.cu"));
    assert_non_null(strstr(ssmjit_last_error(), "undeclared_thing"));
}

static void test_toolchain_is_sane(void **s)
{
    (void)s;
    if (!tc.num_archs)
        skip();
    assert_true(tc.major >= 11);
    assert_int_equal(strlen(tc.probe_hash), 64);
    for (int i = 1; i < tc.num_archs; i++)
        assert_true(tc.archs[i] > tc.archs[i - 1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_toolchain_is_sane), cmocka_unit_test(test_error_carries_log),
        cmocka_unit_test(test_sm75), cmocka_unit_test(test_sm80), cmocka_unit_test(test_sm86),
        cmocka_unit_test(test_sm89), cmocka_unit_test(test_sm90), cmocka_unit_test(test_newest),
        cmocka_unit_test(test_ptx),
    };
    tu_apply_test_filter();
    return cmocka_run_group_tests(tests, setup, NULL);
}
