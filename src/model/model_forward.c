/* Prefill: ssmjit_model_forward and its workspace query. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "model.h"
#include "ops/ops_model.h"
#include "ops/validate.h"

static const char op[] = "ssmjit_model_forward";

ssmjit_status sj_model_check_shape(const ssmjit_model *m, int64_t B, int64_t L,
                                   ssmjit_model_mode mode, const char *fn)
{
    SJ_TRY(sj_check_ptr(m, fn, "model"));
    SJ_TRY(sj_check_extent(B, fn, "batch"));
    SJ_TRY(sj_check_extent(L, fn, "seqlen"));
    SJ_TRY(sj_check_size(B, L, m->cfg.d_model + 2 * m->cfg.d_inner, fn, "batch * seqlen"));
    if (mode != SSMJIT_MODEL_INFERENCE && mode != SSMJIT_MODEL_TRAIN &&
        mode != SSMJIT_MODEL_TRAIN_RECOMPUTE)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: mode = %d is not a ssmjit_model_mode", fn, (int)mode);
    return SSMJIT_OK;
}

SSMJIT_API ssmjit_status ssmjit_model_workspace_size(const ssmjit_model *m, int64_t batch,
                                                     int64_t seqlen, ssmjit_model_mode mode,
                                                     size_t *bytes)
{
    static const char fn[] = "ssmjit_model_workspace_size";
    SJ_TRY(sj_model_check_shape(m, batch, seqlen, mode, fn));
    SJ_TRY(sj_check_ptr(bytes, fn, "bytes"));
    sj_model_ws ws;
    SJ_TRY(sj_model_layout(m, batch, seqlen, mode, fn, &ws));
    *bytes = ws.total;
    return SSMJIT_OK;
}

ssmjit_status sj_model_norm_fwd(ssmjit_model *m, int64_t rows, ssmjit_matrix x,
                                ssmjit_matrix residual, const void *weight, void *normed,
                                void *resid_out, void *rstd, void *stream)
{
    ssmjit_rmsnorm_desc nd = {sizeof nd, m->dtype, rows, m->cfg.d_model, m->cfg.norm_eps, 1, m->res_dtype};
    ssmjit_rmsnorm_fwd_args na = {sizeof na, x, residual, weight, {normed, 0, 0}, {resid_out, 0, 0}, rstd};
    return ssmjit_rmsnorm_fwd(m->ctx, &nd, &na, stream);
}

ssmjit_status sj_model_conv_fwd(ssmjit_model *m, const sj_model_ws *ws, void *base, int64_t l,
                                int64_t B, int64_t L, void *stream)
{
    const ssmjit_model_config *c = &m->cfg;
    ssmjit_conv1d_desc cd = {sizeof cd, m->dtype, B, L, c->d_inner, (int)c->d_conv, 1};
    ssmjit_conv1d_fwd_args ca = {sizeof ca,
                                 {sj_model_ws_at(base, ws->xz + l * ws->layer_stride), 2 * c->d_inner, 0},
                                 sj_model_weight(m, l, SJ_L_CONV), sj_model_weight(m, l, SJ_L_CONV_BIAS), NULL,
                                 {sj_model_ws_at(base, ws->xc + l * ws->xc_stride), 0, 0}, NULL};
    return ssmjit_causal_conv1d_fwd(m->ctx, &cd, &ca, stream);
}

ssmjit_status sj_model_scan_fwd(ssmjit_model *m, const sj_model_ws *ws, void *base, int64_t l,
                                int64_t B, int64_t L, void *final_state, void *stream)
{
    const sj_model_scan s = sj_model_scan_of(m, ws, base, l, B, L);
    ssmjit_selective_scan_fwd_args a = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_fwd_args);
    a.in = s.in;
    a.y = s.y;
    a.final_state = final_state;
    a.checkpoint = s.checkpoint;
    if (ws->split_bytes) {
        a.workspace = sj_model_ws_at(base, ws->split);
        a.workspace_bytes = ws->split_bytes;
    }
    sj_model_profile_begin(m, SJ_PROFILE_SCAN, stream);
    ssmjit_status st = ssmjit_selective_scan_fwd(m->ctx, &s.desc, &a, stream);
    sj_model_profile_end(m, stream);
    return st;
}

/* Layer l's mixer from its normalised input to its output in ws->x. */
static ssmjit_status mixer_fwd(ssmjit_model *m, const sj_model_ws *ws, void *base, int64_t l,
                               const ssmjit_model_forward_args *a, void *stream)
{
    const ssmjit_model_config *c = &m->cfg;
    int64_t B = a->batch, L = a->seqlen, bl = B * L, dm = c->d_model, di = c->d_inner;
    size_t lo = l * ws->layer_stride;
    void *xz = sj_model_ws_at(base, ws->xz + lo);
    SJ_TRY(sj_model_linear(m, sj_model_layer_tensor(m, l, SJ_L_IN_PROJ), bl,
                           sj_model_ws_at(base, ws->normed + lo), dm, xz, 2 * di, stream));
    SJ_TRY(sj_model_conv_fwd(m, ws, base, l, B, L, stream));
    if (a->conv_state)
        SJ_TRY(sj_conv_state_fill(m->ctx, m->dtype, B, L, di, c->d_conv, (ssmjit_matrix){xz, 2 * di, 0},
                                  (float *)a->conv_state + l * B * di * c->d_conv, stream));
    int64_t dbl = c->dt_rank + 2 * c->d_state;
    void *xdbl = sj_model_ws_at(base, ws->xdbl + lo);
    SJ_TRY(sj_model_linear(m, sj_model_layer_tensor(m, l, SJ_L_X_PROJ), bl,
                           sj_model_ws_at(base, ws->xc + l * ws->xc_stride), di, xdbl, dbl, stream));
    SJ_TRY(sj_model_linear(m, sj_model_layer_tensor(m, l, SJ_L_DT_PROJ), bl, xdbl, dbl,
                           sj_model_ws_at(base, ws->dt + lo), di, stream));
    void *ssm = a->ssm_state ? (float *)a->ssm_state + l * B * di * c->d_state : NULL;
    SJ_TRY(sj_model_scan_fwd(m, ws, base, l, B, L, ssm, stream));
    return sj_model_linear(m, sj_model_layer_tensor(m, l, SJ_L_OUT_PROJ), bl,
                           sj_model_ws_at(base, ws->y + l * ws->xc_stride), di, sj_model_ws_at(base, ws->x),
                           dm, stream);
}

