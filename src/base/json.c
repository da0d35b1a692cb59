/* Strict JSON parser.  Values live in an arena owned by the document, so a
 * document is freed in one walk over its blocks whatever its shape.  Finished
 * children wait on one shared stack until their container closes and are
 * then copied to the arena in one piece. */
#include "json.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define ARENA_BLOCK 65536

typedef struct block {
    struct block *next;
    size_t used, cap;
    max_align_t data[];
} block;

struct sj_json_doc {
    block *blocks;
    sj_json root;
};

typedef struct {
    const unsigned char *p;
    size_t len, pos;
    const char *what;
    sj_json_doc *doc;
    sj_json *stack; /* children of the open containers */
    size_t top, stack_cap;
    char *sbuf; /* the string being decoded */
    size_t slen, scap;
    const sj_json **set; /* scratch for the duplicate-key check */
    size_t set_cap;
    ssmjit_status status;
} parser;

static void *arena_alloc(sj_json_doc *doc, size_t n)
{
    n = (n + alignof(max_align_t) - 1) / alignof(max_align_t) * alignof(max_align_t);
    block *b = doc->blocks;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->cap = cap;
        b->used = 0;
        b->next = doc->blocks;
        doc->blocks = b;
    }
    void *r = (char *)b->data + b->used;
    b->used += n;
    return r;
}

static int fail(parser *ps, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(parser *ps, size_t at, const char *fmt, ...)
{
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < ps->len; i++) {
        col++;
        if (ps->p[i] == '\n') {
            line++;
            col = 1;
        }
    }
    char reason[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    ps->status =
        sj_error(SSMJIT_ERR_INVALID_ARG, "%s: invalid JSON at byte %zu (line %zu, column %zu): %s",
                 ps->what, at, line, col, reason);
    return -1;
}

static int out_of_memory(parser *ps)
{
    ps->status = sj_error(SSMJIT_ERR_NO_MEMORY, "%s: out of memory parsing JSON", ps->what);
    return -1;
}

/* buf grown to hold n elements of size `size` (buf itself when it does);
 * NULL, with buf untouched, when out of memory. */
static void *reserve(parser *ps, void *buf, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap)
        return buf;
    size_t c = *cap ? *cap : 16;
    while (c < n)
        c *= 2;
    void *b = realloc(buf, c * size);
    if (!b) {
        out_of_memory(ps);
        return NULL;
    }
    *cap = c;
    return b;
}

static void skip_ws(parser *ps)
{
    while (ps->pos < ps->len) {
        unsigned char c = ps->p[ps->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        ps->pos++;
    }
}

static int unexpected(parser *ps, const char *expected)
{
    if (ps->pos >= ps->len)
        return fail(ps, ps->pos, "unexpected end of input, expected %s", expected);
    unsigned char c = ps->p[ps->pos];
    if (c > 0x20 && c < 0x7f)
        return fail(ps, ps->pos, "unexpected '%c', expected %s", c, expected);
    return fail(ps, ps->pos, "unexpected byte 0x%02x, expected %s", c, expected);
}

static int put_bytes(parser *ps, const void *s, size_t n)
{
    char *buf = reserve(ps, ps->sbuf, &ps->scap, ps->slen + n + 1, 1);
    if (!buf)
        return -1;
    ps->sbuf = buf;
    memcpy(ps->sbuf + ps->slen, s, n);
    ps->slen += n;
    return 0;
}

static int put_utf8(parser *ps, unsigned cp)
{
    unsigned char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xc0 | cp >> 6);
        b[1] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xe0 | cp >> 12);
        b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        b[2] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        b[0] = (unsigned char)(0xf0 | cp >> 18);
        b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        b[3] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    return put_bytes(ps, b, n);
}

