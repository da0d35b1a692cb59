/* Opens libcuda.so.1 once per process.  Entry points are looked up by their
 * base names through cuGetProcAddress, asking for the ABI that driver.h
 * declares (CUDA 12.0: e.g. cuCtxCreate is the _v2 form there, not 13.0's
 * _v4), so the pointer types match whatever the driver's newest version is.
 * Drivers without cuGetProcAddress (before 11.3) get dlsym of the _v2 name,
 * then the plain one. */
#include "driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

#include "base/error.h"
#include "base/lib_open.h"

/* The ABI version driver.h's pointer types follow. */
#define SJ_DRIVER_ABI 12000

typedef CUresult (*get_proc_v2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*get_proc_v1_fn)(const char *, void **, int, cuuint64_t);

/* Every entry point but cuInit is optional: one the driver lacks fails
 * only the call that needs it (SJ_CU).  cuCtxCreate is taken as its _v2
 * export: cuGetProcAddress would answer with its newest form (_v3 at 12.0,
 * _v4 later), whose arguments differ from the _v2 form driver.h declares. */
static const sj_lib_symbol symbols[] = {
#define E(fn) {"cu" #fn, offsetof(sj_driver, fn), SJ_LIB_OPTIONAL}
    {"cuInit", offsetof(sj_driver, Init), 0}, E(DriverGetVersion), E(GetErrorName), E(GetErrorString),
    E(DeviceGet), E(DeviceGetCount), E(DeviceGetName), E(DeviceGetAttribute), E(DeviceTotalMem),
    E(DevicePrimaryCtxRetain), E(DevicePrimaryCtxRelease),
    {"cuCtxCreate_v2", offsetof(sj_driver, CtxCreate), SJ_LIB_OPTIONAL | SJ_LIB_DLSYM}, E(CtxDestroy),
    E(CtxGetCurrent), E(CtxSetCurrent), E(CtxPushCurrent), E(CtxPopCurrent), E(CtxGetDevice),
    E(CtxSynchronize), E(ModuleLoadData), E(ModuleUnload), E(ModuleGetFunction),
    E(LibraryLoadData), E(LibraryUnload), E(LibraryGetKernel), E(KernelGetFunction),
    E(FuncSetAttribute), E(LaunchKernel), E(LaunchKernelEx), E(MemAlloc), E(MemFree), E(MemAllocHost), E(MemFreeHost), E(MemcpyHtoD), E(MemcpyDtoH),
    E(MemcpyDtoD), E(MemcpyDtoDAsync), E(MemcpyHtoDAsync), E(MemcpyDtoHAsync), E(MemsetD8), E(MemsetD8Async), E(MemsetD32Async),
    E(StreamCreate), E(StreamDestroy), E(StreamSynchronize), E(EventCreate), E(EventDestroy),
    E(EventRecord), E(EventSynchronize), E(EventElapsedTime), E(MemGetInfo),
    E(StreamBeginCapture), E(StreamEndCapture), E(GraphInstantiateWithFlags), E(GraphLaunch),
    E(GraphExecDestroy), E(GraphDestroy),
#undef E
};

static sj_driver driver;
static ssmjit_status load_status;
static char load_message[512];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* How this driver answers for an entry point's base name: the newest
 * cuGetProcAddress it has, at the ABI version min(its own, SJ_DRIVER_ABI). */
typedef struct proc_lookup {
    get_proc_v2_fn gp2;
    get_proc_v1_fn gp1;
    CUresult (*get_version)(int *version);
    int version;
} proc_lookup;

static const sj_lib_symbol lookup_symbols[] = {
    {"cuGetProcAddress_v2", offsetof(proc_lookup, gp2), SJ_LIB_OPTIONAL},
    {"cuGetProcAddress", offsetof(proc_lookup, gp1), SJ_LIB_OPTIONAL},
    {"cuDriverGetVersion", offsetof(proc_lookup, get_version), SJ_LIB_OPTIONAL},
};

static void *resolve(void *lib, const char *name, const void *ctx)
{
    const proc_lookup *pl = ctx;
    void *fn = NULL;
    if (pl->gp2) {
        CUdriverProcAddressQueryResult found;
        if (pl->gp2(name, &fn, pl->version, 0, &found) == CUDA_SUCCESS && fn)
            return fn;
        return NULL;
    }
    if (pl->gp1) {
        if (pl->gp1(name, &fn, pl->version, 0) == CUDA_SUCCESS && fn)
            return fn;
        return NULL;
    }
    char v2[96];
    snprintf(v2, sizeof v2, "%s_v2", name);
    fn = dlsym(lib, v2);
    return fn ? fn : dlsym(lib, name);
}

static void load(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        load_status = SSMJIT_ERR_DRIVER_NOT_FOUND;
        snprintf(load_message, sizeof load_message,
                 "the CUDA driver library libcuda.so.1 could not be opened: %s", why ? why : "?");
        return;
    }
    proc_lookup pl = {0};
    sj_lib_bind(lib, lookup_symbols, SJ_LIB_COUNT(lookup_symbols), &pl, NULL, NULL);
    if (!pl.get_version || pl.get_version(&pl.version) != CUDA_SUCCESS || pl.version > SJ_DRIVER_ABI)
        pl.version = SJ_DRIVER_ABI;
    const char *missing = sj_lib_bind(lib, symbols, SJ_LIB_COUNT(symbols), &driver, resolve, &pl);
    if (missing) {
        load_status = SSMJIT_ERR_DRIVER_NOT_FOUND;
        snprintf(load_message, sizeof load_message, "libcuda.so.1 has no %s", missing);
        return;
    }
    CUresult r = driver.Init(0);
    if (r != CUDA_SUCCESS) {
        const char *name = "?";
        if (driver.GetErrorName)
            driver.GetErrorName(r, &name);
        /* No device at all is reported by cuInit as CUDA_ERROR_NO_DEVICE (100). */
        load_status = r == 100 ? SSMJIT_ERR_NO_DEVICE : SSMJIT_ERR_DRIVER_NOT_FOUND;
        snprintf(load_message, sizeof load_message, "cuInit failed: %s (%d)", name, (int)r);
        return;
    }
    load_status = SSMJIT_OK;
}

ssmjit_status sj_driver_get(const sj_driver **out)
{
    pthread_once(&load_once, load);
    if (load_status != SSMJIT_OK)
        return sj_error(load_status, "%s", load_message);
    *out = &driver;
    return SSMJIT_OK;
}

ssmjit_status sj_cu_result(CUresult r, const char *call)
{
    if (r == CUDA_SUCCESS)
        return SSMJIT_OK;
    const char *name = "unknown error", *text = "";
    if (driver.GetErrorName)
        driver.GetErrorName(r, &name);
    if (driver.GetErrorString)
        driver.GetErrorString(r, &text);
    return sj_error(SSMJIT_ERR_DRIVER, "%s failed: %s (%d): %s", call, name ? name : "?", (int)r,
                    text ? text : "");
}

ssmjit_status sj_cu_missing(const char *call)
{
    return sj_error(SSMJIT_ERR_UNSUPPORTED, "the installed CUDA driver has no %s", call);
}
