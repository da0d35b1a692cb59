/* Decode: ssmjit_model_step, one token per sequence, replayed from a CUDA
 * graph once its kernels have run. */
#include <stddef.h>
#include <string.h>

#include "base/error.h"
#include "model.h"
#include "ops/ops_model.h"
#include "ops/validate.h"

static const char op[] = "ssmjit_model_step";

SSMJIT_API ssmjit_status ssmjit_model_step_workspace_size(const ssmjit_model *m, int64_t batch,
                                                          size_t *bytes)
{
    static const char fn[] = "ssmjit_model_step_workspace_size";
    SJ_TRY(sj_model_check_shape(m, batch, 1, SSMJIT_MODEL_INFERENCE, fn));
    SJ_TRY(sj_check_ptr(bytes, fn, "bytes"));
    sj_model_step_ws ws;
    SJ_TRY(sj_model_step_layout(m, batch, fn, &ws));
    *bytes = ws.total;
    return SSMJIT_OK;
}

/* Layer l's mixer on the unfused path, between in_proj's output (xz)
 * and out_proj's input (y): the conv step, x_proj, dt_proj and the state
 * update, the conv and scan states advanced in place. */
static ssmjit_status unfused_mixer(ssmjit_model *m, const ssmjit_model_step_args *a, const sj_model_step_ws *ws,
                                   int64_t l, void *stream)
{
    const ssmjit_model_config *c = &m->cfg;
    int64_t B = a->batch, di = c->d_inner, n = c->d_state, r = c->dt_rank;
    int64_t dbl = r + 2 * n;
    size_t es = ssmjit_dtype_size(m->dtype);
    void *base = a->workspace;
    char *xz = sj_model_ws_at(base, ws->xz), *xc = sj_model_ws_at(base, ws->xc),
         *xdbl = sj_model_ws_at(base, ws->xdbl);
    void *dt = sj_model_ws_at(base, ws->dt), *y = sj_model_ws_at(base, ws->y);
    ssmjit_conv1d_desc cd = {sizeof cd, m->dtype, B, 1, di, (int)c->d_conv, 1};
    ssmjit_conv1d_update_args ca = {sizeof ca, {xz, 2 * di, 0}, sj_model_weight(m, l, SJ_L_CONV), sj_model_weight(m, l, SJ_L_CONV_BIAS),
                                    (float *)a->conv_state + l * B * di * c->d_conv, {xc, 0, 0}};
    SJ_TRY(ssmjit_causal_conv1d_update(m->ctx, &cd, &ca, stream));
    SJ_TRY(sj_model_linear(m, sj_model_layer_tensor(m, l, SJ_L_X_PROJ), B, xc, di, xdbl, dbl, stream));
    SJ_TRY(sj_model_linear(m, sj_model_layer_tensor(m, l, SJ_L_DT_PROJ), B, xdbl, dbl, dt, di, stream));
    ssmjit_state_update_desc ud = {
        .struct_size = sizeof ud, .dtype = m->dtype, .batch = B, .dim = di, .dstate = n, .dt_softplus = 1,
    };
    ssmjit_state_update_args ua = {
        .struct_size = sizeof ua, .x = {.data = xc}, .dt = {.data = dt},
        .A = (const float *)(uintptr_t)m->A + l * di * n,
        .B = {.data = xdbl + (size_t)r * es, .stride = dbl}, .C = {.data = xdbl + (size_t)(r + n) * es, .stride = dbl},
        .D = sj_model_weight(m, l, SJ_L_D), .z = {.data = xz + (size_t)di * es, .stride = 2 * di},
        .dt_bias = sj_model_weight(m, l, SJ_L_DT_BIAS),
        .state = (float *)a->ssm_state + l * B * di * n, .out = {.data = y},
    };
    return ssmjit_selective_state_update(m->ctx, &ud, &ua, stream);
}

/* Layer l for one token per sequence: the norm, in_proj, the mixer and
 * out_proj into x, on the hybrid step's kernels (whose layer 0 reads the
 * embedding rows of ids_dev) or the unfused ones. */
