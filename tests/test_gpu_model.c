/* The Mamba model on the GPU against the double reference of
 * tests/ref_model.c (which is itself checked against finite differences):
 * prefill logits and states, decode steps against prefill, training
 * gradients of every weight, determinism, a checkpoint loaded from disk,
 * and argument errors.  Weights are the reference's random ones, written
 * into the model's tensors (and rounded there, so the reference sees
 * exactly the GPU's weights). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "model.h"
#include "ops_scan.h"
#include "ref_model.h"
#include "st_util.h"
#include "test_util.h"

#define F32_TOL 1e-5  /* logits and states, f32 without fast math */
#define GRAD_TOL 1e-4 /* weight gradients, f32 */
#define BF16_TOL 1e-2 /* logits of a bf16 model */

typedef struct fixture {
    ssmjit_context *ctx;
    ssmjit_model *model;
    ref_mamba ref;
    ssmjit_dtype dtype;
} fixture;

static ref_mamba_cfg small_cfg(int tied)
{
    return (ref_mamba_cfg){.d_model = 64, .d_inner = 128, .d_state = 16, .d_conv = 4,
                           .dt_rank = 4, .n_layer = 2, .vocab = 97, .eps = 1e-5, .tied = tied};
}

static void upload_weight(const char *name, double *w, size_t n, void *user)
{
    fixture *f = user;
    ssmjit_tensor_info info;
    assert_int_equal(ssmjit_model_tensor(f->model, name, &info), SSMJIT_OK);
    size_t numel = 1;
    for (int i = 0; i < info.ndim; i++)
        numel *= (size_t)info.shape[i];
    assert_int_equal(numel, n);
    gu_upload_as(info.data, w, n, info.dtype);
}

/* A model of config rc and its reference with the same (rounded) weights
 * (skips the test without a GPU). */
static void open_fixture_cfg(fixture *f, ref_mamba_cfg rc, ssmjit_dtype dtype, int residual_in_fp32)
{
    memset(f, 0, sizeof *f);
    f->ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    f->ref = ref_mamba_random(&rc);
    ssmjit_model_config c = {.struct_size = sizeof c, (int64_t)rc.d_model, (int64_t)rc.d_inner, (int64_t)rc.d_state,
                             (int64_t)rc.d_conv, (int64_t)rc.dt_rank, (int64_t)rc.n_layer,
                             (int64_t)rc.vocab, rc.eps, rc.tied, residual_in_fp32};
    ssmjit_model_options o;
    ssmjit_model_options_init(&o);
    o.dtype = dtype;
    f->dtype = dtype;
    assert_int_equal(ssmjit_model_create(f->ctx, &c, &o, 1, &f->model), SSMJIT_OK);
    ref_mamba_foreach(&f->ref, upload_weight, f);
}

static void open_fixture(fixture *f, int tied, ssmjit_dtype dtype)
{
    open_fixture_cfg(f, small_cfg(tied), dtype, 1);
}

static void close_fixture(fixture *f)
{
    ssmjit_model_destroy(f->model);
    ref_mamba_free(&f->ref);
    ssmjit_context_destroy(f->ctx);
}

