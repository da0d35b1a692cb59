/* Soak: 10,000 launches of a mix of ops (each kernel module, f32 and bf16)
 * from 8 host threads, each with its own stream, on one context; then the
 * same from 4 threads on each of two GPUs at once, where there are two.
 * Every launch writes into outputs poisoned just before it, and its result
 * must equal, byte for byte, what the same op gave on the main thread on
 * GPU 0 first (forward kernels have no atomics, so any difference is
 * corruption: a race in the library's per-context state, a wrong stream or
 * context, a shared buffer).  The silu baseline is also held to the double
 * reference so the baseline itself is known good. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "gpu_util.h"
#include "ref_elementwise.h"
#include "test_util.h"

#define THREADS 8
/* SSMJIT_SOAK_LAUNCHES lowers the count for a run under compute-sanitizer,
 * which is a hundred times slower; the mix of ops stays the same. */
#define LAUNCHES 10000
#define MAX_OUT 3

/* Read-only device inputs shared by the threads of one GPU. */
typedef struct inputs {
    void *silu_x;                                     /* [64, 1000] f32 */
    void *norm_x, *norm_res, *norm_w;                 /* [64, 768] bf16, f32, [768] f32 */
    void *conv_x, *conv_w, *conv_b;                   /* [2, 100, 96] f32, [96, 4], [96] */
    void *scan_u, *scan_dt, *scan_A, *scan_B, *scan_C; /* B=2 L=70 D=64 N=16, bf16 */
    void *scan_D, *scan_z, *scan_bias;
    void *upd_x, *upd_dt, *upd_B, *upd_C, *upd_state; /* B=4 D=64 N=16 f32; state pristine */
} inputs;

/* One GPU: its context, its CUDA context, and the inputs uploaded there. */
typedef struct gpu {
    ssmjit_context *ctx;
    CUcontext cu;
    inputs in;
} gpu;

static const sj_driver *drv;

static ssmjit_matrix mat(void *p) { return (ssmjit_matrix){p, 0, 0}; }

typedef struct soak_op {
    const char *name;
    int nout;
    size_t out_bytes[MAX_OUT];
    /* Output 0 of the state update is its in-place state, reset first. */
    int resets_state;
    ssmjit_status (*run)(const gpu *g, void *const *out, void *stream);
} soak_op;

static ssmjit_status run_silu(const gpu *g, void *const *out, void *stream)
{
    const inputs *in = &g->in;
    ssmjit_activation_desc d = {sizeof d, SSMJIT_ACT_SILU, SSMJIT_F32, 64, 1000};
    ssmjit_activation_fwd_args a = {sizeof a, mat(in->silu_x), mat(out[0])};
    return ssmjit_activation_fwd(g->ctx, &d, &a, stream);
}

static ssmjit_status run_norm(const gpu *g, void *const *out, void *stream)
{
    const inputs *in = &g->in;
    ssmjit_rmsnorm_desc d = {sizeof d, SSMJIT_BF16, 64, 768, 1e-5, 1, SSMJIT_F32};
    ssmjit_rmsnorm_fwd_args a = {sizeof a, mat(in->norm_x), mat(in->norm_res), in->norm_w, mat(out[0]), mat(out[1]),
                                 out[2]};
    return ssmjit_rmsnorm_fwd(g->ctx, &d, &a, stream);
}

static ssmjit_status run_conv(const gpu *g, void *const *out, void *stream)
{
    const inputs *in = &g->in;
    ssmjit_conv1d_desc d = {sizeof d, SSMJIT_F32, 2, 100, 96, 4, 1};
    ssmjit_conv1d_fwd_args a = {sizeof a, mat(in->conv_x), in->conv_w, in->conv_b, NULL, mat(out[0]), out[1]};
    return ssmjit_causal_conv1d_fwd(g->ctx, &d, &a, stream);
}

static ssmjit_status run_scan(const gpu *g, void *const *out, void *stream)
{
    const inputs *in = &g->in;
    ssmjit_selective_scan_desc d = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_desc);
    d.dtype = SSMJIT_BF16;
    d.batch = 2;
    d.seqlen = 70;
    d.dim = 64;
    d.dstate = 16;
    d.delta_softplus = 1;
    ssmjit_selective_scan_fwd_args a = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_fwd_args);
    a.in.u = mat(in->scan_u);
    a.in.delta = mat(in->scan_dt);
    a.in.A = in->scan_A;
    a.in.B = mat(in->scan_B);
    a.in.C = mat(in->scan_C);
    a.in.D = in->scan_D;
    a.in.z = mat(in->scan_z);
    a.in.delta_bias = in->scan_bias;
    a.y = mat(out[0]);
    a.final_state = out[1];
    return ssmjit_selective_scan_fwd(g->ctx, &d, &a, stream);
}

