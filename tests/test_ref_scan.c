/* The double reference of the selective scan against itself: every
 * backward gradient against central finite differences of the forward (all
 * optional inputs, softplus, final-state gradients, packed sequences with
 * an empty one), a chain of decode steps against the scan, and packed
 * sequences against separate runs. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_scan.h"
#include "test_util.h"

/* L = <dy, y> + <dfinal, final_state>. */
static double loss(const ref_scan_inputs *s)
{
    ref_scan_problem p = ref_scan_problem_of(s);
    const size_t BLD = s->o.B * s->o.L * s->o.D, SDN = s->S * s->o.D * s->o.N;
    double *y = tu_doubles(BLD ? BLD : 1), *fin = tu_doubles(SDN ? SDN : 1);
    ref_scan_fwd(&p, y, fin);
    double f = 0.0;
    for (size_t i = 0; i < BLD; i++)
        f += s->dy[i] * y[i];
    if (s->dfinal)
        for (size_t i = 0; i < SDN; i++)
            f += s->dfinal[i] * fin[i];
    free(y);
    free(fin);
    return f;
}

/* Compares grad[0..n) with central differences of the loss in x[0..n). */
static void check_fd(ref_scan_inputs *s, double *x, size_t n, const double *grad, const char *what)
{
    if (!x || n == 0)
        return;
    double *fd = tu_doubles(n);
    for (size_t i = 0; i < n; i++) {
        const double x0 = x[i], h = 1e-6 * (1.0 + fabs(x0));
        x[i] = x0 + h;
        double fp = loss(s);
        x[i] = x0 - h;
        double fm = loss(s);
        x[i] = x0;
        fd[i] = (fp - fm) / (2.0 * h);
    }
    double err = tu_rel_err(grad, fd, n);
    if (!(err <= 1e-6))
        fail_msg("d%s: relative error %g against finite differences", what, err);
    free(fd);
}

static void check_case(const ref_scan_options *c)
{
    ref_scan_inputs s = ref_scan_random(c);
    const size_t BLD = c->B * c->L * c->D, BLN = c->B * c->L * c->N, SDN = s.S * c->D * c->N;
    ref_scan_grads g = {tu_doubles(BLD + 1), tu_doubles(BLD + 1), tu_doubles(c->D * c->N + 1),
                        tu_doubles(BLN + 1), tu_doubles(BLN + 1), tu_doubles(c->D + 1),
                        tu_doubles(BLD + 1), tu_doubles(c->D + 1), tu_doubles(SDN + 1)};
    ref_scan_problem p = ref_scan_problem_of(&s);
    ref_scan_bwd(&p, s.dy, s.dfinal, &g);
    check_fd(&s, s.u, BLD, g.du, "u");
    check_fd(&s, s.delta, BLD, g.ddelta, "delta");
    check_fd(&s, s.A, c->D * c->N, g.dA, "A");
    check_fd(&s, s.Bm, BLN, g.dB, "B");
    check_fd(&s, s.Cm, BLN, g.dC, "C");
    check_fd(&s, s.Dv, c->D, g.dD, "D");
    check_fd(&s, s.z, BLD, g.dz, "z");
    check_fd(&s, s.bias, c->D, g.ddelta_bias, "delta_bias");
    check_fd(&s, s.init, SDN, g.dinit, "initial_state");
    double *all[] = {g.du, g.ddelta, g.dA, g.dB, g.dC, g.dD, g.dz, g.ddelta_bias, g.dinit};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
    ref_scan_inputs_free(&s);
}

