/* The safetensors reader on files the test writes: a good file in any name
 * order, conversions, and every way a file can be wrong (truncated at each
 * byte, huge header lengths, malformed headers, bad dtypes, shapes and
 * offsets, duplicates, FIFOs), each with a message that says what. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtype_convert.h"
#include "safetensors.h"
#include "st_util.h"
#include "test_util.h"


/* Names deliberately out of order: header order, name order and data
 * order all differ. */
static const su_tensor good[] = {
    {"m.weight", SSMJIT_F16, 2, {3, 5}, NULL},    {"z.bias", SSMJIT_F32, 1, {7}, NULL},
    {"a.scale", SSMJIT_BF16, 3, {2, 1, 3}, NULL}, {"scalar", SSMJIT_F32, 0, {0}, NULL},
    {"empty", SSMJIT_F16, 2, {0, 4}, NULL},
};
#define NGOOD (sizeof good / sizeof *good)

static void test_good_file(void **state)
{
    (void)state;
    su_build_file(su_path("good.safetensors"), good, NGOOD);
    sj_st_file *f;
    assert_int_equal(sj_st_open(su_path("good.safetensors"), &f), SSMJIT_OK);
    const sj_st_header *h = sj_st_file_header(f);
    assert_int_equal(h->count, NGOOD);
    assert_string_equal(sj_st_file_path(f), su_path("good.safetensors"));
    for (size_t k = 0; k < NGOOD; k++) {
        const sj_st_tensor *t = sj_st_header_find(h, good[k].name);
        assert_non_null(t);
        assert_string_equal(t->name, good[k].name);
        assert_int_equal(t->ndim, good[k].ndim);
        for (int d = 0; d < t->ndim; d++)
            assert_int_equal(t->shape[d], good[k].shape[d]);
        ssmjit_dtype dt;
        assert_int_equal(sj_st_tensor_dtype(t, &dt), SSMJIT_OK);
        assert_int_equal(dt, good[k].dtype);
        uint64_t n = sj_st_tensor_numel(t);
        assert_int_equal(t->end - t->begin, n * ssmjit_dtype_size(dt));
        /* Every conversion gives the values written (they are exact in all
         * three types). */
        float f32[64];
        uint16_t half[64];
        assert_int_equal(sj_st_tensor_convert(t, SSMJIT_F32, f32), SSMJIT_OK);
        for (uint64_t i = 0; i < n; i++)
            assert_true(f32[i] == su_value(t->name, i));
        assert_int_equal(sj_st_tensor_convert(t, SSMJIT_F16, half), SSMJIT_OK);
        for (uint64_t i = 0; i < n; i++)
            assert_true(sj_f16_to_f32(half[i]) == su_value(t->name, i));
        assert_int_equal(sj_st_tensor_convert(t, SSMJIT_BF16, half), SSMJIT_OK);
        for (uint64_t i = 0; i < n; i++)
            assert_true(sj_bf16_to_f32(half[i]) == su_value(t->name, i));
        assert_int_equal(sj_st_tensor_convert(t, (ssmjit_dtype)7, f32), SSMJIT_ERR_INVALID_ARG);
    }
    assert_int_equal(sj_st_tensor_numel(sj_st_header_find(h, "scalar")), 1);
    assert_int_equal(sj_st_tensor_numel(sj_st_header_find(h, "empty")), 0);
    /* Sorted by name for lookup. */
    for (size_t i = 1; i < h->count; i++)
        assert_true(strcmp(h->tensors[i - 1].name, h->tensors[i].name) < 0);
    assert_null(sj_st_header_find(h, "missing"));
    assert_null(sj_st_header_find(h, "m.weigh"));
    sj_st_close(f);
    sj_st_close(NULL);
}

/* Conversion of stored raw values that need rounding: 1 + 2^-8 in f32 is a
 * bf16 tie and rounds to even; a signalling NaN comes out quiet. */
static void test_convert_rounds(void **state)
{
    (void)state;
    float vals[3] = {1.00390625f, 1.01171875f, 0};
    uint32_t snan = 0x7f800001u;
    memcpy(&vals[2], &snan, 4);
    size_t size;
    uint8_t *img =
        su_image("{\"v\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}", vals, 12, &size);
    sj_st_header h;
    assert_int_equal(sj_safetensors_parse_header(img, size, "mem", &h), SSMJIT_OK);
    uint16_t out[3];
    assert_int_equal(sj_st_tensor_convert(sj_st_header_find(&h, "v"), SSMJIT_BF16, out), SSMJIT_OK);
    assert_int_equal(out[0], 0x3f80);
    assert_int_equal(out[1], 0x3f82);
    assert_int_equal(out[2], 0x7fc0);
    sj_st_header_free(&h);
    free(img);
}

