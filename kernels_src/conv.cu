/* Causal depthwise conv1d forward; see conv_common.cuh.  The aligned
 * kernels move 16 bytes per access where their registers allow; one
 * element-wise fallback at 8 taps serves anything unaligned and every width.
 * src/ops_conv.c picks among exactly these. */
#include "conv_common.cuh"

/* N tokens of the forward from the rows at xp, yp. */
template <typename T, int TAPS, int VEC, int N>
__device__ __forceinline__ void fwd_steps(const conv_fwd_args &a, const conv_filter<TAPS, VEC> &f,
                                          float (&win)[TAPS - 1][VEC], const T *xp, T *yp)
{
    float cur[N][VEC];
#pragma unroll
    for (int u = 0; u < N; ++u)
        load_vec<T, VEC>(xp + u * a.sx, cur[u]);
#pragma unroll
    for (int u = 0; u < N; ++u) {
        float out[VEC];
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
            const float pre = f.dot(win, cur[u], i);
            out[i] = a.silu ? sj_silu(pre) : pre;
        }
        store_vec<T, VEC>(yp + u * a.sy, out);
        shift_in<TAPS - 1, VEC>(win, cur[u]);
    }
}

template <typename T, int TAPS, int VEC> __device__ void conv_fwd(const conv_fwd_args &a)
{
    const T *x = static_cast<const T *>(a.x);
    T *y = static_cast<T *>(a.y);
    const conv_walk wk(a.batch, a.seqlen, a.dim, a.chunk, VEC);

    for (sj_i64 v = wk.vec_first(); v < wk.nvec; v += wk.vec_step()) {
        const conv_pos q = {v * VEC, a.dim, a.seqlen, a.width};
        conv_filter<TAPS, VEC> f;
        f.load(a.weight, a.bias, q);

        for (sj_i64 p = wk.walker(); p < wk.pairs; p += wk.walkers()) {
            const sj_i64 b = wk.seq(p), t0 = wk.first(p), tend = wk.end(p);
            float win[TAPS - 1][VEC];
            load_window<T, TAPS, VEC>(x, a.sx, a.init_state, b, t0, q, win);

            const T *xp = x + (b * a.seqlen + t0) * a.sx + q.d0;
            T *yp = y + (b * a.seqlen + t0) * a.sy + q.d0;
            sj_i64 t = t0;
            for (; t + CONV_UNROLL <= tend; t += CONV_UNROLL) {
                fwd_steps<T, TAPS, VEC, CONV_UNROLL>(a, f, win, xp, yp);
                xp += CONV_UNROLL * a.sx;
                yp += CONV_UNROLL * a.sy;
            }
            for (; t < tend; ++t) {
                fwd_steps<T, TAPS, VEC, 1>(a, f, win, xp, yp);
                xp += a.sx;
                yp += a.sy;
            }

            /* The last chunk's window ends with the last W-1 inputs (the
             * initial state's tail included when L < W-1). */
            if (a.final_state && tend == a.seqlen) {
#pragma unroll
                for (int i = 0; i < VEC; ++i)
#pragma unroll
                    for (int k = 0; k < TAPS - 1; ++k)
                        if (k >= f.off)
                            a.final_state[q.state(b, i, k - f.off)] = win[k][i];
            }
        }
    }
}

#define CONV_FWD_KERNELS(T, sfx, VEC4, VEC8) \
    CONV_KERNEL(fwd, T, sfx, 4, VEC4)        \
    CONV_KERNEL(fwd, T, sfx, 8, VEC8)        \
    CONV_KERNEL(fwd, T, sfx, 8, 1)

CONV_FWD_KERNELS(float, f32, 4, 4)
CONV_FWD_KERNELS(sj_half, f16, 8, 4)
CONV_FWD_KERNELS(sj_bf16, bf16, 8, 4)
