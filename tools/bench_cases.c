/* The op benchmark cases, at the shapes the targets are stated for. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_cases.h"

#define MAX_BUFS 20
#define MAX_ROT 4

/* One case's buffers, bufs[rotation][i], and its extents. */
typedef struct {
    ssmjit_context *ctx;
    ssmjit_dtype dtype;
    int64_t b, l, d, n;
    size_t ws;  /* workspace bytes, the last buffer */
    void *bufs[MAX_ROT][MAX_BUFS];
    int nbufs;
} state;

static void teardown(void *p)
{
    state *s = p;
    for (int r = 0; r < MAX_ROT; r++)
        for (int i = 0; i < s->nbufs; i++)
            bench_free(s->bufs[r][i]);
    free(s);
}

/* Allocates the buffers of `sizes` once per rotation, with enough
 * rotations that one pass over all of them exceeds twice a 60 MB L2. */
static ssmjit_status alloc_state(const state *shape, const size_t *sizes, int count, bench_instance *out)
{
    state *s = malloc(sizeof *s);
    if (!s)
        return SSMJIT_ERR_NO_MEMORY;
    *s = *shape;
    s->nbufs = count;
    size_t per_set = 0;
    for (int i = 0; i < count; i++)
        per_set += sizes[i];
    int rot = 1;
    while (rot < MAX_ROT && per_set * (size_t)rot < (size_t)120 << 20)
        rot++;
    out->state = s;
    out->rotations = rot;
    for (int r = 0; r < MAX_ROT; r++)
        for (int i = 0; i < count; i++) {
            s->bufs[r][i] = NULL;
            ssmjit_status st = r < rot ? bench_alloc(sizes[i], &s->bufs[r][i]) : SSMJIT_OK;
            if (st != SSMJIT_OK)
                return st;
        }
    return SSMJIT_OK;
}

static ssmjit_matrix mat(void *p) { return (ssmjit_matrix){p, 0}; }

/* The reference shape B=8, L=2048, D=4096 (quick: 1, 512, 1536). */
static state big_shape(ssmjit_context *ctx, ssmjit_dtype dt, int quick, int64_t n)
{
    return (state){ctx, dt, quick ? 1 : 8, quick ? 512 : 2048, quick ? 1536 : 4096, n, 0, {{0}}, 0};
}

/* ---- elementwise over [B*L, D] ------------------------------------------ */

static ssmjit_status setup_rows(ssmjit_context *ctx, ssmjit_dtype dt, int quick, int operands, bench_instance *out)
{
    state s = big_shape(ctx, dt, quick, 0);
    size_t bytes = (size_t)(s.b * s.l * s.d) * ssmjit_dtype_size(dt), sizes[3] = {bytes, bytes, bytes};
    out->bytes = (double)bytes * operands;
    snprintf(out->shape, sizeof out->shape, "rows=%lld cols=%lld", (long long)(s.b * s.l), (long long)s.d);
    return alloc_state(&s, sizes, operands, out);
}

static ssmjit_status setup_two(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_rows(ctx, dt, quick, 2, out);
}

static ssmjit_status setup_three(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_rows(ctx, dt, quick, 3, out);
}

static ssmjit_status run_silu_fwd(void *p, int r, void *stream)
{
    state *s = p;
    ssmjit_unary_desc desc = {s->dtype, s->b * s->l, s->d};
    return ssmjit_activation_fwd(s->ctx, SSMJIT_ACT_SILU, &desc, mat(s->bufs[r][0]), mat(s->bufs[r][1]), stream);
}

static ssmjit_status run_gate_fwd(void *p, int r, void *stream)
{
    state *s = p;
    ssmjit_unary_desc desc = {s->dtype, s->b * s->l, s->d};
    return ssmjit_gate_fwd(s->ctx, &desc, mat(s->bufs[r][0]), mat(s->bufs[r][1]), mat(s->bufs[r][2]), stream);
}

/* ---- RMSNorm: rows = B*L, d = 768 (mamba-130m), f32 residual stream ----- */

static ssmjit_rmsnorm_desc norm_desc(const state *s)
{
    return (ssmjit_rmsnorm_desc){s->dtype, s->b * s->l, s->d, 1e-5f, 1, SSMJIT_F32};
}

static ssmjit_status setup_norm(ssmjit_context *ctx, ssmjit_dtype dt, int quick, int bwd, bench_instance *out)
{
    state s = big_shape(ctx, dt, quick, 0);
    s.d = 768;
    size_t rows = (size_t)(s.b * s.l), act = rows * (size_t)s.d * ssmjit_dtype_size(dt), res = rows * (size_t)s.d * 4;
    ssmjit_rmsnorm_desc desc = norm_desc(&s);
    ssmjit_status st = bwd ? ssmjit_rmsnorm_bwd_workspace_size(ctx, &desc, &s.ws) : SSMJIT_OK;
    if (st != SSMJIT_OK)
        return st;
    /* fwd: x, residual, weight, y, residual_out, rstd
     * bwd: h, weight, rstd, dy, d_residual_out, dx, d_residual, dweight, workspace */
    size_t w = (size_t)s.d * 4, fwd[] = {act, res, w, act, res, rows * 4},
           bwd_sizes[] = {res, w, rows * 4, act, res, act, res, w, s.ws};
    out->bytes = bwd ? (double)(3 * res + 2 * act) : (double)(2 * act + 2 * res);
    snprintf(out->shape, sizeof out->shape, "rows=%zu d=%lld +f32 residual", rows, (long long)s.d);
    return bwd ? alloc_state(&s, bwd_sizes, 9, out) : alloc_state(&s, fwd, 6, out);
}

static ssmjit_status setup_norm_fwd(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_norm(ctx, dt, quick, 0, out);
}

static ssmjit_status setup_norm_bwd(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_norm(ctx, dt, quick, 1, out);
}

static ssmjit_status run_norm_fwd(void *p, int r, void *stream)
{
    state *s = p;
    void **b = s->bufs[r];
    ssmjit_rmsnorm_desc desc = norm_desc(s);
    return ssmjit_rmsnorm_fwd(s->ctx, &desc, mat(b[0]), mat(b[1]), b[2], mat(b[3]), mat(b[4]), b[5], stream);
}

static ssmjit_status run_norm_bwd(void *p, int r, void *stream)
{
    state *s = p;
    void **b = s->bufs[r];
    ssmjit_rmsnorm_desc desc = norm_desc(s);
    return ssmjit_rmsnorm_bwd(s->ctx, &desc, mat(b[0]), b[1], b[2], mat(b[3]), mat(b[4]), mat(b[5]), mat(b[6]),
                              b[7], b[8], s->ws, stream);
}

const bench_case bench_cases[] = {
    {"silu fwd", setup_two, run_silu_fwd, teardown},
    {"gate y*silu(z) fwd", setup_three, run_gate_fwd, teardown},
    {"rmsnorm fwd (fused residual add)", setup_norm_fwd, run_norm_fwd, teardown},
    {"rmsnorm bwd", setup_norm_bwd, run_norm_bwd, teardown},
    {NULL, NULL, NULL, NULL},
};
