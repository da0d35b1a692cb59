#include "validate.h"

#include <stdio.h>

#include "base/error.h"

ssmjit_status sj_check_context(const ssmjit_context *ctx, const char *op)
{
    return ctx ? SSMJIT_OK : sj_error(SSMJIT_ERR_INVALID_ARG, "%s: ctx is NULL", op);
}

ssmjit_status sj_check_ptr(const void *p, const char *op, const char *what)
{
    return p ? SSMJIT_OK : sj_error(SSMJIT_ERR_INVALID_ARG, "%s: %s is NULL", op, what);
}

ssmjit_status sj_check_extent(int64_t v, const char *op, const char *what)
{
    return v >= 0 ? SSMJIT_OK
                  : sj_error(SSMJIT_ERR_INVALID_ARG, "%s: %s = %lld is negative", op, what,
                             (long long)v);
}

ssmjit_status sj_check_size(int64_t a, int64_t b, int64_t c, const char *op, const char *what)
{
    const int64_t lim = INT64_C(1) << 62;
    if ((a != 0 && b > lim / a) || (a * b != 0 && c > lim / (a * b)))
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "%s: %s is too large", op, what);
    return SSMJIT_OK;
}

ssmjit_status sj_check_dtype(ssmjit_dtype dtype, const char *op, const char *what)
{
    return ssmjit_dtype_size(dtype) ? SSMJIT_OK
                                    : sj_error(SSMJIT_ERR_INVALID_ARG, "%s: %s = %d is not a known dtype",
                                               op, what, (int)dtype);
}

ssmjit_status sj_resolve_stride(int64_t stride, int64_t width, const char *op, const char *what,
                                int64_t *out)
{
    if (stride == 0) {
        *out = width;
        return SSMJIT_OK;
    }
    if (stride < width)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: %s = %lld is less than the row width %lld", op,
                        what, (long long)stride, (long long)width);
    *out = stride;
    return SSMJIT_OK;
}


ssmjit_status sj_check_matrix(const char *op, const char *name, const ssmjit_matrix *m, size_t elem_size,
                              int64_t batch, int64_t len, int64_t width, int flags, ssmjit_matrix *out)
{
    char what[80];
    if ((flags & SJ_MATRIX_REQUIRED) && batch > 0 && len > 0 && width > 0) {
        snprintf(what, sizeof what, "%s.data", name);
        SJ_TRY(sj_check_ptr(m->data, op, what));
    }
    SJ_FAIL_IF((uintptr_t)m->data % elem_size != 0, SSMJIT_ERR_INVALID_ARG,
               "%s: %s.data is not aligned to its %zu-byte elements", op, name, elem_size);
    snprintf(what, sizeof what, "%s.stride", name);
    int64_t stride = 0;
    SJ_TRY(sj_resolve_stride(m->stride, width, op, what, &stride));
    SJ_TRY(sj_check_size(len, stride, 1, op, what));
    int64_t batch_stride = len * stride;
    snprintf(what, sizeof what, "%s.batch_stride", name);
    if (flags & SJ_MATRIX_ROWS) {
        SJ_FAIL_IF(m->batch_stride != 0, SSMJIT_ERR_INVALID_ARG,
                   "%s: %s = %lld must be 0 for a [rows, width] operand", op, what, (long long)m->batch_stride);
    } else if (m->batch_stride != 0) {
        SJ_FAIL_IF(m->batch_stride < batch_stride, SSMJIT_ERR_INVALID_ARG,
                   "%s: %s = %lld is less than len * stride = %lld", op, what, (long long)m->batch_stride,
                   (long long)batch_stride);
        batch_stride = m->batch_stride;
    }
    SJ_TRY(sj_check_size(batch, batch_stride, 1, op, what));
    *out = (ssmjit_matrix){m->data, stride, batch_stride};
    return SSMJIT_OK;
}
