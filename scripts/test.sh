#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, unit and end-to-end tests against the real
# engine and model, then the container integration tests (skipped loudly without Docker).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
cargo fmt --all -- --check
cargo build --workspace --all-targets
./target/debug/wt-memory setup
cargo test -- --test-threads=2
if [ -x .ci/integration.sh ]; then
  .ci/integration.sh
fi
