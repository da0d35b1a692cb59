/* The Unicode the tokenizer needs: strict UTF-8, the character classes of
 * the GPT-2 pre-tokenizer regex (\p{L}, \p{N}, \s) and NFC.  The tables
 * come from tools/gen_unicode_tables.py (unicode_tables.c names the Unicode
 * version); this header and unicode.c are written by hand. */
#ifndef SSMJIT_UNICODE_H
#define SSMJIT_UNICODE_H

#include <stddef.h>
#include <stdint.h>

#include "ssmjit.h"

/* What sj_utf8_next gives for a sequence that is not UTF-8. */
#define SJ_UTF8_INVALID UINT32_MAX

typedef enum sj_uni_class {
    SJ_UNI_OTHER = 0, /* none of the below */
    SJ_UNI_LETTER,    /* \p{L}: general category Lu, Ll, Lt, Lm or Lo */
    SJ_UNI_NUMBER,    /* \p{N}: Nd, Nl or No */
    SJ_UNI_SPACE      /* \s: the White_Space property */
} sj_uni_class;

/* A run of code points first..last sharing `value` (a class or a
 * canonical combining class). */
typedef struct sj_uni_range {
    uint32_t first, last;
    uint8_t value;
} sj_uni_range;

/* A canonical decomposition mapping, one level deep: cp -> first second
 * (second 0 for a singleton). */
typedef struct sj_uni_decomposition {
    uint32_t cp, first, second;
} sj_uni_decomposition;

/* A primary composite: first + second -> composite. */
typedef struct sj_uni_composition {
    uint32_t first, second, composite;
} sj_uni_composition;

/* The generated tables, each sorted (compositions by first, then second);
 * Hangul syllables are in none of them (unicode.c computes them). */
extern const sj_uni_range sj_uni_classes[];       /* classes other than SJ_UNI_OTHER */
extern const size_t sj_uni_classes_count;
extern const sj_uni_range sj_uni_combining[];     /* nonzero combining classes */
extern const size_t sj_uni_combining_count;
extern const sj_uni_decomposition sj_uni_decompositions[];
extern const size_t sj_uni_decompositions_count;
extern const sj_uni_composition sj_uni_compositions[];
extern const size_t sj_uni_compositions_count;

/* Reads one character from s[0..len) (len >= 1): returns its length in
 * bytes and sets *cp.  Strict: overlong forms, surrogates and code points
 * past U+10FFFF are not UTF-8.  For bytes that are not, *cp is
 * SJ_UTF8_INVALID and the length is that of the maximal subpart (Unicode's
 * "substitution of maximal subparts", as WHATWG's TextDecoder and Rust's
 * from_utf8_lossy replace them: one U+FFFD for each). */
size_t sj_utf8_next(const unsigned char *s, size_t len, uint32_t *cp);

/* Writes cp (a scalar value) as UTF-8 to out; returns its length (1..4). */
size_t sj_utf8_put(uint32_t cp, unsigned char out[4]);

/* The offset of the first byte of s[0..len) that does not begin a UTF-8
 * character, or len when all of s is UTF-8. */
size_t sj_utf8_check(const unsigned char *s, size_t len);

/* The pre-tokenizer's class of a code point. */
sj_uni_class sj_uni_class_of(uint32_t cp);

/* Whether UTF-8 s[0..len) is surely in NFC already: it has no code point
 * from U+0300 on (below which none has a nonzero combining class or
 * composes with one before it, and each that decomposes composes back). */
int sj_nfc_quick_yes(const char *s, size_t len);

/* s[0..len), which must be valid UTF-8, in Normalization Form C, as a
 * malloc'd buffer *out of *out_len bytes (NUL-terminated; free it).
 * SSMJIT_ERR_NO_MEMORY naming `what` when it cannot be had. */
ssmjit_status sj_nfc(const char *s, size_t len, const char *what, char **out, size_t *out_len);

#endif
