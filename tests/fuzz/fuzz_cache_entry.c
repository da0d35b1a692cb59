/* libFuzzer target: arbitrary bytes as a cache entry file.  The two
 * readers (sj_cache_entry_check, which verify uses, and
 * sj_cache_entry_read, which module loading uses) must never crash and
 * must agree on which files are good; a good file must give back exactly
 * the bytes after its header, and be byte for byte what
 * sj_cache_entry_write makes of that payload, so that the writer is the
 * oracle of what "good" means.
 *
 * The readers take a path, so the bytes go into a memfd opened through
 * /proc/self/fd: no disk I/O per input, and sj_read_file is fuzzed too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cache.h"
#include "fileio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken invariant is a crash, so that libFuzzer keeps the input. */
static void require(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_cache_entry: %s (last error: %s)\n", what, ssmjit_last_error());
        abort();
    }
}

static const char *entry_file(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("ssmjit-fuzz-entry", MFD_CLOEXEC);
        require(fd >= 0, "memfd_create failed");
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    require(ftruncate(fd, 0) == 0 && (size == 0 || pwrite(fd, data, size, 0) == (ssize_t)size),
            "cannot fill the memfd");
    return path;
}

static char scratch[64];

static void remove_scratch(void)
{
    char path[96];
    snprintf(path, sizeof path, "%s/entry", scratch);
    unlink(path);
    rmdir(scratch);
}

/* What the writer makes of the entry's key, kind and payload. */
static void rewrite(const uint8_t *key, int ptx, const void *payload, size_t size, char **out, size_t *len)
{
    if (!scratch[0]) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(scratch, sizeof scratch, "%s/ssmjit-fuzz-XXXXXX", base);
        require(mkdtemp(scratch) != NULL, "mkdtemp failed");
        atexit(remove_scratch);
    }
    char path[96];
    snprintf(path, sizeof path, "%s/entry", scratch);
    require(sj_cache_entry_write(path, key, ptx, payload, size) == SSMJIT_OK &&
                sj_read_file(path, SJ_LINKS_REFUSE, out, len) == SSMJIT_OK,
            "cannot write the entry again");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = entry_file(data, size);
    uint8_t key[32];
    memset(key, 0xA5, sizeof key);
    ssmjit_status checked = sj_cache_entry_check(path, key);
    require(checked == SSMJIT_OK || checked == SSMJIT_ERR_IO, "check gave a status other than OK or IO");
    require(checked == SSMJIT_OK || ssmjit_last_error()[0] != '\0', "rejected without a message");

    /* The reader is asked for what the header claims when it is readable,
     * so that it gets as far as the payload checks. */
    const int ptx = size > 12 && data[12] == 1;
    if (size >= 48)
        memcpy(key, data + 16, sizeof key);
    void *payload = (void *)&key;
    size_t payload_size = (size_t)-1;
    ssmjit_status read = sj_cache_entry_read(path, key, ptx, 0, &payload, &payload_size);
    require(read == checked, "check and read disagree");
    if (read != SSMJIT_OK) {
        require(payload == (void *)&key && payload_size == (size_t)-1, "a rejected read wrote its outputs");
        return 0;
    }
    require(payload_size == size - SJ_ENTRY_HEADER_SIZE, "payload size is not the file size less the header");
    require(payload_size == 0 || memcmp(payload, data + SJ_ENTRY_HEADER_SIZE, payload_size) == 0,
            "payload differs from the file's bytes");
    require(!ptx || ((const char *)payload)[payload_size - 1] == '\0', "PTX payload not NUL-terminated");
    char *again;
    size_t again_size;
    rewrite(key, ptx, payload, payload_size, &again, &again_size);
    require(again_size == size && memcmp(again, data, size) == 0,
            "an accepted entry is not what the writer makes of its payload");
    free(again);
    free(payload);

    /* The key is checked: any other key is a miss. */
    key[data[0] % sizeof key] ^= 1;
    payload = NULL;
    require(sj_cache_entry_read(path, key, ptx, 0, &payload, &payload_size) == SSMJIT_ERR_IO && !payload,
            "an entry was read under another key");
    return 0;
}
