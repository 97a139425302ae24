#!/usr/bin/env bash
# Assembles the OpenMP offload runtime for the GPU machine (no clang there; see
# docs/toolchain.md §4): libomptarget.so.19.1, libomp.so.5 and every
# library ldd lists for them (recursively) except the glibc family and the
# GCC runtime (libstdc++, libgcc_s), which any Linux machine has. In practice:
# libLLVM.so.19.1 and its Debian 12 dependencies (z3, icu 72, xml2, edit,
# ffi, bsd, md, z, zstd, lzma, tinfo).
#
# Usage:
#   bench/toolchain/runtime.sh [--tar] [OUTDIR]   build here (default <repo>/.runtime)
#       --tar also writes a compressed copy, $GRIDSEL_RUNTIME_TAR
#       (default <repo>/.runtime.tar.xz, whatever OUTDIR is), that fits the
#       64 MiB a run may carry where the folder itself does not.
#   bench/toolchain/runtime.sh --extract [OUTDIR]  on the GPU machine: unpack
#       that tarball into OUTDIR (no-op when already unpacked).
# Then: LD_LIBRARY_PATH=OUTDIR OMP_TARGET_OFFLOAD=MANDATORY ./prog
# Idempotent: files are copied only when missing or older than the system's.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/../.." && pwd)
llvm_lib=/usr/lib/llvm-19/lib

mode=build
tar=0
case ${1:-} in
  --tar) tar=1; shift ;;
  --extract) mode=extract; shift ;;
esac
out=${1:-$repo/.runtime}
out=${out%/}
tarball=${GRIDSEL_RUNTIME_TAR:-$repo/.runtime.tar.xz}

log() { printf 'runtime.sh: %s\n' "$*" >&2; }

if [[ $mode == extract ]]; then
  [[ -f $tarball ]] || { log "no $tarball to extract"; exit 1; }
  if [[ -f $out/MANIFEST && ! $tarball -nt $out/MANIFEST ]]; then
    log "$out is up to date with $tarball"
  else
    mkdir -p "$out"
    if ! tar -xJf "$tarball" -C "$out" 2>/dev/null; then
      # No xz binary: Python's lzma can do it.
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
        "$tarball" "$out"
    fi
    touch "$out/MANIFEST"
    log "extracted $tarball into $out"
  fi
  printf '%s\n' "$out"
  exit 0
fi

roots=("$llvm_lib/libomptarget.so.19.1" "$llvm_lib/libomp.so.5")
for r in "${roots[@]}"; do
  [[ -f $r ]] || { log "missing $r (run bench/toolchain/setup.sh)"; exit 1; }
done

# Libraries every glibc-based Linux has; never ship these.
is_system() {
  case $1 in
    ld-linux*|libc.so.*|libm.so.*|libmvec.so.*|libpthread.so.*|libdl.so.*|librt.so.*) return 0 ;;
    libresolv.so.*|libutil.so.*|libanl.so.*|libnsl.so.*|libcrypt.so.*) return 0 ;;
    libstdc++.so.*|libgcc_s.so.*|linux-vdso.so.*) return 0 ;;
  esac
  return 1
}

# ldd prints the whole dependency closure: "name => path (addr)".
declare -A want=()
for r in "${roots[@]}"; do
  want[$(basename "$r")]=$r
  while read -r name arrow path _; do
    [[ $arrow == "=>" ]] || continue
    [[ $path == not ]] && { log "ldd: $name not found for $r"; exit 1; }
    is_system "$name" || want[$name]=$path
  done < <(ldd "$r")
done

mkdir -p "$out"
changed=0
for name in "${!want[@]}"; do
  src=${want[$name]}
  if [[ ! -f $out/$name || $src -nt $out/$name ]]; then
    cp -L --preserve=timestamps "$src" "$out/$name"
    changed=1
  fi
done
# Drop what is no longer wanted.
for f in "$out"/*; do
  name=$(basename "$f")
  [[ $name == MANIFEST || -n ${want[$name]:-} ]] && continue
  rm -rf "$f"
  changed=1
done
manifest=$(for name in "${!want[@]}"; do printf '%s\t%s\n' "$name" "${want[$name]}"; done | sort)
if [[ ! -f $out/MANIFEST || $(cat "$out/MANIFEST") != "$manifest" ]]; then
  printf '%s\n' "$manifest" >"$out/MANIFEST"
  changed=1
fi

size=$(du -sb "$out" | cut -f1)
log "$out: ${#want[@]} libraries, $((size / 1000000)) MB uncompressed"
if ((size > 45000000 && tar == 0)); then
  log "that is too big to carry as is (64 MiB limit); use --tar for $tarball"
fi

if ((tar)); then
  if [[ $changed == 1 || ! -f $tarball || $out/MANIFEST -nt $tarball ]]; then
    log "compressing into $tarball (xz -9, takes a minute)"
    tar -C "$out" -cf - . | xz -9 -T0 >"$tarball.tmp"
    mv -f "$tarball.tmp" "$tarball"
  fi
  log "$tarball: $(($(stat -c %s "$tarball") / 1000000)) MB"
fi
printf '%s\n' "$out"
