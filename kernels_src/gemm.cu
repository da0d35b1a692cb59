/* Skinny GEMMs, forward role: sj_gemm's tensor-core path for products of
 * few rows, whose rules (where it runs, how k is split) are written in
 * src/ops/gemm.c.  C[m, n] = alpha sum_k A[m, k] W[n, k] + beta C[m, n]:
 * A holds a decode step's activations, W a Linear layer's weight, which
 * a block reads once for up to 64 rows of A.
 *
 * mma.sync m16n8k16 takes A's rows as its M and W's rows as its N, each
 * lane reading 16 contiguous bytes of a row (mma.cuh).  The block's W
 * rows and A rows go to shared memory by cp.async, a stage of KC chunks
 * at a time (256 bytes of each row), STAGES - 1 stages ahead, so that a
 * block keeps 32 KB and more of loads in flight without holding registers
 * for them.
 *
 * A block is 4 warps, each over 16 rows of W and every row of A in the
 * block's 16 MT; gridDim.x covers W's rows (a block taking every
 * gridDim.x-th tile of 64), gridDim.z A's, gridDim.y splits k.  Split
 * blocks leave their sums in `parts`, and the last of a tile's blocks to
 * arrive (a counter per tile, which it sets back to 0) adds them in split
 * order, so the result is the same every run. */
#include "copy_async.cuh"
#include "mma.cuh"
#include "ssmjit_types.cuh"

/* The host launches by the same defines in src/ops/gemm.h, which
 * tests/test_kernel_sizes.c holds equal to these. */
#define SJ_SKINNY_THREADS 128
#define SJ_SKINNY_NT 2        /* 8-row tiles of W a warp */
#define SJ_SKINNY_KC 4        /* chunks of 32 k a stage */
#define SJ_SKINNY_STAGES 3    /* stages of the ring in shared memory */
#define SJ_SKINNY_ROWS (SJ_SKINNY_THREADS / 32 * SJ_SKINNY_NT * 8) /* W's rows a block: 64 */
#define SJ_SKINNY_BLOCKS_PER_SM 3

/* One stage of the ring in shared memory: W's 64 rows of the block's
 * tile, then A's 16 MT rows, each over SJ_SKINNY_KC chunks of 32 k, as
 * 16-byte columns.  A quad reads 64 bytes of a row; where rows are longer
 * than that, odd rows' columns are swapped in halves (c ^ 4), so that the
 * two rows of a quarter warp's read share no bank. */
#define SJ_SKINNY_COLS (4 * SJ_SKINNY_KC)
template <int MT> struct sj_skinny_stage {
    uint4 w[SJ_SKINNY_ROWS * SJ_SKINNY_COLS];
    uint4 a[16 * MT * SJ_SKINNY_COLS];
};

__device__ __forceinline__ int sj_skinny_slot(int r, int c)
{
    return r * SJ_SKINNY_COLS + (SJ_SKINNY_KC > 1 ? c ^ ((r & 1) << 2) : c);
}

/* Queues the copies of the chunks from ch on (of W's rows n0.., A's rows
 * m0..) into *dst, zeros past n, m and k.  A thread copies one column of
 * every STEP-th row. */
template <typename T, int MT>
__device__ __forceinline__ void sj_skinny_fetch(sj_skinny_stage<MT> *dst, const T *a, sj_i64 lda, const T *w,
                                                sj_i64 ldw, int m0, int m, int n0, int n, int k, int ch)
{
    constexpr int STEP = SJ_SKINNY_THREADS / SJ_SKINNY_COLS;
    static_assert(SJ_SKINNY_THREADS % SJ_SKINNY_COLS == 0 && 16 % STEP == 0, "whole rows a pass");
    const int col = threadIdx.x % SJ_SKINNY_COLS, r0 = threadIdx.x / SJ_SKINNY_COLS, kk = ch * 32 + col * 8;
    const T *wp = w + (sj_i64)(n0 + r0) * ldw + kk, *ap = a + (sj_i64)(m0 + r0) * lda + kk;
#pragma unroll
    for (int q = 0; q < SJ_SKINNY_ROWS / STEP; q++) {
        const bool ok = kk < k && n0 + r0 + q * STEP < n;
        sj_copy16(dst->w + sj_skinny_slot(r0 + q * STEP, col), ok ? (const void *)(wp + q * STEP * ldw) : (const void *)w,
                  ok ? 16 : 0);
    }
#pragma unroll
    for (int q = 0; q < 16 * MT / STEP; q++) {
        const bool ok = kk < k && m0 + r0 + q * STEP < m;
        sj_copy16(dst->a + sj_skinny_slot(r0 + q * STEP, col), ok ? (const void *)(ap + q * STEP * lda) : (const void *)a,
                  ok ? 16 : 0);
    }
}

