#!/usr/bin/env bash
# First look on the GPU: the driver's device description, gridsel's decisions
# on a real sm_90 program (issue: core, item 12), the distribute-chunk probe
# under several grids, and an ncu cross-check of the profile's timings.
# Usage on the GPU machine: bash bench/gpu/smoke.sh   (writes to $OUT if set)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
out=${OUT:-/tmp/gridsel-smoke}; mkdir -p "$out"
b=$repo/bench/build/sm_90
run() { echo "+ $*"; "$@"; echo "rc=$?"; }
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  run "$GRIDSEL_CLI" devices
  echo "== gemm 512 under lloyd, decisions and libomptarget's launch lines"
  GRIDSEL_LOG=info LIBOMPTARGET_INFO=16 LD_PRELOAD=$GRIDSEL_LIB run "$b/gemm" 512 3 1
  echo "== without gridsel"
  LIBOMPTARGET_INFO=16 run "$b/gemm" 512 3 1
  echo "== distribute chunk probe"
  for n in 132 1000 100000; do
    for grid in llvm fixed:128,132 fixed:32,132 fixed:1,132 fixed:64,4096 fixed:256,64; do
      echo "-- n=$n policy=$grid"
      GRIDSEL_POLICY=$grid LD_PRELOAD=$GRIDSEL_LIB "$b/probe_chunk" "$n" 1 0 | grep -E 'teams_used|check'
    done
  done
  echo "== short heavy loop, policies"
  for p in llvm lloyd fixed:128,132 fixed:32,132; do
    echo "-- $p"; GRIDSEL_POLICY=$p LD_PRELOAD=$GRIDSEL_LIB "$b/probe_short" 132 5 1 | grep -E 'median|check'
  done
  echo "== profile vs ncu (gemm 1024, fixed:128,8192)"
  rm -f "$out/prof.csv"
  GRIDSEL_POLICY=fixed:128,8192 GRIDSEL_PROFILE=$out/prof.csv LD_PRELOAD=$GRIDSEL_LIB "$b/gemm" 1024 10 1 | grep -E 'median|check'
  tail -n 3 "$out/prof.csv"
  GRIDSEL_POLICY=fixed:128,8192 LD_PRELOAD=$GRIDSEL_LIB timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
    "$b/gemm" 1024 10 1 > "$out/ncu.csv" 2>"$out/ncu.err"; echo "ncu rc=$?"
  tail -n 4 "$out/ncu.csv"; tail -n 3 "$out/ncu.err"
} 2>&1 | tee "$out/smoke.log"
