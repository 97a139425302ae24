#!/usr/bin/env bash
# Checks made once on the GPU after the sweep (all output under $OUT):
#  1. check-driver.csv: the cubin parser and the occupancy model against the
#     CUDA driver (cuFuncGetAttribute, cuOccupancy*), for every sm_90 program;
#  2. auto-vs-llvm.csv: the kernels where the sweep saw `auto` more than 3 %
#     slower than LLVM, re-measured with the two policies alternating 8 times;
#  3. tune.log: online tuning on the GPU, a cold run then a run from the cache,
#     against `auto` and `llvm` (program-reported medians);
#  4. demo.log: the README's demo program under the default policy;
#  5. crosscheck: GRIDSEL_PROFILE wall time against ncu's gpu__time_duration.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
out=${OUT:-/tmp/gridsel-final}; mkdir -p "$out"
b=$repo/bench/build/sm_90

echo "== 1. check-driver"
"$GRIDSEL_RESEARCH" check-driver "$b"/* > "$out/check-driver.csv"; echo "check-driver rc=$?"
grep -v ",checked," "$out/check-driver.csv" | head -20

echo "== 2. auto vs llvm, alternating"
rm -f "$out"/alt-*.csv
for i in 1 2 3 4 5 6 7 8; do
  for p in llvm auto; do
    GRIDSEL_POLICY=$p GRIDSEL_PROFILE=$out/alt-$p.csv LD_PRELOAD=$GRIDSEL_LIB "$b/gramschmidt" 512 3 1 >/dev/null
    GRIDSEL_POLICY=$p GRIDSEL_PROFILE=$out/alt-$p.csv LD_PRELOAD=$GRIDSEL_LIB "$b/probe_chunk" 16896 20 1 >/dev/null
    GRIDSEL_POLICY=$p GRIDSEL_PROFILE=$out/alt-$p.csv LD_PRELOAD=$GRIDSEL_LIB "$b/cg" 1048576 20 1 >/dev/null
  done
done
python3 - "$out" <<'PY' | tee "$out/auto-vs-llvm.csv"
import csv, statistics, sys, collections
out = sys.argv[1]
med = {}
for p in ("llvm", "auto"):
    t = collections.defaultdict(list)
    for r in csv.DictReader(open(f"{out}/alt-{p}.csv")):
        t[(r["kernel"], int(r["trip_count"]))].append(int(r["ns"]) / 1e6)
    med[p] = {k: (statistics.median(v), len(v), f"{r['threads']}x{r['blocks']}") for k, v in t.items()}
print("kernel,trip_count,llvm_ms,auto_ms,speedup,samples")
for k in sorted(med["llvm"]):
    if k in med["auto"] and k[1] in (512, 16896, 1048576):
        l, a = med["llvm"][k], med["auto"][k]
        print(f"{k[0]},{k[1]},{l[0]:.4f},{a[0]:.4f},{l[0]/a[0]:.3f},{l[1]}/{a[1]}")
PY

echo "== 3. tune"
{
  for prog in "mriq 8192" "syrk 1024"; do
    set -- $prog
    for p in llvm auto; do
      echo "-- $1 $2 $p"; GRIDSEL_POLICY=$p LD_PRELOAD=$GRIDSEL_LIB "$b/$1" "$2" 100 1 | grep -E "median|check"
    done
    rm -f /tmp/tune-cache.json
    echo "-- $1 $2 tune (cold)"
    GRIDSEL_POLICY=tune GRIDSEL_CACHE=/tmp/tune-cache.json GRIDSEL_LOG=info LD_PRELOAD=$GRIDSEL_LIB "$b/$1" "$2" 100 1 2>&1 | grep -E "median|check|tun|cache"
    echo "-- $1 $2 tune (from the cache)"
    GRIDSEL_POLICY=tune GRIDSEL_CACHE=/tmp/tune-cache.json GRIDSEL_LOG=info LD_PRELOAD=$GRIDSEL_LIB "$b/$1" "$2" 100 1 2>&1 | grep -E "median|check|tun|cache"
  done
} 2>&1 | tee "$out/tune.log"

echo "== 4. demo"
GRIDSEL_LOG=info LIBOMPTARGET_INFO=16 LD_PRELOAD=$GRIDSEL_LIB "$repo/.stage/demo-sm_90" 2>&1 | tee "$out/demo.log"

echo "== 5. crosscheck"
python3 "$repo/bench/harness/gridsel_bench.py" crosscheck --bin-dir "$b" --program gemm --n 1024 \
  --grid 128,8192 --lib "$GRIDSEL_LIB" --results "$out" 2>&1 | tail -15
