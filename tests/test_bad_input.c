/* Bad input to every public function and to the model layer's internal
 * ops (src/ops/ops_model.h), as one table (BAD_INPUT below):
 * NULL handles and pointers, negative extents and extents whose products
 * pass 2^62, unknown enum values and mismatched dtypes.  Each row must
 * return its status with a message containing its text, and write
 * nothing: the host outputs, the stand-in device memory and the cache
 * directory are compared with their state before the call.
 *
 * The ops check every argument before touching the GPU, so the rows that
 * need a context get a stand-in that works without one: a device's
 * properties, a driver without entry points, and its modules marked
 * loaded.  Were a check missing, the op would go on to a driver call and
 * fail with "the installed CUDA driver has no cu...", never reaching a
 * GPU, so the row fails cleanly on any machine.  test_valid_base_arguments
 * shows that the unchanged arguments get that far: each row fails for the
 * one thing it changes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "context.h"
#include "error.h"
#include "gemm.h"
#include "gpu_util.h"
#include "kernel.h"
#include "ops_model.h"
#include "ops_sample.h"
#include "ops_scan.h"
#include "test_util.h"

#define POISON 0xA5
#define P(n) (INT64_C(1) << (n))

/* Device memory as far as the host code can tell: it never dereferences
 * device pointers, so aligned host memory serves, and any write to it is
 * a bug. */
static _Alignas(256) unsigned char device_mem[4096];
#define DEV ((void *)device_mem)
#define MISALIGNED ((void *)(device_mem + 1))

/* Everything a function could write on the host. */
typedef struct outputs {
    size_t bytes, count, removed;
    int major, minor, was_cached, archs[4];
    const char *path;
    char dir[64];
    ssmjit_cache_stats stats;
    ssmjit_prewarm_result prewarm;
    ssmjit_cache_target_stats targets[2];
    ssmjit_context_info info;
    ssmjit_device_info device;
    int32_t order[4], seg_start[5], seg_id[4];
    int64_t nseg;
} outputs;

/* Valid arguments for every function; a row changes one thing. */
typedef struct args {
    ssmjit_context *ctx;
    outputs *out;
    const char *cache_dir; /* empty scratch directory */
    const char *long_dir;  /* longer than PATH_MAX */
    ssmjit_context_options copts;
    ssmjit_prewarm_options popts;
    const char *defines[2];
    ssmjit_activation_desc act;
    ssmjit_activation_fwd_args act_f;
    ssmjit_activation_bwd_args act_b;
    ssmjit_gate_desc gate;
    ssmjit_gate_fwd_args gate_f;
    ssmjit_gate_bwd_args gate_b;
    ssmjit_rmsnorm_desc norm;
    ssmjit_rmsnorm_fwd_args norm_f;
    ssmjit_rmsnorm_bwd_args norm_b;
    ssmjit_matrix x, y, dy;
    const void *weight;
    void *workspace;
    size_t workspace_bytes;
    ssmjit_conv1d_desc conv;
    ssmjit_conv1d_fwd_args conv_f;
    ssmjit_conv1d_bwd_args conv_b;
    ssmjit_conv1d_update_args conv_u;
    ssmjit_selective_scan_desc scan;
    ssmjit_selective_scan_fwd_args sfwd;
    ssmjit_selective_scan_bwd_args sbwd;
    ssmjit_state_update_desc upd;
    ssmjit_state_update_args uargs;
    sj_blas blas; /* a stand-in handle on the stand-in context */
    sj_gemm_desc gemm;
    /* the model layer's ops: [n, d] activations, vocab rows or columns */
    ssmjit_dtype dtype, out_dtype;
    int64_t n, d, vocab, nseg;
    float scale;
    const int32_t *ids_host, *ids, *seg_start, *seg_id;
    const float *fa, *fb;
    float *fy, *row_loss, *loss;
    int32_t *argmax_out;
    const sj_sample_params *sample_params;
    uint64_t *sample_steps;
    ssmjit_matrix logits, dlogits;
    /* the model: a small shape that passes every check */
    ssmjit_model_config mcfg;
    ssmjit_model_options mopts;
} args;

static const int32_t host_ids[4] = {3, 1, 3, 0};

static args base_args(ssmjit_context *ctx, outputs *out, const char *cache_dir, const char *long_dir)
{
    const ssmjit_matrix m = {DEV, 0, 0}, none = {NULL, 0, 0};
    args a;
    memset(&a, 0, sizeof a);
    a.ctx = ctx;
    a.out = out;
    a.cache_dir = cache_dir;
    a.long_dir = long_dir;
    ssmjit_context_options_init(&a.copts);
    ssmjit_prewarm_options_init(&a.popts);
    a.popts.arch = "sm_80";
    a.popts.cache_dir = cache_dir;
    a.act = (ssmjit_activation_desc){sizeof a.act, SSMJIT_ACT_SILU, SSMJIT_F32, 4, 8};
    a.act_f = (ssmjit_activation_fwd_args){sizeof a.act_f, m, m};
    a.act_b = (ssmjit_activation_bwd_args){sizeof a.act_b, m, m, m};
    a.gate = (ssmjit_gate_desc){sizeof a.gate, SSMJIT_F32, 4, 8};
    a.gate_f = (ssmjit_gate_fwd_args){sizeof a.gate_f, m, m, m};
    a.gate_b = (ssmjit_gate_bwd_args){sizeof a.gate_b, m, m, m, m, m};
    a.norm = (ssmjit_rmsnorm_desc){sizeof a.norm, SSMJIT_F32, 4, 8, 1e-5, 0, SSMJIT_F32};
    a.norm_f = (ssmjit_rmsnorm_fwd_args){sizeof a.norm_f, m, none, DEV, m, none, DEV};
    a.norm_b = (ssmjit_rmsnorm_bwd_args){sizeof a.norm_b, m, DEV, DEV, m, none, m, none, DEV, DEV, (size_t)P(40)};
    a.x = a.y = a.dy = m;
    a.weight = DEV;
    a.workspace = DEV;
    a.workspace_bytes = (size_t)P(40);
    a.conv = (ssmjit_conv1d_desc){sizeof a.conv, SSMJIT_F32, 2, 5, 8, 4, 1};
    a.conv_f = (ssmjit_conv1d_fwd_args){sizeof a.conv_f, m, DEV, DEV, DEV, m, DEV};
    a.conv_b = (ssmjit_conv1d_bwd_args){sizeof a.conv_b, m, DEV, DEV, DEV, m, DEV, m, DEV, DEV, DEV, DEV, (size_t)P(40)};
    a.conv_u = (ssmjit_conv1d_update_args){sizeof a.conv_u, m, DEV, DEV, DEV, m};
    a.scan = (ssmjit_selective_scan_desc){
        .struct_size = sizeof a.scan, .dtype = SSMJIT_F32, .batch = 2, .seqlen = 40, .dim = 8, .dstate = 16,
        .delta_softplus = 1, .checkpoint = 1};
    const ssmjit_selective_scan_inputs scan_in = {
        .u = m, .delta = m, .A = DEV, .B = m, .C = m, .D = DEV, .z = m, .delta_bias = DEV,
        .initial_state = DEV};
    a.sfwd = (ssmjit_selective_scan_fwd_args){
        .struct_size = sizeof a.sfwd, .in = scan_in, .y = m, .final_state = DEV, .checkpoint = DEV};
    a.sbwd = (ssmjit_selective_scan_bwd_args){
        .struct_size = sizeof a.sbwd, .in = scan_in, .checkpoint = DEV, .dy = m, .d_final_state = DEV,
        .du = m, .ddelta = m, .dA = DEV, .dB = m, .dC = m, .dD = DEV, .dz = m, .ddelta_bias = DEV,
        .d_initial_state = DEV, .workspace = DEV, .workspace_bytes = (size_t)P(40)};
    a.upd = (ssmjit_state_update_desc){
        .struct_size = sizeof a.upd, .dtype = SSMJIT_F32, .batch = 2, .dim = 8, .dstate = 16, .dt_softplus = 1};
    a.uargs = (ssmjit_state_update_args){
        .struct_size = sizeof a.uargs, .x = m, .dt = m, .A = DEV, .B = m, .C = m, .D = DEV, .z = m,
        .dt_bias = DEV, .state = DEV, .out = m};
    a.blas = (sj_blas){.ctx = ctx};
    a.gemm = (sj_gemm_desc){.ab_dtype = SSMJIT_F32, .c_dtype = SSMJIT_F32, .m = 4, .n = 8, .k = 5,
                            .a = DEV, .b = DEV, .c = DEV, .alpha = 1.0f};
    a.dtype = a.out_dtype = SSMJIT_F32;
    a.n = 4, a.d = 8, a.vocab = 10, a.nseg = 3;
    a.scale = 0.25f;
    a.ids_host = host_ids;
    a.ids = a.seg_start = a.seg_id = a.argmax_out = DEV;
    a.sample_params = DEV;
    a.sample_steps = DEV;
    a.fa = a.fb = a.fy = a.row_loss = a.loss = DEV;
    a.logits = a.dlogits = m; /* the gradient over the logits */
    a.mcfg = (ssmjit_model_config){sizeof a.mcfg, 64, 128, 16, 4, 4, 2, 97, 1e-5, 1, 1};
    ssmjit_model_options_init(&a.mopts);
    return a;
}

/* ------------------------------------------------------------------------ */
/* The calls rows make                                                      */
/* ------------------------------------------------------------------------ */

/* A failed create leaves *out NULL, so that destroying it is safe. */
static ssmjit_status create(args *a)
{
    ssmjit_context *ctx = (ssmjit_context *)&ctx;
    ssmjit_status st = ssmjit_context_create(&a->copts, &ctx);
    if (st != SSMJIT_OK && ctx != NULL)
        fail_msg("a failed ssmjit_context_create left *out = %p", (void *)ctx);
    if (st == SSMJIT_OK)
        ssmjit_context_destroy(ctx);
    return st;
}

/* call(a) with environment variable `name` set to `value`. */
static ssmjit_status with_env(args *a, const char *name, const char *value, ssmjit_status (*call)(args *))
{
    setenv(name, value, 1);
    ssmjit_status st = call(a);
    unsetenv(name);
    return st;
}

/* call(a) with none of the variables a cache directory comes from. */
static ssmjit_status without_cache_env(args *a, ssmjit_status (*call)(args *))
{
    static const char *const names[] = {"SSMJIT_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
    char *saved[3];
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(names[i]);
        saved[i] = v ? strdup(v) : NULL;
        unsetenv(names[i]);
    }
    ssmjit_status st = call(a);
    for (int i = 0; i < 3; i++) {
        if (saved[i])
            setenv(names[i], saved[i], 1);
        free(saved[i]);
    }
    return st;
}

static ssmjit_status prewarm(args *a)
{
    return ssmjit_prewarm_unit(&a->popts, 0, &a->out->was_cached);
}

static ssmjit_status prewarm_all(args *a)
{
    return ssmjit_prewarm(&a->popts, &a->out->prewarm);
}

static ssmjit_status resolve_default_dir(args *a)
{
    return ssmjit_cache_resolve_dir(NULL, a->out->dir, sizeof a->out->dir);
}

static ssmjit_status verify_default_dir(args *a) { return ssmjit_cache_verify(NULL, 0, &a->out->stats); }

static ssmjit_status clear_default_dir(args *a) { return ssmjit_cache_clear(NULL, &a->out->removed); }

static ssmjit_status targets(args *a)
{
    return ssmjit_cache_targets(a->cache_dir, &a->out->stats, a->out->targets, 2, &a->out->count);
}

static ssmjit_status targets_default_dir(args *a)
{
    return ssmjit_cache_targets(NULL, &a->out->stats, a->out->targets, 2, &a->out->count);
}

static ssmjit_status act_fwd(args *a) { return ssmjit_activation_fwd(a->ctx, &a->act, &a->act_f, NULL); }

static ssmjit_status act_bwd(args *a) { return ssmjit_activation_bwd(a->ctx, &a->act, &a->act_b, NULL); }

static ssmjit_status gate_fwd(args *a) { return ssmjit_gate_fwd(a->ctx, &a->gate, &a->gate_f, NULL); }

static ssmjit_status gate_bwd(args *a) { return ssmjit_gate_bwd(a->ctx, &a->gate, &a->gate_b, NULL); }

static ssmjit_status norm_fwd(args *a) { return ssmjit_rmsnorm_fwd(a->ctx, &a->norm, &a->norm_f, NULL); }

static ssmjit_status norm_ws(args *a)
{
    return ssmjit_rmsnorm_bwd_workspace_size(a->ctx, &a->norm, &a->out->bytes);
}

static ssmjit_status norm_bwd(args *a) { return ssmjit_rmsnorm_bwd(a->ctx, &a->norm, &a->norm_b, NULL); }

static ssmjit_status conv_fwd(args *a) { return ssmjit_causal_conv1d_fwd(a->ctx, &a->conv, &a->conv_f, NULL); }

static ssmjit_status conv_ws(args *a)
{
    return ssmjit_causal_conv1d_bwd_workspace_size(a->ctx, &a->conv, &a->out->bytes);
}

static ssmjit_status conv_bwd(args *a) { return ssmjit_causal_conv1d_bwd(a->ctx, &a->conv, &a->conv_b, NULL); }

static ssmjit_status conv_update(args *a)
{
    return ssmjit_causal_conv1d_update(a->ctx, &a->conv, &a->conv_u, NULL);
}

/* Windows of 5 tokens into sequences of 7 (and 6), of rows 8 and 16 apart. */
static ssmjit_status conv_fwd_window(args *a)
{
    a->conv_f.x.batch_stride = 7 * 8;
    a->conv_f.y = (ssmjit_matrix){DEV, 16, 6 * 16};
    return conv_fwd(a);
}

static ssmjit_status conv_bwd_window(args *a)
{
    a->conv_b.x.batch_stride = a->conv_b.dy.batch_stride = 7 * 8;
    a->conv_b.dx = (ssmjit_matrix){DEV, 16, 6 * 16};
    return conv_bwd(a);
}

static ssmjit_status conv_update_window(args *a)
{
    a->conv_u.x.batch_stride = 7 * 8;
    a->conv_u.y = (ssmjit_matrix){DEV, 16, 6 * 16};
    return conv_update(a);
}

static ssmjit_status scan_fwd(args *a) { return ssmjit_selective_scan_fwd(a->ctx, &a->scan, &a->sfwd, NULL); }

static ssmjit_status scan_ckpt_size(args *a)
{
    return ssmjit_selective_scan_checkpoint_size(a->ctx, &a->scan, &a->out->bytes);
}

static ssmjit_status scan_fwd_ws(args *a)
{
    return ssmjit_selective_scan_fwd_workspace_size(a->ctx, &a->scan, &a->out->bytes);
}

/* One sequence of 16384 tokens of 8 channels, without a checkpoint: a
 * forward the split serves on the stand-in's H100. */
static ssmjit_status scan_fwd_split(args *a)
{
    a->scan.batch = 1;
    a->scan.seqlen = 16384;
    a->scan.checkpoint = 0;
    a->sfwd.checkpoint = NULL;
    return scan_fwd(a);
}

/* The same with room for its split: as far as the kernels. */
static ssmjit_status scan_fwd_split_room(args *a)
{
    a->sfwd.workspace = DEV;
    a->sfwd.workspace_bytes = (size_t)P(40);
    return scan_fwd_split(a);
}

static ssmjit_status scan_bwd_ws(args *a)
{
    return ssmjit_selective_scan_bwd_workspace_size(a->ctx, &a->scan, &a->out->bytes);
}

static ssmjit_status scan_bwd(args *a) { return ssmjit_selective_scan_bwd(a->ctx, &a->scan, &a->sbwd, NULL); }

/* Its backward likewise (its workspace has room for the split). */
static ssmjit_status scan_bwd_split(args *a)
{
    a->scan.batch = 1;
    a->scan.seqlen = 16384;
    return scan_bwd(a);
}

/* Windows of 40 tokens into sequences of 50: every activation 50 of its
 * rows from one batch row to the next (the scan takes one pitch). */
static ssmjit_status scan_fwd_window(args *a)
{
    ssmjit_selective_scan_inputs *in = &a->sfwd.in;
    in->u.batch_stride = in->delta.batch_stride = in->z.batch_stride = a->sfwd.y.batch_stride = 50 * 8;
    in->B = in->C = (ssmjit_matrix){DEV, 16, 50 * 16};
    return scan_fwd(a);
}

