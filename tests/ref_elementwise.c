#include "ref_elementwise.h"

#include <math.h>

double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

double ref_silu(double x) { return x * ref_sigmoid(x); }

double ref_silu_grad(double x)
{
    double s = ref_sigmoid(x);
    return s * (1.0 + x * (1.0 - s));
}

double ref_softplus(double x) { return x <= 20.0 ? log1p(exp(x)) : x; }

double ref_softplus_grad(double x) { return x <= 20.0 ? ref_sigmoid(x) : 1.0; }

static double act_fwd(ssmjit_activation act, double x)
{
    return act == SSMJIT_ACT_SILU ? ref_silu(x) : ref_softplus(x);
}

static double act_grad(ssmjit_activation act, double x)
{
    return act == SSMJIT_ACT_SILU ? ref_silu_grad(x) : ref_softplus_grad(x);
}

void ref_activation_fwd(ssmjit_activation act, const double *x, double *y, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        y[i] = act_fwd(act, x[i]);
}

void ref_activation_bwd(ssmjit_activation act, const double *x, const double *dy, double *dx,
                        size_t n)
{
    for (size_t i = 0; i < n; ++i)
        dx[i] = dy[i] * act_grad(act, x[i]);
}

void ref_gate_fwd(const double *y, const double *z, double *out, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        out[i] = y[i] * ref_silu(z[i]);
}

void ref_gate_bwd(const double *y, const double *z, const double *dout, double *dy, double *dz,
                  size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        dy[i] = dout[i] * ref_silu(z[i]);
        dz[i] = dout[i] * y[i] * ref_silu_grad(z[i]);
    }
}
