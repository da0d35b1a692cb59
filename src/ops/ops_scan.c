/* Selective scan ops (modules "scan_fwd", "scan_bwd", "state_update"):
 * the public calls and their argument checks.  Shapes, workspace layout
 * and launches are scan_launch.c; the split over L is scan_split.c. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "engine/kernel.h"
#include "scan_internal.h"
#include "validate.h"

/* Mirror of struct sj_update_params in kernels_src/state_update.cu. */
typedef struct sj_update_params {
    uint64_t x, dt, z, B, C;
    int64_t sx, sdt, sz, sB, sC;
    uint64_t A, Dv, dt_bias, state, out;
    int64_t sout;
    int64_t batch, D, N, softplus, log2G, vec4;
} sj_update_params;
_Static_assert(sizeof(sj_update_params) == 22 * 8, "layout of sj_update_params in state_update.cu");


/* ------------------------------------------------------------------------ */
/* Checks                                                                   */
/* ------------------------------------------------------------------------ */

static ssmjit_status check_dstate(const char *op, int64_t n)
{
    SJ_FAIL_IF(n < 1 || n > SJ_SCAN_MAX_N, SSMJIT_ERR_INVALID_ARG, "%s: desc->dstate = %lld is outside 1..%d", op,
               (long long)n, SJ_SCAN_MAX_N);
    return SSMJIT_OK;
}

/* The descriptor, all that the size queries have: its extents into sh
 * (the activations zero). */
static ssmjit_status check_desc(const char *op, const ssmjit_selective_scan_desc *desc, sj_scan_extents *sh)
{
    SJ_CHECK_STRUCT(op, "desc", desc, ssmjit_selective_scan_desc);
    SJ_TRY(sj_check_dtype(desc->dtype, op, "desc->dtype"));
    SJ_TRY(sj_check_extent(desc->batch, op, "desc->batch"));
    SJ_TRY(sj_check_extent(desc->seqlen, op, "desc->seqlen"));
    SJ_TRY(sj_check_extent(desc->dim, op, "desc->dim"));
    SJ_TRY(check_dstate(op, desc->dstate));
    memset(sh, 0, sizeof *sh);
    sh->B = desc->batch;
    sh->L = desc->seqlen;
    sh->D = desc->dim;
    sh->N = desc->dstate;
    sh->S = sh->B;
    SJ_FAIL_IF(desc->num_seqs < 0 || desc->num_seqs > INT32_MAX - 1, SSMJIT_ERR_INVALID_ARG,
               "%s: desc->num_seqs = %lld is outside 0..2^31-2", op, (long long)desc->num_seqs);
    if (desc->num_seqs >= 1) {
        SJ_FAIL_IF(desc->batch != 1, SSMJIT_ERR_INVALID_ARG,
                   "%s: desc->batch = %lld must be 1 with packed sequences (desc->num_seqs = %lld)", op,
                   (long long)desc->batch, (long long)desc->num_seqs);
        sh->S = desc->num_seqs;
    }
    SJ_FAIL_IF(sh->B > SJ_SCAN_MAX_BATCH, SSMJIT_ERR_UNSUPPORTED, "%s: desc->batch = %lld is above %d", op,
               (long long)sh->B, SJ_SCAN_MAX_BATCH);
    SJ_FAIL_IF(sh->D > INT32_MAX, SSMJIT_ERR_UNSUPPORTED, "%s: desc->dim = %lld is above 2^31-1", op,
               (long long)sh->D);
    SJ_FAIL_IF(desc->num_seqs >= 1 && sh->L > INT32_MAX, SSMJIT_ERR_UNSUPPORTED,
               "%s: desc->seqlen = %lld does not fit int32 cu_seqlens", op, (long long)sh->L);
    sh->active = sh->B > 0 && sh->L > 0 && sh->D > 0;
    SJ_TRY(sj_check_size(sh->S + 1, sh->D, sh->N, op, "the state extent S * D * N"));
    /* In bytes, since the sum of the parts must not wrap: per token, the
     * checkpoint (a state every SJ_SCAN_CHUNK tokens) and the backward's
     * dB/dC partials and accumulators.  With B, D and N bounded above,
     * the per-segment parts cannot take the total past 2^63. */
    const int64_t token_bytes = 4 * (sj_ceil_div(sh->D * sh->N, SJ_SCAN_CHUNK) + sj_ceil_div(sh->D, SJ_SCAN_BWD_BD) * 2 * sh->N +
                                     3 * sh->D + 64);
    SJ_TRY(sj_check_size(sh->B, sh->L, token_bytes, op, "the backward workspace"));
    sh->nch = sj_ceil_div(sh->L, SJ_SCAN_CHUNK);
    return SSMJIT_OK;
}

