/* Byte-level BPE from a Hugging Face tokenizer.json (GPT-2, GPT-NeoX).
 *
 * Encoding follows the Rust tokenizers crate (and its JS port, against
 * which tests/data/tokenizer/ is made): added tokens are split out of the
 * raw text (the ones marked normalized out of each part once normalized),
 * each remaining part is put in NFC and split by the GPT-2 regex, and each
 * piece's bytes, spelled in GPT-2's byte alphabet, are merged pair by pair,
 * the lowest-ranked pair first (the leftmost among equals), with a heap, so
 * a long piece costs n log n.  Decoding maps the tokens back to bytes.
 *
 * Every token is kept as its bytes: the map from bytes to ids and the merge
 * table are built at load, and ids are what BPE merges. */
#include "tokenizer.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/fileio.h"
#include "base/json.h"
#include "unicode.h"

#define MAX_ID ((1 << 24) - 1)
#define NO_POS UINT32_MAX
/* GPT-2's byte alphabet ends below this code point. */
#define ALPHABET_END 0x144

typedef enum token_kind { TOKEN_NONE = 0, TOKEN_VOCAB, TOKEN_ADDED } token_kind;

/* What an id decodes to: tok->bytes[off..off+len).  Small, as ids may
 * reach MAX_ID. */
typedef struct token {
    uint32_t off, len;
    uint8_t kind; /* a token_kind */
} token;

/* A byte-level vocab token in the map from bytes to ids (id -1: empty). */
typedef struct vocab_slot {
    size_t off, len;
    int32_t id;
} vocab_slot;

/* A merge: the pair (left id << 32 | right id), its rank (-1: empty slot)
 * and the id it makes. */
typedef struct merge {
    uint64_t pair;
    int32_t rank, merged;
} merge;

typedef struct added_token {
    unsigned char *text; /* what is matched: the content, in NFC when normalized */
    size_t len;
    int32_t id;
    int lstrip, rstrip;
} added_token;

/* The added tokens matched at one stage (raw text, or normalized text),
 * sorted by first byte and then longest first, so that the first that
 * matches at a position is the longest; first[b] is where byte b starts. */
typedef struct added_set {
    added_token *tokens;
    size_t count;
    size_t first[257];
} added_set;

struct ssmjit_tokenizer {
    int nfc, add_prefix_space, use_regex, ignore_merges;
    token *ids; /* by id, n_ids of them */
    size_t n_ids, ids_cap;
    char *bytes; /* every token's bytes */
    size_t bytes_len, bytes_cap;
    vocab_slot *vocab;
    size_t vocab_mask;
    merge *merges;
    size_t merges_mask;
    int32_t byte_id[256]; /* the token of each single byte */
    added_set raw, normalized;
};

/* ------------------------------------------------------------------------ */
/* Tables                                                                   */
/* ------------------------------------------------------------------------ */

/* GPT-2's bytes_to_unicode: printable bytes stand for themselves, the
 * others (controls, space, 0x7F..0xA0, 0xAD) for U+0100 on, in order. */
static void byte_alphabet(uint32_t char_of[256], int16_t byte_of[ALPHABET_END])
{
    uint32_t next = 256;
    for (int c = 0; c < ALPHABET_END; c++)
        byte_of[c] = -1;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        char_of[b] = printable ? (uint32_t)b : next++;
        byte_of[char_of[b]] = (int16_t)b;
    }
}

/* The bytes a token spelled in the byte alphabet stands for, to out (room
 * for len); 0 when a character of s is not in the alphabet. */
static int from_alphabet(const int16_t byte_of[ALPHABET_END], const char *s, size_t len,
                         unsigned char *out, size_t *out_len)
{
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        i += sj_utf8_next((const unsigned char *)s + i, len - i, &cp);
        if (cp >= ALPHABET_END || byte_of[cp] < 0)
            return 0;
        out[n++] = (unsigned char)byte_of[cp];
    }
    *out_len = n;
    return 1;
}

static size_t table_size(size_t entries)
{
    size_t n = 16;
    while (n < 2 * entries)
        n *= 2;
    return n;
}

