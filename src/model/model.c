/* The model object: its tensor table and device memory, random weights,
 * and the pieces the forward, backward and step share. */
#include "model.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/dtype_convert.h"
#include "base/error.h"
#include "ops/ops_model.h"
#include "ops/ops_prepare.h"
#include "ops/ops_scan.h"
#include "ops/validate.h"

SSMJIT_API void ssmjit_model_options_init(ssmjit_model_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
    opts->dtype = SSMJIT_BF16;
}

static ssmjit_status check_config(const ssmjit_model_config *c, const char *op)
{
    static const struct {
        const char *name;
        size_t offset;
        int64_t lo, hi;
    } fields[] = {
#define F(f, lo, hi) {"config->" #f, offsetof(ssmjit_model_config, f), lo, hi}
        F(d_model, 1, INT32_MAX), F(d_inner, 1, INT32_MAX), F(d_state, 1, 256), F(d_conv, 2, 8),
        F(dt_rank, 1, INT32_MAX), F(n_layer, 1, 100000), F(vocab_size, 1, INT32_MAX),
#undef F
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        int64_t v;
        memcpy(&v, (const char *)c + fields[i].offset, sizeof v);
        if (v < fields[i].lo || v > fields[i].hi)
            return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: %s = %lld is outside %lld..%lld", op,
                            fields[i].name, (long long)v, (long long)fields[i].lo,
                            (long long)fields[i].hi);
    }
    if (!(c->norm_eps >= 0) || !isfinite(c->norm_eps))
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: config->norm_eps = %g must be finite and >= 0",
                        op, c->norm_eps);
    /* The largest weight and the per-layer states must be addressable. */
    SJ_TRY(sj_check_size(c->vocab_size, c->d_model, 4, op, "config->vocab_size * d_model"));
    SJ_TRY(sj_check_size(2 * c->d_inner, c->d_model, 4, op, "config->d_inner * d_model"));
    SJ_TRY(sj_check_size(c->dt_rank + 2 * c->d_state, c->d_inner, 4, op, "config->dt_rank * d_inner"));
    return sj_check_size(c->n_layer, c->d_inner, c->d_state * 4, op, "config->n_layer * d_inner * d_state");
}

static ssmjit_status check_options(const ssmjit_model_options *o, const char *op)
{
    SJ_TRY(sj_check_struct_size(o->struct_size, sizeof *o, op, "opts", "ssmjit_model_options_init"));
    if (o->prepare < SSMJIT_MODEL_PREPARE_INFERENCE || o->prepare > SSMJIT_MODEL_PREPARE_NONE)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: opts->prepare = %d is not a ssmjit_model_prepare", op,
                        (int)o->prepare);
    return sj_check_dtype(o->dtype, op, "opts->dtype");
}

/* Of the ops' kernels, those a model of this shape can launch: its conv
 * width's (and the element-wise fallback's, 8 taps), its residual
 * stream's. */
typedef struct model_kernels {
    int taps;
    const char *residual; /* dtype suffix */
    unsigned states;      /* the forward scan's states a thread, as bits (sj_scan_fwd_states_used) */
    int token_parallel;   /* whether one short prompt takes the token-parallel forward scan */
    int skinny_rows;      /* the largest skinny GEMM form the rule gives its projections, 0 none */
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
    if (!strncmp(kernel, "scan_fwd_tp", 11))
        return k->token_parallel;
    int ns;
    if (sscanf(kernel, "scan_fwd_ns%d_", &ns) == 1)
        return ns < 32 && (k->states >> ns & 1);
    return 1;
}

static sj_model_dims model_dims(const ssmjit_model_config *c)
{
    return (sj_model_dims){c->d_model, c->d_inner, c->dt_rank, c->d_state, c->d_conv, c->vocab_size};
}

/* The ops (and the filter's argument) of what a model launches; with ctx
 * NULL, the forward scan's kernels of every kind. */
