/* The elementwise ops on the GPU against the double reference: SiLU and
 * softplus (both sides of its threshold) forward and backward, softplus's
 * fast-math paths element by element, the SiLU gate forward and backward,
 * each dtype, contiguous, padded, aligned (16-byte groups and a partial
 * last one) and packed (halves of one buffer) layouts, poisoned outputs,
 * in place, more rows than gridDim.y holds, and argument validation. */
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
#include "ref_elementwise.h"
#include "test_util.h"

/* ------------------------------------------------------------------------ */
/* The ops under test, called through one signature                         */
/* ------------------------------------------------------------------------ */

typedef enum op_kind { OP_ACT_FWD, OP_ACT_BWD, OP_GATE_FWD, OP_GATE_BWD } op_kind;

typedef struct op {
    op_kind kind;
    ssmjit_activation act; /* OP_ACT_* only */
} op;

enum { MAX_IN = 3, MAX_OUT = 2 };
static const size_t num_in[] = {1, 2, 2, 3}, num_out[] = {1, 1, 1, 2};
/* Argument names in the order of the declarations in ssmjit.h. */
static const char *const in_names[][MAX_IN] = {
    {"x"}, {"x", "dy"}, {"y", "z"}, {"y", "z", "dout"}};
static const char *const out_names[][MAX_OUT] = {{"y"}, {"dx"}, {"out"}, {"dy", "dz"}};

/* What the descriptors hold besides the activation; desc_skew and
 * args_skew are added to the structs' struct_size (0: valid). */
typedef struct shape {
    ssmjit_dtype dtype;
    int64_t rows, cols;
    size_t desc_skew, args_skew;
} shape;

/* s NULL: a NULL descriptor. */
static ssmjit_status call_op(ssmjit_context *ctx, op o, const shape *s, const ssmjit_matrix *in,
                             const ssmjit_matrix *out)
{
    const shape none = {SSMJIT_F32, 0, 0, 0, 0};
    const shape *d = s ? s : &none;
    const ssmjit_activation_desc ad = {sizeof ad + d->desc_skew, o.act, d->dtype, d->rows, d->cols};
    const ssmjit_gate_desc gd = {sizeof gd + d->desc_skew, d->dtype, d->rows, d->cols};
    switch (o.kind) {
    case OP_ACT_FWD: {
        const ssmjit_activation_fwd_args a = {sizeof a + d->args_skew, in[0], out[0]};
        return ssmjit_activation_fwd(ctx, s ? &ad : NULL, &a, NULL);
    }
    case OP_ACT_BWD: {
        const ssmjit_activation_bwd_args a = {sizeof a + d->args_skew, in[0], in[1], out[0]};
        return ssmjit_activation_bwd(ctx, s ? &ad : NULL, &a, NULL);
    }
    case OP_GATE_FWD: {
        const ssmjit_gate_fwd_args a = {sizeof a + d->args_skew, in[0], in[1], out[0]};
        return ssmjit_gate_fwd(ctx, s ? &gd : NULL, &a, NULL);
    }
    case OP_GATE_BWD: {
        const ssmjit_gate_bwd_args a = {sizeof a + d->args_skew, in[0], in[1], in[2], out[0], out[1]};
        return ssmjit_gate_bwd(ctx, s ? &gd : NULL, &a, NULL);
    }
    }
    fail_msg("unknown op %d", (int)o.kind);
    return SSMJIT_ERR_INTERNAL;
}

static void ref_op(op o, double *const *in, double **out, size_t n)
{
    switch (o.kind) {
    case OP_ACT_FWD: ref_activation_fwd(o.act, in[0], out[0], n); break;
    case OP_ACT_BWD: ref_activation_bwd(o.act, in[0], in[1], out[0], n); break;
    case OP_GATE_FWD: ref_gate_fwd(in[0], in[1], out[0], n); break;
    case OP_GATE_BWD: ref_gate_bwd(in[0], in[1], in[2], out[0], out[1], n); break;
    }
}

/* Fresh input i: activations over a range that crosses the softplus
 * threshold at 20, gradients of order one.  In f16, softplus and its
 * gradient below -9 fall under the smallest normal half (6.1e-5), where
 * rounding alone exceeds the tolerance of a one-element case. */