static uint64_t hash_bytes(const unsigned char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t hash_pair(uint64_t x)
{
    x ^= x >> 33; /* murmur3's finalizer */
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ x >> 33;
}

/* The slot of bytes s[0..n) in the vocab map: its entry, or the empty slot
 * where it would go. */
static vocab_slot *vocab_slot_of(const ssmjit_tokenizer *tok, const unsigned char *s, size_t n)
{
    for (size_t i = hash_bytes(s, n) & tok->vocab_mask;; i = (i + 1) & tok->vocab_mask) {
        vocab_slot *v = &tok->vocab[i];
        if (v->id < 0 || (v->len == n && memcmp(tok->bytes + v->off, s, n) == 0))
            return v;
    }
}

/* The id of the vocab token of bytes s[0..n), or -1. */
static int32_t vocab_find(const ssmjit_tokenizer *tok, const unsigned char *s, size_t n)
{
    return vocab_slot_of(tok, s, n)->id;
}

static uint64_t pair_of(int32_t left, int32_t right)
{
    return (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
}

/* The slot of a pair in the merge table: its merge, or the empty slot
 * where it would go. */
static merge *merge_slot_of(const ssmjit_tokenizer *tok, uint64_t pair)
{
    for (size_t i = hash_pair(pair) & tok->merges_mask;; i = (i + 1) & tok->merges_mask) {
        merge *m = &tok->merges[i];
        if (m->rank < 0 || m->pair == pair)
            return m;
    }
}

/* The merge of the pair, or NULL. */
static const merge *merge_find(const ssmjit_tokenizer *tok, int32_t left, int32_t right)
{
    const merge *m = merge_slot_of(tok, pair_of(left, right));
    return m->rank < 0 ? NULL : m;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                  */
/* ------------------------------------------------------------------------ */

static ssmjit_status no_memory(const char *what)
{
    return sj_error(SSMJIT_ERR_NO_MEMORY, "'%s': out of memory loading the tokenizer", what);
}

static ssmjit_status bad_type(const char *what, const char *field, const char *want, const sj_json *v)
{
    return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': \"%s\" must be %s, not %s", what, field, want,
                    sj_json_type_name(v->type));
}

static ssmjit_status unsupported(const char *what, const char *field, const char *value,
                                 const char *supported)
{
    return sj_error(SSMJIT_ERR_UNSUPPORTED, "'%s': %s %s is not supported (%s)", what, field, value,
                    supported);
}

/* The member `key` of obj unless absent or null. */
static const sj_json *present(const sj_json *obj, const char *key)
{
    const sj_json *v = sj_json_get(obj, key);
    return v && v->type != SJ_JSON_NULL ? v : NULL;
}

/* A true/false member `key` of obj, named prefix+key in messages; def when
 * absent or null. */
static ssmjit_status get_flag(const char *what, const sj_json *obj, const char *prefix, const char *key,
                              int def, int *out)
{
    const sj_json *v = present(obj, key);
    if (v && v->type != SJ_JSON_BOOL) {
        char field[96];
        snprintf(field, sizeof field, "%s%s", prefix, key);
        return bad_type(what, field, "true or false", v);
    }
    *out = v ? v->boolean : def;
    return SSMJIT_OK;
}

/* The component `key` of the file (an object with a "type") and its type;
 * both NULL when it is absent or null. */
static ssmjit_status component(const char *what, const sj_json *root, const char *key,
                               const sj_json **obj, const char **type)
{
    *obj = present(root, key);
    *type = NULL;
    if (!*obj)
        return SSMJIT_OK;
    if ((*obj)->type != SJ_JSON_OBJECT)
        return bad_type(what, key, "an object or null", *obj);
    const sj_json *t = sj_json_get(*obj, "type");
    char field[64];
    snprintf(field, sizeof field, "%s.type", key);
    if (!t)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': \"%s\" is missing", what, field);
    if (t->type != SJ_JSON_STRING)
        return bad_type(what, field, "a string", t);
    *type = t->str;
    return SSMJIT_OK;
}

/* The component `key` must be of type `want`, or absent when may_be_absent. */
static ssmjit_status component_of_type(const char *what, const sj_json *root, const char *key,
                                       const char *want, int may_be_absent, const sj_json **obj)
{
    const char *type;
    SJ_TRY(component(what, root, key, obj, &type));
    if (type ? strcmp(type, want) == 0 : may_be_absent)
        return SSMJIT_OK;
    char value[80], supported[64];
    snprintf(value, sizeof value, "\"%.40s\"", type ? type : "");
    snprintf(supported, sizeof supported, "only %s%s", want, may_be_absent ? " or none" : "");
    if (!type)
        snprintf(value, sizeof value, "none");
    return unsupported(what, key, value, supported);
}

/* Normalizer, pre-tokenizer, post-processor, decoder and the options
 * that would change the ids (truncation, padding). */
static ssmjit_status parse_pipeline(const char *what, const sj_json *root, ssmjit_tokenizer *tok)
{
    const sj_json *obj;
    const char *type;
    SJ_TRY(component(what, root, "normalizer", &obj, &type));
    if (type && strcmp(type, "NFC") != 0) {
        char value[64];
        snprintf(value, sizeof value, "\"%.40s\"", type);
        return unsupported(what, "normalizer", value, "only NFC or none");
    }
    tok->nfc = type != NULL;
    SJ_TRY(component_of_type(what, root, "pre_tokenizer", "ByteLevel", 0, &obj));
    /* the Rust crate's defaults, for files that leave them out */
    SJ_TRY(get_flag(what, obj, "pre_tokenizer.", "add_prefix_space", 1, &tok->add_prefix_space));
    SJ_TRY(get_flag(what, obj, "pre_tokenizer.", "use_regex", 1, &tok->use_regex));
    SJ_TRY(component_of_type(what, root, "decoder", "ByteLevel", 0, &obj));
    SJ_TRY(component_of_type(what, root, "post_processor", "ByteLevel", 1, &obj));
    const char *changes_ids[] = {"truncation", "padding"};
    for (size_t i = 0; i < sizeof changes_ids / sizeof *changes_ids; i++)
        if (present(root, changes_ids[i]))
            return unsupported(what, changes_ids[i], "set", "only null");
    return SSMJIT_OK;
}

/* Room for ids 0..id. */
static ssmjit_status reserve_id(const char *what, ssmjit_tokenizer *tok, int64_t id)
{
    if ((size_t)id < tok->n_ids)
        return SSMJIT_OK;
    if ((size_t)id >= tok->ids_cap) {
        size_t cap = tok->ids_cap ? 2 * tok->ids_cap : 1024;
        while (cap <= (size_t)id)
            cap *= 2;
        token *ids = realloc(tok->ids, cap * sizeof *ids);
        if (!ids)
            return no_memory(what);
        memset(ids + tok->ids_cap, 0, (cap - tok->ids_cap) * sizeof *ids);
        tok->ids = ids;
        tok->ids_cap = cap;
    }
    tok->n_ids = (size_t)id + 1;
    return SSMJIT_OK;
}

/* Appends s[0..n) to tok->bytes; *off is where.  The buffer exists after
 * the first call even for an empty token, so that every token's bytes
 * (tok->bytes + off) are an address. */
static ssmjit_status put_bytes(const char *what, ssmjit_tokenizer *tok, const void *s, size_t n, uint32_t *off)
{
    if (n > UINT32_MAX - tok->bytes_len)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "'%s': the tokens add up to over 4 GiB", what);
    if (!tok->bytes || tok->bytes_cap - tok->bytes_len < n) {
        size_t cap = tok->bytes_cap ? tok->bytes_cap : 65536;
        while (cap - tok->bytes_len < n)
            cap *= 2;
        char *b = realloc(tok->bytes, cap);
        if (!b)
            return no_memory(what);
        tok->bytes = b;
        tok->bytes_cap = cap;
    }
    memcpy(tok->bytes + tok->bytes_len, s, n);
    *off = (uint32_t)tok->bytes_len;
    tok->bytes_len += n;
    return SSMJIT_OK;
}

static int is_id(const sj_json *v)
{
    return v->type == SJ_JSON_NUMBER && v->is_int && v->i >= 0 && v->i <= MAX_ID;
}

static ssmjit_status bad_id(const char *what, const char *field)
{
    return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': \"%s\" must be an integer id in 0..%d", what, field, MAX_ID);
}

static ssmjit_status parse_vocab(const char *what, const sj_json *vocab, const uint32_t char_of[256],
                                 const int16_t byte_of[ALPHABET_END], ssmjit_tokenizer *tok)
{
    tok->vocab_mask = table_size(vocab->count) - 1;
    tok->vocab = malloc((tok->vocab_mask + 1) * sizeof *tok->vocab);
    if (!tok->vocab)
        return no_memory(what);
    for (size_t i = 0; i <= tok->vocab_mask; i++)
        tok->vocab[i].id = -1;
    for (size_t i = 0; i < vocab->count; i++) {
        const sj_json *m = &vocab->items[i];
        if (!is_id(m)) {
            char field[64];
            snprintf(field, sizeof field, "model.vocab[\"%.40s\"]", m->key);
            return bad_id(what, field);
        }
        int32_t id = (int32_t)m->i;
        SJ_TRY(reserve_id(what, tok, id));
        token *t = &tok->ids[id];
        if (t->kind != TOKEN_NONE)
            return sj_error(SSMJIT_ERR_INVALID_ARG,
                            "'%s': \"model.vocab[\"%.40s\"]\" is %d, the id of another token too", what,
                            m->key, (int)id);
        /* in the alphabet, or (never in a byte-level file) as it is */
        size_t len = strlen(m->key), n;
        SJ_TRY(put_bytes(what, tok, m->key, len, &t->off));
        unsigned char *b = (unsigned char *)tok->bytes + t->off;
        int byte_level = from_alphabet(byte_of, m->key, len, b, &n);
        if (!byte_level)
            memcpy(b, m->key, len);
        t->len = (uint32_t)(byte_level ? n : len);
        tok->bytes_len = t->off + t->len;
        t->kind = TOKEN_VOCAB;
        if (byte_level)
            *vocab_slot_of(tok, b, n) = (vocab_slot){t->off, n, id};
    }
    for (int b = 0; b < 256; b++) {
        unsigned char byte = (unsigned char)b, spelled[4];
        if ((tok->byte_id[b] = vocab_find(tok, &byte, 1)) < 0)
            return sj_error(SSMJIT_ERR_INVALID_ARG,
                            "'%s': \"model.vocab\" has no token for byte 0x%02X (\"%.*s\")", what, b, (int)sj_utf8_put(char_of[b], spelled), (const char *)spelled);
    }
    return SSMJIT_OK;
}

/* The id of merges[i]'s part s[0..len), spelled in the byte alphabet;
 * scratch holds len bytes. */
static ssmjit_status merge_part(const char *what, size_t i, const int16_t byte_of[ALPHABET_END],
                                const ssmjit_tokenizer *tok, const char *s, size_t len,
                                unsigned char *scratch, int32_t *id)
{
    size_t n;
    *id = from_alphabet(byte_of, s, len, scratch, &n) ? vocab_find(tok, scratch, n) : -1;
    if (*id < 0)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': \"model.merges[%zu]\": \"%.*s\" is not in model.vocab",
                        what, i, (int)(len < 40 ? len : 40), s);
    return SSMJIT_OK;
}

