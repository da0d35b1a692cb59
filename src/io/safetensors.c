#include "safetensors.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dtype_convert.h"
#include "base/error.h"
#include "base/fileio.h"

static const struct {
    const char *name;
    size_t size;
} dtypes[SJ_ST_NUM_DTYPES] = {
    [SJ_ST_BOOL] = {"BOOL", 1},       [SJ_ST_U8] = {"U8", 1},           [SJ_ST_I8] = {"I8", 1},
    [SJ_ST_F8_E4M3] = {"F8_E4M3", 1}, [SJ_ST_F8_E5M2] = {"F8_E5M2", 1}, [SJ_ST_I16] = {"I16", 2},
    [SJ_ST_U16] = {"U16", 2},         [SJ_ST_F16] = {"F16", 2},         [SJ_ST_BF16] = {"BF16", 2},
    [SJ_ST_I32] = {"I32", 4},         [SJ_ST_U32] = {"U32", 4},         [SJ_ST_F32] = {"F32", 4},
    [SJ_ST_F64] = {"F64", 8},         [SJ_ST_I64] = {"I64", 8},         [SJ_ST_U64] = {"U64", 8},
};

const char *sj_st_dtype_name(sj_st_dtype dtype)
{
    return (unsigned)dtype < SJ_ST_NUM_DTYPES ? dtypes[dtype].name : "?";
}

static ssmjit_status parse_dtype(const sj_json *v, const char *what, const char *name, sj_st_dtype *out)
{
    if (!v || v->type != SJ_JSON_STRING)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': tensor '%s': \"dtype\" must be a string", what,
                        name);
    for (int d = 0; d < SJ_ST_NUM_DTYPES; d++)
        if (strcmp(v->str, dtypes[d].name) == 0) {
            *out = (sj_st_dtype)d;
            return SSMJIT_OK;
        }
    return sj_error(SSMJIT_ERR_UNSUPPORTED,
                    "'%s': tensor '%s': dtype \"%.40s\" is not one this reader knows", what, name,
                    v->str);
}

/* An array of non-negative integers: `want` of them, or when want is 0 a
 * shape of up to SJ_ST_MAX_DIMS. */
static ssmjit_status parse_ints(const sj_json *v, const char *what, const char *name, const char *key,
                                size_t want, int64_t *out, size_t *n)
{
    if (!v || v->type != SJ_JSON_ARRAY)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': tensor '%s': \"%s\" must be an array", what, name,
                        key);
    if (want && v->count != want)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': tensor '%s': \"%s\" has %zu entries, not %zu",
                        what, name, key, v->count, want);
    if (!want && v->count > SJ_ST_MAX_DIMS)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "'%s': tensor '%s' has %zu dimensions, more than %d",
                        what, name, v->count, SJ_ST_MAX_DIMS);
    for (size_t i = 0; i < v->count; i++) {
        const sj_json *e = &v->items[i];
        if (e->type != SJ_JSON_NUMBER || !e->is_int || e->i < 0)
            return sj_error(SSMJIT_ERR_INVALID_ARG,
                            "'%s': tensor '%s': \"%s\" entry %zu is not a non-negative 64-bit integer",
                            what, name, key, i);
        out[i] = e->i;
    }
    *n = v->count;
    return SSMJIT_OK;
}

static ssmjit_status parse_tensor(const sj_json *m, const char *what, sj_st_tensor *t)
{
    const char *name = m->key;
    if (m->type != SJ_JSON_OBJECT)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': tensor '%s' is %s, not an object", what, name,
                        sj_json_type_name(m->type));
    for (size_t i = 0; i < m->count; i++) {
        const char *k = m->items[i].key;
        if (strcmp(k, "dtype") && strcmp(k, "shape") && strcmp(k, "data_offsets"))
            return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': tensor '%s': unexpected key \"%.40s\"", what,
                            name, k);
    }
    int64_t offs[2];
    size_t ndim, noffs;
    ssmjit_status st = parse_dtype(sj_json_get(m, "dtype"), what, name, &t->dtype);
    if (st == SSMJIT_OK)
        st = parse_ints(sj_json_get(m, "shape"), what, name, "shape", 0, t->shape, &ndim);
    if (st == SSMJIT_OK)
        st = parse_ints(sj_json_get(m, "data_offsets"), what, name, "data_offsets", 2, offs, &noffs);
    if (st != SSMJIT_OK)
        return st;
    t->name = name;
    t->file = what;
    t->ndim = (int)ndim;
    t->begin = (uint64_t)offs[0];
    t->end = (uint64_t)offs[1];
    if (t->begin > t->end)
        return sj_error(SSMJIT_ERR_INVALID_ARG,
                        "'%s': tensor '%s': data_offsets [%llu, %llu] end before they begin", what, name,
                        (unsigned long long)t->begin, (unsigned long long)t->end);
    uint64_t bytes = dtypes[t->dtype].size;
    for (int d = 0; d < t->ndim; d++)
        if (__builtin_mul_overflow(bytes, (uint64_t)t->shape[d], &bytes))
            return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': tensor '%s': shape overflows 64 bits", what,
                            name);
    if (bytes != t->end - t->begin)
        return sj_error(SSMJIT_ERR_INVALID_ARG,
                        "'%s': tensor '%s': shape and dtype %s make %llu bytes but data_offsets [%llu, "
                        "%llu] hold %llu",
                        what, name, dtypes[t->dtype].name, (unsigned long long)bytes,
                        (unsigned long long)t->begin, (unsigned long long)t->end,
                        (unsigned long long)(t->end - t->begin));
    return SSMJIT_OK;
}

