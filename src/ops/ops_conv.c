/* Causal depthwise conv1d: argument checks, launch plans and launches for
 * the modules "conv" (forward), "conv_bwd" (backward) and "conv_update"
 * (decode). */
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "engine/kernel.h"
#include "ops_conv.h"
#include "validate.h"

enum {
    MIN_WIDTH = 2,
    MAX_WIDTH = 8,
    THREADS = 128,        /* per block of the conv and update kernels (the 4-tap backward ones
                             are compiled for at most this: kernels_src/conv_bwd.cu,
                             checked by tests/test_compile.c) */
    REDUCE_THREADS = 256,
    GRID_Y_MAX = 65535,   /* gridDim.y limit; the kernels loop over the rest */
    MAX_CHUNK = 64,       /* tokens a thread walks, at most and at least */
    MIN_CHUNK = 16
};

/* Mirrors of the kernels' argument structs (kernels_src/conv_common.cuh and
 * conv_update.cu): the same fields in the same order, all 8 bytes wide. */
typedef struct conv_fwd_args {
    const void *x;
    void *y;
    const void *weight, *bias, *init_state;
    void *final_state;
    int64_t sx, sy;
    int64_t bsx, bsy;
    int64_t batch, seqlen, dim, width;
    int64_t chunk, silu;
} conv_fwd_args;

typedef struct conv_bwd_args {
    const void *x, *dy;
    void *dx;
    const void *weight, *bias, *init_state, *dfinal_state;
    void *dinit_state, *partial;
    int64_t sx, sdy, sdx;
    int64_t bsx, bsdy, bsdx;
    int64_t batch, seqlen, dim, width;
    int64_t chunk, silu;
} conv_bwd_args;

typedef struct conv_update_args {
    const void *x;
    void *y;
    const void *weight, *bias;
    void *state;
    int64_t sx, sy;
    int64_t bsx, bsy;
    int64_t batch, seqlen, dim, width;
    int64_t silu;
} conv_update_args;

/* ------------------------------------------------------------------------ */
/* Argument checks                                                          */
/* ------------------------------------------------------------------------ */

static ssmjit_status check_desc(ssmjit_context *ctx, const char *op, const ssmjit_conv1d_desc *d)
{
    SJ_TRY(sj_check_context(ctx, op));
    SJ_CHECK_STRUCT(op, "desc", d, ssmjit_conv1d_desc);
    SJ_TRY(sj_check_dtype(d->dtype, op, "desc->dtype"));
    SJ_TRY(sj_check_extent(d->batch, op, "desc->batch"));
    SJ_TRY(sj_check_extent(d->seqlen, op, "desc->seqlen"));
    SJ_TRY(sj_check_extent(d->dim, op, "desc->dim"));
    SJ_FAIL_IF(d->width < MIN_WIDTH || d->width > MAX_WIDTH, SSMJIT_ERR_INVALID_ARG,
               "%s: desc->width = %d is outside %d..%d", op, d->width, MIN_WIDTH, MAX_WIDTH);
    /* Empty extents count as 1 so that each extent is bounded on its own:
     * an empty batch still has weights [D, W] and a workspace. */
    const int64_t b = d->batch > 0 ? d->batch : 1, l = d->seqlen > 0 ? d->seqlen : 1,
                  dim = d->dim > 0 ? d->dim : 1;
    SJ_TRY(sj_check_size(b, l, dim, op, "desc->batch * desc->seqlen * desc->dim"));
    return sj_check_size(b, dim, d->width + 1, op, "desc->batch * desc->dim * desc->width");
}

/* An f32 parameter or state: NULL only if optional, 4-byte aligned. */
static ssmjit_status check_f32(const void *p, int required, const char *op, const char *what)
{
    if (required)
        SJ_TRY(sj_check_ptr(p, op, what));
    SJ_FAIL_IF((uintptr_t)p % sizeof(float) != 0, SSMJIT_ERR_INVALID_ARG, "%s: %s = %p is not aligned to %zu bytes",
               op, what, p, sizeof(float));
    return SSMJIT_OK;
}

/* An activation [B, L, D] (`name` is "args->x" ...): *out gets it with
 * both strides resolved. */
static ssmjit_status check_act(const char *op, const ssmjit_conv1d_desc *d, const ssmjit_matrix *m,
                               const char *name, ssmjit_matrix *out)
{
    return sj_check_matrix(op, name, m, ssmjit_dtype_size(d->dtype), d->batch, d->seqlen, d->dim,
                           SJ_MATRIX_REQUIRED, out);
}

