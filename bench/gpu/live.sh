#!/usr/bin/env bash
# Live check of the offline replay: every suite program at its middle size,
# run whole under llvm, auto and forest in separate processes, the policies'
# order rotating each round. One GRIDSEL_PROFILE file per (program, policy,
# round) under $OUT/live; `gridsel_bench.py live RESULTS --profiles DIR`
# compares the per-kernel medians with the replayed report.
#   bench/gpu/live.sh [ROUND...]        (default: 1 2 3; reps per run: LIVE_REPS=10)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
out=${OUT:-/tmp/gridsel-live}/live
mkdir -p "$out"
b=$repo/bench/build/sm_90
reps=${LIVE_REPS:-10}
policies=(llvm auto forest)
mapfile -t jobs < <(awk -F'\t' 'FNR > 1 { split($2, s, " "); print $1, s[2] }' "$repo"/bench/kernels/suite-*.tsv)
for r in "${@:-1 2 3}"; do
  for job in "${jobs[@]}"; do
    set -- $job
    for i in 0 1 2; do
      p=${policies[$(( (i + r) % 3 ))]}
      line=$(GRIDSEL_POLICY=$p GRIDSEL_PROFILE="$out/$1-$2-$p-$r.csv" LD_PRELOAD=$GRIDSEL_LIB \
        timeout 60 "$b/$1" "$2" "$reps" 1 2>&1 | grep -o "check=[a-z]*" | sort -u | tr '\n' ' ')
      echo "round $r $1 $2 $p: ${line:-no check line (timeout or crash)}" | tee -a "$out/checks.log"
    done
  done
done
