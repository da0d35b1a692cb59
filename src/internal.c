/* The functions of ssmjit_internal.h (the project's tools' view below the
 * public API) that are not the library's own functions: thin wrappers over
 * the driver table, the launcher, the image table and the cache.  This
 * file includes the internal headers too, so that a declaration
 * ssmjit_internal.h repeats must agree with the original. */
#include <stdint.h>

#include "ssmjit_internal.h"

#include "cache/cache.h"
#include "engine/context.h"
#include "cuda/cublas_loader.h"
#include "cuda/driver.h"
#include "io/dtype_convert.h"
#include "base/error.h"
#include "engine/image.h"
#include "engine/kernel.h"
#include "model/model.h"
#include "ops/gemm.h"
#include "ops/ops_scan.h"
#include "base/sha256.h"
#include "ops/validate.h"

_Static_assert(SJ_PROFILE_KINDS == 2, "ssmjit_internal.h documents ms[0] GEMMs and ms[1] scans");
_Static_assert(SJ_DECODE_PART_COUNT == SJ_DECODE_PARTS && SJ_DECODE_IN == SJ_DECODE_PART_IN &&
                   SJ_DECODE_MIX == SJ_DECODE_PART_MIX && SJ_DECODE_OUT == SJ_DECODE_PART_OUT &&
                   SJ_DECODE_HEAD == SJ_DECODE_PART_HEAD && SJ_DECODE_PICK == SJ_DECODE_PART_PICK &&
                   SJ_DECODE_LAYER_NORM == SJ_DECODE_PART_LAYER_NORM,
               "ssmjit_internal.h names the decode parts' bits as model.h's sj_decode_part");
_Static_assert(sizeof(CUdeviceptr) >= sizeof(void *), "device pointers travel as void *");

static CUdeviceptr dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

ssmjit_status sj_dev_synchronize(ssmjit_context *ctx)
{
    return sj_cu_result(ctx->drv->CtxSynchronize(), "cuCtxSynchronize");
}

ssmjit_status sj_dev_alloc(ssmjit_context *ctx, size_t bytes, void **out)
{
    CUdeviceptr d = 0;
    ssmjit_status st = SJ_CU(ctx->drv, MemAlloc, &d, bytes);
    *out = (void *)(uintptr_t)d;
    return st;
}

void sj_dev_free(ssmjit_context *ctx, void *p)
{
    if (p && ctx->drv->MemFree)
        ctx->drv->MemFree(dptr(p));
}

ssmjit_status sj_dev_memset8(ssmjit_context *ctx, void *dst, unsigned char value, size_t n)
{
    return SJ_CU(ctx->drv, MemsetD8, dptr(dst), value, n);
}

ssmjit_status sj_dev_memset8_async(ssmjit_context *ctx, void *dst, unsigned char value, size_t n, void *stream)
{
    return SJ_CU(ctx->drv, MemsetD8Async, dptr(dst), value, n, (CUstream)stream);
}

ssmjit_status sj_dev_memset32_async(ssmjit_context *ctx, void *dst, unsigned value, size_t n, void *stream)
{
    return SJ_CU(ctx->drv, MemsetD32Async, dptr(dst), value, n, (CUstream)stream);
}

ssmjit_status sj_dev_to_host(ssmjit_context *ctx, void *host, const void *dev, size_t bytes)
{
    return SJ_CU(ctx->drv, MemcpyDtoH, host, dptr(dev), bytes);
}

ssmjit_status sj_dev_from_host(ssmjit_context *ctx, void *dev, const void *host, size_t bytes)
{
    return SJ_CU(ctx->drv, MemcpyHtoD, dptr(dev), host, bytes);
}

ssmjit_status sj_dev_copy_async(ssmjit_context *ctx, void *dst, const void *src, size_t bytes, void *stream)
{
    return SJ_CU(ctx->drv, MemcpyDtoDAsync, dptr(dst), dptr(src), bytes, (CUstream)stream);
}

ssmjit_status sj_stream_create(ssmjit_context *ctx, void **stream)
{
    CUstream s = NULL;
    ssmjit_status st = SJ_CU(ctx->drv, StreamCreate, &s, CU_STREAM_NON_BLOCKING);
    *stream = (void *)s;
    return st;
}

void sj_stream_destroy(ssmjit_context *ctx, void *stream)
{
    if (stream && ctx->drv->StreamDestroy)
        ctx->drv->StreamDestroy((CUstream)stream);
}

