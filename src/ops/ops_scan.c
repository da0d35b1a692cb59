/* Selective scan ops (modules "scan_fwd", "scan_bwd", "state_update"):
 * argument checks, launch shapes, the workspace of the backward, and the
 * launches; the split over L is scan_split.c. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "engine/kernel.h"
#include "scan_internal.h"
#include "validate.h"

/* Mirror of struct sj_update_params in kernels_src/state_update.cu. */
typedef struct sj_update_params {
    uint64_t x, dt, z, B, C;
    int64_t sx, sdt, sz, sB, sC;
    uint64_t A, Dv, dt_bias, state, out;
    int64_t sout;
    int64_t batch, D, N, softplus, log2G, vec4;
} sj_update_params;
_Static_assert(sizeof(sj_update_params) == 22 * 8, "layout of sj_update_params in state_update.cu");

static atomic_int forced_ns, forced_bd, forced_buffers;

void sj_scan_force_shape(int ns, int bd, int buffers)
{
    atomic_store_explicit(&forced_ns, ns, memory_order_relaxed);
    atomic_store_explicit(&forced_bd, bd, memory_order_relaxed);
    atomic_store_explicit(&forced_buffers, buffers, memory_order_relaxed);
}

/* ------------------------------------------------------------------------ */
/* Descriptor checks                                                        */
/* ------------------------------------------------------------------------ */

static ssmjit_status check_matrix(const char *op, const char *name, const ssmjit_matrix *m, int64_t width,
                                  int need_data, int64_t *stride)
{
    char what[64];
    if (need_data) {
        snprintf(what, sizeof what, "desc->%s.data", name);
        SJ_TRY(sj_check_ptr(m->data, op, what));
    }
    snprintf(what, sizeof what, "desc->%s.stride", name);
    return sj_resolve_stride(m->stride, width, op, what, stride);
}

static ssmjit_status check_dstate(const char *op, int64_t n)
{
    if (n < 1 || n > SCAN_MAX_N)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: desc->dstate = %lld is outside 1..%d", op,
                        (long long)n, SCAN_MAX_N);
    return SSMJIT_OK;
}

/* Checks the whole descriptor of a forward (need_y) or backward. */
static ssmjit_status check_scan(const char *op, const ssmjit_selective_scan_desc *desc, int need_y,
                                scan_shape *sh)
{
    SJ_TRY(sj_check_ptr(desc, op, "desc"));
    SJ_TRY(sj_check_dtype(desc->dtype, op, "desc->dtype"));
    SJ_TRY(sj_check_extent(desc->batch, op, "desc->batch"));
    SJ_TRY(sj_check_extent(desc->seqlen, op, "desc->seqlen"));
    SJ_TRY(sj_check_extent(desc->dim, op, "desc->dim"));
    SJ_TRY(check_dstate(op, desc->dstate));
    sh->B = desc->batch;
    sh->L = desc->seqlen;
    sh->D = desc->dim;
    sh->N = desc->dstate;
    sh->S = sh->B;
    if (desc->cu_seqlens) {
        if (desc->batch != 1)
            return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: desc->batch = %lld must be 1 with cu_seqlens", op,
                            (long long)desc->batch);
        if (desc->num_seqs < 1 || desc->num_seqs > INT32_MAX - 1)
            return sj_error(SSMJIT_ERR_INVALID_ARG,
                            "%s: desc->num_seqs = %lld must be in 1..2^31-2 with cu_seqlens", op,
                            (long long)desc->num_seqs);
        sh->S = desc->num_seqs;
    }
    if (sh->B > SCAN_MAX_BATCH)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "%s: desc->batch = %lld is above %d", op,
                        (long long)sh->B, SCAN_MAX_BATCH);
    if (sh->D > INT32_MAX)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "%s: desc->dim = %lld is above 2^31-1", op, (long long)sh->D);
    if (desc->cu_seqlens && sh->L > INT32_MAX)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "%s: desc->seqlen = %lld does not fit int32 cu_seqlens",
                        op, (long long)sh->L);
    sh->active = sh->B > 0 && sh->L > 0 && sh->D > 0;
    const int act = sh->active;
    SJ_TRY(check_matrix(op, "u", &desc->u, sh->D, act, &sh->su));
    SJ_TRY(check_matrix(op, "delta", &desc->delta, sh->D, act, &sh->sdelta));
    SJ_TRY(check_matrix(op, "B", &desc->B, sh->N, act, &sh->sB));
    SJ_TRY(check_matrix(op, "C", &desc->C, sh->N, act, &sh->sC));
    SJ_TRY(check_matrix(op, "z", &desc->z, sh->D, 0, &sh->sz));
    SJ_TRY(check_matrix(op, "y", &desc->y, sh->D, need_y && act, &sh->sy));
    if (sh->D > 0)
        SJ_TRY(sj_check_ptr(desc->A, op, "desc->A"));
    int64_t widest = sh->su;
    const int64_t strides[] = {sh->sdelta, sh->sB, sh->sC, sh->sz, sh->sy};
    for (size_t i = 0; i < sizeof strides / sizeof *strides; i++)
        widest = strides[i] > widest ? strides[i] : widest;
    SJ_TRY(sj_check_size(sh->B, sh->L, widest, op, "the activation extent B * L * stride"));
    SJ_TRY(sj_check_size(sh->S + 1, sh->D, sh->N, op, "the state extent S * D * N"));
    /* In bytes, since the sum of the parts must not wrap: per token, the
     * checkpoint (a state every SCAN_CHUNK tokens) and the backward's
     * dB/dC partials and accumulators.  With B, D and N bounded above,
     * the per-segment parts cannot take the total past 2^63. */
    const int64_t token_bytes = 4 * (sj_ceil_div(sh->D * sh->N, SCAN_CHUNK) + sj_ceil_div(sh->D, BWD_BD) * 2 * sh->N +
                                     3 * sh->D + 64);
    SJ_TRY(sj_check_size(sh->B, sh->L, token_bytes, op, "the backward workspace"));
    sh->nch = sj_ceil_div(sh->L, SCAN_CHUNK);
    return SSMJIT_OK;
}