static unsigned model_ops(const ssmjit_context *ctx, const ssmjit_model_config *cfg, ssmjit_dtype dtype,
                          ssmjit_model_prepare what, model_kernels *k)
{
    *k = (model_kernels){cfg->d_conv <= 4 ? 4 : 8, sj_dtype_suffix(cfg->residual_in_fp32 ? SSMJIT_F32 : dtype),
                         ctx ? sj_scan_fwd_states_used(ctx, cfg->d_inner, cfg->d_state) : ~0u,
                         ctx ? sj_scan_fwd_is_token_parallel(ctx, 1, 1, cfg->d_inner, cfg->d_state, 0) : 1, 0};
    /* W [n, k] of the projections and the LM head */
    static const sj_model_tensor_kind linear[] = {SJ_T_IN_PROJ, SJ_T_X_PROJ, SJ_T_DT_PROJ, SJ_T_OUT_PROJ,
                                                  SJ_T_LM_HEAD};
    const sj_model_dims dims = model_dims(cfg);
    for (size_t i = 0; i < sizeof linear / sizeof linear[0]; i++) {
        int64_t w[3];
        sj_model_tensor_shape(&dims, linear[i], w);
        int rows = sj_gemm_skinny_form(w[0], w[1]);
        k->skinny_rows = rows > k->skinny_rows ? rows : k->skinny_rows;
    }
    return what == SSMJIT_MODEL_PREPARE_NONE ? 0
           : SJ_MODEL_INFERENCE_OPS | (what == SSMJIT_MODEL_PREPARE_TRAINING ? SJ_MODEL_TRAINING_OPS : 0);
}

ssmjit_status sj_model_units(const ssmjit_context *ctx, const ssmjit_model_config *cfg, ssmjit_dtype dtype,
                             ssmjit_model_prepare what, void (*visit)(size_t unit, void *arg), void *arg)
{
    model_kernels k;
    unsigned ops = model_ops(ctx, cfg, dtype, what, &k);
    return sj_op_units(ops, SSMJIT_DTYPE_BIT(dtype), model_launches, &k, visit, arg);
}

ssmjit_status sj_model_prepare(ssmjit_context *ctx, const ssmjit_model_config *cfg, ssmjit_dtype dtype,
                               ssmjit_model_prepare what, unsigned flags)
{
    model_kernels k;
    unsigned ops = model_ops(ctx, cfg, dtype, what, &k);
    return ops ? sj_prepare(ctx, ops, SSMJIT_DTYPE_BIT(dtype), model_launches, &k, flags) : SSMJIT_OK;
}

static void add_tensor(ssmjit_model *m, sj_model_tensor_kind kind, int64_t layer, ssmjit_dtype dtype)
{
    sj_model_tensor *t = &m->t[m->count++];
    sj_model_tensor_name(SJ_NAMING_HF, kind, layer, t->name, sizeof t->name);
    const sj_model_dims dims = model_dims(&m->cfg);
    t->kind = kind;
    t->dtype = dtype;
    t->ndim = sj_model_tensor_shape(&dims, kind, t->shape);
    t->numel = 1;
    for (int i = 0; i < t->ndim; i++)
        t->numel *= (size_t)t->shape[i];
}

static void build_table(ssmjit_model *m)
{
    /* a layer's tensors in sj_model_layer_slot's order: the matrices in
     * the model's dtype, the rest f32 */
    static const struct {
        sj_model_tensor_kind kind;
        int f32;
    } layer[] = {{SJ_T_NORM, 1}, {SJ_T_IN_PROJ, 0},  {SJ_T_CONV, 1},   {SJ_T_CONV_BIAS, 1}, {SJ_T_X_PROJ, 0},
                 {SJ_T_DT_PROJ, 0}, {SJ_T_DT_BIAS, 1}, {SJ_T_A_LOG, 1}, {SJ_T_D, 1},         {SJ_T_OUT_PROJ, 0}};
    _Static_assert(sizeof layer / sizeof layer[0] == SJ_L_COUNT, "a layer's slots");
    ssmjit_dtype w = m->dtype, f = SSMJIT_F32;
    add_tensor(m, SJ_T_EMBEDDING, 0, w);
    add_tensor(m, SJ_T_NORM_F, 0, f);
    if (!m->cfg.tie_embeddings)
        add_tensor(m, SJ_T_LM_HEAD, 0, w);
    m->layer_base = m->count;
    for (int64_t l = 0; l < m->cfg.n_layer; l++)
        for (size_t i = 0; i < SJ_L_COUNT; i++)
            add_tensor(m, layer[i].kind, l, layer[i].f32 ? f : w);
}

