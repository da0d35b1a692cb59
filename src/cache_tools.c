/* ssmjit_cache_verify and ssmjit_cache_clear: walk the two levels of
 * hash-prefix directories and touch only files whose names ssmjit makes. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "error.h"
#include "sha256.h"

static int is_hex_prefix(const char *name, size_t n)
{
    return strlen(name) >= n && strspn(name, "0123456789abcdef") >= n;
}

static int is_entry_name(const char *name)
{
    size_t n = strlen(name);
    return is_hex_prefix(name, 64) && name[64] == '-' &&
           ((n > 6 && !strcmp(name + n - 6, ".cubin")) || (n > 4 && !strcmp(name + n - 4, ".ptx")));
}

static int is_temp_name(const char *name) { return !strncmp(name, ".tmp-", 5); }

typedef void (*visit_fn)(const char *path, const char *name, const char *prefix, void *arg);

/* Calls visit for every file in <dir>/<2 hex>/<2 hex>/; prefix is the four
 * hex digits the two directory names spell.  prune removes the directories
 * left empty (only for clear: a writer may be about to use an empty one). */
static ssmjit_status walk(const char *dir, visit_fn visit, void *arg, int prune)
{
    DIR *top = opendir(dir);
    if (!top)
        return errno == ENOENT ? SSMJIT_OK
                               : sj_error(SSMJIT_ERR_IO, "cannot open cache directory '%s': %s", dir,
                                          strerror(errno));
    struct dirent *a;
    while ((a = readdir(top))) {
        if (strlen(a->d_name) != 2 || !is_hex_prefix(a->d_name, 2))
            continue;
        char p1[PATH_MAX];
        if (snprintf(p1, sizeof p1, "%s/%s", dir, a->d_name) >= (int)sizeof p1)
            continue;
        DIR *mid = opendir(p1);
        if (!mid)
            continue;
        struct dirent *b;
        while ((b = readdir(mid))) {
            if (strlen(b->d_name) != 2 || !is_hex_prefix(b->d_name, 2))
                continue;
            char p2[PATH_MAX], prefix[5] = {a->d_name[0], a->d_name[1], b->d_name[0], b->d_name[1], 0};
            if (snprintf(p2, sizeof p2, "%s/%s", p1, b->d_name) >= (int)sizeof p2)
                continue;
            DIR *leaf = opendir(p2);
            if (!leaf)
                continue;
            struct dirent *c;
            while ((c = readdir(leaf))) {
                char path[PATH_MAX];
                if (c->d_name[0] == '.' && !is_temp_name(c->d_name))
                    continue;
                if (snprintf(path, sizeof path, "%s/%s", p2, c->d_name) < (int)sizeof path)
                    visit(path, c->d_name, prefix, arg);
            }
            closedir(leaf);
            if (prune)
                rmdir(p2);
        }
        closedir(mid);
        if (prune)
            rmdir(p1);
    }
    closedir(top);
    return SSMJIT_OK;
}

typedef struct {
    ssmjit_cache_stats *stats;
    int remove_bad;
} verify_arg;

static void verify_visit(const char *path, const char *name, const char *prefix, void *p)
{
    verify_arg *v = p;
    if (!is_entry_name(name))
        return;
    uint8_t key[32];
    char hex[65];
    struct stat st;
    int good = sj_cache_entry_check(path, key) == SSMJIT_OK;
    if (good) {
        sj_hex(key, 32, hex);
        good = !strncmp(hex, name, 64) && !strncmp(hex, prefix, 4) && stat(path, &st) == 0;
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
    (void)prefix;
    if ((is_entry_name(name) || is_temp_name(name)) && unlink(path) == 0)
        ++*(size_t *)p;
}

SSMJIT_API ssmjit_status ssmjit_cache_verify(const char *dir, int remove_bad, ssmjit_cache_stats *out)
{
    char resolved[PATH_MAX];
    if (!out)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_cache_verify: out is NULL");
    memset(out, 0, sizeof *out);
    ssmjit_status st = sj_cache_dir_resolve(dir, resolved, sizeof resolved);
    if (st != SSMJIT_OK)
        return st;
    verify_arg v = {out, remove_bad};
    return walk(resolved, verify_visit, &v, 0);
}

SSMJIT_API ssmjit_status ssmjit_cache_clear(const char *dir, size_t *removed)
{
    char resolved[PATH_MAX];
    size_t count = 0;
    ssmjit_status st = sj_cache_dir_resolve(dir, resolved, sizeof resolved);
    if (st != SSMJIT_OK)
        return st;
    st = walk(resolved, clear_visit, &count, 1);
    DIR *top = opendir(resolved);
    if (top) {
        struct dirent *e;
        while ((e = readdir(top))) {
            char path[PATH_MAX];
            if (strncmp(e->d_name, "toolchain-", 10) && !is_temp_name(e->d_name))
                continue;
            if (snprintf(path, sizeof path, "%s/%s", resolved, e->d_name) < (int)sizeof path &&
                unlink(path) == 0)
                count++;
        }
        closedir(top);
    }
    if (removed)
        *removed = count;
    return st;
}

SSMJIT_API ssmjit_status ssmjit_cache_resolve_dir(const char *dir, char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_cache_resolve_dir: buf is NULL or cap is 0");
    return sj_cache_dir_resolve(dir, buf, cap);
}
