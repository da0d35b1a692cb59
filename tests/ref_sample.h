/* Double-precision reference of token sampling, the rules written in
 * src/ops/ops_sample.h, step by step as written there (a sort for the
 * ranking, plain sums), plus the chi-square test the sampling tests
 * judge distributions with. */
#ifndef SSMJIT_REF_SAMPLE_H
#define SSMJIT_REF_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "ops_sample.h"

/* Philox4x32-10 of counter ctr under key. */
void ref_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* The row's uniform u in [0, 1) for seed, step and row (rule 5). */
double ref_sample_uniform(uint64_t seed, uint64_t step, uint64_t row);

/* How close a draw came to going another way. */
typedef struct ref_sample_info {
    int greedy;        /* rule 1 decided */
    int64_t kept;      /* tokens kept by top-k and top-p */
    double draw_margin;  /* distance of u * total from the nearest end of the chosen token's
                          * interval, over the total; INFINITY when greedy */
    double top_p_margin; /* distance of top_p times the top-k sum from the running sums on
                          * either side of the cut, over that sum; INFINITY without a cut */
} ref_sample_info;

/* The token of a row x[0 .. cols) (cols >= 1) with parameters p at step
 * `step` of row `row`.  prob (may be NULL) gets each token's probability
 * of being drawn (the kept weights over their total; 1 at the greedy
 * token); info (may be NULL) the margins. */
int32_t ref_sample_row(const double *x, int64_t cols, const sj_sample_params *p, uint64_t step, uint64_t row,
                       double *prob, ref_sample_info *info);

/* Pearson's statistic of counts[0 .. n) after `draws` draws against the
 * probabilities prob (tokens of probability 0 must have no count: those
 * give INFINITY), and whether it passes at significance 1e-4 (the
 * Wilson-Hilferty approximation of the chi-square quantile, degrees of
 * freedom = tokens of nonzero probability - 1).  *stat gets the statistic. */
int ref_chi_square_ok(const int64_t *counts, const double *prob, size_t n, int64_t draws, double *stat);

#endif
