/* The reference model's passes: forward, decode step, loss and backward,
 * built from the op references. */
#include "ref_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_conv.h"
#include "ref_norm.h"
#include "ref_scan.h"
#include "test_util.h"

static double *zeros(size_t n)
{
    double *x = tu_doubles(n);
    memset(x, 0, (n ? n : 1) * sizeof *x);
    return x;
}

static void free_all(double **x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(x[i]);
}

/* y = x @ w^T: x [rows, in], w [out, in], y [rows, out]. */
static void linear(const double *x, const double *w, size_t rows, size_t in, size_t out, double *y)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t o = 0; o < out; o++) {
            double acc = 0.0;
            for (size_t i = 0; i < in; i++)
                acc += x[r * in + i] * w[o * in + i];
            y[r * out + o] = acc;
        }
}

/* Adds the gradients of linear for dy: dx += dy @ w, dw += dy^T @ x. */
static void linear_bwd(const double *x, const double *w, size_t rows, size_t in, size_t out,
                       const double *dy, double *dx, double *dw)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t o = 0; o < out; o++) {
            const double g = dy[r * out + o];
            for (size_t i = 0; i < in; i++) {
                dx[r * in + i] += g * w[o * in + i];
                dw[o * in + i] += g * x[r * in + i];
            }
        }
}

/* Columns [c0, c0 + n) of x [rows, cols] to y [rows, n], and back. */
static void take_cols(const double *x, size_t rows, size_t cols, size_t c0, size_t n, double *y)
{
    for (size_t r = 0; r < rows; r++)
        memcpy(y + r * n, x + r * cols + c0, n * sizeof *y);
}

static void put_cols(const double *y, size_t rows, size_t n, double *x, size_t cols, size_t c0)
{
    for (size_t r = 0; r < rows; r++)
        memcpy(x + r * cols + c0, y + r * n, n * sizeof *y);
}

/* What a mixer computes over T tokens, kept for its backward. */
typedef struct mixer_acts {
    double *xs, *z;        /* the halves of in_proj's output [T, Di] */
    double *xc;            /* silu(conv(xs)) [T, Di] */
    double *dtr, *Bm, *Cm; /* the slices of x_proj's output [T, R], [T, N], [T, N] */
    double *delta;         /* dt before the bias and softplus [T, Di] */
    double *A;             /* -exp(A_log) [Di, N] */
    double *y;             /* gated scan output [T, Di] */
} mixer_acts;

static mixer_acts acts_alloc(const ref_mamba_cfg *c, size_t T)
{
    const size_t Di = c->d_inner, N = c->d_state;
    mixer_acts a = {tu_doubles(T * Di), tu_doubles(T * Di), tu_doubles(T * Di),
                    tu_doubles(T * c->dt_rank), tu_doubles(T * N), tu_doubles(T * N),
                    tu_doubles(T * Di), tu_doubles(Di * N), tu_doubles(T * Di)};
    return a;
}

static void acts_free(mixer_acts *a)
{
    double *all[] = {a->xs, a->z, a->xc, a->dtr, a->Bm, a->Cm, a->delta, a->A, a->y};
    free_all(all, sizeof all / sizeof *all);
}

static ref_conv_shape conv_shape(const ref_mamba_cfg *c, size_t B, size_t L)
{
    ref_conv_shape s = {B, L, c->d_inner, (int)c->d_conv, 1};
    return s;
}

static ref_scan_problem scan_problem(const ref_mamba_layer *w, const mixer_acts *a, size_t B,
                                     size_t L, size_t Di, size_t N)
{
    ref_scan_problem p = {B, L, Di, N, a->xc, a->delta, a->A, a->Bm, a->Cm,
                          w->D, a->z, w->dt_proj_b, NULL, 1, NULL, 0};
    return p;
}

/* The last W inputs xs [B, L, Di] of the conv as [B, Di, W], zeros before
 * the sequence. */
static void conv_window(const double *xs, size_t B, size_t L, size_t Di, size_t W, double *state)
{
    for (size_t b = 0; b < B; b++)
        for (size_t d = 0; d < Di; d++)
            for (size_t k = 0; k < W; k++) {
                const long t = (long)L - (long)W + (long)k;
                state[(b * Di + d) * W + k] = t >= 0 ? xs[(b * L + (size_t)t) * Di + d] : 0.0;
            }
}

