/* The byte-level BPE tokenizer: every case of tests/data/tokenizer/
 * expected.json (ids from Hugging Face's JS tokenizer, its NFC and its
 * decodes) with the fixture's merges in both spellings; the round trip
 * decode(encode(s)) = NFC(s); the options the fixture leaves out, on a
 * tokenizer written here; and each bad input or file with its message. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "json.h"
#include "ssmjit.h"
#include "tokenizer.h"
#include "unicode.h"

/* The fixture's tokenizer has 658 vocab tokens and 7 added after them. */
#define FIXTURE_VOCAB 665

static const char *data_dir(void)
{
    const char *dir = getenv("SSMJIT_TEST_DATA");
    assert_non_null(dir);
    return dir;
}

static ssmjit_tokenizer *load(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer%s%s", data_dir(), name[0] ? "/" : "", name);
    ssmjit_tokenizer *tok = NULL;
    ssmjit_status st = ssmjit_tokenizer_load(path, &tok);
    if (st != SSMJIT_OK)
        print_error("%s\n", ssmjit_last_error());
    assert_int_equal(st, SSMJIT_OK);
    return tok;
}

/* st is `want` and the thread's message holds `part`. */
static void expect_error(ssmjit_status st, ssmjit_status want, const char *part)
{
    if (st != want || !strstr(ssmjit_last_error(), part))
        print_error("got %s \"%s\", want %s with \"%s\"\n", ssmjit_status_string(st), ssmjit_last_error(),
                    ssmjit_status_string(want), part);
    assert_int_equal(st, want);
    assert_non_null(strstr(ssmjit_last_error(), part));
}

static sj_json_doc *expected_doc(char **text)
{
    char path[4096];
    size_t len;
    snprintf(path, sizeof path, "%s/tokenizer/expected.json", data_dir());
    assert_int_equal(sj_read_file(path, SJ_LINKS_FOLLOW, text, &len), SSMJIT_OK);
    sj_json_doc *doc;
    assert_int_equal(sj_json_parse(*text, len, "'expected.json'", &doc), SSMJIT_OK);
    return doc;
}

static size_t encode(const ssmjit_tokenizer *tok, const char *text, size_t len, int32_t *ids, size_t cap)
{
    size_t n = SIZE_MAX;
    ssmjit_status st = ssmjit_tokenizer_encode(tok, text, len, ids, cap, &n);
    if (st != SSMJIT_OK)
        print_error("%s\n", ssmjit_last_error());
    assert_int_equal(st, SSMJIT_OK);
    return n;
}

/* The decode of ids[0..n), malloc'd, sized with the size query first. */
static char *decode(const ssmjit_tokenizer *tok, const int32_t *ids, size_t n)
{
    size_t len = SIZE_MAX;
    expect_error(ssmjit_tokenizer_decode(tok, ids, n, NULL, 0, &len), SSMJIT_ERR_INVALID_ARG, "the NUL");
    char *text = malloc(len + 1);
    size_t again;
    assert_int_equal(ssmjit_tokenizer_decode(tok, ids, n, text, len + 1, &again), SSMJIT_OK);
    assert_int_equal(again, len);
    assert_int_equal(strlen(text), len);
    return text;
}

static void test_fixture_encodings(void **state)
{
    (void)state;
    ssmjit_tokenizer *toks[] = {load(""), load("tokenizer-merge-pairs.json")};
    char *file;
    sj_json_doc *doc = expected_doc(&file);
    const sj_json *cases = sj_json_get(sj_json_root(doc), "encode");
    size_t round_trips = 0;
    for (size_t c = 0; c < cases->count; c++) {
        const sj_json *one = &cases->items[c], *text = sj_json_get(one, "text"), *want = sj_json_get(one, "ids");
        const sj_json *nfc = sj_json_get(one, "nfc"), *decoded = sj_json_get(one, "decoded");
        char *norm;
        size_t norm_len;
        assert_int_equal(sj_nfc(text->str, text->len, "test", &norm, &norm_len), SSMJIT_OK);
        assert_string_equal(norm, nfc->str);
        free(norm);
        for (size_t t = 0; t < 2; t++) {
            int32_t ids[256];
            size_t n = encode(toks[t], text->str, text->len, ids, 256);
            if (n != want->count)
                print_error("case %zu (\"%s\"): %zu ids, want %zu\n", c, text->str, n, want->count);
            assert_int_equal(n, want->count);
            for (size_t i = 0; i < n; i++) {
                if (ids[i] != want->items[i].i)
                    print_error("case %zu (\"%s\"): ids[%zu] = %d, want %lld\n", c, text->str, i, ids[i],
                                (long long)want->items[i].i);
                assert_int_equal(ids[i], want->items[i].i);
            }
            /* the count alone, without ids */
            size_t count = SIZE_MAX;
            ssmjit_status st = ssmjit_tokenizer_encode(toks[t], text->str, text->len, NULL, 0, &count);
            assert_int_equal(st, n ? SSMJIT_ERR_INVALID_ARG : SSMJIT_OK);
            assert_int_equal(count, n);
            char *back = decode(toks[t], ids, n);
            assert_string_equal(back, decoded->str);
            /* decoded is NFC(text) unless an added token's content is not
             * in NFC, or lstrip or rstrip took spaces in */
            if (strcmp(decoded->str, nfc->str) == 0) {
                assert_string_equal(back, nfc->str);
                round_trips++;
            }
            free(back);
        }
    }
    assert_true(round_trips >= 2 * (cases->count - 2));
    sj_json_free(doc);
    free(file);
    ssmjit_tokenizer_destroy(toks[0]);
    ssmjit_tokenizer_destroy(toks[1]);
}

