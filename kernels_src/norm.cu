/* RMSNorm over the rows of [rows, d] activations, with an optional residual
 * added before normalising.
 *
 * A row is owned by a group of blockDim.x threads: one warp when
 * blockDim.x == 32 (then blockDim.y warps of a block take one row each and
 * never wait for each other), else the whole block (blockDim.y == 1).
 * Thread t of the group handles columns t, t + blockDim.x, ...  The
 * "cached" kernels keep a row in registers (d <= blockDim.x * SJ_NORM_VPT)
 * and read it once; the "stream" kernels take any d and read the row again
 * in the second pass (from L1/L2).  Blocks walk rows with a grid stride, so
 * the host sizes the grid to what the device holds at once and a block loads
 * the weight once for all its rows.
 *
 * The weight gradient is never accumulated with atomics: each block sums
 * its rows' contributions into its own slot (row blockIdx.x) of a
 * [gridDim.x, d] f32 workspace, the warps of a block in a fixed order, and
 * rmsnorm_dweight sums the slots in a fixed order, so the result is
 * reproducible bit for bit.  The stream kernels take blockDim.y == 1 only.
 */
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

/* The value that is normalised: x, or x + residual rounded to the residual's
 * type, so that the forward normalises exactly what it stores in
 * residual_out and what the backward reads back. */
template <typename T, typename R>
__device__ __forceinline__ float norm_input(const T *x, const R *res, sj_i64 j)
{
    float h = sj_to_float(x[j]);
    if (res)
        h = sj_to_float(sj_from_float<R>(h + sj_to_float(res[j])));
    return h;
}

/* Iterations of a thread over its columns: VPT when cached, else enough to
 * cover d. */
template <int VPT> __device__ __forceinline__ sj_i64 norm_iters(sj_i64 d)
{
    return VPT > 0 ? VPT : (d - threadIdx.x + blockDim.x - 1) / blockDim.x;
}

/* Slot arrays are sized for VPT but only indexed when VPT > 0. */
#define SJ_NORM_SLOTS(VPT) ((VPT) > 0 ? (VPT) : 1)

template <typename T, typename R, int VPT>
__device__ void rmsnorm_fwd(const T *x, sj_i64 sx, const R *res, sj_i64 sr, const float *w,
                            T *y, sj_i64 sy, R *res_out, sj_i64 sro, float *rstd, sj_i64 rows,
                            sj_i64 d, float eps)
{
    constexpr bool CACHED = VPT > 0;
    __shared__ float red[32];
    const sj_i64 iters = norm_iters<VPT>(d);
    float wc[SJ_NORM_SLOTS(VPT)], hc[SJ_NORM_SLOTS(VPT)];
    if constexpr (CACHED) {
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const sj_i64 j = threadIdx.x + (sj_i64)k * blockDim.x;
            wc[k] = j < d ? w[j] : 0.0f;
        }
    }
    SJ_NORM_ROWS(row, rows)
    {
        const T *xr = x + row * sx;
        const R *rr = res ? res + row * sr : nullptr;
        float ss = 0.0f;
#pragma unroll
        for (sj_i64 k = 0; k < iters; ++k) {
            const sj_i64 j = threadIdx.x + k * blockDim.x;
            const float h = j < d ? norm_input(xr, rr, j) : 0.0f;
            ss += h * h;
            if constexpr (CACHED)
                hc[k] = h;
        }
        const float r = rsqrtf(norm_row_sum(ss, red) / (float)d + eps);
#pragma unroll
        for (sj_i64 k = 0; k < iters; ++k) {
            const sj_i64 j = threadIdx.x + k * blockDim.x;
            if (j >= d)
                continue;
            float h, wj;
            if constexpr (CACHED) {
                h = hc[k];
                wj = wc[k];
            } else {
                h = norm_input(xr, rr, j);
                wj = w[j];
            }
            if (res_out)
                res_out[row * sro + j] = sj_from_float<R>(h);
            y[row * sy + j] = sj_from_float<T>(h * r * wj);
        }
        if (rstd && threadIdx.x == 0)
            rstd[row] = r;
    }
}

