/* RMSNorm ops (module "norm"): argument checks, the launch shape, and the
 * two-kernel backward whose weight gradient is reduced in a fixed order. */
#include <float.h>
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
 * dtype (dtype itself without a residual, so kernels are named by it) and
 * *eps the f32 the kernels use. */
static ssmjit_status check_desc(const char *op, const ssmjit_context *ctx,
                                const ssmjit_rmsnorm_desc *desc, ssmjit_dtype *rdtype, float *eps)
{
    SJ_TRY(sj_check_context(ctx, op));
    SJ_CHECK_STRUCT(op, "desc", desc, ssmjit_rmsnorm_desc);
    SJ_TRY(sj_check_dtype(desc->dtype, op, "desc->dtype"));
    SJ_TRY(sj_check_extent(desc->rows, op, "desc->rows"));
    SJ_TRY(sj_check_extent(desc->d, op, "desc->d"));
    /* At least one row: dweight has d elements even when rows is 0. */
    SJ_TRY(sj_check_size(desc->rows > 0 ? desc->rows : 1, desc->d, 1, op, "desc->rows * desc->d"));
    /* Past FLT_MAX (or NaN) the f32 the kernels use would not be finite. */
    SJ_FAIL_IF(!(desc->eps >= 0.0 && desc->eps <= FLT_MAX), SSMJIT_ERR_INVALID_ARG,
               "%s: desc->eps = %g must be finite and >= 0 (as the f32 the kernels use)", op, desc->eps);
    *eps = (float)desc->eps;
    *rdtype = desc->dtype;
    if (!desc->has_residual)
        return SSMJIT_OK;
    SJ_TRY(sj_check_dtype(desc->residual_dtype, op, "desc->residual_dtype"));
    SJ_FAIL_IF(desc->residual_dtype != desc->dtype && desc->residual_dtype != SSMJIT_F32, SSMJIT_ERR_UNSUPPORTED,
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

/* Checks a [rows, d] operand `name` ("args->x") of `dtype` against its
 * use; *out gets it with its stride resolved. */
static ssmjit_status check_operand(const char *op, const char *name, const ssmjit_matrix *m, ssmjit_dtype dtype,
                                   int64_t rows, int64_t d, arg_use use, ssmjit_matrix *out)
{
    SJ_FAIL_IF(use == ARG_ABSENT && m->data, SSMJIT_ERR_INVALID_ARG,
               "%s: %s.data is set but desc->has_residual is 0", op, name);
    return sj_check_matrix(op, name, m, ssmjit_dtype_size(dtype), 1, rows, d,
                           SJ_MATRIX_ROWS | (use == ARG_REQUIRED ? SJ_MATRIX_REQUIRED : 0), out);
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
                                            const ssmjit_rmsnorm_fwd_args *args, void *stream)
{
    static const char op[] = "ssmjit_rmsnorm_fwd";
    ssmjit_dtype rdtype = SSMJIT_F32;
    float eps = 0.0f;
    SJ_TRY(check_desc(op, ctx, desc, &rdtype, &eps));
    SJ_CHECK_STRUCT(op, "args", args, ssmjit_rmsnorm_fwd_args);
    int64_t rows = desc->rows, d = desc->d;
    if (rows == 0 || d == 0)
        return SSMJIT_OK;
    /* A NULL residual is zero: the kernels then normalise x itself, which
     * the residual type (dtype or f32) holds exactly. */
    arg_use res_use = desc->has_residual ? ARG_OPTIONAL : ARG_ABSENT;
    ssmjit_matrix x, residual, y, residual_out;
    SJ_TRY(check_operand(op, "args->x", &args->x, desc->dtype, rows, d, ARG_REQUIRED, &x));
    SJ_TRY(check_operand(op, "args->residual", &args->residual, rdtype, rows, d, res_use, &residual));
    SJ_TRY(sj_check_ptr(args->weight, op, "args->weight"));
    SJ_TRY(check_operand(op, "args->y", &args->y, desc->dtype, rows, d, ARG_REQUIRED, &y));
    SJ_TRY(check_operand(op, "args->residual_out", &args->residual_out, rdtype, rows, d, res_use, &residual_out));

    norm_plan p = norm_plan_for(ctx, rows, d);
    CUfunction fn;
    SJ_TRY(norm_kernel(ctx, "fwd", &p, desc->dtype, rdtype, SJ_ROLE_FORWARD, &fn));
    const void *weight = args->weight;
    void *rstd = args->rstd;
    void *kargs[] = {&x.data,   &x.stride, &residual.data, &residual.stride, &weight,
                     &y.data,   &y.stride, &residual_out.data, &residual_out.stride,
                     &rstd,     &rows,     &d,             &eps};
    return norm_launch(ctx, fn, &p, 0, stream, kargs);
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
    float eps = 0.0f;
    SJ_TRY(check_desc(op, ctx, desc, &rdtype, &eps));
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
                                            const ssmjit_rmsnorm_bwd_args *args, void *stream)
{
    static const char op[] = "ssmjit_rmsnorm_bwd";
    ssmjit_dtype rdtype = SSMJIT_F32;
    float eps = 0.0f;
    SJ_TRY(check_desc(op, ctx, desc, &rdtype, &eps));
    SJ_CHECK_STRUCT(op, "args", args, ssmjit_rmsnorm_bwd_args);
    int64_t rows = desc->rows, d = desc->d;
    void *dweight = args->dweight;
    if (d == 0 || (rows == 0 && !dweight))
        return SSMJIT_OK;
    if (rows == 0)
        return reduce_dweight(ctx, NULL, 0, d, dweight, stream);
    arg_use res_use = desc->has_residual ? ARG_OPTIONAL : ARG_ABSENT;
    ssmjit_matrix h, dy, d_residual_out, dx, d_residual;
    SJ_TRY(check_operand(op, "args->h", &args->h, rdtype, rows, d, ARG_REQUIRED, &h));
    SJ_TRY(sj_check_ptr(args->weight, op, "args->weight"));
    SJ_TRY(sj_check_ptr(args->rstd, op, "args->rstd"));
    SJ_TRY(check_operand(op, "args->dy", &args->dy, desc->dtype, rows, d, ARG_REQUIRED, &dy));
    SJ_TRY(check_operand(op, "args->d_residual_out", &args->d_residual_out, rdtype, rows, d, res_use,
                         &d_residual_out));
    SJ_TRY(check_operand(op, "args->dx", &args->dx, desc->dtype, rows, d, ARG_REQUIRED, &dx));
    SJ_TRY(check_operand(op, "args->d_residual", &args->d_residual, rdtype, rows, d, res_use, &d_residual));

    norm_plan p = norm_plan_for(ctx, rows, d);
    void *partial = NULL;
    if (dweight) {
        size_t need = 0;
        SJ_TRY(workspace_for(op, &p, d, &need));
        SJ_TRY(sj_check_ptr(args->workspace, op, "args->workspace"));
        SJ_FAIL_IF(args->workspace_bytes < need, SSMJIT_ERR_INVALID_ARG,
                   "%s: args->workspace_bytes = %zu is less than the %zu bytes of "
                   "ssmjit_rmsnorm_bwd_workspace_size()",
                   op, args->workspace_bytes, need);
        partial = args->workspace;
    }

    CUfunction fn;
    SJ_TRY(norm_kernel(ctx, "bwd", &p, desc->dtype, rdtype, SJ_ROLE_BACKWARD, &fn));
    const void *weight = args->weight, *rstd = args->rstd;
    void *kargs[] = {&h.data,  &h.stride,  &weight,  &rstd,  &dy.data,
                     &dy.stride, &d_residual_out.data, &d_residual_out.stride,
                     &dx.data, &dx.stride, &d_residual.data, &d_residual.stride,
                     &partial, &rows,      &d};
    /* The warps of a block meet in shared memory to add their dweight sums. */
    unsigned smem = partial && p.rpb > 1 ? p.rpb * 32 * NORM_VPT * (unsigned)sizeof(float) : 0;
    SJ_TRY(norm_launch(ctx, fn, &p, smem, stream, kargs));
    return dweight ? reduce_dweight(ctx, partial, p.slots, d, dweight, stream) : SSMJIT_OK;
}