static size_t checkpoint_bytes(const scan_shape *sh)
{
    return (size_t)sh->B * (size_t)sh->nch * (size_t)sh->D * (size_t)sh->N * sizeof(float);
}

sj_scan_params sj_scan_params_of(const ssmjit_selective_scan_desc *desc, const scan_shape *sh)
{
    sj_scan_params p = {0};
    p.u = dptr(desc->u.data);
    p.delta = dptr(desc->delta.data);
    p.z = dptr(desc->z.data);
    p.B = dptr(desc->B.data);
    p.C = dptr(desc->C.data);
    p.su = sh->su;
    p.sdelta = sh->sdelta;
    p.sz = sh->sz;
    p.sB = sh->sB;
    p.sC = sh->sC;
    p.A = dptr(desc->A);
    p.Dv = dptr(desc->D);
    p.dbias = dptr(desc->delta_bias);
    p.init = dptr(desc->initial_state);
    p.cu = dptr(desc->cu_seqlens);
    p.L = sh->L;
    p.D = sh->D;
    p.N = sh->N;
    p.nseq = sh->S;
    p.softplus = desc->delta_softplus != 0;
    return p;
}

/* ------------------------------------------------------------------------ */
/* Forward                                                                  */
/* ------------------------------------------------------------------------ */

/* Dynamic shared memory of sj_scan_fwd (see sj_fwd_layout).  Rows of 8
 * and 16 states a thread are SJ_FWD_PAD floats wider in 16-bit; f32
 * blocks get the same room unused, so that the shape is the dtype's
 * whichever it is. */
unsigned sj_scan_fwd_smem_bytes(const sj_scan_fwd_shape *f)
{
    const int npad = f->groups * f->ns, pad = f->ns > 4 ? 4 : 0;
    int buf = 2 * SCAN_CHUNK * npad + 3 * SCAN_CHUNK * (sj_scan_fwd_max_bd(f->ns) + pad) + 2 * SCAN_CHUNK;
    /* partial outputs: one array a stage buffer where the parts are gated
     * (GATED: 8 and 16 states a thread), else one */
    int parts = f->out ? (f->ns > 4 ? f->buffers : 1) : 0;
    int partial = parts * SCAN_CHUNK * (sj_scan_fwd_max_threads(f->ns) + pad), bias_and_d = 2 * f->bd;
    return (unsigned)((f->buffers * buf + partial + bias_and_d) * sizeof(float));
}

unsigned sj_scan_bwd_smem_bytes(ssmjit_dtype dtype)
{
    /* the raw copies, in the activation dtype: u, delta, dy, z, and B, C
     * where they need converting (f32's go straight to the stage buffer) */
    const size_t size = ssmjit_dtype_size(dtype);
    const size_t raw = 4 * SCAN_CHUNK * BWD_BD + (size == 4 ? 0 : 2 * SCAN_CHUNK * BWD_NBLK);
    return (unsigned)(BWD_SMEM_FLOATS * sizeof(float) + raw * size);
}

int sj_scan_fwd_max_threads(int ns) { return ns == 4 ? SJ_SCAN_FWD4_MAX_THREADS : SJ_SCAN_FWD_MAX_THREADS; }

/* The ROW of the SJ_SCAN_FWD_KERNEL lines (the states-only kernel's,
 * 8 states a thread, is 128 too). */
int sj_scan_fwd_max_bd(int ns) { return ns == 4 ? 64 : 128; }

int sj_scan_fwd_min_blocks(int ns) { return ns == 4 ? 3 : ns == 8 ? 2 : 1; }

