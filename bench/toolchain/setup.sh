#!/usr/bin/env bash
# Sets up what bench/toolchain/build.sh needs to build clang-19 OpenMP offload
# programs for sm_90 on a machine without CUDA (see bench/README.md
# "## Toolchain" and docs/toolchain.md §1-2):
#   1. apt: clang-19 libomp-19-dev clang-tools-19 (skipped when present),
#   2. pip --target into $GRIDSEL_TOOLCHAIN_DIR/py: nvidia-cuda-nvcc-cu12 and
#      nvidia-nvjitlink-cu12 (CUDA 12 ptxas, libdevice, libnvJitLink),
#   3. a CUDA folder $GRIDSEL_TOOLCHAIN_DIR/cuda with bin/ptxas, bin/nvlink
#      (nvlink.c over nvJitLink), nvvm/libdevice/libdevice.10.bc and a
#      version.txt that clang 19 accepts.
# Idempotent and cached: a second run is a quick no-op. Progress goes to
# stderr; the only line on stdout is the CUDA folder, for --cuda-path.
#
# Variables:
#   GRIDSEL_TOOLCHAIN_DIR  cache folder (default <repo>/.toolchain)
#   GRIDSEL_WHEELHOUSE     folder with pre-downloaded wheels, used before PyPI
#                          (default /tmp/nvwheels when it exists)
#   PYTHON                 python with pip (default python3)
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/../.." && pwd)
tc=${GRIDSEL_TOOLCHAIN_DIR:-$repo/.toolchain}
py_prefix=$tc/py
cuda=$tc/cuda
python=${PYTHON:-python3}

nvcc_pkg=nvidia-cuda-nvcc-cu12==12.9.86
jit_pkg=nvidia-nvjitlink-cu12==12.9.86
cuda_version="CUDA Version 12.6.85"
llvm_lib=/usr/lib/llvm-19/lib

log() { printf 'setup.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

mkdir -p "$tc"
# Serialise concurrent runs (e.g. two build.sh at once).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$tc/.lock"
  flock 9
fi

# --- 1. apt packages --------------------------------------------------------
if command -v clang-19 >/dev/null 2>&1 &&
   command -v clang-nvlink-wrapper-19 >/dev/null 2>&1 &&
   [[ -f $llvm_lib/libomptarget-nvptx-sm_90.bc && -f $llvm_lib/libomptarget.so.19.1 ]]; then
  :
else
  log "installing clang-19 libomp-19-dev clang-tools-19 with apt"
  [[ $(id -u) -eq 0 ]] || die "clang-19 toolchain missing and not root; install clang-19 libomp-19-dev clang-tools-19"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2
  apt-get install -y -q --no-install-recommends clang-19 libomp-19-dev clang-tools-19 >&2
fi

# --- 2. NVIDIA wheels -------------------------------------------------------
stamp=$py_prefix/.gridsel-installed
want="$nvcc_pkg $jit_pkg"
pkgs=("$nvcc_pkg" "$jit_pkg")
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  if ! "$python" -m pip --version >/dev/null 2>&1; then
    log "no pip for $python; installing python3-pip with apt"
    [[ $(id -u) -eq 0 ]] || die "$python has no pip"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q --no-install-recommends python3-pip >&2
    python=python3
  fi
  wheelhouse=${GRIDSEL_WHEELHOUSE:-}
  if [[ -z $wheelhouse && -d /tmp/nvwheels ]]; then wheelhouse=/tmp/nvwheels; fi
  pip_args=(install --quiet --no-deps --disable-pip-version-check --upgrade
            --target "$py_prefix")
  if [[ -n $wheelhouse ]]; then pip_args+=(--find-links "$wheelhouse"); fi
  log "pip-installing $want into $py_prefix${wheelhouse:+ (wheelhouse $wheelhouse)}"
  rm -rf "$py_prefix"
  # --target does not touch the system site-packages; the variable only
  # silences Debian's PEP 668 guard on pip versions that apply it anyway.
  PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore "$python" -m pip "${pip_args[@]}" "${pkgs[@]}" >&2
  printf '%s' "$want" >"$stamp"
fi

nvcc_dir=$py_prefix/nvidia/cuda_nvcc
jit_dir=$py_prefix/nvidia/nvjitlink
[[ -f $nvcc_dir/bin/ptxas ]] || die "ptxas not found in $nvcc_dir (remove $stamp and retry)"
[[ -f $nvcc_dir/nvvm/libdevice/libdevice.10.bc ]] || die "libdevice not found in $nvcc_dir"
[[ -f $jit_dir/include/nvJitLink.h && -f $jit_dir/lib/libnvJitLink.so.12 ]] ||
  die "nvJitLink not found in $jit_dir"
chmod +x "$nvcc_dir/bin/ptxas"

# --- 3. the CUDA folder ------------------------------------------------------
mkdir -p "$cuda/bin" "$cuda/nvvm/libdevice" "$cuda/include"
ln -sfn "$nvcc_dir/bin/ptxas" "$cuda/bin/ptxas"
ln -sfn "$nvcc_dir/nvvm/libdevice/libdevice.10.bc" "$cuda/nvvm/libdevice/libdevice.10.bc"
if [[ ! -f $cuda/version.txt || $(cat "$cuda/version.txt") != "$cuda_version" ]]; then
  printf '%s\n' "$cuda_version" >"$cuda/version.txt"
fi

nvlink=$cuda/bin/nvlink
if [[ ! -x $nvlink || $here/nvlink.c -nt $nvlink || $here/setup.sh -nt $nvlink ]]; then
  command -v gcc >/dev/null 2>&1 || die "gcc not found (apt-get install gcc)"
  log "compiling $nvlink"
  gcc -O2 -Wall -Wextra -std=c11 -I"$jit_dir/include" -o "$nvlink.tmp" "$here/nvlink.c" \
    "$jit_dir/lib/libnvJitLink.so.12" -Wl,-rpath,"$jit_dir/lib"
  mv -f "$nvlink.tmp" "$nvlink"
fi

printf '%s\n' "$cuda"
