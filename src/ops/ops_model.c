/* The model layer's small ops (modules "model" and "model_bwd"): argument
 * checks, launch shapes, and the host half of the embedding gradient. */
#include "ops_model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "engine/kernel.h"
#include "validate.h"

#define THREADS 256u           /* columns per block of the row-loop kernels; vector blocks */
#define ROWS_PER_GRID 65535u   /* grid.y of the row loops, grid.x of the row kernels; they loop */
#define ROW_THREADS 256u       /* a row kernel's block (cross-entropy) */
#define ARGMAX_THREADS 1024u   /* argmax's block: a lone row (batch-1 decoding) fills an SM */
#define ARGMAX_SEG_THREADS 256u /* a block of a row's cluster */
#define ARGMAX_SEG_COLS 8192    /* columns a block of a row's cluster takes, at most, where 8 blocks reach:
                                 * its threads' four 16-byte loads each of a 16-bit row */
#define ARGMAX_SEGS_MAX 8       /* blocks a row's cluster, at most: the portable cluster size */

static unsigned grid_of(int64_t blocks)
{
    return blocks < ROWS_PER_GRID ? (unsigned)blocks : ROWS_PER_GRID;
}

/* Checks a [rows, width] operand of `dtype` and resolves its stride in
 * place. */
static ssmjit_status check_operand(const char *op, const char *name, ssmjit_matrix *m, ssmjit_dtype dtype,
                                   int64_t rows, int64_t width)
{
    return sj_check_matrix(op, name, m, ssmjit_dtype_size(dtype), 1, rows, width,
                           SJ_MATRIX_REQUIRED | SJ_MATRIX_ROWS, m);
}

/* Row-loop kernels have a block per THREADS columns in grid.x. */
static ssmjit_status check_col_tiles(int64_t cols, const char *op, const char *what)
{
    if (cols > 0 && (cols - 1) / THREADS >= 0x7fffffff)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "%s: %s = %lld is too large", op, what,
                        (long long)cols);
    return SSMJIT_OK;
}

/* Kernels index int32 arrays (ids, positions, columns) with these extents. */
static ssmjit_status check_int32(int64_t v, const char *op, const char *what)
{
    if (v > INT32_MAX)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "%s: %s = %lld is more than INT32_MAX", op, what,
                        (long long)v);
    return SSMJIT_OK;
}

/* The kernel `fmt` (printf-style) of the module its role belongs to. */
static ssmjit_status get_kernel(ssmjit_context *ctx, sj_kernel_role role, CUfunction *fn,
                                const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static ssmjit_status get_kernel(ssmjit_context *ctx, sj_kernel_role role, CUfunction *fn,
                                const char *fmt, ...)
{
    char name[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    return sj_kernel_get(ctx, role == SJ_ROLE_BACKWARD ? SJ_MODULE_MODEL_BWD : SJ_MODULE_MODEL, role,
                         name, fn);
}

/* A row-loop launch: a block per THREADS columns, grid.y walking rows. */
static ssmjit_status launch_rows(ssmjit_context *ctx, CUfunction fn, int64_t rows, int64_t cols,
                                 void *stream, void **args)
{
    sj_dim3 grid = {(unsigned)((cols + THREADS - 1) / THREADS), grid_of(rows), 1};
    sj_dim3 block = {THREADS, 1, 1};
    return sj_launch(ctx, fn, grid, block, 0, stream, args);
}

ssmjit_status sj_embedding_fwd(ssmjit_context *ctx, ssmjit_dtype dtype, int64_t n, int64_t d,
                               int64_t vocab, const int32_t *ids, const void *table,
                               ssmjit_matrix out, ssmjit_dtype out_dtype, void *stream)
{
    static const char op[] = "sj_embedding_fwd";
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(sj_check_dtype(dtype, op, "dtype"));
    SJ_TRY(sj_check_dtype(out_dtype, op, "out_dtype"));
    SJ_TRY(sj_check_extent(n, op, "n"));
    SJ_TRY(sj_check_extent(d, op, "d"));
    SJ_TRY(sj_check_extent(vocab, op, "vocab"));
    SJ_TRY(sj_check_size(vocab, d, 1, op, "vocab * d"));
    SJ_TRY(check_col_tiles(d, op, "d"));
    SJ_TRY(sj_check_ptr(ids, op, "ids"));
    SJ_TRY(sj_check_ptr(table, op, "table"));
    SJ_TRY(check_operand(op, "out", &out, out_dtype, n, d));
    if (n == 0 || d == 0)
        return SSMJIT_OK;
    if (vocab == 0)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: vocab = 0 but there are n = %lld ids to look up",
                        op, (long long)n);
    CUfunction fn;
    SJ_TRY(get_kernel(ctx, SJ_ROLE_FORWARD, &fn, "embedding_fwd_%s_%s", sj_dtype_suffix(dtype),
                         sj_dtype_suffix(out_dtype)));
    void *args[] = {&ids, &table, &vocab, &out.data, &out.stride, &n, &d};
    return launch_rows(ctx, fn, n, d, stream, args);
}

/* Stable bottom-up merge sort of pos[0..n) by ids[pos], ping-ponging with
 * tmp[0..n); the result ends in pos. */
static void sort_positions(const int32_t *ids, int32_t *pos, int32_t *tmp, int64_t n)
{
    int32_t *src = pos, *dst = tmp;
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = ids[src[j]] < ids[src[i]] ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        int32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != pos)
        memcpy(pos, src, (size_t)n * sizeof *pos);
}