/* Two stage buffers, so that a chunk's inputs are committed while other
 * threads still read the last chunk's; one (and a barrier a chunk more)
 * where two would exceed a block's shared memory or leave an SM fewer
 * blocks than the kernel is compiled for (min_blocks). */
static int fwd_buffers(const ssmjit_context *ctx, sj_scan_fwd_shape f, int min_blocks)
{
    const int forced = atomic_load_explicit(&forced_buffers, memory_order_relaxed);
    if (forced == 1 || forced == 2)
        return forced;
    const sj_device_props *pr = sj_context_props(ctx);
    f.buffers = 2;
    const int64_t two = sj_scan_fwd_smem_bytes(&f), reserved = 1024; /* the driver's, a block */
    if ((pr->max_smem_per_block_optin > 0 && two > pr->max_smem_per_block_optin) ||
        (pr->max_smem_per_sm > 0 && (two + reserved) * min_blocks > pr->max_smem_per_sm))
        return 1;
    return 2;
}

/* Cycles an SM takes for a chunk of 16 tokens while it runs `warps`
 * warps of the forward kernel with ns states a thread: a floor (what one
 * block's chunk takes however few warps it has, their latency bare) plus
 * each warp's issue.  Fitted on an H200 to the variants' times at shapes
 * from one sequence of 16384 tokens to 64 of 256 (bench/NOTES.md); at 15
 * shapes, 10 of them not in the fit, its choice ran within 3.4% of the
 * fastest variant. */
static double fwd_chunk_cycles(int ns, int64_t warps)
{
    static const double floor_cycles[3] = {1695, 2776, 5628}, per_warp[3] = {166, 311, 418};
    const int k = ns == 4 ? 0 : ns == 8 ? 1 : 2;
    return floor_cycles[k] + per_warp[k] * (double)warps;
}

/* Blocks of shape f that an SM holds at once: bounded by its threads, by
 * its 64K registers at what the kernel's __launch_bounds__ allow a thread
 * (a multiple of 8, allocated 256 a warp), by its shared memory (1 KB of
 * it the driver's, a block) and by 16 blocks.  Unknown device limits
 * bound nothing. */
static int64_t fwd_resident(const sj_device_props *pr, const sj_scan_fwd_shape *f)
{
    const int64_t threads = (int64_t)f->bd * f->groups, warps = sj_ceil_div(threads, 32);
    const int64_t per_block = 65536 / ((int64_t)sj_scan_fwd_max_threads(f->ns) * sj_scan_fwd_min_blocks(f->ns));
    const int64_t regs = sj_min64(per_block, 255) / 8 * 8, warp_regs = sj_ceil_div(regs * 32, 256) * 256;
    int64_t r = sj_min64(16, (pr->max_threads_per_sm > 0 ? pr->max_threads_per_sm : 2048) / threads);
    r = sj_min64(r, 65536 / warp_regs / warps);
    if (pr->max_smem_per_sm > 0)
        r = sj_min64(r, pr->max_smem_per_sm / ((int64_t)sj_scan_fwd_smem_bytes(f) + 1024));
    return r;
}

/* Whether blocks of shape f run the kernel's fast chunks (sj_scan_fwd's
 * fast_thr): each thread stages at most ns / 4 groups of u, dt and z (16
 * bytes of f32 each; 16-bit groups hold twice the channels, which only
 * N <= 8 would notice) and ns / 4 groups of 4 states of B and C.  Blocks
 * of 16 channels never do; they ran 1.8-2.2 times as long a chunk as the
 * model's fast ones (bench/NOTES.md). */
static int fwd_fast(const sj_scan_fwd_shape *f)
{
    const int64_t threads = (int64_t)f->bd * f->groups;
    const int64_t td = sj_ceil_div(SCAN_CHUNK * f->bd / 4, threads),
                  bc = sj_ceil_div(2 * SCAN_CHUNK * ((int64_t)f->groups * f->ns / 4), threads);
    return td <= f->ns / 4 && bc <= f->ns / 4;
}

/* The modelled cycles of the busiest SM a chunk: its ceil(blocks / SMs)
 * blocks run in waves of fwd_resident() at fwd_chunk_cycles() each (the
 * last wave as many as are left); -1 where f exceeds the kernel's thread
 * bound or, when the device says, a block's shared memory. */
