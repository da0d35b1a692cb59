/* The decode step's fused and hybrid paths: kernels_src/decode.cu
 * compiled with the model's sizes as constants.  Fused: three kernels a
 * layer and one for the final norm with the LM head, in place of the
 * unfused step's seven a layer (four of them GEMMs).  Hybrid, at larger
 * batches: in_proj and out_proj each reading a weight once for every
 * sequence (on tensor cores for 16-bit models where they fit, else
 * through cuBLAS), four kernels a layer with the norm where in_proj's
 * kernel takes the conv step and x_proj's part (decode_tcx), else five.
 * Taken where the rule below says so; the unfused path (model_step.c)
 * serves the rest. */
#include <stdio.h>

#include "base/error.h"
#include "model.h"
#include "io/dtype_convert.h"

/* Host mirror of struct sj_decode_args in kernels_src/decode.cu. */
typedef struct sj_decode_args {
    const void *x;
    const int32_t *ids;
    const void *res_in;
    void *res_out;
    const float *norm_w;
    const void *w_in;
    const float *conv_w, *conv_b;
    float *conv_state;
    void *xc, *z;
    const void *w_x;
    float *xpart;
    const void *w_dt;
    const float *dt_bias, *A_log, *Dv;
    float *ssm_state;
    void *y;
    const void *w_out;
    void *out;
    int32_t *next_ids;
    void *pick;
    uint32_t *picked;
    int64_t batch;
    float eps;
    int32_t xparts;
} sj_decode_args;
_Static_assert(sizeof(sj_decode_args) == 26 * 8, "kernel layout in kernels_src/decode.cu");

static const char *const parts[SJ_DECODE_KERNELS] = {"in",   "mix",  "out", "head", "convx",
                                                      "norm", "mix1", "tcx", "tcin", "tcout"};

/* The floats of one sequence's activations the kernels can stage. */
#define STAGE_FLOATS (SJ_DECODE_STAGE_BYTES / 4)

/* Whether the rule can take the fused path for a model of config c. */
static int rule_sizes(const ssmjit_model_config *c)
{
    return c->d_model <= SJ_DECODE_FUSED_MAX_D_MODEL && c->d_inner <= STAGE_FLOATS;
}

int sj_model_decode_path(const ssmjit_model *m, int64_t batch)
{
    if (m->decode_force >= 0)
        return m->decode_force;
    const ssmjit_model_config *c = &m->cfg;
    if (!rule_sizes(c))
        return SJ_DECODE_UNFUSED;
    if (batch > SJ_DECODE_FUSED_MAX_BATCH)
        return batch <= SJ_DECODE_HYBRID_MAX_BATCH ? SJ_DECODE_HYBRID : SJ_DECODE_UNFUSED;
    if (sj_model_head_tensor(m)->shape[0] != c->vocab_size)
        return SJ_DECODE_UNFUSED;
    /* the kernels read the matrices in 16-byte pieces */
    static const sj_model_layer_slot mats[] = {SJ_L_IN_PROJ, SJ_L_X_PROJ, SJ_L_DT_PROJ, SJ_L_OUT_PROJ};
    for (int64_t l = 0; l < c->n_layer; l++)
        for (size_t i = 0; i < sizeof mats / sizeof *mats; i++)
            if (sj_model_layer_tensor(m, l, mats[i])->data % 16)
                return SJ_DECODE_UNFUSED;
    return sj_model_head_tensor(m)->data % 16 == 0 ? SJ_DECODE_FUSED : SJ_DECODE_UNFUSED;
}

ssmjit_status sj_model_decode_force(ssmjit_model *m, int path)
{
    if (path < -1 || path > SJ_DECODE_HYBRID)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "decode path %d is not -1, 0, 1 or 2", path);
    if (path >= SJ_DECODE_FUSED && (m->cfg.d_model > STAGE_FLOATS || m->cfg.d_inner > STAGE_FLOATS))
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "the fused and hybrid decode take d_model and d_inner up to %d",
                        STAGE_FLOATS);
    if (path != m->decode_force)
        sj_model_drop_graph(m);
    m->decode_force = path;
    return SSMJIT_OK;
}

/* A tensor-core kernel's block (decode.cu's dec_tc): mt m-tiles of 16
 * sequences, nt 8-row tiles of W, its shared memory; mt 0 where the
 * kernel is not taken.  The host chooses it, and hands it to the kernels
 * as the define SJ_DEC_TC, which holds their layout to it. */
