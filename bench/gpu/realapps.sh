#!/usr/bin/env bash
# The upstream mini-apps of shared/realapps (BabelStream, miniBUDE, XSBench, RSBench, PRK, LULESH,
# miniWeather: programs nobody here wrote) measured on the GPU, for Table I's upstream block.
#
#   bash bench/gpu/realapps.sh stage          here: builds them (shared/realapps/build.sh, clang 19,
#                                             sm_90) and packs the binaries, the programs' table
#                                             and miniBUDE's deck into .stage/realapps.tar.xz
#   bash bench/gpu/realapps.sh run [ENTRY...] on the GPU machine (after bench/gpu/stage.sh --packed):
#                                             every entry, or those named
#
# Each entry is measured one of two ways, both with the profile's per-launch time (the forwarded
# __tgt_target_kernel, launch and wait), as the suite's sweep is:
#   sweep  entries whose kernels launch every step: one run under GRIDSEL_POLICY=sweep with the
#          steps raised (SWEEP_ARGS) so that every point of a kernel's sweep space, the policies'
#          grids first, gets about four launches, interleaved in one process (TIMER=ncu: under
#          Nsight Compute, its device time per launch as well);
#   retime (RETIME_STORE=FILE set) the sweep's entries again, auto reading FILE, a store that pins
#          each kernel's best grid (gridsel_bench.py best-cache; or, RETIME_LABEL=learned, the
#          sessions' stores merged, to judge production again), alternating launch by launch with
#          auto's grid: best and auto timed in one process, which a minimum over many noisy points
#          is not (the sweep's best is its luckiest point);
#   tune   (TUNE=1) a `gridsel tune` session per entry from an empty store, then production reading
#          its store judged against auto's grids (tune_entry);
#   online (ONLINE=N) N rounds of a run under auto and one under online `tune` (GRIDSEL_POLICY=tune,
#          its store kept from round to round, GRIDSEL_TUNE_BOUND as set), in turns first: what
#          exploring costs each run against auto's, run by run (realapps.py online); ONLINE_CLOCK=gpu
#          sets GRIDSEL_TUNE_CLOCK for both runs (the profiles' times then the kernels' own, CUPTI's);
#   panel  entries whose kernels launch once or a few times a run (XSBench, RSBench, miniBUDE):
#          one run per policy and per grid of PANEL, in an order that rotates from round to round,
#          ROUNDS rounds (a sweep would need ~100 runs of each).
# Every run must pass the program's own check (the table's VERIFY); a run that does not is
# reported and left out. Output under $OUT/realapps/: ENTRY/*.csv (profiles), ENTRY/*.log,
# runs.csv (entry,mode,config,round,rc,check,wall_ms) and env.txt. bench/harness/realapps.py turns
# them into a results folder for gridsel_bench.py summarize/report.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
shared=${GRIDSEL_REALAPPS:-$repo/../shared/realapps}

# Steps raised for the sweep: the table's benchmark size, more iterations.
declare -A SWEEP_ARGS=(
  [babelstream]="-s 33554432 -n 500 -o All"
  [prk-nstream]="500 33554432"
  [prk-stencil]="500 8000 star 2"
  [prk-stencil-grid]="500 4000 grid 3"
  [prk-transpose]="500 8192"
  [prk-transpose-flat]="500 8192 8192"
  [lulesh]="-s 96 -i 500"
  [miniweather]=""
)
PANEL_POLICIES="llvm auto occupancy lloyd forest"
PANEL_GRIDS="64,1056 64,2112 64,4224 128,264 128,528 128,1056 128,2112 128,4224 256,264 256,528 256,1056 512,264 1024,132"
ROUNDS=${ROUNDS:-2}

