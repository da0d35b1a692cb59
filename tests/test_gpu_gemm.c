/* sj_gemm on the GPU against a double reference: every A/B and C dtype
 * pair, the four transpose combinations, odd sizes, contiguous and
 * strided operands (inside NaN padding that must be neither read nor
 * written), alpha and beta other than 1 and 0 (C NaN-poisoned where beta
 * is 0, so cuBLAS must not read it), k = 0, a long k (split-K, with its
 * workspace), TF32, application streams, and a thread whose current
 * context is another one; the skinny kernels (forced, and by the rule at
 * a decode step's shapes) at every form, splits of k and tails. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <math.h>
#include <stdlib.h>

#include "driver.h"
#include "context.h"
#include "gemm.h"
#include "gpu_util.h"
#include "test_util.h"
#include "validate.h"

typedef struct gemm_case {
    ssmjit_dtype ab, c;
    int64_t m, n, k;
    int trans_a, trans_b, strided, tf32;
    float alpha, beta;
    int skinny; /* the case must take the skinny kernels */
} gemm_case;

/* The dtype pairs sj_gemm takes. */
static const ssmjit_dtype pairs[][2] = {
    {SSMJIT_F32, SSMJIT_F32},  {SSMJIT_F16, SSMJIT_F16}, {SSMJIT_F16, SSMJIT_F32},
    {SSMJIT_BF16, SSMJIT_BF16}, {SSMJIT_BF16, SSMJIT_F32},
};

/* Products of 16-bit inputs are exact in f32, so only the f32 sums and,
 * for a 16-bit C, its rounding separate the result from the reference;
 * TF32 rounds the f32 inputs to 10 mantissa bits. */
static double tolerance(const gemm_case *g)
{
    if (g->c != SSMJIT_F32)
        return gu_tolerance(g->c);
    return g->ab == SSMJIT_F32 && g->tf32 ? 2e-3 : 1e-5;
}

/* alpha op(A) op(B) + beta C0 (beta 0: C0 is not read), row-major, and
 * the scale of each element's error: |alpha op(A) op(B)| + |beta C0|.
 * The device rounds the two terms before it adds them, so where they
 * cancel its error is relative to them, not to their sum. */
static void reference(const gemm_case *g, const double *a, const double *b, const double *c0, double *c,
                      double *scale)
{
    for (int64_t i = 0; i < g->m; i++)
        for (int64_t j = 0; j < g->n; j++) {
            double sum = 0;
            for (int64_t l = 0; l < g->k; l++)
                sum += (g->trans_a ? a[l * g->m + i] : a[i * g->k + l]) *
                       (g->trans_b ? b[j * g->k + l] : b[l * g->n + j]);
            double cterm = g->beta != 0 ? g->beta * c0[i * g->n + j] : 0;
            c[i * g->n + j] = g->alpha * sum + cterm;
            scale[i * g->n + j] = fabs(g->alpha * sum) + fabs(cterm);
        }
}


static gu_view upload_random(double *host, size_t rows, size_t w, ssmjit_dtype dtype, int strided)
{
    tu_fill_uniform(host, rows * w, -1.0, 1.0);
    return gu_view_upload(host, rows, w, dtype, strided);
}

