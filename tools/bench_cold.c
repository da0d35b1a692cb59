/* ssmjit bench --cold: what first use costs.  Each case runs in a fresh
 * process (this program again) with an empty cache directory and
 * CUDA_CACHE_DISABLE=1 (NVRTC 13 otherwise reuses the driver's own compile
 * cache and hides the cost), then once more in a fresh process on the
 * cache the first one filled (warm). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "bench_parts.h"
#include "cli.h"
#include "ssmjit_internal.h"

static int fail_errno(const char *what, const char *path)
{
    fprintf(stderr, "ssmjit bench: %s '%s': %s\n", what, path, strerror(errno));
    return CLI_FAILED;
}

/* ---- a checkpoint to load ------------------------------------------------ */

/* Writes ctx's random-weight model of the 130m shape as a Hugging Face
 * checkpoint (config.json, model.safetensors) into dir. */
static int write_checkpoint(ssmjit_context *ctx, const char *dir)
{
    ssmjit_model *m;
    ssmjit_model_options mo;
    ssmjit_model_options_init(&mo);
    mo.prepare = SSMJIT_MODEL_PREPARE_NONE;
    ssmjit_status st = ssmjit_model_create(ctx, &bench_130m, &mo, 7, &m);
    if (st != SSMJIT_OK)
        return cli_fail("model", st);
    char path[4400];
    snprintf(path, sizeof path, "%.4200s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return fail_errno("cannot write", path);
    const ssmjit_model_config *c = &bench_130m;
    fprintf(f,
            "{\"model_type\": \"mamba\", \"hidden_size\": %lld, \"intermediate_size\": %lld, \"state_size\": %lld, "
            "\"conv_kernel\": %lld, \"time_step_rank\": %lld, \"num_hidden_layers\": %lld, \"vocab_size\": %lld, "
            "\"layer_norm_epsilon\": 1e-5, \"residual_in_fp32\": true, \"tie_word_embeddings\": true, "
            "\"use_conv_bias\": true, \"use_bias\": false}\n",
            (long long)c->d_model, (long long)c->d_inner, (long long)c->d_state, (long long)c->d_conv,
            (long long)c->dt_rank, (long long)c->n_layer, (long long)c->vocab_size);
    fclose(f);

    /* safetensors: an 8-byte header length, the JSON header (padded to 8),
     * the tensors' bytes in order */
    int64_t n = ssmjit_model_tensor_count(m);
    size_t cap = 1 << 20, len = 0, offset = 0;
    char *header = malloc(cap);
    if (!header)
        return cli_fail("checkpoint header", SSMJIT_ERR_NO_MEMORY);
    len += (size_t)snprintf(header + len, cap - len, "{");
    for (int64_t i = 0; i < n; i++) {
        ssmjit_tensor_info t;
        ssmjit_model_tensor_at(m, i, &t);
        size_t bytes = ssmjit_dtype_size(t.dtype);
        for (int d = 0; d < t.ndim; d++)
            bytes *= (size_t)t.shape[d];
        len += (size_t)snprintf(header + len, cap - len, "%s\"%s\": {\"dtype\": \"%s\", \"shape\": [", i ? ", " : "",
                                t.name, t.dtype == SSMJIT_F32 ? "F32" : t.dtype == SSMJIT_F16 ? "F16" : "BF16");
        for (int d = 0; d < t.ndim; d++)
            len += (size_t)snprintf(header + len, cap - len, "%s%lld", d ? ", " : "", (long long)t.shape[d]);
        len += (size_t)snprintf(header + len, cap - len, "], \"data_offsets\": [%zu, %zu]}", offset, offset + bytes);
        offset += bytes;
    }
    len += (size_t)snprintf(header + len, cap - len, "}");
    while (len % 8)
        header[len++] = ' ';
    snprintf(path, sizeof path, "%.4200s/model.safetensors", dir);
    f = fopen(path, "wb");
    if (!f)
        return fail_errno("cannot write", path);
    uint64_t hlen = len;
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(hlen >> (8 * i));
    int ok = fwrite(le, 1, 8, f) == 8 && fwrite(header, 1, len, f) == len;
    free(header);
    int pushed;
    st = sj_context_enter(ctx, &pushed);
    for (int64_t i = 0; i < n && ok && st == SSMJIT_OK; i++) {
        ssmjit_tensor_info t;
        ssmjit_model_tensor_at(m, i, &t);
        size_t bytes = ssmjit_dtype_size(t.dtype);
        for (int d = 0; d < t.ndim; d++)
            bytes *= (size_t)t.shape[d];
        void *host = malloc(bytes);
        st = host ? sj_dev_to_host(ctx, host, t.data, bytes) : SSMJIT_ERR_NO_MEMORY;
        ok = st == SSMJIT_OK && fwrite(host, 1, bytes, f) == bytes;
        free(host);
    }
    if (st == SSMJIT_OK)
        sj_context_leave(ctx, pushed);
    ok = fclose(f) == 0 && ok;
    ssmjit_model_destroy(m);
    if (st != SSMJIT_OK)
        return cli_fail("reading the weights", st);
    return ok ? CLI_OK : fail_errno("cannot write", path);
}

/* ---- the children ---------------------------------------------------------- */

typedef struct scan_buffers {
    void *p[32];
    int n;
} scan_buffers;

/* Device memory filled with `byte`: 0x3c makes small positive values in
 * every dtype, 0xbc small negative ones (A). */
static void *dev_filled(ssmjit_context *ctx, scan_buffers *b, size_t bytes, unsigned char byte, ssmjit_status *st)
{
    void *d = NULL;
    if (*st == SSMJIT_OK && b->n == (int)(sizeof b->p / sizeof b->p[0]))
        *st = SSMJIT_ERR_INTERNAL;
    if (*st == SSMJIT_OK)
        *st = sj_dev_alloc(ctx, bytes ? bytes : 1, &d);
    if (*st == SSMJIT_OK) {
        b->p[b->n++] = d;
        *st = sj_dev_memset8(ctx, d, byte, bytes);
    }
    return d;
}

static void *dev(ssmjit_context *ctx, scan_buffers *b, size_t bytes, ssmjit_status *st)
{
    return dev_filled(ctx, b, bytes, 0x3c, st);
}

/* The first forward (bwd = 0), or the first backward after an untimed
 * forward, of a bf16 scan of one 2048-token sequence at D = 1536 with the
 * model's options; prints the call's seconds (to its end on the GPU). */
static int scan_child(int bwd)
{
    ssmjit_context *ctx;
    ssmjit_status st = ssmjit_context_create(NULL, &ctx);
    if (st != SSMJIT_OK)
        return cli_fail("context", st);
    enum { B = 1, L = 2048, D = 1536, N = 16 };
    const size_t act = (size_t)B * L * D * 2, bc = (size_t)B * L * N * 2;
    scan_buffers b = {.n = 0};
    int pushed = 0;
    st = sj_context_enter(ctx, &pushed);
    ssmjit_selective_scan_desc d = {.struct_size = sizeof d, .dtype = SSMJIT_BF16, .batch = B, .seqlen = L,
                                    .dim = D, .dstate = N, .delta_softplus = 1, .checkpoint = 1};
    ssmjit_selective_scan_fwd_args f = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_fwd_args);
    f.in.u.data = dev(ctx, &b, act, &st);
    f.in.delta.data = dev(ctx, &b, act, &st);
    f.in.z.data = dev(ctx, &b, act, &st);
    f.in.B.data = dev(ctx, &b, bc, &st);
    f.in.C.data = dev(ctx, &b, bc, &st);
    f.in.A = dev_filled(ctx, &b, (size_t)D * N * 4, 0xbc, &st);
    f.in.D = dev(ctx, &b, (size_t)D * 4, &st);
    f.in.delta_bias = dev(ctx, &b, (size_t)D * 4, &st);
    f.y.data = dev(ctx, &b, act, &st);
    size_t ck = 0, ws_bytes = 0;
    if (st == SSMJIT_OK)
        st = ssmjit_selective_scan_checkpoint_size(ctx, &d, &ck);
    f.checkpoint = dev(ctx, &b, ck, &st);
    ssmjit_selective_scan_bwd_args g = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_bwd_args);
    g.in = f.in;
    g.checkpoint = f.checkpoint;
    if (bwd) {
        g.dy.data = dev(ctx, &b, act, &st);
        g.du.data = dev(ctx, &b, act, &st);
        g.ddelta.data = dev(ctx, &b, act, &st);
        g.dz.data = dev(ctx, &b, act, &st);
        g.dB.data = dev(ctx, &b, bc, &st);
        g.dC.data = dev(ctx, &b, bc, &st);
        g.dA = dev(ctx, &b, (size_t)D * N * 4, &st);
        g.dD = dev(ctx, &b, (size_t)D * 4, &st);
        g.ddelta_bias = dev(ctx, &b, (size_t)D * 4, &st);
    }
    if (st == SSMJIT_OK)
        st = sj_dev_synchronize(ctx);
    if (st == SSMJIT_OK && bwd)
        st = ssmjit_selective_scan_fwd(ctx, &d, &f, NULL);
    /* the backward unsplit, as the case has always timed it (one call
     * would split it where its workspace holds the split's part) */
    sj_scan_force_split(1);
    if (st == SSMJIT_OK && bwd)
        st = ssmjit_selective_scan_bwd_workspace_size(ctx, &d, &ws_bytes);
    g.workspace = bwd ? dev(ctx, &b, ws_bytes, &st) : NULL;
    g.workspace_bytes = ws_bytes;
    if (st == SSMJIT_OK)
        st = sj_dev_synchronize(ctx);
    double t0 = cli_now();
    if (st == SSMJIT_OK)
        st = bwd ? ssmjit_selective_scan_bwd(ctx, &d, &g, NULL) : ssmjit_selective_scan_fwd(ctx, &d, &f, NULL);
    sj_scan_force_split(0);
    if (st == SSMJIT_OK)
        st = sj_dev_synchronize(ctx);
    double t = cli_now() - t0;
    for (int i = 0; i < b.n; i++)
        sj_dev_free(ctx, b.p[i]);
    sj_context_leave(ctx, pushed);
    ssmjit_context_destroy(ctx);
    if (st != SSMJIT_OK)
        return cli_fail(bwd ? "scan backward" : "scan forward", st);
    printf("%.4f\n", t);
    return CLI_OK;
}

