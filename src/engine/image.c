#include "image.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch.h"
#include "base/error.h"
#include "base/pool.h"
#include "toolchain.h"

/* One key's image.  QUEUED: a task is on the pool (or was just taken by a
 * worker); RUNNING: a thread produces it; READY: in memory for good;
 * FAILED: out of the table, kept until its waiters have read why. */
enum { QUEUED, RUNNING, READY, FAILED };

typedef struct entry {
    uint8_t key[32];
    int state;
    int refs; /* the table's, each waiter's, the queued task's */
    void *image;
    size_t size;
    sj_image_origin origin;
    ssmjit_status status; /* FAILED */
    char *message;
    sj_image_job job; /* what the queued task produces */
    sj_pool_task task;
    struct entry *next;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static entry *entries;
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT, exit_once = PTHREAD_ONCE_INIT;

static entry *find(const uint8_t key[32])
{
    for (entry *e = entries; e; e = e->next)
        if (!memcmp(e->key, key, 32))
            return e;
    return NULL;
}

static void unlink_entry(entry *gone)
{
    for (entry **p = &entries; *p; p = &(*p)->next)
        if (*p == gone) {
            *p = gone->next;
            return;
        }
}

/* Under lock. */
static void unref(entry *e)
{
    if (--e->refs == 0) {
        free(e->image);
        free(e->message);
        free(e);
    }
}

/* Under lock: e leaves the table as FAILED with st (SSMJIT_OK: nothing
 * failed, waiters look again) and `message`; the table's reference goes.
 * Waiters are woken by the caller's broadcast. */
static void fail_entry(entry *e, ssmjit_status st, const char *message)
{
    e->state = FAILED;
    e->status = st;
    e->message = message ? strdup(message) : NULL;
    unlink_entry(e);
    unref(e);
}

/* Under lock: takes queued e's task off the pool if no worker has started
 * it (1), releasing the task's reference and its owner's count. */
static int cancel_task(entry *e)
{
    if (e->state != QUEUED || !sj_pool_cancel(&e->task))
        return 0;
    if (e->job.owner)
        e->job.owner->pending--;
    e->refs--; /* the task's: the table's remains */
    return 1;
}

/* ---- process hooks ------------------------------------------------------ */

/* At exit no pool worker may be inside NVRTC while its library is torn
 * down: the queued tasks are dropped and the running ones waited for.
 * Registered after the first compile, so after NVRTC's own exit handlers
 * (which run in reverse order of registration): this one runs first. */
static void stop_at_exit(void)
{
    pthread_mutex_lock(&lock);
    for (entry *e = entries, *next; e; e = next) {
        next = e->next;
        if (cancel_task(e))
            fail_entry(e, SSMJIT_ERR_INTERNAL, "the process is exiting");
    }
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    sj_pool_stop();
}

static void register_exit(void) { atexit(stop_at_exit); }

/* fork: the child has none of the parent's workers, so what they were
 * producing will never come; it leaves the table (leaked, not freed: a
 * worker of the parent owned it) and is produced again on demand. */
static void atfork_prepare(void)
{
    pthread_mutex_lock(&lock);
    sj_pool_atfork_prepare();
}

static void atfork_parent(void)
{
    sj_pool_atfork_parent();
    pthread_mutex_unlock(&lock);
}

static void atfork_child(void)
{
    sj_pool_atfork_child();
    for (entry **p = &entries; *p;) {
        if ((*p)->state != READY) {
            if ((*p)->job.owner)
                (*p)->job.owner->pending = 0;
            *p = (*p)->next;
        } else {
            p = &(*p)->next;
        }
    }
    pthread_mutex_unlock(&lock);
}

/* The exit handler is registered here too, for pools that start with no
 * compile (every unit in the cache): then only their idle threads are to
 * be joined.  Registered again after the first compile (register_exit),
 * it runs before NVRTC's own handlers; a second run finds nothing to do. */
static void install_hooks(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    atexit(stop_at_exit);
}

/* ---- producing ---------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void tell(const sj_image_job *job, const char *target, int done, double seconds, ssmjit_status st)
{
    if (!job->owner || !job->owner->on_compile)
        return;
    const sj_embedded_unit *u = &sj_units[job->unit];
    ssmjit_compile_event ev = {u->kernel, sj_modules[u->module].name, target, job->spec->fast_math,
                               done, seconds, st};
    job->owner->on_compile(&ev, job->owner->user);
}

/* The cache entry of job's unit under key (target names its buffer). */
static sj_cache_entry_id entry_id(const sj_image_job *job, const sj_toolchain *tc, const uint8_t key[32],
                                  char *target, size_t cap)
{
    sj_arch_name(job->spec->arch, job->spec->ptx, target, cap);
    sj_cache_entry_id id = {{0}, sj_units[job->unit].kernel, target, tc->major, tc->minor, job->spec->ptx};
    memcpy(id.key, key, 32);
    return id;
}

/* The cache's layers, else NVRTC (then the user's cache).  Sets *retry
 * when the NVRTC actually loaded is not the one the key was made for: the
 * caller must make the key again. */
static ssmjit_status produce(const sj_image_job *job, const sj_toolchain *tc, const uint8_t key[32],
                             entry *e, int *retry)
{
    const sj_compile_spec *spec = job->spec;
    char target[32];
    sj_cache_entry_id id = entry_id(job, tc, key, target, sizeof target);
    int layer;
    if (sj_cache_lookup(job->cache, &id, &e->image, &e->size, &layer) == SSMJIT_OK) {
        e->origin = layer < 0 ? SJ_IMAGE_CACHE : SJ_IMAGE_LAYER;
        return SSMJIT_OK;
    }
    sj_error_clear();
    sj_toolchain real;
    SJ_TRY(sj_toolchain_get(job->cache, 1, &real));
    if (!sj_toolchain_equal(&real, tc)) {
        *retry = 1;
        return SSMJIT_OK;
    }
    tell(job, target, 0, 0.0, SSMJIT_OK);
    double t0 = now();
    ssmjit_status st = sj_compile_unit(job->unit, spec, &e->image, &e->size);
    tell(job, target, 1, now() - t0, st);
    pthread_once(&exit_once, register_exit);
    if (st != SSMJIT_OK)
        return st;
    e->origin = SJ_IMAGE_COMPILED;
    st = sj_cache_put(job->cache, &id, e->image, e->size);
    if (st != SSMJIT_OK && job->keep) {
        /* the kernel still runs, from memory */
        sj_cache_warn_once(job->cache->quiet, ssmjit_last_error());
        sj_error_clear();
        st = SSMJIT_OK;
    }
    return st;
}

/* Produces e (RUNNING, one ref held by the caller besides the table's) and
 * publishes the result. */
static ssmjit_status run_entry(entry *e, const sj_image_job *job, const sj_toolchain *tc, int *retry)
{
    ssmjit_status st = produce(job, tc, e->key, e, retry);
    pthread_mutex_lock(&lock);
    if (st == SSMJIT_OK && !*retry && job->keep) {
        e->state = READY;
    } else {
        /* Failed, or stale, or done but not to be kept: out of the table.
         * Waiters take a failure as theirs, else look again. */
        fail_entry(e, st, st != SSMJIT_OK ? ssmjit_last_error() : NULL);
    }
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    return st;
}

static void run_task(sj_pool_task *task)
{
    entry *e = (entry *)((char *)task - offsetof(entry, task));
    sj_image_owner *owner = e->job.owner;
    pthread_mutex_lock(&lock);
    e->state = RUNNING;
    pthread_mutex_unlock(&lock);
    sj_toolchain tc;
    int retry = 0;
    /* A queued key was made for the toolchain of its request; the same
     * memo gives it unless NVRTC changed since, and then the entry fails
     * over to whoever asks next. */
    ssmjit_status st = sj_toolchain_get(e->job.cache, 0, &tc);
    if (st == SSMJIT_OK)
        (void)run_entry(e, &e->job, &tc, &retry);
    pthread_mutex_lock(&lock);
    if (st != SSMJIT_OK)
        fail_entry(e, st, ssmjit_last_error());
    owner->pending--;
    unref(e); /* the task's */
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    sj_error_clear();
}

/* Under lock: a new entry for key in the table. */
static entry *add_entry(const uint8_t key[32], int state)
{
    entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    memcpy(e->key, key, 32);
    e->state = state;
    e->refs = 1;
    e->next = entries;
    entries = e;
    return e;
}

/* The key of job's unit under the toolchain in use (from its record, else
 * NVRTC), the process's hooks in place first. */
static ssmjit_status job_key(const sj_image_job *job, sj_toolchain *tc, uint8_t key[32])
{
    pthread_once(&hooks_once, install_hooks);
    SJ_TRY(sj_toolchain_get(job->cache, 0, tc));
    sj_compile_key(job->unit, job->spec, tc, key);
    return SSMJIT_OK;
}

ssmjit_status sj_image_request(const sj_image_job *job)
{
    sj_toolchain tc;
    uint8_t key[32];
    SJ_TRY(job_key(job, &tc, key));
    pthread_mutex_lock(&lock);
    entry *e = find(key);
    if (!e) {
        e = add_entry(key, QUEUED);
        if (!e) {
            pthread_mutex_unlock(&lock);
            return sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory");
        }
        e->refs++; /* the task's */
        e->job = *job;
        e->task.run = run_task;
        job->owner->pending++;
        sj_pool_submit(&e->task);
    }
    pthread_mutex_unlock(&lock);
    return SSMJIT_OK;
}

/* For a job whose image came from memory: make sure its cache holds it
 * (prewarm writes what another thread of the process compiled); *origin
 * says whether it was there already. */
static ssmjit_status store_from_memory(const sj_image_job *job, const sj_toolchain *tc, const uint8_t key[32],
                                       const void *image, size_t size, sj_image_origin *origin)
{
    char target[32];
    sj_cache_entry_id id = entry_id(job, tc, key, target, sizeof target);
    void *payload;
    size_t n;
    if (sj_cache_lookup(job->cache, &id, &payload, &n, NULL) == SSMJIT_OK) {
        free(payload);
        *origin = SJ_IMAGE_CACHE;
        return SSMJIT_OK;
    }
    sj_error_clear();
    *origin = SJ_IMAGE_MEMORY;
    return sj_cache_put(job->cache, &id, image, size);
}

ssmjit_status sj_image_get(const sj_image_job *job, const void **image, size_t *size,
                           sj_image_origin *origin)
{
    for (int attempt = 0; attempt < 3; attempt++) {
        sj_toolchain tc;
        uint8_t key[32];
        SJ_TRY(job_key(job, &tc, key));

        pthread_mutex_lock(&lock);
        entry *e = find(key);
        if (e && cancel_task(e)) {
            /* nobody started it: this thread does, now */
            pthread_cond_broadcast(&changed);
        } else if (e) {
            e->refs++;
            while (e->state == QUEUED || e->state == RUNNING)
                pthread_cond_wait(&changed, &lock);
            ssmjit_status st = e->status;
            if (e->state == READY) {
                const void *img = e->image;
                size_t n = e->size;
                unref(e);
                pthread_mutex_unlock(&lock);
                sj_image_origin from = SJ_IMAGE_MEMORY;
                st = job->keep ? SSMJIT_OK : store_from_memory(job, &tc, key, img, n, &from);
                if (image)
                    *image = job->keep ? img : NULL;
                *size = n;
                if (origin)
                    *origin = from;
                return st;
            }
            if (st != SSMJIT_OK)
                sj_error(st, "%s", e->message ? e->message : "compile of a unit failed");
            unref(e);
            pthread_mutex_unlock(&lock);
            if (st != SSMJIT_OK)
                return st;
            continue; /* produced but not kept, or stale: again */
        } else {
            e = add_entry(key, RUNNING);
            if (!e) {
                pthread_mutex_unlock(&lock);
                return sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory");
            }
        }
        e->state = RUNNING;
        e->refs++; /* ours */
        pthread_mutex_unlock(&lock);

        int retry = 0;
        ssmjit_status st = run_entry(e, job, &tc, &retry);
        pthread_mutex_lock(&lock);
        const void *img = e->image;
        size_t n = e->size;
        sj_image_origin from = e->origin;
        if (st == SSMJIT_OK && !retry) {
            if (image)
                *image = job->keep ? img : NULL;
            *size = n;
            if (origin)
                *origin = from;
        }
        unref(e);
        pthread_mutex_unlock(&lock);
        if (st != SSMJIT_OK || !retry)
            return st;
    }
    return sj_error(SSMJIT_ERR_INTERNAL, "the NVRTC toolchain kept changing while compiling %s",
                    sj_units[job->unit].kernel);
}

void sj_image_owner_release(sj_image_owner *owner)
{
    pthread_mutex_lock(&lock);
    for (entry *e = entries, *next; e; e = next) {
        next = e->next;
        if (e->job.owner == owner && cancel_task(e))
            fail_entry(e, SSMJIT_OK, NULL); /* nothing failed: waiters produce it themselves */
    }
    pthread_cond_broadcast(&changed);
    while (owner->pending > 0)
        pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
}
