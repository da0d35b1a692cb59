/* Small kernels a Mamba language model needs around the ops, forward role:
 * embedding lookup, the conv state after a prefill, greedy argmax and
 * A = -exp(A_log).  The
 * backward ones are in model_bwd.cu. */
#include "row_argmax.cuh"

/* (table type, output type) pairs of the embedding lookup: a table in any
 * dtype can feed a residual stream in any dtype. */
#define SJ_EMBED_PAIRS(M)                  \
    M(float, f32, float, f32)              \
    M(float, f32, sj_half, f16)            \
    M(float, f32, sj_bf16, bf16)           \
    M(sj_half, f16, float, f32)            \
    M(sj_half, f16, sj_half, f16)          \
    M(sj_half, f16, sj_bf16, bf16)         \
    M(sj_bf16, bf16, float, f32)           \
    M(sj_bf16, bf16, sj_half, f16)         \
    M(sj_bf16, bf16, sj_bf16, bf16)

/* Ids outside [0, vocab) clamped (sj_token_row). */
template <typename T, typename O>
__device__ void embedding_fwd(const int *ids, const T *table, sj_i64 vocab, O *out, sj_i64 so,
                              sj_i64 n, sj_i64 d)
{
    SJ_ROWS_LOOP(n, d)
    {
        const sj_i64 id = sj_token_row(ids[row], vocab);
        out[row * so + col] = sj_from_float<O>(sj_to_float(table[id * d + col]));
    }
}

#define SJ_EMBED_FWD_KERNELS(T, ts, O, os)                                                        \
    SJ_KERNEL(embedding_fwd_##ts##_##os)(                                                         \
    extern "C" __global__ void embedding_fwd_##ts##_##os(const int *ids, const T *table,          \
                                                         sj_i64 vocab, O *out, sj_i64 so,         \
                                                         sj_i64 n, sj_i64 d)                      \
    {                                                                                             \
        embedding_fwd<T, O>(ids, table, vocab, out, so, n, d);                                    \
    })

SJ_EMBED_PAIRS(SJ_EMBED_FWD_KERNELS)

/* The decode conv state after a prefill: state[b, d, k] = x[b, L - W + k, d]
 * (zero before the sequence), the last W inputs as Hugging Face keeps them.
 * Rows are (b, k), columns channels. */
template <typename T>
__device__ void conv_state_fill(const T *x, sj_i64 sx, float *state, sj_i64 B, sj_i64 L, sj_i64 D,
                                sj_i64 W)
{
    SJ_ROWS_LOOP(B * W, D)
    {
        const sj_i64 b = row / W, k = row % W, t = L - W + k;
        state[(b * D + col) * W + k] = t >= 0 ? sj_to_float(x[(b * L + t) * sx + col]) : 0.0f;
    }
}

#define SJ_CONV_STATE_KERNELS(T, sfx, unused)                                                    \
    SJ_KERNEL(conv_state_fill_##sfx)(                                                            \
    extern "C" __global__ void conv_state_fill_##sfx(const T *x, sj_i64 sx, float *state,        \
                                                     sj_i64 B, sj_i64 L, sj_i64 D, sj_i64 W)     \
    {                                                                                            \
        conv_state_fill<T>(x, sx, state, B, L, D, W);                                            \
    })

SJ_FOR_EACH_DTYPE(SJ_CONV_STATE_KERNELS, 0)

/* seg 0: one block a row, grid-strided over rows.  Else (sm_90 on, a
 * few long rows) a cluster of gridDim.x blocks a row (blockIdx.y), block
 * s taking the seg columns from s seg (seg a multiple of 8: a 16-byte
 * aligned row's segments start aligned), the cluster's first block
 * taking the best of theirs in block order: with one block a row, the
 * row's 50280 elements in one SM's loads and comparisons left 64 rows
 * (a decode step's pick) no faster than one (bench/NOTES.md's decode
 * round 16).  blockDim.x a multiple of 32. */
template <typename T>
__device__ void argmax_rows(const T *x, sj_i64 sx, int *out, sj_i64 rows, sj_i64 cols, sj_i64 seg)
{
    float v;
    int i;
    if (seg == 0) {
        for (sj_i64 row = blockIdx.x; row < rows; row += gridDim.x) {
            sj_row_argmax(x + row * sx, cols, v, i);
            if (threadIdx.x == 0)
                out[row] = i;
        }
        return;
    }
    const sj_i64 row = blockIdx.y, c0 = blockIdx.x * seg;
    sj_row_argmax(x + row * sx + c0, cols - c0 < seg ? cols - c0 : seg, v, i);
    __shared__ sj_argmax_part best;
    if (threadIdx.x == 0)
        best = sj_argmax_part{v, i == 0x7fffffff ? i : i + (int)c0};
    sj_cluster_sync();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        for (unsigned s = 1; s < gridDim.x; ++s)
            sj_argmax_take(best.v, best.i, __uint_as_float(sj_cluster_load(&best.v, s)),
                           (int)sj_cluster_load(&best.i, s));
        out[row] = best.i;
    }
    sj_cluster_sync(); /* every block's best stays until the first block has read it */
}

#define SJ_ARGMAX_KERNELS(T, sfx, unused)                                                        \
    SJ_KERNEL(argmax_rows_##sfx)(                                                                \
    extern "C" __global__ void argmax_rows_##sfx(const T *x, sj_i64 sx, int *out, sj_i64 rows,   \
                                                 sj_i64 cols, sj_i64 seg)                        \
    {                                                                                            \
        argmax_rows<T>(x, sx, out, rows, cols, seg);                                             \
    })

SJ_FOR_EACH_DTYPE(SJ_ARGMAX_KERNELS, 0)

#if SJ_KERNEL_WANTED(neg_exp_f32)
extern "C" __global__ void neg_exp_f32(const float *x, float *y, sj_i64 n)
{
    const sj_i64 step = (sj_i64)gridDim.x * blockDim.x;
    for (sj_i64 i = (sj_i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = sj_neg_exp_exact(x[i]);
}
#endif
