/* The forward scan's launch shape for every N from 1 to 256, across batch
 * sizes, channel counts and devices from 1 to 132 SMs, automatic and
 * forced: it must cover the N states with no empty group and stay within
 * the kernels' thread bounds, 256 (128 with 4 states a thread; a shape
 * past them fails to launch, which only a GPU would otherwise show). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A context of no device (sj_context_alloc: zeroed, its locks made);
 * ssmjit_context_destroy frees it. */
static ssmjit_context *blank(void)
{
    ssmjit_context *ctx = sj_context_alloc();
    assert_non_null(ctx);
    return ctx;
}

/* An H200 as the driver reports it. */
static ssmjit_context *h200(void)
{
    ssmjit_context *ctx = blank();
    ctx->props.sm_count = 132;
    ctx->props.max_threads_per_sm = 2048;
    ctx->props.max_smem_per_block_optin = 232448;
    ctx->props.max_smem_per_sm = 233472;
    return ctx;
}

static void test_every_n(void **state)
{
    (void)state;
    ssmjit_context *ctx = blank();
    static const int sms[] = {1, 16, 132};
    static const int64_t batches[] = {1, 2, 8, 64}, dims[] = {1, 37, 1536, 4096, 100000};
    static const int forced[][3] = {{0, 0, 0}, {4, 0, 0}, {8, 0, 1}, {16, 0, 2}, {0, 16, 0},
                                    {0, 128, 0}, {4, 32, 1}, {4, 64, 0}, {16, 128, 0}};
    for (size_t k = 0; k < sizeof forced / sizeof *forced; k++) {
        sj_scan_force_shape(forced[k][0], forced[k][1], forced[k][2]);
        for (size_t s = 0; s < sizeof sms / sizeof *sms; s++) {
            ctx->props.sm_count = sms[s];
            for (size_t b = 0; b < sizeof batches / sizeof *batches; b++)
                for (size_t d = 0; d < sizeof dims / sizeof *dims; d++)
                    for (int64_t n = 1; n <= 256; n++)
                        check(ctx, batches[b], dims[d], n);
        }
    }
    sj_scan_force_shape(0, 0, 0);
    ssmjit_context_destroy(ctx);
}


/* The fastest variant bench/NOTES.md measured at each of these shapes (N =
 * 16, B sequences of D channels on an H200), which the automatic choice
 * must be: at the reference shape 8 states a thread and 128 channels a
 * block, at mamba-130m's D = 1536 4 and 32, one stage buffer where it
 * lets an SM hold more blocks. */
static void test_measured_choices(void **state)
{
    (void)state;
    ssmjit_context *ctx = h200();
    static const struct {
        int64_t B, D;
        int ns, bd, buffers;
    } measured[] = {
        {8, 4096, 8, 128, 2},  {16, 4096, 8, 128, 2}, {4, 4096, 8, 64, 2}, {1, 4096, 4, 32, 2},
        {64, 1536, 8, 128, 2}, {16, 1536, 8, 64, 1},  {8, 1536, 4, 32, 2}, {1, 1536, 4, 32, 2},
    };
    for (size_t i = 0; i < sizeof measured / sizeof *measured; i++) {
        const sj_scan_fwd_shape f = sj_scan_fwd_shape_for(ctx, measured[i].B, measured[i].D, 16);
        if (f.ns != measured[i].ns || f.bd != measured[i].bd || f.buffers != measured[i].buffers)
            fail_msg("B=%lld D=%lld: %d states a thread, %d channels a block, %d buffers; measured fastest %d, %d, %d",
                     (long long)measured[i].B, (long long)measured[i].D, f.ns, f.bd, f.buffers, measured[i].ns,
                     measured[i].bd, measured[i].buffers);
    }
    ssmjit_context_destroy(ctx);
}

/* On a device that allows a block 64 KB of shared memory (sm_75) every
 * automatic shape up to N = 176 fits it (README), past that only shapes
 * already 16 channels wide do not (the launch then reports the sizes);
 * with 227 KB (sm_90) the shapes above stay as measured. */