typedef struct tc_block {
    int64_t mt, nt, bytes;
} tc_block;

/* decode.cu's dec_tc_bytes: a block's shared memory over 16 mt sequences
 * and 8 nt rows of W, rows of `row` bytes (then the warps' float4 sums of
 * them, where those take more), and its epilogue's, seq_extra bytes a
 * sequence and extra in all. */
static int64_t tc_bytes(int64_t mt, int64_t nt, int64_t row, int64_t seq_extra, int64_t extra)
{
    return sj_max64((16 * mt + 8 * nt) * row, SJ_DECODE_TC_THREADS * nt * 16) + 16 * mt * seq_extra + extra;
}

/* The block for [*, k] x [n, k]^T (k a multiple of 8) with an epilogue
 * staging seq_extra bytes a sequence and extra in all, its rows held
 * whole in shared memory, each a whole number of 128-byte lines: the most
 * sequences (4, 2 or 1 m-tiles) that fit `budget` bytes beside nt_fixed
 * tiles of W (one where nt_fixed is 0), then nt_fixed tiles, or as many
 * as fit up to SJ_DECODE_TC_NT_MAX and W's rows: fewer tiles a block mean
 * more blocks, each reading every sequence's row. */
static tc_block tc_plan(int64_t k, int64_t n, int64_t nt_fixed, int64_t seq_extra, int64_t extra, int64_t budget)
{
    const int64_t row = ((sj_ceil_div(k, 32) * 4 + 7) & ~(int64_t)7) * 16, least = nt_fixed ? nt_fixed : 1;
    int64_t mt = 4;
    while (mt > 1 && tc_bytes(mt, least, row, seq_extra, extra) > budget)
        mt /= 2;
    const int64_t fit = ((budget - extra - 16 * mt * seq_extra) / row - 16 * mt) / 8;
    const int64_t nt = nt_fixed ? nt_fixed
                                : sj_min64(sj_min64(SJ_DECODE_TC_NT_MAX, sj_ceil_div(n, 8)), fit < 1 ? 1 : fit);
    const int64_t bytes = tc_bytes(mt, nt, row, seq_extra, extra);
    return bytes <= budget ? (tc_block){mt, nt, bytes} : (tc_block){0, 0, 0};
}

/* decode_tcx's, decode_tcin's and decode_tcout's blocks for a model of
 * config c on ctx's device (decode.cu's TC_PLAN_X, _IN, _OUT), where its
 * sizes let them run: k a multiple of 8 (and for decode_tcx, d_inner,
 * whose x_proj columns it reads in 16-byte pieces), a block within
 * SJ_DECODE_TC_SMEM_MAX and what the device lets a block have.
 * decode_tcx's epilogue stages a sequence's conv states and xc tile
 * (decode.cu's TCX_SEQ_EXTRA), and x_proj's columns (rows rounded up to
 * 8, 128 bytes each), the conv weights and the bias (TCX_EXTRA); its
 * block is one part's channels. */
static void tc_plans(const ssmjit_context *ctx, const ssmjit_model_config *c, tc_block out[3])
{
    const int64_t dm = c->d_model, di = c->d_inner, ch = SJ_DECODE_CONVX_CHANNELS;
    const int64_t dbl8 = (c->dt_rank + 2 * c->d_state + 7) & ~(int64_t)7;
    const int64_t budget = sj_min64(SJ_DECODE_TC_SMEM_MAX, sj_context_props(ctx)->max_smem_per_block_optin);
    const tc_block none = {0, 0, 0};
    out[0] = dm % 8 == 0 && di % 8 == 0 ? tc_plan(dm, 2 * di, ch / 8, ch * c->d_conv * 4 + 128,
                                                  dbl8 * 128 + ch * c->d_conv * 4 + ch * 4, budget)
                                        : none;
    out[1] = dm % 8 == 0 ? tc_plan(dm, 2 * di, 0, 0, 0, budget) : none;
    out[2] = di % 8 == 0 ? tc_plan(di, dm, 0, 0, 0, budget) : none;
}

/* The specialised kernels of a model of config c in dtype: their names
 * (the first `count` of parts[]: the tensor-core products are 16-bit
 * only), and the defines that specialise them. */
