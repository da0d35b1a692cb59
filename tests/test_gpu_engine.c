/* The engine on a real GPU: contexts, cold and warm cache loads, a launch
 * checked against a double-precision reference, an application's own
 * context and stream, threads, the PTX path, a call compiling and loading
 * exactly the units it launches, and a call after ssmjit_context_prepare
 * waiting only for its own unit.  Skips without a GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "context.h"
#include "driver.h"
#include "gpu_util.h"
#include "test_util.h"

static double silu(double x) { return x / (1.0 + exp(-x)); }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs silu over rows x cols on ctx (and stream) and checks it. */
static void check_silu(ssmjit_context *ctx, void *stream, int64_t rows, int64_t cols)
{
    size_t n = (size_t)(rows * cols);
    double *x = tu_doubles(n), *ref = tu_doubles(n), *got = tu_doubles(n);
    tu_fill_uniform(x, n, -8, 8);
    void *dx = gu_upload_new(x, n, SSMJIT_F32), *dy = gu_alloc_poisoned(n, SSMJIT_F32);
    for (size_t i = 0; i < n; i++)
        ref[i] = silu(x[i]);
    ssmjit_activation_desc d = {sizeof d, SSMJIT_ACT_SILU, SSMJIT_F32, rows, cols};
    ssmjit_activation_fwd_args a = {sizeof a, {dx, 0, 0}, {dy, 0, 0}};
    ssmjit_status st = ssmjit_activation_fwd(ctx, &d, &a, stream);
    if (st != SSMJIT_OK)
        fail_msg("%s: %s", ssmjit_status_string(st), ssmjit_last_error());
    gu_sync();
    gu_download_as(got, dy, n, SSMJIT_F32);
    double err = tu_rel_err(got, ref, n);
    printf("# silu %lldx%lld rel err %.2e\n", (long long)rows, (long long)cols, err);
    assert_true(err <= 1e-6);
    gu_free(dx);
    gu_free(dy);
    free(x);
    free(ref);
    free(got);
}

static ssmjit_context *context_in(const char *dir, ssmjit_cache_mode mode)
{
    ssmjit_context_options o;
    ssmjit_context_options_init(&o);
    o.cache_dir = dir;
    o.cache_mode = mode;
    o.fast_math = SSMJIT_FAST_MATH_OFF;
    ssmjit_context *ctx = NULL;
    ssmjit_status st = ssmjit_context_create(&o, &ctx);
    if (st != SSMJIT_OK)
        fail_msg("%s", ssmjit_last_error());
    return ctx;
}

static void test_context_and_info(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    ssmjit_context_info info;
    assert_int_equal(ssmjit_context_get_info(ctx, &info), SSMJIT_OK);
    ssmjit_device_info dev;
    assert_int_equal(ssmjit_device_get_info(0, &dev), SSMJIT_OK);
    printf("# %s sm_%d%d, target %s\n", dev.name, dev.cc_major, dev.cc_minor, info.target);
    assert_int_equal(info.cc_major, dev.cc_major);
    assert_int_equal(info.cc_minor, dev.cc_minor);
    assert_true(info.sm_count > 0);
    char want[16];
    snprintf(want, sizeof want, "sm_%d%d", dev.cc_major, dev.cc_minor);
    if (!info.target_is_ptx)
        assert_string_equal(info.target, want);
    ssmjit_context_destroy(ctx);
    ssmjit_context_options o;
    ssmjit_context_options_init(&o);
    o.device = 4096;
    assert_int_equal(ssmjit_context_create(&o, &ctx), SSMJIT_ERR_NO_DEVICE);
    assert_non_null(strstr(ssmjit_last_error(), "4096"));
}

/* The child's side of warm_child (this program run with --warm-child):
 * exit 0 when every module loaded without NVRTC being opened, 2 when NVRTC
 * had to be opened (a cold or damaged cache), 1 on an error. */
static int warm_child_main(const char *dir)
{
    ssmjit_context_options o;
    ssmjit_context_options_init(&o);
    o.cache_dir = dir;
    o.fast_math = SSMJIT_FAST_MATH_OFF;
    ssmjit_context *ctx;
    ssmjit_status st = ssmjit_context_create(&o, &ctx);
    if (st == SSMJIT_OK)
        st = ssmjit_context_load_all(ctx);
    if (st != SSMJIT_OK) {
        fprintf(stderr, "warm child: %s\n", ssmjit_last_error());
        return 1;
    }
    return tu_nvrtc_mapped() ? 2 : 0;
}

