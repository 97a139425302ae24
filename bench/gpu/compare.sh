#!/usr/bin/env bash
# `gridsel compare` over a list of suite programs on the GPU machine: each program at its
# size runs once per policy per round, policies interleaved (llvm, the baseline, always).
#
# Usage: bash bench/gpu/compare.sh POLICIES ROUNDS PROGRAM:N ...
#   (programs from GRIDSEL_BENCH_BIN, default bench/build/sm_90; each runs as `PROGRAM N 5 1`)
# Writes $OUT/compare/<program>-<n>/ (compare's report.md, runs.csv, profiles, logs).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
policies=$1 rounds=$2
shift 2
out=${OUT:-/tmp/gridsel-compare}/compare
mkdir -p "$out"
b=${GRIDSEL_BENCH_BIN:-$repo/bench/build/sm_90}
for spec in "$@"; do
  prog=${spec%%:*} n=${spec##*:}
  "$GRIDSEL_CLI" compare --policies "$policies" --runs "$rounds" --out "$out/$prog-$n" \
    -- "$b/$prog" "$n" 5 1 >"$out/$prog-$n.log" 2>&1 || echo "FAILED: $prog $n"
  echo "compare.sh: $prog $n done"
done
