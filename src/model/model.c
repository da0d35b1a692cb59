/* The pieces of the model that the rest of src/model/ shares: the units
 * a model's shape needs (prepare), its tensors' queries, binding and
 * upload, A's refresh, its GEMMs, the embedding and the pick of the next
 * ids that the forward and both steps run, and argument checks.  Its
 * life (create, destroy) is model_create.c's. */
#include "model.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/dtype_convert.h"
#include "base/error.h"
#include "ops/ops_model.h"
#include "ops/ops_prepare.h"
#include "ops/ops_sample.h"
#include "ops/ops_scan.h"
#include "ops/validate.h"

/* Of the ops' kernels, those a model of this shape can launch: its conv
 * width's (and the element-wise fallback's, 8 taps), its residual
 * stream's. */
typedef struct model_kernels {
    int taps;
    const char *residual; /* dtype suffix */
    sj_scan_fwd_kernels scan; /* the forward scan's, and whether the split's */
    int skinny_rows;          /* the largest skinny GEMM form the rule gives its projections, 0 none */
} model_kernels;

static int has_suffix(const char *s, const char *sfx)
{
    size_t n = strlen(s), k = strlen(sfx);
    return n > k && s[n - k - 1] == '_' && !strcmp(s + n - k, sfx);
}

static int model_launches(const char *kernel, const void *arg)
{
    const model_kernels *k = arg;
    char taps[8];
    snprintf(taps, sizeof taps, "_t%d_", k->taps);
    if (!strncmp(kernel, "rmsnorm_fwd_", 12) || !strncmp(kernel, "rmsnorm_bwd_", 12) ||
        !strncmp(kernel, "embedding_fwd_", 14))
        return has_suffix(kernel, k->residual);
    if (!strncmp(kernel, "conv_update_", 12))
        return strstr(kernel, taps) != NULL;
    if (!strncmp(kernel, "conv_fwd_", 9) || !strncmp(kernel, "conv_bwd_t", 10))
        return strstr(kernel, taps) || strstr(kernel, "_v1_");
    int rows;
    if (sscanf(kernel, "gemm_skinny_m%d_", &rows) == 1) /* the model's C is in its own dtype */
        return rows <= k->skinny_rows && strstr(kernel, "_f32") == NULL;
    if (!strncmp(kernel, "scan_split_", 11))
        return k->scan.split;
    int bit;
    if (sscanf(kernel, "scan_fwd_tp%d_", &bit) == 1)
        return bit < 32 && (k->scan.tp_tokens >> bit & 1);
    if (sscanf(kernel, "scan_fwd_ns%d_", &bit) == 1)
        return bit < 32 && (k->scan.states >> bit & 1);
    return 1;
}

int sj_model_linear_shape(const ssmjit_model_config *c, int i, const char **name, int64_t *n, int64_t *k)
{
    static const struct {
        const char *name;
        sj_model_tensor_kind kind;
    } linears[] = {{"in_proj", SJ_T_IN_PROJ},
                   {"x_proj", SJ_T_X_PROJ},
                   {"dt_proj", SJ_T_DT_PROJ},
                   {"out_proj", SJ_T_OUT_PROJ},
                   {"lm_head", SJ_T_LM_HEAD}};
    if (i < 0 || i >= (int)(sizeof linears / sizeof *linears))
        return 0;
    const sj_model_dims dims = sj_model_dims_of(c);
    int64_t dim[3];
    (void)sj_model_tensor_shape(&dims, linears[i].kind, dim);
    *name = linears[i].name;
    *n = dim[0];
    *k = dim[1];
    return 1;
}

/* The ops (and the filter's argument) of what a model launches in calls
 * up to opts' largest; with ctx NULL, the forward scan's kernels of every
 * kind. */
