/* The table of which kernels each op may launch (ssmjit_context_prepare,
 * the model's load): every name in it is a unit for every dtype, together
 * they reach every unit (a kernel no op launches would be dead), each op's
 * are its own family's, and a mamba model's are exactly those it launches
 * for its shape.  No GPU, no NVRTC: names only. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "toolchain.h"
#include "context.h"
#include "gpu_util.h"
#include "model.h"
#include "ops_prepare.h"
#include "ops_scan.h"
#include "scan_internal.h"

typedef struct {
    int count[SJ_UNIT_COUNT];
    char names[4096];
} visits;

static void visit(size_t u, void *arg)
{
    visits *v = arg;
    v->count[u]++;
    if (v->names[0])
        strncat(v->names, ",", sizeof v->names - strlen(v->names) - 1);
    strncat(v->names, sj_units[u].kernel, sizeof v->names - strlen(v->names) - 1);
}

/* The units a model of c with options o queues on ctx (NULL: any
 * device), by name into v. */
static void model_units(const ssmjit_context *ctx, const ssmjit_model_config *c, const ssmjit_model_options *o, visits *v)
{
    memset(v, 0, sizeof *v);
    assert_int_equal(sj_model_units(ctx, c, o, visit, v), SSMJIT_OK);
}

static void test_every_unit_once(void **state)
{
    (void)state;
    visits *v = calloc(1, sizeof *v);
    assert_int_equal(sj_op_units(SJ_OP_EVERY, SSMJIT_DTYPES_ALL, NULL, NULL, visit, v), SSMJIT_OK);
    /* specialised units are compiled by the model that uses them, with
     * its sizes: no op names them */
    for (size_t u = 0; u < SJ_UNIT_COUNT; u++)
        if (v->count[u] != !sj_modules[sj_units[u].module].specialised)
            fail_msg("unit %s of %s is reached %d times", sj_units[u].kernel, sj_modules[sj_units[u].module].name,
                     v->count[u]);
    free(v);
}

/* Each op, each dtype on its own: only kernels of that dtype (or of none). */
static void test_op_by_op(void **state)
{
    (void)state;
    static const char *const sfx[] = {"f32", "f16", "bf16"};
    for (unsigned op = 1; op != 0 && op <= SJ_OP_EVERY; op <<= 1) {
        if (!(op & SJ_OP_EVERY))
            continue;
        for (int d = 0; d < 3; d++) {
            visits *v = calloc(1, sizeof *v);
            assert_int_equal(sj_op_units(op, SSMJIT_DTYPE_BIT(d), NULL, NULL, visit, v), SSMJIT_OK);
            /* the skinny GEMMs are 16-bit only */
            assert_int_equal(v->names[0] != '\0', op != SJ_OP_GEMM || d != SSMJIT_F32);
            for (char *t = strtok(v->names, ","); t; t = strtok(NULL, ",")) {
                int mentions = 0;
                for (int e = 0; e < 3; e++) {
                    char part[16];
                    snprintf(part, sizeof part, "_%s", sfx[e]);
                    const char *at = strstr(t, part);
                    if (at && (at[strlen(part)] == '_' || at[strlen(part)] == '\0'))
                        mentions |= 1 << e;
                }
                /* of this dtype first, or of none; f32 also names the
                 * residual stream and the f32-only helpers */
                if (mentions && !(mentions & (1 << d)) && !(mentions == 1))
                    fail_msg("op 0x%x for %s reaches %s", op, sfx[d], t);
            }
            free(v);
        }
    }
}

/* Default options but for what to prepare. */
static ssmjit_model_options prepare_opts(ssmjit_model_prepare what)
{
    ssmjit_model_options o;
    ssmjit_model_options_init(&o);
    o.prepare = what;
    return o;
}

