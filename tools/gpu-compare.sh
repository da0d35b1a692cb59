#!/bin/bash
# Before and after in one run: `ssmjit bench` of another revision and of
# this tree, built side by side and run in turn on the same GPU, so that
# the machine's drift (2-10% between machines) leaves the comparison alone.
#   tools/gpu-compare.sh prepare REV
#       (where the git history is, no GPU needed) writes REV's files to
#       build-compare/base/, which then goes with this tree to the GPU
#       machine
#   tools/gpu-compare.sh run [--rounds N] -- ARGS...
#       (on the GPU machine) builds build-compare/base/ and this tree
#       without their tests, then runs `ssmjit bench ARGS...` on each in
#       turn, base first, N rounds (default 2); each run's output goes to
#       $OUT/compare-{base,this}-ROUND.log and, each line tagged with its
#       tree and round, to stdout
# The two share one kernel cache ($SSMJIT_CACHE_DIR): its entries are keyed
# by their sources, so each tree compiles only the kernels it changed.
set -u
usage() { sed -n '2,16p' "$0"; exit 2; }
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || usage
case "$1" in
    prepare)
        [ $# = 2 ] || usage
        rm -rf build-compare/base && mkdir -p build-compare/base || exit 1
        git archive --format=tar "$2" | tar -x -C build-compare/base || exit 1
        echo "build-compare/base: $(git rev-parse --short "$2")"
        ;;
    run)
        shift
        rounds=2
        if [ "${1:-}" = --rounds ]; then
            [ $# -ge 2 ] && [ "$2" -ge 1 ] 2>/dev/null || usage
            rounds=$2
            shift 2
        fi
        [ "${1:-}" = -- ] && [ $# -ge 2 ] || usage
        shift
        [ -f build-compare/base/meson.build ] || { echo "no build-compare/base: run 'prepare REV' first" >&2; exit 1; }
        . tools/gpu-env.sh
        for tree in base this; do
            src=build-compare/base
            [ $tree = this ] && src=.
            if [ ! -f build-compare/$tree-build/build.ninja ]; then
                meson setup build-compare/$tree-build "$src" -Dtests=false > "$OUT/compare-$tree-setup.log" 2>&1 ||
                    { tail -20 "$OUT/compare-$tree-setup.log"; exit 1; }
            fi
            ninja -C build-compare/$tree-build ssmjit > "$OUT/compare-$tree-build.log" 2>&1 ||
                { grep -E "error|FAILED" "$OUT/compare-$tree-build.log" | head -20; exit 1; }
        done
        status=0
        for r in $(seq 1 "$rounds"); do
            for tree in base this; do
                log=$OUT/compare-$tree-$r.log
                build-compare/$tree-build/ssmjit bench "$@" > "$log" 2>&1 || status=1
                sed "s/^/$tree $r: /" "$log"
            done
        done
        exit $status
        ;;
    *) usage ;;
esac
