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
    "environment: SSMJIT_CACHE_DIR, SSMJIT_CACHE=rw|ro|off, SSMJIT_NVRTC_PATH,\n"
    "             SSMJIT_ARCH=sm_XY, SSMJIT_FAST_MATH=0|1, SSMJIT_DETERMINISTIC=0|1,\n"
    "             SSMJIT_QUIET=1\n";

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
