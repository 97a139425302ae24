#!/usr/bin/env bash
# Assembles the OpenMP offload runtime for the GPU machine (no clang there; see
# docs/toolchain.md §4): libomptarget.so.19.1, libomp.so.5 and every
# library they need (recursively) except the glibc family and the GCC
# runtime (libstdc++, libgcc_s), which any Linux machine has. In practice:
# libLLVM.so.19.1 and its Debian 12 dependencies (xml2, edit, ffi, bsd, md,
# z, zstd, lzma, tinfo), with stand-ins for z3 and ICU (bench/toolchain/
# bundle.sh), which the offload runtime never calls. Debian ships them
# stripped (strip --strip-unneeded changes no byte).
#
# Usage:
#   bench/toolchain/runtime.sh [--tar] [OUTDIR]   build here (default <repo>/.runtime)
#       --tar also writes a compressed copy, $GRIDSEL_RUNTIME_TAR
#       (default <repo>/.runtime.tar.xz, whatever OUTDIR is), that fits the
#       64 MiB a run may carry where the folder itself does not.
#   bench/toolchain/runtime.sh --extract [OUTDIR]  on the GPU machine: unpack
#       that tarball into OUTDIR (no-op when already unpacked).
# Then: LD_LIBRARY_PATH=OUTDIR OMP_TARGET_OFFLOAD=MANDATORY ./prog
# Idempotent: OUTDIR is rebuilt only when the system's libraries or these
# scripts changed, the tarball only when OUTDIR was.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/../.." && pwd)
llvm_lib=/usr/lib/llvm-19/lib
source "$here/bundle.sh"

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
    bundle_unpack "$tarball" "$out"
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

# Linked by libLLVM (z3) and libxml2 (ICU) but never called by the offload
# runtime: bundle.sh's stand-ins take their place, and ICU's data library,
# needed by nothing else, stays out.
declare -A standin=([libz3.so.4]=1 [libicuuc.so.72]=1)

# ldd prints the whole dependency closure, "name => path (addr)": where each
# library is.
declare -A path=()
for r in "${roots[@]}"; do
  path[$(basename "$r")]=$r
  while read -r name arrow where _; do
    [[ $arrow == "=>" ]] || continue
    [[ $where == not ]] && { log "ldd: $name not found for $r"; exit 1; }
    path[$name]=$where
  done < <(ldd "$r")
done
# What the bundle holds: the closure again, through each library's NEEDED,
# but not through a stand-in's.
declare -A want=()
queue=("${roots[@]##*/}")
while ((${#queue[@]})); do
  name=${queue[0]}
  queue=("${queue[@]:1}")
  [[ -n ${want[$name]:-} ]] && continue
  want[$name]=${path[$name]}
  [[ -n ${standin[$name]:-} ]] && continue
  while read -r needed; do
    is_system "$needed" || queue+=("$needed")
  done < <(readelf -d "${path[$name]}" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
done

manifest=$(for name in "${!want[@]}"; do
  printf '%s\t%s%s\n' "$name" "${standin[$name]:+stand-in for }" "${want[$name]}"
done | sort)
# Rebuilt when the list, a library or these scripts changed.
mkdir -p "$out"
out=$(cd -- "$out" && pwd) # as ldd names what it finds there
fresh=1
if [[ ! -f $out/MANIFEST || $(cat "$out/MANIFEST") != "$manifest" ]]; then
  fresh=0
else
  for src in "${want[@]}" "$here/runtime.sh" "$here/bundle.sh"; do
    [[ $src -nt $out/MANIFEST ]] && fresh=0
  done
fi
if ((!fresh)); then
  find "$out" -mindepth 1 -delete
  for name in "${!want[@]}"; do
    cp -L "${want[$name]}" "$out/$name"
  done
  for name in "${!standin[@]}"; do
    bundle_standin "$out" "$name"
  done
  # Every library from the bundle and every symbol bound: a library left out
  # or a stand-in short of a function shows here, not on the GPU machine.
  unbound=$(for r in "${roots[@]}"; do
    LD_LIBRARY_PATH=$out ldd -r "$out/${r##*/}" 2>&1 | while read -r name arrow where rest; do
      case "$name $arrow $where $rest" in
        *"undefined symbol"* | *"not found"*) echo "  $name $arrow $where $rest" ;;
        *) [[ $arrow != "=>" || $where == "$out/"* ]] || is_system "$name" || echo "  $name => $where" ;;
      esac
    done
  done)
  if [[ -n $unbound ]]; then
    log "the libraries in $out do not load from there alone:"
    printf '%s\n' "$unbound" >&2
    exit 1
  fi
  printf '%s\n' "$manifest" >"$out/MANIFEST"
fi

size=$(du -sb "$out" | cut -f1)
log "$out: ${#want[@]} libraries, $((size / 1000000)) MB uncompressed"
if ((size > 45000000 && tar == 0)); then
  log "that is too big to carry as is (64 MiB limit); use --tar for $tarball"
fi

if ((tar)); then
  if [[ ! -f $tarball || $out/MANIFEST -nt $tarball ]]; then
    log "compressing into $tarball (xz -6 with the x86 filter, about a minute)"
    bundle_pack "$out" "$tarball"
  fi
  log "$tarball: $(($(stat -c %s "$tarball") / 1000000)) MB"
fi
printf '%s\n' "$out"
