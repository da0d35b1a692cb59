/* cuBLAS, opened with dlopen on first use, for the GEMMs of the model
 * layer.  Its headers are not used (they bring the CUDA runtime's with
 * them): the few types below follow cublas_api.h, whose ABI for these
 * calls is the same from cuBLAS 11 to 13. */
#ifndef SSMJIT_CUBLAS_LOADER_H
#define SSMJIT_CUBLAS_LOADER_H

#include <stddef.h>

#include "cuda_api.h"
#include "ssmjit.h"

typedef struct cublasContext *cublasHandle_t;
typedef int cublasStatus_t;
typedef int cublasOperation_t;
typedef int cublasMath_t;
typedef int cublasComputeType_t;
typedef int cublasGemmAlgo_t;
typedef int cudaDataType;

#define CUBLAS_STATUS_SUCCESS 0
#define CUBLAS_OP_N 0
#define CUBLAS_OP_T 1
#define CUBLAS_DEFAULT_MATH 0
#define CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION 16
#define CUBLAS_COMPUTE_32F 68
#define CUBLAS_COMPUTE_32F_FAST_TF32 77
#define CUBLAS_GEMM_DEFAULT (-1)
#define CUDA_R_32F 0
#define CUDA_R_16F 2
#define CUDA_R_16BF 14

typedef struct sj_cublas {
    cublasStatus_t (*Create)(cublasHandle_t *handle);
    cublasStatus_t (*Destroy)(cublasHandle_t handle);
    cublasStatus_t (*SetStream)(cublasHandle_t handle, CUstream stream);
    cublasStatus_t (*SetWorkspace)(cublasHandle_t handle, void *workspace, size_t bytes);
    cublasStatus_t (*SetMathMode)(cublasHandle_t handle, cublasMath_t mode);
    cublasStatus_t (*GemmEx)(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                             int m, int n, int k, const void *alpha, const void *a, cudaDataType a_type,
                             int lda, const void *b, cudaDataType b_type, int ldb, const void *beta,
                             void *c, cudaDataType c_type, int ldc, cublasComputeType_t compute,
                             cublasGemmAlgo_t algo);
    const char *(*GetStatusName)(cublasStatus_t status); /* NULL before cuBLAS 11.4.2 */
    char path[4096]; /* file the library was loaded from */
} sj_cublas;

/* Opens cuBLAS once per process (thread-safe): SSMJIT_CUBLAS_PATH if set
 * (and nothing else), otherwise libcublas.so.13, .12, .11.  On failure,
 * SSMJIT_ERR_CUBLAS_NOT_FOUND listing every name tried and why it failed,
 * or the entry point the library lacks; every later call reports the same. */
ssmjit_status sj_cublas_get(const sj_cublas **out);

/* Starts opening cuBLAS on the compile pool (once a process), so that the
 * 50 MB library and the 540 MB of cuBLASLt behind it load while the
 * caller does other work (a model, its weights): opening them took 70-90
 * ms.  sj_cublas_get then waits for it, or opens it itself if no worker
 * has begun, and reports as it would have. */
void sj_cublas_open_ahead(void);

/* SSMJIT_OK for CUBLAS_STATUS_SUCCESS, else an SSMJIT_ERR_DRIVER message
 * "<call> failed: CUBLAS_STATUS_... (<status>)". */
ssmjit_status sj_cublas_result(const sj_cublas *api, cublasStatus_t s, const char *call);

/* Calls cuBLAS entry point `fn` (a member of sj_cublas) and converts the
 * result. */
#define SJ_CUBLAS(api, fn, ...) sj_cublas_result((api), (api)->fn(__VA_ARGS__), "cublas" #fn)

#endif
