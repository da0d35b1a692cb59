/* ssmjit bench: engine costs (warm start, kernel lookup, launch overhead)
 * and, from bench_ops.c, the ops' run times against the device's measured
 * copy bandwidth. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "context.h"

static const char help[] =
    "usage: ssmjit bench [--engine] [--ops] [--model] [--quick] [--only TEXT]\n"
    "Times, on GPU 0 (default: every part):\n"
    "  --engine  loading every module from a warm disk cache in a fresh process,\n"
    "            a repeated kernel lookup, and a launch through the library\n"
    "            against a raw cuLaunchKernel\n"
    "  --ops     each op at the reference shape (B=8, L=2048, D=4096, N=16) with\n"
    "            CUDA events (median of 25 runs after warm-up, rotating inputs\n"
    "            larger than L2), with GB/s against the measured copy bandwidth\n"
    "  --model   a mamba-130m-shaped model (d_model 768, 24 layers, N 16, vocab\n"
    "            50280) with random bf16 weights: prefill of 8 x 2048 tokens, greedy\n"
    "            decode at batch 1 and 64, a training step on 8 x 2048 tokens\n"
    "  --quick   smaller shapes, for a smoke test\n"
    "  --only TEXT  only the ops whose name contains TEXT (implies --ops)\n";

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Runs in a fresh process: the time from a created context to every module
 * loaded, which is what a program pays at start-up with a warm cache.
 * With `detail`, loads module by module instead and prints each time. */
static int startup_child(int detail)
{
    ssmjit_context *ctx;
    ssmjit_status st = ssmjit_context_create(NULL, &ctx);
    if (st != SSMJIT_OK)
        return cli_fail("context", st);
    double t0 = cli_now();
    if (!detail) {
        st = ssmjit_context_load_all(ctx);
        printf("%.4f\n", (cli_now() - t0) * 1e3);
    }
    if (detail) {
        /* What the first driver call on the context costs, apart from loading. */
        int pushed;
        st = sj_context_enter(ctx, &pushed);
        if (st == SSMJIT_OK)
            st = sj_cu_result(ctx->drv->CtxSynchronize(), "cuCtxSynchronize");
        sj_context_leave(ctx, pushed);
        printf("engine    first driver call on the context: %.3f ms\n", (cli_now() - t0) * 1e3);
    }
    for (int m = 0; detail && m < SJ_MODULE_COUNT && st == SSMJIT_OK; m++) {
        int fast = !sj_modules[m].backward;
        CUmodule h;
        double t = cli_now();
        st = sj_module_ensure(ctx, (sj_module_id)m, fast, &h);
        printf("engine    %-16s %-9s %.3f ms\n", sj_modules[m].name, fast ? "fast-math" : "exact",
               (cli_now() - t) * 1e3);
    }
    if (st != SSMJIT_OK)
        return cli_fail("loading modules", st);
    ssmjit_context_destroy(ctx);
    return CLI_OK;
}

/* The command line running this program with `args`, in a fresh process. */
static int self_command(const char *args, char *cmd, size_t cap)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    return snprintf(cmd, cap, "'%s' %s", exe, args) < (int)cap ? 0 : -1;
}

static double child_load_ms(void)
{
    char cmd[4200];
    if (self_command("bench --startup-child", cmd, sizeof cmd) != 0)
        return -1;
    FILE *p = popen(cmd, "r");
    double ms = -1;
    if (!p || fscanf(p, "%lf", &ms) != 1)
        ms = -1;
    if (p)
        pclose(p);
    return ms;
}

