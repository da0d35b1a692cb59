/* Kernels specialised to a caller's sizes: units of a specialised module
 * (kernels_src/, "#define SJ_MODULE_SPECIALISED") compiled with the
 * caller's defines added to the context's, each into a module the caller
 * owns.  The defines are part of the spec, so of the cache key: each set
 * of sizes is its own cache entry, compiled once. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "context.h"

ssmjit_status sj_special_load(ssmjit_context *ctx, sj_module_id mod, sj_kernel_role role, const char *const *names,
                              size_t n, const char *const *defines, size_t num_defines, sj_special_kernel *out)
{
    memset(out, 0, n * sizeof *out);
    if (!sj_modules[mod].specialised)
        return sj_error(SSMJIT_ERR_INTERNAL, "module %s is not specialised", sj_modules[mod].name);
    const int fast = sj_context_fast(ctx, role);
    const sj_compile_spec *base;
    SJ_TRY(sj_context_spec(ctx, fast, &base));
    size_t total = base->num_defines + num_defines;
    const char **all = malloc((total ? total : 1) * sizeof *all);
    if (!all)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < base->num_defines; i++)
        all[i] = base->defines[i];
    for (size_t i = 0; i < num_defines; i++)
        all[base->num_defines + i] = defines[i];
    char **norm;
    size_t num_norm;
    ssmjit_status st = sj_defines_normalize(all, total, &norm, &num_norm);
    free(all);
    SJ_TRY(st);
    sj_compile_spec spec = *base;
    spec.defines = (const char *const *)norm;
    spec.num_defines = num_norm;

    /* Every unit is asked of the pool first, so that they compile side by
     * side; each get below waits for its own.  The queued tasks point at
     * `spec`, so every one is waited for before it goes, failure or not. */
    int *units = malloc((n ? n : 1) * sizeof *units);
    if (!units) {
        free(norm);
        return sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < n && st == SSMJIT_OK; i++) {
        units[i] = sj_unit_find(mod, names[i]);
        if (units[i] < 0)
            st = sj_error(SSMJIT_ERR_INTERNAL, "module %s has no kernel %s", sj_modules[mod].name, names[i]);
    }
    size_t queued = 0;
    for (; queued < n && st == SSMJIT_OK; queued++) {
        sj_image_job job = {(size_t)units[queued], &spec, &ctx->cache, &ctx->owner, 1};
        st = sj_image_request(&job);
    }
    int pushed = 0;
    ssmjit_status entered = sj_context_enter(ctx, &pushed);
    for (size_t i = 0; i < queued; i++) {
        sj_image_job job = {(size_t)units[i], &spec, &ctx->cache, &ctx->owner, 1};
        const void *image;
        size_t size;
        ssmjit_status got = sj_image_get(&job, &image, &size, NULL);
        if (st != SSMJIT_OK || got != SSMJIT_OK || entered != SSMJIT_OK) {
            if (st == SSMJIT_OK)
                st = got != SSMJIT_OK ? got : entered;
            continue;
        }
        st = SJ_CU(ctx->drv, ModuleLoadData, &out[i].module, image);
        if (st == SSMJIT_OK)
            st = SJ_CU(ctx->drv, ModuleGetFunction, &out[i].fn, out[i].module, names[i]);
        if (st != SSMJIT_OK)
            sj_error_append(" (loading a specialised unit)");
    }
    if (entered == SSMJIT_OK)
        sj_context_leave(ctx, pushed);
    free(units);
    free(norm);
    if (st != SSMJIT_OK)
        sj_special_unload(ctx, out, n);
    return st;
}

void sj_special_unload(ssmjit_context *ctx, sj_special_kernel *k, size_t n)
{
    int pushed = 0;
    if (sj_context_enter(ctx, &pushed) != SSMJIT_OK)
        return;
    for (size_t i = 0; i < n; i++) {
        if (k[i].module)
            (void)SJ_CU(ctx->drv, ModuleUnload, k[i].module);
        k[i] = (sj_special_kernel){NULL, NULL};
    }
    sj_context_leave(ctx, pushed);
}
