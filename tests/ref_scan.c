#include "ref_scan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_elementwise.h"
#include "test_util.h"

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

static double silu(double x) { return x * sigmoid(x); }

static double silu_grad(double x)
{
    double s = sigmoid(x);
    return s * (1.0 + x * (1.0 - s));
}

size_t ref_scan_segments(const ref_scan_problem *p) { return p->cu_seqlens ? p->nseq : p->B; }

/* Batch row and token range [t0, t1) of segment s. */
static void segment(const ref_scan_problem *p, size_t s, size_t *b, size_t *t0, size_t *t1)
{
    if (p->cu_seqlens) {
        *b = 0;
        *t0 = (size_t)p->cu_seqlens[s];
        *t1 = (size_t)p->cu_seqlens[s + 1];
    } else {
        *b = s;
        *t0 = 0;
        *t1 = p->L;
    }
}

/* delta + bias, the argument of softplus. */
static double dt_arg(const ref_scan_problem *p, size_t i, size_t d)
{
    return p->delta[i] + (p->delta_bias ? p->delta_bias[d] : 0.0);
}

static double dt_of(const ref_scan_problem *p, size_t i, size_t d)
{
    double x = dt_arg(p, i, d);
    return p->softplus ? ref_softplus(x) : x;
}

static double init_at(const ref_scan_problem *p, size_t s, size_t d, size_t n)
{
    return p->init ? p->init[(s * p->D + d) * p->N + n] : 0.0;
}

/* States of one (segment, channel): h[(t - t0) * N + n] after token t. */
static void states(const ref_scan_problem *p, size_t s, size_t d, double *h)
{
    size_t b, t0, t1, N = p->N;
    segment(p, s, &b, &t0, &t1);
    for (size_t n = 0; n < N; n++) {
        double hn = init_at(p, s, d, n);
        for (size_t t = t0; t < t1; t++) {
            size_t i = (b * p->L + t) * p->D + d, r = (b * p->L + t) * N + n;
            double dt = dt_of(p, i, d);
            hn = exp(dt * p->A[d * N + n]) * hn + dt * p->Bm[r] * p->u[i];
            h[(t - t0) * N + n] = hn;
        }
    }
}

/* y before the gate. */
static double pre_gate(const ref_scan_problem *p, size_t b, size_t t, size_t d, const double *h_t)
{
    size_t i = (b * p->L + t) * p->D + d;
    double y = p->Dv ? p->Dv[d] * p->u[i] : 0.0;
    for (size_t n = 0; n < p->N; n++)
        y += p->Cm[(b * p->L + t) * p->N + n] * h_t[n];
    return y;
}

void ref_scan_fwd(const ref_scan_problem *p, double *y, double *final_state)
{
    const size_t N = p->N, S = ref_scan_segments(p);
    double *h = malloc((p->L + 1) * N * sizeof *h);
    for (size_t s = 0; s < S; s++) {
        size_t b, t0, t1;
        segment(p, s, &b, &t0, &t1);
        for (size_t d = 0; d < p->D; d++) {
            states(p, s, d, h);
            for (size_t t = t0; t < t1; t++) {
                size_t i = (b * p->L + t) * p->D + d;
                double v = pre_gate(p, b, t, d, h + (t - t0) * N);
                y[i] = p->z ? v * silu(p->z[i]) : v;
            }
            if (final_state)
                for (size_t n = 0; n < N; n++)
                    final_state[(s * p->D + d) * N + n] =
                        t1 > t0 ? h[(t1 - 1 - t0) * N + n] : init_at(p, s, d, n);
        }
    }
    free(h);
}

static void zero(double *x, size_t n)
{
    if (x)
        memset(x, 0, n * sizeof *x);
}

