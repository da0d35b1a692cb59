/* ssmjit_model_load: a Hugging Face or state-spaces checkpoint into a
 * model's device memory. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "io/checkpoint.h"
#include "base/error.h"
#include "model.h"
#include "model_config.h"
#include "ops/validate.h"

static const char op[] = "ssmjit_model_load";

/* config.json inside a directory, or beside a single .safetensors file. */
static ssmjit_status config_path(const char *path, char *out, size_t cap)
{
    struct stat sb;
    int n;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        n = snprintf(out, cap, "%s/config.json", path);
    } else {
        const char *slash = strrchr(path, '/');
        n = slash ? snprintf(out, cap, "%.*s/config.json", (int)(slash - path), path)
                  : snprintf(out, cap, "config.json");
    }
    if (n < 0 || (size_t)n >= cap)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: path '%s' is too long", op, path);
    return SSMJIT_OK;
}

static ssmjit_status model_config_of(const sj_model_file_config *mc, const sj_checkpoint *ck,
                                     sj_model_naming naming, ssmjit_model_config *c)
{
    if (!mc->rms_norm)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "%s: LayerNorm models (rms_norm false) are not supported",
                        op);
    if (mc->proj_bias)
        return sj_error(SSMJIT_ERR_UNSUPPORTED,
                        "%s: in_proj/out_proj biases (use_bias true) are not supported", op);
    char name[80];
    SJ_TRY(sj_model_tensor_name(naming, SJ_T_EMBEDDING, 0, name, sizeof name));
    const sj_st_tensor *emb = sj_checkpoint_find(ck, name);
    *c = (ssmjit_model_config){
        .struct_size = sizeof *c, .d_model = mc->d_model, .d_inner = mc->d_inner, .d_state = mc->d_state,
        .d_conv = mc->d_conv, .dt_rank = mc->dt_rank, .n_layer = mc->n_layer,
        /* the embedding's rows: the padded vocabulary where the checkpoint has it */
        .vocab_size = emb->shape[0], .norm_eps = mc->norm_eps,
        .tie_embeddings = mc->tie_embeddings, .residual_in_fp32 = mc->residual_in_fp32,
    };
    return SSMJIT_OK;
}

static ssmjit_dtype dtype_of(sj_st_dtype d)
{
    return d == SJ_ST_F32 ? SSMJIT_F32 : d == SJ_ST_F16 ? SSMJIT_F16 : SSMJIT_BF16;
}

/* Copies every tensor of the table from the checkpoint (a conv bias the
 * config rules out is zero). */
static ssmjit_status fill(ssmjit_model *m, const sj_checkpoint *ck, sj_model_naming naming)
{
    for (int64_t i = 0; i < m->count; i++) {
        sj_model_tensor *t = &m->t[i];
        int64_t layer = i < m->layer_base ? 0 : (i - m->layer_base) / SJ_L_COUNT;
        char name[80];
        SJ_TRY(sj_model_tensor_name(naming, t->kind, layer, name, sizeof name));
        const sj_st_tensor *st = sj_checkpoint_find(ck, name);
        if (st) {
            SJ_TRY(sj_model_upload(m, t, st->data, dtype_of(st->dtype)));
            continue;
        }
        int pushed;
        SJ_TRY(sj_context_enter(m->ctx, &pushed));
        ssmjit_status s = SJ_CU(m->drv, MemsetD8, t->data, 0, t->numel * ssmjit_dtype_size(t->dtype));
        sj_context_leave(m->ctx, pushed);
        SJ_TRY(s);
    }
    return SSMJIT_OK;
}

static ssmjit_status load(ssmjit_context *ctx, const char *path, const ssmjit_model_options *opts,
                          sj_checkpoint *ck, ssmjit_model **out)
{
    char cfg_file[PATH_MAX];
    SJ_TRY(config_path(path, cfg_file, sizeof cfg_file));
    sj_model_file_config mc;
    SJ_TRY(sj_model_config_load(cfg_file, &mc));
    sj_model_naming naming;
    SJ_TRY(sj_model_check_tensors(&mc, ck, &naming));
    ssmjit_model_config c;
    SJ_TRY(model_config_of(&mc, ck, naming, &c));
    ssmjit_model *m;
    SJ_TRY(sj_model_alloc(ctx, &c, opts, &m));
    return sj_model_finish(m, fill(m, ck, naming), out);
}

SSMJIT_API ssmjit_status ssmjit_model_load(ssmjit_context *ctx, const char *path,
                                           const ssmjit_model_options *opts, ssmjit_model **out)
{
    SJ_TRY(sj_check_ptr(out, op, "out"));
    *out = NULL;
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(sj_check_ptr(path, op, "path"));
    sj_checkpoint *ck;
    SJ_TRY(sj_checkpoint_open(path, &ck));
    ssmjit_status st = load(ctx, path, opts, ck, out);
    sj_checkpoint_close(ck);
    return st;
}