static size_t tensor_bytes(const sj_model_tensor *t)
{
    return t->numel * ssmjit_dtype_size(t->dtype);
}

/* Device memory for every tensor (A_log of all layers in one block, so
 * that one launch derives A), and for A.  Runs with the context current. */
static ssmjit_status alloc_weights(ssmjit_model *m)
{
    const ssmjit_model_config *c = &m->cfg;
    size_t a_bytes = (size_t)(c->n_layer * c->d_inner * c->d_state) * 4;
    SJ_TRY(SJ_CU(m->drv, MemAlloc, &m->A, a_bytes));
    SJ_TRY(SJ_CU(m->drv, MemAlloc, &m->a_log_block, a_bytes));
    for (int64_t i = 0; i < m->count; i++) {
        sj_model_tensor *t = &m->t[i];
        if (t->kind == SJ_T_A_LOG) {
            int64_t layer = (i - m->layer_base) / SJ_L_COUNT;
            t->data = m->a_log_block + (CUdeviceptr)(layer * c->d_inner * c->d_state * 4);
            continue;
        }
        SJ_TRY(SJ_CU(m->drv, MemAlloc, &t->data, tensor_bytes(t)));
        t->owned = 1;
    }
    return SSMJIT_OK;
}

ssmjit_status sj_model_alloc(ssmjit_context *ctx, const ssmjit_model_config *cfg,
                             const ssmjit_model_options *opts, ssmjit_model **out)
{
    static const char op[] = "ssmjit_model_create";
    SJ_TRY(sj_check_context(ctx, op));
    SJ_CHECK_STRUCT(op, "config", cfg, ssmjit_model_config);
    SJ_TRY(check_config(cfg, op));
    ssmjit_model_options defaults;
    ssmjit_model_options_init(&defaults);
    if (!opts)
        opts = &defaults;
    SJ_TRY(check_options(opts, op));
    /* First thing, so that the kernels compile while the weights are read.
     * Ahead of need only: what keeps them from queueing (no NVRTC, no
     * toolchain record) is reported by the call that needs one, as
     * without it. */
    if (sj_model_prepare(ctx, cfg, opts->dtype, opts->prepare, 0) != SSMJIT_OK)
        sj_error_clear();
    if (opts->prepare != SSMJIT_MODEL_PREPARE_NONE && sj_model_decode_prepare(ctx, cfg, opts->dtype) != SSMJIT_OK)
        sj_error_clear();

    ssmjit_model *m = calloc(1, sizeof *m);
    if (m)
        m->t = calloc((size_t)(3 + cfg->n_layer * SJ_L_COUNT), sizeof *m->t);
    if (!m || !m->t) {
        ssmjit_model_destroy(m);
        return sj_error(SSMJIT_ERR_NO_MEMORY, "%s: out of host memory", op);
    }
    m->ctx = ctx;
    m->drv = ctx->drv;
    m->cfg = *cfg;
    m->dtype = opts->dtype;
    m->res_dtype = cfg->residual_in_fp32 ? SSMJIT_F32 : opts->dtype;
    m->allow_tf32 = opts->allow_tf32;
    m->decode_force = -1;
    build_table(m);

    ssmjit_status st = sj_blas_create(ctx, &m->blas);
    int pushed = 0;
    if (st == SSMJIT_OK)
        st = sj_context_enter(ctx, &pushed);
    if (st == SSMJIT_OK) {
        st = alloc_weights(m);
        if (st == SSMJIT_OK)
            st = SJ_CU(m->drv, StreamCreate, &m->capture, CU_STREAM_NON_BLOCKING);
        sj_context_leave(ctx, pushed);
    }
    if (st != SSMJIT_OK) {
        ssmjit_model_destroy(m);
        return st;
    }
    *out = m;
    return SSMJIT_OK;
}