/* Runs one case on `stream` and checks C (and the padding around it). */
static void check_case(sj_blas *blas, const gemm_case *g, void *stream)
{
    size_t m = (size_t)g->m, n = (size_t)g->n, k = (size_t)g->k;
    double *a = tu_doubles(m * k), *b = tu_doubles(k * n), *c0 = tu_doubles(m * n);
    double *got = tu_doubles(m * n), *want = tu_doubles(m * n), *scale = tu_doubles(m * n);
    gu_view va = upload_random(a, g->trans_a ? k : m, g->trans_a ? m : k, g->ab, g->strided);
    gu_view vb = upload_random(b, g->trans_b ? n : k, g->trans_b ? k : n, g->ab, g->strided);
    gu_view vc = g->beta != 0 ? upload_random(c0, m, n, g->c, g->strided)
                              : gu_view_poisoned(m, n, g->c, g->strided);
    ssmjit_matrix ma = gu_view_matrix(&va), mb = gu_view_matrix(&vb), mc = gu_view_matrix(&vc);
    sj_gemm_desc d = {.ab_dtype = g->ab, .c_dtype = g->c, .m = g->m, .n = g->n, .k = g->k,
                      .a = k ? ma.data : NULL, .lda = ma.stride, .trans_a = g->trans_a,
                      .b = k ? mb.data : NULL, .ldb = mb.stride, .trans_b = g->trans_b,
                      .c = mc.data, .ldc = mc.stride, .alpha = g->alpha, .beta = g->beta,
                      .allow_tf32 = g->tf32};
    sj_gemm_skinny plan;
    if (g->skinny && !sj_gemm_skinny_for(blas, blas->path, &d, &plan))
        fail_msg("m %lld n %lld k %lld: not the skinny kernels", (long long)g->m, (long long)g->n, (long long)g->k);
    ssmjit_status st = sj_gemm(blas, &d, stream);
    if (st != SSMJIT_OK)
        fail_msg("%s: %s", ssmjit_status_string(st), ssmjit_last_error());
    gu_sync();
    gu_view_download(got, &vc);
    reference(g, a, b, c0, want, scale);
    double err = tu_scaled_err(got, want, scale, m * n);
    if (!(err <= tolerance(g)))
        fail_msg("%s x %s -> %s, m %lld n %lld k %lld, trans %d%d, strided %d, tf32 %d, alpha %g beta %g: "
                 "relative error %g > %g",
                 sj_dtype_suffix(g->ab), sj_dtype_suffix(g->ab), sj_dtype_suffix(g->c), (long long)g->m,
                 (long long)g->n, (long long)g->k, g->trans_a, g->trans_b, g->strided, g->tf32,
                 (double)g->alpha, (double)g->beta, err, tolerance(g));
    gu_view_free(&va);
    gu_view_free(&vb);
    gu_view_free(&vc);
    free(a);
    free(b);
    free(c0);
    free(got);
    free(want);
    free(scale);
}

static sj_blas *blas_on(ssmjit_context *ctx)
{
    sj_blas *blas = NULL;
    ssmjit_status st = sj_blas_create(ctx, &blas);
    if (st != SSMJIT_OK)
        fail_msg("%s: %s", ssmjit_status_string(st), ssmjit_last_error());
    return blas;
}

/* Every dtype pair, transpose combination, layout and alpha/beta pair at
 * each size. */
static void test_pairs_transposes_sizes(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    static const int64_t sizes[][3] = {{1, 1, 1}, {7, 33, 1}, {33, 7, 257}, {257, 33, 7}, {1, 257, 33},
                                       {257, 257, 257}};
    static const float scales[][2] = {{1.0f, 0.0f}, {-0.75f, 1.5f}};
    sj_blas *blas = blas_on(ctx);
    for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++)
        for (int t = 0; t < 4; t++)
            for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
                for (int strided = 0; strided < 2; strided++)
                    for (size_t ab = 0; ab < sizeof scales / sizeof *scales; ab++) {
                        gemm_case g = {pairs[p][0], pairs[p][1], sizes[s][0], sizes[s][1], sizes[s][2],
                                       t & 1, t >> 1, strided, 0, scales[ab][0], scales[ab][1], 0};
                        check_case(blas, &g, NULL);
                    }
    sj_blas_destroy(blas);
    ssmjit_context_destroy(ctx);
}

/* TF32 where asked for, with f32 only; 16-bit inputs ignore the flag and
 * stay exact. */
static void test_tf32(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    sj_blas *blas = blas_on(ctx);
    for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++)
        for (int t = 0; t < 4; t++) {
            gemm_case g = {pairs[p][0], pairs[p][1], 129, 67, 515, t & 1, t >> 1, t == 2, 1, 1.25f,
                           t == 3 ? -0.5f : 0.0f, 0};
            check_case(blas, &g, NULL);
        }
    sj_blas_destroy(blas);
    ssmjit_context_destroy(ctx);
}

/* k = 0 gives C = beta C (0 where beta is 0, over a NaN C), with A and B
 * NULL; a long k, where cuBLAS splits the sum and reduces the parts in its
 * workspace, keeps the partial sums of a 16-bit C in f32. */
