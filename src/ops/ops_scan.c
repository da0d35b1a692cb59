/* Selective scan ops (modules "scan_fwd", "scan_bwd", "state_update"):
 * the public calls and their argument checks.  Shapes, workspace layout
 * and launches are scan_launch.c; the split over L is scan_split.c. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

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
/* Descriptor checks                                                        */
/* ------------------------------------------------------------------------ */

static ssmjit_status check_matrix(const char *op, const char *name, const ssmjit_matrix *m, int64_t width,
                                  int need_data, int64_t *stride)
{
    char what[64];
    if (need_data) {
        snprintf(what, sizeof what, "desc->%s.data", name);
        SJ_TRY(sj_check_ptr(m->data, op, what));
    }
    snprintf(what, sizeof what, "desc->%s.stride", name);
    return sj_resolve_stride(m->stride, width, op, what, stride);
}

static ssmjit_status check_dstate(const char *op, int64_t n)
{
    if (n < 1 || n > SJ_SCAN_MAX_N)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: desc->dstate = %lld is outside 1..%d", op,
                        (long long)n, SJ_SCAN_MAX_N);
    return SSMJIT_OK;
}

/* Checks the whole descriptor of a forward (need_y) or backward. */
static ssmjit_status check_scan(const char *op, const ssmjit_selective_scan_desc *desc, int need_y,
                                sj_scan_extents *sh)
{
    SJ_TRY(sj_check_ptr(desc, op, "desc"));
    SJ_TRY(sj_check_dtype(desc->dtype, op, "desc->dtype"));
    SJ_TRY(sj_check_extent(desc->batch, op, "desc->batch"));
    SJ_TRY(sj_check_extent(desc->seqlen, op, "desc->seqlen"));
    SJ_TRY(sj_check_extent(desc->dim, op, "desc->dim"));
    SJ_TRY(check_dstate(op, desc->dstate));
    sh->B = desc->batch;
    sh->L = desc->seqlen;
    sh->D = desc->dim;
    sh->N = desc->dstate;
    sh->S = sh->B;
    if (desc->cu_seqlens) {
        if (desc->batch != 1)
            return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: desc->batch = %lld must be 1 with cu_seqlens", op,
                            (long long)desc->batch);
        if (desc->num_seqs < 1 || desc->num_seqs > INT32_MAX - 1)
            return sj_error(SSMJIT_ERR_INVALID_ARG,
                            "%s: desc->num_seqs = %lld must be in 1..2^31-2 with cu_seqlens", op,
                            (long long)desc->num_seqs);
        sh->S = desc->num_seqs;
    }
    if (sh->B > SJ_SCAN_MAX_BATCH)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "%s: desc->batch = %lld is above %d", op,
                        (long long)sh->B, SJ_SCAN_MAX_BATCH);
    if (sh->D > INT32_MAX)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "%s: desc->dim = %lld is above 2^31-1", op, (long long)sh->D);
    if (desc->cu_seqlens && sh->L > INT32_MAX)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "%s: desc->seqlen = %lld does not fit int32 cu_seqlens",
                        op, (long long)sh->L);
    sh->active = sh->B > 0 && sh->L > 0 && sh->D > 0;
    const int act = sh->active;
    SJ_TRY(check_matrix(op, "u", &desc->u, sh->D, act, &sh->su));
    SJ_TRY(check_matrix(op, "delta", &desc->delta, sh->D, act, &sh->sdelta));
    SJ_TRY(check_matrix(op, "B", &desc->B, sh->N, act, &sh->sB));
    SJ_TRY(check_matrix(op, "C", &desc->C, sh->N, act, &sh->sC));
    SJ_TRY(check_matrix(op, "z", &desc->z, sh->D, 0, &sh->sz));
    SJ_TRY(check_matrix(op, "y", &desc->y, sh->D, need_y && act, &sh->sy));
    if (sh->D > 0)
        SJ_TRY(sj_check_ptr(desc->A, op, "desc->A"));
    int64_t widest = sh->su;
    const int64_t strides[] = {sh->sdelta, sh->sB, sh->sC, sh->sz, sh->sy};
    for (size_t i = 0; i < sizeof strides / sizeof *strides; i++)
        widest = strides[i] > widest ? strides[i] : widest;
    SJ_TRY(sj_check_size(sh->B, sh->L, widest, op, "the activation extent B * L * stride"));
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

