/* The model's internals, shared by the model layer's files: model.c
 * (the pieces the others share: prepare, tensors, GEMMs, the embedding,
 * the next-id pick, checks), model_create.c (create, destroy),
 * model_workspace.c, model_load.c, model_forward.c, model_backward.c,
 * model_step.c, model_decode.c and model_profile.c.  The CLI's benchmark
 * uses its profiling and sj_model_prepare, test_prepare.c sj_model_units. */
#ifndef SSMJIT_MODEL_H
#define SSMJIT_MODEL_H

#include "engine/context.h"
#include "ops/gemm.h"
#include "model_tensors.h"

/* The weights of one layer, in the order of the tensor table. */
typedef enum sj_model_layer_slot {
    SJ_L_NORM,
    SJ_L_IN_PROJ,
    SJ_L_CONV,
    SJ_L_CONV_BIAS,
    SJ_L_X_PROJ,
    SJ_L_DT_PROJ,
    SJ_L_DT_BIAS,
    SJ_L_A_LOG,
    SJ_L_D,
    SJ_L_OUT_PROJ,
    SJ_L_COUNT
} sj_model_layer_slot;

/* The model-wide weights come first in the table. */
enum { SJ_G_EMBEDDING, SJ_G_NORM_F, SJ_G_LM_HEAD };

typedef struct sj_model_tensor {
    char name[80];
    sj_model_tensor_kind kind;
    ssmjit_dtype dtype;
    int ndim;
    int64_t shape[SSMJIT_MODEL_MAX_DIMS];
    size_t numel;
    CUdeviceptr data;
    CUdeviceptr grad; /* f32, allocated by the first backward */
    int owned;        /* data was allocated by the model */
} sj_model_tensor;

/* What a captured decode graph was built for: replaying it is valid only
 * for the same pointers and batch. */
typedef struct sj_model_step_key {
    int64_t batch;
    int host_ids;
    const void *ids_device, *conv_state, *ssm_state, *logits, *next_ids, *workspace, *sampling, *sampling_steps;
} sj_model_step_key;

/* What a fused or hybrid decode step launches, a layer's kernels first
 * (the first four are also indices of the model's specialised kernels);
 * the benchmark times the step without each (sj_model_decode_skip).  The
 * embedding is no part: layer 0's first kernel reads its rows. */
typedef enum sj_decode_part {
    SJ_DECODE_IN,   /* a layer's norm (fused step), in_proj, conv step and x_proj parts */
    SJ_DECODE_MIX,  /* a layer's x_proj sums, dt_proj and state update */
    SJ_DECODE_OUT,  /* a layer's out_proj */
    SJ_DECODE_HEAD, /* the final norm and the LM head (and the fused step's argmax) */
    SJ_DECODE_PICK,       /* the next ids: the head's argmax, or the draw */
    SJ_DECODE_LAYER_NORM, /* a hybrid layer's norm, a kernel of its own there */
    SJ_DECODE_PART_COUNT
} sj_decode_part;
/* The specialised kernels, in m->decode: the fused step's, then the
 * hybrid step's own (indices there, not parts): decode_convx, its norm,
 * decode_mix1 (the mix part where a block takes one sequence, either
 * step's), and the tensor-core products, which only 16-bit models have
 * (the last SJ_DECODE_TC_KERNELS). */
#define SJ_DECODE_CONVX (SJ_DECODE_HEAD + 1)
#define SJ_DECODE_NORM (SJ_DECODE_CONVX + 1)
#define SJ_DECODE_MIX1 (SJ_DECODE_NORM + 1)
#define SJ_DECODE_TCX (SJ_DECODE_MIX1 + 1)
#define SJ_DECODE_TCIN (SJ_DECODE_TCX + 1)
#define SJ_DECODE_TCOUT (SJ_DECODE_TCIN + 1)
#define SJ_DECODE_KERNELS (SJ_DECODE_TCOUT + 1)
#define SJ_DECODE_TC_KERNELS 3

/* Event pairs around the GEMMs and scans of a call, for the benchmark's
 * breakdown of a training step (off unless sj_model_profile_start). */
#define SJ_PROFILE_MAX 1024
typedef enum sj_model_profile_kind {
    SJ_PROFILE_GEMM,
    SJ_PROFILE_SCAN,
    SJ_PROFILE_KINDS
} sj_model_profile_kind;
typedef struct sj_model_profile {
    int count;
    sj_model_profile_kind kind[SJ_PROFILE_MAX];
    CUevent start[SJ_PROFILE_MAX], end[SJ_PROFILE_MAX];
} sj_model_profile;

