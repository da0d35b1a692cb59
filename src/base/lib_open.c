#include "lib_open.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sj_lib_note(char **msg, const char *what, const char *why)
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
        sj_lib_note(tried, name, why ? why : "not found");
    }
    return lib;
}

void *sj_lib_open(const char *env_var, const char *const *names, size_t n, char **tried)
{
    const char *forced = getenv(env_var);
    if (forced && *forced)
        return try_open(forced, tried);
    void *lib = NULL;
    for (size_t i = 0; !lib && i < n; i++)
        lib = try_open(names[i], tried);
    return lib;
}

void sj_lib_path(void *symbol, char *out, size_t cap)
{
    Dl_info info;
    char real[PATH_MAX];
    out[0] = '\0';
    if (!dladdr(symbol, &info) || !info.dli_fname)
        return;
    snprintf(out, cap, "%s", realpath(info.dli_fname, real) ? real : info.dli_fname);
}
