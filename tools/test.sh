#!/bin/sh
# Builds (if needed) and runs every test.  GPU tests skip themselves on a
# machine without a GPU.
set -e
cd "$(dirname "$0")/.."
tools/deps.sh
[ -f build/build.ninja ] || meson setup build
meson test -C build --print-errorlogs "$@"
