#!/usr/bin/env bash
# Issue 27's measurement: what a `gridsel tune` session learns from an empty store, what
# production runs gain by reading it, and what online `tune` costs, on the H100.
#
# Usage on the GPU machine:
#   bash bench/gpu/tune-session.sh [OPTIONS] PROGRAM:N[:RUNS[:FLAGS]] ...
# RUNS: the session's --runs (default 3; 10 for programs with once-per-run kernels);
# FLAGS, joined by +: sweep (sweep the program's grids with the harness, phase 1), spread
# (time grids that spread few iterations over every SM, and a ladder for long loops: the
# kernels a sweep cannot serve, too heavy or launched once per run).
# Options:
#   --bin DIR         the programs (default $GRIDSEL_BENCH_BIN, else bench/build/sm_90)
#   --host            a dry run here on host offload (env.sh's GRIDSEL_HOST_DRY_RUN)
#   --sweep-only      phase 1 only: the sweeps, into $OUT/tune-session/sweep
#   --no-sweep        phase 2 only: no sweeping (the panel reads an earlier sweep from
#                     --sweep-dir, default $OUT/tune-session/sweep, where there is one)
#   --sweep-dir DIR   that folder
#   --reps R          each program runs as `PROGRAM N R 0` (default 5: repeated kernels
#                     launched R times per run, once-per-run kernels once)
#   --rounds R        production rounds at most (default 8)
#   --limit S         no program's pilot and no round starts after S seconds from the
#                     start (default 400); the sweeps get a third of it
# Phase 1 (the sweeps) runs `gridsel_bench.py run` on the programs flagged sweep. Phase 2, per
# program, in order:
#   1. a pilot run under llvm (its kernels and trip counts: pilot/PROGRAM.csv);
#   2. the panel: one run per grid under GRIDSEL_POLICY=fixed:T,B (twice when a kernel runs
#      once per run), the grids `tune_session_report.py plan` lists: the best grids of the
#      phase-1 sweep and of bench/results/h100/summary.csv at the pilot's trip counts, plus
#      the spread grids where flagged; so every kernel's best grid is timed in this call;
#   3. `gridsel tune --runs RUNS --check check=pass --store store.json --out sessions/...`
#      from an empty store (one store for every program, as a user's is), its wall time;
# then the best set: `tune_session_report.py best-set` takes every kernel's fastest grid of its
# program's panel at each trip count (the report's per-kernel best; runs that failed left out),
# writes them to best-set.csv, and `gridsel-research cache-entries` pins them, for every build,
# in best-set.json, on the device as gridsel names it in store.json (the script stops there
# when it cannot); then production rounds until --rounds or --limit: every program under each
# variant, the variants' order rotated each round, paired in time:
#   auto     GRIDSEL_CACHE=off, no store
#   auto2    the same again: the A/A pair, whose ratio to auto is the noise of identical
#            configurations in the same rounds (one pair of processes differs by up to 48 %)
#   learned  auto reading store.json (launches from it profiled `learned`)
#   llvm     LLVM's grids
#   tune     online tune, GRIDSEL_TUNE_OVERHEAD as default, its own store across rounds
#            (online-store.json, empty at the start)
#   best     auto reading best-set.json, which it never writes (checked after the rounds: the
#            script fails when it changed): every kernel on its panel-best grid at once, the
#            ceiling learned grids can reach where a kernel's time depends on its neighbours'
#            grids (launches from the store profiled `learned`)
# every run with GRIDSEL_PROFILE (profiles/PROGRAM.ROUND.VARIANT.csv) and checking its own
# results (runs.csv). bench/harness/tune_session_report.py report turns the folder into
# tune-session.md: the targets, and per program the median paired ratio over rounds with a
# bootstrap 90 % interval beside the A/A pair's (more rounds narrow it: --rounds). Writes $OUT/tune-session (default OUT /tmp/gridsel-tune-session).
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
bin= host=0 phase=both reps=5 max_rounds=8 limit=400 sweep_dir=
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --bin) bin=$2; shift ;;
    --host) host=1 ;;
    --sweep-only) phase=sweep ;;
    --no-sweep) phase=measure ;;
    --sweep-dir) sweep_dir=$2; shift ;;
    --reps) reps=$2; shift ;;
    --rounds) max_rounds=$2; shift ;;
    --limit) limit=$2; shift ;;
    *) echo "tune-session.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
