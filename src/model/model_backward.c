/* Training backward: ssmjit_model_backward, the reverse of the forward's
 * chain from the logits' gradient to every weight's. */
#include <stdlib.h>

#include "base/error.h"
#include "model.h"
#include "ops/ops_model.h"
#include "ops/validate.h"

static const char op[] = "ssmjit_model_backward";

static ssmjit_status check_args(ssmjit_model *m, const ssmjit_model_backward_args *a, int64_t *counted)
{
    SJ_TRY(sj_check_ptr(m, op, "model"));
    SJ_CHECK_STRUCT(op, "args", a, ssmjit_model_backward_args);
    if (!m->train.valid)
        return sj_error(SSMJIT_ERR_INVALID_ARG,
                        "%s: no forward in a training mode precedes it (or a later forward reused the "
                        "workspace)", op);
    if (!a->targets == !a->dlogits)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: exactly one of args->targets and args->dlogits must be set",
                        op);
    if (!a->targets)
        return SSMJIT_OK;
    SJ_TRY(sj_check_ptr(a->logits, op, "args->logits"));
    int64_t n = m->train.batch * m->train.seqlen;
    SJ_TRY(sj_model_check_ids(m, a->targets, n, 1, op, "args->targets"));
    *counted = 0;
    for (int64_t i = 0; i < n; i++)
        *counted += a->targets[i] != -100;
    if (!*counted)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: every target is ignored (-100)", op);
    return SSMJIT_OK;
}

static void *grad(const sj_model_tensor *t)
{
    return (void *)(uintptr_t)t->grad;
}

static ssmjit_status norm_bwd(ssmjit_model *m, const sj_model_ws *ws, void *base, const void *h,
                              const sj_model_tensor *w, const void *rstd, ssmjit_matrix d_resid_out,
                              ssmjit_matrix d_resid, void *stream)
{
    int64_t rows = m->train.batch * m->train.seqlen;
    ssmjit_rmsnorm_desc nd = {sizeof nd, m->dtype, rows, m->cfg.d_model, m->cfg.norm_eps, 1, m->res_dtype};
    ssmjit_rmsnorm_bwd_args na = {sizeof na, {(void *)h, 0, 0}, (const void *)(uintptr_t)w->data, rstd,
                                  {sj_model_ws_at(base, ws->dnormed), 0, 0}, d_resid_out, {sj_model_ws_at(base, ws->dx), 0, 0},
                                  d_resid, grad(w), sj_model_ws_at(base, ws->norm_ws), ws->norm_ws_bytes};
    return ssmjit_rmsnorm_bwd(m->ctx, &nd, &na, stream);
}

/* Layer l from the gradient of its output (ws->dx) and of its residual
 * stream (ws->g) to those of its input. */
