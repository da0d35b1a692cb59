/* Tiny 2-layer Mamba checkpoints in both naming schemes, f32/f16/bf16
 * tensors, single file and sharded: every tensor is found with its values,
 * and each kind of mismatch with the config is reported naming the tensor,
 * the expected and the found shape; ssmjit_model_load reports the same
 * before it touches the GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "context.h"
#include "model_tensors.h"
#include "ssmjit_internal.h"
#include "st_util.h"
#include "test_util.h"


/* d_model 8, d_inner 16, d_state 4, conv 4, dt_rank 2, 2 layers, vocab 10. */
static const char hf_json[] =
    "{\"model_type\": \"mamba\", \"hidden_size\": 8, \"intermediate_size\": 16,"
    " \"state_size\": 4, \"conv_kernel\": 4, \"time_step_rank\": 2,"
    " \"num_hidden_layers\": 2, \"vocab_size\": 10, \"use_bias\": false}";
/* The same sizes, vocab padded to 16, LayerNorm, untied, projection biases. */
static const char ss_json[] = "{\"d_model\": 8, \"n_layer\": 2, \"vocab_size\": 10,"
                              " \"ssm_cfg\": {\"d_state\": 4, \"dt_rank\": 2, \"bias\": true},"
                              " \"rms_norm\": false, \"tie_embeddings\": false}";

static sj_model_file_config config(const char *json)
{
    sj_model_file_config c;
    assert_int_equal(sj_model_config_parse(json, strlen(json), "config.json", &c), SSMJIT_OK);
    return c;
}

typedef struct {
    su_tensor t[64];
    char names[64][80];
    size_t n;
} model;

static su_tensor *add(model *m, const char *fmt, int layer, int ndim, int64_t a, int64_t b, int64_t c)
{
    static const ssmjit_dtype cycle[] = {SSMJIT_F32, SSMJIT_F16, SSMJIT_BF16};
    assert_true(m->n < 64);
    snprintf(m->names[m->n], sizeof m->names[0], fmt, layer);
    su_tensor *t = &m->t[m->n];
    *t = (su_tensor){m->names[m->n], cycle[m->n % 3], ndim, {a, b, c}, NULL};
    m->n++;
    return t;
}

/* The names are spelled out here, not taken from the library, so that the
 * test checks them.  Filled in place: the tensors point into m->names. */
static void build(model *m, const sj_model_file_config *c, int state_spaces, int64_t vocab_rows, int conv_2d)
{
    m->n = 0;
    int64_t dm = c->d_model, di = c->d_inner, n = c->d_state, r = c->dt_rank, w = c->d_conv;
    add(m, state_spaces ? "backbone.embedding.weight" : "backbone.embeddings.weight", 0, 2, vocab_rows,
        dm, 0);
    for (int i = 0; i < c->n_layer; i++) {
        add(m, "backbone.layers.%d.norm.weight", i, 1, dm, 0, 0);
        if (!c->rms_norm)
            add(m, "backbone.layers.%d.norm.bias", i, 1, dm, 0, 0);
        add(m, "backbone.layers.%d.mixer.in_proj.weight", i, 2, 2 * di, dm, 0);
        if (c->proj_bias)
            add(m, "backbone.layers.%d.mixer.in_proj.bias", i, 1, 2 * di, 0, 0);
        if (conv_2d)
            add(m, "backbone.layers.%d.mixer.conv1d.weight", i, 2, di, w, 0);
        else
            add(m, "backbone.layers.%d.mixer.conv1d.weight", i, 3, di, 1, w);
        if (c->conv_bias)
            add(m, "backbone.layers.%d.mixer.conv1d.bias", i, 1, di, 0, 0);
        add(m, "backbone.layers.%d.mixer.x_proj.weight", i, 2, r + 2 * n, di, 0);
        add(m, "backbone.layers.%d.mixer.dt_proj.weight", i, 2, di, r, 0);
        add(m, "backbone.layers.%d.mixer.dt_proj.bias", i, 1, di, 0, 0);
        add(m, "backbone.layers.%d.mixer.A_log", i, 2, di, n, 0);
        add(m, "backbone.layers.%d.mixer.D", i, 1, di, 0, 0);
        add(m, "backbone.layers.%d.mixer.out_proj.weight", i, 2, dm, di, 0);
        if (c->proj_bias)
            add(m, "backbone.layers.%d.mixer.out_proj.bias", i, 1, dm, 0, 0);
    }
    add(m, "backbone.norm_f.weight", 0, 1, dm, 0, 0);
    if (!c->rms_norm)
        add(m, "backbone.norm_f.bias", 0, 1, dm, 0, 0);
    if (!c->tie_embeddings)
        add(m, "lm_head.weight", 0, 2, vocab_rows, dm, 0);
}

