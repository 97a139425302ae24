#!/usr/bin/env bash
# Nested parallelism inside the combined construct (bench/kernels/probe_nested_simd.c)
# on the GPU: which grids run and which fail, how fast, which distribute chunk the
# kernel uses, and how much device heap a failing grid needs. Every grid runs in a
# process of its own (a failed launch ends the process's CUDA context), with
# gridsel's safe range switched off so that unsafe grids can be measured at all.
#
# Usage on the GPU machine: bash bench/gpu/nested.sh [--policies-only] [N...]
#   (default N: 2048 24576 98304; --policies-only skips the fixed grids, the heap
#   search and the leak runs: the check that every policy runs the pattern)
# Writes $OUT/nested.csv (one row per run) and $OUT/nested.log.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
out=${OUT:-/tmp/gridsel-nested}; mkdir -p "$out"
prog=$repo/bench/build/sm_90/probe_nested_simd
grids=1
if [[ ${1:-} == --policies-only ]]; then grids=0; shift; fi
sizes=("$@"); ((${#sizes[@]})) || sizes=(2048 24576 98304)
policies=${NESTED_POLICIES:-llvm auto occupancy lloyd forest tune}
csv=$out/nested.csv
log=$out/nested.log
echo "n,grid,heap_mb,rc,check,nested_fourier_ms,nested_fourier4_ms,plain_saxpy_ms,teams_used,chunk" >"$csv"
tmp=$(mktemp)

# one N POLICY [HEAP_MB]: runs the probe once, appends a row, returns its status.
one() {
  local n=$1 policy=$2 heap=${3:-}
  local -a env=(GRIDSEL_POLICY="$policy" GRIDSEL_SAFE_RANGE=off GRIDSEL_LOG=info)
  [[ -n $heap ]] && env+=(LIBOMPTARGET_HEAP_SIZE=$((heap << 20)))
  env "${env[@]}" LD_PRELOAD="$GRIDSEL_LIB" timeout 120 "$prog" "$n" 5 1 >"$tmp" 2>&1
  local rc=$?
  { echo "== n=$n policy=$policy heap=${heap:-default} rc=$rc"; grep -v '^gridsel: info: registered' "$tmp" | head -n 12; } >>"$log"
  local check ms=() k
  check=$(sed -n 's/.*check=\([A-Za-z]*\).*/\1/p' "$tmp" | head -n 1)
  for k in nested_fourier nested_fourier4 plain_saxpy; do
    ms+=("$(sed -n "s/.*kernel=$k reps=.* median_ms=\([0-9.]*\).*/\1/p" "$tmp" | head -n 1)")
  done
  local teams chunk
  teams=$(sed -n 's/.*teams_used=\([0-9]*\).*/\1/p' "$tmp" | head -n 1)
  chunk=$(sed -n 's/.*chunk=\([0-9]*\).*/\1/p' "$tmp" | head -n 1)
  echo "$n,\"$policy\",${heap:-default},$rc,${check:-none},${ms[0]},${ms[1]},${ms[2]},$teams,$chunk" >>"$csv"
  printf '%-7s %-18s heap=%-7s rc=%-3s check=%-5s fourier=%-10s fourier4=%-10s saxpy=%-9s teams=%-6s chunk=%s\n' \
    "$n" "$policy" "${heap:-default}" "$rc" "${check:-none}" "${ms[0]}" "${ms[1]}" "${ms[2]}" "$teams" "$chunk"
  [[ $rc == 0 && $check == pass ]]
}

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$GRIDSEL_CLI" inspect "$prog"
failed=()
for n in "${sizes[@]}"; do
  for p in $policies; do one "$n" "$p" || failed+=("$n $p"); done
  ((grids)) || continue
  blocks=$(printf '%s\n' $(((n + 127) / 128)) $(((n + 63) / 64)) $(((n + 31) / 32)) 132 264 1056 4224 | sort -nu)
  for t in 32 64 96 128; do
    for b in $blocks; do one "$n" "fixed:$t,$b" || failed+=("$n fixed:$t,$b"); done
  done
done
if ((!grids)); then
  echo "nested.sh: $(($(wc -l <"$csv") - 1)) runs, ${#failed[@]} failed"
  exit $((${#failed[@]} > 0))
fi
# The device heap a failing grid needs: the smallest of these sizes that runs.
for f in "${failed[@]}"; do
  read -r n p <<<"$f"
  for heap in 16 64 256 1024; do one "$n" "$p" "$heap" && break; done
done
rm -f "$tmp"
echo "nested.sh: $(($(wc -l <"$csv") - 1)) runs, ${#failed[@]} failed at the default heap"
# The device runtime never frees a team's ThreadStates array (8 B x threads per
# team, NOTES.md §9): the heap fills launch after launch, under LLVM's own grid too.
for grid in llvm fixed:64,384; do
  echo "== leak: n=24576 $grid, 400 launches of each kernel"
  GRIDSEL_POLICY=$grid GRIDSEL_SAFE_RANGE=off LD_PRELOAD="$GRIDSEL_LIB" timeout 300 "$prog" 24576 400 0 2>&1 | grep -E 'median|check|rror' | head -n 6
  echo "rc=${PIPESTATUS[0]}"
done
