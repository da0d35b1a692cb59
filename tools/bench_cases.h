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

/* NULL-terminated list (bench_cases.c). */
extern const bench_case bench_cases[];

/* Device memory for the cases, filled with a finite non-zero pattern
 * (0x3e9a in every 16 bits: 0.30 in f32 and bf16, 1.65 in f16). */
ssmjit_status bench_alloc(size_t bytes, void **out);

/* Fills n f32 values with v (asynchronously, legacy stream). */
ssmjit_status bench_fill_f32(void *p, size_t n, float v);
void bench_free(void *p);

#endif