/* ------------------------------------------------------------------------ */
/* Launch plans                                                             */
/* ------------------------------------------------------------------------ */

typedef struct conv_plan {
    char kernel[48];
    sj_dim3 grid, block;
    int64_t chunk; /* tokens per (sequence, chunk) pair */
    int64_t rows;  /* walkers over pairs, grid.y * block.y: the backward's partial-sum rows */
} conv_plan;

int sj_conv_threads(void) { return THREADS; }

static int taps_of(int width) { return width <= 4 ? 4 : 8; }

/* Channels per thread of the vector kernels, exactly as instantiated at the
 * end of kernels_src/conv.cu and conv_bwd.cu (the kernel lookup fails on a
 * mismatch). */
/* Channels per thread of the vector kernels.  The forward moves 4 per
 * thread in every dtype: 16-bit rows at 8 (16-byte accesses) needed so many
 * registers that fewer loads were in flight, 47% of copy bandwidth against
 * 70% at 4 (bench/NOTES.md). */
static int vector_width(int taps, int bwd)
{
    return bwd && taps == 8 ? 2 : 4;
}

/* VEC > 1 kernels access VEC elements at once: D, every row and batch
 * stride and every base pointer must be multiples of VEC elements. */
static int rows_aligned(const ssmjit_matrix *const *acts, int n, int64_t dim, int vec, size_t esize)
{
    if (dim % vec != 0)
        return 0;
    for (int i = 0; i < n; i++)
        if (acts[i]->stride % vec != 0 || acts[i]->batch_stride % vec != 0 ||
            (uintptr_t)acts[i]->data % ((size_t)vec * esize) != 0)
            return 0;
    return 1;
}

/* Grid, block and chunk length for the forward (bwd = 0) or backward with
 * `vec` channels per thread.  Everything except grid.x comes from the
 * vector kernel's shape whether or not it runs, so the backward's row count
 * (its workspace size) does not depend on alignment. */
static void make_plan(ssmjit_context *ctx, const ssmjit_conv1d_desc *d, int bwd, int vec,
                      conv_plan *p)
{
    const sj_device_props *props = sj_context_props(ctx);
    const int taps = taps_of(d->width);
    /* At least one vector, so that D = 0 (a workspace query) divides by nothing. */
    const int64_t nvec = sj_ceil_div(d->dim > 0 ? d->dim : 1, vector_width(taps, bwd));
    const int64_t bx = nvec >= THREADS ? THREADS : sj_ceil_div(nvec, 32) * 32, by = THREADS / bx;
    const int64_t resident = (int64_t)props->sm_count * props->max_threads_per_sm;

    /* Long chunks read fewer halo tokens; short ones make more threads.
     * Halve down to MIN_CHUNK until the threads fill the device once. */
    int64_t chunk = MAX_CHUNK;
    while (chunk > MIN_CHUNK && nvec * d->batch * sj_ceil_div(d->seqlen, chunk) < resident)
        chunk /= 2;
    const int64_t pairs = d->batch * (d->seqlen > 0 ? sj_ceil_div(d->seqlen, chunk) : 1);
    const int64_t gx = sj_ceil_div(nvec, bx);
    int64_t gy = sj_ceil_div(pairs, by);
    /* The backward keeps one partial-sum row per walker: no more walkers
     * than fill the device, each then takes several pairs. */
    if (bwd)
        gy = sj_min64(gy, sj_ceil_div(resident, gx * bx * by));
    gy = sj_min64(gy, GRID_Y_MAX);

    /* The element-wise fallback exists at 8 taps only, for every width. */
    snprintf(p->kernel, sizeof p->kernel, "conv_%s_t%d_v%d_%s", bwd ? "bwd" : "fwd",
             vec == 1 ? 8 : taps, vec, sj_dtype_suffix(d->dtype));
    p->block = (sj_dim3){(unsigned)bx, (unsigned)by, 1};
    p->grid = (sj_dim3){(unsigned)sj_min64(sj_ceil_div(sj_ceil_div(d->dim, vec), bx), INT32_MAX),
                        (unsigned)gy, 1};
    p->chunk = chunk;
    p->rows = gy * by;
}

static ssmjit_status launch(ssmjit_context *ctx, sj_module_id mod, sj_kernel_role role,
                            const char *kernel, sj_dim3 grid, sj_dim3 block, void **args,
                            void *stream)
{
    CUfunction fn;
    SJ_TRY(sj_kernel_get(ctx, mod, role, kernel, &fn));
    return sj_launch(ctx, fn, grid, block, 0, stream, args);
}

/* ------------------------------------------------------------------------ */
/* Forward                                                                  */
/* ------------------------------------------------------------------------ */