static void test_shared_memory_cap(void **state)
{
    (void)state;
    ssmjit_context *ctx = blank();
    ctx->props.sm_count = 40;
    ctx->props.max_smem_per_block_optin = 64 * 1024;
    static const int64_t batches[] = {1, 8, 64}, dims[] = {37, 1536, 4096};
    for (size_t b = 0; b < sizeof batches / sizeof *batches; b++)
        for (size_t d = 0; d < sizeof dims / sizeof *dims; d++)
            for (int64_t n = 1; n <= 256; n++) {
                sj_scan_fwd_shape f = sj_scan_fwd_shape_for(ctx, batches[b], dims[d], n);
                unsigned bytes = sj_scan_fwd_smem_bytes(&f);
                if (bytes > 64 * 1024 && f.bd != 16)
                    fail_msg("B=%lld D=%lld N=%lld: %u bytes at %d channels a block", (long long)batches[b],
                             (long long)dims[d], (long long)n, bytes, f.bd);
                if (n <= 176 && bytes > 64 * 1024)
                    fail_msg("N=%lld does not fit 64 KB: %u bytes", (long long)n, bytes);
            }
    ssmjit_context_destroy(ctx);
    ctx = h200();
    sj_scan_fwd_shape f = sj_scan_fwd_shape_for(ctx, 8, 4096, 16);
    assert_int_equal(f.bd, 128);
    assert_true(sj_scan_fwd_smem_bytes(&f) > 64 * 1024);
    ssmjit_context_destroy(ctx);
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

/* Two stage buffers where they cost an SM none of the blocks the grid
 * gives it (up to those the kernel is compiled for and one buffer would
 * leave room for): on an H200 (228 KB an SM) at both reference shapes; on
 * a device of 100 KB an SM (sm_86, sm_89) one at the reference shape,
 * where two would leave room for one block; there every automatic shape
 * fits a block. */
static void test_stage_buffers(void **state)
{
    (void)state;
    ssmjit_context *ctx = h200();
    assert_int_equal(sj_scan_fwd_shape_for(ctx, 8, 4096, 16).buffers, 2);
    assert_int_equal(sj_scan_fwd_shape_for(ctx, 8, 1536, 16).buffers, 2);
    ctx->props.sm_count = 84;
    ctx->props.max_threads_per_sm = 1536;
    ctx->props.max_smem_per_block_optin = 101376;
    ctx->props.max_smem_per_sm = 102400;
    sj_scan_fwd_shape f = sj_scan_fwd_shape_for(ctx, 8, 4096, 16);
    assert_int_equal(f.ns, 8);
    assert_int_equal(f.buffers, 1);
    assert_true((sj_scan_fwd_smem_bytes(&f) + 1024) * 2 <= 102400);
    static const int64_t batches[] = {1, 8, 64}, dims[] = {37, 1536, 4096};
    for (size_t b = 0; b < sizeof batches / sizeof *batches; b++)
        for (size_t d = 0; d < sizeof dims / sizeof *dims; d++)
            for (int64_t n = 1; n <= 256; n++) {
                f = sj_scan_fwd_shape_for(ctx, batches[b], dims[d], n);
                const unsigned bytes = sj_scan_fwd_smem_bytes(&f);
                const int64_t given = (batches[b] * ((dims[d] + f.bd - 1) / f.bd) + 83) / 84;
                sj_scan_fwd_shape one = f;
                one.buffers = 1;
                const int64_t room = 102400 / (sj_scan_fwd_smem_bytes(&one) + 1024);
                int64_t held = given < sj_scan_fwd_min_blocks(f.ns) ? given : sj_scan_fwd_min_blocks(f.ns);
                held = held < room ? held : room;
                if (bytes > 101376u || (f.buffers == 2 && (bytes + 1024u) * held > 102400u))
                    fail_msg("B=%lld D=%lld N=%lld: %d states a thread, %d channels, %d buffers, %u bytes",
                             (long long)batches[b], (long long)dims[d], (long long)n, f.ns, f.bd, f.buffers, bytes);
            }
    ssmjit_context_destroy(ctx);
}

/* A split's expected segments: forced (0: the rule's choice), dtype, B,
 * L, D (N 16), with a checkpoint, backward; segments. */
typedef struct split_want {
    int forced;
    ssmjit_dtype dtype;
    int64_t B, L, D;
    int checkpoint, backward;
    int64_t segments;
} split_want;

static void check_splits(ssmjit_context *ctx, const split_want *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sj_scan_force_split(w[i].forced);
        const int64_t S =
            sj_scan_split_segments(ctx, w[i].dtype, w[i].B, w[i].L, w[i].D, 16, w[i].checkpoint, w[i].backward);
        if (S != w[i].segments)
            fail_msg("forced %d, %s, B=%lld L=%lld D=%lld%s%s: %lld segments, not %lld", w[i].forced,
                     w[i].dtype == SSMJIT_F32 ? "f32" : "bf16", (long long)w[i].B, (long long)w[i].L,
                     (long long)w[i].D, w[i].checkpoint ? ", checkpoint" : "", w[i].backward ? ", backward" : "",
                     (long long)S, (long long)w[i].segments);
    }
    sj_scan_force_split(0);
}

