#include "model_config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/fileio.h"
#include "base/json.h"

/* Far above any published Mamba, low enough that no product of them
 * overflows. */
#define MAX_D_MODEL 65536
#define MAX_EXPAND 16
#define MAX_D_INNER (MAX_EXPAND * MAX_D_MODEL)
#define MAX_LAYERS 1024
#define MAX_VOCAB (1 << 24)
#define MAX_D_STATE 256
#define MAX_DT_RANK 65536
#define REQUIRED (-1)

/* An object of the config and how its keys are spelled in messages. */
typedef struct {
    const char *what;
    const char *prefix; /* "" or "ssm_cfg." */
    const sj_json *obj;
} keys;

static ssmjit_status bad_type(const keys *k, const char *key, const char *want, const sj_json *v)
{
    return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': \"%s%s\" must be %s, not %s", k->what, k->prefix, key,
                    want, sj_json_type_name(v->type));
}

/* An integer in lo..hi; def when absent, unless def is REQUIRED. */
static ssmjit_status get_int(const keys *k, const char *key, int64_t def, int64_t lo, int64_t hi,
                             int64_t *out)
{
    const sj_json *v = sj_json_get(k->obj, key);
    if (!v && def == REQUIRED)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': \"%s%s\" is missing", k->what, k->prefix, key);
    if (!v) {
        *out = def;
        return SSMJIT_OK;
    }
    if (v->type != SJ_JSON_NUMBER || !v->is_int)
        return bad_type(k, key, "an integer", v);
    if (v->i < lo || v->i > hi)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': \"%s%s\" is %lld, outside %lld..%lld", k->what,
                        k->prefix, key, (long long)v->i, (long long)lo, (long long)hi);
    *out = v->i;
    return SSMJIT_OK;
}

static ssmjit_status get_bool(const keys *k, const char *key, int def, int *out)
{
    const sj_json *v = sj_json_get(k->obj, key);
    if (v && v->type != SJ_JSON_BOOL)
        return bad_type(k, key, "true or false", v);
    *out = v ? v->boolean : def;
    return SSMJIT_OK;
}

/* The rank of dt_proj: an integer, or "auto" (also when absent). */
static ssmjit_status get_rank(const keys *k, const char *key, int64_t d_model, int64_t *out)
{
    const sj_json *v = sj_json_get(k->obj, key);
    if (!v || (v->type == SJ_JSON_STRING && strcmp(v->str, "auto") == 0)) {
        *out = (d_model + 15) / 16;
        return SSMJIT_OK;
    }
    if (v->type == SJ_JSON_STRING)
        return sj_error(SSMJIT_ERR_INVALID_ARG,
                        "'%s': \"%s%s\" is \"%.40s\", not an integer or \"auto\"", k->what, k->prefix,
                        key, v->str);
    return get_int(k, key, REQUIRED, 1, MAX_DT_RANK, out);
}

static ssmjit_status get_eps(const keys *k, const char *key, double *out)
{
    const sj_json *v = sj_json_get(k->obj, key);
    if (!v) {
        *out = 1e-5;
        return SSMJIT_OK;
    }
    if (v->type != SJ_JSON_NUMBER)
        return bad_type(k, key, "a number", v);
    if (!(v->d > 0 && v->d < 1))
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': \"%s%s\" is %g, outside (0, 1)", k->what,
                        k->prefix, key, v->d);
    *out = v->d;
    return SSMJIT_OK;
}

/* A key of the other dialect, when present, must say the same. */
static ssmjit_status agree(const keys *k, const char *key, int64_t value, const char *used)
{
    const sj_json *v = sj_json_get(k->obj, key);
    if (v && !(v->type == SJ_JSON_NUMBER && v->is_int && v->i == value))
        return sj_error(SSMJIT_ERR_INVALID_ARG, "'%s': \"%s\" disagrees with \"%s\" (%lld)", k->what,
                        key, used, (long long)value);
    return SSMJIT_OK;
}

