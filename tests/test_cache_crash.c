/* The cache when things go wrong: a writer killed with SIGKILL at random
 * moments, a disk that is full (RLIMIT_FSIZE; a full tmpfs where mounts are
 * allowed), a directory the process may not write (EACCES) and a read-only
 * file system (EROFS, tmpfs again).  After each, no entry that loads is
 * wrong, no temp file passes for an entry, and a module compiled meanwhile
 * is still handed out from memory.  The writer is driven with synthetic
 * entries (the same sj_cache_store that prewarm and context loads use), so
 * the kill test needs no NVRTC; the memory fallback checks do. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "cache_util.h"
#include "image.h"
#include "test_util.h"

#define ROUNDS 200
#define KILL_DELAY_MAX_S 0.25 /* the latest a kill comes after its fork */
#define KEYS 24
#define CAP (4u << 20)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 32 KiB .. 480 KiB, fixed per key, so a mix-up of sizes cannot pass. */
static size_t size_for(unsigned i)
{
    uint8_t k[32];
    cu_key(i, k);
    return 32768 + ((size_t)k[0] << 8 | k[1]) * 7;
}

static void age_temps(const char *path, const char *name, const char *prefix, void *arg)
{
    (void)prefix;
    (void)arg;
    if (sj_cache_is_temp_name(name))
        cu_age(path, SJ_TEMP_STALE_SECONDS + 60);
}

static void test_killed_writers_leave_no_bad_entry(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    atomic_uint *stored = mmap(NULL, sizeof *stored, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(stored != MAP_FAILED);
    atomic_init(stored, 0);
    /* Kills spread over about five stores, however fast this disk is. */
    double t0 = now_s();
    for (unsigned i = 0; i < 3; i++)
        assert_int_equal(cu_store(dir, CAP, i, size_for(i)), SSMJIT_OK);
    double per_store = (now_s() - t0) / 3, max_delay = fmin(fmax(5 * per_store, 0.005), KILL_DELAY_MAX_S);
    unsigned before_first = 0, max_temps = 0;
    t0 = now_s();
    for (int round = 0; round < ROUNDS; round++) {
        unsigned seen = atomic_load(stored);
        unsigned first = (unsigned)tu_uniform(0, KEYS);
        useconds_t delay = (useconds_t)tu_uniform(0, max_delay * 1e6);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            for (unsigned i = first;; i = (i * 7 + 5) % KEYS) {
                if (cu_store(dir, CAP, i, size_for(i)) != SSMJIT_OK) {
                    fprintf(stderr, "writer: %s\n", ssmjit_last_error());
                    _exit(3);
                }
                atomic_fetch_add(stored, 1);
            }
        }
        usleep(delay);
        assert_int_equal(kill(pid, SIGKILL), 0);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        /* While more than half the rounds so far died inside their
         * writer's first store (about a fifth do at the delays above), the
         * kills stretch by 5% a round: a writer forked on a busy machine
         * runs slower than the stores timed above, and the rounds would
         * otherwise rarely pass a first write */
        before_first += atomic_load(stored) == seen;
        if (2 * before_first > (unsigned)round + 1)
            max_delay = fmin(max_delay * 1.05, KILL_DELAY_MAX_S);
        cu_census c = cu_check_all(dir);
        if (c.temps > max_temps)
            max_temps = c.temps;
    }
    double elapsed = now_s() - t0;
    cu_census c = cu_check_all(dir);
    printf("# %d kills 0 to at most %.0f ms into a writer (%.1f ms a store) in %.1f s: %u entries stored, "
           "%u rounds killed inside their first write, up to %u temp files left, "
           "%zu entries (%llu bytes) at the end\n",
           ROUNDS, max_delay * 1e3, per_store * 1e3, elapsed, atomic_load(stored), before_first,
           max_temps, c.entries, (unsigned long long)c.bytes);
    /* the kills did land inside writes, and writes did complete */
    assert_true(before_first > 0 && atomic_load(stored) > ROUNDS / 4);

    /* Temps the killed writers left are removed by the next writer once
     * stale; a young one (a writer maybe still at work) is kept. */
    char planted[4200], young[4200];
    snprintf(planted, sizeof planted, "%s/.tmp-1-0-toolchain-0123", dir);
    FILE *f = fopen(planted, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(sj_cache_walk(dir, age_temps, NULL, 0), 0);
    snprintf(young, sizeof young, "%s/.tmp-2-0-toolchain-0123", dir);
    f = fopen(young, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(cu_store(dir, CAP, KEYS, 1000), SSMJIT_OK);
    c = cu_check_all(dir);
    assert_int_equal(c.temps, 1);
    assert_true(c.bytes <= CAP);
    munmap(stored, sizeof *stored);
    tu_rmtree(dir);
    free(dir);
}

/* ---- failures of the disk, each in a child process ----------------------- */

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "%s:%d: %s is false (last error: %s)\n", __FILE__, __LINE__, #cond, \
                    ssmjit_last_error());                                                    \
            _exit(1);                                                                        \
        }                                                                                    \
    } while (0)

