/* What identifies the compiler in a cache key, from NVRTC or from the
 * record a previous process left in the cache. */
#ifndef SSMJIT_TOOLCHAIN_H
#define SSMJIT_TOOLCHAIN_H

#include "cache/cache.h"
#include "cuda/nvrtc_loader.h"

/* The toolchain of the NVRTC that would be loaded: from the process's memo,
 * else from a record in c's directories (c may be NULL: none) that is still
 * valid for the library file it describes, else by opening and probing
 * NVRTC (the result is then recorded in c's user cache when read-write).
 * `confirmed` nonzero forces the real library to be opened and probed. */
ssmjit_status sj_toolchain_get(const sj_cache_config *c, int confirmed, sj_toolchain *out);

/* Nonzero when a and b describe the same compiler. */
int sj_toolchain_equal(const sj_toolchain *a, const sj_toolchain *b);

/* Largest supported arch <= want, or 0 if none. */
int sj_toolchain_cap(const sj_toolchain *tc, int want);

#endif
