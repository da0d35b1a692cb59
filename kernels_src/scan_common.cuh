/* Shared by the selective-scan modules (scan_fwd, scan_bwd): the parameter
 * block, token/segment bookkeeping, and the forward scan, which the backward
 * module also instantiates (without output) to rebuild the checkpoint when
 * the caller did not keep one.
 *
 * Layout: activations are [B, L, X] with a row stride per tensor (elements
 * between consecutive tokens), batch row b's tokens starting `pitch`
 * rows after row b - 1's (L, or more for windows of longer sequences);
 * A [D, N], D, delta_bias [D], states
 * [S, D, N] and the checkpoint [B, nchunks, D, N] (the state after each
 * chunk, the last one's too, so that a row's segments are rows of a view
 * with the same layout) are contiguous f32.
 * A "segment" is one independent sequence: a batch row, or with cu_seqlens
 * one packed sequence of the single batch row.  The state starts from
 * initial_state[seg] (or 0) at each segment's first token. */
#pragma once

#include "chain.cuh"
#include "copy_async.cuh"
#include "ssmjit_types.cuh"

/* Tokens per chunk: the unit of shared-memory staging and the checkpoint
 * interval (SJ_SCAN_CHUNK in src/ops/scan_internal.h). */
#define SJ_SCAN_CHUNK 16

/* Kernel argument block, passed by value.  Every field is 8 bytes so that
 * the host mirror (struct sj_scan_params in src/ops/scan_internal.h) has the same
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
    sj_i64 pitch; /* tokens from one batch row's start to the next's in the activations (>= L) */
    sj_i64 G, BD, nb, NB, ndblk, buffers;
    /* the split's first pass (scan_split_ends): each view row's sum of dt,
     * [R, D], or NULL */
    float *dtsum;
};
static_assert(sizeof(sj_scan_params) == 47 * 8, "host mirror in src/ops/scan_internal.h");

enum { SJ_TOK_VALID = 1, SJ_TOK_START = 2, SJ_TOK_END = 4 };

/* Whether token i of a chunk, with info ti, lets the chunk run plain: a
 * valid token inside its segment, or the row's first token starting one
 * (in the row's first chunk) or its last ending one (in its last chunk),
 * whose state enters before the chunk loop and leaves after it, in both
 * directions. */
__device__ __forceinline__ bool sj_plain_token(int2 ti, int i, bool row_first_chunk, bool row_last_chunk)
{
    const int edge = (row_first_chunk && i == 0 ? SJ_TOK_START : 0) |
                     (row_last_chunk && i == SJ_SCAN_CHUNK - 1 ? SJ_TOK_END : 0);
    return (ti.y & ~edge) == SJ_TOK_VALID;
}

/* v, its load complete here.  A state loaded just before an unrolled
 * chunk and first used inside it made ptxas wait there, at every chunk,
 * on the scoreboard that load shares with the next chunk's staged loads,
 * which are then in flight (bench/NOTES.md, "Scan shapes, round 16": a
 * third of the unsplit forward's time).  The multiply by 1 is exact but
 * for a denormal, which the chunk's flushing fmas would flush anyway. */
__device__ __forceinline__ float sj_settled(float v) { return __fmul_rn(v, 1.0f); }

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
 * of this thread's first K items, commit() waits for them and writes shared
 * memory, so the loads of the next chunk overlap the compute of this one.
 * Items are numbered per thread (0 .. items-1); those beyond K are loaded
 * and stored synchronously in commit(). */
template <int K, typename V> struct sj_stager {
    V v[K];

    template <typename Load> __device__ __forceinline__ void issue(int items, Load load)
    {
#pragma unroll
        for (int k = 0; k < K; ++k)
            if (k < items)
                v[k] = load(k);
    }

    /* ready(v) is taken of every held item, loaded or not (the forward's
     * ready_bc says why), then store(k, ready(v)) of the loaded ones. */
    template <typename Ready, typename Store> __device__ __forceinline__ void commit_held(int items, Ready ready, Store store)
    {
        decltype(ready(v[0])) w[K];
#pragma unroll
        for (int k = 0; k < K; ++k)
            w[k] = ready(v[k]);
#pragma unroll
        for (int k = 0; k < K; ++k)
            if (k < items)
                store(k, w[k]);
    }

    template <typename Load, typename Ready, typename Store>
    __device__ __forceinline__ void commit(int items, Load load, Ready ready, Store store)
    {
        commit_held(items, ready, store);
        for (int k = K; k < items; ++k)
            store(k, ready(load(k)));
    }
};

template <typename T> __device__ __forceinline__ void sj_st(void *base, sj_i64 i, float v)
{
    ((T *)base)[i] = sj_from_float<T>(v);
}


/* Shared-memory float4 view; callers keep offsets multiples of 4. */
__device__ __forceinline__ float4 *sj_f4(float *p) { return (float4 *)p; }
__device__ __forceinline__ const float4 *sj_f4(const float *p) { return (const float4 *)p; }

/* Raw forward inputs of one staging item: a group of 4 channels of one
 * token (16 bytes in f32, 8 in 16-bit). */
struct sj_fwd_raw {
    uint4 u, delta, z;
};

/* ------------------------------------------------------------------------ */
/* Forward scan                                                             */
/* ------------------------------------------------------------------------ */
/*
 * Block: BD channels (lanes, so loads and stores of a token are coalesced
 * across the warp) x G state groups (warps), NS states per thread in
 * registers, N padded to G * NS.  Without output (OUT = false: only the
 * states, for the checkpoint) the states are independent, so blockIdx.z
 * picks a slice of G * NS of them and the grid covers N in slices.
 * The block walks L in chunks of SJ_SCAN_CHUNK tokens; each chunk's inputs
 * are staged once in shared memory (dt and the gate already transformed)
 * and shared by the G groups, while the loads of the next chunk are in
 * flight.  The per-group partial outputs are summed through shared memory
 * after each chunk and y leaves in groups of 4 channels, like the inputs
 * came.
 *
 * Shared memory, per stage buffer (p.buffers of them, 1 or 2): B, C
 * [G][TS][NS]; u, dt, gate [TS][RS]; token info [TS] (int2); then with
 * output the partial outputs [TS][PS] (thread tid's in column tid), as
 * many as stage buffers where the parts are gated (GATED below), else
 * one; and delta_bias, D [BD] (zero when absent).  Rows of a fixed width
 * (RS >= ROW >= BD, PS >= MAXT) whatever the block's BD and G make every
 * shared-memory offset of a token in the recurrence a constant: with
 * run-time strides they took about 7 integer instructions a token, and
 * 6-9% of the time at the reference shape (bench/NOTES.md).  In 16-bit
 * with 8 and 16 states a thread the rows are SJ_FWD_PAD floats wider
 * than ROW and MAXT, so that consecutive tokens' rows start 16 bytes
 * apart in the banks (td_at in sj_scan_fwd says why).
 * sj_scan_fwd_smem_bytes() in src/ops/scan_launch.c mirrors it.
 */
