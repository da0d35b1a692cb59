/* Binding a loaded library's entry points (sj_lib_bind), and loading one
 * by name list (sj_lib): what a missing entry point does, required or
 * optional, and what the error says.  The stand-in NVRTC
 * (tests/fake_nvrtc.c) is a library that is not cuBLAS. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "cublas_loader.h"
#include "lib_open.h"
#include "ssmjit.h"

typedef struct api {
    size_t (*length)(const char *s);
    char *(*copy)(const char *s);
    int (*absent)(void);
} api;

static const char *asked[4];
static int num_asked;

static int stand_in(void) { return 42; }

/* Answers for every name with stand_in, noting the name. */
static void *resolve(void *lib, const char *name, const void *ctx)
{
    (void)lib;
    assert_string_equal((const char *)ctx, "ctx");
    if (num_asked < 4)
        asked[num_asked++] = name;
    void *p;
    int (*fn)(void) = stand_in;
    memcpy(&p, &fn, sizeof p);
    return p;
}

static void test_bind(void **state)
{
    (void)state;
    static const sj_lib_symbol table[] = {
        {"strlen", offsetof(api, length), 0},
        {"strdup", offsetof(api, copy), 0},
        {"sj_no_such_symbol", offsetof(api, absent), SJ_LIB_OPTIONAL},
    };
    api a;
    memset(&a, 0xff, sizeof a);
    assert_null(sj_lib_bind(RTLD_DEFAULT, table, 3, &a, NULL, NULL));
    assert_int_equal(a.length("four"), 4);
    assert_null(a.absent);
}

/* Every entry is bound, and the first required one missing is named. */
static void test_bind_missing(void **state)
{
    (void)state;
    static const sj_lib_symbol table[] = {
        {"strlen", offsetof(api, length), 0},
        {"sj_no_such_symbol", offsetof(api, absent), 0},
        {"sj_no_such_symbol_2", offsetof(api, copy), 0},
    };
    api a;
    memset(&a, 0xff, sizeof a);
    const char *missing = sj_lib_bind(RTLD_DEFAULT, table, 3, &a, NULL, NULL);
    assert_non_null(missing);
    assert_string_equal(missing, "sj_no_such_symbol");
    assert_non_null(a.length);
    assert_null(a.absent);
    assert_null(a.copy);
}

/* A resolver answers for every entry but an SJ_LIB_DLSYM one. */
static void test_bind_resolver(void **state)
{
    (void)state;
    static const sj_lib_symbol table[] = {
        {"sj_base_name", offsetof(api, absent), 0},
        {"strlen", offsetof(api, length), SJ_LIB_DLSYM},
    };
    api a;
    num_asked = 0;
    assert_null(sj_lib_bind(RTLD_DEFAULT, table, 2, &a, resolve, "ctx"));
    assert_int_equal(num_asked, 1);
    assert_string_equal(asked[0], "sj_base_name");
    assert_int_equal(a.absent(), 42);
    assert_int_equal(a.length("four"), 4);
}

typedef struct fake_api {
    int (*version)(int *major, int *minor);
    int (*absent)(void);
    char path[4096];
} fake_api;

static const char *const nowhere[] = {"/nonexistent/libfake.so", "/nonexistent/libfake2.so"};

/* SSMJIT_FAKE_NVRTC (set by the test environment) names the stand-in. */
static const sj_lib_symbol fake_symbols[] = {
    {"nvrtcVersion", offsetof(fake_api, version), 0},
    {"sj_no_such_symbol", offsetof(fake_api, absent), SJ_LIB_OPTIONAL},
};
static fake_api fake;
static sj_lib fake_lib = SJ_LIB_INIT("fake", "SSMJIT_FAKE_NVRTC", SSMJIT_ERR_NVRTC_NOT_FOUND, nowhere,
                                     fake_symbols, fake);
static void load_fake(void) { sj_lib_load(&fake_lib); }

static const sj_lib_symbol cublas_symbols[] = {{"cublasCreate_v2", offsetof(fake_api, version), 0}};
static fake_api not_cublas;
static sj_lib not_cublas_lib = SJ_LIB_INIT("not cuBLAS", "SSMJIT_FAKE_NVRTC", SSMJIT_ERR_CUBLAS_NOT_FOUND,
                                           nowhere, cublas_symbols, not_cublas);
static void load_not_cublas(void) { sj_lib_load(&not_cublas_lib); }

static fake_api none;
static sj_lib none_lib = SJ_LIB_INIT("absent", "SSMJIT_TEST_NO_SUCH_VARIABLE", SSMJIT_ERR_NVRTC_NOT_FOUND,
                                     nowhere, fake_symbols, none);
static void load_none(void) { sj_lib_load(&none_lib); }

static const char *fake_file(void)
{
    const char *path = getenv("SSMJIT_FAKE_NVRTC");
    if (!path || !*path)
        skip();
    return path;
}

/* Found: bound, a missing optional entry NULL, the file recorded. */
static void test_load(void **state)
{
    (void)state;
    char real[4096];
    assert_non_null(realpath(fake_file(), real));
    for (int attempt = 0; attempt < 2; attempt++) {
        assert_int_equal(sj_lib_get(&fake_lib, load_fake), SSMJIT_OK);
        int major = 0, minor = -1;
        assert_int_equal(fake.version(&major, &minor), 0);
        assert_int_equal(major, 13);
        assert_null(fake.absent);
        assert_string_equal(fake.path, real);
    }
}

/* A library without a required entry point: the error, every time, names
 * the entry point and the file. */
static void test_load_missing_symbol(void **state)
{
    (void)state;
    const char *path = fake_file();
    for (int attempt = 0; attempt < 2; attempt++) {
        assert_int_equal(sj_lib_get(&not_cublas_lib, load_not_cublas), SSMJIT_ERR_CUBLAS_NOT_FOUND);
        const char *msg = ssmjit_last_error();
        assert_non_null(strstr(msg, "no usable not cuBLAS library; tried:"));
        assert_non_null(strstr(msg, "cublasCreate_v2: missing from the loaded not cuBLAS ("));
        assert_non_null(strstr(msg, strrchr(path, '/')));
    }
}

/* Nothing opens: every name is in the error with why it failed. */
static void test_load_not_found(void **state)
{
    (void)state;
    for (int attempt = 0; attempt < 2; attempt++) {
        assert_int_equal(sj_lib_get(&none_lib, load_none), SSMJIT_ERR_NVRTC_NOT_FOUND);
        const char *msg = ssmjit_last_error();
        assert_non_null(strstr(msg, "no usable absent library; tried:\n  /nonexistent/libfake.so: "));
        assert_non_null(strstr(msg, "\n  /nonexistent/libfake2.so: "));
    }
}

/* The cuBLAS loader's own table, given a library that is not cuBLAS. */
static void test_cublas_wrong_library(void **state)
{
    (void)state;
    setenv("SSMJIT_CUBLAS_PATH", fake_file(), 1);
    const sj_cublas *api = NULL;
    assert_int_equal(sj_cublas_get(&api), SSMJIT_ERR_CUBLAS_NOT_FOUND);
    assert_null(api);
    assert_non_null(strstr(ssmjit_last_error(), "cublasCreate_v2: missing from the loaded cuBLAS"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bind),
        cmocka_unit_test(test_bind_missing),
        cmocka_unit_test(test_bind_resolver),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_load_missing_symbol),
        cmocka_unit_test(test_load_not_found),
        cmocka_unit_test(test_cublas_wrong_library),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
