/* config.json in both dialects: real published configs, defaults, and each
 * bad value with a message naming its key. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model_config.h"
#include "st_util.h"
#include "test_util.h"

static sj_model_file_config parse_ok(const char *json)
{
    sj_model_file_config c;
    memset(&c, 0xff, sizeof c);
    ssmjit_status st = sj_model_config_parse(json, strlen(json), "config.json", &c);
    if (st != SSMJIT_OK)
        print_error("%s\n", ssmjit_last_error());
    assert_int_equal(st, SSMJIT_OK);
    return c;
}

static void assert_dims(const sj_model_file_config *c, int64_t d_model, int64_t d_inner, int64_t d_state,
                        int64_t d_conv, int64_t dt_rank, int64_t n_layer, int64_t vocab, int64_t padded)
{
    assert_int_equal(c->d_model, d_model);
    assert_int_equal(c->d_inner, d_inner);
    assert_int_equal(c->d_state, d_state);
    assert_int_equal(c->d_conv, d_conv);
    assert_int_equal(c->dt_rank, dt_rank);
    assert_int_equal(c->n_layer, n_layer);
    assert_int_equal(c->vocab_size, vocab);
    assert_int_equal(c->vocab_padded, padded);
}

static void assert_flags(const sj_model_file_config *c, int rms, int res32, int tie, int conv_bias, int bias)
{
    assert_int_equal(c->rms_norm, rms);
    assert_int_equal(c->residual_in_fp32, res32);
    assert_int_equal(c->tie_embeddings, tie);
    assert_int_equal(c->conv_bias, conv_bias);
    assert_int_equal(c->proj_bias, bias);
}

/* As published with state-spaces/mamba-130m-hf: both dialects' keys. */
static void test_hf_published(void **state)
{
    (void)state;
    sj_model_file_config c = parse_ok(
        "{\"architectures\": [\"MambaForCausalLM\"], \"bos_token_id\": 0, \"conv_kernel\": 4,\n"
        " \"d_inner\": 1536, \"d_model\": 768, \"eos_token_id\": 0, \"expand\": 2,\n"
        " \"fused_add_norm\": true, \"hidden_act\": \"silu\", \"hidden_size\": 768,\n"
        " \"initializer_range\": 0.1, \"intermediate_size\": 1536, \"layer_norm_epsilon\": 1e-05,\n"
        " \"model_type\": \"mamba\", \"n_layer\": 24, \"num_hidden_layers\": 24, \"pad_token_id\": 0,\n"
        " \"pad_vocab_size_multiple\": 8, \"rescale_prenorm_residual\": false, \"residual_in_fp32\": "
        "true,\n"
        " \"rms_norm\": true, \"ssm_cfg\": {}, \"state_size\": 16, \"time_step_floor\": 0.0001,\n"
        " \"time_step_init_scheme\": \"random\", \"time_step_max\": 0.1, \"time_step_min\": 0.001,\n"
        " \"time_step_rank\": 48, \"time_step_scale\": 1.0, \"torch_dtype\": \"float32\",\n"
        " \"transformers_version\": \"4.39.0.dev0\", \"use_bias\": false, \"use_cache\": true,\n"
        " \"use_conv_bias\": true, \"vocab_size\": 50280}");
    assert_dims(&c, 768, 1536, 16, 4, 48, 24, 50280, 50280);
    assert_flags(&c, 1, 1, 1, 1, 0);
    assert_true(c.norm_eps == 1e-5);
}

