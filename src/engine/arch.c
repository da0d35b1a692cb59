#include "arch.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"

ssmjit_status sj_arch_parse(const char *s, int *arch)
{
    if (!s)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "architecture string is NULL");
    const char *p = s;
    if (!strncmp(p, "sm_", 3))
        p += 3;
    else if (!strncmp(p, "compute_", 8))
        p += 8;
    size_t n = strlen(p);
    if ((n != 2 && n != 3) || strspn(p, "0123456789") != n || p[0] == '0')
        return sj_error(SSMJIT_ERR_INVALID_ARG,
                        "'%s' is not an architecture (expected sm_XY, e.g. sm_80 or sm_90)", s);
    int v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (p[i] - '0');
    *arch = v;
    return SSMJIT_OK;
}

ssmjit_status sj_arch_target(const sj_toolchain *tc, int want, int device_arch, int *arch, int *ptx)
{
    int cap = sj_toolchain_cap(tc, want);
    if (!cap)
        return sj_error(SSMJIT_ERR_UNSUPPORTED,
                        "NVRTC %d.%d supports no architecture at or below sm_%d (oldest: sm_%d)",
                        tc->major, tc->minor, want, tc->num_archs ? tc->archs[0] : 0);
    *arch = cap;
    /* A CUBIN for sm_XY runs on devices of major X with minor >= Y. */
    *ptx = !(cap / 10 == device_arch / 10 && cap % 10 <= device_arch % 10);
    return SSMJIT_OK;
}

void sj_arch_name(int arch, int ptx, char *out, size_t cap)
{
    snprintf(out, cap, "%s_%d", ptx ? "compute" : "sm", arch);
}