static ssmjit_status check_metadata(const sj_json *m, const char *what)
{
    if (m->type != SJ_JSON_OBJECT)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': \"__metadata__\" is %s, not an object", what,
                        sj_json_type_name(m->type));
    for (size_t i = 0; i < m->count; i++)
        if (m->items[i].type != SJ_JSON_STRING)
            return sj_error(SSMJIT_ERR_INVALID_ARG,
                            "'%s': \"__metadata__\" entry \"%.100s\" is %s, not a string", what,
                            m->items[i].key, sj_json_type_name(m->items[i].type));
    return SSMJIT_OK;
}

static int by_offset(const void *a, const void *b)
{
    const sj_st_tensor *x = *(const sj_st_tensor *const *)a, *y = *(const sj_st_tensor *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const sj_st_tensor *)a)->name, ((const sj_st_tensor *)b)->name);
}

/* The byte ranges must tile [0, data_size): each starts where the one before
 * ended.  Checked in offset order, so a truncated file names the first
 * tensor it cuts. */
static ssmjit_status check_tiling(const sj_st_header *h, uint64_t data_size, const char *what)
{
    const sj_st_tensor **order = malloc((h->count ? h->count : 1) * sizeof *order);
    if (!order)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "'%s': out of memory", what);
    for (size_t i = 0; i < h->count; i++)
        order[i] = &h->tensors[i];
    qsort(order, h->count, sizeof *order, by_offset);
    ssmjit_status st = SSMJIT_OK;
    uint64_t at = 0;
    for (size_t i = 0; i < h->count && st == SSMJIT_OK; i++) {
        const sj_st_tensor *t = order[i];
        if (t->begin < at)
            st = sj_error(SSMJIT_ERR_INVALID_ARG,
                          "'%s': tensor '%s' (bytes %llu..%llu) overlaps tensor '%s'", what, t->name,
                          (unsigned long long)t->begin, (unsigned long long)t->end, order[i - 1]->name);
        else if (t->begin > at)
            st = sj_error(SSMJIT_ERR_INVALID_ARG,
                          "'%s': bytes %llu..%llu of the data buffer belong to no tensor (next is '%s')",
                          what, (unsigned long long)at, (unsigned long long)t->begin, t->name);
        else if (t->end > data_size)
            st = sj_error(SSMJIT_ERR_INVALID_ARG,
                          "'%s': tensor '%s' (bytes %llu..%llu) runs past the end of the data buffer "
                          "(%llu bytes): the file is truncated",
                          what, t->name, (unsigned long long)t->begin, (unsigned long long)t->end,
                          (unsigned long long)data_size);
        at = t->end;
    }
    if (st == SSMJIT_OK && at != data_size)
        st = sj_error(SSMJIT_ERR_INVALID_ARG,
                      "'%s': %llu bytes after the last tensor belong to no tensor", what,
                      (unsigned long long)(data_size - at));
    free(order);
    return st;
}

static ssmjit_status parse_members(const sj_json *root, const char *what, sj_st_header *h,
                                   uint64_t data_size, const uint8_t *data)
{
    if (root->type != SJ_JSON_OBJECT)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': header is %s, not an object", what,
                        sj_json_type_name(root->type));
    h->tensors = calloc(root->count ? root->count : 1, sizeof *h->tensors);
    if (!h->tensors)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "'%s': out of memory", what);
    for (size_t i = 0; i < root->count; i++) {
        const sj_json *m = &root->items[i];
        ssmjit_status st = strcmp(m->key, "__metadata__") == 0
                               ? check_metadata(m, what)
                               : parse_tensor(m, what, &h->tensors[h->count++]);
        if (st != SSMJIT_OK)
            return st;
    }
    ssmjit_status st = check_tiling(h, data_size, what);
    if (st != SSMJIT_OK)
        return st;
    for (size_t i = 0; i < h->count; i++)
        h->tensors[i].data = data + h->tensors[i].begin;
    qsort(h->tensors, h->count, sizeof *h->tensors, by_name);
    return SSMJIT_OK;
}

