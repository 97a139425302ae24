#!/usr/bin/env bash
# Turns the merged sweep (bench/results/h100/raw, jobs.jsonl) into the
# published results, reproducibly, on the development machine:
#   bench/harness/finalize.sh [RESULTS [DESCRIPTION]]   (GRIDSEL_BASE_DEVICE: the GPU's preset)
#   summary.csv/points.csv       per-point medians (harness summarize)
#   DESCRIPTION (crates/gridsel-core/data/h100.toml) calibrated constants (gridsel-research calibrate, leave-one-out)
#   auto-loo.csv                 auto's grid per case with its fold's constants
#   {lloyd,occupancy}-eval.csv   the stateless policies' grids under the final descriptors
#   forest-loo.csv               the forest, leave-one-kernel-out (bench/forest/train.py)
#   tune-sim.csv                 the tuner replayed on the measured medians, 10 runs of 1 and of 20 launches
#   report.md, fig8.svg/png      Table I and Fig. 8 over all of them
#   static-ceiling.md            the best any single static long-loop rule reaches (in-sample)
# Every policy's time is the MEASURED median of the grid it picks (a grid the
# sweep did not measure leaves that case out of that policy's rows).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
R=${1:-bench/results/h100}
DESCRIPTION=${2:-crates/gridsel-core/data/h100.toml}
D=${GRIDSEL_BASE_DEVICE:-h100}   # the preset (or profile) of the measured GPU
B=${GRIDSEL_BIN_DIR:-bench/build/sm_90}
G=target/release/gridsel                # the harness finds gridsel-research beside it
GR=target/release/gridsel-research
H="python3 bench/harness/gridsel_bench.py"
cargo build --release --quiet

$H summarize "$R" --gridsel "$G" --bin-dir "$B"
$GR calibrate --points "$R/points.csv" --binaries "$B" --device "$D" --out "$DESCRIPTION" --loo-csv "$R/auto-loo.csv"
$H add-policy "$R" --name auto --file "$R/auto-loo.csv"
for p in lloyd occupancy; do
  $GR evaluate --points "$R/points.csv" --binaries "$B" --device "$D" --policy "$p" > "$R/$p-eval.csv"
  $H add-policy "$R" --name "$p" --file "$R/$p-eval.csv"
done
python3 bench/forest/train.py --results "$R" --binaries "$B" --out crates/gridsel-core/data/h100-forest.json \
  --report "$R/forest-loo.csv"
$H add-policy "$R" --name forest --file "$R/forest-loo.csv" --columns forest_threads,forest_blocks,forest_ms
$GR tune-sim --points "$R/points.csv" --binaries "$B" --device "$D" > "$R/tune-sim.csv"
# tune's grid: the one its search keeps after 10 runs of 20 launches (the store carried from
# run to run; its exploration launches are counted in tune-sim.csv's spent_ms_run1).
$H add-policy "$R" --name tune --file "$R/tune-sim.csv" --where launches_per_run=20 \
  --columns kept_threads_run10,kept_blocks_run10,kept_ms_run10
$H report "$R" --gridsel "$G" --policies lloyd,occupancy,forest,tune,auto
$H ceiling "$R" --gridsel "$G" --bin-dir "$B" --device "$D"
