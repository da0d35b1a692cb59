/* Many writers on one key: 8 processes prewarming the same entry at once
 * all succeed and leave one valid entry; 8 threads asking for the same
 * image in one process share one compile.  Skipped without NVRTC. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image.h"
#include "test_util.h"

#define WORKERS 8

static int have_nvrtc(void)
{
    int major, minor;
    return ssmjit_nvrtc_version(&major, &minor, NULL) == SSMJIT_OK;
}

/* The unit raced for: a small one. */
static size_t unit(void)
{
    int u = sj_unit_find(SJ_MODULE_ELEMENTWISE, "act_fwd_silu_f32");
    assert_true(u >= 0);
    return (size_t)u;
}

static void test_processes_race_on_one_key(void **state)
{
    (void)state;
    if (!have_nvrtc())
        skip();
    char *dir = tu_mkdtemp(), define[64];
    snprintf(define, sizeof define, "SSMJIT_RACE=%u", (unsigned)tu_uniform(0, 4e9));
    int gate[2];
    assert_int_equal(pipe(gate), 0);
    pid_t kids[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        kids[i] = fork();
        assert_true(kids[i] >= 0);
        if (kids[i] == 0) {
            char c;
            close(gate[1]);
            (void)!read(gate[0], &c, 1); /* returns when the parent closes the pipe */
            ssmjit_prewarm_options o;
            ssmjit_prewarm_options_init(&o);
            o.arch = "sm_86";
            o.cache_dir = dir;
            const char *d = define;
            o.defines = &d;
            o.num_defines = 1;
            int cached;
            ssmjit_status st = ssmjit_prewarm_unit(&o, unit(), &cached);
            if (st != SSMJIT_OK)
                fprintf(stderr, "worker %d: %s\n", i, ssmjit_last_error());
            _exit(st == SSMJIT_OK ? 0 : 1);
        }
    }
    close(gate[0]);
    close(gate[1]); /* start them all */
    for (int i = 0; i < WORKERS; i++) {
        int status;
        assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    ssmjit_cache_stats s;
    assert_int_equal(ssmjit_cache_verify(dir, 0, &s), SSMJIT_OK);
    assert_int_equal(s.entries, 1);
    assert_int_equal(s.bad_entries, 0);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "find '%s' -name '.tmp-*' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int temps = -1;
    assert_int_equal(fscanf(p, "%d", &temps), 1);
    pclose(p);
    assert_int_equal(temps, 0);
    tu_rmtree(dir);
    free(dir);
}

typedef struct {
    sj_compile_spec spec;
    sj_cache_config cache;
    const void *image;
    ssmjit_status st;
    pthread_barrier_t *barrier;
} thread_arg;

static void *ask(void *p)
{
    thread_arg *a = p;
    size_t size;
    pthread_barrier_wait(a->barrier);
    sj_image_job job = {unit(), &a->spec, &a->cache, NULL, 1};
    a->st = sj_image_get(&job, &a->image, &size, NULL);
    return NULL;
}

static void test_threads_share_one_compile(void **state)
{
    (void)state;
    if (!have_nvrtc())
        skip();
    char *dir = tu_mkdtemp(), define[64];
    snprintf(define, sizeof define, "SSMJIT_RACE=%u", (unsigned)tu_uniform(0, 4e9));
    const char *d = define;
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, WORKERS);
    thread_arg args[WORKERS];
    pthread_t threads[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        args[i] = (thread_arg){{.arch = 86, .fast_math = 1, .defines = &d, .num_defines = 1},
                               {.mode = SSMJIT_CACHE_RW, .quiet = 1}, NULL, SSMJIT_ERR_INTERNAL, &barrier};
        snprintf(args[i].cache.dir, sizeof args[i].cache.dir, "%.4000s", dir);
        assert_int_equal(pthread_create(&threads[i], NULL, ask, &args[i]), 0);
    }
    for (int i = 0; i < WORKERS; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(args[i].st, SSMJIT_OK);
        /* one producer: every thread got the very same image */
        assert_ptr_equal(args[i].image, args[0].image);
    }
    pthread_barrier_destroy(&barrier);
    ssmjit_cache_stats s;
    assert_int_equal(ssmjit_cache_verify(dir, 0, &s), SSMJIT_OK);
    assert_int_equal(s.entries, 1);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_processes_race_on_one_key),
        cmocka_unit_test(test_threads_share_one_compile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
