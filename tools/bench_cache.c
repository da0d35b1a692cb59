/* ssmjit bench --cache: the cache's own costs at scale, no GPU needed:
 * 10,000 synthetic entries (4 targets, 200-byte payloads) spread over the
 * hash-prefix directories as real keys are, then `cache stats` (names and
 * sizes), `cache verify` (every entry read and checked) and one store
 * under a cap of half that evicts the least recently used half. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench.h"
#include "bench_parts.h"
#include "cli.h"
#include "ssmjit_internal.h"

#define ENTRIES 10000
#define PAYLOAD 200

/* Makes up entry i (keyed by a hash of i, so entries spread as real ones
 * do) under dir, its path into path: written, or with `store` stored as the
 * library stores, evicting above max_bytes. */
static ssmjit_status entry(const char *dir, unsigned i, const void *payload, int store, uint64_t max_bytes,
                           char *path, size_t cap)
{
    static const char *const targets[] = {"sm_80", "sm_90", "sm_100", "compute_90"};
    char label[32];
    snprintf(label, sizeof label, "k%u", i / 8);
    return sj_cache_fabricate(dir, &i, sizeof i, label, targets[i % 4], payload, PAYLOAD, store, max_bytes, path,
                              cap);
}

static int fail(const char *what, ssmjit_status st)
{
    return cli_fail(what, st);
}

int bench_cache(void)
{
    char dir[] = "/tmp/ssmjit-cache-bench-XXXXXX", path[4200];
    if (!mkdtemp(dir))
        return fail("temp directory", SSMJIT_ERR_IO);
    unsigned char payload[PAYLOAD];
    memset(payload, 0x5a, sizeof payload);
    for (unsigned i = 0; i < ENTRIES; i++) {
        ssmjit_status st = entry(dir, i, payload, 0, 0, path, sizeof path);
        if (st != SSMJIT_OK)
            return fail("writing entries", st);
        /* entry i last used ENTRIES - i seconds ago: the oldest go first */
        struct timespec times[2];
        clock_gettime(CLOCK_REALTIME, &times[0]);
        times[0].tv_sec -= ENTRIES - i;
        times[1] = times[0];
        utimensat(0, path, times, 0);
    }
    double stats[5];
    ssmjit_cache_stats s;
    for (int r = 0; r < 5; r++) {
        double t0 = cli_now();
        ssmjit_status st = ssmjit_cache_targets(dir, &s, NULL, 0, NULL);
        stats[r] = cli_now() - t0;
        if (st != SSMJIT_OK || s.entries != ENTRIES)
            return fail("cache stats", st == SSMJIT_OK ? SSMJIT_ERR_INTERNAL : st);
    }
    double t0 = cli_now();
    ssmjit_status st = ssmjit_cache_verify(dir, 0, &s);
    double verify = cli_now() - t0;
    if (st != SSMJIT_OK || s.entries != ENTRIES)
        return fail("cache verify", st == SSMJIT_OK ? SSMJIT_ERR_INTERNAL : st);
    t0 = cli_now();
    st = entry(dir, ENTRIES, payload, 1, (uint64_t)(ENTRIES / 2) * sj_cache_entry_bytes(PAYLOAD), path, sizeof path);
    double evict = cli_now() - t0;
    if (st != SSMJIT_OK)
        return fail("store with eviction", st);
    printf("cache   %d entries: stats %.3f s (median of 5), verify %.3f s, a store evicting half %.3f s\n",
           ENTRIES, bench_median(stats, 5), verify, evict);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "ssmjit bench: could not remove %s\n", dir);
    return CLI_OK;
}
