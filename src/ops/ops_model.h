/* Small GPU ops the model layer needs around the public ones (modules
 * "model" and "model_bwd"): embedding lookup and its deterministic
 * gradient, fused cross-entropy, greedy argmax, the conv state a prefill
 * leaves and two f32
 * vector helpers.  Internal: not part of ssmjit.h.
 *
 * Like the public ops they take device pointers and the caller's stream,
 * validate every argument before touching the GPU (an
 * SSMJIT_ERR_INVALID_ARG or SSMJIT_ERR_UNSUPPORTED message names the
 * function and the field), treat empty extents as no-ops, and never
 * allocate device memory.  A matrix's stride 0 means contiguous rows.
 * Nothing sums with float atomics: results are reproducible bit for bit. */
#ifndef SSMJIT_OPS_MODEL_H
#define SSMJIT_OPS_MODEL_H

#include <stdint.h>

#include "ssmjit.h"

/* out[t] = table[ids[t]] for t < n, converted from dtype to out_dtype.
 * ids: device [n]; table: device [vocab, d] of dtype, contiguous; out:
 * [n, d] of out_dtype.  The caller validates ids on the host; the kernel
 * clamps an id outside [0, vocab) to the nearest row rather than read past
 * the table.  vocab = 0 is an error when there is anything to look up. */
ssmjit_status sj_embedding_fwd(ssmjit_context *ctx, ssmjit_dtype dtype, int64_t n, int64_t d,
                               int64_t vocab, const int32_t *ids, const void *table,
                               ssmjit_matrix out, ssmjit_dtype out_dtype, void *stream);

/* Host half of the embedding gradient.  From ids_host[0..n): order[0..n)
 * the positions sorted by id, stably (equal ids keep increasing
 * positions); *nseg the number of distinct ids; segment s (< *nseg) holds
 * order[seg_start[s] .. seg_start[s+1]) and its id is seg_id[s], ids
 * increasing.  seg_start has room for n + 1 entries (those past
 * seg_start[*nseg] are left alone), seg_id for n (those past *nseg are
 * scratch).  n <= INT32_MAX.  Writes nothing on error. */
ssmjit_status sj_embedding_bwd_plan(const int32_t *ids_host, int64_t n, int32_t *order,
                                    int32_t *seg_start, int32_t *seg_id, int64_t *nseg);

/* dtable[seg_id[s]] += the sum over segment s of dy[order[p]], in the
 * order of p, for s < nseg: device copies of sj_embedding_bwd_plan's
 * arrays.  dy: [n, d] of dtype; dtable: device [vocab, d] f32,
 * contiguous, which the call adds to (zero it first, or write the tied
 * LM head's gradient there); rows of ids that do not occur are untouched.
 * Runs in the backward role (exact math by default).  nseg <= n. */
ssmjit_status sj_embedding_bwd(ssmjit_context *ctx, ssmjit_dtype dtype, int64_t n, int64_t d,
                               int64_t nseg, const int32_t *order, const int32_t *seg_start,
                               const int32_t *seg_id, ssmjit_matrix dy, float *dtable,
                               void *stream);

/* The block that sums the rows' losses: SJ_CE_SUM_THREADS in
 * kernels_src/model_bwd.cu (tests/test_kernel_sizes.c holds the two
 * equal). */
#define SJ_CE_SUM_THREADS 256u

/* Softmax cross-entropy of logits [rows, vocab] (dtype) against
 * targets (device [rows]), in f32 with the row maximum subtracted:
 * row_loss[r] = logsumexp(logits[r]) - logits[r][targets[r]], 0 for an
 * ignored row; *loss = scale * the sum of row_loss (device scalar, f32,
 * summed in double in a fixed order); unless dlogits.data is NULL,
 * dlogits = scale * (softmax(logits) - onehot(target)), 0 for ignored
 * rows, in dtype.  A target of -100 marks an ignored row; so does any
 * other target outside [0, vocab), which the caller should have rejected on
 * the host.  The caller passes scale = 1 / (the number of rows not
 * ignored).  dlogits may be logits itself (same data and stride; other
 * overlaps are not allowed).  row_loss: device [rows] f32, written.  A NaN
 * logit makes its row's loss and gradient NaN.  rows = 0 writes *loss = 0.
 * Always runs in the backward role, so the loss is the same number with
 * or without the gradient. */
ssmjit_status sj_cross_entropy(ssmjit_context *ctx, ssmjit_dtype dtype, int64_t rows, int64_t vocab,
                               ssmjit_matrix logits, const int32_t *targets, float scale,
                               float *row_loss, float *loss, ssmjit_matrix dlogits, void *stream);

/* out[r] = the column of the largest value of row r of x [rows, cols]
 * (dtype); on ties the first one (-0 and +0 tie).  NaN counts as larger
 * than every number, so a row with a NaN gives its first NaN (as
 * torch.argmax).  out: device [rows] int32; cols <= INT32_MAX. */
ssmjit_status sj_argmax_rows(ssmjit_context *ctx, ssmjit_dtype dtype, int64_t rows, int64_t cols,
                             ssmjit_matrix x, int32_t *out, void *stream);

/* The columns each block of sj_argmax_rows takes: 0 for one block a
 * whole row; else a multiple of 8, at most 8192 unless 8 blocks would
 * take more, with every block of a row's cluster (ceil(cols / it), 2 to
 * 8 of them) some.  Clusters where they can be launched
 * (sj_launch_sm90), the rows are under two an SM and cols at least
 * 16384. */
int64_t sj_argmax_segment(const ssmjit_context *ctx, int64_t rows, int64_t cols);

/* y = -exp(x) elementwise over n f32 values (A from A_log), with expf's
 * accuracy whatever the fast-math setting.  y may be x. */
ssmjit_status sj_neg_exp_f32(ssmjit_context *ctx, int64_t n, const float *x, float *y, void *stream);

/* y = a * b elementwise over n f32 values (dA_log = dA * A), backward
 * role.  y may be a or b. */
ssmjit_status sj_mul_f32(ssmjit_context *ctx, int64_t n, const float *a, const float *b, float *y,
                         void *stream);

/* The decode conv state a prefill leaves: state [B, D, W] f32 (device,
 * contiguous) with state[b, d, k] = x[b, L - W + k, d], zero where that
 * time is before the sequence; x [B * L, D] of dtype with its stride (the
 * x half of in_proj's output).  W is 2..8. */
ssmjit_status sj_conv_state_fill(ssmjit_context *ctx, ssmjit_dtype dtype, int64_t B, int64_t L,
                                 int64_t D, int64_t W, ssmjit_matrix x, float *state, void *stream);


#endif
