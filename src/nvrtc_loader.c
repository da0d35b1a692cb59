/* NVRTC loading, compilation under the C locale, and the toolchain probe.
 *
 * Opening NVRTC costs about 10 ms (a 100 MB library), twice the budget of a
 * whole warm start, so what a cache key needs from it (version, a build
 * marker, the supported architectures) is recorded in the cache directory
 * together with the identity of the library file it was read from.  The
 * record is trusted only while that file, the ld.so cache, and the search
 * variables (SSMJIT_NVRTC_PATH, LD_LIBRARY_PATH) are unchanged; whenever a
 * module must really be compiled, the loaded library is checked against it
 * (sj_toolchain_get with confirmed = 1). */
#include "nvrtc_loader.h"

#include <dlfcn.h>
#include <limits.h>
#include <locale.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "fileio.h"
#include "lib_open.h"
#include "sha256.h"

static const char *const search_names[] = {"libnvrtc.so.13",   "libnvrtc.so.12",   "libnvrtc.so.11.2",
                                           "libnvrtc.so.11.1", "libnvrtc.so.11.0", "libnvrtc.so"};

static sj_nvrtc nvrtc;
static ssmjit_status load_status;
static char *load_message;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static atomic_int split_rejected; /* this NVRTC refused -split-compile */

static const struct {
    const char *name;
    size_t offset;
} entries[] = {
#define E(fn) {"nvrtc" #fn, offsetof(sj_nvrtc, fn)}
    E(Version), E(GetNumSupportedArchs), E(GetSupportedArchs), E(CreateProgram), E(DestroyProgram),
    E(CompileProgram), E(GetProgramLogSize), E(GetProgramLog), E(GetPTXSize), E(GetPTX),
    E(GetCUBINSize), E(GetCUBIN), E(GetErrorString),
#undef E
};

static void load(void)
{
    void *lib = sj_lib_open("SSMJIT_NVRTC_PATH", search_names,
                            sizeof search_names / sizeof search_names[0], &load_message);
    if (!lib) {
        load_status = SSMJIT_ERR_NVRTC_NOT_FOUND;
        return;
    }
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        void *fn = dlsym(lib, entries[i].name);
        /* The CUBIN getters appeared in 11.1; everything else is older. */
        if (!fn && strcmp(entries[i].name, "nvrtcGetCUBIN") && strcmp(entries[i].name, "nvrtcGetCUBINSize")) {
            sj_lib_note(&load_message, entries[i].name, "missing from the loaded NVRTC");
            load_status = SSMJIT_ERR_NVRTC_NOT_FOUND;
            return;
        }
        memcpy((char *)&nvrtc + entries[i].offset, &fn, sizeof fn);
    }
    void *version_addr;
    memcpy(&version_addr, &nvrtc.Version, sizeof version_addr);
    sj_lib_path(version_addr, nvrtc.path, sizeof nvrtc.path);
    free(load_message);
    load_message = NULL;
    load_status = SSMJIT_OK;
}

ssmjit_status sj_nvrtc_get(const sj_nvrtc **out)
{
    pthread_once(&load_once, load);
    if (load_status != SSMJIT_OK)
        return sj_error(load_status, "no usable NVRTC library; tried:%s",
                        load_message ? load_message : " (nothing)");
    *out = &nvrtc;
    return SSMJIT_OK;
}

static ssmjit_status nvrtc_fail(const sj_nvrtc *n, nvrtcResult r, const char *call)
{
    return sj_error(SSMJIT_ERR_COMPILE, "%s failed: %s", call, n->GetErrorString(r));
}

ssmjit_status sj_nvrtc_compile(const char *src, const char *name, int num_headers,
                               const char *const *headers, const char *const *header_names,
                               int num_options, const char *const *options, int want_ptx,
                               void **image, size_t *size)
{
    const sj_nvrtc *n;
    ssmjit_status st = sj_nvrtc_get(&n);
    if (st != SSMJIT_OK)
        return st;
    if (!want_ptx && !n->GetCUBIN)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "this NVRTC (%s) cannot emit CUBIN", n->path);

    /* NVRTC's optimizer and assembler on every core: the scan modules'
     * first compile drops from about 28 s to 20 s on 2 cores and further
     * on more.  It changes how, not what, NVRTC compiles, so it is no part
     * of the cache key; an NVRTC that does not know the option compiles
     * without it, and is not asked again in this process. */
    const char **opts = malloc(((size_t)num_options + 1) * sizeof *opts);
    if (!opts)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory for NVRTC options");
    memcpy(opts, options, (size_t)num_options * sizeof *opts);
    opts[num_options] = "-split-compile=0";

    locale_t c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    locale_t previous = c_locale ? uselocale(c_locale) : (locale_t)0;
    nvrtcProgram prog = NULL;
    int split = !atomic_load_explicit(&split_rejected, memory_order_relaxed);
    nvrtcResult r;
    for (;;) {
        r = n->CreateProgram(&prog, src, name, num_headers, headers, header_names);
        if (r != NVRTC_SUCCESS) {
            st = nvrtc_fail(n, r, "nvrtcCreateProgram");
            goto done;
        }
        r = n->CompileProgram(prog, num_options + split, opts);
        if (r != NVRTC_ERROR_INVALID_OPTION || !split)
            break;
        n->DestroyProgram(&prog);
        split = 0;
    }
    /* Without the option the others were accepted: it was the one refused. */
    if (!split && r != NVRTC_ERROR_INVALID_OPTION)
        atomic_store_explicit(&split_rejected, 1, memory_order_relaxed);
    if (r != NVRTC_SUCCESS) {
        size_t log_size = 0;
        st = sj_error(SSMJIT_ERR_COMPILE, "NVRTC could not compile %s (%s)%s; log:\n", name,
                      n->GetErrorString(r),
                      r == 7 ? " - is libnvrtc-builtins, from the same NVRTC release, installed?" : "");
        if (n->GetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
            char *log = malloc(log_size);
            if (log && n->GetProgramLog(prog, log) == NVRTC_SUCCESS)
                sj_error_append(log);
            free(log);
        }
        goto done;
    }
    r = want_ptx ? n->GetPTXSize(prog, size) : n->GetCUBINSize(prog, size);
    if (r != NVRTC_SUCCESS) {
        st = nvrtc_fail(n, r, want_ptx ? "nvrtcGetPTXSize" : "nvrtcGetCUBINSize");
        goto done;
    }
    *image = malloc(*size ? *size : 1);
    if (!*image) {
        st = sj_error(SSMJIT_ERR_NO_MEMORY, "out of memory for a %zu-byte module image", *size);
        goto done;
    }
    r = want_ptx ? n->GetPTX(prog, *image) : n->GetCUBIN(prog, *image);
    if (r != NVRTC_SUCCESS) {
        free(*image);
        *image = NULL;
        st = nvrtc_fail(n, r, want_ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN");
    }
done:
    free(opts);
    if (prog)
        n->DestroyProgram(&prog);
    if (c_locale) {
        uselocale(previous);
        freelocale(c_locale);
    }
    return st;
}

