#!/usr/bin/env bash
# The mid-size reduction rule live (NOTES.md §25): per program and size of the plan
# (bench/harness/reduction_wave.py plan, default bench/gpu/reduction-wave.csv), one
# `gridsel compare` of `auto` against `fixed:` each grid the rule gives its reductions
# (llvm, the baseline, runs too), policies rotating each round.
#   bash bench/gpu/reduction-wave.sh [PLAN]
#   REDUCTION_WAVE_ROUNDS=5 REDUCTION_WAVE_REPS=10   rounds; the programs' REPS (WARMUP 1)
# Any plan of that format runs the same way (bench/gpu/long-loop-wave.csv, from
# bench/harness/long_loop_rule.py --plan-out: a long-loop rule's grids, NOTES.md §31).
# Writes $OUT/<plan's name>/PROGRAM-N/ (compare's folder) and the plan beside them; then,
# here: python3 bench/harness/reduction_wave.py report PLAN <that folder>.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
plan=${1:-$repo/bench/gpu/reduction-wave.csv}
out=${OUT:-/tmp/gridsel-reduction-wave}/$(basename "$plan" .csv)
b=${GRIDSEL_BENCH_BIN:-$repo/bench/build/sm_90}
mkdir -p "$out"
cp "$plan" "$out/plan.csv"
python3 "$repo/bench/harness/reduction_wave.py" jobs "$plan" | while read -r prog n policies; do
  t0=$SECONDS
  "$GRIDSEL_CLI" compare --policies "$policies" --runs "${REDUCTION_WAVE_ROUNDS:-5}" --timeout 60 \
    --out "$out/$prog-$n" -- "$b/$prog" "$n" "${REDUCTION_WAVE_REPS:-10}" 1 >"$out/$prog-$n.log" 2>&1 ||
    echo "reduction-wave.sh: $prog $n: compare failed (see $prog-$n.log)"
  echo "reduction-wave.sh: $prog $n ($policies) $((SECONDS - t0)) s"
done