/* A file cut anywhere fails at open, and the message tells where. */
static void test_truncated_everywhere(void **state)
{
    (void)state;
    size_t size;
    uint8_t *img = su_build(good, NGOOD, &size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | img[i];
    const char *p = su_path("cut.safetensors");
    for (size_t cut = 0; cut < size; cut++) {
        su_write(p, img, cut);
        sj_st_file *f = NULL;
        ssmjit_status st = sj_st_open(p, &f);
        assert_null(f);
        if (cut < 8) {
            su_assert_error(st, SSMJIT_ERR_INVALID_ARG, "too short for the 8-byte header length",
                            "truncated");
        } else if (cut < 8 + n) {
            su_assert_error(st, SSMJIT_ERR_INVALID_ARG, "runs past the end of the file", "truncated");
        } else {
            /* The first tensor, in data order, that the cut reaches into. */
            uint64_t data = cut - 8 - n, at = 0;
            const char *victim = NULL;
            for (size_t k = 0; k < NGOOD && !victim; k++) {
                uint64_t bytes = ssmjit_dtype_size(good[k].dtype);
                for (int d = 0; d < good[k].ndim; d++)
                    bytes *= (uint64_t)good[k].shape[d];
                if (at + bytes > data)
                    victim = good[k].name;
                at += bytes;
            }
            char want[64];
            snprintf(want, sizeof want, "tensor '%s' (bytes", victim);
            su_assert_error(st, SSMJIT_ERR_INVALID_ARG, want, "the file is truncated");
        }
    }
    free(img);
}

static void test_huge_header_length(void **state)
{
    (void)state;
    static const uint64_t lengths[] = {1ull << 63, UINT64_MAX, 1ull << 32, 41};
    uint8_t img[48];
    memset(img, ' ', sizeof img);
    img[8] = '{';
    img[9] = '}';
    for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++) {
        for (int b = 0; b < 8; b++)
            img[b] = (uint8_t)(lengths[i] >> (8 * b));
        su_write(su_path("huge.safetensors"), img, sizeof img);
        sj_st_file *f;
        char want[64];
        snprintf(want, sizeof want, "header length %llu runs past the end of the file (48 bytes)",
                 (unsigned long long)lengths[i]);
        su_assert_error(sj_st_open(su_path("huge.safetensors"), &f), SSMJIT_ERR_INVALID_ARG, want, NULL);
    }
    /* Length 40 fits exactly: "{}" and spaces, no tensor, no data. */
    img[0] = 40;
    for (int b = 1; b < 8; b++)
        img[b] = 0;
    sj_st_header h;
    assert_int_equal(sj_safetensors_parse_header(img, sizeof img, "mem", &h), SSMJIT_OK);
    assert_int_equal(h.count, 0);
    sj_st_header_free(&h);

    /* Over the cap although the buffer is that large.  The pages past the
     * first are never touched, so they cost nothing. */
    size_t big = SJ_ST_MAX_HEADER + 16;
    uint8_t *mem = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(mem != MAP_FAILED);
    uint64_t len = SJ_ST_MAX_HEADER + 1;
    for (int b = 0; b < 8; b++)
        mem[b] = (uint8_t)(len >> (8 * b));
    su_assert_error(sj_safetensors_parse_header(mem, big, "mem", &h), SSMJIT_ERR_INVALID_ARG,
                    "header length 100000001 is over the 100000000-byte limit", NULL);
    munmap(mem, big);
}

typedef struct {
    const char *header;
    size_t data_len;
    ssmjit_status status;
    const char *part1, *part2;
} header_case;

static void run_header_cases(const header_case *cases, size_t n)
{
    static const uint8_t zeros[4096];
    for (size_t i = 0; i < n; i++) {
        const header_case *c = &cases[i];
        size_t size;
        uint8_t *img = su_image(c->header, zeros, c->data_len, &size);
        sj_st_header h = {0};
        ssmjit_status st = sj_safetensors_parse_header(img, size, "x.safetensors", &h);
        if (st == SSMJIT_OK)
            print_error("case %zu parsed: %s\n", i, c->header);
        su_assert_error(st, c->status, c->part1, c->part2);
        assert_null(h.doc);
        assert_null(h.tensors);
        free(img);
    }
}

#define T(name, body) "\"" name "\":{" body "}"

