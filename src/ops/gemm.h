/* Row-major GEMMs through cuBLAS, the model layer's projections:
 * C = alpha op(A) op(B) + beta C, accumulated in f32. */
#ifndef SSMJIT_GEMM_H
#define SSMJIT_GEMM_H

#include <stdint.h>

#include "cuda/cublas_loader.h"
#include "ssmjit.h"

/* One cuBLAS handle on a context, with the workspace it runs in; not for
 * concurrent use.  The fields are visible so that tests can build a
 * stand-in (as they do for contexts); only gemm.c touches them. */
typedef struct sj_blas {
    ssmjit_context *ctx;
    const sj_cublas *api;
    cublasHandle_t handle;
    CUdeviceptr workspace;
    CUstream stream; /* the stream the handle is set to */
} sj_blas;

/* Opens cuBLAS (SSMJIT_ERR_CUBLAS_NOT_FOUND without it), creates a handle
 * on ctx's device and gives it a device workspace of its own, so GEMMs
 * never allocate and can be captured into CUDA graphs.  Destroy it before
 * the context.  On failure *out is NULL. */
ssmjit_status sj_blas_create(ssmjit_context *ctx, sj_blas **out);

/* Waits for the device (cuBLAS does) and frees the handle and its
 * workspace.  NULL is a no-op. */
void sj_blas_destroy(sj_blas *blas);

typedef struct sj_gemm_desc {
    ssmjit_dtype ab_dtype; /* A and B */
    ssmjit_dtype c_dtype;  /* C: ab_dtype, or SSMJIT_F32 with 16-bit A and B */
    int64_t m, n, k;
    const void *a; int64_t lda; int trans_a; /* A is [m,k] (or [k,m] if trans_a), rows lda elements apart */
    const void *b; int64_t ldb; int trans_b; /* B is [k,n] (or [n,k] if trans_b) */
    void *c; int64_t ldc;                    /* C is [m,n] */
    float alpha, beta;                       /* beta 0: C is not read (may hold NaN) */
    int allow_tf32;                          /* f32 A and B only: TF32 tensor cores allowed */
} sj_gemm_desc;

/* C = alpha op(A) op(B) + beta C on `stream`, every matrix row-major with
 * its leading dimension (0: contiguous, else at least the row width).
 * f16 and bf16 inputs are multiplied and summed in f32, and so is f32
 * unless allow_tf32.  Checks the whole descriptor first: extents < 0, a
 * leading dimension under the row width, a NULL matrix that has elements,
 * a pointer not aligned to its elements or an unknown dtype give
 * SSMJIT_ERR_INVALID_ARG (checked as the [rows, width] view each operand
 * is, so those messages name desc->a.data, desc->a.stride for a and lda,
 * and so on); other dtype pairs and extents or leading dimensions past
 * INT_MAX (cuBLAS's int) give SSMJIT_ERR_UNSUPPORTED.  m or n of 0 does nothing; k of 0 gives
 * C = beta C.  A failing cuBLAS call gives SSMJIT_ERR_DRIVER naming it. */
ssmjit_status sj_gemm(sj_blas *blas, const sj_gemm_desc *d, void *stream);

#endif
