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
 * follows).  Launched plainly, or before sm_90, both do nothing. */
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
