/* Shared by the bench subcommand's parts. */
#ifndef SSMJIT_BENCH_H
#define SSMJIT_BENCH_H

#include "ssmjit.h"

/* The mamba-130m shape the benchmarks use (random weights): d_model 768,
 * 24 layers, N 16, vocab 50280, tied embeddings, f32 residual stream. */
extern const ssmjit_model_config bench_130m;

/* The command line running this program with `args` (a fresh process of
 * it): 0, or -1 when it does not fit in cap. */
int bench_self_command(const char *args, char *cmd, size_t cap);

/* Median of v[0..n) (sorts v). */
double bench_median(double *v, int n);

/* Times every op, or those whose name contains `only` when it is not
 * NULL (bench_ops.c); returns a CLI exit code. */
int bench_ops(ssmjit_context *ctx, int quick, const char *only);

/* Times a mamba-130m-shaped model with random weights (bench_model.c):
 * prefill, decode at batch 1 and 64, a training step. */
int bench_model(ssmjit_context *ctx, int quick);

/* The cache at 10,000 entries: stats, verify, eviction (bench_cache.c; no
 * GPU needed). */
int bench_cache(void);

/* First use (bench_cold.c): each case cold in a fresh process with an
 * empty cache, then warm; and the children it runs. */
int bench_cold(ssmjit_context *ctx);
int bench_cold_child(const char *kind, const char *arg);

#endif