static su_tensor *find(model *m, const char *name)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->t[i].name, name) == 0)
            return &m->t[i];
    fail_msg("test model has no '%s'", name);
    return NULL;
}

static void drop(model *m, const char *name)
{
    su_tensor *t = find(m, name);
    size_t i = (size_t)(t - m->t);
    memmove(&m->t[i], &m->t[i + 1], (m->n - i - 1) * sizeof *t);
    m->n--;
}

/* Writes the model under su_dir/<sub> and returns that directory: one file,
 * or two shards split after layer 0 with an index. */
static const char *write_model(const char *sub, const model *m, int sharded)
{
    static char dir[4200];
    char path[4300];
    snprintf(dir, sizeof dir, "%s/%s", su_dir, sub);
    assert_int_equal(mkdir(dir, 0700), 0);
    if (!sharded) {
        snprintf(path, sizeof path, "%s/%s", dir, SJ_CHECKPOINT_FILE);
        su_build_file(path, m->t, m->n);
        return dir;
    }
    size_t split = 0;
    while (split < m->n && !strstr(m->t[split].name, "layers.1."))
        split++;
    static const char *const shard[2] = {"model-00001-of-00002.safetensors",
                                         "model-00002-of-00002.safetensors"};
    snprintf(path, sizeof path, "%s/%s", dir, shard[0]);
    su_build_file(path, m->t, split);
    snprintf(path, sizeof path, "%s/%s", dir, shard[1]);
    su_build_file(path, m->t + split, m->n - split);
    char index[8192];
    size_t at = (size_t)snprintf(index, sizeof index, "{\"metadata\": {}, \"weight_map\": {");
    for (size_t i = 0; i < m->n; i++)
        at += (size_t)snprintf(index + at, sizeof index - at, "%s\"%s\": \"%s\"", i ? ", " : "",
                               m->t[i].name, shard[i >= split]);
    snprintf(index + at, sizeof index - at, "}}");
    snprintf(path, sizeof path, "%s/%s", dir, SJ_CHECKPOINT_INDEX);
    su_write_text(path, index);
    return dir;
}

static ssmjit_status check_dir(const char *dir, const sj_model_file_config *c, sj_model_naming *naming)
{
    sj_checkpoint *ck;
    ssmjit_status st = sj_checkpoint_open(dir, &ck);
    if (st != SSMJIT_OK)
        print_error("%s\n", ssmjit_last_error());
    assert_int_equal(st, SSMJIT_OK);
    st = sj_model_check_tensors(c, ck, naming);
    sj_checkpoint_close(ck);
    return st;
}

/* Every tensor the config calls for is found under the library's name with
 * the values written, whatever its stored dtype. */
static void check_values(const char *dir, const sj_model_file_config *c, sj_model_naming naming,
                         size_t expected)
{
    sj_checkpoint *ck;
    assert_int_equal(sj_checkpoint_open(dir, &ck), SSMJIT_OK);
    size_t found = 0;
    for (int w = 0; w < SJ_T_COUNT; w++)
        for (int64_t layer = 0; layer < (w < SJ_T_NORM ? 1 : c->n_layer); layer++) {
            char name[128];
            assert_int_equal(sj_model_tensor_name(naming, (sj_model_tensor_kind)w, layer, name, sizeof name),
                             SSMJIT_OK);
            const sj_st_tensor *t = sj_checkpoint_find(ck, name);
            if (!t)
                continue;
            found++;
            uint64_t n = sj_st_tensor_numel(t);
            float *v = malloc(n * sizeof *v);
            assert_non_null(v);
            assert_int_equal(sj_st_tensor_convert(t, SSMJIT_F32, v), SSMJIT_OK);
            for (uint64_t i = 0; i < n; i++)
                assert_true(v[i] == su_value(name, i));
            free(v);
        }
    assert_int_equal(found, expected);
    sj_checkpoint_close(ck);
}