ssmjit_status sj_embedding_bwd_plan(const int32_t *ids_host, int64_t n, int32_t *order,
                                    int32_t *seg_start, int32_t *seg_id, int64_t *nseg)
{
    static const char op[] = "sj_embedding_bwd_plan";
    SJ_TRY(sj_check_extent(n, op, "n"));
    SJ_TRY(check_int32(n, op, "n"));
    SJ_TRY(sj_check_ptr(ids_host, op, "ids_host"));
    SJ_TRY(sj_check_ptr(order, op, "order"));
    SJ_TRY(sj_check_ptr(seg_start, op, "seg_start"));
    SJ_TRY(sj_check_ptr(seg_id, op, "seg_id"));
    SJ_TRY(sj_check_ptr(nseg, op, "nseg"));
    for (int64_t t = 0; t < n; t++)
        order[t] = (int32_t)t;
    /* seg_id serves as the sort's scratch before it is filled. */
    sort_positions(ids_host, order, seg_id, n);
    int64_t s = 0;
    for (int64_t p = 0; p < n; p++)
        if (p == 0 || ids_host[order[p]] != ids_host[order[p - 1]]) {
            seg_start[s] = (int32_t)p;
            seg_id[s++] = ids_host[order[p]];
        }
    seg_start[s] = (int32_t)n;
    *nseg = s;
    return SSMJIT_OK;
}

ssmjit_status sj_embedding_bwd(ssmjit_context *ctx, ssmjit_dtype dtype, int64_t n, int64_t d,
                               int64_t nseg, const int32_t *order, const int32_t *seg_start,
                               const int32_t *seg_id, ssmjit_matrix dy, float *dtable,
                               void *stream)
{
    static const char op[] = "sj_embedding_bwd";
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(sj_check_dtype(dtype, op, "dtype"));
    SJ_TRY(sj_check_extent(n, op, "n"));
    SJ_TRY(sj_check_extent(d, op, "d"));
    SJ_TRY(sj_check_extent(nseg, op, "nseg"));
    SJ_TRY(check_int32(n, op, "n"));
    if (nseg > n)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: nseg = %lld is more than n = %lld", op,
                        (long long)nseg, (long long)n);
    SJ_TRY(check_col_tiles(d, op, "d"));
    SJ_TRY(sj_check_ptr(order, op, "order"));
    SJ_TRY(sj_check_ptr(seg_start, op, "seg_start"));
    SJ_TRY(sj_check_ptr(seg_id, op, "seg_id"));
    SJ_TRY(check_operand(op, "dy", &dy, dtype, n, d));
    SJ_TRY(sj_check_ptr(dtable, op, "dtable"));
    if (nseg == 0 || d == 0)
        return SSMJIT_OK;
    CUfunction fn;
    SJ_TRY(get_kernel(ctx, SJ_ROLE_BACKWARD, &fn, "embedding_bwd_%s", sj_dtype_suffix(dtype)));
    void *args[] = {&order, &seg_start, &seg_id, &dy.data, &dy.stride, &dtable, &nseg, &d};
    return launch_rows(ctx, fn, nseg, d, stream, args);
}

