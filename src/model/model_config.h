/* The dimensions of a Mamba-1 language model, read from its config.json in
 * either dialect:
 *  - Hugging Face MambaConfig (recognised by "hidden_size"): hidden_size,
 *    intermediate_size (else expand * hidden_size, expand 2), state_size
 *    (16), conv_kernel (4), time_step_rank (an integer or "auto" =
 *    ceil(hidden_size / 16)), num_hidden_layers, vocab_size,
 *    layer_norm_epsilon (1e-5), residual_in_fp32 (true), tie_word_embeddings
 *    (true), use_conv_bias (true), use_bias (false).  Norms are RMSNorm.
 *  - state-spaces mamba_ssm (recognised by "d_model"): d_model, n_layer,
 *    vocab_size rounded up to pad_vocab_size_multiple (8), ssm_cfg
 *    {d_state 16, d_conv 4, expand 2, dt_rank "auto", conv_bias true, bias
 *    false}, rms_norm (true; false means LayerNorm with biases),
 *    residual_in_fp32 (true), tie_embeddings (true); epsilon 1e-5 as
 *    mamba_ssm hard-codes it.
 * Values in parentheses are the defaults when the key is absent; the model's
 * size (width, depth, vocabulary) has none.  Converted checkpoints often
 * carry both dialects' keys: the Hugging Face ones are used, and d_model and
 * n_layer must then agree with them.  Other keys are ignored. */
#ifndef SSMJIT_MODEL_CONFIG_H
#define SSMJIT_MODEL_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "ssmjit.h"

typedef struct sj_model_file_config {
    int64_t d_model;
    int64_t d_inner;
    int64_t d_state;
    int64_t d_conv;
    int64_t dt_rank;
    int64_t n_layer;
    int64_t vocab_size;   /* as the config states it */
    int64_t vocab_padded; /* rows of the embedding mamba_ssm allocates (= vocab_size for HF) */
    double norm_eps;
    int rms_norm; /* 0: LayerNorm, whose norms also have a bias */
    int residual_in_fp32;
    int tie_embeddings; /* lm_head shares the embedding's weight */
    int conv_bias;      /* conv1d has a bias */
    int proj_bias;      /* in_proj and out_proj have biases */
} sj_model_file_config;

/* Parses config.json text.  SSMJIT_ERR_INVALID_ARG naming the key for a
 * missing size, a value of the wrong type or out of range (d_state 1..256,
 * conv kernel 2..8, ...); SSMJIT_ERR_UNSUPPORTED for another architecture
 * (model_type other than "mamba", a Mamba-2 layer, attention or MLP
 * layers).  `what` names the file in messages. */
ssmjit_status sj_model_config_parse(const char *text, size_t len, const char *what,
                                    sj_model_file_config *out);

/* Reads and parses the file at path (following a symlink there). */
ssmjit_status sj_model_config_load(const char *path, sj_model_file_config *out);

#endif
