/* Small kernels a Mamba language model needs around the ops, forward role:
 * embedding lookup, the conv state after a prefill, greedy argmax and
 * A = -exp(A_log).  The
 * backward ones are in model_bwd.cu. */
#include "ssmjit_types.cuh"

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

/* An id outside [0, vocab) is clamped to the nearest row: the host
 * validates ids, and a bad one must not read past the table. */
template <typename T, typename O>
__device__ void embedding_fwd(const int *ids, const T *table, sj_i64 vocab, O *out, sj_i64 so,
                              sj_i64 n, sj_i64 d)
{
    SJ_ROWS_LOOP(n, d)
    {
        sj_i64 id = ids[row];
        id = id < 0 ? 0 : id >= vocab ? vocab - 1 : id;
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

/* By bits, so that no compile option can change what counts as NaN. */
__device__ __forceinline__ bool sj_isnan(float v)
{
    return (__float_as_uint(v) & 0x7fffffffu) > 0x7f800000u;
}

/* Whether (v, i) comes before (bv, bi) in argmax order: NaN above every
 * number (as torch.argmax), then larger values, then smaller indices.  A
 * total order, so any reduction tree picks the same element. */
__device__ __forceinline__ bool argmax_better(float v, int i, float bv, int bi)
{
    if (sj_isnan(v))
        return !sj_isnan(bv) || i < bi;
    if (sj_isnan(bv))
        return false;
    return v > bv || (v == bv && i < bi);
}

__device__ __forceinline__ void argmax_take(float &bv, int &bi, float v, int i)
{
    if (argmax_better(v, i, bv, bi)) {
        bv = v;
        bi = i;
    }
}

/* One block per row, grid-strided over rows; blockDim.x a multiple of 32. */
template <typename T>
__device__ void argmax_rows(const T *x, sj_i64 sx, int *out, sj_i64 rows, sj_i64 cols)
{
    __shared__ float warp_v[32];
    __shared__ int warp_i[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (sj_i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T *xr = x + row * sx;
        float bv = __uint_as_float(0xff800000u); /* -inf: the first element always wins */
        int bi = 0x7fffffff;
        /* four loads in flight a thread: a lone row (batch-1 decoding)
         * is otherwise bound by one load's latency per element */
        const sj_i64 step = blockDim.x;
        sj_i64 j = threadIdx.x;
        for (; j + 3 * step < cols; j += 4 * step) {
            const float v0 = sj_to_float(xr[j]), v1 = sj_to_float(xr[j + step]);
            const float v2 = sj_to_float(xr[j + 2 * step]), v3 = sj_to_float(xr[j + 3 * step]);
            argmax_take(bv, bi, v0, (int)j);
            argmax_take(bv, bi, v1, (int)(j + step));
            argmax_take(bv, bi, v2, (int)(j + 2 * step));
            argmax_take(bv, bi, v3, (int)(j + 3 * step));
        }
        for (; j < cols; j += step)
            argmax_take(bv, bi, sj_to_float(xr[j]), (int)j);
        for (int o = 16; o > 0; o >>= 1) {
            const float v = __shfl_xor_sync(0xffffffffu, bv, o);
            const int i = __shfl_xor_sync(0xffffffffu, bi, o);
            argmax_take(bv, bi, v, i);
        }
        __syncthreads(); /* the previous row's readers of warp_v are done */
        if (lane == 0) {
            warp_v[warp] = bv;
            warp_i[warp] = bi;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            for (unsigned w = 1; w < (blockDim.x >> 5); ++w)
                argmax_take(bv, bi, warp_v[w], warp_i[w]);
            out[row] = bi;
        }
    }
}

#define SJ_ARGMAX_KERNELS(T, sfx, unused)                                                        \
    SJ_KERNEL(argmax_rows_##sfx)(                                                                \
    extern "C" __global__ void argmax_rows_##sfx(const T *x, sj_i64 sx, int *out, sj_i64 rows,   \
                                                 sj_i64 cols)                                    \
    {                                                                                            \
        argmax_rows<T>(x, sx, out, rows, cols);                                                  \
    })

SJ_FOR_EACH_DTYPE(SJ_ARGMAX_KERNELS, 0)

/* -expf(x) with expf's accuracy (2 ulp, subnormal results kept) under any
 * compile options.  With --use_fast_math NVRTC turns expf into
 * ex2.approx.ftz(x * log2(e)), whose error grows with |x|, and flushes
 * subnormals (a plain negation too); these are the steps of the exact
 * expf instead, in PTX so that neither fast math nor flush-to-zero reaches
 * them: j = round(x log2 e) clamped to [-126, 126] and built as -2^j in
 * the sign and exponent fields, r = x log2 e - j with log2 e in two parts,
 * -exp(x) = 2^r * -2^j. */
__device__ __forceinline__ float sj_neg_exp_exact(float x)
{
    float y;
    asm("{\n\t"
        ".reg .f32 t, j, r, e;\n\t"
        ".reg .b32 b;\n\t"
        "fma.rn.sat.f32 t, %1, 0f3BBB989D, 0f3F000000;\n\t"
        "fma.rm.f32 j, t, 0f437C0000, 0f4B400001;\n\t"
        "add.rn.f32 t, j, 0fCB40007F;\n\t"
        "neg.f32 t, t;\n\t"
        "fma.rn.f32 r, %1, 0f3FB8AA3B, t;\n\t"
        "fma.rn.f32 r, %1, 0f32A57060, r;\n\t"
        "mov.b32 b, j;\n\t"
        "shl.b32 b, b, 23;\n\t"
        "or.b32 b, b, 0x80000000;\n\t"
        "mov.b32 t, b;\n\t"
        "ex2.approx.ftz.f32 e, r;\n\t"
        "mul.rn.f32 %0, e, t;\n\t"
        "}"
        : "=f"(y)
        : "f"(x));
    return y;
}

#if SJ_KERNEL_WANTED(neg_exp_f32)
extern "C" __global__ void neg_exp_f32(const float *x, float *y, sj_i64 n)
{
    const sj_i64 step = (sj_i64)gridDim.x * blockDim.x;
    for (sj_i64 i = (sj_i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = sj_neg_exp_exact(x[i]);
}
#endif