static void test_fixture_decodings(void **state)
{
    (void)state;
    ssmjit_tokenizer *tok = load("");
    assert_int_equal(ssmjit_tokenizer_vocab_size(tok), FIXTURE_VOCAB);
    char *file;
    sj_json_doc *doc = expected_doc(&file);
    const sj_json *cases = sj_json_get(sj_json_root(doc), "decode");
    assert_true(cases->count > 0);
    for (size_t c = 0; c < cases->count; c++) {
        const sj_json *one = &cases->items[c], *ids_v = sj_json_get(one, "ids"), *want = sj_json_get(one, "text");
        int32_t ids[16];
        for (size_t i = 0; i < ids_v->count; i++)
            ids[i] = (int32_t)ids_v->items[i].i;
        char *text = decode(tok, ids, ids_v->count);
        assert_string_equal(text, want->str);
        free(text);
    }
    sj_json_free(doc);
    free(file);
    ssmjit_tokenizer_destroy(tok);
}

static void test_bad_text_and_ids(void **state)
{
    (void)state;
    ssmjit_tokenizer *tok = load("tokenizer.json");
    static const struct {
        const char *text;
        const char *where;
    } bad[] = {
        {"abc\xff", "at byte 3 (0xFF)"},        {"ab\xc3", "at byte 2 (0xC3)"},
        {"\xed\xa0\x80", "at byte 0 (0xED)"},   {"x\xc0\xaf", "at byte 1 (0xC0)"},
        {"\xf4\x90\x80\x80", "at byte 0 (0xF4)"}, {"ok \x80", "at byte 3 (0x80)"},
    };
    int32_t ids[8];
    size_t n;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        expect_error(ssmjit_tokenizer_encode(tok, bad[i].text, strlen(bad[i].text), ids, 8, &n),
                     SSMJIT_ERR_INVALID_ARG, "not UTF-8");
        assert_non_null(strstr(ssmjit_last_error(), bad[i].where));
    }
    /* NUL is a character like any other */
    assert_int_equal(encode(tok, "a\0b", 3, ids, 8), 3);
    /* too small a cap: the count says what is needed */
    expect_error(ssmjit_tokenizer_encode(tok, "Hello world", 11, ids, 1, &n), SSMJIT_ERR_INVALID_ARG,
                 "the text has 2 tokens, cap is 1");
    assert_int_equal(n, 2);
    char text[8];
    size_t len;
    const int32_t hello[] = {356, 541};
    expect_error(ssmjit_tokenizer_decode(tok, hello, 2, text, sizeof text, &len), SSMJIT_ERR_INVALID_ARG,
                 "the text is 11 bytes, cap is 8");
    assert_int_equal(len, 11);
    const int32_t out_of_range[] = {356, FIXTURE_VOCAB}, negative[] = {-1};
    expect_error(ssmjit_tokenizer_decode(tok, out_of_range, 2, text, sizeof text, &len), SSMJIT_ERR_INVALID_ARG,
                 "ids[1] = 665 is outside the vocabulary");
    expect_error(ssmjit_tokenizer_decode(tok, negative, 1, text, sizeof text, &len), SSMJIT_ERR_INVALID_ARG,
                 "ids[0] = -1 is outside the vocabulary");
    /* NULLs */
    const ssmjit_status invalid = SSMJIT_ERR_INVALID_ARG;
    expect_error(ssmjit_tokenizer_encode(NULL, "a", 1, ids, 8, &n), invalid, "tok is NULL");
    expect_error(ssmjit_tokenizer_encode(tok, NULL, 1, ids, 8, &n), invalid, "text (with len > 0)");
    expect_error(ssmjit_tokenizer_encode(tok, "a", 1, NULL, 8, &n), invalid, "ids (with cap > 0)");
    expect_error(ssmjit_tokenizer_encode(tok, "a", 1, ids, 8, NULL), invalid, "n is NULL");
    expect_error(ssmjit_tokenizer_decode(tok, NULL, 1, text, 8, &len), invalid, "ids (with n > 0)");
    expect_error(ssmjit_tokenizer_decode(tok, hello, 1, NULL, 8, &len), invalid, "text (with cap > 0)");
    expect_error(ssmjit_tokenizer_decode(tok, hello, 1, text, 8, NULL), invalid, "len is NULL");
    assert_int_equal(encode(tok, NULL, 0, NULL, 0), 0);
    assert_int_equal(ssmjit_tokenizer_decode(tok, NULL, 0, text, 1, &len), SSMJIT_OK);
    assert_int_equal(len, 0);
    assert_string_equal(text, "");
    assert_int_equal(ssmjit_tokenizer_vocab_size(NULL), 0);
    ssmjit_tokenizer_destroy(NULL);
    ssmjit_tokenizer_destroy(tok);
}

