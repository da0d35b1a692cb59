/* The on-disk CUBIN cache.
 *
 * Layout: <dir>/<k0k1>/<k2k3>/<64-hex key>-<sm_90|compute_90>-nvrtc<M.m>.<cubin|ptx>
 * where k0..k3 are the key's first hex digits.  Each entry is a 64-byte
 * header (magic, format version, payload kind, key, payload length, payload
 * checksum; little-endian) followed by the payload.  Entries are written to
 * a temp file in the same directory and renamed into place, so readers need
 * no lock; a bad entry is a miss and is replaced. */
#ifndef SSMJIT_CACHE_H
#define SSMJIT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "ssmjit.h"

#define SJ_ENTRY_HEADER_SIZE 64
#define SJ_ENTRY_MAGIC "SSMJITC1"

/* Effective directory: explicit dir, else SSMJIT_CACHE_DIR, else
 * $XDG_CACHE_HOME/ssmjit, else $HOME/.cache/ssmjit. */
ssmjit_status sj_cache_dir_resolve(const char *dir, char *out, size_t cap);

/* Effective mode: SSMJIT_CACHE=rw|ro|off overrides `requested`; DEFAULT
 * becomes RW.  SSMJIT_ERR_INVALID_ARG for another SSMJIT_CACHE value. */
ssmjit_status sj_cache_mode_resolve(ssmjit_cache_mode requested, ssmjit_cache_mode *out);

/* Path of the entry for key / target into out. */
int sj_cache_entry_path(const char *dir, const uint8_t key[32], const char *target, int nvrtc_major,
                        int nvrtc_minor, int ptx, char *out, size_t cap);

/* Reads and verifies an entry.  SSMJIT_OK with a malloc'd *payload (PTX is
 * NUL-terminated) only if the header, key and checksum all match; any other
 * result is a miss (the reason is in the thread's error message). */
ssmjit_status sj_cache_entry_read(const char *path, const uint8_t key[32], int ptx, void **payload,
                                  size_t *size);

/* Checks the file at path on its own (key from its header): for verify.
 * key_out (may be NULL) receives the header's key. */
ssmjit_status sj_cache_entry_check(const char *path, uint8_t key_out[32]);

/* Writes an entry atomically, creating its directories (0700). */
ssmjit_status sj_cache_entry_write(const char *path, const uint8_t key[32], int ptx,
                                   const void *payload, size_t size);

/* 64-bit checksum of the payload (fast; catches truncation and flips). */
uint64_t sj_checksum64(const void *data, size_t len);

/* Writes one warning to stderr the first time the cache directory cannot
 * be written in this process, unless quiet. */
void sj_cache_warn_once(int quiet, const char *why);

#endif