static double fwd_cost(const sj_device_props *pr, const sj_scan_fwd_shape *f, const scan_shape *sh)
{
    const int64_t threads = (int64_t)f->bd * f->groups;
    if (f->bd > sj_scan_fwd_max_bd(f->ns) || threads > sj_scan_fwd_max_threads(f->ns) ||
        (pr->max_smem_per_block_optin > 0 && sj_scan_fwd_smem_bytes(f) > (unsigned)pr->max_smem_per_block_optin))
        return -1;
    const int64_t r = fwd_resident(pr, f), warps = sj_ceil_div(threads, 32);
    if (r < 1)
        return -1;
    const int64_t per_sm = sj_ceil_div(sh->B * sj_ceil_div(sh->D, f->bd), pr->sm_count > 0 ? pr->sm_count : 1);
    const int64_t full = per_sm / r, rest = per_sm % r;
    double c = (double)full * fwd_chunk_cycles(f->ns, r * warps) + (rest ? fwd_chunk_cycles(f->ns, rest * warps) : 0);
    if (!fwd_fast(f))
        c *= 2;
    /* one stage buffer: a barrier more a chunk (1% at the reference
     * shape), so two where they hold as many blocks */
    return f->buffers == 1 ? c * 1.02 : c;
}

/* The modelled fastest shape whose states a thread, channels a block and
 * stage buffers match ns, bd and buffers (0 matching any); false where
 * none is valid.  Of equal costs the narrowest block: where the same
 * warps an SM come as more blocks, their barriers fall at different
 * times (4 x 512 x 4096: 64 channels a block 1-4% faster than 128,
 * bench/NOTES.md). */
static int fwd_best(const sj_device_props *pr, const scan_shape *sh, int ns, int bd, int buffers,
                    sj_scan_fwd_shape *best)
{
    double least = -1;
    for (int n = 4; n <= 16; n *= 2)
        for (int w = 16; w <= 128; w *= 2)
            for (int nb = 2; nb >= 1; --nb) {
                const sj_scan_fwd_shape f = {n, (int)sj_ceil_div(sh->N, n), w, nb, 1};
                if ((ns && n != ns) || (bd && w != bd) || (buffers && nb != buffers))
                    continue;
                const double c = fwd_cost(pr, &f, sh);
                if (c >= 0 && (least < 0 || c < least))
                    least = c, *best = f;
            }
    return least >= 0;
}

/* The shape fwd_cost() models fastest on this device (bench/NOTES.md has
 * the variants it was fitted to: e.g. 8 states a thread and 128 channels a
 * block at the reference shape, 4 and 32 at mamba-130m's D = 1536, one
 * stage buffer where it lets an SM hold more blocks).  A forced part that
 * leaves no valid shape is ignored, the later ones first.  Where no shape
 * fits a block's shared memory, 16 channels a block and one buffer, the
 * least there is, for the launch to report. */
static sj_scan_fwd_shape fwd_shape_for(const ssmjit_context *ctx, const scan_shape *sh)
{
    const sj_device_props *pr = sj_context_props(ctx);
    const int ns = atomic_load_explicit(&forced_ns, memory_order_relaxed),
              bd = atomic_load_explicit(&forced_bd, memory_order_relaxed),
              nb = atomic_load_explicit(&forced_buffers, memory_order_relaxed);
    sj_scan_fwd_shape f;
    if (fwd_best(pr, sh, ns, bd, nb, &f) || fwd_best(pr, sh, ns, bd, 0, &f) || fwd_best(pr, sh, ns, 0, 0, &f) ||
        fwd_best(pr, sh, 0, 0, 0, &f))
        return f;
    const int n = sh->N <= 128 ? 8 : 16;
    return (sj_scan_fwd_shape){n, (int)sj_ceil_div(sh->N, n), 16, 1, 1};
}

unsigned sj_scan_fwd_states_used(const ssmjit_context *ctx, int64_t D, int64_t N)
{
    /* Every batch up to 512, then steps of an eighth: a model's load runs
     * this (each batch costs a shape search, about 0.5 us). */
    unsigned used = 0;
    for (int64_t B = 1; B <= 65535; B = B < 512 ? B + 1 : B + B / 8)
        used |= 1u << sj_scan_fwd_shape_for(ctx, B, D, N).ns;
    return used;
}

sj_scan_fwd_shape sj_scan_fwd_shape_for(const ssmjit_context *ctx, int64_t B, int64_t D, int64_t N)
{
    scan_shape sh = {0};
    sh.B = B;
    sh.D = D;
    sh.N = N;
    return fwd_shape_for(ctx, &sh);
}

/* The states-only pass that rebuilds the checkpoint: slices of 16 states,
 * two groups of 8 each, over grid.z (the states are independent without
 * y); two blocks an SM (kernels_src/scan_bwd.cu). */
static sj_scan_fwd_shape states_shape_for(const ssmjit_context *ctx)
{
    sj_scan_fwd_shape f = {8, 2, sj_scan_fwd_max_bd(8), 0, 0};
    f.buffers = fwd_buffers(ctx, f, 2);
    return f;
}

/* Launches the forward scan (module scan_fwd, prefix "scan_fwd", all N
 * states in one slice) or its states-only twin (module scan_bwd, prefix
 * "scan_states", slices of f.groups * f.ns states over grid.z) over the B
 * rows. */