static ssmjit_status parse_merges(const char *what, const sj_json *merges, const int16_t byte_of[ALPHABET_END],
                                  ssmjit_tokenizer *tok)
{
    if (merges->count > INT32_MAX)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "'%s': %zu merges are too many", what, merges->count);
    tok->merges_mask = table_size(merges->count) - 1;
    tok->merges = malloc((tok->merges_mask + 1) * sizeof *tok->merges);
    if (!tok->merges)
        return no_memory(what);
    for (size_t i = 0; i <= tok->merges_mask; i++)
        tok->merges[i].rank = -1;
    unsigned char *scratch = NULL;
    size_t scratch_cap = 0;
    ssmjit_status st = SSMJIT_OK;
    for (size_t i = 0; i < merges->count && st == SSMJIT_OK; i++) {
        const sj_json *m = &merges->items[i];
        const char *left, *right;
        size_t left_len, right_len;
        if (m->type == SJ_JSON_STRING) {
            const char *space = memchr(m->str, ' ', m->len);
            if (!space || space == m->str || space + 1 == m->str + m->len ||
                memchr(space + 1, ' ', m->len - (size_t)(space + 1 - m->str))) {
                st = sj_error(SSMJIT_ERR_INVALID_ARG,
                              "'%s': \"model.merges[%zu]\" is \"%.40s\", not two tokens separated by one space",
                              what, i, m->str);
                break;
            }
            left = m->str;
            left_len = (size_t)(space - m->str);
            right = space + 1;
            right_len = m->len - left_len - 1;
        } else if (m->type == SJ_JSON_ARRAY && m->count == 2 && m->items[0].type == SJ_JSON_STRING &&
                   m->items[1].type == SJ_JSON_STRING) {
            left = m->items[0].str;
            left_len = m->items[0].len;
            right = m->items[1].str;
            right_len = m->items[1].len;
        } else {
            st = sj_error(SSMJIT_ERR_INVALID_ARG,
                          "'%s': \"model.merges[%zu]\" must be a string \"a b\" or an array of two "
                          "strings, not %s",
                          what, i, sj_json_type_name(m->type));
            break;
        }
        if (scratch_cap < left_len + right_len) {
            free(scratch);
            scratch_cap = 2 * (left_len + right_len);
            if (!(scratch = malloc(scratch_cap))) {
                st = no_memory(what);
                break;
            }
        }
        int32_t l, r, merged;
        if ((st = merge_part(what, i, byte_of, tok, left, left_len, scratch, &l)) ||
            (st = merge_part(what, i, byte_of, tok, right, right_len, scratch, &r)))
            break;
        /* the two tokens' bytes, one after the other */
        size_t nl = tok->ids[l].len, nr = tok->ids[r].len;
        memcpy(scratch, tok->bytes + tok->ids[l].off, nl);
        memcpy(scratch + nl, tok->bytes + tok->ids[r].off, nr);
        if ((merged = vocab_find(tok, scratch, nl + nr)) < 0) {
            st = sj_error(SSMJIT_ERR_INVALID_ARG,
                          "'%s': \"model.merges[%zu]\": the merge of \"%.*s\" and \"%.*s\" is not in "
                          "model.vocab",
                          what, i, (int)(left_len < 40 ? left_len : 40), left,
                          (int)(right_len < 40 ? right_len : 40), right);
            break;
        }
        /* a pair listed twice keeps its last rank, as in the Rust crate */
        merge *slot = merge_slot_of(tok, pair_of(l, r));
        *slot = (merge){pair_of(l, r), (int32_t)i, merged};
    }
    free(scratch);
    return st;
}

