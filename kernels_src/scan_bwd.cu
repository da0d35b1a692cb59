/* Backward of the selective scan (module "scan_bwd").
 *
 * Recurrence, per (segment, channel d, state n), with dt_t = softplus(delta_t
 * + bias) (or without softplus), a_t = exp(dt_t A), h_{-1} = initial state:
 *     h_t = a_t h_{t-1} + dt_t B_t u_t,   y_t = sum_n C_t h_t + D u_t,
 *     out_t = y_t silu(z_t).
 * With dy'_t = dout_t silu(z_t) and the adjoint g_t = dL/dh_t, walked from
 * the last token back (g of a segment's last token starts from
 * d_final_state):
 *     g_t = C_t dy'_t + a_{t+1} g_{t+1}
 *     dC_t += dy'_t h_t            dB_t += g_t dt_t u_t    (summed over d)
 *     du_t = D dy'_t + dt_t sum_n g_t B_t
 *     ddt_t = u_t sum_n g_t B_t + sum_n A g_t a_t h_{t-1}
 *     dA += g_t a_t h_{t-1} dt_t   d_initial_state = a_t0 g_t0 (first token)
 *
 * Design: a block is 64 channels x 16 states, 256 threads: each warp holds
 * 8 channels, each channel 4 lanes (adjacent lanes) of 4 states, so the sums
 * over states of one (token, channel) take two levels of shuffles and no
 * barrier.
 * N > 16 takes ceil(N / 16) launches in stream order, which pass those sums
 * (sum g B, sum A g a h, sum C h) through a workspace accumulator.  The block
 * walks chunks of 16 tokens from last to first.  For each chunk it
 * recomputes the 4 states of every token from the checkpoint at the chunk
 * start into registers (fully unrolled, 64 a thread), then runs the adjoint
 * recurrence backwards over them, so each exponential is evaluated twice
 * and nothing per token and state reaches memory.  At most 128 registers a
 * thread keep two blocks (16 warps) on each SM.  du, ddelta and dz of a
 * token wait in shared memory until the chunk's cross-warp barrier, where
 * each warp stores whole tokens' rows: a lane writing its own value every
 * token spent some 15 instructions a token on 64-bit addressing and wrote
 * 8 channels a warp-wide store.
 *
 * Nothing uses atomics, so results are bit-reproducible:
 *  - dB, dC (sums over d): each warp transposes its 8 channels x 32 values
 *    of a token through shared memory (lane l then sums value l over the
 *    channels), the 8 warps' sums meet in shared memory once a chunk and
 *    one partial per block goes to ws_bc [B, ndblk, L, 2N];
 *    scan_bwd_reduce_bc sums the blocks in order.
 *  - sums over states of one (token, channel): shuffles in a fixed pattern
 *    (then over launches, in launch order).
 *  - dA, dD, ddelta_bias (sums over B and L): per-thread sums over L, one
 *    partial per batch row in the workspace, summed over rows in order by
 *    scan_bwd_reduce_params.
 */
#include "scan_common.cuh"

/* Mirrored in src/ops/scan_internal.h (SJ_SCAN_BWD_*): states per launch, channels per
 * block, threads per block, and the
 * shared memory in floats (BWD_SMEM_FLOATS there): two stage buffers of
 *     P [TS][BD] float4 {dt, u, dy', dy silu'(z)} (slots: sj_bwd_pslot),
 *     S [TS][BD] softplus', B, C [TS][16], info [TS] int2,
 * then delta_bias and D [BD], the warps' transpose rows [8][8][SJ_BWD_TP],
 * the cross-warp sums [TS][8][32], the raw copies (in T) u, delta, dy, z
 * [TS][BD] and, in 16-bit only, B, C [TS][16], the checkpoint states
 * [BD][16], and each thread's sums over chunks [NS + 2][256]. */
#define SJ_BWD_NBLK 16
#define SJ_BWD_BD 64
#define SJ_BWD_THREADS 256
#define SJ_BWD_TP 36 /* 32 values + 4: the float4 stores of a quarter-warp hit distinct banks */
#define SJ_BWD_BUF (5 * SJ_SCAN_CHUNK * SJ_BWD_BD + 2 * SJ_SCAN_CHUNK * SJ_BWD_NBLK + 2 * SJ_SCAN_CHUNK)
static_assert(SJ_BWD_THREADS == 256 && SJ_SCAN_CHUNK % 8 == 0, "8 warps share a chunk's cross-warp sums");
static_assert(SJ_SCAN_CHUNK <= 32, "one warp votes on a chunk's tokens");

/* Channel c's slot in P's rows.  The conversion's threads store 4 adjacent
 * channels each, 64 bytes from the next thread's, so a quarter-warp's
 * 16-byte stores met on two groups of banks (4-way conflicts); swapping
 * slots inside each group of 8 channels by the group's index spreads them,
 * while the readers (a channel a lane, or 32 adjacent channels) keep a
 * permutation of their addresses. */
__device__ __forceinline__ int sj_bwd_pslot(int c)
{
    return c ^ ((c >> 3) & 3);
}

/* The parts of one stage buffer (P at [token][sj_bwd_pslot(channel)]). */
struct sj_bwd_stage {
    float4 *P;
    float *S, *B, *C;
    int2 *info;
    __device__ __forceinline__ explicit sj_bwd_stage(float *buf)
        : P((float4 *)buf), S(buf + 4 * SJ_SCAN_CHUNK * SJ_BWD_BD), B(S + SJ_SCAN_CHUNK * SJ_BWD_BD),
          C(B + SJ_SCAN_CHUNK * SJ_BWD_NBLK), info((int2 *)(C + SJ_SCAN_CHUNK * SJ_BWD_NBLK))
    {
    }
};

