/* The causal conv1d reference: gradients of x, weight, bias and initial
 * state against central finite differences of the forward (with and without
 * SiLU, bias, initial state and a gradient into the final state), decode
 * steps chained over a sequence against the forward, and a prefill split in
 * two segments against the whole. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "ref_conv.h"
#include "test_util.h"

#define FD_STEP 1e-5
#define FD_TOL 1e-6

/* One layer's inputs and the upstream gradients that define the scalar
 * Loss = <dy, y> + <dfinal, final_state>. */
typedef struct problem {
    ref_conv_shape s;
    double *x, *w, *bias, *init; /* bias, init NULL: absent */
    double *dy, *dfinal;         /* dfinal NULL: no gradient into the final state */
    double *y, *fin;             /* scratch */
} problem;

static size_t n_act(const ref_conv_shape *s) { return s->batch * s->seqlen * s->dim; }

static size_t n_state(const ref_conv_shape *s) { return s->batch * s->dim * (size_t)(s->width - 1); }

static double *normal_array(size_t n)
{
    double *v = tu_doubles(n + 1);
    for (size_t i = 0; i < n; i++)
        v[i] = tu_normal();
    return v;
}

static problem make_problem(ref_conv_shape s, int bias, int init, int dfinal)
{
    problem p = {s, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    p.x = normal_array(n_act(&s));
    p.w = normal_array(s.dim * (size_t)s.width);
    p.bias = bias ? normal_array(s.dim) : NULL;
    p.init = init ? normal_array(n_state(&s)) : NULL;
    p.dy = normal_array(n_act(&s));
    p.dfinal = dfinal ? normal_array(n_state(&s)) : NULL;
    p.y = tu_doubles(n_act(&s) + 1);
    p.fin = tu_doubles(n_state(&s) + 1);
    return p;
}

static void free_problem(problem *p)
{
    double *all[] = {p->x, p->w, p->bias, p->init, p->dy, p->dfinal, p->y, p->fin};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
}

static double loss(problem *p)
{
    ref_conv1d_fwd(&p->s, p->x, p->w, p->bias, p->init, p->y, p->fin);
    double l = 0.0;
    for (size_t i = 0; i < n_act(&p->s); i++)
        l += p->dy[i] * p->y[i];
    if (p->dfinal)
        for (size_t i = 0; i < n_state(&p->s); i++)
            l += p->dfinal[i] * p->fin[i];
    return l;
}

/* Every element of v (n of them, part of p) against grad. */
static void check_fd(problem *p, double *v, const double *grad, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        double keep = v[i];
        v[i] = keep + FD_STEP;
        double up = loss(p);
        v[i] = keep - FD_STEP;
        double down = loss(p);
        v[i] = keep;
        double fd = (up - down) / (2 * FD_STEP);
        if (fabs(fd - grad[i]) > FD_TOL * (1.0 + fabs(fd)))
            fail_msg("d%s[%zu]: analytic %.12g, finite difference %.12g (B=%zu L=%zu D=%zu W=%d "
                     "silu=%d)",
                     name, i, grad[i], fd, p->s.batch, p->s.seqlen, p->s.dim, p->s.width, p->s.silu);
    }
}

static void check_problem(ref_conv_shape s, int bias, int init, int dfinal)
{
    problem p = make_problem(s, bias, init, dfinal);
    double *dx = tu_doubles(n_act(&s) + 1), *dw = tu_doubles(s.dim * (size_t)s.width);
    double *db = tu_doubles(s.dim), *dinit = tu_doubles(n_state(&s) + 1);
    ref_conv1d_bwd(&s, p.x, p.w, p.bias, p.init, p.dy, p.dfinal, dx, dw, db, dinit);

    check_fd(&p, p.x, dx, n_act(&s), "x");
    check_fd(&p, p.w, dw, s.dim * (size_t)s.width, "weight");
    /* The gradients of an absent bias or initial state are still defined:
     * check them through an explicit zero input. */
    if (!p.bias)
        p.bias = calloc(s.dim, sizeof(double));
    if (!p.init)
        p.init = calloc(n_state(&s) + 1, sizeof(double));
    check_fd(&p, p.bias, db, s.dim, "bias");
    check_fd(&p, p.init, dinit, n_state(&s), "initial_state");

    free(dx);
    free(dw);
    free(db);
    free(dinit);
    free_problem(&p);
}

static void test_bwd_matches_finite_differences(void **state)
{
    (void)state;
    tu_seed();
    static const int widths[] = {2, 3, 4, 5, 8};
    static const size_t lens[] = {1, 2, 5, 11};
    for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++)
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
            for (int flags = 0; flags < 16; flags++) {
                ref_conv_shape s = {2, lens[li], 3, widths[wi], flags & 1};
                check_problem(s, flags & 2, flags & 4, flags & 8);
            }
}

/* The zero-length sequence: final_state is the initial state, and its
 * gradient flows straight back. */
static void test_bwd_empty_sequence(void **state)
{
    (void)state;
    tu_seed();
    ref_conv_shape s = {2, 0, 3, 4, 1};
    check_problem(s, 1, 1, 1);
}

/* Decode steps from a state holding the initial state (entry 0 arbitrary:
 * it is shifted out before use) reproduce the forward, one token per call
 * or all in one. */
