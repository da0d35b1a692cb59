/* Storing an entry, and the housekeeping that every writer does after it:
 * stale temp files removed, least recently used entries evicted while the
 * cache is over its cap.  No lock: two writers evicting at once may both
 * remove an entry (the second finds it gone) or together remove a little
 * more than needed, and a reader that opened an entry before it was
 * unlinked still reads all of it. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "base/error.h"

typedef struct {
    char *path;
    int64_t used_ns; /* mtime: the entry's last use */
    uint64_t bytes;
} cached_file;

typedef struct {
    cached_file *files;
    size_t n, cap;
    uint64_t total;   /* bytes in every entry, the kept one included */
    const char *keep; /* name of the entry just stored */
    time_t now;
    int out_of_memory;
} trim_scan;

static void trim_visit(const char *path, const char *name, const char *prefix, void *arg)
{
    trim_scan *s = arg;
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    if (sj_cache_is_temp_name(name)) {
        if (s->now - st.st_mtim.tv_sec > SJ_TEMP_STALE_SECONDS)
            unlink(path);
        return;
    }
    if (!prefix || !sj_cache_is_entry_name(name))
        return;
    s->total += (uint64_t)st.st_size;
    if (!strcmp(name, s->keep) || s->out_of_memory)
        return;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        cached_file *f = realloc(s->files, cap * sizeof *f);
        if (!f) {
            s->out_of_memory = 1;
            return;
        }
        s->files = f;
        s->cap = cap;
    }
    char *copy = strdup(path);
    if (!copy) {
        s->out_of_memory = 1;
        return;
    }
    s->files[s->n++] = (cached_file){copy, (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
                                     (uint64_t)st.st_size};
}

static int older_first(const void *pa, const void *pb)
{
    const cached_file *a = pa, *b = pb;
    if (a->used_ns != b->used_ns)
        return a->used_ns < b->used_ns ? -1 : 1;
    return strcmp(a->path, b->path);
}

static void trim(const char *dir, uint64_t max_bytes, const char *keep)
{
    trim_scan s = {.keep = keep, .now = time(NULL)};
    /* Only the walk's own failure (no directory) can stop it: nothing to do. */
    if (sj_cache_walk(dir, trim_visit, &s, 0) == 0 && max_bytes && !s.out_of_memory &&
        s.total > max_bytes) {
        qsort(s.files, s.n, sizeof *s.files, older_first);
        for (size_t i = 0; i < s.n && s.total > max_bytes; i++)
            if (unlink(s.files[i].path) == 0 || errno == ENOENT)
                s.total -= s.files[i].bytes;
    }
    for (size_t i = 0; i < s.n; i++)
        free(s.files[i].path);
    free(s.files);
}

ssmjit_status sj_cache_store(const char *dir, uint64_t max_bytes, const char *path,
                             const uint8_t key[32], int ptx, const void *payload, size_t size)
{
    ssmjit_status st;
    if (max_bytes && (max_bytes < SJ_ENTRY_HEADER_SIZE || size > max_bytes - SJ_ENTRY_HEADER_SIZE))
        st = sj_error(SSMJIT_ERR_IO,
                      "cache entry of %zu bytes not written: larger than the cache's cap "
                      "(SSMJIT_CACHE_MAX_BYTES=%llu)",
                      size + SJ_ENTRY_HEADER_SIZE, (unsigned long long)max_bytes);
    else
        st = sj_cache_entry_write(path, key, ptx, payload, size);
    /* Even after a failed write: stale temp files may be what filled the disk. */
    const char *slash = strrchr(path, '/');
    trim(dir, max_bytes, slash ? slash + 1 : path);
    return st;
}