/* The split over L of the forward and backward on an H200: where one or
 * few sequences leave SMs idle, or keep each thread on too many tokens
 * (the forward splits 1 x 8192 x 5120, whose grid gives every SM a
 * block: 0.750 ms unsplit, 0.635 in 16 segments, f32), and not where
 * more rows keep the GPU busy (8 x 2048 x 1536, 4 x 8192 x 2048), nor
 * where the token-parallel forward runs first (1 x 128 x 1536), nor on a
 * GPU of one SM,
 * nor in segments shorter than 32 tokens (64 in the backward, but for
 * whole segments of at least a chunk whose blocks all run at once, as at
 * 1 x 128 x 1536) or (several rows) uneven ones; a forced split wherever
 * it can be made. */
static void test_split_choices(void **state)
{
    (void)state;
    ssmjit_context *ctx = h200();
    static const struct {
        int64_t B, L, D;
        int split, bwd_split;
    } shapes[] = {
        {1, 16384, 1536, 1, 1}, {1, 2048, 768, 1, 1},  {1, 16384, 4096, 1, 1},
        {2, 2048, 1536, 1, 1},  {1, 5000, 1536, 1, 1}, {8, 2048, 4096, 0, 0}, {8, 2048, 1536, 0, 0},
        {64, 256, 1536, 0, 0},  {16, 1024, 1536, 0, 0}, {1, 100, 1536, 0, 0},  {3, 4099, 64, 0, 0},
        {1, 0, 1536, 0, 0},     {1, 4096, 2560, 1, 1}, {1, 16384, 768, 1, 1},  {1, 8192, 5120, 1, 1},
        {4, 8192, 2048, 0, 0},  {1, 128, 1536, 0, 1},
    };
    /* the forward without and with a checkpoint, then the backward; f32
     * and bf16 (their models differ) */
    static const char *const calls[] = {"forward", "forward with checkpoint", "backward"};
    for (int k = 0; k < 6; k++)
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
            const int call = k % 3, bwd = call == 2;
            const int64_t B = shapes[i].B, L = shapes[i].L;
            const ssmjit_dtype dtype = k < 3 ? SSMJIT_F32 : SSMJIT_BF16;
            const int64_t S = sj_scan_split_segments(ctx, dtype, B, L, shapes[i].D, 16, call > 0, bwd);
            const int64_t Ls = S > 1 ? (call ? L / S / 16 * 16 : L / S) : L;
            /* the backward's segments under 64 tokens: at least a chunk,
             * whole, their blocks (64 channels each) two an SM at most */
            const int short_ok = S * Ls == L && Ls >= 16 && B * S * ((shapes[i].D + 63) / 64) <= 264;
            if ((S > 1) != (bwd ? shapes[i].bwd_split : shapes[i].split) || S < 1 || S > 64 ||
                (S > 1 && Ls < (bwd ? 64 : 32) && !(bwd && short_ok)) || (S > 1 && B > 1 && S * Ls != L))
                fail_msg("B=%lld L=%lld D=%lld %s, %s: %lld segments", (long long)B, (long long)L,
                         (long long)shapes[i].D, dtype == SSMJIT_F32 ? "f32" : "bf16", calls[call], (long long)S);
        }
    /* one model of the split serves both dtypes (1 x 2048 x 5120 in 16
     * segments: f32 0.168 ms against 0.193 unsplit, bf16 0.168 against
     * 0.191); they differ where the token-parallel forward can run, which
     * runs first in f32 up to 256 tokens a row and in bf16 up to 512, a
     * split above (one H100, tests/data/scan_split_h100.txt: 1 x 512 x
     * 1536 f32 in 8 segments 0.0252 ms against 0.0304, bf16 0.0226 against
     * 0.0249 in 8; 1 x 1024 x 1536 bf16 in 8 segments 0.0371 against
     * 0.0378; 1 x 512 x 768 f32 in 16 segments 0.0200 against 0.0211) */
    static const split_want by_dtype[] = {
        {0, SSMJIT_F32, 1, 2048, 5120, 0, 0, 16}, {0, SSMJIT_BF16, 1, 2048, 5120, 0, 0, 16},
        {0, SSMJIT_F32, 2, 4096, 2560, 0, 0, 16}, {0, SSMJIT_BF16, 2, 4096, 2560, 0, 0, 16},
        {0, SSMJIT_F32, 1, 2048, 1536, 0, 0, 16}, {0, SSMJIT_BF16, 1, 2048, 1536, 0, 0, 16},
        {0, SSMJIT_F32, 1, 1024, 1536, 0, 0, 8},  {0, SSMJIT_BF16, 1, 1024, 1536, 0, 0, 8},
        {0, SSMJIT_F32, 1, 512, 1536, 0, 0, 8},   {0, SSMJIT_BF16, 1, 512, 1536, 0, 0, 1},
        {0, SSMJIT_F32, 1, 512, 768, 0, 0, 16},   {0, SSMJIT_F32, 1, 256, 1536, 0, 0, 1},
    };
    check_splits(ctx, by_dtype, sizeof by_dtype / sizeof *by_dtype);
    ctx->props.sm_count = 1;
    assert_int_equal(sj_scan_split_segments(ctx, SSMJIT_F32, 1, 16384, 1536, 16, 0, 0), 1);
    ssmjit_context_destroy(ctx);
    /* forced: 5 segments wherever they can be made (several rows: only
     * evenly; with a checkpoint, and in the backward: whole chunks); 1:
     * none */
    static const split_want forced[] = {
        {5, SSMJIT_F32, 1, 12, 1536, 0, 0, 5}, {5, SSMJIT_F32, 2, 15, 8, 0, 0, 5},
        {5, SSMJIT_F32, 2, 12, 8, 0, 0, 1},    {5, SSMJIT_F32, 1, 4, 8, 0, 0, 1},
        {5, SSMJIT_F32, 1, 80, 8, 1, 0, 5},    {5, SSMJIT_F32, 1, 79, 8, 1, 0, 1},
        {5, SSMJIT_F32, 2, 160, 8, 1, 0, 5},   {5, SSMJIT_F32, 2, 150, 8, 1, 0, 1},
        {5, SSMJIT_F32, 1, 80, 8, 0, 1, 5},    {5, SSMJIT_F32, 1, 79, 8, 0, 1, 1},
        {5, SSMJIT_F32, 2, 150, 8, 1, 1, 1},   {1, SSMJIT_F32, 1, 16384, 1536, 0, 0, 1},
    };
    ctx = h200();
    check_splits(ctx, forced, sizeof forced / sizeof *forced);
    ssmjit_context_destroy(ctx);
}

