/* ssmjit_context_prepare: from ops and dtypes to the units they may
 * launch, queued on the compile pool or loaded. */
#include "ops_prepare.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/compile.h"
#include "base/error.h"
#include "engine/kernel.h"
#include "validate.h"

/* Every kernel an op may launch, "@" standing for the dtype's suffix
 * (names without it serve every dtype).  The scan's include the split over
 * L's; the backward's the checkpoint it rebuilds when given none. */
typedef struct op_kernels {
    unsigned op;
    unsigned dtypes; /* those the op has kernels for */
    sj_module_id module;
    const char *kernels[9];
} op_kernels;

#define ALL SSMJIT_DTYPES_ALL
#define SIXTEEN_BIT (SSMJIT_DTYPE_BIT(SSMJIT_F16) | SSMJIT_DTYPE_BIT(SSMJIT_BF16))

static const op_kernels table[] = {
    {SSMJIT_OP_ACTIVATION_FWD, ALL, SJ_MODULE_ELEMENTWISE, {"act_fwd_silu_@", "act_fwd_softplus_@"}},
    {SSMJIT_OP_ACTIVATION_BWD, ALL, SJ_MODULE_ELEMENTWISE_BWD, {"act_bwd_silu_@", "act_bwd_softplus_@"}},
    {SSMJIT_OP_GATE_FWD, ALL, SJ_MODULE_ELEMENTWISE, {"gate_fwd_@"}},
    {SSMJIT_OP_GATE_BWD, ALL, SJ_MODULE_ELEMENTWISE_BWD, {"gate_bwd_@"}},
    {SSMJIT_OP_RMSNORM_FWD, ALL, SJ_MODULE_NORM,
     {"rmsnorm_fwd_cached_@_@", "rmsnorm_fwd_cached_@_f32", "rmsnorm_fwd_stream_@_@", "rmsnorm_fwd_stream_@_f32"}},
    {SSMJIT_OP_RMSNORM_BWD, ALL, SJ_MODULE_NORM_BWD,
     {"rmsnorm_bwd_cached_@_@", "rmsnorm_bwd_cached_@_f32", "rmsnorm_bwd_stream_@_@", "rmsnorm_bwd_stream_@_f32",
      "rmsnorm_dweight"}},
    {SSMJIT_OP_CONV1D_FWD, ALL, SJ_MODULE_CONV, {"conv_fwd_t4_v4_@", "conv_fwd_t8_v4_@", "conv_fwd_t8_v1_@"}},
    {SSMJIT_OP_CONV1D_BWD, ALL, SJ_MODULE_CONV_BWD,
     {"conv_bwd_t4_v4_@", "conv_bwd_t8_v2_@", "conv_bwd_t8_v1_@", "conv_bwd_reduce"}},
    {SSMJIT_OP_CONV1D_UPDATE, ALL, SJ_MODULE_CONV_UPDATE, {"conv_update_t4_@", "conv_update_t8_@"}},
    {SSMJIT_OP_SCAN_FWD, ALL, SJ_MODULE_SCAN_FWD,
     {"scan_fwd_ns4_@", "scan_fwd_ns8_@", "scan_fwd_ns16_@", "scan_fwd_tp4_@", "scan_fwd_tp8_@",
      "scan_split_ends_@", "scan_split_carry"}},
    {SSMJIT_OP_SCAN_BWD, ALL, SJ_MODULE_SCAN_BWD,
     {"scan_bwd_@", "scan_bwd_reduce_bc_@", "scan_bwd_reduce_params", "scan_states_ns8_@", "scan_split_ends_@",
      "scan_split_carry", "scan_split_starts"}},
    {SSMJIT_OP_STATE_UPDATE, ALL, SJ_MODULE_STATE_UPDATE, {"state_update_@"}},
    {SJ_OP_MODEL_FWD, ALL, SJ_MODULE_MODEL,
     {"embedding_fwd_@_f32", "embedding_fwd_@_f16", "embedding_fwd_@_bf16", "argmax_rows_@", "conv_state_fill_@",
      "neg_exp_f32"}},
    {SJ_OP_MODEL_BWD, ALL, SJ_MODULE_MODEL_BWD, {"embedding_bwd_@", "cross_entropy_@", "cross_entropy_sum", "mul_f32"}},
    {SJ_OP_SAMPLE, ALL, SJ_MODULE_SAMPLE, {"sample_rows_@"}},
    {SJ_OP_GEMM, SIXTEEN_BIT /* f32 GEMMs stay with cuBLAS */, SJ_MODULE_GEMM,
     {"gemm_skinny_m16_@_@", "gemm_skinny_m32_@_@", "gemm_skinny_m64_@_@", "gemm_skinny_m16_@_f32",
      "gemm_skinny_m32_@_f32", "gemm_skinny_m64_@_f32"}},
};

