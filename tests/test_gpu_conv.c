/* The causal conv1d ops on the GPU against the double reference: forward
 * and backward for each dtype and width 2..8, with and without bias, SiLU,
 * initial state and final state (or its gradient), sequences of 1 to 2049
 * tokens, rows contiguous, half of a [B, L, 2D] buffer, padded and
 * misaligned, or windows into longer sequences (batch_stride), outputs
 * poisoned and the memory around them checked; decode steps chained over a
 * sequence against the reference and, bit for bit, the forward, and decode
 * calls on windows; infinite inputs that stay local; grids that walk several
 * pairs per thread; identical bytes from two backward runs in deterministic
 * mode; argument validation and empty extents. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "ref_conv.h"
#include "test_util.h"

static const ssmjit_dtype dtypes[] = {SSMJIT_F32, SSMJIT_F16, SSMJIT_BF16};

static const char *dtype_name(ssmjit_dtype t)
{
    return t == SSMJIT_F32 ? "f32" : t == SSMJIT_F16 ? "f16" : "bf16";
}

static void ok(ssmjit_status st)
{
    if (st != SSMJIT_OK)
        fail_msg("%s: %s", ssmjit_status_string(st), ssmjit_last_error());
}

static double *normal_array(size_t n)
{
    double *v = tu_doubles(n);
    for (size_t i = 0; i < n; i++)
        v[i] = tu_normal();
    return v;
}

/* ------------------------------------------------------------------------ */
/* Activations [B, L, cols] inside NaN padding                              */
/* ------------------------------------------------------------------------ */

typedef enum layout {
    LAYOUT_CONTIGUOUS, /* alone, stride 0: the vector kernels */
    LAYOUT_HALF,       /* half of [rows, 2*cols]: inputs the first, outputs the second */
    LAYOUT_PADDED,     /* rows of cols+8 at offset 1: misaligned, the element-wise kernels */
    LAYOUT_COUNT,      /* the layouts the sweeps rotate through */
    /* Windows (batch_stride > L * stride): each sequence tokens 3 .. L+2 of
     * L+5 rows of cols, the vector kernels where cols allows them ... */
    LAYOUT_WINDOW = LAYOUT_COUNT,
    /* ... and tokens 1 .. L of L+2 rows of a [.., 2*cols] buffer (its halves
     * as in LAYOUT_HALF), sequences one element further apart: an odd batch
     * stride, the element-wise kernels. */
    LAYOUT_WINDOW_ODD
} layout;

typedef struct act {
    void *base;
    size_t rows, cols, lead, ld; /* the tensor is columns lead .. lead+cols-1 of ld */
    ssmjit_dtype dtype;
    size_t batch, seqlen;        /* rows = batch * seqlen */
    size_t first, span, gap;     /* a sequence is rows first .. first+seqlen-1 of span,
                                    the sequences span * ld + gap elements apart */
} act;

static act act_shape(size_t batch, size_t seqlen, size_t cols, ssmjit_dtype dtype, layout l, int output)
{
    act a = {NULL, batch * seqlen, cols, 0, cols, dtype, batch, seqlen, 0, seqlen, 0};
    if (l == LAYOUT_HALF) {
        a.ld = 2 * cols;
        a.lead = output ? cols : 0;
    } else if (l == LAYOUT_PADDED) {
        a.ld = cols + 8; /* an aligned stride: only the pointer rules out vectors */
        a.lead = 1;
    } else if (l == LAYOUT_WINDOW) {
        a.first = 3;
        a.span = seqlen + 5;
    } else if (l == LAYOUT_WINDOW_ODD) {
        a.ld = 2 * cols;
        a.lead = output ? cols : 0;
        a.first = 1;
        a.span = seqlen + 2;
        a.gap = 1;
    }
    return a;
}

/* Elements of the buffer. */
static size_t act_elems(const act *a) { return a->batch * (a->span * a->ld + a->gap); }

/* Element offset of row r (token r % L of sequence r / L). */
static size_t act_row(const act *a, size_t r)
{
    return r / a->seqlen * (a->span * a->ld + a->gap) + (a->first + r % a->seqlen) * a->ld;
}

/* Uploads host [B * L, cols], rounding it in place to what the device holds. */
static act act_upload(double *host, size_t batch, size_t seqlen, size_t cols, ssmjit_dtype dtype, layout l)
{
    act a = act_shape(batch, seqlen, cols, dtype, l, 0);
    const size_t n = act_elems(&a);
    double *pad = tu_doubles(n);
    for (size_t e = 0; e < n; e++)
        pad[e] = NAN;
    for (size_t r = 0; r < a.rows; r++)
        memcpy(pad + act_row(&a, r) + a.lead, host + r * cols, cols * sizeof(double));
    a.base = gu_upload_new(pad, n, dtype);
    for (size_t r = 0; r < a.rows; r++)
        memcpy(host + r * cols, pad + act_row(&a, r) + a.lead, cols * sizeof(double));
    free(pad);
    return a;
}

static act act_poisoned(size_t batch, size_t seqlen, size_t cols, ssmjit_dtype dtype, layout l)
{
    act a = act_shape(batch, seqlen, cols, dtype, l, 1);
    a.base = gu_alloc_poisoned(act_elems(&a), dtype);
    return a;
}

/* Downloads the tensor into host [B * L, cols]; fails if anything around
 * it was written. */
static void act_download(const act *a, double *host)
{
    const size_t n = act_elems(a);
    double *pad = tu_doubles(n);
    unsigned char *inside = calloc(n ? n : 1, 1);
    assert_non_null(inside);
    gu_download_as(pad, a->base, n, a->dtype);
    for (size_t r = 0; r < a->rows; r++)
        for (size_t c = 0; c < a->cols; c++) {
            const size_t e = act_row(a, r) + a->lead + c;
            host[r * a->cols + c] = pad[e];
            inside[e] = 1;
        }
    for (size_t e = 0; e < n; e++)
        if (!inside[e] && !isnan(pad[e]))
            fail_msg("memory beside the tensor was written: element %zu (row %zu column %zu of the buffer)", e,
                     e / a->ld, e % a->ld);
    free(inside);
    free(pad);
}

static ssmjit_matrix act_view(const act *a)
{
    const int window = a->span != a->seqlen || a->gap;
    ssmjit_matrix m = {(char *)a->base + (a->first * a->ld + a->lead) * ssmjit_dtype_size(a->dtype),
                       a->ld == a->cols ? 0 : (int64_t)a->ld,
                       window ? (int64_t)(a->span * a->ld + a->gap) : 0};
    return m;
}

/* An optional f32 tensor: uploaded (rounded in place), or NULL. */
static void *f32_upload(double *host, size_t n)
{
    return host ? gu_upload_new(host, n, SSMJIT_F32) : NULL;
}

