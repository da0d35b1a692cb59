/* The ssmjit command line: help and exit codes, prewarm into a fresh
 * directory, then cache stats / verify / clear on what it wrote; prewarm
 * refused under SSMJIT_CACHE=ro/off; stats with the size cap and per
 * target. */
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

/* Runs `ssmjit <args> <redirect>` (of stderr); returns the exit code,
 * stdout in out. */
static int run_cli(const char *args, const char *redirect)
{
    const char *exe = getenv("SSMJIT_CLI");
    assert_non_null(exe);
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "'%s' %s %s", exe, args, redirect);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* Runs `ssmjit <args>`; returns the exit code, output (stdout+stderr) in out. */
static int cli(const char *args) { return run_cli(args, "2>&1"); }

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
    assert_int_equal(cli("bench --scan-fwd"), 2);
    assert_int_equal(cli("bench --scan-fwd sometimes"), 2);
    assert_int_equal(cli("bench --scan-split 0"), 2);
    assert_int_equal(cli("bench --scan-split 65"), 2);
    assert_int_equal(cli("bench --scan-split x"), 2);
    assert_int_equal(cli("bench --scan-shape"), 2);
    assert_int_equal(cli("bench --scan-shape 4"), 2);
    assert_int_equal(cli("bench --scan-shape 2,32"), 2);
    assert_int_equal(cli("bench --scan-shape 4,48"), 2);
    assert_int_equal(cli("bench --scan-shape 4,32,1"), 2);
    assert_int_equal(cli("bench --model train --bogus"), 2);
    assert_int_equal(cli("bench --shape"), 2);
    assert_int_equal(cli("bench --shape 2x4096"), 2);
    assert_int_equal(cli("bench --shape 2x4096x0"), 2);
    assert_int_equal(cli("bench --shape 2x4096x2560x1"), 2);
    assert_int_equal(cli("bench --shape 2x4096x2560z"), 2);
    assert_int_equal(cli("run"), 2);
    assert_int_equal(cli("run --model m"), 2);
    assert_int_equal(cli("run --model m --tokens 1,x"), 2);
    assert_int_equal(cli("run --model m --tokens 1,,2"), 2);
    assert_int_equal(cli("run --model m --tokens -1"), 2);
    assert_int_equal(cli("run --model m --tokens 1 --steps 0"), 2);
    assert_int_equal(cli("run --model m --tokens 1 --dtype f64"), 2);
    assert_int_equal(cli("run --model m --tokens 1 --temperature -1"), 2);
    assert_int_equal(cli("run --model m --tokens 1 --temperature hot"), 2);
    assert_int_equal(cli("run --model m --tokens 1 --top-p 1.5"), 2);
    assert_int_equal(cli("run --model m --tokens 1 --top-k 2.5"), 2);
    assert_int_equal(cli("run --model m --tokens 1 --top-k -3"), 2);
    assert_int_equal(cli("run --model m --tokens 1 --seed -3"), 2);
    assert_int_equal(cli("run --model m --tokens 1 --seed"), 2);
    /* a sound command line whose work fails: no GPU here, or no such model */
    assert_int_equal(cli("run --model /nonexistent/model --tokens 1"), 1);
    assert_non_null(strstr(out, "ssmjit: "));
}

/* run --prompt: the tokenizer.json beside the checkpoint encodes it; none
 * there, --prompt with --tokens, and a prompt that is empty or not UTF-8
 * are usage errors; a tokenizer.json that does not load fails the run
 * (and is passed over, with a warning, when the ids are given). */
static void test_run_prompt(void **state)
{
    (void)state;
    assert_int_equal(cli("run --model m --tokens 1 --prompt hi"), 2);
    assert_int_equal(cli("run --model m --prompt"), 2);
    assert_int_equal(cli("run --model /nonexistent/model --prompt hi"), 2);
    assert_non_null(strstr(out, "--prompt needs a tokenizer.json beside the checkpoint, and "
                                "'/nonexistent/tokenizer.json' is not there"));
    const char *data = getenv("SSMJIT_TEST_DATA");
    assert_non_null(data);
    char *dir = tu_mkdtemp(), cmd[8800], args[4400];
    snprintf(cmd, sizeof cmd, "cp '%s/tokenizer/tokenizer.json' '%s/'", data, dir);
    assert_int_equal(system(cmd), 0);
    /* encoded; then no GPU, or no config.json, fails the run */
    snprintf(args, sizeof args, "run --model '%s/model.safetensors' --prompt 'Hello world'", dir);
    assert_int_equal(cli(args), 1);
    assert_non_null(strstr(out, "prompt: 2 tokens: 356,541\n"));
    snprintf(args, sizeof args, "run --model '%s' --prompt ''", dir);
    assert_int_equal(cli(args), 2);
    assert_non_null(strstr(out, "the prompt is empty"));
    snprintf(args, sizeof args, "run --model '%s' --prompt \"$(printf 'a\\377')\"", dir);
    assert_int_equal(cli(args), 2);
    assert_non_null(strstr(out, "not UTF-8 at byte 1 (0xFF)"));
    snprintf(cmd, sizeof cmd, "echo '{\"model\": {\"type\": \"WordPiece\"}}' > '%s/tokenizer.json'", dir);
    assert_int_equal(system(cmd), 0);
    snprintf(args, sizeof args, "run --model '%s' --prompt hi", dir);
    assert_int_equal(cli(args), 1);
    assert_non_null(strstr(out, "model \"WordPiece\" is not supported"));
    snprintf(args, sizeof args, "run --model '%s' --tokens 1", dir);
    assert_int_equal(cli(args), 1);
    assert_non_null(strstr(out, "tokenizer.json not used"));
    tu_rmtree(dir);
    free(dir);
}

