#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "base/error.h"
#include "base/fileio.h"

/* Header layout (little-endian):
 *   0  magic "SSMJITC1"      8 bytes
 *   8  format version        u32
 *  12  payload kind          u32 (0 CUBIN, 1 PTX)
 *  16  key                   32 bytes
 *  48  payload length        u64
 *  56  payload checksum      u64 (sj_checksum64) */

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* A word-at-a-time multiply-xorshift hash: several GB/s, so verifying a
 * warm entry costs microseconds, and any truncation or flipped bit changes
 * it with overwhelming probability.  Not a defence against tampering: the
 * cache directory must be the user's own and writable by no one else
 * (sj_cache_dir_check). */
uint64_t sj_checksum64(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)len;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        p += 8;
        len -= 8;
    }
    uint64_t tail = 0;
    memcpy(&tail, p, len);
    h = (h ^ tail ^ ((uint64_t)len << 56)) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

/* Validates a whole entry held in memory; NULL if good, else why not. */
static const char *entry_problem(const uint8_t *buf, size_t len, const uint8_t *want_key, int want_ptx)
{
    if (len < SJ_ENTRY_HEADER_SIZE)
        return "shorter than the entry header";
    if (memcmp(buf, SJ_ENTRY_MAGIC, 8))
        return "bad magic";
    if (get_u32(buf + 8) != SJ_CACHE_FORMAT_VERSION)
        return "another cache format version";
    uint32_t kind = get_u32(buf + 12);
    if (kind > 1 || (want_ptx >= 0 && kind != (uint32_t)want_ptx))
        return "wrong payload kind";
    if (want_key && memcmp(buf + 16, want_key, 32))
        return "key does not match";
    if (get_u64(buf + 48) != len - SJ_ENTRY_HEADER_SIZE)
        return "payload length does not match the file size";
    if (get_u64(buf + 56) != sj_checksum64(buf + SJ_ENTRY_HEADER_SIZE, len - SJ_ENTRY_HEADER_SIZE))
        return "payload checksum mismatch";
    if (kind == 1 && (len == SJ_ENTRY_HEADER_SIZE || buf[len - 1] != '\0'))
        return "PTX payload not NUL-terminated";
    return NULL;
}

ssmjit_status sj_cache_entry_read(const char *path, const uint8_t key[32], int ptx, int record_use,
                                  void **payload, size_t *size)
{
    char *buf;
    size_t len;
    ssmjit_status st = sj_read_file(path, SJ_LINKS_REFUSE, &buf, &len);
    if (st != SSMJIT_OK)
        return st;
    const char *why = entry_problem((const uint8_t *)buf, len, key, ptx);
    if (why) {
        free(buf);
        return sj_error(SSMJIT_ERR_IO, "cache entry '%s' rejected: %s", path, why);
    }
    /* By path, not through the descriptor read: should a writer have
     * renamed a fresh copy of the entry into place meanwhile, marking that
     * copy used is just as right. */
    if (record_use)
        (void)utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW);
    *size = len - SJ_ENTRY_HEADER_SIZE;
    memmove(buf, buf + SJ_ENTRY_HEADER_SIZE, *size);
    *payload = buf;
    return SSMJIT_OK;
}

ssmjit_status sj_cache_entry_check(const char *path, uint8_t key_out[32])
{
    char *buf;
    size_t len;
    ssmjit_status st = sj_read_file(path, SJ_LINKS_REFUSE, &buf, &len);
    if (st != SSMJIT_OK)
        return st;
    const char *why = entry_problem((const uint8_t *)buf, len, NULL, -1);
    if (!why && key_out)
        memcpy(key_out, buf + 16, 32);
    free(buf);
    return why ? sj_error(SSMJIT_ERR_IO, "cache entry '%s' is bad: %s", path, why) : SSMJIT_OK;
}

ssmjit_status sj_cache_entry_write(const char *path, const uint8_t key[32], int ptx,
                                   const void *payload, size_t size)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash || (size_t)(slash - path) >= sizeof dir)
        return sj_error(SSMJIT_ERR_IO, "bad cache entry path '%s'", path);
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = '\0';
    ssmjit_status st = sj_mkdirs(dir);
    if (st != SSMJIT_OK)
        return st;
    uint8_t header[SJ_ENTRY_HEADER_SIZE];
    memcpy(header, SJ_ENTRY_MAGIC, 8);
    put_u32(header + 8, SJ_CACHE_FORMAT_VERSION);
    put_u32(header + 12, ptx ? 1u : 0u);
    memcpy(header + 16, key, 32);
    put_u64(header + 48, size);
    put_u64(header + 56, sj_checksum64(payload, size));
    return sj_write_atomic(path, header, sizeof header, payload, size);
}
