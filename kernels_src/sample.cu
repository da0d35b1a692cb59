/* Token sampling, forward role: the sj_sample_rows op, whose rules are
 * written in src/ops/ops_sample.h.  How the GPU follows them:
 *
 * One block a row.  Each token's place in the ranking (logit descending,
 * index ascending) is a 64-bit rank key, unique per token: the logit's
 * order-preserving integer form above, the complemented index below.  A
 * kept set is every token whose key is at least a threshold, found by a
 * radix search from the top, 8 bits a pass, over shared histograms:
 * top-k's from token counts, top-p's from weights.  A pass stops early
 * once the tokens left in the chosen bin are all in or the bin holds one.
 * Weights are fixed point, the best token 2^32, so every sum is an
 * integer: histograms may take atomics and the draw a prefix sum in any
 * order, and the token is the same from run to run. */
#include "row_argmax.cuh"

/* A row's parameters; the host mirror is sj_sample_params in
 * src/ops/ops_sample.h. */
struct sj_sample_params {
    float temperature;
    int top_k;
    float top_p;
    unsigned pad;
    sj_u64 seed;
};
static_assert(sizeof(sj_sample_params) == 24, "host mirror in src/ops/ops_sample.h");

/* Threads a block (SJ_SAMPLE_THREADS in src/ops/ops_sample.h too). */
#define SJ_SAMPLE_THREADS 1024
#define SJ_SAMPLE_BINS 256
#define SJ_SAMPLE_WARPS (SJ_SAMPLE_THREADS / 32)

/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1,
 * 2, 3", SC 2011) with Random123's constants. */
__device__ __forceinline__ uint4 sj_philox4x32_10(uint4 c, uint2 k)
{
#pragma unroll
    for (int r = 0; r < 10; ++r) {
        if (r) {
            k.x += 0x9E3779B9u;
            k.y += 0xBB67AE85u;
        }
        const unsigned hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
        const unsigned hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
        c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}

/* The row's draw u = bits 2^-64 with the 53 bits of u at the top of the
 * word: floor(total u) is then the high half of total * bits. */
__device__ __forceinline__ sj_u64 sj_sample_bits(sj_u64 seed, sj_u64 step, sj_i64 row)
{
    const uint4 r = sj_philox4x32_10(make_uint4((unsigned)step, (unsigned)(step >> 32), (unsigned)row, 0u),
                                     make_uint2((unsigned)seed, (unsigned)(seed >> 32)));
    return ((((sj_u64)r.y << 32) | r.x) >> 11) << 11;
}

/* Token j's rank key: larger for a larger logit, then for a smaller index. */
__device__ __forceinline__ sj_u64 sj_rank_key(float v, sj_i64 j)
{
    return ((sj_u64)sj_order_bits(v) << 32) | (unsigned)~(unsigned)j;
}

/* What the rows' passes share. */
struct sj_sample_row {
    float m;     /* the largest logit */
    float scale; /* log2(e) / temperature, kept finite */
};

/* w = exp((v - m) / T) in fixed point, 2^32 for the best token.  A NaN
 * exponent (-inf logit at T = +inf) and anything below 2^-64 weigh 0. */
__device__ __forceinline__ sj_u64 sj_fixed_weight(float v, const sj_sample_row &s)
{
    const float e = (v - s.m) * s.scale;
    return e > -64.0f ? __float2ull_rn(sj_exp2_ftz(e) * 4294967296.0f) : 0ull;
}

struct sj_sample_shared {
    unsigned count[SJ_SAMPLE_BINS], sum_lo[SJ_SAMPLE_BINS], sum_hi[SJ_SAMPLE_BINS];
    sj_u64 warp_sum[SJ_SAMPLE_WARPS];
    sj_u64 target, above;
    unsigned digit;
    int token;
};

/* Adds n tokens weighing w together to bin d.  The weights are summed in
 * two 32-bit words, the low one's carry into the high: with 64-bit shared
 * atomics, a pass that put most of a row into one bin took 700 us on an
 * H200. */
__device__ __forceinline__ void sj_bin_add(sj_sample_shared &sh, unsigned d, sj_u64 w, unsigned n, bool weighted)
{
    atomicAdd(&sh.count[d], n);
    if (weighted) {
        const unsigned lo = (unsigned)w, old = atomicAdd(&sh.sum_lo[d], lo);
        const unsigned hi = (unsigned)(w >> 32) + (old + lo < old ? 1u : 0u);
        if (hi)
            atomicAdd(&sh.sum_hi[d], hi);
    }
}

/* Bin b's tokens, or their weight. */
__device__ __forceinline__ sj_u64 sj_bin_value(const sj_sample_shared &sh, int b, bool weighted)
{
    return weighted ? ((sj_u64)sh.sum_hi[b] << 32) | sh.sum_lo[b] : (sj_u64)sh.count[b];
}

/* Sets sh.digit to the largest bin d with above + sum[d..255] >= target
 * and sh.above to above + sum[d+1..255], from warp 0 (lane l holds bins
 * 8l .. 8l + 7).  Where no bin reaches it (never, for a target that the
 * pass's tokens reach), bin 0. */
__device__ __forceinline__ void sj_pick_bin(sj_sample_shared &sh, sj_u64 above, sj_u64 target, bool weighted)
{
    const int lane = threadIdx.x & 31;
    sj_u64 own = 0;
#pragma unroll
    for (int b = 0; b < 8; ++b)
        own += sj_bin_value(sh, lane * 8 + b, weighted);
    sj_u64 suffix = own; /* bins of lanes >= this one */
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const sj_u64 t = __shfl_down_sync(0xffffffffu, suffix, o);
        if (lane + o < 32)
            suffix += t;
    }
    const unsigned reach = __ballot_sync(0xffffffffu, above + suffix >= target);
    const int at = reach ? 31 - __clz((int)reach) : 0;
    if (lane == at) {
        sj_u64 acc = above + suffix - own;
        int d = lane * 8;
        for (int b = 7; b >= 0; --b) {
            const sj_u64 v = sj_bin_value(sh, lane * 8 + b, weighted);
            if (acc + v >= target) {
                d = lane * 8 + b;
                break;
            }
            acc += v;
        }
        sh.digit = (unsigned)d;
        sh.above = acc;
    }
}