SSMJIT_API void ssmjit_model_destroy(ssmjit_model *m)
{
    if (!m)
        return;
    if (m->ctx) {
        int pushed;
        if (sj_context_enter(m->ctx, &pushed) == SSMJIT_OK) {
            sj_model_drop_graph(m);
            sj_model_decode_unload(m);
            for (int64_t i = 0; i < m->count; i++) {
                if (m->t[i].owned)
                    m->drv->MemFree(m->t[i].data);
                if (m->t[i].grad)
                    m->drv->MemFree(m->t[i].grad);
            }
            if (m->a_log_block)
                m->drv->MemFree(m->a_log_block);
            if (m->A)
                m->drv->MemFree(m->A);
            if (m->capture)
                m->drv->StreamDestroy(m->capture);
            sj_context_leave(m->ctx, pushed);
        }
        sj_blas_destroy(m->blas);
    }
    if (m->profile) {
        double ms[SJ_PROFILE_KINDS];
        sj_model_profile_stop(m, ms);
    }
    free(m->train.ids);
    free(m->t);
    free(m);
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

ssmjit_status sj_model_upload(ssmjit_model *m, sj_model_tensor *t, const void *src,
                              ssmjit_dtype src_dtype)
{
    size_t bytes = tensor_bytes(t);
    void *staging = malloc(bytes ? bytes : 1);
    if (!staging)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "out of host memory converting '%s'", t->name);
    sj_convert(staging, t->dtype, src, src_dtype, t->numel);
    int pushed;
    ssmjit_status st = sj_context_enter(m->ctx, &pushed);
    if (st == SSMJIT_OK) {
        st = SJ_CU(m->drv, MemcpyHtoD, t->data, staging, bytes);
        sj_context_leave(m->ctx, pushed);
    }
    free(staging);
    return st;
}

/* splitmix64: a seeded, reproducible stream for random weights. */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s)
{
    return ((double)(next_u64(s) >> 11) + 0.5) * 0x1.0p-53;
}

static double normal(uint64_t *s)
{
    return sqrt(-2.0 * log(uniform01(s))) * cos(6.283185307179586 * uniform01(s));
}

/* The initial value of element i of tensor t, as a fresh Mamba has it. */
static float init_value(const ssmjit_model_config *c, const sj_model_tensor *t, size_t i,
                        uint64_t *s)
{
    switch (t->kind) {
    case SJ_T_NORM:
    case SJ_T_NORM_F:
    case SJ_T_D:
        return 1.0f;
    case SJ_T_A_LOG:
        return (float)log((double)(i % (size_t)c->d_state + 1));
    case SJ_T_CONV:
    case SJ_T_CONV_BIAS: {
        double bound = 1.0 / sqrt((double)c->d_conv);
        return (float)((2.0 * uniform01(s) - 1.0) * bound);
    }
    case SJ_T_DT_PROJ: {
        double bound = 1.0 / sqrt((double)c->dt_rank);
        return (float)((2.0 * uniform01(s) - 1.0) * bound);
    }
    case SJ_T_DT_BIAS: {
        /* dt log-uniform in [0.001, 0.1]; the bias is softplus's inverse */
        double dt = exp(log(0.001) + uniform01(s) * (log(0.1) - log(0.001)));
        return (float)(dt + log(-expm1(-dt)));
    }
    default:
        return (float)(0.02 * normal(s));
    }
}

static ssmjit_status randomize(ssmjit_model *m, uint64_t seed)
{
    uint64_t s = seed;
    for (int64_t i = 0; i < m->count; i++) {
        sj_model_tensor *t = &m->t[i];
        float *v = malloc(t->numel * sizeof *v);
        if (!v)
            return sj_error(SSMJIT_ERR_NO_MEMORY, "out of host memory for '%s'", t->name);
        for (size_t j = 0; j < t->numel; j++)
            v[j] = init_value(&m->cfg, t, j, &s);
        ssmjit_status st = sj_model_upload(m, t, v, SSMJIT_F32);
        free(v);
        SJ_TRY(st);
    }
    return SSMJIT_OK;
}

SSMJIT_API ssmjit_status ssmjit_model_create(ssmjit_context *ctx, const ssmjit_model_config *config,
                                             const ssmjit_model_options *opts, uint64_t seed,
                                             ssmjit_model **out)
{
    SJ_TRY(sj_check_ptr(out, "ssmjit_model_create", "out"));
    *out = NULL;
    ssmjit_model *m;
    SJ_TRY(sj_model_alloc(ctx, config, opts, &m));
    ssmjit_status st = randomize(m, seed);
    if (st != SSMJIT_OK) {
        ssmjit_model_destroy(m);
        return st;
    }
    *out = m;
    return SSMJIT_OK;
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