#define NUM_DEFINES 8
typedef struct decode_units {
    char text[NUM_DEFINES][96], names[SJ_DECODE_KERNELS][32];
    const char *defines[NUM_DEFINES], *name_list[SJ_DECODE_KERNELS];
    size_t count;
} decode_units;

/* The specialised kernels a model in dtype has: the first of m->decode,
 * all but the tensor-core products (16-bit only) for f32. */
static size_t kernel_count(ssmjit_dtype dtype)
{
    return SJ_DECODE_KERNELS - (dtype == SSMJIT_F32 ? SJ_DECODE_TC_KERNELS : 0);
}

static void units_of(const ssmjit_context *ctx, const ssmjit_model_config *c, ssmjit_dtype dtype,
                     decode_units *u)
{
    snprintf(u->text[0], sizeof u->text[0], "SJ_DEC_D_MODEL=%lld", (long long)c->d_model);
    snprintf(u->text[1], sizeof u->text[1], "SJ_DEC_D_INNER=%lld", (long long)c->d_inner);
    snprintf(u->text[2], sizeof u->text[2], "SJ_DEC_DT_RANK=%lld", (long long)c->dt_rank);
    snprintf(u->text[3], sizeof u->text[3], "SJ_DEC_D_STATE=%lld", (long long)c->d_state);
    snprintf(u->text[4], sizeof u->text[4], "SJ_DEC_D_CONV=%lld", (long long)c->d_conv);
    snprintf(u->text[5], sizeof u->text[5], "SJ_DEC_VOCAB=%lld", (long long)c->vocab_size);
    snprintf(u->text[6], sizeof u->text[6], "SJ_DEC_RES_F32=%d", c->residual_in_fp32 || dtype == SSMJIT_F32);
    tc_block tc[3];
    tc_plans(ctx, c, tc);
    snprintf(u->text[7], sizeof u->text[7], "SJ_DEC_TC=%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld",
             (long long)tc[0].mt, (long long)tc[0].nt, (long long)tc[0].bytes, (long long)tc[1].mt,
             (long long)tc[1].nt, (long long)tc[1].bytes, (long long)tc[2].mt, (long long)tc[2].nt,
             (long long)tc[2].bytes);
    for (int i = 0; i < NUM_DEFINES; i++)
        u->defines[i] = u->text[i];
    u->count = kernel_count(dtype);
    for (size_t i = 0; i < u->count; i++) {
        snprintf(u->names[i], sizeof u->names[i], "decode_%s_%s", parts[i], sj_dtype_suffix(dtype));
        u->name_list[i] = u->names[i];
    }
}

ssmjit_status sj_model_decode_prepare(ssmjit_context *ctx, const ssmjit_model_config *c, ssmjit_dtype dtype)
{
    if (!rule_sizes(c))
        return SSMJIT_OK;
    decode_units u;
    units_of(ctx, c, dtype, &u);
    return sj_special_request(ctx, SJ_MODULE_DECODE, SJ_ROLE_FORWARD, u.name_list, u.count, u.defines,
                              NUM_DEFINES);
}

/* What each path launches of m->decode, as bits of its indices, besides
 * the mix kernel its batch takes (sj_model_decode_mix_plan): a step waits
 * only for its own kernels' compiles. */
#define FUSED_KERNELS (1u << SJ_DECODE_IN | 1u << SJ_DECODE_OUT | 1u << SJ_DECODE_HEAD)
#define HYBRID_KERNELS                                                                                      \
    (1u << SJ_DECODE_CONVX | 1u << SJ_DECODE_NORM | 1u << SJ_DECODE_TCX |                                   \
     1u << SJ_DECODE_TCIN | 1u << SJ_DECODE_TCOUT)

/* The kernels of `want` for this model's sizes and dtype not loaded yet
 * (a 16-bit model's tensor-core products only), compiled side by side (or
 * read from the cache) on first use, unless the model's load queued
 * them, and loaded. */
static ssmjit_status load(ssmjit_model *m, unsigned want)
{
    /* every launch of a step's first run asks: most find nothing missing */
    unsigned missing = 0;
    for (size_t i = 0; i < kernel_count(m->dtype); i++)
        if (want >> i & 1u && !m->decode[i].fn)
            missing |= 1u << i;
    if (!missing)
        return SSMJIT_OK;
    const char *names[SJ_DECODE_KERNELS];
    int index[SJ_DECODE_KERNELS];
    size_t n = 0;
    decode_units u;
    units_of(m->ctx, &m->cfg, m->dtype, &u);
    for (size_t i = 0; i < u.count; i++)
        if (missing >> i & 1u) {
            names[n] = u.name_list[i];
            index[n++] = (int)i;
        }
    sj_special_kernel k[SJ_DECODE_KERNELS];
    SJ_TRY(sj_special_load(m->ctx, SJ_MODULE_DECODE, SJ_ROLE_FORWARD, names, n, u.defines, NUM_DEFINES, k));
    for (size_t i = 0; i < n; i++)
        m->decode[index[i]] = k[i];
    return SSMJIT_OK;
}