#define CHILD_SKIP 77

static size_t entries_on_disk(const char *dir)
{
    ssmjit_cache_stats s;
    CHECK(ssmjit_cache_verify(dir, 0, &s) == SSMJIT_OK);
    CHECK(s.bad_entries == 0);
    CHECK(s.temp_files == 0);
    return s.entries;
}

/* A store into dir fails with `why` in its message and leaves nothing. */
static void store_fails(const char *dir, const char *why)
{
    size_t before = entries_on_disk(dir);
    CHECK(cu_store(dir, 0, 1000 + (unsigned)getpid() % 1000, 100000) == SSMJIT_ERR_IO);
    CHECK(strstr(ssmjit_last_error(), why) != NULL);
    CHECK(entries_on_disk(dir) == before);
}

/* Entry 0, stored before the disk failed, still loads (and a use that
 * cannot be recorded is no error). */
static void old_entry_loads(const char *dir)
{
    uint8_t key[32];
    char path[4200];
    void *got;
    size_t size;
    cu_key(0, key);
    cu_path(dir, key, path, sizeof path);
    CHECK(sj_cache_entry_read(path, key, 0, 1, &got, &size) == SSMJIT_OK);
    CHECK(size == 50000);
    free(got);
}

static int have_nvrtc(void)
{
    int major, minor;
    return ssmjit_nvrtc_version(&major, &minor, NULL) == SSMJIT_OK;
}

/* What "the module is still usable" means without a GPU: the compile and
 * cache layer hands out the CUBIN from memory with SSMJIT_OK, and writes
 * nothing. */
static void module_usable(const char *dir)
{
    if (!have_nvrtc()) {
        printf("# NVRTC not found: the in-memory module check is skipped\n");
        return;
    }
    static unsigned n;
    char define[64];
    snprintf(define, sizeof define, "SSMJIT_CRASH_TEST=%ld_%u", (long)getpid(), n++);
    const char *d = define;
    sj_compile_spec spec = {.arch = 80, .fast_math = 1, .defines = &d, .num_defines = 1};
    sj_cache_config rw = {.mode = SSMJIT_CACHE_RW, .quiet = 1, .max_bytes = CAP};
    snprintf(rw.dir, sizeof rw.dir, "%.4000s", dir);
    const void *image = NULL;
    size_t size = 0, before = entries_on_disk(dir);
    /* a unit whose image is larger than the file size limit below */
    sj_image_job job = {(size_t)sj_unit_find(SJ_MODULE_NORM, "rmsnorm_fwd_cached_f32_f32"), &spec, &rw, NULL, 1};
    CHECK(sj_image_get(&job, &image, &size, NULL) == SSMJIT_OK);
    CHECK(image && size > 1000 && !memcmp(image, "\x7f" "ELF", 4));
    CHECK(entries_on_disk(dir) == before);
}