/* Pinned host buffers that a load converts its tensors' pieces into,
 * each copied to the device on the model's stream while the next is
 * converted; opened at the first upload, closed by sj_model_finish.
 * Where pinned memory cannot be had, buf[0] stays NULL and the pieces go
 * up through one pageable buffer, each copy waited for. */
typedef struct sj_model_staging {
    int opened;
    unsigned char *buf[2];
    CUevent copied[2]; /* recorded after the last copy out of each */
    int next;          /* the buffer the next piece takes */
} sj_model_staging;

struct ssmjit_model {
    ssmjit_context *ctx;
    const sj_driver *drv;
    sj_blas *blas;
    ssmjit_model_config cfg;
    ssmjit_dtype dtype;
    ssmjit_dtype res_dtype; /* of the residual stream */
    int allow_tf32;

    sj_model_tensor *t;
    int64_t count;
    int64_t layer_base;     /* index of layer 0's first tensor */
    CUdeviceptr a_log_block; /* every layer's A_log, contiguous while none is rebound */
    int a_log_rebound;
    CUdeviceptr A;          /* [n_layer, d_inner, d_state] f32 = -exp(A_log) */

    /* The last forward in a training mode, which a backward continues. */
    struct {
        int valid;
        ssmjit_model_mode mode;
        int64_t batch, seqlen;
        void *workspace;
        int32_t *ids;       /* host copy; NULL when the forward took embeds */
    } train;

    sj_model_profile *profile; /* NULL: not profiling */

    CUstream capture;       /* the decode graph is captured on this stream, and the load's copies go on it */
    sj_model_staging staging;
    sj_model_step_key key;
    CUgraphExec graph;      /* NULL: none captured */

    /* The fused and hybrid decode's kernels (model_decode.c), compiled
     * with the model's sizes at its first step; decode_skip: parts a fused
     * step leaves out (sj_model_decode_skip); decode_force: -1 the rule,
     * else the path (SJ_DECODE_UNFUSED, _FUSED, _HYBRID); decode_cublas:
     * hybrid steps leave in_proj and out_proj to cuBLAS
     * (sj_model_decode_tensor_cores). */
    sj_special_kernel decode[SJ_DECODE_KERNELS];
    unsigned decode_skip;
    int decode_force, decode_cublas;
};

static inline sj_model_tensor *sj_model_layer_tensor(const ssmjit_model *m, int64_t layer,
                                                     sj_model_layer_slot s)
{
    return &m->t[m->layer_base + layer * SJ_L_COUNT + s];
}

static inline void *sj_model_weight(const ssmjit_model *m, int64_t layer, sj_model_layer_slot s)
{
    return (void *)(uintptr_t)sj_model_layer_tensor(m, layer, s)->data;
}

static inline size_t sj_model_tensor_bytes(const sj_model_tensor *t)
{
    return t->numel * ssmjit_dtype_size(t->dtype);
}

/* The sizes of config c that its tensors' shapes follow from. */
static inline sj_model_dims sj_model_dims_of(const ssmjit_model_config *c)
{
    return (sj_model_dims){c->d_model, c->d_inner, c->dt_rank, c->d_state, c->d_conv, c->vocab_size};
}

/* The LM head: the embedding when tied. */
static inline const sj_model_tensor *sj_model_head_tensor(const ssmjit_model *m)
{
    return &m->t[m->cfg.tie_embeddings ? SJ_G_EMBEDDING : SJ_G_LM_HEAD];
}

static inline void *sj_model_head_weight(const ssmjit_model *m)
{
    return (void *)(uintptr_t)sj_model_head_tensor(m)->data;
}

/* Where each buffer of a forward / backward lies in the caller's
 * workspace: byte offsets.  Per-layer buffers are at offset + l * stride,
 * stride being 0 where the layers share one buffer (inference, and what a
 * recomputing backward rebuilds). */
