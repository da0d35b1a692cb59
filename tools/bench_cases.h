/* One benchmark case per op: setup allocates `rotations` input sets (so
 * that together they exceed L2) and says how many bytes one call must move;
 * run launches the op on one set. */
#ifndef SSMJIT_BENCH_CASES_H
#define SSMJIT_BENCH_CASES_H

#include <stddef.h>

#include "bench.h"
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

/* ---- the selective-scan sweep (bench --sweep) ---------------------------- */

/* The most input sets a sweep state rotates over, and its N. */
#define BENCH_SWEEP_SETS 25
#define BENCH_SWEEP_N 16

/* The scan at shape with N = BENCH_SWEEP_N, z, D, delta_bias and softplus (the
 * model's options; with model_layout, B, C and z as a model lays them
 * out, bench_scan_layout_of), for every dtype from one allocation: `rotations` sets
 * (1..BENCH_SWEEP_SETS) of the backward's buffers (which hold the
 * forward's) sized for f32, A filled; the split workspace the forward is
 * given and the backward's full workspace, each as large as the library
 * asks for at this shape in any dtype (its own choice of shape and split,
 * none forced).  *set_bytes: one set's bytes with the split workspace;
 * where that passes `limit`, nothing is allocated (out->state NULL).
 * *checkpoint_bytes: the checkpoint's.  out->bytes is 0 and out->shape
 * says the shape; teardown with bench_scan_sweep_free. */
ssmjit_status bench_scan_sweep_setup(ssmjit_context *ctx, bench_scan_shape shape, int model_layout, int rotations,
                                     size_t limit, bench_instance *out, size_t *set_bytes, size_t *checkpoint_bytes);

/* Makes the calls on such a state take dtype, and writes each set's
 * checkpoint with the forward in it for the backward (on the legacy
 * stream). */
ssmjit_status bench_scan_sweep_dtype(void *state, ssmjit_dtype dtype);

/* The calls on such a state, by bench_scan_dir. */
extern const bench_run_fn bench_scan_sweep_runs[BENCH_SCAN_DIRS];

void bench_scan_sweep_free(void *state);

#endif