ssmjit_status sj_safetensors_parse_header(const uint8_t *data, size_t size, const char *what,
                                          sj_st_header *out)
{
    memset(out, 0, sizeof *out);
    if (size < 8)
        return sj_error(SSMJIT_ERR_INVALID_ARG,
                        "'%s': %zu bytes, too short for the 8-byte header length: the file is truncated",
                        what, size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | data[i];
    if (n > size - 8)
        return sj_error(SSMJIT_ERR_INVALID_ARG,
                        "'%s': header length %llu runs past the end of the file (%zu bytes): "
                        "the file is truncated or not safetensors",
                        what, (unsigned long long)n, size);
    if (n > SJ_ST_MAX_HEADER)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': header length %llu is over the %u-byte limit",
                        what, (unsigned long long)n, SJ_ST_MAX_HEADER);
    if (n == 0 || data[8] != '{')
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': header does not start with '{'", what);
    char label[PATH_MAX + 16];
    snprintf(label, sizeof label, "'%s' header", what);
    sj_st_header h = {0};
    ssmjit_status st = sj_json_parse((const char *)data + 8, (size_t)n, label, &h.doc);
    if (st == SSMJIT_OK)
        st = parse_members(sj_json_root(h.doc), what, &h, size - 8 - n, data + 8 + n);
    if (st != SSMJIT_OK) {
        sj_st_header_free(&h);
        return st;
    }
    *out = h;
    return SSMJIT_OK;
}

void sj_st_header_free(sj_st_header *h)
{
    sj_json_free(h->doc);
    free(h->tensors);
    memset(h, 0, sizeof *h);
}

const sj_st_tensor *sj_st_header_find(const sj_st_header *h, const char *name)
{
    sj_st_tensor key = {.name = name};
    return bsearch(&key, h->tensors, h->count, sizeof *h->tensors, by_name);
}

struct sj_st_file {
    void *map;
    size_t size;
    char *path;
    sj_st_header header;
};

ssmjit_status sj_st_open(const char *path, sj_st_file **out)
{
    int fd;
    size_t size;
    ssmjit_status st = sj_open_regular(path, SJ_LINKS_FOLLOW, &fd, &size);
    if (st != SSMJIT_OK)
        return st;
    sj_st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        close(fd);
        free(f);
        return sj_error(SSMJIT_ERR_NO_MEMORY, "'%s': out of memory", path);
    }
    f->size = size;
    /* An empty file cannot be mapped; the parser rejects it from no bytes. */
    if (size > 0) {
        f->map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (f->map == MAP_FAILED) {
            int err = errno;
            close(fd);
            f->map = NULL;
            sj_st_close(f);
            return sj_error(SSMJIT_ERR_IO, "cannot map '%s': %s", path, strerror(err));
        }
    }
    close(fd);
    st = sj_safetensors_parse_header(f->map, size, f->path, &f->header);
    if (st != SSMJIT_OK) {
        sj_st_close(f);
        return st;
    }
    *out = f;
    return SSMJIT_OK;
}

void sj_st_close(sj_st_file *f)
{
    if (!f)
        return;
    sj_st_header_free(&f->header);
    if (f->map)
        munmap(f->map, f->size);
    free(f->path);
    free(f);
}

const sj_st_header *sj_st_file_header(const sj_st_file *f) { return &f->header; }

const char *sj_st_file_path(const sj_st_file *f) { return f->path; }

ssmjit_status sj_st_tensor_dtype(const sj_st_tensor *t, ssmjit_dtype *out)
{
    switch (t->dtype) {
    case SJ_ST_F32: *out = SSMJIT_F32; return SSMJIT_OK;
    case SJ_ST_F16: *out = SSMJIT_F16; return SSMJIT_OK;
    case SJ_ST_BF16: *out = SSMJIT_BF16; return SSMJIT_OK;
    default:
        return sj_error(SSMJIT_ERR_UNSUPPORTED,
                        "tensor '%s' in '%s' is %s; only F32, F16 and BF16 are supported", t->name,
                        t->file, sj_st_dtype_name(t->dtype));
    }
}

uint64_t sj_st_tensor_numel(const sj_st_tensor *t)
{
    uint64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= (uint64_t)t->shape[d];
    return n;
}

ssmjit_status sj_st_tensor_convert(const sj_st_tensor *t, ssmjit_dtype to, void *dst)
{
    ssmjit_dtype from = SSMJIT_F32;
    ssmjit_status st = sj_st_tensor_dtype(t, &from);
    if (st != SSMJIT_OK)
        return st;
    if (ssmjit_dtype_size(to) == 0)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "tensor '%s': bad target dtype %d", t->name, (int)to);
    sj_convert(dst, to, t->data, from, (size_t)sj_st_tensor_numel(t));
    return SSMJIT_OK;
}
