/* Internals of the selective-scan ops that tests reach. */
#ifndef SSMJIT_OPS_SCAN_H
#define SSMJIT_OPS_SCAN_H

/* Forces the launch shape of the forward scan kernels: ns states per
 * thread (4, 8 or 16; 0 restores the automatic choice) and bd channels
 * per block (a power of two, 16 to 128; 0 the automatic choice), so
 * that tests reach every variant and the benchmark can compare them.
 * Either part is ignored where it does not fit N (more than 256 threads
 * a block).  Not
 * thread-safe: for tests and the benchmark only. */
void sj_scan_force_shape(int ns, int bd);

#endif
