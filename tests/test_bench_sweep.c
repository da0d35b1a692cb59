/* The host side of `ssmjit bench --sweep` (tools/bench_util.c, linked in
 * here): its shapes (grid A in the order; grid B after it, each
 * point once), the scan's byte floor, how many input sets a timing
 * rotates over, which shapes --only picks, and the strides of a model's
 * layout (--scan-layout model). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "bench.h"
#include "gpu_util.h"
#include "ssmjit_internal.h"

static const bench_scan_shape grid_a[] = {
    {8, 2048, 4096}, {4, 8192, 2048}, {8, 2048, 1536}, {16, 256, 1536}, {64, 128, 2048},
    {1, 128, 1536},  {1, 512, 1536},  {1, 2048, 1536}, {1, 8192, 5120}, {1, 16384, 1536},
};
#define NA ((int)(sizeof grid_a / sizeof *grid_a))

static int same(bench_scan_shape x, bench_scan_shape y) { return x.b == y.b && x.l == y.l && x.d == y.d; }

static void test_grid_a(void **state)
{
    (void)state;
    bench_scan_shape out[NA + 1];
    const bench_scan_shape guard = {-1, -1, -1};
    out[NA] = guard;
    assert_int_equal(bench_sweep_shapes(0, NULL, 0), NA);
    assert_int_equal(bench_sweep_shapes(0, out, NA + 1), NA);
    for (int i = 0; i < NA; i++)
        assert_true(same(out[i], grid_a[i]));
    assert_true(same(out[NA], guard));
    /* a short buffer takes the first shapes and no more */
    out[3] = guard;
    assert_int_equal(bench_sweep_shapes(0, out, 3), NA);
    assert_true(same(out[2], grid_a[2]) && same(out[3], guard));
}

static void test_grid_b(void **state)
{
    (void)state;
    static const int64_t bs[] = {1, 2, 4, 8, 16, 64}, ls[] = {128, 512, 1024, 2048, 8192, 16384},
                         ds[] = {768, 1536, 2048, 4096, 5120};
    enum { NB = 6 * 6 * 5, MAX = NA + NB };
    bench_scan_shape out[MAX];
    const int n = bench_sweep_shapes(1, out, MAX);
    /* every point of grid A is in grid B but (16, 256, 1536): L = 256 is not */
    assert_int_equal(n, NA + NB - (NA - 1));
    assert_int_equal(bench_sweep_shapes(1, NULL, 0), n);
    for (int i = 0; i < NA; i++)
        assert_true(same(out[i], grid_a[i]));
    /* each point of grid B once, in order (D fastest), after grid A */
    int k = NA;
    for (int b = 0; b < 6; b++)
        for (int l = 0; l < 6; l++)
            for (int d = 0; d < 5; d++) {
                const bench_scan_shape p = {bs[b], ls[l], ds[d]};
                int in_a = 0;
                for (int i = 0; i < NA; i++)
                    in_a += same(p, grid_a[i]);
                if (in_a)
                    continue;
                assert_true(k < n);
                assert_true(same(out[k], p));
                k++;
            }
    assert_int_equal(k, n);
}

static void test_floor_bytes(void **state)
{
    (void)state;
    /* B=8 L=2048 D=4096 N=16; the checkpoint B * ceil(L / 16) * D * N * 4 */
    const bench_scan_shape s = {8, 2048, 4096};
    const size_t ckpt = (size_t)8 * 128 * 4096 * 16 * 4;
    const double act16 = 8.0 * 2048 * 4096 * 2, bc16 = 8.0 * 2048 * 16 * 2;
    assert_true(bench_scan_floor_bytes(s, 16, 2, BENCH_SCAN_FWD, ckpt) == 4 * act16 + 2 * bc16);
    assert_true(bench_scan_floor_bytes(s, 16, 2, BENCH_SCAN_FWD, 0) == 537919488.0);
    assert_true(bench_scan_floor_bytes(s, 16, 2, BENCH_SCAN_FWD_CKPT, ckpt) == 537919488.0 + 268435456.0);
    assert_true(bench_scan_floor_bytes(s, 16, 2, BENCH_SCAN_BWD, ckpt) == 7 * act16 + 4 * bc16 + (double)ckpt);
    assert_true(bench_scan_floor_bytes(s, 16, 2, BENCH_SCAN_BWD, ckpt) == 1210056704.0);
    /* f32: every activation twice as large, the checkpoint the same */
    assert_true(bench_scan_floor_bytes(s, 16, 4, BENCH_SCAN_BWD, ckpt) == 2 * (7 * act16 + 4 * bc16) + (double)ckpt);
    /* one token of one channel */
    const bench_scan_shape one = {1, 1, 1};
    assert_true(bench_scan_floor_bytes(one, 1, 4, BENCH_SCAN_FWD, 64) == 4 * 4 + 2 * 4);
    assert_true(bench_scan_floor_bytes(one, 1, 4, BENCH_SCAN_BWD, 64) == 7 * 4 + 4 * 4 + 64);
}

/* The path each call takes, as the library chooses it on an H200 (a
 * stand-in context) and as forced: the split where the rule splits, the
 * token-parallel forward where it runs first, else unsplit. */