/* One [B, L, width] activation `name` of the call sh describes, required
 * (where there are tokens) or optional, resolved into *out. */
static ssmjit_status check_act(const char *op, const char *name, const ssmjit_matrix *m, ssmjit_dtype dtype,
                               sj_scan_extents *sh, int64_t width, int required, ssmjit_matrix *out)
{
    SJ_TRY(sj_check_matrix(op, name, m, ssmjit_dtype_size(dtype), sh->B, sh->L, width,
                           required && sh->active ? SJ_MATRIX_REQUIRED : 0, out));
    /* The kernels address token t of batch row b as (b pitch + t) stride,
     * one pitch for every tensor: each is a window of the same longer
     * sequences, or none is.  An absent optional one has no say. */
    if (sh->B > 1 && out->stride > 0 && out->data) {
        const int64_t pitch = out->batch_stride / out->stride;
        SJ_FAIL_IF(pitch * out->stride != out->batch_stride || (sh->pitch && pitch != sh->pitch),
                   SSMJIT_ERR_UNSUPPORTED,
                   "%s: %s.batch_stride = %lld is not %lld tokens of its stride %lld: the scan's activations "
                   "must all be windows of one token pitch",
                   op, name, (long long)out->batch_stride, (long long)(sh->pitch ? sh->pitch : sh->L),
                   (long long)out->stride);
        sh->pitch = pitch;
    }
    return SSMJIT_OK;
}

/* The inputs, which the forward and the backward both take. */
static ssmjit_status check_inputs(const char *op, const ssmjit_selective_scan_desc *desc,
                                  const ssmjit_selective_scan_inputs *in, sj_scan_extents *sh)
{
    const ssmjit_dtype dt = desc->dtype;
    SJ_TRY(check_act(op, "args->in.u", &in->u, dt, sh, sh->D, 1, &sh->m.u));
    SJ_TRY(check_act(op, "args->in.delta", &in->delta, dt, sh, sh->D, 1, &sh->m.delta));
    SJ_TRY(check_act(op, "args->in.B", &in->B, dt, sh, sh->N, 1, &sh->m.B));
    SJ_TRY(check_act(op, "args->in.C", &in->C, dt, sh, sh->N, 1, &sh->m.C));
    SJ_TRY(check_act(op, "args->in.z", &in->z, dt, sh, sh->D, 0, &sh->m.z));
    if (sh->D > 0)
        SJ_TRY(sj_check_ptr(in->A, op, "args->in.A"));
    SJ_FAIL_IF(desc->num_seqs >= 1 && !in->cu_seqlens, SSMJIT_ERR_INVALID_ARG,
               "%s: args->in.cu_seqlens is NULL but desc->num_seqs = %lld", op, (long long)desc->num_seqs);
    SJ_FAIL_IF(desc->num_seqs == 0 && in->cu_seqlens, SSMJIT_ERR_INVALID_ARG,
               "%s: args->in.cu_seqlens is set but desc->num_seqs is 0", op);
    return SSMJIT_OK;
}

/* args->checkpoint: what desc->checkpoint asks for (where there are
 * tokens), and NULL without it. */
static ssmjit_status check_checkpoint(const char *op, const ssmjit_selective_scan_desc *desc,
                                      const sj_scan_extents *sh, const void *checkpoint)
{
    SJ_FAIL_IF(desc->checkpoint && sh->active && !checkpoint, SSMJIT_ERR_INVALID_ARG,
               "%s: args->checkpoint is NULL but desc->checkpoint is set", op);
    SJ_FAIL_IF(!desc->checkpoint && checkpoint, SSMJIT_ERR_INVALID_ARG,
               "%s: args->checkpoint is set but desc->checkpoint is 0", op);
    return SSMJIT_OK;
}

