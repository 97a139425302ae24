#!/bin/sh
# Runs COMMAND inside the Debian unstable root that scripts/llvm-toolchains.sh
# installs (clang 21-23 and their OpenMP runtimes), with the repository
# visible at its own path, so that sources, outputs and libgridsel.so keep
# their names on both sides. The binds live in a private mount namespace and
# vanish with the command; the environment passes through unchanged. Needs
# root (or CAP_SYS_ADMIN and CAP_SYS_CHROOT).
#
#   scripts/llvm-root.sh COMMAND [ARG...]
#
# GRIDSEL_LLVM_ROOT names the root (default <repo>/target/llvm-toolchains/sid).
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${GRIDSEL_LLVM_ROOT:-$repo/target/llvm-toolchains/sid}
[ -x "$root/usr/bin/env" ] || { echo "llvm-root.sh: no root at $root (run scripts/llvm-toolchains.sh)" >&2; exit 1; }
[ $# -gt 0 ] || { echo "usage: llvm-root.sh COMMAND [ARG...]" >&2; exit 2; }
exec unshare --mount --propagation private sh -eu -c '
  repo=$1 root=$2
  shift 2
  mkdir -p "$root$repo"
  mount --bind "$repo" "$root$repo"
  mount -t proc proc "$root/proc"
  exec chroot "$root" "$@"' sh "$repo" "$root" "$@"
