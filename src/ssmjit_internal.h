/* ssmjit_internal.h: what the project's own tools (tools/: the ssmjit
 * command's bench, run and info) use from below the public API.
 *
 * UNSTABLE and NOT INSTALLED.  This is no part of the library's interface:
 * names, signatures and meaning change with the library, without notice or
 * version bump, and none of these functions is exported from the shared
 * library (the tools link the static core).  Programs outside this
 * repository use ssmjit.h alone.
 *
 * The set is kept small and named: every function the tools call that
 * ssmjit.h does not declare is declared here, and nothing else.  Only
 * public types and plain C types cross it (device memory, streams, events
 * and kernels are void pointers), never the library's structures, so that
 * the library's internals can move without touching the tools.  Where a
 * declaration repeats one of an internal header, src/internal.c includes
 * both, so the compiler keeps them in step.
 *
 * Unless said otherwise, the calls on a context's device memory, streams
 * and events need that context current on the calling thread
 * (sj_context_enter); they do not make it current themselves, so that what
 * a benchmark times is the driver call alone. */
#ifndef SSMJIT_INTERNAL_H
#define SSMJIT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "ssmjit.h"

/* ---- the context ------------------------------------------------------- */

/* Makes ctx's CUDA context current on this thread if it is not; *pushed
 * says whether sj_context_leave must pop it. */
ssmjit_status sj_context_enter(ssmjit_context *ctx, int *pushed);
void sj_context_leave(ssmjit_context *ctx, int pushed);

/* cuCtxSynchronize: waits for all work in the current context. */
ssmjit_status sj_dev_synchronize(ssmjit_context *ctx);

/* ---- device memory (the driver's, in the current context) ------------------ */

/* cuMemAlloc of `bytes` (which must not be 0) into *out. */
ssmjit_status sj_dev_alloc(ssmjit_context *ctx, size_t bytes, void **out);

/* cuMemFree; NULL does nothing.  A failure is neither returned nor made
 * the last error, so that the error which led to a clean-up is the one
 * reported. */
void sj_dev_free(ssmjit_context *ctx, void *p);

/* cuMemsetD8 (synchronous), cuMemsetD8Async and cuMemsetD32Async (n
 * 32-bit words) on `stream` (NULL: the legacy default stream). */
ssmjit_status sj_dev_memset8(ssmjit_context *ctx, void *dst, unsigned char value, size_t n);
ssmjit_status sj_dev_memset8_async(ssmjit_context *ctx, void *dst, unsigned char value, size_t n, void *stream);
ssmjit_status sj_dev_memset32_async(ssmjit_context *ctx, void *dst, unsigned value, size_t n, void *stream);

/* Synchronous copies device to host (cuMemcpyDtoH) and host to device
 * (cuMemcpyHtoD); device to device on `stream` (cuMemcpyDtoDAsync). */
ssmjit_status sj_dev_to_host(ssmjit_context *ctx, void *host, const void *dev, size_t bytes);
ssmjit_status sj_dev_from_host(ssmjit_context *ctx, void *dev, const void *host, size_t bytes);
ssmjit_status sj_dev_copy_async(ssmjit_context *ctx, void *dst, const void *src, size_t bytes, void *stream);

/* ---- streams and timing ------------------------------------------------ */

/* A non-blocking stream (CU_STREAM_NON_BLOCKING; *stream NULL on failure),
 * cuStreamSynchronize, and the stream's destruction (NULL does nothing; a
 * failure, as sj_dev_free's, is not reported). */
ssmjit_status sj_stream_create(ssmjit_context *ctx, void **stream);
ssmjit_status sj_stream_synchronize(ssmjit_context *ctx, void *stream);
void sj_stream_destroy(ssmjit_context *ctx, void *stream);

/* Times `runs` calls of run(arg, i, stream), i = 0..runs-1, with a CUDA
 * event pair recorded on stream around each, after `warmup` untimed calls
 * run(arg, i, stream), i = 0..warmup-1: the events are created first, the
 * calls and records all queued, then each end event waited for and
 * ms[i] set to the call's milliseconds.  runs <= 64.  The first failure
 * (of a call or of the driver) stops it and is returned. */
typedef ssmjit_status (*sj_timed_fn)(void *arg, int i, void *stream);
ssmjit_status sj_time_with_events(ssmjit_context *ctx, void *stream, int warmup, int runs, sj_timed_fn run,
                                  void *arg, double *ms);

/* The same with each timed call one launch of a CUDA graph that holds
 * `calls` calls of run(arg, i, stream), i = 0..calls-1, captured on
 * stream first (kernels back to back with the launch gaps a graph has,
 * as in a decode step): ms[i] is that launch's milliseconds.  The run
 * must have run once outside a capture (modules loaded). */
