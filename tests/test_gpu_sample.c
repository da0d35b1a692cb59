/* Token sampling (src/ops/ops_sample.h) on the GPU against the double
 * reference (tests/ref_sample.c) at the same step counters: random logits
 * in f32, f16 and bf16 (normal at several scales, small integers with ties
 * everywhere, -inf entries, rows with NaN, +inf or nothing but -inf), 1 to
 * 100 rows of vocab 50280 and 37, strided views, every row its own
 * temperature, top-k, top-p, seed and step (the counter's high word
 * carried into), under both fast-math settings, outputs poisoned.  The
 * token must be the reference's except where the reference's u times the
 * total or its top-p cut lies within a few parts in a million of a
 * boundary between two tokens (the GPU weighs in f32), and such rows must
 * be rare.  Every counter advances by one a call; the same counters give
 * the same tokens bit for bit; and the draws of many rows with their own
 * seeds over a small vocab pass the chi-square against the reference's
 * probabilities. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "ops_sample.h"
#include "ref_sample.h"
#include "test_util.h"
#include "validate.h"

/* Relative distance from a boundary within which the GPU's f32 weights
 * may take the neighbouring token: weights to a few ulps over exponents
 * down to -33, and fixed-point steps of 2^-33 of the best token's weight
 * summed over 50280 tokens. */
#define BOUNDARY_TOL 2e-5

static const ssmjit_dtype dtypes[] = {SSMJIT_F32, SSMJIT_F16, SSMJIT_BF16};

static void check(ssmjit_status st)
{
    if (st != SSMJIT_OK)
        fail_msg("%s: %s", ssmjit_status_string(st), ssmjit_last_error());
}

static uint64_t random_u64(void)
{
    uint64_t v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 16 | (uint64_t)tu_uniform(0, 65536);
    return v;
}

/* Row r's logits: mostly what a language model gives, and the rows that
 * need rules of their own. */
static void fill_row(double *x, size_t cols, size_t r)
{
    static const double scales[] = {1.0, 3.0, 8.0};
    const int kind = (int)(r % 11);
    for (size_t j = 0; j < cols; j++)
        x[j] = kind == 3 ? floor(tu_uniform(-4, 4)) : scales[r % 3] * tu_normal();
    const size_t a = (size_t)tu_uniform(0, (double)cols);
    if (kind == 4) /* -inf entries weigh nothing */
        for (size_t j = 0; j < cols; j += 3)
            x[j] = -INFINITY;
    else if (kind == 6)
        x[a] = NAN;
    else if (kind == 8)
        x[a] = INFINITY;
    else if (kind == 10 && r % 2 == 0)
        for (size_t j = 0; j < cols; j++)
            x[j] = -INFINITY;
}

/* Row r's parameters: greedy ones, every kind of top-k and top-p, and
 * temperatures from sharp to flat. */
static sj_sample_params row_params(size_t r, size_t cols)
{
    static const float temperature[] = {1.0f, 0.7f, 0.3f, 1.5f, 0.0f, 1.0f, 2.0f, -1.0f, INFINITY, 0.05f, NAN};
    static const float top_p[] = {1.0f, 0.9f, 0.5f, 0.95f, 0.0f, 0.999f, 1e-30f, 0.7f, 2.0f};
    const int32_t top_k[] = {0, 50, 1, 2, 5, (int32_t)cols, (int32_t)cols + 3, -1, 1000, (int32_t)cols - 1, 20};
    const size_t n = (size_t)tu_uniform(0, 1000);
    return (sj_sample_params){.temperature = temperature[n % 11],
                              .top_k = top_k[(n / 11) % 11],
                              .top_p = top_p[(n / 121) % 9],
                              .seed = r % 7 == 0 ? r : random_u64()};
}

typedef struct sample_case {
    ssmjit_dtype dtype;
    size_t rows, cols;
    int strided;
} sample_case;

/* Runs `calls` calls on one set of logits, each against the reference at
 * the counters it started from; returns the rows allowed a boundary
 * mismatch and adds the rows compared to *compared. */
