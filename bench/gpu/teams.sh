#!/usr/bin/env bash
# `target teams` regions without a distribute loop on the construct (trip count 0 at the
# launch: bench/kernels/gspmd_*.c, ts_heat2d_gspmd.c) under GRIDSEL_TEAMS_REGIONS=change,
# the user's opt-in that lets gridsel change their team count (issue "Real programs'
# patterns"). Two parts, each through `gridsel compare` (programs run once per policy per
# round, policies interleaved, per-kernel medians of GRIDSEL_PROFILE times):
#   1. a ladder of fixed grids against LLVM's (what the best grid of each kernel is);
#   2. `auto` and `tune` run after run from an empty store (what learning finds and what
#      exploring costs), with the opt-in.
#
# Usage on the GPU machine: bash bench/gpu/teams.sh ROUNDS LEARN_RUNS PROGRAM:N ...
# (programs from GRIDSEL_BENCH_BIN, default bench/build/sm_90; ROUNDS 0 skips the ladder)
# Writes $OUT/teams/<program>-<n>/{ladder,learn}/ (compare's report.md, runs.csv, profiles).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
rounds=$1 learn_runs=$2
shift 2
out=${OUT:-/tmp/gridsel-teams}/teams
mkdir -p "$out"
b=${GRIDSEL_BENCH_BIN:-$repo/bench/build/sm_90}
export GRIDSEL_TEAMS_REGIONS=change
# LLVM's grid on the H100 is 3200 x 128; blocks from one per SM (132) to 65 536, threads
# 128 (LLVM's), 64 and 32.
ladder=fixed:128,132,fixed:128,264,fixed:128,528,fixed:128,1056,fixed:128,12800
ladder+=,fixed:64,3200,fixed:64,12800,fixed:64,51200,fixed:32,51200,fixed:32,65536
for spec in "$@"; do
  prog=${spec%%:*} n=${spec##*:}
  dir=$out/$prog-$n
  ((rounds > 0)) && { "$GRIDSEL_CLI" compare --policies "$ladder" --runs "$rounds" --out "$dir/ladder" \
    -- "$b/$prog" "$n" 5 1 >"$dir.ladder.log" 2>&1 || echo "FAILED: ladder $prog $n"; }
  GRIDSEL_CACHE=$dir/store.json "$GRIDSEL_CLI" compare --policies auto,tune --runs "$learn_runs" \
    --out "$dir/learn" -- "$b/$prog" "$n" 5 1 >"$dir.learn.log" 2>&1 || echo "FAILED: learn $prog $n"
  echo "teams.sh: $prog $n done"
done