/* Blocks of SJ_DECODE_WARPS warps for a product with `rows` outputs: a
 * row a warp where the blocks an SM holds at once reach them all, else
 * each warp takes several (a second wave of blocks would stage the
 * activations again). */
static sj_dim3 matvec_grid(const ssmjit_model *m, int64_t rows)
{
    int64_t blocks = sj_min64(sj_ceil_div(rows, SJ_DECODE_WARPS),
                              SJ_DECODE_BLOCKS_PER_SM * (int64_t)sj_context_props(m->ctx)->sm_count);
    return (sj_dim3){(unsigned)blocks, 1, 1};
}

/* decode_in's blocks with x rows: warp w takes rows w, w + warps, ... of
 * in_proj's 2 d_inner, so the blocks whose first row is below d_inner. */
int64_t sj_model_decode_xparts(const ssmjit_model *m)
{
    const ssmjit_model_config *c = &m->cfg;
    return sj_min64(matvec_grid(m, 2 * c->d_inner).x, sj_ceil_div(c->d_inner, SJ_DECODE_WARPS));
}

int64_t sj_model_decode_head_blocks(const ssmjit_model *m)
{
    return matvec_grid(m, m->cfg.vocab_size).x;
}

/* A part's row: x_proj's dt_rank + 2 d_state sums, padded to float4s
 * (DBLP in decode.cu). */
int64_t sj_model_decode_part_floats(const ssmjit_model_config *c)
{
    return (c->dt_rank + 2 * c->d_state + 3) & ~(int64_t)3;
}

void sj_model_decode_skip(ssmjit_model *m, unsigned parts)
{
    if (parts != m->decode_skip)
        sj_model_drop_graph(m);
    m->decode_skip = parts;
}

int sj_model_decode_skipped(const ssmjit_model *m, sj_decode_part part)
{
    return m->decode_skip >> part & 1u;
}

/* Each kernel of the chain may start while the one before runs: the
 * kernels wait for it before they touch activations or states.  A
 * step's first kernel (layer 0's decode_in or decode_norm, the one given
 * the ids) is launched plainly, after all that came before it, so that
 * the chain's loads ahead of a wait (weights, a layer's states) never
 * meet writes of the caller's earlier work (decode.cu says why they may
 * be read early). */
static ssmjit_status launch_kernel(ssmjit_model *m, int kernel, sj_dim3 grid, unsigned smem, sj_decode_args *a,
                                   void *stream)
{
    static const unsigned threads[SJ_DECODE_KERNELS] = {
        [SJ_DECODE_IN] = 32 * SJ_DECODE_WARPS,          [SJ_DECODE_MIX] = SJ_DECODE_MIX_THREADS,
        [SJ_DECODE_OUT] = 32 * SJ_DECODE_WARPS,         [SJ_DECODE_HEAD] = 32 * SJ_DECODE_WARPS,
        [SJ_DECODE_CONVX] = SJ_DECODE_CONVX_THREADS,    [SJ_DECODE_NORM] = 32 * SJ_DECODE_WARPS,
        [SJ_DECODE_TCX] = SJ_DECODE_TC_THREADS,         [SJ_DECODE_TCIN] = SJ_DECODE_TC_THREADS,
        [SJ_DECODE_MIX1] = SJ_DECODE_MIX_THREADS,       [SJ_DECODE_TCOUT] = SJ_DECODE_TC_THREADS,
    };
    void *args[] = {a};
    const sj_dim3 block = {threads[kernel], 1, 1};
    if (a->ids && (kernel == SJ_DECODE_IN || kernel == SJ_DECODE_NORM))
        return sj_launch(m->ctx, m->decode[kernel].fn, grid, block, smem, stream, args);
    return sj_launch_chained(m->ctx, m->decode[kernel].fn, grid, block, smem, stream, args);
}

