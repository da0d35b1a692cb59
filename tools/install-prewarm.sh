#!/bin/sh
# Run by `meson install` when -Dprewarm_archs is set: compiles every kernel
# for those architectures with the installed `ssmjit prewarm` into the
# library's read-only cache layer, then makes the layer readable by every
# user and writable by none but its owner (the library trusts nothing else).
#   install-prewarm.sh ARCHS BINARY LAYER
# BINARY and LAYER are the paths under the prefix; both are looked up under
# DESTDIR when it is set.
set -eu
archs="$1"
binary="$2"
layer="$3"
# Meson hands scripts the destdir-prefixed prefix; DESTDIR is what is left
# of it once the prefix is taken off (this also covers a relative DESTDIR).
destdir="${DESTDIR:-}"
if [ -n "${MESON_INSTALL_DESTDIR_PREFIX:-}" ] && [ -n "${MESON_INSTALL_PREFIX:-}" ]; then
    destdir="${MESON_INSTALL_DESTDIR_PREFIX%"$MESON_INSTALL_PREFIX"}"
fi
binary="$destdir$binary"
layer="$destdir$layer"
[ -x "$binary" ] || { echo "install-prewarm: $binary is not installed" >&2; exit 1; }
echo "install-prewarm: compiling kernels for $archs into $layer"
umask 022
mkdir -p "$layer"
# The layer is written on purpose, whatever the installer's own cache
# settings say, and must never be trimmed by the size cap.
SSMJIT_CACHE=rw SSMJIT_CACHE_MAX_BYTES=0 SSMJIT_QUIET=1 \
    "$binary" prewarm --arch "$archs" --cache-dir "$layer"
find "$layer" -type d -exec chmod 0755 {} +
find "$layer" -type f -exec chmod 0644 {} +