static ssmjit_status launch_fwd(ssmjit_context *ctx, sj_module_id mod, sj_kernel_role role, const char *prefix,
                                const sj_scan_fwd_shape f, ssmjit_dtype dtype, const scan_shape *sh, sj_scan_params *p,
                                void *stream)
{
    char name[48];
    snprintf(name, sizeof name, "%s_ns%d_%s", prefix, f.ns, sj_dtype_suffix(dtype));
    CUfunction fn;
    SJ_TRY(sj_kernel_get(ctx, mod, role, name, &fn));
    p->G = f.groups;
    p->BD = f.bd;
    p->buffers = f.buffers;
    sj_dim3 grid = {(unsigned)sj_ceil_div(sh->D, f.bd), (unsigned)sh->B,
                    (unsigned)sj_ceil_div(sh->N, (int64_t)f.groups * f.ns)};
    sj_dim3 block = {(unsigned)(f.bd * f.groups), 1, 1};
    void *args[] = {p};
    return sj_launch(ctx, fn, grid, block, sj_scan_fwd_smem_bytes(&f), stream, args);
}

ssmjit_status sj_scan_launch_fwd(ssmjit_context *ctx, ssmjit_dtype dtype, const scan_shape *sh, sj_scan_params *p,
                                 void *stream)
{
    return launch_fwd(ctx, SJ_MODULE_SCAN_FWD, SJ_ROLE_FORWARD, "scan_fwd", fwd_shape_for(ctx, sh), dtype, sh, p,
                      stream);
}

double sj_scan_fwd_chunk_cycles(const sj_device_props *pr, const scan_shape *sh)
{
    sj_scan_fwd_shape f;
    return fwd_best(pr, sh, 0, 0, 0, &f) ? fwd_cost(pr, &f, sh) : -1;
}

SSMJIT_API ssmjit_status ssmjit_selective_scan_split_size(ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc,
                                                          size_t *bytes)
{
    const char *op = "ssmjit_selective_scan_split_size";
    scan_shape sh;
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(sj_check_ptr(bytes, op, "bytes"));
    SJ_TRY(check_scan(op, desc, 0, &sh));
    const split_plan fwd = sj_scan_split_plan(ctx, desc, &sh, 0), bwd = sj_scan_split_plan(ctx, desc, &sh, 1);
    const size_t f = fwd.S > 1 ? fwd.bytes : 0, b = bwd.S > 1 ? bwd.bytes : 0;
    *bytes = f > b ? f : b;
    return SSMJIT_OK;
}

SSMJIT_API ssmjit_status ssmjit_selective_scan_fwd_workspace_size(const ssmjit_selective_scan_desc *desc,
                                                                  size_t *bytes)
{
    const char *op = "ssmjit_selective_scan_fwd_workspace_size";
    scan_shape sh;
    SJ_TRY(sj_check_ptr(bytes, op, "bytes"));
    SJ_TRY(check_scan(op, desc, 0, &sh));
    *bytes = checkpoint_bytes(&sh);
    return SSMJIT_OK;
}

SSMJIT_API ssmjit_status ssmjit_selective_scan_fwd(ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc,
                                                   void *stream)
{
    const char *op = "ssmjit_selective_scan_fwd";
    scan_shape sh;
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(check_scan(op, desc, 1, &sh));
    /* Without tokens only the final states (= initial states) remain. */
    if (sh.D == 0 || sh.B == 0 || (!sh.active && !desc->final_state))
        return SSMJIT_OK;
    split_plan sp;
    SJ_TRY(sj_scan_split_given(ctx, desc, &sh, 0, op, &sp));
    if (sp.S > 1)
        return sj_scan_fwd_split(ctx, desc, &sh, &sp, stream);
    sj_scan_params p = sj_scan_params_of(desc, &sh);
    p.y = dptr(desc->y.data);
    p.sy = sh.sy;
    p.final_state = dptr(desc->final_state);
    p.ckpt = dptr(desc->checkpoint);
    return sj_scan_launch_fwd(ctx, desc->dtype, &sh, &p, stream);
}

/* ------------------------------------------------------------------------ */
/* Backward                                                                 */
/* ------------------------------------------------------------------------ */

static bwd_layout bwd_layout_for(const ssmjit_selective_scan_desc *desc, const scan_shape *sh)
{
    bwd_layout w;
    w.ndblk = sj_ceil_div(sh->D, BWD_BD);
    w.nblocks = sj_ceil_div(sh->N, BWD_NBLK);
    const size_t f = sizeof(float), B = (size_t)sh->B, L = (size_t)sh->L, D = (size_t)sh->D,
                 N = (size_t)sh->N;
    size_t off = 0;
    w.ckpt = off;
    off += align_up(desc->checkpoint ? 0 : checkpoint_bytes(sh));
    w.bc = off;
    off += align_up(B * (size_t)w.ndblk * L * 2 * N * f);
    w.acc = off;
    off += align_up(w.nblocks > 1 ? B * L * D * 3 * f : 0);
    w.dA = off;
    off += align_up(B * D * N * f);
    w.dD = off;
    off += align_up(B * D * f);
    w.db = off;
    off += align_up(B * D * f);
    w.total = off;
    return w;
}