/* A fresh process (CUDA does not survive fork; its in-memory image table
 * is empty) loads every module: 0 when that needed no NVRTC at all, i.e.
 * the disk cache and its toolchain record served a warm start. */
static int warm_child(const char *dir) { return tu_run_self("--warm-child", dir); }

static void test_cold_then_warm_cache(void **state)
{
    (void)state;
    gu_require_gpu();
    char *dir = tu_mkdtemp();
    assert_int_equal(warm_child(dir), 2); /* cold: compiles */
    ssmjit_context *ctx = context_in(dir, SSMJIT_CACHE_RW);
    assert_int_equal(ssmjit_context_load_all(ctx), SSMJIT_OK);
    check_silu(ctx, NULL, 3, 1000);
    ssmjit_context_destroy(ctx);
    ssmjit_cache_stats s;
    assert_int_equal(ssmjit_cache_verify(dir, 0, &s), SSMJIT_OK);
    size_t shared = 0; /* load_all's: the specialised are the models' */
    for (size_t u = 0; u < ssmjit_unit_count(); u++)
        shared += ssmjit_unit_specialised(u) == 0;
    assert_int_equal(s.entries, shared);
    assert_int_equal(warm_child(dir), 0);
    /* a damaged entry is a miss, not a crash: the child recompiles it */
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "for f in $(find '%s' -name '*.cubin'); do printf X | dd of=$f bs=1 seek=300 conv=notrunc 2>/dev/null; done", dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(warm_child(dir), 2);
    ctx = context_in(dir, SSMJIT_CACHE_RW);
    check_silu(ctx, NULL, 2, 777);
    assert_int_equal(ssmjit_context_load_all(ctx), SSMJIT_OK);
    ssmjit_context_destroy(ctx);
    assert_int_equal(ssmjit_cache_verify(dir, 0, &s), SSMJIT_OK);
    assert_int_equal(s.bad_entries, 0);
    assert_int_equal(warm_child(dir), 0);
    tu_rmtree(dir);
    free(dir);
}

static void test_cache_off_and_sizes(void **state)
{
    (void)state;
    gu_require_gpu();
    char *dir = tu_mkdtemp();
    ssmjit_context *ctx = context_in(dir, SSMJIT_CACHE_OFF);
    check_silu(ctx, NULL, 1, 1);
    check_silu(ctx, NULL, 70000, 3); /* more rows than gridDim.y allows */
    check_silu(ctx, NULL, 5, 100003);
    ssmjit_context_destroy(ctx);
    ssmjit_cache_stats s;
    assert_int_equal(ssmjit_cache_verify(dir, 0, &s), SSMJIT_OK);
    assert_int_equal(s.entries, 0);
    tu_rmtree(dir);
    free(dir);
}

/* Runs the library on `app` (current on this thread) and an application
 * stream, and checks it leaves `app` current. */
static void use_application_context(const sj_driver *d, CUcontext app)
{
    CUstream stream;
    assert_int_equal(SJ_CU(d, StreamCreate, &stream, CU_STREAM_NON_BLOCKING), SSMJIT_OK);
    ssmjit_context_options o;
    ssmjit_context_options_init(&o);
    o.cu_context = app;
    o.fast_math = SSMJIT_FAST_MATH_OFF;
    ssmjit_context *ctx;
    assert_int_equal(ssmjit_context_create(&o, &ctx), SSMJIT_OK);
    check_silu(ctx, stream, 4, 333); /* gu_ memory calls run in `app`, current here */
    CUcontext now;
    assert_int_equal(SJ_CU(d, CtxGetCurrent, &now), SSMJIT_OK);
    assert_ptr_equal(now, app);
    ssmjit_context_destroy(ctx);
    assert_int_equal(SJ_CU(d, StreamDestroy, stream), SSMJIT_OK);
}

/* What the CUDA runtime, PyTorch and JAX do: retain the primary context
 * themselves and hand it over. */