static void test_hf_defaults(void **state)
{
    (void)state;
    sj_model_file_config c = parse_ok("{\"hidden_size\": 100, \"num_hidden_layers\": 2, \"vocab_size\": 10}");
    assert_dims(&c, 100, 200, 16, 4, 7, 2, 10, 10); /* dt_rank ceil(100 / 16) */
    assert_flags(&c, 1, 1, 1, 1, 0);
    assert_true(c.norm_eps == 1e-5);

    c = parse_ok(
        "{\"hidden_size\": 64, \"num_hidden_layers\": 3, \"vocab_size\": 7, \"expand\": 3,"
        " \"state_size\": 256, \"conv_kernel\": 2, \"time_step_rank\": \"auto\","
        " \"layer_norm_epsilon\": 0.001, \"residual_in_fp32\": false, \"tie_word_embeddings\": false,"
        " \"use_conv_bias\": false, \"use_bias\": true, \"model_type\": \"mamba\"}");
    assert_dims(&c, 64, 192, 256, 2, 4, 3, 7, 7);
    assert_flags(&c, 1, 0, 0, 0, 1);
    assert_true(c.norm_eps == 0.001);

    /* intermediate_size, when given, wins over expand (it is what the saved
     * model was built with). */
    c = parse_ok("{\"hidden_size\": 64, \"num_hidden_layers\": 1, \"vocab_size\": 7, \"expand\": 2,"
                 " \"intermediate_size\": 96, \"time_step_rank\": 5, \"conv_kernel\": 8}");
    assert_dims(&c, 64, 96, 16, 8, 5, 1, 7, 7);
}

/* As published with state-spaces/mamba-130m. */
static void test_state_spaces(void **state)
{
    (void)state;
    sj_model_file_config c =
        parse_ok("{\"d_model\": 768, \"n_layer\": 24, \"vocab_size\": 50277, \"ssm_cfg\": {},"
                 " \"rms_norm\": true, \"residual_in_fp32\": true, \"fused_add_norm\": true,"
                 " \"pad_vocab_size_multiple\": 8}");
    assert_dims(&c, 768, 1536, 16, 4, 48, 24, 50277, 50280);
    assert_flags(&c, 1, 1, 1, 1, 0);
    assert_true(c.norm_eps == 1e-5);

    /* mamba_ssm 2.x writes these too. */
    c = parse_ok(
        "{\"d_model\": 48, \"d_intermediate\": 0, \"n_layer\": 2, \"vocab_size\": 33,"
        " \"ssm_cfg\": {\"layer\": \"Mamba1\", \"d_state\": 8, \"d_conv\": 3, \"expand\": 4,"
        " \"dt_rank\": 6, \"conv_bias\": false, \"bias\": true, \"dt_min\": 0.001},"
        " \"attn_layer_idx\": [], \"attn_cfg\": {}, \"rms_norm\": false, \"residual_in_fp32\": false,"
        " \"fused_add_norm\": true, \"pad_vocab_size_multiple\": 16, \"tie_embeddings\": false}");
    assert_dims(&c, 48, 192, 8, 3, 6, 2, 33, 48);
    assert_flags(&c, 0, 0, 0, 0, 1);

    c = parse_ok("{\"d_model\": 17, \"n_layer\": 1, \"vocab_size\": 16}"); /* no ssm_cfg at all */
    assert_dims(&c, 17, 34, 16, 4, 2, 1, 16, 16);
}

typedef struct {
    const char *json;
    ssmjit_status status;
    const char *message;
} bad_case;