/* A tokenizer.json written here: the 256 byte tokens (ids 0..255, in byte
 * order), "ab" = 256, "abc" = 257 and the merges "a b", "ab c"; each field
 * given replaces its default (a JSON value, "" to leave it out).
 * drop_byte (1..255) leaves that byte's token out. */
typedef struct tiny {
    const char *normalizer, *pre_tokenizer, *decoder, *model_type, *model_extra, *vocab_extra, *merges,
        *added, *extra;
    int drop_byte;
} tiny;

#define TINY(...) ((tiny){__VA_ARGS__})

static char *tiny_json(tiny t)
{
    size_t cap = 65536, n = 0;
    char *s = malloc(cap);
    assert_non_null(s);
#define PUT(...) (n += (size_t)snprintf(s + n, cap - n, __VA_ARGS__), assert_true(n < cap))
    PUT("{\"version\": \"1.0\"");
    if (!t.normalizer || t.normalizer[0])
        PUT(", \"normalizer\": %s", t.normalizer ? t.normalizer : "{\"type\": \"NFC\"}");
    if (!t.pre_tokenizer || t.pre_tokenizer[0])
        PUT(", \"pre_tokenizer\": %s",
            t.pre_tokenizer ? t.pre_tokenizer : "{\"type\": \"ByteLevel\", \"add_prefix_space\": false}");
    if (!t.decoder || t.decoder[0])
        PUT(", \"decoder\": %s", t.decoder ? t.decoder : "{\"type\": \"ByteLevel\"}");
    if (t.added)
        PUT(", \"added_tokens\": %s", t.added);
    if (t.extra)
        PUT(", %s", t.extra);
    PUT(", \"model\": {\"type\": %s, %s \"vocab\": {", t.model_type ? t.model_type : "\"BPE\"",
        t.model_extra ? t.model_extra : "");
    int next = 256;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        unsigned char spelled[4];
        size_t k = sj_utf8_put(printable ? (uint32_t)b : (uint32_t)next++, spelled);
        if (b != t.drop_byte || b == 0)
            PUT("\"%s%.*s\": %d, ", b == '"' || b == '\\' ? "\\" : "", (int)k, (const char *)spelled, b);
    }
    PUT("\"ab\": 256, \"abc\": 257%s}, \"merges\": %s}}", t.vocab_extra ? t.vocab_extra : "",
        t.merges ? t.merges : "[\"a b\", \"ab c\"]");
#undef PUT
    return s;
}

static ssmjit_status parse_tiny(tiny t, ssmjit_tokenizer **tok)
{
    char *json = tiny_json(t);
    ssmjit_status st = sj_tokenizer_parse(json, strlen(json), "tiny.json", tok);
    free(json);
    return st;
}

