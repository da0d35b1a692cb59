/*
 * ssmjit: Mamba state-space-model kernels for NVIDIA GPUs, compiled at run
 * time through NVRTC, cached as CUBIN on disk, launched through the CUDA
 * driver API.  Neither the driver nor NVRTC is linked: both are opened with
 * dlopen the first time they are needed.
 *
 * Conventions for every function in this header:
 *  - Functions return an ssmjit_status.  SSMJIT_OK is 0.  On failure,
 *    ssmjit_last_error() gives a message for the calling thread, and
 *    outputs are left as they were (except where a function says so).
 *  - Extents whose products (elements of a tensor, bytes of a workspace)
 *    would pass 2^62 give SSMJIT_ERR_UNSUPPORTED ("... is too large"):
 *    no size is ever computed with a product that wraps.
 *  - Handles are opaque.  A context may be used from several threads at once.
 *  - Device memory is passed as the CUdeviceptr value cast to a pointer, and
 *    streams as the CUstream value cast to void * (NULL = the legacy default
 *    stream of the context).
 *  - The library never prints, except one warning on stderr when the cache
 *    directory cannot be written or is not trusted (suppressible, see
 *    ssmjit_context_options).
 *  - Every op has one shape: ssmjit_<op>(ctx, desc, args, stream).  The
 *    descriptor holds sizes and options (no pointers); the args struct
 *    holds every tensor by name (device pointers or ssmjit_matrix views,
 *    NULL for an absent optional one) and, where the op needs one, its
 *    workspace.  The model calls take (model, args, stream): the model
 *    is their descriptor.
 *  - Every struct a caller fills begins with `size_t struct_size`, which
 *    must be sizeof that struct in this header: option structs get it
 *    (with their defaults) from their _init function, every other one
 *    from SSMJIT_STRUCT_INIT(type), or from the binding that sets it by
 *    hand.  A wrong size is SSMJIT_ERR_INVALID_ARG naming the struct, so
 *    a header and library of different versions are caught, not misread.
 *    (Later versions will keep accepting the sizes of earlier ones and
 *    read the fields such a struct lacks as their defaults.)
 *  - A size query is named after what it sizes (..._workspace_size: the
 *    op's scratch; ssmjit_selective_scan_checkpoint_size: the checkpoint)
 *    and always takes the context, since sizes may depend on the device
 *    (the model's take the model, which holds its context).
 */
#ifndef SSMJIT_H
#define SSMJIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(SSMJIT_BUILDING_LIBRARY)
#define SSMJIT_API __attribute__((visibility("default")))
#else
#define SSMJIT_API
#endif

#define SSMJIT_VERSION_MAJOR 0
#define SSMJIT_VERSION_MINOR 1
#define SSMJIT_VERSION_PATCH 0

/* A struct a caller fills, zeroed but for its struct_size (C99 and
 * later; `type` must be a struct whose first member is struct_size).  The
 * designated initializer keeps -Wextra's missing-field-initializers quiet. */
#define SSMJIT_STRUCT_INIT(type) ((type){.struct_size = sizeof(type)})

/* ------------------------------------------------------------------------ */
/* Status and errors                                                        */
/* ------------------------------------------------------------------------ */

typedef enum ssmjit_status {
    SSMJIT_OK = 0,
    SSMJIT_ERR_INVALID_ARG = 1,     /* a NULL, out-of-range or malformed argument */
    SSMJIT_ERR_UNSUPPORTED = 2,     /* valid request this build, driver or device cannot do */
    SSMJIT_ERR_NO_MEMORY = 3,       /* host allocation failed */
    SSMJIT_ERR_NVRTC_NOT_FOUND = 4, /* no usable NVRTC library (message lists what was tried) */
    SSMJIT_ERR_DRIVER_NOT_FOUND = 5,/* libcuda.so.1 could not be opened or initialised */
    SSMJIT_ERR_NO_DEVICE = 6,       /* no CUDA device, or the ordinal does not exist */
    SSMJIT_ERR_COMPILE = 7,         /* NVRTC rejected a kernel (message holds the full log) */
    SSMJIT_ERR_DRIVER = 8,          /* a driver or cuBLAS call failed (message names the call and error) */
    SSMJIT_ERR_IO = 9,              /* a file operation failed where it cannot be degraded */
    SSMJIT_ERR_INTERNAL = 10,       /* a bug in ssmjit */
    SSMJIT_ERR_CUBLAS_NOT_FOUND = 11 /* no usable cuBLAS library (message lists what was tried) */
} ssmjit_status;

/* Name of a status, e.g. "SSMJIT_ERR_INVALID_ARG"; "SSMJIT_UNKNOWN_STATUS" for
 * values outside the enum.  Never NULL; the string is static. */
SSMJIT_API const char *ssmjit_status_string(ssmjit_status status);

/* Detail of the last failure on the calling thread: the message set by the
 * most recent call that did not return SSMJIT_OK ("" if none).  Includes the
 * full NVRTC log after SSMJIT_ERR_COMPILE and the driver's error name after
 * SSMJIT_ERR_DRIVER.  Valid until the next ssmjit call on the same thread. */
SSMJIT_API const char *ssmjit_last_error(void);

/* Library version as "MAJOR.MINOR.PATCH". */
SSMJIT_API const char *ssmjit_version_string(void);

/* ------------------------------------------------------------------------ */
/* Context                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct ssmjit_context ssmjit_context;

typedef enum ssmjit_cache_mode {
    SSMJIT_CACHE_DEFAULT = 0, /* SSMJIT_CACHE env var, else read-write */
    SSMJIT_CACHE_RW = 1,      /* read entries, write new ones */
    SSMJIT_CACHE_RO = 2,      /* read entries, never write */
    SSMJIT_CACHE_OFF = 3      /* compile in memory every process */
} ssmjit_cache_mode;

typedef enum ssmjit_fast_math {
    SSMJIT_FAST_MATH_DEFAULT = 0, /* per kernel: on for forward/decode, off for backward */
    SSMJIT_FAST_MATH_ON = 1,      /* every kernel with --use_fast_math */
    SSMJIT_FAST_MATH_OFF = 2      /* no kernel with --use_fast_math */
} ssmjit_fast_math;

/* What the compile callback is told: once when a compile unit (one kernel)
 * starts compiling with NVRTC, once when it is done.  Cache hits are not
 * reported: they take microseconds. */
typedef struct ssmjit_compile_event {
    const char *unit;      /* the kernel, e.g. "scan_fwd_ns16_bf16" */
    const char *module;    /* its family (kernels_src file), e.g. "scan_fwd" */
    const char *target;    /* e.g. "sm_90" or "compute_120" */
    int fast_math;         /* the variant compiled */
    int done;              /* 0: starting; 1: finished */
    double seconds;        /* when done: the compile's wall time */
    ssmjit_status status;  /* when done: SSMJIT_OK or why it failed */
} ssmjit_compile_event;

/* Called from the thread that compiles: the compile pool's or one of
 * yours, several at once, so it must be thread-safe and quick.  Never
 * called after ssmjit_context_destroy of its context has returned. */
typedef void (*ssmjit_compile_callback)(const ssmjit_compile_event *event, void *user);

/* Options for ssmjit_context_create.  Always fill with
 * ssmjit_context_options_init() first, then change fields: new fields added
 * in later versions then keep their defaults. */
typedef struct ssmjit_context_options {
    size_t struct_size;          /* set by _init; lets the library tell versions apart */
    int device;                  /* device ordinal, default 0 (ignored if cu_context is set) */
    void *cu_context;            /* a CUcontext of the application, or NULL for the
                                    device's primary context; not destroyed by ssmjit */
    ssmjit_fast_math fast_math;  /* SSMJIT_FAST_MATH=0|1 in the environment overrides it */
    int lineinfo;                /* nonzero: compile with -lineinfo (for profilers) */
    const char *const *defines;  /* extra "NAME" or "NAME=VALUE" macros for every kernel */
    size_t num_defines;
    const char *cache_dir;       /* NULL: SSMJIT_CACHE_DIR, $XDG_CACHE_HOME/ssmjit, ~/.cache/ssmjit */
    ssmjit_cache_mode cache_mode;
    int quiet;                   /* nonzero (or SSMJIT_QUIET=1): no warning when the cache
                                    cannot be written or is not trusted */
    int deterministic;           /* nonzero (or SSMJIT_DETERMINISTIC=1): backward ops must
                                    reproduce bit for bit.  A promise to hold the library
                                    to, not a switch: every op of this version reproduces
                                    (no float atomics) whatever it is, so today it changes
                                    no result and costs nothing; an op that could not
                                    keep it would refuse to run under it.  get_info
                                    reports it */
    ssmjit_compile_callback on_compile; /* optional: progress of NVRTC compiles */
    void *on_compile_user;       /* passed to on_compile */
} ssmjit_context_options;

/* Fills *opts with defaults.  opts must not be NULL. */
SSMJIT_API void ssmjit_context_options_init(ssmjit_context_options *opts);

/* Creates a context on a device.  opts may be NULL for all defaults.  Opens
 * the driver (not NVRTC: kernels are compiled when first used).  The target
 * architecture is the device's, capped to the newest one NVRTC supports;
 * SSMJIT_ARCH=sm_XY overrides the device's for testing.
 * Errors: SSMJIT_ERR_INVALID_ARG (out NULL, bad options, bad SSMJIT_ARCH or
 * SSMJIT_CACHE_MAX_BYTES, see the on-disk cache below),
 * SSMJIT_ERR_DRIVER_NOT_FOUND, SSMJIT_ERR_NO_DEVICE, SSMJIT_ERR_DRIVER.
 * On failure *out is set to NULL (out non-NULL), so destroying it is safe. */
SSMJIT_API ssmjit_status ssmjit_context_create(const ssmjit_context_options *opts,
                                               ssmjit_context **out);

/* Drops the context's compiles still queued on the pool, waits for its
 * compiles that are running (a kernel a pool thread at most), unloads its
 * kernels and releases the primary context if the library retained it.
 * Must not run while another thread uses ctx.  NULL is a no-op.  (At exit
 * the library likewise waits for compiles that are running, so that none is
 * inside NVRTC while NVRTC is torn down.) */
SSMJIT_API void ssmjit_context_destroy(ssmjit_context *ctx);

