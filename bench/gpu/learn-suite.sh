#!/usr/bin/env bash
# learn.sh over every suite program (bench/kernels/suite-*.tsv) at its smallest
# size: the convergence benchmark of the issue "Learn across runs".
#
# Usage on the GPU machine: bash bench/gpu/learn-suite.sh RUNS REPS WARMUP TIME_LIMIT_S
# (the variables of learn.sh apply: OUT, BASE_ROUNDS, RESUME, GRIDSEL_BENCH_BIN).
#
# Left out, because LLVM's own grid cannot run them here (NOTES.md section 9:
# the device runtime leaks its 8 MB heap under nested parallel regions):
# nest_csr_vector always (its smallest size fails under LLVM's grid, at about
# 1 s a launch), and nest_rowhist and nest_batched_mv when a run launches each
# kernel more than once (they fail after 26-163 launches in one process).
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
skip='^nest_csr_vector:'
(($2 * (1 + $3) > 1)) && skip='^nest_[a-z_]*:'
mapfile -t programs < <(awk -F'\t' 'FNR > 1 { split($2, sizes, " "); print $1 ":" sizes[1] }' \
  "$here"/../kernels/suite-*.tsv | grep -Ev "$skip")
echo "learn-suite.sh: ${#programs[@]} programs"
exec bash "$here/learn.sh" "$@" "${programs[@]}"
