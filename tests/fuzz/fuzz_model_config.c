/* libFuzzer target: arbitrary bytes as config.json.  The parser (the JSON
 * reader under it included) must never crash, and a config it accepts must
 * be inside the ranges the model code relies on. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "model_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_model_config: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sj_model_file_config c;
    if (sj_model_config_parse((const char *)data, size, "fuzz", &c) != SSMJIT_OK)
        return 0;
    require(c.d_model > 0 && c.d_inner > 0 && c.dt_rank > 0 && c.n_layer > 0, "non-positive size");
    require(c.d_state >= 1 && c.d_state <= 256, "d_state out of range");
    require(c.d_conv >= 2 && c.d_conv <= 8, "conv kernel out of range");
    require(c.vocab_size > 0 && c.vocab_padded >= c.vocab_size, "bad vocabulary size");
    require(c.norm_eps > 0 && c.norm_eps < 1, "norm epsilon out of range");
    return 0;
}
