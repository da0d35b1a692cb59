/* Architecture strings and the choice of what to compile for a device. */
#ifndef SSMJIT_ARCH_H
#define SSMJIT_ARCH_H

#include "toolchain.h"
#include "ssmjit.h"

/* Parses "sm_80", "sm_90", "compute_86", "80" into 80 (two or three digits:
 * "sm_100" is 100).  Arch-specific suffixes ("sm_90a") are rejected: their
 * code runs on one exact chip only.  SSMJIT_ERR_INVALID_ARG otherwise. */
ssmjit_status sj_arch_parse(const char *s, int *arch);

/* What a device of compute capability `device_arch` (major*10+minor) gets
 * from this NVRTC: the newest supported arch not above `want` (the device's,
 * or SSMJIT_ARCH's), as CUBIN when that runs on the device (same major),
 * else PTX for the driver to JIT-compile.  SSMJIT_ERR_UNSUPPORTED when NVRTC
 * supports nothing that old. */
ssmjit_status sj_arch_target(const sj_toolchain *tc, int want, int device_arch, int *arch, int *ptx);

/* "sm_90" or "compute_90". */
void sj_arch_name(int arch, int ptx, char *out, size_t cap);

#endif
