/* The split over L of the selective scan's forward and backward
 * (ssmjit_selective_scan_fwd_workspace_size and _bwd_workspace_size;
 * kernels_src/scan_common.cuh says how): the plan, its bounds (and the
 * forward kernels that calls within them may take), and the passes over
 * views of a row's segments. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "scan_internal.h"
#include "validate.h"

static atomic_int forced_split;

void sj_scan_force_split(int segments)
{
    atomic_store_explicit(&forced_split, segments, memory_order_relaxed);
}

int sj_scan_forced_split(void) { return atomic_load_explicit(&forced_split, memory_order_relaxed); }

#define SPLIT_MAX 64        /* segments a row */
/* A segment's least tokens, unless forced: the forward's 32, the
 * backward's 64, or one chunk where its segments are whole and their
 * blocks all run at once (bwd_min_tokens).  Below, their launches' and
 * blocks' fixed costs weigh on short segments more than the model says.
 * Since a row's edge chunks run plain (bench/NOTES.md, "Scan shapes,
 * rounds 16 and 17") short segments pay: 1 x 512 x 768 f32 forward in
 * 16 segments of 32 tokens ran 0.0200 ms against 0.0215 in 8, and 1 x
 * 512 x 5120 backward in 8 of 64 0.146 against 0.184 unsplit (when the
 * least was 256). */
#define SPLIT_MIN_TOKENS 32
#define SPLIT_MIN_TOKENS_BWD 64
#define SPLIT_MIN_TOKENS_BWD_ONE_WAVE SJ_SCAN_CHUNK
/* Rows the token-parallel forward may take run it, not a split, up to
 * these tokens a row (token_parallel_first). */
#define TP_FIRST_TOKENS_F32 256
#define TP_FIRST_TOKENS_16BIT 512
/* A split must beat the unsplit op's modelled time by a tenth. */
#define SPLIT_GAIN 0.9

/* Segments of Ls = L / S tokens, rounded down to whole chunks where the
 * split keeps a checkpoint's layout (the view's rows are then the rows'
 * chunks). */
static int64_t split_tokens(const sj_scan_extents *sh, int64_t S, int whole)
{
    return whole ? sh->L / S / SJ_SCAN_CHUNK * SJ_SCAN_CHUNK : sh->L / S;
}

static sj_scan_split split_layout(const sj_scan_extents *sh, int64_t S, int whole, int bwd)
{
    const int64_t Ls = split_tokens(sh, S, whole);
    sj_scan_split w = {S, Ls, sh->L - S * Ls, {0}, 0};
    const size_t R = (size_t)(sh->B * S), D = (size_t)sh->D, DN = D * (size_t)sh->N, f = sizeof(float);
    const size_t fwd[SJ_SPLIT_FWD_PARTS] = {R * DN * f, w.tail ? DN * f : 0, R * D * f};
    const size_t back[SJ_SPLIT_BWD_PARTS] = {R * DN * f, R * DN * f,      R * DN * f,      R * D * f,
                                       DN * f,     (R + 1) * DN * f, (R + 1) * D * f, (R + 1) * D * f};
    const size_t *sizes = bwd ? back : fwd;
    for (int i = 0; i < (bwd ? SJ_SPLIT_BWD_PARTS : SJ_SPLIT_FWD_PARTS); i++) {
        w.part[i] = w.bytes;
        w.bytes += sj_workspace_align_up(sizes[i]);
    }
    return w;
}

/* Whether the rows of sh can be cut into S segments: several rows only
 * into equal ones, no tokens left (the segments of all rows then form one
 * [B S, L / S] view of every tensor). */
static int split_fits(const sj_scan_extents *sh, int64_t S, int64_t min_tokens, int whole)
{
    const int64_t Ls = split_tokens(sh, S, whole);
    return S >= 2 && S <= SPLIT_MAX && sh->B * S <= SJ_SCAN_MAX_BATCH && Ls >= min_tokens &&
           (sh->B == 1 || S * Ls == sh->L);
}

