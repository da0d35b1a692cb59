#include "compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "cache/cache.h"
#include "base/error.h"
#include "base/sha256.h"

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

ssmjit_status sj_defines_normalize(const char *const *defines, size_t n, char ***out, size_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    if (n && !defines)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "defines is NULL but num_defines is %zu", n);
    if (n > SJ_MAX_OPTIONS - 8)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%zu defines is more than the %d supported", n,
                        SJ_MAX_OPTIONS - 8);
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        if (!defines[i] || !defines[i][0] || strpbrk(defines[i], " \t\r\n") || defines[i][0] == '=')
            return sj_error(SSMJIT_ERR_INVALID_ARG,
                            "defines[%zu] must be a non-empty NAME or NAME=VALUE without spaces", i);
        bytes += strlen(defines[i]) + 1;
    }
    char **list = malloc((n ? n : 1) * sizeof *list + bytes);
    if (!list)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory copying defines");
    char *p = (char *)(list + (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        list[i] = p;
        p = stpcpy(p, defines[i]) + 1;
    }
    qsort(list, n, sizeof *list, compare_strings);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (kept == 0 || strcmp(list[kept - 1], list[i]))
            list[kept++] = list[i];
    *out = list;
    *out_n = kept;
    return SSMJIT_OK;
}

struct sj_spec_entry {
    sj_compile_spec spec;
    char **defines; /* normalised, one block: spec.defines */
    struct sj_spec_entry *next;
};

void sj_spec_set_init(sj_spec_set *set)
{
    pthread_mutex_init(&set->lock, NULL);
    set->head = NULL;
}

/* Whether a is base with the normalised defines (n of them). */
static int same_spec(const sj_compile_spec *a, const sj_compile_spec *base, char **defines, size_t n)
{
    if (a->arch != base->arch || a->ptx != base->ptx || a->fast_math != base->fast_math ||
        a->lineinfo != base->lineinfo || a->num_defines != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(a->defines[i], defines[i]))
            return 0;
    return 1;
}

ssmjit_status sj_spec_set_get(sj_spec_set *set, const sj_compile_spec *base, const char *const *defines,
                              size_t num_defines, const sj_compile_spec **out)
{
    size_t total = base->num_defines + num_defines;
    const char **all = malloc((total ? total : 1) * sizeof *all);
    if (!all)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < base->num_defines; i++)
        all[i] = base->defines[i];
    for (size_t i = 0; i < num_defines; i++)
        all[base->num_defines + i] = defines[i];
    char **norm;
    size_t n;
    ssmjit_status st = sj_defines_normalize(all, total, &norm, &n);
    free(all);
    SJ_TRY(st);
    pthread_mutex_lock(&set->lock);
    struct sj_spec_entry *e = set->head;
    while (e && !same_spec(&e->spec, base, norm, n))
        e = e->next;
    if (e) {
        free(norm);
    } else if ((e = malloc(sizeof *e)) != NULL) {
        e->spec = *base;
        e->spec.defines = (const char *const *)norm;
        e->spec.num_defines = n;
        e->defines = norm;
        e->next = set->head;
        set->head = e;
    } else {
        free(norm);
    }
    pthread_mutex_unlock(&set->lock);
    if (!e)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory");
    *out = &e->spec;
    return SSMJIT_OK;
}

void sj_spec_set_free(sj_spec_set *set)
{
    for (struct sj_spec_entry *e = set->head, *next; e; e = next) {
        next = e->next;
        free(e->defines);
        free(e);
    }
    set->head = NULL;
    pthread_mutex_destroy(&set->lock);
}

int sj_compile_options(const sj_compile_spec *spec, const char **opts, int cap, char *buf,
                       size_t buf_len)
{
    int n = 0;
    size_t used = 0;
    int w = snprintf(buf, buf_len, "--gpu-architecture=%s_%d", spec->ptx ? "compute" : "sm", spec->arch);
    opts[n++] = buf;
    used = (size_t)w + 1;
    opts[n++] = "--std=c++17";
    if (spec->fast_math)
        opts[n++] = "--use_fast_math";
    if (spec->lineinfo)
        opts[n++] = "--generate-line-info";
    for (size_t i = 0; i < spec->num_defines && n < cap && used < buf_len; i++) {
        w = snprintf(buf + used, buf_len - used, "-D%s", spec->defines[i]);
        opts[n++] = buf + used;
        used += (size_t)w + 1;
    }
    return n;
}

void sj_module_digest(const sj_embedded_module *m, uint8_t digest[32])
{
    sj_sha256 h;
    sj_sha256_init(&h);
    sj_sha256_field(&h, m->name, strlen(m->name));
    sj_sha256_field(&h, m->source->data, m->source->size);
    for (size_t i = 0; i < m->num_headers; i++) {
        sj_sha256_field(&h, m->headers[i]->name, strlen(m->headers[i]->name));
        sj_sha256_field(&h, m->headers[i]->data, m->headers[i]->size);
    }
    sj_sha256_final(&h, digest);
}

