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
#include "cli.h"
#include "context.h"
#include "validate.h"

#define RUNS 25
#define WARMUP 3

static const sj_driver *drv;

ssmjit_status bench_alloc(size_t bytes, void **out)
{
    CUdeviceptr p = 0;
    ssmjit_status st = SJ_CU(drv, MemAlloc, &p, bytes ? bytes : 16);
    /* Random-looking, finite data: never time on zeros. */
    if (st == SSMJIT_OK)
        st = SJ_CU(drv, MemsetD32Async, p, 0x3e9a3e9au, (bytes + 3) / 4, NULL);
    *out = (void *)(uintptr_t)p;
    return st;
}

ssmjit_status bench_fill_f32(void *p, size_t n, float v)
{
    unsigned bits;
    memcpy(&bits, &v, sizeof bits);
    return SJ_CU(drv, MemsetD32Async, (CUdeviceptr)(uintptr_t)p, bits, n, NULL);
}

void bench_free(void *p)
{
    if (p)
        SJ_CU(drv, MemFree, (CUdeviceptr)(uintptr_t)p);
}

/* Median milliseconds of run(state, rotation) on stream. */
static ssmjit_status time_case(bench_run_fn run, void *state, int rotations, CUstream stream, double *ms)
{
    CUevent ev[2 * RUNS];
    double t[RUNS];
    ssmjit_status st = SSMJIT_OK;
    int made = 0;
    for (; made < 2 * RUNS && st == SSMJIT_OK; made++)
        st = SJ_CU(drv, EventCreate, &ev[made], CU_EVENT_DEFAULT);
    for (int i = 0; i < WARMUP && st == SSMJIT_OK; i++)
        st = run(state, i % rotations, stream);
    for (int i = 0; i < RUNS && st == SSMJIT_OK; i++) {
        st = SJ_CU(drv, EventRecord, ev[2 * i], stream);
        if (st == SSMJIT_OK)
            st = run(state, i % rotations, stream);
        if (st == SSMJIT_OK)
            st = SJ_CU(drv, EventRecord, ev[2 * i + 1], stream);
    }
    for (int i = 0; i < RUNS && st == SSMJIT_OK; i++) {
        float f = 0;
        st = SJ_CU(drv, EventSynchronize, ev[2 * i + 1]);
        if (st == SSMJIT_OK)
            st = SJ_CU(drv, EventElapsedTime, &f, ev[2 * i], ev[2 * i + 1]);
        t[i] = f;
    }
    for (int i = 0; i < made; i++)
        SJ_CU(drv, EventDestroy, ev[i]);
    if (st == SSMJIT_OK)
        *ms = bench_median(t, RUNS);
    return st;
}

typedef struct {
    void *src[2], *dst[2];
    size_t bytes;
} copy_state;

static ssmjit_status copy_run(void *s, int rot, void *stream)
{
    copy_state *c = s;
    return SJ_CU(drv, MemcpyDtoDAsync, (CUdeviceptr)(uintptr_t)c->dst[rot], (CUdeviceptr)(uintptr_t)c->src[rot],
                 c->bytes, (CUstream)stream);
}

static ssmjit_status copy_bandwidth(CUstream stream, double *gbps)
{
    copy_state c = {.bytes = (size_t)1 << 30};
    ssmjit_status st = SSMJIT_OK;
    for (int i = 0; i < 2 && st == SSMJIT_OK; i++) {
        st = bench_alloc(c.bytes, &c.src[i]);
        if (st == SSMJIT_OK)
            st = bench_alloc(c.bytes, &c.dst[i]);
    }
    double ms = 0;
    if (st == SSMJIT_OK)
        st = time_case(copy_run, &c, 2, stream, &ms);
    for (int i = 0; i < 2; i++) {
        bench_free(c.src[i]);
        bench_free(c.dst[i]);
    }
    *gbps = 2.0 * (double)c.bytes / (ms * 1e6);
    return st;
}

/* Times one case (as it is, or with a variant forced) and prints its row or
 * the failure; CLI_OK or the CLI's failure code. */
static int time_row(const char *name, const bench_case *c, const bench_instance *in, ssmjit_dtype dtype,
                    CUstream stream, double copy, ssmjit_status *st)
{
    double ms = 0;
    *st = time_case(c->run, in->state, in->rotations, stream, &ms);
    if (*st != SSMJIT_OK)
        return cli_fail(name, *st);
    double gbps = in->bytes / (ms * 1e6);
    printf("%-34s %-30s %-5s %9.4f %9.0f %6.0f%%\n", name, in->shape, sj_dtype_suffix(dtype), ms, gbps,
           100.0 * gbps / copy);
    return CLI_OK;
}

int bench_ops(ssmjit_context *ctx, int quick, const char *only)
{
    drv = ctx->drv;
    int pushed;
    CUstream stream;
    ssmjit_status st = sj_context_enter(ctx, &pushed);
    if (st == SSMJIT_OK)
        st = SJ_CU(drv, StreamCreate, &stream, CU_STREAM_NON_BLOCKING);
    if (st != SSMJIT_OK)
        return cli_fail("bench setup", st);
    double copy = 0;
    if ((st = copy_bandwidth(stream, &copy)) != SSMJIT_OK)
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
                st = sj_cu_result(drv->CtxSynchronize(), "cuCtxSynchronize");
            int row = st == SSMJIT_OK ? time_row(c->name, c, &in, dtype, stream, copy, &st) : cli_fail(c->name, st);
            for (const bench_variant *v = c->variants; v && v->label && st == SSMJIT_OK; v++) {
                v->force(v->a, v->b, v->c);
                row = time_row(v->label, c, &in, dtype, stream, copy, &st);
                v->force(0, 0, 0);
            }
            if (row != CLI_OK)
                rc = row;
            if (in.state)
                c->teardown(in.state);
            fflush(stdout);
        }
    SJ_CU(drv, StreamDestroy, stream);
    sj_context_leave(ctx, pushed);
    return rc;
}