static void test_hf_model(void **state)
{
    (void)state;
    sj_model_file_config c = config(hf_json);
    sj_model_naming naming = SJ_NAMING_STATE_SPACES;
    for (int sharded = 0; sharded < 2; sharded++) {
        model m;
        build(&m, &c, 0, 10, 0);
        assert_int_equal(m.n, 2 + 2 * 10); /* embedding, norm_f, 10 per layer */
        const char *dir = write_model(sharded ? "hf-sharded" : "hf", &m, sharded);
        assert_int_equal(check_dir(dir, &c, &naming), SSMJIT_OK);
        assert_int_equal(naming, SJ_NAMING_HF);
        check_values(dir, &c, naming, m.n);
    }
}

static void test_state_spaces_model(void **state)
{
    (void)state;
    sj_model_file_config c = config(ss_json);
    sj_model_naming naming = SJ_NAMING_HF;
    /* Padded vocabulary, 2-D conv weights, norm and projection biases,
     * lm_head of its own. */
    model m;
    build(&m, &c, 1, 16, 1);
    assert_int_equal(m.n, 4 + 2 * 13);
    const char *dir = write_model("ss", &m, 0);
    assert_int_equal(check_dir(dir, &c, &naming), SSMJIT_OK);
    assert_int_equal(naming, SJ_NAMING_STATE_SPACES);
    check_values(dir, &c, naming, m.n);

    /* The unpadded vocabulary is fine too, and converted checkpoints pair
     * Hugging Face names with a state-spaces config. */
    build(&m, &c, 0, 10, 0);
    dir = write_model("ss-hf-names", &m, 1);
    assert_int_equal(check_dir(dir, &c, &naming), SSMJIT_OK);
    assert_int_equal(naming, SJ_NAMING_HF);
}

/* A tied model may still carry lm_head; it must then have the embedding's
 * shape. */
static void test_tied_lm_head(void **state)
{
    (void)state;
    sj_model_file_config c = config(hf_json);
    sj_model_naming naming;
    model m;
    build(&m, &c, 0, 10, 0);
    add(&m, "lm_head.weight", 0, 2, 10, 8, 0);
    assert_int_equal(check_dir(write_model("tied-ok", &m, 0), &c, &naming), SSMJIT_OK);
    find(&m, "lm_head.weight")->shape[0] = 11;
    assert_int_equal(check_dir(write_model("tied-bad", &m, 0), &c, &naming), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "tensor 'lm_head.weight' in '"));
    assert_non_null(strstr(ssmjit_last_error(), "' has shape [11, 8], expected [10, 8]"));
}

static void expect_failure(const char *sub, const model *m, const sj_model_file_config *c, int sharded,
                           ssmjit_status want, const char *part1, const char *part2)
{
    sj_model_naming naming;
    ssmjit_status st = check_dir(write_model(sub, m, sharded), c, &naming);
    const char *msg = ssmjit_last_error();
    if (st != want || !strstr(msg, part1) || (part2 && !strstr(msg, part2)))
        print_error("%s: status %d, message '%s', wanted %d '%s' '%s'\n", sub, st, msg, want, part1,
                    part2 ? part2 : "");
    assert_int_equal(st, want);
    assert_non_null(strstr(msg, part1));
    if (part2)
        assert_non_null(strstr(msg, part2));
}

