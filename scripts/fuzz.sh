#!/usr/bin/env bash
# Fuzzes every parser with the stable runner (tests/fuzz.rs) in release mode:
# each target's corpus (fuzz/corpus/<target>/) and GRIDSEL_FUZZ_RUNS mutants
# of it (default 200000 a target: 1.2 million over the six), then the count
# per target and the total. GRIDSEL_FUZZ_SEED and GRIDSEL_FUZZ_TIMEOUT_MS
# pass through (see tests/fuzz.rs). A failure names the target, the seed and
# the mutant and gives the input in hex; fuzz/README.md says what to do next.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
export PATH=$HOME/.cargo/bin:$PATH
export GRIDSEL_FUZZ_RUNS=${GRIDSEL_FUZZ_RUNS:-200000}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --release --test fuzz --no-run
started=$(date +%s.%N)
# Only the targets' tests (fuzz_<target>), not the runner's own.
cargo test --release --test fuzz -- --nocapture fuzz_ 2>&1 | tee "$log"
finished=$(date +%s.%N)

echo
grep '^fuzz ' "$log" | awk -v started="$started" -v finished="$finished" '
    { sub(/:$/, "", $2); total += $3
      printf "%-14s %9d executions (%s accepted) in %s s\n", $2, $3, substr($5, 2), $8 }
    END { printf "%-14s %9d executions in %.1f s wall (the targets run in parallel)\n",
                 "total", total, finished - started }'

if cargo fuzz --version >/dev/null 2>&1 && rustup toolchain list 2>/dev/null | grep -q nightly; then
    echo
    echo "cargo-fuzz and a nightly toolchain are installed: to run a target under libFuzzer"
    echo "(coverage-guided; new inputs go to the scratch folder, not the kept corpus):"
    echo "  cargo +nightly fuzz run <target> /tmp/corpus-<target> fuzz/corpus/<target>"
fi