/* ------------------------------------------------------------------------ */
/* Sizes                                                                    */
/* ------------------------------------------------------------------------ */

/* A size query's arguments, desc's extents into sh. */
static ssmjit_status check_query(const char *op, const ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc,
                                 const size_t *bytes, sj_scan_extents *sh)
{
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(sj_check_ptr(bytes, op, "bytes"));
    return check_desc(op, desc, sh);
}

/* The backward's workspace: its layout *w, then where it splits (plan
 * *sp) the split's part at w->total; returns the bytes of both. */
static size_t bwd_workspace(ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc, const sj_scan_extents *sh,
                            sj_scan_bwd_layout *w, sj_scan_split *sp)
{
    *w = sj_scan_bwd_layout_of(desc, sh);
    *sp = sj_scan_split_plan(ctx, desc, sh, 1);
    return w->total + (sp->S > 1 ? sp->bytes : 0);
}

SSMJIT_API ssmjit_status ssmjit_selective_scan_checkpoint_size(ssmjit_context *ctx,
                                                               const ssmjit_selective_scan_desc *desc, size_t *bytes)
{
    sj_scan_extents sh;
    SJ_TRY(check_query("ssmjit_selective_scan_checkpoint_size", ctx, desc, bytes, &sh));
    *bytes = sj_scan_checkpoint_bytes(&sh);
    return SSMJIT_OK;
}

SSMJIT_API ssmjit_status ssmjit_selective_scan_fwd_workspace_size(ssmjit_context *ctx,
                                                                  const ssmjit_selective_scan_desc *desc,
                                                                  size_t *bytes)
{
    sj_scan_extents sh;
    SJ_TRY(check_query("ssmjit_selective_scan_fwd_workspace_size", ctx, desc, bytes, &sh));
    const sj_scan_split sp = sj_scan_split_plan(ctx, desc, &sh, 0);
    *bytes = sp.S > 1 ? sp.bytes : 0;
    return SSMJIT_OK;
}

SSMJIT_API ssmjit_status ssmjit_selective_scan_bwd_workspace_size(ssmjit_context *ctx,
                                                                  const ssmjit_selective_scan_desc *desc,
                                                                  size_t *bytes)
{
    sj_scan_extents sh;
    SJ_TRY(check_query("ssmjit_selective_scan_bwd_workspace_size", ctx, desc, bytes, &sh));
    sj_scan_bwd_layout w;
    sj_scan_split sp;
    *bytes = sh.D > 0 ? bwd_workspace(ctx, desc, &sh, &w, &sp) : 0;
    return SSMJIT_OK;
}

/* ------------------------------------------------------------------------ */
/* Forward                                                                  */
/* ------------------------------------------------------------------------ */

SSMJIT_API ssmjit_status ssmjit_selective_scan_fwd(ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc,
                                                   const ssmjit_selective_scan_fwd_args *args, void *stream)
{
    const char *op = "ssmjit_selective_scan_fwd";
    const ssmjit_selective_scan_fwd_args *a = args;
    sj_scan_extents sh;
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(check_desc(op, desc, &sh));
    SJ_CHECK_STRUCT(op, "args", a, ssmjit_selective_scan_fwd_args);
    SJ_TRY(check_inputs(op, desc, &a->in, &sh));
    SJ_TRY(check_act(op, "args->y", &a->y, desc->dtype, &sh, sh.D, 1, &sh.m.y));
    SJ_TRY(check_checkpoint(op, desc, &sh, a->checkpoint));
    /* Without tokens only the final states (= initial states) remain. */
    if (sh.D == 0 || sh.B == 0 || (!sh.active && !a->final_state))
        return SSMJIT_OK;
    sj_scan_split sp;
    SJ_TRY(sj_scan_fwd_split_given(ctx, desc, a, &sh, op, &sp));
    sj_scan_stream ss = {stream, 0};
    if (sp.S > 1)
        return sj_scan_fwd_split(ctx, desc, a, &sh, &sp, &ss);
    sj_scan_params p = sj_scan_params_of(desc, &a->in, &sh);
    p.y = sj_dptr(sh.m.y.data);
    p.sy = sh.m.y.stride;
    p.final_state = sj_dptr(a->final_state);
    p.ckpt = sj_dptr(a->checkpoint);
    if (sj_scan_fwd_token_parallel(ctx, &sh, desc->num_seqs >= 1))
        return sj_scan_launch_fwd_tp(ctx, desc->dtype, &sh, &p, &ss);
    return sj_scan_launch_fwd(ctx, desc->dtype, &sh, &p, &ss);
}

