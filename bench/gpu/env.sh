# Sourced on the GPU machine by bench/gpu/*.sh: unpacks the runtime carried as
# .runtime.tar.xz and points the loader at it.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export GRIDSEL_RUNTIME_DIR=${GRIDSEL_RUNTIME_DIR:-/tmp/gridsel-runtime}
bash "$repo/bench/toolchain/runtime.sh" --extract "$GRIDSEL_RUNTIME_DIR" >/dev/null
export LD_LIBRARY_PATH=$GRIDSEL_RUNTIME_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMP_TARGET_OFFLOAD=MANDATORY
# stage.sh --packed: the staged build and the programs come as one archive.
if [[ -f $repo/.stage/payload.tar.xz ]]; then
  tar -C "$repo/.stage" -xJf "$repo/.stage/payload.tar.xz"
  export GRIDSEL_BENCH_BIN=${GRIDSEL_BENCH_BIN:-$repo/.stage/bin}
fi
export GRIDSEL_LIB=$repo/.stage/libgridsel.so GRIDSEL_CLI=$repo/.stage/gridsel
export GRIDSEL_RESEARCH=$repo/.stage/gridsel-research
export GRIDSEL_COMMIT=$(cat "$repo/.stage/commit" 2>/dev/null || echo unknown)

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