static void test_model_units(void **state)
{
    (void)state;
    ssmjit_model_config c = {.struct_size = sizeof c, .d_model = 768, .d_inner = 1536, .d_state = 16, .d_conv = 4, .dt_rank = 48,
                             .n_layer = 24, .vocab_size = 50280, .norm_eps = 1e-5, .tie_embeddings = 1,
                             .residual_in_fp32 = 1};
    const ssmjit_model_options inference = prepare_opts(SSMJIT_MODEL_PREPARE_INFERENCE),
                               training = prepare_opts(SSMJIT_MODEL_PREPARE_TRAINING),
                               none = prepare_opts(SSMJIT_MODEL_PREPARE_NONE);
    visits *v = calloc(1, sizeof *v);
    model_units(NULL, &c, &inference, v);
    assert_string_equal(v->names, "rmsnorm_fwd_cached_bf16_f32,rmsnorm_fwd_stream_bf16_f32,conv_fwd_t4_v4_bf16,"
                                  "conv_fwd_t8_v1_bf16,conv_update_t4_bf16,scan_fwd_ns4_bf16,scan_fwd_ns8_bf16,"
                                  "scan_fwd_ns16_bf16,scan_fwd_tp4_bf16,scan_fwd_tp8_bf16,scan_split_ends_bf16,"
                                  "scan_split_carry,state_update_bf16,embedding_fwd_bf16_f32,argmax_rows_bf16,conv_state_fill_bf16,neg_exp_f32,"
                                  "gemm_skinny_m16_bf16_bf16");
    /* a bf16 residual stream and a wide conv */
    c.residual_in_fp32 = 0;
    c.d_conv = 6;
    model_units(NULL, &c, &training, v);
    assert_string_equal(v->names, "rmsnorm_fwd_cached_bf16_bf16,rmsnorm_fwd_stream_bf16_bf16,"
                                  "rmsnorm_bwd_cached_bf16_bf16,rmsnorm_bwd_stream_bf16_bf16,rmsnorm_dweight,"
                                  "conv_fwd_t8_v4_bf16,conv_fwd_t8_v1_bf16,conv_bwd_t8_v2_bf16,conv_bwd_t8_v1_bf16,"
                                  "conv_bwd_reduce,conv_update_t8_bf16,scan_fwd_ns4_bf16,scan_fwd_ns8_bf16,"
                                  "scan_fwd_ns16_bf16,scan_fwd_tp4_bf16,scan_fwd_tp8_bf16,scan_split_ends_bf16,"
                                  "scan_split_carry,scan_bwd_bf16,"
                                  "scan_bwd_reduce_bc_bf16,scan_bwd_reduce_params,scan_states_ns8_bf16,scan_split_ends_bf16,"
                                  "scan_split_carry,scan_split_starts,state_update_bf16,"
                                  "embedding_fwd_bf16_bf16,argmax_rows_bf16,conv_state_fill_bf16,neg_exp_f32,"
                                  "embedding_bwd_bf16,cross_entropy_bf16,cross_entropy_sum,mul_f32,"
                                  "gemm_skinny_m16_bf16_bf16");
    model_units(NULL, &c, &none, v);
    assert_string_equal(v->names, "");
    /* no projection of this shape is in the skinny GEMMs' table */
    c.d_model = 512;
    c.d_inner = 1024;
    c.dt_rank = 32;
    model_units(NULL, &c, &inference, v);
    assert_null(strstr(v->names, "gemm_skinny"));
    assert_non_null(strstr(v->names, "state_update_bf16"));
    free(v);
}

/* On a device, the forward scan's kernels are those its launch shapes
 * take: an H200's (132 SMs) at mamba-130m's D = 1536 and N = 16 never
 * takes 16 states a thread, whatever the batch.  Told the largest calls,
 * the model queues what they take: one short prompt only the 4-token
 * token-parallel kernel (its load waited for the token-serial ones,
 * bench/NOTES.md); one long prompt, whose split's segments are rows of
 * the token-serial kernels, those too, both token-parallel forms and the
 * split's kernels; a training step of 100 tokens the split's kernels,
 * since its backward can split.  A prompt that the token-parallel kernel
 * takes never splits up to 512 tokens in 16-bit types and 256 in f32,
 * though its segments could be as short as 32 tokens. */