/* Shapes whose splits differ, in both directions, and what a context
 * that has seen nothing else chooses for each. */
static const struct {
    ssmjit_dtype dtype;
    int64_t B, L, D;
    int ckpt, bwd;
} memo_shapes[] = {
    {SSMJIT_F32, 1, 16384, 1536, 0, 0}, {SSMJIT_F32, 1, 2048, 1536, 0, 0},  {SSMJIT_F32, 8, 2048, 4096, 0, 0},
    {SSMJIT_F32, 1, 2048, 1536, 1, 0},  {SSMJIT_F32, 1, 16384, 1536, 0, 1}, {SSMJIT_F32, 1, 2048, 1536, 0, 1},
    {SSMJIT_F32, 1, 512, 1536, 0, 1},   {SSMJIT_F32, 1, 16384, 768, 1, 1},  {SSMJIT_F32, 1, 512, 1536, 0, 0},
    {SSMJIT_BF16, 1, 512, 1536, 0, 0},
};
#define MEMO_SHAPES (sizeof memo_shapes / sizeof *memo_shapes)

static int64_t memo_ask(ssmjit_context *ctx, size_t i)
{
    return sj_scan_split_segments(ctx, memo_shapes[i].dtype, memo_shapes[i].B, memo_shapes[i].L, memo_shapes[i].D, 16,
                                  memo_shapes[i].ckpt, memo_shapes[i].bwd);
}

