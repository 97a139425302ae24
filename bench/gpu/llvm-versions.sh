#!/usr/bin/env bash
# The GPU check of another LLVM version (21 by default, or 22, whose sm_90
# programs need the device runtime of scripts/llvm-devicertl.sh; docs/toolchain.md §5):
# programs of the suite built by that clang, at their smallest size, under
# every policy, with that version's own runtime bundle and its loader. Checks
# that every run's results are correct, that every launch ran the grid gridsel
# decided (the plugin's launch line against the profile), and that each
# stateless decision equals the one for the program built by clang 19 where
# the kernel is the same; shows LLVM's own grid next to LLVM 19's rule
# (bench/harness/llvm_versions.py).
#
# Here, as root (builds in the root of scripts/llvm-toolchains.sh):
#   bench/gpu/llvm-versions.sh --stage [VERSION]
#     builds gridsel, the programs by clang 19 and clang VERSION (build.sh),
#     the runtime bundle (runtime-llvm.sh, kept while it is newer than that
#     script and bundle.sh), and the decisions expected here (host
#     fallback, H100 preset), into .stage-llvmVERSION/payload.tar.xz and
#     .runtime-llvmVERSION.tar.xz.
# On the GPU machine, carrying those two:
#   bench/gpu/llvm-versions.sh [VERSION]
#     prints one line per run and the table; with OUT set, puts every log,
#     profile and the table into OUT/llvmVERSION-gpu.tar.gz. New runs stop
#     GRIDSEL_DEADLINE_S seconds after the start (default 360), and a run is
#     stopped after 60 s: the whole takes at most 7.5 minutes.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
programs=(gemm atax jacobi2d syrk cg mriq red_sum_minmax gspmd_matvec nest_rowhist probe_nested)
policies=(llvm auto occupancy lloyd forest tune fixed:4,128)
# Each program's smallest size in the suite (bench/kernels/suite-*.tsv).
smallest() { awk -F'\t' -v p="$1" '$1 == p { split($2, s, " "); print s[1]; exit }' "$repo"/bench/kernels/suite-*.tsv; }
# Three timed repetitions after one warm-up: each kernel launches at least
# four times on the GPU.
reps=(3 1)
log() { printf 'llvm-versions.sh: %s\n' "$*" >&2; }

