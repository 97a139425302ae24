#!/usr/bin/env bash
# `target teams` regions without a distribute loop on the construct (trip count 0 at the
# launch: bench/kernels/gspmd_*.c, ts_heat2d_gspmd.c) under GRIDSEL_TEAMS_REGIONS=change,
# the user's opt-in that lets gridsel change their team count (issue "Real programs'
# patterns"). Two parts per program, each through bench/gpu/compare.sh (`gridsel compare`:
# programs run once per policy per round, policies interleaved, per-kernel medians):
#   1. a ladder of fixed grids against LLVM's (what the best grid of each kernel is);
#   2. `auto` and `tune` run after run from an empty store of the program's own (what
#      learning finds and what exploring costs), with the opt-in.
#
# Usage on the GPU machine: bash bench/gpu/teams.sh ROUNDS LEARN_RUNS PROGRAM:N ...
# (programs from GRIDSEL_BENCH_BIN, default bench/build/sm_90; ROUNDS 0 skips the ladder)
# Writes $OUT/teams/<program>-<n>/{ladder,learn}/compare/<program>-<n>/ (compare's
# report.md, runs.csv, profiles) and the store as <program>-<n>/store.json.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
rounds=$1 learn_runs=$2
shift 2
out=${OUT:-/tmp/gridsel-teams}/teams
export GRIDSEL_TEAMS_REGIONS=change
# LLVM's grid on the H100 is 3200 x 128; blocks from one per SM (132) to 65 536, threads
# 128 (LLVM's), 64 and 32.
ladder=fixed:128,132,fixed:128,264,fixed:128,528,fixed:128,1056,fixed:128,12800
ladder+=,fixed:64,3200,fixed:64,12800,fixed:64,51200,fixed:32,51200,fixed:32,65536
for spec in "$@"; do
  dir=$out/${spec%%:*}-${spec##*:}
  mkdir -p "$dir"
  ((rounds > 0)) && OUT=$dir/ladder bash "$here/compare.sh" "$ladder" "$rounds" "$spec"
  GRIDSEL_CACHE=$dir/store.json OUT=$dir/learn bash "$here/compare.sh" auto,tune "$learn_runs" "$spec"
done