static int *random_ids(size_t n, size_t vocab)
{
    int *ids = malloc(n * sizeof *ids);
    assert_non_null(ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = (int)(tu_uniform(0, (double)vocab));
    return ids;
}

static void *workspace(ssmjit_model *m, int64_t B, int64_t L, ssmjit_model_mode mode, size_t *bytes)
{
    assert_int_equal(ssmjit_model_workspace_size(m, B, L, mode, bytes), SSMJIT_OK);
    return gu_alloc(*bytes);
}

/* Runs a forward and returns its logits (and states when asked) as doubles. */
static void forward(fixture *f, size_t B, size_t L, const int *ids, ssmjit_model_mode mode,
                    int last_only, double *logits, double *conv, double *ssm, void **ws_out)
{
    const ref_mamba_cfg *rc = &f->ref.cfg;
    size_t V = rc->vocab, nl = rc->n_layer, rows = last_only ? B : B * L;
    size_t nconv = nl * B * rc->d_inner * rc->d_conv, nssm = nl * B * rc->d_inner * rc->d_state;
    size_t bytes;
    void *ws = workspace(f->model, (int64_t)B, (int64_t)L, mode, &bytes);
    void *dlog = gu_alloc_poisoned(rows * V, f->dtype);
    void *dconv = conv ? gu_alloc_poisoned(nconv, SSMJIT_F32) : NULL;
    void *dssm = ssm ? gu_alloc_poisoned(nssm, SSMJIT_F32) : NULL;
    ssmjit_model_forward_args a = {.struct_size = sizeof a, .batch = (int64_t)B, .seqlen = (int64_t)L, .ids = ids, .mode = mode,
                                   .logits = dlog, .last_only = last_only, .conv_state = dconv,
                                   .ssm_state = dssm, .workspace = ws, .workspace_bytes = bytes};
    assert_int_equal(ssmjit_model_forward(f->model, &a, NULL), SSMJIT_OK);
    gu_download_as(logits, dlog, rows * V, f->dtype);
    if (conv)
        gu_download_as(conv, dconv, nconv, SSMJIT_F32);
    if (ssm)
        gu_download_as(ssm, dssm, nssm, SSMJIT_F32);
    gu_free(dlog);
    gu_free(dconv);
    gu_free(dssm);
    if (ws_out)
        *ws_out = ws;
    else
        gu_free(ws);
}

static void check_forward(int tied)
{
    fixture f;
    open_fixture(&f, tied, SSMJIT_F32);
    const ref_mamba_cfg *rc = &f.ref.cfg;
    size_t B = 2, L = 37, V = rc->vocab;
    size_t nconv = rc->n_layer * B * rc->d_inner * rc->d_conv;
    size_t nssm = rc->n_layer * B * rc->d_inner * rc->d_state;
    int *ids = random_ids(B * L, V);
    double *want = tu_doubles(B * L * V), *got = tu_doubles(B * L * V);
    double *wc = tu_doubles(nconv), *gc = tu_doubles(nconv), *wsm = tu_doubles(nssm), *gsm = tu_doubles(nssm);
    ref_mamba_forward(&f.ref, B, L, ids, want, wc, wsm);
    forward(&f, B, L, ids, SSMJIT_MODEL_INFERENCE, 0, got, gc, gsm, NULL);
    double e = tu_rel_err(got, want, B * L * V);
    print_message("tied %d: logits %.2e, conv_state %.2e, ssm_state %.2e\n", tied, e,
                  tu_rel_err(gc, wc, nconv), tu_rel_err(gsm, wsm, nssm));
    assert_true(e <= F32_TOL);
    assert_true(tu_rel_err(gc, wc, nconv) <= F32_TOL);
    assert_true(tu_rel_err(gsm, wsm, nssm) <= F32_TOL);

    /* every layer's scan split over L (forced: 37 segments of one token
     * each; the model splits where few long prompts leave SMs idle), in
     * a workspace that grew by the split's */
    size_t plain_bytes, split_bytes;
    assert_int_equal(ssmjit_model_workspace_size(f.model, (int64_t)B, (int64_t)L, SSMJIT_MODEL_INFERENCE,
                                                 &plain_bytes), SSMJIT_OK);
    sj_scan_force_split((int)L);
    assert_int_equal(ssmjit_model_workspace_size(f.model, (int64_t)B, (int64_t)L, SSMJIT_MODEL_INFERENCE,
                                                 &split_bytes), SSMJIT_OK);
    assert_true(split_bytes > plain_bytes);
    forward(&f, B, L, ids, SSMJIT_MODEL_INFERENCE, 0, got, gc, gsm, NULL);
    sj_scan_force_split(0);
    print_message("split: logits %.2e, ssm_state %.2e\n", tu_rel_err(got, want, B * L * V),
                  tu_rel_err(gsm, wsm, nssm));
    assert_true(tu_rel_err(got, want, B * L * V) <= F32_TOL);
    assert_true(tu_rel_err(gsm, wsm, nssm) <= F32_TOL);

    /* the last position only */
    double *last = tu_doubles(B * V), *want_last = tu_doubles(B * V);
    for (size_t b = 0; b < B; b++)
        memcpy(want_last + b * V, want + (b * L + L - 1) * V, V * sizeof *want);
    forward(&f, B, L, ids, SSMJIT_MODEL_INFERENCE, 1, last, NULL, NULL, NULL);
    assert_true(tu_rel_err(last, want_last, B * V) <= F32_TOL);
    free(last);
    free(want_last);
    free(ids);
    free(want);
    free(got);
    free(wc);
    free(gc);
    free(wsm);
    free(gsm);
    close_fixture(&f);
}

static void test_forward_tied(void **state)
{
    (void)state;
    check_forward(1);
}

static void test_forward_untied(void **state)
{
    (void)state;
    check_forward(0);
}

/* Decode buffers of one batch. */
typedef struct decoder {
    size_t B;
    void *conv, *ssm, *logits, *next, *ws;
    size_t ws_bytes;
} decoder;

static decoder decoder_open(fixture *f, size_t B)
{
    const ref_mamba_cfg *rc = &f->ref.cfg;
    decoder d = {.B = B};
    d.conv = gu_alloc(rc->n_layer * B * rc->d_inner * rc->d_conv * 4);
    d.ssm = gu_alloc(rc->n_layer * B * rc->d_inner * rc->d_state * 4);
    d.logits = gu_alloc(B * rc->vocab * ssmjit_dtype_size(f->dtype));
    d.next = gu_alloc(B * 4);
    assert_int_equal(ssmjit_model_step_workspace_size(f->model, (int64_t)B, &d.ws_bytes), SSMJIT_OK);
    d.ws = gu_alloc(d.ws_bytes);
    return d;
}

static void decoder_close(decoder *d)
{
    gu_free(d->conv);
    gu_free(d->ssm);
    gu_free(d->logits);
    gu_free(d->next);
    gu_free(d->ws);
}

/* One step; host ids, or the previous step's next ids when ids is NULL. */
static void step(fixture *f, decoder *d, const int *ids, double *logits)
{
    size_t V = f->ref.cfg.vocab;
    gu_poison(d->logits, d->B * V * ssmjit_dtype_size(f->dtype));
    ssmjit_model_step_args a = {.struct_size = sizeof a, .batch = (int64_t)d->B, .ids = ids, .ids_device = ids ? NULL : d->next,
                                .conv_state = d->conv, .ssm_state = d->ssm, .logits = d->logits,
                                .next_ids = d->next, .workspace = d->ws, .workspace_bytes = d->ws_bytes};
    assert_int_equal(ssmjit_model_step(f->model, &a, NULL), SSMJIT_OK);
    gu_download_as(logits, d->logits, d->B * V, f->dtype);
}

/* Decoding after a prefill on either path of the step (model_decode.c's
 * fused kernels, compiled for these sizes, or the unfused kernels), at
 * the batches either may take: steps from position L1 on give the full
 * forward's logits there, and next_ids their argmax. */
typedef struct decode_case {
    ssmjit_dtype dtype;
    size_t B;
    int path; /* sj_model_decode_force: -1 the rule */
    int odd;  /* 0: small_cfg; 1: d_model 200, dt_rank 13; 2: also N = 5, conv 3, nothing 16-byte;
               * 3: d_model 2048 (the largest the rule fuses), d_inner 4608, more x rows than the
               * fused in_proj has warps on any GPU of up to 288 SMs; 4: d_model 204, d_inner 408 */
    int residual_in_fp32;
} decode_case;

static ref_mamba_cfg decode_cfg(int odd)
{
    ref_mamba_cfg c = small_cfg(1);
    if (odd) {
        c.d_model = 200;
        c.d_inner = 400;
        c.dt_rank = 13;
    }
    if (odd == 2) {
        c.d_model = 201;
        c.d_inner = 402;
        c.d_state = 5;
        c.d_conv = 3;
        c.tied = 0;
    }
    if (odd == 3) {
        c.d_model = 2048;
        c.d_inner = 4608;
        c.dt_rank = 64;
    }
    if (odd == 4) {
        c.d_model = 204;
        c.d_inner = 408;
    }
    return c;
}

/* cublas: a hybrid step's in_proj and out_proj through cuBLAS
 * (sj_model_decode_tensor_cores); skew: bytes the steps' ssm_state starts
 * past a 16-byte boundary (the API asks 4-byte alignment) */
static void decode_after_prefill(const decode_case *k, int cublas, int skew)
{
    fixture f;
    open_fixture_cfg(&f, decode_cfg(k->odd), k->dtype, k->residual_in_fp32);
    assert_int_equal(sj_model_decode_force(f.model, k->path), SSMJIT_OK);
    sj_model_decode_tensor_cores(f.model, !cublas);
    const ref_mamba_cfg *rc = &f.ref.cfg;
    size_t B = k->B, L = 9, L1 = 5, V = rc->vocab;
    int *ids = random_ids(B * L, V);
    double *want = tu_doubles(B * L * V), *got = tu_doubles(B * V), *w = tu_doubles(B * V);
    ref_mamba_forward(&f.ref, B, L, ids, want, NULL, NULL);
    int *prefix = malloc(B * L1 * sizeof *prefix), *tok = malloc(B * sizeof *tok);
    int32_t *next = malloc(B * sizeof *next);
    for (size_t b = 0; b < B; b++)
        memcpy(prefix + b * L1, ids + b * L, L1 * sizeof *ids);
    decoder d = decoder_open(&f, B);
    size_t bytes;
    void *ws = workspace(f.model, (int64_t)B, (int64_t)L1, SSMJIT_MODEL_INFERENCE, &bytes);
    void *plog = gu_alloc(B * V * ssmjit_dtype_size(k->dtype));
    ssmjit_model_forward_args a = {.struct_size = sizeof a, .batch = (int64_t)B, .seqlen = (int64_t)L1, .ids = prefix,
                                   .logits = plog, .last_only = 1, .conv_state = d.conv,
                                   .ssm_state = d.ssm, .workspace = ws, .workspace_bytes = bytes};
    assert_int_equal(ssmjit_model_forward(f.model, &a, NULL), SSMJIT_OK);
    void *ssm_aligned = d.ssm;
    if (skew) { /* the prefill's states, moved to a skewed start for the steps */
        size_t n = rc->n_layer * B * rc->d_inner * rc->d_state * 4;
        void *host = malloc(n);
        gu_download(host, d.ssm, n);
        d.ssm = (char *)gu_alloc(n + 16) + skew;
        gu_upload(d.ssm, host, n);
        free(host);
    }
    double worst = 0;
    for (size_t t = L1; t < L; t++) {
        for (size_t b = 0; b < B; b++) {
            tok[b] = ids[b * L + t];
            memcpy(w + b * V, want + (b * L + t) * V, V * sizeof *w);
        }
        step(&f, &d, tok, got);
        double e = tu_rel_err(got, w, B * V);
        worst = e > worst ? e : worst;
        gu_download(next, d.next, B * sizeof *next);
        for (size_t b = 0; b < B; b++) {
            size_t best = 0;
            for (size_t v = 1; v < V; v++)
                if (got[b * V + v] > got[b * V + best])
                    best = v;
            assert_int_equal(next[b], (int)best);
        }
    }
    double tol = k->dtype == SSMJIT_F32 ? F32_TOL : BF16_TOL;
    print_message("%s B %zu path %d sizes %d residual f32 %d%s%s: worst logits error %.2e\n",
                  k->dtype == SSMJIT_F32 ? "f32" : k->dtype == SSMJIT_F16 ? "f16" : "bf16", B, k->path, k->odd,
                  k->residual_in_fp32, cublas ? " cuBLAS products" : "", skew ? " skewed states" : "", worst);
    assert_true(worst <= tol);
    if (skew) {
        gu_free((char *)d.ssm - skew);
        d.ssm = ssm_aligned;
    }
    gu_free(ws);
    gu_free(plog);
    decoder_close(&d);
    free(prefix);
    free(tok);
    free(next);
    free(ids);
    free(want);
    free(got);
    free(w);
    close_fixture(&f);
}

static void test_decode_paths(void **state)
{
    (void)state;
    static const decode_case cases[] = {
        {SSMJIT_F32, 3, -1, 0, 1},  {SSMJIT_F32, 2, -1, 0, 1},
        {SSMJIT_F32, 1, 1, 0, 1},   {SSMJIT_F32, 3, 1, 0, 1},   {SSMJIT_F32, 3, 0, 0, 1},
        {SSMJIT_F32, 64, 1, 0, 1},  {SSMJIT_F32, 100, 1, 0, 1}, {SSMJIT_F32, 100, 0, 0, 1},
        {SSMJIT_F32, 3, 1, 1, 1},   {SSMJIT_F32, 5, 1, 2, 1},   {SSMJIT_F32, 5, 0, 2, 1},
        {SSMJIT_BF16, 1, 1, 0, 1},  {SSMJIT_BF16, 3, 1, 0, 0},  {SSMJIT_BF16, 64, 1, 1, 1},
        {SSMJIT_BF16, 100, 1, 2, 0}, {SSMJIT_F16, 3, 1, 0, 1},  {SSMJIT_F16, 64, 1, 2, 1},
        {SSMJIT_F32, 3, 1, 3, 1},   {SSMJIT_BF16, 2, 1, 3, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        decode_after_prefill(&cases[i], 0, 0);
    decode_after_prefill(&(decode_case){SSMJIT_BF16, 1, 1, 0, 1}, 0, 4);
    decode_after_prefill(&(decode_case){SSMJIT_F32, 3, 0, 0, 1}, 0, 4);
}

/* The hybrid step (model_decode.c) on its own, so that a sanitizer can
 * take it alone: the rule's pick above two sequences, and forced at one.
 * A 16-bit model takes in_proj and out_proj on tensor cores where k is a
 * multiple of 8 and the rows fit (sizes 0, 1, 4's out_proj with a part
 * tile of rows, 3's in_proj), else cuBLAS (2, 3's out_proj, 4's in_proj),
 * and cuBLAS where turned off.  The mix part takes a block a sequence
 * (decode_mix1) at most cases; on 132 SMs two, three and six a block
 * (decode_mix) at size 1's 64, 100 and 200 sequences, three at size 3's
 * nine (sj_model_decode_mix_plan); six a block also with the states 4
 * bytes past a 16-byte boundary, where the mix kernels take them a float
 * at a time. */
static void test_decode_hybrid(void **state)
{
    (void)state;
    static const decode_case cases[] = {
        {SSMJIT_F32, 3, 2, 0, 1},    {SSMJIT_F32, 1, 2, 0, 1},    {SSMJIT_F32, 100, 2, 1, 1},
        {SSMJIT_F32, 5, 2, 2, 1},    {SSMJIT_BF16, 64, 2, 0, 1},  {SSMJIT_BF16, 64, 2, 1, 0},
        {SSMJIT_BF16, 100, 2, 2, 0}, {SSMJIT_F16, 64, 2, 2, 1},   {SSMJIT_F32, 9, 2, 3, 1},
        {SSMJIT_BF16, 100, 2, 1, 1}, {SSMJIT_F16, 3, 2, 0, 0},    {SSMJIT_BF16, 9, 2, 3, 1},
        {SSMJIT_F16, 70, 2, 4, 1},   {SSMJIT_BF16, 200, 2, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        decode_after_prefill(&cases[i], 0, 0);
    decode_after_prefill(&(decode_case){SSMJIT_BF16, 64, 2, 1, 0}, 1, 0);
    decode_after_prefill(&(decode_case){SSMJIT_BF16, 200, 2, 1, 1}, 0, 4);
}

/* Sampled decoding in the step: two decoders from the same states and
 * seeds draw the same tokens step after step (the graph replays read the
 * counters on the device), a row at temperature 0 is the argmax of its
 * logits, and every counter advanced once a step. */
static void test_sampled_decode(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, 1, SSMJIT_F32);
    const ref_mamba_cfg *rc = &f.ref.cfg;
    size_t B = 3, V = rc->vocab, steps = 8;
    size_t nconv = rc->n_layer * B * rc->d_inner * rc->d_conv, nssm = rc->n_layer * B * rc->d_inner * rc->d_state;
    double *zeros = calloc(nconv + nssm, sizeof *zeros), *got = tu_doubles(B * V);
    ssmjit_sampling p[3] = {{0.9f, 20, 0.9f, 0, 7}, {1.3f, 0, 1.0f, 0, 8}, {0.0f, 0, 1.0f, 0, 9}};
    void *dp = gu_alloc(sizeof p);
    gu_upload(dp, p, sizeof p);
    int32_t tokens[2][8][3];
    for (int run = 0; run < 2; run++) {
        decoder d = decoder_open(&f, B);
        gu_upload_as(d.conv, zeros, nconv, SSMJIT_F32);
        gu_upload_as(d.ssm, zeros, nssm, SSMJIT_F32);
        void *counters = gu_alloc(B * 8);
        gu_upload(counters, (uint64_t[3]){0, 0, 0}, B * 8);
        int ids[3] = {3, 50, 11};
        for (size_t s = 0; s < steps; s++) {
            gu_poison(d.logits, B * V * 4);
            ssmjit_model_step_args a = {.struct_size = sizeof a, .batch = (int64_t)B, .ids = s ? NULL : ids,
                                        .ids_device = s ? d.next : NULL, .conv_state = d.conv, .ssm_state = d.ssm,
                                        .logits = d.logits, .next_ids = d.next, .workspace = d.ws,
                                        .workspace_bytes = d.ws_bytes, .sampling = dp, .sampling_steps = counters};
            assert_int_equal(ssmjit_model_step(f.model, &a, NULL), SSMJIT_OK);
            gu_download(tokens[run][s], d.next, B * 4);
            gu_download_as(got, d.logits, B * V, SSMJIT_F32);
            for (size_t b = 0; b < B; b++)
                assert_true(tokens[run][s][b] >= 0 && tokens[run][s][b] < (int32_t)V);
            size_t best = 0;
            for (size_t v = 1; v < V; v++)
                if (got[2 * V + v] > got[2 * V + best])
                    best = v;
            assert_int_equal(tokens[run][s][2], (int)best);
        }
        uint64_t after[3];
        gu_download(after, counters, sizeof after);
        for (size_t b = 0; b < B; b++)
            assert_int_equal(after[b], steps);
        gu_free(counters);
        decoder_close(&d);
    }
    assert_memory_equal(tokens[0], tokens[1], sizeof tokens[0]);
    /* sampling needs somewhere to put its draw, and its counters */
    decoder d = decoder_open(&f, B);
    ssmjit_model_step_args a = {.struct_size = sizeof a, .batch = (int64_t)B, .ids = (int[]){1, 2, 3},
                                .conv_state = d.conv, .ssm_state = d.ssm, .logits = d.logits,
                                .workspace = d.ws, .workspace_bytes = d.ws_bytes, .sampling = dp};
    assert_int_equal(ssmjit_model_step(f.model, &a, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "args->next_ids is NULL"));
    a.next_ids = d.next;
    assert_int_equal(ssmjit_model_step(f.model, &a, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "args->sampling_steps is NULL"));
    decoder_close(&d);
    gu_free(dp);
    free(zeros);
    free(got);
    close_fixture(&f);
}

/* Greedy decoding from empty states with ids fed back on the device: the
 * graph replays must match reference steps on the ids it chose, and each
 * chosen id must be the argmax of its logits.  A second decoder (other
 * pointers) makes the model capture a new graph, then the first resumes. */
static void test_greedy_graph(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, 0, SSMJIT_F32);
    const ref_mamba_cfg *rc = &f.ref.cfg;
    size_t B = 2, V = rc->vocab, steps = 10;
    size_t nconv = rc->n_layer * B * rc->d_inner * rc->d_conv;
    size_t nssm = rc->n_layer * B * rc->d_inner * rc->d_state;
    double *rconv = tu_doubles(nconv), *rssm = tu_doubles(nssm);
    memset(rconv, 0, nconv * sizeof *rconv);
    memset(rssm, 0, nssm * sizeof *rssm);
    decoder d = decoder_open(&f, B), other = decoder_open(&f, 1);
    double *zeros = calloc(nconv + nssm, sizeof *zeros);
    gu_upload_as(d.conv, zeros, nconv, SSMJIT_F32);
    gu_upload_as(d.ssm, zeros, nssm, SSMJIT_F32);
    gu_upload_as(other.conv, zeros, nconv / B, SSMJIT_F32);
    gu_upload_as(other.ssm, zeros, nssm / B, SSMJIT_F32);
    int ids[2] = {3, 50};
    double *got = tu_doubles(B * V), *want = tu_doubles(B * V), *o = tu_doubles(V);
    double worst = 0;
    for (size_t s = 0; s < steps; s++) {
        step(&f, &d, s == 0 ? ids : NULL, got);
        ref_mamba_step(&f.ref, B, ids, rconv, rssm, want);
        double e = tu_rel_err(got, want, B * V);
        worst = e > worst ? e : worst;
        int32_t next[2];
        gu_download(next, d.next, sizeof next);
        for (size_t b = 0; b < B; b++) {
            size_t best = 0;
            for (size_t v = 1; v < V; v++)
                if (got[b * V + v] > got[b * V + best])
                    best = v;
            assert_int_equal(next[b], (int)best);
            ids[b] = next[b];
        }
        if (s == 4)
            step(&f, &other, (int[]){7}, o);
    }
    print_message("greedy graph decode: worst logits error %.2e\n", worst);
    assert_true(worst <= F32_TOL);
    decoder_close(&d);
    decoder_close(&other);
    free(zeros);
    free(rconv);
    free(rssm);
    free(got);
    free(want);
    free(o);
    close_fixture(&f);
}

typedef struct grad_check {
    fixture *f;
    ref_mamba *want;
    double worst;
    char worst_name[96];
} grad_check;

static void compare_grad(const char *name, double *w, size_t n, void *user)
{
    (void)w;
    grad_check *g = user;
    /* the same tensor's gradient in the reference: same walk order */
    ssmjit_tensor_info info;
    assert_int_equal(ssmjit_model_tensor(g->f->model, name, &info), SSMJIT_OK);
    assert_non_null(info.grad);
    double *got = tu_doubles(n);
    gu_download_as(got, info.grad, n, SSMJIT_F32);
    size_t off = (size_t)(w - g->f->ref.embedding);
    double e = tu_rel_err(got, g->want->embedding + off, n);
    if (e > g->worst || isnan(e)) {
        g->worst = isnan(e) ? INFINITY : e;
        snprintf(g->worst_name, sizeof g->worst_name, "%s", name);
    }
    free(got);
}

/* Training gradients of B sequences of L tokens against the reference,
 * and twice the same bytes; split > 1 forces every scan's split over L
 * into that many segments (0: the automatic choice). */
static void check_backward_shape(int tied, ssmjit_model_mode mode, int use_dlogits, size_t B, size_t L, int split)
{
    fixture f;
    open_fixture(&f, tied, SSMJIT_F32);
    sj_scan_force_split(split);
    const ref_mamba_cfg *rc = &f.ref.cfg;
    size_t V = rc->vocab, n = B * L;
    int *ids = random_ids(n, V), *targets = random_ids(n, V);
    targets[3] = targets[n - 1] = REF_MAMBA_IGNORE;
    ref_mamba want = ref_mamba_alloc(rc);
    double want_loss = 0, *dl = NULL;
    if (use_dlogits) {
        dl = tu_doubles(n * V);
        tu_fill_uniform(dl, n * V, -1, 1);
        ref_mamba_backward_dlogits(&f.ref, B, L, ids, dl, &want);
    } else {
        want_loss = ref_mamba_backward(&f.ref, B, L, ids, targets, &want);
    }
    double *logits = tu_doubles(n * V);
    size_t bytes;
    void *ws = workspace(f.model, (int64_t)B, (int64_t)L, mode, &bytes);
    void *dlog = gu_alloc(n * V * 4), *loss = gu_alloc(4), *ddl = dl ? gu_upload_new(dl, n * V, SSMJIT_F32) : NULL;
    ssmjit_model_forward_args a = {.struct_size = sizeof a, .batch = (int64_t)B, .seqlen = (int64_t)L, .ids = ids, .mode = mode,
                                   .logits = dlog, .workspace = ws, .workspace_bytes = bytes};
    uint8_t *first = NULL;
    size_t total = 0;
    for (int run = 0; run < 2; run++) {
        assert_int_equal(ssmjit_model_forward(f.model, &a, NULL), SSMJIT_OK);
        ssmjit_model_backward_args b = {.struct_size = sizeof b, .logits = use_dlogits ? NULL : dlog,
                                        .targets = use_dlogits ? NULL : targets,
                                        .loss = use_dlogits ? NULL : loss, .dlogits = ddl};
        assert_int_equal(ssmjit_model_backward(f.model, &b, NULL), SSMJIT_OK);
        /* every gradient's bytes, to compare the two runs */
        ssmjit_tensor_info info;
        size_t off = 0;
        for (int64_t i = 0; i < ssmjit_model_tensor_count(f.model); i++) {
            assert_int_equal(ssmjit_model_tensor_at(f.model, i, &info), SSMJIT_OK);
            size_t cnt = 1;
            for (int k = 0; k < info.ndim; k++)
                cnt *= (size_t)info.shape[k];
            if (run == 0) {
                first = realloc(first, total + cnt * 4);
                gu_download(first + total, info.grad, cnt * 4);
                total += cnt * 4;
            } else {
                uint8_t *again = malloc(cnt * 4);
                gu_download(again, info.grad, cnt * 4);
                assert_memory_equal(again, first + off, cnt * 4);
                free(again);
                off += cnt * 4;
            }
        }
    }
    if (!use_dlogits) {
        float got_loss;
        gu_download(&got_loss, loss, 4);
        print_message("loss %.9g (reference %.9g)\n", got_loss, want_loss);
        assert_true(fabs(got_loss - want_loss) <= F32_TOL * fabs(want_loss));
    }
    grad_check g = {&f, &want, 0, ""};
    ref_mamba_foreach(&f.ref, compare_grad, &g);
    print_message("tied %d mode %d dlogits %d: worst gradient error %.2e (%s)\n", tied, (int)mode,
                  use_dlogits, g.worst, g.worst_name);
    assert_true(g.worst <= GRAD_TOL);
    free(first);
    gu_free(ws);
    gu_free(dlog);
    gu_free(loss);
    gu_free(ddl);
    free(dl);
    free(logits);
    free(ids);
    free(targets);
    ref_mamba_free(&want);
    sj_scan_force_split(0);
    close_fixture(&f);
}

static void check_backward(int tied, ssmjit_model_mode mode, int use_dlogits)
{
    check_backward_shape(tied, mode, use_dlogits, 2, 23, 0);
}

/* One sequence with every layer's scan split into 4 segments of one
 * chunk, forward (which writes the checkpoint through the split) and
 * backward, keeping the checkpoint and recomputing it. */
static void test_backward_split(void **state)
{
    (void)state;
    check_backward_shape(0, SSMJIT_MODEL_TRAIN, 0, 1, 64, 4);
    check_backward_shape(1, SSMJIT_MODEL_TRAIN_RECOMPUTE, 0, 1, 64, 4);
}

static void test_backward_tied(void **state)
{
    (void)state;
    check_backward(1, SSMJIT_MODEL_TRAIN, 0);
}

static void test_backward_untied_recompute(void **state)
{
    (void)state;
    check_backward(0, SSMJIT_MODEL_TRAIN_RECOMPUTE, 0);
}

static void test_backward_dlogits(void **state)
{
    (void)state;
    check_backward(0, SSMJIT_MODEL_TRAIN, 1);
}

/* Embeddings in place of ids: the embedding rows of distinct ids give the
 * ids' logits, and in training d_embeds is the gradient of those rows,
 * which the reference (untied, so the lookup alone feeds the embedding's
 * gradient) scatters into the embedding's rows unchanged. */
static void test_embeds(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, 0, SSMJIT_F32);
    const ref_mamba_cfg *rc = &f.ref.cfg;
    size_t B = 2, L = 13, V = rc->vocab, dm = rc->d_model, n = B * L;
    int *ids = malloc(n * sizeof *ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = (int)((i * 37 + 5) % V); /* distinct: 37 is prime to 97 and n < 97 */
    double *emb = tu_doubles(n * dm), *want = tu_doubles(n * V), *got = tu_doubles(n * V);
    for (size_t i = 0; i < n; i++)
        memcpy(emb + i * dm, f.ref.embedding + (size_t)ids[i] * dm, dm * sizeof *emb);
    ref_mamba_forward(&f.ref, B, L, ids, want, NULL, NULL);
    void *demb = gu_upload_new(emb, n * dm, SSMJIT_F32);
    size_t bytes;
    void *ws = workspace(f.model, (int64_t)B, (int64_t)L, SSMJIT_MODEL_TRAIN, &bytes);
    void *dlog = gu_alloc_poisoned(n * V, SSMJIT_F32), *dgrad = gu_alloc_poisoned(n * dm, SSMJIT_F32);
    ssmjit_model_forward_args a = {.struct_size = sizeof a, .batch = (int64_t)B, .seqlen = (int64_t)L, .embeds = demb,
                                   .mode = SSMJIT_MODEL_TRAIN, .logits = dlog, .workspace = ws,
                                   .workspace_bytes = bytes};
    assert_int_equal(ssmjit_model_forward(f.model, &a, NULL), SSMJIT_OK);
    gu_download_as(got, dlog, n * V, SSMJIT_F32);
    assert_true(tu_rel_err(got, want, n * V) <= F32_TOL);

    double *dl = tu_doubles(n * V);
    tu_fill_uniform(dl, n * V, -1, 1);
    void *ddl = gu_upload_new(dl, n * V, SSMJIT_F32);
    ref_mamba grads = ref_mamba_alloc(rc);
    ref_mamba_backward_dlogits(&f.ref, B, L, ids, dl, &grads);
    ssmjit_model_backward_args b = {.struct_size = sizeof b, .dlogits = ddl, .d_embeds = dgrad};
    assert_int_equal(ssmjit_model_backward(f.model, &b, NULL), SSMJIT_OK);
    double *gd = tu_doubles(n * dm), *wd = tu_doubles(n * dm);
    gu_download_as(gd, dgrad, n * dm, SSMJIT_F32);
    for (size_t i = 0; i < n; i++)
        memcpy(wd + i * dm, grads.embedding + (size_t)ids[i] * dm, dm * sizeof *wd);
    double e = tu_rel_err(gd, wd, n * dm);
    print_message("embeds: logits %.2e, d_embeds %.2e\n", tu_rel_err(got, want, n * V), e);
    assert_true(e <= GRAD_TOL);
    /* without ids the model's own embedding gradient is zero (untied) */
    ssmjit_tensor_info info;
    assert_int_equal(ssmjit_model_tensor(f.model, "backbone.embeddings.weight", &info), SSMJIT_OK);
    double *ge = tu_doubles(V * dm);
    gu_download_as(ge, info.grad, V * dm, SSMJIT_F32);
    for (size_t i = 0; i < V * dm; i++)
        assert_true(ge[i] == 0.0);
    ref_mamba_free(&grads);
    gu_free(demb);
    gu_free(ws);
    gu_free(dlog);
    gu_free(dgrad);
    gu_free(ddl);
    free(ids);
    free(emb);
    free(want);
    free(got);
    free(dl);
    free(gd);
    free(wd);
    free(ge);
    close_fixture(&f);
}

/* A bf16 model's logits against the reference with the same (rounded)
 * weights. */
static void test_forward_bf16(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, 1, SSMJIT_BF16);
    size_t B = 2, L = 29, V = f.ref.cfg.vocab;
    int *ids = random_ids(B * L, V);
    double *want = tu_doubles(B * L * V), *got = tu_doubles(B * L * V);
    ref_mamba_forward(&f.ref, B, L, ids, want, NULL, NULL);
    forward(&f, B, L, ids, SSMJIT_MODEL_INFERENCE, 0, got, NULL, NULL, NULL);
    double e = tu_rel_err(got, want, B * L * V);
    print_message("bf16 logits %.2e\n", e);
    assert_true(e <= BF16_TOL);
    free(ids);
    free(want);
    free(got);
    close_fixture(&f);
}

/* Appends one tensor's header entry (its shape from the model's table) and
 * its values as f32. */
typedef struct st_writer {
    ssmjit_model *model;
    char *header;
    size_t hlen;
    float *data;
    size_t count;
} st_writer;

static void write_tensor(const char *name, double *w, size_t n, void *user)
{
    st_writer *s = user;
    ssmjit_tensor_info info;
    assert_int_equal(ssmjit_model_tensor(s->model, name, &info), SSMJIT_OK);
    char shape[64] = "", entry[256];
    for (int k = 0; k < info.ndim; k++)
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", k ? "," : "",
                 (long long)info.shape[k]);
    int len = snprintf(entry, sizeof entry, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%s],\"data_offsets\":[%zu,%zu]}",
                       s->hlen > 1 ? "," : "", name, shape, s->count * 4, (s->count + n) * 4);
    s->header = realloc(s->header, s->hlen + (size_t)len + 2);
    memcpy(s->header + s->hlen, entry, (size_t)len + 1);
    s->hlen += (size_t)len;
    s->data = realloc(s->data, (s->count + n) * sizeof *s->data);
    for (size_t i = 0; i < n; i++)
        s->data[s->count + i] = (float)w[i];
    s->count += n;
}

