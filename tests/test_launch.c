/* sj_graph_capture (src/engine/launch.c) against a recording stand-in
 * driver: what it records on success, and on each failure that the
 * stream is out of capture again, the graph freed and no graph given,
 * with the first error returned.  And a scan op's launches
 * (sj_scan_launch, src/ops/scan_launch.c): the first plain, the rest
 * chained where the device has programmatic dependent launch. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "context.h"
#include "kernel.h"
#include "ops_model.h"
#include "scan_internal.h"
#include "st_util.h"

#define FAIL_RESULT 700 /* what a failing stand-in call returns */

static struct {
    const char *fail; /* the driver call that fails, or NULL */
    int began, ended, instantiated, destroyed, enqueued;
    CUstream stream;  /* the stream capture began on */
} rec;

static CUgraph const the_graph = (CUgraph)0x1000;
static CUgraphExec const the_exec = (CUgraphExec)0x2000;
static CUcontext const the_cu = (CUcontext)0x3000;

static CUresult result(const char *call)
{
    return rec.fail && strcmp(rec.fail, call) == 0 ? (CUresult)FAIL_RESULT : CUDA_SUCCESS;
}

static CUresult ctx_get_current(CUcontext *c)
{
    *c = the_cu;
    return CUDA_SUCCESS;
}

static CUresult begin_capture(CUstream s, CUstreamCaptureMode mode)
{
    (void)mode;
    rec.stream = s;
    CUresult r = result("begin");
    rec.began += r == CUDA_SUCCESS;
    return r;
}

static CUresult end_capture(CUstream s, CUgraph *g)
{
    assert_ptr_equal(s, rec.stream);
    rec.ended++;
    CUresult r = result("end");
    *g = r == CUDA_SUCCESS ? the_graph : NULL;
    return r;
}

static CUresult instantiate(CUgraphExec *exec, CUgraph g, unsigned long long flags)
{
    (void)flags;
    assert_ptr_equal(g, the_graph);
    rec.instantiated++;
    CUresult r = result("instantiate");
    /* a driver may leave its output written on failure */
    *exec = the_exec;
    return r;
}

static CUresult graph_destroy(CUgraph g)
{
    assert_ptr_equal(g, the_graph);
    rec.destroyed++;
    return CUDA_SUCCESS;
}

/* The launches, in order: 'p' plain, 'c' chained to the kernel before. */
static char launched[8];
static int nlaunched;
static CUstream const the_stream = (CUstream)0x4000;

static void record_launch(char kind, CUstream s)
{
    assert_ptr_equal(s, the_stream);
    assert_true(nlaunched < (int)sizeof launched - 1);
    launched[nlaunched++] = kind;
}

static CUresult launch_kernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                              unsigned bz, unsigned smem, CUstream s, void **params, void **extra)
{
    (void)fn, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem, (void)params, (void)extra;
    record_launch('p', s);
    return CUDA_SUCCESS;
}

/* The last launch in clusters: its cluster's and its grid's sizes. */
static unsigned cluster_dim[3], cluster_grid[3];

/* 'c' chained, 'k' in clusters */
static CUresult launch_kernel_ex(const CUlaunchConfig *config, CUfunction fn, void **params, void **extra)
{
    (void)fn, (void)params, (void)extra;
    assert_int_equal(config->numAttrs, 1);
    if (config->attrs[0].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
        const CUlaunchAttributeValue *v = &config->attrs[0].value;
        cluster_dim[0] = v->clusterDim.x, cluster_dim[1] = v->clusterDim.y, cluster_dim[2] = v->clusterDim.z;
        cluster_grid[0] = config->gridDimX, cluster_grid[1] = config->gridDimY, cluster_grid[2] = config->gridDimZ;
        record_launch('k', config->hStream);
        return CUDA_SUCCESS;
    }
    assert_int_equal(config->attrs[0].id, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
    assert_int_equal(config->attrs[0].value.programmaticStreamSerializationAllowed, 1);
    record_launch('c', config->hStream);
    return CUDA_SUCCESS;
}

static const sj_driver stand_in = {
    .LaunchKernel = launch_kernel,
    .LaunchKernelEx = launch_kernel_ex,
    .CtxGetCurrent = ctx_get_current,
    .StreamBeginCapture = begin_capture,
    .StreamEndCapture = end_capture,
    .GraphInstantiateWithFlags = instantiate,
    .GraphDestroy = graph_destroy,
};

/* The calls captured: one, which fails where asked. */
static ssmjit_status enqueue(void *arg, void *stream)
{
    assert_ptr_equal(stream, rec.stream);
    assert_string_equal((const char *)arg, "calls");
    rec.enqueued++;
    if (rec.fail && strcmp(rec.fail, "enqueue") == 0)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "the enqueued call failed");
    return SSMJIT_OK;
}

