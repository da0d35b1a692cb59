/* Every option NVRTC receives reaches the cache key: with a recording
 * stand-in for libnvrtc (tests/fake_nvrtc.c), the options of each compile,
 * through the whole image pipeline and through prewarm, are exactly the
 * list the key hashes (sj_compile_options), for every kind of spec.  An
 * option added anywhere on the way (as -split-compile once was, which
 * changes the machine code) fails this test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile.h"
#include "image.h"
#include "test_util.h"

static char log_path[4200];

/* The options of the last compile in the log whose program is `name`. */
static int logged_options(const char *name, char opts[][256], int cap)
{
    FILE *f = fopen(log_path, "r");
    assert_non_null(f);
    char line[512], want[300];
    snprintf(want, sizeof want, "compile %s\n", name);
    int n = -1, in = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strcmp(line, want)) {
            in = 1;
            n = 0;
        } else if (in && !strcmp(line, "end\n")) {
            in = 0;
        } else if (in && n < cap) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(opts[n++], 256, "%.255s", line);
        }
    }
    fclose(f);
    return n;
}

static void expect_keyed(const sj_compile_spec *spec, const char *program)
{
    char got[SJ_MAX_OPTIONS][256], buf[8192];
    const char *keyed[SJ_MAX_OPTIONS];
    int n = logged_options(program, got, SJ_MAX_OPTIONS);
    int k = sj_compile_options(spec, keyed, SJ_MAX_OPTIONS, buf, sizeof buf);
    assert_true(k >= 2);
    if (n != k)
        fail_msg("NVRTC received %d options for %s, the key hashes %d", n, program, k);
    for (int i = 0; i < n; i++)
        assert_string_equal(got[i], keyed[i]);
}

static void test_options_reach_key(void **state)
{
    (void)state;
    int u = sj_unit_find(SJ_MODULE_SCAN_FWD, "scan_fwd_ns16_bf16");
    assert_true(u >= 0);
    char program[128];
    snprintf(program, sizeof program, "%s.unit.cu", sj_units[u].kernel);
    sj_cache_config off = {.mode = SSMJIT_CACHE_OFF, .quiet = 1};
    for (int combo = 0; combo < 32; combo++) {
        char define[64];
        snprintf(define, sizeof define, "SSMJIT_OPTIONS_TEST=%d_%ld", combo, (long)getpid());
        const char *defines[] = {define, "ANOTHER=1"};
        sj_compile_spec spec = {.arch = combo & 1 ? 90 : 80, .ptx = (combo >> 1) & 1,
                                .fast_math = (combo >> 2) & 1, .lineinfo = (combo >> 3) & 1,
                                .defines = defines, .num_defines = combo & 16 ? 2 : 1};
        sj_image_job job = {(size_t)u, &spec, &off, NULL, 1};
        const void *image;
        size_t size;
        assert_int_equal(sj_image_get(&job, &image, &size, NULL), SSMJIT_OK);
        expect_keyed(&spec, program);
    }
}

static void test_prewarm_options_reach_key(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    const char *defines[] = {"SSMJIT_PREWARM_OPTIONS_TEST=1"};
    for (int fast = 0; fast < 2; fast++) {
        ssmjit_prewarm_options o;
        ssmjit_prewarm_options_init(&o);
        o.arch = "sm_90";
        o.fast_math = fast;
        o.lineinfo = 1;
        o.cache_dir = dir;
        o.defines = defines;
        o.num_defines = 1;
        int cached;
        int u = sj_unit_find(SJ_MODULE_CONV, "conv_fwd_t4_v4_bf16");
        assert_true(u >= 0);
        assert_int_equal(ssmjit_prewarm_unit(&o, (size_t)u, &cached), SSMJIT_OK);
        assert_int_equal(cached, 0);
        sj_compile_spec spec = {.arch = 90, .fast_math = fast, .lineinfo = 1, .defines = defines, .num_defines = 1};
        expect_keyed(&spec, "conv_fwd_t4_v4_bf16.unit.cu");
    }
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const char *fake = getenv("SSMJIT_FAKE_NVRTC");
    if (!fake || !*fake) {
        printf("# SSMJIT_FAKE_NVRTC (the stand-in's path) is not set\n");
        return 1;
    }
    setenv("SSMJIT_NVRTC_PATH", fake, 1);
    char *dir = tu_mkdtemp();
    snprintf(log_path, sizeof log_path, "%.4000s/nvrtc.log", dir);
    setenv("SSMJIT_FAKE_NVRTC_LOG", log_path, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_reach_key),
        cmocka_unit_test(test_prewarm_options_reach_key),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tu_rmtree(dir);
    free(dir);
    return rc;
}
