/* The decode step's fused kernels (module "decode"), compiled per model:
 * its sizes come in as defines (src/model/model_decode.c), so every loop
 * has a constant trip count and no size is checked at run time.  One
 * token per sequence; each layer is three kernels:
 *   decode_in:  RMSNorm of x plus the residual, in_proj, then for the x
 *               half the conv state's step and SiLU (xc) and each block's
 *               part of x_proj's sums, the z half as it is (z);
 *   decode_mix: x_proj's parts summed (dt_low, B, C), dt_proj, softplus,
 *               the state update, D and the z gate (y) (decode_mix1
 *               where a block takes one sequence);
 *   decode_out: out_proj of y (the next layer's x);
 * and decode_head is the final norm with the LM head (logits).  At more
 * sequences than the products stage at once, the hybrid step splits a
 * layer into four kernels that read each weight once for the whole
 * batch: decode_norm, decode_tcx (in_proj on tensor cores with
 * decode_in's work after its product), decode_mix, and out_proj
 * (decode_tcout); five where decode_tcx cannot run: in_proj
 * (decode_tcin, or cuBLAS) and decode_convx in its place.  x_proj
 * has no kernel of its own: its rows are few (dt_rank + 2 d_state) and
 * each needs all of xc, so a kernel of its own was a whole step of the
 * chain for a few hundred kilobytes; each block of decode_in multiplies
 * its channels' columns instead, and decode_mix adds the blocks' parts in
 * a fixed order (the same sums every run).
 *
 * A matrix-vector product gives each warp one output row at a time: its
 * lanes read the row in 16-byte pieces, each weight once for up to
 * dec_batch() sequences, multiply by those sequences' activations (staged
 * in shared memory as floats) and meet through a butterfly of shuffles.
 * The first row's pieces are loaded before the activations are staged, so
 * the weights' latency overlaps the staging.  Values are rounded where the
 * unfused step rounds them (each product's output to the model's dtype,
 * the residual to its own), so the two paths differ only in the order of
 * the products' sums.
 */
#include "chain.cuh"
#include "copy_async.cuh"
#include "mma.cuh"
#include "row_argmax.cuh"
#include "ssmjit_types.cuh"

/* The engine compiles this module only with a model's sizes
 * (tools/embed_kernels.py reads this line). */
#define SJ_MODULE_SPECIALISED

#ifndef SJ_UNIT_ALL
#if !defined(SJ_DEC_D_MODEL) || !defined(SJ_DEC_D_INNER) || !defined(SJ_DEC_DT_RANK) || \
    !defined(SJ_DEC_D_STATE) || !defined(SJ_DEC_D_CONV) || !defined(SJ_DEC_VOCAB) || !defined(SJ_DEC_RES_F32) || \
    !defined(SJ_DEC_TC)
#error "the decode module is compiled with a model's sizes as defines (src/model/model_decode.c)"
#endif

constexpr int DM = SJ_DEC_D_MODEL, DI = SJ_DEC_D_INNER, RANK = SJ_DEC_DT_RANK, NS = SJ_DEC_D_STATE,
              WIDTH = SJ_DEC_D_CONV;
constexpr sj_i64 VOCAB = SJ_DEC_VOCAB;
constexpr int DBL = RANK + 2 * NS;  /* x_proj's rows: dt_low, B, C */
constexpr int DBLP = (DBL + 3) & ~3; /* a part's row, in float4s */

/* Passed by value to every kernel of the module, each using its part;
 * every field 8 bytes, mirrored in src/model/model_decode.c. */
struct sj_decode_args {
    const void *x;        /* [batch, DM]: the layer's input (the final norm's for decode_head); with ids
                             (layer 0) the embedding table [VOCAB, DM] */
    const int *ids;       /* [batch] at layer 0: the tokens whose embedding rows are x, else NULL */
    const void *res_in;   /* [batch, DM] residual stream, NULL at layer 0 */
    void *res_out;        /* [batch, DM]: x + res_in, the next layer's residual */
    const float *norm_w;  /* [DM] */
    const void *w_in;     /* [2 DI, DM] in_proj; [VOCAB, DM] the LM head for decode_head */
    const float *conv_w;  /* [DI, WIDTH] */
    const float *conv_b;  /* [DI] or NULL */
    float *conv_state;    /* [batch, DI, WIDTH], advanced in place */
    void *xc;             /* [batch, DI] */
    void *z;              /* [batch, DI] */
    const void *w_x;      /* [DBL, DI] x_proj */
    float *xpart;         /* [xparts, batch, DBLP]: decode_in's blocks' parts of x_proj */
    const void *w_dt;     /* [DI, RANK] dt_proj */
    const float *dt_bias; /* [DI] */
    const float *A_log;   /* [DI, NS]: A = -exp(A_log), taken by the mix kernels (no kernel a step for it) */
    const float *Dv;      /* [DI] */
    float *ssm_state;     /* [batch, DI, NS], advanced in place */
    void *y;              /* [batch, DI] */
    const void *w_out;    /* [DM, DI] out_proj */
    void *out;            /* [batch, DM] the next layer's x; [batch, VOCAB] logits for decode_head */
    int *next_ids;        /* [batch]: decode_head's argmax, or NULL for none */
    sj_argmax_part *pick; /* [gridDim.x of decode_head, batch]: its blocks' argmax */
    unsigned *picked;     /* decode_head's blocks done with pick, zeroed by decode_in */
    sj_i64 batch;
    float eps;            /* RMSNorm's */
    int xparts;           /* decode_in's blocks that have x rows (the first ones) */
};
static_assert(sizeof(sj_decode_args) == 26 * 8, "host mirror in src/model/model_decode.c");

/* The host launches by its copies of these and of MIX_THREADS (src/model/
 * model.h, SJ_DECODE_*), which tests/test_kernel_sizes.c holds equal. */
constexpr int DEC_WARPS = 8; /* a block's warps */
constexpr int DEC_THREADS = DEC_WARPS * 32;
constexpr int DEC_BLOCKS_PER_SM = 2; /* the products' occupancy */
constexpr int DEC_STAGE_BYTES = 40960; /* the shared memory a block stages activations in */

/* Sequences whose activations (K floats each) a block stages at once, in
 * at most 40 KiB of shared memory: two (four held the registers of eight
 * accumulators' reads, and the blocks an SM halved). */
__host__ __device__ constexpr int dec_batch(int K)
{
    return K * 4 * 2 <= DEC_STAGE_BYTES ? 2 : 1;
}
static_assert(DM * 4 <= DEC_STAGE_BYTES && DI * 4 <= DEC_STAGE_BYTES, "the decode kernels stage one sequence");

template <bool F32, typename T> struct dec_res_of {
    typedef T type;
};
template <typename T> struct dec_res_of<true, T> {
    typedef float type;
};

template <typename T> __device__ __forceinline__ float dec_round(float v) { return sj_to_float(sj_from_float<T>(v)); }

/* One warp's row of a [rows, K] matrix of T, in 16-byte pieces where rows
 * are whole pieces (the host checks that matrices start 16-byte aligned),
 * else element by element.  load() fetches it into registers, dot() takes
 * it times BT staged activation rows: acc[b] in every lane.
 *
 * Lane l takes pieces l, l + 32, ...: the activations of a piece of E
 * elements are staged as E / 4 float4s, each in its own plane of the
 * row (slot()), so that the warp's float4 reads of one plane are 512
 * consecutive bytes, free of bank conflicts (a piece's 8 floats side by
 * side put 4 lanes on each bank). */
