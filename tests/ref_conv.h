/* Double-precision reference of the causal depthwise conv1d (see
 * ssmjit_causal_conv1d_fwd/_bwd/_update) on contiguous arrays: activations
 * [B, L, D], weight [D, W], bias [D], prefill states [B, D, W-1], decode
 * state [B, D, W]. */
#ifndef SSMJIT_REF_CONV_H
#define SSMJIT_REF_CONV_H

#include <stddef.h>

typedef struct ref_conv_shape {
    size_t batch, seqlen, dim; /* B, L, D */
    int width;                 /* W */
    int silu;                  /* nonzero: y = silu(pre) */
} ref_conv_shape;

/* y[b,t,d] = act(bias[d] + sum_k weight[d,k] x[b, t-(W-1)+k, d]), with x at
 * times -(W-1) .. -1 from init (zeros when NULL).  bias may be NULL.
 * final_state (may be NULL) gets x at times L-(W-1) .. L-1. */
void ref_conv1d_fwd(const ref_conv_shape *s, const double *x, const double *weight,
                    const double *bias, const double *init, double *y, double *final_state);

/* Gradients of Loss = <dy, y> + <dfinal, final_state> for the forward
 * above (dfinal NULL: zero): dx, dweight, and dbias / dinit when non-NULL. */
void ref_conv1d_bwd(const ref_conv_shape *s, const double *x, const double *weight,
                    const double *bias, const double *init, const double *dy,
                    const double *dfinal, double *dx, double *dweight, double *dbias,
                    double *dinit);

/* s->seqlen decode steps: per token, state[b,d,:] shifts left by one, x
 * enters at W-1, y = act(bias + sum_k weight[d,k] state[b,d,k]).  state is
 * [B, D, W], updated in place; bias may be NULL. */
void ref_conv1d_update(const ref_conv_shape *s, const double *x, const double *weight,
                       const double *bias, double *state, double *y);

#endif