static ssmjit_status layer_step(ssmjit_model *m, const ssmjit_model_step_args *a,
                                const sj_model_step_ws *ws, int64_t l, int hybrid, const void *ids_dev,
                                void *stream)
{
    if (hybrid)
        return sj_model_decode_hybrid_layer(m, a, ws, l, ids_dev, stream);
    const ssmjit_model_config *c = &m->cfg;
    int64_t B = a->batch, dm = c->d_model, di = c->d_inner;
    void *base = a->workspace, *resid = sj_model_ws_at(base, ws->resid), *x = sj_model_ws_at(base, ws->x),
         *normed = sj_model_ws_at(base, ws->normed);
    ssmjit_matrix residual = {l ? resid : NULL, 0, 0};
    SJ_TRY(sj_model_norm_fwd(m, B, (ssmjit_matrix){x, 0, 0}, residual, sj_model_weight(m, l, SJ_L_NORM), normed, resid,
                             NULL, stream));
    SJ_TRY(sj_model_linear(m, sj_model_layer_tensor(m, l, SJ_L_IN_PROJ), B, normed, dm, sj_model_ws_at(base, ws->xz),
                           2 * di, stream));
    SJ_TRY(unfused_mixer(m, a, ws, l, stream));
    return sj_model_linear(m, sj_model_layer_tensor(m, l, SJ_L_OUT_PROJ), B, sj_model_ws_at(base, ws->y), di, x, dm,
                           stream);
}

/* Everything an unfused or hybrid step launches after its ids are on the
 * device: they differ in their layers only. */
static ssmjit_status unfused_kernels(ssmjit_model *m, const ssmjit_model_step_args *a,
                                  const sj_model_step_ws *ws, const void *ids_dev, void *stream)
{
    const ssmjit_model_config *c = &m->cfg;
    int64_t B = a->batch;
    void *base = a->workspace, *x = sj_model_ws_at(base, ws->x), *normed = sj_model_ws_at(base, ws->normed);
    /* the hybrid step's mixers take A from A_log and its first layer
     * reads the embedding itself: the unfused step's kernels for them
     * run only there */
    const int hybrid = sj_model_decode_path(m, B) == SJ_DECODE_HYBRID;
    if (!hybrid) {
        SJ_TRY(sj_model_refresh_a(m, stream));
        SJ_TRY(sj_model_embed(m, NULL, B, (void *)ids_dev, x, stream));
    }
    /* the benchmark's breakdown of a hybrid step leaves parts out
     * (sj_model_decode_skip): its layers' in model_decode.c, these here */
    const int skip_head = hybrid && sj_model_decode_skipped(m, SJ_DECODE_HEAD),
              skip_pick = hybrid && sj_model_decode_skipped(m, SJ_DECODE_PICK);
    for (int64_t l = 0; l < c->n_layer; l++)
        SJ_TRY(layer_step(m, a, ws, l, hybrid, ids_dev, stream));
    if (!skip_head) {
        SJ_TRY(sj_model_norm_fwd(m, B, (ssmjit_matrix){x, 0, 0},
                                 (ssmjit_matrix){sj_model_ws_at(base, ws->resid), 0, 0},
                                 (const void *)(uintptr_t)m->t[SJ_G_NORM_F].data, normed,
                                 sj_model_ws_at(base, ws->resid), NULL, stream));
        SJ_TRY(sj_model_linear(m, sj_model_head_tensor(m), B, normed, c->d_model, a->logits, c->vocab_size,
                               stream));
    }
    return skip_pick ? SSMJIT_OK : sj_model_pick_next(m, a, stream);
}

static ssmjit_status step_kernels(ssmjit_model *m, const ssmjit_model_step_args *a,
                                  const sj_model_step_ws *ws, const void *ids_dev, void *stream)
{
    if (sj_model_decode_path(m, a->batch) == SJ_DECODE_FUSED)
        return sj_model_decode_step(m, a, ws, ids_dev, stream);
    return unfused_kernels(m, a, ws, ids_dev, stream);
}

/* Records step_kernels into a graph on the model's capture stream (where
 * nothing runs) and keeps it for the same key. */