typedef struct ssmjit_context_info {
    int device;              /* ordinal */
    int cc_major, cc_minor;  /* device compute capability */
    char target[16];         /* what kernels are compiled for, e.g. "sm_90" or "compute_120" */
    int target_is_ptx;       /* 1: PTX that the driver JIT-compiles (GPU newer than NVRTC) */
    int sm_count;
    ssmjit_cache_mode cache_mode; /* effective mode after env and fallbacks */
    char cache_dir[4096];    /* effective cache directory ("" when off) */
    int deterministic;       /* effective setting */
} ssmjit_context_info;

/* Describes a context.  Resolves the target architecture, which needs NVRTC's
 * list of supported architectures (read from the cache's probe record when
 * there is one, else by opening NVRTC). */
SSMJIT_API ssmjit_status ssmjit_context_get_info(ssmjit_context *ctx, ssmjit_context_info *out);

/* Loads (compiling or reading from the cache as needed) every compile unit
 * in the variant the ops use (with SSMJIT_FAST_MATH_DEFAULT: fast math for
 * forward kernels, exact for the backward ones), so that later calls pay no
 * compile or load time; the specialised units (ssmjit_unit_specialised)
 * are left to the models that use them.  Compiles run on the compile pool.  Optional:
 * kernels otherwise load on first use (ssmjit_context_prepare loads only
 * what named ops need). */
SSMJIT_API ssmjit_status ssmjit_context_load_all(ssmjit_context *ctx);

/* Ops, as bits of the `ops` mask of ssmjit_context_prepare. */
typedef enum ssmjit_op {
    SSMJIT_OP_ACTIVATION_FWD = 1u << 0,
    SSMJIT_OP_ACTIVATION_BWD = 1u << 1,
    SSMJIT_OP_GATE_FWD = 1u << 2,
    SSMJIT_OP_GATE_BWD = 1u << 3,
    SSMJIT_OP_RMSNORM_FWD = 1u << 4,
    SSMJIT_OP_RMSNORM_BWD = 1u << 5,
    SSMJIT_OP_CONV1D_FWD = 1u << 6,
    SSMJIT_OP_CONV1D_BWD = 1u << 7,
    SSMJIT_OP_CONV1D_UPDATE = 1u << 8,
    SSMJIT_OP_SCAN_FWD = 1u << 9,
    SSMJIT_OP_SCAN_BWD = 1u << 10,
    SSMJIT_OP_STATE_UPDATE = 1u << 11,
    SSMJIT_OP_ALL = (1u << 12) - 1
} ssmjit_op;

/* Bit of dtype d in the `dtypes` mask of ssmjit_context_prepare. */
#define SSMJIT_DTYPE_BIT(d) (1u << (d))
#define SSMJIT_DTYPES_ALL 7u

/* ssmjit_context_prepare flags. */
#define SSMJIT_PREPARE_WAIT 1u /* return once every unit is compiled and loaded */

/* Says what will be needed: queues every compile unit that the ops in `ops`
 * (ssmjit_op bits) may launch for the dtypes in `dtypes` (SSMJIT_DTYPE_BIT
 * bits), in the context's fast-math variant, on the compile pool, and
 * returns at once.  A later call then waits only for the units it launches
 * (taking one over from the queue when no worker has started it); no unit
 * is compiled twice in a process.  With SSMJIT_PREPARE_WAIT it returns
 * when all of them are compiled (or read from the cache) and loaded into
 * the context, with the first error (naming the unit) if any.  Without it,
 * a unit that fails reports its error to the call that needs it.
 * The pool has SSMJIT_COMPILE_THREADS threads, else one per core
 * (ssmjit_set_compile_threads changes it).  Errors:
 * SSMJIT_ERR_INVALID_ARG (ctx NULL, unknown bits), the target's
 * (see ssmjit_context_get_info); with the flag, a unit's. */
SSMJIT_API ssmjit_status ssmjit_context_prepare(ssmjit_context *ctx, unsigned ops, unsigned dtypes,
                                                unsigned flags);

/* Sets the compile pool's threads for this process (n <= 0: the default,
 * SSMJIT_COMPILE_THREADS or one per core).  Threads past the number stay
 * idle. */
SSMJIT_API void ssmjit_set_compile_threads(int n);

/* The compile pool's threads in this process (as set, or the default). */
SSMJIT_API int ssmjit_compile_threads(void);

/* ------------------------------------------------------------------------ */
/* Environment queries (no context needed)                                  */
/* ------------------------------------------------------------------------ */

/* Version of the CUDA driver, e.g. 13000 for 13.0.  Opens the driver. */
SSMJIT_API ssmjit_status ssmjit_driver_version(int *version);

/* Number of CUDA devices (0 is not an error).  Opens the driver. */
SSMJIT_API ssmjit_status ssmjit_device_count(int *count);

typedef struct ssmjit_device_info {
    char name[256];
    int cc_major, cc_minor;
    int sm_count;
    size_t total_memory;
} ssmjit_device_info;

/* Describes device `ordinal`.  Opens the driver.  Errors:
 * SSMJIT_ERR_INVALID_ARG (out NULL, ordinal negative), SSMJIT_ERR_NO_DEVICE
 * (no device of that ordinal), the driver's. */
SSMJIT_API ssmjit_status ssmjit_device_get_info(int ordinal, ssmjit_device_info *out);

/* Version of the NVRTC library that would be used, and the path it was
 * loaded from (path may be NULL; *path stays valid for the process).
 * Opens NVRTC: SSMJIT_NVRTC_PATH, then libnvrtc.so.13, .12, .11.2, ...,
 * then libnvrtc.so. */
SSMJIT_API ssmjit_status ssmjit_nvrtc_version(int *major, int *minor, const char **path);

/* Architectures NVRTC can compile for, as 75, 80, ...  Writes at most `cap`
 * entries to archs and the total number to *count. */
SSMJIT_API ssmjit_status ssmjit_nvrtc_supported_archs(int *archs, size_t cap, size_t *count);

/* ------------------------------------------------------------------------ */
/* Embedded modules, prewarming and the on-disk cache                       */
/* ------------------------------------------------------------------------ */

/* The on-disk cache.
 *  - Trust: entries are loaded only from a directory owned by the effective
 *    user (or root: a prewarmed cache shipped with a program) that neither
 *    group nor others can write (a missing one is created 0700).  Any other
 *    directory is not used at all: the library warns once (see
 *    ssmjit_context_options.quiet) and keeps compiled kernels in memory;
 *    ssmjit_prewarm fails with SSMJIT_ERR_IO.
 *  - Layers: after the user's cache (read-write, or read-only), entries are
 *    looked up in read-only layers: each directory of SSMJIT_CACHE_PATH
 *    (colon-separated) in order, then the one installed with the library
 *    (<libdir>/ssmjit/cubin, filled at install time by the build option
 *    prewarm_archs).  A layer must pass the same trust check and must not
 *    be a symlink; one that fails it, or is missing, is ignored with one
 *    warning.  A hit in a layer is checked like any entry and used as it
 *    is; the library never writes, touches or repairs a layer: a miss or a
 *    bad entry there is compiled into the user's cache.  A symlink in place of
 *    an entry or of a temp file is never followed.
 *  - Writes: temp file in the entry's directory, fsync, rename; a process
 *    killed at any moment leaves no entry that loads, only a temp file
 *    (".tmp-<pid>-...") that later writers delete once it is an hour old.
 *    A write that fails (disk full, EACCES, EROFS) leaves the kernel in
 *    memory, usable, with the one warning.
 *  - SSMJIT_CACHE_MAX_BYTES: size cap of the entries, as digits with an
 *    optional K, M, G or T suffix (KiB .. TiB); default 1G; 0 means no cap.
 *    Any other value is refused with SSMJIT_ERR_INVALID_ARG by
 *    ssmjit_context_create, ssmjit_prewarm and ssmjit_cache_verify.
 *    After each write, while the entries add up to more than the cap, the
 *    least recently used ones are deleted (each load marks its entry used by
 *    setting its mtime; read-only mode does not).  No lock is taken, so
 *    processes writing at the same moment may each delete an entry more
 *    than needed.  An entry larger than the cap on its own is not written. */

/* Number of embedded kernel modules (one per .cu file of kernels_src). */
SSMJIT_API size_t ssmjit_module_count(void);

/* Name of module i ("elementwise", "scan_fwd", ...), NULL if i is out of range. */
SSMJIT_API const char *ssmjit_module_name(size_t i);

/* Number of compile units: each kernel of each module is compiled, cached
 * and loaded on its own, so a call waits only for what it launches. */
SSMJIT_API size_t ssmjit_unit_count(void);

/* Name of unit i (its kernel, e.g. "scan_fwd_ns16_bf16"), NULL if i is out
 * of range. */
SSMJIT_API const char *ssmjit_unit_name(size_t i);

/* Index of the module unit i belongs to, or (size_t)-1 if i is out of range. */
SSMJIT_API size_t ssmjit_unit_module(size_t i);

/* 1 if unit i is built with fast math when the context leaves it to the
 * kernels (forward and decode kernels), 0 if not (backward kernels: their
 * modules' names end in "_bwd"), -1 if i is out of range. */
SSMJIT_API int ssmjit_unit_default_fast_math(size_t i);

/* 1 if unit i is specialised: compiled with a model's sizes as constants
 * (the fused decode kernels), by the model that uses it, so never by
 * prewarm or ssmjit_context_load_all; 0 if not, -1 if i is out of range. */
SSMJIT_API int ssmjit_unit_specialised(size_t i);

typedef struct ssmjit_prewarm_options {
    size_t struct_size;          /* set by _init */
    const char *arch;            /* "sm_80", "sm_90", ... (required) */
    int fast_math;               /* -1 (default): each unit's default variant; 0 or 1: that one */
    int lineinfo;
    const char *const *defines;
    size_t num_defines;
    const char *cache_dir;       /* NULL: the default directory (see context options) */
    ssmjit_compile_callback on_compile; /* optional: each NVRTC compile (ssmjit_prewarm) */
    void *on_compile_user;
} ssmjit_prewarm_options;

/* Fills *opts with defaults (arch NULL, fast_math -1). */
SSMJIT_API void ssmjit_prewarm_options_init(ssmjit_prewarm_options *opts);

typedef struct ssmjit_prewarm_result {
    size_t compiled;     /* units compiled and written */
    size_t cached;       /* units already in the directory */
    size_t failed;
} ssmjit_prewarm_result;