static ssmjit_status parse_hf(const keys *k, sj_model_file_config *c)
{
    int64_t expand;
    ssmjit_status st;
    if ((st = get_int(k, "hidden_size", REQUIRED, 1, MAX_D_MODEL, &c->d_model)) ||
        (st = get_int(k, "num_hidden_layers", REQUIRED, 1, MAX_LAYERS, &c->n_layer)) ||
        (st = get_int(k, "vocab_size", REQUIRED, 1, MAX_VOCAB, &c->vocab_size)) ||
        (st = get_int(k, "expand", 2, 1, MAX_EXPAND, &expand)) ||
        (st = get_int(k, "intermediate_size", expand * c->d_model, 1, MAX_D_INNER, &c->d_inner)) ||
        (st = get_int(k, "state_size", 16, 1, MAX_D_STATE, &c->d_state)) ||
        (st = get_int(k, "conv_kernel", 4, 2, 8, &c->d_conv)) ||
        (st = get_rank(k, "time_step_rank", c->d_model, &c->dt_rank)) ||
        (st = get_eps(k, "layer_norm_epsilon", &c->norm_eps)) ||
        (st = get_bool(k, "residual_in_fp32", 1, &c->residual_in_fp32)) ||
        (st = get_bool(k, "tie_word_embeddings", 1, &c->tie_embeddings)) ||
        (st = get_bool(k, "use_conv_bias", 1, &c->conv_bias)) ||
        /* transformers changed this default to true in later versions; the
         * configs it writes always state it, and Mamba itself has none. */
        (st = get_bool(k, "use_bias", 0, &c->proj_bias)) ||
        (st = agree(k, "d_model", c->d_model, "hidden_size")) ||
        (st = agree(k, "n_layer", c->n_layer, "num_hidden_layers")))
        return st;
    c->vocab_padded = c->vocab_size;
    c->rms_norm = 1;
    return SSMJIT_OK;
}

/* mamba_ssm's MixerModel also builds Mamba-2 layers, attention and MLPs
 * from the same config; those are refused here. */
static ssmjit_status refuse_other_layers(const keys *k, const keys *ssm)
{
    int64_t d_intermediate;
    ssmjit_status st = get_int(k, "d_intermediate", 0, 0, INT64_MAX, &d_intermediate);
    if (st != SSMJIT_OK)
        return st;
    if (d_intermediate != 0)
        return sj_error(SSMJIT_ERR_UNSUPPORTED,
                        "'%s': \"d_intermediate\" %lld asks for MLP layers, which "
                        "ssmjit does not implement",
                        k->what, (long long)d_intermediate);
    const sj_json *attn = sj_json_get(k->obj, "attn_layer_idx");
    if (attn && attn->type != SJ_JSON_ARRAY)
        return bad_type(k, "attn_layer_idx", "an array", attn);
    if (attn && attn->count)
        return sj_error(SSMJIT_ERR_UNSUPPORTED,
                        "'%s': \"attn_layer_idx\" asks for attention layers, "
                        "which ssmjit does not implement",
                        k->what);
    const sj_json *layer = sj_json_get(ssm->obj, "layer");
    if (layer && layer->type != SJ_JSON_STRING)
        return bad_type(ssm, "layer", "a string", layer);
    if (layer && strcmp(layer->str, "Mamba1") != 0)
        return sj_error(SSMJIT_ERR_UNSUPPORTED,
                        "'%s': \"ssm_cfg.layer\" is \"%.40s\", only \"Mamba1\" is supported", k->what,
                        layer->str);
    return SSMJIT_OK;
}

