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
    int64_t batch, seqlen, dim, width;
    int64_t chunk, silu;
} conv_fwd_args;

typedef struct conv_bwd_args {
    const void *x, *dy;
    void *dx;
    const void *weight, *bias, *init_state, *dfinal_state;
    void *dinit_state, *partial;
    int64_t sx, sdy, sdx;
    int64_t batch, seqlen, dim, width;
    int64_t chunk, silu;
} conv_bwd_args;

typedef struct conv_update_args {
    const void *x;
    void *y;
    const void *weight, *bias;
    void *state;
    int64_t sx, sy;
    int64_t batch, seqlen, dim, width;
    int64_t silu;
} conv_update_args;

/* ------------------------------------------------------------------------ */
/* Argument checks                                                          */
/* ------------------------------------------------------------------------ */

static ssmjit_status check_desc(ssmjit_context *ctx, const char *op, const ssmjit_conv1d_desc *d)
{
    ssmjit_status st = sj_check_context(ctx, op);
    if (st == SSMJIT_OK)
        st = sj_check_ptr(d, op, "desc");
    if (st == SSMJIT_OK)
        st = sj_check_dtype(d->dtype, op, "desc->dtype");
    if (st == SSMJIT_OK)
        st = sj_check_extent(d->batch, op, "desc->batch");
    if (st == SSMJIT_OK)
        st = sj_check_extent(d->seqlen, op, "desc->seqlen");
    if (st == SSMJIT_OK)
        st = sj_check_extent(d->dim, op, "desc->dim");
    if (st == SSMJIT_OK && (d->width < MIN_WIDTH || d->width > MAX_WIDTH))
        st = sj_error(SSMJIT_ERR_INVALID_ARG, "%s: desc->width = %d is outside %d..%d", op, d->width,
                      MIN_WIDTH, MAX_WIDTH);
    if (st != SSMJIT_OK)
        return st;
    /* Empty extents count as 1 so that each extent is bounded on its own:
     * an empty batch still has weights [D, W] and a workspace. */
    const int64_t b = d->batch > 0 ? d->batch : 1, l = d->seqlen > 0 ? d->seqlen : 1,
                  dim = d->dim > 0 ? d->dim : 1;
    st = sj_check_size(b, l, dim, op, "desc->batch * desc->seqlen * desc->dim");
    if (st == SSMJIT_OK)
        st = sj_check_size(b, dim, d->width + 1, op, "desc->batch * desc->dim * desc->width");
    return st;
}

static ssmjit_status check_align(const void *p, size_t bytes, const char *op, const char *what)
{
    if ((uintptr_t)p % bytes == 0)
        return SSMJIT_OK;
    return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: %s = %p is not aligned to %zu bytes", op, what, p,
                    bytes);
}

/* An f32 parameter or state: NULL only if optional, 4-byte aligned. */
static ssmjit_status check_f32(const void *p, int required, const char *op, const char *what)
{
    if (!p)
        return required ? sj_check_ptr(p, op, what) : SSMJIT_OK;
    return check_align(p, sizeof(float), op, what);
}

/* An activation [B, L, D]: data non-NULL and aligned to the element size,
 * stride resolved in place (0 = D), every row addressable in int64. */
static ssmjit_status check_act(const char *op, const ssmjit_conv1d_desc *d, ssmjit_matrix *m,
                               const char *name)
{
    char what[48];
    snprintf(what, sizeof what, "%s.data", name);
    ssmjit_status st = sj_check_ptr(m->data, op, what);
    if (st == SSMJIT_OK)
        st = check_align(m->data, ssmjit_dtype_size(d->dtype), op, what);
    snprintf(what, sizeof what, "%s.stride", name);
    if (st == SSMJIT_OK)
        st = sj_resolve_stride(m->stride, d->dim, op, what, &m->stride);
    if (st == SSMJIT_OK)
        st = sj_check_size(d->batch, d->seqlen, m->stride, op, what);
    return st;
}

/* The forward's inputs, shared by forward and backward; *x gets the
 * resolved copy of in->x. */