static void test_info_without_gpu_is_not_an_error(void **state)
{
    (void)state;
    assert_int_equal(cli("info"), 0);
    assert_non_null(strstr(out, "nvrtc:"));
    assert_non_null(strstr(out, "driver:"));
    assert_non_null(strstr(out, "cublas:"));
    assert_non_null(strstr(out, "cache:"));
    assert_non_null(strstr(out, "compile units: "));
    /* the read-only layers in effect, a bad one warned of and left out */
    char *dir = tu_mkdtemp(), args[] = "info", line[4400];
    setenv("SSMJIT_CACHE_PATH", dir, 1);
    assert_int_equal(cli(args), 0);
    snprintf(line, sizeof line, "cache layers (read-only): %s\n", dir);
    assert_non_null(strstr(out, line));
    snprintf(line, sizeof line, "%s/missing:%s", dir, dir);
    setenv("SSMJIT_CACHE_PATH", line, 1);
    assert_int_equal(cli(args), 0);
    snprintf(line, sizeof line, "cache layers (read-only): %s\n", dir);
    assert_non_null(strstr(out, line));
    assert_non_null(strstr(out, "missing' ignored"));
    unsetenv("SSMJIT_CACHE_PATH");
    assert_int_equal(cli(args), 0);
    assert_non_null(strstr(out, "cache layers (read-only): none\n"));
    tu_rmtree(dir);
    free(dir);
}

/* Runs `ssmjit <args>` with stderr apart: stdout in out, stderr in err. */
static int cli_split(const char *args, char *err, size_t cap)
{
    char *dir = tu_mkdtemp(), path[4200], redirect[4300];
    snprintf(path, sizeof path, "%s/stderr", dir);
    snprintf(redirect, sizeof redirect, "2>'%s'", path);
    int rc = run_cli(args, redirect);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(err, 1, cap - 1, f);
    err[n] = '\0';
    fclose(f);
    tu_rmtree(dir);
    free(dir);
    return rc;
}

