#!/bin/bash
# Profiles one kernel with Nsight Compute on a GPU machine, its first launch
# by `ssmjit bench --ops --only CASE`, or by `ssmjit bench ARGS...` (run
# tools/gpu-check.sh first: it builds build/ and fills the cache):
#   tools/profile.sh NAME KERNEL_REGEX CASE
#   tools/profile.sh NAME KERNEL_REGEX -- ARGS...
#   e.g. tools/profile.sh fwd '^scan_fwd_ns8_f32$' selective_scan
#        tools/profile.sh tp8 '^scan_fwd_tp8_bf16$' -- --shape 1x512x1536
# Writes to $OUT: NAME.details.txt (ncu's details page), NAME.sass.csv.gz
# (every instruction: times run, stall samples) and NAME.summary.txt
# (tools/ncu_summary.py of it); prints the headline metrics.  The clocks
# are left as they are (--clock-control none).
set -u
usage() { sed -n '2,12p' "$0"; exit 2; }
[ $# -ge 3 ] || usage
cd "$(dirname "$0")/.."
name=$1 kernel=$2
shift 2
if [ "$1" = -- ]; then
    shift
    [ $# -ge 1 ] || usage
    bench=("$@")
else
    [ $# = 1 ] || usage
    bench=(--ops --only "$1")
fi
. tools/gpu-env.sh
rep=$(mktemp -d)/$name
timeout 300 ncu --clock-control none -k "regex:$kernel" -c 1 --set full --import-source no -o "$rep" \
    build/ssmjit bench "${bench[@]}" > "$OUT/$name.run.log" 2>&1 || { tail -5 "$OUT/$name.run.log"; exit 1; }
ncu --import "$rep.ncu-rep" --page details > "$OUT/$name.details.txt" 2>&1
ncu --import "$rep.ncu-rep" --page source --print-source sass --csv > "$OUT/$name.sass.csv" 2>&1
python3 tools/ncu_summary.py "$OUT/$name.sass.csv" > "$OUT/$name.summary.txt" 2>&1
gzip -f "$OUT/$name.sass.csv"
rm -rf "$(dirname "$rep")" "$OUT/$name.run.log"
grep -E "Duration|Issue Slots Busy|Issued Ipc Active|Achieved Occupancy|Registers Per Thread|Warp Cycles Per Issued" \
    "$OUT/$name.details.txt"
head -12 "$OUT/$name.summary.txt"
