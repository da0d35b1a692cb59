/* RMSNorm ops (module "norm"): argument checks, the launch shape, and the
 * two-kernel backward whose weight gradient is reduced in a fixed order. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "engine/kernel.h"
#include "validate.h"

/* Columns per thread the cached kernels keep in registers: SJ_NORM_VPT in
 * kernels_src/norm.cu. */
#define NORM_VPT 8
/* Rows of a block when each warp owns a row (d <= 32 * NORM_VPT). */
#define NORM_WARP_ROWS 8
/* The kernels' __launch_bounds__. */
#define NORM_MAX_THREADS 1024
/* Most rmsnorm_dweight blocks (one per 32-column tile); more tiles are grid-strided. */
#define NORM_REDUCE_MAX_GRID 65535

typedef struct norm_plan {
    const char *path; /* kernel flavour: "cached" (row in registers) or "stream" */
    unsigned tpr;     /* threads per row: blockDim.x */
    unsigned rpb;     /* rows per block: blockDim.y */
    unsigned grid;
    int64_t slots;    /* dweight partial rows in the workspace: one per block */
} norm_plan;

/* A warp per row for short rows, else a block of just enough warps to hold
 * the row in registers, else the streaming kernel.  The grid is what the
 * device holds at once (blocks then walk rows), which also bounds the
 * workspace of the backward. */
static norm_plan norm_plan_for(const ssmjit_context *ctx, int64_t rows, int64_t d)
{
    norm_plan p = {"cached", 32, NORM_WARP_ROWS, 0, 0};
    if (d > 32 * NORM_VPT) {
        p.rpb = 1;
        if (d <= NORM_MAX_THREADS * NORM_VPT) {
            p.tpr = (unsigned)((d + 32 * NORM_VPT - 1) / (32 * NORM_VPT)) * 32;
        } else {
            p.path = "stream";
            p.tpr = NORM_MAX_THREADS;
        }
    }
    const sj_device_props *props = sj_context_props(ctx);
    int64_t per_sm = props->max_threads_per_sm / (int64_t)(p.tpr * p.rpb);
    int64_t cap = (int64_t)props->sm_count * (per_sm > 0 ? per_sm : 1);
    int64_t need = rows / p.rpb + (rows % p.rpb != 0);
    if (cap < 1)
        cap = 1;
    p.grid = (unsigned)(need < cap ? need : cap);
    p.slots = p.grid;
    return p;
}

/* Checks everything but the tensors; *rdtype gets the residual stream's
 * dtype (dtype itself without a residual, so kernels are named by it). */
static ssmjit_status check_desc(const char *op, const ssmjit_context *ctx,
                                const ssmjit_rmsnorm_desc *desc, ssmjit_dtype *rdtype)
{
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(sj_check_ptr(desc, op, "desc"));
    SJ_TRY(sj_check_dtype(desc->dtype, op, "desc->dtype"));
    SJ_TRY(sj_check_extent(desc->rows, op, "desc->rows"));
    SJ_TRY(sj_check_extent(desc->d, op, "desc->d"));
    /* At least one row: dweight has d elements even when rows is 0. */
    SJ_TRY(sj_check_size(desc->rows > 0 ? desc->rows : 1, desc->d, 1, op, "desc->rows * desc->d"));
    if (!isfinite(desc->eps) || desc->eps < 0.0f)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: desc->eps = %g must be finite and >= 0", op,
                        (double)desc->eps);
    *rdtype = desc->dtype;
    if (!desc->has_residual)
        return SSMJIT_OK;
    SJ_TRY(sj_check_dtype(desc->residual_dtype, op, "desc->residual_dtype"));
    if (desc->residual_dtype != desc->dtype && desc->residual_dtype != SSMJIT_F32)
        return sj_error(SSMJIT_ERR_UNSUPPORTED,
                        "%s: desc->residual_dtype = %s must be desc->dtype (%s) or f32", op,
                        sj_dtype_suffix(desc->residual_dtype), sj_dtype_suffix(desc->dtype));
    *rdtype = desc->residual_dtype;
    return SSMJIT_OK;
}

typedef enum arg_use {
    ARG_REQUIRED,
    ARG_OPTIONAL,
    ARG_ABSENT /* only meaningful with a residual, and there is none */
} arg_use;

/* Checks a [rows, d] matrix argument against its use and resolves its
 * stride in place. */