/* From before ssmjit_model_load (the training kernels prepared) to the end
 * of the first training step on 1 x 512 tokens on the GPU. */
static int train_child(const char *model_dir)
{
    ssmjit_context *ctx;
    ssmjit_status st = ssmjit_context_create(NULL, &ctx);
    if (st != SSMJIT_OK)
        return cli_fail("context", st);
    const int64_t L = 512;
    double t0 = cli_now();
    ssmjit_model *m = NULL;
    ssmjit_model_options mo;
    ssmjit_model_options_init(&mo);
    mo.prepare = SSMJIT_MODEL_PREPARE_TRAINING;
    st = ssmjit_model_load(ctx, model_dir, &mo, &m);
    size_t bytes = 0;
    scan_buffers b = {.n = 0};
    int pushed = 0;
    if (st == SSMJIT_OK)
        st = ssmjit_model_workspace_size(m, 1, L, SSMJIT_MODEL_TRAIN, &bytes);
    if (st == SSMJIT_OK)
        st = sj_context_enter(ctx, &pushed);
    void *ws = dev(ctx, &b, bytes, &st), *logits = dev(ctx, &b, (size_t)(L * bench_130m.vocab_size) * 2, &st),
         *loss = dev(ctx, &b, 4, &st);
    int32_t ids[512], targets[512];
    for (int i = 0; i < L; i++) {
        ids[i] = (int32_t)((i * 7919) % bench_130m.vocab_size);
        targets[i] = (int32_t)((i * 104729 + 1) % bench_130m.vocab_size);
    }
    ssmjit_model_forward_args fa = {.struct_size = sizeof fa, .batch = 1, .seqlen = L, .ids = ids, .mode = SSMJIT_MODEL_TRAIN,
                                    .logits = logits, .workspace = ws, .workspace_bytes = bytes};
    if (st == SSMJIT_OK)
        st = ssmjit_model_forward(m, &fa, NULL);
    ssmjit_model_backward_args ba = {.struct_size = sizeof ba, .logits = logits, .targets = targets, .loss = loss};
    if (st == SSMJIT_OK)
        st = ssmjit_model_backward(m, &ba, NULL);
    if (st == SSMJIT_OK)
        st = sj_dev_synchronize(ctx);
    double t = cli_now() - t0;
    for (int i = 0; i < b.n; i++)
        sj_dev_free(ctx, b.p[i]);
    if (pushed)
        sj_context_leave(ctx, pushed);
    ssmjit_model_destroy(m);
    ssmjit_context_destroy(ctx);
    if (st != SSMJIT_OK)
        return cli_fail("training step", st);
    printf("%.4f\n", t);
    return CLI_OK;
}

