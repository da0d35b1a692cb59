/* What op implementations use from the engine: look up a kernel of an
 * embedded module (compiling and caching the module on first use) and
 * launch it on the caller's stream. */
#ifndef SSMJIT_KERNEL_H
#define SSMJIT_KERNEL_H

#include <stdint.h>

#include "cuda/cuda_api.h"
#include "kernels_embedded.h"
#include "ssmjit.h"

/* Which fast-math default a kernel takes when neither the context option nor
 * SSMJIT_FAST_MATH decides: forward and decode kernels are fast, backward
 * kernels are exact because flushed denormals and approximate exp break
 * gradients through long scans. */
typedef enum sj_kernel_role {
    SJ_ROLE_FORWARD = 0,
    SJ_ROLE_BACKWARD = 1
} sj_kernel_role;

typedef struct sj_dim3 {
    unsigned x, y, z;
} sj_dim3;

/* Grid arithmetic of the ops' launch shapes (b > 0). */
static inline int64_t sj_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t sj_min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t sj_max64(int64_t a, int64_t b) { return a > b ? a : b; }

typedef struct sj_device_props {
    int cc_major, cc_minor;
    int sm_count;
    int max_threads_per_sm;
    int max_smem_per_block_optin; /* bytes a block can get after opting in */
    int max_smem_per_sm;          /* bytes all resident blocks of an SM share */
    int l2_bytes;
} sj_device_props;

/* The extern "C" kernel `name` of module `mod`, in the fast-math variant
 * that `role` resolves to for this context.  The first call for a kernel
 * compiles or reads its unit (that kernel alone) and loads it; later calls
 * are a lock-free table lookup. */
ssmjit_status sj_kernel_get(ssmjit_context *ctx, sj_module_id mod, sj_kernel_role role,
                            const char *name, CUfunction *fn);

/* Queues the units of the named kernels on the compile pool (those not
 * loaded yet), so that a call that launches several waits for the slowest
 * compile, not for their sum.  Returns at once. */
ssmjit_status sj_kernels_request(ssmjit_context *ctx, sj_module_id mod, sj_kernel_role role,
                                 const char *const *names, size_t n);

/* Unit u (an index of sj_units) in variant `fast`: queued on the pool
 * unless loaded (request), or loaded into the context now, waiting only
 * for that unit (load). */
ssmjit_status sj_unit_request(ssmjit_context *ctx, size_t u, int fast);
ssmjit_status sj_unit_load(ssmjit_context *ctx, size_t u, int fast, CUfunction *fn);

/* The variant unit u takes in this context (its module's role, or what the
 * context forces), and whether it is loaded in that variant. */
int sj_unit_fast(const ssmjit_context *ctx, size_t u);
int sj_unit_loaded(const ssmjit_context *ctx, size_t u, int fast);

/* cuLaunchKernel with the context made current if it is not, every error
 * checked and reported with the kernel's name.  smem above 48 KiB is allowed
 * (the function's dynamic shared-memory limit is raised first); above what
 * the device allows a block, SSMJIT_ERR_UNSUPPORTED. */
ssmjit_status sj_launch(ssmjit_context *ctx, CUfunction fn, sj_dim3 grid, sj_dim3 block,
                        unsigned smem_bytes, void *stream, void **args);

/* A unit of a specialised module (kernels_src/: compiled with a caller's
 * sizes as defines, never by prewarm), loaded into a module its caller
 * owns. */
typedef struct sj_special_kernel {
    CUmodule module;
    CUfunction fn;
} sj_special_kernel;

/* Queues kernels `names` of specialised module mod, compiled (or read
 * from the cache) with `defines` added to the context's, on the pool
 * (ahead of need: a later load of the same waits only for what is left). */
ssmjit_status sj_special_request(ssmjit_context *ctx, sj_module_id mod, sj_kernel_role role,
                                 const char *const *names, size_t n, const char *const *defines,
                                 size_t num_defines);

/* Those kernels, compiled side by side on the pool, loaded into
 * out[0 .. n-1]; on failure none is left loaded.  The caller unloads
 * them with sj_special_unload. */
ssmjit_status sj_special_load(ssmjit_context *ctx, sj_module_id mod, sj_kernel_role role, const char *const *names,
                              size_t n, const char *const *defines, size_t num_defines, sj_special_kernel *out);
void sj_special_unload(ssmjit_context *ctx, sj_special_kernel *k, size_t n);

/* sj_launch for a kernel that may start while the one before it on the
 * stream still runs (programmatic dependent launch, sm_90 on): it must
 * wait for that one (griddepcontrol.wait) before it touches anything the
 * earlier kernels write.  Elsewhere a plain launch. */
ssmjit_status sj_launch_chained(ssmjit_context *ctx, CUfunction fn, sj_dim3 grid, sj_dim3 block,
                                unsigned smem_bytes, void *stream, void **args);

/* Whether cuLaunchKernelEx's sm_90 attributes work (chained launches,
 * clusters): sm_90 on, with a driver that has it (CUDA 12.0 on). */
int sj_launch_sm90(const ssmjit_context *ctx);

/* sj_launch in clusters of cluster_x blocks along x (grid.x a multiple of
 * it, at most 8): the blocks of a cluster run at once and may read each
 * other's shared memory.  Only where sj_launch_sm90(ctx);
 * elsewhere SSMJIT_ERR_UNSUPPORTED. */
ssmjit_status sj_launch_cluster(ssmjit_context *ctx, CUfunction fn, sj_dim3 grid, sj_dim3 block, unsigned cluster_x,
                                void *stream, void **args);

/* What enqueue(arg, stream) puts on stream, recorded (stream is in
 * capture meanwhile: nothing runs) and instantiated into *exec, which the
 * caller destroys; *exec is NULL on failure.  Makes ctx current itself. */
typedef ssmjit_status (*sj_enqueue_fn)(void *arg, void *stream);
ssmjit_status sj_graph_capture(ssmjit_context *ctx, void *stream, sj_enqueue_fn enqueue, void *arg,
                               CUgraphExec *exec);

/* Properties of the context's device, read once at context creation. */
const sj_device_props *sj_context_props(const ssmjit_context *ctx);

/* Nonzero when backward ops must be bit-reproducible (option or
 * SSMJIT_DETERMINISTIC=1). */
int sj_context_deterministic(const ssmjit_context *ctx);

/* The one slot a context keeps for the ops layer's own state (today the
 * scan split's memo), so that the engine need not know what it holds:
 * made by make() on the first call (NULL if that fails, asked again
 * next time), the same pointer after, freed by release() with the
 * context. */
void *sj_context_ops_state(ssmjit_context *ctx, void *(*make)(void), void (*release)(void *));

#endif