static unsigned model_ops(const ssmjit_context *ctx, const ssmjit_model_config *cfg,
                          const ssmjit_model_options *opts, model_kernels *k)
{
    const ssmjit_model_prepare what = opts->prepare;
    /* the backward's split kernels are named as the forward's */
    const sj_scan_fwd_kernels any = {~0u, ~0u, 1};
    *k = (model_kernels){cfg->d_conv <= 4 ? 4 : 8,
                         sj_dtype_suffix(cfg->residual_in_fp32 ? SSMJIT_F32 : opts->dtype),
                         ctx ? sj_scan_fwd_kernels_for(ctx, opts->dtype, cfg->d_inner, cfg->d_state, opts->max_batch,
                                                       opts->max_tokens, what == SSMJIT_MODEL_PREPARE_TRAINING)
                             : any,
                         0};
    const char *name;
    int64_t wn, wk; /* W [n, k] */
    for (int i = 0; sj_model_linear_shape(cfg, i, &name, &wn, &wk); i++) {
        int rows = sj_gemm_skinny_form(wn, wk);
        k->skinny_rows = rows > k->skinny_rows ? rows : k->skinny_rows;
    }
    return what == SSMJIT_MODEL_PREPARE_NONE ? 0
           : SJ_MODEL_INFERENCE_OPS | (what == SSMJIT_MODEL_PREPARE_TRAINING ? SJ_MODEL_TRAINING_OPS : 0);
}

ssmjit_status sj_model_units(const ssmjit_context *ctx, const ssmjit_model_config *cfg,
                             const ssmjit_model_options *opts, void (*visit)(size_t unit, void *arg), void *arg)
{
    model_kernels k;
    unsigned ops = model_ops(ctx, cfg, opts, &k);
    return sj_op_units(ops, SSMJIT_DTYPE_BIT(opts->dtype), model_launches, &k, visit, arg);
}

ssmjit_status sj_model_prepare(ssmjit_context *ctx, const ssmjit_model_config *cfg, const ssmjit_model_options *opts,
                               unsigned flags)
{
    model_kernels k;
    unsigned ops = model_ops(ctx, cfg, opts, &k);
    return ops ? sj_prepare(ctx, ops, SSMJIT_DTYPE_BIT(opts->dtype), model_launches, &k, flags) : SSMJIT_OK;
}

SSMJIT_API ssmjit_status ssmjit_model_get_config(const ssmjit_model *m, ssmjit_model_config *config,
                                                 ssmjit_dtype *dtype)
{
    static const char op[] = "ssmjit_model_get_config";
    SJ_TRY(sj_check_ptr(m, op, "model"));
    SJ_TRY(sj_check_ptr(config, op, "config"));
    SJ_TRY(sj_check_ptr(dtype, op, "dtype"));
    *config = m->cfg;
    *dtype = m->dtype;
    return SSMJIT_OK;
}

SSMJIT_API int64_t ssmjit_model_tensor_count(const ssmjit_model *m)
{
    return m ? m->count : 0;
}

static void fill_info(const sj_model_tensor *t, ssmjit_tensor_info *info)
{
    memset(info, 0, sizeof *info);
    info->name = t->name;
    info->dtype = t->dtype;
    info->ndim = t->ndim;
    memcpy(info->shape, t->shape, sizeof t->shape);
    info->data = (void *)(uintptr_t)t->data;
    info->grad = (void *)(uintptr_t)t->grad;
}

SSMJIT_API ssmjit_status ssmjit_model_tensor_at(const ssmjit_model *m, int64_t i,
                                                ssmjit_tensor_info *info)
{
    static const char op[] = "ssmjit_model_tensor_at";
    SJ_TRY(sj_check_ptr(m, op, "model"));
    SJ_TRY(sj_check_ptr(info, op, "info"));
    if (i < 0 || i >= m->count)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: i = %lld is outside 0..%lld", op, (long long)i,
                        (long long)m->count - 1);
    fill_info(&m->t[i], info);
    return SSMJIT_OK;
}

static ssmjit_status find(const ssmjit_model *m, const char *name, const char *op,
                          sj_model_tensor **out)
{
    SJ_TRY(sj_check_ptr(m, op, "model"));
    SJ_TRY(sj_check_ptr(name, op, "name"));
    for (int64_t i = 0; i < m->count; i++)
        if (strcmp(m->t[i].name, name) == 0) {
            *out = &m->t[i];
            return SSMJIT_OK;
        }
    return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: the model has no tensor '%s'", op, name);
}

