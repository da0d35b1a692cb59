#include "lib_open.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

/* Appends "\n  what: why" to the malloc'd *msg (NULL: empty); on
 * allocation failure *msg stays as it was. */
static void note(char **msg, const char *what, const char *why)
{
    size_t old = *msg ? strlen(*msg) : 0, n = strlen(what) + strlen(why) + 6;
    char *t = realloc(*msg, old + n);
    if (!t)
        return;
    snprintf(t + old, n, "\n  %s: %s", what, why);
    *msg = t;
}

static void *try_open(const char *name, char **tried)
{
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        note(tried, name, why ? why : "not found");
    }
    return lib;
}

/* The file `env_var` names if it is set and not empty (and nothing else),
 * otherwise the first of names[0..n) that opens. */
static void *open_first(const char *env_var, const char *const *names, size_t n, char **tried)
{
    const char *forced = getenv(env_var);
    if (forced && *forced)
        return try_open(forced, tried);
    void *lib = NULL;
    for (size_t i = 0; !lib && i < n; i++)
        lib = try_open(names[i], tried);
    return lib;
}

/* The file (its real path where possible) that holds `symbol`; "" if
 * unknown. */
static void file_of(void *symbol, char *out, size_t cap)
{
    Dl_info info;
    char real[PATH_MAX];
    out[0] = '\0';
    if (!dladdr(symbol, &info) || !info.dli_fname)
        return;
    snprintf(out, cap, "%s", realpath(info.dli_fname, real) ? real : info.dli_fname);
}

const char *sj_lib_bind(void *lib, const sj_lib_symbol *table, size_t n, void *api,
                        sj_lib_resolver resolve, const void *ctx)
{
    const char *missing = NULL;
    for (size_t i = 0; i < n; i++) {
        const sj_lib_symbol *s = &table[i];
        void *fn = resolve && !(s->flags & SJ_LIB_DLSYM) ? resolve(lib, s->name, ctx) : dlsym(lib, s->name);
        if (!fn && !(s->flags & SJ_LIB_OPTIONAL) && !missing)
            missing = s->name;
        /* Into a function pointer without the object-to-function cast ISO
         * C leaves undefined (POSIX guarantees the representations match). */
        memcpy((char *)api + s->offset, &fn, sizeof fn);
    }
    return missing;
}

void sj_lib_load(sj_lib *lib)
{
    lib->status = lib->not_found;
    void *handle = open_first(lib->env_var, lib->names, lib->num_names, &lib->tried);
    if (!handle)
        return;
    const char *missing = sj_lib_bind(handle, lib->symbols, lib->num_symbols, lib->api, NULL, NULL);
    if (missing) {
        /* Which file it was matters when the search, not the user, chose it. */
        struct link_map *map = NULL;
        char why[PATH_MAX + 64];
        snprintf(why, sizeof why, "missing from the loaded %s (%s)", lib->what,
                 dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map ? map->l_name : "?");
        note(&lib->tried, missing, why);
        return;
    }
    void *first;
    memcpy(&first, (char *)lib->api + lib->symbols[0].offset, sizeof first);
    file_of(first, lib->path, lib->path_cap);
    free(lib->tried);
    lib->tried = NULL;
    lib->status = SSMJIT_OK;
}

ssmjit_status sj_lib_get(sj_lib *lib, void (*load)(void))
{
    pthread_once(&lib->once, load);
    if (lib->status == SSMJIT_OK)
        return SSMJIT_OK;
    return sj_error(lib->status, "no usable %s library; tried:%s", lib->what,
                    lib->tried ? lib->tried : " (nothing)");
}