/* Compiles unit `unit` (not a specialised one) for opts->arch into the cache directory, unless a
 * valid entry is already there (*was_cached = 1): the entry a context on a
 * device of that architecture, with the same options, looks up.  Needs
 * NVRTC, not a GPU.  Writes only to that directory (never to the layers of
 * SSMJIT_CACHE_PATH), and refuses to write at all under SSMJIT_CACHE=ro or
 * off.  *was_cached is written only on success.
 * Errors: SSMJIT_ERR_INVALID_ARG (NULL argument, bad arch string, unit
 * index or a specialised unit, cache directory, defines or SSMJIT_CACHE_MAX_BYTES; SSMJIT_CACHE
 * is ro or off), SSMJIT_ERR_UNSUPPORTED (arch unknown to this NVRTC),
 * SSMJIT_ERR_NVRTC_NOT_FOUND, SSMJIT_ERR_COMPILE, SSMJIT_ERR_IO (the
 * directory is not trusted, or the entry could not be written). */
SSMJIT_API ssmjit_status ssmjit_prewarm_unit(const ssmjit_prewarm_options *opts, size_t unit,
                                             int *was_cached);

/* Every unit but the specialised ones, as ssmjit_prewarm_unit, on the compile pool (its threads:
 * ssmjit_set_compile_threads); returns when all are done.  *result (may be
 * NULL) counts them.  The status is the first failure's (its message names
 * the unit), or one of ssmjit_prewarm_unit's argument errors before any
 * work. */
SSMJIT_API ssmjit_status ssmjit_prewarm(const ssmjit_prewarm_options *opts, ssmjit_prewarm_result *result);

/* The read-only cache layers a context with default options searches
 * after its cache: the directories of SSMJIT_CACHE_PATH that pass the
 * checks, then the one installed with the library if it exists, as one
 * colon-separated list ("" for none; a left-out layer is warned of as a
 * context would).  SSMJIT_ERR_INVALID_ARG (buf untouched) if buf is NULL
 * or cap too small, or SSMJIT_CACHE, SSMJIT_CACHE_DIR or
 * SSMJIT_CACHE_MAX_BYTES is not valid. */
SSMJIT_API ssmjit_status ssmjit_cache_layers(char *buf, size_t cap);

/* The cache directory in effect for `dir` (NULL: from the environment).
 * Writes a NUL-terminated path; SSMJIT_ERR_INVALID_ARG (buf untouched) if
 * cap is too small or no directory can be derived (no HOME). */
SSMJIT_API ssmjit_status ssmjit_cache_resolve_dir(const char *dir, char *buf, size_t cap);

typedef struct ssmjit_cache_stats {
    size_t entries;      /* valid entries */
    uint64_t bytes;      /* bytes in valid entries */
    size_t bad_entries;  /* files that fail the header, checksum or name check */
    size_t removed;      /* bad entries removed (when asked to) */
    size_t temp_files;   /* temp files of writes in progress or of writers that died */
    uint64_t max_bytes;  /* the size cap in effect (SSMJIT_CACHE_MAX_BYTES), 0: none */
} ssmjit_cache_stats;

/* Walks the cache under dir (NULL: default) and checks every entry's header,
 * key and payload checksum.  remove_bad nonzero deletes the bad ones.
 * A directory that does not exist gives zero counts and SSMJIT_OK.
 * SSMJIT_ERR_INVALID_ARG when SSMJIT_CACHE_MAX_BYTES is not valid.  *out
 * is written only on success. */
SSMJIT_API ssmjit_status ssmjit_cache_verify(const char *dir, int remove_bad,
                                             ssmjit_cache_stats *out);

typedef struct ssmjit_cache_target_stats {
    char target[32];     /* as entry names spell it: "sm_90-nvrtc13.0", "compute_90-nvrtc13.0" */
    size_t entries;
    size_t units;        /* distinct labels (kernels) among those entries */
    uint64_t bytes;      /* file bytes of those entries */
} ssmjit_cache_target_stats;

/* Counts the cache under dir (NULL: default) from its file names and sizes
 * alone, without opening an entry (ssmjit_cache_verify reads them), so it
 * costs one directory walk.  An entry is a regular file with a name ssmjit
 * gives entries (<64 hex>-<label>-<sm_NN|compute_NN>-nvrtc<M.m>.<cubin|ptx>)
 * in the directories of its key's first digits, at least a header long.
 * *totals (may be NULL) gets what ssmjit_cache_verify would count, except
 * that bad_entries counts only files named like entries that fail this
 * test (a damaged payload is not seen) and removed is 0.  out[0 .. cap)
 * (out may be NULL when cap is 0) gets one record per target, in the order
 * of their names; *count (may be NULL) the number of targets, which may be
 * more than cap.  A directory that does not exist gives zero counts.
 * SSMJIT_ERR_INVALID_ARG when SSMJIT_CACHE_MAX_BYTES is not valid (or out
 * is NULL with cap > 0), SSMJIT_ERR_IO when dir cannot be read,
 * SSMJIT_ERR_NO_MEMORY.  Nothing is written on failure. */
SSMJIT_API ssmjit_status ssmjit_cache_targets(const char *dir, ssmjit_cache_stats *totals,
                                              ssmjit_cache_target_stats *out, size_t cap,
                                              size_t *count);

/* Deletes every cache entry (and leftover temporary file) under dir (NULL:
 * default); *removed (may be NULL) counts the files deleted, written only
 * on success.  Files that are not ssmjit's are left alone. */
SSMJIT_API ssmjit_status ssmjit_cache_clear(const char *dir, size_t *removed);

/* ------------------------------------------------------------------------ */
/* Data types of activations                                                */
/* ------------------------------------------------------------------------ */

typedef enum ssmjit_dtype {
    SSMJIT_F32 = 0,
    SSMJIT_F16 = 1,
    SSMJIT_BF16 = 2
} ssmjit_dtype;

/* Size in bytes of one element of dtype, 0 for an unknown dtype. */
SSMJIT_API size_t ssmjit_dtype_size(ssmjit_dtype dtype);

/* A view of an activation in device memory: a [rows, width] matrix, or a
 * [batch, len, width] one whose row (b, t) is at
 *     data + b * batch_stride + t * stride          (in elements)
 * so that a view may be a column slice of a wider buffer (stride > width)
 * or a window into longer sequences (batch_stride > len * stride).
 * stride 0 means width; batch_stride 0 means len * stride, and must be 0
 * for an op's [rows, width] operands.  data must be aligned to the
 * element size. */
typedef struct ssmjit_matrix {
    void *data;            /* device pointer */
    int64_t stride;        /* elements between rows (tokens); 0 = width */
    int64_t batch_stride;  /* elements between sequences; 0 = len * stride */
} ssmjit_matrix;

/* ------------------------------------------------------------------------ */
/* Elementwise ops (module "elementwise")                                   */
/* ------------------------------------------------------------------------ */
/*
 * Every elementwise op works on [rows, cols] matrices: each operand is an
 * ssmjit_matrix whose rows are `stride` elements apart (0 means contiguous:
 * stride = cols; batch_stride must be 0), so the halves of a wider
 * activation can be used in place.  Arithmetic is in f32.  rows or cols of
 * 0 is a no-op (no operand is then required).  An output may alias an input
 * only if both have the same stride (in place).
 *
 * Errors: SSMJIT_ERR_INVALID_ARG naming the field ("desc->activation",
 * "args->x.stride", ...): a NULL ctx, desc, args or operand, a wrong
 * struct_size, an unknown activation or dtype, a negative extent, a stride
 * below cols, a nonzero batch_stride, data not aligned to the element
 * size; SSMJIT_ERR_UNSUPPORTED for extents too large (a row stride times
 * rows past 2^62, or cols past 2^31 blocks of 256 threads, each thread
 * taking 16 bytes of a row); then the engine's errors (compile, driver)
 * from the first use of a kernel.
 */

typedef enum ssmjit_activation {
    SSMJIT_ACT_SILU = 0,     /* x * sigmoid(x) */
    SSMJIT_ACT_SOFTPLUS = 1  /* x <= 20 ? log1p(exp(x)) : x */
} ssmjit_activation;

typedef struct ssmjit_activation_desc {
    size_t struct_size;            /* sizeof(ssmjit_activation_desc) */
    ssmjit_activation activation;  /* the function applied */
    ssmjit_dtype dtype;            /* of every operand */
    int64_t rows, cols;            /* the operands' extents */
} ssmjit_activation_desc;

typedef struct ssmjit_activation_fwd_args {
    size_t struct_size;  /* sizeof(ssmjit_activation_fwd_args) */
    ssmjit_matrix x;     /* in [rows, cols] */
    ssmjit_matrix y;     /* out [rows, cols]: act(x) */
} ssmjit_activation_fwd_args;

typedef struct ssmjit_activation_bwd_args {
    size_t struct_size;  /* sizeof(ssmjit_activation_bwd_args) */
    ssmjit_matrix x;     /* in [rows, cols]: the forward's input */
    ssmjit_matrix dy;    /* in [rows, cols]: the gradient of y */
    ssmjit_matrix dx;    /* out [rows, cols]: dy * act'(x) */
} ssmjit_activation_bwd_args;

/* y = act(x), act = desc->activation. */
SSMJIT_API ssmjit_status ssmjit_activation_fwd(ssmjit_context *ctx, const ssmjit_activation_desc *desc,
                                               const ssmjit_activation_fwd_args *args, void *stream);

/* dx = dy * act'(x). */
SSMJIT_API ssmjit_status ssmjit_activation_bwd(ssmjit_context *ctx, const ssmjit_activation_desc *desc,
                                               const ssmjit_activation_bwd_args *args, void *stream);

typedef struct ssmjit_gate_desc {
    size_t struct_size;  /* sizeof(ssmjit_gate_desc) */
    ssmjit_dtype dtype;  /* of every operand */
    int64_t rows, cols;  /* the operands' extents */
} ssmjit_gate_desc;

typedef struct ssmjit_gate_fwd_args {
    size_t struct_size;  /* sizeof(ssmjit_gate_fwd_args) */
    ssmjit_matrix y;     /* in [rows, cols]: the gated value */
    ssmjit_matrix z;     /* in [rows, cols]: the gate */
    ssmjit_matrix out;   /* out [rows, cols]: y * silu(z) */
} ssmjit_gate_fwd_args;

