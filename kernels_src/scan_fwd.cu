/* Forward of the selective scan (module "scan_fwd"): y and, on request, the
 * final states and the checkpoint the backward starts its chunks from.
 * The scan itself is sj_scan_fwd in scan_common.cuh; kernels are
 * scan_fwd_ns<NS>_<dtype> for NS = 4, 8, 16 states per thread, and
 * scan_fwd_tp<K>_<dtype> (scan_fwd_tp.cuh), which spreads a channel's
 * tokens over a warp, K a lane. */
#include "scan_common.cuh"
#include "scan_fwd_tp.cuh"

/* Blocks of at most 256 threads (fwd_shape_for() in src/ops/scan_launch.c).  With
 * 16 states per thread one block per SM may keep 255 registers a thread;
 * with 8 (twice the threads per channel) two blocks, 128 registers, so
 * that the reference shape is resident at once.  4 states a thread serve
 * where the grid leaves few warps an SM (D = 1536 at B = 8: 3 blocks of
 * 128 threads on most SMs): blocks of at most 128 threads, three an SM,
 * leave up to 168 registers to the recurrence (ptxas takes about 160),
 * which ran it 2-3% faster than at 128 (bench/NOTES.md); their blocks
 * are at most 64 channels wide, so that three fit 100 KB of shared memory
 * (sm_86, sm_89). */
#define SJ_SCAN_FWD_KERNELS(T, sfx, unused)                    \
    SJ_SCAN_FWD_KERNEL(scan_fwd, true, 4, 128, 3, 64, T, sfx)  \
    SJ_SCAN_FWD_KERNEL(scan_fwd, true, 8, 256, 2, 128, T, sfx) \
    SJ_SCAN_FWD_KERNEL(scan_fwd, true, 16, 256, 1, 128, T, sfx)

SJ_FOR_EACH_DTYPE(SJ_SCAN_FWD_KERNELS, 0)

/* For grids too small for those: scan_fwd_tp.cuh. */
SJ_FOR_EACH_DTYPE(SJ_SCAN_FWD_TP_KERNELS, 0)

/* ------------------------------------------------------------------------ */
/* The forward split over L (src/ops/scan_split.c)                          */
/* ------------------------------------------------------------------------ */
/*
 * Each batch row's tokens as S segments of Ls, the segments of all rows
 * R = B S rows of a [R, Ls] view: scan_split_ends finds each one's final
 * state from a zero state (into st), scan_split_carry carries the states
 * across the segments, and scan_fwd scans them from the carried states
 * (scan_common.cuh has the split's kernels).
 */

SJ_SCAN_SPLIT_KERNELS(false)