/* Reads the 4 hex digits of a \u escape starting at `at`. */
static int hex4(parser *ps, size_t at, unsigned *out)
{
    if (ps->len - at < 4)
        return fail(ps, at, "truncated \\u escape");
    unsigned v = 0;
    for (size_t i = at; i < at + 4; i++) {
        unsigned char c = ps->p[i];
        unsigned d = c >= '0' && c <= '9'   ? c - (unsigned)'0'
                     : c >= 'a' && c <= 'f' ? c - 'a' + 10u
                     : c >= 'A' && c <= 'F' ? c - 'A' + 10u
                                            : 16u;
        if (d == 16)
            return fail(ps, i, "bad hex digit in \\u escape");
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

/* ps->pos is just past the backslash. */
static int parse_escape(parser *ps)
{
    size_t at = ps->pos - 1;
    if (ps->pos >= ps->len)
        return fail(ps, at, "unterminated string");
    unsigned char c = ps->p[ps->pos++];
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *hit = c ? strchr(from, c) : NULL;
    if (hit)
        return put_bytes(ps, &to[hit - from], 1);
    if (c != 'u')
        return fail(ps, at, "invalid escape");
    unsigned cp, lo;
    if (hex4(ps, ps->pos, &cp))
        return -1;
    ps->pos += 4;
    if (cp == 0)
        return fail(ps, at, "\\u0000 is not allowed (names are C strings)");
    if (cp >= 0xdc00 && cp <= 0xdfff)
        return fail(ps, at, "lone low surrogate \\u%04x", cp);
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (ps->len - ps->pos < 2 || ps->p[ps->pos] != '\\' || ps->p[ps->pos + 1] != 'u')
            return fail(ps, at, "high surrogate \\u%04x not followed by a low one", cp);
        if (hex4(ps, ps->pos + 2, &lo))
            return -1;
        if (lo < 0xdc00 || lo > 0xdfff)
            return fail(ps, at, "high surrogate \\u%04x not followed by a low one", cp);
        ps->pos += 6;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    return put_utf8(ps, cp);
}

/* Copies one multi-byte UTF-8 sequence, rejecting overlong forms, UTF-16
 * surrogates and code points above U+10FFFF. */
static int copy_utf8(parser *ps)
{
    size_t at = ps->pos;
    unsigned char c = ps->p[at], lo = 0x80, hi = 0xbf;
    size_t n;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4;
    else
        return fail(ps, at, "invalid UTF-8 lead byte 0x%02x", c);
    if (c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f;
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    if (ps->len - at < n)
        return fail(ps, at, "truncated UTF-8 sequence");
    for (size_t i = 1; i < n; i++) {
        unsigned char b = ps->p[at + i];
        if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xbf))
            return fail(ps, at, "invalid UTF-8 sequence");
    }
    ps->pos += n;
    return put_bytes(ps, ps->p + at, n);
}

/* ps->pos is at the opening quote.  The decoded string goes to the arena. */
static int parse_string(parser *ps, const char **out, size_t *out_len)
{
    size_t start = ps->pos++;
    ps->slen = 0;
    for (;;) {
        if (ps->pos >= ps->len)
            return fail(ps, start, "unterminated string");
        unsigned char c = ps->p[ps->pos];
        if (c == '"')
            break;
        int rc;
        if (c == '\\') {
            ps->pos++;
            rc = parse_escape(ps);
        } else if (c < 0x20) {
            rc = c ? fail(ps, ps->pos, "unescaped control character 0x%02x in string", c)
                   : fail(ps, ps->pos, "NUL byte in string");
        } else if (c >= 0x80) {
            rc = copy_utf8(ps);
        } else {
            size_t run = ps->pos;
            while (run < ps->len && ps->p[run] >= 0x20 && ps->p[run] < 0x80 && ps->p[run] != '"' &&
                   ps->p[run] != '\\')
                run++;
            rc = put_bytes(ps, ps->p + ps->pos, run - ps->pos);
            ps->pos = run;
        }
        if (rc)
            return -1;
    }
    ps->pos++;
    char *s = arena_alloc(ps->doc, ps->slen + 1);
    if (!s)
        return out_of_memory(ps);
    if (ps->slen)
        memcpy(s, ps->sbuf, ps->slen);
    s[ps->slen] = '\0';
    *out = s;
    *out_len = ps->slen;
    return 0;
}

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void c_locale_create(void) { c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0); }

static int is_digit(parser *ps, size_t at)
{
    return at < ps->len && ps->p[at] >= '0' && ps->p[at] <= '9';
}

