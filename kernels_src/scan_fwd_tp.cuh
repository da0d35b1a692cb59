/* The token-parallel forward of the selective scan (module "scan_fwd",
 * kernels scan_fwd_tp_<dtype>): for grids too small for scan_fwd_ns*,
 * whose threads each walk every token of their channel and states.
 *
 * A warp is one channel; its lanes hold SJ_TP_K consecutive tokens each,
 * a chunk of SJ_TP_TOKENS tokens between them, and the block SJ_TP_CB
 * channels.  For each state the lanes scan their own tokens, then the
 * warp scans the lanes' (decay, state) pairs with shuffles, and each lane
 * runs its tokens again from the state entering them (the decays and
 * inputs kept in registers from the first run).  The state entering a
 * chunk is the last one's; lane n holds state n's.  That is about twice
 * the token-serial kernels' instructions a token and state (the
 * shuffles, two runs), spread over 32 times their threads: at one
 * sequence of 512 tokens and 1536 channels each SM gets 12 warps where
 * the token-serial kernels had 1.5, and their latency showed in every
 * token (bench/NOTES.md).
 *
 * Shared memory, [c][i][j] for channel c, token j K + i of the chunk (so
 * that a warp's lanes read one row): u, dt (softplus and bias applied),
 * the gate (silu(z), or 1), and y on its way out in u's place; B and C
 * [n][i][j] for state n.  Staging items put lane j on token j K + i, the
 * one whose slot it writes, so that stores meet no bank twice; the loads
 * behind them are 8 or 16 bytes of 4 channels or states.  The loads of
 * chunk c + 1 are issued before chunk c is scanned.  Two blocks an SM
 * (128 registers a thread).
 *
 * Without cu_seqlens, N <= 4 SJ_TP_NG (src/ops/scan_launch.c's rule).
 * Tokens past L scan as dt = 0 (decay 1, no input), so a lane's last state
 * is the state at its last real token, and the checkpoint (the state
 * after every SJ_SCAN_CHUNK tokens, the last one's too) comes from the
 * lanes whose tokens end a checkpoint chunk. */
#pragma once

#include "scan_common.cuh"

#define SJ_TP_K 4                    /* tokens a lane */
#define SJ_TP_CB 8                   /* channels (warps) a block */
#define SJ_TP_NG 4                   /* groups of 4 states: N <= 16 */
#define SJ_TP_TOKENS (32 * SJ_TP_K)  /* tokens a chunk */

static_assert(SJ_SCAN_CHUNK % SJ_TP_K == 0, "a lane's tokens end a checkpoint chunk or lie inside one");
static_assert(SJ_TP_K % 4 == 0 && SJ_TP_CB % 4 == 0, "staging items are 4 channels, and K / 4 a thread");

