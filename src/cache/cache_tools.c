/* ssmjit_cache_verify, ssmjit_cache_targets and ssmjit_cache_clear: touch
 * only files whose names ssmjit makes. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "base/error.h"
#include "base/sha256.h"

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

/* ssmjit_cache_targets: names and sizes only.  Targets and (target,
 * label) pairs are counted in one open-addressing table of strings. */
typedef struct {
    char *key;   /* malloc'd; NULL: free slot */
    size_t value;
} str_slot;

typedef struct {
    str_slot *slots;
    size_t cap, used; /* cap a power of two, used <= cap / 2 */
} str_table;

static uint64_t str_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* The slot of key[0 .. n), inserting it (value = `value`) if new; NULL when
 * out of memory.  *added says whether it was. */
static str_slot *str_find_or_add(str_table *t, const char *key, size_t n, size_t value, int *added)
{
    *added = 0;
    if (2 * (t->used + 1) > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        str_slot *slots = calloc(cap, sizeof *slots);
        if (!slots)
            return NULL;
        for (size_t i = 0; i < t->cap; i++)
            if (t->slots[i].key) {
                size_t j = str_hash(t->slots[i].key, strlen(t->slots[i].key)) & (cap - 1);
                while (slots[j].key)
                    j = (j + 1) & (cap - 1);
                slots[j] = t->slots[i];
            }
        free(t->slots);
        t->slots = slots;
        t->cap = cap;
    }
    size_t j = str_hash(key, n) & (t->cap - 1);
    for (; t->slots[j].key; j = (j + 1) & (t->cap - 1))
        if (!strncmp(t->slots[j].key, key, n) && t->slots[j].key[n] == '\0')
            return &t->slots[j];
    char *copy = malloc(n + 1);
    if (!copy)
        return NULL;
    memcpy(copy, key, n);
    copy[n] = '\0';
    t->slots[j] = (str_slot){copy, value};
    t->used++;
    *added = 1;
    return &t->slots[j];
}

static void str_table_free(str_table *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->slots[i].key);
    free(t->slots);
}

static size_t span(const char *s, int (*is)(int))
{
    size_t n = 0;
    while (s[n] && is((unsigned char)s[n]))
        n++;
    return n;
}

static int is_label_char(int c) { return isalnum(c) || c == '_'; }

/* Splits an entry's name: its label and its target ("sm_90-nvrtc13.0"),
 * both in name.  0 when the name is one ssmjit gives entries. */
static int parse_entry_name(const char *name, const char **label, size_t *label_len, const char **target,
                            size_t *target_len)
{
    if (!sj_cache_is_entry_name(name))
        return -1;
    const char *p = name + 65;
    *label = p;
    *label_len = span(p, is_label_char);
    if (!*label_len || p[*label_len] != '-')
        return -1;
    p += *label_len + 1;
    *target = p;
    if (!strncmp(p, "sm_", 3))
        p += 3;
    else if (!strncmp(p, "compute_", 8))
        p += 8;
    else
        return -1;
    size_t d;
    if (!(d = span(p, isdigit)) || strncmp(p + d, "-nvrtc", 6))
        return -1;
    p += d + 6;
    if (!(d = span(p, isdigit)) || p[d] != '.')
        return -1;
    p += d + 1;
    if (!(d = span(p, isdigit)))
        return -1;
    p += d;
    *target_len = (size_t)(p - *target);
    return strcmp(p, ".cubin") && strcmp(p, ".ptx") ? -1 : 0;
}

typedef struct {
    ssmjit_cache_stats *totals;
    str_table targets;                /* target -> index in stats[] */
    str_table units;                  /* "<target index>:<label>" */
    ssmjit_cache_target_stats *stats; /* one per target, in order of discovery */
    size_t num_stats, cap_stats;
    int out_of_memory;
} targets_arg;

