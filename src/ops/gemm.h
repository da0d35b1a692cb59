/* Row-major GEMMs, the model layer's projections: C = alpha op(A) op(B)
 * + beta C, accumulated in f32; through cuBLAS, or for products of few
 * rows by a kernel of our own (kernels_src/gemm.cu) where it is the
 * faster. */
#ifndef SSMJIT_GEMM_H
#define SSMJIT_GEMM_H

#include <stdint.h>

#include "cuda/cublas_loader.h"
#include "engine/kernel.h"
#include "ssmjit.h"

/* Which way sj_gemm goes (sj_gemm_force): by the rule, or always through
 * cuBLAS, or through the skinny kernels wherever they can run. */
typedef enum sj_gemm_path { SJ_GEMM_RULE = 0, SJ_GEMM_CUBLAS = 1, SJ_GEMM_SKINNY = 2 } sj_gemm_path;

/* One cuBLAS handle on a context, with the workspaces it and the skinny
 * kernels run in; not for concurrent use, nor for GEMMs that overlap on
 * two streams (they share the workspaces).  The fields are visible so
 * that tests can build a stand-in (as they do for contexts); only gemm.c
 * touches them. */
typedef struct sj_blas {
    ssmjit_context *ctx;
    const sj_cublas *api;
    cublasHandle_t handle;
    CUdeviceptr workspace;
    CUstream stream;      /* the stream the handle is set to */
    CUdeviceptr parts;    /* the skinny kernels' partial sums of a split k */
    CUdeviceptr arrivals; /* and their counters, zero between GEMMs */
    sj_gemm_path path;
} sj_blas;

/* Opens cuBLAS (SSMJIT_ERR_CUBLAS_NOT_FOUND without it), creates a handle
 * on ctx's device and gives it a device workspace of its own, so GEMMs
 * never allocate and can be captured into CUDA graphs.  Destroy it before
 * the context.  On failure *out is NULL. */
ssmjit_status sj_blas_create(ssmjit_context *ctx, sj_blas **out);

/* Waits for the device (cuBLAS does) and frees the handle and its
 * workspace.  NULL is a no-op. */
void sj_blas_destroy(sj_blas *blas);

/* Forces sj_gemm's path, for benchmarks and tests (SJ_GEMM_RULE gives
 * the choice back to the rule). */
void sj_gemm_force(sj_blas *blas, sj_gemm_path path);

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
 * unless allow_tf32.  Where sj_gemm_skinny_plan takes it, the skinny
 * kernel runs (its split of k summed in a fixed order: the result is the
 * same every run), else cuBLAS.  Checks the whole descriptor first: extents < 0, a
 * leading dimension under the row width, a NULL matrix that has elements,
 * a pointer not aligned to its elements or an unknown dtype give
 * SSMJIT_ERR_INVALID_ARG (checked as the [rows, width] view each operand
 * is, so those messages name desc->a.data, desc->a.stride for a and lda,
 * and so on); other dtype pairs and extents or leading dimensions past
 * INT_MAX (cuBLAS's int) give SSMJIT_ERR_UNSUPPORTED.  m or n of 0 does nothing; k of 0 gives
 * C = beta C.  A failing cuBLAS call gives SSMJIT_ERR_DRIVER naming it. */
ssmjit_status sj_gemm(sj_blas *blas, const sj_gemm_desc *d, void *stream);

/* The skinny kernels' sizes, the defines of the same names in
 * kernels_src/gemm.cu (tests/test_kernel_sizes.c holds the two equal):
 * threads a block, 8-row tiles of W a warp (so W's rows a block), blocks
 * an SM by their launch bounds, and their ring in shared memory,
 * SJ_SKINNY_STAGES stages, each W's rows and A's rows_a over SJ_SKINNY_KC
 * chunks of 32 k. */
#define SJ_SKINNY_THREADS 128
#define SJ_SKINNY_NT 2
#define SJ_SKINNY_ROWS (SJ_SKINNY_THREADS / 32 * SJ_SKINNY_NT * 8)
#define SJ_SKINNY_BLOCKS_PER_SM 3
#define SJ_SKINNY_STAGES 3
#define SJ_SKINNY_KC 4

/* The skinny kernels' launch for C = A W^T (A [m, k], W [n, k]): A's rows
 * a block takes (16, 32 or 64, the kernel's form), the grid (blocks over
 * W's 64-row tiles, splits of k, A's tiles) and the 32-wide chunks of k a
 * split takes.  Split, a block takes one of W's tiles; unsplit, every
 * blocks_n-th. */
typedef struct sj_gemm_skinny {
    int rows_a;
    unsigned blocks_n, splits, tiles_m;
    int split_chunks;
} sj_gemm_skinny;

/* Whether the skinny kernels take GEMM *d on a device of props p, lds its
 * resolved leading dimensions, and with what launch (*out).  They can
 * where the device has bf16 tensor cores (sm_80 on), A and B are 16-bit,
 * A untransposed and B transposed (a Linear layer's weight), k and the
 * leading dimensions of A and B multiples of 8, A and B 16-byte aligned,
 * k at most 2^30 and n at most INT_MAX - 64; they do where, besides, sj_gemm_skinny_wins(m, n, k), or
 * everywhere they can with `forced`. */
int sj_gemm_skinny_plan(const sj_device_props *p, const sj_gemm_desc *d, const int64_t lds[3], int forced,
                        sj_gemm_skinny *out);

/* Whether sj_gemm(blas, d) takes the skinny kernels with blas on `path`
 * (as sj_gemm_force sets it; blas->path for the path it is on), and their
 * launch (*out); 0 too where sj_gemm refuses *d or has nothing to do. */
int sj_gemm_skinny_for(const sj_blas *blas, sj_gemm_path path, const sj_gemm_desc *d, sj_gemm_skinny *out);

/* The rule measured on an H200 (bench/NOTES.md, "Decode, round 3"): the
 * skinny kernels beat cuBLAS for C [m, n] = A [m, k] W[n, k]^T where this
 * is nonzero. */
int sj_gemm_skinny_wins(int64_t m, int64_t n, int64_t k);

/* The rows of A a block of the skinny kernels takes (their form: 16, 32
 * or 64) where the rule gives them a product of W [n, k], for the largest
 * m it does; 0 where it never does. */
int sj_gemm_skinny_form(int64_t n, int64_t k);

#endif