template <typename T, typename CT, int MT>
__device__ __forceinline__ void sj_skinny_gemm(const T *a, sj_i64 lda, const T *w, sj_i64 ldw, CT *c, sj_i64 ldc,
                                               int m, int n, int k, float alpha, float beta, int split_chunks,
                                               float4 *parts, unsigned *arrivals)
{
#if __CUDA_ARCH__ >= 800
    constexpr int NT = SJ_SKINNY_NT, STAGES = SJ_SKINNY_STAGES;
    extern __shared__ uint4 sj_skinny_smem[];
    sj_skinny_stage<MT> *ring = (sj_skinny_stage<MT> *)sj_skinny_smem;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int m0 = blockIdx.z * 16 * MT, tiles_n = (n + SJ_SKINNY_ROWS - 1) / SJ_SKINNY_ROWS;
    const int chunks = (k + 31) / 32, first = blockIdx.y * split_chunks;
    const int end = min(chunks, first + split_chunks);

    /* Unsplit, a block takes W's tiles blockIdx.x, + gridDim.x, ... */
    for (int tile_n = blockIdx.x; tile_n < tiles_n; tile_n += gridDim.x) {
        const int tn0 = tile_n * SJ_SKINNY_ROWS;
        float acc[MT][NT][4];
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int j = 0; j < NT; j++)
                acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;

        __syncthreads(); /* the last tile's stages are read */
        const int stages = (end - first + SJ_SKINNY_KC - 1) / SJ_SKINNY_KC;
#pragma unroll
        for (int s = 0; s < STAGES - 1; s++) {
            if (s < stages)
                sj_skinny_fetch<T, MT>(ring + s, a, lda, w, ldw, m0, m, tn0, n, k, first + s * SJ_SKINNY_KC);
            sj_copy_commit();
        }
        for (int st = 0; st < stages; st++) {
            sj_copy_wait_pending<STAGES - 2>();
            __syncthreads(); /* stage st is in; everyone is done with st - 1's */
            if (st + STAGES - 1 < stages)
                sj_skinny_fetch<T, MT>(ring + (st + STAGES - 1) % STAGES, a, lda, w, ldw, m0, m, tn0, n, k,
                                       first + (st + STAGES - 1) * SJ_SKINNY_KC);
            sj_copy_commit();
            const sj_skinny_stage<MT> &cur = ring[st % STAGES];
#pragma unroll
            for (int u = 0; u < SJ_SKINNY_KC; u++) {
                /* the chunks past this split's are another split's */
                if (SJ_SKINNY_KC > 1 && first + st * SJ_SKINNY_KC + u >= end)
                    break;
                uint4 wv[NT];
#pragma unroll
                for (int j = 0; j < NT; j++)
                    wv[j] = cur.w[sj_skinny_slot(warp * NT * 8 + j * 8 + g, u * 4 + t)];
#pragma unroll
                for (int i = 0; i < MT; i++) {
                    const uint4 lo = cur.a[sj_skinny_slot(i * 16 + g, u * 4 + t)],
                                hi = cur.a[sj_skinny_slot(i * 16 + 8 + g, u * 4 + t)];
#pragma unroll
                    for (int s = 0; s < 2; s++) {
                        const unsigned frag[4] = {s ? lo.z : lo.x, s ? hi.z : hi.x, s ? lo.w : lo.y,
                                                  s ? hi.w : hi.y};
#pragma unroll
                        for (int j = 0; j < NT; j++)
                            sj_mma_type<T>::mma(acc[i][j], frag, s ? wv[j].z : wv[j].x, s ? wv[j].w : wv[j].y);
                    }
                }
            }
        }
        const int n0 = tn0 + warp * NT * 8;

        if (gridDim.y > 1) {
            /* split: gridDim.x is tiles_n, one tile a block */
            const unsigned splits = gridDim.y;
            const sj_i64 tile = tile_n + (sj_i64)tiles_n * blockIdx.z;
            float4 *mine = parts + (tile * splits + blockIdx.y) * (MT * NT * SJ_SKINNY_THREADS) + threadIdx.x;
#pragma unroll
            for (int i = 0; i < MT; i++)
#pragma unroll
                for (int j = 0; j < NT; j++)
                    __stcg(mine + (i * NT + j) * SJ_SKINNY_THREADS,
                           make_float4(acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3]));
            __threadfence();
            __syncthreads();
            __shared__ bool last;
            if (threadIdx.x == 0) {
                last = atomicAdd(&arrivals[tile], 1u) == splits - 1;
                if (last)
                    arrivals[tile] = 0u;
            }
            __syncthreads();
            if (!last)
                return;
            __threadfence();
            /* the splits' loads are independent, so a few are in flight at once */
            const float4 *all = parts + tile * splits * (MT * NT * SJ_SKINNY_THREADS) + threadIdx.x;
#pragma unroll
            for (int i = 0; i < MT; i++)
#pragma unroll
                for (int j = 0; j < NT; j++)
                    acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
#pragma unroll 4
            for (unsigned s = 0; s < splits; s++)
#pragma unroll
                for (int i = 0; i < MT; i++)
#pragma unroll
                    for (int j = 0; j < NT; j++) {
                        const float4 v = __ldcg(all + ((sj_i64)s * MT * NT + i * NT + j) * SJ_SKINNY_THREADS);
                        acc[i][j][0] += v.x;
                        acc[i][j][1] += v.y;
                        acc[i][j][2] += v.z;
                        acc[i][j][3] += v.w;
                    }
        }

        /* Element e of tile (i, j) is C[m0 + 16 i + g + 8 (e / 2)][n0 + 8 j + 2 t + e % 2]. */
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int row = m0 + i * 16 + g + 8 * (e >> 1), col = n0 + j * 8 + 2 * t + (e & 1);
                    if (row < m && col < n) {
                        CT *out = c + (sj_i64)row * ldc + col;
                        float v = alpha * acc[i][j][e];
                        if (beta != 0.0f)
                            v += beta * sj_to_float(*out);
                        *out = sj_from_float<CT>(v);
                    }
                }
    }
