/* Shared by the selective-scan modules (scan_fwd, scan_bwd): the parameter
 * block, token/segment bookkeeping, and the forward scan, which the backward
 * module also instantiates (without output) to rebuild the checkpoint when
 * the caller did not keep one.
 *
 * Layout: activations are [B, L, X] with a row stride per tensor (elements
 * between consecutive tokens); A [D, N], D, delta_bias [D], states
 * [S, D, N] and the checkpoint [B, nchunks - 1, D, N] are contiguous f32.
 * A "segment" is one independent sequence: a batch row, or with cu_seqlens
 * one packed sequence of the single batch row.  The state starts from
 * initial_state[seg] (or 0) at each segment's first token. */
#pragma once

#include "ssmjit_types.cuh"

/* Tokens per chunk: the unit of shared-memory staging and the checkpoint
 * interval (SCAN_CHUNK in src/ops_scan.c). */
#define SJ_SCAN_CHUNK 16
#define SJ_LOG2E 1.4426950408889634f

/* Kernel argument block, passed by value.  Every field is 8 bytes so that
 * the host mirror (struct sj_scan_params in src/ops_scan.c) has the same
 * layout; keep the two in the same order. */
struct sj_scan_params {
    /* forward inputs */
    const void *u, *delta, *z, *B, *C;
    sj_i64 su, sdelta, sz, sB, sC;
    const float *A, *Dv, *dbias, *init;
    const int *cu;
    /* forward outputs */
    void *y;
    sj_i64 sy;
    float *final_state, *ckpt;
    /* backward */
    const void *dy;
    sj_i64 sdy;
    const float *dfinal;
    void *du, *ddelta, *dz;
    sj_i64 sdu, sddelta, sdz;
    float *dinit;
    float *ws_bc, *ws_acc, *ws_dA, *ws_dD, *ws_db;
    /* extents and launch shape */
    sj_i64 L, D, N, nseq, softplus;
    sj_i64 G, BD, nb, NB, ndblk;
};
static_assert(sizeof(sj_scan_params) == 44 * 8, "host mirror in src/ops_scan.c");

enum { SJ_TOK_VALID = 1, SJ_TOK_START = 2, SJ_TOK_END = 4 };

/* Segment and flags of token t of batch row b.  With cu_seqlens the segment
 * is the last s with cu[s] <= t (empty segments never own a token). */
