/* Helpers every test uses: fresh random inputs, error metrics, temp dirs. */
#ifndef SSMJIT_TEST_UTIL_H
#define SSMJIT_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Seeds the generator from the clock (or SSMJIT_TEST_SEED) and prints the
 * seed, so every run draws fresh inputs and a failure can be replayed. */
void tu_seed(void);

/* Uniform in [lo, hi). */
double tu_uniform(double lo, double hi);

/* Standard normal. */
double tu_normal(void);

/* Fills x[0..n) uniformly from [lo, hi). */
void tu_fill_uniform(double *x, size_t n, double lo, double hi);

/* ||got - ref|| / ||ref|| over n values; INFINITY if any got is NaN or
 * infinite (so an unwritten, poisoned output fails). ref all zero: the
 * absolute norm of got. */
double tu_rel_err(const double *got, const double *ref, size_t n);

/* The same with the error over ||scale|| instead of ||ref||: for values
 * whose rounding is relative to something else than their own size. */
double tu_scaled_err(const double *got, const double *ref, const double *scale, size_t n);

/* Creates a fresh directory under $TMPDIR (or /tmp); caller frees. */
char *tu_mkdtemp(void);

/* Removes a directory tree (rm -rf). */
void tu_rmtree(const char *path);

/* Entries of a directory, "." and ".." not counted (asserts it opens). */
int tu_dir_entries(const char *path);

/* Nonzero when NVRTC is mapped into this process (it was opened). */
int tu_nvrtc_mapped(void);

/* Runs this test program again as `<self> arg1 arg2` and returns its exit
 * status (-1 if it did not exit normally): for checks that need a fresh
 * process (CUDA does not survive fork, and in-memory tables start empty). */
int tu_run_self(const char *arg1, const char *arg2);

/* Restricts the next cmocka group run to the tests whose names match
 * SSMJIT_TEST_FILTER (cmocka's pattern: * and ? wildcards) when it is set,
 * so that a slow checker (compute-sanitizer) can run each test of a program
 * in its own process, several at once. */
void tu_apply_test_filter(void);

/* Allocates n doubles (asserts on failure); free with free(). */
double *tu_doubles(size_t n);

#endif
