/* The ssmjit command line: help and exit codes, prewarm into a fresh
 * directory, then cache stats / verify / clear on what it wrote; stats
 * with the size cap. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache_util.h"
#include "ssmjit.h"
#include "test_util.h"

static char out[1 << 16];

/* Runs `ssmjit <args>`; returns the exit code, output (stdout+stderr) in out. */
static int cli(const char *args)
{
    const char *exe = getenv("SSMJIT_CLI");
    assert_non_null(exe);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", exe, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static int have_nvrtc(void)
{
    int major, minor;
    return ssmjit_nvrtc_version(&major, &minor, NULL) == SSMJIT_OK;
}

static void test_help_and_usage_errors(void **state)
{
    (void)state;
    assert_int_equal(cli("--help"), 0);
    assert_non_null(strstr(out, "prewarm"));
    assert_non_null(strstr(out, "exit codes"));
    const char *subs[] = {"info --help", "prewarm --help", "cache --help", "bench --help", "run --help"};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(cli(subs[i]), 0);
        assert_non_null(strstr(out, "usage: ssmjit"));
    }
    assert_int_equal(cli(""), 2);
    assert_int_equal(cli("frobnicate"), 2);
    assert_int_equal(cli("prewarm --arch sm_9x"), 2);
    assert_int_equal(cli("prewarm --fast-math sometimes"), 2);
    assert_int_equal(cli("prewarm --bogus 1"), 2);
    assert_int_equal(cli("cache"), 2);
    assert_int_equal(cli("cache shrink"), 2);
    assert_int_equal(cli("bench --bogus"), 2);
    assert_int_equal(cli("run"), 2);
    assert_int_equal(cli("run --model m"), 2);
    assert_int_equal(cli("run --model m --tokens 1,x"), 2);
    assert_int_equal(cli("run --model m --tokens 1,,2"), 2);
    assert_int_equal(cli("run --model m --tokens -1"), 2);
    assert_int_equal(cli("run --model m --tokens 1 --steps 0"), 2);
    assert_int_equal(cli("run --model m --tokens 1 --dtype f64"), 2);
    /* a sound command line whose work fails: no GPU here, or no such model */
    assert_int_equal(cli("run --model /nonexistent/model --tokens 1"), 1);
    assert_non_null(strstr(out, "ssmjit: "));
}

static void test_info_without_gpu_is_not_an_error(void **state)
{
    (void)state;
    assert_int_equal(cli("info"), 0);
    assert_non_null(strstr(out, "nvrtc:"));
    assert_non_null(strstr(out, "driver:"));
    assert_non_null(strstr(out, "cublas:"));
    assert_non_null(strstr(out, "cache:"));
}

static void test_prewarm_then_cache_commands(void **state)
{
    (void)state;
    if (!have_nvrtc())
        skip();
    char *dir = tu_mkdtemp(), args[4300];
    snprintf(args, sizeof args, "prewarm --arch sm_80 --fast-math on --jobs 2 --cache-dir '%s'", dir);
    assert_int_equal(cli(args), 0);
    char expect[128];
    snprintf(expect, sizeof expect, "%zu compiled, 0 already cached, 0 failed", ssmjit_module_count());
    if (!strstr(out, expect))
        fail_msg("prewarm said:\n%s", out);
    assert_int_equal(cli(args), 0);
    snprintf(expect, sizeof expect, "0 compiled, %zu already cached, 0 failed", ssmjit_module_count());
    assert_non_null(strstr(out, expect));

    snprintf(args, sizeof args, "cache verify --cache-dir '%s'", dir);
    assert_int_equal(cli(args), 0);
    snprintf(expect, sizeof expect, "entries: %zu\n", ssmjit_module_count());
    assert_non_null(strstr(out, expect));
    assert_non_null(strstr(out, "bad entries: 0"));

    /* damage one entry: verify exits 3, --remove-bad deletes it */
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "f=$(find '%s' -name '*.cubin' | head -1); printf 'JUNK' | dd of=\"$f\" bs=1 seek=100 conv=notrunc 2>/dev/null", dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(cli(args), 3);
    assert_non_null(strstr(out, "bad entries: 1"));
    snprintf(args, sizeof args, "cache verify --remove-bad --cache-dir '%s'", dir);
    assert_int_equal(cli(args), 3);
    assert_non_null(strstr(out, "removed: 1"));
    snprintf(args, sizeof args, "cache stats --cache-dir '%s'", dir);
    assert_int_equal(cli(args), 0);
    snprintf(expect, sizeof expect, "entries: %zu\n", ssmjit_module_count() - 1);
    assert_non_null(strstr(out, expect));
    assert_non_null(strstr(out, "bad entries: 0"));

    snprintf(args, sizeof args, "cache clear --cache-dir '%s'", dir);
    assert_int_equal(cli(args), 0);
    snprintf(args, sizeof args, "cache stats --cache-dir '%s'", dir);
    assert_int_equal(cli(args), 0);
    assert_non_null(strstr(out, "entries: 0"));
    tu_rmtree(dir);
    free(dir);
}

