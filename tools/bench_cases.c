/* The op benchmark cases, at the shapes the targets are stated for. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_cases.h"
#include "ssmjit_internal.h"

#define MAX_BUFS 20
#define MAX_ROT 4 /* the op cases' sets, at most */

/* One case's buffers, bufs[rotation][i] (sets of them), and its extents. */
typedef struct {
    ssmjit_context *ctx;
    ssmjit_dtype dtype;
    int64_t b, l, d, n;
    size_t ws;  /* workspace bytes, the last buffer */
    void *bufs[BENCH_SWEEP_SETS][MAX_BUFS];
    int nbufs;
    void *split; /* the scan forward's split workspace (scratch: one for all rotations) */
    size_t split_bytes;
    int sets;
    bench_scan_layout lay; /* where a scan's B, C and z lie (scan_state) */
} state;

static void teardown(void *p)
{
    state *s = p;
    for (int r = 0; r < s->sets; r++)
        for (int i = 0; i < s->nbufs; i++)
            bench_free(s->ctx, s->bufs[r][i]);
    bench_free(s->ctx, s->split);
    free(s);
}

/* Allocates the buffers of `sizes` once per rotation, in `rot` sets
 * (1..BENCH_SWEEP_SETS). */
static ssmjit_status alloc_sets(const state *shape, const size_t *sizes, int count, int rot, bench_instance *out)
{
    if (rot < 1 || rot > BENCH_SWEEP_SETS)
        return SSMJIT_ERR_INVALID_ARG;
    state *s = malloc(sizeof *s);
    if (!s)
        return SSMJIT_ERR_NO_MEMORY;
    *s = *shape;
    s->nbufs = count;
    s->sets = rot;
    memset(s->bufs, 0, sizeof s->bufs);
    out->state = s;
    out->rotations = rot;
    for (int r = 0; r < rot; r++)
        for (int i = 0; i < count; i++) {
            ssmjit_status st = bench_alloc(s->ctx, sizes[i], &s->bufs[r][i]);
            if (st != SSMJIT_OK)
                return st;
        }
    return SSMJIT_OK;
}

/* ... with enough sets (up to MAX_ROT) that one pass over all of them
 * moves BENCH_ROTATE_BYTES, twice a 60 MB L2. */
static ssmjit_status alloc_state(const state *shape, const size_t *sizes, int count, bench_instance *out)
{
    size_t per_set = 0;
    for (int i = 0; i < count; i++)
        per_set += sizes[i];
    return alloc_sets(shape, sizes, count, bench_rotations((double)per_set, MAX_ROT), out);
}

static ssmjit_matrix mat(void *p) { return (ssmjit_matrix){p, 0, 0}; }

/* The reference shape B=8, L=2048, D=4096 (quick: 1, 512, 1536). */
static state big_shape(ssmjit_context *ctx, ssmjit_dtype dt, int quick, int64_t n)
{
    return (state){ctx, dt, quick ? 1 : 8, quick ? 512 : 2048, quick ? 1536 : 4096, n, 0, {{0}}, 0, NULL, 0, 0, {0}};
}

/* ---- elementwise over [B*L, D] ------------------------------------------ */

static ssmjit_status setup_rows(ssmjit_context *ctx, ssmjit_dtype dt, int quick, int operands, bench_instance *out)
{
    state s = big_shape(ctx, dt, quick, 0);
    size_t bytes = (size_t)(s.b * s.l * s.d) * ssmjit_dtype_size(dt), sizes[MAX_BUFS];
    for (int i = 0; i < operands; i++)
        sizes[i] = bytes;
    out->bytes = (double)bytes * operands;
    snprintf(out->shape, sizeof out->shape, "rows=%lld cols=%lld", (long long)(s.b * s.l), (long long)s.d);
    return alloc_state(&s, sizes, operands, out);
}

static ssmjit_status setup_two(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_rows(ctx, dt, quick, 2, out);
}

static ssmjit_status setup_three(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_rows(ctx, dt, quick, 3, out);
}

