/* The bench's shared utilities (bench_util.c), used by the bench's parts
 * (bench_*.c) and by cli_bench.c; they call nothing of either. */
#ifndef SSMJIT_BENCH_H
#define SSMJIT_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "ssmjit.h"

/* The mamba-130m shape the benchmarks use (random weights): d_model 768,
 * 24 layers, N 16, vocab 50280, tied embeddings, f32 residual stream. */
extern const ssmjit_model_config bench_130m;
/* The mamba-1.4b shape: d_model 2048, 48 layers, otherwise the same. */
extern const ssmjit_model_config bench_1p4b;

/* The command line running this program with `args` (a fresh process of
 * it): 0, or -1 when it does not fit in cap. */
int bench_self_command(const char *args, char *cmd, size_t cap);

/* Median of v[0..n) (sorts v). */
double bench_median(double *v, int n);

/* Device memory in ctx (current on this thread), filled with a finite
 * non-zero pattern (0x3e9a in every 16 bits: 0.30 in f32 and bf16, 1.65 in
 * f16) on the legacy stream. */
ssmjit_status bench_alloc(ssmjit_context *ctx, size_t bytes, void **out);

/* The device-to-device copy bandwidth (bytes read + written over time,
 * GB/s): the median of 25 copies of 1 GiB, timed with events on stream;
 * the yardstick of every bandwidth the bench prints. */
ssmjit_status bench_copy_bandwidth(ssmjit_context *ctx, void *stream, double *gbps);

/* Fills n f32 values with v (asynchronously, legacy stream). */
ssmjit_status bench_fill_f32(ssmjit_context *ctx, void *p, size_t n, float v);

/* Frees bench_alloc's memory; NULL does nothing. */
void bench_free(ssmjit_context *ctx, void *p);

/* What one pass over the input sets a timed op rotates over should move,
 * that the L2 cache (60 MB) not serve them: twice it, 120 MiB. */
#define BENCH_ROTATE_BYTES ((double)((size_t)120 << 20))

/* How many input sets of per_set bytes make such a pass: the fewest that
 * do, at least 1 and at most `most`. */
int bench_rotations(double per_set, int most);

/* ---- the selective-scan sweep (bench --sweep) ---------------------------- */

/* A scan's extents: B batch rows of L tokens of D channels. */
typedef struct bench_scan_shape {
    int64_t b, l, d;
} bench_scan_shape;

/* The shapes the sweep times, in order: grid A, the ten (B, L, D) of the
 * scan-shapes issue's table; with `full`, then grid B, B in {1, 2, 4, 8,
 * 16, 64} x L in {128, 512, 1024, 2048, 8192, 16384} x D in {768, 1536,
 * 2048, 4096, 5120} (D fastest), less the points grid A has.  Writes the
 * first `cap` of them into out (NULL with cap 0); returns how many there
 * are. */
int bench_sweep_shapes(int full, bench_scan_shape *out, int cap);

/* Writes "B=1 L=512 D=1536" for shape s into buf (cap bytes). */
void bench_scan_shape_name(bench_scan_shape s, char *buf, size_t cap);

/* Whether the sweep times shape s when asked for the shapes whose name
 * (bench_scan_shape_name) contains `only`; every shape where only is
 * NULL. */
int bench_sweep_wanted(bench_scan_shape s, const char *only);

/* The calls the sweep times: the forward without a checkpoint, the
 * forward writing it, the backward reading it. */
typedef enum bench_scan_dir { BENCH_SCAN_FWD, BENCH_SCAN_FWD_CKPT, BENCH_SCAN_BWD, BENCH_SCAN_DIRS } bench_scan_dir;

/* The least bytes one such call must move at shape s with N = n, its
 * activations in elements of es bytes, the checkpoint taking ckpt bytes
 * (f32; ssmjit_selective_scan_checkpoint_size): the forward reads u, delta,
 * z ([B, L, D] each), B and C ([B, L, N] each) and writes y ([B, L, D]),
 * and the checkpoint with BENCH_SCAN_FWD_CKPT; the backward reads u, delta,
 * z, B, C, dy and the checkpoint and writes du, ddelta, dz, dB and dC.  A,
 * D, delta_bias and their gradients ([D, N] and [D]) are left out. */
double bench_scan_floor_bytes(bench_scan_shape s, int64_t n, size_t es, bench_scan_dir dir, size_t ckpt);

/* Where the sweep's scan reads B, C and z and the backward writes dB, dC
 * and dz, in elements: by default each its own tensor, [B, L, N] or
 * [B, L, D] (rows n or d wide, from column 0); in a mamba model's layout
 * (`model`), as its layers hand them over, B and C are columns R and R +
 * N of x_proj's output [B, L, R + 2N], with R = ceil(D / 32) (the dt rank
 * of a model whose d_inner D is twice its d_model: 48 at D = 1536), and z
 * the second half of in_proj's [B, L, 2D]. */
typedef struct bench_scan_layout {
    int64_t bc_width, b_col, c_col, z_width, z_col;
} bench_scan_layout;

bench_scan_layout bench_scan_layout_of(int model, int64_t d, int64_t n);

/* The path the library takes for call `dir` at shape s with N = n in
 * dtype on ctx's device, the forward given the split's workspace: "split
 * S" (S segments a row), "tp" (the token-parallel forward) or "unsplit"
 * (the token-serial kernels), into buf[cap]. */
void bench_scan_path(ssmjit_context *ctx, bench_scan_shape s, int64_t n, ssmjit_dtype dtype, bench_scan_dir dir,
                     char *buf, size_t cap);

#endif