/* The largest threshold c such that the tokens with rank key >= c (among
 * those >= floor) reach the target: top_p = 0 counts tokens against
 * `target`; 0 < top_p < 1 sums weights against ceil(top_p * their total
 * over keys >= floor), which the first pass finds.  Every thread gets the
 * same c. */
template <typename T>
__device__ sj_u64 sj_rank_search(const T *xr, sj_i64 cols, const sj_sample_row &s, sj_u64 floor, sj_u64 target,
                                 float top_p, sj_sample_shared &sh)
{
    const bool weighted = top_p > 0.0f;
    sj_u64 prefix = 0, above = 0;
    for (int shift = 56; shift >= 0; shift -= 8) {
        const sj_u64 high = shift == 56 ? 0ull : ~0ull << (shift + 8);
        for (int b = threadIdx.x; b < SJ_SAMPLE_BINS; b += blockDim.x)
            sh.count[b] = sh.sum_lo[b] = sh.sum_hi[b] = 0;
        __syncthreads();
        /* a thread's tokens in a row that fall into one bin go in with one
         * add: early passes put most of a row into a few bins */
        unsigned run_bin = SJ_SAMPLE_BINS, run_n = 0;
        sj_u64 run_w = 0;
        for (sj_i64 j = threadIdx.x; j < cols; j += blockDim.x) {
            const float v = sj_to_float(xr[j]);
            const sj_u64 c = sj_rank_key(v, j);
            if (c < floor || ((c ^ prefix) & high))
                continue;
            const sj_u64 w = weighted ? sj_fixed_weight(v, s) : 1ull;
            if (w == 0)
                continue;
            const unsigned d = (unsigned)(c >> shift) & (SJ_SAMPLE_BINS - 1);
            if (d != run_bin) {
                if (run_n)
                    sj_bin_add(sh, run_bin, run_w, run_n, weighted);
                run_bin = d;
                run_w = 0;
                run_n = 0;
            }
            run_w += w;
            run_n++;
        }
        if (run_n)
            sj_bin_add(sh, run_bin, run_w, run_n, weighted);
        __syncthreads();
        if (threadIdx.x < 32) {
            if (weighted && shift == 56) {
                sj_u64 total = 0;
                for (int b = threadIdx.x; b < SJ_SAMPLE_BINS; b += 32)
                    total += sj_bin_value(sh, b, true);
                for (int o = 16; o > 0; o >>= 1)
                    total += __shfl_xor_sync(0xffffffffu, total, o);
                const double need = ceil((double)top_p * (double)total);
                target = need < 1.0 ? 1ull : need >= (double)total ? total : (sj_u64)need;
            }
            sj_pick_bin(sh, above, target, weighted);
            if (threadIdx.x == 0)
                sh.target = target;
        }
        __syncthreads();
        const unsigned d = sh.digit;
        const sj_u64 bin = sj_bin_value(sh, (int)d, weighted);
        const unsigned in_bin = sh.count[d];
        above = sh.above;
        target = sh.target;
        prefix |= (sj_u64)d << shift;
        __syncthreads(); /* all have read the bins before the next pass clears them */
        if (in_bin <= 1 || above + bin == target)
            break;
    }
    return prefix;
}

