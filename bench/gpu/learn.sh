#!/usr/bin/env bash
# The convergence benchmark of `tune`'s learning across runs (issue "Learn
# across runs"): programs run RUNS times in a row from an empty store, one
# store shared by all (as a user's $XDG_CACHE_HOME store is), round-robin:
# round r runs every program once. The rounds in BASE_ROUNDS (default: every
# round) also run every program under `llvm` and `auto` right before its
# `tune` run, so the baselines are interleaved with the learning runs in time. Every run profiles every launch
# (GRIDSEL_PROFILE) and checks its own results.
#
# Usage on the GPU machine:
#   bash bench/gpu/learn.sh RUNS REPS WARMUP TIME_LIMIT_S PROGRAM:N ...
# (programs from GRIDSEL_BENCH_BIN, default bench/build/sm_90)
# REPS x (1 + WARMUP) is how often each kernel is launched per run (1 x 1 with
# WARMUP 0: once per run). Writes $OUT/learn/{runs.csv, profiles/, store.json};
# stops starting rounds after TIME_LIMIT_S seconds. bench/harness/learn_report.py
# turns the folder into learn.md and a plot.
#
# One device call holds at most 10 minutes, fewer rounds than a benchmark of
# every program needs, so a benchmark may span calls: RESUME=DIR (a learn/
# folder an earlier call wrote, carried back) starts from its runs, profiles
# and store, at the round after its last, and RUNS stays the benchmark's total
# (BASE_ROUNDS counts from the benchmark's first round, too). Unpack the carried
# folder into a fresh directory (mktemp -d): a machine still warm from the last
# call keeps its /tmp, and an old folder there would mix into this one.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
runs=$1 reps=$2 warmup=$3 limit=$4
shift 4
out=${OUT:-/tmp/gridsel-learn}/learn
mkdir -p "$out/profiles"
b=${GRIDSEL_BENCH_BIN:-$repo/bench/build/sm_90}
store=$out/store.json
csv=$out/runs.csv
first=1
rm -f "$store" "$store.lock"
if [[ -n ${RESUME:-} ]]; then
  cp "$RESUME/runs.csv" "$out/" && cp -r "$RESUME/profiles/." "$out/profiles/" || exit 1
  # No store yet when no process had anything to save.
  [[ ! -f $RESUME/store.json ]] || cp "$RESUME/store.json" "$store" || exit 1
  first=$(($(tail -n 1 "$csv" | cut -d, -f1) + 1))
  echo "learn.sh: resuming $RESUME at round $first"
else
  echo "round,program,n,policy,rc,check,ms" >"$csv"
fi
start=$(date +%s)
for ((r = first; r <= runs; r++)); do
  if (($(date +%s) - start > limit)); then
    echo "learn.sh: time limit reached before round $r"
    break
  fi
  for spec in "$@"; do
    prog=${spec%%:*} n=${spec##*:}
    policies=tune
    [[ " ${BASE_ROUNDS:-$(seq -s ' ' 1 "$runs")} " == *" $r "* ]] && policies="llvm auto tune"
    for p in $policies; do
      prof=$out/profiles/$prog.$r.$p.csv
      run_program "$out/run.log" GRIDSEL_POLICY="$p" GRIDSEL_CACHE="$store" GRIDSEL_PROFILE="$prof" \
        -- "$b/$prog" "$n" "$reps" "$warmup"
      echo "$r,$prog,$n,$p,$rc,$check,$ms" >>"$csv"
      [[ $rc != 0 || $check != pass ]] && { echo "FAILED: $prog $n $p round $r"; tail -n 3 "$out/run.log"; }
    done
  done
  echo "learn.sh: round $r done at $(($(date +%s) - start)) s"
done
# The store as a table, where the CLI was staged (else: gridsel cache --path
# store.json list, afterwards).
[[ ! -x $GRIDSEL_CLI ]] || "$GRIDSEL_CLI" cache --path "$store" list >"$out/store.csv" 2>&1
cp "$store" "$out/store.json.final" 2>/dev/null
