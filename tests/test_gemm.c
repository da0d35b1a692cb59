/* cuBLAS loading and the GEMM's no-op cases, without a GPU.  Bad
 * descriptors are rows of test_bad_input.c; the arithmetic is
 * test_gpu_gemm.c's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "gemm.h"
#include "test_util.h"

#define ABSENT "/nonexistent/libcublas.so"

/* In a fresh process (the loader keeps its first answer): with
 * SSMJIT_CUBLAS_PATH naming no file, opening cuBLAS fails, names that file
 * and nothing else, fails the same way again, and sj_blas_create reports
 * it before touching the context, leaving *out NULL. */
static int absent_child(const char *path)
{
    setenv("SSMJIT_CUBLAS_PATH", path, 1);
    const sj_cublas *api = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (sj_cublas_get(&api) != SSMJIT_ERR_CUBLAS_NOT_FOUND || api)
            return 10 + attempt;
        const char *msg = ssmjit_last_error();
        if (!strstr(msg, "tried") || !strstr(msg, path) || strstr(msg, "libcublas.so.13")) {
            fprintf(stderr, "message: %s\n", msg);
            return 20 + attempt;
        }
    }
    ssmjit_context *untouched = calloc(1, sizeof *untouched); /* no driver: any use would crash */
    sj_blas *blas = (sj_blas *)&blas;
    ssmjit_status st = sj_blas_create(untouched, &blas);
    free(untouched);
    if (st != SSMJIT_ERR_CUBLAS_NOT_FOUND || blas)
        return 30;
    return strstr(ssmjit_last_error(), path) ? 0 : 31;
}

static void test_absent(void **state)
{
    (void)state;
    assert_int_equal(tu_run_self("--absent-child", ABSENT), 0);
}

/* The default search either opens a cuBLAS with every required entry
 * point, whose failures are named in SSMJIT_ERR_DRIVER messages, or says
 * it tried each of its names. */
static void test_default_search(void **state)
{
    (void)state;
    unsetenv("SSMJIT_CUBLAS_PATH");
    const sj_cublas *api = NULL;
    ssmjit_status st = sj_cublas_get(&api);
    if (st == SSMJIT_OK) {
        assert_non_null(api->Create);
        assert_non_null(api->Destroy);
        assert_non_null(api->SetStream);
        assert_non_null(api->SetWorkspace);
        assert_non_null(api->SetMathMode);
        assert_non_null(api->GemmEx);
        assert_int_equal(sj_cublas_result(api, 0, "cublasGemmEx"), SSMJIT_OK);
        assert_int_equal(sj_cublas_result(api, 7, "cublasGemmEx"), SSMJIT_ERR_DRIVER);
        assert_string_equal(ssmjit_last_error(), api->GetStatusName
                                                     ? "cublasGemmEx failed: CUBLAS_STATUS_INVALID_VALUE (7)"
                                                     : "cublasGemmEx failed: cuBLAS status (7)");
        return;
    }
    assert_int_equal(st, SSMJIT_ERR_CUBLAS_NOT_FOUND);
    const char *msg = ssmjit_last_error();
    assert_non_null(strstr(msg, "libcublas.so.13"));
    assert_non_null(strstr(msg, "libcublas.so.12"));
    assert_non_null(strstr(msg, "libcublas.so.11"));
}

/* m or n of 0 writes nothing and calls nothing: the handle, with no
 * context and no cuBLAS behind it, is never used. */
static void test_empty_is_a_no_op(void **state)
{
    (void)state;
    sj_blas nothing = {0};
    float c = 1.0f;
    sj_gemm_desc d = {.ab_dtype = SSMJIT_BF16, .c_dtype = SSMJIT_F32, .m = 0, .n = 3, .k = 2,
                      .b = &c, .c = NULL, .alpha = 1.0f};
    assert_int_equal(sj_gemm(&nothing, &d, NULL), SSMJIT_OK);
    d = (sj_gemm_desc){.ab_dtype = SSMJIT_F16, .c_dtype = SSMJIT_F16, .m = 3, .n = 0, .k = 2,
                       .a = &c, .alpha = 1.0f};
    assert_int_equal(sj_gemm(&nothing, &d, NULL), SSMJIT_OK);
    assert_memory_equal(&nothing, &(sj_blas){0}, sizeof nothing);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--absent-child"))
        return absent_child(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absent),
        cmocka_unit_test(test_default_search),
        cmocka_unit_test(test_empty_is_a_no_op),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