static void test_application_primary_context_and_stream(void **state)
{
    (void)state;
    gu_require_gpu();
    const sj_driver *d;
    CUcontext app;
    assert_int_equal(sj_driver_get(&d), SSMJIT_OK);
    assert_int_equal(SJ_CU(d, DevicePrimaryCtxRetain, &app, 0), SSMJIT_OK);
    assert_int_equal(SJ_CU(d, CtxSetCurrent, app), SSMJIT_OK);
    use_application_context(d, app);
    assert_int_equal(SJ_CU(d, DevicePrimaryCtxRelease, 0), SSMJIT_OK);
}

/* A context the application created for itself (not the primary one). */
static void test_application_created_context(void **state)
{
    (void)state;
    gu_require_gpu();
    const sj_driver *d;
    CUdevice dev;
    CUcontext app, previous;
    assert_int_equal(sj_driver_get(&d), SSMJIT_OK);
    assert_int_equal(SJ_CU(d, DeviceGet, &dev, 0), SSMJIT_OK);
    assert_int_equal(SJ_CU(d, CtxGetCurrent, &previous), SSMJIT_OK);
    ssmjit_status st = SJ_CU(d, CtxCreate, &app, 0, dev);
    if (st != SSMJIT_OK)
        fail_msg("%s", ssmjit_last_error());
    use_application_context(d, app);
    assert_int_equal(SJ_CU(d, CtxDestroy, app), SSMJIT_OK);
    assert_int_equal(SJ_CU(d, CtxSetCurrent, previous), SSMJIT_OK);
}

typedef struct {
    ssmjit_context *ctx;
    void *x, *y;
    int64_t n;
    ssmjit_status st;
} thread_job;

static void *thread_run(void *p)
{
    thread_job *j = p;
    ssmjit_activation_desc d = {sizeof d, SSMJIT_ACT_SILU, SSMJIT_F32, 1, j->n};
    ssmjit_activation_fwd_args a = {sizeof a, {j->x, 0, 0}, {j->y, 0, 0}};
    /* no context is current on this new thread: the library makes its own current */
    /* softplus then silu last: the result checked is silu's */
    for (int i = 0; i < 51 && j->st == SSMJIT_OK; i++) {
        d.activation = i % 2 ? SSMJIT_ACT_SOFTPLUS : SSMJIT_ACT_SILU;
        j->st = ssmjit_activation_fwd(j->ctx, &d, &a, NULL);
    }
    return NULL;
}

static void test_threads_share_a_fresh_context(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    enum { T = 8, N = 4096 };
    thread_job jobs[T];
    pthread_t th[T];
    double *x = tu_doubles(N), *got = tu_doubles(N);
    for (int t = 0; t < T; t++) {
        tu_fill_uniform(x, N, -5, 5);
        jobs[t] = (thread_job){ctx, gu_upload_new(x, N, SSMJIT_F32), gu_alloc_poisoned(N, SSMJIT_F32), N, SSMJIT_OK};
    }
    for (int t = 0; t < T; t++)
        assert_int_equal(pthread_create(&th[t], NULL, thread_run, &jobs[t]), 0);
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        if (jobs[t].st != SSMJIT_OK)
            fail_msg("thread %d: %s", t, ssmjit_status_string(jobs[t].st));
    }
    gu_sync();
    for (int t = 0; t < T; t++) {
        double *xs = tu_doubles(N), *ref = tu_doubles(N);
        gu_download_as(xs, jobs[t].x, N, SSMJIT_F32);
        gu_download_as(got, jobs[t].y, N, SSMJIT_F32);
        for (int i = 0; i < N; i++)
            ref[i] = silu(xs[i]);
        assert_true(tu_rel_err(got, ref, N) <= 1e-6);
        gu_free(jobs[t].x);
        gu_free(jobs[t].y);
        free(xs);
        free(ref);
    }
    free(x);
    free(got);
    ssmjit_context_destroy(ctx);
}

