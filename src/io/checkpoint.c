#include "checkpoint.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/fileio.h"
#include "base/json.h"

struct sj_checkpoint {
    sj_st_file **files;
    size_t nfiles;
    const sj_st_tensor **tensors; /* sorted by name */
    size_t count;
};

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const sj_st_tensor *const *)a)->name, (*(const sj_st_tensor *const *)b)->name);
}

static ssmjit_status join(char *buf, const char *dir, const char *name)
{
    int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);
    if (n < 0 || n >= PATH_MAX)
        return sj_error(SSMJIT_ERR_IO, "path too long: '%s/%s'", dir, name);
    return SSMJIT_OK;
}

static ssmjit_status alloc_tensors(sj_checkpoint *ck, size_t n)
{
    ck->tensors = malloc((n ? n : 1) * sizeof *ck->tensors);
    return ck->tensors ? SSMJIT_OK
                       : sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory opening a checkpoint");
}

/* Opens path as one more file of the checkpoint; an already open one is
 * reused (shards hold many tensors each). */
static ssmjit_status add_file(sj_checkpoint *ck, const char *path, sj_st_file **out)
{
    for (size_t i = 0; i < ck->nfiles; i++)
        if (strcmp(sj_st_file_path(ck->files[i]), path) == 0) {
            *out = ck->files[i];
            return SSMJIT_OK;
        }
    sj_st_file **files = realloc(ck->files, (ck->nfiles + 1) * sizeof *files);
    if (!files)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory opening '%s'", path);
    ck->files = files;
    ssmjit_status st = sj_st_open(path, &files[ck->nfiles]);
    if (st == SSMJIT_OK)
        *out = files[ck->nfiles++];
    return st;
}

static ssmjit_status open_single(sj_checkpoint *ck, const char *path)
{
    sj_st_file *f;
    ssmjit_status st = add_file(ck, path, &f);
    if (st != SSMJIT_OK)
        return st;
    const sj_st_header *h = sj_st_file_header(f);
    if ((st = alloc_tensors(ck, h->count)) != SSMJIT_OK)
        return st;
    for (size_t i = 0; i < h->count; i++)
        ck->tensors[i] = &h->tensors[i];
    ck->count = h->count;
    return SSMJIT_OK;
}

/* Shard names come from the index file, so they must not leave its
 * directory. */
static int plain_file_name(const char *name)
{
    return *name && strchr(name, '/') == NULL && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

static ssmjit_status add_indexed(sj_checkpoint *ck, const char *dir, const char *index,
                                 const sj_json *entry)
{
    if (entry->type != SJ_JSON_STRING || !plain_file_name(entry->str))
        return sj_error(SSMJIT_ERR_INVALID_ARG,
                        "'%s': weight_map entry '%s' must be the name of a file in the same directory",
                        index, entry->key);
    char path[PATH_MAX];
    sj_st_file *f;
    ssmjit_status st = join(path, dir, entry->str);
    if (st == SSMJIT_OK)
        st = add_file(ck, path, &f);
    if (st != SSMJIT_OK)
        return st;
    const sj_st_tensor *t = sj_st_header_find(sj_st_file_header(f), entry->key);
    if (!t)
        return sj_error(SSMJIT_ERR_INVALID_ARG,
                        "'%s' puts tensor '%s' in '%s', which has no such tensor", index, entry->key,
                        entry->str);
    ck->tensors[ck->count++] = t;
    return SSMJIT_OK;
}

static ssmjit_status open_index(sj_checkpoint *ck, const char *dir, const char *index)
{
    char *text;
    size_t len;
    sj_json_doc *doc = NULL;
    ssmjit_status st = sj_read_file(index, SJ_LINKS_FOLLOW, &text, &len);
    if (st != SSMJIT_OK)
        return st;
    char label[PATH_MAX + 2];
    snprintf(label, sizeof label, "'%s'", index);
    st = sj_json_parse(text, len, label, &doc);
    free(text);
    if (st != SSMJIT_OK)
        return st;
    const sj_json *map = sj_json_get(sj_json_root(doc), "weight_map");
    if (!map || map->type != SJ_JSON_OBJECT)
        st = sj_error(SSMJIT_ERR_INVALID_ARG, "'%s' has no \"weight_map\" object", index);
    if (st == SSMJIT_OK)
        st = alloc_tensors(ck, map->count);
    for (size_t i = 0; st == SSMJIT_OK && i < map->count; i++)
        st = add_indexed(ck, dir, index, &map->items[i]);
    /* Names point into the shards' headers, so the index can go. */
    sj_json_free(doc);
    if (st == SSMJIT_OK)
        qsort(ck->tensors, ck->count, sizeof *ck->tensors, by_name);
    return st;
}

static ssmjit_status open_dir(sj_checkpoint *ck, const char *dir)
{
    char path[PATH_MAX];
    struct stat st_buf;
    ssmjit_status st = join(path, dir, SJ_CHECKPOINT_FILE);
    if (st != SSMJIT_OK)
        return st;
    /* lstat, so that a dangling symlink there is opened and reported, not
     * skipped in favour of an index. */
    if (lstat(path, &st_buf) == 0)
        return open_single(ck, path);
    if (errno != ENOENT)
        return sj_error(SSMJIT_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
    if ((st = join(path, dir, SJ_CHECKPOINT_INDEX)) != SSMJIT_OK)
        return st;
    if (lstat(path, &st_buf) != 0 && errno == ENOENT)
        return sj_error(SSMJIT_ERR_IO, "'%s' holds neither %s nor %s", dir, SJ_CHECKPOINT_FILE,
                        SJ_CHECKPOINT_INDEX);
    return open_index(ck, dir, path);
}

ssmjit_status sj_checkpoint_open(const char *path, sj_checkpoint **out)
{
    sj_checkpoint *ck = calloc(1, sizeof *ck);
    if (!ck)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory opening '%s'", path);
    struct stat st_buf;
    ssmjit_status st =
        stat(path, &st_buf) == 0 && S_ISDIR(st_buf.st_mode) ? open_dir(ck, path) : open_single(ck, path);
    if (st != SSMJIT_OK) {
        sj_checkpoint_close(ck);
        return st;
    }
    *out = ck;
    return SSMJIT_OK;
}

void sj_checkpoint_close(sj_checkpoint *ck)
{
    if (!ck)
        return;
    for (size_t i = 0; i < ck->nfiles; i++)
        sj_st_close(ck->files[i]);
    free(ck->files);
    free(ck->tensors);
    free(ck);
}

const sj_st_tensor *sj_checkpoint_find(const sj_checkpoint *ck, const char *name)
{
    sj_st_tensor key = {.name = name};
    const sj_st_tensor *k = &key;
    const sj_st_tensor *const *hit = bsearch(&k, ck->tensors, ck->count, sizeof *ck->tensors, by_name);
    return hit ? *hit : NULL;
}