/* ------------------------------------------------------------------------ */
/* Forward                                                                  */
/* ------------------------------------------------------------------------ */

SSMJIT_API ssmjit_status ssmjit_selective_scan_split_size(ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc,
                                                          size_t *bytes)
{
    const char *op = "ssmjit_selective_scan_split_size";
    sj_scan_extents sh;
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(sj_check_ptr(bytes, op, "bytes"));
    SJ_TRY(check_scan(op, desc, 0, &sh));
    const sj_scan_split fwd = sj_scan_split_plan(ctx, desc, &sh, 0), bwd = sj_scan_split_plan(ctx, desc, &sh, 1);
    const size_t f = fwd.S > 1 ? fwd.bytes : 0, b = bwd.S > 1 ? bwd.bytes : 0;
    *bytes = f > b ? f : b;
    return SSMJIT_OK;
}

SSMJIT_API ssmjit_status ssmjit_selective_scan_fwd_workspace_size(const ssmjit_selective_scan_desc *desc,
                                                                  size_t *bytes)
{
    const char *op = "ssmjit_selective_scan_fwd_workspace_size";
    sj_scan_extents sh;
    SJ_TRY(sj_check_ptr(bytes, op, "bytes"));
    SJ_TRY(check_scan(op, desc, 0, &sh));
    *bytes = sj_scan_checkpoint_bytes(&sh);
    return SSMJIT_OK;
}

SSMJIT_API ssmjit_status ssmjit_selective_scan_fwd(ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc,
                                                   void *stream)
{
    const char *op = "ssmjit_selective_scan_fwd";
    sj_scan_extents sh;
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(check_scan(op, desc, 1, &sh));
    /* Without tokens only the final states (= initial states) remain. */
    if (sh.D == 0 || sh.B == 0 || (!sh.active && !desc->final_state))
        return SSMJIT_OK;
    sj_scan_split sp;
    SJ_TRY(sj_scan_split_given(ctx, desc, &sh, 0, op, &sp));
    if (sp.S > 1)
        return sj_scan_fwd_split(ctx, desc, &sh, &sp, stream);
    sj_scan_params p = sj_scan_params_of(desc, &sh);
    p.y = sj_dptr(desc->y.data);
    p.sy = sh.sy;
    p.final_state = sj_dptr(desc->final_state);
    p.ckpt = sj_dptr(desc->checkpoint);
    return sj_scan_launch_fwd(ctx, desc->dtype, &sh, &p, stream);
}

/* ------------------------------------------------------------------------ */
/* Backward                                                                 */
/* ------------------------------------------------------------------------ */


SSMJIT_API ssmjit_status ssmjit_selective_scan_bwd_workspace_size(const ssmjit_selective_scan_desc *desc,
                                                                  size_t *bytes)
{
    const char *op = "ssmjit_selective_scan_bwd_workspace_size";
    sj_scan_extents sh;
    SJ_TRY(sj_check_ptr(bytes, op, "bytes"));
    SJ_TRY(check_scan(op, desc, 0, &sh));
    *bytes = sh.D > 0 ? sj_scan_bwd_layout_of(desc, &sh).total : 0;
    return SSMJIT_OK;
}

/* A gradient pointer is required exactly when its input was given. */
static ssmjit_status check_paired(const char *op, const void *input, const void *grad, const char *input_name,
                                  const char *grad_name)
{
    if (input && !grad)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: %s is NULL but %s is given", op, grad_name, input_name);
    if (!input && grad)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: %s is set but %s is absent", op, grad_name, input_name);
    return SSMJIT_OK;
}

