/* Offline compilation into a cache directory, for `ssmjit prewarm` and the
 * install-time layer: no GPU needed.  Each unit goes through the same
 * pipeline as a context's lookup (sj_image_get), with the directory as the
 * only cache, read-write, and nothing kept in memory; so the entry is the
 * one a context on a device of the requested arch, with the same options,
 * looks up. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "cache/cache.h"
#include "base/error.h"
#include "image.h"
#include "base/pool.h"
#include "toolchain.h"

SSMJIT_API void ssmjit_prewarm_options_init(ssmjit_prewarm_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
    opts->fast_math = -1;
}

typedef struct prewarm {
    sj_cache_config cache;
    sj_compile_spec spec[2]; /* [fast_math] */
    int fast;                /* -1: each unit's default */
    char **defines;
    sj_image_owner owner;
} prewarm;

static ssmjit_status setup(const ssmjit_prewarm_options *o, prewarm *p)
{
    memset(p, 0, sizeof *p);
    SJ_TRY(sj_check_struct_size(o->struct_size, sizeof *o, "ssmjit_prewarm", "opts",
                                "ssmjit_prewarm_options_init"));
    if (o->fast_math < -1 || o->fast_math > 1)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "opts->fast_math = %d is not -1, 0 or 1", o->fast_math);
    int arch;
    SJ_TRY(sj_arch_parse(o->arch, &arch));
    /* Prewarm exists to write: under ro or off it would write what the
     * user said must not be written. */
    ssmjit_cache_mode mode;
    SJ_TRY(sj_cache_mode_resolve(SSMJIT_CACHE_DEFAULT, &mode));
    if (mode != SSMJIT_CACHE_RW)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "prewarm writes into the cache, and SSMJIT_CACHE=%s forbids writing",
                        mode == SSMJIT_CACHE_RO ? "ro" : "off");
    p->cache.mode = SSMJIT_CACHE_RW;
    p->cache.quiet = 1;
    SJ_TRY(sj_cache_dir_resolve(o->cache_dir, p->cache.dir, sizeof p->cache.dir));
    SJ_TRY(sj_cache_max_bytes(&p->cache.max_bytes));
    SJ_TRY(sj_cache_dir_check(p->cache.dir));
    size_t num_defines;
    SJ_TRY(sj_defines_normalize(o->defines, o->num_defines, &p->defines, &num_defines));
    sj_toolchain tc;
    ssmjit_status st = sj_toolchain_get(&p->cache, 1, &tc);
    if (st == SSMJIT_OK && sj_toolchain_cap(&tc, arch) != arch)
        st = sj_error(SSMJIT_ERR_UNSUPPORTED, "NVRTC %d.%d cannot compile for sm_%d", tc.major, tc.minor, arch);
    if (st != SSMJIT_OK) {
        free(p->defines);
        return st;
    }
    for (int f = 0; f < 2; f++)
        p->spec[f] = (sj_compile_spec){arch, 0, f, o->lineinfo != 0, (const char *const *)p->defines, num_defines};
    p->fast = o->fast_math;
    p->owner.on_compile = o->on_compile;
    p->owner.user = o->on_compile_user;
    return SSMJIT_OK;
}

static ssmjit_status prewarm_one(prewarm *p, size_t u, int *was_cached)
{
    int fast = p->fast >= 0 ? p->fast : !sj_modules[sj_units[u].module].backward;
    sj_image_job job = {u, &p->spec[fast], &p->cache, &p->owner, 0};
    size_t size;
    sj_image_origin origin;
    ssmjit_status st = sj_image_get(&job, NULL, &size, &origin);
    if (st == SSMJIT_OK)
        *was_cached = origin == SJ_IMAGE_CACHE;
    else
        sj_error(st, "unit %s: %s", sj_units[u].kernel, ssmjit_last_error());
    return st;
}

