#!/usr/bin/env bash
# Installs clang 21, 22 and 23 with their OpenMP offload runtimes in a Debian
# unstable root under target/ (the host's Debian 12 has none of them, and
# their libraries need unstable's glibc), for the end-to-end tests of each
# LLVM version (docs/toolchain.md §5). scripts/llvm-root.sh runs a command
# inside it. As root; idempotent: each step is skipped when its result is
# there, so a second run takes a second.
#
#   scripts/llvm-toolchains.sh [ROOT]     (default <repo>/target/llvm-toolchains/sid)
#
# 1. debootstrap --variant=minbase sid ROOT;
# 2. apt inside: clang-NN, clang-tools-NN (clang-linker-wrapper,
#    clang-nvlink-wrapper), llvm-NN (llvm-offload-binary, which clang 23's
#    driver runs) and libomp5 (one package for every version);
# 3. the OpenMP runtimes, liboffload-NN(-dev) and libomp-NN-dev, unpacked
#    with dpkg -x rather than installed: the packages of different versions
#    conflict as packages, but their files (under /usr/lib/llvm-NN) do not;
# 4. a CUDA folder inside the root, /opt/cuda, with copies of the CUDA 12 tools
#    that bench/toolchain/setup.sh sets up (its links point outside the root).
# LLVM 20 is in no suite of Debian's archive (sid, experimental, forky, trixie
# and its backports, bookworm-backports); it is not installed.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
root=${1:-${GRIDSEL_LLVM_ROOT:-$repo/target/llvm-toolchains/sid}}
versions=(21 22 23)
mirror=${GRIDSEL_DEBIAN_MIRROR:-http://deb.debian.org/debian}

log() { printf 'llvm-toolchains.sh: %s\n' "$*" >&2; }
in_root() { chroot "$root" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }

mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
flock 9

# --- 1. the root -------------------------------------------------------------
if [[ ! -e $root/.gridsel-base ]]; then
  command -v debootstrap >/dev/null || {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >&2
  }
  rm -rf "$root"
  log "debootstrap sid into $root"
  debootstrap --variant=minbase sid "$root" "$mirror" >&2
  touch "$root/.gridsel-base"
fi

# --- 2. compilers --------------------------------------------------------------
packages=(libomp5)
for v in "${versions[@]}"; do packages+=("clang-$v" "clang-tools-$v" "llvm-$v"); done
if [[ ! -e $root/.gridsel-packages || $(cat "$root/.gridsel-packages") != "${packages[*]}" ]]; then
  log "installing ${packages[*]}"
  # The mirror may serve a Release file past its Valid-Until date (a frozen
  # mirror, or a clock ahead of it); the packages are still signed.
  in_root apt-get -o Acquire::Check-Valid-Until=false update -q >&2
  in_root apt-get install -y -q --no-install-recommends "${packages[@]}" >&2
  in_root apt-get clean
  printf '%s' "${packages[*]}" >"$root/.gridsel-packages"
fi

# --- 3. runtimes -----------------------------------------------------------------
debs=$root/var/cache/gridsel-debs
mkdir -p "$debs"
for v in "${versions[@]}"; do
  for pkg in "liboffload-$v" "liboffload-$v-dev" "libomp-$v-dev"; do
    [[ -e $debs/$pkg.extracted ]] && continue
    # As root inside the root, apt cannot drop to _apt for a folder it does
    # not own; it says so and downloads anyway.
    in_root sh -c "cd /var/cache/gridsel-debs && apt-get download -q $pkg" 2>&1 |
      grep -v 'unsandboxed' >&2 || true
    deb=$(ls "$debs/${pkg}_"*.deb)
    dpkg -x "$deb" "$root"
    rm -f "$deb"
    touch "$debs/$pkg.extracted"
  done
done

# --- 4. CUDA tools ----------------------------------------------------------------
cuda=$(bash "$repo/bench/toolchain/setup.sh" | tail -n 1)
jit=$(dirname "$(readlink -f "$cuda/bin/ptxas")")/../../nvjitlink
mkdir -p "$root/opt/cuda/bin" "$root/opt/cuda/lib" "$root/opt/cuda/include" "$root/opt/cuda/nvvm/libdevice"
copy() { [[ -e $2 && ! $1 -nt $2 ]] || cp -L --preserve=timestamps "$1" "$2"; }
copy "$cuda/bin/ptxas" "$root/opt/cuda/bin/ptxas"
copy "$cuda/nvvm/libdevice/libdevice.10.bc" "$root/opt/cuda/nvvm/libdevice/libdevice.10.bc"
copy "$cuda/version.txt" "$root/opt/cuda/version.txt"
copy "$jit/lib/libnvJitLink.so.12" "$root/opt/cuda/lib/libnvJitLink.so.12"
copy "$jit/include/nvJitLink.h" "$root/opt/cuda/include/nvJitLink.h"
nvlink_src=$repo/bench/toolchain/nvlink.c
if [[ ! -x $root/opt/cuda/bin/nvlink || $nvlink_src -nt $root/opt/cuda/bin/nvlink ]]; then
  cp "$nvlink_src" "$root/opt/cuda/nvlink.c"
  in_root "clang-${versions[-1]}" -O2 -I/opt/cuda/include -o /opt/cuda/bin/nvlink /opt/cuda/nvlink.c \
    /opt/cuda/lib/libnvJitLink.so.12 -Wl,-rpath,/opt/cuda/lib
  rm "$root/opt/cuda/nvlink.c"
fi

for v in "${versions[@]}"; do
  for f in bin/clang lib/libomptarget.so; do
    [[ -e $root/usr/lib/llvm-$v/$f ]] || { log "error: no $f for LLVM $v in $root"; exit 1; }
  done
done
printf '%s\n' "$root"
