/* What the selective-scan op files share: ops_scan.c (the public calls
 * and their checks) above scan_split.c (the split over L, which runs the
 * kernels over views of a row's segments) above scan_launch.c (launch
 * shapes, the backward's workspace layout, the unsplit launches). */
#ifndef SSMJIT_SCAN_INTERNAL_H
#define SSMJIT_SCAN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/kernel.h"
#include "ops_scan.h"
#include "validate.h"

/* Must match kernels_src: SJ_SCAN_CHUNK, the backward's SJ_BWD_NBLK,
 * SJ_BWD_BD, SJ_BWD_THREADS, SJ_BWD_TP, SJ_BWD_BUF and the
 * shared-memory layout described beside them.  tests/test_kernel_sizes.c
 * holds the five numbers below equal to the kernels' (the two sums after
 * them are written as the kernels write theirs), and the split ends' and
 * token-parallel sizes further down. */
#define SJ_SCAN_CHUNK 16
#define SJ_SCAN_BWD_NBLK 16
#define SJ_SCAN_BWD_BD 64
#define SJ_SCAN_BWD_THREADS 256
#define SJ_SCAN_BWD_TP 36
#define SJ_SCAN_BWD_BUF (5 * SJ_SCAN_CHUNK * SJ_SCAN_BWD_BD + 2 * SJ_SCAN_CHUNK * SJ_SCAN_BWD_NBLK + 2 * SJ_SCAN_CHUNK)
#define SJ_SCAN_BWD_SMEM_FLOATS \
    (2 * SJ_SCAN_BWD_BUF + 2 * SJ_SCAN_BWD_BD + 8 * 8 * SJ_SCAN_BWD_TP + SJ_SCAN_CHUNK * 8 * 32 + SJ_SCAN_BWD_BD * SJ_SCAN_BWD_NBLK + 6 * SJ_SCAN_BWD_THREADS)

#define SJ_SCAN_MAX_N 256
/* The split's first pass (scan_split_ends): SJ_ENDS_BD channels x
 * SJ_ENDS_SLICE states a block, 4 states a thread. */
#define SJ_SCAN_ENDS_BD 32
#define SJ_SCAN_ENDS_SLICE 16
/* The token-parallel forward (kernels_src/scan_fwd_tp.cuh): SJ_TP_CB
 * channels a block of 32 SJ_TP_CB threads, at most 4 SJ_TP_NG states;
 * the blocks an SM of its kernels of 8 and 4 tokens a lane (their launch
 * bounds, SJ_TP8_BLOCKS_PER_SM and SJ_TP4_BLOCKS_PER_SM). */
#define SJ_SCAN_TP_CB 4
#define SJ_SCAN_TP_MAX_N 16
#define SJ_SCAN_TP8_BLOCKS_PER_SM 3
#define SJ_SCAN_TP4_BLOCKS_PER_SM 4
#define SJ_SCAN_MAX_BATCH 65535 /* gridDim.y */
#define SJ_SCAN_FLAT_THREADS 256u    /* reduction and decode kernels */
#define SJ_SCAN_FLAT_MAX_GRID 65535u /* they grid-stride over the rest */

/* Mirror of struct sj_scan_params in kernels_src/scan_common.cuh: same
 * fields, same order, all 8 bytes. */
typedef struct sj_scan_params {
    uint64_t u, delta, z, B, C;
    int64_t su, sdelta, sz, sB, sC;
    uint64_t A, Dv, dbias, init;
    uint64_t cu;
    uint64_t y;
    int64_t sy;
    uint64_t final_state, ckpt;
    uint64_t dy;
    int64_t sdy;
    uint64_t dfinal;
    uint64_t du, ddelta, dz;
    int64_t sdu, sddelta, sdz;
    uint64_t dinit;
    uint64_t ws_bc, ws_acc, ws_dA, ws_dD, ws_db;
    int64_t L, D, N, nseq, softplus;
    int64_t pitch;
    int64_t G, BD, nb, NB, ndblk, buffers;
    uint64_t dtsum;
} sj_scan_params;
_Static_assert(sizeof(sj_scan_params) == 47 * 8, "layout of sj_scan_params in scan_common.cuh");