/* The mixer of layer w on xn [T = B L, dm] into out [T, dm].  decode (L = 1)
 * continues conv_state [B, Di, W] and ssm_state [B, Di, N]; otherwise both
 * start empty and receive, when non-NULL, the states after the last token. */
static void mixer(const ref_mamba_cfg *c, const ref_mamba_layer *w, size_t B, size_t L, int decode,
                  const double *xn, mixer_acts *a, double *conv_state, double *ssm_state,
                  double *out)
{
    const size_t T = B * L, Di = c->d_inner, N = c->d_state, R = c->dt_rank, P = R + 2 * N;
    double *xz = tu_doubles(T * 2 * Di), *dbl = tu_doubles(T * P);
    linear(xn, w->in_proj, T, c->d_model, 2 * Di, xz);
    take_cols(xz, T, 2 * Di, 0, Di, a->xs);
    take_cols(xz, T, 2 * Di, Di, Di, a->z);
    const ref_conv_shape cs = conv_shape(c, B, L);
    if (decode) {
        ref_conv1d_update(&cs, a->xs, w->conv_w, w->conv_b, conv_state, a->xc);
    } else {
        ref_conv1d_fwd(&cs, a->xs, w->conv_w, w->conv_b, NULL, a->xc, NULL);
        if (conv_state)
            conv_window(a->xs, B, L, Di, c->d_conv, conv_state);
    }
    linear(a->xc, w->x_proj, T, Di, P, dbl);
    take_cols(dbl, T, P, 0, R, a->dtr);
    take_cols(dbl, T, P, R, N, a->Bm);
    take_cols(dbl, T, P, R + N, N, a->Cm);
    linear(a->dtr, w->dt_proj_w, T, R, Di, a->delta);
    for (size_t i = 0; i < Di * N; i++)
        a->A[i] = -exp(w->A_log[i]);
    if (decode) {
        ref_state_update(B, Di, N, a->xc, a->delta, a->A, a->Bm, a->Cm, w->D, a->z, w->dt_proj_b, 1,
                         ssm_state, a->y);
    } else {
        const ref_scan_problem p = scan_problem(w, a, B, L, Di, N);
        ref_scan_fwd(&p, a->y, ssm_state);
    }
    linear(a->y, w->out_proj, T, Di, c->d_model, out);
    free(xz);
    free(dbl);
}

static const double *head_weight(const ref_mamba *m)
{
    return m->cfg.tied ? m->embedding : m->lm_head;
}

/* The model on ids [B, L] into logits [B, L, V]; decode and the states as
 * for mixer.  hs (NULL or [n_layer + 1, T, dm]) receives the residual stream
 * entering each layer and the final norm. */
static void run(const ref_mamba *m, size_t B, size_t L, int decode, const int *ids,
                double *conv_state, double *ssm_state, double *logits, double *hs)
{
    const ref_mamba_cfg *c = &m->cfg;
    const size_t T = B * L, dm = c->d_model, Di = c->d_inner;
    double *h = tu_doubles(T * dm), *xn = tu_doubles(T * dm), *out = tu_doubles(T * dm);
    for (size_t i = 0; i < T; i++)
        memcpy(h + i * dm, m->embedding + (size_t)ids[i] * dm, dm * sizeof *h);
    mixer_acts a = acts_alloc(c, T);
    for (size_t l = 0; l < c->n_layer; l++) {
        if (hs)
            memcpy(hs + l * T * dm, h, T * dm * sizeof *h);
        ref_rmsnorm_fwd(h, NULL, m->layers[l].norm_w, T, dm, c->eps, xn, NULL, NULL);
        mixer(c, &m->layers[l], B, L, decode, xn, &a,
              conv_state ? conv_state + l * B * Di * c->d_conv : NULL,
              ssm_state ? ssm_state + l * B * Di * c->d_state : NULL, out);
        for (size_t i = 0; i < T * dm; i++)
            h[i] += out[i];
    }
    if (hs)
        memcpy(hs + c->n_layer * T * dm, h, T * dm * sizeof *h);
    ref_rmsnorm_fwd(h, NULL, m->norm_f, T, dm, c->eps, xn, NULL, NULL);
    linear(xn, head_weight(m), T, dm, c->vocab, logits);
    acts_free(&a);
    free(h);
    free(xn);
    free(out);
}