static void test_k_extremes(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    sj_blas *blas = blas_on(ctx);
    for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++)
        for (int strided = 0; strided < 2; strided++) {
            gemm_case empty = {pairs[p][0], pairs[p][1], 9, 17, 0, strided, !strided, strided, 0, 2.0f,
                               strided ? 0.0f : -1.5f, 0};
            check_case(blas, &empty, NULL);
            gemm_case deep = {pairs[p][0], pairs[p][1], 16, 24, 20000, strided, strided, strided, 0, 0.5f,
                              strided ? 1.0f : 0.0f, 0};
            check_case(blas, &deep, NULL);
        }
    sj_blas_destroy(blas);
    ssmjit_context_destroy(ctx);
}

/* GEMMs alternate between two application streams and the default one
 * (each change hands the workspace over again), and run from a thread
 * whose current context is not the library's: it is made current for the
 * call and the thread's own restored. */
static void test_streams_and_foreign_context(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    const sj_driver *d;
    assert_int_equal(sj_driver_get(&d), SSMJIT_OK);
    CUstream streams[3] = {NULL, NULL, NULL};
    assert_int_equal(SJ_CU(d, StreamCreate, &streams[1], CU_STREAM_NON_BLOCKING), SSMJIT_OK);
    assert_int_equal(SJ_CU(d, StreamCreate, &streams[2], CU_STREAM_NON_BLOCKING), SSMJIT_OK);
    sj_blas *blas = blas_on(ctx);
    for (int i = 0; i < 9; i++) {
        gemm_case g = {SSMJIT_BF16, SSMJIT_F32, 65, 31, 4000, i & 1, 0, i % 3 == 0, 0, 1.0f, 0.0f, 0};
        check_case(blas, &g, streams[(i * 2) % 3]);
    }

    /* 3 * 1 * 1 = 3 with another context current on this thread. */
    float one = 1.0f, got = 0.0f;
    void *x = gu_alloc(sizeof one), *y = gu_alloc(sizeof one);
    gu_upload(x, &one, sizeof one);
    gu_poison(y, sizeof one);
    sj_gemm_desc three = {.ab_dtype = SSMJIT_F32, .c_dtype = SSMJIT_F32, .m = 1, .n = 1, .k = 1,
                          .a = x, .b = x, .c = y, .alpha = 3.0f};
    CUcontext own, other, now;
    assert_int_equal(SJ_CU(d, CtxGetCurrent, &own), SSMJIT_OK);
    assert_int_equal(SJ_CU(d, CtxCreate, &other, 0, 0), SSMJIT_OK); /* and pushed: current */
    ssmjit_status st = sj_gemm(blas, &three, streams[1]);
    if (st != SSMJIT_OK)
        fail_msg("%s: %s", ssmjit_status_string(st), ssmjit_last_error());
    assert_int_equal(SJ_CU(d, CtxGetCurrent, &now), SSMJIT_OK);
    assert_ptr_equal(now, other);
    assert_int_equal(SJ_CU(d, CtxDestroy, other), SSMJIT_OK);
    assert_int_equal(SJ_CU(d, CtxSetCurrent, own), SSMJIT_OK);
    assert_int_equal(SJ_CU(d, StreamSynchronize, streams[1]), SSMJIT_OK);
    gu_download(&got, y, sizeof got);
    assert_true(got == 3.0f);
    gu_free(x);
    gu_free(y);

    sj_blas_destroy(blas);
    for (int i = 1; i < 3; i++)
        assert_int_equal(SJ_CU(d, StreamDestroy, streams[i]), SSMJIT_OK);
    ssmjit_context_destroy(ctx);
}

/* A context on a GPU the skinny kernels run on (sm_80 on); elsewhere
 * the test is skipped. */
static ssmjit_context *skinny_context(void)
{
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    if (sj_context_props(ctx)->cc_major < 8) {
        ssmjit_context_destroy(ctx);
        skip();
    }
    tu_seed();
    return ctx;
}

/* The skinny kernels, forced: each 16-bit type with C in it and in f32,
 * A's rows in one, two and four 16-row tiles and past them (more tiles),
 * W's rows short of a warp's and a block's 64 and past them, k a single
 * partial chunk, short of a split and split many ways (the parts summed
 * by the last block of a tile), in contiguous and padded operands, with
 * alpha and beta; then the shapes the rule gives them. */