static ssmjit_status setup_five(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_rows(ctx, dt, quick, 5, out);
}

static ssmjit_status run_silu_fwd(void *p, int r, void *stream)
{
    state *s = p;
    ssmjit_activation_desc desc = {sizeof desc, SSMJIT_ACT_SILU, s->dtype, s->b * s->l, s->d};
    ssmjit_activation_fwd_args args = {sizeof args, mat(s->bufs[r][0]), mat(s->bufs[r][1])};
    return ssmjit_activation_fwd(s->ctx, &desc, &args, stream);
}

static ssmjit_status run_gate_fwd(void *p, int r, void *stream)
{
    state *s = p;
    ssmjit_gate_desc desc = {sizeof desc, s->dtype, s->b * s->l, s->d};
    ssmjit_gate_fwd_args args = {sizeof args, mat(s->bufs[r][0]), mat(s->bufs[r][1]), mat(s->bufs[r][2])};
    return ssmjit_gate_fwd(s->ctx, &desc, &args, stream);
}

static ssmjit_status run_gate_bwd(void *p, int r, void *stream)
{
    state *s = p;
    ssmjit_gate_desc desc = {sizeof desc, s->dtype, s->b * s->l, s->d};
    void *const *b = s->bufs[r];
    ssmjit_gate_bwd_args args = {sizeof args, mat(b[0]), mat(b[1]), mat(b[2]), mat(b[3]), mat(b[4])};
    return ssmjit_gate_bwd(s->ctx, &desc, &args, stream);
}

/* ---- RMSNorm: rows = B*L, d = 768 (mamba-130m), f32 residual stream ----- */

static ssmjit_rmsnorm_desc norm_desc(const state *s)
{
    return (ssmjit_rmsnorm_desc){sizeof(ssmjit_rmsnorm_desc), s->dtype, s->b * s->l, s->d, 1e-5, 1, SSMJIT_F32};
}

static ssmjit_status setup_norm(ssmjit_context *ctx, ssmjit_dtype dt, int quick, int bwd, bench_instance *out)
{
    state s = big_shape(ctx, dt, quick, 0);
    s.d = 768;
    size_t rows = (size_t)(s.b * s.l), act = rows * (size_t)s.d * ssmjit_dtype_size(dt), res = rows * (size_t)s.d * 4;
    ssmjit_rmsnorm_desc desc = norm_desc(&s);
    ssmjit_status st = bwd ? ssmjit_rmsnorm_bwd_workspace_size(ctx, &desc, &s.ws) : SSMJIT_OK;
    if (st != SSMJIT_OK)
        return st;
    /* fwd: x, residual, weight, y, residual_out, rstd
     * bwd: h, weight, rstd, dy, d_residual_out, dx, d_residual, dweight, workspace */
    size_t w = (size_t)s.d * 4, fwd[] = {act, res, w, act, res, rows * 4},
           bwd_sizes[] = {res, w, rows * 4, act, res, act, res, w, s.ws};
    out->bytes = bwd ? (double)(3 * res + 2 * act) : (double)(2 * act + 2 * res);
    snprintf(out->shape, sizeof out->shape, "rows=%zu d=%lld +f32 residual", rows, (long long)s.d);
    return bwd ? alloc_state(&s, bwd_sizes, 9, out) : alloc_state(&s, fwd, 6, out);
}

static ssmjit_status setup_norm_fwd(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_norm(ctx, dt, quick, 0, out);
}

static ssmjit_status setup_norm_bwd(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_norm(ctx, dt, quick, 1, out);
}

static ssmjit_status run_norm_fwd(void *p, int r, void *stream)
{
    state *s = p;
    void **b = s->bufs[r];
    ssmjit_rmsnorm_desc desc = norm_desc(s);
    ssmjit_rmsnorm_fwd_args args = {sizeof args, mat(b[0]), mat(b[1]), b[2], mat(b[3]), mat(b[4]), b[5]};
    return ssmjit_rmsnorm_fwd(s->ctx, &desc, &args, stream);
}

