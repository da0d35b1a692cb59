/* sj_model_upload (src/model/model.c) against a recording stand-in
 * driver whose "device" is host memory: a tensor goes up converted, in
 * pieces of at most 4 MiB that cover it once in order, inside the
 * model's context; a failing copy stops it with the driver's error and
 * leaves the context as it was.  With pinned memory (a second stand-in,
 * whose stream does its copies only when waited for), the pieces go
 * through two pinned buffers on the model's stream, none converted into
 * before its last copy is done, and closing the staging waits for the
 * copies and frees what it took; where pinned memory cannot be had the
 * pieces go up as without it. */
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
    /* the pinned stand-in's */
    int pinned_held, events_held, alloc_fail, sync_fail;
    struct {
        CUdeviceptr dst;
        const void *src;
        size_t bytes;
    } queue[16];
    int queued, done; /* queue[done, queued) not yet copied */
    int mark[2];      /* the events: queue length when last recorded */
} rec;

static CUcontext const the_cu = (CUcontext)0x3000;
static CUstream const the_stream = (CUstream)0x4000;

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

/* A piece's copy as it is asked for: in context, in order, failing at
 * rec.fail_at. */
static CUresult piece(CUdeviceptr dst, size_t bytes)
{
    assert_int_equal(rec.depth, 1);
    assert_true(dst == rec.next);
    if (++rec.copies == rec.fail_at)
        return (CUresult)700;
    rec.next = dst + bytes;
    if (bytes > rec.most)
        rec.most = bytes;
    return CUDA_SUCCESS;
}

static CUresult memcpy_htod(CUdeviceptr dst, const void *src, size_t bytes)
{
    CUresult r = piece(dst, bytes);
    if (r == CUDA_SUCCESS)
        memcpy((void *)(uintptr_t)dst, src, bytes);
    return r;
}

static const sj_driver stand_in = {
    .CtxGetCurrent = ctx_get_current,
    .CtxPushCurrent = ctx_push,
    .CtxPopCurrent = ctx_pop,
    .MemcpyHtoD = memcpy_htod,
};

static CUresult mem_alloc_host(void **p, size_t bytes)
{
    assert_int_equal(rec.depth, 1);
    if (rec.alloc_fail && rec.pinned_held + 1 == rec.alloc_fail)
        return (CUresult)2; /* out of memory */
    *p = malloc(bytes);
    rec.pinned_held++;
    return CUDA_SUCCESS;
}

static CUresult mem_free_host(void *p)
{
    free(p);
    rec.pinned_held--;
    return CUDA_SUCCESS;
}

static int event_slots[2];

static CUresult event_create(CUevent *e, unsigned flags)
{
    (void)flags;
    assert_true(rec.events_held < 2);
    *e = (CUevent)&event_slots[rec.events_held++];
    return CUDA_SUCCESS;
}

static CUresult event_destroy(CUevent e)
{
    (void)e;
    rec.events_held--;
    return CUDA_SUCCESS;
}

static int event_index(CUevent e)
{
    return (int)((int *)e - event_slots);
}

/* The stream's copies up to queue entry `upto`, as the device would do
 * them: only now are the pinned buffers read. */
static void run_queue(int upto)
{
    for (; rec.done < upto; rec.done++)
        memcpy((void *)(uintptr_t)rec.queue[rec.done].dst, rec.queue[rec.done].src, rec.queue[rec.done].bytes);
}

static CUresult event_record(CUevent e, CUstream s)
{
    assert_ptr_equal(s, the_stream);
    rec.mark[event_index(e)] = rec.queued;
    return CUDA_SUCCESS;
}

static CUresult event_synchronize(CUevent e)
{
    run_queue(rec.mark[event_index(e)]);
    return CUDA_SUCCESS;
}

static CUresult stream_synchronize(CUstream s)
{
    assert_ptr_equal(s, the_stream);
    run_queue(rec.queued);
    return rec.sync_fail ? (CUresult)700 : CUDA_SUCCESS; /* a copy failed on the device */
}