/* ------------------------------------------------------------------------ */
/* Backward                                                                 */
/* ------------------------------------------------------------------------ */

/* A gradient pointer is required exactly when its input was given. */
static ssmjit_status check_paired(const char *op, const void *input, const void *grad, const char *input_name,
                                  const char *grad_name)
{
    SJ_FAIL_IF(input && !grad, SSMJIT_ERR_INVALID_ARG, "%s: %s is NULL but %s is given", op, grad_name, input_name);
    SJ_FAIL_IF(!input && grad, SSMJIT_ERR_INVALID_ARG, "%s: %s is set but %s is absent", op, grad_name, input_name);
    return SSMJIT_OK;
}

/* The backward's gradients, resolved into sh. */
static ssmjit_status check_grads(const char *op, const ssmjit_selective_scan_desc *desc,
                                 const ssmjit_selective_scan_bwd_args *a, sj_scan_extents *sh)
{
    const ssmjit_dtype dt = desc->dtype;
    SJ_TRY(check_act(op, "args->dy", &a->dy, dt, sh, sh->D, 1, &sh->m.dy));
    SJ_TRY(check_act(op, "args->du", &a->du, dt, sh, sh->D, 1, &sh->m.du));
    SJ_TRY(check_act(op, "args->ddelta", &a->ddelta, dt, sh, sh->D, 1, &sh->m.ddelta));
    SJ_TRY(check_act(op, "args->dB", &a->dB, dt, sh, sh->N, 1, &sh->m.dB));
    SJ_TRY(check_act(op, "args->dC", &a->dC, dt, sh, sh->N, 1, &sh->m.dC));
    SJ_TRY(check_act(op, "args->dz", &a->dz, dt, sh, sh->D, 0, &sh->m.dz));
    if (sh->D > 0)
        SJ_TRY(sj_check_ptr(a->dA, op, "args->dA"));
    if (sh->active)
        SJ_TRY(check_paired(op, a->in.z.data, a->dz.data, "args->in.z", "args->dz.data"));
    SJ_TRY(check_paired(op, a->in.D, a->dD, "args->in.D", "args->dD"));
    SJ_TRY(check_paired(op, a->in.delta_bias, a->ddelta_bias, "args->in.delta_bias", "args->ddelta_bias"));
    SJ_TRY(check_paired(op, a->in.initial_state, a->d_initial_state, "args->in.initial_state",
                        "args->d_initial_state"));
    return SSMJIT_OK;
}

/* Queues the kernels a backward call launches, so that on a first call
 * their compiles overlap (the call then waits for the slowest, not for
 * their sum): the scan, its reductions, the checkpoint's rebuild when
 * there is none, the split's kernels when it splits. */
static ssmjit_status request_bwd_kernels(ssmjit_context *ctx, ssmjit_dtype dtype, int states, int split)
{
    const char *sfx = sj_dtype_suffix(dtype);
    char names[8][48];
    const char *list[8];
    size_t n = 0;
    snprintf(names[n++], sizeof names[0], "scan_bwd_%s", sfx);
    snprintf(names[n++], sizeof names[0], "scan_bwd_reduce_bc_%s", sfx);
    snprintf(names[n++], sizeof names[0], "scan_bwd_reduce_params");
    if (states)
        snprintf(names[n++], sizeof names[0], "scan_states_ns8_%s", sfx);
    if (split) {
        snprintf(names[n++], sizeof names[0], "scan_split_starts");
        snprintf(names[n++], sizeof names[0], "scan_split_ends_%s", sfx);
        snprintf(names[n++], sizeof names[0], "scan_split_carry");
    }
    for (size_t i = 0; i < n; i++)
        list[i] = names[i];
    return sj_kernels_request(ctx, SJ_MODULE_SCAN_BWD, SJ_ROLE_BACKWARD, list, n);
}

