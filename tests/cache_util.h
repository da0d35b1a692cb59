/* Synthetic cache entries for tests that need many of them and no NVRTC.
 * Entry i has a key made from i; its payload's bytes are made from the key,
 * so every file the reader accepts can be checked byte for byte. */
#ifndef SSMJIT_CACHE_UTIL_H
#define SSMJIT_CACHE_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "ssmjit.h"

void cu_key(unsigned i, uint8_t key[32]);

/* Path of key's entry under dir (label "unit", target sm_90, NVRTC 13.0,
 * CUBIN). */
void cu_path(const char *dir, const uint8_t key[32], char *path, size_t cap);

/* The same for an entry named for `label` (a kernel) and `target`. */
void cu_path_named(const char *dir, const uint8_t key[32], const char *label, const char *target, char *path,
                   size_t cap);

/* Stores entry i with a payload of `size` bytes (sj_cache_store). */
ssmjit_status cu_store(const char *dir, uint64_t max_bytes, unsigned i, size_t size);

/* The same, named for `label` and `target` (cu_path_named). */
ssmjit_status cu_store_named(const char *dir, uint64_t max_bytes, unsigned i, size_t size, const char *label,
                             const char *target);

/* Writes entry i (up to 4096 payload bytes) as cu_store_named would, but
 * with sj_cache_entry_write alone: no housekeeping walk after it, so that
 * tests can fill a large cache quickly.  Its path goes to path. */
void cu_write_named(const char *dir, unsigned i, size_t size, const char *label, const char *target, char *path,
                    size_t cap);

/* 1 when the reader accepts the entry at path (named for its key) and its
 * payload is exactly what cu_store wrote, 0 when the reader refuses it;
 * fails the test when the reader accepts wrong bytes.  *size gets the
 * payload size. */
int cu_entry_good(const char *path, const char *name, size_t *size);

typedef struct {
    size_t entries, temps;
    uint64_t bytes; /* file bytes of the entries */
} cu_census;

/* Checks every file under dir: every entry must be good (cu_entry_good)
 * and ssmjit_cache_verify must count the same entries, no bad ones and the
 * same temp files (so no temp file passes for an entry). */
cu_census cu_check_all(const char *dir);

/* Sets the mtime of path to `age` seconds ago. */
void cu_age(const char *path, double age);

/* mtime of path, in seconds since the epoch. */
double cu_mtime(const char *path);

#endif
