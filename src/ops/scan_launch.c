/* The selective scan's launch layer: launch shapes (the forward's modelled
 * fastest, the states-only rebuild's), the backward's workspace layout,
 * and the launches of the unsplit kernels.  ops_scan.c (the public calls)
 * and scan_split.c (the split over L) both launch through it. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "engine/kernel.h"
#include "scan_internal.h"
#include "validate.h"

static atomic_int forced_ns, forced_bd, forced_buffers, forced_kernel;

void sj_scan_force_fwd_kernel(int kernel) { atomic_store_explicit(&forced_kernel, kernel, memory_order_relaxed); }

void sj_scan_force_shape(int ns, int bd, int buffers)
{
    atomic_store_explicit(&forced_ns, ns, memory_order_relaxed);
    atomic_store_explicit(&forced_bd, bd, memory_order_relaxed);
    atomic_store_explicit(&forced_buffers, buffers, memory_order_relaxed);
}

size_t sj_scan_checkpoint_bytes(const sj_scan_extents *sh)
{
    return (size_t)sh->B * (size_t)sh->nch * (size_t)sh->D * (size_t)sh->N * sizeof(float);
}

sj_scan_params sj_scan_params_of(const ssmjit_selective_scan_desc *desc, const ssmjit_selective_scan_inputs *in,
                                 const sj_scan_extents *sh)
{
    sj_scan_params p = {0};
    p.u = sj_dptr(sh->m.u.data);
    p.delta = sj_dptr(sh->m.delta.data);
    p.z = sj_dptr(sh->m.z.data);
    p.B = sj_dptr(sh->m.B.data);
    p.C = sj_dptr(sh->m.C.data);
    p.su = sh->m.u.stride;
    p.sdelta = sh->m.delta.stride;
    p.sz = sh->m.z.stride;
    p.sB = sh->m.B.stride;
    p.sC = sh->m.C.stride;
    p.A = sj_dptr(in->A);
    p.Dv = sj_dptr(in->D);
    p.dbias = sj_dptr(in->delta_bias);
    p.init = sj_dptr(in->initial_state);
    p.cu = sj_dptr(in->cu_seqlens);
    p.L = sh->L;
    p.D = sh->D;
    p.N = sh->N;
    p.nseq = sh->S;
    p.softplus = desc->delta_softplus != 0;
    p.pitch = sh->pitch ? sh->pitch : sh->L;
    return p;
}

/* Dynamic shared memory of sj_scan_fwd (see sj_fwd_layout).  Rows of 8
 * and 16 states a thread are SJ_FWD_PAD floats wider in 16-bit; f32
 * blocks get the same room unused, so that the shape is the dtype's
 * whichever it is. */
unsigned sj_scan_fwd_smem_bytes(const sj_scan_fwd_shape *f)
{
    const int npad = f->groups * f->ns, pad = f->ns > 4 ? 4 : 0;
    int buf = 2 * SJ_SCAN_CHUNK * npad + 3 * SJ_SCAN_CHUNK * (sj_scan_fwd_max_bd(f->ns) + pad) + 2 * SJ_SCAN_CHUNK;
    /* partial outputs: one array a stage buffer where the parts are gated
     * (GATED: 8 and 16 states a thread), else one */
    int parts = f->out ? (f->ns > 4 ? f->buffers : 1) : 0;
    int partial = parts * SJ_SCAN_CHUNK * (sj_scan_fwd_max_threads(f->ns) + pad), bias_and_d = 2 * f->bd;
    return (unsigned)((f->buffers * buf + partial + bias_and_d) * sizeof(float));
}

unsigned sj_scan_bwd_smem_bytes(ssmjit_dtype dtype)
{
    /* the raw copies, in the activation dtype: u, delta, dy, z, and B, C
     * where they need converting (f32's go straight to the stage buffer) */
    const size_t size = ssmjit_dtype_size(dtype);
    const size_t raw = 4 * SJ_SCAN_CHUNK * SJ_SCAN_BWD_BD + (size == 4 ? 0 : 2 * SJ_SCAN_CHUNK * SJ_SCAN_BWD_NBLK);
    return (unsigned)(SJ_SCAN_BWD_SMEM_FLOATS * sizeof(float) + raw * size);
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
    const int64_t td = sj_ceil_div(SJ_SCAN_CHUNK * f->bd / 4, threads),
                  bc = sj_ceil_div(2 * SJ_SCAN_CHUNK * ((int64_t)f->groups * f->ns / 4), threads);
    return td <= f->ns / 4 && bc <= f->ns / 4;
}