static CUresult memcpy_htod_async(CUdeviceptr dst, const void *src, size_t bytes, CUstream s)
{
    assert_ptr_equal(s, the_stream);
    CUresult r = piece(dst, bytes);
    if (r != CUDA_SUCCESS)
        return r;
    assert_true(rec.queued < (int)(sizeof rec.queue / sizeof *rec.queue));
    rec.queue[rec.queued].dst = dst;
    rec.queue[rec.queued].src = src;
    rec.queue[rec.queued].bytes = bytes;
    rec.queued++;
    return CUDA_SUCCESS;
}

static const sj_driver stand_in_pinned = {
    .CtxGetCurrent = ctx_get_current,
    .CtxPushCurrent = ctx_push,
    .CtxPopCurrent = ctx_pop,
    .MemcpyHtoD = memcpy_htod,
    .MemAllocHost = mem_alloc_host,
    .MemFreeHost = mem_free_host,
    .EventCreate = event_create,
    .EventDestroy = event_destroy,
    .EventRecord = event_record,
    .EventSynchronize = event_synchronize,
    .StreamSynchronize = stream_synchronize,
    .MemcpyHtoDAsync = memcpy_htod_async,
};

/* A model on a context of driver drv, with nothing but its stream; its
 * context is the caller's to free. */
static ssmjit_model stand_in_model(const sj_driver *drv)
{
    ssmjit_context *ctx = sj_context_alloc();
    assert_non_null(ctx);
    ctx->drv = drv;
    ctx->cu = the_cu;
    return (ssmjit_model){.ctx = ctx, .drv = drv, .capture = the_stream};
}

/* Uploads numel elements of dtype `from` into a tensor of dtype `to`
 * whose device memory is dev through driver drv, failing at copy
 * fail_at (0: none), then closes the staging: the first error.  The
 * staging is left to drop, as a model's destroy does, after an error. */
static ssmjit_status upload(const sj_driver *drv, ssmjit_dtype to, ssmjit_dtype from, size_t numel, const void *src,
                            void *dev, int fail_at)
{
    ssmjit_model m = stand_in_model(drv);
    sj_model_tensor t = {.name = "backbone.embeddings.weight", .dtype = to, .numel = numel,
                         .data = (CUdeviceptr)(uintptr_t)dev};
    const int alloc_fail = rec.alloc_fail;
    memset(&rec, 0, sizeof rec);
    rec.fail_at = fail_at;
    rec.alloc_fail = alloc_fail;
    rec.next = t.data;
    ssmjit_status st = sj_model_upload(&m, &t, src, from);
    if (st == SSMJIT_OK) {
        st = sj_model_staging_close(&m);
    } else {
        int pushed;
        assert_int_equal(sj_context_enter(m.ctx, &pushed), SSMJIT_OK);
        sj_model_staging_drop(&m);
        sj_context_leave(m.ctx, pushed);
    }
    assert_int_equal(rec.pinned_held, 0);
    assert_int_equal(rec.events_held, 0);
    assert_int_equal(rec.done, rec.queued); /* nothing left in flight */
    free(m.ctx);
    return st;
}

