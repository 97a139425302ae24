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
#   --panel-alt       after each session, the within panel (4. below): twice the panel's grids
#                     (on run 8's seven programs about 140 runs, 3 min on the H200)
# Phase 1 (the sweeps) runs `gridsel_bench.py run` on the programs flagged sweep. Phase 2, per
# program, in order:
#   1. a pilot run under llvm (its kernels and trip counts: pilot/PROGRAM.csv);
#   2. the panel: one run per grid under GRIDSEL_POLICY=fixed:T,B (twice when a kernel runs
#      once per run), the grids `tune_session_report.py plan` lists: the best grids of the
#      phase-1 sweep and of bench/results/h100/summary.csv at the pilot's trip counts, plus
#      the spread grids where flagged; so every kernel's best grid is timed in this call;
#   3. `gridsel tune --runs RUNS --check check=pass --store store.json --out sessions/...`
#      from an empty store (one store for every program, as a user's is), its wall time;
#   4. with --panel-alt, the within panel: per panel grid g a store pinning g for every kernel
#      and trip count of the pilot (`tune_session_report.py panel-store`, through
#      `gridsel-research cache-entries`, as the best set), and a run of auto reading it with
#      GRIDSEL_LEARNED_ALTERNATE, at least twice (odd in odd panel rounds, even in even ones, so
#      that a code doing different work on odd and even steps favours each side in turn): each
#      kernel on g and on auto's grid in one process (panel-alt/, panel-alt.csv); a grid a kernel
#      cannot run is cut to its safe range by gridsel, as under fixed:T,B; no grid starts after
#      --limit;
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
#   learned-alt  auto reading store.json with GRIDSEL_LEARNED_ALTERNATE=odd in odd rounds, even
#            in even ones: each search's learned grid at every other launch after the first,
#            auto's at the others, the sides swapping from round to round, as a session's
#            alternating confirmation runs (whole-run noise between processes, 10-40 % on the
#            H100 and H200, does not enter; two halves of one run differ by 1-4 %)
#   best-alt the same reading best-set.json
# every run with GRIDSEL_PROFILE (profiles/PROGRAM.ROUND.VARIANT.csv) and checking its own
# results (runs.csv). The alternating runs, the within panel's and, split by the same parity,
# the plain auto runs (the within-process A/A: two sides of identical grids) are split per
# search by `gridsel-research sides`, the code that splits a session's alternating runs, into
# sides/PROGRAM.ROUND.VARIANT.csv (VARIANT panel-T_B for the within panel). The two variants
# add two runs per program per round (8 instead of 6: a third more time per round); auto2,
# learned and best stay so that the across-process numbers compare with runs 3-7, though for
# programs that can alternate learned-alt and best-alt judge the same stores with less noise.
# bench/harness/tune_session_report.py report turns the folder into
# tune-session.md: the targets, and per program the median paired ratio over rounds with a
# bootstrap 90 % interval beside the A/A pair's (more rounds narrow it: --rounds), and the
# same within one process from the splits. Writes $OUT/tune-session (default OUT
# /tmp/gridsel-tune-session).
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
bin= host=0 phase=both reps=5 max_rounds=8 limit=400 sweep_dir= panel_alt=0
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
    --panel-alt) panel_alt=1 ;;
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
rm -rf "$out/pilot" "$out/panel" "$out/panel-alt" "$out/sessions" "$out/profiles" "$out/sides"
mkdir -p "$out/pilot" "$out/panel" "$out/panel-alt" "$out/sessions" "$out/profiles" "$out/sides"
echo "program,n,grid,round,rc,check,ms" >"$out/panel.csv"
echo "program,n,grid,round,rc,check,ms" >"$out/panel-alt.csv"
echo "program,n,runs_asked,rc,wall_ms" >"$out/sessions.csv"
echo "round,program,n,variant,rc,check,ms" >"$out/runs.csv"
failed() { echo "FAILED: $*"; tail -n 3 "$out/run.log"; }
# The side an alternating run's learned grids take in round (or panel round) $1: odd in odd
# ones, even in even ones, as a session's alternating runs swap sides.
side_of() { (($1 % 2)) && echo odd || echo even; }
# sides PROFILE SIDE OUT: the run's two sides per search, split by gridsel (gridsel-research
# sides), for the report's section within one process.
sides() {
  "$GRIDSEL_RESEARCH" sides "$1" --learned "$2" >"$3" 2>>"$out/sides.log" ||
    { echo "FAILED: gridsel-research sides $1"; rm -f "$3"; }
}

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
  ((panel_alt)) || continue
  # The within panel: each grid pinned for every kernel, alternated with auto's in one process.
  # It follows the session, whose stores name the device the pins are for.
  stores=(--store "$store")
  for s in "$out"/sessions/*/store.json; do [[ -e $s ]] && stores+=(--store "$s"); done
  for grid in $grids; do
    if (($(elapsed) > limit)); then
      echo "tune-session.sh: time limit reached in $p's within panel: $grid and the grids after it left out"
      break
    fi
    g=${grid/,/_} pins=$out/panel-alt/$p.${grid/,/_}.json
    python3 "$report" panel-store "$out" "$p" "$grid" "${stores[@]}" --gridsel "$GRIDSEL_CLI" \
      --out "$pins" >/dev/null || { echo "FAILED: the within panel's store for $p $grid"; continue; }
    for ((k = 1; k <= (panel_rounds > 2 ? panel_rounds : 2); k++)); do
      at=$(side_of "$k")
      run_program "$out/run.log" GRIDSEL_POLICY=auto GRIDSEL_CACHE="$pins" GRIDSEL_LEARNED_ALTERNATE="$at" \
        GRIDSEL_PROFILE="$out/panel-alt/$p.$g.$k.csv" -- "$b/$p" "$n" "$reps" 0
      echo "$p,$n,\"$grid\",$k,$rc,$check,$ms" >>"$out/panel-alt.csv"
      [[ $rc == 0 && $check == pass ]] || failed "$p $n within panel $grid"
      sides "$out/panel-alt/$p.$g.$k.csv" "$at" "$out/sides/$p.$k.panel-$g.csv"
    done
  done
  echo "tune-session.sh: $p $n within panel done at $(elapsed) s"
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

variants=(auto auto2 learned llvm tune best learned-alt best-alt)
for ((r = 1; r <= max_rounds; r++)); do
  if (($(elapsed) > limit)); then
    echo "tune-session.sh: time limit reached before round $r"
    break
  fi
  at=$(side_of "$r")
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
        learned-alt) env=(GRIDSEL_POLICY=auto GRIDSEL_CACHE="$store" GRIDSEL_LEARNED_ALTERNATE="$at") ;;
        best-alt) env=(GRIDSEL_POLICY=auto GRIDSEL_CACHE="$best_set" GRIDSEL_LEARNED_ALTERNATE="$at") ;;
      esac
      profile=$out/profiles/$p.$r.$variant.csv
      run_program "$out/run.log" "${env[@]}" GRIDSEL_PROFILE="$profile" -- "$b/$p" "$n" "$reps" 0
      echo "$r,$p,$n,$variant,$rc,$check,$ms" >>"$out/runs.csv"
      [[ $rc == 0 && $check == pass ]] || failed "$p $n $variant round $r"
      # Split within the process: the alternating runs, and auto's by the same parity (A/A).
      [[ $variant == auto || $variant == *-alt ]] && sides "$profile" "$at" "$out/sides/$p.$r.$variant.csv"
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
