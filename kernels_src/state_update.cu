/* One decode step of the selective scan (module "state_update"):
 *     dt = softplus(dt + dt_bias) (or without softplus)
 *     state = exp(dt A) state + dt B x        (state [B, D, N] f32, in place)
 *     out = (sum_n C state + D x) silu(z)
 * the same arithmetic as one token of the forward scan.
 *
 * G lanes (a power of two up to 32) share one (batch row, channel) and take
 * states n = lane, lane + G, ..., so state loads are coalesced; their
 * partial sums meet through shuffles.  Where N is a multiple of 4 (and the
 * state and A are 16-byte aligned) each lane takes 4 adjacent states with
 * 16-byte accesses instead: a quarter of the threads, each with four
 * independent chains, where one state a thread left the step bound by the
 * latency of its few dependent loads.  Every lane of a warp stays to the
 * end so the shuffles have all their partners.  A block's threads share a
 * batch row (grid.y, strided), and lanes and channels come from shifts:
 * each thread has so little work that 64-bit divisions used to dominate. */
#include "ssmjit_types.cuh"

/* Kernel argument block; every field is 8 bytes so the host mirror
 * (struct sj_update_params in src/ops/ops_scan.c) has the same layout. */
struct sj_update_params {
    const void *x, *dt, *z, *B, *C;
    sj_i64 sx, sdt, sz, sB, sC;
    const float *A, *Dv, *dt_bias;
    float *state;
    void *out;
    sj_i64 sout;
    sj_i64 batch, D, N, softplus, log2G, vec4;
};
static_assert(sizeof(sj_update_params) == 22 * 8, "host mirror in src/ops/ops_scan.c");

template <typename T> __device__ __forceinline__ float ld(const void *base, sj_i64 i)
{
    return sj_to_float(((const T *)base)[i]);
}

template <typename T> __device__ __forceinline__ void state_update(const sj_update_params &p)
{
    const sj_i64 t = (sj_i64)blockIdx.x * blockDim.x + threadIdx.x, N = p.N;
    const int G = 1 << p.log2G, lane = (int)(t & (G - 1));
    const sj_i64 d = t >> p.log2G;
    const bool ok = d < p.D;
    for (sj_i64 b = blockIdx.y; b < p.batch; b += gridDim.y) {
        float y = 0.0f, x = 0.0f;
        if (ok) {
            x = ld<T>(p.x, b * p.sx + d);
            float dt = ld<T>(p.dt, b * p.sdt + d) + (p.dt_bias ? p.dt_bias[d] : 0.0f);
            if (p.softplus)
                dt = sj_softplus(dt);
            const float dtx = dt * x;
            float *st = p.state + (b * p.D + d) * N;
            const float *A = p.A + d * N;
            if (p.vec4) {
                for (sj_i64 n = 4 * lane; n < N; n += 4 * G) {
                    const float4 a4 = *(const float4 *)(A + n);
                    float4 h4 = *(const float4 *)(st + n);
                    const float a[4] = {a4.x, a4.y, a4.z, a4.w};
                    float h[4] = {h4.x, h4.y, h4.z, h4.w};
#pragma unroll
                    for (int k = 0; k < 4; k++) {
                        h[k] = fmaf(exp2f(dt * (a[k] * SJ_LOG2E)), h[k], dtx * ld<T>(p.B, b * p.sB + n + k));
                        y = fmaf(ld<T>(p.C, b * p.sC + n + k), h[k], y);
                    }
                    *(float4 *)(st + n) = make_float4(h[0], h[1], h[2], h[3]);
                }
            } else {
                for (sj_i64 n = lane; n < N; n += G) {
                    const float h = fmaf(exp2f(dt * (A[n] * SJ_LOG2E)), st[n], dtx * ld<T>(p.B, b * p.sB + n));
                    st[n] = h;
                    y = fmaf(ld<T>(p.C, b * p.sC + n), h, y);
                }
            }
        }
        for (int m = G >> 1; m > 0; m >>= 1)
            y += __shfl_xor_sync(0xffffffffu, y, m);
        if (ok && lane == 0) {
            y = fmaf(p.Dv ? p.Dv[d] : 0.0f, x, y);
            if (p.z)
                y *= sj_silu(ld<T>(p.z, b * p.sz + d));
            ((T *)p.out)[b * p.sout + d] = sj_from_float<T>(y);
        }
    }
}

#define SJ_STATE_UPDATE_KERNEL(T, sfx, unused)                                            \
    SJ_KERNEL(state_update_##sfx)(                                                        \
    extern "C" __global__ void state_update_##sfx(const sj_update_params p)               \
    {                                                                                     \
        state_update<T>(p);                                                               \
    })

SJ_FOR_EACH_DTYPE(SJ_STATE_UPDATE_KERNEL, 0)
