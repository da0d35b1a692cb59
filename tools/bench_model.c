/* ssmjit bench --model: a mamba-130m-shaped model with random bf16
 * weights: prefill, greedy decode at batch 1, 8 and 64 (f32 also at 16,
 * 32), a training step. */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "bench_parts.h"
#include "cli.h"
#include "ssmjit_internal.h"

typedef struct model_bench {
    ssmjit_context *ctx;
    ssmjit_model *m;
    ssmjit_model_config c;
    void *stream;
} model_bench;

static ssmjit_status dalloc(model_bench *b, size_t bytes, void **p)
{
    return sj_dev_alloc(b->ctx, bytes ? bytes : 1, p);
}

static void dfree(model_bench *b, void *p)
{
    sj_dev_free(b->ctx, p);
}

static ssmjit_status sync(model_bench *b)
{
    return sj_stream_synchronize(b->ctx, b->stream);
}

static int32_t *random_ids(int64_t n, int64_t vocab)
{
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    for (int64_t i = 0; ids && i < n; i++)
        ids[i] = (int32_t)(rand() % vocab);
    return ids;
}

/* Median ms of `reps` prefills (or training steps with targets) of B x L;
 * with `split`, one more run with the GEMMs and scans timed by events:
 * split[0] ms in GEMMs, split[1] in scans, split[2] the whole run. */
static ssmjit_status time_forward(model_bench *b, int64_t B, int64_t L, ssmjit_model_mode mode,
                                  int reps, double *ms, double *split)
{
    size_t bytes, es = ssmjit_dtype_size(SSMJIT_BF16);
    void *ws = NULL, *logits = NULL, *loss = NULL;
    int32_t *ids = random_ids(B * L, b->c.vocab_size), *targets = random_ids(B * L, b->c.vocab_size);
    ssmjit_status st = ids && targets ? SSMJIT_OK : SSMJIT_ERR_NO_MEMORY;
    if (st == SSMJIT_OK)
        st = ssmjit_model_workspace_size(b->m, B, L, mode, &bytes);
    if (st == SSMJIT_OK)
        st = dalloc(b, bytes, &ws);
    if (st == SSMJIT_OK)
        st = dalloc(b, (size_t)(B * L * b->c.vocab_size) * es, &logits);
    if (st == SSMJIT_OK)
        st = dalloc(b, 4, &loss);
    double t[16];
    const int runs = reps + 1 + (split != NULL);
    for (int r = 0; r < runs && st == SSMJIT_OK; r++) {
        if (split && r == reps + 1)
            st = sj_model_profile_start(b->m);
        ssmjit_model_forward_args a = {.struct_size = sizeof a, .batch = B, .seqlen = L, .ids = ids, .mode = mode, .logits = logits,
                                       .workspace = ws, .workspace_bytes = bytes};
        double t0 = cli_now();
        st = ssmjit_model_forward(b->m, &a, b->stream);
        if (st == SSMJIT_OK && mode != SSMJIT_MODEL_INFERENCE) {
            ssmjit_model_backward_args g = {.struct_size = sizeof g, .logits = logits, .targets = targets, .loss = loss};
            st = ssmjit_model_backward(b->m, &g, b->stream);
        }
        if (st == SSMJIT_OK)
            st = sync(b);
        if (r > 0 && r <= reps) /* the first run loads modules and plans GEMMs */
            t[r - 1] = (cli_now() - t0) * 1e3;
        if (split && r == reps + 1) {
            split[2] = (cli_now() - t0) * 1e3;
            if (st == SSMJIT_OK)
                st = sj_model_profile_stop(b->m, split);
        }
    }
    if (st == SSMJIT_OK)
        *ms = bench_median(t, reps);
    dfree(b, ws);
    dfree(b, logits);
    dfree(b, loss);
    free(ids);
    free(targets);
    return st;
}

/* time_forward of one sequence, where the scans split its tokens over
 * the GPU, then (unsplit) with the split forced off, for the comparison. */
