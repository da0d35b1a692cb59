/* RMSNorm forward; see norm_common.cuh. */
#include "norm_common.cuh"

template <typename T, typename R>
__device__ void rmsnorm_fwd_cached(const T *x, sj_i64 sx, const R *res, sj_i64 sr, const float *w, T *y,
                                   sj_i64 sy, R *res_out, sj_i64 sro, float *rstd, sj_i64 rows, sj_i64 d,
                                   float eps)
{
    constexpr int V = SJ_NORM_VPT;
    __shared__ float red[32];
    const sj_i64 j0 = norm_col0();
    const bool vx = sj_group_ok<T>(x, sx), vr = sj_group_ok<R>(res, sr), vy = sj_group_ok<T>(y, sy),
               vro = sj_group_ok<R>(res_out, sro);
    float wc[V];
    norm_load<float>(wc, w, j0, d, sj_group_ok<float>(w, 0));
    SJ_NORM_ROWS(row, rows)
    {
        float h[V];
        norm_load<T>(h, x + row * sx, j0, d, vx);
        if (res) {
            float rv[V];
            norm_load<R>(rv, res + row * sr, j0, d, vr);
#pragma unroll
            for (int k = 0; k < V; ++k)
                h[k] = norm_round<R>(h[k] + rv[k]);
        }
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < V; ++k)
            ss += h[k] * h[k];
        const float r = rsqrtf(norm_row_sum(ss, red) / (float)d + eps);
        if (res_out)
            norm_store<R>(res_out + row * sro, j0, d, vro, h);
#pragma unroll
        for (int k = 0; k < V; ++k)
            h[k] = h[k] * r * wc[k];
        norm_store<T>(y + row * sy, j0, d, vy, h);
        if (rstd && threadIdx.x == 0)
            rstd[row] = r;
    }
}

template <typename T, typename R>
__device__ void rmsnorm_fwd_stream(const T *x, sj_i64 sx, const R *res, sj_i64 sr, const float *w, T *y,
                                   sj_i64 sy, R *res_out, sj_i64 sro, float *rstd, sj_i64 rows, sj_i64 d,
                                   float eps)
{
    __shared__ float red[32];
    SJ_NORM_ROWS(row, rows)
    {
        const T *xr = x + row * sx;
        const R *rr = res ? res + row * sr : nullptr;
        float ss = 0.0f;
        for (sj_i64 j = threadIdx.x; j < d; j += blockDim.x) {
            const float h = norm_input(xr, rr, j);
            ss += h * h;
        }
        const float r = rsqrtf(norm_row_sum(ss, red) / (float)d + eps);
        for (sj_i64 j = threadIdx.x; j < d; j += blockDim.x) {
            const float h = norm_input(xr, rr, j);
            if (res_out)
                res_out[row * sro + j] = sj_from_float<R>(h);
            y[row * sy + j] = sj_from_float<T>(h * r * w[j]);
        }
        if (rstd && threadIdx.x == 0)
            rstd[row] = r;
    }
}

#define SJ_NORM_FWD_KERNELS(T, ts, R, rs, path)                                                      \
    SJ_KERNEL(rmsnorm_fwd_##path##_##ts##_##rs)(                                                     \
    extern "C" __global__ void __launch_bounds__(1024)                                               \
        rmsnorm_fwd_##path##_##ts##_##rs(const T *x, sj_i64 sx, const R *res, sj_i64 sr,             \
                                         const float *w, T *y, sj_i64 sy, R *res_out,                \
                                         sj_i64 sro, float *rstd, sj_i64 rows, sj_i64 d,             \
                                         float eps)                                                  \
    {                                                                                                \
        rmsnorm_fwd_##path<T, R>(x, sx, res, sr, w, y, sy, res_out, sro, rstd, rows, d, eps);        \
    })

SJ_NORM_PAIRS(SJ_NORM_FWD_KERNELS, cached)
SJ_NORM_PAIRS(SJ_NORM_FWD_KERNELS, stream)