static void test_gradients_all_options(void **state)
{
    (void)state;
    const ref_scan_options cases[] = {
        {2, 9, 3, 4, 1, 1, 1, 1, 1, 1, NULL, 0},
        {1, 17, 2, 5, 1, 1, 1, 1, 1, 1, NULL, 0},
        {3, 1, 2, 2, 1, 1, 1, 1, 1, 1, NULL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_case(&cases[i]);
}

static void test_gradients_each_option(void **state)
{
    (void)state;
    /* Plain, then each option alone (softplus with and without bias). */
    for (int opt = 0; opt <= 6; opt++) {
        ref_scan_options c = {2, 6, 3, 3, opt == 1, opt == 2, opt == 3 || opt == 6, opt == 4 || opt == 6,
                       opt == 5, opt == 5, NULL, 0};
        check_case(&c);
    }
}

static void test_gradients_packed(void **state)
{
    (void)state;
    static const int cu[] = {0, 4, 4, 9, 10, 13}; /* an empty and a one-token sequence */
    ref_scan_options c = {1, 13, 3, 4, 1, 1, 1, 1, 1, 1, cu, 5};
    check_case(&c);
    c.has_init = 0;
    c.has_dfinal = 0;
    check_case(&c);
}

/* Packed sequences give what separate runs give, forward and backward. */
static void test_packed_equals_separate(void **state)
{
    (void)state;
    static const int cu[] = {0, 5, 5, 12, 13, 20};
    const size_t nseq = 5, D = 3, N = 4;
    ref_scan_options c = {1, 20, D, N, 1, 1, 1, 1, 1, 1, cu, nseq};
    ref_scan_inputs s = ref_scan_random(&c);
    ref_scan_problem p = ref_scan_problem_of(&s);
    double *y = tu_doubles(20 * D), *fin = tu_doubles(nseq * D * N);
    ref_scan_fwd(&p, y, fin);
    ref_scan_grads g = {tu_doubles(20 * D), tu_doubles(20 * D), tu_doubles(D * N), tu_doubles(20 * N),
                        tu_doubles(20 * N), tu_doubles(D), tu_doubles(20 * D), tu_doubles(D),
                        tu_doubles(nseq * D * N)};
    ref_scan_bwd(&p, s.dy, s.dfinal, &g);
    double *dA = tu_doubles(D * N), *dD = tu_doubles(D), *db = tu_doubles(D);
    memset(dA, 0, D * N * sizeof *dA);
    memset(dD, 0, D * sizeof *dD);
    memset(db, 0, D * sizeof *db);
    for (size_t q = 0; q < nseq; q++) {
        const size_t t0 = (size_t)cu[q], len = (size_t)(cu[q + 1] - cu[q]);
        ref_scan_problem one = p;
        one.L = len;
        one.cu_seqlens = NULL;
        one.u += t0 * D;
        one.delta += t0 * D;
        one.z += t0 * D;
        one.Bm += t0 * N;
        one.Cm += t0 * N;
        one.init += q * D * N;
        double *y1 = tu_doubles(len * D + 1), *f1 = tu_doubles(D * N);
        ref_scan_fwd(&one, y1, f1);
        assert_true(tu_rel_err(y1, y + t0 * D, len * D) <= 1e-14);
        assert_true(tu_rel_err(f1, fin + q * D * N, D * N) <= 1e-14);
        ref_scan_grads g1 = {tu_doubles(len * D + 1), tu_doubles(len * D + 1), tu_doubles(D * N),
                             tu_doubles(len * N + 1), tu_doubles(len * N + 1), tu_doubles(D),
                             tu_doubles(len * D + 1), tu_doubles(D), tu_doubles(D * N)};
        ref_scan_bwd(&one, s.dy + t0 * D, s.dfinal + q * D * N, &g1);
        assert_true(tu_rel_err(g1.du, g.du + t0 * D, len * D) <= 1e-14);
        assert_true(tu_rel_err(g1.ddelta, g.ddelta + t0 * D, len * D) <= 1e-14);
        assert_true(tu_rel_err(g1.dz, g.dz + t0 * D, len * D) <= 1e-14);
        assert_true(tu_rel_err(g1.dB, g.dB + t0 * N, len * N) <= 1e-14);
        assert_true(tu_rel_err(g1.dC, g.dC + t0 * N, len * N) <= 1e-14);
        assert_true(tu_rel_err(g1.dinit, g.dinit + q * D * N, D * N) <= 1e-14);
        for (size_t i = 0; i < D * N; i++)
            dA[i] += g1.dA[i];
        for (size_t i = 0; i < D; i++) {
            dD[i] += g1.dD[i];
            db[i] += g1.ddelta_bias[i];
        }
        double *all1[] = {y1, f1, g1.du, g1.ddelta, g1.dA, g1.dB, g1.dC, g1.dD, g1.dz, g1.ddelta_bias, g1.dinit};
        for (size_t i = 0; i < sizeof all1 / sizeof *all1; i++)
            free(all1[i]);
    }
    assert_true(tu_rel_err(dA, g.dA, D * N) <= 1e-13);
    assert_true(tu_rel_err(dD, g.dD, D) <= 1e-13);
    assert_true(tu_rel_err(db, g.ddelta_bias, D) <= 1e-13);
    double *all[] = {y, fin, dA, dD, db, g.du, g.ddelta, g.dA, g.dB, g.dC, g.dD, g.dz, g.ddelta_bias, g.dinit};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
    ref_scan_inputs_free(&s);
}

/* L decode steps from the initial state give the scan's outputs and final
 * state. */
static void test_decode_chain_equals_scan(void **state)
{
    (void)state;
    for (int opts = 0; opts < 2; opts++) {
        const size_t B = 2, L = 11, D = 3, N = 5;
        ref_scan_options c = {B, L, D, N, opts, opts, opts, opts, opts, 0, NULL, 0};
        ref_scan_inputs s = ref_scan_random(&c);
        ref_scan_problem p = ref_scan_problem_of(&s);
        double *y = tu_doubles(B * L * D), *fin = tu_doubles(B * D * N);
        ref_scan_fwd(&p, y, fin);
        double *st = tu_doubles(B * D * N), *out = tu_doubles(B * L * D);
        for (size_t i = 0; i < B * D * N; i++)
            st[i] = s.init ? s.init[i] : 0.0;
        double *x = tu_doubles(B * D), *dt = tu_doubles(B * D), *z = tu_doubles(B * D),
               *Bt = tu_doubles(B * N), *Ct = tu_doubles(B * N), *o = tu_doubles(B * D);
        for (size_t t = 0; t < L; t++) {
            for (size_t b = 0; b < B; b++) {
                memcpy(x + b * D, s.u + (b * L + t) * D, D * sizeof *x);
                memcpy(dt + b * D, s.delta + (b * L + t) * D, D * sizeof *dt);
                if (s.z)
                    memcpy(z + b * D, s.z + (b * L + t) * D, D * sizeof *z);
                memcpy(Bt + b * N, s.Bm + (b * L + t) * N, N * sizeof *Bt);
                memcpy(Ct + b * N, s.Cm + (b * L + t) * N, N * sizeof *Ct);
            }
            ref_state_update(B, D, N, x, dt, s.A, Bt, Ct, s.Dv, s.z ? z : NULL, s.bias, c.softplus, st, o);
            for (size_t b = 0; b < B; b++)
                memcpy(out + (b * L + t) * D, o + b * D, D * sizeof *o);
        }
        assert_true(tu_rel_err(out, y, B * L * D) <= 1e-13);
        assert_true(tu_rel_err(st, fin, B * D * N) <= 1e-13);
        double *all[] = {y, fin, st, out, x, dt, z, Bt, Ct, o};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            free(all[i]);
        ref_scan_inputs_free(&s);
    }
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradients_all_options),
        cmocka_unit_test(test_gradients_each_option),
        cmocka_unit_test(test_gradients_packed),
        cmocka_unit_test(test_packed_equals_separate),
        cmocka_unit_test(test_decode_chain_equals_scan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