static ssmjit_status parse_model(const char *what, const sj_json *root, const uint32_t char_of[256],
                                 const int16_t byte_of[ALPHABET_END], ssmjit_tokenizer *tok)
{
    const sj_json *model = sj_json_get(root, "model");
    if (!model)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': \"model\" is missing", what);
    if (model->type != SJ_JSON_OBJECT)
        return bad_type(what, "model", "an object", model);
    const sj_json *type = sj_json_get(model, "type");
    if (!type)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': \"model.type\" is missing", what);
    if (type->type != SJ_JSON_STRING)
        return bad_type(what, "model.type", "a string", type);
    if (strcmp(type->str, "BPE") != 0) {
        char value[64];
        snprintf(value, sizeof value, "\"%.40s\"", type->str);
        return unsupported(what, "model", value, "only BPE");
    }
    const sj_json *dropout = present(model, "dropout");
    if (dropout && dropout->type != SJ_JSON_NUMBER)
        return bad_type(what, "model.dropout", "a number or null", dropout);
    if (dropout && dropout->d != 0)
        return unsupported(what, "model.dropout", "above 0", "only null or 0");
    int byte_fallback = 0, fuse_unk = 0;
    SJ_TRY(get_flag(what, model, "model.", "byte_fallback", 0, &byte_fallback));
    if (byte_fallback)
        return unsupported(what, "model.byte_fallback", "true", "a byte-level model needs none");
    SJ_TRY(get_flag(what, model, "model.", "fuse_unk", 0, &fuse_unk));
    SJ_TRY(get_flag(what, model, "model.", "ignore_merges", 0, &tok->ignore_merges));
    const char *affixes[] = {"continuing_subword_prefix", "end_of_word_suffix", "unk_token"};
    for (size_t i = 0; i < sizeof affixes / sizeof *affixes; i++) {
        const sj_json *v = present(model, affixes[i]);
        char field[64];
        snprintf(field, sizeof field, "model.%s", affixes[i]);
        if (v && v->type != SJ_JSON_STRING)
            return bad_type(what, field, "a string or null", v);
        /* unk_token is never needed: every byte has a token */
        if (v && v->len && i < 2)
            return unsupported(what, field, "other than \"\"", "only null or \"\"");
    }
    const sj_json *vocab = sj_json_get(model, "vocab"), *merges = sj_json_get(model, "merges");
    if (!vocab || !merges)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': \"model.%s\" is missing", what,
                        vocab ? "merges" : "vocab");
    if (vocab->type != SJ_JSON_OBJECT)
        return bad_type(what, "model.vocab", "an object", vocab);
    if (merges->type != SJ_JSON_ARRAY)
        return bad_type(what, "model.merges", "an array", merges);
    SJ_TRY(parse_vocab(what, vocab, char_of, byte_of, tok));
    return parse_merges(what, merges, byte_of, tok);
}