static void targets_visit(const char *path, const char *name, const char *prefix, void *p)
{
    targets_arg *a = p;
    if (sj_cache_is_temp_name(name))
        a->totals->temp_files++;
    if (!prefix || !sj_cache_is_entry_name(name) || a->out_of_memory)
        return;
    const char *label, *target;
    size_t label_len, target_len;
    struct stat st;
    if (parse_entry_name(name, &label, &label_len, &target, &target_len) != 0 ||
        target_len >= sizeof a->stats[0].target || strncmp(name, prefix, 4) || lstat(path, &st) != 0 ||
        !S_ISREG(st.st_mode) || st.st_size < SJ_ENTRY_HEADER_SIZE) {
        a->totals->bad_entries++;
        return;
    }
    int added;
    str_slot *t = str_find_or_add(&a->targets, target, target_len, a->num_stats, &added);
    if (t && added) {
        if (a->num_stats == a->cap_stats) {
            size_t cap = a->cap_stats ? 2 * a->cap_stats : 8;
            ssmjit_cache_target_stats *grown = realloc(a->stats, cap * sizeof *grown);
            if (!grown) {
                a->out_of_memory = 1;
                return;
            }
            a->stats = grown;
            a->cap_stats = cap;
        }
        ssmjit_cache_target_stats *s = &a->stats[a->num_stats++];
        memset(s, 0, sizeof *s);
        memcpy(s->target, target, target_len);
    }
    char unit[32 + PATH_MAX];
    int n = t ? snprintf(unit, sizeof unit, "%zu:%.*s", t->value, (int)label_len, label) : -1;
    if (n < 0 || (size_t)n >= sizeof unit ||
        !str_find_or_add(&a->units, unit, (size_t)n, 0, &added)) {
        a->out_of_memory = 1;
        return;
    }
    ssmjit_cache_target_stats *s = &a->stats[t->value];
    s->entries++;
    s->units += (size_t)added;
    s->bytes += (uint64_t)st.st_size;
    a->totals->entries++;
    a->totals->bytes += (uint64_t)st.st_size;
}

static int by_target(const void *x, const void *y)
{
    return strcmp(((const ssmjit_cache_target_stats *)x)->target, ((const ssmjit_cache_target_stats *)y)->target);
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

SSMJIT_API ssmjit_status ssmjit_cache_targets(const char *dir, ssmjit_cache_stats *totals,
                                              ssmjit_cache_target_stats *out, size_t cap, size_t *count)
{
    char resolved[PATH_MAX];
    if (cap && !out)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_cache_targets: out is NULL but cap is %zu", cap);
    ssmjit_cache_stats stats;
    memset(&stats, 0, sizeof stats);
    targets_arg a;
    memset(&a, 0, sizeof a);
    a.totals = &stats;
    ssmjit_status st = sj_cache_dir_resolve(dir, resolved, sizeof resolved);
    if (st == SSMJIT_OK)
        st = sj_cache_max_bytes(&stats.max_bytes);
    if (st == SSMJIT_OK)
        st = walk(resolved, targets_visit, &a, 0);
    if (st == SSMJIT_OK && a.out_of_memory)
        st = sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory counting the cache's targets");
    if (st == SSMJIT_OK) {
        if (a.num_stats)
            qsort(a.stats, a.num_stats, sizeof *a.stats, by_target);
        for (size_t i = 0; i < cap && i < a.num_stats; i++)
            out[i] = a.stats[i];
        if (totals)
            *totals = stats;
        if (count)
            *count = a.num_stats;
    }
    str_table_free(&a.targets);
    str_table_free(&a.units);
    free(a.stats);
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

SSMJIT_API ssmjit_status ssmjit_cache_layers(char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_cache_layers: buf is NULL or cap is 0");
    sj_cache_config *c = malloc(sizeof *c);
    char *list = malloc(SJ_CACHE_MAX_LAYERS * (PATH_MAX + 1) + 1);
    ssmjit_status st = c && list ? sj_cache_config_init(c, NULL, SSMJIT_CACHE_DEFAULT, 0)
                                 : sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory");
    size_t len = 0;
    if (st == SSMJIT_OK) {
        list[0] = '\0';
        for (size_t i = 0; i < c->num_layers; i++)
            len += (size_t)sprintf(list + len, "%s%s", i ? ":" : "", c->layers[i]);
        if (len >= cap)
            st = sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_cache_layers: cap = %zu is too small for %zu bytes", cap,
                          len + 1);
        else
            memcpy(buf, list, len + 1);
    }
    free(list);
    free(c);
    return st;
}
