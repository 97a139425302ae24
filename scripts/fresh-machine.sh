#!/usr/bin/env bash
# Times the README's two commands on a fresh Debian 12, as docs/toolchain.md
# §6 reports them: a stock Debian 12 root made by debootstrap (its default
# variant: the required and important packages of an installed system, with
# the installer's three apt sources), a clean clone of this repository's HEAD
# in /root/gridsel, and each command run as root inside it, from nothing.
# Not run by the tests or CI: it downloads about 4 GB and takes a quarter of
# an hour. As root, on a Debian or Ubuntu host with debootstrap.
#
#   scripts/fresh-machine.sh DIR [both|demo|test]
#
# DIR must not exist. both (the default): `bash scripts/demo.sh`, then
# `bash scripts/test.sh` in the same root; demo or test: that one alone.
# Results land in DIR/results: NAME.time (bash's `time`: wall, and the user
# and sys CPU of everything the command ran), NAME.log (its output),
# NAME.steps (each line of demo.sh, test.sh and install-deps.sh that took a
# second or more, from an xtrace with timestamps), NAME.load (the host's load
# average before and after, and the CPU time the whole host spent meanwhile,
# so that what other work on the host took is known) and load.log (the load
# average every 30 s). CI=true passes through, making any skipped test a
# failure. Everything mounted is unmounted on exit; DIR stays for inspection.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: fresh-machine.sh DIR [both|demo|test]" >&2; exit 2; }
dir=$1
what=${2:-both}
case $what in both) names=(demo test) ;; demo | test) names=("$what") ;;
  *) echo "fresh-machine.sh: $what: not both, demo or test" >&2; exit 2 ;; esac
[[ ! -e $dir ]] || { echo "fresh-machine.sh: $dir exists; name a new folder" >&2; exit 2; }
mirror=${GRIDSEL_DEBIAN_MIRROR:-http://deb.debian.org/debian}

mkdir -p "$dir/results"
dir=$(cd "$dir" && pwd)
root=$dir/root
out=$dir/results
log() { printf 'fresh-machine.sh: %s\n' "$*" >&2; }

sampler=
cleanup() {
  [[ -n $sampler ]] && kill "$sampler" 2>/dev/null
  # Innermost first, the test's own (its Debian unstable root's) included.
  awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts |
    sort -r | while read -r m; do umount "$m" || log "could not unmount $m"; done
}
trap cleanup EXIT

log "debootstrap bookworm into $root"
debootstrap bookworm "$root" "$mirror" >"$out/debootstrap.log" 2>&1
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://security.debian.org/debian-security bookworm-security main
EOF
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
# A network that re-signs TLS needs its CA trusted; the root's
# ca-certificates, when install-deps.sh installs it, takes it from here.
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
git clone -q "$repo" "$root/root/gridsel"
git -C "$root/root/gridsel" rev-parse HEAD >"$out/commit"

# Each of the three scripts, the first time it starts, traces its lines with
# a timestamp to NAME.trace (bash sources BASH_ENV before a script).
cat >"$root/root/.fresh-trace.sh" <<'EOF'
case $0 in
  */demo.sh | */test.sh | */install-deps.sh)
    if [[ " ${FRESH_TRACED:-} " != *" ${0##*/} "* ]]; then
      export FRESH_TRACED="${FRESH_TRACED:-} ${0##*/}"
      exec {fresh_fd}>>"$FRESH_TRACE_LOG"
      BASH_XTRACEFD=$fresh_fd
      trap 'echo "+ $EPOCHREALTIME ${0##*/}:end" >&$fresh_fd' EXIT
      PS4='+ $EPOCHREALTIME ${0##*/}:$LINENO: '
      set -x
    fi ;;
esac
EOF

# The root a mount point, as / is on a machine: scripts/llvm-root.sh's
# `unshare --propagation private` changes the propagation of /, which fails
# on a plain folder.
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount -t tmpfs tmpfs "$root/dev/shm"
mount -t tmpfs tmpfs "$root/tmp"

while :; do echo "$(date -u +%T) $(cat /proc/loadavg)"; sleep 30; done >"$out/load.log" &
sampler=$!

# The host's busy CPU seconds (user, nice, system, irq, softirq, steal).
busy() { awk '/^cpu / { printf "%.1f", ($2 + $3 + $4 + $7 + $8 + $9) / 100 }' /proc/stat; }

for name in "${names[@]}"; do
  log "timing bash scripts/$name.sh"
  before=$(busy)
  echo "before: $(date -u +%FT%TZ) load $(cat /proc/loadavg)" >"$out/$name.load"
  rc=0
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb CI="${CI:-}" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    BASH_ENV=/root/.fresh-trace.sh FRESH_TRACE_LOG="/root/$name.trace" \
    /bin/bash -c 'cd /root/gridsel && TIMEFORMAT="real %1R s, user %1U s, sys %1S s" &&
      { time bash "scripts/$1.sh" >"/root/$1.log" 2>&1; } 2>"/root/$1.time"' bash "$name" || rc=$?
  echo "after:  $(date -u +%FT%TZ) load $(cat /proc/loadavg)" >>"$out/$name.load"
  echo "host busy CPU meanwhile: $(awk -v a="$before" -v b="$(busy)" 'BEGIN { printf "%.0f", b - a }') s" >>"$out/$name.load"
  cp "$root/root/$name.time" "$root/root/$name.log" "$root/root/$name.trace" "$out/"
  echo "exit $rc" >>"$out/$name.time"
  # A line's time: until the next line of the same script (or its end).
  awk '{ split($3, at, ":"); s = at[1]
         if (s in t && $2 - t[s] >= 1) printf "%7.1f s  %s\n", $2 - t[s], c[s]
         t[s] = $2; c[s] = $0; sub(/^[+]+ [0-9.]+ /, "", c[s]) }' \
    "$out/$name.trace" >"$out/$name.steps"
  log "$name: $(head -n 1 "$out/$name.time"), exit $rc"
  ((rc == 0)) || exit "$rc"
done