/* Writes a block's dweight partial.  With one row group per block that is
 * the group's sums; with a warp per row (blockDim.y warps) the warps' sums
 * meet in dynamic shared memory ([blockDim.y][32 * VPT] floats) and are
 * added in warp order. */
template <int VPT>
__device__ __forceinline__ void norm_store_dweight(const float *dwc, float *slot, sj_i64 d)
{
    if (blockDim.y == 1) {
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const sj_i64 j = threadIdx.x + (sj_i64)k * blockDim.x;
            if (j < d)
                slot[j] = dwc[k];
        }
        return;
    }
    extern __shared__ float warp_dw[];
    constexpr int W = 32 * VPT;
#pragma unroll
    for (int k = 0; k < VPT; ++k)
        warp_dw[threadIdx.y * W + threadIdx.x + 32 * k] = dwc[k];
    __syncthreads();
    for (int j = threadIdx.y * 32 + threadIdx.x; j < d; j += blockDim.y * 32) {
        float s = 0.0f;
        for (unsigned q = 0; q < blockDim.y; ++q)
            s += warp_dw[q * W + j];
        slot[j] = s;
    }
}

/* dh = rstd * (g - xhat * mean(g * xhat)) with xhat = h * rstd, g = dy * w;
 * the residual-stream gradient d_res_out adds to dh, which goes to dx and
 * (optionally) d_res.  dweight partials: sum over rows of dy * xhat. */
template <typename T, typename R, int VPT>
__device__ void rmsnorm_bwd(const R *h, sj_i64 sh, const float *w, const float *rstd,
                            const T *dy, sj_i64 sdy, const R *dro, sj_i64 sdro, T *dx,
                            sj_i64 sdx, R *dres, sj_i64 sdres, float *partial, sj_i64 rows,
                            sj_i64 d)
{
    constexpr bool CACHED = VPT > 0;
    __shared__ float red[32];
    const sj_i64 iters = norm_iters<VPT>(d);
    float *slot = partial ? partial + (sj_i64)blockIdx.x * d : nullptr;
    /* The weight is re-read per row (from L1) rather than cached: a fourth
     * register array would spill at 1024 threads. */
    float xc[SJ_NORM_SLOTS(VPT)], gc[SJ_NORM_SLOTS(VPT)], dwc[SJ_NORM_SLOTS(VPT)];
#pragma unroll
    for (sj_i64 k = 0; k < iters; ++k) {
        if constexpr (CACHED)
            dwc[k] = 0.0f;
        else if (slot)
            slot[threadIdx.x + k * blockDim.x] = 0.0f; /* only this thread adds to it */
    }
    SJ_NORM_ROWS(row, rows)
    {
        const R *hr = h + row * sh;
        const T *dyr = dy + row * sdy;
        const float r = rstd[row];
        float s = 0.0f;
#pragma unroll
        for (sj_i64 k = 0; k < iters; ++k) {
            const sj_i64 j = threadIdx.x + k * blockDim.x;
            float xh = 0.0f, dyj = 0.0f, wj = 0.0f;
            if (j < d) {
                xh = sj_to_float(hr[j]) * r;
                dyj = sj_to_float(dyr[j]);
                wj = w[j];
            }
            s += dyj * wj * xh;
            if constexpr (CACHED) {
                xc[k] = xh;
                gc[k] = dyj * wj;
                dwc[k] += dyj * xh;
            }
        }
        const float c = norm_row_sum(s, red) / (float)d;
#pragma unroll
        for (sj_i64 k = 0; k < iters; ++k) {
            const sj_i64 j = threadIdx.x + k * blockDim.x;
            if (j >= d)
                continue;
            float xh, g;
            if constexpr (CACHED) {
                xh = xc[k];
                g = gc[k];
            } else {
                xh = sj_to_float(hr[j]) * r;
                const float dyj = sj_to_float(dyr[j]);
                g = dyj * w[j];
                if (slot)
                    slot[j] += dyj * xh;
            }
            float v = r * (g - xh * c);
            if (dro)
                v += sj_to_float(dro[row * sdro + j]);
            dx[row * sdx + j] = sj_from_float<T>(v);
            if (dres)
                dres[row * sdres + j] = sj_from_float<R>(v);
        }
    }
    if constexpr (CACHED) {
        if (slot)
            norm_store_dweight<VPT>(dwc, slot, d);
    }
}