/* A checked call's extents and activations. */
typedef struct sj_scan_extents {
    int64_t B, L, D, N;
    int64_t S;   /* segments: batch rows, or packed sequences */
    int64_t nch; /* chunks of SJ_SCAN_CHUNK tokens */
    /* the activations as sj_check_matrix resolved them (both strides set;
     * the forward's y, the backward's gradients, zero where a call has
     * none) */
    struct {
        ssmjit_matrix u, delta, z, B, C, y, dy, du, ddelta, dB, dC, dz;
    } m;
    int active;  /* B * L * D > 0: activations are read */
    /* Tokens from one batch row's start to the next's, the same in every
     * activation (a window of longer sequences where above L); 0 until an
     * activation sets it, and in the size queries, which see none. */
    int64_t pitch;
} sj_scan_extents;

/* Where a scan op's kernels go, in order: the op's first launch plain
 * (it starts once all before it on the stream has finished), each later
 * one chained to the one before (sj_launch_chained), which every scan
 * kernel waits for before it touches what an earlier one writes
 * (kernels_src/chain.cuh).  No scan kernel releases the next before its
 * blocks leave, so the next is launched as the one before ends, not
 * after its writes are flushed (1 x 512 x 1536's split backward 7-11%
 * faster; chain.cuh says why not sooner).  An op starts one with
 * launches 0. */
typedef struct sj_scan_stream {
    void *stream;
    int launches;
} sj_scan_stream;

/* Launches fn on ss, plain or chained as above. */
ssmjit_status sj_scan_launch(ssmjit_context *ctx, sj_scan_stream *ss, CUfunction fn, sj_dim3 grid, sj_dim3 block,
                             unsigned smem_bytes, void **args);

/* Byte offsets of the backward's workspace parts; each starts aligned. */
typedef struct sj_scan_bwd_layout {
    size_t ckpt, bc, acc, dA, dD, db, total;
    int64_t ndblk; /* channel blocks of SJ_SCAN_BWD_BD */
    int64_t nblocks; /* launches of SJ_SCAN_BWD_NBLK states */
} sj_scan_bwd_layout;

/* S segments of Ls tokens a row, then (one row only) the last tail
 * tokens, which run as one more sequence from the carried state; S = 1:
 * no split.  part[] are the byte offsets of the workspace's parts (R =
 * B S view rows).  Forward: the segments' states [R, D, N], the state
 * entering the tail [D, N], the sums of dt [R, D].  Backward: the states
 * entering the segments [R, D, N], the gradients of those states with no
 * adjoint entering the segments' ends [R, D, N], the adjoints entering
 * their ends [R, D, N], the sums of dt [R, D], the gradient of the tail's
 * start state [D, N], and per-row sums of dA [R + 1, D, N], dD and
 * ddelta_bias [R + 1, D] (the view's rows, then the tail's). */
enum { SJ_SPLIT_ST, SJ_SPLIT_LAST, SJ_SPLIT_FWD_DT, SJ_SPLIT_FWD_PARTS };
enum { SJ_SPLIT_STARTS, SJ_SPLIT_LOCAL, SJ_SPLIT_ENTER, SJ_SPLIT_BWD_DT, SJ_SPLIT_TAIL, SJ_SPLIT_DA, SJ_SPLIT_DD, SJ_SPLIT_DB, SJ_SPLIT_BWD_PARTS };
typedef struct sj_scan_split {
    int64_t S, Ls, tail;
    size_t part[SJ_SPLIT_BWD_PARTS], bytes;
} sj_scan_split;

static inline uint64_t sj_dptr(const void *p) { return (uint64_t)(uintptr_t)p; }

static inline sj_dim3 sj_scan_flat_grid(int64_t items)
{
    int64_t blocks = sj_ceil_div(items, SJ_SCAN_FLAT_THREADS);
    sj_dim3 g = {(unsigned)(blocks < SJ_SCAN_FLAT_MAX_GRID ? blocks : SJ_SCAN_FLAT_MAX_GRID), 1, 1};
    return g;
}


/* scan_launch.c */

/* Bytes of the checkpoint of sh's rows. */
size_t sj_scan_checkpoint_bytes(const sj_scan_extents *sh);

/* The backward's workspace without the split's part (which follows it,
 * at `total`, where the backward splits). */
sj_scan_bwd_layout sj_scan_bwd_layout_of(const ssmjit_selective_scan_desc *desc, const sj_scan_extents *sh);

/* The forward kernels' arguments of the inputs `in` (sh's activations)
 * over sh's rows. */
sj_scan_params sj_scan_params_of(const ssmjit_selective_scan_desc *desc, const ssmjit_selective_scan_inputs *in,
                                 const sj_scan_extents *sh);