static ssmjit_status run_norm_bwd(void *p, int r, void *stream)
{
    state *s = p;
    void **b = s->bufs[r];
    ssmjit_rmsnorm_desc desc = norm_desc(s);
    ssmjit_rmsnorm_bwd_args args = {sizeof args, mat(b[0]), b[1], b[2], mat(b[3]), mat(b[4]), mat(b[5]), mat(b[6]),
                                    b[7], b[8], s->ws};
    return ssmjit_rmsnorm_bwd(s->ctx, &desc, &args, stream);
}

/* ---- causal conv1d, W = 4, fused SiLU ----------------------------------- */

static ssmjit_conv1d_desc conv_desc(const state *s)
{
    return (ssmjit_conv1d_desc){sizeof(ssmjit_conv1d_desc), s->dtype, s->b, s->l, s->d, 4, 1};
}

static ssmjit_status setup_conv(ssmjit_context *ctx, ssmjit_dtype dt, int quick, int bwd, bench_instance *out)
{
    state s = big_shape(ctx, dt, quick, 0);
    size_t act = (size_t)(s.b * s.l * s.d) * ssmjit_dtype_size(dt), w = (size_t)s.d * 4;
    ssmjit_conv1d_desc desc = conv_desc(&s);
    ssmjit_status st = bwd ? ssmjit_causal_conv1d_bwd_workspace_size(ctx, &desc, &s.ws) : SSMJIT_OK;
    if (st != SSMJIT_OK)
        return st;
    /* x, weight, bias, y | dy, dx, dweight, dbias, workspace */
    size_t sizes[] = {act, 4 * w, w, act, act, act, 4 * w, w, s.ws};
    out->bytes = (double)act * (bwd ? 3 : 2);
    snprintf(out->shape, sizeof out->shape, "B=%lld L=%lld D=%lld W=4", (long long)s.b, (long long)s.l,
             (long long)s.d);
    return alloc_state(&s, sizes, bwd ? 9 : 4, out);
}

static ssmjit_status setup_conv_fwd(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_conv(ctx, dt, quick, 0, out);
}

static ssmjit_status setup_conv_bwd(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_conv(ctx, dt, quick, 1, out);
}

static ssmjit_status run_conv_fwd(void *p, int r, void *stream)
{
    state *s = p;
    void **b = s->bufs[r];
    ssmjit_conv1d_desc desc = conv_desc(s);
    ssmjit_conv1d_fwd_args args = {sizeof args, mat(b[0]), b[1], b[2], NULL, mat(b[3]), NULL};
    return ssmjit_causal_conv1d_fwd(s->ctx, &desc, &args, stream);
}

static ssmjit_status run_conv_bwd(void *p, int r, void *stream)
{
    state *s = p;
    void **b = s->bufs[r];
    ssmjit_conv1d_desc desc = conv_desc(s);
    ssmjit_conv1d_bwd_args args = {sizeof args, mat(b[0]), b[1], b[2], NULL, mat(b[4]), NULL,
                                   mat(b[5]), b[6], b[7], NULL, b[8], s->ws};
    return ssmjit_causal_conv1d_bwd(s->ctx, &desc, &args, stream);
}

/* ---- selective scan: N=16, with z, D, delta_bias, softplus -------------- */

/* Buffers: u delta A B C D z delta_bias y checkpoint, then for the
 * backward dy du ddelta dA dB dC dD dz ddelta_bias workspace. */
static ssmjit_selective_scan_desc scan_desc(const state *s, int checkpoint)
{
    ssmjit_selective_scan_desc d = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_desc);
    d.dtype = s->dtype;
    d.batch = s->b;
    d.seqlen = s->l;
    d.dim = s->d;
    d.dstate = s->n;
    d.delta_softplus = 1;
    d.checkpoint = checkpoint;
    return d;
}

/* Columns col.. of p's rows, `width` elements of s's dtype each. */
static ssmjit_matrix columns(const state *s, void *p, int64_t width, int64_t col)
{
    return (ssmjit_matrix){(char *)p + (size_t)col * ssmjit_dtype_size(s->dtype), width, 0};
}

