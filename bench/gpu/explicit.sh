#!/usr/bin/env bash
# Does writing LLVM's own grid explicitly change a launch's time? Runs cg
# (short kernels, ~30-100 us) alternating pass-through (`llvm`), LLVM's grid
# written explicitly (`fixed:128,3200`, what `auto` launches for these trips),
# and `auto`, 8 times each; prints per-kernel medians of GRIDSEL_PROFILE and
# of the program's own timing. Then re-runs check-driver.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
out=${OUT:-/tmp/gridsel-explicit}; mkdir -p "$out"
b=$repo/bench/build/sm_90
rm -f "$out"/x-*.csv "$out"/x-*.txt
for i in 1 2 3 4 5 6 7 8; do
  for p in llvm fixed:128,3200 auto; do
    tag=${p//[:,]/_}
    GRIDSEL_POLICY=$p GRIDSEL_PROFILE=$out/x-$tag.csv LD_PRELOAD=$GRIDSEL_LIB "$b/cg" 1048576 20 1 >> "$out/x-$tag.txt"
  done
done
python3 - "$out" <<'PY' | tee "$out/explicit.csv"
import csv, statistics, sys, collections, glob, re
out = sys.argv[1]
print("policy,kernel,profile_median_us,program_median_ms_of_medians,launches")
for f in sorted(glob.glob(f"{out}/x-*.csv")):
    tag = f.split("/x-")[1][:-4]
    t = collections.defaultdict(list)
    for r in csv.DictReader(open(f)):
        t[r["kernel"].rsplit("_", 1)[-1]].append(int(r["ns"]) / 1e3)
    prog = collections.defaultdict(list)
    for line in open(f[:-4] + ".txt"):
        m = re.search(r"kernel=(\S+) .*median_ms=([0-9.]+)", line)
        if m: prog[m.group(1)].append(float(m.group(2)))
    for k, v in sorted(t.items()):
        print(f"{tag},{k},{statistics.median(v):.1f},,{len(v)}")
    for k, v in sorted(prog.items()):
        print(f"{tag},program:{k},,{statistics.median(v):.4f},{len(v)}")
PY
"$GRIDSEL_RESEARCH" check-driver "$b"/* > "$out/check-driver.csv"; echo "check-driver rc=$?"
grep -v ",checked," "$out/check-driver.csv" | head -30
