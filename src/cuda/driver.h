/* The CUDA driver API, opened with dlopen on first use.  Entry points come
 * from cuGetProcAddress (the versioned symbol for the ABI declared here) where
 * the driver has it; one the driver lacks stays NULL and fails only the call
 * that needs it, through SJ_CU (cuInit aside: without it nothing loads). */
#ifndef SSMJIT_DRIVER_H
#define SSMJIT_DRIVER_H

#include "cuda_api.h"
#include "ssmjit.h"

typedef struct sj_driver {
    CUresult (*Init)(unsigned flags);
    CUresult (*DriverGetVersion)(int *version);
    CUresult (*GetErrorName)(CUresult error, const char **str);
    CUresult (*GetErrorString)(CUresult error, const char **str);
    CUresult (*DeviceGet)(CUdevice *dev, int ordinal);
    CUresult (*DeviceGetCount)(int *count);
    CUresult (*DeviceGetName)(char *name, int len, CUdevice dev);
    CUresult (*DeviceGetAttribute)(int *value, CUdevice_attribute attr, CUdevice dev);
    CUresult (*DeviceTotalMem)(size_t *bytes, CUdevice dev);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice dev);
    CUresult (*CtxCreate)(CUcontext *ctx, unsigned flags, CUdevice dev); /* the _v2 form */
    CUresult (*CtxDestroy)(CUcontext ctx);
    CUresult (*CtxGetCurrent)(CUcontext *ctx);
    CUresult (*CtxSetCurrent)(CUcontext ctx);
    CUresult (*CtxPushCurrent)(CUcontext ctx);
    CUresult (*CtxPopCurrent)(CUcontext *ctx);
    CUresult (*CtxGetDevice)(CUdevice *dev);
    CUresult (*CtxSynchronize)(void);
    CUresult (*ModuleLoadData)(CUmodule *mod, const void *image);
    CUresult (*ModuleUnload)(CUmodule mod);
    CUresult (*ModuleGetFunction)(CUfunction *fn, CUmodule mod, const char *name);
    /* context-independent loading (CUDA 12.0 on), measured against
     * ModuleLoadData by `ssmjit bench --engine` */
    CUresult (*LibraryLoadData)(CUlibrary *lib, const void *image, CUjit_option *jit_options,
                                void **jit_values, unsigned num_jit, CUlibraryOption *lib_options,
                                void **lib_values, unsigned num_lib);
    CUresult (*LibraryUnload)(CUlibrary lib);
    CUresult (*LibraryGetKernel)(CUkernel *kernel, CUlibrary lib, const char *name);
    CUresult (*KernelGetFunction)(CUfunction *fn, CUkernel kernel);
    CUresult (*FuncSetAttribute)(CUfunction fn, CUfunction_attribute attr, int value);
    CUresult (*LaunchKernel)(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned smem, CUstream stream,
                             void **params, void **extra);
    /* launches with attributes (CUDA 12.0 on): programmatic dependent launch */
    CUresult (*LaunchKernelEx)(const CUlaunchConfig *config, CUfunction fn, void **params, void **extra);
    CUresult (*MemAlloc)(CUdeviceptr *ptr, size_t bytes);
    CUresult (*MemFree)(CUdeviceptr ptr);
    CUresult (*MemAllocHost)(void **ptr, size_t bytes); /* page-locked host memory */
    CUresult (*MemFreeHost)(void *ptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
    CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
    CUresult (*MemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
    CUresult (*MemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t bytes, CUstream s);
    CUresult (*MemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes, CUstream s);
    CUresult (*MemsetD8)(CUdeviceptr dst, unsigned char value, size_t n);
    CUresult (*MemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t n, CUstream s);
    CUresult (*MemsetD32Async)(CUdeviceptr dst, unsigned value, size_t n, CUstream s);
    CUresult (*StreamCreate)(CUstream *stream, unsigned flags);
    CUresult (*StreamDestroy)(CUstream stream);
    CUresult (*StreamSynchronize)(CUstream stream);
    CUresult (*EventCreate)(CUevent *event, unsigned flags);
    CUresult (*EventDestroy)(CUevent event);
    CUresult (*EventRecord)(CUevent event, CUstream stream);
    CUresult (*EventSynchronize)(CUevent event);
    CUresult (*EventElapsedTime)(float *ms, CUevent start, CUevent end);
    CUresult (*MemGetInfo)(size_t *free_bytes, size_t *total_bytes);
    CUresult (*StreamBeginCapture)(CUstream stream, CUstreamCaptureMode mode);
    CUresult (*StreamEndCapture)(CUstream stream, CUgraph *graph);
    CUresult (*GraphInstantiateWithFlags)(CUgraphExec *exec, CUgraph graph, unsigned long long flags);
    CUresult (*GraphLaunch)(CUgraphExec exec, CUstream stream);
    CUresult (*GraphExecDestroy)(CUgraphExec exec);
    CUresult (*GraphDestroy)(CUgraph graph);
} sj_driver;

/* Opens libcuda.so.1 and calls cuInit(0), once per process (thread-safe).
 * On failure every later call reports the same error again. */
ssmjit_status sj_driver_get(const sj_driver **out);

/* SSMJIT_OK for CUDA_SUCCESS, else an SSMJIT_ERR_DRIVER message naming `call`
 * and the driver's error name and description. */
ssmjit_status sj_cu_result(CUresult r, const char *call);

/* Message for an entry point this driver does not have. */
ssmjit_status sj_cu_missing(const char *call);

/* Calls driver entry point `fn` (a member of sj_driver) and converts the
 * result; a missing entry point fails this call only. */
#define SJ_CU(drv, fn, ...) \
    ((drv)->fn ? sj_cu_result((drv)->fn(__VA_ARGS__), "cu" #fn) : sj_cu_missing("cu" #fn))

#endif
