#!/usr/bin/env bash
# The demo: builds gridsel and a small offload program with one kernel of
# each loop class, then runs it under gridsel with its decisions logged next
# to LLVM's and libomptarget's own launch lines.
# On a machine with an NVIDIA GPU it runs the sm_90 build on the GPU with the
# device read from the driver; elsewhere it runs the host-offload build with
# the H100 forced (GRIDSEL_DEVICE=h100), so the decisions are the same.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
bash scripts/install-deps.sh --no-llvm-root
export PATH=$HOME/.cargo/bin:$PATH
cargo build --release --quiet
out=target/demo; mkdir -p "$out"
cuda=$repo/.toolchain/cuda
rpath=-Wl,-rpath,/usr/lib/llvm-19/lib
clang-19 -O3 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu $rpath examples/demo.c -o $out/demo-host -lm
clang-19 -O3 -fopenmp --offload-arch=sm_90 --cuda-path="$cuda" \
  --libomptarget-nvptx-bc-path=/usr/lib/llvm-19/lib/ $rpath examples/demo.c -o $out/demo-sm_90 -lm

export GRIDSEL_LOG=info LIBOMPTARGET_INFO=16
if nvidia-smi -L >/dev/null 2>&1; then
  echo "== on the GPU, device read from the driver, policy ${GRIDSEL_POLICY:-default}"
  OMP_TARGET_OFFLOAD=MANDATORY LD_PRELOAD=$repo/target/release/libgridsel.so $out/demo-sm_90
else
  echo "== no GPU here: host offload, decisions made for a forced H100 (GRIDSEL_DEVICE=h100)"
  echo "   kernel facts from the sm_90 build:"
  target/release/gridsel inspect $out/demo-sm_90
  GRIDSEL_DEVICE=${GRIDSEL_DEVICE:-h100} LD_PRELOAD=$repo/target/release/libgridsel.so $out/demo-host
fi
