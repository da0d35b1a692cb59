#!/bin/sh
# The shared library exports only ssmjit_ symbols, carries a soname, and
# links neither the CUDA driver nor NVRTC (both are opened with dlopen).
lib="$1"
status=0
bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | grep -v '^ssmjit_' || true)
if [ -n "$bad" ]; then
    echo "exported symbols without the ssmjit_ prefix:"; echo "$bad"; status=1
fi
count=$(nm -D --defined-only "$lib" | awk '$2 == "T"' | grep -c ' ssmjit_')
if [ "$count" -lt 20 ]; then
    echo "only $count ssmjit_ functions exported"; status=1
fi
needed=$(readelf -d "$lib" | grep NEEDED)
if echo "$needed" | grep -Eq 'libcuda|libnvrtc|libcudart'; then
    echo "links a CUDA library:"; echo "$needed"; status=1
fi
if ! readelf -d "$lib" | grep -q 'SONAME.*libssmjit\.so\.0'; then
    echo "no soname libssmjit.so.0"; status=1
fi
[ $status -eq 0 ] && echo "ok: $count ssmjit_ functions exported, no CUDA library linked"
exit $status
