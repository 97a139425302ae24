#!/usr/bin/env bash
# Every suite program under every policy on the GPU, each run checking its own
# results against the CPU: no policy may make a working program fail.
# Programs run at the smallest size of their suite-*.tsv line, REPS launches of
# each kernel (default 12, so that `tune` explores), one process per (program,
# policy), the policies in turn for each program.
#
# Usage on the GPU machine: bash bench/gpu/policies.sh [REPS]
# Writes $OUT/policies.csv (program,n,policy,rc,check,ms) and prints a summary.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
out=${OUT:-/tmp/gridsel-policies}; mkdir -p "$out"
reps=${1:-12}
b=$repo/bench/build/sm_90
policies=${POLICIES:-llvm auto occupancy lloyd forest tune}
csv=$out/policies.csv
echo "program,n,policy,rc,check,ms" >"$csv"
fail=0 runs=0
while IFS=$'\t' read -r prog sizes _; do
  [[ $prog == program || ! -x $b/$prog ]] && continue
  n=${sizes%% *}
  for p in $policies; do
    run_program "$out/run.log" GRIDSEL_POLICY="$p" GRIDSEL_CACHE="$out/cache.json" \
      -- "$b/$prog" "$n" "$reps" 1
    echo "$prog,$n,$p,$rc,$check,$ms" >>"$csv"
    runs=$((runs + 1))
    if [[ $rc != 0 || $check != pass ]]; then
      fail=$((fail + 1))
      echo "FAILED: $prog $n under $p (rc=$rc check=$check)"
      tail -n 5 "$out/run.log"
    fi
  done
done < <(cat "$repo"/bench/kernels/suite-*.tsv)
echo "policies.sh: $runs runs, $fail failed"
exit $((fail > 0))