static void test_model_units_on_a_device(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_stand_in_context();
    ssmjit_model_config c = {.struct_size = sizeof c, .d_model = 768, .d_inner = 1536, .d_state = 16, .d_conv = 4, .dt_rank = 48,
                             .n_layer = 24, .vocab_size = 50280, .norm_eps = 1e-5, .tie_embeddings = 1,
                             .residual_in_fp32 = 1};
    const sj_scan_fwd_kernels any = sj_scan_fwd_kernels_for(ctx, SSMJIT_BF16, 1536, 16, 0, 0, 0);
    assert_int_equal(any.states, (1u << 4) | (1u << 8));
    assert_int_equal(any.tp_tokens, (1u << 4) | (1u << 8));
    assert_true(any.split);
    ssmjit_model_options o = prepare_opts(SSMJIT_MODEL_PREPARE_INFERENCE);
    visits *v = calloc(1, sizeof *v);
    model_units(ctx, &c, &o, v);
    assert_non_null(strstr(v->names, "scan_fwd_ns4_bf16,scan_fwd_ns8_bf16,scan_fwd_tp4_bf16,scan_fwd_tp8_bf16,scan_split_ends_bf16,"
                                     "scan_split_carry"));
    assert_null(strstr(v->names, "ns16"));
    /* many states: 16 a thread */
    assert_true(sj_scan_fwd_kernels_for(ctx, SSMJIT_BF16, 1536, 256, 0, 0, 0).states & (1u << 16));

    o.max_batch = 1;
    o.max_tokens = 100;
    model_units(ctx, &c, &o, v);
    assert_non_null(strstr(v->names, ",conv_update_t4_bf16,scan_fwd_tp4_bf16,state_update_bf16,"));
    assert_null(strstr(v->names, "scan_split"));
    for (o.max_tokens = 256; o.max_tokens <= 512; o.max_tokens *= 2) {
        model_units(ctx, &c, &o, v);
        assert_non_null(strstr(v->names, "scan_fwd_tp8_bf16"));
        assert_null(strstr(v->names, "scan_fwd_ns"));
        assert_null(strstr(v->names, "scan_split"));
    }
    o.max_tokens = 512;
    o.dtype = SSMJIT_F32;
    model_units(ctx, &c, &o, v);
    assert_non_null(strstr(v->names, "scan_fwd_tp8_f32"));
    assert_non_null(strstr(v->names, "scan_fwd_ns4_f32"));
    assert_non_null(strstr(v->names, "scan_split_ends_f32"));
    o.dtype = SSMJIT_BF16;
    o.max_tokens = 2048;
    model_units(ctx, &c, &o, v);
    assert_non_null(strstr(v->names, "scan_fwd_ns4_bf16,scan_fwd_ns8_bf16,scan_fwd_tp4_bf16,scan_fwd_tp8_bf16,scan_split_ends_bf16,"
                                     "scan_split_carry"));
    o.prepare = SSMJIT_MODEL_PREPARE_TRAINING;
    o.max_tokens = 100;
    model_units(ctx, &c, &o, v);
    assert_non_null(strstr(v->names, ",scan_fwd_tp4_bf16,scan_split_ends_bf16,"));
    assert_null(strstr(v->names, "scan_fwd_ns"));
    assert_null(strstr(v->names, "scan_fwd_tp8"));
    /* at 64 sequences of 100 tokens the grid fills the GPU: token-serial */
    o.prepare = SSMJIT_MODEL_PREPARE_INFERENCE;
    o.max_batch = 64;
    model_units(ctx, &c, &o, v);
    assert_non_null(strstr(v->names, "scan_fwd_ns"));
    free(v);
    ssmjit_context_destroy(ctx);
}

/* What the forward launches for a call (its kernel, whether it splits),
 * against what a model told a largest call at least as large queues. */
static void check_call_covered(ssmjit_context *ctx, int64_t B, int64_t L, int64_t D, ssmjit_dtype dtype, int ck,
                               const sj_scan_fwd_kernels *k, int64_t Bh, int64_t Lh)
{
    const int64_t S = sj_scan_split_segments(ctx, dtype, B, L, D, 16, ck, 0),
                  S_bwd = sj_scan_split_segments(ctx, dtype, B, L, D, 16, 1, 1);
    int ok = S <= sj_scan_split_most(L, 0) && S_bwd <= sj_scan_split_most(L, 1) && (S == 1 || k->split),
        ns = 0, tp = 0;
    if (S == 1 && sj_scan_fwd_is_token_parallel(ctx, B, L, D, 16, 0)) {
        sj_scan_extents sh = {0};
        sh.B = B;
        sh.L = L;
        sh.D = D;
        sh.N = 16;
        tp = sj_scan_fwd_tp_tokens(ctx, &sh);
        ok = ok && (k->tp_tokens >> tp & 1);
    } else {
        ns = sj_scan_fwd_shape_for(ctx, B * S, D, 16).ns;
        ok = ok && (k->states >> ns & 1);
    }
    if (!ok)
        fail_msg("B=%lld L=%lld D=%lld %s%s (told %lld x %lld): %lld segments (most %lld), token-parallel %d, "
                 "%d states a thread; queued states 0x%x, tokens 0x%x, split %d",
                 (long long)B, (long long)L, (long long)D, dtype == SSMJIT_F32 ? "f32" : "bf16", ck ? " ck" : "",
                 (long long)Bh, (long long)Lh, (long long)S, (long long)sj_scan_split_most(L, 0), tp, ns, k->states,
                 k->tp_tokens, k->split);
}

