/* Opening a run-time dependency (NVRTC, cuBLAS, the CUDA driver) and
 * binding its entry points into the loader's struct of function pointers,
 * with an error message that says what was tried and why each attempt
 * failed.  A loader declares its library as an sj_lib; the driver, whose
 * opening and lookup are its own, only its sj_lib_symbol table. */
#ifndef SSMJIT_LIB_OPEN_H
#define SSMJIT_LIB_OPEN_H

#include <pthread.h>
#include <stddef.h>

#include "ssmjit.h"

/* A missing optional entry point stays NULL: the caller checks before use
 * (an older library without it still serves everything else). */
#define SJ_LIB_OPTIONAL 1u
/* `name` is the exported, versioned symbol, taken with dlsym even where
 * the loader resolves base names another way: the driver's cuGetProcAddress
 * would answer for cuCtxCreate with a newer form whose arguments differ. */
#define SJ_LIB_DLSYM 2u

/* One entry point: the address found for `name` is stored at `offset`
 * inside the loader's struct of function pointers. */
typedef struct sj_lib_symbol {
    const char *name;
    size_t offset;
    unsigned flags; /* SJ_LIB_OPTIONAL, SJ_LIB_DLSYM */
} sj_lib_symbol;

/* Finds `name` in lib some other way than dlsym; NULL if it has none. */
typedef void *(*sj_lib_resolver)(void *lib, const char *name, const void *ctx);

/* Stores the address of every table[0..n) entry (NULL where missing) into
 * api, each found through resolve(lib, name, ctx) or, with resolve NULL or
 * the entry SJ_LIB_DLSYM, dlsym.  Returns the name of the first required
 * entry that is missing, NULL when all of them were found. */
const char *sj_lib_bind(void *lib, const sj_lib_symbol *table, size_t n, void *api,
                        sj_lib_resolver resolve, const void *ctx);

/* A library looked for under a list of names, and what loading it once
 * per process came to (replayed to every caller: the error message is
 * per thread).  A loader declares one statically with SJ_LIB_INIT. */
typedef struct sj_lib {
    const char *what;    /* in messages: "NVRTC" */
    const char *env_var; /* names the one file to open instead of the list */
    const char *const *names;
    size_t num_names;
    const sj_lib_symbol *symbols; /* symbols[0] is required: its file is the library's path */
    size_t num_symbols;
    void *api;               /* the struct the symbols are bound into */
    char *path;              /* receives the file the library was loaded from */
    size_t path_cap;
    ssmjit_status not_found; /* the status of every failure */
    pthread_once_t once;
    ssmjit_status status;
    char *tried; /* malloc'd "\n  name: why" notes on failure, else NULL */
} sj_lib;

/* The number of elements of array `a`. */
#define SJ_LIB_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* An sj_lib for the arrays `names_` and `symbols_`, binding into the
 * struct `api_`, whose char array `path` receives the file loaded. */
#define SJ_LIB_INIT(what_, env_var_, not_found_, names_, symbols_, api_)                            \
    {.what = (what_), .env_var = (env_var_), .names = (names_), .num_names = SJ_LIB_COUNT(names_), \
     .symbols = (symbols_), .num_symbols = SJ_LIB_COUNT(symbols_), .api = &(api_),                 \
     .path = (api_).path, .path_cap = sizeof(api_).path, .not_found = (not_found_),                \
     .once = PTHREAD_ONCE_INIT}

/* Opens lib's library and binds its symbols: the body of the loader's
 * pthread_once routine.  On failure lib->tried lists every name tried and
 * why it failed, or the required entry point missing. */
void sj_lib_load(sj_lib *lib);

/* Loads lib once (through `load`, which calls sj_lib_load(lib)) and
 * returns SSMJIT_OK, or lib->not_found with "no usable <what> library;
 * tried:" and the notes. */
ssmjit_status sj_lib_get(sj_lib *lib, void (*load)(void));

#endif
