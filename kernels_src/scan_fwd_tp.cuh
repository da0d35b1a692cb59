/* The token-parallel forward of the selective scan (module "scan_fwd",
 * kernels scan_fwd_tp<K>_<dtype>): for grids too small for scan_fwd_ns*,
 * whose threads each walk every token of their channel and states.
 *
 * A warp is one channel; its lanes hold K consecutive tokens each, a
 * chunk of 32 K tokens between them, and the block SJ_TP_CB channels.  A
 * lane takes its channel's states four at a time: it scans its own tokens
 * for the four, keeping each token's decay and input in registers; the
 * warp scans the lanes' (decay, state) pairs (sj_tp_enter: through shared
 * memory, then shuffles over eight lanes); and the lane
 * runs its tokens again from the state entering them, adding C h to each
 * token's output.  A lane's decay over its tokens is one exponential of
 * its summed dt, and the states entering a chunk (the last chunk's, from
 * its last lane) wait in shared memory.  Four states a step give the
 * exponentials' and shuffles' chains something to overlap and B and C
 * 16-byte (or 8-byte) shared loads.  Eight tokens a lane halve the warp
 * scan's share of a token, but take 168 registers (three blocks an SM),
 * and half a chunk of 256 is idle at 128 tokens; four take 128 (four
 * blocks an SM).  src/ops/scan_launch.c picks K.  The kernel took
 * 1 x 512 x 1536 from 0.041 / 0.035 ms to 0.030 / 0.023 (f32 / bf16;
 * bench/NOTES.md, "Scan shapes, round 4"); plain chunks and the scan
 * through shared memory took 3-9% more off (round 5).
 *
 * Shared memory, [c][i][j] for channel c, token j K + i of the chunk (so
 * that a warp's lanes read one row): u, dt (softplus and bias applied),
 * the gate (silu(z), or 1), and y on its way out in u's place.  Staging
 * items put lane j on token j K + i, the one whose slot it writes, so
 * that stores meet no bank twice; the loads behind them are 8 or 16 bytes
 * of 4 channels, and those of chunk c + 1 are issued before chunk c is
 * scanned.  B and C as they come (stage_bc), copied asynchronously
 * through L1: the SM's blocks read the same rows, and from L2 alone the
 * f32 kernel ran half as fast.
 *
 * Without cu_seqlens, N <= 4 SJ_TP_NG (src/ops/scan_launch.c's rule);
 * states past N scan with A = B = C = 0, which leaves them 0.  Tokens
 * past L scan as dt = 0 (decay 1, no input), so a lane's last state is
 * the state at its last real token, and the checkpoint (the state after
 * every SJ_SCAN_CHUNK tokens, the last one's too) comes from the lanes
 * whose tokens end a checkpoint chunk. */
#pragma once

#include "scan_common.cuh"

/* The host's copies (src/ops/scan_internal.h, SJ_SCAN_TP_*) are held
 * equal to these by tests/test_kernel_sizes.c. */
#define SJ_TP_CB 4 /* channels (warps) a block */
#define SJ_TP_NG 4 /* groups of 4 states: N <= 16 */
#define SJ_TP4_BLOCKS_PER_SM 4 /* the launch bounds of 4 tokens a lane */
#define SJ_TP8_BLOCKS_PER_SM 3 /* and of 8 */

/* The states entering each lane's tokens, st[e] for the quad's states e,
 * from every lane's (P, h), its decay over its tokens and its state after
 * them from 0, and the states entering the chunk (carry).  A lane's pair
 * after the pair before it is (P Pb, P hb + h).  Through this warp's
 * scratch in shared memory ([4][33] floats): lane 8 e + j takes state
 * e of lanes 4 j .. 4 j + 3 and combines them in order, the eight lanes
 * of a state scan their groups with three levels of shuffles, and each
 * group walks its four lanes' entering states from its own and hands
 * them back.  Five levels of shuffles for each of the four states cost
 * about three times the instructions. */