SSMJIT_API ssmjit_status ssmjit_selective_scan_bwd(ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc,
                                                   const ssmjit_selective_scan_bwd_args *args, void *stream)
{
    const char *op = "ssmjit_selective_scan_bwd";
    const ssmjit_selective_scan_bwd_args *a = args;
    sj_scan_extents sh;
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(check_desc(op, desc, &sh));
    SJ_CHECK_STRUCT(op, "args", a, ssmjit_selective_scan_bwd_args);
    SJ_TRY(check_inputs(op, desc, &a->in, &sh));
    SJ_TRY(check_checkpoint(op, desc, &sh, a->checkpoint));
    SJ_TRY(check_grads(op, desc, a, &sh));
    if (sh.D == 0)
        return SSMJIT_OK;
    sj_scan_bwd_layout w;
    sj_scan_split sp;
    const size_t total = bwd_workspace(ctx, desc, &sh, &w, &sp);
    SJ_TRY(sj_check_ptr(a->workspace, op, "args->workspace"));
    SJ_FAIL_IF((uintptr_t)a->workspace % sizeof(float), SSMJIT_ERR_INVALID_ARG,
               "%s: args->workspace is not 4-byte aligned", op);
    SJ_FAIL_IF(a->workspace_bytes < total, SSMJIT_ERR_INVALID_ARG,
               "%s: args->workspace_bytes = %zu is below the %zu bytes required", op, a->workspace_bytes, total);
    char *ws = a->workspace;
    sj_scan_stream ss = {stream, 0};
    if (sh.B > 0) {
        SJ_TRY(request_bwd_kernels(ctx, desc->dtype, !desc->checkpoint && sh.nch > 1, sp.S > 1));
        sj_scan_params p = sj_scan_params_of(desc, &a->in, &sh);
        p.ckpt = desc->checkpoint ? sj_dptr(a->checkpoint) : sj_dptr(ws + w.ckpt);
        if (!desc->checkpoint && sh.nch > 1)
            SJ_TRY(sj_scan_launch_states(ctx, desc->dtype, &sh, &p, &ss));
        p.dy = sj_dptr(sh.m.dy.data);
        p.sdy = sh.m.dy.stride;
        p.dfinal = sj_dptr(a->d_final_state);
        p.du = sj_dptr(sh.m.du.data);
        p.sdu = sh.m.du.stride;
        p.ddelta = sj_dptr(sh.m.ddelta.data);
        p.sddelta = sh.m.ddelta.stride;
        p.dz = sj_dptr(sh.m.dz.data);
        p.sdz = sh.m.dz.stride;
        p.dinit = sj_dptr(a->d_initial_state);
        if (sp.S > 1)
            return sj_scan_bwd_split(ctx, desc, a, &sh, &p, ws, &w, &sp, ws + w.total, &ss);
        p.ws_dA = sj_dptr(ws + w.dA);
        p.ws_dD = sj_dptr(ws + w.dD);
        p.ws_db = sj_dptr(ws + w.db);
        SJ_TRY(sj_scan_bwd_rows(ctx, desc->dtype, &sh, &p, ws, &w, sj_dptr(sh.m.dB.data), sh.m.dB.stride,
                                sj_dptr(sh.m.dC.data), sh.m.dC.stride, &ss));
    }
    return sj_scan_reduce_params(ctx, a, &sh, sh.B, ws + w.dA, ws + w.dD, ws + w.db, &ss);
}

/* ------------------------------------------------------------------------ */
/* Decode step                                                              */
/* ------------------------------------------------------------------------ */