/* Whatever forward a model's largest calls allow, its kernels are among
 * those the model queued: at each B, L and D of a grid, f32 and bf16,
 * with and without a checkpoint, told each largest call of the grid at
 * least as large, the forward's kernel (token-parallel, or token-serial
 * over B rows or B times the split's segments) and the split's are
 * queued; and the split's segments are at most sj_scan_split_most's,
 * forward and backward. */
static void test_kernels_cover_the_calls(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_stand_in_context();
    static const int64_t Bs[] = {1, 2, 3, 4, 8, 16, 64},
                         Ls[] = {1, 63, 64, 65, 127, 128, 129, 256, 257, 512, 513, 2048, 16384},
                         Ds[] = {200, 768, 1536, 2048, 4096, 5120};
    const int nb = (int)(sizeof Bs / sizeof *Bs), nl = (int)(sizeof Ls / sizeof *Ls);
    int checked = 0;
    for (size_t d = 0; d < sizeof Ds / sizeof *Ds; d++)
        for (int bh = 0; bh < nb; bh++)
            for (int lh = 0; lh < nl; lh++) {
                for (int t = 0; t < 2; t++) {
                    const ssmjit_dtype dtype = t ? SSMJIT_BF16 : SSMJIT_F32;
                    const sj_scan_fwd_kernels k = sj_scan_fwd_kernels_for(ctx, dtype, Ds[d], 16, Bs[bh], Ls[lh], 0);
                    for (int b = 0; b <= bh; b++)
                        for (int l = 0; l <= lh; l++)
                            for (int ck = 0; ck < 2; ck++, checked++)
                                check_call_covered(ctx, Bs[b], Ls[l], Ds[d], dtype, ck, &k, Bs[bh], Ls[lh]);
                }
            }
    print_message("%d calls covered\n", checked);
    assert_int_equal(sj_scan_split_most(63, 0), 1);
    assert_int_equal(sj_scan_split_most(64, 0), 2);
    assert_int_equal(sj_scan_split_most(31, 1), 1);
    assert_int_equal(sj_scan_split_most(32, 1), 2);
    assert_int_equal(sj_scan_split_most(INT64_MAX, 0), 64);
    ssmjit_context_destroy(ctx);
}

/* The decode step's rule (model.h): the fused kernels for one or two
 * sequences of a model up to d_model 2048 whose matrices all start 16-byte
 * aligned, the hybrid step above that up to its most (every dtype's), else
 * the unfused step; forcing overrides it, within what the fused kernels
 * can stage. */