static void test_skinny(void **state)
{
    (void)state;
    ssmjit_context *ctx = skinny_context();
    static const int64_t ms[] = {1, 5, 16, 17, 40, 64, 100, 256};
    static const int64_t nks[][2] = {{1, 8}, {7, 40}, {80, 1536}, {200, 48}, {1000, 776}, {130, 4104}};
    static const ssmjit_dtype skinny_pairs[][2] = {
        {SSMJIT_F16, SSMJIT_F16}, {SSMJIT_F16, SSMJIT_F32}, {SSMJIT_BF16, SSMJIT_BF16}, {SSMJIT_BF16, SSMJIT_F32}};
    sj_blas *blas = blas_on(ctx);
    sj_gemm_force(blas, SJ_GEMM_SKINNY);
    int i = 0;
    for (size_t mi = 0; mi < sizeof ms / sizeof *ms; mi++)
        for (size_t s = 0; s < sizeof nks / sizeof *nks; s++, i++) {
            const ssmjit_dtype *p = skinny_pairs[i % 4];
            gemm_case g = {p[0], p[1], ms[mi], nks[s][0], nks[s][1], 0, 1, i % 3 == 1 ? GU_ALIGNED_PADDING : 0,
                           0, i % 2 ? -0.75f : 1.0f, i % 2 ? 1.5f : 0.0f, 1};
            check_case(blas, &g, NULL);
        }
    /* by the rule, where it takes them: its table's shapes at their largest m */
    sj_gemm_force(blas, SJ_GEMM_RULE);
    static const int64_t by_rule[][3] = {{1, 768, 1536}, {1, 1536, 48}, {8, 160, 4096}};
    for (size_t s = 0; s < sizeof by_rule / sizeof *by_rule; s++) {
        gemm_case g = {SSMJIT_BF16, SSMJIT_BF16, by_rule[s][0], by_rule[s][1], by_rule[s][2], 0, 1, 0, 0, 1.0f, 0.0f,
                       1};
        check_case(blas, &g, NULL);
    }
    sj_blas_destroy(blas);
    ssmjit_context_destroy(ctx);
}

/* A product whose k is split: the same bits on every run, whichever of a
 * tile's blocks comes last. */
static void test_skinny_reproducible(void **state)
{
    (void)state;
    ssmjit_context *ctx = skinny_context();
    const int64_t m = 64, n = 80, k = 4096;
    double *a = tu_doubles((size_t)(m * k)), *w = tu_doubles((size_t)(n * k));
    tu_fill_uniform(a, (size_t)(m * k), -1.0, 1.0);
    tu_fill_uniform(w, (size_t)(n * k), -1.0, 1.0);
    void *da = gu_upload_new(a, (size_t)(m * k), SSMJIT_BF16), *dw = gu_upload_new(w, (size_t)(n * k), SSMJIT_BF16);
    float *dc = gu_alloc((size_t)(m * n) * sizeof(float));
    float *first = malloc((size_t)(m * n) * sizeof *first), *again = malloc((size_t)(m * n) * sizeof *again);
    sj_blas *blas = blas_on(ctx);
    sj_gemm_force(blas, SJ_GEMM_SKINNY);
    sj_gemm_desc d = {.ab_dtype = SSMJIT_BF16, .c_dtype = SSMJIT_F32, .m = m, .n = n, .k = k, .a = da, .b = dw,
                      .trans_b = 1, .c = dc, .alpha = 1.0f};
    sj_gemm_skinny plan;
    assert_true(sj_gemm_skinny_for(blas, blas->path, &d, &plan));
    assert_true(plan.splits > 1);
    for (int run = 0; run < 20; run++) {
        gu_poison(dc, (size_t)(m * n) * sizeof(float));
        assert_int_equal(sj_gemm(blas, &d, NULL), SSMJIT_OK);
        gu_sync();
        gu_download(run ? again : first, dc, (size_t)(m * n) * sizeof(float));
        if (run)
            assert_memory_equal(first, again, (size_t)(m * n) * sizeof(float));
    }
    sj_blas_destroy(blas);
    gu_free(da);
    gu_free(dw);
    gu_free(dc);
    free(a);
    free(w);
    free(first);
    free(again);
    ssmjit_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs_transposes_sizes),
        cmocka_unit_test(test_tf32),
        cmocka_unit_test(test_k_extremes),
        cmocka_unit_test(test_streams_and_foreign_context),
        cmocka_unit_test(test_skinny),
        cmocka_unit_test(test_skinny_reproducible),
    };
    tu_apply_test_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
