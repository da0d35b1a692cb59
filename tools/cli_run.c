/* ssmjit run: prefill a prompt and decode on the GPU, greedily or sampled. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "ssmjit_internal.h"

static const char help[] =
    "usage: ssmjit run --model PATH (--tokens ID,ID,... | --prompt TEXT) [--steps N]\n"
    "                  [--dtype bf16|f16|f32] [--temperature T] [--top-k K] [--top-p P]\n"
    "                  [--seed S]\n"
    "Loads a Mamba checkpoint (a Hugging Face directory or a .safetensors file\n"
    "with config.json beside it), prefills the prompt, then decodes N tokens\n"
    "(default 32), one CUDA graph launch per token: greedily, or with\n"
    "--temperature above 0 drawn on the GPU from the top-k (default: all)\n"
    "tokens, then the top-p (default 1: all) of them, seeded by --seed\n"
    "(default 0: the same seed gives the same tokens).  The prompt is\n"
    "token ids (--tokens) or UTF-8 text (--prompt), which the tokenizer.json\n"
    "beside the checkpoint encodes (a byte-level BPE, as GPT-NeoX's).  Prints\n"
    "the new token ids, their text when there is a tokenizer.json, and the\n"
    "prefill and decode speeds.  Default dtype: bf16.\n";

typedef struct run_opts {
    const char *model;
    const char *prompt;
    int32_t *tokens;
    int64_t ntokens;
    int64_t steps;
    ssmjit_dtype dtype;
    ssmjit_sampling sampling; /* temperature 0: greedy */
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

/* A number in [lo, hi]: 0, or -1 for anything else. */
static int parse_number(const char *v, double lo, double hi, double *x)
{
    char *end;
    *x = strtod(v, &end);
    return *end || end == v || !(*x >= lo && *x <= hi) ? -1 : 0;
}

static int parse(int argc, char **argv, run_opts *o)
{
    double x;
    *o = (run_opts){NULL, NULL, NULL, 0, 32, SSMJIT_BF16, {0.0f, 0, 1.0f, 0, 0}};
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
            if (o->tokens || parse_tokens(v, o))
                return -1;
        } else if (!strcmp(a, "--prompt")) {
            o->prompt = v;
        } else if (!strcmp(a, "--steps")) {
            char *end;
            o->steps = strtoll(v, &end, 10);
            if (*end || o->steps < 1 || o->steps > 1000000)
                return -1;
        } else if (!strcmp(a, "--temperature")) {
            if (parse_number(v, 0, 1e30, &x))
                return -1;
            o->sampling.temperature = (float)x;
        } else if (!strcmp(a, "--top-p")) {
            if (parse_number(v, 0, 1, &x))
                return -1;
            o->sampling.top_p = (float)x;
        } else if (!strcmp(a, "--top-k")) {
            if (parse_number(v, 0, INT32_MAX, &x) || x != (double)(int32_t)x)
                return -1;
            o->sampling.top_k = (int32_t)x;
        } else if (!strcmp(a, "--seed")) {
            char *end;
            o->sampling.seed = strtoull(v, &end, 10);
            if (*end || end == v || *v == '-')
                return -1;
        } else if (!strcmp(a, "--dtype")) {
            o->dtype = !strcmp(v, "f32") ? SSMJIT_F32 : !strcmp(v, "f16") ? SSMJIT_F16 : SSMJIT_BF16;
            if (strcmp(v, "f32") && strcmp(v, "f16") && strcmp(v, "bf16"))
                return -1;
        } else {
            return -1;
        }
    }
    /* exactly one of --tokens and --prompt */
    return o->model && (o->tokens != NULL) != (o->prompt != NULL) ? 0 : -1;
}

/* The tokenizer.json of the checkpoint at `model` (in it, for a directory;
 * beside it, for a file) to path; whether there is one. */
