/* The weights of the reference model: layout, names, random draws. */
#include "ref_model.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

typedef void slot_fn(const char *name, double **slot, size_t n, void *user);

/* Calls fn on the pointer of every tensor in checkpoint order, so that one
 * walk both lays out the block and names the tensors. */
static void each_slot(ref_mamba *m, slot_fn *fn, void *user)
{
    const ref_mamba_cfg *c = &m->cfg;
    const size_t dm = c->d_model, Di = c->d_inner, N = c->d_state, R = c->dt_rank;
    char name[96];
    fn("backbone.embeddings.weight", &m->embedding, c->vocab * dm, user);
    for (size_t l = 0; l < c->n_layer; l++) {
        ref_mamba_layer *w = &m->layers[l];
        const struct {
            const char *suffix;
            double **slot;
            size_t n;
        } t[] = {
            {"norm.weight", &w->norm_w, dm},
            {"mixer.in_proj.weight", &w->in_proj, 2 * Di * dm},
            {"mixer.conv1d.weight", &w->conv_w, Di * c->d_conv},
            {"mixer.conv1d.bias", &w->conv_b, Di},
            {"mixer.x_proj.weight", &w->x_proj, (R + 2 * N) * Di},
            {"mixer.dt_proj.weight", &w->dt_proj_w, Di * R},
            {"mixer.dt_proj.bias", &w->dt_proj_b, Di},
            {"mixer.A_log", &w->A_log, Di * N},
            {"mixer.D", &w->D, Di},
            {"mixer.out_proj.weight", &w->out_proj, dm * Di},
        };
        for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
            snprintf(name, sizeof name, "backbone.layers.%zu.%s", l, t[i].suffix);
            fn(name, t[i].slot, t[i].n, user);
        }
    }
    fn("backbone.norm_f.weight", &m->norm_f, dm, user);
    if (!c->tied)
        fn("lm_head.weight", &m->lm_head, c->vocab * dm, user);
}

static void count_slot(const char *name, double **slot, size_t n, void *user)
{
    (void)name;
    (void)slot;
    *(size_t *)user += n;
}

/* user: the next free place in the block. */
static void place_slot(const char *name, double **slot, size_t n, void *user)
{
    (void)name;
    double **next = user;
    *slot = *next;
    *next += n;
}

ref_mamba ref_mamba_alloc(const ref_mamba_cfg *cfg)
{
    ref_mamba m = {*cfg, NULL, NULL, NULL,
                   calloc(cfg->n_layer ? cfg->n_layer : 1, sizeof(ref_mamba_layer))};
    assert_non_null(m.layers);
    size_t total = 0;
    each_slot(&m, count_slot, &total);
    double *block = tu_doubles(total);
    memset(block, 0, total * sizeof *block);
    each_slot(&m, place_slot, &block);
    return m;
}

void ref_mamba_free(ref_mamba *m)
{
    free(m->embedding);
    free(m->layers);
    m->embedding = m->norm_f = m->lm_head = NULL;
    m->layers = NULL;
}

struct foreach_call {
    void (*fn)(const char *name, double *w, size_t n, void *user);
    void *user;
};

static void visit_slot(const char *name, double **slot, size_t n, void *user)
{
    const struct foreach_call *call = user;
    call->fn(name, *slot, n, call->user);
}

void ref_mamba_foreach(ref_mamba *m, void (*fn)(const char *name, double *w, size_t n, void *user),
                       void *user)
{
    struct foreach_call call = {fn, user};
    each_slot(m, visit_slot, &call);
}

static void fill_normal(double *x, size_t n, double mean, double sd)
{
    for (size_t i = 0; i < n; i++)
        x[i] = mean + sd * tu_normal();
}

/* PyTorch's default init of a Linear or Conv1d weight. */
static void fill_fan_in(double *x, size_t n, size_t fan_in, double scale)
{
    const double bound = scale / sqrt((double)fan_in);
    tu_fill_uniform(x, n, -bound, bound);
}

ref_mamba ref_mamba_random(const ref_mamba_cfg *cfg)
{
    ref_mamba m = ref_mamba_alloc(cfg);
    const size_t dm = cfg->d_model, Di = cfg->d_inner, N = cfg->d_state, R = cfg->dt_rank,
                 W = cfg->d_conv;
    fill_normal(m.embedding, cfg->vocab * dm, 0.0, 1.0);
    for (size_t l = 0; l < cfg->n_layer; l++) {
        ref_mamba_layer *w = &m.layers[l];
        fill_normal(w->norm_w, dm, 1.0, 0.1);
        fill_fan_in(w->in_proj, 2 * Di * dm, dm, 1.0);
        fill_fan_in(w->conv_w, Di * W, W, 1.0);
        fill_fan_in(w->conv_b, Di, W, 1.0);
        fill_fan_in(w->x_proj, (R + 2 * N) * Di, Di, 1.0);
        fill_fan_in(w->dt_proj_w, Di * R, R, 1.0);
        for (size_t d = 0; d < Di; d++) {
            const double dt = exp(tu_uniform(log(1e-3), log(1e-1)));
            w->dt_proj_b[d] = dt + log(-expm1(-dt));
            for (size_t n = 0; n < N; n++)
                w->A_log[d * N + n] = log((double)(n + 1)) + 0.01 * tu_normal();
        }
        fill_normal(w->D, Di, 1.0, 0.1);
        fill_fan_in(w->out_proj, dm * Di, Di, 1.0 / sqrt((double)cfg->n_layer));
    }
    fill_normal(m.norm_f, dm, 1.0, 0.1);
    if (!cfg->tied)
        fill_fan_in(m.lm_head, cfg->vocab * dm, dm, 1.0);
    return m;
}
