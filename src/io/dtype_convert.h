/* Element types: their names and sizes (ssmjit_dtype_size, public), and
 * conversions between the element types checkpoints store and the ones the
 * kernels compute in.  Pure integer code: the result never depends on the
 * floating-point environment. */
#ifndef SSMJIT_DTYPE_CONVERT_H
#define SSMJIT_DTYPE_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "ssmjit.h"

/* Narrowing rounds to nearest, ties to even; too large becomes infinity;
 * below the smallest subnormal becomes a signed zero.  A NaN stays a NaN
 * and comes out quiet. */
uint16_t sj_f32_to_f16(float f);
uint16_t sj_f32_to_bf16(float f);

/* Widening is exact except that a signalling NaN comes out quiet. */
float sj_f16_to_f32(uint16_t h);
float sj_bf16_to_f32(uint16_t h);

/* Converts n elements from src (of dtype `from`) to dst (of dtype `to`),
 * through f32, which holds every f16 and bf16 value exactly, so each element
 * is rounded once.  Every NaN written is quiet, also when from == to.
 * Neither pointer needs to be aligned; the buffers must not overlap.  Both
 * dtypes must be F32, F16 or BF16 (the caller checks). */
void sj_convert(void *dst, ssmjit_dtype to, const void *src, ssmjit_dtype from, size_t n);

/* Kernel-name and file-format suffix of a dtype ("f32", "f16", "bf16"). */
const char *sj_dtype_suffix(ssmjit_dtype dtype);

#endif
