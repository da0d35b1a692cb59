/* Unfused activations and the SiLU gate over strided [rows, cols] matrices:
 * forward kernels (the backward ones are in elementwise_bwd.cu). */
#include "ssmjit_types.cuh"

template <int ACT> __device__ __forceinline__ float act_fwd(float x)
{
    return ACT == SJ_ACT_SILU ? sj_silu(x) : sj_softplus(x);
}

template <int ACT, typename T>
__device__ void activation_fwd(const T *x, sj_i64 sx, T *y, sj_i64 sy, sj_i64 rows, sj_i64 cols)
{
    const bool vec = sj_group_ok<T>(x, sx) && sj_group_ok<T>(y, sy);
    SJ_GROUPS_LOOP(T, rows, cols)
    {
        const uint4 gx = sj_load_group<T>(x, row * sx + col, rem, vec);
        float v[VE];
#pragma unroll
        for (int e = 0; e < VE; ++e)
            v[e] = act_fwd<ACT>(sj_lane<T>(gx, e));
        sj_store_group<T>(y, row * sy + col, rem, vec, v);
    }
}

template <typename T>
__device__ void gate_fwd(const T *y, sj_i64 sy, const T *z, sj_i64 sz, T *out, sj_i64 so,
                         sj_i64 rows, sj_i64 cols)
{
    const bool vec = sj_group_ok<T>(y, sy) && sj_group_ok<T>(z, sz) && sj_group_ok<T>(out, so);
    SJ_GROUPS_LOOP(T, rows, cols)
    {
        const uint4 gy = sj_load_group<T>(y, row * sy + col, rem, vec),
                    gz = sj_load_group<T>(z, row * sz + col, rem, vec);
        float v[VE];
#pragma unroll
        for (int e = 0; e < VE; ++e)
            v[e] = sj_lane<T>(gy, e) * sj_silu(sj_lane<T>(gz, e));
        sj_store_group<T>(out, row * so + col, rem, vec, v);
    }
}

#define SJ_ACT_KERNELS(T, sfx, act, ACT)                                                       \
    extern "C" __global__ void act_fwd_##act##_##sfx(const T *x, sj_i64 sx, T *y, sj_i64 sy,   \
                                                     sj_i64 rows, sj_i64 cols)                 \
    {                                                                                          \
        activation_fwd<ACT, T>(x, sx, y, sy, rows, cols);                                      \
    }

#define SJ_GATE_KERNELS(T, sfx, unused)                                                          \
    extern "C" __global__ void gate_fwd_##sfx(const T *y, sj_i64 sy, const T *z, sj_i64 sz,      \
                                              T *out, sj_i64 so, sj_i64 rows, sj_i64 cols)       \
    {                                                                                            \
        gate_fwd<T>(y, sy, z, sz, out, so, rows, cols);                                          \
    }

SJ_FOR_EACH_DTYPE(SJ_ACT_KERNELS, silu, SJ_ACT_SILU)
SJ_FOR_EACH_DTYPE(SJ_ACT_KERNELS, softplus, SJ_ACT_SOFTPLUS)
SJ_FOR_EACH_DTYPE(SJ_GATE_KERNELS, 0)