static void test_ptx_path(void **state)
{
    (void)state;
    ssmjit_context *probe = gu_context(SSMJIT_FAST_MATH_OFF);
    ssmjit_context_info info;
    assert_int_equal(ssmjit_context_get_info(probe, &info), SSMJIT_OK);
    ssmjit_context_destroy(probe);
    if (info.cc_major * 10 + info.cc_minor < 80)
        skip(); /* no older major to pretend to be */
    /* Pretending the device is an sm_75 part makes the target an older
     * major: PTX that the driver compiles. */
    setenv("SSMJIT_ARCH", "sm_75", 1);
    char *dir = tu_mkdtemp();
    ssmjit_context *ctx = context_in(dir, SSMJIT_CACHE_RW);
    unsetenv("SSMJIT_ARCH");
    assert_int_equal(ssmjit_context_get_info(ctx, &info), SSMJIT_OK);
    assert_string_equal(info.target, "compute_75");
    assert_int_equal(info.target_is_ptx, 1);
    check_silu(ctx, NULL, 3, 5000);
    ssmjit_context_destroy(ctx);
    tu_rmtree(dir);
    free(dir);
}

/* The compile callback's record: units compiled, in order. */
#define MAX_EVENTS 512
typedef struct {
    pthread_mutex_t lock;
    int started, done;
    char units[MAX_EVENTS][64];
} compile_log;

static void record_compile(const ssmjit_compile_event *ev, void *user)
{
    compile_log *log = user;
    pthread_mutex_lock(&log->lock);
    if (!ev->done)
        log->started++;
    else if (log->done < MAX_EVENTS)
        snprintf(log->units[log->done++], sizeof log->units[0], "%s", ev->unit);
    pthread_mutex_unlock(&log->lock);
}

/* A context whose kernels no earlier test of this process compiled: a
 * define of its own gives every unit a key of its own, so that the
 * process's in-memory images do not answer. */
static ssmjit_context *logged_context(const char *dir, compile_log *log)
{
    static char define[64];
    static const char *const defines[] = {define};
    snprintf(define, sizeof define, "SSMJIT_ENGINE_TEST=%ld_%u", (long)getpid(), (unsigned)tu_uniform(0, 4e9));
    ssmjit_context_options o;
    ssmjit_context_options_init(&o);
    o.defines = defines;
    o.num_defines = 1;
    o.cache_dir = dir;
    o.on_compile = record_compile;
    o.on_compile_user = log;
    ssmjit_context *ctx = NULL;
    if (ssmjit_context_create(&o, &ctx) != SSMJIT_OK)
        fail_msg("%s", ssmjit_last_error());
    return ctx;
}

/* The units loaded in ctx, as a sorted comma-separated list. */
static void loaded_units(ssmjit_context *ctx, char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t u = 0; u < SJ_UNIT_COUNT; u++)
        for (int f = 0; f < 2; f++)
            if (sj_unit_loaded(ctx, u, f)) {
                if (out[0])
                    strncat(out, ",", cap - strlen(out) - 1);
                strncat(out, sj_units[u].kernel, cap - strlen(out) - 1);
            }
}

