/* NVRTC, opened with dlopen on first use, and the facts about it that cache
 * keys and target selection need (the "toolchain"). */
#ifndef SSMJIT_NVRTC_H
#define SSMJIT_NVRTC_H

#include <stddef.h>

#include "cuda_api.h"
#include "ssmjit.h"

#define SJ_MAX_ARCHS 64

typedef struct sj_nvrtc {
    nvrtcResult (*Version)(int *major, int *minor);
    nvrtcResult (*GetNumSupportedArchs)(int *n);
    nvrtcResult (*GetSupportedArchs)(int *archs);
    nvrtcResult (*CreateProgram)(nvrtcProgram *prog, const char *src, const char *name, int num_headers,
                                 const char *const *headers, const char *const *include_names);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *prog);
    nvrtcResult (*CompileProgram)(nvrtcProgram prog, int num_options, const char *const *options);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram prog, size_t *size);
    nvrtcResult (*GetProgramLog)(nvrtcProgram prog, char *log);
    nvrtcResult (*GetPTXSize)(nvrtcProgram prog, size_t *size);
    nvrtcResult (*GetPTX)(nvrtcProgram prog, char *ptx);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram prog, size_t *size);
    nvrtcResult (*GetCUBIN)(nvrtcProgram prog, char *cubin);
    const char *(*GetErrorString)(nvrtcResult result);
    char path[4096]; /* file the library was loaded from */
} sj_nvrtc;

/* Opens NVRTC once per process: SSMJIT_NVRTC_PATH if set (and nothing
 * else), otherwise libnvrtc.so.13, .12, .11.2, .11.1, .11.0, libnvrtc.so.
 * SSMJIT_ERR_NVRTC_NOT_FOUND lists every name tried and why it failed, or
 * the entry point the library lacks; every later call reports the same. */
ssmjit_status sj_nvrtc_get(const sj_nvrtc **out);

/* What identifies the compiler in a cache key, and what it can target. */
typedef struct sj_toolchain {
    int major, minor;
    long build;          /* __CUDACC_VER_BUILD__ as NVRTC compiles it, -1 if undefined */
    char probe_hash[65]; /* SHA-256 of NVRTC's PTX for a fixed probe: changes with the build */
    int archs[SJ_MAX_ARCHS];
    int num_archs;
} sj_toolchain;

/* Opens NVRTC and reads what identifies it: version, supported
 * architectures, __CUDACC_VER_BUILD__ and a hash of its PTX for a fixed
 * probe (changes with the build).  Costs a small compile. */
ssmjit_status sj_nvrtc_probe(sj_toolchain *tc);

/* Compiles `src` with NVRTC under the C locale (NVRTC before 12.6.2 parses
 * numbers through the process locale), with exactly `options`.  On success *image (malloc'd) holds
 * PTX (NUL-terminated) if want_ptx, else CUBIN.  On SSMJIT_ERR_COMPILE the
 * thread's error message holds the full NVRTC log. */
ssmjit_status sj_nvrtc_compile(const char *src, const char *name, int num_headers,
                               const char *const *headers, const char *const *header_names,
                               int num_options, const char *const *options, int want_ptx,
                               void **image, size_t *size);

#endif
