/* Causal depthwise conv1d backward; see conv_common.cuh.  The aligned
 * kernels hold four windows and move 8 bytes per access; one element-wise
 * fallback at 8 taps serves anything unaligned and every width.
 * src/ops/ops_conv.c picks among exactly these. */
#include "conv_common.cuh"

/* One walker of the backward.  With pre[t] = bias + sum_k w[k] in[t-(W-1)+k]
 * and g[t] = dLoss/dpre[t]:
 *   din[s] = sum_k w[k] g[s+(W-1)-k]  (+ d_final_state for the last W-1 inputs)
 *   dw[k]  = sum_t g[t] in[t-(W-1)+k],  dbias = sum_t g[t]
 * where in[s < 0] is the initial state, so din[s < 0] is its gradient.  In
 * the TAPS-wide view a walker steps t forward over its chunk plus TAPS-1
 * tokens of halo (whose g the chunk's last din needs) and emits
 * din[t-(TAPS-1)] once g[t] is known; the chunk at t0 = 0 also emits the
 * initial state's gradient.  dweight and dbias sums stay in registers across
 * the walker's pairs. */
template <typename T, int TAPS, int VEC> struct conv_bwd_walker {
    const conv_bwd_args &a;
    conv_pos q;
    conv_filter<TAPS, VEC> f;
    float gw[TAPS][VEC], gb[VEC]; /* dweight, dbias sums */
    float win[TAPS - 1][VEC];     /* inputs before the current token */
    float gwin[TAPS - 1][VEC];    /* g of the TAPS-1 tokens before it */
    sj_i64 b, s_first;            /* the pair's sequence, first din it emits */

    __device__ __forceinline__ conv_bwd_walker(const conv_bwd_args &args, const conv_pos &pos)
        : a(args), q(pos)
    {
        f.load(a.weight, a.bias, q);
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
            gb[i] = 0.0f;
#pragma unroll
            for (int k = 0; k < TAPS; ++k)
                gw[k][i] = 0.0f;
        }
    }

    /* N steps from token t.  token: the tokens exist (t < L), else their g
     * is 0.  own: the tokens belong to this chunk, so they add to the sums.
     * Both are constants in the unrolled main loop and runtime flags in the
     * single steps around it, which keeps one copy of the code for those. */
    template <int N> __device__ __forceinline__ void steps(sj_i64 t, bool token, bool own)
    {
        float cx[N][VEC], cdy[N][VEC];
        if (token) {
            const T *xp = static_cast<const T *>(a.x) + b * a.bsx + t * a.sx + q.d0;
            const T *dyp = static_cast<const T *>(a.dy) + b * a.bsdy + t * a.sdy + q.d0;
#pragma unroll
            for (int u = 0; u < N; ++u) {
                load_vec<T, VEC>(xp + u * a.sx, cx[u]);
                load_vec<T, VEC>(dyp + u * a.sdy, cdy[u]);
            }
        }
#pragma unroll
        for (int u = 0; u < N; ++u) {
            float g[VEC];
            if (token) {
#pragma unroll
                for (int i = 0; i < VEC; ++i) {
                    g[i] = cdy[u][i];
                    if (a.silu)
                        g[i] *= sj_silu_grad(f.dot(win, cx[u], i));
                }
                if (own) {
#pragma unroll
                    for (int i = 0; i < VEC; ++i) {
#pragma unroll
                        for (int k = 0; k < TAPS - 1; ++k)
                            gw[k][i] = fmaf(g[i], win[k][i], gw[k][i]);
                        gw[TAPS - 1][i] = fmaf(g[i], cx[u][i], gw[TAPS - 1][i]);
                        gb[i] += g[i];
                    }
                }
                shift_in<TAPS - 1, VEC>(win, cx[u]);
            } else {
#pragma unroll
                for (int i = 0; i < VEC; ++i)
                    g[i] = 0.0f;
            }
            emit(t + u - (TAPS - 1), g);
            shift_in<TAPS - 1, VEC>(gwin, g);
        }
    }

    /* din[s], from g[s+TAPS-1] (in g) and the TAPS-1 g before it (gwin). */
    __device__ __forceinline__ void emit(sj_i64 s, const float (&g)[VEC])
    {
        if (s < s_first)
            return;
        const sj_i64 L = q.seqlen, W = q.width;
        float o[VEC];
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
            /* Tap k meets g[s+(TAPS-1)-k]: the current g for k = 0, else gwin. */
            float acc = 0.0f;
#pragma unroll
            for (int k = 0; k < TAPS; ++k)
                if (k >= f.off)
                    acc = fmaf(f.w[k][i], k == 0 ? g[i] : gwin[TAPS - 1 - k][i], acc);
            if (a.dfinal_state && s >= L - (W - 1))
                acc += a.dfinal_state[q.state(b, i, s - L + (W - 1))];
            o[i] = acc;
        }
        if (s >= 0) {
            store_vec<T, VEC>(static_cast<T *>(a.dx) + b * a.bsdx + s * a.sdx + q.d0, o);
        } else if (a.dinit_state) {
#pragma unroll
            for (int i = 0; i < VEC; ++i)
                a.dinit_state[q.state(b, i, s + (W - 1))] = o[i];
        }
    }

    __device__ __forceinline__ void pair(sj_i64 seq, sj_i64 t0, sj_i64 tend)
    {
        b = seq;
        s_first = t0 == 0 ? -(q.width - 1) : t0;
        load_window<T, TAPS, VEC>(static_cast<const T *>(a.x), a.sx, a.bsx, a.init_state, b, t0, q, win);
#pragma unroll
        for (int j = 0; j < TAPS - 1; ++j)
#pragma unroll
            for (int i = 0; i < VEC; ++i)
                gwin[j][i] = 0.0f;

        const sj_i64 t_stop = tend + (TAPS - 1);                   /* one past the last step */
        const sj_i64 t_have = t_stop < q.seqlen ? t_stop : q.seqlen; /* steps with a token */
        sj_i64 t = t0;
        for (; t + CONV_UNROLL <= tend; t += CONV_UNROLL)
            steps<CONV_UNROLL>(t, true, true);
        for (; t < t_stop; ++t)
            steps<1>(t, t < t_have, t < tend);
    }

    /* The walker's row of partial sums; every walker writes one, zeros if it
     * had no pair, so the reduction never reads unwritten workspace. */
    __device__ __forceinline__ void write_sums(float *row) const
    {
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
#pragma unroll
            for (int k = 0; k < TAPS; ++k)
                if (k >= f.off)
                    row[(q.d0 + i) * q.width + k - f.off] = gw[k][i];
            row[q.dim * q.width + q.d0 + i] = gb[i];
        }
    }
};

