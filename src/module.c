/* Per-context modules: loaded on first use of any of their kernels, then
 * found without locking. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "error.h"

ssmjit_status sj_module_ensure(ssmjit_context *ctx, sj_module_id mod, int fast, CUmodule *out)
{
    sj_module *m = &ctx->modules[mod][fast];
    CUmodule h = atomic_load_explicit(&m->handle, memory_order_acquire);
    if (h) {
        *out = h;
        return SSMJIT_OK;
    }
    pthread_mutex_lock(&m->lock);
    ssmjit_status st = SSMJIT_OK;
    h = atomic_load_explicit(&m->handle, memory_order_relaxed);
    if (!h) {
        sj_compile_spec spec = {0};
        st = sj_context_target(ctx, &spec.arch, &spec.ptx);
        spec.fast_math = fast;
        spec.lineinfo = ctx->lineinfo;
        spec.defines = (const char *const *)ctx->defines;
        spec.num_defines = ctx->num_defines;
        sj_cache_config cache = {ctx->cache_dir, ctx->cache_mode, ctx->quiet, ctx->cache_max_bytes};
        const void *image = NULL;
        size_t size = 0;
        if (st == SSMJIT_OK)
            st = sj_image_get(&sj_modules[mod], &spec, &cache, &image, &size);
        int pushed = 0;
        if (st == SSMJIT_OK)
            st = sj_context_enter(ctx, &pushed);
        if (st == SSMJIT_OK) {
            st = SJ_CU(ctx->drv, ModuleLoadData, &h, image);
            sj_context_leave(ctx, pushed);
        }
        if (st == SSMJIT_OK)
            atomic_store_explicit(&m->handle, h, memory_order_release);
        else
            sj_error_append(spec.ptx ? " (loading PTX)" : "");
    }
    pthread_mutex_unlock(&m->lock);
    *out = h;
    return st;
}

static size_t name_hash(const char *s)
{
    size_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static int module_fast(const ssmjit_context *ctx, sj_kernel_role role)
{
    return ctx->fast_math >= 0 ? ctx->fast_math : role == SJ_ROLE_FORWARD;
}

ssmjit_status sj_kernel_get(ssmjit_context *ctx, sj_module_id mod, sj_kernel_role role,
                            const char *name, CUfunction *fn)
{
    int fast = module_fast(ctx, role);
    sj_module *m = &ctx->modules[mod][fast];
    size_t start = name_hash(name) % SJ_FUNC_SLOTS;
    for (size_t i = 0; i < SJ_FUNC_SLOTS; i++) {
        sj_func_slot *s = &m->funcs[(start + i) % SJ_FUNC_SLOTS];
        const char *n = atomic_load_explicit(&s->name, memory_order_acquire);
        if (!n)
            break;
        if (!strcmp(n, name)) {
            *fn = s->fn;
            return SSMJIT_OK;
        }
    }

    CUmodule h;
    ssmjit_status st = sj_module_ensure(ctx, mod, fast, &h);
    if (st != SSMJIT_OK)
        return st;
    *fn = NULL;
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < SJ_FUNC_SLOTS; i++) {
        sj_func_slot *s = &m->funcs[(start + i) % SJ_FUNC_SLOTS];
        const char *n = atomic_load_explicit(&s->name, memory_order_relaxed);
        if (n && !strcmp(n, name)) {
            *fn = s->fn;
            break;
        }
        if (n)
            continue;
        int pushed = 0;
        st = sj_context_enter(ctx, &pushed);
        if (st == SSMJIT_OK) {
            st = SJ_CU(ctx->drv, ModuleGetFunction, &s->fn, h, name);
            sj_context_leave(ctx, pushed);
        }
        if (st == SSMJIT_OK) {
            *fn = s->fn;
            /* Callers often build names in stack buffers: keep a copy. */
            char *copy = strdup(name);
            if (!copy)
                st = sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory");
            else
                atomic_store_explicit(&s->name, copy, memory_order_release);
        } else {
            sj_error_append(" (module ");
            sj_error_append(sj_modules[mod].name);
            sj_error_append(")");
        }
        pthread_mutex_unlock(&m->lock);
        return st;
    }
    pthread_mutex_unlock(&m->lock);
    return st == SSMJIT_OK && !*fn ? sj_error(SSMJIT_ERR_INTERNAL, "kernel table of %s is full",
                                              sj_modules[mod].name)
                                   : st;
}

void sj_modules_unload(ssmjit_context *ctx)
{
    int pushed = 0;
    int entered = sj_context_enter(ctx, &pushed) == SSMJIT_OK;
    for (int mod = 0; mod < SJ_MODULE_COUNT; mod++)
        for (int fast = 0; fast < 2; fast++) {
            sj_module *m = &ctx->modules[mod][fast];
            CUmodule h = atomic_load(&m->handle);
            if (h && entered)
                (void)SJ_CU(ctx->drv, ModuleUnload, h);
            for (size_t i = 0; i < SJ_FUNC_SLOTS; i++)
                free((void *)atomic_load(&m->funcs[i].name));
        }
    if (entered)
        sj_context_leave(ctx, pushed);
}