#define SJ_FWD_PAD 4
template <typename T, int NS, int ROW> struct sj_fwd_layout {
    static constexpr int PAD = NS > 4 && sizeof(T) == 2 ? SJ_FWD_PAD : 0, RS = ROW + PAD;
    int BD, G, Npad, buf;
    __device__ __forceinline__ sj_fwd_layout(const sj_scan_params &p)
        : BD((int)p.BD), G((int)p.G), Npad((int)p.G * NS),
          buf(2 * SJ_SCAN_CHUNK * (int)p.G * NS + 3 * SJ_SCAN_CHUNK * RS + 2 * SJ_SCAN_CHUNK)
    {
    }
};

template <typename T, int NS, bool OUT, int MAXT, int ROW>
__device__ __forceinline__ void sj_scan_fwd(const sj_scan_params &p)
{
    constexpr int TS = SJ_SCAN_CHUNK;
    extern __shared__ float4 sj_smem4[];
    float *smem = (float *)sj_smem4;
    using layout = sj_fwd_layout<T, NS, ROW>;
    const layout lay(p);
    const int BD = lay.BD, G = lay.G, Npad = lay.Npad;
    constexpr int RS = layout::RS, PS = MAXT + layout::PAD;
    const int tid = threadIdx.x, dl = tid % BD, g = tid / BD;
    const sj_i64 b = blockIdx.y, d0 = (sj_i64)blockIdx.x * BD, d = d0 + dl;
    const bool dok = d < p.D;
    const sj_i64 N = p.N, nbase = (sj_i64)blockIdx.z * Npad, n0 = nbase + g * NS;
    /* With 8 or 16 states a thread each group's part of y is gated (and
     * holds D u in group 0), so that y is their sum and can leave after
     * the chunk's one barrier while other warps go on (bench/NOTES.md:
     * 16-bit 6% faster at the reference shape).  The 4-state f32 kernels
     * ran 28% slower so (ptxas scheduled their recurrence worse) and gate
     * y as it leaves. */
    constexpr bool GATED = OUT && NS > 4;
    const int nparts = GATED ? (int)p.buffers : 1;
    float *ypart = smem + (int)p.buffers * lay.buf; /* [nparts][TS][PS] */
    float *sbias = ypart + (OUT ? nparts * TS * PS : 0), *sDv = sbias + BD;

    /* Chained (the split's second pass, after its carry): the first
     * chunk is staged before the wait, as it reads only the op's inputs
     * (chain.cuh). */
    float A2[NS], h[NS];
#pragma unroll
    for (int k = 0; k < NS; ++k) {
        A2[k] = dok && n0 + k < N ? p.A[d * N + n0 + k] * SJ_LOG2E : 0.0f;
        h[k] = 0.0f;
    }

    if (p.final_state && dok)
        sj_for_empty_segments(p, [&](sj_i64 s) {
            sj_chain_wait(); /* rare: the general wait is after the first chunk's staging */
            for (int k = 0; k < NS; ++k)
                if (n0 + k < N)
                    p.final_state[(s * p.D + d) * N + n0 + k] = p.init ? p.init[(s * p.D + d) * N + n0 + k] : 0.0f;
        });

    const sj_i64 nch = (p.L + TS - 1) / TS;
    if (nch == 0) {
        sj_chain_wait(); /* every block waits (chain.cuh) */
        return;
    }
    const bool ck4 = sj_group_ok<float, 4>(p.ckpt, N);
    if (tid < BD) {
        sbias[tid] = dok && p.dbias ? p.dbias[d] : 0.0f;
        sDv[tid] = dok && p.Dv ? p.Dv[d] : 0.0f;
    }
    __syncthreads();

    /* Staging without divisions in the loop: u, dt and the gate in groups
     * of VE channels, group j of the chunk's [TS][BD] tile at token j /
     * (BD / VE) (a shift: BD and VE are powers of two), this thread taking
     * groups tid, tid + blockDim, ...  Groups are 16 bytes where that
     * still gives every thread a group, else 4 channels (8 bytes in
     * 16-bit), which spreads a chunk's softplus over all threads: with 4
     * states a thread, N = 16 makes 4 state groups, and 16-byte groups of
     * 16-bit values would leave half the threads idle. */
    constexpr int VW = sj_group16<T>(), VE = NS <= 4 ? 4 : VW;
    const int nthr = BD * G, vshift = __ffs(BD / VE) - 1, ngrp = TS * BD / VE;
    const int cnt_td = tid < ngrp ? (ngrp - tid + nthr - 1) / nthr : 0;
    const bool vu = sj_group_ok<T, VE>(p.u, p.su), vdelta = sj_group_ok<T, VE>(p.delta, p.sdelta),
               vz = sj_group_ok<T, VE>(p.z, p.sz), vy = sj_group_ok<T, VE>(p.y, p.sy);
    /* This thread's group k: token i of the chunk, channels col .. col +
     * VE - 1 of the block. */
    struct td_item {
        int i, col;
    };
    /* A group of 8 (16-bit values, 8 or 16 states a thread) is staged as
     * two 16-byte pieces of floats, 32 bytes from the next thread's: the 8
     * threads of a quarter-warp in one token's row met in pairs on the
     * same banks (two-way conflicts in every staging store and in y's
     * reads of the parts).  Their groups alternate between two tokens
     * instead, whose rows start 16 bytes apart in the banks (RS, PS), so
     * the quarter-warp's 8 pieces fall on distinct banks (bench/NOTES.md:
     * f16 2% faster at the reference shape). */
    auto td_at = [&](int k) {
        const int j = tid + k * nthr;
        static_assert(layout::PAD == 0 || VE == 8, "padded rows are for groups of 8");
        if (layout::PAD)
            return td_item{((j >> (vshift + 1)) << 1) | (j & 1), ((j >> 1) & (BD / VE - 1)) * VE};
        return td_item{j >> vshift, (j & (BD / VE - 1)) * VE};
    };
    auto load_td = [&](sj_i64 c, int k) {
        const td_item it = td_at(k);
        const sj_i64 t = c * TS + it.i, dc = d0 + it.col;
        sj_fwd_raw r = {};
        if (t < p.L) {
            const sj_i64 row = b * p.pitch + t;
            r.u = sj_load_group<T, VE>(p.u, row * p.su + dc, p.D - dc, vu);
            r.delta = sj_load_group<T, VE>(p.delta, row * p.sdelta + dc, p.D - dc, vdelta);
            if (OUT && p.z)
                r.z = sj_load_group<T, VE>(p.z, row * p.sz + dc, p.D - dc, vz);
        }
        return r;
    };
    /* chk = false: the caller knows the group is inside L and D. */
    auto store_td = [&](float *buf, sj_i64 c, int k, const sj_fwd_raw &r, bool chk) {
        const td_item it = td_at(k);
        const int i = it.i, col = it.col;
        const bool tok = !chk || c * TS + i < p.L;
        float *su = buf + 2 * TS * Npad, *sdt = su + TS * RS, *sgz = sdt + TS * RS;
        const int at = i * RS + col;
#pragma unroll
        for (int q = 0; q < VE / 4; ++q) {
            float uv[4], dtv[4], gv[4];
            const float4 bias = sj_f4(sbias + col)[q];
            const float bv[4] = {bias.x, bias.y, bias.z, bias.w};
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                uv[e] = sj_lane<T>(r.u, 4 * q + e);
                const float x = sj_lane<T>(r.delta, 4 * q + e) + bv[e];
                /* softplus whether or not the op takes it, then a
                 * selection: behind a branch each element's softplus ran
                 * after the last one's */
                float sp = sj_softplus(x);
                sj_computed_here(sp);
                dtv[e] = tok && (!chk || d0 + col + 4 * q + e < p.D) ? (p.softplus ? sp : x) : 0.0f;
                gv[e] = OUT && p.z ? sj_silu(sj_lane<T>(r.z, 4 * q + e)) : 1.0f;
            }
            sj_f4(su + at)[q] = make_float4(uv[0], uv[1], uv[2], uv[3]);
            sj_f4(sdt + at)[q] = make_float4(dtv[0], dtv[1], dtv[2], dtv[3]);
            if (OUT)
                sj_f4(sgz + at)[q] = make_float4(gv[0], gv[1], gv[2], gv[3]);
        }
    };
    /* B and C in groups of 4 states of one token (16 bytes in f32, 8 in
     * 16-bit; zero past N): item j of a chunk is group j % ng of token
     * j / ng of B, or of C from j = TS * ng on.  The held items' token,
     * group and array stay the same from chunk to chunk. */
    const int ng = Npad / 4, nbc = 2 * TS * ng;
    const int cnt_bc = tid < nbc ? (nbc - tid + nthr - 1) / nthr : 0;
    const bool vbc = sj_group_ok<T, 4>(p.B, p.sB) && sj_group_ok<T, 4>(p.C, p.sC);
    struct bc_item {
        int i, sh; /* token in the chunk; offset in the stage buffer */
        sj_i64 n;  /* first state */
        bool isC;
    };
    auto bc_at = [&](int k) {
        const int j = tid + k * nthr, isC = j >= TS * ng, r = j - isC * TS * ng, i = r / ng, q = r - i * ng;
        const int sh = isC * TS * Npad + (q / (NS / 4)) * TS * NS + i * NS + 4 * (q % (NS / 4));
        return bc_item{i, sh, nbase + 4 * q, isC != 0};
    };
    bc_item bc_held[NS / 4];
