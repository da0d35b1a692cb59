/* ssmjit_cache_verify and ssmjit_cache_clear: touch only files whose names
 * ssmjit makes. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "error.h"
#include "sha256.h"

typedef struct {
    ssmjit_cache_stats *stats;
    int remove_bad;
} verify_arg;

static void verify_visit(const char *path, const char *name, const char *prefix, void *p)
{
    verify_arg *v = p;
    if (sj_cache_is_temp_name(name))
        v->stats->temp_files++;
    if (!prefix || !sj_cache_is_entry_name(name))
        return;
    uint8_t key[32];
    char hex[65];
    struct stat st;
    int good = sj_cache_entry_check(path, key) == SSMJIT_OK;
    if (good) {
        sj_hex(key, 32, hex);
        good = !strncmp(hex, name, 64) && !strncmp(hex, prefix, 4) && lstat(path, &st) == 0;
    }
    if (good) {
        v->stats->entries++;
        v->stats->bytes += (uint64_t)st.st_size;
        return;
    }
    v->stats->bad_entries++;
    if (v->remove_bad && unlink(path) == 0)
        v->stats->removed++;
}

static void clear_visit(const char *path, const char *name, const char *prefix, void *p)
{
    int ours = sj_cache_is_temp_name(name) ||
               (prefix ? sj_cache_is_entry_name(name) : !strncmp(name, "toolchain-", 10));
    if (ours && unlink(path) == 0)
        ++*(size_t *)p;
}

static ssmjit_status walk(const char *dir, sj_cache_visit_fn visit, void *arg, int prune)
{
    return sj_cache_walk(dir, visit, arg, prune) == 0
               ? SSMJIT_OK
               : sj_error(SSMJIT_ERR_IO, "cannot open cache directory '%s': %s", dir, strerror(errno));
}

SSMJIT_API ssmjit_status ssmjit_cache_verify(const char *dir, int remove_bad, ssmjit_cache_stats *out)
{
    char resolved[PATH_MAX];
    if (!out)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_cache_verify: out is NULL");
    ssmjit_cache_stats stats;
    memset(&stats, 0, sizeof stats);
    ssmjit_status st = sj_cache_dir_resolve(dir, resolved, sizeof resolved);
    if (st == SSMJIT_OK)
        st = sj_cache_max_bytes(&stats.max_bytes);
    verify_arg v = {&stats, remove_bad};
    if (st == SSMJIT_OK)
        st = walk(resolved, verify_visit, &v, 0);
    if (st == SSMJIT_OK)
        *out = stats;
    return st;
}

SSMJIT_API ssmjit_status ssmjit_cache_clear(const char *dir, size_t *removed)
{
    char resolved[PATH_MAX];
    size_t count = 0;
    ssmjit_status st = sj_cache_dir_resolve(dir, resolved, sizeof resolved);
    if (st == SSMJIT_OK)
        st = walk(resolved, clear_visit, &count, 1);
    if (st == SSMJIT_OK && removed)
        *removed = count;
    return st;
}

SSMJIT_API ssmjit_status ssmjit_cache_resolve_dir(const char *dir, char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_cache_resolve_dir: buf is NULL or cap is 0");
    return sj_cache_dir_resolve(dir, buf, cap);
}