typedef struct sj_model_ws {
    ssmjit_model_mode mode;
    size_t total;
    size_t layer_stride;
    /* per layer (saved for the backward in the training modes) */
    size_t resid, rstd, normed, xz, xdbl, dt;
    /* per layer in SSMJIT_MODEL_TRAIN, else shared */
    size_t xc, y, ckpt;
    size_t xc_stride; /* layer_stride or 0 */
    /* the final norm's input and output */
    size_t resid_f, rstd_f, normed_f;
    /* shared */
    size_t ids, x;
    /* backward only */
    size_t g, dx, dnormed, dys, dxz, dxc, ddt, ddbl, dA, targets, row_loss, order, seg_start, seg_id;
    size_t scan_ws, conv_ws, norm_ws;
    size_t scan_ws_bytes, conv_ws_bytes, norm_ws_bytes;
    /* the scan forward's split workspace (0 bytes where the scan does
     * not split), shared by the layers; in the training modes it lies in
     * scan_ws (the backward's, the split's part of that included) */
    size_t split, split_bytes;
} sj_model_ws;

/* Lays out the workspace of a forward in `mode` (with its backward) over
 * B sequences of L tokens. */
ssmjit_status sj_model_layout(const ssmjit_model *m, int64_t B, int64_t L, ssmjit_model_mode mode,
                              const char *op, sj_model_ws *ws);

/* The decode step's workspace: one token per sequence. */
typedef struct sj_model_step_ws {
    size_t total;
    size_t ids, x, resid, resid2, normed, xz, xc, xdbl, dt, y;
    /* 0 on the unfused path: x_proj's parts (fused: a part a decode_in
     * block, sj_model_decode_xparts; hybrid: a part a decode_convx
     * block); the fused path's only: its head's blocks' argmax and their
     * count done */
    size_t xpart, pick, picked;
} sj_model_step_ws;

ssmjit_status sj_model_step_layout(const ssmjit_model *m, int64_t B, const char *op,
                                   sj_model_step_ws *ws);

/* The decode step's paths (model_decode.c, model_step.c). */
enum {
    SJ_DECODE_UNFUSED = 0, /* seven kernels a layer, four of them cuBLAS GEMMs */
    SJ_DECODE_FUSED = 1,   /* three specialised kernels a layer */
    SJ_DECODE_HYBRID = 2   /* decode_norm, in_proj (and decode_convx), decode_mix, out_proj */
};
/* Its rule, from bench/NOTES.md ("Decode, round 2"): fused for batches up
 * to SJ_DECODE_FUSED_MAX_BATCH (one pass of its staging; at batch 8 the
 * unfused step was 1.6x faster) and d_model up to
 * SJ_DECODE_FUSED_MAX_D_MODEL (the 130m shape, d_model 768, gained 2.4x
 * at batch 1 in bf16; the 1.4b shape, 2048, 1.2x; no larger model
 * measured), where every matrix starts 16-byte aligned; hybrid above
 * that, at the sizes the specialised kernels compile for, up to
 * SJ_DECODE_HYBRID_MAX_BATCH ("Decode, round 7", bf16: with its products
 * on tensor cores 19,069 tokens/s against the unfused step's 13,123 at
 * batch 8, 34,941 against 25,297 at 16, 98,342 against 80,979 at 64, but
 * 120,064 against 128,651 at 128; with them through cuBLAS still ahead at
 * 16 and 64; "Decode, round 8", f32, whose products are cuBLAS's: 1.12-
 * 1.21x the unfused step at 16, 32 and 64); else the unfused step, unless
 * forced. */
#define SJ_DECODE_FUSED_MAX_BATCH 2
#define SJ_DECODE_FUSED_MAX_D_MODEL 2048
#define SJ_DECODE_HYBRID_MAX_BATCH 64
/* The fused kernels' sizes, kernels_src/decode.cu's DEC_WARPS,
 * DEC_BLOCKS_PER_SM, MIX_THREADS, MIX_SEQS, MIX_BLOCKS_PER_SM and
 * DEC_STAGE_BYTES (tests/test_kernel_sizes.c holds the two sides equal):
 * the products' blocks of SJ_DECODE_WARPS warps and the blocks an SM
 * their launch bounds keep, the mix kernels' block, the sequences
 * decode_mix takes at once and the blocks an SM both keep, and the
 * shared memory a block stages one sequence's activations in. */
