/* The model layer's small ops (src/ops/ops_model.h) on the GPU against double
 * references on fresh random inputs, outputs poisoned with NaN: embedding
 * lookup in every (table, output) dtype pair with out-of-range ids clamped;
 * the embedding gradient with repeated ids, accumulating into a table
 * whose other rows stay untouched, bit for bit the same on a second run;
 * cross-entropy with ignored rows, the gradient beside or over the logits,
 * and the loss alone; argmax with ties, signed zeros and NaN; -exp with
 * expf's accuracy under both fast-math settings; f32 multiply.
 * Awkward sizes throughout: one row, more rows than a grid holds, vocab 1,
 * 11 and 50280, widths that are multiples of nothing, strided views. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "ops_model.h"
#include "test_util.h"
#include "validate.h"

static const ssmjit_dtype dtypes[] = {SSMJIT_F32, SSMJIT_F16, SSMJIT_BF16};

static void check(ssmjit_status st)
{
    if (st != SSMJIT_OK)
        fail_msg("%s: %s", ssmjit_status_string(st), ssmjit_last_error());
}

static int32_t *upload_i32(const int32_t *host, size_t n)
{
    int32_t *d = gu_alloc(n * sizeof *host);
    gu_upload(d, host, n * sizeof *host);
    return d;
}

static float *upload_f32(const float *host, size_t n)
{
    float *d = gu_alloc(n * sizeof *host);
    gu_upload(d, host, n * sizeof *host);
    return d;
}

static float *floats(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    assert_non_null(p);
    return p;
}

static int32_t *ints(size_t n)
{
    int32_t *p = malloc((n ? n : 1) * sizeof *p);
    assert_non_null(p);
    return p;
}

static double *normals(size_t n, double sigma)
{
    double *v = tu_doubles(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = sigma * tu_normal();
    return v;
}

static int32_t random_id(int64_t vocab) { return (int32_t)tu_uniform(0, (double)vocab); }

/* ------------------------------------------------------------------------ */
/* Embedding lookup                                                         */
/* ------------------------------------------------------------------------ */

static void check_embedding_fwd(ssmjit_context *ctx, ssmjit_dtype dt, ssmjit_dtype odt, size_t n,
                                size_t d, size_t vocab, int strided)
{
    double *table = normals(vocab * d, 1.0);
    int32_t *ids = ints(n);
    for (size_t t = 0; t < n; ++t)
        ids[t] = random_id((int64_t)vocab);
    /* Ids the host should have rejected: clamped to the first and last row. */
    if (n > 2) {
        ids[1] = -5;
        ids[n - 1] = (int32_t)vocab + 3;
    }
    void *dtable = gu_upload_new(table, vocab * d, dt);
    int32_t *dids = upload_i32(ids, n);
    gu_view out = gu_view_poisoned(n, d, odt, strided);
    check(sj_embedding_fwd(ctx, dt, (int64_t)n, (int64_t)d, (int64_t)vocab, dids, dtable,
                           gu_view_matrix(&out), odt, NULL));
    double *got = tu_doubles(n * d);
    gu_view_download(got, &out);
    for (size_t t = 0; t < n; ++t) {
        size_t row = ids[t] < 0 ? 0 : (size_t)ids[t] >= vocab ? vocab - 1 : (size_t)ids[t];
        for (size_t c = 0; c < d; ++c) {
            double want = gu_round(table[row * d + c], odt);
            if (got[t * d + c] != want)
                fail_msg("embedding_fwd %s->%s n %zu d %zu vocab %zu strided %d: out[%zu][%zu] = %g, "
                         "want %g (id %d)",
                         sj_dtype_suffix(dt), sj_dtype_suffix(odt), n, d, vocab, strided, t, c,
                         got[t * d + c], want, ids[t]);
        }
    }
    free(table), free(ids), free(got);
    gu_free(dtable), gu_free(dids);
    gu_view_free(&out);
}