template <typename T, int K, int AHEAD = 1> struct dec_row {
    static constexpr int E = 16 / (int)sizeof(T);
    static constexpr bool VEC = K % E == 0;
    static constexpr int PIECES = VEC ? K / E : K;          /* 16-byte pieces, or elements */
    static constexpr int PER_LANE = (PIECES + 31) / 32;
    static constexpr int HELD = PER_LANE < 8 ? PER_LANE : 8; /* pieces loaded ahead of the products */
    /* AHEAD 2: the row after the next one held too (rows a lane holds
     * whole only), twice the bytes in flight a warp */
    static_assert(AHEAD == 1 || (AHEAD == 2 && PER_LANE == HELD), "two rows ahead only where a lane holds a row");
    uint4 held[HELD], ahead[AHEAD > 1 ? HELD : 1];
    const T *row;

    /* Where the float4 of piece p's elements 4 h .. 4 h + 3 is staged
     * (VEC rows). */
    static __device__ __forceinline__ int piece_slot(int p, int h) { return h * (PIECES * 4) + p * 4; }

    /* Where element k of a sequence's activations is staged. */
    static __device__ __forceinline__ int slot(int k)
    {
        if (!VEC)
            return k;
        const int e = k % E;
        return piece_slot(k / E, e / 4) + e % 4;
    }

    /* Piece p of this row. */
    __device__ __forceinline__ uint4 fetch(int p) const { return piece_of(row, p); }

    /* Row j into held, and with AHEAD 2 row `then` (the warp's next, or
     * nullptr) into ahead. */
    __device__ __forceinline__ void load(const T *w, sj_i64 j, const T *then = nullptr)
    {
        row = w + j * K;
        const int lane = threadIdx.x & 31;
#pragma unroll
        for (int i = 0; i < HELD; ++i)
            if (lane + 32 * i < PIECES) {
                held[i] = fetch(lane + 32 * i);
                if (AHEAD > 1 && then)
                    ahead[i] = piece_of(then, lane + 32 * i);
            }
    }

    /* Piece p of row r: 16 bytes, or one element in the low bits. */
    static __device__ __forceinline__ uint4 piece_of(const T *r, int p)
    {
        return VEC ? ((const uint4 *)r)[p] : make_uint4(sj_bits(r[p]), 0u, 0u, 0u);
    }

    /* the first NB of the BT staged sequences; next is the warp's next
     * row and after (AHEAD 2) the one after it, each nullptr past the
     * last */
    template <int BT, int NB>
    __device__ __forceinline__ void dot(const float (&act)[BT][K], float (&acc)[NB], const T *next,
                                        const T *after = nullptr)
    {
        const int lane = threadIdx.x & 31;
#pragma unroll
        for (int b = 0; b < NB; ++b)
            acc[b] = 0.0f;
#pragma unroll
        for (int i = 0; i < PER_LANE; ++i) {
            const int p = lane + 32 * i;
            if (p < PIECES) {
                const uint4 v = i < HELD ? held[i] : fetch(p);
                if (VEC) {
#pragma unroll
                    for (int h = 0; h < E / 4; ++h)
#pragma unroll
                        for (int b = 0; b < NB; ++b) {
                            const float4 x = *(const float4 *)&act[b][piece_slot(p, h)];
                            acc[b] = fmaf(sj_lane<T>(v, 4 * h), x.x, acc[b]);
                            acc[b] = fmaf(sj_lane<T>(v, 4 * h + 1), x.y, acc[b]);
                            acc[b] = fmaf(sj_lane<T>(v, 4 * h + 2), x.z, acc[b]);
                            acc[b] = fmaf(sj_lane<T>(v, 4 * h + 3), x.w, acc[b]);
                        }
                } else {
                    const float w = sj_lane<T>(v, 0);
#pragma unroll
                    for (int b = 0; b < NB; ++b)
                        acc[b] = fmaf(w, act[b][p], acc[b]);
                }
                /* the next row's piece into the register just freed (from
                 * ahead, which asks for the row after it, with AHEAD 2) */
                if (AHEAD > 1) {
                    if (next)
                        held[i] = ahead[i];
                    if (after)
                        ahead[i] = piece_of(after, p);
                } else if (i < HELD && next) {
                    held[i] = piece_of(next, p);
                }
            }
        }
        if (next)
            row = next;
#pragma unroll
        for (int m = 16; m > 0; m >>= 1)
#pragma unroll
            for (int b = 0; b < NB; ++b)
                acc[b] += __shfl_xor_sync(0xffffffffu, acc[b], m);
    }
};

/* acc[lane] for lane < NB, without dynamic indexing of registers. */
template <int NB> __device__ __forceinline__ float dec_pick(const float (&acc)[NB], int lane)
{
    float v = acc[0];
#pragma unroll
    for (int b = 1; b < NB; ++b)
        if (lane == b)
            v = acc[b];
    return v;
}

/* The step's kernels chain (chain.cuh; model_decode.c launches each
 * kernel of the step chained to the one before): a kernel reads and
 * writes activations and states only after sj_chain_wait(), and loads
 * only weights (and its own layer's states) before.  Each kernel releases
 * before it waits (3809 -> 3990 tokens/s at batch 1, bench/NOTES.md's
 * decode round 4).  A layer's states may be read before the wait because
 * only that layer's kernel writes them, and the previous step's has
 * finished: a step's first kernel (layer 0's, which reads the embedding
 * rows of the step's ids) is launched plainly, after all that came
 * before. */

/* Stages rows b0 .. b0 + nb - 1 of src [batch, K] (T) as floats, by a
 * block of DEC_THREADS, in 16-byte pieces where rows are whole pieces
 * and src is 16-byte aligned (every row then is), else element by
 * element.  Each thread asks for all its loads of a sequence (or a batch
 * of 8 elements) before it uses the first: a loop that stored each value
 * as it came waited a round trip to L2 for each (bench/NOTES.md's decode
 * round 13: 6 of them in the 130m shape's out kernel at batch 1, 16 in
 * the 1.4b shape's). */
template <typename T, int K, int BT>
__device__ __forceinline__ void dec_stage(float (&act)[BT][K], const void *src, sj_i64 b0, int nb)
{
    typedef dec_row<T, K> R;
    constexpr int PER = (R::PIECES + DEC_THREADS - 1) / DEC_THREADS, BATCH = 8;
    const bool vec = R::VEC && ((unsigned long long)src & 15) == 0;
    for (int b = 0; b < nb; ++b) {
        const T *s = (const T *)src + (b0 + b) * K;
        if (vec) {
            uint4 v[PER];
#pragma unroll
            for (int i = 0; i < PER; ++i) {
                const int p = threadIdx.x + DEC_THREADS * i;
                if (p < R::PIECES)
                    v[i] = ((const uint4 *)s)[p];
            }
#pragma unroll
            for (int i = 0; i < PER; ++i) {
                const int p = threadIdx.x + DEC_THREADS * i;
                if (p < R::PIECES)
#pragma unroll
                    for (int h = 0; h < R::E / 4; ++h)
                        *(float4 *)&act[b][R::piece_slot(p, h)] =
                            make_float4(sj_lane<T>(v[i], 4 * h), sj_lane<T>(v[i], 4 * h + 1),
                                        sj_lane<T>(v[i], 4 * h + 2), sj_lane<T>(v[i], 4 * h + 3));
            }
            continue;
        }
        for (int k0 = 0; k0 < K; k0 += BATCH * DEC_THREADS) {
            T v[BATCH];
#pragma unroll
            for (int i = 0; i < BATCH; ++i) {
                const int k = k0 + threadIdx.x + DEC_THREADS * i;
                if (k < K)
                    v[i] = s[k];
            }
#pragma unroll
            for (int i = 0; i < BATCH; ++i) {
                const int k = k0 + threadIdx.x + DEC_THREADS * i;
                if (k < K)
                    act[b][R::slot(k)] = sj_to_float(v[i]);
            }
        }
    }
}

/* Row r of w [rows, K], or nullptr past the last (a warp's next rows). */
template <typename T, int K> __device__ __forceinline__ const T *dec_row_at(const void *w, sj_i64 rows, sj_i64 r)
{
    return r < rows ? (const T *)w + r * K : nullptr;
}

/* A warp's rows (first, first + warps, ...) for NB staged sequences from
 * b0, each row's pieces loaded while the one before is multiplied; r
 * holds row `first` unless `reload`.  epilogue(j, b0, NB, v) runs in
 * every lane of the warp, v being row j times sequence b0 + lane in lanes
 * below NB. */
template <int NB, typename T, int K, int AHEAD, int BT, typename Epilogue>
__device__ __forceinline__ void dec_rows(dec_row<T, K, AHEAD> r, const float (&act)[BT][K], const void *w,
                                         sj_i64 rows, sj_i64 first, sj_i64 b0, bool reload, Epilogue &epilogue)
{
    const int lane = threadIdx.x & 31;
    const sj_i64 warps = (sj_i64)gridDim.x * DEC_WARPS;
    /* the warp's row j + k warps */
    const auto later = [&](sj_i64 j, int k) { return dec_row_at<T, K>(w, rows, j + k * warps); };
    if (reload && first < rows)
        r.load((const T *)w, first, later(first, 1));
#pragma unroll 1
    for (sj_i64 j = first; j < rows; j += warps) {
        float acc[NB];
        r.template dot<BT, NB>(act, acc, later(j, 1), AHEAD > 1 ? later(j, 2) : nullptr);
        epilogue(j, b0, NB, dec_pick(acc, lane));
    }
}

/* An epilogue that takes each sequence's value in its own lane. */
template <typename F> struct dec_per_lane {
    F f;
    __device__ __forceinline__ void operator()(sj_i64 j, sj_i64 b0, int nb, float v)
    {
        const int lane = threadIdx.x & 31;
        if (lane < nb)
            f(j, b0 + lane, v);
    }
};
template <typename F> __device__ __forceinline__ dec_per_lane<F> dec_each(F f) { return dec_per_lane<F>{f}; }

struct dec_no_finish {
    __device__ __forceinline__ void operator()(sj_i64, int) {}
};

/* The products of rows [0, rows) of w with the staged sequences, each row
 * given to epilogue (dec_rows); the products take only the sequences
 * there are (one at batch 1).  finish(b0, nb) runs in the whole block
 * after each pass over the rows. */
template <typename T, int K, int BT, int AHEAD = 1, typename Stage, typename Epilogue,
          typename Finish = dec_no_finish>
