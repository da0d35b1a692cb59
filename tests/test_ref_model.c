/* The reference Mamba model against itself and by hand: every weight
 * gradient (loss and dlogits backward, tied and untied lm_head) against
 * central finite differences, decode steps chained from empty states and
 * after a prefill against the forward, tensor names against the checkpoint
 * scheme, and a model small enough to work out the states and the loss by
 * hand. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_tensors.h"
#include "ref_model.h"
#include "test_util.h"

#define FD_STEP 1e-3
#define FD_TOL 1e-6
#define FD_NOISE_ULPS 16

/* d_model 8, d_inner 16, d_state 4, d_conv 4, dt_rank 2, 2 layers, vocab 11. */
static ref_mamba_cfg tiny(int tied)
{
    ref_mamba_cfg c = {8, 16, 4, 4, 2, 2, 11, 1e-5, tied};
    return c;
}

static int *random_ids(size_t n, size_t vocab)
{
    int *ids = malloc(n * sizeof *ids);
    assert_non_null(ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = (int)tu_uniform(0.0, (double)vocab);
    return ids;
}

/* The tensors of a model in foreach order. */
#define MAX_TENSORS 64
typedef struct tensors {
    size_t count;
    char name[MAX_TENSORS][96];
    double *w[MAX_TENSORS];
    size_t n[MAX_TENSORS];
} tensors;

static void collect(const char *name, double *w, size_t n, void *user)
{
    tensors *t = user;
    assert_true(t->count < MAX_TENSORS);
    snprintf(t->name[t->count], sizeof t->name[0], "%s", name);
    t->w[t->count] = w;
    t->n[t->count] = n;
    t->count++;
}

static tensors tensors_of(ref_mamba *m)
{
    tensors t;
    t.count = 0;
    ref_mamba_foreach(m, collect, &t);
    return t;
}

/* The scalar whose gradient is checked: the loss against targets, or
 * <dlogits, logits> when dlogits is set. */
typedef struct objective {
    size_t B, L;
    const int *ids, *targets;
    const double *dlogits;
} objective;

static double objective_value(const ref_mamba *m, const objective *o)
{
    if (!o->dlogits)
        return ref_mamba_loss(m, o->B, o->L, o->ids, o->targets);
    const size_t n = o->B * o->L * m->cfg.vocab;
    double *logits = tu_doubles(n), f = 0.0;
    ref_mamba_forward(m, o->B, o->L, o->ids, logits, NULL, NULL);
    for (size_t i = 0; i < n; i++)
        f += o->dlogits[i] * logits[i];
    free(logits);
    return f;
}

/* Every element of every weight tensor of m against grads, by the
 * fourth-order central difference (error ~h^4).  Some tensors have
 * gradients near 1e-5 (dt_proj sits behind several O(0.1) factors), where
 * the rounding of the loss, a few ulps of |f| divided by the step, is no
 * longer 1e-6 of the gradient: the tolerance adds FD_NOISE_ULPS of it per
 * element, still far below any wrong gradient. */
static void check_fd(ref_mamba *m, const objective *o, ref_mamba *grads)
{
    static const double offsets[4] = {-2.0, -1.0, 1.0, 2.0};
    tensors w = tensors_of(m), g = tensors_of(grads);
    assert_int_equal(w.count, g.count);
    const double noise = FD_NOISE_ULPS * DBL_EPSILON * fabs(objective_value(m, o)) / FD_STEP;
    for (size_t k = 0; k < w.count; k++) {
        double err = 0.0, norm = 0.0;
        for (size_t i = 0; i < w.n[k]; i++) {
            const double keep = w.w[k][i];
            double f[4];
            for (int s = 0; s < 4; s++) {
                w.w[k][i] = keep + offsets[s] * FD_STEP;
                f[s] = objective_value(m, o);
            }
            w.w[k][i] = keep;
            const double fd = (8.0 * (f[2] - f[1]) - (f[3] - f[0])) / (12.0 * FD_STEP);
            err += (g.w[k][i] - fd) * (g.w[k][i] - fd);
            norm += fd * fd;
        }
        err = sqrt(err);
        norm = sqrt(norm);
        if (!(err <= FD_TOL * norm + sqrt((double)w.n[k]) * noise))
            fail_msg("d %s: error %g against finite differences of norm %g (tied=%d)", w.name[k],
                     err, norm, m->cfg.tied);
    }
}

/* A random model with dt in [0.1, 1] rather than the initial [1e-3, 1e-1],
 * where the state would barely carry over tokens and the gradients of A_log
 * and dt_proj (~1e-6) would be mostly rounding noise. */
static ref_mamba gradient_model(const ref_mamba_cfg *c)
{
    ref_mamba m = ref_mamba_random(c);
    for (size_t l = 0; l < c->n_layer; l++)
        for (size_t d = 0; d < c->d_inner; d++) {
            const double dt = tu_uniform(0.1, 1.0);
            m.layers[l].dt_proj_b[d] = log(expm1(dt));
        }
    return m;
}

static void check_loss_gradients(int tied)
{
    const ref_mamba_cfg c = tiny(tied);
    const size_t B = 2, L = 5;
    ref_mamba m = gradient_model(&c), g = ref_mamba_alloc(&c);
    int *ids = random_ids(B * L, c.vocab), *targets = random_ids(B * L, c.vocab);
    static const size_t ignored[] = {1, 4, 7};
    for (size_t i = 0; i < sizeof ignored / sizeof *ignored; i++)
        targets[ignored[i]] = REF_MAMBA_IGNORE;
    /* Poison: the backward must write every gradient. */
    tensors gt = tensors_of(&g);
    for (size_t k = 0; k < gt.count; k++)
        for (size_t i = 0; i < gt.n[k]; i++)
            gt.w[k][i] = NAN;
    const objective o = {B, L, ids, targets, NULL};
    const double loss = ref_mamba_backward(&m, B, L, ids, targets, &g);
    assert_true(loss == ref_mamba_loss(&m, B, L, ids, targets));
    check_fd(&m, &o, &g);
    free(ids);
    free(targets);
    ref_mamba_free(&m);
    ref_mamba_free(&g);
}

static void test_loss_gradients_untied(void **state)
{
    (void)state;
    check_loss_gradients(0);
}

static void test_loss_gradients_tied(void **state)
{
    (void)state;
    check_loss_gradients(1);
}

static void test_dlogits_gradients(void **state)
{
    (void)state;
    const ref_mamba_cfg c = tiny(0);
    const size_t B = 2, L = 4, n = B * L * c.vocab;
    ref_mamba m = gradient_model(&c), g = ref_mamba_alloc(&c);
    int *ids = random_ids(B * L, c.vocab);
    double *dlogits = tu_doubles(n);
    for (size_t i = 0; i < n; i++)
        dlogits[i] = tu_normal();
    const objective o = {B, L, ids, NULL, dlogits};
    ref_mamba_backward_dlogits(&m, B, L, ids, dlogits, &g);
    check_fd(&m, &o, &g);
    free(ids);
    free(dlogits);
    ref_mamba_free(&m);
    ref_mamba_free(&g);
}

/* Sizes of the decoding states of B rows. */
static size_t conv_state_len(const ref_mamba_cfg *c, size_t B)
{
    return c->n_layer * B * c->d_inner * c->d_conv;
}

static size_t ssm_state_len(const ref_mamba_cfg *c, size_t B)
{
    return c->n_layer * B * c->d_inner * c->d_state;
}

static double *nan_doubles(size_t n)
{
    double *x = tu_doubles(n);
    for (size_t i = 0; i < n; i++)
        x[i] = NAN;
    return x;
}

/* A prefill of the first `prefill` tokens of ids [B, L] (none: zero
 * states), then decode steps for the rest, gives the forward's logits at
 * every decoded position and its final states. */
static void check_decode(const ref_mamba *m, size_t B, size_t L, const int *ids, size_t prefill)
{
    const ref_mamba_cfg *c = &m->cfg;
    const size_t V = c->vocab, nc = conv_state_len(c, B), ns = ssm_state_len(c, B);
    double *logits = nan_doubles(B * L * V), *conv = nan_doubles(nc), *ssm = nan_doubles(ns);
    ref_mamba_forward(m, B, L, ids, logits, conv, ssm);

    double *conv_d = nan_doubles(nc), *ssm_d = nan_doubles(ns), *step = nan_doubles(B * V),
           *want = tu_doubles(B * V);
    int *head = malloc((B * prefill + 1) * sizeof *head), tok[16];
    assert_true(head && B <= 16);
    if (prefill) {
        for (size_t b = 0; b < B; b++)
            memcpy(head + b * prefill, ids + b * L, prefill * sizeof *head);
        double *pl = tu_doubles(B * prefill * V);
        ref_mamba_forward(m, B, prefill, head, pl, conv_d, ssm_d);
        for (size_t b = 0; b < B; b++)
            assert_true(tu_rel_err(pl + b * prefill * V, logits + b * L * V, prefill * V) <= 1e-12);
        free(pl);
    } else {
        memset(conv_d, 0, nc * sizeof *conv_d);
        memset(ssm_d, 0, ns * sizeof *ssm_d);
    }
    for (size_t t = prefill; t < L; t++) {
        for (size_t b = 0; b < B; b++) {
            tok[b] = ids[b * L + t];
            memcpy(want + b * V, logits + (b * L + t) * V, V * sizeof *want);
        }
        ref_mamba_step(m, B, tok, conv_d, ssm_d, step);
        const double err = tu_rel_err(step, want, B * V);
        if (!(err <= 1e-12))
            fail_msg("step %zu after a prefill of %zu: logits differ by %g", t, prefill, err);
    }
    assert_true(tu_rel_err(conv_d, conv, nc) <= 1e-12);
    assert_true(tu_rel_err(ssm_d, ssm, ns) <= 1e-12);
    double *all[] = {logits, conv, ssm, conv_d, ssm_d, step, want};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
    free(head);
}

static void test_steps_equal_forward(void **state)
{
    (void)state;
    for (int tied = 0; tied <= 1; tied++) {
        const ref_mamba_cfg c = tiny(tied);
        const size_t B = 3, L = 9;
        ref_mamba m = ref_mamba_random(&c);
        int *ids = random_ids(B * L, c.vocab);
        check_decode(&m, B, L, ids, 0);
        free(ids);
        ref_mamba_free(&m);
    }
}

static void test_prefill_then_steps(void **state)
{
    (void)state;
    const ref_mamba_cfg c = tiny(0);
    const size_t B = 2, L = 9;
    ref_mamba m = ref_mamba_random(&c);
    int *ids = random_ids(B * L, c.vocab);
    /* shorter than, as long as and longer than the conv window; the whole */
    static const size_t prefills[] = {1, 3, 4, 7, 9};
    for (size_t i = 0; i < sizeof prefills / sizeof *prefills; i++)
        check_decode(&m, B, L, ids, prefills[i]);
    free(ids);
    ref_mamba_free(&m);
}

/* Names and sizes in the order of the Hugging Face checkpoint scheme. */
static void test_tensor_names(void **state)
{
    (void)state;
    for (int tied = 0; tied <= 1; tied++) {
        const ref_mamba_cfg c = tiny(tied);
        const size_t dm = c.d_model, Di = c.d_inner, N = c.d_state, R = c.dt_rank;
        ref_mamba m = ref_mamba_alloc(&c);
        tensors t = tensors_of(&m);
        const struct {
            sj_model_tensor_kind which;
            size_t n;
        } per_layer[] = {
            {SJ_T_NORM, dm},       {SJ_T_IN_PROJ, 2 * Di * dm},     {SJ_T_CONV, Di * c.d_conv},
            {SJ_T_CONV_BIAS, Di},  {SJ_T_X_PROJ, (R + 2 * N) * Di}, {SJ_T_DT_PROJ, Di * R},
            {SJ_T_DT_BIAS, Di},    {SJ_T_A_LOG, Di * N},            {SJ_T_D, Di},
            {SJ_T_OUT_PROJ, dm * Di},
        };
        const size_t nper = sizeof per_layer / sizeof *per_layer;
        assert_int_equal(t.count, 2 + c.n_layer * nper + !tied);
        char want[96];
        size_t k = 0;
        assert_int_equal(sj_model_tensor_name(SJ_NAMING_HF, SJ_T_EMBEDDING, -1, want, sizeof want),
                         SSMJIT_OK);
        assert_string_equal(t.name[k], want);
        assert_int_equal(t.n[k++], c.vocab * dm);
        for (size_t l = 0; l < c.n_layer; l++)
            for (size_t i = 0; i < nper; i++) {
                assert_int_equal(sj_model_tensor_name(SJ_NAMING_HF, per_layer[i].which, (int64_t)l,
                                                      want, sizeof want),
                                 SSMJIT_OK);
                assert_string_equal(t.name[k], want);
                assert_int_equal(t.n[k++], per_layer[i].n);
            }
        assert_string_equal(t.name[k], "backbone.norm_f.weight");
        assert_int_equal(t.n[k++], dm);
        if (!tied) {
            assert_string_equal(t.name[k], "lm_head.weight");
            assert_int_equal(t.n[k++], c.vocab * dm);
        }
        /* one block, tensor after tensor, every weight zero */
        for (size_t i = 0; i + 1 < t.count; i++)
            assert_ptr_equal(t.w[i] + t.n[i], t.w[i + 1]);
        for (size_t i = 0; i < t.count; i++)
            for (size_t j = 0; j < t.n[i]; j++)
                assert_true(t.w[i][j] == 0.0);
        assert_true(tied ? m.lm_head == NULL : m.lm_head == t.w[t.count - 1]);
        ref_mamba_free(&m);
    }
}

/* One layer, d_model = d_inner = 2, N = 1, R = 1, W = 4, vocab 3, eps 0,
 * with weights that make every step checkable by hand:
 *   embedding rows (1, -1), (2, 2), (0, 3): rmsnorm gives (1, -1), (1, 1),
 *     (0, sqrt 2), norms 1;
 *   in_proj: xs = x, z = 0; the conv passes the current token (xc =
 *     silu(xs)); x_proj: dtr = 0, Bm = xc0 + xc1, Cm = 0; dt_proj: dt =
 *     softplus(0) = log 2; A_log = 0 so exp(dt A) = 1/2; out_proj = 0, so
 *     h stays the embedding;
 *   lm_head rows (1, 0), (0, 1), (0, 0).
 * ids (0, 1) give conv_state [[0, 0, 1, 1], [0, 0, -1, 1]], ssm_state
 * h1[d] = h0[d] / 2 + log 2 * Bm1 * xc1[d] with h0[d] = log 2 * Bm0 * xc0[d],
 * and logits (1, -1, 0), (1, 1, 0). */
static void test_hand_computed(void **state)
{
    (void)state;
    const ref_mamba_cfg c = {2, 2, 1, 4, 1, 1, 3, 0.0, 0};
    ref_mamba m = ref_mamba_alloc(&c);
    static const double emb[] = {1, -1, 2, 2, 0, 3};
    memcpy(m.embedding, emb, sizeof emb);
    ref_mamba_layer *w = &m.layers[0];
    w->norm_w[0] = w->norm_w[1] = m.norm_f[0] = m.norm_f[1] = 1.0;
    w->in_proj[0 * 2 + 0] = w->in_proj[1 * 2 + 1] = 1.0; /* rows 0, 1: xs; rows 2, 3: z = 0 */
    w->conv_w[0 * 4 + 3] = w->conv_w[1 * 4 + 3] = 1.0;
    w->x_proj[1 * 2 + 0] = w->x_proj[1 * 2 + 1] = 1.0; /* row 0: dtr, 1: Bm, 2: Cm */
    m.lm_head[0 * 2 + 0] = m.lm_head[1 * 2 + 1] = 1.0;

    const int ids[] = {0, 1};
    double logits[6], conv[8], ssm[2];
    ref_mamba_forward(&m, 1, 2, ids, logits, conv, ssm);
    static const double want_logits[] = {1, -1, 0, 1, 1, 0};
    static const double want_conv[] = {0, 0, 1, 1, 0, 0, -1, 1};
    for (size_t i = 0; i < 6; i++)
        assert_true(logits[i] == want_logits[i]);
    for (size_t i = 0; i < 8; i++)
        assert_true(conv[i] == want_conv[i]);
    const double s1 = 1.0 / (1.0 + exp(-1.0)), sm1 = -1.0 / (1.0 + exp(1.0)), dt = log(2.0);
    const double xc0[] = {s1, sm1}, xc1[] = {s1, s1};
    for (size_t d = 0; d < 2; d++) {
        const double h0 = dt * (s1 + sm1) * xc0[d], h1 = 0.5 * h0 + dt * (2.0 * s1) * xc1[d];
        assert_true(fabs(ssm[d] - h1) <= 1e-14 * fabs(h1));
    }

    /* Cross-entropy of rows (1, -1, 0) against 0, (1, 1, 0) ignored and
     * (0, sqrt 2, 0) (id 2) against 1. */
    const int ids3[] = {0, 1, 2}, targets[] = {0, REF_MAMBA_IGNORE, 1};
    const double e = exp(1.0), r2 = sqrt(2.0);
    const double want_loss = ((log(e + 1.0 / e + 1.0) - 1.0) + (log(2.0 + exp(r2)) - r2)) / 2.0;
    const double loss = ref_mamba_loss(&m, 1, 3, ids3, targets);
    assert_true(fabs(loss - want_loss) <= 1e-14 * want_loss);
    const int none[] = {REF_MAMBA_IGNORE, REF_MAMBA_IGNORE};
    assert_true(isnan(ref_mamba_loss(&m, 1, 2, ids, none)));
    ref_mamba_free(&m);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loss_gradients_untied),
        cmocka_unit_test(test_loss_gradients_tied),
        cmocka_unit_test(test_dlogits_gradients),
        cmocka_unit_test(test_steps_equal_forward),
        cmocka_unit_test(test_prefill_then_steps),
        cmocka_unit_test(test_tensor_names),
        cmocka_unit_test(test_hand_computed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
