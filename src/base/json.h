/* A small strict JSON (RFC 8259) parser for safetensors headers, their
 * shard indexes and config.json.  The input is a byte range that need not be
 * NUL-terminated; nothing past it is read.  Strict means: one value and
 * only whitespace after it, no comments or trailing commas, valid UTF-8, no
 * NUL (raw or as \u0000, since names become C strings), no lone surrogates,
 * no duplicate key within an object, nesting at most SJ_JSON_MAX_DEPTH. */
#ifndef SSMJIT_JSON_H
#define SSMJIT_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "ssmjit.h"

#define SJ_JSON_MAX_DEPTH 64

typedef enum sj_json_type {
    SJ_JSON_NULL,
    SJ_JSON_BOOL,
    SJ_JSON_NUMBER,
    SJ_JSON_STRING,
    SJ_JSON_ARRAY,
    SJ_JSON_OBJECT
} sj_json_type;

typedef struct sj_json sj_json;

/* One value.  Every pointer in it belongs to the document. */
struct sj_json {
    sj_json_type type;
    const char *key; /* member name (NUL-terminated UTF-8) inside an object, else NULL */
    size_t pos;      /* byte offset of the value (of the key for a member) in the input */
    int boolean;     /* SJ_JSON_BOOL */
    int is_int;      /* SJ_JSON_NUMBER written without fraction or exponent that fits int64 */
    int64_t i;       /* the exact value when is_int */
    double d;        /* every number, rounded to double */
    const char *str; /* SJ_JSON_STRING, decoded, NUL-terminated */
    size_t len;      /* its length in bytes */
    sj_json *items;  /* ARRAY elements or OBJECT members, in input order */
    size_t count;
};

typedef struct sj_json_doc sj_json_doc;

/* Parses text[0..len).  On failure returns SSMJIT_ERR_INVALID_ARG with
 * "<what>: invalid JSON at byte B (line L, column C): <reason>" (callers
 * pass what quoted, "'config.json'", as their own messages quote names), or
 * SSMJIT_ERR_NO_MEMORY.  Free the document with sj_json_free. */
ssmjit_status sj_json_parse(const char *text, size_t len, const char *what, sj_json_doc **out);

/* The top-level value. */
const sj_json *sj_json_root(const sj_json_doc *doc);

/* NULL is a no-op. */
void sj_json_free(sj_json_doc *doc);

/* The member named key of an object; NULL when obj is not an object or has
 * no such member.  Linear in the object's size. */
const sj_json *sj_json_get(const sj_json *obj, const char *key);

/* A type for messages, with its article: "an object", "a string", "null"... */
const char *sj_json_type_name(sj_json_type type);

#endif
