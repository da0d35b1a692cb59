/* sj_model_upload (src/model/model.c) against a recording stand-in
 * driver whose "device" is host memory: a tensor goes up converted, in
 * pieces of at most 4 MiB that cover it once in order, inside the
 * model's context; a failing copy stops it with the driver's error and
 * leaves the context as it was. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "dtype_convert.h"
#include "model.h"
#include "st_util.h"
#include "test_util.h"

#define PIECE ((size_t)4 << 20)

static struct {
    int copies, fail_at; /* fail_at: the copy (from 1) that fails, 0 none */
    size_t most;         /* the largest piece */
    CUdeviceptr next;    /* where the next piece must start */
    int depth;           /* contexts pushed and not popped */
} rec;

static CUcontext const the_cu = (CUcontext)0x3000;

static CUresult ctx_get_current(CUcontext *c)
{
    *c = rec.depth ? the_cu : NULL;
    return CUDA_SUCCESS;
}

static CUresult ctx_push(CUcontext c)
{
    assert_ptr_equal(c, the_cu);
    rec.depth++;
    return CUDA_SUCCESS;
}

static CUresult ctx_pop(CUcontext *c)
{
    assert_true(rec.depth > 0);
    rec.depth--;
    *c = the_cu;
    return CUDA_SUCCESS;
}

static CUresult memcpy_htod(CUdeviceptr dst, const void *src, size_t bytes)
{
    assert_int_equal(rec.depth, 1);
    assert_true(dst == rec.next);
    if (++rec.copies == rec.fail_at)
        return (CUresult)700;
    memcpy((void *)(uintptr_t)dst, src, bytes);
    rec.next = dst + bytes;
    if (bytes > rec.most)
        rec.most = bytes;
    return CUDA_SUCCESS;
}

static const sj_driver stand_in = {
    .CtxGetCurrent = ctx_get_current,
    .CtxPushCurrent = ctx_push,
    .CtxPopCurrent = ctx_pop,
    .MemcpyHtoD = memcpy_htod,
};

/* Uploads numel elements of dtype `from` into a tensor of dtype `to`
 * whose device memory is dev, failing at copy fail_at (0: none). */
static ssmjit_status upload(ssmjit_dtype to, ssmjit_dtype from, size_t numel, const void *src, void *dev,
                            int fail_at)
{
    ssmjit_context *ctx = sj_context_alloc();
    assert_non_null(ctx);
    ctx->drv = &stand_in;
    ctx->cu = the_cu;
    ssmjit_model m = {.ctx = ctx, .drv = &stand_in};
    sj_model_tensor t = {.name = "backbone.embeddings.weight", .dtype = to, .numel = numel,
                         .data = (CUdeviceptr)(uintptr_t)dev};
    memset(&rec, 0, sizeof rec);
    rec.fail_at = fail_at;
    rec.next = t.data;
    ssmjit_status st = sj_model_upload(&m, &t, src, from);
    free(ctx);
    return st;
}

static void test_pieces(void **state)
{
    (void)state;
    static const ssmjit_dtype types[] = {SSMJIT_F32, SSMJIT_F16, SSMJIT_BF16};
    /* tensors of less than a piece, of one or two pieces' bytes exactly,
     * and of several with a part-filled last one */
    static const size_t sizes[] = {1, 1000, PIECE / 2, PIECE + 3};
    for (size_t a = 0; a < 3; a++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            ssmjit_dtype from = types[a], to = types[(a + s) % 3];
            size_t n = sizes[s], in = ssmjit_dtype_size(from), out = ssmjit_dtype_size(to);
            unsigned char *src = malloc(n * in), *dev = malloc(n * out + 1), *want = malloc(n * out);
            for (size_t i = 0; i < n; i++) {
                float v = (float)tu_normal();
                uint16_t h = from == SSMJIT_F16 ? sj_f32_to_f16(v) : sj_f32_to_bf16(v);
                memcpy(src + i * in, from == SSMJIT_F32 ? (const void *)&v : (const void *)&h, in);
            }
            memset(dev, 0xAB, n * out + 1);
            sj_convert(want, to, src, from, n);
            assert_int_equal(upload(to, from, n, src, dev, 0), SSMJIT_OK);
            assert_memory_equal(dev, want, n * out);
            assert_int_equal(dev[n * out], 0xAB);
            assert_true(rec.next == (CUdeviceptr)(uintptr_t)(dev + n * out));
            assert_true(rec.most <= PIECE);
            assert_int_equal(rec.copies, (int)((n * out + PIECE - 1) / PIECE));
            assert_int_equal(rec.depth, 0);
            free(src);
            free(dev);
            free(want);
        }
}

static void test_failed_copy(void **state)
{
    (void)state;
    size_t n = 3 * PIECE / 2 + 5; /* bf16: three pieces */
    unsigned char *src = calloc(n, 2), *dev = malloc(n * 2);
    for (int fail_at = 1; fail_at <= 3; fail_at++) {
        su_assert_error(upload(SSMJIT_BF16, SSMJIT_BF16, n, src, dev, fail_at), SSMJIT_ERR_DRIVER,
                        "cuMemcpyHtoD", NULL);
        assert_int_equal(rec.copies, fail_at); /* nothing after the failure */
        assert_int_equal(rec.depth, 0);
    }
    free(src);
    free(dev);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pieces),
        cmocka_unit_test(test_failed_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