static void test_malformed_headers(void **state)
{
    (void)state;
    static const header_case cases[] = {
        {"[]", 0, SSMJIT_ERR_INVALID_ARG, "'x.safetensors': header does not start with '{'", NULL},
        {" {}", 0, SSMJIT_ERR_INVALID_ARG, "does not start with '{'", NULL},
        {"", 0, SSMJIT_ERR_INVALID_ARG, "does not start with '{'", NULL},
        {"{", 0, SSMJIT_ERR_INVALID_ARG, "'x.safetensors' header: invalid JSON at byte 1", NULL},
        {"{\"a\":}", 0, SSMJIT_ERR_INVALID_ARG, "invalid JSON at byte 5", "expected a value"},
        {"{}x", 0, SSMJIT_ERR_INVALID_ARG, "invalid JSON at byte 2", NULL},
        {"{\"a\":1}", 0, SSMJIT_ERR_INVALID_ARG, "tensor 'a' is a number, not an object", NULL},
        {"{" T("a", "\"dtype\":\"F32\",\"shape\":[1]") "}", 0, SSMJIT_ERR_INVALID_ARG,
         "tensor 'a': \"data_offsets\" must be an array", NULL},
        {"{" T("a", "\"shape\":[1],\"data_offsets\":[0,4]") "}", 4, SSMJIT_ERR_INVALID_ARG,
         "tensor 'a': \"dtype\" must be a string", NULL},
        {"{" T("a", "\"dtype\":\"F32\",\"data_offsets\":[0,4]") "}", 4, SSMJIT_ERR_INVALID_ARG,
         "tensor 'a': \"shape\" must be an array", NULL},
        {"{" T("a", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":1") "}", 4,
         SSMJIT_ERR_INVALID_ARG, "tensor 'a': unexpected key \"extra\"", NULL},
        {"{\"__metadata__\":[]}", 0, SSMJIT_ERR_INVALID_ARG,
         "\"__metadata__\" is an array, not an object", NULL},
        {"{\"__metadata__\":{\"format\":\"pt\",\"n\":3}}", 0, SSMJIT_ERR_INVALID_ARG,
         "\"__metadata__\" entry \"n\" is a number, not a string", NULL},
        /* Duplicate tensor names: the JSON parser refuses duplicate keys. */
        {"{" T("a", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]") "," T(
             "a", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]") "}",
         8, SSMJIT_ERR_INVALID_ARG, "duplicate key \"a\"", NULL},
        {"{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
         SSMJIT_ERR_INVALID_ARG, "duplicate key \"dtype\"", NULL},
    };
    run_header_cases(cases, sizeof cases / sizeof *cases);
    /* Trailing whitespace is the format's padding: an empty header parses. */
    sj_st_header h;
    size_t size;
    uint8_t *img = su_image("{} \n\t ", NULL, 0, &size);
    assert_int_equal(sj_safetensors_parse_header(img, size, "x", &h), SSMJIT_OK);
    sj_st_header_free(&h);
    free(img);
    /* A NUL byte inside the header (su_image stops at one, so build by hand). */
    uint8_t nul[] = {8, 0, 0, 0, 0, 0, 0, 0, '{', '"', 'a', 0, '"', ':', '1', '}'};
    su_assert_error(sj_safetensors_parse_header(nul, sizeof nul, "x", &h), SSMJIT_ERR_INVALID_ARG,
                    "invalid JSON at byte 3", "NUL byte in string");
}

