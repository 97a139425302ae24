#!/usr/bin/env bash
# Live check of the offline replay: every suite program at its middle size,
# run whole under each policy in separate processes, the policies' order
# rotating each round. One GRIDSEL_PROFILE file per (program, policy, round)
# under $OUT/live; `gridsel_bench.py live RESULTS --profiles DIR` compares the
# per-kernel medians with the replayed report.
#   bench/gpu/live.sh [ROUND...]        (default: 1 2 3)
#   LIVE_POLICIES="llvm auto forest"    the policies; `best` is the sweep's best grid per
#                                       (kernel, trip count): `tune` started from
#                                       LIVE_BEST_CACHE (gridsel_bench.py best-cache)
#   LIVE_REPS=10                        repetitions per run
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
out=${OUT:-/tmp/gridsel-live}/live
mkdir -p "$out"
b=$repo/bench/build/sm_90
reps=${LIVE_REPS:-10}
read -r -a policies <<< "${LIVE_POLICIES:-llvm auto forest}"
np=${#policies[@]}
mapfile -t jobs < <(awk -F'\t' 'FNR > 1 { split($2, s, " "); print $1, s[2] }' "$repo"/bench/kernels/suite-*.tsv)
for r in "${@:-1 2 3}"; do
  for job in "${jobs[@]}"; do
    set -- $job
    for (( i = 0; i < np; i++ )); do
      p=${policies[$(( (i + r) % np ))]}
      env=(GRIDSEL_POLICY="$p")
      if [[ $p == best ]]; then
        # A private copy: tune would add what it explores for kernels the sweep has no best for.
        cp "${LIVE_BEST_CACHE:?best needs LIVE_BEST_CACHE}" "$out/.best-cache.json"
        env=(GRIDSEL_POLICY=tune GRIDSEL_CACHE="$out/.best-cache.json")
      fi
      line=$(env "${env[@]}" GRIDSEL_PROFILE="$out/$1-$2-$p-$r.csv" LD_PRELOAD=$GRIDSEL_LIB \
        timeout 60 "$b/$1" "$2" "$reps" 1 2>&1 | grep -o "check=[a-z]*" | sort -u | tr '\n' ' ')
      echo "round $r $1 $2 $p: ${line:-no check line (timeout or crash)}" | tee -a "$out/checks.log"
    done
  done
done