/* Number of lines of `text` that start with `prefix`. */
static int lines_starting(const char *text, const char *prefix)
{
    int n = 0;
    for (const char *l = text; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
        n += !strncmp(l, prefix, strlen(prefix));
    return n;
}

static void test_prewarm_then_cache_commands(void **state)
{
    (void)state;
    if (!have_nvrtc())
        skip();
    int major, minor;
    assert_int_equal(ssmjit_nvrtc_version(&major, &minor, NULL), SSMJIT_OK);
    size_t units = 0; /* prewarm's: all but the specialised */
    for (size_t u = 0; u < ssmjit_unit_count(); u++)
        units += ssmjit_unit_specialised(u) == 0;
    char *dir = tu_mkdtemp(), args[4300], expect[4400];
    snprintf(args, sizeof args, "prewarm --arch sm_80 --fast-math on --jobs 2 --cache-dir '%s'", dir);
    assert_int_equal(cli(args), 0);
    snprintf(expect, sizeof expect, "prewarming %zu kernels x 1 variants for sm_80 into %s with 2 jobs\n", units, dir);
    if (strncmp(out, expect, strlen(expect)))
        fail_msg("prewarm said:\n%s", out);
    snprintf(expect, sizeof expect, "\nsm_80 fast-math %zu compiled, 0 already cached, 0 failed in ", units);
    if (!strstr(out, expect))
        fail_msg("prewarm said:\n%s", out);
    snprintf(expect, sizeof expect, "\nprewarm: %zu compiled, 0 already cached, 0 failed in ", units);
    assert_non_null(strstr(out, expect));
    /* every other line reports a slow compile of one kernel of the batch */
    assert_int_equal(lines_starting(out, "  FAILED"), 0);
    int slow = lines_starting(out, "  compiled ");
    assert_true(slow <= (int)units);
    for (const char *l = strstr(out, "\n  compiled "); l; l = strstr(l + 1, "\n  compiled ")) {
        char unit[128], target[16], variant[16];
        double seconds;
        assert_int_equal(sscanf(l, "\n  compiled %127s %15s %15s %lf s", unit, target, variant, &seconds), 4);
        int known = 0;
        for (size_t u = 0; u < ssmjit_unit_count(); u++)
            known |= !ssmjit_unit_specialised(u) && !strcmp(unit, ssmjit_unit_name(u));
        assert_true(known);
        assert_string_equal(target, "sm_80");
        assert_string_equal(variant, "fast-math");
        assert_true(seconds >= 0.5); /* over 0.5 s, printed to two decimals */
    }
    int lines = 0;
    for (const char *c = out; *c; c++)
        lines += *c == '\n';
    assert_int_equal(lines, 3 + slow);

    /* one entry per unit, named for its kernel (a few kernels are units of
     * two modules: one entry for each) */
    size_t kernels = 0;
    const char *lone = NULL; /* a kernel that is one unit */
    for (size_t u = 0; u < ssmjit_unit_count(); u++) {
        if (ssmjit_unit_specialised(u))
            continue;
        size_t same = 0, first = u;
        for (size_t v = 0; v < ssmjit_unit_count(); v++)
            if (!ssmjit_unit_specialised(v) && !strcmp(ssmjit_unit_name(v), ssmjit_unit_name(u))) {
                same++;
                first = v < first ? v : first;
            }
        kernels += first == u;
        if (same == 1 && !lone)
            lone = ssmjit_unit_name(u);
        char cmd[4600];
        snprintf(cmd, sizeof cmd, "test $(find '%s' -name '*-%s-sm_80-nvrtc%d.%d.cubin' | wc -l) = %zu", dir,
                 ssmjit_unit_name(u), major, minor, same);
        if (system(cmd) != 0)
            fail_msg("not %zu entries for unit %s", same, ssmjit_unit_name(u));
    }
    snprintf(expect, sizeof expect, "find '%s' -name '*.cubin' | wc -l | grep -qx %zu", dir, units);
    assert_int_equal(system(expect), 0);

    assert_int_equal(cli(args), 0);
    snprintf(expect, sizeof expect, "prewarm: 0 compiled, %zu already cached, 0 failed", units);
    assert_non_null(strstr(out, expect));
    assert_int_equal(lines_starting(out, "  compiled "), 0);

    snprintf(args, sizeof args, "cache verify --cache-dir '%s'", dir);
    assert_int_equal(cli(args), 0);
    snprintf(expect, sizeof expect, "entries: %zu\n", units);
    assert_non_null(strstr(out, expect));
    assert_non_null(strstr(out, "bad entries: 0"));

    /* stats: the totals and one line for the one target */
    char stats[4300], target_line[128];
    snprintf(stats, sizeof stats, "cache stats --cache-dir '%s'", dir);
    assert_int_equal(cli(stats), 0);
    assert_non_null(strstr(out, expect));
    assert_non_null(strstr(out, "bad entries: 0"));
    snprintf(target_line, sizeof target_line, "\nsm_80-nvrtc%d.%d: %zu entries (%zu units), ", major, minor, units,
             kernels);
    if (!strstr(out, target_line))
        fail_msg("stats said:\n%s", out);
    assert_int_equal(lines_starting(out, "sm_"), 1);

    /* damage one entry: stats, which reads no entry, still counts it;
     * verify exits 3, --remove-bad deletes it */
    char cmd[4400];
    assert_non_null(lone);
    snprintf(cmd, sizeof cmd, "f=$(find '%s' -name '*-%s-sm_80-*.cubin'); printf 'JUNK' | dd of=\"$f\" bs=1 seek=100 conv=notrunc 2>/dev/null", dir, lone);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(cli(stats), 0);
    assert_non_null(strstr(out, expect));
    assert_non_null(strstr(out, target_line));
    assert_int_equal(cli(args), 3);
    assert_non_null(strstr(out, "bad entries: 1"));
    snprintf(args, sizeof args, "cache verify --remove-bad --cache-dir '%s'", dir);
    assert_int_equal(cli(args), 3);
    assert_non_null(strstr(out, "removed: 1"));
    assert_int_equal(cli(stats), 0);
    snprintf(expect, sizeof expect, "entries: %zu\n", units - 1);
    assert_non_null(strstr(out, expect));
    assert_non_null(strstr(out, "bad entries: 0"));
    snprintf(target_line, sizeof target_line, "\nsm_80-nvrtc%d.%d: %zu entries (%zu units), ", major, minor,
             units - 1, kernels - 1);
    assert_non_null(strstr(out, target_line));

    snprintf(args, sizeof args, "cache clear --cache-dir '%s'", dir);
    assert_int_equal(cli(args), 0);
    assert_int_equal(cli(stats), 0);
    assert_non_null(strstr(out, "entries: 0"));
    assert_int_equal(lines_starting(out, "sm_"), 0);
    tu_rmtree(dir);
    free(dir);
}

/* Prewarm exists to write: under SSMJIT_CACHE=ro or off it refuses, says
 * why, and leaves the directory as it was, toolchain record included. */
static void test_prewarm_refused_without_write_access(void **state)
{
    (void)state;
    static const char *const modes[] = {"ro", "off"};
    char *dir = tu_mkdtemp(), args[4400], err[4096], missing[4300];
    snprintf(missing, sizeof missing, "%s/not-yet", dir);
    for (int m = 0; m < 2; m++)
        for (int variant = 0; variant < 3; variant++) {
            /* without --arch the archs come from NVRTC, which must be there */
            if (variant == 2 && !have_nvrtc())
                continue;
            setenv("SSMJIT_CACHE", modes[m], 1);
            snprintf(args, sizeof args, "prewarm %s --cache-dir '%s'", variant == 2 ? "" : "--arch sm_90",
                     variant == 1 ? missing : dir);
            int rc = cli_split(args, err, sizeof err);
            unsetenv("SSMJIT_CACHE");
            assert_int_equal(rc, 1);
            char want[128];
            snprintf(want, sizeof want, "prewarm writes into the cache, and SSMJIT_CACHE=%s forbids writing",
                     modes[m]);
            if (!strstr(err, want))
                fail_msg("SSMJIT_CACHE=%s %s: stderr:\n%s\nstdout:\n%s", modes[m], args, err, out);
            assert_null(strstr(out, "compiled,"));
            assert_int_equal(tu_dir_entries(dir), 0);
        }
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
    assert_non_null(strstr(out, "\nsm_90-nvrtc13.0: 1 entries (1 units), 32.8 kB\n"));
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

/* stats groups entries by target, in the order of their names, counting
 * the kernels (labels) apart from the entries. */
static void test_cache_stats_per_target(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), args[4300];
    /* sm_80: 3 entries of 2 kernels; compute_90: 1; sm_90: 2 of 2 */
    assert_int_equal(cu_store_named(dir, 0, 0, 1000 - 64, "scan_fwd", "sm_80"), SSMJIT_OK);
    assert_int_equal(cu_store_named(dir, 0, 1, 1000 - 64, "scan_fwd", "sm_80"), SSMJIT_OK);
    assert_int_equal(cu_store_named(dir, 0, 2, 2000 - 64, "norm", "sm_80"), SSMJIT_OK);
    assert_int_equal(cu_store_named(dir, 0, 3, 5000000 - 64, "scan_fwd", "compute_90"), SSMJIT_OK);
    assert_int_equal(cu_store_named(dir, 0, 4, 500 - 64, "a", "sm_90"), SSMJIT_OK);
    assert_int_equal(cu_store_named(dir, 0, 5, 100 - 64, "b", "sm_90"), SSMJIT_OK);
    snprintf(args, sizeof args, "cache stats --cache-dir '%s'", dir);
    assert_int_equal(cli(args), 0);
    const char *want = "entries: 6\nbytes: 5004600\n";
    if (!strstr(out, want))
        fail_msg("stats said:\n%s", out);
    want = "temp files: 0\n"
           "compute_90-nvrtc13.0: 1 entries (1 units), 5.0 MB\n"
           "sm_80-nvrtc13.0: 3 entries (2 units), 4.0 kB\n"
           "sm_90-nvrtc13.0: 2 entries (2 units), 600 B\n";
    if (!strstr(out, want))
        fail_msg("stats said:\n%s", out);
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
        cmocka_unit_test(test_run_prompt),
        cmocka_unit_test(test_info_without_gpu_is_not_an_error),
        cmocka_unit_test(test_prewarm_then_cache_commands),
        cmocka_unit_test(test_prewarm_refused_without_write_access),
        cmocka_unit_test(test_cache_stats_shows_cap),
        cmocka_unit_test(test_cache_stats_per_target),
        cmocka_unit_test(test_prewarm_without_nvrtc_fails_cleanly),
        cmocka_unit_test(test_no_cache_directory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