SSMJIT_API ssmjit_status ssmjit_selective_state_update(ssmjit_context *ctx, const ssmjit_state_update_desc *desc,
                                                       const ssmjit_state_update_args *args, void *stream)
{
    const char *op = "ssmjit_selective_state_update";
    const ssmjit_state_update_args *a = args;
    SJ_TRY(sj_check_context(ctx, op));
    SJ_CHECK_STRUCT(op, "desc", desc, ssmjit_state_update_desc);
    SJ_TRY(sj_check_dtype(desc->dtype, op, "desc->dtype"));
    SJ_TRY(sj_check_extent(desc->batch, op, "desc->batch"));
    SJ_TRY(sj_check_extent(desc->dim, op, "desc->dim"));
    SJ_TRY(check_dstate(op, desc->dstate));
    SJ_CHECK_STRUCT(op, "args", a, ssmjit_state_update_args);
    const int64_t B = desc->batch, D = desc->dim, N = desc->dstate;
    const int act = B > 0 && D > 0;
    const size_t es = ssmjit_dtype_size(desc->dtype);
    /* [B, D] and [B, N]: rows of a [rows, width] view */
    const int req = SJ_MATRIX_ROWS | (act ? SJ_MATRIX_REQUIRED : 0);
    ssmjit_matrix x, dt, Bm, Cm, z, out;
    SJ_TRY(sj_check_matrix(op, "args->x", &a->x, es, 1, B, D, req, &x));
    SJ_TRY(sj_check_matrix(op, "args->dt", &a->dt, es, 1, B, D, req, &dt));
    SJ_TRY(sj_check_matrix(op, "args->B", &a->B, es, 1, B, N, req, &Bm));
    SJ_TRY(sj_check_matrix(op, "args->C", &a->C, es, 1, B, N, req, &Cm));
    SJ_TRY(sj_check_matrix(op, "args->z", &a->z, es, 1, B, D, SJ_MATRIX_ROWS, &z));
    SJ_TRY(sj_check_matrix(op, "args->out", &a->out, es, 1, B, D, req, &out));
    SJ_TRY(sj_check_size(B, D, N * 32, op, "the state extent B * D * N"));
    if (!act)
        return SSMJIT_OK;
    SJ_TRY(sj_check_ptr(a->A, op, "args->A"));
    SJ_TRY(sj_check_ptr(a->state, op, "args->state"));

    sj_update_params p = {0};
    p.sx = x.stride;
    p.sdt = dt.stride;
    p.sB = Bm.stride;
    p.sC = Cm.stride;
    p.sz = z.stride;
    p.sout = out.stride;
    p.x = sj_dptr(a->x.data);
    p.dt = sj_dptr(a->dt.data);
    p.z = sj_dptr(a->z.data);
    p.B = sj_dptr(a->B.data);
    p.C = sj_dptr(a->C.data);
    p.A = sj_dptr(a->A);
    p.Dv = sj_dptr(a->D);
    p.dt_bias = sj_dptr(a->dt_bias);
    p.state = sj_dptr(a->state);
    p.out = sj_dptr(a->out.data);
    p.batch = B;
    p.D = D;
    p.N = N;
    p.softplus = desc->dt_softplus != 0;
    p.vec4 = N % 4 == 0 && p.state % 16 == 0 && p.A % 16 == 0;
    const int64_t per_lane = p.vec4 ? 4 : 1;
    p.log2G = 0;
    while (p.log2G < 5 && ((int64_t)per_lane << p.log2G) < N)
        p.log2G++;
    const int64_t blocks = sj_ceil_div(D << p.log2G, SJ_SCAN_FLAT_THREADS);
    if (blocks > INT32_MAX)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "%s: dim = %lld is too large", op, (long long)D);
    char name[48];
    snprintf(name, sizeof name, "state_update_%s", sj_dtype_suffix(desc->dtype));
    CUfunction fn;
    SJ_TRY(sj_kernel_get(ctx, SJ_MODULE_STATE_UPDATE, SJ_ROLE_FORWARD, name, &fn));
    sj_dim3 grid = {(unsigned)blocks, B < SJ_SCAN_MAX_BATCH ? (unsigned)B : SJ_SCAN_MAX_BATCH, 1};
    sj_dim3 block = {SJ_SCAN_FLAT_THREADS, 1, 1};
    void *kernel_args[] = {&p};
    return sj_launch(ctx, fn, grid, block, 0, stream, kernel_args);
}