/* Runs fn(dir) in a child; skips when it says so. */
static void in_child(void (*fn)(const char *dir), const char *dir)
{
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        fn(dir);
        fflush(stdout);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == CHILD_SKIP)
        skip();
    assert_int_equal(WEXITSTATUS(status), 0);
}

static char *dir_with_one_entry(void)
{
    char *dir = tu_mkdtemp();
    assert_int_equal(cu_store(dir, 0, 0, 50000), SSMJIT_OK);
    return dir;
}

static void file_size_limit(const char *dir)
{
    /* The limit that stands for a full disk: every write past 8 KiB fails
     * (EFBIG, through the same failed write() as ENOSPC). */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit r = {8192, 8192};
    CHECK(setrlimit(RLIMIT_FSIZE, &r) == 0);
    store_fails(dir, "File too large");
    old_entry_loads(dir);
    module_usable(dir);
}

static void test_full_disk_by_file_size_limit(void **state)
{
    (void)state;
    char *dir = dir_with_one_entry();
    in_child(file_size_limit, dir);
    tu_rmtree(dir);
    free(dir);
}

static void set_dir_modes(const char *dir, const char *mode)
{
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "find '%s' -type d -exec chmod %s {} +", dir, mode);
    CHECK(system(cmd) == 0);
}

static void not_writable(const char *dir)
{
    if (geteuid() == 0) {
        /* Root writes anywhere: become nobody, owner of the directory, so
         * that only its mode stands in the way (and it is still trusted). */
        char cmd[4400];
        snprintf(cmd, sizeof cmd, "chown -R 65534:65534 '%s'", dir);
        CHECK(system(cmd) == 0);
        set_dir_modes(dir, "0500");
        CHECK(setgid(65534) == 0 && setuid(65534) == 0);
    } else {
        set_dir_modes(dir, "0500");
    }
    CHECK(sj_cache_dir_check(dir) == SSMJIT_OK);
    store_fails(dir, "Permission denied");
    old_entry_loads(dir);
    module_usable(dir);
}

static void test_unwritable_directory(void **state)
{
    (void)state;
    char *dir = dir_with_one_entry();
    in_child(not_writable, dir);
    if (geteuid() != 0) {
        char cmd[4400];
        snprintf(cmd, sizeof cmd, "find '%s' -type d -exec chmod 0700 {} +", dir);
        assert_int_equal(system(cmd), 0);
    }
    tu_rmtree(dir);
    free(dir);
}

/* ENOSPC and EROFS for real: a 1 MiB tmpfs over dir in a private mount
 * namespace (needs CAP_SYS_ADMIN: skipped without it), filled up, then
 * remounted read-only. */
static void full_then_read_only(const char *dir)
{
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0700") != 0) {
        printf("# cannot mount a tmpfs here (%s): ENOSPC and EROFS not tested\n", strerror(errno));
        fflush(stdout);
        _exit(CHILD_SKIP);
    }
    CHECK(cu_store(dir, 0, 0, 50000) == SSMJIT_OK);
    char filler[4200];
    snprintf(filler, sizeof filler, "%s/filler", dir);
    int fd = open(filler, O_WRONLY | O_CREAT, 0600);
    CHECK(fd >= 0);
    static char block[65536];
    while (write(fd, block, sizeof block) > 0)
        ;
    CHECK(errno == ENOSPC);
    close(fd);
    store_fails(dir, "No space left on device");
    old_entry_loads(dir);
    module_usable(dir);

    CHECK(mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY, "size=1m") == 0);
    store_fails(dir, "Read-only file system");
    old_entry_loads(dir);
    module_usable(dir);
}

static void test_full_and_read_only_file_system(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    in_child(full_then_read_only, dir);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_killed_writers_leave_no_bad_entry),
        cmocka_unit_test(test_full_disk_by_file_size_limit),
        cmocka_unit_test(test_unwritable_directory),
        cmocka_unit_test(test_full_and_read_only_file_system),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