/* The modelled cycles a chunk of the busiest SM for the forward over
 * sh's rows in the fastest shape (forced ones aside), -1 where none fits. */
double sj_scan_fwd_chunk_cycles(const sj_device_props *pr, const sj_scan_extents *sh);

/* The forward (module scan_fwd) over sh's rows, its launch shape chosen
 * for them. */
ssmjit_status sj_scan_launch_fwd(ssmjit_context *ctx, ssmjit_dtype dtype, const sj_scan_extents *sh, sj_scan_params *p,
                                 sj_scan_stream *ss);

/* Whether the forward over sh's rows runs the token-parallel kernel
 * where it does not split (packed: with cu_seqlens), the rule stated at
 * its definition. */
int sj_scan_fwd_token_parallel(const ssmjit_context *ctx, const sj_scan_extents *sh, int packed);

/* The token-parallel forward's tokens a lane over sh's rows (8 or 4). */
int sj_scan_fwd_tp_tokens(const ssmjit_context *ctx, const sj_scan_extents *sh);

/* The token-parallel forward (module scan_fwd) over sh's rows. */
ssmjit_status sj_scan_launch_fwd_tp(ssmjit_context *ctx, ssmjit_dtype dtype, const sj_scan_extents *sh,
                                    sj_scan_params *p, sj_scan_stream *ss);

/* The checkpoint's states alone (module scan_bwd's scan_states), where
 * the backward was given none. */
ssmjit_status sj_scan_launch_states(ssmjit_context *ctx, ssmjit_dtype dtype, const sj_scan_extents *sh, sj_scan_params *p,
                                    sj_scan_stream *ss);

/* Kernel `kernel` of module scan_bwd, suffixed with the dtype's name
 * when suffix is set. */
ssmjit_status sj_scan_bwd_kernel(ssmjit_context *ctx, const char *kernel, const char *suffix, CUfunction *fn);

/* The backward over the rows of sh (the op's, or a split's view or
 * tail): the scan kernels over p (inputs, gradients, states and the
 * per-row partials set), then dB and dC (at dB, dC) from their per-block
 * partials in ws. */
ssmjit_status sj_scan_bwd_rows(ssmjit_context *ctx, ssmjit_dtype dtype, const sj_scan_extents *sh, sj_scan_params *p,
                               char *ws, const sj_scan_bwd_layout *w, uint64_t dB, int64_t sdB, uint64_t dC, int64_t sdC,
                               sj_scan_stream *ss);

/* a's dA, dD, ddelta_bias from `rows` rows of per-row partials (zeros
 * when there are none). */
ssmjit_status sj_scan_reduce_params(ssmjit_context *ctx, const ssmjit_selective_scan_bwd_args *a,
                                    const sj_scan_extents *sh, int64_t rows, const char *pdA, const char *pdD,
                                    const char *pdb, sj_scan_stream *ss);

/* scan_split.c */

/* The split of the forward (bwd = 0) or backward that the model times
 * fastest on ctx's device (S = 1: none); it depends on desc alone (and
 * the device), so the size queries give it. */
sj_scan_split sj_scan_split_plan(ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc, const sj_scan_extents *sh,
                              int bwd);

/* The forward's split: the plan where the caller gave a workspace,
 * S = 1 without one; an error where it does not hold the plan's. */
ssmjit_status sj_scan_fwd_split_given(ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc,
                                      const ssmjit_selective_scan_fwd_args *a, const sj_scan_extents *sh,
                                      const char *op, sj_scan_split *sp);

/* The forward over plan sp's segments, in a's workspace. */
ssmjit_status sj_scan_fwd_split(ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc,
                                const ssmjit_selective_scan_fwd_args *a, const sj_scan_extents *sh,
                                const sj_scan_split *sp, sj_scan_stream *ss);

/* The backward over plan sp's segments: p holds the op's inputs,
 * gradients, checkpoint and d_final_state, ws and w its workspace, sw
 * the split's part of it; the per-row partials go to the split's part,
 * then into a's dA, dD and ddelta_bias. */
ssmjit_status sj_scan_bwd_split(ssmjit_context *ctx, const ssmjit_selective_scan_desc *desc,
                                const ssmjit_selective_scan_bwd_args *a, const sj_scan_extents *sh,
                                const sj_scan_params *p, char *ws, const sj_scan_bwd_layout *w, const sj_scan_split *sp,
                                char *sw, sj_scan_stream *ss);

#endif