ssmjit_status sj_time_graph(ssmjit_context *ctx, void *stream, int calls, int warmup, int runs, sj_timed_fn run,
                            void *arg, double *ms);

/* ---- kernels, below the ops -------------------------------------------- */

/* The kernel `name` of module `module` (an index as ssmjit_module_name
 * takes) in the fast-math variant a forward (backward = 0) or backward
 * kernel takes in ctx, compiled, read and loaded on first use; later calls
 * are a table lookup. *fn is a CUfunction.  Makes ctx current itself. */
ssmjit_status sj_kernel_lookup(ssmjit_context *ctx, size_t module, int backward, const char *name, void **fn);

/* Launches fn (a CUfunction) with grid[3] x block[3] threads, smem bytes of
 * dynamic shared memory, on stream, with kernel arguments args: _raw is
 * one cuLaunchKernel and nothing more (ctx current); _checked is the
 * library's own launcher, as the ops launch (makes ctx current if it is
 * not, raises the shared-memory limit where needed, names the kernel in
 * errors). */
ssmjit_status sj_launch_raw(ssmjit_context *ctx, void *fn, const unsigned grid[3], const unsigned block[3],
                            unsigned smem, void *stream, void **args);
ssmjit_status sj_launch_checked(ssmjit_context *ctx, void *fn, const unsigned grid[3], const unsigned block[3],
                                unsigned smem, void *stream, void **args);

/* The image (CUBIN or PTX) of unit `unit` (an index as ssmjit_unit_name
 * takes) in the fast-math variant ctx uses for it, from the process's
 * memory, the cache or NVRTC; it stays valid for the life of the process.
 * Needs no current context. */
ssmjit_status sj_unit_image(ssmjit_context *ctx, size_t unit, const void **image);

/* Loads an image and gets its kernel `name` straight from the driver,
 * outside the library's tables: with cuModuleLoadData and
 * cuModuleGetFunction, or (library = 1) cuLibraryLoadData,
 * cuLibraryGetKernel and cuKernelGetFunction.  What it loads is never
 * unloaded: for timing in a process that exits afterwards. */
ssmjit_status sj_image_load_raw(ssmjit_context *ctx, const void *image, const char *name, int library);

/* ---- ops and models: forced choices, profiling ------------------------- */

/* Forces the launch shape of the forward scan kernels: ns states a thread
 * (4, 8 or 16; 0 the automatic choice), bd channels a block (a power of
 * two from 16; 0 automatic), buffers stage buffers (1 or 2; 0 automatic).
 * ns and bd are ignored where they do not fit N.  Not thread-safe: for
 * tests and the benchmark. */
void sj_scan_force_shape(int ns, int bd, int buffers);

/* Forces the scan's split over L: 0 restores the automatic choice, 1 never
 * splits, S >= 2 splits into S segments where a split can be made.  Not
 * thread-safe: for tests and the benchmark. */
void sj_scan_force_split(int segments);

/* The split it last forced (0: none), to put back after forcing another. */
int sj_scan_forced_split(void);

/* The scan's segments a row for these extents (src/ops/ops_scan.h): 1
 * where it does not split. */
int64_t sj_scan_split_segments(ssmjit_context *ctx, ssmjit_dtype dtype, int64_t B, int64_t L, int64_t D, int64_t N,
                               int checkpoint, int backward);

/* Whether the forward runs the token-parallel kernel where it does not
 * split (src/ops/ops_scan.h). */
int sj_scan_fwd_is_token_parallel(const ssmjit_context *ctx, int64_t B, int64_t L, int64_t D, int64_t N,
                                  int packed);

/* The forward's kernel (src/ops/ops_scan.h): 0 the rule, 1 the
 * token-serial kernels, 2 the token-parallel one where it can run. */
void sj_scan_force_fwd_kernel(int kernel);

/* The kernels a model of this shape may launch on ctx's device, queued
 * (flags 0) or loaded (SSMJIT_PREPARE_WAIT), as ssmjit_model_load does
 * for these options. */
ssmjit_status sj_model_prepare(ssmjit_context *ctx, const ssmjit_model_config *cfg, const ssmjit_model_options *opts,
                               unsigned flags);

/* The path of a model's later decode steps (src/model/model.h): -1 the
 * rule, 0 the unfused kernels, 1 the fused kernels specialised to the
 * model, 2 the hybrid step (in_proj and out_proj, each weight read once
 * for every sequence, around the specialised state update)
 * (SSMJIT_ERR_UNSUPPORTED where they cannot run).
 * Drops a captured graph. */
ssmjit_status sj_model_decode_force(ssmjit_model *m, int path);

/* Whether a model's later hybrid steps take in_proj and out_proj on their
 * own tensor-core kernels where those can run (on, the default) or
 * through cuBLAS.  Drops a captured graph. */