/* A fused step's kernel, unless the benchmark leaves its part out: the
 * part's own index, but decode_mix1's part is the mix part. */
static ssmjit_status launch(ssmjit_model *m, int kernel, sj_dim3 grid, sj_decode_args *a, void *stream)
{
    const sj_decode_part part = kernel == SJ_DECODE_MIX1 ? SJ_DECODE_MIX : (sj_decode_part)kernel;
    return sj_model_decode_skipped(m, part) ? SSMJIT_OK : launch_kernel(m, kernel, grid, 0, a, stream);
}

int sj_model_decode_mix_plan(const ssmjit_model_config *c, int64_t sms, int64_t B, sj_dim3 *grid)
{
    /* the states' lanes: 4 a channel where decode.cu's MIX_G is 4 (N = 16) */
    const int64_t n = c->d_state, g = n % 4 == 0 && ((n / 4) & (n / 4 - 1)) == 0 && n / 4 <= 32 ? n / 4 : 1;
    const int64_t cols = sj_ceil_div(c->d_inner * g, SJ_DECODE_MIX_THREADS);
    int64_t seqs = 1;
    while (seqs < SJ_DECODE_MIX_SEQS && sj_ceil_div(B, seqs) * cols > sms * SJ_DECODE_MIX_BLOCKS_PER_SM)
        seqs++;
    /* the kernel's rows take the sequences in turn past 65535 */
    *grid = (sj_dim3){(unsigned)cols, (unsigned)sj_min64(sj_ceil_div(B, seqs), 65535), 1};
    return seqs == 1 ? SJ_DECODE_MIX1 : SJ_DECODE_MIX;
}

int64_t sj_model_decode_convx_blocks(const ssmjit_model_config *c)
{
    return sj_ceil_div(c->d_inner, SJ_DECODE_CONVX_CHANNELS);
}

void sj_model_decode_tensor_cores(ssmjit_model *m, int on)
{
    const int cublas = !on;
    if (cublas != m->decode_cublas)
        sj_model_drop_graph(m);
    m->decode_cublas = cublas;
}

/* The launch of tensor-core kernel `kernel` (plan `which` of tc_plans)
 * for W on B rows of x, if it can take them: a 16-bit model on sm_80 on
 * that the plan has a block for, W and x 16-byte aligned. */
static int tc_launch(const ssmjit_model *m, int kernel, int which, const sj_model_tensor *w, int64_t B,
                     const void *x, sj_dim3 *grid, unsigned *smem)
{
    const sj_device_props *p = sj_context_props(m->ctx);
    tc_block tc[3];
    tc_plans(m->ctx, &m->cfg, tc);
    const tc_block t = tc[which];
    if (m->decode_cublas || !m->decode[kernel].fn || p->cc_major < 8 || !t.mt || w->data % 16 ||
        (uintptr_t)x % 16 || sj_ceil_div(B, 16 * t.mt) > 65535)
        return 0;
    *grid = (sj_dim3){(unsigned)sj_ceil_div(w->shape[0], 8 * t.nt), (unsigned)sj_ceil_div(B, 16 * t.mt), 1};
    *smem = (unsigned)t.bytes;
    return 1;
}

/* Layer l's in_proj (SJ_L_IN_PROJ) or out_proj (SJ_L_OUT_PROJ) of B rows
 * of x into y: decode_tcin or decode_tcout where they can take it, else
 * cuBLAS. */
static ssmjit_status hybrid_product(ssmjit_model *m, int64_t l, sj_model_layer_slot slot, int64_t B, const void *x,
                                    void *y, void *stream)
{
    const sj_model_tensor *w = sj_model_layer_tensor(m, l, slot);
    const int kernel = slot == SJ_L_IN_PROJ ? SJ_DECODE_TCIN : SJ_DECODE_TCOUT;
    sj_dim3 grid;
    unsigned smem;
    if (!tc_launch(m, kernel, slot == SJ_L_IN_PROJ ? 1 : 2, w, B, x, &grid, &smem))
        return sj_model_linear(m, w, B, x, w->shape[1], y, w->shape[0], stream);
    sj_decode_args d = {.batch = B, .out = y};
    if (slot == SJ_L_IN_PROJ) {
        d.x = x;
        d.w_in = (const void *)(uintptr_t)w->data;
    } else {
        d.y = (void *)(uintptr_t)x;
        d.w_out = (const void *)(uintptr_t)w->data;
    }
    return launch_kernel(m, kernel, grid, smem, &d, stream);
}

