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
 * Design: a block is 32 channels (lanes) x GB warps of 4 states each, so one
 * launch covers 16 states; N > 16 takes ceil(N / 16) launches in stream
 * order, which pass the per-token sums over states (sum g B, sum A g a h,
 * sum C h) through a workspace accumulator.  The block walks chunks of 16
 * tokens from last to first.  For each chunk it recomputes the 16 states of
 * every token from the checkpoint at the chunk start into registers (fully
 * unrolled, 64 per thread), then runs the adjoint recurrence backwards over
 * them, so each exponential is evaluated twice and nothing per token and
 * state reaches memory.
 *
 * Nothing uses atomics, so results are bit-reproducible:
 *  - dB, dC (sums over d): each warp sums its 32 channels through shared
 *    memory per group of 4 tokens and writes one partial per block into
 *    ws_bc [B, ndblk, L, 2N]; scan_bwd_reduce_bc sums the blocks in order.
 *  - sums over states of one (token, channel): per-warp partials in shared
 *    memory, added in warp order (then over launches, in launch order).
 *  - dA, dD, ddelta_bias (sums over B and L): per-thread sums over L, one
 *    partial per batch row in the workspace, summed over rows in order by
 *    scan_bwd_reduce_params.
 */
#include "scan_common.cuh"

#define SJ_BWD_NS 4    /* states per thread */
#define SJ_BWD_NBLK 16 /* states per launch (4 warps) */
#define SJ_BWD_TR 4    /* tokens per reduction group */
/* Warp buffer for dB/dC: per token, one row of 8 values per lane, rows 12
 * floats apart so the 16-byte stores of 8 lanes hit distinct banks, and 8
 * floats of padding per token so that the column reads are conflict-free. */
#define SJ_WB_ROW 12
#define SJ_WB_TOK (32 * SJ_WB_ROW + 8)

/* Shared memory (floats), mirrored by scan_bwd_smem_floats() in
 * src/ops_scan.c: two stage buffers of
 *     B, C [TS][16]; u, dt, dy', dy silu'(z), softplus' [TS][32]; info [TS]
 * then the state-sum buffers [2][TR][3][GB][32] and the warp buffers
 * [GB][TR][SJ_WB_TOK]. */
#define SJ_BWD_BUF (2 * SJ_SCAN_CHUNK * SJ_BWD_NBLK + 5 * SJ_SCAN_CHUNK * 32 + 2 * SJ_SCAN_CHUNK)

struct sj_bwd_raw {
    float u, delta, dy, z;
};

