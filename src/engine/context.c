#include "context.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "cache/cache.h"
#include "base/error.h"
#include "base/pool.h"
#include "toolchain.h"

SSMJIT_API void ssmjit_context_options_init(ssmjit_context_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
}

/* "0"/"1" switch from the environment: -1 when unset. */
static int env_switch(const char *name, ssmjit_status *st)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return -1;
    if (!strcmp(v, "0") || !strcmp(v, "1"))
        return v[0] - '0';
    *st = sj_error(SSMJIT_ERR_INVALID_ARG, "%s='%s' is not 0 or 1", name, v);
    return -1;
}

static ssmjit_status read_options(ssmjit_context *ctx, const ssmjit_context_options *o)
{
    SJ_TRY(sj_check_struct_size(o->struct_size, sizeof *o, "ssmjit_context_create", "options",
                                "ssmjit_context_options_init"));
    if (o->fast_math < SSMJIT_FAST_MATH_DEFAULT || o->fast_math > SSMJIT_FAST_MATH_OFF)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "options->fast_math = %d is not a ssmjit_fast_math",
                        (int)o->fast_math);
    if (o->device < 0)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "options->device = %d is negative", o->device);
    ssmjit_status st = SSMJIT_OK;
    int env_fast = env_switch("SSMJIT_FAST_MATH", &st);
    int env_det = env_switch("SSMJIT_DETERMINISTIC", &st);
    if (st != SSMJIT_OK)
        return st;
    ctx->fast_math = env_fast >= 0                              ? env_fast
                     : o->fast_math == SSMJIT_FAST_MATH_ON  ? 1
                     : o->fast_math == SSMJIT_FAST_MATH_OFF ? 0
                                                            : -1;
    ctx->deterministic = env_det >= 0 ? env_det : o->deterministic != 0;
    ctx->lineinfo = o->lineinfo != 0;
    ctx->owner.on_compile = o->on_compile;
    ctx->owner.user = o->on_compile_user;
    st = sj_cache_config_init(&ctx->cache, o->cache_dir, o->cache_mode, o->quiet != 0);
    if (st == SSMJIT_OK)
        st = sj_defines_normalize(o->defines, o->num_defines, &ctx->defines, &ctx->num_defines);
    return st;
}

static ssmjit_status read_props(ssmjit_context *ctx)
{
    static const struct {
        CUdevice_attribute attr;
        size_t offset;
    } attrs[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, offsetof(sj_device_props, cc_major)},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, offsetof(sj_device_props, cc_minor)},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, offsetof(sj_device_props, sm_count)},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, offsetof(sj_device_props, max_threads_per_sm)},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, offsetof(sj_device_props, max_smem_per_block_optin)},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, offsetof(sj_device_props, max_smem_per_sm)},
        {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, offsetof(sj_device_props, l2_bytes)},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        int *field = (int *)((char *)&ctx->props + attrs[i].offset);
        ssmjit_status st = SJ_CU(ctx->drv, DeviceGetAttribute, field, attrs[i].attr, ctx->device);
        if (st != SSMJIT_OK)
            return st;
    }
    return SSMJIT_OK;
}

static ssmjit_status attach_device(ssmjit_context *ctx, const ssmjit_context_options *o)
{
    const sj_driver *d = ctx->drv;
    if (o->cu_context) {
        ctx->cu = (CUcontext)o->cu_context;
        ssmjit_status st = SJ_CU(d, CtxPushCurrent, ctx->cu);
        if (st != SSMJIT_OK)
            return st;
        st = SJ_CU(d, CtxGetDevice, &ctx->device);
        CUcontext popped;
        (void)SJ_CU(d, CtxPopCurrent, &popped);
        ctx->ordinal = (int)ctx->device;
        return st;
    }
    int count = 0;
    ssmjit_status st = SJ_CU(d, DeviceGetCount, &count);
    if (st != SSMJIT_OK)
        return st;
    if (o->device >= count)
        return sj_error(SSMJIT_ERR_NO_DEVICE, "device %d requested, but there %s %d CUDA device%s",
                        o->device, count == 1 ? "is" : "are", count, count == 1 ? "" : "s");
    ctx->ordinal = o->device;
    st = SJ_CU(d, DeviceGet, &ctx->device, o->device);
    if (st == SSMJIT_OK)
        st = SJ_CU(d, DevicePrimaryCtxRetain, &ctx->cu, ctx->device);
    ctx->owns_primary = st == SSMJIT_OK;
    return st;
}

