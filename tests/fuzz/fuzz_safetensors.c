/* libFuzzer target: arbitrary bytes as a whole safetensors file.  The
 * header parser must never crash or read outside the bytes, and a header
 * it accepts must hold what it promises: tensors sorted by name, each
 * found again by name, its byte range inside the data buffer and exactly
 * shape x element size long, the ranges tiling the buffer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_safetensors: %s\n", what);
        abort();
    }
}

static const unsigned elem_size[SJ_ST_NUM_DTYPES] = {1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 8, 8, 8};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sj_st_header h;
    if (sj_safetensors_parse_header(data, size, "fuzz", &h) != SSMJIT_OK)
        return 0;
    uint64_t header_len = 0;
    for (int i = 0; i < 8; i++)
        header_len |= (uint64_t)data[i] << (8 * i);
    const uint8_t *buffer = data + 8 + header_len;
    uint64_t covered = 0;
    for (size_t i = 0; i < h.count; i++) {
        const sj_st_tensor *t = &h.tensors[i];
        require(i == 0 || strcmp(h.tensors[i - 1].name, t->name) < 0, "tensors not sorted by name");
        require(sj_st_header_find(&h, t->name) == t, "a tensor not found by its name");
        require(t->dtype < SJ_ST_NUM_DTYPES && t->ndim >= 0 && t->ndim <= SJ_ST_MAX_DIMS, "bad dtype or rank");
        uint64_t bytes = elem_size[t->dtype];
        for (int d = 0; d < t->ndim; d++) {
            require(t->shape[d] >= 0, "negative extent");
            bytes *= (uint64_t)t->shape[d];
        }
        require(t->begin <= t->end && t->end - t->begin == bytes, "range does not match the shape");
        require(t->data == buffer + t->begin && buffer + t->end <= data + size, "data outside the file");
        covered += t->end - t->begin;
    }
    require(covered == (uint64_t)(data + size - buffer), "ranges do not tile the data buffer");
    sj_st_header_free(&h);
    return 0;
}
