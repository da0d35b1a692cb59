/* The cache configuration, built once per context (or prewarm) and handed
 * down: the user's cache, then read-only layers where a distribution or
 * an application ships prewarmed entries. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cache.h"
#include "base/error.h"

#ifndef SSMJIT_INSTALLED_CACHE_DIR
#define SSMJIT_INSTALLED_CACHE_DIR ""
#endif

/* One warning per layer path and process: a program that makes many
 * contexts is told once.  Paths past the table's end go unwarned. */
#define WARNED_MAX 32
static pthread_mutex_t warned_lock = PTHREAD_MUTEX_INITIALIZER;
static char *warned[WARNED_MAX];

static void warn_layer(int quiet, const char *path, const char *why)
{
    const char *env = getenv("SSMJIT_QUIET");
    if (quiet || (env && !strcmp(env, "1")))
        return;
    pthread_mutex_lock(&warned_lock);
    int seen = 0;
    size_t i = 0;
    for (; i < WARNED_MAX && warned[i]; i++)
        seen |= !strcmp(warned[i], path);
    if (!seen && i < WARNED_MAX && (warned[i] = strdup(path)))
        fprintf(stderr, "ssmjit: warning: read-only cache layer '%s' ignored: %s\n", path, why);
    pthread_mutex_unlock(&warned_lock);
}

/* Adds layer `path` unless it is the user's cache or already listed;
 * `installed`: a missing directory is no news. */
static void add_layer(sj_cache_config *c, const char *path, int installed)
{
    struct stat st;
    if (!*path)
        return;
    if (lstat(path, &st) != 0) {
        if (!installed || errno != ENOENT)
            warn_layer(c->quiet, path, strerror(errno));
        return;
    }
    /* A link could be turned to another directory behind the check. */
    if (S_ISLNK(st.st_mode)) {
        warn_layer(c->quiet, path, "it is a symbolic link");
        return;
    }
    if (sj_cache_dir_check(path) != SSMJIT_OK) {
        warn_layer(c->quiet, path, ssmjit_last_error());
        sj_error_clear();
        return;
    }
    if (!strcmp(path, c->dir))
        return;
    for (size_t i = 0; i < c->num_layers; i++)
        if (!strcmp(c->layers[i], path))
            return;
    if (c->num_layers == SJ_CACHE_MAX_LAYERS || strlen(path) >= sizeof c->layers[0]) {
        warn_layer(c->quiet, path, c->num_layers == SJ_CACHE_MAX_LAYERS ? "too many layers" : "path too long");
        return;
    }
    snprintf(c->layers[c->num_layers++], sizeof c->layers[0], "%s", path);
}

ssmjit_status sj_cache_config_init(sj_cache_config *c, const char *dir, ssmjit_cache_mode requested,
                                   int quiet)
{
    memset(c, 0, sizeof *c);
    c->quiet = quiet;
    SJ_TRY(sj_cache_mode_resolve(requested, &c->mode));
    if (c->mode == SSMJIT_CACHE_OFF)
        return SSMJIT_OK;
    SJ_TRY(sj_cache_dir_resolve(dir, c->dir, sizeof c->dir));
    SJ_TRY(sj_cache_max_bytes(&c->max_bytes));
    const char *list = getenv("SSMJIT_CACHE_PATH");
    for (const char *p = list ? list : ""; *p;) {
        size_t n = strcspn(p, ":");
        char path[PATH_MAX];
        if (n && n < sizeof path) {
            memcpy(path, p, n);
            path[n] = '\0';
            add_layer(c, path, 0);
        }
        p += n + (p[n] == ':');
    }
    add_layer(c, SSMJIT_INSTALLED_CACHE_DIR, 1);
    return SSMJIT_OK;
}

ssmjit_cache_mode sj_cache_config_mode(const sj_cache_config *c)
{
    return sj_cache_mode_usable(c->dir, c->mode, c->quiet);
}

ssmjit_status sj_cache_lookup(const sj_cache_config *c, const sj_cache_entry_id *id, void **payload,
                              size_t *size, int *layer)
{
    char path[PATH_MAX];
    if (c->mode == SSMJIT_CACHE_OFF)
        return sj_error(SSMJIT_ERR_IO, "the cache is off");
    ssmjit_cache_mode mode = sj_cache_config_mode(c);
    if (mode != SSMJIT_CACHE_OFF && sj_cache_entry_path(c->dir, id, path, sizeof path) == 0 &&
        sj_cache_entry_read(path, id->key, id->ptx, mode == SSMJIT_CACHE_RW, payload, size) == SSMJIT_OK) {
        if (layer)
            *layer = -1;
        return SSMJIT_OK;
    }
    for (size_t i = 0; i < c->num_layers; i++)
        if (sj_cache_entry_path(c->layers[i], id, path, sizeof path) == 0 &&
            sj_cache_entry_read(path, id->key, id->ptx, 0, payload, size) == SSMJIT_OK) {
            if (layer)
                *layer = (int)i;
            return SSMJIT_OK;
        }
    return sj_error(SSMJIT_ERR_IO, "no cache entry");
}

ssmjit_status sj_cache_put(const sj_cache_config *c, const sj_cache_entry_id *id, const void *payload,
                           size_t size)
{
    char path[PATH_MAX];
    if (sj_cache_config_mode(c) != SSMJIT_CACHE_RW)
        return SSMJIT_OK;
    if (sj_cache_entry_path(c->dir, id, path, sizeof path) != 0)
        return sj_error(SSMJIT_ERR_IO, "cache entry path under '%s' is too long", c->dir);
    return sj_cache_store(c->dir, c->max_bytes, path, id->key, id->ptx, payload, size);
}
