/* Forward of the selective scan (module "scan_fwd"): y and, on request, the
 * final states and the checkpoint the backward starts its chunks from.
 * The scan itself is sj_scan_fwd in scan_common.cuh; kernels are
 * scan_fwd_ns<NS>_<dtype> for NS = 4, 8, 16 states per thread. */
#include "scan_common.cuh"

#define SJ_SCAN_FWD_KERNELS(T, sfx, unused)          \
    SJ_SCAN_FWD_KERNEL(scan_fwd, true, 4, T, sfx)    \
    SJ_SCAN_FWD_KERNEL(scan_fwd, true, 8, T, sfx)    \
    SJ_SCAN_FWD_KERNEL(scan_fwd, true, 16, T, sfx)

SJ_FOR_EACH_DTYPE(SJ_SCAN_FWD_KERNELS, 0)
