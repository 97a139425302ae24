#!/usr/bin/env bash
# Installs what building and testing gridsel needs on Debian 12, as root.
# Idempotent: each step is skipped when its result is already there.
#   - clang 19 + libomp 19 (libomptarget with the host plugin), clang-tools-19;
#   - clang 15 and 16 and, privately under target/llvm-runtimes, their OpenMP
#     runtimes (Debian's libomp packages conflict with each other), for the
#     KernelArgs v1/v2 tests;
#   - CUDA 12 ptxas/libdevice and an nvlink stand-in from PyPI, for sm_90
#     images (bench/toolchain/setup.sh);
#   - clang 21, 22 and 23 with their runtimes in a Debian unstable root under
#     target/llvm-toolchains (scripts/llvm-toolchains.sh; about 2.5 minutes
#     and 1.9 GB the first time), and the NVPTX OpenMP device runtime of 22
#     and 23, which Debian ships none of, built from Debian's source of each
#     release (scripts/llvm-devicertl.sh; about 30 s each);
#   - matplotlib for the harness's plot;
#   - Rust 1.95.0 when no Rust is installed, with rustfmt and clippy.
# With --demo, only what scripts/demo.sh and a build of gridsel need: clang
# 19 with its offload tools, libomp 19, gcc and Rust (71 packages, 144 MB to
# download on a fresh Debian 12, against 191 packages and 349 MB for the
# tests; docs/toolchain.md §6).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

demo=false
[[ ${1:-} == --demo ]] && demo=true
# gcc is Rust's linker (`cc`); curl fetches rustup; clang-tools-19 has the
# clang-offload-packager and clang-linker-wrapper of clang 19's offload builds.
packages=(clang-19 clang-tools-19 libomp-19-dev gcc libc6-dev ca-certificates curl)
$demo || packages+=(clang-15 clang-tools-15 clang-16 clang-tools-16
  binutils make python3 python3-pip python3-matplotlib xz-utils debootstrap)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ! command -v cargo >/dev/null; then
  if [[ -x $HOME/.cargo/bin/cargo ]]; then
    export PATH=$HOME/.cargo/bin:$PATH
  else
    # rustup's installer script, as https://sh.rustup.rs serves it, from where
    # rustup itself downloads (a network that lets rustup through may not let
    # that short name through). Rust 1.95.0, the release the code is checked
    # clean against: a newer one's new deprecations fail test.sh's -D warnings.
    curl -sSf https://static.rust-lang.org/rustup/rustup-init.sh |
      sh -s -- -y --profile minimal --default-toolchain 1.95.0
    export PATH=$HOME/.cargo/bin:$PATH
  fi
fi
# The tests' checks need rustfmt and clippy; the demo's build does not.
if ! $demo && command -v rustup >/dev/null &&
  ! { cargo fmt --version && cargo clippy --version; } >/dev/null 2>&1; then
  rustup component add rustfmt clippy
fi

$demo && exit 0

# The harness's plot (and its test) needs matplotlib for whichever python3
# runs it: Debian's package above, or pip where python3 is not Debian's.
python3 -c 'import matplotlib' 2>/dev/null ||
  python3 -m pip install -q --disable-pip-version-check matplotlib

bash "$repo/tests/llvm-runtimes.sh" "$repo/target/llvm-runtimes" >/dev/null
bash "$repo/bench/toolchain/setup.sh" >/dev/null
bash "$repo/scripts/llvm-toolchains.sh" >/dev/null
# The sm_90 programs of clang 22 and 23 need it; without it (exit 3, said on
# stderr) only their sm_90 builds fail.
bash "$repo/scripts/llvm-devicertl.sh" || [[ $? == 3 ]]