static ssmjit_status scan_bwd_window(args *a)
{
    ssmjit_selective_scan_bwd_args *g = &a->sbwd;
    g->in.u.batch_stride = g->in.delta.batch_stride = g->in.z.batch_stride = 50 * 8;
    g->dy.batch_stride = g->du.batch_stride = g->ddelta.batch_stride = g->dz.batch_stride = 50 * 8;
    g->in.B = g->in.C = g->dB = g->dC = (ssmjit_matrix){DEV, 16, 50 * 16};
    return scan_bwd(a);
}

/* ... given the workspace of that backward were it not split. */
static ssmjit_status scan_bwd_split_unsplit_room(args *a)
{
    a->scan.batch = 1;
    a->scan.seqlen = 16384;
    size_t split = 0, unsplit = 0;
    ssmjit_status st = ssmjit_selective_scan_bwd_workspace_size(a->ctx, &a->scan, &split);
    sj_scan_force_split(1);
    if (st == SSMJIT_OK)
        st = ssmjit_selective_scan_bwd_workspace_size(a->ctx, &a->scan, &unsplit);
    sj_scan_force_split(0);
    if (st != SSMJIT_OK || unsplit >= split)
        return sj_error(SSMJIT_ERR_INTERNAL, "the backward does not split here (%zu and %zu bytes)", split,
                        unsplit);
    a->sbwd.workspace_bytes = unsplit;
    return scan_bwd(a);
}

static ssmjit_status state_update(args *a)
{
    return ssmjit_selective_state_update(a->ctx, &a->upd, &a->uargs, NULL);
}

static ssmjit_status gemm(args *a) { return sj_gemm(&a->blas, &a->gemm, NULL); }

/* k = 0 (C = beta C): A and B have no elements and may be NULL. */
static ssmjit_status gemm_k0(args *a)
{
    a->gemm.k = 0;
    a->gemm.a = a->gemm.b = NULL;
    return gemm(a);
}

static ssmjit_status embed_fwd(args *a)
{
    return sj_embedding_fwd(a->ctx, a->dtype, a->n, a->d, a->vocab, a->ids, a->weight, a->y, a->out_dtype,
                            NULL);
}

static ssmjit_status embed_plan(args *a)
{
    return sj_embedding_bwd_plan(a->ids_host, a->n, a->out->order, a->out->seg_start, a->out->seg_id,
                                 &a->out->nseg);
}

static ssmjit_status embed_bwd(args *a)
{
    return sj_embedding_bwd(a->ctx, a->dtype, a->n, a->d, a->nseg, a->ids, a->seg_start, a->seg_id, a->dy,
                            a->fy, NULL);
}

static ssmjit_status xent(args *a)
{
    return sj_cross_entropy(a->ctx, a->dtype, a->n, a->vocab, a->logits, a->ids, a->scale, a->row_loss,
                            a->loss, a->dlogits, NULL);
}

static ssmjit_status argmax(args *a)
{
    return sj_argmax_rows(a->ctx, a->dtype, a->n, a->vocab, a->x, a->argmax_out, NULL);
}

static ssmjit_status sample(args *a)
{
    return sj_sample_rows(a->ctx, a->dtype, a->n, a->vocab, a->x, a->sample_params, a->sample_steps, a->argmax_out,
                          NULL);
}

static ssmjit_status neg_exp(args *a) { return sj_neg_exp_f32(a->ctx, a->n, a->fa, a->fy, NULL); }

static ssmjit_status mul(args *a) { return sj_mul_f32(a->ctx, a->n, a->fa, a->fb, a->fy, NULL); }

static ssmjit_status conv_state(args *a, int64_t w)
{
    return sj_conv_state_fill(a->ctx, a->dtype, 2, a->n, a->d, w, a->x, a->fy, NULL);
}
static ssmjit_status conv_state4(args *a) { return conv_state(a, 4); }

/* Model calls: creation and loading must leave *out NULL on failure; the
 * rest are given a NULL model (a real one needs a GPU). */
static ssmjit_status model_create(args *a)
{
    ssmjit_model *m = (ssmjit_model *)&m;
    ssmjit_status st = ssmjit_model_create(a->ctx, &a->mcfg, &a->mopts, 1, &m);
    if (st != SSMJIT_OK && m != NULL)
        fail_msg("a failed ssmjit_model_create left *out = %p", (void *)m);
    return st;
}

static ssmjit_status model_load(args *a, const char *path)
{
    ssmjit_model *m = (ssmjit_model *)&m;
    ssmjit_status st = ssmjit_model_load(a->ctx, path, &a->mopts, &m);
    if (st != SSMJIT_OK && m != NULL)
        fail_msg("a failed ssmjit_model_load left *out = %p", (void *)m);
    return st;
}

static ssmjit_status model_calls_null(args *a, int which)
{
    (void)a;
    ssmjit_model_config c;
    ssmjit_dtype dt;
    ssmjit_tensor_info info;
    size_t bytes;
    ssmjit_model_forward_args fa = {0};
    ssmjit_model_backward_args ba = {0};
    ssmjit_model_step_args sa = {0};
    switch (which) {
    case 0: return ssmjit_model_get_config(NULL, &c, &dt);
    case 1: return ssmjit_model_tensor(NULL, "lm_head.weight", &info);
    case 2: return ssmjit_model_tensor_at(NULL, 0, &info);
    case 3: return ssmjit_model_bind_tensor(NULL, "lm_head.weight", DEV);
    case 4: return ssmjit_model_workspace_size(NULL, 1, 1, SSMJIT_MODEL_INFERENCE, &bytes);
    case 5: return ssmjit_model_forward(NULL, &fa, NULL);
    case 6: return ssmjit_model_backward(NULL, &ba, NULL);
    case 7: return ssmjit_model_step(NULL, &sa, NULL);
    default: return ssmjit_model_step_workspace_size(NULL, 1, &bytes);
    }
}

/* ------------------------------------------------------------------------ */
/* The table                                                                */
/* ------------------------------------------------------------------------ */
/*
 * X(name, status, message, call): `call` runs with `a`, the valid
 * arguments, and returns what the function returned.  The message must
 * contain `message`, where '*' stands for any text.
 */
