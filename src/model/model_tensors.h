/* The tensors of a Mamba-1 language model in a checkpoint: their names in
 * the two published schemes and the shapes a config implies.
 *
 * Hugging Face (MambaForCausalLM) and state-spaces (MambaLMHeadModel) name
 * them alike except for the embedding:
 *   backbone.embeddings.weight (HF) | backbone.embedding.weight (state-spaces)
 *                                       [vocab, d_model]
 *   backbone.layers.{i}.norm.weight     [d_model]   (.bias with LayerNorm)
 *   backbone.layers.{i}.mixer.in_proj.weight   [2 * d_inner, d_model]
 *   backbone.layers.{i}.mixer.conv1d.weight    [d_inner, 1, d_conv] or [d_inner, d_conv]
 *   backbone.layers.{i}.mixer.conv1d.bias      [d_inner]   (with conv_bias)
 *   backbone.layers.{i}.mixer.x_proj.weight    [dt_rank + 2 * d_state, d_inner]
 *   backbone.layers.{i}.mixer.dt_proj.weight   [d_inner, dt_rank]
 *   backbone.layers.{i}.mixer.dt_proj.bias     [d_inner]
 *   backbone.layers.{i}.mixer.A_log            [d_inner, d_state]
 *   backbone.layers.{i}.mixer.D                [d_inner]
 *   backbone.layers.{i}.mixer.out_proj.weight  [d_model, d_inner]
 *   in_proj.bias [2 * d_inner] and out_proj.bias [d_model] with proj_bias
 *   backbone.norm_f.weight              [d_model]   (.bias with LayerNorm)
 *   lm_head.weight                      [vocab, d_model], absent when tied
 * vocab is the config's vocab_size or the padded one. */
#ifndef SSMJIT_MODEL_TENSORS_H
#define SSMJIT_MODEL_TENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "io/checkpoint.h"
#include "model_config.h"

typedef enum sj_model_naming {
    SJ_NAMING_HF,
    SJ_NAMING_STATE_SPACES
} sj_model_naming;

typedef enum sj_model_tensor_kind {
    /* once per model */
    SJ_T_EMBEDDING,
    SJ_T_NORM_F,
    SJ_T_NORM_F_BIAS,
    SJ_T_LM_HEAD,
    /* once per layer */
    SJ_T_NORM,
    SJ_T_NORM_BIAS,
    SJ_T_IN_PROJ,
    SJ_T_IN_PROJ_BIAS,
    SJ_T_CONV,
    SJ_T_CONV_BIAS,
    SJ_T_X_PROJ,
    SJ_T_DT_PROJ,
    SJ_T_DT_BIAS,
    SJ_T_A_LOG,
    SJ_T_D,
    SJ_T_OUT_PROJ,
    SJ_T_OUT_PROJ_BIAS,
    SJ_T_COUNT
} sj_model_tensor_kind;

/* Writes the name of tensor `which` (of layer `layer` when it is a
 * per-layer one) to buf.  SSMJIT_ERR_INVALID_ARG if it does not fit. */
ssmjit_status sj_model_tensor_name(sj_model_naming naming, sj_model_tensor_kind which, int64_t layer,
                                   char *buf, size_t cap);

/* The sizes a tensor's shape follows from. */
typedef struct sj_model_dims {
    int64_t d_model, d_inner, dt_rank, d_state, d_conv, vocab;
} sj_model_dims;

/* The shape of tensor `which` (its first form where a checkpoint may
 * hold two: the conv weight as [d_inner, 1, d_conv], the vocabulary as
 * d->vocab rows) in dim; returns its number of dimensions, 0 for none. */
int sj_model_tensor_shape(const sj_model_dims *d, sj_model_tensor_kind which, int64_t dim[3]);

/* Tells which naming the checkpoint uses (by its embedding) and checks that
 * it holds every tensor the config calls for, each F32, F16 or BF16 with
 * the expected shape, no bias the config rules out, and no layer past
 * n_layer.  Reports the first problem, checking the model-wide tensors and
 * then layer by layer: SSMJIT_ERR_INVALID_ARG naming the tensor, with the
 * expected and the found shape; SSMJIT_ERR_UNSUPPORTED naming a tensor of
 * another dtype. */
ssmjit_status sj_model_check_tensors(const sj_model_file_config *cfg, const sj_checkpoint *ck,
                                     sj_model_naming *naming);

#endif
