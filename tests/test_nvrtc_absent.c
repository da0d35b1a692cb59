/* With SSMJIT_NVRTC_PATH pointing nowhere, everything that needs NVRTC
 * fails with SSMJIT_ERR_NVRTC_NOT_FOUND and says what was tried. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "test_util.h"

static void test_version(void **state)
{
    (void)state;
    int major, minor;
    assert_int_equal(ssmjit_nvrtc_version(&major, &minor, NULL), SSMJIT_ERR_NVRTC_NOT_FOUND);
    assert_non_null(strstr(ssmjit_last_error(), "/nonexistent/libnvrtc.so"));
    assert_non_null(strstr(ssmjit_last_error(), "tried"));
}

static void test_prewarm(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    ssmjit_prewarm_options o;
    ssmjit_prewarm_options_init(&o);
    o.arch = "sm_80";
    o.cache_dir = dir;
    int cached;
    assert_int_equal(ssmjit_prewarm_unit(&o, 0, &cached), SSMJIT_ERR_NVRTC_NOT_FOUND);
    assert_non_null(strstr(ssmjit_last_error(), "/nonexistent/libnvrtc.so"));
    ssmjit_prewarm_result r;
    assert_int_equal(ssmjit_prewarm(&o, &r), SSMJIT_ERR_NVRTC_NOT_FOUND);
    assert_non_null(strstr(ssmjit_last_error(), "/nonexistent/libnvrtc.so"));
    tu_rmtree(dir);
    free(dir);
}

static void test_image(void **state)
{
    (void)state;
    sj_compile_spec spec = {.arch = 80};
    sj_cache_config off = {.mode = SSMJIT_CACHE_OFF, .quiet = 1};
    const void *image;
    size_t size;
    sj_image_job job = {0, &spec, &off, NULL, 1};
    assert_int_equal(sj_image_get(&job, &image, &size, NULL), SSMJIT_ERR_NVRTC_NOT_FOUND);
    size_t n;
    assert_int_equal(ssmjit_nvrtc_supported_archs(NULL, 0, &n), SSMJIT_ERR_NVRTC_NOT_FOUND);
}

int main(void)
{
    setenv("SSMJIT_NVRTC_PATH", "/nonexistent/libnvrtc.so", 1);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_version), cmocka_unit_test(test_prewarm),
                                       cmocka_unit_test(test_image)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