static void test_bad_dtypes_and_shapes(void **state)
{
    (void)state;
    static const header_case cases[] = {
        {"{" T("w", "\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]") "}", 4,
         SSMJIT_ERR_UNSUPPORTED, "tensor 'w': dtype \"F33\" is not one this reader knows", NULL},
        {"{" T("w", "\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]") "}", 4,
         SSMJIT_ERR_UNSUPPORTED, "dtype \"f32\"", NULL},
        {"{" T("w", "\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]") "}", 4, SSMJIT_ERR_INVALID_ARG,
         "tensor 'w': \"dtype\" must be a string", NULL},
        {"{" T("w", "\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,12]") "}", 12,
         SSMJIT_ERR_INVALID_ARG,
         "tensor 'w': shape and dtype F32 make 16 bytes but data_offsets [0, 12] hold 12", NULL},
        {"{" T("w", "\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[0,12]") "}", 12,
         SSMJIT_ERR_INVALID_ARG, "shape and dtype BF16 make 6 bytes", NULL},
        {"{" T("w", "\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]") "}", 4,
         SSMJIT_ERR_INVALID_ARG, "tensor 'w': \"shape\" entry 0 is not a non-negative 64-bit integer",
         NULL},
        {"{" T("w", "\"dtype\":\"F32\",\"shape\":[1,2.0],\"data_offsets\":[0,8]") "}", 8,
         SSMJIT_ERR_INVALID_ARG, "\"shape\" entry 1 is not a non-negative", NULL},
        {"{" T("w", "\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]") "}", 4,
         SSMJIT_ERR_INVALID_ARG, "\"shape\" entry 0", NULL},
        {"{" T("w", "\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]") "}", 4,
         SSMJIT_ERR_UNSUPPORTED, "tensor 'w' has 9 dimensions, more than 8", NULL},
        {"{" T("w", "\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]") "}", 0,
         SSMJIT_ERR_INVALID_ARG, "tensor 'w': shape overflows 64 bits", NULL},
        {"{" T("w", "\"dtype\":\"U8\",\"shape\":[9223372036854775807,3],\"data_offsets\":[0,0]") "}", 0,
         SSMJIT_ERR_INVALID_ARG, "shape overflows", NULL},
        {"{" T("w", "\"dtype\":\"F32\",\"shape\":[18446744073709551616],\"data_offsets\":[0,4]") "}", 4,
         SSMJIT_ERR_INVALID_ARG, "\"shape\" entry 0 is not a non-negative 64-bit integer", NULL},
    };
    run_header_cases(cases, sizeof cases / sizeof *cases);

    /* Dtypes that are valid but unusable open fine and fail when used. */
    int64_t ints[2] = {1, 2};
    size_t size;
    uint8_t *img =
        su_image("{" T("ids", "\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]") "," T(
                     "flags", "\"dtype\":\"BOOL\",\"shape\":[0],\"data_offsets\":[16,16]") "}",
                 ints, sizeof ints, &size);
    sj_st_header h;
    assert_int_equal(sj_safetensors_parse_header(img, size, "ints.safetensors", &h), SSMJIT_OK);
    const sj_st_tensor *t = sj_st_header_find(&h, "ids");
    assert_int_equal(t->dtype, SJ_ST_I64);
    assert_string_equal(sj_st_dtype_name(t->dtype), "I64");
    assert_string_equal(sj_st_dtype_name(sj_st_header_find(&h, "flags")->dtype), "BOOL");
    ssmjit_dtype dt;
    su_assert_error(sj_st_tensor_dtype(t, &dt), SSMJIT_ERR_UNSUPPORTED,
                    "tensor 'ids' in 'ints.safetensors' is I64; only F32, F16 and BF16 are supported",
                    NULL);
    float out[2];
    su_assert_error(sj_st_tensor_convert(t, SSMJIT_F32, out), SSMJIT_ERR_UNSUPPORTED, "tensor 'ids'",
                    "is I64");
    sj_st_header_free(&h);
    free(img);
}

static void test_bad_offsets(void **state)
{
    (void)state;
    static const header_case cases[] = {
        {"{" T("w", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]") "}", 4,
         SSMJIT_ERR_INVALID_ARG, "tensor 'w': \"data_offsets\" has 1 entries, not 2", NULL},
        {"{" T("w", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]") "}", 8,
         SSMJIT_ERR_INVALID_ARG, "has 3 entries, not 2", NULL},
        {"{" T("w", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]") "}", 8,
         SSMJIT_ERR_INVALID_ARG, "tensor 'w': data_offsets [8, 4] end before they begin", NULL},
        {"{" T("w", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,-4]") "}", 4,
         SSMJIT_ERR_INVALID_ARG, "\"data_offsets\" entry 1 is not a non-negative", NULL},
        /* Past the data buffer. */
        {"{" T("w", "\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]") "}", 4,
         SSMJIT_ERR_INVALID_ARG,
         "tensor 'w' (bytes 0..8) runs past the end of the data buffer (4 bytes)", NULL},
        {"{" T("w", "\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[18446744073709551615,0]") "}", 1,
         SSMJIT_ERR_INVALID_ARG, "\"data_offsets\" entry 0 is not a non-negative 64-bit integer", NULL},
        /* Overlap, hole, leftover bytes. */
        {"{" T("a", "\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]") "," T(
             "b", "\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]") "}",
         12, SSMJIT_ERR_INVALID_ARG, "tensor 'b' (bytes 4..12) overlaps tensor 'a'", NULL},
        {"{" T("a", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]") "," T(
             "b", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]") "}",
         4, SSMJIT_ERR_INVALID_ARG, "overlaps tensor", NULL},
        {"{" T("a", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]") "," T(
             "b", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]") "}",
         12, SSMJIT_ERR_INVALID_ARG, "bytes 4..8 of the data buffer belong to no tensor (next is 'b')",
         NULL},
        {"{" T("b", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]") "}", 8,
         SSMJIT_ERR_INVALID_ARG, "bytes 0..4 of the data buffer belong to no tensor", NULL},
        {"{" T("a", "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]") "}", 10,
         SSMJIT_ERR_INVALID_ARG, "6 bytes after the last tensor belong to no tensor", NULL},
        {"{}", 1, SSMJIT_ERR_INVALID_ARG, "1 bytes after the last tensor", NULL},
    };
    run_header_cases(cases, sizeof cases / sizeof *cases);
}

