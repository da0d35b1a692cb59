/* Causal depthwise conv1d forward; see conv_common.cuh.  The aligned
 * kernels move 4 channels per access (16 bytes in f32, 8 in 16-bit); one
 * element-wise fallback at 8 taps serves anything unaligned and every width.
 * src/ops/ops_conv.c picks among exactly these. */
#include "conv_common.cuh"

/* Tokens a forward thread loads ahead.  A 16-bit thread's rows are half
 * f32's bytes, so it takes twice the tokens to keep as many bytes in
 * flight: bf16 70% -> 74% of copy bandwidth.  Eight in f32 ran slower
 * (78% -> 73%) and sixteen in 16-bit too (66%: 151 registers, fewer
 * threads); bench/NOTES.md. */
template <typename T> __host__ __device__ constexpr int conv_fwd_unroll()
{
    return sizeof(T) == 2 ? 2 * CONV_UNROLL : CONV_UNROLL;
}

/* Loads the rows of n <= U tokens from xp on, packed: a 16-bit row
 * stays in half the registers of its floats until it is used. */
template <typename T, int VEC, int U>
__device__ __forceinline__ void fetch_rows(conv_pack<T, VEC> (&rows)[U], const T *xp, sj_i64 sx, sj_i64 n)
{
#pragma unroll
    for (int u = 0; u < U; ++u)
        if (u < n)
            rows[u].raw = *reinterpret_cast<const decltype(rows[u].raw) *>(xp + u * sx);
}

/* The forward of n <= U tokens whose inputs are in rows. */
template <typename T, int TAPS, int VEC, int U>
__device__ __forceinline__ void fwd_steps(const conv_fwd_args &a, const conv_filter<TAPS, VEC> &f,
                                          float (&win)[TAPS - 1][VEC], const conv_pack<T, VEC> (&rows)[U], T *yp,
                                          sj_i64 n)
{
#pragma unroll
    for (int u = 0; u < U; ++u) {
        if (u >= n)
            break;
        float cur[VEC], out[VEC];
#pragma unroll
        for (int i = 0; i < VEC; ++i)
            cur[i] = sj_to_float(rows[u].e[i]);
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
            const float pre = f.dot(win, cur, i);
            out[i] = a.silu ? sj_silu(pre) : pre;
        }
        store_vec<T, VEC>(yp + u * a.sy, out);
        shift_in<TAPS - 1, VEC>(win, cur);
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
            load_window<T, TAPS, VEC>(x, a.sx, a.bsx, a.init_state, b, t0, q, win);

            /* The next group's rows are in flight while this group's are
             * computed. */
            const T *xp = x + b * a.bsx + t0 * a.sx + q.d0;
            T *yp = y + b * a.bsy + t0 * a.sy + q.d0;
            constexpr int U = conv_fwd_unroll<T>();
            conv_pack<T, VEC> cur[U], next[U];
            fetch_rows<T, VEC, U>(next, xp, a.sx, tend - t0);
            for (sj_i64 t = t0; t < tend; t += U) {
#pragma unroll
                for (int u = 0; u < U; ++u)
                    cur[u] = next[u];
                xp += U * a.sx;
                fetch_rows<T, VEC, U>(next, xp, a.sx, tend - t - U);
                fwd_steps<T, TAPS, VEC, U>(a, f, win, cur, yp, tend - t);
                yp += U * a.sy;
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

#define CONV_FWD_KERNELS(T, sfx)   \
    CONV_KERNEL(fwd, T, sfx, 4, 4, ) \
    CONV_KERNEL(fwd, T, sfx, 8, 4, ) \
    CONV_KERNEL(fwd, T, sfx, 8, 1, )

CONV_FWD_KERNELS(float, f32)
CONV_FWD_KERNELS(sj_half, f16)
CONV_FWD_KERNELS(sj_bf16, bf16)