#pragma unroll
    for (int k = 0; k < NS / 4; ++k)
        bc_held[k] = bc_at(k);

    /* Fast chunks: the chunk inside L, the block's channels and states
     * inside D and N, every tensor in aligned whole groups, all of this
     * thread's items held, and strides that keep a chunk's offsets in 32
     * bits.  Their loads and stores skip the bounds checks and address an
     * item as a chunk base (the same across the block) plus a 32-bit
     * offset: the general path's 64-bit address and checks of every group
     * had cost more than the recurrence's own loads (bench/NOTES.md).  The
     * 4-state kernels store even a fast chunk's B and C on the general path:
     * with a second path there ptxas scheduled their f32 recurrence worse
     * (21% slower at D = 1536). */
    /* whether fast chunks address items by one 32-bit offset (fast_item) */
    constexpr bool FLAT = sizeof(T) == 2 && NS <= 8;
    const bool has_z = OUT && p.z;
    const sj_i64 smax = max(max(p.su, p.sdelta), max(max(p.sB, p.sC), max(has_z ? p.sz : 0, OUT ? p.sy : 0)));
    const bool fast_thr = d0 + BD <= p.D && nbase + Npad <= N && vu && vdelta && (!has_z || vz) &&
                          (!OUT || vy) && vbc && cnt_td <= NS / 4 && cnt_bc <= NS / 4 && smax < (1 << 26) &&
                          (b + 1) * p.pitch < (((sj_i64)1 << 31) - (FLAT ? max(p.D, N) : 0)) / max(smax, (sj_i64)1);
    auto fast_chunk = [&](sj_i64 c) { return fast_thr && (c + 1) * TS <= p.L; };
    /* Element 0 of token c * TS of this batch row in a tensor.  Where the
     * block's rows lie within 2^31 elements of every tensor's start (a
     * condition of fast chunks) its offset is a 32-bit product: at the
     * reference shape f32 4.7% faster (bench/NOTES.md). */
    auto chunk_base = [&](const void *x, sj_i64 stride, sj_i64 c) {
        return (const T *)x + ((int)b * (int)p.pitch + (int)c * TS) * (int)stride;
    };
    /* The offset of an item `at` elements from token c * TS of this batch
     * row (and from channel d0 where the tensor has channels, chan), from
     * the tensor's start.  The 16-bit 4- and 8-state kernels (FLAT) take
     * the whole offset in 32 bits (with 2^31 less max(D, N) in fast_thr),
     * widened once into the address: from the chunk base, d0 and the item
     * in 64-bit adds a load took 18 instructions ("Scan shapes, round 19");
     * so up to 2% faster in 16-bit at most rows, though the 8-state ones
     * spill 4 bytes at their 128 registers.  The f32 kernels keep the
     * 64-bit adds: with one offset they ran 7-22% slower at 8 states and
     * from 1.4% faster to 1.7% slower at 4; the 16-state ones keep them too
     * (round 22).  Those keep the adds as they were written, in branches
     * beside the FLAT ones: their machine code is then byte for byte the
     * code timed, where even a load routed through a lambda moved ptxas's
     * f32 schedule, which round 14 saw cost 21%. */
    auto fast_item = [&](sj_i64 stride, sj_i64 c, bool chan, int at) -> sj_i64 {
        return ((int)b * (int)p.pitch + (int)c * TS) * (int)stride + (chan ? (int)d0 : 0) + at;
    };
    auto load_td_fast = [&](sj_i64 c, int k) {
        const td_item it = td_at(k);
        sj_fwd_raw r = {};
        if constexpr (FLAT) {
            auto load = [&](const void *x, sj_i64 stride) {
                return sj_load_group<T, VE>(x, fast_item(stride, c, true, it.i * (int)stride + it.col), VE, true);
            };
            r.u = load(p.u, p.su);
            r.delta = load(p.delta, p.sdelta);
            if (has_z)
                r.z = load(p.z, p.sz);
        } else {
            r.u = sj_load_group<T, VE>(chunk_base(p.u, p.su, c) + d0, it.i * (int)p.su + it.col, VE, true);
            r.delta =
                sj_load_group<T, VE>(chunk_base(p.delta, p.sdelta, c) + d0, it.i * (int)p.sdelta + it.col, VE, true);
            if (has_z)
                r.z = sj_load_group<T, VE>(chunk_base(p.z, p.sz, c) + d0, it.i * (int)p.sz + it.col, VE, true);
        }
        return r;
    };
    auto load_bc_fast = [&](sj_i64 c, int k) {
        const bc_item &it = bc_held[k];
        if constexpr (FLAT) {
            return it.isC ? sj_load_group<T, 4>(p.C, fast_item(p.sC, c, false, it.i * (int)p.sC + (int)it.n), 4, true)
                          : sj_load_group<T, 4>(p.B, fast_item(p.sB, c, false, it.i * (int)p.sB + (int)it.n), 4, true);
        } else {
            return it.isC ? sj_load_group<T, 4>(chunk_base(p.C, p.sC, c), it.i * (int)p.sC + (int)it.n, 4, true)
                          : sj_load_group<T, 4>(chunk_base(p.B, p.sB, c), it.i * (int)p.sB + (int)it.n, 4, true);
        }
    };
    auto load_bc_item = [&](sj_i64 c, const bc_item &it) {
        const sj_i64 t = c * TS + it.i;
        if (t >= p.L)
            return make_uint4(0u, 0u, 0u, 0u);
        const sj_i64 row = b * p.pitch + t;
        return it.isC ? sj_load_group<T, 4>(p.C, row * p.sC + it.n, N - it.n, vbc)
                      : sj_load_group<T, 4>(p.B, row * p.sB + it.n, N - it.n, vbc);
    };
    auto load_bc = [&](sj_i64 c, int k) { return load_bc_item(c, k < NS / 4 ? bc_held[k] : bc_at(k)); };
    /* Every held group is converted, loaded or not, and sj_computed_here
     * keeps the conversions from sinking into the stores' branches: where
     * ptxas branched around the conversions of the groups not loaded, it
     * did not know which loads were still in flight and made the next
     * chunk's first write of each wait for all of them (a memory latency a
     * chunk, a fifth of the time at D = 1536 in 16-bit). */
    auto ready_bc = [](const uint4 &r) {
        float4 v = make_float4(sj_lane<T>(r, 0), sj_lane<T>(r, 1), sj_lane<T>(r, 2), sj_lane<T>(r, 3));
        sj_computed_here(v.x, v.y, v.z, v.w);
        return v;
    };
    auto store_bc = [&](float *buf, int k, const float4 &v) {
        *sj_f4(buf + (k < NS / 4 ? bc_held[k] : bc_at(k)).sh) = v;
    };

    sj_stager<NS / 4, sj_fwd_raw> st_td;
    sj_stager<NS / 4, uint4> st_bc;
    auto issue = [&](sj_i64 c) {
        if (fast_chunk(c)) {
            st_td.issue(cnt_td, [&](int k) { return load_td_fast(c, k); });
            st_bc.issue(cnt_bc, [&](int k) { return load_bc_fast(c, k); });
            return;
        }
        st_td.issue(cnt_td, [&](int k) { return load_td(c, k); });
        st_bc.issue(cnt_bc, [&](int k) { return load_bc(c, k); });
    };
    /* A stage buffer's tokens' segments and flags, after its B, C, u, dt
     * and gate. */
    auto info_in = [&](float *buf) { return (int2 *)(buf + 2 * TS * Npad + 3 * TS * RS); };
    /* Returns false where this thread found a token of chunk c that is not
     * plain (a segment's first or last but the row's, or past L), for the
     * __syncthreads_and that ends the staging. */
    auto commit = [&](sj_i64 c, float *buf) {
        auto keep = [](const sj_fwd_raw &r) { return r; };
        auto put_bc = [&](int k, const float4 &v) { store_bc(buf, k, v); };
        auto td_fast = [&] {
            st_td.commit_held(cnt_td, keep, [&](int k, const sj_fwd_raw &r) { store_td(buf, c, k, r, false); });
        };
        auto td_general = [&] {
            st_td.commit(cnt_td, [&](int k) { return load_td(c, k); }, keep,
                         [&](int k, const sj_fwd_raw &r) { store_td(buf, c, k, r, true); });
        };
        auto bc_general = [&] { st_bc.commit(cnt_bc, [&](int k) { return load_bc(c, k); }, ready_bc, put_bc); };
        /* The two arrangements are each the one their kernels ran fastest
         * with; ptxas's schedule of the recurrence follows them (the 16-bit
         * 8-state kernels lost 2% with the 4-state one). */
        if (NS > 4) {
            if (fast_chunk(c)) {
                td_fast();
                st_bc.commit_held(cnt_bc, ready_bc, put_bc);
            } else {
                td_general();
                bc_general();
            }
        } else {
            if (fast_chunk(c))
                td_fast();
            else
                td_general();
            bc_general();
        }
        if (tid >= TS)
            return true;
        const int2 ti = sj_token_info(p, b, c * TS + tid);
        info_in(buf)[tid] = ti;
        return sj_plain_token(ti, tid, c == 0, c == nch - 1);
    };

    /* Chunk c's stage buffer.  With one, other threads may still read
     * chunk c's when a thread commits chunk c + 1: a barrier comes first. */
    const int second = p.buffers > 1 ? lay.buf : 0;
    auto stage = [&](sj_i64 c) { return smem + (int)(c & 1) * second; };
    issue(0);
    /* Chunks without a segment boundary between two of their tokens or
     * the end of L inside them (every chunk without cu_seqlens, but a last
     * one cut short) run unrolled and branch-free, so that the
     * exponentials of later tokens overlap the recurrence. */
    bool plain = __syncthreads_and(commit(0, stage(0)));
    sj_chain_wait(); /* before the states entering (init) and any output */

    /* Segment seg's entering state (its initial state or 0), and its
     * final state out. */
    auto enter = [&](int seg) {
#pragma unroll
        for (int k = 0; k < NS; ++k)
            h[k] = sj_settled(p.init && dok && n0 + k < N ? p.init[((sj_i64)seg * p.D + d) * N + n0 + k] : 0.0f);
    };
    auto leave = [&](int seg) {
        if (p.final_state && dok) {
#pragma unroll
            for (int k = 0; k < NS; ++k)
                if (n0 + k < N)
                    p.final_state[((sj_i64)seg * p.D + d) * N + n0 + k] = h[k];
        }
    };
    /* Without cu_seqlens a row's segment starts at its first token and
     * ends at its last, and a split's segments are the rows of its view:
     * its first and last chunks took the token loop, a quarter of the
     * 8-state second pass's chunks at 1 x 2048 x 1536 and half the
     * 4-state one's at 1 x 512, a chunk 1.5 and 3.9 times a plain one
     * (bench/NOTES.md, "Scan shapes, round 15").  They stay plain, the
     * state entering here (settled: sj_settled) and leaving after the
     * loop, outside the chunk's code. */
    if (plain && (info_in(stage(0))[0].y & SJ_TOK_START))
        enter(info_in(stage(0))[0].x);

    const float Dg = GATED && g == 0 ? sDv[dl] : 0.0f;
    for (sj_i64 c = 0; c < nch; ++c) {
        float *buf = stage(c), *yp = ypart + (int)(c & 1) * (GATED && second ? TS * PS : 0);
        const float *sB = buf, *sC = buf + TS * Npad, *su = sC + TS * Npad, *sdt = su + TS * RS,
                    *sgz = sdt + TS * RS;
        const int2 *info = info_in(buf);
        if (c + 1 < nch)
            issue(c + 1);

        /* One token: the states; returns this group's part of y. */
        auto step = [&](int i) {
            const float u = su[i * RS + dl], dt = sdt[i * RS + dl], dtu = dt * u;
            const float4 *B4 = (const float4 *)(sB + g * TS * NS + i * NS);
            const float4 *C4 = (const float4 *)(sC + g * TS * NS + i * NS);
            /* y's part as one chain of fmas: four chains and their sum
             * cost three adds a token, and the chain's latency hides behind
             * the states' (bench/NOTES.md: 2% in bf16) */
            float part = 0.0f;
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
                    h[k] = fmaf(sj_exp2_ftz(dt * A2[k]), h[k], dtu * bv[j]);
                    if (OUT)
                        part = fmaf(cv[j], h[k], part);
                }
            }
            return GATED ? fmaf(Dg, u, part) * sgz[i * RS + dl] : part;
        };
        if (plain) {
            /* The parts leave F tokens at a time: a store between two
             * tokens keeps the next token's loads behind it (the compiler
             * cannot tell that they do not alias), exposing their latency.
             * The 4-state kernels (up to 168 registers) hold a whole
             * chunk's parts; the others (128) four tokens', which ran
             * fastest (bench/NOTES.md). */
            constexpr int F = NS == 4 ? TS : 4;
            float part[TS];
#pragma unroll
            for (int i = 0; i < TS; ++i) {
                part[i] = step(i);
                if (OUT && i % F == F - 1) {
#pragma unroll
                    for (int j = i - (F - 1); j <= i; ++j)
                        yp[j * PS + tid] = part[j];
                }
            }
        } else {
            for (int i = 0; i < TS; ++i) {
                const int2 ti = info[i];
                if (!(ti.y & SJ_TOK_VALID))
                    break;
                if (ti.y & SJ_TOK_START)
                    enter(ti.x);
                const float part = step(i);
                if (OUT)
                    yp[i * PS + tid] = part;
                if (ti.y & SJ_TOK_END)
                    leave(ti.x);
            }
        }

        if (p.ckpt && dok) {
            /* a thread's states are adjacent: 16-byte stores where aligned
             * (one 4-byte store a state wrote a sector each) */
            float *ck = p.ckpt + ((b * nch + c) * p.D + d) * N;
#pragma unroll
            for (int q = 0; q < NS / 4; ++q)
                sj_store_group<float, 4>(ck, n0 + 4 * q, N - n0 - 4 * q, ck4, h + 4 * q);
        }

        auto output = [&] {
            /* y of the staged groups (the same items as load_td's): token
             * i, channels col .. col + VE - 1 of the block */
            auto y_item = [&](int i, int col, float *yv) {
                const int at = i * RS + col;
#pragma unroll
                for (int q = 0; q < VE / 4; ++q) {
                    float4 y = sj_f4(yp + i * PS + col)[q];
                    auto add = [](float4 a, float4 o) {
                        return make_float4(a.x + o.x, a.y + o.y, a.z + o.z, a.w + o.w);
                    };
                    if (sizeof(T) == 2 && G == 4) {
                        /* the three loads asked for before the first
                         * add: the loop waited on each in turn, and 16-bit
                         * ran 1-4% faster so; f32 about 1% slower
                         * (bench/NOTES.md, "Scan shapes, round 20") */
                        const float4 o1 = sj_f4(yp + i * PS + BD + col)[q], o2 = sj_f4(yp + i * PS + 2 * BD + col)[q],
                                     o3 = sj_f4(yp + i * PS + 3 * BD + col)[q];
                        y = add(add(add(y, o1), o2), o3);
                    } else {
                        /* a plain loop: ptxas unrolled it by 4 with a
                         * remainder, which cost the 8-state kernel 2% at
                         * G = 2 (bench/NOTES.md), and G = 2 as one add
                         * cost its f32 up to 24% ("Scan shapes, round 20") */
#pragma unroll 1
                        for (int gg = 1; gg < G; ++gg)
                            y = add(y, sj_f4(yp + i * PS + gg * BD + col)[q]);
                    }
                    if (GATED) {
                        yv[4 * q] = y.x;
                        yv[4 * q + 1] = y.y;
                        yv[4 * q + 2] = y.z;
                        yv[4 * q + 3] = y.w;
                        continue;
                    }
                    const float4 dv = sj_f4(sDv + col)[q], uu = sj_f4(su + at)[q], gv = sj_f4(sgz + at)[q];
                    yv[4 * q] = fmaf(dv.x, uu.x, y.x) * gv.x;
                    yv[4 * q + 1] = fmaf(dv.y, uu.y, y.y) * gv.y;
                    yv[4 * q + 2] = fmaf(dv.z, uu.z, y.z) * gv.z;
                    yv[4 * q + 3] = fmaf(dv.w, uu.w, y.w) * gv.w;
                }
            };
            if (fast_chunk(c)) {
                T *const yb = (T *)chunk_base(p.y, p.sy, c) + d0;
#pragma unroll
                for (int k = 0; k < NS / 4; ++k) {
                    const td_item it = td_at(k);
                    float yv[VE];
                    if (k < cnt_td) {
                        y_item(it.i, it.col, yv);
                        const int at = it.i * (int)p.sy + it.col;
                        if constexpr (FLAT) {
                            sj_store_group<T, VE>(p.y, fast_item(p.sy, c, true, at), VE, true, yv);
                        } else {
                            sj_store_group<T, VE>(yb, at, VE, true, yv);
                        }
                    }
                }
            } else {
                for (int k = 0; k < cnt_td; ++k) {
                    const td_item it = td_at(k);
                    const sj_i64 t = c * TS + it.i, dc = d0 + it.col;
                    if (t >= p.L)
                        break;
                    float yv[VE];
                    y_item(it.i, it.col, yv);
                    sj_store_group<T, VE>(p.y, (b * p.pitch + t) * p.sy + dc, p.D - dc, vy, yv);
                }
            }
        };
        /* Where the parts have two buffers y leaves after the barrier that
         * ends the staging: it reads nothing but its parts, so the next
         * chunk's commit may overwrite this stage buffer meanwhile, the
         * next chunk writes the other parts, and the one after writes
         * these only past the next barrier, which this thread reaches
         * after its output.  Else y leaves between two more barriers (the
         * second only with one stage buffer, which the commit reuses). */
        const bool late = GATED && second;
        if (OUT && !late) {
            __syncthreads();
            output();
        }
        if (!second)
            __syncthreads();
        /* past the last chunk, plain stays its flag */
        plain = __syncthreads_and(c + 1 < nch ? commit(c + 1, stage(c + 1)) : plain);
        if (late)
            output();
    }
    if (plain && (info_in(stage(nch - 1))[TS - 1].y & SJ_TOK_END))
        leave(info_in(stage(nch - 1))[TS - 1].x);
}

