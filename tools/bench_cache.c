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
#include "cache.h"
#include "cli.h"
#include "sha256.h"

#define ENTRIES 10000
#define PAYLOAD 200

/* Entry i's key (a hash of i, so entries spread as real ones do) and id. */
static sj_cache_entry_id entry(unsigned i, char *label, size_t cap)
{
    static const char *const targets[] = {"sm_80", "sm_90", "sm_100", "compute_90"};
    sj_cache_entry_id id = {{0}, label, targets[i % 4], 13, 0, 0};
    sj_sha256 h;
    sj_sha256_init(&h);
    sj_sha256_update(&h, &i, sizeof i);
    sj_sha256_final(&h, id.key);
    snprintf(label, cap, "k%u", i / 8);
    return id;
}

static int fail(const char *what, ssmjit_status st)
{
    return cli_fail(what, st);
}

int bench_cache(void)
{
    char dir[] = "/tmp/ssmjit-cache-bench-XXXXXX", path[4200], label[32];
    if (!mkdtemp(dir))
        return fail("temp directory", SSMJIT_ERR_IO);
    unsigned char payload[PAYLOAD];
    memset(payload, 0x5a, sizeof payload);
    for (unsigned i = 0; i < ENTRIES; i++) {
        sj_cache_entry_id id = entry(i, label, sizeof label);
        ssmjit_status st = sj_cache_entry_path(dir, &id, path, sizeof path) == 0
                               ? sj_cache_entry_write(path, id.key, 0, payload, sizeof payload)
                               : SSMJIT_ERR_IO;
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
    sj_cache_entry_id id = entry(ENTRIES, label, sizeof label);
    t0 = cli_now();
    st = sj_cache_entry_path(dir, &id, path, sizeof path) == 0
             ? sj_cache_store(dir, (uint64_t)(ENTRIES / 2) * (PAYLOAD + SJ_ENTRY_HEADER_SIZE), path, id.key, 0,
                              payload, sizeof payload)
             : SSMJIT_ERR_IO;
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