static int find_tokenizer(const char *model, char *path, size_t cap)
{
    struct stat st;
    const char *slash = strrchr(model, '/');
    if (stat(model, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(path, cap, "%s/tokenizer.json", model);
    else if (slash)
        snprintf(path, cap, "%.*s/tokenizer.json", (int)(slash - model), model);
    else
        snprintf(path, cap, "tokenizer.json");
    return stat(path, &st) == 0;
}

/* The prompt's ids, to o->tokens.  A prompt that cannot be encoded (not
 * UTF-8, or empty) is a bad command line. */
static int encode_prompt(const ssmjit_tokenizer *tok, run_opts *o)
{
    size_t len = strlen(o->prompt), n = 0;
    ssmjit_tokenizer_encode(tok, o->prompt, len, NULL, 0, &n); /* the count */
    o->tokens = malloc((n ? n : 1) * sizeof *o->tokens);
    if (!o->tokens)
        return cli_fail("run: --prompt", SSMJIT_ERR_NO_MEMORY);
    ssmjit_status st = ssmjit_tokenizer_encode(tok, o->prompt, len, o->tokens, n, &n);
    if (st != SSMJIT_OK || n == 0) {
        fprintf(stderr, "ssmjit: run: --prompt: %s\n",
                st != SSMJIT_OK ? ssmjit_last_error() : "the prompt is empty");
        return CLI_USAGE;
    }
    o->ntokens = (int64_t)n;
    printf("prompt: %zu tokens:", n);
    for (size_t i = 0; i < n; i++)
        printf("%s%d", i ? "," : " ", (int)o->tokens[i]);
    printf("\n");
    return CLI_OK;
}

/* Prints "text: " and the text of ids[0..n), or why they do not decode
 * (a model's vocab may be padded past the tokenizer's). */
static void print_text(const ssmjit_tokenizer *tok, const int32_t *ids, size_t n)
{
    size_t len = 0;
    ssmjit_tokenizer_decode(tok, ids, n, NULL, 0, &len); /* the size */
    char *text = malloc(len + 1);
    ssmjit_status st = text ? ssmjit_tokenizer_decode(tok, ids, n, text, len + 1, &len) : SSMJIT_ERR_NO_MEMORY;
    if (st == SSMJIT_OK)
        printf("text: %s\n", text);
    else
        printf("text: not decoded: %s: %s\n", ssmjit_status_string(st), ssmjit_last_error());
    free(text);
}

/* The tokenizer beside the checkpoint: required with --prompt (its absence
 * a usage error), else used when it loads.  Returns CLI_OK or the exit code. */
static int load_tokenizer(run_opts *o, ssmjit_tokenizer **tok)
{
    char path[4200];
    *tok = NULL;
    if (!find_tokenizer(o->model, path, sizeof path)) {
        if (!o->prompt)
            return CLI_OK;
        fprintf(stderr, "ssmjit: run: --prompt needs a tokenizer.json beside the checkpoint, and '%s' is "
                        "not there; give token ids with --tokens instead\n", path);
        return CLI_USAGE;
    }
    ssmjit_status st = ssmjit_tokenizer_load(path, tok);
    if (st != SSMJIT_OK && o->prompt)
        return cli_fail("run: tokenizer", st);
    if (st != SSMJIT_OK)
        fprintf(stderr, "ssmjit: run: %s not used (the ids are printed alone): %s: %s\n", path,
                ssmjit_status_string(st), ssmjit_last_error());
    return st != SSMJIT_OK || !o->prompt ? CLI_OK : encode_prompt(*tok, o);
}

/* The tokenizer's load and the prompt's encoding, run beside the
 * context's creation: neither needs the other, and both take tens of
 * milliseconds (GPT-NeoX's tokenizer.json about 50, cuInit about 120). */
typedef struct tokenizer_job {
    run_opts *o;
    ssmjit_tokenizer *tok;
    int rc;
} tokenizer_job;

static void *tokenizer_thread(void *arg)
{
    tokenizer_job *j = arg;
    j->rc = load_tokenizer(j->o, &j->tok);
    return NULL;
}

/* Device buffers of one run, freed together. */
typedef struct buffers {
    void *ws, *step_ws, *logits, *conv, *ssm, *next, *history, *sampling, *counter;
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

static int decode(ssmjit_model *m, ssmjit_context *ctx, const run_opts *o, const ssmjit_tokenizer *tok,
                  buffers *b)
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
    /* sampled: the draw's parameters and counter on the device */
    const int sampled = o->sampling.temperature > 0;
    if (st == SSMJIT_OK && sampled)
        st = alloc(ctx, &b->sampling, sizeof o->sampling);
    if (st == SSMJIT_OK && sampled)
        st = alloc(ctx, &b->counter, 8);
    if (st == SSMJIT_OK && sampled)
        st = sj_dev_from_host(ctx, b->sampling, &o->sampling, sizeof o->sampling);
    if (st == SSMJIT_OK && sampled)
        st = sj_dev_from_host(ctx, b->counter, &(uint64_t){0}, 8);
    if (st != SSMJIT_OK)
        return cli_fail("run: device memory", st);

    /* Greedy, the prefill's last logits give the first new token; sampled,
     * the prompt's last token goes through a step, which draws it on the
     * device (with states from a prefill of the rest, or zero). */
    const int64_t prefilled = sampled ? o->ntokens - 1 : o->ntokens;
    ssmjit_model_forward_args fa = {
        .struct_size = sizeof fa, .batch = 1, .seqlen = prefilled, .ids = o->tokens, .logits = b->logits,
        .last_only = 1, .conv_state = b->conv, .ssm_state = b->ssm,
        .workspace = b->ws, .workspace_bytes = ws_bytes};
    double t0 = cli_now();
    if (prefilled)
        st = ssmjit_model_forward(m, &fa, NULL);
    else if ((st = sj_dev_memset8_async(ctx, b->conv, 0, (size_t)(c.n_layer * c.d_inner * c.d_conv) * 4, NULL)) ==
             SSMJIT_OK)
        st = sj_dev_memset8_async(ctx, b->ssm, 0, (size_t)(c.n_layer * c.d_inner * c.d_state) * 4, NULL);
    void *row = malloc((size_t)c.vocab_size * es);
    if (st == SSMJIT_OK && !row)
        st = SSMJIT_ERR_NO_MEMORY;
    if (st == SSMJIT_OK && !sampled)
        st = sj_dev_to_host(ctx, row, b->logits, (size_t)c.vocab_size * es);
    double t1 = cli_now();
    int32_t *out = malloc((size_t)o->steps * sizeof *out);
    if (st == SSMJIT_OK && !out)
        st = SSMJIT_ERR_NO_MEMORY;
    /* Each step reads its token from `next` and writes the following one
     * there, so every step has the same pointers and replays one graph. */
    ssmjit_model_step_args sa = {
        .struct_size = sizeof sa, .batch = 1, .ids_device = b->next, .conv_state = b->conv, .ssm_state = b->ssm,
        .logits = b->logits, .next_ids = b->next, .workspace = b->step_ws, .workspace_bytes = step_bytes,
        .sampling = b->sampling, .sampling_steps = b->counter};
    if (st == SSMJIT_OK && sampled) {
        ssmjit_model_step_args first = sa;
        first.ids = o->tokens + o->ntokens - 1;
        first.ids_device = NULL;
        st = ssmjit_model_step(m, &first, NULL);
        if (st == SSMJIT_OK)
            st = sj_dev_to_host(ctx, out, b->next, 4);
    } else if (st == SSMJIT_OK) {
        if ((out[0] = argmax_host(row, c.vocab_size, dt)) < 0)
            st = SSMJIT_ERR_NO_MEMORY;
        if (st == SSMJIT_OK)
            st = sj_dev_from_host(ctx, b->next, out, 4);
    }
    free(row);
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
    printf("\n");
    if (tok)
        print_text(tok, out, (size_t)o->steps);
    printf("prefill: %lld tokens in %.2f ms (%.0f tokens/s, loading modules on first use included)\n", (long long)o->ntokens, (t1 - t0) * 1e3,
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
    tokenizer_job job = {&o, NULL, CLI_OK};
    pthread_t thread;
    const int beside = pthread_create(&thread, NULL, tokenizer_thread, &job) == 0;
    if (!beside)
        tokenizer_thread(&job);
    ssmjit_context *ctx;
    ssmjit_context_options co;
    ssmjit_context_options_init(&co);
    co.on_compile = cli_compile_progress;
    double t0 = cli_now();
    ssmjit_status st = ssmjit_context_create(&co, &ctx);
    double t1 = cli_now();
    if (beside)
        pthread_join(thread, NULL);
    ssmjit_tokenizer *tok = job.tok;
    int rc = job.rc;
    if (rc != CLI_OK || st != SSMJIT_OK) {
        /* a bad prompt or tokenizer is the error reported, as when it
         * was read before the context */
        ssmjit_context_destroy(ctx);
        ssmjit_tokenizer_destroy(tok);
        free(o.tokens);
        return rc != CLI_OK ? rc : cli_fail("run: context", st);
    }
    ssmjit_model_options mo;
    ssmjit_model_options_init(&mo);
    mo.dtype = o.dtype;
    /* one sequence: queue only the kernels of its prompt's prefill */
    mo.max_batch = 1;
    mo.max_tokens = o.ntokens;
    ssmjit_model *m;
    int pushed;
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
        rc = decode(m, ctx, &o, tok, &b);
        ssmjit_model_destroy(m);
        void *all[] = {b.ws, b.step_ws, b.logits, b.conv, b.ssm, b.next, b.history, b.sampling, b.counter};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            sj_dev_free(ctx, all[i]);
        sj_context_leave(ctx, pushed);
    }
    ssmjit_context_destroy(ctx);
    ssmjit_tokenizer_destroy(tok);
    free(o.tokens);
    return rc;
}
