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
    const T *const in[] = {x, dy};
    T *const out[] = {dx};
    const sj_i64 sin[] = {sx, sdy}, sout[] = {sdx};
    sj_map_groups<T>(in, sin, out, sout, rows, cols,
                     [](const float(&v)[2], float(&r)[1]) { r[0] = v[1] * act_grad<ACT>(v[0]); });
}

template <typename T>
__device__ void gate_bwd(const T *y, sj_i64 sy, const T *z, sj_i64 sz, const T *dout, sj_i64 sdo,
                         T *dy, sj_i64 sdy, T *dz, sj_i64 sdz, sj_i64 rows, sj_i64 cols)
{
    const T *const in[] = {y, z, dout};
    T *const out[] = {dy, dz};
    const sj_i64 sin[] = {sy, sz, sdo}, sout[] = {sdy, sdz};
    sj_map_groups<T>(in, sin, out, sout, rows, cols, [](const float(&v)[3], float(&r)[2]) {
        const float2 s = sj_silu_and_grad(v[1]);
        r[0] = v[2] * s.x;
        r[1] = v[2] * v[0] * s.y;
    });
}

#define SJ_ACT_BWD_KERNELS(T, sfx, act, ACT)                                                   \
    SJ_KERNEL(act_bwd_##act##_##sfx)(                                                          \
    extern "C" __global__ void act_bwd_##act##_##sfx(const T *x, sj_i64 sx, const T *dy,       \
                                                     sj_i64 sdy, T *dx, sj_i64 sdx,            \
                                                     sj_i64 rows, sj_i64 cols)                 \
    {                                                                                          \
        activation_bwd<ACT, T>(x, sx, dy, sdy, dx, sdx, rows, cols);                           \
    })

#define SJ_GATE_BWD_KERNELS(T, sfx, unused)                                                      \
    SJ_KERNEL(gate_bwd_##sfx)(                                                                   \
    extern "C" __global__ void gate_bwd_##sfx(const T *y, sj_i64 sy, const T *z, sj_i64 sz,      \
                                              const T *dout, sj_i64 sdo, T *dy, sj_i64 sdy,      \
                                              T *dz, sj_i64 sdz, sj_i64 rows, sj_i64 cols)       \
    {                                                                                            \
        gate_bwd<T>(y, sy, z, sz, dout, sdo, dy, sdy, dz, sdz, rows, cols);                      \
    })

SJ_FOR_EACH_DTYPE(SJ_ACT_BWD_KERNELS, silu, SJ_ACT_SILU)
SJ_FOR_EACH_DTYPE(SJ_ACT_BWD_KERNELS, softplus, SJ_ACT_SOFTPLUS)
SJ_FOR_EACH_DTYPE(SJ_GATE_BWD_KERNELS, 0)