typedef struct {
    ssmjit_context *ctx;
    const int64_t *want;
    size_t first;
    int wrong;
} memo_worker;

static void *memo_work(void *arg)
{
    memo_worker *w = arg;
    for (size_t k = 0; k < 4000; k++) {
        const size_t i = (w->first + k * (w->first + 1)) % MEMO_SHAPES;
        w->wrong += memo_ask(w->ctx, i) != w->want[i];
    }
    return NULL;
}

/* The context keeps each direction's last split: asked again, after
 * other shapes, or by several threads at once, it answers what a context
 * that has seen nothing else does. */
static void test_split_memo(void **state)
{
    (void)state;
    int64_t want[MEMO_SHAPES];
    int splits = 0;
    for (size_t i = 0; i < MEMO_SHAPES; i++) {
        ssmjit_context *fresh = h200();
        want[i] = memo_ask(fresh, i);
        splits += want[i] > 1;
        ssmjit_context_destroy(fresh);
    }
    assert_true(splits >= 4 && splits < (int)MEMO_SHAPES); /* the shapes tell the memo's entries apart */
    assert_int_not_equal(want[MEMO_SHAPES - 2], want[MEMO_SHAPES - 1]); /* and the dtype (bf16: token-parallel) */
    ssmjit_context *ctx = h200();
    for (size_t k = 0; k < 3 * MEMO_SHAPES; k++) {
        const size_t i = (k * 5) % MEMO_SHAPES;
        assert_int_equal(memo_ask(ctx, i), want[i]);
        assert_int_equal(memo_ask(ctx, i), want[i]);
    }
    memo_worker w[4];
    pthread_t t[4];
    for (size_t k = 0; k < 4; k++) {
        w[k] = (memo_worker){ctx, want, k, 0};
        assert_int_equal(pthread_create(&t[k], NULL, memo_work, &w[k]), 0);
    }
    for (size_t k = 0; k < 4; k++) {
        assert_int_equal(pthread_join(t[k], NULL), 0);
        assert_int_equal(w[k].wrong, 0);
    }
    ssmjit_context_destroy(ctx);
}

/* Point i of the sweep's grid B: B in {1, 2, 4, 8, 16, 64} x L in {128,
 * 512, 1024, 2048, 8192, 16384} x D in {768, 1536, 2048, 4096, 5120}. */
#define GRID_B_POINTS (6 * 6 * 5)
static void grid_b_point(int i, int64_t *B, int64_t *L, int64_t *D)
{
    static const int64_t Bs[] = {1, 2, 4, 8, 16, 64}, Ls[] = {128, 512, 1024, 2048, 8192, 16384},
                         Ds[] = {768, 1536, 2048, 4096, 5120};
    *B = Bs[i / 30];
    *L = Ls[i / 5 % 6];
    *D = Ds[i % 5];
}

/* The forward's path at every point of the sweep's grid B (B 1-64, L
 * 128-16384, D 768-5120, N 16) on an H200, in f32 and bf16, and at N 17,
 * with packed sequences and forced: the token-parallel kernel exactly
 * where the rule (sj_scan_fwd_token_parallel) says, where the token-serial
 * grid leaves SMs without a block and its own blocks fit four an SM;
 * unsplit in f32 up to 256 tokens a row, in bf16 up to 512; and no
 * point left unsplit to a token-serial grid that leaves
 * half the SMs without a block, the slow path of one sequence (with or
 * without a checkpoint). */
