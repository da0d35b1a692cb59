/* The tokenizer's parser from memory, for its tests and fuzzer (the API
 * is ssmjit_tokenizer_* in ssmjit.h). */
#ifndef SSMJIT_TOKENIZER_H
#define SSMJIT_TOKENIZER_H

#include <stddef.h>

#include "ssmjit.h"

/* As ssmjit_tokenizer_load, from the tokenizer.json text[0..len);
 * messages name `what` (a path, quoted in them). */
ssmjit_status sj_tokenizer_parse(const char *text, size_t len, const char *what,
                                 ssmjit_tokenizer **out);

#endif
