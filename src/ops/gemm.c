#include "gemm.h"

#include <limits.h>
#include <stdio.h>
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

/* A split of k takes at least this many 32-wide chunks, so that its
 * partial sums (rows_a x 64 floats a block) stay well under the weight
 * bytes it reads. */
#define SKINNY_MIN_SPLIT_CHUNKS 8
/* The partial sums' workspace and the tiles that can split k. */
#define SKINNY_PARTS_BYTES ((size_t)8 << 20)
#define SKINNY_TILES 4096

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

/* The ring's bytes for a block over rows_a of A. */
static unsigned skinny_smem(int rows_a) { return SJ_SKINNY_STAGES * (SJ_SKINNY_ROWS + rows_a) * SJ_SKINNY_KC * 64; }

/* Where the skinny kernels beat cuBLAS on an H200 by 5% or more in two
 * runs (ssmjit bench --gemm; bench/NOTES.md, "Decode, round 3", runs G7
 * and F): W's shape and the largest m of 1, 8, 64 and 256 at which they
 * won, below which they won too.  Everywhere else cuBLAS was as fast or
 * faster; shapes not timed stay with it.  Times are run F's, skinny over
 * cuBLAS, bf16. */
static const struct {
    int64_t n, k, m_max;
} skinny_wins[] = {
    {768, 1536, 1},  /* 130m out_proj: 0.87 at m 1, 0.99 at 8 */
    {1536, 48, 1},   /* 130m dt_proj: 0.84 at m 1, 1.03 at 8 */
    {160, 4096, 8},  /* 1.4b x_proj: 0.91 at m 1, 0.88 at 8, 1.45 at 64 */
};

/* The table's largest m for W [n, k], 0 where it has none. */
static int64_t skinny_m_max(int64_t n, int64_t k)
{
    for (size_t i = 0; i < sizeof skinny_wins / sizeof skinny_wins[0]; i++)
        if (skinny_wins[i].n == n && skinny_wins[i].k == k)
            return skinny_wins[i].m_max;
    return 0;
}

/* The form (A's rows a block) for m rows. */
static int skinny_rows_a(int64_t m) { return m <= 16 ? 16 : m <= 32 ? 32 : 64; }

int sj_gemm_skinny_wins(int64_t m, int64_t n, int64_t k) { return m <= skinny_m_max(n, k); }

int sj_gemm_skinny_form(int64_t n, int64_t k)
{
    int64_t m = skinny_m_max(n, k);
    return m ? skinny_rows_a(m) : 0;
}

int sj_gemm_skinny_plan(const sj_device_props *p, const sj_gemm_desc *d, const int64_t lds[3], int forced,
                        sj_gemm_skinny *out)
{
    /* the kernels index rows and k in int, a tile's end included */
    if (p->cc_major < 8 || d->ab_dtype == SSMJIT_F32 || d->trans_a || !d->trans_b || d->k <= 0 || d->k % 8 ||
        d->k > (1 << 30) || d->n > INT_MAX - SJ_SKINNY_ROWS || lds[0] % 8 || lds[1] % 8 || (uintptr_t)d->a % 16 ||
        (uintptr_t)d->b % 16)
        return 0;
    if (!forced && !sj_gemm_skinny_wins(d->m, d->n, d->k))
        return 0;
    int rows_a = skinny_rows_a(d->m);
    /* blocks an SM: the launch bounds', or fewer where the ring's shared
     * memory (and the 1 KB the device keeps for each block) runs out */
    int64_t per_sm = sj_min64(SJ_SKINNY_BLOCKS_PER_SM, p->max_smem_per_sm / ((int64_t)skinny_smem(rows_a) + 1024));
    int64_t tiles_n = sj_ceil_div(d->n, SJ_SKINNY_ROWS), tiles_m = sj_ceil_div(d->m, rows_a);
    if (tiles_m > 65535)
        return 0;
    /* k is split until the blocks fill the GPU once at the launch bounds'
     * occupancy. */
    int64_t tiles = tiles_n * tiles_m, chunks = sj_ceil_div(d->k, 32);
    int64_t splits = sj_ceil_div(per_sm * p->sm_count, tiles);
    splits = sj_min64(splits, sj_ceil_div(chunks, SKINNY_MIN_SPLIT_CHUNKS));
    splits = sj_min64(splits, (int64_t)(SKINNY_PARTS_BYTES / ((size_t)tiles * (size_t)rows_a * 256)));
    if (splits < 1 || tiles > SKINNY_TILES)
        splits = 1;
    int64_t split_chunks = sj_ceil_div(chunks, splits);
    splits = sj_ceil_div(chunks, split_chunks);
    /* unsplit, as many blocks as run at once, each looping over tiles */
    int64_t blocks_n = splits > 1 ? tiles_n
                                  : sj_min64(tiles_n, sj_ceil_div(per_sm * p->sm_count, tiles_m));
    *out = (sj_gemm_skinny){rows_a, (unsigned)blocks_n, (unsigned)splits, (unsigned)tiles_m, (int)split_chunks};
    return 1;
}