#define SJ_TP_ENTER_FLOATS (4 * 33)
__device__ __forceinline__ void sj_tp_enter(const float (&P)[4], const float (&h)[4], float4 carry, float *scratch,
                                            int lane, float (&st)[4])
{
    const int e = lane >> 3, j = lane & 7, at = e * 33 + 4 * j;
    /* one [4][33] array in turn: the lanes' P, their h, then the states
     * entering them; gather puts v[q] of every lane in row q and takes
     * state e of lanes 4 j .. 4 j + 3 out */
    auto gather = [&](const float (&v)[4], float (&out)[4]) {
#pragma unroll
        for (int q = 0; q < 4; ++q)
            scratch[q * 33 + lane] = v[q];
        __syncwarp();
#pragma unroll
        for (int i = 0; i < 4; ++i)
            out[i] = scratch[at + i];
    };
    float p[4], hv[4];
    gather(P, p);
    __syncwarp();
    gather(h, hv);
    float gp = p[0], gh = hv[0];
#pragma unroll
    for (int i = 1; i < 4; ++i) {
        gh = fmaf(p[i], gh, hv[i]);
        gp *= p[i];
    }
#pragma unroll
    for (int off = 1; off < 8; off <<= 1) {
        const float pb = __shfl_up_sync(0xffffffffu, gp, off, 8), hb = __shfl_up_sync(0xffffffffu, gh, off, 8);
        if (j >= off) {
            gh = fmaf(gp, hb, gh);
            gp *= pb;
        }
    }
    const float pe = __shfl_up_sync(0xffffffffu, gp, 1, 8), he = __shfl_up_sync(0xffffffffu, gh, 1, 8);
    const float c = e == 0 ? carry.x : e == 1 ? carry.y : e == 2 ? carry.z : carry.w;
    float s = j ? fmaf(pe, c, he) : c;
    __syncwarp();
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        scratch[at + i] = s;
        s = fmaf(p[i], s, hv[i]);
    }
    __syncwarp();
#pragma unroll
    for (int q = 0; q < 4; ++q)
        st[q] = scratch[q * 33 + lane];
}