/* Kernel names: <prefix>_ns<NS>_<dtype>; blocks of at most MAXT threads
 * and ROW channels, MINB of them resident per SM (which caps the
 * registers per thread). */
#define SJ_SCAN_FWD_KERNEL(prefix, OUT, NS, MAXT, MINB, ROW, T, sfx)                                         \
    SJ_KERNEL(prefix##_ns##NS##_##sfx)(                                                                      \
    extern "C" __global__ void __launch_bounds__(MAXT, MINB) prefix##_ns##NS##_##sfx(const sj_scan_params p) \
    {                                                                                                        \
        sj_scan_fwd<T, NS, OUT, MAXT, ROW>(p);                                                               \
    })

/* ------------------------------------------------------------------------ */
/* Split over L (src/ops/scan_split.c)                                      */
/* ------------------------------------------------------------------------ */
/*
 * A row's L tokens as S segments of Ls, the segments of all rows the
 * R = B S rows of a [R, Ls] view of every tensor.  Over a segment the
 * state entering it decays by prod_t exp(dt_t A) = exp(A sum_t dt_t), and
 * the adjoint leaving it backwards likewise, so carrying states (forward)
 * or adjoints (backward) across the segments needs only each segment's
 * sum of dt.
 */

/* Segments whose parts the carry reads at once (sj_scan_split_carry). */
#define SJ_CARRY_GROUP 8