#define BAD_INPUT(X)                                                                                      \
    /* contexts */                                                                                        \
    X(create_out_null, INVALID_ARG, "ssmjit_context_create: out is NULL",                                 \
      return ssmjit_context_create(&a->copts, NULL))                                                      \
    X(create_struct_size_0, INVALID_ARG, "options->struct_size = 0, not the ",                          \
      a->copts.struct_size = 0; return create(a))                                                         \
    X(create_struct_size_short, INVALID_ARG, "options->struct_size = ",                                   \
      a->copts.struct_size = sizeof a->copts - 1; return create(a))                                       \
    X(create_struct_size_long, INVALID_ARG, "(fill it with ssmjit_context_options_init)",                 \
      a->copts.struct_size = sizeof a->copts + 8; return create(a))                                       \
    X(create_fast_math_unknown, INVALID_ARG, "options->fast_math = 3 is not a ssmjit_fast_math",          \
      a->copts.fast_math = (ssmjit_fast_math)3; return create(a))                                         \
    X(create_fast_math_negative, INVALID_ARG, "options->fast_math = -1 is not",                           \
      a->copts.fast_math = (ssmjit_fast_math)-1; return create(a))                                        \
    X(create_device_negative, INVALID_ARG, "options->device = -1 is negative",                            \
      a->copts.device = -1; return create(a))                                                             \
    X(create_device_int_min, INVALID_ARG, "options->device = -2147483648 is negative",                    \
      a->copts.device = INT_MIN; return create(a))                                                        \
    X(create_cache_mode_unknown, INVALID_ARG, "cache_mode = 4 is not a ssmjit_cache_mode",                \
      a->copts.cache_mode = (ssmjit_cache_mode)4; return create(a))                                       \
    X(create_cache_mode_negative, INVALID_ARG, "cache_mode = -1 is not",                                  \
      a->copts.cache_mode = (ssmjit_cache_mode)-1; return create(a))                                      \
    X(create_defines_null, INVALID_ARG, "defines is NULL but num_defines is 2",                           \
      a->copts.num_defines = 2; return create(a))                                                         \
    X(create_defines_count_huge, INVALID_ARG, "defines is more than the",                                 \
      a->defines[0] = "A"; a->copts.defines = a->defines; a->copts.num_defines = SIZE_MAX;                \
      return create(a))                                                                                   \
    X(create_define_null, INVALID_ARG, "defines[1] must be a non-empty NAME",                             \
      a->defines[0] = "A=1"; a->copts.defines = a->defines; a->copts.num_defines = 2; return create(a))   \
    X(create_define_empty, INVALID_ARG, "defines[0] must be",                                             \
      a->defines[0] = ""; a->copts.defines = a->defines; a->copts.num_defines = 1; return create(a))      \
    X(create_define_space, INVALID_ARG, "defines[1] must be",                                             \
      a->defines[0] = "A=1"; a->defines[1] = "B 2"; a->copts.defines = a->defines;                        \
      a->copts.num_defines = 2; return create(a))                                                         \
    X(create_define_no_name, INVALID_ARG, "defines[0] must be",                                           \
      a->defines[0] = "=1"; a->copts.defines = a->defines; a->copts.num_defines = 1; return create(a))    \
    X(create_cache_dir_too_long, INVALID_ARG, "cache directory path is longer than",                      \
      a->copts.cache_dir = a->long_dir; return create(a))                                                 \
    X(create_env_arch, INVALID_ARG, "SSMJIT_ARCH='sm_9x' is not an architecture",                         \
      return with_env(a, "SSMJIT_ARCH", "sm_9x", create))                                                 \
    X(create_env_arch_suffix, INVALID_ARG, "SSMJIT_ARCH='sm_90a'",                                        \
      return with_env(a, "SSMJIT_ARCH", "sm_90a", create))                                                \
    X(create_env_cache, INVALID_ARG, "SSMJIT_CACHE='sometimes' is not rw, ro or off",                     \
      return with_env(a, "SSMJIT_CACHE", "sometimes", create))                                            \
    X(create_env_fast_math, INVALID_ARG, "SSMJIT_FAST_MATH='2' is not 0 or 1",                            \
      return with_env(a, "SSMJIT_FAST_MATH", "2", create))                                                \
    X(create_env_deterministic, INVALID_ARG, "SSMJIT_DETERMINISTIC='yes' is not 0 or 1",                  \
      return with_env(a, "SSMJIT_DETERMINISTIC", "yes", create))                                          \
    X(get_info_ctx_null, INVALID_ARG, "ssmjit_context_get_info: ctx is NULL",                             \
      return ssmjit_context_get_info(NULL, &a->out->info))                                                \
    X(get_info_out_null, INVALID_ARG, "ssmjit_context_get_info: out is NULL",                             \
      return ssmjit_context_get_info(a->ctx, NULL))                                                       \
    X(load_all_ctx_null, INVALID_ARG, "ssmjit_context_load_all: ctx is NULL",                             \
      return ssmjit_context_load_all(NULL))                                                               \
    /* environment queries */                                                                             \
    X(driver_version_null, INVALID_ARG, "ssmjit_driver_version: version is NULL",                         \
      return ssmjit_driver_version(NULL))                                                                 \
    X(device_count_null, INVALID_ARG, "ssmjit_device_count: count is NULL",                               \
      return ssmjit_device_count(NULL))                                                                   \
    X(device_info_out_null, INVALID_ARG, "ssmjit_device_get_info: out is NULL",                           \
      return ssmjit_device_get_info(0, NULL))                                                             \
    X(device_info_ordinal_negative, INVALID_ARG, "ssmjit_device_get_info: ordinal = -1 is negative",      \
      return ssmjit_device_get_info(-1, &a->out->device))                                                 \
    X(device_info_ordinal_int_min, INVALID_ARG, "ordinal = -2147483648 is negative",                      \
      return ssmjit_device_get_info(INT_MIN, &a->out->device))                                            \
    X(nvrtc_version_major_null, INVALID_ARG, "ssmjit_nvrtc_version: major or minor is NULL",              \
      return ssmjit_nvrtc_version(NULL, &a->out->minor, &a->out->path))                                   \
    X(nvrtc_version_minor_null, INVALID_ARG, "ssmjit_nvrtc_version: major or minor is NULL",              \
      return ssmjit_nvrtc_version(&a->out->major, NULL, &a->out->path))                                   \
    X(nvrtc_archs_archs_null, INVALID_ARG, "ssmjit_nvrtc_supported_archs: archs is NULL",                 \
      return ssmjit_nvrtc_supported_archs(NULL, 4, &a->out->count))                                       \
    X(nvrtc_archs_count_null, INVALID_ARG, "ssmjit_nvrtc_supported_archs: count is NULL",                 \
      return ssmjit_nvrtc_supported_archs(a->out->archs, 4, NULL))                                        \
    /* prewarming */                                                                                      \
    X(prewarm_opts_null, INVALID_ARG, "ssmjit_prewarm_unit: opts is NULL",                                \
      return ssmjit_prewarm_unit(NULL, 0, &a->out->was_cached))                                           \
    X(prewarm_was_cached_null, INVALID_ARG, "ssmjit_prewarm_unit: was_cached is NULL",                    \
      return ssmjit_prewarm_unit(&a->popts, 0, NULL))                                                     \
    X(prewarm_struct_size_0, INVALID_ARG, "opts->struct_size = 0, not the ",                            \
      a->popts.struct_size = 0; return prewarm(a))                                                        \
    X(prewarm_unit_count, INVALID_ARG, "unit index * is not below",                                       \
      return ssmjit_prewarm_unit(&a->popts, ssmjit_unit_count(), &a->out->was_cached))                    \
    X(prewarm_unit_max, INVALID_ARG, "unit index 18446744073709551615 is not below",                      \
      return ssmjit_prewarm_unit(&a->popts, SIZE_MAX, &a->out->was_cached))                               \
    X(prewarm_unit_specialised, INVALID_ARG, "unit decode_in_f32 is compiled with a model's sizes",       \
      return ssmjit_prewarm_unit(&a->popts, (size_t)sj_unit_find(SJ_MODULE_DECODE, "decode_in_f32"),      \
                                 &a->out->was_cached))                                                    \
    X(prewarm_fast_math_2, INVALID_ARG, "opts->fast_math = 2 is not -1, 0 or 1",                          \
      a->popts.fast_math = 2; return prewarm(a))                                                          \
    X(prewarm_fast_math_minus_2, INVALID_ARG, "opts->fast_math = -2 is not -1, 0 or 1",                   \
      a->popts.fast_math = -2; return prewarm(a))                                                         \
    X(prewarm_env_cache_ro, INVALID_ARG, "prewarm writes into the cache, and SSMJIT_CACHE=ro forbids",    \
      return with_env(a, "SSMJIT_CACHE", "ro", prewarm))                                                  \
    X(prewarm_env_cache_off, INVALID_ARG, "SSMJIT_CACHE=off forbids writing",                             \
      return with_env(a, "SSMJIT_CACHE", "off", prewarm))                                                 \
    X(prewarm_env_cache_bad, INVALID_ARG, "SSMJIT_CACHE='sometimes' is not rw, ro or off",                \
      return with_env(a, "SSMJIT_CACHE", "sometimes", prewarm))                                           \
    X(prewarm_all_opts_null, INVALID_ARG, "ssmjit_prewarm: opts is NULL",                                 \
      return ssmjit_prewarm(NULL, &a->out->prewarm))                                                      \
    X(prewarm_all_struct_size_0, INVALID_ARG, "opts->struct_size = 0, not the ",                        \
      a->popts.struct_size = 0; return prewarm_all(a))                                                    \
    X(prewarm_all_fast_math_2, INVALID_ARG, "opts->fast_math = 2 is not -1, 0 or 1",                      \
      a->popts.fast_math = 2; return prewarm_all(a))                                                      \
    X(prewarm_all_arch_null, INVALID_ARG, "architecture string is NULL",                                  \
      a->popts.arch = NULL; return prewarm_all(a))                                                        \
    X(prewarm_all_arch_suffix, INVALID_ARG, "'sm_90a' is not an architecture",                            \
      a->popts.arch = "sm_90a"; return prewarm_all(a))                                                    \
    X(prewarm_all_cache_dir_too_long, INVALID_ARG, "cache directory path is longer than",                 \
      a->popts.cache_dir = a->long_dir; return prewarm_all(a))                                            \
    X(prewarm_all_define_space, INVALID_ARG, "defines[0] must be",                                        \
      a->defines[0] = "A 1"; a->popts.defines = a->defines; a->popts.num_defines = 1;                     \
      return prewarm_all(a))                                                                              \
    X(prewarm_all_env_cache_ro, INVALID_ARG, "prewarm writes into the cache, and SSMJIT_CACHE=ro forbids", \
      return with_env(a, "SSMJIT_CACHE", "ro", prewarm_all))                                              \
    X(prewarm_all_env_cache_off, INVALID_ARG, "SSMJIT_CACHE=off forbids writing",                         \
      return with_env(a, "SSMJIT_CACHE", "off", prewarm_all))                                             \
    X(prewarm_arch_null, INVALID_ARG, "architecture string is NULL",                                      \
      a->popts.arch = NULL; return prewarm(a))                                                            \
    X(prewarm_arch_empty, INVALID_ARG, "'' is not an architecture", a->popts.arch = ""; return prewarm(a)) \
    X(prewarm_arch_short, INVALID_ARG, "'sm_8' is not an architecture",                                   \
      a->popts.arch = "sm_8"; return prewarm(a))                                                          \
    X(prewarm_arch_suffix, INVALID_ARG, "'sm_90a' is not an architecture",                                \
      a->popts.arch = "sm_90a"; return prewarm(a))                                                        \
    X(prewarm_cache_dir_too_long, INVALID_ARG, "cache directory path is longer than",                     \
      a->popts.cache_dir = a->long_dir; return prewarm(a))                                                \
    X(prewarm_defines_null, INVALID_ARG, "defines is NULL but num_defines is 3",                          \
      a->popts.num_defines = 3; return prewarm(a))                                                        \
    X(prewarm_define_space, INVALID_ARG, "defines[0] must be",                                            \
      a->defines[0] = "A 1"; a->popts.defines = a->defines; a->popts.num_defines = 1; return prewarm(a))  \
    /* the cache */                                                                                       \
    X(resolve_dir_buf_null, INVALID_ARG, "ssmjit_cache_resolve_dir: buf is NULL or cap is 0",             \
      return ssmjit_cache_resolve_dir(a->cache_dir, NULL, 64))                                            \
    X(resolve_dir_cap_0, INVALID_ARG, "ssmjit_cache_resolve_dir: buf is NULL or cap is 0",                \
      return ssmjit_cache_resolve_dir(a->cache_dir, a->out->dir, 0))                                      \
    X(resolve_dir_cap_short, INVALID_ARG, "cache directory path is longer than 64 bytes",                 \
      return ssmjit_cache_resolve_dir(a->long_dir, a->out->dir, sizeof a->out->dir))                      \
    X(resolve_dir_no_env, INVALID_ARG, "no cache directory: set SSMJIT_CACHE_DIR",                        \
      return without_cache_env(a, resolve_default_dir))                                                   \
    X(verify_out_null, INVALID_ARG, "ssmjit_cache_verify: out is NULL",                                   \
      return ssmjit_cache_verify(a->cache_dir, 1, NULL))                                                  \
    X(verify_dir_too_long, INVALID_ARG, "cache directory path is longer than",                            \
      return ssmjit_cache_verify(a->long_dir, 1, &a->out->stats))                                         \
    X(verify_no_env, INVALID_ARG, "no cache directory", return without_cache_env(a, verify_default_dir))  \
    X(clear_dir_too_long, INVALID_ARG, "cache directory path is longer than",                             \
      return ssmjit_cache_clear(a->long_dir, &a->out->removed))                                           \
    X(clear_no_env, INVALID_ARG, "no cache directory", return without_cache_env(a, clear_default_dir))    \
    X(targets_out_null, INVALID_ARG, "ssmjit_cache_targets: out is NULL but cap is 2",                    \
      return ssmjit_cache_targets(a->cache_dir, &a->out->stats, NULL, 2, &a->out->count))                 \
    X(targets_dir_too_long, INVALID_ARG, "cache directory path is longer than",                           \
      return ssmjit_cache_targets(a->long_dir, &a->out->stats, a->out->targets, 2, &a->out->count))       \
    X(targets_no_env, INVALID_ARG, "no cache directory", return without_cache_env(a, targets_default_dir)) \
    X(targets_max_bytes, INVALID_ARG, "SSMJIT_CACHE_MAX_BYTES='lots' is not a byte count",                \
      return with_env(a, "SSMJIT_CACHE_MAX_BYTES", "lots", targets))                                      \
    /* elementwise */                                                                                     \
    X(act_fwd_ctx_null, INVALID_ARG, "ssmjit_activation_fwd: ctx is NULL", a->ctx = NULL; return act_fwd(a)) \
    X(act_bwd_ctx_null, INVALID_ARG, "ssmjit_activation_bwd: ctx is NULL", a->ctx = NULL; return act_bwd(a)) \
    X(gate_fwd_ctx_null, INVALID_ARG, "ssmjit_gate_fwd: ctx is NULL", a->ctx = NULL; return gate_fwd(a))  \
    X(gate_bwd_ctx_null, INVALID_ARG, "ssmjit_gate_bwd: ctx is NULL", a->ctx = NULL; return gate_bwd(a))  \
    X(act_fwd_act_unknown, INVALID_ARG, "ssmjit_activation_fwd: desc->activation = 2 is not a ssmjit_activation", \
      a->act.activation = (ssmjit_activation)2; return act_fwd(a))                                         \
    X(act_bwd_act_negative, INVALID_ARG, "ssmjit_activation_bwd: desc->activation = -1 is not a ssmjit_activation", \
      a->act.activation = (ssmjit_activation)-1; return act_bwd(a))                                        \
    X(act_fwd_desc_null, INVALID_ARG, "ssmjit_activation_fwd: desc is NULL",                              \
      return ssmjit_activation_fwd(a->ctx, NULL, &a->act_f, NULL))                                         \
    X(act_bwd_desc_null, INVALID_ARG, "ssmjit_activation_bwd: desc is NULL",                              \
      return ssmjit_activation_bwd(a->ctx, NULL, &a->act_b, NULL))                                         \
    X(gate_fwd_desc_null, INVALID_ARG, "ssmjit_gate_fwd: desc is NULL", return ssmjit_gate_fwd(a->ctx, NULL, &a->gate_f, NULL)) \
    X(gate_bwd_desc_null, INVALID_ARG, "ssmjit_gate_bwd: desc is NULL", return ssmjit_gate_bwd(a->ctx, NULL, &a->gate_b, NULL)) \
    X(act_fwd_args_null, INVALID_ARG, "ssmjit_activation_fwd: args is NULL",                               \
      return ssmjit_activation_fwd(a->ctx, &a->act, NULL, NULL))                                           \
    X(gate_bwd_args_null, INVALID_ARG, "ssmjit_gate_bwd: args is NULL", return ssmjit_gate_bwd(a->ctx, &a->gate, NULL, NULL)) \
    X(act_fwd_desc_struct_size_0, INVALID_ARG, "ssmjit_activation_fwd: desc->struct_size = 0, not the ",   \
      a->act.struct_size = 0; return act_fwd(a))                                                           \
    X(act_bwd_desc_struct_size_long, INVALID_ARG, "(fill it with SSMJIT_STRUCT_INIT(ssmjit_activation_desc))", \
      a->act.struct_size += 8; return act_bwd(a))                                                          \
    X(act_fwd_args_struct_size_short, INVALID_ARG, "ssmjit_activation_fwd: args->struct_size = ",          \
      a->act_f.struct_size -= 1; return act_fwd(a))                                                        \
    X(act_bwd_args_struct_size_0, INVALID_ARG, "(fill it with SSMJIT_STRUCT_INIT(ssmjit_activation_bwd_args))", \
      a->act_b.struct_size = 0; return act_bwd(a))                                                         \
    X(gate_fwd_desc_struct_size_0, INVALID_ARG, "ssmjit_gate_fwd: desc->struct_size = 0, not the ",        \
      a->gate.struct_size = 0; return gate_fwd(a))                                                         \
    X(gate_fwd_args_struct_size_0, INVALID_ARG, "(fill it with SSMJIT_STRUCT_INIT(ssmjit_gate_fwd_args))", \
      a->gate_f.struct_size = 0; return gate_fwd(a))                                                       \
    X(gate_bwd_args_struct_size_long, INVALID_ARG, "ssmjit_gate_bwd: args->struct_size = ",                \
      a->gate_b.struct_size += 8; return gate_bwd(a))                                                      \
    X(act_fwd_dtype_unknown, INVALID_ARG, "ssmjit_activation_fwd: desc->dtype = 3 is not a known dtype",  \
      a->act.dtype = (ssmjit_dtype)3; return act_fwd(a))                                                   \
    X(gate_bwd_dtype_negative, INVALID_ARG, "ssmjit_gate_bwd: desc->dtype = -1 is not a known dtype",     \
      a->gate.dtype = (ssmjit_dtype)-1; return gate_bwd(a))                                                \
    X(act_bwd_rows_negative, INVALID_ARG, "ssmjit_activation_bwd: desc->rows = -1 is negative",           \
      a->act.rows = -1; return act_bwd(a))                                                                 \
    X(gate_fwd_cols_negative, INVALID_ARG, "ssmjit_gate_fwd: desc->cols = -9223372036854775808 is negative", \
      a->gate.cols = INT64_MIN; return gate_fwd(a))                                                        \
    X(act_fwd_x_null, INVALID_ARG, "ssmjit_activation_fwd: args->x.data is NULL",                          \
      a->act_f.x.data = NULL; return act_fwd(a))                                                           \
    X(act_fwd_y_null, INVALID_ARG, "ssmjit_activation_fwd: args->y.data is NULL",                          \
      a->act_f.y.data = NULL; return act_fwd(a))                                                           \
    X(act_bwd_dx_null, INVALID_ARG, "ssmjit_activation_bwd: args->dx.data is NULL",                        \
      a->act_b.dx.data = NULL; return act_bwd(a))                                                          \
    X(gate_fwd_out_null, INVALID_ARG, "ssmjit_gate_fwd: args->out.data is NULL",                           \
      a->gate_f.out.data = NULL; return gate_fwd(a))                                                       \
    X(gate_bwd_dz_null, INVALID_ARG, "ssmjit_gate_bwd: args->dz.data is NULL",                             \
      a->gate_b.dz.data = NULL; return gate_bwd(a))                                                        \
    X(act_fwd_stride_short, INVALID_ARG, "ssmjit_activation_fwd: args->x.stride = 7 is less than the row width 8", \
      a->act_f.x.stride = 7; return act_fwd(a))                                                            \
    X(gate_bwd_stride_negative, INVALID_ARG, "ssmjit_gate_bwd: args->dout.stride = -8 is less than",       \
      a->gate_b.dout.stride = -8; return gate_bwd(a))                                                      \
    X(act_fwd_batch_stride, INVALID_ARG,                                                                   \
      "ssmjit_activation_fwd: args->y.batch_stride = 64 must be 0 for a [rows, width] operand",            \
      a->act_f.y.batch_stride = 64; return act_fwd(a))                                                     \
    X(gate_bwd_batch_stride, INVALID_ARG, "ssmjit_gate_bwd: args->z.batch_stride = 32 must be 0",          \
      a->gate_b.z.batch_stride = 32; return gate_bwd(a))                                                   \
    X(act_bwd_dy_misaligned, INVALID_ARG, "ssmjit_activation_bwd: args->dy.data is not aligned to its 4-byte elements", \
      a->act_b.dy.data = MISALIGNED; return act_bwd(a))                                                    \
    X(gate_fwd_z_misaligned_f16, INVALID_ARG, "ssmjit_gate_fwd: args->z.data is not aligned to its 2-byte elements", \
      a->gate.dtype = SSMJIT_F16; a->gate_f.z.data = MISALIGNED; return gate_fwd(a))                       \
    X(act_bwd_extent_overflow, UNSUPPORTED, "ssmjit_activation_bwd: desc->rows * desc->cols is too large", \
      a->act.rows = P(40); a->act.cols = P(30); return act_bwd(a))                                         \
    X(gate_fwd_extent_int64_max, UNSUPPORTED, "ssmjit_gate_fwd: desc->rows * desc->cols is too large",    \
      a->gate.rows = INT64_MAX; return gate_fwd(a))                                                        \
    X(gate_bwd_stride_overflow, UNSUPPORTED, "ssmjit_gate_bwd: args->dz.stride is too large",              \
      a->gate.rows = P(33); a->gate_b.dz.stride = P(31); return gate_bwd(a))                               \
    X(act_fwd_cols_past_grid, UNSUPPORTED,                                                                \
      "ssmjit_activation_fwd: desc->cols = 17592186044416 is too large",                                  \
      a->act.rows = 1; a->act.cols = P(44); return act_fwd(a))                                             \
    /* rmsnorm */                                                                                         \
    X(norm_fwd_ctx_null, INVALID_ARG, "ssmjit_rmsnorm_fwd: ctx is NULL", a->ctx = NULL; return norm_fwd(a)) \
    X(norm_ws_ctx_null, INVALID_ARG, "ssmjit_rmsnorm_bwd_workspace_size: ctx is NULL",                    \
      a->ctx = NULL; return norm_ws(a))                                                                   \
    X(norm_bwd_ctx_null, INVALID_ARG, "ssmjit_rmsnorm_bwd: ctx is NULL", a->ctx = NULL; return norm_bwd(a)) \
    X(norm_fwd_desc_null, INVALID_ARG, "ssmjit_rmsnorm_fwd: desc is NULL",                                \
      return ssmjit_rmsnorm_fwd(a->ctx, NULL, &a->norm_f, NULL))                                           \
    X(norm_ws_desc_null, INVALID_ARG, "ssmjit_rmsnorm_bwd_workspace_size: desc is NULL",                  \
      return ssmjit_rmsnorm_bwd_workspace_size(a->ctx, NULL, &a->out->bytes))                             \
    X(norm_bwd_desc_null, INVALID_ARG, "ssmjit_rmsnorm_bwd: desc is NULL",                                \
      return ssmjit_rmsnorm_bwd(a->ctx, NULL, &a->norm_b, NULL))                                           \
    X(norm_ws_bytes_null, INVALID_ARG, "ssmjit_rmsnorm_bwd_workspace_size: bytes is NULL",                \
      return ssmjit_rmsnorm_bwd_workspace_size(a->ctx, &a->norm, NULL))                                   \
    X(norm_fwd_args_null, INVALID_ARG, "ssmjit_rmsnorm_fwd: args is NULL",                                 \
      return ssmjit_rmsnorm_fwd(a->ctx, &a->norm, NULL, NULL))                                             \
    X(norm_bwd_args_null, INVALID_ARG, "ssmjit_rmsnorm_bwd: args is NULL",                                 \
      return ssmjit_rmsnorm_bwd(a->ctx, &a->norm, NULL, NULL))                                             \
    X(norm_fwd_desc_struct_size_0, INVALID_ARG, "ssmjit_rmsnorm_fwd: desc->struct_size = 0, not the ",     \
      a->norm.struct_size = 0; return norm_fwd(a))                                                         \
    X(norm_ws_desc_struct_size_short, INVALID_ARG, "(fill it with SSMJIT_STRUCT_INIT(ssmjit_rmsnorm_desc))", \
      a->norm.struct_size -= 8; return norm_ws(a))                                                         \
    X(norm_fwd_args_struct_size_0, INVALID_ARG, "(fill it with SSMJIT_STRUCT_INIT(ssmjit_rmsnorm_fwd_args))", \
      a->norm_f.struct_size = 0; return norm_fwd(a))                                                       \
    X(norm_bwd_args_struct_size_long, INVALID_ARG, "ssmjit_rmsnorm_bwd: args->struct_size = ",             \
      a->norm_b.struct_size += 8; return norm_bwd(a))                                                      \
    X(norm_fwd_dtype_unknown, INVALID_ARG, "ssmjit_rmsnorm_fwd: desc->dtype = 3 is not a known dtype",    \
      a->norm.dtype = (ssmjit_dtype)3; return norm_fwd(a))                                                \
    X(norm_bwd_rows_negative, INVALID_ARG, "ssmjit_rmsnorm_bwd: desc->rows = -1 is negative",             \
      a->norm.rows = -1; return norm_bwd(a))                                                              \
    X(norm_ws_d_negative, INVALID_ARG, "ssmjit_rmsnorm_bwd_workspace_size: desc->d = -8 is negative",     \
      a->norm.d = -8; return norm_ws(a))                                                                  \
    X(norm_fwd_eps_negative, INVALID_ARG, "ssmjit_rmsnorm_fwd: desc->eps = -1 must be finite and >= 0",   \
      a->norm.eps = -1.0; return norm_fwd(a))                                                              \
    X(norm_bwd_eps_nan, INVALID_ARG, "ssmjit_rmsnorm_bwd: desc->eps = nan must be finite",                \
      a->norm.eps = NAN; return norm_bwd(a))                                                              \
    X(norm_ws_eps_inf, INVALID_ARG, "desc->eps = inf must be finite", a->norm.eps = INFINITY;             \
      return norm_ws(a))                                                                                  \
    X(norm_fwd_eps_past_f32, INVALID_ARG, "ssmjit_rmsnorm_fwd: desc->eps = 1e+39 must be finite and >= 0 (as the f32", \
      a->norm.eps = 1e39; return norm_fwd(a))                                                              \
    X(norm_fwd_residual_dtype_unknown, INVALID_ARG, "ssmjit_rmsnorm_fwd: desc->residual_dtype = 9 is not a known dtype", \
      a->norm.has_residual = 1; a->norm.residual_dtype = (ssmjit_dtype)9; return norm_fwd(a))             \
    X(norm_fwd_residual_dtype_mismatch, UNSUPPORTED,                                                      \
      "ssmjit_rmsnorm_fwd: desc->residual_dtype = f16 must be desc->dtype (bf16) or f32",                 \
      a->norm.dtype = SSMJIT_BF16; a->norm.has_residual = 1; a->norm.residual_dtype = SSMJIT_F16;         \
      return norm_fwd(a))                                                                                 \
    X(norm_bwd_residual_dtype_mismatch, UNSUPPORTED, "ssmjit_rmsnorm_bwd: desc->residual_dtype = bf16 must be", \
      a->norm.dtype = SSMJIT_F16; a->norm.has_residual = 1; a->norm.residual_dtype = SSMJIT_BF16;         \
      return norm_bwd(a))                                                                                 \
    X(norm_fwd_x_null, INVALID_ARG, "ssmjit_rmsnorm_fwd: args->x.data is NULL", a->norm_f.x.data = NULL;   \
      return norm_fwd(a))                                                                                 \
    X(norm_fwd_weight_null, INVALID_ARG, "ssmjit_rmsnorm_fwd: args->weight is NULL",                       \
      a->norm_f.weight = NULL; return norm_fwd(a))                                                         \
    X(norm_fwd_y_null, INVALID_ARG, "ssmjit_rmsnorm_fwd: args->y.data is NULL", a->norm_f.y.data = NULL;   \
      return norm_fwd(a))                                                                                 \
    X(norm_fwd_residual_unexpected, INVALID_ARG,                                                          \
      "ssmjit_rmsnorm_fwd: args->residual.data is set but desc->has_residual is 0",                        \
      a->norm_f.residual.data = DEV; return norm_fwd(a))                                                   \
    X(norm_fwd_residual_out_unexpected, INVALID_ARG, "args->residual_out.data is set but desc->has_residual is 0", \
      a->norm_f.residual_out.data = DEV; return norm_fwd(a))                                               \
    X(norm_fwd_stride_short, INVALID_ARG, "ssmjit_rmsnorm_fwd: args->y.stride = 4 is less than the row width 8", \
      a->norm_f.y.stride = 4; return norm_fwd(a))                                                          \
    X(norm_fwd_batch_stride, INVALID_ARG, "ssmjit_rmsnorm_fwd: args->x.batch_stride = 32 must be 0",       \
      a->norm_f.x.batch_stride = 32; return norm_fwd(a))                                                   \
    X(norm_fwd_residual_misaligned_f32, INVALID_ARG,                                                       \
      "ssmjit_rmsnorm_fwd: args->residual.data is not aligned to its 4-byte elements",                     \
      a->norm.dtype = SSMJIT_BF16; a->norm.has_residual = 1; a->norm_f.residual.data = device_mem + 2;     \
      return norm_fwd(a))                                                                                 \
    X(norm_bwd_h_null, INVALID_ARG, "ssmjit_rmsnorm_bwd: args->h.data is NULL", a->norm_b.h.data = NULL;   \
      return norm_bwd(a))                                                                                 \
    X(norm_bwd_rstd_null, INVALID_ARG, "ssmjit_rmsnorm_bwd: args->rstd is NULL", a->norm_b.rstd = NULL;    \
      return norm_bwd(a))                                                                                 \
    X(norm_bwd_dy_null, INVALID_ARG, "ssmjit_rmsnorm_bwd: args->dy.data is NULL", a->norm_b.dy.data = NULL; \
      return norm_bwd(a))                                                                                 \
    X(norm_bwd_dx_null, INVALID_ARG, "ssmjit_rmsnorm_bwd: args->dx.data is NULL", a->norm_b.dx.data = NULL; \
      return norm_bwd(a))                                                                                 \
    X(norm_bwd_d_residual_unexpected, INVALID_ARG, "ssmjit_rmsnorm_bwd: args->d_residual.data is set but", \
      a->norm_b.d_residual.data = DEV; return norm_bwd(a))                                                 \
    X(norm_bwd_dx_stride_negative, INVALID_ARG, "ssmjit_rmsnorm_bwd: args->dx.stride = -1 is less than",   \
      a->norm_b.dx.stride = -1; return norm_bwd(a))                                                        \
    X(norm_bwd_dy_misaligned, INVALID_ARG, "ssmjit_rmsnorm_bwd: args->dy.data is not aligned to its 4-byte elements", \
      a->norm_b.dy.data = MISALIGNED; return norm_bwd(a))                                                  \
    X(norm_bwd_dx_batch_stride, INVALID_ARG, "ssmjit_rmsnorm_bwd: args->dx.batch_stride = -1 must be 0",   \
      a->norm_b.dx.batch_stride = -1; return norm_bwd(a))                                                  \
    X(norm_bwd_workspace_null, INVALID_ARG, "ssmjit_rmsnorm_bwd: args->workspace is NULL",                 \
      a->norm_b.workspace = NULL; return norm_bwd(a))                                                      \
    X(norm_bwd_workspace_short, INVALID_ARG, "ssmjit_rmsnorm_bwd: args->workspace_bytes = 4 is less than", \
      a->norm_b.workspace_bytes = 4; return norm_bwd(a))                                                   \
    X(norm_fwd_extent_overflow, UNSUPPORTED, "ssmjit_rmsnorm_fwd: desc->rows * desc->d is too large",     \
      a->norm.rows = P(40); a->norm.d = P(30); return norm_fwd(a))                                        \
    X(norm_ws_d_huge_no_rows, UNSUPPORTED, "desc->rows * desc->d is too large",                           \
      a->norm.rows = 0; a->norm.d = INT64_MAX; return norm_ws(a))                                         \
    X(norm_bwd_d_huge_no_rows, UNSUPPORTED, "ssmjit_rmsnorm_bwd: desc->rows * desc->d is too large",      \
      a->norm.rows = 0; a->norm.d = INT64_MAX; return norm_bwd(a))                                        \
    X(norm_ws_workspace_overflow, UNSUPPORTED,                                                            \
      "ssmjit_rmsnorm_bwd_workspace_size: the backward workspace is too large",                           \
      a->norm.rows = 4; a->norm.d = P(60); return norm_ws(a))                                             \
    X(norm_fwd_stride_overflow, UNSUPPORTED, "ssmjit_rmsnorm_fwd: args->x.stride is too large",            \
      a->norm.rows = P(33); a->norm_f.x.stride = P(31); return norm_fwd(a))                                \
    /* causal conv1d */                                                                                   \
    X(conv_fwd_ctx_null, INVALID_ARG, "ssmjit_causal_conv1d_fwd: ctx is NULL", a->ctx = NULL; return conv_fwd(a)) \
    X(conv_ws_ctx_null, INVALID_ARG, "ssmjit_causal_conv1d_bwd_workspace_size: ctx is NULL",              \
      a->ctx = NULL; return conv_ws(a))                                                                   \
    X(conv_bwd_ctx_null, INVALID_ARG, "ssmjit_causal_conv1d_bwd: ctx is NULL", a->ctx = NULL; return conv_bwd(a)) \
    X(conv_update_ctx_null, INVALID_ARG, "ssmjit_causal_conv1d_update: ctx is NULL",                      \
      a->ctx = NULL; return conv_update(a))                                                               \
    X(conv_fwd_desc_null, INVALID_ARG, "ssmjit_causal_conv1d_fwd: desc is NULL",                          \
      return ssmjit_causal_conv1d_fwd(a->ctx, NULL, &a->conv_f, NULL))                                     \
    X(conv_ws_desc_null, INVALID_ARG, "ssmjit_causal_conv1d_bwd_workspace_size: desc is NULL",            \
      return ssmjit_causal_conv1d_bwd_workspace_size(a->ctx, NULL, &a->out->bytes))                       \
    X(conv_bwd_desc_null, INVALID_ARG, "ssmjit_causal_conv1d_bwd: desc is NULL",                          \
      return ssmjit_causal_conv1d_bwd(a->ctx, NULL, &a->conv_b, NULL))                                     \
    X(conv_update_desc_null, INVALID_ARG, "ssmjit_causal_conv1d_update: desc is NULL",                    \
      return ssmjit_causal_conv1d_update(a->ctx, NULL, &a->conv_u, NULL))                                  \
    X(conv_ws_bytes_null, INVALID_ARG, "ssmjit_causal_conv1d_bwd_workspace_size: bytes is NULL",          \
      return ssmjit_causal_conv1d_bwd_workspace_size(a->ctx, &a->conv, NULL))                             \
    X(conv_fwd_desc_struct_size_0, INVALID_ARG, "ssmjit_causal_conv1d_fwd: desc->struct_size = 0, not the ", \
      a->conv.struct_size = 0; return conv_fwd(a))                                                         \
    X(conv_ws_desc_struct_size_long, INVALID_ARG, "(fill it with SSMJIT_STRUCT_INIT(ssmjit_conv1d_desc))", \
      a->conv.struct_size += 8; return conv_ws(a))                                                         \
    X(conv_update_desc_struct_size_short, INVALID_ARG, "ssmjit_causal_conv1d_update: desc->struct_size = ", \
      a->conv.struct_size -= 1; return conv_update(a))                                                     \
    X(conv_fwd_args_struct_size_0, INVALID_ARG, "(fill it with SSMJIT_STRUCT_INIT(ssmjit_conv1d_fwd_args))", \
      a->conv_f.struct_size = 0; return conv_fwd(a))                                                       \
    X(conv_bwd_args_struct_size_short, INVALID_ARG, "ssmjit_causal_conv1d_bwd: args->struct_size = ",      \
      a->conv_b.struct_size -= 8; return conv_bwd(a))                                                      \
    X(conv_update_args_struct_size_long, INVALID_ARG, "(fill it with SSMJIT_STRUCT_INIT(ssmjit_conv1d_update_args))", \
      a->conv_u.struct_size += 8; return conv_update(a))                                                   \
    X(conv_fwd_dtype_unknown, INVALID_ARG, "ssmjit_causal_conv1d_fwd: desc->dtype = 3 is not a known dtype", \
      a->conv.dtype = (ssmjit_dtype)3; return conv_fwd(a))                                                \
    X(conv_update_dtype_negative, INVALID_ARG, "desc->dtype = -1 is not a known dtype",                   \
      a->conv.dtype = (ssmjit_dtype)-1; return conv_update(a))                                            \
    X(conv_fwd_batch_negative, INVALID_ARG, "ssmjit_causal_conv1d_fwd: desc->batch = -1 is negative",     \
      a->conv.batch = -1; return conv_fwd(a))                                                             \
    X(conv_bwd_seqlen_negative, INVALID_ARG, "ssmjit_causal_conv1d_bwd: desc->seqlen = -1 is negative",   \
      a->conv.seqlen = -1; return conv_bwd(a))                                                            \
    X(conv_ws_dim_negative, INVALID_ARG, "desc->dim = -1 is negative", a->conv.dim = -1; return conv_ws(a)) \
    X(conv_fwd_width_short, INVALID_ARG, "ssmjit_causal_conv1d_fwd: desc->width = 1 is outside 2..8",     \
      a->conv.width = 1; return conv_fwd(a))                                                              \
    X(conv_update_width_long, INVALID_ARG, "desc->width = 9 is outside 2..8",                             \
      a->conv.width = 9; return conv_update(a))                                                           \
    X(conv_ws_width_negative, INVALID_ARG, "desc->width = -2147483648 is outside",                        \
      a->conv.width = INT_MIN; return conv_ws(a))                                                         \
    X(conv_fwd_args_null, INVALID_ARG, "ssmjit_causal_conv1d_fwd: args is NULL",                           \
      return ssmjit_causal_conv1d_fwd(a->ctx, &a->conv, NULL, NULL))                                       \
    X(conv_fwd_x_null, INVALID_ARG, "ssmjit_causal_conv1d_fwd: args->x.data is NULL",                      \
      a->conv_f.x.data = NULL; return conv_fwd(a))                                                         \
    X(conv_fwd_x_misaligned, INVALID_ARG,                                                                  \
      "ssmjit_causal_conv1d_fwd: args->x.data is not aligned to its 4-byte elements",                      \
      a->conv_f.x.data = MISALIGNED; return conv_fwd(a))                                                   \
    X(conv_fwd_x_misaligned_f16, INVALID_ARG, "args->x.data is not aligned to its 2-byte elements",        \
      a->conv.dtype = SSMJIT_F16; a->conv_f.x.data = MISALIGNED; return conv_fwd(a))                       \
    X(conv_fwd_weight_null, INVALID_ARG, "ssmjit_causal_conv1d_fwd: args->weight is NULL",                 \
      a->conv_f.weight = NULL; return conv_fwd(a))                                                         \
    X(conv_fwd_bias_misaligned, INVALID_ARG, "args->bias = * is not aligned to 4 bytes",                   \
      a->conv_f.bias = MISALIGNED; return conv_fwd(a))                                                     \
    X(conv_fwd_initial_state_misaligned, INVALID_ARG, "args->initial_state = * is not aligned",            \
      a->conv_f.initial_state = MISALIGNED; return conv_fwd(a))                                            \
    X(conv_fwd_y_null, INVALID_ARG, "ssmjit_causal_conv1d_fwd: args->y.data is NULL", a->conv_f.y.data = NULL; \
      return conv_fwd(a))                                                                                 \
    X(conv_fwd_y_stride_short, INVALID_ARG, "ssmjit_causal_conv1d_fwd: args->y.stride = 4 is less than the row width 8", \
      a->conv_f.y.stride = 4; return conv_fwd(a))                                                          \
    X(conv_fwd_x_stride_negative, INVALID_ARG, "args->x.stride = -8 is less than",                         \
      a->conv_f.x.stride = -8; return conv_fwd(a))                                                         \
    X(conv_fwd_x_batch_stride_short, INVALID_ARG,                                                          \
      "ssmjit_causal_conv1d_fwd: args->x.batch_stride = 39 is less than len * stride = 40",                \
      a->conv_f.x.batch_stride = 39; return conv_fwd(a))                                                   \
    X(conv_fwd_final_state_misaligned, INVALID_ARG, "ssmjit_causal_conv1d_fwd: args->final_state = * is not aligned", \
      a->conv_f.final_state = MISALIGNED; return conv_fwd(a))                                              \
    X(conv_fwd_extent_overflow, UNSUPPORTED,                                                              \
      "ssmjit_causal_conv1d_fwd: desc->batch * desc->seqlen * desc->dim is too large",                    \
      a->conv.batch = P(40); a->conv.seqlen = P(40); return conv_fwd(a))                                  \
    X(conv_ws_seqlen_huge_no_batch, UNSUPPORTED, "desc->batch * desc->seqlen * desc->dim is too large",   \
      a->conv.batch = 0; a->conv.seqlen = INT64_MAX; return conv_ws(a))                                   \
    X(conv_ws_state_overflow, UNSUPPORTED,                                                                \
      "ssmjit_causal_conv1d_bwd_workspace_size: desc->batch * desc->dim * desc->width is too large",      \
      a->conv.batch = 1; a->conv.seqlen = 1; a->conv.dim = P(61); return conv_ws(a))                      \
    X(conv_ws_workspace_overflow, UNSUPPORTED,                                                            \
      "ssmjit_causal_conv1d_bwd_workspace_size: the backward workspace is too large",                     \
      a->conv.batch = 1; a->conv.seqlen = 1; a->conv.dim = P(58); a->conv.width = 8; return conv_ws(a))   \
    X(conv_fwd_stride_overflow, UNSUPPORTED, "ssmjit_causal_conv1d_fwd: args->x.batch_stride is too large", \
      a->conv.batch = P(20); a->conv.seqlen = P(20); a->conv_f.x.stride = P(30); return conv_fwd(a))       \
    X(conv_bwd_args_null, INVALID_ARG, "ssmjit_causal_conv1d_bwd: args is NULL",                           \
      return ssmjit_causal_conv1d_bwd(a->ctx, &a->conv, NULL, NULL))                                       \
    X(conv_bwd_dy_null, INVALID_ARG, "ssmjit_causal_conv1d_bwd: args->dy.data is NULL", a->conv_b.dy.data = NULL; \
      return conv_bwd(a))                                                                                 \
    X(conv_bwd_d_final_state_misaligned, INVALID_ARG, "ssmjit_causal_conv1d_bwd: args->d_final_state = * is not aligned", \
      a->conv_b.d_final_state = MISALIGNED; return conv_bwd(a))                                            \
    X(conv_bwd_dx_null, INVALID_ARG, "ssmjit_causal_conv1d_bwd: args->dx.data is NULL",                    \
      a->conv_b.dx.data = NULL; return conv_bwd(a))                                                        \
    X(conv_bwd_dx_misaligned, INVALID_ARG, "ssmjit_causal_conv1d_bwd: args->dx.data is not aligned to its 2-byte", \
      a->conv.dtype = SSMJIT_BF16; a->conv_b.dx.data = MISALIGNED; return conv_bwd(a))                     \
    X(conv_bwd_dweight_null, INVALID_ARG, "ssmjit_causal_conv1d_bwd: args->dweight is NULL",               \
      a->conv_b.dweight = NULL; return conv_bwd(a))                                                        \
    X(conv_bwd_dbias_misaligned, INVALID_ARG, "args->dbias = * is not aligned to 4 bytes",                 \
      a->conv_b.dbias = MISALIGNED; return conv_bwd(a))                                                    \
    X(conv_bwd_d_initial_state_misaligned, INVALID_ARG, "args->d_initial_state = * is not aligned",        \
      a->conv_b.d_initial_state = MISALIGNED; return conv_bwd(a))                                          \
    X(conv_bwd_workspace_short, INVALID_ARG, "ssmjit_causal_conv1d_bwd: args->workspace_bytes = 0 is less than", \
      a->conv_b.workspace_bytes = 0; return conv_bwd(a))                                                   \
    X(conv_bwd_workspace_null, INVALID_ARG, "ssmjit_causal_conv1d_bwd: args->workspace is NULL",           \
      a->conv_b.workspace = NULL; return conv_bwd(a))                                                      \
    X(conv_bwd_workspace_misaligned, INVALID_ARG, "ssmjit_causal_conv1d_bwd: args->workspace = * is not aligned", \
      a->conv_b.workspace = MISALIGNED; return conv_bwd(a))                                                \
    X(conv_bwd_dx_batch_stride_short, INVALID_ARG,                                                         \
      "ssmjit_causal_conv1d_bwd: args->dx.batch_stride = 8 is less than len * stride = 40",                \
      a->conv_b.dx.batch_stride = 8; return conv_bwd(a))                                                  \
    X(conv_update_args_null, INVALID_ARG, "ssmjit_causal_conv1d_update: args is NULL",                     \
      return ssmjit_causal_conv1d_update(a->ctx, &a->conv, NULL, NULL))                                    \
    X(conv_update_x_null, INVALID_ARG, "ssmjit_causal_conv1d_update: args->x.data is NULL", a->conv_u.x.data = NULL; \
      return conv_update(a))                                                                              \
    X(conv_update_weight_null, INVALID_ARG, "ssmjit_causal_conv1d_update: args->weight is NULL",           \
      a->conv_u.weight = NULL; return conv_update(a))                                                      \
    X(conv_update_state_null, INVALID_ARG, "ssmjit_causal_conv1d_update: args->conv_state is NULL",        \
      a->conv_u.conv_state = NULL; return conv_update(a))                                                  \
    X(conv_update_state_misaligned, INVALID_ARG, "args->conv_state = * is not aligned to 4 bytes",         \
      a->conv_u.conv_state = MISALIGNED; return conv_update(a))                                            \
    X(conv_update_y_null, INVALID_ARG, "ssmjit_causal_conv1d_update: args->y.data is NULL", a->conv_u.y.data = NULL; \
      return conv_update(a))                                                                              \
    X(conv_update_y_misaligned, INVALID_ARG, "ssmjit_causal_conv1d_update: args->y.data is not aligned to its 4-byte", \
      a->conv_u.y.data = MISALIGNED; return conv_update(a))                                                \
    X(conv_update_y_stride_short, INVALID_ARG, "ssmjit_causal_conv1d_update: args->y.stride = 7 is less than", \
      a->conv_u.y.stride = 7; return conv_update(a))                                                       \
    /* selective scan */                                                                                  \
    X(scan_fwd_ctx_null, INVALID_ARG, "ssmjit_selective_scan_fwd: ctx is NULL", a->ctx = NULL;            \
      return scan_fwd(a))                                                                                 \
    X(scan_bwd_ctx_null, INVALID_ARG, "ssmjit_selective_scan_bwd: ctx is NULL", a->ctx = NULL;            \
      return scan_bwd(a))                                                                                 \
    X(scan_ckpt_size_ctx_null, INVALID_ARG, "ssmjit_selective_scan_checkpoint_size: ctx is NULL",         \
      a->ctx = NULL; return scan_ckpt_size(a))                                                            \
    X(scan_fwd_ws_ctx_null, INVALID_ARG, "ssmjit_selective_scan_fwd_workspace_size: ctx is NULL",         \
      a->ctx = NULL; return scan_fwd_ws(a))                                                               \
    X(scan_bwd_ws_ctx_null, INVALID_ARG, "ssmjit_selective_scan_bwd_workspace_size: ctx is NULL",         \
      a->ctx = NULL; return scan_bwd_ws(a))                                                               \
    X(scan_fwd_desc_null, INVALID_ARG, "ssmjit_selective_scan_fwd: desc is NULL",                         \
      return ssmjit_selective_scan_fwd(a->ctx, NULL, &a->sfwd, NULL))                                     \
    X(scan_ckpt_size_desc_null, INVALID_ARG, "ssmjit_selective_scan_checkpoint_size: desc is NULL",       \
      return ssmjit_selective_scan_checkpoint_size(a->ctx, NULL, &a->out->bytes))                         \
    X(scan_fwd_ws_desc_null, INVALID_ARG, "ssmjit_selective_scan_fwd_workspace_size: desc is NULL",       \
      return ssmjit_selective_scan_fwd_workspace_size(a->ctx, NULL, &a->out->bytes))                      \
    X(scan_bwd_ws_desc_null, INVALID_ARG, "ssmjit_selective_scan_bwd_workspace_size: desc is NULL",       \
      return ssmjit_selective_scan_bwd_workspace_size(a->ctx, NULL, &a->out->bytes))                      \
    X(scan_bwd_desc_null, INVALID_ARG, "ssmjit_selective_scan_bwd: desc is NULL",                         \
      return ssmjit_selective_scan_bwd(a->ctx, NULL, &a->sbwd, NULL))                                     \
    X(scan_ckpt_size_bytes_null, INVALID_ARG, "ssmjit_selective_scan_checkpoint_size: bytes is NULL",     \
      return ssmjit_selective_scan_checkpoint_size(a->ctx, &a->scan, NULL))                               \
    X(scan_fwd_ws_bytes_null, INVALID_ARG, "ssmjit_selective_scan_fwd_workspace_size: bytes is NULL",     \
      return ssmjit_selective_scan_fwd_workspace_size(a->ctx, &a->scan, NULL))                            \
    X(scan_bwd_ws_bytes_null, INVALID_ARG, "ssmjit_selective_scan_bwd_workspace_size: bytes is NULL",     \
      return ssmjit_selective_scan_bwd_workspace_size(a->ctx, &a->scan, NULL))                            \
    X(scan_fwd_desc_struct_size_0, INVALID_ARG, "ssmjit_selective_scan_fwd: desc->struct_size = 0, not the ",\
      a->scan.struct_size = 0; return scan_fwd(a))                                                        \
    X(scan_bwd_ws_desc_struct_size_short, INVALID_ARG,                                                    \
      "desc->struct_size = * (fill it with SSMJIT_STRUCT_INIT(ssmjit_selective_scan_desc))",              \
      a->scan.struct_size = sizeof a->scan - 8; return scan_bwd_ws(a))                                    \
    X(scan_fwd_args_null, INVALID_ARG, "ssmjit_selective_scan_fwd: args is NULL",                         \
      return ssmjit_selective_scan_fwd(a->ctx, &a->scan, NULL, NULL))                                     \
    X(scan_fwd_args_struct_size_long, INVALID_ARG,                                                        \
      "args->struct_size = * (fill it with SSMJIT_STRUCT_INIT(ssmjit_selective_scan_fwd_args))",          \
      a->sfwd.struct_size = sizeof a->sfwd + 8; return scan_fwd(a))                                       \
    X(scan_bwd_args_null, INVALID_ARG, "ssmjit_selective_scan_bwd: args is NULL",                         \
      return ssmjit_selective_scan_bwd(a->ctx, &a->scan, NULL, NULL))                                     \
    X(scan_bwd_args_struct_size_0, INVALID_ARG,                                                           \
      "args->struct_size = 0, not the * (fill it with SSMJIT_STRUCT_INIT(ssmjit_selective_scan_bwd_args))",\
      a->sbwd.struct_size = 0; return scan_bwd(a))                                                        \
    X(scan_fwd_dtype_unknown, INVALID_ARG, "ssmjit_selective_scan_fwd: desc->dtype = 3 is not a known dtype",\
      a->scan.dtype = (ssmjit_dtype)3; return scan_fwd(a))                                                \
    X(scan_fwd_ws_dtype_negative, INVALID_ARG, "desc->dtype = -1 is not a known dtype",                   \
      a->scan.dtype = (ssmjit_dtype)-1; return scan_fwd_ws(a))                                            \
    X(scan_fwd_batch_negative, INVALID_ARG, "ssmjit_selective_scan_fwd: desc->batch = -1 is negative",    \
      a->scan.batch = -1; return scan_fwd(a))                                                             \
    X(scan_bwd_seqlen_negative, INVALID_ARG, "ssmjit_selective_scan_bwd: desc->seqlen = -1 is negative",  \
      a->scan.seqlen = -1; return scan_bwd(a))                                                            \
    X(scan_bwd_ws_dim_negative, INVALID_ARG, "ssmjit_selective_scan_bwd_workspace_size: desc->dim = -1 is negative",\
      a->scan.dim = -1; return scan_bwd_ws(a))                                                            \
    X(scan_fwd_ws_dim_negative, INVALID_ARG,                                                              \
      "ssmjit_selective_scan_fwd_workspace_size: desc->dim = -1 is negative", a->scan.dim = -1;           \
      return scan_fwd_ws(a))                                                                              \
    X(scan_fwd_dstate_0, INVALID_ARG, "ssmjit_selective_scan_fwd: desc->dstate = 0 is outside 1..256",    \
      a->scan.dstate = 0; return scan_fwd(a))                                                             \
    X(scan_ckpt_size_dstate_257, INVALID_ARG, "desc->dstate = 257 is outside 1..256",                     \
      a->scan.dstate = 257; return scan_ckpt_size(a))                                                     \
    X(scan_bwd_dstate_negative, INVALID_ARG, "desc->dstate = -9223372036854775808 is outside",            \
      a->scan.dstate = INT64_MIN; return scan_bwd(a))                                                     \
    X(scan_fwd_u_null, INVALID_ARG, "ssmjit_selective_scan_fwd: args->in.u.data is NULL",                 \
      a->sfwd.in.u.data = NULL; return scan_fwd(a))                                                       \
    X(scan_fwd_delta_null, INVALID_ARG, "args->in.delta.data is NULL", a->sfwd.in.delta.data = NULL;      \
      return scan_fwd(a))                                                                                 \
    X(scan_bwd_A_null, INVALID_ARG, "ssmjit_selective_scan_bwd: args->in.A is NULL", a->sbwd.in.A = NULL; \
      return scan_bwd(a))                                                                                 \
    X(scan_fwd_B_null, INVALID_ARG, "args->in.B.data is NULL", a->sfwd.in.B.data = NULL; return scan_fwd(a))\
    X(scan_bwd_C_null, INVALID_ARG, "args->in.C.data is NULL", a->sbwd.in.C.data = NULL; return scan_bwd(a))\
    X(scan_fwd_y_null, INVALID_ARG, "ssmjit_selective_scan_fwd: args->y.data is NULL",                    \
      a->sfwd.y.data = NULL; return scan_fwd(a))                                                          \
    X(scan_fwd_u_misaligned, INVALID_ARG, "args->in.u.data is not aligned to its 4-byte elements",        \
      a->sfwd.in.u.data = MISALIGNED; return scan_fwd(a))                                                 \
    X(scan_bwd_dz_misaligned, INVALID_ARG, "ssmjit_selective_scan_bwd: args->dz.data is not aligned to its 2-byte",\
      a->scan.dtype = SSMJIT_BF16; a->sbwd.dz.data = MISALIGNED; return scan_bwd(a))                      \
    X(scan_fwd_u_stride_short, INVALID_ARG, "args->in.u.stride = 4 is less than the row width 8",         \
      a->sfwd.in.u.stride = 4; return scan_fwd(a))                                                        \
    X(scan_bwd_B_stride_short, INVALID_ARG, "args->in.B.stride = 15 is less than the row width 16",       \
      a->sbwd.in.B.stride = 15; return scan_bwd(a))                                                       \
    X(scan_fwd_z_stride_negative, INVALID_ARG, "args->in.z.stride = -1 is less than",                     \
      a->sfwd.in.z.stride = -1; return scan_fwd(a))                                                       \
    X(scan_fwd_u_batch_stride_short, INVALID_ARG,                                                         \
      "ssmjit_selective_scan_fwd: args->in.u.batch_stride = 312 is less than len * stride = 320",         \
      a->sfwd.in.u.batch_stride = 39 * 8; return scan_fwd(a))                                             \
    X(scan_bwd_dB_batch_stride_short, INVALID_ARG, "args->dB.batch_stride = 1 is less than len * stride", \
      a->sbwd.dB.batch_stride = 1; return scan_bwd(a))                                                    \
    X(scan_fwd_y_batch_stride_negative, INVALID_ARG, "args->y.batch_stride = -1 is less than",            \
      a->sfwd.y.batch_stride = -1; return scan_fwd(a))                                                    \
    X(scan_fwd_cu_seqlens_batch, INVALID_ARG, "desc->batch = 2 must be 1 with packed sequences",          \
      a->scan.num_seqs = 1; a->sfwd.in.cu_seqlens = DEV; return scan_fwd(a))                              \
    X(scan_fwd_cu_seqlens_num_seqs_0, INVALID_ARG,                                                        \
      "ssmjit_selective_scan_fwd: args->in.cu_seqlens is set but desc->num_seqs is 0",                    \
      a->sfwd.in.cu_seqlens = DEV; a->scan.batch = 1; return scan_fwd(a))                                 \
    X(scan_bwd_num_seqs_cu_seqlens_null, INVALID_ARG,                                                     \
      "ssmjit_selective_scan_bwd: args->in.cu_seqlens is NULL but desc->num_seqs = 2",                    \
      a->scan.batch = 1; a->scan.num_seqs = 2; return scan_bwd(a))                                        \
    X(scan_fwd_ws_num_seqs_negative, INVALID_ARG, "desc->num_seqs = -1 is outside 0..2^31-2",             \
      a->scan.num_seqs = -1; return scan_fwd_ws(a))                                                       \
    X(scan_bwd_num_seqs_huge, INVALID_ARG, "desc->num_seqs = 9223372036854775807 is outside",             \
      a->sbwd.in.cu_seqlens = DEV; a->scan.batch = 1; a->scan.num_seqs = INT64_MAX; return scan_bwd(a))   \
    X(scan_fwd_checkpoint_null, INVALID_ARG,                                                              \
      "ssmjit_selective_scan_fwd: args->checkpoint is NULL but desc->checkpoint is set",                  \
      a->sfwd.checkpoint = NULL; return scan_fwd(a))                                                      \
    X(scan_bwd_checkpoint_null, INVALID_ARG,                                                              \
      "ssmjit_selective_scan_bwd: args->checkpoint is NULL but desc->checkpoint is set",                  \
      a->sbwd.checkpoint = NULL; return scan_bwd(a))                                                      \
    X(scan_fwd_checkpoint_unexpected, INVALID_ARG, "args->checkpoint is set but desc->checkpoint is 0",   \
      a->scan.checkpoint = 0; return scan_fwd(a))                                                         \
    X(scan_fwd_batch_above_grid, UNSUPPORTED, "ssmjit_selective_scan_fwd: desc->batch = 65536 is above 65535",\
      a->scan.batch = 65536; return scan_fwd(a))                                                          \
    X(scan_bwd_ws_dim_above_int32, UNSUPPORTED, "desc->dim = 2147483648 is above 2^31-1",                 \
      a->scan.dim = P(31); return scan_bwd_ws(a))                                                         \
    X(scan_fwd_cu_seqlens_seqlen_above_int32, UNSUPPORTED,                                                \
      "desc->seqlen = 2147483648 does not fit int32 cu_seqlens",                                          \
      a->sfwd.in.cu_seqlens = DEV; a->scan.batch = 1; a->scan.num_seqs = 1; a->scan.seqlen = P(31);       \
      return scan_fwd(a))                                                                                 \
    X(scan_fwd_activation_overflow, UNSUPPORTED, "ssmjit_selective_scan_fwd: args->in.u.stride is too large",\
      a->sfwd.in.u.stride = P(57); return scan_fwd(a))                                                    \
    X(scan_fwd_batch_stride_overflow, UNSUPPORTED, "ssmjit_selective_scan_fwd: args->y.batch_stride is too large",\
      a->sfwd.y.batch_stride = P(61) + 8; return scan_fwd(a))                                             \
    X(scan_fwd_ws_state_overflow, UNSUPPORTED, "the state extent S * D * N is too large",                 \
      a->scan.batch = 1; a->scan.seqlen = 16; a->scan.num_seqs = INT32_MAX - 1;                           \
      a->scan.dim = INT32_MAX; a->scan.dstate = 256; return scan_fwd_ws(a))                               \
    /* the largest L for which the backward workspace counted in floats                                   \
     * passed, while its size in bytes wrapped past 2^64 */                                               \
    X(scan_bwd_ws_workspace_overflow, UNSUPPORTED,                                                        \
      "ssmjit_selective_scan_bwd_workspace_size: the backward workspace is too large",                    \
      a->scan.batch = 1; a->scan.seqlen = 113025454; a->scan.dim = INT32_MAX; a->scan.dstate = 256;       \
      return scan_bwd_ws(a))                                                                              \
    X(scan_ckpt_size_workspace_overflow, UNSUPPORTED, "the backward workspace is too large",              \
      a->scan.batch = 1; a->scan.seqlen = 113025454; a->scan.dim = INT32_MAX; a->scan.dstate = 256;       \
      return scan_ckpt_size(a))                                                                           \
    X(scan_fwd_window_pitches, UNSUPPORTED,                                                               \
      "args->in.delta.batch_stride = 320 is not 50 tokens of its stride 8: the scan's activations must",  \
      a->sfwd.in.u.batch_stride = 400; return scan_fwd(a))                                                \
    X(scan_bwd_window_off_rows, UNSUPPORTED, "args->dB.batch_stride = 801 is not 50 tokens of its stride 16", \
      scan_bwd_window(a); a->sbwd.dB.batch_stride = 801; return scan_bwd(a))                              \
    X(scan_fwd_split_workspace_small, INVALID_ARG,                                                        \
      "ssmjit_selective_scan_fwd: args->workspace_bytes = 16 is below the * bytes the split needs",       \
      a->sfwd.workspace = DEV; a->sfwd.workspace_bytes = 16; return scan_fwd_split(a))                    \
    X(scan_fwd_split_workspace_misaligned, INVALID_ARG,                                                   \
      "ssmjit_selective_scan_fwd: args->workspace is not 4-byte aligned",                                 \
      a->sfwd.workspace = MISALIGNED; a->sfwd.workspace_bytes = (size_t)P(40); return scan_fwd_split(a))  \
    /* room for the unsplit backward only, where it splits */                                             \
    X(scan_bwd_split_workspace_small, INVALID_ARG,                                                        \
      "ssmjit_selective_scan_bwd: args->workspace_bytes = * is below the * bytes required",               \
      return scan_bwd_split_unsplit_room(a))                                                              \
    X(scan_bwd_dy_null, INVALID_ARG, "ssmjit_selective_scan_bwd: args->dy.data is NULL",                  \
      a->sbwd.dy.data = NULL; return scan_bwd(a))                                                         \
    X(scan_bwd_du_null, INVALID_ARG, "args->du.data is NULL", a->sbwd.du.data = NULL; return scan_bwd(a)) \
    X(scan_bwd_ddelta_null, INVALID_ARG, "args->ddelta.data is NULL", a->sbwd.ddelta.data = NULL;         \
      return scan_bwd(a))                                                                                 \
    X(scan_bwd_dB_null, INVALID_ARG, "args->dB.data is NULL", a->sbwd.dB.data = NULL; return scan_bwd(a)) \
    X(scan_bwd_dC_null, INVALID_ARG, "args->dC.data is NULL", a->sbwd.dC.data = NULL; return scan_bwd(a)) \
    X(scan_bwd_dA_null, INVALID_ARG, "ssmjit_selective_scan_bwd: args->dA is NULL", a->sbwd.dA = NULL;    \
      return scan_bwd(a))                                                                                 \
    X(scan_bwd_dD_missing, INVALID_ARG, "args->dD is NULL but args->in.D is given", a->sbwd.dD = NULL;    \
      return scan_bwd(a))                                                                                 \
    X(scan_bwd_dD_unexpected, INVALID_ARG, "args->dD is set but args->in.D is absent", a->sbwd.in.D = NULL;\
      return scan_bwd(a))                                                                                 \
    X(scan_bwd_dz_missing, INVALID_ARG, "args->dz.data is NULL but args->in.z is given",                  \
      a->sbwd.dz.data = NULL; return scan_bwd(a))                                                         \
    X(scan_bwd_dz_unexpected, INVALID_ARG, "args->dz.data is set but args->in.z is absent",               \
      a->sbwd.in.z.data = NULL; return scan_bwd(a))                                                       \
    X(scan_bwd_ddelta_bias_missing, INVALID_ARG, "args->ddelta_bias is NULL but args->in.delta_bias is given",\
      a->sbwd.ddelta_bias = NULL; return scan_bwd(a))                                                     \
    X(scan_bwd_d_initial_state_unexpected, INVALID_ARG,                                                   \
      "args->d_initial_state is set but args->in.initial_state is absent",                                \
      a->sbwd.in.initial_state = NULL; return scan_bwd(a))                                                \
    X(scan_bwd_du_stride_short, INVALID_ARG, "args->du.stride = 3 is less than the row width 8",          \
      a->sbwd.du.stride = 3; return scan_bwd(a))                                                          \
    X(scan_bwd_dy_stride_overflow, UNSUPPORTED, "ssmjit_selective_scan_bwd: args->dy.stride is too large",\
      a->scan.seqlen = P(40); a->sbwd.dy.stride = P(30); return scan_bwd(a))                              \
    X(scan_bwd_workspace_null, INVALID_ARG, "ssmjit_selective_scan_bwd: args->workspace is NULL",         \
      a->sbwd.workspace = NULL; return scan_bwd(a))                                                       \
    X(scan_bwd_workspace_misaligned, INVALID_ARG, "ssmjit_selective_scan_bwd: args->workspace is not 4-byte aligned",\
      a->sbwd.workspace = MISALIGNED; return scan_bwd(a))                                                 \
    X(scan_bwd_workspace_short, INVALID_ARG, "ssmjit_selective_scan_bwd: args->workspace_bytes = 0 is below",\
      a->sbwd.workspace_bytes = 0; return scan_bwd(a))                                                    \
    /* selective state update */                                                                          \
    X(update_ctx_null, INVALID_ARG, "ssmjit_selective_state_update: ctx is NULL", a->ctx = NULL;          \
      return state_update(a))                                                                             \
    X(update_desc_null, INVALID_ARG, "ssmjit_selective_state_update: desc is NULL",                       \
      return ssmjit_selective_state_update(a->ctx, NULL, &a->uargs, NULL))                                \
    X(update_desc_struct_size_short, INVALID_ARG,                                                         \
      "desc->struct_size = * (fill it with SSMJIT_STRUCT_INIT(ssmjit_state_update_desc))",                \
      a->upd.struct_size = sizeof a->upd - 8; return state_update(a))                                     \
    X(update_args_null, INVALID_ARG, "ssmjit_selective_state_update: args is NULL",                       \
      return ssmjit_selective_state_update(a->ctx, &a->upd, NULL, NULL))                                  \
    X(update_args_struct_size_0, INVALID_ARG,                                                             \
      "args->struct_size = 0, not the * (fill it with SSMJIT_STRUCT_INIT(ssmjit_state_update_args))",     \
      a->uargs.struct_size = 0; return state_update(a))                                                   \
    X(update_dtype_unknown, INVALID_ARG, "ssmjit_selective_state_update: desc->dtype = 3 is not a known dtype",\
      a->upd.dtype = (ssmjit_dtype)3; return state_update(a))                                             \
    X(update_batch_negative, INVALID_ARG, "desc->batch = -1 is negative", a->upd.batch = -1;              \
      return state_update(a))                                                                             \
    X(update_dim_negative, INVALID_ARG, "desc->dim = -1 is negative", a->upd.dim = -1; return state_update(a))\
    X(update_dstate_0, INVALID_ARG, "desc->dstate = 0 is outside 1..256", a->upd.dstate = 0;              \
      return state_update(a))                                                                             \
    X(update_dstate_300, INVALID_ARG, "desc->dstate = 300 is outside 1..256", a->upd.dstate = 300;        \
      return state_update(a))                                                                             \
    X(update_x_null, INVALID_ARG, "ssmjit_selective_state_update: args->x.data is NULL",                  \
      a->uargs.x.data = NULL; return state_update(a))                                                     \
    X(update_dt_null, INVALID_ARG, "args->dt.data is NULL", a->uargs.dt.data = NULL; return state_update(a))\
    X(update_B_null, INVALID_ARG, "args->B.data is NULL", a->uargs.B.data = NULL; return state_update(a)) \
    X(update_C_null, INVALID_ARG, "args->C.data is NULL", a->uargs.C.data = NULL; return state_update(a)) \
    X(update_out_null, INVALID_ARG, "args->out.data is NULL", a->uargs.out.data = NULL; return state_update(a))\
    X(update_A_null, INVALID_ARG, "ssmjit_selective_state_update: args->A is NULL", a->uargs.A = NULL;    \
      return state_update(a))                                                                             \
    X(update_state_null, INVALID_ARG, "ssmjit_selective_state_update: args->state is NULL",               \
      a->uargs.state = NULL; return state_update(a))                                                      \
    X(update_x_misaligned, INVALID_ARG, "args->x.data is not aligned to its 4-byte elements",             \
      a->uargs.x.data = MISALIGNED; return state_update(a))                                               \
    X(update_x_stride_short, INVALID_ARG, "args->x.stride = 4 is less than the row width 8",              \
      a->uargs.x.stride = 4; return state_update(a))                                                      \
    X(update_z_stride_negative, INVALID_ARG, "args->z.stride = -8 is less than", a->uargs.z.stride = -8;  \
      return state_update(a))                                                                             \
    X(update_out_batch_stride, INVALID_ARG, "args->out.batch_stride = 16 must be 0 for a [rows, width] operand",\
      a->uargs.out.batch_stride = 16; return state_update(a))                                             \
    X(update_stride_overflow, UNSUPPORTED, "ssmjit_selective_state_update: args->x.stride is too large",  \
      a->upd.batch = P(40); a->uargs.x.stride = P(30); return state_update(a))                            \
    X(update_state_overflow, UNSUPPORTED, "the state extent B * D * N is too large",                      \
      a->upd.batch = P(20); a->upd.dim = P(30); a->upd.dstate = 256; return state_update(a))              \
    /* GEMM through cuBLAS (internal: the model layer's) */                                               \
    X(gemm_blas_null, INVALID_ARG, "sj_gemm: blas is NULL", return sj_gemm(NULL, &a->gemm, NULL))         \
    X(gemm_desc_null, INVALID_ARG, "sj_gemm: desc is NULL", return sj_gemm(&a->blas, NULL, NULL))         \
    X(gemm_ab_dtype_unknown, INVALID_ARG, "sj_gemm: desc->ab_dtype = 3 is not a known dtype",             \
      a->gemm.ab_dtype = (ssmjit_dtype)3; return gemm(a))                                                 \
    X(gemm_c_dtype_unknown, INVALID_ARG, "sj_gemm: desc->c_dtype = -1 is not a known dtype",              \
      a->gemm.c_dtype = (ssmjit_dtype)-1; return gemm(a))                                                 \
    X(gemm_c_f16_from_f32, UNSUPPORTED, "sj_gemm: desc->c_dtype = f16 must be desc->ab_dtype (f32) or f32", \
      a->gemm.c_dtype = SSMJIT_F16; return gemm(a))                                                       \
    X(gemm_c_bf16_from_f16, UNSUPPORTED, "desc->c_dtype = bf16 must be desc->ab_dtype (f16) or f32",      \
      a->gemm.ab_dtype = SSMJIT_F16; a->gemm.c_dtype = SSMJIT_BF16; return gemm(a))                       \
    X(gemm_m_negative, INVALID_ARG, "sj_gemm: desc->m = -1 is negative", a->gemm.m = -1; return gemm(a))  \
    X(gemm_n_negative, INVALID_ARG, "sj_gemm: desc->n = -2 is negative", a->gemm.n = -2; return gemm(a))  \
    X(gemm_k_negative, INVALID_ARG, "sj_gemm: desc->k = -3 is negative", a->gemm.k = -3; return gemm(a))  \
    X(gemm_m_past_int, UNSUPPORTED, "sj_gemm: desc->m = 2147483648 is more than cuBLAS takes",            \
      a->gemm.m = P(31); return gemm(a))                                                                  \
    X(gemm_n_past_int, UNSUPPORTED, "sj_gemm: desc->n = 2147483648 is more than", a->gemm.n = P(31);      \
      return gemm(a))                                                                                     \
    X(gemm_k_past_int, UNSUPPORTED, "sj_gemm: desc->k = 2147483648 is more than", a->gemm.k = P(31);      \
      return gemm(a))                                                                                     \
    X(gemm_lda_short, INVALID_ARG, "sj_gemm: desc->a.stride = 4 is less than the row width 5",             \
      a->gemm.lda = 4; return gemm(a))                                                                    \
    X(gemm_lda_short_trans, INVALID_ARG, "sj_gemm: desc->a.stride = 3 is less than the row width 4",       \
      a->gemm.trans_a = 1; a->gemm.lda = 3; return gemm(a))                                               \
    X(gemm_ldb_short, INVALID_ARG, "sj_gemm: desc->b.stride = 7 is less than the row width 8",             \
      a->gemm.ldb = 7; return gemm(a))                                                                    \
    X(gemm_ldb_short_trans, INVALID_ARG, "sj_gemm: desc->b.stride = 4 is less than the row width 5",       \
      a->gemm.trans_b = 1; a->gemm.ldb = 4; return gemm(a))                                               \
    X(gemm_ldc_short, INVALID_ARG, "sj_gemm: desc->c.stride = 7 is less than the row width 8",             \
      a->gemm.ldc = 7; return gemm(a))                                                                    \
    X(gemm_ldc_negative, INVALID_ARG, "sj_gemm: desc->c.stride = -1 is less than", a->gemm.ldc = -1;       \
      return gemm(a))                                                                                     \
    X(gemm_lda_past_int, UNSUPPORTED, "sj_gemm: desc->lda = 2147483648 is more than cuBLAS takes",        \
      a->gemm.lda = P(31); return gemm(a))                                                                \
    X(gemm_ldb_past_int, UNSUPPORTED, "sj_gemm: desc->ldb = 2147483648 is more than", a->gemm.ldb = P(31); \
      return gemm(a))                                                                                     \
    X(gemm_ldc_past_int, UNSUPPORTED, "sj_gemm: desc->ldc = 2147483648 is more than", a->gemm.ldc = P(31); \
      return gemm(a))                                                                                     \
    X(gemm_a_null, INVALID_ARG, "sj_gemm: desc->a.data is NULL", a->gemm.a = NULL; return gemm(a))         \
    X(gemm_b_null, INVALID_ARG, "sj_gemm: desc->b.data is NULL", a->gemm.b = NULL; return gemm(a))         \
    X(gemm_c_null, INVALID_ARG, "sj_gemm: desc->c.data is NULL", a->gemm.c = NULL; return gemm(a))         \
    X(gemm_c_null_k0, INVALID_ARG, "sj_gemm: desc->c.data is NULL", a->gemm.c = NULL; return gemm_k0(a))   \
    X(blas_create_out_null, INVALID_ARG, "sj_blas_create: out is NULL",                                   \
      return sj_blas_create(a->ctx, NULL))                                                                \
    X(blas_create_ctx_null, INVALID_ARG, "sj_blas_create: ctx is NULL",                                   \
      sj_blas *b = (sj_blas *)&a->blas; ssmjit_status st = sj_blas_create(NULL, &b);                      \
      if (st != SSMJIT_OK && b) fail_msg("a failed sj_blas_create left *out = %p", (void *)b);            \
      return st)                                                                                          \
    /* the model layer's ops: embedding lookup */                                                         \
    X(embed_fwd_ctx_null, INVALID_ARG, "sj_embedding_fwd: ctx is NULL", a->ctx = NULL; return embed_fwd(a)) \
    X(embed_fwd_dtype_unknown, INVALID_ARG, "sj_embedding_fwd: dtype = 3 is not a known dtype",           \
      a->dtype = (ssmjit_dtype)3; return embed_fwd(a))                                                    \
    X(embed_fwd_out_dtype_unknown, INVALID_ARG, "sj_embedding_fwd: out_dtype = -1 is not a known dtype",  \
      a->out_dtype = (ssmjit_dtype)-1; return embed_fwd(a))                                               \
    X(embed_fwd_n_negative, INVALID_ARG, "sj_embedding_fwd: n = -1 is negative", a->n = -1;               \
      return embed_fwd(a))                                                                                \
    X(embed_fwd_d_negative, INVALID_ARG, "sj_embedding_fwd: d = -2 is negative", a->d = -2;               \
      return embed_fwd(a))                                                                                \
    X(embed_fwd_vocab_negative, INVALID_ARG, "sj_embedding_fwd: vocab = -1 is negative", a->vocab = -1;   \
      return embed_fwd(a))                                                                                \
    X(embed_fwd_table_overflow, UNSUPPORTED, "sj_embedding_fwd: vocab * d is too large",                  \
      a->vocab = P(40); a->d = P(30); return embed_fwd(a))                                                \
    X(embed_fwd_d_past_grid, UNSUPPORTED, "sj_embedding_fwd: d = 549755813888 is too large",              \
      a->n = 1; a->vocab = 1; a->d = P(39); return embed_fwd(a))                                          \
    X(embed_fwd_ids_null, INVALID_ARG, "sj_embedding_fwd: ids is NULL", a->ids = NULL; return embed_fwd(a)) \
    X(embed_fwd_table_null, INVALID_ARG, "sj_embedding_fwd: table is NULL", a->weight = NULL;             \
      return embed_fwd(a))                                                                                \
    X(embed_fwd_out_null, INVALID_ARG, "sj_embedding_fwd: out.data is NULL", a->y.data = NULL;            \
      return embed_fwd(a))                                                                                \
    X(embed_fwd_out_stride_short, INVALID_ARG, "sj_embedding_fwd: out.stride = 7 is less than the row width 8", \
      a->y.stride = 7; return embed_fwd(a))                                                               \
    X(embed_fwd_out_stride_overflow, UNSUPPORTED, "sj_embedding_fwd: out.stride is too large",            \
      a->n = P(40); a->y.stride = P(30); return embed_fwd(a))                                             \
    X(embed_fwd_vocab_0, INVALID_ARG, "sj_embedding_fwd: vocab = 0 but there are n = 4 ids",              \
      a->vocab = 0; return embed_fwd(a))                                                                  \
    /* embedding gradient */                                                                              \
    X(plan_n_negative, INVALID_ARG, "sj_embedding_bwd_plan: n = -1 is negative", a->n = -1;               \
      return embed_plan(a))                                                                               \
    X(plan_n_past_int32, UNSUPPORTED, "sj_embedding_bwd_plan: n = 2147483648 is more than INT32_MAX",     \
      a->n = P(31); return embed_plan(a))                                                                 \
    X(plan_ids_null, INVALID_ARG, "sj_embedding_bwd_plan: ids_host is NULL", a->ids_host = NULL;          \
      return embed_plan(a))                                                                               \
    X(plan_order_null, INVALID_ARG, "sj_embedding_bwd_plan: order is NULL",                               \
      return sj_embedding_bwd_plan(a->ids_host, a->n, NULL, a->out->seg_start, a->out->seg_id,            \
                                   &a->out->nseg))                                                        \
    X(plan_seg_start_null, INVALID_ARG, "sj_embedding_bwd_plan: seg_start is NULL",                       \
      return sj_embedding_bwd_plan(a->ids_host, a->n, a->out->order, NULL, a->out->seg_id, &a->out->nseg)) \
    X(plan_seg_id_null, INVALID_ARG, "sj_embedding_bwd_plan: seg_id is NULL",                             \
      return sj_embedding_bwd_plan(a->ids_host, a->n, a->out->order, a->out->seg_start, NULL,             \
                                   &a->out->nseg))                                                        \
    X(plan_nseg_null, INVALID_ARG, "sj_embedding_bwd_plan: nseg is NULL",                                 \
      return sj_embedding_bwd_plan(a->ids_host, a->n, a->out->order, a->out->seg_start, a->out->seg_id,   \
                                   NULL))                                                                 \
    X(embed_bwd_ctx_null, INVALID_ARG, "sj_embedding_bwd: ctx is NULL", a->ctx = NULL; return embed_bwd(a)) \
    X(embed_bwd_dtype_unknown, INVALID_ARG, "sj_embedding_bwd: dtype = 3 is not a known dtype",           \
      a->dtype = (ssmjit_dtype)3; return embed_bwd(a))                                                    \
    X(embed_bwd_n_negative, INVALID_ARG, "sj_embedding_bwd: n = -1 is negative", a->n = -1;               \
      return embed_bwd(a))                                                                                \
    X(embed_bwd_d_negative, INVALID_ARG, "sj_embedding_bwd: d = -1 is negative", a->d = -1;               \
      return embed_bwd(a))                                                                                \
    X(embed_bwd_nseg_negative, INVALID_ARG, "sj_embedding_bwd: nseg = -1 is negative", a->nseg = -1;      \
      return embed_bwd(a))                                                                                \
    X(embed_bwd_n_past_int32, UNSUPPORTED, "sj_embedding_bwd: n = 2147483648 is more than INT32_MAX",     \
      a->n = P(31); return embed_bwd(a))                                                                  \
    X(embed_bwd_nseg_past_n, INVALID_ARG, "sj_embedding_bwd: nseg = 5 is more than n = 4", a->nseg = 5;   \
      return embed_bwd(a))                                                                                \
    X(embed_bwd_d_past_grid, UNSUPPORTED, "sj_embedding_bwd: d = 549755813888 is too large",              \
      a->n = 1; a->nseg = 1; a->d = P(39); return embed_bwd(a))                                           \
    X(embed_bwd_order_null, INVALID_ARG, "sj_embedding_bwd: order is NULL", a->ids = NULL;                \
      return embed_bwd(a))                                                                                \
    X(embed_bwd_seg_start_null, INVALID_ARG, "sj_embedding_bwd: seg_start is NULL", a->seg_start = NULL;  \
      return embed_bwd(a))                                                                                \
    X(embed_bwd_seg_id_null, INVALID_ARG, "sj_embedding_bwd: seg_id is NULL", a->seg_id = NULL;           \
      return embed_bwd(a))                                                                                \
    X(embed_bwd_dy_null, INVALID_ARG, "sj_embedding_bwd: dy.data is NULL", a->dy.data = NULL;             \
      return embed_bwd(a))                                                                                \
    X(embed_bwd_dy_stride_short, INVALID_ARG, "sj_embedding_bwd: dy.stride = 1 is less than the row width 8", \
      a->dy.stride = 1; return embed_bwd(a))                                                              \
    X(embed_bwd_dtable_null, INVALID_ARG, "sj_embedding_bwd: dtable is NULL", a->fy = NULL;               \
      return embed_bwd(a))                                                                                \
    /* cross-entropy */                                                                                   \
    X(xent_ctx_null, INVALID_ARG, "sj_cross_entropy: ctx is NULL", a->ctx = NULL; return xent(a))         \
    X(xent_dtype_unknown, INVALID_ARG, "sj_cross_entropy: dtype = 3 is not a known dtype",                \
      a->dtype = (ssmjit_dtype)3; return xent(a))                                                         \
    X(xent_rows_negative, INVALID_ARG, "sj_cross_entropy: rows = -1 is negative", a->n = -1; return xent(a)) \
    X(xent_vocab_negative, INVALID_ARG, "sj_cross_entropy: vocab = -3 is negative", a->vocab = -3;        \
      return xent(a))                                                                                     \
    X(xent_vocab_past_int32, UNSUPPORTED, "sj_cross_entropy: vocab = 2147483648 is more than INT32_MAX",  \
      a->vocab = P(31); return xent(a))                                                                   \
    X(xent_scale_inf, INVALID_ARG, "sj_cross_entropy: scale = inf is not finite", a->scale = INFINITY;    \
      return xent(a))                                                                                     \
    X(xent_scale_nan, INVALID_ARG, "sj_cross_entropy: scale = nan is not finite", a->scale = NAN;         \
      return xent(a))                                                                                     \
    X(xent_logits_null, INVALID_ARG, "sj_cross_entropy: logits.data is NULL", a->logits.data = NULL;      \
      return xent(a))                                                                                     \
    X(xent_logits_stride_short, INVALID_ARG, "sj_cross_entropy: logits.stride = 9 is less than the row width 10", \
      a->logits.stride = 9; a->dlogits.data = NULL; return xent(a))                                       \
    X(xent_logits_stride_overflow, UNSUPPORTED, "sj_cross_entropy: logits.stride is too large",           \
      a->n = P(40); a->logits.stride = P(30); return xent(a))                                             \
    X(xent_targets_null, INVALID_ARG, "sj_cross_entropy: targets is NULL", a->ids = NULL; return xent(a)) \
    X(xent_row_loss_null, INVALID_ARG, "sj_cross_entropy: row_loss is NULL", a->row_loss = NULL;          \
      return xent(a))                                                                                     \
    X(xent_loss_null, INVALID_ARG, "sj_cross_entropy: loss is NULL", a->loss = NULL; return xent(a))      \
    X(xent_dlogits_stride_short, INVALID_ARG, "sj_cross_entropy: dlogits.stride = 3 is less than",        \
      a->dlogits.stride = 3; return xent(a))                                                              \
    X(xent_dlogits_alias_stride, INVALID_ARG,                                                             \
      "sj_cross_entropy: dlogits.stride = 20 is not logits.stride = 10 though dlogits aliases logits",    \
      a->dlogits.stride = 20; return xent(a))                                                             \
    X(xent_vocab_0, INVALID_ARG, "sj_cross_entropy: vocab = 0 but rows = 4", a->vocab = 0; return xent(a)) \
    /* argmax */                                                                                          \
    X(argmax_ctx_null, INVALID_ARG, "sj_argmax_rows: ctx is NULL", a->ctx = NULL; return argmax(a))       \
    X(argmax_dtype_negative, INVALID_ARG, "sj_argmax_rows: dtype = -1 is not a known dtype",              \
      a->dtype = (ssmjit_dtype)-1; return argmax(a))                                                      \
    X(argmax_rows_negative, INVALID_ARG, "sj_argmax_rows: rows = -1 is negative", a->n = -1;              \
      return argmax(a))                                                                                   \
    X(argmax_cols_negative, INVALID_ARG, "sj_argmax_rows: cols = -1 is negative", a->vocab = -1;          \
      return argmax(a))                                                                                   \
    X(argmax_cols_past_int32, UNSUPPORTED, "sj_argmax_rows: cols = 2147483648 is more than INT32_MAX",    \
      a->vocab = P(31); return argmax(a))                                                                 \
    X(argmax_x_null, INVALID_ARG, "sj_argmax_rows: x.data is NULL", a->x.data = NULL; return argmax(a))   \
    X(argmax_x_stride_short, INVALID_ARG, "sj_argmax_rows: x.stride = 8 is less than the row width 10",   \
      a->x.stride = 8; return argmax(a))                                                                  \
    X(argmax_out_null, INVALID_ARG, "sj_argmax_rows: out is NULL", a->argmax_out = NULL; return argmax(a)) \
    /* sampling */                                                                                        \
    X(sample_ctx_null, INVALID_ARG, "sj_sample_rows: ctx is NULL", a->ctx = NULL; return sample(a))       \
    X(sample_dtype_negative, INVALID_ARG, "sj_sample_rows: dtype = -1 is not a known dtype",              \
      a->dtype = (ssmjit_dtype)-1; return sample(a))                                                      \
    X(sample_rows_negative, INVALID_ARG, "sj_sample_rows: rows = -1 is negative", a->n = -1;              \
      return sample(a))                                                                                   \
    X(sample_cols_negative, INVALID_ARG, "sj_sample_rows: cols = -1 is negative", a->vocab = -1;          \
      return sample(a))                                                                                   \
    X(sample_cols_past_int32, UNSUPPORTED, "sj_sample_rows: cols = 2147483648 is more than INT32_MAX",    \
      a->vocab = P(31); return sample(a))                                                                 \
    X(sample_cols_0, INVALID_ARG, "sj_sample_rows: cols = 0 but rows = 4: no token to draw",              \
      a->vocab = 0; return sample(a))                                                                     \
    X(sample_logits_null, INVALID_ARG, "sj_sample_rows: logits.data is NULL", a->x.data = NULL;           \
      return sample(a))                                                                                   \
    X(sample_logits_stride_short, INVALID_ARG, "sj_sample_rows: logits.stride = 8 is less than the row",  \
      a->x.stride = 8; return sample(a))                                                                  \
    X(sample_params_null, INVALID_ARG, "sj_sample_rows: params is NULL", a->sample_params = NULL;         \
      return sample(a))                                                                                   \
    X(sample_steps_null, INVALID_ARG, "sj_sample_rows: steps is NULL", a->sample_steps = NULL;            \
      return sample(a))                                                                                   \
    X(sample_out_null, INVALID_ARG, "sj_sample_rows: out is NULL", a->argmax_out = NULL; return sample(a)) \
    /* f32 vectors and the bias */                                                                        \
    X(neg_exp_ctx_null, INVALID_ARG, "sj_neg_exp_f32: ctx is NULL", a->ctx = NULL; return neg_exp(a))    \
    X(neg_exp_x_null, INVALID_ARG, "sj_neg_exp_f32: x is NULL", a->fa = NULL; return neg_exp(a))         \
    X(neg_exp_y_null, INVALID_ARG, "sj_neg_exp_f32: y is NULL", a->fy = NULL; return neg_exp(a))         \
    X(neg_exp_n_negative, INVALID_ARG, "sj_neg_exp_f32: n = -1 is negative", a->n = -1; return neg_exp(a)) \
    X(neg_exp_n_overflow, UNSUPPORTED, "sj_neg_exp_f32: n is too large", a->n = P(61); return neg_exp(a)) \
    X(mul_ctx_null, INVALID_ARG, "sj_mul_f32: ctx is NULL", a->ctx = NULL; return mul(a))                 \
    X(mul_a_null, INVALID_ARG, "sj_mul_f32: a is NULL", a->fa = NULL; return mul(a))                      \
    X(mul_b_null, INVALID_ARG, "sj_mul_f32: b is NULL", a->fb = NULL; return mul(a))                      \
    X(mul_y_null, INVALID_ARG, "sj_mul_f32: y is NULL", a->fy = NULL; return mul(a))                      \
    X(mul_n_negative, INVALID_ARG, "sj_mul_f32: n = -5 is negative", a->n = -5; return mul(a))            \
    X(conv_state_ctx_null, INVALID_ARG, "sj_conv_state_fill: ctx is NULL", a->ctx = NULL;                  \
      return conv_state(a, 4))                                                                            \
    X(conv_state_dtype_unknown, INVALID_ARG, "sj_conv_state_fill: dtype = 3 is not a known dtype",        \
      a->dtype = (ssmjit_dtype)3; return conv_state(a, 4))                                                \
    X(conv_state_width_high, INVALID_ARG, "sj_conv_state_fill: W = 9 is outside 2..8", return conv_state(a, 9)) \
    X(conv_state_width_low, INVALID_ARG, "sj_conv_state_fill: W = 1 is outside 2..8", return conv_state(a, 1)) \
    X(conv_state_dim_negative, INVALID_ARG, "sj_conv_state_fill: D = -1 is negative", a->d = -1;          \
      return conv_state(a, 4))                                                                            \
    X(conv_state_x_null, INVALID_ARG, "sj_conv_state_fill: x.data is NULL", a->x.data = NULL;             \
      return conv_state(a, 4))                                                                            \
    X(conv_state_x_stride_short, INVALID_ARG, "sj_conv_state_fill: x.stride = 7 is less than the row width 8", \
      a->x.stride = 7; return conv_state(a, 4))                                                           \
    X(conv_state_state_null, INVALID_ARG, "sj_conv_state_fill: state is NULL", a->fy = NULL;              \
      return conv_state(a, 4))                                                                            \
    /* the model */                                                                                       \
    X(model_create_ctx_null, INVALID_ARG, "ssmjit_model_create: ctx is NULL", a->ctx = NULL;               \
      return model_create(a))                                                                             \
    X(model_create_out_null, INVALID_ARG, "ssmjit_model_create: out is NULL",                             \
      return ssmjit_model_create(a->ctx, &a->mcfg, NULL, 1, NULL))                                        \
    X(model_create_config_null, INVALID_ARG, "ssmjit_model_create: config is NULL",                       \
      ssmjit_model *m = NULL; return ssmjit_model_create(a->ctx, NULL, NULL, 1, &m))                      \
    X(model_create_config_size, INVALID_ARG, "config->struct_size = 0, not the", a->mcfg.struct_size = 0;  \
      return model_create(a))                                                                             \
    X(model_create_d_state_0, INVALID_ARG, "config->d_state = 0 is outside 1..256", a->mcfg.d_state = 0;   \
      return model_create(a))                                                                             \
    X(model_create_d_state_257, INVALID_ARG, "config->d_state = 257 is outside 1..256",                   \
      a->mcfg.d_state = 257; return model_create(a))                                                      \
    X(model_create_d_conv_9, INVALID_ARG, "config->d_conv = 9 is outside 2..8", a->mcfg.d_conv = 9;        \
      return model_create(a))                                                                             \
    X(model_create_layers_negative, INVALID_ARG, "config->n_layer = -1 is outside", a->mcfg.n_layer = -1;  \
      return model_create(a))                                                                             \
    X(model_create_vocab_past_int, INVALID_ARG, "config->vocab_size = 2147483648 is outside",              \
      a->mcfg.vocab_size = P(31); return model_create(a))                                                 \
    X(model_create_eps_nan, INVALID_ARG, "config->norm_eps = nan must be finite", a->mcfg.norm_eps = NAN;  \
      return model_create(a))                                                                             \
    X(model_create_sizes_overflow, UNSUPPORTED, "config->vocab_size * d_model is too large",              \
      a->mcfg.vocab_size = P(31) - 1; a->mcfg.d_model = P(31) - 1; return model_create(a))                \
    X(model_create_opts_size, INVALID_ARG, "opts->struct_size = 0", a->mopts.struct_size = 0;             \
      return model_create(a))                                                                             \
    X(model_create_opts_dtype, INVALID_ARG, "opts->dtype = 3 is not a known dtype",                       \
      a->mopts.dtype = (ssmjit_dtype)3; return model_create(a))                                           \
    X(model_create_opts_prepare, INVALID_ARG, "opts->prepare = 3 is not a ssmjit_model_prepare",         \
      a->mopts.prepare = (ssmjit_model_prepare)3; return model_create(a))                                 \
    X(model_create_opts_max_batch, INVALID_ARG, "opts->max_batch = -1 is negative (0: any)",             \
      a->mopts.max_batch = -1; return model_create(a))                                                    \
    X(model_create_opts_max_tokens, INVALID_ARG, "opts->max_tokens = -2 is negative (0: any)",           \
      a->mopts.max_tokens = -2; return model_create(a))                                                   \
    X(model_load_ctx_null, INVALID_ARG, "ssmjit_model_load: ctx is NULL", a->ctx = NULL;                  \
      return model_load(a, a->cache_dir))                                                                 \
    X(model_load_path_null, INVALID_ARG, "ssmjit_model_load: path is NULL", return model_load(a, NULL))    \
    X(model_load_out_null, INVALID_ARG, "ssmjit_model_load: out is NULL",                                 \
      return ssmjit_model_load(a->ctx, a->cache_dir, NULL, NULL))                                         \
    X(model_load_empty_dir, IO, "model.safetensors.index.json", return model_load(a, a->cache_dir))       \
    X(model_get_config_null, INVALID_ARG, "ssmjit_model_get_config: model is NULL",                       \
      return model_calls_null(a, 0))                                                                      \
    X(model_tensor_null, INVALID_ARG, "ssmjit_model_tensor: model is NULL", return model_calls_null(a, 1)) \
    X(model_tensor_at_null, INVALID_ARG, "ssmjit_model_tensor_at: model is NULL",                         \
      return model_calls_null(a, 2))                                                                      \
    X(model_bind_null, INVALID_ARG, "ssmjit_model_bind_tensor: model is NULL", return model_calls_null(a, 3)) \
    X(model_workspace_null, INVALID_ARG, "ssmjit_model_workspace_size: model is NULL",                    \
      return model_calls_null(a, 4))                                                                      \
    X(model_forward_null, INVALID_ARG, "ssmjit_model_forward: model is NULL", return model_calls_null(a, 5)) \
    X(model_backward_null, INVALID_ARG, "ssmjit_model_backward: model is NULL",                           \
      return model_calls_null(a, 6))                                                                      \
    X(model_step_null, INVALID_ARG, "ssmjit_model_step: model is NULL", return model_calls_null(a, 7))     \
    X(model_step_workspace_null, INVALID_ARG, "ssmjit_model_step_workspace_size: model is NULL",           \
      return model_calls_null(a, 8))