__device__ __forceinline__ void dec_matvec(const void *w, sj_i64 rows, sj_i64 batch, Stage stage, Epilogue epilogue,
                                           Finish finish = Finish())
{
    __shared__ __align__(16) float act[BT][K];
    const sj_i64 first = (sj_i64)blockIdx.x * DEC_WARPS + (threadIdx.x >> 5);
    const sj_i64 second = first + (sj_i64)gridDim.x * DEC_WARPS;
    dec_row<T, K, AHEAD> r;
    if (first < rows)
        r.load((const T *)w, first, dec_row_at<T, K>(w, rows, second));
    sj_chain_enter();
    for (sj_i64 b0 = 0; b0 < batch; b0 += BT) {
        const int nb = (int)(batch - b0 < BT ? batch - b0 : BT);
        if (b0)
            __syncthreads(); /* every warp is done with the last sequences */
        stage(act, b0, nb);
        __syncthreads();
        static_assert(BT <= 2, "one product for each count of sequences staged");
        if (nb == BT)
            dec_rows<BT>(r, act, w, rows, first, b0, b0 != 0, epilogue);
        else
            dec_rows<1>(r, act, w, rows, first, b0, b0 != 0, epilogue);
        finish(b0, nb);
    }
}

/* The norm's weights, copied to shared memory before the wait: they are
 * a layer's first read, far back in the step's stream of weights, so
 * their latency is DRAM's; in registers they held NORM_PER of them
 * through the whole kernel, which the 1.4b shape's decode_in spilled.
 * A thread copies the elements it applies in dec_stage_norm
 * (threadIdx.x + DEC_THREADS n), so its own wait for them is enough. */
constexpr int NORM_PER = (DM + DEC_THREADS - 1) / DEC_THREADS;

__device__ __forceinline__ const float *dec_copy_norm(const float *w)
{
    __shared__ float snw[DM];
    for (int k = threadIdx.x; k < DM; k += DEC_THREADS)
        sj_copy4(snw + k, w + k, 4);
    return snw;
}

/* Stages the RMSNorm of x + res_in for the sequences at b0 (the residual
 * rounded to its dtype, the output to the model's, as the norm kernel
 * does), nw from dec_copy_norm; writes the residual out where write_res
 * (one block of those that stage the same sequences).  SEQS sequences'
 * loads are asked for together (decode_norm: all of a block's). */
template <typename T, int SEQS = 1>
__device__ __forceinline__ void dec_stage_norm(float (&act)[dec_batch(DM)][DM], const sj_decode_args &a, sj_i64 b0,
                                               int nb, const float *nw, bool write_res)
{
    typedef typename dec_res_of<SJ_DEC_RES_F32 != 0, T>::type R;
    constexpr int BT = dec_batch(DM);
    static_assert(BT % SEQS == 0, "whole groups of sequences");
    __shared__ float part[BT][DEC_WARPS], rstd[BT];
    float ss[BT];
#pragma unroll
    for (int b = 0; b < BT; ++b)
        ss[b] = 0.0f;
    /* a batch's loads all asked for before the first is used (one round
     * trip, where each element took one: dec_stage); batches of 4
     * elements a thread, as 8 spilled at the 1.4b shape (decode_in, one
     * sequence at a time).  Each sequence's sum of squares is in element
     * order whatever SEQS. */
    constexpr int NORM_BATCH = NORM_PER < 4 ? NORM_PER : 4;
#pragma unroll
    for (int s0 = 0; s0 < BT; s0 += SEQS) {
        /* x's rows: at layer 0 the tokens' rows of the embedding table
         * (ids clamped as the embedding op clamps them) */
        const T *xrow[SEQS];
#pragma unroll
        for (int s = 0; s < SEQS; ++s) {
            sj_i64 row = b0 + s0 + s;
            if (a.ids && s0 + s < nb)
                row = sj_token_row(a.ids[row], VOCAB);
            xrow[s] = (const T *)a.x + row * DM;
        }
#pragma unroll
        for (int n0 = 0; n0 < NORM_PER; n0 += NORM_BATCH) {
            T xv[SEQS][NORM_BATCH];
            R rv[SEQS][NORM_BATCH];
#pragma unroll
            for (int s = 0; s < SEQS; ++s)
#pragma unroll
                for (int n = 0; n < NORM_BATCH; ++n) {
                    const int b = s0 + s, k = threadIdx.x + DEC_THREADS * (n0 + n);
                    if (b < nb && k < DM) {
                        xv[s][n] = xrow[s][k];
                        if (a.res_in)
                            rv[s][n] = ((const R *)a.res_in)[(b0 + b) * DM + k];
                    }
                }
#pragma unroll
            for (int s = 0; s < SEQS; ++s)
#pragma unroll
                for (int n = 0; n < NORM_BATCH; ++n) {
                    const int b = s0 + s, k = threadIdx.x + DEC_THREADS * (n0 + n);
                    if (b < nb && k < DM) {
                        float h = sj_to_float(xv[s][n]);
                        if (a.res_in)
                            h = dec_round<R>(h + sj_to_float(rv[s][n]));
                        act[b][dec_row<T, DM>::slot(k)] = h;
                        ss[b] = fmaf(h, h, ss[b]);
                    }
                }
        }
    }
    /* The residual leaves after every sequence's loads: written as each
     * was summed, its stores kept the next sequence's loads behind them
     * (they may alias), a round trip to memory a sequence.  act holds it
     * already rounded to R, so it converts back to the same value. */
    if (write_res) {
#pragma unroll
        for (int b = 0; b < BT; ++b)
#pragma unroll
            for (int n = 0; n < NORM_PER; ++n) {
                const int k = threadIdx.x + DEC_THREADS * n;
                if (b < nb && k < DM)
                    ((R *)a.res_out)[(b0 + b) * DM + k] = sj_from_float<R>(act[b][dec_row<T, DM>::slot(k)]);
            }
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int b = 0; b < BT; ++b) {
#pragma unroll
        for (int m = 16; m > 0; m >>= 1)
            ss[b] += __shfl_xor_sync(0xffffffffu, ss[b], m);
        if (lane == 0)
            part[b][warp] = ss[b];
    }
    __syncthreads();
    if (threadIdx.x < BT) {
        float s = 0.0f;
#pragma unroll
        for (int w = 0; w < DEC_WARPS; ++w)
            s += part[threadIdx.x][w];
        rstd[threadIdx.x] = rsqrtf(s / (float)DM + a.eps);
    }
    __syncthreads();
    sj_copy_wait(); /* nw */
#pragma unroll
    for (int n = 0; n < NORM_PER; ++n) {
        const int k = threadIdx.x + DEC_THREADS * n;
#pragma unroll
        for (int b = 0; b < BT; ++b)
            if (b < nb && k < DM)
                act[b][dec_row<T, DM>::slot(k)] = dec_round<T>(act[b][dec_row<T, DM>::slot(k)] * rstd[b] * nw[k]);
    }
}

/* x_proj's rows a lane of decode_in keeps sums of: lane, lane + 32, ... */
constexpr int XP_LANE = (DBL + 31) / 32;

/* One channel's conv step for one sequence, summed in the order of
 * conv_update.cu: window s (the state shifted by one, the new input
 * last) times the weights w(k) plus bias, s written back as the state;
 * returns the SiLU rounded to the model's dtype (xc).  The weights come
 * from a function so that a caller may load them as the sum goes. */
template <typename T, typename Weight>
__device__ __forceinline__ float dec_conv_step(float *st, const float (&s)[WIDTH], Weight w, float bias)
{
    float acc = bias;
#pragma unroll
    for (int k = 0; k < WIDTH; ++k) {
        acc = fmaf(w(k), s[k], acc);
        st[k] = s[k];
    }
    return dec_round<T>(sj_silu(acc));
}