static void test_missing_tensors(void **state)
{
    (void)state;
    sj_model_file_config hf = config(hf_json), ss = config(ss_json);
    model m;
    build(&m, &hf, 0, 10, 0);
    drop(&m, "backbone.layers.1.mixer.D");
    expect_failure("no-D", &m, &hf, 0, SSMJIT_ERR_INVALID_ARG,
                   "tensor 'backbone.layers.1.mixer.D' (shape [16]) is not in the checkpoint", NULL);
    build(&m, &hf, 0, 10, 0);
    drop(&m, "backbone.layers.0.mixer.conv1d.bias");
    expect_failure("no-conv-bias", &m, &hf, 1, SSMJIT_ERR_INVALID_ARG,
                   "tensor 'backbone.layers.0.mixer.conv1d.bias' (shape [16]) is not in the checkpoint",
                   NULL);
    build(&m, &hf, 0, 10, 0);
    drop(&m, "backbone.norm_f.weight");
    expect_failure("no-norm-f", &m, &hf, 0, SSMJIT_ERR_INVALID_ARG,
                   "tensor 'backbone.norm_f.weight' (shape [8])", NULL);
    build(&m, &ss, 1, 16, 0);
    drop(&m, "lm_head.weight");
    expect_failure("no-lm-head", &m, &ss, 0, SSMJIT_ERR_INVALID_ARG,
                   "tensor 'lm_head.weight' (shape [16, 8]) is not in the checkpoint", NULL);
    build(&m, &ss, 1, 16, 0);
    drop(&m, "backbone.layers.1.norm.bias");
    expect_failure("no-norm-bias", &m, &ss, 0, SSMJIT_ERR_INVALID_ARG,
                   "tensor 'backbone.layers.1.norm.bias' (shape [8]) is not in", NULL);
    build(&m, &ss, 1, 16, 0);
    drop(&m, "backbone.layers.0.mixer.out_proj.bias");
    expect_failure("no-out-bias", &m, &ss, 0, SSMJIT_ERR_INVALID_ARG,
                   "'backbone.layers.0.mixer.out_proj.bias'", "is not in");
    build(&m, &hf, 0, 10, 0);
    drop(&m, "backbone.embeddings.weight");
    expect_failure("no-embedding", &m, &hf, 0, SSMJIT_ERR_INVALID_ARG,
                   "the checkpoint has neither 'backbone.embeddings.weight' (Hugging Face) nor "
                   "'backbone.embedding.weight' (state-spaces)",
                   NULL);
    build(&m, &hf, 0, 10, 0);
    add(&m, "backbone.embedding.weight", 0, 2, 10, 8, 0);
    expect_failure(
        "two-embeddings", &m, &hf, 0, SSMJIT_ERR_INVALID_ARG,
        "the checkpoint has both 'backbone.embeddings.weight' and 'backbone.embedding.weight'", NULL);
}

static void test_wrong_shapes(void **state)
{
    (void)state;
    sj_model_file_config hf = config(hf_json), ss = config(ss_json);
    model m;
    build(&m, &hf, 0, 10, 0);
    find(&m, "backbone.layers.1.mixer.x_proj.weight")->shape[0] = 11;
    expect_failure("x-proj", &m, &hf, 0, SSMJIT_ERR_INVALID_ARG,
                   "tensor 'backbone.layers.1.mixer.x_proj.weight' in '",
                   "has shape [11, 16], expected [10, 16]");
    build(&m, &hf, 0, 10, 0);
    find(&m, "backbone.layers.0.mixer.conv1d.weight")->shape[1] = 2;
    expect_failure("conv", &m, &hf, 0, SSMJIT_ERR_INVALID_ARG, "'backbone.layers.0.mixer.conv1d.weight'",
                   "has shape [16, 2, 4], expected [16, 1, 4] or [16, 4]");
    build(&m, &hf, 0, 10, 0);
    find(&m, "backbone.layers.1.mixer.dt_proj.weight")->shape[1] = 3;
    expect_failure("dt-proj", &m, &hf, 1, SSMJIT_ERR_INVALID_ARG,
                   "'backbone.layers.1.mixer.dt_proj.weight' in '",
                   "model-00002-of-00002.safetensors' has shape [16, 3], expected [16, 2]");
    build(&m, &hf, 0, 10, 0);
    find(&m, "backbone.layers.0.mixer.A_log")->ndim = 1;
    expect_failure("a-log", &m, &hf, 0, SSMJIT_ERR_INVALID_ARG, "'backbone.layers.0.mixer.A_log'",
                   "has shape [16], expected [16, 4]");
    build(&m, &hf, 0, 10, 0);
    find(&m, "backbone.layers.0.mixer.in_proj.weight")->shape[0] = 16;
    expect_failure("in-proj", &m, &hf, 0, SSMJIT_ERR_INVALID_ARG,
                   "'backbone.layers.0.mixer.in_proj.weight'", "has shape [16, 8], expected [32, 8]");
    build(&m, &hf, 0, 10, 0);
    su_tensor *out = find(&m, "backbone.layers.1.mixer.out_proj.weight");
    out->shape[0] = 16;
    out->shape[1] = 8; /* transposed */
    expect_failure("out-proj", &m, &hf, 0, SSMJIT_ERR_INVALID_ARG,
                   "'backbone.layers.1.mixer.out_proj.weight'", "has shape [16, 8], expected [8, 16]");
    build(&m, &hf, 0, 12, 0);
    expect_failure("vocab-hf", &m, &hf, 0, SSMJIT_ERR_INVALID_ARG, "'backbone.embeddings.weight'",
                   "has shape [12, 8], expected [10, 8]");
    build(&m, &ss, 1, 12, 0);
    expect_failure("vocab-ss", &m, &ss, 0, SSMJIT_ERR_INVALID_ARG, "'backbone.embedding.weight'",
                   "has shape [12, 8], expected [10, 8] or [16, 8]");
    build(&m, &ss, 1, 16, 0);
    find(&m, "lm_head.weight")->shape[0] = 10;
    expect_failure("lm-head-rows", &m, &ss, 0, SSMJIT_ERR_INVALID_ARG, "'lm_head.weight'",
                   "has shape [10, 8], expected [16, 8]");
    build(&m, &ss, 1, 16, 0);
    find(&m, "backbone.layers.1.mixer.in_proj.bias")->shape[0] = 16;
    expect_failure("in-proj-bias", &m, &ss, 0, SSMJIT_ERR_INVALID_ARG,
                   "'backbone.layers.1.mixer.in_proj.bias'", "has shape [16], expected [32]");
}