/* The reference's weights written as a Hugging Face checkpoint directory
 * load into a model that computes the same logits. */
static void test_load_checkpoint(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, 0, SSMJIT_F32);
    char *dir = tu_mkdtemp();
    char path[4600];
    st_writer s = {f.model, strdup("{"), 1, NULL, 0};
    ref_mamba_foreach(&f.ref, write_tensor, &s);
    strcpy(s.header + s.hlen, "}");
    size_t size;
    uint8_t *image = su_image(s.header, s.data, s.count * 4, &size);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    su_write(path, image, size);
    const ref_mamba_cfg *rc = &f.ref.cfg;
    char cfg[512];
    snprintf(cfg, sizeof cfg,
             "{\"model_type\":\"mamba\",\"hidden_size\":%zu,\"intermediate_size\":%zu,\"state_size\":%zu,"
             "\"conv_kernel\":%zu,\"time_step_rank\":%zu,\"num_hidden_layers\":%zu,\"vocab_size\":%zu,"
             "\"layer_norm_epsilon\":%g,\"tie_word_embeddings\":false}",
             rc->d_model, rc->d_inner, rc->d_state, rc->d_conv, rc->dt_rank, rc->n_layer, rc->vocab, rc->eps);
    snprintf(path, sizeof path, "%s/config.json", dir);
    su_write_text(path, cfg);
    ssmjit_model *loaded;
    assert_int_equal(ssmjit_model_load(f.ctx, dir, NULL, &loaded), SSMJIT_OK);
    ssmjit_model_config c;
    ssmjit_dtype dt;
    assert_int_equal(ssmjit_model_get_config(loaded, &c, &dt), SSMJIT_OK);
    assert_int_equal(dt, SSMJIT_BF16);
    assert_int_equal(c.vocab_size, (int64_t)rc->vocab);
    assert_int_equal(c.tie_embeddings, 0);
    ssmjit_model_destroy(loaded);
    ssmjit_model_options o;
    ssmjit_model_options_init(&o);
    o.dtype = SSMJIT_F32;
    assert_int_equal(ssmjit_model_load(f.ctx, dir, &o, &loaded), SSMJIT_OK);
    ssmjit_model_destroy(f.model);
    f.model = loaded;
    size_t B = 1, L = 9, V = rc->vocab;
    int *ids = random_ids(B * L, V);
    double *want = tu_doubles(B * L * V), *got = tu_doubles(B * L * V);
    ref_mamba_forward(&f.ref, B, L, ids, want, NULL, NULL);
    forward(&f, B, L, ids, SSMJIT_MODEL_INFERENCE, 0, got, NULL, NULL, NULL);
    assert_true(tu_rel_err(got, want, B * L * V) <= F32_TOL);
    /* ssmjit run on it: sampled runs with one seed draw the same tokens,
     * from a prompt of several tokens or of one (no prefill) */
    static const char *const runs[][2] = {
        {"--tokens 5,9,2", "--temperature 0.8 --top-k 20 --top-p 0.9 --seed 11"},
        {"--tokens 5", "--temperature 1.5 --seed 3"},
    };
    for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
        char line[2][256];
        for (int k = 0; k < 2; k++) {
            snprintf(path, sizeof path, "'%s' run --model '%s' --dtype f32 --steps 6 %s %s | grep '^tokens:'",
                     getenv("SSMJIT_CLI"), dir, runs[r][0], runs[r][1]);
            FILE *p = popen(path, "r");
            assert_non_null(p);
            assert_non_null(fgets(line[k], sizeof line[k], p));
            assert_int_equal(pclose(p), 0);
        }
        print_message("ssmjit run %s %s: %s", runs[r][0], runs[r][1], line[0]);
        assert_string_equal(line[0], line[1]);
    }
    free(ids);
    free(want);
    free(got);
    free(image);
    free(s.header);
    free(s.data);
    tu_rmtree(dir);
    free(dir);
    close_fixture(&f);
}

