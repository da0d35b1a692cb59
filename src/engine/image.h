/* Unit images (CUBIN or PTX) for contexts and prewarm: from this process's
 * memory, the cache's layers, or NVRTC, with one producer per key in the
 * process however many threads (or contexts) ask at once, either in the
 * asking thread or ahead of need on the compile pool. */
#ifndef SSMJIT_IMAGE_H
#define SSMJIT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"
#include "compile.h"
#include "ssmjit.h"

/* Who queues work on the pool: the compile callback to call, and the count
 * of its tasks not finished yet (sj_image_owner_release waits for them).
 * Lives as long as those tasks: a context's lifetime. */
typedef struct sj_image_owner {
    ssmjit_compile_callback on_compile; /* may be NULL */
    void *user;
    int pending; /* under the image table's lock */
} sj_image_owner;

/* One unit's image, as asked for.  Everything pointed to must outlive the
 * call, and for a queued request the owner's release. */
typedef struct sj_image_job {
    size_t unit;
    const sj_compile_spec *spec;
    const sj_cache_config *cache;
    sj_image_owner *owner; /* may be NULL for sj_image_get */
    int keep;              /* 1: the image stays in memory for the process (a context's);
                              0: it only goes to the cache (prewarm) and a failed write
                              fails the job */
} sj_image_job;

/* Where an image came from. */
typedef enum sj_image_origin {
    SJ_IMAGE_MEMORY,   /* this process had it (or another thread produced it) */
    SJ_IMAGE_CACHE,    /* the user's cache */
    SJ_IMAGE_LAYER,    /* a read-only layer */
    SJ_IMAGE_COMPILED  /* NVRTC */
} sj_image_origin;

/* The image of job's unit.  With job->keep, *image stays valid for the life
 * of the process (images are kept in memory, which also covers a cache
 * that cannot be written); without, image may be NULL and nothing is
 * returned there.  A request queued on the pool and not started yet is
 * taken over by this thread; one running is waited for (its failure is
 * this call's).  *origin may be NULL. */
ssmjit_status sj_image_get(const sj_image_job *job, const void **image, size_t *size,
                           sj_image_origin *origin);

/* Queues job's unit on the compile pool unless its image is in memory or
 * already being produced; returns at once.  job->owner is required. */
ssmjit_status sj_image_request(const sj_image_job *job);

/* Cancels the owner's queued requests and waits for its running ones, so
 * that nothing of the owner is touched once it returns. */
void sj_image_owner_release(sj_image_owner *owner);

#endif
