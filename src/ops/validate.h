/* Argument checks shared by the ops.  Each returns SSMJIT_OK or sets an
 * SSMJIT_ERR_INVALID_ARG / SSMJIT_ERR_UNSUPPORTED message naming `what`,
 * so an op validates its whole descriptor before touching the GPU. */
#ifndef SSMJIT_VALIDATE_H
#define SSMJIT_VALIDATE_H

#include <stdint.h>

#include "io/dtype_convert.h"
#include "ssmjit.h"

/* ctx non-NULL. */
ssmjit_status sj_check_context(const ssmjit_context *ctx, const char *op);

/* p non-NULL. */
ssmjit_status sj_check_ptr(const void *p, const char *op, const char *what);

/* v >= 0. */
ssmjit_status sj_check_extent(int64_t v, const char *op, const char *what);

/* a * b * c <= 2^62 for extents a, b, c >= 0 (element or byte counts):
 * products the ops and kernels form in int64 then never wrap.  Else
 * SSMJIT_ERR_UNSUPPORTED "<op>: <what> is too large". */
ssmjit_status sj_check_size(int64_t a, int64_t b, int64_t c, const char *op, const char *what);

/* dtype is f32, f16 or bf16. */
ssmjit_status sj_check_dtype(ssmjit_dtype dtype, const char *op, const char *what);

/* Resolves a row stride: 0 means `width`; otherwise it must be >= width.
 * Writes the effective stride to *out. */
ssmjit_status sj_resolve_stride(int64_t stride, int64_t width, const char *op, const char *what,
                                int64_t *out);

/* Every op's and the model's workspace parts start at multiples of this
 * many bytes: enough for any access of a kernel, and a cache line. */
#define SJ_WORKSPACE_ALIGN 256

static inline size_t sj_workspace_align_up(size_t v)
{
    return (v + SJ_WORKSPACE_ALIGN - 1) / SJ_WORKSPACE_ALIGN * SJ_WORKSPACE_ALIGN;
}

#endif