/* K tokens a lane (a chunk of 32 K) */
template <typename T, int K> __device__ __forceinline__ void sj_scan_fwd_tp(const sj_scan_params &p)
{
    constexpr int CB = SJ_TP_CB, NG = SJ_TP_NG, TT = 32 * K, NT = 32 * CB;
    static_assert(SJ_SCAN_CHUNK % K == 0, "a lane's tokens end a checkpoint chunk or lie inside one");
    static_assert(K % 4 == 0 && CB % 4 == 0, "staging items are 4 channels, and K / 4 a thread");
    static_assert(TT % (NT / NG) == 0, "B and C copy in whole steps of the block");
    constexpr int TD_ITEMS = CB * TT / 4 / NT;
    __shared__ float su[CB * TT], sdt[CB * TT], sgate[CB * TT];
    constexpr int QB = 4 * (int)sizeof(T); /* bytes of a quad: 4 states of B or C */
    __shared__ __align__(16) unsigned char sbc[2 * NG * TT * QB];
    __shared__ float4 sA2[CB][NG], scarry[CB][NG];
    __shared__ float sscan[CB][SJ_TP_ENTER_FLOATS];
    __shared__ float sbias[CB];

    const int tid = threadIdx.x, lane = tid & 31, c = tid >> 5;
    const sj_i64 b = blockIdx.y, d0 = (sj_i64)blockIdx.x * CB, d = d0 + c, N = p.N;
    const bool dok = d < p.D;
    if (lane < 4 * NG) {
        ((float *)sA2[c])[lane] = dok && lane < N ? p.A[d * N + lane] * SJ_LOG2E : 0.0f;
        ((float *)scarry[c])[lane] = dok && lane < N && p.init ? p.init[(b * p.D + d) * N + lane] : 0.0f;
    }
    const sj_i64 nch = (p.L + TT - 1) / TT, nck = (p.L + SJ_SCAN_CHUNK - 1) / SJ_SCAN_CHUNK;
    if (tid < CB)
        sbias[tid] = d0 + tid < p.D && p.dbias ? p.dbias[d0 + tid] : 0.0f;
    const float Dv = dok && p.Dv ? p.Dv[d] : 0.0f;
    const bool vu = sj_group_ok<T, 4>(p.u, p.su), vdelta = sj_group_ok<T, 4>(p.delta, p.sdelta),
               vz = sj_group_ok<T, 4>(p.z, p.sz), vy = sj_group_ok<T, 4>(p.y, p.sy),
               vbc = sj_group_ok<T, 4>(p.B, p.sB) && sj_group_ok<T, 4>(p.C, p.sC),
               vck = p.ckpt && sj_group_ok<float, 4>(p.ckpt, N);
    /* Plain chunks: inside L, the block's channels inside D, every tensor
     * in aligned groups, N whole quads, and a chunk's rows of every tensor
     * within 2^31 elements of the chunk's first.  Their loads, copies and
     * stores skip the bounds checks and address a group as a chunk base
     * (the same across the block) plus a 32-bit offset, as scan_common.cuh's
     * fast chunks do: the general path's 64-bit offsets and checks took
     * more instructions than the rest of the staging. */
    const sj_i64 smax = max(max(max(p.su, p.sdelta), max(p.sB, p.sC)), max(p.z ? p.sz : 0, p.sy));
    const bool plain_block = d0 + CB <= p.D && vu && vdelta && (!p.z || vz) && vy && vbc && N % 4 == 0 &&
                             smax < ((sj_i64)1 << 31) / (TT + 1);
    auto plain = [&](sj_i64 ch) { return plain_block && (ch + 1) * TT <= p.L; };
    /* element 0 of token ch TT of this batch row */
    auto chunk_at = [&](const void *x, sj_i64 stride, sj_i64 ch) {
        return (T *)x + (b * p.pitch + ch * TT) * stride;
    };

    /* Staging item m of this thread: token j K + i of the chunk, and
     * channels 4 g .. 4 g + 3 of the block (u, delta, z). */
    struct td_item {
        int i, j, g;
    };
    auto td_at = [&](int m) { /* unsigned: the divisions by K are shifts */
        const unsigned k = threadIdx.x + m * NT, r = k >> 5;
        return td_item{(int)(r % K), (int)(k & 31), (int)(r / K)};
    };
    sj_fwd_raw td[TD_ITEMS];
    auto issue = [&](sj_i64 ch) {
        if (plain(ch)) {
            const T *u0 = chunk_at(p.u, p.su, ch) + d0, *delta0 = chunk_at(p.delta, p.sdelta, ch) + d0,
                    *z0 = p.z ? chunk_at(p.z, p.sz, ch) + d0 : nullptr;
#pragma unroll
            for (int m = 0; m < TD_ITEMS; ++m) {
                const td_item it = td_at(m);
                const int tok = it.j * K + it.i, col = 4 * it.g;
                td[m].u = sj_load_group<T, 4>(u0, tok * (int)p.su + col, 4, true);
                td[m].delta = sj_load_group<T, 4>(delta0, tok * (int)p.sdelta + col, 4, true);
                td[m].z = p.z ? sj_load_group<T, 4>(z0, tok * (int)p.sz + col, 4, true) : uint4{};
            }
            return;
        }
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
    };
    auto commit = [&](sj_i64 ch) {
        const bool pl = plain(ch);
#pragma unroll
        for (int m = 0; m < TD_ITEMS; ++m) {
            const td_item it = td_at(m);
            const bool tok = ch * TT + it.j * K + it.i < p.L;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int cc = 4 * it.g + e, at = (cc * K + it.i) * 32 + it.j;
                const bool in = pl || (tok && d0 + cc < p.D);
                const float x = sj_lane<T>(td[m].delta, e) + sbias[cc];
                su[at] = sj_lane<T>(td[m].u, e);
                sdt[at] = in ? (p.softplus ? sj_softplus(x) : x) : 0.0f;
                sgate[at] = p.z ? sj_silu(sj_lane<T>(td[m].z, e)) : 1.0f;
            }
        }
    };
    /* B and C of chunk ch as they come, quads [s][q][i][j'] for B (s = 0)
     * or C (s = 1), states 4 q .. 4 q + 3, token j K + i, copied without
     * holding registers while the last chunk's outputs leave.  A warp
     * copies consecutive quads of consecutive tokens (whole lines), and
     * slot j' = j ^ swizzle(i, q) puts the quads that one pass of the
     * shared-memory stores meets (QP tokens' 4 quads) on different banks;
     * a warp's reads of one (s, q, i) stay a permutation of the slots. */
    constexpr int QP = 128 / (4 * QB), QROWS = NT / NG; /* tokens a pass; a block's tokens a step */
    auto slot = [&](int s, int q, int i, int j) { return ((s * NG + q) * K + i) * 32 + (j ^ ((i % QP) * 4 + q)); };
    /* one quad of B or C into its slot, zeros where !in (src then only
     * has to be a valid address) */
    auto copy_quad = [&](unsigned char *dst, const T *src, bool in) {
        if (QB == 16)
            sj_copy16(dst, src, in ? 16 : 0, true);
        else
            sj_copy8(dst, src, in ? 8 : 0);
    };
    auto stage_bc = [&](sj_i64 ch) {
        const int q = threadIdx.x % NG, t0 = threadIdx.x / NG;
        if (plain(ch)) {
            if (4 * q >= N) /* quads the scan does not read */
                return;
#pragma unroll
            for (int s = 0; s < 2; ++s) {
                const T *row = chunk_at(s ? p.C : p.B, s ? p.sC : p.sB, ch) + 4 * q;
                const int stride = (int)(s ? p.sC : p.sB);
#pragma unroll
                for (int r = 0; r < TT / QROWS; ++r) {
                    const int tc = t0 + r * QROWS;
                    copy_quad(sbc + slot(s, q, tc % K, tc / K) * QB, row + tc * stride, true);
                }
            }
            return;
        }
        const sj_i64 have = min(max(N - 4 * q, (sj_i64)0), (sj_i64)4);
        const bool whole = vbc && (have == 0 || have == 4);
#pragma unroll
        for (int s = 0; s < 2; ++s) {
            const T *src = (const T *)(s ? p.C : p.B);
            const sj_i64 stride = s ? p.sC : p.sB;
            const T *row = src + (b * p.pitch + ch * TT + t0) * stride + 4 * q;
            if (whole) {
#pragma unroll
                for (int r = 0; r < TT / QROWS; ++r) {
                    const int tc = t0 + r * QROWS; /* token of the chunk */
                    const bool in = have && ch * TT + tc < p.L;
                    copy_quad(sbc + slot(s, q, tc % K, tc / K) * QB, in ? row + r * QROWS * stride : src, in);
                }
            } else {
                for (int r = 0; r < TT / QROWS; ++r) {
                    const int tc = t0 + r * QROWS;
                    const sj_i64 n = ch * TT + tc < p.L ? have : 0;
                    const uint4 v = sj_load_group<T, 4>(row, r * QROWS * stride, n, false);
                    unsigned char *dst = sbc + slot(s, q, tc % K, tc / K) * QB;
                    if (QB == 16)
                        *(uint4 *)dst = v;
                    else
                        *(uint2 *)dst = make_uint2(v.x, v.y);
                }
            }
        }
    };
    /* quad (s, q, i) of this lane's tokens as floats */
    auto bc_quad = [&](int s, int q, int i, float *v) {
        const int k = slot(s, q, i, lane);
        if (QB == 16) {
            const float4 f = ((const float4 *)sbc)[k];
            v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
        } else {
            const uint2 w = ((const uint2 *)sbc)[k];
#pragma unroll
            for (int e = 0; e < 4; ++e)
                v[e] = sj_lane<T>(make_uint4(w.x, w.y, 0u, 0u), e);
        }
    };

    if (nch > 0) {
        issue(0);
        stage_bc(0);
    }
    __syncthreads(); /* sbias, sA2, scarry */
    for (sj_i64 ch = 0; ch < nch; ++ch) {
        commit(ch);
        sj_copy_wait();
        __syncthreads();
        if (ch + 1 < nch)
            issue(ch + 1);

        const sj_i64 t0 = ch * TT + lane * K; /* this lane's first token */
        float dt[K], dtu[K], y[K], dts = 0.0f;
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const int at = (c * K + i) * 32 + lane;
            dt[i] = sdt[at];
            dtu[i] = dt[i] * su[at];
            dts += dt[i];
            y[i] = 0.0f;
        }
        /* the checkpoint chunk this lane's last real token ends, if any */
        const sj_i64 tl = min(t0 + K - 1, p.L - 1);
        const bool ck = p.ckpt && dok && t0 < p.L && (tl % SJ_SCAN_CHUNK == SJ_SCAN_CHUNK - 1 || tl == p.L - 1);
        float *ckp = ck ? p.ckpt + ((b * nck + tl / SJ_SCAN_CHUNK) * p.D + d) * N : nullptr;