static ssmjit_status parse_added_token(const char *what, size_t k, const sj_json *a, ssmjit_tokenizer *tok)
{
    char prefix[48], field[96];
    snprintf(prefix, sizeof prefix, "added_tokens[%zu].", k);
    if (a->type != SJ_JSON_OBJECT) {
        snprintf(field, sizeof field, "added_tokens[%zu]", k);
        return bad_type(what, field, "an object", a);
    }
    const sj_json *id_v = sj_json_get(a, "id"), *content = sj_json_get(a, "content");
    if (!id_v || !content)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': \"%s%s\" is missing", what, prefix,
                        id_v ? "content" : "id");
    snprintf(field, sizeof field, "%scontent", prefix);
    if (content->type != SJ_JSON_STRING)
        return bad_type(what, field, "a string", content);
    if (content->len == 0)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': \"%s\" is empty", what, field);
    int special = 0, single_word = 0, normalized = 0;
    added_token t = {0};
    snprintf(field, sizeof field, "%sid", prefix);
    if (!is_id(id_v))
        return bad_id(what, field);
    t.id = (int32_t)id_v->i;
    SJ_TRY(get_flag(what, a, prefix, "special", 0, &special));
    SJ_TRY(get_flag(what, a, prefix, "single_word", 0, &single_word));
    SJ_TRY(get_flag(what, a, prefix, "lstrip", 0, &t.lstrip));
    SJ_TRY(get_flag(what, a, prefix, "rstrip", 0, &t.rstrip));
    SJ_TRY(get_flag(what, a, prefix, "normalized", !special, &normalized));
    if (single_word) {
        snprintf(field, sizeof field, "%ssingle_word", prefix);
        return unsupported(what, field, "true", "only false");
    }
    SJ_TRY(reserve_id(what, tok, t.id));
    token *slot = &tok->ids[t.id];
    if (slot->kind == TOKEN_ADDED)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': \"%sid\" is %d, the id of an earlier added token too",
                        what, prefix, (int)t.id);
    /* an added token decodes to its content, even where the vocab has the id */
    SJ_TRY(put_bytes(what, tok, content->str, content->len, &slot->off));
    slot->len = (uint32_t)content->len;
    slot->kind = TOKEN_ADDED;
    added_set *set = normalized ? &tok->normalized : &tok->raw;
    added_token *grown = realloc(set->tokens, (set->count + 1) * sizeof *grown);
    if (!grown)
        return no_memory(what);
    set->tokens = grown;
    if (normalized && tok->nfc) {
        SJ_TRY(sj_nfc(content->str, content->len, what, (char **)&t.text, &t.len));
    } else {
        if (!(t.text = malloc(content->len)))
            return no_memory(what);
        memcpy(t.text, content->str, content->len);
        t.len = content->len;
    }
    set->tokens[set->count++] = t;
    return SSMJIT_OK;
}

static int added_order(const void *pa, const void *pb)
{
    const added_token *a = pa, *b = pb;
    if (a->text[0] != b->text[0])
        return a->text[0] < b->text[0] ? -1 : 1;
    if (a->len != b->len)
        return a->len > b->len ? -1 : 1;
    return memcmp(a->text, b->text, a->len);
}

static ssmjit_status index_added(const char *what, added_set *set)
{
    if (set->count)
        qsort(set->tokens, set->count, sizeof *set->tokens, added_order);
    for (size_t i = 1; i < set->count; i++)
        if (added_order(&set->tokens[i - 1], &set->tokens[i]) == 0)
            return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': added tokens %d and %d are both \"%.*s\"", what,
                            (int)set->tokens[i - 1].id, (int)set->tokens[i].id,
                            (int)(set->tokens[i].len < 40 ? set->tokens[i].len : 40),
                            (const char *)set->tokens[i].text);
    size_t k = 0;
    for (int b = 0; b <= 256; b++) {
        while (k < set->count && set->tokens[k].text[0] < b)
            k++;
        set->first[b] = k;
    }
    return SSMJIT_OK;
}

static ssmjit_status parse_added(const char *what, const sj_json *root, ssmjit_tokenizer *tok)
{
    const sj_json *added = present(root, "added_tokens");
    if (added && added->type != SJ_JSON_ARRAY)
        return bad_type(what, "added_tokens", "an array", added);
    for (size_t k = 0; added && k < added->count; k++)
        SJ_TRY(parse_added_token(what, k, &added->items[k], tok));
    SJ_TRY(index_added(what, &tok->raw));
    return index_added(what, &tok->normalized);
}

ssmjit_status sj_tokenizer_parse(const char *text, size_t len, const char *what, ssmjit_tokenizer **out)
{
    SJ_FAIL_IF(!out, SSMJIT_ERR_INVALID_ARG, "sj_tokenizer_parse: out is NULL");
    *out = NULL;
    char label[PATH_MAX + 2];
    snprintf(label, sizeof label, "'%s'", what);
    sj_json_doc *doc;
    SJ_TRY(sj_json_parse(text, len, label, &doc));
    const sj_json *root = sj_json_root(doc);
    ssmjit_tokenizer *tok = calloc(1, sizeof *tok);
    ssmjit_status st;
    uint32_t char_of[256];
    int16_t byte_of[ALPHABET_END];
    byte_alphabet(char_of, byte_of);
    if (!tok)
        st = no_memory(what);
    else if (root->type != SJ_JSON_OBJECT)
        st = sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': the file must hold an object, not %s", what,
                      sj_json_type_name(root->type));
    else if ((st = parse_model(what, root, char_of, byte_of, tok)) == SSMJIT_OK &&
             (st = parse_pipeline(what, root, tok)) == SSMJIT_OK)
        st = parse_added(what, root, tok);
    sj_json_free(doc);
    if (st != SSMJIT_OK) {
        ssmjit_tokenizer_destroy(tok);
        return st;
    }
    *out = tok;
    return SSMJIT_OK;
}

