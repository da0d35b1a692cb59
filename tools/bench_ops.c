/* ssmjit bench --ops: each op timed with CUDA events (median of 25 runs
 * after 3 warm-ups) over input sets rotated so that together they exceed
 * the L2 cache, reported as ms, GB/s (each input read once, each output
 * written once) and that as a fraction of the copy bandwidth measured
 * here, in the same run.  ssmjit bench --sweep: the selective scan timed
 * so over a grid of shapes, against the least bytes it must move. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_cases.h"
#include "bench_parts.h"
#include "cli.h"
#include "ssmjit_internal.h"

#define RUNS 25
#define WARMUP 3

/* One run of a case: the rotation the i-th call uses. */
typedef struct timed_case {
    bench_run_fn run;
    void *state;
    int rotations;
} timed_case;

static ssmjit_status timed_run(void *arg, int i, void *stream)
{
    const timed_case *c = arg;
    return c->run(c->state, i % c->rotations, stream);
}

/* Median milliseconds of run(state, rotation) on stream. */
static ssmjit_status time_case(ssmjit_context *ctx, bench_run_fn run, void *state, int rotations, void *stream,
                               double *ms)
{
    double t[RUNS];
    timed_case c = {run, state, rotations};
    ssmjit_status st = sj_time_with_events(ctx, stream, WARMUP, RUNS, timed_run, &c, t);
    if (st == SSMJIT_OK)
        *ms = bench_median(t, RUNS);
    return st;
}

/* Times one case (as it is, or with a variant forced) and prints its row or
 * the failure; CLI_OK or the CLI's failure code. */
static int time_row(ssmjit_context *ctx, const char *name, const bench_case *c, const bench_instance *in,
                    ssmjit_dtype dtype, void *stream, double copy, ssmjit_status *st)
{
    double ms = 0;
    *st = time_case(ctx, c->run, in->state, in->rotations, stream, &ms);
    if (*st != SSMJIT_OK)
        return cli_fail(name, *st);
    double gbps = in->bytes / (ms * 1e6);
    printf("%-34s %-30s %-5s %9.4f %9.0f %6.0f%%\n", name, in->shape, sj_dtype_suffix(dtype), ms, gbps,
           100.0 * gbps / copy);
    return CLI_OK;
}

static void timing_end(ssmjit_context *ctx, int pushed, void *stream)
{
    sj_stream_destroy(ctx, stream);
    sj_context_leave(ctx, pushed);
}

/* ctx entered, a stream made to time on, the copy bandwidth measured and
 * printed: CLI_OK, or the failure's code with nothing left to undo. */
static int timing_begin(ssmjit_context *ctx, int *pushed, void **stream, double *copy)
{
    const char *what = "bench setup";
    *stream = NULL;
    ssmjit_status st = sj_context_enter(ctx, pushed);
    if (st == SSMJIT_OK)
        st = sj_stream_create(ctx, stream);
    if (st == SSMJIT_OK) {
        what = "copy bandwidth";
        st = bench_copy_bandwidth(ctx, *stream, copy);
    }
    if (st != SSMJIT_OK) {
        timing_end(ctx, *pushed, *stream);
        return cli_fail(what, st);
    }
    printf("\ncopy bandwidth (device to device, read + write): %.0f GB/s\n\n", *copy);
    return CLI_OK;
}

int bench_ops(ssmjit_context *ctx, int quick, const char *only)
{
    int pushed;
    void *stream;
    double copy = 0;
    ssmjit_status st;
    int rc = timing_begin(ctx, &pushed, &stream, &copy);
    if (rc != CLI_OK)
        return rc;
    printf("%-34s %-30s %-5s %9s %9s %7s\n", "op", "shape", "dtype", "ms", "GB/s", "of copy");
    for (const bench_case *c = bench_cases; c->name; c++)
        for (int dt = 0; dt < 3 && (!only || strstr(c->name, only)); dt++) {
            bench_instance in = {0};
            ssmjit_dtype dtype = (ssmjit_dtype)dt;
            st = c->setup(ctx, dtype, quick, &in);
            /* setup's fills and runs went to the legacy stream */
            if (st == SSMJIT_OK)
                st = sj_dev_synchronize(ctx);
            int row = st == SSMJIT_OK ? time_row(ctx, c->name, c, &in, dtype, stream, copy, &st)
                                      : cli_fail(c->name, st);
            for (const bench_variant *v = c->variants; v && v->label && st == SSMJIT_OK; v++) {
                v->force(v->a, v->b, v->c);
                row = time_row(ctx, v->label, c, &in, dtype, stream, copy, &st);
                v->force(0, 0, 0);
            }
            if (row != CLI_OK)
                rc = row;
            if (in.state)
                c->teardown(in.state);
            fflush(stdout);
        }
    timing_end(ctx, pushed, stream);
    return rc;
}

