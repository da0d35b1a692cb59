#!/bin/sh
# The tools use the library as its users do: tools/*.c and tools/*.h
# include, of the project's headers, only ssmjit.h, the tools' one internal
# header src/ssmjit_internal.h and tools/' own headers; that header includes
# only ssmjit.h and standard headers.  The bench's utilities
# (tools/bench_util.c) use no part of the bench, so its files call one way:
# cli_bench.c -> bench_*.c -> bench_util.c.
root="$1"
status=0
for f in "$root"/tools/*.c "$root"/tools/*.h; do
    for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
        case "$h" in
        ssmjit.h | ssmjit_internal.h) ;;
        *) if [ ! -f "$root/tools/$h" ]; then
               echo "${f#"$root"/}: includes \"$h\", neither ssmjit.h, ssmjit_internal.h nor a tools/ header"
               status=1
           fi ;;
        esac
    done
done
internal="$root/src/ssmjit_internal.h"
bad=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$internal" | grep -vx 'ssmjit.h')
if [ -n "$bad" ]; then
    echo "src/ssmjit_internal.h includes more than ssmjit.h and standard headers:"; echo "$bad"; status=1
fi
bad=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$root/tools/bench_util.c" |
      grep -vx -e 'bench.h' -e 'ssmjit.h' -e 'ssmjit_internal.h')
if [ -n "$bad" ]; then
    echo "tools/bench_util.c includes more than bench.h and the library's headers:"; echo "$bad"; status=1
fi
[ $status -eq 0 ] && echo "ok: the tools include only ssmjit.h, ssmjit_internal.h and their own headers"
exit $status
