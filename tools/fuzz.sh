#!/bin/sh
# Builds the libFuzzer targets of tests/fuzz with clang (ASan and UBSan on)
# in build-fuzz and runs each for SECONDS (default 60), starting from its
# committed corpus.  New inputs go to a scratch directory, never into the
# source tree; a crash leaves its input in build-fuzz/artifacts/<target>/:
# add it to tests/fuzz/corpus/<target>/ (every build then replays it as a
# regression test) and fix the bug.  Writes one line "<target> ok|failed"
# per target to build-fuzz/fuzz-results; exits nonzero if any failed.
set -u
cd "$(dirname "$0")/.."
seconds=${1:-60}
rm -f build-fuzz/fuzz-results

# Debian ships libFuzzer's runtime apart from clang.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n; }' > "$probe/f.c"
if ! clang -fsanitize=fuzzer "$probe/f.c" -o "$probe/f" 2>/dev/null; then
    major=$(clang -dumpversion | cut -d. -f1)
    if [ "$(id -u)" != 0 ]; then
        echo "ssmjit: clang has no libFuzzer runtime: install libclang-rt-$major-dev" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "libclang-rt-$major-dev" >/dev/null ||
        apt-get install -y -qq "libclang-common-$major-dev" >/dev/null
    clang -fsanitize=fuzzer "$probe/f.c" -o "$probe/f" || exit 1
fi

[ -f build-fuzz/build.ninja ] ||
    CC=clang meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
        -Dbuildtype=debugoptimized >/dev/null || exit 1
meson compile -C build-fuzz >/dev/null || exit 1

status=0
targets=0
: > build-fuzz/fuzz-results
for exe in build-fuzz/tests/fuzz/fuzz_*; do
    [ -f "$exe" ] && [ -x "$exe" ] || continue
    name=${exe##*/fuzz_}
    targets=$((targets + 1))
    scratch="$probe/$name"
    artifacts="build-fuzz/artifacts/$name"
    mkdir -p "$scratch" "$artifacts"
    echo "fuzz_$name: $seconds s from tests/fuzz/corpus/$name"
    if "$exe" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$artifacts/" "$scratch" "tests/fuzz/corpus/$name" > "$artifacts.log" 2>&1; then
        grep -E '^stat::number_of_executed_units|^Done' "$artifacts.log"
        echo "$name ok" >> build-fuzz/fuzz-results
    else
        tail -40 "$artifacts.log"
        echo "fuzz_$name FAILED: the input is in $artifacts/; add it to tests/fuzz/corpus/$name/"
        echo "$name failed" >> build-fuzz/fuzz-results
        status=1
    fi
done
[ "$targets" -gt 0 ] || { echo "no fuzz target was built"; echo "build failed" >> build-fuzz/fuzz-results; status=1; }
exit $status
