/* Where the cache is, in which mode, how big it may grow, and whether it
 * can be trusted. */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "base/error.h"
#include "base/sha256.h"

ssmjit_status sj_cache_dir_resolve(const char *dir, char *out, size_t cap)
{
    const char *env = getenv("SSMJIT_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"),
               *home = getenv("HOME");
    char path[PATH_MAX];
    int n;
    if (dir && *dir)
        n = snprintf(path, sizeof path, "%s", dir);
    else if (env && *env)
        n = snprintf(path, sizeof path, "%s", env);
    else if (xdg && *xdg)
        n = snprintf(path, sizeof path, "%s/ssmjit", xdg);
    else if (home && *home)
        n = snprintf(path, sizeof path, "%s/.cache/ssmjit", home);
    else
        return sj_error(SSMJIT_ERR_INVALID_ARG,
                        "no cache directory: set SSMJIT_CACHE_DIR, XDG_CACHE_HOME or HOME");
    /* out is written only when the whole path fits */
    if (n < 0 || (size_t)n >= cap || (size_t)n >= sizeof path)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "cache directory path is longer than %zu bytes",
                        cap < sizeof path ? cap : sizeof path);
    memcpy(out, path, (size_t)n + 1);
    return SSMJIT_OK;
}

ssmjit_status sj_cache_mode_resolve(ssmjit_cache_mode requested, ssmjit_cache_mode *out)
{
    const char *env = getenv("SSMJIT_CACHE");
    if (env && *env) {
        if (!strcmp(env, "rw"))
            *out = SSMJIT_CACHE_RW;
        else if (!strcmp(env, "ro"))
            *out = SSMJIT_CACHE_RO;
        else if (!strcmp(env, "off"))
            *out = SSMJIT_CACHE_OFF;
        else
            return sj_error(SSMJIT_ERR_INVALID_ARG, "SSMJIT_CACHE='%s' is not rw, ro or off", env);
        return SSMJIT_OK;
    }
    if (requested < SSMJIT_CACHE_DEFAULT || requested > SSMJIT_CACHE_OFF)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "cache_mode = %d is not a ssmjit_cache_mode",
                        (int)requested);
    *out = requested == SSMJIT_CACHE_DEFAULT ? SSMJIT_CACHE_RW : requested;
    return SSMJIT_OK;
}

ssmjit_status sj_cache_max_bytes(uint64_t *out)
{
    const char *env = getenv("SSMJIT_CACHE_MAX_BYTES");
    if (!env || !*env) {
        *out = SJ_CACHE_DEFAULT_MAX_BYTES;
        return SSMJIT_OK;
    }
    uint64_t v = 0;
    const char *p = env;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            goto bad;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    static const char units[] = "KMGT";
    const char *unit = *p ? strchr(units, *p) : NULL;
    if (p == env || (*p && (!unit || p[1])))
        goto bad;
    for (int shift = unit ? 10 * (int)(unit - units + 1) : 0; shift > 0; shift -= 10) {
        if (v > UINT64_MAX >> 10)
            goto bad;
        v <<= 10;
    }
    *out = v;
    return SSMJIT_OK;
bad:
    return sj_error(SSMJIT_ERR_INVALID_ARG,
                    "SSMJIT_CACHE_MAX_BYTES='%s' is not a byte count (digits with an optional K, M, G "
                    "or T suffix for KiB .. TiB; 0 for no cap)",
                    env);
}

ssmjit_status sj_cache_dir_check(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return errno == ENOENT ? SSMJIT_OK
                               : sj_error(SSMJIT_ERR_IO, "cannot stat cache directory '%s': %s", dir,
                                          strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return sj_error(SSMJIT_ERR_IO, "cache directory '%s' is not a directory", dir);
    /* Root may own it too: root can change anything anyway, and a prewarmed
     * cache shipped read-only with a program is root's. */
    if (st.st_uid != geteuid() && st.st_uid != 0)
        return sj_error(SSMJIT_ERR_IO, "cache directory '%s' belongs to uid %ld, not to this user (uid %ld) or root",
                        dir, (long)st.st_uid, (long)geteuid());
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return sj_error(SSMJIT_ERR_IO, "cache directory '%s' is writable by %s (mode %04o)", dir,
                        st.st_mode & S_IWGRP ? "its group" : "others", (unsigned)(st.st_mode & 07777));
    return SSMJIT_OK;
}

ssmjit_cache_mode sj_cache_mode_usable(const char *dir, ssmjit_cache_mode mode, int quiet)
{
    if (mode == SSMJIT_CACHE_OFF || sj_cache_dir_check(dir) == SSMJIT_OK)
        return mode;
    sj_cache_warn_once(quiet, ssmjit_last_error());
    sj_error_clear();
    return SSMJIT_CACHE_OFF;
}

int sj_cache_entry_path(const char *dir, const sj_cache_entry_id *id, char *out, size_t cap)
{
    char hex[65];
    sj_hex(id->key, 32, hex);
    int n = snprintf(out, cap, "%s/%.2s/%.2s/%s-%s-%s-nvrtc%d.%d.%s", dir, hex, hex + 2, hex, id->label,
                     id->target, id->nvrtc_major, id->nvrtc_minor, id->ptx ? "ptx" : "cubin");
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

void sj_cache_warn_once(int quiet, const char *why)
{
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    const char *env = getenv("SSMJIT_QUIET");
    if (quiet || (env && !strcmp(env, "1")) || atomic_flag_test_and_set(&warned))
        return;
    fprintf(stderr, "ssmjit: warning: kernel cache not usable, compiled modules stay in memory only: %s\n",
            why);
}