/* Tensors bound to the caller's memory (A_log among them, which the model
 * otherwise keeps in one block for all layers) give the same logits. */
static void test_bind_tensor(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, 1, SSMJIT_F32);
    size_t B = 2, L = 11, V = f.ref.cfg.vocab;
    int *ids = random_ids(B * L, V);
    double *want = tu_doubles(B * L * V), *got = tu_doubles(B * L * V);
    ref_mamba_forward(&f.ref, B, L, ids, want, NULL, NULL);
    static const char *const names[] = {"backbone.layers.1.mixer.A_log", "backbone.layers.0.mixer.in_proj.weight",
                                        "backbone.embeddings.weight"};
    void *mine[3];
    for (int i = 0; i < 3; i++) {
        ssmjit_tensor_info info;
        assert_int_equal(ssmjit_model_tensor(f.model, names[i], &info), SSMJIT_OK);
        size_t bytes = ssmjit_dtype_size(info.dtype);
        for (int k = 0; k < info.ndim; k++)
            bytes *= (size_t)info.shape[k];
        mine[i] = gu_alloc(bytes);
        uint8_t *copy = malloc(bytes);
        gu_download(copy, info.data, bytes);
        gu_upload(mine[i], copy, bytes);
        free(copy);
        assert_int_equal(ssmjit_model_bind_tensor(f.model, names[i], mine[i]), SSMJIT_OK);
        assert_int_equal(ssmjit_model_tensor(f.model, names[i], &info), SSMJIT_OK);
        assert_ptr_equal(info.data, mine[i]);
    }
    forward(&f, B, L, ids, SSMJIT_MODEL_INFERENCE, 0, got, NULL, NULL, NULL);
    assert_true(tu_rel_err(got, want, B * L * V) <= F32_TOL);
    assert_int_equal(ssmjit_model_bind_tensor(f.model, names[0], (char *)mine[0] + 4), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "16-byte aligned"));
    ssmjit_model_destroy(f.model); /* it must not free the bound memory */
    f.model = NULL;
    for (int i = 0; i < 3; i++)
        gu_free(mine[i]);
    close_fixture(&f);
    free(ids);
    free(want);
    free(got);
}