static ssmjit_status time_one_sequence(model_bench *b, int64_t L, ssmjit_model_mode mode, int reps, double *ms,
                                       double *unsplit, double *split)
{
    ssmjit_status st = time_forward(b, 1, L, mode, reps, ms, split);
    sj_scan_force_split(1);
    if (st == SSMJIT_OK)
        st = time_forward(b, 1, L, mode, reps, unsplit, NULL);
    sj_scan_force_split(0);
    return st;
}

/* Tokens per second of greedy decoding for B sequences, each step fed
 * the previous step's ids on the device (one graph launch a token). */
static ssmjit_status time_decode(model_bench *b, int64_t B, int steps, double *tps)
{
    const ssmjit_model_config *c = &b->c;
    size_t bytes;
    void *ws = NULL, *conv = NULL, *ssm = NULL, *logits = NULL, *next = NULL;
    ssmjit_status st = ssmjit_model_step_workspace_size(b->m, B, &bytes);
    if (st == SSMJIT_OK)
        st = dalloc(b, bytes, &ws);
    if (st == SSMJIT_OK)
        st = dalloc(b, (size_t)(c->n_layer * B * c->d_inner * c->d_conv) * 4, &conv);
    if (st == SSMJIT_OK)
        st = dalloc(b, (size_t)(c->n_layer * B * c->d_inner * c->d_state) * 4, &ssm);
    if (st == SSMJIT_OK)
        st = dalloc(b, (size_t)(B * c->vocab_size) * 4, &logits);
    if (st == SSMJIT_OK)
        st = dalloc(b, (size_t)B * 4, &next);
    if (st == SSMJIT_OK)
        st = sj_dev_memset8_async(b->ctx, next, 0, (size_t)B * 4, b->stream);
    ssmjit_model_step_args a = {.struct_size = sizeof a, .batch = B, .ids_device = next, .conv_state = conv, .ssm_state = ssm,
                                .logits = logits, .next_ids = next, .workspace = ws, .workspace_bytes = bytes};
    for (int i = 0; i < 3 && st == SSMJIT_OK; i++) /* the first captures the graph */
        st = ssmjit_model_step(b->m, &a, b->stream);
    if (st == SSMJIT_OK)
        st = sync(b);
    double t0 = cli_now();
    for (int i = 0; i < steps && st == SSMJIT_OK; i++)
        st = ssmjit_model_step(b->m, &a, b->stream);
    if (st == SSMJIT_OK)
        st = sync(b);
    *tps = (double)(B * steps) / (cli_now() - t0);
    dfree(b, ws);
    dfree(b, conv);
    dfree(b, ssm);
    dfree(b, logits);
    dfree(b, next);
    return st;
}

/* Bytes of weights a decode step reads: every layer's matrices and
 * vectors and the LM head once (the embedding's few rows aside). */
static double weight_bytes(const ssmjit_model_config *c, ssmjit_dtype dtype)
{
    const double es = (double)ssmjit_dtype_size(dtype), dm = (double)c->d_model, di = (double)c->d_inner,
                 n = (double)c->d_state, r = (double)c->dt_rank;
    const double matrices = 2 * di * dm + (r + 2 * n) * di + di * r + dm * di;
    const double vectors = dm + di * (double)c->d_conv + di + di * n + di + di; /* norm, conv, its bias, A, D, dt_bias */
    return (double)c->n_layer * (matrices * es + vectors * 4) + (double)c->vocab_size * dm * es + dm * 4;
}

/* Decode of B sequences on one path (sj_model_decode_force: 0 unfused,
 * 1 fused, 2 hybrid; a hybrid step's in_proj and out_proj through cuBLAS
 * where `cublas`, sj_model_decode_tensor_cores), printed with the
 * weights' bandwidth against the copy bandwidth. */