void ref_mamba_forward(const ref_mamba *m, size_t B, size_t L, const int *ids, double *logits,
                       double *conv_state, double *ssm_state)
{
    run(m, B, L, 0, ids, conv_state, ssm_state, logits, NULL);
}

void ref_mamba_step(const ref_mamba *m, size_t B, const int *ids, double *conv_state,
                    double *ssm_state, double *logits)
{
    run(m, B, 1, 1, ids, conv_state, ssm_state, logits, NULL);
}

/* Mean cross-entropy of logits [T, V] against targets; dlogits (NULL: not
 * wanted) receives its gradient. */
static double cross_entropy(const double *logits, const int *targets, size_t T, size_t V,
                            double *dlogits)
{
    size_t count = 0;
    for (size_t i = 0; i < T; i++)
        count += targets[i] != REF_MAMBA_IGNORE;
    double sum = 0.0;
    for (size_t i = 0; i < T; i++) {
        const double *row = logits + i * V;
        if (dlogits)
            memset(dlogits + i * V, 0, V * sizeof *dlogits);
        if (targets[i] == REF_MAMBA_IGNORE)
            continue;
        double mx = row[0], se = 0.0;
        for (size_t v = 1; v < V; v++)
            mx = fmax(mx, row[v]);
        for (size_t v = 0; v < V; v++)
            se += exp(row[v] - mx);
        const double lse = mx + log(se);
        sum += lse - row[targets[i]];
        if (dlogits) {
            for (size_t v = 0; v < V; v++)
                dlogits[i * V + v] = exp(row[v] - lse) / (double)count;
            dlogits[i * V + (size_t)targets[i]] -= 1.0 / (double)count;
        }
    }
    return sum / (double)count;
}

double ref_mamba_loss(const ref_mamba *m, size_t B, size_t L, const int *ids, const int *targets)
{
    double *logits = tu_doubles(B * L * m->cfg.vocab);
    ref_mamba_forward(m, B, L, ids, logits, NULL, NULL);
    const double loss = cross_entropy(logits, targets, B * L, m->cfg.vocab, NULL);
    free(logits);
    return loss;
}

static void zero_tensor(const char *name, double *w, size_t n, void *user)
{
    (void)name;
    (void)user;
    memset(w, 0, n * sizeof *w);
}

/* Layer l backward: h [T, dm] is its input, dh_out the gradient of its
 * output; writes dh_in and the layer's weight gradients g. */
static void layer_bwd(const ref_mamba_cfg *c, const ref_mamba_layer *w, size_t B, size_t L,
                      const double *h, const double *dh_out, double *dh_in, ref_mamba_layer *g)
{
    const size_t T = B * L, dm = c->d_model, Di = c->d_inner, N = c->d_state, R = c->dt_rank,
                 P = R + 2 * N;
    double *xn = tu_doubles(T * dm), *out = tu_doubles(T * dm);
    ref_rmsnorm_fwd(h, NULL, w->norm_w, T, dm, c->eps, xn, NULL, NULL);
    mixer_acts a = acts_alloc(c, T);
    mixer(c, w, B, L, 0, xn, &a, NULL, NULL, out);

    double *dy = zeros(T * Di), *dxc = tu_doubles(T * Di), *ddelta = tu_doubles(T * Di),
           *dA = tu_doubles(Di * N), *dB = tu_doubles(T * N), *dC = tu_doubles(T * N),
           *dz = tu_doubles(T * Di), *ddtr = zeros(T * R), *ddbl = tu_doubles(T * P),
           *dxs = tu_doubles(T * Di), *dxz = tu_doubles(T * 2 * Di), *dxn = zeros(T * dm);
    linear_bwd(a.y, w->out_proj, T, Di, dm, dh_out, dy, g->out_proj);
    const ref_scan_problem p = scan_problem(w, &a, B, L, Di, N);
    const ref_scan_grads sg = {dxc, ddelta, dA, dB, dC, g->D, dz, g->dt_proj_b, NULL};
    ref_scan_bwd(&p, dy, NULL, &sg);
    /* dA/dA_log = -exp(A_log) = A */
    for (size_t i = 0; i < Di * N; i++)
        g->A_log[i] = dA[i] * a.A[i];
    linear_bwd(a.dtr, w->dt_proj_w, T, R, Di, ddelta, ddtr, g->dt_proj_w);
    put_cols(ddtr, T, R, ddbl, P, 0);
    put_cols(dB, T, N, ddbl, P, R);
    put_cols(dC, T, N, ddbl, P, R + N);
    linear_bwd(a.xc, w->x_proj, T, Di, P, ddbl, dxc, g->x_proj);
    const ref_conv_shape cs = conv_shape(c, B, L);
    ref_conv1d_bwd(&cs, a.xs, w->conv_w, w->conv_b, NULL, dxc, NULL, dxs, g->conv_w, g->conv_b,
                   NULL);
    put_cols(dxs, T, Di, dxz, 2 * Di, 0);
    put_cols(dz, T, Di, dxz, 2 * Di, Di);
    linear_bwd(xn, w->in_proj, T, dm, 2 * Di, dxz, dxn, g->in_proj);
    ref_rmsnorm_bwd(h, w->norm_w, T, dm, c->eps, dxn, dh_out, dh_in, g->norm_w);

    double *all[] = {xn, out, dy, dxc, ddelta, dA, dB, dC, dz, ddtr, ddbl, dxs, dxz, dxn};
    free_all(all, sizeof all / sizeof *all);
    acts_free(&a);
}