static int parse_number(parser *ps, sj_json *v)
{
    size_t start = ps->pos, i = start;
    int neg = 0, integral = 1;
    if (i < ps->len && ps->p[i] == '-') {
        neg = 1;
        i++;
    }
    if (!is_digit(ps, i))
        return fail(ps, start, "invalid number");
    if (ps->p[i] == '0' && is_digit(ps, i + 1))
        return fail(ps, start, "leading zero in number");
    /* Magnitude accumulated as unsigned so that INT64_MIN fits. */
    uint64_t mag = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    int fits = 1;
    for (; is_digit(ps, i); i++) {
        unsigned d = ps->p[i] - '0';
        if (mag > (limit - d) / 10)
            fits = 0;
        else
            mag = mag * 10 + d;
    }
    if (i < ps->len && ps->p[i] == '.') {
        integral = 0;
        if (!is_digit(ps, ++i))
            return fail(ps, start, "no digit after the decimal point");
        while (is_digit(ps, i))
            i++;
    }
    if (i < ps->len && (ps->p[i] == 'e' || ps->p[i] == 'E')) {
        integral = 0;
        i++;
        if (i < ps->len && (ps->p[i] == '+' || ps->p[i] == '-'))
            i++;
        if (!is_digit(ps, i))
            return fail(ps, start, "no digit in exponent");
        while (is_digit(ps, i))
            i++;
    }
    ps->pos = i;
    v->type = SJ_JSON_NUMBER;
    v->is_int = integral && fits;
    if (v->is_int) {
        v->i = neg ? (int64_t)(0 - mag) : (int64_t)mag;
        v->d = (double)v->i;
        return 0;
    }
    /* strtod in the C locale: the application may have set one whose
     * decimal point is not '.'. */
    pthread_once(&c_locale_once, c_locale_create);
    if (!c_locale)
        return out_of_memory(ps);
    char small[64], *copy = i - start < sizeof small ? small : malloc(i - start + 1);
    if (!copy)
        return out_of_memory(ps);
    memcpy(copy, ps->p + start, i - start);
    copy[i - start] = '\0';
    v->d = strtod_l(copy, NULL, c_locale);
    if (copy != small)
        free(copy);
    if (isinf(v->d))
        return fail(ps, start, "number out of range");
    return 0;
}

static int literal(parser *ps, const char *word, sj_json_type type, int boolean, sj_json *v)
{
    size_t n = strlen(word);
    if (ps->len - ps->pos < n || memcmp(ps->p + ps->pos, word, n) != 0)
        return fail(ps, ps->pos, "invalid literal (expected %s)", word);
    ps->pos += n;
    v->type = type;
    v->boolean = boolean;
    return 0;
}

/* FNV-1a, then the splitmix64 finaliser: the slot comes from the top
 * bits, each of which depends on every byte, so that keys from an
 * untrusted file cannot be made to share slots short of a brute-force
 * search (FNV's low bits alone can be steered). */
static uint64_t key_hash(const char *key)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (const unsigned char *c = (const unsigned char *)key; *c; c++)
        h = (h ^ *c) * 0x100000001b3u;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9u;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebu;
    return h ^ (h >> 31);
}

/* The first member, in input order, whose key an earlier one has: an
 * open-addressed set of the keys seen (linear in the members; a sort of a
 * 50,000-key vocabulary took most of a tokenizer.json's parse). */
static int check_duplicates(parser *ps, const sj_json *items, size_t n)
{
    if (n < 2)
        return 0;
    size_t slots = 4;
    int bits = 2;
    while (slots < 2 * n) {
        slots *= 2;
        bits++;
    }
    const sj_json **set = reserve(ps, ps->set, &ps->set_cap, slots, sizeof *set);
    if (!set)
        return -1;
    ps->set = set;
    memset(set, 0, slots * sizeof *set);
    for (size_t i = 0; i < n; i++) {
        size_t j = (size_t)(key_hash(items[i].key) >> (64 - bits));
        for (; set[j]; j = (j + 1) & (slots - 1))
            if (strcmp(set[j]->key, items[i].key) == 0)
                return fail(ps, items[i].pos, "duplicate key \"%.100s\"", items[i].key);
        set[j] = &items[i];
    }
    return 0;
}

static int parse_value(parser *ps, int depth, sj_json *v);

/* Moves the children pushed since `base` into the arena as v's items. */
static int close_container(parser *ps, size_t base, sj_json *v)
{
    v->count = ps->top - base;
    if (v->count) {
        v->items = arena_alloc(ps->doc, v->count * sizeof *v->items);
        if (!v->items)
            return out_of_memory(ps);
        memcpy(v->items, ps->stack + base, v->count * sizeof *v->items);
    }
    ps->top = base;
    return v->type == SJ_JSON_OBJECT ? check_duplicates(ps, v->items, v->count) : 0;
}