/* No atomics: each walker sums into its own row of `partial`, and
 * conv_bwd_reduce adds the rows in a fixed order, so results reproduce bit
 * for bit. */
template <typename T, int TAPS, int VEC> __device__ void conv_bwd(const conv_bwd_args &a)
{
    const conv_walk wk(a.batch, a.seqlen, a.dim, a.chunk, VEC);
    for (sj_i64 v = wk.vec_first(); v < wk.nvec; v += wk.vec_step()) {
        conv_bwd_walker<T, TAPS, VEC> w(a, conv_pos{v * VEC, a.dim, a.seqlen, a.width});
        for (sj_i64 p = wk.walker(); p < wk.pairs; p += wk.walkers())
            w.pair(wk.seq(p), wk.first(p), wk.end(p));
        w.write_sums(a.partial + wk.walker() * (a.dim * (a.width + 1)));
    }
}

/* dweight[c] (c < D*W) and dbias[c - D*W] as sums of the walkers' rows, in
 * row order. */
#if SJ_KERNEL_WANTED(conv_bwd_reduce)
extern "C" __global__ void conv_bwd_reduce(const float *partial, sj_i64 rows, sj_i64 dim,
                                           sj_i64 width, float *dweight, float *dbias)
{
    const sj_i64 ncol = dim * (width + 1);
    for (sj_i64 c = (sj_i64)blockIdx.x * blockDim.x + threadIdx.x; c < ncol;
         c += (sj_i64)gridDim.x * blockDim.x) {
        float s = 0.0f;
#pragma unroll 8
        for (sj_i64 r = 0; r < rows; ++r)
            s += partial[r * ncol + c];
        if (c < dim * width)
            dweight[c] = s;
        else if (dbias)
            dbias[c - dim * width] = s;
    }
}
#endif

/* The 4-tap kernels in blocks of 128 threads (THREADS in src/ops/ops_conv.c),
 * four an SM: ptxas fits 128 registers with some 100-200 bytes of spills
 * where it took 161-163, 16 warps an SM instead of 12, and the reference
 * shape ran bf16 10%, f32 4% faster (bench/NOTES.md).  The 8-tap ones are
 * not bounded: nothing measured them so. */
#define CONV_BWD_KERNELS(T, sfx, VEC4, VEC8)                          \
    CONV_KERNEL(bwd, T, sfx, 4, VEC4, __launch_bounds__(128, 4))      \
    CONV_KERNEL(bwd, T, sfx, 8, VEC8, )                               \
    CONV_KERNEL(bwd, T, sfx, 8, 1, )

CONV_BWD_KERNELS(float, f32, 4, 2)
CONV_BWD_KERNELS(sj_half, f16, 4, 2)
CONV_BWD_KERNELS(sj_bf16, bf16, 4, 2)