SSMJIT_API ssmjit_status ssmjit_selective_scan_bwd_workspace_size(const ssmjit_selective_scan_desc *desc,
                                                                  size_t *bytes)
{
    const char *op = "ssmjit_selective_scan_bwd_workspace_size";
    scan_shape sh;
    SJ_TRY(sj_check_ptr(bytes, op, "bytes"));
    SJ_TRY(check_scan(op, desc, 0, &sh));
    *bytes = sh.D > 0 ? bwd_layout_for(desc, &sh).total : 0;
    return SSMJIT_OK;
}

/* A gradient pointer is required exactly when its input was given. */
static ssmjit_status check_paired(const char *op, const void *input, const void *grad, const char *input_name,
                                  const char *grad_name)
{
    if (input && !grad)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: %s is NULL but %s is given", op, grad_name, input_name);
    if (!input && grad)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: %s is set but %s is absent", op, grad_name, input_name);
    return SSMJIT_OK;
}

static ssmjit_status check_grads(const char *op, const ssmjit_selective_scan_desc *desc,
                                 const ssmjit_selective_scan_grads *gr, const scan_shape *sh, int64_t s[6])
{
    SJ_TRY(sj_check_ptr(gr, op, "grads"));
    const int act = sh->active;
    const ssmjit_matrix *m[] = {&gr->dy, &gr->du, &gr->ddelta, &gr->dB, &gr->dC, &gr->dz};
    static const char *const names[] = {"grads->dy", "grads->du", "grads->ddelta",
                                        "grads->dB", "grads->dC", "grads->dz"};
    for (int i = 0; i < 6; i++) {
        char what[64];
        const int64_t width = i == 3 || i == 4 ? sh->N : sh->D;
        if (act && i < 5) {
            snprintf(what, sizeof what, "%s.data", names[i]);
            SJ_TRY(sj_check_ptr(m[i]->data, op, what));
        }
        snprintf(what, sizeof what, "%s.stride", names[i]);
        SJ_TRY(sj_resolve_stride(m[i]->stride, width, op, what, &s[i]));
        SJ_TRY(sj_check_size(sh->B, sh->L, s[i], op, what));
    }
    if (sh->D > 0)
        SJ_TRY(sj_check_ptr(gr->dA, op, "grads->dA"));
    if (act)
        SJ_TRY(check_paired(op, desc->z.data, gr->dz.data, "desc->z", "grads->dz.data"));
    SJ_TRY(check_paired(op, desc->D, gr->dD, "desc->D", "grads->dD"));
    SJ_TRY(check_paired(op, desc->delta_bias, gr->ddelta_bias, "desc->delta_bias", "grads->ddelta_bias"));
    SJ_TRY(check_paired(op, desc->initial_state, gr->d_initial_state, "desc->initial_state",
                          "grads->d_initial_state"));
    return SSMJIT_OK;
}

ssmjit_status sj_scan_bwd_kernel(ssmjit_context *ctx, const char *kernel, const char *suffix, CUfunction *fn)
{
    char name[48];
    snprintf(name, sizeof name, suffix ? "%s_%s" : "%s", kernel, suffix);
    return sj_kernel_get(ctx, SJ_MODULE_SCAN_BWD, SJ_ROLE_BACKWARD, name, fn);
}

ssmjit_status sj_scan_reduce_params(ssmjit_context *ctx, const ssmjit_selective_scan_grads *gr,
                                    const scan_shape *sh, int64_t rows, const char *pdA, const char *pdD,
                                    const char *pdb, void *stream)
{
    CUfunction fn;
    SJ_TRY(sj_scan_bwd_kernel(ctx, "scan_bwd_reduce_params", NULL, &fn));
    uint64_t wdA = dptr(pdA), wdD = dptr(pdD), wdb = dptr(pdb);
    uint64_t dA = dptr(gr->dA), dD = dptr(gr->dD), db = dptr(gr->ddelta_bias);
    int64_t D = sh->D, N = sh->N;
    void *args[] = {&wdA, &wdD, &wdb, &rows, &D, &N, &dA, &dD, &db};
    sj_dim3 block = {FLAT_THREADS, 1, 1};
    return sj_launch(ctx, fn, flat_grid(D * N), block, 0, stream, args);
}

