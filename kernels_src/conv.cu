/* Causal depthwise conv1d over [B, L, D] activations: forward and backward.
 *
 * Work split: a thread owns VEC consecutive channels, so a warp reads one
 * contiguous run of a token row (coalesced; one 8- or 16-byte access per
 * thread), and walks a chunk of consecutive tokens of one sequence keeping
 * the inputs of the previous taps in registers: every input is read once,
 * plus a halo of a few tokens per chunk.  threadIdx.x / blockIdx.x walk
 * channel vectors, threadIdx.y / blockIdx.y walk (sequence, chunk) pairs;
 * both are grid-stride loops, so any grid covers every element and the
 * host's grid only decides speed.  VEC > 1 kernels need D, the row strides
 * and the base pointers to be multiples of VEC elements; VEC = 1 kernels
 * take anything.
 *
 * Widths: kernels are templated on TAPS = 4 (widths 2..4) or 8 (widths
 * 5..8, and every width in the VEC = 1 fallback) with the width W a runtime
 * argument.  The filter is right-aligned in the TAPS window and taps
 * k < TAPS-W are skipped (not multiplied by zero, so non-finite inputs
 * behave as with a W-tap filter).  Windows are indexed by constants only,
 * and the module stays at 19 kernels instead of a set per width: NVRTC's
 * compile time at first use grows with the kernel count (about 0.5 s per
 * kernel of this size).
 *
 * Kernel names: conv_fwd_t<TAPS>_v<VEC>_<dtype>, conv_bwd_t<TAPS>_v<VEC>_<dtype>,
 * conv_bwd_reduce.  The host forms the names from its own choice of TAPS and
 * VEC, so a choice not instantiated here fails the kernel lookup instead of
 * running with another layout.
 */
#include "ssmjit_types.cuh"

/* Tokens whose loads are issued together before any is used, so a thread
 * keeps several loads in flight. */
#define CONV_UNROLL 4

/* Arguments are passed as one struct by value.  Every field is 8 bytes wide,
 * so the host's copies of these structs (src/ops_conv.c) have the same
 * layout. */
struct conv_fwd_args {
    const void *x;           /* [B, L, D], rows sx elements apart */
    void *y;                 /* [B, L, D], rows sy elements apart */
    const float *weight;     /* [D, W] */
    const float *bias;       /* [D] or NULL */
    const float *init_state; /* [B, D, W-1] or NULL (zeros) */
    float *final_state;      /* [B, D, W-1] or NULL */
    sj_i64 sx, sy;
    sj_i64 batch, seqlen, dim, width;
    sj_i64 chunk;            /* tokens per (sequence, chunk) pair, > 0 */
    sj_i64 silu;
};

struct conv_bwd_args {
    const void *x;
    const void *dy;
    void *dx;
    const float *weight;
    const float *bias;
    const float *init_state;
    const float *dfinal_state; /* [B, D, W-1] or NULL */
    float *dinit_state;        /* [B, D, W-1] or NULL */
    float *partial;            /* [walkers, D*W + D]: each walker's dweight, dbias sums */
    sj_i64 sx, sdy, sdx;
    sj_i64 batch, seqlen, dim, width;
    sj_i64 chunk;
    sj_i64 silu;
};

template <int BYTES> struct conv_raw;
template <> struct conv_raw<16> { typedef uint4 type; };
template <> struct conv_raw<8> { typedef uint2 type; };
template <> struct conv_raw<4> { typedef unsigned type; };
template <> struct conv_raw<2> { typedef unsigned short type; };

/* VEC elements as one machine word, so they move in one access. */
template <typename T, int VEC> union conv_pack {
    typename conv_raw<VEC * sizeof(T)>::type raw;
    T e[VEC];
};

template <typename T, int VEC> __device__ __forceinline__ void load_vec(const T *p, float (&v)[VEC])
{
    conv_pack<T, VEC> pk;
    pk.raw = *reinterpret_cast<const decltype(pk.raw) *>(p);
#pragma unroll
    for (int i = 0; i < VEC; ++i)
        v[i] = sj_to_float(pk.e[i]);
}

template <typename T, int VEC> __device__ __forceinline__ void store_vec(T *p, const float (&v)[VEC])
{
    conv_pack<T, VEC> pk;
#pragma unroll
    for (int i = 0; i < VEC; ++i)
        pk.e[i] = sj_from_float<T>(v[i]);
    *reinterpret_cast<decltype(pk.raw) *>(p) = pk.raw;
}

/* A thread's channels and the shape it works in. */
struct conv_pos {
    sj_i64 d0; /* first of the thread's VEC channels */
    sj_i64 dim, seqlen, width;

    /* Element j of channel d0+i of sequence b in a [B, D, W-1] state. */
    __device__ sj_i64 state(sj_i64 b, int i, sj_i64 j) const
    {
        return (b * dim + d0 + i) * (width - 1) + j;
    }
};

/* The filter right-aligned in TAPS taps: w[k] is weight[d, k - off] for
 * k >= off = TAPS - W; smaller k are skipped. */
