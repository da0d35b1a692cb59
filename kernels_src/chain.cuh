/* Programmatic dependent launch (sm_90 on): a kernel launched chained
 * (sj_launch_chained) may start while the kernel before it on the stream
 * still runs.  sj_chain_wait() holds a block until that kernel has
 * finished and its writes are visible: a chained kernel touches nothing
 * an earlier kernel writes, and writes nothing an earlier kernel reads,
 * before it.  sj_chain_release() lets the next kernel start; a kernel
 * that releases before it waits has the next grid launched once its own
 * blocks have all started, so the next kernel's launch and its first
 * loads pass while this one works.  Waits chain: a kernel finishes only
 * after its own wait, so when one kernel's wait returns, every earlier
 * kernel has finished.  Every block of a chained kernel must wait (a grid
 * whose blocks all left without it could finish before the kernel it
 * follows).  Launched plainly, or before sm_90, both do nothing.
 *
 * A kernel that never releases releases as its blocks leave: the next
 * grid is then launched as this one ends, before its writes are flushed
 * and the stream would start the next.  The decode step's kernels
 * release at their start (one wave of short blocks); the scan ops'
 * kernels never do: released at its start, a kernel had the next one's
 * blocks placed on the SMs beside its own, and the split forward at
 * 1 x 16384 x 1536 ran 12% slower, the split backward at 2 x 2048 x 1536
 * 7% (bench/NOTES.md, "Scan shapes, round 13"). */
#pragma once

__device__ __forceinline__ void sj_chain_wait()
{
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void sj_chain_release()
{
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* Both, for a kernel that touches nothing before its wait. */
__device__ __forceinline__ void sj_chain_enter()
{
    sj_chain_release();
    sj_chain_wait();
}
