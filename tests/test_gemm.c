/* cuBLAS loading and the GEMM's no-op cases, without a GPU.  Bad
 * descriptors are rows of test_bad_input.c; the arithmetic is
 * test_gpu_gemm.c's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "context.h"
#include "gemm.h"
#include "test_util.h"

#define ABSENT "/nonexistent/libcublas.so"

/* In a fresh process (the loader keeps its first answer): with
 * SSMJIT_CUBLAS_PATH naming no file, opening cuBLAS fails, names that file
 * and nothing else, fails the same way again, and sj_blas_create reports
 * it before touching the context, leaving *out NULL.  With `ahead`, the
 * opening was first started on the pool (sj_cublas_open_ahead, twice), as
 * a model does, and all of that holds the same. */
static int absent_child(const char *path, int ahead)
{
    setenv("SSMJIT_CUBLAS_PATH", path, 1);
    if (ahead) {
        sj_cublas_open_ahead();
        sj_cublas_open_ahead();
    }
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
    assert_int_equal(tu_run_self("--absent-ahead-child", ABSENT), 0);
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

/* An H200's properties, as the context reads them. */
static const sj_device_props h200 = {9, 0, 132, 2048, 232448, 233472, 52428800};

/* A skinny-shaped product: A [m, k], W [n, k] bf16, contiguous and
 * aligned (the pointers are never dereferenced). */
static sj_gemm_desc skinny_desc(int64_t m, int64_t n, int64_t k, int64_t lds[3])
{
    lds[0] = k;
    lds[1] = k;
    lds[2] = n;
    return (sj_gemm_desc){.ab_dtype = SSMJIT_BF16, .c_dtype = SSMJIT_BF16, .m = m, .n = n, .k = k,
                          .a = (void *)(uintptr_t)0x10000, .b = (void *)(uintptr_t)0x20000, .trans_b = 1,
                          .c = (void *)(uintptr_t)0x30000, .alpha = 1.0f};
}

/* What the skinny kernels cannot take goes to cuBLAS, forced or not. */
static void test_skinny_refuses(void **state)
{
    (void)state;
    int64_t lds[3];
    sj_gemm_skinny plan;
    sj_gemm_desc d = skinny_desc(8, 160, 4096, lds);
    assert_true(sj_gemm_skinny_plan(&h200, &d, lds, 0, &plan));
    sj_device_props turing = h200;
    turing.cc_major = 7;
    turing.cc_minor = 5;
    assert_false(sj_gemm_skinny_plan(&turing, &d, lds, 1, &plan));
    sj_gemm_desc bad = d;
    bad.ab_dtype = bad.c_dtype = SSMJIT_F32;
    assert_false(sj_gemm_skinny_plan(&h200, &bad, lds, 1, &plan));
    bad = d;
    bad.trans_a = 1;
    assert_false(sj_gemm_skinny_plan(&h200, &bad, lds, 1, &plan));
    bad = d;
    bad.trans_b = 0;
    assert_false(sj_gemm_skinny_plan(&h200, &bad, lds, 1, &plan));
    bad = d;
    bad.a = (const char *)d.a + 8;
    assert_false(sj_gemm_skinny_plan(&h200, &bad, lds, 1, &plan));
    bad = d;
    bad.b = (const char *)d.b + 2;
    assert_false(sj_gemm_skinny_plan(&h200, &bad, lds, 1, &plan));
    int64_t odd[3] = {lds[0] + 4, lds[1], lds[2]};
    assert_false(sj_gemm_skinny_plan(&h200, &d, odd, 1, &plan));
    odd[0] = lds[0];
    odd[1] = lds[1] + 1;
    assert_false(sj_gemm_skinny_plan(&h200, &d, odd, 1, &plan));
    sj_gemm_desc ragged = skinny_desc(8, 160, 4092, lds);
    assert_false(sj_gemm_skinny_plan(&h200, &ragged, lds, 1, &plan));
    sj_gemm_desc empty = skinny_desc(8, 160, 0, lds);
    assert_false(sj_gemm_skinny_plan(&h200, &empty, lds, 1, &plan));
    /* rows and k past what the kernels index in int */
    sj_gemm_desc tall = skinny_desc(8, INT_MAX - 63, 4096, lds);
    assert_false(sj_gemm_skinny_plan(&h200, &tall, lds, 1, &plan));
    tall.n = INT_MAX - 64;
    assert_true(sj_gemm_skinny_plan(&h200, &tall, lds, 1, &plan));
    sj_gemm_desc deep = skinny_desc(8, 160, ((int64_t)1 << 30) + 8, lds);
    assert_false(sj_gemm_skinny_plan(&h200, &deep, lds, 1, &plan));
}

/* The rule: its table's shapes up to their m, nothing else; forced, any
 * shape the kernels can take, in the form for its m, with a split of k
 * that covers every chunk once, fits the workspace, and leaves no split
 * empty. */
static void test_skinny_rule_and_plans(void **state)
{
    (void)state;
    int64_t lds[3];
    sj_gemm_skinny plan;
    static const int64_t table[][3] = {{1, 768, 1536}, {1, 1536, 48}, {8, 160, 4096}};
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        for (int64_t m = 1; m <= table[i][0] + 1; m++) {
            sj_gemm_desc d = skinny_desc(m, table[i][1], table[i][2], lds);
            assert_int_equal(sj_gemm_skinny_plan(&h200, &d, lds, 0, &plan), m <= table[i][0]);
        }
    }
    assert_int_equal(sj_gemm_skinny_form(768, 1536), 16);
    assert_int_equal(sj_gemm_skinny_form(160, 4096), 16);
    assert_int_equal(sj_gemm_skinny_form(3072, 768), 0);
    static const int64_t shapes[][2] = {{3072, 768}, {80, 1536}, {50280, 768}, {8192, 2048}, {7, 40}, {1, 8}};
    static const int64_t ms[] = {1, 8, 16, 17, 32, 33, 64, 65, 256, 1000};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
            sj_gemm_desc d = skinny_desc(ms[i], shapes[s][0], shapes[s][1], lds);
            assert_false(sj_gemm_skinny_plan(&h200, &d, lds, 0, &plan));
            assert_true(sj_gemm_skinny_plan(&h200, &d, lds, 1, &plan));
            int64_t rows_a = ms[i] <= 16 ? 16 : ms[i] <= 32 ? 32 : 64, chunks = (shapes[s][1] + 31) / 32;
            int64_t tiles_n = (shapes[s][0] + 63) / 64;
            assert_int_equal(plan.rows_a, rows_a);
            assert_int_equal(plan.tiles_m, (ms[i] + rows_a - 1) / rows_a);
            assert_true(plan.splits >= 1 && plan.split_chunks >= 1);
            assert_true((int64_t)plan.splits * plan.split_chunks >= chunks);
            assert_true((int64_t)(plan.splits - 1) * plan.split_chunks < chunks);
            assert_true(plan.blocks_n >= 1 && plan.blocks_n <= tiles_n);
            if (plan.splits > 1) {
                assert_int_equal(plan.blocks_n, tiles_n);
                assert_true((size_t)tiles_n * plan.tiles_m * plan.splits * rows_a * 256 <= (size_t)8 << 20);
            }
        }
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--absent-child"))
        return absent_child(argv[2], 0);
    if (argc == 3 && !strcmp(argv[1], "--absent-ahead-child"))
        return absent_child(argv[2], 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_skinny_refuses),
        cmocka_unit_test(test_skinny_rule_and_plans),
        cmocka_unit_test(test_absent),
        cmocka_unit_test(test_default_search),
        cmocka_unit_test(test_empty_is_a_no_op),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