static void test_decode_rule(void **state)
{
    (void)state;
    ssmjit_model m;
    memset(&m, 0, sizeof m);
    m.cfg = (ssmjit_model_config){.struct_size = sizeof m.cfg, .d_model = 768, .d_inner = 1536, .d_state = 16,
                                  .d_conv = 4, .dt_rank = 48, .n_layer = 3, .vocab_size = 50280,
                                  .tie_embeddings = 1};
    m.layer_base = 3;
    m.decode_force = -1;
    m.t = calloc((size_t)(3 + m.cfg.n_layer * SJ_L_COUNT), sizeof *m.t);
    for (int64_t i = 0; i < 3 + m.cfg.n_layer * SJ_L_COUNT; i++)
        m.t[i].data = (CUdeviceptr)(0x100000 + i * 0x1000);
    m.t[SJ_G_EMBEDDING].shape[0] = m.cfg.vocab_size;
    /* hybrid up to its most, in every dtype */
    static const ssmjit_dtype dtypes[] = {SSMJIT_F32, SSMJIT_F16, SSMJIT_BF16};
    for (int d = 0; d < 3; d++) {
        m.dtype = dtypes[d];
        for (int64_t B = 1; B <= 100; B++)
            assert_int_equal(sj_model_decode_path(&m, B), B <= SJ_DECODE_FUSED_MAX_BATCH     ? SJ_DECODE_FUSED
                                                           : B <= SJ_DECODE_HYBRID_MAX_BATCH ? SJ_DECODE_HYBRID
                                                                                             : SJ_DECODE_UNFUSED);
    }
    /* the hybrid kernels read x_proj element by element */
    sj_model_layer_tensor(&m, 1, SJ_L_X_PROJ)->data += 8;
    assert_int_equal(sj_model_decode_path(&m, 1), SJ_DECODE_UNFUSED);
    assert_int_equal(sj_model_decode_path(&m, 3), SJ_DECODE_HYBRID);
    sj_model_layer_tensor(&m, 1, SJ_L_X_PROJ)->data += 8;
    assert_int_equal(sj_model_decode_path(&m, 1), SJ_DECODE_FUSED);
    m.cfg.d_model = 2048;
    m.cfg.d_inner = 4096;
    assert_int_equal(sj_model_decode_path(&m, 1), SJ_DECODE_FUSED);
    m.cfg.d_model = 2560;
    m.cfg.d_inner = 5120;
    assert_int_equal(sj_model_decode_path(&m, 1), SJ_DECODE_UNFUSED);
    assert_int_equal(sj_model_decode_path(&m, 64), SJ_DECODE_UNFUSED);
    assert_int_equal(sj_model_decode_force(&m, SJ_DECODE_FUSED), SSMJIT_OK);
    assert_int_equal(sj_model_decode_path(&m, 64), SJ_DECODE_FUSED);
    assert_int_equal(sj_model_decode_force(&m, SJ_DECODE_HYBRID), SSMJIT_OK);
    assert_int_equal(sj_model_decode_path(&m, 1), SJ_DECODE_HYBRID);
    assert_int_equal(sj_model_decode_force(&m, SJ_DECODE_UNFUSED), SSMJIT_OK);
    assert_int_equal(sj_model_decode_path(&m, 1), SJ_DECODE_UNFUSED);
    assert_int_equal(sj_model_decode_force(&m, 3), SSMJIT_ERR_INVALID_ARG);
    m.cfg.d_inner = 20000;
    assert_int_equal(sj_model_decode_force(&m, SJ_DECODE_FUSED), SSMJIT_ERR_UNSUPPORTED);
    assert_int_equal(sj_model_decode_force(&m, SJ_DECODE_HYBRID), SSMJIT_ERR_UNSUPPORTED);
    assert_int_equal(sj_model_decode_force(&m, -1), SSMJIT_OK);
    assert_int_equal(sj_model_decode_path(&m, 1), SJ_DECODE_UNFUSED);
    free(m.t);
}

static void count_compile(const ssmjit_compile_event *ev, void *user)
{
    if (ev->done && ev->status == SSMJIT_OK)
        ++*(int *)user;
}

/* A model's fused decode kernels queued ahead of need (twice, as two
 * models of one shape would) and then loaded compile once each; the load
 * compiles before it needs the driver, and failing there (this stand-in
 * context has none) leaves nothing loaded.  Needs NVRTC. */
static void test_decode_prepared_once(void **state)
{
    (void)state;
    sj_toolchain tc;
    if (sj_toolchain_get(NULL, 1, &tc) != SSMJIT_OK)
        skip();
    ssmjit_context *ctx = gu_stand_in_context();
    int compiles = 0;
    ctx->owner.on_compile = count_compile;
    ctx->owner.user = &compiles;
    /* sizes no other test compiles, so that nothing comes from memory */
    ssmjit_model_config c = {.struct_size = sizeof c, .d_model = 136, .d_inner = 272, .d_state = 8, .d_conv = 4,
                             .dt_rank = 9, .n_layer = 2, .vocab_size = 321, .norm_eps = 1e-5, .tie_embeddings = 1,
                             .residual_in_fp32 = 1};
    assert_int_equal(sj_model_decode_prepare(ctx, &c, SSMJIT_F16), SSMJIT_OK);
    assert_int_equal(sj_model_decode_prepare(ctx, &c, SSMJIT_F16), SSMJIT_OK);
    /* the load's own list: a define or name that differs compiles anew */
    sj_special_kernel k[SJ_DECODE_KERNELS];
    static const char *const names[] = {"decode_in_f16",   "decode_mix_f16",   "decode_out_f16",  "decode_head_f16",
                                        "decode_convx_f16", "decode_norm_f16", "decode_mix1_f16", "decode_tcx_f16",
                                        "decode_tcin_f16",  "decode_tcout_f16"};
    _Static_assert(sizeof names / sizeof *names == SJ_DECODE_KERNELS, "every kernel of a 16-bit model");
    /* the last: the tensor-core kernels' blocks for these sizes (model_decode.c's tc_plans) */
    static const char *const defines[] = {"SJ_DEC_D_MODEL=136", "SJ_DEC_D_INNER=272", "SJ_DEC_DT_RANK=9",
                                          "SJ_DEC_D_STATE=8",   "SJ_DEC_D_CONV=4",    "SJ_DEC_VOCAB=321",
                                          "SJ_DEC_RES_F32=1",   "SJ_DEC_TC=4,8,128256,4,2,30720,4,2,51200"};
    ssmjit_status st = sj_special_load(ctx, SJ_MODULE_DECODE, SJ_ROLE_FORWARD, names, SJ_DECODE_KERNELS, defines,
                                       8, k);
    assert_int_not_equal(st, SSMJIT_OK);
    assert_int_equal(compiles, SJ_DECODE_KERNELS);
    for (int i = 0; i < SJ_DECODE_KERNELS; i++)
        assert_null(k[i].fn);
    /* a module that is not specialised is refused */
    assert_int_equal(sj_special_request(ctx, SJ_MODULE_ELEMENTWISE, SJ_ROLE_FORWARD, names, 1, defines, 8),
                     SSMJIT_ERR_INTERNAL);
    ssmjit_context_destroy(ctx);
}

