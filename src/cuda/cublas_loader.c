#include "cublas_loader.h"

#include <pthread.h>
#include <stddef.h>

#include "base/error.h"
#include "base/lib_open.h"
#include "base/pool.h"

static const char *const search_names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"};

/* The _v2 names are the exported symbols of the calls cublas_v2.h renames. */
static const sj_lib_symbol symbols[] = {
    {"cublasCreate_v2", offsetof(sj_cublas, Create), 0},
    {"cublasDestroy_v2", offsetof(sj_cublas, Destroy), 0},
    {"cublasSetStream_v2", offsetof(sj_cublas, SetStream), 0},
    {"cublasSetWorkspace_v2", offsetof(sj_cublas, SetWorkspace), 0},
    {"cublasSetMathMode", offsetof(sj_cublas, SetMathMode), 0},
    {"cublasGemmEx", offsetof(sj_cublas, GemmEx), 0},
    {"cublasGetStatusName", offsetof(sj_cublas, GetStatusName), SJ_LIB_OPTIONAL},
};

static sj_cublas cublas;
static sj_lib lib = SJ_LIB_INIT("cuBLAS", "SSMJIT_CUBLAS_PATH", SSMJIT_ERR_CUBLAS_NOT_FOUND,
                                search_names, symbols, cublas);

static void load(void) { sj_lib_load(&lib); }

/* The pool's task that opens it; its outcome is the library's, which
 * sj_cublas_get reports. */
static void open_on_pool(sj_pool_task *task)
{
    (void)task;
    pthread_once(&lib.once, load);
}
static sj_pool_task open_task = {open_on_pool, NULL};
static pthread_once_t open_queued = PTHREAD_ONCE_INIT;
static void queue_open(void) { sj_pool_submit(&open_task); }

void sj_cublas_open_ahead(void) { pthread_once(&open_queued, queue_open); }

ssmjit_status sj_cublas_get(const sj_cublas **out)
{
    SJ_TRY(sj_lib_get(&lib, load));
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