stage() {
  local cuda out
  cuda=$(bash "$repo/bench/toolchain/setup.sh" | tail -n 1)
  out=$repo/bench/build/realapps
  OUT=$out CUDA=$cuda bash "$shared/build.sh" || return 1
  rm -rf "$out/pack" && mkdir -p "$out/pack/bin"
  cp "$out"/bin/* "$out/pack/bin/"
  cp "$shared/progs.sh" "$out/pack/"
  cp -r "$shared/inputs" "$out/pack/"
  mkdir -p "$repo/.stage"
  tar -C "$out/pack" -cJf "$repo/.stage/realapps.tar.xz" .
  ls -la "$repo/.stage/realapps.tar.xz"
}

run_one() { # ENTRY MODE CONFIG ROUND BINARY ARGS VERIFY [VAR=VALUE...]
  local entry=$1 mode=$2 config=$3 round=$4 bin=$5 args=$6 verify=$7
  shift 7
  local dir=$out/$entry tag=${config//[:,]/_}-r$round t0 rc check=fail
  mkdir -p "$dir/scratch"
  t0=$(date +%s%N)
  local -a timer=()
  # Under ncu each launch's device time is read too (ENTRY/TAG.ncu.csv): the profile's wall time
  # holds the launch's own ~10-20 us and, for `nowait` regions (miniWeather), is not the kernel's.
  # NCU_CACHE: ncu's --cache-control; its default, all, flushes the caches before every kernel,
  # `none` leaves them as the program's previous kernel left them, as in a run without ncu.
  [[ $mode != panel && ${TIMER:-profile} == ncu ]] &&
    timer=(ncu --clock-control none --cache-control "${NCU_CACHE:-all}" --metrics gpu__time_duration.sum --csv --log-file "$dir/$tag.ncu.csv")
  (cd "$dir/scratch" && env "$@" GRIDSEL_PROFILE="$dir/$tag.csv" LD_PRELOAD="$GRIDSEL_LIB" \
    timeout "${RUN_TIMEOUT:-300}" "${timer[@]}" "$bin" $args >"$dir/$tag.log" 2>&1)
  rc=$?
  case $verify in
    P:*) grep -Eq "${verify#P:}" "$dir/$tag.log" && check=pass ;;
    F:*) grep -Eq "${verify#F:}" "$dir/$tag.log" || check=pass ;;
  esac
  [[ $rc == 0 ]] || check=fail
  echo "$entry,$mode,\"$config\",$round,$rc,$check,$((($(date +%s%N) - t0) / 1000000))" >>"$out/runs.csv"
  [[ $check == pass ]] || { echo "FAILED: $entry $config round $round (rc=$rc)"; tail -n 3 "$dir/$tag.log"; }
}

# A `gridsel tune` session from an empty store (TUNE=1), then production judged against auto:
# within one process (auto reading the session's store, alternating with auto's grids, both
# parities, under ncu) where the kernels launch every step, else ROUNDS pairs of runs under auto
# without and with the store.
tune_entry() { # ENTRY BINARY ARGS VERIFY
  local entry=$1 bin=$2 args=$3 verify=$4 dir=$out/$1 check t0 rc
  mkdir -p "$dir/scratch" && rm -rf "$dir/session" "$dir/store.json"*
  # gridsel tune checks a pattern that must appear; a failure pattern (F:) is checked after the
  # session in every run's log instead, against the end of the results table it prints.
  case $verify in P:*) check=${verify#P:} ;; *) check='^Triad' ;; esac
  t0=$(date +%s%N)
  # TUNE_RUNS and TUNE_TIME: the session's --runs and --time; unset, gridsel tune's defaults.
  local -a budget=()
  [[ -n ${TUNE_RUNS:-} ]] && budget+=(--runs "$TUNE_RUNS")
  [[ -n ${TUNE_TIME:-} ]] && budget+=(--time "$TUNE_TIME")
  (cd "$dir/scratch" && "$GRIDSEL_CLI" tune "${budget[@]}" --check "$check" --store "$dir/store.json" \
    --lib "$GRIDSEL_LIB" --out "$dir/session" -- "$bin" $args >"$dir/session.txt" 2>&1)
  rc=$?
  if [[ $verify == F:* ]] && grep -rEq "${verify#F:}" "$dir/session" --include='*.log'; then rc=99; fi
  echo "$entry,session,\"tune\",1,$rc,$([[ $rc == 0 ]] && echo pass || echo fail),$((($(date +%s%N) - t0) / 1000000))" >>"$out/runs.csv"
  tail -n 4 "$dir/session.txt"
  [[ -f $dir/store.json ]] || return 0
  if [[ -v SWEEP_ARGS[$entry] ]]; then
    for side in odd even; do
      run_one "$entry" retime "learned-$side" 1 "$bin" "$args" "$verify" GRIDSEL_POLICY=auto \
        GRIDSEL_CACHE="$dir/store.json" GRIDSEL_LEARNED_ALTERNATE=$side
    done
  else
    for ((r = 1; r <= ROUNDS; r++)); do
      run_one "$entry" panel auto "$r" "$bin" "$args" "$verify" GRIDSEL_POLICY=auto GRIDSEL_CACHE=off
      run_one "$entry" panel learned "$r" "$bin" "$args" "$verify" GRIDSEL_POLICY=auto GRIDSEL_CACHE="$dir/store.json"
    done
  fi
}

run() {
  source "$repo/bench/gpu/env.sh"
  local pack=$repo/.stage/realapps
  mkdir -p "$pack" && tar -C "$pack" -xJf "$repo/.stage/realapps.tar.xz"
  out=${OUT:-/tmp}/realapps
  mkdir -p "$out"
  # A later call into the same folder adds its runs.
  [[ -f $out/runs.csv ]] || echo "entry,mode,config,round,rc,check,wall_ms" >"$out/runs.csv"
  { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; cat "$repo/.stage/commit"; } >"$out/env.txt" 2>&1
  local want=" $* " name binary cls bench check launches verify I=$pack/inputs
  source "$pack/progs.sh"
  while IFS='|' read -r name binary cls bench check launches verify; do
    [[ -z $name || $name == \#* ]] && continue
    [[ $want == "  " || $want == *" $name "* ]] || continue
    bench=${bench//\$I/$I} check=${check//\$I/$I}
    local bin=$pack/bin/$binary started=$SECONDS sweep_args=${SWEEP_ARGS[$name]-}
    if [[ ${GRIDSEL_HOST_DRY_RUN:-0} == 1 ]]; then
      # A dry run here: the host-offload builds at the table's small size.
      bin=$repo/bench/build/realapps/host/$binary bench=$check sweep_args=$check
    fi
    [[ -n ${STEPS:-} ]] && sweep_args=$(sed -E "s/(^| )(-n|-i) 500/\\1\\2 $STEPS/; s/^500 /$STEPS /" <<<"$sweep_args")
    if [[ -n ${ONLINE:-} ]]; then
      local args r
      args=$([[ -v SWEEP_ARGS[$name] ]] && echo "$sweep_args" || echo "$bench")
      rm -f "$out/$name/online.json"*
      for ((r = 1; r <= ONLINE; r++)); do
        local -a sides=(auto tune)
        ((r % 2 == 0)) && sides=(tune auto)
        for side in "${sides[@]}"; do
          run_one "$name" online "$side" "$r" "$bin" "$args" "$verify" GRIDSEL_POLICY="$side" \
            GRIDSEL_CACHE="$([[ $side == tune ]] && echo "$out/$name/online.json" || echo off)" \
            GRIDSEL_TUNE_CLOCK="${ONLINE_CLOCK:-host}"
        done
      done
    elif [[ ${TUNE:-0} == 1 ]]; then
      tune_entry "$name" "$bin" "$([[ -v SWEEP_ARGS[$name] ]] && echo "$sweep_args" || echo "$bench")" "$verify"
    elif [[ -n ${RETIME_STORE:-} ]]; then
      # Re-timing: auto reading a store that pins each kernel's best grid, alternating launch by
      # launch with auto's own grid (odd launches the store's in one run, even ones in the other),
      # so that best and auto are timed in one process without the sweep's pick of the luckiest.
      [[ -v SWEEP_ARGS[$name] ]] || { echo "realapps.sh: $name launches too seldom to re-time in one process"; continue; }
      for side in odd even; do
        run_one "$name" retime "${RETIME_LABEL:-best}-$side" 1 "$bin" "$sweep_args" "$verify" GRIDSEL_POLICY=auto \
          GRIDSEL_CACHE="$RETIME_STORE" GRIDSEL_LEARNED_ALTERNATE=$side
      done
    elif [[ -v SWEEP_ARGS[$name] ]]; then
      run_one "$name" sweep sweep 1 "$bin" "$sweep_args" "$verify" GRIDSEL_POLICY=sweep
    else
      local configs=() r i n
      for p in $PANEL_POLICIES; do configs+=("$p"); done
      for g in $PANEL_GRIDS; do configs+=("fixed:$g"); done
      n=${#configs[@]}
      for ((r = 1; r <= ROUNDS; r++)); do
        for ((i = 0; i < n; i++)); do
          local c=${configs[$(((i + (r - 1) * 7) % n))]}
          run_one "$name" panel "$c" "$r" "$bin" "$bench" "$verify" GRIDSEL_POLICY="$c"
        done
      done
    fi
    echo "realapps.sh: $name done in $((SECONDS - started)) s"
  done <<<"$PROGS"
  rm -rf "$out"/*/scratch
  awk -F, 'NR > 1 { n++; if ($(NF - 1) != "pass") f++ } END { printf "realapps.sh: %d runs, %d failed\n", n, f }' "$out/runs.csv"
}

case ${1:-} in
  stage) stage ;;
  run) shift; run "$@" ;;
  *) echo "usage: bash bench/gpu/realapps.sh stage | run [ENTRY...]" >&2; exit 2 ;;
esac