/* Copies chunk rows that lie whole inside D, each tensor in groups of E
 * elements (4 or 16 bytes), of the four activations (z only where the op
 * has it) into raw [4][TS][BD] without bounds checks: thread tid's copy k
 * at row tid / PER_ROW + k THREADS / PER_ROW of the chunk.  row0 is the
 * chunk's first row in the tensors, d0 the block's first channel. */
template <typename T, int E>
__device__ __forceinline__ void sj_bwd_copy_rows(T *raw, const void *const *act, const sj_i64 *stride, bool has_z,
                                                 sj_i64 row0, sj_i64 d0, int tid)
{
    constexpr int TS = SJ_SCAN_CHUNK, BD = SJ_BWD_BD, PER_ROW = BD / E, COPIES = TS * PER_ROW,
                  ITEMS = (COPIES + SJ_BWD_THREADS - 1) / SJ_BWD_THREADS, RK = SJ_BWD_THREADS / PER_ROW;
    static_assert(E * sizeof(T) == 4 || E * sizeof(T) == 16, "4- or 16-byte copies");
    const int row = tid / PER_ROW, col = (tid % PER_ROW) * E;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        if (q == 3 && !has_z)
            break;
        if (COPIES == ITEMS * SJ_BWD_THREADS || tid < COPIES) {
            const T *src = (const T *)act[q] + (row0 + row) * stride[q] + d0 + col;
#pragma unroll
            for (int k = 0; k < ITEMS; ++k) {
                T *dst = raw + q * TS * BD + (tid + k * SJ_BWD_THREADS) * E;
                if (E * sizeof(T) == 16)
                    sj_copy16(dst, src + k * RK * stride[q], 16);
                else
                    sj_copy4(dst, src + k * RK * stride[q], 4);
            }
        }
    }
}

