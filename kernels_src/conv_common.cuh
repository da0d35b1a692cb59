/* Shared by conv.cu (forward) and conv_bwd.cu (backward): causal depthwise
 * conv1d over [B, L, D] activations.
 *
 * Work split: a thread owns VEC consecutive channels, so a warp reads one
 * contiguous run of a token row (coalesced; one 8- or 16-byte access per
 * thread), and walks a chunk of consecutive tokens of one sequence keeping
 * the inputs of the previous taps in registers: every input is read once,
 * plus a halo of a few tokens per chunk.  threadIdx.x / blockIdx.x walk
 * channel vectors, threadIdx.y / blockIdx.y walk (sequence, chunk) pairs;
 * both are grid-stride loops, so any grid covers every element and the
 * host's grid only decides speed.  Token t of sequence b starts at element
 * b * (batch stride) + t * (row stride) of an activation, so a view may be
 * a window into longer sequences.  VEC > 1 kernels need D, the row and batch
 * strides and the base pointers to be multiples of VEC elements; VEC = 1
 * kernels take anything.
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
#pragma once

#include "ssmjit_types.cuh"

/* Tokens whose loads are issued together before any is used, so a thread
 * keeps several loads in flight. */
#define CONV_UNROLL 4

/* Arguments are passed as one struct by value.  Every field is 8 bytes wide,
 * so the host's copies of these structs (src/ops/ops_conv.c) have the same
 * layout. */
struct conv_fwd_args {
    const void *x;           /* [B, L, D], rows sx, sequences bsx elements apart */
    void *y;                 /* [B, L, D], rows sy, sequences bsy elements apart */
    const float *weight;     /* [D, W] */
    const float *bias;       /* [D] or NULL */
    const float *init_state; /* [B, D, W-1] or NULL (zeros) */
    float *final_state;      /* [B, D, W-1] or NULL */
    sj_i64 sx, sy;
    sj_i64 bsx, bsy;
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
    sj_i64 sx, sdy, sdx;       /* row strides */
    sj_i64 bsx, bsdy, bsdx;    /* batch strides */
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
__device__ __forceinline__ void load_window(const T *x, sj_i64 sx, sj_i64 bsx, const float *init, sj_i64 b,
                                            sj_i64 t0, const conv_pos &q,
                                            float (&win)[TAPS - 1][VEC])
{
#pragma unroll
    for (int j = 0; j < TAPS - 1; ++j) {
        const sj_i64 t = t0 - (TAPS - 1) + j;
        if (t >= 0) {
            load_vec<T, VEC>(x + b * bsx + t * sx + q.d0, win[j]);
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

/* BOUNDS: the kernel's __launch_bounds__, or nothing. */
#define CONV_KERNEL(dir, T, sfx, TAPS, VEC, BOUNDS)                                              \
    SJ_KERNEL(conv_##dir##_t##TAPS##_v##VEC##_##sfx)(                                            \
    extern "C" __global__ void BOUNDS conv_##dir##_t##TAPS##_v##VEC##_##sfx(conv_##dir##_args a) \
    {                                                                                            \
        conv_##dir<T, TAPS, VEC>(a);                                                             \
    })
