/* Token sampling for decoding (module "sample"): temperature, top-k,
 * top-p and a seeded draw, one token a row of logits.  Internal: not part
 * of ssmjit.h.  The decode step runs inside a captured CUDA graph, whose
 * kernel arguments are frozen, so everything that may change between
 * calls (the parameters, the step counters) lives in device memory.
 *
 * What a row r of logits x[0 .. V) (V = cols) with parameters
 * p = params[r] and step s = steps[r] (read before the call adds one)
 * gives; tests/ref_sample.c computes the same in double precision:
 *
 * 1. Greedy: the row's first element in argmax order (NaN above every
 *    number, then larger values, then smaller indices; sj_argmax_rows's
 *    order) when p.temperature is not > 0 (NaN included), p.top_k == 1,
 *    or that element is not a finite number (the row holds a NaN or a
 *    +inf, or every logit is -inf): a softmax over those has no meaning,
 *    and greedy decoding would pick the same token.
 * 2. Otherwise, with m the row's largest logit, token i weighs
 *    w_i = exp((x_i - m) / T), T = p.temperature (w_i = 0 for x_i = -inf;
 *    T = +inf weighs every finite logit 1).  Tokens are ranked by logit
 *    descending (the same as weight descending), equal logits (-0 and +0
 *    are equal) by index ascending.
 * 3. Top-k: the first p.top_k tokens of that ranking are kept;
 *    p.top_k <= 0 or >= V keeps them all.
 * 4. Top-p, when 0 < p.top_p < 1 (otherwise no cut): of the top-k tokens,
 *    in ranking order, the shortest prefix whose weights sum to at least
 *    p.top_p times the sum over all top-k tokens.  The best token is
 *    always kept.
 * 5. The draw: (r0, r1, r2, r3) = Philox4x32-10 with key (low and high
 *    32 bits of p.seed) and counter (low and high 32 bits of s, r, 0);
 *    u = ((r0 + 2^32 r1) >> 11) 2^-53, uniform in [0, 1).  The token is
 *    the first kept one in increasing index order whose running sum of
 *    kept weights exceeds u times their total.
 *
 * On the GPU the weights are computed in f32 (exp2 of (x - m) log2(e) / T)
 * and summed as fixed-point integers (the best token weighs 2^32), so sums
 * are exact in any order and the result is the same bit for bit from run
 * to run; it differs from the exact semantics only where u times the
 * total, or the top-p cut, falls within a few parts in a million of a
 * boundary between two tokens.  Logits whose spread overflows f32 are
 * outside that accuracy.  Every row's step counter advances by one on
 * every call, greedy rows too. */
#ifndef SSMJIT_OPS_SAMPLE_H
#define SSMJIT_OPS_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "ssmjit.h"

/* Threads a block of the sampling kernels: SJ_SAMPLE_THREADS in
 * kernels_src/sample.cu (tests/test_kernel_sizes.c holds the two equal). */
#define SJ_SAMPLE_THREADS 1024u

/* One row's parameters, in device memory.  Mirrored by struct
 * sj_sample_params in kernels_src/sample.cu: keep the two the same. */
typedef struct sj_sample_params {
    float temperature;
    int32_t top_k;
    float top_p;
    uint32_t pad; /* zero; places seed at 8-byte alignment on both sides */
    uint64_t seed;
} sj_sample_params;

_Static_assert(sizeof(sj_sample_params) == 24 && offsetof(sj_sample_params, top_p) == 8 &&
                   offsetof(sj_sample_params, seed) == 16,
               "layout of struct sj_sample_params in kernels_src/sample.cu");

/* out[r] = the token drawn from row r of logits [rows, cols] (dtype) by
 * the rules above, for r < rows; steps[r] += 1.  params: device [rows];
 * steps: device [rows]; out: device [rows] int32.  cols <= INT32_MAX, and
 * at least 1 when rows > 0.  Validates every argument before touching the
 * GPU (the parameters' values need none: every value has a meaning
 * above); rows = 0 is a no-op. */
ssmjit_status sj_sample_rows(ssmjit_context *ctx, ssmjit_dtype dtype, int64_t rows, int64_t cols,
                             ssmjit_matrix logits, const sj_sample_params *params, uint64_t *steps,
                             int32_t *out, void *stream);

#endif
