/* Environment queries that need no context. */
#include <stdio.h>
#include <string.h>

#include "cuda/driver.h"
#include "base/error.h"
#include "kernels_embedded.h"
#include "cuda/nvrtc_loader.h"
#include "toolchain.h"

SSMJIT_API ssmjit_status ssmjit_driver_version(int *version)
{
    const sj_driver *d;
    if (!version)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_driver_version: version is NULL");
    ssmjit_status st = sj_driver_get(&d);
    return st == SSMJIT_OK ? SJ_CU(d, DriverGetVersion, version) : st;
}

SSMJIT_API ssmjit_status ssmjit_device_count(int *count)
{
    const sj_driver *d;
    if (!count)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_device_count: count is NULL");
    int n = 0;
    ssmjit_status st = sj_driver_get(&d);
    if (st == SSMJIT_ERR_NO_DEVICE) {
        sj_error_clear();
        st = SSMJIT_OK;
    } else if (st == SSMJIT_OK) {
        st = SJ_CU(d, DeviceGetCount, &n);
    }
    if (st == SSMJIT_OK)
        *count = n;
    return st;
}

SSMJIT_API ssmjit_status ssmjit_device_get_info(int ordinal, ssmjit_device_info *out)
{
    const sj_driver *d;
    if (!out)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_device_get_info: out is NULL");
    if (ordinal < 0)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_device_get_info: ordinal = %d is negative", ordinal);
    int count = 0;
    ssmjit_status st = ssmjit_device_count(&count);
    if (st != SSMJIT_OK)
        return st;
    if (ordinal >= count)
        return sj_error(SSMJIT_ERR_NO_DEVICE, "device %d requested, but there are %d", ordinal, count);
    /* Filled aside: *out is written only on success. */
    ssmjit_device_info info;
    memset(&info, 0, sizeof info);
    st = sj_driver_get(&d);
    CUdevice dev;
    if (st == SSMJIT_OK)
        st = SJ_CU(d, DeviceGet, &dev, ordinal);
    if (st == SSMJIT_OK)
        st = SJ_CU(d, DeviceGetName, info.name, (int)sizeof info.name, dev);
    if (st == SSMJIT_OK)
        st = SJ_CU(d, DeviceGetAttribute, &info.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    if (st == SSMJIT_OK)
        st = SJ_CU(d, DeviceGetAttribute, &info.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    if (st == SSMJIT_OK)
        st = SJ_CU(d, DeviceGetAttribute, &info.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    if (st == SSMJIT_OK)
        st = SJ_CU(d, DeviceTotalMem, &info.total_memory, dev);
    if (st == SSMJIT_OK)
        *out = info;
    return st;
}

SSMJIT_API ssmjit_status ssmjit_nvrtc_version(int *major, int *minor, const char **path)
{
    const sj_nvrtc *n;
    if (!major || !minor)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_nvrtc_version: major or minor is NULL");
    ssmjit_status st = sj_nvrtc_get(&n);
    if (st != SSMJIT_OK)
        return st;
    n->Version(major, minor);
    if (path)
        *path = n->path;
    return SSMJIT_OK;
}

SSMJIT_API ssmjit_status ssmjit_nvrtc_supported_archs(int *archs, size_t cap, size_t *count)
{
    if (!count || (cap && !archs))
        return sj_error(SSMJIT_ERR_INVALID_ARG, "ssmjit_nvrtc_supported_archs: %s is NULL",
                        count ? "archs" : "count");
    sj_toolchain tc;
    ssmjit_status st = sj_toolchain_get(NULL, 1, &tc);
    if (st != SSMJIT_OK)
        return st;
    for (size_t i = 0; i < cap && i < (size_t)tc.num_archs; i++)
        archs[i] = tc.archs[i];
    *count = (size_t)tc.num_archs;
    return SSMJIT_OK;
}

SSMJIT_API size_t ssmjit_module_count(void) { return SJ_MODULE_COUNT; }

SSMJIT_API const char *ssmjit_module_name(size_t i)
{
    return i < SJ_MODULE_COUNT ? sj_modules[i].name : NULL;
}

SSMJIT_API size_t ssmjit_unit_count(void) { return SJ_UNIT_COUNT; }

SSMJIT_API const char *ssmjit_unit_name(size_t i) { return i < SJ_UNIT_COUNT ? sj_units[i].kernel : NULL; }

SSMJIT_API size_t ssmjit_unit_module(size_t i) { return i < SJ_UNIT_COUNT ? (size_t)sj_units[i].module : (size_t)-1; }

SSMJIT_API int ssmjit_unit_default_fast_math(size_t i)
{
    return i < SJ_UNIT_COUNT ? !sj_modules[sj_units[i].module].backward : -1;
}

SSMJIT_API int ssmjit_unit_specialised(size_t i)
{
    return i < SJ_UNIT_COUNT ? sj_modules[sj_units[i].module].specialised : -1;
}