ssmjit_status ssmjit_tokenizer_load(const char *path, ssmjit_tokenizer **out)
{
    SJ_FAIL_IF(!out, SSMJIT_ERR_INVALID_ARG, "ssmjit_tokenizer_load: out is NULL");
    *out = NULL;
    SJ_FAIL_IF(!path, SSMJIT_ERR_INVALID_ARG, "ssmjit_tokenizer_load: path is NULL");
    char file[PATH_MAX];
    struct stat sb;
    int is_dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
    if (snprintf(file, sizeof file, "%s%s", path, is_dir ? "/tokenizer.json" : "") >= (int)sizeof file)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_tokenizer_load: path '%.80s...' is too long", path);
    char *text;
    size_t len;
    SJ_TRY(sj_read_file(file, SJ_LINKS_FOLLOW, &text, &len));
    ssmjit_status st = sj_tokenizer_parse(text, len, file, out);
    free(text);
    return st;
}

void ssmjit_tokenizer_destroy(ssmjit_tokenizer *tok)
{
    if (!tok)
        return;
    added_set *sets[] = {&tok->raw, &tok->normalized};
    for (size_t s = 0; s < 2; s++) {
        for (size_t i = 0; i < sets[s]->count; i++)
            free(sets[s]->tokens[i].text);
        free(sets[s]->tokens);
    }
    free(tok->ids);
    free(tok->bytes);
    free(tok->vocab);
    free(tok->merges);
    free(tok);
}

int64_t ssmjit_tokenizer_vocab_size(const ssmjit_tokenizer *tok)
{
    return tok ? (int64_t)tok->n_ids : 0;
}

/* ------------------------------------------------------------------------ */
/* Encoding                                                                 */
/* ------------------------------------------------------------------------ */

/* The caller's ids: written while they fit, counted throughout. */
typedef struct id_sink {
    int32_t *ids;
    size_t cap, n;
} id_sink;

static void put_id(id_sink *out, int32_t id)
{
    if (out->n < out->cap)
        out->ids[out->n] = id;
    out->n++;
}

/* Scratch of one encode: BPE's symbols (ids, links) and heap for a piece
 * of up to `cap` bytes, and a part with a space put before it. */
typedef struct work {
    int32_t *sym;
    uint32_t *prev, *next;
    uint64_t *heap; /* rank << 32 | position: the lowest rank, then the leftmost, on top */
    size_t cap;
    unsigned char *spaced;
    size_t spaced_cap;
} work;

static void work_free(work *w)
{
    free(w->sym);
    free(w->prev);
    free(w->next);
    free(w->heap);
    free(w->spaced);
}

static ssmjit_status work_reserve(work *w, size_t n)
{
    if (n <= w->cap)
        return SSMJIT_OK;
    if (n >= NO_POS / 3)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "ssmjit_tokenizer_encode: a word of %zu bytes is too long", n);
    size_t cap = w->cap ? w->cap : 64;
    while (cap < n)
        cap *= 2;
    cap = cap < NO_POS / 3 ? cap : n;
    work grown = {malloc(cap * sizeof *w->sym), malloc(cap * sizeof *w->prev), malloc(cap * sizeof *w->next),
                  malloc(3 * cap * sizeof *w->heap), cap, w->spaced, w->spaced_cap};
    if (!grown.sym || !grown.prev || !grown.next || !grown.heap) {
        grown.spaced = NULL;
        work_free(&grown);
        return sj_error(SSMJIT_ERR_NO_MEMORY, "ssmjit_tokenizer_encode: out of memory for a word of %zu bytes",
                        n);
    }
    w->spaced = NULL;
    work_free(w);
    *w = grown;
    return SSMJIT_OK;
}

static void heap_push(uint64_t *heap, size_t *n, uint64_t v)
{
    size_t i = (*n)++;
    while (i > 0 && heap[(i - 1) / 2] > v) {
        heap[i] = heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    heap[i] = v;
}

static uint64_t heap_pop(uint64_t *heap, size_t *n)
{
    uint64_t top = heap[0], last = heap[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && heap[c + 1] < heap[c])
            c++;
        if (heap[c] >= last)
            break;
        heap[i] = heap[c];
        i = c;
    }
    heap[i] = last;
    return top;
}

/* Queues the pair that starts at symbol `pos`, if it merges. */
static void queue_pair(const ssmjit_tokenizer *tok, work *w, size_t *heap_n, uint32_t pos)
{
    const merge *m = merge_find(tok, w->sym[pos], w->sym[w->next[pos]]);
    if (m)
        heap_push(w->heap, heap_n, (uint64_t)(uint32_t)m->rank << 32 | pos);
}

