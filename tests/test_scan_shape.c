/* The forward scan's launch shape for every N from 1 to 256, across batch
 * sizes, channel counts and devices from 1 to 132 SMs, automatic and
 * forced: it must cover the N states with no empty group and stay within
 * the kernels' thread bounds, 256 (128 with 4 states a thread; a shape
 * past them fails to launch, which only a GPU would otherwise show). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "context.h"
#include "ops_scan.h"
#include "test_util.h"

static void check(const ssmjit_context *ctx, int64_t B, int64_t D, int64_t N)
{
    sj_scan_fwd_shape f = sj_scan_fwd_shape_for(ctx, B, D, N);
    if (!(f.ns == 4 || f.ns == 8 || f.ns == 16) || f.groups < 1 || (int64_t)f.groups * f.ns < N ||
        (int64_t)(f.groups - 1) * f.ns >= N || f.bd < 16 || f.bd > sj_scan_fwd_max_bd(f.ns) ||
        (f.bd & (f.bd - 1)) || f.groups * f.bd > sj_scan_fwd_max_threads(f.ns) ||
        !(f.buffers == 1 || f.buffers == 2) || f.out != 1)
        fail_msg("B=%lld D=%lld N=%lld on %d SMs: %d states a thread, %d groups, %d channels a block, %d buffers",
                 (long long)B, (long long)D, (long long)N, ctx->props.sm_count, f.ns, f.groups, f.bd, f.buffers);
}

static void test_every_n(void **state)
{
    (void)state;
    ssmjit_context ctx;
    memset(&ctx, 0, sizeof ctx);
    static const int sms[] = {1, 16, 132};
    static const int64_t batches[] = {1, 2, 8, 64}, dims[] = {1, 37, 1536, 4096, 100000};
    static const int forced[][3] = {{0, 0, 0}, {4, 0, 0}, {8, 0, 1}, {16, 0, 2}, {0, 16, 0},
                                    {0, 128, 0}, {4, 32, 1}, {4, 64, 0}, {16, 128, 0}};
    for (size_t k = 0; k < sizeof forced / sizeof *forced; k++) {
        sj_scan_force_shape(forced[k][0], forced[k][1], forced[k][2]);
        for (size_t s = 0; s < sizeof sms / sizeof *sms; s++) {
            ctx.props.sm_count = sms[s];
            for (size_t b = 0; b < sizeof batches / sizeof *batches; b++)
                for (size_t d = 0; d < sizeof dims / sizeof *dims; d++)
                    for (int64_t n = 1; n <= 256; n++)
                        check(&ctx, batches[b], dims[d], n);
        }
    }
    sj_scan_force_shape(0, 0, 0);
}

/* The choices bench/NOTES.md measured: 8 states a thread and 128 channels
 * a block at the reference shape, 4 states a thread and 32 channels a
 * block at mamba-130m's. */
static void test_measured_choices(void **state)
{
    (void)state;
    ssmjit_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.props.sm_count = 132;
    sj_scan_fwd_shape f = sj_scan_fwd_shape_for(&ctx, 8, 4096, 16);
    assert_int_equal(f.ns, 8);
    assert_int_equal(f.bd, 128);
    f = sj_scan_fwd_shape_for(&ctx, 8, 1536, 16);
    assert_int_equal(f.ns, 4);
    assert_int_equal(f.bd, 32);
}

/* On a device that allows a block 64 KB of shared memory (sm_75) every
 * automatic shape up to N = 176 fits it (README), past that only shapes
 * already 16 channels wide do not (the launch then reports the sizes);
 * with 227 KB (sm_90) the shapes above stay as measured. */
