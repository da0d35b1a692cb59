#include "gemm.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/context.h"
#include "base/error.h"
#include "validate.h"

/* What cuBLAS asks for on Hopper and newer (4 MiB would do before).
 * Without a workspace of its own a handle takes one from a pool on first
 * use, an allocation a CUDA graph capture cannot hold. */
#define SJ_BLAS_WORKSPACE_BYTES ((size_t)32 << 20)

#define OP "sj_gemm"

static ssmjit_status check_int(int64_t v, const char *what)
{
    return v <= INT_MAX ? SSMJIT_OK
                        : sj_error(SSMJIT_ERR_UNSUPPORTED, OP ": %s = %lld is more than cuBLAS takes (%d)",
                                   what, (long long)v, INT_MAX);
}

/* One operand `name` of `dtype`: a [rows, width] view `*ld` elements
 * apart (resolved in place, and within cuBLAS's int), whose pointer may
 * be NULL only if it has no elements. */
static ssmjit_status check_operand(const void *p, ssmjit_dtype dtype, int64_t rows, int64_t width, int64_t *ld,
                                   const char *name, const char *ld_name)
{
    ssmjit_matrix m = {(void *)(uintptr_t)p, *ld, 0}, out;
    SJ_TRY(sj_check_matrix(OP, name, &m, ssmjit_dtype_size(dtype), 1, rows, width,
                           SJ_MATRIX_REQUIRED | SJ_MATRIX_ROWS, &out));
    SJ_TRY(check_int(out.stride, ld_name));
    *ld = out.stride;
    return SSMJIT_OK;
}

/* Checks *d and resolves its leading dimensions into lds[3] (A, B, C). */
static ssmjit_status check_desc(const sj_gemm_desc *d, int64_t lds[3])
{
    SJ_TRY(sj_check_ptr(d, OP, "desc"));
    SJ_TRY(sj_check_dtype(d->ab_dtype, OP, "desc->ab_dtype"));
    SJ_TRY(sj_check_dtype(d->c_dtype, OP, "desc->c_dtype"));
    if (d->c_dtype != d->ab_dtype && (d->c_dtype != SSMJIT_F32 || d->ab_dtype == SSMJIT_F32))
        return sj_error(SSMJIT_ERR_UNSUPPORTED, OP ": desc->c_dtype = %s must be desc->ab_dtype (%s) or f32",
                        sj_dtype_suffix(d->c_dtype), sj_dtype_suffix(d->ab_dtype));
    SJ_TRY(sj_check_extent(d->m, OP, "desc->m"));
    SJ_TRY(sj_check_extent(d->n, OP, "desc->n"));
    SJ_TRY(sj_check_extent(d->k, OP, "desc->k"));
    SJ_TRY(check_int(d->m, "desc->m"));
    SJ_TRY(check_int(d->n, "desc->n"));
    SJ_TRY(check_int(d->k, "desc->k"));
    lds[0] = d->lda;
    lds[1] = d->ldb;
    lds[2] = d->ldc;
    SJ_TRY(check_operand(d->a, d->ab_dtype, d->trans_a ? d->k : d->m, d->trans_a ? d->m : d->k, &lds[0],
                         "desc->a", "desc->lda"));
    SJ_TRY(check_operand(d->b, d->ab_dtype, d->trans_b ? d->n : d->k, d->trans_b ? d->k : d->n, &lds[1],
                         "desc->b", "desc->ldb"));
    return check_operand(d->c, d->c_dtype, d->m, d->n, &lds[2], "desc->c", "desc->ldc");
}

static cudaDataType data_type(ssmjit_dtype dtype)
{
    switch (dtype) {
    case SSMJIT_F16: return CUDA_R_16F;
    case SSMJIT_BF16: return CUDA_R_16BF;
    case SSMJIT_F32: break;
    }
    return CUDA_R_32F;
}

/* cuBLAS wants leading dimensions of at least 1, even around no elements. */
static int blas_ld(int64_t ld) { return ld > 0 ? (int)ld : 1; }

/* cuBLAS is column-major, where a row-major matrix reads as its transpose:
 * C^T = op(B)^T op(A)^T, so the operands swap places and keep their
 * transpose flags. */