static ssmjit_status run_update(const gpu *g, void *const *out, void *stream)
{
    const inputs *in = &g->in;
    ssmjit_state_update_desc d = SSMJIT_STRUCT_INIT(ssmjit_state_update_desc);
    d.dtype = SSMJIT_F32;
    d.batch = 4;
    d.dim = 64;
    d.dstate = 16;
    d.dt_softplus = 1;
    ssmjit_state_update_args a = SSMJIT_STRUCT_INIT(ssmjit_state_update_args);
    a.x = mat(in->upd_x);
    a.dt = mat(in->upd_dt);
    a.A = in->scan_A;
    a.B = mat(in->upd_B);
    a.C = mat(in->upd_C);
    a.dt_bias = in->scan_bias;
    a.state = out[0];
    a.out = mat(out[1]);
    return ssmjit_selective_state_update(g->ctx, &d, &a, stream);
}

static const soak_op ops[] = {
    {"silu", 1, {64 * 1000 * 4}, 0, run_silu},
    {"rmsnorm", 3, {64 * 768 * 2, 64 * 768 * 4, 64 * 4}, 0, run_norm},
    {"conv1d", 2, {2 * 100 * 96 * 4, 2 * 96 * 3 * 4}, 0, run_conv},
    {"scan", 2, {2 * 70 * 64 * 2, 2 * 64 * 16 * 4}, 0, run_scan},
    {"state_update", 2, {4 * 64 * 16 * 4, 4 * 64 * 4}, 1, run_update},
};
#define NOPS (sizeof ops / sizeof *ops)

static unsigned char *baseline[NOPS][MAX_OUT];

/* The inputs, drawn once and uploaded to each GPU alike. */
static const struct {
    size_t field, n;
    ssmjit_dtype dtype;
    double lo, hi;
} input_specs[] = {
#define IN(f, n, t, lo, hi) {offsetof(inputs, f), n, SSMJIT_##t, lo, hi}
    IN(silu_x, 64 * 1000, F32, -6, 6),        IN(norm_x, 64 * 768, BF16, -2, 2),
    IN(norm_res, 64 * 768, F32, -2, 2),       IN(norm_w, 768, F32, 0.5, 1.5),
    IN(conv_x, 2 * 100 * 96, F32, -1, 1),     IN(conv_w, 96 * 4, F32, -1, 1),
    IN(conv_b, 96, F32, -1, 1),               IN(scan_u, 2 * 70 * 64, BF16, -1, 1),
    IN(scan_dt, 2 * 70 * 64, BF16, -3, 0),    IN(scan_A, 64 * 16, F32, -2, -0.1),
    IN(scan_B, 2 * 70 * 16, BF16, -1, 1),     IN(scan_C, 2 * 70 * 16, BF16, -1, 1),
    IN(scan_D, 64, F32, -1, 1),               IN(scan_z, 2 * 70 * 64, BF16, -2, 2),
    IN(scan_bias, 64, F32, -1, 0),            IN(upd_x, 4 * 64, F32, -1, 1),
    IN(upd_dt, 4 * 64, F32, -3, 0),           IN(upd_B, 4 * 16, F32, -1, 1),
    IN(upd_C, 4 * 16, F32, -1, 1),            IN(upd_state, 4 * 64 * 16, F32, -1, 1),
#undef IN
};
#define NINPUTS (sizeof input_specs / sizeof *input_specs)

static double *host_inputs[NINPUTS];

static void draw_inputs(void)
{
    for (size_t i = 0; i < NINPUTS; i++) {
        host_inputs[i] = tu_doubles(input_specs[i].n);
        tu_fill_uniform(host_inputs[i], input_specs[i].n, input_specs[i].lo, input_specs[i].hi);
    }
}

/* A context on `device` with the inputs uploaded there (left current). */
static gpu open_gpu(int device)
{
    gpu g;
    memset(&g, 0, sizeof g);
    ssmjit_context_options o;
    ssmjit_context_options_init(&o);
    o.device = device;
    o.fast_math = SSMJIT_FAST_MATH_OFF;
    ssmjit_status st = ssmjit_context_create(&o, &g.ctx);
    if (st != SSMJIT_OK)
        fail_msg("context on GPU %d: %s", device, ssmjit_last_error());
    CUdevice dev;
    assert_int_equal(drv->DeviceGet(&dev, device), CUDA_SUCCESS);
    assert_int_equal(drv->DevicePrimaryCtxRetain(&g.cu, dev), CUDA_SUCCESS);
    assert_int_equal(drv->CtxSetCurrent(g.cu), CUDA_SUCCESS);
    for (size_t i = 0; i < NINPUTS; i++) {
        void *d = gu_upload_new(host_inputs[i], input_specs[i].n, input_specs[i].dtype);
        memcpy((char *)&g.in + input_specs[i].field, &d, sizeof d);
    }
    return g;
}