/* Tensors of each size through driver drv, each pair of dtypes. */
static void pieces_through(const sj_driver *drv)
{
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
            assert_int_equal(upload(drv, to, from, n, src, dev, 0), SSMJIT_OK);
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

static void test_pieces(void **state)
{
    (void)state;
    pieces_through(&stand_in);
    pieces_through(&stand_in_pinned);
}

/* Where either pinned buffer cannot be had, the pageable path, the same
 * values, and nothing kept. */
static void test_pinned_unavailable(void **state)
{
    (void)state;
    size_t n = 5 * PIECE / 4; /* f32 to bf16: three pieces */
    float *src = malloc(n * 4);
    uint16_t *dev = malloc(n * 2), *want = malloc(n * 2);
    for (size_t i = 0; i < n; i++)
        src[i] = (float)tu_normal();
    sj_convert(want, SSMJIT_BF16, src, SSMJIT_F32, n);
    for (int fail = 1; fail <= 2; fail++) {
        memset(dev, 0, n * 2);
        rec.alloc_fail = fail;
        assert_int_equal(upload(&stand_in_pinned, SSMJIT_BF16, SSMJIT_F32, n, src, dev, 0), SSMJIT_OK);
        assert_int_equal(rec.queued, 0);
        assert_int_equal(rec.copies, 3);
        assert_memory_equal(dev, want, n * 2);
    }
    rec.alloc_fail = 0;
    free(src);
    free(dev);
    free(want);
}

/* Two tensors through one staging, the second's first piece in the
 * buffer that the first's last but one took: each buffer is converted into
 * only after its last copy. */
static void test_two_tensors(void **state)
{
    (void)state;
    const size_t n1 = 5 * PIECE / 4, n2 = PIECE / 2 + 7; /* bf16: 3 and 2 pieces */
    uint16_t *src = malloc((n1 + n2) * 2), *dev = malloc((n1 + n2) * 2);
    for (size_t i = 0; i < n1 + n2; i++)
        src[i] = sj_f32_to_bf16((float)tu_normal());
    memset(dev, 0, (n1 + n2) * 2);
    ssmjit_model m = stand_in_model(&stand_in_pinned);
    sj_model_tensor t1 = {.name = "a", .dtype = SSMJIT_BF16, .numel = n1, .data = (CUdeviceptr)(uintptr_t)dev},
                    t2 = {.name = "b", .dtype = SSMJIT_BF16, .numel = n2,
                          .data = (CUdeviceptr)(uintptr_t)(dev + n1)};
    memset(&rec, 0, sizeof rec);
    rec.next = t1.data;
    assert_int_equal(sj_model_upload(&m, &t1, src, SSMJIT_BF16), SSMJIT_OK);
    assert_int_equal(sj_model_upload(&m, &t2, src + n1, SSMJIT_BF16), SSMJIT_OK);
    assert_true(rec.done < rec.queued); /* the last copies wait for the close */
    assert_int_equal(sj_model_staging_close(&m), SSMJIT_OK);
    assert_int_equal(rec.queued, 5);
    assert_int_equal(rec.done, 5);
    assert_memory_equal(dev, src, (n1 + n2) * 2);
    assert_int_equal(rec.pinned_held, 0);
    assert_int_equal(rec.events_held, 0);
    free(m.ctx);
    free(src);
    free(dev);
}

static void test_failed_copy(void **state)
{
    (void)state;
    size_t n = 3 * PIECE / 2 + 5; /* bf16: three pieces */
    unsigned char *src = calloc(n, 2), *dev = malloc(n * 2);
    for (int fail_at = 1; fail_at <= 3; fail_at++) {
        su_assert_error(upload(&stand_in, SSMJIT_BF16, SSMJIT_BF16, n, src, dev, fail_at), SSMJIT_ERR_DRIVER,
                        "cuMemcpyHtoD", NULL);
        assert_int_equal(rec.copies, fail_at); /* nothing after the failure */
        assert_int_equal(rec.depth, 0);
        su_assert_error(upload(&stand_in_pinned, SSMJIT_BF16, SSMJIT_BF16, n, src, dev, fail_at),
                        SSMJIT_ERR_DRIVER, "cuMemcpyHtoDAsync", NULL);
        assert_int_equal(rec.copies, fail_at);
        assert_int_equal(rec.depth, 0);
    }
    free(src);
    free(dev);
}

/* A copy that fails on the device is reported when the staging closes,
 * which still frees what it took. */
static void test_failed_async_copy(void **state)
{
    (void)state;
    size_t n = 1000;
    unsigned char *src = calloc(n, 2), *dev = malloc(n * 2);
    ssmjit_model m = stand_in_model(&stand_in_pinned);
    sj_model_tensor t = {.name = "a", .dtype = SSMJIT_BF16, .numel = n, .data = (CUdeviceptr)(uintptr_t)dev};
    memset(&rec, 0, sizeof rec);
    rec.next = t.data;
    rec.sync_fail = 1;
    assert_int_equal(sj_model_upload(&m, &t, src, SSMJIT_BF16), SSMJIT_OK);
    su_assert_error(sj_model_staging_close(&m), SSMJIT_ERR_DRIVER, "cuStreamSynchronize", NULL);
    assert_int_equal(rec.pinned_held, 0);
    assert_int_equal(rec.events_held, 0);
    assert_int_equal(rec.depth, 0);
    rec.sync_fail = 0;
    free(m.ctx);
    free(src);
    free(dev);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pieces),
        cmocka_unit_test(test_pinned_unavailable),
        cmocka_unit_test(test_two_tensors),
        cmocka_unit_test(test_failed_copy),
        cmocka_unit_test(test_failed_async_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