/* ---- ssmjit bench --sweep ------------------------------------------------ */

/* A shape one set of whose buffers (at f32, with the workspaces) passes
 * this is skipped. */
#define SWEEP_LIMIT ((size_t)8 << 30)

/* (A set is wasted on the sweep when no timed run uses it.) */
_Static_assert(BENCH_SWEEP_SETS <= RUNS, "more input sets than timed runs");

static const char *const sweep_dirs[BENCH_SCAN_DIRS] = {"fwd", "fwd+ckpt", "bwd"};

typedef struct sweep_row {
    bench_scan_shape shape;
    ssmjit_dtype dtype;
    bench_scan_dir dir;
    double ms, floor_pct;
    int cached; /* its sets together move less than BENCH_ROTATE_BYTES */
    char path[16]; /* bench_scan_path */
} sweep_row;

static void sweep_explain(const char *gpu, const char *which, int shapes)
{
    printf("selective scan sweep on %s: N = %d with z, D, delta_bias and softplus;\n"
           "the forward is given the split workspace, the backward its full workspace and\n"
           "the forward's checkpoint: the library picks its launch shapes and splits.\n"
           "ms: median of %d CUDA-event timings after %d warm-ups, each call on the next of\n"
           "`sets` input sets (allocated once a shape at f32 sizes, for all three dtypes):\n"
           "enough (at most %d) that the calls move %.0f MiB, twice a 60 MB L2; ms* where\n"
           "they move less, so that the L2 may serve part of the inputs.\n"
           "floor: the least bytes a call moves over the copy bandwidth: fwd reads u, delta,\n"
           "z, B, C and writes y; fwd+ckpt also writes the f32 checkpoint; bwd reads u,\n"
           "delta, z, B, C, dy and the checkpoint and writes du, ddelta, dz, dB, dC.\n"
           "%% floor = floor ms / ms x 100.  path: the library's choice, \"split S\" (S\n"
           "segments a row), \"tp\" (the token-parallel forward) or \"unsplit\".\n"
           "%d shapes: %s;\n"
           "a shape one set of whose buffers passes %.0f GiB is skipped.\n\n",
           gpu, BENCH_SWEEP_N, RUNS, WARMUP, BENCH_SWEEP_SETS, BENCH_ROTATE_BYTES / (1 << 20), shapes,
           which, (double)SWEEP_LIMIT / (1 << 30));
    printf("%6s %6s %5s %-5s %-8s %10s %9s %8s %5s  %s\n", "B", "L", "D", "dtype", "dir", "ms", "floor ms",
           "% floor", "sets", "path");
}

/* Times the three calls at shape sh in each dtype on one allocation,
 * printing each row and adding it to rows[(*n)++], or counts the shape in
 * *skipped; CLI_OK, or the code of the failure that ended the shape. */
static int sweep_shape(ssmjit_context *ctx, bench_scan_shape sh, int model_layout, void *stream, double copy,
                       sweep_row *rows, int *n, int *skipped)
{
    char name[80], label[96];
    bench_scan_shape_name(sh, name, sizeof name);
    snprintf(label, sizeof label, "sweep %s", name);
    /* as many sets as the call that moves the least needs: a 16-bit forward */
    const int sets = bench_rotations(bench_scan_floor_bytes(sh, BENCH_SWEEP_N, 2, BENCH_SCAN_FWD, 0), BENCH_SWEEP_SETS);
    bench_instance in = {0};
    size_t set_bytes = 0, ckpt = 0;
    ssmjit_status st = bench_scan_sweep_setup(ctx, sh, model_layout, sets, SWEEP_LIMIT, &in, &set_bytes, &ckpt);
    if (st == SSMJIT_OK && !in.state) {
        printf("%6lld %6lld %5lld skipped: one set of buffers takes %.1f GiB\n", (long long)sh.b, (long long)sh.l,
               (long long)sh.d, (double)set_bytes / (1 << 30));
        ++*skipped;
        return CLI_OK;
    }
    int rc = st == SSMJIT_OK ? CLI_OK : cli_fail(label, st);
    for (int dt = 0; dt < 3 && rc == CLI_OK; dt++) {
        const ssmjit_dtype dtype = (ssmjit_dtype)dt;
        st = bench_scan_sweep_dtype(in.state, dtype);
        /* the fills and the checkpoints went to the legacy stream */
        if (st == SSMJIT_OK)
            st = sj_dev_synchronize(ctx);
        for (int d = 0; d < BENCH_SCAN_DIRS && st == SSMJIT_OK; d++) {
            const bench_scan_dir dir = (bench_scan_dir)d;
            double ms = 0;
            st = time_case(ctx, bench_scan_sweep_runs[dir], in.state, in.rotations, stream, &ms);
            if (st != SSMJIT_OK)
                break;
            const double bytes = bench_scan_floor_bytes(sh, BENCH_SWEEP_N, ssmjit_dtype_size(dtype), dir, ckpt);
            const double floor_ms = bytes / (copy * 1e6);
            sweep_row r = {sh, dtype, dir, ms, 100.0 * floor_ms / ms, in.rotations * bytes < BENCH_ROTATE_BYTES, ""};
            bench_scan_path(ctx, sh, BENCH_SWEEP_N, dtype, dir, r.path, sizeof r.path);
            rows[(*n)++] = r;
            printf("%6lld %6lld %5lld %-5s %-8s %9.4f%c %9.4f %7.1f%% %5d  %s\n", (long long)sh.b, (long long)sh.l,
                   (long long)sh.d, sj_dtype_suffix(dtype), sweep_dirs[dir], ms, r.cached ? '*' : ' ', floor_ms,
                   r.floor_pct, in.rotations, r.path);
        }
        if (st != SSMJIT_OK)
            rc = cli_fail(label, st);
        fflush(stdout);
    }
    bench_scan_sweep_free(in.state);
    return rc;
}

