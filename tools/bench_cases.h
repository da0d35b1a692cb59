/* One benchmark case per op: setup allocates `rotations` input sets (so
 * that together they exceed L2) and says how many bytes one call must move;
 * run launches the op on one set. */
#ifndef SSMJIT_BENCH_CASES_H
#define SSMJIT_BENCH_CASES_H

#include <stddef.h>

#include "ssmjit.h"

typedef ssmjit_status (*bench_run_fn)(void *state, int rotation, void *stream);

typedef struct bench_instance {
    void *state;
    int rotations;
    double bytes;    /* each input read once, each output written once */
    char shape[64];
} bench_instance;

/* A launch shape an op is also timed with, for the comparisons in
 * bench/NOTES.md: force(a, b, c) before the runs, force(0, 0, 0) after. */
typedef struct bench_variant {
    const char *label;
    void (*force)(int a, int b, int c);
    int a, b, c;
} bench_variant;

typedef struct bench_case {
    const char *name;
    ssmjit_status (*setup)(ssmjit_context *ctx, ssmjit_dtype dtype, int quick, bench_instance *out);
    bench_run_fn run;
    void (*teardown)(void *state);
    const bench_variant *variants; /* ended by a NULL label, or NULL */
} bench_case;

/* NULL-terminated list (bench_cases.c; its buffers come from bench.h's
 * bench_alloc). */
extern const bench_case bench_cases[];

#endif