int sj_unit_text(size_t u, char *buf, size_t cap)
{
    const sj_embedded_unit *unit = &sj_units[u];
    int n = snprintf(buf, cap, "/* ssmjit compile unit */\n#define SJ_UNIT_%s ~, 1\n#include \"%s.cu\"\n",
                     unit->kernel, sj_modules[unit->module].name);
    return n > 0 && (size_t)n < cap ? n : -1;
}

/* (module, kernel) -> unit, open addressing, built once. */
#define UNIT_SLOTS 1024
static short unit_slot[UNIT_SLOTS];
static pthread_once_t unit_index_once = PTHREAD_ONCE_INIT;

static size_t unit_hash(sj_module_id mod, const char *name)
{
    size_t h = 1469598103934665603ull ^ (size_t)mod;
    while (*name)
        h = (h ^ (unsigned char)*name++) * 1099511628211ull;
    return h % UNIT_SLOTS;
}

static void build_unit_index(void)
{
    _Static_assert(SJ_UNIT_COUNT < UNIT_SLOTS / 2, "the unit index must stay sparse");
    for (size_t u = 0; u < SJ_UNIT_COUNT; u++) {
        size_t i = unit_hash(sj_units[u].module, sj_units[u].kernel);
        while (unit_slot[i])
            i = (i + 1) % UNIT_SLOTS;
        unit_slot[i] = (short)(u + 1);
    }
}

int sj_unit_find(sj_module_id mod, const char *name)
{
    pthread_once(&unit_index_once, build_unit_index);
    for (size_t i = unit_hash(mod, name); unit_slot[i]; i = (i + 1) % UNIT_SLOTS) {
        const sj_embedded_unit *unit = &sj_units[unit_slot[i] - 1];
        if (unit->module == mod && !strcmp(unit->kernel, name))
            return unit_slot[i] - 1;
    }
    return -1;
}

void sj_compile_key(size_t u, const sj_compile_spec *spec, const sj_toolchain *tc, uint8_t key[32])
{
    char unit[512];
    if (sj_unit_text(u, unit, sizeof unit) < 0)
        unit[0] = '\0'; /* cannot happen: names are short; sj_compile_unit refuses it */
    sj_compile_key_of(sj_modules[sj_units[u].module].digest, unit, spec, tc, SJ_CACHE_FORMAT_VERSION,
                      ssmjit_version_string(), key);
}

void sj_compile_key_of(const uint8_t module_digest[32], const char *unit_text, const sj_compile_spec *spec,
                       const sj_toolchain *tc, unsigned format, const char *library, uint8_t key[32])
{
    sj_sha256 h;
    char buf[8192];
    const char *opts[SJ_MAX_OPTIONS];
    int n = sj_compile_options(spec, opts, SJ_MAX_OPTIONS, buf, sizeof buf);
    char text[256];
    sj_sha256_init(&h);
    int len = snprintf(text, sizeof text, "ssmjit cache format %u, library %s", format, library);
    sj_sha256_field(&h, text, (size_t)len);
    sj_sha256_field(&h, module_digest, 32);
    sj_sha256_field(&h, unit_text, strlen(unit_text));
    for (int i = 0; i < n; i++)
        sj_sha256_field(&h, opts[i], strlen(opts[i]));
    len = snprintf(text, sizeof text, "target %d %s; nvrtc %d.%d build %ld probe %s", spec->arch,
                   spec->ptx ? "ptx" : "cubin", tc->major, tc->minor, tc->build, tc->probe_hash);
    sj_sha256_field(&h, text, (size_t)len);
    sj_sha256_final(&h, key);
}

ssmjit_status sj_compile_unit(size_t u, const sj_compile_spec *spec, void **image, size_t *size)
{
    char buf[8192], file[256], unit[512];
    const char *opts[SJ_MAX_OPTIONS];
    const char *headers[17], *names[17];
    const sj_embedded_module *m = &sj_modules[sj_units[u].module];
    if (m->num_headers > 16)
        return sj_error(SSMJIT_ERR_INTERNAL, "module %s includes too many headers", m->name);
    /* the module's .cu is a header of the unit's program */
    snprintf(file, sizeof file, "%s.cu", m->name);
    headers[0] = (const char *)m->source->data;
    names[0] = file;
    for (size_t i = 0; i < m->num_headers; i++) {
        headers[i + 1] = (const char *)m->headers[i]->data;
        names[i + 1] = m->headers[i]->name;
    }
    if (sj_unit_text(u, unit, sizeof unit) < 0)
        return sj_error(SSMJIT_ERR_INTERNAL, "the program of unit %s does not fit", sj_units[u].kernel);
    int n = sj_compile_options(spec, opts, SJ_MAX_OPTIONS, buf, sizeof buf);
    char program[256];
    snprintf(program, sizeof program, "%s.unit.cu", sj_units[u].kernel);
    return sj_nvrtc_compile(unit, program, (int)m->num_headers + 1, headers, names, n, opts, spec->ptx,
                            image, size);
}
