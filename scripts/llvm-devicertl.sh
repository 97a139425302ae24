#!/usr/bin/env bash
# Builds the NVPTX OpenMP device runtime (libomptarget-nvptx.bc and
# libompdevice.a) of LLVM 22 and 23 inside the Debian unstable root of
# scripts/llvm-toolchains.sh: Debian's packages of those releases ship none,
# so their clang cannot link an sm_90 offload program (docs/toolchain.md §5).
# As root; idempotent: a version whose runtime is installed is skipped. A
# version whose source the archive does not serve is left without one, with a
# warning, and the exit status is 3.
#
#   scripts/llvm-devicertl.sh [VERSION...]     (default: 22 23)
#
# For each version, from that release's own Debian source package (the same
# upstream tarball that built its clang):
# 1. apt-get source --download-only inside the root, with a private deb-src
#    list; only openmp/device, offload/include and libc's headers are
#    unpacked;
# 2. each source that openmp/device/CMakeLists.txt lists is compiled with
#    the release's clang++ and the command line that LLVM's runtimes build
#    gives it for the nvptx64-nvidia-cuda target, and the bitcode is linked
#    and archived as that build does it (clang -flto -r -Wl,--lto-emit-llvm
#    into libomptarget-nvptx.bc; llvm-ar into libompdevice.a). A CMake
#    runtimes build of LLVM 22 gives the same bitcode, but for the source
#    paths it names;
# 3. both land in /usr/lib/llvm-NN/lib/nvptx64-nvidia-cuda/ of the root,
#    where that clang's driver looks for them, as for LLVM 21.
# LLVM's runtimes build defines OMPTARGET_HAS_LIBC only when it also builds
# the GPU C library; Debian builds none, so neither does this.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
root=${GRIDSEL_LLVM_ROOT:-$repo/target/llvm-toolchains/sid}
mirror=${GRIDSEL_DEBIAN_MIRROR:-http://deb.debian.org/debian}
versions=("$@")
((${#versions[@]})) || versions=(22 23)

log() { printf 'llvm-devicertl.sh: %s\n' "$*" >&2; }
in_root() { chroot "$root" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }

[[ -x $root/usr/bin/env ]] || { log "no root at $root (run scripts/llvm-toolchains.sh)"; exit 1; }
exec 9>"$root.lock"
flock 9

# Work inside the root, so that the release's clang sees the sources.
work=/var/cache/gridsel-devicertl
apt_dir=$work/apt
mkdir -p "$root$apt_dir/lists/partial"
printf 'deb-src %s sid main\n' "$mirror" >"$root$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$apt_dir/lists" -o Acquire::Check-Valid-Until=false)
updated=
missing=()

for v in "${versions[@]}"; do
  dest=/usr/lib/llvm-$v/lib/nvptx64-nvidia-cuda
  [[ -x $root/usr/lib/llvm-$v/bin/clang ]] || { log "error: no clang $v in $root"; exit 1; }
  # The runtime must come from the source of the installed clang.
  pkg_version=$(in_root dpkg-query -W -f '${Version}' "clang-$v")
  stamp=$root$dest/.gridsel-devicertl
  if [[ -e $stamp && $(cat "$stamp") == "$pkg_version" ]]; then
    continue
  fi
  upstream=${pkg_version#*:}
  upstream=${upstream%-*}
  tarball=llvm-toolchain-${v}_$upstream.orig.tar.xz
  dir=$work/$v
  mkdir -p "$root$dir"
  if [[ ! -e $root$dir/$tarball ]]; then
    if [[ -z $updated ]]; then
      in_root apt-get "${apt_opts[@]}" update -q >&2
      updated=1
    fi
    log "downloading the source of llvm-toolchain-$v $pkg_version"
    # apt checks each file against the signed Sources index. Only the
    # upstream tarball is needed: a missing Debian part does not matter.
    in_root sh -c "cd $dir && apt-get $(printf '%q ' "${apt_opts[@]}") source --download-only \
      llvm-toolchain-$v=$pkg_version" 2>&1 | grep -v unsandboxed >&2 || true
    if [[ ! -e $root$dir/$tarball ]]; then
      log "warning: the archive serves no $tarball; LLVM $v keeps no NVPTX device runtime (its clang cannot link sm_90 programs)"
      missing+=("$v")
      rm -rf "${root:?}$dir"
      continue
    fi
  fi
  src=$dir/llvm-toolchain-${v}_$upstream
  if [[ ! -e $root$src/.unpacked ]]; then
    rm -rf "${root:?}$src"
    mkdir -p "$root$src"
    log "unpacking openmp/device, offload/include and libc's headers"
    tar -xJf "$root$dir/$tarball" -C "$root$src" --strip-components=1 --wildcards \
      '*/openmp/device/*' '*/offload/include/*' '*/libc/shared/*' '*/libc/src/__support/*' \
      '*/libc/include/*' '*/libc/hdr/*' '*/libc/config/*'
    touch "$root$src/.unpacked"
  fi

  log "building the NVPTX device runtime of LLVM $v"
  build=$dir/build
  rm -rf "${root:?}$build"
  mkdir -p "$root$build"
  target=nvptx64-nvidia-cuda
  # The command lines of LLVM's runtimes build for this target (runtimes/
  # with LLVM_ENABLE_RUNTIMES=openmp, CMAKE_CXX_COMPILER_TARGET and
  # LLVM_DEFAULT_TARGET_TRIPLE nvptx64-nvidia-cuda, CMAKE_BUILD_TYPE=Release),
  # in their order, less the warning flags: HandleLLVMOptions' and
  # HandleOpenMPOptions' code generation flags, CMAKE_CXX_FLAGS_RELEASE,
  # C++17, then openmp/device/CMakeLists.txt's options.
  cflags=(-fvisibility-inlines-hidden -ffunction-sections -fdata-sections
    -fno-semantic-interposition -fdata-sections -O3 -DNDEBUG)
  compile=(--target=$target -DSHARED_SCRATCHPAD_SIZE=512 -D__STDC_CONSTANT_MACROS
    -D__STDC_FORMAT_MACROS -D__STDC_LIMIT_MACROS
    -I"$src/openmp/device/include" -I"$src/libc" -I"$src/offload/include"
    "${cflags[@]}" -std=c++17
    -flto -fvisibility=hidden -nogpulib -nostdlibinc -fno-rtti -fno-exceptions
    -fconvergent-functions -Wno-unknown-cuda-version --target=$target
    -mllvm -vectorize-slp=false --cuda-feature=+ptx63)
  objects=()
  # The sources of that file's list, in its order, which is the link order.
  for name in $(grep -o 'src/[A-Za-z]*\.cpp' "$root$src/openmp/device/CMakeLists.txt"); do
    name=$(basename "$name" .cpp)
    in_root "clang++-$v" "${compile[@]}" -c "$src/openmp/device/src/$name.cpp" -o "$build/$name.o"
    objects+=("$build/$name.o")
  done
  in_root "clang++-$v" --target=$target "${cflags[@]}" -flto -r -nostdlib -Wl,--lto-emit-llvm \
    --target=$target "${objects[@]}" -o "$build/libomptarget-nvptx.bc"
  in_root sh -c "cd $build && llvm-ar-$v Dqc libompdevice.a libomptarget-nvptx.bc && llvm-ranlib-$v -D libompdevice.a"
  mkdir -p "$root$dest"
  install -m 644 "$root$build/libomptarget-nvptx.bc" "$root$build/libompdevice.a" "$root$dest/"
  printf '%s' "$pkg_version" >"$stamp"
  # The stamp stands for the source from now on: 200 MB less in the root.
  rm -rf "${root:?}$dir"
  log "installed $dest/libomptarget-nvptx.bc and libompdevice.a"
done
((${#missing[@]} == 0)) || exit 3
