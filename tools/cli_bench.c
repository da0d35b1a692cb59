/* ssmjit bench: engine costs (warm start, kernel lookup, launch overhead)
 * and, from bench_ops.c, the ops' run times against the device's measured
 * copy bandwidth. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_parts.h"
#include "cli.h"
#include "ssmjit_internal.h"

static const char help[] =
    "usage: ssmjit bench [--engine] [--ops] [--model [decode|1.4b|train]] [--gemm] [--cold] [--cache]\n"
    "                    [--sweep [full]] [--shape BxLxD] [--quick] [--only TEXT]\n"
    "                    [--scan-fwd serial|parallel] [--scan-split S] [--scan-shape NS,BD]\n"
    "                    [--scan-layout model]\n"
    "Times, on GPU 0 (default: every part):\n"
    "  --engine  warm starts in fresh processes (the first op call, a model's\n"
    "            kernels, every kernel; cuModuleLoadData against cuLibraryLoadData),\n"
    "            a repeated kernel lookup, and a launch through the library\n"
    "            against a raw cuLaunchKernel\n"
    "  --ops     each op at the reference shape (B=8, L=2048, D=4096, N=16) with\n"
    "            CUDA events (median of 25 runs after warm-up, rotating inputs\n"
    "            larger than L2), with GB/s against the measured copy bandwidth\n"
    "  --model   a mamba-130m-shaped model (d_model 768, 24 layers, N 16, vocab\n"
    "            50280) with random bf16 weights: prefill of 8 x 2048 tokens, greedy\n"
    "            decode at batch 1, 8 and 64 (f32 weights: 1 to 64) on each path,\n"
    "            the decode step by parts at batch 1 (fused) and 64 (hybrid), a\n"
    "            training step on 8 x 2048 tokens\n"
    "  --model decode  its decode rows alone\n"
    "  --model 1.4b    the 1.4b shape's decode rows alone, its step by parts\n"
    "  --model train   prefill and the training step alone, no decode\n"
    "  --gemm    a Linear layer's product C [m, n] = A [m, k] W [n, k]^T at the\n"
    "            projections of the 130m and 1.4b shapes, m 1, 8, 64 and 256,\n"
    "            through cuBLAS and through the skinny kernels, each call timed\n"
    "            in a CUDA graph (bf16, then f16; not part of the default)\n"
    "  --cold    first use: the first scan forward and backward call, `ssmjit run`\n"
    "            on a 130m-shaped checkpoint, a first training step from load, and\n"
    "            `ssmjit prewarm` of one arch, each in a fresh process with an empty\n"
    "            cache and CUDA_CACHE_DISABLE=1, then warm (not part of the default)\n"
    "  --cache   the cache at 10,000 synthetic entries: stats, verify and a store\n"
    "            that evicts half (no GPU needed; not part of the default)\n"
    "  --sweep   the selective scan (N 16, with z, D, delta_bias, softplus) at ten\n"
    "            (B, L, D) shapes, 1 x 128 x 1536 to 8 x 2048 x 4096, in each dtype:\n"
    "            forward, forward writing the checkpoint, backward from it; ms (CUDA\n"
    "            events, median of 25, rotating inputs), % of the byte floor at\n"
    "            the measured copy bandwidth and the path the library chose (split\n"
    "            over L, token-parallel or not); then a markdown table of it all\n"
    "            (not part of the default)\n"
    "  --sweep full  also grid B: B 1-64 x L 128-16384 x D 768-5120 (long), less\n"
    "            the shapes whose buffers would pass 8 GiB\n"
    "  --shape BxLxD  the sweep at that one shape (e.g. 2x4096x2560) instead of\n"
    "            its grids (implies --sweep)\n"
    "  --quick   smaller shapes, for a smoke test\n"
    "  --only TEXT  only the ops whose name contains TEXT (implies --ops); with\n"
    "            --sweep, only the shapes whose \"B=1 L=512 D=1536\" contains TEXT\n"
    "  --scan-fwd serial|parallel  the forward scan in its token-serial kernels\n"
    "            everywhere, or its token-parallel one wherever it can run, instead\n"
    "            of the library's rule: to compare the two (bench/NOTES.md)\n"
    "  --scan-split S  with --sweep, the scan's split over L forced: 1 never,\n"
    "            S >= 2 into S segments a row wherever it can be made, to\n"
    "            compare splits\n"
    "  --scan-shape NS,BD  the token-serial forward (and a split's second\n"
    "            pass) with NS states a thread (4, 8, 16) and BD channels a\n"
    "            block (16-128), where that shape fits, instead of the\n"
    "            library's model of its fastest shape (with --scan-fwd serial\n"
    "            where the token-parallel kernel could take the rows: its\n"
    "            choice follows the forced width)\n"
    "  --scan-layout model  the sweep (implied) with the scan's B and C (and dB, dC)\n"
    "            as columns of an x_proj output and z (and dz) as the second half\n"
    "            of an in_proj output, strided as a model's layers hand them over\n";

/* Warm starts, each measured in a fresh process (a child of this one), from
 * a created context:
 *   first    the first op call (its unit looked up, read, checked, loaded,
 *            launched) and, apart, a second call of it
 *   model    every unit a mamba-130m-shaped bf16 model's inference may
 *            need, loaded (what ssmjit_model_load queues, waited for)
 *   all      ssmjit_context_load_all
 *   module / library   every unit's image (read beforehand, untimed) loaded
 *            with cuModuleLoadData + cuModuleGetFunction, or with
 *            cuLibraryLoadData + cuLibraryGetKernel + cuKernelGetFunction
 * Prints milliseconds. */
