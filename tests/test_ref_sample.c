/* The sampling reference (tests/ref_sample.c) against the rules of
 * src/ops/ops_sample.h and by hand: Philox4x32-10 against Random123's
 * known answers; the draw's distribution over successive steps against
 * the kept probabilities by chi-square, plain, with top-k, top-p and both,
 * never a token outside the kept set; top-k's ties by index and top-p's
 * shortest prefix worked out by hand; greedy rows (temperature, top_k = 1,
 * NaN, +inf, all -inf); the same seed, step and row the same token, other
 * seeds, steps (the counter's high word too) and rows other sequences. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "ref_sample.h"

#define VOCAB 10
#define DRAWS 20000

static const double logits10[VOCAB] = {1.0, 0.5, 0.2, -0.3, 2.0, 0.0, -1.0, 1.5, 0.7, -0.5};

static sj_sample_params params(float temperature, int32_t top_k, float top_p, uint64_t seed)
{
    return (sj_sample_params){.temperature = temperature, .top_k = top_k, .top_p = top_p, .seed = seed};
}

static void test_philox_known_answers(void **state)
{
    (void)state;
    /* Random123's kat_vectors for philox4x32 with 10 rounds */
    static const struct {
        uint32_t ctr[4], key[2], out[4];
    } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
         {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
         {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        uint32_t out[4];
        ref_philox4x32_10(kat[i].ctr, kat[i].key, out);
        for (int w = 0; w < 4; w++)
            if (out[w] != kat[i].out[w])
                fail_msg("vector %zu word %d: 0x%08x, not 0x%08x", i, w, out[w], kat[i].out[w]);
    }
    /* u: the top 53 bits of the first two words, counter (step, row, 0),
     * key the seed's halves */
    const uint32_t ctr[4] = {0x89abcdefu, 0x01234567u, 7, 0}, key[2] = {0x0badf00du, 0xfeedbeefu};
    uint32_t r[4];
    ref_philox4x32_10(ctr, key, r);
    const double u = ref_sample_uniform(0xfeedbeef0badf00dull, 0x0123456789abcdefull, 7);
    assert_true(u == ldexp((double)((((uint64_t)r[1] << 32) | r[0]) >> 11), -53));
    assert_true(u >= 0 && u < 1);
}

/* DRAWS draws of one row over successive steps: the counts pass the
 * chi-square against the reference's probabilities, which give 0 to every
 * token outside the kept set (so a count there fails it). */
static void check_distribution(const sj_sample_params *p, int64_t expect_kept)
{
    double prob[VOCAB];
    ref_sample_info info;
    ref_sample_row(logits10, VOCAB, p, 0, 3, prob, &info);
    assert_int_equal(info.kept, expect_kept);
    int64_t counts[VOCAB] = {0};
    for (uint64_t step = 0; step < DRAWS; step++) {
        const int32_t t = ref_sample_row(logits10, VOCAB, p, step, 3, NULL, NULL);
        assert_true(t >= 0 && t < VOCAB);
        counts[t]++;
    }
    double chi;
    if (!ref_chi_square_ok(counts, prob, VOCAB, DRAWS, &chi))
        fail_msg("T %g top_k %d top_p %g: chi-square %g", (double)p->temperature, p->top_k, (double)p->top_p, chi);
}

static void test_distributions(void **state)
{
    (void)state;
    const sj_sample_params plain = params(0.8f, 0, 1.0f, 42), hot = params(2.5f, -3, 0.0f, 7);
    const sj_sample_params top_k = params(1.0f, 4, 1.0f, 43), top_p = params(1.0f, 0, 0.7f, 44);
    const sj_sample_params both = params(0.7f, 6, 0.9f, 45), all_k = params(1.0f, VOCAB, 2.0f, 46);
    check_distribution(&plain, VOCAB);
    check_distribution(&hot, VOCAB);
    check_distribution(&top_k, 4);
    check_distribution(&all_k, VOCAB);
    /* T = 1: the weights are e^x; 2.0, 1.5, 1.0, 0.7 reach 0.7 of the sum
     * only with 0.7 (the 4th: 0.66 after three) */
    check_distribution(&top_p, 4);
    check_distribution(&both, 4);
}

/* Top-k and top-p worked out by hand, ties in value kept by index. */
static void test_sets_by_hand(void **state)
{
    (void)state;
    const double x[6] = {1.0, 3.0, -0.0, 3.0, 3.0, 0.0};
    double prob[6];
    sj_sample_params p = params(1.0f, 2, 1.0f, 1);
    ref_sample_row(x, 6, &p, 0, 0, prob, NULL);
    assert_true(prob[1] == 0.5 && prob[3] == 0.5 && prob[4] == 0 && prob[0] == 0);
    /* -0 and +0 tie: the smaller index is ranked first */
    const double z[3] = {-1.0, 0.0, -0.0};
    p = params(1.0f, 2, 1.0f, 1);
    ref_sample_row(z, 3, &p, 0, 0, prob, NULL);
    assert_true(prob[0] == 0 && prob[1] == 0.5 && prob[2] == 0.5);
    const double y[4] = {-INFINITY, 0.0, log(3.0), log(2.0)};
    /* weights 0, 1, 3, 2 over 6: top_p 0.49 needs the 3, 0.51 the 3 and
     * the 2, a tiny top_p the best token only */
    const float cut[3] = {0.49f, 0.51f, 1e-30f};
    const int64_t kept[3] = {1, 2, 1};
    for (int c = 0; c < 3; c++) {
        ref_sample_info info;
        p = params(1.0f, 0, cut[c], 9);
        ref_sample_row(y, 4, &p, 0, 0, prob, &info);
        assert_int_equal(info.kept, kept[c]);
        assert_true(prob[0] == 0 && prob[2] > 0);
        assert_true(isfinite(info.top_p_margin));
    }
    /* T = +inf weighs every finite logit the same, -inf nothing */
    p = params(INFINITY, 0, 1.0f, 9);
    ref_sample_row(y, 4, &p, 0, 0, prob, NULL);
    assert_true(prob[0] == 0 && fabs(prob[1] - 1.0 / 3) < 1e-15 && fabs(prob[3] - 1.0 / 3) < 1e-15);
}