/* The modelled cycles of the busiest SM a chunk: its ceil(blocks / SMs)
 * blocks run in waves of fwd_resident() at fwd_chunk_cycles() each (the
 * last wave as many as are left); -1 where f exceeds the kernel's thread
 * bound or, when the device says, a block's shared memory. */
static double fwd_cost(const sj_device_props *pr, const sj_scan_fwd_shape *f, const sj_scan_extents *sh)
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
static int fwd_best(const sj_device_props *pr, const sj_scan_extents *sh, int ns, int bd, int buffers,
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
static sj_scan_fwd_shape fwd_shape_for(const ssmjit_context *ctx, const sj_scan_extents *sh)
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

sj_scan_fwd_shape sj_scan_fwd_shape_for(const ssmjit_context *ctx, int64_t B, int64_t D, int64_t N)
{
    sj_scan_extents sh = {0};
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

ssmjit_status sj_scan_launch(ssmjit_context *ctx, sj_scan_stream *ss, CUfunction fn, sj_dim3 grid, sj_dim3 block,
                             unsigned smem_bytes, void **args)
{
    const int chained = ss->launches++ > 0;
    return chained ? sj_launch_chained(ctx, fn, grid, block, smem_bytes, ss->stream, args)
                   : sj_launch(ctx, fn, grid, block, smem_bytes, ss->stream, args);
}

/* Launches the forward scan (module scan_fwd, prefix "scan_fwd", all N
 * states in one slice) or its states-only twin (module scan_bwd, prefix
 * "scan_states", slices of f.groups * f.ns states over grid.z) over the B
 * rows. */
static ssmjit_status launch_fwd(ssmjit_context *ctx, sj_module_id mod, sj_kernel_role role, const char *prefix,
                                const sj_scan_fwd_shape f, ssmjit_dtype dtype, const sj_scan_extents *sh, sj_scan_params *p,
                                sj_scan_stream *ss)
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
    return sj_scan_launch(ctx, ss, fn, grid, block, sj_scan_fwd_smem_bytes(&f), args);
}

ssmjit_status sj_scan_launch_fwd(ssmjit_context *ctx, ssmjit_dtype dtype, const sj_scan_extents *sh, sj_scan_params *p,
                                 sj_scan_stream *ss)
{
    return launch_fwd(ctx, SJ_MODULE_SCAN_FWD, SJ_ROLE_FORWARD, "scan_fwd", fwd_shape_for(ctx, sh), dtype, sh, p,
                      ss);
}

ssmjit_status sj_scan_launch_states(ssmjit_context *ctx, ssmjit_dtype dtype, const sj_scan_extents *sh, sj_scan_params *p,
                                    sj_scan_stream *ss)
{
    return launch_fwd(ctx, SJ_MODULE_SCAN_BWD, SJ_ROLE_BACKWARD, "scan_states", states_shape_for(ctx), dtype, sh, p,
                      ss);
}

/* The device's SMs (1 where unknown). */
static int64_t sm_count(const ssmjit_context *ctx)
{
    const sj_device_props *pr = sj_context_props(ctx);
    return pr->sm_count > 0 ? pr->sm_count : 1;
}

/* Whether the token-serial forward's fastest shape over sh's rows gives
 * every SM a block (B ceil(D / bd) blocks at least the SMs). */
static int fwd_fills_gpu(const ssmjit_context *ctx, const sj_scan_extents *sh)
{
    return sh->B * sj_ceil_div(sh->D, fwd_shape_for(ctx, sh).bd) >= sm_count(ctx);
}

/* Blocks of the token-parallel forward over sh's rows. */
static int64_t tp_blocks(const sj_scan_extents *sh) { return sh->B * sj_ceil_div(sh->D, SJ_SCAN_TP_CB); }

/* The token-parallel forward runs wherever the token-serial kernels'
 * fastest shape would leave SMs without a block (B ceil(D / bd) blocks
 * fewer than the SMs) and its own blocks run at once, four an SM, where
 * it can: N <= SJ_SCAN_TP_MAX_N (its states are a lane's), no cu_seqlens
 * (its lanes' scans would need resets).  There the token-serial kernels'
 * few warps each walked every token (bench/NOTES.md: at 1 x 512 x 1536,
 * 1.5 warps an SM, 9% of the issue slots busy), and unsplit they took
 * 1.4 times its time or more wherever both were timed at one or two
 * sequences: in one run 0.020 / 0.020 ms against 0.014 / 0.012 at 1 x 128
 * x 2048, 0.050 / 0.048 against 0.036 / 0.029 at 1 x 512 x 2048 (f32 /
 * bf16); up to 2.9 times against round 3's timings of them at 1024
 * tokens and more (bench/NOTES.md).  Where it may run, the split may still
 * come first (src/ops/scan_split.c): this says what runs unsplit. */
int sj_scan_fwd_token_parallel(const ssmjit_context *ctx, const sj_scan_extents *sh, int packed)
{
    const int forced = atomic_load_explicit(&forced_kernel, memory_order_relaxed);
    if (packed || sh->N < 1 || sh->N > SJ_SCAN_TP_MAX_N || forced == 1)
        return 0;
    if (forced == 2)
        return 1;
    return tp_blocks(sh) <= SJ_SCAN_TP4_BLOCKS_PER_SM * sm_count(ctx) && !fwd_fills_gpu(ctx, sh);
}

/* 8 tokens a lane where a chunk of 256 has tokens past its first half
 * and the blocks run at once, three an SM; else 4, whose blocks fit four
 * an SM.  At 1 x 512 x 1536 the 8-token kernel ran 0.030 / 0.023 ms
 * (f32 / bf16) against 0.030 / 0.025, at 1 x 2048 x 2048 (four blocks an
 * SM) 0.163 / 0.118 against 0.117 / 0.097, and at 1 x 128 x 1536 (half
 * a chunk) 0.014 / 0.012 against 0.012 / 0.010 (bench/NOTES.md). */
int sj_scan_fwd_tp_tokens(const ssmjit_context *ctx, const sj_scan_extents *sh)
{
    return sh->L > 128 && tp_blocks(sh) <= SJ_SCAN_TP8_BLOCKS_PER_SM * sm_count(ctx) ? 8 : 4;
}

int sj_scan_fwd_is_token_parallel(const ssmjit_context *ctx, int64_t B, int64_t L, int64_t D, int64_t N, int packed)
{
    sj_scan_extents sh = {0};
    sh.B = B;
    sh.L = L;
    sh.D = D;
    sh.N = N;
    return sj_scan_fwd_token_parallel(ctx, &sh, packed);
}

ssmjit_status sj_scan_launch_fwd_tp(ssmjit_context *ctx, ssmjit_dtype dtype, const sj_scan_extents *sh,
                                    sj_scan_params *p, sj_scan_stream *ss)
{
    char name[48];
    snprintf(name, sizeof name, "scan_fwd_tp%d_%s", sj_scan_fwd_tp_tokens(ctx, sh), sj_dtype_suffix(dtype));
    CUfunction fn;
    SJ_TRY(sj_kernel_get(ctx, SJ_MODULE_SCAN_FWD, SJ_ROLE_FORWARD, name, &fn));
    sj_dim3 grid = {(unsigned)sj_ceil_div(sh->D, SJ_SCAN_TP_CB), (unsigned)sh->B, 1};
    sj_dim3 block = {32 * SJ_SCAN_TP_CB, 1, 1};
    void *args[] = {p};
    return sj_scan_launch(ctx, ss, fn, grid, block, 0, args);
}

double sj_scan_fwd_chunk_cycles(const sj_device_props *pr, const sj_scan_extents *sh)
{
    sj_scan_fwd_shape f;
    return fwd_best(pr, sh, 0, 0, 0, &f) ? fwd_cost(pr, &f, sh) : -1;
}

sj_scan_bwd_layout sj_scan_bwd_layout_of(const ssmjit_selective_scan_desc *desc, const sj_scan_extents *sh)
{
    sj_scan_bwd_layout w;
    w.ndblk = sj_ceil_div(sh->D, SJ_SCAN_BWD_BD);
    w.nblocks = sj_ceil_div(sh->N, SJ_SCAN_BWD_NBLK);
    const size_t f = sizeof(float), B = (size_t)sh->B, L = (size_t)sh->L, D = (size_t)sh->D,
                 N = (size_t)sh->N;
    size_t off = 0;
    w.ckpt = off;
    off += sj_workspace_align_up(desc->checkpoint ? 0 : sj_scan_checkpoint_bytes(sh));
    w.bc = off;
    off += sj_workspace_align_up(B * (size_t)w.ndblk * L * 2 * N * f);
    w.acc = off;
    off += sj_workspace_align_up(w.nblocks > 1 ? B * L * D * 3 * f : 0);
    w.dA = off;
    off += sj_workspace_align_up(B * D * N * f);
    w.dD = off;
    off += sj_workspace_align_up(B * D * f);
    w.db = off;
    off += sj_workspace_align_up(B * D * f);
    w.total = off;
    return w;
}

ssmjit_status sj_scan_bwd_kernel(ssmjit_context *ctx, const char *kernel, const char *suffix, CUfunction *fn)
{
    char name[48];
    snprintf(name, sizeof name, suffix ? "%s_%s" : "%s", kernel, suffix);
    return sj_kernel_get(ctx, SJ_MODULE_SCAN_BWD, SJ_ROLE_BACKWARD, name, fn);
}

ssmjit_status sj_scan_reduce_params(ssmjit_context *ctx, const ssmjit_selective_scan_bwd_args *a,
                                    const sj_scan_extents *sh, int64_t rows, const char *pdA, const char *pdD,
                                    const char *pdb, sj_scan_stream *ss)
{
    CUfunction fn;
    SJ_TRY(sj_scan_bwd_kernel(ctx, "scan_bwd_reduce_params", NULL, &fn));
    uint64_t wdA = sj_dptr(pdA), wdD = sj_dptr(pdD), wdb = sj_dptr(pdb);
    uint64_t dA = sj_dptr(a->dA), dD = sj_dptr(a->dD), db = sj_dptr(a->ddelta_bias);
    int64_t D = sh->D, N = sh->N;
    void *args[] = {&wdA, &wdD, &wdb, &rows, &D, &N, &dA, &dD, &db};
    sj_dim3 block = {SJ_SCAN_FLAT_THREADS, 1, 1};
    return sj_scan_launch(ctx, ss, fn, sj_scan_flat_grid(D * N), block, 0, args);
}

ssmjit_status sj_scan_bwd_rows(ssmjit_context *ctx, ssmjit_dtype dtype, const sj_scan_extents *sh, sj_scan_params *p,
                               char *ws, const sj_scan_bwd_layout *w, uint64_t dB, int64_t sdB, uint64_t dC, int64_t sdC,
                               sj_scan_stream *ss)
{
    p->ws_bc = sj_dptr(ws + w->bc);
    p->ws_acc = sj_dptr(ws + w->acc);
    p->NB = w->nblocks;
    p->ndblk = w->ndblk;
    CUfunction fn;
    SJ_TRY(sj_scan_bwd_kernel(ctx, "scan_bwd", sj_dtype_suffix(dtype), &fn));
    const unsigned smem = sj_scan_bwd_smem_bytes(dtype);
    sj_dim3 grid = {(unsigned)w->ndblk, (unsigned)sh->B, 1};
    sj_dim3 block = {SJ_SCAN_BWD_THREADS, 1, 1};
    /* The launches of successive state blocks chain through ws_acc in
     * stream order. */
    for (int64_t nb = 0; nb < w->nblocks; nb++) {
        p->nb = nb;
        void *args[] = {p};
        SJ_TRY(sj_scan_launch(ctx, ss, fn, grid, block, smem, args));
    }
    if (sh->L == 0)
        return SSMJIT_OK;
    CUfunction red;
    SJ_TRY(sj_scan_bwd_kernel(ctx, "scan_bwd_reduce_bc", sj_dtype_suffix(dtype), &red));
    uint64_t wbc = p->ws_bc;
    int64_t ndblk = w->ndblk, B = sh->B, L = sh->L, pitch = p->pitch, N = sh->N;
    void *args[] = {&wbc, &ndblk, &B, &L, &pitch, &N, &dB, &sdB, &dC, &sdC};
    sj_dim3 flat = {SJ_SCAN_FLAT_THREADS, 1, 1};
    return sj_scan_launch(ctx, ss, red, sj_scan_flat_grid(B * L * 2 * N), flat, 0, args);
}