(($# > 0)) || { echo "usage: tune-session.sh [OPTIONS] PROGRAM:N[:RUNS[:FLAGS]] ..." >&2; exit 2; }
((host)) && export GRIDSEL_HOST_DRY_RUN=1
source "$here/env.sh"
b=${bin:-${GRIDSEL_BENCH_BIN:-$repo/bench/build/sm_90}}
out=${OUT:-/tmp/gridsel-tune-session}/tune-session
sweep_dir=${sweep_dir:-$out/sweep}
report=$repo/bench/harness/tune_session_report.py
mkdir -p "$out"
start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }

# PROGRAM:N[:RUNS[:FLAGS]] -> prog n runs flags
declare -a progs ns runs flags
for spec in "$@"; do
  IFS=: read -r p n r f <<<"$spec"
  [[ -x $b/$p && $n =~ ^[0-9]+$ ]] || { echo "tune-session.sh: no program $b/$p or bad size in $spec" >&2; exit 2; }
  progs+=("$p") ns+=("$n") runs+=("${r:-3}") flags+=("+${f:-}+")
done

if [[ $phase != measure ]]; then
  only= sizes=
  for i in "${!progs[@]}"; do
    [[ ${flags[i]} == *+sweep+* ]] || continue
    only+="${only:+|}${progs[i]}" sizes+="${sizes:+;}${progs[i]}=${ns[i]}"
  done
  if [[ -n $only ]]; then
    echo "tune-session.sh: sweeping $only"
    python3 "$repo/bench/harness/gridsel_bench.py" run --bin-dir "$b" --gridsel "$GRIDSEL_CLI" \
      --lib "$GRIDSEL_LIB" --out "$sweep_dir" --budget-s $((limit / 3)) --reps 5 --noise none \
      --only "^($only)-" --sizes-override "$sizes" 2>&1 | tee "$out/sweep.log"
  fi
  [[ $phase == sweep ]] && { echo "tune-session.sh: sweep done at $(elapsed) s"; exit 0; }
fi

store=$out/store.json online=$out/online-store.json best_set=$out/best-set.json
for f in "$store" "$online" "$best_set"; do rm -f "$f" "$f.lock" "$f.journal"; done
rm -f "$out/best-set.csv"
rm -rf "$out/pilot" "$out/panel" "$out/sessions" "$out/profiles"
mkdir -p "$out/pilot" "$out/panel" "$out/sessions" "$out/profiles"
echo "program,n,grid,round,rc,check,ms" >"$out/panel.csv"
echo "program,n,runs_asked,rc,wall_ms" >"$out/sessions.csv"
echo "round,program,n,variant,rc,check,ms" >"$out/runs.csv"
failed() { echo "FAILED: $*"; tail -n 3 "$out/run.log"; }

active=()
for i in "${!progs[@]}"; do
  p=${progs[i]} n=${ns[i]}
  if (($(elapsed) > limit)); then
    echo "tune-session.sh: time limit reached: ${progs[*]:i} left out"
    break
  fi
  active+=("$i")
  run_program "$out/run.log" GRIDSEL_POLICY=llvm GRIDSEL_CACHE=off GRIDSEL_PROFILE="$out/pilot/$p.csv" \
    -- "$b/$p" "$n" "$reps" 0
  [[ $rc == 0 && $check == pass ]] || { failed "$p $n pilot"; continue; }
  spread=()
  [[ ${flags[i]} == *+spread+* ]] && spread=(--spread)
  read -r panel_rounds grids < <(python3 "$report" plan "$out" "$p" --sweep "$sweep_dir" \
    --summary "$repo/bench/results/h100/summary.csv" "${spread[@]}")
  panel_rounds=${panel_rounds:-0}
  for ((k = 1; k <= panel_rounds; k++)); do
    for grid in $grids; do
      run_program "$out/run.log" GRIDSEL_POLICY="fixed:$grid" GRIDSEL_CACHE=off \
        GRIDSEL_PROFILE="$out/panel/$p.${grid/,/_}.$k.csv" -- "$b/$p" "$n" "$reps" 0
      echo "$p,$n,\"$grid\",$k,$rc,$check,$ms" >>"$out/panel.csv"
      [[ $rc == 0 && $check == pass ]] || failed "$p $n fixed:$grid"
    done
  done
  echo "tune-session.sh: $p $n panel of $(wc -w <<<"$grids") grids x $panel_rounds done at $(elapsed) s"
  t0=$(date +%s%N)
  timeout 300 "$GRIDSEL_CLI" tune --runs "${runs[i]}" --check 'check=pass' --store "$store" \
    --out "$out/sessions/$p-$n" -- "$b/$p" "$n" "$reps" 0 >"$out/sessions/$p-$n.log" 2>&1
  rc=$?
  echo "$p,$n,${runs[i]},$rc,$((($(date +%s%N) - t0) / 1000000))" >>"$out/sessions.csv"
  [[ $rc == 0 ]] || { echo "FAILED: gridsel tune $p $n (rc $rc)"; tail -n 5 "$out/sessions/$p-$n.log"; }
  echo "tune-session.sh: $p $n session done at $(elapsed) s"
done

if ((${#active[@]})); then
  # The device's name from the stores gridsel wrote: the one written and the sessions' own (where
  # every search was refused, the written store holds none).
  stores=(--store "$store")
  for s in "$out"/sessions/*/store.json; do [[ -e $s ]] && stores+=(--store "$s"); done
  python3 "$report" best-set "$out" "${stores[@]}" --gridsel "$GRIDSEL_CLI" --out "$best_set" ||
    { echo "tune-session.sh: FAILED: the best set's store $best_set could not be written; no rounds" >&2; exit 1; }
  best_set_sum=$(sha256sum <"$best_set")
fi

variants=(auto auto2 learned llvm tune best)
for ((r = 1; r <= max_rounds; r++)); do
  if (($(elapsed) > limit)); then
    echo "tune-session.sh: time limit reached before round $r"
    break
  fi
  for i in "${active[@]}"; do
    p=${progs[i]} n=${ns[i]}
    for ((v = 0; v < ${#variants[@]}; v++)); do
      variant=${variants[(v + r + i) % ${#variants[@]}]}
      case $variant in
        auto | auto2) env=(GRIDSEL_POLICY=auto GRIDSEL_CACHE=off) ;;
        learned) env=(GRIDSEL_POLICY=auto GRIDSEL_CACHE="$store") ;;
        llvm) env=(GRIDSEL_POLICY=llvm GRIDSEL_CACHE=off) ;;
        tune) env=(GRIDSEL_POLICY=tune GRIDSEL_CACHE="$online") ;;
        best) env=(GRIDSEL_POLICY=auto GRIDSEL_CACHE="$best_set") ;;
      esac
      run_program "$out/run.log" "${env[@]}" GRIDSEL_PROFILE="$out/profiles/$p.$r.$variant.csv" \
        -- "$b/$p" "$n" "$reps" 0
      echo "$r,$p,$n,$variant,$rc,$check,$ms" >>"$out/runs.csv"
      [[ $rc == 0 && $check == pass ]] || failed "$p $n $variant round $r"
    done
  done
  echo "tune-session.sh: round $r done at $(elapsed) s"
done
status=0
if ((${#active[@]})) && [[ $(sha256sum <"$best_set") != "$best_set_sum" || -e $best_set.journal ]]; then
  echo "tune-session.sh: FAILED: the best set's store $best_set changed in the rounds (auto must only read it)" >&2
  status=1
fi
python3 "$report" report "$out" --sweep "$sweep_dir" >/dev/null || exit 1
echo "tune-session.sh: $out/tune-session.md"
exit $status
