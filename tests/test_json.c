/* The strict JSON parser: values, escapes and UTF-8, exact integers, every
 * rejection with its position, and no read past the input. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "json.h"
#include "test_util.h"

static sj_json_doc *parse_ok(const char *text, size_t len)
{
    sj_json_doc *doc = NULL;
    ssmjit_status st = sj_json_parse(text, len, "doc", &doc);
    if (st != SSMJIT_OK)
        print_error("unexpected failure: %s\n", ssmjit_last_error());
    assert_int_equal(st, SSMJIT_OK);
    return doc;
}

static void test_values(void **state)
{
    (void)state;
    const char *text = " {\"i\": -42, \"big\": 9223372036854775807, \"min\": -9223372036854775808,\n"
                       "  \"over\": 9223372036854775808, \"d\": -2.5e-3, \"z\": 0, \"f\": 1.0,\n"
                       "  \"t\": true, \"n\": null, \"no\": false, \"s\": \"x\",\n"
                       "  \"a\": [[], {}, [1, \"two\"]], \"o\": {\"k\": \"v\"}} \r\n\t";
    sj_json_doc *doc = parse_ok(text, strlen(text));
    const sj_json *r = sj_json_root(doc);
    assert_int_equal(r->type, SJ_JSON_OBJECT);
    assert_int_equal(r->count, 13);
    assert_string_equal(r->items[0].key, "i");
    assert_string_equal(r->items[12].key, "o");
    assert_int_equal(r->items[0].pos, 2);

    const sj_json *v = sj_json_get(r, "i");
    assert_true(v->is_int);
    assert_int_equal(v->i, -42);
    v = sj_json_get(r, "big");
    assert_true(v->is_int && v->i == INT64_MAX);
    v = sj_json_get(r, "min");
    assert_true(v->is_int && v->i == INT64_MIN);
    v = sj_json_get(r, "over"); /* past int64: still a number, not an integer */
    assert_int_equal(v->type, SJ_JSON_NUMBER);
    assert_false(v->is_int);
    assert_true(v->d == 9223372036854775808.0);
    v = sj_json_get(r, "d");
    assert_false(v->is_int);
    assert_true(v->d == -2.5e-3);
    assert_true(sj_json_get(r, "z")->is_int);
    v = sj_json_get(r, "f"); /* a fraction, even .0, is not an integer */
    assert_false(v->is_int);
    assert_true(v->d == 1.0);
    v = sj_json_get(r, "t");
    assert_true(v->type == SJ_JSON_BOOL && v->boolean);
    v = sj_json_get(r, "no");
    assert_true(v->type == SJ_JSON_BOOL && !v->boolean);
    assert_int_equal(sj_json_get(r, "n")->type, SJ_JSON_NULL);
    v = sj_json_get(r, "a");
    assert_int_equal(v->type, SJ_JSON_ARRAY);
    assert_int_equal(v->count, 3);
    assert_int_equal(v->items[0].type, SJ_JSON_ARRAY);
    assert_int_equal(v->items[0].count, 0);
    assert_int_equal(v->items[1].type, SJ_JSON_OBJECT);
    assert_int_equal(v->items[2].items[0].i, 1);
    assert_string_equal(v->items[2].items[1].str, "two");
    assert_null(v->items[2].items[1].key);
    assert_string_equal(sj_json_get(sj_json_get(r, "o"), "k")->str, "v");

    assert_null(sj_json_get(r, "missing"));
    assert_null(sj_json_get(sj_json_get(r, "a"), "i")); /* not an object */
    assert_null(sj_json_get(NULL, "i"));
    assert_string_equal(sj_json_type_name(SJ_JSON_OBJECT), "an object");
    assert_string_equal(sj_json_type_name(SJ_JSON_NUMBER), "a number");
    sj_json_free(doc);
    sj_json_free(NULL);

    doc = parse_ok("-0.0", 4); /* scalars at the top level too */
    assert_true(sj_json_root(doc)->d == 0 && signbit(sj_json_root(doc)->d));
    sj_json_free(doc);
    doc = parse_ok("1e-400", 6); /* underflow is a number, zero */
    assert_true(sj_json_root(doc)->d == 0);
    sj_json_free(doc);
}

