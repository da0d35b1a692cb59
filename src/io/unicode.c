/* UTF-8, character classes and NFC over the tables of unicode_tables.c.
 * NFC follows UAX #15: full canonical decomposition, canonical ordering of
 * each run of nonzero combining classes, then canonical composition. */
#include "unicode.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

/* Hangul syllables, composed and decomposed by arithmetic (Unicode 3.12). */
#define HANGUL_S 0xAC00u
#define HANGUL_L 0x1100u
#define HANGUL_V 0x1161u
#define HANGUL_T 0x11A7u
#define HANGUL_L_COUNT 19u
#define HANGUL_V_COUNT 21u
#define HANGUL_T_COUNT 28u
#define HANGUL_N_COUNT (HANGUL_V_COUNT * HANGUL_T_COUNT)
#define HANGUL_S_COUNT (HANGUL_L_COUNT * HANGUL_N_COUNT)

/* No code point below this has a nonzero combining class or composes
 * with one before it, and those below it that decompose (Latin letters
 * with marks) compose back, so text of them alone is in NFC.  In UTF-8,
 * none of them has a lead byte from NFC_FIRST_CHANGING_LEAD on. */
#define NFC_FIRST_CHANGING 0x300u
#define NFC_FIRST_CHANGING_LEAD 0xCC

/* The longest full canonical decomposition of one code point. */
#define MAX_DECOMPOSED 4

size_t sj_utf8_next(const unsigned char *s, size_t len, uint32_t *cp)
{
    unsigned char b0 = s[0];
    if (b0 < 0x80) {
        *cp = b0;
        return 1;
    }
    *cp = SJ_UTF8_INVALID;
    if (b0 < 0xC2 || b0 > 0xF4)
        return 1;
    size_t need = b0 < 0xE0 ? 1 : b0 < 0xF0 ? 2 : 3;
    /* The second byte's range rules out overlong forms, surrogates and
     * code points past U+10FFFF. */
    unsigned char lo = b0 == 0xE0 ? 0xA0 : b0 == 0xF0 ? 0x90 : 0x80;
    unsigned char hi = b0 == 0xED ? 0x9F : b0 == 0xF4 ? 0x8F : 0xBF;
    uint32_t v = b0 & (0x3Fu >> need);
    for (size_t i = 1; i <= need; i++) {
        if (i >= len)
            return i;
        unsigned char b = s[i];
        if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF))
            return i;
        v = v << 6 | (b & 0x3Fu);
    }
    *cp = v;
    return need + 1;
}

size_t sj_utf8_put(uint32_t cp, unsigned char out[4])
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | cp >> 6);
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | cp >> 12);
        out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | cp >> 18);
    out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t sj_utf8_check(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        uint32_t cp;
        size_t n = sj_utf8_next(s + i, len - i, &cp);
        if (cp == SJ_UTF8_INVALID)
            return i;
        i += n;
    }
    return len;
}

static const sj_uni_range *find_range(const sj_uni_range *r, size_t n, uint32_t cp)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid].first)
            hi = mid;
        else if (cp > r[mid].last)
            lo = mid + 1;
        else
            return &r[mid];
    }
    return NULL;
}

sj_uni_class sj_uni_class_of(uint32_t cp)
{
    /* ASCII, most of what is tokenized, without the search */
    if (cp < 0x80) {
        if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z')
            return SJ_UNI_LETTER;
        if (cp >= '0' && cp <= '9')
            return SJ_UNI_NUMBER;
        return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) ? SJ_UNI_SPACE : SJ_UNI_OTHER;
    }
    const sj_uni_range *r = find_range(sj_uni_classes, sj_uni_classes_count, cp);
    return r ? (sj_uni_class)r->value : SJ_UNI_OTHER;
}

static uint8_t combining_class(uint32_t cp)
{
    if (cp < NFC_FIRST_CHANGING)
        return 0;
    const sj_uni_range *r = find_range(sj_uni_combining, sj_uni_combining_count, cp);
    return r ? r->value : 0;
}