ssmjit_status sj_cross_entropy(ssmjit_context *ctx, ssmjit_dtype dtype, int64_t rows, int64_t vocab,
                               ssmjit_matrix logits, const int32_t *targets, float scale,
                               float *row_loss, float *loss, ssmjit_matrix dlogits, void *stream)
{
    static const char op[] = "sj_cross_entropy";
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(sj_check_dtype(dtype, op, "dtype"));
    SJ_TRY(sj_check_extent(rows, op, "rows"));
    SJ_TRY(sj_check_extent(vocab, op, "vocab"));
    SJ_TRY(check_int32(vocab, op, "vocab"));
    if (!isfinite(scale))
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: scale = %g is not finite", op, (double)scale);
    SJ_TRY(check_operand(op, "logits", &logits, dtype, rows, vocab));
    SJ_TRY(sj_check_ptr(targets, op, "targets"));
    SJ_TRY(sj_check_ptr(row_loss, op, "row_loss"));
    SJ_TRY(sj_check_ptr(loss, op, "loss"));
    if (dlogits.data) {
        SJ_TRY(check_operand(op, "dlogits", &dlogits, dtype, rows, vocab));
        /* Each thread reads a logit before writing its gradient, which
         * holds only when the two share rows element for element. */
        if (dlogits.data == logits.data && dlogits.stride != logits.stride)
            return sj_error(SSMJIT_ERR_INVALID_ARG,
                            "%s: dlogits.stride = %lld is not logits.stride = %lld though dlogits "
                            "aliases logits",
                            op, (long long)dlogits.stride, (long long)logits.stride);
    }
    if (rows > 0 && vocab == 0)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: vocab = 0 but rows = %lld", op, (long long)rows);
    CUfunction fn;
    if (rows > 0) {
        SJ_TRY(get_kernel(ctx, SJ_ROLE_BACKWARD, &fn, "cross_entropy_%s", sj_dtype_suffix(dtype)));
        void *args[] = {&logits.data, &logits.stride, &targets, &scale, &row_loss,
                        &dlogits.data, &dlogits.stride, &rows, &vocab};
        sj_dim3 grid = {grid_of(rows), 1, 1}, block = {ROW_THREADS, 1, 1};
        SJ_TRY(sj_launch(ctx, fn, grid, block, 0, stream, args));
    }
    SJ_TRY(get_kernel(ctx, SJ_ROLE_BACKWARD, &fn, "cross_entropy_sum"));
    void *args[] = {&row_loss, &rows, &scale, &loss};
    sj_dim3 grid = {1, 1, 1}, block = {SJ_CE_SUM_THREADS, 1, 1};
    return sj_launch(ctx, fn, grid, block, 0, stream, args);
}

ssmjit_status sj_argmax_rows(ssmjit_context *ctx, ssmjit_dtype dtype, int64_t rows, int64_t cols,
                             ssmjit_matrix x, int32_t *out, void *stream)
{
    static const char op[] = "sj_argmax_rows";
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(sj_check_dtype(dtype, op, "dtype"));
    SJ_TRY(sj_check_extent(rows, op, "rows"));
    SJ_TRY(sj_check_extent(cols, op, "cols"));
    SJ_TRY(check_int32(cols, op, "cols"));
    SJ_TRY(check_operand(op, "x", &x, dtype, rows, cols));
    SJ_TRY(sj_check_ptr(out, op, "out"));
    if (rows == 0 || cols == 0)
        return SSMJIT_OK;
    CUfunction fn;
    SJ_TRY(get_kernel(ctx, SJ_ROLE_FORWARD, &fn, "argmax_rows_%s", sj_dtype_suffix(dtype)));
    const int64_t seg = sj_argmax_segment(ctx, rows, cols);
    void *args[] = {&x.data, &x.stride, &out, &rows, &cols, (void *)&seg};
    if (seg == 0) {
        sj_dim3 grid = {grid_of(rows), 1, 1}, block = {ARGMAX_THREADS, 1, 1};
        return sj_launch(ctx, fn, grid, block, 0, stream, args);
    }
    const unsigned segs = (unsigned)sj_ceil_div(cols, seg);
    sj_dim3 grid = {segs, (unsigned)rows, 1}, block = {ARGMAX_SEG_THREADS, 1, 1};
    return sj_launch_cluster(ctx, fn, grid, block, segs, stream, args);
}