SSMJIT_API ssmjit_status ssmjit_causal_conv1d_fwd(ssmjit_context *ctx, const ssmjit_conv1d_desc *desc,
                                                  const ssmjit_conv1d_fwd_args *args, void *stream)
{
    static const char op[] = "ssmjit_causal_conv1d_fwd";
    SJ_TRY(check_desc(ctx, op, desc));
    SJ_CHECK_STRUCT(op, "args", args, ssmjit_conv1d_fwd_args);
    ssmjit_matrix x, y;
    SJ_TRY(check_act(op, desc, &args->x, "args->x", &x));
    SJ_TRY(check_f32(args->weight, 1, op, "args->weight"));
    SJ_TRY(check_f32(args->bias, 0, op, "args->bias"));
    SJ_TRY(check_f32(args->initial_state, 0, op, "args->initial_state"));
    SJ_TRY(check_act(op, desc, &args->y, "args->y", &y));
    SJ_TRY(check_f32(args->final_state, 0, op, "args->final_state"));
    if (desc->batch == 0 || desc->dim == 0 || (desc->seqlen == 0 && !args->final_state))
        return SSMJIT_OK;

    const ssmjit_matrix *acts[] = {&x, &y};
    int vec = vector_width(taps_of(desc->width), 0);
    if (!rows_aligned(acts, 2, desc->dim, vec, ssmjit_dtype_size(desc->dtype)))
        vec = 1;
    conv_plan p;
    make_plan(ctx, desc, 0, vec, &p);
    conv_fwd_args a = {x.data, y.data, args->weight, args->bias, args->initial_state, args->final_state,
                       x.stride, y.stride, x.batch_stride, y.batch_stride, desc->batch, desc->seqlen,
                       desc->dim, desc->width, p.chunk, desc->silu != 0};
    void *kargs[] = {&a};
    return launch(ctx, SJ_MODULE_CONV, SJ_ROLE_FORWARD, p.kernel, p.grid, p.block, kargs, stream);
}

/* ------------------------------------------------------------------------ */
/* Backward                                                                 */
/* ------------------------------------------------------------------------ */

/* Partial-sum rows of D*W dweight + D dbias floats. */
static ssmjit_status workspace_bytes(ssmjit_context *ctx, const char *op, const ssmjit_conv1d_desc *d,
                                     conv_plan *p, size_t *bytes)
{
    make_plan(ctx, d, 1, vector_width(taps_of(d->width), 1), p);
    const int64_t row_bytes = (d->width + 1) * (int64_t)sizeof(float);
    SJ_TRY(sj_check_size(p->rows, d->dim, row_bytes, op, "the backward workspace"));
    *bytes = (size_t)(p->rows * d->dim * row_bytes);
    return SSMJIT_OK;
}

SSMJIT_API ssmjit_status ssmjit_causal_conv1d_bwd_workspace_size(ssmjit_context *ctx,
                                                                 const ssmjit_conv1d_desc *desc,
                                                                 size_t *bytes)
{
    static const char op[] = "ssmjit_causal_conv1d_bwd_workspace_size";
    SJ_TRY(check_desc(ctx, op, desc));
    SJ_TRY(sj_check_ptr(bytes, op, "bytes"));
    conv_plan p;
    return workspace_bytes(ctx, op, desc, &p, bytes);
}