/* For each (batch row b, channel d, state n), its S segments in order
 * (reverse: last first): the value carried into a segment, v (first
 * from[b], or 0), goes to out[b S + s] and becomes the segment's own part
 * own[b S + s] plus v decayed over the segment, the scan's own
 * 2^(dt A log2 e) over its summed dt; last[b] (when given) gets what
 * leaves the last segment taken.  The forward carries states (from the
 * initial state, own = out: each segment's final state from zero), the
 * backward adjoints (from d_final_state; own: each segment's gradient of
 * its start state with none entering its end). */
__device__ __forceinline__ void sj_scan_split_carry(const float *A, const float *from, const float *dtsum,
                                                    const float *own, float *out, float *last, sj_i64 B, sj_i64 S,
                                                    sj_i64 D, sj_i64 N, bool reverse)
{
    sj_chain_wait(); /* chained after the first pass, whose parts it reads */
    const sj_i64 DN = D * N;
    for (sj_i64 e = (sj_i64)blockIdx.x * blockDim.x + threadIdx.x; e < B * DN;
         e += (sj_i64)gridDim.x * blockDim.x) {
        const sj_i64 b = e / DN, dn = e % DN, d = dn / N;
        const float a2 = A[dn] * SJ_LOG2E;
        float v = from ? from[e] : 0.0f;
        /* the view row of the k-th segment taken */
        auto row = [&](sj_i64 k) { return b * S + (reverse ? S - 1 - k : k); };
        /* SJ_CARRY_GROUP segments' parts and sums are read before any of
         * their outputs is written.  A read after a write may alias it
         * (the forward's own is out), so read one at a time each waited
         * for the last segment's round trip to memory, S of them in a row
         * (on an H200 at one sequence of 1536 channels: 6.9 us at 8
         * segments, 16-27 at 16 and 32; bench/NOTES.md).  Each segment
         * still reads its part before it writes that place. */
        for (sj_i64 k0 = 0; k0 < S; k0 += SJ_CARRY_GROUP) {
            float part[SJ_CARRY_GROUP], sum[SJ_CARRY_GROUP];
#pragma unroll
            for (int j = 0; j < SJ_CARRY_GROUP; ++j) {
                const sj_i64 k = k0 + j, r = row(k);
                part[j] = k < S ? own[r * DN + dn] : 0.0f;
                sum[j] = k < S ? dtsum[r * D + d] : 0.0f;
            }
#pragma unroll
            for (int j = 0; j < SJ_CARRY_GROUP; ++j) {
                const sj_i64 k = k0 + j, r = row(k);
                if (k < S) {
                    out[r * DN + dn] = v;
                    v = fmaf(sj_exp2_ftz(a2 * sum[j]), v, part[j]);
                }
            }
        }
        if (last)
            last[e] = v;
    }
}