template <typename T> __device__ __forceinline__ void sj_scan_bwd(const sj_scan_params &p)
{
    /* chained after the carry (split) or the checkpoint's rebuild, whose
     * states and adjoints it reads (chain.cuh) */
    sj_chain_wait();
    constexpr int TS = SJ_SCAN_CHUNK, NS = 4, BD = SJ_BWD_BD, NBLK = SJ_BWD_NBLK;
    extern __shared__ float4 sj_smem4[];
    /* Whether each stage buffer's chunk is plain (see run_chunk): warp 0
     * votes on it as it converts the chunk, and every thread reads the one
     * word at the chunk's start.  Each thread reading all 16 tokens' info
     * there instead put 16 loads and a shared-memory round trip before any
     * of the chunk's work (bench/NOTES.md). */
    __shared__ int plain_flag[2];
    /* Which copy paths the block's full chunks take (CM_* bits), one word
     * read where the copies issue: as bools held across the chunk loop they
     * were spilled, and their reload stalled every chunk (bench/NOTES.md). */
    __shared__ unsigned copy_mode;
    enum { CM_WHOLE = 1, CM_WHOLE_BC = 2, CM_WHOLE16 = 4, CM_BC16 = 8, CM_PLAIN = 16 };
    float *smem = (float *)sj_smem4;
    const int tid = threadIdx.x, w = tid >> 5, lane = tid & 31, grp = lane & 3, ch = w * 8 + (lane >> 2),
              pch = sj_bwd_pslot(ch);
    const sj_i64 b = blockIdx.y, d0 = (sj_i64)blockIdx.x * BD, d = d0 + ch;
    const bool dok = d < p.D;
    const sj_i64 N = p.N, D = p.D, L = p.L, nb0 = p.nb * NBLK, n0 = nb0 + grp * NS;
    const bool last_nb = p.nb == p.NB - 1;
    float *sbias = smem + 2 * SJ_BWD_BUF, *sDv = sbias + BD;
    float *wt = sDv + BD + w * 8 * SJ_BWD_TP; /* this warp's transpose rows */
    float *xw = sDv + BD + 8 * 8 * SJ_BWD_TP;

    float A2[NS], gc[NS], dAc[NS];
#pragma unroll
    for (int k = 0; k < NS; ++k) {
        A2[k] = dok && n0 + k < N ? p.A[d * N + n0 + k] * SJ_LOG2E : 0.0f;
        gc[k] = 0.0f;
    }
    /* Sums over L in two levels (per chunk, then over chunks) to keep their
     * rounding error small for long sequences.  The sums over chunks (dA's
     * NS, dD's, ddelta_bias') wait in shared memory, in thread tid's column
     * of osum: held in registers they were spilled, and their reload
     * stalled each chunk's end (bench/NOTES.md). */
    float dDc, dbc;
    auto state_at = [&](const float *s, sj_i64 seg, int k) {
        return s && dok && n0 + k < N ? s[(seg * D + d) * N + n0 + k] : 0.0f;
    };

    if (p.dinit && dok)
        sj_for_empty_segments(p, [&](sj_i64 s) {
            for (int k = 0; k < NS; ++k)
                if (n0 + k < N)
                    p.dinit[(s * D + d) * N + n0 + k] = state_at(p.dfinal, s, k);
        });

    constexpr int VE = 4 / sizeof(T), E16 = 16 / sizeof(T), BCPR = NBLK / E16;
    const void *const act[4] = {p.u, p.delta, p.dy, p.z};
    const sj_i64 act_stride[4] = {p.su, p.sdelta, p.sdy, p.sz};
    /* Whole words of every row: true in every block but the last of D
     * (where the 16-bit rows are 4-byte aligned, as they are in practice). */
    bool whole = d0 + BD <= D;
#pragma unroll
    for (int q = 0; q < 4; ++q)
        whole = whole && (VE == 1 || !act[q] || sj_group_ok<T, VE>(act[q], act_stride[q]));
    const bool whole_bc =
        nb0 + NBLK <= N && (VE == 1 || (sj_group_ok<T, VE>(p.B, p.sB) && sj_group_ok<T, VE>(p.C, p.sC)));
    /* 16-byte copies where every row of a full chunk is in 16-byte groups
     * (E16 elements): one instruction instead of four (f32) or eight. */
    bool whole16 = whole;
#pragma unroll
    for (int q = 0; q < 4; ++q)
        whole16 = whole16 && (!act[q] || sj_group_ok<T, E16>(act[q], act_stride[q]));
    const bool bc16 = whole_bc && sj_group_ok<T, E16>(p.B, p.sB) && sj_group_ok<T, E16>(p.C, p.sC);
    /* Plain chunks (run_chunk) take blocks inside D, whose stores need no
     * bounds, where every offset of the block's rows in du, ddelta and dz
     * is below 2^31: they address an element as a 32-bit offset from the
     * tensor's start.  The 64-bit address of each had taken about a third
     * of the instructions of the chunk's stores and cross-warp sums
     * (bench/NOTES.md). */
    const sj_i64 smax = max(max(p.sdu, p.sddelta), p.dz ? p.sdz : 0);
    const bool plain_ok = d0 + BD <= D && (b + 1) * p.pitch < ((sj_i64)1 << 31) / max(smax, (sj_i64)1);
    if (tid == 0)
        copy_mode = (whole ? CM_WHOLE : 0) | (whole_bc ? CM_WHOLE_BC : 0) | (whole16 ? CM_WHOLE16 : 0) |
                    (bc16 ? CM_BC16 : 0) | (plain_ok ? CM_PLAIN : 0);
    if (tid < BD) {
        const bool ok = d0 + tid < D;
        sbias[tid] = ok && p.dbias ? p.dbias[d0 + tid] : 0.0f;
        sDv[tid] = ok && p.Dv ? p.Dv[d0 + tid] : 0.0f;
    }
    __syncthreads();

    const sj_i64 nch = (L + TS - 1) / TS;
    /* Staging without registers: the chunk's raw rows are copied to shared
     * memory asynchronously (16-byte groups where every row allows, else
     * 4-byte words of VE channels or states) while the previous chunk
     * computes; after the barrier that ends that chunk's adjoint each
     * thread converts 4 adjacent elements of a token into the stage
     * buffer: P, S at [token][channel] and B, C at [token][state]. */
    constexpr int WPR = BD / VE, WITEMS = TS * WPR / SJ_BWD_THREADS, BCW = TS * NBLK / VE;
    T *const raw = (T *)(xw + TS * 8 * 32); /* u, delta, dy, z [TS][BD] */
    /* B, C [TS][16] staged raw where they need converting (16-bit); f32's
     * copies land in the chunk's stage buffer itself */
    constexpr bool RAW_BC = sizeof(T) != 4;
    T *const rawB = raw + 4 * TS * BD, *const rawC = rawB + TS * NBLK;
    float *const sck = (float *)(rawB + (RAW_BC ? 2 * TS * NBLK : 0)); /* checkpoint [BD][16] */
    float *const osum = sck + BD * NBLK; /* [NS + 2][THREADS] */
#pragma unroll
    for (int k = 0; k < NS + 2; ++k)
        osum[k * SJ_BWD_THREADS + tid] = 0.0f;
    /* Copies `n` (0..VE) elements of row `row` from element `col` of x
     * into the word at dst: asynchronously when the word is aligned (an f32
     * element always is), else element by element. */
    auto copy_word = [&](T *dst, const void *x, sj_i64 stride, sj_i64 row, sj_i64 col, sj_i64 n) {
        const T *src = (const T *)x + row * stride + col;
        if (VE == 1 || sj_group_ok<T, VE>(x, stride))
            sj_copy4(dst, n > 0 ? src : (const T *)x, (int)(n > 0 ? n : 0) * (int)sizeof(T));
        else
            for (int e = 0; e < VE; ++e)
                dst[e] = e < n ? src[e] : sj_from_float<T>(0.0f);
    };
    const bool ck16 = sj_group_ok<float, 4>(p.ckpt, N) && n0 + NS <= N;
    /* may_whole = false: the general copies only, for the first chunk
     * before the loop (the same bytes land; one inlined copy of the
     * whole-row paths, the loop's, is enough) */
    auto issue = [&](sj_i64 c, const bool may_whole) {
        const unsigned mode = may_whole ? copy_mode : 0u;
        if ((mode & CM_WHOLE16) && (c + 1) * TS <= L) {
            sj_bwd_copy_rows<T, E16>(raw, act, act_stride, p.z, b * p.pitch + c * TS, d0, tid);
        } else if ((mode & CM_WHOLE) && (c + 1) * TS <= L) {
            sj_bwd_copy_rows<T, VE>(raw, act, act_stride, p.z, b * p.pitch + c * TS, d0, tid);
        } else {
#pragma unroll
            for (int k = 0; k < WITEMS; ++k) {
                const int wi = tid + k * SJ_BWD_THREADS;
                const sj_i64 t = c * TS + wi / WPR, col = d0 + (wi % WPR) * VE;
                const sj_i64 n = t < L ? min((sj_i64)VE, D - col) : 0;
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (q < 3 || p.z)
                        copy_word(raw + q * TS * BD + wi * VE, act[q], act_stride[q], b * p.pitch + t, col, n);
            }
        }
        /* B and C of the chunk inside L and the block's states inside N:
         * element (token i, state e).  Without RAW_BC into the chunk's
         * stage buffer (laid out as rawB, rawC), which chunk c + 2 used
         * last and has left. */
        const sj_i64 row0 = b * p.pitch + c * TS;
        T *const bdst = RAW_BC ? rawB : (T *)sj_bwd_stage(smem + (c & 1) * SJ_BWD_BUF).B,
                *const cdst = bdst + TS * NBLK;
        auto bc_at = [&](const void *x, sj_i64 stride, int i, int e) {
            return (const T *)x + (row0 + i) * stride + nb0 + e;
        };
        if ((mode & CM_BC16) && (c + 1) * TS <= L) {
            if (tid < 2 * TS * BCPR) {
                const int r = tid % (TS * BCPR), i = r / BCPR, e = (r % BCPR) * E16;
                if (tid < TS * BCPR)
                    sj_copy16(bdst + r * E16, bc_at(p.B, p.sB, i, e), 16);
                else
                    sj_copy16(cdst + r * E16, bc_at(p.C, p.sC, i, e), 16);
            }
        } else if (tid < BCW) {
            const int i = tid / (NBLK / VE), e = (tid % (NBLK / VE)) * VE;
            if ((mode & CM_WHOLE_BC) && (c + 1) * TS <= L) {
                sj_copy4(bdst + tid * VE, bc_at(p.B, p.sB, i, e), 4);
                sj_copy4(cdst + tid * VE, bc_at(p.C, p.sC, i, e), 4);
            } else {
                const sj_i64 t = c * TS + i, n = nb0 + e;
                const sj_i64 cnt = t < L ? min((sj_i64)VE, N - n) : 0;
                copy_word(bdst + tid * VE, p.B, p.sB, b * p.pitch + t, n, cnt);
                copy_word(cdst + tid * VE, p.C, p.sC, b * p.pitch + t, n, cnt);
            }
        }
        /* The state at the chunk's start (checkpoint c - 1), for c >= 1. */
        const float *ck = p.ckpt + ((b * nch + c - 1) * D + d) * N + n0;
        if (ck16) {
            const bool ok = c >= 1 && dok;
            sj_copy16(sck + ch * NBLK + grp * NS, ok ? ck : p.ckpt, ok ? 16 : 0);
        } else {
#pragma unroll
            for (int k = 0; k < NS; ++k) {
                const bool ok = c >= 1 && dok && n0 + k < N;
                sj_copy4(sck + ch * NBLK + grp * NS + k, ok ? ck + k : p.A, ok ? 4 : 0);
            }
        }
    };
    /* Converts chunk c's copies (waited for and published by a barrier
     * before) into buf; h0 gets the chunk's starting state.  last: c is
     * the row's last chunk (told, not compared with nch: the comparison
     * kept nch live through the loop, and ptxas spilled 248 / 364 bytes,
     * bench/NOTES.md "Scan shapes, round 17"). */
    auto commit = [&](sj_i64 c, float *buf, float *h0, bool last) {
        const sj_bwd_stage sg(buf);
        const bool full = (c + 1) * TS <= L && d0 + BD <= D; /* no element to zero */
        /* Four adjacent elements of one token a thread, each tensor's in
         * one load, converted without branches (softplus and silu are
         * evaluated whether or not the op uses them, then selected), so
         * that the four elements' chains of exponential, logarithm and
         * reciprocal overlap: with a branch per element they ran one after
         * another. */
        constexpr int NI = TS * BD / SJ_BWD_THREADS;
        static_assert(NI == 4, "a thread converts one group of 4 elements");
        const int j0 = tid * NI, col0 = j0 % BD;
        /* (z's words are read, and ignored, also where the op has no z) */
        const uint4 ru = sj_load_group<T, NI>(raw, j0, NI, true),
                    rx = sj_load_group<T, NI>(raw, TS * BD + j0, NI, true),
                    rdy = sj_load_group<T, NI>(raw, 2 * TS * BD + j0, NI, true),
                    rz = sj_load_group<T, NI>(raw, 3 * TS * BD + j0, NI, true);
        const float4 bias4 = *(const float4 *)(sbias + col0);
        const float bias[NI] = {bias4.x, bias4.y, bias4.z, bias4.w};
        const bool row_ok = c * TS + j0 / BD < L;
        float S[NI];
#pragma unroll
        for (int e = 0; e < NI; ++e) {
            const float u = sj_lane<T>(ru, e), x = sj_lane<T>(rx, e) + bias[e], dy = sj_lane<T>(rdy, e),
                        z = p.z ? sj_lane<T>(rz, e) : 0.0f;
            float2 sp = sj_softplus_and_grad(x), sz = sj_silu_and_grad(z);
            sj_computed_here(sp.x, sp.y, sz.x, sz.y);
            if (!p.softplus)
                sp = make_float2(x, 1.0f);
            if (!p.z)
                sz = make_float2(1.0f, 0.0f);
            const bool ok = full || (row_ok && d0 + col0 + e < D);
            sg.P[j0 - col0 + sj_bwd_pslot(col0 + e)] =
                ok ? make_float4(sp.x, u, dy * sz.x, p.z ? dy * sz.y : 0.0f) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            S[e] = ok ? sp.y : 0.0f;
        }
        *(float4 *)(sg.S + j0) = make_float4(S[0], S[1], S[2], S[3]);
        if (RAW_BC && tid < BCW) {
#pragma unroll
            for (int e = 0; e < VE; ++e) {
                const int j = tid * VE + e;
                sg.B[j] = sj_to_float(rawB[j]);
                sg.C[j] = sj_to_float(rawC[j]);
            }
        }
        if (w == 0) { /* lane i: token i */
            const int2 ti = lane < TS ? sj_token_info(p, b, c * TS + lane) : make_int2(0, SJ_TOK_VALID);
            if (lane < TS)
                sg.info[lane] = ti;
            /* (the gradient enters before the chunk loop, dinit leaves
             * after it) */
            const bool all = __all_sync(0xffffffffu, sj_plain_token(ti, lane, c == 0, last));
            if (lane == 0)
                plain_flag[c & 1] = all;
        }
#pragma unroll
        for (int k = 0; k < NS; ++k)
            h0[k] = sck[ch * NBLK + grp * NS + k];
    };

    const float Dd = sDv[ch];
    /* Chunk c's stage buffer; whether it runs plain (run_chunk). */
    auto stage = [&](sj_i64 c) { return smem + (int)(c & 1) * SJ_BWD_BUF; };
    auto runs_plain = [&](sj_i64 c) { return p.NB == 1 && plain_flag[c & 1] && (copy_mode & CM_PLAIN); };
    /* Segment seg's gradient before its first token, into dinit. */
    auto leave_start = [&](int seg) {
        if (p.dinit && dok) {
#pragma unroll
            for (int k = 0; k < NS; ++k)
                if (n0 + k < N)
                    p.dinit[((sj_i64)seg * D + d) * N + n0 + k] = gc[k];
        }
    };

    float h0[NS];
    if (nch > 0) {
        issue(nch - 1, false);
        sj_copy_wait();
        __syncthreads();
        commit(nch - 1, stage(nch - 1), h0, true);
        __syncthreads();
        /* Without cu_seqlens a row's segment ends at its last token and
         * starts at its first, and a split's segments are the rows of its
         * view: those two chunks stay plain, the gradient entering here
         * and dinit leaving after the loop, outside the chunk's code (in
         * it, every plain chunk read and branched on its edge tokens).
         * Settled (sj_settled) like the forward's entering state. */
        const int2 end = sj_bwd_stage(stage(nch - 1)).info[TS - 1];
        if (runs_plain(nch - 1) && (end.y & SJ_TOK_END)) {
#pragma unroll
            for (int k = 0; k < NS; ++k)
                gc[k] = sj_settled(state_at(p.dfinal, end.x, k));
        }
    }

    for (sj_i64 c = nch - 1; c >= 0; --c) {
        const sj_bwd_stage sg(stage(c));
        float4 *const sP = sg.P;
        const float *sS = sg.S, *sB = sg.B, *sC = sg.C;
        const int2 *info = sg.info;
        /* read before the copies issue */
        const bool chunk_plain = runs_plain(c);
        if (c > 0)
            issue(c - 1, true);
#pragma unroll
        for (int k = 0; k < NS; ++k)
            dAc[k] = 0.0f;
        dDc = dbc = 0.0f;
        /* The chunk's work, instantiated twice (the lambda is inlined at
         * both calls): for chunks without a segment boundary between two
         * of their tokens or the end of L inside them (every chunk of a
         * row without cu_seqlens, but a last one cut short), N <= 16 and
         * blocks that CM_PLAIN allows every token check folds away, so no
         * per-token loads of initial or final states, no accumulator over
         * launches and no branches remain in the unrolled loops, and the
         * chunk's stores need no bounds.  (A branch between tokens also
         * keeps the compiler from overlapping their work.) */
        auto run_chunk = [&](const bool plain) {
            /* The chunk's states, recomputed from its checkpoint: 64
             * registers, fully unrolled. */
            float hs[TS][NS];
#pragma unroll
            for (int i = 0; i < TS; ++i) {
                const int2 ti = plain ? make_int2(0, SJ_TOK_VALID) : info[i];
                const float4 pv = sP[i * BD + pch];
                const float4 bb = *(const float4 *)(sB + i * NBLK + grp * NS);
                const float bv[NS] = {bb.x, bb.y, bb.z, bb.w}, dtu = pv.x * pv.y;
#pragma unroll
                for (int k = 0; k < NS; ++k) {
                    float hp = i > 0 ? hs[i - 1][k] : h0[k];
                    if (ti.y & SJ_TOK_START)
                        hp = state_at(p.init, ti.x, k);
                    hs[i][k] = fmaf(sj_exp2_ftz(pv.x * A2[k]), hp, dtu * bv[k]);
                }
            }
            float *const xl = xw + w * 32 + lane; /* this lane's cross-warp column */
            /* Adjoint recurrence, last token first, two tokens a step: both
             * tokens' arithmetic, then their transposes, then their sums
             * over states and outputs, so that each phase has two tokens'
             * independent work between the __syncwarp and shared-memory
             * accesses that the compiler may not move work across. */
            struct tok {
                float4 pv;            /* dt, u, dy', dy silu'(z) */
                float vB[NS], vC[NS]; /* this lane's terms of dB, dC */
                float sgb, sqa, sch;  /* its sums over its states: g B, A2 g a h, C h */
                float s;              /* its value of the transposed dB/dC, summed over the warp's channels */
            };
            auto adjoint = [&](int i, tok &o) {
                const int2 ti = plain ? make_int2(0, SJ_TOK_VALID) : info[i];
                const float4 pv = sP[i * BD + pch];
                o.pv = pv;
                const float dtu = pv.x * pv.y;
                const float4 bb = *(const float4 *)(sB + i * NBLK + grp * NS);
                const float4 cc = *(const float4 *)(sC + i * NBLK + grp * NS);
                const float bv[NS] = {bb.x, bb.y, bb.z, bb.w}, cv[NS] = {cc.x, cc.y, cc.z, cc.w};
                o.sgb = o.sqa = o.sch = 0.0f;
#pragma unroll
                for (int k = 0; k < NS; ++k) {
                    if (ti.y & SJ_TOK_END)
                        gc[k] = state_at(p.dfinal, ti.x, k);
                    float hp = i > 0 ? hs[i - 1][k] : h0[k];
                    if (ti.y & SJ_TOK_START)
                        hp = state_at(p.init, ti.x, k);
                    const float gk = fmaf(cv[k], pv.z, gc[k]);
                    o.vB[k] = gk * dtu;
                    o.vC[k] = pv.z * hs[i][k];
                    o.sgb = fmaf(gk, bv[k], o.sgb);
                    o.sch = fmaf(cv[k], hs[i][k], o.sch);
                    gc[k] = sj_exp2_ftz(pv.x * A2[k]) * gk;
                    const float q = gc[k] * hp;
                    dAc[k] = fmaf(q, pv.x, dAc[k]);
                    o.sqa = fmaf(q, A2[k], o.sqa);
                }
                if (ti.y & SJ_TOK_START)
                    leave_start(ti.x);
            };
            /* dB, dC over the warp's 8 channels: lane (c, g) then holds
             * value c of lane group g, summed. */
            auto put_rows = [&](const tok &o) {
                float *row = wt + (lane >> 2) * SJ_BWD_TP + grp * 8;
                *(float4 *)row = make_float4(o.vB[0], o.vB[1], o.vB[2], o.vB[3]);
                *(float4 *)(row + 4) = make_float4(o.vC[0], o.vC[1], o.vC[2], o.vC[3]);
            };
            auto sum_rows = [&](tok &o) {
                const float *wb = wt + grp * 8 + (lane >> 2);
                o.s = wb[0];
#pragma unroll
                for (int cw = 1; cw < 8; ++cw)
                    o.s += wb[cw * SJ_BWD_TP];
            };
            auto finish = [&](int i, tok &o) {
                xl[i * 8 * 32] = o.s;
                /* Sums over this channel's states (4 lanes), each only
                 * where an output needs it: lanes 0 and 1 (du, ddelta)
                 * get sum g B and lanes 2 and 3 (dz) sum C h, in one
                 * register; every lane gets sum A2 g a h.  Four shuffles
                 * instead of six, whose latency sat between a token's
                 * arithmetic and its outputs (bench/NOTES.md).  Lanes
                 * that share a sum get the same bits. */
                const bool gb_lane = grp < 2;
                float s_lane = gb_lane ? o.sgb : o.sch;
                s_lane += __shfl_xor_sync(0xffffffffu, gb_lane ? o.sch : o.sgb, 2);
                o.sqa += __shfl_xor_sync(0xffffffffu, o.sqa, 2);
                s_lane += __shfl_xor_sync(0xffffffffu, s_lane, 1);
                o.sqa += __shfl_xor_sync(0xffffffffu, o.sqa, 1);
                const float4 pv = o.pv;
                const sj_i64 t = c * TS + i;
                const bool out = (plain || t < L) && dok;
                float s1 = o.sqa * SJ_LN2;
                /* plain implies NB == 1; the constant `!plain` is what
                 * removes this branch from the plain instantiation */
                if (!plain && p.NB > 1 && out) {
                    float *acc = p.ws_acc + ((b * L + t) * D + d) * 3;
                    if (p.nb > 0) {
                        s_lane += acc[gb_lane ? 0 : 2];
                        s1 += acc[1];
                    }
                    if (!last_nb) {
                        if (grp == 0) {
                            acc[0] = s_lane;
                            acc[1] = s1;
                        } else if (grp == 2) {
                            acc[2] = s_lane;
                        }
                    }
                }
                /* Lane g of a channel puts du (g = 0), ddelta (1) or dz
                 * (2, 3) in component g of the token's slot in P, read
                 * for the last time in adjoint() (the transpose's
                 * __syncwarp orders it after every lane's read); the
                 * chunk's outputs leave together below.  All three values,
                 * then a selection: where the lanes of a channel each took
                 * their own branch, the warp ran all three one after
                 * another. */
                const float ddl = fmaf(pv.y, s_lane, s1) * sS[i * BD + ch];
                const float v0 = fmaf(pv.x, s_lane, Dd * pv.z), v2 = pv.w * fmaf(Dd, pv.y, s_lane);
                ((float *)&sP[i * BD + pch])[grp] = grp == 0 ? v0 : grp == 1 ? ddl : v2;
                /* Tokens past L have zeros in P and S, so add nothing;
                 * lanes past D and launches before the last store no
                 * sums. */
                dbc += ddl;
                dDc = fmaf(pv.z, pv.y, dDc);
            };
#pragma unroll
            for (int i = TS - 1; i >= 1; i -= 2) {
                tok hi, lo; /* tokens i and i - 1 */
                adjoint(i, hi);
                adjoint(i - 1, lo);
                put_rows(hi);
                __syncwarp();
                sum_rows(hi);
                __syncwarp();
                put_rows(lo);
                __syncwarp();
                sum_rows(lo);
                __syncwarp();
                finish(i, hi);
                finish(i - 1, lo);
            }
            /* dB, dC of the chunk's tokens summed over the block's 8 warps:
             * thread (token tid / 32 + 8 rr, value lane).  One buffer of
             * sums serves: the next writes follow the chunk's last
             * barrier.  The barrier also publishes the next chunk's
             * copies, so any thread may convert any of them. */
            sj_copy_wait();
            __syncthreads();
#pragma unroll
            for (int rr = 0; rr < TS / 8; ++rr) {
                const int i = (tid >> 5) + 8 * rr;
                float s = xw[i * 8 * 32 + lane];
#pragma unroll
                for (int ww = 1; ww < 8; ++ww)
                    s += xw[(i * 8 + ww) * 32 + lane];
                const int v = lane >> 2, e = grp * NS + (v & 3);
                /* Then du, ddelta, dz of the same token: each store of a
                 * warp covers 32 adjacent channels.  A plain chunk (one
                 * launch, so nb0 = 0) has every token inside L, every
                 * channel inside D and its offsets in 32 bits (CM_PLAIN);
                 * its states may pass N < 16.  du and ddelta are always
                 * given. */
                const sj_i64 t = c * TS + i, n = nb0 + e;
                const int row32 = (int)(b * p.pitch + t);
                auto at = [&](sj_i64 stride, int col) -> sj_i64 {
                    return plain ? row32 * (int)stride + (int)d0 + col : (b * p.pitch + t) * stride + d0 + col;
                };
                if (plain ? e < (int)N : t < L && n < N) {
                    float *const wbc = p.ws_bc + ((b * p.ndblk + blockIdx.x) * L + c * TS) * 2 * N;
                    wbc[plain ? i * 2 * (int)N + (v >> 2) * (int)N + e : i * 2 * N + (v >> 2) * N + n] = s;
                }
                if (plain || (last_nb && t < L)) {
#pragma unroll
                    for (int h = 0; h < BD / 32; ++h) {
                        const int col = h * 32 + lane;
                        const float4 o = sP[i * BD + sj_bwd_pslot(col)];
                        if (plain || d0 + col < D) {
                            sj_st<T>(p.du, at(p.sdu, col), o.x);
                            sj_st<T>(p.ddelta, at(p.sddelta, col), o.y);
                            if (p.dz)
                                sj_st<T>(p.dz, at(p.sdz, col), o.z);
                        }
                    }
                }
            }
        };
        if (chunk_plain) {
            /* the row's first chunk, plain, may start a segment at its
             * first token (commit's rule) */
            if (c == 0 && (info[0].y & SJ_TOK_START)) {
#pragma unroll
                for (int k = 0; k < NS; ++k)
                    h0[k] = sj_settled(state_at(p.init, info[0].x, k));
            }
            run_chunk(true);
        } else {
            run_chunk(false);
        }

        if (c > 0)
            commit(c - 1, stage(c - 1), h0, false);
#pragma unroll
        for (int k = 0; k < NS; ++k)
            osum[k * SJ_BWD_THREADS + tid] += dAc[k];
        osum[NS * SJ_BWD_THREADS + tid] += dDc;
        osum[(NS + 1) * SJ_BWD_THREADS + tid] += dbc;
        __syncthreads();
    }
    if (nch > 0) {
        const int2 start = sj_bwd_stage(stage(0)).info[0];
        if (runs_plain(0) && (start.y & SJ_TOK_START))
            leave_start(start.x);
    }

#pragma unroll
    for (int k = 0; k < NS; ++k)
        if (dok && n0 + k < N)
            p.ws_dA[(b * D + d) * N + n0 + k] = osum[k * SJ_BWD_THREADS + tid];
    /* One lane of each channel holds its sums over L. */
    if (last_nb && dok) {
        if (grp == 1)
            p.ws_db[b * D + d] = osum[(NS + 1) * SJ_BWD_THREADS + tid];
        if (grp == 3)
            p.ws_dD[b * D + d] = osum[NS * SJ_BWD_THREADS + tid];
    }
}

