#include "gpu_util.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "driver.h"
#include "dtype_convert.h"

static const sj_driver *drv;

static void check(ssmjit_status st)
{
    if (st != SSMJIT_OK)
        fail_msg("%s: %s", ssmjit_status_string(st), ssmjit_last_error());
}

ssmjit_context *gu_context(ssmjit_fast_math fast_math)
{
    ssmjit_context_options o;
    ssmjit_context_options_init(&o);
    o.fast_math = fast_math;
    ssmjit_context *ctx = NULL;
    ssmjit_status st = ssmjit_context_create(&o, &ctx);
    if (st == SSMJIT_ERR_DRIVER_NOT_FOUND || st == SSMJIT_ERR_NO_DEVICE) {
        printf("# no GPU: %s\n", ssmjit_last_error());
        skip();
    }
    check(st);
    check(sj_driver_get(&drv));
    /* Later driver calls in the tests run on this thread's current context. */
    CUcontext cu;
    check(SJ_CU(drv, DevicePrimaryCtxRetain, &cu, 0));
    check(SJ_CU(drv, CtxSetCurrent, cu));
    check(SJ_CU(drv, DevicePrimaryCtxRelease, 0));
    return ctx;
}

void gu_require_gpu(void) { ssmjit_context_destroy(gu_context(SSMJIT_FAST_MATH_OFF)); }

void *gu_alloc(size_t bytes)
{
    CUdeviceptr p = 0;
    check(SJ_CU(drv, MemAlloc, &p, bytes ? bytes : 16));
    return (void *)(uintptr_t)p;
}

void gu_free(void *dptr)
{
    if (dptr)
        check(SJ_CU(drv, MemFree, (CUdeviceptr)(uintptr_t)dptr));
}

void gu_upload(void *dptr, const void *host, size_t bytes)
{
    if (bytes)
        check(SJ_CU(drv, MemcpyHtoD, (CUdeviceptr)(uintptr_t)dptr, host, bytes));
}

void gu_download(void *host, const void *dptr, size_t bytes)
{
    if (bytes)
        check(SJ_CU(drv, MemcpyDtoH, host, (CUdeviceptr)(uintptr_t)dptr, bytes));
}

void gu_poison(void *dptr, size_t bytes)
{
    if (bytes)
        check(SJ_CU(drv, MemsetD8, (CUdeviceptr)(uintptr_t)dptr, 0xFF, bytes));
}

void gu_sync(void) { check(sj_cu_result(drv->CtxSynchronize(), "cuCtxSynchronize")); }

double gu_round(double v, ssmjit_dtype dtype)
{
    switch (dtype) {
    case SSMJIT_F32: return (float)v;
    case SSMJIT_F16: return sj_f16_to_f32(sj_f32_to_f16((float)v));
    case SSMJIT_BF16: return sj_bf16_to_f32(sj_f32_to_bf16((float)v));
    }
    fail_msg("unknown dtype %d", (int)dtype);
    return 0;
}

void gu_upload_as(void *dptr, double *host, size_t n, ssmjit_dtype dtype)
{
    size_t es = ssmjit_dtype_size(dtype);
    unsigned char *buf = malloc(n * es + 1);
    assert_non_null(buf);
    for (size_t i = 0; i < n; i++) {
        float f = (float)host[i];
        if (dtype == SSMJIT_F32) {
            memcpy(buf + 4 * i, &f, 4);
        } else {
            uint16_t h = dtype == SSMJIT_F16 ? sj_f32_to_f16(f) : sj_f32_to_bf16(f);
            memcpy(buf + 2 * i, &h, 2);
        }
        host[i] = gu_round(host[i], dtype);
    }
    gu_upload(dptr, buf, n * es);
    free(buf);
}

void *gu_upload_new(double *host, size_t n, ssmjit_dtype dtype)
{
    void *d = gu_alloc(n * ssmjit_dtype_size(dtype));
    gu_upload_as(d, host, n, dtype);
    return d;
}

