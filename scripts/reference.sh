#!/usr/bin/env bash
# Rewrite docs/reference.md from the code (the commands, the MCP tools, the environment variables,
# the hook events: src/reference.rs). `cargo test` fails while the committed file differs.
# Usage: scripts/reference.sh
set -euo pipefail
cd "$(dirname "$0")/.."
WT_BLESS=1 cargo test -q --lib reference::tests::the_committed_reference_is_the_generated_one >/dev/null
git diff --stat -- docs/reference.md
