/* From a compile unit (one kernel of an embedded module) and a target to
 * the unit's program text, its NVRTC options, its cache key, and the
 * compiled image. */
#ifndef SSMJIT_COMPILE_H
#define SSMJIT_COMPILE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels_embedded.h"
#include "cuda/nvrtc_loader.h"
#include "ssmjit.h"

typedef struct sj_compile_spec {
    int arch;      /* 75, 80, 90, ... */
    int ptx;       /* 1: PTX for compute_<arch>, 0: CUBIN for sm_<arch> */
    int fast_math;
    int lineinfo;
    const char *const *defines; /* normalised: sorted, no duplicates (sj_defines_normalize) */
    size_t num_defines;
} sj_compile_spec;

/* Room for every option sj_compile_options makes. */
#define SJ_MAX_OPTIONS 72

/* Copies defines, sorted and without duplicates, into one malloc'd block
 * (*out, free with free()).  Rejects NULL, empty and whitespace-containing
 * entries with SSMJIT_ERR_INVALID_ARG. */
ssmjit_status sj_defines_normalize(const char *const *defines, size_t n, char ***out, size_t *out_n);

/* Specs made at run time (a context's spec with a caller's defines
 * added, special.c), each kept once for its set of defines until the set
 * is freed, since the compile jobs queued with one point at it. */
typedef struct sj_spec_set {
    pthread_mutex_t lock;
    struct sj_spec_entry *head;
} sj_spec_set;

void sj_spec_set_init(sj_spec_set *set);

/* The set's spec equal to base (whose defines are normalised) with
 * `defines` added and normalised: made on the first ask, the same pointer
 * after.  Errors as sj_defines_normalize's, or out of memory. */
ssmjit_status sj_spec_set_get(sj_spec_set *set, const sj_compile_spec *base, const char *const *defines,
                              size_t num_defines, const sj_compile_spec **out);

/* Frees every spec of the set and its lock. */
void sj_spec_set_free(sj_spec_set *set);

/* The NVRTC options for spec: exactly what NVRTC receives and what the key
 * hashes, in that order.  Writes at most `cap` pointers into opts (to
 * static strings or into buf). */
int sj_compile_options(const sj_compile_spec *spec, const char **opts, int cap, char *buf,
                       size_t buf_len);

/* Unit u's program: it selects the unit's kernel (SJ_UNIT_<kernel>, see
 * kernels_src/ssmjit_types.cuh) and includes its module.  Returns the
 * length written (NUL-terminated), or -1 if it does not fit in cap. */
int sj_unit_text(size_t u, char *buf, size_t cap);

/* The unit of kernel `name` in module `mod`, or -1. */
int sj_unit_find(sj_module_id mod, const char *name);

/* SHA-256 of module m's name, source and every header it includes (names
 * and texts), each field length-prefixed: what the build stores in
 * m->digest. */
void sj_module_digest(const sj_embedded_module *m, uint8_t digest[32]);

/* SHA-256 over the cache format version, library version, the module's
 * text (its digest), the unit's program text, every option, target arch and
 * kind, and the NVRTC version and build probe. */
void sj_compile_key(size_t u, const sj_compile_spec *spec, const sj_toolchain *tc, uint8_t key[32]);

/* sj_compile_key from its parts, each given, so tests can show that every
 * one of them changes the key. */
void sj_compile_key_of(const uint8_t module_digest[32], const char *unit_text, const sj_compile_spec *spec,
                       const sj_toolchain *tc, unsigned format, const char *library, uint8_t key[32]);

/* Compiles unit u for spec (NVRTC needed).  *image is malloc'd. */
ssmjit_status sj_compile_unit(size_t u, const sj_compile_spec *spec, void **image, size_t *size);

#endif