static void fill_input(op o, ssmjit_dtype dtype, size_t i, double *v, size_t n)
{
    int is_grad = (o.kind == OP_ACT_BWD && i == 1) || (o.kind == OP_GATE_BWD && i == 2);
    if (is_grad)
        tu_fill_uniform(v, n, -2.0, 2.0);
    else if (o.kind <= OP_ACT_BWD && o.act == SSMJIT_ACT_SOFTPLUS)
        tu_fill_uniform(v, n, dtype == SSMJIT_F16 ? -9.0 : -30.0, 30.0);
    else if (o.kind >= OP_GATE_FWD && i == 0)
        tu_fill_uniform(v, n, -4.0, 4.0);
    else
        tu_fill_uniform(v, n, -12.0, 12.0);
}

/* ------------------------------------------------------------------------ */
/* Device matrices inside NaN padding                                       */
/* ------------------------------------------------------------------------ */

/* k [rows, cols] matrices side by side in one buffer: matrix i at column
 * lead + i * (cols + gap) of rows ld = lead + k * (cols + gap) wide.  All
 * other elements are NaN: read, they poison the result; written, the
 * padding check catches them. */
typedef struct dbuf {
    void *base;
    size_t rows, cols, k, lead, gap, ld;
    ssmjit_dtype dtype;
} dbuf;

typedef enum layout {
    LAYOUT_CONTIGUOUS, /* each matrix alone, stride 0 */
    LAYOUT_PADDED,     /* each matrix alone, at an odd offset of wider rows */
    LAYOUT_ALIGNED,    /* each matrix alone, rows of a multiple of 16 elements:
                          whole 16-byte groups and a partial last one */
    LAYOUT_PACKED      /* all inputs in one buffer, all outputs in another */
} layout;

static dbuf dbuf_shape(size_t rows, size_t cols, size_t k, ssmjit_dtype dtype, layout l)
{
    dbuf b = {NULL, rows, cols, k, 0, 0, 0, dtype};
    if (l == LAYOUT_PADDED) {
        b.lead = cols + 1;
        b.gap = 2;
    } else if (l == LAYOUT_ALIGNED) {
        b.gap = (16 - cols % 16) % 16;
    }
    b.ld = b.lead + k * (cols + b.gap);
    return b;
}

static size_t dbuf_col(const dbuf *b, size_t i) { return b->lead + i * (b->cols + b->gap); }

/* Uploads hosts[0..k), each [rows * cols], rounding them in place to what
 * the device holds. */
static dbuf dbuf_upload(double *const *hosts, size_t k, size_t rows, size_t cols,
                        ssmjit_dtype dtype, layout l)
{
    dbuf b = dbuf_shape(rows, cols, k, dtype, l);
    double *pad = tu_doubles(rows * b.ld);
    for (size_t e = 0; e < rows * b.ld; ++e)
        pad[e] = NAN;
    for (size_t i = 0; i < k; ++i)
        for (size_t r = 0; r < rows; ++r)
            memcpy(pad + r * b.ld + dbuf_col(&b, i), hosts[i] + r * cols, cols * sizeof(double));
    b.base = gu_upload_new(pad, rows * b.ld, dtype);
    for (size_t i = 0; i < k; ++i)
        for (size_t r = 0; r < rows; ++r)
            memcpy(hosts[i] + r * cols, pad + r * b.ld + dbuf_col(&b, i), cols * sizeof(double));
    free(pad);
    return b;
}

static dbuf dbuf_poisoned(size_t k, size_t rows, size_t cols, ssmjit_dtype dtype, layout l)
{
    dbuf b = dbuf_shape(rows, cols, k, dtype, l);
    b.base = gu_alloc_poisoned(rows * b.ld, dtype);
    return b;
}

/* Downloads the k matrices into hosts[] and asserts the padding is NaN. */
static void dbuf_download(const dbuf *b, double **hosts)
{
    double *pad = tu_doubles(b->rows * b->ld);
    gu_download_as(pad, b->base, b->rows * b->ld, b->dtype);
    for (size_t r = 0; r < b->rows; ++r)
        for (size_t c = 0; c < b->ld; ++c) {
            double v = pad[r * b->ld + c];
            size_t rel = c < b->lead ? SIZE_MAX : c - b->lead, i = rel / (b->cols + b->gap);
            size_t j = rel % (b->cols + b->gap);
            if (c >= b->lead && j < b->cols)
                hosts[i][r * b->cols + j] = v;
            else if (!isnan(v))
                fail_msg("padding at row %zu column %zu was written", r, c);
        }
    free(pad);
}

