/* Backward of the unfused activations and the SiLU gate (see
 * elementwise.cu). */
#include "ssmjit_types.cuh"

template <int ACT> __device__ __forceinline__ float act_grad(float x)
{
    return ACT == SJ_ACT_SILU ? sj_silu_grad(x) : sj_softplus_grad(x);
}

template <int ACT, typename T>
__device__ void activation_bwd(const T *x, sj_i64 sx, const T *dy, sj_i64 sdy, T *dx, sj_i64 sdx,
                               sj_i64 rows, sj_i64 cols)
{
    const bool vec = sj_group_ok<T>(x, sx) && sj_group_ok<T>(dy, sdy) && sj_group_ok<T>(dx, sdx);
    SJ_GROUPS_LOOP(T, rows, cols)
    {
        const uint4 gx = sj_load_group<T>(x, row * sx + col, rem, vec),
                    gdy = sj_load_group<T>(dy, row * sdy + col, rem, vec);
        float v[VE];
#pragma unroll
        for (int e = 0; e < VE; ++e)
            v[e] = sj_lane<T>(gdy, e) * act_grad<ACT>(sj_lane<T>(gx, e));
        sj_store_group<T>(dx, row * sdx + col, rem, vec, v);
    }
}

template <typename T>
__device__ void gate_bwd(const T *y, sj_i64 sy, const T *z, sj_i64 sz, const T *dout, sj_i64 sdo,
                         T *dy, sj_i64 sdy, T *dz, sj_i64 sdz, sj_i64 rows, sj_i64 cols)
{
    const bool vec = sj_group_ok<T>(y, sy) && sj_group_ok<T>(z, sz) && sj_group_ok<T>(dout, sdo) &&
                     sj_group_ok<T>(dy, sdy) && sj_group_ok<T>(dz, sdz);
    SJ_GROUPS_LOOP(T, rows, cols)
    {
        const uint4 gy = sj_load_group<T>(y, row * sy + col, rem, vec),
                    gz = sj_load_group<T>(z, row * sz + col, rem, vec),
                    gd = sj_load_group<T>(dout, row * sdo + col, rem, vec);
        float vy[VE], vz[VE];
#pragma unroll
        for (int e = 0; e < VE; ++e) {
            const float2 s = sj_silu_and_grad(sj_lane<T>(gz, e));
            const float g = sj_lane<T>(gd, e);
            vy[e] = g * s.x;
            vz[e] = g * sj_lane<T>(gy, e) * s.y;
        }
        sj_store_group<T>(dy, row * sdy + col, rem, vec, vy);
        sj_store_group<T>(dz, row * sdz + col, rem, vec, vz);
    }
}

#define SJ_ACT_BWD_KERNELS(T, sfx, act, ACT)                                                   \
    extern "C" __global__ void act_bwd_##act##_##sfx(const T *x, sj_i64 sx, const T *dy,       \
                                                     sj_i64 sdy, T *dx, sj_i64 sdx,            \
                                                     sj_i64 rows, sj_i64 cols)                 \
    {                                                                                          \
        activation_bwd<ACT, T>(x, sx, dy, sdy, dx, sdx, rows, cols);                           \
    }

#define SJ_GATE_BWD_KERNELS(T, sfx, unused)                                                      \
    extern "C" __global__ void gate_bwd_##sfx(const T *y, sj_i64 sy, const T *z, sj_i64 sz,      \
                                              const T *dout, sj_i64 sdo, T *dy, sj_i64 sdy,      \
                                              T *dz, sj_i64 sdz, sj_i64 rows, sj_i64 cols)       \
    {                                                                                            \
        gate_bwd<T>(y, sy, z, sz, dout, sdo, dy, sdy, dz, sdz, rows, cols);                      \
    }

SJ_FOR_EACH_DTYPE(SJ_ACT_BWD_KERNELS, silu, SJ_ACT_SILU)
SJ_FOR_EACH_DTYPE(SJ_ACT_BWD_KERNELS, softplus, SJ_ACT_SOFTPLUS)
SJ_FOR_EACH_DTYPE(SJ_GATE_BWD_KERNELS, 0)
