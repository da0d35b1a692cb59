#!/bin/sh
# `ssmjit --help` lists every environment variable README.md gives for the
# library and the CLI: each name in the README's "## Environment" table, and
# each name the README writes as a setting (`NAME=...` or `$NAME`) anywhere,
# except those of the build and the test suite named below.  Fails naming
# each one the help lacks.
cli="$1"
readme="$2"
# Set for the build (meson's search for cuda.h) or the test suite alone.
not_ours='CUDA_PATH SSMJIT_SOAK_LAUNCHES'

help=$("$cli" --help) || { echo "ssmjit --help failed"; exit 1; }
# The names the help's environment section lists: the first word of each of
# its lines, up to any '='.
listed=$(printf '%s\n' "$help" | sed -n '/^environment/,/^$/p' | sed -n 's/^ *\([A-Z][A-Z0-9_]*\).*/\1/p')

table=$(sed -n '/^## Environment/,/^## /p' "$readme" | sed -n 's/^| `\([A-Z][A-Z0-9_]*\).*/\1/p')
settings=$(grep -o '`\$[A-Z][A-Z0-9_]*\|`[A-Z][A-Z0-9_]*=' "$readme" | tr -d '`$=')
wanted=$(printf '%s\n%s\n' "$table" "$settings" | sort -u)

status=0
count=0
for v in $wanted; do
    case " $not_ours " in *" $v "*) continue ;; esac
    count=$((count + 1))
    if ! printf '%s\n' "$listed" | grep -qx "$v"; then
        echo "README.md names $v; ssmjit --help does not list it"
        status=1
    fi
done
if [ "$count" -lt 10 ]; then
    echo "found only $count variables in $readme: has its Environment table moved?"
    status=1
fi
[ $status -eq 0 ] && echo "ok: ssmjit --help lists all $count variables of README.md"
exit $status