/* Rows whose loads sj_sum_rows has in flight at once. */
#define SJ_SUM_GROUP 8

/* The sum over n rows of src (src[0], src[stride], ...) in row order,
 * whole groups of SJ_SUM_GROUP rows read at a time, then the rest: summed
 * by a plain loop, the loads went out four at a time (ptxas's unrolling),
 * a round trip to memory for every four rows; groups with bounds checks
 * on each row's load were scheduled a load or two ahead of the adds.  The
 * adds and their order are the plain loop's. */
__device__ __forceinline__ float sj_sum_rows(const float *src, sj_i64 stride, sj_i64 n)
{
    float s = 0.0f;
    sj_i64 k = 0;
    for (; k + SJ_SUM_GROUP <= n; k += SJ_SUM_GROUP) {
        float v[SJ_SUM_GROUP];
#pragma unroll
        for (int j = 0; j < SJ_SUM_GROUP; ++j)
            v[j] = src[(k + j) * stride];
#pragma unroll
        for (int j = 0; j < SJ_SUM_GROUP; ++j)
            s += v[j];
    }
    for (; k < n; ++k)
        s += src[k * stride];
    return s;
}

/* dB [B, L, N] and dC (batch rows `pitch` tokens apart) from the per-block partials ws [B, ndblk, L, 2N],
 * summed over blocks in order.  One thread per output element. */