static ssmjit_selective_scan_inputs scan_inputs(const state *s, void *const *b)
{
    const bench_scan_layout lay = s->lay;
    ssmjit_selective_scan_inputs in = {0};
    in.u = mat(b[0]);
    in.delta = mat(b[1]);
    in.A = b[2];
    in.B = columns(s, b[3], lay.bc_width, lay.b_col);
    in.C = columns(s, b[4], lay.bc_width, lay.c_col);
    in.D = b[5];
    in.z = columns(s, b[6], lay.z_width, lay.z_col);
    in.delta_bias = b[7];
    return in;
}

/* The forward's arguments, with the checkpoint where desc has one. */
static ssmjit_selective_scan_fwd_args scan_fwd_args(const state *s, const ssmjit_selective_scan_desc *desc,
                                                    void *const *b)
{
    ssmjit_selective_scan_fwd_args a = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_fwd_args);
    a.in = scan_inputs(s, b);
    a.y = mat(b[8]);
    a.checkpoint = desc->checkpoint ? b[9] : NULL;
    a.workspace = s->split;
    a.workspace_bytes = s->split_bytes;
    return a;
}

/* What a scan state's workspaces have room for besides the library's own
 * choice for the state's dtype: the variants' forced splits (up to 64
 * segments), and the library's choice for every dtype. */
enum { WS_FORCED = 1, WS_ALL_DTYPES = 2 };

/* The most bytes a workspace query gives for desc over the choices of
 * `which` (with no WS_FORCED, the split forced now, if any, as the calls
 * will take it). */
static ssmjit_status most_bytes(ssmjit_context *ctx, ssmjit_selective_scan_desc desc,
                                ssmjit_status (*query)(ssmjit_context *, const ssmjit_selective_scan_desc *, size_t *),
                                unsigned which, size_t *most)
{
    const int kept = sj_scan_forced_split();
    const int forced[] = {kept, 8, 16, 32, 64};
    const size_t splits = which & WS_FORCED ? sizeof forced / sizeof *forced : 1;
    *most = 0;
    for (int t = 0; t < (which & WS_ALL_DTYPES ? 3 : 1); t++)
        for (size_t k = 0; k < splits; k++) {
            size_t bytes = 0;
            if (which & WS_ALL_DTYPES)
                desc.dtype = (ssmjit_dtype)t;
            sj_scan_force_split(forced[k]);
            ssmjit_status st = query(ctx, &desc, &bytes);
            sj_scan_force_split(kept);
            if (st != SSMJIT_OK)
                return st;
            *most = bytes > *most ? bytes : *most;
        }
    return SSMJIT_OK;
}

/* The bytes of the scan forward's split workspace, with or without a
 * checkpoint, for the choices of `which`.  (The backward's is part of its
 * workspace.) */
static ssmjit_status split_bytes(ssmjit_context *ctx, ssmjit_selective_scan_desc desc, unsigned which, size_t *most)
{
    *most = 0;
    for (int k = 0; k < 2; k++) {
        size_t bytes;
        desc.checkpoint = k;
        ssmjit_status st = most_bytes(ctx, desc, ssmjit_selective_scan_fwd_workspace_size, which, &bytes);
        if (st != SSMJIT_OK)
            return st;
        *most = bytes > *most ? bytes : *most;
    }
    return SSMJIT_OK;
}

/* A scan state for s's extents (bwd as setup_scan takes it): its buffers
 * in elements of es bytes, in `rot` sets (0: as many as alloc_state
 * picks), its workspaces with room for the choices of `which`, A filled.
 * *set_bytes: one set's bytes and the split workspace's; where they pass
 * `limit` nothing is allocated (out->state NULL). */