static int check_case(ssmjit_context *ctx, const sample_case *c, int calls, size_t *compared)
{
    const size_t rows = c->rows, cols = c->cols;
    double *x = tu_doubles(rows * cols);
    sj_sample_params *p = malloc(rows * sizeof *p);
    uint64_t *steps = malloc(rows * sizeof *steps), *got_steps = malloc(rows * sizeof *steps);
    int32_t *got = malloc(rows * sizeof *got), *first = malloc(rows * sizeof *first);
    assert_true(p && steps && got_steps && got && first);
    for (size_t r = 0; r < rows; r++) {
        fill_row(x + r * cols, cols, r);
        p[r] = row_params(r, cols);
        /* some counters carry into their high word within the calls */
        steps[r] = r % 5 == 0 ? UINT64_C(0xffffffff) - (uint64_t)(r % 3) : random_u64();
    }
    gu_view dx = gu_view_upload(x, rows, cols, c->dtype, c->strided); /* rounds x to the dtype */
    sj_sample_params *dp = gu_alloc(rows * sizeof *p);
    uint64_t *dsteps = gu_alloc(rows * sizeof *steps);
    int32_t *dout = gu_alloc(rows * sizeof *got);
    gu_upload(dp, p, rows * sizeof *p);
    gu_upload(dsteps, steps, rows * sizeof *steps);
    int near = 0;
    for (int call = 0; call < calls; call++) {
        gu_poison(dout, rows * sizeof *got);
        check(sj_sample_rows(ctx, c->dtype, (int64_t)rows, (int64_t)cols, gu_view_matrix(&dx), dp, dsteps, dout,
                             NULL));
        gu_download(got, dout, rows * sizeof *got);
        gu_download(got_steps, dsteps, rows * sizeof *steps);
        for (size_t r = 0; r < rows; r++) {
            ref_sample_info info;
            const int32_t want = ref_sample_row(x + r * cols, (int64_t)cols, &p[r], steps[r], r, NULL, &info);
            if (got_steps[r] != steps[r] + 1)
                fail_msg("%s [%zu, %zu] call %d row %zu: step %llu after %llu", sj_dtype_suffix(c->dtype), rows,
                         cols, call, r, (unsigned long long)got_steps[r], (unsigned long long)steps[r]);
            if (got[r] != want) {
                const double margin = fmin(info.draw_margin, info.top_p_margin);
                if (margin >= BOUNDARY_TOL)
                    fail_msg("%s [%zu, %zu] strided %d call %d row %zu (T %g, top_k %d, top_p %g, step %llu): token "
                             "%d, want %d (margin %.3g)",
                             sj_dtype_suffix(c->dtype), rows, cols, c->strided, call, r, (double)p[r].temperature,
                             p[r].top_k, (double)p[r].top_p, (unsigned long long)steps[r], got[r], want, margin);
                near++;
            }
            steps[r]++;
        }
        *compared += rows;
        if (call == 0)
            memcpy(first, got, rows * sizeof *got);
    }
    /* the counters of the first call again: the same tokens, bit for bit */
    for (size_t r = 0; r < rows; r++)
        steps[r] -= (uint64_t)calls;
    gu_upload(dsteps, steps, rows * sizeof *steps);
    gu_poison(dout, rows * sizeof *got);
    check(sj_sample_rows(ctx, c->dtype, (int64_t)rows, (int64_t)cols, gu_view_matrix(&dx), dp, dsteps, dout, NULL));
    gu_download(got, dout, rows * sizeof *got);
    for (size_t r = 0; r < rows; r++)
        if (got[r] != first[r])
            fail_msg("%s [%zu, %zu] row %zu: token %d, then %d from the same counter", sj_dtype_suffix(c->dtype),
                     rows, cols, r, first[r], got[r]);
    gu_view_free(&dx);
    gu_free(dp), gu_free(dsteps), gu_free(dout);
    free(x), free(p), free(steps), free(got_steps), free(got), free(first);
    return near;
}

static void check_against_reference(ssmjit_fast_math fast_math)
{
    ssmjit_context *ctx = gu_context(fast_math);
    tu_seed();
    static const size_t rows[] = {1, 3, 64, 100};
    int near = 0;
    size_t compared = 0;
    for (size_t d = 0; d < 3; d++)
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
            const sample_case big = {dtypes[d], rows[i], 50280, i == 1};
            const sample_case small = {dtypes[d], rows[i], 37, i == 2};
            near += check_case(ctx, &big, 2, &compared);
            near += check_case(ctx, &small, 3, &compared);
        }
    printf("# %zu rows compared, %d within %g of a boundary\n", compared, near, BOUNDARY_TOL);
    if ((size_t)near > 2 + compared / 500)
        fail_msg("%d of %zu rows were boundary mismatches", near, compared);
    ssmjit_context_destroy(ctx);
}