static const char *const startup_kinds[] = {"first", "model", "all", "module", "library"};

static int startup_first(ssmjit_context *ctx)
{
    int pushed;
    void *buf = NULL;
    ssmjit_status st = sj_context_enter(ctx, &pushed);
    if (st == SSMJIT_OK)
        st = sj_dev_alloc(ctx, 256, &buf);
    if (st != SSMJIT_OK)
        return cli_fail("setup", st);
    ssmjit_activation_desc desc = {sizeof desc, SSMJIT_ACT_SILU, SSMJIT_F32, 1, 32};
    ssmjit_matrix m = {buf, 0, 0};
    ssmjit_activation_fwd_args act = {sizeof act, m, m};
    double t[2];
    for (int i = 0; i < 2 && st == SSMJIT_OK; i++) {
        double t0 = cli_now();
        st = ssmjit_activation_fwd(ctx, &desc, &act, NULL);
        t[i] = cli_now() - t0;
    }
    if (st == SSMJIT_OK)
        st = sj_dev_synchronize(ctx);
    sj_dev_free(ctx, buf);
    sj_context_leave(ctx, pushed);
    if (st != SSMJIT_OK)
        return cli_fail("first call", st);
    printf("%.4f %.4f\n", t[0] * 1e3, t[1] * 1e3);
    return CLI_OK;
}

/* Every unit loaded through one of the two driver APIs, from images read
 * beforehand. */
static int startup_loads(ssmjit_context *ctx, int library)
{
    const size_t all = ssmjit_unit_count();
    const void **images = calloc(all, sizeof *images);
    const char **names = calloc(all, sizeof *names);
    if (!images || !names) {
        free(images);
        free(names);
        return cli_fail("reading images", SSMJIT_ERR_NO_MEMORY);
    }
    size_t units = 0; /* those load_all loads */
    for (size_t u = 0; u < all; u++) {
        if (ssmjit_unit_specialised(u))
            continue;
        ssmjit_status st = sj_unit_image(ctx, u, &images[units]);
        names[units++] = ssmjit_unit_name(u);
        if (st != SSMJIT_OK) {
            free(images);
            free(names);
            return cli_fail("reading images", st);
        }
    }
    int pushed;
    ssmjit_status st = sj_context_enter(ctx, &pushed);
    double t0 = cli_now();
    for (size_t u = 0; u < units && st == SSMJIT_OK; u++)
        st = sj_image_load_raw(ctx, images[u], names[u], library);
    double ms = (cli_now() - t0) * 1e3;
    sj_context_leave(ctx, pushed);
    free(images);
    free(names);
    if (st != SSMJIT_OK)
        return cli_fail(library ? "cuLibraryLoadData" : "cuModuleLoadData", st);
    printf("%.4f\n", ms);
    return CLI_OK;
}