int64_t sj_scan_split_most(int64_t L, int backward)
{
    const int64_t least = backward ? SPLIT_MIN_TOKENS_BWD_ONE_WAVE : SPLIT_MIN_TOKENS;
    int64_t S = 1;
    while (2 * S <= SPLIT_MAX && L / (2 * S) >= least)
        S *= 2;
    return S;
}

/* Whether the forward over sh's rows runs the token-parallel kernel
 * where it can (sj_scan_fwd_token_parallel) rather than a split: in f32
 * up to 256 tokens a row, in 16-bit types up to 512.  Its time grows
 * with L, a chunk after another, while the split's passes spread B L D
 * over the SMs; its f32 runs more slowly than its 16-bit form against
 * the split (B and C twice the bytes to stage).  Fitted, after a row's
 * edge chunks ran plain (bench/NOTES.md, "Scan shapes, round 17"), to
 * its time at every point of 1 and 2 rows of 128 to 16384 tokens and 768
 * to 2048 channels where it can run, against every split
 * (tests/data/scan_split_h100.txt): where this takes it, it ran 0.55 to
 * 0.94 of the fastest split's time; where not, 1.02 to 2.55 (1 x 1024 x
 * 1536 bf16: 0.0378 ms against 0.0371 in 8 segments; 1 x 512 x 768 f32:
 * 0.0211 against 0.0200 in 16).  Where no split can be made, it runs all
 * the same. */
static int token_parallel_first(const sj_scan_extents *sh, ssmjit_dtype dtype)
{
    return sh->L <= (dtype == SSMJIT_F32 ? TP_FIRST_TOKENS_F32 : TP_FIRST_TOKENS_16BIT);
}

sj_scan_fwd_kernels sj_scan_fwd_kernels_for(const ssmjit_context *ctx, ssmjit_dtype dtype, int64_t D, int64_t N,
                                            int64_t B, int64_t L, int backward)
{
    const int64_t tokens = L > 0 ? L : INT64_MAX, batch = B > 0 && B < SJ_SCAN_MAX_BATCH ? B : SJ_SCAN_MAX_BATCH;
    /* The forward splits no rows that the token-parallel kernel takes
     * first (token_parallel_first); where it takes the batch it takes
     * fewer rows too.  Queued for short prompts, the token-serial and
     * split kernels were compiled at a model's load and never run. */
    const sj_scan_extents all = {.B = batch, .L = tokens, .D = D, .N = N};
    const int64_t most = sj_scan_split_most(tokens, 0);
    const int fwd_split =
        most > 1 && !(token_parallel_first(&all, dtype) && sj_scan_fwd_token_parallel(ctx, &all, 0));
    const int64_t segments = fwd_split ? most : 1,
                  rows = batch <= SJ_SCAN_MAX_BATCH / segments ? batch * segments : SJ_SCAN_MAX_BATCH;
    sj_scan_fwd_kernels k = {0, 0, backward ? sj_scan_split_most(tokens, 1) > 1 : fwd_split};
    /* Every count of rows up to 512, then steps of an eighth, and the
     * most: a model's load runs this (each count costs a shape search,
     * about 0.5 us).  Below the tokens a split needs, a batch the
     * token-parallel kernel takes runs no token-serial one, and only its
     * 4-token form (its 8-token form takes more than 128 tokens). */
    for (int64_t r = 1; r <= rows; r = r == rows ? rows + 1 : r < 512 ? r + 1 : sj_min64(r + r / 8, rows)) {
        const sj_scan_extents sh = {.B = r, .L = tokens, .D = D, .N = N};
        const int tp = r <= batch && sj_scan_fwd_token_parallel(ctx, &sh, 0);
        if (tp)
            k.tp_tokens |= 1u << 4 | 1u << sj_scan_fwd_tp_tokens(ctx, &sh);
        if (!tp || segments > 1)
            k.states |= 1u << sj_scan_fwd_shape_for(ctx, r, D, N).ns;
    }
    return k;
}

/* Modelled cycles of the busiest SM for the forward over B rows of L
 * tokens of sh's channels and states: sj_scan_fwd_chunk_cycles() a
 * chunk, a partial last chunk counted twice (it takes the general path,
 * not the fast one). */