static double *f32_download(const void *dptr, size_t n)
{
    double *h = tu_doubles(n);
    gu_download_as(h, dptr, n, SSMJIT_F32);
    return h;
}

/* ------------------------------------------------------------------------ */
/* The ops, called with the forward's inputs and the backward's outputs     */
/* ------------------------------------------------------------------------ */

/* The forward's inputs; the backward takes the same ones. */
typedef struct conv_in {
    ssmjit_matrix x;
    const void *weight, *bias, *initial_state;
} conv_in;

/* The backward's outputs. */
typedef struct conv_grads {
    ssmjit_matrix dx;
    void *dweight, *dbias, *d_initial_state;
} conv_grads;

static ssmjit_status run_fwd(ssmjit_context *ctx, const ssmjit_conv1d_desc *desc, const conv_in *in,
                             ssmjit_matrix y, void *final_state)
{
    const ssmjit_conv1d_fwd_args a = {sizeof a, in->x, in->weight, in->bias, in->initial_state, y,
                                      final_state};
    return ssmjit_causal_conv1d_fwd(ctx, desc, &a, NULL);
}

static ssmjit_status run_bwd(ssmjit_context *ctx, const ssmjit_conv1d_desc *desc, const conv_in *in,
                             ssmjit_matrix dy, const void *d_final_state, const conv_grads *g,
                             void *ws, size_t ws_bytes)
{
    const ssmjit_conv1d_bwd_args a = {sizeof a, in->x, in->weight, in->bias, in->initial_state, dy,
                                      d_final_state, g->dx, g->dweight, g->dbias, g->d_initial_state,
                                      ws, ws_bytes};
    return ssmjit_causal_conv1d_bwd(ctx, desc, &a, NULL);
}

static ssmjit_status run_update(ssmjit_context *ctx, const ssmjit_conv1d_desc *desc, ssmjit_matrix x,
                                const void *weight, const void *bias, void *state, ssmjit_matrix y)
{
    const ssmjit_conv1d_update_args a = {sizeof a, x, weight, bias, state, y};
    return ssmjit_causal_conv1d_update(ctx, desc, &a, NULL);
}

/* ------------------------------------------------------------------------ */
/* One case: fresh inputs, the op, the reference                            */
/* ------------------------------------------------------------------------ */

typedef struct conv_case {
    ssmjit_dtype dtype;
    size_t batch, seqlen, dim;
    int width, silu, bias, init;
    int fin; /* forward: write final_state; backward: a d_final_state */
    layout lay;
} conv_case;

static ref_conv_shape shape_of(const conv_case *c)
{
    ref_conv_shape s = {c->batch, c->seqlen, c->dim, c->width, c->silu};
    return s;
}

static size_t n_act(const conv_case *c) { return c->batch * c->seqlen * c->dim; }

static size_t n_state(const conv_case *c) { return c->batch * c->dim * (size_t)(c->width - 1); }

static void expect_close(const conv_case *c, const char *what, const double *got,
                         const double *ref, size_t n, ssmjit_dtype out_dtype)
{
    double err = tu_rel_err(got, ref, n);
    if (!(err <= gu_tolerance(out_dtype)))
        fail_msg("%s, %s B=%zu L=%zu D=%zu W=%d silu=%d bias=%d init=%d fin=%d layout=%d: "
                 "relative error %g > %g",
                 what, dtype_name(c->dtype), c->batch, c->seqlen, c->dim, c->width, c->silu,
                 c->bias, c->init, c->fin, (int)c->lay, err, gu_tolerance(out_dtype));
}

/* The forward's inputs, on the host (rounded to the device's values) and
 * on the device. */
typedef struct inputs {
    double *x, *w, *bias, *init;
    act dx;
    void *dw, *dbias, *dinit;
    conv_in in;
} inputs;

static inputs make_inputs(const conv_case *c)
{
    inputs h = {normal_array(n_act(c)), tu_doubles(c->dim * (size_t)c->width),
                c->bias ? normal_array(c->dim) : NULL, c->init ? normal_array(n_state(c)) : NULL,
                {0}, NULL, NULL, NULL, {{0}, NULL, NULL, NULL}};
    tu_fill_uniform(h.w, c->dim * (size_t)c->width, -1.0, 1.0);
    h.dx = act_upload(h.x, c->batch, c->seqlen, c->dim, c->dtype, c->lay);
    h.dw = f32_upload(h.w, c->dim * (size_t)c->width);
    h.dbias = f32_upload(h.bias, c->dim);
    h.dinit = f32_upload(h.init, n_state(c));
    h.in = (conv_in){act_view(&h.dx), h.dw, h.dbias, h.dinit};
    return h;
}

static void free_inputs(inputs *h)
{
    free(h->x), free(h->w), free(h->bias), free(h->init);
    gu_free(h->dx.base), gu_free(h->dw), gu_free(h->dbias), gu_free(h->dinit);
}

static ssmjit_conv1d_desc desc_of(const conv_case *c)
{
    ssmjit_conv1d_desc d = {sizeof d, c->dtype, (int64_t)c->batch, (int64_t)c->seqlen, (int64_t)c->dim,
                            c->width, c->silu};
    return d;
}

static void check_fwd(ssmjit_context *ctx, const conv_case *c)
{
    const ref_conv_shape s = shape_of(c);
    const ssmjit_conv1d_desc desc = desc_of(c);
    inputs h = make_inputs(c);
    act y = act_poisoned(c->batch, c->seqlen, c->dim, c->dtype, c->lay);
    void *fin = c->fin ? gu_alloc_poisoned(n_state(c), SSMJIT_F32) : NULL;
    ok(run_fwd(ctx, &desc, &h.in, act_view(&y), fin));
    gu_sync();

    double *y_ref = tu_doubles(n_act(c)), *fin_ref = tu_doubles(n_state(c));
    double *y_got = tu_doubles(n_act(c));
    ref_conv1d_fwd(&s, h.x, h.w, h.bias, h.init, y_ref, fin_ref);
    act_download(&y, y_got);
    expect_close(c, "fwd y", y_got, y_ref, n_act(c), c->dtype);
    if (fin) {
        double *fin_got = f32_download(fin, n_state(c));
        expect_close(c, "fwd final_state", fin_got, fin_ref, n_state(c), SSMJIT_F32);
        free(fin_got);
    }
    free(y_ref), free(fin_ref), free(y_got);
    gu_free(y.base), gu_free(fin);
    free_inputs(&h);
}

/* The backward's outputs on the device. */
typedef struct grads {
    act dx;
    void *dw, *dbias, *dinit, *ws;
    conv_grads g;
    size_t ws_bytes;
} grads;