/* A hybrid layer's in_proj with the conv step and x_proj's parts in one
 * kernel, where decode_tcx takes it (x_proj's columns 16-byte aligned
 * too); else in_proj into xz, then decode_convx. */
static ssmjit_status hybrid_in(ssmjit_model *m, int64_t l, sj_decode_args *d, void *normed, void *xz, void *stream)
{
    const int64_t B = d->batch;
    d->x = normed;
    sj_dim3 grid;
    unsigned smem;
    if ((uintptr_t)d->w_x % 16 == 0 &&
        tc_launch(m, SJ_DECODE_TCX, 0, sj_model_layer_tensor(m, l, SJ_L_IN_PROJ), B, normed, &grid, &smem))
        return launch_kernel(m, SJ_DECODE_TCX, grid, smem, d, stream);
    SJ_TRY(hybrid_product(m, l, SJ_L_IN_PROJ, B, normed, xz, stream));
    d->x = xz;
    const sj_dim3 convx = {(unsigned)d->xparts, (unsigned)sj_min64(sj_ceil_div(B, SJ_DECODE_CONVX_SEQS), 65535), 1};
    return launch_kernel(m, SJ_DECODE_CONVX, convx, 0, d, stream);
}

ssmjit_status sj_model_decode_hybrid_layer(ssmjit_model *m, const ssmjit_model_step_args *a,
                                           const sj_model_step_ws *ws, int64_t l, const void *ids_dev, void *stream)
{
    const ssmjit_model_config *c = &m->cfg;
    const int64_t B = a->batch, di = c->d_inner;
    sj_dim3 mix;
    const int mix_kernel = sj_model_decode_mix_plan(c, sj_context_props(m->ctx)->sm_count, B, &mix);
    SJ_TRY(load(m, HYBRID_KERNELS | 1u << mix_kernel));
    void *base = a->workspace, *x = sj_model_ws_at(base, ws->x), *resid = sj_model_ws_at(base, ws->resid),
         *normed = sj_model_ws_at(base, ws->normed), *y = sj_model_ws_at(base, ws->y);
    /* layer 0 reads its tokens' rows of the embedding table itself */
    sj_decode_args d = {
        .x = l ? x : (const void *)(uintptr_t)m->t[SJ_G_EMBEDDING].data, .ids = l ? NULL : ids_dev,
        .res_in = l ? resid : NULL, .res_out = resid, .norm_w = sj_model_weight(m, l, SJ_L_NORM),
        .w_in = sj_model_weight(m, l, SJ_L_IN_PROJ), .conv_w = sj_model_weight(m, l, SJ_L_CONV),
        .conv_b = sj_model_weight(m, l, SJ_L_CONV_BIAS), .conv_state = (float *)a->conv_state + l * B * di * c->d_conv,
        .xc = sj_model_ws_at(base, ws->xc),
        .z = sj_model_ws_at(base, ws->dt), /* z [B, di], where the unfused step keeps dt */
        .w_x = sj_model_weight(m, l, SJ_L_X_PROJ), .xpart = sj_model_ws_at(base, ws->xpart),
        .w_dt = sj_model_weight(m, l, SJ_L_DT_PROJ), .dt_bias = sj_model_weight(m, l, SJ_L_DT_BIAS),
        .A_log = sj_model_weight(m, l, SJ_L_A_LOG), .Dv = sj_model_weight(m, l, SJ_L_D),
        .ssm_state = (float *)a->ssm_state + l * B * di * c->d_state, .y = y, .out = normed, .batch = B,
        .eps = (float)c->norm_eps, .xparts = (int32_t)sj_model_decode_convx_blocks(c),
    };
    /* the norm: x + the residual into the residual, its RMSNorm into
     * normed, two sequences a block where d_model lets decode.cu's
     * dec_batch stage two (its blocks loop over what the grid leaves) */
    if (!sj_model_decode_skipped(m, SJ_DECODE_LAYER_NORM))
        SJ_TRY(launch_kernel(m, SJ_DECODE_NORM, (sj_dim3){(unsigned)sj_min64(sj_ceil_div(B, 2), 65535), 1, 1}, 0,
                             &d, stream));
    if (!sj_model_decode_skipped(m, SJ_DECODE_IN))
        SJ_TRY(hybrid_in(m, l, &d, normed, sj_model_ws_at(base, ws->xz), stream));
    if (!sj_model_decode_skipped(m, SJ_DECODE_MIX))
        SJ_TRY(launch_kernel(m, mix_kernel, mix, 0, &d, stream));
    if (sj_model_decode_skipped(m, SJ_DECODE_OUT))
        return SSMJIT_OK;
    return hybrid_product(m, l, SJ_L_OUT_PROJ, B, y, x, stream);
}

