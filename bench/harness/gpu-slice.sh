#!/usr/bin/env bash
# One slice of the H100 sweep, for one device call (< 10 minutes).
#
#   bench/harness/gpu-slice.sh [extra `gridsel_bench.py run` options...]
#
# Unpacks the runtime (.runtime.tar.xz -> .runtime/), runs the harness for
# $GRIDSEL_SLICE_BUDGET_S seconds (default 480) over bench/build/sm_90, skipping
# every job already in bench/results/h100 (the merged, committed results), and
# packs the slice's new results into $OUT/slice.tar.gz (split into
# slice.tar.gz.part-aa, -ab, ... when over 15 MB: `cat slice.tar.gz.part-* >
# slice.tar.gz`). Variables: OUT (default ./out), GRIDSEL_COMMIT (recorded in
# every job; pass it in, the GPU machine has no .git), GRIDSEL_SLICE_BUDGET_S,
# GRIDSEL_BIN_DIR (default bench/build/sm_90), GRIDSEL_RESULTS (default
# bench/results/h100), GRIDSEL_CLI and GRIDSEL_LIB (default target/release/,
# with gridsel-research beside GRIDSEL_CLI, the library built with
# `--features gridsel/sweep`; bench/gpu/stage.sh stages stripped copies in
# .stage/).
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.."

out=${OUT:-$PWD/out}
budget=${GRIDSEL_SLICE_BUDGET_S:-480}
bin_dir=${GRIDSEL_BIN_DIR:-bench/build/sm_90}
results=${GRIDSEL_RESULTS:-bench/results/h100}
mkdir -p "$out"

runtime=$(bench/toolchain/runtime.sh --extract)
export LD_LIBRARY_PATH=$runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMP_TARGET_OFFLOAD=MANDATORY
export GRIDSEL_COMMIT=${GRIDSEL_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}

name=slice-$(date -u +%Y%m%dT%H%M%SZ)
slice=$(mktemp -d)/$name
mkdir -p "$slice"
nvidia-smi >"$slice/nvidia-smi.txt" 2>&1 || true

skip=()
[[ -d $results ]] && skip=(--skip-done-in "$results")
set +e
python3 bench/harness/gridsel_bench.py run --bin-dir "$bin_dir" \
  --gridsel "${GRIDSEL_CLI:-target/release/gridsel}" --lib "${GRIDSEL_LIB:-target/release/libgridsel.so}" \
  --out "$slice" --budget-s "$budget" "${skip[@]}" "$@" 2>&1 | tee "$slice/run.log"
rc=${PIPESTATUS[0]}
set -e

tar -C "$(dirname "$slice")" -czf "$out/slice.tar.gz" "$name"
size=$(stat -c %s "$out/slice.tar.gz")
if ((size > 15000000)); then
  split -b 15000000 "$out/slice.tar.gz" "$out/slice.tar.gz.part-"
  rm "$out/slice.tar.gz"
fi
echo "gpu-slice: $name, harness rc=$rc, $((size / 1000)) kB packed into $out"
ls -la "$out"
exit "$rc"
