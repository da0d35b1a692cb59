/* Internals of the selective-scan ops that tests reach. */
#ifndef SSMJIT_OPS_SCAN_H
#define SSMJIT_OPS_SCAN_H

/* Forces the states per thread of the forward scan kernels (4, 8 or 16; 0
 * restores the automatic choice), so that tests reach every variant.  A
 * value too small for N (more state groups than a block holds) is
 * ignored.  Not
 * thread-safe: for tests only. */
void sj_scan_force_states_per_thread(int ns);

#endif