static ssmjit_status scan_state(state s, size_t es, int bwd, int model_layout, unsigned which, int rot, size_t limit,
                                size_t *set_bytes, bench_instance *out)
{
    const bench_scan_layout lay = s.lay = bench_scan_layout_of(model_layout, s.d, s.n);
    size_t act = (size_t)(s.b * s.l * s.d) * es, bc = (size_t)(s.b * s.l * lay.bc_width) * es,
           z = (size_t)(s.b * s.l * lay.z_width) * es;
    size_t dn = (size_t)(s.d * s.n) * 4, dv = (size_t)s.d * 4, ckpt = 0;
    const ssmjit_selective_scan_desc desc = scan_desc(&s, bwd != 2);
    ssmjit_status st = ssmjit_selective_scan_checkpoint_size(s.ctx, &desc, &ckpt);
    if (st == SSMJIT_OK && bwd)
        st = most_bytes(s.ctx, desc, ssmjit_selective_scan_bwd_workspace_size, which, &s.ws);
    if (st == SSMJIT_OK)
        st = split_bytes(s.ctx, desc, which, &s.split_bytes);
    if (st != SSMJIT_OK)
        return st;
    const size_t sizes[] = {act, act, dn, bc, bc, dv, z, dv, act, ckpt, act, act, act, dn, bc, bc, dv, z, dv, s.ws};
    const int count = bwd ? 20 : 10;
    *set_bytes = s.split_bytes;
    for (int i = 0; i < count; i++)
        *set_bytes += sizes[i];
    snprintf(out->shape, sizeof out->shape, "B=%lld L=%lld D=%lld N=%lld", (long long)s.b, (long long)s.l,
             (long long)s.d, (long long)s.n);
    out->state = NULL;
    if (*set_bytes > limit)
        return SSMJIT_OK;
    st = rot ? alloc_sets(&s, sizes, count, rot, out) : alloc_state(&s, sizes, count, out);
    if (st != SSMJIT_OK)
        return st;
    state *made = out->state;
    if (made->split_bytes)
        st = bench_alloc(s.ctx, made->split_bytes, &made->split);
    /* A < 0 as in a real model (A = -exp(A_log)): the states stay bounded. */
    for (int r = 0; st == SSMJIT_OK && r < made->sets; r++)
        st = bench_fill_f32(s.ctx, made->bufs[r][2], (size_t)(s.d * s.n), -0.5f);
    return st;
}

/* Each set's checkpoint, written by the forward in s's dtype (on the
 * legacy stream): the backward restarts from one the forward really
 * wrote. */
static ssmjit_status write_checkpoints(state *s)
{
    const ssmjit_selective_scan_desc desc = scan_desc(s, 1);
    ssmjit_status st = SSMJIT_OK;
    for (int r = 0; st == SSMJIT_OK && r < s->sets; r++) {
        const ssmjit_selective_scan_fwd_args a = scan_fwd_args(s, &desc, s->bufs[r]);
        st = ssmjit_selective_scan_fwd(s->ctx, &desc, &a, NULL);
    }
    return st;
}

/* dim 0: the reference shape's D; else that D (1536: mamba-130m's d_inner);
 * batch and len likewise for B and L.  bwd: 0 forward, 1 backward from the
 * forward's checkpoint, 2 backward that rebuilds the checkpoint (its
 * workspace sized for that). */
static ssmjit_status setup_scan(ssmjit_context *ctx, ssmjit_dtype dt, int quick, int bwd, int64_t dim,
                                int64_t batch, int64_t len, bench_instance *out)
{
    state s = big_shape(ctx, dt, quick, 16);
    if (dim && !quick)
        s.d = dim;
    if (batch && !quick)
        s.b = batch, s.l = len;
    const size_t es = ssmjit_dtype_size(dt);
    size_t set_bytes;
    /* each input read once, each output written once, no checkpoint */
    out->bytes = bench_scan_floor_bytes((bench_scan_shape){s.b, s.l, s.d}, s.n, es,
                                        bwd ? BENCH_SCAN_BWD : BENCH_SCAN_FWD, 0);
    /* the workspaces have room for the variants' forced splits too */
    ssmjit_status st = scan_state(s, es, bwd, 0, WS_FORCED, 0, SIZE_MAX, &set_bytes, out);
    if (st == SSMJIT_OK && bwd)
        st = write_checkpoints(out->state);
    return st;
}

