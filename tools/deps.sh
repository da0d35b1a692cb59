#!/bin/sh
# Installs the Debian packages the build and tests need, when missing.
missing=""
for p in meson ninja-build pkg-config libcmocka-dev gcc python3; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "ssmjit: please install:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq && apt-get install -y -qq $missing >/dev/null
