/* RMSNorm backward; see norm_common.cuh. */
#include "norm_common.cuh"

/* Writes a block's dweight partial (the cached kernels' columns).  With
 * one row group per block that is the group's sums; with a warp per row
 * (blockDim.y warps) the warps' sums meet in dynamic shared memory
 * ([blockDim.y][32 * SJ_NORM_VPT] floats) and are added in warp order. */
__device__ __forceinline__ void norm_store_dweight(const float *dwc, float *partial, sj_i64 d)
{
    constexpr int V = SJ_NORM_VPT, W = 32 * V;
    float *slot = partial + (sj_i64)blockIdx.x * d;
    const sj_i64 j0 = norm_col0();
    if (blockDim.y == 1) {
        norm_store<float>(slot, j0, d, sj_group_ok<float>(partial, d), dwc);
        return;
    }
    extern __shared__ float warp_dw[];
#pragma unroll
    for (int k = 0; k < V; ++k)
        warp_dw[threadIdx.y * W + j0 + k] = dwc[k];
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
template <typename T, typename R>
__device__ void rmsnorm_bwd_cached(const R *h, sj_i64 sh, const float *w, const float *rstd, const T *dy,
                                   sj_i64 sdy, const R *dro, sj_i64 sdro, T *dx, sj_i64 sdx, R *dres,
                                   sj_i64 sdres, float *partial, sj_i64 rows, sj_i64 d)
{
    constexpr int V = SJ_NORM_VPT;
    __shared__ float red[32];
    const sj_i64 j0 = norm_col0();
    const bool vh = sj_group_ok<R>(h, sh), vw = sj_group_ok<float>(w, 0), vdy = sj_group_ok<T>(dy, sdy),
               vdro = sj_group_ok<R>(dro, sdro), vdx = sj_group_ok<T>(dx, sdx),
               vdres = sj_group_ok<R>(dres, sdres);
    float dwc[V];
#pragma unroll
    for (int k = 0; k < V; ++k)
        dwc[k] = 0.0f;
    SJ_NORM_ROWS(row, rows)
    {
        const float r = rstd[row];
        float xh[V], g[V], s = 0.0f;
        norm_load<R>(xh, h + row * sh, j0, d, vh);
        norm_load<T>(g, dy + row * sdy, j0, d, vdy);
        {
            /* The weight is re-read per row (from L1) rather than kept: a
             * fourth register array would spill at 1024 threads. */
            float wv[V];
            norm_load<float>(wv, w, j0, d, vw);
#pragma unroll
            for (int k = 0; k < V; ++k) {
                xh[k] *= r;
                dwc[k] += g[k] * xh[k];
                g[k] *= wv[k];
                s += g[k] * xh[k];
            }
        }
        const float c = norm_row_sum(s, red) / (float)d;
#pragma unroll
        for (int k = 0; k < V; ++k)
            g[k] = r * (g[k] - xh[k] * c);
        if (dro) {
            /* xh is done with: its registers take d_res_out */
            norm_load<R>(xh, dro + row * sdro, j0, d, vdro);
#pragma unroll
            for (int k = 0; k < V; ++k)
                g[k] += xh[k];
        }
        norm_store<T>(dx + row * sdx, j0, d, vdx, g);
        if (dres)
            norm_store<R>(dres + row * sdres, j0, d, vdres, g);
    }
    if (partial)
        norm_store_dweight(dwc, partial, d);
}

/* The same for any d, a thread's columns strided, the row read twice. */
template <typename T, typename R>
__device__ void rmsnorm_bwd_stream(const R *h, sj_i64 sh, const float *w, const float *rstd, const T *dy,
                                   sj_i64 sdy, const R *dro, sj_i64 sdro, T *dx, sj_i64 sdx, R *dres,
                                   sj_i64 sdres, float *partial, sj_i64 rows, sj_i64 d)
{
    __shared__ float red[32];
    float *slot = partial ? partial + (sj_i64)blockIdx.x * d : nullptr;
    if (slot)
        for (sj_i64 j = threadIdx.x; j < d; j += blockDim.x)
            slot[j] = 0.0f; /* only this thread adds to it */
    SJ_NORM_ROWS(row, rows)
    {
        const R *hr = h + row * sh;
        const T *dyr = dy + row * sdy;
        const float r = rstd[row];
        float s = 0.0f;
        for (sj_i64 j = threadIdx.x; j < d; j += blockDim.x)
            s += sj_to_float(dyr[j]) * w[j] * (sj_to_float(hr[j]) * r);
        const float c = norm_row_sum(s, red) / (float)d;
        for (sj_i64 j = threadIdx.x; j < d; j += blockDim.x) {
            const float xh = sj_to_float(hr[j]) * r, dyj = sj_to_float(dyr[j]);
            if (slot)
                slot[j] += dyj * xh;
            float v = r * (dyj * w[j] - xh * c);
            if (dro)
                v += sj_to_float(dro[row * sdro + j]);
            dx[row * sdx + j] = sj_from_float<T>(v);
            if (dres)
                dres[row * sdres + j] = sj_from_float<R>(v);
        }
    }
}

#define SJ_NORM_BWD_KERNELS(T, ts, R, rs, path)                                                      \
    SJ_KERNEL(rmsnorm_bwd_##path##_##ts##_##rs)(                                                     \
    extern "C" __global__ void __launch_bounds__(1024)                                               \
        rmsnorm_bwd_##path##_##ts##_##rs(const R *h, sj_i64 sh, const float *w,                      \
                                         const float *rstd, const T *dy, sj_i64 sdy,                 \
                                         const R *dro, sj_i64 sdro, T *dx, sj_i64 sdx, R *dres,      \
                                         sj_i64 sdres, float *partial, sj_i64 rows, sj_i64 d)        \
    {                                                                                                \
        rmsnorm_bwd_##path<T, R>(h, sh, w, rstd, dy, sdy, dro, sdro, dx, sdx, dres, sdres, partial,  \
                                 rows, d);                                                           \
    })

SJ_NORM_PAIRS(SJ_NORM_BWD_KERNELS, cached)
SJ_NORM_PAIRS(SJ_NORM_BWD_KERNELS, stream)

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
#if SJ_KERNEL_WANTED(rmsnorm_dweight)
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
#endif