typedef struct ssmjit_gate_bwd_args {
    size_t struct_size;  /* sizeof(ssmjit_gate_bwd_args) */
    ssmjit_matrix y, z;  /* in [rows, cols]: the forward's inputs */
    ssmjit_matrix dout;  /* in [rows, cols]: the gradient of out */
    ssmjit_matrix dy;    /* out [rows, cols]: dout * silu(z) */
    ssmjit_matrix dz;    /* out [rows, cols]: dout * y * silu'(z) */
} ssmjit_gate_bwd_args;

/* out = y * silu(z). */
SSMJIT_API ssmjit_status ssmjit_gate_fwd(ssmjit_context *ctx, const ssmjit_gate_desc *desc,
                                         const ssmjit_gate_fwd_args *args, void *stream);

/* dy = dout * silu(z); dz = dout * y * silu'(z). */
SSMJIT_API ssmjit_status ssmjit_gate_bwd(ssmjit_context *ctx, const ssmjit_gate_desc *desc,
                                         const ssmjit_gate_bwd_args *args, void *stream);

/* ------------------------------------------------------------------------ */
/* Selective scan, Mamba-1 (modules "scan_fwd", "scan_bwd", "state_update") */
/* ------------------------------------------------------------------------ */
/*
 * Per segment (a sequence), channel d < D and state n < N:
 *
 *     dt_t  = softplus(delta_t[d] + delta_bias[d])   (delta_softplus; else no softplus;
 *                                                     softplus(x) = x <= 20 ? log1p(exp(x)) : x)
 *     h_t   = exp(dt_t A[d,n]) h_{t-1} + dt_t B_t[n] u_t[d]
 *     y_t   = (sum_n C_t[n] h_t[n] + D[d] u_t[d]) * silu(z_t[d])
 *
 * with h_{-1} = initial_state (or 0).  Shapes: u, delta, z, y [B, L, D] and
 * B, C [B, L, N] are activations of desc->dtype, each an ssmjit_matrix
 * view: its stride is the number of elements between consecutive tokens
 * (0 = the row width), so they may be column slices of wider buffers (u
 * and z as the halves of an in_proj output, dt/B/C slices of an x_proj
 * output), and its batch_stride the number between sequences (0 = L *
 * stride), so they may be windows of L tokens into longer sequences.
 * With several batch rows the windows must share one token pitch P >= L:
 * every activation's batch_stride is P times its stride (the kernels
 * address token t of row b as (b P + t) stride, which costs nothing over
 * the packed layout; per-tensor pitches cost the kernels 2-6%, measured).
 * Such a window runs unsplit (see the forward's workspace).
 * A [D, N], D, delta_bias [D] and every state ([S, D, N], S segments) are
 * contiguous f32; arithmetic is in f32.  1 <= N <= 256.
 *
 * Variable-length batches: with desc->num_seqs >= 1, batch must be 1 and
 * its L tokens hold num_seqs packed sequences, which args->in.cu_seqlens
 * (int32 device array of num_seqs + 1 offsets into L, cu_seqlens[0] = 0,
 * non-decreasing, cu_seqlens[num_seqs] = L; not checked on the device)
 * delimits: the state restarts at each one, from initial_state[s] when
 * given, and final_state[s] is sequence s's last state (its initial
 * state, or 0, for an empty one).  With num_seqs = 0 the B batch rows are
 * the segments.
 *
 * The same descriptor serves the forward and the backward of one call
 * (no pointers: the size queries take it alone); the args structs name
 * the tensors, the forward's inputs as one ssmjit_selective_scan_inputs,
 * which the backward takes again.  Pointers are device pointers, NULL for
 * an absent optional tensor.
 *
 * Errors of every scan call: SSMJIT_ERR_INVALID_ARG naming the field
 * ("desc->dstate", "args->in.u.stride", "args->dy.data"): a NULL
 * required pointer or one set where its input is absent, a struct_size
 * that is not sizeof the struct, a negative extent, N outside 1..256,
 * num_seqs outside 0..2^31-2, batch != 1 with num_seqs >= 1, a stride
 * below the row width, a batch_stride (not 0) below L * stride, data not
 * aligned to its elements, an unknown dtype, a workspace misaligned or
 * below the size it needs; SSMJIT_ERR_UNSUPPORTED for batch > 65535,
 * D > 2^31-1, L > 2^31-1 with packed sequences, windows of different
 * token pitches over several batch rows, or extents whose
 * activations, states or backward workspace would pass 2^62 elements or
 * bytes; then the engine's errors (compile, driver) from a kernel's first
 * use.
 */

typedef struct ssmjit_selective_scan_desc {
    size_t struct_size;          /* sizeof(ssmjit_selective_scan_desc): SSMJIT_STRUCT_INIT */
    ssmjit_dtype dtype;          /* u, delta, z, B, C, y and their gradients */
    int64_t batch;               /* B (1 with packed sequences); at most 65535 */
    int64_t seqlen;              /* L */
    int64_t dim;                 /* D */
    int64_t dstate;              /* N, 1..256 */
    int64_t num_seqs;            /* 0: the batch rows are the sequences; >= 1: batch is 1
                                    and args->in.cu_seqlens packs num_seqs sequences */
    int delta_softplus;          /* nonzero: dt = softplus(delta + delta_bias) */
    int checkpoint;              /* nonzero: the forward writes args->checkpoint and the
                                    backward reads it; 0: the backward rebuilds it in its
                                    workspace */
} ssmjit_selective_scan_desc;

/* The forward's inputs, which the backward takes again (a member of
 * both args structs, so it has no struct_size of its own). */
typedef struct ssmjit_selective_scan_inputs {
    ssmjit_matrix u, delta;      /* [B, L, D] */
    const void *A;               /* [D, N] f32 */
    ssmjit_matrix B, C;          /* [B, L, N] */
    const void *D;               /* optional [D] f32: skip term D u */
    ssmjit_matrix z;             /* optional [B, L, D] (data NULL: no gate) */
    const void *delta_bias;      /* optional [D] f32 */
    const void *initial_state;   /* optional [S, D, N] f32 */
    const void *cu_seqlens;      /* int32 [num_seqs + 1]: required with desc->num_seqs >= 1,
                                    NULL with 0 */
} ssmjit_selective_scan_inputs;

typedef struct ssmjit_selective_scan_fwd_args {
    size_t struct_size;          /* sizeof(ssmjit_selective_scan_fwd_args): SSMJIT_STRUCT_INIT */
    ssmjit_selective_scan_inputs in;
    ssmjit_matrix y;             /* out [B, L, D], required */
    void *final_state;           /* out, optional [S, D, N] f32 */
    void *checkpoint;            /* out: the states the backward restarts from, of
                                    ssmjit_selective_scan_checkpoint_size() bytes; required
                                    with desc->checkpoint (where B * L * D > 0), NULL
                                    without */
    void *workspace;             /* optional scratch that lets the forward split L, of
                                    ssmjit_selective_scan_fwd_workspace_size() bytes;
                                    NULL: the forward runs unsplit */
    size_t workspace_bytes;
} ssmjit_selective_scan_fwd_args;

typedef struct ssmjit_selective_scan_bwd_args {
    size_t struct_size;          /* sizeof(ssmjit_selective_scan_bwd_args): SSMJIT_STRUCT_INIT */
    ssmjit_selective_scan_inputs in; /* the forward's */
    const void *checkpoint;      /* in: what the forward wrote there; required with
                                    desc->checkpoint (where B * L * D > 0), NULL without */
    ssmjit_matrix dy;            /* in: gradient of y [B, L, D] */
    const void *d_final_state;   /* in, optional: gradient of final_state [S, D, N] f32
                                    (needs no final_state in the forward) */
    ssmjit_matrix du, ddelta;    /* out [B, L, D] */
    void *dA;                    /* out [D, N] f32 */
    ssmjit_matrix dB, dC;        /* out [B, L, N] */
    void *dD;                    /* out [D] f32: required iff in.D, else NULL */
    ssmjit_matrix dz;            /* out [B, L, D]: required iff in.z.data, else absent */
    void *ddelta_bias;           /* out [D] f32: required iff in.delta_bias, else NULL */
    void *d_initial_state;       /* out [S, D, N] f32: required iff in.initial_state,
                                    else NULL */
    void *workspace;             /* ssmjit_selective_scan_bwd_workspace_size() bytes,
                                    4-byte aligned; required (may be NULL when D = 0) */
    size_t workspace_bytes;
} ssmjit_selective_scan_bwd_args;

/* Bytes of args->checkpoint: the f32 state after every 16 tokens (and
 * after the last), B * ceil(L / 16) * D * N * 4, whether or not
 * desc->checkpoint is set.  Errors: SSMJIT_ERR_INVALID_ARG (ctx, desc or
 * bytes NULL, a bad field of desc); SSMJIT_ERR_UNSUPPORTED as for the
 * forward. */
SSMJIT_API ssmjit_status ssmjit_selective_scan_checkpoint_size(ssmjit_context *ctx,
                                                               const ssmjit_selective_scan_desc *desc,
                                                               size_t *bytes);

/* Bytes of the forward's optional workspace, with which it splits L on
 * ctx's device, or 0 where it would not.  The forward's blocks each take
 * channels of one batch row and walk its L tokens in order, so few rows
 * of few channels (one sequence at mamba-130m's D = 1536: 48 forward
 * blocks, 24 backward ones, for 132 SMs) leave most of the GPU idle.
 * With the workspace, such a forward cuts each row into S segments and
 * runs over all of them at once twice: from a zero state, then from the
 * states carried across the segments (each segment's decay is
 * exp(A sum dt)).  Twice the work on S times the blocks, taken where a
 * model of the kernels' time on this device says it pays (bench/NOTES.md:
 * one sequence of 16384 tokens at D = 1536, forward about 2.6 times
 * faster).  Segments are whole 16-token chunks where the forward writes a
 * checkpoint (which it writes as unsplit).  Never with packed sequences,
 * nor with several batch rows that the segments would not cover evenly.
 * The size is about B * S * D * (N + 1) * 4 bytes (S <= 64).
 * Errors: as ssmjit_selective_scan_checkpoint_size. */
SSMJIT_API ssmjit_status ssmjit_selective_scan_fwd_workspace_size(ssmjit_context *ctx,
                                                                  const ssmjit_selective_scan_desc *desc,
                                                                  size_t *bytes);

