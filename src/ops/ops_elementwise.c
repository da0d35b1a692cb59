/* Unfused activations and the SiLU gate (module "elementwise"). */
#include <stdio.h>

#include "base/error.h"
#include "engine/kernel.h"
#include "validate.h"

#define ROWS_PER_GRID 65535u /* gridDim.y limit; the kernels loop over the rest */
#define THREADS 256u
#define MAX_OPERANDS 5

/* Columns a thread takes in each row: a 16-byte group (the kernels'
 * sj_map_groups). */
static int64_t group_cols(ssmjit_dtype dtype) { return 16 / (int64_t)ssmjit_dtype_size(dtype); }

/* What the activation and gate ops share: the op's name and its shape. */
typedef struct op_ctx {
    const char *op;
    ssmjit_dtype dtype;
    int64_t rows, cols;
} op_ctx;

/* The shape's checks, after the descriptor's own. */
static ssmjit_status check_shape(const op_ctx *o)
{
    SJ_TRY(sj_check_dtype(o->dtype, o->op, "desc->dtype"));
    SJ_TRY(sj_check_extent(o->rows, o->op, "desc->rows"));
    SJ_TRY(sj_check_extent(o->cols, o->op, "desc->cols"));
    SJ_TRY(sj_check_size(o->rows, o->cols, 1, o->op, "desc->rows * desc->cols"));
    /* grid.x has a block per THREADS groups of columns. */
    SJ_FAIL_IF((o->cols - 1) / (THREADS * group_cols(o->dtype)) >= 0x7fffffff, SSMJIT_ERR_UNSUPPORTED,
               "%s: desc->cols = %lld is too large", o->op, (long long)o->cols);
    return SSMJIT_OK;
}

/* Checks the operands (names[i] is "args->x" ...) and launches `kernel`
 * on them: each operand's pointer and stride, then rows and cols. */
static ssmjit_status run(ssmjit_context *ctx, const op_ctx *o, sj_kernel_role role, const char *kernel,
                         const ssmjit_matrix *const *mats, const char *const *names, int count, void *stream)
{
    ssmjit_matrix m[MAX_OPERANDS];
    void *args[2 * MAX_OPERANDS + 2];
    int n = 0;
    for (int i = 0; i < count; i++) {
        SJ_TRY(sj_check_matrix(o->op, names[i], mats[i], ssmjit_dtype_size(o->dtype), 1, o->rows, o->cols,
                               SJ_MATRIX_REQUIRED | SJ_MATRIX_ROWS, &m[i]));
        args[n++] = &m[i].data;
        args[n++] = &m[i].stride;
    }
    if (o->rows == 0 || o->cols == 0)
        return SSMJIT_OK;
    int64_t rows = o->rows, cols = o->cols;
    args[n++] = &rows;
    args[n++] = &cols;
    char name[64];
    snprintf(name, sizeof name, "%s_%s", kernel, sj_dtype_suffix(o->dtype));
    CUfunction fn;
    SJ_TRY(sj_kernel_get(ctx, role == SJ_ROLE_BACKWARD ? SJ_MODULE_ELEMENTWISE_BWD : SJ_MODULE_ELEMENTWISE, role,
                         name, &fn));
    const int64_t per_block = THREADS * group_cols(o->dtype);
    sj_dim3 grid = {(unsigned)((cols + per_block - 1) / per_block),
                    rows < ROWS_PER_GRID ? (unsigned)rows : ROWS_PER_GRID, 1};
    sj_dim3 block = {THREADS, 1, 1};
    return sj_launch(ctx, fn, grid, block, 0, stream, args);
}

static const char *act_name(ssmjit_activation act)
{
    return act == SSMJIT_ACT_SILU ? "silu" : act == SSMJIT_ACT_SOFTPLUS ? "softplus" : NULL;
}

/* Checks ctx and desc; *o and *kernel get the shape and the kernel's name
 * (without its dtype). */
