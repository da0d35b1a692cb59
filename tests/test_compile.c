/* NVRTC compiles every embedded module for the architectures we ship
 * for, with nothing but the embedded headers; failures carry the log; the
 * forward scan's kernels carry the block bounds the host relies on.
 * Skipped when NVRTC is not installed. */
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
#include "ops_scan.h"
#include "test_util.h"

static sj_toolchain tc;

static int setup(void **state)
{
    (void)state;
    if (sj_toolchain_get(NULL, 0, 1, &tc) != SSMJIT_OK)
        printf("# NVRTC not available: %s\n", ssmjit_last_error());
    return 0;
}

typedef struct {
    sj_compile_spec spec;
    atomic_int next;
    void *image[SJ_MODULE_COUNT];
    size_t size[SJ_MODULE_COUNT];
    ssmjit_status st[SJ_MODULE_COUNT];
    char error[SJ_MODULE_COUNT][512];
} batch;

/* NVRTC is thread-safe across programs: compile modules side by side. */
static void *compile_worker(void *p)
{
    batch *b = p;
    for (int m; (m = atomic_fetch_add(&b->next, 1)) < SJ_MODULE_COUNT;) {
        b->st[m] = sj_compile_module(&sj_modules[m], &b->spec, &b->image[m], &b->size[m]);
        snprintf(b->error[m], sizeof b->error[m], "%s", ssmjit_last_error());
    }
    return NULL;
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
 * those numbers, or launches fail, which only a GPU would otherwise show. */
static void check_scan_fwd_bounds(const char *ptx)
{
    static const int states[] = {4, 8, 16};
    static const char *const dtypes[] = {"f32", "f16", "bf16"};
    for (size_t i = 0; i < sizeof states / sizeof *states; i++)
        for (size_t t = 0; t < 3; t++) {
            char entry[64];
            snprintf(entry, sizeof entry, ".entry scan_fwd_ns%d_%s(", states[i], dtypes[t]);
            assert_int_equal(max_threads_of(ptx, entry), sj_scan_fwd_max_threads(states[i]));
        }
}

/* The 4-tap conv backward kernels are bounded to the conv ops' block
 * size (__launch_bounds__ in kernels_src/conv_bwd.cu); a larger block
 * would fail every launch. */
static void check_conv_bwd_bounds(const char *ptx)
{
    static const char *const dtypes[] = {"f32", "f16", "bf16"};
    for (size_t t = 0; t < 3; t++) {
        char entry[64];
        snprintf(entry, sizeof entry, ".entry conv_bwd_t4_v4_%s(", dtypes[t]);
        assert_int_equal(max_threads_of(ptx, entry), sj_conv_threads());
    }
}

static void compile_all(int arch, int ptx, int fast)
{
    if (!tc.num_archs)
        skip();
    batch *b = calloc(1, sizeof *b);
    b->spec = (sj_compile_spec){.arch = arch, .ptx = ptx, .fast_math = fast};
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    pthread_t th[8];
    int threads = n < 1 ? 1 : n > 8 ? 8 : (int)n;
    for (int i = 0; i < threads; i++)
        assert_int_equal(pthread_create(&th[i], NULL, compile_worker, b), 0);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    for (int m = 0; m < SJ_MODULE_COUNT; m++) {
        if (b->st[m] != SSMJIT_OK)
            fail_msg("%s for %s_%d: %s", sj_modules[m].name, ptx ? "compute" : "sm", arch, b->error[m]);
        assert_true(b->size[m] > 100);
        if (ptx) {
            assert_non_null(strstr(b->image[m], ".target"));
            if (m == SJ_MODULE_SCAN_FWD)
                check_scan_fwd_bounds(b->image[m]);
            if (m == SJ_MODULE_CONV_BWD)
                check_conv_bwd_bounds(b->image[m]);
        } else {
            assert_memory_equal(b->image[m], "\x7f" "ELF", 4);
        }
        free(b->image[m]);
    }
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