template <int TAPS, int VEC> struct conv_filter {
    float w[TAPS][VEC];
    float bias[VEC];
    int off;

    __device__ __forceinline__ void load(const float *weight, const float *b, const conv_pos &q)
    {
        off = TAPS - (int)q.width;
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
#pragma unroll
            for (int k = 0; k < TAPS; ++k)
                w[k][i] = k >= off ? weight[(q.d0 + i) * q.width + k - off] : 0.0f;
            bias[i] = b ? b[q.d0 + i] : 0.0f;
        }
    }

    /* Pre-activation of channel i at the token whose input is cur, with win
     * holding the TAPS-1 inputs before it.  The decode step
     * (conv_update.cu) sums in the same order, so prefill and decode agree
     * bit for bit. */
    __device__ __forceinline__ float dot(const float (&win)[TAPS - 1][VEC], const float (&cur)[VEC],
                                         int i) const
    {
        float acc = bias[i];
#pragma unroll
        for (int k = 0; k < TAPS - 1; ++k)
            if (k >= off)
                acc = fmaf(w[k][i], win[k][i], acc);
        return fmaf(w[TAPS - 1][i], cur[i], acc);
    }
};

/* The TAPS-1 inputs before token t0 of sequence b: the window a chunk starts
 * with.  Times -(W-1) .. -1 come from the initial state (zeros without one);
 * earlier ones only feed skipped taps and read as zero. */
template <typename T, int TAPS, int VEC>
__device__ __forceinline__ void load_window(const T *x, sj_i64 sx, const float *init, sj_i64 b,
                                            sj_i64 t0, const conv_pos &q,
                                            float (&win)[TAPS - 1][VEC])
{
#pragma unroll
    for (int j = 0; j < TAPS - 1; ++j) {
        const sj_i64 t = t0 - (TAPS - 1) + j;
        if (t >= 0) {
            load_vec<T, VEC>(x + (b * q.seqlen + t) * sx + q.d0, win[j]);
        } else {
            const bool have = init && t >= -(q.width - 1);
#pragma unroll
            for (int i = 0; i < VEC; ++i)
                win[j][i] = have ? init[q.state(b, i, t + q.width - 1)] : 0.0f;
        }
    }
}

/* Drops the oldest entry of a window and appends v. */
template <int N, int VEC>
__device__ __forceinline__ void shift_in(float (&win)[N][VEC], const float (&v)[VEC])
{
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
#pragma unroll
        for (int k = 0; k < N - 1; ++k)
            win[k][i] = win[k + 1][i];
        win[N - 1][i] = v[i];
    }
}

/* The grid-stride walk over channel vectors (x) and pairs (y). */
struct conv_walk {
    sj_i64 nvec, nchunk, pairs, chunk, seqlen;

    __device__ conv_walk(sj_i64 batch, sj_i64 seqlen_, sj_i64 dim, sj_i64 chunk_, int vec)
        : nvec(dim / vec),
          /* L = 0 still has one empty chunk per sequence: it copies the
           * initial state to the final state, and its gradient back. */
          nchunk(seqlen_ > 0 ? (seqlen_ + chunk_ - 1) / chunk_ : 1), pairs(batch * nchunk),
          chunk(chunk_), seqlen(seqlen_)
    {
    }

    __device__ sj_i64 vec_first() const { return (sj_i64)blockIdx.x * blockDim.x + threadIdx.x; }
    __device__ sj_i64 vec_step() const { return (sj_i64)gridDim.x * blockDim.x; }
    __device__ sj_i64 walker() const { return (sj_i64)blockIdx.y * blockDim.y + threadIdx.y; }
    __device__ sj_i64 walkers() const { return (sj_i64)gridDim.y * blockDim.y; }
    __device__ sj_i64 seq(sj_i64 p) const { return p / nchunk; }
    __device__ sj_i64 first(sj_i64 p) const { return (p % nchunk) * chunk; }
    __device__ sj_i64 end(sj_i64 p) const
    {
        const sj_i64 e = first(p) + chunk;
        return e < seqlen ? e : seqlen;
    }
};

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
            const sj_i64 row = b * q.seqlen + t;
#pragma unroll
            for (int u = 0; u < N; ++u) {
                load_vec<T, VEC>(static_cast<const T *>(a.x) + (row + u) * a.sx + q.d0, cx[u]);
                load_vec<T, VEC>(static_cast<const T *>(a.dy) + (row + u) * a.sdy + q.d0, cdy[u]);
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
            store_vec<T, VEC>(static_cast<T *>(a.dx) + (b * L + s) * a.sdx + q.d0, o);
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
        load_window<T, TAPS, VEC>(static_cast<const T *>(a.x), a.sx, a.init_state, b, t0, q, win);
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

#define CONV_KERNEL(dir, T, sfx, TAPS, VEC)                                               \
    extern "C" __global__ void conv_##dir##_t##TAPS##_v##VEC##_##sfx(conv_##dir##_args a) \
    {                                                                                     \
        conv_##dir<T, TAPS, VEC>(a);                                                      \
    }

/* Per dtype: the aligned kernels (the forward moves 16 bytes per access
 * where its registers allow; the backward, which holds four windows, 8),
 * and one element-wise fallback per direction for anything unaligned, at
 * 8 taps so that it serves every width.  src/ops_conv.c picks among exactly
 * these. */
#define CONV_KERNELS(T, sfx, FVEC4, FVEC8, BVEC4, BVEC8) \
    CONV_KERNEL(fwd, T, sfx, 4, FVEC4)                    \
    CONV_KERNEL(fwd, T, sfx, 8, FVEC8)                    \
    CONV_KERNEL(bwd, T, sfx, 4, BVEC4)                    \
    CONV_KERNEL(bwd, T, sfx, 8, BVEC8)                    \
    CONV_KERNEL(fwd, T, sfx, 8, 1)                        \
    CONV_KERNEL(bwd, T, sfx, 8, 1)

CONV_KERNELS(float, f32, 4, 4, 4, 2)
CONV_KERNELS(sj_half, f16, 8, 4, 4, 2)
CONV_KERNELS(sj_bf16, bf16, 8, 4, 4, 2)
