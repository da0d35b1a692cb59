/* Internals of the selective-scan ops that tests reach. */
#ifndef SSMJIT_OPS_SCAN_H
#define SSMJIT_OPS_SCAN_H

#include <stdint.h>

#include "ssmjit.h"

/* Forces the launch shape of the forward scan kernels: ns states per
 * thread (4, 8 or 16; 0 restores the automatic choice) and bd channels
 * per block (a power of two, 16 to 128; 0 the automatic choice), so
 * that tests reach every variant and the benchmark can compare them.
 * Either part is ignored where it does not fit N (more than 256 threads
 * a block).  Not
 * thread-safe: for tests and the benchmark only. */
void sj_scan_force_shape(int ns, int bd);

/* The launch shape the forward picks for B sequences of D channels and N
 * states on ctx's device (forced parts included): ns states a thread,
 * groups threads a channel (groups * ns >= N), bd channels a block of
 * groups * bd threads. */
typedef struct sj_scan_fwd_shape {
    int ns, groups, bd;
} sj_scan_fwd_shape;

sj_scan_fwd_shape sj_scan_fwd_shape_for(const ssmjit_context *ctx, int64_t B, int64_t D, int64_t N);

/* Dynamic shared memory, in bytes, of a forward block of that shape. */
unsigned sj_scan_fwd_smem_bytes(const sj_scan_fwd_shape *f);

/* The forward kernels' __launch_bounds__: no block may have more threads
 * (kernels_src/scan_fwd.cu): 256, and 128 for 4 states a thread. */
#define SJ_SCAN_FWD_MAX_THREADS 256
#define SJ_SCAN_FWD4_MAX_THREADS 128

/* The most threads a forward block of ns states a thread may have: the
 * bound of the scan_fwd_ns<ns>_* kernels. */
int sj_scan_fwd_max_threads(int ns);

#endif