static ssmjit_status decode_row(model_bench *b, const char *what, ssmjit_dtype dtype, int64_t B, int steps, int path,
                                int cublas, double copy)
{
    static const char *const path_names[] = {"unfused", "fused", "hybrid"};
    ssmjit_status st = sj_model_decode_force(b->m, path);
    sj_model_decode_tensor_cores(b->m, !cublas);
    double tps = 0;
    if (st == SSMJIT_OK)
        st = time_decode(b, B, steps, &tps);
    if (st == SSMJIT_OK) {
        const double step_s = (double)B / tps, gbps = weight_bytes(&b->c, dtype) / step_s * 1e-9;
        printf("model   decode %s %s, batch %lld, %s%s: %.0f tokens/s, %.1f us a step, weights %.0f MB at %.0f GB/s "
               "(%.0f%% of copy)\n", what, sj_dtype_suffix(dtype), (long long)B, path_names[path],
               cublas ? " (in_proj, out_proj by cuBLAS)" : "", tps, step_s * 1e6, weight_bytes(&b->c, dtype) * 1e-6,
               gbps, 100 * gbps / copy);
    }
    sj_model_decode_tensor_cores(b->m, 1);
    return st == SSMJIT_OK ? sj_model_decode_force(b->m, -1) : st;
}

/* What each part of a step costs at batch B on `path` (1 fused, 2
 * hybrid): the step's time less that of a step leaving the part out
 * (sj_model_decode_skip), which is what the part adds to the chain of
 * kernels, the overlap of each with the next included. */
static ssmjit_status decode_parts(model_bench *b, const char *what, int64_t B, int path, int steps)
{
    static const char *const names[SJ_DECODE_PARTS] = {
        [SJ_DECODE_PART_IN] = "in",     [SJ_DECODE_PART_MIX] = "mix",   [SJ_DECODE_PART_OUT] = "out",
        [SJ_DECODE_PART_HEAD] = "head", [SJ_DECODE_PART_PICK] = "pick", [SJ_DECODE_PART_LAYER_NORM] = "norm",
    };
    static const int fused_parts[] = {SJ_DECODE_PART_IN, SJ_DECODE_PART_MIX, SJ_DECODE_PART_OUT,
                                      SJ_DECODE_PART_HEAD, SJ_DECODE_PART_PICK},
                     hybrid_parts[] = {SJ_DECODE_PART_LAYER_NORM, SJ_DECODE_PART_IN,   SJ_DECODE_PART_MIX,
                                       SJ_DECODE_PART_OUT,        SJ_DECODE_PART_HEAD, SJ_DECODE_PART_PICK};
    const int hybrid = path == 2, *parts = hybrid ? hybrid_parts : fused_parts;
    const int count = hybrid ? (int)(sizeof hybrid_parts / sizeof *hybrid_parts)
                             : (int)(sizeof fused_parts / sizeof *fused_parts);
    const int64_t L = b->c.n_layer;
    double whole = 0, without[SJ_DECODE_PARTS];
    ssmjit_status st = sj_model_decode_force(b->m, path);
    if (st == SSMJIT_OK)
        st = time_decode(b, B, steps, &whole);
    for (int i = 0; i < count && st == SSMJIT_OK; i++) {
        sj_model_decode_skip(b->m, 1u << parts[i]);
        st = time_decode(b, B, steps, &without[parts[i]]);
    }
    sj_model_decode_skip(b->m, 0);
    if (st != SSMJIT_OK)
        return st;
    const double us = (double)B / whole * 1e6;
    /* fused: three kernels a layer and the head (with the argmax); the
     * hybrid step's count depends on its products' path */
    char kernels[32] = "";
    if (!hybrid)
        snprintf(kernels, sizeof kernels, ", %lld kernels", (long long)(3 * L + 1));
    printf("model   %s decode step by parts (%s, batch %lld%s, %.1f us; each part's cost is the step's time less "
           "that of a step without it):", what, hybrid ? "hybrid" : "fused", (long long)B, kernels, us);
    for (int i = 0; i < count; i++) {
        const int p = parts[i];
        const int64_t launches = p == SJ_DECODE_PART_HEAD || p == SJ_DECODE_PART_PICK ? 1 : L; /* else a layer's */
        const double cost = us - (double)B / without[p] * 1e6;
        printf(" %s %lld x %.2f us = %.1f us%s", names[p], (long long)launches, cost / (double)launches, cost,
               i + 1 < count ? "," : "\n");
    }
    return sj_model_decode_force(b->m, -1);
}

