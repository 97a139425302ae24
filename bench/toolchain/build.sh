#!/usr/bin/env bash
# Builds every bench/kernels/*.c (one program per file, includes common.h from
# the same folder) twice:
#   OUTDIR/sm_90/<name>  clang-19 OpenMP offload to NVIDIA sm_90 (CUDA 12 tools
#                        from setup.sh), runs on the H100 machine,
#   OUTDIR/host/<name>   offload to libomptarget's x86_64 host plugin (no GPU).
# With GRIDSEL_LLVM_VERSION=21 (22, 23) the compiler is that clang, run inside
# the Debian unstable root of scripts/llvm-toolchains.sh (docs/toolchain.md
# §5); the programs need that version's runtime: inside the root, or its
# bundle from runtime-llvm.sh on the GPU machine. Debian's LLVM 22 and 23 ship
# no NVPTX device runtime: their sm_90 programs need the one that
# scripts/llvm-devicertl.sh builds.
# Only programs whose .c, common.h or this script are newer than the binary
# are rebuilt; builds run in parallel. Exits non-zero, naming each failed
# build and showing its log, if any build fails.
#
# Usage: bench/toolchain/build.sh [OUTDIR]     (default <repo>/bench/build, or
#        <repo>/bench/build/llvmNN for GRIDSEL_LLVM_VERSION=NN other than 19)
# Variables:
#   GRIDSEL_LLVM_VERSION   clang's version (default 19, this machine's); another
#                          needs OUTDIR and the sources inside the repository,
#                          the only folder the root sees
#   GRIDSEL_PROGRAMS       names of the programs to build, separated by spaces
#                          (default: every program in the source folder)
#   GRIDSEL_KERNELS_DIR    source folder (default <repo>/bench/kernels)
#   GRIDSEL_OFFLOAD_ARCH   GPU arch (default sm_90; also the output subfolder)
#   GRIDSEL_CFLAGS         extra flags for both builds (e.g. "-DFOO=1")
#   GRIDSEL_JOBS           parallel jobs (default nproc)
#   GRIDSEL_TOOLCHAIN_DIR  see setup.sh
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/../.." && pwd)
version=${GRIDSEL_LLVM_VERSION:-19}
if [[ $version == 19 ]]; then
  out=${1:-$repo/bench/build}
else
  out=${1:-$repo/bench/build/llvm$version}
fi
src=${GRIDSEL_KERNELS_DIR:-$repo/bench/kernels}
arch=${GRIDSEL_OFFLOAD_ARCH:-sm_90}
jobs=${GRIDSEL_JOBS:-$(nproc)}
llvm_lib=/usr/lib/llvm-19/lib

mkdir -p "$out"
out=$(cd -- "$out" && pwd)
src=$(cd -- "$src" && pwd)

cuda=$("$here/setup.sh" | tail -n 1)
[[ -x $cuda/bin/nvlink ]] || { echo "build.sh: setup.sh gave no CUDA folder" >&2; exit 1; }

shopt -s nullglob
if [[ -n ${GRIDSEL_PROGRAMS:-} ]]; then
  sources=()
  for name in $GRIDSEL_PROGRAMS; do
    [[ -f $src/$name.c ]] || { echo "build.sh: no program $name in $src" >&2; exit 1; }
    sources+=("$src/$name.c")
  done
