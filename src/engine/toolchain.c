/* The toolchain record: what a cache key needs from NVRTC (version, a
 * build marker, the supported architectures), kept in the cache.
 *
 * Opening NVRTC costs about 10 ms (a 100 MB library) and probing it more,
 * longer than a whole warm start, so the probe's result is recorded in the
 * cache directory together with the identity of the library file it was
 * read from.  A record is trusted only while that file, the ld.so cache,
 * and the search variables (SSMJIT_NVRTC_PATH, LD_LIBRARY_PATH) are
 * unchanged; whenever a unit must really be compiled, the loaded library is
 * checked against it (sj_toolchain_get with confirmed = 1).  Records are
 * read from the user's cache, then from the read-only layers (an installed
 * layer carries the record of the NVRTC that filled it), and written only
 * to the user's cache. */
#include "toolchain.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/fileio.h"
#include "base/sha256.h"

typedef struct {
    char path[4096];
    long long dev, ino, size, mtime_ns, ldcache_ns;
} lib_identity;

static int identify(const char *path, lib_identity *id)
{
    struct stat st, lc;
    if (stat(path, &st) != 0)
        return -1;
    snprintf(id->path, sizeof id->path, "%s", path);
    id->dev = (long long)st.st_dev;
    id->ino = (long long)st.st_ino;
    id->size = (long long)st.st_size;
    id->mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    id->ldcache_ns = stat("/etc/ld.so.cache", &lc) == 0
                         ? (long long)lc.st_mtim.tv_sec * 1000000000LL + lc.st_mtim.tv_nsec
                         : 0;
    return 0;
}

/* The record's name depends on the variables that steer dlopen's search, so
 * a process with another search path never trusts this one's record. */
