/* Writers of safetensors files for the checkpoint tests. */
#ifndef SSMJIT_ST_UTIL_H
#define SSMJIT_ST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "ssmjit.h"

/* A file image: the 8-byte little-endian length of header, header, then
 * data_len bytes of data.  Caller frees. */
uint8_t *su_image(const char *header, const void *data, size_t data_len, size_t *size);

/* Writes len bytes to path (asserts on failure). */
void su_write(const char *path, const void *data, size_t len);

/* Writes a text file. */
void su_write_text(const char *path, const char *text);

typedef struct su_tensor {
    const char *name;
    ssmjit_dtype dtype;
    int ndim;
    int64_t shape[4];
    const char *dtype_name; /* NULL, or written instead of dtype's name
                               (elements keep dtype's size and bits) */
} su_tensor;

/* The value su_build stores at element i of a tensor called name: a
 * multiple of 1/8 in [-8, 8), exact in f32, f16 and bf16. */
float su_value(const char *name, uint64_t i);

/* A whole safetensors image of the tensors filled with su_value, with
 * __metadata__ {"format": "pt"}.  The data lie in the order given and the
 * header lists them in reverse, so neither header order nor name order is
 * offset order.  The header is padded with spaces to a multiple of 8 bytes,
 * as the reference writer does.  Caller frees. */
uint8_t *su_build(const su_tensor *t, size_t n, size_t *size);

/* su_build straight to a file. */
void su_build_file(const char *path, const su_tensor *t, size_t n);

/* A fresh temporary directory for each test (cmocka setup / teardown):
 * su_dir while the test runs. */
extern char *su_dir;
int su_dir_setup(void **state);
int su_dir_teardown(void **state);

/* su_dir/<name>, in one of 4 buffers used in turn (so that a call's
 * arguments may hold a few). */
const char *su_path(const char *name);

/* Fails the test unless st is want and the thread's error message contains
 * part1 and (when not NULL) part2; prints both on a mismatch. */
void su_assert_error(ssmjit_status st, ssmjit_status want, const char *part1, const char *part2);

#endif
