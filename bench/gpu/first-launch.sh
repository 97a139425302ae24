#!/usr/bin/env bash
# What a process's first launch of a kernel costs under each policy, on one
# grid: whether `tune` itself (its store, its bookkeeping) slows the launches
# it times. Every configuration runs each program REPS times, interleaved in
# an order that rotates with the repetition:
#   llvm        GRIDSEL_POLICY=llvm (profiled, forwarded as is)
#   auto        GRIDSEL_POLICY=auto
#   tune-off    GRIDSEL_POLICY=tune GRIDSEL_CACHE=off (no store)
#   tune-empty  GRIDSEL_POLICY=tune, a store that does not exist yet
#   tune-store  GRIDSEL_POLICY=tune, a fresh copy of STORE (a store some runs
#               left; each process starts from the same copy)
# A kernel's first launch under the three `tune` configurations measures
# `auto`'s grid unless STORE settled it elsewhere, so that the first launches
# of auto and tune-* differ only in what gridsel does around them.
#
# Usage on the GPU machine:
#   STORE=path/to/store.json bash bench/gpu/first-launch.sh REPS PROGRAM:N ...
# Writes $OUT/first-launch/{runs.csv,profiles/PROGRAM.REP.CONFIG.csv}.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
reps=$1
shift
out=${OUT:-/tmp/gridsel-first-launch}/first-launch
mkdir -p "$out/profiles"
b=${GRIDSEL_BENCH_BIN:-$repo/bench/build/sm_90}
work=$(mktemp -d)
configs=(llvm auto tune-off tune-empty tune-store)
echo "rep,program,n,config,rc,check,ms" >"$out/runs.csv"
for ((r = 1; r <= reps; r++)); do
  for spec in "$@"; do
    prog=${spec%%:*} n=${spec##*:}
    for ((i = 0; i < ${#configs[@]}; i++)); do
      config=${configs[$(((i + r) % ${#configs[@]}))]}
      rm -f "$work"/store.json*
      case $config in
        llvm | auto) env=(GRIDSEL_POLICY=$config) ;;
        tune-off) env=(GRIDSEL_POLICY=tune GRIDSEL_CACHE=off) ;;
        tune-empty) env=(GRIDSEL_POLICY=tune GRIDSEL_CACHE=$work/store.json) ;;
        tune-store)
          env=(GRIDSEL_POLICY=tune GRIDSEL_CACHE=$work/store.json)
          cp "$STORE" "$work/store.json"
          ;;
      esac
      run_program "$work/run.log" "${env[@]}" GRIDSEL_PROFILE="$out/profiles/$prog.$r.$config.csv" \
        -- "$b/$prog" "$n" 1 0
      echo "$r,$prog,$n,$config,$rc,$check,$ms" >>"$out/runs.csv"
    done
  done
  echo "first-launch.sh: repetition $r done"
done
rm -rf "$work"