static void test_update_chain_matches_fwd(void **state)
{
    (void)state;
    tu_seed();
    for (int width = 2; width <= 8; width++)
        for (int flags = 0; flags < 8; flags++) {
            ref_conv_shape s = {2, 9, 3, width, flags & 1};
            problem p = make_problem(s, flags & 2, flags & 4, 0);
            ref_conv1d_fwd(&s, p.x, p.w, p.bias, p.init, p.y, p.fin);

            const size_t W = (size_t)width, nst = s.batch * s.dim * W;
            double *st = tu_doubles(nst), *st_all = tu_doubles(nst);
            for (size_t bd = 0; bd < s.batch * s.dim; bd++) {
                st[bd * W] = tu_normal();
                for (size_t j = 0; j + 1 < W; j++)
                    st[bd * W + 1 + j] = p.init ? p.init[bd * (W - 1) + j] : 0.0;
            }
            for (size_t i = 0; i < nst; i++)
                st_all[i] = st[i];

            ref_conv_shape one = s;
            one.batch = 1;
            one.seqlen = 1;
            one.dim = 1;
            double *y_all = tu_doubles(n_act(&s));
            for (size_t b = 0; b < s.batch; b++)
                for (size_t d = 0; d < s.dim; d++)
                    for (size_t t = 0; t < s.seqlen; t++) {
                        size_t at = (b * s.seqlen + t) * s.dim + d;
                        double yt, bias = p.bias ? p.bias[d] : 0.0;
                        ref_conv1d_update(&one, &p.x[at], &p.w[d * W], p.bias ? &bias : NULL,
                                          &st[(b * s.dim + d) * W], &yt);
                        assert_true(fabs(yt - p.y[at]) <= 1e-12 * (1.0 + fabs(p.y[at])));
                    }
            ref_conv1d_update(&s, p.x, p.w, p.bias, st_all, y_all);
            for (size_t i = 0; i < n_act(&s); i++)
                assert_true(fabs(y_all[i] - p.y[i]) <= 1e-12 * (1.0 + fabs(p.y[i])));
            /* The state ends as the last W inputs: its tail is final_state. */
            for (size_t bd = 0; bd < s.batch * s.dim; bd++)
                for (size_t j = 0; j + 1 < W; j++) {
                    assert_true(st[bd * W + 1 + j] == p.fin[bd * (W - 1) + j]);
                    assert_true(st_all[bd * W + 1 + j] == p.fin[bd * (W - 1) + j]);
                }
            free(st);
            free(st_all);
            free(y_all);
            free_problem(&p);
        }
}

/* A prefill in two segments, the second starting from the first's final
 * state, equals the prefill in one (also when a segment is shorter than
 * the state). */
static void test_segments_chain(void **state)
{
    (void)state;
    tu_seed();
    static const size_t firsts[] = {0, 1, 2, 6};
    for (int width = 2; width <= 8; width += 3)
        for (size_t fi = 0; fi < sizeof firsts / sizeof *firsts; fi++) {
            ref_conv_shape s = {2, 8, 3, width, 1};
            problem p = make_problem(s, 1, 1, 0);
            ref_conv1d_fwd(&s, p.x, p.w, p.bias, p.init, p.y, p.fin);

            ref_conv_shape s1 = s, s2 = s;
            s1.seqlen = firsts[fi];
            s2.seqlen = s.seqlen - firsts[fi];
            double *x1 = tu_doubles(n_act(&s1) + 1), *x2 = tu_doubles(n_act(&s2) + 1);
            for (size_t b = 0; b < s.batch; b++)
                for (size_t t = 0; t < s.seqlen; t++)
                    for (size_t d = 0; d < s.dim; d++) {
                        double v = p.x[(b * s.seqlen + t) * s.dim + d];
                        if (t < s1.seqlen)
                            x1[(b * s1.seqlen + t) * s.dim + d] = v;
                        else
                            x2[(b * s2.seqlen + t - s1.seqlen) * s.dim + d] = v;
                    }
            double *y1 = tu_doubles(n_act(&s1) + 1), *y2 = tu_doubles(n_act(&s2) + 1);
            double *mid = tu_doubles(n_state(&s)), *fin = tu_doubles(n_state(&s));
            ref_conv1d_fwd(&s1, x1, p.w, p.bias, p.init, y1, mid);
            ref_conv1d_fwd(&s2, x2, p.w, p.bias, mid, y2, fin);
            for (size_t b = 0; b < s.batch; b++)
                for (size_t t = 0; t < s.seqlen; t++)
                    for (size_t d = 0; d < s.dim; d++) {
                        double got = t < s1.seqlen ? y1[(b * s1.seqlen + t) * s.dim + d]
                                                   : y2[(b * s2.seqlen + t - s1.seqlen) * s.dim + d];
                        assert_true(got == p.y[(b * s.seqlen + t) * s.dim + d]);
                    }
            for (size_t i = 0; i < n_state(&s); i++)
                assert_true(fin[i] == p.fin[i]);
            double *all[] = {x1, x2, y1, y2, mid, fin};
            for (size_t i = 0; i < sizeof all / sizeof *all; i++)
                free(all[i]);
            free_problem(&p);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bwd_matches_finite_differences),
        cmocka_unit_test(test_bwd_empty_sequence),
        cmocka_unit_test(test_update_chain_matches_fwd),
        cmocka_unit_test(test_segments_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
