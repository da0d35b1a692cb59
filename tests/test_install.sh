#!/bin/sh
# `meson install` into a scratch root gives ssmjit.h, libssmjit.so with its
# soname, and ssmjit.pc; the README's C examples then build with
# `cc app.c $(pkg-config --cflags --libs ssmjit)` and runs.  APP_CFLAGS
# (set for sanitizer builds) is added to that command.
# Given the source tree (third argument) and where NVRTC is available, a
# fresh build with a scratch prefix and -Dprewarm_archs=sm_90 is installed
# under a DESTDIR: its install-time cache layer must hold one entry per unit
# for sm_90, readable by all, and the library must name it.
set -eu
build="$1"
readme="$2"
src="${3:-}"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
meson install -C "$build" --destdir "$root" --no-rebuild --quiet
pc=$(find "$root" -name ssmjit.pc | head -1)
[ -n "$pc" ] || { echo "no ssmjit.pc installed"; exit 1; }
find "$root" -name ssmjit.h | grep -q . || { echo "no ssmjit.h installed"; exit 1; }
find "$root" -name 'libssmjit.so.0' | grep -q . || { echo "no libssmjit.so.0 installed"; exit 1; }
# the README's C examples, plus a main that only links them and checks a call
sed -n '/^```c$/,/^```$/{/^```/d;p}' "$readme" > "$root/app.c"
cat >> "$root/app.c" <<'C'
#include <string.h>
int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 5)
        return run_silu(NULL, NULL, 0, 0, NULL);
    return strcmp(ssmjit_status_string(SSMJIT_OK), "SSMJIT_OK") != 0;
}
C
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR="$root"
flags=$(pkg-config --cflags --libs ssmjit)
cc -std=c11 -Wall -Werror ${APP_CFLAGS:-} -o "$root/app" "$root/app.c" $flags
LD_LIBRARY_PATH=$(dirname "$(find "$root" -name 'libssmjit.so.0' | head -1)") "$root/app"
echo "ok: installed, README examples built with pkg-config and ran"

# ---- the install-time prewarmed layer --------------------------------------
if [ -z "$src" ]; then
    echo "skip: prewarm layer (no source tree given)"
    exit 0
fi
if ! "$build/ssmjit" info | grep -q '^nvrtc: [0-9]'; then
    echo "skip: prewarm layer (no NVRTC to compile with)"
    exit 0
fi
pre="$root/pre"
prefix="$pre/prefix"
dest="$pre/dest"
mkdir "$pre"
meson setup "$pre/build" "$src" --prefix "$prefix" -Dprewarm_archs=sm_90 -Dtests=false >"$pre/setup.log" 2>&1 ||
    { cat "$pre/setup.log"; exit 1; }
meson compile -C "$pre/build" >"$pre/compile.log" 2>&1 || { cat "$pre/compile.log"; exit 1; }
t0=$(date +%s)
meson install -C "$pre/build" --destdir "$dest" --no-rebuild >"$pre/install.log" 2>&1 ||
    { cat "$pre/install.log"; exit 1; }
