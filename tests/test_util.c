#include "test_util.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

/* xoshiro256** : small, fast and good enough for test inputs. */
static uint64_t s[4];

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next(void)
{
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

void tu_seed(void)
{
    const char *env = getenv("SSMJIT_TEST_SEED");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed = env ? strtoull(env, NULL, 0)
                        : (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
    printf("# random seed %llu (set SSMJIT_TEST_SEED to replay)\n", (unsigned long long)seed);
    for (int i = 0; i < 4; i++) {
        seed += 0x9e3779b97f4a7c15ull;
        uint64_t z = seed;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        s[i] = z ^ (z >> 31);
    }
}

double tu_uniform(double lo, double hi) { return lo + (hi - lo) * ((next() >> 11) * 0x1.0p-53); }

double tu_normal(void)
{
    double u1 = tu_uniform(1e-300, 1.0), u2 = tu_uniform(0.0, 1.0);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

void tu_fill_uniform(double *x, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = tu_uniform(lo, hi);
}

double tu_scaled_err(const double *got, const double *ref, const double *scale, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i]))
            return INFINITY;
        num += (got[i] - ref[i]) * (got[i] - ref[i]);
        den += scale[i] * scale[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

double tu_rel_err(const double *got, const double *ref, size_t n) { return tu_scaled_err(got, ref, ref, n); }

char *tu_mkdtemp(void)
{
    const char *base = getenv("TMPDIR");
    char *path = malloc(4096);
    assert_non_null(path);
    snprintf(path, 4096, "%s/ssmjit-test-XXXXXX", base && *base ? base : "/tmp");
    assert_non_null(mkdtemp(path));
    return path;
}

void tu_rmtree(const char *path)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    assert_int_equal(system(cmd), 0);
}

int tu_dir_entries(const char *path)
{
    DIR *d = opendir(path);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

double *tu_doubles(size_t n)
{
    double *p = malloc((n ? n : 1) * sizeof *p);
    assert_non_null(p);
    return p;
}

int tu_nvrtc_mapped(void)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;
    while (maps && fgets(line, sizeof line, maps))
        found |= strstr(line, "libnvrtc") != NULL;
    if (maps)
        fclose(maps);
    return found;
}

int tu_run_self(const char *arg1, const char *arg2)
{
    char exe[4096], cmd[8400];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", exe, arg1, arg2);
    int status = system(cmd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void tu_apply_test_filter(void)
{
    const char *pattern = getenv("SSMJIT_TEST_FILTER");
    if (pattern && *pattern)
        cmocka_set_test_filter(pattern);
}