/* Forward.  Writes y, and final_state and checkpoint when their pointers
 * are set.  y must not overlap an input.  D = 0 or B = 0 is a no-op; L = 0
 * writes only final_state (= initial_state or 0).  With args->workspace
 * set (device memory, 4-byte aligned, of workspace_bytes bytes) the
 * forward splits L where ssmjit_selective_scan_fwd_workspace_size() gives
 * a nonzero size, which workspace_bytes must then reach; elsewhere the
 * workspace is ignored.  A split forward writes y twice (its first pass's
 * values are overwritten) and differs from an unsplit one by rounding
 * only.  Errors: as above (the scan's). */
SSMJIT_API ssmjit_status ssmjit_selective_scan_fwd(ssmjit_context *ctx,
                                                   const ssmjit_selective_scan_desc *desc,
                                                   const ssmjit_selective_scan_fwd_args *args,
                                                   void *stream);

/* Bytes of args->workspace that ssmjit_selective_scan_bwd needs for desc
 * on ctx's device.  It depends on the extents and on desc->checkpoint
 * (without one the backward rebuilds the checkpoint into the workspace,
 * which then holds ssmjit_selective_scan_checkpoint_size() more bytes).
 * About B * L * N * 8 * ceil(D / 32) bytes of per-block partial sums of dB
 * and dC, plus B * L * D * 12 bytes when N > 16, plus B * D * (N + 2) * 4;
 * plus, where the backward splits L on ctx's device, the split's part.
 * The backward, like the forward (see
 * ssmjit_selective_scan_fwd_workspace_size), leaves most of the GPU idle
 * over few rows of few channels: there it cuts each row into S segments of
 * whole 16-token chunks and runs over all of them at once twice, with no
 * adjoint entering the segments' ends, then with the adjoints carried
 * back across them (bench/NOTES.md: one sequence of 16384 tokens at
 * D = 1536, backward about 3.1 times faster); that part is about
 * B * S * D * (4 N + 3) * 4 bytes (S <= 64).  0 when D = 0.
 * Errors: as ssmjit_selective_scan_checkpoint_size. */
SSMJIT_API ssmjit_status ssmjit_selective_scan_bwd_workspace_size(ssmjit_context *ctx,
                                                                  const ssmjit_selective_scan_desc *desc,
                                                                  size_t *bytes);

/* Backward of ssmjit_selective_scan_fwd for the same desc and inputs.
 * With desc->checkpoint, args->checkpoint must hold what the forward
 * wrote for these inputs; else it is rebuilt in the workspace.  Every
 * gradient is overwritten, not accumulated: du, ddelta, dB, dC, dA, and
 * dD, dz, ddelta_bias, d_initial_state for each optional input that was
 * given.  The results are always bit-reproducible (no atomics: partial
 * sums go through the workspace and are added in a fixed order), so the
 * context's deterministic option changes nothing here.  The exponentials
 * are recomputed from the checkpoint, and the backward kernels build
 * without fast math by default (see ssmjit_fast_math).  Where
 * ssmjit_selective_scan_bwd_workspace_size() counts the split's part it
 * splits L; its outputs are then written twice, and differ from an
 * unsplit backward's by rounding only (still the same bytes run to run).
 * D = 0 is a no-op; B = 0 or L = 0 writes dA, dD, ddelta_bias = 0 and
 * d_initial_state = d_final_state (or 0).  Outputs must not overlap inputs
 * or each other.  Errors: as above (the scan's), among them a gradient
 * pointer missing or set without its input, and a NULL, misaligned or
 * too small workspace. */
SSMJIT_API ssmjit_status ssmjit_selective_scan_bwd(ssmjit_context *ctx,
                                                   const ssmjit_selective_scan_desc *desc,
                                                   const ssmjit_selective_scan_bwd_args *args,
                                                   void *stream);

/* One decode step of the selective scan for every batch row, updating the
 * state in place: with dt = softplus(dt + dt_bias) (dt_softplus) or
 * dt + dt_bias,
 *     state = exp(dt A) state + dt B x;   out = (sum_n C state + D x) silu(z)
 * the arithmetic of one token of ssmjit_selective_scan_fwd, so chaining L
 * steps reproduces the scan. */
typedef struct ssmjit_state_update_desc {
    size_t struct_size;          /* sizeof(ssmjit_state_update_desc): SSMJIT_STRUCT_INIT */
    ssmjit_dtype dtype;          /* x, dt, z, B, C, out */
    int64_t batch, dim, dstate;  /* B, D, N (1..256) */
    int dt_softplus;             /* nonzero: dt = softplus(dt + dt_bias) */
} ssmjit_state_update_desc;

/* The step's tensors: x, dt, z, out are [B, D] and B, C [B, N]
 * activations of desc->dtype, [rows, width] views (stride: elements
 * between batch rows, 0 = contiguous; batch_stride 0); state [B, D, N]
 * f32 contiguous. */
typedef struct ssmjit_state_update_args {
    size_t struct_size;          /* sizeof(ssmjit_state_update_args): SSMJIT_STRUCT_INIT */
    ssmjit_matrix x, dt;         /* [B, D] */
    const void *A;               /* [D, N] f32 */
    ssmjit_matrix B, C;          /* [B, N] */
    const void *D;               /* optional [D] f32 */
    ssmjit_matrix z;             /* optional [B, D] */
    const void *dt_bias;         /* optional [D] f32 */
    void *state;                 /* [B, D, N] f32, read and written */
    ssmjit_matrix out;           /* [B, D] */
} ssmjit_state_update_args;

/* The step above.  out must not overlap an input.  B = 0 or D = 0 is a
 * no-op.  Errors as the scan's (a bad struct_size, N outside 1..256, a
 * NULL required pointer, a bad stride, a batch_stride not 0, misaligned
 * data, an unknown dtype). */
SSMJIT_API ssmjit_status ssmjit_selective_state_update(ssmjit_context *ctx,
                                                       const ssmjit_state_update_desc *desc,
                                                       const ssmjit_state_update_args *args,
                                                       void *stream);

/* ------------------------------------------------------------------------ */
/* Causal depthwise conv1d (modules "conv" and "conv_update")               */
/* ------------------------------------------------------------------------ */
/*
 * The short convolution of a Mamba block, for each channel d of x [B, L, D]:
 *     pre[b,t,d] = bias[d] + sum_{k=0}^{W-1} weight[d,k] * x[b, t-(W-1)+k, d]
 *     y[b,t,d]   = desc->silu ? silu(pre[b,t,d]) : pre[b,t,d]
 * where x at times -(W-1) .. -1 comes from the initial state (zeros without
 * one).  The width W is 2..8.
 *
 * Activations (args->x, y, dy, dx) are [B, L, D] ssmjit_matrix views of
 * desc->dtype: token t of sequence b is at data + b * batch_stride +
 * t * stride (elements).  stride (0 = D) is the elements between
 * consecutive tokens, so x may be the first half of an in_proj output
 * [B, L, 2D] (data = that buffer, stride = 2D); batch_stride (0 = L *
 * stride) the elements between sequences, so a view may be a window of L
 * tokens into longer sequences (batch_stride > L * stride).  weight [D, W]
 * (the memory of Hugging Face's conv1d.weight [D, 1, W]), bias [D] and the
 * states are contiguous f32; arithmetic is in f32.  Device pointers must be
 * aligned to their element size.  Outputs must not overlap inputs (except
 * y = x in ssmjit_causal_conv1d_update).  The forward and backward run
 * vectorised kernels (8- and 16-byte accesses) when D, the row and batch
 * strides and the activation pointers are multiples of 4 elements (2 in
 * the backward at widths 5..8), and slower element-wise kernels otherwise.
 *
 * The state between calls has two layouts, for two uses:
 *  - The forward and backward take [B, D, W-1] f32 (initial_state,
 *    final_state and their gradients): exactly the W-1 inputs before the
 *    first token and the W-1 last inputs, all the convolution reads across
 *    the boundary.  A sequence cut into segments runs as one when each
 *    segment's final_state is the next one's initial_state (and the
 *    backward's d_initial_state the previous one's d_final_state).
 *  - Decoding (ssmjit_causal_conv1d_update) takes conv_state [B, D, W] f32,
 *    the layout of Hugging Face's conv_states (and of the model's
 *    conv_state): the last W inputs, the newest at W-1.  A step shifts the
 *    state left and puts its token at W-1 before it reads the state, so
 *    entry 0 is never read: it is the extra input that the cache layout
 *    keeps.
 *  One continues the other: decoding after a forward (a prefill) needs
 *  conv_state[b,d,1..W-1] = final_state[b,d,0..W-2] (entry 0 may hold
 *  anything), and a forward after decoding takes initial_state[b,d,j] =
 *  conv_state[b,d,j+1].
 *
 * Errors: SSMJIT_ERR_INVALID_ARG with a message naming the field (e.g.
 * "desc->width", "args->x.stride", "args->dweight", a struct_size that is
 * not sizeof the struct); SSMJIT_ERR_UNSUPPORTED for extents too large
 * (B * L * D, B * D * (W + 1), B * L * a stride or the workspace past
 * 2^62, an empty extent counting as 1); then the engine's errors (compile,
 * driver) from the first use of a kernel.
 */

typedef struct ssmjit_conv1d_desc {
    size_t struct_size; /* sizeof(ssmjit_conv1d_desc) */
    ssmjit_dtype dtype; /* of x, y, dy, dx */
    int64_t batch;      /* B */
    int64_t seqlen;     /* L: tokens per sequence (for _update: tokens of this call) */
    int64_t dim;        /* D: channels */
    int width;          /* W: taps, 2..8 */
    int silu;           /* nonzero: SiLU fused on the output */
} ssmjit_conv1d_desc;

typedef struct ssmjit_conv1d_fwd_args {
    size_t struct_size;        /* sizeof(ssmjit_conv1d_fwd_args) */
    ssmjit_matrix x;           /* in [B, L, D], required */
    const void *weight;        /* in [D, W] f32, required */
    const void *bias;          /* in [D] f32, or NULL for none */
    const void *initial_state; /* in [B, D, W-1] f32: x at times -(W-1) .. -1, or NULL for zeros */
    ssmjit_matrix y;           /* out [B, L, D], required */
    void *final_state;         /* out [B, D, W-1] f32: x at times L-(W-1) .. L-1, or NULL */
} ssmjit_conv1d_fwd_args;

/* y = the convolution above.  final_state (when set) receives x at times
 * L-(W-1) .. L-1, taken from the initial state where those times are
 * negative: the initial_state of the next segment.  B or D = 0: nothing
 * happens.  L = 0: only final_state is written. */