template <typename T> __device__ __forceinline__ void decode_in(const sj_decode_args &a)
{
    constexpr int BT = dec_batch(DM);
    __shared__ __align__(16) float wpart[DEC_WARPS][BT][DBLP];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const sj_i64 first = (sj_i64)blockIdx.x * DEC_WARPS + warp;
    const T *w_x = (const T *)a.w_x;
    /* Ahead of the wait (only this kernel touches a layer's conv state):
     * the norm's weights, the first row's conv weights and x_proj column,
     * and the first sequences' conv states.  Each x row's epilogue then
     * loads the same for the warp's next x row (held_j, for the sequences
     * of pass held_pass), so that their round trip passes during that row's
     * product rather than after it. */
    const sj_i64 warps = (sj_i64)gridDim.x * DEC_WARPS;
    float cw[WIDTH], cs[WIDTH], cb = 0.0f, wx[XP_LANE];
    int held_j = -1, held_pass = 0; /* DI and the passes fit an int */
    const auto hold = [&](sj_i64 j, sj_i64 b0, int nb) {
        held_j = (int)j;
        held_pass = (int)(b0 / BT);
#pragma unroll
        for (int k = 0; k < WIDTH; ++k) {
            cw[k] = a.conv_w[j * WIDTH + k];
            cs[k] = lane < nb ? a.conv_state[((b0 + lane) * DI + j) * WIDTH + k] : 0.0f;
        }
        cb = a.conv_b ? a.conv_b[j] : 0.0f;
#pragma unroll
        for (int i = 0; i < XP_LANE; ++i)
            wx[i] = lane + 32 * i < DBL ? sj_to_float(w_x[(lane + 32 * i) * (sj_i64)DI + j]) : 0.0f;
    };
    const float *nw = dec_copy_norm(a.norm_w);
    if (first < DI)
        hold(first, 0, (int)min(a.batch, (sj_i64)BT));
    float xp[BT][XP_LANE]; /* this warp's part of x_proj for the staged sequences */
#pragma unroll
    for (int b = 0; b < BT; ++b)
#pragma unroll
        for (int i = 0; i < XP_LANE; ++i)
            xp[b][i] = 0.0f;
    dec_matvec<T, DM, BT>(
        a.w_in, 2 * (sj_i64)DI, a.batch,
        [&](float (&act)[BT][DM], sj_i64 b0, int nb) {
            if (a.picked && b0 == 0 && blockIdx.x == 0 && threadIdx.x == 0)
                *a.picked = 0; /* the last step's head is done: this is after the wait */
            dec_stage_norm<T>(act, a, b0, nb, nw, blockIdx.x == 0);
        },
        [&](sj_i64 j, sj_i64 b0, int nb, float v) {
            if (j >= DI) {
                if (lane < nb)
                    ((T *)a.z)[(b0 + lane) * DI + j - DI] = sj_from_float<T>(v);
                return;
            }
            const bool held = j == held_j;
            float x = 0.0f;
            if (lane < nb) {
                const sj_i64 b = b0 + lane;
                float *st = a.conv_state + (b * DI + j) * WIDTH;
                float s[WIDTH];
#pragma unroll
                for (int k = 0; k + 1 < WIDTH; ++k)
                    s[k] = held && b0 / BT == held_pass ? cs[k + 1] : st[k + 1];
                s[WIDTH - 1] = dec_round<T>(v);
                x = dec_conv_step<T>(
                    st, s, [&](int k) { return held ? cw[k] : a.conv_w[j * WIDTH + k]; },
                    held ? cb : a.conv_b ? a.conv_b[j] : 0.0f);
                ((T *)a.xc)[b * DI + j] = sj_from_float<T>(x);
            }
            /* channel j's column of x_proj times each sequence's xc */
#pragma unroll
            for (int i = 0; i < XP_LANE; ++i) {
                const float w = held                 ? wx[i]
                                : lane + 32 * i < DBL ? sj_to_float(w_x[(lane + 32 * i) * (sj_i64)DI + j])
                                                      : 0.0f;
#pragma unroll
                for (int b = 0; b < BT; ++b)
                    if (b < nb)
                        xp[b][i] = fmaf(w, __shfl_sync(0xffffffffu, x, b), xp[b][i]);
            }
            if (j + warps < DI)
                hold(j + warps, b0, nb);
        },
        [&](sj_i64 b0, int nb) {
            /* the block's part: its warps' sums added in warp order */
            if (blockIdx.x >= a.xparts)
                return;
#pragma unroll
            for (int b = 0; b < BT; ++b)
#pragma unroll
                for (int i = 0; i < XP_LANE; ++i) {
                    if (lane + 32 * i < DBLP)
                        wpart[warp][b][lane + 32 * i] = xp[b][i];
                    xp[b][i] = 0.0f;
                }
            __syncthreads();
            for (int t = threadIdx.x; t < nb * DBLP; t += blockDim.x) {
                float s = 0.0f;
#pragma unroll
                for (int w = 0; w < DEC_WARPS; ++w)
                    s += wpart[w][t / DBLP][t % DBLP];
                a.xpart[((sj_i64)blockIdx.x * a.batch + b0) * DBLP + t] = s;
            }
        });
}

template <typename T> __device__ __forceinline__ void decode_out(const sj_decode_args &a)
{
    constexpr int BT = dec_batch(DI);
    dec_matvec<T, DI, BT>(
        a.w_out, DM, a.batch, [&](float (&act)[BT][DI], sj_i64 b0, int nb) { dec_stage<T, DI, BT>(act, a.y, b0, nb); },
        dec_each([&](sj_i64 j, sj_i64 b, float v) { ((T *)a.out)[b * DM + j] = sj_from_float<T>(v); }));
}

/* The logits, and with next_ids their argmax (in row_argmax.cuh's order,
 * so the same token as the unfused step's): each lane keeps its
 * sequence's best row, each block writes its best to pick, and the last
 * block to finish takes the best of those.  Where a lane holds a whole
 * row in four pieces or fewer, two rows ahead: the 130m shape's 1.5 KB
 * rows, one ahead, left the head at 65% of the copy bandwidth (about 24
 * rows a warp, each waiting on its round trip), where the 1.4b shape's 4
 * KB rows reach 92% (bench/NOTES.md's decode rounds 12 and 18). */
template <typename T> __device__ __forceinline__ void decode_head(const sj_decode_args &a)
{
    constexpr int BT = dec_batch(DM), AHEAD = dec_row<T, DM>::PER_LANE <= 4 ? 2 : 1;
    __shared__ sj_argmax_part wbest[DEC_WARPS][BT];
    __shared__ bool last;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float bv = 0.0f;
    int bi = 0;
    const float *nw = dec_copy_norm(a.norm_w);
    dec_matvec<T, DM, BT, AHEAD>(
        a.w_in, VOCAB, a.batch,
        [&](float (&act)[BT][DM], sj_i64 b0, int nb) {
            bv = __uint_as_float(0xff800000u); /* -inf: the first row always wins */
            bi = 0x7fffffff;
            dec_stage_norm<T>(act, a, b0, nb, nw, false);
        },
        dec_each([&](sj_i64 j, sj_i64 b, float v) {
            const T out = sj_from_float<T>(v);
            ((T *)a.out)[b * VOCAB + j] = out;
            sj_argmax_take(bv, bi, sj_to_float(out), (int)j);
        }),
        [&](sj_i64 b0, int nb) {
            if (!a.next_ids)
                return;
            if (lane < nb)
                wbest[warp][lane] = sj_argmax_part{bv, bi};
            __syncthreads();
            if (threadIdx.x < nb) {
                sj_argmax_part p = wbest[0][threadIdx.x];
                for (int w = 1; w < DEC_WARPS; ++w)
                    sj_argmax_take(p.v, p.i, wbest[w][threadIdx.x].v, wbest[w][threadIdx.x].i);
                a.pick[blockIdx.x * a.batch + b0 + threadIdx.x] = p;
            }
        });
    if (!a.next_ids)
        return;
    /* the last block: every block's pick is written and visible */
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        last = atomicAdd(a.picked, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    for (sj_i64 b = 0; b < a.batch; ++b) {
        float v = __uint_as_float(0xff800000u);
        int i = 0x7fffffff;
        for (unsigned k = threadIdx.x; k < gridDim.x; k += blockDim.x) {
            const sj_argmax_part *p = a.pick + k * a.batch + b; /* from L2: other blocks wrote it */
            sj_argmax_take(v, i, __ldcg(&p->v), __ldcg(&p->i));
        }
        for (int o = 16; o > 0; o >>= 1)
            sj_argmax_take(v, i, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, i, o));
        __syncthreads(); /* the last sequence's wbest is read */
        if (lane == 0)
            wbest[warp][0] = sj_argmax_part{v, i};
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int w = 1; w < DEC_WARPS; ++w)
                sj_argmax_take(v, i, wbest[w][0].v, wbest[w][0].i);
            a.next_ids[b] = i;
        }
    }
}

/* G lanes share a (sequence, channel) and take 4 adjacent states each, as
 * state_update.cu's vector path does (and sum in its order), where the
 * states come in fours and G is a power of two; else one lane takes all. */
constexpr int MIX_G = NS % 4 == 0 && ((NS / 4) & (NS / 4 - 1)) == 0 && NS / 4 <= 32 ? NS / 4 : 1;
constexpr int MIX_THREADS = 256;
/* Sequences a block of decode_mix takes at once, at most (a row of blocks
 * for each, the host's sj_model_decode_mix_plan): their loads in flight
 * together.  One at a time, a block's few loads left every sequence a
 * chain of round trips, and at 64 sequences the grid took six waves of
 * it; at two, four a block halved the blocks and the step ran 7%
 * slower.  Six make 64 sequences of the 130m shape (24 blocks a row) 11
 * rows, 264 blocks: one wave at two blocks an SM on 132 SMs, where four
 * took 384, a wave and a half.  decode_mix1 is the kernel for one a
 * block (batch 1, and every batch whose grid fits a wave that way):
 * arrays of one sequence, where six's took registers (128 against 96 at
 * the 130m shape) and time at batch 1.  The launch bounds keep two
 * blocks an SM for both (the host's wave, SJ_DECODE_MIX_BLOCKS_PER_SM):
 * six sequences' states ahead of the wait fit 128 registers without
 * spills at the 130m and 1.4b shapes. */
constexpr int MIX_SEQS = 6;
constexpr int MIX_BLOCKS_PER_SM = 2;

/* Parts g, g + groups, ... below xparts of one float4 column added to
 * s in order, DEPTH loads a batch: every batch one round trip to L2, the
 * last one's missing parts taken as zeros (a remainder loop would wait on
 * each of its loads in turn: four round trips at 64 sequences, where a
 * thread adds 12 parts). */
template <int DEPTH>
__device__ __forceinline__ void dec_sum_column(float4 &s, const float4 *p, sj_i64 stride, int g, int groups,
                                               int xparts)
{
    for (int q0 = g; q0 < xparts; q0 += DEPTH * groups) {
        float4 v[DEPTH];
#pragma unroll
        for (int k = 0; k < DEPTH; ++k) {
            const int q = q0 + k * groups;
            v[k] = q < xparts ? p[q * stride] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int k = 0; k < DEPTH; ++k) {
            s.x += v[k].x;
            s.y += v[k].y;
            s.z += v[k].z;
            s.w += v[k].w;
        }
    }
}