static int bench_engine(ssmjit_context *ctx)
{
    ssmjit_status st = ssmjit_context_load_all(ctx); /* warms the disk cache */
    if (st != SSMJIT_OK)
        return cli_fail("load_all", st);
    double loads[7];
    for (int i = 0; i < 7; i++)
        if ((loads[i] = child_load_ms()) < 0) {
            fprintf(stderr, "ssmjit bench: the start-up probe process failed\n");
            return CLI_FAILED;
        }
    printf("engine  warm start, all %zu modules x variants: %.3f ms (median of 7 fresh processes)\n",
           ssmjit_module_count(), bench_median(loads, 7));
    char cmd[4200];
    fflush(stdout);
    if (self_command("bench --startup-detail", cmd, sizeof cmd) != 0 || system(cmd) != 0)
        fprintf(stderr, "ssmjit bench: the per-module start-up probe failed\n");

    CUfunction fn;
    const int lookups = 1000000;
    double t0 = cli_now();
    for (int i = 0; i < lookups; i++)
        if ((st = sj_kernel_get(ctx, SJ_MODULE_ELEMENTWISE, SJ_ROLE_FORWARD, "act_fwd_silu_f32", &fn)))
            return cli_fail("lookup", st);
    printf("engine  repeated kernel lookup: %.1f ns\n", (cli_now() - t0) * 1e9 / lookups);

    const sj_driver *d = ctx->drv;
    CUstream stream;
    CUdeviceptr buf;
    int pushed;
    if ((st = sj_context_enter(ctx, &pushed)) || (st = SJ_CU(d, StreamCreate, &stream, CU_STREAM_NON_BLOCKING)) ||
        (st = SJ_CU(d, MemAlloc, &buf, 1024)))
        return cli_fail("setup", st);
    int64_t stride = 1, rows = 1, cols = 1;
    void *args[] = {&buf, &stride, &buf, &stride, &rows, &cols};
    ssmjit_unary_desc desc = {SSMJIT_F32, 1, 1};
    ssmjit_matrix m = {(void *)(uintptr_t)buf, 0};
    double per[3][9];
    const int batch = 500;
    for (int rep = 0; rep < 9; rep++)
        for (int way = 0; way < 3; way++) {
            if ((st = SJ_CU(d, StreamSynchronize, stream)))
                return cli_fail("sync", st);
            t0 = cli_now();
            for (int i = 0; i < batch && st == SSMJIT_OK; i++) {
                if (way == 0)
                    st = SJ_CU(d, LaunchKernel, fn, 1, 1, 1, 32, 1, 1, 0, stream, args, NULL);
                else if (way == 1)
                    st = sj_launch(ctx, fn, (sj_dim3){1, 1, 1}, (sj_dim3){32, 1, 1}, 0, stream, args);
                else
                    st = ssmjit_activation_fwd(ctx, SSMJIT_ACT_SILU, &desc, m, m, stream);
            }
            if (st != SSMJIT_OK)
                return cli_fail("launch", st);
            per[way][rep] = (cli_now() - t0) * 1e6 / batch;
        }
    double raw = bench_median(per[0], 9), lib = bench_median(per[1], 9), op = bench_median(per[2], 9);
    printf("engine  launch: raw cuLaunchKernel %.3f us, library launcher %.3f us (+%.3f), "
           "whole op call %.3f us (+%.3f)\n", raw, lib, lib - raw, op, op - raw);
    SJ_CU(d, StreamSynchronize, stream);
    SJ_CU(d, MemFree, buf);
    SJ_CU(d, StreamDestroy, stream);
    sj_context_leave(ctx, pushed);
    return CLI_OK;
}

int cli_bench(int argc, char **argv)
{
    int engine = 0, ops = 0, model = 0, quick = 0;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--startup-child"))
            return startup_child(0);
        else if (!strcmp(argv[i], "--startup-detail"))
            return startup_child(1);
        else if (!strcmp(argv[i], "--engine"))
            engine = 1;
        else if (!strcmp(argv[i], "--ops"))
            ops = 1;
        else if (!strcmp(argv[i], "--model"))
            model = 1;
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i], ops = 1;
        else {
            int h = !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
            fputs(help, h ? stdout : stderr);
            return h ? CLI_OK : CLI_USAGE;
        }
    }
    if (!engine && !ops && !model)
        engine = ops = model = 1;
    ssmjit_context *ctx;
    ssmjit_status st = ssmjit_context_create(NULL, &ctx);
    if (st != SSMJIT_OK)
        return cli_fail("context", st);
    int rc = engine ? bench_engine(ctx) : CLI_OK;
    if (rc == CLI_OK && ops)
        rc = bench_ops(ctx, quick, only);
    if (rc == CLI_OK && model)
        rc = bench_model(ctx, quick);
    ssmjit_context_destroy(ctx);
    return rc;
}