void ref_scan_bwd(const ref_scan_problem *p, const double *dy, const double *dfinal,
                  const ref_scan_grads *g)
{
    const size_t B = p->B, L = p->L, D = p->D, N = p->N, S = ref_scan_segments(p);
    zero(g->du, B * L * D);
    zero(g->ddelta, B * L * D);
    zero(g->dz, B * L * D);
    zero(g->dA, D * N);
    zero(g->dB, B * L * N);
    zero(g->dC, B * L * N);
    zero(g->dD, D);
    zero(g->ddelta_bias, D);
    zero(g->dinit, S * D * N);
    double *h = malloc((L + 1) * N * sizeof *h), *adj = malloc(N * sizeof *adj);
    for (size_t s = 0; s < S; s++) {
        size_t b, t0, t1;
        segment(p, s, &b, &t0, &t1);
        for (size_t d = 0; d < D; d++) {
            states(p, s, d, h);
            for (size_t n = 0; n < N; n++)
                adj[n] = dfinal ? dfinal[(s * D + d) * N + n] : 0.0;
            for (size_t t = t1; t-- > t0;) {
                const size_t i = (b * L + t) * D + d, r0 = (b * L + t) * N;
                const double u = p->u[i], x = dt_arg(p, i, d), dt = dt_of(p, i, d);
                double dyp = dy[i];
                if (p->z) {
                    double y = pre_gate(p, b, t, d, h + (t - t0) * N);
                    if (g->dz)
                        g->dz[i] = dy[i] * y * silu_grad(p->z[i]);
                    dyp = dy[i] * silu(p->z[i]);
                }
                double sum_gB = 0.0, sum_gAah = 0.0;
                for (size_t n = 0; n < N; n++) {
                    const double An = p->A[d * N + n], a = exp(dt * An);
                    const double hp = t > t0 ? h[(t - 1 - t0) * N + n] : init_at(p, s, d, n);
                    adj[n] += p->Cm[r0 + n] * dyp; /* now dL/dh_t */
                    g->dC[r0 + n] += dyp * h[(t - t0) * N + n];
                    g->dB[r0 + n] += adj[n] * dt * u;
                    sum_gB += adj[n] * p->Bm[r0 + n];
                    sum_gAah += adj[n] * An * a * hp;
                    g->dA[d * N + n] += adj[n] * a * hp * dt;
                    adj[n] *= a; /* dL/dh_{t-1} through h_t */
                }
                const double ddt = u * sum_gB + sum_gAah;
                const double dx = p->softplus ? ddt * ref_softplus_grad(x) : ddt;
                g->du[i] = (p->Dv ? p->Dv[d] * dyp : 0.0) + dt * sum_gB;
                g->ddelta[i] = dx;
                if (g->ddelta_bias)
                    g->ddelta_bias[d] += dx;
                if (g->dD)
                    g->dD[d] += dyp * u;
            }
            if (g->dinit)
                for (size_t n = 0; n < N; n++)
                    g->dinit[(s * D + d) * N + n] = adj[n];
        }
    }
    free(h);
    free(adj);
}

void ref_state_update(size_t B, size_t D, size_t N, const double *x, const double *dt,
                      const double *A, const double *Bm, const double *Cm, const double *Dv,
                      const double *z, const double *dt_bias, int softplus, double *state,
                      double *out)
{
    for (size_t b = 0; b < B; b++)
        for (size_t d = 0; d < D; d++) {
            const size_t i = b * D + d;
            double v = dt[i] + (dt_bias ? dt_bias[d] : 0.0);
            if (softplus)
                v = ref_softplus(v);
            double y = Dv ? Dv[d] * x[i] : 0.0;
            for (size_t n = 0; n < N; n++) {
                double *h = &state[i * N + n];
                *h = exp(v * A[d * N + n]) * *h + v * Bm[b * N + n] * x[i];
                y += Cm[b * N + n] * *h;
            }
            out[i] = z ? y * silu(z[i]) : y;
        }
}

static double *normal_array(size_t n, double scale, double shift)
{
    double *v = tu_doubles(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        v[i] = shift + scale * tu_normal();
    return v;
}

static double *uniform_array(size_t n, double lo, double hi)
{
    double *v = tu_doubles(n ? n : 1);
    tu_fill_uniform(v, n, lo, hi);
    return v;
}

ref_scan_inputs ref_scan_random(const ref_scan_options *o)
{
    ref_scan_inputs in;
    memset(&in, 0, sizeof in);
    in.o = *o;
    in.S = o->cu_seqlens ? o->nseq : o->B;
    const size_t BLD = o->B * o->L * o->D, BLN = o->B * o->L * o->N, SDN = in.S * o->D * o->N;
    in.u = normal_array(BLD, 1.0, 0.0);
    /* softplus of values around -1, or plain positive steps */
    in.delta = o->softplus ? normal_array(BLD, 0.7, -1.0) : uniform_array(BLD, 0.05, 0.8);
    in.A = uniform_array(o->D * o->N, -2.0, -0.2);
    in.Bm = normal_array(BLN, 1.0, 0.0);
    in.Cm = normal_array(BLN, 1.0, 0.0);
    in.Dv = o->has_D ? normal_array(o->D, 1.0, 0.0) : NULL;
    in.z = o->has_z ? normal_array(BLD, 1.0, 0.0) : NULL;
    in.bias = o->has_bias ? uniform_array(o->D, 0.0, 0.2) : NULL;
    in.init = o->has_init ? normal_array(SDN, 1.0, 0.0) : NULL;
    in.dy = normal_array(BLD, 1.0, 0.0);
    in.dfinal = o->has_dfinal ? normal_array(SDN, 1.0, 0.0) : NULL;
    return in;
}

void ref_scan_inputs_free(ref_scan_inputs *in)
{
    double *all[] = {in->u, in->delta, in->A, in->Bm, in->Cm, in->Dv, in->z, in->bias, in->init, in->dy, in->dfinal};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
    memset(in, 0, sizeof *in);
}

ref_scan_problem ref_scan_problem_of(const ref_scan_inputs *in)
{
    ref_scan_problem p = {in->o.B, in->o.L, in->o.D, in->o.N, in->u, in->delta, in->A, in->Bm, in->Cm,
                          in->Dv, in->z, in->bias, in->init, in->o.softplus, in->o.cu_seqlens, in->o.nseq};
    return p;
}