static void test_shared_memory_cap(void **state)
{
    (void)state;
    ssmjit_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.props.sm_count = 40;
    ctx.props.max_smem_per_block_optin = 64 * 1024;
    static const int64_t batches[] = {1, 8, 64}, dims[] = {37, 1536, 4096};
    for (size_t b = 0; b < sizeof batches / sizeof *batches; b++)
        for (size_t d = 0; d < sizeof dims / sizeof *dims; d++)
            for (int64_t n = 1; n <= 256; n++) {
                sj_scan_fwd_shape f = sj_scan_fwd_shape_for(&ctx, batches[b], dims[d], n);
                unsigned bytes = sj_scan_fwd_smem_bytes(&f);
                if (bytes > 64 * 1024 && f.bd != 16)
                    fail_msg("B=%lld D=%lld N=%lld: %u bytes at %d channels a block", (long long)batches[b],
                             (long long)dims[d], (long long)n, bytes, f.bd);
                if (n <= 176 && bytes > 64 * 1024)
                    fail_msg("N=%lld does not fit 64 KB: %u bytes", (long long)n, bytes);
            }
    ctx.props.sm_count = 132;
    ctx.props.max_smem_per_block_optin = 232448;
    sj_scan_fwd_shape f = sj_scan_fwd_shape_for(&ctx, 8, 4096, 16);
    assert_int_equal(f.bd, 128);
    assert_true(sj_scan_fwd_smem_bytes(&f) > 64 * 1024);
}

/* A backward block, with its static part, fits the 99 KB a block of
 * sm_86 / sm_89 in every dtype (README): its f32 block is within 2 KB of
 * that. */
static void test_backward_shared_memory(void **state)
{
    (void)state;
    static const ssmjit_dtype dtypes[] = {SSMJIT_F32, SSMJIT_F16, SSMJIT_BF16};
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
        if (sj_scan_bwd_smem_bytes(dtypes[i]) + 16 > 101376)
            fail_msg("dtype %d: %u bytes", (int)dtypes[i], sj_scan_bwd_smem_bytes(dtypes[i]));
}

/* Two stage buffers where the kernel's resident blocks hold them: on an
 * H200 (228 KB an SM) at both measured shapes; on a device of 100 KB an
 * SM (sm_86, sm_89) one at those shapes, where one still lets the
 * kernel's blocks share an SM; every automatic shape there fits a block,
 * and two buffers only where they fit the kernel's blocks an SM. */
static void test_stage_buffers(void **state)
{
    (void)state;
    ssmjit_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.props.sm_count = 132;
    ctx.props.max_smem_per_block_optin = 232448;
    ctx.props.max_smem_per_sm = 233472;
    assert_int_equal(sj_scan_fwd_shape_for(&ctx, 8, 4096, 16).buffers, 2);
    assert_int_equal(sj_scan_fwd_shape_for(&ctx, 8, 1536, 16).buffers, 2);
    ctx.props.sm_count = 84;
    ctx.props.max_smem_per_block_optin = 101376;
    ctx.props.max_smem_per_sm = 102400;
    sj_scan_fwd_shape f = sj_scan_fwd_shape_for(&ctx, 8, 4096, 16);
    assert_int_equal(f.ns, 8);
    assert_int_equal(f.buffers, 1);
    assert_true((sj_scan_fwd_smem_bytes(&f) + 1024) * 2 <= 102400);
    f = sj_scan_fwd_shape_for(&ctx, 8, 1536, 16);
    assert_int_equal(f.ns, 8);
    assert_int_equal(f.buffers, 1);
    assert_true((sj_scan_fwd_smem_bytes(&f) + 1024) * 2 <= 102400);
    f = sj_scan_fwd_shape_for(&ctx, 2, 1536, 16);
    assert_int_equal(f.ns, 4);
    assert_int_equal(f.buffers, 1);
    assert_true((sj_scan_fwd_smem_bytes(&f) + 1024) * 3 <= 102400);
    static const int64_t batches[] = {1, 8, 64}, dims[] = {37, 1536, 4096};
    for (size_t b = 0; b < sizeof batches / sizeof *batches; b++)
        for (size_t d = 0; d < sizeof dims / sizeof *dims; d++)
            for (int64_t n = 1; n <= 256; n++) {
                f = sj_scan_fwd_shape_for(&ctx, batches[b], dims[d], n);
                const unsigned bytes = sj_scan_fwd_smem_bytes(&f);
                const int blocks = sj_scan_fwd_min_blocks(f.ns);
                if (bytes > 101376u || (f.buffers == 2 && (bytes + 1024u) * blocks > 102400u))
                    fail_msg("B=%lld D=%lld N=%lld: %d states a thread, %d buffers, %u bytes",
                             (long long)batches[b], (long long)dims[d], (long long)n, f.ns, f.buffers, bytes);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_n),
        cmocka_unit_test(test_measured_choices),
        cmocka_unit_test(test_shared_memory_cap),
        cmocka_unit_test(test_backward_shared_memory),
        cmocka_unit_test(test_stage_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