static ssmjit_status check_matrix(const char *op, const char *name, ssmjit_matrix *m, int64_t rows,
                                  int64_t d, arg_use use)
{
    char what[64];
    if (!m->data) {
        if (use != ARG_REQUIRED)
            return SSMJIT_OK;
        snprintf(what, sizeof what, "%s.data", name);
        return sj_check_ptr(m->data, op, what);
    }
    if (use == ARG_ABSENT)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: %s.data is set but desc->has_residual is 0",
                        op, name);
    snprintf(what, sizeof what, "%s.stride", name);
    SJ_TRY(sj_resolve_stride(m->stride, d, op, what, &m->stride));
    return sj_check_size(rows, m->stride, 1, op, what);
}

static ssmjit_status norm_kernel(ssmjit_context *ctx, const char *dir, const norm_plan *p,
                                 ssmjit_dtype dtype, ssmjit_dtype rdtype, sj_kernel_role role,
                                 CUfunction *fn)
{
    char name[64];
    snprintf(name, sizeof name, "rmsnorm_%s_%s_%s_%s", dir, p->path, sj_dtype_suffix(dtype),
             sj_dtype_suffix(rdtype));
    return sj_kernel_get(ctx, role == SJ_ROLE_BACKWARD ? SJ_MODULE_NORM_BWD : SJ_MODULE_NORM, role, name, fn);
}

static ssmjit_status norm_launch(ssmjit_context *ctx, CUfunction fn, const norm_plan *p,
                                 unsigned smem, void *stream, void **args)
{
    sj_dim3 grid = {p->grid, 1, 1}, block = {p->tpr, p->rpb, 1};
    return sj_launch(ctx, fn, grid, block, smem, stream, args);
}

SSMJIT_API ssmjit_status ssmjit_rmsnorm_fwd(ssmjit_context *ctx, const ssmjit_rmsnorm_desc *desc,
                                            ssmjit_matrix x, ssmjit_matrix residual,
                                            const void *weight, ssmjit_matrix y,
                                            ssmjit_matrix residual_out, void *rstd, void *stream)
{
    static const char op[] = "ssmjit_rmsnorm_fwd";
    ssmjit_dtype rdtype = SSMJIT_F32;
    SJ_TRY(check_desc(op, ctx, desc, &rdtype));
    int64_t rows = desc->rows, d = desc->d;
    float eps = desc->eps;
    if (rows == 0 || d == 0)
        return SSMJIT_OK;
    /* A NULL residual is zero: the kernels then normalise x itself, which
     * the residual type (dtype or f32) holds exactly. */
    arg_use res_use = desc->has_residual ? ARG_OPTIONAL : ARG_ABSENT;
    SJ_TRY(check_matrix(op, "x", &x, rows, d, ARG_REQUIRED));
    SJ_TRY(check_matrix(op, "residual", &residual, rows, d, res_use));
    SJ_TRY(sj_check_ptr(weight, op, "weight"));
    SJ_TRY(check_matrix(op, "y", &y, rows, d, ARG_REQUIRED));
    SJ_TRY(check_matrix(op, "residual_out", &residual_out, rows, d, res_use));

    norm_plan p = norm_plan_for(ctx, rows, d);
    CUfunction fn;
    SJ_TRY(norm_kernel(ctx, "fwd", &p, desc->dtype, rdtype, SJ_ROLE_FORWARD, &fn));
    void *args[] = {&x.data,   &x.stride, &residual.data, &residual.stride, &weight,
                    &y.data,   &y.stride, &residual_out.data, &residual_out.stride,
                    &rstd,     &rows,     &d,             &eps};
    return norm_launch(ctx, fn, &p, 0, stream, args);
}

static ssmjit_status workspace_for(const char *op, const norm_plan *p, int64_t d, size_t *bytes)
{
    SJ_TRY(sj_check_size(p->slots, d, (int64_t)sizeof(float), op, "the backward workspace"));
    *bytes = (size_t)p->slots * (size_t)d * sizeof(float);
    return SSMJIT_OK;
}

SSMJIT_API ssmjit_status ssmjit_rmsnorm_bwd_workspace_size(ssmjit_context *ctx,
                                                           const ssmjit_rmsnorm_desc *desc,
                                                           size_t *bytes)
{
    static const char op[] = "ssmjit_rmsnorm_bwd_workspace_size";
    ssmjit_dtype rdtype = SSMJIT_F32;
    SJ_TRY(check_desc(op, ctx, desc, &rdtype));
    SJ_TRY(sj_check_ptr(bytes, op, "bytes"));
    size_t need = 0;
    if (desc->rows > 0 && desc->d > 0) {
        norm_plan p = norm_plan_for(ctx, desc->rows, desc->d);
        SJ_TRY(workspace_for(op, &p, desc->d, &need));
    }
    *bytes = need;
    return SSMJIT_OK;
}