SSMJIT_API ssmjit_status ssmjit_context_create(const ssmjit_context_options *opts, ssmjit_context **out)
{
    if (!out)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_context_create: out is NULL");
    *out = NULL;
    ssmjit_context_options defaults;
    ssmjit_context_options_init(&defaults);
    if (!opts)
        opts = &defaults;
    ssmjit_context *ctx = sj_context_alloc();
    if (!ctx)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory for a context");

    ssmjit_status st = read_options(ctx, opts);
    const char *arch_env = getenv("SSMJIT_ARCH");
    if (st == SSMJIT_OK && arch_env && *arch_env && sj_arch_parse(arch_env, &ctx->want_arch) != SSMJIT_OK)
        st = sj_error(SSMJIT_ERR_INVALID_ARG, "SSMJIT_ARCH='%s' is not an architecture like sm_80", arch_env);
    if (st == SSMJIT_OK)
        st = sj_driver_get(&ctx->drv);
    if (st == SSMJIT_OK)
        st = attach_device(ctx, opts);
    if (st == SSMJIT_OK)
        st = read_props(ctx);
    if (st != SSMJIT_OK) {
        ssmjit_context_destroy(ctx);
        return st;
    }
    if (!ctx->want_arch)
        ctx->want_arch = ctx->props.cc_major * 10 + ctx->props.cc_minor;
    *out = ctx;
    return SSMJIT_OK;
}

/* The units' modules (module.c loads them into the context's slots). */
static void unload_units(ssmjit_context *ctx)
{
    int pushed = 0;
    if (sj_context_enter(ctx, &pushed) != SSMJIT_OK)
        return;
    for (size_t u = 0; u < SJ_UNIT_COUNT; u++)
        for (int fast = 0; fast < 2; fast++)
            if (ctx->units[u][fast].module)
                (void)SJ_CU(ctx->drv, ModuleUnload, ctx->units[u][fast].module);
    sj_context_leave(ctx, pushed);
}

SSMJIT_API void ssmjit_context_destroy(ssmjit_context *ctx)
{
    if (!ctx)
        return;
    /* Queued compiles of this context are dropped and running ones waited
     * for: none may call its callback, or read its settings, later. */
    sj_image_owner_release(&ctx->owner);
    if (ctx->cu)
        unload_units(ctx);
    if (ctx->owns_primary)
        (void)SJ_CU(ctx->drv, DevicePrimaryCtxRelease, ctx->device);
    pthread_mutex_destroy(&ctx->target_lock);
    pthread_mutex_destroy(&ctx->unit_lock);
    void *ops_state = atomic_load_explicit(&ctx->ops_state, memory_order_acquire);
    if (ops_state)
        ctx->ops_state_free(ops_state);
    pthread_mutex_destroy(&ctx->ops_state_lock);
    sj_spec_set_free(&ctx->special_specs);
    free(ctx->defines);
    free(ctx);
}

ssmjit_context *sj_context_alloc(void)
{
    ssmjit_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return NULL;
    pthread_mutex_init(&ctx->target_lock, NULL);
    pthread_mutex_init(&ctx->unit_lock, NULL);
    pthread_mutex_init(&ctx->ops_state_lock, NULL);
    sj_spec_set_init(&ctx->special_specs);
    return ctx;
}

