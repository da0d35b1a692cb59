/* SHA-256 against the FIPS 180-4 examples and against the system's
 * sha256sum on fresh random data. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"
#include "test_util.h"

static void digest_hex(const void *data, size_t len, size_t chunk, char out[65])
{
    sj_sha256 h;
    uint8_t d[32];
    sj_sha256_init(&h);
    for (size_t off = 0; off < len; off += chunk)
        sj_sha256_update(&h, (const char *)data + off, len - off < chunk ? len - off : chunk);
    sj_sha256_final(&h, d);
    sj_hex(d, 32, out);
}

static void test_fips_vectors(void **state)
{
    (void)state;
    char hex[65];
    digest_hex("abc", 3, 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    digest_hex("", 0, 1, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    digest_hex(m, strlen(m), 7, hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char *a = malloc(1000000);
    assert_non_null(a);
    memset(a, 'a', 1000000);
    digest_hex(a, 1000000, 4096, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
}

static void test_random_against_sha256sum(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), path[4200], cmd[4300], expect[65] = "", hex[65];
    for (int round = 0; round < 8; round++) {
        size_t len = (size_t)tu_uniform(0, 5000);
        unsigned char *buf = malloc(len + 1);
        for (size_t i = 0; i < len; i++)
            buf[i] = (unsigned char)tu_uniform(0, 256);
        snprintf(path, sizeof path, "%s/blob", dir);
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(buf, 1, len, f), len);
        fclose(f);
        snprintf(cmd, sizeof cmd, "sha256sum '%s'", path);
        FILE *p = popen(cmd, "r");
        assert_non_null(p);
        assert_int_equal(fscanf(p, "%64s", expect), 1);
        pclose(p);
        digest_hex(buf, len, 1 + round * 13, hex);
        assert_string_equal(hex, expect);
        free(buf);
    }
    tu_rmtree(dir);
    free(dir);
}

static void test_fields_are_length_prefixed(void **state)
{
    (void)state;
    uint8_t a[32], b[32];
    sj_sha256 h;
    sj_sha256_init(&h);
    sj_sha256_field(&h, "ab", 2);
    sj_sha256_field(&h, "c", 1);
    sj_sha256_final(&h, a);
    sj_sha256_init(&h);
    sj_sha256_field(&h, "a", 1);
    sj_sha256_field(&h, "bc", 2);
    sj_sha256_final(&h, b);
    assert_memory_not_equal(a, b, 32);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fips_vectors),
        cmocka_unit_test(test_random_against_sha256sum),
        cmocka_unit_test(test_fields_are_length_prefixed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
