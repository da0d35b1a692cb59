/* ssmjit: command-line front end of libssmjit. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char usage[] =
    "usage: ssmjit <command> [options]\n"
    "\n"
    "commands:\n"
    "  info                 driver, NVRTC, GPUs, target architectures, cache\n"
    "  prewarm              compile every kernel module into the cache (no GPU needed)\n"
    "  cache stats|verify|clear\n"
    "                       inspect, check or empty the kernel cache\n"
    "  bench                time the engine and the ops on the GPU\n"
    "  run                  prefill tokens and decode greedily with a checkpoint\n"
    "\n"
    "`ssmjit <command> --help` describes each command.\n"
    "\n"
    "exit codes: 0 success, 1 the work failed, 2 bad command line,\n"
    "            3 cache verify found bad entries\n"
    "\n"
    "environment:\n"
    "  SSMJIT_CACHE_DIR=DIR       the kernel cache's directory\n"
    "  XDG_CACHE_HOME=DIR         cache in DIR/ssmjit when SSMJIT_CACHE_DIR is unset\n"
    "  SSMJIT_CACHE=rw|ro|off     cache mode (overrides the program's option)\n"
    "  SSMJIT_CACHE_PATH=D1:D2    read-only cache layers, searched after the cache\n"
    "  SSMJIT_CACHE_MAX_BYTES=N   size cap: bytes or K/M/G/T; 0 none; default 1G\n"
    "  SSMJIT_COMPILE_THREADS=N   compile pool threads (default: one per core)\n"
    "  SSMJIT_NVRTC_PATH=FILE     the NVRTC library to open, and only that one\n"
    "  SSMJIT_CUBLAS_PATH=FILE    the cuBLAS library to open, and only that one\n"
    "  SSMJIT_ARCH=sm_XY          compile as if the GPU were sm_XY\n"
    "  SSMJIT_FAST_MATH=0|1       fast math for every kernel (overrides the option)\n"
    "  SSMJIT_DETERMINISTIC=0|1   bit-reproducible backward (overrides the option)\n"
    "  SSMJIT_QUIET=1             no warning for a cache not writable or not trusted\n"
    "  CUDA_CACHE_DISABLE=1       driver's compile cache off (bench --cold sets it)\n";

int cli_fail(const char *what, ssmjit_status st)
{
    fprintf(stderr, "ssmjit: %s: %s: %s\n", what, ssmjit_status_string(st), ssmjit_last_error());
    return CLI_FAILED;
}

void cli_compile_progress(const ssmjit_compile_event *ev, void *user)
{
    (void)user;
    if (!ev->done || (ev->status == SSMJIT_OK && ev->seconds <= 0.5))
        return;
    if (ev->status == SSMJIT_OK)
        fprintf(stderr, "ssmjit: compiled %s for %s in %.2f s\n", ev->unit, ev->target, ev->seconds);
    else
        fprintf(stderr, "ssmjit: compiling %s for %s failed: %s\n", ev->unit, ev->target,
                ssmjit_status_string(ev->status));
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

size_t cli_shared_units(void)
{
    size_t n = 0;
    for (size_t u = 0; u < ssmjit_unit_count(); u++)
        n += ssmjit_unit_specialised(u) == 0;
    return n;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } commands[] = {{"info", cli_info}, {"prewarm", cli_prewarm}, {"cache", cli_cache}, {"bench", cli_bench}, {"run", cli_run}};
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("ssmjit %s\n", ssmjit_version_string());
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "ssmjit: unknown command '%s'\n%s", argv[1], usage);
    return CLI_USAGE;
}