static int startup_child(const char *kind)
{
    ssmjit_context *ctx;
    ssmjit_status st = ssmjit_context_create(NULL, &ctx);
    if (st != SSMJIT_OK)
        return cli_fail("context", st);
    int rc = CLI_OK;
    double t0 = cli_now();
    if (!strcmp(kind, "first")) {
        rc = startup_first(ctx);
    } else if (!strcmp(kind, "module") || !strcmp(kind, "library")) {
        rc = startup_loads(ctx, !strcmp(kind, "library"));
    } else {
        ssmjit_model_options mo;
        ssmjit_model_options_init(&mo);
        st = !strcmp(kind, "all") ? ssmjit_context_load_all(ctx) : sj_model_prepare(ctx, &bench_130m, &mo, SSMJIT_PREPARE_WAIT);
        if (st == SSMJIT_OK)
            printf("%.4f\n", (cli_now() - t0) * 1e3);
        else
            rc = cli_fail(kind, st);
    }
    ssmjit_context_destroy(ctx);
    return rc;
}

/* Runs `bench --startup-child kind` and reads its numbers (up to 2). */
static int child_ms(const char *kind, double ms[2])
{
    char cmd[4200], args[64];
    snprintf(args, sizeof args, "bench --startup-child %s", kind);
    if (bench_self_command(args, cmd, sizeof cmd) != 0)
        return -1;
    FILE *p = popen(cmd, "r");
    int n = p ? fscanf(p, "%lf %lf", &ms[0], &ms[1]) : 0;
    if (p && pclose(p) != 0)
        n = 0;
    return n >= 1 ? 0 : -1;
}