ssmjit_status sj_stream_synchronize(ssmjit_context *ctx, void *stream)
{
    return SJ_CU(ctx->drv, StreamSynchronize, (CUstream)stream);
}

enum { MAX_TIMED_RUNS = 64 };

typedef struct graph_timing {
    const sj_driver *drv;
    CUgraphExec exec;
} graph_timing;

ssmjit_status sj_time_with_events(ssmjit_context *ctx, void *stream, int warmup, int runs, sj_timed_fn run,
                                  void *arg, double *ms)
{
    if (runs < 1 || runs > MAX_TIMED_RUNS || warmup < 0)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "timed runs: %d runs (1 to %d), %d warm-ups", runs,
                        MAX_TIMED_RUNS, warmup);
    const sj_driver *drv = ctx->drv;
    CUstream s = (CUstream)stream;
    CUevent ev[2 * MAX_TIMED_RUNS];
    ssmjit_status st = SSMJIT_OK;
    int made = 0;
    while (made < 2 * runs && st == SSMJIT_OK)
        if ((st = SJ_CU(drv, EventCreate, &ev[made], CU_EVENT_DEFAULT)) == SSMJIT_OK)
            made++;
    for (int i = 0; i < warmup && st == SSMJIT_OK; i++)
        st = run(arg, i, stream);
    for (int i = 0; i < runs && st == SSMJIT_OK; i++) {
        st = SJ_CU(drv, EventRecord, ev[2 * i], s);
        if (st == SSMJIT_OK)
            st = run(arg, i, stream);
        if (st == SSMJIT_OK)
            st = SJ_CU(drv, EventRecord, ev[2 * i + 1], s);
    }
    for (int i = 0; i < runs && st == SSMJIT_OK; i++) {
        float f = 0;
        st = SJ_CU(drv, EventSynchronize, ev[2 * i + 1]);
        if (st == SSMJIT_OK)
            st = SJ_CU(drv, EventElapsedTime, &f, ev[2 * i], ev[2 * i + 1]);
        ms[i] = f;
    }
    for (int i = 0; i < made; i++)
        SJ_CU(drv, EventDestroy, ev[i]);
    return st;
}

/* One launch of the graph, as sj_time_with_events's call. */
static ssmjit_status graph_run(void *arg, int i, void *stream)
{
    (void)i;
    const graph_timing *g = arg;
    return SJ_CU(g->drv, GraphLaunch, g->exec, (CUstream)stream);
}

typedef struct graph_calls {
    int calls;
    sj_timed_fn run;
    void *arg;
} graph_calls;

/* The calls a timed graph holds, as sj_graph_capture's enqueue. */
static ssmjit_status enqueue_calls(void *arg, void *stream)
{
    const graph_calls *c = arg;
    ssmjit_status st = SSMJIT_OK;
    for (int i = 0; i < c->calls && st == SSMJIT_OK; i++)
        st = c->run(c->arg, i, stream);
    return st;
}

ssmjit_status sj_time_graph(ssmjit_context *ctx, void *stream, int calls, int warmup, int runs, sj_timed_fn run,
                            void *arg, double *ms)
{
    graph_calls c = {calls, run, arg};
    graph_timing g = {ctx->drv, NULL};
    ssmjit_status st = sj_graph_capture(ctx, stream, enqueue_calls, &c, &g.exec);
    if (st == SSMJIT_OK)
        st = sj_time_with_events(ctx, stream, warmup, runs, graph_run, &g, ms);
    if (g.exec)
        g.drv->GraphExecDestroy(g.exec);
    return st;
}

static const sj_gemm_path linear_paths[] = {SJ_GEMM_RULE, SJ_GEMM_CUBLAS, SJ_GEMM_SKINNY};

static sj_gemm_desc linear_desc(ssmjit_dtype dtype, int64_t m, int64_t n, int64_t k, const void *a, const void *w,
                                void *c)
{
    return (sj_gemm_desc){.ab_dtype = dtype, .c_dtype = dtype, .m = m, .n = n, .k = k, .a = a, .b = w,
                          .trans_b = 1, .c = c, .alpha = 1.0f};
}

ssmjit_status sj_linear_on_path(sj_blas *blas, int path, ssmjit_dtype dtype, int64_t m, int64_t n, int64_t k,
                                const void *a, const void *w, void *c, void *stream)
{
    if (path < 0 || path > 2)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "GEMM path %d is not 0, 1 or 2", path);
    sj_gemm_desc d = linear_desc(dtype, m, n, k, a, w, c);
    sj_gemm_force(blas, linear_paths[path]);
    ssmjit_status st = sj_gemm(blas, &d, stream);
    sj_gemm_force(blas, SJ_GEMM_RULE);
    return st;
}