static ssmjit_context *stand_in_context(void)
{
    ssmjit_context *ctx = sj_context_alloc();
    assert_non_null(ctx);
    ctx->drv = &stand_in;
    ctx->cu = the_cu;
    return ctx;
}

static ssmjit_status capture(ssmjit_context *ctx, const char *fail, CUgraphExec *exec)
{
    memset(&rec, 0, sizeof rec);
    rec.fail = fail;
    *exec = (CUgraphExec)&rec; /* not NULL: the call must set it */
    return sj_graph_capture(ctx, (void *)0x4000, enqueue, "calls", exec);
}

static void test_captures(void **state)
{
    (void)state;
    ssmjit_context *ctx = stand_in_context();
    CUgraphExec exec;
    assert_int_equal(capture(ctx, NULL, &exec), SSMJIT_OK);
    assert_ptr_equal(exec, the_exec);
    assert_ptr_equal(rec.stream, (CUstream)0x4000);
    assert_int_equal(rec.began, 1);
    assert_int_equal(rec.enqueued, 1);
    assert_int_equal(rec.ended, 1);
    assert_int_equal(rec.instantiated, 1);
    assert_int_equal(rec.destroyed, 1); /* the graph, once instantiated */
    free(ctx);
}

static void test_failures(void **state)
{
    (void)state;
    ssmjit_context *ctx = stand_in_context();
    CUgraphExec exec;
    /* capture never began: nothing captured, nothing to end */
    su_assert_error(capture(ctx, "begin", &exec), SSMJIT_ERR_DRIVER, "cuStreamBeginCapture", NULL);
    assert_null(exec);
    assert_int_equal(rec.enqueued + rec.ended + rec.instantiated, 0);
    /* a call failed inside the capture: the capture still ends and its
     * graph is freed, the call's error returned */
    su_assert_error(capture(ctx, "enqueue", &exec), SSMJIT_ERR_INVALID_ARG, "the enqueued call failed", NULL);
    assert_null(exec);
    assert_int_equal(rec.ended, 1);
    assert_int_equal(rec.instantiated, 0);
    assert_int_equal(rec.destroyed, 1);
    /* the capture's end failed: no graph */
    su_assert_error(capture(ctx, "end", &exec), SSMJIT_ERR_DRIVER, "cuStreamEndCapture", NULL);
    assert_null(exec);
    assert_int_equal(rec.instantiated + rec.destroyed, 0);
    /* instantiation failed: the graph freed, what the driver left in the
     * output not given */
    su_assert_error(capture(ctx, "instantiate", &exec), SSMJIT_ERR_DRIVER, "cuGraphInstantiateWithFlags", NULL);
    assert_null(exec);
    assert_int_equal(rec.destroyed, 1);
    free(ctx);
}

/* Three launches of one scan op, then one of the next op, on a device
 * of compute capability cc, through a driver with cuLaunchKernelEx or
 * one without it (older than CUDA 12.0). */
static const char *scan_launches(int cc, int has_launch_ex)
{
    ssmjit_context *ctx = stand_in_context();
    sj_driver old = stand_in;
    old.LaunchKernelEx = NULL;
    if (!has_launch_ex)
        ctx->drv = &old;
    ctx->props.cc_major = cc;
    memset(launched, 0, sizeof launched);
    nlaunched = 0;
    const sj_dim3 one = {1, 1, 1};
    sj_scan_stream op = {the_stream, 0};
    for (int i = 0; i < 3; i++)
        assert_int_equal(sj_scan_launch(ctx, &op, NULL, one, one, 0, NULL), SSMJIT_OK);
    sj_scan_stream next = {the_stream, 0};
    assert_int_equal(sj_scan_launch(ctx, &next, NULL, one, one, 0, NULL), SSMJIT_OK);
    free(ctx);
    return launched;
}

/* An op's first kernel follows whatever came before it, finished; its
 * later ones are launched chained to the one before (sm_90 on). */
static void test_scan_chain(void **state)
{
    (void)state;
    assert_string_equal(scan_launches(9, 1), "pccp");
    assert_string_equal(scan_launches(8, 1), "pppp");
    assert_string_equal(scan_launches(9, 0), "pppp");
}

/* Clusters go through cuLaunchKernelEx with their size, sm_90 on with
 * a driver that has it; elsewhere, and for a size the device cannot
 * take or the grid does not divide, an error and no launch. */