static void test_validation(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, 1, SSMJIT_F32);
    int ids[4] = {1, 2, 3, 1000};
    size_t bytes;
    void *ws = workspace(f.model, 1, 4, SSMJIT_MODEL_TRAIN, &bytes);
    void *logits = gu_alloc(4 * f.ref.cfg.vocab * 4);
    ssmjit_model_forward_args a = {.struct_size = sizeof a, .batch = 1, .seqlen = 4, .ids = ids, .mode = SSMJIT_MODEL_TRAIN,
                                   .logits = logits, .workspace = ws, .workspace_bytes = bytes};
    assert_int_equal(ssmjit_model_forward(f.model, &a, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "args->ids[3] = 1000"));
    ids[3] = 4;
    a.workspace_bytes = bytes - 1;
    assert_int_equal(ssmjit_model_forward(f.model, &a, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "workspace_bytes"));
    a.workspace_bytes = bytes;
    a.last_only = 1;
    assert_int_equal(ssmjit_model_forward(f.model, &a, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "last_only"));
    a.last_only = 0;
    a.embeds = logits;
    assert_int_equal(ssmjit_model_forward(f.model, &a, NULL), SSMJIT_ERR_INVALID_ARG);
    a.embeds = NULL;
    a.struct_size = sizeof a - 8;
    assert_int_equal(ssmjit_model_forward(f.model, &a, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "args->struct_size"));
    a.struct_size = sizeof a;
    ssmjit_model_backward_args b = {.struct_size = sizeof b + 8, .logits = logits, .targets = ids};
    assert_int_equal(ssmjit_model_backward(f.model, &b, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "args->struct_size"));
    b.struct_size = sizeof b;
    assert_int_equal(ssmjit_model_backward(f.model, &b, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "no forward in a training mode"));
    assert_int_equal(ssmjit_model_forward(f.model, &a, NULL), SSMJIT_OK);
    int ignored[4] = {-100, -100, -100, -100};
    b.targets = ignored;
    assert_int_equal(ssmjit_model_backward(f.model, &b, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "every target is ignored"));
    ssmjit_tensor_info info;
    assert_int_equal(ssmjit_model_tensor(f.model, "backbone.layers.9.mixer.D", &info), SSMJIT_ERR_INVALID_ARG);
    assert_int_equal(ssmjit_model_tensor_at(f.model, ssmjit_model_tensor_count(f.model), &info),
                     SSMJIT_ERR_INVALID_ARG);
    ssmjit_model_step_args s = {.batch = 1, .ids = ids};
    assert_int_equal(ssmjit_model_step(f.model, &s, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "args->struct_size = 0"));
    s.struct_size = sizeof s;
    assert_int_equal(ssmjit_model_step(f.model, &s, NULL), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "args->conv_state"));
    gu_free(ws);
    gu_free(logits);
    close_fixture(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forward_tied),
        cmocka_unit_test(test_forward_untied),
        cmocka_unit_test(test_forward_bf16),
        cmocka_unit_test(test_decode_paths),
        cmocka_unit_test(test_decode_hybrid),
        cmocka_unit_test(test_greedy_graph),
        cmocka_unit_test(test_sampled_decode),
        cmocka_unit_test(test_backward_tied),
        cmocka_unit_test(test_backward_split),
        cmocka_unit_test(test_backward_untied_recompute),
        cmocka_unit_test(test_backward_dlogits),
        cmocka_unit_test(test_load_checkpoint),
        cmocka_unit_test(test_bind_tensor),
        cmocka_unit_test(test_embeds),
        cmocka_unit_test(test_validation),
    };
    tu_apply_test_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
