/* The layout of a model forward's workspace, and the scan that reads it
 * (shared by the forward and the backward). */
#include <string.h>

#include "base/error.h"
#include "model.h"
#include "ops/validate.h"

#define MAX_BYTES ((size_t)1 << 62)

typedef struct cursor {
    size_t off;
    int overflow;
} cursor;

/* Reserves a * b elements of elem bytes, aligned as every workspace part. */
static size_t take(cursor *c, int64_t a, int64_t b, size_t elem)
{
    size_t bytes, start = c->off;
    if (__builtin_mul_overflow((size_t)a, (size_t)b, &bytes) ||
        __builtin_mul_overflow(bytes, elem, &bytes) || __builtin_add_overflow(start, bytes, &c->off) ||
        __builtin_add_overflow(c->off, (size_t)SJ_WORKSPACE_ALIGN - 1, &c->off) || c->off > MAX_BYTES) {
        c->overflow = 1;
        c->off = 0;
        return 0;
    }
    c->off &= ~(size_t)(SJ_WORKSPACE_ALIGN - 1);
    return start;
}

ssmjit_selective_scan_desc sj_model_scan_desc(const ssmjit_model *m, ssmjit_model_mode mode, int64_t B, int64_t L)
{
    ssmjit_selective_scan_desc d = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_desc);
    d.dtype = m->dtype;
    d.batch = B;
    d.seqlen = L;
    d.dim = m->cfg.d_inner;
    d.dstate = m->cfg.d_state;
    d.delta_softplus = 1;
    d.checkpoint = mode != SSMJIT_MODEL_INFERENCE;
    return d;
}

sj_model_scan sj_model_scan_of(const ssmjit_model *m, const sj_model_ws *ws, void *base, int64_t l, int64_t B,
                               int64_t L)
{
    const ssmjit_model_config *c = &m->cfg;
    size_t es = ssmjit_dtype_size(m->dtype);
    int64_t di = c->d_inner, n = c->d_state, r = c->dt_rank;
    size_t lo = (size_t)l * ws->layer_stride, xo = (size_t)l * ws->xc_stride;
    char *xz = sj_model_ws_at(base, ws->xz + lo), *xdbl = sj_model_ws_at(base, ws->xdbl + lo);
    sj_model_scan s;
    memset(&s, 0, sizeof s);
    s.desc = sj_model_scan_desc(m, ws->mode, B, L);
    ssmjit_selective_scan_inputs *in = &s.in;
    in->u = (ssmjit_matrix){.data = sj_model_ws_at(base, ws->xc + xo)};
    in->delta = (ssmjit_matrix){.data = sj_model_ws_at(base, ws->dt + lo)};
    in->A = (const float *)(uintptr_t)m->A + l * di * n;
    in->B = (ssmjit_matrix){.data = xdbl + (size_t)r * es, .stride = r + 2 * n};
    in->C = (ssmjit_matrix){.data = xdbl + (size_t)(r + n) * es, .stride = r + 2 * n};
    in->D = sj_model_weight(m, l, SJ_L_D);
    in->z = (ssmjit_matrix){.data = xz + (size_t)di * es, .stride = 2 * di};
    in->delta_bias = sj_model_weight(m, l, SJ_L_DT_BIAS);
    s.y = (ssmjit_matrix){.data = sj_model_ws_at(base, ws->y + xo)};
    if (s.desc.checkpoint)
        s.checkpoint = sj_model_ws_at(base, ws->ckpt + xo);
    return s;
}

/* Workspace sizes of the scan (on the model's device) and of the ops a
 * layer's backward calls. */
static ssmjit_status op_workspaces(const ssmjit_model *m, sj_model_ws *ws, int64_t B, int64_t L,
                                   size_t *ckpt, const char *op)
{
    const ssmjit_model_config *c = &m->cfg;
    ssmjit_selective_scan_desc sd = sj_model_scan_desc(m, ws->mode, B, L);
    ssmjit_status st = ssmjit_selective_scan_checkpoint_size(m->ctx, &sd, ckpt);
    if (st == SSMJIT_OK)
        st = ssmjit_selective_scan_fwd_workspace_size(m->ctx, &sd, &ws->split_bytes);
    if (st == SSMJIT_OK && ws->mode != SSMJIT_MODEL_INFERENCE)
        st = ssmjit_selective_scan_bwd_workspace_size(m->ctx, &sd, &ws->scan_ws_bytes);
    ssmjit_conv1d_desc cd = {sizeof cd, m->dtype, B, L, c->d_inner, (int)c->d_conv, 1};
    if (st == SSMJIT_OK && ws->mode != SSMJIT_MODEL_INFERENCE)
        st = ssmjit_causal_conv1d_bwd_workspace_size(m->ctx, &cd, &ws->conv_ws_bytes);
    ssmjit_rmsnorm_desc nd = {sizeof nd, m->dtype, B * L, c->d_model, c->norm_eps, 1, m->res_dtype};
    if (st == SSMJIT_OK && ws->mode != SSMJIT_MODEL_INFERENCE)
        st = ssmjit_rmsnorm_bwd_workspace_size(m->ctx, &nd, &ws->norm_ws_bytes);
    if (st != SSMJIT_OK)
        return sj_error(st, "%s: %s", op, ssmjit_last_error());
    return SSMJIT_OK;
}

