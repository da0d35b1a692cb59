/* Copies from global to shared memory that hold no registers until they
 * land (cp.async on sm_80 on, else a plain load and store), shared by the
 * scan's staging and the skinny GEMMs' (gemm.cu). */
#pragma once

#include "ssmjit_types.cuh"

/* Copies `bytes` (0..4) from global src to shared dst and zero-fills the
 * rest of the 4-byte word, without holding registers until it lands:
 * cp.async where the GPU has it (sm_80 on), else a plain load and store.
 * Each thread must sj_copy_wait() before reading what it copied. */
__device__ __forceinline__ void sj_copy4(void *dst, const void *src, int bytes)
{
#if __CUDA_ARCH__ >= 800
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(s), "l"(src), "r"(bytes) : "memory");
#else
    unsigned w = 0;
    if (bytes == 4)
        w = *(const unsigned *)src;
    else
        for (int i = 0; i < bytes; ++i)
            w |= (unsigned)((const unsigned char *)src)[i] << (8 * i);
    *(unsigned *)dst = w;
#endif
}

/* As sj_copy4 for 16 bytes (0 or 16) between 16-byte aligned addresses,
 * bypassing L1 (each byte is read once), or through it (shared: for
 * bytes that the SM's other blocks read too). */
__device__ __forceinline__ void sj_copy16(void *dst, const void *src, int bytes, bool shared = false)
{
#if __CUDA_ARCH__ >= 800
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    if (shared)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(src), "r"(bytes) : "memory");
    else
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(src), "r"(bytes) : "memory");
#else
    *(uint4 *)dst = bytes ? *(const uint4 *)src : make_uint4(0, 0, 0, 0);
#endif
}

/* As sj_copy16 (shared) for 8 bytes (0 or 8) between 8-byte aligned
 * addresses. */
__device__ __forceinline__ void sj_copy8(void *dst, const void *src, int bytes)
{
#if __CUDA_ARCH__ >= 800
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(s), "l"(src), "r"(bytes) : "memory");
#else
    *(uint2 *)dst = bytes ? *(const uint2 *)src : make_uint2(0, 0);
#endif
}

__device__ __forceinline__ void sj_copy_wait()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

/* Groups of copies: sj_copy_commit() closes the group of the copies this
 * thread issued since the last one; sj_copy_wait_pending<N>() waits until
 * at most N of its groups are still in flight (all, before sm_80, were
 * plain loads and stores). */
__device__ __forceinline__ void sj_copy_commit()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

template <int N> __device__ __forceinline__ void sj_copy_wait_pending()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}