static ssmjit_status parse_ss(const keys *k, sj_model_file_config *c)
{
    static const sj_json empty = {.type = SJ_JSON_OBJECT};
    const sj_json *ssm = sj_json_get(k->obj, "ssm_cfg");
    if (ssm && ssm->type != SJ_JSON_OBJECT)
        return bad_type(k, "ssm_cfg", "an object", ssm);
    keys s = {k->what, "ssm_cfg.", ssm ? ssm : &empty};
    int64_t expand, multiple;
    ssmjit_status st;
    if ((st = refuse_other_layers(k, &s)) ||
        (st = get_int(k, "d_model", REQUIRED, 1, MAX_D_MODEL, &c->d_model)) ||
        (st = get_int(k, "n_layer", REQUIRED, 1, MAX_LAYERS, &c->n_layer)) ||
        (st = get_int(k, "vocab_size", REQUIRED, 1, MAX_VOCAB, &c->vocab_size)) ||
        (st = get_int(k, "pad_vocab_size_multiple", 8, 1, MAX_D_MODEL, &multiple)) ||
        (st = get_bool(k, "rms_norm", 1, &c->rms_norm)) ||
        (st = get_bool(k, "residual_in_fp32", 1, &c->residual_in_fp32)) ||
        (st = get_bool(k, "tie_embeddings", 1, &c->tie_embeddings)) ||
        (st = get_int(&s, "d_state", 16, 1, MAX_D_STATE, &c->d_state)) ||
        (st = get_int(&s, "d_conv", 4, 2, 8, &c->d_conv)) ||
        (st = get_int(&s, "expand", 2, 1, MAX_EXPAND, &expand)) ||
        (st = get_rank(&s, "dt_rank", c->d_model, &c->dt_rank)) ||
        (st = get_bool(&s, "conv_bias", 1, &c->conv_bias)) ||
        (st = get_bool(&s, "bias", 0, &c->proj_bias)))
        return st;
    c->d_inner = expand * c->d_model;
    c->vocab_padded = (c->vocab_size + multiple - 1) / multiple * multiple;
    c->norm_eps = 1e-5;
    return SSMJIT_OK;
}

ssmjit_status sj_model_config_parse(const char *text, size_t len, const char *what, sj_model_file_config *out)
{
    sj_json_doc *doc;
    char label[PATH_MAX + 2];
    snprintf(label, sizeof label, "'%s'", what);
    ssmjit_status st = sj_json_parse(text, len, label, &doc);
    if (st != SSMJIT_OK)
        return st;
    keys k = {what, "", sj_json_root(doc)};
    const sj_json *type = sj_json_get(k.obj, "model_type");
    sj_model_file_config c = {0};
    if (k.obj->type != SJ_JSON_OBJECT)
        st = sj_error(SSMJIT_ERR_INVALID_ARG, "'%s' is %s, not an object", what,
                      sj_json_type_name(k.obj->type));
    else if (type && type->type != SJ_JSON_STRING)
        st = bad_type(&k, "model_type", "a string", type);
    else if (type && strcmp(type->str, "mamba") != 0)
        st = sj_error(SSMJIT_ERR_UNSUPPORTED, "'%s': model_type \"%.40s\" is not Mamba-1 (\"mamba\")",
                      what, type->str);
    else if (sj_json_get(k.obj, "hidden_size"))
        st = parse_hf(&k, &c);
    else if (sj_json_get(k.obj, "d_model"))
        st = parse_ss(&k, &c);
    else
        st = sj_error(SSMJIT_ERR_INVALID_ARG,
                      "'%s' has neither \"hidden_size\" (Hugging Face) nor \"d_model\" (state-spaces)",
                      what);
    sj_json_free(doc);
    if (st == SSMJIT_OK)
        *out = c;
    return st;
}

ssmjit_status sj_model_config_load(const char *path, sj_model_file_config *out)
{
    char *text;
    size_t len;
    ssmjit_status st = sj_read_file(path, SJ_LINKS_FOLLOW, &text, &len);
    if (st != SSMJIT_OK)
        return st;
    st = sj_model_config_parse(text, len, path, out);
    free(text);
    return st;
}
