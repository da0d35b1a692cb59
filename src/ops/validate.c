#include "validate.h"

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