void sj_model_decode_tensor_cores(ssmjit_model *m, int on);

/* The benchmark's breakdown of a fused or hybrid decode step: later
 * steps leave out the launches of the parts whose bits (1 << part) are
 * set (their results are then garbage), 0 launching everything.  Drops
 * a captured graph.  The parts: */
#define SJ_DECODE_PART_IN 0   /* a layer's first kernel (the fused step's norm, in_proj, conv step, x_proj's parts) */
#define SJ_DECODE_PART_MIX 1  /* a layer's x_proj sums, dt_proj and state update */
#define SJ_DECODE_PART_OUT 2  /* a layer's out_proj */
#define SJ_DECODE_PART_HEAD 3 /* the final norm, LM head and the fused step's argmax */
#define SJ_DECODE_PART_PICK 4 /* the next ids: the head's argmax, or the draw */
#define SJ_DECODE_PART_LAYER_NORM 5 /* a hybrid layer's norm (the fused step has no such kernel) */
#define SJ_DECODE_PARTS 6
void sj_model_decode_skip(ssmjit_model *m, unsigned parts);

/* Profiling of a model's calls: start records an event pair around each
 * GEMM and scan that follows; stop waits for them, sets ms[0] to the
 * milliseconds in GEMMs and ms[1] to those in scans, and turns profiling
 * off. */
ssmjit_status sj_model_profile_start(ssmjit_model *m);
ssmjit_status sj_model_profile_stop(ssmjit_model *m, double ms[2]);

/* ---- dtypes -------------------------------------------------------------- */

/* The kernel-name suffix of a dtype: "f32", "f16", "bf16". */
const char *sj_dtype_suffix(ssmjit_dtype dtype);

/* Converts n elements on the host from src (dtype `from`) to dst (dtype
 * `to`), both F32, F16 or BF16, through f32 (each element rounded once);
 * the buffers must not overlap. */
void sj_convert(void *dst, ssmjit_dtype to, const void *src, ssmjit_dtype from, size_t n);

/* ---- cuBLAS and GEMMs ---------------------------------------------------- */

/* Opens cuBLAS as the model's GEMMs do (SSMJIT_CUBLAS_PATH, else the
 * versions the library knows) and gives the file it was loaded from;
 * SSMJIT_ERR_CUBLAS_NOT_FOUND with every name tried when none loads. */
ssmjit_status sj_cublas_path(const char **path);

/* A cuBLAS handle with the skinny kernels' workspaces (src/ops/gemm.h). */
typedef struct sj_blas sj_blas;
ssmjit_status sj_blas_create(ssmjit_context *ctx, sj_blas **out);
void sj_blas_destroy(sj_blas *blas);

/* C [m, n] = A [m, k] W [n, k]^T, all contiguous in `dtype` (a Linear
 * layer's product, as the model runs it), on `path`: 0 by the rule, 1
 * through cuBLAS, 2 through the skinny kernels wherever they can run. */
ssmjit_status sj_linear_on_path(sj_blas *blas, int path, ssmjit_dtype dtype, int64_t m, int64_t n, int64_t k,
                                const void *a, const void *w, void *c, void *stream);

/* The Linear layers of a decode step in the order it runs them (in_proj,
 * x_proj, dt_proj, out_proj, the LM head): the i-th's name and its
 * weight's shape W [n, k] for a model of config c, as the model expects
 * it (src/model/model.h).  0 where there is no i-th. */
int sj_model_linear_shape(const ssmjit_model_config *c, int i, const char **name, int64_t *n, int64_t *k);

/* The skinny kernels' splits of k where that call would take them, 0
 * where it would go to cuBLAS (or is refused); runs nothing. */
int sj_linear_skinny_splits(sj_blas *blas, int path, ssmjit_dtype dtype, int64_t m, int64_t n, int64_t k,
                            const void *a, const void *w, void *c);

/* ---- the cache, made up (ssmjit bench --cache) --------------------------- */

/* The bytes an entry with a payload of `payload` bytes takes on disk. */
uint64_t sj_cache_entry_bytes(size_t payload);

/* Writes a made-up entry into the cache under dir, named as the library
 * names one of kernel `label` ([A-Za-z0-9_]+) compiled for `target`
 * ("sm_90") by NVRTC 13.0, keyed by the SHA-256 of seed[0..seed_len).
 * Its path goes into path[cap].  With store = 0 the entry is only
 * written, atomically; with store = 1 it is stored as the library stores
 * one, housekeeping included: stale temp files removed and, while the
 * entries add up to more than max_bytes (0: no cap), the least recently
 * used others evicted. */
ssmjit_status sj_cache_fabricate(const char *dir, const void *seed, size_t seed_len, const char *label,
                                 const char *target, const void *payload, size_t size, int store,
                                 uint64_t max_bytes, char *path, size_t cap);

#endif