static ssmjit_status check_inputs(const char *op, const ssmjit_conv1d_desc *d,
                                  const ssmjit_conv1d_inputs *in, ssmjit_matrix *x)
{
    ssmjit_status st = sj_check_ptr(in, op, "in");
    if (st != SSMJIT_OK)
        return st;
    *x = in->x;
    st = check_act(op, d, x, "in->x");
    if (st == SSMJIT_OK)
        st = check_f32(in->weight, 1, op, "in->weight");
    if (st == SSMJIT_OK)
        st = check_f32(in->bias, 0, op, "in->bias");
    if (st == SSMJIT_OK)
        st = check_f32(in->initial_state, 0, op, "in->initial_state");
    return st;
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

/* VEC > 1 kernels access VEC elements at once: D, every row stride and
 * every base pointer must be multiples of VEC elements. */
static int rows_aligned(const ssmjit_matrix *const *acts, int n, int64_t dim, int vec, size_t esize)
{
    if (dim % vec != 0)
        return 0;
    for (int i = 0; i < n; i++)
        if (acts[i]->stride % vec != 0 || (uintptr_t)acts[i]->data % ((size_t)vec * esize) != 0)
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
    ssmjit_status st = sj_kernel_get(ctx, mod, role, kernel, &fn);
    if (st == SSMJIT_OK)
        st = sj_launch(ctx, fn, grid, block, 0, stream, args);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Forward                                                                  */
/* ------------------------------------------------------------------------ */

SSMJIT_API ssmjit_status ssmjit_causal_conv1d_fwd(ssmjit_context *ctx,
                                                  const ssmjit_conv1d_desc *desc,
                                                  const ssmjit_conv1d_inputs *in, ssmjit_matrix y,
                                                  void *final_state, void *stream)
{
    const char *op = "ssmjit_causal_conv1d_fwd";
    ssmjit_matrix x;
    ssmjit_status st = check_desc(ctx, op, desc);
    if (st == SSMJIT_OK)
        st = check_inputs(op, desc, in, &x);
    if (st == SSMJIT_OK)
        st = check_act(op, desc, &y, "y");
    if (st == SSMJIT_OK)
        st = check_f32(final_state, 0, op, "final_state");
    if (st != SSMJIT_OK)
        return st;
    if (desc->batch == 0 || desc->dim == 0 || (desc->seqlen == 0 && !final_state))
        return SSMJIT_OK;

    const ssmjit_matrix *acts[] = {&x, &y};
    int vec = vector_width(taps_of(desc->width), 0);
    if (!rows_aligned(acts, 2, desc->dim, vec, ssmjit_dtype_size(desc->dtype)))
        vec = 1;
    conv_plan p;
    make_plan(ctx, desc, 0, vec, &p);
    conv_fwd_args a = {x.data, y.data, in->weight, in->bias, in->initial_state, final_state,
                       x.stride, y.stride, desc->batch, desc->seqlen, desc->dim, desc->width,
                       p.chunk, desc->silu != 0};
    void *args[] = {&a};
    return launch(ctx, SJ_MODULE_CONV, SJ_ROLE_FORWARD, p.kernel, p.grid, p.block, args, stream);
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
    ssmjit_status st = sj_check_size(p->rows, d->dim, row_bytes, op, "the backward workspace");
    if (st == SSMJIT_OK)
        *bytes = (size_t)(p->rows * d->dim * row_bytes);
    return st;
}

SSMJIT_API ssmjit_status ssmjit_causal_conv1d_bwd_workspace_size(ssmjit_context *ctx,
                                                                 const ssmjit_conv1d_desc *desc,
                                                                 size_t *bytes)
{
    const char *op = "ssmjit_causal_conv1d_bwd_workspace_size";
    ssmjit_status st = check_desc(ctx, op, desc);
    if (st == SSMJIT_OK)
        st = sj_check_ptr(bytes, op, "bytes");
    conv_plan p;
    return st == SSMJIT_OK ? workspace_bytes(ctx, op, desc, &p, bytes) : st;
}

static ssmjit_status check_grads(const char *op, const ssmjit_conv1d_desc *d,
                                 const ssmjit_conv1d_grads *g, ssmjit_matrix *dx)
{
    ssmjit_status st = sj_check_ptr(g, op, "grads");
    if (st != SSMJIT_OK)
        return st;
    *dx = g->dx;
    st = check_act(op, d, dx, "grads->dx");
    if (st == SSMJIT_OK)
        st = check_f32(g->dweight, 1, op, "grads->dweight");
    if (st == SSMJIT_OK)
        st = check_f32(g->dbias, 0, op, "grads->dbias");
    if (st == SSMJIT_OK)
        st = check_f32(g->d_initial_state, 0, op, "grads->d_initial_state");
    return st;
}

static ssmjit_status check_workspace(const char *op, const void *ws, size_t have, size_t need)
{
    if (have < need)
        return sj_error(SSMJIT_ERR_INVALID_ARG,
                        "%s: workspace_size = %zu is less than the %zu bytes "
                        "ssmjit_causal_conv1d_bwd_workspace_size gives",
                        op, have, need);
    return need > 0 ? check_f32(ws, 1, op, "workspace") : SSMJIT_OK;
}

SSMJIT_API ssmjit_status ssmjit_causal_conv1d_bwd(ssmjit_context *ctx,
                                                  const ssmjit_conv1d_desc *desc,
                                                  const ssmjit_conv1d_inputs *in, ssmjit_matrix dy,
                                                  const void *d_final_state,
                                                  const ssmjit_conv1d_grads *grads,
                                                  void *workspace, size_t workspace_size,
                                                  void *stream)
{
    const char *op = "ssmjit_causal_conv1d_bwd";
    ssmjit_matrix x, dx;
    conv_plan p;
    ssmjit_status st = check_desc(ctx, op, desc);
    if (st == SSMJIT_OK)
        st = check_inputs(op, desc, in, &x);
    if (st == SSMJIT_OK)
        st = check_act(op, desc, &dy, "dy");
    if (st == SSMJIT_OK)
        st = check_f32(d_final_state, 0, op, "d_final_state");
    if (st == SSMJIT_OK)
        st = check_grads(op, desc, grads, &dx);
    size_t need = 0;
    if (st == SSMJIT_OK)
        st = workspace_bytes(ctx, op, desc, &p, &need);
    if (st == SSMJIT_OK)
        st = check_workspace(op, workspace, workspace_size, need);
    if (st != SSMJIT_OK || desc->dim == 0)
        return st;

    if (p.rows > 0) {
        const ssmjit_matrix *acts[] = {&x, &dy, &dx};
        int vec = vector_width(taps_of(desc->width), 1);
        if (!rows_aligned(acts, 3, desc->dim, vec, ssmjit_dtype_size(desc->dtype))) {
            vec = 1;
            make_plan(ctx, desc, 1, vec, &p);
        }
        conv_bwd_args a = {x.data, dy.data, dx.data, in->weight, in->bias, in->initial_state,
                           d_final_state, grads->d_initial_state, workspace, x.stride, dy.stride,
                           dx.stride, desc->batch, desc->seqlen, desc->dim, desc->width, p.chunk,
                           desc->silu != 0};
        void *args[] = {&a};
        st = launch(ctx, SJ_MODULE_CONV_BWD, SJ_ROLE_BACKWARD, p.kernel, p.grid, p.block, args, stream);
        if (st != SSMJIT_OK)
            return st;
    }

    /* With no rows (B = 0) the sums are empty and the reduction writes zeros. */
    int64_t rows = p.rows, dim = desc->dim, width = desc->width;
    const int64_t ncol = dim * (width + 1);
    void *dweight = grads->dweight, *dbias = grads->dbias;
    void *args[] = {&workspace, &rows, &dim, &width, &dweight, &dbias};
    sj_dim3 grid = {(unsigned)sj_min64(sj_ceil_div(ncol, REDUCE_THREADS), INT32_MAX), 1, 1};
    sj_dim3 block = {REDUCE_THREADS, 1, 1};
    return launch(ctx, SJ_MODULE_CONV_BWD, SJ_ROLE_BACKWARD, "conv_bwd_reduce", grid, block, args,
                  stream);
}

/* ------------------------------------------------------------------------ */
/* Decode                                                                   */
/* ------------------------------------------------------------------------ */

SSMJIT_API ssmjit_status ssmjit_causal_conv1d_update(ssmjit_context *ctx,
                                                     const ssmjit_conv1d_desc *desc,
                                                     ssmjit_matrix x, const void *weight,
                                                     const void *bias, void *conv_state,
                                                     ssmjit_matrix y, void *stream)
{
    const char *op = "ssmjit_causal_conv1d_update";
    ssmjit_status st = check_desc(ctx, op, desc);
    if (st == SSMJIT_OK)
        st = check_act(op, desc, &x, "x");
    if (st == SSMJIT_OK)
        st = check_f32(weight, 1, op, "weight");
    if (st == SSMJIT_OK)
        st = check_f32(bias, 0, op, "bias");
    if (st == SSMJIT_OK)
        st = check_f32(conv_state, 1, op, "conv_state");
    if (st == SSMJIT_OK)
        st = check_act(op, desc, &y, "y");
    if (st != SSMJIT_OK || desc->batch == 0 || desc->dim == 0 || desc->seqlen == 0)
        return st;

    char kernel[32];
    snprintf(kernel, sizeof kernel, "conv_update_t%d_%s", taps_of(desc->width),
             sj_dtype_suffix(desc->dtype));
    conv_update_args a = {x.data, y.data, weight, bias, conv_state, x.stride, y.stride,
                          desc->batch, desc->seqlen, desc->dim, desc->width, desc->silu != 0};
    void *args[] = {&a};
    sj_dim3 grid = {(unsigned)sj_min64(sj_ceil_div(desc->dim, THREADS), INT32_MAX),
                    (unsigned)sj_min64(desc->batch, GRID_Y_MAX), 1};
    sj_dim3 block = {THREADS, 1, 1};
    return launch(ctx, SJ_MODULE_CONV_UPDATE, SJ_ROLE_FORWARD, kernel, grid, block, args, stream);
}