static ssmjit_status gemm_call(sj_blas *blas, const sj_gemm_desc *d, const int64_t lds[3])
{
    cudaDataType ab = data_type(d->ab_dtype);
    cublasComputeType_t compute = d->ab_dtype == SSMJIT_F32 && d->allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                             : CUBLAS_COMPUTE_32F;
    return SJ_CUBLAS(blas->api, GemmEx, blas->handle, d->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                     d->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)d->n, (int)d->m, (int)d->k, &d->alpha,
                     d->b, ab, blas_ld(lds[1]), d->a, ab, blas_ld(lds[0]), &d->beta, d->c,
                     data_type(d->c_dtype), blas_ld(lds[2]), compute, CUBLAS_GEMM_DEFAULT);
}

static ssmjit_status give_workspace(sj_blas *blas)
{
    return SJ_CUBLAS(blas->api, SetWorkspace, blas->handle, (void *)(uintptr_t)blas->workspace,
                     SJ_BLAS_WORKSPACE_BYTES);
}

/* Setting a stream also drops the handle's workspace for cuBLAS's own
 * pool, so the workspace is given again with it. */
static ssmjit_status set_stream(sj_blas *blas, CUstream stream)
{
    if (stream == blas->stream)
        return SSMJIT_OK;
    SJ_TRY(SJ_CUBLAS(blas->api, SetStream, blas->handle, stream));
    SJ_TRY(give_workspace(blas));
    blas->stream = stream;
    return SSMJIT_OK;
}

ssmjit_status sj_gemm(sj_blas *blas, const sj_gemm_desc *d, void *stream)
{
    int64_t lds[3] = {0, 0, 0};
    SJ_TRY(sj_check_ptr(blas, OP, "blas"));
    SJ_TRY(check_desc(d, lds));
    if (d->m == 0 || d->n == 0)
        return SSMJIT_OK;
    /* cuBLAS runs on the CUDA runtime, which works in the current context. */
    int pushed;
    SJ_TRY(sj_context_enter(blas->ctx, &pushed));
    ssmjit_status st = set_stream(blas, (CUstream)stream);
    if (st == SSMJIT_OK)
        st = gemm_call(blas, d, lds);
    sj_context_leave(blas->ctx, pushed);
    return st;
}

static ssmjit_status blas_init(sj_blas *blas)
{
    SJ_TRY(SJ_CU(blas->ctx->drv, MemAlloc, &blas->workspace, SJ_BLAS_WORKSPACE_BYTES));
    SJ_TRY(SJ_CUBLAS(blas->api, Create, &blas->handle));
    SJ_TRY(give_workspace(blas));
    /* Split-K partial sums of a 16-bit C stay in f32 too. */
    return SJ_CUBLAS(blas->api, SetMathMode, blas->handle,
                     CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
}

ssmjit_status sj_blas_create(ssmjit_context *ctx, sj_blas **out)
{
    SJ_TRY(sj_check_ptr(out, "sj_blas_create", "out"));
    *out = NULL;
    SJ_TRY(sj_check_context(ctx, "sj_blas_create"));
    const sj_cublas *api;
    SJ_TRY(sj_cublas_get(&api));
    sj_blas *blas = calloc(1, sizeof *blas);
    if (!blas)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory for a cuBLAS handle");
    blas->ctx = ctx;
    blas->api = api;
    int pushed;
    ssmjit_status st = sj_context_enter(ctx, &pushed);
    if (st == SSMJIT_OK) {
        st = blas_init(blas);
        sj_context_leave(ctx, pushed);
    }
    if (st != SSMJIT_OK) {
        sj_blas_destroy(blas);
        return st;
    }
    *out = blas;
    return SSMJIT_OK;
}

void sj_blas_destroy(sj_blas *blas)
{
    if (!blas)
        return;
    int pushed = 0;
    (void)sj_context_enter(blas->ctx, &pushed);
    if (blas->handle)
        (void)blas->api->Destroy(blas->handle);
    if (blas->workspace)
        (void)SJ_CU(blas->ctx->drv, MemFree, blas->workspace);
    sj_context_leave(blas->ctx, pushed);
    free(blas);
}
