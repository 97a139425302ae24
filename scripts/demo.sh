#!/usr/bin/env bash
# The demo: builds the preload library (with the quick `demo` profile of
# Cargo.toml; it runs no command line, so builds none) and runs
# examples/demo.c, one kernel of each loop class, under it, each decision
# logged next to LLVM's grid. Installs only what that needs
# (scripts/install-deps.sh --demo: clang 19, libomp 19, gcc, Rust).
#
# With an NVIDIA GPU (`nvidia-smi -L` finds one) it builds the program for
# sm_90 (CUDA 12 tools from PyPI: bench/toolchain/setup.sh) and runs it on
# the GPU, the device read from the driver. Without one it runs
# examples/demo-sm_90, the program's sm_90 build as committed (rebuilt by
# tests/fixtures/regen-images.sh, checked by tests/demo.rs), with an H100
# forced (GRIDSEL_DEVICE=h100): gridsel decides from the kernels' compiled
# facts as on that GPU, and libomptarget, finding none, runs the regions on
# the host. Then the program's host-offload build shows libomptarget
# launching the grids gridsel wrote.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
bash scripts/install-deps.sh --demo
export PATH=$HOME/.cargo/bin:$PATH
cargo build --profile demo --quiet -p gridsel
lib=$repo/target/demo/libgridsel.so
out=target/demo-programs
mkdir -p "$out"
llvm_lib=/usr/lib/llvm-19/lib

if nvidia-smi -L >/dev/null 2>&1; then
  cuda=$(bash bench/toolchain/setup.sh)
  clang-19 -O3 -fopenmp --offload-arch=sm_90 --cuda-path="$cuda" \
    --libomptarget-nvptx-bc-path=$llvm_lib/ -Wl,-rpath,$llvm_lib examples/demo.c -o $out/demo-sm_90 -lm
  echo "== on the GPU, device read from the driver, policy ${GRIDSEL_POLICY:-auto}"
  GRIDSEL_LOG=info LIBOMPTARGET_INFO=16 OMP_TARGET_OFFLOAD=MANDATORY LD_PRELOAD=$lib $out/demo-sm_90
else
  clang-19 -O3 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -Wl,-rpath,$llvm_lib \
    examples/demo.c -o $out/demo-host -lm
  export GRIDSEL_DEVICE=${GRIDSEL_DEVICE:-h100}
  echo "== no GPU here: examples/demo-sm_90, the program's sm_90 build, with GRIDSEL_DEVICE=$GRIDSEL_DEVICE,"
  echo "   policy ${GRIDSEL_POLICY:-auto}: gridsel decides from each kernel's compiled facts, libomptarget"
  echo "   finds no GPU and runs the regions on the host"
  GRIDSEL_LOG=info LD_PRELOAD=$lib examples/demo-sm_90
  echo "== the host-offload build: libomptarget launches the grids gridsel wrote"
  LIBOMPTARGET_INFO=16 LD_PRELOAD=$lib $out/demo-host
fi