static ssmjit_status check_grads(const char *op, const ssmjit_selective_scan_desc *desc,
                                 const ssmjit_selective_scan_grads *gr, const sj_scan_extents *sh, int64_t s[6])
{
    SJ_TRY(sj_check_ptr(gr, op, "grads"));
    const int act = sh->active;
    const ssmjit_matrix *m[] = {&gr->dy, &gr->du, &gr->ddelta, &gr->dB, &gr->dC, &gr->dz};
    static const char *const names[] = {"grads->dy", "grads->du", "grads->ddelta",
                                        "grads->dB", "grads->dC", "grads->dz"};
    for (int i = 0; i < 6; i++) {
        char what[64];
        const int64_t width = i == 3 || i == 4 ? sh->N : sh->D;
        if (act && i < 5) {
            snprintf(what, sizeof what, "%s.data", names[i]);
            SJ_TRY(sj_check_ptr(m[i]->data, op, what));
        }
        snprintf(what, sizeof what, "%s.stride", names[i]);
        SJ_TRY(sj_resolve_stride(m[i]->stride, width, op, what, &s[i]));
        SJ_TRY(sj_check_size(sh->B, sh->L, s[i], op, what));
    }
    if (sh->D > 0)
        SJ_TRY(sj_check_ptr(gr->dA, op, "grads->dA"));
    if (act)
        SJ_TRY(check_paired(op, desc->z.data, gr->dz.data, "desc->z", "grads->dz.data"));
    SJ_TRY(check_paired(op, desc->D, gr->dD, "desc->D", "grads->dD"));
    SJ_TRY(check_paired(op, desc->delta_bias, gr->ddelta_bias, "desc->delta_bias", "grads->ddelta_bias"));
    SJ_TRY(check_paired(op, desc->initial_state, gr->d_initial_state, "desc->initial_state",
                          "grads->d_initial_state"));
    return SSMJIT_OK;
}


/* Queues the kernels a backward call launches, so that on a first call
 * their compiles overlap (the call then waits for the slowest, not for
 * their sum): the scan, its reductions, the checkpoint's rebuild when
 * there is none, the split's kernels when it splits. */
static ssmjit_status request_bwd_kernels(ssmjit_context *ctx, ssmjit_dtype dtype, int states, int split)
{
    const char *sfx = sj_dtype_suffix(dtype);
    char names[7][48];
    const char *list[7];
    size_t n = 0;
    snprintf(names[n++], sizeof names[0], "scan_bwd_%s", sfx);
    snprintf(names[n++], sizeof names[0], "scan_bwd_reduce_bc_%s", sfx);
    snprintf(names[n++], sizeof names[0], "scan_bwd_reduce_params");
    if (states)
        snprintf(names[n++], sizeof names[0], "scan_states_ns8_%s", sfx);
    if (split) {
        snprintf(names[n++], sizeof names[0], "scan_split_starts");
        snprintf(names[n++], sizeof names[0], "scan_split_dtsum_%s", sfx);
        snprintf(names[n++], sizeof names[0], "scan_split_carry");
    }
    for (size_t i = 0; i < n; i++)
        list[i] = names[i];
    return sj_kernels_request(ctx, SJ_MODULE_SCAN_BWD, SJ_ROLE_BACKWARD, list, n);
}

