#include <string.h>

#include "context.h"
#include "base/error.h"

/* Fails, before any driver call, where a block's smem_bytes of dynamic
 * shared memory are more than the device allows. */
static ssmjit_status check_smem(const ssmjit_context *ctx, unsigned smem_bytes)
{
    const int cap = ctx->props.max_smem_per_block_optin;
    if (cap > 0 && smem_bytes > (unsigned)cap)
        return sj_error(SSMJIT_ERR_UNSUPPORTED,
                        "a kernel of this op needs %u bytes of shared memory a block; this GPU allows %d",
                        smem_bytes, cap);
    return SSMJIT_OK;
}

/* Above 48 KiB a kernel must opt in to dynamic shared memory (ctx
 * current). */
static ssmjit_status opt_in_smem(ssmjit_context *ctx, CUfunction fn, unsigned smem_bytes)
{
    if (smem_bytes <= 48 * 1024)
        return SSMJIT_OK;
    return SJ_CU(ctx->drv, FuncSetAttribute, fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem_bytes);
}

/* The launches: with a launch attribute (a chained launch, a cluster)
 * through cuLaunchKernelEx, without one through cuLaunchKernel (every
 * driver has it). */
static ssmjit_status launch(ssmjit_context *ctx, CUfunction fn, sj_dim3 grid, sj_dim3 block, unsigned smem_bytes,
                            void *stream, void **args, CUlaunchAttribute *attr)
{
    SJ_TRY(check_smem(ctx, smem_bytes));
    int pushed;
    SJ_TRY(sj_context_enter(ctx, &pushed));
    ssmjit_status st = opt_in_smem(ctx, fn, smem_bytes);
    if (st == SSMJIT_OK && attr) {
        CUlaunchConfig config = {grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                 smem_bytes, (CUstream)stream, attr, 1};
        st = SJ_CU(ctx->drv, LaunchKernelEx, &config, fn, args, NULL);
    } else if (st == SSMJIT_OK) {
        st = SJ_CU(ctx->drv, LaunchKernel, fn, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                   smem_bytes, (CUstream)stream, args, NULL);
    }
    sj_context_leave(ctx, pushed);
    return st;
}

ssmjit_status sj_launch(ssmjit_context *ctx, CUfunction fn, sj_dim3 grid, sj_dim3 block,
                        unsigned smem_bytes, void *stream, void **args)
{
    return launch(ctx, fn, grid, block, smem_bytes, stream, args, NULL);
}

int sj_launch_sm90(const ssmjit_context *ctx)
{
    return ctx->props.cc_major >= 9 && ctx->drv->LaunchKernelEx;
}

ssmjit_status sj_launch_chained(ssmjit_context *ctx, CUfunction fn, sj_dim3 grid, sj_dim3 block,
                                unsigned smem_bytes, void *stream, void **args)
{
    if (!sj_launch_sm90(ctx))
        return launch(ctx, fn, grid, block, smem_bytes, stream, args, NULL);
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    return launch(ctx, fn, grid, block, smem_bytes, stream, args, &attr);
}

ssmjit_status sj_launch_cluster(ssmjit_context *ctx, CUfunction fn, sj_dim3 grid, sj_dim3 block, unsigned cluster_x,
                                void *stream, void **args)
{
    if (!sj_launch_sm90(ctx))
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "thread-block clusters need sm_90 or later and a driver with "
                                                "cuLaunchKernelEx; this device is sm_%d%d",
                        ctx->props.cc_major, ctx->props.cc_minor);
    if (cluster_x == 0 || cluster_x > 8 || grid.x % cluster_x)
        return sj_error(SSMJIT_ERR_INTERNAL, "a cluster of %u blocks for a grid %u wide", cluster_x, grid.x);
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = cluster_x;
    attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
    return launch(ctx, fn, grid, block, 0, stream, args, &attr);
}

ssmjit_status sj_graph_capture(ssmjit_context *ctx, void *stream, sj_enqueue_fn enqueue, void *arg,
                               CUgraphExec *exec)
{
    *exec = NULL;
    int pushed;
    SJ_TRY(sj_context_enter(ctx, &pushed));
    ssmjit_status st = SJ_CU(ctx->drv, StreamBeginCapture, (CUstream)stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (st == SSMJIT_OK) {
        st = enqueue(arg, stream);
        CUgraph graph = NULL;
        /* ended whatever happened, or the stream stays in capture */
        ssmjit_status end = SJ_CU(ctx->drv, StreamEndCapture, (CUstream)stream, &graph);
        if (st == SSMJIT_OK)
            st = end;
        if (st == SSMJIT_OK)
            st = SJ_CU(ctx->drv, GraphInstantiateWithFlags, exec, graph, 0ull);
        if (st != SSMJIT_OK)
            *exec = NULL;
        if (graph)
            ctx->drv->GraphDestroy(graph);
    }
    sj_context_leave(ctx, pushed);
    return st;
}
