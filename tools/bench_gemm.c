/* ssmjit bench --gemm: a Linear layer's product C [m, n] = A [m, k] W [n, k]^T
 * at the projections of the mamba-130m and -1.4b shapes, through cuBLAS
 * and through the skinny kernels, m = 1, 8, 64, 256: the measurements
 * behind the rule that picks between them (sj_gemm_skinny_wins,
 * bench/NOTES.md).  Each call is timed inside a CUDA graph of 24 calls
 * back to back, as a decode step runs them, with W rotated over sets that
 * together exceed the L2 cache (A stays there, as a decode step's
 * activations do). */
#include <stdint.h>
#include <stdio.h>

#include "bench.h"
#include "bench_parts.h"
#include "cli.h"
#include "ssmjit_internal.h"

#define CALLS 24
#define RUNS 25
#define WARMUP 3
#define MOST_SETS 64

typedef struct gemm_shape {
    const char *model, *what;
    int64_t n, k;
} gemm_shape;

/* The models whose Linear layers are timed (sj_model_linear_shape gives
 * their shapes). */
static const struct {
    const char *name;
    const ssmjit_model_config *config;
} models[] = {{"130m", &bench_130m}, {"1.4b", &bench_1p4b}};
static const int64_t rows[] = {1, 8, 64, 256};

typedef struct gemm_run {
    sj_blas *blas;
    int path;
    ssmjit_dtype dtype;
    int64_t m, n, k;
    void *a, *c;
    void *w[MOST_SETS];
    int sets;
} gemm_run;

static ssmjit_status run_once(void *arg, int i, void *stream)
{
    const gemm_run *r = arg;
    return sj_linear_on_path(r->blas, r->path, r->dtype, r->m, r->n, r->k, r->a, r->w[i % r->sets], r->c, stream);
}

/* Microseconds a call on r's path: the median graph launch over CALLS. */
static ssmjit_status time_path(ssmjit_context *ctx, gemm_run *r, void *stream, double *us)
{
    double ms[RUNS];
    ssmjit_status st = run_once(r, 0, stream);
    if (st == SSMJIT_OK)
        st = sj_stream_synchronize(ctx, stream);
    if (st == SSMJIT_OK)
        st = sj_time_graph(ctx, stream, CALLS, WARMUP, RUNS, run_once, r, ms);
    if (st == SSMJIT_OK)
        *us = bench_median(ms, RUNS) * 1e3 / CALLS;
    return st;
}

static void free_run(ssmjit_context *ctx, gemm_run *r)
{
    bench_free(ctx, r->a);
    bench_free(ctx, r->c);
    for (int i = 0; i < r->sets; i++)
        bench_free(ctx, r->w[i]);
}

/* One row: both paths at one shape and m. */
static ssmjit_status gemm_row(ssmjit_context *ctx, sj_blas *blas, ssmjit_dtype dtype, const gemm_shape *s,
                              int64_t m, void *stream, double copy)
{
    size_t es = ssmjit_dtype_size(dtype), wbytes = (size_t)(s->n * s->k) * es;
    gemm_run r = {blas, 1, dtype, m, s->n, s->k, NULL, NULL, {NULL}, 0};
    ssmjit_status st = bench_alloc(ctx, (size_t)(m * s->k) * es, &r.a);
    if (st == SSMJIT_OK)
        st = bench_alloc(ctx, (size_t)(m * s->n) * es, &r.c);
    int want = bench_rotations((double)wbytes, MOST_SETS);
    while (st == SSMJIT_OK && r.sets < want)
        if ((st = bench_alloc(ctx, wbytes, &r.w[r.sets])) == SSMJIT_OK)
            r.sets++;
    double us[2] = {0, 0};
    int splits = sj_linear_skinny_splits(blas, 2, dtype, m, s->n, s->k, r.a, r.w[0], r.c);
    int by_rule = sj_linear_skinny_splits(blas, 0, dtype, m, s->n, s->k, r.a, r.w[0], r.c);
    if (st == SSMJIT_OK)
        st = time_path(ctx, &r, stream, &us[0]);
    r.path = 2;
    if (st == SSMJIT_OK && splits)
        st = time_path(ctx, &r, stream, &us[1]);
    free_run(ctx, &r);
    if (st != SSMJIT_OK)
        return st;
    printf("gemm  %-4s  %s %-8s n %5lld k %4lld  m %3lld:  cuBLAS %7.2f us (%4.0f GB/s)", sj_dtype_suffix(dtype),
           s->model, s->what, (long long)s->n, (long long)s->k, (long long)m, us[0], wbytes / (us[0] * 1e3));
    if (splits)
        printf("  skinny %7.2f us (%4.0f GB/s, %2.0f%% of copy, %d split%s)  skinny/cuBLAS %.2f", us[1],
               wbytes / (us[1] * 1e3), 100.0 * wbytes / (us[1] * 1e3) / copy, splits, splits > 1 ? "s" : "",
               us[1] / us[0]);
    else
        printf("  skinny: cannot run");
    printf("  rule: %s\n", by_rule ? "skinny" : "cuBLAS");
    return SSMJIT_OK;
}

int bench_gemm(ssmjit_context *ctx, int quick)
{
    int pushed;
    void *stream = NULL;
    sj_blas *blas = NULL;
    double copy = 0;
    ssmjit_status st = sj_context_enter(ctx, &pushed);
    if (st == SSMJIT_OK)
        st = sj_stream_create(ctx, &stream);
    if (st == SSMJIT_OK)
        st = bench_copy_bandwidth(ctx, stream, &copy);
    if (st == SSMJIT_OK)
        st = sj_blas_create(ctx, &blas);
    if (st == SSMJIT_OK)
        printf("\ncopy bandwidth (device to device, read + write): %.0f GB/s\n"
               "GEMM C [m, n] = A [m, k] W [n, k]^T, us a call in a graph of %d; GB/s: W's bytes over the time\n\n",
               copy, CALLS);
    static const ssmjit_dtype dtypes[] = {SSMJIT_BF16, SSMJIT_F16};
    for (size_t d = 0; d < 2 && st == SSMJIT_OK; d++) {
        /* --quick: one shape */
        size_t nmodels = quick ? 1 : sizeof models / sizeof *models;
        for (size_t mi = 0; mi < nmodels && st == SSMJIT_OK; mi++) {
            gemm_shape s = {models[mi].name, NULL, 0, 0};
            for (int i = 0; (i == 0 || !quick) && sj_model_linear_shape(models[mi].config, i, &s.what, &s.n, &s.k);
                 i++)
                for (size_t j = 0; j < sizeof rows / sizeof *rows && st == SSMJIT_OK; j++)
                    st = gemm_row(ctx, blas, dtypes[d], &s, rows[j], stream, copy);
        }
    }
    sj_blas_destroy(blas);
    sj_stream_destroy(ctx, stream);
    sj_context_leave(ctx, pushed);
    return st == SSMJIT_OK ? CLI_OK : cli_fail("bench --gemm", st);
}