static ssmjit_matrix dbuf_view(const dbuf *b, size_t i)
{
    ssmjit_matrix m = {(char *)b->base + dbuf_col(b, i) * ssmjit_dtype_size(b->dtype),
                       b->ld == b->cols ? 0 : (int64_t)b->ld, 0};
    return m;
}

/* The op's inputs or outputs in a layout: one dbuf per matrix, or one for
 * all when packed. */
typedef struct dset {
    dbuf bufs[MAX_IN];
    size_t nbufs, k;
    ssmjit_matrix views[MAX_IN];
} dset;

static void dset_views(dset *s)
{
    for (size_t i = 0; i < s->k; ++i)
        s->views[i] = s->nbufs == 1 && s->k > 1 ? dbuf_view(&s->bufs[0], i)
                                                : dbuf_view(&s->bufs[i], 0);
}

static dset dset_upload(double *const *hosts, size_t k, size_t rows, size_t cols,
                        ssmjit_dtype dtype, layout l)
{
    dset s = {{{0}}, l == LAYOUT_PACKED ? 1 : k, k, {{0}}};
    if (l == LAYOUT_PACKED)
        s.bufs[0] = dbuf_upload(hosts, k, rows, cols, dtype, l);
    else
        for (size_t i = 0; i < k; ++i)
            s.bufs[i] = dbuf_upload(hosts + i, 1, rows, cols, dtype, l);
    dset_views(&s);
    return s;
}

static dset dset_poisoned(size_t k, size_t rows, size_t cols, ssmjit_dtype dtype, layout l)
{
    dset s = {{{0}}, l == LAYOUT_PACKED ? 1 : k, k, {{0}}};
    for (size_t i = 0; i < s.nbufs; ++i)
        s.bufs[i] = dbuf_poisoned(s.nbufs == 1 ? k : 1, rows, cols, dtype, l);
    dset_views(&s);
    return s;
}

static void dset_download(const dset *s, double **hosts)
{
    for (size_t i = 0; i < s->nbufs; ++i)
        dbuf_download(&s->bufs[i], s->nbufs == 1 ? hosts : hosts + i);
}

static void dset_free(dset *s)
{
    for (size_t i = 0; i < s->nbufs; ++i)
        gu_free(s->bufs[i].base);
    s->nbufs = 0;
}

/* ------------------------------------------------------------------------ */
/* Checks against the reference                                             */
/* ------------------------------------------------------------------------ */

static double **host_set(size_t k, size_t n)
{
    double **h = calloc(MAX_IN, sizeof *h);
    assert_non_null(h);
    for (size_t i = 0; i < k; ++i)
        h[i] = tu_doubles(n);
    return h;
}

static void free_host_set(double **h)
{
    for (size_t i = 0; i < MAX_IN; ++i)
        free(h[i]);
    free(h);
}

static void expect_outputs(op o, double **got, double **ref, size_t rows, size_t cols,
                           ssmjit_dtype dtype, layout l, int in_place)
{
    static const char *const kinds[] = {"activation_fwd", "activation_bwd", "gate_fwd",
                                        "gate_bwd"};
    for (size_t i = 0; i < num_out[o.kind]; ++i) {
        double err = tu_rel_err(got[i], ref[i], rows * cols);
        if (!(err <= gu_tolerance(dtype)))
            fail_msg("%s (act %d) %s, dtype %s, [%zu, %zu], layout %d%s: relative error %g > %g",
                     kinds[o.kind], (int)o.act, out_names[o.kind][i],
                     dtype == SSMJIT_F32 ? "f32" : dtype == SSMJIT_F16 ? "f16" : "bf16", rows,
                     cols, (int)l, in_place ? ", in place" : "", err, gu_tolerance(dtype));
    }
}

/* One call of `o` on fresh inputs.  in_place: each output is written over
 * the input of the same index (same buffer, same stride). */
static void check_op(ssmjit_context *ctx, op o, ssmjit_dtype dtype, size_t rows, size_t cols,
                     layout l, int in_place)
{
    const size_t n = rows * cols, nin = num_in[o.kind], nout = num_out[o.kind];
    double **in = host_set(nin, n), **ref = host_set(nout, n), **got = host_set(MAX_IN, n);
    for (size_t i = 0; i < nin; ++i)
        fill_input(o, dtype, i, in[i], n);
    dset din = dset_upload(in, nin, rows, cols, dtype, l);
    dset dout = in_place ? din : dset_poisoned(nout, rows, cols, dtype, l);
    shape desc = {dtype, (int64_t)rows, (int64_t)cols, 0, 0};
    assert_int_equal(call_op(ctx, o, &desc, din.views, dout.views), SSMJIT_OK);
    gu_sync();
    ref_op(o, in, ref, n);
    dset_download(&dout, got);
    expect_outputs(o, got, ref, rows, cols, dtype, l, in_place);
    dset_free(&din);
    if (!in_place)
        dset_free(&dout);
    free_host_set(in), free_host_set(ref), free_host_set(got);
}