/* want_db / want_dinit: ask for dbias / d_initial_state. */
static grads make_grads(ssmjit_context *ctx, const conv_case *c, int want_db, int want_dinit)
{
    const ssmjit_conv1d_desc desc = desc_of(c);
    grads g = {act_poisoned(c->batch, c->seqlen, c->dim, c->dtype, c->lay),
               gu_alloc_poisoned(c->dim * (size_t)c->width, SSMJIT_F32),
               want_db ? gu_alloc_poisoned(c->dim, SSMJIT_F32) : NULL,
               want_dinit ? gu_alloc_poisoned(n_state(c), SSMJIT_F32) : NULL,
               NULL,
               {{0}, NULL, NULL, NULL},
               0};
    ok(ssmjit_causal_conv1d_bwd_workspace_size(ctx, &desc, &g.ws_bytes));
    g.ws = gu_alloc(g.ws_bytes);
    gu_poison(g.ws, g.ws_bytes); /* the op must not depend on its contents */
    g.g = (conv_grads){act_view(&g.dx), g.dw, g.dbias, g.dinit};
    return g;
}

static void free_grads(grads *g)
{
    gu_free(g->dx.base), gu_free(g->dw), gu_free(g->dbias), gu_free(g->dinit), gu_free(g->ws);
}

static void check_bwd_grads(ssmjit_context *ctx, const conv_case *c, int want_db, int want_dinit)
{
    const ref_conv_shape s = shape_of(c);
    const ssmjit_conv1d_desc desc = desc_of(c);
    inputs h = make_inputs(c);
    double *dy = normal_array(n_act(c)), *dfin = c->fin ? normal_array(n_state(c)) : NULL;
    act ddy = act_upload(dy, c->batch, c->seqlen, c->dim, c->dtype, c->lay);
    void *ddfin = f32_upload(dfin, n_state(c));
    grads g = make_grads(ctx, c, want_db, want_dinit);
    ok(run_bwd(ctx, &desc, &h.in, act_view(&ddy), ddfin, &g.g, g.ws, g.ws_bytes));
    gu_sync();

    const size_t nw = c->dim * (size_t)c->width;
    double *dx = tu_doubles(n_act(c)), *dw = tu_doubles(nw), *db = tu_doubles(c->dim);
    double *dinit = tu_doubles(n_state(c)), *dx_got = tu_doubles(n_act(c));
    ref_conv1d_bwd(&s, h.x, h.w, h.bias, h.init, dy, dfin, dx, dw, db, dinit);
    act_download(&g.dx, dx_got);
    expect_close(c, "bwd dx", dx_got, dx, n_act(c), c->dtype);
    double *dw_got = f32_download(g.dw, nw);
    expect_close(c, "bwd dweight", dw_got, dw, nw, SSMJIT_F32);
    free(dw_got);
    if (want_db) {
        double *got = f32_download(g.dbias, c->dim);
        expect_close(c, "bwd dbias", got, db, c->dim, SSMJIT_F32);
        free(got);
    }
    if (want_dinit) {
        double *got = f32_download(g.dinit, n_state(c));
        expect_close(c, "bwd d_initial_state", got, dinit, n_state(c), SSMJIT_F32);
        free(got);
    }
    free(dx), free(dw), free(db), free(dinit), free(dx_got), free(dy), free(dfin);
    gu_free(ddy.base), gu_free(ddfin);
    free_grads(&g);
    free_inputs(&h);
}

/* The gradients of the inputs the case has. */
static void check_bwd(ssmjit_context *ctx, const conv_case *c)
{
    check_bwd_grads(ctx, c, c->bias, c->init);
}

/* ------------------------------------------------------------------------ */
/* Forward and backward over the case space                                 */
/* ------------------------------------------------------------------------ */

typedef void (*case_fn)(ssmjit_context *, const conv_case *);

/* Each dtype, width and length with every combination of SiLU, bias,
 * initial state and final state, D = 40 (not a multiple of a block's
 * channels), B = 2; the layout rotates so each combination meets each. */
static void sweep(case_fn check)
{
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    static const size_t lens[] = {1, 3, 7, 2049};
    size_t n = 0;
    for (size_t t = 0; t < 3; t++)
        for (int w = 2; w <= 8; w++)
            for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
                for (int f = 0; f < 16; f++) {
                    conv_case c = {dtypes[t], 2, lens[l], 40, w, f & 1, (f >> 1) & 1,
                                   (f >> 2) & 1, (f >> 3) & 1, (layout)(n++ % LAYOUT_COUNT)};
                    check(ctx, &c);
                }
    ssmjit_context_destroy(ctx);
}

/* Wide rows: several blocks of channels; D = 1000 takes the vector kernels
 * in the contiguous and half layouts, D = 1001 never does. */
static void wide(case_fn check)
{
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    static const int widths[] = {2, 4, 5, 8};
    for (size_t t = 0; t < 3; t++)
        for (size_t w = 0; w < sizeof widths / sizeof *widths; w++)
            for (int l = 0; l < LAYOUT_COUNT; l++) {
                conv_case c = {dtypes[t], 2, 1031, 1000, widths[w], 1, 1, 1, 1, (layout)l};
                check(ctx, &c);
                conv_case odd = {dtypes[t], 3, 77, 1001, widths[w], l & 1, 0, 1, l & 1, (layout)l};
                check(ctx, &odd);
            }
    ssmjit_context_destroy(ctx);
}

/* More (sequence, chunk) pairs than the grid has threads for: each thread
 * walks several, and the backward's walkers each sum several pairs. */
static void many_pairs(case_fn check)
{
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    conv_case many_seqs = {SSMJIT_F32, 300000, 1, 3, 3, 1, 1, 1, 1, LAYOUT_CONTIGUOUS};
    conv_case long_seqs = {SSMJIT_BF16, 64, 4100, 8, 4, 1, 1, 1, 1, LAYOUT_HALF};
    check(ctx, &many_seqs);
    check(ctx, &long_seqs);
    ssmjit_context_destroy(ctx);
}

static void test_fwd(void **state)
{
    (void)state;
    sweep(check_fwd);
}

static void test_bwd(void **state)
{
    (void)state;
    sweep(check_bwd);
}

static void test_fwd_wide(void **state)
{
    (void)state;
    wide(check_fwd);
}

static void test_bwd_wide(void **state)
{
    (void)state;
    wide(check_bwd);
}

static void test_fwd_many_pairs(void **state)
{
    (void)state;
    many_pairs(check_fwd);
}

static void test_bwd_many_pairs(void **state)
{
    (void)state;
    many_pairs(check_bwd);
}