ssmjit_status sj_model_decode_step(ssmjit_model *m, const ssmjit_model_step_args *a, const sj_model_step_ws *ws,
                                   const void *ids_dev, void *stream)
{
    const ssmjit_model_config *c = &m->cfg;
    const int64_t B = a->batch, di = c->d_inner, n = c->d_state;
    sj_dim3 mix;
    const int mix_kernel = sj_model_decode_mix_plan(c, sj_context_props(m->ctx)->sm_count, B, &mix);
    SJ_TRY(load(m, FUSED_KERNELS | 1u << mix_kernel));
    void *base = a->workspace, *x = sj_model_ws_at(base, ws->x);
    void *resid[2] = {sj_model_ws_at(base, ws->resid), sj_model_ws_at(base, ws->resid2)};
    const sj_dim3 in = matvec_grid(m, 2 * di);
    /* greedy: the head takes the argmax too; a draw is a kernel of its own */
    const int greedy = a->next_ids && !a->sampling && !sj_model_decode_skipped(m, SJ_DECODE_PICK);
    sj_decode_args d = {
        .x = x, .xc = sj_model_ws_at(base, ws->xc), .z = sj_model_ws_at(base, ws->xz),
        .xpart = sj_model_ws_at(base, ws->xpart), .y = sj_model_ws_at(base, ws->y), .out = x,
        .next_ids = greedy ? a->next_ids : NULL, .pick = sj_model_ws_at(base, ws->pick),
        .picked = greedy ? sj_model_ws_at(base, ws->picked) : NULL,
        .batch = B, .eps = (float)c->norm_eps, .xparts = (int32_t)sj_model_decode_xparts(m),
    };
    for (int64_t l = 0; l < c->n_layer; l++) {
        /* layer 0 reads its tokens' rows of the embedding table itself */
        d.x = l ? x : (const void *)(uintptr_t)m->t[SJ_G_EMBEDDING].data;
        d.ids = l ? NULL : ids_dev;
        d.res_in = l ? resid[(l - 1) % 2] : NULL;
        d.res_out = resid[l % 2];
        d.norm_w = sj_model_weight(m, l, SJ_L_NORM);
        d.w_in = sj_model_weight(m, l, SJ_L_IN_PROJ);
        d.conv_w = sj_model_weight(m, l, SJ_L_CONV);
        d.conv_b = sj_model_weight(m, l, SJ_L_CONV_BIAS);
        d.conv_state = (float *)a->conv_state + l * B * di * c->d_conv;
        d.w_x = sj_model_weight(m, l, SJ_L_X_PROJ);
        d.w_dt = sj_model_weight(m, l, SJ_L_DT_PROJ);
        d.dt_bias = sj_model_weight(m, l, SJ_L_DT_BIAS);
        d.A_log = sj_model_weight(m, l, SJ_L_A_LOG);
        d.Dv = sj_model_weight(m, l, SJ_L_D);
        d.ssm_state = (float *)a->ssm_state + l * B * di * n;
        d.w_out = sj_model_weight(m, l, SJ_L_OUT_PROJ);
        SJ_TRY(launch(m, SJ_DECODE_IN, in, &d, stream));
        SJ_TRY(launch(m, mix_kernel, mix, &d, stream));
        SJ_TRY(launch(m, SJ_DECODE_OUT, matvec_grid(m, c->d_model), &d, stream));
    }
    d.x = x;
    d.ids = NULL;
    d.res_in = resid[(c->n_layer - 1) % 2];
    d.norm_w = (const float *)(uintptr_t)m->t[SJ_G_NORM_F].data;
    d.w_in = sj_model_head_weight(m);
    d.out = a->logits;
    SJ_TRY(launch(m, SJ_DECODE_HEAD, matvec_grid(m, c->vocab_size), &d, stream));
    if (greedy || sj_model_decode_skipped(m, SJ_DECODE_PICK))
        return SSMJIT_OK;
    return sj_model_pick_next(m, a, stream);
}
