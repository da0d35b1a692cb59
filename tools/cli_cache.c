/* ssmjit cache stats|verify|clear */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: ssmjit cache stats|verify|clear [--cache-dir DIR] [--remove-bad]\n"
    "  stats   entries, bytes, the size cap and temp files in the cache, and per\n"
    "          target the entries, the kernels (units) they hold and their bytes;\n"
    "          from names and sizes alone (fast): verify reads the entries\n"
    "  verify  check every entry's header, key and checksum; --remove-bad deletes\n"
    "          the bad ones; exit 3 when bad entries were found\n"
    "  clear   delete every cache entry\n";

int cli_cache(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : NULL, *dir = NULL;
    int remove_bad = 0;
    if (cmd && (!strcmp(cmd, "--help") || !strcmp(cmd, "-h"))) {
        fputs(help, stdout);
        return CLI_OK;
    }
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--cache-dir") && i + 1 < argc) {
            dir = argv[++i];
        } else if (!strcmp(argv[i], "--remove-bad")) {
            remove_bad = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(help, stdout);
            return CLI_OK;
        } else {
            fprintf(stderr, "ssmjit cache: unknown option '%s'\n%s", argv[i], help);
            return CLI_USAGE;
        }
    }
    if (!cmd || (strcmp(cmd, "stats") && strcmp(cmd, "verify") && strcmp(cmd, "clear"))) {
        fputs(help, stderr);
        return CLI_USAGE;
    }
    char resolved[4096];
    ssmjit_status st = ssmjit_cache_resolve_dir(dir, resolved, sizeof resolved);
    if (st != SSMJIT_OK)
        return cli_fail("cache directory", st);
    if (!strcmp(cmd, "clear")) {
        size_t removed = 0;
        st = ssmjit_cache_clear(dir, &removed);
        if (st != SSMJIT_OK)
            return cli_fail("cache clear", st);
        printf("cache: %s\nremoved: %zu files\n", resolved, removed);
        return CLI_OK;
    }
    ssmjit_cache_stats s;
    ssmjit_cache_target_stats *targets = NULL;
    size_t num_targets = 0;
    int stats = !strcmp(cmd, "stats");
    if (stats) {
        /* One walk, or two when there are more targets than room for them
         * (one that appears in between is left out). */
        size_t room = 16;
        for (int pass = 0; pass < 2; pass++) {
            free(targets);
            if (!(targets = calloc(room, sizeof *targets))) {
                fprintf(stderr, "ssmjit: cache scan: out of memory\n");
                return CLI_FAILED;
            }
            st = ssmjit_cache_targets(dir, &s, targets, room, &num_targets);
            if (st != SSMJIT_OK || num_targets <= room)
                break;
            room = num_targets;
        }
        if (num_targets > room)
            num_targets = room;
    } else {
        st = ssmjit_cache_verify(dir, remove_bad, &s);
    }
    if (st != SSMJIT_OK) {
        free(targets);
        return cli_fail("cache scan", st);
    }
    printf("cache: %s\nentries: %zu\nbytes: %llu\n", resolved, s.entries, (unsigned long long)s.bytes);
    if (s.max_bytes)
        printf("cap: %llu bytes (%.1f%% used; SSMJIT_CACHE_MAX_BYTES)\n", (unsigned long long)s.max_bytes,
               100.0 * (double)s.bytes / (double)s.max_bytes);
    else
        printf("cap: none (SSMJIT_CACHE_MAX_BYTES=0)\n");
    if (stats)
        printf("bad entries: %zu (by name and size; verify reads them)\n", s.bad_entries);
    else
        printf("bad entries: %zu\n", s.bad_entries);
    printf("temp files: %zu\n", s.temp_files);
    if (s.removed)
        printf("removed: %zu\n", s.removed);
    for (size_t i = 0; targets && i < num_targets; i++) {
        double b = (double)targets[i].bytes;
        printf("%s: %zu entries (%zu units), ", targets[i].target, targets[i].entries, targets[i].units);
        if (b < 1e3)
            printf("%.0f B\n", b);
        else if (b < 1e6)
            printf("%.1f kB\n", b / 1e3);
        else if (b < 1e9)
            printf("%.1f MB\n", b / 1e6);
        else
            printf("%.1f GB\n", b / 1e9);
    }
    free(targets);
    return !strcmp(cmd, "verify") && s.bad_entries ? CLI_BAD_CACHE : CLI_OK;
}