/* The backward for dlogits of the forward whose residual streams are hs
 * (see run). */
static void backward(const ref_mamba *m, size_t B, size_t L, const int *ids, const double *hs,
                     const double *dlogits, ref_mamba *g)
{
    const ref_mamba_cfg *c = &m->cfg;
    const size_t T = B * L, dm = c->d_model;
    ref_mamba_foreach(g, zero_tensor, NULL);
    const double *h_last = hs + c->n_layer * T * dm;
    double *hf = tu_doubles(T * dm), *dhf = zeros(T * dm), *dh = tu_doubles(T * dm),
           *dh_next = tu_doubles(T * dm);
    ref_rmsnorm_fwd(h_last, NULL, m->norm_f, T, dm, c->eps, hf, NULL, NULL);
    linear_bwd(hf, head_weight(m), T, dm, c->vocab, dlogits, dhf,
               c->tied ? g->embedding : g->lm_head);
    ref_rmsnorm_bwd(h_last, m->norm_f, T, dm, c->eps, dhf, NULL, dh, g->norm_f);
    for (size_t l = c->n_layer; l-- > 0;) {
        layer_bwd(c, &m->layers[l], B, L, hs + l * T * dm, dh, dh_next, &g->layers[l]);
        double *t = dh;
        dh = dh_next;
        dh_next = t;
    }
    for (size_t i = 0; i < T; i++)
        for (size_t j = 0; j < dm; j++)
            g->embedding[(size_t)ids[i] * dm + j] += dh[i * dm + j];
    free(hf);
    free(dhf);
    free(dh);
    free(dh_next);
}

double ref_mamba_backward(const ref_mamba *m, size_t B, size_t L, const int *ids,
                          const int *targets, ref_mamba *grads)
{
    const size_t T = B * L, V = m->cfg.vocab;
    double *hs = tu_doubles((m->cfg.n_layer + 1) * T * m->cfg.d_model), *logits = tu_doubles(T * V),
           *dlogits = tu_doubles(T * V);
    run(m, B, L, 0, ids, NULL, NULL, logits, hs);
    const double loss = cross_entropy(logits, targets, T, V, dlogits);
    backward(m, B, L, ids, hs, dlogits, grads);
    free(hs);
    free(logits);
    free(dlogits);
    return loss;
}

void ref_mamba_backward_dlogits(const ref_mamba *m, size_t B, size_t L, const int *ids,
                                const double *dlogits, ref_mamba *grads)
{
    const size_t T = B * L;
    double *hs = tu_doubles((m->cfg.n_layer + 1) * T * m->cfg.d_model),
           *logits = tu_doubles(T * m->cfg.vocab);
    run(m, B, L, 0, ids, NULL, NULL, logits, hs);
    backward(m, B, L, ids, hs, dlogits, grads);
    free(hs);
    free(logits);
}