/* Sequences b0 .. b0 + nb - 1's x_proj (dt_low, B, C) into xd: decode_in's
 * (or decode_convx's) parts summed, each thread adding every `groups`-th
 * part of one float4 column of one sequence, then the groups in order,
 * rounded to the model's dtype as the unfused x_proj rounds its output.
 * The groups follow nb, so that one sequence (batch 1) still spreads its
 * parts over the whole block; the order of a sequence's sums therefore
 * depends on how many share its block. */
template <typename T, int S>
__device__ __forceinline__ void dec_sum_parts(const sj_decode_args &a, sj_i64 b0, int nb, float (&xd)[S][DBLP])
{
    constexpr int COLS = DBLP / 4, MAX_UNITS = COLS * S;
    __shared__ float4 red[MAX_UNITS > MIX_THREADS ? MAX_UNITS : MIX_THREADS];
    const int units = COLS * nb, groups = units < MIX_THREADS ? MIX_THREADS / units : 1;
    __syncthreads(); /* the last sequences' xd are read */
    for (int i = threadIdx.x; i < groups * units; i += MIX_THREADS) {
        const int u = i % units, g = i / units, c = u % COLS;
        float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        const float4 *p = (const float4 *)(a.xpart + (b0 + u / COLS) * DBLP) + c;
        const sj_i64 stride = a.batch * COLS;
        /* DEEP loads a batch in decode_mix1 where a thread adds more
         * than DEPTH parts (the 130m shape at batch 1 adds 16: one round
         * trip instead of two, 3% of the step), else DEPTH, where DEEP's
         * idle slots cost 1% at 8 and 64 sequences and six sequences'
         * registers spill (bench/NOTES.md's decode round 13); the same
         * for the whole block */
        constexpr int DEPTH = 12, DEEP = 16;
        if (S == 1 && (a.xparts + groups - 1) / groups > DEPTH)
            dec_sum_column<DEEP>(s, p, stride, g, groups, a.xparts);
        else
            dec_sum_column<DEPTH>(s, p, stride, g, groups, a.xparts);
        red[i] = s;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < nb * DBL; i += MIX_THREADS) {
        const int q = i / DBL, r = i % DBL, u = q * COLS + r / 4;
        float s = 0.0f;
        for (int g = 0; g < groups; ++g)
            s += ((const float *)&red[g * units + u])[r % 4];
        xd[q][r] = dec_round<T>(s);
    }
    __syncthreads();
}

/* A lane's PER states of one (sequence, channel), 16 bytes at a time where
 * they come in fours and `vec` (dec_states_vec) holds. */
template <int PER> __device__ __forceinline__ bool dec_states_vec(const float *states)
{
    /* every lane's first state is then a multiple of 4 from the layer's,
     * which the caller may place at any 4-byte boundary */
    return PER % 4 == 0 && ((unsigned long long)states & 15) == 0;
}
template <int PER> __device__ __forceinline__ void dec_load_states(float (&st)[PER], const float *p, bool vec)
{
    if (PER % 4 == 0 && vec) {
#pragma unroll
        for (int n = 0; n < PER; n += 4) {
            const float4 v = *(const float4 *)(p + n);
            st[n] = v.x;
            st[n + 1] = v.y;
            st[n + 2] = v.z;
            st[n + 3] = v.w;
        }
    } else {
#pragma unroll
        for (int n = 0; n < PER; ++n)
            st[n] = p[n];
    }
}
template <int PER> __device__ __forceinline__ void dec_store_states(float *p, const float (&h)[PER], bool vec)
{
    if (PER % 4 == 0 && vec) {
#pragma unroll
        for (int n = 0; n < PER; n += 4)
            *(float4 *)(p + n) = make_float4(h[n], h[n + 1], h[n + 2], h[n + 3]);
    } else {
#pragma unroll
        for (int n = 0; n < PER; ++n)
            p[n] = h[n];
    }
}

/* decode_mix's work, S sequences a block at most */
template <typename T, int S> __device__ __forceinline__ void dec_mix(const sj_decode_args &a)
{
    constexpr int G = MIX_G, PER = NS / G, RANK_LANE = (RANK + G - 1) / G;
    __shared__ float xd[S][DBLP];
    const sj_i64 t = (sj_i64)blockIdx.x * MIX_THREADS + threadIdx.x;
    const int lane = (int)(t % G);
    const sj_i64 d = t / G;
    const bool ok = d < DI, vec = dec_states_vec<PER>(a.ssm_state);
    /* this lane's states of sequence b */
    const auto states = [&](sj_i64 b) { return a.ssm_state + (b * DI + d) * NS + lane * PER; };
    /* Ahead of the wait: the channel's weights, and its states for the
     * first sequences (only this kernel touches a layer's states). */
    float wdt[RANK_LANE], A[PER], st[S][PER], bias = 0.0f, Dd = 0.0f;
    /* sequences a block takes at once: as many as the grid's rows leave
     * each (sj_model_decode_mix_plan), at most S */
    const int spb = (int)min((sj_i64)S, (a.batch + gridDim.y - 1) / gridDim.y);
    sj_i64 b0 = (sj_i64)blockIdx.y * spb;
    if (ok) {
#pragma unroll
        for (int i = 0; i < RANK_LANE; ++i)
            wdt[i] = lane + G * i < RANK ? sj_to_float(((const T *)a.w_dt)[d * RANK + lane + G * i]) : 0.0f;
#pragma unroll
        for (int n = 0; n < PER; ++n)
            A[n] = sj_neg_exp_exact(a.A_log[d * NS + lane * PER + n]) * SJ_LOG2E;
#pragma unroll
        for (int s = 0; s < S; ++s) {
            if (s < spb && b0 + s < a.batch)
                dec_load_states(st[s], states(b0 + s), vec);
            else
#pragma unroll
                for (int n = 0; n < PER; ++n)
                    st[s][n] = 0.0f;
        }
        bias = a.dt_bias[d];
        Dd = a.Dv[d];
    }
    sj_chain_enter();
    for (; b0 < a.batch; b0 += (sj_i64)gridDim.y * spb) {
        const int nb = (int)(a.batch - b0 < spb ? a.batch - b0 : spb);
        /* every load of the sequences before the parts' sum, x and z
         * widened only after it, so that no warp waits on them first */
        T xr[S], zr[S];
#pragma unroll
        for (int s = 0; s < S; ++s) {
            xr[s] = zr[s] = sj_from_float<T>(0.0f);
            if (ok && s < nb) {
                xr[s] = ((const T *)a.xc)[(b0 + s) * DI + d];
                zr[s] = ((const T *)a.z)[(b0 + s) * DI + d];
                if (b0 != (sj_i64)blockIdx.y * spb)
                    dec_load_states(st[s], states(b0 + s), vec);
            }
        }
        dec_sum_parts<T, S>(a, b0, nb, xd);
        float x[S], z[S];
#pragma unroll
        for (int s = 0; s < S; ++s) {
            x[s] = sj_to_float(xr[s]);
            z[s] = sj_to_float(zr[s]);
        }
#pragma unroll
        for (int s = 0; s < S; ++s) {
            if (s >= nb) /* the block's: its lanes' shuffles stay whole */
                break;
            const sj_i64 b = b0 + s;
            float y = 0.0f, dt = 0.0f;
            if (ok)
#pragma unroll
                for (int i = 0; i < RANK_LANE; ++i)
                    if (lane + G * i < RANK)
                        dt = fmaf(wdt[i], xd[s][lane + G * i], dt);
#pragma unroll
            for (int m = G >> 1; m > 0; m >>= 1)
                dt += __shfl_xor_sync(0xffffffffu, dt, m);
            if (ok) {
                dt = sj_softplus(dec_round<T>(dt) + bias);
                const float dtx = dt * x[s];
                const float *Bv = xd[s] + RANK + lane * PER, *Cv = xd[s] + RANK + NS + lane * PER;
                float h[PER];
#pragma unroll
                for (int n = 0; n < PER; ++n) {
                    h[n] = fmaf(exp2f(dt * A[n]), st[s][n], dtx * Bv[n]);
                    y = fmaf(Cv[n], h[n], y);
                }
                dec_store_states(states(b), h, vec);
            }
#pragma unroll
            for (int m = G >> 1; m > 0; m >>= 1)
                y += __shfl_xor_sync(0xffffffffu, y, m);
            if (ok && lane == 0) {
                y = fmaf(Dd, x[s], y);
                y *= sj_silu(z[s]);
                ((T *)a.y)[b * DI + d] = sj_from_float<T>(y);
            }
        }
    }
}
template <typename T> __device__ __forceinline__ void decode_mix(const sj_decode_args &a) { dec_mix<T, MIX_SEQS>(a); }
template <typename T> __device__ __forceinline__ void decode_mix1(const sj_decode_args &a) { dec_mix<T, 1>(a); }
/* The hybrid step's part of decode_in (model_decode.c): in_proj's
 * output for every sequence comes from cuBLAS in x ([batch, 2 DI], x
 * half then z half), which reads each weight once for the whole batch.
 * A block takes CX_CHANNELS channels of CX_SEQS sequences at a time (a
 * row of blocks for each CX_SEQS sequences, up to the grid's): the
 * conv state's step and SiLU (xc), the z half copied out as decode_mix
 * reads it (z, [batch, DI]), and the block's part of x_proj over its
 * channels, summed in channel order (xpart, decode_in's layout with a
 * part a block). */