/* Tensors the config rules out, layers past n_layer, unusable dtypes. */
static void test_config_mismatch(void **state)
{
    (void)state;
    sj_model_file_config hf = config(hf_json);
    model m;
    build(&m, &hf, 0, 10, 0);
    add(&m, "backbone.layers.0.mixer.in_proj.bias", 0, 1, 32, 0, 0);
    expect_failure("extra-bias", &m, &hf, 0, SSMJIT_ERR_INVALID_ARG,
                   "tensor 'backbone.layers.0.mixer.in_proj.bias' is in '",
                   "but the config says no in_proj/out_proj bias");
    build(&m, &hf, 0, 10, 0);
    add(&m, "backbone.layers.1.norm.bias", 0, 1, 8, 0, 0);
    expect_failure("extra-norm-bias", &m, &hf, 0, SSMJIT_ERR_INVALID_ARG,
                   "'backbone.layers.1.norm.bias'", "but the config says RMSNorm");
    sj_model_file_config no_conv_bias = hf;
    no_conv_bias.conv_bias = 0;
    build(&m, &hf, 0, 10, 0);
    expect_failure("extra-conv-bias", &m, &no_conv_bias, 0, SSMJIT_ERR_INVALID_ARG,
                   "'backbone.layers.0.mixer.conv1d.bias'", "but the config says no conv bias");
    build(&m, &hf, 0, 10, 0);
    add(&m, "backbone.layers.%d.mixer.in_proj.weight", 2, 2, 32, 8, 0);
    expect_failure(
        "extra-layer", &m, &hf, 0, SSMJIT_ERR_INVALID_ARG,
        "the checkpoint has 'backbone.layers.2.mixer.in_proj.weight' but the config has 2 layers", NULL);
    build(&m, &hf, 0, 10, 0);
    su_tensor *d = find(&m, "backbone.layers.0.mixer.D");
    d->dtype = SSMJIT_F32;
    d->dtype_name = "I32";
    expect_failure("int-D", &m, &hf, 0, SSMJIT_ERR_UNSUPPORTED,
                   "tensor 'backbone.layers.0.mixer.D' in '",
                   "is I32; only F32, F16 and BF16 are supported");
}

