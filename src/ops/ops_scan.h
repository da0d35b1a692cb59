/* Internals of the selective-scan ops that tests reach. */
#ifndef SSMJIT_OPS_SCAN_H
#define SSMJIT_OPS_SCAN_H

#include <stdint.h>

#include "ssmjit.h"

/* Forces the launch shape of the forward scan kernels: ns states per
 * thread (4, 8 or 16; 0 restores the automatic choice), bd channels per
 * block (a power of two, 16 to sj_scan_fwd_max_bd(ns); 0 the automatic
 * choice) and buffers stage buffers (1 or 2; 0 the automatic choice,
 * which also covers the states-only kernel of the backward), so that
 * tests reach every variant and the benchmark can compare them.  ns and
 * bd are ignored where they do not fit N (more than 256 threads a block).
 * Not thread-safe: for tests and the benchmark only. */
void sj_scan_force_shape(int ns, int bd, int buffers);

/* Forces the split over L of the forward and backward
 * (ssmjit_selective_scan_fwd_workspace_size, _bwd_workspace_size):
 * 0 restores the automatic choice, 1 never splits, S >= 2 splits into S
 * segments a row wherever a split can be made (S <= 64, segments of at
 * least one token, whole chunks with a checkpoint and in the backward,
 * several rows only where the segments cover L): the workspace sizes
 * then count the split's part, and the forward splits where it is given
 * its workspace, the backward always.  Not thread-safe: for tests and
 * the benchmark only. */
void sj_scan_force_split(int segments);

/* The split sj_scan_force_split last forced (0: none). */
int sj_scan_forced_split(void);

/* Forces the forward's kernel: 0 restores the rule
 * (sj_scan_fwd_token_parallel), 1 the token-serial kernels
 * (scan_fwd_ns*) everywhere, 2 the token-parallel one (scan_fwd_tp*)
 * wherever it can run (N <= 16, no cu_seqlens), so that tests reach both
 * and the benchmark can compare them.  Not thread-safe: for tests and
 * the benchmark only. */
void sj_scan_force_fwd_kernel(int kernel);

/* Whether the forward over B rows of L tokens, D channels and N states runs the
 * token-parallel kernel on ctx's device where it does not split (forced
 * choices included), packed sequences (cu_seqlens) or not:
 * sj_scan_fwd_token_parallel's rule. */
int sj_scan_fwd_is_token_parallel(const ssmjit_context *ctx, int64_t B, int64_t L, int64_t D, int64_t N,
                                  int packed);

/* Segments a row that the forward (backward = 0) or the backward over B
 * rows of L tokens, D channels and N states in dtype, with or without a
 * checkpoint, splits into on ctx's device (forced splits included),
 * without cu_seqlens; 1 where it does not split. */
int64_t sj_scan_split_segments(ssmjit_context *ctx, ssmjit_dtype dtype, int64_t B, int64_t L, int64_t D, int64_t N,
                               int checkpoint, int backward);

/* The most segments a row of L tokens is split into, by the forward
 * (backward = 0) or the backward, whatever the batch, channels, states,
 * dtype and device: the largest power of two within the split's bounds
 * (64 segments, of at least 64 tokens forward and one chunk backward); 1
 * where such a row is never split.  Forced splits aside. */
int64_t sj_scan_split_most(int64_t L, int backward);

/* The launch shape the forward picks for B sequences of D channels and N
 * states on ctx's device (forced parts included): ns states a thread,
 * groups threads a channel (groups * ns >= N), bd channels a block of
 * groups * bd threads; buffers stage buffers (2, or 1 where that lets an
 * SM hold more of the grid's blocks: one more barrier a chunk), the
 * fastest by a model of the kernels' time an SM fitted on an H200; out 1
 * for the forward, 0 for the backward's states-only kernel, which keeps
 * no partial outputs. */
typedef struct sj_scan_fwd_shape {
    int ns, groups, bd, buffers, out;
} sj_scan_fwd_shape;

sj_scan_fwd_shape sj_scan_fwd_shape_for(const ssmjit_context *ctx, int64_t B, int64_t D, int64_t N);

/* The forward's kernels that calls of at most B rows of at most L tokens
 * (0: any) in dtype take on ctx's device for D channels and N states: the
 * token-serial kernels' states a thread (bit ns: 4, 8, 16), over every
 * count of their rows (a split's segments are rows of theirs) up to 512
 * and steps of an eighth beyond, the token-parallel kernels' tokens a
 * lane (bit K: 4, 8), and whether the split's kernels run (with
 * `backward`, those of the backward's split too, whose segments are
 * shorter).  Those are the kernels a model of that shape may launch; a
 * count of rows between the steps may take another, which then compiles
 * at its first use. */
typedef struct sj_scan_fwd_kernels {
    unsigned states, tp_tokens;
    int split;
} sj_scan_fwd_kernels;

sj_scan_fwd_kernels sj_scan_fwd_kernels_for(const ssmjit_context *ctx, ssmjit_dtype dtype, int64_t D, int64_t N,
                                            int64_t B, int64_t L, int backward);

/* Dynamic shared memory, in bytes, of a forward block of that shape. */
unsigned sj_scan_fwd_smem_bytes(const sj_scan_fwd_shape *f);

/* Dynamic shared memory, in bytes, of a backward block
 * (kernels_src/scan_bwd.cu) whose activations are of that dtype; the
 * kernel's static part adds 16. */
unsigned sj_scan_bwd_smem_bytes(ssmjit_dtype dtype);

/* The forward kernels' __launch_bounds__ (kernels_src/scan_fwd.cu): no
 * block may have more threads, 256, and 128 for 4 states a thread; they
 * are compiled for 1 (16 states), 2 (8) or 3 (4) resident blocks an SM. */
#define SJ_SCAN_FWD_MAX_THREADS 256
#define SJ_SCAN_FWD4_MAX_THREADS 128

/* Their widest block, in channels (the width of their staged rows): 128,
 * and 64 for 4 states a thread. */
int sj_scan_fwd_max_bd(int ns);

/* The resident blocks an SM they are compiled for (their MINB). */
int sj_scan_fwd_min_blocks(int ns);

/* The most threads a forward block of ns states a thread may have: the
 * bound of the scan_fwd_ns<ns>_* kernels. */
int sj_scan_fwd_max_threads(int ns);

#endif
