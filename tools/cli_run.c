/* ssmjit run: prefill a prompt and decode greedily on the GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ssmjit_internal.h"

static const char help[] =
    "usage: ssmjit run --model PATH --tokens ID,ID,... [--steps N] [--dtype bf16|f16|f32]\n"
    "Loads a Mamba checkpoint (a Hugging Face directory or a .safetensors file\n"
    "with config.json beside it), prefills the token ids, then decodes N tokens\n"
    "greedily (default 32), one CUDA graph launch per token.  Prints the new\n"
    "token ids and the prefill and decode speeds.  Default dtype: bf16.\n";

typedef struct run_opts {
    const char *model;
    int32_t *tokens;
    int64_t ntokens;
    int64_t steps;
    ssmjit_dtype dtype;
} run_opts;

static int parse_tokens(const char *s, run_opts *o)
{
    o->ntokens = 0;
    for (const char *p = s; *p; p++)
        o->ntokens += *p == ',';
    o->ntokens++;
    o->tokens = malloc((size_t)o->ntokens * sizeof *o->tokens);
    if (!o->tokens)
        return -1;
    char *end;
    for (int64_t i = 0; i < o->ntokens; i++) {
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > INT32_MAX || (*end != ',' && *end != '\0'))
            return -1;
        o->tokens[i] = (int32_t)v;
        s = end + (*end == ',');
    }
    return 0;
}

static int parse(int argc, char **argv, run_opts *o)
{
    *o = (run_opts){NULL, NULL, 0, 32, SSMJIT_BF16};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            exit(CLI_OK);
        }
        if (!v)
            return -1;
        i++;
        if (!strcmp(a, "--model")) {
            o->model = v;
        } else if (!strcmp(a, "--tokens")) {
            if (parse_tokens(v, o))
                return -1;
        } else if (!strcmp(a, "--steps")) {
            char *end;
            o->steps = strtoll(v, &end, 10);
            if (*end || o->steps < 1 || o->steps > 1000000)
                return -1;
        } else if (!strcmp(a, "--dtype")) {
            o->dtype = !strcmp(v, "f32") ? SSMJIT_F32 : !strcmp(v, "f16") ? SSMJIT_F16 : SSMJIT_BF16;
            if (strcmp(v, "f32") && strcmp(v, "f16") && strcmp(v, "bf16"))
                return -1;
        } else {
            return -1;
        }
    }
    return o->model && o->ntokens ? 0 : -1;
}

/* Device buffers of one run, freed together. */
typedef struct buffers {
    void *ws, *step_ws, *logits, *conv, *ssm, *next, *history;
} buffers;

static ssmjit_status alloc(ssmjit_context *ctx, void **p, size_t bytes)
{
    return sj_dev_alloc(ctx, bytes ? bytes : 1, p);
}

/* The first maximum of a row of logits on the host; -1 when its buffer
 * cannot be had. */
static int32_t argmax_host(const void *row, int64_t n, ssmjit_dtype dtype)
{
    float *f = malloc((size_t)n * sizeof *f);
    if (!f)
        return -1;
    sj_convert(f, SSMJIT_F32, row, dtype, (size_t)n);
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (f[i] > f[best])
            best = i;
    free(f);
    return (int32_t)best;
}

