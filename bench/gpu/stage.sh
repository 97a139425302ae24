#!/usr/bin/env bash
# Builds everything a GPU run needs, here, and stages it for the device tool:
#   .stage/libgridsel.so, .stage/gridsel, .stage/gridsel-research
#                                          (stripped release builds; the
#                                          library with the harness's `sweep`
#                                          policy, feature `sweep`)
#   .stage/demo-sm_90                      (the README's demo program)
#   .stage/launch_path                     (the criterion launch-path benchmark)
#   bench/build/{sm_90,host}/*             (the benchmark programs)
#   .runtime.tar.xz                        (libomptarget and its libraries)
# A device call then carries [".stage", "bench/build", ".runtime.tar.xz"]
# (under the 64 MiB limit while the tracked files stay small) and runs
# bench/gpu/*.sh there.
#
# --packed [FILE...]: the tracked files have grown to leave no room for that
# (the limit counts 1 KiB blocks), so pack libgridsel.so, commit, the sm_90
# programs (as bin/) and the other staged FILEs named (gridsel for compare.sh,
# gridsel-research for check-driver in final.sh and explicit.sh, launch_path,
# demo-sm_90) into one archive, .stage/payload.tar.xz (about 1 MB
# without FILEs; nothing else stays in .stage). env.sh unpacks it on the GPU
# machine into .stage/, and .stage/bin becomes GRIDSEL_BENCH_BIN. The call
# carries [".stage", ".runtime.tar.xz"].
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
cargo build --release --quiet --features gridsel/sweep
mkdir -p .stage
for f in libgridsel.so gridsel gridsel-research; do
  strip -o ".stage/$f" "target/release/$f"
done
bench_exe=$(cargo bench --bench launch_path --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys; print([m["executable"] for m in map(json.loads, sys.stdin) if m.get("target", {}).get("name") == "launch_path"][-1])')
strip -o .stage/launch_path "$bench_exe"
# The demo needs the sm_90 toolchain; on a fresh checkout nothing has set it
# up yet (build.sh below would, too late), so set it up first. A no-op when
# it exists; its one line on stdout is the CUDA folder.
cuda=$(bash bench/toolchain/setup.sh | tail -n 1)
clang-19 -O3 -fopenmp --offload-arch=sm_90 --cuda-path="$cuda" \
  --libomptarget-nvptx-bc-path=/usr/lib/llvm-19/lib/ -Wl,-rpath,/usr/lib/llvm-19/lib \
  examples/demo.c -o .stage/demo-sm_90 -lm
git rev-parse HEAD > .stage/commit 2>/dev/null || echo unknown > .stage/commit
bash bench/toolchain/build.sh
bash bench/toolchain/runtime.sh --tar >/dev/null
du -sh .stage bench/build .runtime.tar.xz
if [[ ${1:-} == --packed ]]; then
  shift
  pack=$(mktemp -d)
  for f in libgridsel.so commit "$@"; do
    cp ".stage/$f" "$pack/"
  done
  cp -r bench/build/sm_90 "$pack/bin"
  find .stage -mindepth 1 -delete
  tar -C "$pack" -cf - . | xz -9 >.stage/payload.tar.xz
  rm -rf "$pack"
  du -sh .stage/payload.tar.xz
fi