ssmjit_status sj_op_units(unsigned ops, unsigned dtypes, sj_kernel_filter keep, const void *keep_arg,
                          void (*visit)(size_t unit, void *arg), void *arg)
{
    unsigned char seen[SJ_UNIT_COUNT] = {0};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (!(table[i].op & ops))
            continue;
        for (int d = SSMJIT_F32; d <= SSMJIT_BF16; d++) {
            if (!(dtypes & table[i].dtypes & SSMJIT_DTYPE_BIT(d)))
                continue;
            const char *sfx = sj_dtype_suffix((ssmjit_dtype)d);
            for (const char *const *k = table[i].kernels; *k; k++) {
                char name[64];
                size_t n = 0;
                for (const char *p = *k; *p && n + 8 < sizeof name; p++)
                    n += (size_t)(*p == '@' ? snprintf(name + n, sizeof name - n, "%s", sfx)
                                            : snprintf(name + n, sizeof name - n, "%c", *p));
                int u = sj_unit_find(table[i].module, name);
                if (u < 0)
                    return sj_error(SSMJIT_ERR_INTERNAL, "module %s has no kernel %s",
                                    sj_modules[table[i].module].name, name);
                if (!seen[u] && (!keep || keep(name, keep_arg))) {
                    seen[u] = 1;
                    visit((size_t)u, arg);
                }
            }
        }
    }
    return SSMJIT_OK;
}

typedef struct prepare_arg {
    ssmjit_context *ctx;
    int wait;
    ssmjit_status st;
    size_t units[SJ_UNIT_COUNT];
    size_t n;
} prepare_arg;

static void queue_unit(size_t u, void *p)
{
    prepare_arg *a = p;
    if (a->st == SSMJIT_OK)
        a->st = sj_unit_request(a->ctx, u, sj_unit_fast(a->ctx, u));
    a->units[a->n++] = u;
}

ssmjit_status sj_prepare(ssmjit_context *ctx, unsigned ops, unsigned dtypes, sj_kernel_filter keep,
                         const void *keep_arg, unsigned flags)
{
    prepare_arg *a = calloc(1, sizeof *a);
    if (!a)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory");
    a->ctx = ctx;
    ssmjit_status st = sj_op_units(ops, dtypes, keep, keep_arg, queue_unit, a);
    if (st == SSMJIT_OK)
        st = a->st;
    /* Waiting loads them in the order queued, each as soon as it is there. */
    for (size_t i = 0; i < a->n && st == SSMJIT_OK && (flags & SSMJIT_PREPARE_WAIT); i++) {
        CUfunction fn;
        st = sj_unit_load(ctx, a->units[i], sj_unit_fast(ctx, a->units[i]), &fn);
        if (st != SSMJIT_OK)
            sj_error(st, "unit %s: %s", sj_units[a->units[i]].kernel, ssmjit_last_error());
    }
    free(a);
    return st;
}

SSMJIT_API ssmjit_status ssmjit_context_prepare(ssmjit_context *ctx, unsigned ops, unsigned dtypes,
                                                unsigned flags)
{
    static const char op[] = "ssmjit_context_prepare";
    SJ_TRY(sj_check_context(ctx, op));
    if (ops & ~(unsigned)SSMJIT_OP_ALL)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: ops = 0x%x has bits that name no op", op, ops);
    if (dtypes & ~SSMJIT_DTYPES_ALL)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: dtypes = 0x%x has bits that name no dtype", op, dtypes);
    if (flags & ~SSMJIT_PREPARE_WAIT)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: flags = 0x%x has unknown bits", op, flags);
    return sj_prepare(ctx, ops, dtypes, NULL, NULL, flags);
}