int sj_linear_skinny_splits(sj_blas *blas, int path, ssmjit_dtype dtype, int64_t m, int64_t n, int64_t k,
                            const void *a, const void *w, void *c)
{
    if (!blas || path < 0 || path > 2)
        return 0;
    sj_gemm_desc d = linear_desc(dtype, m, n, k, a, w, c);
    sj_gemm_skinny plan;
    return sj_gemm_skinny_for(blas, linear_paths[path], &d, &plan) ? (int)plan.splits : 0;
}

ssmjit_status sj_kernel_lookup(ssmjit_context *ctx, size_t module, int backward, const char *name, void **fn)
{
    if (module >= SJ_MODULE_COUNT)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "no module %zu", module);
    CUfunction f = NULL;
    ssmjit_status st =
        sj_kernel_get(ctx, (sj_module_id)module, backward ? SJ_ROLE_BACKWARD : SJ_ROLE_FORWARD, name, &f);
    *fn = (void *)f;
    return st;
}

ssmjit_status sj_launch_raw(ssmjit_context *ctx, void *fn, const unsigned grid[3], const unsigned block[3],
                            unsigned smem, void *stream, void **args)
{
    return SJ_CU(ctx->drv, LaunchKernel, (CUfunction)fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                 smem, (CUstream)stream, args, NULL);
}

ssmjit_status sj_launch_checked(ssmjit_context *ctx, void *fn, const unsigned grid[3], const unsigned block[3],
                                unsigned smem, void *stream, void **args)
{
    return sj_launch(ctx, (CUfunction)fn, (sj_dim3){grid[0], grid[1], grid[2]},
                     (sj_dim3){block[0], block[1], block[2]}, smem, stream, args);
}

ssmjit_status sj_unit_image(ssmjit_context *ctx, size_t unit, const void **image)
{
    if (unit >= SJ_UNIT_COUNT)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "no unit %zu", unit);
    const sj_compile_spec *spec;
    size_t size;
    ssmjit_status st = sj_context_spec(ctx, sj_unit_fast(ctx, unit), &spec);
    sj_image_job job = {unit, spec, &ctx->cache, &ctx->owner, 1};
    if (st == SSMJIT_OK)
        st = sj_image_get(&job, image, &size, NULL);
    return st;
}

ssmjit_status sj_image_load_raw(ssmjit_context *ctx, const void *image, const char *name, int library)
{
    const sj_driver *d = ctx->drv;
    CUfunction fn;
    ssmjit_status st;
    if (library) {
        CUlibrary lib;
        CUkernel k;
        st = SJ_CU(d, LibraryLoadData, &lib, image, NULL, NULL, 0, NULL, NULL, 0);
        if (st == SSMJIT_OK)
            st = SJ_CU(d, LibraryGetKernel, &k, lib, name);
        if (st == SSMJIT_OK)
            st = SJ_CU(d, KernelGetFunction, &fn, k);
    } else {
        CUmodule mod;
        st = SJ_CU(d, ModuleLoadData, &mod, image);
        if (st == SSMJIT_OK)
            st = SJ_CU(d, ModuleGetFunction, &fn, mod, name);
    }
    return st;
}

ssmjit_status sj_cublas_path(const char **path)
{
    const sj_cublas *cublas;
    ssmjit_status st = sj_cublas_get(&cublas);
    *path = st == SSMJIT_OK ? cublas->path : NULL;
    return st;
}

uint64_t sj_cache_entry_bytes(size_t payload) { return (uint64_t)payload + SJ_ENTRY_HEADER_SIZE; }

ssmjit_status sj_cache_fabricate(const char *dir, const void *seed, size_t seed_len, const char *label,
                                 const char *target, const void *payload, size_t size, int store,
                                 uint64_t max_bytes, char *path, size_t cap)
{
    sj_cache_entry_id id = {{0}, label, target, 13, 0, 0};
    sj_sha256 h;
    sj_sha256_init(&h);
    sj_sha256_update(&h, seed, seed_len);
    sj_sha256_final(&h, id.key);
    if (sj_cache_entry_path(dir, &id, path, cap) != 0)
        return sj_error(SSMJIT_ERR_IO, "a cache entry's path under %s does not fit in %zu bytes", dir, cap);
    return store ? sj_cache_store(dir, max_bytes, path, id.key, 0, payload, size)
                 : sj_cache_entry_write(path, id.key, 0, payload, size);
}
