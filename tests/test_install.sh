#!/bin/sh
# `meson install` into a scratch root gives ssmjit.h, libssmjit.so with its
# soname, and ssmjit.pc; the README's C examples then build with
# `cc app.c $(pkg-config --cflags --libs ssmjit)` and runs.  APP_CFLAGS
# (set for sanitizer builds) is added to that command.
set -eu
build="$1"
readme="$2"
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
