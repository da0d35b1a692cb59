/* The host half of the embedding gradient, sj_embedding_bwd_plan: on
 * fresh random ids (many repeats, few, none, all one id, negative and large
 * ids) the order is a stable sort of the positions by id and the segments
 * are exactly the runs of equal ids.  Its argument checks are rows of
 * test_bad_input. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops_model.h"
#include "test_util.h"

#define UNTOUCHED INT32_C(-77777)

typedef struct plan {
    int64_t n, nseg;
    int32_t *order, *seg_start, *seg_id;
} plan;

static plan make_plan(const int32_t *ids, int64_t n)
{
    const size_t words = (size_t)n + 2;
    plan p = {n, -1, calloc(words, 4), calloc(words, 4), calloc(words, 4)};
    assert_true(p.order && p.seg_start && p.seg_id);
    for (int64_t i = 0; i < n + 2; i++)
        p.seg_start[i] = UNTOUCHED;
    assert_int_equal(sj_embedding_bwd_plan(ids, n, p.order, p.seg_start, p.seg_id, &p.nseg),
                     SSMJIT_OK);
    return p;
}

static void free_plan(plan *p)
{
    free(p->order);
    free(p->seg_start);
    free(p->seg_id);
}

static int64_t count_distinct(const int32_t *ids, int64_t n)
{
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t j = 0;
        while (j < i && ids[j] != ids[i])
            j++;
        count += j == i;
    }
    return count;
}

/* Everything the plan promises, checked from scratch. */
static void check_plan(const int32_t *ids, int64_t n)
{
    plan p = make_plan(ids, n);
    char *seen = calloc((size_t)n + 1, 1);
    assert_non_null(seen);
    for (int64_t k = 0; k < n; k++) {
        assert_true(p.order[k] >= 0 && p.order[k] < n);
        assert_false(seen[p.order[k]]);
        seen[p.order[k]] = 1;
        if (k > 0) {
            int32_t a = ids[p.order[k - 1]], b = ids[p.order[k]];
            assert_true(a < b || (a == b && p.order[k - 1] < p.order[k]));
        }
    }
    assert_int_equal(p.nseg, count_distinct(ids, n));
    assert_int_equal(p.seg_start[0], 0);
    assert_int_equal(p.seg_start[p.nseg], n);
    for (int64_t s = 0; s < p.nseg; s++) {
        assert_true(p.seg_start[s] < p.seg_start[s + 1]);
        for (int32_t k = p.seg_start[s]; k < p.seg_start[s + 1]; k++)
            assert_int_equal(ids[p.order[k]], p.seg_id[s]);
        if (s > 0)
            assert_true(p.seg_id[s - 1] < p.seg_id[s]);
    }
    for (int64_t i = p.nseg + 1; i < n + 2; i++)
        assert_int_equal(p.seg_start[i], UNTOUCHED);
    free(seen);
    free_plan(&p);
}

static int32_t *random_ids(int64_t n, int32_t lo, int32_t hi)
{
    int32_t *ids = malloc((size_t)(n + 1) * sizeof *ids);
    assert_non_null(ids);
    for (int64_t i = 0; i < n; i++)
        ids[i] = (int32_t)tu_uniform(lo, (double)hi + 1.0);
    return ids;
}

static void test_random_ids(void **state)
{
    (void)state;
    tu_seed();
    static const int64_t sizes[] = {1, 2, 3, 7, 64, 1000, 4097};
    static const int32_t vocabs[] = {1, 2, 11, 50280};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (size_t v = 0; v < sizeof vocabs / sizeof *vocabs; v++) {
            int32_t *ids = random_ids(sizes[i], 0, vocabs[v] - 1);
            check_plan(ids, sizes[i]);
            free(ids);
        }
}

/* Ids the caller has not range-checked still sort: negative and large. */
static void test_extreme_ids(void **state)
{
    (void)state;
    tu_seed();
    int32_t *ids = random_ids(300, -3, 3);
    ids[0] = INT32_MIN;
    ids[7] = INT32_MAX;
    ids[299] = INT32_MIN;
    check_plan(ids, 300);
    free(ids);
}

/* Sorted, reversed and constant inputs: the merge passes' edge cases. */
static void test_patterns(void **state)
{
    (void)state;
    enum { N = 37 };
    int32_t up[N], down[N], same[N];
    for (int i = 0; i < N; i++) {
        up[i] = i;
        down[i] = N - i;
        same[i] = 5;
    }
    check_plan(up, N);
    check_plan(down, N);
    plan p = make_plan(same, N);
    assert_int_equal(p.nseg, 1);
    assert_int_equal(p.seg_id[0], 5);
    for (int i = 0; i < N; i++)
        assert_int_equal(p.order[i], i);
    free_plan(&p);
}

static void test_empty(void **state)
{
    (void)state;
    int32_t ids[1] = {3}, order[1] = {UNTOUCHED}, seg_start[2] = {UNTOUCHED, UNTOUCHED};
    int32_t seg_id[1] = {UNTOUCHED};
    int64_t nseg = -1;
    assert_int_equal(sj_embedding_bwd_plan(ids, 0, order, seg_start, seg_id, &nseg), SSMJIT_OK);
    assert_int_equal(nseg, 0);
    assert_int_equal(seg_start[0], 0);
    assert_int_equal(seg_start[1], UNTOUCHED);
    assert_int_equal(order[0], UNTOUCHED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_ids),
        cmocka_unit_test(test_extreme_ids),
        cmocka_unit_test(test_patterns),
        cmocka_unit_test(test_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
