/* Shared by norm.cu (forward) and norm_bwd.cu (backward): RMSNorm over the
 * rows of [rows, d] activations, with an optional residual added before
 * normalising.
 *
 * A row is owned by a group of blockDim.x threads: one warp when
 * blockDim.x == 32 (then blockDim.y warps of a block take one row each and
 * never wait for each other), else the whole block (blockDim.y == 1).
 * The "cached" kernels keep a row in registers (d <= blockDim.x *
 * SJ_NORM_VPT) and read it once: thread t owns the SJ_NORM_VPT adjacent
 * columns from t * SJ_NORM_VPT, read and written in 16-byte groups where
 * the row's base and stride allow.  The "stream" kernels take any d,
 * thread t columns t, t + blockDim.x, ..., and read the row again in the
 * second pass (from L1/L2).  Blocks walk rows with a grid stride, so
 * the host sizes the grid to what the device holds at once and a block loads
 * the weight once for all its rows.
 *
 * The weight gradient is never accumulated with atomics: each block sums
 * its rows' contributions into its own slot (row blockIdx.x) of a
 * [gridDim.x, d] f32 workspace, the warps of a block in a fixed order, and
 * rmsnorm_dweight sums the slots in a fixed order, so the result is
 * reproducible bit for bit.  The stream kernels take blockDim.y == 1 only.
 */
#pragma once

#include "ssmjit_types.cuh"

/* Columns per thread kept in registers by the cached kernels; the host's
 * NORM_VPT must match. */
#define SJ_NORM_VPT 8

/* Sum over the row group, returned to every thread of it.  `red` is 32
 * floats of shared memory.  The shuffle butterfly and the fixed slot order
 * make the result independent of timing. */
__device__ float norm_row_sum(float v, float *red)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if (blockDim.x == 32)
        return v;
    const int lane = threadIdx.x & 31;
    __syncthreads(); /* the previous row's readers of red are done */
    if (lane == 0)
        red[threadIdx.x >> 5] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? red[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

#define SJ_NORM_ROWS(row, rows)                                                   \
    for (sj_i64 row = (sj_i64)blockIdx.x * blockDim.y + threadIdx.y; row < (rows); \
         row += (sj_i64)gridDim.x * blockDim.y)

/* h rounded to the residual stream's type R. */
template <typename R> __device__ __forceinline__ float norm_round(float h)
{
    return sj_to_float(sj_from_float<R>(h));
}

/* The value that is normalised: x, or x + residual rounded to the residual's
 * type, so that the forward normalises exactly what it stores in
 * residual_out and what the backward reads back. */
template <typename T, typename R>
__device__ __forceinline__ float norm_input(const T *x, const R *res, sj_i64 j)
{
    float h = sj_to_float(x[j]);
    if (res)
        h = norm_round<R>(h + sj_to_float(res[j]));
    return h;
}

/* The cached kernels' first column of this thread. */
__device__ __forceinline__ sj_i64 norm_col0() { return (sj_i64)threadIdx.x * SJ_NORM_VPT; }

/* v[k] = row[j0 + k] for the SJ_NORM_VPT columns from j0, zero from d on;
 * `vec` (sj_group_ok of the tensor) allows 16-byte loads. */
template <typename T>
__device__ __forceinline__ void norm_load(float *v, const T *row, sj_i64 j0, sj_i64 d, bool vec)
{
    constexpr int VE = sj_group16<T>();
#pragma unroll
    for (int g = 0; g < SJ_NORM_VPT / VE; ++g) {
        const uint4 w = sj_load_group<T>(row, j0 + g * VE, d - j0 - g * VE, vec);
#pragma unroll
        for (int e = 0; e < VE; ++e)
            v[g * VE + e] = sj_lane<T>(w, e);
    }
}

/* row[j0 + k] = v[k] for the columns below d. */
template <typename T>
__device__ __forceinline__ void norm_store(T *row, sj_i64 j0, sj_i64 d, bool vec, const float *v)
{
    constexpr int VE = sj_group16<T>();
#pragma unroll
    for (int g = 0; g < SJ_NORM_VPT / VE; ++g)
        sj_store_group<T>(row, j0 + g * VE, d - j0 - g * VE, vec, v + g * VE);
}

/* (activation type, residual type) pairs: the residual stream is either in
 * the activation type or in f32. */
#define SJ_NORM_PAIRS(M, ...)                    \
    M(float, f32, float, f32, __VA_ARGS__)       \
    M(sj_half, f16, sj_half, f16, __VA_ARGS__)   \
    M(sj_half, f16, float, f32, __VA_ARGS__)     \
    M(sj_bf16, bf16, sj_bf16, bf16, __VA_ARGS__) \
    M(sj_bf16, bf16, float, f32, __VA_ARGS__)
