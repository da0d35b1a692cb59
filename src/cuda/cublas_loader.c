#include "cublas_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/lib_open.h"

static const char *const search_names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"};

static sj_cublas cublas;
static ssmjit_status load_status;
static char *load_message;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* The _v2 names are the exported symbols of the calls cublas_v2.h renames. */
static const struct {
    const char *name;
    size_t offset;
    int optional;
} entries[] = {
    {"cublasCreate_v2", offsetof(sj_cublas, Create), 0},
    {"cublasDestroy_v2", offsetof(sj_cublas, Destroy), 0},
    {"cublasSetStream_v2", offsetof(sj_cublas, SetStream), 0},
    {"cublasSetWorkspace_v2", offsetof(sj_cublas, SetWorkspace), 0},
    {"cublasSetMathMode", offsetof(sj_cublas, SetMathMode), 0},
    {"cublasGemmEx", offsetof(sj_cublas, GemmEx), 0},
    {"cublasGetStatusName", offsetof(sj_cublas, GetStatusName), 1},
};

static void load(void)
{
    void *lib = sj_lib_open("SSMJIT_CUBLAS_PATH", search_names,
                            sizeof search_names / sizeof search_names[0], &load_message);
    if (!lib) {
        load_status = SSMJIT_ERR_CUBLAS_NOT_FOUND;
        return;
    }
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        void *fn = dlsym(lib, entries[i].name);
        if (!fn && !entries[i].optional) {
            sj_lib_note(&load_message, entries[i].name, "missing from the loaded cuBLAS");
            load_status = SSMJIT_ERR_CUBLAS_NOT_FOUND;
            return;
        }
        memcpy((char *)&cublas + entries[i].offset, &fn, sizeof fn);
    }
    void *create;
    memcpy(&create, &cublas.Create, sizeof create);
    sj_lib_path(create, cublas.path, sizeof cublas.path);
    free(load_message);
    load_message = NULL;
    load_status = SSMJIT_OK;
}

ssmjit_status sj_cublas_get(const sj_cublas **out)
{
    pthread_once(&load_once, load);
    if (load_status != SSMJIT_OK)
        return sj_error(load_status, "no usable cuBLAS library; tried:%s",
                        load_message ? load_message : " (nothing)");
    *out = &cublas;
    return SSMJIT_OK;
}

ssmjit_status sj_cublas_result(const sj_cublas *api, cublasStatus_t s, const char *call)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return SSMJIT_OK;
    const char *name = api->GetStatusName ? api->GetStatusName(s) : NULL;
    return sj_error(SSMJIT_ERR_DRIVER, "%s failed: %s (%d)", call, name ? name : "cuBLAS status",
                    (int)s);
}