/* The ids of text with the tiny tokenizer t, as "1,2,3". */
static void assert_tiny_ids(tiny t, const char *text, const char *want)
{
    ssmjit_tokenizer *tok;
    ssmjit_status st = parse_tiny(t, &tok);
    if (st != SSMJIT_OK)
        print_error("%s\n", ssmjit_last_error());
    assert_int_equal(st, SSMJIT_OK);
    int32_t ids[64];
    size_t n = encode(tok, text, strlen(text), ids, 64);
    char got[512] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%d", i ? "," : "", ids[i]);
    assert_string_equal(got, want);
    ssmjit_tokenizer_destroy(tok);
}

static void test_options(void **state)
{
    (void)state;
    assert_tiny_ids(TINY(0), "abc abcc", "257,32,257,99");
    /* without the regex, the spaces join the words */
    assert_tiny_ids(TINY(.pre_tokenizer = "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
                                          "\"use_regex\": false}"),
                    "abc abc", "257,32,257");
    /* the Rust crate's default adds a space before each part */
    assert_tiny_ids(TINY(.pre_tokenizer = "{\"type\": \"ByteLevel\"}"), "ab<x>ab",
                    "32,256,60,120,62,256");
    assert_tiny_ids(TINY(.pre_tokenizer = "{\"type\": \"ByteLevel\"}",
                         .added = "[{\"id\": 300, \"content\": \"<x>\", \"special\": true}]"),
                    "ab<x> ab", "32,256,300,32,256");
    /* ignore_merges: a piece in the vocab is one token, merges or not */
    assert_tiny_ids(TINY(.merges = "[\"a b\"]"), "abc", "256,99");
    assert_tiny_ids(TINY(.merges = "[\"a b\"]", .model_extra = "\"ignore_merges\": true,"), "abc abcd",
                    "257,32,256,99,100");
    /* no normalizer: e + U+0301 stays two characters */
    assert_tiny_ids(TINY(.normalizer = "null"), "e\xcc\x81", "101,204,129");
    assert_tiny_ids(TINY(0), "e\xcc\x81", "195,169");
    /* a normalized token without a normalizer, and lstrip alone */
    assert_tiny_ids(TINY(.normalizer = "", .added = "[{\"id\": 258, \"content\": \"ab\", \"normalized\": true, "
                                                   "\"lstrip\": true}]"),
                    "c  ab c", "99,258,32,99");
    /* a pair listed twice keeps its last rank */
    assert_tiny_ids(TINY(.vocab_extra = ", \"bc\": 258", .merges = "[\"b c\", \"a b\", \"b c\", \"ab c\"]"),
                    "abc", "257");
    /* an added token's content decodes as written, where the vocab has
     * its id too; ids between the vocab and an added token have none */
    ssmjit_tokenizer *tok;
    assert_int_equal(parse_tiny(TINY(.added = "[{\"id\": 97, \"content\": \"<a>\", \"special\": true}, "
                                              "{\"id\": 300, \"content\": \"<z>\", \"special\": true}]"),
                                &tok),
                     SSMJIT_OK);
    assert_int_equal(ssmjit_tokenizer_vocab_size(tok), 301);
    const int32_t ids[] = {97, 300, 98}, gap[] = {98, 280};
    char text[32];
    size_t len;
    assert_int_equal(ssmjit_tokenizer_decode(tok, ids, 3, text, sizeof text, &len), SSMJIT_OK);
    assert_string_equal(text, "<a><z>b");
    expect_error(ssmjit_tokenizer_decode(tok, gap, 2, text, sizeof text, &len), SSMJIT_ERR_INVALID_ARG,
                 "ids[1] = 280 is no token's id");
    ssmjit_tokenizer_destroy(tok);
}

static void expect_tiny_error(tiny t, ssmjit_status want, const char *part)
{
    ssmjit_tokenizer *tok = (ssmjit_tokenizer *)&tok;
    expect_error(parse_tiny(t, &tok), want, part);
    assert_null(tok);
    assert_non_null(strstr(ssmjit_last_error(), "'tiny.json'"));
}