static double fwd_cycles(const sj_device_props *pr, const sj_scan_extents *sh, int64_t B, int64_t L)
{
    sj_scan_extents v = *sh;
    v.B = B;
    v.L = L;
    const double c = sj_scan_fwd_chunk_cycles(pr, &v);
    return c < 0 ? -1 : c * (double)(L / SJ_SCAN_CHUNK + (L % SJ_SCAN_CHUNK ? 2 : 0));
}

/* The same for the backward: blocks of SJ_SCAN_BWD_BD channels, two an SM at
 * most (registers and shared memory), a chunk about 16000 cycles a block
 * with two on the SM and two thirds of that alone (on an H100 and H200:
 * about 8 us a chunk at the reference shape, where every SM holds two;
 * bench/NOTES.md has the split's variants this was checked against). */
static double bwd_cycles(const sj_device_props *pr, const sj_scan_extents *sh, int64_t B, int64_t L)
{
    const int64_t sms = pr->sm_count > 0 ? pr->sm_count : 1;
    const int64_t per_sm = sj_ceil_div(B * sj_ceil_div(sh->D, SJ_SCAN_BWD_BD), sms);
    return (double)sj_ceil_div(L, SJ_SCAN_CHUNK) * (16000.0 * (double)(per_sm / 2) + 10700.0 * (double)(per_sm % 2));
}

/* The backward's least tokens a segment for S segments a row: one chunk
 * where the split's blocks all run at once (two an SM) and the segments
 * cover the rows (no tail), else SPLIT_MIN_TOKENS_BWD.  One sequence of
 * 128 to 1024 tokens at D = 768 to 2048 ran fastest so (1 x 128 x 1536
 * f32: 0.0524 ms unsplit, 0.0317 in 8 segments of one chunk;
 * tests/data/scan_split_h100.txt); more blocks than two an SM, or a
 * tail run on its own, measured slower there (bench/NOTES.md). */
static int64_t bwd_min_tokens(const sj_device_props *pr, const sj_scan_extents *sh, int64_t S)
{
    const int64_t sms = pr->sm_count > 0 ? pr->sm_count : 1;
    const int one_wave = sh->B * S * sj_ceil_div(sh->D, SJ_SCAN_BWD_BD) <= 2 * sms,
              whole = sh->L % (S * SJ_SCAN_CHUNK) == 0;
    return one_wave && whole ? SPLIT_MIN_TOKENS_BWD_ONE_WAVE : SPLIT_MIN_TOKENS_BWD;
}

/* The segments (1: none) of the forward's or backward's split that the
 * model times fastest.  A split costs its second pass over the segments
 * (the op over B S rows of L / S tokens) and the tail, times a factor;
 * its first pass's work, a cost for each of the B L D channels' tokens
 * spread over the SMs (scan_split_ends reads them all, whatever S); a
 * fixed cost; and a cost for each segment's states (B S D of them, N
 * each: the first pass writes them, the carry reads and writes them, the
 * second pass starts from them).  The factor and costs were fitted to
 * every power-of-two split from 2 to 32 or 64 segments timed at 76
 * shapes, each direction in f32 and bf16 (B 1 to 8, L 128 to 16384, D
 * 768 to 5120; tests/data/scan_split_h100.txt, bench/NOTES.md's "Scan
 * shapes, round 17"), where the choice, with token_parallel_first's rule,
 * ran within 4.6% of the fastest variant in the forward and 5.9% in the
 * backward (8 x 16384 x 1536 unsplit, where 32 segments ran faster), on
 * average within 0.2% and 0.4%.  One factor serves both directions and
 * both dtypes: the 16-bit splits ran slower against the unsplit op than
 * f32's until their first pass stopped waiting on its loads every chunk
 * (round 11), and a larger 16-bit factor, fitted before, now took the
 * unsplit op where a split ran up to 24% faster.  Only powers of two are
 * taken: the model was not fitted to the others, and they leave tails.
 * The split must beat the unsplit op's modelled time, but where it would
 * stand in for the token-parallel forward (over_tp), whose time the
 * model does not know, and which the fastest split there outran
 * (token_parallel_first). */