template <typename T> __device__ __forceinline__ void sj_scan_fwd_tp(const sj_scan_params &p)
{
    constexpr int K = SJ_TP_K, CB = SJ_TP_CB, NG = SJ_TP_NG, TT = SJ_TP_TOKENS, NT = 32 * CB;
    constexpr int TD_ITEMS = CB * TT / 4 / NT, BC_ITEMS = 2 * NG * TT / NT;
    __shared__ float su[CB * TT], sdt[CB * TT], sgate[CB * TT], sbc[2 * 4 * NG * TT], sA2[CB][4 * NG], sbias[CB];

    const int tid = threadIdx.x, lane = tid & 31, c = tid >> 5;
    const sj_i64 b = blockIdx.y, d0 = (sj_i64)blockIdx.x * CB, d = d0 + c, N = p.N;
    const bool dok = d < p.D;
    /* the state entering the chunk: lane n holds state n's */
    float carry = dok && lane < N && p.init ? p.init[(b * p.D + d) * N + lane] : 0.0f;
    if (lane < 4 * NG)
        sA2[c][lane] = dok && lane < N ? p.A[d * N + lane] * SJ_LOG2E : 0.0f;
    const sj_i64 nch = (p.L + TT - 1) / TT, nck = (p.L + SJ_SCAN_CHUNK - 1) / SJ_SCAN_CHUNK;
    if (tid < CB)
        sbias[tid] = d0 + tid < p.D && p.dbias ? p.dbias[d0 + tid] : 0.0f;
    const float Dv = dok && p.Dv ? p.Dv[d] : 0.0f;
    const bool vu = sj_group_ok<T, 4>(p.u, p.su), vdelta = sj_group_ok<T, 4>(p.delta, p.sdelta),
               vz = sj_group_ok<T, 4>(p.z, p.sz), vy = sj_group_ok<T, 4>(p.y, p.sy),
               vbc = sj_group_ok<T, 4>(p.B, p.sB) && sj_group_ok<T, 4>(p.C, p.sC);

    /* Staging item m of this thread: token j K + i of the chunk, and
     * channels 4 g .. 4 g + 3 of the block (u, delta, z) or states 4 q ..
     * 4 q + 3 of B (s = 0) or C (s = 1). */
    struct td_item {
        int i, j, g;
    };
    auto td_at = [&](int m) {
        const int k = tid + m * NT, r = k >> 5;
        return td_item{r % K, k & 31, r / K};
    };
    struct bc_item {
        int i, j, q, s;
    };
    auto bc_at = [&](int m) {
        const int k = tid + m * NT, r = k >> 5, r2 = r / K;
        return bc_item{r % K, k & 31, r2 % NG, r2 / NG};
    };
    sj_fwd_raw td[TD_ITEMS];
    uint4 bc[BC_ITEMS];
    auto issue = [&](sj_i64 ch) {
#pragma unroll
        for (int m = 0; m < TD_ITEMS; ++m) {
            const td_item it = td_at(m);
            const sj_i64 t = ch * TT + it.j * K + it.i, dc = d0 + 4 * it.g, row = b * p.pitch + t;
            td[m] = sj_fwd_raw{};
            if (t < p.L && dc < p.D) {
                td[m].u = sj_load_group<T, 4>(p.u, row * p.su + dc, p.D - dc, vu);
                td[m].delta = sj_load_group<T, 4>(p.delta, row * p.sdelta + dc, p.D - dc, vdelta);
                if (p.z)
                    td[m].z = sj_load_group<T, 4>(p.z, row * p.sz + dc, p.D - dc, vz);
            }
        }
#pragma unroll
        for (int m = 0; m < BC_ITEMS; ++m) {
            const bc_item it = bc_at(m);
            const sj_i64 t = ch * TT + it.j * K + it.i, n = 4 * it.q, row = b * p.pitch + t;
            bc[m] = make_uint4(0u, 0u, 0u, 0u);
            if (t < p.L && n < N)
                bc[m] = it.s ? sj_load_group<T, 4>(p.C, row * p.sC + n, N - n, vbc)
                             : sj_load_group<T, 4>(p.B, row * p.sB + n, N - n, vbc);
        }
    };
    auto commit = [&](sj_i64 ch) {
#pragma unroll
        for (int m = 0; m < TD_ITEMS; ++m) {
            const td_item it = td_at(m);
            const bool tok = ch * TT + it.j * K + it.i < p.L;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int cc = 4 * it.g + e, at = (cc * K + it.i) * 32 + it.j;
                const bool in = tok && d0 + cc < p.D;
                const float x = sj_lane<T>(td[m].delta, e) + sbias[cc];
                su[at] = sj_lane<T>(td[m].u, e);
                sdt[at] = in ? (p.softplus ? sj_softplus(x) : x) : 0.0f;
                sgate[at] = p.z ? sj_silu(sj_lane<T>(td[m].z, e)) : 1.0f;
            }
        }
#pragma unroll
        for (int m = 0; m < BC_ITEMS; ++m) {
            const bc_item it = bc_at(m);
#pragma unroll
            for (int e = 0; e < 4; ++e)
                sbc[((it.s * 4 * NG + 4 * it.q + e) * K + it.i) * 32 + it.j] = sj_lane<T>(bc[m], e);
        }
    };

    if (nch > 0)
        issue(0);
    __syncthreads(); /* sbias, sA2 */
    for (sj_i64 ch = 0; ch < nch; ++ch) {
        commit(ch);
        __syncthreads();
        if (ch + 1 < nch)
            issue(ch + 1);

        const sj_i64 t0 = ch * TT + lane * K; /* this lane's first token */
        float u[K], dt[K], dtu[K], y[K];
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const int at = (c * K + i) * 32 + lane;
            u[i] = su[at];
            dt[i] = sdt[at];
            dtu[i] = dt[i] * u[i];
            y[i] = 0.0f;
        }
        /* the checkpoint chunk this lane's last real token ends, if any */
        const sj_i64 tl = min(t0 + K - 1, p.L - 1);
        const bool ck = p.ckpt && dok && t0 < p.L && (tl % SJ_SCAN_CHUNK == SJ_SCAN_CHUNK - 1 || tl == p.L - 1);
        float *ckp = ck ? p.ckpt + ((b * nck + tl / SJ_SCAN_CHUNK) * p.D + d) * N : nullptr;
        /* Two states at a time, so that their chains overlap: more, or
         * every state unrolled, cost registers past two blocks an SM, and
         * ran no faster (bench/NOTES.md). */