#endif
}

#define SJ_SKINNY_KERNEL(T, sfx, CT, csfx, MT)                                                                 \
    SJ_KERNEL(gemm_skinny_m##MT##_##sfx##_##csfx)(                                                          \
    extern "C" __global__ void __launch_bounds__(SJ_SKINNY_THREADS, SJ_SKINNY_BLOCKS_PER_SM)                 \
        gemm_skinny_m##MT##_##sfx##_##csfx(const T *a, sj_i64 lda, const T *w, sj_i64 ldw, CT *c, sj_i64 ldc, \
                                           int m, int n, int k, float alpha, float beta, int split_chunks,    \
                                           float4 *parts, unsigned *arrivals)                                 \
    {                                                                                                        \
        sj_skinny_gemm<T, CT, MT / 16>(a, lda, w, ldw, c, ldc, m, n, k, alpha, beta, split_chunks, parts,     \
                                       arrivals);                                                            \
    })

/* A's rows a block takes (16, 32 or 64), for each 16-bit type and C in it
 * or in f32. */
#define SJ_SKINNY_KERNELS(T, sfx)                                                                              \
    SJ_SKINNY_KERNEL(T, sfx, T, sfx, 16)                                                                     \
    SJ_SKINNY_KERNEL(T, sfx, T, sfx, 32)                                                                     \
    SJ_SKINNY_KERNEL(T, sfx, T, sfx, 64)                                                                     \
    SJ_SKINNY_KERNEL(T, sfx, float, f32, 16)                                                                 \
    SJ_SKINNY_KERNEL(T, sfx, float, f32, 32)                                                                 \
    SJ_SKINNY_KERNEL(T, sfx, float, f32, 64)

SJ_SKINNY_KERNELS(sj_half, f16)
SJ_SKINNY_KERNELS(sj_bf16, bf16)