ssmjit_status sj_scan_bwd_rows(ssmjit_context *ctx, ssmjit_dtype dtype, const scan_shape *sh, sj_scan_params *p,
                               char *ws, const bwd_layout *w, uint64_t dB, int64_t sdB, uint64_t dC, int64_t sdC,
                               void *stream)
{
    p->ws_bc = dptr(ws + w->bc);
    p->ws_acc = dptr(ws + w->acc);
    p->NB = w->nblocks;
    p->ndblk = w->ndblk;
    CUfunction fn;
    SJ_TRY(sj_scan_bwd_kernel(ctx, "scan_bwd", sj_dtype_suffix(dtype), &fn));
    const unsigned smem = sj_scan_bwd_smem_bytes(dtype);
    sj_dim3 grid = {(unsigned)w->ndblk, (unsigned)sh->B, 1};
    sj_dim3 block = {BWD_THREADS, 1, 1};
    /* The launches of successive state blocks chain through ws_acc in
     * stream order. */
    for (int64_t nb = 0; nb < w->nblocks; nb++) {
        p->nb = nb;
        void *args[] = {p};
        SJ_TRY(sj_launch(ctx, fn, grid, block, smem, stream, args));
    }
    if (sh->L == 0)
        return SSMJIT_OK;
    CUfunction red;
    SJ_TRY(sj_scan_bwd_kernel(ctx, "scan_bwd_reduce_bc", sj_dtype_suffix(dtype), &red));
    uint64_t wbc = p->ws_bc;
    int64_t ndblk = w->ndblk, B = sh->B, L = sh->L, N = sh->N;
    void *args[] = {&wbc, &ndblk, &B, &L, &N, &dB, &sdB, &dC, &sdC};
    sj_dim3 flat = {FLAT_THREADS, 1, 1};
    return sj_launch(ctx, red, flat_grid(B * L * 2 * N), flat, 0, stream, args);
}

/* Queues the kernels a backward call launches, so that on a first call
 * their compiles overlap (the call then waits for the slowest, not for
 * their sum): the scan, its reductions, the checkpoint's rebuild when
 * there is none, the split's kernels when it splits. */
static ssmjit_status request_bwd_kernels(ssmjit_context *ctx, ssmjit_dtype dtype, int states, int split)
{
    const char *sfx = sj_dtype_suffix(dtype);
    char names[7][48];
    const char *list[7];
    size_t n = 0;
    snprintf(names[n++], sizeof names[0], "scan_bwd_%s", sfx);
    snprintf(names[n++], sizeof names[0], "scan_bwd_reduce_bc_%s", sfx);
    snprintf(names[n++], sizeof names[0], "scan_bwd_reduce_params");
    if (states)
        snprintf(names[n++], sizeof names[0], "scan_states_ns8_%s", sfx);
    if (split) {
        snprintf(names[n++], sizeof names[0], "scan_split_starts");
        snprintf(names[n++], sizeof names[0], "scan_split_dtsum_%s", sfx);
        snprintf(names[n++], sizeof names[0], "scan_split_carry");
    }
    for (size_t i = 0; i < n; i++)
        list[i] = names[i];
    return sj_kernels_request(ctx, SJ_MODULE_SCAN_BWD, SJ_ROLE_BACKWARD, list, n);
}

SSMJIT_API ssmjit_status ssmjit_selective_scan_bwd(ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc,
                                                   const ssmjit_selective_scan_grads *grads, void *workspace,
                                                   size_t workspace_bytes, void *stream)
{
    const char *op = "ssmjit_selective_scan_bwd";
    scan_shape sh;
    int64_t s[6];
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(check_scan(op, desc, 0, &sh));
    SJ_TRY(check_grads(op, desc, grads, &sh, s));
    if (sh.D == 0)
        return SSMJIT_OK;
    const bwd_layout w = bwd_layout_for(desc, &sh);
    SJ_TRY(sj_check_ptr(workspace, op, "workspace"));
    if (workspace_bytes < w.total)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "%s: workspace_bytes = %zu is below the %zu bytes required",
                        op, workspace_bytes, w.total);
    split_plan sp;
    SJ_TRY(sj_scan_split_given(ctx, desc, &sh, 1, op, &sp));
    char *ws = workspace;

    if (sh.B > 0) {
        SJ_TRY(request_bwd_kernels(ctx, desc->dtype, !desc->checkpoint && sh.nch > 1, sp.S > 1));
        sj_scan_params p = sj_scan_params_of(desc, &sh);
        p.ckpt = desc->checkpoint ? dptr(desc->checkpoint) : dptr(ws + w.ckpt);
        if (!desc->checkpoint && sh.nch > 1)
            SJ_TRY(launch_fwd(ctx, SJ_MODULE_SCAN_BWD, SJ_ROLE_BACKWARD, "scan_states", states_shape_for(ctx),
                              desc->dtype, &sh, &p, stream));
        p.dy = dptr(grads->dy.data);
        p.sdy = s[0];
        p.dfinal = dptr(grads->d_final_state);
        p.du = dptr(grads->du.data);
        p.sdu = s[1];
        p.ddelta = dptr(grads->ddelta.data);
        p.sddelta = s[2];
        p.dz = dptr(grads->dz.data);
        p.sdz = s[5];
        p.dinit = dptr(grads->d_initial_state);
        if (sp.S > 1)
            return sj_scan_bwd_split(ctx, desc, grads, &sh, s, &p, ws, &w, &sp, stream);
        p.ws_dA = dptr(ws + w.dA);
        p.ws_dD = dptr(ws + w.dD);
        p.ws_db = dptr(ws + w.db);
        SJ_TRY(sj_scan_bwd_rows(ctx, desc->dtype, &sh, &p, ws, &w, dptr(grads->dB.data), s[3],
                                dptr(grads->dC.data), s[4], stream));
    }
    return sj_scan_reduce_params(ctx, grads, &sh, sh.B, ws + w.dA, ws + w.dD, ws + w.db, stream);
}