#pragma unroll 2
        for (int n = 0; n < N; ++n) {
            const float A2 = sA2[c][n];
            float a[K], x[K], h = 0.0f, P = 1.0f;
#pragma unroll
            for (int i = 0; i < K; ++i) {
                a[i] = sj_exp2_ftz(dt[i] * A2);
                x[i] = dtu[i] * sbc[(n * K + i) * 32 + lane];
                h = fmaf(a[i], h, x[i]);
                P *= a[i];
            }
            /* inclusive scan of the lanes' (P, h): a lane's pair after
             * the pair before it is (P Pb, P hb + h) */
#pragma unroll
            for (int off = 1; off < 32; off <<= 1) {
                const float Pb = __shfl_up_sync(0xffffffffu, P, off), hb = __shfl_up_sync(0xffffffffu, h, off);
                if (lane >= off) {
                    h = fmaf(P, hb, h);
                    P *= Pb;
                }
            }
            float hx = __shfl_up_sync(0xffffffffu, h, 1), Px = __shfl_up_sync(0xffffffffu, P, 1);
            if (lane == 0)
                hx = 0.0f, Px = 1.0f;
            const float in = __shfl_sync(0xffffffffu, carry, n);
            float st = fmaf(Px, in, hx); /* the state entering this lane's tokens */
            const float out = fmaf(__shfl_sync(0xffffffffu, P, 31), in, __shfl_sync(0xffffffffu, h, 31));
            if (lane == n)
                carry = out;
#pragma unroll
            for (int i = 0; i < K; ++i) {
                st = fmaf(a[i], st, x[i]);
                y[i] = fmaf(sbc[((4 * NG + n) * K + i) * 32 + lane], st, y[i]);
            }
            if (ck)
                ckp[n] = st;
        }
        /* y in u's slots (each thread its own), then out as it came in */
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const int at = (c * K + i) * 32 + lane;
            su[at] = fmaf(Dv, u[i], y[i]) * sgate[at];
        }
        __syncthreads();
#pragma unroll
        for (int m = 0; m < TD_ITEMS; ++m) {
            const td_item it = td_at(m);
            const sj_i64 t = ch * TT + it.j * K + it.i, dc = d0 + 4 * it.g;
            if (t < p.L && dc < p.D) {
                float yv[4];
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    yv[e] = su[((4 * it.g + e) * K + it.i) * 32 + it.j];
                sj_store_group<T, 4>(p.y, (b * p.pitch + t) * p.sy + dc, p.D - dc, vy, yv);
            }
        }
        __syncthreads();
    }
    if (p.final_state && dok && lane < N)
        p.final_state[(b * p.D + d) * N + lane] = carry;
}

#define SJ_SCAN_FWD_TP_KERNEL(T, sfx, unused)                                                                \
    SJ_KERNEL(scan_fwd_tp_##sfx)(                                                                              \
    extern "C" __global__ void __launch_bounds__(32 * SJ_TP_CB, 2) scan_fwd_tp_##sfx(const sj_scan_params p)     \
    {                                                                                                          \
        sj_scan_fwd_tp<T>(p);                                                                                  \
    })
