/* ssmjit bench --ops: each op timed with CUDA events (median of 25 runs
 * after 3 warm-ups) over input sets rotated so that together they exceed
 * the L2 cache, reported as ms, GB/s (each input read once, each output
 * written once) and that as a fraction of the copy bandwidth measured
 * here, in the same run. */
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

typedef struct {
    ssmjit_context *ctx;
    void *src[2], *dst[2];
    size_t bytes;
} copy_state;

static ssmjit_status copy_run(void *s, int rot, void *stream)
{
    copy_state *c = s;
    return sj_dev_copy_async(c->ctx, c->dst[rot], c->src[rot], c->bytes, stream);
}

static ssmjit_status copy_bandwidth(ssmjit_context *ctx, void *stream, double *gbps)
{
    copy_state c = {.ctx = ctx, .bytes = (size_t)1 << 30};
    ssmjit_status st = SSMJIT_OK;
    for (int i = 0; i < 2 && st == SSMJIT_OK; i++) {
        st = bench_alloc(ctx, c.bytes, &c.src[i]);
        if (st == SSMJIT_OK)
            st = bench_alloc(ctx, c.bytes, &c.dst[i]);
    }
    double ms = 0;
    if (st == SSMJIT_OK)
        st = time_case(ctx, copy_run, &c, 2, stream, &ms);
    for (int i = 0; i < 2; i++) {
        bench_free(ctx, c.src[i]);
        bench_free(ctx, c.dst[i]);
    }
    *gbps = 2.0 * (double)c.bytes / (ms * 1e6);
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

int bench_ops(ssmjit_context *ctx, int quick, const char *only)
{
    int pushed;
    void *stream = NULL;
    ssmjit_status st = sj_context_enter(ctx, &pushed);
    if (st == SSMJIT_OK)
        st = sj_stream_create(ctx, &stream);
    if (st != SSMJIT_OK)
        return cli_fail("bench setup", st);
    double copy = 0;
    if ((st = copy_bandwidth(ctx, stream, &copy)) != SSMJIT_OK)
        return cli_fail("copy bandwidth", st);
    printf("\ncopy bandwidth (device to device, read + write): %.0f GB/s\n\n", copy);
    printf("%-34s %-30s %-5s %9s %9s %7s\n", "op", "shape", "dtype", "ms", "GB/s", "of copy");
    int rc = CLI_OK;
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
    sj_stream_destroy(ctx, stream);
    sj_context_leave(ctx, pushed);
    return rc;
}
