/* Types and conversions every ssmjit kernel uses.  Kernels must compile with
 * nothing but NVRTC: no toolkit header (cuda_fp16.h, stdint.h) is available
 * at run time, so the 16-bit float formats are plain bit containers here and
 * converted with PTX `cvt` or bit arithmetic. */
#pragma once

typedef long long sj_i64;
typedef unsigned long long sj_u64;

struct sj_half { unsigned short bits; };
struct sj_bf16 { unsigned short bits; };

__device__ __forceinline__ float sj_to_float(float v) { return v; }

__device__ __forceinline__ float sj_to_float(sj_half v)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
    return f;
}

__device__ __forceinline__ float sj_to_float(sj_bf16 v)
{
    return __uint_as_float(((unsigned)v.bits) << 16);
}

template <typename T> __device__ __forceinline__ T sj_from_float(float f);

template <> __device__ __forceinline__ float sj_from_float<float>(float f) { return f; }

template <> __device__ __forceinline__ sj_half sj_from_float<sj_half>(float f)
{
    sj_half h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
    return h;
}

template <> __device__ __forceinline__ sj_bf16 sj_from_float<sj_bf16>(float f)
{
    sj_bf16 h;
#if __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
#else
    /* sm_75 has no bf16 cvt: round to nearest even by hand, keep NaN quiet. */
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        h.bits = (unsigned short)((u >> 16) | 0x40u);
    else
        h.bits = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
#endif
    return h;
}

/* One macro per dtype list, so each module instantiates its extern "C"
 * kernels under the same suffixes the host code asks for. */
#define SJ_FOR_EACH_DTYPE(M, ...) \
    M(float, f32, __VA_ARGS__)   \
    M(sj_half, f16, __VA_ARGS__) \
    M(sj_bf16, bf16, __VA_ARGS__)

__device__ __forceinline__ float sj_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ __forceinline__ float sj_silu(float x) { return x * sj_sigmoid(x); }

/* d/dx silu(x) = s + x s (1 - s). */
__device__ __forceinline__ float sj_silu_grad(float x)
{
    float s = sj_sigmoid(x);
    return s * (1.0f + x * (1.0f - s));
}

/* Activation ids shared by the elementwise modules; ssmjit_activation's
 * values. */
enum { SJ_ACT_SILU = 0, SJ_ACT_SOFTPLUS = 1 };

/* The threshold matches the reference Mamba kernels. */
__device__ __forceinline__ float sj_softplus(float x) { return x <= 20.0f ? log1pf(expf(x)) : x; }

__device__ __forceinline__ float sj_softplus_grad(float x) { return x <= 20.0f ? sj_sigmoid(x) : 1.0f; }

/* Rows of a strided [rows, cols] matrix: one thread per column, grid.y
 * walks rows so that any row count fits the 65535 limit of gridDim.y. */
#define SJ_ROWS_LOOP(rows, cols)                                              \
    const sj_i64 col = (sj_i64)blockIdx.x * blockDim.x + threadIdx.x;        \
    if (col >= (cols))                                                        \
        return;                                                               \
    for (sj_i64 row = blockIdx.y; row < (rows); row += gridDim.y)
