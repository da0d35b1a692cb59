/* Unfused activations and the SiLU gate over strided [rows, cols] matrices.
 * One thread per column of a row; grid.y walks rows so that any row count
 * fits the 65535 limit of gridDim.y. */
#include "ssmjit_types.cuh"

enum { ACT_SILU = 0, ACT_SOFTPLUS = 1 };

template <int ACT> __device__ __forceinline__ float act_fwd(float x)
{
    return ACT == ACT_SILU ? sj_silu(x) : sj_softplus(x);
}

template <int ACT> __device__ __forceinline__ float act_grad(float x)
{
    return ACT == ACT_SILU ? sj_silu_grad(x) : sj_softplus_grad(x);
}

#define SJ_ROWS_LOOP(rows, cols)                                              \
    const sj_i64 col = (sj_i64)blockIdx.x * blockDim.x + threadIdx.x;        \
    if (col >= (cols))                                                        \
        return;                                                               \
    for (sj_i64 row = blockIdx.y; row < (rows); row += gridDim.y)

template <int ACT, typename T>
__device__ void activation_fwd(const T *x, sj_i64 sx, T *y, sj_i64 sy, sj_i64 rows, sj_i64 cols)
{
    SJ_ROWS_LOOP(rows, cols)
        y[row * sy + col] = sj_from_float<T>(act_fwd<ACT>(sj_to_float(x[row * sx + col])));
}

template <int ACT, typename T>
__device__ void activation_bwd(const T *x, sj_i64 sx, const T *dy, sj_i64 sdy, T *dx, sj_i64 sdx,
                               sj_i64 rows, sj_i64 cols)
{
    SJ_ROWS_LOOP(rows, cols)
    {
        float g = act_grad<ACT>(sj_to_float(x[row * sx + col]));
        dx[row * sdx + col] = sj_from_float<T>(sj_to_float(dy[row * sdy + col]) * g);
    }
}

template <typename T>
__device__ void gate_fwd(const T *y, sj_i64 sy, const T *z, sj_i64 sz, T *out, sj_i64 so,
                         sj_i64 rows, sj_i64 cols)
{
    SJ_ROWS_LOOP(rows, cols)
    {
        float v = sj_to_float(y[row * sy + col]) * sj_silu(sj_to_float(z[row * sz + col]));
        out[row * so + col] = sj_from_float<T>(v);
    }
}

template <typename T>
__device__ void gate_bwd(const T *y, sj_i64 sy, const T *z, sj_i64 sz, const T *dout, sj_i64 sdo,
                         T *dy, sj_i64 sdy, T *dz, sj_i64 sdz, sj_i64 rows, sj_i64 cols)
{
    SJ_ROWS_LOOP(rows, cols)
    {
        float zv = sj_to_float(z[row * sz + col]);
        float yv = sj_to_float(y[row * sy + col]);
        float g = sj_to_float(dout[row * sdo + col]);
        dy[row * sdy + col] = sj_from_float<T>(g * sj_silu(zv));
        dz[row * sdz + col] = sj_from_float<T>(g * yv * sj_silu_grad(zv));
    }
}

#define SJ_ACT_KERNELS(T, sfx, act, ACT)                                                       \
    extern "C" __global__ void act_fwd_##act##_##sfx(const T *x, sj_i64 sx, T *y, sj_i64 sy,   \
                                                     sj_i64 rows, sj_i64 cols)                 \
    {                                                                                          \
        activation_fwd<ACT, T>(x, sx, y, sy, rows, cols);                                      \
    }                                                                                          \
    extern "C" __global__ void act_bwd_##act##_##sfx(const T *x, sj_i64 sx, const T *dy,       \
                                                     sj_i64 sdy, T *dx, sj_i64 sdx,            \
                                                     sj_i64 rows, sj_i64 cols)                 \
    {                                                                                          \
        activation_bwd<ACT, T>(x, sx, dy, sdy, dx, sdx, rows, cols);                           \
    }

#define SJ_GATE_KERNELS(T, sfx, unused)                                                          \
    extern "C" __global__ void gate_fwd_##sfx(const T *y, sj_i64 sy, const T *z, sj_i64 sz,      \
                                              T *out, sj_i64 so, sj_i64 rows, sj_i64 cols)       \
    {                                                                                            \
        gate_fwd<T>(y, sy, z, sz, out, so, rows, cols);                                          \
    }                                                                                            \
    extern "C" __global__ void gate_bwd_##sfx(const T *y, sj_i64 sy, const T *z, sj_i64 sz,      \
                                              const T *dout, sj_i64 sdo, T *dy, sj_i64 sdy,      \
                                              T *dz, sj_i64 sdz, sj_i64 rows, sj_i64 cols)       \
    {                                                                                            \
        gate_bwd<T>(y, sy, z, sz, dout, sdo, dy, sdy, dz, sdz, rows, cols);                      \
    }

SJ_FOR_EACH_DTYPE(SJ_ACT_KERNELS, silu, ACT_SILU)
SJ_FOR_EACH_DTYPE(SJ_ACT_KERNELS, softplus, ACT_SOFTPLUS)
SJ_FOR_EACH_DTYPE(SJ_GATE_KERNELS, 0)