static void close_gpu(gpu *g, int device)
{
    CUdevice dev;
    assert_int_equal(drv->DeviceGet(&dev, device), CUDA_SUCCESS);
    assert_int_equal(drv->CtxSetCurrent(g->cu), CUDA_SUCCESS);
    for (size_t i = 0; i < NINPUTS; i++) {
        void *d;
        memcpy(&d, (char *)&g->in + input_specs[i].field, sizeof d);
        gu_free(d);
    }
    ssmjit_context_destroy(g->ctx);
    assert_int_equal(drv->DevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
}

/* Each thread's outputs and failures.  Workers make no cmocka calls (its
 * assertions are not thread-safe); the main thread checks what they
 * recorded. */
typedef struct worker {
    int id;
    const gpu *g;
    int count; /* launches to make */
    int launches, mismatches, failures;
    char first[256];
} worker;

static void note(worker *w, const char *fmt, const char *what, const char *detail)
{
    if (!w->first[0])
        snprintf(w->first, sizeof w->first, fmt, what, detail);
}

static int cu_ok(worker *w, CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return 1;
    w->failures++;
    note(w, "%s failed: %s", what, "driver error");
    return 0;
}

static void *work(void *arg)
{
    worker *w = arg;
    const inputs *in = &w->g->in;
    if (!cu_ok(w, drv->CtxSetCurrent(w->g->cu), "cuCtxSetCurrent"))
        return NULL;
    CUstream stream;
    if (!cu_ok(w, drv->StreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"))
        return NULL;
    CUdeviceptr out[NOPS][MAX_OUT] = {{0}};
    unsigned char *host[MAX_OUT];
    size_t most = 0;
    for (size_t o = 0; o < NOPS; o++)
        for (int k = 0; k < ops[o].nout; k++) {
            cu_ok(w, drv->MemAlloc(&out[o][k], ops[o].out_bytes[k]), "cuMemAlloc");
            most = ops[o].out_bytes[k] > most ? ops[o].out_bytes[k] : most;
        }
    for (int k = 0; k < MAX_OUT; k++)
        host[k] = malloc(most);

    for (int i = 0; i < w->count && !w->failures; i++) {
        const soak_op *op = &ops[(size_t)(i * 3 + w->id) % NOPS];
        const size_t o = (size_t)(op - ops);
        void *dptr[MAX_OUT];
        for (int k = 0; k < op->nout; k++) {
            dptr[k] = (void *)(uintptr_t)out[o][k];
            const CUdeviceptr pristine = (CUdeviceptr)(uintptr_t)in->upd_state;
            if (k == 0 && op->resets_state)
                cu_ok(w, drv->MemcpyDtoDAsync(out[o][k], pristine, op->out_bytes[k], stream), "cuMemcpyDtoDAsync");
            else
                cu_ok(w, drv->MemsetD8Async(out[o][k], 0xFF, op->out_bytes[k], stream), "cuMemsetD8Async");
        }
        ssmjit_status st = op->run(w->g, dptr, stream);
        w->launches++;
        if (st != SSMJIT_OK) {
            w->failures++;
            note(w, "%s: %s", op->name, ssmjit_last_error());
            break;
        }
        if (!cu_ok(w, drv->StreamSynchronize(stream), "cuStreamSynchronize"))
            break;
        for (int k = 0; k < op->nout; k++)
            cu_ok(w, drv->MemcpyDtoH(host[k], out[o][k], op->out_bytes[k]), "cuMemcpyDtoH");
        for (int k = 0; k < op->nout; k++)
            if (memcmp(host[k], baseline[o][k], op->out_bytes[k]) != 0) {
                w->mismatches++;
                note(w, "%s: output %s differs from the single-threaded run", op->name,
                     k == 0 ? "0" : k == 1 ? "1" : "2");
            }
    }

    for (int k = 0; k < MAX_OUT; k++)
        free(host[k]);
    for (size_t o = 0; o < NOPS; o++)
        for (int k = 0; k < ops[o].nout; k++)
            drv->MemFree(out[o][k]);
    drv->StreamDestroy(stream);
    return NULL;
}

/* Each op once on the main thread: the bytes every later launch must give. */
static void make_baselines(const gpu *g)
{
    const inputs *in = &g->in;
    for (size_t o = 0; o < NOPS; o++) {
        void *dptr[MAX_OUT];
        for (int k = 0; k < ops[o].nout; k++) {
            dptr[k] = gu_alloc(ops[o].out_bytes[k]);
            gu_poison(dptr[k], ops[o].out_bytes[k]);
        }
        if (ops[o].resets_state) {
            CUdeviceptr dst = (CUdeviceptr)(uintptr_t)dptr[0], src = (CUdeviceptr)(uintptr_t)in->upd_state;
            assert_int_equal(drv->MemcpyDtoD(dst, src, ops[o].out_bytes[0]), CUDA_SUCCESS);
        }
        ssmjit_status st = ops[o].run(g, dptr, NULL);
        if (st != SSMJIT_OK)
            fail_msg("%s: %s", ops[o].name, ssmjit_last_error());
        gu_sync();
        for (int k = 0; k < ops[o].nout; k++) {
            baseline[o][k] = malloc(ops[o].out_bytes[k]);
            assert_non_null(baseline[o][k]);
            gu_download(baseline[o][k], dptr[k], ops[o].out_bytes[k]);
            gu_free(dptr[k]);
        }
    }
    /* The silu baseline against the double reference (f32, fast math off). */
    const size_t n = 64 * 1000;
    double *got = tu_doubles(n), *want = tu_doubles(n);
    for (size_t i = 0; i < n; i++) {
        float g;
        memcpy(&g, baseline[0][0] + 4 * i, 4);
        got[i] = g;
    }
    ref_activation_fwd(SSMJIT_ACT_SILU, host_inputs[0], want, n);
    assert_true(tu_rel_err(got, want, n) <= gu_tolerance(SSMJIT_F32));
    free(got);
    free(want);
}

static void free_baselines_and_inputs(void)
{
    for (size_t o = 0; o < NOPS; o++)
        for (int k = 0; k < ops[o].nout; k++)
            free(baseline[o][k]);
    for (size_t i = 0; i < NINPUTS; i++)
        free(host_inputs[i]);
}

static int launch_count(void)
{
    const char *s = getenv("SSMJIT_SOAK_LAUNCHES");
    int n = s ? atoi(s) : LAUNCHES;
    assert_true(n >= THREADS);
    return n - n % THREADS;
}

/* Runs launch_count() launches split over `threads` workers, worker t on
 * gpus[t % ngpus], and checks what they recorded. */
static void soak(const gpu *gpus, int ngpus, int threads)
{
    worker w[THREADS];
    pthread_t th[THREADS];
    int total = launch_count();
    for (int t = 0; t < threads; t++) {
        w[t] = (worker){t, &gpus[t % ngpus], total / threads, 0, 0, 0, {0}};
        assert_int_equal(pthread_create(&th[t], NULL, work, &w[t]), 0);
    }
    int launches = 0;
    for (int t = 0; t < threads; t++) {
        assert_int_equal(pthread_join(th[t], NULL), 0);
        if (w[t].first[0])
            print_message("thread %d (GPU %d): %s\n", t, t % ngpus, w[t].first);
        assert_int_equal(w[t].failures, 0);
        assert_int_equal(w[t].mismatches, 0);
        launches += w[t].launches;
    }
    assert_int_equal(launches, total);
    print_message("%d launches from %d threads on %d GPU(s), all equal to the single-threaded results\n",
                  launches, threads, ngpus);
}

static void test_soak(void **state)
{
    (void)state;
    gu_require_gpu();
    tu_seed();
    assert_int_equal(sj_driver_get(&drv), SSMJIT_OK);
    draw_inputs();
    gpu g = open_gpu(0);
    make_baselines(&g);
    soak(&g, 1, THREADS);
    free_baselines_and_inputs();
    close_gpu(&g, 0);
}

/* Two contexts on two GPUs at once, each GPU's results equal to GPU 0's
 * single-threaded ones (same model, same kernels). */
static void test_two_gpus(void **state)
{
    (void)state;
    gu_require_gpu();
    assert_int_equal(sj_driver_get(&drv), SSMJIT_OK);
    int count = 0;
    assert_int_equal(drv->DeviceGetCount(&count), CUDA_SUCCESS);
    if (count < 2) {
        print_message("one GPU: nothing to pair\n");
        skip();
    }
    tu_seed();
    draw_inputs();
    gpu gpus[2] = {open_gpu(0), open_gpu(1)};
    assert_int_equal(drv->CtxSetCurrent(gpus[0].cu), CUDA_SUCCESS);
    make_baselines(&gpus[0]);
    soak(gpus, 2, THREADS);
    free_baselines_and_inputs();
    close_gpu(&gpus[0], 0);
    close_gpu(&gpus[1], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_soak),
        cmocka_unit_test(test_two_gpus),
    };
    tu_apply_test_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
