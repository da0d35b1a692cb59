/* The on-disk cache of compiled units (CUBIN or PTX).
 *
 * Layout: <dir>/<k0k1>/<k2k3>/<64-hex key>-<label>-<sm_90|compute_90>-nvrtc<M.m>.<cubin|ptx>
 * where k0..k3 are the key's first hex digits and the label names the
 * kernel the entry holds.  Each entry is a 64-byte
 * header (magic, format version, payload kind, key, payload length, payload
 * checksum; little-endian) followed by the payload.  Entries are written to
 * a temp file in the same directory and renamed into place, so readers need
 * no lock; a bad entry is a miss and is replaced.  An entry's mtime records
 * its last use (set on every hit: atime is often not kept), which is the
 * order in which entries are evicted to keep the cache under its size cap;
 * no process holds a lock for that either. */
#ifndef SSMJIT_CACHE_H
#define SSMJIT_CACHE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "ssmjit.h"

/* Version of the entry format and of what keys cover; part of every key.
 * 2: one entry per kernel (compile unit), its name in the file name. */
#define SJ_CACHE_FORMAT_VERSION 2u

#define SJ_ENTRY_HEADER_SIZE 64
#define SJ_ENTRY_MAGIC "SSMJITC1"

/* Read-only layers searched after the user's cache (SSMJIT_CACHE_PATH, then
 * the layer installed with the library). */
#define SJ_CACHE_MAX_LAYERS 8

/* What a context (or a prewarm) reads and writes, resolved once from its
 * options and the environment and then handed down: the user's cache
 * (read-write, read-only or off) and the read-only layers behind it. */
typedef struct sj_cache_config {
    ssmjit_cache_mode mode; /* of the user's cache: RW, RO or OFF (no disk at all) */
    char dir[PATH_MAX];     /* the user's cache ("" when off) */
    int quiet;              /* no warnings */
    uint64_t max_bytes;     /* size cap of the user's cache (sj_cache_max_bytes), 0: none */
    size_t num_layers;
    char layers[SJ_CACHE_MAX_LAYERS][PATH_MAX];
} sj_cache_config;

/* The name of one entry: its key and what it was compiled for.  label
 * names what it holds (a kernel), for people listing the cache. */
typedef struct sj_cache_entry_id {
    uint8_t key[32];
    const char *label;  /* [A-Za-z0-9_]+ */
    const char *target; /* "sm_90", "compute_90" */
    int nvrtc_major, nvrtc_minor;
    int ptx;
} sj_cache_entry_id;

/* Default size cap (SSMJIT_CACHE_MAX_BYTES): 1 GiB. */
#define SJ_CACHE_DEFAULT_MAX_BYTES (1ull << 30)

/* A temp file this old belongs to a writer that died: a live one renames
 * its temp within seconds of creating it.  An hour leaves room for a slow
 * disk and for clock skew between the hosts of a network file system. */
#define SJ_TEMP_STALE_SECONDS 3600

/* Effective directory: explicit dir, else SSMJIT_CACHE_DIR, else
 * $XDG_CACHE_HOME/ssmjit, else $HOME/.cache/ssmjit. */
ssmjit_status sj_cache_dir_resolve(const char *dir, char *out, size_t cap);

/* Effective mode: SSMJIT_CACHE=rw|ro|off overrides `requested`; DEFAULT
 * becomes RW.  SSMJIT_ERR_INVALID_ARG for another SSMJIT_CACHE value. */
ssmjit_status sj_cache_mode_resolve(ssmjit_cache_mode requested, ssmjit_cache_mode *out);

/* The size cap from SSMJIT_CACHE_MAX_BYTES (unset or empty: the default;
 * 0: no cap).  SSMJIT_ERR_INVALID_ARG for a value that is not a byte count. */
ssmjit_status sj_cache_max_bytes(uint64_t *out);

/* SSMJIT_OK if entries may be loaded from dir: it does not exist (whoever
 * creates it makes it 0700), or it is a directory owned by the effective
 * user or root that neither group nor others may write.  Otherwise
 * SSMJIT_ERR_IO says why: anyone else who can write there could plant
 * entries. */
ssmjit_status sj_cache_dir_check(const char *dir);

/* `mode`, or OFF (memory only, after the one warning unless quiet) when
 * mode uses dir and sj_cache_dir_check refuses it.  Checked at every use,
 * not once, so a directory made by someone else later is refused too. */
ssmjit_cache_mode sj_cache_mode_usable(const char *dir, ssmjit_cache_mode mode, int quiet);

