#!/usr/bin/env bash
# The test command: installs what the tests need, then runs formatting and
# lint checks, the Rust unit and integration tests (real clang-built offload
# programs under LD_PRELOAD, host offload and sm_90 images), and the
# benchmark harness's own tests.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
bash scripts/install-deps.sh
export PATH=$HOME/.cargo/bin:$PATH
export GRIDSEL_LLVM_RUNTIMES=$repo/target/llvm-runtimes

cargo fmt --check
# --all-features: the harness's `sweep` policy and the tests' fault injection too.
cargo clippy --workspace --all-targets --all-features -- -D warnings
# The preload library alone, as `cargo build -p gridsel` builds it: gridsel-core
# without the research features the workspace's other members turn on.
cargo clippy -p gridsel --lib -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
cargo test --workspace
python3 -m unittest discover -s bench/harness -p 'test_*.py'