/* The mix part's launch: a block a sequence while the grid fits the
 * blocks the SMs hold at once, then the fewest sequences a block that fit,
 * never more than decode_mix takes; every sequence in some row. */
static void test_decode_mix_plan(void **state)
{
    (void)state;
    static const struct {
        int64_t d_inner, d_state, sms, batch;
        int kernel;
        unsigned cols, rows;
    } cases[] = {
        /* the 130m shape on 132 SMs: 24 blocks a row, 264 at once */
        {1536, 16, 132, 1, SJ_DECODE_MIX1, 24, 1},
        {1536, 16, 132, 8, SJ_DECODE_MIX1, 24, 8},
        {1536, 16, 132, 11, SJ_DECODE_MIX1, 24, 11},
        {1536, 16, 132, 12, SJ_DECODE_MIX, 24, 6},
        {1536, 16, 132, 32, SJ_DECODE_MIX, 24, 11},
        {1536, 16, 132, 64, SJ_DECODE_MIX, 24, 11},
        {1536, 16, 132, 100, SJ_DECODE_MIX, 24, 17}, /* no count fits: six a block */
        /* the 1.4b shape: 64 a row */
        {4096, 16, 132, 1, SJ_DECODE_MIX1, 64, 1},
        {4096, 16, 132, 8, SJ_DECODE_MIX, 64, 4},
        /* a state of 12 (not a power of two of fours): a lane a channel */
        {1000, 12, 20, 10, SJ_DECODE_MIX1, 4, 10},
        {1000, 12, 20, 11, SJ_DECODE_MIX, 4, 6},
        /* the rows stop at the grid's 65535; the kernel strides past them */
        {16, 16, 1, 1000000, SJ_DECODE_MIX, 1, 65535},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const ssmjit_model_config c = {.d_inner = cases[i].d_inner, .d_state = cases[i].d_state};
        sj_dim3 grid = {0, 0, 0};
        assert_int_equal(sj_model_decode_mix_plan(&c, cases[i].sms, cases[i].batch, &grid), cases[i].kernel);
        assert_int_equal(grid.x, cases[i].cols);
        assert_int_equal(grid.y, cases[i].rows);
        assert_int_equal(grid.z, 1);
    }
    /* every batch the fused and hybrid steps take: every sequence has a
     * row, a block takes at most what its kernel does */
    for (int64_t B = 1; B <= SJ_DECODE_HYBRID_MAX_BATCH; B++) {
        const ssmjit_model_config c = {.d_inner = 1536, .d_state = 16};
        sj_dim3 grid;
        const int k = sj_model_decode_mix_plan(&c, 132, B, &grid);
        const int64_t seqs = sj_ceil_div(B, grid.y);
        assert_true(seqs <= (k == SJ_DECODE_MIX1 ? 1 : SJ_DECODE_MIX_SEQS));
        assert_true(seqs * grid.y >= B && (seqs - 1) * grid.y < B);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_unit_once),
        cmocka_unit_test(test_op_by_op),
        cmocka_unit_test(test_model_units),
        cmocka_unit_test(test_model_units_on_a_device),
        cmocka_unit_test(test_kernels_cover_the_calls),
        cmocka_unit_test(test_decode_rule),
        cmocka_unit_test(test_decode_mix_plan),
        cmocka_unit_test(test_decode_prepared_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
