/* Forward of the selective scan (module "scan_fwd"): y and, on request, the
 * final states and the checkpoint the backward starts its chunks from.
 * The scan itself is sj_scan_fwd in scan_common.cuh; kernels are
 * scan_fwd_ns<NS>_<dtype> for NS = 4, 8, 16 states per thread. */
#include "scan_common.cuh"

/* Blocks of up to 16 state groups of 32 channels (8 with 8 states per
 * thread, so that variant keeps 255 registers): fwd_max_groups() in
 * src/ops_scan.c. */
#define SJ_SCAN_FWD_KERNELS(T, sfx, unused)             \
    SJ_SCAN_FWD_KERNEL(scan_fwd, true, 4, 512, T, sfx)  \
    SJ_SCAN_FWD_KERNEL(scan_fwd, true, 8, 256, T, sfx)  \
    SJ_SCAN_FWD_KERNEL(scan_fwd, true, 16, 512, T, sfx)

SJ_FOR_EACH_DTYPE(SJ_SCAN_FWD_KERNELS, 0)
