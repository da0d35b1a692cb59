/* RMSNorm backward; see norm_common.cuh. */
#include "norm_common.cuh"

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

#define SJ_NORM_BWD_KERNELS(T, ts, R, rs, path, VPT)                                           \
    extern "C" __global__ void __launch_bounds__(1024)                                          \
        rmsnorm_bwd_##path##_##ts##_##rs(const R *h, sj_i64 sh, const float *w,                 \
                                         const float *rstd, const T *dy, sj_i64 sdy,            \
                                         const R *dro, sj_i64 sdro, T *dx, sj_i64 sdx, R *dres, \
                                         sj_i64 sdres, float *partial, sj_i64 rows, sj_i64 d)   \
    {                                                                                           \
        rmsnorm_bwd<T, R, VPT>(h, sh, w, rstd, dy, sdy, dro, sdro, dx, sdx, dres, sdres,        \
                               partial, rows, d);                                               \
    }

SJ_NORM_PAIRS(SJ_NORM_BWD_KERNELS, cached, SJ_NORM_VPT)
SJ_NORM_PAIRS(SJ_NORM_BWD_KERNELS, stream, 0)

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
