# Sourced on the GPU machine by bench/gpu/*.sh: unpacks the runtime carried as
# .runtime.tar.xz and points the loader at it (GRIDSEL_HOST_DRY_RUN=1: a dry
# run here on host offload instead).
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export OMP_TARGET_OFFLOAD=MANDATORY
if [[ ${GRIDSEL_HOST_DRY_RUN:-0} == 1 ]]; then
  # A dry run of a script on the development machine: libomptarget's host
  # plugin runs the programs of bench/build/host (LLVM 19's honours the grids
  # gridsel picks), gridsel is the debug build and is told the device, there
  # being no CUDA driver to ask (a script that sweeps needs the library built
  # with `cargo build --features sweep`, as the tests build it).
  export GRIDSEL_BENCH_BIN=${GRIDSEL_BENCH_BIN:-$repo/bench/build/host}
  export GRIDSEL_LIB=${GRIDSEL_LIB:-$repo/target/debug/libgridsel.so}
  export GRIDSEL_CLI=${GRIDSEL_CLI:-$repo/target/debug/gridsel}
  export GRIDSEL_RESEARCH=${GRIDSEL_RESEARCH:-$repo/target/debug/gridsel-research}
  export GRIDSEL_DEVICE=${GRIDSEL_DEVICE:-h100}
  export GRIDSEL_COMMIT=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)
else
  export GRIDSEL_RUNTIME_DIR=${GRIDSEL_RUNTIME_DIR:-/tmp/gridsel-runtime}
  bash "$repo/bench/toolchain/runtime.sh" --extract "$GRIDSEL_RUNTIME_DIR" >/dev/null
  export LD_LIBRARY_PATH=$GRIDSEL_RUNTIME_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # stage.sh --packed: the staged build and the programs come as one archive.
  if [[ -f $repo/.stage/payload.tar.xz ]]; then
    tar -C "$repo/.stage" -xJf "$repo/.stage/payload.tar.xz"
    export GRIDSEL_BENCH_BIN=${GRIDSEL_BENCH_BIN:-$repo/.stage/bin}
  fi
  export GRIDSEL_LIB=$repo/.stage/libgridsel.so GRIDSEL_CLI=$repo/.stage/gridsel
  export GRIDSEL_RESEARCH=$repo/.stage/gridsel-research
  export GRIDSEL_COMMIT=$(cat "$repo/.stage/commit" 2>/dev/null || echo unknown)
fi

# run_program LOG [VAR=VALUE...] -- PROGRAM ARG...: runs PROGRAM under gridsel (LD_PRELOAD,
# killed after 120 s) with those variables set, its output in LOG; sets rc, ms (its wall
# time) and check (the program's own check=..., none when it printed none).
run_program() {
  local log=$1 t0
  shift
  local -a vars=()
  while [[ $1 != -- ]]; do
    vars+=("$1")
    shift
  done
  shift
  t0=$(date +%s%N)
  env "${vars[@]}" LD_PRELOAD="$GRIDSEL_LIB" timeout 120 "$@" >"$log" 2>&1
  rc=$?
  ms=$((($(date +%s%N) - t0) / 1000000))
  check=$(sed -n 's/.*check=\([A-Za-z]*\).*/\1/p' "$log" | head -n 1)
  check=${check:-none}
}