static ssmjit_status check_activation(ssmjit_context *ctx, const char *op, const char *dir,
                                      const ssmjit_activation_desc *desc, op_ctx *o, char (*kernel)[48])
{
    SJ_TRY(sj_check_context(ctx, op));
    SJ_CHECK_STRUCT(op, "desc", desc, ssmjit_activation_desc);
    const char *a = act_name(desc->activation);
    SJ_FAIL_IF(!a, SSMJIT_ERR_INVALID_ARG, "%s: desc->activation = %d is not a ssmjit_activation", op,
               (int)desc->activation);
    *o = (op_ctx){op, desc->dtype, desc->rows, desc->cols};
    SJ_TRY(check_shape(o));
    snprintf(*kernel, sizeof *kernel, "act_%s_%s", dir, a);
    return SSMJIT_OK;
}

SSMJIT_API ssmjit_status ssmjit_activation_fwd(ssmjit_context *ctx, const ssmjit_activation_desc *desc,
                                               const ssmjit_activation_fwd_args *args, void *stream)
{
    static const char op[] = "ssmjit_activation_fwd";
    op_ctx o;
    char kernel[48];
    SJ_TRY(check_activation(ctx, op, "fwd", desc, &o, &kernel));
    SJ_CHECK_STRUCT(op, "args", args, ssmjit_activation_fwd_args);
    const ssmjit_matrix *mats[] = {&args->x, &args->y};
    static const char *const names[] = {"args->x", "args->y"};
    return run(ctx, &o, SJ_ROLE_FORWARD, kernel, mats, names, 2, stream);
}

SSMJIT_API ssmjit_status ssmjit_activation_bwd(ssmjit_context *ctx, const ssmjit_activation_desc *desc,
                                               const ssmjit_activation_bwd_args *args, void *stream)
{
    static const char op[] = "ssmjit_activation_bwd";
    op_ctx o;
    char kernel[48];
    SJ_TRY(check_activation(ctx, op, "bwd", desc, &o, &kernel));
    SJ_CHECK_STRUCT(op, "args", args, ssmjit_activation_bwd_args);
    const ssmjit_matrix *mats[] = {&args->x, &args->dy, &args->dx};
    static const char *const names[] = {"args->x", "args->dy", "args->dx"};
    return run(ctx, &o, SJ_ROLE_BACKWARD, kernel, mats, names, 3, stream);
}

/* Checks ctx and desc; *o gets the shape. */
static ssmjit_status check_gate(ssmjit_context *ctx, const char *op, const ssmjit_gate_desc *desc, op_ctx *o)
{
    SJ_TRY(sj_check_context(ctx, op));
    SJ_CHECK_STRUCT(op, "desc", desc, ssmjit_gate_desc);
    *o = (op_ctx){op, desc->dtype, desc->rows, desc->cols};
    return check_shape(o);
}

SSMJIT_API ssmjit_status ssmjit_gate_fwd(ssmjit_context *ctx, const ssmjit_gate_desc *desc,
                                         const ssmjit_gate_fwd_args *args, void *stream)
{
    static const char op[] = "ssmjit_gate_fwd";
    op_ctx o;
    SJ_TRY(check_gate(ctx, op, desc, &o));
    SJ_CHECK_STRUCT(op, "args", args, ssmjit_gate_fwd_args);
    const ssmjit_matrix *mats[] = {&args->y, &args->z, &args->out};
    static const char *const names[] = {"args->y", "args->z", "args->out"};
    return run(ctx, &o, SJ_ROLE_FORWARD, "gate_fwd", mats, names, 3, stream);
}

SSMJIT_API ssmjit_status ssmjit_gate_bwd(ssmjit_context *ctx, const ssmjit_gate_desc *desc,
                                         const ssmjit_gate_bwd_args *args, void *stream)
{
    static const char op[] = "ssmjit_gate_bwd";
    op_ctx o;
    SJ_TRY(check_gate(ctx, op, desc, &o));
    SJ_CHECK_STRUCT(op, "args", args, ssmjit_gate_bwd_args);
    const ssmjit_matrix *mats[] = {&args->y, &args->z, &args->dout, &args->dy, &args->dz};
    static const char *const names[] = {"args->y", "args->z", "args->dout", "args->dy", "args->dz"};
    return run(ctx, &o, SJ_ROLE_BACKWARD, "gate_bwd", mats, names, 5, stream);
}