static const ssmjit_dtype dtypes[] = {SSMJIT_F32, SSMJIT_F16, SSMJIT_BF16};

/* Every dtype and layout over a few shapes, odd widths included. */
static void check_all(op o)
{
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    static const size_t shapes[][2] = {{1, 1}, {3, 7}, {64, 1000}, {257, 33}, {2, 5000}};
    for (size_t t = 0; t < 3; ++t)
        for (int l = LAYOUT_CONTIGUOUS; l <= LAYOUT_PACKED; ++l)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
                check_op(ctx, o, dtypes[t], shapes[s][0], shapes[s][1], (layout)l, 0);
    ssmjit_context_destroy(ctx);
}

static void test_silu_fwd(void **state)
{
    (void)state;
    check_all((op){OP_ACT_FWD, SSMJIT_ACT_SILU});
}

static void test_silu_bwd(void **state)
{
    (void)state;
    check_all((op){OP_ACT_BWD, SSMJIT_ACT_SILU});
}

static void test_softplus_fwd(void **state)
{
    (void)state;
    check_all((op){OP_ACT_FWD, SSMJIT_ACT_SOFTPLUS});
}

static void test_softplus_bwd(void **state)
{
    (void)state;
    check_all((op){OP_ACT_BWD, SSMJIT_ACT_SOFTPLUS});
}

static void test_gate_fwd(void **state)
{
    (void)state;
    check_all((op){OP_GATE_FWD, SSMJIT_ACT_SILU});
}

static void test_gate_bwd(void **state)
{
    (void)state;
    check_all((op){OP_GATE_BWD, SSMJIT_ACT_SILU});
}

/* Under fast math softplus takes a cheaper path (max(x, 0) + t P(t), t =
 * e^-|x|, P a polynomial): element by element, small results included, it
 * must stay within the f32 tolerance of the double reference. */
static void test_softplus_fast_math(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_ON);
    tu_seed();
    const size_t rows = 64, cols = 1000, n = rows * cols;
    double *x = tu_doubles(n), *want = tu_doubles(n), *got = tu_doubles(n);
    tu_fill_uniform(x, n, -30.0, 30.0);
    void *dx = gu_upload_new(x, n, SSMJIT_F32), *dy = gu_alloc_poisoned(n, SSMJIT_F32);
    const ssmjit_activation_desc desc = {sizeof desc, SSMJIT_ACT_SOFTPLUS, SSMJIT_F32, (int64_t)rows,
                                         (int64_t)cols};
    const ssmjit_activation_fwd_args args = {sizeof args, {dx, 0, 0}, {dy, 0, 0}};
    assert_int_equal(ssmjit_activation_fwd(ctx, &desc, &args, NULL), SSMJIT_OK);
    gu_sync();
    gu_download_as(got, dy, n, SSMJIT_F32);
    ref_activation_fwd(SSMJIT_ACT_SOFTPLUS, x, want, n);
    for (size_t i = 0; i < n; ++i) {
        const double err = fabs(got[i] - want[i]) / want[i];
        if (!(err <= gu_tolerance(SSMJIT_F32)))
            fail_msg("softplus(%.9g): %.9g, want %.9g (relative error %g)", x[i], got[i], want[i], err);
    }
    gu_free(dx), gu_free(dy);
    free(x), free(want), free(got);
    ssmjit_context_destroy(ctx);
}

static const op all_ops[] = {{OP_ACT_FWD, SSMJIT_ACT_SILU},     {OP_ACT_BWD, SSMJIT_ACT_SILU},
                             {OP_ACT_FWD, SSMJIT_ACT_SOFTPLUS}, {OP_ACT_BWD, SSMJIT_ACT_SOFTPLUS},
                             {OP_GATE_FWD, SSMJIT_ACT_SILU},    {OP_GATE_BWD, SSMJIT_ACT_SILU}};
#define NUM_OPS (sizeof all_ops / sizeof all_ops[0])