template <typename T> __device__ __forceinline__ void sj_scan_bwd(const sj_scan_params &p)
{
    constexpr int TS = SJ_SCAN_CHUNK, NS = SJ_BWD_NS, TR = SJ_BWD_TR, NBLK = SJ_BWD_NBLK;
    extern __shared__ float4 sj_smem4[];
    float *smem = (float *)sj_smem4;
    const int GB = blockDim.x >> 5, tid = threadIdx.x, lane = tid & 31, g = tid >> 5;
    const sj_i64 b = blockIdx.y, d0 = (sj_i64)blockIdx.x * 32, d = d0 + lane;
    const bool dok = d < p.D;
    const sj_i64 N = p.N, D = p.D, L = p.L, nb0 = p.nb * NBLK, n0 = nb0 + g * NS;
    const bool last_nb = p.nb == p.NB - 1;
    const int RED = TR * 3 * GB * 32;
    float *red = smem + 2 * SJ_BWD_BUF;
    float *wb = red + 2 * RED + g * (TR * SJ_WB_TOK);

    float A2[NS], Ar[NS], gc[NS], dA[NS];
#pragma unroll
    for (int k = 0; k < NS; ++k) {
        Ar[k] = dok && n0 + k < N ? p.A[d * N + n0 + k] : 0.0f;
        A2[k] = Ar[k] * SJ_LOG2E;
        gc[k] = 0.0f;
        dA[k] = 0.0f;
    }
    /* Sums over L in two levels (per chunk, then over chunks) to keep their
     * rounding error small for long sequences. */
    float dD_acc = 0.0f, db_acc = 0.0f, dAc[NS], dDc = 0.0f, dbc = 0.0f;
    auto state_at = [&](const float *s, sj_i64 seg, int k) {
        return s && dok && n0 + k < N ? s[(seg * D + d) * N + n0 + k] : 0.0f;
    };

    if (p.dinit && dok)
        sj_for_empty_segments(p, [&](sj_i64 s) {
            for (int k = 0; k < NS; ++k)
                if (n0 + k < N)
                    p.dinit[(s * D + d) * N + n0 + k] = state_at(p.dfinal, s, k);
        });

    /* Staging: this thread's channel for tokens g, g + GB, ...; B and C at
     * state tid % 16 for tokens tid / 16, + 2 GB, ... */
    const int cnt_td = (TS - g + GB - 1) / GB;
    const int bc_t0 = tid >> 4, bc_j = tid & 15, bc_step = 2 * GB;
    const int cnt_bc = (TS - bc_t0 + bc_step - 1) / bc_step;
    auto load_td = [&](sj_i64 c, int k) {
        const sj_i64 t = c * TS + g + k * GB;
        sj_bwd_raw r = {0.0f, 0.0f, 0.0f, 0.0f};
        if (t < L && dok) {
            const sj_i64 row = b * L + t;
            r.u = sj_ld<T>(p.u, row * p.su + d);
            r.delta = sj_ld<T>(p.delta, row * p.sdelta + d);
            r.dy = sj_ld<T>(p.dy, row * p.sdy + d);
            if (p.z)
                r.z = sj_ld<T>(p.z, row * p.sz + d);
        }
        return r;
    };
    auto store_td = [&](float *buf, sj_i64 c, int k, const sj_bwd_raw &r) {
        const int e = (g + k * GB) * 32 + lane;
        float *su = buf + 2 * TS * NBLK;
        if (!(c * TS + g + k * GB < L && dok)) {
            for (int v = 0; v < 5; ++v)
                su[v * TS * 32 + e] = 0.0f;
            return;
        }
        const float x = r.delta + (p.dbias ? p.dbias[d] : 0.0f);
        su[e] = r.u;
        su[TS * 32 + e] = p.softplus ? sj_softplus(x) : x;
        su[2 * TS * 32 + e] = p.z ? r.dy * sj_silu(r.z) : r.dy;
        su[3 * TS * 32 + e] = p.z ? r.dy * sj_silu_grad(r.z) : 0.0f;
        su[4 * TS * 32 + e] = p.softplus ? sj_softplus_grad(x) : 1.0f;
    };
    auto load_bc = [&](sj_i64 c, int k) { return sj_load_bc<T>(p, b, c * TS + bc_t0 + k * bc_step, nb0 + bc_j); };

    sj_stager<4, sj_bwd_raw> st_td;
    sj_stager<2, sj_bc_raw> st_bc;
    auto issue = [&](sj_i64 c) {
        st_td.issue(cnt_td, [&](int k) { return load_td(c, k); });
        st_bc.issue(cnt_bc, [&](int k) { return load_bc(c, k); });
    };
    auto commit = [&](sj_i64 c, float *buf) {
        st_td.commit(cnt_td, [&](int k) { return load_td(c, k); },
                     [&](int k, const sj_bwd_raw &r) { store_td(buf, c, k, r); });
        st_bc.commit(cnt_bc, [&](int k) { return load_bc(c, k); }, [&](int k, const sj_bc_raw &r) {
            const int e = (bc_t0 + k * bc_step) * NBLK + bc_j;
            buf[e] = r.b;
            buf[TS * NBLK + e] = r.c;
        });
        if (tid < TS)
            ((int2 *)(buf + 2 * TS * NBLK + 5 * TS * 32))[tid] = sj_token_info(p, b, c * TS + tid);
    };

    const sj_i64 nch = (L + TS - 1) / TS;
    if (nch > 0) {
        issue(nch - 1);
        commit(nch - 1, smem + ((nch - 1) & 1) * SJ_BWD_BUF);
        __syncthreads();
    }
    int par = 0; /* state-sum buffer of the current group (alternates) */

    for (sj_i64 c = nch - 1; c >= 0; --c) {
        const float *buf = smem + (c & 1) * SJ_BWD_BUF;
        const float *sB = buf, *sC = buf + TS * NBLK, *su = sC + TS * NBLK, *sdt = su + TS * 32,
                    *sdyp = sdt + TS * 32, *szf = sdyp + TS * 32, *sspg = szf + TS * 32;
        const int2 *info = (const int2 *)(sspg + TS * 32);
        if (c > 0)
            issue(c - 1);

#pragma unroll
        for (int k = 0; k < NS; ++k)
            dAc[k] = 0.0f;
        dDc = dbc = 0.0f;

        /* The chunk's work, instantiated twice (the lambda is inlined at
         * both calls): for chunks without a segment boundary or the end of
         * L (all but the first and last without cu_seqlens) every token
         * check folds away, so no per-token loads of initial or final
         * states and no branches remain in the unrolled loops. */
        auto run_chunk = [&](const bool plain) {
            float h0[NS], hs[TS][NS];
#pragma unroll
            for (int k = 0; k < NS; ++k)
                h0[k] = c > 0 ? state_at(p.ckpt + (b * (nch - 1) + c - 1) * D * N, 0, k) : 0.0f;

            /* States of every token of the chunk. */
#pragma unroll
            for (int i = 0; i < TS; ++i) {
                const int2 ti = plain ? make_int2(0, SJ_TOK_VALID) : info[i];
                const float dt = sdt[i * 32 + lane], dtu = dt * su[i * 32 + lane];
                const float4 bb = *(const float4 *)(sB + i * NBLK + g * NS);
                const float bv[NS] = {bb.x, bb.y, bb.z, bb.w};
#pragma unroll
                for (int k = 0; k < NS; ++k) {
                    float hp = i > 0 ? hs[i - 1][k] : h0[k];
                    if (ti.y & SJ_TOK_START)
                        hp = state_at(p.init, ti.x, k);
                    hs[i][k] = fmaf(exp2f(dt * A2[k]), hp, dtu * bv[k]);
                }
            }

            /* Adjoint recurrence, last token first, in groups of TR tokens. */
#pragma unroll
            for (int grp = TS / TR - 1; grp >= 0; --grp) {
                float *rd = red + par * RED;
#pragma unroll
                for (int r = TR - 1; r >= 0; --r) {
                    const int i = grp * TR + r;
                    const int2 ti = plain ? make_int2(0, SJ_TOK_VALID) : info[i];
                    const float u = su[i * 32 + lane], dt = sdt[i * 32 + lane], dyp = sdyp[i * 32 + lane];
                    const float dtu = dt * u;
                    const float4 bb = *(const float4 *)(sB + i * NBLK + g * NS);
                    const float4 cc = *(const float4 *)(sC + i * NBLK + g * NS);
                    const float bv[NS] = {bb.x, bb.y, bb.z, bb.w}, cv[NS] = {cc.x, cc.y, cc.z, cc.w};
                    float duraw = 0.0f, ddtA = 0.0f, yp = 0.0f, vB[NS], vC[NS];
#pragma unroll
                    for (int k = 0; k < NS; ++k) {
                        if (ti.y & SJ_TOK_END)
                            gc[k] = state_at(p.dfinal, ti.x, k);
                        float hp = i > 0 ? hs[i - 1][k] : h0[k];
                        if (ti.y & SJ_TOK_START)
                            hp = state_at(p.init, ti.x, k);
                        const float a = exp2f(dt * A2[k]);
                        const float gk = fmaf(cv[k], dyp, gc[k]);
                        vB[k] = gk * dtu;
                        vC[k] = dyp * hs[i][k];
                        duraw = fmaf(gk, bv[k], duraw);
                        yp = fmaf(cv[k], hs[i][k], yp);
                        gc[k] = a * gk;
                        const float q = gc[k] * hp;
                        dAc[k] = fmaf(q, dt, dAc[k]);
                        ddtA = fmaf(q, Ar[k], ddtA);
                    }
                    if ((ti.y & SJ_TOK_START) && p.dinit && dok) {
#pragma unroll
                        for (int k = 0; k < NS; ++k)
                            if (n0 + k < N)
                                p.dinit[((sj_i64)ti.x * D + d) * N + n0 + k] = gc[k];
                    }
                    float *row = wb + r * SJ_WB_TOK + lane * SJ_WB_ROW;
                    *(float4 *)row = make_float4(vB[0], vB[1], vB[2], vB[3]);
                    *(float4 *)(row + 4) = make_float4(vC[0], vC[1], vC[2], vC[3]);
                    rd[((r * 3 + 0) * GB + g) * 32 + lane] = duraw;
                    rd[((r * 3 + 1) * GB + g) * 32 + lane] = ddtA;
                    rd[((r * 3 + 2) * GB + g) * 32 + lane] = yp;
                }

                /* dB, dC of this warp's states summed over its 32 channels: lane
                 * (r, j) adds column j of token r. */
                __syncwarp();
                {
                    const int r = lane >> 3, j = lane & 7;
                    const float *col = wb + r * SJ_WB_TOK + j;
                    float s = 0.0f;
#pragma unroll 8
                    for (int l = 0; l < 32; ++l)
                        s += col[l * SJ_WB_ROW];
                    const sj_i64 t = c * TS + grp * TR + r, n = n0 + (j & 3);
                    if (t < L && n < N)
                        p.ws_bc[((b * p.ndblk + blockIdx.x) * L + t) * 2 * N + (j >> 2) * N + n] = s;
                }
                __syncwarp();
                __syncthreads();

                /* Per (token, channel): the sums over this launch's states in warp
                 * order, then over launches, then the outputs. */
                for (int e = tid; e < TR * 32; e += blockDim.x) {
                    const int r = e >> 5, i = grp * TR + r, ei = i * 32 + lane;
                    const sj_i64 t = c * TS + i;
                    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
                    for (int w = 0; w < GB; ++w) {
                        s0 += rd[((r * 3 + 0) * GB + w) * 32 + lane];
                        s1 += rd[((r * 3 + 1) * GB + w) * 32 + lane];
                        s2 += rd[((r * 3 + 2) * GB + w) * 32 + lane];
                    }
                    if (t >= L || !dok)
                        continue;
                    if (p.NB > 1) {
                        float *acc = p.ws_acc + ((b * L + t) * D + d) * 3;
                        if (p.nb > 0) {
                            s0 += acc[0];
                            s1 += acc[1];
                            s2 += acc[2];
                        }
                        if (!last_nb) {
                            acc[0] = s0;
                            acc[1] = s1;
                            acc[2] = s2;
                            continue;
                        }
                    }
                    const float u = su[ei], dt = sdt[ei], dyp = sdyp[ei];
                    const float Dd = p.Dv ? p.Dv[d] : 0.0f;
                    const sj_i64 row = b * L + t;
                    const float ddl = fmaf(u, s0, s1) * sspg[ei];
                    sj_st<T>(p.du, row * p.sdu + d, fmaf(dt, s0, Dd * dyp));
                    sj_st<T>(p.ddelta, row * p.sddelta + d, ddl);
                    if (p.z)
                        sj_st<T>(p.dz, row * p.sdz + d, szf[ei] * fmaf(Dd, u, s2));
                    dDc = fmaf(dyp, u, dDc);
                    dbc += ddl;
                }
                par ^= 1;
            }
        };
        bool plain = true;
#pragma unroll
        for (int i = 0; i < TS; ++i)
            plain = plain && info[i].y == SJ_TOK_VALID;
        if (plain)
            run_chunk(true);
        else
            run_chunk(false);

#pragma unroll
        for (int k = 0; k < NS; ++k)
            dA[k] += dAc[k];
        dD_acc += dDc;
        db_acc += dbc;
        if (c > 0)
            commit(c - 1, smem + ((c - 1) & 1) * SJ_BWD_BUF);
        __syncthreads();
    }

#pragma unroll
    for (int k = 0; k < NS; ++k)
        if (dok && n0 + k < N)
            p.ws_dA[(b * D + d) * N + n0 + k] = dA[k];

    if (last_nb) {
        /* Per-channel sums of this block's threads, in warp order. */
        float *sd = red;
        __syncthreads();
        sd[g * 32 + lane] = dD_acc;
        sd[(GB + g) * 32 + lane] = db_acc;
        __syncthreads();
        if (g == 0 && dok) {
            float sD = 0.0f, sb = 0.0f;
            for (int w = 0; w < GB; ++w) {
                sD += sd[w * 32 + lane];
                sb += sd[(GB + w) * 32 + lane];
            }
            p.ws_dD[b * D + d] = sD;
            p.ws_db[b * D + d] = sb;
        }
    }
}