typedef struct bad_row {
    const char *name;
    ssmjit_status (*call)(args *a);
    ssmjit_status want;
    const char *message;
} bad_row;

#define THUNK(name, status, message, ...)   \
    static ssmjit_status name(args *a)      \
    {                                       \
        (void)a;                            \
        __VA_ARGS__;                        \
    }
BAD_INPUT(THUNK)

#define ROW(name, status, message, ...) {#name, name, SSMJIT_ERR_##status, message},
static const bad_row rows[] = {BAD_INPUT(ROW)};

/* ------------------------------------------------------------------------ */
/* Running the table                                                        */
/* ------------------------------------------------------------------------ */

typedef struct fixture {
    ssmjit_context *ctx;
    char *cache_dir;
    char long_dir[PATH_MAX + 100];
} fixture;

/* A context as ssmjit_context_create would make it for an H100, minus the
 * driver: every driver entry point is missing, and its modules count as
 * loaded so that no kernel is compiled. */
static ssmjit_context *stand_in_context(void)
{
    static char loaded;
    ssmjit_context *ctx = gu_stand_in_context();
    /* fn set, module left NULL: nothing for destroy to unload */
    for (size_t u = 0; u < SJ_UNIT_COUNT; u++)
        for (int f = 0; f < 2; f++)
            atomic_store(&ctx->units[u][f].fn, (CUfunction)(void *)&loaded);
    return ctx;
}

