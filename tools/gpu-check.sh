#!/bin/bash
# The GPU session's one command: unpack cmocka (carried as Debian packages
# in .device-debs), build, run every test, then the benchmark.  Logs go
# to $OUT, compiled kernels to $SSMJIT_CACHE_DIR (defaults in
# tools/gpu-env.sh); the last lines are a short summary.
#   tools/gpu-check.sh [--no-bench] [--bench-only] [--bench "ARGS"]
#                      [--sanitize TOOL] [--each "PROGRAMS" [--jobs N]]
#                      [--keep-build] [meson test args...]
# --bench "ARGS" passes ARGS to `ssmjit bench` (e.g. "--only scan").
# --sanitize TOOL runs the tests under compute-sanitizer --tool TOOL
# (memcheck, racecheck, ...), any error failing the test, with 20 times
# the usual timeouts; no benchmark then.
# --each "PROGRAMS" runs every test of the named test programs (e.g.
# "test_gpu_scan test_gpu_conv") in its own process, N (default 8) at a
# time, instead of meson test: how a slow sanitizer gets through them.
# --keep-build reuses build/ from an earlier call in the same session.
set -u
cd "$(dirname "$0")/.."
. tools/gpu-env.sh
mkdir -p /tmp/cm
for f in .device-debs/*.deb; do dpkg -x "$f" /tmp/cm; done
export PKG_CONFIG_SYSROOT_DIR=/tmp/cm PKG_CONFIG_PATH=/tmp/cm/usr/lib/x86_64-linux-gnu/pkgconfig
export LD_LIBRARY_PATH=/tmp/cm/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bench=1 tests=1 bench_args="" wrap=() sanitizer="" each="" jobs=8 keep=0
while [ $# -gt 0 ]; do
    case "$1" in
        --no-bench) bench=0; shift ;;
        --bench-only) tests=0; shift ;;
        --bench) bench_args=$2; shift 2 ;;
        --sanitize)
            sanitizer="compute-sanitizer --tool $2 --error-exitcode 1 --print-limit 20"
            wrap=(--timeout-multiplier 20 --wrapper "$sanitizer")
            bench=0; shift 2 ;;
        --each) each=$2; bench=0; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --keep-build) keep=1; shift ;;
        *) break ;;
    esac
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader > "$OUT/gpu.txt" 2>&1
if [ $keep = 0 ] || [ ! -f build/build.ninja ]; then
    rm -rf build
    meson setup build > "$OUT/setup.log" 2>&1 || { tail -30 "$OUT/setup.log"; exit 1; }
fi
ninja -C build > "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
summary=""
if [ -n "$each" ]; then
    mkdir -p "$OUT/each"
    build/ssmjit prewarm --jobs 16 > "$OUT/prewarm.log" 2>&1
    for prog in $each; do
        # every test, also where one line holds several
        grep -o 'cmocka_unit_test([A-Za-z0-9_]*)' "tests/$prog.c" |
            sed "s/cmocka_unit_test(\(.*\))/$prog \1/"
    done | OUT=$OUT SANITIZER=$sanitizer xargs -P "$jobs" -L 1 sh -c '
        log=$OUT/each/$0.$1.log
        SSMJIT_TEST_FILTER=$1 $SANITIZER build/tests/$0 > "$log" 2>&1
        rc=$?
        result=$(grep -Eo "(PASSED|FAILED|SKIPPED) +\] [0-9]+ test" "$log" | head -1)
        echo "$0 $1 rc=$rc [$result] $(grep -Eo "(ERROR|RACECHECK|SYNCCHECK|INITCHECK) SUMMARY.*" "$log" | tail -1)"' \
        > "$OUT/each.txt"
    summary=$(sort "$OUT/each.txt")
    # one archive: the machine returns only so many files
    tar -czf "$OUT/each-logs.tar.gz" -C "$OUT" each && rm -rf "$OUT/each"
    tests=0
fi
if [ $tests = 1 ]; then
    meson test -C build --print-errorlogs --num-processes 4 "${wrap[@]}" "$@" > "$OUT/test.log" 2>&1
    # under a wrapper meson names the log after it (testlog-compute-sanitizer.txt)
    cp build/meson-logs/testlog*.txt "$OUT/" 2>/dev/null
    summary=$(grep -E "^ *[0-9]+/[0-9]+ " "$OUT/test.log" | sed 's/^ *//')
fi
if [ $bench = 1 ]; then
    build/ssmjit prewarm --jobs 16 > "$OUT/prewarm.log" 2>&1
    tail -1 "$OUT/prewarm.log"
    build/ssmjit bench $bench_args > "$OUT/bench.log" 2>&1
    cat "$OUT/bench.log"
fi
cat "$OUT/gpu.txt"
echo "$summary"
if [ -n "$each" ]; then
    # every test passed (or skipped) in its own process; a failed one can
    # print "[  PASSED  ] 0 test"
    ! grep -Eqv "rc=0 \[(PASSED  |SKIPPED )\] 1 test" "$OUT/each.txt"
else
    grep -E "^(Ok|Fail|Skipped|Timeout):" "$OUT/test.log" 2>/dev/null
    # a failed test's own lines, here in the summary: the machine returns
    # only so many files, and a failure seen once may not come again; with
    # them the random seed the test printed last (SSMJIT_TEST_SEED replays it)
    awk '/^# random seed/ { seed = $0 }
         { ring[NR % 5] = $0 }
         /\[ +(ERROR|LINE|FAILED) +\]/ {
             if (seed != shown) { print seed; shown = seed }
             for (i = NR - 4; i <= NR; i++) if (i > done && i > 0) print ring[i % 5]
             done = NR
         }' "$OUT/test.log" 2>/dev/null | tail -40
fi