static int bench_engine(ssmjit_context *ctx)
{
    ssmjit_status st = ssmjit_context_load_all(ctx); /* warms the disk cache */
    if (st != SSMJIT_OK)
        return cli_fail("load_all", st);
    /* Seven fresh processes of each kind, taken in turns so that drift
     * between them falls on every kind alike. */
    enum { RUNS = 7, KINDS = sizeof startup_kinds / sizeof startup_kinds[0] };
    double ms[KINDS][2][RUNS];
    for (int r = 0; r < RUNS; r++)
        for (int k = 0; k < KINDS; k++) {
            double v[2] = {0, 0};
            if (child_ms(startup_kinds[k], v) != 0) {
                fprintf(stderr, "ssmjit bench: the start-up probe '%s' failed\n", startup_kinds[k]);
                return CLI_FAILED;
            }
            ms[k][0][r] = v[0];
            ms[k][1][r] = v[1];
        }
    printf("engine  warm start (median of %d fresh processes each, from a created context):\n", RUNS);
    printf("engine    first op call: %.3f ms (a second call: %.3f ms)\n", bench_median(ms[0][0], RUNS),
           bench_median(ms[0][1], RUNS));
    printf("engine    every unit a 130m-shaped model's inference may use: %.3f ms\n", bench_median(ms[1][0], RUNS));
    printf("engine    every unit (%zu, load_all): %.3f ms\n", cli_shared_units(), bench_median(ms[2][0], RUNS));
    printf("engine    loading the %zu images alone: cuModuleLoadData %.3f ms, cuLibraryLoadData %.3f ms\n",
           cli_shared_units(), bench_median(ms[3][0], RUNS), bench_median(ms[4][0], RUNS));

    size_t elementwise = 0;
    while (elementwise < ssmjit_module_count() && strcmp(ssmjit_module_name(elementwise), "elementwise"))
        elementwise++;
    void *fn;
    const int lookups = 1000000;
    double t0 = cli_now();
    for (int i = 0; i < lookups; i++)
        if ((st = sj_kernel_lookup(ctx, elementwise, 0, "act_fwd_silu_f32", &fn)))
            return cli_fail("lookup", st);
    printf("engine  repeated kernel lookup: %.1f ns\n", (cli_now() - t0) * 1e9 / lookups);

    void *stream, *buf;
    int pushed;
    if ((st = sj_context_enter(ctx, &pushed)) || (st = sj_stream_create(ctx, &stream)) ||
        (st = sj_dev_alloc(ctx, 1024, &buf)))
        return cli_fail("setup", st);
    int64_t stride = 1, rows = 1, cols = 1;
    void *args[] = {&buf, &stride, &buf, &stride, &rows, &cols};
    const unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
    ssmjit_activation_desc desc = {sizeof desc, SSMJIT_ACT_SILU, SSMJIT_F32, 1, 1};
    ssmjit_matrix m = {buf, 0, 0};
    ssmjit_activation_fwd_args act = {sizeof act, m, m};
    double per[3][9];
    const int batch = 500;
    for (int rep = 0; rep < 9; rep++)
        for (int way = 0; way < 3; way++) {
            if ((st = sj_stream_synchronize(ctx, stream)))
                return cli_fail("sync", st);
            t0 = cli_now();
            for (int i = 0; i < batch && st == SSMJIT_OK; i++) {
                if (way == 0)
                    st = sj_launch_raw(ctx, fn, grid, block, 0, stream, args);
                else if (way == 1)
                    st = sj_launch_checked(ctx, fn, grid, block, 0, stream, args);
                else
                    st = ssmjit_activation_fwd(ctx, &desc, &act, stream);
            }
            if (st != SSMJIT_OK)
                return cli_fail("launch", st);
            per[way][rep] = (cli_now() - t0) * 1e6 / batch;
        }
    double raw = bench_median(per[0], 9), lib = bench_median(per[1], 9), op = bench_median(per[2], 9);
    printf("engine  launch: raw cuLaunchKernel %.3f us, library launcher %.3f us (+%.3f), "
           "whole op call %.3f us (+%.3f)\n", raw, lib, lib - raw, op, op - raw);
    sj_stream_synchronize(ctx, stream);
    sj_dev_free(ctx, buf);
    sj_stream_destroy(ctx, stream);
    sj_context_leave(ctx, pushed);
    return CLI_OK;
}

/* "BxLxD", each a positive integer, into *s; 0 where text is not that. */
static int parse_shape(const char *text, bench_scan_shape *s)
{
    long long b, l, d;
    int end = 0;
    if (sscanf(text, "%lldx%lldx%lld%n", &b, &l, &d, &end) != 3 || text[end] || b < 1 || l < 1 || d < 1)
        return 0;
    *s = (bench_scan_shape){b, l, d};
    return 1;
}

/* --scan-shape NS,BD: forces the token-serial forward's shape; false
 * unless NS is 4, 8 or 16 and BD 16, 32, 64 or 128. */
static int parse_scan_shape(const char *s)
{
    int ns, bd, end = 0;
    if (sscanf(s, "%d,%d%n", &ns, &bd, &end) != 2 || s[end] || (ns != 4 && ns != 8 && ns != 16) ||
        (bd != 16 && bd != 32 && bd != 64 && bd != 128))
        return 0;
    sj_scan_force_shape(ns, bd, 0);
    return 1;
}

