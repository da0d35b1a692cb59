/* The op benchmark cases, at the shapes the targets name. */
#include <stdio.h>
#include <stdlib.h>

#include "bench_cases.h"

#define MAX_BUFS 12
#define MAX_ROT 4

/* Buffers of one case: bufs[rotation][i]. */
typedef struct {
    ssmjit_context *ctx;
    ssmjit_dtype dtype;
    int64_t b, l, d, n;
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

/* Allocates `count` buffers of the given byte sizes per rotation, with
 * enough rotations that one pass over all of them exceeds 2x a 60 MB L2. */
static ssmjit_status alloc_state(ssmjit_context *ctx, ssmjit_dtype dtype, int64_t b, int64_t l, int64_t d,
                                 int64_t n, const size_t *sizes, int count, bench_instance *out)
{
    state *s = calloc(1, sizeof *s);
    if (!s)
        return SSMJIT_ERR_NO_MEMORY;
    *s = (state){ctx, dtype, b, l, d, n, {{0}}, count};
    size_t per_set = 0;
    for (int i = 0; i < count; i++)
        per_set += sizes[i];
    int rot = 1;
    while (rot < MAX_ROT && per_set * (size_t)rot < (size_t)120 << 20)
        rot++;
    out->state = s;
    out->rotations = rot;
    for (int r = 0; r < rot; r++)
        for (int i = 0; i < count; i++) {
            ssmjit_status st = bench_alloc(sizes[i], &s->bufs[r][i]);
            if (st != SSMJIT_OK)
                return st;
        }
    return SSMJIT_OK;
}

/* ---- elementwise: [B*L, D] ---------------------------------------------- */

static ssmjit_status setup_rows(ssmjit_context *ctx, ssmjit_dtype dtype, int quick, int operands,
                                bench_instance *out)
{
    int64_t b = quick ? 1 : 8, l = quick ? 512 : 2048, d = quick ? 1536 : 4096;
    size_t bytes = (size_t)(b * l * d) * ssmjit_dtype_size(dtype);
    size_t sizes[MAX_BUFS];
    for (int i = 0; i < operands; i++)
        sizes[i] = bytes;
    out->bytes = (double)bytes * operands;
    snprintf(out->shape, sizeof out->shape, "rows=%lld cols=%lld", (long long)(b * l), (long long)d);
    return alloc_state(ctx, dtype, b, l, d, 0, sizes, operands, out);
}

static ssmjit_status setup_unary_fwd(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_rows(ctx, dt, quick, 2, out);
}

static ssmjit_status setup_three(ssmjit_context *ctx, ssmjit_dtype dt, int quick, bench_instance *out)
{
    return setup_rows(ctx, dt, quick, 3, out);
}

static ssmjit_matrix mat(void *p) { return (ssmjit_matrix){p, 0}; }

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

const bench_case bench_cases[] = {
    {"silu fwd", setup_unary_fwd, run_silu_fwd, teardown},
    {"gate y*silu(z) fwd", setup_three, run_gate_fwd, teardown},
    {NULL, NULL, NULL, NULL},
};