/* Each output over the input of the same index, contiguous and strided. */
static void test_in_place(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    for (size_t i = 0; i < NUM_OPS; ++i)
        for (size_t t = 0; t < 3; ++t) {
            check_op(ctx, all_ops[i], dtypes[t], 37, 129, LAYOUT_CONTIGUOUS, 1);
            check_op(ctx, all_ops[i], dtypes[t], 37, 129, LAYOUT_PADDED, 1);
            check_op(ctx, all_ops[i], dtypes[t], 37, 129, LAYOUT_ALIGNED, 1);
        }
    ssmjit_context_destroy(ctx);
}

/* More rows than gridDim.y can hold: the kernels loop over rows. */
static void test_many_rows(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    for (size_t i = 0; i < NUM_OPS; ++i) {
        check_op(ctx, all_ops[i], SSMJIT_F32, 70000, 3, LAYOUT_CONTIGUOUS, 0);
        check_op(ctx, all_ops[i], SSMJIT_BF16, 70000, 3, LAYOUT_PADDED, 0);
        check_op(ctx, all_ops[i], SSMJIT_F16, 70000, 21, LAYOUT_ALIGNED, 0);
    }
    ssmjit_context_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Validation and empty extents                                             */
/* ------------------------------------------------------------------------ */

/* `word` occurs in msg delimited by non-identifier characters, so "y"
 * matches "y.data" but not "dy". */
static int names_word(const char *msg, const char *word)
{
    const size_t len = strlen(word);
    for (const char *p = strstr(msg, word); p; p = strstr(p + 1, word)) {
        int before = p == msg || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        int after = !(isalnum((unsigned char)p[len]) || p[len] == '_');
        if (before && after)
            return 1;
    }
    return 0;
}

/* msg names one of the '|'-separated alternatives in `fields`. */
static int names(const char *msg, const char *fields)
{
    char word[64];
    for (const char *f = fields; *f;) {
        size_t len = strcspn(f, "|");
        assert_true(len < sizeof word);
        memcpy(word, f, len);
        word[len] = 0;
        if (names_word(msg, word))
            return 1;
        f += len + (f[len] == '|');
    }
    return 0;
}

static void expect_error(ssmjit_status got, ssmjit_status want, const char *field,
                         const char *also)
{
    if (got != want && !(want == SSMJIT_ERR_UNSUPPORTED && got == SSMJIT_ERR_INVALID_ARG))
        fail_msg("status %s, expected %s", ssmjit_status_string(got), ssmjit_status_string(want));
    const char *msg = ssmjit_last_error();
    if (!names(msg, field) || (also && !strstr(msg, also)))
        fail_msg("error \"%s\" does not name %s%s%s", msg, field, also ? " and " : "",
                 also ? also : "");
}

enum { V_ROWS = 4, V_COLS = 8 };

static void check_validation(ssmjit_context *ctx, op o)
{
    const size_t nin = num_in[o.kind], nout = num_out[o.kind];
    ssmjit_matrix in[MAX_IN], out[MAX_OUT];
    void *bufs[MAX_IN + MAX_OUT];
    for (size_t i = 0; i < nin + nout; ++i)
        bufs[i] = gu_alloc_poisoned(V_ROWS * V_COLS, SSMJIT_F32);
    for (size_t i = 0; i < nin; ++i)
        in[i] = (ssmjit_matrix){bufs[i], 0, 0};
    for (size_t i = 0; i < nout; ++i)
        out[i] = (ssmjit_matrix){bufs[nin + i], 0, 0};
    const shape ok = {SSMJIT_F32, V_ROWS, V_COLS, 0, 0};
    shape desc = ok;
    assert_int_equal(call_op(ctx, o, &desc, in, out), SSMJIT_OK);
    gu_sync();

    expect_error(call_op(NULL, o, &desc, in, out), SSMJIT_ERR_INVALID_ARG, "ctx", NULL);
    expect_error(call_op(ctx, o, NULL, in, out), SSMJIT_ERR_INVALID_ARG, "desc", NULL);
    desc.rows = -1;
    expect_error(call_op(ctx, o, &desc, in, out), SSMJIT_ERR_INVALID_ARG, "rows", NULL);
    desc = ok;
    desc.cols = -2;
    expect_error(call_op(ctx, o, &desc, in, out), SSMJIT_ERR_INVALID_ARG, "cols", NULL);
    desc = ok;
    desc.dtype = (ssmjit_dtype)7;
    expect_error(call_op(ctx, o, &desc, in, out), SSMJIT_ERR_UNSUPPORTED, "dtype", NULL);
    desc = ok;
    desc.desc_skew = 8;
    expect_error(call_op(ctx, o, &desc, in, out), SSMJIT_ERR_INVALID_ARG, "desc", "struct_size");
    desc = ok;
    desc.args_skew = (size_t)-1;
    expect_error(call_op(ctx, o, &desc, in, out), SSMJIT_ERR_INVALID_ARG, "args", "struct_size");
    desc = ok;
    if (o.kind <= OP_ACT_BWD) {
        op bad = {o.kind, (ssmjit_activation)5};
        expect_error(call_op(ctx, bad, &desc, in, out), SSMJIT_ERR_UNSUPPORTED, "act|activation",
                     NULL);
    }
    for (size_t i = 0; i < nin; ++i) {
        ssmjit_matrix keep = in[i];
        in[i].data = NULL;
        expect_error(call_op(ctx, o, &desc, in, out), SSMJIT_ERR_INVALID_ARG, in_names[o.kind][i],
                     NULL);
        in[i] = keep;
        in[i].stride = V_COLS - 1;
        expect_error(call_op(ctx, o, &desc, in, out), SSMJIT_ERR_INVALID_ARG, in_names[o.kind][i],
                     "stride");
        in[i].stride = -V_COLS;
        expect_error(call_op(ctx, o, &desc, in, out), SSMJIT_ERR_INVALID_ARG, in_names[o.kind][i],
                     "stride");
        in[i] = keep;
        in[i].batch_stride = V_ROWS * V_COLS;
        expect_error(call_op(ctx, o, &desc, in, out), SSMJIT_ERR_INVALID_ARG, in_names[o.kind][i],
                     "batch_stride");
        in[i] = keep;
        in[i].data = (char *)keep.data + 2;
        expect_error(call_op(ctx, o, &desc, in, out), SSMJIT_ERR_INVALID_ARG, in_names[o.kind][i],
                     "aligned");
        in[i] = keep;
    }
    for (size_t i = 0; i < nout; ++i) {
        ssmjit_matrix keep = out[i];
        out[i].data = NULL;
        expect_error(call_op(ctx, o, &desc, in, out), SSMJIT_ERR_INVALID_ARG,
                     out_names[o.kind][i], NULL);
        out[i] = keep;
        out[i].stride = 1;
        expect_error(call_op(ctx, o, &desc, in, out), SSMJIT_ERR_INVALID_ARG,
                     out_names[o.kind][i], "stride");
        out[i] = keep;
        out[i].batch_stride = -1;
        expect_error(call_op(ctx, o, &desc, in, out), SSMJIT_ERR_INVALID_ARG,
                     out_names[o.kind][i], "batch_stride");
        out[i] = keep;
        out[i].data = (char *)keep.data + 1;
        expect_error(call_op(ctx, o, &desc, in, out), SSMJIT_ERR_INVALID_ARG,
                     out_names[o.kind][i], "aligned");
        out[i] = keep;
    }

    /* Empty extents succeed and write nothing. */
    for (size_t i = 0; i < nout; ++i)
        gu_poison(bufs[nin + i], V_ROWS * V_COLS * sizeof(float));
    desc.rows = 0;
    assert_int_equal(call_op(ctx, o, &desc, in, out), SSMJIT_OK);
    desc = ok;
    desc.cols = 0;
    assert_int_equal(call_op(ctx, o, &desc, in, out), SSMJIT_OK);
    gu_sync();
    for (size_t i = 0; i < nout; ++i) {
        double got[V_ROWS * V_COLS];
        gu_download_as(got, bufs[nin + i], V_ROWS * V_COLS, SSMJIT_F32);
        for (size_t e = 0; e < V_ROWS * V_COLS; ++e)
            assert_true(isnan(got[e]));
    }
    for (size_t i = 0; i < nin + nout; ++i)
        gu_free(bufs[i]);
}

static void test_validation(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    for (size_t i = 0; i < NUM_OPS; ++i)
        check_validation(ctx, all_ops[i]);
    ssmjit_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_silu_fwd),     cmocka_unit_test(test_silu_bwd),
        cmocka_unit_test(test_softplus_fwd), cmocka_unit_test(test_softplus_bwd),
        cmocka_unit_test(test_softplus_fast_math),
        cmocka_unit_test(test_gate_fwd),     cmocka_unit_test(test_gate_bwd),
        cmocka_unit_test(test_in_place),     cmocka_unit_test(test_many_rows),
        cmocka_unit_test(test_validation),
    };
    tu_apply_test_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