echo "# install with -Dprewarm_archs=sm_90: $(( $(date +%s) - t0 )) s"
fail() { echo "$*"; cat "$pre/install.log"; exit 1; }
[ ! -e "$prefix" ] || fail "the install wrote outside DESTDIR, into $prefix"
lib=$(find "$dest" -name 'libssmjit.so.0' | head -1)
[ -n "$lib" ] || fail "no libssmjit.so.0 installed"
libdir=$(dirname "$lib")
layer="$libdir/ssmjit/cubin"
[ -d "$layer" ] || fail "no cache layer at $layer"
case "$layer" in "$dest$prefix"/*) ;; *) fail "layer $layer is not under DESTDIR + prefix";; esac
# The library looks up the layer at its installed path, without DESTDIR.
grep -aqF "${layer#"$dest"}" "$lib" || fail "libssmjit.so does not name its layer ${layer#"$dest"}"
! grep -aqF "$dest" "$lib" || fail "libssmjit.so names the DESTDIR $dest"

# A program built against the installed library says how many units and
# distinct kernel names (labels) prewarm compiles: all but the specialised
# ones, which the models compile with their sizes.
printf '%s\n' \
    '#include <stdio.h>' \
    '#include <string.h>' \
    '#include <ssmjit.h>' \
    'int main(void)' \
    '{' \
    '    size_t n = ssmjit_unit_count(), kernels = 0;' \
    '    size_t shared = 0;' \
    '    for (size_t u = 0; u < n; u++) {' \
    '        if (ssmjit_unit_specialised(u))' \
    '            continue;' \
    '        size_t v = 0;' \
    '        while (ssmjit_unit_specialised(v) || strcmp(ssmjit_unit_name(v), ssmjit_unit_name(u)))' \
    '            v++;' \
    '        kernels += v == u;' \
    '        shared++;' \
    '    }' \
    '    printf("%zu %zu\n", shared, kernels);' \
    '    return n == 0;' \
    '}' > "$pre/units.c"
inc=$(dirname "$(find "$dest" -name ssmjit.h | head -1)")
cc -std=c11 -Wall -Werror -I"$inc" -o "$pre/units" "$pre/units.c" -L"$libdir" -lssmjit
counts=$(LD_LIBRARY_PATH="$libdir" "$pre/units")
units=${counts% *}
kernels=${counts#* }
echo "# $units units, $kernels distinct kernel names"

# One entry per unit, named for sm_90, nothing else but the toolchain record.
n=$(find "$layer" -type f -name '*-sm_90-nvrtc*.cubin' | wc -l)
[ "$n" -eq "$units" ] || fail "$n sm_90 entries in the layer, want $units"
other=$(find "$layer" -type f ! -name '*-sm_90-nvrtc*.cubin' ! -path "$layer/toolchain-*")
[ -z "$other" ] || fail "unexpected files in the layer: $other"
# Readable by every user, writable by none but the owner.
bad=$(find "$libdir/ssmjit" \( -type d ! -perm 0755 \) -o \( -type f ! -perm 0644 \))
[ -z "$bad" ] || fail "not 0755 dirs / 0644 files: $bad"
bad=$(find "$layer" ! -type d ! -type f)
[ -z "$bad" ] || fail "links or special files in the layer: $bad"

# The installed CLI counts every unit for sm_90 without reading the entries,
# and verify finds them all sound, as a user with an empty cache of their own.
cli="$dest$prefix/bin/ssmjit"
empty="$pre/empty-user-cache"
mkdir -m 0700 "$empty"
stats=$(SSMJIT_CACHE_DIR="$empty" "$cli" cache stats --cache-dir "$layer")
echo "$stats" | grep -qx "entries: $units" || fail "stats: $stats"
echo "$stats" | grep -q "^bad entries: 0 " || fail "stats: $stats"
echo "$stats" | grep -Eq "^sm_90-nvrtc[0-9]+\.[0-9]+: $units entries \($kernels units\), " || fail "stats: $stats"
[ "$(echo "$stats" | grep -c -- '-nvrtc[0-9.]*: ')" -eq 1 ] || fail "stats: not one target: $stats"
SSMJIT_CACHE_DIR="$empty" "$cli" cache verify --cache-dir "$layer" | grep -qx "bad entries: 0" ||
    fail "verify found bad entries in the layer"
[ -z "$(ls -A "$empty")" ] || fail "reading the layer wrote into the user's cache"

# Installing again finds every entry there (none is written anew: each
# keeps its inode) and leaves the modes as they were.
find "$layer" -type f -name '*.cubin' -printf '%i %p\n' | sort > "$pre/inodes.before"
meson install -C "$pre/build" --destdir "$dest" --no-rebuild >"$pre/install.log" 2>&1 ||
    { cat "$pre/install.log"; exit 1; }
find "$layer" -type f -name '*.cubin' -printf '%i %p\n' | sort > "$pre/inodes.after"
cmp -s "$pre/inodes.before" "$pre/inodes.after" || fail "a second install wrote entries again"
bad=$(find "$libdir/ssmjit" \( -type d ! -perm 0755 \) -o \( -type f ! -perm 0644 \))
[ -z "$bad" ] || fail "not 0755 dirs / 0644 files after a second install: $bad"
echo "ok: -Dprewarm_archs=sm_90 installed a world-readable layer of $units entries ($kernels kernels)"