#pragma unroll
        for (int q = 0; q < NG; ++q) {
            if (4 * q >= N)
                break;
            const float4 A2v = sA2[c][q];
            const float A2[4] = {A2v.x, A2v.y, A2v.z, A2v.w};
            float a[K][4], x[K][4], h[4] = {0.0f, 0.0f, 0.0f, 0.0f}, P[4];
#pragma unroll
            for (int i = 0; i < K; ++i) {
                float Bq[4];
                bc_quad(0, q, i, Bq);
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    a[i][e] = sj_exp2_ftz(dt[i] * A2[e]);
                    x[i][e] = dtu[i] * Bq[e];
                    h[e] = fmaf(a[i][e], h[e], x[i][e]);
                }
            }
#pragma unroll
            for (int e = 0; e < 4; ++e)
                P[e] = sj_exp2_ftz(dts * A2[e]);
            float st[4]; /* the states entering this lane's tokens */
            sj_tp_enter(P, h, scarry[c][q], sscan[c], lane, st);
#pragma unroll
            for (int i = 0; i < K; ++i) {
                float Cq[4];
                bc_quad(1, q, i, Cq);
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    st[e] = fmaf(a[i][e], st[e], x[i][e]);
                    y[i] = fmaf(Cq[e], st[e], y[i]);
                }
            }
            if (ck) {
                if (vck && 4 * q + 4 <= N)
                    *(float4 *)(ckp + 4 * q) = make_float4(st[0], st[1], st[2], st[3]);
                else
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        if (4 * q + e < N)
                            ckp[4 * q + e] = st[e];
            }
            __syncwarp();
            if (lane == 31) /* its last states end the chunk */
                scarry[c][q] = make_float4(st[0], st[1], st[2], st[3]);
        }
        /* y in u's slots (each thread its own), then out as it came in */
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const int at = (c * K + i) * 32 + lane;
            su[at] = fmaf(Dv, su[at], y[i]) * sgate[at];
        }
        __syncthreads();
        if (ch + 1 < nch)
            stage_bc(ch + 1);
        const bool pl = plain(ch);
        T *y0 = chunk_at(p.y, p.sy, ch) + d0;
