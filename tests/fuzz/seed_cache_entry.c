/* The seed corpus of fuzz_cache_entry: small valid entries written by
 * sj_cache_entry_write, and each kind of damage the reader must reject.
 *
 *   seed_cache_entry DIR          (re)writes the seed-* files in DIR
 *   seed_cache_entry --check DIR  fails if DIR's seed-* files differ from
 *                                 what the current writer makes
 *
 * The check is a test: when the entry format changes, the committed seeds
 * would silently stop reaching past the header checks, so it asks for
 * them to be regenerated instead. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "fileio.h"

typedef struct seed {
    const char *name;
    size_t payload;   /* payload bytes of the valid entry it starts from */
    int ptx;
    long flip_at;     /* byte to XOR with 0x01 (-1: none) */
    long keep;        /* bytes kept (-1: all) */
    int drop_nul;     /* PTX: the last payload byte made non-NUL */
} seed;

static const seed seeds[] = {
    {"seed-cubin-empty", 0, 0, -1, -1, 0},
    {"seed-cubin-1", 1, 0, -1, -1, 0},
    {"seed-cubin-8", 8, 0, -1, -1, 0},
    {"seed-cubin-13", 13, 0, -1, -1, 0},
    {"seed-cubin-100", 100, 0, -1, -1, 0},
    {"seed-ptx-12", 12, 1, -1, -1, 0},
    {"seed-ptx-empty", 0, 1, -1, -1, 0},
    {"seed-ptx-no-nul", 12, 1, -1, -1, 1},
    {"seed-empty-file", 8, 0, -1, 0, 0},
    {"seed-header-cut", 8, 0, -1, 20, 0},
    {"seed-payload-cut", 100, 0, -1, SJ_ENTRY_HEADER_SIZE + 99, 0},
    {"seed-bad-magic", 8, 0, 0, -1, 0},
    {"seed-bad-version", 8, 0, 8, -1, 0},
    {"seed-bad-kind", 8, 0, 13, -1, 0},
    {"seed-bad-length", 8, 0, 48, -1, 0},
    {"seed-bad-checksum", 8, 0, 56, -1, 0},
    {"seed-bad-payload", 13, 0, SJ_ENTRY_HEADER_SIZE + 5, -1, 0},
};

/* The seed's bytes: the valid entry written to `path`, then damaged. */
static int make(const seed *s, const char *path, char **out, size_t *len)
{
    uint8_t key[32], payload[128];
    for (size_t i = 0; i < sizeof key; i++)
        key[i] = (uint8_t)(7 * i + 1);
    for (size_t i = 0; i < s->payload; i++)
        payload[i] = (uint8_t)(i * 31 + 5);
    if (s->ptx && s->payload)
        payload[s->payload - 1] = s->drop_nul ? '\n' : '\0';
    if (sj_cache_entry_write(path, key, s->ptx, payload, s->payload) != SSMJIT_OK ||
        sj_read_file(path, SJ_LINKS_REFUSE, out, len) != SSMJIT_OK) {
        fprintf(stderr, "%s: %s\n", s->name, ssmjit_last_error());
        return -1;
    }
    if (s->flip_at >= 0)
        (*out)[s->flip_at] ^= 0x01;
    if (s->keep >= 0)
        *len = (size_t)s->keep;
    return 0;
}

static int save(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(data, 1, len, f) == len;
    if (f)
        ok = fclose(f) == 0 && ok;
    if (!ok)
        perror(path);
    return ok ? 0 : -1;
}

static int same_as_file(const char *path, const char *data, size_t len)
{
    char *have;
    size_t have_len;
    if (sj_read_file(path, SJ_LINKS_REFUSE, &have, &have_len) != SSMJIT_OK)
        return 0;
    int same = have_len == len && memcmp(have, data, len) == 0;
    free(have);
    return same;
}

int main(int argc, char **argv)
{
    const int check = argc == 3 && !strcmp(argv[1], "--check");
    if (argc != 2 + check) {
        fprintf(stderr, "usage: %s [--check] DIR\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1 + check];
    const char *tmp = getenv("TMPDIR");
    char scratch[4096];
    snprintf(scratch, sizeof scratch, "%s/ssmjit-seeds-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(scratch)) {
        perror("mkdtemp");
        return 1;
    }
    int failed = 0;
    for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
        char entry[4200], path[4096];
        char *data;
        size_t len;
        snprintf(entry, sizeof entry, "%s/entry", scratch);
        snprintf(path, sizeof path, "%s/%s", dir, seeds[i].name);
        if (make(&seeds[i], entry, &data, &len) != 0) {
            failed = 1;
            continue;
        }
        unlink(entry);
        if (check && !same_as_file(path, data, len)) {
            fprintf(stderr, "%s differs from what the writer makes now: run %s %s\n", path, argv[0], dir);
            failed = 1;
        } else if (!check && save(path, data, len) != 0) {
            failed = 1;
        }
        free(data);
    }
    rmdir(scratch);
    if (!failed)
        printf("%zu seeds %s\n", sizeof seeds / sizeof *seeds, check ? "match" : "written");
    return failed;
}