/* The draw: the first token (by index) with key >= thr whose running sum
 * of kept weights exceeds u times their total.  Warp w sums a contiguous
 * chunk of the row; the warp whose chunk holds the crossing walks it 32
 * tokens at a time. */
template <typename T>
__device__ int sj_draw(const T *xr, sj_i64 cols, const sj_sample_row &s, sj_u64 thr, sj_u64 bits,
                       sj_sample_shared &sh)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const sj_i64 chunk = ((cols + warps - 1) / warps + 31) / 32 * 32;
    const sj_i64 lo = warp * chunk, hi = lo + chunk < cols ? lo + chunk : cols;
    sj_u64 own = 0;
    for (sj_i64 j = lo + lane; j < hi; j += 32) {
        const float v = sj_to_float(xr[j]);
        own += sj_rank_key(v, j) >= thr ? sj_fixed_weight(v, s) : 0ull;
    }
    for (int o = 16; o > 0; o >>= 1)
        own += __shfl_xor_sync(0xffffffffu, own, o);
    if (lane == 0)
        sh.warp_sum[warp] = own;
    __syncthreads();
    sj_u64 before = 0, total = 0;
    for (int w = 0; w < warps; ++w) {
        before += w < warp ? sh.warp_sum[w] : 0ull;
        total += sh.warp_sum[w];
    }
    const sj_u64 t = __umul64hi(total, bits);
    if (before <= t && t - before < own) {
        sj_u64 base = before; /* <= t: no earlier token crossed */
        for (sj_i64 j0 = lo; j0 < hi; j0 += 32) {
            const sj_i64 j = j0 + lane;
            sj_u64 run = 0;
            if (j < hi) {
                const float v = sj_to_float(xr[j]);
                run = sj_rank_key(v, j) >= thr ? sj_fixed_weight(v, s) : 0ull;
            }
            for (int o = 1; o < 32; o <<= 1) {
                const sj_u64 n = __shfl_up_sync(0xffffffffu, run, o);
                if (lane >= o)
                    run += n;
            }
            const unsigned past = __ballot_sync(0xffffffffu, base + run > t);
            if (past) {
                if (lane == __ffs((int)past) - 1)
                    sh.token = (int)j;
                break;
            }
            base += __shfl_sync(0xffffffffu, run, 31);
        }
    }
    __syncthreads();
    return sh.token;
}

/* One block a row, grid-strided over rows; blockDim.x = SJ_SAMPLE_THREADS. */
template <typename T>
__device__ void sample_rows(const T *x, sj_i64 sx, const sj_sample_params *params, sj_u64 *steps, int *out,
                            sj_i64 rows, sj_i64 cols)
{
    __shared__ sj_sample_shared sh;
    for (sj_i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T *xr = x + row * sx;
        const sj_sample_params p = params[row];
        const sj_u64 step = steps[row];
        sj_sample_row s;
        int token;
        sj_row_argmax(xr, cols, s.m, token);
        const bool finite = (__float_as_uint(s.m) & 0x7f800000u) != 0x7f800000u;
        if (p.temperature > 0.0f && p.top_k != 1 && finite) {
            s.scale = fminf(__fdiv_rn(SJ_LOG2E, p.temperature), 3.4028234e38f);
            sj_u64 thr = 0;
            if (p.top_k > 1 && p.top_k < cols)
                thr = sj_rank_search(xr, cols, s, 0ull, (sj_u64)p.top_k, 0.0f, sh);
            if (p.top_p > 0.0f && p.top_p < 1.0f) {
                const sj_u64 cut = sj_rank_search(xr, cols, s, thr, 0ull, p.top_p, sh);
                thr = cut > thr ? cut : thr;
            }
            token = sj_draw(xr, cols, s, thr, sj_sample_bits(p.seed, step, row), sh);
        }
        __syncthreads(); /* every thread has read steps[row] */
        if (threadIdx.x == 0) {
            out[row] = token;
            steps[row] = step + 1;
        }
    }
}

#define SJ_SAMPLE_KERNELS(T, sfx, unused)                                                                  \
    SJ_KERNEL(sample_rows_##sfx)(                                                                          \
    extern "C" __global__ void __launch_bounds__(SJ_SAMPLE_THREADS)                                        \
        sample_rows_##sfx(const T *x, sj_i64 sx, const sj_sample_params *params, sj_u64 *steps, int *out,  \
                          sj_i64 rows, sj_i64 cols)                                                        \
    {                                                                                                      \
        sample_rows<T>(x, sx, params, steps, out, rows, cols);                                             \
    })

SJ_FOR_EACH_DTYPE(SJ_SAMPLE_KERNELS, 0)
