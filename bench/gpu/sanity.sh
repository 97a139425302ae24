#!/usr/bin/env bash
# Last check of a build on the GPU: the demo and a few suite programs under
# the default policy, tune, and the paper's policy, each checking its results.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
b=${GRIDSEL_BENCH_BIN:-$repo/bench/build/sm_90}
fail=0
GRIDSEL_LOG=info LIBOMPTARGET_INFO=16 LD_PRELOAD=$GRIDSEL_LIB "$repo/.stage/demo-sm_90" || fail=1
for prog in "gemm 512" "cg 65536" "probe_nested 512" "syrk 256" "mriq 2048" "probe_cap 100000" "gramschmidt 128"; do
  set -- $prog
  for p in "" tune lloyd forest; do
    line=$(GRIDSEL_POLICY=$p GRIDSEL_CACHE=/tmp/sanity-cache.json LD_PRELOAD=$GRIDSEL_LIB "$b/$1" "$2" 80 1 | grep check=)
    echo "$1 $2 policy=${p:-default}: $line"
    [[ $line == *check=pass* ]] || fail=1
  done
done
echo "sanity: $([[ $fail == 0 ]] && echo all correct || echo FAILURES)"
