/* Double-precision reference of the elementwise ops (ssmjit_activation_*,
 * ssmjit_gate_*) on contiguous arrays of n values. */
#ifndef SSMJIT_REF_ELEMENTWISE_H
#define SSMJIT_REF_ELEMENTWISE_H

#include <stddef.h>

#include "ssmjit.h"

double ref_sigmoid(double x);
double ref_silu(double x);
double ref_silu_grad(double x);
/* x <= 20 ? log1p(exp(x)) : x, the threshold of the reference Mamba kernels. */
double ref_softplus(double x);
double ref_softplus_grad(double x);

/* y = act(x). */
void ref_activation_fwd(ssmjit_activation act, const double *x, double *y, size_t n);
/* dx = dy * act'(x). */
void ref_activation_bwd(ssmjit_activation act, const double *x, const double *dy, double *dx,
                        size_t n);
/* out = y * silu(z). */
void ref_gate_fwd(const double *y, const double *z, double *out, size_t n);
/* dy = dout * silu(z); dz = dout * y * silu'(z). */
void ref_gate_bwd(const double *y, const double *z, const double *dout, double *dy, double *dz,
                  size_t n);

#endif