typedef struct step_capture {
    ssmjit_model *m;
    const ssmjit_model_step_args *a;
    const sj_model_step_ws *ws;
    const void *ids_dev;
} step_capture;

static ssmjit_status enqueue_step(void *arg, void *stream)
{
    const step_capture *c = arg;
    return step_kernels(c->m, c->a, c->ws, c->ids_dev, stream);
}

static ssmjit_status capture(ssmjit_model *m, const ssmjit_model_step_args *a, const sj_model_step_ws *ws,
                             const void *ids_dev, const sj_model_step_key *key)
{
    step_capture c = {m, a, ws, ids_dev};
    ssmjit_status st = sj_graph_capture(m->ctx, m->capture, enqueue_step, &c, &m->graph);
    if (st == SSMJIT_OK)
        m->key = *key;
    return st;
}

static ssmjit_status check_args(const ssmjit_model *m, const ssmjit_model_step_args *a,
                                sj_model_step_ws *ws)
{
    SJ_TRY(sj_check_ptr(m, op, "model"));
    SJ_CHECK_STRUCT(op, "args", a, ssmjit_model_step_args);
    SJ_TRY(sj_model_check_shape(m, a->batch, 1, SSMJIT_MODEL_INFERENCE, op));
    if (a->batch == 0)
        return SSMJIT_OK;
    if (!a->ids == !a->ids_device)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: exactly one of args->ids and args->ids_device must be set",
                        op);
    SJ_TRY(sj_check_ptr(a->conv_state, op, "args->conv_state"));
    SJ_TRY(sj_check_ptr(a->ssm_state, op, "args->ssm_state"));
    SJ_TRY(sj_check_ptr(a->logits, op, "args->logits"));
    if (a->ids)
        SJ_TRY(sj_model_check_ids(m, a->ids, a->batch, 0, op, "args->ids"));
    if (a->sampling && !a->next_ids)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: args->sampling is set but args->next_ids is NULL", op);
    if (a->sampling && !a->sampling_steps)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: args->sampling is set but args->sampling_steps is NULL",
                        op);
    SJ_TRY(sj_model_step_layout(m, a->batch, op, ws));
    return sj_model_check_workspace(a->workspace, a->workspace_bytes, ws->total, op);
}

SSMJIT_API ssmjit_status ssmjit_model_step(ssmjit_model *m, const ssmjit_model_step_args *a,
                                           void *stream)
{
    sj_model_step_ws ws;
    SJ_TRY(check_args(m, a, &ws));
    if (a->batch == 0)
        return SSMJIT_OK;
    const void *ids_dev = a->ids ? sj_model_ws_at(a->workspace, ws.ids) : (const void *)a->ids_device;
    sj_model_step_key key;
    memset(&key, 0, sizeof key); /* padding too: keys are compared with memcmp */
    key.batch = a->batch;
    key.host_ids = a->ids != NULL;
    key.ids_device = ids_dev;
    key.conv_state = a->conv_state;
    key.ssm_state = a->ssm_state;
    key.logits = a->logits;
    key.next_ids = a->next_ids;
    key.workspace = a->workspace;
    key.sampling = a->sampling;
    key.sampling_steps = a->sampling_steps;
    int pushed;
    SJ_TRY(sj_context_enter(m->ctx, &pushed));
    ssmjit_status st = SSMJIT_OK;
    if (a->ids)
        st = sj_model_copy_in(m, (void *)ids_dev, a->ids, (size_t)a->batch * 4, stream);
    if (st == SSMJIT_OK && m->graph && memcmp(&key, &m->key, sizeof key) == 0) {
        st = SJ_CU(m->drv, GraphLaunch, m->graph, (CUstream)stream);
    } else if (st == SSMJIT_OK) {
        /* The first run loads every module and plans every GEMM, which
         * must not happen inside a capture. */
        sj_model_drop_graph(m);
        st = step_kernels(m, a, &ws, ids_dev, stream);
        if (st == SSMJIT_OK)
            st = capture(m, a, &ws, ids_dev, &key);
    }
    sj_context_leave(m->ctx, pushed);
    return st;
}