static int record_path(const char *dir, char *out, size_t cap)
{
    const char *forced = getenv("SSMJIT_NVRTC_PATH"), *ld = getenv("LD_LIBRARY_PATH");
    sj_sha256 h;
    uint8_t digest[32];
    char hex[65];
    sj_sha256_init(&h);
    sj_sha256_field(&h, forced ? forced : "", forced ? strlen(forced) : 0);
    sj_sha256_field(&h, ld ? ld : "", ld ? strlen(ld) : 0);
    sj_sha256_final(&h, digest);
    sj_hex(digest, 8, hex);
    int n = snprintf(out, cap, "%s/toolchain-%s", dir, hex);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

static int read_record(const char *file, sj_toolchain *tc, lib_identity *id)
{
    char *text;
    size_t len;
    if (sj_read_file(file, SJ_LINKS_REFUSE, &text, &len) != SSMJIT_OK)
        return -1;
    memset(tc, 0, sizeof *tc);
    char archs[512] = "";
    int fields = sscanf(text,
                        "ssmjit-toolchain 1\npath %4095[^\n]\nid %lld %lld %lld %lld %lld\n"
                        "nvrtc %d %d %ld\nprobe %64s\narchs %511s\n",
                        id->path, &id->dev, &id->ino, &id->size, &id->mtime_ns, &id->ldcache_ns,
                        &tc->major, &tc->minor, &tc->build, tc->probe_hash, archs);
    free(text);
    if (fields != 11 || strlen(tc->probe_hash) != 64)
        return -1;
    for (char *p = archs; *p && tc->num_archs < SJ_MAX_ARCHS;) {
        char *end;
        long a = strtol(p, &end, 10);
        if (end == p || a <= 0)
            return -1;
        tc->archs[tc->num_archs++] = (int)a;
        p = *end == ',' ? end + 1 : end;
    }
    return tc->num_archs > 0 ? 0 : -1;
}

static void write_record(const char *dir, const char *file, const sj_toolchain *tc,
                         const lib_identity *id)
{
    char text[8192];
    int n = snprintf(text, sizeof text,
                     "ssmjit-toolchain 1\npath %s\nid %lld %lld %lld %lld %lld\nnvrtc %d %d %ld\n"
                     "probe %s\narchs ",
                     id->path, id->dev, id->ino, id->size, id->mtime_ns, id->ldcache_ns, tc->major,
                     tc->minor, tc->build, tc->probe_hash);
    for (int i = 0; i < tc->num_archs && n > 0 && (size_t)n < sizeof text - 16; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "%s%d", i ? "," : "", tc->archs[i]);
    if (n <= 0 || (size_t)n >= sizeof text - 2)
        return;
    text[n++] = '\n';
    /* A record that cannot be written only costs the next process a probe. */
    if (sj_mkdirs(dir) != SSMJIT_OK || sj_write_atomic(file, text, (size_t)n, NULL, 0) != SSMJIT_OK)
        sj_error_clear();
}

static pthread_mutex_t tc_lock = PTHREAD_MUTEX_INITIALIZER;
static sj_toolchain tc_memo;
static lib_identity tc_identity; /* of the library tc_memo describes */
static int tc_state; /* 0: unknown, 1: from a record, 2: probed from the loaded library */

static int same_identity(const lib_identity *a, const lib_identity *b)
{
    return !strcmp(a->path, b->path) && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns && a->ldcache_ns == b->ldcache_ns;
}

/* Path of the record in dir, when it fits. */
static int record_in(const char *dir, char *out, size_t cap)
{
    return dir && *dir && record_path(dir, out, cap) == 0;
}

/* The first record of c's directories (the user's cache, then the layers)
 * that still describes the library it names. */
static int find_record(const sj_cache_config *c, sj_toolchain *tc, lib_identity *id)
{
    char file[PATH_MAX];
    lib_identity actual;
    if (!c || c->mode == SSMJIT_CACHE_OFF)
        return -1;
    for (int i = sj_cache_config_mode(c) == SSMJIT_CACHE_OFF ? 0 : -1; i < (int)c->num_layers; i++)
        if (record_in(i < 0 ? c->dir : c->layers[i], file, sizeof file) && read_record(file, tc, id) == 0 &&
            identify(id->path, &actual) == 0 && same_identity(id, &actual))
            return 0;
    return -1;
}

/* A record in the user's cache, when it is read-write: the next process
 * then starts from it without opening NVRTC.  `always`: replace one that
 * is there. */
static char kept_in[PATH_MAX]; /* a user's cache known to hold the memo's record */

static void keep_record(const sj_cache_config *c, int always)
{
    char file[PATH_MAX];
    /* Asked at every unit's lookup: a directory seen to hold the record
     * is not asked about it again. */
    if (!c || !tc_identity.path[0] || c->mode != SSMJIT_CACHE_RW || (!always && !strcmp(kept_in, c->dir)) ||
        !record_in(c->dir, file, sizeof file))
        return;
    if ((always || access(file, F_OK) != 0) && sj_cache_config_mode(c) == SSMJIT_CACHE_RW)
        write_record(c->dir, file, &tc_memo, &tc_identity);
    if (access(file, F_OK) == 0)
        snprintf(kept_in, sizeof kept_in, "%s", c->dir);
}

/* A child of fork() must not find the lock held by a thread it does not
 * have. */
static void lock_tc(void) { pthread_mutex_lock(&tc_lock); }
static void unlock_tc(void) { pthread_mutex_unlock(&tc_lock); }
static void install_fork_hooks(void) { pthread_atfork(lock_tc, unlock_tc, unlock_tc); }
static pthread_once_t fork_hooks_once = PTHREAD_ONCE_INIT;

ssmjit_status sj_toolchain_get(const sj_cache_config *c, int confirmed, sj_toolchain *out)
{
    ssmjit_status st = SSMJIT_OK;
    lib_identity recorded;
    sj_toolchain from_record;
    pthread_once(&fork_hooks_once, install_fork_hooks);
    pthread_mutex_lock(&tc_lock);
    if (tc_state == 2 || (tc_state == 1 && !confirmed)) {
        /* Known already (from another directory, say): give this one a
         * record too.  Only its existence is checked: this runs at every
         * context's first compile or load. */
        keep_record(c, 0);
        goto done;
    }
    int record_ok = find_record(c, &from_record, &recorded) == 0;
    if (!confirmed && record_ok) {
        tc_memo = from_record;
        tc_identity = recorded;
        tc_state = 1;
        goto done;
    }
    const sj_nvrtc *n;
    st = sj_nvrtc_get(&n);
    if (st == SSMJIT_OK)
        st = sj_nvrtc_probe(&tc_memo);
    if (st != SSMJIT_OK)
        goto done;
    tc_state = 2;
    if (identify(n->path, &tc_identity) != 0)
        memset(&tc_identity, 0, sizeof tc_identity);
    keep_record(c, !(record_ok && same_identity(&recorded, &tc_identity) && sj_toolchain_equal(&from_record, &tc_memo)));
done:
    if (st == SSMJIT_OK)
        *out = tc_memo;
    pthread_mutex_unlock(&tc_lock);
    return st;
}

int sj_toolchain_equal(const sj_toolchain *a, const sj_toolchain *b)
{
    return a->major == b->major && a->minor == b->minor && a->build == b->build &&
           !strcmp(a->probe_hash, b->probe_hash) && a->num_archs == b->num_archs &&
           !memcmp(a->archs, b->archs, (size_t)a->num_archs * sizeof a->archs[0]);
}

int sj_toolchain_cap(const sj_toolchain *tc, int want)
{
    int best = 0;
    for (int i = 0; i < tc->num_archs; i++)
        if (tc->archs[i] <= want && tc->archs[i] > best)
            best = tc->archs[i];
    return best;
}
