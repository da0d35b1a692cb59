/* Tensor-core products (mma.sync m16n8k16, f32 sums) for the 16-bit
 * types, shared by the skinny GEMMs (gemm.cu) and the hybrid decode
 * step's products (decode.cu).  The skinny GEMMs feed the fragments from
 * plain loads: the order of k inside a sum is free, so each lane reads 16
 * contiguous bytes of a row instead of the fragment's scattered pairs (in
 * a chunk of 32 k, lane t of a quad owns k 8t..8t+7; the first mma step
 * takes its first four as the fragment's k {2t, 2t+1, 2t+8, 2t+9}, the
 * second its last four, in A and B alike), and no fragment is shuffled.
 * The decode products load them with sj_ldmatrix_x4, in k's order. */
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

/* The four 8 x 8 matrices of 16-bit elements whose rows lanes 8 i .. 8 i
 * + 7 point at (16 bytes each, in shared memory), into r[i]: lane l gets
 * row l / 4's elements 2 (l % 4) and 2 (l % 4) + 1 of each, which is the
 * mma fragments' order, so that no fragment is gathered by moves. */
__device__ __forceinline__ void sj_ldmatrix_x4(unsigned (&r)[4], unsigned smem_addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr));
}
