/* Argument checks shared by the ops.  Each returns SSMJIT_OK or sets an
 * SSMJIT_ERR_INVALID_ARG / SSMJIT_ERR_UNSUPPORTED message naming `what`,
 * so an op validates its whole descriptor before touching the GPU. */
#ifndef SSMJIT_VALIDATE_H
#define SSMJIT_VALIDATE_H

#include <stdint.h>

#include "base/error.h"
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

/* How sj_check_matrix treats an operand. */
enum {
    SJ_MATRIX_REQUIRED = 1, /* data must be set when the extents are not empty */
    SJ_MATRIX_ROWS = 2      /* a [rows, width] operand: batch_stride must be 0 */
};

/* Checks one activation operand `name` ("args->u") of [batch, len, width]
 * elements of elem_size bytes (a [rows, width] one: batch 1, len rows,
 * with SJ_MATRIX_ROWS) and writes it to *out with both strides resolved:
 * stride 0 is width, else at least width; batch_stride 0 is len * stride,
 * else at least that; data aligned to elem_size; every element's offset
 * below 2^62.  An absent optional operand (data NULL, not required) is
 * still checked for its strides, so a view's fields never go unread. */
ssmjit_status sj_check_matrix(const char *op, const char *name, const ssmjit_matrix *m, size_t elem_size,
                              int64_t batch, int64_t len, int64_t width, int flags, ssmjit_matrix *out);

/* A caller-filled struct: p (called `name`: "desc", "args") is not NULL
 * and its struct_size is sizeof(type); returns from the calling function
 * otherwise. */
#define SJ_CHECK_STRUCT(op, name, p, type)                                                        \
    do {                                                                                          \
        SJ_TRY(sj_check_ptr((p), (op), (name)));                                                  \
        SJ_TRY(sj_check_struct_size((p)->struct_size, sizeof(type), (op), (name),                 \
                                    "SSMJIT_STRUCT_INIT(" #type ")"));                           \
    } while (0)

/* Every op's and the model's workspace parts start at multiples of this
 * many bytes: enough for any access of a kernel, and a cache line. */
#define SJ_WORKSPACE_ALIGN 256

static inline size_t sj_workspace_align_up(size_t v)
{
    return (v + SJ_WORKSPACE_ALIGN - 1) / SJ_WORKSPACE_ALIGN * SJ_WORKSPACE_ALIGN;
}

#endif