/* The split's first pass over the view's rows: what leaves each row with
 * nothing entering it, and nothing else.  Forward (BWD false): the state
 * after the row's last token from a zero state, into final_state [R, D,
 * N].  Backward: the adjoint leaving the row's first token (the gradient
 * of its start state) with none entering its last, into dinit [R, D, N].
 * The full scans ran this pass before, computing y or every gradient
 * only to have the second pass overwrite them; this reads only what the
 * recurrence needs (forward: dt, dt u, B; backward: dt, dy silu(z), C).
 * Its operations are those of sj_scan_fwd's and sj_scan_bwd's
 * recurrences in the same order, each module's math, so the values are
 * theirs bit for bit.
 *
 * The blocks of the first slice of states also sum each row's dt into
 * p.dtsum [R, D] (when given), which the carry's decays need: a warp's
 * lane sums its channel's dt at every 4th token (the warp's), chunk by
 * chunk, and the four warps' sums meet in warp order, so the sum is
 * reproducible (the forward's in token order, the backward's in chunks
 * from the last).  They see every dt already, where a kernel of their
 * own read delta again.
 *
 * Block: SJ_ENDS_BD channels (lanes) x 4 warps of 4 states, a slice of
 * SJ_ENDS_SLICE states a blockIdx.z.  Chunks of SJ_ENDS_TS tokens (the
 * last first, backward) staged in shared memory: dt and the channel's
 * value [TS][BD], the states' value [TS][SLICE]; the next chunk's raw
 * values load into registers while this one is scanned.  Tokens past L
 * stage as dt = 0 and values 0, which leave a state as it is (a decay of
 * exactly 1, nothing added). */
