/* Architecture strings and the choice of CUBIN or PTX for a device. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "arch.h"

static void test_parse(void **state)
{
    (void)state;
    int a = 0;
    assert_int_equal(sj_arch_parse("sm_80", &a), SSMJIT_OK);
    assert_int_equal(a, 80);
    assert_int_equal(sj_arch_parse("compute_90", &a), SSMJIT_OK);
    assert_int_equal(a, 90);
    assert_int_equal(sj_arch_parse("sm_120", &a), SSMJIT_OK);
    assert_int_equal(a, 120);
    assert_int_equal(sj_arch_parse("86", &a), SSMJIT_OK);
    assert_int_equal(a, 86);
    const char *bad[] = {"", "sm_", "sm_8", "sm_9x", "sm_90a", "sm_1000", "gfx90a", "sm_08", "sm 90"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(sj_arch_parse(bad[i], &a), SSMJIT_ERR_INVALID_ARG);
        assert_non_null(strstr(ssmjit_last_error(), bad[i]));
    }
    assert_int_equal(sj_arch_parse(NULL, &a), SSMJIT_ERR_INVALID_ARG);
}

static sj_toolchain toolchain(const int *archs, int n)
{
    sj_toolchain tc = {.major = 12, .minor = 4};
    memcpy(tc.archs, archs, (size_t)n * sizeof *archs);
    tc.num_archs = n;
    return tc;
}

static void expect_target(const sj_toolchain *tc, int want, int device, int arch, int ptx)
{
    int a = -1, p = -1;
    assert_int_equal(sj_arch_target(tc, want, device, &a, &p), SSMJIT_OK);
    assert_int_equal(a, arch);
    assert_int_equal(p, ptx);
}

static void test_target(void **state)
{
    (void)state;
    const int new_archs[] = {75, 80, 86, 87, 89, 90, 100, 120};
    const int old_archs[] = {50, 52, 60, 70, 75, 80, 86, 89, 90};
    sj_toolchain fresh = toolchain(new_archs, 8), old = toolchain(old_archs, 9);
    expect_target(&fresh, 90, 90, 90, 0);   /* exact match: CUBIN */
    expect_target(&old, 88, 88, 86, 0);     /* sm_88 device, no sm_88: sm_86 CUBIN runs on it */
    expect_target(&old, 120, 120, 90, 1);   /* GPU newer than NVRTC: PTX */
    expect_target(&fresh, 80, 90, 80, 1);   /* SSMJIT_ARCH=sm_80 on an sm_90 device: PTX */
    expect_target(&fresh, 80, 89, 80, 0);   /* ... on an sm_89 device the sm_80 CUBIN runs */
    expect_target(&fresh, 121, 121, 120, 0);
    int a, p;
    assert_int_equal(sj_arch_target(&fresh, 70, 70, &a, &p), SSMJIT_ERR_UNSUPPORTED);
    assert_non_null(strstr(ssmjit_last_error(), "sm_70"));
}

static void test_names(void **state)
{
    (void)state;
    char buf[32];
    sj_arch_name(90, 0, buf, sizeof buf);
    assert_string_equal(buf, "sm_90");
    sj_arch_name(120, 1, buf, sizeof buf);
    assert_string_equal(buf, "compute_120");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_parse), cmocka_unit_test(test_target),
                                       cmocka_unit_test(test_names)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