SSMJIT_API ssmjit_status ssmjit_causal_conv1d_fwd(ssmjit_context *ctx, const ssmjit_conv1d_desc *desc,
                                                  const ssmjit_conv1d_fwd_args *args, void *stream);

typedef struct ssmjit_conv1d_bwd_args {
    size_t struct_size;        /* sizeof(ssmjit_conv1d_bwd_args) */
    ssmjit_matrix x;           /* in [B, L, D], required: the forward's x */
    const void *weight;        /* in [D, W] f32, required: the forward's */
    const void *bias;          /* in [D] f32 or NULL: the forward's */
    const void *initial_state; /* in [B, D, W-1] f32 or NULL: the forward's */
    ssmjit_matrix dy;          /* in [B, L, D], required: dLoss/dy */
    const void *d_final_state; /* in [B, D, W-1] f32: dLoss/d final_state, or NULL for zero */
    ssmjit_matrix dx;          /* out [B, L, D], required */
    void *dweight;             /* out [D, W] f32, required; overwritten, not accumulated */
    void *dbias;               /* out [D] f32, or NULL when not wanted */
    void *d_initial_state;     /* out [B, D, W-1] f32, or NULL when not wanted */
    void *workspace;           /* ssmjit_causal_conv1d_bwd_workspace_size bytes of device
                                  memory, 4-byte aligned (may be NULL when that is 0) */
    size_t workspace_bytes;    /* its size */
} ssmjit_conv1d_bwd_args;

/* Bytes of device workspace ssmjit_causal_conv1d_bwd needs for desc on
 * ctx's device (it depends on the device's SM count).  May be 0. */
SSMJIT_API ssmjit_status ssmjit_causal_conv1d_bwd_workspace_size(ssmjit_context *ctx,
                                                                 const ssmjit_conv1d_desc *desc,
                                                                 size_t *bytes);

/* Gradients of ssmjit_causal_conv1d_fwd with the same desc and inputs.
 * With desc->silu the pre-activation is recomputed from x.  The workspace
 * holds per-walker partial sums of dweight and dbias, which a second kernel
 * adds in a fixed order.  There are no atomics, so results are always
 * bit-reproducible on a given device; the context's deterministic option
 * changes nothing here.  B = 0 or L = 0 with D > 0: dweight and dbias are
 * set to zero (and d_initial_state, when L = 0, to d_final_state or zero). */
SSMJIT_API ssmjit_status ssmjit_causal_conv1d_bwd(ssmjit_context *ctx, const ssmjit_conv1d_desc *desc,
                                                  const ssmjit_conv1d_bwd_args *args, void *stream);

typedef struct ssmjit_conv1d_update_args {
    size_t struct_size;  /* sizeof(ssmjit_conv1d_update_args) */
    ssmjit_matrix x;     /* in [B, L, D], required (one step: [B, 1, D], whose stride
                            is then the elements between batch rows when
                            batch_stride is 0) */
    const void *weight;  /* in [D, W] f32, required */
    const void *bias;    /* in [D] f32, or NULL for none */
    void *conv_state;    /* in and out [B, D, W] f32, required: the rolling state */
    ssmjit_matrix y;     /* out [B, L, D], required; may be x with the same strides */
} ssmjit_conv1d_update_args;

/* Decode: runs desc->seqlen tokens (1 for one step) of each sequence
 * through the rolling state conv_state.  Per token the state of each
 * channel shifts left by one, x[b,t,d] enters at position W-1, and
 *     y[b,t,d] = bias[d] + sum_k weight[d,k] * conv_state[b,d,k]
 * (then SiLU if desc->silu): the arithmetic of the forward, so decoding a
 * sequence token by token reproduces its forward bit for bit.  B, D or
 * L = 0: nothing happens. */
SSMJIT_API ssmjit_status ssmjit_causal_conv1d_update(ssmjit_context *ctx, const ssmjit_conv1d_desc *desc,
                                                     const ssmjit_conv1d_update_args *args, void *stream);

/* ------------------------------------------------------------------------ */
/* RMSNorm (module "norm")                                                  */
/* ------------------------------------------------------------------------ */
/*
 * Root-mean-square normalisation of each row of a [rows, d] activation,
 * optionally fused with the residual add of a pre-norm block:
 *
 *     h = x                              (no residual)
 *     h = round(x + residual)            (desc->has_residual; rounded to
 *                                         desc->residual_dtype)
 *     rstd = 1 / sqrt(mean_j(h_j^2) + eps)           per row, f32
 *     y = h * rstd * weight
 *
 * The normalised value is exactly what residual_out stores, which is also
 * what the backward reads back, so forward and backward agree.  Matrices
 * are [rows, d] ssmjit_matrix views (row stride 0 = d; batch_stride must be
 * 0); weight, rstd and dweight are contiguous f32; arithmetic is in f32.
 * Device pointers must be aligned to their element size.  The same
 * descriptor serves the forward and the backward of one layer.
 *
 * The residual stream may be kept in f32 while activations are f16/bf16
 * (Hugging Face's residual_in_fp32): set residual_dtype = SSMJIT_F32.
 * Otherwise residual_dtype must equal dtype.
 *
 * Errors: SSMJIT_ERR_INVALID_ARG naming the field ("desc->eps",
 * "args->y.stride", ...): a NULL ctx, desc, args or required pointer, a
 * wrong struct_size, a residual operand set without desc->has_residual, a
 * negative extent, a stride below d, a nonzero batch_stride, misaligned
 * data, eps < 0 or not finite as f32, an unknown dtype;
 * SSMJIT_ERR_UNSUPPORTED for a residual_dtype that is neither dtype nor
 * f32, or for rows * d or rows * a stride past 2^62 (rows counting as at
 * least 1); then the engine's errors (compile, driver) from the first use
 * of a kernel.
 */

typedef struct ssmjit_rmsnorm_desc {
    size_t struct_size;          /* sizeof(ssmjit_rmsnorm_desc) */
    ssmjit_dtype dtype;          /* x, y, dy, dx */
    int64_t rows, d;
    double eps;                  /* >= 0, finite when rounded to f32, as the kernels use it
                                    (a double like ssmjit_model_config.norm_eps; eps = 0
                                    with an all-zero row gives NaN) */
    int has_residual;            /* nonzero: a residual is added before normalising */
    ssmjit_dtype residual_dtype; /* residual, residual_out, and in the backward h,
                                    d_residual_out, d_residual: dtype or SSMJIT_F32;
                                    ignored when has_residual is 0 */
} ssmjit_rmsnorm_desc;

typedef struct ssmjit_rmsnorm_fwd_args {
    size_t struct_size;         /* sizeof(ssmjit_rmsnorm_fwd_args) */
    ssmjit_matrix x;            /* in [rows, d] (dtype), required */
    ssmjit_matrix residual;     /* in [rows, d] (residual_dtype), only with has_residual;
                                   data NULL means zero (the first block of a model:
                                   residual_out = x then starts the residual stream in
                                   its type) */
    const void *weight;         /* in [d] f32, required */
    ssmjit_matrix y;            /* out [rows, d] (dtype), required */
    ssmjit_matrix residual_out; /* out [rows, d] (residual_dtype), optional, only with
                                   has_residual: x + residual, the next block's residual */
    void *rstd;                 /* out [rows] f32, optional: needed by the backward */
} ssmjit_rmsnorm_fwd_args;

/* Forward: writes y, and residual_out and rstd where their pointers are
 * set.  y may alias x, and residual_out may alias residual, with the same
 * stride (in place); no other overlap is allowed.  rows or d of 0 is a
 * no-op (no tensor is checked). */
SSMJIT_API ssmjit_status ssmjit_rmsnorm_fwd(ssmjit_context *ctx, const ssmjit_rmsnorm_desc *desc,
                                            const ssmjit_rmsnorm_fwd_args *args, void *stream);

typedef struct ssmjit_rmsnorm_bwd_args {
    size_t struct_size;           /* sizeof(ssmjit_rmsnorm_bwd_args) */
    ssmjit_matrix h;              /* in [rows, d], required: what the forward normalised,
                                     x (dtype) without a residual, residual_out
                                     (residual_dtype) with one */
    const void *weight;           /* in [d] f32, required */
    const void *rstd;             /* in [rows] f32, required: from the forward */
    ssmjit_matrix dy;             /* in [rows, d] (dtype), required: the gradient of y */
    ssmjit_matrix d_residual_out; /* in [rows, d] (residual_dtype), optional, only with
                                     has_residual: the gradient reaching residual_out
                                     through the next block's residual path, added to
                                     the result */
    ssmjit_matrix dx;             /* out [rows, d] (dtype), required: the gradient of h,
                                     which is that of x and of residual alike */
    ssmjit_matrix d_residual;     /* out [rows, d] (residual_dtype), optional, only with
                                     has_residual: the same gradient, since residual_out
                                     = x + residual, in the residual stream's type (use
                                     it when that is f32 and dx is 16-bit; it becomes the
                                     previous block's d_residual_out) */
    void *dweight;                /* out [d] f32, optional: the sum over rows of
                                     dy * h * rstd */
    void *workspace;              /* ssmjit_rmsnorm_bwd_workspace_size bytes of device
                                     memory, needed with dweight (may be NULL without) */
    size_t workspace_bytes;       /* its size */
} ssmjit_rmsnorm_bwd_args;

/* Bytes of device workspace ssmjit_rmsnorm_bwd needs for desc on ctx's
 * device (0 when rows or d is 0).  It depends on the device, rows and d,
 * not on the data.  Errors: SSMJIT_ERR_INVALID_ARG as for the backward. */
SSMJIT_API ssmjit_status ssmjit_rmsnorm_bwd_workspace_size(ssmjit_context *ctx,
                                                           const ssmjit_rmsnorm_desc *desc,
                                                           size_t *bytes);

/* Backward: writes dx, and d_residual and dweight where their pointers
 * are set.  rows = 0 writes dweight = 0; d = 0 is a no-op.  dx may alias
 * dy, and d_residual may alias d_residual_out, with the same stride (in
 * place, e.g. to accumulate the residual gradient); no other overlap is
 * allowed.  The result is always bit-reproducible: dweight is summed per
 * block into the workspace and then over blocks in a fixed order, with no
 * atomics, so the context's deterministic option changes nothing here.
 * Errors: as the forward, plus SSMJIT_ERR_INVALID_ARG when dweight is
 * requested with a NULL or too small workspace. */