ssmjit_status sj_context_spec(ssmjit_context *ctx, int fast, const sj_compile_spec **spec)
{
    ssmjit_status st = SSMJIT_OK;
    if (!atomic_load_explicit(&ctx->target_ready, memory_order_acquire)) {
        pthread_mutex_lock(&ctx->target_lock);
        if (!atomic_load_explicit(&ctx->target_ready, memory_order_relaxed)) {
            sj_toolchain tc;
            int arch = 0, ptx = 0;
            st = sj_toolchain_get(&ctx->cache, 0, &tc);
            if (st == SSMJIT_OK)
                st = sj_arch_target(&tc, ctx->want_arch, ctx->props.cc_major * 10 + ctx->props.cc_minor,
                                    &arch, &ptx);
            for (int f = 0; f < 2 && st == SSMJIT_OK; f++)
                ctx->spec[f] = (sj_compile_spec){arch, ptx, f, ctx->lineinfo,
                                                 (const char *const *)ctx->defines, ctx->num_defines};
            if (st == SSMJIT_OK)
                atomic_store_explicit(&ctx->target_ready, 1, memory_order_release);
        }
        pthread_mutex_unlock(&ctx->target_lock);
    }
    if (spec)
        *spec = &ctx->spec[fast != 0];
    return st;
}

void *sj_context_ops_state(ssmjit_context *ctx, void *(*make)(void), void (*release)(void *))
{
    void *state = atomic_load_explicit(&ctx->ops_state, memory_order_acquire);
    if (state)
        return state;
    pthread_mutex_lock(&ctx->ops_state_lock);
    state = atomic_load_explicit(&ctx->ops_state, memory_order_relaxed);
    if (!state && (state = make()) != NULL) {
        ctx->ops_state_free = release;
        atomic_store_explicit(&ctx->ops_state, state, memory_order_release);
    }
    pthread_mutex_unlock(&ctx->ops_state_lock);
    return state;
}

int sj_context_fast(const ssmjit_context *ctx, sj_kernel_role role)
{
    return ctx->fast_math >= 0 ? ctx->fast_math : role == SJ_ROLE_FORWARD;
}

SSMJIT_API ssmjit_status ssmjit_context_get_info(ssmjit_context *ctx, ssmjit_context_info *out)
{
    if (!ctx || !out)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_context_get_info: %s is NULL", ctx ? "out" : "ctx");
    const sj_compile_spec *spec;
    ssmjit_status st = sj_context_spec(ctx, 0, &spec);
    if (st != SSMJIT_OK)
        return st;
    memset(out, 0, sizeof *out);
    out->device = ctx->ordinal;
    out->cc_major = ctx->props.cc_major;
    out->cc_minor = ctx->props.cc_minor;
    sj_arch_name(spec->arch, spec->ptx, out->target, sizeof out->target);
    out->target_is_ptx = spec->ptx;
    out->sm_count = ctx->props.sm_count;
    out->cache_mode = sj_cache_config_mode(&ctx->cache);
    snprintf(out->cache_dir, sizeof out->cache_dir, "%s", ctx->cache.dir);
    out->deterministic = ctx->deterministic;
    return SSMJIT_OK;
}

SSMJIT_API void ssmjit_set_compile_threads(int n) { sj_pool_set_threads(n); }

SSMJIT_API int ssmjit_compile_threads(void) { return sj_pool_threads(); }

ssmjit_status sj_context_enter(ssmjit_context *ctx, int *pushed)
{
    CUcontext current = NULL;
    *pushed = 0;
    ssmjit_status st = SJ_CU(ctx->drv, CtxGetCurrent, &current);
    if (st != SSMJIT_OK || current == ctx->cu)
        return st;
    st = SJ_CU(ctx->drv, CtxPushCurrent, ctx->cu);
    *pushed = st == SSMJIT_OK;
    return st;
}

void sj_context_leave(ssmjit_context *ctx, int pushed)
{
    CUcontext popped;
    if (pushed)
        (void)SJ_CU(ctx->drv, CtxPopCurrent, &popped);
}

const sj_device_props *sj_context_props(const ssmjit_context *ctx) { return &ctx->props; }

int sj_context_deterministic(const ssmjit_context *ctx) { return ctx->deterministic; }