/* Each of decode_mix's blocks sums every part of its sequence, so the
 * parts are few: 64 channels a block (24 parts at d_inner 1536, 15 KB a
 * sequence for each of its 24 blocks of decode_mix to read). */
constexpr int CX_CHANNELS = 64; /* the host launches by its copies (model.h, SJ_DECODE_CONVX_*) */
constexpr int CX_SEQS = 4;
constexpr int CX_THREADS = 256;
static_assert(CX_THREADS == CX_CHANNELS * CX_SEQS, "a thread a channel and sequence");

template <typename T> __device__ __forceinline__ void decode_convx(const sj_decode_args &a)
{
    __shared__ float wx[DBL][CX_CHANNELS + 1]; /* x_proj's columns of the block's channels */
    __shared__ float xs[CX_SEQS][CX_CHANNELS];
    const int c = threadIdx.x % CX_CHANNELS, s = threadIdx.x / CX_CHANNELS;
    const sj_i64 j0 = (sj_i64)blockIdx.x * CX_CHANNELS, j = j0 + c;
    const bool ok = j < DI;
    const T *w_x = (const T *)a.w_x, *xz = (const T *)a.x;
    /* ahead of the wait: weights only, in 16-byte pieces where the rows
     * allow (the kernel before may be cuBLAS's, which lets this one start
     * only when it ends: twenty scalar loads a thread were then in the
     * step's path) */
    constexpr int E = 16 / (int)sizeof(T), PIECES = CX_CHANNELS / E;
    if (DI % E == 0 && (sj_u64)w_x % 16 == 0) {
        for (int i = threadIdx.x; i < DBL * PIECES; i += CX_THREADS) {
            const int r = i / PIECES, k = i % PIECES * E;
            const uint4 v = j0 + k < DI ? *(const uint4 *)(w_x + r * (sj_i64)DI + j0 + k) : make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
            for (int e = 0; e < E; ++e)
                wx[r][k + e] = sj_lane<T>(v, e);
        }
    } else {
        for (int i = threadIdx.x; i < DBL * CX_CHANNELS; i += CX_THREADS) {
            const int r = i / CX_CHANNELS, k = i % CX_CHANNELS;
            wx[r][k] = j0 + k < DI ? sj_to_float(w_x[r * (sj_i64)DI + j0 + k]) : 0.0f;
        }
    }
    float cw[WIDTH], cb = 0.0f;
#pragma unroll
    for (int k = 0; k < WIDTH; ++k)
        cw[k] = ok ? a.conv_w[j * WIDTH + k] : 0.0f;
    if (ok && a.conv_b)
        cb = a.conv_b[j];
    sj_chain_enter();
    for (sj_i64 b0 = (sj_i64)blockIdx.y * CX_SEQS; b0 < a.batch; b0 += (sj_i64)gridDim.y * CX_SEQS) {
        const sj_i64 b = b0 + s;
        float x = 0.0f;
        if (ok && b < a.batch) {
            float *st = a.conv_state + (b * DI + j) * WIDTH;
            float s[WIDTH];
#pragma unroll
            for (int k = 0; k + 1 < WIDTH; ++k)
                s[k] = st[k + 1];
            s[WIDTH - 1] = sj_to_float(xz[b * 2 * DI + j]);
            x = dec_conv_step<T>(st, s, [&](int k) { return cw[k]; }, cb);
            ((T *)a.xc)[b * DI + j] = sj_from_float<T>(x);
            ((T *)a.z)[b * DI + j] = xz[b * 2 * DI + DI + j];
        }
        __syncthreads(); /* the last sequences' xs are read */
        xs[s][c] = x;
        __syncthreads();
        const int nb = (int)(a.batch - b0 < CX_SEQS ? a.batch - b0 : CX_SEQS);
        for (int o = threadIdx.x; o < nb * DBLP; o += CX_THREADS) {
            const int q = o / DBLP, r = o % DBLP;
            float sum = 0.0f;
            if (r < DBL)
#pragma unroll 8
                for (int k = 0; k < CX_CHANNELS; ++k)
                    sum = fmaf(wx[r][k], xs[q][k], sum);
            a.xpart[((sj_i64)blockIdx.x * a.batch + b0 + q) * DBLP + r] = sum;
        }
    }
}

/* The hybrid step's norm, chained like its other kernels (the unfused
 * step's norm kernel is not, so that the product after it could not
 * start early): dec_stage_norm's RMSNorm of x + res_in for the block's
 * sequences (dec_batch(DM) at a time) into normed (a.out), the residual
 * into res_out. */
template <typename T> __device__ __forceinline__ void decode_norm(const sj_decode_args &a)
{
    constexpr int BT = dec_batch(DM);
    __shared__ __align__(16) float act[BT][DM];
    const float *nw = dec_copy_norm(a.norm_w);
    sj_chain_enter();
    for (sj_i64 b0 = (sj_i64)blockIdx.x * BT; b0 < a.batch; b0 += (sj_i64)gridDim.x * BT) {
        const int nb = (int)(a.batch - b0 < BT ? a.batch - b0 : BT);
        __syncthreads(); /* the last sequences' act is read */
        dec_stage_norm<T, BT>(act, a, b0, nb, nw, true);
        __syncthreads();
        for (int i = threadIdx.x; i < nb * DM; i += DEC_THREADS)
            ((T *)a.out)[b0 * DM + i] = sj_from_float<T>(act[i / DM][dec_row<T, DM>::slot(i % DM)]);
    }
}

/* The hybrid step's products on tensor cores, for 16-bit models, in
 * place of cuBLAS where K is a multiple of 8 and a block's rows fit
 * shared memory whole:
 *   decode_tcx:   in_proj of the normed x (a.x) with decode_convx's work in
 *                 its epilogue: the conv step and SiLU (xc), z, and x_proj's
 *                 part over the block's 64 channels (xpart), so that the
 *                 layer has no decode_convx;
 *   decode_tcin:  in_proj alone (a.out: xz), where decode_tcx does not fit;
 *   decode_tcout: out_proj of a.y (a.out: the next layer's x).
 *
 * Launched chained, they copy their rows of W (and decode_tcx its conv
 * states and weights) to shared memory before the wait, so that the
 * weights' DRAM latency passes while the kernel before still runs; after
 * it, the block's sequences (their whole rows: a few tens of KB, from
 * L2).  A block takes NT 8-row tiles of W and 16 MT sequences; its 8
 * warps are MT m-tiles times KW = 8 / MT slices of k (chunks of 32 k kw,
 * kw + KW, ...), each feeding mma.sync from ldmatrix (dec_tc_loop); the
 * slices' sums meet in shared memory, added in slice order, so the
 * result is the same every run.  Rows are rounded to the model's dtype
 * once, as cuBLAS's output is.
 *
 * The host chooses each kernel's block (model_decode.c's tc_plan) and
 * hands it in as SJ_DEC_TC: MT, NT and the shared memory it launches
 * with, for decode_tcx, decode_tcin and decode_tcout in turn (MT 0 where
 * the kernel is not taken); dec_tc lays the block out from MT and NT and
 * holds its bytes equal to the host's, so the two cannot part unseen. */
constexpr int TC_THREADS = 256; /* the host launches by its copy (model.h, SJ_DECODE_TC_THREADS) */
constexpr int TC_PLAN[9] = {SJ_DEC_TC};
enum { TC_PLAN_X, TC_PLAN_IN, TC_PLAN_OUT };

__host__ __device__ constexpr int dec_tc_max(int a, int b) { return a > b ? a : b; }

/* The shared memory of a block over 16 mt sequences and 8 nt rows of W,
 * each row `row` bytes: the rows (then the warps' float4 sums of them,
 * where those take more), and what its epilogue stages, seq_extra bytes
 * a sequence and extra in all. */
__host__ __device__ constexpr int dec_tc_bytes(int mt, int nt, int row, int seq_extra, int extra)
{
    return dec_tc_max((16 * mt + 8 * nt) * row, TC_THREADS * nt * 16) + 16 * mt * seq_extra + extra;
}

/* The block of plan PLAN (TC_PLAN_*) for [*, K] x [N, K]^T with an
 * epilogue staging SEQ_EXTRA bytes a sequence and EXTRA in all: MT
 * m-tiles of 16 sequences, NT 8-row tiles of W.  Where the host takes no
 * such kernel (its MT 0), a block of one and one, never launched. */
