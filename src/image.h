/* Module images for contexts: from this process's memory, the disk cache,
 * or NVRTC, with one producer per key in the process however many threads
 * (or contexts) ask at once. */
#ifndef SSMJIT_IMAGE_H
#define SSMJIT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "compile.h"
#include "ssmjit.h"

typedef struct sj_cache_config {
    const char *dir;         /* resolved directory */
    ssmjit_cache_mode mode;  /* RW, RO or OFF (resolved) */
    int quiet;
    uint64_t max_bytes;      /* size cap for writes (sj_cache_max_bytes), 0: none */
} sj_cache_config;

/* The image of module m for spec.  *image stays valid for the life of the
 * process (images are kept in memory, which also covers a cache that
 * cannot be written, and one not trusted: sj_cache_mode_usable).  The
 * toolchain in *tc is updated if the NVRTC that compiles turns out to
 * differ from the cached probe record. */
ssmjit_status sj_image_get(const sj_embedded_module *m, const sj_compile_spec *spec,
                           const sj_cache_config *cache, const void **image, size_t *size);

#endif