/* ---- toolchain ---------------------------------------------------------- */

static const char probe_source[] =
    "#ifndef __CUDACC_VER_BUILD__\n#define __CUDACC_VER_BUILD__ -1\n#endif\n"
    "extern \"C\" __device__ int ssmjit_probe_build = __CUDACC_VER_BUILD__;\n";

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

static ssmjit_status probe(sj_toolchain *tc)
{
    const sj_nvrtc *n;
    ssmjit_status st = sj_nvrtc_get(&n);
    if (st != SSMJIT_OK)
        return st;
    memset(tc, 0, sizeof *tc);
    n->Version(&tc->major, &tc->minor);
    int count = 0;
    if (n->GetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0 || count > SJ_MAX_ARCHS)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "NVRTC %d.%d reports %d supported architectures",
                        tc->major, tc->minor, count);
    n->GetSupportedArchs(tc->archs);
    tc->num_archs = count;

    char opt[64];
    snprintf(opt, sizeof opt, "--gpu-architecture=compute_%d", tc->archs[0]);
    const char *options[] = {opt};
    void *ptx = NULL;
    size_t size = 0;
    st = sj_nvrtc_compile(probe_source, "ssmjit_probe.cu", 0, NULL, NULL, 1, options, 1, &ptx, &size);
    if (st != SSMJIT_OK)
        return st;
    uint8_t digest[32];
    sj_sha256 h;
    sj_sha256_init(&h);
    sj_sha256_update(&h, ptx, size);
    sj_sha256_final(&h, digest);
    sj_hex(digest, 32, tc->probe_hash);
    const char *b = strstr(ptx, "ssmjit_probe_build = ");
    tc->build = b ? strtol(b + strlen("ssmjit_probe_build = "), NULL, 10) : -1;
    free(ptx);
    return SSMJIT_OK;
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

ssmjit_status sj_toolchain_get(const char *cache_dir, int writable, int confirmed, sj_toolchain *out)
{
    ssmjit_status st = SSMJIT_OK;
    char file[PATH_MAX];
    int have_file = cache_dir && *cache_dir && record_path(cache_dir, file, sizeof file) == 0;
    lib_identity recorded, actual;
    sj_toolchain from_record;
    int record_ok;
    pthread_mutex_lock(&tc_lock);
    if (tc_state == 2 || (tc_state == 1 && !confirmed)) {
        /* Known already (from another directory, say): give this one a
         * record too, so the next process starts warm from it.  Only its
         * existence is checked: this runs at every module load. */
        if (have_file && writable && tc_identity.path[0] && access(file, F_OK) != 0)
            write_record(cache_dir, file, &tc_memo, &tc_identity);
        goto done;
    }
    record_ok = have_file && read_record(file, &from_record, &recorded) == 0;
    if (!confirmed && record_ok && identify(recorded.path, &actual) == 0 &&
        same_identity(&recorded, &actual)) {
        tc_memo = from_record;
        tc_identity = actual;
        tc_state = 1;
        goto done;
    }
    const sj_nvrtc *n;
    st = sj_nvrtc_get(&n);
    if (st == SSMJIT_OK)
        st = probe(&tc_memo);
    if (st != SSMJIT_OK)
        goto done;
    tc_state = 2;
    if (identify(n->path, &tc_identity) != 0)
        memset(&tc_identity, 0, sizeof tc_identity);
    if (have_file && writable && tc_identity.path[0] &&
        !(record_ok && same_identity(&recorded, &tc_identity) && sj_toolchain_equal(&from_record, &tc_memo)))
        write_record(cache_dir, file, &tc_memo, &tc_identity);
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