int cli_bench(int argc, char **argv)
{
    int engine = 0, ops = 0, model = 0, gemm = 0, quick = 0, cold = 0, cache = 0, sweep = 0;
    int sweep_full = 0; /* --sweep full */
    bench_model_rows model_rows = BENCH_MODEL_ALL;
    int model_layout = 0; /* --scan-layout model */
    const char *only = NULL;
    bench_scan_shape shape = {0, 0, 0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--startup-child") && i + 1 < argc)
            return startup_child(argv[i + 1]);
        else if (!strcmp(argv[i], "--cold-child") && i + 1 < argc)
            return bench_cold_child(argv[i + 1], i + 2 < argc ? argv[i + 2] : NULL);
        else if (!strcmp(argv[i], "--cold"))
            cold = 1;
        else if (!strcmp(argv[i], "--cache"))
            cache = 1;
        else if (!strcmp(argv[i], "--sweep")) {
            sweep = 1;
            if (i + 1 < argc && !strcmp(argv[i + 1], "full"))
                sweep_full = 1, i++;
        }
        else if (!strcmp(argv[i], "--engine"))
            engine = 1;
        else if (!strcmp(argv[i], "--ops"))
            ops = 1;
        else if (!strcmp(argv[i], "--model")) {
            model = 1;
            if (i + 1 < argc && !strcmp(argv[i + 1], "decode"))
                model_rows = BENCH_MODEL_DECODE, i++;
            else if (i + 1 < argc && !strcmp(argv[i + 1], "1.4b"))
                model_rows = BENCH_MODEL_BIG, i++;
            else if (i + 1 < argc && !strcmp(argv[i + 1], "train"))
                model_rows = BENCH_MODEL_TRAIN, i++;
        }
        else if (!strcmp(argv[i], "--gemm"))
            gemm = 1;
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--scan-fwd") && i + 1 < argc &&
                 (!strcmp(argv[i + 1], "serial") || !strcmp(argv[i + 1], "parallel")))
            sj_scan_force_fwd_kernel(!strcmp(argv[++i], "serial") ? 1 : 2);
        else if (!strcmp(argv[i], "--scan-split") && i + 1 < argc && atoi(argv[i + 1]) >= 1 &&
                 atoi(argv[i + 1]) <= 64)
            sj_scan_force_split(atoi(argv[++i]));
        else if (!strcmp(argv[i], "--scan-shape") && i + 1 < argc && parse_scan_shape(argv[i + 1]))
            i++;
        else if (!strcmp(argv[i], "--scan-layout") && i + 1 < argc && !strcmp(argv[i + 1], "model"))
            model_layout = 1, i++;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc && parse_shape(argv[i + 1], &shape))
            i++;
        else {
            int h = !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
            fputs(help, h ? stdout : stderr);
            return h ? CLI_OK : CLI_USAGE;
        }
    }
    if (only && !sweep)
        ops = 1;
    if ((shape.b || model_layout) && !sweep)
        sweep = 1;
    int rc = cache ? bench_cache() : CLI_OK;
    if (rc != CLI_OK || (cache && !engine && !ops && !model && !gemm && !cold && !sweep))
        return rc;
    if (!engine && !ops && !model && !gemm && !cold && !sweep)
        engine = ops = model = 1;
    ssmjit_context *ctx;
    ssmjit_context_options o;
    ssmjit_context_options_init(&o);
    o.on_compile = cli_compile_progress;
    ssmjit_status st = ssmjit_context_create(&o, &ctx);
    if (st != SSMJIT_OK)
        return cli_fail("context", st);
    rc = engine ? bench_engine(ctx) : CLI_OK;
    if (rc == CLI_OK && ops)
        rc = bench_ops(ctx, quick, sweep ? NULL : only);
    if (rc == CLI_OK && model)
        rc = bench_model(ctx, quick, model_rows);
    if (rc == CLI_OK && gemm)
        rc = bench_gemm(ctx, quick);
    if (rc == CLI_OK && cold)
        rc = bench_cold(ctx);
    if (rc == CLI_OK && sweep)
        rc = bench_sweep(ctx, sweep_full, only, shape.b ? &shape : NULL, model_layout);
    ssmjit_context_destroy(ctx);
    return rc;
}
