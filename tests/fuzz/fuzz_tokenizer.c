/* libFuzzer target: arbitrary bytes as tokenizer.json, optionally followed
 * by a NUL and a text to encode (JSON holds no NUL, so the first one splits
 * them; without one a fixed text is encoded).  Loading, encoding and
 * decoding must never crash, and a tokenizer that loads must keep its
 * promises: the count asked for alone is the count, every id is below the
 * vocab size and decodes, and what decodes is UTF-8.  The seeds in
 * corpus/tokenizer/ are tests/data/tokenizer/tokenizer.json and smaller
 * tokenizers of the same kind, each with a text after the NUL. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"
#include "unicode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_tokenizer: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t json_len = nul ? (size_t)(nul - data) : size;
    ssmjit_tokenizer *tok;
    if (sj_tokenizer_parse((const char *)data, json_len, "fuzz", &tok) != SSMJIT_OK)
        return 0;
    const char *text = nul ? (const char *)nul + 1
                           : "Hello, world! It's 2024 <|endoftext|>  e\xcc\x81 \xea\xb0\x80";
    size_t len = nul ? size - json_len - 1 : strlen(text);
    size_t n = SIZE_MAX, again;
    /* fails for text that is not UTF-8 (n untouched), or for want of room */
    ssmjit_tokenizer_encode(tok, text, len, NULL, 0, &n);
    int32_t *ids = n == SIZE_MAX ? NULL : malloc(n ? n * sizeof *ids : 1);
    if (ids) {
        require(ssmjit_tokenizer_encode(tok, text, len, ids, n, &again) == SSMJIT_OK && again == n,
                "the count asked for alone is not the count");
        int64_t vocab = ssmjit_tokenizer_vocab_size(tok);
        for (size_t i = 0; i < n; i++)
            require(ids[i] >= 0 && ids[i] < vocab, "an id past the vocab size");
        size_t text_len = SIZE_MAX;
        ssmjit_tokenizer_decode(tok, ids, n, NULL, 0, &text_len);
        require(text_len != SIZE_MAX, "ids encoded do not decode");
        char *decoded = malloc(text_len + 1);
        require(decoded && ssmjit_tokenizer_decode(tok, ids, n, decoded, text_len + 1, &again) == SSMJIT_OK &&
                    again == text_len,
                "the size asked for alone is not the size");
        require(sj_utf8_check((const unsigned char *)decoded, text_len) == text_len,
                "decoded text is not UTF-8");
        free(decoded);
        free(ids);
    }
    ssmjit_tokenizer_destroy(tok);
    return 0;
}
