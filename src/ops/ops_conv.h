/* Internals of the causal conv1d ops that tests reach. */
#ifndef SSMJIT_OPS_CONV_H
#define SSMJIT_OPS_CONV_H

/* Threads per block of every conv kernel launch; the 4-tap backward
 * kernels are compiled for at most this (kernels_src/conv_bwd.cu). */
int sj_conv_threads(void);

#endif