#define SJ_DECODE_WARPS 8
#define SJ_DECODE_BLOCKS_PER_SM 2
#define SJ_DECODE_MIX_THREADS 256
#define SJ_DECODE_MIX_SEQS 6
#define SJ_DECODE_MIX_BLOCKS_PER_SM 2
#define SJ_DECODE_STAGE_BYTES 40960
/* decode_convx's channels and sequences a block, and threads
 * (CX_CHANNELS, CX_SEQS, CX_THREADS) */
#define SJ_DECODE_CONVX_CHANNELS 64
#define SJ_DECODE_CONVX_SEQS 4
#define SJ_DECODE_CONVX_THREADS 256
/* The tensor-core kernels' (decode_tcx, decode_tcin, decode_tcout)
 * threads a block (decode.cu's TC_THREADS); the shared memory a block may
 * take, and the most 8-row tiles of W a block of decode_tcin or
 * decode_tcout takes (model_decode.c's tc_plan, whose blocks the kernels
 * take as a define) */
#define SJ_DECODE_TC_THREADS 256
#define SJ_DECODE_TC_SMEM_MAX 204800 /* 200 KiB */
#define SJ_DECODE_TC_NT_MAX 2
int sj_model_decode_path(const ssmjit_model *m, int64_t batch);
/* Forces the path of later steps (tests, benchmarks): -1 the rule, else
 * a path (SSMJIT_ERR_UNSUPPORTED where it cannot run).  Drops a captured
 * graph. */
ssmjit_status sj_model_decode_force(ssmjit_model *m, int path);
/* Later fused and hybrid steps leave out the launches of the parts whose
 * bits (1 << sj_decode_part) are set, so that their results are garbage;
 * 0 launches everything.  Drops a captured graph. */
void sj_model_decode_skip(ssmjit_model *m, unsigned parts);
/* Whether sj_model_decode_skip leaves `part` out of later steps. */
int sj_model_decode_skipped(const ssmjit_model *m, sj_decode_part part);
/* A hybrid step's (SJ_DECODE_HYBRID) layer l, from x (and the residual;
 * at layer 0 from the rows of the embedding table that ids_dev names)
 * to the next layer's x, five chained kernels at most: decode_norm;
 * decode_tcx (in_proj with the conv step and x_proj's parts), or in_proj
 * (decode_tcin or cuBLAS) and decode_convx; decode_mix; out_proj
 * (decode_tcout or cuBLAS).  The tensor-core kernels run for a 16-bit
 * model on sm_80 on where k is a multiple of 8, a block's rows fit the
 * device's shared memory and the operands are 16-byte aligned, unless
 * sj_model_decode_tensor_cores turned them off. */
ssmjit_status sj_model_decode_hybrid_layer(ssmjit_model *m, const ssmjit_model_step_args *a,
                                           const sj_model_step_ws *ws, int64_t l, const void *ids_dev, void *stream);
/* Whether later hybrid steps take their products on tensor cores where
 * they can (on, the default) or through cuBLAS (tests, benchmarks).
 * Drops a captured graph. */
void sj_model_decode_tensor_cores(ssmjit_model *m, int on);
/* The mix part's launch for B sequences of a model of config c on a
 * device of `sms` SMs: its grid (a block for every 256 / G states' lanes,
 * a row of blocks for every few sequences), and its kernel, decode_mix1
 * (SJ_DECODE_MIX1) where a block takes one sequence, else decode_mix
 * (SJ_DECODE_MIX).  The fewest sequences a block that fit the grid in
 * the blocks the SMs hold at once (SJ_DECODE_MIX_BLOCKS_PER_SM each),
 * else SJ_DECODE_MIX_SEQS: more a block make fewer, longer blocks, a
 * second wave one more wait (bench/NOTES.md, "Decode, round 10"). */
int sj_model_decode_mix_plan(const ssmjit_model_config *c, int64_t sms, int64_t B, sj_dim3 *grid);
/* decode_convx's blocks, x_proj's parts of a hybrid step. */
int64_t sj_model_decode_convx_blocks(const ssmjit_model_config *c);
/* Everything a fused step launches after its ids are on the device. */
ssmjit_status sj_model_decode_step(ssmjit_model *m, const ssmjit_model_step_args *a, const sj_model_step_ws *ws,
                                   const void *ids_dev, void *stream);
/* For a model the fused path can run: its x_proj is summed from this many
 * parts a sequence, of sj_model_decode_part_floats floats each, and its
 * head has sj_model_decode_head_blocks blocks. */
