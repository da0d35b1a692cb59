#!/bin/bash
# Before and after in one run: `ssmjit bench` of other revisions and of
# this tree, built side by side and run in turn on the same GPU, so that
# the machine's drift (2-10% between machines) leaves the comparison alone.
#   tools/gpu-compare.sh prepare REV...
#       (where the git history is, no GPU needed) writes each REV's files
#       to build-compare/src-NAME/ (NAME: REV with characters other than
#       letters, digits, '.', '_' and '-' as '-'), which then go with this
#       tree to the GPU machine; revisions prepared earlier are removed
#   tools/gpu-compare.sh run [--rounds N] -- ARGS...
#       (on the GPU machine) builds the prepared revisions and this tree
#       without their tests, then runs `ssmjit bench ARGS...` on each in
#       turn (the revisions in the order prepared, then this tree), N
#       rounds (default 2); each run's output goes to
#       $OUT/compare-NAME-ROUND.log ("this" for this tree) and, each line
#       tagged with its tree and round, to stdout
# The trees share one kernel cache ($SSMJIT_CACHE_DIR): its entries are
# keyed by their sources, so each tree compiles only the kernels it
# changed.  Environment variables reach every tree's runs alike (an
# experiment's switch is ignored by trees without it).
set -u
usage() { sed -n '2,22p' "$0"; exit 2; }
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || usage
case "$1" in
    prepare)
        shift
        [ $# -ge 1 ] || usage
        revs=("$@") names=()
        for rev in "${revs[@]}"; do
            git rev-parse -q --verify "$rev^{commit}" > /dev/null || { echo "not a revision: $rev" >&2; exit 1; }
            name=$(printf '%s' "$rev" | tr -c 'A-Za-z0-9._-' '-')
            # names hold no spaces, so a space-joined list tells a repeat
            [[ " ${names[*]} " != *" $name "* ]] || { echo "two revisions named $name" >&2; exit 1; }
            [ "$name" != this ] || { echo "'this' names this tree; give the revision another way" >&2; exit 1; }
            names+=("$name")
        done
        rm -rf build-compare && mkdir -p build-compare || exit 1
        for i in "${!revs[@]}"; do
            rev=${revs[$i]} name=${names[$i]}
            mkdir build-compare/src-$name || exit 1
            git archive --format=tar "$rev" | tar -x -C build-compare/src-$name || exit 1
            echo "$name" >> build-compare/order
            echo "build-compare/src-$name: $(git rev-parse --short "$rev")"
        done
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
        [ -f build-compare/order ] || { echo "no build-compare/order: run 'prepare REV...' first" >&2; exit 1; }
        . tools/gpu-env.sh
        trees=($(cat build-compare/order) this)
        for tree in "${trees[@]}"; do
            src=build-compare/src-$tree
            [ $tree = this ] && src=.
            if [ ! -f build-compare/build-$tree/build.ninja ]; then
                meson setup build-compare/build-$tree "$src" -Dtests=false > "$OUT/compare-$tree-setup.log" 2>&1 ||
                    { tail -20 "$OUT/compare-$tree-setup.log"; exit 1; }
            fi
            ninja -C build-compare/build-$tree ssmjit > "$OUT/compare-$tree-build.log" 2>&1 ||
                { grep -E "error|FAILED" "$OUT/compare-$tree-build.log" | head -20; exit 1; }
        done
        status=0
        for r in $(seq 1 "$rounds"); do
            for tree in "${trees[@]}"; do
                log=$OUT/compare-$tree-$r.log
                build-compare/build-$tree/ssmjit bench "$@" > "$log" 2>&1 || status=1
                sed "s/^/$tree $r: /" "$log"
            done
        done
        exit $status
        ;;
    *) usage ;;
esac