static int parse_container(parser *ps, int depth, sj_json *v)
{
    int object = ps->p[ps->pos] == '{';
    char close = object ? '}' : ']';
    if (depth >= SJ_JSON_MAX_DEPTH)
        return fail(ps, ps->pos, "nested deeper than %d levels", SJ_JSON_MAX_DEPTH);
    v->type = object ? SJ_JSON_OBJECT : SJ_JSON_ARRAY;
    size_t base = ps->top;
    ps->pos++;
    skip_ws(ps);
    if (ps->pos < ps->len && ps->p[ps->pos] == close) {
        ps->pos++;
        return close_container(ps, base, v);
    }
    for (;;) {
        sj_json child = {0};
        const char *key = NULL;
        size_t key_pos = 0, key_len;
        skip_ws(ps);
        if (object) {
            if (ps->pos >= ps->len || ps->p[ps->pos] != '"')
                return unexpected(ps, "a string key");
            key_pos = ps->pos;
            if (parse_string(ps, &key, &key_len))
                return -1;
            skip_ws(ps);
            if (ps->pos >= ps->len || ps->p[ps->pos] != ':')
                return unexpected(ps, "':' after the key");
            ps->pos++;
        }
        if (parse_value(ps, depth + 1, &child))
            return -1;
        if (object) {
            child.key = key;
            child.pos = key_pos;
        }
        sj_json *stack = reserve(ps, ps->stack, &ps->stack_cap, ps->top + 1, sizeof *stack);
        if (!stack)
            return -1;
        ps->stack = stack;
        ps->stack[ps->top++] = child;
        skip_ws(ps);
        if (ps->pos < ps->len && ps->p[ps->pos] == ',') {
            ps->pos++;
            continue;
        }
        if (ps->pos < ps->len && ps->p[ps->pos] == close) {
            ps->pos++;
            return close_container(ps, base, v);
        }
        return unexpected(ps, object ? "',' or '}'" : "',' or ']'");
    }
}

static int parse_value(parser *ps, int depth, sj_json *v)
{
    skip_ws(ps);
    v->pos = ps->pos;
    if (ps->pos >= ps->len)
        return unexpected(ps, "a value");
    switch (ps->p[ps->pos]) {
    case '{':
    case '[': return parse_container(ps, depth, v);
    case '"': v->type = SJ_JSON_STRING; return parse_string(ps, &v->str, &v->len);
    case 't': return literal(ps, "true", SJ_JSON_BOOL, 1, v);
    case 'f': return literal(ps, "false", SJ_JSON_BOOL, 0, v);
    case 'n': return literal(ps, "null", SJ_JSON_NULL, 0, v);
    default:
        if (ps->p[ps->pos] == '-' || (ps->p[ps->pos] >= '0' && ps->p[ps->pos] <= '9'))
            return parse_number(ps, v);
        return unexpected(ps, "a value");
    }
}

ssmjit_status sj_json_parse(const char *text, size_t len, const char *what, sj_json_doc **out)
{
    sj_json_doc *doc = calloc(1, sizeof *doc);
    if (!doc)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "%s: out of memory parsing JSON", what);
    parser ps = {.p = (const unsigned char *)text, .len = len, .what = what, .doc = doc};
    int rc = parse_value(&ps, 0, &doc->root);
    if (rc == 0) {
        skip_ws(&ps);
        if (ps.pos < ps.len)
            rc = unexpected(&ps, "the end of input after the value");
    }
    free(ps.stack);
    free(ps.sbuf);
    free(ps.set);
    if (rc) {
        sj_json_free(doc);
        return ps.status;
    }
    *out = doc;
    return SSMJIT_OK;
}

const sj_json *sj_json_root(const sj_json_doc *doc) { return &doc->root; }

void sj_json_free(sj_json_doc *doc)
{
    if (!doc)
        return;
    while (doc->blocks) {
        block *b = doc->blocks;
        doc->blocks = b->next;
        free(b);
    }
    free(doc);
}

const sj_json *sj_json_get(const sj_json *obj, const char *key)
{
    if (!obj || obj->type != SJ_JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < obj->count; i++)
        if (strcmp(obj->items[i].key, key) == 0)
            return &obj->items[i];
    return NULL;
}

const char *sj_json_type_name(sj_json_type type)
{
    switch (type) {
    case SJ_JSON_NULL: return "null";
    case SJ_JSON_BOOL: return "a boolean";
    case SJ_JSON_NUMBER: return "a number";
    case SJ_JSON_STRING: return "a string";
    case SJ_JSON_ARRAY: return "an array";
    case SJ_JSON_OBJECT: return "an object";
    }
    return "an unknown value";
}
