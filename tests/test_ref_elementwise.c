/* The elementwise reference: known values, the softplus threshold, and every
 * gradient against central finite differences of the forward. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "ref_elementwise.h"
#include "test_util.h"

/* |a - b| <= tol (cmocka's double comparison is not in every version). */
#define assert_close(a, b, tol) assert_true(fabs((double)(a) - (double)(b)) <= (tol))

#define N 4096
#define FD_STEP 1e-5
#define FD_TOL 1e-7

static double fd(double (*f)(double), double x)
{
    return (f(x + FD_STEP) - f(x - FD_STEP)) / (2.0 * FD_STEP);
}

static void test_known_values(void **state)
{
    (void)state;
    assert_close(ref_silu(0.0), 0.0, 0.0);
    assert_close(ref_silu_grad(0.0), 0.5, 0.0);
    assert_close(ref_softplus(0.0), log(2.0), 1e-15);
    assert_close(ref_softplus_grad(0.0), 0.5, 0.0);
    /* Beyond the threshold softplus is the identity... */
    assert_close(ref_softplus(25.0), 25.0, 0.0);
    assert_close(ref_softplus_grad(25.0), 1.0, 0.0);
    /* ...and continuous there to within exp(-20). */
    assert_close(ref_softplus(20.0), 20.0, 3e-9);
    /* No overflow to NaN at large magnitudes. */
    assert_close(ref_silu(-800.0), 0.0, 0.0);
    assert_close(ref_silu(800.0), 800.0, 0.0);
    assert_close(ref_silu_grad(-800.0), 0.0, 0.0);
    assert_close(ref_silu_grad(800.0), 1.0, 0.0);
    assert_close(ref_softplus(-800.0), 0.0, 0.0);
}

/* act'(x) on fresh points of [lo, hi) against finite differences of act,
 * through the array functions with a random upstream gradient. */
static void check_activation(ssmjit_activation act, double (*f)(double), double lo, double hi)
{
    double *x = tu_doubles(N), *dy = tu_doubles(N), *dx = tu_doubles(N), *num = tu_doubles(N);
    double *y = tu_doubles(N);
    tu_fill_uniform(x, N, lo, hi);
    tu_fill_uniform(dy, N, -2.0, 2.0);
    ref_activation_bwd(act, x, dy, dx, N);
    ref_activation_fwd(act, x, y, N);
    for (size_t i = 0; i < N; ++i) {
        assert_close(y[i], f(x[i]), 0.0);
        num[i] = dy[i] * fd(f, x[i]);
    }
    assert_true(tu_rel_err(dx, num, N) <= FD_TOL);
    free(x), free(dy), free(dx), free(num), free(y);
}

static void test_silu_grad(void **state)
{
    (void)state;
    tu_seed();
    check_activation(SSMJIT_ACT_SILU, ref_silu, -15.0, 15.0);
}

static void test_softplus_grad_below_threshold(void **state)
{
    (void)state;
    tu_seed();
    check_activation(SSMJIT_ACT_SOFTPLUS, ref_softplus, -15.0, 19.9);
}

static void test_softplus_grad_above_threshold(void **state)
{
    (void)state;
    tu_seed();
    check_activation(SSMJIT_ACT_SOFTPLUS, ref_softplus, 20.1, 60.0);
}

static double gate_at(double y, double z)
{
    double out;
    ref_gate_fwd(&y, &z, &out, 1);
    return out;
}

static void test_gate_grad(void **state)
{
    (void)state;
    tu_seed();
    double *y = tu_doubles(N), *z = tu_doubles(N), *dout = tu_doubles(N), *out = tu_doubles(N);
    double *dy = tu_doubles(N), *dz = tu_doubles(N), *ny = tu_doubles(N), *nz = tu_doubles(N);
    tu_fill_uniform(y, N, -4.0, 4.0);
    tu_fill_uniform(z, N, -15.0, 15.0);
    tu_fill_uniform(dout, N, -2.0, 2.0);
    ref_gate_fwd(y, z, out, N);
    ref_gate_bwd(y, z, dout, dy, dz, N);
    for (size_t i = 0; i < N; ++i) {
        assert_close(out[i], y[i] * ref_silu(z[i]), 0.0);
        ny[i] = dout[i] * (gate_at(y[i] + FD_STEP, z[i]) - gate_at(y[i] - FD_STEP, z[i])) /
                (2.0 * FD_STEP);
        nz[i] = dout[i] * (gate_at(y[i], z[i] + FD_STEP) - gate_at(y[i], z[i] - FD_STEP)) /
                (2.0 * FD_STEP);
    }
    assert_true(tu_rel_err(dy, ny, N) <= FD_TOL);
    assert_true(tu_rel_err(dz, nz, N) <= FD_TOL);
    free(y), free(z), free(dout), free(out), free(dy), free(dz), free(ny), free(nz);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_values),
        cmocka_unit_test(test_silu_grad),
        cmocka_unit_test(test_softplus_grad_below_threshold),
        cmocka_unit_test(test_softplus_grad_above_threshold),
        cmocka_unit_test(test_gate_grad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