int64_t sj_model_decode_xparts(const ssmjit_model *m);
int64_t sj_model_decode_part_floats(const ssmjit_model_config *c);
int64_t sj_model_decode_head_blocks(const ssmjit_model *m);
/* Queues the fused kernels of a model of config c in dtype on the compile
 * pool where the rule may take them (ahead of need, as model load does
 * for the other kernels). */
ssmjit_status sj_model_decode_prepare(ssmjit_context *ctx, const ssmjit_model_config *c, ssmjit_dtype dtype);
/* The step's last kernel: next_ids from the logits, greedy or sampled
 * (nothing without next_ids). */
ssmjit_status sj_model_pick_next(ssmjit_model *m, const ssmjit_model_step_args *a, void *stream);

/* Device address of a workspace buffer. */
static inline void *sj_model_ws_at(void *base, size_t offset)
{
    return (char *)base + offset;
}

/* The scan descriptor of the mixers over B x L tokens in `mode` (a
 * checkpoint in the training modes). */
ssmjit_selective_scan_desc sj_model_scan_desc(const ssmjit_model *m, ssmjit_model_mode mode, int64_t B, int64_t L);

/* Layer l's mixer scan over B x L tokens of the buffers at `base`: its
 * descriptor and inputs, and where the forward writes y and (training
 * modes) the checkpoint. */
typedef struct sj_model_scan {
    ssmjit_selective_scan_desc desc;
    ssmjit_selective_scan_inputs in;
    ssmjit_matrix y;
    void *checkpoint;
} sj_model_scan;

sj_model_scan sj_model_scan_of(const ssmjit_model *m, const sj_model_ws *ws, void *base, int64_t l, int64_t B,
                               int64_t L);

/* Shared steps of the forward, the backward's recomputation and the
 * decode step. */
ssmjit_status sj_model_check_shape(const ssmjit_model *m, int64_t B, int64_t L,
                                   ssmjit_model_mode mode, const char *fn);
/* RMSNorm of rows of x plus the residual stream (data NULL: none). */
ssmjit_status sj_model_norm_fwd(ssmjit_model *m, int64_t rows, ssmjit_matrix x,
                                ssmjit_matrix residual, const void *weight, void *normed,
                                void *resid_out, void *rstd, void *stream);
/* Layer l's conv + SiLU from the x half of ws->xz to ws->xc. */
ssmjit_status sj_model_conv_fwd(ssmjit_model *m, const sj_model_ws *ws, void *base, int64_t l,
                                int64_t B, int64_t L, void *stream);
/* Layer l's selective scan from ws->xc, dt, xdbl, xz to ws->y. */
ssmjit_status sj_model_scan_fwd(ssmjit_model *m, const sj_model_ws *ws, void *base, int64_t l,
                                int64_t B, int64_t L, void *final_state, void *stream);
/* Embedding rows of n token ids into out [n, d_model]: ids_dev holds the
 * ids, copied there first from host_ids when that is set. */
ssmjit_status sj_model_embed(ssmjit_model *m, const int32_t *host_ids, int64_t n, void *ids_dev,
                             void *out, void *stream);

/* Profiling for the benchmark: start records an event pair around each
 * GEMM and scan that follows; stop waits for them and gives the
 * milliseconds spent in each kind, then turns profiling off. */
ssmjit_status sj_model_profile_start(ssmjit_model *m);
ssmjit_status sj_model_profile_stop(ssmjit_model *m, double ms[SJ_PROFILE_KINDS]);
/* Brackets one GEMM or scan launch (no-ops unless profiling). */
void sj_model_profile_begin(ssmjit_model *m, sj_model_profile_kind kind, void *stream);
void sj_model_profile_end(ssmjit_model *m, void *stream);

/* Checks a config (field named in the message) and allocates a model whose
 * tensors have device memory but no values, and no cuBLAS handle yet:
 * unless opts->prepare is SSMJIT_MODEL_PREPARE_NONE, cuBLAS starts opening
 * on the pool (sj_cublas_open_ahead) while the caller gives the tensors
 * their values, and sj_model_finish then finishes the model. */
ssmjit_status sj_model_alloc(ssmjit_context *ctx, const ssmjit_model_config *cfg,
                             const ssmjit_model_options *opts, ssmjit_model **out);

/* Finishes model m, whose tensors got their values with status `filled`:
 * waits for the uploads' copies and closes their staging, gives m its
 * cuBLAS handle and *out = m; on any failure destroys m and returns the
 * first error. */