static int setup(void **state)
{
    /* The options' own values must be what is tested, not the caller's. */
    static const char *const env[] = {"SSMJIT_CACHE", "SSMJIT_ARCH", "SSMJIT_FAST_MATH",
                                      "SSMJIT_DETERMINISTIC"};
    for (size_t i = 0; i < sizeof env / sizeof *env; i++)
        unsetenv(env[i]);
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->ctx = stand_in_context();
    f->cache_dir = tu_mkdtemp();
    memset(f->long_dir, 'd', sizeof f->long_dir - 1);
    memcpy(f->long_dir, "/tmp/", 5);
    memset(device_mem, POISON, sizeof device_mem);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ssmjit_context_destroy(f->ctx);
    tu_rmtree(f->cache_dir);
    free(f->cache_dir);
    free(f);
    return 0;
}

/* `text` contains the parts of `pattern` between '*'s, in order. */
static int matches(const char *text, const char *pattern)
{
    char part[256];
    while (*pattern) {
        size_t len = strcspn(pattern, "*");
        assert_true(len < sizeof part);
        memcpy(part, pattern, len);
        part[len] = '\0';
        const char *at = strstr(text, part);
        if (!at)
            return 0;
        text = at + len;
        pattern += len + (pattern[len] == '*');
    }
    return 1;
}