int64_t sj_argmax_segment(const ssmjit_context *ctx, int64_t rows, int64_t cols)
{
    const sj_device_props *p = sj_context_props(ctx);
    if (!sj_launch_sm90(ctx) || rows >= 2 * (int64_t)p->sm_count || cols < 2 * ARGMAX_SEG_COLS)
        return 0;
    const int64_t segs = sj_min64(sj_ceil_div(cols, ARGMAX_SEG_COLS), ARGMAX_SEGS_MAX);
    return sj_ceil_div(sj_ceil_div(cols, segs), 8) * 8;
}

/* A one-dimensional f32 kernel over n elements, grid-strided; the caller
 * has checked ctx and the pointers. */
static ssmjit_status run_vector(ssmjit_context *ctx, const char *op, sj_kernel_role role,
                                const char *kernel, int64_t n, void **args, int nargs, void *stream)
{
    SJ_TRY(sj_check_extent(n, op, "n"));
    SJ_TRY(sj_check_size(n, (int64_t)sizeof(float), 1, op, "n"));
    if (n == 0)
        return SSMJIT_OK;
    CUfunction fn;
    SJ_TRY(get_kernel(ctx, role, &fn, "%s", kernel));
    args[nargs] = &n;
    sj_dim3 grid = {grid_of((n + THREADS - 1) / THREADS), 1, 1}, block = {THREADS, 1, 1};
    return sj_launch(ctx, fn, grid, block, 0, stream, args);
}

ssmjit_status sj_neg_exp_f32(ssmjit_context *ctx, int64_t n, const float *x, float *y, void *stream)
{
    static const char op[] = "sj_neg_exp_f32";
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(sj_check_ptr(x, op, "x"));
    SJ_TRY(sj_check_ptr(y, op, "y"));
    void *args[] = {&x, &y, NULL};
    return run_vector(ctx, op, SJ_ROLE_FORWARD, "neg_exp_f32", n, args, 2, stream);
}

ssmjit_status sj_mul_f32(ssmjit_context *ctx, int64_t n, const float *a, const float *b, float *y,
                         void *stream)
{
    static const char op[] = "sj_mul_f32";
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(sj_check_ptr(a, op, "a"));
    SJ_TRY(sj_check_ptr(b, op, "b"));
    SJ_TRY(sj_check_ptr(y, op, "y"));
    void *args[] = {&a, &b, &y, NULL};
    return run_vector(ctx, op, SJ_ROLE_BACKWARD, "mul_f32", n, args, 3, stream);
}

ssmjit_status sj_conv_state_fill(ssmjit_context *ctx, ssmjit_dtype dtype, int64_t B, int64_t L,
                                 int64_t D, int64_t W, ssmjit_matrix x, float *state, void *stream)
{
    static const char op[] = "sj_conv_state_fill";
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(sj_check_dtype(dtype, op, "dtype"));
    SJ_TRY(sj_check_extent(B, op, "B"));
    SJ_TRY(sj_check_extent(L, op, "L"));
    SJ_TRY(sj_check_extent(D, op, "D"));
    if (W < 2 || W > 8)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: W = %lld is outside 2..8", op, (long long)W);
    SJ_TRY(check_col_tiles(D, op, "D"));
    SJ_TRY(sj_check_size(B, L, 1, op, "B * L"));
    SJ_TRY(check_operand(op, "x", &x, dtype, B * L, D));
    SJ_TRY(sj_check_size(B, D, W, op, "B * D * W"));
    SJ_TRY(sj_check_ptr(state, op, "state"));
    if (B == 0 || D == 0)
        return SSMJIT_OK;
    CUfunction fn;
    SJ_TRY(get_kernel(ctx, SJ_ROLE_FORWARD, &fn, "conv_state_fill_%s", sj_dtype_suffix(dtype)));
    int64_t rows = B * W;
    void *args[] = {&x.data, &x.stride, &state, &B, &L, &D, &W};
    return launch_rows(ctx, fn, rows, D, stream, args);
}
