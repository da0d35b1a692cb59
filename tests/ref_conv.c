#include "ref_conv.h"

#include <math.h>
#include <stdlib.h>

#include "test_util.h"

static double silu(double v) { return v / (1.0 + exp(-v)); }

static double silu_grad(double v)
{
    double sg = 1.0 / (1.0 + exp(-v));
    return sg * (1.0 + v * (1.0 - sg));
}

/* Index of (b, t, d) in [B, L, D] and of (b, d, j) in [B, D, n]. */
static size_t act_at(const ref_conv_shape *s, size_t b, size_t t, size_t d)
{
    return (b * s->seqlen + t) * s->dim + d;
}

static size_t state_at(const ref_conv_shape *s, size_t b, size_t d, size_t j, size_t n)
{
    return (b * s->dim + d) * n + j;
}

/* The input at time t in -(W-1) .. L-1. */
static double input(const ref_conv_shape *s, const double *x, const double *init, size_t b,
                    long t, size_t d)
{
    if (t >= 0)
        return x[act_at(s, b, (size_t)t, d)];
    return init ? init[state_at(s, b, d, (size_t)(t + s->width - 1), (size_t)s->width - 1)] : 0.0;
}

static double pre_act(const ref_conv_shape *s, const double *x, const double *weight,
                      const double *bias, const double *init, size_t b, long t, size_t d)
{
    double acc = bias ? bias[d] : 0.0;
    for (int k = 0; k < s->width; k++)
        acc += weight[d * (size_t)s->width + (size_t)k] * input(s, x, init, b, t - (s->width - 1) + k, d);
    return acc;
}

void ref_conv1d_fwd(const ref_conv_shape *s, const double *x, const double *weight,
                    const double *bias, const double *init, double *y, double *final_state)
{
    const long L = (long)s->seqlen, W = s->width;
    for (size_t b = 0; b < s->batch; b++)
        for (size_t d = 0; d < s->dim; d++) {
            for (long t = 0; t < L; t++) {
                double p = pre_act(s, x, weight, bias, init, b, t, d);
                y[act_at(s, b, (size_t)t, d)] = s->silu ? silu(p) : p;
            }
            if (final_state)
                for (long j = 0; j < W - 1; j++)
                    final_state[state_at(s, b, d, (size_t)j, (size_t)W - 1)] =
                        input(s, x, init, b, L - (W - 1) + j, d);
        }
}

void ref_conv1d_bwd(const ref_conv_shape *s, const double *x, const double *weight,
                    const double *bias, const double *init, const double *dy,
                    const double *dfinal, double *dx, double *dweight, double *dbias,
                    double *dinit)
{
    const long L = (long)s->seqlen, W = s->width;
    for (size_t d = 0; d < s->dim; d++) {
        for (long k = 0; k < W; k++)
            dweight[d * (size_t)W + (size_t)k] = 0.0;
        if (dbias)
            dbias[d] = 0.0;
    }
    /* g[t] = dLoss/dpre[t] of one (b, d), kept for the input gradients. */
    double *g = tu_doubles(s->seqlen + 1);
    for (size_t b = 0; b < s->batch; b++)
        for (size_t d = 0; d < s->dim; d++) {
            for (long t = 0; t < L; t++) {
                g[t] = dy[act_at(s, b, (size_t)t, d)];
                if (s->silu)
                    g[t] *= silu_grad(pre_act(s, x, weight, bias, init, b, t, d));
                for (long k = 0; k < W; k++)
                    dweight[d * (size_t)W + (size_t)k] += g[t] * input(s, x, init, b, t - (W - 1) + k, d);
                if (dbias)
                    dbias[d] += g[t];
            }
            /* Input at time u feeds pre[u + (W-1) - k] through weight[d,k],
             * and final_state when u >= L-(W-1). */
            for (long u = -(W - 1); u < L; u++) {
                double acc = 0.0;
                for (long k = 0; k < W; k++) {
                    long t = u + (W - 1) - k;
                    if (t >= 0 && t < L)
                        acc += weight[d * (size_t)W + (size_t)k] * g[t];
                }
                if (dfinal && u >= L - (W - 1))
                    acc += dfinal[state_at(s, b, d, (size_t)(u - L + W - 1), (size_t)W - 1)];
                if (u >= 0)
                    dx[act_at(s, b, (size_t)u, d)] = acc;
                else if (dinit)
                    dinit[state_at(s, b, d, (size_t)(u + W - 1), (size_t)W - 1)] = acc;
            }
        }
    free(g);
}

void ref_conv1d_update(const ref_conv_shape *s, const double *x, const double *weight,
                       const double *bias, double *state, double *y)
{
    const size_t W = (size_t)s->width;
    for (size_t b = 0; b < s->batch; b++)
        for (size_t d = 0; d < s->dim; d++) {
            double *st = state + state_at(s, b, d, 0, W);
            for (size_t t = 0; t < s->seqlen; t++) {
                for (size_t k = 0; k + 1 < W; k++)
                    st[k] = st[k + 1];
                st[W - 1] = x[act_at(s, b, t, d)];
                double acc = bias ? bias[d] : 0.0;
                for (size_t k = 0; k < W; k++)
                    acc += weight[d * W + k] * st[k];
                y[act_at(s, b, t, d)] = s->silu ? silu(acc) : acc;
            }
        }
}
