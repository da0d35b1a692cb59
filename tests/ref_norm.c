#include "ref_norm.h"

#include <math.h>

static double row_rstd(const double *h, size_t d, double eps)
{
    double ss = 0.0;
    for (size_t j = 0; j < d; ++j)
        ss += h[j] * h[j];
    return 1.0 / sqrt(ss / (double)d + eps);
}

void ref_rmsnorm_fwd(const double *x, const double *residual, const double *w, size_t rows,
                     size_t d, double eps, double *y, double *residual_out, double *rstd)
{
    double *h = y; /* h is built in y, then scaled in place */
    for (size_t r = 0; r < rows; ++r) {
        double *hr = h + r * d;
        for (size_t j = 0; j < d; ++j) {
            hr[j] = x[r * d + j] + (residual ? residual[r * d + j] : 0.0);
            if (residual_out)
                residual_out[r * d + j] = hr[j];
        }
        double s = row_rstd(hr, d, eps);
        if (rstd)
            rstd[r] = s;
        for (size_t j = 0; j < d; ++j)
            hr[j] = hr[j] * s * w[j];
    }
}

/* dh_j = rstd * (g_j - xhat_j * mean_k(g_k * xhat_k)), g = dy * w,
 * xhat = h * rstd; dw_j = sum over rows of dy_j * xhat_j. */
void ref_rmsnorm_bwd(const double *h, const double *w, size_t rows, size_t d, double eps,
                     const double *dy, const double *d_residual_out, double *dh, double *dw)
{
    if (dw)
        for (size_t j = 0; j < d; ++j)
            dw[j] = 0.0;
    for (size_t r = 0; r < rows; ++r) {
        const double *hr = h + r * d, *dyr = dy + r * d;
        double s = row_rstd(hr, d, eps);
        double c = 0.0;
        for (size_t j = 0; j < d; ++j)
            c += dyr[j] * w[j] * hr[j] * s;
        c /= (double)d;
        for (size_t j = 0; j < d; ++j) {
            double xhat = hr[j] * s;
            dh[r * d + j] = s * (dyr[j] * w[j] - xhat * c) +
                            (d_residual_out ? d_residual_out[r * d + j] : 0.0);
            if (dw)
                dw[j] += dyr[j] * xhat;
        }
    }
}