static int compare_names(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* The compiled units of the log, sorted, comma-separated. */
static void compiled_units(compile_log *log, char *out, size_t cap)
{
    qsort(log->units, (size_t)log->done, sizeof log->units[0], compare_names);
    out[0] = '\0';
    for (int i = 0; i < log->done; i++) {
        if (out[0])
            strncat(out, ",", cap - strlen(out) - 1);
        strncat(out, log->units[i], cap - strlen(out) - 1);
    }
}

/* A first call compiles and loads the kernels it launches and nothing else:
 * the activation its one kernel; a scan forward its one kernel; a scan
 * backward, with the forward's checkpoint, its kernel and its two
 * reductions, and without it, also the checkpoint's rebuild. */
static void test_call_compiles_only_its_units(void **state)
{
    (void)state;
    gu_require_gpu();
    char *dir = tu_mkdtemp(), got[4096];
    compile_log log = {PTHREAD_MUTEX_INITIALIZER, 0, 0, {{0}}};
    ssmjit_context *ctx = logged_context(dir, &log);
    check_silu(ctx, NULL, 2, 100);
    loaded_units(ctx, got, sizeof got);
    assert_string_equal(got, "act_fwd_silu_f32");
    compiled_units(&log, got, sizeof got);
    assert_string_equal(got, "act_fwd_silu_f32");

    enum { B = 1, L = 40, D = 64, N = 16 };
    double *h = tu_doubles(B * L * D);
    tu_fill_uniform(h, B * L * D, -1, 1);
    void *u = gu_upload_new(h, B * L * D, SSMJIT_BF16), *delta = gu_upload_new(h, B * L * D, SSMJIT_BF16);
    tu_fill_uniform(h, B * L * N, -1, 1);
    void *Bm = gu_upload_new(h, B * L * N, SSMJIT_BF16), *Cm = gu_upload_new(h, B * L * N, SSMJIT_BF16);
    tu_fill_uniform(h, D * N, -2, -0.5);
    void *A = gu_upload_new(h, D * N, SSMJIT_F32);
    void *y = gu_alloc_poisoned(B * L * D, SSMJIT_BF16);
    tu_fill_uniform(h, B * L * D, -1, 1);
    void *dy = gu_upload_new(h, B * L * D, SSMJIT_BF16);
    void *du = gu_alloc_poisoned(B * L * D, SSMJIT_BF16), *ddelta = gu_alloc_poisoned(B * L * D, SSMJIT_BF16);
    void *dA = gu_alloc_poisoned(D * N, SSMJIT_F32), *dB = gu_alloc_poisoned(B * L * N, SSMJIT_BF16),
         *dC = gu_alloc_poisoned(B * L * N, SSMJIT_BF16);
    ssmjit_selective_scan_desc sd = {.struct_size = sizeof sd, .dtype = SSMJIT_BF16, .batch = B, .seqlen = L,
                                     .dim = D, .dstate = N, .delta_softplus = 1, .checkpoint = 1};
    const ssmjit_selective_scan_inputs in = {.u = {.data = u}, .delta = {.data = delta}, .A = A, .B = {.data = Bm},
                                             .C = {.data = Cm}};
    size_t ck_bytes = 0, ws_bytes = 0;
    assert_int_equal(ssmjit_selective_scan_checkpoint_size(ctx, &sd, &ck_bytes), SSMJIT_OK);
    void *ck = gu_alloc(ck_bytes);
    const ssmjit_selective_scan_fwd_args fa = {.struct_size = sizeof fa, .in = in, .y = {.data = y}, .checkpoint = ck};
    log.done = 0;
    assert_int_equal(ssmjit_selective_scan_fwd(ctx, &sd, &fa, NULL), SSMJIT_OK);
    compiled_units(&log, got, sizeof got);
    /* one kernel: the token-serial or the token-parallel forward, as the
     * rule picks it on this GPU */
    assert_true(!strncmp(got, "scan_fwd_", 9) && !strchr(got, ','));
    char fwd[64];
    snprintf(fwd, sizeof fwd, "%s", got);

    ssmjit_selective_scan_bwd_args g = {.struct_size = sizeof g, .in = in, .checkpoint = ck, .dy = {.data = dy},
                                        .du = {.data = du}, .ddelta = {.data = ddelta}, .dA = dA,
                                        .dB = {.data = dB}, .dC = {.data = dC}};
    assert_int_equal(ssmjit_selective_scan_bwd_workspace_size(ctx, &sd, &ws_bytes), SSMJIT_OK);
    void *ws = gu_alloc(ws_bytes);
    g.workspace = ws;
    g.workspace_bytes = ws_bytes;
    log.done = 0;
    assert_int_equal(ssmjit_selective_scan_bwd(ctx, &sd, &g, NULL), SSMJIT_OK);
    compiled_units(&log, got, sizeof got);
    assert_string_equal(got, "scan_bwd_bf16,scan_bwd_reduce_bc_bf16,scan_bwd_reduce_params");
    gu_free(ws);
    sd.checkpoint = 0;
    g.checkpoint = NULL;
    assert_int_equal(ssmjit_selective_scan_bwd_workspace_size(ctx, &sd, &ws_bytes), SSMJIT_OK);
    ws = gu_alloc(ws_bytes);
    g.workspace = ws;
    g.workspace_bytes = ws_bytes;
    log.done = 0;
    assert_int_equal(ssmjit_selective_scan_bwd(ctx, &sd, &g, NULL), SSMJIT_OK);
    compiled_units(&log, got, sizeof got);
    assert_string_equal(got, "scan_states_ns8_bf16");
    gu_sync();
    loaded_units(ctx, got, sizeof got);
    char want[512];
    snprintf(want, sizeof want,
             "act_fwd_silu_f32,scan_bwd_bf16,scan_bwd_reduce_bc_bf16,scan_states_ns8_bf16,scan_bwd_reduce_params,%s",
             fwd);
    /* loaded_units lists in unit order: compare as sets */
    char *a[16], *b[16];
    int na = 0, nb = 0;
    for (char *t = strtok(got, ","); t && na < 16; t = strtok(NULL, ","))
        a[na++] = t;
    for (char *t = strtok(want, ","); t && nb < 16; t = strtok(NULL, ","))
        b[nb++] = t;
    assert_int_equal(na, nb);
    for (int i = 0; i < na; i++) {
        int found = 0;
        for (int j = 0; j < nb; j++)
            found |= !strcmp(a[i], b[j]);
        if (!found)
            fail_msg("unit %s loaded but never launched", a[i]);
    }
    void *bufs[] = {u, delta, Bm, Cm, A, y, dy, du, ddelta, dA, dB, dC, ck, ws};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        gu_free(bufs[i]);
    free(h);
    ssmjit_context_destroy(ctx);
    tu_rmtree(dir);
    free(dir);
}

/* With every unit queued behind one pool thread, a call takes its own unit
 * off the queue and returns with a correct result long before the rest is
 * done; destroying the context drops the rest and waits only for the one
 * compile running, after which no callback comes. */
static void test_prepare_then_call(void **state)
{
    (void)state;
    gu_require_gpu();
    char *dir = tu_mkdtemp();
    compile_log log = {PTHREAD_MUTEX_INITIALIZER, 0, 0, {{0}}};
    ssmjit_set_compile_threads(1);
    ssmjit_context *ctx = logged_context(dir, &log);
    assert_int_equal(ssmjit_context_prepare(ctx, SSMJIT_OP_ALL, SSMJIT_DTYPES_ALL, 0), SSMJIT_OK);
    assert_int_equal(ssmjit_context_prepare(ctx, 1u << 20, SSMJIT_DTYPES_ALL, 0), SSMJIT_ERR_INVALID_ARG);
    double t0 = now();
    check_silu(ctx, NULL, 5, 999);
    double call = now() - t0;
    pthread_mutex_lock(&log.lock);
    int done_at_call = log.done;
    pthread_mutex_unlock(&log.lock);
    printf("# first call after prepare: %.3f s, %d of the prepared units compiled by then\n", call, done_at_call);
    assert_true(done_at_call >= 1 && done_at_call < 20); /* its own, and few others */
    t0 = now();
    ssmjit_context_destroy(ctx);
    double destroy = now() - t0;
    pthread_mutex_lock(&log.lock);
    int started = log.started, done = log.done;
    pthread_mutex_unlock(&log.lock);
    printf("# destroy: %.3f s, %d compiles started, %d done\n", destroy, started, done);
    assert_int_equal(started, done); /* none left running */
    assert_true(done < (int)SJ_UNIT_COUNT / 2);
    usleep(300000);
    pthread_mutex_lock(&log.lock);
    assert_int_equal(log.done, done); /* no callback after destroy */
    pthread_mutex_unlock(&log.lock);
    ssmjit_set_compile_threads(0);

    /* With WAIT, everything prepared is loaded when it returns. */
    ctx = logged_context(dir, &log);
    assert_int_equal(ssmjit_context_prepare(ctx, SSMJIT_OP_GATE_FWD | SSMJIT_OP_STATE_UPDATE,
                                            SSMJIT_DTYPE_BIT(SSMJIT_F16), SSMJIT_PREPARE_WAIT),
                     SSMJIT_OK);
    char got[1024];
    loaded_units(ctx, got, sizeof got);
    assert_string_equal(got, "gate_fwd_f16,state_update_f16");
    ssmjit_context_destroy(ctx);
    tu_rmtree(dir);
    free(dir);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--warm-child"))
        return warm_child_main(argv[2]);
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_context_and_info),
        cmocka_unit_test(test_cold_then_warm_cache),
        cmocka_unit_test(test_cache_off_and_sizes),
        cmocka_unit_test(test_application_primary_context_and_stream),
        cmocka_unit_test(test_application_created_context),
        cmocka_unit_test(test_threads_share_a_fresh_context),
        cmocka_unit_test(test_ptx_path),
        cmocka_unit_test(test_call_compiles_only_its_units),
        cmocka_unit_test(test_prepare_then_call),
    };
    tu_apply_test_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