/* Decode rows of b's model at each of the nb batches, `steps` steps
 * (`steps_above_8` above eight sequences): fused and unfused and, above
 * two sequences, hybrid, with `cublas` a second hybrid row with its
 * products through cuBLAS. */
static ssmjit_status decode_rows(model_bench *b, const char *what, ssmjit_dtype dtype, const int64_t *batches,
                                 size_t nb, int steps, int steps_above_8, int cublas, double copy)
{
    ssmjit_status st = SSMJIT_OK;
    for (size_t i = 0; i < nb; i++) {
        const int n = batches[i] > 8 ? steps_above_8 : steps;
        for (int path = batches[i] > 2 ? 2 : 1; path >= 0 && st == SSMJIT_OK; path--) {
            st = decode_row(b, what, dtype, batches[i], n, path, 0, copy);
            if (st == SSMJIT_OK && path == 2 && cublas)
                st = decode_row(b, what, dtype, batches[i], n, path, 1, copy);
        }
    }
    return st;
}

/* Decode rows of another model (the 130m shape in f32, the 1.4b shape),
 * its products on the paths' own kernels; with `parts`, its fused step
 * at batch 1 by parts too. */
static ssmjit_status decode_other(model_bench *b, const char *what, ssmjit_model_config c, ssmjit_dtype dtype,
                                  const int64_t *batches, size_t nb, int steps, int parts, double copy)
{
    model_bench o = *b;
    o.c = c;
    ssmjit_model_options mo;
    ssmjit_model_options_init(&mo);
    mo.dtype = dtype;
    ssmjit_status st = ssmjit_model_create(b->ctx, &o.c, &mo, 1, &o.m);
    if (st == SSMJIT_OK)
        st = decode_rows(&o, what, dtype, batches, nb, steps, steps, 0, copy);
    if (st == SSMJIT_OK && parts)
        st = decode_parts(&o, what, 1, 1, steps);
    ssmjit_model_destroy(o.m);
    return st;
}

/* Prefill of B x L tokens with all logits, and of one sequence of L. */
static ssmjit_status bench_prefill(model_bench *b, int64_t B, int64_t L)
{
    double ms = 0;
    ssmjit_status st = time_forward(b, B, L, SSMJIT_MODEL_INFERENCE, 7, &ms, NULL);
    if (st == SSMJIT_OK)
        printf("model   mamba-130m shape, bf16: prefill %lld x %lld with all logits: %.2f ms (%.0f tokens/s)\n",
               (long long)B, (long long)L, ms, (double)(B * L) / ms * 1e3);
    double one = 0, one_unsplit = 0, events[3] = {0, 0, 0};
    if (st == SSMJIT_OK)
        st = time_one_sequence(b, L, SSMJIT_MODEL_INFERENCE, 7, &one, &one_unsplit, events);
    if (st == SSMJIT_OK)
        printf("model   prefill 1 x %lld: %.2f ms (%.0f tokens/s), scans %.2f ms of one run by events; "
               "with the scan not split %.2f ms\n",
               (long long)L, one, (double)L / one * 1e3, events[1], one_unsplit);
    return st;
}

/* Every decode row: the 130m shape in bf16 and f32, the 1.4b shape (or,
 * with big_only, the 1.4b shape's alone), with the weights' bandwidth
 * against the copy bandwidth. */