static ssmjit_status layer_bwd(ssmjit_model *m, const sj_model_ws *ws, void *base, int64_t l,
                               void *stream)
{
    const ssmjit_model_config *c = &m->cfg;
    int64_t B = m->train.batch, L = m->train.seqlen, bl = B * L;
    int64_t dm = c->d_model, di = c->d_inner, n = c->d_state, r = c->dt_rank, dbl = r + 2 * n;
    size_t es = ssmjit_dtype_size(m->dtype), lo = l * ws->layer_stride, xo = l * ws->xc_stride;
    char *dxz = sj_model_ws_at(base, ws->dxz), *ddbl = sj_model_ws_at(base, ws->ddbl);
    void *dx = sj_model_ws_at(base, ws->dx), *dys = sj_model_ws_at(base, ws->dys),
         *dxc = sj_model_ws_at(base, ws->dxc);
    void *ddt = sj_model_ws_at(base, ws->ddt), *xz = sj_model_ws_at(base, ws->xz + lo);
    void *xc = sj_model_ws_at(base, ws->xc + xo), *xdbl = sj_model_ws_at(base, ws->xdbl + lo);
    if (ws->mode == SSMJIT_MODEL_TRAIN_RECOMPUTE) {
        SJ_TRY(sj_model_conv_fwd(m, ws, base, l, B, L, stream));
        SJ_TRY(sj_model_scan_fwd(m, ws, base, l, B, L, NULL, stream));
    }
    /* out_proj */
    SJ_TRY(sj_model_gemm(m, bl, di, dm, dx, dm, 0, sj_model_weight(m, l, SJ_L_OUT_PROJ), di, 0, dys, di,
                         m->dtype, 0.0f, stream));
    SJ_TRY(sj_model_gemm(m, dm, di, bl, dx, dm, 1, sj_model_ws_at(base, ws->y + xo), di, 0,
                         grad(sj_model_layer_tensor(m, l, SJ_L_OUT_PROJ)), di, SSMJIT_F32, 0.0f, stream));
    /* selective scan; dA_log = dA * A as A = -exp(A_log) */
    const sj_model_scan s = sj_model_scan_of(m, ws, base, l, B, L);
    ssmjit_selective_scan_bwd_args sg = {
        .struct_size = sizeof sg, .in = s.in, .checkpoint = s.checkpoint,
        .dy = {.data = dys}, .du = {.data = dxc}, .ddelta = {.data = ddt}, .dA = sj_model_ws_at(base, ws->dA),
        .dB = {.data = ddbl + (size_t)r * es, .stride = dbl}, .dC = {.data = ddbl + (size_t)(r + n) * es, .stride = dbl},
        .dD = grad(sj_model_layer_tensor(m, l, SJ_L_D)), .dz = {.data = dxz + (size_t)di * es, .stride = 2 * di},
        .ddelta_bias = grad(sj_model_layer_tensor(m, l, SJ_L_DT_BIAS)),
        .workspace = sj_model_ws_at(base, ws->scan_ws), .workspace_bytes = ws->scan_ws_bytes,
    };
    sj_model_profile_begin(m, SJ_PROFILE_SCAN, stream);
    ssmjit_status st = ssmjit_selective_scan_bwd(m->ctx, &s.desc, &sg, stream);
    sj_model_profile_end(m, stream);
    SJ_TRY(st);
    SJ_TRY(sj_mul_f32(m->ctx, di * n, sj_model_ws_at(base, ws->dA), s.in.A, grad(sj_model_layer_tensor(m, l, SJ_L_A_LOG)),
                      stream));
    /* dt_proj: its input is the first dt_rank columns of x_proj's output */
    SJ_TRY(sj_model_gemm(m, bl, r, di, ddt, di, 0, sj_model_weight(m, l, SJ_L_DT_PROJ), r, 0, ddbl, dbl,
                         m->dtype, 0.0f, stream));
    SJ_TRY(sj_model_gemm(m, di, r, bl, ddt, di, 1, xdbl, dbl, 0,
                         grad(sj_model_layer_tensor(m, l, SJ_L_DT_PROJ)), r, SSMJIT_F32, 0.0f, stream));
    /* x_proj: its input gradient adds to the scan's du */
    SJ_TRY(sj_model_gemm(m, bl, di, dbl, ddbl, dbl, 0, sj_model_weight(m, l, SJ_L_X_PROJ), di, 0, dxc, di,
                         m->dtype, 1.0f, stream));
    SJ_TRY(sj_model_gemm(m, dbl, di, bl, ddbl, dbl, 1, xc, di, 0,
                         grad(sj_model_layer_tensor(m, l, SJ_L_X_PROJ)), di, SSMJIT_F32, 0.0f, stream));
    /* conv1d + SiLU, into the x half of in_proj's output gradient */
    ssmjit_conv1d_desc cd = {sizeof cd, m->dtype, B, L, di, (int)c->d_conv, 1};
    ssmjit_conv1d_bwd_args ca = {sizeof ca, {xz, 2 * di, 0}, sj_model_weight(m, l, SJ_L_CONV), sj_model_weight(m, l, SJ_L_CONV_BIAS),
                                 NULL, {dxc, 0, 0}, NULL, {dxz, 2 * di, 0}, grad(sj_model_layer_tensor(m, l, SJ_L_CONV)),
                                 grad(sj_model_layer_tensor(m, l, SJ_L_CONV_BIAS)), NULL, sj_model_ws_at(base, ws->conv_ws),
                                 ws->conv_ws_bytes};
    SJ_TRY(ssmjit_causal_conv1d_bwd(m->ctx, &cd, &ca, stream));
    /* in_proj */
    SJ_TRY(sj_model_gemm(m, bl, dm, 2 * di, dxz, 2 * di, 0, sj_model_weight(m, l, SJ_L_IN_PROJ), dm, 0,
                         sj_model_ws_at(base, ws->dnormed), dm, m->dtype, 0.0f, stream));
    SJ_TRY(sj_model_gemm(m, 2 * di, dm, bl, dxz, 2 * di, 1, sj_model_ws_at(base, ws->normed + lo), dm, 0,
                         grad(sj_model_layer_tensor(m, l, SJ_L_IN_PROJ)), dm, SSMJIT_F32, 0.0f, stream));
    /* the block's norm, with the residual stream's gradient passing through */
    ssmjit_matrix g = {sj_model_ws_at(base, ws->g), 0, 0};
    return norm_bwd(m, ws, base, sj_model_ws_at(base, ws->resid + lo), sj_model_layer_tensor(m, l, SJ_L_NORM),
                    sj_model_ws_at(base, ws->rstd + lo), g, l ? g : (ssmjit_matrix){NULL, 0, 0}, stream);
}