template <int K, int N, int PLAN, int SEQ_EXTRA = 0, int EXTRA = 0> struct dec_tc {
    static constexpr int KDIM = K, NDIM = N, CHUNKS = (K + 31) / 32;
    /* 16-byte columns a row takes in shared memory: a whole number of
     * 128-byte lines, so that slot()'s swap stays inside the row */
    static constexpr int PITCH = (CHUNKS * 4 + 7) & ~7, ROW = PITCH * 16;
    static constexpr bool TAKEN = TC_PLAN[3 * PLAN] > 0;
    static constexpr int MT = TAKEN ? TC_PLAN[3 * PLAN] : 1, NT = TAKEN ? TC_PLAN[3 * PLAN + 1] : 1;
    static_assert(MT == 1 || MT == 2 || MT == 4, "a block's warps split over its m-tiles");
    static constexpr int ROWS = 8 * NT, KW = TC_THREADS / 32 / MT;
    /* the rows or the sums (RBYTES), then the epilogue's */
    static constexpr int RBYTES = dec_tc_max((16 * MT + ROWS) * ROW, TC_THREADS * NT * 16);
    static constexpr int SMEM = dec_tc_bytes(MT, NT, ROW, SEQ_EXTRA, EXTRA);
    static_assert(!TAKEN || SMEM == TC_PLAN[3 * PLAN + 2], "the host's plan (model_decode.c, tc_plan)");

    /* Column c of row r, rows of `pitch` columns (a multiple of 8).  An
     * ldmatrix phase reads one column of eight consecutive rows: row r's
     * eights of columns are swapped by r % 8 (c ^ (r & 7)), so that the
     * eight lie in eight different 16-byte banks. */
    static __device__ __forceinline__ int slot(int r, int c, int pitch = PITCH)
    {
        return r * pitch + (c ^ (r & 7));
    }

    /* Queues the copies of rows [0, rows) of src ([*, ld] T, 16-byte
     * rows), columns [0, cols) (a multiple of 8), into dst (rows of
     * `pitch` 16-byte columns), zeros past `valid` rows and past `cols`. */
    template <typename T>
    static __device__ __forceinline__ void fill(uint4 *dst, const T *src, sj_i64 ld, int rows, sj_i64 valid,
                                                int cols = K, int pitch = PITCH)
    {
        for (int i = threadIdx.x; i < rows * pitch; i += TC_THREADS) {
            const int r = i / pitch, c = i % pitch;
            const bool ok = r < valid && c * 8 < cols;
            sj_copy16(dst + slot(r, c, pitch), ok ? (const void *)(src + (sj_i64)r * ld + c * 8) : (const void *)src,
                      ok ? 16 : 0);
        }
    }

    /* Element (i, c) of the block's product, sequence m0 + i and row n0 +
     * c: the slices' sums added in slice order.  sums is [KW][MT][NT][32
     * lanes] of float4, element e of tile j in a lane being row 16 mw + g
     * + 8 (e / 2), column 8 j + 2 t + e % 2. */
    static __device__ __forceinline__ float sum(const float *sums, int i, int c)
    {
        const int mw = i >> 4, lane = (i & 7) * 4 + ((c & 7) >> 1), e = ((i >> 3) & 1) * 2 + (c & 1);
        float v = sums[((mw * NT + (c >> 3)) * 32 + lane) * 4 + e];
#pragma unroll
        for (int q = 1; q < KW; ++q)
            v += sums[(((q * MT + mw) * NT + (c >> 3)) * 32 + lane) * 4 + e];
        return v;
    }
};

/* acc[s][j] += one m-tile of A (16 rows from a_rows) times NT n-tiles of
 * W (8 rows each from w_rows), over the chunks of 32 k u = first, first +
 * KSTEP, ... below CHUNKS: mma step s of a chunk takes its k 16 s .. 16 s
 * + 15.  Both are staged by slot() in rows of PITCH columns.  Each
 * fragment is one ldmatrix.x4 from an address a lane computes once: a
 * chunk is 4 columns, so a step of chunks that is a multiple of 8
 * columns moves every lane's column past slot()'s swap unchanged (with
 * an odd KSTEP, every other chunk starts from its own address). */
template <typename T, int PITCH, int CHUNKS, int NT, int KSTEP>
__device__ __forceinline__ void dec_tc_loop(float (&acc)[2][NT][4], const uint4 *a_rows, const uint4 *w_rows,
                                            int first)
{
    static_assert(PITCH % 8 == 0, "slot()'s swap stays inside a row");
    constexpr int PAIR = KSTEP % 2 ? 2 : 1; /* chunks whose step is a multiple of 8 columns */
    const int lane = threadIdx.x & 31, y = lane & 7;
    const unsigned a_base = (unsigned)__cvta_generic_to_shared(a_rows + (lane & 15) * PITCH);
    const unsigned w_base = (unsigned)__cvta_generic_to_shared(w_rows + y * PITCH);
    /* lane l points at row l % 16 of A's tile, columns 4 u + 2 s + l / 16
     * (the fragment's k 0-7 then 8-15), and at row l % 8 of each of W's
     * tiles, columns 4 u + l / 8 (mma step 0's pair, then step 1's) */
    unsigned a_at[PAIR][2], w_at[PAIR];
#pragma unroll
    for (int p = 0; p < PAIR; ++p) {
        const int c = 4 * (first + p * KSTEP);
#pragma unroll
        for (int st = 0; st < 2; ++st)
            a_at[p][st] = a_base + 16 * ((c + 2 * st + (lane >> 4)) ^ y);
        w_at[p] = w_base + 16 * ((c + (lane >> 3)) ^ y);
    }
#pragma unroll 1
    for (int u0 = first; u0 < CHUNKS; u0 += PAIR * KSTEP) {
        const unsigned shift = 64 * (u0 - first);
#pragma unroll
        for (int p = 0; p < PAIR; ++p) {
            if (p && u0 + p * KSTEP >= CHUNKS)
                break;
            unsigned a[2][4], w[NT][4];
#pragma unroll
            for (int st = 0; st < 2; ++st)
                sj_ldmatrix_x4(a[st], a_at[p][st] + shift);
#pragma unroll
            for (int j = 0; j < NT; ++j)
                sj_ldmatrix_x4(w[j], w_at[p] + shift + j * 8 * PITCH * 16);
#pragma unroll
            for (int st = 0; st < 2; ++st)
#pragma unroll
                for (int j = 0; j < NT; ++j)
                    sj_mma_type<T>::mma(acc[st][j], a[st], w[j][2 * st], w[j][2 * st + 1]);
        }
    }
}

/* dec_tc_product's plain epilogue: the product into C [batch, N]. */
template <typename T, int K, int N, int PLAN> struct dec_tc_store {
    typedef dec_tc<K, N, PLAN> P;
    T *C;
    __device__ __forceinline__ void before_wait(unsigned char *, int, sj_i64, sj_i64) {}
    __device__ __forceinline__ void finish(const float *sums, uint4 *, unsigned char *, int n0, sj_i64 m0,
                                           sj_i64 batch)
    {
        for (int f = threadIdx.x; f < 16 * P::MT * P::ROWS; f += TC_THREADS) {
            const int i = f / P::ROWS, c = f % P::ROWS;
            if (m0 + i < batch && n0 + c < N)
                C[(m0 + i) * N + n0 + c] = sj_from_float<T>(P::sum(sums, i, c));
        }
    }
};

/* C [m0.., n0..] of A [batch, K] x W [N, K]^T on tensor cores (the block
 * of P = Epilogue::P, which follows dec_tc), handed to epi.finish in
 * shared memory; epi.before_wait stages what the epilogue reads that the
 * kernel before does not write. */
template <typename T, typename Epilogue>
__device__ __forceinline__ void dec_tc_product(const T *A, const T *W, sj_i64 batch, Epilogue &epi)
{
#if __CUDA_ARCH__ >= 800
    typedef typename Epilogue::P P;
    if (!P::TAKEN) /* the host never launches it */
        return;
    constexpr int MT = P::MT, NT = P::NT, KW = P::KW, K = P::KDIM;
    extern __shared__ uint4 dec_tc_smem[];
    uint4 *w_rows = dec_tc_smem, *a_rows = dec_tc_smem + P::ROWS * P::PITCH;
    unsigned char *extra = (unsigned char *)dec_tc_smem + P::RBYTES;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int mw = warp % MT, kw = warp / MT, n0 = blockIdx.x * P::ROWS;
    const sj_i64 m0 = (sj_i64)blockIdx.y * 16 * MT;
    P::fill(w_rows, W + (sj_i64)n0 * K, K, P::ROWS, P::NDIM - n0);
    epi.before_wait(extra, n0, m0, batch);
    sj_copy_commit();
    sj_chain_enter();
    P::fill(a_rows, A + m0 * K, K, 16 * MT, batch - m0);
    sj_copy_commit();
    sj_copy_wait();
    __syncthreads();
    /* a sum for each of a chunk's two mma steps, so that two chains of
     * them run at once */
    float acc[2][NT][4] = {};
    dec_tc_loop<T, P::PITCH, P::CHUNKS, NT, KW>(acc, a_rows + mw * 16 * P::PITCH, w_rows, kw);
    /* the slices' sums, [KW][MT][NT][32 lanes], where the rows were */
    float4 *sums = (float4 *)dec_tc_smem;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < NT; ++j)
        sums[((kw * MT + mw) * NT + j) * 32 + lane] =
            make_float4(acc[0][j][0] + acc[1][j][0], acc[0][j][1] + acc[1][j][1], acc[0][j][2] + acc[1][j][2],
                        acc[0][j][3] + acc[1][j][3]);
    __syncthreads();
    epi.finish((const float *)sums, a_rows, extra, n0, m0, batch);
#endif
}

