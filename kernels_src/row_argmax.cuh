/* Argmax order and a block's argmax over one row, shared by greedy
 * decoding (model.cu's argmax_rows) and sampling (sample.cu), whose
 * greedy rows must pick the same token. */
#pragma once

#include "ssmjit_types.cuh"

/* By bits, so that no compile option can change what counts as NaN. */
__device__ __forceinline__ bool sj_isnan(float v)
{
    return (__float_as_uint(v) & 0x7fffffffu) > 0x7f800000u;
}

/* Whether (v, i) comes before (bv, bi) in argmax order: NaN above every
 * number (as torch.argmax), then larger values, then smaller indices.  A
 * total order, so any reduction tree picks the same element. */
__device__ __forceinline__ bool sj_argmax_better(float v, int i, float bv, int bi)
{
    if (sj_isnan(v))
        return !sj_isnan(bv) || i < bi;
    if (sj_isnan(bv))
        return false;
    return v > bv || (v == bv && i < bi);
}

__device__ __forceinline__ void sj_argmax_take(float &bv, int &bi, float v, int i)
{
    if (sj_argmax_better(v, i, bv, bi)) {
        bv = v;
        bi = i;
    }
}

/* A best so far: value and index. */
struct sj_argmax_part {
    float v;
    int i;
};

/* A thread-block cluster's barrier (sm_90 on): every thread of every
 * block of the cluster arrives, and shared-memory writes before it are
 * seen by sj_cluster_load after it.  Before sm_90 (no clusters) nothing. */
__device__ __forceinline__ void sj_cluster_sync()
{
#if __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

/* The 4 bytes at p's place in the shared memory of the cluster's block
 * `rank` (sm_90 on; the caller launches clusters only there). */
__device__ __forceinline__ unsigned sj_cluster_load(const void *p, unsigned rank)
{
    unsigned bits = 0;
#if __CUDA_ARCH__ >= 900
    const unsigned local = (unsigned)__cvta_generic_to_shared(p);
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(bits) : "r"(remote) : "memory");
#endif
    return bits;
}

/* v's order-preserving unsigned form, -0 tying +0: larger for a larger
 * number (NaN's place is the caller's). */
__device__ __forceinline__ unsigned sj_order_bits(float v)
{
    unsigned b = __float_as_uint(v);
    if ((b & 0x7fffffffu) == 0)
        b = 0;
    return b ^ ((b >> 31) ? 0xffffffffu : 0x80000000u);
}

/* v's place in argmax order among values alone, larger first: every NaN
 * on top, the numbers by sj_order_bits below it, so that a thread that
 * meets its elements in index order keeps the first of a key by taking
 * only larger keys.  0 is below every element's key; sj_argmax_value
 * takes a key back to a value of that place. */
__device__ __forceinline__ unsigned sj_argmax_key(float v)
{
    return sj_isnan(v) ? 0xffffffffu : sj_order_bits(v);
}
__device__ __forceinline__ float sj_argmax_value(unsigned k)
{
    return __uint_as_float(k == 0xffffffffu ? 0x7fffffffu : k ^ ((k >> 31) ? 0x80000000u : 0xffffffffu));
}
__device__ __forceinline__ void sj_argmax_take_key(unsigned &bk, int &bi, float v, int i)
{
    const unsigned k = sj_argmax_key(v);
    if (k > bk) {
        bk = k;
        bi = i;
    }
}

/* The first element of xr[0 .. cols) in argmax order, its value in bv (a
 * NaN as the quiet NaN 0x7fffffff, -0 as +0) and column in bi, in every
 * thread of the block (blockDim.x a multiple of 32; cols 0 gives -inf and
 * 0x7fffffff, which every element beats in sj_argmax_take).  Every
 * thread must call it; it may be called again at once (for the next
 * row). */
template <typename T> __device__ void sj_row_argmax(const T *xr, sj_i64 cols, float &bv, int &bi)
{
    __shared__ float warp_v[32];
    __shared__ int warp_i[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    /* a thread's elements by keys, in increasing index order (see
     * sj_argmax_key): a comparison of values and indices with NaN's
     * rules took about 30 instructions an element (3.6 M warp
     * instructions for 64 rows of 50280, bench/NOTES.md's decode round
     * 16) */
    unsigned bk = 0;
    bi = 0x7fffffff;
    const sj_i64 step = blockDim.x;
    /* Where the row starts 16-byte aligned, 16-byte pieces, four in
     * flight a thread (a 1024-thread block asks for a 50280-element
     * 16-bit row in two round trips; eight took 120 registers, above the
     * 64 a thread of such a block has): with one element a load, a
     * block's loads in flight were a few KB. */
    constexpr int E = 16 / (int)sizeof(T), DEPTH = 4;
    sj_i64 j = threadIdx.x;
    if ((sj_u64)xr % 16 == 0) {
        const uint4 *xp = (const uint4 *)xr;
        const sj_i64 pieces = cols / E;
        for (sj_i64 p = threadIdx.x; p < pieces; p += DEPTH * step) {
            uint4 v[DEPTH];
#pragma unroll
            for (int q = 0; q < DEPTH; ++q)
                v[q] = p + q * step < pieces ? xp[p + q * step] : make_uint4(0, 0, 0, 0);
#pragma unroll
            for (int q = 0; q < DEPTH; ++q)
                if (p + q * step < pieces)
#pragma unroll
                    for (int e = 0; e < E; ++e)
                        sj_argmax_take_key(bk, bi, sj_lane<T>(v[q], e), (int)((p + q * step) * E + e));
        }
        j += pieces * E; /* the elements past the last whole piece */
    }
    /* four loads in flight a thread: a lone row (batch-1 decoding) is
     * otherwise bound by one load's latency per element */
    for (; j + 3 * step < cols; j += 4 * step) {
        const float v0 = sj_to_float(xr[j]), v1 = sj_to_float(xr[j + step]);
        const float v2 = sj_to_float(xr[j + 2 * step]), v3 = sj_to_float(xr[j + 3 * step]);
        sj_argmax_take_key(bk, bi, v0, (int)j);
        sj_argmax_take_key(bk, bi, v1, (int)(j + step));
        sj_argmax_take_key(bk, bi, v2, (int)(j + 2 * step));
        sj_argmax_take_key(bk, bi, v3, (int)(j + 3 * step));
    }
    for (; j < cols; j += step)
        sj_argmax_take_key(bk, bi, sj_to_float(xr[j]), (int)j);
    /* a thread without elements holds the identity of sj_argmax_take */
    bv = bi == 0x7fffffff ? __uint_as_float(0xff800000u) : sj_argmax_value(bk);
    for (int o = 16; o > 0; o >>= 1) {
        const float v = __shfl_xor_sync(0xffffffffu, bv, o);
        const int i = __shfl_xor_sync(0xffffffffu, bi, o);
        sj_argmax_take(bv, bi, v, i);
    }
    __syncthreads(); /* the previous call's readers of warp_v are done */
    if (lane == 0) {
        warp_v[warp] = bv;
        warp_i[warp] = bi;
    }
    __syncthreads();
    bv = warp_v[0];
    bi = warp_i[0];
    for (unsigned w = 1; w < (blockDim.x >> 5); ++w)
        sj_argmax_take(bv, bi, warp_v[w], warp_i[w]);
}