static ssmjit_status check_args(ssmjit_model *m, const ssmjit_model_forward_args *a, sj_model_ws *ws)
{
    SJ_TRY(sj_check_ptr(m, op, "model"));
    SJ_CHECK_STRUCT(op, "args", a, ssmjit_model_forward_args);
    SJ_TRY(sj_model_check_shape(m, a->batch, a->seqlen, a->mode, op));
    if (!a->ids == !a->embeds)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: exactly one of args->ids and args->embeds must be set",
                        op);
    if (a->last_only && a->mode != SSMJIT_MODEL_INFERENCE)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: args->last_only needs mode SSMJIT_MODEL_INFERENCE", op);
    if (a->ids)
        SJ_TRY(sj_model_check_ids(m, a->ids, a->batch * a->seqlen, 0, op, "args->ids"));
    SJ_TRY(sj_model_layout(m, a->batch, a->seqlen, a->mode, op, ws));
    return sj_model_check_workspace(a->workspace, a->workspace_bytes, ws->total, op);
}

/* Zero states for an empty batch or sequence. */
static ssmjit_status zero_states(ssmjit_model *m, const ssmjit_model_forward_args *a, void *stream)
{
    const ssmjit_model_config *c = &m->cfg;
    size_t per = (size_t)(c->n_layer * a->batch * c->d_inner) * 4;
    int pushed;
    SJ_TRY(sj_context_enter(m->ctx, &pushed));
    ssmjit_status st = SSMJIT_OK;
    if (a->conv_state)
        st = SJ_CU(m->drv, MemsetD8Async, (CUdeviceptr)(uintptr_t)a->conv_state, 0,
                   per * (size_t)c->d_conv, (CUstream)stream);
    if (st == SSMJIT_OK && a->ssm_state)
        st = SJ_CU(m->drv, MemsetD8Async, (CUdeviceptr)(uintptr_t)a->ssm_state, 0,
                   per * (size_t)c->d_state, (CUstream)stream);
    sj_context_leave(m->ctx, pushed);
    return st;
}