static void test_greedy(void **state)
{
    (void)state;
    const double plain[5] = {0.5, 2.0, -1.0, 2.0, 1.0};
    const float temperatures[4] = {0.0f, -1.0f, NAN, -0.0f};
    for (int t = 0; t < 4; t++) {
        const sj_sample_params p = params(temperatures[t], 0, 0.9f, 5);
        ref_sample_info info;
        for (uint64_t step = 0; step < 50; step++)
            assert_int_equal(ref_sample_row(plain, 5, &p, step, 0, NULL, &info), 1);
        assert_true(info.greedy);
    }
    sj_sample_params p = params(1.0f, 1, 1.0f, 5);
    for (uint64_t step = 0; step < 50; step++)
        assert_int_equal(ref_sample_row(plain, 5, &p, step, 0, NULL, NULL), 1);
    /* rows a softmax cannot weigh: argmax order's first element */
    p = params(1.0f, 0, 1.0f, 5);
    const double with_nan[5] = {0.5, NAN, 9.0, NAN, INFINITY};
    const double with_inf[5] = {0.5, INFINITY, 9.0, INFINITY, -INFINITY};
    const double all_neg_inf[3] = {-INFINITY, -INFINITY, -INFINITY};
    double prob[5];
    ref_sample_info info;
    assert_int_equal(ref_sample_row(with_nan, 5, &p, 0, 0, prob, &info), 1);
    assert_true(info.greedy && prob[1] == 1 && prob[3] == 0);
    assert_int_equal(ref_sample_row(with_inf, 5, &p, 0, 0, NULL, NULL), 1);
    assert_int_equal(ref_sample_row(all_neg_inf, 3, &p, 0, 0, NULL, NULL), 0);
    /* one token: nothing to draw among */
    const double one[1] = {3.0};
    assert_int_equal(ref_sample_row(one, 1, &p, 17, 0, NULL, &info), 0);
    assert_false(info.greedy);
}

/* Same seed, step and row: the same token; another seed, another row, or
 * steps that differ only in the counter's high word: another sequence. */
static void test_seeds_steps_rows(void **state)
{
    (void)state;
    const sj_sample_params a = params(1.0f, 0, 1.0f, 1234), b = params(1.0f, 0, 1.0f, 1235);
    const sj_sample_params a_hi = params(1.0f, 0, 1.0f, 1234 + (UINT64_C(1) << 32));
    int differ_seed = 0, differ_seed_hi = 0, differ_row = 0, differ_step_hi = 0;
    for (uint64_t step = 0; step < 64; step++) {
        const int32_t t = ref_sample_row(logits10, VOCAB, &a, step, 0, NULL, NULL);
        assert_int_equal(ref_sample_row(logits10, VOCAB, &a, step, 0, NULL, NULL), t);
        differ_seed += ref_sample_row(logits10, VOCAB, &b, step, 0, NULL, NULL) != t;
        differ_seed_hi += ref_sample_row(logits10, VOCAB, &a_hi, step, 0, NULL, NULL) != t;
        differ_row += ref_sample_row(logits10, VOCAB, &a, step, 1, NULL, NULL) != t;
        differ_step_hi += ref_sample_row(logits10, VOCAB, &a, step + (UINT64_C(1) << 32), 0, NULL, NULL) != t;
    }
    /* independent draws agree with probability sum p_i^2 < 0.3 a step */
    assert_true(differ_seed > 20 && differ_seed_hi > 20 && differ_row > 20 && differ_step_hi > 20);
}

/* The chi-square itself: a fair count passes, a skewed one and a count on
 * a token of probability 0 do not. */
static void test_chi_square(void **state)
{
    (void)state;
    const double prob[4] = {0.25, 0.25, 0.5, 0.0};
    const int64_t fair[4] = {2510, 2490, 5000, 0}, skewed[4] = {2700, 2300, 5000, 0};
    const int64_t outside[4] = {2500, 2500, 4999, 1};
    double chi;
    assert_true(ref_chi_square_ok(fair, prob, 4, 10000, &chi));
    assert_false(ref_chi_square_ok(skewed, prob, 4, 10000, &chi));
    assert_false(ref_chi_square_ok(outside, prob, 4, 10000, &chi));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philox_known_answers), cmocka_unit_test(test_distributions),
        cmocka_unit_test(test_sets_by_hand),         cmocka_unit_test(test_greedy),
        cmocka_unit_test(test_seeds_steps_rows),     cmocka_unit_test(test_chi_square),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