/* Nonzero if the directory is not empty; it is emptied then, so that the
 * next row is judged on its own. */
static int dir_written(const char *path)
{
    const int n = tu_dir_entries(path);
    if (n) {
        tu_rmtree(path);
        assert_int_equal(mkdir(path, 0700), 0);
    }
    return n;
}

/* Runs one row; returns 0 if it holds, else prints why not. */
static int check_row(fixture *f, const bad_row *r)
{
    static unsigned char mem_before[sizeof device_mem];
    outputs out, poisoned;
    memset(&out, POISON, sizeof out);
    memset(&poisoned, POISON, sizeof poisoned);
    memcpy(mem_before, device_mem, sizeof device_mem);
    args a = base_args(f->ctx, &out, f->cache_dir, f->long_dir);

    ssmjit_status got = r->call(&a);
    const char *msg = ssmjit_last_error();
    const int dir_changed = dir_written(f->cache_dir);
    const char *why = NULL;
    if (got != r->want)
        why = "wrong status";
    else if (!matches(msg, r->message))
        why = "wrong message";
    else if (memcmp(&out, &poisoned, sizeof out))
        why = "host outputs written";
    else if (memcmp(device_mem, mem_before, sizeof device_mem))
        why = "device memory written";
    else if (dir_changed)
        why = "cache directory written";
    if (!why)
        return 0;
    print_error("%s: %s: got %s \"%s\", want %s \"%s\"\n", r->name, why, ssmjit_status_string(got), msg,
                ssmjit_status_string(r->want), r->message);
    return 1;
}