static void test_tensor_names(void **state)
{
    (void)state;
    static const struct {
        sj_model_tensor_kind which;
        int64_t layer;
        const char *hf, *ss;
    } cases[] = {
        {SJ_T_EMBEDDING, 0, "backbone.embeddings.weight", "backbone.embedding.weight"},
        {SJ_T_NORM_F, 0, "backbone.norm_f.weight", "backbone.norm_f.weight"},
        {SJ_T_NORM_F_BIAS, 0, "backbone.norm_f.bias", "backbone.norm_f.bias"},
        {SJ_T_LM_HEAD, 0, "lm_head.weight", "lm_head.weight"},
        {SJ_T_NORM, 3, "backbone.layers.3.norm.weight", "backbone.layers.3.norm.weight"},
        {SJ_T_NORM_BIAS, 3, "backbone.layers.3.norm.bias", "backbone.layers.3.norm.bias"},
        {SJ_T_IN_PROJ, 12, "backbone.layers.12.mixer.in_proj.weight",
         "backbone.layers.12.mixer.in_proj.weight"},
        {SJ_T_IN_PROJ_BIAS, 0, "backbone.layers.0.mixer.in_proj.bias",
         "backbone.layers.0.mixer.in_proj.bias"},
        {SJ_T_CONV, 1, "backbone.layers.1.mixer.conv1d.weight", "backbone.layers.1.mixer.conv1d.weight"},
        {SJ_T_CONV_BIAS, 1, "backbone.layers.1.mixer.conv1d.bias",
         "backbone.layers.1.mixer.conv1d.bias"},
        {SJ_T_X_PROJ, 63, "backbone.layers.63.mixer.x_proj.weight",
         "backbone.layers.63.mixer.x_proj.weight"},
        {SJ_T_DT_PROJ, 2, "backbone.layers.2.mixer.dt_proj.weight",
         "backbone.layers.2.mixer.dt_proj.weight"},
        {SJ_T_DT_BIAS, 2, "backbone.layers.2.mixer.dt_proj.bias",
         "backbone.layers.2.mixer.dt_proj.bias"},
        {SJ_T_A_LOG, 5, "backbone.layers.5.mixer.A_log", "backbone.layers.5.mixer.A_log"},
        {SJ_T_D, 5, "backbone.layers.5.mixer.D", "backbone.layers.5.mixer.D"},
        {SJ_T_OUT_PROJ, 7, "backbone.layers.7.mixer.out_proj.weight",
         "backbone.layers.7.mixer.out_proj.weight"},
        {SJ_T_OUT_PROJ_BIAS, 7, "backbone.layers.7.mixer.out_proj.bias",
         "backbone.layers.7.mixer.out_proj.bias"},
    };
    assert_int_equal(sizeof cases / sizeof *cases, SJ_T_COUNT);
    char buf[128];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        assert_int_equal(
            sj_model_tensor_name(SJ_NAMING_HF, cases[i].which, cases[i].layer, buf, sizeof buf),
            SSMJIT_OK);
        assert_string_equal(buf, cases[i].hf);
        assert_int_equal(sj_model_tensor_name(SJ_NAMING_STATE_SPACES, cases[i].which, cases[i].layer,
                                              buf, sizeof buf),
                         SSMJIT_OK);
        assert_string_equal(buf, cases[i].ss);
    }
    assert_int_equal(
        sj_model_tensor_name(SJ_NAMING_HF, SJ_T_D, 5, buf, strlen("backbone.layers.5.mixer.D")),
        SSMJIT_ERR_INVALID_ARG);
    assert_int_equal(
        sj_model_tensor_name(SJ_NAMING_HF, SJ_T_D, 5, buf, strlen("backbone.layers.5.mixer.D") + 1),
        SSMJIT_OK);
}

/* ssmjit_model_load checks config.json and every tensor before it touches
 * the GPU: on a context without a driver a bad checkpoint fails with the
 * checker's message and a good one gets as far as the device (in a
 * directory, and as a single file with config.json beside it). */