#define SJ_NORM_KERNELS(T, ts, R, rs, path, VPT)                                                \
    extern "C" __global__ void __launch_bounds__(1024)                                          \
        rmsnorm_fwd_##path##_##ts##_##rs(const T *x, sj_i64 sx, const R *res, sj_i64 sr,        \
                                         const float *w, T *y, sj_i64 sy, R *res_out,           \
                                         sj_i64 sro, float *rstd, sj_i64 rows, sj_i64 d,        \
                                         float eps)                                             \
    {                                                                                           \
        rmsnorm_fwd<T, R, VPT>(x, sx, res, sr, w, y, sy, res_out, sro, rstd, rows, d, eps);     \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(1024)                                          \
        rmsnorm_bwd_##path##_##ts##_##rs(const R *h, sj_i64 sh, const float *w,                 \
                                         const float *rstd, const T *dy, sj_i64 sdy,            \
                                         const R *dro, sj_i64 sdro, T *dx, sj_i64 sdx, R *dres, \
                                         sj_i64 sdres, float *partial, sj_i64 rows, sj_i64 d)   \
    {                                                                                           \
        rmsnorm_bwd<T, R, VPT>(h, sh, w, rstd, dy, sdy, dro, sdro, dx, sdx, dres, sdres,        \
                               partial, rows, d);                                               \
    }

/* (activation type, residual type) pairs: the residual stream is either in
 * the activation type or in f32. */
#define SJ_NORM_PAIRS(M, ...)                    \
    M(float, f32, float, f32, __VA_ARGS__)       \
    M(sj_half, f16, sj_half, f16, __VA_ARGS__)   \
    M(sj_half, f16, float, f32, __VA_ARGS__)     \
    M(sj_bf16, bf16, sj_bf16, bf16, __VA_ARGS__) \
    M(sj_bf16, bf16, float, f32, __VA_ARGS__)

SJ_NORM_PAIRS(SJ_NORM_KERNELS, cached, SJ_NORM_VPT)
SJ_NORM_PAIRS(SJ_NORM_KERNELS, stream, 0)

/* Compensated (Neumaier) sum: the slots of a long backward hold partial
 * sums of both signs whose total can be far smaller than they are, and
 * plain f32 addition would lose that total's leading digits. */
struct sj_csum {
    float s, c;
};

__device__ __forceinline__ void sj_csum_add(sj_csum &a, float v)
{
    const float t = a.s + v;
    a.c += fabsf(a.s) >= fabsf(v) ? (a.s - t) + v : (v - t) + a.s;
    a.s = t;
}

/* dweight[j] = sum over slots of partial[slot][j].  Block (32, 32): each
 * thread sums every 32nd slot of one column, then the 32 sums are added in
 * slot-residue order.  Grid-strides over column tiles.  slots = 0 writes
 * zeros (the gradient over no rows). */
extern "C" __global__ void __launch_bounds__(1024)
    rmsnorm_dweight(const float *partial, sj_i64 slots, sj_i64 d, float *dweight)
{
    __shared__ float acc[32][33];
    for (sj_i64 tile = (sj_i64)blockIdx.x * 32; tile < d; tile += (sj_i64)gridDim.x * 32) {
        const sj_i64 j = tile + threadIdx.x;
        sj_csum sum = {0.0f, 0.0f};
        if (j < d)
            for (sj_i64 p = threadIdx.y; p < slots; p += 32)
                sj_csum_add(sum, partial[p * d + j]);
        acc[threadIdx.y][threadIdx.x] = sum.s + sum.c;
        __syncthreads();
        if (threadIdx.y == 0 && j < d) {
            sj_csum total = {0.0f, 0.0f};
            for (int q = 0; q < 32; ++q)
                sj_csum_add(total, acc[q][threadIdx.x]);
            dweight[j] = total.s + total.c;
        }
        __syncthreads();
    }
}