SSMJIT_API ssmjit_status ssmjit_causal_conv1d_bwd(ssmjit_context *ctx, const ssmjit_conv1d_desc *desc,
                                                  const ssmjit_conv1d_bwd_args *args, void *stream)
{
    static const char op[] = "ssmjit_causal_conv1d_bwd";
    SJ_TRY(check_desc(ctx, op, desc));
    SJ_CHECK_STRUCT(op, "args", args, ssmjit_conv1d_bwd_args);
    ssmjit_matrix x, dy, dx;
    SJ_TRY(check_act(op, desc, &args->x, "args->x", &x));
    SJ_TRY(check_f32(args->weight, 1, op, "args->weight"));
    SJ_TRY(check_f32(args->bias, 0, op, "args->bias"));
    SJ_TRY(check_f32(args->initial_state, 0, op, "args->initial_state"));
    SJ_TRY(check_act(op, desc, &args->dy, "args->dy", &dy));
    SJ_TRY(check_f32(args->d_final_state, 0, op, "args->d_final_state"));
    SJ_TRY(check_act(op, desc, &args->dx, "args->dx", &dx));
    SJ_TRY(check_f32(args->dweight, 1, op, "args->dweight"));
    SJ_TRY(check_f32(args->dbias, 0, op, "args->dbias"));
    SJ_TRY(check_f32(args->d_initial_state, 0, op, "args->d_initial_state"));
    conv_plan p;
    size_t need = 0;
    SJ_TRY(workspace_bytes(ctx, op, desc, &p, &need));
    SJ_FAIL_IF(args->workspace_bytes < need, SSMJIT_ERR_INVALID_ARG,
               "%s: args->workspace_bytes = %zu is less than the %zu bytes "
               "ssmjit_causal_conv1d_bwd_workspace_size gives",
               op, args->workspace_bytes, need);
    if (need > 0)
        SJ_TRY(check_f32(args->workspace, 1, op, "args->workspace"));
    if (desc->dim == 0)
        return SSMJIT_OK;

    void *workspace = args->workspace;
    if (p.rows > 0) {
        const ssmjit_matrix *acts[] = {&x, &dy, &dx};
        int vec = vector_width(taps_of(desc->width), 1);
        if (!rows_aligned(acts, 3, desc->dim, vec, ssmjit_dtype_size(desc->dtype))) {
            vec = 1;
            make_plan(ctx, desc, 1, vec, &p);
        }
        conv_bwd_args a = {x.data, dy.data, dx.data, args->weight, args->bias, args->initial_state,
                           args->d_final_state, args->d_initial_state, workspace, x.stride, dy.stride,
                           dx.stride, x.batch_stride, dy.batch_stride, dx.batch_stride, desc->batch,
                           desc->seqlen, desc->dim, desc->width, p.chunk, desc->silu != 0};
        void *kargs[] = {&a};
        SJ_TRY(launch(ctx, SJ_MODULE_CONV_BWD, SJ_ROLE_BACKWARD, p.kernel, p.grid, p.block, kargs, stream));
    }

    /* With no rows (B = 0) the sums are empty and the reduction writes zeros. */
    int64_t rows = p.rows, dim = desc->dim, width = desc->width;
    const int64_t ncol = dim * (width + 1);
    void *dweight = args->dweight, *dbias = args->dbias;
    void *kargs[] = {&workspace, &rows, &dim, &width, &dweight, &dbias};
    sj_dim3 grid = {(unsigned)sj_min64(sj_ceil_div(ncol, REDUCE_THREADS), INT32_MAX), 1, 1};
    sj_dim3 block = {REDUCE_THREADS, 1, 1};
    return launch(ctx, SJ_MODULE_CONV_BWD, SJ_ROLE_BACKWARD, "conv_bwd_reduce", grid, block, kargs,
                  stream);
}

/* ------------------------------------------------------------------------ */
/* Decode                                                                   */
/* ------------------------------------------------------------------------ */

SSMJIT_API ssmjit_status ssmjit_causal_conv1d_update(ssmjit_context *ctx, const ssmjit_conv1d_desc *desc,
                                                     const ssmjit_conv1d_update_args *args, void *stream)
{
    static const char op[] = "ssmjit_causal_conv1d_update";
    SJ_TRY(check_desc(ctx, op, desc));
    SJ_CHECK_STRUCT(op, "args", args, ssmjit_conv1d_update_args);
    ssmjit_matrix x, y;
    SJ_TRY(check_act(op, desc, &args->x, "args->x", &x));
    SJ_TRY(check_f32(args->weight, 1, op, "args->weight"));
    SJ_TRY(check_f32(args->bias, 0, op, "args->bias"));
    SJ_TRY(check_f32(args->conv_state, 1, op, "args->conv_state"));
    SJ_TRY(check_act(op, desc, &args->y, "args->y", &y));
    if (desc->batch == 0 || desc->dim == 0 || desc->seqlen == 0)
        return SSMJIT_OK;

    char kernel[32];
    snprintf(kernel, sizeof kernel, "conv_update_t%d_%s", taps_of(desc->width),
             sj_dtype_suffix(desc->dtype));
    conv_update_args a = {x.data, y.data, args->weight, args->bias, args->conv_state, x.stride, y.stride,
                          x.batch_stride, y.batch_stride, desc->batch, desc->seqlen, desc->dim, desc->width,
                          desc->silu != 0};
    void *kargs[] = {&a};
    sj_dim3 grid = {(unsigned)sj_min64(sj_ceil_div(desc->dim, THREADS), INT32_MAX),
                    (unsigned)sj_min64(desc->batch, GRID_Y_MAX), 1};
    sj_dim3 block = {THREADS, 1, 1};
    return launch(ctx, SJ_MODULE_CONV_UPDATE, SJ_ROLE_FORWARD, kernel, grid, block, kargs, stream);
}
