/* Shared by the bench subcommand's parts. */
#ifndef SSMJIT_BENCH_H
#define SSMJIT_BENCH_H

#include "ssmjit.h"

/* Median of v[0..n) (sorts v). */
double bench_median(double *v, int n);

/* Times every op, or those whose name contains `only` when it is not
 * NULL (bench_ops.c); returns a CLI exit code. */
int bench_ops(ssmjit_context *ctx, int quick, const char *only);

#endif
