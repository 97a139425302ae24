#!/usr/bin/env bash
# What timing launches on the GPU (GRIDSEL_TUNE_CLOCK=gpu, CUPTI) costs a run: PROGRAM under the
# default policy with a profile, every launch timed as in a session's untuned and confirmation
# runs (GRIDSEL_TUNE_WAIT=on, no store), with the host clock and the GPU's in turns (the order
# swapping from round to round), ROUNDS rounds (default 3). Per run: wall ms, the profile's rows
# (the same count on both clocks: no launch left untimed) and the median of its launch times.
#   bash bench/gpu/clock_cost.sh NAME PROGRAM [ARG...]     on the GPU machine, after a call has
#                                                         staged the programs; $OUT/clock-cost/
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
name=$1
shift
out=${OUT:-/tmp}/clock-cost
mkdir -p "$out"
csv=$out/clock-cost.csv
[[ -f $csv ]] || echo "program,clock,round,rc,wall_ms,profile_rows" >"$csv"
for ((r = 1; r <= ${ROUNDS:-3}; r++)); do
  clocks=(host gpu)
  ((r % 2 == 0)) && clocks=(gpu host)
  for clock in "${clocks[@]}"; do
    tag=$name-$clock-r$r
    t0=$(date +%s%N)
    (cd "$out" && env GRIDSEL_POLICY=auto GRIDSEL_CACHE=off GRIDSEL_TUNE_WAIT=on \
      GRIDSEL_TUNE_CLOCK="$clock" GRIDSEL_PROFILE="$out/$tag.csv" LD_PRELOAD="$GRIDSEL_LIB" \
      timeout 300 "$@" >"$out/$tag.log" 2>&1)
    rc=$?
    rows=$(($(wc -l <"$out/$tag.csv") - 1))
    echo "$name,$clock,$r,$rc,$((($(date +%s%N) - t0) / 1000000)),$rows" >>"$csv"
  done
done
