/* Small kernels a Mamba language model needs around the ops, backward role
 * (see model.cu): embedding gradient, fused cross-entropy with its
 * gradient, and y = a * b for dA_log = dA * A.  No float atomics: every sum
 * is taken in a fixed order, so results are reproducible bit for bit. */
#include "ssmjit_types.cuh"

/* dtable[seg_id[s]] += the sum of dy[order[p]] over the segment's
 * positions p = seg_start[s] .. seg_start[s+1]-1, in that order.  A
 * segment per grid.y row, a column per thread; the sum is kept in double so
 * that a token repeated thousands of times loses nothing to rounding, and
 * rounded once when added to the table. */
template <typename T>
__device__ void embedding_bwd(const int *order, const int *seg_start, const int *seg_id,
                              const T *dy, sj_i64 sdy, float *dtable, sj_i64 nseg, sj_i64 d)
{
    SJ_ROWS_LOOP(nseg, d)
    {
        double s = 0.0;
        for (int p = seg_start[row], end = seg_start[row + 1]; p < end; ++p)
            s += sj_to_float(dy[(sj_i64)order[p] * sdy + col]);
        float *t = dtable + (sj_i64)seg_id[row] * d + col;
        *t = (float)((double)*t + s);
    }
}

#define SJ_EMBED_BWD_KERNELS(T, sfx, unused)                                                       \
    SJ_KERNEL(embedding_bwd_##sfx)(                                                                \
    extern "C" __global__ void embedding_bwd_##sfx(const int *order, const int *seg_start,         \
                                                   const int *seg_id, const T *dy, sj_i64 sdy,     \
                                                   float *dtable, sj_i64 nseg, sj_i64 d)           \
    {                                                                                              \
        embedding_bwd<T>(order, seg_start, seg_id, dy, sdy, dtable, nseg, d);                      \
    })

SJ_FOR_EACH_DTYPE(SJ_EMBED_BWD_KERNELS, 0)

#define SJ_NEG_INF __uint_as_float(0xff800000u)

/* Running (max, sum of exp(v - max)) of a softmax denominator.  An empty
 * side (m = -inf) adds nothing; a NaN value never becomes the max and
 * turns the sum into NaN. */
__device__ __forceinline__ void lse_add(float &m, float &s, float v)
{
    if (v > m) {
        s = (m == SJ_NEG_INF ? 0.0f : s * expf(m - v)) + 1.0f;
        m = v;
    } else if (v != SJ_NEG_INF) {
        s += expf(v - m);
    }
}

__device__ __forceinline__ void lse_merge(float &m, float &s, float m2, float s2)
{
    if (m2 > m) {
        s = (m == SJ_NEG_INF ? 0.0f : s * expf(m - m2)) + s2;
        m = m2;
    } else if (m2 != SJ_NEG_INF) {
        s += s2 * expf(m2 - m);
    }
}

/* logsumexp of the values the block's threads have taken in, returned to
 * every thread.  Shuffle butterflies and a fixed slot order: the result
 * does not depend on timing. */
__device__ float block_lse(float m, float s, float *red_m, float *red_s)
{
    for (int o = 16; o > 0; o >>= 1)
        lse_merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
    const int lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
    __syncthreads(); /* the previous row's readers of red_* are done */
    if (lane == 0) {
        red_m[threadIdx.x >> 5] = m;
        red_s[threadIdx.x >> 5] = s;
    }
    __syncthreads();
    m = lane < nwarps ? red_m[lane] : SJ_NEG_INF;
    s = lane < nwarps ? red_s[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1)
        lse_merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
    return m + logf(s);
}

/* exp(v - m), a term of a softmax over values whose max is m. */
__device__ __forceinline__ float sj_exp_shifted(float v, float m) { return sj_exp2_ftz((v - m) * SJ_LOG2E); }

/* The (max, sum of exp(v - max)) pair of n values; NaN among them makes the
 * sum NaN and the max NaN, so that lse_merge passes it on. */
template <int N> __device__ __forceinline__ void lse_of(const float (&v)[N], float &m, float &s)
{
    m = SJ_NEG_INF;
#pragma unroll
    for (int e = 0; e < N; ++e)
        m = v[e] > m ? v[e] : m;
    s = 0.0f;
#pragma unroll
    for (int e = 0; e < N; ++e)
        s += v[e] == SJ_NEG_INF ? 0.0f : sj_exp_shifted(v[e], m);
    if (s != s)
        m = s;
}

/* One block per row, grid-strided over rows; blockDim.x a multiple of 32.
 * row_loss = logsumexp(x) - x[target]; dx = scale * (softmax(x) -
 * onehot(target)) unless dx is NULL.  A target outside [0, vocab) (-100
 * among them) marks an ignored row: loss 0, gradient 0.  Rows of x that
 * start on 16 bytes are read in 16-byte groups (and written so where dx's
 * row does too), the rest of the row (and other rows) element by
 * element.  dx may be x itself:
 * the target's logit is read before the block meets in block_lse, and
 * afterwards each thread reads a group or element before writing it. */
