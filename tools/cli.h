/* Shared by the subcommands of the ssmjit command-line tool. */
#ifndef SSMJIT_CLI_H
#define SSMJIT_CLI_H

#include "ssmjit.h"

/* Exit codes, documented in `ssmjit --help` and the README. */
enum {
    CLI_OK = 0,       /* success */
    CLI_FAILED = 1,   /* the work failed (a compile, a driver call, I/O) */
    CLI_USAGE = 2,    /* bad command line */
    CLI_BAD_CACHE = 3 /* cache verify found bad entries */
};

int cli_info(int argc, char **argv);
int cli_prewarm(int argc, char **argv);
int cli_cache(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_run(int argc, char **argv);

/* Prints "ssmjit: <what>: <status>: <detail>" to stderr; returns CLI_FAILED. */
int cli_fail(const char *what, ssmjit_status st);

/* A compile callback (ssmjit_context_options.on_compile) that tells, on
 * stderr, of each compile that took over half a second, and of failures. */
void cli_compile_progress(const ssmjit_compile_event *ev, void *user);

/* Seconds on a monotonic clock. */
double cli_now(void);

/* The units prewarm compiles and load_all loads: all but the specialised
 * (ssmjit_unit_specialised), which the models compile with their sizes. */
size_t cli_shared_units(void);

#endif