static void test_forward_paths(void **state)
{
    (void)state;
    ssmjit_context *ctx = h200();
    int tp = 0, split = 0, full = 0;
    for (int i = 0; i < GRID_B_POINTS; i++) {
        int64_t B, L, D;
        grid_b_point(i, &B, &L, &D);
        const sj_scan_fwd_shape f = sj_scan_fwd_shape_for(ctx, B, D, 16);
        const int64_t blocks = B * ((D + f.bd - 1) / f.bd), tp_blocks = B * ((D + 3) / 4);
        const int filled = blocks >= ctx->props.sm_count;
        const int parallel = sj_scan_fwd_is_token_parallel(ctx, B, L, D, 16, 0);
        if (parallel != (!filled && tp_blocks <= 4 * ctx->props.sm_count))
            fail_msg("B=%lld L=%lld D=%lld: token-parallel %d", (long long)B, (long long)L, (long long)D,
                     parallel);
        for (int v = 0; v < 4; v++) {
            const int ck = v & 1;
            const ssmjit_dtype dtype = v & 2 ? SSMJIT_BF16 : SSMJIT_F32;
            const int64_t S = sj_scan_split_segments(ctx, dtype, B, L, D, 16, ck, 0);
            /* the token-parallel kernel first up to 256 tokens a row (f32)
             * or 512 (16-bit), a split or it above */
            const int tp_first = L <= (dtype == SSMJIT_F32 ? 256 : 512);
            if (parallel ? tp_first && S != 1 : 2 * blocks < ctx->props.sm_count && S < 2)
                fail_msg("B=%lld L=%lld D=%lld %s%s: token-parallel %d, %lld segments, %lld blocks of "
                         "%d channels",
                         (long long)B, (long long)L, (long long)D, dtype == SSMJIT_F32 ? "f32" : "bf16",
                         ck ? " with checkpoint" : "", parallel, (long long)S, (long long)blocks, f.bd);
        }
        tp += parallel;
        split += !parallel && !filled;
        full += filled;
    }
    print_message("grid B: %d token-parallel, %d token-serial on grids that leave SMs idle, %d on grids that fill the "
                  "GPU\n", tp, split, full);
    assert_true(tp > 0 && split > 0 && full > 0);
    /* where it cannot run: N > 16, packed sequences; and forced */
    assert_true(sj_scan_fwd_is_token_parallel(ctx, 1, 512, 1536, 16, 0));
    assert_false(sj_scan_fwd_is_token_parallel(ctx, 1, 512, 1536, 17, 0));
    assert_false(sj_scan_fwd_is_token_parallel(ctx, 1, 512, 1536, 16, 1));
    sj_scan_force_fwd_kernel(1);
    assert_false(sj_scan_fwd_is_token_parallel(ctx, 1, 512, 1536, 16, 0));
    /* the token-serial path then splits (bench/NOTES.md: 8 segments
     * 0.036 ms f32, unsplit 0.050) */
    assert_int_equal(sj_scan_split_segments(ctx, SSMJIT_F32, 1, 512, 1536, 16, 0, 0), 8);
    sj_scan_force_fwd_kernel(2);
    assert_true(sj_scan_fwd_is_token_parallel(ctx, 64, 16384, 5120, 16, 0));
    assert_false(sj_scan_fwd_is_token_parallel(ctx, 1, 512, 1536, 17, 0));
    sj_scan_force_fwd_kernel(0);
    ssmjit_context_destroy(ctx);
}

/* The backward's split at every point of grid B on an H200: within its
 * bounds (at most 64 segments, each at least a chunk of 16 tokens, under
 * 64 only whole and with the split's blocks at most two an SM), and no
 * sequence of 128 tokens or more left unsplit on a grid that fills under
 * a quarter of the SMs (one sequence of 512 at D = 1536 ran 0.175 ms
 * unsplit, 0.061 in 8 segments; of 128, 0.052 and 0.032). */
static void test_backward_paths(void **state)
{
    (void)state;
    ssmjit_context *ctx = h200();
    int split = 0;
    for (int i = 0; i < 2 * GRID_B_POINTS; i++) {
        int64_t B, L, D;
        grid_b_point(i % GRID_B_POINTS, &B, &L, &D);
        const ssmjit_dtype dtype = i < GRID_B_POINTS ? SSMJIT_F32 : SSMJIT_BF16;
        const int64_t blocks = B * ((D + 63) / 64);
        const int64_t S = sj_scan_split_segments(ctx, dtype, B, L, D, 16, 1, 1), Ls_ = L / S / 16 * 16;
        const int bounded = S >= 1 && S <= 64 &&
                            (S == 1 || (Ls_ >= 64 && (B == 1 || S * Ls_ == L)) ||
                             (Ls_ >= 16 && S * Ls_ == L && S * blocks <= 2 * ctx->props.sm_count));
        if (!bounded || (S == 1 && L >= 128 && 4 * blocks < ctx->props.sm_count))
            fail_msg("B=%lld L=%lld D=%lld %s: backward in %lld segments of %lld tokens, %lld blocks a "
                     "segment",
                     (long long)B, (long long)L, (long long)D, dtype == SSMJIT_F32 ? "f32" : "bf16", (long long)S,
                     (long long)Ls_, (long long)blocks);
        split += S > 1;
    }
    print_message("grid B: the backward splits at %d of %d points (f32 and bf16)\n", split, 2 * GRID_B_POINTS);
    ssmjit_context_destroy(ctx);
}

