/* Offline compilation into the cache, for `ssmjit prewarm`: no GPU needed.
 * The entry is the one a context on a device of the requested arch, with
 * the same options, looks up. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "cache.h"
#include "compile.h"
#include "error.h"
#include "nvrtc_loader.h"

SSMJIT_API void ssmjit_prewarm_options_init(ssmjit_prewarm_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
    opts->fast_math = 1;
}

SSMJIT_API ssmjit_status ssmjit_prewarm_module(const ssmjit_prewarm_options *opts, size_t module,
                                               int *was_cached)
{
    if (!opts || !was_cached)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_prewarm_module: %s is NULL",
                        opts ? "was_cached" : "opts");
    if (opts->struct_size < sizeof *opts)
        return sj_error(SSMJIT_ERR_INVALID_ARG,
                        "opts->struct_size = %zu: initialise with ssmjit_prewarm_options_init",
                        opts->struct_size);
    if (module >= SJ_MODULE_COUNT)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "module index %zu is not below %d", module, SJ_MODULE_COUNT);
    int arch;
    ssmjit_status st = sj_arch_parse(opts->arch, &arch);
    if (st != SSMJIT_OK)
        return st;
    char dir[PATH_MAX];
    uint64_t max_bytes;
    st = sj_cache_dir_resolve(opts->cache_dir, dir, sizeof dir);
    if (st == SSMJIT_OK)
        st = sj_cache_max_bytes(&max_bytes);
    if (st == SSMJIT_OK)
        st = sj_cache_dir_check(dir);
    if (st != SSMJIT_OK)
        return st;
    sj_compile_spec spec = {.arch = arch, .ptx = 0, .fast_math = opts->fast_math != 0,
                            .lineinfo = opts->lineinfo != 0};
    char **defines;
    st = sj_defines_normalize(opts->defines, opts->num_defines, &defines, &spec.num_defines);
    if (st != SSMJIT_OK)
        return st;
    spec.defines = (const char *const *)defines;
    sj_toolchain tc;
    st = sj_toolchain_get(dir, 1, 1, &tc);
    if (st == SSMJIT_OK && sj_toolchain_cap(&tc, arch) != arch)
        st = sj_error(SSMJIT_ERR_UNSUPPORTED, "NVRTC %d.%d cannot compile for sm_%d", tc.major,
                      tc.minor, arch);
    if (st != SSMJIT_OK) {
        free(defines);
        return st;
    }

    const sj_embedded_module *m = &sj_modules[module];
    uint8_t key[32];
    char path[PATH_MAX];
    sj_compile_key(m, &spec, &tc, key);
    if (sj_compile_entry_path(dir, key, &spec, &tc, path, sizeof path) != 0) {
        free(defines);
        return sj_error(SSMJIT_ERR_IO, "cache entry path under '%s' is too long", dir);
    }
    void *image = NULL;
    size_t size = 0;
    int cached = sj_cache_entry_read(path, key, 0, 1, &image, &size) == SSMJIT_OK;
    if (cached) {
        sj_error_clear();
    } else {
        st = sj_compile_module(m, &spec, &image, &size);
        if (st == SSMJIT_OK)
            st = sj_cache_store(dir, max_bytes, path, key, 0, image, size);
    }
    free(image);
    free(defines);
    if (st == SSMJIT_OK)
        *was_cached = cached;
    return st;
}
