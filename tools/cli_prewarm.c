/* ssmjit prewarm: compile every unit (kernel) into the cache, on the
 * library's compile pool, for chosen architectures.  Needs NVRTC, not a
 * GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
    "usage: ssmjit prewarm [--arch sm_80,sm_90|all] [--fast-math default|on|off|both]\n"
    "                      [--jobs N] [--cache-dir DIR] [--lineinfo] [-D NAME[=VALUE]]...\n"
    "Compiles every kernel (each a compile unit) into the cache so that later\n"
    "processes load them without compiling.  Without --arch: the architecture each GPU compiles\n"
    "for, or with no GPU every architecture the installed NVRTC supports from\n"
    "sm_75 up (--arch all does that in any case).  --fast-math default (the\n"
    "default) compiles each kernel in the variant ops use unless told otherwise\n"
    "(forward kernels with fast math, backward kernels without); on / off\n"
    "match a context with fast math forced on / off; both covers every case.\n"
    "--lineinfo and -D must match the context options of the program that will\n"
    "use the cache.\n"
    "--jobs N compiles N kernels at a time (default: one per core).\n"
    "Refuses to run (exit 1) under SSMJIT_CACHE=ro or off: it would write.\n"
    "Prints one line per compile that takes over 0.5 s or fails, a summary per\n"
    "architecture and variant, and a total; exit 0 when every kernel is in the\n"
    "cache, 1 when any failed, 2 on a bad command line.\n";

#define MAX_ARCHS 64
#define MAX_DEFINES 32

typedef struct {
    int archs[MAX_ARCHS];
    size_t num_archs;
    int fast[2];     /* variants; -1: each unit's default */
    size_t num_fast;
    const char *cache_dir;
    int lineinfo;
    const char *defines[MAX_DEFINES];
    size_t num_defines;
} job;
static int parse_archs(job *j, const char *list)
{
    if (!strcmp(list, "all"))
        return 0;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const char *p = !strncmp(tok, "sm_", 3) ? tok + 3 : tok;
        char *end;
        long a = strtol(p, &end, 10);
        if (*end || a < 10 || a > 999 || j->num_archs == MAX_ARCHS) {
            fprintf(stderr, "ssmjit prewarm: '%s' is not an architecture like sm_90\n", tok);
            return -1;
        }
        j->archs[j->num_archs++] = (int)a;
    }
    return 0;
}

/* Arches when none were named: the GPUs' targets, else all from sm_75. */
static int default_archs(job *j, int all)
{
    int count = 0;
    if (!all && ssmjit_device_count(&count) == SSMJIT_OK && count > 0) {
        for (int i = 0; i < count && j->num_archs < MAX_ARCHS; i++) {
            ssmjit_context_options o;
            ssmjit_context *ctx = NULL;
            ssmjit_context_info ci;
            ssmjit_context_options_init(&o);
            o.device = i;
            o.cache_dir = j->cache_dir;
            ssmjit_status st = ssmjit_context_create(&o, &ctx);
            if (st == SSMJIT_OK)
                st = ssmjit_context_get_info(ctx, &ci);
            ssmjit_context_destroy(ctx);
            if (st != SSMJIT_OK)
                return cli_fail("reading the GPU's target", st);
            if (ci.target_is_ptx) {
                printf("gpu %d: newer than NVRTC, gets PTX (%s) compiled on first use\n", i, ci.target);
                continue;
            }
            int a = atoi(ci.target + 3);
            int seen = 0;
            for (size_t k = 0; k < j->num_archs; k++)
                seen |= j->archs[k] == a;
            if (!seen)
                j->archs[j->num_archs++] = a;
        }
        return 0;
    }
    int archs[MAX_ARCHS];
    size_t n = 0;
    ssmjit_status st = ssmjit_nvrtc_supported_archs(archs, MAX_ARCHS, &n);
    if (st != SSMJIT_OK)
        return cli_fail("reading NVRTC's architectures", st);
    for (size_t i = 0; i < n && i < MAX_ARCHS; i++)
        if (archs[i] >= 75)
            j->archs[j->num_archs++] = archs[i];
    return 0;
}

/* Compiles that take long, and failures, get a line as they end. */
static void on_compile(const ssmjit_compile_event *ev, void *user)
{
    (void)user;
    if (!ev->done || (ev->status == SSMJIT_OK && ev->seconds <= 0.5))
        return;
    if (ev->status == SSMJIT_OK)
        printf("  compiled %-28s %-7s %-9s %.2f s\n", ev->unit, ev->target, ev->fast_math ? "fast-math" : "exact",
               ev->seconds);
    else
        printf("  FAILED   %-28s %-7s %-9s %s\n", ev->unit, ev->target, ev->fast_math ? "fast-math" : "exact",
               ssmjit_status_string(ev->status));
    fflush(stdout);
}