int bench_cold_child(const char *kind, const char *arg)
{
    if (!strcmp(kind, "scan_fwd"))
        return scan_child(0);
    if (!strcmp(kind, "scan_bwd"))
        return scan_child(1);
    if (!strcmp(kind, "train") && arg)
        return train_child(arg);
    fprintf(stderr, "ssmjit bench: no cold case '%s'\n", kind);
    return CLI_USAGE;
}

/* ---- the parent ------------------------------------------------------------ */

/* Runs `command` with SSMJIT_CACHE_DIR=cache; with `timed`, *seconds is
 * the whole command's wall time, else the number it printed last. */
static int run_case(const char *command, const char *cache, int timed, double *seconds)
{
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "SSMJIT_CACHE_DIR='%s' %s", cache, command);
    double t0 = cli_now();
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char line[512];
    double last = -1;
    while (fgets(line, sizeof line, p))
        if (!timed)
            sscanf(line, "%lf", &last);
    int rc = pclose(p);
    *seconds = timed ? cli_now() - t0 : last;
    return rc == 0 && *seconds >= 0 ? 0 : -1;
}

int bench_cold(ssmjit_context *ctx)
{
    char base[] = "/tmp/ssmjit-cold-XXXXXX";
    if (!mkdtemp(base))
        return fail_errno("cannot set up", base);
    /* every child, cold or warm, without the driver's compile cache */
    setenv("CUDA_CACHE_DISABLE", "1", 1);
    ssmjit_context_info info;
    ssmjit_status st = ssmjit_context_get_info(ctx, &info);
    if (st != SSMJIT_OK)
        return cli_fail("context", st);
    char model[4200];
    snprintf(model, sizeof model, "%s/model", base);
    if (mkdir(model, 0700) != 0)
        return fail_errno("cannot make", model);
    int rc = write_checkpoint(ctx, model);
    if (rc != CLI_OK)
        return rc;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    struct {
        const char *what;
        char command[8800];
        int timed;
    } cases[5];
    char args[5][4600];
    snprintf(args[0], sizeof args[0], "bench --cold-child scan_fwd");
    cases[0].what = "first ssmjit_selective_scan_fwd, bf16, 1 x 2048 x 1536";
    snprintf(args[1], sizeof args[1], "bench --cold-child scan_bwd");
    cases[1].what = "first ssmjit_selective_scan_bwd, bf16, same shape";
    snprintf(args[2], sizeof args[2], "run --model '%s' --tokens 510,3158,8516,4,100 --steps 8 >> '%s/run.log'", model,
             base);
    cases[2].what = "ssmjit run, 130m-shaped bf16 checkpoint, 5 tokens: whole command";
    snprintf(args[3], sizeof args[3], "bench --cold-child train '%s'", model);
    cases[3].what = "first training step 1 x 512, from ssmjit_model_load";
    snprintf(args[4], sizeof args[4], "prewarm --arch %s --jobs %ld >/dev/null", info.target_is_ptx ? "sm_90" : info.target,
             jobs);
    cases[4].what = "ssmjit prewarm, one arch, every unit";
    for (int i = 0; i < 5; i++)
        if (bench_self_command(args[i], cases[i].command, sizeof cases[i].command) != 0)
            return fail_errno("cannot name this program for", args[i]);
    cases[2].timed = cases[4].timed = 1;
    cases[0].timed = cases[1].timed = cases[3].timed = 0;
    printf("cold    each case in a fresh process, empty cache, CUDA_CACHE_DISABLE=1; then warm in another\n");
    for (int i = 0; i < 5; i++) {
        char cache[4200];
        snprintf(cache, sizeof cache, "%s/cache%d", base, i);
        double cold = 0, warm = 0;
        if (run_case(cases[i].command, cache, cases[i].timed, &cold) != 0 ||
            run_case(cases[i].command, cache, cases[i].timed, &warm) != 0) {
            fprintf(stderr, "ssmjit bench: cold case '%s' failed\n", cases[i].what);
            rc = CLI_FAILED;
            break;
        }
        printf("cold    %-66s %7.3f s cold, %7.3f s warm%s\n", cases[i].what, cold, warm,
               i == 4 ? (jobs == 1 ? " (1 job)" : "") : "");
        fflush(stdout);
    }
    /* what the runs said of their parts (load, prefill, decode) */
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "sed 's/^/cold      run: /' '%s/run.log' | grep -v tokens:", base);
    fflush(stdout);
    if (system(cmd) != 0)
        fprintf(stderr, "ssmjit bench: no output of the runs\n");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0)
        fprintf(stderr, "ssmjit bench: could not remove %s\n", base);
    return rc;
}
