#include "model_tensors.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"

#define NAME_MAX_LEN 128
#define SHAPE_TEXT 96

static const char *const suffixes[SJ_T_COUNT] = {
    [SJ_T_NORM_F] = "backbone.norm_f.weight",
    [SJ_T_NORM_F_BIAS] = "backbone.norm_f.bias",
    [SJ_T_LM_HEAD] = "lm_head.weight",
    [SJ_T_NORM] = "norm.weight",
    [SJ_T_NORM_BIAS] = "norm.bias",
    [SJ_T_IN_PROJ] = "mixer.in_proj.weight",
    [SJ_T_IN_PROJ_BIAS] = "mixer.in_proj.bias",
    [SJ_T_CONV] = "mixer.conv1d.weight",
    [SJ_T_CONV_BIAS] = "mixer.conv1d.bias",
    [SJ_T_X_PROJ] = "mixer.x_proj.weight",
    [SJ_T_DT_PROJ] = "mixer.dt_proj.weight",
    [SJ_T_DT_BIAS] = "mixer.dt_proj.bias",
    [SJ_T_A_LOG] = "mixer.A_log",
    [SJ_T_D] = "mixer.D",
    [SJ_T_OUT_PROJ] = "mixer.out_proj.weight",
    [SJ_T_OUT_PROJ_BIAS] = "mixer.out_proj.bias",
};

ssmjit_status sj_model_tensor_name(sj_model_naming naming, sj_model_tensor_kind which, int64_t layer,
                                   char *buf, size_t cap)
{
    int n;
    if (which == SJ_T_EMBEDDING)
        n = snprintf(buf, cap, "%s",
                     naming == SJ_NAMING_HF ? "backbone.embeddings.weight"
                                            : "backbone.embedding.weight");
    else if (which < SJ_T_NORM)
        n = snprintf(buf, cap, "%s", suffixes[which]);
    else
        n = snprintf(buf, cap, "backbone.layers.%lld.%s", (long long)layer, suffixes[which]);
    if (n < 0 || (size_t)n >= cap)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "tensor name longer than %zu bytes", cap);
    return SSMJIT_OK;
}

/* Whether the config calls for the tensor: 1 yes, 0 it must be absent, -1
 * either (a tied lm_head may still be saved). */
static int wanted(const sj_model_file_config *c, sj_model_tensor_kind which)
{
    switch (which) {
    case SJ_T_NORM_F_BIAS:
    case SJ_T_NORM_BIAS: return !c->rms_norm;
    case SJ_T_LM_HEAD: return c->tie_embeddings ? -1 : 1;
    case SJ_T_IN_PROJ_BIAS:
    case SJ_T_OUT_PROJ_BIAS: return c->proj_bias;
    case SJ_T_CONV_BIAS: return c->conv_bias;
    default: return 1;
    }
}

/* The config key that rules a tensor out, for messages. */
static const char *ruled_out_by(sj_model_tensor_kind which)
{
    switch (which) {
    case SJ_T_NORM_F_BIAS:
    case SJ_T_NORM_BIAS: return "RMSNorm";
    case SJ_T_CONV_BIAS: return "no conv bias";
    default: return "no in_proj/out_proj bias";
    }
}

typedef struct {
    int ndim;
    int64_t dim[3];
} shape;

int sj_model_tensor_shape(const sj_model_dims *d, sj_model_tensor_kind which, int64_t dim[3])
{
#define SHAPE(n, a, b, c) (dim[0] = (a), dim[1] = (b), dim[2] = (c), (n))
    switch (which) {
    case SJ_T_EMBEDDING:
    case SJ_T_LM_HEAD: return SHAPE(2, d->vocab, d->d_model, 0);
    case SJ_T_NORM_F:
    case SJ_T_NORM_F_BIAS:
    case SJ_T_NORM:
    case SJ_T_NORM_BIAS:
    case SJ_T_OUT_PROJ_BIAS: return SHAPE(1, d->d_model, 0, 0);
    case SJ_T_IN_PROJ: return SHAPE(2, 2 * d->d_inner, d->d_model, 0);
    case SJ_T_IN_PROJ_BIAS: return SHAPE(1, 2 * d->d_inner, 0, 0);
    case SJ_T_CONV: return SHAPE(3, d->d_inner, 1, d->d_conv);
    case SJ_T_CONV_BIAS:
    case SJ_T_DT_BIAS:
    case SJ_T_D: return SHAPE(1, d->d_inner, 0, 0);
    case SJ_T_X_PROJ: return SHAPE(2, d->dt_rank + 2 * d->d_state, d->d_inner, 0);
    case SJ_T_DT_PROJ: return SHAPE(2, d->d_inner, d->dt_rank, 0);
    case SJ_T_A_LOG: return SHAPE(2, d->d_inner, d->d_state, 0);
    case SJ_T_OUT_PROJ: return SHAPE(2, d->d_model, d->d_inner, 0);
    case SJ_T_COUNT: break;
    }
    return 0;
#undef SHAPE
}

/* The shapes a tensor may have: at most two (the padded vocabulary, a conv
 * weight with or without its middle 1).  vocab_rows is the embedding's row
 * count once it has been found, else 0. */
