/* Status names, the thread-local error detail and the version string.
 * Bad arguments to every function are in test_bad_input.c. */
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
    const char *seen[SSMJIT_ERR_CUBLAS_NOT_FOUND + 1];
    for (int s = SSMJIT_OK; s <= SSMJIT_ERR_CUBLAS_NOT_FOUND; s++) {
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






static void test_dtype_sizes(void **state)
{
    (void)state;
    assert_int_equal(ssmjit_dtype_size(SSMJIT_F32), 4);
    assert_int_equal(ssmjit_dtype_size(SSMJIT_F16), 2);
    assert_int_equal(ssmjit_dtype_size(SSMJIT_BF16), 2);
    assert_string_equal(ssmjit_version_string(), "0.1.0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_last_error_is_per_thread),
        cmocka_unit_test(test_dtype_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
