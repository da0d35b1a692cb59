/* Double-precision reference of the selective scan (see
 * ssmjit_selective_scan_fwd/_bwd and ssmjit_selective_state_update) on
 * contiguous arrays, written for clarity. */
#ifndef SSMJIT_REF_SCAN_H
#define SSMJIT_REF_SCAN_H

#include <stddef.h>

/* One scan problem.  u, delta, z [B, L, D]; Bm, Cm [B, L, N]; A [D, N];
 * Dv, delta_bias [D]; init [S, D, N].  Optional inputs are NULL when absent.
 * With cu_seqlens (host array of nseq + 1 offsets) B must be 1 and the S =
 * nseq segments are cu_seqlens[s] .. cu_seqlens[s+1]; else S = B. */
typedef struct ref_scan_problem {
    size_t B, L, D, N;
    const double *u, *delta, *A, *Bm, *Cm;
    const double *Dv, *z, *delta_bias, *init;
    int softplus;
    const int *cu_seqlens;
    size_t nseq;
} ref_scan_problem;

/* Number of segments S of p. */
size_t ref_scan_segments(const ref_scan_problem *p);

/* y [B, L, D]; final_state [S, D, N] (may be NULL). */
void ref_scan_fwd(const ref_scan_problem *p, double *y, double *final_state);

/* Gradients of <dy, y> + <dfinal, final_state>; each output is overwritten.
 * du, ddelta, dA, dB, dC are required; dD, dz, ddelta_bias, dinit may be
 * NULL (skipped).  dfinal [S, D, N] may be NULL (zero). */
typedef struct ref_scan_grads {
    double *du, *ddelta, *dA, *dB, *dC;
    double *dD, *dz, *ddelta_bias, *dinit;
} ref_scan_grads;

void ref_scan_bwd(const ref_scan_problem *p, const double *dy, const double *dfinal,
                  const ref_scan_grads *g);

/* One decode step for B rows: x, dt, z, out [B, D]; Bm, Cm [B, N]; state
 * [B, D, N] updated in place.  Dv, z, dt_bias may be NULL. */
void ref_state_update(size_t B, size_t D, size_t N, const double *x, const double *dt,
                      const double *A, const double *Bm, const double *Cm, const double *Dv,
                      const double *z, const double *dt_bias, int softplus, double *state,
                      double *out);

/* Shape and optional inputs of a random problem for the tests. */
typedef struct ref_scan_options {
    size_t B, L, D, N;
    int has_D, has_z, has_bias, softplus, has_init, has_dfinal;
    const int *cu_seqlens; /* packed sequences (B = 1), with nseq */
    size_t nseq;
} ref_scan_options;

/* Owned inputs of a problem, and the gradients dy, dfinal of a loss. */
typedef struct ref_scan_inputs {
    ref_scan_options o;
    size_t S; /* segments */
    double *u, *delta, *A, *Bm, *Cm, *Dv, *z, *bias, *init, *dy, *dfinal;
} ref_scan_inputs;

/* Fresh random inputs (tu_* generators): u, B, C, z, D, initial state, dy
 * and dfinal standard normal; A in [-2, -0.2]; dt = softplus(delta + bias)
 * or delta + bias around 0.05 .. 1.  Absent options are NULL. */
ref_scan_inputs ref_scan_random(const ref_scan_options *o);

void ref_scan_inputs_free(ref_scan_inputs *in);

/* The problem view of in (pointers into it). */
ref_scan_problem ref_scan_problem_of(const ref_scan_inputs *in);

#endif
