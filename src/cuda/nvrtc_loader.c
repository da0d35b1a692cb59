/* NVRTC: loading, compilation under the C locale, and the probe of what
 * identifies the compiler (toolchain.c keeps its record in the cache). */
#include "nvrtc_loader.h"

#include <locale.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/lib_open.h"
#include "base/sha256.h"

static const char *const search_names[] = {"libnvrtc.so.13",   "libnvrtc.so.12",   "libnvrtc.so.11.2",
                                           "libnvrtc.so.11.1", "libnvrtc.so.11.0", "libnvrtc.so"};

/* The CUBIN getters appeared in 11.1; everything else is older. */
static const sj_lib_symbol symbols[] = {
#define E(fn) {"nvrtc" #fn, offsetof(sj_nvrtc, fn), 0}
#define OPTIONAL(fn) {"nvrtc" #fn, offsetof(sj_nvrtc, fn), SJ_LIB_OPTIONAL}
    E(Version), E(GetNumSupportedArchs), E(GetSupportedArchs), E(CreateProgram), E(DestroyProgram),
    E(CompileProgram), E(GetProgramLogSize), E(GetProgramLog), E(GetPTXSize), E(GetPTX),
    OPTIONAL(GetCUBINSize), OPTIONAL(GetCUBIN), E(GetErrorString),
#undef OPTIONAL
#undef E
};

static sj_nvrtc nvrtc;
static sj_lib lib = SJ_LIB_INIT("NVRTC", "SSMJIT_NVRTC_PATH", SSMJIT_ERR_NVRTC_NOT_FOUND,
                                search_names, symbols, nvrtc);

static void load(void) { sj_lib_load(&lib); }

ssmjit_status sj_nvrtc_get(const sj_nvrtc **out)
{
    SJ_TRY(sj_lib_get(&lib, load));
    *out = &nvrtc;
    return SSMJIT_OK;
}

static ssmjit_status nvrtc_fail(const sj_nvrtc *n, nvrtcResult r, const char *call)
{
    return sj_error(SSMJIT_ERR_COMPILE, "%s failed: %s", call, n->GetErrorString(r));
}

ssmjit_status sj_nvrtc_compile(const char *src, const char *name, int num_headers,
                               const char *const *headers, const char *const *header_names,
                               int num_options, const char *const *options, int want_ptx,
                               void **image, size_t *size)
{
    const sj_nvrtc *n;
    ssmjit_status st = sj_nvrtc_get(&n);
    if (st != SSMJIT_OK)
        return st;
    if (!want_ptx && !n->GetCUBIN)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "this NVRTC (%s) cannot emit CUBIN", n->path);

    /* Exactly the options given, which are the ones the cache key hashes:
     * an option added here (as -split-compile once was, which changes the
     * machine code) would make two different images share a key. */
    locale_t c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    locale_t previous = c_locale ? uselocale(c_locale) : (locale_t)0;
    nvrtcProgram prog = NULL;
    nvrtcResult r = n->CreateProgram(&prog, src, name, num_headers, headers, header_names);
    if (r != NVRTC_SUCCESS) {
        prog = NULL;
        st = nvrtc_fail(n, r, "nvrtcCreateProgram");
        goto done;
    }
    r = n->CompileProgram(prog, num_options, options);
    if (r != NVRTC_SUCCESS) {
        size_t log_size = 0;
        st = sj_error(SSMJIT_ERR_COMPILE, "NVRTC could not compile %s (%s)%s; log:\n", name,
                      n->GetErrorString(r),
                      r == 7 ? " - is libnvrtc-builtins, from the same NVRTC release, installed?" : "");
        if (n->GetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
            char *log = malloc(log_size);
            if (log && n->GetProgramLog(prog, log) == NVRTC_SUCCESS)
                sj_error_append(log);
            free(log);
        }
        goto done;
    }
    r = want_ptx ? n->GetPTXSize(prog, size) : n->GetCUBINSize(prog, size);
    if (r != NVRTC_SUCCESS) {
        st = nvrtc_fail(n, r, want_ptx ? "nvrtcGetPTXSize" : "nvrtcGetCUBINSize");
        goto done;
    }
    *image = malloc(*size ? *size : 1);
    if (!*image) {
        st = sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory for a %zu-byte module image", *size);
        goto done;
    }
    r = want_ptx ? n->GetPTX(prog, *image) : n->GetCUBIN(prog, *image);
    if (r != NVRTC_SUCCESS) {
        free(*image);
        *image = NULL;
        st = nvrtc_fail(n, r, want_ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN");
    }
done:
    if (prog)
        n->DestroyProgram(&prog);
    if (c_locale) {
        uselocale(previous);
        freelocale(c_locale);
    }
    return st;
}

/* ---- what identifies the compiler -------------------------------------- */

static const char probe_source[] =
    "#ifndef __CUDACC_VER_BUILD__\n#define __CUDACC_VER_BUILD__ -1\n#endif\n"
    "extern \"C\" __device__ int ssmjit_probe_build = __CUDACC_VER_BUILD__;\n";

ssmjit_status sj_nvrtc_probe(sj_toolchain *tc)
{
    const sj_nvrtc *n;
    ssmjit_status st = sj_nvrtc_get(&n);
    if (st != SSMJIT_OK)
        return st;
    memset(tc, 0, sizeof *tc);
    n->Version(&tc->major, &tc->minor);
    int count = 0;
    if (n->GetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0 || count > SJ_MAX_ARCHS)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "NVRTC %d.%d reports %d supported architectures",
                        tc->major, tc->minor, count);
    n->GetSupportedArchs(tc->archs);
    tc->num_archs = count;

    char opt[64];
    snprintf(opt, sizeof opt, "--gpu-architecture=compute_%d", tc->archs[0]);
    const char *options[] = {opt};
    void *ptx = NULL;
    size_t size = 0;
    st = sj_nvrtc_compile(probe_source, "ssmjit_probe.cu", 0, NULL, NULL, 1, options, 1, &ptx, &size);
    if (st != SSMJIT_OK)
        return st;
    uint8_t digest[32];
    sj_sha256 h;
    sj_sha256_init(&h);
    sj_sha256_update(&h, ptx, size);
    sj_sha256_final(&h, digest);
    sj_hex(digest, 32, tc->probe_hash);
    const char *b = strstr(ptx, "ssmjit_probe_build = ");
    tc->build = b ? strtol(b + strlen("ssmjit_probe_build = "), NULL, 10) : -1;
    free(ptx);
    return SSMJIT_OK;
}
