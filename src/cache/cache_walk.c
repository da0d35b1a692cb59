/* The one walk over a cache directory that stats, verify, clear and the
 * writers' housekeeping share; it only ever looks at the two levels of
 * hash-prefix directories ssmjit makes. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"

static int is_hex_prefix(const char *name, size_t n)
{
    return strlen(name) >= n && strspn(name, "0123456789abcdef") >= n;
}

static int is_prefix_dir(const char *name) { return strlen(name) == 2 && is_hex_prefix(name, 2); }

int sj_cache_is_entry_name(const char *name)
{
    size_t n = strlen(name);
    return is_hex_prefix(name, 64) && name[64] == '-' && strchr(name + 65, '-') &&
           ((n > 6 && !strcmp(name + n - 6, ".cubin")) || (n > 4 && !strcmp(name + n - 4, ".ptx")));
}

int sj_cache_is_temp_name(const char *name) { return !strncmp(name, ".tmp-", 5); }

static int skipped(const char *name) { return name[0] == '.' && !sj_cache_is_temp_name(name); }

static void walk_leaf(const char *p2, const char *prefix, sj_cache_visit_fn visit, void *arg)
{
    DIR *leaf = opendir(p2);
    if (!leaf)
        return;
    struct dirent *c;
    while ((c = readdir(leaf))) {
        char path[PATH_MAX];
        if (!skipped(c->d_name) &&
            snprintf(path, sizeof path, "%s/%s", p2, c->d_name) < (int)sizeof path)
            visit(path, c->d_name, prefix, arg);
    }
    closedir(leaf);
}

int sj_cache_walk(const char *dir, sj_cache_visit_fn visit, void *arg, int prune)
{
    DIR *top = opendir(dir);
    if (!top)
        return errno == ENOENT ? 0 : -1;
    struct dirent *a;
    while ((a = readdir(top))) {
        char p1[PATH_MAX];
        if (skipped(a->d_name) ||
            snprintf(p1, sizeof p1, "%s/%s", dir, a->d_name) >= (int)sizeof p1)
            continue;
        if (!is_prefix_dir(a->d_name)) {
            visit(p1, a->d_name, NULL, arg);
            continue;
        }
        DIR *mid = opendir(p1);
        if (!mid)
            continue;
        struct dirent *b;
        while ((b = readdir(mid))) {
            char p2[PATH_MAX], prefix[5] = {a->d_name[0], a->d_name[1], b->d_name[0], b->d_name[1], 0};
            if (!is_prefix_dir(b->d_name) ||
                snprintf(p2, sizeof p2, "%s/%s", p1, b->d_name) >= (int)sizeof p2)
                continue;
            walk_leaf(p2, prefix, visit, arg);
            if (prune)
                rmdir(p2);
        }
        closedir(mid);
        if (prune)
            rmdir(p1);
    }
    closedir(top);
    return 0;
}