/* dweight = the sum of `slots` partial rows of length d, in a fixed order. */
static ssmjit_status reduce_dweight(ssmjit_context *ctx, const void *partial, int64_t slots,
                                    int64_t d, void *dweight, void *stream)
{
    CUfunction fn;
    SJ_TRY(sj_kernel_get(ctx, SJ_MODULE_NORM_BWD, SJ_ROLE_BACKWARD, "rmsnorm_dweight", &fn));
    int64_t tiles = (d + 31) / 32;
    sj_dim3 grid = {(unsigned)(tiles < NORM_REDUCE_MAX_GRID ? tiles : NORM_REDUCE_MAX_GRID), 1, 1};
    sj_dim3 block = {32, 32, 1};
    void *args[] = {&partial, &slots, &d, &dweight};
    return sj_launch(ctx, fn, grid, block, 0, stream, args);
}

SSMJIT_API ssmjit_status ssmjit_rmsnorm_bwd(ssmjit_context *ctx, const ssmjit_rmsnorm_desc *desc,
                                            ssmjit_matrix h, const void *weight, const void *rstd,
                                            ssmjit_matrix dy, ssmjit_matrix d_residual_out,
                                            ssmjit_matrix dx, ssmjit_matrix d_residual,
                                            void *dweight, void *workspace,
                                            size_t workspace_bytes, void *stream)
{
    static const char op[] = "ssmjit_rmsnorm_bwd";
    ssmjit_dtype rdtype = SSMJIT_F32;
    SJ_TRY(check_desc(op, ctx, desc, &rdtype));
    int64_t rows = desc->rows, d = desc->d;
    if (d == 0 || (rows == 0 && !dweight))
        return SSMJIT_OK;
    if (rows == 0)
        return reduce_dweight(ctx, NULL, 0, d, dweight, stream);
    arg_use res_use = desc->has_residual ? ARG_OPTIONAL : ARG_ABSENT;
    SJ_TRY(check_matrix(op, "h", &h, rows, d, ARG_REQUIRED));
    SJ_TRY(sj_check_ptr(weight, op, "weight"));
    SJ_TRY(sj_check_ptr(rstd, op, "rstd"));
    SJ_TRY(check_matrix(op, "dy", &dy, rows, d, ARG_REQUIRED));
    SJ_TRY(check_matrix(op, "d_residual_out", &d_residual_out, rows, d, res_use));
    SJ_TRY(check_matrix(op, "dx", &dx, rows, d, ARG_REQUIRED));
    SJ_TRY(check_matrix(op, "d_residual", &d_residual, rows, d, res_use));

    norm_plan p = norm_plan_for(ctx, rows, d);
    void *partial = NULL;
    if (dweight) {
        size_t need = 0;
        SJ_TRY(workspace_for(op, &p, d, &need));
        SJ_TRY(sj_check_ptr(workspace, op, "workspace"));
        if (workspace_bytes < need)
            return sj_error(SSMJIT_ERR_INVALID_ARG,
                            "%s: workspace_bytes = %zu is less than the %zu bytes of "
                            "ssmjit_rmsnorm_bwd_workspace_size()",
                            op, workspace_bytes, need);
        partial = workspace;
    }

    CUfunction fn;
    SJ_TRY(norm_kernel(ctx, "bwd", &p, desc->dtype, rdtype, SJ_ROLE_BACKWARD, &fn));
    void *args[] = {&h.data,  &h.stride,  &weight,  &rstd,  &dy.data,
                    &dy.stride, &d_residual_out.data, &d_residual_out.stride,
                    &dx.data, &dx.stride, &d_residual.data, &d_residual.stride,
                    &partial, &rows,      &d};
    /* The warps of a block meet in shared memory to add their dweight sums. */
    unsigned smem = partial && p.rpb > 1 ? p.rpb * 32 * NORM_VPT * (unsigned)sizeof(float) : 0;
    SJ_TRY(norm_launch(ctx, fn, &p, smem, stream, args));
    return dweight ? reduce_dweight(ctx, partial, p.slots, d, dweight, stream) : SSMJIT_OK;
}
