/* Kernels specialised to a caller's sizes: units of a specialised module
 * (kernels_src/, "#define SJ_MODULE_SPECIALISED") compiled with the
 * caller's defines added to the context's, each into a module the caller
 * owns.  The defines are part of the spec, so of the cache key: each set
 * of sizes is its own cache entry, compiled once.  The specs live in the
 * context (until its queued compiles are released at destroy), so that a
 * caller can queue units ahead of need and go. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "context.h"

/* The jobs of `names` in specialised module mod. */
static ssmjit_status special_jobs(ssmjit_context *ctx, sj_module_id mod, sj_kernel_role role,
                                  const char *const *names, size_t n, const char *const *defines,
                                  size_t num_defines, sj_image_job *jobs)
{
    if (!sj_modules[mod].specialised)
        return sj_error(SSMJIT_ERR_INTERNAL, "module %s is not specialised", sj_modules[mod].name);
    /* the role's spec with `defines` added: made once per set of defines,
     * kept until the context goes */
    const sj_compile_spec *base, *spec = NULL;
    SJ_TRY(sj_context_spec(ctx, sj_context_fast(ctx, role), &base));
    SJ_TRY(sj_spec_set_get(&ctx->special_specs, base, defines, num_defines, &spec));
    for (size_t i = 0; i < n; i++) {
        int u = sj_unit_find(mod, names[i]);
        if (u < 0)
            return sj_error(SSMJIT_ERR_INTERNAL, "module %s has no kernel %s", sj_modules[mod].name, names[i]);
        jobs[i] = (sj_image_job){(size_t)u, spec, &ctx->cache, &ctx->owner, 1};
    }
    return SSMJIT_OK;
}

ssmjit_status sj_special_request(ssmjit_context *ctx, sj_module_id mod, sj_kernel_role role,
                                 const char *const *names, size_t n, const char *const *defines,
                                 size_t num_defines)
{
    sj_image_job *jobs = malloc((n ? n : 1) * sizeof *jobs);
    if (!jobs)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory");
    ssmjit_status st = special_jobs(ctx, mod, role, names, n, defines, num_defines, jobs);
    for (size_t i = 0; i < n && st == SSMJIT_OK; i++)
        st = sj_image_request(&jobs[i]);
    free(jobs);
    return st;
}

ssmjit_status sj_special_load(ssmjit_context *ctx, sj_module_id mod, sj_kernel_role role, const char *const *names,
                              size_t n, const char *const *defines, size_t num_defines, sj_special_kernel *out)
{
    memset(out, 0, n * sizeof *out);
    /* every unit asked of the pool first, so that they compile side by
     * side; each get below waits for its own */
    SJ_TRY(sj_special_request(ctx, mod, role, names, n, defines, num_defines));
    sj_image_job *jobs = malloc((n ? n : 1) * sizeof *jobs);
    if (!jobs)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory");
    const void **images = malloc((n ? n : 1) * sizeof *images);
    ssmjit_status st = images ? special_jobs(ctx, mod, role, names, n, defines, num_defines, jobs)
                              : sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < n && st == SSMJIT_OK; i++) {
        size_t size;
        st = sj_image_get(&jobs[i], &images[i], &size, NULL);
    }
    int pushed = 0, entered = 0;
    if (st == SSMJIT_OK)
        entered = (st = sj_context_enter(ctx, &pushed)) == SSMJIT_OK;
    for (size_t i = 0; i < n && st == SSMJIT_OK; i++) {
        st = SJ_CU(ctx->drv, ModuleLoadData, &out[i].module, images[i]);
        if (st == SSMJIT_OK)
            st = SJ_CU(ctx->drv, ModuleGetFunction, &out[i].fn, out[i].module, names[i]);
        if (st != SSMJIT_OK)
            sj_error_append(" (loading a specialised unit)");
    }
    if (entered)
        sj_context_leave(ctx, pushed);
    free(images);
    free(jobs);
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
