/* Tensor-core products (mma.sync m16n8k16, f32 sums) for the 16-bit
 * types, shared by the skinny GEMMs (gemm.cu) and the hybrid decode
 * step's products (decode.cu).  Both feed the fragments in the same way:
 * the order of k inside a sum is free, so each lane reads 16 contiguous
 * bytes of a row instead of the fragment's scattered pairs (in a chunk
 * of 32 k, lane t of a quad owns k 8t..8t+7; the first mma step takes
 * its first four as the fragment's k {2t, 2t+1, 2t+8, 2t+9}, the second
 * its last four, in A and B alike), and no fragment is shuffled. */
#pragma once

#include "ssmjit_types.cuh"

/* C += A B on tensor cores (m16n8k16, f32 sums), for each 16-bit type. */
template <typename T> struct sj_mma_type;
#define SJ_MMA_TYPE(T, ptx)                                                                                     \
    template <> struct sj_mma_type<T> {                                                                         \
        static __device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4], unsigned b0,           \
                                                   unsigned b1)                                                 \
        {                                                                                                       \
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." ptx "." ptx ".f32 {%0,%1,%2,%3}, "             \
                         "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"                                               \
                         : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                       \
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));                       \
        }                                                                                                       \
    };
SJ_MMA_TYPE(sj_half, "f16")
SJ_MMA_TYPE(sj_bf16, "bf16")