/* decode_tcx's block: CX_CHANNELS rows of in_proj, the channels of one
 * part of x_proj (decode_mix sums as many parts as decode_convx leaves).
 * Its epilogue stages, ahead of the wait, each sequence's conv states of
 * those channels and (TCX_SEQ_EXTRA a sequence, with the xc tile below),
 * x_proj's columns of them as DBL8 rows of 8 16-byte columns, the conv
 * weights and the bias (TCX_EXTRA). */
constexpr int DBL8 = (DBL + 7) & ~7;
static_assert(CX_CHANNELS == 64, "x_proj's columns of a block are 8 16-byte columns");
constexpr int TCX_SEQ_EXTRA = CX_CHANNELS * WIDTH * 4 + 128;
constexpr int TCX_EXTRA = DBL8 * 128 + CX_CHANNELS * WIDTH * 4 + CX_CHANNELS * 4;

template <typename T> struct dec_tc_convx {
    typedef dec_tc<DM, 2 * DI, TC_PLAN_X, TCX_SEQ_EXTRA, TCX_EXTRA> P;
    static_assert(!P::TAKEN || P::ROWS == CX_CHANNELS, "a block's rows are one part's channels");
    static constexpr int SEQS = 16 * P::MT;
    const sj_decode_args &a;

    /* Where the epilogue's pieces lie in `extra`. */
    static __device__ __forceinline__ float *states(unsigned char *extra) { return (float *)extra; }
    static __device__ __forceinline__ uint4 *xc_tile(unsigned char *extra)
    {
        return (uint4 *)(extra + SEQS * CX_CHANNELS * WIDTH * 4);
    }
    static __device__ __forceinline__ uint4 *wx_tile(unsigned char *extra) { return xc_tile(extra) + SEQS * 8; }
    static __device__ __forceinline__ float *conv_w(unsigned char *extra) { return (float *)(wx_tile(extra) + DBL8 * 8); }

    __device__ __forceinline__ void before_wait(unsigned char *extra, int n0, sj_i64 m0, sj_i64 batch)
    {
        if (n0 >= DI) /* z rows only */
            return;
        const int ch = DI - n0 < CX_CHANNELS ? DI - n0 : CX_CHANNELS; /* a multiple of 8 (the host's rule) */
        float *cs = states(extra), *cw = conv_w(extra); /* the bias after the weights */
        for (int i = threadIdx.x; i < SEQS * CX_CHANNELS * WIDTH; i += TC_THREADS) {
            const int q = i / (CX_CHANNELS * WIDTH), r = i % (CX_CHANNELS * WIDTH);
            const bool ok = m0 + q < batch && r < ch * WIDTH;
            sj_copy4(cs + i, ok ? (const void *)(a.conv_state + ((m0 + q) * DI + n0) * WIDTH + r) : a.conv_state,
                     ok ? 4 : 0);
        }
        P::fill(wx_tile(extra), (const T *)a.w_x + n0, DI, DBL8, DBL, ch, 8);
        for (int i = threadIdx.x; i < CX_CHANNELS * WIDTH + CX_CHANNELS; i += TC_THREADS) {
            const bool w = i < CX_CHANNELS * WIDTH, ok = w ? i < ch * WIDTH : a.conv_b && i - CX_CHANNELS * WIDTH < ch;
            sj_copy4(cw + i, ok ? (const void *)(w ? a.conv_w + n0 * WIDTH + i : a.conv_b + n0 + i - CX_CHANNELS * WIDTH)
                                : (const void *)a.conv_w,
                     ok ? 4 : 0);
        }
    }

    /* Each element (i, c): z rows into a.z; x rows through the conv step
     * (dec_conv_step, as decode_convx) into a.xc and the xc tile; then the
     * block's part of x_proj, xc tile x x_proj's columns on tensor cores,
     * into a.xpart. */
    __device__ __forceinline__ void finish(const float *sums, uint4 *, unsigned char *extra, int n0, sj_i64 m0,
                                           sj_i64 batch)
    {
        const float *cs = states(extra), *cw = conv_w(extra), *cb = cw + CX_CHANNELS * WIDTH;
        uint4 *xt = xc_tile(extra);
        for (int f = threadIdx.x; f < SEQS * CX_CHANNELS; f += TC_THREADS) {
            const int i = f / CX_CHANNELS, c = f % CX_CHANNELS, n = n0 + c;
            const sj_i64 b = m0 + i;
            float x = 0.0f;
            if (b < batch && n < 2 * DI) {
                const float v = P::sum(sums, i, c);
                if (n >= DI) {
                    ((T *)a.z)[b * DI + n - DI] = sj_from_float<T>(v);
                } else {
                    const float *held = cs + (i * CX_CHANNELS + c) * WIDTH;
                    float st[WIDTH];
#pragma unroll
                    for (int k = 0; k + 1 < WIDTH; ++k)
                        st[k] = held[k + 1];
                    st[WIDTH - 1] = dec_round<T>(v);
                    x = dec_conv_step<T>(
                        a.conv_state + (b * DI + n) * WIDTH, st, [&](int k) { return cw[c * WIDTH + k]; }, cb[c]);
                    ((T *)a.xc)[b * DI + n] = sj_from_float<T>(x);
                }
            }
            ((T *)&xt[P::slot(i, c / 8, 8)])[c % 8] = sj_from_float<T>(x);
        }
        __syncthreads();
        if (n0 >= DI)
            return;
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
        const uint4 *wx = wx_tile(extra);
        for (int tile = warp; tile < P::MT * (DBL8 / 8); tile += TC_THREADS / 32) {
            const int mi = tile % P::MT, nj = tile / P::MT;
            float acc[2][1][4] = {};
            dec_tc_loop<T, 8, 2, 1, 1>(acc, xt + mi * 16 * 8, wx + nj * 8 * 8, 0);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const sj_i64 b = m0 + mi * 16 + g + 8 * (e >> 1);
                const int r = nj * 8 + 2 * t + (e & 1);
                if (b < batch && r < DBLP)
                    a.xpart[((sj_i64)blockIdx.x * a.batch + b) * DBLP + r] = acc[0][0][e] + acc[1][0][e];
            }
        }
    }
};

template <typename T> __device__ __forceinline__ void decode_tcx(const sj_decode_args &a)
{
    dec_tc_convx<T> epi{a};
    dec_tc_product<T>((const T *)a.x, (const T *)a.w_in, a.batch, epi);
}

template <typename T> __device__ __forceinline__ void decode_tcin(const sj_decode_args &a)
{
    dec_tc_store<T, DM, 2 * DI, TC_PLAN_IN> epi{(T *)a.out};
    dec_tc_product<T>((const T *)a.x, (const T *)a.w_in, a.batch, epi);
}

template <typename T> __device__ __forceinline__ void decode_tcout(const sj_decode_args &a)
{
    dec_tc_store<T, DI, DM, TC_PLAN_OUT> epi{(T *)a.out};
    dec_tc_product<T>((const T *)a.y, (const T *)a.w_out, a.batch, epi);
}

#endif /* SJ_UNIT_ALL */

/* The products' kernels keep two blocks an SM (128 registers): left
 * alone, ptxas hoists a whole row's shared-memory reads and takes up to
 * 255, one block an SM; at three (85) some spill. */
#define SJ_DECODE_KERNEL(T, sfx, part, threads, blocks)                                                            \
    SJ_KERNEL(decode_##part##_##sfx)(                                                                              \
    extern "C" __global__ void __launch_bounds__(threads, blocks) decode_##part##_##sfx(const sj_decode_args a) \
    {                                                                                                              \
        decode_##part<T>(a);                                                                                       \
    })

#define SJ_DECODE_KERNELS(T, sfx, unused)                            \
    SJ_DECODE_KERNEL(T, sfx, in, DEC_THREADS, DEC_BLOCKS_PER_SM)     \
    SJ_DECODE_KERNEL(T, sfx, mix, MIX_THREADS, MIX_BLOCKS_PER_SM)    \
    SJ_DECODE_KERNEL(T, sfx, out, DEC_THREADS, DEC_BLOCKS_PER_SM)    \
    SJ_DECODE_KERNEL(T, sfx, head, DEC_THREADS, DEC_BLOCKS_PER_SM)   \
    SJ_DECODE_KERNEL(T, sfx, convx, CX_THREADS, 1)                   \
    SJ_DECODE_KERNEL(T, sfx, norm, DEC_THREADS, 1)                   \
    SJ_DECODE_KERNEL(T, sfx, mix1, MIX_THREADS, MIX_BLOCKS_PER_SM)

SJ_FOR_EACH_DTYPE(SJ_DECODE_KERNELS, 0)

/* the tensor-core products: 16-bit types only (model_decode.c) */
SJ_DECODE_KERNEL(sj_half, f16, tcx, TC_THREADS, 1)
SJ_DECODE_KERNEL(sj_half, f16, tcin, TC_THREADS, 1)
SJ_DECODE_KERNEL(sj_half, f16, tcout, TC_THREADS, 1)
SJ_DECODE_KERNEL(sj_bf16, bf16, tcx, TC_THREADS, 1)
SJ_DECODE_KERNEL(sj_bf16, bf16, tcin, TC_THREADS, 1)
SJ_DECODE_KERNEL(sj_bf16, bf16, tcout, TC_THREADS, 1)
