#!/bin/sh
# The shared library exports only ssmjit_ symbols, carries a soname, and
# links neither the CUDA driver nor NVRTC (both are opened with dlopen).
# Given the public header too, the functions it declares SSMJIT_API are
# exactly the ones exported: none missing, none left over from an old API.
lib="$1"
header="${2:-}"
status=0
bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | grep -v '^ssmjit_' || true)
if [ -n "$bad" ]; then
    echo "exported symbols without the ssmjit_ prefix:"; echo "$bad"; status=1
fi
count=$(nm -D --defined-only "$lib" | awk '$2 == "T"' | grep -c ' ssmjit_')
if [ "$count" -lt 20 ]; then
    echo "only $count ssmjit_ functions exported"; status=1
fi
if [ -n "$header" ]; then
    declared=$(grep -o 'SSMJIT_API[^(]*(' "$header" | sed -n 's/.*[ *]\(ssmjit_[a-z0-9_]*\)($/\1/p' | sort -u)
    exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}' | grep '^ssmjit_' | sort -u)
    missing=$(for f in $declared; do echo "$exported" | grep -qx "$f" || echo "$f"; done)
    extra=$(for f in $exported; do echo "$declared" | grep -qx "$f" || echo "$f"; done)
    if [ -z "$declared" ]; then
        echo "no SSMJIT_API function found in $header"; status=1
    fi
    if [ -n "$missing" ]; then
        echo "declared in $header but not exported:"; echo "$missing"; status=1
    fi
    if [ -n "$extra" ]; then
        echo "exported but not declared in $header:"; echo "$extra"; status=1
    fi
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
