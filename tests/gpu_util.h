/* Device helpers for the GPU tests.  Every GPU test starts with
 *     ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
 * (or gu_require_gpu()), which skips the test on a machine without a
 * driver or device. */
#ifndef SSMJIT_GPU_UTIL_H
#define SSMJIT_GPU_UTIL_H

#include <stddef.h>

#include "ssmjit.h"

/* A context on device 0 with the given fast-math setting.  Where this
 * machine has no usable GPU it skips the calling test (cmocka's skip()
 * leaves the test from here); any other error fails it.  Destroy with
 * ssmjit_context_destroy. */
ssmjit_context *gu_context(ssmjit_fast_math fast_math);

/* A context with no device, for CPU tests of what the engine and ops
 * decide: an H200's properties (sm_90, 132 SMs), a driver with no entry
 * points (any call fails), its own fast-math defaults, no cache. */
ssmjit_context *gu_stand_in_context(void);

/* Skips the calling test where this machine has no usable GPU: for tests
 * that make their own contexts. */
void gu_require_gpu(void);

/* Device memory (asserts on failure; 0 bytes gives a valid dummy pointer). */
void *gu_alloc(size_t bytes);
void gu_free(void *dptr);

/* Raw copies (synchronous). */
void gu_upload(void *dptr, const void *host, size_t bytes);
void gu_download(void *host, const void *dptr, size_t bytes);

/* Fills with 0xFF bytes: NaN in f32, f16 and bf16, so an element the kernel
 * does not write fails the comparison. */
void gu_poison(void *dptr, size_t bytes);

/* Waits for all work of the current context. */
void gu_sync(void);

/* Rounds v through dtype (what the GPU sees after conversion). */
double gu_round(double v, ssmjit_dtype dtype);

/* Allocates n elements of dtype on the device, uploads host[0..n) converted
 * to dtype, and (in place) rounds host[] to what was stored, so a double
 * reference computed from host[] sees exactly the GPU's inputs. */
void *gu_upload_new(double *host, size_t n, ssmjit_dtype dtype);

/* Uploads host[] converted to dtype into existing memory (rounding host[]
 * in place as above). */
void gu_upload_as(void *dptr, double *host, size_t n, ssmjit_dtype dtype);

/* Downloads n elements of dtype and widens them to double. */
void gu_download_as(double *host, const void *dptr, size_t n, ssmjit_dtype dtype);

/* Device memory holding n NaN-poisoned elements of dtype. */
void *gu_alloc_poisoned(size_t n, ssmjit_dtype dtype);

/* A [rows, w] view at column `off` of a [rows, ld] device buffer.
 * Strided views sit inside rows more than twice as wide at an odd offset
 * (like one half of a fused projection); everything outside the view is
 * NaN, so a kernel that reads it spoils its result and one that writes it
 * is caught when the padding is checked.  A view without a buffer stands
 * for an absent optional argument. */
typedef struct gu_view {
    void *base;
    size_t rows, w, ld, off;
    ssmjit_dtype dtype;
} gu_view;

extern const gu_view gu_no_view;

/* `strided` of the views below: 0 contiguous, 1 rows 2 w + 3 elements
 * apart from element w + 1 on (unaligned), GU_ALIGNED_PADDING rows a
 * multiple of 8 elements apart from element 8 on (16-byte aligned rows
 * where w is a multiple of 8 and elements are 16-bit). */
#define GU_ALIGNED_PADDING 2

/* Uploads host[rows * w] (rounded in place to what the device holds);
 * NULL host gives gu_no_view. */
gu_view gu_view_upload(double *host, size_t rows, size_t w, ssmjit_dtype dtype, int strided);

/* A view whose elements (and padding) are NaN. */
gu_view gu_view_poisoned(size_t rows, size_t w, ssmjit_dtype dtype, int strided);

/* Downloads the view into host[rows * w]; fails the test if the padding
 * was written. */
void gu_view_download(double *host, const gu_view *v);

/* The ssmjit operand: stride 0 (contiguous) without padding, {NULL, 0}
 * for gu_no_view. */
ssmjit_matrix gu_view_matrix(const gu_view *v);

/* Frees the buffer (NULL-safe) and empties the view. */
void gu_view_free(gu_view *v);

/* Tolerance the op tests hold dtype to: 1e-5 for f32 (fast math off),
 * 1e-2 for f16 and bf16. */
double gu_tolerance(ssmjit_dtype dtype);

#endif