static void test_table(void **state)
{
    fixture *f = *state;
    int failed = 0;
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        failed += check_row(f, &rows[i]);
    print_message("%zu rows, %d failed\n", sizeof rows / sizeof *rows, failed);
    assert_int_equal(failed, 0);
}

/* Without this the rows would prove nothing: each op, given the table's
 * unchanged arguments, passes every check and gets to its first driver
 * call (the workspace queries answer). */
static void test_valid_base_arguments(void **state)
{
    fixture *f = *state;
    static const struct {
        const char *name;
        ssmjit_status (*call)(args *a);
        int answers; /* a query that returns SSMJIT_OK and writes *bytes */
    } ops[] = {
        {"act_fwd", act_fwd, 0},         {"act_bwd", act_bwd, 0},         {"gate_fwd", gate_fwd, 0},
        {"gate_bwd", gate_bwd, 0},       {"norm_fwd", norm_fwd, 0},       {"norm_ws", norm_ws, 1},
        {"norm_bwd", norm_bwd, 0},       {"conv_fwd", conv_fwd, 0},       {"conv_ws", conv_ws, 1},
        {"conv_bwd", conv_bwd, 0},       {"conv_update", conv_update, 0}, {"scan_fwd", scan_fwd, 0},
        {"conv_fwd_window", conv_fwd_window, 0}, {"conv_bwd_window", conv_bwd_window, 0},
        {"conv_update_window", conv_update_window, 0},
        {"scan_fwd_window", scan_fwd_window, 0}, {"scan_bwd_window", scan_bwd_window, 0},
        {"scan_fwd_ws", scan_fwd_ws, 1}, {"scan_bwd_ws", scan_bwd_ws, 1}, {"scan_bwd", scan_bwd, 0},
        {"state_update", state_update, 0}, {"gemm", gemm, 0},             {"gemm_k0", gemm_k0, 0},
        {"state_update", state_update, 0}, {"embed_fwd", embed_fwd, 0},     {"embed_bwd", embed_bwd, 0},
        {"xent", xent, 0},               {"argmax", argmax, 0},           {"sample", sample, 0},
        {"neg_exp", neg_exp, 0},
        {"mul", mul, 0},                 {"conv_state_fill", conv_state4, 0},
        {"scan_ckpt_size", scan_ckpt_size, 1}, {"scan_fwd_split_room", scan_fwd_split_room, 0},
        {"scan_bwd_split", scan_bwd_split, 0},
    };
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        outputs out;
        memset(&out, POISON, sizeof out);
        args a = base_args(f->ctx, &out, f->cache_dir, f->long_dir);
        ssmjit_status got = ops[i].call(&a);
        if (ops[i].answers) {
            if (got != SSMJIT_OK)
                fail_msg("%s: %s \"%s\"", ops[i].name, ssmjit_status_string(got), ssmjit_last_error());
            size_t poison;
            memset(&poison, POISON, sizeof poison);
            assert_true(out.bytes != poison);
        } else if (got != SSMJIT_ERR_UNSUPPORTED || !strstr(ssmjit_last_error(), "driver has no cu")) {
            fail_msg("%s: %s \"%s\", expected the stand-in's missing driver", ops[i].name,
                     ssmjit_status_string(got), ssmjit_last_error());
        }
    }
    /* The host half of the embedding gradient answers: ids 3, 1, 3, 0. */
    outputs out;
    args a = base_args(f->ctx, &out, f->cache_dir, f->long_dir);
    assert_int_equal(embed_plan(&a), SSMJIT_OK);
    assert_int_equal(out.nseg, 3);
}

