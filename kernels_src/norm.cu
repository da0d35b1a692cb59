/* RMSNorm forward; see norm_common.cuh. */
#include "norm_common.cuh"

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

#define SJ_NORM_FWD_KERNELS(T, ts, R, rs, path, VPT)                                           \
    extern "C" __global__ void __launch_bounds__(1024)                                          \
        rmsnorm_fwd_##path##_##ts##_##rs(const T *x, sj_i64 sx, const R *res, sj_i64 sr,        \
                                         const float *w, T *y, sj_i64 sy, R *res_out,           \
                                         sj_i64 sro, float *rstd, sj_i64 rows, sj_i64 d,        \
                                         float eps)                                             \
    {                                                                                           \
        rmsnorm_fwd<T, R, VPT>(x, sx, res, sr, w, y, sy, res_out, sro, rstd, rows, d, eps);     \
    }

SJ_NORM_PAIRS(SJ_NORM_FWD_KERNELS, cached, SJ_NORM_VPT)
SJ_NORM_PAIRS(SJ_NORM_FWD_KERNELS, stream, 0)
