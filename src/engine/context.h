/* The context's internals.  context.c makes and enters contexts, module.c
 * and launch.c load and launch their units, scan_split.c keeps its split
 * memo here; the model layer, gemm.c and the CLI's benchmarks reach the
 * driver through it, and tests build stand-ins (sj_context_alloc). */
#ifndef SSMJIT_CONTEXT_H
#define SSMJIT_CONTEXT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>

#include "cache/cache.h"
#include "compile.h"
#include "cuda/driver.h"
#include "image.h"
#include "kernel.h"

/* A unit loaded into the context: its module and its one kernel.  fn is
 * published last, with release order, so a reader that sees it needs no
 * lock. */
typedef struct sj_unit_slot {
    _Atomic(CUfunction) fn;
    CUmodule module;
} sj_unit_slot;

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
    sj_cache_config cache;   /* resolved once, at creation */
    sj_image_owner owner;    /* this context's compile callback and queued work */

    pthread_mutex_t target_lock;
    atomic_int target_ready; /* spec[] below is valid */
    sj_compile_spec spec[2]; /* [fast_math]: what units are compiled with */

    pthread_mutex_t unit_lock; /* serialises loads into units[] */
    sj_unit_slot units[SJ_UNIT_COUNT][2]; /* [unit][fast_math] */

    /* the specs of specialised units (special.c): kept until the
     * context's queued compiles are released */
    sj_spec_set special_specs;

    /* the ops layer's own state (sj_context_ops_state), freed with the
     * context by ops_state_free; published with release order, so that
     * a reader that sees it needs no lock (a scan call asks each time) */
    pthread_mutex_t ops_state_lock;
    _Atomic(void *) ops_state;
    void (*ops_state_free)(void *);
};

/* A zeroed context with its locks made (ssmjit_context_create fills it;
 * tests make stand-ins from it).  NULL when out of memory. */
ssmjit_context *sj_context_alloc(void);

/* Makes ctx->cu current on this thread if it is not; *pushed says whether
 * sj_context_leave must pop it. */
ssmjit_status sj_context_enter(ssmjit_context *ctx, int *pushed);
void sj_context_leave(ssmjit_context *ctx, int pushed);

/* Resolves (once) what this context compiles for; *spec (may be NULL)
 * points at the spec of variant `fast`. */
ssmjit_status sj_context_spec(ssmjit_context *ctx, int fast, const sj_compile_spec **spec);

/* The fast-math variant a kernel of `role` takes in this context. */
int sj_context_fast(const ssmjit_context *ctx, sj_kernel_role role);

#endif
