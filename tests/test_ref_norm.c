/* The RMSNorm reference: gradients of x, residual and weight against central
 * finite differences of the forward, and properties of the forward. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_norm.h"
#include "test_util.h"

/* |a - b| <= tol (cmocka's double comparison is not in every version). */
#define assert_close(a, b, tol) assert_true(fabs((double)(a) - (double)(b)) <= (tol))

#define FD_STEP 1e-5
#define FD_TOL 1e-6

/* One layer's inputs and the upstream gradients that define the scalar
 * L = <gy, y> + <gro, residual_out>. */
typedef struct problem {
    size_t rows, d;
    double eps;
    double *x, *res, *w; /* res NULL: no residual */
    double *gy, *gro;    /* gro NULL: nothing flows into residual_out */
    double *y, *h;       /* scratch */
} problem;

static problem make_problem(size_t rows, size_t d, double eps, int residual, int residual_grad)
{
    problem p = {rows, d, eps, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    size_t n = rows * d;
    p.x = tu_doubles(n);
    p.w = tu_doubles(d);
    p.gy = tu_doubles(n);
    p.y = tu_doubles(n);
    p.h = tu_doubles(n);
    for (size_t i = 0; i < n; ++i) {
        p.x[i] = tu_normal();
        p.gy[i] = tu_normal();
    }
    tu_fill_uniform(p.w, d, -2.0, 2.0);
    if (residual) {
        p.res = tu_doubles(n);
        for (size_t i = 0; i < n; ++i)
            p.res[i] = tu_normal();
    }
    if (residual_grad) {
        p.gro = tu_doubles(n);
        for (size_t i = 0; i < n; ++i)
            p.gro[i] = tu_normal();
    }
    return p;
}

static void free_problem(problem *p)
{
    free(p->x), free(p->res), free(p->w), free(p->gy), free(p->gro), free(p->y), free(p->h);
}

static double loss(problem *p)
{
    size_t n = p->rows * p->d;
    ref_rmsnorm_fwd(p->x, p->res, p->w, p->rows, p->d, p->eps, p->y, p->h, NULL);
    double l = 0.0;
    for (size_t i = 0; i < n; ++i)
        l += p->gy[i] * p->y[i] + (p->gro ? p->gro[i] * p->h[i] : 0.0);
    return l;
}

/* Central differences of the loss in every element of v[0..n). */
static void numeric_grad(problem *p, double *v, size_t n, double *out)
{
    for (size_t i = 0; i < n; ++i) {
        double keep = v[i];
        v[i] = keep + FD_STEP;
        double lp = loss(p);
        v[i] = keep - FD_STEP;
        double lm = loss(p);
        v[i] = keep;
        out[i] = (lp - lm) / (2.0 * FD_STEP);
    }
}

static void check_grads(size_t rows, size_t d, double eps, int residual, int residual_grad)
{
    problem p = make_problem(rows, d, eps, residual, residual_grad);
    size_t n = rows * d;
    double *dh = tu_doubles(n), *dw = tu_doubles(d), *num = tu_doubles(n);
    loss(&p); /* p.h = x + residual */
    ref_rmsnorm_bwd(p.h, p.w, rows, d, eps, p.gy, p.gro, dh, dw);

    numeric_grad(&p, p.x, n, num);
    assert_true(tu_rel_err(dh, num, n) <= FD_TOL);
    if (residual) {
        numeric_grad(&p, p.res, n, num);
        assert_true(tu_rel_err(dh, num, n) <= FD_TOL);
    }
    numeric_grad(&p, p.w, d, num);
    assert_true(tu_rel_err(dw, num, d) <= FD_TOL);
    free(dh), free(dw), free(num);
    free_problem(&p);
}

/* d = 1 only with a large eps: with a small one the output is nearly
 * sign(x) * w and the x gradient drowns in the differences' rounding. */
static const struct {
    size_t rows, d;
    double eps;
} shapes[] = {{1, 1, 0.5}, {3, 7, 1e-5}, {3, 7, 0.5}, {5, 64, 1e-5}, {5, 64, 0.5},
              {2, 300, 1e-5}, {2, 1000, 1e-5}};
#define NUM_SHAPES (sizeof shapes / sizeof shapes[0])

static void test_grads_plain(void **state)
{
    (void)state;
    tu_seed();
    for (size_t s = 0; s < NUM_SHAPES; ++s)
        check_grads(shapes[s].rows, shapes[s].d, shapes[s].eps, 0, 0);
}

static void test_grads_residual(void **state)
{
    (void)state;
    tu_seed();
    for (size_t s = 0; s < NUM_SHAPES; ++s) {
        check_grads(shapes[s].rows, shapes[s].d, shapes[s].eps, 1, 0);
        check_grads(shapes[s].rows, shapes[s].d, shapes[s].eps, 1, 1);
    }
}

/* eps = 0: every row of y / w has mean square 1, and scaling a row does not
 * change it. */
static void test_fwd_properties(void **state)
{
    (void)state;
    tu_seed();
    const size_t rows = 7, d = 129;
    problem p = make_problem(rows, d, 0.0, 1, 0);
    double *rstd = tu_doubles(rows), *y2 = tu_doubles(rows * d), *x2 = tu_doubles(rows * d);
    ref_rmsnorm_fwd(p.x, p.res, p.w, rows, d, 0.0, p.y, p.h, rstd);
    for (size_t r = 0; r < rows; ++r) {
        double ss = 0.0, hh = 0.0;
        for (size_t j = 0; j < d; ++j) {
            double v = p.y[r * d + j] / p.w[j];
            ss += v * v;
            hh += p.h[r * d + j] * p.h[r * d + j];
            assert_close(p.h[r * d + j], p.x[r * d + j] + p.res[r * d + j], 0.0);
        }
        assert_close(ss / (double)d, 1.0, 1e-12);
        assert_close(rstd[r], 1.0 / sqrt(hh / (double)d), 1e-12 * rstd[r]);
    }
    for (size_t i = 0; i < rows * d; ++i)
        x2[i] = 3.5 * p.h[i];
    ref_rmsnorm_fwd(x2, NULL, p.w, rows, d, 0.0, y2, NULL, NULL);
    assert_true(tu_rel_err(y2, p.y, rows * d) <= 1e-14);
    free(rstd), free(y2), free(x2);
    free_problem(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grads_plain),
        cmocka_unit_test(test_grads_residual),
        cmocka_unit_test(test_fwd_properties),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