/* Windows (batch_stride > L * stride): x, y, dy and dx each L tokens of
 * longer sequences, against the reference on the packed tokens, the rows
 * around the windows untouched.  Each dtype, widths on both sides of 4,
 * with SiLU, bias, initial and final state in turn; in both window
 * layouts, so the vector kernels (LAYOUT_WINDOW, D = 40) and the
 * element-wise ones (an odd batch stride) see them; then wide rows. */
static void windows(case_fn check)
{
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    static const size_t lens[] = {1, 7, 70};
    static const int widths[] = {2, 4, 5, 8};
    int f = 0;
    for (size_t t = 0; t < 3; t++)
        for (size_t w = 0; w < sizeof widths / sizeof *widths; w++)
            for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
                for (int lay = LAYOUT_WINDOW; lay <= LAYOUT_WINDOW_ODD; lay++, f = (f + 1) % 16) {
                    conv_case c = {dtypes[t], 3, lens[l], 40, widths[w], f & 1, (f >> 1) & 1,
                                   (f >> 2) & 1, (f >> 3) & 1, (layout)lay};
                    check(ctx, &c);
                }
    for (size_t t = 0; t < 3; t++) {
        conv_case wide = {dtypes[t], 2, 300, 1000, 4, 1, 1, 1, 1, LAYOUT_WINDOW};
        check(ctx, &wide);
        conv_case odd = {dtypes[t], 2, 100, 1001, 8, 1, 1, 1, 1, LAYOUT_WINDOW};
        check(ctx, &odd);
    }
    ssmjit_context_destroy(ctx);
}

static void test_fwd_windows(void **state)
{
    (void)state;
    windows(check_fwd);
}

static void test_bwd_windows(void **state)
{
    (void)state;
    windows(check_bwd);
}

/* dbias and d_initial_state asked for without a bias or initial state (the
 * gradients at zero), and not asked for with them. */