static void test_bad_files(void **state)
{
    (void)state;
    const ssmjit_status bad = SSMJIT_ERR_INVALID_ARG, unsupported = SSMJIT_ERR_UNSUPPORTED;
    expect_tiny_error(TINY(.model_type = "\"WordPiece\""), unsupported,
                      "model \"WordPiece\" is not supported (only BPE)");
    expect_tiny_error(TINY(.model_type = "3"), bad, "\"model.type\" must be a string, not a number");
    expect_tiny_error(TINY(.normalizer = "{\"type\": \"NFKC\"}"), unsupported,
                      "normalizer \"NFKC\" is not supported (only NFC or none)");
    expect_tiny_error(TINY(.normalizer = "{\"lowercase\": true}"), bad, "\"normalizer.type\" is missing");
    expect_tiny_error(TINY(.pre_tokenizer = "{\"type\": \"Whitespace\"}"), unsupported,
                      "pre_tokenizer \"Whitespace\" is not supported (only ByteLevel)");
    expect_tiny_error(TINY(.pre_tokenizer = ""), unsupported, "pre_tokenizer none is not supported");
    expect_tiny_error(TINY(.pre_tokenizer = "[]"), bad,
                      "\"pre_tokenizer\" must be an object or null, not an array");
    expect_tiny_error(TINY(.pre_tokenizer = "{\"type\": \"ByteLevel\", \"use_regex\": 1}"), bad,
                      "\"pre_tokenizer.use_regex\" must be true or false, not a number");
    expect_tiny_error(TINY(.decoder = "{\"type\": \"BPEDecoder\"}"), unsupported, "decoder \"BPEDecoder\"");
    expect_tiny_error(TINY(.extra = "\"post_processor\": {\"type\": \"TemplateProcessing\"}"), unsupported,
                      "post_processor \"TemplateProcessing\" is not supported (only ByteLevel or none)");
    expect_tiny_error(TINY(.extra = "\"truncation\": {\"max_length\": 8}"), unsupported, "truncation set");
    expect_tiny_error(TINY(.model_extra = "\"dropout\": 0.1,"), unsupported, "model.dropout above 0");
    expect_tiny_error(TINY(.model_extra = "\"byte_fallback\": true,"), unsupported, "model.byte_fallback true");
    expect_tiny_error(TINY(.model_extra = "\"end_of_word_suffix\": \"</w>\","), unsupported,
                      "model.end_of_word_suffix other than \"\"");
    expect_tiny_error(TINY(.vocab_extra = ", \"xyz\": -1"), bad,
                      "\"model.vocab[\"xyz\"]\" must be an integer id in 0..16777215");
    expect_tiny_error(TINY(.vocab_extra = ", \"xyz\": 5"), bad, "is 5, the id of another token too");
    expect_tiny_error(TINY(.drop_byte = 'A'), bad, "\"model.vocab\" has no token for byte 0x41 (\"A\")");
    expect_tiny_error(TINY(.drop_byte = ' '), bad, "no token for byte 0x20 (\"\xc4\xa0\")");
    expect_tiny_error(TINY(.merges = "[\"a b\", \"ab\"]"), bad,
                      "\"model.merges[1]\" is \"ab\", not two tokens separated by one space");
    expect_tiny_error(TINY(.merges = "[\"a  b\"]"), bad, "not two tokens separated by one space");
    expect_tiny_error(TINY(.merges = "[[\"a\"]]"), bad,
                      "\"model.merges[0]\" must be a string \"a b\" or an array of two strings, not an array");
    expect_tiny_error(TINY(.merges = "[\"zz b\"]"), bad, "\"model.merges[0]\": \"zz\" is not in model.vocab");
    expect_tiny_error(TINY(.merges = "[\"a q\"]"), bad,
                      "\"model.merges[0]\": the merge of \"a\" and \"q\" is not in model.vocab");
    expect_tiny_error(TINY(.merges = "{}"), bad, "\"model.merges\" must be an array, not an object");
    expect_tiny_error(TINY(.added = "{}"), bad, "\"added_tokens\" must be an array, not an object");
    expect_tiny_error(TINY(.added = "[{\"id\": 300}]"), bad, "\"added_tokens[0].content\" is missing");
    expect_tiny_error(TINY(.added = "[{\"id\": 300, \"content\": \"\"}]"), bad,
                      "\"added_tokens[0].content\" is empty");
    expect_tiny_error(TINY(.added = "[{\"id\": 1.5, \"content\": \"x\"}]"), bad,
                      "\"added_tokens[0].id\" must be an integer id");
    expect_tiny_error(TINY(.added = "[{\"id\": 300, \"content\": \"<x>\", \"single_word\": true}]"), unsupported,
                      "added_tokens[0].single_word true is not supported");
    expect_tiny_error(TINY(.added = "[{\"id\": 300, \"content\": \"<x>\", \"lstrip\": \"yes\"}]"), bad,
                      "\"added_tokens[0].lstrip\" must be true or false, not a string");
    expect_tiny_error(TINY(.added = "[{\"id\": 300, \"content\": \"<x>\"}, "
                                    "{\"id\": 300, \"content\": \"<y>\"}]"),
                      bad, "\"added_tokens[1].id\" is 300, the id of an earlier added token too");
    expect_tiny_error(TINY(.added = "[{\"id\": 300, \"content\": \"<x>\"}, "
                                    "{\"id\": 301, \"content\": \"<x>\"}]"),
                      bad, "added tokens 300 and 301 are both \"<x>\"");

    /* not JSON, or not a tokenizer */
    char *json = tiny_json(TINY(0));
    ssmjit_tokenizer *tok;
    expect_error(sj_tokenizer_parse(json, strlen(json) / 2, "cut.json", &tok), bad,
                 "'cut.json': invalid JSON at byte");
    free(json);
    expect_error(sj_tokenizer_parse("[]", 2, "a.json", &tok), bad,
                 "'a.json': the file must hold an object, not an array");
    const char *no_model = "{\"decoder\": {\"type\": \"ByteLevel\"}}";
    expect_error(sj_tokenizer_parse(no_model, strlen(no_model), "a.json", &tok), bad, "\"model\" is missing");
    expect_error(ssmjit_tokenizer_load("/nonexistent/tokenizer.json", &tok), SSMJIT_ERR_IO, "/nonexistent");
    assert_null(tok);
    expect_error(ssmjit_tokenizer_load(data_dir(), &tok), SSMJIT_ERR_IO, "/tokenizer.json");
    expect_error(ssmjit_tokenizer_load(NULL, &tok), bad, "path is NULL");
    expect_error(ssmjit_tokenizer_load("x", NULL), bad, "out is NULL");
}