static ssmjit_status bench_decode(model_bench *b, int quick, int big_only)
{
    double copy = 0;
    ssmjit_status st = bench_copy_bandwidth(b->ctx, b->stream, &copy);
    if (st == SSMJIT_OK)
        printf("model   copy bandwidth %.0f GB/s\n", copy);
    /* the hybrid step's products on tensor cores and through cuBLAS */
    static const int64_t batches[] = {1, 8, 64};
    if (st == SSMJIT_OK && !big_only)
        st = decode_rows(b, "130m", SSMJIT_BF16, batches, sizeof batches / sizeof *batches, quick ? 50 : 500,
                         quick ? 50 : 300, 1, copy);
    if (st == SSMJIT_OK && !big_only)
        st = decode_parts(b, "130m", 1, 1, quick ? 50 : 500);
    if (st == SSMJIT_OK && !big_only)
        st = decode_parts(b, "130m", 64, 2, quick ? 50 : 300);
    /* f32 at batches up to the hybrid rule's bound
     * (SJ_DECODE_HYBRID_MAX_BATCH, src/model/model.h), which these rows
     * measure for it */
    static const int64_t batch_one = 1, f32_batches[] = {1, 8, 16, 32, 64};
    if (st == SSMJIT_OK && !big_only)
        st = decode_other(b, "130m", bench_130m, SSMJIT_F32, f32_batches, quick ? 1 : 5, quick ? 50 : 300, 0, copy);
    if (st == SSMJIT_OK && (!quick || big_only))
        st = decode_other(b, "1.4b", bench_1p4b, SSMJIT_BF16, &batch_one, 1, 200, 1, copy);
    return st;
}

/* A training step of B x L tokens, also recomputing conv and scan, by
 * events, and of one sequence of L. */
static ssmjit_status bench_train(model_bench *b, int64_t B, int64_t L)
{
    double train = 0, recompute = 0, split[3] = {0, 0, 0};
    ssmjit_status st = time_forward(b, B, L, SSMJIT_MODEL_TRAIN, 5, &train, split);
    if (st == SSMJIT_OK)
        st = time_forward(b, B, L, SSMJIT_MODEL_TRAIN_RECOMPUTE, 5, &recompute, NULL);
    double train_one = 0, train_one_unsplit = 0;
    if (st == SSMJIT_OK)
        st = time_one_sequence(b, L, SSMJIT_MODEL_TRAIN, 5, &train_one, &train_one_unsplit, NULL);
    if (st == SSMJIT_OK)
        printf("model   training step 1 x %lld: %.2f ms, with the scans not split %.2f ms\n", (long long)L,
               train_one, train_one_unsplit);
    if (st == SSMJIT_OK) {
        printf("model   training step %lld x %lld (forward, cross-entropy, backward): %.2f ms, "
               "recomputing conv and scan: %.2f ms\n", (long long)B, (long long)L, train, recompute);
        double rest = split[2] - split[0] - split[1];
        printf("model   training step, one run timed by events: %.2f ms: GEMMs %.2f ms (%.0f%%), "
               "scans %.2f ms (%.0f%%), the rest %.2f ms (%.0f%%)\n", split[2], split[0],
               100 * split[0] / split[2], split[1], 100 * split[1] / split[2], rest, 100 * rest / split[2]);
    }
    return st;
}

int bench_model(ssmjit_context *ctx, int quick, bench_model_rows rows)
{
    const int decode_only = rows == BENCH_MODEL_DECODE || rows == BENCH_MODEL_BIG;
    model_bench b = {.ctx = ctx};
    b.c = bench_130m;
    const int64_t B = quick ? 2 : 8, L = quick ? 256 : 2048;
    ssmjit_status st = ssmjit_model_create(ctx, &b.c, NULL, 1, &b.m);
    if (st != SSMJIT_OK)
        return cli_fail("model", st);
    int pushed = 0;
    st = sj_context_enter(ctx, &pushed);
    if (st == SSMJIT_OK)
        st = sj_stream_create(ctx, &b.stream);
    if (st == SSMJIT_OK && !decode_only)
        st = bench_prefill(&b, B, L);
    if (st == SSMJIT_OK && rows != BENCH_MODEL_TRAIN)
        st = bench_decode(&b, quick, rows == BENCH_MODEL_BIG);
    if (st == SSMJIT_OK && !decode_only)
        st = bench_train(&b, B, L);
    sj_stream_destroy(ctx, b.stream);
    sj_context_leave(ctx, pushed);
    ssmjit_model_destroy(b.m);
    return st == SSMJIT_OK ? CLI_OK : cli_fail("model bench", st);
}