/* Functions without a status: their answer for bad input. */
static void test_values_for_bad_input(void **state)
{
    (void)state;
    assert_string_equal(ssmjit_status_string((ssmjit_status)-1), "SSMJIT_UNKNOWN_STATUS");
    assert_string_equal(ssmjit_status_string((ssmjit_status)(SSMJIT_ERR_CUBLAS_NOT_FOUND + 1)), "SSMJIT_UNKNOWN_STATUS");
    assert_int_equal(ssmjit_dtype_size((ssmjit_dtype)3), 0);
    assert_int_equal(ssmjit_dtype_size((ssmjit_dtype)-1), 0);
    assert_null(ssmjit_module_name(ssmjit_module_count()));
    assert_null(ssmjit_module_name(SIZE_MAX));
    assert_null(ssmjit_unit_name(ssmjit_unit_count()));
    assert_null(ssmjit_unit_name(SIZE_MAX));
    assert_true(ssmjit_unit_module(ssmjit_unit_count()) == (size_t)-1);
    assert_true(ssmjit_unit_module(SIZE_MAX) == (size_t)-1);
    assert_int_equal(ssmjit_unit_default_fast_math(ssmjit_unit_count()), -1);
    assert_int_equal(ssmjit_unit_default_fast_math(SIZE_MAX), -1);
    assert_int_equal(ssmjit_unit_specialised(ssmjit_unit_count()), -1);
    assert_int_equal(ssmjit_unit_specialised(SIZE_MAX), -1);
    /* documented no-ops */
    ssmjit_context_options_init(NULL);
    ssmjit_prewarm_options_init(NULL);
    ssmjit_context_destroy(NULL);
}

/* A launch, chained or not, that asks more shared memory a block than
 * the device allows fails with a message, before the driver is called
 * (the stand-in has none); up to the limit it goes on to the driver. */
static void test_launch_above_shared_memory(void **state)
{
    fixture *f = *state;
    const sj_dim3 one = {1, 1, 1};
    const unsigned cap = (unsigned)f->ctx->props.max_smem_per_block_optin;
    assert_int_equal(sj_launch(f->ctx, NULL, one, one, cap + 1, NULL, NULL), SSMJIT_ERR_UNSUPPORTED);
    assert_non_null(strstr(ssmjit_last_error(), "shared memory"));
    assert_int_equal(sj_launch(f->ctx, NULL, one, one, cap, NULL, NULL), SSMJIT_ERR_UNSUPPORTED);
    assert_non_null(strstr(ssmjit_last_error(), "driver has no cu"));
    assert_int_equal(sj_launch_chained(f->ctx, NULL, one, one, cap + 1, NULL, NULL), SSMJIT_ERR_UNSUPPORTED);
    assert_non_null(strstr(ssmjit_last_error(), "shared memory"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_for_bad_input),
        cmocka_unit_test(test_launch_above_shared_memory),
        cmocka_unit_test(test_valid_base_arguments),
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
