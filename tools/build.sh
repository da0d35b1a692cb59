#!/bin/sh
# Builds libssmjit and the ssmjit tool, then runs the main job: compiling
# every kernel module into the cache (`ssmjit prewarm`, arguments passed on).
set -e
cd "$(dirname "$0")/.."
tools/deps.sh
[ -f build/build.ninja ] || meson setup build
ninja -C build
build/ssmjit prewarm "$@"