SSMJIT_API ssmjit_status ssmjit_model_tensor(const ssmjit_model *m, const char *name,
                                             ssmjit_tensor_info *info)
{
    static const char op[] = "ssmjit_model_tensor";
    sj_model_tensor *t = NULL;
    SJ_TRY(find(m, name, op, &t));
    SJ_TRY(sj_check_ptr(info, op, "info"));
    fill_info(t, info);
    return SSMJIT_OK;
}

SSMJIT_API ssmjit_status ssmjit_model_bind_tensor(ssmjit_model *m, const char *name, void *data)
{
    static const char op[] = "ssmjit_model_bind_tensor";
    sj_model_tensor *t = NULL;
    SJ_TRY(find(m, name, op, &t));
    SJ_TRY(sj_check_ptr(data, op, "data"));
    if ((uintptr_t)data % 16)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: data for '%s' is not 16-byte aligned", op, name);
    int pushed;
    SJ_TRY(sj_context_enter(m->ctx, &pushed));
    sj_model_drop_graph(m);
    if (t->owned)
        m->drv->MemFree(t->data);
    sj_context_leave(m->ctx, pushed);
    t->owned = 0;
    t->data = (CUdeviceptr)(uintptr_t)data;
    if (t->kind == SJ_T_A_LOG)
        m->a_log_rebound = 1;
    return SSMJIT_OK;
}

/* A tensor goes up in pieces of this many bytes (of its dtype), each
 * converted into a staging buffer: a buffer the size of the tensor (the
 * embedding's 77 MB at the 130m shape) came fresh from the system for
 * every tensor, and faulting its pages in cost more than converting into
 * it (bench/NOTES.md, "Model load: the host's half").  Two pinned ones
 * let the device copy a piece while the next is converted, without the
 * driver's own staging copy of pageable memory. */
#define UPLOAD_PIECE_BYTES ((size_t)4 << 20)

/* Opens the staging in the current context: two pinned buffers and their
 * events, or none where the driver lacks an entry point the pinned path
 * takes or any cannot be had (pageable pieces then). */