SSMJIT_API ssmjit_status ssmjit_rmsnorm_bwd(ssmjit_context *ctx, const ssmjit_rmsnorm_desc *desc,
                                            const ssmjit_rmsnorm_bwd_args *args, void *stream);

/* ------------------------------------------------------------------------ */
/* Mamba-1 language model                                                   */
/* ------------------------------------------------------------------------ */
/*
 * The model of state-spaces' MambaLMHeadModel and Hugging Face's
 * MambaForCausalLM (RMSNorm variant): embedding -> n_layer blocks
 * h = h + mixer(rmsnorm(h)) -> final RMSNorm -> LM head, the mixer being
 * in_proj -> causal conv1d + SiLU -> x_proj -> dt_proj + softplus ->
 * selective scan with D and the SiLU gate -> out_proj, built from the ops
 * above and cuBLAS GEMMs.  cuBLAS is opened at run time like the driver
 * (SSMJIT_CUBLAS_PATH, else libcublas.so.13, .12, .11); without it model
 * calls fail with SSMJIT_ERR_CUBLAS_NOT_FOUND while the ops keep working.
 *
 * Weights live in device memory in the model's dtype (embedding, LM head,
 * in_proj, x_proj, dt_proj, out_proj: the GEMM operands) or in f32 (norm
 * weights, conv1d weight and bias, dt_proj bias, A_log, D).  Each is
 * reached by its Hugging Face name through ssmjit_model_tensor.  GEMMs
 * accumulate in f32; f32 GEMMs use TF32 only with allow_tf32.  The residual
 * stream is f32 when the config says residual_in_fp32 (the default), else
 * in the model's dtype.
 *
 * A model is used by one thread at a time (it owns a cuBLAS handle and the
 * decode graph); different models may run in parallel on one context.
 * Token ids are int32.  Device pointers and streams follow the header's
 * conventions.
 */

typedef struct ssmjit_model ssmjit_model;

/* Filled by ssmjit_model_get_config (struct_size included); a caller
 * that fills one for ssmjit_model_create sets struct_size too. */
typedef struct ssmjit_model_config {
    size_t struct_size;
    int64_t d_model;        /* hidden size */
    int64_t d_inner;        /* expand * d_model */
    int64_t d_state;        /* N, 1..256 */
    int64_t d_conv;         /* conv1d width, 2..8 */
    int64_t dt_rank;
    int64_t n_layer;
    int64_t vocab_size;     /* rows of the embedding and of the logits */
    double norm_eps;
    int tie_embeddings;     /* the LM head is the embedding */
    int residual_in_fp32;
} ssmjit_model_config;

/* What ssmjit_model_load / _create queue on the compile pool as they
 * start (see ssmjit_context_prepare), so that the kernels compile while
 * the weights load and the first forward waits for little or nothing;
 * cuBLAS opens there too, unless SSMJIT_MODEL_PREPARE_NONE.
 * Ahead of need only: a kernel that cannot be queued or compiled (no
 * NVRTC, say) fails the call that needs it, as it would without. */
typedef enum ssmjit_model_prepare {
    SSMJIT_MODEL_PREPARE_INFERENCE = 0, /* the forward's and decoding's kernels (default) */
    SSMJIT_MODEL_PREPARE_TRAINING = 1,  /* those and the backward's */
    SSMJIT_MODEL_PREPARE_NONE = 2       /* nothing: each kernel compiles at its first use */
} ssmjit_model_prepare;

typedef struct ssmjit_model_options {
    size_t struct_size;     /* set by _init */
    ssmjit_dtype dtype;     /* weights and activations; default SSMJIT_BF16 */
    int allow_tf32;         /* f32 model: GEMMs may use TF32 tensor cores */
    ssmjit_model_prepare prepare;
    /* The largest calls the caller will make, so that `prepare` queues
     * only the kernels such calls launch: the most sequences in one call
     * (a forward, backward or step) and the most tokens a sequence in one
     * forward or backward; 0, the default, for any (a negative one is
     * SSMJIT_ERR_INVALID_ARG).  A kernel that a larger call needs then
     * compiles at that call's first use, as under
     * SSMJIT_MODEL_PREPARE_NONE.  A compile that has begun runs to its
     * end, and ssmjit_context_destroy waits for it, whether or not
     * anything launches the kernel: with these set, a program that runs
     * one prompt and exits (`ssmjit run` sets both) waits for none it
     * does not use. */
    int64_t max_batch;
    int64_t max_tokens;
} ssmjit_model_options;

/* Fills *opts with defaults.  opts must not be NULL. */
SSMJIT_API void ssmjit_model_options_init(ssmjit_model_options *opts);

/* Loads a checkpoint: a Hugging Face model directory (config.json and
 * model.safetensors, or a sharded model.safetensors.index.json) or a single
 * .safetensors file with config.json beside it.  Tensor names may follow
 * Hugging Face (backbone.embeddings.weight) or state-spaces
 * (backbone.embedding.weight); f32, f16 and bf16 tensors are converted to
 * the model's dtypes.  opts may be NULL for defaults.
 * Errors: SSMJIT_ERR_INVALID_ARG for a malformed or truncated file, a
 * missing tensor or a wrong shape (the message names the file and tensor);
 * SSMJIT_ERR_UNSUPPORTED for another architecture, LayerNorm or projection
 * biases; SSMJIT_ERR_IO when a file cannot be read or is not a regular file
 * (symlinks are followed: the Hugging Face hub cache's snapshots are made of
 * them, unlike the CUBIN cache, which never follows one);
 * SSMJIT_ERR_CUBLAS_NOT_FOUND; driver errors, e.g. out of device memory.
 * On failure *out is NULL. */
SSMJIT_API ssmjit_status ssmjit_model_load(ssmjit_context *ctx, const char *path,
                                           const ssmjit_model_options *opts,
                                           ssmjit_model **out);

/* Creates a model of the given shape with random weights (the
 * initialisation of a fresh Mamba: A_log = log(1..N), D = 1, dt bias giving
 * dt in [0.001, 0.1], projections ~ N(0, 0.02^2)), drawn from `seed`: for
 * benchmarks, tests, and users who then write their own weights into the
 * tensors.  Errors: SSMJIT_ERR_INVALID_ARG naming a bad config field;
 * otherwise as ssmjit_model_load. */
SSMJIT_API ssmjit_status ssmjit_model_create(ssmjit_context *ctx,
                                             const ssmjit_model_config *config,
                                             const ssmjit_model_options *opts, uint64_t seed,
                                             ssmjit_model **out);

/* Frees the model's device memory (not memory bound with
 * ssmjit_model_bind_tensor), graph and cuBLAS handle.  NULL is a no-op. */
SSMJIT_API void ssmjit_model_destroy(ssmjit_model *model);

/* The model's shape and dtype.  Errors: SSMJIT_ERR_INVALID_ARG for NULL. */
SSMJIT_API ssmjit_status ssmjit_model_get_config(const ssmjit_model *model,
                                                 ssmjit_model_config *config,
                                                 ssmjit_dtype *dtype);

#define SSMJIT_MODEL_MAX_DIMS 3

typedef struct ssmjit_tensor_info {
    const char *name;     /* Hugging Face name; valid while the model lives */
    ssmjit_dtype dtype;
    int ndim;
    int64_t shape[SSMJIT_MODEL_MAX_DIMS];
    void *data;           /* device pointer to the weight */
    void *grad;           /* device pointer to its f32 gradient, NULL before the
                             first ssmjit_model_backward */
} ssmjit_tensor_info;

/* Number of weight tensors (for ssmjit_model_tensor_at). */
SSMJIT_API int64_t ssmjit_model_tensor_count(const ssmjit_model *model);

/* Tensor i (0 <= i < count), or the one called name (e.g.
 * "backbone.layers.0.mixer.A_log", "lm_head.weight" when untied).
 * conv1d.weight has shape [d_inner, 1, d_conv] as in the checkpoint.
 * Errors: SSMJIT_ERR_INVALID_ARG for a NULL argument, an index out of range
 * or an unknown name. */
SSMJIT_API ssmjit_status ssmjit_model_tensor_at(const ssmjit_model *model, int64_t i,
                                                ssmjit_tensor_info *info);
SSMJIT_API ssmjit_status ssmjit_model_tensor(const ssmjit_model *model, const char *name,
                                             ssmjit_tensor_info *info);

/* Makes the model use device memory the caller owns for tensor `name`
 * (same dtype and shape as ssmjit_model_tensor reports; contiguous, aligned
 * to 16 bytes).  The model's own copy is freed; the caller's memory must
 * outlive the model and is never freed by it.  A captured decode graph is
 * dropped (recaptured on the next step).  Errors: SSMJIT_ERR_INVALID_ARG. */
SSMJIT_API ssmjit_status ssmjit_model_bind_tensor(ssmjit_model *model, const char *name,
                                                  void *data);

typedef enum ssmjit_model_mode {
    SSMJIT_MODEL_INFERENCE = 0,      /* nothing kept for a backward */
    SSMJIT_MODEL_TRAIN = 1,          /* keep every activation the backward needs */
    SSMJIT_MODEL_TRAIN_RECOMPUTE = 2 /* keep less: the backward recomputes the conv
                                        and scan outputs (checkpoint level 1) */
} ssmjit_model_mode;

/* Bytes of device workspace ssmjit_model_forward (and, in a training mode,
 * the backward that follows it) needs for `batch` sequences of `seqlen`
 * tokens on the model's device: where few long sequences leave SMs idle
 * it holds the scans' split workspaces (see
 * ssmjit_selective_scan_fwd_workspace_size and _bwd_workspace_size).
 * Errors: SSMJIT_ERR_INVALID_ARG for NULL, negative extents or an unknown
 * mode; SSMJIT_ERR_UNSUPPORTED for sizes past 2^62. */
SSMJIT_API ssmjit_status ssmjit_model_workspace_size(const ssmjit_model *model, int64_t batch,
                                                     int64_t seqlen, ssmjit_model_mode mode,
                                                     size_t *bytes);

typedef struct ssmjit_model_forward_args {
    size_t struct_size;
    int64_t batch, seqlen;   /* B sequences of L tokens */
    const int32_t *ids;      /* host [B, L] token ids (0 <= id < vocab), or NULL to
                                start from `embeds` */
    const void *embeds;      /* device [B, L, d_model] in the model's dtype, used
                                instead of ids */
    ssmjit_model_mode mode;
    void *logits;            /* device out, model's dtype: [B, L, vocab], or [B, vocab]
                                with last_only; NULL: not computed */
    int last_only;           /* logits of each sequence's last position only */
    void *conv_state;        /* device out, optional: [n_layer, B, d_inner, d_conv] f32,
                                the last d_conv inputs of each conv (0 before the start) */
    void *ssm_state;         /* device out, optional: [n_layer, B, d_inner, d_state] f32 */
    void *workspace;         /* ssmjit_model_workspace_size(B, L, mode) bytes, 256-byte aligned */
    size_t workspace_bytes;
} ssmjit_model_forward_args;

