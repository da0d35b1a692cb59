#include "image.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "error.h"

typedef struct entry {
    uint8_t key[32];
    int ready;
    void *image;
    size_t size;
    struct entry *next;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static entry *entries;

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

/* Disk, else NVRTC (then disk write, degrading to memory only).  Sets
 * *retry when the NVRTC actually loaded is not the one the key was made
 * for: the caller must make the key again. */
static ssmjit_status produce(const sj_embedded_module *m, const sj_compile_spec *spec,
                             const sj_cache_config *cache, const sj_toolchain *tc,
                             const uint8_t key[32], entry *e, int *retry)
{
    char path[PATH_MAX] = "";
    if (cache->mode != SSMJIT_CACHE_OFF) {
        if (sj_compile_entry_path(cache->dir, key, spec, tc, path, sizeof path) != 0)
            path[0] = '\0';
        if (path[0] && sj_cache_entry_read(path, key, spec->ptx, cache->mode == SSMJIT_CACHE_RW,
                                           &e->image, &e->size) == SSMJIT_OK)
            return SSMJIT_OK;
    }
    sj_toolchain real;
    ssmjit_status st = sj_toolchain_get(cache->mode == SSMJIT_CACHE_OFF ? NULL : cache->dir,
                                        cache->mode == SSMJIT_CACHE_RW, 1, &real);
    if (st != SSMJIT_OK)
        return st;
    if (!sj_toolchain_equal(&real, tc)) {
        *retry = 1;
        return SSMJIT_OK;
    }
    st = sj_compile_module(m, spec, &e->image, &e->size);
    if (st != SSMJIT_OK || cache->mode != SSMJIT_CACHE_RW)
        return st;
    if (!path[0] ||
        sj_cache_store(cache->dir, cache->max_bytes, path, key, spec->ptx, e->image, e->size) != SSMJIT_OK) {
        sj_cache_warn_once(cache->quiet, path[0] ? ssmjit_last_error() : "entry path too long");
        sj_error_clear();
    }
    return SSMJIT_OK;
}

ssmjit_status sj_image_get(const sj_embedded_module *m, const sj_compile_spec *spec,
                           const sj_cache_config *requested, const void **image, size_t *size)
{
    sj_cache_config usable = *requested;
    usable.mode = sj_cache_mode_usable(requested->dir, requested->mode, requested->quiet);
    const sj_cache_config *cache = &usable;
    for (int attempt = 0; attempt < 2; attempt++) {
        sj_toolchain tc;
        ssmjit_status st = sj_toolchain_get(cache->mode == SSMJIT_CACHE_OFF ? NULL : cache->dir,
                                            cache->mode == SSMJIT_CACHE_RW, 0, &tc);
        if (st != SSMJIT_OK)
            return st;
        uint8_t key[32];
        sj_compile_key(m, spec, &tc, key);

        pthread_mutex_lock(&lock);
        entry *e;
        while ((e = find(key)) && !e->ready)
            pthread_cond_wait(&changed, &lock);
        if (e) {
            *image = e->image;
            *size = e->size;
            pthread_mutex_unlock(&lock);
            return SSMJIT_OK;
        }
        e = calloc(1, sizeof *e);
        if (!e) {
            pthread_mutex_unlock(&lock);
            return sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory");
        }
        memcpy(e->key, key, 32);
        e->next = entries;
        entries = e;
        pthread_mutex_unlock(&lock);

        int retry = 0;
        st = produce(m, spec, cache, &tc, key, e, &retry);

        pthread_mutex_lock(&lock);
        if (st == SSMJIT_OK && !retry) {
            e->ready = 1;
            *image = e->image;
            *size = e->size;
        } else {
            unlink_entry(e);
            free(e->image);
            free(e);
        }
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
        if (st != SSMJIT_OK || !retry)
            return st;
    }
    return sj_error(SSMJIT_ERR_INTERNAL, "the NVRTC toolchain kept changing while compiling %s", m->name);
}