/* The embedding lookup's gradient, summed per token id in a fixed order. */
static ssmjit_status embedding_bwd(ssmjit_model *m, const sj_model_ws *ws, void *base, void *stream)
{
    int64_t n = m->train.batch * m->train.seqlen, nseg = 0;
    int32_t *plan = malloc((size_t)(3 * n + 1) * sizeof *plan);
    if (!plan)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "%s: out of host memory", op);
    int32_t *order = plan, *seg_start = plan + n, *seg_id = plan + 2 * n + 1;
    sj_embedding_bwd_plan(m->train.ids, n, order, seg_start, seg_id, &nseg);
    ssmjit_status st = sj_model_copy_in(m, sj_model_ws_at(base, ws->order), order, (size_t)n * 4, stream);
    if (st == SSMJIT_OK)
        st = sj_model_copy_in(m, sj_model_ws_at(base, ws->seg_start), seg_start, (size_t)(nseg + 1) * 4,
                              stream);
    if (st == SSMJIT_OK)
        st = sj_model_copy_in(m, sj_model_ws_at(base, ws->seg_id), seg_id, (size_t)nseg * 4, stream);
    free(plan); /* copies from pageable memory are staged before they return */
    SJ_TRY(st);
    return sj_embedding_bwd(m->ctx, m->dtype, n, m->cfg.d_model, nseg, sj_model_ws_at(base, ws->order),
                            sj_model_ws_at(base, ws->seg_start), sj_model_ws_at(base, ws->seg_id),
                            (ssmjit_matrix){sj_model_ws_at(base, ws->dx), 0, 0}, grad(&m->t[SJ_G_EMBEDDING]),
                            stream);
}

static ssmjit_status run(ssmjit_model *m, const ssmjit_model_backward_args *a, const sj_model_ws *ws,
                         int64_t counted, void *stream)
{
    const ssmjit_model_config *c = &m->cfg;
    int64_t bl = m->train.batch * m->train.seqlen, dm = c->d_model, V = c->vocab_size;
    void *base = m->train.workspace;
    const void *dl = a->dlogits;
    if (a->targets) {
        SJ_TRY(sj_model_copy_in(m, sj_model_ws_at(base, ws->targets), a->targets, (size_t)bl * 4, stream));
        SJ_TRY(sj_cross_entropy(m->ctx, m->dtype, bl, V, (ssmjit_matrix){a->logits, 0, 0},
                                sj_model_ws_at(base, ws->targets), 1.0f / (float)counted,
                                sj_model_ws_at(base, ws->row_loss), a->loss, (ssmjit_matrix){a->logits, 0, 0},
                                stream));
        dl = a->logits;
    }
    /* LM head: the tied embedding's gradient starts here */
    sj_model_tensor *emb = &m->t[SJ_G_EMBEDDING];
    void *head_grad = grad(c->tie_embeddings ? emb : &m->t[SJ_G_LM_HEAD]);
    SJ_TRY(sj_model_gemm(m, bl, dm, V, dl, V, 0, sj_model_head_weight(m), dm, 0,
                         sj_model_ws_at(base, ws->dnormed), dm, m->dtype, 0.0f, stream));
    SJ_TRY(sj_model_gemm(m, V, dm, bl, dl, V, 1, sj_model_ws_at(base, ws->normed_f), dm, 0, head_grad, dm,
                         SSMJIT_F32, 0.0f, stream));
    if (!c->tie_embeddings) {
        int pushed;
        SJ_TRY(sj_context_enter(m->ctx, &pushed));
        ssmjit_status st = SJ_CU(m->drv, MemsetD8Async, emb->grad, 0, emb->numel * 4, (CUstream)stream);
        sj_context_leave(m->ctx, pushed);
        SJ_TRY(st);
    }
    SJ_TRY(norm_bwd(m, ws, base, sj_model_ws_at(base, ws->resid_f), &m->t[SJ_G_NORM_F],
                    sj_model_ws_at(base, ws->rstd_f), (ssmjit_matrix){NULL, 0, 0},
                    (ssmjit_matrix){sj_model_ws_at(base, ws->g), 0, 0}, stream));
    for (int64_t l = c->n_layer - 1; l >= 0; l--)
        SJ_TRY(layer_bwd(m, ws, base, l, stream));
    if (m->train.ids)
        SJ_TRY(embedding_bwd(m, ws, base, stream));
    if (!a->d_embeds)
        return SSMJIT_OK;
    int pushed;
    SJ_TRY(sj_context_enter(m->ctx, &pushed));
    ssmjit_status st = SJ_CU(m->drv, MemcpyDtoDAsync, (CUdeviceptr)(uintptr_t)a->d_embeds,
                             (CUdeviceptr)(uintptr_t)sj_model_ws_at(base, ws->dx),
                             (size_t)(bl * dm) * ssmjit_dtype_size(m->dtype), (CUstream)stream);
    sj_context_leave(m->ctx, pushed);
    return st;
}

SSMJIT_API ssmjit_status ssmjit_model_backward(ssmjit_model *m, const ssmjit_model_backward_args *a,
                                               void *stream)
{
    int64_t counted = 0;
    SJ_TRY(check_args(m, a, &counted));
    sj_model_ws ws;
    SJ_TRY(sj_model_layout(m, m->train.batch, m->train.seqlen, m->train.mode, op, &ws));
    SJ_TRY(sj_model_alloc_grads(m));
    return run(m, a, &ws, counted, stream);
}
