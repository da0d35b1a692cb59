/* The parts of `ssmjit bench` that cli_bench.c runs, each in its own file
 * (bench_*.c, which use bench.h's utilities and not one another). */
#ifndef SSMJIT_BENCH_PARTS_H
#define SSMJIT_BENCH_PARTS_H

#include "bench.h"
#include "ssmjit.h"

/* Times every op, or those whose name contains `only` when it is not
 * NULL (bench_ops.c); returns a CLI exit code. */
int bench_ops(ssmjit_context *ctx, int quick, const char *only);

/* The selective-scan sweep (bench_ops.c): the scan's forward, forward
 * with checkpoint and backward in every dtype over grid A, and with `full`
 * grid B (bench.h's bench_sweep_shapes), against the byte floor at the
 * measured copy bandwidth, ending in a markdown table; only the shapes
 * whose "B=1 L=512 D=1536" contains `only` where it is not NULL (a
 * profiler's run of one shape); or, where `shape` is not NULL, that shape
 * alone; with model_layout, B, C and z (and their gradients) strided as a
 * model's layers hand them over (bench.h's bench_scan_layout_of); a CLI
 * exit code. */
int bench_sweep(ssmjit_context *ctx, int full, const char *only, const bench_scan_shape *shape, int model_layout);

/* Which rows of bench --model run. */
typedef enum bench_model_rows {
    BENCH_MODEL_ALL,    /* prefill, every decode row, the training step */
    BENCH_MODEL_DECODE, /* --model decode: the decode rows alone */
    BENCH_MODEL_BIG,    /* --model 1.4b: the 1.4b shape's decode rows alone */
    BENCH_MODEL_TRAIN   /* --model train: prefill and the training step, no decode */
} bench_model_rows;

/* Times a mamba-130m-shaped model with random weights (bench_model.c):
 * prefill, decode at batch 1 to 64 (and an f32 and a 1.4b-shaped model's),
 * a training step, or the part `rows` names. */
int bench_model(ssmjit_context *ctx, int quick, bench_model_rows rows);

/* bench --gemm (bench_gemm.c): a Linear layer's product through cuBLAS
 * and the skinny kernels at the model shapes' projections. */
int bench_gemm(ssmjit_context *ctx, int quick);

/* The cache at 10,000 entries: stats, verify, eviction (bench_cache.c; no
 * GPU needed). */
int bench_cache(void);

/* First use (bench_cold.c): each case cold in a fresh process with an
 * empty cache, then warm; and the children it runs. */
int bench_cold(ssmjit_context *ctx);
int bench_cold_child(const char *kind, const char *arg);

#endif