static void staging_open(ssmjit_model *m)
{
    sj_model_staging *s = &m->staging;
    const sj_driver *d = m->drv;
    s->opened = 1;
    if (!d->MemAllocHost || !d->MemFreeHost || !d->EventCreate || !d->EventDestroy || !d->EventRecord ||
        !d->EventSynchronize || !d->MemcpyHtoDAsync || !d->StreamSynchronize)
        return;
    for (int b = 0; b < 2; b++) {
        void *p = NULL;
        if (d->MemAllocHost(&p, UPLOAD_PIECE_BYTES) != CUDA_SUCCESS)
            break;
        s->buf[b] = p;
        if (d->EventCreate(&s->copied[b], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
            break;
    }
    if (!s->copied[1]) {
        sj_model_staging_drop(m);
        s->opened = 1;
    }
}

void sj_model_staging_drop(ssmjit_model *m)
{
    sj_model_staging *s = &m->staging;
    if (s->copied[1]) /* copies may be in flight */
        m->drv->StreamSynchronize(m->capture);
    for (int b = 0; b < 2; b++) {
        if (s->copied[b])
            m->drv->EventDestroy(s->copied[b]);
        if (s->buf[b])
            m->drv->MemFreeHost(s->buf[b]);
    }
    memset(s, 0, sizeof *s);
}

ssmjit_status sj_model_staging_close(ssmjit_model *m)
{
    if (!m->staging.opened)
        return SSMJIT_OK;
    int pushed;
    SJ_TRY(sj_context_enter(m->ctx, &pushed));
    ssmjit_status st = m->staging.buf[0] ? SJ_CU(m->drv, StreamSynchronize, m->capture) : SSMJIT_OK;
    sj_model_staging_drop(m);
    sj_context_leave(m->ctx, pushed);
    return st;
}

/* Pieces through the pinned buffers, in turn: a buffer is converted into
 * once the copy that last read it has finished. */
static ssmjit_status upload_pinned(ssmjit_model *m, sj_model_tensor *t, const unsigned char *src,
                                   ssmjit_dtype src_dtype)
{
    sj_model_staging *s = &m->staging;
    const size_t es = ssmjit_dtype_size(t->dtype), in = ssmjit_dtype_size(src_dtype), numel = (size_t)t->numel,
                 per = UPLOAD_PIECE_BYTES / es;
    for (size_t done = 0; done < numel; done += per) {
        const size_t n = numel - done < per ? numel - done : per;
        const int b = s->next;
        SJ_TRY(SJ_CU(m->drv, EventSynchronize, s->copied[b]));
        sj_convert(s->buf[b], t->dtype, src + done * in, src_dtype, n);
        SJ_TRY(SJ_CU(m->drv, MemcpyHtoDAsync, t->data + done * es, s->buf[b], n * es, m->capture));
        SJ_TRY(SJ_CU(m->drv, EventRecord, s->copied[b], m->capture));
        s->next = b ^ 1;
    }
    return SSMJIT_OK;
}

/* Pieces through one pageable buffer, each copy waited for. */
static ssmjit_status upload_pageable(ssmjit_model *m, sj_model_tensor *t, const unsigned char *src,
                                     ssmjit_dtype src_dtype)
{
    const size_t es = ssmjit_dtype_size(t->dtype), in = ssmjit_dtype_size(src_dtype), numel = (size_t)t->numel;
    const size_t per = UPLOAD_PIECE_BYTES / es, first = numel < per ? numel : per;
    unsigned char *staging = malloc(first ? first * es : 1);
    if (!staging)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "out of host memory converting '%s'", t->name);
    ssmjit_status st = SSMJIT_OK;
    for (size_t done = 0; st == SSMJIT_OK && done < numel; done += per) {
        size_t n = numel - done < per ? numel - done : per;
        sj_convert(staging, t->dtype, src + done * in, src_dtype, n);
        st = SJ_CU(m->drv, MemcpyHtoD, t->data + done * es, staging, n * es);
    }
    free(staging);
    return st;
}

ssmjit_status sj_model_upload(ssmjit_model *m, sj_model_tensor *t, const void *src,
                              ssmjit_dtype src_dtype)
{
    int pushed;
    SJ_TRY(sj_context_enter(m->ctx, &pushed));
    if (!m->staging.opened)
        staging_open(m);
    ssmjit_status st = m->staging.buf[0] ? upload_pinned(m, t, src, src_dtype) : upload_pageable(m, t, src, src_dtype);
    sj_context_leave(m->ctx, pushed);
    return st;
}

ssmjit_status sj_model_refresh_a(ssmjit_model *m, void *stream)
{
    const ssmjit_model_config *c = &m->cfg;
    int64_t per_layer = c->d_inner * c->d_state;
    if (!m->a_log_rebound)
        return sj_neg_exp_f32(m->ctx, c->n_layer * per_layer, (const float *)(uintptr_t)m->a_log_block,
                              (float *)(uintptr_t)m->A, stream);
    for (int64_t l = 0; l < c->n_layer; l++)
        SJ_TRY(sj_neg_exp_f32(m->ctx, per_layer, sj_model_weight(m, l, SJ_L_A_LOG),
                              (float *)(uintptr_t)m->A + l * per_layer, stream));
    return SSMJIT_OK;
}

ssmjit_status sj_model_alloc_grads(ssmjit_model *m)
{
    int pushed;
    SJ_TRY(sj_context_enter(m->ctx, &pushed));
    ssmjit_status st = SSMJIT_OK;
    for (int64_t i = 0; i < m->count && st == SSMJIT_OK; i++)
        if (!m->t[i].grad)
            st = SJ_CU(m->drv, MemAlloc, &m->t[i].grad, m->t[i].numel * 4);
    sj_context_leave(m->ctx, pushed);
    return st;
}

void sj_model_drop_graph(ssmjit_model *m)
{
    if (m->graph)
        m->drv->GraphExecDestroy(m->graph);
    m->graph = NULL;
    memset(&m->key, 0, sizeof m->key);
}

ssmjit_status sj_model_gemm(ssmjit_model *m, int64_t rows, int64_t cols, int64_t k,
                            const void *a, int64_t lda, int trans_a, const void *b, int64_t ldb,
                            int trans_b, void *c, int64_t ldc, ssmjit_dtype c_dtype, float beta,
                            void *stream)
{
    sj_gemm_desc d = {
        .ab_dtype = m->dtype, .c_dtype = c_dtype, .m = rows, .n = cols, .k = k,
        .a = a, .lda = lda, .trans_a = trans_a, .b = b, .ldb = ldb, .trans_b = trans_b,
        .c = c, .ldc = ldc, .alpha = 1.0f, .beta = beta, .allow_tf32 = m->allow_tf32,
    };
    sj_model_profile_begin(m, SJ_PROFILE_GEMM, stream);
    ssmjit_status st = sj_gemm(m->blas, &d, stream);
    sj_model_profile_end(m, stream);
    return st;
}

ssmjit_status sj_model_linear(ssmjit_model *m, const sj_model_tensor *w, int64_t rows, const void *x,
                              int64_t ldx, void *y, int64_t ldy, void *stream)
{
    return sj_model_gemm(m, rows, w->shape[0], w->shape[1], x, ldx, 0, (const void *)(uintptr_t)w->data,
                         w->shape[1], 1, y, ldy, m->dtype, 0.0f, stream);
}

ssmjit_status sj_model_copy_in(ssmjit_model *m, void *dst, const void *src, size_t bytes, void *stream)
{
    int pushed;
    SJ_TRY(sj_context_enter(m->ctx, &pushed));
    ssmjit_status st = SJ_CU(m->drv, MemcpyHtoDAsync, (CUdeviceptr)(uintptr_t)dst, src, bytes,
                             (CUstream)stream);
    sj_context_leave(m->ctx, pushed);
    return st;
}

ssmjit_status sj_model_check_workspace(const void *workspace, size_t bytes, size_t need, const char *op)
{
    if (need && !workspace)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: args->workspace is NULL (%zu bytes needed)", op, need);
    if (bytes < need)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: args->workspace_bytes = %zu, %zu needed", op, bytes,
                        need);
    if ((uintptr_t)workspace % 256)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: args->workspace is not 256-byte aligned", op);
    return SSMJIT_OK;
}

