/* RMSNorm on the GPU against the double reference: every dtype and residual
 * stream type, the register (warp and block) and streaming kernel paths,
 * strided and offset views whose padding must stay untouched, poisoned
 * outputs, in-place use, reproducibility, and argument validation. */
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
#include "ref_norm.h"
#include "test_util.h"

/* ------------------------------------------------------------------------ */
/* Inputs, references and comparisons                                      */
/* ------------------------------------------------------------------------ */

static double *normals(size_t n)
{
    double *v = tu_doubles(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = tu_normal();
    return v;
}

/* Describes the case being checked, for failure messages. */
static char case_name[160];

static const char *dtype_name(ssmjit_dtype dtype)
{
    return dtype == SSMJIT_F32 ? "f32" : dtype == SSMJIT_F16 ? "f16" : "bf16";
}

static void expect_close(const double *got, const double *ref, size_t n, ssmjit_dtype dtype,
                         const char *what)
{
    double err = tu_rel_err(got, ref, n);
    if (!(err <= gu_tolerance(dtype)))
        fail_msg("%s (%s): relative error %g > %g", what, case_name, err, gu_tolerance(dtype));
}

static void expect_view(const gu_view *m, const double *ref, const char *what)
{
    double *got = tu_doubles(m->rows * m->w);
    gu_view_download(got, m);
    expect_close(got, ref, m->rows * m->w, m->dtype, what);
    free(got);
}

static void expect_f32(const void *dptr, const double *ref, size_t n, const char *what)
{
    double *got = tu_doubles(n);
    gu_download_as(got, dptr, n, SSMJIT_F32);
    expect_close(got, ref, n, SSMJIT_F32, what);
    free(got);
}

/* With d = 1 and a small eps the x gradient is eps-sized and only
 * cancellation (g - g * xhat^2) in f32: a large eps keeps it meaningful. */
static float eps_for(size_t d) { return d == 1 ? 1.0f : 1e-5f; }

static ssmjit_rmsnorm_desc make_desc(ssmjit_dtype dtype, int has_residual, ssmjit_dtype rdtype,
                                     size_t rows, size_t d)
{
    ssmjit_rmsnorm_desc desc = SSMJIT_STRUCT_INIT(ssmjit_rmsnorm_desc);
    desc.dtype = dtype;
    desc.rows = (int64_t)rows;
    desc.d = (int64_t)d;
    desc.eps = eps_for(d);
    desc.has_residual = has_residual;
    desc.residual_dtype = rdtype;
    return desc;
}

/* h = round(x + residual) in the residual type, what the forward normalises. */
static double *normalised_input(const double *x, const double *res, size_t n, ssmjit_dtype rdtype)
{
    double *h = tu_doubles(n);
    for (size_t i = 0; i < n; ++i)
        h[i] = res ? gu_round(x[i] + res[i], rdtype) : x[i];
    return h;
}

static void *workspace_for(ssmjit_context *ctx, const ssmjit_rmsnorm_desc *desc, size_t *bytes)
{
    assert_int_equal(ssmjit_rmsnorm_bwd_workspace_size(ctx, desc, bytes), SSMJIT_OK);
    assert_true(*bytes % sizeof(float) == 0);
    /* Poisoned: the kernels must not rely on a zeroed workspace. */
    return gu_alloc_poisoned(*bytes / sizeof(float), SSMJIT_F32);
}

/* ------------------------------------------------------------------------ */
/* Forward then backward of one configuration                               */
/* ------------------------------------------------------------------------ */

typedef struct norm_case {
    ssmjit_dtype dtype;
    int has_residual;
    ssmjit_dtype rdtype; /* residual stream type when has_residual */
    size_t rows, d;
    int strided, with_dro, with_dres, with_dweight;
} norm_case;

static void check_case(ssmjit_context *ctx, const norm_case *c)
{
    const size_t rows = c->rows, d = c->d, n = rows * d;
    const ssmjit_dtype rdtype = c->has_residual ? c->rdtype : c->dtype;
    ssmjit_rmsnorm_desc desc = make_desc(c->dtype, c->has_residual, rdtype, rows, d);
    snprintf(case_name, sizeof case_name,
             "%s, residual %s, rows %zu, d %zu, strided %d, dro %d, dres %d, dweight %d",
             dtype_name(c->dtype), c->has_residual ? dtype_name(rdtype) : "none", rows, d,
             c->strided, c->with_dro, c->with_dres, c->with_dweight);

    /* Forward, residual_out and rstd requested (the backward needs them). */
    double *x = normals(n), *res = c->has_residual ? normals(n) : NULL, *w = tu_doubles(d);
    tu_fill_uniform(w, d, -2.0, 2.0);
    gu_view X = gu_view_upload(x, rows, d, c->dtype, c->strided);
    gu_view R = res ? gu_view_upload(res, rows, d, rdtype, c->strided) : gu_no_view;
    void *W = gu_upload_new(w, d, SSMJIT_F32);
    gu_view Y = gu_view_poisoned(rows, d, c->dtype, c->strided);
    gu_view RO = res ? gu_view_poisoned(rows, d, rdtype, !c->strided) : gu_no_view;
    void *RSTD = gu_alloc_poisoned(rows, SSMJIT_F32);
    const ssmjit_rmsnorm_fwd_args fa = {sizeof fa, gu_view_matrix(&X), gu_view_matrix(&R), W,
                                        gu_view_matrix(&Y), gu_view_matrix(&RO), RSTD};
    assert_int_equal(ssmjit_rmsnorm_fwd(ctx, &desc, &fa, NULL), SSMJIT_OK);
    gu_sync();

    double *h = normalised_input(x, res, n, rdtype), *y = tu_doubles(n);
    double *rstd = tu_doubles(rows);
    ref_rmsnorm_fwd(h, NULL, w, rows, d, desc.eps, y, NULL, rstd);
    expect_view(&Y, y, "y");
    expect_f32(RSTD, rstd, rows, "rstd");
    if (res) {
        expect_view(&RO, h, "residual_out");
        gu_view_download(h, &RO); /* exactly what the backward reads */
    }

    /* Backward from the forward's own residual_out (or x) and rstd. */
    double *dy = normals(n), *dro = c->has_residual && c->with_dro ? normals(n) : NULL;
    gu_view DY = gu_view_upload(dy, rows, d, c->dtype, !c->strided);
    gu_view DRO = dro ? gu_view_upload(dro, rows, d, rdtype, c->strided) : gu_no_view;
    gu_view DX = gu_view_poisoned(rows, d, c->dtype, c->strided);
    gu_view DRES = c->has_residual && c->with_dres ? gu_view_poisoned(rows, d, rdtype, c->strided)
                                                : gu_no_view;
    void *DW = NULL, *WS = NULL;
    size_t ws_bytes = 0;
    if (c->with_dweight) {
        DW = gu_alloc_poisoned(d, SSMJIT_F32);
        WS = workspace_for(ctx, &desc, &ws_bytes);
    }
    const ssmjit_rmsnorm_bwd_args ba = {sizeof ba, gu_view_matrix(res ? &RO : &X), W, RSTD,
                                        gu_view_matrix(&DY), gu_view_matrix(&DRO), gu_view_matrix(&DX),
                                        gu_view_matrix(&DRES), DW, WS, ws_bytes};
    assert_int_equal(ssmjit_rmsnorm_bwd(ctx, &desc, &ba, NULL), SSMJIT_OK);
    gu_sync();

    double *dh = tu_doubles(n), *dw = tu_doubles(d);
    ref_rmsnorm_bwd(h, w, rows, d, desc.eps, dy, dro, dh, dw);
    expect_view(&DX, dh, "dx");
    if (DRES.base)
        expect_view(&DRES, dh, "d_residual");
    if (DW)
        expect_f32(DW, dw, d, "dweight");

    gu_view_free(&X), gu_view_free(&R), gu_view_free(&Y), gu_view_free(&RO), gu_view_free(&DY);
    gu_view_free(&DRO), gu_view_free(&DX), gu_view_free(&DRES);
    gu_free(W), gu_free(RSTD);
    if (DW)
        gu_free(DW), gu_free(WS);
    free(x), free(res), free(w), free(h), free(y), free(rstd), free(dy), free(dro), free(dh),
        free(dw);
}

/* Every width and row count for one dtype.  The residual mode (none, in
 * the dtype, in f32), the layout and the optional arguments rotate from case
 * to case, so that each width meets each of them while the double
 * reference of the large cases runs only once per shape. */
static void check_dtype(ssmjit_dtype dtype)
{
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    /* The widths asked of the op, with every row count... */
    static const size_t widths[] = {1, 7, 768, 1000, 2560, 8192};
    static const size_t rows_list[] = {1, 3, 1000};
    /* ...and the edges of the kernel paths (warp / block at 256, registers /
     * streaming at 8192), with fewer rows to keep the reference quick. */
    static const size_t edge_widths[] = {256, 257, 8193, 12000};
    static const size_t edge_rows[] = {1, 3, 64};
    const struct {
        int has_residual;
        ssmjit_dtype rdtype;
    } modes[] = {{0, dtype}, {1, dtype}, {1, SSMJIT_F32}};
    /* In f32 the two residual types are the same. */
    const size_t num_modes = dtype == SSMJIT_F32 ? 2 : 3;
    unsigned k = 0;
    for (int edge = 0; edge < 2; ++edge) {
        const size_t *ws = edge ? edge_widths : widths, *rs = edge ? edge_rows : rows_list;
        const size_t nw = edge ? 4 : 6;
        for (size_t i = 0; i < nw; ++i)
            for (size_t r = 0; r < 3; ++r, ++k) {
                const size_t m = (i + r) % num_modes;
                norm_case c = {dtype, modes[m].has_residual, modes[m].rdtype, rs[r], ws[i],
                               (int)(k & 1), (int)((k >> 1) & 1), (int)((k >> 2) & 1),
                               k % 3 != 2};
                check_case(ctx, &c);
            }
    }
    ssmjit_context_destroy(ctx);
}

static void test_f32(void **state)
{
    (void)state;
    check_dtype(SSMJIT_F32);
}

static void test_f16(void **state)
{
    (void)state;
    check_dtype(SSMJIT_F16);
}

static void test_bf16(void **state)
{
    (void)state;
    check_dtype(SSMJIT_BF16);
}

/* More rows than the grid has row groups, so groups walk several rows and
 * the dweight slots sum several rows each, in the warp, block and streaming
 * kernels. */
static void test_many_rows(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    const norm_case cases[] = {
        {SSMJIT_F32, 0, SSMJIT_F32, 20000, 7, 0, 0, 0, 1},
        {SSMJIT_BF16, 1, SSMJIT_F32, 12000, 200, 1, 1, 1, 1},
        {SSMJIT_F16, 1, SSMJIT_F16, 3000, 768, 0, 1, 0, 1},
        {SSMJIT_F32, 1, SSMJIT_F32, 600, 9000, 1, 0, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        check_case(ctx, &cases[i]);
    ssmjit_context_destroy(ctx);
}

/* The forward's optional outputs may be omitted; y is unchanged by that. */
static void test_fwd_without_optional_outputs(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    static const size_t widths[] = {7, 1000, 9000};
    for (size_t i = 0; i < 3; ++i) {
        const size_t rows = 5, d = widths[i], n = rows * d;
        ssmjit_rmsnorm_desc desc = make_desc(SSMJIT_BF16, 1, SSMJIT_F32, rows, d);
        snprintf(case_name, sizeof case_name, "no optional outputs, rows %zu, d %zu", rows, d);
        double *x = normals(n), *res = normals(n), *w = tu_doubles(d), *y = tu_doubles(n);
        tu_fill_uniform(w, d, 0.5, 1.5);
        gu_view X = gu_view_upload(x, rows, d, SSMJIT_BF16, 0);
        gu_view R = gu_view_upload(res, rows, d, SSMJIT_F32, 1);
        gu_view Y = gu_view_poisoned(rows, d, SSMJIT_BF16, 1);
        void *W = gu_upload_new(w, d, SSMJIT_F32);
        const ssmjit_rmsnorm_fwd_args fa = {sizeof fa, gu_view_matrix(&X), gu_view_matrix(&R), W,
                                            gu_view_matrix(&Y), gu_view_matrix(&gu_no_view), NULL};
        assert_int_equal(ssmjit_rmsnorm_fwd(ctx, &desc, &fa, NULL), SSMJIT_OK);
        gu_sync();
        double *h = normalised_input(x, res, n, SSMJIT_F32);
        ref_rmsnorm_fwd(h, NULL, w, rows, d, desc.eps, y, NULL, NULL);
        expect_view(&Y, y, "y");
        gu_view_free(&X), gu_view_free(&R), gu_view_free(&Y), gu_free(W);
        free(x), free(res), free(w), free(y), free(h);
    }
    ssmjit_context_destroy(ctx);
}

/* has_residual with no residual (the first block): residual_out = x in the
 * residual type starts the stream, y normalises x. */
static void test_residual_stream_start(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    const struct {
        ssmjit_dtype dtype, rdtype;
        size_t d;
    } cases[] = {{SSMJIT_BF16, SSMJIT_F32, 7}, {SSMJIT_F16, SSMJIT_F16, 1000},
                 {SSMJIT_BF16, SSMJIT_F32, 9000}};
    for (size_t i = 0; i < 3; ++i) {
        const size_t rows = 9, d = cases[i].d, n = rows * d;
        ssmjit_rmsnorm_desc desc = make_desc(cases[i].dtype, 1, cases[i].rdtype, rows, d);
        snprintf(case_name, sizeof case_name, "no residual given, %s, residual %s, d %zu",
                 dtype_name(cases[i].dtype), dtype_name(cases[i].rdtype), d);
        double *x = normals(n), *w = tu_doubles(d), *y = tu_doubles(n), *rstd = tu_doubles(rows);
        tu_fill_uniform(w, d, -2.0, 2.0);
        gu_view X = gu_view_upload(x, rows, d, cases[i].dtype, 1);
        gu_view Y = gu_view_poisoned(rows, d, cases[i].dtype, 0);
        gu_view RO = gu_view_poisoned(rows, d, cases[i].rdtype, 1);
        void *W = gu_upload_new(w, d, SSMJIT_F32), *RSTD = gu_alloc_poisoned(rows, SSMJIT_F32);
        const ssmjit_rmsnorm_fwd_args fa = {sizeof fa, gu_view_matrix(&X), gu_view_matrix(&gu_no_view), W,
                                            gu_view_matrix(&Y), gu_view_matrix(&RO), RSTD};
        assert_int_equal(ssmjit_rmsnorm_fwd(ctx, &desc, &fa, NULL), SSMJIT_OK);
        gu_sync();
        ref_rmsnorm_fwd(x, NULL, w, rows, d, desc.eps, y, NULL, rstd);
        expect_view(&Y, y, "y");
        expect_view(&RO, x, "residual_out");
        expect_f32(RSTD, rstd, rows, "rstd");
        gu_view_free(&X), gu_view_free(&Y), gu_view_free(&RO), gu_free(W), gu_free(RSTD);
        free(x), free(w), free(y), free(rstd);
    }
    ssmjit_context_destroy(ctx);
}

/* y over x and residual_out over residual in the forward; dx over dy and
 * d_residual over d_residual_out in the backward (same strides). */
static void test_in_place(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    const struct {
        ssmjit_dtype dtype, rdtype;
        size_t rows, d;
    } cases[] = {{SSMJIT_F16, SSMJIT_F16, 33, 7},
                 {SSMJIT_BF16, SSMJIT_F32, 50, 768},
                 {SSMJIT_F32, SSMJIT_F32, 5, 12000}};
    for (size_t i = 0; i < 3; ++i) {
        const size_t rows = cases[i].rows, d = cases[i].d, n = rows * d;
        const ssmjit_dtype dt = cases[i].dtype, rdt = cases[i].rdtype;
        ssmjit_rmsnorm_desc desc = make_desc(dt, 1, rdt, rows, d);
        snprintf(case_name, sizeof case_name, "in place, %s, residual %s, rows %zu, d %zu",
                 dtype_name(dt), dtype_name(rdt), rows, d);
        double *x = normals(n), *res = normals(n), *w = tu_doubles(d), *y = tu_doubles(n);
        double *rstd = tu_doubles(rows), *dy = normals(n), *dro = normals(n);
        double *dh = tu_doubles(n), *dw = tu_doubles(d);
        tu_fill_uniform(w, d, -2.0, 2.0);
        gu_view X = gu_view_upload(x, rows, d, dt, 1), R = gu_view_upload(res, rows, d, rdt, 1);
        void *W = gu_upload_new(w, d, SSMJIT_F32), *RSTD = gu_alloc_poisoned(rows, SSMJIT_F32);
        const ssmjit_rmsnorm_fwd_args fa = {sizeof fa, gu_view_matrix(&X), gu_view_matrix(&R), W,
                                            gu_view_matrix(&X), gu_view_matrix(&R), RSTD};
        assert_int_equal(ssmjit_rmsnorm_fwd(ctx, &desc, &fa, NULL), SSMJIT_OK);
        gu_sync();
        double *h = normalised_input(x, res, n, rdt);
        ref_rmsnorm_fwd(h, NULL, w, rows, d, desc.eps, y, NULL, rstd);
        expect_view(&X, y, "y in place of x");
        expect_view(&R, h, "residual_out in place of residual");
        gu_view_download(h, &R);

        gu_view DY = gu_view_upload(dy, rows, d, dt, 1), DRO = gu_view_upload(dro, rows, d, rdt, 1);
        size_t ws_bytes;
        void *DW = gu_alloc_poisoned(d, SSMJIT_F32), *WS = workspace_for(ctx, &desc, &ws_bytes);
        const ssmjit_rmsnorm_bwd_args ba = {sizeof ba, gu_view_matrix(&R), W, RSTD, gu_view_matrix(&DY),
                                            gu_view_matrix(&DRO), gu_view_matrix(&DY), gu_view_matrix(&DRO), DW,
                                            WS, ws_bytes};
        assert_int_equal(ssmjit_rmsnorm_bwd(ctx, &desc, &ba, NULL), SSMJIT_OK);
        gu_sync();
        ref_rmsnorm_bwd(h, w, rows, d, desc.eps, dy, dro, dh, dw);
        expect_view(&DY, dh, "dx in place of dy");
        expect_view(&DRO, dh, "d_residual in place of d_residual_out");
        expect_f32(DW, dw, d, "dweight");
        gu_view_free(&X), gu_view_free(&R), gu_view_free(&DY), gu_view_free(&DRO);
        gu_free(W), gu_free(RSTD), gu_free(DW), gu_free(WS);
        free(x), free(res), free(w), free(y), free(rstd), free(dy), free(dro), free(dh),
            free(dw), free(h);
    }
    ssmjit_context_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Reproducibility                                                          */
/* ------------------------------------------------------------------------ */

static ssmjit_context *deterministic_context(void)
{
    ssmjit_context_options opts;
    ssmjit_context_options_init(&opts);
    opts.fast_math = SSMJIT_FAST_MATH_OFF;
    opts.deterministic = 1;
    ssmjit_context *ctx = NULL;
    assert_int_equal(ssmjit_context_create(&opts, &ctx), SSMJIT_OK);
    return ctx;
}

static unsigned char *download_bytes(const void *dptr, size_t bytes)
{
    unsigned char *p = malloc(bytes);
    assert_non_null(p);
    gu_download(p, dptr, bytes);
    return p;
}

/* The backward's outputs as bytes, after one run on ctx. */
typedef struct bwd_bytes {
    unsigned char *dx, *dres, *dw;
} bwd_bytes;

static bwd_bytes run_bwd_bytes(ssmjit_context *ctx, const ssmjit_rmsnorm_desc *desc,
                               const gu_view *H, const void *W, const void *RSTD, const gu_view *DY)
{
    const size_t rows = (size_t)desc->rows, d = (size_t)desc->d;
    gu_view DX = gu_view_poisoned(rows, d, desc->dtype, 0);
    gu_view DRES = gu_view_poisoned(rows, d, desc->residual_dtype, 0);
    size_t ws_bytes;
    void *DW = gu_alloc_poisoned(d, SSMJIT_F32), *WS = workspace_for(ctx, desc, &ws_bytes);
    const ssmjit_rmsnorm_bwd_args ba = {sizeof ba, gu_view_matrix(H), W, RSTD, gu_view_matrix(DY),
                                        gu_view_matrix(&gu_no_view), gu_view_matrix(&DX), gu_view_matrix(&DRES), DW,
                                        WS, ws_bytes};
    assert_int_equal(ssmjit_rmsnorm_bwd(ctx, desc, &ba, NULL), SSMJIT_OK);
    gu_sync();
    bwd_bytes b = {download_bytes(DX.base, rows * d * ssmjit_dtype_size(desc->dtype)),
                   download_bytes(DRES.base, rows * d * ssmjit_dtype_size(desc->residual_dtype)),
                   download_bytes(DW, d * sizeof(float))};
    gu_view_free(&DX), gu_view_free(&DRES), gu_free(DW), gu_free(WS);
    return b;
}

static void expect_same_bytes(const bwd_bytes *a, const bwd_bytes *b,
                              const ssmjit_rmsnorm_desc *desc)
{
    const size_t n = (size_t)(desc->rows * desc->d);
    assert_memory_equal(a->dx, b->dx, n * ssmjit_dtype_size(desc->dtype));
    assert_memory_equal(a->dres, b->dres, n * ssmjit_dtype_size(desc->residual_dtype));
    assert_memory_equal(a->dw, b->dw, (size_t)desc->d * sizeof(float));
}

static void free_bytes(bwd_bytes *b) { free(b->dx), free(b->dres), free(b->dw); }

/* The backward never uses atomics: two runs, and a run with the
 * deterministic option, give the same bytes. */
static void test_deterministic(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    ssmjit_context *det = deterministic_context();
    tu_seed();
    const size_t shapes[][2] = {{1000, 2560}, {20000, 64}, {200, 9000}};
    for (size_t i = 0; i < 3; ++i) {
        const size_t rows = shapes[i][0], d = shapes[i][1], n = rows * d;
        ssmjit_rmsnorm_desc desc = make_desc(SSMJIT_BF16, 1, SSMJIT_F32, rows, d);
        double *h = normals(n), *dy = normals(n), *w = tu_doubles(d), *rstd = tu_doubles(rows);
        tu_fill_uniform(w, d, -2.0, 2.0);
        tu_fill_uniform(rstd, rows, 0.5, 2.0);
        gu_view H = gu_view_upload(h, rows, d, SSMJIT_F32, 0), DY = gu_view_upload(dy, rows, d,
                                                                         SSMJIT_BF16, 0);
        void *W = gu_upload_new(w, d, SSMJIT_F32), *RSTD = gu_upload_new(rstd, rows, SSMJIT_F32);
        bwd_bytes a = run_bwd_bytes(ctx, &desc, &H, W, RSTD, &DY);
        bwd_bytes b = run_bwd_bytes(ctx, &desc, &H, W, RSTD, &DY);
        bwd_bytes c = run_bwd_bytes(det, &desc, &H, W, RSTD, &DY);
        bwd_bytes e = run_bwd_bytes(det, &desc, &H, W, RSTD, &DY);
        expect_same_bytes(&a, &b, &desc);
        expect_same_bytes(&a, &c, &desc);
        expect_same_bytes(&c, &e, &desc);
        free_bytes(&a), free_bytes(&b), free_bytes(&c), free_bytes(&e);
        gu_view_free(&H), gu_view_free(&DY), gu_free(W), gu_free(RSTD);
        free(h), free(dy), free(w), free(rstd);
    }
    ssmjit_context_destroy(det);
    ssmjit_context_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Validation and empty extents                                             */
/* ------------------------------------------------------------------------ */

static void expect_error(ssmjit_status got, ssmjit_status want, const char *field)
{
    assert_int_equal(got, want);
    const char *msg = ssmjit_last_error();
    if (!strstr(msg, field))
        fail_msg("error \"%s\" does not name %s", msg, field);
}

enum { V_ROWS = 4, V_D = 8 };

/* Valid arguments of both directions for a bf16 layer with an f32 residual
 * stream, on [V_ROWS, V_D] buffers. */
typedef struct norm_args {
    ssmjit_rmsnorm_desc desc;
    ssmjit_rmsnorm_fwd_args f;
    ssmjit_rmsnorm_bwd_args b;
} norm_args;

static void *buffers[16];
static size_t num_buffers;

static void *buffer(size_t n, ssmjit_dtype dtype)
{
    assert_true(num_buffers < 16);
    return buffers[num_buffers++] = gu_alloc_poisoned(n, dtype);
}

static void free_buffers(void)
{
    while (num_buffers)
        gu_free(buffers[--num_buffers]);
}

static norm_args valid_args(ssmjit_context *ctx)
{
    norm_args a;
    memset(&a, 0, sizeof a);
    a.desc = make_desc(SSMJIT_BF16, 1, SSMJIT_F32, V_ROWS, V_D);
    const size_t n = V_ROWS * V_D;
    const ssmjit_matrix act = {buffer(n, SSMJIT_BF16), 0, 0}, f32 = {buffer(n, SSMJIT_F32), 0, 0};
    void *w = buffer(V_D, SSMJIT_F32), *rstd = buffer(V_ROWS, SSMJIT_F32);
    /* Only the error paths use the data, so inputs and outputs may share. */
    a.f = (ssmjit_rmsnorm_fwd_args){sizeof a.f, act, f32, w, act, f32, rstd};
    a.b = (ssmjit_rmsnorm_bwd_args){sizeof a.b, f32, w, rstd, act, f32, act, f32, buffer(V_D, SSMJIT_F32),
                                    NULL, 0};
    assert_int_equal(ssmjit_rmsnorm_bwd_workspace_size(ctx, &a.desc, &a.b.workspace_bytes), SSMJIT_OK);
    a.b.workspace = buffer(a.b.workspace_bytes / sizeof(float), SSMJIT_F32);
    return a;
}

static ssmjit_status call_fwd(ssmjit_context *ctx, const norm_args *a)
{
    return ssmjit_rmsnorm_fwd(ctx, &a->desc, &a->f, NULL);
}

static ssmjit_status call_bwd(ssmjit_context *ctx, const norm_args *a)
{
    return ssmjit_rmsnorm_bwd(ctx, &a->desc, &a->b, NULL);
}

/* Applies `change` to a copy of the valid arguments and expects `call` to
 * fail with `want`, naming `field`. */
#define EXPECT_BAD(call, change, want, field) \
    do {                                      \
        norm_args a = ok;                     \
        change;                               \
        expect_error(call(ctx, &a), want, field); \
    } while (0)

#define INVALID SSMJIT_ERR_INVALID_ARG

static void test_validation_fwd(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    const norm_args ok = valid_args(ctx);
    assert_int_equal(call_fwd(ctx, &ok), SSMJIT_OK);
    expect_error(ssmjit_rmsnorm_fwd(NULL, &ok.desc, &ok.f, NULL), INVALID, "ctx");
    expect_error(ssmjit_rmsnorm_fwd(ctx, NULL, &ok.f, NULL), INVALID, "desc");
    expect_error(ssmjit_rmsnorm_fwd(ctx, &ok.desc, NULL, NULL), INVALID, "args");
    EXPECT_BAD(call_fwd, a.desc.struct_size = 0, INVALID, "desc->struct_size");
    EXPECT_BAD(call_fwd, a.f.struct_size += 8, INVALID, "args->struct_size");
    EXPECT_BAD(call_fwd, a.desc.dtype = (ssmjit_dtype)7, INVALID, "desc->dtype");
    EXPECT_BAD(call_fwd, a.desc.rows = -1, INVALID, "desc->rows");
    EXPECT_BAD(call_fwd, a.desc.d = -3, INVALID, "desc->d");
    EXPECT_BAD(call_fwd, a.desc.eps = -1e-6, INVALID, "desc->eps");
    EXPECT_BAD(call_fwd, a.desc.eps = NAN, INVALID, "desc->eps");
    EXPECT_BAD(call_fwd, a.desc.eps = INFINITY, INVALID, "desc->eps");
    EXPECT_BAD(call_fwd, a.desc.eps = 1e39, INVALID, "desc->eps");
    EXPECT_BAD(call_fwd, a.desc.residual_dtype = (ssmjit_dtype)9, INVALID,
               "desc->residual_dtype");
    EXPECT_BAD(call_fwd, a.desc.residual_dtype = SSMJIT_F16, SSMJIT_ERR_UNSUPPORTED,
               "desc->residual_dtype");
    EXPECT_BAD(call_fwd, a.f.x.data = NULL, INVALID, "args->x.data");
    EXPECT_BAD(call_fwd, a.f.x.data = (char *)a.f.x.data + 1, INVALID, "args->x.data");
    EXPECT_BAD(call_fwd, a.f.x.stride = V_D - 1, INVALID, "args->x.stride");
    EXPECT_BAD(call_fwd, a.f.x.stride = -V_D, INVALID, "args->x.stride");
    EXPECT_BAD(call_fwd, a.f.x.batch_stride = V_ROWS * V_D, INVALID, "args->x.batch_stride");
    EXPECT_BAD(call_fwd, a.f.residual.stride = 1, INVALID, "args->residual.stride");
    EXPECT_BAD(call_fwd, a.f.residual.data = (char *)a.f.residual.data + 2, INVALID, "args->residual.data");
    EXPECT_BAD(call_fwd, a.f.weight = NULL, INVALID, "args->weight");
    EXPECT_BAD(call_fwd, a.f.y.data = NULL, INVALID, "args->y.data");
    EXPECT_BAD(call_fwd, a.f.y.stride = V_D - 1, INVALID, "args->y.stride");
    EXPECT_BAD(call_fwd, a.f.residual_out.stride = 2, INVALID, "args->residual_out.stride");
    EXPECT_BAD(call_fwd, a.f.residual_out.batch_stride = -1, INVALID, "args->residual_out.batch_stride");
    EXPECT_BAD(call_fwd, a.desc.has_residual = 0, INVALID, "args->residual.data");
    EXPECT_BAD(call_fwd, (a.desc.has_residual = 0, a.f.residual.data = NULL), INVALID,
               "args->residual_out.data");
    free_buffers();
    ssmjit_context_destroy(ctx);
}

static void test_validation_bwd(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    const norm_args ok = valid_args(ctx);
    assert_int_equal(call_bwd(ctx, &ok), SSMJIT_OK);
    expect_error(ssmjit_rmsnorm_bwd(NULL, &ok.desc, &ok.b, NULL), INVALID, "ctx");
    expect_error(ssmjit_rmsnorm_bwd(ctx, NULL, &ok.b, NULL), INVALID, "desc");
    expect_error(ssmjit_rmsnorm_bwd(ctx, &ok.desc, NULL, NULL), INVALID, "args");
    EXPECT_BAD(call_bwd, a.desc.struct_size -= 1, INVALID, "desc->struct_size");
    EXPECT_BAD(call_bwd, a.b.struct_size = 0, INVALID, "args->struct_size");
    EXPECT_BAD(call_bwd, a.desc.dtype = (ssmjit_dtype)-1, INVALID, "desc->dtype");
    EXPECT_BAD(call_bwd, a.desc.rows = -5, INVALID, "desc->rows");
    EXPECT_BAD(call_bwd, a.desc.d = -1, INVALID, "desc->d");
    EXPECT_BAD(call_bwd, a.desc.eps = -1.0, INVALID, "desc->eps");
    EXPECT_BAD(call_bwd, a.desc.residual_dtype = SSMJIT_F16, SSMJIT_ERR_UNSUPPORTED,
               "desc->residual_dtype");
    EXPECT_BAD(call_bwd, a.b.h.data = NULL, INVALID, "args->h.data");
    EXPECT_BAD(call_bwd, a.b.h.data = (char *)a.b.h.data + 2, INVALID, "args->h.data");
    EXPECT_BAD(call_bwd, a.b.h.stride = 3, INVALID, "args->h.stride");
    EXPECT_BAD(call_bwd, a.b.h.batch_stride = 1, INVALID, "args->h.batch_stride");
    EXPECT_BAD(call_bwd, a.b.weight = NULL, INVALID, "args->weight");
    EXPECT_BAD(call_bwd, a.b.rstd = NULL, INVALID, "args->rstd");
    EXPECT_BAD(call_bwd, a.b.dy.data = NULL, INVALID, "args->dy.data");
    EXPECT_BAD(call_bwd, a.b.dy.stride = -1, INVALID, "args->dy.stride");
    EXPECT_BAD(call_bwd, a.b.d_residual_out.stride = 5, INVALID, "args->d_residual_out.stride");
    EXPECT_BAD(call_bwd, a.b.dx.data = NULL, INVALID, "args->dx.data");
    EXPECT_BAD(call_bwd, a.b.dx.data = (char *)a.b.dx.data + 1, INVALID, "args->dx.data");
    EXPECT_BAD(call_bwd, a.b.dx.stride = 7, INVALID, "args->dx.stride");
    EXPECT_BAD(call_bwd, a.b.d_residual.stride = 1, INVALID, "args->d_residual.stride");
    EXPECT_BAD(call_bwd, a.b.d_residual.batch_stride = V_D, INVALID, "args->d_residual.batch_stride");
    EXPECT_BAD(call_bwd, a.desc.has_residual = 0, INVALID, "args->d_residual_out.data");
    EXPECT_BAD(call_bwd, (a.desc.has_residual = 0, a.b.d_residual_out.data = NULL), INVALID,
               "args->d_residual.data");
    EXPECT_BAD(call_bwd, a.b.workspace = NULL, INVALID, "args->workspace");
    EXPECT_BAD(call_bwd, a.b.workspace_bytes -= 1, INVALID, "args->workspace_bytes");

    size_t bytes;
    expect_error(ssmjit_rmsnorm_bwd_workspace_size(NULL, &ok.desc, &bytes), INVALID, "ctx");
    expect_error(ssmjit_rmsnorm_bwd_workspace_size(ctx, NULL, &bytes), INVALID, "desc");
    expect_error(ssmjit_rmsnorm_bwd_workspace_size(ctx, &ok.desc, NULL), INVALID, "bytes");
    norm_args a = ok;
    a.desc.d = -1;
    expect_error(ssmjit_rmsnorm_bwd_workspace_size(ctx, &a.desc, &bytes), INVALID, "desc->d");
    a = ok;
    a.desc.struct_size = 0;
    expect_error(ssmjit_rmsnorm_bwd_workspace_size(ctx, &a.desc, &bytes), INVALID, "desc->struct_size");

    /* Without dweight no workspace is needed. */
    a = ok;
    a.b.dweight = NULL;
    a.b.workspace = NULL;
    a.b.workspace_bytes = 0;
    assert_int_equal(call_bwd(ctx, &a), SSMJIT_OK);
    gu_sync();
    free_buffers();
    ssmjit_context_destroy(ctx);
}

/* rows or d of 0 succeed without looking at pointers; the backward over no
 * rows writes dweight = 0. */
static void test_empty(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    const ssmjit_rmsnorm_fwd_args none_f = SSMJIT_STRUCT_INIT(ssmjit_rmsnorm_fwd_args);
    const ssmjit_rmsnorm_bwd_args none_b = SSMJIT_STRUCT_INIT(ssmjit_rmsnorm_bwd_args);
    const size_t d = 100;
    for (int which = 0; which < 2; ++which) {
        ssmjit_rmsnorm_desc desc = make_desc(SSMJIT_F16, 1, SSMJIT_F32, which ? 0 : 3,
                                             which ? d : 0);
        size_t bytes = 1;
        assert_int_equal(ssmjit_rmsnorm_bwd_workspace_size(ctx, &desc, &bytes), SSMJIT_OK);
        assert_int_equal(bytes, 0);
        assert_int_equal(ssmjit_rmsnorm_fwd(ctx, &desc, &none_f, NULL), SSMJIT_OK);
        assert_int_equal(ssmjit_rmsnorm_bwd(ctx, &desc, &none_b, NULL), SSMJIT_OK);
    }
    ssmjit_rmsnorm_desc desc = make_desc(SSMJIT_BF16, 0, SSMJIT_BF16, 0, d);
    void *DW = gu_alloc_poisoned(d, SSMJIT_F32);
    ssmjit_rmsnorm_bwd_args dw_only = none_b;
    dw_only.dweight = DW;
    assert_int_equal(ssmjit_rmsnorm_bwd(ctx, &desc, &dw_only, NULL), SSMJIT_OK);
    gu_sync();
    double got[100], zero[100] = {0};
    gu_download_as(got, DW, d, SSMJIT_F32);
    assert_memory_equal(got, zero, sizeof got);
    gu_free(DW);
    ssmjit_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f32),
        cmocka_unit_test(test_f16),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_many_rows),
        cmocka_unit_test(test_fwd_without_optional_outputs),
        cmocka_unit_test(test_residual_stream_start),
        cmocka_unit_test(test_in_place),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_validation_fwd),
        cmocka_unit_test(test_validation_bwd),
        cmocka_unit_test(test_empty),
    };
    tu_apply_test_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