ssmjit_status sj_model_finish(ssmjit_model *m, ssmjit_status filled, ssmjit_model **out);

/* Converts t->numel elements of src (host, src_dtype, any alignment) to
 * the tensor's dtype and copies them to its device memory, through the
 * model's staging: src may be freed on return, but the copies are only
 * known to be done, and their errors only reported, once
 * sj_model_staging_close has returned. */
ssmjit_status sj_model_upload(ssmjit_model *m, sj_model_tensor *t, const void *src,
                              ssmjit_dtype src_dtype);

/* Waits for the uploads' copies and frees the staging (a no-op when none
 * is open); the first error of the copies or of the wait. */
ssmjit_status sj_model_staging_close(ssmjit_model *m);

/* The same in the current context without a word: for a model being
 * destroyed, whose first error is already reported. */
void sj_model_staging_drop(ssmjit_model *m);

/* Writes A = -exp(A_log) for every layer. */
ssmjit_status sj_model_refresh_a(ssmjit_model *m, void *stream);

/* f32 gradients for every tensor, allocated once. */
ssmjit_status sj_model_alloc_grads(ssmjit_model *m);

/* Drops the captured decode graph. */
void sj_model_drop_graph(ssmjit_model *m);

/* A GEMM on the model's handle: C[rows,cols] = op(A) op(B) + beta C with
 * A and B in the model's dtype, C in c_dtype. */
ssmjit_status sj_model_gemm(ssmjit_model *m, int64_t rows, int64_t cols, int64_t k,
                            const void *a, int64_t lda, int trans_a, const void *b, int64_t ldb,
                            int trans_b, void *c, int64_t ldc, ssmjit_dtype c_dtype, float beta,
                            void *stream);

/* The caller's workspace: set when need > 0, at least need bytes, 256-byte
 * aligned. */
ssmjit_status sj_model_check_workspace(const void *workspace, size_t bytes, size_t need, const char *op);

/* A projection of rows of x by the weight w [out, in] (its shape from the
 * tensor table): y[rows, out] = x[rows, in] w^T, rows ldx and ldy elements
 * apart, in the model's dtype. */
ssmjit_status sj_model_linear(ssmjit_model *m, const sj_model_tensor *w, int64_t rows, const void *x,
                              int64_t ldx, void *y, int64_t ldy, void *stream);

/* An asynchronous host-to-device copy on the model's context. */
ssmjit_status sj_model_copy_in(ssmjit_model *m, void *dst, const void *src, size_t bytes, void *stream);

/* Checks token ids on the host: each in [0, vocab) (or -100, the label
 * a loss ignores, when ignore_ok).  `what` names the argument in
 * messages. */
ssmjit_status sj_model_check_ids(const ssmjit_model *m, const int32_t *ids, int64_t n,
                                 int ignore_ok, const char *op, const char *what);

/* The kernels a model of this shape may launch on ctx's device in the
 * dtype and calls up to the largest that opts give: those of its forward
 * and decoding, with opts->prepare SSMJIT_MODEL_PREPARE_TRAINING also its
 * backward's, none with SSMJIT_MODEL_PREPARE_NONE.  Of the forward scan's,
 * only those of the states a thread its launch shapes take on that device
 * (every count when sj_model_units is given no ctx), and the split's only
 * where such calls' rows are long enough to split.  sj_model_units visits their units;
 * sj_model_prepare queues them (flags 0) or loads them
 * (SSMJIT_PREPARE_WAIT) in ctx. */
ssmjit_status sj_model_units(const ssmjit_context *ctx, const ssmjit_model_config *cfg,
                             const ssmjit_model_options *opts, void (*visit)(size_t unit, void *arg), void *arg);
ssmjit_status sj_model_prepare(ssmjit_context *ctx, const ssmjit_model_config *cfg, const ssmjit_model_options *opts,
                               unsigned flags);

/* The Linear layers of a decode step in the order it runs them (in_proj,
 * x_proj, dt_proj, out_proj, the LM head): the i-th's name and its
 * weight's shape W [n, k] for a model of config c.  0 where there is no
 * i-th.  The skinny GEMMs' forms and the GEMM benchmark go by it. */
int sj_model_linear_shape(const ssmjit_model_config *c, int i, const char **name, int64_t *n, int64_t *k);

#endif