static void test_cluster_launch(void **state)
{
    (void)state;
    ssmjit_context *ctx = stand_in_context();
    sj_driver old = stand_in;
    old.LaunchKernelEx = NULL;
    memset(launched, 0, sizeof launched);
    nlaunched = 0;
    const sj_dim3 grid = {14, 5, 1}, block = {256, 1, 1};
    ctx->props.cc_major = 9;
    assert_true(sj_launch_sm90(ctx));
    assert_int_equal(sj_launch_cluster(ctx, NULL, grid, block, 7, the_stream, NULL), SSMJIT_OK);
    assert_string_equal(launched, "k");
    assert_int_equal(cluster_dim[0], 7), assert_int_equal(cluster_dim[1], 1), assert_int_equal(cluster_dim[2], 1);
    assert_int_equal(cluster_grid[0], 14), assert_int_equal(cluster_grid[1], 5), assert_int_equal(cluster_grid[2], 1);
    su_assert_error(sj_launch_cluster(ctx, NULL, grid, block, 0, the_stream, NULL), SSMJIT_ERR_INTERNAL,
                    "a cluster of 0 blocks for a grid 14 wide", NULL);
    su_assert_error(sj_launch_cluster(ctx, NULL, (sj_dim3){18, 1, 1}, block, 9, the_stream, NULL),
                    SSMJIT_ERR_INTERNAL, "a cluster of 9 blocks", NULL);
    su_assert_error(sj_launch_cluster(ctx, NULL, grid, block, 4, the_stream, NULL), SSMJIT_ERR_INTERNAL,
                    "a cluster of 4 blocks for a grid 14 wide", NULL);
    ctx->props.cc_major = 8, ctx->props.cc_minor = 6;
    assert_false(sj_launch_sm90(ctx));
    su_assert_error(sj_launch_cluster(ctx, NULL, grid, block, 7, the_stream, NULL), SSMJIT_ERR_UNSUPPORTED,
                    "thread-block clusters need sm_90", "this device is sm_86");
    ctx->props.cc_major = 9, ctx->drv = &old;
    assert_false(sj_launch_sm90(ctx));
    su_assert_error(sj_launch_cluster(ctx, NULL, grid, block, 7, the_stream, NULL), SSMJIT_ERR_UNSUPPORTED,
                    "a driver with cuLaunchKernelEx", NULL);
    assert_string_equal(launched, "k");
    free(ctx);
}

/* sj_argmax_rows's rule: one block a row unless clusters can be launched,
 * the rows are under two an SM and a row at least 16384 long; else 2 to
 * 8 blocks a row, each some columns, a multiple of 8 of them (segments
 * of a 16-byte aligned row start aligned), at most 8192 but where 8
 * blocks would take more, and no fewer blocks than that allows. */
static void test_argmax_segment(void **state)
{
    (void)state;
    ssmjit_context *ctx = stand_in_context();
    ctx->props.cc_major = 9, ctx->props.sm_count = 132;
    assert_int_equal(sj_argmax_segment(ctx, 64, 50280), 7184); /* 7 blocks: a decode step's pick */
    assert_int_equal(sj_argmax_segment(ctx, 263, 50280), 7184);
    assert_int_equal(sj_argmax_segment(ctx, 264, 50280), 0);
    assert_int_equal(sj_argmax_segment(ctx, 1, 16383), 0);
    assert_int_equal(sj_argmax_segment(ctx, 1, 16384), 8192);
    assert_int_equal(sj_argmax_segment(ctx, 1, 16385), 5464); /* 3 blocks */
    assert_int_equal(sj_argmax_segment(ctx, 1, 200000), 25000); /* 8 blocks */
    for (int64_t cols = 16384; cols < 300000; cols += 997) {
        const int64_t seg = sj_argmax_segment(ctx, 1, cols), segs = (cols + seg - 1) / seg;
        assert_true(seg % 8 == 0);
        assert_true(segs >= 2 && segs <= 8);
        assert_true((segs - 1) * seg < cols); /* every block some columns */
        assert_true(seg <= 8192 || segs == 8);
        assert_true((segs - 1) * 8192 < cols); /* no more blocks than needed */
    }
    ctx->props.cc_major = 8;
    assert_int_equal(sj_argmax_segment(ctx, 1, 50280), 0);
    sj_driver old = stand_in;
    old.LaunchKernelEx = NULL;
    ctx->props.cc_major = 9, ctx->drv = &old;
    assert_int_equal(sj_argmax_segment(ctx, 1, 50280), 0);
    free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_captures), cmocka_unit_test(test_failures),
                                       cmocka_unit_test(test_scan_chain), cmocka_unit_test(test_cluster_launch),
                                       cmocka_unit_test(test_argmax_segment)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
