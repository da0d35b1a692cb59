# Sourced by the GPU scripts: where their logs go ($OUT) and the CUBIN
# cache they share (tools/profile.sh profiles what tools/gpu-check.sh built
# and compiled).
OUT=${OUT:-/tmp/ssmjit-out}
mkdir -p "$OUT"
export SSMJIT_CACHE_DIR=${SSMJIT_CACHE_DIR:-/tmp/ssmjit-cache}