static void test_cache_stats_shows_cap(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), args[4300], temp[4300];
    assert_int_equal(cu_store(dir, 0, 0, 32768 - 64), SSMJIT_OK);
    snprintf(temp, sizeof temp, "%s/.tmp-1-0-toolchain-0123", dir);
    FILE *f = fopen(temp, "w");
    fclose(f);
    snprintf(args, sizeof args, "cache stats --cache-dir '%s'", dir);
    assert_int_equal(cli(args), 0);
    assert_non_null(strstr(out, "entries: 1\nbytes: 32768\ncap: 1073741824 bytes (0.0% used"));
    assert_non_null(strstr(out, "temp files: 1\n"));
    setenv("SSMJIT_CACHE_MAX_BYTES", "64K", 1);
    assert_int_equal(cli(args), 0);
    assert_non_null(strstr(out, "cap: 65536 bytes (50.0% used; SSMJIT_CACHE_MAX_BYTES)"));
    setenv("SSMJIT_CACHE_MAX_BYTES", "0", 1);
    assert_int_equal(cli(args), 0);
    assert_non_null(strstr(out, "cap: none"));
    setenv("SSMJIT_CACHE_MAX_BYTES", "lots", 1);
    assert_int_equal(cli(args), 1);
    assert_non_null(strstr(out, "SSMJIT_CACHE_MAX_BYTES='lots' is not a byte count"));
    unsetenv("SSMJIT_CACHE_MAX_BYTES");
    tu_rmtree(dir);
    free(dir);
}

/* Environment variables the cache directory comes from, unset for a call
 * and restored after it. */
static const char *const cache_env[] = {"SSMJIT_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};

static void test_no_cache_directory(void **state)
{
    (void)state;
    char *saved[3];
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(cache_env[i]);
        saved[i] = v ? strdup(v) : NULL;
        unsetenv(cache_env[i]);
    }
    const char *cmds[] = {"cache stats", "cache clear", "prewarm --arch sm_80"};
    int rc[3];
    char msg[3][1024];
    for (int i = 0; i < 3; i++) {
        rc[i] = cli(cmds[i]);
        snprintf(msg[i], sizeof msg[i], "%.1000s", out);
    }
    for (int i = 0; i < 3; i++)
        if (saved[i]) {
            setenv(cache_env[i], saved[i], 1);
            free(saved[i]);
        }
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rc[i], 1);
        assert_non_null(strstr(msg[i], "cache directory"));
        assert_non_null(strstr(msg[i], "set SSMJIT_CACHE_DIR, XDG_CACHE_HOME or HOME"));
    }
    assert_int_equal(cli("cache stats --bogus"), 2);
    assert_non_null(strstr(out, "unknown option '--bogus'"));
}

static void test_prewarm_without_nvrtc_fails_cleanly(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), args[4300];
    snprintf(args, sizeof args, "prewarm --arch sm_80 --cache-dir '%s'", dir);
    setenv("SSMJIT_NVRTC_PATH", "/nonexistent/libnvrtc.so", 1);
    int rc = cli(args);
    unsetenv("SSMJIT_NVRTC_PATH");
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "SSMJIT_ERR_NVRTC_NOT_FOUND"));
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_usage_errors),
        cmocka_unit_test(test_info_without_gpu_is_not_an_error),
        cmocka_unit_test(test_prewarm_then_cache_commands),
        cmocka_unit_test(test_cache_stats_shows_cap),
        cmocka_unit_test(test_prewarm_without_nvrtc_fails_cleanly),
        cmocka_unit_test(test_no_cache_directory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
