/* Units in a context: each kernel is its own CUDA module, loaded on first
 * use (or ahead of it), then found without locking. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "base/error.h"

static sj_image_job unit_job(ssmjit_context *ctx, size_t u, const sj_compile_spec *spec)
{
    return (sj_image_job){u, spec, &ctx->cache, &ctx->owner, 1};
}

int sj_unit_fast(const ssmjit_context *ctx, size_t u)
{
    return sj_context_fast(ctx, sj_modules[sj_units[u].module].backward ? SJ_ROLE_BACKWARD : SJ_ROLE_FORWARD);
}

int sj_unit_loaded(const ssmjit_context *ctx, size_t u, int fast)
{
    return atomic_load_explicit(&ctx->units[u][fast != 0].fn, memory_order_acquire) != NULL;
}

ssmjit_status sj_unit_request(ssmjit_context *ctx, size_t u, int fast)
{
    if (sj_unit_loaded(ctx, u, fast))
        return SSMJIT_OK;
    const sj_compile_spec *spec;
    SJ_TRY(sj_context_spec(ctx, fast, &spec));
    sj_image_job job = unit_job(ctx, u, spec);
    return sj_image_request(&job);
}

ssmjit_status sj_unit_load(ssmjit_context *ctx, size_t u, int fast, CUfunction *fn)
{
    sj_unit_slot *slot = &ctx->units[u][fast != 0];
    CUfunction f = atomic_load_explicit(&slot->fn, memory_order_acquire);
    if (f) {
        *fn = f;
        return SSMJIT_OK;
    }
    const sj_compile_spec *spec;
    SJ_TRY(sj_context_spec(ctx, fast, &spec));
    sj_image_job job = unit_job(ctx, u, spec);
    const void *image = NULL;
    size_t size = 0;
    SJ_TRY(sj_image_get(&job, &image, &size, NULL));

    /* Loaded outside the lock, so that units of one context load side by
     * side; a thread that loses the race unloads its copy. */
    const char *name = sj_units[u].kernel;
    CUmodule module = NULL;
    int pushed = 0;
    ssmjit_status st = sj_context_enter(ctx, &pushed);
    if (st != SSMJIT_OK)
        return st;
    st = SJ_CU(ctx->drv, ModuleLoadData, &module, image);
    if (st == SSMJIT_OK) {
        st = SJ_CU(ctx->drv, ModuleGetFunction, &f, module, name);
        if (st != SSMJIT_OK)
            sj_error_append(" (the unit's module lacks its kernel)");
    } else {
        sj_error_append(spec->ptx ? " (loading PTX of " : " (loading ");
        sj_error_append(name);
        sj_error_append(")");
    }
    pthread_mutex_lock(&ctx->unit_lock);
    CUfunction won = atomic_load_explicit(&slot->fn, memory_order_relaxed);
    if (st == SSMJIT_OK && !won) {
        slot->module = module;
        atomic_store_explicit(&slot->fn, f, memory_order_release);
        module = NULL;
    } else if (won) {
        f = won;
        st = SSMJIT_OK;
    }
    pthread_mutex_unlock(&ctx->unit_lock);
    if (module)
        (void)SJ_CU(ctx->drv, ModuleUnload, module);
    sj_context_leave(ctx, pushed);
    if (st == SSMJIT_OK)
        *fn = f;
    return st;
}

static ssmjit_status find_unit(sj_module_id mod, const char *name, int *u)
{
    *u = sj_unit_find(mod, name);
    return *u >= 0 ? SSMJIT_OK
                   : sj_error(SSMJIT_ERR_INTERNAL, "module %s has no kernel %s", sj_modules[mod].name, name);
}

ssmjit_status sj_kernel_get(ssmjit_context *ctx, sj_module_id mod, sj_kernel_role role, const char *name,
                            CUfunction *fn)
{
    int u;
    SJ_TRY(find_unit(mod, name, &u));
    return sj_unit_load(ctx, (size_t)u, sj_context_fast(ctx, role), fn);
}

ssmjit_status sj_kernels_request(ssmjit_context *ctx, sj_module_id mod, sj_kernel_role role,
                                 const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int u;
        SJ_TRY(find_unit(mod, names[i], &u));
        SJ_TRY(sj_unit_request(ctx, (size_t)u, sj_context_fast(ctx, role)));
    }
    return SSMJIT_OK;
}

/* Every unit's image is asked of the pool first, so that compiles (on a
 * cold cache) and reads run side by side while this thread loads them
 * into the context in order, each as soon as it is there.  Specialised
 * units are left to the models that use them (special.c). */
SSMJIT_API ssmjit_status ssmjit_context_load_all(ssmjit_context *ctx)
{
    if (!ctx)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_context_load_all: ctx is NULL");
    for (size_t u = 0; u < SJ_UNIT_COUNT; u++)
        if (!sj_modules[sj_units[u].module].specialised)
            SJ_TRY(sj_unit_request(ctx, u, sj_unit_fast(ctx, u)));
    for (size_t u = 0; u < SJ_UNIT_COUNT; u++) {
        CUfunction fn;
        if (!sj_modules[sj_units[u].module].specialised)
            SJ_TRY(sj_unit_load(ctx, u, sj_unit_fast(ctx, u), &fn));
    }
    return SSMJIT_OK;
}