static int expected(const sj_model_file_config *c, sj_model_tensor_kind which, int64_t vocab_rows,
                    shape out[2])
{
    const sj_model_dims d = {c->d_model, c->d_inner, c->dt_rank, c->d_state, c->d_conv,
                             vocab_rows ? vocab_rows : c->vocab_size};
    out[0].ndim = sj_model_tensor_shape(&d, which, out[0].dim);
    if ((which == SJ_T_EMBEDDING || which == SJ_T_LM_HEAD) && !vocab_rows && c->vocab_padded != c->vocab_size) {
        out[1] = (shape){2, {c->vocab_padded, c->d_model}};
        return 2;
    }
    if (which == SJ_T_CONV) {
        out[1] = (shape){2, {c->d_inner, c->d_conv}};
        return 2;
    }
    return out[0].ndim ? 1 : 0;
}

static void format_shape(char *buf, size_t cap, int ndim, const int64_t *dim)
{
    size_t at = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < ndim && at < cap; d++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%lld", d ? ", " : "", (long long)dim[d]);
    if (at < cap)
        snprintf(buf + at, cap - at, "]");
}

static int matches(const sj_st_tensor *t, const shape *s)
{
    if (t->ndim != s->ndim)
        return 0;
    for (int d = 0; d < s->ndim; d++)
        if (t->shape[d] != s->dim[d])
            return 0;
    return 1;
}

static ssmjit_status check_one(const sj_model_file_config *c, const sj_checkpoint *ck, sj_model_naming naming,
                               sj_model_tensor_kind which, int64_t layer, int64_t *vocab_rows)
{
    char name[NAME_MAX_LEN], want[2 * SHAPE_TEXT + 8], got[SHAPE_TEXT];
    ssmjit_status st = sj_model_tensor_name(naming, which, layer, name, sizeof name);
    if (st != SSMJIT_OK)
        return st;
    shape shapes[2];
    int n = expected(c, which, *vocab_rows, shapes);
    format_shape(want, SHAPE_TEXT, shapes[0].ndim, shapes[0].dim);
    if (n == 2) {
        strcat(want, " or ");
        format_shape(want + strlen(want), SHAPE_TEXT, shapes[1].ndim, shapes[1].dim);
    }
    const sj_st_tensor *t = sj_checkpoint_find(ck, name);
    int w = wanted(c, which);
    if (!t && w == 1)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "tensor '%s' (shape %s) is not in the checkpoint", name,
                        want);
    if (!t)
        return SSMJIT_OK;
    if (w == 0)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "tensor '%s' is in '%s' but the config says %s", name,
                        t->file, ruled_out_by(which));
    ssmjit_dtype dtype;
    if ((st = sj_st_tensor_dtype(t, &dtype)) != SSMJIT_OK)
        return st;
    for (int i = 0; i < n; i++)
        if (matches(t, &shapes[i])) {
            if (which == SJ_T_EMBEDDING)
                *vocab_rows = t->shape[0];
            return SSMJIT_OK;
        }
    format_shape(got, sizeof got, t->ndim, t->shape);
    return sj_error(SSMJIT_ERR_INVALID_ARG, "tensor '%s' in '%s' has shape %s, expected %s", name,
                    t->file, got, want);
}

static ssmjit_status detect_naming(const sj_checkpoint *ck, sj_model_naming *naming)
{
    char hf[NAME_MAX_LEN], ss[NAME_MAX_LEN];
    sj_model_tensor_name(SJ_NAMING_HF, SJ_T_EMBEDDING, 0, hf, sizeof hf);
    sj_model_tensor_name(SJ_NAMING_STATE_SPACES, SJ_T_EMBEDDING, 0, ss, sizeof ss);
    int has_hf = sj_checkpoint_find(ck, hf) != NULL, has_ss = sj_checkpoint_find(ck, ss) != NULL;
    if (has_hf == has_ss)
        return sj_error(SSMJIT_ERR_INVALID_ARG,
                        has_hf
                            ? "the checkpoint has both '%s' and '%s'"
                            : "the checkpoint has neither '%s' (Hugging Face) nor '%s' (state-spaces)",
                        hf, ss);
    *naming = has_hf ? SJ_NAMING_HF : SJ_NAMING_STATE_SPACES;
    return SSMJIT_OK;
}

ssmjit_status sj_model_check_tensors(const sj_model_file_config *cfg, const sj_checkpoint *ck,
                                     sj_model_naming *naming)
{
    ssmjit_status st = detect_naming(ck, naming);
    int64_t vocab_rows = 0;
    for (int w = 0; st == SSMJIT_OK && w < SJ_T_NORM; w++)
        st = check_one(cfg, ck, *naming, (sj_model_tensor_kind)w, 0, &vocab_rows);
    for (int64_t layer = 0; st == SSMJIT_OK && layer < cfg->n_layer; layer++)
        for (int w = SJ_T_NORM; st == SSMJIT_OK && w < SJ_T_COUNT; w++)
            st = check_one(cfg, ck, *naming, (sj_model_tensor_kind)w, layer, &vocab_rows);
    if (st != SSMJIT_OK)
        return st;
    char extra[NAME_MAX_LEN];
    sj_model_tensor_name(*naming, SJ_T_IN_PROJ, cfg->n_layer, extra, sizeof extra);
    if (sj_checkpoint_find(ck, extra))
        return sj_error(SSMJIT_ERR_INVALID_ARG, "the checkpoint has '%s' but the config has %lld layers",
                        extra, (long long)cfg->n_layer);
    return SSMJIT_OK;
}