#define SJ_ENDS_BD 32
#define SJ_ENDS_TS 32
#define SJ_ENDS_SLICE 16

template <typename T, bool BWD> __device__ __forceinline__ void sj_scan_split_ends(const sj_scan_params &p)
{
    constexpr int BD = SJ_ENDS_BD, TS = SJ_ENDS_TS, SL = SJ_ENDS_SLICE, NT = BD * SL / 4;
    constexpr int CI = TS * BD / NT, SI = TS * SL / NT, CROWS = NT / BD, SROWS = NT / SL;
    static_assert(BD == 32 && TS * BD % NT == 0 && TS * SL % NT == 0, "a lane a channel; whole items a thread");
    __shared__ float sdt[TS][BD], sv[TS][BD], sbias[BD];
    __shared__ __align__(16) float sbc[TS][SL]; /* read as float4 */
    __shared__ float sdtsum[NT / 32][BD];
    const int tid = threadIdx.x, lane = tid & 31, g = tid >> 5, scol = tid % SL, srow = tid / SL;
    const sj_i64 r = blockIdx.y, d0 = (sj_i64)blockIdx.x * BD, d = d0 + lane, N = p.N,
                 nslice = (sj_i64)blockIdx.z * SL, n0 = nslice + 4 * g;
    const bool dok = d < p.D, sok = nslice + scol < N;
    /* It reads only the op's inputs, so in the backward, chained after
     * the tail's and the starts' kernels, it scans before it waits, and
     * waits only before its writes (chain.cuh). */
    float A2[4], h[4], dtsum = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        A2[k] = dok && n0 + k < N ? p.A[d * N + n0 + k] * SJ_LOG2E : 0.0f;
        h[k] = 0.0f;
    }
    if (tid < BD)
        sbias[tid] = d0 + tid < p.D && p.dbias ? p.dbias[d0 + tid] : 0.0f;

    /* This thread's raw items of chunk c: channel d at tokens g + CROWS m
     * (delta, and u, or dy and z), state nslice + scol at tokens srow +
     * SROWS m (B, or C). */
    const T *const delta = (const T *)p.delta, *const u = (const T *)p.u, *const dy = (const T *)p.dy,
                   *const z = (const T *)p.z, *const bc = (const T *)(BWD ? p.C : p.B);
    const sj_i64 sbc_stride = BWD ? p.sC : p.sB;
    /* The raw items stay in the activation dtype until the commit widens
     * them: widened as they were loaded, the 16-bit ones made each chunk's
     * scan wait for the next chunk's loads (ptxas kept the conversions
     * beside them), which took the 16-bit kernels 1.4-1.6 times the f32
     * ones' time at one sequence (bench/NOTES.md). */
    const T zero = {};
    T rd[CI], ra[CI], rz[CI], rs[SI];
    /* In the backward a chunk wholly inside L (whole: every chunk but a
     * last one cut short) loads without asking whether each token is,
     * where each load's 64-bit bound check and branch had cost about as
     * much as its address: the split backward 1.2-2.6% faster.  The
     * forward, given the same, ran 1.4-4.2% slower, and so asks still
     * (bench/NOTES.md, "Scan shapes, round 22"). */
    auto load_checked = [&](sj_i64 c, bool whole) {
#pragma unroll
        for (int m = 0; m < CI; ++m) {
            const sj_i64 t = c * TS + g + CROWS * m, row = r * p.pitch + t;
            const bool ok = dok && (whole || t < p.L);
            rd[m] = ok ? delta[row * p.sdelta + d] : zero;
            ra[m] = ok ? (BWD ? dy[row * p.sdy + d] : u[row * p.su + d]) : zero;
            rz[m] = BWD && ok && z ? z[row * p.sz + d] : zero;
        }
#pragma unroll
        for (int m = 0; m < SI; ++m) {
            const sj_i64 t = c * TS + srow + SROWS * m;
            rs[m] = sok && (whole || t < p.L) ? bc[(r * p.pitch + t) * sbc_stride + nslice + scol] : zero;
        }
    };
    auto load = [&](sj_i64 c) {
        if (BWD && (c + 1) * TS <= p.L)
            load_checked(c, true);
        else
            load_checked(c, false);
    };
    auto commit = [&](sj_i64 c) {
#pragma unroll
        for (int m = 0; m < CI; ++m) {
            const int i = g + CROWS * m;
            const bool in = dok && c * TS + i < p.L;
            const float x = sj_to_float(rd[m]) + sbias[lane], a = sj_to_float(ra[m]);
            float dt, v;
            if (BWD) {
                /* sj_scan_bwd's conversion */
                const float sp = sj_softplus_and_grad(x).x, sz = z ? sj_silu_and_grad(sj_to_float(rz[m])).x : 1.0f;
                dt = p.softplus ? sp : x;
                v = a * sz;
            } else {
                /* sj_scan_fwd's staging, and its step's dt u */
                dt = p.softplus ? sj_softplus(x) : x;
                v = dt * a;
            }
            sdt[i][lane] = in ? dt : 0.0f;
            sv[i][lane] = in ? v : 0.0f;
            dtsum += in ? dt : 0.0f;
        }
#pragma unroll
        for (int m = 0; m < SI; ++m)
            sbc[srow + SROWS * m][scol] = sj_to_float(rs[m]);
    };
    auto scan_token = [&](int i) {
        const float dt = sdt[i][lane], v = sv[i][lane];
        const float4 q = *(const float4 *)&sbc[i][4 * g];
        const float w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            if (BWD)
                h[k] = sj_exp2_ftz(dt * A2[k]) * fmaf(w[k], v, h[k]);
            else
                h[k] = fmaf(sj_exp2_ftz(dt * A2[k]), h[k], v * w[k]);
        }
    };

    const sj_i64 nch = (p.L + TS - 1) / TS;
    auto chunk_at = [&](sj_i64 k) { return BWD ? nch - 1 - k : k; };
    if (nch > 0)
        load(chunk_at(0));
    for (sj_i64 k = 0; k < nch; ++k) {
        __syncthreads(); /* sbias; the last chunk's scan is done with the stage */
        commit(chunk_at(k));
        __syncthreads();
        if (k + 1 < nch)
            load(chunk_at(k + 1));
#pragma unroll
        for (int i = 0; i < TS; ++i)
            scan_token(BWD ? TS - 1 - i : i);
    }
    sj_chain_wait();
    float *out = BWD ? p.dinit : p.final_state;
