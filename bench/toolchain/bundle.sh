# Sourced by runtime.sh (LLVM 19) and runtime-llvm.sh (LLVM 21-23), which
# define log: what the two runtime bundles do alike. The device tool carries
# at most 64 MiB a call, so a bundle holds only what the offload runtime can
# reach, packed tightly.

# bundle_standin DIR NAME: replaces DIR/NAME, a library that the others in DIR
# link but that the offload runtime never calls into (z3, the static
# analyzer's SMT solver; ICU, which libxml2 uses only to convert encodings
# iconv lacks), by a small one of the same soname exporting every function
# the others import from it; each ends the process with one line naming
# itself, should it ever be called. The stand-in needs nothing, so what only
# NAME needed (ICU's 31 MB data library) can go too. Refuses, with one line,
# what a function cannot stand in for: imported data, or versioned symbols.
bundle_standin() (
  set -euo pipefail
  export LC_ALL=C # one order for sort and join
  dir=$1 name=$2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # "NAME TYPE VERSIONED" of what NAME defines, and every symbol (without
  # version) the other files of DIR import; nm skips MANIFEST.
  nm -D --defined-only "$dir/$name" |
    awk 'NF == 3 { n = $3; v = sub(/@.*/, "", n); print n, $2, v }' | sort -u -k 1,1 >"$tmp/defined"
  for f in "$dir"/*; do
    [[ $f == "$dir/$name" ]] || nm -D --undefined-only "$f" 2>/dev/null || true
  done | awk '{ sub(/@.*/, "", $2); print $2 }' | sort -u >"$tmp/imported"
  join "$tmp/defined" "$tmp/imported" >"$tmp/used"
  # Weak definitions (W) are C++ template instances, which an importer finds
  # in libstdc++ or itself; one found nowhere else fails at load time, loudly.
  bad=$(awk '($2 != "T" && $2 != "W") || $3 == 1 { print $1 }' "$tmp/used" | head -n 3 | tr '\n' ' ')
  if [[ -n $bad ]]; then
    log "cannot stand in for $name: others import data or versioned symbols from it (${bad% })"
    exit 1
  fi
  awk '$2 == "T" { print $1 }' "$tmp/used" >"$tmp/functions"
  {
    printf '#include <stdio.h>\n#include <stdlib.h>\n'
    printf 'static void gone(const char *f) {\n'
    printf '  fprintf(stderr, "%s of the LLVM runtime bundle is a stand-in: %%s called\\n", f);\n' "$name"
    printf '  abort();\n}\n'
    while read -r f; do
      printf 'void %s(void) { gone("%s"); }\n' "$f" "$f"
    done <"$tmp/functions"
  } >"$tmp/standin.c"
  gcc -O2 -shared -fPIC -Wl,-soname,"$name" -o "$tmp/$name" "$tmp/standin.c"
  strip --strip-unneeded "$tmp/$name"
  mv -f "$tmp/$name" "$dir/$name"
  log "$name: a stand-in for the $(wc -l <"$tmp/functions") functions the others import"
)

# bundle_pack DIR TARBALL: DIR's files as TARBALL, xz -6 with the x86 filter
# in two threads (-9 saves about 1 % in several times as long).
bundle_pack() {
  tar -C "$1" -cf - . | xz --x86 --lzma2=preset=6 -T2 >"$2.tmp"
  mv -f "$2.tmp" "$2"
}

# bundle_unpack TARBALL DIR: on the GPU machine, which may have no xz binary
# (Python's lzma reads it then).
bundle_unpack() {
  mkdir -p "$2"
  tar -xJf "$1" -C "$2" 2>/dev/null ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2"
}