static void test_strings(void **state)
{
    (void)state;
    const char *text = "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\", \"\\u00e9\\u20AC\", \"\\ud83d\\ude00\","
                       " \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\", \"\", \"a\\u0041b\"]";
    sj_json_doc *doc = parse_ok(text, strlen(text));
    const sj_json *r = sj_json_root(doc);
    assert_int_equal(r->count, 6);
    assert_string_equal(r->items[0].str, "\"\\/\b\f\n\r\t");
    assert_int_equal(r->items[0].len, 8);
    assert_string_equal(r->items[1].str, "\xc3\xa9\xe2\x82\xac");
    assert_string_equal(r->items[2].str, "\xf0\x9f\x98\x80"); /* surrogate pair: U+1F600 */
    assert_string_equal(r->items[3].str, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    assert_string_equal(r->items[4].str, "");
    assert_int_equal(r->items[4].len, 0);
    assert_string_equal(r->items[5].str, "aAb");
    sj_json_free(doc);

    /* A long string crosses the arena's block size. */
    size_t n = 200000;
    char *big = malloc(n + 3);
    assert_non_null(big);
    big[0] = '"';
    memset(big + 1, 'q', n);
    big[n + 1] = '"';
    doc = parse_ok(big, n + 2);
    assert_int_equal(sj_json_root(doc)->len, n);
    assert_int_equal(sj_json_root(doc)->str[n - 1], 'q');
    assert_int_equal(sj_json_root(doc)->str[n], '\0');
    sj_json_free(doc);
    free(big);
}

/* The input is a byte range: what follows it is never looked at. */
static void test_length_bounds_input(void **state)
{
    (void)state;
    sj_json_doc *doc = parse_ok("[1,2]garbage", 5);
    assert_int_equal(sj_json_root(doc)->count, 2);
    sj_json_free(doc);
    doc = parse_ok("1234", 2);
    assert_int_equal(sj_json_root(doc)->i, 12);
    sj_json_free(doc);
    doc = parse_ok("\"ab\"cd", 4);
    assert_string_equal(sj_json_root(doc)->str, "ab");
    sj_json_free(doc);
}

/* Every proper prefix of a document is rejected, and parsing it reads no
 * byte past its end: the prefix ends right at an unreadable page. */
static void test_prefixes_at_page_end(void **state)
{
    (void)state;
    const char *text = "{\"a\": [1, -2.5e+3, true, false, null], \"\\u00e9\\ud83d\\ude00\": "
                       "\"x\xc3\xa9y\", \"n\": {\"m\": []}, \"big\": 12345678901234567890}";
    size_t len = strlen(text), page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *map =
        mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(map != MAP_FAILED);
    assert_int_equal(mprotect(map + page, page, PROT_NONE), 0);
    for (size_t cut = 0; cut <= len; cut++) {
        char *at = (char *)map + page - cut;
        memcpy(at, text, cut);
        sj_json_doc *doc = NULL;
        ssmjit_status st = sj_json_parse(at, cut, "doc", &doc);
        if (cut == len) {
            assert_int_equal(st, SSMJIT_OK);
            assert_int_equal(sj_json_root(doc)->count, 4);
            sj_json_free(doc);
        } else {
            assert_int_equal(st, SSMJIT_ERR_INVALID_ARG);
            assert_non_null(strstr(ssmjit_last_error(), "doc: invalid JSON at byte"));
        }
    }
    munmap(map, 2 * page);
}

typedef struct {
    const char *text;
    size_t len; /* 0: strlen */
    size_t pos;
    const char *reason;
} bad_case;

static void test_rejections(void **state)
{
    (void)state;
    static const bad_case cases[] = {
        {"", 0, 0, "unexpected end of input, expected a value"},
        {"   ", 0, 3, "unexpected end of input"},
        {"{\"a\":1,}", 0, 7, "unexpected '}', expected a string key"},
        {"[1,]", 0, 3, "unexpected ']', expected a value"},
        {"{\"a\":1}x", 0, 7, "expected the end of input after the value"},
        {"{\"a\":1} {}", 0, 8, "expected the end of input"},
        {"{\"a\":1,\"b\":{},\"a\":2}", 0, 14, "duplicate key \"a\""},
        {"{\"k\":{\"x\":1,\"x\":1}}", 0, 12, "duplicate key \"x\""},
        {"[01]", 0, 1, "leading zero"},
        {"[-01]", 0, 1, "leading zero"},
        {"[1.]", 0, 1, "no digit after the decimal point"},
        {"[.5]", 0, 1, "unexpected '.'"},
        {"[1e]", 0, 1, "no digit in exponent"},
        {"[1e+]", 0, 1, "no digit in exponent"},
        {"[-]", 0, 1, "invalid number"},
        {"[+1]", 0, 1, "unexpected '+'"},
        {"[1e999]", 0, 1, "number out of range"},
        {"[-1e999]", 0, 1, "number out of range"},
        {"[NaN]", 0, 1, "unexpected 'N'"},
        {"[Infinity]", 0, 1, "unexpected 'I'"},
        {"\"abc", 0, 0, "unterminated string"},
        {"\"abc\\", 0, 4, "unterminated string"},
        {"\"a\\x\"", 0, 2, "invalid escape"},
        {"\"a\\'\"", 0, 2, "invalid escape"},
        {"\"\\u12G4\"", 0, 5, "bad hex digit in \\u escape"},
        {"\"\\u12\"}", 0, 5, "bad hex digit"},
        {"\"\\u12", 0, 3, "truncated \\u escape"},
        {"\"\\ud800\"", 0, 1, "high surrogate \\ud800 not followed by a low one"},
        {"\"\\ud800\\u0041\"", 0, 1, "not followed by a low one"},
        {"\"\\ud800\\ud800\"", 0, 1, "not followed by a low one"},
        {"\"\\udc00\"", 0, 1, "lone low surrogate \\udc00"},
        {"\"\\u0000\"", 0, 1, "\\u0000 is not allowed"},
        {"\"a\x01"
         "b\"",
         0, 2, "unescaped control character 0x01"},
        {"\"a\nb\"", 0, 2, "unescaped control character 0x0a"},
        {"\"a\0b\"", 5, 2, "NUL byte in string"},
        {"[1]\0", 4, 3, "unexpected byte 0x00"},
        {"\0", 1, 0, "unexpected byte 0x00, expected a value"},
        {"\"\xc0\xaf\"", 0, 1, "invalid UTF-8 lead byte 0xc0"},
        {"\"\x80\"", 0, 1, "invalid UTF-8 lead byte 0x80"},
        {"\"\xff\"", 0, 1, "invalid UTF-8 lead byte 0xff"},
        {"\"\xe0\x80\xaf\"", 0, 1, "invalid UTF-8 sequence"},     /* overlong */
        {"\"\xed\xa0\x80\"", 0, 1, "invalid UTF-8 sequence"},     /* a surrogate */
        {"\"\xf4\x90\x80\x80\"", 0, 1, "invalid UTF-8 sequence"}, /* past U+10FFFF */
        {"\"\xe2\x82\"", 0, 1, "invalid UTF-8 sequence"},
        {"\"\xe2\x82", 0, 1, "truncated UTF-8 sequence"},
        {"tru", 0, 0, "invalid literal (expected true)"},
        {"[nul]", 0, 1, "invalid literal (expected null)"},
        {"[falsey]", 0, 6, "expected ',' or ']'"},
        {"{\"a\" 1}", 0, 5, "expected ':' after the key"},
        {"{1:2}", 0, 1, "unexpected '1', expected a string key"},
        {"{\"a\":1 \"b\":2}", 0, 7, "expected ',' or '}'"},
        {"[1 2]", 0, 3, "expected ',' or ']'"},
        {"[1,2", 0, 4, "unexpected end of input, expected ',' or ']'"},
        {"// c\n1", 0, 0, "unexpected '/'"},
        {"{\n  \"a\": x\n}", 0, 9, "line 2, column 8): unexpected 'x'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const bad_case *c = &cases[i];
        size_t len = c->len ? c->len : strlen(c->text);
        sj_json_doc *doc = NULL;
        ssmjit_status st = sj_json_parse(c->text, len, "case.json", &doc);
        char prefix[64];
        snprintf(prefix, sizeof prefix, "case.json: invalid JSON at byte %zu (", c->pos);
        const char *msg = ssmjit_last_error();
        if (st != SSMJIT_ERR_INVALID_ARG || strncmp(msg, prefix, strlen(prefix)) != 0 ||
            !strstr(msg, c->reason))
            print_error("case %zu: status %d, message '%s', wanted '%s...%s'\n", i, st, msg, prefix,
                        c->reason);
        assert_int_equal(st, SSMJIT_ERR_INVALID_ARG);
        assert_null(doc);
        assert_memory_equal(msg, prefix, strlen(prefix));
        assert_non_null(strstr(msg, c->reason));
    }
}

static char *nested(int depth)
{
    char *s = malloc(2 * (size_t)depth + 1);
    assert_non_null(s);
    memset(s, '[', (size_t)depth);
    memset(s + depth, ']', (size_t)depth);
    s[2 * depth] = '\0';
    return s;
}

static void test_depth_limit(void **state)
{
    (void)state;
    char *ok = nested(SJ_JSON_MAX_DEPTH), *deep = nested(SJ_JSON_MAX_DEPTH + 1);
    sj_json_doc *doc = parse_ok(ok, strlen(ok));
    sj_json_free(doc);
    assert_int_equal(sj_json_parse(deep, strlen(deep), "deep", &doc), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "at byte 64 "));
    assert_non_null(strstr(ssmjit_last_error(), "nested deeper than 64 levels"));
    free(ok);
    free(deep);
    /* Far deeper input fails the same way, without recursing that deep. */
    char *very = nested(1000000);
    assert_int_equal(sj_json_parse(very, strlen(very), "deep", &doc), SSMJIT_ERR_INVALID_ARG);
    free(very);
}

/* Decimal points are '.' whatever the application's locale says. */
/* Objects of many keys (a tokenizer's vocabulary): all kept in input
 * order, and a duplicate anywhere is found at its second occurrence,
 * also among keys that differ only in their last bytes. */
static void test_many_keys(void **state)
{
    (void)state;
    enum { KEYS = 30000 };
    char *text = malloc((size_t)KEYS * 32 + 64);
    assert_non_null(text);
    static const int dups[] = {-1, 0, KEYS / 2, KEYS - 2};
    for (size_t d = 0; d < sizeof dups / sizeof *dups; d++) {
        const int dup = dups[d];
        size_t n = 0, dup_at = 0;
        text[n++] = '{';
        for (int i = 0; i < KEYS; i++) {
            /* the last key repeats key `dup` when dup >= 0 */
            int k = i == KEYS - 1 && dup >= 0 ? dup : i;
            if (i == KEYS - 1)
                dup_at = n + (i ? 1 : 0);
            n += (size_t)sprintf(text + n, "%s\"k%07d\":%d", i ? "," : "", k, i);
        }
        text[n++] = '}';
        sj_json_doc *doc;
        ssmjit_status st = sj_json_parse(text, n, "keys", &doc);
        if (dup < 0) {
            assert_int_equal(st, SSMJIT_OK);
            const sj_json *root = sj_json_root(doc);
            assert_int_equal(root->count, KEYS);
            for (int i = 0; i < KEYS; i += 997) {
                char key[16];
                snprintf(key, sizeof key, "k%07d", i);
                assert_string_equal(root->items[i].key, key);
                assert_int_equal(root->items[i].i, i);
            }
            sj_json_free(doc);
        } else {
            char want[96];
            assert_int_equal(st, SSMJIT_ERR_INVALID_ARG);
            snprintf(want, sizeof want, "at byte %zu ", dup_at);
            assert_non_null(strstr(ssmjit_last_error(), want));
            snprintf(want, sizeof want, "duplicate key \"k%07d\"", dup);
            assert_non_null(strstr(ssmjit_last_error(), want));
        }
    }
    free(text);
}

static void test_numbers_ignore_locale(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), cmd[4400];
    snprintf(cmd, sizeof cmd, "localedef -i de_DE -f UTF-8 '%s/de_DE.UTF-8' >/dev/null 2>&1", dir);
    (void)system(cmd); /* warnings give a nonzero status; setlocale tells */
    setenv("LOCPATH", dir, 1);
    if (!setlocale(LC_NUMERIC, "de_DE.UTF-8")) {
        tu_rmtree(dir);
        free(dir);
        skip();
    }
    assert_true(strtod("1.5", NULL) == 1.0); /* the locale bites plain strtod */
    sj_json_doc *doc = parse_ok("[1.5, 2.5e1]", 12);
    assert_true(sj_json_root(doc)->items[0].d == 1.5);
    assert_true(sj_json_root(doc)->items[1].d == 25.0);
    sj_json_free(doc);
    setlocale(LC_NUMERIC, "C");
    unsetenv("LOCPATH");
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_length_bounds_input),
        cmocka_unit_test(test_prefixes_at_page_end),
        cmocka_unit_test(test_rejections),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_many_keys),
        cmocka_unit_test(test_numbers_ignore_locale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