static void test_bad_values(void **state)
{
    (void)state;
#define HF "\"hidden_size\": 64, \"num_hidden_layers\": 2, \"vocab_size\": 10"
#define SS "\"d_model\": 64, \"n_layer\": 2, \"vocab_size\": 10"
    static const bad_case cases[] = {
        {"{\"num_hidden_layers\": 2}", SSMJIT_ERR_INVALID_ARG,
         "'config.json' has neither \"hidden_size\" (Hugging Face) nor \"d_model\" (state-spaces)"},
        {"[]", SSMJIT_ERR_INVALID_ARG, "'config.json' is an array, not an object"},
        {"{\"hidden_size\": 64,}", SSMJIT_ERR_INVALID_ARG, "'config.json': invalid JSON at byte 19"},
        {"{\"hidden_size\": 64, \"vocab_size\": 10}", SSMJIT_ERR_INVALID_ARG,
         "'config.json': \"num_hidden_layers\" is missing"},
        {"{\"hidden_size\": 64, \"num_hidden_layers\": 2}", SSMJIT_ERR_INVALID_ARG,
         "\"vocab_size\" is missing"},
        {"{\"hidden_size\": 0, \"num_hidden_layers\": 2, \"vocab_size\": 10}", SSMJIT_ERR_INVALID_ARG,
         "'config.json': \"hidden_size\" is 0, outside 1..65536"},
        {"{\"hidden_size\": -8, \"num_hidden_layers\": 2, \"vocab_size\": 10}", SSMJIT_ERR_INVALID_ARG,
         "\"hidden_size\" is -8, outside"},
        {"{\"hidden_size\": 65537, \"num_hidden_layers\": 2, \"vocab_size\": 10}",
         SSMJIT_ERR_INVALID_ARG, "\"hidden_size\" is 65537, outside 1..65536"},
        {"{\"hidden_size\": 64.0, \"num_hidden_layers\": 2, \"vocab_size\": 10}", SSMJIT_ERR_INVALID_ARG,
         "\"hidden_size\" must be an integer, not a number"},
        {"{\"hidden_size\": \"64\", \"num_hidden_layers\": 2, \"vocab_size\": 10}",
         SSMJIT_ERR_INVALID_ARG, "\"hidden_size\" must be an integer, not a string"},
        {"{" HF ", \"num_hidden_layers\": 0}", SSMJIT_ERR_INVALID_ARG,
         "duplicate key \"num_hidden_layers\""},
        {"{\"hidden_size\": 64, \"num_hidden_layers\": 1025, \"vocab_size\": 10}",
         SSMJIT_ERR_INVALID_ARG, "\"num_hidden_layers\" is 1025, outside 1..1024"},
        {"{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"vocab_size\": 16777217}",
         SSMJIT_ERR_INVALID_ARG, "\"vocab_size\" is 16777217, outside 1..16777216"},
        {"{" HF ", \"state_size\": 257}", SSMJIT_ERR_INVALID_ARG,
         "\"state_size\" is 257, outside 1..256"},
        {"{" HF ", \"state_size\": 0}", SSMJIT_ERR_INVALID_ARG, "\"state_size\" is 0"},
        {"{" HF ", \"conv_kernel\": 1}", SSMJIT_ERR_INVALID_ARG, "\"conv_kernel\" is 1, outside 2..8"},
        {"{" HF ", \"conv_kernel\": 9}", SSMJIT_ERR_INVALID_ARG, "\"conv_kernel\" is 9, outside 2..8"},
        {"{" HF ", \"expand\": 0}", SSMJIT_ERR_INVALID_ARG, "\"expand\" is 0, outside 1..16"},
        {"{" HF ", \"expand\": 1.5}", SSMJIT_ERR_INVALID_ARG, "\"expand\" must be an integer"},
        {"{" HF ", \"intermediate_size\": 0}", SSMJIT_ERR_INVALID_ARG, "\"intermediate_size\" is 0"},
        {"{" HF ", \"time_step_rank\": \"big\"}", SSMJIT_ERR_INVALID_ARG,
         "\"time_step_rank\" is \"big\", not an integer or \"auto\""},
        {"{" HF ", \"time_step_rank\": 0}", SSMJIT_ERR_INVALID_ARG,
         "\"time_step_rank\" is 0, outside 1..65536"},
        {"{" HF ", \"time_step_rank\": null}", SSMJIT_ERR_INVALID_ARG,
         "\"time_step_rank\" must be an integer, not null"},
        {"{" HF ", \"layer_norm_epsilon\": 0}", SSMJIT_ERR_INVALID_ARG,
         "\"layer_norm_epsilon\" is 0, outside (0, 1)"},
        {"{" HF ", \"layer_norm_epsilon\": -1e-5}", SSMJIT_ERR_INVALID_ARG,
         "\"layer_norm_epsilon\" is -1e-05"},
        {"{" HF ", \"layer_norm_epsilon\": 1}", SSMJIT_ERR_INVALID_ARG,
         "\"layer_norm_epsilon\" is 1, outside"},
        {"{" HF ", \"layer_norm_epsilon\": \"1e-5\"}", SSMJIT_ERR_INVALID_ARG,
         "\"layer_norm_epsilon\" must be a number, not a string"},
        {"{" HF ", \"use_bias\": 0}", SSMJIT_ERR_INVALID_ARG,
         "\"use_bias\" must be true or false, not a number"},
        {"{" HF ", \"use_conv_bias\": \"true\"}", SSMJIT_ERR_INVALID_ARG,
         "\"use_conv_bias\" must be true or false"},
        {"{" HF ", \"tie_word_embeddings\": null}", SSMJIT_ERR_INVALID_ARG,
         "\"tie_word_embeddings\" must be true or false, not null"},
        {"{" HF ", \"residual_in_fp32\": 1}", SSMJIT_ERR_INVALID_ARG,
         "\"residual_in_fp32\" must be true or false"},
        {"{" HF ", \"d_model\": 65}", SSMJIT_ERR_INVALID_ARG,
         "'config.json': \"d_model\" disagrees with \"hidden_size\" (64)"},
        {"{" HF ", \"n_layer\": 3}", SSMJIT_ERR_INVALID_ARG,
         "\"n_layer\" disagrees with \"num_hidden_layers\" (2)"},
        {"{" HF ", \"n_layer\": \"2\"}", SSMJIT_ERR_INVALID_ARG, "\"n_layer\" disagrees"},
        {"{" HF ", \"model_type\": \"mamba2\"}", SSMJIT_ERR_UNSUPPORTED,
         "'config.json': model_type \"mamba2\" is not Mamba-1 (\"mamba\")"},
        {"{" HF ", \"model_type\": \"falcon_mamba\"}", SSMJIT_ERR_UNSUPPORTED,
         "model_type \"falcon_mamba\""},
        {"{" HF ", \"model_type\": 1}", SSMJIT_ERR_INVALID_ARG,
         "\"model_type\" must be a string, not a number"},
        /* state-spaces */
        {"{\"d_model\": 64, \"vocab_size\": 10}", SSMJIT_ERR_INVALID_ARG, "\"n_layer\" is missing"},
        {"{" SS ", \"ssm_cfg\": {\"d_state\": 0}}", SSMJIT_ERR_INVALID_ARG,
         "'config.json': \"ssm_cfg.d_state\" is 0, outside 1..256"},
        {"{" SS ", \"ssm_cfg\": {\"d_conv\": 10}}", SSMJIT_ERR_INVALID_ARG,
         "\"ssm_cfg.d_conv\" is 10, outside 2..8"},
        {"{" SS ", \"ssm_cfg\": {\"expand\": 17}}", SSMJIT_ERR_INVALID_ARG, "\"ssm_cfg.expand\" is 17"},
        {"{" SS ", \"ssm_cfg\": {\"dt_rank\": \"x\"}}", SSMJIT_ERR_INVALID_ARG,
         "\"ssm_cfg.dt_rank\" is \"x\", not an integer or \"auto\""},
        {"{" SS ", \"ssm_cfg\": {\"bias\": 1}}", SSMJIT_ERR_INVALID_ARG,
         "\"ssm_cfg.bias\" must be true or false"},
        {"{" SS ", \"ssm_cfg\": {\"conv_bias\": null}}", SSMJIT_ERR_INVALID_ARG,
         "\"ssm_cfg.conv_bias\""},
        {"{" SS ", \"ssm_cfg\": []}", SSMJIT_ERR_INVALID_ARG,
         "\"ssm_cfg\" must be an object, not an array"},
        {"{" SS ", \"ssm_cfg\": {\"layer\": \"Mamba2\"}}", SSMJIT_ERR_UNSUPPORTED,
         "\"ssm_cfg.layer\" is \"Mamba2\", only \"Mamba1\" is supported"},
        {"{" SS ", \"ssm_cfg\": {\"layer\": 1}}", SSMJIT_ERR_INVALID_ARG,
         "\"ssm_cfg.layer\" must be a string, not a number"},
        {"{" SS ", \"d_intermediate\": 128}", SSMJIT_ERR_UNSUPPORTED,
         "\"d_intermediate\" 128 asks for MLP layers"},
        {"{" SS ", \"d_intermediate\": -1}", SSMJIT_ERR_INVALID_ARG, "\"d_intermediate\" is -1"},
        {"{" SS ", \"attn_layer_idx\": [1]}", SSMJIT_ERR_UNSUPPORTED,
         "\"attn_layer_idx\" asks for attention layers"},
        {"{" SS ", \"attn_layer_idx\": 1}", SSMJIT_ERR_INVALID_ARG,
         "\"attn_layer_idx\" must be an array"},
        {"{" SS ", \"pad_vocab_size_multiple\": 0}", SSMJIT_ERR_INVALID_ARG,
         "\"pad_vocab_size_multiple\" is 0, outside"},
        {"{" SS ", \"rms_norm\": \"yes\"}", SSMJIT_ERR_INVALID_ARG,
         "\"rms_norm\" must be true or false"},
        {"{" SS ", \"tie_embeddings\": 1}", SSMJIT_ERR_INVALID_ARG,
         "\"tie_embeddings\" must be true or false"},
        {"{\"d_model\": 100000, \"n_layer\": 2, \"vocab_size\": 10}", SSMJIT_ERR_INVALID_ARG,
         "\"d_model\" is 100000, outside 1..65536"},
    };
#undef HF
#undef SS
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        sj_model_file_config c;
        ssmjit_status st =
            sj_model_config_parse(cases[i].json, strlen(cases[i].json), "config.json", &c);
        const char *msg = ssmjit_last_error();
        if (st != cases[i].status || !strstr(msg, cases[i].message))
            print_error("case %zu: status %d, message '%s', wanted %d '%s'\n", i, st, msg,
                        cases[i].status, cases[i].message);
        assert_int_equal(st, cases[i].status);
        assert_non_null(strstr(msg, cases[i].message));
    }
}

