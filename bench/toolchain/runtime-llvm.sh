#!/usr/bin/env bash
# The runtime bundle of LLVM VERSION (21-23) for the GPU machine, taken from
# Debian unstable's root of scripts/llvm-toolchains.sh (docs/toolchain.md §5):
# libomptarget, libomp and every library ldd lists for them there, glibc and
# libstdc++ included (the GPU machine's may be older than unstable's), with
# unstable's loader, which runs the programs:
#   OUT/ld-linux-x86-64.so.2 --library-path OUT ./prog
# (The plugins are linked into libomptarget.) Everything is stripped, z3 is
# replaced by a stand-in (bench/toolchain/bundle.sh), then packed as
# OUT.tar.xz (the carry limit is 64 MiB).
#
#   bench/toolchain/runtime-llvm.sh VERSION [OUT]     (default <repo>/.runtime-llvmVERSION)
#   bench/toolchain/runtime-llvm.sh --extract TARBALL DIR   (on the GPU machine)
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/../.." && pwd)
source "$here/bundle.sh"
log() { printf 'runtime-llvm.sh: %s\n' "$*" >&2; }

if [[ ${1:-} == --extract ]]; then
  tarball=$2 dir=$3
  if [[ ! -f $dir/MANIFEST || $tarball -nt $dir/MANIFEST ]]; then
    bundle_unpack "$tarball" "$dir"
  fi
  printf '%s\n' "$dir"
  exit 0
fi

version=${1:?usage: runtime-llvm.sh VERSION [OUT]}
out=${2:-$repo/.runtime-llvm$version}
root=${GRIDSEL_LLVM_ROOT:-$repo/target/llvm-toolchains/sid}
roots=("/usr/lib/llvm-$version/lib/libomptarget.so.$version.1" /usr/lib/x86_64-linux-gnu/libomp.so.5)
for r in "${roots[@]}"; do
  [[ -f $root$r ]] || { log "no $r in $root (scripts/llvm-toolchains.sh)"; exit 1; }
done

rm -rf "$out"
mkdir -p "$out"
# "name => path (address)" for the closure; the loader is the one line
# without an arrow that names a file.
"$repo/scripts/llvm-root.sh" ldd "${roots[@]}" |
  awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 } $1 ~ /^\/.*ld-linux/ { print "ld-linux-x86-64.so.2", $1 }' |
  sort -u | while read -r name path; do
    cp -L "$root$path" "$out/$name"
  done
for r in "${roots[@]}"; do cp -L "$root$r" "$out/"; done
find "$out" -type f ! -name 'ld-linux*' -exec strip --strip-unneeded {} +
# libLLVM links z3 only for the static analyzer's SMT solver, which the
# offload runtime never calls; z3 is 28 MB of the bundle (8.5 MB packed).
[[ ! -f $out/libz3.so.4 ]] || bundle_standin "$out" libz3.so.4
(cd "$out" && ls | sort >MANIFEST)
# About a minute on the dev VM for LLVM 21 (31.2 MB).
bundle_pack "$out" "$out.tar.xz"
log "LLVM $version: $(wc -l <"$out/MANIFEST") files, $(($(du -sb "$out" | cut -f1) / 1000000)) MB," \
  "$(($(stat -c %s "$out.tar.xz") / 1000000)) MB as $out.tar.xz"
printf '%s\n' "$out.tar.xz"
