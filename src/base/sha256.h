/* SHA-256 (FIPS 180-4): cache keys, and what identifies an NVRTC build
 * (its probe's hash, the name of its toolchain record). */
#ifndef SSMJIT_SHA256_H
#define SSMJIT_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct sj_sha256 {
    uint32_t state[8];
    uint64_t bytes;
    uint8_t block[64];
    size_t fill;
} sj_sha256;

void sj_sha256_init(sj_sha256 *h);
void sj_sha256_update(sj_sha256 *h, const void *data, size_t len);
void sj_sha256_final(sj_sha256 *h, uint8_t digest[32]);

/* Adds a length-prefixed field, so that ("ab","c") and ("a","bc") differ. */
void sj_sha256_field(sj_sha256 *h, const void *data, size_t len);

/* Lower-case hex of a digest into out[65]. */
void sj_hex(const uint8_t *bytes, size_t n, char *out);

#endif