static void test_against_reference(void **state)
{
    (void)state;
    check_against_reference(SSMJIT_FAST_MATH_OFF);
}

static void test_against_reference_fast_math(void **state)
{
    (void)state;
    check_against_reference(SSMJIT_FAST_MATH_ON);
}

/* Many rows of the same small-vocab logits with their own seeds, over
 * several calls: the counts pass the chi-square against the reference's
 * probabilities (0 outside the kept set). */
static void test_distribution(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_DEFAULT);
    tu_seed();
    enum { COLS = 10, ROWS = 500, CALLS = 40 };
    static const double row[COLS] = {1.0, 0.5, 0.2, -0.3, 2.0, 0.0, -1.0, 1.5, 0.7, -0.5};
    const sj_sample_params kinds[] = {
        {.temperature = 0.8f, .top_k = 0, .top_p = 1.0f},
        {.temperature = 1.0f, .top_k = 4, .top_p = 1.0f},
        {.temperature = 1.0f, .top_k = 0, .top_p = 0.7f},
        {.temperature = 0.7f, .top_k = 6, .top_p = 0.9f},
    };
    for (size_t d = 0; d < 3; d++)
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            double *x = tu_doubles(ROWS * COLS);
            for (size_t r = 0; r < ROWS; r++)
                memcpy(x + r * COLS, row, sizeof row);
            gu_view dx = gu_view_upload(x, ROWS, COLS, dtypes[d], 0);
            sj_sample_params *p = malloc(ROWS * sizeof *p);
            uint64_t *steps = calloc(ROWS, sizeof *steps);
            int32_t *got = malloc(ROWS * sizeof *got);
            assert_true(p && steps && got);
            for (size_t r = 0; r < ROWS; r++) {
                p[r] = kinds[k];
                p[r].seed = random_u64();
            }
            sj_sample_params *dp = gu_alloc(ROWS * sizeof *p);
            uint64_t *dsteps = gu_alloc(ROWS * sizeof *steps);
            int32_t *dout = gu_alloc(ROWS * sizeof *got);
            gu_upload(dp, p, ROWS * sizeof *p);
            gu_upload(dsteps, steps, ROWS * sizeof *steps);
            int64_t counts[COLS] = {0};
            for (int call = 0; call < CALLS; call++) {
                gu_poison(dout, ROWS * sizeof *got);
                check(sj_sample_rows(ctx, dtypes[d], ROWS, COLS, gu_view_matrix(&dx), dp, dsteps, dout, NULL));
                gu_download(got, dout, ROWS * sizeof *got);
                for (size_t r = 0; r < ROWS; r++) {
                    assert_true(got[r] >= 0 && got[r] < COLS);
                    counts[got[r]]++;
                }
            }
            double prob[COLS], chi;
            ref_sample_row(x, COLS, &p[0], 0, 0, prob, NULL); /* x as the dtype holds it */
            if (!ref_chi_square_ok(counts, prob, COLS, (int64_t)ROWS * CALLS, &chi))
                fail_msg("%s T %g top_k %d top_p %g: chi-square %g", sj_dtype_suffix(dtypes[d]),
                         (double)kinds[k].temperature, kinds[k].top_k, (double)kinds[k].top_p, chi);
            gu_view_free(&dx);
            gu_free(dp), gu_free(dsteps), gu_free(dout);
            free(x), free(p), free(steps), free(got);
        }
    ssmjit_context_destroy(ctx);
}

/* rows = 0 touches nothing (the pointers need not be device memory). */
static void test_no_rows(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_DEFAULT);
    float logits;
    sj_sample_params p;
    uint64_t step;
    int32_t out;
    check(sj_sample_rows(ctx, SSMJIT_F32, 0, 50280, (ssmjit_matrix){&logits, 0, 0}, &p, &step, &out, NULL));
    ssmjit_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_against_reference_fast_math),
        cmocka_unit_test(test_distribution),
        cmocka_unit_test(test_no_rows),
    };
    tu_apply_test_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