static ssmjit_status setup_scan_fwd(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_scan(ctx, dt, quick, 0, 0, 0, 0, out);
}

static ssmjit_status setup_scan_bwd(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_scan(ctx, dt, quick, 1, 0, 0, 0, out);
}

static ssmjit_status setup_scan_bwd_rebuilt(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_scan(ctx, dt, quick, 2, 0, 0, 0, out);
}

static ssmjit_status setup_scan_fwd_130m(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_scan(ctx, dt, quick, 0, 1536, 0, 0, out);
}

/* mamba-130m's D for one long sequence and for many short ones: where the
 * grid leaves an SM few warps or many small blocks (bench/NOTES.md). */
static ssmjit_status setup_scan_fwd_130m_one(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_scan(ctx, dt, quick, 0, 1536, 1, 16384, out);
}

/* ... and one prompt of 2048 tokens, a prefill at batch 1 */
static ssmjit_status setup_scan_fwd_130m_prompt(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_scan(ctx, dt, quick, 0, 1536, 1, 2048, out);
}

static ssmjit_status setup_scan_fwd_130m_short(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_scan(ctx, dt, quick, 0, 1536, 64, 256, out);
}

static ssmjit_status setup_scan_bwd_130m(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_scan(ctx, dt, quick, 1, 1536, 0, 0, out);
}

static ssmjit_status setup_scan_bwd_130m_one(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_scan(ctx, dt, quick, 1, 1536, 1, 16384, out);
}

static ssmjit_status setup_scan_bwd_130m_prompt(ssmjit_context *ctx, ssmjit_dtype dt, int quick,
                                                bench_instance *out)
{
    return setup_scan(ctx, dt, quick, 1, 1536, 1, 2048, out);
}

static ssmjit_status run_scan_fwd(void *p, int r, void *stream)
{
    state *s = p;
    const ssmjit_selective_scan_desc desc = scan_desc(s, 0); /* inference: no checkpoint */
    const ssmjit_selective_scan_fwd_args a = scan_fwd_args(s, &desc, s->bufs[r]);
    return ssmjit_selective_scan_fwd(s->ctx, &desc, &a, stream);
}

static ssmjit_status run_scan_fwd_ckpt(void *p, int r, void *stream)
{
    state *s = p;
    const ssmjit_selective_scan_desc desc = scan_desc(s, 1);
    const ssmjit_selective_scan_fwd_args a = scan_fwd_args(s, &desc, s->bufs[r]);
    return ssmjit_selective_scan_fwd(s->ctx, &desc, &a, stream);
}

static ssmjit_status scan_bwd(state *s, int r, int rebuild, void *stream)
{
    void **b = s->bufs[r];
    const ssmjit_selective_scan_desc desc = scan_desc(s, !rebuild);
    ssmjit_selective_scan_bwd_args g = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_bwd_args);
    const bench_scan_layout lay = s->lay;
    g.in = scan_inputs(s, b);
    g.checkpoint = rebuild ? NULL : b[9];
    g.dy = mat(b[10]);
    g.du = mat(b[11]);
    g.ddelta = mat(b[12]);
    g.dA = b[13];
    g.dB = columns(s, b[14], lay.bc_width, lay.b_col);
    g.dC = columns(s, b[15], lay.bc_width, lay.c_col);
    g.dD = b[16];
    g.dz = columns(s, b[17], lay.z_width, lay.z_col);
    g.ddelta_bias = b[18];
    g.workspace = b[19];
    g.workspace_bytes = s->ws;
    return ssmjit_selective_scan_bwd(s->ctx, &desc, &g, stream);
}

static ssmjit_status run_scan_bwd(void *p, int r, void *stream) { return scan_bwd(p, r, 0, stream); }

static ssmjit_status run_scan_bwd_rebuilt(void *p, int r, void *stream) { return scan_bwd(p, r, 1, stream); }

/* ---- the sweep's scan: every dtype on one allocation -------------------- */