__device__ __forceinline__ int2 sj_token_info(const sj_scan_params &p, sj_i64 b, sj_i64 t)
{
    if (t >= p.L)
        return make_int2(0, 0);
    if (!p.cu)
        return make_int2((int)b, SJ_TOK_VALID | (t == 0 ? SJ_TOK_START : 0) |
                                     (t == p.L - 1 ? SJ_TOK_END : 0));
    int lo = 0, hi = (int)p.nseq - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) >> 1;
        if (p.cu[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return make_int2(lo, SJ_TOK_VALID | (p.cu[lo] == t ? SJ_TOK_START : 0) |
                             (p.cu[lo + 1] - 1 == t ? SJ_TOK_END : 0));
}

/* Calls f(seg) for every segment of this block's batch row that has no
 * token: its final state is its initial state (and d_initial_state its
 * d_final_state). */
template <typename F> __device__ __forceinline__ void sj_for_empty_segments(const sj_scan_params &p, F f)
{
    if (!p.cu) {
        if (p.L == 0)
            f((sj_i64)blockIdx.y);
        return;
    }
    for (sj_i64 s = 0; s < p.nseq; ++s)
        if (p.cu[s] == p.cu[s + 1])
            f(s);
}

/* Staging of one chunk through registers: issue() starts the global loads
 * of up to K items per thread, commit() waits for them and writes shared
 * memory, so the loads of the next chunk overlap the compute of this one.
 * Items beyond K per thread are loaded and stored synchronously in
 * commit(). */
template <int K, typename V> struct sj_stager {
    V v[K];

    template <typename Load> __device__ __forceinline__ void issue(int items, Load load)
    {
#pragma unroll
        for (int k = 0; k < K; ++k) {
            int e = threadIdx.x + k * blockDim.x;
            if (e < items)
                v[k] = load(e);
        }
    }

    template <typename Load, typename Store>
    __device__ __forceinline__ void commit(int items, Load load, Store store)
    {
#pragma unroll
        for (int k = 0; k < K; ++k) {
            int e = threadIdx.x + k * blockDim.x;
            if (e < items)
                store(e, v[k]);
        }
        for (int e = threadIdx.x + K * blockDim.x; e < items; e += blockDim.x)
            store(e, load(e));
    }
};

template <typename T> __device__ __forceinline__ float sj_ld(const void *base, sj_i64 i)
{
    return sj_to_float(((const T *)base)[i]);
}

template <typename T> __device__ __forceinline__ void sj_st(void *base, sj_i64 i, float v)
{
    ((T *)base)[i] = sj_from_float<T>(v);
}

/* Raw per-(token, channel) forward inputs of one staging item. */
struct sj_fwd_raw {
    float u, delta, z;
};

/* B and C values of one (token, state) staging item. */
struct sj_bc_raw {
    float b, c;
};

/* Loads B[t0 + t][n0 + j] and C[...] for item e = t * width + j, zero past
 * the sequence or past N. */
template <typename T>
__device__ __forceinline__ sj_bc_raw sj_load_bc(const sj_scan_params &p, sj_i64 b, sj_i64 t0, int width,
                                                sj_i64 n0, int e)
{
    sj_i64 t = t0 + e / width, n = n0 + e % width;
    sj_bc_raw r = {0.0f, 0.0f};
    if (t < p.L && n < p.N) {
        sj_i64 row = b * p.L + t;
        r.b = sj_ld<T>(p.B, row * p.sB + n);
        r.c = sj_ld<T>(p.C, row * p.sC + n);
    }
    return r;
}

__device__ __forceinline__ float sj_dt_of(const sj_scan_params &p, float delta, sj_i64 d)
{
    float x = delta + (p.dbias ? p.dbias[d] : 0.0f);
    return p.softplus ? sj_softplus(x) : x;
}

/* ------------------------------------------------------------------------ */
/* Forward scan                                                             */
/* ------------------------------------------------------------------------ */
/*
 * Block: BD channels (lanes, so loads and stores of a token are coalesced
 * across the warp) x G state groups (warps), NS states per thread in
 * registers, N padded to G * NS.  The block walks L in chunks of
 * SJ_SCAN_CHUNK tokens; each chunk's inputs are staged once in shared
 * memory (dt and the gate already transformed) and shared by the G groups,
 * while the loads of the next chunk are in flight.  With G > 1 the per-group
 * partial outputs are summed through shared memory after each chunk.
 *
 * Shared memory, per stage buffer (two): B, C [TS][Npad]; u, dt, gate
 * [TS][BD]; token info [TS] (int2); then one [TS][G][BD] partial-output
 * array when G > 1.  scan_fwd_smem_floats() in src/ops_scan.c mirrors it.
 */
template <int NS> struct sj_fwd_layout {
    int BD, G, Npad, buf;
    __device__ __forceinline__ sj_fwd_layout(const sj_scan_params &p)
        : BD((int)p.BD), G((int)p.G), Npad((int)p.G * NS),
          buf(2 * SJ_SCAN_CHUNK * (int)p.G * NS + 3 * SJ_SCAN_CHUNK * (int)p.BD + 2 * SJ_SCAN_CHUNK)
    {
    }
};

template <typename T, int NS, bool OUT>
__device__ __forceinline__ void sj_scan_fwd(const sj_scan_params &p)
{
    constexpr int TS = SJ_SCAN_CHUNK;
    extern __shared__ float4 sj_smem4[];
    float *smem = (float *)sj_smem4;
    const sj_fwd_layout<NS> lay(p);
    const int BD = lay.BD, G = lay.G, Npad = lay.Npad;
    const int tid = threadIdx.x, dl = tid % BD, g = tid / BD;
    const sj_i64 b = blockIdx.y, d0 = (sj_i64)blockIdx.x * BD, d = d0 + dl;
    const bool dok = d < p.D;
    const sj_i64 N = p.N, n0 = (sj_i64)g * NS;
    float *ypart = smem + 2 * lay.buf; /* [TS][G][BD], used when G > 1 */

    float A2[NS], h[NS];
#pragma unroll
    for (int k = 0; k < NS; ++k) {
        A2[k] = dok && n0 + k < N ? p.A[d * N + n0 + k] * SJ_LOG2E : 0.0f;
        h[k] = 0.0f;
    }
    const float Dd = dok && p.Dv ? p.Dv[d] : 0.0f;

    if (p.final_state && dok)
        sj_for_empty_segments(p, [&](sj_i64 s) {
            for (int k = 0; k < NS; ++k)
                if (n0 + k < N)
                    p.final_state[(s * p.D + d) * N + n0 + k] = p.init ? p.init[(s * p.D + d) * N + n0 + k] : 0.0f;
        });

    const sj_i64 nch = (p.L + TS - 1) / TS;
    if (nch == 0)
        return;

    /* Per-(token, channel) items: e = t * BD + dl, so each thread loads its
     * own channel (coalesced across lanes). */
    auto load_td = [&](sj_i64 c, int e) {
        sj_i64 t = c * TS + e / BD, dd = d0 + e % BD;
        sj_fwd_raw r = {0.0f, 0.0f, 0.0f};
        if (t < p.L && dd < p.D) {
            sj_i64 row = b * p.L + t;
            r.u = sj_ld<T>(p.u, row * p.su + dd);
            r.delta = sj_ld<T>(p.delta, row * p.sdelta + dd);
            if (OUT && p.z)
                r.z = sj_ld<T>(p.z, row * p.sz + dd);
        }
        return r;
    };
    auto store_td = [&](float *buf, sj_i64 c, int e, const sj_fwd_raw &r) {
        sj_i64 t = c * TS + e / BD, dd = d0 + e % BD;
        bool ok = t < p.L && dd < p.D;
        float *su = buf + 2 * TS * Npad, *sdt = su + TS * BD, *sgz = sdt + TS * BD;
        su[e] = r.u;
        sdt[e] = ok ? sj_dt_of(p, r.delta, dd) : 0.0f;
        if (OUT)
            sgz[e] = p.z ? sj_silu(r.z) : 1.0f;
    };
    auto store_bc = [&](float *buf, int e, const sj_bc_raw &r) {
        buf[e] = r.b;
        buf[TS * Npad + e] = r.c;
    };
    auto store_info = [&](float *buf, sj_i64 c) {
        int2 *info = (int2 *)(buf + 2 * TS * Npad + 3 * TS * BD);
        if (tid < TS)
            info[tid] = sj_token_info(p, b, c * TS + tid);
    };

    sj_stager<16, sj_fwd_raw> st_td;
    sj_stager<4, sj_bc_raw> st_bc;
    const int items_td = TS * BD, items_bc = TS * Npad;
    auto issue = [&](sj_i64 c) {
        st_td.issue(items_td, [&](int e) { return load_td(c, e); });
        st_bc.issue(items_bc, [&](int e) { return sj_load_bc<T>(p, b, c * TS, Npad, 0, e); });
    };
    auto commit = [&](sj_i64 c, float *buf) {
        st_td.commit(items_td, [&](int e) { return load_td(c, e); },
                     [&](int e, const sj_fwd_raw &r) { store_td(buf, c, e, r); });
        st_bc.commit(items_bc, [&](int e) { return sj_load_bc<T>(p, b, c * TS, Npad, 0, e); },
                     [&](int e, const sj_bc_raw &r) { store_bc(buf, e, r); });
        store_info(buf, c);
    };

    issue(0);
    commit(0, smem);
    __syncthreads();

    for (sj_i64 c = 0; c < nch; ++c) {
        float *buf = smem + (c & 1) * lay.buf;
        const float *sB = buf, *sC = buf + TS * Npad, *su = sC + TS * Npad, *sdt = su + TS * BD,
                    *sgz = sdt + TS * BD;
        const int2 *info = (const int2 *)(sgz + TS * BD);
        if (c + 1 < nch)
            issue(c + 1);

#pragma unroll 2
        for (int i = 0; i < TS; ++i) {
            const int2 ti = info[i];
            if (!(ti.y & SJ_TOK_VALID))
                break;
            const sj_i64 t = c * TS + i;
            if (ti.y & SJ_TOK_START) {
#pragma unroll
                for (int k = 0; k < NS; ++k)
                    h[k] = p.init && dok && n0 + k < N ? p.init[((sj_i64)ti.x * p.D + d) * N + n0 + k] : 0.0f;
            }
            const float u = su[i * BD + dl], dt = sdt[i * BD + dl], dtu = dt * u;
            const float4 *B4 = (const float4 *)(sB + i * Npad + n0);
            const float4 *C4 = (const float4 *)(sC + i * Npad + n0);
            float yp = 0.0f;
#pragma unroll
            for (int q = 0; q < NS / 4; ++q) {
                const float4 bb = B4[q];
                const float bv[4] = {bb.x, bb.y, bb.z, bb.w};
                float cv[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                if (OUT) {
                    const float4 cc = C4[q];
                    cv[0] = cc.x, cv[1] = cc.y, cv[2] = cc.z, cv[3] = cc.w;
                }
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const int k = 4 * q + j;
                    h[k] = fmaf(exp2f(dt * A2[k]), h[k], dtu * bv[j]);
                    if (OUT)
                        yp = fmaf(cv[j], h[k], yp);
                }
            }
            if ((ti.y & SJ_TOK_END) && p.final_state && dok) {
#pragma unroll
                for (int k = 0; k < NS; ++k)
                    if (n0 + k < N)
                        p.final_state[((sj_i64)ti.x * p.D + d) * N + n0 + k] = h[k];
            }
            if (OUT) {
                if (G == 1) {
                    if (dok)
                        sj_st<T>(p.y, (b * p.L + t) * p.sy + d, (yp + Dd * u) * sgz[i * BD + dl]);
                } else {
                    ypart[(i * G + g) * BD + dl] = yp;
                }
            }
        }

        if (p.ckpt && c + 1 < nch && dok) {
#pragma unroll
            for (int k = 0; k < NS; ++k)
                if (n0 + k < N)
                    p.ckpt[((b * (nch - 1) + c) * p.D + d) * N + n0 + k] = h[k];
        }

        if (OUT && G > 1) {
            __syncthreads();
            for (int e = tid; e < TS * BD; e += blockDim.x) {
                const int i = e / BD, l = e % BD;
                const sj_i64 t = c * TS + i, dd = d0 + l;
                if (t >= p.L || dd >= p.D)
                    continue;
                float y = 0.0f;
                for (int gg = 0; gg < G; ++gg)
                    y += ypart[(i * G + gg) * BD + l];
                const float Dl = p.Dv ? p.Dv[dd] : 0.0f;
                sj_st<T>(p.y, (b * p.L + t) * p.sy + dd, (y + Dl * su[e]) * sgz[e]);
            }
        }

        if (c + 1 < nch)
            commit(c + 1, smem + ((c + 1) & 1) * lay.buf);
        __syncthreads();
    }
}

/* Kernel names: <prefix>_ns<NS>_<dtype>. */
#define SJ_SCAN_FWD_KERNEL(prefix, OUT, NS, T, sfx)                                                  \
    extern "C" __global__ void __launch_bounds__(512) prefix##_ns##NS##_##sfx(const sj_scan_params p) \
    {                                                                                                 \
        sj_scan_fwd<T, NS, OUT>(p);                                                                   \
    }