void gu_download_as(double *host, const void *dptr, size_t n, ssmjit_dtype dtype)
{
    size_t es = ssmjit_dtype_size(dtype);
    unsigned char *buf = malloc(n * es + 1);
    assert_non_null(buf);
    gu_download(buf, dptr, n * es);
    for (size_t i = 0; i < n; i++) {
        if (dtype == SSMJIT_F32) {
            float f;
            memcpy(&f, buf + 4 * i, 4);
            host[i] = f;
        } else {
            uint16_t h;
            memcpy(&h, buf + 2 * i, 2);
            host[i] = dtype == SSMJIT_F16 ? sj_f16_to_f32(h) : sj_bf16_to_f32(h);
        }
    }
    free(buf);
}

void *gu_alloc_poisoned(size_t n, ssmjit_dtype dtype)
{
    size_t bytes = n * ssmjit_dtype_size(dtype);
    void *d = gu_alloc(bytes);
    gu_poison(d, bytes);
    return d;
}

double gu_tolerance(ssmjit_dtype dtype) { return dtype == SSMJIT_F32 ? 1e-5 : 1e-2; }

const gu_view gu_no_view = {NULL, 0, 0, 0, 0, SSMJIT_F32};

static gu_view view_layout(size_t rows, size_t w, ssmjit_dtype dtype, int strided)
{
    gu_view v = {NULL, rows, w, w, 0, dtype};
    if (strided == GU_ALIGNED_PADDING) {
        v.ld = (2 * w + 15) / 8 * 8;
        v.off = 8;
    } else if (strided) {
        v.ld = 2 * w + 3;
        v.off = w + 1;
    }
    return v;
}

gu_view gu_view_upload(double *host, size_t rows, size_t w, ssmjit_dtype dtype, int strided)
{
    if (!host)
        return gu_no_view;
    gu_view v = view_layout(rows, w, dtype, strided);
    double *pad = malloc((rows * v.ld + 1) * sizeof *pad);
    assert_non_null(pad);
    for (size_t i = 0; i < rows * v.ld; ++i)
        pad[i] = NAN;
    for (size_t r = 0; r < rows; ++r)
        memcpy(pad + r * v.ld + v.off, host + r * w, w * sizeof *host);
    v.base = gu_upload_new(pad, rows * v.ld, dtype);
    for (size_t r = 0; r < rows; ++r)
        memcpy(host + r * w, pad + r * v.ld + v.off, w * sizeof *host);
    free(pad);
    return v;
}

gu_view gu_view_poisoned(size_t rows, size_t w, ssmjit_dtype dtype, int strided)
{
    gu_view v = view_layout(rows, w, dtype, strided);
    v.base = gu_alloc_poisoned(rows * v.ld, dtype);
    return v;
}

void gu_view_download(double *host, const gu_view *v)
{
    double *pad = malloc((v->rows * v->ld + 1) * sizeof *pad);
    assert_non_null(pad);
    gu_download_as(pad, v->base, v->rows * v->ld, v->dtype);
    for (size_t r = 0; r < v->rows; ++r)
        for (size_t j = 0; j < v->ld; ++j) {
            double x = pad[r * v->ld + j];
            if (j >= v->off && j < v->off + v->w)
                host[r * v->w + j - v->off] = x;
            else if (!isnan(x))
                fail_msg("padding at row %zu column %zu was written", r, j);
        }
    free(pad);
}

ssmjit_matrix gu_view_matrix(const gu_view *v)
{
    ssmjit_matrix m = {NULL, 0, 0};
    if (!v->base)
        return m;
    m.data = (char *)v->base + v->off * ssmjit_dtype_size(v->dtype);
    m.stride = v->ld == v->w ? 0 : (int64_t)v->ld;
    return m;
}

void gu_view_free(gu_view *v)
{
    gu_free(v->base);
    v->base = NULL;
}

ssmjit_context *gu_stand_in_context(void)
{
    static const sj_driver no_driver;
    ssmjit_context *ctx = sj_context_alloc();
    assert_non_null(ctx);
    ctx->drv = &no_driver;
    ctx->props = (sj_device_props){9, 0, 132, 2048, 232448, 233472, 52428800};
    ctx->want_arch = 90;
    ctx->fast_math = -1;
    ctx->cache.mode = SSMJIT_CACHE_OFF;
    return ctx;
}