/* BPE over the bytes of one piece. */
static ssmjit_status encode_word(const ssmjit_tokenizer *tok, const unsigned char *s, size_t n, work *w,
                                 id_sink *out)
{
    int32_t whole = tok->ignore_merges ? vocab_find(tok, s, n) : -1;
    if (whole >= 0 || n == 1) {
        put_id(out, whole >= 0 ? whole : tok->byte_id[s[0]]);
        return SSMJIT_OK;
    }
    SJ_TRY(work_reserve(w, n));
    size_t heap_n = 0;
    for (uint32_t i = 0; i < n; i++) {
        w->sym[i] = tok->byte_id[s[i]];
        w->prev[i] = i ? i - 1 : NO_POS;
        w->next[i] = i + 1 < n ? i + 1 : NO_POS;
    }
    for (uint32_t i = 0; i + 1 < n; i++)
        queue_pair(tok, w, &heap_n, i);
    while (heap_n) {
        uint64_t top = heap_pop(w->heap, &heap_n);
        uint32_t pos = (uint32_t)top, next = w->next[pos];
        /* skip a pair a merge before it has changed */
        if (w->sym[pos] < 0 || next == NO_POS)
            continue;
        const merge *m = merge_find(tok, w->sym[pos], w->sym[next]);
        if (!m || (uint64_t)m->rank != top >> 32)
            continue;
        w->sym[pos] = m->merged;
        w->sym[next] = -1;
        w->next[pos] = w->next[next];
        if (w->next[pos] != NO_POS)
            w->prev[w->next[pos]] = pos;
        if (w->prev[pos] != NO_POS)
            queue_pair(tok, w, &heap_n, w->prev[pos]);
        if (w->next[pos] != NO_POS)
            queue_pair(tok, w, &heap_n, pos);
    }
    for (uint32_t i = 0; i != NO_POS; i = w->next[i])
        put_id(out, w->sym[i]);
    return SSMJIT_OK;
}

/* The class of the character at s[i]; *next is the offset after it. */
static sj_uni_class class_at(const unsigned char *s, size_t len, size_t i, size_t *next)
{
    uint32_t cp;
    *next = i + sj_utf8_next(s + i, len - i, &cp);
    return sj_uni_class_of(cp);
}

/* The end of the match at s[i] (i < len) of GPT-2's regex
 *     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * Every character is a letter, a number, a space or none of those, so the
 * matches tile the text. */
static size_t regex_match_end(const unsigned char *s, size_t len, size_t i)
{
    if (s[i] == '\'' && i + 1 < len) {
        unsigned char c = s[i + 1], d = i + 2 < len ? s[i + 2] : 0;
        if (c == 's' || c == 't' || c == 'm' || c == 'd')
            return i + 2;
        if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l'))
            return i + 3;
    }
    size_t j = i + (s[i] == ' ' && i + 1 < len), next;
    sj_uni_class cls = class_at(s, len, j, &next);
    if (cls != SJ_UNI_SPACE) {
        size_t end = next;
        while (end < len && class_at(s, len, end, &next) == cls)
            end = next;
        return end;
    }
    /* \s+(?!\S): a run of spaces less its last when a non-space follows,
     * which the run's last space then joins (as " ?..."); a lone space
     * before a non-space is \s+ */
    size_t end = i, last = i, count = 0;
    while (end < len && class_at(s, len, end, &next) == SJ_UNI_SPACE) {
        last = end;
        end = next;
        count++;
    }
    return end == len || count == 1 ? end : last;
}

/* A part of normalized text with no added token in it: pre-tokenized,
 * then each piece merged. */
static ssmjit_status encode_plain(const ssmjit_tokenizer *tok, const unsigned char *s, size_t len, work *w,
                                  id_sink *out)
{
    if (tok->add_prefix_space && s[0] != ' ') {
        if (w->spaced_cap < len + 1) {
            unsigned char *b = realloc(w->spaced, len + 1);
            if (!b)
                return sj_error(SSMJIT_ERR_NO_MEMORY, "ssmjit_tokenizer_encode: out of memory");
            w->spaced = b;
            w->spaced_cap = len + 1;
        }
        w->spaced[0] = ' ';
        memcpy(w->spaced + 1, s, len);
        s = w->spaced;
        len++;
    }
    if (!tok->use_regex)
        return encode_word(tok, s, len, w, out);
    for (size_t i = 0; i < len;) {
        size_t end = regex_match_end(s, len, i);
        SJ_TRY(encode_word(tok, s + i, end - i, w, out));
        i = end;
    }
    return SSMJIT_OK;
}

/* The whitespace before s[end], back to `from` at most: where it starts. */
static size_t space_before(const unsigned char *s, size_t from, size_t end)
{
    while (end > from) {
        size_t b = end - 1;
        while (b > from && (s[b] & 0xC0) == 0x80)
            b--;
        uint32_t cp;
        sj_utf8_next(s + b, end - b, &cp);
        if (sj_uni_class_of(cp) != SJ_UNI_SPACE)
            break;
        end = b;
    }
    return end;
}

/* The whitespace from s[start] on: where it ends. */
static size_t space_after(const unsigned char *s, size_t len, size_t start)
{
    size_t next;
    while (start < len && class_at(s, len, start, &next) == SJ_UNI_SPACE)
        start = next;
    return start;
}

typedef ssmjit_status (*part_encoder)(const ssmjit_tokenizer *tok, const unsigned char *s, size_t len,
                                      work *w, id_sink *out);

/* Splits s[0..len) at the added tokens of `set` (at each position from the
 * left, the longest that matches there; lstrip and rstrip take in the
 * whitespace beside it), giving their ids, and the parts between them to
 * encode_part. */
static ssmjit_status split_added(const ssmjit_tokenizer *tok, const added_set *set, const unsigned char *s,
                                 size_t len, part_encoder encode_part, work *w, id_sink *out)
{
    size_t from = 0;
    for (size_t p = from; p < len && set->count; p++) {
        const added_token *a = set->tokens + set->first[s[p]], *end = set->tokens + set->first[s[p] + 1];
        while (a < end && (a->len > len - p || memcmp(s + p, a->text, a->len) != 0))
            a++;
        if (a == end)
            continue;
        size_t start = a->lstrip ? space_before(s, from, p) : p;
        if (start > from)
            SJ_TRY(encode_part(tok, s + from, start - from, w, out));
        put_id(out, a->id);
        from = a->rstrip ? space_after(s, len, p + a->len) : p + a->len;
        p = from - 1;
    }
    return from < len ? encode_part(tok, s + from, len - from, w, out) : SSMJIT_OK;
}