/* Long inputs stay fast: a long piece (the heap's merges), a long run of
 * marks (NFC's ordering) and a long text round-trip. */
static void test_long_inputs(void **state)
{
    (void)state;
    ssmjit_tokenizer *tok = load("");
    size_t len = 200000;
    char *text = malloc(len + 1);
    int32_t *ids = malloc(len * sizeof *ids);
    for (size_t i = 0; i < len; i++)
        text[i] = "ab"[i % 2];
    size_t n = encode(tok, text, len, ids, len);
    assert_true(n > 0 && n <= len);
    char *back = decode(tok, ids, n);
    assert_memory_equal(back, text, len);
    free(back);
    /* x (which composes with neither) and 49999 acute accents (U+0301,
     * ccc 230) each after a cedilla (U+0327, ccc 202): NFC moves the
     * cedillas first */
    size_t marks = (len - 1) / 4, marked = 1 + 4 * marks;
    char *want = malloc(marked);
    text[0] = want[0] = 'x';
    for (size_t i = 0; i < marks; i++) {
        memcpy(text + 1 + 4 * i, "\xcc\x81\xcc\xa7", 4);
        memcpy(want + 1 + 2 * i, "\xcc\xa7", 2);
        memcpy(want + 1 + 2 * (marks + i), "\xcc\x81", 2);
    }
    char *nfc;
    size_t nfc_len;
    assert_int_equal(sj_nfc(text, marked, "test", &nfc, &nfc_len), SSMJIT_OK);
    assert_int_equal(nfc_len, marked);
    assert_memory_equal(nfc, want, marked);
    free(want);
    n = encode(tok, text, marked, ids, len);
    back = decode(tok, ids, n);
    assert_memory_equal(back, nfc, marked);
    free(back);
    free(nfc);
    /* prose: every fixture string over and over */
    char *file;
    sj_json_doc *doc = expected_doc(&file);
    const sj_json *cases = sj_json_get(sj_json_root(doc), "encode");
    size_t at = 0;
    for (size_t c = 0; at + 256 < len; c = (c + 1) % cases->count) {
        const sj_json *s = sj_json_get(&cases->items[c], "nfc");
        if (!strstr(s->str, "<|mask|>") && !strstr(s->str, "ngstr")) {
            memcpy(text + at, s->str, s->len);
            at += s->len;
        }
    }
    n = encode(tok, text, at, ids, len);
    back = decode(tok, ids, n);
    assert_int_equal(strlen(back), at);
    assert_memory_equal(back, text, at);
    free(back);
    sj_json_free(doc);
    free(file);
    free(text);
    free(ids);
    ssmjit_tokenizer_destroy(tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_encodings), cmocka_unit_test(test_fixture_decodings),
        cmocka_unit_test(test_bad_text_and_ids),  cmocka_unit_test(test_options),
        cmocka_unit_test(test_bad_files),         cmocka_unit_test(test_long_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
