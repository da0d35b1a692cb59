/* Double-precision reference of RMSNorm (see ssmjit_rmsnorm_fwd/_bwd) on
 * contiguous [rows, d] arrays. */
#ifndef SSMJIT_REF_NORM_H
#define SSMJIT_REF_NORM_H

#include <stddef.h>

/* h = x (+ residual when non-NULL); rstd = 1 / sqrt(mean(h^2) + eps) per row;
 * y = h * rstd * w.  residual_out (h) and rstd may be NULL. */
void ref_rmsnorm_fwd(const double *x, const double *residual, const double *w, size_t rows,
                     size_t d, double eps, double *y, double *residual_out, double *rstd);

/* Gradients of L = <dy, y(h)> + <d_residual_out, h> for y as above with
 * input h: dh [rows, d] and dw [d] (dw may be NULL).  d_residual_out may be
 * NULL (zero).  rstd is recomputed from h. */
void ref_rmsnorm_bwd(const double *h, const double *w, size_t rows, size_t d, double eps,
                     const double *dy, const double *d_residual_out, double *dh, double *dw);

#endif