/* The rows again as a markdown table, for bench/NOTES.md. */
static void sweep_table(const char *gpu, double copy, const sweep_row *rows, int n)
{
    int cached = 0;
    printf("\nSelective scan, N = %d with z, D, delta_bias, softplus, on %s; copy %.0f GB/s:\n\n", BENCH_SWEEP_N, gpu,
           copy);
    printf("| B | L | D | dtype | dir | ms | %% floor | path |\n|---:|---:|---:|---|---|---:|---:|---|\n");
    for (const sweep_row *r = rows; r < rows + n; r++) {
        printf("| %lld | %lld | %lld | %s | %s | %.4f%s | %.1f%% | %s |\n", (long long)r->shape.b,
               (long long)r->shape.l, (long long)r->shape.d, sj_dtype_suffix(r->dtype), sweep_dirs[r->dir], r->ms,
               r->cached ? "*" : "", r->floor_pct, r->path);
        cached |= r->cached;
    }
    if (cached)
        printf("\n\\*: the calls' input sets together move less than %.0f MiB: the L2 may serve part of them.\n",
               BENCH_ROTATE_BYTES / (1 << 20));
}

int bench_sweep(ssmjit_context *ctx, int full, const char *only, const bench_scan_shape *shape, int model_layout)
{
    const int count = shape ? 1 : bench_sweep_shapes(full, NULL, 0);
    bench_scan_shape *shapes = malloc((size_t)count * sizeof *shapes);
    sweep_row *rows = malloc((size_t)count * 3 * BENCH_SCAN_DIRS * sizeof *rows);
    int pushed, n = 0, skipped = 0, rc = shapes && rows ? CLI_OK : cli_fail("sweep", SSMJIT_ERR_NO_MEMORY);
    void *stream;
    double copy = 0;
    if (rc == CLI_OK)
        rc = timing_begin(ctx, &pushed, &stream, &copy);
    if (rc != CLI_OK) {
        free(shapes);
        free(rows);
        return rc;
    }
    if (shape)
        shapes[0] = *shape;
    else
        bench_sweep_shapes(full, shapes, count);
    char gpu[320] = "GPU ?";
    ssmjit_context_info ci;
    ssmjit_device_info di;
    if (ssmjit_context_get_info(ctx, &ci) == SSMJIT_OK && ssmjit_device_get_info(ci.device, &di) == SSMJIT_OK)
        snprintf(gpu, sizeof gpu, "GPU %d (%s, %d SMs)", ci.device, di.name, di.sm_count);
    char which[96] = "grid A";
    if (shape)
        bench_scan_shape_name(*shape, which, sizeof which);
    else if (full)
        snprintf(which, sizeof which, "grid A, then grid B less grid A's");
    sweep_explain(gpu, which, count);
    if (model_layout) {
        const bench_scan_layout at1536 = bench_scan_layout_of(1, 1536, BENCH_SWEEP_N);
        printf("as a model lays them out: B and C (dB, dC) columns R and R + N of an x_proj output\n"
               "of R + 2N a token, R = D / 32 rounded up (at D = 1536: %lld of %lld); z (dz) the second\n"
               "half of an in_proj output of 2 D a token.\n\n",
               (long long)at1536.b_col, (long long)at1536.bc_width);
    }
    const double t0 = cli_now();
    for (int i = 0; i < count; i++) {
        if (!bench_sweep_wanted(shapes[i], only))
            continue;
        int r = sweep_shape(ctx, shapes[i], model_layout, stream, copy, rows, &n, &skipped);
        if (r != CLI_OK)
            rc = r;
    }
    printf("\nsweep: %d rows in %.1f s; %d of %d shapes skipped\n", n, cli_now() - t0, skipped, count);
    sweep_table(gpu, copy, rows, n);
    timing_end(ctx, pushed, stream);
    free(shapes);
    free(rows);
    return rc;
}
