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
    const T *const in[] = {x};
    T *const out[] = {y};
    const sj_i64 sin[] = {sx}, sout[] = {sy};
    sj_map_groups<T>(in, sin, out, sout, rows, cols,
                     [](const float(&v)[1], float(&r)[1]) { r[0] = act_fwd<ACT>(v[0]); });
}

template <typename T>
__device__ void gate_fwd(const T *y, sj_i64 sy, const T *z, sj_i64 sz, T *out, sj_i64 so,
                         sj_i64 rows, sj_i64 cols)
{
    const T *const in[] = {y, z};
    T *const outs[] = {out};
    const sj_i64 sin[] = {sy, sz}, sout[] = {so};
    sj_map_groups<T>(in, sin, outs, sout, rows, cols,
                     [](const float(&v)[2], float(&r)[1]) { r[0] = v[0] * sj_silu(v[1]); });
}

#define SJ_ACT_KERNELS(T, sfx, act, ACT)                                                       \
    SJ_KERNEL(act_fwd_##act##_##sfx)(                                                          \
    extern "C" __global__ void act_fwd_##act##_##sfx(const T *x, sj_i64 sx, T *y, sj_i64 sy,   \
                                                     sj_i64 rows, sj_i64 cols)                 \
    {                                                                                          \
        activation_fwd<ACT, T>(x, sx, y, sy, rows, cols);                                      \
    })

#define SJ_GATE_KERNELS(T, sfx, unused)                                                          \
    SJ_KERNEL(gate_fwd_##sfx)(                                                                   \
    extern "C" __global__ void gate_fwd_##sfx(const T *y, sj_i64 sy, const T *z, sj_i64 sz,      \
                                              T *out, sj_i64 so, sj_i64 rows, sj_i64 cols)       \
    {                                                                                            \
        gate_fwd<T>(y, sy, z, sz, out, so, rows, cols);                                          \
    })

SJ_FOR_EACH_DTYPE(SJ_ACT_KERNELS, silu, SJ_ACT_SILU)
SJ_FOR_EACH_DTYPE(SJ_ACT_KERNELS, softplus, SJ_ACT_SOFTPLUS)
SJ_FOR_EACH_DTYPE(SJ_GATE_KERNELS, 0)