int cli_prewarm(int argc, char **argv)
{
    static job j;
    ssmjit_status st;
    const char *arch_list = NULL, *fast = "default";
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return CLI_OK;
        } else if (!strcmp(a, "--lineinfo")) {
            j.lineinfo = 1;
            continue;
        } else if (!v) {
            fprintf(stderr, "ssmjit prewarm: '%s' needs a value or is unknown\n%s", a, help);
            return CLI_USAGE;
        } else if (!strcmp(a, "--arch")) {
            arch_list = v;
        } else if (!strcmp(a, "--fast-math")) {
            fast = v;
        } else if (!strcmp(a, "--jobs")) {
            jobs = strtol(v, NULL, 10);
        } else if (!strcmp(a, "--cache-dir")) {
            j.cache_dir = v;
        } else if (!strcmp(a, "-D") && j.num_defines < MAX_DEFINES) {
            j.defines[j.num_defines++] = v;
        } else {
            fprintf(stderr, "ssmjit prewarm: unknown option '%s'\n%s", a, help);
            return CLI_USAGE;
        }
        i++;
    }
    if (!strcmp(fast, "default"))
        j.fast[j.num_fast++] = -1;
    if (!strcmp(fast, "on") || !strcmp(fast, "both"))
        j.fast[j.num_fast++] = 1;
    if (!strcmp(fast, "off") || !strcmp(fast, "both"))
        j.fast[j.num_fast++] = 0;
    if (!j.num_fast || jobs < 1 || jobs > 256) {
        fprintf(stderr, "ssmjit prewarm: bad --fast-math '%s' or --jobs %ld\n", fast, jobs);
        return CLI_USAGE;
    }
    if (arch_list && parse_archs(&j, arch_list) != 0)
        return CLI_USAGE;
    if (!j.num_archs) {
        int rc = default_archs(&j, arch_list != NULL);
        if (rc != 0)
            return rc;
    }
    char dir[4096];
    st = ssmjit_cache_resolve_dir(j.cache_dir, dir, sizeof dir);
    if (st != SSMJIT_OK)
        return cli_fail("cache directory", st);
    printf("prewarming %zu kernels x %zu variants for", cli_shared_units(), j.num_fast);
    for (size_t i = 0; i < j.num_archs; i++)
        printf(" sm_%d", j.archs[i]);
    printf(" into %s with %ld jobs\n", dir, jobs);
    fflush(stdout);

    ssmjit_set_compile_threads((int)jobs);
    ssmjit_prewarm_result total = {0, 0, 0};
    double t0 = cli_now();
    for (size_t a = 0; a < j.num_archs; a++)
        for (size_t f = 0; f < j.num_fast; f++) {
            char arch[16];
            snprintf(arch, sizeof arch, "sm_%d", j.archs[a]);
            ssmjit_prewarm_options o;
            ssmjit_prewarm_options_init(&o);
            o.arch = arch;
            o.fast_math = j.fast[f];
            o.lineinfo = j.lineinfo;
            o.defines = j.defines;
            o.num_defines = j.num_defines;
            o.cache_dir = j.cache_dir;
            o.on_compile = on_compile;
            ssmjit_prewarm_result r = {0, 0, 0};
            double t = cli_now();
            st = ssmjit_prewarm(&o, &r);
            if (st != SSMJIT_OK && r.compiled + r.cached + r.failed == 0)
                return cli_fail("prewarm", st); /* refused before any work */
            printf("%s %-9s %zu compiled, %zu already cached, %zu failed in %.2f s\n", arch,
                   j.fast[f] < 0 ? "default" : j.fast[f] ? "fast-math" : "exact", r.compiled, r.cached, r.failed,
                   cli_now() - t);
            if (st != SSMJIT_OK)
                fprintf(stderr, "ssmjit prewarm: %s: %s\n", ssmjit_status_string(st), ssmjit_last_error());
            total.compiled += r.compiled;
            total.cached += r.cached;
            total.failed += r.failed;
        }
    printf("prewarm: %zu compiled, %zu already cached, %zu failed in %.2f s\n", total.compiled, total.cached,
           total.failed, cli_now() - t0);
    return total.failed ? CLI_FAILED : CLI_OK;
}
