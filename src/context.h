/* The context's internals, shared by context.c, module.c and launch.c. */
#ifndef SSMJIT_CONTEXT_H
#define SSMJIT_CONTEXT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>

#include "compile.h"
#include "driver.h"
#include "image.h"
#include "kernel.h"

/* Kernels looked up by name per module: open addressing, filled under the
 * module's lock, read without one (the name is published last, with
 * release order, so a reader that sees it also sees the function). */
#define SJ_FUNC_SLOTS 512

typedef struct sj_func_slot {
    _Atomic(const char *) name;
    CUfunction fn;
} sj_func_slot;

typedef struct sj_module {
    _Atomic(CUmodule) handle;
    pthread_mutex_t lock;
    sj_func_slot funcs[SJ_FUNC_SLOTS];
} sj_module;

struct ssmjit_context {
    const sj_driver *drv;
    CUdevice device;
    int ordinal;
    CUcontext cu;
    int owns_primary;        /* we retained the primary context: release it */
    sj_device_props props;
    int want_arch;           /* the device's arch, or SSMJIT_ARCH */
    int fast_math;           /* -1: per kernel role, 0: off, 1: on */
    int deterministic;
    int lineinfo;
    char **defines;          /* normalised */
    size_t num_defines;
    char cache_dir[PATH_MAX];
    ssmjit_cache_mode cache_mode;
    uint64_t cache_max_bytes;
    int quiet;

    pthread_mutex_t target_lock;
    atomic_int target_ready; /* arch/ptx below are valid */
    int target_arch, target_ptx;

    sj_module modules[SJ_MODULE_COUNT][2]; /* [module][fast_math] */

    /* the scan's split over L, each direction's last choice
     * (scan_split.c: its key, then the segments; 0 none yet) */
    pthread_mutex_t split_lock;
    int64_t split_memo[2][6];
};

/* Makes ctx->cu current on this thread if it is not; *pushed says whether
 * sj_context_leave must pop it. */
ssmjit_status sj_context_enter(ssmjit_context *ctx, int *pushed);
void sj_context_leave(ssmjit_context *ctx, int pushed);

/* Resolves (once) what this context compiles for. */
ssmjit_status sj_context_target(ssmjit_context *ctx, int *arch, int *ptx);

/* Loads variant `fast` of module `mod` if not loaded yet. */
ssmjit_status sj_module_ensure(ssmjit_context *ctx, sj_module_id mod, int fast, CUmodule *out);

/* Unloads every module and frees its kernel table (context destruction). */
void sj_modules_unload(ssmjit_context *ctx);

#endif