void sj_gemm_force(sj_blas *blas, sj_gemm_path path) { blas->path = path; }

static ssmjit_status skinny_call(sj_blas *blas, const sj_gemm_desc *d, const int64_t lds[3],
                                 const sj_gemm_skinny *s, void *stream)
{
    char name[48];
    snprintf(name, sizeof name, "gemm_skinny_m%d_%s_%s", s->rows_a, sj_dtype_suffix(d->ab_dtype),
             sj_dtype_suffix(d->c_dtype));
    CUfunction fn;
    SJ_TRY(sj_kernel_get(blas->ctx, SJ_MODULE_GEMM, SJ_ROLE_FORWARD, name, &fn));
    int m = (int)d->m, n = (int)d->n, k = (int)d->k, split_chunks = s->split_chunks;
    float alpha = d->alpha, beta = d->beta;
    int64_t lda = lds[0], ldb = lds[1], ldc = lds[2];
    void *args[] = {(void *)&d->a, &lda, (void *)&d->b, &ldb, (void *)&d->c, &ldc, &m, &n, &k,
                    &alpha, &beta, &split_chunks, &blas->parts, &blas->arrivals};
    unsigned smem = skinny_smem(s->rows_a);
    return sj_launch(blas->ctx, fn, (sj_dim3){s->blocks_n, s->splits, s->tiles_m}, (sj_dim3){SJ_SKINNY_THREADS, 1, 1},
                     smem, stream, args);
}

/* Whether `path` takes the skinny kernels for *d (its leading dimensions
 * resolved into lds) on blas's device, and their launch. */
static int takes_skinny(const sj_blas *blas, sj_gemm_path path, const sj_gemm_desc *d, const int64_t lds[3],
                        sj_gemm_skinny *out)
{
    return path != SJ_GEMM_CUBLAS &&
           sj_gemm_skinny_plan(sj_context_props(blas->ctx), d, lds, path == SJ_GEMM_SKINNY, out);
}

int sj_gemm_skinny_for(const sj_blas *blas, sj_gemm_path path, const sj_gemm_desc *d, sj_gemm_skinny *out)
{
    int64_t lds[3] = {0, 0, 0};
    return blas && check_desc(d, lds) == SSMJIT_OK && d->m && d->n && takes_skinny(blas, path, d, lds, out);
}

ssmjit_status sj_gemm(sj_blas *blas, const sj_gemm_desc *d, void *stream)
{
    int64_t lds[3] = {0, 0, 0};
    SJ_TRY(sj_check_ptr(blas, OP, "blas"));
    SJ_TRY(check_desc(d, lds));
    if (d->m == 0 || d->n == 0)
        return SSMJIT_OK;
    sj_gemm_skinny skinny;
    if (takes_skinny(blas, blas->path, d, lds, &skinny))
        return skinny_call(blas, d, lds, &skinny, stream);
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
    if (sj_context_props(blas->ctx)->cc_major >= 8) { /* where the skinny kernels can run */
        SJ_TRY(SJ_CU(blas->ctx->drv, MemAlloc, &blas->parts, SKINNY_PARTS_BYTES));
        SJ_TRY(SJ_CU(blas->ctx->drv, MemAlloc, &blas->arrivals, SKINNY_TILES * sizeof(unsigned)));
        SJ_TRY(SJ_CU(blas->ctx->drv, MemsetD8, blas->arrivals, 0, SKINNY_TILES * sizeof(unsigned)));
    }
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
    CUdeviceptr mine[] = {blas->workspace, blas->parts, blas->arrivals};
    for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++)
        if (mine[i])
            (void)SJ_CU(blas->ctx->drv, MemFree, mine[i]);
    sj_context_leave(blas->ctx, pushed);
    free(blas);
}
