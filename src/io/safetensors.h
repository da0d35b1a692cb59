/* Reader for one safetensors file: an 8-byte little-endian header length N,
 * N bytes of JSON describing each tensor (dtype, shape, byte range in the
 * data buffer), then the data buffer.
 *
 * Everything in the header is checked before a tensor is handed out: the
 * length against the file and a 100 MB cap, every dtype and shape, that
 * shape times element size is the byte range's length (without overflow),
 * and, as the reference implementation requires, that the ranges tile the
 * data buffer exactly (no overlap, no hole, nothing after the last one).  A
 * file cut short anywhere thus fails at open, naming what was cut.
 *
 * Statuses: SSMJIT_ERR_IO when the operating system refuses (open, mmap,
 * not a regular file once symlinks are followed); SSMJIT_ERR_INVALID_ARG for malformed or
 * truncated contents; SSMJIT_ERR_UNSUPPORTED for a well-formed tensor this
 * library cannot use (dtype other than F32/F16/BF16, more than
 * SJ_ST_MAX_DIMS dimensions).  Messages name the file and the tensor. */
#ifndef SSMJIT_SAFETENSORS_H
#define SSMJIT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "base/json.h"
#include "ssmjit.h"

#define SJ_ST_MAX_HEADER 100000000u
#define SJ_ST_MAX_DIMS 8

/* Every dtype of the format whose elements are whole bytes. */
typedef enum sj_st_dtype {
    SJ_ST_BOOL,
    SJ_ST_U8,
    SJ_ST_I8,
    SJ_ST_F8_E4M3,
    SJ_ST_F8_E5M2,
    SJ_ST_I16,
    SJ_ST_U16,
    SJ_ST_F16,
    SJ_ST_BF16,
    SJ_ST_I32,
    SJ_ST_U32,
    SJ_ST_F32,
    SJ_ST_F64,
    SJ_ST_I64,
    SJ_ST_U64,
    SJ_ST_NUM_DTYPES
} sj_st_dtype;

typedef struct sj_st_tensor {
    const char *name;
    sj_st_dtype dtype;
    int ndim;
    int64_t shape[SJ_ST_MAX_DIMS];
    uint64_t begin, end; /* byte range in the data buffer */
    const uint8_t *data; /* its first byte; not aligned in general */
    const char *file;    /* where it came from, for messages */
} sj_st_tensor;

/* A parsed header: the tensors sorted by name.  Names and data pointers
 * point into the document and the buffer given to the parser. */
typedef struct sj_st_header {
    sj_json_doc *doc;
    sj_st_tensor *tensors;
    size_t count;
} sj_st_header;

/* Parses and checks the header of a whole safetensors file held in
 * data[0..size) (also the entry point for fuzzing: nothing is read outside
 * that range).  `what` names the file in messages and is stored in each
 * tensor, so it must outlive the header.  On success free *out with
 * sj_st_header_free; on failure *out holds nothing to free. */
ssmjit_status sj_safetensors_parse_header(const uint8_t *data, size_t size, const char *what,
                                          sj_st_header *out);

void sj_st_header_free(sj_st_header *h);

/* The tensor called name, or NULL.  Binary search. */
const sj_st_tensor *sj_st_header_find(const sj_st_header *h, const char *name);

typedef struct sj_st_file sj_st_file;

/* Opens a safetensors file (following a symlink at path), maps it and
 * parses its header.  Tensor data is paged in only when read. */
ssmjit_status sj_st_open(const char *path, sj_st_file **out);

/* NULL is a no-op.  Pointers from the file are invalid afterwards. */
void sj_st_close(sj_st_file *f);

const sj_st_header *sj_st_file_header(const sj_st_file *f);

/* The path the file was opened with. */
const char *sj_st_file_path(const sj_st_file *f);

/* Format name of a dtype ("F32", "BF16", ...). */
const char *sj_st_dtype_name(sj_st_dtype dtype);

/* The compute dtype a tensor converts from: SSMJIT_OK for F32, F16, BF16,
 * else SSMJIT_ERR_UNSUPPORTED naming the tensor and its dtype. */
ssmjit_status sj_st_tensor_dtype(const sj_st_tensor *t, ssmjit_dtype *out);

/* Number of elements (the product of the shape; 1 for a scalar). */
uint64_t sj_st_tensor_numel(const sj_st_tensor *t);

/* Writes the tensor's elements to dst (numel elements of dtype `to`),
 * converted as sj_convert does.  SSMJIT_ERR_UNSUPPORTED for a tensor dtype
 * other than F32/F16/BF16; SSMJIT_ERR_INVALID_ARG for a bad `to`. */
ssmjit_status sj_st_tensor_convert(const sj_st_tensor *t, ssmjit_dtype to, void *dst);

#endif