/* ------------------------------------------------------------------------ */
/* Decode step                                                              */
/* ------------------------------------------------------------------------ */

SSMJIT_API ssmjit_status ssmjit_selective_state_update(ssmjit_context *ctx, const ssmjit_state_update_desc *desc,
                                                       void *stream)
{
    const char *op = "ssmjit_selective_state_update";
    SJ_TRY(sj_check_context(ctx, op));
    SJ_TRY(sj_check_ptr(desc, op, "desc"));
    SJ_TRY(sj_check_dtype(desc->dtype, op, "desc->dtype"));
    SJ_TRY(sj_check_extent(desc->batch, op, "desc->batch"));
    SJ_TRY(sj_check_extent(desc->dim, op, "desc->dim"));
    SJ_TRY(check_dstate(op, desc->dstate));
    const int64_t B = desc->batch, D = desc->dim, N = desc->dstate;
    const int act = B > 0 && D > 0;
    sj_update_params p = {0};
    SJ_TRY(check_matrix(op, "x", &desc->x, D, act, &p.sx));
    SJ_TRY(check_matrix(op, "dt", &desc->dt, D, act, &p.sdt));
    SJ_TRY(check_matrix(op, "B", &desc->B, N, act, &p.sB));
    SJ_TRY(check_matrix(op, "C", &desc->C, N, act, &p.sC));
    SJ_TRY(check_matrix(op, "z", &desc->z, D, 0, &p.sz));
    SJ_TRY(check_matrix(op, "out", &desc->out, D, act, &p.sout));
    int64_t widest = p.sx;
    const int64_t strides[] = {p.sdt, p.sB, p.sC, p.sz, p.sout};
    for (size_t i = 0; i < sizeof strides / sizeof *strides; i++)
        widest = strides[i] > widest ? strides[i] : widest;
    SJ_TRY(sj_check_size(B, widest, 1, op, "the extent B * stride"));
    SJ_TRY(sj_check_size(B, D, N * 32, op, "the state extent B * D * N"));
    if (!act)
        return SSMJIT_OK;
    SJ_TRY(sj_check_ptr(desc->A, op, "desc->A"));
    SJ_TRY(sj_check_ptr(desc->state, op, "desc->state"));

    p.x = dptr(desc->x.data);
    p.dt = dptr(desc->dt.data);
    p.z = dptr(desc->z.data);
    p.B = dptr(desc->B.data);
    p.C = dptr(desc->C.data);
    p.A = dptr(desc->A);
    p.Dv = dptr(desc->D);
    p.dt_bias = dptr(desc->dt_bias);
    p.state = dptr(desc->state);
    p.out = dptr(desc->out.data);
    p.batch = B;
    p.D = D;
    p.N = N;
    p.softplus = desc->dt_softplus != 0;
    p.vec4 = N % 4 == 0 && p.state % 16 == 0 && p.A % 16 == 0;
    const int64_t per_lane = p.vec4 ? 4 : 1;
    p.log2G = 0;
    while (p.log2G < 5 && ((int64_t)per_lane << p.log2G) < N)
        p.log2G++;
    const int64_t blocks = sj_ceil_div(D << p.log2G, FLAT_THREADS);
    if (blocks > INT32_MAX)
        return sj_error(SSMJIT_ERR_UNSUPPORTED, "%s: dim = %lld is too large", op, (long long)D);
    char name[48];
    snprintf(name, sizeof name, "state_update_%s", sj_dtype_suffix(desc->dtype));
    CUfunction fn;
    SJ_TRY(sj_kernel_get(ctx, SJ_MODULE_STATE_UPDATE, SJ_ROLE_FORWARD, name, &fn));
    sj_dim3 grid = {(unsigned)blocks, B < SCAN_MAX_BATCH ? (unsigned)B : SCAN_MAX_BATCH, 1};
    sj_dim3 block = {FLAT_THREADS, 1, 1};
    void *args[] = {&p};
    return sj_launch(ctx, fn, grid, block, 0, stream, args);
}