static ssmjit_status run(ssmjit_model *m, const ssmjit_model_forward_args *a, const sj_model_ws *ws,
                         void *stream)
{
    const ssmjit_model_config *c = &m->cfg;
    int64_t B = a->batch, L = a->seqlen, bl = B * L, dm = c->d_model, V = c->vocab_size;
    void *base = a->workspace;
    int train = a->mode != SSMJIT_MODEL_INFERENCE;
    SJ_TRY(sj_model_refresh_a(m, stream));
    ssmjit_matrix x = {(void *)a->embeds, 0, 0};
    if (a->ids) {
        SJ_TRY(sj_model_embed(m, a->ids, bl, sj_model_ws_at(base, ws->ids), sj_model_ws_at(base, ws->x),
                              stream));
        x.data = sj_model_ws_at(base, ws->x);
    }
    ssmjit_matrix resid = {NULL, 0, 0};
    for (int64_t l = 0; l < c->n_layer; l++) {
        size_t lo = l * ws->layer_stride;
        void *resid_out = sj_model_ws_at(base, ws->resid + lo);
        SJ_TRY(sj_model_norm_fwd(m, bl, x, resid, sj_model_weight(m, l, SJ_L_NORM),
                                 sj_model_ws_at(base, ws->normed + lo), resid_out,
                                 train ? sj_model_ws_at(base, ws->rstd + lo) : NULL, stream));
        SJ_TRY(mixer_fwd(m, ws, base, l, a, stream));
        x.data = sj_model_ws_at(base, ws->x);
        resid.data = resid_out;
    }
    void *normed_f = sj_model_ws_at(base, ws->normed_f);
    SJ_TRY(sj_model_norm_fwd(m, bl, x, resid, (const void *)(uintptr_t)m->t[SJ_G_NORM_F].data, normed_f,
                             sj_model_ws_at(base, ws->resid_f),
                             train ? sj_model_ws_at(base, ws->rstd_f) : NULL, stream));
    if (!a->logits)
        return SSMJIT_OK;
    if (a->last_only) {
        size_t es = ssmjit_dtype_size(m->dtype);
        return sj_model_linear(m, sj_model_head_tensor(m), B,
                               (char *)normed_f + (size_t)((L - 1) * dm) * es, L * dm, a->logits, V,
                               stream);
    }
    return sj_model_linear(m, sj_model_head_tensor(m), bl, normed_f, dm, a->logits, V, stream);
}

SSMJIT_API ssmjit_status ssmjit_model_forward(ssmjit_model *m, const ssmjit_model_forward_args *a,
                                              void *stream)
{
    sj_model_ws ws;
    SJ_TRY(check_args(m, a, &ws));
    m->train.valid = 0;
    if (a->batch == 0 || a->seqlen == 0)
        return zero_states(m, a, stream);
    int32_t *ids = NULL;
    if (a->mode != SSMJIT_MODEL_INFERENCE && a->ids) {
        size_t n = (size_t)(a->batch * a->seqlen);
        ids = malloc(n * sizeof *ids);
        if (!ids)
            return sj_error(SSMJIT_ERR_NO_MEMORY, "%s: out of host memory", op);
        memcpy(ids, a->ids, n * sizeof *ids);
    }
    ssmjit_status st = run(m, a, &ws, stream);
    free(m->train.ids);
    m->train.ids = ids;
    if (st == SSMJIT_OK && a->mode != SSMJIT_MODEL_INFERENCE) {
        m->train.valid = 1;
        m->train.mode = a->mode;
        m->train.batch = a->batch;
        m->train.seqlen = a->seqlen;
        m->train.workspace = a->workspace;
    }
    return st;
}
