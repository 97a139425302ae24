#!/bin/sh
# Extracts the LLVM 15 and 16 OpenMP runtimes (libomp, libomptarget and its
# plugins, omp.h) into DIR without installing them: they conflict with
# libomp-19-dev as packages. tests/preload.rs finds them through
# GRIDSEL_LLVM_RUNTIMES (default <repo>/target/llvm-runtimes).
#
#   tests/llvm-runtimes.sh [DIR]
#
# Idempotent: a package already extracted into DIR is skipped, and downloaded
# .debs are kept in DIR/.debs.
set -eu
dir=${1:-$(cd "$(dirname "$0")/.." && pwd)/target/llvm-runtimes}
mkdir -p "$dir/.debs"
dir=$(cd "$dir" && pwd)
for pkg in libomp5-15 libomp-15-dev libomp5-16 libomp-16-dev; do
  stamp="$dir/.debs/$pkg.extracted"
  [ -e "$stamp" ] && continue
  deb=$(ls "$dir/.debs/${pkg}_"*.deb 2>/dev/null | head -n 1 || true)
  if [ -z "$deb" ]; then
    (cd "$dir/.debs" && apt-get download "$pkg")
    deb=$(ls "$dir/.debs/${pkg}_"*.deb | head -n 1)
  fi
  dpkg -x "$deb" "$dir"
  touch "$stamp"
done
for v in 15 16; do
  test -e "$dir/usr/lib/llvm-$v/lib/libomptarget.so" || { echo "llvm-runtimes: no libomptarget in $dir/usr/lib/llvm-$v/lib" >&2; exit 1; }
done
echo "$dir"