/* A part of the raw text with no raw added token in it: normalized, then
 * split at the normalized added tokens. */
static ssmjit_status encode_section(const ssmjit_tokenizer *tok, const unsigned char *s, size_t len, work *w,
                                    id_sink *out)
{
    char *nfc = NULL;
    if (tok->nfc && !sj_nfc_quick_yes((const char *)s, len))
        SJ_TRY(sj_nfc((const char *)s, len, "ssmjit_tokenizer_encode", &nfc, &len));
    ssmjit_status st = split_added(tok, &tok->normalized, nfc ? (const unsigned char *)nfc : s, len,
                                   encode_plain, w, out);
    free(nfc);
    return st;
}

ssmjit_status ssmjit_tokenizer_encode(const ssmjit_tokenizer *tok, const char *text, size_t len, int32_t *ids,
                                      size_t cap, size_t *n)
{
    SJ_FAIL_IF(!tok || !n || (!text && len) || (!ids && cap), SSMJIT_ERR_INVALID_ARG,
               "ssmjit_tokenizer_encode: %s is NULL",
               !tok ? "tok" : !n ? "n" : !ids && cap ? "ids (with cap > 0)" : "text (with len > 0)");
    const unsigned char *s = (const unsigned char *)text;
    size_t bad = sj_utf8_check(s, len);
    SJ_FAIL_IF(bad < len, SSMJIT_ERR_INVALID_ARG,
               "ssmjit_tokenizer_encode: the text is not UTF-8 at byte %zu (0x%02X)", bad, s[bad]);
    work w = {0};
    id_sink out = {ids, cap, 0};
    ssmjit_status st = split_added(tok, &tok->raw, s, len, encode_section, &w, &out);
    work_free(&w);
    if (st != SSMJIT_OK)
        return st;
    *n = out.n;
    SJ_FAIL_IF(out.n > cap, SSMJIT_ERR_INVALID_ARG,
               "ssmjit_tokenizer_encode: the text has %zu tokens, cap is %zu", out.n, cap);
    return SSMJIT_OK;
}

/* ------------------------------------------------------------------------ */
/* Decoding                                                                 */
/* ------------------------------------------------------------------------ */

/* The caller's text: written while it fits, counted throughout. */
typedef struct text_sink {
    char *text;
    size_t cap, n;
} text_sink;

static void put_text(text_sink *out, const void *s, size_t n)
{
    if (out->n < out->cap)
        memcpy(out->text + out->n, s, n < out->cap - out->n ? n : out->cap - out->n);
    out->n += n;
}

/* Bytes as UTF-8, each maximal subpart that is not UTF-8 as U+FFFD. */
static void put_lossy(text_sink *out, const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = sj_utf8_next(s + i, n - i, &cp);
        if (cp == SJ_UTF8_INVALID)
            put_text(out, "\xEF\xBF\xBD", 3);
        else
            put_text(out, s + i, k);
        i += k;
    }
}

ssmjit_status ssmjit_tokenizer_decode(const ssmjit_tokenizer *tok, const int32_t *ids, size_t n, char *text,
                                      size_t cap, size_t *len)
{
    SJ_FAIL_IF(!tok || !len || (!ids && n) || (!text && cap), SSMJIT_ERR_INVALID_ARG,
               "ssmjit_tokenizer_decode: %s is NULL",
               !tok ? "tok" : !len ? "len" : !ids && n ? "ids (with n > 0)" : "text (with cap > 0)");
    size_t run_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        SJ_FAIL_IF(ids[i] < 0 || (size_t)ids[i] >= tok->n_ids || tok->ids[ids[i]].kind == TOKEN_NONE,
                   SSMJIT_ERR_INVALID_ARG, "ssmjit_tokenizer_decode: ids[%zu] = %ld is %s", i, (long)ids[i],
                   ids[i] < 0 || (size_t)ids[i] >= tok->n_ids ? "outside the vocabulary" : "no token's id");
        if (tok->ids[ids[i]].kind == TOKEN_VOCAB)
            run_bytes += tok->ids[ids[i]].len;
    }
    /* the bytes of a run of vocab tokens, read as UTF-8 together */
    unsigned char *run = malloc(run_bytes ? run_bytes : 1);
    SJ_FAIL_IF(!run, SSMJIT_ERR_NO_MEMORY, "ssmjit_tokenizer_decode: out of memory for %zu bytes", run_bytes);
    text_sink out = {text, cap, 0};
    size_t run_n = 0;
    for (size_t i = 0; i < n; i++) {
        const token *t = &tok->ids[ids[i]];
        if (t->kind == TOKEN_ADDED) {
            put_lossy(&out, run, run_n);
            run_n = 0;
            put_text(&out, tok->bytes + t->off, t->len);
        } else {
            memcpy(run + run_n, tok->bytes + t->off, t->len);
            run_n += t->len;
        }
    }
    put_lossy(&out, run, run_n);
    free(run);
    *len = out.n;
    SJ_FAIL_IF(out.n >= cap, SSMJIT_ERR_INVALID_ARG,
               "ssmjit_tokenizer_decode: the text is %zu bytes, cap is %zu (it needs one more, for the NUL)",
               out.n, cap);
    text[out.n] = '\0';
    return SSMJIT_OK;
}
