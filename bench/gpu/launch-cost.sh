#!/usr/bin/env bash
# The launch-path benchmark (bench/launch_path.rs) on the GPU machine's CPU,
# the one gridsel runs on in production; criterion's report goes to $OUT.
#   bench/gpu/launch-cost.sh [FILTER]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-/tmp}/launch-cost
mkdir -p "$out"
lscpu | grep -E "Model name|^CPU\(s\)|MHz" | tee "$out/cpu.txt"
cd "$out"   # criterion writes target/criterion under the working folder
"$repo/.stage/launch_path" --bench ${1:-} 2>&1 | tee "$out/launch_path.txt"