template <typename T>
__device__ __forceinline__ void sj_scan_bwd_reduce_bc(const float *ws, sj_i64 ndblk, sj_i64 batch, sj_i64 L,
                                                      sj_i64 pitch, sj_i64 N, void *dB, sj_i64 sdB, void *dC,
                                                      sj_i64 sdC)
{
    sj_chain_wait(); /* after the backward that wrote ws */
    const sj_i64 per_row = L * 2 * N, total = batch * per_row;
    for (sj_i64 e = (sj_i64)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (sj_i64)gridDim.x * blockDim.x) {
        const sj_i64 b = e / per_row, rem = e % per_row, t = rem / (2 * N), j = rem % (2 * N);
        const float s = sj_sum_rows(ws + b * ndblk * per_row + rem, per_row, ndblk);
        const sj_i64 row = b * pitch + t;
        if (j < N)
            sj_st<T>(dB, row * sdB + j, s);
        else
            sj_st<T>(dC, row * sdC + j - N, s);
    }
}

#define SJ_SCAN_BWD_KERNELS(T, sfx, unused)                                                                            \
    SJ_KERNEL(scan_bwd_##sfx)(                                                                                         \
    extern "C" __global__ void __launch_bounds__(SJ_BWD_THREADS, 2) scan_bwd_##sfx(const sj_scan_params p)             \
    {                                                                                                                  \
        sj_scan_bwd<T>(p);                                                                                             \
    })                                                                                                                 \
    SJ_KERNEL(scan_bwd_reduce_bc_##sfx)(                                                                               \
    extern "C" __global__ void scan_bwd_reduce_bc_##sfx(const float *ws, sj_i64 ndblk, sj_i64 batch,                   \
                                                        sj_i64 L, sj_i64 pitch, sj_i64 N, void *dB,                    \
                                                        sj_i64 sdB, void *dC, sj_i64 sdC)                              \
    {                                                                                                                  \
        sj_scan_bwd_reduce_bc<T>(ws, ndblk, batch, L, pitch, N, dB, sdB, dC, sdC);                                     \
    })                                                                                                                 \
    SJ_SCAN_FWD_KERNEL(scan_states, false, 8, 256, 2, 128, T, sfx)