static int64_t fastest_segments(const sj_device_props *pr, const sj_scan_extents *sh, int whole, int bwd, int over_tp)
{
    const double sms = pr->sm_count > 0 ? pr->sm_count : 1;
    const double factor = 1.1, fixed = bwd ? 10000.0 : 2500.0,
                 first_pass = (bwd ? 1.0 : 1.25) * (double)sh->B * (double)sh->L * (double)sh->D / sms,
                 per_state_row = (bwd ? 100.0 : 45.0) * (double)sh->B * (double)sh->D / sms;
    double (*cycles)(const sj_device_props *, const sj_scan_extents *, int64_t, int64_t) = bwd ? bwd_cycles : fwd_cycles;
    double cost[SPLIT_MAX + 1], least = -1;
    for (int64_t S = 2; S <= SPLIT_MAX; S++) {
        cost[S] = -1;
        if ((S & (S - 1)) || !split_fits(sh, S, bwd ? bwd_min_tokens(pr, sh, S) : SPLIT_MIN_TOKENS, whole))
            continue;
        const int64_t Ls = split_tokens(sh, S, whole), tail = sh->L - S * Ls;
        const double seg = cycles(pr, sh, sh->B * S, Ls), rest = tail ? cycles(pr, sh, 1, tail) : 0;
        if (seg > 0 && rest >= 0)
            cost[S] = factor * (seg + rest) + first_pass + fixed + per_state_row * (double)S;
        if (cost[S] > 0 && (least < 0 || cost[S] < least))
            least = cost[S];
    }
    const double unsplit = cycles(pr, sh, sh->B, sh->L);
    if (least < 0 || (!over_tp && (unsplit < 0 || least >= unsplit * SPLIT_GAIN)))
        return 1;
    int64_t S = 2;
    while (cost[S] != least)
        S++;
    return S;
}

/* Each direction's last answer of fastest_segments() in a context: its
 * key (B, L, D, N, whole, over_tp), then the segments (0: none yet). */
typedef struct split_memo {
    pthread_mutex_t lock;
    int64_t last[2][7];
} split_memo;

static void *memo_make(void)
{
    split_memo *m = calloc(1, sizeof *m);
    if (m)
        pthread_mutex_init(&m->lock, NULL);
    return m;
}