ssmjit_status sj_model_check_ids(const ssmjit_model *m, const int32_t *ids, int64_t n,
                                 int ignore_ok, const char *op, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] >= 0 && ids[i] < m->cfg.vocab_size)
            continue;
        if (ignore_ok && ids[i] == -100)
            continue;
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: %s[%lld] = %d is not a token id (vocab %lld)",
                        op, what, (long long)i, (int)ids[i], (long long)m->cfg.vocab_size);
    }
    return SSMJIT_OK;
}

ssmjit_status sj_model_embed(ssmjit_model *m, const int32_t *host_ids, int64_t n, void *ids_dev,
                             void *out, void *stream)
{
    if (host_ids)
        SJ_TRY(sj_model_copy_in(m, ids_dev, host_ids, (size_t)n * 4, stream));
    return sj_embedding_fwd(m->ctx, m->dtype, n, m->cfg.d_model, m->cfg.vocab_size, ids_dev,
                            (const void *)(uintptr_t)m->t[SJ_G_EMBEDDING].data,
                            (ssmjit_matrix){out, 0, 0}, m->dtype, stream);
}

_Static_assert(sizeof(ssmjit_sampling) == sizeof(sj_sample_params) &&
                   offsetof(ssmjit_sampling, top_p) == offsetof(sj_sample_params, top_p) &&
                   offsetof(ssmjit_sampling, seed) == offsetof(sj_sample_params, seed),
               "ssmjit_sampling is the sampling kernel's layout");

ssmjit_status sj_model_pick_next(ssmjit_model *m, const ssmjit_model_step_args *a, void *stream)
{
    const int64_t B = a->batch, V = m->cfg.vocab_size;
    if (!a->next_ids)
        return SSMJIT_OK;
    if (a->sampling)
        return sj_sample_rows(m->ctx, m->dtype, B, V, (ssmjit_matrix){a->logits, 0, 0},
                              (const sj_sample_params *)a->sampling, a->sampling_steps, a->next_ids, stream);
    return sj_argmax_rows(m->ctx, m->dtype, B, V, (ssmjit_matrix){a->logits, 0, 0}, a->next_ids, stream);
}