/* Files the reader must refuse to open at all.  A symlink to a good file
 * is followed (the Hugging Face hub cache is made of them). */
static void test_refused_paths(void **state)
{
    (void)state;
    su_build_file(su_path("real.safetensors"), good, NGOOD);
    assert_int_equal(symlink("real.safetensors", su_path("link.safetensors")), 0);
    sj_st_file *f = NULL;
    assert_int_equal(sj_st_open(su_path("link.safetensors"), &f), SSMJIT_OK);
    sj_st_close(f);
    f = NULL;
    su_assert_error(sj_st_open(su_path("absent.safetensors"), &f), SSMJIT_ERR_IO, "cannot open",
                    "No such file");
    su_assert_error(sj_st_open(su_dir, &f), SSMJIT_ERR_IO, "not a regular file", NULL);
    assert_int_equal(mkfifo(su_path("fifo.safetensors"), 0600), 0);
    su_assert_error(sj_st_open(su_path("fifo.safetensors"), &f), SSMJIT_ERR_IO, "not a regular file", NULL);
    su_write(su_path("empty.safetensors"), "", 0);
    su_assert_error(sj_st_open(su_path("empty.safetensors"), &f), SSMJIT_ERR_INVALID_ARG, "'",
                    "0 bytes, too short for the 8-byte header length");
    /* The real file still opens. */
    assert_int_equal(sj_st_open(su_path("real.safetensors"), &f), SSMJIT_OK);
    sj_st_close(f);
}

/* Random corruptions of a good image never crash or read outside it:
 * the image ends at an unreadable page.  Whatever parses has every
 * tensor inside the buffer. */
static void test_random_corruption(void **state)
{
    (void)state;
    size_t size, page = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *img = su_build(good, NGOOD, &size);
    size_t span = (size + page - 1) / page * page;
    uint8_t *map = mmap(NULL, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(map != MAP_FAILED);
    assert_int_equal(mprotect(map + span, page, PROT_NONE), 0);
    uint8_t *buf = map + span - size;
    int parsed = 0;
    for (int round = 0; round < 20000; round++) {
        memcpy(buf, img, size);
        int flips = 1 + (int)tu_uniform(0, 4);
        for (int i = 0; i < flips; i++) {
            size_t at = (size_t)tu_uniform(0, (double)size);
            buf[at] =
                round % 3 ? (uint8_t)tu_uniform(0, 256) : (uint8_t) "{}[]\",:0123456789 \\"[round % 20];
        }
        size_t len = round % 7 == 0 ? (size_t)tu_uniform(0, (double)size) : size;
        uint8_t *start = buf + (size - len);
        if (len != size)
            memmove(start, buf, len);
        sj_st_header h;
        if (sj_safetensors_parse_header(start, len, "fuzz", &h) == SSMJIT_OK) {
            parsed++;
            for (size_t k = 0; k < h.count; k++) {
                const sj_st_tensor *t = &h.tensors[k];
                assert_true(t->data >= start && t->data + (t->end - t->begin) <= start + len);
            }
            sj_st_header_free(&h);
        } else {
            assert_true(strlen(ssmjit_last_error()) > 0);
        }
    }
    print_message("# %d of 20000 corrupted images still parsed\n", parsed);
    munmap(map, span + page);
    free(img);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_file),
        cmocka_unit_test(test_convert_rounds),
        cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_huge_header_length),
        cmocka_unit_test(test_malformed_headers),
        cmocka_unit_test(test_bad_dtypes_and_shapes),
        cmocka_unit_test(test_bad_offsets),
        cmocka_unit_test(test_refused_paths),
        cmocka_unit_test(test_random_corruption),
    };
    return cmocka_run_group_tests(tests, su_dir_setup, su_dir_teardown);
}