static void test_paths(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_stand_in_context();
    static const struct {
        bench_scan_shape s;
        ssmjit_dtype dtype;
        bench_scan_dir dir;
        const char *path;
    } cases[] = {
        {{1, 2048, 1536}, SSMJIT_F32, BENCH_SCAN_FWD, "split 16"},
        {{1, 2048, 1536}, SSMJIT_BF16, BENCH_SCAN_BWD, "split 32"},
        {{1, 128, 1536}, SSMJIT_BF16, BENCH_SCAN_FWD, "tp"},
        {{1, 128, 1536}, SSMJIT_BF16, BENCH_SCAN_FWD_CKPT, "tp"},
        {{1, 128, 1536}, SSMJIT_F32, BENCH_SCAN_BWD, "split 8"},
        {{8, 2048, 4096}, SSMJIT_BF16, BENCH_SCAN_FWD, "unsplit"},
        {{8, 2048, 4096}, SSMJIT_F32, BENCH_SCAN_BWD, "unsplit"},
    };
    char path[16];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        bench_scan_path(ctx, cases[i].s, 16, cases[i].dtype, cases[i].dir, path, sizeof path);
        assert_string_equal(path, cases[i].path);
    }
    sj_scan_force_split(4);
    bench_scan_path(ctx, (bench_scan_shape){8, 2048, 4096}, 16, SSMJIT_F32, BENCH_SCAN_FWD, path, sizeof path);
    assert_string_equal(path, "split 4");
    sj_scan_force_split(1);
    bench_scan_path(ctx, (bench_scan_shape){1, 2048, 1536}, 16, SSMJIT_F32, BENCH_SCAN_BWD, path, sizeof path);
    assert_string_equal(path, "unsplit");
    sj_scan_force_split(0);
    ssmjit_context_destroy(ctx);
}

static void test_rotations(void **state)
{
    (void)state;
    const double mib = 1 << 20;
    assert_int_equal(bench_rotations(120 * mib, 25), 1);
    assert_int_equal(bench_rotations(1e12, 25), 1);
    assert_int_equal(bench_rotations(60 * mib, 25), 2);
    assert_int_equal(bench_rotations(59 * mib, 25), 3);
    assert_int_equal(bench_rotations(50 * mib, 4), 3);
    assert_int_equal(bench_rotations(10 * mib, 4), 4);
    assert_int_equal(bench_rotations(1.5 * mib, 25), 25);
    assert_int_equal(bench_rotations(1, 1), 1);
}

/* --only TEXT with --sweep: the shapes whose name contains TEXT, one for
 * a whole name, every shape without TEXT, none for a name no shape has. */
static void test_only(void **state)
{
    (void)state;
    enum { MAX = 200 };
    bench_scan_shape out[MAX];
    const int n = bench_sweep_shapes(1, out, MAX);
    char name[80];
    bench_scan_shape_name(out[6], name, sizeof name);
    assert_string_equal(name, "B=1 L=512 D=1536");
    int one = 0, l1024 = 0, all = 0, none = 0;
    for (int i = 0; i < n; i++) {
        one += bench_sweep_wanted(out[i], "B=1 L=512 D=1536");
        l1024 += bench_sweep_wanted(out[i], "L=1024 D=1536");
        all += bench_sweep_wanted(out[i], NULL);
        none += bench_sweep_wanted(out[i], "B=1 L=512 D=15360");
    }
    assert_int_equal(one, 1);
    assert_int_equal(l1024, 6); /* B 1, 2, 4, 8, 16, 64 */
    assert_int_equal(all, n);
    assert_int_equal(none, 0);
}

/* The strides a model hands the scan (bench_scan_layout_of): B and C
 * columns dt_rank and dt_rank + N of x_proj's output (mamba-130m: 48 and
 * 64 of 80), z the second half of in_proj's; by default each tensor its
 * own, from column 0. */
static void test_layout(void **state)
{
    (void)state;
    const bench_scan_layout own = bench_scan_layout_of(0, 1536, 16), m130 = bench_scan_layout_of(1, 1536, 16),
                            m1b4 = bench_scan_layout_of(1, 4096, 16), odd = bench_scan_layout_of(1, 200, 4);
    assert_true(own.bc_width == 16 && own.b_col == 0 && own.c_col == 0 && own.z_width == 1536 && own.z_col == 0);
    assert_true(m130.bc_width == 80 && m130.b_col == 48 && m130.c_col == 64 && m130.z_width == 3072 &&
                m130.z_col == 1536);
    /* mamba-1.4b: d_model 2048, dt_rank 128 */
    assert_true(m1b4.bc_width == 160 && m1b4.b_col == 128 && m1b4.c_col == 144 && m1b4.z_width == 8192 &&
                m1b4.z_col == 4096);
    /* d_model 100: dt_rank ceil(100 / 16) = 7 */
    assert_true(odd.bc_width == 15 && odd.b_col == 7 && odd.c_col == 11 && odd.z_width == 400 && odd.z_col == 200);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid_a),
        cmocka_unit_test(test_grid_b),
        cmocka_unit_test(test_only),
        cmocka_unit_test(test_floor_bytes),
        cmocka_unit_test(test_rotations),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