/* dB [B, L, N] and dC from the per-block partials ws [B, ndblk, L, 2N],
 * summed over blocks in order.  One thread per output element. */
template <typename T>
__device__ __forceinline__ void sj_scan_bwd_reduce_bc(const float *ws, sj_i64 ndblk, sj_i64 batch, sj_i64 L,
                                                      sj_i64 N, void *dB, sj_i64 sdB, void *dC, sj_i64 sdC)
{
    const sj_i64 per_row = L * 2 * N, total = batch * per_row;
    for (sj_i64 e = (sj_i64)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (sj_i64)gridDim.x * blockDim.x) {
        const sj_i64 b = e / per_row, rem = e % per_row, t = rem / (2 * N), j = rem % (2 * N);
        const float *src = ws + b * ndblk * per_row + rem;
        float s = 0.0f;
        for (sj_i64 k = 0; k < ndblk; ++k)
            s += src[k * per_row];
        const sj_i64 row = b * L + t;
        if (j < N)
            sj_st<T>(dB, row * sdB + j, s);
        else
            sj_st<T>(dC, row * sdC + j - N, s);
    }
}

#define SJ_SCAN_BWD_KERNELS(T, sfx, unused)                                                              \
    extern "C" __global__ void __launch_bounds__(128) scan_bwd_##sfx(const sj_scan_params p)             \
    {                                                                                                    \
        sj_scan_bwd<T>(p);                                                                               \
    }                                                                                                    \
    extern "C" __global__ void scan_bwd_reduce_bc_##sfx(const float *ws, sj_i64 ndblk, sj_i64 batch,     \
                                                        sj_i64 L, sj_i64 N, void *dB, sj_i64 sdB,        \
                                                        void *dC, sj_i64 sdC)                            \
    {                                                                                                    \
        sj_scan_bwd_reduce_bc<T>(ws, ndblk, batch, L, N, dB, sdB, dC, sdC);                              \
    }                                                                                                    \
    SJ_SCAN_FWD_KERNEL(scan_states, false, 16, 128, 1, T, sfx)

SJ_FOR_EACH_DTYPE(SJ_SCAN_BWD_KERNELS, 0)

/* dA [D, N] = sum over batch rows of ws_dA [B, D, N]; dD, ddelta_bias [D]
 * likewise from ws_dD, ws_db (each output optional).  Fixed order, so
 * reproducible; batch = 0 writes zeros. */
extern "C" __global__ void scan_bwd_reduce_params(const float *ws_dA, const float *ws_dD, const float *ws_db,
                                                  sj_i64 batch, sj_i64 D, sj_i64 N, float *dA, float *dD,
                                                  float *db)
{
    for (sj_i64 e = (sj_i64)blockIdx.x * blockDim.x + threadIdx.x; e < D * N;
         e += (sj_i64)gridDim.x * blockDim.x) {
        float s = 0.0f;
        for (sj_i64 b = 0; b < batch; ++b)
            s += ws_dA[b * D * N + e];
        dA[e] = s;
        if (e < D) {
            float sD = 0.0f, sb = 0.0f;
            for (sj_i64 b = 0; b < batch; ++b) {
                sD += ws_dD[b * D + e];
                sb += ws_db[b * D + e];
            }
            if (dD)
                dD[e] = sD;
            if (db)
                db[e] = sb;
        }
    }
}