#pragma unroll
        for (int m = 0; m < TD_ITEMS; ++m) {
            const td_item it = td_at(m);
            const int tok = it.j * K + it.i;
            const sj_i64 t = ch * TT + tok, dc = d0 + 4 * it.g;
            if (pl || (t < p.L && dc < p.D)) {
                float yv[4];
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    yv[e] = su[((4 * it.g + e) * K + it.i) * 32 + it.j];
                if (pl)
                    sj_store_group<T, 4>(y0, tok * (int)p.sy + 4 * it.g, 4, true, yv);
                else
                    sj_store_group<T, 4>(p.y, (b * p.pitch + t) * p.sy + dc, p.D - dc, vy, yv);
            }
        }
        __syncthreads();
    }
    __syncwarp();
    if (p.final_state && dok && lane < N)
        p.final_state[(b * p.D + d) * N + lane] = ((const float *)scarry[c])[lane];
}

/* scan_fwd_tp<K>_<dtype> for K tokens a lane, MINB blocks an SM (the
 * registers: 168 a thread at 8 tokens, 128 at 4) */
#define SJ_SCAN_FWD_TP_KERNEL(K, MINB, T, sfx)                                                                 \
    SJ_KERNEL(scan_fwd_tp##K##_##sfx)(                                                                         \
    extern "C" __global__ void __launch_bounds__(32 * SJ_TP_CB, MINB) scan_fwd_tp##K##_##sfx(const sj_scan_params p) \
    {                                                                                                          \
        sj_chain_wait(); /* launched plainly (an op's only kernel), but as every scan kernel */               \
        sj_scan_fwd_tp<T, K>(p);                                                                               \
    })
#define SJ_SCAN_FWD_TP_KERNELS(T, sfx, unused)                                                                 \
    SJ_SCAN_FWD_TP_KERNEL(4, SJ_TP4_BLOCKS_PER_SM, T, sfx) SJ_SCAN_FWD_TP_KERNEL(8, SJ_TP8_BLOCKS_PER_SM, T, sfx)
