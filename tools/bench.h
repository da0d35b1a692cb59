/* The bench's shared utilities (bench_util.c), used by the bench's parts
 * (bench_*.c) and by cli_bench.c; they call nothing of either. */
#ifndef SSMJIT_BENCH_H
#define SSMJIT_BENCH_H

#include <stddef.h>

#include "ssmjit.h"

/* The mamba-130m shape the benchmarks use (random weights): d_model 768,
 * 24 layers, N 16, vocab 50280, tied embeddings, f32 residual stream. */
extern const ssmjit_model_config bench_130m;

/* The command line running this program with `args` (a fresh process of
 * it): 0, or -1 when it does not fit in cap. */
int bench_self_command(const char *args, char *cmd, size_t cap);

/* Median of v[0..n) (sorts v). */
double bench_median(double *v, int n);

/* Device memory in ctx (current on this thread), filled with a finite
 * non-zero pattern (0x3e9a in every 16 bits: 0.30 in f32 and bf16, 1.65 in
 * f16) on the legacy stream. */
ssmjit_status bench_alloc(ssmjit_context *ctx, size_t bytes, void **out);

/* Fills n f32 values with v (asynchronously, legacy stream). */
ssmjit_status bench_fill_f32(ssmjit_context *ctx, void *p, size_t n, float v);

/* Frees bench_alloc's memory; NULL does nothing. */
void bench_free(ssmjit_context *ctx, void *p);

#endif