SJ_FOR_EACH_DTYPE(SJ_SCAN_BWD_KERNELS, 0)

/* dA [D, N] = sum over batch rows of ws_dA [B, D, N]; dD, ddelta_bias [D]
 * likewise from ws_dD, ws_db (each output optional).  Fixed order, so
 * reproducible; batch = 0 writes zeros. */
#if SJ_KERNEL_WANTED(scan_bwd_reduce_params)
extern "C" __global__ void scan_bwd_reduce_params(const float *ws_dA, const float *ws_dD, const float *ws_db,
                                                  sj_i64 batch, sj_i64 D, sj_i64 N, float *dA, float *dD,
                                                  float *db)
{
    sj_chain_wait(); /* after the backward that wrote the partials */
    for (sj_i64 e = (sj_i64)blockIdx.x * blockDim.x + threadIdx.x; e < D * N;
         e += (sj_i64)gridDim.x * blockDim.x) {
        /* every sum read before any output is written (a read after a
         * write would wait for it: the compiler cannot tell they do not
         * alias) */
        const float s = sj_sum_rows(ws_dA + e, D * N, batch);
        const float sD = e < D ? sj_sum_rows(ws_dD + e, D, batch) : 0.0f;
        const float sb = e < D ? sj_sum_rows(ws_db + e, D, batch) : 0.0f;
        dA[e] = s;
        if (e < D) {
            if (dD)
                dD[e] = sD;
            if (db)
                db[e] = sb;
        }
    }
}
#endif