/* Builds *c: mode from `requested` and SSMJIT_CACHE, the user's directory
 * from `dir` and the environment (sj_cache_dir_resolve, unless off), the
 * cap from SSMJIT_CACHE_MAX_BYTES, and unless off the read-only layers:
 * each directory of SSMJIT_CACHE_PATH (colon-separated), then the one
 * installed with the library.  A layer that is missing, a symlink, or not
 * trusted (sj_cache_dir_check) is left out with one warning per path and
 * process (unless quiet); a missing installed layer silently.
 * SSMJIT_ERR_INVALID_ARG for a bad mode, SSMJIT_CACHE or cap. */
ssmjit_status sj_cache_config_init(sj_cache_config *c, const char *dir, ssmjit_cache_mode requested,
                                   int quiet);

/* The mode of the user's cache right now: OFF (after the one warning)
 * when its directory fails sj_cache_dir_check. */
ssmjit_cache_mode sj_cache_config_mode(const sj_cache_config *c);

/* Finds an entry: the user's cache first (unless off; a hit in read-write
 * mode records its use), then each layer in order, never writing to a
 * layer.  SSMJIT_OK with a malloc'd *payload as sj_cache_entry_read gives
 * it; *layer (may be NULL) is -1 for the user's cache, else the layer's
 * index.  Any other status is a miss. */
ssmjit_status sj_cache_lookup(const sj_cache_config *c, const sj_cache_entry_id *id, void **payload,
                              size_t *size, int *layer);

/* Stores an entry in the user's cache (sj_cache_store) when its mode is
 * read-write; SSMJIT_OK without writing when it is not.  SSMJIT_ERR_IO
 * when the write failed (the caller decides whether that is fatal). */
ssmjit_status sj_cache_put(const sj_cache_config *c, const sj_cache_entry_id *id, const void *payload,
                           size_t size);

/* Path of entry id under dir into out: -1 if it does not fit. */
int sj_cache_entry_path(const char *dir, const sj_cache_entry_id *id, char *out, size_t cap);

/* Reads and verifies an entry (a symlink is refused).  SSMJIT_OK with a
 * malloc'd *payload (PTX is NUL-terminated) only if the header, key and
 * checksum all match; any other result is a miss (the reason is in the
 * thread's error message).  record_use nonzero sets a good entry's mtime
 * to now, its use for eviction; failing to (a read-only disk) is no error. */
ssmjit_status sj_cache_entry_read(const char *path, const uint8_t key[32], int ptx, int record_use,
                                  void **payload, size_t *size);

/* Checks the file at path on its own (key from its header): for verify.
 * key_out (may be NULL) receives the header's key. */
ssmjit_status sj_cache_entry_check(const char *path, uint8_t key_out[32]);

/* Writes an entry atomically, creating its directories (0700). */
ssmjit_status sj_cache_entry_write(const char *path, const uint8_t key[32], int ptx,
                                   const void *payload, size_t size);

/* Stores an entry of the cache under dir at path (sj_cache_entry_write),
 * then does the housekeeping every writer does: removes temp files older
 * than SJ_TEMP_STALE_SECONDS, and while the entries add up to more than
 * max_bytes (0: no cap) removes the least recently used ones other than
 * the one just stored.  An entry larger than max_bytes on its own is not
 * written (SSMJIT_ERR_IO).  Housekeeping failures are ignored: entries that
 * vanish under another writer's eviction are simply gone. */
ssmjit_status sj_cache_store(const char *dir, uint64_t max_bytes, const char *path,
                             const uint8_t key[32], int ptx, const void *payload, size_t size);

/* Walks the cache under dir: calls visit for every file in the hash-prefix
 * directories <dir>/<2 hex>/<2 hex>/ with prefix = the four hex digits they
 * spell, and for every file directly in dir with prefix = NULL.  Names
 * starting with '.' are skipped, except temp files.  prune removes the
 * prefix directories left empty (only for clear: a writer may be about to
 * use an empty one).  -1 with errno when dir exists but cannot be opened;
 * deeper directories that cannot be opened are skipped. */
typedef void (*sj_cache_visit_fn)(const char *path, const char *name, const char *prefix, void *arg);
int sj_cache_walk(const char *dir, sj_cache_visit_fn visit, void *arg, int prune);

/* Names ssmjit gives entries (<64 hex>-<label>-<target>-nvrtc<M.m>.cubin|ptx)
 * and temp files. */
int sj_cache_is_entry_name(const char *name);
int sj_cache_is_temp_name(const char *name);

/* 64-bit checksum of the payload (fast; catches truncation and flips). */
uint64_t sj_checksum64(const void *data, size_t len);

/* Writes one warning to stderr the first time in this process that the
 * cache directory cannot be written or is not trusted, unless quiet (or
 * SSMJIT_QUIET=1); why says which. */
void sj_cache_warn_once(int quiet, const char *why);

#endif
