/* Which compile units each op may launch: ssmjit_context_prepare queues
 * them, the model queues its own at load.  The ops build the same names
 * when they launch (test_prepare holds the two together). */
#ifndef SSMJIT_OPS_PREPARE_H
#define SSMJIT_OPS_PREPARE_H

#include <stddef.h>

#include "ssmjit.h"

/* The model layer's own kernels (ops_model.h), as op bits past the public
 * ones: its forward and decoding helpers, and its training helpers. */
#define SJ_OP_MODEL_FWD (1u << 16)
#define SJ_OP_MODEL_BWD (1u << 17)
/* Token sampling (ops_sample.h). */
#define SJ_OP_SAMPLE (1u << 18)
/* The skinny GEMMs (gemm.h), 16-bit types only. */
#define SJ_OP_GEMM (1u << 19)
#define SJ_OP_EVERY (SSMJIT_OP_ALL | SJ_OP_MODEL_FWD | SJ_OP_MODEL_BWD | SJ_OP_SAMPLE | SJ_OP_GEMM)

/* What a model's forward and decoding launch, and what its backward adds. */
#define SJ_MODEL_INFERENCE_OPS                                                                                 \
    (SSMJIT_OP_RMSNORM_FWD | SSMJIT_OP_CONV1D_FWD | SSMJIT_OP_SCAN_FWD | SSMJIT_OP_CONV1D_UPDATE |             \
     SSMJIT_OP_STATE_UPDATE | SJ_OP_MODEL_FWD | SJ_OP_GEMM)
#define SJ_MODEL_TRAINING_OPS (SSMJIT_OP_RMSNORM_BWD | SSMJIT_OP_CONV1D_BWD | SSMJIT_OP_SCAN_BWD | SJ_OP_MODEL_BWD)

/* A caller's narrowing of an op's kernels by name (the model knows its
 * conv width and residual dtype): nonzero keeps the kernel. */
typedef int (*sj_kernel_filter)(const char *kernel, const void *arg);

/* Calls visit(unit, arg) for every unit (index of sj_units) that an op of
 * `ops` may launch for a dtype of `dtypes` and that `keep` (may be NULL)
 * keeps, each once; a name of the table that is no unit is an
 * SSMJIT_ERR_INTERNAL naming it. */
ssmjit_status sj_op_units(unsigned ops, unsigned dtypes, sj_kernel_filter keep, const void *keep_arg,
                          void (*visit)(size_t unit, void *arg), void *arg);

/* Queues (flags 0) or loads (SSMJIT_PREPARE_WAIT) those units in ctx, in
 * its variant of each. */
ssmjit_status sj_prepare(ssmjit_context *ctx, unsigned ops, unsigned dtypes, sj_kernel_filter keep,
                         const void *keep_arg, unsigned flags);

#endif