ssmjit_status bench_scan_sweep_setup(ssmjit_context *ctx, bench_scan_shape shape, int model_layout, int rotations,
                                     size_t limit, bench_instance *out, size_t *set_bytes, size_t *checkpoint_bytes)
{
    const state s = {ctx, SSMJIT_F32, shape.b, shape.l, shape.d, BENCH_SWEEP_N, 0, {{0}}, 0, NULL, 0, 0, {0}};
    const ssmjit_selective_scan_desc desc = scan_desc(&s, 1);
    ssmjit_status st = ssmjit_selective_scan_checkpoint_size(ctx, &desc, checkpoint_bytes);
    out->state = NULL;
    out->bytes = 0;
    /* f32 is the largest element; the workspaces as any dtype asks */
    return st == SSMJIT_OK ? scan_state(s, 4, 1, model_layout, WS_ALL_DTYPES, rotations, limit, set_bytes, out) : st;
}

ssmjit_status bench_scan_sweep_dtype(void *p, ssmjit_dtype dtype)
{
    state *s = p;
    s->dtype = dtype;
    return write_checkpoints(s);
}

const bench_run_fn bench_scan_sweep_runs[BENCH_SCAN_DIRS] = {run_scan_fwd, run_scan_fwd_ckpt, run_scan_bwd};

void bench_scan_sweep_free(void *state)
{
    if (state)
        teardown(state);
}

/* ---- decode step: B=64 sequences, D=4096 (or 1536), N=16 ----------------- */

static ssmjit_status setup_decode_dim(ssmjit_context *ctx, ssmjit_dtype dt, int quick, int64_t dim,
                                      bench_instance *out)
{
    state s = {ctx, dt, quick ? 8 : 64, 1, dim, 16, 0, {{0}}, 0, NULL, 0, 0, {0}};
    size_t es = ssmjit_dtype_size(dt), row = (size_t)(s.b * s.d) * es, bn = (size_t)(s.b * s.n) * es;
    size_t st_bytes = (size_t)(s.b * s.d * s.n) * 4;
    /* x dt A B C D z dt_bias state out */
    size_t sizes[] = {row, row, (size_t)(s.d * s.n) * 4, bn, bn, (size_t)s.d * 4, row, (size_t)s.d * 4, st_bytes, row};
    out->bytes = (double)(2 * st_bytes + 4 * row);
    snprintf(out->shape, sizeof out->shape, "B=%lld D=%lld N=%lld (one token)", (long long)s.b, (long long)s.d,
             (long long)s.n);
    ssmjit_status st = alloc_state(&s, sizes, 10, out);
    for (int r = 0; st == SSMJIT_OK && r < out->rotations; r++)
        st = bench_fill_f32(ctx, ((state *)out->state)->bufs[r][2], (size_t)(s.d * s.n), -0.5f);
    return st;
}

static ssmjit_status setup_decode(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_decode_dim(ctx, dt, quick, 4096, out);
}

static ssmjit_status setup_decode_130m(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_decode_dim(ctx, dt, quick, 1536, out);
}

static ssmjit_status run_decode(void *p, int r, void *stream)
{
    state *s = p;
    void **b = s->bufs[r];
    ssmjit_state_update_desc d = SSMJIT_STRUCT_INIT(ssmjit_state_update_desc);
    d.dtype = s->dtype;
    d.batch = s->b;
    d.dim = s->d;
    d.dstate = s->n;
    d.dt_softplus = 1;
    ssmjit_state_update_args a = SSMJIT_STRUCT_INIT(ssmjit_state_update_args);
    a.x = mat(b[0]);
    a.dt = mat(b[1]);
    a.A = b[2];
    a.B = mat(b[3]);
    a.C = mat(b[4]);
    a.D = b[5];
    a.z = mat(b[6]);
    a.dt_bias = b[7];
    a.state = b[8];
    a.out = mat(b[9]);
    return ssmjit_selective_state_update(s->ctx, &d, &a, stream);
}