static void test_embedding_fwd(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    for (size_t a = 0; a < 3; ++a)
        for (size_t b = 0; b < 3; ++b) {
            check_embedding_fwd(ctx, dtypes[a], dtypes[b], 1, 1, 1, 0);
            check_embedding_fwd(ctx, dtypes[a], dtypes[b], 7, 13, 11, 1);
            check_embedding_fwd(ctx, dtypes[a], dtypes[b], 29, 300, 50280, 0);
        }
    /* More rows than grid.y holds. */
    check_embedding_fwd(ctx, SSMJIT_BF16, SSMJIT_F32, 70000, 3, 50, 1);
    ssmjit_context_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Embedding gradient                                                       */
/* ------------------------------------------------------------------------ */

typedef struct embed_bwd_case {
    ssmjit_dtype dtype;
    size_t n, d, vocab;
    int strided;
    size_t hot; /* positions forced onto id 0, a token repeated that often */
} embed_bwd_case;

/* Plans on the host, uploads the plan, runs into a table holding `init`,
 * returns the table. */
static float *run_embedding_bwd(ssmjit_context *ctx, const embed_bwd_case *c, const int32_t *ids,
                                const gu_view *dy, const float *init)
{
    int32_t *order = ints(c->n), *seg_start = ints(c->n + 1), *seg_id = ints(c->n);
    int64_t nseg = 0;
    check(sj_embedding_bwd_plan(ids, (int64_t)c->n, order, seg_start, seg_id, &nseg));
    int32_t *dorder = upload_i32(order, c->n), *dstart = upload_i32(seg_start, (size_t)nseg + 1);
    int32_t *dseg = upload_i32(seg_id, (size_t)nseg);
    float *dtable = upload_f32(init, c->vocab * c->d);
    check(sj_embedding_bwd(ctx, c->dtype, (int64_t)c->n, (int64_t)c->d, nseg, dorder, dstart, dseg,
                           gu_view_matrix(dy), dtable, NULL));
    float *got = floats(c->vocab * c->d);
    gu_download(got, dtable, c->vocab * c->d * sizeof *got);
    free(order), free(seg_start), free(seg_id);
    gu_free(dorder), gu_free(dstart), gu_free(dseg), gu_free(dtable);
    return got;
}

static void check_embedding_bwd(ssmjit_context *ctx, const embed_bwd_case *c)
{
    const size_t n = c->n, d = c->d, V = c->vocab;
    int32_t *ids = ints(n);
    for (size_t t = 0; t < n; ++t)
        ids[t] = t < c->hot ? 0 : random_id((int64_t)V);
    for (size_t t = 0; t < c->hot && t < n; ++t) { /* scatter the hot positions */
        size_t u = (size_t)tu_uniform(0, (double)n);
        int32_t keep = ids[u];
        ids[u] = ids[t];
        ids[t] = keep;
    }
    double *dy = normals(n * d, 1.0);
    gu_view ddy = gu_view_upload(dy, n, d, c->dtype, c->strided);
    float *init = floats(V * d);
    for (size_t i = 0; i < V * d; ++i)
        init[i] = (float)tu_uniform(-1.0, 1.0);
    double *ref = tu_doubles(V * d);
    for (size_t i = 0; i < V * d; ++i)
        ref[i] = init[i];
    for (size_t t = 0; t < n; ++t)
        for (size_t j = 0; j < d; ++j)
            ref[(size_t)ids[t] * d + j] += dy[t * d + j];

    float *got = run_embedding_bwd(ctx, c, ids, &ddy, init);
    /* The kernel sums in double and rounds once: within an ulp of the
     * exact sum; rows of absent ids keep their bits. */
    for (size_t i = 0; i < V * d; ++i) {
        double tol = 1.2e-7 * fabs(ref[i]) + 1e-11;
        if (!(fabs(got[i] - ref[i]) <= tol))
            fail_msg("embedding_bwd %s n %zu d %zu vocab %zu hot %zu: dtable[%zu][%zu] = %.9g, want "
                     "%.9g",
                     sj_dtype_suffix(c->dtype), n, d, V, c->hot, i / d, i % d, got[i], ref[i]);
    }
    float *again = run_embedding_bwd(ctx, c, ids, &ddy, init);
    assert_memory_equal(got, again, V * d * sizeof *got);
    free(ids), free(dy), free(init), free(ref), free(got), free(again);
    gu_view_free(&ddy);
}

static void test_embedding_bwd(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    for (size_t a = 0; a < 3; ++a) {
        const embed_bwd_case cases[] = {
            {dtypes[a], 1, 1, 1, 0, 0},       {dtypes[a], 7, 13, 11, 1, 0},
            {dtypes[a], 500, 257, 11, 0, 0},  {dtypes[a], 300, 37, 50280, 1, 0},
            {dtypes[a], 6000, 5, 50, 0, 5000},
        };
        for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i)
            check_embedding_bwd(ctx, &cases[i]);
    }
    /* More segments than grid.y holds. */
    const embed_bwd_case many = {SSMJIT_F32, 150000, 3, 1000000, 1, 0};
    check_embedding_bwd(ctx, &many);
    ssmjit_context_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Cross-entropy                                                            */
/* ------------------------------------------------------------------------ */

enum { CE_SEPARATE, CE_IN_PLACE, CE_LOSS_ONLY };

typedef struct ce_result {
    float *row_loss, loss;
    double *dlogits;
} ce_result;

static void ce_free(ce_result *r)
{
    free(r->row_loss);
    free(r->dlogits);
}

/* Runs on logits uploaded from x (rounded in place); `mode` says where the
 * gradient goes. */
static ce_result run_ce(ssmjit_context *ctx, ssmjit_dtype dt, size_t rows, size_t vocab, double *x,
                        const int32_t *dtargets, float scale, int strided, int mode)
{
    gu_view logits = gu_view_upload(x, rows, vocab, dt, strided);
    gu_view grad = mode == CE_SEPARATE ? gu_view_poisoned(rows, vocab, dt, !strided) : gu_no_view;
    ssmjit_matrix dl = mode == CE_IN_PLACE ? gu_view_matrix(&logits) : gu_view_matrix(&grad);
    float *drow = gu_alloc_poisoned(rows, SSMJIT_F32), *dloss = gu_alloc_poisoned(1, SSMJIT_F32);
    check(sj_cross_entropy(ctx, dt, (int64_t)rows, (int64_t)vocab, gu_view_matrix(&logits), dtargets,
                           scale, drow, dloss, dl, NULL));
    ce_result r = {floats(rows), 0, NULL};
    gu_download(r.row_loss, drow, rows * sizeof(float));
    gu_download(&r.loss, dloss, sizeof(float));
    if (mode != CE_LOSS_ONLY) {
        r.dlogits = tu_doubles(rows * vocab);
        gu_view_download(r.dlogits, mode == CE_IN_PLACE ? &logits : &grad);
    }
    gu_view_free(&logits), gu_view_free(&grad);
    gu_free(drow), gu_free(dloss);
    return r;
}

static int ce_ignored(int32_t t, size_t vocab) { return t < 0 || (size_t)t >= vocab; }

static void check_ce(ssmjit_context *ctx, ssmjit_dtype dt, size_t rows, size_t vocab, int strided)
{
    double *x = normals(rows * vocab, 3.0), *x2 = tu_doubles(rows * vocab);
    int32_t *targets = ints(rows);
    size_t counted = 0;
    for (size_t r = 0; r < rows; ++r) {
        double u = tu_uniform(0, 1);
        targets[r] = u < 0.15 ? -100 : u < 0.17 ? (int32_t)vocab + 2 : random_id((int64_t)vocab);
        counted += !ce_ignored(targets[r], vocab);
        /* A spike: a row whose softmax is nearly one-hot. */
        if (u > 0.9)
            x[r * vocab + (size_t)random_id((int64_t)vocab)] += 40.0;
    }
    const float scale = counted ? 1.0f / (float)counted : 1.0f;
    int32_t *dtargets = upload_i32(targets, rows);
    memcpy(x2, x, rows * vocab * sizeof *x);
    ce_result sep = run_ce(ctx, dt, rows, vocab, x, dtargets, scale, strided, CE_SEPARATE);
    ce_result inp = run_ce(ctx, dt, rows, vocab, x2, dtargets, scale, strided, CE_IN_PLACE);
    ce_result alone = run_ce(ctx, dt, rows, vocab, x2, dtargets, scale, strided, CE_LOSS_ONLY);

    /* The reference, on the logits as the GPU holds them (x was rounded). */
    double *ref_row = tu_doubles(rows), *got_row = tu_doubles(rows), *ref_grad = tu_doubles(rows * vocab);
    double total = 0;
    for (size_t r = 0; r < rows; ++r) {
        const double *xr = x + r * vocab;
        double m = -INFINITY, s = 0;
        for (size_t j = 0; j < vocab; ++j)
            m = fmax(m, xr[j]);
        for (size_t j = 0; j < vocab; ++j)
            s += exp(xr[j] - m);
        const double lse = m + log(s);
        const int ign = ce_ignored(targets[r], vocab);
        ref_row[r] = ign ? 0.0 : lse - xr[targets[r]];
        total += ref_row[r];
        for (size_t j = 0; j < vocab; ++j)
            ref_grad[r * vocab + j] =
                ign ? 0.0 : scale * (exp(xr[j] - lse) - ((int32_t)j == targets[r] ? 1.0 : 0.0));
        got_row[r] = sep.row_loss[r];
        if (ign && sep.row_loss[r] != 0.0f)
            fail_msg("cross_entropy: ignored row %zu has loss %g", r, sep.row_loss[r]);
        for (size_t j = 0; ign && j < vocab; ++j)
            if (sep.dlogits[r * vocab + j] != 0.0 || inp.dlogits[r * vocab + j] != 0.0)
                fail_msg("cross_entropy: ignored row %zu has gradient at %zu", r, j);
    }
    const double ref_loss = scale * total;
    const char *name = sj_dtype_suffix(dt);
    double err = tu_rel_err(got_row, ref_row, rows);
    if (!(err <= 1e-5))
        fail_msg("cross_entropy %s [%zu, %zu]: row_loss relative error %g", name, rows, vocab, err);
    if (!(fabs(sep.loss - ref_loss) <= 1e-5 * fabs(ref_loss) + 1e-30))
        fail_msg("cross_entropy %s [%zu, %zu]: loss %.9g, want %.9g", name, rows, vocab, sep.loss,
                 ref_loss);
    err = tu_rel_err(sep.dlogits, ref_grad, rows * vocab);
    if (!(err <= gu_tolerance(dt)))
        fail_msg("cross_entropy %s [%zu, %zu]: dlogits relative error %g", name, rows, vocab, err);
    /* Over the logits, and without the gradient, the same numbers. */
    assert_memory_equal(inp.dlogits, sep.dlogits, rows * vocab * sizeof(double));
    assert_memory_equal(inp.row_loss, sep.row_loss, rows * sizeof(float));
    assert_memory_equal(alone.row_loss, sep.row_loss, rows * sizeof(float));
    assert_memory_equal(&alone.loss, &sep.loss, sizeof(float));
    assert_memory_equal(&inp.loss, &sep.loss, sizeof(float));
    ce_free(&sep), ce_free(&inp), ce_free(&alone);
    free(x), free(x2), free(targets), free(ref_row), free(got_row), free(ref_grad);
    gu_free(dtargets);
}

static void test_cross_entropy(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    for (size_t a = 0; a < 3; ++a) {
        check_ce(ctx, dtypes[a], 1, 1, 0);
        check_ce(ctx, dtypes[a], 7, 11, 1);
        check_ce(ctx, dtypes[a], 33, 1000, 0);
        /* Row 0 aligned: 16-byte groups, then a tail; other rows not. */
        check_ce(ctx, dtypes[a], 5, 1003, 0);
        check_ce(ctx, dtypes[a], 13, 50280, 1);
    }
    /* More rows than a grid holds. */
    check_ce(ctx, SSMJIT_BF16, 70000, 5, 0);
    check_ce(ctx, SSMJIT_F32, 70000, 3, 1);
    ssmjit_context_destroy(ctx);
}

/* No rows: the loss is 0, nothing else is touched. */
static void test_cross_entropy_no_rows(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    float *dloss = gu_alloc_poisoned(1, SSMJIT_F32), *drow = gu_alloc_poisoned(1, SSMJIT_F32);
    int32_t *dtargets = gu_alloc(4);
    void *logits = gu_alloc_poisoned(1, SSMJIT_F32);
    ssmjit_matrix m = {logits, 0, 0};
    check(sj_cross_entropy(ctx, SSMJIT_F32, 0, 50280, m, dtargets, 1.0f, drow, dloss, m, NULL));
    float loss, row;
    gu_download(&loss, dloss, sizeof loss);
    gu_download(&row, drow, sizeof row);
    assert_true(loss == 0.0f && !signbit(loss));
    assert_true(isnan(row));
    gu_free(dloss), gu_free(drow), gu_free(dtargets), gu_free(logits);
    ssmjit_context_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Argmax                                                                   */
/* ------------------------------------------------------------------------ */

/* First index of the largest value, NaN above all (the first NaN). */
static int32_t ref_argmax(const double *x, size_t cols)
{
    size_t best = 0;
    for (size_t j = 1; j < cols; ++j) {
        if (isnan(x[best]))
            break;
        if (isnan(x[j]) || x[j] > x[best])
            best = j;
    }
    return (int32_t)best;
}

static void check_argmax(ssmjit_context *ctx, ssmjit_dtype dt, size_t rows, size_t cols, int strided)
{
    double *x = tu_doubles(rows * cols);
    for (size_t r = 0; r < rows; ++r) {
        double *xr = x + r * cols;
        const int kind = (int)(r % 4);
        for (size_t j = 0; j < cols; ++j) /* kind 0: small integers, ties everywhere */
            xr[j] = kind == 0 ? floor(tu_uniform(-3, 3)) : tu_normal();
        if (kind == 1 && cols > 1) { /* the maximum twice */
            size_t a = (size_t)tu_uniform(0, (double)cols), b = (size_t)tu_uniform(0, (double)cols);
            xr[a] = xr[b] = 9.0;
        } else if (kind == 2) { /* NaNs, anywhere */
            xr[(size_t)tu_uniform(0, (double)cols)] = NAN;
            xr[(size_t)tu_uniform(0, (double)cols)] = NAN;
        } else if (kind == 3 && cols > 2) { /* -0 before +0, everything else negative */
            for (size_t j = 0; j < cols; ++j)
                xr[j] = -1.0 - fabs(xr[j]);
            size_t a = (size_t)tu_uniform(0, (double)cols - 1);
            xr[a] = -0.0;
            xr[a + 1 + (size_t)tu_uniform(0, (double)(cols - a - 1))] = 0.0;
        }
    }
    gu_view dx = gu_view_upload(x, rows, cols, dt, strided); /* rounds x: ties in f16 too */
    int32_t *dout = gu_alloc(rows * sizeof(int32_t));
    gu_poison(dout, rows * sizeof(int32_t));
    check(sj_argmax_rows(ctx, dt, (int64_t)rows, (int64_t)cols, gu_view_matrix(&dx), dout, NULL));
    int32_t *got = ints(rows);
    gu_download(got, dout, rows * sizeof *got);
    for (size_t r = 0; r < rows; ++r) {
        int32_t want = ref_argmax(x + r * cols, cols);
        if (got[r] != want)
            fail_msg("argmax %s [%zu, %zu] strided %d: row %zu gives %d, want %d", sj_dtype_suffix(dt),
                     rows, cols, strided, r, got[r], want);
    }
    free(x), free(got);
    gu_view_free(&dx);
    gu_free(dout);
}

struct argmax_case {
    size_t rows, cols;
    int strided;
};

/* Each case in each dtype. */
static void check_argmax_cases(ssmjit_context *ctx, const struct argmax_case *cases, size_t n)
{
    for (size_t a = 0; a < 3; ++a)
        for (size_t i = 0; i < n; ++i)
            check_argmax(ctx, dtypes[a], cases[i].rows, cases[i].cols, cases[i].strided);
}

static void test_argmax(void **state)
{
    (void)state;
    static const struct argmax_case cases[] = {
        {1, 1, 0}, {7, 11, 1}, {40, 50280, 0}, {9, 1000, 1},
        /* every 8th row (16-bit) or 4th (f32) starts 16-byte aligned,
         * with a few elements past its last whole 16-byte piece; the
         * others do not */
        {12, 4099, 0},
    };
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    check_argmax_cases(ctx, cases, sizeof cases / sizeof *cases);
    check_argmax(ctx, SSMJIT_F16, 70000, 7, 1);
    ssmjit_context_destroy(ctx);
}

/* sm_90 on, a cluster of blocks a row (sj_argmax_segment): 7, 2, 3 and 8
 * of them, the last one's segment short; each kind's repeated maximum,
 * NaNs and zeros land in different blocks.  A test of its own, small
 * enough for racecheck to get through. */
static void test_argmax_clusters(void **state)
{
    (void)state;
    static const struct argmax_case cases[] = {{1, 50280, 0}, {3, 16384, 1}, {5, 16385, 0}, {4, 200003, 1}};
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    check_argmax_cases(ctx, cases, sizeof cases / sizeof *cases);
    ssmjit_context_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* f32 vectors and the bias                                                 */
/* ------------------------------------------------------------------------ */

/* |got - ref| in units of the last place of ref as an f32 (subnormal
 * spacing below the normal range). */
static double ulps(float got, double ref)
{
    int e;
    frexp(ref, &e);
    return fabs(got - ref) / ldexp(1.0, (e - 24 < -149 ? -149 : e - 24));
}

static float *run_neg_exp(ssmjit_context *ctx, const float *x, size_t n, int in_place)
{
    float *dx = upload_f32(x, n), *dy = in_place ? dx : gu_alloc_poisoned(n, SSMJIT_F32);
    check(sj_neg_exp_f32(ctx, (int64_t)n, dx, dy, NULL));
    float *got = floats(n);
    gu_download(got, dy, n * sizeof *got);
    gu_free(dx);
    if (!in_place)
        gu_free(dy);
    return got;
}

/* -exp within 2.5 ulp (expf's 2 ulp and a margin), subnormal results,
 * overflow, signed infinities and NaN included, with fast math off and on:
 * both give the same bits.  Where fast math turns expf into
 * ex2.approx.ftz(x log2 e) (NVRTC's PTX output does), that is off by several
 * ulps once |x| passes a few units and flushes exp(-100), so it would not
 * pass; a CUBIN that keeps the exact expf under fast math would, so this
 * checks the contract, not how the kernel meets it. */
static void test_neg_exp(void **state)
{
    (void)state;
    ssmjit_context *exact = gu_context(SSMJIT_FAST_MATH_OFF);
    ssmjit_context *fast = gu_context(SSMJIT_FAST_MATH_ON);
    tu_seed();
    static const float special[] = {0.0f, -0.0f, 1.0f, -100.0f, -103.0f, 88.0f, 89.0f,
                                    INFINITY, -INFINITY, NAN};
    const size_t ns = sizeof special / sizeof *special;
    static const size_t sizes[] = {1, 777, 17000000}; /* the last beyond one grid */
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; ++k) {
        const size_t n = sizes[k];
        float *x = floats(n);
        for (size_t i = 0; i < n; ++i)
            x[i] = n > ns && i < ns ? special[i] : (float)tu_uniform(-20.0, 20.0);
        float *got = run_neg_exp(exact, x, n, 0), *got_fast = run_neg_exp(fast, x, n, k == 1);
        for (size_t i = 0; i < n; ++i) {
            const double ref = -exp((double)x[i]);
            const int ok = isnan(x[i])          ? isnan(got[i])
                           : ref < -FLT_MAX     ? got[i] == -INFINITY
                                                : ulps(got[i], ref) <= 2.5;
            if (!ok)
                fail_msg("neg_exp: x = %.9g gives %.9g, want %.9g", x[i], got[i], ref);
        }
        assert_memory_equal(got, got_fast, n * sizeof *got);
        free(x), free(got), free(got_fast);
    }
    ssmjit_context_destroy(fast);
    ssmjit_context_destroy(exact);
}

/* y = a * b is one rounding: equal to the host's float product. */
static void test_mul(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    static const size_t sizes[] = {1, 1001, 17000000};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; ++k) {
        const size_t n = sizes[k];
        float *a = floats(n), *b = floats(n), *got = floats(n);
        for (size_t i = 0; i < n; ++i) {
            a[i] = (float)(tu_normal() * 10.0);
            b[i] = (float)-exp(tu_uniform(-1.0, 3.0));
        }
        float *da = upload_f32(a, n), *db = upload_f32(b, n);
        float *dy = k == 1 ? da : gu_alloc_poisoned(n, SSMJIT_F32); /* in place once */
        check(sj_mul_f32(ctx, (int64_t)n, da, db, dy, NULL));
        gu_download(got, dy, n * sizeof *got);
        for (size_t i = 0; i < n; ++i)
            if (got[i] != a[i] * b[i])
                fail_msg("mul: %.9g * %.9g gives %.9g, want %.9g", a[i], b[i], got[i], a[i] * b[i]);
        free(a), free(b), free(got);
        gu_free(da), gu_free(db);
        if (k != 1)
            gu_free(dy);
    }
    ssmjit_context_destroy(ctx);
}

static void test_empty_extents(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    enum { N = 64 };
    float *buf = gu_alloc_poisoned(N, SSMJIT_F32), *out = gu_alloc_poisoned(N, SSMJIT_F32);
    int32_t *ids = gu_alloc(N * sizeof(int32_t));
    gu_poison(ids, N * sizeof(int32_t));
    ssmjit_matrix m = {buf, 0, 0}, o = {out, 0, 0};
    check(sj_embedding_fwd(ctx, SSMJIT_F32, 0, 8, 4, ids, buf, o, SSMJIT_F32, NULL));
    check(sj_embedding_fwd(ctx, SSMJIT_F32, 4, 0, 0, ids, buf, o, SSMJIT_F32, NULL));
    check(sj_embedding_bwd(ctx, SSMJIT_F32, 4, 8, 0, ids, ids, ids, m, out, NULL));
    check(sj_embedding_bwd(ctx, SSMJIT_F32, 4, 0, 2, ids, ids, ids, m, out, NULL));
    check(sj_argmax_rows(ctx, SSMJIT_F32, 0, 8, m, (int32_t *)out, NULL));
    check(sj_argmax_rows(ctx, SSMJIT_F32, 4, 0, m, (int32_t *)out, NULL));
    check(sj_neg_exp_f32(ctx, 0, buf, out, NULL));
    check(sj_mul_f32(ctx, 0, buf, buf, out, NULL));
    double got[N];
    gu_download_as(got, out, N, SSMJIT_F32);
    for (size_t i = 0; i < N; ++i)
        assert_true(isnan(got[i]));
    gu_free(buf), gu_free(out), gu_free(ids);
    ssmjit_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embedding_fwd), cmocka_unit_test(test_embedding_bwd),
        cmocka_unit_test(test_cross_entropy), cmocka_unit_test(test_cross_entropy_no_rows),
        cmocka_unit_test(test_argmax),        cmocka_unit_test(test_argmax_clusters),
        cmocka_unit_test(test_neg_exp),       cmocka_unit_test(test_mul),
        cmocka_unit_test(test_empty_extents),
    };
    tu_apply_test_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