static void test_bwd_optional_grads(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    for (size_t t = 0; t < 3; t++)
        for (int w = 2; w <= 8; w += 3) {
            conv_case absent = {dtypes[t], 2, 9, 40, w, 1, 0, 0, 1, LAYOUT_CONTIGUOUS};
            check_bwd_grads(ctx, &absent, 1, 1);
            conv_case present = {dtypes[t], 2, 9, 40, w, 1, 1, 1, 0, LAYOUT_PADDED};
            check_bwd_grads(ctx, &present, 0, 0);
        }
    ssmjit_context_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Decode                                                                   */
/* ------------------------------------------------------------------------ */

/* The decode state [B, D, W] that continues from `init` ([B, D, W-1] or NULL
 * for zeros); entry 0, shifted out before it is used, is NaN. */
static double *decode_state(const conv_case *c, const double *init)
{
    const size_t W = (size_t)c->width, n = c->batch * c->dim;
    double *st = tu_doubles(n * W);
    for (size_t i = 0; i < n; i++) {
        st[i * W] = NAN;
        for (size_t j = 0; j + 1 < W; j++)
            st[i * W + 1 + j] = init ? init[i * (W - 1) + j] : 0.0;
    }
    return st;
}

static void *download_bytes(const void *dptr, size_t bytes)
{
    void *h = malloc(bytes + 1);
    assert_non_null(h);
    gu_download(h, dptr, bytes);
    return h;
}

/* L single-token decode calls from the initial state (or zeros) against
 * the reference forward; then the forward on the GPU and one L-token decode
 * call, both bit-identical to the single steps.  x and y are [B, L, D]
 * buffers; step t reads and writes row t of each sequence, rows L*D apart. */
static void check_decode_chain(ssmjit_context *ctx, const conv_case *c)
{
    const ref_conv_shape s = shape_of(c);
    const size_t W = (size_t)c->width, es = ssmjit_dtype_size(c->dtype);
    const size_t nst = c->batch * c->dim * W, y_bytes = n_act(c) * es;
    inputs h = make_inputs(c);
    double *st = decode_state(c, h.init);
    void *dst = f32_upload(st, nst), *dst_all = f32_upload(st, nst);
    act y = act_poisoned(c->batch, c->seqlen, c->dim, c->dtype, LAYOUT_CONTIGUOUS);
    act y_fwd = act_poisoned(c->batch, c->seqlen, c->dim, c->dtype, LAYOUT_CONTIGUOUS);
    act y_all = act_poisoned(c->batch, c->seqlen, c->dim, c->dtype, LAYOUT_CONTIGUOUS);

    ssmjit_conv1d_desc one = desc_of(c);
    one.seqlen = 1;
    for (size_t t = 0; t < c->seqlen; t++) {
        ssmjit_matrix xt = {(char *)h.dx.base + t * c->dim * es, (int64_t)(c->seqlen * c->dim), 0};
        ssmjit_matrix yt = {(char *)y.base + t * c->dim * es, (int64_t)(c->seqlen * c->dim), 0};
        ok(run_update(ctx, &one, xt, h.dw, h.dbias, dst, yt));
    }
    const ssmjit_conv1d_desc all = desc_of(c);
    ok(run_update(ctx, &all, act_view(&h.dx), h.dw, h.dbias, dst_all, act_view(&y_all)));
    ok(run_fwd(ctx, &all, &h.in, act_view(&y_fwd), NULL));
    gu_sync();

    double *y_ref = tu_doubles(n_act(c)), *fin_ref = tu_doubles(n_state(c));
    double *y_got = tu_doubles(n_act(c));
    ref_conv1d_fwd(&s, h.x, h.w, h.bias, h.init, y_ref, fin_ref);
    act_download(&y, y_got);
    expect_close(c, "decode y", y_got, y_ref, n_act(c), c->dtype);

    /* The state ends as the last W inputs: final_state, after x[L-W]. */
    double *st_got = f32_download(dst, nst);
    for (size_t i = 0; i < c->batch * c->dim; i++) {
        size_t b = i / c->dim, d = i % c->dim;
        assert_true(st_got[i * W] == h.x[(b * c->seqlen + c->seqlen - W) * c->dim + d]);
        for (size_t j = 0; j + 1 < W; j++)
            assert_true(st_got[i * W + 1 + j] == fin_ref[i * (W - 1) + j]);
    }
    void *a = download_bytes(dst, nst * sizeof(float)), *b = download_bytes(dst_all, nst * sizeof(float));
    assert_memory_equal(a, b, nst * sizeof(float));
    free(a), free(b);

    void *steps = download_bytes(y.base, y_bytes);
    void *fwd = download_bytes(y_fwd.base, y_bytes), *multi = download_bytes(y_all.base, y_bytes);
    assert_memory_equal(steps, fwd, y_bytes);
    assert_memory_equal(steps, multi, y_bytes);
    free(steps), free(fwd), free(multi);

    free(y_ref), free(fin_ref), free(y_got), free(st_got), free(st);
    gu_free(dst), gu_free(dst_all), gu_free(y.base), gu_free(y_fwd.base), gu_free(y_all.base);
    free_inputs(&h);
}

static void test_decode_chain(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    for (size_t t = 0; t < 3; t++)
        for (int w = 2; w <= 8; w++)
            for (int f = 0; f < 8; f++) {
                conv_case c = {dtypes[t], 3, 11, f & 4 ? 40 : 37, w, f & 1, (f >> 1) & 1,
                               (f >> 2) & 1, 0, LAYOUT_CONTIGUOUS};
                check_decode_chain(ctx, &c);
            }
    ssmjit_context_destroy(ctx);
}

/* y = x (in place), and more sequences than gridDim.y holds. */
static void check_decode_in_place(ssmjit_context *ctx, const conv_case *c)
{
    const ref_conv_shape s = shape_of(c);
    inputs h = make_inputs(c);
    double *st = decode_state(c, h.init);
    void *dst = f32_upload(st, c->batch * c->dim * (size_t)c->width);
    const ssmjit_conv1d_desc desc = desc_of(c);
    ok(run_update(ctx, &desc, h.in.x, h.dw, h.dbias, dst, h.in.x));
    gu_sync();
    double *y_ref = tu_doubles(n_act(c)), *y_got = tu_doubles(n_act(c));
    ref_conv1d_fwd(&s, h.x, h.w, h.bias, h.init, y_ref, NULL);
    act_download(&h.dx, y_got);
    expect_close(c, "decode in place", y_got, y_ref, n_act(c), c->dtype);
    free(y_ref), free(y_got), free(st);
    gu_free(dst);
    free_inputs(&h);
}

static void test_decode_in_place(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    for (size_t t = 0; t < 3; t++) {
        conv_case c = {dtypes[t], 4, 5, 300, 4, 1, 1, 1, 0, LAYOUT_PADDED};
        check_decode_in_place(ctx, &c);
    }
    conv_case many = {SSMJIT_F32, 70000, 1, 3, 6, 1, 1, 1, 0, LAYOUT_HALF};
    check_decode_in_place(ctx, &many);
    ssmjit_context_destroy(ctx);
}

/* L decode steps in one call from x in a window to y in a window (the
 * case's layout, fresh buffers for each) against the reference forward;
 * the state ends with the reference's final_state. */
static void check_decode_window(ssmjit_context *ctx, const conv_case *c)
{
    const ref_conv_shape s = shape_of(c);
    const size_t W = (size_t)c->width, nst = c->batch * c->dim * W;
    inputs h = make_inputs(c);
    double *st = decode_state(c, h.init);
    void *dst = f32_upload(st, nst);
    act y = act_poisoned(c->batch, c->seqlen, c->dim, c->dtype, c->lay);
    const ssmjit_conv1d_desc desc = desc_of(c);
    ok(run_update(ctx, &desc, h.in.x, h.dw, h.dbias, dst, act_view(&y)));
    gu_sync();

    double *y_ref = tu_doubles(n_act(c)), *fin_ref = tu_doubles(n_state(c));
    double *y_got = tu_doubles(n_act(c));
    ref_conv1d_fwd(&s, h.x, h.w, h.bias, h.init, y_ref, fin_ref);
    act_download(&y, y_got);
    expect_close(c, "decode y in a window", y_got, y_ref, n_act(c), c->dtype);
    double *st_got = f32_download(dst, nst);
    for (size_t i = 0; i < c->batch * c->dim; i++)
        for (size_t j = 0; j + 1 < W; j++)
            assert_true(st_got[i * W + 1 + j] == fin_ref[i * (W - 1) + j]);
    free(y_ref), free(fin_ref), free(y_got), free(st_got), free(st);
    gu_free(dst), gu_free(y.base);
    free_inputs(&h);
}

/* Decoding windows: each dtype and width, with SiLU, bias and initial
 * state in turn, in both window layouts; then in place (y = x, the same
 * window). */
static void test_decode_windows(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    static const size_t lens[] = {1, 6, 40};
    int f = 0;
    for (size_t t = 0; t < 3; t++)
        for (int w = 2; w <= 8; w++)
            for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
                for (int lay = LAYOUT_WINDOW; lay <= LAYOUT_WINDOW_ODD; lay++, f = (f + 1) % 8) {
                    conv_case c = {dtypes[t], 3, lens[l], f & 4 ? 40 : 37, w, f & 1, (f >> 1) & 1,
                                   (f >> 2) & 1, 0, (layout)lay};
                    check_decode_window(ctx, &c);
                }
    for (size_t t = 0; t < 3; t++)
        for (int lay = LAYOUT_WINDOW; lay <= LAYOUT_WINDOW_ODD; lay++) {
            conv_case c = {dtypes[t], 4, 5, 300, 4, 1, 1, 1, 0, (layout)lay};
            check_decode_in_place(ctx, &c);
        }
    ssmjit_context_destroy(ctx);
}

/* An infinite input reaches only the W outputs whose taps read it, in the
 * forward and in decode: the kernels hold narrow filters in wider windows,
 * and the taps they skip must not multiply it by zero. */
static void check_nonfinite(ssmjit_context *ctx, const conv_case *c)
{
    enum { T_INF = 9 };
    const ref_conv_shape s = shape_of(c);
    const size_t es = ssmjit_dtype_size(c->dtype);
    inputs h = make_inputs(c);
    for (size_t b = 0; b < c->batch; b++)
        for (size_t d = 0; d < c->dim; d++) {
            size_t row = b * c->seqlen + T_INF, at = row * c->dim + d;
            h.x[at] = INFINITY;
            gu_upload_as((char *)h.dx.base + (act_row(&h.dx, row) + h.dx.lead + d) * es, &h.x[at], 1,
                         c->dtype);
        }
    double *st = decode_state(c, h.init);
    void *dst = f32_upload(st, c->batch * c->dim * (size_t)c->width);
    act y = act_poisoned(c->batch, c->seqlen, c->dim, c->dtype, c->lay);
    act y_dec = act_poisoned(c->batch, c->seqlen, c->dim, c->dtype, c->lay);
    const ssmjit_conv1d_desc desc = desc_of(c);
    ok(run_fwd(ctx, &desc, &h.in, act_view(&y), NULL));
    ok(run_update(ctx, &desc, h.in.x, h.dw, h.dbias, dst, act_view(&y_dec)));
    gu_sync();

    double *ref = tu_doubles(n_act(c)), *got = tu_doubles(n_act(c)), *got_dec = tu_doubles(n_act(c));
    ref_conv1d_fwd(&s, h.x, h.w, h.bias, h.init, ref, NULL);
    act_download(&y, got);
    act_download(&y_dec, got_dec);
    /* Compare the outputs that do not read the infinity, packed together. */
    size_t n = 0;
    for (size_t b = 0; b < c->batch; b++)
        for (size_t t = 0; t < c->seqlen; t++)
            for (size_t d = 0; d < c->dim; d++) {
                size_t at = (b * c->seqlen + t) * c->dim + d;
                if (t >= T_INF && t < T_INF + (size_t)c->width)
                    continue;
                ref[n] = ref[at], got[n] = got[at], got_dec[n] = got_dec[at];
                n++;
            }
    expect_close(c, "fwd beside an infinite input", got, ref, n, c->dtype);
    expect_close(c, "decode beside an infinite input", got_dec, ref, n, c->dtype);
    free(ref), free(got), free(got_dec), free(st);
    gu_free(dst), gu_free(y.base), gu_free(y_dec.base);
    free_inputs(&h);
}

static void test_nonfinite_stays_local(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    for (size_t t = 0; t < 3; t++)
        for (int w = 2; w <= 8; w++)
            for (int l = 0; l < LAYOUT_COUNT; l++) {
                conv_case c = {dtypes[t], 2, 40, 40, w, l == 1, 1, 1, 0, (layout)l};
                check_nonfinite(ctx, &c);
            }
    ssmjit_context_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Deterministic mode                                                       */
/* ------------------------------------------------------------------------ */

static ssmjit_context *deterministic_context(void)
{
    ssmjit_context_options o;
    ssmjit_context_options_init(&o);
    o.fast_math = SSMJIT_FAST_MATH_OFF;
    o.deterministic = 1;
    ssmjit_context *ctx = NULL;
    ok(ssmjit_context_create(&o, &ctx));
    return ctx;
}

/* Two backward runs on the same inputs give the same bytes in every output. */
static void check_reproducible(ssmjit_context *ctx, const conv_case *c)
{
    const ssmjit_conv1d_desc desc = desc_of(c);
    inputs h = make_inputs(c);
    double *dy = normal_array(n_act(c)), *dfin = normal_array(n_state(c));
    act ddy = act_upload(dy, c->batch, c->seqlen, c->dim, c->dtype, c->lay);
    void *ddfin = f32_upload(dfin, n_state(c));
    grads g[2];
    void *bytes[2][4];
    const size_t es = ssmjit_dtype_size(c->dtype);
    const act shape = act_shape(c->batch, c->seqlen, c->dim, c->dtype, c->lay, 1);
    const size_t sizes[4] = {act_elems(&shape) * es,
                             c->dim * (size_t)c->width * sizeof(float), c->dim * sizeof(float),
                             n_state(c) * sizeof(float)};
    for (int r = 0; r < 2; r++) {
        g[r] = make_grads(ctx, c, 1, 1);
        ok(run_bwd(ctx, &desc, &h.in, act_view(&ddy), ddfin, &g[r].g, g[r].ws, g[r].ws_bytes));
        gu_sync();
        const void *outs[4] = {g[r].dx.base, g[r].dw, g[r].dbias, g[r].dinit};
        for (int i = 0; i < 4; i++)
            bytes[r][i] = download_bytes(outs[i], sizes[i]);
    }
    for (int i = 0; i < 4; i++) {
        assert_memory_equal(bytes[0][i], bytes[1][i], sizes[i]);
        free(bytes[0][i]), free(bytes[1][i]);
    }
    free_grads(&g[0]), free_grads(&g[1]);
    free(dy), free(dfin);
    gu_free(ddy.base), gu_free(ddfin);
    free_inputs(&h);
}

static void test_deterministic(void **state)
{
    (void)state;
    /* gu_context's context stays alive so that the device memory helpers'
     * CUDA context does too. */
    ssmjit_context *probe = gu_context(SSMJIT_FAST_MATH_OFF);
    ssmjit_context *ctx = deterministic_context();
    ssmjit_context_info info;
    ok(ssmjit_context_get_info(ctx, &info));
    assert_int_equal(info.deterministic, 1);
    tu_seed();
    for (size_t t = 0; t < 3; t++) {
        conv_case c = {dtypes[t], 4, 2049, 1000, 4, 1, 1, 1, 1, LAYOUT_HALF};
        check_reproducible(ctx, &c);
        conv_case w8 = {dtypes[t], 2, 1000, 1001, 8, 1, 1, 1, 1, LAYOUT_PADDED};
        check_reproducible(ctx, &w8);
    }
    ssmjit_context_destroy(ctx);
    ssmjit_context_destroy(probe);
}

/* ------------------------------------------------------------------------ */
/* Validation and empty extents                                             */
/* ------------------------------------------------------------------------ */

/* msg names `word` delimited by non-identifier characters (so "x" matches
 * "in->x.data" but not "dx"), and contains `also` when given. */
static int names(const char *msg, const char *word, const char *also)
{
    const size_t len = strlen(word);
    if (also && !strstr(msg, also))
        return 0;
    for (const char *p = strstr(msg, word); p; p = strstr(p + 1, word)) {
        int before = p == msg || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        int after = !(isalnum((unsigned char)p[len]) || p[len] == '_');
        if (before && after)
            return 1;
    }
    return 0;
}

static void expect_error(ssmjit_status got, const char *word, const char *also)
{
    if (got != SSMJIT_ERR_INVALID_ARG && got != SSMJIT_ERR_UNSUPPORTED)
        fail_msg("status %s, expected an argument error naming %s", ssmjit_status_string(got),
                 word);
    const char *msg = ssmjit_last_error();
    if (!names(msg, word, also))
        fail_msg("error \"%s\" does not name %s%s%s", msg, word, also ? " with " : "",
                 also ? also : "");
}

enum { V_B = 2, V_L = 5, V_D = 8, V_W = 4 };

/* Small valid buffers for every argument, and the calls made with them. */
typedef struct vsetup {
    ssmjit_conv1d_desc desc;
    conv_in in;
    ssmjit_matrix y, dy;
    void *fin, *dfin, *state;
    conv_grads g;
    void *ws;
    size_t ws_bytes;
    size_t args_skew; /* added to the args structs' struct_size (0: valid) */
    void *bufs[12];
} vsetup;

static void *vbuf(vsetup *v, size_t i)
{
    v->bufs[i] = gu_alloc_poisoned(V_B * V_L * V_D * 2 + 64, SSMJIT_F32);
    return v->bufs[i];
}

static vsetup make_vsetup(ssmjit_context *ctx)
{
    vsetup v;
    memset(&v, 0, sizeof v);
    v.desc = (ssmjit_conv1d_desc){sizeof v.desc, SSMJIT_F32, V_B, V_L, V_D, V_W, 1};
    v.in = (conv_in){{vbuf(&v, 0), 0, 0}, vbuf(&v, 1), vbuf(&v, 2), vbuf(&v, 3)};
    v.y = (ssmjit_matrix){vbuf(&v, 4), 0, 0};
    v.dy = (ssmjit_matrix){vbuf(&v, 5), 0, 0};
    v.fin = vbuf(&v, 6);
    v.dfin = vbuf(&v, 7);
    v.state = vbuf(&v, 8);
    v.g = (conv_grads){{vbuf(&v, 9), 0, 0}, vbuf(&v, 10), vbuf(&v, 11), NULL};
    ok(ssmjit_causal_conv1d_bwd_workspace_size(ctx, &v.desc, &v.ws_bytes));
    v.ws = gu_alloc(v.ws_bytes);
    return v;
}

static void free_vsetup(vsetup *v)
{
    for (size_t i = 0; i < sizeof v->bufs / sizeof *v->bufs; i++)
        gu_free(v->bufs[i]);
    gu_free(v->ws);
}

static ssmjit_status vfwd(ssmjit_context *ctx, const vsetup *v)
{
    const ssmjit_conv1d_fwd_args a = {sizeof a + v->args_skew, v->in.x, v->in.weight, v->in.bias,
                                      v->in.initial_state, v->y, v->fin};
    return ssmjit_causal_conv1d_fwd(ctx, &v->desc, &a, NULL);
}

static ssmjit_status vbwd(ssmjit_context *ctx, const vsetup *v)
{
    const ssmjit_conv1d_bwd_args a = {sizeof a + v->args_skew, v->in.x, v->in.weight, v->in.bias,
                                      v->in.initial_state, v->dy, v->dfin, v->g.dx, v->g.dweight,
                                      v->g.dbias, v->g.d_initial_state, v->ws, v->ws_bytes};
    return ssmjit_causal_conv1d_bwd(ctx, &v->desc, &a, NULL);
}

static ssmjit_status vupdate(ssmjit_context *ctx, const vsetup *v)
{
    const ssmjit_conv1d_update_args a = {sizeof a + v->args_skew, v->in.x, v->in.weight, v->in.bias,
                                         v->state, v->y};
    return ssmjit_causal_conv1d_update(ctx, &v->desc, &a, NULL);
}

typedef ssmjit_status (*vcall)(ssmjit_context *, const vsetup *);

/* The descriptor checks every op shares. */
static void check_desc_errors(ssmjit_context *ctx, vsetup *v, vcall call)
{
    const ssmjit_conv1d_desc good = v->desc;
    ok(call(ctx, v));
    expect_error(call(NULL, v), "ctx", NULL);
    v->desc.width = 1;
    expect_error(call(ctx, v), "width", NULL);
    v->desc.width = 9;
    expect_error(call(ctx, v), "width", NULL);
    v->desc = good;
    v->desc.batch = -1;
    expect_error(call(ctx, v), "batch", NULL);
    v->desc = good;
    v->desc.seqlen = -1;
    expect_error(call(ctx, v), "seqlen", NULL);
    v->desc = good;
    v->desc.dim = -3;
    expect_error(call(ctx, v), "dim", NULL);
    v->desc = good;
    v->desc.dtype = (ssmjit_dtype)7;
    expect_error(call(ctx, v), "dtype", NULL);
    v->desc = good;
    v->desc.struct_size = 0;
    expect_error(call(ctx, v), "desc", "struct_size");
    v->desc = good;
    v->args_skew = 8;
    expect_error(call(ctx, v), "args", "struct_size");
    v->args_skew = (size_t)-1;
    expect_error(call(ctx, v), "args", "struct_size");
    v->args_skew = 0;
}

/* A misaligned copy of an f32 pointer. */
static void *skew(void *p) { return (char *)p + 2; }

static void test_validation(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    vsetup v = make_vsetup(ctx);
    const vsetup good = v;
    const vcall calls[] = {vfwd, vbwd, vupdate};
    for (size_t i = 0; i < 3; i++)
        check_desc_errors(ctx, &v, calls[i]);
    const ssmjit_conv1d_fwd_args fa = {sizeof fa, v.in.x, v.in.weight, v.in.bias, v.in.initial_state, v.y,
                                       v.fin};
    expect_error(ssmjit_causal_conv1d_fwd(ctx, NULL, &fa, NULL), "desc", NULL);
    expect_error(ssmjit_causal_conv1d_fwd(ctx, &v.desc, NULL, NULL), "args", NULL);
    expect_error(ssmjit_causal_conv1d_bwd(ctx, &v.desc, NULL, NULL), "args", NULL);
    expect_error(ssmjit_causal_conv1d_update(ctx, &v.desc, NULL, NULL), "args", NULL);
    size_t bytes;
    expect_error(ssmjit_causal_conv1d_bwd_workspace_size(ctx, &v.desc, NULL), "bytes", NULL);
    v.desc.width = 0;
    expect_error(ssmjit_causal_conv1d_bwd_workspace_size(ctx, &v.desc, &bytes), "width", NULL);
    v = good;

    /* Forward and backward inputs. */
    for (size_t i = 0; i < 2; i++) {
        v.in.x.data = NULL;
        expect_error(calls[i](ctx, &v), "x", NULL);
        v = good;
        v.in.x.stride = V_D - 1;
        expect_error(calls[i](ctx, &v), "x", "stride");
        v.in.x.stride = -1;
        expect_error(calls[i](ctx, &v), "x", "stride");
        v = good;
        v.in.x.data = skew(v.in.x.data);
        expect_error(calls[i](ctx, &v), "x", "aligned");
        v = good;
        v.in.x.batch_stride = V_L * V_D - 1;
        expect_error(calls[i](ctx, &v), "x", "batch_stride");
        v = good;
        v.in.weight = NULL;
        expect_error(calls[i](ctx, &v), "weight", NULL);
        v = good;
        v.in.bias = skew(v.bufs[2]);
        expect_error(calls[i](ctx, &v), "bias", NULL);
        v = good;
        v.in.initial_state = skew(v.bufs[3]);
        expect_error(calls[i](ctx, &v), "initial_state", NULL);
        v = good;
    }
    v.y.data = NULL;
    expect_error(vfwd(ctx, &v), "y", NULL);
    v = good;
    v.y.stride = 3;
    expect_error(vfwd(ctx, &v), "y", "stride");
    v = good;
    v.y.batch_stride = -1;
    expect_error(vfwd(ctx, &v), "y", "batch_stride");
    v = good;
    v.y.data = skew(v.y.data);
    expect_error(vfwd(ctx, &v), "y", "aligned");
    v = good;
    v.fin = skew(v.fin);
    expect_error(vfwd(ctx, &v), "final_state", NULL);
    v = good;

    /* Backward outputs and workspace. */
    v.dy.data = NULL;
    expect_error(vbwd(ctx, &v), "dy", NULL);
    v = good;
    v.dy.stride = 1;
    expect_error(vbwd(ctx, &v), "dy", "stride");
    v = good;
    v.dy.data = skew(v.dy.data);
    expect_error(vbwd(ctx, &v), "dy", "aligned");
    v = good;
    v.dfin = skew(v.dfin);
    expect_error(vbwd(ctx, &v), "d_final_state", NULL);
    v = good;
    v.g.dx.data = NULL;
    expect_error(vbwd(ctx, &v), "dx", NULL);
    v = good;
    v.g.dx.stride = 2;
    expect_error(vbwd(ctx, &v), "dx", "stride");
    v = good;
    v.g.dx.batch_stride = 1;
    expect_error(vbwd(ctx, &v), "dx", "batch_stride");
    v = good;
    v.g.dweight = NULL;
    expect_error(vbwd(ctx, &v), "dweight", NULL);
    v = good;
    v.g.dbias = skew(v.g.dbias);
    expect_error(vbwd(ctx, &v), "dbias", NULL);
    v = good;
    v.g.d_initial_state = skew(v.bufs[3]);
    expect_error(vbwd(ctx, &v), "d_initial_state", NULL);
    v = good;
    assert_true(v.ws_bytes > 0);
    v.ws_bytes -= 4;
    expect_error(vbwd(ctx, &v), "workspace_bytes", NULL);
    v = good;
    v.ws = NULL;
    expect_error(vbwd(ctx, &v), "workspace", NULL);
    v = good;

    /* Decode. */
    v.in.x.data = NULL;
    expect_error(vupdate(ctx, &v), "x", NULL);
    v = good;
    v.in.weight = NULL;
    expect_error(vupdate(ctx, &v), "weight", NULL);
    v = good;
    v.in.bias = skew(v.bufs[2]);
    expect_error(vupdate(ctx, &v), "bias", NULL);
    v = good;
    v.state = NULL;
    expect_error(vupdate(ctx, &v), "conv_state", NULL);
    v = good;
    v.y.stride = V_D - 2;
    expect_error(vupdate(ctx, &v), "y", "stride");
    v = good;
    v.y.data = skew(v.y.data);
    expect_error(vupdate(ctx, &v), "y", "aligned");
    v = good;
    v.in.x.batch_stride = 1;
    expect_error(vupdate(ctx, &v), "x", "batch_stride");
    v = good;

    gu_sync();
    free_vsetup(&v);
    ssmjit_context_destroy(ctx);
}

static void expect_all(const void *dptr, size_t n, double want)
{
    double *h = f32_download(dptr, n);
    for (size_t i = 0; i < n; i++)
        if (!(h[i] == want || (isnan(want) && isnan(h[i]))))
            fail_msg("element %zu is %g, expected %g", i, h[i], want);
    free(h);
}

/* B or D = 0 writes nothing; L = 0 moves the initial state to the final
 * state (and its gradient back), and zeroes dweight and dbias; so does
 * B = 0 for the backward. */
static void test_empty(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    vsetup v = make_vsetup(ctx);
    const vsetup good = v;
    const size_t nst = V_B * V_D * (V_W - 1), nw = V_D * V_W;

    v.desc.batch = 0;
    ok(vfwd(ctx, &v));
    ok(vupdate(ctx, &v));
    v.desc = good.desc;
    v.desc.dim = 0;
    ok(vfwd(ctx, &v));
    ok(vbwd(ctx, &v));
    ok(vupdate(ctx, &v));
    v.desc = good.desc;
    v.desc.seqlen = 0;
    ok(vupdate(ctx, &v));
    gu_sync();
    expect_all(v.y.data, V_B * V_L * V_D, NAN);
    expect_all(v.fin, nst, NAN);
    expect_all(v.g.dweight, nw, NAN);
    expect_all(v.state, V_B * V_D * V_W, NAN);

    /* L = 0. */
    double *init = normal_array(nst), *dfin = normal_array(nst), *w = normal_array(nw);
    gu_upload_as(v.bufs[1], w, nw, SSMJIT_F32);
    gu_upload_as(v.bufs[3], init, nst, SSMJIT_F32);
    gu_upload_as(v.dfin, dfin, nst, SSMJIT_F32);
    v.g.d_initial_state = gu_alloc_poisoned(nst, SSMJIT_F32);
    ok(ssmjit_causal_conv1d_bwd_workspace_size(ctx, &v.desc, &v.ws_bytes));
    assert_true(v.ws_bytes <= good.ws_bytes);
    ok(vfwd(ctx, &v));
    ok(vbwd(ctx, &v));
    gu_sync();
    double *fin = f32_download(v.fin, nst), *dinit = f32_download(v.g.d_initial_state, nst);
    for (size_t i = 0; i < nst; i++) {
        assert_true(fin[i] == init[i]);
        assert_true(dinit[i] == dfin[i]);
    }
    expect_all(v.g.dweight, nw, 0.0);
    expect_all(v.g.dbias, V_D, 0.0);
    expect_all(v.y.data, V_B * V_L * V_D, NAN);
    expect_all(v.g.dx.data, V_B * V_L * V_D, NAN);

    /* B = 0: no workspace needed, the sums are empty. */
    gu_poison(v.g.dweight, nw * sizeof(float));
    gu_poison(v.g.dbias, V_D * sizeof(float));
    v.desc = good.desc;
    v.desc.batch = 0;
    ok(ssmjit_causal_conv1d_bwd_workspace_size(ctx, &v.desc, &v.ws_bytes));
    assert_int_equal(v.ws_bytes, 0);
    v.ws = NULL;
    ok(vbwd(ctx, &v));
    gu_sync();
    expect_all(v.g.dweight, nw, 0.0);
    expect_all(v.g.dbias, V_D, 0.0);

    free(init), free(dfin), free(w), free(fin), free(dinit);
    gu_free(v.g.d_initial_state);
    v.ws = good.ws;
    free_vsetup(&v);
    ssmjit_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fwd),
        cmocka_unit_test(test_bwd),
        cmocka_unit_test(test_fwd_wide),
        cmocka_unit_test(test_bwd_wide),
        cmocka_unit_test(test_fwd_many_pairs),
        cmocka_unit_test(test_bwd_many_pairs),
        cmocka_unit_test(test_fwd_windows),
        cmocka_unit_test(test_bwd_windows),
        cmocka_unit_test(test_bwd_optional_grads),
        cmocka_unit_test(test_decode_chain),
        cmocka_unit_test(test_decode_in_place),
        cmocka_unit_test(test_decode_windows),
        cmocka_unit_test(test_nonfinite_stays_local),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_empty),
    };
    tu_apply_test_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
