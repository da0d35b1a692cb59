/* The model's life: its options, checks of a config, the tensor table,
 * device memory and random weights at creation, and what destroy frees
 * (the fused decode's kernels and a running profile among it). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "cuda/cublas_loader.h"
#include "model.h"
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
    if (o->max_batch < 0 || o->max_tokens < 0)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: opts->%s = %lld is negative (0: any)", op,
                        o->max_batch < 0 ? "max_batch" : "max_tokens",
                        (long long)(o->max_batch < 0 ? o->max_batch : o->max_tokens));
    return sj_check_dtype(o->dtype, op, "opts->dtype");
}

static void add_tensor(ssmjit_model *m, sj_model_tensor_kind kind, int64_t layer, ssmjit_dtype dtype)
{
    sj_model_tensor *t = &m->t[m->count++];
    sj_model_tensor_name(SJ_NAMING_HF, kind, layer, t->name, sizeof t->name);
    const sj_model_dims dims = sj_model_dims_of(&m->cfg);
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
        SJ_TRY(SJ_CU(m->drv, MemAlloc, &t->data, sj_model_tensor_bytes(t)));
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
    /* cuBLAS opens on the pool while the weights load (the handle comes
     * after them, sj_model_finish); nothing starts ahead under
     * SSMJIT_MODEL_PREPARE_NONE. */
    if (opts->prepare != SSMJIT_MODEL_PREPARE_NONE)
        sj_cublas_open_ahead();
    /* First thing, so that the kernels compile while the weights are read.
     * Ahead of need only: what keeps them from queueing (no NVRTC, no
     * toolchain record) is reported by the call that needs one, as
     * without it. */
    if (sj_model_prepare(ctx, cfg, opts, 0) != SSMJIT_OK)
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

    int pushed = 0;
    ssmjit_status st = sj_context_enter(ctx, &pushed);
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

ssmjit_status sj_model_finish(ssmjit_model *m, ssmjit_status filled, ssmjit_model **out)
{
    ssmjit_status st = filled == SSMJIT_OK ? sj_model_staging_close(m) : filled;
    if (st == SSMJIT_OK)
        st = sj_blas_create(m->ctx, &m->blas);
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
            sj_model_staging_drop(m);
            sj_model_drop_graph(m);
            sj_special_unload(m->ctx, m->decode, SJ_DECODE_KERNELS);
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
    return sj_model_finish(m, randomize(m, seed), out);
}