static void memo_free(void *p)
{
    split_memo *m = p;
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* fastest_segments() through the context's memo of each direction's last
 * answer: costing every segment count takes some 18 us of CPU a forward
 * at 1 x 2048 x 1536, and a model's layers ask the same each call.  The
 * answer depends on the device (the context's), these extents and
 * whether the split stands in for the token-parallel forward only.
 * Without memory for the memo the answer is computed each time. */
static int64_t memo_segments(ssmjit_context *ctx, const sj_scan_extents *sh, int whole, int bwd, int over_tp)
{
    const int64_t key[6] = {sh->B, sh->L, sh->D, sh->N, whole, over_tp};
    split_memo *m = sj_context_ops_state(ctx, memo_make, memo_free);
    int64_t S = 0;
    if (m) {
        pthread_mutex_lock(&m->lock);
        if (m->last[bwd][6] && memcmp(m->last[bwd], key, sizeof key) == 0)
            S = m->last[bwd][6];
        pthread_mutex_unlock(&m->lock);
    }
    if (S)
        return S;
    S = fastest_segments(sj_context_props(ctx), sh, whole, bwd, over_tp);
    if (m) {
        pthread_mutex_lock(&m->lock);
        memcpy(m->last[bwd], key, sizeof key);
        m->last[bwd][6] = S;
        pthread_mutex_unlock(&m->lock);
    }
    return S;
}

/* No split of sh's rows. */
static sj_scan_split no_split(const sj_scan_extents *sh) { return (sj_scan_split){1, sh->L, 0, {0}, 0}; }

/* The split of the forward (bwd = 0) or backward of sh in dtype that the
 * model times fastest, or none; whole: segments of whole chunks (a
 * checkpoint is read or written through the view). */
static sj_scan_split plan_for(ssmjit_context *ctx, const sj_scan_extents *sh, ssmjit_dtype dtype, int whole, int bwd)
{
    const sj_scan_split none = no_split(sh);
    if (!sh->active)
        return none;
    const int forced = atomic_load_explicit(&forced_split, memory_order_relaxed);
    if (forced == 1)
        return none;
    if (forced > 1)
        return split_fits(sh, forced, 1, whole) ? split_layout(sh, forced, whole, bwd) : none;
    /* packed sequences never reach here (sj_scan_split_plan) */
    const int tp = !bwd && sj_scan_fwd_token_parallel(ctx, sh, 0);
    if (tp && token_parallel_first(sh, dtype))
        return none;
    const int64_t S = memo_segments(ctx, sh, whole, bwd, tp);
    return S > 1 ? split_layout(sh, S, whole, bwd) : none;
}

/* The op's split: the backward's segments are whole chunks (it reads the
 * checkpoint through the view), as the forward's where it writes one.
 * Never with packed sequences (the segments would need carrying across
 * the sequences' starts). */
sj_scan_split sj_scan_split_plan(ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc, const sj_scan_extents *sh,
                              int bwd)
{
    /* A window of longer sequences runs unsplit: the split's view of
     * the rows as [B S, L / S] needs them L tokens apart. */
    if (desc->num_seqs >= 1 || (sh->pitch && sh->pitch != sh->L))
        return no_split(sh);
    return plan_for(ctx, sh, desc->dtype, bwd || desc->checkpoint != 0, bwd);
}

int64_t sj_scan_split_segments(ssmjit_context *ctx, ssmjit_dtype dtype, int64_t B, int64_t L, int64_t D, int64_t N,
                               int checkpoint, int backward)
{
    sj_scan_extents sh = {0};
    sh.B = sh.S = B;
    sh.L = L;
    sh.D = D;
    sh.N = N;
    sh.active = B > 0 && L > 0 && D > 0;
    return plan_for(ctx, &sh, dtype, backward || checkpoint, backward).S;
}

ssmjit_status sj_scan_fwd_split_given(ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc,
                                      const ssmjit_selective_scan_fwd_args *a, const sj_scan_extents *sh,
                                      const char *op, sj_scan_split *sp)
{
    *sp = no_split(sh);
    if (!a->workspace)
        return SSMJIT_OK;
    const sj_scan_split plan = sj_scan_split_plan(ctx, desc, sh, 0);
    if (plan.S == 1)
        return SSMJIT_OK;
    SJ_FAIL_IF((uintptr_t)a->workspace % sizeof(float), SSMJIT_ERR_INVALID_ARG,
               "%s: args->workspace is not 4-byte aligned", op);
    SJ_FAIL_IF(a->workspace_bytes < plan.bytes, SSMJIT_ERR_INVALID_ARG,
               "%s: args->workspace_bytes = %zu is below the %zu bytes the split needs", op, a->workspace_bytes,
               plan.bytes);
    *sp = plan;
    return SSMJIT_OK;
}

/* The view of sh's rows as plan sp's segments. */
static sj_scan_extents split_view(const sj_scan_extents *sh, const sj_scan_split *sp)
{
    sj_scan_extents v = *sh;
    v.B = v.S = sh->B * sp->S;
    v.L = v.pitch = sp->Ls;
    v.nch = sj_ceil_div(v.L, SJ_SCAN_CHUNK);
    return v;
}

/* sh's one row's tail after plan sp's segments. */
static sj_scan_extents split_tail(const sj_scan_extents *sh, const sj_scan_split *sp)
{
    sj_scan_extents t = *sh;
    t.L = t.pitch = sp->tail;
    t.nch = sj_ceil_div(t.L, SJ_SCAN_CHUNK);
    return t;
}

/* Element `row` (a token) of x's rows, as a device address (0 for NULL). */
static uint64_t row_at(const void *x, int64_t row, int64_t stride, size_t elem)
{
    return x ? sj_dptr(x) + (uint64_t)(row * stride) * elem : 0;
}

/* Token `row` of a one-row activation m (0 for an absent one). */
static uint64_t token_at(const ssmjit_matrix *m, int64_t row, size_t elem)
{
    return row_at(m->data, row, m->stride, elem);
}

/* Points q's inputs at sh's one row's tokens from r0 on (a split's tail). */
static void tail_inputs(sj_scan_params *q, const ssmjit_selective_scan_desc *desc, const sj_scan_extents *sh, int64_t r0)
{
    const size_t es = ssmjit_dtype_size(desc->dtype);
    q->u = token_at(&sh->m.u, r0, es);
    q->delta = token_at(&sh->m.delta, r0, es);
    q->z = token_at(&sh->m.z, r0, es);
    q->B = token_at(&sh->m.B, r0, es);
    q->C = token_at(&sh->m.C, r0, es);
}

/* The name of the split's kernel `prefix`, with the dtype's suffix where
 * it has one (dtype >= 0). */
static void split_kernel_name(char name[48], const char *prefix, int dtype)
{
    if (dtype < 0)
        snprintf(name, 48, "%s", prefix);
    else
        snprintf(name, 48, "%s_%s", prefix, sj_dtype_suffix((ssmjit_dtype)dtype));
}

/* The split's kernel `prefix` (split_kernel_name) of the forward's module
 * (bwd = 0) or the backward's, each with its own math. */
static ssmjit_status split_kernel(ssmjit_context *ctx, int bwd, const char *prefix, int dtype, CUfunction *fn)
{
    char name[48];
    split_kernel_name(name, prefix, dtype);
    return sj_kernel_get(ctx, bwd ? SJ_MODULE_SCAN_BWD : SJ_MODULE_SCAN_FWD, bwd ? SJ_ROLE_BACKWARD : SJ_ROLE_FORWARD,
                         name, fn);
}

/* scan_split_carry of the forward's module (bwd = 0, states: first
 * segment first) or the backward's (adjoints: last segment first); see
 * kernels_src/scan_common.cuh. */
static ssmjit_status launch_split_carry(ssmjit_context *ctx, const ssmjit_selective_scan_inputs *in,
                                        const sj_scan_extents *sh, int64_t S, int bwd, const void *from,
                                        const float *dtsum, const float *own, float *out, void *last,
                                        sj_scan_stream *ss)
{
    CUfunction fn;
    SJ_TRY(split_kernel(ctx, bwd, "scan_split_carry", -1, &fn));
    uint64_t A = sj_dptr(in->A), f = sj_dptr(from), sums = sj_dptr(dtsum), parts = sj_dptr(own), to = sj_dptr(out),
             end = sj_dptr(last);
    int64_t B = sh->B, D = sh->D, N = sh->N, reverse = bwd;
    void *args[] = {&A, &f, &sums, &parts, &to, &end, &B, &S, &D, &N, &reverse};
    sj_dim3 block = {SJ_SCAN_FLAT_THREADS, 1, 1};
    return sj_scan_launch(ctx, ss, fn, sj_scan_flat_grid(B * D * N), block, 0, args);
}

/* The split's first pass (scan_split_ends, kernels_src/scan_common.cuh)
 * over view v's rows: the forward's (bwd = 0) states leaving each row
 * from a zero state into p->final_state, or the backward's adjoints
 * leaving each row's start with none entering its end into p->dinit;
 * and each row's sum of dt into p->dtsum. */
static ssmjit_status launch_split_ends(ssmjit_context *ctx, ssmjit_dtype dtype, const sj_scan_extents *v,
                                       sj_scan_params *p, int bwd, sj_scan_stream *ss)
{
    CUfunction fn;
    SJ_TRY(split_kernel(ctx, bwd, "scan_split_ends", (int)dtype, &fn));
    sj_dim3 grid = {(unsigned)sj_ceil_div(v->D, SJ_SCAN_ENDS_BD), (unsigned)v->B,
                    (unsigned)sj_ceil_div(v->N, SJ_SCAN_ENDS_SLICE)};
    sj_dim3 block = {SJ_SCAN_ENDS_BD * SJ_SCAN_ENDS_SLICE / 4, 1, 1};
    void *args[] = {p};
    return sj_scan_launch(ctx, ss, fn, grid, block, 0, args);
}

/* The forward over the segments of plan sp. */
ssmjit_status sj_scan_fwd_split(ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc,
                                const ssmjit_selective_scan_fwd_args *a, const sj_scan_extents *sh,
                                const sj_scan_split *sp, sj_scan_stream *ss)
{
    char *ws = a->workspace;
    float *st = (float *)(ws + sp->part[SJ_SPLIT_ST]), *last = (float *)(ws + sp->part[SJ_SPLIT_LAST]),
          *dtsum = (float *)(ws + sp->part[SJ_SPLIT_FWD_DT]);
    const sj_scan_extents v = split_view(sh, sp);
    sj_scan_params p = sj_scan_params_of(desc, &a->in, &v);
    p.y = sj_dptr(sh->m.y.data);
    p.sy = sh->m.y.stride;
    p.init = 0;
    p.final_state = sj_dptr(st);
    p.ckpt = 0;
    p.dtsum = sj_dptr(dtsum);
    /* the split's own kernels compile on the pool meanwhile (first call) */
    char ends_name[48];
    split_kernel_name(ends_name, "scan_split_ends", (int)desc->dtype);
    const char *const split_kernels[] = {ends_name, "scan_split_carry"};
    SJ_TRY(sj_kernels_request(ctx, SJ_MODULE_SCAN_FWD, SJ_ROLE_FORWARD, split_kernels, 2));
    SJ_TRY(launch_split_ends(ctx, desc->dtype, &v, &p, 0, ss));
    SJ_TRY(launch_split_carry(ctx, &a->in, sh, sp->S, 0, a->in.initial_state, dtsum, st, st,
                              sp->tail ? last : a->final_state, ss));
    p.init = sj_dptr(st);
    p.final_state = 0;
    p.dtsum = 0;
    /* the segments' chunks are the rows' (whole chunks a segment), so the
     * view's checkpoint is the rows' */
    p.ckpt = sj_dptr(a->checkpoint);
    SJ_TRY(sj_scan_launch_fwd(ctx, desc->dtype, &v, &p, ss));
    if (!sp->tail)
        return SSMJIT_OK;
    /* The one row's last tokens, from the state the carry left them. */
    const sj_scan_extents t = split_tail(sh, sp);
    const int64_t r0 = sp->S * sp->Ls;
    sj_scan_params q = sj_scan_params_of(desc, &a->in, &t);
    tail_inputs(&q, desc, sh, r0);
    q.y = token_at(&sh->m.y, r0, ssmjit_dtype_size(desc->dtype));
    q.sy = sh->m.y.stride;
    q.init = sj_dptr(last);
    q.final_state = sj_dptr(a->final_state);
    q.ckpt = row_at(a->checkpoint, sp->S * (sp->Ls / SJ_SCAN_CHUNK), sh->D * sh->N, sizeof(float));
    return sj_scan_launch_fwd(ctx, desc->dtype, &t, &q, ss);
}

/* A flat kernel of module scan_bwd over `items` items. */
static ssmjit_status launch_bwd_flat(ssmjit_context *ctx, const char *kernel, int64_t items, void **args,
                                     sj_scan_stream *ss)
{
    CUfunction fn;
    SJ_TRY(sj_scan_bwd_kernel(ctx, kernel, NULL, &fn));
    sj_dim3 block = {SJ_SCAN_FLAT_THREADS, 1, 1};
    return sj_scan_launch(ctx, ss, fn, sj_scan_flat_grid(items), block, 0, args);
}

/* The backward over plan sp's segments (kernels_src/scan_bwd.cu says how):
 * p holds the op's inputs, gradients, checkpoint and d_final_state; the
 * per-row partials go to the split's part of the workspace (sw), then
 * into dA, dD and ddelta_bias. */
ssmjit_status sj_scan_bwd_split(ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc,
                                const ssmjit_selective_scan_bwd_args *a, const sj_scan_extents *sh,
                                const sj_scan_params *op, char *ws, const sj_scan_bwd_layout *w, const sj_scan_split *sp,
                                char *sw, sj_scan_stream *ss)
{
    float *starts = (float *)(sw + sp->part[SJ_SPLIT_STARTS]), *local = (float *)(sw + sp->part[SJ_SPLIT_LOCAL]),
          *enter = (float *)(sw + sp->part[SJ_SPLIT_ENTER]), *dtsum = (float *)(sw + sp->part[SJ_SPLIT_BWD_DT]),
          *tail_dinit = (float *)(sw + sp->part[SJ_SPLIT_TAIL]);
    const sj_scan_extents v = split_view(sh, sp);
    const int64_t R = v.B, nchv = v.nch, DN = sh->D * sh->N, S = sp->S;
    int64_t B = sh->B, D = sh->D, N = sh->N; /* kernel arguments */
    {
        uint64_t ck = op->ckpt, init = op->init, out = sj_dptr(starts);
        int64_t Sv = S, nch = nchv;
        void *args[] = {&ck, &init, &out, &B, &Sv, &nch, &D, &N};
        SJ_TRY(launch_bwd_flat(ctx, "scan_split_starts", R * DN, args, ss));
    }
    /* The tail (one row) first: what enters its end is the op's, and what
     * leaves its start enters the segments. */
    const ssmjit_matrix *dB = &sh->m.dB, *dC = &sh->m.dC;
    if (sp->tail) {
        const sj_scan_extents t = split_tail(sh, sp);
        const int64_t r0 = S * sp->Ls;
        const size_t es = ssmjit_dtype_size(desc->dtype);
        sj_scan_params q = *op;
        q.L = q.pitch = t.L;
        q.nseq = 1;
        tail_inputs(&q, desc, sh, r0);
        q.dy = token_at(&sh->m.dy, r0, es);
        q.du = token_at(&sh->m.du, r0, es);
        q.ddelta = token_at(&sh->m.ddelta, r0, es);
        q.dz = token_at(&sh->m.dz, r0, es);
        /* the tail's chunks follow the segments' in the checkpoint, and
         * its state entering is the one after their last chunk */
        const void *ckpt = (const void *)(uintptr_t)op->ckpt;
        q.ckpt = row_at(ckpt, S * nchv, DN, sizeof(float));
        q.init = row_at(ckpt, S * nchv - 1, DN, sizeof(float));
        q.dinit = sj_dptr(tail_dinit);
        q.ws_dA = sj_dptr(sw + sp->part[SJ_SPLIT_DA]) + (uint64_t)(R * DN) * sizeof(float);
        q.ws_dD = sj_dptr(sw + sp->part[SJ_SPLIT_DD]) + (uint64_t)(R * D) * sizeof(float);
        q.ws_db = sj_dptr(sw + sp->part[SJ_SPLIT_DB]) + (uint64_t)(R * D) * sizeof(float);
        SJ_TRY(sj_scan_bwd_rows(ctx, desc->dtype, &t, &q, ws, w, token_at(dB, r0, es), dB->stride,
                                token_at(dC, r0, es), dC->stride, ss));
    }
    /* The segments with no adjoint entering their ends: the gradients of
     * their start states alone. */
    sj_scan_params p = *op;
    p.L = p.pitch = v.L;
    p.nseq = R;
    p.dinit = sj_dptr(local);
    p.dtsum = sj_dptr(dtsum);
    SJ_TRY(launch_split_ends(ctx, desc->dtype, &v, &p, 1, ss));
    SJ_TRY(launch_split_carry(ctx, &a->in, sh, S, 1, sp->tail ? (const void *)tail_dinit : a->d_final_state, dtsum,
                              local, enter, a->d_initial_state, ss));
    /* The backward proper, with the carried adjoints entering the
     * segments' ends. */
    p.init = sj_dptr(starts);
    p.dfinal = sj_dptr(enter);
    p.dinit = 0;
    p.dtsum = 0;
    p.ws_dA = sj_dptr(sw + sp->part[SJ_SPLIT_DA]);
    p.ws_dD = sj_dptr(sw + sp->part[SJ_SPLIT_DD]);
    p.ws_db = sj_dptr(sw + sp->part[SJ_SPLIT_DB]);
    SJ_TRY(sj_scan_bwd_rows(ctx, desc->dtype, &v, &p, ws, w, sj_dptr(dB->data), dB->stride, sj_dptr(dC->data),
                            dC->stride, ss));
    return sj_scan_reduce_params(ctx, a, sh, R + (sp->tail ? 1 : 0), sw + sp->part[SJ_SPLIT_DA],
                                 sw + sp->part[SJ_SPLIT_DD], sw + sp->part[SJ_SPLIT_DB], ss);
}