static int decode(ssmjit_model *m, ssmjit_context *ctx, const run_opts *o, buffers *b)
{
    ssmjit_model_config c;
    ssmjit_dtype dt;
    ssmjit_model_get_config(m, &c, &dt);
    size_t es = ssmjit_dtype_size(dt), ws_bytes, step_bytes;
    ssmjit_status st = ssmjit_model_workspace_size(m, 1, o->ntokens, SSMJIT_MODEL_INFERENCE, &ws_bytes);
    if (st == SSMJIT_OK)
        st = ssmjit_model_step_workspace_size(m, 1, &step_bytes);
    if (st == SSMJIT_OK)
        st = alloc(ctx, &b->ws, ws_bytes);
    if (st == SSMJIT_OK)
        st = alloc(ctx, &b->step_ws, step_bytes);
    if (st == SSMJIT_OK)
        st = alloc(ctx, &b->logits, (size_t)c.vocab_size * es);
    if (st == SSMJIT_OK)
        st = alloc(ctx, &b->conv, (size_t)(c.n_layer * c.d_inner * c.d_conv) * 4);
    if (st == SSMJIT_OK)
        st = alloc(ctx, &b->ssm, (size_t)(c.n_layer * c.d_inner * c.d_state) * 4);
    if (st == SSMJIT_OK)
        st = alloc(ctx, &b->next, 4);
    if (st == SSMJIT_OK)
        st = alloc(ctx, &b->history, (size_t)o->steps * 4);
    if (st != SSMJIT_OK)
        return cli_fail("run: device memory", st);

    ssmjit_model_forward_args fa = {
        .struct_size = sizeof fa, .batch = 1, .seqlen = o->ntokens, .ids = o->tokens, .logits = b->logits,
        .last_only = 1, .conv_state = b->conv, .ssm_state = b->ssm,
        .workspace = b->ws, .workspace_bytes = ws_bytes};
    double t0 = cli_now();
    st = ssmjit_model_forward(m, &fa, NULL);
    void *row = malloc((size_t)c.vocab_size * es);
    if (st == SSMJIT_OK && !row)
        st = SSMJIT_ERR_NO_MEMORY;
    if (st == SSMJIT_OK)
        st = sj_dev_to_host(ctx, row, b->logits, (size_t)c.vocab_size * es);
    double t1 = cli_now();
    int32_t *out = malloc((size_t)o->steps * sizeof *out);
    if (st == SSMJIT_OK && !out)
        st = SSMJIT_ERR_NO_MEMORY;
    if (st == SSMJIT_OK && (out[0] = argmax_host(row, c.vocab_size, dt)) < 0)
        st = SSMJIT_ERR_NO_MEMORY;
    free(row);
    /* Each step reads its token from `next` and writes the following one
     * there, so every step has the same pointers and replays one graph. */
    ssmjit_model_step_args sa = {
        .struct_size = sizeof sa, .batch = 1, .ids_device = b->next, .conv_state = b->conv, .ssm_state = b->ssm,
        .logits = b->logits, .next_ids = b->next, .workspace = b->step_ws, .workspace_bytes = step_bytes};
    if (st == SSMJIT_OK)
        st = sj_dev_from_host(ctx, b->next, out, 4);
    /* the first step runs the kernels and captures the graph: not timed */
    double t2 = 0;
    for (int64_t s = 1; s < o->steps && st == SSMJIT_OK; s++) {
        if (s == 2) {
            st = sj_dev_synchronize(ctx);
            t2 = cli_now();
        }
        st = st == SSMJIT_OK ? ssmjit_model_step(m, &sa, NULL) : st;
        if (st == SSMJIT_OK)
            st = sj_dev_copy_async(ctx, (char *)b->history + s * 4, b->next, 4, NULL);
    }
    if (st == SSMJIT_OK && o->steps > 1)
        st = sj_dev_to_host(ctx, out + 1, (char *)b->history + 4, (size_t)(o->steps - 1) * 4);
    double t3 = cli_now();
    if (st != SSMJIT_OK) {
        free(out);
        return cli_fail("run", st);
    }
    printf("tokens:");
    for (int64_t s = 0; s < o->steps; s++)
        printf("%s%d", s ? "," : " ", (int)out[s]);
    printf("\nprefill: %lld tokens in %.2f ms (%.0f tokens/s, loading modules on first use included)\n", (long long)o->ntokens, (t1 - t0) * 1e3,
           (double)o->ntokens / (t1 - t0));
    if (o->steps > 2)
        printf("decode: %lld tokens in %.2f ms (%.0f tokens/s; after the first step, which captures the "
               "graph)\n", (long long)(o->steps - 2), (t3 - t2) * 1e3, (double)(o->steps - 2) / (t3 - t2));
    free(out);
    return CLI_OK;
}

int cli_run(int argc, char **argv)
{
    run_opts o;
    if (parse(argc, argv, &o)) {
        free(o.tokens);
        fputs(help, stderr);
        return CLI_USAGE;
    }
    ssmjit_context *ctx;
    ssmjit_context_options co;
    ssmjit_context_options_init(&co);
    co.on_compile = cli_compile_progress;
    double t0 = cli_now();
    ssmjit_status st = ssmjit_context_create(&co, &ctx);
    double t1 = cli_now();
    if (st != SSMJIT_OK) {
        free(o.tokens);
        return cli_fail("run: context", st);
    }
    ssmjit_model_options mo;
    ssmjit_model_options_init(&mo);
    mo.dtype = o.dtype;
    ssmjit_model *m;
    int rc, pushed;
    st = ssmjit_model_load(ctx, o.model, &mo, &m);
    if (st == SSMJIT_OK)
        printf("load: context %.2f ms, model %.2f ms\n", (t1 - t0) * 1e3, (cli_now() - t1) * 1e3);
    if (st != SSMJIT_OK) {
        rc = cli_fail(o.model, st);
    } else if ((st = sj_context_enter(ctx, &pushed)) != SSMJIT_OK) {
        rc = cli_fail("run", st);
        ssmjit_model_destroy(m);
    } else {
        /* the buffers are allocated with the driver, in the context */
        buffers b = {0};
        rc = decode(m, ctx, &o, &b);
        ssmjit_model_destroy(m);
        void *all[] = {b.ws, b.step_ws, b.logits, b.conv, b.ssm, b.next, b.history};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            sj_dev_free(ctx, all[i]);
        sj_context_leave(ctx, pushed);
    }
    ssmjit_context_destroy(ctx);
    free(o.tokens);
    return rc;
}
