/* Unfused activations and the SiLU gate (module "elementwise"). */
#include <stdio.h>

#include "base/error.h"
#include "engine/kernel.h"
#include "validate.h"

#define ROWS_PER_GRID 65535u /* gridDim.y limit; the kernels loop over the rest */
#define THREADS 256u

/* Columns a thread takes in each row: a 16-byte group (the kernels'
 * sj_map_groups). */
static int64_t group_cols(ssmjit_dtype dtype) { return 16 / (int64_t)ssmjit_dtype_size(dtype); }

typedef struct {
    const char *op;
    const ssmjit_unary_desc *desc;
} op_ctx;

static ssmjit_status check_desc(ssmjit_context *ctx, const op_ctx *o)
{
    ssmjit_status st = sj_check_context(ctx, o->op);
    if (st == SSMJIT_OK)
        st = sj_check_ptr(o->desc, o->op, "desc");
    if (st == SSMJIT_OK)
        st = sj_check_dtype(o->desc->dtype, o->op, "desc->dtype");
    if (st == SSMJIT_OK)
        st = sj_check_extent(o->desc->rows, o->op, "desc->rows");
    if (st == SSMJIT_OK)
        st = sj_check_extent(o->desc->cols, o->op, "desc->cols");
    if (st == SSMJIT_OK)
        st = sj_check_size(o->desc->rows, o->desc->cols, 1, o->op, "desc->rows * desc->cols");
    /* grid.x has a block per THREADS groups of columns. */
    if (st == SSMJIT_OK && (o->desc->cols - 1) / (THREADS * group_cols(o->desc->dtype)) >= 0x7fffffff)
        st = sj_error(SSMJIT_ERR_UNSUPPORTED, "%s: desc->cols = %lld is too large", o->op,
                      (long long)o->desc->cols);
    return st;
}

/* Checks one matrix operand and appends its pointer and stride to args. */
static ssmjit_status add_matrix(const op_ctx *o, ssmjit_matrix *m, const char *name, void **args,
                                int *n)
{
    char what[64];
    snprintf(what, sizeof what, "%s.data", name);
    ssmjit_status st = sj_check_ptr(m->data, o->op, what);
    snprintf(what, sizeof what, "%s.stride", name);
    if (st == SSMJIT_OK)
        st = sj_resolve_stride(m->stride, o->desc->cols, o->op, what, &m->stride);
    if (st == SSMJIT_OK)
        st = sj_check_size(o->desc->rows, m->stride, 1, o->op, what);
    args[(*n)++] = &m->data;
    args[(*n)++] = &m->stride;
    return st;
}

static ssmjit_status run(ssmjit_context *ctx, const op_ctx *o, sj_kernel_role role, const char *kernel,
                         ssmjit_matrix *mats, const char *const *names, int count, void *stream)
{
    ssmjit_status st = check_desc(ctx, o);
    void *args[16];
    int n = 0;
    for (int i = 0; st == SSMJIT_OK && i < count; i++)
        st = add_matrix(o, &mats[i], names[i], args, &n);
    if (st != SSMJIT_OK)
        return st;
    if (o->desc->rows == 0 || o->desc->cols == 0)
        return SSMJIT_OK;
    int64_t rows = o->desc->rows, cols = o->desc->cols;
    args[n++] = &rows;
    args[n++] = &cols;
    char name[64];
    snprintf(name, sizeof name, "%s_%s", kernel, sj_dtype_suffix(o->desc->dtype));
    CUfunction fn;
    st = sj_kernel_get(ctx, role == SJ_ROLE_BACKWARD ? SJ_MODULE_ELEMENTWISE_BWD : SJ_MODULE_ELEMENTWISE, role,
                       name, &fn);
    if (st != SSMJIT_OK)
        return st;
    const int64_t per_block = THREADS * group_cols(o->desc->dtype);
    sj_dim3 grid = {(unsigned)((cols + per_block - 1) / per_block),
                    rows < ROWS_PER_GRID ? (unsigned)rows : ROWS_PER_GRID, 1};
    sj_dim3 block = {THREADS, 1, 1};
    return sj_launch(ctx, fn, grid, block, 0, stream, args);
}

static const char *act_name(ssmjit_activation act)
{
    return act == SSMJIT_ACT_SILU ? "silu" : act == SSMJIT_ACT_SOFTPLUS ? "softplus" : NULL;
}

static ssmjit_status run_activation(ssmjit_context *ctx, const char *op, const char *dir,
                                    sj_kernel_role role, ssmjit_activation act,
                                    const ssmjit_unary_desc *desc, ssmjit_matrix *mats,
                                    const char *const *names, int count, void *stream)
{
    const char *a = act_name(act);
    if (!a)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: act = %d is not a ssmjit_activation", op, (int)act);
    char kernel[48];
    snprintf(kernel, sizeof kernel, "act_%s_%s", dir, a);
    op_ctx o = {op, desc};
    return run(ctx, &o, role, kernel, mats, names, count, stream);
}

SSMJIT_API ssmjit_status ssmjit_activation_fwd(ssmjit_context *ctx, ssmjit_activation act,
                                               const ssmjit_unary_desc *desc, ssmjit_matrix x,
                                               ssmjit_matrix y, void *stream)
{
    ssmjit_matrix mats[] = {x, y};
    static const char *const names[] = {"x", "y"};
    return run_activation(ctx, "ssmjit_activation_fwd", "fwd", SJ_ROLE_FORWARD, act, desc, mats, names, 2,
                          stream);
}

SSMJIT_API ssmjit_status ssmjit_activation_bwd(ssmjit_context *ctx, ssmjit_activation act,
                                               const ssmjit_unary_desc *desc, ssmjit_matrix x,
                                               ssmjit_matrix dy, ssmjit_matrix dx, void *stream)
{
    ssmjit_matrix mats[] = {x, dy, dx};
    static const char *const names[] = {"x", "dy", "dx"};
    return run_activation(ctx, "ssmjit_activation_bwd", "bwd", SJ_ROLE_BACKWARD, act, desc, mats, names,
                          3, stream);
}

SSMJIT_API ssmjit_status ssmjit_gate_fwd(ssmjit_context *ctx, const ssmjit_unary_desc *desc,
                                         ssmjit_matrix y, ssmjit_matrix z, ssmjit_matrix out,
                                         void *stream)
{
    ssmjit_matrix mats[] = {y, z, out};
    static const char *const names[] = {"y", "z", "out"};
    op_ctx o = {"ssmjit_gate_fwd", desc};
    return run(ctx, &o, SJ_ROLE_FORWARD, "gate_fwd", mats, names, 3, stream);
}

SSMJIT_API ssmjit_status ssmjit_gate_bwd(ssmjit_context *ctx, const ssmjit_unary_desc *desc,
                                         ssmjit_matrix y, ssmjit_matrix z, ssmjit_matrix dout,
                                         ssmjit_matrix dy, ssmjit_matrix dz, void *stream)
{
    ssmjit_matrix mats[] = {y, z, dout, dy, dz};
    static const char *const names[] = {"y", "z", "dout", "dy", "dz"};
    op_ctx o = {"ssmjit_gate_bwd", desc};
    return run(ctx, &o, SJ_ROLE_BACKWARD, "gate_bwd", mats, names, 5, stream);
}