# run_all RUNS POLICIES BINDIR RUNNER...: runs every program under every
# policy with `RUNNER... BINDIR/PROGRAM ARGS`, its stdout and stderr in
# RUNS/TAG.log and its profile in RUNS/TAG.csv; lists them in RUNS/runs.tsv.
run_all() {
  local runs=$1 pols=$2 bindir=$3 deadline=$((SECONDS + ${GRIDSEL_DEADLINE_S:-360}))
  shift 3
  mkdir -p "$runs"
  : >"$runs/runs.tsv"
  local prog policy tag t0 rc n
  for prog in "${programs[@]}"; do
    n=$(smallest "$prog")
    rm -f "$runs/tune-$prog.json"
    for policy in $pols; do
      if ((SECONDS >= deadline)); then
        log "deadline reached; $prog under $policy and the rest not run"
        return 0
      fi
      tag=$prog.${policy//[:,]/_}
      rm -f "$runs/$tag.csv"
      t0=$(date +%s%N)
      GRIDSEL_POLICY=$policy GRIDSEL_PROFILE=$runs/$tag.csv GRIDSEL_CACHE=$runs/tune-$prog.json \
        GRIDSEL_LOG=info LIBOMPTARGET_INFO=16 timeout 60 "$@" "$bindir/$prog" "$n" "${reps[@]}" >"$runs/$tag.log" 2>&1
      rc=$?
      printf '%s\t%s\t%s\t%s\t%s\n' "$prog" "$policy" "$tag" "$rc" \
        "$(awk -v ns=$(($(date +%s%N) - t0)) 'BEGIN { printf "%.1f", ns / 1e9 }')" >>"$runs/runs.tsv"
      log "$prog $n $policy: exit $rc, $(grep -o 'check=[a-z]*' "$runs/$tag.log" | sort -u | tr '\n' ' ')"
    done
  done
}

if [[ ${1:-} == --stage ]]; then
  set -e
  version=${2:-21}
  stage=$repo/.stage-llvm$version
  cd "$repo"
  cargo build --release --quiet
  GRIDSEL_PROGRAMS="${programs[*]}" bash bench/toolchain/build.sh
  GRIDSEL_PROGRAMS="${programs[*]}" GRIDSEL_LLVM_VERSION=$version bash bench/toolchain/build.sh
  bundle=$repo/.runtime-llvm$version.tar.xz
  if [[ ! -f $bundle || bench/toolchain/runtime-llvm.sh -nt $bundle || bench/toolchain/bundle.sh -nt $bundle ]]; then
    bash bench/toolchain/runtime-llvm.sh "$version" >/dev/null
  fi
  rm -rf "$stage"
  mkdir -p "$stage/pack/bin"
  strip -o "$stage/pack/libgridsel.so" target/release/libgridsel.so
  git rev-parse HEAD >"$stage/pack/commit"
  for prog in "${programs[@]}"; do cp "bench/build/llvm$version/sm_90/$prog" "$stage/pack/bin/"; done
  # The decisions of the stateless policies here, where no GPU is: each
  # program falls back to the host after gridsel decided for the H100 preset.
  # One repetition: the trip counts are those of the GPU's runs.
  reps=(1 0)
  # Inside the repository, the only folder the root sees; not carried.
  expect=$repo/target/llvm-versions/expect$version
  rm -rf "$expect"
  export GRIDSEL_DEVICE=h100 GRIDSEL_CLI=$repo/target/release/gridsel
  lib=$repo/target/release/libgridsel.so
  log "decisions of LLVM 19's build"
  run_all "$expect/runs19" "${policies[*]//tune/}" "$repo/bench/build/sm_90" env LD_PRELOAD="$lib"
  log "decisions of LLVM $version's build"
  run_all "$expect/runs$version" "${policies[*]//tune/}" "$repo/bench/build/llvm$version/sm_90" \
    scripts/llvm-root.sh env LD_PRELOAD="$lib"
  python3 bench/harness/llvm_versions.py expect "19:$expect/runs19:bench/build/sm_90" \
    "$version:$expect/runs$version:bench/build/llvm$version/sm_90" >"$stage/pack/expected.json"
  tar -C "$stage/pack" -cf - . | xz -6 >"$stage/payload.tar.xz"
  rm -rf "$stage/pack"
  du -b "$stage/payload.tar.xz" "$bundle" >&2
  log "carry [\".stage-llvm$version\", \".runtime-llvm$version.tar.xz\"]; run bench/gpu/llvm-versions.sh $version"
  exit 0
fi

version=${1:-21}
work=${GRIDSEL_WORK_DIR:-/tmp/gridsel-llvm$version}
rm -rf "$work"
mkdir -p "$work/payload"
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
  "$repo/.stage-llvm$version/payload.tar.xz" "$work/payload" || { log "no payload (run --stage here)"; exit 1; }
rt=$work/runtime
bash "$repo/bench/toolchain/runtime-llvm.sh" --extract "$repo/.runtime-llvm$version.tar.xz" "$rt" >/dev/null ||
  { log "no runtime bundle (run --stage here)"; exit 1; }
log "gridsel $(cat "$work/payload/commit"), LLVM $version runtime: $(tr '\n' ' ' <"$rt/MANIFEST")"
nvidia-smi -L >&2 || true
# Where the driver comes from, should no program find a device.
{ ldconfig -p | grep -m 2 'libcuda\.so'; echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"; } >&2

# The bundle's loader runs each program with the bundle's libraries first
# (its glibc included) and the machine's after them, where libcuda is.
# DEFAULT instead lets the script run where no GPU is (each program falls
# back to the host, and no launch is reported): a test of the script alone.
export OMP_TARGET_OFFLOAD=${OMP_TARGET_OFFLOAD:-MANDATORY}
run_all "$work/runs" "${policies[*]}" "$work/payload/bin" \
  "$rt/ld-linux-x86-64.so.2" --library-path "$rt${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  --preload "$work/payload/libgridsel.so"
python3 "$repo/bench/harness/llvm_versions.py" check "$work/runs" "$work/payload/expected.json" "$version" |
  tee "$work/runs/table.txt"
status=${PIPESTATUS[0]}
if [[ -n ${OUT:-} ]]; then
  tar -C "$work" -czf "$OUT/llvm$version-gpu.tar.gz" runs
fi
exit "$status"