ssmjit_status sj_model_layout(const ssmjit_model *m, int64_t B, int64_t L, ssmjit_model_mode mode,
                              const char *op, sj_model_ws *ws)
{
    const ssmjit_model_config *c = &m->cfg;
    int64_t bl = B * L, dm = c->d_model, di = c->d_inner;
    int64_t dbl = c->dt_rank + 2 * c->d_state;
    size_t es = ssmjit_dtype_size(m->dtype), rs = ssmjit_dtype_size(m->res_dtype);
    memset(ws, 0, sizeof *ws);
    ws->mode = mode;
    int train = mode != SSMJIT_MODEL_INFERENCE;
    size_t ckpt_bytes;
    SJ_TRY(op_workspaces(m, ws, B, L, &ckpt_bytes, op));

    cursor cur = {0, 0};
    ws->resid = take(&cur, bl, dm, rs);
    ws->rstd = take(&cur, bl, 1, 4);
    ws->normed = take(&cur, bl, dm, es);
    ws->xz = take(&cur, bl, 2 * di, es);
    ws->xdbl = take(&cur, bl, dbl, es);
    ws->dt = take(&cur, bl, di, es);
    if (mode != SSMJIT_MODEL_TRAIN_RECOMPUTE) {
        ws->xc = take(&cur, bl, di, es);
        ws->y = take(&cur, bl, di, es);
    }
    if (mode == SSMJIT_MODEL_TRAIN)
        ws->ckpt = take(&cur, (int64_t)ckpt_bytes, 1, 1);
    if (train) {
        /* every layer keeps its own set */
        ws->layer_stride = cur.off;
        take(&cur, c->n_layer - 1, (int64_t)ws->layer_stride, 1);
    }
    ws->xc_stride = mode == SSMJIT_MODEL_TRAIN ? ws->layer_stride : 0;
    if (mode == SSMJIT_MODEL_TRAIN_RECOMPUTE) {
        ws->xc = take(&cur, bl, di, es);
        ws->y = take(&cur, bl, di, es);
        ws->ckpt = take(&cur, (int64_t)ckpt_bytes, 1, 1);
    }
    ws->resid_f = take(&cur, bl, dm, rs);
    ws->rstd_f = take(&cur, bl, 1, 4);
    ws->normed_f = take(&cur, bl, dm, es);
    ws->ids = take(&cur, bl, 1, 4);
    ws->x = take(&cur, bl, dm, es);
    if (!train)
        ws->split = take(&cur, (int64_t)ws->split_bytes, 1, 1);
    if (train) {
        ws->g = take(&cur, bl, dm, rs);
        ws->dx = take(&cur, bl, dm, es);
        ws->dnormed = take(&cur, bl, dm, es);
        ws->dys = take(&cur, bl, di, es);
        ws->dxz = take(&cur, bl, 2 * di, es);
        ws->dxc = take(&cur, bl, di, es);
        ws->ddt = take(&cur, bl, di, es);
        ws->ddbl = take(&cur, bl, dbl, es);
        ws->dA = take(&cur, di, c->d_state, 4);
        ws->targets = take(&cur, bl, 1, 4);
        ws->row_loss = take(&cur, bl, 1, 4);
        ws->order = take(&cur, bl, 1, 4);
        ws->seg_start = take(&cur, bl + 1, 1, 4);
        ws->seg_id = take(&cur, bl, 1, 4);
        /* The forward scans' split scratch lies in the backward scan's
         * workspace: that is used by nothing but the scan backward, which
         * runs after the forward (and after a recomputing backward's
         * forward scan of its layer) in stream order. */
        ws->scan_ws = take(&cur, (int64_t)(ws->scan_ws_bytes > ws->split_bytes ? ws->scan_ws_bytes : ws->split_bytes),
                           1, 1);
        ws->split = ws->scan_ws;
        ws->conv_ws = take(&cur, (int64_t)ws->conv_ws_bytes, 1, 1);
        ws->norm_ws = take(&cur, (int64_t)ws->norm_ws_bytes, 1, 1);
    }
    if (cur.overflow)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "%s: the workspace for batch %lld x seqlen %lld is too large",
                        op, (long long)B, (long long)L);
    ws->total = cur.off;
    return SSMJIT_OK;
}

ssmjit_status sj_model_step_layout(const ssmjit_model *m, int64_t B, const char *op,
                                   sj_model_step_ws *ws)
{
    const ssmjit_model_config *c = &m->cfg;
    int64_t dm = c->d_model, di = c->d_inner, dbl = c->dt_rank + 2 * c->d_state;
    size_t es = ssmjit_dtype_size(m->dtype), rs = ssmjit_dtype_size(m->res_dtype);
    cursor cur = {0, 0};
    ws->ids = take(&cur, B, 1, 4);
    ws->x = take(&cur, B, dm, es);
    ws->resid = take(&cur, B, dm, rs);
    ws->resid2 = take(&cur, B, dm, rs); /* the fused decode alternates residual buffers */
    ws->normed = take(&cur, B, dm, es);
    ws->xz = take(&cur, B, 2 * di, es);
    ws->xc = take(&cur, B, di, es);
    ws->xdbl = take(&cur, B, dbl, es);
    ws->dt = take(&cur, B, di, es);
    ws->y = take(&cur, B, di, es);
    ws->xpart = ws->pick = ws->picked = 0;
    /* sized for the path the step takes now (a path forced later than the
     * size was asked finds the workspace too small and says so) */
    const int path = sj_model_decode_path(m, B);
    if (path == SJ_DECODE_FUSED) {
        ws->xpart = take(&cur, B * sj_model_decode_xparts(m), sj_model_decode_part_floats(c), 4);
        ws->pick = take(&cur, B, sj_model_decode_head_blocks(m), 8);
        ws->picked = take(&cur, 1, 1, 4);
    } else if (path == SJ_DECODE_HYBRID) {
        ws->xpart = take(&cur, B * sj_model_decode_convx_blocks(c), sj_model_decode_part_floats(c), 4);
    }
    if (cur.overflow)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "%s: the workspace for batch %lld is too large", op,
                        (long long)B);
    ws->total = cur.off;
    return SSMJIT_OK;
}