static void test_model_load_checks_first(void **state)
{
    (void)state;
    static const sj_driver no_driver;
    ssmjit_context *ctx = sj_context_alloc();
    assert_non_null(ctx);
    ctx->drv = &no_driver;
    ctx->cache.mode = SSMJIT_CACHE_OFF;
    sj_model_file_config hf = config(hf_json);
    model m;
    build(&m, &hf, 0, 10, 0);
    char path[4300], good[4200];
    snprintf(good, sizeof good, "%s", write_model("load-good", &m, 0)); /* a static buffer */
    snprintf(path, sizeof path, "%s/config.json", good);
    su_write_text(path, hf_json);
    drop(&m, "backbone.layers.0.mixer.A_log");
    const char *bad = write_model("load-bad", &m, 0);
    snprintf(path, sizeof path, "%s/config.json", bad);
    su_write_text(path, hf_json);
    ssmjit_model *out = (ssmjit_model *)&out;
    su_assert_error(ssmjit_model_load(ctx, bad, NULL, &out), SSMJIT_ERR_INVALID_ARG,
                    "backbone.layers.0.mixer.A_log", "is not in the checkpoint");
    assert_null(out);
    for (int single = 0; single < 2; single++) {
        snprintf(path, sizeof path, "%s%s", good, single ? "/" SJ_CHECKPOINT_FILE : "");
        out = (ssmjit_model *)&out;
        ssmjit_status st = ssmjit_model_load(ctx, path, NULL, &out);
        /* the first device step: cuBLAS, then the context's driver calls */
        if (st != SSMJIT_ERR_CUBLAS_NOT_FOUND && !strstr(ssmjit_last_error(), "cuCtxGetCurrent"))
            fail_msg("%s: %s: %s", path, ssmjit_status_string(st), ssmjit_last_error());
        assert_null(out);
    }
    model ss;
    sj_model_file_config ssc = config(ss_json);
    build(&ss, &ssc, 1, 16, 0);
    const char *layer_norm = write_model("load-layernorm", &ss, 0);
    snprintf(path, sizeof path, "%s/config.json", layer_norm);
    su_write_text(path, ss_json);
    su_assert_error(ssmjit_model_load(ctx, layer_norm, NULL, &out), SSMJIT_ERR_UNSUPPORTED, "LayerNorm",
                    NULL);
    free(ctx);
}

/* The benchmarks' door to the Linear layers' shapes gives a decode step's
 * five in order, at the 130m and 1.4b shapes as their checkpoints hold
 * them, and nothing past them. */
static void test_linear_shapes(void **state)
{
    (void)state;
    static const char *const names[] = {"in_proj", "x_proj", "dt_proj", "out_proj", "lm_head"};
    static const int64_t small[5][2] = {{3072, 768}, {80, 1536}, {1536, 48}, {768, 1536}, {50280, 768}};
    static const int64_t big[5][2] = {{8192, 2048}, {160, 4096}, {4096, 128}, {2048, 4096}, {50280, 2048}};
    ssmjit_model_config c = {.struct_size = sizeof c, .d_model = 768, .d_inner = 1536, .d_state = 16, .d_conv = 4,
                             .dt_rank = 48, .n_layer = 24, .vocab_size = 50280, .tie_embeddings = 1};
    for (int model = 0; model < 2; model++) {
        const int64_t(*want)[2] = model ? big : small;
        if (model)
            c.d_model = 2048, c.d_inner = 4096, c.dt_rank = 128, c.n_layer = 48;
        for (int i = 0; i < 5; i++) {
            const char *name = NULL;
            int64_t n = -1, k = -1;
            assert_int_equal(sj_model_linear_shape(&c, i, &name, &n, &k), 1);
            assert_string_equal(name, names[i]);
            assert_int_equal(n, want[i][0]);
            assert_int_equal(k, want[i][1]);
        }
        const char *name = "untouched";
        int64_t n = -1, k = -1;
        assert_int_equal(sj_model_linear_shape(&c, 5, &name, &n, &k), 0);
        assert_int_equal(sj_model_linear_shape(&c, -1, &name, &n, &k), 0);
        assert_string_equal(name, "untouched");
        assert_int_equal(n, -1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hf_model),     cmocka_unit_test(test_state_spaces_model),
        cmocka_unit_test(test_tied_lm_head), cmocka_unit_test(test_missing_tensors),
        cmocka_unit_test(test_wrong_shapes), cmocka_unit_test(test_config_mismatch),
        cmocka_unit_test(test_tensor_names), cmocka_unit_test(test_model_load_checks_first),
        cmocka_unit_test(test_linear_shapes),
    };
    return cmocka_run_group_tests(tests, su_dir_setup, su_dir_teardown);
}