SSMJIT_API ssmjit_status ssmjit_prewarm_unit(const ssmjit_prewarm_options *opts, size_t unit, int *was_cached)
{
    if (!opts || !was_cached)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_prewarm_unit: %s is NULL", opts ? "was_cached" : "opts");
    if (unit >= SJ_UNIT_COUNT)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "unit index %zu is not below %d", unit, SJ_UNIT_COUNT);
    if (sj_modules[sj_units[unit].module].specialised)
        return sj_error(SSMJIT_ERR_INVALID_ARG,
                        "unit %s is compiled with a model's sizes, by the model that uses it, not by prewarm",
                        sj_units[unit].kernel);
    prewarm p;
    SJ_TRY(setup(opts, &p));
    ssmjit_status st = prewarm_one(&p, unit, was_cached);
    free(p.defines);
    return st;
}

/* Every unit as a task of the pool; the caller waits for them all. */
typedef struct batch {
    prewarm p;
    pthread_mutex_t lock;
    pthread_cond_t done;
    size_t left;
    ssmjit_prewarm_result result;
    ssmjit_status first;
    char first_message[1024];
} batch;

typedef struct unit_task {
    sj_pool_task task; /* first: the pool hands it back */
    batch *b;
    size_t unit;
    size_t cost; /* text_bytes(unit), the order of submission */
} unit_task;

static void run_unit(sj_pool_task *t)
{
    unit_task *ut = (unit_task *)t;
    batch *b = ut->b;
    int cached = 0;
    ssmjit_status st = prewarm_one(&b->p, ut->unit, &cached);
    pthread_mutex_lock(&b->lock);
    if (st != SSMJIT_OK) {
        b->result.failed++;
        if (b->first == SSMJIT_OK) {
            b->first = st;
            snprintf(b->first_message, sizeof b->first_message, "%s", ssmjit_last_error());
        }
    } else if (cached) {
        b->result.cached++;
    } else {
        b->result.compiled++;
    }
    if (--b->left == 0)
        pthread_cond_signal(&b->done);
    pthread_mutex_unlock(&b->lock);
    sj_error_clear();
}

static size_t text_bytes(size_t u)
{
    const sj_embedded_module *m = &sj_modules[sj_units[u].module];
    size_t n = m->source->size;
    for (size_t i = 0; i < m->num_headers; i++)
        n += m->headers[i]->size;
    return n;
}

static int costlier_first(const void *pa, const void *pb)
{
    const unit_task *a = pa, *b = pb;
    return a->cost != b->cost ? (a->cost < b->cost ? 1 : -1) : (a->unit > b->unit) - (a->unit < b->unit);
}

SSMJIT_API ssmjit_status ssmjit_prewarm(const ssmjit_prewarm_options *opts, ssmjit_prewarm_result *result)
{
    if (!opts)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_prewarm: opts is NULL");
    batch *b = calloc(1, sizeof *b);
    unit_task *tasks = calloc(SJ_UNIT_COUNT, sizeof *tasks);
    if (!b || !tasks) {
        free(b);
        free(tasks);
        return sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory");
    }
    ssmjit_status st = setup(opts, &b->p);
    if (st == SSMJIT_OK) {
        pthread_mutex_init(&b->lock, NULL);
        pthread_cond_init(&b->done, NULL);
        /* The costliest units first, so that the batch does not end with
         * one of them alone on the pool; a module's text (source and
         * headers) stands for what its units cost.  Specialised units are
         * compiled by the models that use them, with their sizes. */
        size_t n = 0;
        for (size_t i = 0; i < SJ_UNIT_COUNT; i++)
            if (!sj_modules[sj_units[i].module].specialised)
                tasks[n++] = (unit_task){{run_unit, NULL}, b, i, text_bytes(i)};
        b->left = n;
        qsort(tasks, n, sizeof *tasks, costlier_first);
        for (size_t i = 0; i < n; i++)
            sj_pool_submit(&tasks[i].task);
        pthread_mutex_lock(&b->lock);
        while (b->left)
            pthread_cond_wait(&b->done, &b->lock);
        pthread_mutex_unlock(&b->lock);
        pthread_cond_destroy(&b->done);
        pthread_mutex_destroy(&b->lock);
        st = b->first;
        if (st != SSMJIT_OK)
            sj_error(st, "%s", b->first_message);
        if (result)
            *result = b->result;
        free(b->p.defines);
    }
    free(tasks);
    free(b);
    return st;
}