SSMJIT_API ssmjit_status ssmjit_selective_scan_bwd(ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc,
                                                   const ssmjit_selective_scan_grads *grads, void *workspace,
                                                   size_t workspace_bytes, void *stream)
{
    const char *op = "ssmjit_selective_scan_bwd";
    sj_scan_extents sh;
    int64_t s[6];
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(check_scan(op, desc, 0, &sh));
    SJ_TRY(check_grads(op, desc, grads, &sh, s));
    if (sh.D == 0)
        return SSMJIT_OK;
    const sj_scan_bwd_layout w = sj_scan_bwd_layout_of(desc, &sh);
    SJ_TRY(sj_check_ptr(workspace, op, "workspace"));
    if (workspace_bytes < w.total)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: workspace_bytes = %zu is below the %zu bytes required",
                        op, workspace_bytes, w.total);
    sj_scan_split sp;
    SJ_TRY(sj_scan_split_given(ctx, desc, &sh, 1, op, &sp));
    char *ws = workspace;

    if (sh.B > 0) {
        SJ_TRY(request_bwd_kernels(ctx, desc->dtype, !desc->checkpoint && sh.nch > 1, sp.S > 1));
        sj_scan_params p = sj_scan_params_of(desc, &sh);
        p.ckpt = desc->checkpoint ? sj_dptr(desc->checkpoint) : sj_dptr(ws + w.ckpt);
        if (!desc->checkpoint && sh.nch > 1)
            SJ_TRY(sj_scan_launch_states(ctx, desc->dtype, &sh, &p, stream));
        p.dy = sj_dptr(grads->dy.data);
        p.sdy = s[0];
        p.dfinal = sj_dptr(grads->d_final_state);
        p.du = sj_dptr(grads->du.data);
        p.sdu = s[1];
        p.ddelta = sj_dptr(grads->ddelta.data);
        p.sddelta = s[2];
        p.dz = sj_dptr(grads->dz.data);
        p.sdz = s[5];
        p.dinit = sj_dptr(grads->d_initial_state);
        if (sp.S > 1)
            return sj_scan_bwd_split(ctx, desc, grads, &sh, s, &p, ws, &w, &sp, stream);
        p.ws_dA = sj_dptr(ws + w.dA);
        p.ws_dD = sj_dptr(ws + w.dD);
        p.ws_db = sj_dptr(ws + w.db);
        SJ_TRY(sj_scan_bwd_rows(ctx, desc->dtype, &sh, &p, ws, &w, sj_dptr(grads->dB.data), s[3],
                                sj_dptr(grads->dC.data), s[4], stream));
    }
    return sj_scan_reduce_params(ctx, grads, &sh, sh.B, ws + w.dA, ws + w.dD, ws + w.db, stream);
}

/* ------------------------------------------------------------------------ */
/* Decode step                                                              */
/* ------------------------------------------------------------------------ */

SSMJIT_API ssmjit_status ssmjit_selective_state_update(ssmjit_context *ctx, const ssmjit_state_update_desc *desc,
                                                       void *stream)
{
    const char *op = "ssmjit_selective_state_update";
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(sj_check_ptr(desc, op, "desc"));
    SJ_TRY(sj_check_dtype(desc->dtype, op, "desc->dtype"));
    SJ_TRY(sj_check_extent(desc->batch, op, "desc->batch"));
    SJ_TRY(sj_check_extent(desc->dim, op, "desc->dim"));
    SJ_TRY(check_dstate(op, desc->dstate));
    const int64_t B = desc->batch, D = desc->dim, N = desc->dstate;
    const int act = B > 0 && D > 0;
    sj_update_params p = {0};
    SJ_TRY(check_matrix(op, "x", &desc->x, D, act, &p.sx));
    SJ_TRY(check_matrix(op, "dt", &desc->dt, D, act, &p.sdt));
    SJ_TRY(check_matrix(op, "B", &desc->B, N, act, &p.sB));
    SJ_TRY(check_matrix(op, "C", &desc->C, N, act, &p.sC));
    SJ_TRY(check_matrix(op, "z", &desc->z, D, 0, &p.sz));
    SJ_TRY(check_matrix(op, "out", &desc->out, D, act, &p.sout));
    int64_t widest = p.sx;
    const int64_t strides[] = {p.sdt, p.sB, p.sC, p.sz, p.sout};
    for (size_t i = 0; i < sizeof strides / sizeof *strides; i++)
        widest = strides[i] > widest ? strides[i] : widest;
    SJ_TRY(sj_check_size(B, widest, 1, op, "the extent B * stride"));
    SJ_TRY(sj_check_size(B, D, N * 32, op, "the state extent B * D * N"));
    if (!act)
        return SSMJIT_OK;
    SJ_TRY(sj_check_ptr(desc->A, op, "desc->A"));
    SJ_TRY(sj_check_ptr(desc->state, op, "desc->state"));

    p.x = sj_dptr(desc->x.data);
    p.dt = sj_dptr(desc->dt.data);
    p.z = sj_dptr(desc->z.data);
    p.B = sj_dptr(desc->B.data);
    p.C = sj_dptr(desc->C.data);
    p.A = sj_dptr(desc->A);
    p.Dv = sj_dptr(desc->D);
    p.dt_bias = sj_dptr(desc->dt_bias);
    p.state = sj_dptr(desc->state);
    p.out = sj_dptr(desc->out.data);
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
    void *args[] = {&p};
    return sj_launch(ctx, fn, grid, block, 0, stream, args);
}