static const bench_variant scan_fwd_variants[] = {
    {"  variant: 16 states/thread, 32 channels/block", sj_scan_force_shape, 16, 32, 0},
    {"  variant: 16 states/thread, 64 channels/block", sj_scan_force_shape, 16, 64, 0},
    {"  variant: 16 states/thread, 128 channels/block", sj_scan_force_shape, 16, 128, 0},
    {"  variant: 8 states/thread, 32 channels/block", sj_scan_force_shape, 8, 32, 0},
    {"  variant: 8 states/thread, 64 channels/block", sj_scan_force_shape, 8, 64, 0},
    {"  variant: 8 states/thread, 128 channels/block", sj_scan_force_shape, 8, 128, 0},
    {"  variant: 4 states/thread, 16 channels/block", sj_scan_force_shape, 4, 16, 0},
    {"  variant: 4 states/thread, 32 channels/block", sj_scan_force_shape, 4, 32, 0},
    {"  variant: automatic, one stage buffer", sj_scan_force_shape, 0, 0, 1},
    {NULL, NULL, 0, 0, 0},
};

static void force_split(int segments, int unused_b, int unused_c)
{
    (void)unused_b;
    (void)unused_c;
    sj_scan_force_split(segments);
}

/* The split over L where it serves: unsplit, and into as many segments
 * as each variant says. */
static const bench_variant scan_split_variants[] = {
    {"  variant: not split", force_split, 1, 0, 0},
    {"  variant: split into 8", force_split, 8, 0, 0},
    {"  variant: split into 16", force_split, 16, 0, 0},
    {"  variant: split into 32", force_split, 32, 0, 0},
    {"  variant: split into 64", force_split, 64, 0, 0},
    {NULL, NULL, 0, 0, 0},
};

const bench_case bench_cases[] = {
    {"silu fwd", setup_two, run_silu_fwd, teardown, NULL},
    {"gate y*silu(z) fwd", setup_three, run_gate_fwd, teardown, NULL},
    {"gate y*silu(z) bwd", setup_five, run_gate_bwd, teardown, NULL},
    {"rmsnorm fwd (fused residual add)", setup_norm_fwd, run_norm_fwd, teardown, NULL},
    {"rmsnorm bwd", setup_norm_bwd, run_norm_bwd, teardown, NULL},
    {"causal_conv1d fwd (silu)", setup_conv_fwd, run_conv_fwd, teardown, NULL},
    {"causal_conv1d bwd (silu)", setup_conv_bwd, run_conv_bwd, teardown, NULL},
    {"selective_scan fwd", setup_scan_fwd, run_scan_fwd, teardown, scan_fwd_variants},
    {"selective_scan fwd + checkpoint", setup_scan_fwd, run_scan_fwd_ckpt, teardown, NULL},
    {"selective_scan bwd", setup_scan_bwd, run_scan_bwd, teardown, NULL},
    {"selective_scan bwd, checkpoint rebuilt", setup_scan_bwd_rebuilt, run_scan_bwd_rebuilt, teardown, NULL},
    {"selective_state_update", setup_decode, run_decode, teardown, NULL},
    {"selective_scan fwd 130m", setup_scan_fwd_130m, run_scan_fwd, teardown, scan_fwd_variants},
    {"selective_scan fwd 130m, one sequence", setup_scan_fwd_130m_one, run_scan_fwd, teardown, scan_split_variants},
    {"selective_scan fwd 130m, one prompt", setup_scan_fwd_130m_prompt, run_scan_fwd, teardown, scan_split_variants},
    {"selective_scan fwd 130m, 64 short", setup_scan_fwd_130m_short, run_scan_fwd, teardown, scan_fwd_variants},
    {"selective_scan bwd 130m", setup_scan_bwd_130m, run_scan_bwd, teardown, NULL},
    {"selective_scan bwd 130m, one sequence", setup_scan_bwd_130m_one, run_scan_bwd, teardown, scan_split_variants},
    {"selective_scan bwd 130m, one prompt", setup_scan_bwd_130m_prompt, run_scan_bwd, teardown, scan_split_variants},
    {"selective_state_update 130m", setup_decode_130m, run_decode, teardown, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