/* Prefill: runs B sequences of L tokens through the model, writing the
 * logits and, when asked, each layer's states after the last token (what
 * ssmjit_model_step continues from).  In a training mode the workspace
 * then holds what ssmjit_model_backward needs; it must not be touched in
 * between.  B = 0 or L = 0 writes nothing but zero states.
 * Errors: SSMJIT_ERR_INVALID_ARG naming the field (NULL model or args, an id
 * out of range with its position, both or neither of ids/embeds, a missing
 * or small workspace, last_only in a training mode); op and cuBLAS errors. */
SSMJIT_API ssmjit_status ssmjit_model_forward(ssmjit_model *model,
                                              const ssmjit_model_forward_args *args,
                                              void *stream);

typedef struct ssmjit_model_backward_args {
    size_t struct_size;
    void *logits;            /* device in/out [B, L, vocab]: the forward's logits, with
                                targets; overwritten by their gradient */
    const int32_t *targets;  /* host [B, L] ids, -100 = ignored: the loss is the mean
                                cross-entropy over the others (fused) */
    float *loss;             /* device out [1] f32 with targets, optional */
    const void *dlogits;     /* device [B, L, vocab], model's dtype: the loss's gradient,
                                used instead of targets (logits then unused) */
    void *d_embeds;          /* device out [B, L, d_model] model's dtype, optional: the
                                gradient of the forward's embeds (or of the embedding
                                lookup's output) */
} ssmjit_model_backward_args;

/* Training backward after ssmjit_model_forward in SSMJIT_MODEL_TRAIN or
 * _TRAIN_RECOMPUTE with the same workspace: writes the f32 gradient of
 * every weight (ssmjit_tensor_info.grad; overwritten, not accumulated).
 * Gradient buffers are allocated on the first call.  No float atomics:
 * bit-reproducible run to run.
 * Errors: SSMJIT_ERR_INVALID_ARG (no training forward before, both or
 * neither of targets/dlogits, a target out of range, all targets ignored);
 * op, cuBLAS and driver errors. */
SSMJIT_API ssmjit_status ssmjit_model_backward(ssmjit_model *model,
                                               const ssmjit_model_backward_args *args,
                                               void *stream);

/* Bytes of device workspace ssmjit_model_step needs for `batch` sequences. */
SSMJIT_API ssmjit_status ssmjit_model_step_workspace_size(const ssmjit_model *model,
                                                          int64_t batch, size_t *bytes);

typedef struct ssmjit_model_step_args {
    size_t struct_size;
    int64_t batch;           /* B */
    /* The ids come from host memory (ids, copied in with the step) or
     * from device memory (ids_device, read by the graph, so a step can
     * feed the previous step's next_ids without a round trip); exactly
     * one is set.  Both are int32 pointers in C, so the field's name
     * says which memory: the library cannot tell them apart, and a
     * pointer of the wrong kind is read as the wrong memory. */
    const int32_t *ids;      /* host [B], or NULL to read ids_device */
    const int32_t *ids_device; /* device [B] (e.g. the previous step's next_ids) */
    void *conv_state;        /* device [n_layer, B, d_inner, d_conv] f32, updated */
    void *ssm_state;         /* device [n_layer, B, d_inner, d_state] f32, updated */
    void *logits;            /* device out [B, vocab], model's dtype */
    int32_t *next_ids;       /* device out [B], optional: argmax of the logits (greedy;
                                the first maximum), or drawn by `sampling` */
    void *workspace;         /* ssmjit_model_step_workspace_size(B) bytes */
    size_t workspace_bytes;
    /* Sampling, optional (NULL: greedy): device [B] parameters, one per
     * sequence, and device [B] counters; needs next_ids.  Both are read
     * by the step on the device (a captured graph sees new values without
     * a host round trip), and each counter goes up by one a step. */
    const struct ssmjit_sampling *sampling;
    uint64_t *sampling_steps;
} ssmjit_model_step_args;

/* One sequence's sampling (in device memory, ssmjit_model_step_args):
 *  - greedy (the argmax) when temperature is not > 0 (NaN too), top_k is
 *    1, or the logits hold a NaN or +inf (none is then a probability);
 *  - else softmax(logits / temperature), restricted to the top_k most
 *    likely tokens (top_k <= 0: all; ties to the smaller id), then to
 *    the fewest of those, most likely first, whose probability reaches
 *    top_p of theirs (0 < top_p < 1; otherwise no cut; the most likely
 *    token always stays);
 *  - the token is drawn with one uniform number from Philox4x32-10 keyed
 *    by seed, its counter the sequence's step counter and its index in
 *    the batch: the same seed and counter give the same token, on any
 *    GPU, run after run.
 * The draw is computed in f32 with exact fixed-point sums; it can differ
 * from the exact distribution's only where the uniform number falls
 * within a few parts in a million of a boundary between two tokens. */
typedef struct ssmjit_sampling {
    float temperature;
    int32_t top_k;
    float top_p;
    uint32_t reserved;       /* 0 */
    uint64_t seed;
} ssmjit_sampling;

/* Decodes one token per sequence, updating the states in place (the
 * Hugging Face cache layout; zero states start a sequence, a forward's
 * states continue it).  The first call for a set of pointers and batch
 * runs the kernels directly and then captures them into a CUDA graph;
 * later calls with the same pointers launch that graph (after copying host
 * ids, if given, into the workspace).  Allocates no device memory but the
 * graph's.  Errors: as ssmjit_model_forward. */
SSMJIT_API ssmjit_status ssmjit_model_step(ssmjit_model *model,
                                           const ssmjit_model_step_args *args, void *stream);

/* ------------------------------------------------------------------------ */
/* Tokenizer (CPU only, no context needed)                                  */
/* ------------------------------------------------------------------------ */

/* A byte-level BPE tokenizer read from a Hugging Face tokenizer.json of
 * the GPT-2 / GPT-NeoX kind (the one the state-spaces Mamba checkpoints
 * ship), giving the ids Hugging Face's tokenizers give without special
 * tokens added by a post-processor (this kind adds none).  Immutable once
 * loaded: one tokenizer may encode and decode from several threads at
 * once. */
typedef struct ssmjit_tokenizer ssmjit_tokenizer;

/* Reads `path`, a tokenizer.json file or a directory holding one.  What is
 * supported: model BPE (vocab; merges as "a b" strings or ["a", "b"]
 * pairs; ignore_merges; no dropout, byte_fallback, continuing_subword_prefix
 * or end_of_word_suffix), normalizer NFC or none, pre_tokenizer ByteLevel
 * (add_prefix_space, use_regex), decoder ByteLevel, post_processor
 * ByteLevel or none, no truncation or padding, and added_tokens with
 * normalized, lstrip, rstrip and special (single_word is not supported).
 * The vocab must hold a token for each of the 256 bytes, and ids are below
 * 2^24.  Errors: SSMJIT_ERR_INVALID_ARG for NULL arguments or a malformed
 * file (the message names the file and the field, or the JSON error's byte,
 * line and column); SSMJIT_ERR_UNSUPPORTED for a well-formed file using
 * something not in the list above (naming it); SSMJIT_ERR_IO when the file
 * cannot be read; SSMJIT_ERR_NO_MEMORY.  On failure *out is NULL. */
SSMJIT_API ssmjit_status ssmjit_tokenizer_load(const char *path, ssmjit_tokenizer **out);

/* Frees a tokenizer.  NULL is a no-op. */
SSMJIT_API void ssmjit_tokenizer_destroy(ssmjit_tokenizer *tok);

/* One more than the highest id of the vocab and added tokens (every id a
 * decode accepts is below it; ids without a token may lie between).  0 for
 * NULL. */
SSMJIT_API int64_t ssmjit_tokenizer_vocab_size(const ssmjit_tokenizer *tok);

/* Encodes text[0..len) (UTF-8; need not be NUL-terminated, and may hold
 * NUL) as Hugging Face does: the added tokens are split out of the raw text
 * first (leftmost, longest first; those marked normalized are matched in
 * the normalized text instead), the rest is put in NFC, split by the GPT-2
 * regex and merged by BPE.  Writes the ids to ids[0..cap) and sets *n to
 * how many the text has, also when they do not fit: ids = NULL with
 * cap = 0 asks for the count (failing as below unless it is 0).
 * Errors: SSMJIT_ERR_INVALID_ARG for a NULL argument (text may be NULL
 * when len is 0), text that is not UTF-8 (the message gives the byte
 * offset; *n untouched), or more ids than cap (then ids[0..cap) are
 * written and *n says how many are needed); SSMJIT_ERR_NO_MEMORY. */
SSMJIT_API ssmjit_status ssmjit_tokenizer_encode(const ssmjit_tokenizer *tok, const char *text,
                                                 size_t len, int32_t *ids, size_t cap, size_t *n);

/* Decodes ids[0..n) into text[0..cap) as Hugging Face's ByteLevel decoder
 * does (without skipping special tokens or cleaning up spaces): an added
 * token gives its content; the bytes of each run of other tokens are read
 * as UTF-8 where every byte sequence that is not UTF-8 (a character split
 * between the ids given and ids left out, say) becomes one U+FFFD per
 * maximal subpart, as TextDecoder and from_utf8_lossy do.  The text is
 * NUL-terminated; *len is set to its length without the NUL, also when it
 * does not fit: text = NULL with cap = 0 asks for the size (failing as
 * below; cap must be *len + 1).  Errors: SSMJIT_ERR_INVALID_ARG for a NULL
 * argument (ids may be NULL when n is 0), an id no token has (naming its
 * index; nothing written, *len untouched), or a cap too small (then
 * text[0..cap) may be written); SSMJIT_ERR_NO_MEMORY. */
SSMJIT_API ssmjit_status ssmjit_tokenizer_decode(const ssmjit_tokenizer *tok, const int32_t *ids,
                                                 size_t n, char *text, size_t cap, size_t *len);

#ifdef __cplusplus
}
#endif

#endif /* SSMJIT_H */
