/* Status names, the thread-local error detail, and argument checking that
 * needs no GPU and no NVRTC. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ssmjit.h"

static void test_status_names(void **state)
{
    (void)state;
    const char *seen[SSMJIT_ERR_INTERNAL + 1];
    for (int s = SSMJIT_OK; s <= SSMJIT_ERR_INTERNAL; s++) {
        seen[s] = ssmjit_status_string((ssmjit_status)s);
        assert_non_null(seen[s]);
        assert_true(strncmp(seen[s], "SSMJIT_", 7) == 0);
        assert_string_not_equal(seen[s], "SSMJIT_UNKNOWN_STATUS");
        for (int t = 0; t < s; t++)
            assert_string_not_equal(seen[s], seen[t]);
    }
    assert_string_equal(ssmjit_status_string((ssmjit_status)999), "SSMJIT_UNKNOWN_STATUS");
    assert_string_equal(ssmjit_status_string(SSMJIT_ERR_INVALID_ARG), "SSMJIT_ERR_INVALID_ARG");
}

static void *other_thread(void *arg)
{
    (void)arg;
    return (void *)ssmjit_last_error();
}

static void test_last_error_is_per_thread(void **state)
{
    (void)state;
    assert_int_equal(ssmjit_context_create(NULL, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "out is NULL"));
    pthread_t t;
    void *msg;
    assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
    assert_int_equal(pthread_join(t, &msg), 0);
    assert_string_equal((const char *)msg, "");
    assert_non_null(strstr(ssmjit_last_error(), "out is NULL"));
}

static void test_bad_context_options(void **state)
{
    (void)state;
    ssmjit_context *ctx = (ssmjit_context *)&ctx;
    ssmjit_context_options o;
    ssmjit_context_options_init(&o);
    o.struct_size = 0;
    assert_int_equal(ssmjit_context_create(&o, &ctx), SSMJIT_ERR_INVALID_ARG);
    assert_null(ctx);
    assert_non_null(strstr(ssmjit_last_error(), "struct_size"));

    ssmjit_context_options_init(&o);
    o.fast_math = (ssmjit_fast_math)7;
    assert_int_equal(ssmjit_context_create(&o, &ctx), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "fast_math"));

    ssmjit_context_options_init(&o);
    o.device = -1;
    assert_int_equal(ssmjit_context_create(&o, &ctx), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "device"));

    ssmjit_context_options_init(&o);
    const char *defines[] = {"GOOD=1", "has space"};
    o.defines = defines;
    o.num_defines = 2;
    assert_int_equal(ssmjit_context_create(&o, &ctx), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "defines[1]"));
}

static void expect_env_rejected(const char *name, const char *value)
{
    ssmjit_context *ctx;
    setenv(name, value, 1);
    assert_int_equal(ssmjit_context_create(NULL, &ctx), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), name));
    unsetenv(name);
}

static void test_bad_environment(void **state)
{
    (void)state;
    expect_env_rejected("SSMJIT_ARCH", "sm_9x");
    expect_env_rejected("SSMJIT_ARCH", "sm_90a");
    expect_env_rejected("SSMJIT_CACHE", "sometimes");
    expect_env_rejected("SSMJIT_FAST_MATH", "2");
    expect_env_rejected("SSMJIT_DETERMINISTIC", "yes");
}

static void test_null_arguments(void **state)
{
    (void)state;
    int was_cached;
    ssmjit_prewarm_options p;
    ssmjit_prewarm_options_init(&p);
    assert_int_equal(ssmjit_prewarm_module(NULL, 0, &was_cached), SSMJIT_ERR_INVALID_ARG);
    assert_int_equal(ssmjit_prewarm_module(&p, 0, NULL), SSMJIT_ERR_INVALID_ARG);
    /* arch is required */
    assert_int_equal(ssmjit_prewarm_module(&p, 0, &was_cached), SSMJIT_ERR_INVALID_ARG);
    p.arch = "sm_8";
    assert_int_equal(ssmjit_prewarm_module(&p, 0, &was_cached), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "sm_8"));
    p.arch = "sm_80";
    assert_int_equal(ssmjit_prewarm_module(&p, ssmjit_module_count(), &was_cached), SSMJIT_ERR_INVALID_ARG);
    assert_int_equal(ssmjit_cache_verify(NULL, 0, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_int_equal(ssmjit_cache_resolve_dir(NULL, NULL, 10), SSMJIT_ERR_INVALID_ARG);
    assert_int_equal(ssmjit_driver_version(NULL), SSMJIT_ERR_INVALID_ARG);
    assert_int_equal(ssmjit_device_count(NULL), SSMJIT_ERR_INVALID_ARG);
    assert_int_equal(ssmjit_device_get_info(0, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_int_equal(ssmjit_nvrtc_version(NULL, NULL, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_int_equal(ssmjit_nvrtc_supported_archs(NULL, 4, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_int_equal(ssmjit_context_get_info(NULL, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_int_equal(ssmjit_context_load_all(NULL), SSMJIT_ERR_INVALID_ARG);
    ssmjit_context_destroy(NULL);
    assert_null(ssmjit_module_name(ssmjit_module_count()));
    assert_non_null(ssmjit_module_name(0));
}

static void test_ops_reject_null_context(void **state)
{
    (void)state;
    ssmjit_unary_desc d = {SSMJIT_F32, 4, 4};
    ssmjit_matrix m = {(void *)16, 0};
    assert_int_equal(ssmjit_activation_fwd(NULL, SSMJIT_ACT_SILU, &d, m, m, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "ctx"));
    assert_int_equal(ssmjit_gate_bwd(NULL, &d, m, m, m, m, m, NULL), SSMJIT_ERR_INVALID_ARG);
}

static void test_dtype_sizes(void **state)
{
    (void)state;
    assert_int_equal(ssmjit_dtype_size(SSMJIT_F32), 4);
    assert_int_equal(ssmjit_dtype_size(SSMJIT_F16), 2);
    assert_int_equal(ssmjit_dtype_size(SSMJIT_BF16), 2);
    assert_int_equal(ssmjit_dtype_size((ssmjit_dtype)3), 0);
    assert_string_equal(ssmjit_version_string(), "0.1.0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_names),        cmocka_unit_test(test_last_error_is_per_thread),
        cmocka_unit_test(test_bad_context_options), cmocka_unit_test(test_bad_environment),
        cmocka_unit_test(test_null_arguments),      cmocka_unit_test(test_ops_reject_null_context),
        cmocka_unit_test(test_dtype_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