static const sj_uni_decomposition *find_decomposition(uint32_t cp)
{
    size_t lo = 0, hi = sj_uni_decompositions_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sj_uni_decompositions[mid].cp == cp)
            return &sj_uni_decompositions[mid];
        if (sj_uni_decompositions[mid].cp < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Appends the full canonical decomposition of cp to out; returns how many
 * code points it wrote (at most MAX_DECOMPOSED). */
static size_t decompose(uint32_t cp, uint32_t *out)
{
    if (cp >= HANGUL_S && cp < HANGUL_S + HANGUL_S_COUNT) {
        uint32_t s = cp - HANGUL_S;
        out[0] = HANGUL_L + s / HANGUL_N_COUNT;
        out[1] = HANGUL_V + s % HANGUL_N_COUNT / HANGUL_T_COUNT;
        if (s % HANGUL_T_COUNT == 0)
            return 2;
        out[2] = HANGUL_T + s % HANGUL_T_COUNT;
        return 3;
    }
    const sj_uni_decomposition *d = cp < 0xC0 ? NULL : find_decomposition(cp);
    if (!d) {
        out[0] = cp;
        return 1;
    }
    size_t n = decompose(d->first, out);
    if (d->second)
        n += decompose(d->second, out + n);
    return n;
}

/* The primary composite of a + b, or 0 when there is none. */
static uint32_t compose(uint32_t a, uint32_t b)
{
    if (a >= HANGUL_L && a < HANGUL_L + HANGUL_L_COUNT && b >= HANGUL_V && b < HANGUL_V + HANGUL_V_COUNT)
        return HANGUL_S + ((a - HANGUL_L) * HANGUL_V_COUNT + (b - HANGUL_V)) * HANGUL_T_COUNT;
    if (a >= HANGUL_S && a < HANGUL_S + HANGUL_S_COUNT && (a - HANGUL_S) % HANGUL_T_COUNT == 0 &&
        b > HANGUL_T && b < HANGUL_T + HANGUL_T_COUNT)
        return a + (b - HANGUL_T);
    size_t lo = 0, hi = sj_uni_compositions_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const sj_uni_composition *c = &sj_uni_compositions[mid];
        if (c->first == a && c->second == b)
            return c->composite;
        if (c->first < a || (c->first == a && c->second < b))
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* Sorts cp[0..n) and ccc[0..n) by ccc, keeping the order of equal
 * classes (a counting sort: a run of thousands of marks stays linear);
 * tmp holds n. */
static void order_marks(uint32_t *cp, uint8_t *ccc, size_t n, uint32_t *tmp)
{
    size_t count[256] = {0}, at[256];
    for (size_t i = 0; i < n; i++)
        count[ccc[i]]++;
    at[0] = 0;
    for (size_t c = 1; c < 256; c++)
        at[c] = at[c - 1] + count[c - 1];
    for (size_t i = 0; i < n; i++)
        tmp[at[ccc[i]]++] = cp[i];
    memcpy(cp, tmp, n * sizeof *cp);
    for (size_t c = 0, k = 0; c < 256; k += count[c], c++)
        memset(ccc + k, (int)c, count[c]);
}

/* Canonical composition of cp[0..n) in place; returns the new count. */
static size_t compose_all(uint32_t *cp, const uint8_t *ccc, size_t n)
{
    size_t out = 0, starter = SIZE_MAX;
    uint8_t last_ccc = 0; /* of cp[out - 1] */
    for (size_t i = 0; i < n; i++) {
        uint8_t c = ccc[i];
        /* Not blocked from the starter: right after it, or after marks
         * of lower classes only (the run is ordered, so the last tells). */
        if (starter != SIZE_MAX && (out == starter + 1 || (last_ccc != 0 && last_ccc < c))) {
            uint32_t composite = compose(cp[starter], cp[i]);
            if (composite) {
                cp[starter] = composite;
                continue;
            }
        }
        if (c == 0)
            starter = out;
        last_ccc = c;
        cp[out++] = cp[i];
    }
    return out;
}

int sj_nfc_quick_yes(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] >= NFC_FIRST_CHANGING_LEAD)
            return 0;
    return 1;
}

/* The code points of UTF-8 s[0..len) fully decomposed, to cp when not
 * NULL; returns how many. */
static size_t decompose_all(const unsigned char *s, size_t len, uint32_t *cp)
{
    uint32_t scratch[MAX_DECOMPOSED];
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        uint32_t c;
        i += sj_utf8_next(s + i, len - i, &c);
        n += decompose(c, cp ? cp + n : scratch);
    }
    return n;
}

ssmjit_status sj_nfc(const char *s, size_t len, const char *what, char **out, size_t *out_len)
{
    const unsigned char *u = (const unsigned char *)s;
    /* sized by a first pass, since room for the longest decomposition of
     * every byte would be 36 bytes of scratch a byte of text */
    size_t n = decompose_all(u, len, NULL);
    uint32_t *cp = n <= SIZE_MAX / (2 * sizeof *cp) ? malloc((n ? n : 1) * 2 * sizeof *cp) : NULL;
    uint8_t *ccc = malloc(n ? n : 1);
    if (!cp || !ccc) {
        free(cp);
        free(ccc);
        return sj_error(SSMJIT_ERR_NO_MEMORY, "%s: out of memory normalizing %zu bytes", what, len);
    }
    uint32_t *tmp = cp + n;
    decompose_all(u, len, cp);
    for (size_t i = 0; i < n; i++)
        ccc[i] = combining_class(cp[i]);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && ccc[j] != 0)
            j++;
        if (j - i > 1)
            order_marks(cp + i, ccc + i, j - i, tmp);
        i = j + (j == i);
    }
    n = compose_all(cp, ccc, n);
    unsigned char buf[4];
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += sj_utf8_put(cp[i], buf);
    char *r = malloc(bytes + 1);
    if (r) {
        size_t at = 0;
        for (size_t i = 0; i < n; i++)
            at += sj_utf8_put(cp[i], (unsigned char *)r + at);
        r[at] = '\0';
    }
    free(cp);
    free(ccc);
    if (!r)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "%s: out of memory normalizing %zu bytes", what, len);
    *out = r;
    *out_len = bytes;
    return SSMJIT_OK;
}