/* The split rule against every split timed after it was last fitted
 * (tests/data/scan_split_h100.txt: one H100, whose SMs and shared memory
 * are those h200() models; 304 points of B 1-8, L 128-16384, D
 * 768-5120, f32 and bf16, forward and backward, each split S = 1 .. 32
 * or 64): at each point the rule's choice, split or not, was timed, and
 * ran within 6% of the fastest timed (at worst 4.6% in the forward, 2 x
 * 8192 x 768 f32 in the model's 64 segments against 16, and 5.9% in the
 * backward, 8 x 16384 x 1536 f32 unsplit against 32 segments, when
 * fitted; bench/NOTES.md, "Scan shapes, round 17").  A change to the
 * model that strays further from the measurements fails here. */
static void test_split_against_timings(void **state)
{
    (void)state;
    const char *data = getenv("SSMJIT_TEST_DATA");
    assert_non_null(data);
    char path[4096];
    snprintf(path, sizeof path, "%s/scan_split_h100.txt", data);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    ssmjit_context *ctx = h200();
    /* the file lists each point's splits together */
    long long B, L, D, S, pB = 0, pL = 0, pD = 0;
    char dtype[8], dir[8], pdtype[8] = "", pdir[8] = "", line[256];
    double ms, best = 0, chosen = 0, worst = 0;
    int points = 0;
    int64_t want = 0;
    for (int more = 1; more;) {
        more = fgets(line, sizeof line, f) != NULL;
        if (more && line[0] == '#')
            continue;
        if (more)
            assert_int_equal(sscanf(line, "%lld %lld %lld %7s %7s %lld %lf", &B, &L, &D, dtype, dir, &S, &ms), 7);
        const int same = more && B == pB && L == pL && D == pD && !strcmp(dtype, pdtype) && !strcmp(dir, pdir);
        if (!same && points++) {
            /* the point just read through */
            if (chosen <= 0 || chosen > 1.06 * best)
                fail_msg("B=%lld L=%lld D=%lld %s %s: the rule's %lld segments %s, the fastest %.4f ms", pB, pL,
                         pD, pdtype, pdir, (long long)want, chosen > 0 ? "ran slower" : "were not timed", best);
            worst = chosen / best > worst ? chosen / best : worst;
        }
        if (!more)
            break;
        if (!same) {
            const int bwd = !strcmp(dir, "bwd");
            want = sj_scan_split_segments(ctx, !strcmp(dtype, "f32") ? SSMJIT_F32 : SSMJIT_BF16, B, L, D, 16, bwd, bwd);
            best = ms;
            chosen = 0;
            pB = B, pL = L, pD = D;
            snprintf(pdtype, sizeof pdtype, "%s", dtype);
            snprintf(pdir, sizeof pdir, "%s", dir);
        }
        best = ms < best ? ms : best;
        if (S == want)
            chosen = ms;
    }
    fclose(f);
    print_message("%d timed points: the rule's choice at most %.1f%% slower than the fastest\n", points - 1,
                  100 * (worst - 1));
    assert_int_equal(points - 1, 304);
    ssmjit_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_n),
        cmocka_unit_test(test_measured_choices),
        cmocka_unit_test(test_shared_memory_cap),
        cmocka_unit_test(test_backward_shared_memory),
        cmocka_unit_test(test_stage_buffers),
        cmocka_unit_test(test_split_choices),
        cmocka_unit_test(test_split_memo),
        cmocka_unit_test(test_forward_paths),
        cmocka_unit_test(test_backward_paths),
        cmocka_unit_test(test_split_against_timings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
