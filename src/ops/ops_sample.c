/* Token sampling (module "sample"): argument checks and the launch. */
#include "ops_sample.h"

#include <stdio.h>

#include "base/error.h"
#include "engine/kernel.h"
#include "validate.h"

#define MAX_GRID 65535u      /* blocks; the kernel loops over further rows */

ssmjit_status sj_sample_rows(ssmjit_context *ctx, ssmjit_dtype dtype, int64_t rows, int64_t cols,
                             ssmjit_matrix logits, const sj_sample_params *params, uint64_t *steps,
                             int32_t *out, void *stream)
{
    static const char op[] = "sj_sample_rows";
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(sj_check_dtype(dtype, op, "dtype"));
    SJ_TRY(sj_check_extent(rows, op, "rows"));
    SJ_TRY(sj_check_extent(cols, op, "cols"));
    /* token indices are int32, and cols fixed-point weights of at most
     * 2^32 each sum below 2^64 */
    if (cols > INT32_MAX)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "%s: cols = %lld is more than INT32_MAX", op, (long long)cols);
    SJ_TRY(sj_check_matrix(op, "logits", &logits, ssmjit_dtype_size(dtype), 1, rows, cols,
                           SJ_MATRIX_REQUIRED | SJ_MATRIX_ROWS, &logits));
    SJ_TRY(sj_check_ptr(params, op, "params"));
    SJ_TRY(sj_check_ptr(steps, op, "steps"));
    SJ_TRY(sj_check_ptr(out, op, "out"));
    if (rows == 0)
        return SSMJIT_OK;
    if (cols == 0)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: cols = 0 but rows = %lld: no token to draw", op,
                        (long long)rows);
    CUfunction fn;
    char name[32];
    snprintf(name, sizeof name, "sample_rows_%s", sj_dtype_suffix(dtype));
    SJ_TRY(sj_kernel_get(ctx, SJ_MODULE_SAMPLE, SJ_ROLE_FORWARD, name, &fn));
    void *args[] = {&logits.data, &logits.stride, &params, &steps, &out, &rows, &cols};
    sj_dim3 grid = {rows < MAX_GRID ? (unsigned)rows : MAX_GRID, 1, 1}, block = {SJ_SAMPLE_THREADS, 1, 1};
    return sj_launch(ctx, fn, grid, block, 0, stream, args);
}