else
  sources=("$src"/*.c)
fi
if ((${#sources[@]} == 0)); then
  echo "build.sh: no programs in $src" >&2
  exit 0
fi

# Shared by both targets. GRIDSEL_CFLAGS is split on spaces on purpose.
# shellcheck disable=SC2206
common_flags=(-O3 -fopenmp -I"$src" ${GRIDSEL_CFLAGS:-})
host_flags=(-fopenmp-targets=x86_64-pc-linux-gnu)
if [[ $version == 19 ]]; then
  compiler=(clang-19)
  gpu_flags=(--offload-arch="$arch" --cuda-path="$cuda" --libomptarget-nvptx-bc-path="$llvm_lib/")
  link_flags=("-Wl,-rpath,$llvm_lib" -lm)
else
  # The root's clang finds its own device runtime; /opt/cuda is the root's
  # copy of the CUDA tools. The root's default libomptarget.so is one
  # release's (21's) for every clang, so each program is linked against its
  # own release's, and finds it by its run path.
  compiler=("$repo/scripts/llvm-root.sh" "clang-$version")
  "${compiler[@]}" --version >/dev/null ||
    { echo "build.sh: no clang-$version in the root (scripts/llvm-toolchains.sh)" >&2; exit 1; }
  gpu_flags=(--offload-arch="$arch" --cuda-path=/opt/cuda)
  llvm_lib=/usr/lib/llvm-$version/lib
  link_flags=(-L"$llvm_lib" "-Wl,-rpath,$llvm_lib" -lm)
fi

# One build: TARGET SOURCE. Writes OUT/TARGET/NAME atomically; log in
# OUT/logs/TARGET/NAME.log; a failure leaves OUT/logs/TARGET/NAME.failed.
compile_one() {
  local target=$1 c=$2 name dir log
  name=$(basename "$c" .c)
  dir=$out/$target
  log=$out/logs/$target/$name.log
  local -a flags
  if [[ $target == host ]]; then flags=("${host_flags[@]}"); else flags=("${gpu_flags[@]}"); fi
  rm -f "$out/logs/$target/$name.failed"
  local t0=$SECONDS
  if "${compiler[@]}" "${common_flags[@]}" "${flags[@]}" "$c" "${link_flags[@]}" \
       -o "$dir/.$name.tmp" >"$log" 2>&1; then
    mv -f "$dir/.$name.tmp" "$dir/$name"
    echo "build.sh: built $target/$name ($((SECONDS - t0)) s)" >&2
  else
    rm -f "$dir/.$name.tmp"
    touch "$out/logs/$target/$name.failed"
    echo "build.sh: FAILED $target/$name (log: $log)" >&2
    return 1
  fi
}

# Decide what is stale.
work=()
for target in "$arch" host; do
  mkdir -p "$out/$target" "$out/logs/$target"
  for c in "${sources[@]}"; do
    name=$(basename "$c" .c)
    bin=$out/$target/$name
    if [[ ! -f $bin || $c -nt $bin || $src/common.h -nt $bin || "$here/build.sh" -nt $bin ||
          -f $out/logs/$target/$name.failed ]]; then
      work+=("$target" "$c")
    fi
  done
done

if ((${#work[@]} == 0)); then
  echo "build.sh: ${#sources[@]} programs up to date in $out" >&2
  exit 0
fi

export out arch
export -f compile_one
# Arrays cannot be exported; pass them through declare -p.
flag_defs=$(declare -p compiler common_flags gpu_flags host_flags link_flags)
export flag_defs
echo "build.sh: $((${#work[@]} / 2)) builds, $jobs at a time, into $out" >&2
rc=0
# shellcheck disable=SC2016  # expanded by the inner bash
printf '%s\0' "${work[@]}" |
  xargs -0 -n 2 -P "$jobs" bash -c 'eval "$flag_defs"; compile_one "$@"' _ || rc=$?

failed=()
for ((i = 0; i < ${#work[@]}; i += 2)); do
  target=${work[i]}
  name=$(basename "${work[i + 1]}" .c)
  if [[ -f $out/logs/$target/$name.failed ]]; then failed+=("$target/$name"); fi
done
if ((${#failed[@]} > 0 || rc != 0)); then
  for f in "${failed[@]}"; do
    echo "===== build.sh: $f failed; $out/logs/$f.log:" >&2
    tail -n 40 "$out/logs/$f.log" >&2
  done
  echo "build.sh: ${#failed[@]} build(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "build.sh: all builds succeeded" >&2
