/* ssmjit info */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ssmjit_internal.h"

static const char help[] =
    "usage: ssmjit info\n"
    "Prints the CUDA driver, NVRTC and cuBLAS found, each GPU with its\n"
    "architecture and the target its modules are compiled for, and the cache\n"
    "directory and mode.  A missing driver, NVRTC or cuBLAS is reported, not an\n"
    "error (exit 0).\n";

int cli_info(int argc, char **argv)
{
    if (argc > 1) {
        int h = !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h");
        fputs(help, h ? stdout : stderr);
        return h ? CLI_OK : CLI_USAGE;
    }
    printf("ssmjit %s\n", ssmjit_version_string());
    int major, minor;
    const char *path;
    if (ssmjit_nvrtc_version(&major, &minor, &path) == SSMJIT_OK) {
        int archs[64];
        size_t n = 0;
        printf("nvrtc: %d.%d (%s)\n", major, minor, path);
        if (ssmjit_nvrtc_supported_archs(archs, 64, &n) == SSMJIT_OK) {
            printf("nvrtc archs:");
            for (size_t i = 0; i < n && i < 64; i++)
                printf(" sm_%d", archs[i]);
            printf("\n");
        }
    } else {
        printf("nvrtc: not found: %s\n", ssmjit_last_error());
    }
    int version, count = 0;
    if (ssmjit_driver_version(&version) == SSMJIT_OK)
        printf("driver: CUDA %d.%d\n", version / 1000, version % 1000 / 10);
    else
        printf("driver: not available: %s\n", ssmjit_last_error());
    if (ssmjit_device_count(&count) != SSMJIT_OK)
        count = 0;
    printf("gpus: %d\n", count);
    for (int i = 0; i < count; i++) {
        ssmjit_device_info d;
        ssmjit_context_options o;
        ssmjit_context *ctx = NULL;
        ssmjit_context_info ci;
        if (ssmjit_device_get_info(i, &d) != SSMJIT_OK) {
            printf("  gpu %d: %s\n", i, ssmjit_last_error());
            continue;
        }
        printf("  gpu %d: %s, sm_%d%d, %d SMs, %.1f GiB", i, d.name, d.cc_major, d.cc_minor, d.sm_count,
               (double)d.total_memory / (1024.0 * 1024 * 1024));
        ssmjit_context_options_init(&o);
        o.device = i;
        if (ssmjit_context_create(&o, &ctx) == SSMJIT_OK && ssmjit_context_get_info(ctx, &ci) == SSMJIT_OK)
            printf(", compiles for %s%s\n", ci.target, ci.target_is_ptx ? " (PTX, JIT by the driver)" : "");
        else
            printf(", no target: %s\n", ssmjit_last_error());
        ssmjit_context_destroy(ctx);
    }
    char dir[4096];
    const char *mode = getenv("SSMJIT_CACHE");
    if (ssmjit_cache_resolve_dir(NULL, dir, sizeof dir) == SSMJIT_OK)
        printf("cache: %s (mode %s)\n", dir, mode && *mode ? mode : "rw");
    else
        printf("cache: none: %s\n", ssmjit_last_error());
    char layers[8 * 4097];
    if (ssmjit_cache_layers(layers, sizeof layers) == SSMJIT_OK)
        printf("cache layers (read-only): %s\n", layers[0] ? layers : "none");
    else
        printf("cache layers: %s\n", ssmjit_last_error());
    printf("compile units: %zu kernels, compiled by %d pool threads\n", ssmjit_unit_count(),
           ssmjit_compile_threads());
    const char *cublas;
    if (sj_cublas_path(&cublas) == SSMJIT_OK)
        printf("cublas: %s (for the model's GEMMs)\n", cublas);
    else
        printf("cublas: not found (the model calls need it, the ops do not): %s\n", ssmjit_last_error());
    printf("modules:");
    for (size_t i = 0; i < ssmjit_module_count(); i++)
        printf(" %s", ssmjit_module_name(i));
    printf("\n");
    return CLI_OK;
}