/* ------------------------------------------------------------------------ */
/* The backward split over L (src/ops/scan_split.c)                         */
/* ------------------------------------------------------------------------ */
/*
 * The segments of whole chunks (scan_common.cuh) are the rows of a view
 * whose checkpoint is the rows': scan_split_ends finds each segment's
 * gradient of its start state with no adjoint entering its end;
 * scan_split_carry carries the adjoints from the last segment to the
 * first; the backward runs over the segments with the carried adjoints
 * entering their ends.
 */

SJ_SCAN_SPLIT_KERNELS(true)

/* The state entering each view row r = b S + s: init[b] (or 0) for s = 0,
 * else the checkpoint's state after the row's previous chunk (r nch - 1,
 * nch the view row's chunks). */
#if SJ_KERNEL_WANTED(scan_split_starts)
extern "C" __global__ void scan_split_starts(const float *ckpt, const float *init, float *starts, sj_i64 B,
                                             sj_i64 S, sj_i64 nch, sj_i64 D, sj_i64 N)
{
    sj_chain_wait(); /* after the checkpoint's rebuild, where there is one */
    const sj_i64 DN = D * N;
    for (sj_i64 e = (sj_i64)blockIdx.x * blockDim.x + threadIdx.x; e < B * S * DN;
         e += (sj_i64)gridDim.x * blockDim.x) {
        const sj_i64 r = e / DN, dn = e % DN, b = r / S;
        starts[e] = r % S ? ckpt[(r * nch - 1) * DN + dn] : init ? init[b * DN + dn] : 0.0f;
    }
}
#endif