static void test_load_file(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), path[4200], link[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    snprintf(link, sizeof link, "%s/linked.json", dir);
    su_write_text(path, "{\"d_model\": 32, \"n_layer\": 4, \"vocab_size\": 50}");
    sj_model_file_config c;
    assert_int_equal(sj_model_config_load(path, &c), SSMJIT_OK);
    assert_dims(&c, 32, 64, 16, 4, 2, 4, 50, 56);

    assert_int_equal(symlink(path, link), 0); /* followed, as in the hub cache */
    memset(&c, 0, sizeof c);
    assert_int_equal(sj_model_config_load(link, &c), SSMJIT_OK);
    assert_dims(&c, 32, 64, 16, 4, 2, 4, 50, 56);
    unlink(path);
    assert_int_equal(sj_model_config_load(link, &c), SSMJIT_ERR_IO);
    assert_non_null(strstr(ssmjit_last_error(), "linked.json"));
    assert_int_equal(sj_model_config_load(path, &c), SSMJIT_ERR_IO);
    assert_non_null(strstr(ssmjit_last_error(), "cannot open"));

    su_write_text(path, "{\"d_model\": 32, \"n_layer\": 4}");
    assert_int_equal(sj_model_config_load(path, &c), SSMJIT_ERR_INVALID_ARG);
    assert_non_null(strstr(ssmjit_last_error(), "config.json': \"vocab_size\" is missing"));
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hf_published), cmocka_unit_test(test_hf_defaults),
        cmocka_unit_test(test_state_spaces), cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_load_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