#pragma unroll
    for (int k = 0; k < 4; ++k)
        if (dok && n0 + k < N)
            out[(r * p.D + d) * N + n0 + k] = h[k];
    if (p.dtsum && blockIdx.z == 0) {
        sdtsum[g][lane] = dtsum;
        __syncthreads();
        if (g == 0 && dok) {
            float sum = sdtsum[0][lane];
#pragma unroll
            for (int w = 1; w < NT / 32; ++w)
                sum += sdtsum[w][lane];
            p.dtsum[r * p.D + d] = sum;
        }
    }
}

#define SJ_SCAN_SPLIT_ENDS_KERNEL(T, sfx, bwd)                                                                   \
    SJ_KERNEL(scan_split_ends_##sfx)(                                                                          \
    extern "C" __global__ void __launch_bounds__(SJ_ENDS_BD * SJ_ENDS_SLICE / 4)                               \
        scan_split_ends_##sfx(const sj_scan_params p)                                                          \
    {                                                                                                          \
        sj_scan_split_ends<T, bwd>(p);                                                                         \
    })

/* The split's kernels, in the forward's module (BWD false) and the
 * backward's (true), each with its own math: dt as its scan computes it. */
#define SJ_SCAN_SPLIT_KERNELS(BWD)                                                                             \
    SJ_FOR_EACH_DTYPE(SJ_SCAN_SPLIT_ENDS_KERNEL, BWD)                                                          \
    SJ_KERNEL(scan_split_carry)(                                                                               \
    extern "C" __global__ void scan_split_carry(const float *A, const float *from, const float *dtsum,         \
                                                const float *own, float *out, float *last, sj_i64 B, sj_i64 S, \
                                                sj_i64 D, sj_i64 N, sj_i64 reverse)                            \
    {                                                                                                          \
        sj_scan_split_carry(A, from, dtsum, own, out, last, B, S, D, N, reverse != 0);                         \
    })