template <typename T>
__device__ void cross_entropy(const T *x, sj_i64 sx, const int *targets, float scale,
                              float *row_loss, T *dx, sj_i64 sdx, sj_i64 rows, sj_i64 vocab)
{
    constexpr int VE = sj_group16<T>();
    __shared__ float red_m[32], red_s[32];
    for (sj_i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T *xr = x + row * sx;
        T *dr = dx ? dx + row * sdx : nullptr;
        const int tgt = targets[row];
        const bool ignored = tgt < 0 || tgt >= vocab;
        const float xt = threadIdx.x == 0 && !ignored ? sj_to_float(xr[tgt]) : 0.0f;
        /* The groups read depend on x alone, so that the loss (and dx) do
         * not depend on where dx lies. */
        const sj_i64 nvec = (unsigned long long)xr % 16 == 0 ? vocab / VE : 0;
        float m = SJ_NEG_INF, s = 0.0f;
        for (sj_i64 g = threadIdx.x; g < nvec; g += blockDim.x) {
            const uint4 w = ((const uint4 *)xr)[g];
            float v[VE], gm, gs;
#pragma unroll
            for (int e = 0; e < VE; ++e)
                v[e] = sj_lane<T>(w, e);
            lse_of(v, gm, gs);
            lse_merge(m, s, gm, gs);
        }
        for (sj_i64 j = nvec * VE + threadIdx.x; j < vocab; j += blockDim.x)
            lse_add(m, s, sj_to_float(xr[j]));
        const float lse = block_lse(m, s, red_m, red_s);
        if (threadIdx.x == 0)
            row_loss[row] = ignored ? 0.0f : lse - xt;
        if (!dx)
            continue;
        auto grad = [&](float v, sj_i64 j) {
            return ignored ? 0.0f : scale * (sj_exp_shifted(v, lse) - (j == tgt ? 1.0f : 0.0f));
        };
        const bool dvec = (unsigned long long)dr % 16 == 0;
        for (sj_i64 g = threadIdx.x; g < nvec; g += blockDim.x) {
            const uint4 w = ((const uint4 *)xr)[g];
            float v[VE];
#pragma unroll
            for (int e = 0; e < VE; ++e)
                v[e] = grad(sj_lane<T>(w, e), g * VE + e);
            sj_store_group<T>(dr, g * VE, VE, dvec, v);
        }
        for (sj_i64 j = nvec * VE + threadIdx.x; j < vocab; j += blockDim.x)
            dr[j] = sj_from_float<T>(grad(sj_to_float(xr[j]), j));
    }
}

#define SJ_CE_KERNELS(T, sfx, unused)                                                               \
    SJ_KERNEL(cross_entropy_##sfx)(                                                                 \
    extern "C" __global__ void cross_entropy_##sfx(const T *x, sj_i64 sx, const int *targets,       \
                                                   float scale, float *row_loss, T *dx, sj_i64 sdx, \
                                                   sj_i64 rows, sj_i64 vocab)                       \
    {                                                                                               \
        cross_entropy<T>(x, sx, targets, scale, row_loss, dx, sdx, rows, vocab);                    \
    })

SJ_FOR_EACH_DTYPE(SJ_CE_KERNELS, 0)

/* *loss = scale * the sum of row_loss[0..rows), in double: each thread
 * sums a fixed stride of rows, then a tree in shared memory adds the
 * threads in a fixed order.  One block of SJ_CE_SUM_THREADS threads (the
 * host's in src/ops/ops_model.h); rows = 0 gives 0. */
#define SJ_CE_SUM_THREADS 256

#if SJ_KERNEL_WANTED(cross_entropy_sum)
extern "C" __global__ void __launch_bounds__(SJ_CE_SUM_THREADS)
    cross_entropy_sum(const float *row_loss, sj_i64 rows, float scale, float *loss)
{
    __shared__ double part[SJ_CE_SUM_THREADS];
    double s = 0.0;
    for (sj_i64 i = threadIdx.x; i < rows; i += SJ_CE_SUM_THREADS)
        s += row_loss[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = SJ_CE_SUM_THREADS / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w)
            part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *loss = (float)((double)scale * part[0]);
}
#endif

#if SJ_KERNEL_WANTED(mul_f32)
extern "C" __global__ void mul_f32(const float *a, const float *b, float *y, sj_i64 n)
{
    const sj_i64 step = (sj_i64)gridDim.x * blockDim.x;
    for (sj_i64 i = (sj_i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = a[i] * b[i];
}
#endif
